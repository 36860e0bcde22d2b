//! One of the receiver's UDP threads: recvmmsg in batches from its own socket, one lock
//! of its own shard per batch, echoes for round-trip flows sent from the same socket after
//! the lock is released.

use std::net::SocketAddr;
use std::sync::atomic::Ordering;

use meter::RxRecord;
use wire::control::Meter;
use wire::prefix::unmapped;
use wire::probe::{self, Packet, Repr};

use super::shard::{Flow, Taken};
use super::Shared;
use crate::control::is_timeout;

const BATCH: usize = 64;
/// Buffers per read while datagrams arrive coalesced (UDP GRO): 8 of up to 64 KiB each
/// stay in a core's L2 cache between the kernel's copy and the metering that reads
/// them, where 64 (4 MiB) do not. Measured on loopback, one flow of 1400-byte
/// datagrams at 28 Gbit/s: 5-8 % less receiver CPU per datagram than 64 (1 was slower;
/// 2, 4 and 16 the same within the noise).
const GRO_BATCH: usize = 8;
const BUF_LEN: usize = 65_536;
/// What `recv --skip-rx-copy` copies of each datagram: room for the probe with its
/// extension (48 bytes) after an RTP header of up to 208 bytes (the 12-byte header, 15
/// CSRCs and an extension of 34 words).
const HEAD_LEN: usize = 256;

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

/// Datagrams side by side in one buffer that the meter takes as one run: one flow,
/// numbered one after another, with one send stamp and one size, no RTP header.
struct Run {
    repr: Repr,
    n: u32,
    probe_at: usize,
    /// Where the first lies in the buffer, and each one's length.
    data_at: usize,
    len: usize,
    rtp_ts: Option<u32>,
}

impl Run {
    /// Whether the datagram of `len` bytes at `data_at` in the buffer, its probe `next`
    /// at `probe_at`, is the run's next one.
    fn extends(&self, next: &Repr, probe_at: usize, data_at: usize, len: usize) -> bool {
        self.probe_at == 0
            && probe_at == 0
            && data_at == self.data_at + self.len * self.n as usize
            && next.flow == self.repr.flow
            && next.seq == self.repr.seq.wrapping_add(self.n)
            && next.tx_ns == self.repr.tx_ns
            && len == self.len
    }

    /// Its datagrams, in the buffer `whole` they came in: only the head of one taken by
    /// its head (`recv --skip-rx-copy`), which is all the buffer holds.
    fn datagrams<'a>(&self, whole: &'a [u8]) -> impl Iterator<Item = &'a [u8]> {
        let end = (self.data_at + self.len * self.n as usize).min(whole.len());
        let all = &whole[self.data_at.min(end)..end];
        all.chunks(self.len.max(1)).take(self.n as usize)
    }
}

/// What the datagrams of one received buffer share.
struct Arrival<'a> {
    meta: &'a netio::RecvMeta,
    /// The source, canonical.
    src: SocketAddr,
    rx_ns: u64,
    whole: &'a [u8],
    now_mono: u64,
}

impl Arrival<'_> {
    /// Hand run `r` to its flow's shard (`shard`, this thread's, or its home via
    /// `forwards`) and queue the echoes of a round-trip flow; count what is refused.
    fn deliver(
        &self,
        r: &Run,
        shard: &mut super::shard::Shard,
        me: usize,
        counters: &super::Counters,
        forwards: &mut Vec<super::shard::Forward>,
        echoes: &mut Vec<Echo>,
    ) {
        let meta = self.meta;
        let record = RxRecord {
            flow: u32::from(r.repr.flow),
            // The flow's home unwraps `repr.seq`.
            seq: 0,
            size_bytes: r.len as u32,
            tx_ns: r.repr.tx_ns,
            rx_ns: self.rx_ns,
            tos: meta.tos,
            hop_limit: meta.hop_limit,
            flow_label: meta.flow_label,
            kernel_ts: meta.kernel_ts_ns.is_some(),
            rtp_ts: r.rtp_ts,
        };
        let n = u64::from(r.n);
        // Round-trip probes are echoed with their flow's marking.
        let echo_marking =
            |flow: &Flow| (flow.announce.meter == Meter::Rtt).then(|| flow.marking());
        let d = super::shard::Datagrams {
            seq: r.repr.seq,
            n: r.n,
            record,
        };
        let taken = shard.take(me, r.repr.flow, self.src, d, self.now_mono);
        let echo = match taken {
            Taken::Metered(flow) => echo_marking(flow),
            Taken::Forward(fwd) => {
                let echo = echo_marking(fwd.flow());
                forwards.push(fwd);
                echo
            }
            Taken::Late => {
                counters.late_after_finish.fetch_add(n, Ordering::Relaxed);
                return;
            }
            Taken::Unknown => {
                counters.unknown_flow.fetch_add(n, Ordering::Relaxed);
                return;
            }
            Taken::WrongSource => {
                counters.wrong_source.fetch_add(n, Ordering::Relaxed);
                return;
            }
        };
        if let Some(marking) = echo {
            // Echo exactly what arrived, never more, to the registered source only
            // (checked by `take`), from the socket it came in on.
            for data in r.datagrams(self.whole) {
                let mut data = data.to_vec();
                // A datagram taken by its head goes back as long as it came: its head,
                // then zeros (`recv --skip-rx-copy`).
                data.resize(r.len, 0);
                echoes.push(Echo {
                    data,
                    probe_at: r.probe_at,
                    dst: meta.src,
                    src_ip: meta.dst_ip,
                    rx_ns: self.rx_ns,
                    marking,
                });
            }
        }
    }
}

