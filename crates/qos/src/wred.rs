//! Weighted random early detection (WRED) with Cisco's semantics (`random-detect`,
//! `random-detect dscp-based`), the drop decision only: a queue asks it on every
//! arrival and keeps the packet or drops it.
//!
//! - **Average** (Floyd & Jacobson 1993, Cisco's `exponential-weighting-constant n`):
//!   on every arrival avg ← avg · (1 − 2⁻ⁿ) + q · 2⁻ⁿ, with q the instantaneous queue
//!   length in packets; n = 9 by default. The average is per queue, shared by every
//!   DSCP profile of the class.
//! - **Idle time** (not documented by Cisco; the F&J/DPDK choice, reference §7.4): when
//!   a packet arrives at an empty queue that has been idle for `idle`, the average first
//!   decays as if m = idle / `idle_packet_time` packets had arrived to an empty queue:
//!   avg ← avg · (1 − 2⁻ⁿ)^m. Without `idle_packet_time` the average does not decay.
//! - **Profile** per DSCP (min-th, max-th, mark-probability denominator D): below min-th
//!   nothing is dropped early; from min-th up to max-th the drop probability rises
//!   linearly from 0 to 1/D: pb = (avg − min) / (max − min) / D; at and above max-th
//!   every packet of that DSCP is dropped.
//! - **Count rule** (reference §7.1, a switch because the variants differ by 2×): with
//!   `count` the packets since the last drop, the probability applied is
//!   - `Bernoulli`: pa = pb (observed drop fraction ≈ pb, Cisco's "1 in D at max-th");
//!   - `Dpdk`: pa = pb / (2 − count · pb) (DPDK's `rte_red`, observed ≈ pb);
//!   - `FloydJacobson`: pa = pb / (1 − count · pb) (observed ≈ 2 · pb).

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};
use wire::time::Instant;

/// A drop profile.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, schemars::JsonSchema)]
pub struct Profile {
    /// Minimum threshold, packets.
    pub min_th: u32,
    /// Maximum threshold, packets.
    pub max_th: u32,
    /// Mark-probability denominator: 1/D at max-th.
    pub denominator: u32,
}

impl Profile {
    /// The drop probability at average `avg`.
    pub fn pb(&self, avg: f64) -> f64 {
        let (min, max) = (f64::from(self.min_th), f64::from(self.max_th));
        if avg < min {
            0.0
        } else if avg >= max {
            1.0
        } else {
            (avg - min) / (max - min) / f64::from(self.denominator)
        }
    }
}

/// How the probability grows with the packets since the last drop.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum CountRule {
    /// pa = pb.
    #[default]
    Bernoulli,
    /// pa = pb / (2 − count · pb).
    Dpdk,
    /// pa = pb / (1 − count · pb).
    FloydJacobson,
}

/// WRED parameters.
#[derive(Clone, Debug, PartialEq, Serialize, schemars::JsonSchema)]
pub struct WredParams {
    /// EWMA weight 2⁻ⁿ: n.
    pub weight_exp: u8,
    /// Profile per DSCP; a DSCP without one uses `default`.
    pub profiles: Vec<(u8, Profile)>,
    /// The profile of every other DSCP.
    pub default: Profile,
    /// The count rule.
    pub count_rule: CountRule,
    /// Transmission time of a typical packet, ns, for the idle decay; `None` = no decay.
    pub idle_packet_time_ns: Option<u64>,
}

/// A configuration WRED cannot use.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum WredError {
    /// min-th must be below max-th, and the denominator at least 1.
    #[error("profile {min_th}/{max_th}/{denominator}: need min-th < max-th and a denominator ≥ 1")]
    Profile {
        /// min-th.
        min_th: u32,
        /// max-th.
        max_th: u32,
        /// Denominator.
        denominator: u32,
    },
    /// n must be 1 to 16 (Cisco takes 1 to 16).
    #[error("exponential weighting constant {0}: 1 to 16")]
    Weight(u8),
}

/// What WRED decided for an arrival.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Decision {
    /// Keep it.
    Enqueue,
    /// Dropped at random (min-th ≤ avg < max-th).
    EarlyDrop,
    /// Dropped because avg ≥ max-th.
    ForcedDrop,
}

/// Counters per DSCP profile.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct WredStats {
    /// Arrivals seen.
    pub arrivals: u64,
    /// Random drops.
    pub early_drops: u64,
    /// Drops at or above max-th.
    pub forced_drops: u64,
}

/// The WRED state of one queue.
pub struct Wred {
    params: WredParams,
    avg: f64,
    /// Packets since the last drop, per profile index (`profiles.len()` = default).
    count: Vec<u64>,
    idle_since: Option<Instant>,
    rng: ChaCha8Rng,
    stats: Vec<WredStats>,
}

