//! The STAMP Session-Sender (RFC 8762 §4.2): `dualperf send --stamp`.
//!
//! One flow of `send`'s vocabulary (its rate or gaps, its sizes, its marking) goes to a
//! STAMP Session-Reflector (RFC 8762 §4.3: `recv --stamp`, stamp-suite, a router…) as
//! STAMP test packets paced by the flow's [`Schedule`]; each reply brings back the four
//! timestamps of an exchange, and every figure of `send`'s report comes out of them
//! through `meter`'s streaming state.
//!
//! - **Packets.** The UDP payload is the base packet (44 octets unauthenticated, 112
//!   authenticated; RFC 8762 §4.2.1, §4.2.2), then, in this order, a Class of Service
//!   TLV with `--stamp-cos` (RFC 8972 §4.4), in authenticated mode the HMAC TLV that
//!   must close any TLV but Extra Padding (RFC 8972 §4.8), and an Extra Padding TLV
//!   that brings the packet to the flow's size (RFC 8972 §4.1; it may follow the HMAC
//!   TLV, which then need not hash it). A size below what these need plus one TLV
//!   header (4 octets) gets no padding: the packet is then longer than asked
//!   ([`layout`]). The flow's DSCP/ECN, TTL and flow label go on the socket.
//! - **Threads.** This thread sends on the schedule (sleeps, then spins the last
//!   stretch before each deadline) and stamps each packet with the wall clock just
//!   before handing it to the kernel; a receiver thread reads the replies (recvmmsg,
//!   kernel receive timestamps) until the schedule has ended and `--stamp-timeout` has
//!   passed, or every packet was answered. Ctrl-C stops the sending; the replies in
//!   flight are still awaited and the report printed.
//! - **Figures** ([`ReplyMeter`], pure): per reply, t1 (our send time, carried back),
//!   t2 and t3 (the reflector's receive and send times), t4 (the kernel's receive time
//!   of the reply): the round trip less the turnaround, the forward and reverse one-way
//!   delays (two clocks: the offset is estimated from the same timestamps, never
//!   subtracted), loss by direction when the reflector is stateful.
//!
//! Nothing kept grows with the packet count: replies are matched by the sequence number
//! they answer (any number below the count sent is ours; the send time comes back in
//! the reply), duplicates and reordering are the meters' sequence windows.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration as StdDuration;

use anyhow::{Context, Result};
use meter::clock::{Exchange, OffsetFilter};
use meter::{FlowMeter, FlowSummary, RxRecord, TxMeter, TxRecord};
use results::send::{
    sent_stats, FlowOutcome, HoldSums, SendReport, StampCos, StampOutcome, SumStats,
};
use traffic::{FlowSpec, Schedule, Transmit};
use wire::probe::SeqUnwrapper;
use wire::stamp::tlv::HMAC_LEN;
use wire::stamp::{
    ErrorEstimate, Mode, ReflectorRepr, SenderRepr, StampError, TimestampFormat, Tlv, TlvBody,
    TLV_HEADER_LEN,
};
use wire::time::{Duration, Instant};

use crate::send::session::PartialReport;

/// Value octets of the Class of Service TLV (RFC 8972 §4.4).
const COS_VALUE_LEN: usize = 4;
/// The largest UDP payload over IPv4 (65,535 − 20 − 8).
const MAX_UDP_PAYLOAD: usize = 65_507;
/// The flow id of the one flow in the report.
const FLOW_ID: u16 = 0;
/// Packets handed to the kernel in one call at most.
const BATCH: usize = netio::MAX_BATCH;
/// Longest single sleep of the sender, so Ctrl-C is seen promptly at any rate.
const MAX_SLEEP_NS: u64 = 100_000_000;
/// The most and least spin before a deadline by default (as `send`'s engines).
const MAX_SPIN_NS: u64 = 50_000;
const MIN_SPIN_NS: u64 = 15_000;
/// How long a send the kernel takes nothing of is retried.
const STUCK_NS: u64 = 1_000_000_000;
/// How often the receiver looks at the clock and the sender's state while idle.
const RECV_TICK: StdDuration = StdDuration::from_millis(20);
/// The kernel's cap on its maximum clock error (`NTP_PHASE_LIMIT`, 16 s): our Error
/// Estimate when the kernel's cannot be read.
const UNKNOWN_ERROR_NS: u64 = 16_000_000_000;

