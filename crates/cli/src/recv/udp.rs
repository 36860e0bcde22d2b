//! The receiver's UDP loop: recvmmsg in batches, one table lock per batch, echoes for
//! round-trip flows sent after the lock is released.

use std::net::SocketAddr;
use std::sync::atomic::Ordering;

use meter::RxRecord;
use wire::control::{Meter, Protocol};
use wire::probe::{self, Packet, Repr};

use super::Shared;
use crate::session::canonical;

const BATCH: usize = 64;
const BUF_LEN: usize = 65_536;

struct Echo {
    data: Vec<u8>,
    dst: SocketAddr,
    marking: netio::Marking,
}

pub(super) fn run(shared: &Shared) {
    let mut bufs = vec![vec![0u8; BUF_LEN]; BATCH];
    let mut metas = vec![netio::RecvMeta::default(); BATCH];
    let mut echoes: Vec<Echo> = Vec::new();
    while !shared.stop.load(Ordering::Relaxed) {
        let n = match shared.udp.recv_batch(&mut bufs, &mut metas) {
            Ok(n) => n,
            Err(e) if is_timeout(&e) => continue,
            Err(e) => {
                eprintln!("dualperf recv: UDP receive error: {e}");
                std::thread::sleep(std::time::Duration::from_millis(10));
                continue;
            }
        };
        let fallback_rx_ns = netio::clock::wall_ns();
        let now_mono = netio::clock::mono_ns();
        let counters = &shared.counters;
        counters.datagrams.fetch_add(n as u64, Ordering::Relaxed);
        {
            let mut table = shared.table.lock().unwrap_or_else(|e| e.into_inner());
            for (buf, meta) in bufs.iter().zip(&metas).take(n) {
                let data = &buf[..meta.len.min(buf.len())];
                let repr = match Packet::new_checked(data).and_then(|p| Repr::parse(&p)) {
                    Ok(r) if !r.echo => r,
                    _ => {
                        counters.malformed_datagrams.fetch_add(1, Ordering::Relaxed);
                        continue;
                    }
                };
                let Some(flow) = table.flows.get_mut(&repr.flow) else {
                    counters.unknown_flow.fetch_add(1, Ordering::Relaxed);
                    continue;
                };
                let src_ip = canonical(meta.src.ip());
                let port_ok = flow.announce.src_port.is_none_or(|p| p == meta.src.port());
                if flow.announce.protocol != Protocol::Udp || src_ip != flow.peer_ip || !port_ok {
                    counters.wrong_source.fetch_add(1, Ordering::Relaxed);
                    continue;
                }
                let rx_ns = meta.kernel_ts_ns.unwrap_or(fallback_rx_ns);
                let seq = flow.unwrapper.unwrap(repr.seq);
                flow.records.push(RxRecord {
                    flow: u32::from(repr.flow),
                    seq,
                    size_bytes: data.len() as u32,
                    tx_ns: repr.tx_ns,
                    rx_ns,
                    tos: meta.tos,
                    hop_limit: meta.hop_limit,
                    flow_label: meta.flow_label,
                    kernel_ts: meta.kernel_ts_ns.is_some(),
                });
                flow.last_rx_mono_ns = now_mono;
                if flow.announce.meter == Meter::Rtt && flow.announce.src_port.is_some() {
                    // Echo exactly what arrived, never more, marked as the flow is.
                    let mut echo = data.to_vec();
                    let ext = echo.len() >= probe::EXT_HEADER_LEN;
                    let mut p = Packet::new_unchecked(&mut echo[..]);
                    p.set_header(probe::FLAG_ECHO | if ext { probe::FLAG_EXT } else { 0 });
                    if ext {
                        p.set_echo(rx_ns, 0);
                    }
                    echoes.push(Echo {
                        data: echo,
                        dst: meta.src,
                        marking: flow.marking(),
                    });
                }
            }
        }
        for mut e in echoes.drain(..) {
            if e.data.len() >= probe::EXT_HEADER_LEN {
                let mut p = Packet::new_unchecked(&mut e.data[..]);
                let rx = p.echo_rx_ns();
                p.set_echo(rx, netio::clock::wall_ns());
            }
            if let Err(err) = shared.udp.send_to_marked(&e.data, e.dst, &e.marking) {
                if err.kind() != std::io::ErrorKind::WouldBlock {
                    eprintln!("dualperf recv: echo to {} failed: {err}", e.dst);
                }
            }
        }
    }
}

pub(crate) fn is_timeout(e: &std::io::Error) -> bool {
    matches!(
        e.kind(),
        std::io::ErrorKind::WouldBlock
            | std::io::ErrorKind::TimedOut
            | std::io::ErrorKind::Interrupted
    )
}
