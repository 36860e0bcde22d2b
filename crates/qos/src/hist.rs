//! A log-linear histogram of nanosecond values, for delay percentiles at line rate
//! without keeping every sample.
//!
//! Values below 64 have a bucket each; above, every power of two is cut into 64 equal
//! buckets (HdrHistogram's layout with 6 significant bits), so a reported percentile is
//! within 1/64 (1.6 %) below the true sample. The exact minimum, maximum, count and sum
//! are kept beside the buckets, and a percentile is clamped into [min, max], so constant
//! samples come back exactly.

use serde::{Deserialize, Serialize};

const SUB_BITS: u32 = 6;
const SUB: u64 = 1 << SUB_BITS;

/// The histogram.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Histogram {
    counts: Vec<u64>,
    n: u64,
    sum: u128,
    min: u64,
    max: u64,
}

fn index(v: u64) -> usize {
    if v < SUB {
        return v as usize;
    }
    let e = 63 - v.leading_zeros(); // floor(log2 v) ≥ SUB_BITS
    let shift = e - SUB_BITS;
    let sub = (v >> shift) - SUB;
    (SUB + u64::from(shift) * SUB + sub) as usize
}

/// The smallest value of bucket `i`.
fn low(i: usize) -> u64 {
    let i = i as u64;
    if i < SUB {
        return i;
    }
    let shift = (i - SUB) / SUB;
    let sub = (i - SUB) % SUB;
    (SUB + sub) << shift
}

impl Histogram {
    /// Record one value.
    pub fn record(&mut self, v: u64) {
        let i = index(v);
        if self.counts.len() <= i {
            self.counts.resize(i + 1, 0);
        }
        self.counts[i] += 1;
        if self.n == 0 {
            self.min = v;
            self.max = v;
        } else {
            self.min = self.min.min(v);
            self.max = self.max.max(v);
        }
        self.n += 1;
        self.sum += u128::from(v);
    }

    /// Number of values.
    pub fn count(&self) -> u64 {
        self.n
    }

    /// The `q`-quantile (0 ≤ q ≤ 1) by nearest rank, to the bucket's lower bound and
    /// clamped into [min, max]; `None` when empty or `q` is out of range.
    pub fn quantile(&self, q: f64) -> Option<u64> {
        if self.n == 0 || !(0.0..=1.0).contains(&q) {
            return None;
        }
        let rank = ((q * self.n as f64).ceil() as u64).clamp(1, self.n);
        if rank == self.n {
            return Some(self.max);
        }
        let mut seen = 0;
        for (i, c) in self.counts.iter().enumerate() {
            seen += c;
            if seen >= rank {
                return Some(low(i).clamp(self.min, self.max));
            }
        }
        Some(self.max)
    }

    /// Summary for reports.
    pub fn summary(&self) -> Summary {
        Summary {
            count: self.n,
            min_ns: (self.n > 0).then_some(self.min),
            mean_ns: (self.n > 0).then(|| self.sum as f64 / self.n as f64),
            p50_ns: self.quantile(0.5),
            p90_ns: self.quantile(0.9),
            p99_ns: self.quantile(0.99),
            max_ns: (self.n > 0).then_some(self.max),
        }
    }
}

/// Percentiles of a [`Histogram`] (`null` when there are no values).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Summary {
    /// Values recorded.
    pub count: u64,
    /// Smallest, exact.
    pub min_ns: Option<u64>,
    /// Mean, exact.
    pub mean_ns: Option<f64>,
    /// Median (nearest rank, within 1.6 % below).
    pub p50_ns: Option<u64>,
    /// 90th percentile.
    pub p90_ns: Option<u64>,
    /// 99th percentile.
    pub p99_ns: Option<u64>,
    /// Largest, exact.
    pub max_ns: Option<u64>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_tile_the_line_without_gaps() {
        for i in 0..3000 {
            assert_eq!(index(low(i)), i);
            assert_eq!(
                index(low(i + 1) - 1),
                i,
                "bucket {i} ends where the next starts"
            );
        }
        assert_eq!(index(u64::MAX) + 1, 64 + 58 * 64);
    }

    #[test]
    fn quantiles_are_within_a_bucket_below_and_constants_are_exact() {
        let mut h = Histogram::default();
        assert_eq!(h.quantile(0.5), None);
        for _ in 0..10 {
            h.record(1_200_000);
        }
        assert_eq!(h.quantile(0.5), Some(1_200_000));
        assert_eq!(h.quantile(0.99), Some(1_200_000));
        let mut h = Histogram::default();
        for v in 1..=1000u64 {
            h.record(v * 1000);
        }
        let p50 = h.quantile(0.5).unwrap();
        assert!(
            p50 <= 500_000 && p50 as f64 >= 500_000.0 * (1.0 - 1.0 / 64.0),
            "{p50}"
        );
        assert_eq!(h.quantile(0.0), Some(1000));
        assert_eq!(
            h.quantile(1.0),
            Some(1_000_000),
            "the last rank is the maximum"
        );
        // Rank 999 is 999,000, in the bucket [121·8192, 122·8192).
        assert_eq!(h.quantile(0.999), Some(121 * 8192));
        let s = h.summary();
        assert_eq!(
            (s.count, s.min_ns, s.max_ns),
            (1000, Some(1000), Some(1_000_000))
        );
        assert_eq!(s.mean_ns, Some(500_500.0));
    }
}
