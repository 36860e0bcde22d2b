//! The STAMP Session-Sender's reply meter (RFC 8762 §4.2): every figure of a session's
//! replies, one reply at a time, into `send`'s report ([`ReplyMeter`]). Pure: the
//! caller reads the socket and the clock and passes each reply's arrival time in.
//!
//! Per reply: t1 (the sender's send time, carried back), t2 and t3 (the reflector's
//! receive and send times), t4 (the kernel's receive time of the reply) give the round
//! trip less the turnaround, the forward and reverse one-way delays (two clocks: the
//! offset is estimated from the same timestamps, never subtracted), and loss by
//! direction when the reflector is stateful.
//!
//! Nothing kept grows with the packet count: replies are matched by the sequence number
//! they answer (any number below the count sent is ours; the send time comes back in
//! the reply), duplicates and reordering are the meters' sequence windows.

use meter::clock::{Exchange, OffsetFilter};
use meter::{FlowMeter, FlowSummary, RxRecord};
use wire::probe::SeqUnwrapper;
use wire::stamp::{
    format_name, mode_name, ErrorEstimate, Mode, PacketWriter, ReflectorRepr, TlvBody,
    MAX_UDP_PAYLOAD,
};

use std::net::SocketAddr;

use meter::TxMeter;
use traffic::FlowSpec;

use crate::send::{
    sent_stats, FlowOutcome, HoldStats, HoldSums, SendReport, StampCos, StampOutcome, SumStats,
    SEND_FORMAT_VERSION,
};

/// The flow id of the one flow in a STAMP session's report.
pub const FLOW_ID: u16 = 0;

/// The kernel's view of one reply.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ReplyMeta {
    /// UDP payload octets.
    pub len: usize,
    /// t4: when it arrived, ns since the Unix epoch (the kernel's stamp if
    /// `kernel_ts`).
    pub rx_ns: u64,
    /// `rx_ns` is the kernel's receive timestamp.
    pub kernel_ts: bool,
    /// The DS field, hop limit and flow label it arrived with.
    pub tos: Option<u8>,
    /// The hop limit (TTL) it arrived with.
    pub hop_limit: Option<u8>,
    /// The IPv6 flow label it arrived with.
    pub flow_label: Option<u32>,
}

/// The four timestamps of one exchange, ns since the Unix epoch, each on its own host's
/// clock (RFC 8762 §4.2.1 and §4.3.1): t1 the sender's send time, t2 the reflector's
/// receive time, t3 its send time, t4 the sender's receive time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stamps {
    /// The sender's send time.
    pub t1_ns: u64,
    /// The reflector's receive time.
    pub t2_ns: u64,
    /// The reflector's send time.
    pub t3_ns: u64,
    /// The sender's receive time.
    pub t4_ns: u64,
}

/// `a − b` as a signed difference, saturating at the `i64` range.
fn diff_ns(a: u64, b: u64) -> i64 {
    (i128::from(a) - i128::from(b)).clamp(i128::from(i64::MIN), i128::from(i64::MAX)) as i64
}

impl Stamps {
    /// The round trip less the reflector's turnaround, `(t4 − t1) − (t3 − t2)`: RFC 5905
    /// §8's delay δ of the exchange, the round-trip time a STAMP Session-Sender
    /// computes from RFC 8762 §4.2.1's timestamps. One clock per difference: exact
    /// whatever the clocks' offset.
    pub fn round_trip_ns(&self) -> i64 {
        diff_ns(self.t4_ns, self.t1_ns).saturating_sub(self.turnaround_ns())
    }

    /// The reflector's turnaround `t3 − t2` (its clock only).
    pub fn turnaround_ns(&self) -> i64 {
        diff_ns(self.t3_ns, self.t2_ns)
    }

    /// The exchange for RFC 5905 §8's on-wire offset estimate.
    pub fn exchange(&self) -> Exchange {
        Exchange {
            t1_ns: self.t1_ns,
            t2_ns: self.t2_ns,
            t3_ns: self.t3_ns,
            t4_ns: self.t4_ns,
        }
    }
}

/// The four timestamps of `reply` received at `t4_ns`, each converted from the format
/// its Error Estimate names (RFC 8762 §4.2.1: the Z bit).
pub fn stamps_of(reply: &ReflectorRepr, t4_ns: u64) -> Stamps {
    let ours = reply.sender_error_estimate.format;
    let theirs = reply.error_estimate.format;
    Stamps {
        t1_ns: ours.to_unix_ns(reply.sender_timestamp),
        t2_ns: theirs.to_unix_ns(reply.receive_timestamp),
        t3_ns: theirs.to_unix_ns(reply.timestamp),
        t4_ns,
    }
}