impl Wred {
    /// WRED with `params`, randomness seeded with `seed`.
    pub fn new(params: WredParams, seed: u64) -> Result<Self, WredError> {
        if !(1..=16).contains(&params.weight_exp) {
            return Err(WredError::Weight(params.weight_exp));
        }
        for p in params
            .profiles
            .iter()
            .map(|(_, p)| p)
            .chain(std::iter::once(&params.default))
        {
            if p.min_th >= p.max_th || p.denominator == 0 {
                return Err(WredError::Profile {
                    min_th: p.min_th,
                    max_th: p.max_th,
                    denominator: p.denominator,
                });
            }
        }
        let n = params.profiles.len() + 1;
        Ok(Self {
            params,
            avg: 0.0,
            count: vec![0; n],
            idle_since: Some(Instant::ZERO),
            rng: ChaCha8Rng::seed_from_u64(seed),
            stats: vec![WredStats::default(); n],
        })
    }

    /// The average queue length.
    pub fn avg(&self) -> f64 {
        self.avg
    }

    /// Counters: per profile in configuration order, then the default profile.
    pub fn stats(&self) -> &[WredStats] {
        &self.stats
    }

    fn profile(&self, dscp: u8) -> (usize, Profile) {
        self.params
            .profiles
            .iter()
            .position(|(d, _)| *d == dscp)
            .map_or((self.params.profiles.len(), self.params.default), |i| {
                (i, self.params.profiles[i].1)
            })
    }

    /// Tell WRED the queue went empty at `now` (for the idle decay).
    pub fn handle_empty(&mut self, now: Instant) {
        self.idle_since = Some(now);
    }

    /// Update the average for an arrival that finds `qlen` packets queued, and decide.
    pub fn handle_arrival(&mut self, qlen: usize, dscp: u8, now: Instant) -> Decision {
        let w = 1.0 / f64::from(1u32 << self.params.weight_exp);
        if qlen == 0 {
            if let (Some(since), Some(t)) = (self.idle_since, self.params.idle_packet_time_ns) {
                let m = now.saturating_duration_since(since).as_nanos() as f64 / t.max(1) as f64;
                self.avg *= (1.0 - w).powf(m);
            }
        }
        self.idle_since = None;
        self.avg = self.avg * (1.0 - w) + qlen as f64 * w;
        self.decide(dscp)
    }

    /// The decision at the current average, without updating it (for tests at a fixed
    /// average, and for a queue that updates the average itself).
    pub fn decide(&mut self, dscp: u8) -> Decision {
        let (i, p) = self.profile(dscp);
        self.stats[i].arrivals += 1;
        let pb = p.pb(self.avg);
        if pb == 0.0 {
            self.count[i] = 0;
            return Decision::Enqueue;
        }
        if self.avg >= f64::from(p.max_th) {
            self.count[i] = 0;
            self.stats[i].forced_drops += 1;
            return Decision::ForcedDrop;
        }
        let count = self.count[i] as f64;
        let pa = match self.params.count_rule {
            CountRule::Bernoulli => pb,
            CountRule::Dpdk => pb / (2.0 - count * pb),
            CountRule::FloydJacobson => pb / (1.0 - count * pb),
        };
        // A denominator at or below 0 means the count has run past 1/pb: drop now.
        let drop = !(pa > 0.0 && pa < 1.0) || self.rng.gen::<f64>() < pa;
        if drop {
            self.count[i] = 0;
            self.stats[i].early_drops += 1;
            Decision::EarlyDrop
        } else {
            self.count[i] += 1;
            Decision::Enqueue
        }
    }

