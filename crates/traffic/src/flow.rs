//! A flow's specification: what the sender sends, how it is marked, when it stops.

use serde::{Deserialize, Serialize};
use wire::control::{Meter, Protocol};
use wire::ds::{ds_byte, Dscp, Ecn};
use wire::time::Duration;

use crate::distribution::{Dist, OnOff};
use crate::units::Rate;

/// When a flow stops: whichever limit comes first. At least one must be set.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema,
)]
pub struct StopSpec {
    /// Stop sending at start + this.
    #[serde(rename = "duration_ns")]
    pub duration: Option<Duration>,
    /// Stop after this many packets.
    pub count: Option<u64>,
    /// Stop once this many payload bytes have been sent.
    #[serde(rename = "limit_bytes")]
    pub bytes: Option<u64>,
}

/// How packets of a flow are marked. DSCP and ECN are separate.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema,
)]
pub struct MarkingSpec {
    /// DiffServ codepoint.
    pub dscp: Option<Dscp>,
    /// ECN codepoint.
    pub ecn: Option<Ecn>,
    /// IPv4 TTL / IPv6 hop limit.
    pub ttl: Option<u8>,
    /// IPv6 flow label (20 bits).
    pub flow_label: Option<u32>,
}

impl MarkingSpec {
    /// The DS byte to set, if DSCP or ECN is given (the other part is zero).
    pub fn tos(&self) -> Option<u8> {
        if self.dscp.is_none() && self.ecn.is_none() {
            return None;
        }
        Some(ds_byte(
            self.dscp.unwrap_or_default(),
            self.ecn.unwrap_or_default(),
        ))
    }
}

/// A flow whose packets carry a real RFC 3550 RTP header in front of the probe, so
/// Wireshark and RTP tools follow the stream.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct RtpSpec {
    /// RTP payload type (RFC 3551: 0 PCMU, 4 G723, 18 G729, 31 H261).
    pub payload_type: u8,
    /// Media clock of the timestamps, in Hz (8000 for the voice codecs).
    pub clock_rate_hz: u32,
}

/// A video stream sent frame by frame: at each frame instant (the flow's `rate` is the
/// frame rate) a frame of a random size is cut into packets that leave back to back, all
/// with the frame's RTP timestamp and the marker bit on the last one (RFC 3550 §5.1,
/// RFC 4587 §4.1 for H.261). The model and its parameters are in [`crate::stream`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct VideoSpec {
    /// Coded bytes per frame.
    pub frame_bytes: Dist,
    /// DAR(1) correlation of successive frame sizes (Jacobs and Lewis 1983, used for
    /// videoconference traffic by Heyman, Tabatabai and Lakshman 1992): with this
    /// probability a frame repeats the previous frame's size, otherwise it is drawn
    /// afresh. 0 draws every frame independently.
    pub correlation: f64,
    /// Most coded bytes per packet.
    pub max_chunk_bytes: u32,
    /// Bytes in front of each chunk in the payload besides the probe: the RTP header and
    /// any payload header (H.261: 12 + 4).
    pub header_bytes: u32,
}

/// One flow.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct FlowSpec {
    /// Transport.
    pub protocol: Protocol,
    /// Meter.
    pub meter: Meter,
    /// Send rate.
    pub rate: Rate,
    /// Payload bytes per packet.
    pub size_bytes: u32,
    /// Stop conditions.
    pub stop: StopSpec,
    /// Delay from the run's start to this flow's first packet.
    #[serde(rename = "start_offset_ns")]
    pub start_offset: Duration,
    /// Marking.
    pub marking: MarkingSpec,
    /// TCP_NODELAY on TCP flows.
    pub nodelay: bool,
    /// A label for output (flow-file line, preset).
    pub label: String,
    /// A real RTP header before the probe (UDP only).
    #[serde(default)]
    pub rtp: Option<RtpSpec>,
    /// Inter-departure times in milliseconds drawn from this distribution instead of
    /// the constant `rate` (D-ITG's IDT models); negative draws send at once.
    #[serde(default)]
    pub idt_ms: Option<Dist>,
    /// Payload sizes in bytes drawn from this distribution instead of the constant
    /// `size_bytes`; truncated and clamped to what the probe and the protocol allow.
    #[serde(default)]
    pub size_dist: Option<Dist>,
    /// Seed of the distributions, recorded with the results.
    #[serde(default)]
    pub seed: u64,
    /// ON/OFF gating, period durations in milliseconds: packets are sent only during ON
    /// periods. Talk spurts and silences (`--vad onoff`, as a codec with silence
    /// suppression; the first packet of each spurt carries the RTP marker bit, RFC 3551
    /// §4.1), or bursts (`--on`/`--off`, D-ITG's `-B`).
    #[serde(default)]
    pub on_off_ms: Option<OnOff>,
    /// Frame-by-frame video instead of one packet per deadline.
    #[serde(default)]
    pub video: Option<VideoSpec>,
    /// Bulk transfer: send as fast as the transport accepts, ignoring `rate`
    /// (TCP: as fast as the window allows).
    #[serde(default)]
    pub unpaced: bool,
    /// TCP congestion control (`TCP_CONGESTION`: cubic, bbr, reno…); the kernel's
    /// default when `None`.
    #[serde(default)]
    pub congestion: Option<String>,
    /// A bulk flow (`--bulk`): throughput is its measure. Unpaced (`unpaced`), or paced
    /// at a cap by the kernel for TCP (`SO_MAX_PACING_RATE`) and by the schedule for UDP.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub bulk: bool,
    /// The socket buffer asked for (`-w/--window`, iperf3's `-w`): the sender's send
    /// buffer and the receiver's receive buffer. `None` keeps the kernel's defaults (and
    /// TCP's autotuning).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub window_bytes: Option<u32>,
    /// The source port of the flow's data (`--cport`, iperf3's `--cport`): the TCP
    /// connection is bound to it before `connect`, a UDP flow gets a socket of its own
    /// bound to it. `None`: a port the kernel picks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cport: Option<u16>,
    /// The warm-up left out of the figures (`-O/--omit`, iperf3's `-O`), in nanoseconds:
    /// a packet whose probe was stamped (`tx_ns`) less than this after the flow's first
    /// packet is sent and received as usual but counted apart, as omitted, on both sides.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub omit_ns: Option<u64>,
    /// TCP bulk: send with `MSG_ZEROCOPY` (`-Z/--zerocopy`, iperf3's `-Z`; Linux's
    /// Documentation/networking/msg_zerocopy.rst).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub zerocopy: bool,
    /// UDP with Don't Fragment at every size (`--df`): `IP_PMTUDISC_PROBE`,
    /// `IPV6_PMTUDISC_PROBE` + `IPV6_DONTFRAG`, the cached path MTU ignored. A datagram
    /// above the route's MTU is not sent and is counted (`sent.too_big`): the probes of
    /// DPLPMTUD (RFC 8899 §4.4).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub dont_fragment: bool,
}

