//! The offset between two hosts' clocks, from timestamped exchanges: the on-wire method
//! of NTP (RFC 5905 §8) with its minimum-delay filter (§10, the clock filter keeps the
//! sample of least round-trip delay).
//!
//! One exchange: the local host stamps its request at `t1` (its clock), the peer stamps
//! its arrival at `t2` and its reply at `t3` (the peer's clock), the local host stamps
//! the reply's arrival at `t4`. With θ the peer's clock minus ours:
//!
//! ```text
//! offset θ̂ = ((t2 − t1) + (t3 − t4)) / 2          RFC 5905 §8
//! delay  δ = (t4 − t1) − (t3 − t2)
//! ```
//!
//! Whatever the split of δ between the two directions (both one-way delays ≥ 0), the true
//! offset lies within θ̂ ± δ/2: the estimate of the least-delay sample carries that
//! bound, plus the stamps' resolution. The bound assumes the clocks do not drift apart
//! during the exchanges (a few round trips); a run's one-way delays carry it as it is.
//!
//! Pure: the caller stamps; this only does arithmetic. Times are ns on each host's own
//! clock (`CLOCK_REALTIME` in dualperf, the clock one-way delays use).

use serde::{Deserialize, Serialize};

/// One request/reply exchange, each stamp on its own host's clock (ns).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Exchange {
    /// Request sent (local clock).
    pub t1_ns: u64,
    /// Request received (peer clock).
    pub t2_ns: u64,
    /// Reply sent (peer clock).
    pub t3_ns: u64,
    /// Reply received (local clock).
    pub t4_ns: u64,
}

impl Exchange {
    /// Round-trip delay δ minus the peer's turnaround, ns (RFC 5905 §8); `None` when the
    /// stamps are inconsistent (reply before request on either host).
    pub fn delay_ns(&self) -> Option<u64> {
        let round = self.t4_ns.checked_sub(self.t1_ns)?;
        let turn = self.t3_ns.checked_sub(self.t2_ns)?;
        round.checked_sub(turn)
    }

    /// θ̂, the peer's clock minus ours, ns (RFC 5905 §8).
    pub fn offset_ns(&self) -> i64 {
        let a = i128::from(self.t2_ns) - i128::from(self.t1_ns);
        let b = i128::from(self.t3_ns) - i128::from(self.t4_ns);
        // Halved with floor rounding; clamped where i64 cannot hold it (292 years).
        ((a + b).div_euclid(2)).clamp(i128::from(i64::MIN), i128::from(i64::MAX)) as i64
    }
}

/// The estimated offset between two hosts' clocks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct OffsetEstimate {
    /// The peer's clock minus ours, ns: a one-way delay measured from us to the peer is
    /// `true delay + offset_ns`.
    pub offset_ns: i64,
    /// The true offset is within `offset_ns ± bound_ns`: half the least round-trip
    /// delay of the samples, plus the stamps' resolution. 0 when both ends read the
    /// same clock.
    pub bound_ns: u64,
    /// The least round-trip delay of the samples (δ of the sample used), ns.
    pub delay_min_ns: u64,
    /// Exchanges that gave a consistent sample.
    pub samples: u32,
    /// Both ends read one clock (one kernel: same boot id): the offset is exactly 0.
    pub same_clock: bool,
}

impl OffsetEstimate {
    /// Both ends read one clock: offset 0, bound 0.
    pub fn same_clock() -> Self {
        Self {
            offset_ns: 0,
            bound_ns: 0,
            delay_min_ns: 0,
            samples: 0,
            same_clock: true,
        }
    }
}

/// The minimum-delay filter over a session's exchanges.
#[derive(Clone, Debug, Default)]
pub struct OffsetFilter {
    best: Option<(u64, i64)>,
    samples: u32,
    resolution_ns: u64,
}

impl OffsetFilter {
    /// A filter whose estimate adds `resolution_ns` (the coarser of the two clocks'
    /// resolution) to the bound.
    pub fn new(resolution_ns: u64) -> Self {
        Self {
            resolution_ns,
            ..Self::default()
        }
    }

    /// Take one exchange; inconsistent stamps are ignored (returns false).
    pub fn handle_exchange(&mut self, x: Exchange) -> bool {
        let Some(delay) = x.delay_ns() else {
            return false;
        };
        self.samples += 1;
        if self.best.is_none_or(|(d, _)| delay < d) {
            self.best = Some((delay, x.offset_ns()));
        }
        true
    }

