//! What `dualperf send --json` prints: sender-side figures, the receiver's summary, and
//! the round-trip summary of echoes, per flow (docs/output.md).

use std::net::SocketAddr;

use meter::{FlowSummary, ScheduleError};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use traffic::FlowSpec;

mod outcome;
mod reservation;
pub mod text;

pub use outcome::{ReceivedFlow, SenderFlow};
pub use reservation::{error_text, FilterKind, Reservation, ReservationState};

/// The version of [`SendReport`]'s format.
pub const SEND_FORMAT_VERSION: u32 = 1;

/// Sender-side figures of one flow.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SentStats {
    /// Packets sent: UDP datagrams, or TCP messages (a write of the flow's size each; a
    /// TCP bulk flow's are only how its writes were cut: its `bytes` count).
    pub packets: u64,
    /// Payload bytes sent.
    pub bytes: u64,
    /// First to last actual send time; `None` with fewer than two packets.
    pub duration_ns: Option<u64>,
    /// Actual send time of the first and the last packet (monotonic clock).
    #[serde(skip)]
    pub first_ns: Option<u64>,
    /// See `first_ns`.
    #[serde(skip)]
    pub last_ns: Option<u64>,
    /// Achieved send rate, `packets / duration` over first→last send, the same
    /// definition as the receiver's rate (D-ITG's "Average packet rate").
    pub rate_pps: Option<f64>,
    /// Payload bits over the same span.
    pub bitrate_bps: Option<f64>,
    /// The mean rate asked for; `None` when the gap distribution has no mean.
    pub requested_pps: Option<f64>,
    /// Packets the stop conditions allow (rate × duration, count, bytes: the least).
    pub planned_packets: Option<u64>,
    /// Actual − scheduled send time (mean, p99, late packets).
    pub schedule_error: Option<ScheduleError>,
    /// With `-O/--omit` (iperf3's `-O`): packets sent within the omitted span, stamped
    /// less than `spec.omit_ns` after the flow's first packet, and left out of every
    /// figure above (`packets` + `omitted_packets` were sent). Absent without `-O`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub omitted_packets: Option<u64>,
    /// Their payload bytes (`bytes` + `omitted_bytes` were sent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub omitted_bytes: Option<u64>,
    /// With `--df`: datagrams not sent because they were larger than the route's MTU
    /// (`EMSGSIZE`; not in `packets`). Absent when none were.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub too_big: Option<u64>,
}

/// How long the receiver held round-trip probes before echoing them (subtracted from
/// each RTT, as irtt subtracts server processing time). Only probes of at least 32 bytes
/// carry the receiver's timestamps.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct HoldStats {
    /// Echoes that carried the receiver's hold time.
    pub packets: u64,
    /// Mean hold time.
    pub mean_ns: f64,
    /// Longest hold time.
    pub max_ns: u64,
}

impl HoldStats {
    /// From the hold times of the echoes, ns; `None` without any.
    pub fn from_ns(holds: &[i64]) -> Option<Self> {
        let mut sums = HoldSums::default();
        for &h in holds {
            sums.add(h);
        }
        sums.stats()
    }
}

/// Hold times summed as echoes arrive (constant memory).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct HoldSums {
    packets: u64,
    sum_ns: i128,
    max_ns: i64,
}

impl HoldSums {
    /// Takes one echo's hold time.
    pub fn add(&mut self, hold_ns: i64) {
        self.packets += 1;
        self.sum_ns += i128::from(hold_ns);
        self.max_ns = if self.packets == 1 {
            hold_ns
        } else {
            self.max_ns.max(hold_ns)
        };
    }

    /// The statistics; `None` without any echo.
    pub fn stats(&self) -> Option<HoldStats> {
        (self.packets > 0).then(|| HoldStats {
            packets: self.packets,
            mean_ns: self.sum_ns as f64 / self.packets as f64,
            max_ns: u64::try_from(self.max_ns).unwrap_or(0),
        })
    }
}

