//! A flow's specification: what the sender sends, how it is marked, when it stops.

use serde::{Deserialize, Serialize};
use wire::control::{Meter, Protocol};
use wire::ds::{ds_byte, Dscp, Ecn};
use wire::time::Duration;

use crate::dist::Dist;
use crate::units::Rate;

/// When a flow stops: whichever limit comes first. At least one must be set.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
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
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
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
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RtpSpec {
    /// RTP payload type (RFC 3551: 0 PCMU, 4 G723, 18 G729, 31 H261).
    pub payload_type: u8,
    /// Media clock of the timestamps, in Hz (8000 for the voice codecs).
    pub clock_rate_hz: u32,
}

/// One flow.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
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