/// A validated `send --stamp`.
#[derive(Clone, Debug)]
pub(crate) struct StampConfig {
    /// The Session-Reflector.
    pub(crate) dest: SocketAddr,
    /// The flow: schedule, sizes, marking; its `meter` picks the report's primary
    /// figure (the round trip, or with `Owd` the forward one-way view).
    pub(crate) spec: FlowSpec,
    pub(crate) mode: Mode,
    /// The HMAC key of authenticated mode (RFC 8762 §4.4), at least 16 octets.
    pub(crate) key: Option<Vec<u8>>,
    /// The Session-Sender Identifier (RFC 8972 §3), non-zero.
    pub(crate) ssid: u16,
    /// Ask for the flow's DSCP on the replies with a Class of Service TLV.
    pub(crate) cos: bool,
    pub(crate) format: TimestampFormat,
    /// How long replies are awaited after the last packet.
    pub(crate) timeout: StdDuration,
    /// Busy-wait this long before each deadline (`None`: from the rate).
    pub(crate) spin: Option<Duration>,
    /// A progress line on stderr.
    pub(crate) progress: bool,
    /// Say "dualperf send: started" on stderr when sending begins.
    pub(crate) announce_start: bool,
    /// Report the round trip's distribution (`send --cdf`).
    pub(crate) cdf: bool,
}

/// The TLVs of one packet and its length (see the module's doc).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Layout {
    /// Value octets of the Extra Padding TLV; `None` when none fits.
    pub(crate) padding: Option<u16>,
    /// An HMAC TLV follows the Class of Service TLV: authenticated mode with any TLV
    /// but Extra Padding (RFC 8972 §4.8).
    pub(crate) hmac: bool,
    /// The UDP payload, octets.
    pub(crate) len: usize,
}

/// The layout of a packet the flow wants `size` octets long: the base packet; the Class
/// of Service TLV if `cos`, closed by the HMAC TLV in authenticated mode (RFC 8972
/// §4.8: any TLV but a lone Extra Padding needs it); then an Extra Padding TLV whose
/// value fills up to `size` when at least its header fits (RFC 8972 §4.1). Shorter sizes
/// give the packet without padding, longer than asked; sizes beyond a UDP payload are
/// capped.
pub(crate) fn layout(size: usize, mode: Mode, cos: bool) -> Layout {
    let hmac = cos && mode == Mode::Authenticated;
    let fixed = mode.base_len()
        + if cos {
            TLV_HEADER_LEN + COS_VALUE_LEN
        } else {
            0
        }
        + if hmac { TLV_HEADER_LEN + HMAC_LEN } else { 0 };
    let size = size.min(MAX_UDP_PAYLOAD);
    let Some(value) = size.checked_sub(fixed + TLV_HEADER_LEN) else {
        return Layout {
            padding: None,
            hmac,
            len: fixed,
        };
    };
    let value = value.min(usize::from(u16::MAX));
    Layout {
        padding: Some(value as u16),
        hmac,
        len: fixed + TLV_HEADER_LEN + value,
    }
}

/// The TLVs of a packet of `layout`, each with U set as a Session-Sender sends them
/// (RFC 8972 §4); `cos` is the DSCP to ask for (DSCP1; DSCP2, ECN and RP are the
/// reflector's to fill and go out as 0, RFC 8972 §4.4). The HMAC TLV's value is
/// computed on emit.
fn tlvs_of(layout: Layout, cos: Option<u8>) -> Vec<Tlv> {
    let mut tlvs = Vec::new();
    if let Some(dscp1) = cos {
        tlvs.push(Tlv::for_sender(TlvBody::ClassOfService {
            dscp1,
            dscp2: 0,
            ecn: 0,
            rpd: 0,
        }));
    }
    if layout.hmac {
        tlvs.push(Tlv::for_sender(TlvBody::Hmac([0; HMAC_LEN])));
    }
    if let Some(p) = layout.padding {
        tlvs.push(Tlv::for_sender(TlvBody::ExtraPadding(p)));
    }
    tlvs
}