    /// Set the average (for tests and for a class that shares one).
    pub fn set_avg(&mut self, avg: f64) {
        self.avg = avg;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const P3050: Profile = Profile {
        min_th: 30,
        max_th: 50,
        denominator: 10,
    };
    const P5575: Profile = Profile {
        min_th: 55,
        max_th: 75,
        denominator: 10,
    };

    fn params(rule: CountRule) -> WredParams {
        WredParams {
            weight_exp: 9,
            profiles: vec![(46, P5575)],
            default: P3050,
            count_rule: rule,
            idle_packet_time_ns: None,
        }
    }

    /// qos.md §6.4's table.
    #[test]
    fn the_drop_probability_rises_linearly_to_one_in_d_then_jumps_to_one() {
        for (p, avg, pb) in [
            (P3050, 29.9, 0.0),
            (P3050, 35.0, 0.025),
            (P3050, 40.0, 0.05),
            (P3050, 45.0, 0.075),
            (P3050, 49.0, 0.095),
            (P3050, 50.0, 1.0),
            (P5575, 60.0, 0.025),
            (P5575, 65.0, 0.05),
            (P5575, 70.0, 0.075),
            (P5575, 75.0, 1.0),
        ] {
            assert!((p.pb(avg) - pb).abs() < 1e-12, "{p:?} {avg}");
        }
    }

    fn observed(rule: CountRule, avg: f64, dscp: u8) -> f64 {
        let mut w = Wred::new(params(rule), 42).unwrap();
        w.set_avg(avg);
        let n = 200_000;
        let drops = (0..n)
            .filter(|_| w.decide(dscp) != Decision::Enqueue)
            .count();
        drops as f64 / n as f64
    }

    #[test]
    fn observed_early_drop_fractions_follow_the_count_rule() {
        // At pb = 0.05 (avg 40 on 30/50): Bernoulli ≈ 0.050, DPDK ≈ 0.0488, F&J ≈ 0.100;
        // each within 15 %.
        for (rule, want) in [
            (CountRule::Bernoulli, 0.050),
            (CountRule::Dpdk, 0.0488),
            (CountRule::FloydJacobson, 0.100),
        ] {
            let got = observed(rule, 40.0, 0);
            assert!((got - want).abs() < 0.15 * want, "{rule:?}: {got}");
        }
        // One shared average of 45: the 30/50 DSCP drops 7.5 %, the 55/75 one nothing;
        // at 52 the 30/50 DSCP drops everything, the 55/75 one still nothing.
        let got = observed(CountRule::Bernoulli, 45.0, 0);
        assert!((got - 0.075).abs() < 0.15 * 0.075, "{got}");
        assert_eq!(observed(CountRule::Bernoulli, 45.0, 46), 0.0);
        assert_eq!(observed(CountRule::Bernoulli, 52.0, 0), 1.0);
        assert_eq!(observed(CountRule::Bernoulli, 52.0, 46), 0.0);
    }

    #[test]
    fn the_average_converges_as_the_ewma_says() {
        let t = Instant::ZERO;
        let mut w = Wred::new(params(CountRule::Bernoulli), 1).unwrap();
        for _ in 0..512 {
            w.handle_arrival(50, 0, t);
        }
        assert!((w.avg() - 31.62).abs() < 0.01, "{}", w.avg());
        for _ in 0..512 {
            w.handle_arrival(50, 0, t);
        }
        assert!((w.avg() - 43.25).abs() < 0.01, "{}", w.avg());
        // At q = 75 from empty, avg_k = 75 · (1 − (1 − 2⁻⁹)^k) reaches 30 after 261.3
        // arrivals, 50 after 562.0 and 55 after 676.1: the 262nd, 562nd and 677th.
        let mut w = Wred::new(params(CountRule::Bernoulli), 1).unwrap();
        let mut reached = Vec::new();
        for i in 1..=700u32 {
            w.handle_arrival(75, 46, t);
            for th in [30.0, 50.0, 55.0] {
                if w.avg() >= th && !reached.iter().any(|(x, _)| *x == th) {
                    reached.push((th, i));
                }
            }
        }
        assert_eq!(reached, [(30.0, 262), (50.0, 562), (55.0, 677)]);
        // So a 75-packet burst into an empty queue never reaches min-th: no early drop.
        let mut w = Wred::new(params(CountRule::Bernoulli), 1).unwrap();
        let early = (0..75)
            .filter(|q| w.handle_arrival(*q, 0, t) != Decision::Enqueue)
            .count();
        assert_eq!(early, 0);
    }

    #[test]
    fn an_idle_queue_lets_the_average_decay() {
        let mut w = Wred::new(
            WredParams {
                idle_packet_time_ns: Some(1_200_000),
                ..params(CountRule::Bernoulli)
            },
            1,
        )
        .unwrap();
        w.set_avg(40.0);
        w.handle_empty(Instant::ZERO);
        // 512 packet times idle: avg · (1 − 1/512)^512 ≈ 40 · 0.3675, then the arrival.
        w.handle_arrival(0, 0, Instant::from_nanos(512 * 1_200_000));
        let want = 40.0 * (1.0 - 1.0 / 512.0f64).powi(512) * (1.0 - 1.0 / 512.0);
        assert!((w.avg() - want).abs() < 1e-9, "{} {want}", w.avg());
    }

    #[test]
    fn bad_profiles_are_refused() {
        let mut p = params(CountRule::Bernoulli);
        p.default.min_th = 50;
        assert!(Wred::new(p, 0).is_err());
        let p = WredParams {
            weight_exp: 0,
            ..params(CountRule::Bernoulli)
        };
        assert!(Wred::new(p, 0).is_err());
    }
}
