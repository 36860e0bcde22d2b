//! VoIP codec models, bit-exact with D-ITG's `VoIP` preset (`ITGSend … VoIP -x CODEC -h
//! RTP|CRTP [-VAD]`, D-ITG 2.8.1 `src/ITGSend/traffic.cpp` lines 101–207, tabulated in
//! `reference/peer-tools.md` §3.2).
//!
//! D-ITG's model: every packet carries `framesize × samples` codec bytes (times 0.65
//! with its VAD factor), plus 12 bytes for an RTP header or 2 for a compressed (CRTP) one;
//! the payload size is truncated to an integer and clamped to at least 16 bytes (D-ITG's
//! own minimum); packets leave at a constant rate of `pps`.
//!
//! | codec | frame B × samples | pps | RTP payload | CRTP | RTP+VAD | CRTP+VAD |
//! |---|---|---|---|---|---|---|
//! | G.711.1 | 80 × 1 | 100 | 92 | 82 | 64 | 54 |
//! | G.711.2 | 80 × 2 | 50 | 172 | 162 | 116 | 106 |
//! | G.723.1 | 30 × 1 | 26 | 42 | 32 | 31 | 21 |
//! | G.729.2 | 10 × 2 | 50 | 32 | 22 | 25 | 16 (15 clamped) |
//! | G.729.3 | 10 × 3 | 33 | 42 | 32 | 31 (31.5 truncated) | 21 |
//!
//! D-ITG's "VAD" is a constant factor, not talk spurts and silences. The realistic
//! alternative, [`talk_spurts`], is an on/off process: exponential talk spurts and
//! silences, no packets during a silence, full-size packets during a spurt.
//!
//! ## The talk-spurt model and its source
//!
//! Brady (Bell System Technical Journal 48(7), 1969) measured on/off patterns of
//! telephone conversations and found talk spurts and silences close to exponential; ITU-T
//! Recommendation P.59 (03/93), *Artificial conversational speech*, standardises such a
//! two-state model for one talker with mean talk spurt **1.004 s** and mean pause
//! **1.587 s**, an activity factor of 1.004 / 2.591 = 38.75 %. Those two means are our
//! defaults ([`P59_TALK_SPURT_S`], [`P59_PAUSE_S`]). They are the values cited for P.59
//! in the literature; the Recommendation's own text could not be consulted here, and
//! Brady's means depend on his detector's hangover (his spurts are longer), so both are
//! overridable: `--vad onoff:ON_S,OFF_S`. A silence does not count as loss (sequence
//! numbers stay contiguous) and the RTP timestamp keeps running through it, with the
//! marker bit on the first packet of each spurt (RFC 3551 §4.1).

use core::fmt;
use core::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::units::Rate;

/// A codec as D-ITG models it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub enum Codec {
    /// G.711, one 10 ms frame per packet.
    #[serde(rename = "g711.1")]
    G711x1,
    /// G.711, two frames per packet.
    #[serde(rename = "g711.2")]
    G711x2,
    /// G.723.1 as D-ITG models it (30 B at 26 pkt/s; ITU-T's nominal frame is 24 B / 30 ms).
    #[serde(rename = "g723.1")]
    G723x1,
    /// G.729, two 10 ms frames per packet.
    #[serde(rename = "g729.2")]
    G729x2,
    /// G.729, three frames per packet.
    #[serde(rename = "g729.3")]
    G729x3,
}

/// The header D-ITG accounts for in the payload.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum VoipHeader {
    /// A 12-byte RTP header.
    #[default]
    Rtp,
    /// A 2-byte compressed RTP header (RFC 2508).
    Crtp,
    /// No header bytes.
    None,
}

/// D-ITG's constant voice-activity factor.
pub const DITG_VAD_FACTOR: f64 = 0.65;
/// D-ITG's smallest payload.
pub const DITG_MIN_PAYLOAD: u32 = 16;
/// Mean talk spurt of ITU-T P.59's one-talker model, seconds.
pub const P59_TALK_SPURT_S: f64 = 1.004;
/// Mean pause of ITU-T P.59's one-talker model, seconds.
pub const P59_PAUSE_S: f64 = 1.587;

/// Exponential talk spurts and silences with these means in seconds, as an on/off
/// process in milliseconds ([`crate::FlowSpec::on_off_ms`]); see the module
/// documentation for the source of the defaults.
pub fn talk_spurts(spurt_s: f64, pause_s: f64) -> crate::distribution::OnOff {
    crate::distribution::OnOff {
        on: crate::distribution::Dist::Exponential {
            mean: spurt_s * 1000.0,
        },
        off: crate::distribution::Dist::Exponential {
            mean: pause_s * 1000.0,
        },
    }
}