/// Results of one flow.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct FlowOutcome {
    /// The flow's id in the session.
    pub id: u16,
    /// What was asked for.
    pub spec: FlowSpec,
    /// The sender's figures.
    pub sent: SentStats,
    /// The receiver's summary (one-way figures); `None` if it did not report.
    pub received: Option<FlowSummary>,
    /// For RTP flows: the receiver's RFC 3550 jitter against the RTP timestamps, the
    /// figure RTP tools such as Wireshark report.
    pub received_rtp: Option<meter::RtpJitterSummary>,
    /// The sender's summary of echoes (round-trip figures, --meter rtt).
    pub rtt: Option<FlowSummary>,
    /// Receiver hold time of echoes (--meter rtt).
    pub receiver_hold: Option<HoldStats>,
    /// The receiver's series in `--interval` windows from the flow's first arrival.
    pub intervals: Option<Vec<meter::Interval>>,
    /// Why the receiver did not report the series, if it did not.
    pub intervals_error: Option<String>,
    /// Malformed messages the receiver saw on this flow; `None` if it did not report.
    pub malformed_at_receiver: Option<u64>,
    /// Why the flow ended early, if it did.
    pub error: Option<String>,
    /// Records of this flow (sent packets, echoes) that the sender's `--log` could not
    /// take: measured, but missing from the log. `None` without `--log`.
    #[serde(default)]
    pub unlogged_records: Option<u64>,
    /// A flow measured with STAMP against a Session-Reflector (`send --stamp`): what
    /// only STAMP tells. Absent for every other flow (so their documents keep their
    /// shape).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stamp: Option<StampOutcome>,
    /// With `send --cdf`: the delay's distribution, the smallest delay then its
    /// percentiles 1 to 100 (from the meter's histogram, within its 1/128): the round
    /// trip for a flow metered round trip (measured here), else the one-way delay (the
    /// receiver's). Absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delay_cdf_ns: Option<Vec<i64>>,
    /// For a TCP flow: what the sender's kernel reported about the connection
    /// (`TCP_INFO`): retransmits, congestion window, smoothed RTT, pacing and delivery
    /// rates. Absent for UDP flows (so their documents keep their shape), and for a TCP
    /// flow whose socket could not be read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tcp: Option<TcpReport>,
    /// With `-O/--omit`: what the receiver left out of `received` and `intervals` (the
    /// warm-up, by the probes' transmit timestamps; `sent.omitted_packets` is the
    /// sender's count of the same). Absent without `-O`, or when the receiver did not
    /// report.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub received_omitted: Option<wire::control::Omitted>,
    /// With `-Z/--zerocopy`: the flow's `MSG_ZEROCOPY` sends and their completions.
    /// Absent without `-Z`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub zerocopy: Option<ZeroCopyStats>,
    /// With `send --reserve`: the flow's RSVP reservation, as the sender saw it and
    /// the receiver reported it. Absent without `--reserve`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reservation: Option<Reservation>,
}

/// A TCP flow's zero-copy sends (`-Z/--zerocopy`, iperf3's `-Z`): `send(MSG_ZEROCOPY)`
/// on a socket with `SO_ZEROCOPY`, and the completions the kernel queues on the socket's
/// error queue (`SO_EE_ORIGIN_ZEROCOPY`), as Linux's
/// Documentation/networking/msg_zerocopy.rst defines them. A buffer is written again
/// only after the completion of every send that read it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ZeroCopyStats {
    /// Send calls made with `MSG_ZEROCOPY` that the kernel took (each numbered by it).
    pub sends: u64,
    /// Of those, the sends the kernel reported done (the ranges `ee_info..=ee_data`
    /// summed). Less than `sends` only when the flow ended before the last came (they
    /// are waited for up to 2 s).
    pub completions: u64,
    /// Completions with `SO_EE_CODE_ZEROCOPY_COPIED`: the kernel copied the data after
    /// all (loopback always does; so does a device without scatter-gather).
    pub copied: u64,
    /// Sends made without `MSG_ZEROCOPY`, as a plain copy: every buffer of the pool was
    /// still waiting for its completion, or the kernel refused more unread
    /// completions (`ENOBUFS`, `net.core.optmem_max`).
    pub fallback_sends: u64,
    /// Buffers in the pool the flow's messages were written into and recycled from.
    pub pool_buffers: u64,
}

