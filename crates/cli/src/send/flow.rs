//! One flow inside a sender engine: how its packets are written, where they are staged
//! (a UDP socket it may share with other flows of its engine, or its own TCP
//! connection), and what its echoes measured.
//!
//! The engine (`engine.rs`) decides when; this file knows what a packet of a flow looks
//! like and how a batch of staged packets goes to the kernel.

use std::io::{ErrorKind, Read, Write};
use std::net::TcpStream;
use std::sync::Arc;

use meter::{FlowMeter, RxRecord, TxMeter};
use traffic::sender::max_payload;
use traffic::{FlowSpec, Transmit};
use wire::control::Meter;
use wire::frame::{self, FrameDecoder};
use wire::probe::{Packet, Repr, SeqUnwrapper};
use wire::time::Instant;

use results::send::{HoldSums, SenderFlow};

/// Most packets handed to the kernel in one call.
pub(super) const BATCH: usize = 64;
/// TCP send buffers are capped at about this many bytes per batch.
const TCP_BATCH_BYTES: usize = 1 << 20;

/// A flow's connection, as the session opened it. UDP sockets may be shared by several
/// flows of one engine (the same `Arc`).
pub(super) enum Conn {
    Udp(Arc<netio::UdpSocket>),
    Tcp(TcpStream),
}

/// A packet staged for sending: its flow (index in the engine), where its probe starts,
/// and its schedule record.
#[derive(Clone, Copy, Debug)]
pub(super) struct Staged {
    pub(super) flow: usize,
    pub(super) probe_at: usize,
    pub(super) seq: u64,
    pub(super) scheduled_ns: u64,
    pub(super) size_bytes: u32,
}

impl Staged {
    /// Its schedule record, for flow `id`, sent at `actual_ns` (monotonic).
    pub(super) fn tx_record(&self, id: u16, actual_ns: u64) -> meter::TxRecord {
        meter::TxRecord {
            flow: u32::from(id),
            seq: self.seq,
            size_bytes: self.size_bytes,
            scheduled_ns: self.scheduled_ns,
            actual_ns,
        }
    }
}

/// A UDP socket and the batch staged on it, for every flow of an engine that marks its
/// packets alike (marking is per socket: DS byte, TTL, flow label).
pub(super) struct UdpOut {
    pub(super) sock: Arc<netio::UdpSocket>,
    /// The batch's slots back to back in one buffer, each `stride` bytes (the largest
    /// payload of the socket's flows): datagrams of that size lie end to end, so a run
    /// of them sent with GSO is one span of memory, which the kernel copies as one (as
    /// iperf3 --gsro's buffer), not 46 pieces.
    buf: Vec<u8>,
    stride: usize,
    /// Datagrams per batch: [`BATCH`], or the most whole GSO runs of `stride`-byte
    /// datagrams that fit in it (46 of 1,400 bytes, not a run of 46 and one of 18: each
    /// message costs both ends a packet's way through the stack, however many
    /// datagrams it carries).
    capacity: usize,
    lens: [usize; BATCH],
    pub(super) staged: Vec<Staged>,
    /// Some flow on this socket gets echoes.
    pub(super) echoes: bool,
}

impl UdpOut {
    pub(super) fn new(sock: Arc<netio::UdpSocket>) -> Self {
        Self {
            sock,
            buf: Vec::new(),
            stride: 0,
            capacity: BATCH,
            lens: [0; BATCH],
            staged: Vec::with_capacity(BATCH),
            echoes: false,
        }
    }

    /// Make room for payloads of up to `size` bytes.
    /// (Before any slot is staged: a wider stride moves every slot.)
    pub(super) fn reserve(&mut self, size: usize) {
        if self.stride < size {
            self.stride = size;
            self.buf = vec![0; BATCH * size];
            let run = self.sock.gso_run_len(size).clamp(1, BATCH);
            self.capacity = if run > 1 { BATCH / run * run } else { BATCH };
        }
    }

    /// Where slot `i`'s datagram lies in `buf`.
    fn span(&self, i: usize) -> std::ops::Range<usize> {
        let at = i * self.stride;
        at..at + self.lens[i]
    }

    fn slot(&mut self, i: usize) -> &mut [u8] {
        let span = self.span(i);
        &mut self.buf[span]
    }

    pub(super) fn is_full(&self) -> bool {
        self.staged.len() >= self.capacity
    }

    /// Datagrams per batch.
    pub(super) fn capacity(&self) -> usize {
        self.capacity
    }

    /// Slots left in the batch.
    pub(super) fn room(&self) -> usize {
        self.capacity.saturating_sub(self.staged.len())
    }

    /// The next slot, `len` bytes long.
    fn prepare(&mut self, len: usize) -> &mut [u8] {
        let i = self.staged.len();
        self.lens[i] = len;
        self.slot(i)
    }