impl Codec {
    /// Every codec.
    pub const ALL: [Self; 5] = [
        Self::G711x1,
        Self::G711x2,
        Self::G723x1,
        Self::G729x2,
        Self::G729x3,
    ];

    /// Codec bytes per frame, frames per packet, packets per second.
    pub const fn model(self) -> (u32, u32, u32) {
        match self {
            Self::G711x1 => (80, 1, 100),
            Self::G711x2 => (80, 2, 50),
            Self::G723x1 => (30, 1, 26),
            Self::G729x2 => (10, 2, 50),
            Self::G729x3 => (10, 3, 33),
        }
    }

    /// Payload bytes per packet, as D-ITG computes them: `(int)(vad · frame · samples +
    /// header)`, at least [`DITG_MIN_PAYLOAD`].
    pub fn payload_bytes(self, header: VoipHeader, ditg_vad: bool) -> u32 {
        let (frame, samples, _) = self.model();
        let h = match header {
            VoipHeader::Rtp => 12.0,
            VoipHeader::Crtp => 2.0,
            VoipHeader::None => 0.0,
        };
        let vad = if ditg_vad { DITG_VAD_FACTOR } else { 1.0 };
        let bytes = (vad * f64::from(frame * samples) + h) as u32;
        bytes.max(DITG_MIN_PAYLOAD)
    }

    /// The RTP payload type (RFC 3551 Table 4) and clock rate of the codec.
    pub const fn rtp(self) -> crate::flow::RtpSpec {
        let payload_type = match self {
            Self::G711x1 | Self::G711x2 => 0,
            Self::G723x1 => 4,
            Self::G729x2 | Self::G729x3 => 18,
        };
        crate::flow::RtpSpec {
            payload_type,
            clock_rate_hz: 8000,
        }
    }

    /// The constant packet rate.
    pub const fn rate(self) -> Rate {
        Rate::MilliPps(self.model().2 as u64 * 1000)
    }
}

/// The bandwidth of a VoIP flow as D-ITG models it, at each layer, over one IP version.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Bandwidth {
    /// UDP payload bytes per packet (codec bytes and the RTP/CRTP header D-ITG counts).
    pub payload_bytes: u32,
    /// Packets per second.
    pub pps: f64,
    /// Payload bits per second (D-ITG's figure: 73.6 kbit/s for G.711.1 with RTP).
    pub payload_bps: f64,
    /// IP packet bits per second (payload, UDP and IP headers).
    pub ip_bps: f64,
    /// Ethernet frame bits per second (header, FCS, padding to 64 bytes).
    pub frame_bps: f64,
    /// Bits per second on the wire (frames, preamble, inter-frame gap).
    pub wire_bps: f64,
    /// Headers (IP, UDP and the RTP or CRTP header) as a share of each IP packet, the
    /// definition of Kharche & Patil §2: a 40-byte voice sample behind RTP is 40/80 = 50 % over
    /// IPv4 and 60/100 over IPv6.
    pub header_pct: f64,
}

impl Codec {
    /// The flow's bandwidth over `ip` (no fragmentation: every preset fits one packet).
    pub fn bandwidth(
        self,
        header: VoipHeader,
        ditg_vad: bool,
        ip: wire::overhead::Ip,
    ) -> Bandwidth {
        use wire::overhead::{carry, Transport, ETHERNET_MTU};
        let payload = self.payload_bytes(header, ditg_vad);
        let pps = self.rate().pps(payload);
        // The presets' payloads are tens to hundreds of bytes: always carried.
        let c = carry(ip, Transport::Udp, payload, ETHERNET_MTU)
            .unwrap_or_else(|e| unreachable!("a VoIP payload always fits: {e}"));
        let rtp = match header {
            VoipHeader::Rtp => 12,
            VoipHeader::Crtp => 2,
            VoipHeader::None => 0,
        }
        .min(payload);
        let per_second = |bytes: u64| bytes as f64 * 8.0 * pps;
        Bandwidth {
            payload_bytes: payload,
            pps,
            payload_bps: per_second(u64::from(payload)),
            ip_bps: per_second(c.ip_bytes),
            frame_bps: per_second(c.frame_bytes),
            wire_bps: per_second(c.wire_bytes),
            header_pct: (c.header_bytes + u64::from(rtp)) as f64 * 100.0 / c.ip_bytes as f64,
        }
    }
}

impl fmt::Display for Codec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::G711x1 => "g711.1",
            Self::G711x2 => "g711.2",
            Self::G723x1 => "g723.1",
            Self::G729x2 => "g729.2",
            Self::G729x3 => "g729.3",
        })
    }
}

/// An unknown codec name.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown codec '{0}': use g711.1, g711.2, g723.1, g729.2 or g729.3")]
pub struct UnknownCodec(String);