/// The sequence number (of the count sent so far, `staged`) that a reply's 32-bit
/// Session-Sender Sequence Number names: the latest one with these low bits; `None`
/// when no packet so numbered was sent.
pub fn sent_seq(wire_seq: u32, staged: u64) -> Option<u64> {
    let v = u64::from(wire_seq);
    let top = staged.checked_sub(1)?;
    (v <= top).then(|| top - ((top - v) & 0xffff_ffff))
}

/// What became of a datagram.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// A reply of this session to a packet sent: measured.
    Accepted,
    /// Another session's (SSID), or for a number never sent: counted, ignored.
    Unknown,
    /// Not a reply of this mode (parse or HMAC failure): counted, ignored.
    Malformed,
}

/// The Class of Service TLV's answers so far.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct CosCounts {
    dscp1: u8,
    replies: u64,
    unsupported: u64,
    refused: u64,
}

/// Every figure of the replies, one reply at a time in arrival order, in memory that
/// does not grow with their count. Pure: the caller reads the clock and the socket.
#[derive(Default)]
pub struct ReplyMeter {
    ssid: u16,
    /// Round trip: seq = the sender's number, tx = t1, rx = t4 − (t3 − t2).
    rtt: FlowMeter,
    /// Forward one-way: seq = the sender's number, tx = t1, rx = t2, marking as the
    /// reflector reported it.
    forward: FlowMeter,
    /// Reverse one-way: seq = the reflector's number, tx = t3, rx = t4.
    reverse: FlowMeter,
    /// The reflector's turnarounds t3 − t2.
    turnaround: HoldSums,
    offset: OffsetFilter,
    reflector_seqs: SeqUnwrapper,
    max_reflector_seq: Option<u64>,
    stateful: bool,
    replies: u64,
    unknown: u64,
    malformed: u64,
    zero_ssid: u64,
    tlv_integrity_failed: u64,
    cos: Option<CosCounts>,
    reflector_ee: Option<ErrorEstimate>,
}

/// The figures at the end of a session.
pub struct Figures {
    /// The round trip less the reflector's turnaround.
    pub rtt: FlowSummary,
    /// The forward one-way view (t2 − t1, on two clocks).
    pub forward: FlowSummary,
    /// The reflector's turnarounds t3 − t2.
    pub turnaround: Option<HoldStats>,
    /// The clocks' offset estimated from the exchanges (RFC 5905 §8).
    pub clock: Option<meter::clock::OffsetEstimate>,
    /// The STAMP-specific figures of `send`'s report.
    pub outcome: StampOutcome,
}

impl ReplyMeter {
    /// Replies of session `ssid`; `cos` is the DSCP asked for with a Class of Service
    /// TLV; `resolution_ns` the clocks' resolution (the offset's bound adds it).
    pub fn new(ssid: u16, cos: Option<u8>, resolution_ns: u64) -> Self {
        let meter = || FlowMeter::new(u32::from(FLOW_ID));
        Self {
            ssid,
            rtt: meter(),
            forward: meter(),
            reverse: meter(),
            offset: OffsetFilter::new(resolution_ns),
            cos: cos.map(|dscp1| CosCounts {
                dscp1,
                ..CosCounts::default()
            }),
            ..Self::default()
        }
    }

    /// Distinct packets answered so far.
    pub fn answered(&self) -> u64 {
        self.rtt.unique_packets()
    }

    /// Take one datagram from the reflector; `staged` packets have been sent so far.
    pub fn handle_datagram(
        &mut self,
        bytes: &[u8],
        mode: Mode,
        key: Option<&[u8]>,
        meta: ReplyMeta,
        staged: u64,
    ) -> Verdict {
        match ReflectorRepr::parse(bytes, mode, key) {
            Ok(reply) => self.handle_reply(&reply, meta, staged),
            Err(_) => {
                self.malformed += 1;
                Verdict::Malformed
            }
        }
    }

