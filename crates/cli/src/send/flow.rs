//! One flow: the pacing loop that sends it and the reader that collects its echoes.
//!
//! The loop is the same for UDP and TCP; only the [`Sink`] differs. It asks the schedule
//! when to wake, sleeps (in slices, so a stop is noticed), takes every packet that is
//! due, stamps them with one clock reading right before the syscall and sends them in
//! one `sendmmsg` (UDP) or one `write` (TCP). Every packet keeps its scheduled and
//! actual send time.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration as StdDuration;

use meter::log::Entry;
use meter::{FlowMeter, RxRecord, TxMeter, TxRecord};
use traffic::{FlowSpec, Schedule};
use wire::control::Meter;
use wire::frame::{self, FrameDecoder};
use wire::probe::{Packet, Repr, SeqUnwrapper};
use wire::time::{Duration, Instant};

use results::send::{HoldStats, HoldSums};

use crate::logsink::LogProducer;

/// Most packets handed to the kernel in one call.
const BATCH: usize = 64;
/// Longest single sleep, so a stop request is seen promptly even at 0.1 pkt/s.
const MAX_SLEEP_NS: u64 = 100_000_000;
/// TCP send buffers are capped at about this many bytes per batch.
const TCP_BATCH_BYTES: usize = 1 << 20;

/// A flow's connection.
pub(super) enum Conn {
    Udp(Arc<netio::UdpSocket>),
    Tcp(TcpStream),
}

/// How a flow waits for its deadlines.
#[derive(Clone, Copy, Debug)]
pub(super) struct Pacing {
    /// Busy-wait this long before a deadline (`None`: adaptive).
    pub(super) spin: Option<Duration>,
    /// Wake once for all packets due within this window.
    pub(super) batch_window: Duration,
}

/// Everything a flow thread needs.
pub(super) struct FlowRun {
    pub(super) id: u16,
    pub(super) spec: FlowSpec,
    pub(super) origin: Instant,
    pub(super) pacing: Pacing,
    /// Set when the user interrupts or the receiver goes away.
    pub(super) halt: Arc<AtomicBool>,
    /// Packets and payload bytes handed to the kernel so far, all flows together.
    pub(super) progress: Arc<AtomicU64>,
    pub(super) progress_bytes: Arc<AtomicU64>,
    /// The sender's log, if asked for: send records and echoes stream to it.
    pub(super) log: Option<LogProducer>,
}

/// What a flow measured; `error` says why it ended early, if it did.
pub(super) struct FlowResult {
    /// The send records, counted as they were made.
    pub(super) tx: TxMeter,
    /// The echoes' round-trip figures (round-trip flows).
    pub(super) echoes: Option<FlowMeter>,
    pub(super) hold: Option<HoldStats>,
    /// Records the log could not take.
    pub(super) unlogged: u64,
    pub(super) error: Option<String>,
}

/// Where a batch is built and sent.
trait Sink {
    /// Most packets per batch.
    fn capacity(&self) -> usize;
    /// Make batch slot `i` a payload of `len` bytes (slots are filled in order from 0)
    /// and return it.
    fn prepare(&mut self, i: usize, len: usize) -> &mut [u8];
    /// The payload of a prepared slot.
    fn slot(&mut self, i: usize) -> &mut [u8];
    /// Send slots `from..to`; how many the kernel took (0: try again).
    fn send(&mut self, from: usize, to: usize) -> std::io::Result<usize>;
    /// The flow has ended: tell the receiver (TCP: end of stream).
    fn finish(&mut self) {}
}

struct UdpSink {
    sock: Arc<netio::UdpSocket>,
    /// One buffer per slot, as large as the largest payload the flow may send.
    bufs: Vec<Vec<u8>>,
    lens: [usize; BATCH],
}