/// A TCP flow's connection as the sending kernel reported it: `getsockopt(TCP_INFO)`,
/// Linux `struct tcp_info` (include/uapi/linux/tcp.h), read while the flow ran and once
/// after it ended. The figures iperf3 prints per interval, Retr and Cwnd, are
/// `retransmits` and `cwnd_bytes` here, with iperf3's definitions (its src/tcp_info.c).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct TcpReport {
    /// Over the whole flow.
    pub summary: TcpInfoSummary,
    /// One sample at the end of each `--interval` window (times since the flows' common
    /// start), the last when the flow ended; `None` without `--interval`. Their
    /// `retransmits` add up to `summary.retransmits`.
    pub intervals: Option<Vec<TcpInfoSample>>,
}

/// The connection's state at one moment, and its retransmits since the previous sample.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct TcpInfoSample {
    /// When the sample was taken, since the flows' common start (the session's origin).
    pub at_ns: u64,
    /// Segments retransmitted since the previous sample (since the connection opened,
    /// for the first): the change of `tcpi_total_retrans`, as iperf3's Retr.
    pub retransmits: u64,
    /// The congestion window, `tcpi_snd_cwnd × tcpi_snd_mss` (segments times the
    /// sending MSS), as iperf3's Cwnd.
    pub cwnd_bytes: u64,
    /// The smoothed RTT, `tcpi_rtt` (RFC 6298's SRTT); `None` before the connection's
    /// first RTT sample.
    pub srtt_ns: Option<u64>,
    /// The RTT's mean deviation, `tcpi_rttvar` (RFC 6298's RTTVAR); `None` as `srtt_ns`.
    pub rttvar_ns: Option<u64>,
    /// The rate TCP paces at, `tcpi_pacing_rate` × 8 (Linux 3.15); `None` while
    /// unlimited, or from an older kernel.
    pub pacing_rate_bps: Option<u64>,
    /// The latest delivery rate sample, `tcpi_delivery_rate` × 8 (Linux 4.9): data
    /// acknowledged per unit of time, as BBR estimates the path's bandwidth; `None`
    /// before any sample, or from an older kernel.
    pub delivery_rate_bps: Option<u64>,
}

/// A TCP flow's connection over the whole flow: retransmits and the last state from
/// the sample taken after the flow ended, extremes and means over every sample (one at
/// each `--interval` edge, and at least every 100 ms while the flow ran).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct TcpInfoSummary {
    /// Samples the minimum, mean and maximum are over.
    pub samples: u64,
    /// Segments retransmitted over the connection's life, `tcpi_total_retrans` (iperf3's
    /// Retr of the whole test).
    pub retransmits: u64,
    /// Bytes retransmitted, `tcpi_bytes_retrans` (Linux 4.19); `None` from an older
    /// kernel.
    pub bytes_retrans: Option<u64>,
    /// The sending MSS at the end, `tcpi_snd_mss`: the segment size of the windows.
    pub mss_bytes: u64,
    /// The largest congestion window sampled, `tcpi_snd_cwnd × tcpi_snd_mss`.
    pub max_cwnd_bytes: u64,
    /// The congestion window at the end.
    pub cwnd_bytes: u64,
    /// The least smoothed RTT sampled (`tcpi_rtt`); `None` without an RTT sample.
    pub srtt_min_ns: Option<u64>,
    /// The mean of the smoothed RTTs sampled.
    pub srtt_mean_ns: Option<f64>,
    /// The largest smoothed RTT sampled.
    pub srtt_max_ns: Option<u64>,
    /// The kernel's own least RTT, `tcpi_min_rtt` (Linux 4.6; over its windowed
    /// filter, every ACK counted, not only the samples here); `None` before any RTT
    /// sample or from an older kernel.
    pub min_rtt_ns: Option<u64>,
    /// The RTT's mean deviation at the end, `tcpi_rttvar`.
    pub rttvar_ns: Option<u64>,
    /// The pacing rate at the end, `tcpi_pacing_rate` × 8; `None` while unlimited.
    pub pacing_rate_bps: Option<u64>,
    /// The last delivery rate sample, `tcpi_delivery_rate` × 8.
    pub delivery_rate_bps: Option<u64>,
    /// The pacing cap set on the socket, `tcpi_max_pacing_rate` × 8: a paced bulk flow
    /// (`--bulk --rate`) is paced by the kernel at its rate (`SO_MAX_PACING_RATE`);
    /// `None` when uncapped.
    #[serde(default)]
    pub max_pacing_rate_bps: Option<u64>,
    /// The send buffer granted (`SO_SNDBUF` as the kernel counts it: twice what
    /// `-w/--window` asked for, or what autotuning reached).
    #[serde(default)]
    pub send_buffer_bytes: Option<u64>,
}

