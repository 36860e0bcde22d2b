//! Latency over the tagged frames of a trial (RFC 8219 §7.2, §7.3).
//!
//! RFC 8219 §7.2 reports the Typical Latency (the median) and the Worst Case Latency
//! (the 99.9th percentile) of at least 500 tagged frames. §7.3.1 defines PDV as the
//! 99.9th percentile of the one-way delays minus their minimum (D_i − D_min) over every
//! frame of the trial; the tester timestamps only the tagged frames, so PDV here is over
//! the tagged frames, the same frames as the latency. §7.3.2 defines IPDV as the
//! difference of consecutive frames' delays (D_i − D_{i−1}, RFC 5481 §4.2); we report
//! the 99.9th percentile of its absolute value over consecutive *received* tagged frames
//! (a lost frame's neighbours become neighbours), so a positive and a negative swing
//! count alike.
//!
//! Percentiles are nearest-rank: the p-th of n sorted values is the value at rank
//! ⌈p·n⌉ (the median of an even count is the lower middle value), so every figure is a
//! measured delay, exact and deterministic.

/// The fewest received tagged frames RFC 8219 §7.2 accepts for a latency figure.
pub const MIN_TAGGED: u64 = 500;

/// Latency figures of one trial's tagged frames, ns.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct LatencyStats {
    /// Tagged frames received in time.
    pub samples: u64,
    /// Tagged frames not received in time (lost or late).
    pub lost: u64,
    /// The smallest one-way delay.
    pub min_ns: u64,
    /// The median delay: RFC 8219's Typical Latency.
    pub median_ns: u64,
    /// The 99.9th percentile: RFC 8219's Worst Case Latency.
    pub p99_9_ns: u64,
    /// The largest delay.
    pub max_ns: u64,
    /// PDV: the 99.9th percentile minus the minimum (RFC 8219 §7.3.1, over tagged frames).
    pub pdv_ns: u64,
    /// IPDV: the 99.9th percentile of |D_i − D_{i−1}| over consecutive received tagged
    /// frames (RFC 8219 §7.3.2); 0 with fewer than two samples.
    pub ipdv_p99_9_ns: i64,
    /// Fewer than [`MIN_TAGGED`] samples: the figures are computed but RFC 8219 §7.2 does
    /// not accept them as a benchmark; say so wherever they are shown.
    pub too_few: bool,
}

/// The latency figures of a trial's tagged frames: slot `k` is the delay of the `k`-th
/// tagged frame, `None` if it did not arrive in time. With no sample at all every delay
/// figure is 0; with fewer than [`MIN_TAGGED`] the result is flagged `too_few`.
pub fn latency_stats(tagged: &[Option<u64>]) -> LatencyStats {
    let mut delays: Vec<u64> = tagged.iter().flatten().copied().collect();
    let samples = delays.len() as u64;
    let lost = tagged.len() as u64 - samples;
    let mut ipdv: Vec<u64> = delays.windows(2).map(|w| w[1].abs_diff(w[0])).collect();
    let too_few = samples < MIN_TAGGED;
    if delays.is_empty() {
        return LatencyStats {
            lost,
            too_few,
            ..LatencyStats::default()
        };
    }
    delays.sort_unstable();
    ipdv.sort_unstable();
    let min_ns = delays[0];
    let p99_9_ns = nearest_rank(&delays, 999, 1000);
    LatencyStats {
        samples,
        lost,
        min_ns,
        median_ns: nearest_rank(&delays, 1, 2),
        p99_9_ns,
        max_ns: delays[delays.len() - 1],
        pdv_ns: p99_9_ns - min_ns,
        ipdv_p99_9_ns: if ipdv.is_empty() {
            0
        } else {
            nearest_rank(&ipdv, 999, 1000).min(i64::MAX as u64) as i64
        },
        too_few,
    }
}

/// The `num/den` quantile of `sorted` (not empty) by nearest rank: rank ⌈n·num/den⌉.
fn nearest_rank(sorted: &[u64], num: u64, den: u64) -> u64 {
    let n = sorted.len() as u64;
    let rank = (n * num).div_ceil(den).max(1);
    sorted[(rank - 1) as usize]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_thousand_known_delays() {
        // Delays 1000, 1001, …, 1999 ns in a shuffled order (k·7919 mod 1000 visits every
        // residue), every tenth slot before them lost.
        let mut tagged = Vec::new();
        for k in 0..1000u64 {
            if k % 10 == 0 {
                tagged.push(None);
            }
            tagged.push(Some(1000 + (k * 7919) % 1000));
        }
        let s = latency_stats(&tagged);
        assert_eq!(s.samples, 1000);
        assert_eq!(s.lost, 100);
        assert_eq!(s.min_ns, 1000);
        // Rank 500 of 1000 → the 500th smallest, 1499.
        assert_eq!(s.median_ns, 1499);
        // Rank 999 → 1998.
        assert_eq!(s.p99_9_ns, 1998);
        assert_eq!(s.max_ns, 1999);
        assert_eq!(s.pdv_ns, 998);
        assert!(!s.too_few);
        // d_k = 1000 + (919·k mod 1000): consecutive delays differ by +919 or, when the
        // residue wraps, by −81; 999 pairs, rank ⌈998.001⌉ = 999 → the largest, 919.
        assert_eq!(s.ipdv_p99_9_ns, 919);
    }

    #[test]
    fn ipdv_takes_the_absolute_difference_of_received_neighbours() {
        // 500 samples alternating 100 and 150, one spike to 1100 in the middle; a lost
        // slot between two received frames joins them.
        let mut tagged: Vec<Option<u64>> = (0..500)
            .map(|i| Some(if i % 2 == 0 { 100 } else { 150 }))
            .collect();
        tagged[250] = Some(1100);
        tagged.insert(100, None);
        let s = latency_stats(&tagged);
        assert_eq!((s.samples, s.lost, s.too_few), (500, 1, false));
        // Sorted: 100 ×249 (one 100 became the spike), 150 ×250, 1100. The median is
        // rank 250 → 150; the 99.9th percentile rank ⌈499.5⌉ = 500 → 1100.
        assert_eq!((s.min_ns, s.median_ns, s.max_ns), (100, 150, 1100));
        assert_eq!(s.p99_9_ns, 1100);
        assert_eq!(s.pdv_ns, 1000);
        // |ΔD|: 497 of 50 and two of 950/1000 around the spike (150→1100: 950,
        // 1100→150: 950); 499 pairs, rank ⌈499·0.999⌉ = 499 → the largest, 950.
        assert_eq!(s.ipdv_p99_9_ns, 950);
    }

    #[test]
    fn fewer_than_500_tagged_frames_are_flagged_not_dropped() {
        let tagged: Vec<Option<u64>> = (0..499).map(|i| Some(10 + i)).collect();
        let s = latency_stats(&tagged);
        assert!(s.too_few);
        assert_eq!(
            (s.samples, s.min_ns, s.max_ns, s.median_ns),
            (499, 10, 508, 259)
        );
        let none = latency_stats(&[None, None]);
        assert_eq!(
            none,
            LatencyStats {
                lost: 2,
                too_few: true,
                ..LatencyStats::default()
            }
        );
        let one = latency_stats(&[Some(7)]);
        assert_eq!((one.ipdv_p99_9_ns, one.pdv_ns, one.median_ns), (0, 0, 7));
    }
}