impl FromStr for Codec {
    type Err = UnknownCodec;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        // D-ITG spells them G.711.1 etc.; accept both.
        let t = s.trim().to_ascii_lowercase().replace("g.", "g");
        Self::ALL
            .into_iter()
            .find(|c| c.to_string() == t)
            .ok_or_else(|| UnknownCodec(s.to_owned()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn payloads_match_ditg_table() {
        // reference/peer-tools.md §3.2: RTP, CRTP, RTP+VAD, CRTP+VAD.
        let table = [
            (Codec::G711x1, [92, 82, 64, 54]),
            (Codec::G711x2, [172, 162, 116, 106]),
            (Codec::G723x1, [42, 32, 31, 21]),
            (Codec::G729x2, [32, 22, 25, 16]),
            (Codec::G729x3, [42, 32, 31, 21]),
        ];
        for (codec, [rtp, crtp, rtp_vad, crtp_vad]) in table {
            assert_eq!(codec.payload_bytes(VoipHeader::Rtp, false), rtp, "{codec}");
            assert_eq!(
                codec.payload_bytes(VoipHeader::Crtp, false),
                crtp,
                "{codec}"
            );
            assert_eq!(
                codec.payload_bytes(VoipHeader::Rtp, true),
                rtp_vad,
                "{codec}"
            );
            assert_eq!(
                codec.payload_bytes(VoipHeader::Crtp, true),
                crtp_vad,
                "{codec}"
            );
        }
    }

    #[test]
    fn payload_bit_rates_match_ditg() {
        // 73.6, 68.8, 8.736, 12.8 and 11.088 kbit/s of RTP payload (Kharche & Patil, D-ITG).
        let kbps = |c: Codec| {
            f64::from(c.payload_bytes(VoipHeader::Rtp, false)) * 8.0 * c.rate().pps(1) / 1000.0
        };
        assert_eq!(kbps(Codec::G711x1), 73.6);
        assert_eq!(kbps(Codec::G711x2), 68.8);
        assert_eq!(kbps(Codec::G723x1), 8.736);
        assert_eq!(kbps(Codec::G729x2), 12.8);
        assert_eq!(kbps(Codec::G729x3), 11.088);
    }

    #[test]
    fn the_default_talk_spurts_are_p59_with_a_38_75_percent_activity() {
        let t = talk_spurts(P59_TALK_SPURT_S, P59_PAUSE_S);
        assert!(t.validate().is_ok());
        let duty = t.duty_cycle().unwrap();
        assert!((duty - 1.004 / 2.591).abs() < 1e-12, "{duty}");
    }

    #[test]
    fn bandwidth_at_each_layer() {
        use wire::overhead::Ip;
        // G.711.1 with RTP: 92-byte payloads at 100 pkt/s. IP adds 28 or 48 bytes: the
        // 96.0 and 112.0 kbit/s of reference/peer-tools.md §3.2.
        let v4 = Codec::G711x1.bandwidth(VoipHeader::Rtp, false, Ip::V4);
        let v6 = Codec::G711x1.bandwidth(VoipHeader::Rtp, false, Ip::V6);
        assert_eq!(
            (v4.payload_bps, v4.ip_bps, v6.ip_bps),
            (73_600.0, 96_000.0, 112_000.0)
        );
        // Ethernet: +18 bytes a frame; on the wire +20 more.
        assert_eq!(v4.frame_bps, (92.0 + 28.0 + 18.0) * 800.0);
        assert_eq!(v4.wire_bps, (92.0 + 28.0 + 38.0) * 800.0);
        // Kharche & Patil §2's arithmetic: 40 bytes of voice behind RTP, UDP and IP.
        assert_eq!(v4.header_pct, 40.0 * 100.0 / 120.0);
        let g729 = Codec::G729x2.bandwidth(VoipHeader::Rtp, false, Ip::V4);
        assert_eq!(g729.payload_bytes, 32);
        assert_eq!(g729.header_pct, 40.0 * 100.0 / 60.0);
        // The small frames are padded to 64 bytes: 20 + 8 + 16 + 18 = 62 → 64.
        let tiny = Codec::G729x2.bandwidth(VoipHeader::Crtp, true, Ip::V4);
        assert_eq!(tiny.frame_bps, 64.0 * 8.0 * 50.0);
    }

    #[test]
    fn names_parse_in_both_spellings() {
        assert_eq!("G.711.1".parse::<Codec>().unwrap(), Codec::G711x1);
        assert_eq!("g729.3".parse::<Codec>().unwrap(), Codec::G729x3);
        assert!("opus".parse::<Codec>().is_err());
        assert_eq!(Codec::G723x1.rate(), Rate::MilliPps(26_000));
    }
}
