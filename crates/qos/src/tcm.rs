//! Three-colour markers: the single-rate (srTCM, RFC 2697) and two-rate (trTCM,
//! RFC 2698) meters, colour-blind and colour-aware. They count IP bytes (the caller
//! passes the IP packet's length) and keep their token buckets in exact integer
//! arithmetic ([`crate::bucket`]).
//!
//! **srTCM** (RFC 2697 §3): buckets C (depth CBS) and E (depth EBS) start full. Tokens
//! arrive at CIR: into C while C is below CBS, else into E while E is below EBS, else
//! they are lost. A packet of B bytes is, colour-blind, green if Tc ≥ B (Tc −= B), else
//! yellow if Te ≥ B (Te −= B), else red. Colour-aware (§4): green only if it was green
//! and Tc ≥ B; yellow if it was green or yellow and Te ≥ B; else red.
//!
//! **trTCM** (RFC 2698 §3): buckets P (depth PBS, at PIR) and C (depth CBS, at CIR)
//! fill independently. Colour-blind: red if Tp < B; else yellow if Tc < B (Tp −= B);
//! else green (Tp −= B, Tc −= B). Colour-aware: red if it was red or Tp < B; else
//! yellow if it was yellow or Tc < B (Tp −= B); else green (both −= B).

use serde::Serialize;
use wire::time::Instant;

use crate::bucket::Bucket;

/// A packet's colour.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Colour {
    /// Within the committed rate and burst.
    Green,
    /// Within the excess burst (srTCM) or the peak rate (trTCM).
    Yellow,
    /// Beyond.
    Red,
}

/// Packets and bytes by colour.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct ColourStats {
    /// Green packets.
    pub green_packets: u64,
    /// Yellow packets.
    pub yellow_packets: u64,
    /// Red packets.
    pub red_packets: u64,
    /// Green bytes.
    pub green_bytes: u64,
    /// Yellow bytes.
    pub yellow_bytes: u64,
    /// Red bytes.
    pub red_bytes: u64,
}

impl ColourStats {
    fn count(&mut self, c: Colour, bytes: usize) {
        let b = bytes as u64;
        match c {
            Colour::Green => {
                self.green_packets += 1;
                self.green_bytes += b;
            }
            Colour::Yellow => {
                self.yellow_packets += 1;
                self.yellow_bytes += b;
            }
            Colour::Red => {
                self.red_packets += 1;
                self.red_bytes += b;
            }
        }
    }
}

/// srTCM parameters (RFC 2697 §2).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct SrTcmParams {
    /// Committed information rate, bit/s.
    pub cir_bps: u64,
    /// Committed burst size, bytes.
    pub cbs_bytes: u64,
    /// Excess burst size, bytes.
    pub ebs_bytes: u64,
}

/// A single-rate three-colour marker.
#[derive(Clone, Debug)]
pub struct SrTcm {
    params: SrTcmParams,
    c: Bucket,
    e: Bucket,
    stats: ColourStats,
}

impl SrTcm {
    /// A meter with both buckets full at `now`.
    pub fn new(params: SrTcmParams, now: Instant) -> Self {
        Self {
            params,
            c: Bucket::full(params.cir_bps, params.cbs_bytes, now),
            // E only fills from C's overflow: its own rate is 0.
            e: Bucket::full(0, params.ebs_bytes, now),
            stats: ColourStats::default(),
        }
    }

    /// The parameters.
    pub fn params(&self) -> SrTcmParams {
        self.params
    }

    fn fill(&mut self, now: Instant) {
        let over = self.c.fill(now);
        self.e.fill(now);
        self.e.add_scaled(over);
    }

    /// Colour a packet of `bytes` arriving at `now`; `pre` is its colour for the
    /// colour-aware mode, `None` for colour-blind.
    pub fn mark(&mut self, bytes: usize, now: Instant, pre: Option<Colour>) -> Colour {
        self.fill(now);
        let pre = pre.unwrap_or(Colour::Green);
        let c = if pre == Colour::Green && self.c.has(bytes) {
            self.c.take(bytes);
            Colour::Green
        } else if pre != Colour::Red && self.e.has(bytes) {
            self.e.take(bytes);
            Colour::Yellow
        } else {
            Colour::Red
        };
        self.stats.count(c, bytes);
        c
    }

    /// Counts by colour.
    pub fn stats(&self) -> &ColourStats {
        &self.stats
    }
}

/// trTCM parameters (RFC 2698 §2).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct TrTcmParams {
    /// Committed information rate, bit/s.
    pub cir_bps: u64,
    /// Committed burst size, bytes.
    pub cbs_bytes: u64,
    /// Peak information rate, bit/s (≥ CIR).
    pub pir_bps: u64,
    /// Peak burst size, bytes.
    pub pbs_bytes: u64,
}

/// A two-rate three-colour marker.
#[derive(Clone, Debug)]
pub struct TrTcm {
    params: TrTcmParams,
    c: Bucket,
    p: Bucket,
    stats: ColourStats,
}

impl TrTcm {
    /// A meter with both buckets full at `now`.
    pub fn new(params: TrTcmParams, now: Instant) -> Self {
        Self {
            params,
            c: Bucket::full(params.cir_bps, params.cbs_bytes, now),
            p: Bucket::full(params.pir_bps, params.pbs_bytes, now),
            stats: ColourStats::default(),
        }
    }