    /// Take one parsed reply; `staged` packets have been sent so far.
    pub fn handle_reply(&mut self, reply: &ReflectorRepr, meta: ReplyMeta, staged: u64) -> Verdict {
        // RFC 8972 §3: the SSID identifies the session; a reflector without SSID
        // support returns the octets as MBZ, 0.
        let zero_ssid = reply.ssid == 0 && self.ssid != 0;
        if reply.ssid != self.ssid && !zero_ssid {
            self.unknown += 1;
            return Verdict::Unknown;
        }
        let Some(seq) = sent_seq(reply.sender_seq, staged) else {
            self.unknown += 1;
            return Verdict::Unknown;
        };
        self.replies += 1;
        self.zero_ssid += u64::from(zero_ssid);
        // RFC 8762 §4: a stateless reflector copies the sender's number, a stateful one
        // counts what it received; only a difference tells them apart.
        self.stateful |= reply.seq != reply.sender_seq;
        let rseq = self.reflector_seqs.unwrap(reply.seq);
        self.max_reflector_seq = Some(self.max_reflector_seq.map_or(rseq, |m| m.max(rseq)));
        self.reflector_ee = Some(reply.error_estimate);

        let s = stamps_of(reply, meta.rx_ns);
        self.offset.handle_exchange(s.exchange());
        self.turnaround.add(s.turnaround_ns());
        let len = meta.len.min(u32::MAX as usize) as u32;
        // Round trip, RFC 5905 §8 / RFC 8762 §4.2.1: (t4 − t1) − (t3 − t2), as a record
        // whose delay is that: received at t1 + δ.
        let rtt_rx = i128::from(s.t1_ns) + i128::from(s.round_trip_ns());
        let round_trip = RxRecord {
            flow: u32::from(FLOW_ID),
            seq,
            size_bytes: len,
            tx_ns: s.t1_ns,
            rx_ns: rtt_rx.clamp(0, i128::from(u64::MAX)) as u64,
            tos: meta.tos,
            hop_limit: meta.hop_limit,
            flow_label: meta.flow_label,
            kernel_ts: meta.kernel_ts,
            rtp_ts: None,
        };
        self.rtt.handle_record(&round_trip);
        // Forward: t2 − t1 (RFC 7679 §3.4's one-way delay, on two clocks: true delay +
        // the reflector's offset from ours), with the DS field the reflector saw (Class
        // of Service TLV: DSCP2 and ECN, RFC 8972 §4.4) and the TTL it saw (Ses-Sender
        // TTL, RFC 8762 §4.3.1; 0 cannot arrive and means unknown). The reply's length
        // stands for the packet's: a reflector answers with as many octets (RFC 8762
        // §4.3, RFC 8972 §4: the TLVs come back).
        let seen_tos = self.cos_seen(reply);
        self.forward.handle_record(&RxRecord {
            rx_ns: s.t2_ns,
            tos: seen_tos,
            hop_limit: (reply.sender_ttl != 0).then_some(reply.sender_ttl),
            flow_label: None,
            kernel_ts: false,
            ..round_trip
        });
        // Reverse: t4 − t3 (true delay − the offset), numbered by the reflector (a
        // stateful one's gaps are reverse losses, RFC 8762 §4).
        self.reverse.handle_record(&RxRecord {
            seq: rseq,
            tx_ns: s.t3_ns,
            rx_ns: s.t4_ns,
            ..round_trip
        });
        Verdict::Accepted
    }

    /// The DS field the reflector reports having received (DSCP2 << 2 | ECN), from a
    /// Class of Service TLV it understood; counts the TLV's answers. TLVs that failed
    /// their integrity check (RFC 8972 §4.8: on the wire, or here with the key) are not
    /// used.
    fn cos_seen(&mut self, reply: &ReflectorRepr) -> Option<u8> {
        if reply.tlvs.iter().any(|t| t.flags.integrity_failed) {
            self.tlv_integrity_failed += 1;
            return None;
        }
        let counts = self.cos.as_mut()?;
        let found = reply.tlvs.iter().find_map(|t| match t.body {
            TlvBody::ClassOfService {
                dscp2, ecn, rpd, ..
            } => Some((t.flags, dscp2, ecn, rpd)),
            _ => None,
        });
        // Absent (a reflector without TLV support), or echoed with U or M set
        // (RFC 8972 §4): no DSCP2/ECN to read.
        let Some((_, dscp2, ecn, rpd)) = found.filter(|f| !f.0.unrecognized && !f.0.malformed)
        else {
            counts.unsupported += 1;
            return None;
        };
        counts.replies += 1;
        counts.refused += u64::from(rpd != 0);
        Some((dscp2 & 0x3f) << 2 | (ecn & 0x3))
    }