impl Sink for UdpSink {
    fn capacity(&self) -> usize {
        self.bufs.len()
    }
    fn prepare(&mut self, i: usize, len: usize) -> &mut [u8] {
        self.lens[i] = len;
        &mut self.bufs[i][..len]
    }
    fn slot(&mut self, i: usize) -> &mut [u8] {
        &mut self.bufs[i][..self.lens[i]]
    }
    fn send(&mut self, from: usize, to: usize) -> std::io::Result<usize> {
        let mut slices: [&[u8]; BATCH] = [&[]; BATCH];
        for (i, slot) in (from..to).zip(slices.iter_mut()) {
            *slot = &self.bufs[i][..self.lens[i]];
        }
        match self.sock.send_batch(&slices[..to - from]) {
            // An ICMP port unreachable reported for an earlier datagram: the error is
            // consumed by this call; the batch is retried.
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionRefused => Ok(0),
            other => other,
        }
    }
}

struct TcpSink {
    stream: TcpStream,
    /// The batch's messages back to back, each a length prefix and a payload. The buffer
    /// is reused without clearing: only prefixes and probes are written, the padding is
    /// whatever it held (bulk transfers then cost one copy into the kernel, no more).
    buf: Vec<u8>,
    /// Bytes of `buf` the current batch uses.
    used: usize,
    /// Bytes of the batch already written: a write that timed out resumes here, so a
    /// message is never sent twice or cut (the stream has a write timeout, so a full
    /// window never keeps the flow from seeing a stop).
    written: usize,
    /// Where each slot's message starts and ends in `buf`.
    spans: Vec<(usize, usize)>,
    capacity: usize,
}

impl Sink for TcpSink {
    fn capacity(&self) -> usize {
        self.capacity
    }
    fn prepare(&mut self, i: usize, len: usize) -> &mut [u8] {
        if i == 0 {
            self.used = 0;
            self.written = 0;
            self.spans.clear();
        }
        let start = self.used;
        let end = start + frame::PREFIX_LEN + len;
        if self.buf.len() < end {
            self.buf.resize(end, 0);
        }
        // Sizes were checked against MAX_DATA_LEN; a prefix always fits.
        let _ = frame::emit_prefix(len, &mut self.buf[start..]);
        self.spans.push((start, end));
        self.used = end;
        &mut self.buf[start + frame::PREFIX_LEN..end]
    }
    fn slot(&mut self, i: usize) -> &mut [u8] {
        let (start, end) = self.spans[i];
        &mut self.buf[start + frame::PREFIX_LEN..end]
    }
    fn send(&mut self, from: usize, to: usize) -> std::io::Result<usize> {
        let (start, end) = (self.spans[from].0, self.spans[to - 1].1);
        let mut at = start.max(self.written);
        while at < end {
            match self.stream.write(&self.buf[at..end]) {
                Ok(0) => return Err(std::io::ErrorKind::WriteZero.into()),
                Ok(n) => {
                    at += n;
                    self.written = at;
                }
                // The window stayed full for a write timeout: let the flow check for a
                // stop, then resume where the write left off.
                Err(e) if crate::control::is_timeout(&e) => return Ok(0),
                Err(e) => return Err(e),
            }
        }
        Ok(to - from)
    }
    fn finish(&mut self) {
        let _ = self.stream.shutdown(std::net::Shutdown::Write);
    }
}

