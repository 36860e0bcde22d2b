//! RTP stream presets for the seed studies' real-time streams, which D-ITG has no model
//! for: H.323-style G.711 audio and H.261 CIF video (Bouras et al.), and the
//! streams of the WebAudio thesis.
//!
//! | preset | RTP payload type, clock | packets | payload (UDP) | rate |
//! |---|---|---|---|---|
//! | `g711` | 0 (PCMU), 8 kHz | one per 20 ms (`--ptime`) | 12 + 160 B | 64 kbit/s of audio |
//! | `webaudio` | 96 (dynamic), 8 kHz | one per 50 ms | 12 + 1250 B | 200 kbit/s of audio |
//! | `h261` | 31 (H261), 90 kHz | frames at 30000/2002 Hz, each cut into ≤ 1400-byte packets | 12 + 4 + up to 1384 B | 384 kbit/s of video in the mean |
//!
//! **G.711.** µ-law PCM at 8000 one-byte samples per second (ITU-T G.711), so a packet
//! of `ptime` ms carries `8 · ptime` bytes behind a 12-byte RTP header (RFC 3551 §4.5.14).
//! Bouras et al. (H.323 study) saw 294-byte frames on IPv4 and 314 on IPv6: that is a 30 ms packet (240 B of
//! audio + 12 RTP + 8 UDP + 20 IPv4 + 14 Ethernet = 294; IPv6 adds 20), i.e. `--ptime 30ms`.
//!
//! **WebAudio** (the WebAudio thesis): "every 50 ms, an audio frame (1250 bytes) with its RTP header
//! encapsulated in a UDP packet", 200 kbit/s. The thesis names no payload type or media
//! clock; we use the first dynamic payload type (96) and an 8 kHz clock, a choice.
//!
//! **H.261 CIF.** Bouras et al. (H.323 study) used OpenH323's H.261 codec at CIF resolution without giving
//! its rate. The model follows the videoconference literature: frame sizes with a gamma
//! marginal distribution and DAR(1) frame-to-frame correlation (Heyman, Tabatabai and
//! Lakshman, IEEE Trans. CSVT 2(1), 1992; for H.261 to H.264 conferencing software,
//! Domoxoudis et al., J. Computer Networks and Communications 2013, 614157, who find
//! strong correlation only when the encoder is not rate-constrained). Its parameters are
//! our choices, not fits: 384 kbit/s in the mean (H.261's p × 64 kbit/s with p = 6, a
//! usual ISDN conferencing rate), half H.261's 29.97 Hz picture clock as the frame rate
//! (14.985 frames/s, so 3203 bytes per frame in the mean), gamma shape 4 (coefficient of
//! variation 0.5), and correlation 0 (a rate-constrained encoder, as OpenH323's was).
//! Packets carry the 4-byte H.261 payload header of RFC 4587 in their size, share the
//! frame's 90 kHz timestamp, and the last packet of a frame has the marker bit.

use core::fmt;
use core::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::distribution::Dist;
use crate::flow::{RtpSpec, VideoSpec};
use crate::units::Rate;

/// An RTP stream preset.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Stream {
    /// G.711 µ-law audio, 64 kbit/s.
    G711,
    /// WebAudio: 1250 bytes every 50 ms.
    WebAudio,
    /// H.261 CIF-like video.
    H261,
}

/// What a stream preset sends.
#[derive(Clone, Debug, PartialEq)]
pub struct StreamModel {
    /// Packets per second (frames per second for video).
    pub rate: Rate,
    /// UDP payload bytes per packet (the largest, for video).
    pub size_bytes: u32,
    /// The RTP header's payload type and clock.
    pub rtp: RtpSpec,
    /// The frame model of a video stream.
    pub video: Option<VideoSpec>,
}

/// RTP header bytes.
const RTP: u32 = wire::rtp::HEADER_LEN as u32;
/// H.261 mean video rate, bit/s.
pub const H261_MEAN_BPS: f64 = 384_000.0;
/// H.261 frame interval: two pictures of the 30000/1001 Hz picture clock, 66 733 333.3 ns,
/// rounded down to whole ns (14.985 frames/s); the 90 kHz timestamps (6006 ticks a frame)
/// lose one tick in about 18 minutes.
pub const H261_FRAME_NS: u64 = 66_733_333;
/// H.261 gamma shape of frame sizes.
pub const H261_GAMMA_SHAPE: f64 = 4.0;
/// Largest H.261 packet payload (UDP), bytes: fits a 1500-byte MTU on IPv6.
pub const H261_MAX_PAYLOAD: u32 = 1400;
/// RFC 4587 H.261 payload header, bytes.
pub const H261_HEADER: u32 = 4;