    /// The round trip's distribution (without the reflector's turnaround), as `send
    /// --cdf` reports it: see [`FlowMeter::delay_cdf_ns`].
    pub fn rtt_cdf_ns(&self) -> Option<Vec<i64>> {
        self.rtt.delay_cdf_ns()
    }

    /// The figures of a session that sent `sent` packets in `mode`, stamped with our
    /// Error Estimate `ours`.
    pub fn finish(&self, sent: u64, mode: Mode, ours: ErrorEstimate) -> Figures {
        let rtt = self.rtt.summary(Some(sent));
        let round_trip_lost = rtt.loss.lost;
        // RFC 8762 §4: a stateful reflector's numbers count what it received; losses on
        // the way there never advance them, lost replies leave gaps.
        let reflector_received = self
            .stateful
            .then(|| self.max_reflector_seq.map_or(0, |m| m + 1));
        let (forward_lost, reverse_lost) = match reflector_received {
            Some(r) => (
                Some(sent.saturating_sub(r)),
                Some(r.saturating_sub(self.reverse.unique_packets())),
            ),
            // Everything answered: nothing lost either way.
            None if round_trip_lost == 0 => (Some(0), Some(0)),
            None => (None, None),
        };
        let reverse = self
            .reverse
            .summary(Some(reflector_received.unwrap_or(sent)));
        let ee = self.reflector_ee;
        let outcome = StampOutcome {
            mode: mode_name(mode).to_owned(),
            ssid: self.ssid,
            timestamp_format: format_name(ours.format).to_owned(),
            replies: self.replies,
            reflector_stateful: self.stateful.then_some(true),
            reflector_received,
            forward_lost,
            reverse_lost,
            round_trip_lost,
            duplicate_replies: rtt.loss.duplicates,
            reverse: Some(reverse),
            unknown_replies: self.unknown,
            malformed_replies: self.malformed,
            zero_ssid_replies: self.zero_ssid,
            tlv_integrity_failed_replies: self.tlv_integrity_failed,
            sender_error_estimate_ns: ours.error_ns(),
            sender_synchronized: ours.synchronized,
            reflector_error_estimate_ns: ee.and_then(ErrorEstimate::error_ns),
            reflector_synchronized: ee.map(|e| e.synchronized),
            reflector_timestamp_format: ee.map(|e| format_name(e.format).to_owned()),
            cos: self.cos.map(|c| StampCos {
                requested_dscp: c.dscp1,
                replies: c.replies,
                unsupported_replies: c.unsupported,
                refused_replies: c.refused,
            }),
        };
        Figures {
            forward: self.forward.summary(Some(sent)),
            rtt,
            turnaround: self.turnaround.stats(),
            clock: self.offset.estimate(),
            outcome,
        }
    }
}

/// What a STAMP session did besides its replies, for [`Figures::into_report`].
pub struct Session<'a> {
    /// The flow sent.
    pub spec: &'a FlowSpec,
    /// What was sent.
    pub tx: &'a TxMeter,
    /// Why sending ended early, if it did.
    pub error: Option<String>,
    /// The round trip's distribution (`send --cdf`).
    pub delay_cdf_ns: Option<Vec<i64>>,
    /// The Session-Reflector.
    pub dest: SocketAddr,
    /// The tool that ran it (`dualperf VERSION`).
    pub tool: String,
    /// Sending was stopped (Ctrl-C).
    pub interrupted: bool,
}

impl Figures {
    /// `send`'s report of a STAMP session: its one flow, with the forward view as what
    /// was received, the round trip, the reflector's turnarounds and the STAMP figures.
    pub fn into_report(self, session: Session<'_>) -> SendReport {
        let spec = session.spec;
        let flow = FlowOutcome {
            id: FLOW_ID,
            spec: spec.clone(),
            sent: sent_stats(spec, session.tx),
            received: Some(self.forward),
            received_rtp: None,
            rtt: Some(self.rtt),
            receiver_hold: self.turnaround,
            intervals: None,
            intervals_error: None,
            malformed_at_receiver: None,
            error: session.error,
            unlogged_records: None,
            stamp: Some(self.outcome),
            delay_cdf_ns: session.delay_cdf_ns,
            tcp: None,
            received_omitted: None,
            zerocopy: None,
            reservation: None,
        };
        let flows = vec![flow];
        SendReport {
            format_version: SEND_FORMAT_VERSION,
            tool: session.tool,
            dest: session.dest,
            interrupted: session.interrupted,
            clock: self.clock,
            sync: None,
            sum: SumStats::of(&flows),
            flows,
        }
    }
}