/// Writes the session's packets: one [`SenderRepr`] whose TLVs are remade only when the
/// size changes.
pub(crate) struct PacketWriter {
    mode: Mode,
    key: Option<Vec<u8>>,
    format: TimestampFormat,
    cos: Option<u8>,
    repr: SenderRepr,
    /// The size `repr.tlvs` were made for.
    made_for: Option<usize>,
}

impl PacketWriter {
    /// Packets of session `ssid`, stamped in `format`, with our `error_estimate`.
    pub(crate) fn new(
        mode: Mode,
        key: Option<Vec<u8>>,
        ssid: u16,
        error_estimate: ErrorEstimate,
        cos: Option<u8>,
    ) -> Self {
        Self {
            mode,
            key,
            format: error_estimate.format,
            cos,
            repr: SenderRepr {
                seq: 0,
                timestamp: 0,
                error_estimate,
                ssid,
                tlvs: Vec::new(),
            },
            made_for: None,
        }
    }

    /// The layout of a packet the flow wants `size` octets long.
    pub(crate) fn layout(&self, size: usize) -> Layout {
        layout(size, self.mode, self.cos.is_some())
    }

    /// Write packet `seq` (its low 32 bits go on the wire) of a flow size of `size`,
    /// stamped `wall_ns` (ns since the Unix epoch), into `buf`; its length.
    pub(crate) fn write(
        &mut self,
        seq: u64,
        wall_ns: u64,
        size: usize,
        buf: &mut [u8],
    ) -> Result<usize, StampError> {
        if self.made_for != Some(size) {
            self.repr.tlvs = tlvs_of(self.layout(size), self.cos);
            self.made_for = Some(size);
        }
        self.repr.seq = seq as u32;
        self.repr.timestamp = self.format.from_unix_ns(wall_ns);
        self.repr.emit(buf, self.mode, self.key.as_deref())
    }
}

/// The kernel's view of one reply.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct ReplyMeta {
    /// UDP payload octets.
    pub(crate) len: usize,
    /// t4: when it arrived, ns since the Unix epoch (the kernel's stamp if
    /// `kernel_ts`).
    pub(crate) rx_ns: u64,
    pub(crate) kernel_ts: bool,
    /// The DS field, hop limit and flow label it arrived with.
    pub(crate) tos: Option<u8>,
    pub(crate) hop_limit: Option<u8>,
    pub(crate) flow_label: Option<u32>,
}

