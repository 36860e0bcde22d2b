//! The receiver's UDP loop: recvmmsg in batches, one table lock per batch, echoes for
//! round-trip flows sent after the lock is released.

use std::net::SocketAddr;
use std::sync::atomic::Ordering;

use meter::log::Entry;
use meter::RxRecord;
use wire::control::{Meter, Protocol};
use wire::probe::{self, Packet, Repr};

use super::Shared;
use crate::control::{canonical, is_timeout};

const BATCH: usize = 64;
const BUF_LEN: usize = 65_536;

/// How long the loop naps between reads while polling one-way traffic: at 300,000
/// datagrams a second, a batch of a few per read, with the CPU free between reads.
const POLL_NAP: std::time::Duration = std::time::Duration::from_micros(10);

struct Echo {
    data: Vec<u8>,
    dst: SocketAddr,
    /// The address the probe was sent to: the echo leaves from it, or a sender that
    /// connected to it would drop the echo.
    src_ip: Option<std::net::IpAddr>,
    rx_ns: u64,
    /// Where the probe starts (after an RTP header, if any).
    probe_at: usize,
    marking: netio::Marking,
}

pub(super) fn run(shared: &Shared) {
    let mut bufs = vec![vec![0u8; BUF_LEN]; BATCH];
    let mut metas = vec![netio::RecvMeta::default(); BATCH];
    let mut echoes: Vec<Echo> = Vec::new();
    let log = shared.log.as_ref().map(crate::logsink::LogSink::producer);
    if let Some(log) = &log {
        shared
            .table
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .udp_log = Some(log.chunk());
    }
    // Records wait in the table's chunk until it is due (full, or 50 ms old).
    let mut log_pending = false;
    let max_gap_ns = u64::try_from(shared.busy_poll.as_nanos()).unwrap_or(u64::MAX);
    let mut poll = netio::poll::RecvPoll::new(max_gap_ns);
    // Naps while polling are short and exact: the timer slack would stretch them.
    let _ = netio::clock::set_timer_slack_ns(1);
    // The last batch held round-trip probes: poll by spinning, so their echoes wait no
    // nap; one-way datagrams carry the kernel's arrival stamp, so a nap costs nothing.
    let mut echoing = false;
    while !shared.stop.load(Ordering::Relaxed) {
        let polling = poll.wait(netio::clock::mono_ns()) == netio::poll::Wait::Poll;
        let got = if polling {
            shared.udp.try_recv_batch(&mut bufs, &mut metas)
        } else {
            shared.udp.recv_batch(&mut bufs, &mut metas)
        };
        let n = match got {
            Ok(0) => {
                // Quiet: records still held go to the writer once due.
                if let (Some(log), true) = (&log, log_pending) {
                    let mut table = shared.table.lock().unwrap_or_else(|e| e.into_inner());
                    table.submit_udp_log(log, netio::clock::mono_ns(), false);
                    log_pending = table.udp_log.as_ref().is_some_and(|c| !c.is_empty());
                }
                if polling {
                    if echoing {
                        std::hint::spin_loop();
                    } else {
                        std::thread::sleep(POLL_NAP);
                    }
                }
                continue;
            }
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
        poll.handle_batch(now_mono, n as u64);
        let counters = &shared.counters;
        counters.datagrams.fetch_add(n as u64, Ordering::Relaxed);
        {
            let mut guard = shared.table.lock().unwrap_or_else(|e| e.into_inner());
            // One borrow of the table, so a flow and the log chunk can be used together.
            let table = &mut *guard;
            for (buf, meta) in bufs.iter().zip(&metas).take(n) {
                let data = &buf[..meta.len.min(buf.len())];
                // The probe starts the payload, or follows a real RTP header.
                let at = probe::find(data).unwrap_or(0);
                let repr = match Packet::new_checked(&data[at..]).and_then(|p| Repr::parse(&p)) {
                    Ok(r) if !r.echo => r,
                    _ => {
                        counters.malformed_datagrams.fetch_add(1, Ordering::Relaxed);
                        continue;
                    }
                };
                let Some(flow) = table.flows.get_mut(&repr.flow) else {
                    let counter = if table.finished.contains(&repr.flow) {
                        &counters.late_after_finish
                    } else {
                        &counters.unknown_flow
                    };
                    counter.fetch_add(1, Ordering::Relaxed);
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
                let record = RxRecord {
                    flow: u32::from(repr.flow),
                    seq,
                    size_bytes: data.len() as u32,
                    tx_ns: repr.tx_ns,
                    rx_ns,
                    tos: meta.tos,
                    hop_limit: meta.hop_limit,
                    flow_label: meta.flow_label,
                    kernel_ts: meta.kernel_ts_ns.is_some(),
                    // The RTP timestamp of a probe that follows an RTP header: meter
                    // computes the RFC 3550 jitter from the records after the loop.
                    rtp_ts: (at > 0)
                        .then(|| wire::rtp::Packet::new_checked(data).ok())
                        .flatten()
                        .map(|rtp| rtp.timestamp()),
                };
                flow.note_delay(&record);
                flow.meter.handle_record(&record);
                if let Some(chunk) = &mut table.udp_log {
                    let logged = RxRecord {
                        flow: flow.log_key,
                        ..record
                    };
                    chunk.push(&Entry::Rx(logged), u32::from(repr.flow));
                }
                flow.last_rx_mono_ns = now_mono;
                if flow.announce.meter == Meter::Rtt {
                    // Echo exactly what arrived, never more, to the registered source only
                    // (checked above), marked as the flow is.
                    echoes.push(Echo {
                        data: data.to_vec(),
                        probe_at: at,
                        dst: meta.src,
                        src_ip: meta.dst_ip,
                        rx_ns,
                        marking: flow.marking(),
                    });
                }
            }
            // Handed over under the table lock, so a flow's FlowEnd (written after it
            // leaves the table, which hands over what is still held) follows all of its
            // records.
            if let Some(log) = &log {
                table.submit_udp_log(log, now_mono, false);
                log_pending = table.udp_log.as_ref().is_some_and(|c| !c.is_empty());
            }
        }
        echoing = !echoes.is_empty();
        for mut e in echoes.drain(..) {
            Packet::new_unchecked(&mut e.data[e.probe_at..])
                .make_echo(e.rx_ns, netio::clock::wall_ns());
            if let Err(err) = shared
                .udp
                .send_to_marked_from(&e.data, e.dst, e.src_ip, &e.marking)
            {
                if shared
                    .counters
                    .echo_failures
                    .fetch_add(1, Ordering::Relaxed)
                    == 0
                {
                    eprintln!("dualperf recv: echo to {} failed: {err} (further failures are only counted)", e.dst);
                }
            }
        }
    }
    // Stopping: nothing stays held.
    if let Some(log) = &log {
        let mut table = shared.table.lock().unwrap_or_else(|e| e.into_inner());
        table.submit_udp_log(log, netio::clock::mono_ns(), true);
    }
}