    /// The estimate from the least-delay sample so far; `None` before any.
    pub fn estimate(&self) -> Option<OffsetEstimate> {
        let (delay, offset) = self.best?;
        Some(OffsetEstimate {
            offset_ns: offset,
            // δ/2 rounded up, so the bound always covers the truth.
            bound_ns: delay.div_ceil(2) + self.resolution_ns,
            delay_min_ns: delay,
            samples: self.samples,
            same_clock: false,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A deterministic xorshift for the simulated delays.
    struct Rng(u64);
    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }
        fn below(&mut self, n: u64) -> u64 {
            self.next() % n
        }
    }

    /// An exchange in virtual time: true time `at`, the peer's clock ahead by `offset`,
    /// one-way delays `fwd` and `back`, the peer's turnaround `turn`.
    fn exchange(at: u64, offset: i64, fwd: u64, back: u64, turn: u64) -> Exchange {
        let peer = |t: u64| t.checked_add_signed(offset).unwrap();
        Exchange {
            t1_ns: at,
            t2_ns: peer(at + fwd),
            t3_ns: peer(at + fwd + turn),
            t4_ns: at + fwd + turn + back,
        }
    }

    #[test]
    fn symmetric_delays_give_the_offset_exactly() {
        let x = exchange(1_000_000_000, 123_456_789, 40_000, 40_000, 5_000);
        assert_eq!(x.offset_ns(), 123_456_789);
        assert_eq!(x.delay_ns(), Some(80_000));
        let x = exchange(10_000_000_000, -5_000_000_000, 7, 7, 0);
        assert_eq!(x.offset_ns(), -5_000_000_000);
    }

    #[test]
    fn asymmetry_moves_the_estimate_by_half_the_difference_within_the_bound() {
        // 100 µs out, 20 µs back: θ̂ = θ + (100 − 20)/2.
        let x = exchange(5_000_000, 1_000_000, 100_000, 20_000, 3_000);
        assert_eq!(x.offset_ns(), 1_000_000 + 40_000);
        let mut f = OffsetFilter::new(0);
        f.handle_exchange(x);
        let e = f.estimate().unwrap();
        assert_eq!(e.delay_min_ns, 120_000);
        assert_eq!(e.bound_ns, 60_000);
        assert!((e.offset_ns - 1_000_000).unsigned_abs() <= e.bound_ns);
    }

    #[test]
    fn the_least_delay_sample_wins_and_the_truth_is_always_inside_the_bound() {
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        for case in 0..500 {
            let offset = rng.below(20_000_000_000) as i64 - 10_000_000_000;
            let mut f = OffsetFilter::new(1);
            let mut least = u64::MAX;
            let mut at = 1_700_000_000_000_000_000u64;
            for _ in 0..8 {
                // Asymmetric paths: queueing on either side, independently.
                let fwd = 10_000 + rng.below(500_000);
                let back = 10_000 + rng.below(50_000);
                let turn = rng.below(20_000);
                least = least.min(fwd + back);
                assert!(f.handle_exchange(exchange(at, offset, fwd, back, turn)));
                at += 1_000_000;
            }
            let e = f.estimate().unwrap();
            assert_eq!(e.samples, 8);
            assert_eq!(e.delay_min_ns, least, "case {case}");
            assert_eq!(e.bound_ns, least.div_ceil(2) + 1);
            let miss = (e.offset_ns - offset).unsigned_abs();
            assert!(
                miss <= e.bound_ns,
                "case {case}: off by {miss} ns, bound {}",
                e.bound_ns
            );
        }
    }

    #[test]
    fn inconsistent_stamps_are_ignored() {
        let mut f = OffsetFilter::new(0);
        assert!(f.estimate().is_none());
        // The reply left the peer before the request arrived.
        let bad = Exchange {
            t1_ns: 10,
            t2_ns: 100,
            t3_ns: 50,
            t4_ns: 20,
        };
        assert!(!f.handle_exchange(bad));
        // The reply arrived before the request left.
        let bad = Exchange {
            t1_ns: 10,
            t2_ns: 100,
            t3_ns: 100,
            t4_ns: 5,
        };
        assert!(!f.handle_exchange(bad));
        assert!(f.estimate().is_none());
        assert!(f.handle_exchange(exchange(0, 0, 1, 1, 0)));
        assert_eq!(f.estimate().unwrap().samples, 1);
    }

    #[test]
    fn one_clock_means_offset_and_bound_zero() {
        let e = OffsetEstimate::same_clock();
        assert_eq!((e.offset_ns, e.bound_ns, e.same_clock), (0, 0, true));
    }
}
