//! Descriptive statistics shared by every metric (and reusable by other
//! crates): mean, population and sample standard deviation, and nearest-rank
//! percentiles.
//!
//! Percentile method: **nearest rank** (Hyndman–Fan definition 1, the
//! inverse of the empirical distribution function, which is how the IPPM
//! framework, RFC 2330, defines percentiles): the p-th
//! percentile of `N` sorted values is the value at 1-based rank
//! `max(1, ceil(p/100 · N))`. It always returns an observed value, never an
//! interpolation, so integer samples give integer percentiles.

use serde::{Deserialize, Serialize};

/// Summary statistics of a finite, non-empty sample.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Stats {
    /// Number of values.
    pub count: u64,
    /// Arithmetic mean.
    pub mean: f64,
    /// Smallest value.
    pub min: f64,
    /// Largest value.
    pub max: f64,
    /// Population standard deviation, `sqrt(Σ(x−mean)² / N)` (what D-ITG
    /// reports as "Delay standard deviation").
    pub stddev_population: f64,
    /// Sample (Bessel-corrected) standard deviation, `sqrt(Σ(x−mean)² / (N−1))`,
    /// for confidence intervals over repetitions; `None` when `N < 2`.
    pub stddev_sample: Option<f64>,
}

impl Stats {
    /// Statistics of `values`; `None` when empty or when any value is not
    /// finite.
    pub fn from_f64(values: &[f64]) -> Option<Self> {
        if values.is_empty() || values.iter().any(|v| !v.is_finite()) {
            return None;
        }
        let n = values.len() as f64;
        let mean = values.iter().sum::<f64>() / n;
        Some(Self::with_mean(values.iter().copied(), values.len(), mean))
    }

    /// Statistics of integer `values` (e.g. delays in ns); `None` when empty.
    ///
    /// The sum is taken exactly in `i128`, so the mean is the correctly
    /// rounded quotient and exact whenever it is representable.
    pub fn from_i64(values: &[i64]) -> Option<Self> {
        if values.is_empty() {
            return None;
        }
        let mean = mean_i64(values);
        Some(Self::with_mean(
            values.iter().map(|&v| v as f64),
            values.len(),
            mean,
        ))
    }

    /// Second pass of the two-pass algorithm: spread around a known mean.
    fn with_mean(values: impl Iterator<Item = f64>, len: usize, mean: f64) -> Self {
        let mut min = f64::INFINITY;
        let mut max = f64::NEG_INFINITY;
        let mut squares = 0.0;
        for v in values {
            min = min.min(v);
            max = max.max(v);
            squares += (v - mean) * (v - mean);
        }
        let n = len as f64;
        Self {
            count: len as u64,
            mean,
            min,
            max,
            stddev_population: (squares / n).sqrt(),
            stddev_sample: (len >= 2).then(|| (squares / (n - 1.0)).sqrt()),
        }
    }
}

/// Exact-sum mean of integers; `0.0` for an empty slice (callers check).
pub(crate) fn mean_i64(values: &[i64]) -> f64 {
    let sum: i128 = values.iter().map(|&v| i128::from(v)).sum();
    sum as f64 / values.len().max(1) as f64
}

/// 1-based nearest rank of the `pct`-th percentile among `n` sorted values:
/// `max(1, ceil(pct/100 · n))`; `None` when `n == 0` or `pct` is outside
/// `[0, 100]`.
pub fn nearest_rank(n: usize, pct: f64) -> Option<usize> {
    if n == 0 || !(0.0..=100.0).contains(&pct) {
        return None;
    }
    // `pct * n` first: exact for integer percentiles, so e.g. 95 % of 20 is
    // rank 19 and not 18.999… rounded up to 20.
    let rank = (pct * n as f64 / 100.0).ceil() as usize;
    Some(rank.clamp(1, n))
}

/// The `pct`-th percentile of an ascending `sorted` slice by nearest rank
/// (see the module doc); `None` when empty or `pct` is outside `[0, 100]`.
pub fn percentile_nearest_rank<T: Copy>(sorted: &[T], pct: f64) -> Option<T> {
    nearest_rank(sorted.len(), pct).map(|rank| sorted[rank - 1])
}