impl Stream {
    /// Every preset.
    pub const ALL: [Self; 3] = [Self::G711, Self::WebAudio, Self::H261];

    /// The preset's packets; `ptime_ms` sets G.711's packetisation (default 20).
    pub fn model(self, ptime_ms: Option<u32>) -> StreamModel {
        match self {
            Self::G711 => {
                let ptime = ptime_ms.unwrap_or(20).max(1);
                StreamModel {
                    // Exactly one packet per ptime, so the 8 kHz timestamps step by
                    // 8·ptime without drift.
                    rate: Rate::EveryNs(u64::from(ptime) * 1_000_000),
                    size_bytes: RTP + 8 * ptime,
                    rtp: RtpSpec {
                        payload_type: 0,
                        clock_rate_hz: 8000,
                    },
                    video: None,
                }
            }
            Self::WebAudio => StreamModel {
                rate: Rate::MilliPps(20_000),
                size_bytes: RTP + 1250,
                rtp: RtpSpec {
                    payload_type: 96,
                    clock_rate_hz: 8000,
                },
                video: None,
            },
            Self::H261 => {
                let mean_frame = H261_MEAN_BPS / 8.0 * (H261_FRAME_NS as f64 / 1e9);
                StreamModel {
                    // 1001·2/30000 s per frame, exactly: 6006 ticks of the 90 kHz clock.
                    rate: Rate::EveryNs(H261_FRAME_NS),
                    size_bytes: H261_MAX_PAYLOAD,
                    rtp: RtpSpec {
                        payload_type: 31,
                        clock_rate_hz: 90_000,
                    },
                    video: Some(VideoSpec {
                        frame_bytes: Dist::Gamma {
                            shape: H261_GAMMA_SHAPE,
                            scale: mean_frame / H261_GAMMA_SHAPE,
                        },
                        correlation: 0.0,
                        max_chunk_bytes: H261_MAX_PAYLOAD - RTP - H261_HEADER,
                        header_bytes: RTP + H261_HEADER,
                    }),
                }
            }
        }
    }
}

impl fmt::Display for Stream {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::G711 => "g711",
            Self::WebAudio => "webaudio",
            Self::H261 => "h261",
        })
    }
}

/// An unknown stream preset.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown stream '{0}': use g711, webaudio or h261")]
pub struct UnknownStream(String);