    /// Stamp slots `from..` with the wall clock (one-way delay).
    pub(super) fn stamp(&mut self, from: usize, wall_ns: u64) {
        for i in from..self.staged.len() {
            let probe_at = self.staged[i].probe_at;
            Packet::new_unchecked(&mut self.slot(i)[probe_at..]).set_tx_ns(wall_ns);
        }
    }

    /// Send slots `from..`; how many the kernel took (0: try again).
    pub(super) fn send(&mut self, from: usize) -> std::io::Result<usize> {
        let mut slices: [&[u8]; BATCH] = [&[]; BATCH];
        let n = self.staged.len();
        for (i, slot) in (from..n).zip(slices.iter_mut()) {
            *slot = &self.buf[self.span(i)];
        }
        match self.sock.send_batch(&slices[..n - from]) {
            // An ICMP port unreachable reported for an earlier datagram: the error is
            // consumed by this call; the batch is retried.
            Err(e) if e.kind() == ErrorKind::ConnectionRefused => Ok(0),
            other => other,
        }
    }
}

/// A flow's TCP connection (non-blocking) and the messages staged on it, back to back,
/// each a length prefix and a payload.
pub(super) struct TcpOut {
    pub(super) stream: TcpStream,
    /// The buffer is reused without clearing: only prefixes and probes are written, the
    /// padding is whatever it held (bulk transfers then cost one copy into the kernel).
    buf: Vec<u8>,
    /// Where each staged message starts and ends in `buf`.
    spans: Vec<(usize, usize)>,
    /// Bytes of the batch already written: a write that would block resumes here, so a
    /// message is never sent twice or cut.
    written: usize,
    pub(super) staged: Vec<Staged>,
    capacity: usize,
    /// The monotonic time the batch was stamped at, once it was: a resumed write must
    /// not restamp bytes that may already be on the stream.
    pub(super) stamped_ns: Option<u64>,
    /// The wall-clock stamp the batch's probes carry (with `stamped_ns`).
    pub(super) stamped_wall_ns: u64,
    /// Decodes echoes (round-trip flows).
    decoder: Option<FrameDecoder>,
    /// `-Z`: each batch in a buffer of a pool, sent with `MSG_ZEROCOPY`.
    zc: Option<Box<super::zerocopy::ZeroCopyPool>>,
}

impl TcpOut {
    pub(super) fn is_full(&self) -> bool {
        self.staged.len() >= self.capacity
    }

    /// Messages left in the batch.
    fn room(&self) -> usize {
        self.capacity.saturating_sub(self.staged.len())
    }

    fn prepare(&mut self, len: usize) -> &mut [u8] {
        if self.staged.is_empty() {
            self.spans.clear();
            self.written = 0;
            self.stamped_ns = None;
            // -Z: the last batch's buffer may still be read by the kernel; a new one.
            if let Some(zc) = self.zc.as_mut() {
                let last = std::mem::take(&mut self.buf);
                if last.capacity() > 0 {
                    zc.retire(last);
                }
                self.buf = zc.take(&self.stream);
            }
        }
        let start = self.spans.last().map_or(0, |s| s.1);
        let end = start + frame::PREFIX_LEN + len;
        if self.buf.len() < end {
            self.buf.resize(end, 0);
        }
        // Sizes were checked against MAX_DATA_LEN; a prefix always fits.
        let _ = frame::emit_prefix(len, &mut self.buf[start..]);
        self.spans.push((start, end));
        &mut self.buf[start + frame::PREFIX_LEN..end]
    }

    pub(super) fn stamp(&mut self, wall_ns: u64, mono_ns: u64) {
        for (s, &(start, end)) in self.staged.iter().zip(&self.spans) {
            let body = &mut self.buf[start + frame::PREFIX_LEN..end];
            Packet::new_unchecked(&mut body[s.probe_at..]).set_tx_ns(wall_ns);
        }
        self.stamped_ns = Some(mono_ns);
        self.stamped_wall_ns = wall_ns;
    }