/// What a STAMP Session-Sender (RFC 8762 §4.2, `send --stamp`) measured beyond the
/// usual figures of its flow. There `rtt` is the round trip less the reflector's
/// turnaround, `(t4 − t1) − (t3 − t2)` (RFC 8762 §4.2.1's four timestamps), and
/// `received` the forward one-way view, `t2 − t1`, with the marking the reflector
/// reported (Class of Service TLV, RFC 8972 §4.4) and the TTL it saw; its loss figures
/// count packets whose reply never came (a reply is the only sign a packet arrived):
/// the split by direction is `forward_lost` and `reverse_lost` here. One-way delays mix
/// the two hosts' clocks: `SendReport::clock` estimates their offset from the same
/// timestamps (RFC 5905 §8), never subtracted.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct StampOutcome {
    /// `unauthenticated` (RFC 8762 §4.2.1) or `authenticated` (§4.2.2, HMAC-SHA-256).
    pub mode: String,
    /// The Session-Sender Identifier the packets carried (RFC 8972 §3).
    pub ssid: u16,
    /// The format of the sender's timestamps: `ntp` (RFC 5905 §6) or `ptp` (IEEE 1588
    /// truncated), as the Error Estimate's Z bit says (RFC 8762 §4.2.1).
    pub timestamp_format: String,
    /// Replies accepted (duplicates included): parsed, authenticated in that mode, of
    /// this session, answering a packet that was sent.
    pub replies: u64,
    /// Whether the reflector numbers its own replies (stateful, RFC 8762 §4: its
    /// sequence number counts the packets it received): `true` once a reply's number
    /// differed from the sender's it answers; `None` while every reply carried the
    /// sender's number (a stateless reflector, or a stateful one before any forward
    /// loss or reordering: the two cannot be told apart).
    pub reflector_stateful: Option<bool>,
    /// Packets the reflector received, from a stateful reflector's numbers (its
    /// highest sequence number + 1; replies lost after its last answered one are not
    /// seen). `None` unless `reflector_stateful`.
    pub reflector_received: Option<u64>,
    /// Packets lost on the way to the reflector: `sent − reflector_received` (stateful
    /// reflector), 0 when every packet was answered; `None` when the two directions
    /// cannot be told apart (then only `round_trip_lost` is known).
    pub forward_lost: Option<u64>,
    /// Replies lost on the way back: `reflector_received −` distinct replies (stateful
    /// reflector: gaps in its numbers, RFC 8762 §4), 0 when every packet was
    /// answered; `None` as `forward_lost`.
    pub reverse_lost: Option<u64>,
    /// Packets never answered: sent − distinct sender sequence numbers answered
    /// (RFC 7680 loss, both directions together).
    pub round_trip_lost: u64,
    /// The reverse one-way figures, `t4 − t3` (reflector's clock to ours), by the
    /// reflector's sequence numbers: with a stateful reflector its loss figures are
    /// the reverse path's (expected = `reflector_received`), else the round trip's.
    /// Marking as received here.
    pub reverse: Option<FlowSummary>,
    /// Replies of another session (SSID) or for a sequence number never sent.
    pub unknown_replies: u64,
    /// Replies for a sender sequence number already answered.
    pub duplicate_replies: u64,
    /// Datagrams that were not a STAMP reply of this mode (too short, bad TLVs, or a
    /// failed HMAC in authenticated mode, RFC 8762 §4.4).
    pub malformed_replies: u64,
    /// Accepted replies whose SSID was 0 though ours is not: a reflector without RFC
    /// 8972 §3 support returns the field as MBZ.
    #[serde(default)]
    pub zero_ssid_replies: u64,
    /// Accepted replies whose TLVs failed their integrity check (the I flag, or the
    /// HMAC TLV against the key, RFC 8972 §4.8): their TLVs were not used.
    #[serde(default)]
    pub tlv_integrity_failed_replies: u64,
    /// Our Error Estimate (RFC 8762 §4.2.1, RFC 4656 §4.1.2), ns, as sent.
    pub sender_error_estimate_ns: Option<u64>,
    /// Our Error Estimate's S bit: the kernel reported the clock synchronised.
    pub sender_synchronized: bool,
    /// The reflector's Error Estimate of its timestamps (last reply), ns; `None`
    /// without a reply or when it says "unknown" (multiplier 0).
    pub reflector_error_estimate_ns: Option<u64>,
    /// The reflector's S bit (last reply).
    pub reflector_synchronized: Option<bool>,
    /// The reflector's timestamp format (`ntp` or `ptp`, last reply).
    pub reflector_timestamp_format: Option<String>,
    /// The Class of Service TLV's outcome (`--stamp-cos`); `None` without it.
    pub cos: Option<StampCos>,
}