/// The four timestamps of one exchange, ns since the Unix epoch, each on its own host's
/// clock (RFC 8762 §4.2.1 and §4.3.1): t1 the sender's send time, t2 the reflector's
/// receive time, t3 its send time, t4 the sender's receive time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Stamps {
    pub(crate) t1_ns: u64,
    pub(crate) t2_ns: u64,
    pub(crate) t3_ns: u64,
    pub(crate) t4_ns: u64,
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
    pub(crate) fn round_trip_ns(&self) -> i64 {
        diff_ns(self.t4_ns, self.t1_ns).saturating_sub(self.turnaround_ns())
    }

    /// The reflector's turnaround `t3 − t2` (its clock only).
    pub(crate) fn turnaround_ns(&self) -> i64 {
        diff_ns(self.t3_ns, self.t2_ns)
    }

    /// The exchange for RFC 5905 §8's on-wire offset estimate.
    pub(crate) fn exchange(&self) -> Exchange {
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
pub(crate) fn stamps_of(reply: &ReflectorRepr, t4_ns: u64) -> Stamps {
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
pub(crate) fn sent_seq(wire_seq: u32, staged: u64) -> Option<u64> {
    let v = u64::from(wire_seq);
    let top = staged.checked_sub(1)?;
    (v <= top).then(|| top - ((top - v) & 0xffff_ffff))
}

/// What became of a datagram.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Verdict {
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
pub(crate) struct ReplyMeter {
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
pub(crate) struct Figures {
    pub(crate) rtt: FlowSummary,
    pub(crate) forward: FlowSummary,
    pub(crate) turnaround: Option<results::send::HoldStats>,
    pub(crate) clock: Option<meter::clock::OffsetEstimate>,
    pub(crate) outcome: StampOutcome,
}

impl ReplyMeter {
    /// Replies of session `ssid`; `cos` is the DSCP asked for with a Class of Service
    /// TLV; `resolution_ns` the clocks' resolution (the offset's bound adds it).
    pub(crate) fn new(ssid: u16, cos: Option<u8>, resolution_ns: u64) -> Self {
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
    pub(crate) fn answered(&self) -> u64 {
        self.rtt.unique_packets()
    }

    /// Take one datagram from the reflector; `staged` packets have been sent so far.
    pub(crate) fn handle_datagram(
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
    pub(crate) fn handle_reply(
        &mut self,
        reply: &ReflectorRepr,
        meta: ReplyMeta,
        staged: u64,
    ) -> Verdict {
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

    /// The figures of a session that sent `sent` packets in `mode`, stamped with our
    /// Error Estimate `ours`.
    /// The round trip's distribution (without the reflector's turnaround), as `send
    /// --cdf` reports it: see [`FlowMeter::delay_cdf_ns`].
    pub(crate) fn rtt_cdf_ns(&self) -> Option<Vec<i64>> {
        self.rtt.delay_cdf_ns()
    }

    pub(crate) fn finish(&self, sent: u64, mode: Mode, ours: ErrorEstimate) -> Figures {
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

/// `ntp` or `ptp`.
pub(crate) fn format_name(f: TimestampFormat) -> &'static str {
    match f {
        TimestampFormat::Ntp => "ntp",
        TimestampFormat::Ptp => "ptp",
    }
}

/// `unauthenticated` or `authenticated`.
pub(crate) fn mode_name(m: Mode) -> &'static str {
    match m {
        Mode::Unauthenticated => "unauthenticated",
        Mode::Authenticated => "authenticated",
    }
}

/// Our Error Estimate (RFC 8762 §4.2.1, RFC 4656 §4.1.2): S set when the kernel says the
/// clock is synchronised, with its estimated error; else its maximum error.
fn sender_error_estimate(format: TimestampFormat) -> ErrorEstimate {
    let (synchronized, error_ns) = match netio::clock::adjtimex_state() {
        Ok(k) if k.synchronised => (true, k.est_error_ns.max(1)),
        Ok(k) => (false, k.max_error_ns.max(1)),
        Err(_) => (false, UNKNOWN_ERROR_NS),
    };
    ErrorEstimate::for_error_ns(error_ns, synchronized, format)
}

/// What the sender and the receiver thread share.
#[derive(Default)]
struct Shared {
    /// Packets numbered below this have been handed (or are being handed) to the
    /// kernel: raised before each send, so no reply can outrun it.
    staged: AtomicU64,
    /// Sending is over; `sent` is final and `end_ns` (monotonic) set.
    done: AtomicBool,
    sent: AtomicU64,
    end_ns: AtomicU64,
    /// The kernel reported an ICMP port unreachable from the reflector.
    refused: AtomicBool,
}

/// What the sending loop did.
struct Sent {
    tx: TxMeter,
    error: Option<String>,
}

/// Run the session: send the flow, collect the replies, report.
///
/// Fails without a report when nothing could be sent (socket, marking, key); once
/// packets went out, a failure comes back as a [`PartialReport`] with every figure.
pub(crate) fn run(config: &StampConfig, stop: &Arc<AtomicBool>) -> Result<SendReport> {
    let spec = &config.spec;
    let sock = Arc::new(open_socket(config)?);
    let ee = sender_error_estimate(config.format);
    let cos = config
        .cos
        .then(|| spec.marking.dscp.map_or(0, |d| d.value()));
    let mut writer = PacketWriter::new(config.mode, config.key.clone(), config.ssid, ee, cos);
    // A packet of the largest size must be writable (the key, the TLVs) before any goes.
    let mut probe = vec![0u8; MAX_UDP_PAYLOAD];
    writer
        .write(0, 0, max_size(spec), &mut probe)
        .map_err(|e| anyhow::anyhow!("cannot write a STAMP packet: {e}"))?;
    note_sizes(spec, &writer);

    let shared = Arc::new(Shared::default());
    let receiver = {
        let sock = sock.clone();
        let shared = shared.clone();
        let resolution = netio::clock::resolution_ns(netio::clock::ClockId::Realtime);
        let meter = ReplyMeter::new(config.ssid, cos, resolution);
        let config = config.clone();
        std::thread::Builder::new()
            .name("stamp-recv".into())
            .spawn(move || receive(&sock, &shared, meter, &config))?
    };
    if config.announce_start {
        eprintln!("dualperf send: started");
    }
    let sent = send_loop(&sock, config, &mut writer, &shared, stop);
    shared.sent.store(sent.tx.packets(), Ordering::SeqCst);
    shared
        .end_ns
        .store(netio::clock::mono_ns(), Ordering::SeqCst);
    shared.done.store(true, Ordering::SeqCst);
    let (meter, recv_error) = receiver
        .join()
        .map_err(|_| anyhow::anyhow!("the STAMP receiver thread panicked"))?;
    if config.progress {
        eprintln!();
    }

    let packets = sent.tx.packets();
    let figures = meter.finish(packets, config.mode, ee);
    let outcome = figures.outcome;
    let mut errors: Vec<String> = sent.error.iter().cloned().collect();
    errors.extend(recv_error);
    if packets > 0 && outcome.replies == 0 {
        let why = if shared.refused.load(Ordering::SeqCst) {
            format!(
                "{} refused the packets (ICMP port unreachable): is a STAMP reflector listening on port {}?",
                config.dest.ip(),
                config.dest.port()
            )
        } else {
            format!(
                "no STAMP reply from {} within {} s of the last packet (a reflector in the other mode, or with another key, stays silent)",
                config.dest,
                config.timeout.as_secs_f64()
            )
        };
        errors.push(why);
    }
    let flow = FlowOutcome {
        id: FLOW_ID,
        spec: spec.clone(),
        sent: sent_stats(spec, &sent.tx),
        received: Some(figures.forward),
        received_rtp: None,
        rtt: Some(figures.rtt),
        receiver_hold: figures.turnaround,
        intervals: None,
        intervals_error: None,
        malformed_at_receiver: None,
        error: sent.error,
        unlogged_records: None,
        stamp: Some(outcome),
        delay_cdf_ns: config.cdf.then(|| meter.rtt_cdf_ns()).flatten(),
        tcp: None,
        received_omitted: None,
        zerocopy: None,
    };
    let flows = vec![flow];
    let report = SendReport {
        format_version: results::send::SEND_FORMAT_VERSION,
        tool: format!("dualperf {}", env!("CARGO_PKG_VERSION")),
        dest: config.dest,
        interrupted: stop.load(Ordering::SeqCst),
        clock: figures.clock,
        sync: None,
        sum: SumStats::of(&flows),
        flows,
    };
    PartialReport::unless_errors(report, &errors)
}

/// The largest packet size the flow may ask for.
fn max_size(spec: &FlowSpec) -> usize {
    match (&spec.size_dist, &spec.video) {
        (None, None) => spec.size_bytes as usize,
        _ => MAX_UDP_PAYLOAD,
    }
}

/// Say on stderr when the flow's size does not fit the STAMP packet.
fn note_sizes(spec: &FlowSpec, writer: &PacketWriter) {
    if spec.size_dist.is_some() || spec.video.is_some() {
        return;
    }
    let size = spec.size_bytes as usize;
    let l = writer.layout(size);
    if l.len != size {
        crate::out::note!(
            "dualperf send: note: STAMP packets are {} octets, not {size}: the base packet and its TLVs need that much, and padding takes at least a 4-octet TLV header",
            l.len
        );
    }
}

/// A UDP socket connected to the reflector with the flow's marking, reporting receive
/// metadata (kernel timestamps, DS field, hop limit).
fn open_socket(config: &StampConfig) -> Result<netio::UdpSocket> {
    let any: IpAddr = if config.dest.is_ipv4() {
        Ipv4Addr::UNSPECIFIED.into()
    } else {
        Ipv6Addr::UNSPECIFIED.into()
    };
    let sock = netio::UdpSocket::bind(SocketAddr::new(any, 0), false)?;
    let m = &config.spec.marking;
    let marking = netio::Marking {
        tos: m.tos(),
        ttl: m.ttl,
        flow_label: m.flow_label,
    };
    sock.connect_marked(config.dest, &marking)
        .with_context(|| format!("cannot apply marking {marking:?} towards {}", config.dest))?;
    sock.enable_recv_meta()?;
    sock.set_read_timeout(Some(RECV_TICK))?;
    let _ = sock.set_buffer_sizes(Some(4 << 20), Some(4 << 20));
    Ok(sock)
}

/// The spin before each deadline when none is given: 50 µs, or a quarter of the mean
/// gap if shorter, at least 15 µs (as `send`'s engines).
fn spin_ns(config: &StampConfig) -> u64 {
    if let Some(s) = config.spin {
        return s.as_nanos();
    }
    match config.spec.mean_pps() {
        Some(pps) if pps > 0.0 => ((1e9 / pps / 4.0) as u64).clamp(MIN_SPIN_NS, MAX_SPIN_NS),
        _ => MAX_SPIN_NS,
    }
}

/// Send the flow on its schedule until it ends, fails, or `stop` is set.
fn send_loop(
    sock: &netio::UdpSocket,
    config: &StampConfig,
    writer: &mut PacketWriter,
    shared: &Shared,
    stop: &AtomicBool,
) -> Sent {
    // Timer slack (50 µs by default) would make every sleep overshoot by that much.
    let _ = netio::clock::set_timer_slack_ns(1);
    let spin = spin_ns(config);
    let mut out = Sent {
        tx: TxMeter::default(),
        error: None,
    };
    let origin = Instant::from_nanos(netio::clock::mono_ns() + 1_000_000);
    let mut sched = match Schedule::new(&config.spec, origin) {
        Ok(s) => s,
        Err(e) => {
            out.error = Some(format!("invalid traffic model: {e}"));
            return out;
        }
    };
    let mut bufs = vec![vec![0u8; MAX_UDP_PAYLOAD]; BATCH];
    let mut due: Vec<Transmit> = Vec::with_capacity(BATCH);
    loop {
        if stop.load(Ordering::Relaxed) {
            sched.handle_stop();
            return out;
        }
        let now = Instant::from_nanos(netio::clock::mono_ns());
        due.clear();
        while due.len() < BATCH {
            match sched.poll_transmit(now) {
                Some(t) => due.push(t),
                None => break,
            }
        }
        if !due.is_empty() {
            if let Err(e) = flush(sock, writer, &due, &mut bufs, shared, &mut out.tx, stop) {
                out.error = Some(format!(
                    "sending failed after {} packets: {e}",
                    out.tx.packets()
                ));
                return out;
            }
            continue;
        }
        let Some(next) = sched.poll_timeout() else {
            return out;
        };
        let now = netio::clock::mono_ns();
        let deadline = next.as_nanos();
        if deadline > now + MAX_SLEEP_NS {
            netio::clock::sleep_until(now + MAX_SLEEP_NS, 0);
        } else {
            netio::clock::sleep_until(deadline, spin);
        }
    }
}

/// Write and send the packets `due`, stamped with the wall clock just before the call
/// (again before each retry), and record them; an error ends the flow.
fn flush(
    sock: &netio::UdpSocket,
    writer: &mut PacketWriter,
    due: &[Transmit],
    bufs: &mut [Vec<u8>],
    shared: &Shared,
    tx: &mut TxMeter,
    stop: &AtomicBool,
) -> Result<(), String> {
    let last = due.last().map_or(0, |t| t.seq + 1);
    shared.staged.fetch_max(last, Ordering::SeqCst);
    let mut lens = [0usize; BATCH];
    let mut off = 0;
    let mut stuck_since = None;
    while off < due.len() {
        let wall = netio::clock::wall_ns();
        let actual = netio::clock::mono_ns();
        for (i, t) in due.iter().enumerate().skip(off) {
            lens[i] = writer
                .write(t.seq, wall, t.size_bytes as usize, &mut bufs[i])
                .map_err(|e| e.to_string())?;
        }
        let mut slices: [&[u8]; BATCH] = [&[]; BATCH];
        for (slot, i) in slices.iter_mut().zip(off..due.len()) {
            *slot = &bufs[i][..lens[i]];
        }
        match sock.send_batch(&slices[..due.len() - off]) {
            Ok(0) => {
                // A full socket buffer: retry, unless stopped or stuck for a second.
                let since = *stuck_since.get_or_insert(actual);
                if stop.load(Ordering::Relaxed) || actual.saturating_sub(since) > STUCK_NS {
                    return Ok(());
                }
                std::thread::yield_now();
            }
            // An ICMP port unreachable for an earlier packet, consumed by this call: the
            // batch is retried (the reflector may come up).
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionRefused => {
                shared.refused.store(true, Ordering::Relaxed);
            }
            Err(e) => return Err(e.to_string()),
            Ok(n) => {
                stuck_since = None;
                for (i, t) in due.iter().enumerate().skip(off).take(n) {
                    tx.handle_record(&TxRecord {
                        flow: u32::from(FLOW_ID),
                        seq: t.seq,
                        size_bytes: lens[i] as u32,
                        scheduled_ns: t.scheduled.as_nanos(),
                        actual_ns: actual,
                    });
                }
                off += n;
            }
        }
    }
    Ok(())
}

/// The receiver thread: replies into `meter` until sending is over and either every
/// packet was answered or `--stamp-timeout` has passed since the last one; the meter,
/// and a receive error that ended it early.
fn receive(
    sock: &netio::UdpSocket,
    shared: &Shared,
    mut meter: ReplyMeter,
    config: &StampConfig,
) -> (ReplyMeter, Option<String>) {
    let mut bufs = vec![vec![0u8; 65_536]; BATCH];
    let mut metas = vec![netio::RecvMeta::default(); BATCH];
    let timeout_ns = u64::try_from(config.timeout.as_nanos()).unwrap_or(u64::MAX);
    let key = config.key.as_deref();
    let mut last_print = std::time::Instant::now();
    loop {
        match sock.recv_batch(&mut bufs, &mut metas) {
            Ok(n) => {
                let fallback = netio::clock::wall_ns();
                let staged = shared.staged.load(Ordering::SeqCst);
                for (buf, m) in bufs.iter().zip(&metas).take(n) {
                    let meta = ReplyMeta {
                        len: m.len,
                        rx_ns: m.kernel_ts_ns.unwrap_or(fallback),
                        kernel_ts: m.kernel_ts_ns.is_some(),
                        tos: m.tos,
                        hop_limit: m.hop_limit,
                        flow_label: m.flow_label,
                    };
                    let body = &buf[..m.len.min(buf.len())];
                    meter.handle_datagram(body, config.mode, key, meta, staged);
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionRefused => {
                shared.refused.store(true, Ordering::Relaxed);
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return (meter, Some(format!("receiving replies failed: {e}"))),
        }
        if config.progress && last_print.elapsed() >= StdDuration::from_millis(500) {
            last_print = std::time::Instant::now();
            eprint!(
                "\rdualperf send: {} STAMP packets, {} answered   ",
                shared.staged.load(Ordering::Relaxed),
                meter.answered()
            );
        }
        if shared.done.load(Ordering::SeqCst) {
            let sent = shared.sent.load(Ordering::SeqCst);
            let end = shared.end_ns.load(Ordering::SeqCst);
            let waited = netio::clock::mono_ns().saturating_sub(end);
            if meter.answered() >= sent || waited >= timeout_ns {
                return (meter, None);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use wire::stamp::TlvFlags;

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
    fn the_stamp_flags_parse_and_refuse_what_stamp_cannot_do() {
        use clap::Parser;
        let parse = |extra: &[&str]| {
            let mut args = vec!["dualperf", "send", "::1", "--stamp"];
            args.extend_from_slice(extra);
            crate::Cli::try_parse_from(args)
        };
        let key = "00112233445566778899aabbccddeeff";
        let all = [
            "--stamp-auth",
            "--stamp-key",
            key,
            "--stamp-ssid",
            "7",
            "--stamp-cos",
            "--stamp-ptp",
            "--stamp-timeout",
            "500ms",
            "--voip",
            "g711.1",
            "--dscp",
            "EF",
        ];
        assert!(parse(&all).is_ok());
        let refused: [&[&str]; 10] = [
            &["--tcp"],
            &["--reverse"],
            &["--bidir"],
            &["--from", "::2"],
            &["--calls", "2"],
            &["-P", "2"],
            &["--flows", "f"],
            &["--interval", "1s"],
            &["--log", "x.log"],
            &["--stamp-ssid", "0"],
        ];
        for bad in refused {
            assert!(parse(bad).is_err(), "{bad:?}");
        }
        // The STAMP options need --stamp.
        for alone in ["--stamp-cos", "--stamp-auth", "--stamp-ptp"] {
            assert!(crate::Cli::try_parse_from(["dualperf", "send", "::1", alone]).is_err());
        }
    }

    #[test]
    fn padding_fills_the_flows_size_when_a_tlv_fits() {
        let open = Mode::Unauthenticated;
        let auth = Mode::Authenticated;
        assert_eq!((open.base_len(), auth.base_len()), (44, 112));
        let l = |padding, hmac, len| Layout { padding, hmac, len };
        // Below the base packet, or too little room for a TLV header: the base packet.
        for size in [0, 16, 44, 45, 47] {
            assert_eq!(layout(size, open, false), l(None, false, 44), "{size}");
        }
        // From 48 octets on: a 4-octet header and size − 48 octets of padding.
        assert_eq!(layout(48, open, false), l(Some(0), false, 48));
        assert_eq!(layout(512, open, false), l(Some(464), false, 512));
        // With the Class of Service TLV (8 octets).
        assert_eq!(layout(0, open, true), l(None, false, 52));
        assert_eq!(layout(55, open, true), l(None, false, 52));
        assert_eq!(layout(56, open, true), l(Some(0), false, 56));
        // Authenticated: a lone Extra Padding TLV needs no HMAC TLV (RFC 8972 §4.8)…
        assert_eq!(layout(115, auth, false), l(None, false, 112));
        assert_eq!(layout(116, auth, false), l(Some(0), false, 116));
        assert_eq!(layout(512, auth, false), l(Some(396), false, 512));
        // … the Class of Service TLV does (20 octets more).
        assert_eq!(layout(100, auth, true), l(None, true, 140));
        assert_eq!(layout(143, auth, true), l(None, true, 140));
        assert_eq!(layout(144, auth, true), l(Some(0), true, 144));
        assert_eq!(layout(512, auth, true).len, 512);
        // Capped at a UDP payload.
        assert_eq!(layout(1 << 20, open, false).len, MAX_UDP_PAYLOAD);
    }

    #[test]
    fn written_packets_have_the_layouts_length_and_parse_back() {
        let key = vec![0x5a; 32];
        for (mode, key) in [
            (Mode::Unauthenticated, None),
            (Mode::Authenticated, Some(key)),
        ] {
            for cos in [None, Some(46)] {
                let mut w = PacketWriter::new(mode, key.clone(), 9, ee(true), cos);
                let mut buf = vec![0u8; 2048];
                for size in [0, 44, 47, 48, 60, 112, 136, 512, 1400] {
                    let n = w.write(3, T0, size, &mut buf).unwrap();
                    assert_eq!(n, w.layout(size).len, "{mode:?} {cos:?} {size}");
                    let p = SenderRepr::parse(&buf[..n], mode, key.as_deref()).unwrap();
                    assert_eq!((p.seq, p.ssid), (3, 9));
                    assert!(NTP.to_unix_ns(p.timestamp).abs_diff(T0) <= 1);
                    let has_cos = p
                        .tlvs
                        .iter()
                        .any(|t| matches!(t.body, TlvBody::ClassOfService { dscp1: 46, .. }));
                    assert_eq!(has_cos, cos.is_some());
                }
            }
        }
    }
}