/// Receive on `socket`, shard `me` of the table, until the stop flag is set.
pub(super) fn run(shared: &Shared, me: usize, socket: &netio::UdpSocket) {
    // Each buffer allocated zeroed on its own (`vec![…; BATCH]` would copy the first
    // into the others, touching 4 MiB per thread): only the pages datagrams write to
    // become resident, which matters with a thread per core.
    // With --skip-rx-copy only each datagram's head: the kernel copies what fits and
    // reports the whole length (MSG_TRUNC).
    let buf_len = if shared.skip_rx_copy {
        HEAD_LEN
    } else {
        BUF_LEN
    };
    let mut bufs: Vec<Vec<u8>> = (0..BATCH).map(|_| vec![0u8; buf_len]).collect();
    let mut metas = vec![netio::RecvMeta::default(); BATCH];
    let mut echoes: Vec<Echo> = Vec::new();
    // Datagrams of flows at home in another shard (module docs of `shard`).
    let mut forwards = Vec::new();
    let log = shared.log.as_ref().map(crate::logsink::LogSink::producer);
    // Records wait in the shard's chunk until it is due (full, or 50 ms old). Another
    // shard may add records of flows at home here: look at least that often.
    let mut log_pending = false;
    let mut next_log_look_ns = 0;
    let max_gap_ns = u64::try_from(shared.busy_poll.as_nanos()).unwrap_or(u64::MAX);
    let mut poll = netio::poll::RecvPoll::new(max_gap_ns);
    // Naps while polling are short and exact: the timer slack would stretch them.
    let _ = netio::clock::set_timer_slack_ns(1);
    // The last batch held round-trip probes: poll by spinning, so their echoes wait no
    // nap; one-way datagrams carry the kernel's arrival stamp, so a nap costs nothing.
    let mut echoing = false;
    // The last batch held coalesced buffers.
    let mut coalesced = false;
    while !shared.stop.load(Ordering::Relaxed) {
        let polling = poll.wait(netio::clock::mono_ns()) == netio::poll::Wait::Poll;
        let take = if coalesced { GRO_BATCH } else { BATCH };
        let got = if polling {
            socket.try_recv_batch(&mut bufs[..take], &mut metas[..take])
        } else {
            socket.recv_batch(&mut bufs[..take], &mut metas[..take])
        };
        let n = match got {
            Ok(0) => {
                // Quiet: records still held go to the writer once due.
                let now = netio::clock::mono_ns();
                if let (Some(log), true) = (&log, log_pending || now >= next_log_look_ns) {
                    let mut shard = shared.flows.shard(me);
                    shard.submit_udp_log(log, now, false);
                    log_pending = shard.log_pending();
                    next_log_look_ns = now + crate::logsink::HOLD_NS;
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
        {
            let mut shard = shared.flows.shard(me);
            // Each buffer is one datagram, or several the kernel coalesced (UDP GRO):
            // those arrived together and share the first one's metadata and arrival
            // time, as the segments of one GSO send share it without GRO.
            let (mut datagrams, mut gro_buffers, mut gro_datagrams) = (0u64, 0u64, 0u64);
            let mut head_only = 0u64;
            for (buf, meta) in bufs.iter().zip(&metas).take(n) {
                // What the datagrams of one buffer share, worked out once for all of them.
                let src = SocketAddr::new(unmapped(meta.src.ip()), meta.src.port());
                let rx_ns = meta.kernel_ts_ns.unwrap_or(fallback_rx_ns);
                let whole = &buf[..meta.len.min(buf.len())];
                // Taken by its head (--skip-rx-copy, where GRO is off): one datagram, as
                // long as the kernel said.
                let head_only_len = (meta.truncated && meta.gro_size.is_none()).then_some(meta.len);
                head_only += u64::from(head_only_len.is_some());
                // An agent's answer to our punch (`punch`) is not a probe.
                if whole.first() == Some(&wire::punch::MAGIC) && shared.punches.answered(whole, src)
                {
                    continue;
                }
                let at_arrival = Arrival {
                    meta,
                    src,
                    rx_ns,
                    whole,
                    now_mono,
                };
                let before = datagrams;
                datagrams += meter_segments(
                    &at_arrival,
                    head_only_len,
                    &mut shard,
                    me,
                    counters,
                    &mut forwards,
                    &mut echoes,
                );
                if meta.gro_size.is_some() {
                    gro_buffers += 1;
                    gro_datagrams += datagrams - before;
                }
            }
            coalesced = gro_buffers > 0;
            count_batch(counters, datagrams, head_only, gro_buffers, gro_datagrams);
            // Handed over under the shard's lock, so a flow's FlowEnd (written after it
            // leaves every shard, each handing over what it still holds) follows all of
            // its records.
            if let Some(log) = &log {
                shard.submit_udp_log(log, now_mono, false);
                log_pending = shard.log_pending();
                next_log_look_ns = now_mono + crate::logsink::HOLD_NS;
            }
        }
        if !forwards.is_empty() {
            // Not under this shard's lock: two shards handing over to each other never
            // wait for each other.
            let late = shared.flows.forward(&mut forwards, now_mono, log.as_ref());
            counters
                .late_after_finish
                .fetch_add(late, Ordering::Relaxed);
        }
        echoing = !echoes.is_empty();
        send_echoes(shared, socket, &mut echoes);
    }
    // Stopping: nothing stays held.
    if let Some(log) = &log {
        shared
            .flows
            .shard(me)
            .submit_udp_log(log, netio::clock::mono_ns(), true);
    }
}

/// Meter the datagrams of one buffer (one, or several the kernel coalesced), those of
/// one flow numbered one after another as one run; returns how many it held.
fn meter_segments(
    at_arrival: &Arrival<'_>,
    head_only_len: Option<usize>,
    shard: &mut super::shard::Shard,
    me: usize,
    counters: &super::Counters,
    forwards: &mut Vec<super::shard::Forward>,
    echoes: &mut Vec<Echo>,
) -> u64 {
    let (whole, meta) = (at_arrival.whole, at_arrival.meta);
    let mut n = 0u64;
    // Datagrams of one flow numbered one after another, sent together, go
    // to the meter as one run.
    let mut run: Option<Run> = None;
    let mut offset = 0;
    for data in netio::gro_segments(whole, meta.gro_size) {
        let data_at = offset;
        offset += data.len();
        n += 1;
        let len = head_only_len.unwrap_or(data.len());
        // The probe starts the payload, or follows a real RTP header.
        let at = probe::find(data).unwrap_or(0);
        let repr = match Packet::new_checked(&data[at..]).and_then(|p| Repr::parse(&p)) {
            Ok(r) if !r.echo => r,
            _ => {
                counters.malformed_datagrams.fetch_add(1, Ordering::Relaxed);
                continue;
            }
        };
        if let Some(r) = run.as_mut() {
            if r.extends(&repr, at, data_at, len) {
                r.n += 1;
                continue;
            }
        }
        if let Some(r) = run.take() {
            at_arrival.deliver(&r, shard, me, counters, forwards, echoes);
        }
        run = Some(Run {
            repr,
            n: 1,
            probe_at: at,
            data_at,
            len,
            // The RTP timestamp of a probe that follows an RTP header: meter
            // computes the RFC 3550 jitter from the records after the loop.
            rtp_ts: (at > 0)
                .then(|| wire::rtp::Packet::new_checked(data).ok())
                .flatten()
                .map(|rtp| rtp.timestamp()),
        });
    }
    if let Some(r) = run.take() {
        at_arrival.deliver(&r, shard, me, counters, forwards, echoes);
    }
    n
}

/// Add one batch's counts to the receiver's.
fn count_batch(
    counters: &super::Counters,
    datagrams: u64,
    head_only: u64,
    gro_buffers: u64,
    gro_datagrams: u64,
) {
    counters.datagrams.fetch_add(datagrams, Ordering::Relaxed);
    if head_only > 0 {
        counters
            .head_only_datagrams
            .fetch_add(head_only, Ordering::Relaxed);
    }
    if gro_buffers > 0 {
        counters
            .gro_buffers
            .fetch_add(gro_buffers, Ordering::Relaxed);
        counters
            .gro_datagrams
            .fetch_add(gro_datagrams, Ordering::Relaxed);
    }
}

/// Send the echoes of round-trip probes, each stamped as it leaves.
fn send_echoes(shared: &Shared, socket: &netio::UdpSocket, echoes: &mut Vec<Echo>) {
    for mut e in echoes.drain(..) {
        Packet::new_unchecked(&mut e.data[e.probe_at..])
            .make_echo(e.rx_ns, netio::clock::wall_ns());
        if let Err(err) = socket.send_to_marked_from(&e.data, e.dst, e.src_ip, &e.marking) {
            if shared
                .counters
                .echo_failures
                .fetch_add(1, Ordering::Relaxed)
                == 0
            {
                eprintln!(
                    "dualperf recv: echo to {} failed: {err} (further failures are only counted)",
                    e.dst
                );
            }
        }
    }
}