/// The Class of Service TLV (RFC 8972 §4.4) of a STAMP session: what was asked for the
/// replies and what the reflector answered. The DSCP and ECN it received are in the
/// flow's `received.marking`; what the replies carried back, in `rtt.marking`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct StampCos {
    /// DSCP1: the DSCP asked for on the reflected packets.
    pub requested_dscp: u8,
    /// Accepted replies carrying the TLV with the reflector's values.
    pub replies: u64,
    /// Replies without the TLV, or with it flagged unrecognized (U) or malformed (M):
    /// the reflector did not report DSCP2/ECN.
    pub unsupported_replies: u64,
    /// Replies whose RP field says the reflector did not use DSCP1 on the reply.
    pub refused_replies: u64,
}

/// Results of a session.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SendReport {
    /// [`SEND_FORMAT_VERSION`].
    pub format_version: u32,
    /// `dualperf send` and its version.
    pub tool: String,
    /// The receiver.
    pub dest: SocketAddr,
    /// Whether Ctrl-C (or a signal) ended the session early.
    pub interrupted: bool,
    /// The receiver's clock minus the sender's, estimated over the control connection
    /// (RFC 5905 on-wire method, least-delay sample of several): every one-way delay of
    /// this session is true delay + `offset_ns`, within `± bound_ns`. `None` from a
    /// receiver that does not answer clock exchanges.
    #[serde(default)]
    pub clock: Option<meter::clock::OffsetEstimate>,
    /// Each end's own clock synchronisation (its kernel's adjtimex state, chrony's
    /// tracking), when the two ends read different clocks; `None` on one clock.
    #[serde(default)]
    pub sync: Option<SessionSync>,
    /// Every flow together.
    pub sum: SumStats,
    /// Per flow, in flow order.
    pub flows: Vec<FlowOutcome>,
}

/// Every flow of a session together (iperf3's SUM), each side over its own span: the
/// earliest first packet to the latest last packet of any flow.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SumStats {
    /// How many flows.
    pub flows: usize,
    /// The sender's totals.
    pub sent: SideSum,
    /// `None` when the receiver reported no flow.
    pub received: Option<SideSum>,
    /// How the flows spread (median, 90th percentile and worst flow); `None` for one
    /// flow.
    #[serde(default)]
    pub spread: Option<Spread>,
}

/// How the flows of a session spread: each figure over the flows that define it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Spread {
    /// Per-flow loss % as the receiver counted it (RFC 7680 loss ratio).
    pub loss_pct: Option<FlowQuantiles>,
    /// Per-flow mean delay: one-way, or the round trip of `--meter rtt` flows.
    pub delay_mean_ns: Option<FlowQuantiles>,
    /// Per-flow D-ITG jitter (mean |ΔD| of consecutive packets).
    pub jitter_ditg_ns: Option<FlowQuantiles>,
    /// Per-flow 99th percentile of the schedule error (actual − scheduled send time).
    pub schedule_error_p99_ns: Option<FlowQuantiles>,
    /// Packets sent no later than each flow's late threshold (1 ms) after their
    /// deadline, all paced flows together, as a share of the packets they sent.
    pub on_time_pct: Option<f64>,
    /// Packets received as a share of packets sent, all flows together.
    pub delivered_pct: Option<f64>,
}