/// The largest STAMP test packet a flow may ask for: its size, or the largest UDP
/// payload when its sizes vary (a size distribution, a video model).
pub fn max_size(spec: &FlowSpec) -> usize {
    match (&spec.size_dist, &spec.video) {
        (None, None) => spec.size_bytes as usize,
        _ => MAX_UDP_PAYLOAD,
    }
}

/// A note when a flow of one size gets STAMP packets of another (`writer`'s layout):
/// the base packet and its TLVs need more, or the padding's TLV header does not fit.
pub fn size_note(spec: &FlowSpec, writer: &PacketWriter) -> Option<String> {
    if spec.size_dist.is_some() || spec.video.is_some() {
        return None;
    }
    let size = spec.size_bytes as usize;
    let l = writer.layout(size);
    (l.len != size).then(|| {
        format!(
            "STAMP packets are {} octets, not {size}: the base packet and its TLVs need that much, and padding takes at least a 4-octet TLV header",
            l.len
        )
    })
}

/// Why a session that sent packets got no reply from the reflector at `dest`: it
/// refused them (an ICMP port unreachable came back), or nothing came within `timeout`
/// of the last packet.
pub fn no_reply(dest: SocketAddr, refused: bool, timeout: std::time::Duration) -> String {
    if refused {
        format!(
            "{} refused the packets (ICMP port unreachable): is a STAMP reflector listening on port {}?",
            dest.ip(),
            dest.port()
        )
    } else {
        format!(
            "no STAMP reply from {dest} within {} s of the last packet (a reflector in the other mode, or with another key, stays silent)",
            timeout.as_secs_f64()
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use wire::stamp::{TimestampFormat, Tlv, TlvFlags};

    const NTP: TimestampFormat = TimestampFormat::Ntp;
    /// A wall-clock instant: 2023-11-14T22:13:20Z.
    const T0: u64 = 1_700_000_000_000_000_000;

    fn ee(synchronized: bool) -> ErrorEstimate {
        ErrorEstimate::for_error_ns(1_000, synchronized, NTP)
    }

    /// A reply to packet `sender_seq` numbered `seq` by the reflector, with the four
    /// timestamps `s` (t4 is the caller's).
    fn reply(ssid: u16, sender_seq: u32, seq: u32, s: Stamps) -> ReflectorRepr {
        ReflectorRepr {
            seq,
            timestamp: NTP.from_unix_ns(s.t3_ns),
            error_estimate: ee(true),
            ssid,
            receive_timestamp: NTP.from_unix_ns(s.t2_ns),
            sender_seq,
            sender_timestamp: NTP.from_unix_ns(s.t1_ns),
            sender_error_estimate: ee(false),
            sender_ttl: 64,
            tlvs: Vec::new(),
        }
    }

    fn meta(t4_ns: u64) -> ReplyMeta {
        ReplyMeta {
            len: 44,
            rx_ns: t4_ns,
            kernel_ts: true,
            tos: Some(0),
            hop_limit: Some(64),
            flow_label: None,
        }
    }

    /// Packet `n` sent at T0 + n ms; forward 300 µs, turnaround 20 µs, back 100 µs; the
    /// reflector's clock `offset` ns ahead of ours.
    fn exchange(n: u64, offset: i64) -> Stamps {
        let t1 = T0 + n * 1_000_000;
        let peer = |t: u64| t.checked_add_signed(offset).unwrap();
        Stamps {
            t1_ns: t1,
            t2_ns: peer(t1 + 300_000),
            t3_ns: peer(t1 + 320_000),
            t4_ns: t1 + 420_000,
        }
    }

    /// Within the NTP format's rounding (2^-32 s per conversion).
    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() <= 2.0
    }

    #[test]
    fn the_four_timestamps_give_round_trip_forward_reverse_and_turnaround() {
        // Hand-made: the reflector's clock 4000 ahead, 300 forward, 20 turnaround, 100
        // back: t1 = 1000, t2 = 5300, t3 = 5320, t4 = 1420.
        let s = Stamps {
            t1_ns: 1_000,
            t2_ns: 5_300,
            t3_ns: 5_320,
            t4_ns: 1_420,
        };
        assert_eq!(s.turnaround_ns(), 20);
        assert_eq!(s.round_trip_ns(), 400);
        // Forward t2 − t1 and reverse t4 − t3 add up to the round trip whatever the
        // offset.
        assert_eq!(diff_ns(s.t2_ns, s.t1_ns), 4_300);
        assert_eq!(diff_ns(s.t4_ns, s.t3_ns), -3_900);
        assert_eq!(4_300 - 3_900, s.round_trip_ns());
        // RFC 5905 §8: the offset ((t2 − t1) + (t3 − t4)) / 2 is the true 4000 plus
        // half the asymmetry (300 − 100) / 2.
        assert_eq!(s.exchange().offset_ns(), 4_100);
        assert_eq!(s.exchange().delay_ns(), Some(400));
        // A reflector whose clock steps back between t2 and t3 cannot make the round
        // trip wrap.
        let odd = Stamps { t3_ns: 5_000, ..s };
        assert_eq!(odd.round_trip_ns(), 720);
    }

    #[test]
    fn replies_are_matched_by_the_number_they_answer() {
        assert_eq!(sent_seq(0, 0), None);
        assert_eq!(sent_seq(0, 1), Some(0));
        assert_eq!(sent_seq(5, 5), None);
        assert_eq!(sent_seq(4, 5), Some(4));
        // After 2^32 packets the low bits name the latest packet so numbered.
        let staged = (1u64 << 32) + 10;
        assert_eq!(sent_seq(3, staged), Some((1 << 32) + 3));
        assert_eq!(sent_seq(u32::MAX, staged), Some(u64::from(u32::MAX)));
        assert_eq!(sent_seq(10, staged), Some(10));

        let mut m = ReplyMeter::new(7, None, 1);
        let s = exchange(0, 0);
        // Another session, and a number not sent yet: unknown, not measured.
        assert_eq!(
            m.handle_reply(&reply(8, 0, 0, s), meta(s.t4_ns), 1),
            Verdict::Unknown
        );
        assert_eq!(
            m.handle_reply(&reply(7, 1, 1, s), meta(s.t4_ns), 1),
            Verdict::Unknown
        );
        assert_eq!(m.answered(), 0);
        // Ours; then the same again: a duplicate.
        assert_eq!(
            m.handle_reply(&reply(7, 0, 0, s), meta(s.t4_ns), 1),
            Verdict::Accepted
        );
        assert_eq!(
            m.handle_reply(&reply(7, 0, 0, s), meta(s.t4_ns), 1),
            Verdict::Accepted
        );
        // A reflector without SSIDs returns 0: accepted, counted.
        let s1 = exchange(1, 0);
        assert_eq!(
            m.handle_reply(&reply(0, 1, 1, s1), meta(s1.t4_ns), 2),
            Verdict::Accepted
        );
        assert_eq!(m.answered(), 2);
        // Bytes that are no reply.
        assert_eq!(
            m.handle_datagram(&[0u8; 10], Mode::Unauthenticated, None, meta(0), 2),
            Verdict::Malformed
        );
        let f = m.finish(2, Mode::Unauthenticated, ee(false));
        let o = &f.outcome;
        assert_eq!(
            (o.replies, o.unknown_replies, o.malformed_replies),
            (3, 2, 1)
        );
        assert_eq!((o.duplicate_replies, o.zero_ssid_replies), (1, 1));
        assert_eq!(f.rtt.packets, 3);
        assert_eq!(f.rtt.loss.lost, 0);
        assert_eq!(
            (o.forward_lost, o.reverse_lost, o.round_trip_lost),
            (Some(0), Some(0), 0)
        );
        assert_eq!(o.reflector_stateful, None);
    }

    #[test]
    fn figures_come_from_hand_made_exchanges() {
        // The reflector's clock 2 ms ahead; ten exchanges alike.
        let offset = 2_000_000;
        let mut m = ReplyMeter::new(1, None, 1);
        for n in 0..10 {
            let s = exchange(n, offset);
            assert_eq!(
                m.handle_reply(&reply(1, n as u32, n as u32, s), meta(s.t4_ns), 10),
                Verdict::Accepted
            );
        }
        let f = m.finish(10, Mode::Unauthenticated, ee(false));
        let rtt = f.rtt.delay.unwrap();
        assert!(close(rtt.mean_ns, 400_000.0), "{rtt:?}");
        let fwd = f.forward.delay.unwrap();
        assert!(close(fwd.mean_ns, 2_300_000.0), "{fwd:?}");
        let rev = f.outcome.reverse.as_ref().unwrap().delay.unwrap();
        assert!(close(rev.mean_ns, -1_900_000.0), "{rev:?}");
        let hold = f.turnaround.unwrap();
        assert_eq!(hold.packets, 10);
        assert!(close(hold.mean_ns, 20_000.0), "{hold:?}");
        // RFC 5905 §8 on these: the offset plus half the asymmetry (300 − 100 µs).
        let c = f.clock.unwrap();
        assert!((c.offset_ns - 2_100_000).abs() <= 2, "{c:?}");
        assert!(c.bound_ns >= 200_000 && c.bound_ns <= 200_003, "{c:?}");
        assert_eq!(c.samples, 10);
        // The reflector's Error Estimate and the TTL it saw.
        assert_eq!(f.outcome.reflector_synchronized, Some(true));
        assert!(f.outcome.reflector_error_estimate_ns.unwrap() >= 1_000);
        assert_eq!(f.forward.marking.hop_limit_seen.get(&64), Some(&10));
        assert_eq!(f.forward.loss.lost, 0);
    }

    #[test]
    fn a_stateful_reflector_splits_loss_by_direction() {
        // Ten packets: 2 and 3 lost on the way there; the reflector numbers the eight it
        // got 0..8; the replies numbered 4 and 5 (packets 6 and 7) are lost on the way
        // back.
        let mut m = ReplyMeter::new(1, None, 1);
        let arrived: Vec<u32> = vec![0, 1, 4, 5, 6, 7, 8, 9];
        for (r, &s) in arrived.iter().enumerate() {
            if r == 4 || r == 5 {
                continue;
            }
            let st = exchange(u64::from(s), 0);
            m.handle_reply(&reply(1, s, r as u32, st), meta(st.t4_ns), 10);
        }
        let f = m.finish(10, Mode::Unauthenticated, ee(false));
        let o = &f.outcome;
        assert_eq!(o.reflector_stateful, Some(true));
        assert_eq!(o.reflector_received, Some(8));
        assert_eq!(o.forward_lost, Some(2));
        assert_eq!(o.reverse_lost, Some(2));
        assert_eq!(o.round_trip_lost, 4);
        // The reverse summary's loss is the reverse path's: its numbers 4 and 5, one
        // period.
        let rev = o.reverse.as_ref().unwrap();
        assert_eq!(
            (rev.loss.expected, rev.loss.lost, rev.loss.bursts),
            (8, 2, 1)
        );
        // The round trip (and the forward view) lost packets 2, 3, 6, 7: two periods.
        assert_eq!((f.rtt.loss.lost, f.rtt.loss.bursts), (4, 2));
        assert_eq!(f.forward.loss.lost, 4);
    }

    #[test]
    fn a_stateless_reflector_leaves_the_directions_unknown_when_something_was_lost() {
        let mut m = ReplyMeter::new(1, None, 1);
        for s in [0u32, 1, 3] {
            let st = exchange(u64::from(s), 0);
            m.handle_reply(&reply(1, s, s, st), meta(st.t4_ns), 4);
        }
        let o = m.finish(4, Mode::Unauthenticated, ee(false)).outcome;
        assert_eq!(o.reflector_stateful, None);
        assert_eq!((o.forward_lost, o.reverse_lost), (None, None));
        assert_eq!(o.round_trip_lost, 1);
        assert_eq!(o.reflector_received, None);
    }

    #[test]
    fn the_class_of_service_tlv_gives_the_marking_the_reflector_saw() {
        let mut m = ReplyMeter::new(1, Some(46), 1);
        let cos = |flags: TlvFlags, rpd: u8| Tlv {
            flags,
            body: TlvBody::ClassOfService {
                dscp1: 46,
                dscp2: 46,
                ecn: 2,
                rpd,
            },
        };
        let clean = TlvFlags {
            unrecognized: false,
            malformed: false,
            integrity_failed: false,
        };
        let unknown = TlvFlags {
            unrecognized: true,
            ..clean
        };
        for (n, t) in [cos(clean, 0), cos(clean, 1), cos(unknown, 0)]
            .into_iter()
            .enumerate()
        {
            let s = exchange(n as u64, 0);
            let mut r = reply(1, n as u32, n as u32, s);
            r.tlvs = vec![t];
            m.handle_reply(&r, meta(s.t4_ns), 3);
        }
        let f = m.finish(3, Mode::Unauthenticated, ee(false));
        let c = f.outcome.cos.unwrap();
        assert_eq!(
            (
                c.requested_dscp,
                c.replies,
                c.refused_replies,
                c.unsupported_replies
            ),
            (46, 2, 1, 1)
        );
        // EF with ECT(0), twice; once unknown.
        assert_eq!(f.forward.marking.dscp_seen.get(&46), Some(&2));
        assert_eq!(f.forward.marking.ecn_seen.get(&2), Some(&2));
        assert_eq!(f.forward.marking.tos_unknown, 1);
    }

    #[test]
    fn the_report_has_the_one_flow_with_the_sessions_figures() {
        let mut m = ReplyMeter::new(1, None, 1);
        for n in 0..3 {
            let s = exchange(n, 0);
            m.handle_reply(&reply(1, n as u32, n as u32, s), meta(s.t4_ns), 4);
        }
        let spec = FlowSpec::default();
        let tx = TxMeter::default();
        let report = m
            .finish(4, Mode::Unauthenticated, ee(false))
            .into_report(Session {
                spec: &spec,
                tx: &tx,
                error: Some("stopped".into()),
                delay_cdf_ns: Some(vec![1, 2]),
                dest: "[2001:2::1]:862".parse().unwrap(),
                tool: "dualperf test".into(),
                interrupted: true,
            });
        assert_eq!(report.flows.len(), 1);
        let f = &report.flows[0];
        assert_eq!(f.id, FLOW_ID);
        assert_eq!(f.rtt.as_ref().unwrap().packets, 3);
        assert_eq!(f.rtt.as_ref().unwrap().loss.lost, 1);
        assert_eq!(f.received.as_ref().unwrap().packets, 3);
        assert_eq!(f.receiver_hold.as_ref().unwrap().packets, 3);
        assert_eq!(f.stamp.as_ref().unwrap().replies, 3);
        assert_eq!(f.error.as_deref(), Some("stopped"));
        assert_eq!(f.delay_cdf_ns, Some(vec![1, 2]));
        assert_eq!(report.clock.unwrap().samples, 3);
        assert_eq!(
            (report.tool.as_str(), report.interrupted, report.dest.port()),
            ("dualperf test", true, 862)
        );
    }

    #[test]
    fn a_flow_of_one_size_is_told_when_its_stamp_packets_differ() {
        let ee = ErrorEstimate::for_error_ns(1_000, true, TimestampFormat::Ntp);
        let plain = PacketWriter::new(Mode::Unauthenticated, None, 1, ee, None);
        let sized = |size_bytes: u32| FlowSpec {
            size_bytes,
            ..FlowSpec::default()
        };
        // 44 octets is the base packet; 48 and up is padded to the size.
        assert_eq!(max_size(&sized(44)), 44);
        assert_eq!(size_note(&sized(44), &plain), None);
        assert_eq!(size_note(&sized(512), &plain), None);
        assert_eq!(
            size_note(&sized(46), &plain).as_deref(),
            Some(
                "STAMP packets are 44 octets, not 46: the base packet and its TLVs need that \
                 much, and padding takes at least a 4-octet TLV header"
            )
        );
        // Shorter than the base packet: the base packet.
        let short = size_note(&sized(20), &plain).unwrap();
        assert!(
            short.starts_with("STAMP packets are 44 octets, not 20: "),
            "{short}"
        );
        // Sizes that vary: the largest UDP payload, and no note.
        let varied = FlowSpec {
            size_dist: Some(traffic::distribution::Dist::Constant { value: 46.0 }),
            ..sized(46)
        };
        assert_eq!(max_size(&varied), 65_507);
        assert_eq!(size_note(&varied, &plain), None);
    }

    #[test]
    fn no_reply_says_refused_or_silent() {
        let dest: SocketAddr = "[2001:2::4]:862".parse().unwrap();
        assert_eq!(
            no_reply(dest, true, std::time::Duration::from_secs(2)),
            "2001:2::4 refused the packets (ICMP port unreachable): is a STAMP reflector \
             listening on port 862?"
        );
        assert_eq!(
            no_reply(dest, false, std::time::Duration::from_millis(500)),
            "no STAMP reply from [2001:2::4]:862 within 0.5 s of the last packet (a reflector \
             in the other mode, or with another key, stays silent)"
        );
    }
}