    /// Write what is left of the batch: `Ok(true)` when all of it is on the stream,
    /// `Ok(false)` when the window is full (wait until writable).
    pub(super) fn write(&mut self) -> std::io::Result<bool> {
        let end = self.spans.last().map_or(0, |s| s.1);
        while self.written < end {
            let bytes = &self.buf[self.written..end];
            let wrote = match self.zc.as_mut() {
                Some(zc) => zc.write(&self.stream, bytes),
                None => self.stream.write(bytes),
            };
            match wrote {
                Ok(0) => return Err(ErrorKind::WriteZero.into()),
                Ok(n) => self.written += n,
                Err(e) if e.kind() == ErrorKind::WouldBlock => return Ok(false),
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(true)
    }
}

/// Where a flow's packets go.
pub(super) enum Out {
    /// Index of the engine's shared UDP socket.
    Udp(usize),
    Tcp(Box<TcpOut>),
}

impl Out {
    /// Packets the batch can still take (`udp` holds the engine's shared sockets).
    pub(super) fn room(&self, udp: &[UdpOut]) -> usize {
        match self {
            Out::Udp(k) => udp[*k].room(),
            Out::Tcp(out) => out.room(),
        }
    }
}

/// A round-trip flow's echoes: the round trips as they arrived, the receiver's hold
/// times, and what the linger at the end needs.
pub(super) struct EchoSide {
    pub(super) meter: FlowMeter,
    pub(super) holds: HoldSums,
    unwrapper: SeqUnwrapper,
    pub(super) seen: u64,
    pub(super) max_rtt_ns: u64,
}

/// One flow of an engine.
pub(super) struct FlowState {
    pub(super) id: u16,
    pub(super) out: Out,
    /// RTP flows: a real RFC 3550 header before the probe.
    rtp: Option<wire::rtp::RtpStream>,
    probe_at: usize,
    pub(super) tx: TxMeter,
    pub(super) echo: Option<EchoSide>,
    pub(super) unlogged: u64,
    pub(super) error: Option<String>,
    /// `-O`: which sent packets the figures leave out.
    pub(super) omit: Option<meter::omit::TxOmit>,
}

impl FlowState {
    /// A flow whose packets go to `out`.
    pub(super) fn new(id: u16, spec: &FlowSpec, out: Out) -> Self {
        // RTP flows: random SSRC and initial sequence number and timestamp (RFC 3550
        // §5.1), then the probe.
        let rtp = spec.rtp.map(|r| {
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
        let echo = (spec.meter == Meter::Rtt).then(|| EchoSide {
            meter: FlowMeter::new(u32::from(id)),
            holds: HoldSums::default(),
            unwrapper: SeqUnwrapper::default(),
            seen: 0,
            max_rtt_ns: 0,
        });
        Self {
            id,
            out,
            rtp,
            probe_at,
            tx: TxMeter::default(),
            echo,
            unlogged: 0,
            error: None,
            omit: spec.omit_ns.map(meter::omit::TxOmit::new),
        }
    }

    /// A TCP connection for this flow: non-blocking, batches sized as before (paced
    /// messages due together go out in one write; an unpaced flow writes one message per
    /// call, so --size is the write size, as iperf3's -l).
    pub(super) fn tcp_out(spec: &FlowSpec, stream: TcpStream) -> std::io::Result<Out> {
        stream.set_nonblocking(true)?;
        let capacity = if spec.unpaced {
            1
        } else {
            (TCP_BATCH_BYTES / (frame::PREFIX_LEN + max_payload(spec))).clamp(1, BATCH)
        };
        Ok(Out::Tcp(Box::new(TcpOut {
            stream,
            buf: Vec::new(),
            spans: Vec::with_capacity(capacity),
            written: 0,
            staged: Vec::with_capacity(capacity),
            capacity,
            stamped_ns: None,
            stamped_wall_ns: 0,
            decoder: (spec.meter == Meter::Rtt).then(|| FrameDecoder::new(frame::MAX_DATA_LEN)),
            zc: spec.zerocopy.then(|| {
                let batch_bytes = capacity * (frame::PREFIX_LEN + max_payload(spec));
                Box::new(super::zerocopy::ZeroCopyPool::new(batch_bytes))
            }),
        })))
    }

    /// Write packet `t` of this flow (engine index `index`) and the `n − 1` after it
    /// (a run of [`traffic::Scheduler::poll_transmits`]) into the next slots of its out
    /// (`udp` holds the engine's shared sockets), unstamped.
    pub(super) fn stage(
        &mut self,
        index: usize,
        t: &Transmit,
        n: u32,
        start: Instant,
        udp: &mut [UdpOut],
    ) {
        for k in 0..u64::from(n) {
            let t = Transmit {
                seq: t.seq + k,
                marker: t.marker && k == 0,
                ..*t
            };
            self.stage_one(index, &t, start, udp);
        }
    }

    fn stage_one(&mut self, index: usize, t: &Transmit, start: Instant, udp: &mut [UdpOut]) {
        let len = t.size_bytes as usize;
        let slot = match &mut self.out {
            Out::Udp(k) => udp[*k].prepare(len),
            Out::Tcp(out) => out.prepare(len),
        };
        if let Some(stream) = self.rtp.as_mut() {
            // The media instant of this packet is its place in the schedule.
            let media_ns = t.scheduled.saturating_duration_since(start).as_nanos();
            let _ = stream.next(media_ns, t.marker).emit(slot);
        }
        let repr = Repr {
            flow: self.id,
            seq: t.seq as u32,
            tx_ns: 0,
            echo: false,
            stamps: None,
        };
        // The slot holds the probe behind any RTP header (sizes checked in to_spec).
        let _ = repr.emit(&mut slot[self.probe_at..]);
        let staged = Staged {
            flow: index,
            probe_at: self.probe_at,
            seq: t.seq,
            scheduled_ns: t.scheduled.as_nanos(),
            size_bytes: t.size_bytes,
        };
        match &mut self.out {
            Out::Udp(k) => udp[*k].staged.push(staged),
            Out::Tcp(out) => out.staged.push(staged),
        }
    }

    /// The flow's result, once the engine is done with it (with `-Z`, once the kernel
    /// reported its last zero-copy sends done, or 2 s passed).
    pub(super) fn into_result(mut self) -> SenderFlow {
        let zerocopy = match &mut self.out {
            Out::Tcp(out) => out.zc.as_mut().map(|zc| {
                let last = std::mem::take(&mut out.buf);
                zc.finish(&out.stream, last)
            }),
            Out::Udp(_) => None,
        };
        SenderFlow {
            zerocopy,
            tx: self.tx,
            hold: self.echo.as_ref().and_then(|e| e.holds.stats()),
            echoes: self.echo.map(|e| e.meter),
            unlogged: self.unlogged,
            error: self.error,
            omitted: self.omit,
            too_big: 0,
        }
    }

    /// Read what the TCP connection has (echoes): the echo records, or an end of stream.
    pub(super) fn read_tcp_echoes(
        &mut self,
        buf: &mut [u8],
        out: &mut Vec<(RxRecord, Option<i64>)>,
    ) -> bool {
        let (Out::Tcp(tcp), Some(echo)) = (&mut self.out, self.echo.as_mut()) else {
            return false;
        };
        let Some(decoder) = tcp.decoder.as_mut() else {
            return false;
        };
        let mut open = true;
        loop {
            match tcp.stream.read(buf) {
                Ok(0) => {
                    open = false;
                    break;
                }
                Ok(n) => decoder.handle_bytes(&buf[..n]),
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                Err(_) => break,
            }
        }
        // On a connecting IPv4 socket Linux reports placeholders (TOS 0, TTL 1): unknown.
        let kernel = netio::tcp::last_recv_meta(&tcp.stream)
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
            let Some(repr) = echo_repr(body) else {
                continue;
            };
            if let Some(e) = echo_record(self.id, &repr, body.len(), meta, echo) {
                out.push(e);
            }
        }
        open
    }
}

impl EchoSide {
    /// Count one echo's round trip and the receiver's hold time.
    pub(super) fn handle(&mut self, (record, hold): (RxRecord, Option<i64>)) {
        self.meter.handle_record(&record);
        if let Some(h) = hold {
            self.holds.add(h);
        }
    }
}

/// Header fields of a received echo, as the kernel reported them.
#[derive(Clone, Copy, Default)]
pub(super) struct EchoMeta {
    pub(super) rx_ns: u64,
    pub(super) kernel_ts: bool,
    pub(super) tos: Option<u8>,
    pub(super) hop_limit: Option<u8>,
    pub(super) flow_label: Option<u32>,
}

/// The probe of an echo in `body`, if it is one.
pub(super) fn echo_repr(body: &[u8]) -> Option<Repr> {
    let at = wire::probe::find(body)?;
    let repr = Packet::new_checked(&body[at..])
        .and_then(|p| Repr::parse(&p))
        .ok()?;
    repr.echo.then_some(repr)
}

/// The record of echo `repr` (of `len` bytes) of flow `id`, or `None` if it belongs to
/// another flow. When the echo carries the receiver's timestamps, the time it held the
/// probe is subtracted from the round trip (as irtt does) and returned separately.
pub(super) fn echo_record(
    id: u16,
    repr: &Repr,
    len: usize,
    meta: EchoMeta,
    echo: &mut EchoSide,
) -> Option<(RxRecord, Option<i64>)> {
    if repr.flow != id {
        return None;
    }
    let hold = repr
        .stamps
        .and_then(|s| s.tx_ns.checked_sub(s.rx_ns))
        .filter(|h| *h < 10_000_000_000);
    let record = RxRecord {
        flow: u32::from(id),
        seq: echo.unwrapper.unwrap(repr.seq),
        size_bytes: len as u32,
        tx_ns: repr.tx_ns,
        rx_ns: meta.rx_ns.saturating_sub(hold.unwrap_or(0)),
        tos: meta.tos,
        hop_limit: meta.hop_limit,
        flow_label: meta.flow_label,
        kernel_ts: meta.kernel_ts,
        rtp_ts: None,
    };
    echo.seen += 1;
    echo.max_rtt_ns = echo
        .max_rtt_ns
        .max(record.rx_ns.saturating_sub(record.tx_ns));
    Some((record, hold.map(|h| h as i64)))
}