/// One figure over many flows: nearest-rank median and 90th percentile, and the largest.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct FlowQuantiles {
    /// Flows for which the figure is defined.
    pub flows: usize,
    /// The median flow's value.
    pub median: f64,
    /// The 90th percentile flow's value.
    pub p90: f64,
    /// The largest value of any flow.
    pub worst: f64,
}

impl FlowQuantiles {
    /// Over `values` (any order); `None` when empty.
    pub fn of(mut values: Vec<f64>) -> Option<Self> {
        if values.is_empty() {
            return None;
        }
        values.sort_by(f64::total_cmp);
        // Nearest rank: the ⌈p·n⌉-th smallest.
        let rank =
            |p: f64| values[((p * values.len() as f64).ceil() as usize).clamp(1, values.len()) - 1];
        Some(Self {
            flows: values.len(),
            median: rank(0.5),
            p90: rank(0.9),
            worst: values[values.len() - 1],
        })
    }
}

impl Spread {
    /// The spread of `flows`.
    pub fn of(flows: &[FlowOutcome]) -> Self {
        fn summary(f: &FlowOutcome) -> Option<&FlowSummary> {
            if f.spec.meter == wire::control::Meter::Rtt {
                f.rtt.as_ref()
            } else {
                f.received.as_ref()
            }
        }
        let loss = flows
            .iter()
            .filter_map(|f| f.received.as_ref()?.loss.loss_pct)
            .collect();
        let delay = flows
            .iter()
            .filter_map(|f| Some(summary(f)?.delay.as_ref()?.mean_ns))
            .collect();
        let jitter = flows
            .iter()
            .filter_map(|f| summary(f)?.jitter.ditg_ns)
            .collect();
        let errors: Vec<_> = flows
            .iter()
            .filter_map(|f| f.sent.schedule_error.as_ref())
            .collect();
        let paced_sent: u64 = errors.iter().map(|e| e.packets).sum();
        let late: u64 = errors.iter().map(|e| e.late_packets).sum();
        let sent: u64 = flows.iter().map(|f| f.sent.packets).sum();
        let received: Option<u64> = flows
            .iter()
            .map(|f| f.received.as_ref().map(|r| r.packets))
            .sum();
        Self {
            loss_pct: FlowQuantiles::of(loss),
            delay_mean_ns: FlowQuantiles::of(delay),
            jitter_ditg_ns: FlowQuantiles::of(jitter),
            schedule_error_p99_ns: FlowQuantiles::of(
                errors.iter().map(|e| e.p99_ns as f64).collect(),
            ),
            on_time_pct: (paced_sent > 0)
                .then(|| (paced_sent - late.min(paced_sent)) as f64 * 100.0 / paced_sent as f64),
            delivered_pct: received
                .filter(|_| sent > 0)
                .map(|r| r as f64 * 100.0 / sent as f64),
        }
    }
}

/// One side's totals.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SideSum {
    /// Packets.
    pub packets: u64,
    /// Payload bytes.
    pub bytes: u64,
    /// First to last packet over all flows; `None` when undefined.
    pub duration_ns: Option<u64>,
    /// `bytes · 8 / duration` (payload bits, as per flow).
    pub bitrate_bps: Option<f64>,
}

impl SideSum {
    /// Totals and the span from the first to the last packet.
    pub fn new(packets: u64, bytes: u64, first: Option<u64>, last: Option<u64>) -> Self {
        let duration_ns = first.zip(last).and_then(|(a, b)| (b > a).then_some(b - a));
        Self {
            packets,
            bytes,
            duration_ns,
            bitrate_bps: duration_ns.map(|d| bytes as f64 * 8e9 / d as f64),
        }
    }
}

/// A session whose one-way delays are less certain than the variation they show: the
/// hosts' clocks are estimated to `± bound_ns`, and some one-way flow's delays spread
/// over less than that.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClockCaveat {
    /// The clock offset's bound (`SendReport::clock`), ns.
    pub bound_ns: u64,
    /// The least delay variation of the session's one-way flows: max − min of a flow's
    /// delays, the largest PDV (RFC 5481 §4.2: PDV(i) = D(i) − D(min)), ns.
    pub variation_ns: u64,
}