impl Default for FlowSpec {
    /// The flow `dualperf send` sends when no option is given: UDP, one-way delay,
    /// 1000 packets/s of 512 bytes for 10 s, unmarked, unlabelled, seed 0.
    fn default() -> Self {
        Self {
            protocol: Protocol::Udp,
            meter: Meter::Owd,
            rate: Rate::MilliPps(1_000_000),
            size_bytes: 512,
            stop: StopSpec::after(Duration::from_secs(10)),
            start_offset: Duration::ZERO,
            marking: MarkingSpec::default(),
            nodelay: false,
            label: String::new(),
            rtp: None,
            idt_ms: None,
            size_dist: None,
            seed: 0,
            on_off_ms: None,
            video: None,
            unpaced: false,
            congestion: None,
            bulk: false,
            window_bytes: None,
            cport: None,
            omit_ns: None,
            zerocopy: false,
            dont_fragment: false,
        }
    }
}

impl StopSpec {
    /// Stop after `duration`, and nothing else.
    pub fn after(duration: Duration) -> Self {
        Self {
            duration: Some(duration),
            ..Self::default()
        }
    }
}

impl FlowSpec {
    /// The mean packet rate this flow asks for: its constant rate (times the talk-spurt
    /// duty cycle, times the mean packets per frame for video), or 1000 / the mean of its
    /// inter-departure times in ms; `None` when that has no mean (heavy tails) or the
    /// flow is unpaced.
    pub fn mean_pps(&self) -> Option<f64> {
        if self.unpaced {
            return None;
        }
        let mut pps = match &self.idt_ms {
            None => self.rate.pps(self.size_bytes),
            Some(d) => 1000.0 / d.mean().filter(|m| *m > 0.0)?,
        };
        if let Some(v) = &self.video {
            pps *= v.mean_packets_per_frame()?;
        }
        if let Some(t) = &self.on_off_ms {
            pps *= t.duty_cycle()?;
        }
        Some(pps)
    }

    /// Packets the stop conditions allow (the least of rate × duration, count and bytes),
    /// in expectation for random gaps and sizes; `None` when that is unknown.
    pub fn planned_packets(&self) -> Option<u64> {
        let by_duration = self
            .stop
            .duration
            .zip(self.mean_pps())
            .map(|(d, pps)| (d.as_secs_f64() * pps).ceil() as u64);
        let mean_size = match &self.size_dist {
            None => Some(f64::from(self.size_bytes)),
            Some(d) => d.mean().filter(|m| *m >= 1.0),
        };
        let by_bytes = self
            .stop
            .bytes
            .zip(mean_size)
            .map(|(b, s)| (b as f64 / s).ceil() as u64);
        [by_duration, self.stop.count, by_bytes]
            .into_iter()
            .flatten()
            .min()
    }
}

impl VideoSpec {
    /// Packets per frame in expectation, `E[max(1, ⌈F / chunk⌉)]`, from the frame-size
    /// distribution's CDF at the chunk boundaries; `None` without a CDF.
    pub fn mean_packets_per_frame(&self) -> Option<f64> {
        // E[N] = Σ_{k≥0} P(N > k) = 1 + Σ_{k≥1} P(F > k·chunk).
        let chunk = f64::from(self.max_chunk_bytes.max(1));
        let mut sum = 1.0;
        for k in 1..100_000u32 {
            let tail = 1.0 - self.frame_bytes.cdf(f64::from(k) * chunk)?;
            if tail < 1e-12 {
                break;
            }
            sum += tail;
        }
        Some(sum)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tos_combines_dscp_and_ecn() {
        let mut m = MarkingSpec::default();
        assert_eq!(m.tos(), None);
        m.dscp = Some(Dscp::EF);
        assert_eq!(m.tos(), Some(0xB8));
        m.ecn = Some(Ecn::Ect1);
        assert_eq!(m.tos(), Some(0xB9));
        m.dscp = None;
        assert_eq!(m.tos(), Some(0x01));
    }
}