/// Run one flow to its end (or a halt), then collect its last echoes.
pub(super) fn run_flow(run: &FlowRun, conn: Conn) -> FlowResult {
    // Timer slack (50 µs by default) would make every sleep overshoot by that much.
    let _ = netio::clock::set_timer_slack_ns(1);
    // The largest payload the flow may send: its size, or what the protocol allows when
    // sizes are drawn from a distribution (the schedule clamps them to that).
    let size = match (&run.spec.size_dist, run.spec.protocol) {
        (None, _) => run.spec.size_bytes as usize,
        (Some(_), wire::control::Protocol::Udp) => 65_507,
        (Some(_), wire::control::Protocol::Tcp) => frame::MAX_DATA_LEN,
    };
    // A video packet is a payload header and a chunk of a frame (clamped like any size).
    let size = match &run.spec.video {
        Some(v) => size.max((v.header_bytes as usize + v.max_chunk_bytes as usize).min(65_507)),
        None => size,
    };
    let echo_state = Arc::new(EchoState::default());
    let (mut sink, echo_thread): (Box<dyn Sink>, _) = match conn {
        Conn::Udp(sock) => {
            let reader = (run.spec.meter == Meter::Rtt).then(|| {
                let (sock, state, id, out) =
                    (sock.clone(), echo_state.clone(), run.id, Echoes::new(run));
                std::thread::spawn(move || udp_echoes(&sock, id, &state, out))
            });
            (
                Box::new(UdpSink {
                    sock,
                    bufs: vec![vec![0u8; size]; BATCH],
                    lens: [0; BATCH],
                }),
                reader,
            )
        }
        Conn::Tcp(stream) => {
            let reader = match (run.spec.meter == Meter::Rtt).then(|| stream.try_clone()) {
                Some(Ok(mut rd)) => {
                    let (state, id, out) = (echo_state.clone(), run.id, Echoes::new(run));
                    Some(std::thread::spawn(move || {
                        tcp_echoes(&mut rd, id, &state, out)
                    }))
                }
                Some(Err(e)) => return FlowResult::failed(format!("cannot read echoes: {e}")),
                None => None,
            };
            // Paced messages that are due together go out in one write; an unpaced (bulk)
            // flow writes one message per call, so --size is the write size, as iperf3's -l.
            let capacity = if run.spec.unpaced {
                1
            } else {
                (TCP_BATCH_BYTES / (frame::PREFIX_LEN + size)).clamp(1, BATCH)
            };
            if let Err(e) = stream.set_write_timeout(Some(StdDuration::from_millis(100))) {
                return FlowResult::failed(format!("cannot set a write timeout: {e}"));
            }
            (
                Box::new(TcpSink {
                    stream,
                    buf: Vec::new(),
                    used: 0,
                    written: 0,
                    spans: Vec::with_capacity(capacity),
                    capacity,
                }),
                reader,
            )
        }
    };
    let (tx, unlogged, error) = pace(run, sink.as_mut());
    let echoes = echo_thread.map(|h| {
        linger_for_echoes(&echo_state, tx.packets());
        h.join().unwrap_or_else(|_| Echoes::new(run))
    });
    sink.finish();
    FlowResult {
        tx,
        hold: echoes.as_ref().and_then(|e| e.holds.stats()),
        unlogged: unlogged + echoes.as_ref().map_or(0, |e| e.unlogged),
        echoes: echoes.map(|e| e.meter),
        error,
    }
}

impl FlowResult {
    fn failed(error: String) -> Self {
        Self {
            tx: TxMeter::default(),
            echoes: None,
            hold: None,
            unlogged: 0,
            error: Some(error),
        }
    }
}