/// The `q` quantile (`0..=1`) of an ascending `sorted` slice, linear between order
/// statistics (Hyndman & Fan type 7, R's and numpy's default): for bootstrap intervals
/// and box plots, where a value between runs reads better than the nearest one.
/// `None` when empty.
pub fn quantile_linear(sorted: &[f64], q: f64) -> Option<f64> {
    let last = sorted.len().checked_sub(1)?;
    let h = last as f64 * q.clamp(0.0, 1.0);
    let (lo, hi) = (h.floor() as usize, h.ceil() as usize);
    Some(sorted[lo] + (h - lo as f64) * (sorted[hi] - sorted[lo]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn linear_quantiles_interpolate_between_order_statistics() {
        let v = [1.0, 2.0, 4.0, 8.0];
        assert_eq!(quantile_linear(&v, 0.0), Some(1.0));
        assert_eq!(quantile_linear(&v, 0.5), Some(3.0));
        assert_eq!(quantile_linear(&v, 0.25), Some(1.75));
        assert_eq!(quantile_linear(&v, 1.0), Some(8.0));
        assert_eq!(quantile_linear(&[], 0.5), None);
    }

    #[test]
    fn integer_stats_are_exact() {
        // mean 5, deviations -3,-1,-1,-1,0,0,2,4 → Σ² = 32; σ = sqrt(32/8) = 2.
        let s = Stats::from_i64(&[2, 4, 4, 4, 5, 5, 7, 9]).unwrap();
        assert_eq!(s.count, 8);
        assert_eq!(s.mean, 5.0);
        assert_eq!(s.min, 2.0);
        assert_eq!(s.max, 9.0);
        assert_eq!(s.stddev_population, 2.0);
        assert_eq!(s.stddev_sample, Some((32.0f64 / 7.0).sqrt()));
    }

    #[test]
    fn float_stats_match_integer_stats() {
        let s = Stats::from_f64(&[1.0, 3.0]).unwrap();
        assert_eq!(s.mean, 2.0);
        assert_eq!(s.stddev_population, 1.0);
        assert_eq!(s.stddev_sample, Some(2.0f64.sqrt()));
    }

    #[test]
    fn single_value_has_no_sample_stddev() {
        let s = Stats::from_i64(&[-7]).unwrap();
        assert_eq!(s.mean, -7.0);
        assert_eq!(s.stddev_population, 0.0);
        assert_eq!(s.stddev_sample, None);
    }

    #[test]
    fn empty_or_non_finite_samples_have_no_stats() {
        assert_eq!(Stats::from_i64(&[]), None);
        assert_eq!(Stats::from_f64(&[]), None);
        assert_eq!(Stats::from_f64(&[1.0, f64::NAN]), None);
        assert_eq!(Stats::from_f64(&[f64::INFINITY]), None);
    }

    #[test]
    fn mean_of_huge_integers_does_not_overflow() {
        let s = Stats::from_i64(&[i64::MAX, i64::MAX]).unwrap();
        assert_eq!(s.mean, i64::MAX as f64);
    }

    #[test]
    fn nearest_rank_percentiles() {
        let v: Vec<u64> = (1..=20).collect();
        assert_eq!(percentile_nearest_rank(&v, 0.0), Some(1));
        assert_eq!(percentile_nearest_rank(&v, 5.0), Some(1));
        assert_eq!(percentile_nearest_rank(&v, 5.1), Some(2));
        assert_eq!(percentile_nearest_rank(&v, 50.0), Some(10));
        assert_eq!(percentile_nearest_rank(&v, 95.0), Some(19));
        assert_eq!(percentile_nearest_rank(&v, 99.0), Some(20));
        assert_eq!(percentile_nearest_rank(&v, 100.0), Some(20));
        // Five values: 30 % and 40 % share rank 2.
        let w = [15, 20, 35, 40, 50];
        assert_eq!(percentile_nearest_rank(&w, 30.0), Some(20));
        assert_eq!(percentile_nearest_rank(&w, 40.0), Some(20));
        assert_eq!(percentile_nearest_rank(&w, 50.0), Some(35));
    }

    #[test]
    fn percentile_rejects_bad_input() {
        assert_eq!(percentile_nearest_rank::<u64>(&[], 50.0), None);
        assert_eq!(percentile_nearest_rank(&[1], -1.0), None);
        assert_eq!(percentile_nearest_rank(&[1], 100.5), None);
        assert_eq!(percentile_nearest_rank(&[1], f64::NAN), None);
        assert_eq!(nearest_rank(3, 100.0), Some(3));
    }
}