impl FromStr for Stream {
    type Err = UnknownStream;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let t = s.trim().to_ascii_lowercase().replace(['.', '-'], "");
        Self::ALL
            .into_iter()
            .find(|p| p.to_string() == t)
            .ok_or_else(|| UnknownStream(s.to_owned()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::flow::{FlowSpec, MarkingSpec, StopSpec};
    use crate::schedule::Schedule;
    use wire::control::{Meter, Protocol};
    use wire::time::{Duration, Instant};

    fn spec(m: &StreamModel, secs: u64) -> FlowSpec {
        FlowSpec {
            protocol: Protocol::Udp,
            meter: Meter::Owd,
            rate: m.rate,
            size_bytes: m.size_bytes,
            stop: StopSpec {
                duration: Some(Duration::from_secs(secs)),
                ..Default::default()
            },
            start_offset: Duration::ZERO,
            marking: MarkingSpec::default(),
            nodelay: false,
            label: String::new(),
            rtp: Some(m.rtp),
            idt_ms: None,
            size_dist: None,
            seed: 11,
            on_off_ms: None,
            video: m.video.clone(),
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

    fn drain(s: &mut Schedule) -> Vec<crate::Transmit> {
        std::iter::from_fn(|| s.poll_timeout().and_then(|t| s.poll_transmit(t))).collect()
    }

    #[test]
    fn audio_presets_have_their_papers_rates() {
        // G.711: 64 kbit/s of audio; the 294-byte IPv4 frames are 30 ms packets.
        let g = Stream::G711.model(None);
        assert_eq!((g.rate.pps(1), g.size_bytes), (50.0, 172));
        // 30 ms packets are exactly 30 ms apart, so RTP timestamps step by 240, always.
        let mut g30s = spec(&Stream::G711.model(Some(30)), 100);
        g30s.rtp = Some(g.rtp);
        let sent = drain(&mut Schedule::new(&g30s, Instant::ZERO).unwrap());
        assert_eq!(sent.len(), 3334);
        assert!(sent
            .windows(2)
            .all(|w| w[1].scheduled - w[0].scheduled == Duration::from_millis(30)));
        assert_eq!(f64::from(g.size_bytes - 12) * 8.0 * g.rate.pps(1), 64_000.0);
        let g30 = Stream::G711.model(Some(30));
        assert_eq!(g30.size_bytes + 8 + 20 + 14, 294);
        assert_eq!(g30.size_bytes + 8 + 40 + 14, 314);
        // WebAudio: 1250 B every 50 ms = 200 kbit/s (WebAudio thesis).
        let w = Stream::WebAudio.model(None);
        let s = spec(&w, 10);
        let sent = drain(&mut Schedule::new(&s, Instant::ZERO).unwrap());
        assert_eq!(sent.len(), 200);
        assert_eq!(
            sent[1].scheduled - sent[0].scheduled,
            Duration::from_millis(50)
        );
        let audio_bits: u64 = sent.iter().map(|t| u64::from(t.size_bytes - 12) * 8).sum();
        assert_eq!(audio_bits, 200_000 * 10);
        assert!(sent[0].marker && !sent[1].marker);
    }

    #[test]
    fn h261_frames_are_cut_into_packets_with_the_mean_rate_of_the_model() {
        let m = Stream::H261.model(None);
        let s = spec(&m, 600);
        let sent = drain(&mut Schedule::new(&s, Instant::ZERO).unwrap());
        // 600 s at one frame per 66 733 333 ns: frames 0..=8991 start before the end.
        // Frames are runs of packets sharing a deadline, the last of each run marked.
        let frames: Vec<&[crate::Transmit]> =
            sent.chunk_by(|a, b| a.scheduled == b.scheduled).collect();
        assert_eq!(frames.len(), 8992);
        for f in &frames {
            assert!(f.last().unwrap().marker);
            assert!(f[..f.len() - 1].iter().all(|t| !t.marker));
            assert!(f.iter().all(|t| t.size_bytes <= 1400));
            assert!(f[..f.len() - 1].iter().all(|t| t.size_bytes == 1400));
        }
        // Coded bytes per frame: gamma, mean 3203.2 B, σ = mean/2; over 8991 frames
        // the sample mean is within 5σ/√N = 84 B.
        let coded: Vec<f64> = frames
            .iter()
            .map(|f| f.iter().map(|t| f64::from(t.size_bytes - 16)).sum())
            .collect();
        let mean = coded.iter().sum::<f64>() / coded.len() as f64;
        assert!((mean - 3203.2).abs() < 84.0, "mean frame {mean} B");
        // The expected packet count from the CDF agrees with the schedule's.
        let per_frame = m.video.as_ref().unwrap().mean_packets_per_frame().unwrap();
        let got = sent.len() as f64 / frames.len() as f64;
        assert!((per_frame - got).abs() < 0.05, "{per_frame} vs {got}");
        assert!(s.mean_pps().unwrap() > 14.985 * 2.0);
    }

    #[test]
    fn dar1_correlation_repeats_frame_sizes() {
        let m = Stream::H261.model(None);
        let mut s = spec(&m, 200);
        s.video.as_mut().unwrap().correlation = 0.9;
        let sent = drain(&mut Schedule::new(&s, Instant::ZERO).unwrap());
        let coded: Vec<u32> = sent
            .chunk_by(|a, b| a.scheduled == b.scheduled)
            .map(|f| f.iter().map(|t| t.size_bytes - 16).sum())
            .collect();
        let repeats = coded.windows(2).filter(|w| w[0] == w[1]).count() as f64;
        let p = repeats / (coded.len() - 1) as f64;
        // A repeat happens with probability 0.9 (a fresh gamma draw never repeats):
        // over ~3000 frames σ ≈ 0.0055.
        assert!((p - 0.9).abs() < 0.03, "repeat fraction {p}");
        s.video.as_mut().unwrap().correlation = 1.5;
        assert!(Schedule::new(&s, Instant::ZERO).is_err());
    }

    #[test]
    fn names_parse() {
        assert_eq!("H.261".parse::<Stream>().unwrap(), Stream::H261);
        assert_eq!("WebAudio".parse::<Stream>().unwrap(), Stream::WebAudio);
        assert!("h264".parse::<Stream>().is_err());
    }
}