/// The pacing loop: returns what it sent, the records the log could not take and, if
/// sending failed, why.
fn pace(run: &FlowRun, sink: &mut dyn Sink) -> (TxMeter, u64, Option<String>) {
    let spec = &run.spec;
    let mut tx = TxMeter::default();
    let mut sched = match Schedule::new(spec, run.origin) {
        Ok(s) => s,
        Err(e) => return (tx, 0, Some(format!("invalid traffic model: {e}"))),
    };
    let mut chunk = run.log.as_ref().map(LogProducer::chunk);
    let mut unlogged = 0u64;
    let (num, den) = spec.rate.interval_ns(spec.size_bytes);
    let interval_ns = u64::try_from(num / den).unwrap_or(u64::MAX);
    let spin_ns = run
        .pacing
        .spin
        .map_or((interval_ns / 4).min(50_000), Duration::as_nanos);
    // Packets per wake-up: those due within the batch window (at least one).
    let batch = (run.pacing.batch_window.as_nanos() / interval_ns.max(1)).clamp(1, BATCH as u64);
    let mut pending: Vec<(u64, u64, u32)> = Vec::with_capacity(BATCH);
    let flow = u32::from(run.id);
    // RTP flows: a real RFC 3550 header first, with random SSRC and initial sequence
    // number and timestamp (RFC 3550 §5.1), then the probe.
    let mut rtp = spec.rtp.map(|r| {
        let [s0, s1, s2, s3, q0, q1, t0, t1, t2, t3] = crate::control::random_bytes::<10>();
        wire::rtp::RtpStream::new(
            r.payload_type,
            u32::from_be_bytes([s0, s1, s2, s3]),
            u16::from_be_bytes([q0, q1]),
            u32::from_be_bytes([t0, t1, t2, t3]),
            r.clock_rate_hz,
        )
    });
    let probe_at = if rtp.is_some() {
        wire::rtp::HEADER_LEN
    } else {
        0
    };
    loop {
        if run.halt.load(Ordering::Relaxed) {
            sched.handle_stop();
        }
        let Some(wake) = sched.poll_timeout_batch(batch) else {
            break;
        };
        if !wait_until(wake.as_nanos(), spin_ns, &run.halt) {
            continue;
        }
        let now = Instant::from_nanos(netio::clock::mono_ns());
        pending.clear();
        while pending.len() < sink.capacity() {
            let Some(t) = sched.poll_transmit(now) else {
                break;
            };
            let repr = Repr {
                flow: run.id,
                seq: t.seq as u32,
                tx_ns: 0,
                echo: false,
                stamps: None,
            };
            let slot = sink.prepare(pending.len(), t.size_bytes as usize);
            if let Some(stream) = rtp.as_mut() {
                // The media instant of this packet is its place in the schedule.
                let media_ns = t
                    .scheduled
                    .saturating_duration_since(sched.start())
                    .as_nanos();
                let _ = stream.next(media_ns, t.marker).emit(slot);
            }
            // The slot holds the probe behind any RTP header (sizes checked in to_spec).
            let _ = repr.emit(&mut slot[probe_at..]);
            pending.push((t.seq, t.scheduled.as_nanos(), t.size_bytes));
        }
        let n = pending.len();
        let mut off = 0;
        // Where the probes were last stamped: a retry after a partial TCP write must not
        // restamp bytes that may already be on the stream.
        let mut stamped = None;
        let mut actual = 0;
        while off < n {
            // One reading of each clock right before the call: the wall clock goes into
            // the probes (one-way delay), the monotonic one into the schedule record.
            if stamped != Some(off) {
                let wall = netio::clock::wall_ns();
                actual = netio::clock::mono_ns();
                for i in off..n {
                    Packet::new_unchecked(&mut sink.slot(i)[probe_at..]).set_tx_ns(wall);
                }
                stamped = Some(off);
            }
            match sink.send(off, n) {
                Ok(0) => {
                    // Nothing went out (a full window or socket buffer): stop if asked to
                    // or if the run's time is up, else try again.
                    let now = Instant::from_nanos(netio::clock::mono_ns());
                    if run.halt.load(Ordering::Relaxed) || sched.end().is_some_and(|e| now >= e) {
                        unlogged += submit(run.log.as_ref(), chunk.as_mut());
                        return (tx, unlogged, None);
                    }
                    std::thread::yield_now();
                }
                Ok(sent) => {
                    for &(seq, scheduled, size_bytes) in &pending[off..off + sent] {
                        let record = TxRecord {
                            flow,
                            seq,
                            size_bytes,
                            scheduled_ns: scheduled,
                            actual_ns: actual,
                        };
                        tx.handle_record(&record);
                        if let Some(chunk) = &mut chunk {
                            chunk.push(&Entry::Tx(record), flow);
                        }
                    }
                    off += sent;
                }
                Err(e) => {
                    unlogged += submit(run.log.as_ref(), chunk.as_mut());
                    return (
                        tx,
                        unlogged,
                        Some(format!(
                            "sending failed after {} packets: {e}",
                            off as u64 + sched.packets() - n as u64
                        )),
                    );
                }
            }
        }
        unlogged += submit_when(run.log.as_ref(), chunk.as_mut(), Some(actual));
        run.progress.fetch_add(n as u64, Ordering::Relaxed);
        let bytes: u64 = pending.iter().map(|p| u64::from(p.2)).sum();
        run.progress_bytes.fetch_add(bytes, Ordering::Relaxed);
    }
    unlogged += submit(run.log.as_ref(), chunk.as_mut());
    (tx, unlogged, None)
}

/// Hands a chunk to the log writer; the records it could not take.
fn submit(log: Option<&LogProducer>, chunk: Option<&mut crate::logsink::Chunk>) -> u64 {
    submit_when(log, chunk, None)
}