    /// The parameters.
    pub fn params(&self) -> TrTcmParams {
        self.params
    }

    /// Colour a packet of `bytes` arriving at `now`; `pre` as for [`SrTcm::mark`].
    pub fn mark(&mut self, bytes: usize, now: Instant, pre: Option<Colour>) -> Colour {
        self.c.fill(now);
        self.p.fill(now);
        let pre = pre.unwrap_or(Colour::Green);
        let c = if pre == Colour::Red || !self.p.has(bytes) {
            Colour::Red
        } else if pre == Colour::Yellow || !self.c.has(bytes) {
            self.p.take(bytes);
            Colour::Yellow
        } else {
            self.p.take(bytes);
            self.c.take(bytes);
            Colour::Green
        };
        self.stats.count(c, bytes);
        c
    }

    /// Counts by colour.
    pub fn stats(&self) -> &ColourStats {
        &self.stats
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    fn sr() -> SrTcmParams {
        SrTcmParams {
            cir_bps: 1_000_000,
            cbs_bytes: 10_000,
            ebs_bytes: 10_000,
        }
    }

    /// (green, yellow, red) for `n` packets of 1000 B every `gap_ms`.
    fn run(mut mark: impl FnMut(usize, Instant) -> Colour, n: u64, gap_ns: u64) -> (u64, u64, u64) {
        let mut c = (0, 0, 0);
        for i in 0..n {
            match mark(1000, Instant::from_nanos(i * gap_ns)) {
                Colour::Green => c.0 += 1,
                Colour::Yellow => c.1 += 1,
                Colour::Red => c.2 += 1,
            }
        }
        c
    }

    /// qos.md §6.2: CIR 1 Mbit/s, CBS = EBS = 10,000 B, 1000 B every 4 ms (2 Mbit/s).
    #[test]
    fn srtcm_colours_a_2_mbit_stream_as_the_reference_table() {
        let mut m = SrTcm::new(sr(), Instant::ZERO);
        assert_eq!(
            run(|b, t| m.mark(b, t, None), 2500, 4 * MS),
            (1259, 10, 1231)
        );
        assert_eq!(m.stats().green_bytes, 1_259_000);
        // At 0.8 Mbit/s (every 10 ms) everything is green.
        let mut m = SrTcm::new(sr(), Instant::ZERO);
        assert_eq!(run(|b, t| m.mark(b, t, None), 1000, 10 * MS), (1000, 0, 0));
        // Colour-aware, every packet pre-coloured yellow: C overflows into E.
        let mut m = SrTcm::new(sr(), Instant::ZERO);
        assert_eq!(
            run(|b, t| m.mark(b, t, Some(Colour::Yellow)), 2500, 4 * MS),
            (0, 1259, 1241)
        );
    }

    #[test]
    fn srtcm_burst_after_idle_and_boundaries() {
        // After 1 s idle, 30 × 1000 B back to back at 10 Mbit/s (one every 0.8 ms).
        let mut m = SrTcm::new(sr(), Instant::ZERO);
        let start = 1_000 * MS;
        let seq: String = (0..30)
            .map(
                |i| match m.mark(1000, Instant::from_nanos(start + i * 800_000), None) {
                    Colour::Green => 'G',
                    Colour::Yellow => 'Y',
                    Colour::Red => 'R',
                },
            )
            .collect();
        assert_eq!(seq, "GGGGGGGGGGGYYYYYYYYYGYRRRRRRRR");
        // Boundaries on a fresh meter (EBS 20,000 B, so CBS + 1 fits E): CBS − 1 is
        // green, CBS + 1 yellow, EBS + 1 red.
        let t0 = Instant::ZERO;
        let wide = SrTcmParams {
            ebs_bytes: 20_000,
            ..sr()
        };
        assert_eq!(SrTcm::new(wide, t0).mark(9_999, t0, None), Colour::Green);
        assert_eq!(SrTcm::new(wide, t0).mark(10_001, t0, None), Colour::Yellow);
        assert_eq!(SrTcm::new(wide, t0).mark(20_001, t0, None), Colour::Red);
        // With CBS = EBS a packet above CBS fits neither bucket (RFC 2697 §3): red.
        assert_eq!(SrTcm::new(sr(), t0).mark(10_001, t0, None), Colour::Red);
    }

    /// qos.md §6.3: CIR 1, PIR 1.5 Mbit/s, CBS = PBS = 10,000 B, the same stream.
    #[test]
    fn trtcm_colours_a_2_mbit_stream_as_the_reference_table() {
        let p = TrTcmParams {
            cir_bps: 1_000_000,
            cbs_bytes: 10_000,
            pir_bps: 1_500_000,
            pbs_bytes: 10_000,
        };
        let mut m = TrTcm::new(p, Instant::ZERO);
        assert_eq!(
            run(|b, t| m.mark(b, t, None), 2500, 4 * MS),
            (1259, 625, 616)
        );
        let mut m = TrTcm::new(p, Instant::ZERO);
        assert_eq!(
            run(|b, t| m.mark(b, t, Some(Colour::Yellow)), 2500, 4 * MS),
            (0, 1884, 616)
        );
        // Pre-coloured red stays red.
        let mut m = TrTcm::new(p, Instant::ZERO);
        assert_eq!(m.mark(100, Instant::ZERO, Some(Colour::Red)), Colour::Red);
    }
}