impl SendReport {
    /// When the clocks' bound exceeds the delay variation a one-way flow measured (two
    /// hosts, not one clock): absolute one-way delays then mean less than their spread,
    /// and `--meter rtt` compares better.
    pub fn clock_caveat(&self) -> Option<ClockCaveat> {
        let clock = self.clock.filter(|c| !c.same_clock)?;
        let variation_ns = self
            .flows
            .iter()
            .filter(|f| f.spec.meter == wire::control::Meter::Owd)
            .filter_map(|f| f.received.as_ref()?.delay.as_ref())
            .map(|d| d.max_ns.saturating_sub(d.min_ns).max(0) as u64)
            .min()?;
        (clock.bound_ns > variation_ns).then_some(ClockCaveat {
            bound_ns: clock.bound_ns,
            variation_ns,
        })
    }
}

/// The two ends' own clock synchronisation, as each reports it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SessionSync {
    /// The sending host.
    pub sender: crate::clock::SyncState,
    /// The receiving host, as it answered the session's host query.
    pub receiver: crate::clock::SyncState,
}

/// Reports of both directions of `send --bidir`: ours to the agent, the agent's to us.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct BidirReport {
    /// [`SEND_FORMAT_VERSION`].
    pub format_version: u32,
    /// Flows we sent to the agent (`None`: the direction failed before measuring).
    pub forward: Option<SendReport>,
    /// Flows the agent sent to us.
    pub reverse: Option<SendReport>,
    /// What went wrong in either direction.
    #[serde(default)]
    pub errors: Vec<String>,
}

impl SumStats {
    /// Every flow together, each side over its own span.
    pub fn of(flows: &[FlowOutcome]) -> Self {
        let sent = SideSum::new(
            flows.iter().map(|f| f.sent.packets).sum(),
            flows.iter().map(|f| f.sent.bytes).sum(),
            flows.iter().filter_map(|f| f.sent.first_ns).min(),
            flows.iter().filter_map(|f| f.sent.last_ns).max(),
        );
        let rx: Vec<&FlowSummary> = flows.iter().filter_map(|f| f.received.as_ref()).collect();
        let received = (!rx.is_empty()).then(|| {
            SideSum::new(
                rx.iter().map(|r| r.packets).sum(),
                rx.iter().map(|r| r.bytes).sum(),
                rx.iter().filter_map(|r| r.first_rx_ns).min(),
                rx.iter().filter_map(|r| r.last_rx_ns).max(),
            )
        });
        Self {
            flows: flows.len(),
            sent,
            received,
            spread: (flows.len() > 1).then(|| Spread::of(flows)),
        }
    }
}

/// A flow's sender-side figures from its send records (the same definitions as the
/// receiver's, [`meter::sent_summary`]), as a [`meter::TxMeter`] counted them.
pub fn sent_stats(spec: &FlowSpec, tx: &meter::TxMeter) -> SentStats {
    let s = tx.sent_summary();
    SentStats {
        packets: s.packets,
        bytes: s.bytes,
        duration_ns: s.duration_ns,
        first_ns: s.first_ns,
        last_ns: s.last_ns,
        rate_pps: s.rate_pps,
        bitrate_bps: s.bitrate_bps,
        requested_pps: spec.mean_pps(),
        planned_packets: spec.planned_packets(),
        // An unpaced (bulk) flow has no schedule to miss.
        schedule_error: (!spec.unpaced).then(|| tx.schedule_error()).flatten(),
        omitted_packets: None,
        omitted_bytes: None,
        too_big: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flow_quantiles_are_nearest_rank() {
        assert_eq!(FlowQuantiles::of(Vec::new()), None);
        let q = FlowQuantiles::of(vec![5.0, 1.0, 4.0, 2.0, 3.0]).unwrap();
        assert_eq!((q.flows, q.median, q.p90, q.worst), (5, 3.0, 5.0, 5.0));
        // 1..=10: the median is the 5th value, the 90th percentile the 9th.
        let q = FlowQuantiles::of((1..=10).rev().map(f64::from).collect()).unwrap();
        assert_eq!((q.median, q.p90, q.worst), (5.0, 9.0, 10.0));
        let one = FlowQuantiles::of(vec![7.0]).unwrap();
        assert_eq!((one.median, one.p90, one.worst), (7.0, 7.0, 7.0));
    }
}