/// Hands a chunk to the log writer at once (`now_ns` `None`) or only when it is due
/// ([`LogProducer::submit_if_due`]); the records it could not take.
fn submit_when(
    log: Option<&LogProducer>,
    chunk: Option<&mut crate::logsink::Chunk>,
    now_ns: Option<u64>,
) -> u64 {
    let (Some(log), Some(chunk)) = (log, chunk) else {
        return 0;
    };
    let dropped = match now_ns {
        Some(now) => log.submit_if_due(chunk, now),
        None => log.submit(chunk),
    };
    dropped.map_or(0, |d| d.iter().map(|(_, n)| n).sum())
}

/// Sleep (then spin for the last `spin_ns`) until `deadline_ns`, in slices of at most
/// [`MAX_SLEEP_NS`]; false if halted first.
fn wait_until(deadline_ns: u64, spin_ns: u64, halt: &AtomicBool) -> bool {
    loop {
        let now = netio::clock::mono_ns();
        if now >= deadline_ns {
            return true;
        }
        if halt.load(Ordering::Relaxed) {
            return false;
        }
        if deadline_ns - now > MAX_SLEEP_NS + spin_ns {
            netio::clock::sleep_until(now + MAX_SLEEP_NS, 0);
        } else {
            netio::clock::sleep_until(deadline_ns, spin_ns);
        }
    }
}

/// Shared between a flow and its echo reader.
#[derive(Default)]
struct EchoState {
    done: AtomicBool,
    seen: AtomicU64,
    max_rtt_ns: AtomicU64,
}

/// Wait for echoes still in flight: until as many arrived as were sent, or none came for
/// max(500 ms, 2 × the largest RTT seen), at most 10 s; then stop the reader.
fn linger_for_echoes(state: &EchoState, sent: u64) {
    let start = std::time::Instant::now();
    let mut last = state.seen.load(Ordering::Relaxed);
    let mut last_change = std::time::Instant::now();
    loop {
        let idle_limit = StdDuration::from_nanos(
            (2 * state.max_rtt_ns.load(Ordering::Relaxed)).max(500_000_000),
        );
        if last >= sent
            || start.elapsed() >= StdDuration::from_secs(10)
            || last_change.elapsed() >= idle_limit
        {
            break;
        }
        std::thread::sleep(StdDuration::from_millis(5));
        let now = state.seen.load(Ordering::Relaxed);
        if now != last {
            last = now;
            last_change = std::time::Instant::now();
        }
    }
    state.done.store(true, Ordering::SeqCst);
}

/// Header fields of a received echo, as the kernel reported them.
#[derive(Clone, Copy, Default)]
struct EchoMeta {
    rx_ns: u64,
    kernel_ts: bool,
    tos: Option<u8>,
    hop_limit: Option<u8>,
    flow_label: Option<u32>,
}

/// The record of one echo of flow `id`, or `None` if `body` is not one. When the echo
/// carries the receiver's timestamps, the time it held the probe is subtracted from the
/// round trip (as irtt does) and returned separately.
fn echo_record(
    id: u16,
    body: &[u8],
    meta: EchoMeta,
    unwrapper: &mut SeqUnwrapper,
    state: &EchoState,
) -> Option<(RxRecord, Option<i64>)> {
    let at = wire::probe::find(body)?;
    let repr = Packet::new_checked(&body[at..])
        .and_then(|p| Repr::parse(&p))
        .ok()?;
    if !repr.echo || repr.flow != id {
        return None;
    }
    let hold = repr
        .stamps
        .and_then(|s| s.tx_ns.checked_sub(s.rx_ns))
        .filter(|h| *h < 10_000_000_000);
    let record = RxRecord {
        flow: u32::from(id),
        seq: unwrapper.unwrap(repr.seq),
        size_bytes: body.len() as u32,
        tx_ns: repr.tx_ns,
        rx_ns: meta.rx_ns.saturating_sub(hold.unwrap_or(0)),
        tos: meta.tos,
        hop_limit: meta.hop_limit,
        flow_label: meta.flow_label,
        kernel_ts: meta.kernel_ts,
        rtp_ts: None,
    };
    state.seen.fetch_add(1, Ordering::Relaxed);
    state
        .max_rtt_ns
        .fetch_max(record.rx_ns.saturating_sub(record.tx_ns), Ordering::Relaxed);
    Some((record, hold.map(|h| h as i64)))
}

/// What an echo reader measured: the round trips as they arrived, the receiver's hold
/// times, and the log's share.
struct Echoes {
    meter: FlowMeter,
    holds: HoldSums,
    log: Option<LogProducer>,
    chunk: Option<crate::logsink::Chunk>,
    unlogged: u64,
}

impl Echoes {
    fn new(run: &FlowRun) -> Self {
        Self {
            meter: FlowMeter::new(u32::from(run.id)),
            holds: HoldSums::default(),
            chunk: run.log.as_ref().map(LogProducer::chunk),
            log: run.log.clone(),
            unlogged: 0,
        }
    }

    fn handle(&mut self, (record, hold): (RxRecord, Option<i64>)) {
        self.meter.handle_record(&record);
        if let Some(h) = hold {
            self.holds.add(h);
        }
        if let Some(chunk) = &mut self.chunk {
            chunk.push(&Entry::Rx(record), record.flow);
        }
    }

    /// Hands the records read so far to the log when the chunk is due (full, or 50 ms
    /// old), or at once with `force`.
    fn submit(&mut self, force: bool) {
        let now_ns = (!force).then(netio::clock::mono_ns);
        self.unlogged += submit_when(self.log.as_ref(), self.chunk.as_mut(), now_ns);
    }
}

fn udp_echoes(sock: &netio::UdpSocket, id: u16, state: &EchoState, mut out: Echoes) -> Echoes {
    let _ = sock.set_read_timeout(Some(StdDuration::from_millis(50)));
    let mut bufs = vec![vec![0u8; 65_536]; BATCH];
    let mut metas = vec![netio::RecvMeta::default(); BATCH];
    let mut unwrapper = SeqUnwrapper::default();
    while !state.done.load(Ordering::Relaxed) {
        let Ok(n) = sock.recv_batch(&mut bufs, &mut metas) else {
            continue;
        };
        let fallback = netio::clock::wall_ns();
        for (buf, m) in bufs.iter().zip(&metas).take(n) {
            let meta = EchoMeta {
                rx_ns: m.kernel_ts_ns.unwrap_or(fallback),
                kernel_ts: m.kernel_ts_ns.is_some(),
                tos: m.tos,
                hop_limit: m.hop_limit,
                flow_label: m.flow_label,
            };
            if let Some(echo) = echo_record(
                id,
                &buf[..m.len.min(buf.len())],
                meta,
                &mut unwrapper,
                state,
            ) {
                out.handle(echo);
            }
        }
        out.submit(false);
    }
    out.submit(true);
    out
}

fn tcp_echoes(stream: &mut TcpStream, id: u16, state: &EchoState, mut out: Echoes) -> Echoes {
    let _ = stream.set_read_timeout(Some(StdDuration::from_millis(50)));
    let mut decoder = FrameDecoder::new(frame::MAX_DATA_LEN);
    let mut buf = vec![0u8; 256 * 1024];
    let mut unwrapper = SeqUnwrapper::default();
    while !state.done.load(Ordering::Relaxed) {
        match stream.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => decoder.handle_bytes(&buf[..n]),
            Err(_) => continue,
        }
        // On a connecting IPv4 socket Linux reports placeholders (TOS 0, TTL 1): unknown.
        let kernel = netio::tcp::last_recv_meta(stream)
            .ok()
            .filter(|m| !m.handshake_only);
        let meta = EchoMeta {
            rx_ns: netio::clock::wall_ns(),
            kernel_ts: false,
            tos: kernel.and_then(|m| m.tos),
            hop_limit: kernel.and_then(|m| m.hop_limit),
            flow_label: kernel.and_then(|m| m.flow_label),
        };
        while let Ok(Some(body)) = decoder.poll_frame() {
            if let Some(echo) = echo_record(id, body, meta, &mut unwrapper, state) {
                out.handle(echo);
            }
        }
        out.submit(false);
    }
    out.submit(true);
    out
}
