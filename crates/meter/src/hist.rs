//! A log-linear histogram of signed integers (nanoseconds) for streaming percentiles.
//!
//! The bucket layout is HdrHistogram's (Gil Tene, <https://hdrhistogram.github.io/HdrHistogram/>)
//! at two significant digits: values below 64 each have their own bucket (exact), and
//! every octave `[2^k, 2^(k+1))` above is cut into 64 equal sub-buckets of width
//! `2^(k−6)`. Two departures from the `hdrhistogram` crate, both for memory:
//! - **signed**: a one-way delay between hosts whose clocks differ is negative, so
//!   negative values have their own set of octaves (by magnitude);
//! - **sparse**: an octave's 64 counters (32-bit, 256 bytes) are allocated the first time
//!   a value lands in it, so a flow's histogram costs what its spread needs (a delay
//!   between 10 µs and 2 ms touches 8 octaves, 2 KiB), not what the whole `i64` range
//!   would.
//!
//! # Error bound
//!
//! A percentile is the nearest-rank percentile of the recorded values (the definition
//! of [`crate::stats`]), reported as the midpoint of the bucket holding that rank and
//! clamped to the exact smallest and largest recorded values (the first and last rank
//! are those values). The true value lies in
//! the same bucket, so the reported one differs from it by at most half a bucket width:
//! **`|reported − true| ≤ |true| / 128`** (0.78 %), and exactly 0 for `|true| < 64`.
//! [`RELATIVE_ERROR`] states the bound; tests hold every percentile to it.

use std::collections::BTreeMap;

use crate::stats::nearest_rank;

/// Sub-buckets per octave, as a power of two.
const SUB_BITS: u32 = 6;
/// Sub-buckets per octave (and the size of the exact, linear range).
const SUB: usize = 1 << SUB_BITS;
/// Octave slots: slot 0 is the linear range `0..64`; slot `k − 5` holds `[2^k, 2^(k+1))`
/// for `k` in `6..=63`.
#[cfg(test)]
const SLOTS: usize = 64 - SUB_BITS as usize + 1;

/// The largest relative error of a reported percentile: `|reported − true| ≤ |true| ·
/// RELATIVE_ERROR` (see the module doc).
pub const RELATIVE_ERROR: f64 = 1.0 / 128.0;

/// Counts of one sign, by magnitude. Counters are 32 bits (a bucket rarely holds more
/// than 4 billion values); the rare excess is kept in `high` in units of 2^32.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct Octaves {
    slots: Vec<Option<Box<[u32; SUB]>>>,
    high: BTreeMap<(usize, usize), u64>,
}

impl Octaves {
    fn add(&mut self, magnitude: u64, n: u64) {
        let (slot, sub) = locate(magnitude);
        if self.slots.len() <= slot {
            self.slots.resize(slot + 1, None);
        }
        let counts = self.slots[slot].get_or_insert_with(|| Box::new([0; SUB]));
        let total = u64::from(counts[sub]) + n;
        counts[sub] = total as u32; // the low 32 bits
        if total >> 32 > 0 {
            *self.high.entry((slot, sub)).or_insert(0) += total >> 32;
        }
    }

    /// Every non-empty bucket as (lowest magnitude, highest magnitude, count), ascending.
    fn buckets(&self) -> impl DoubleEndedIterator<Item = (u64, u64, u64)> + '_ {
        self.slots
            .iter()
            .enumerate()
            .flat_map(move |(slot, counts)| {
                counts.iter().flat_map(move |counts| {
                    counts.iter().enumerate().filter_map(move |(sub, &low)| {
                        let high = self.high.get(&(slot, sub)).copied().unwrap_or(0);
                        let n = u64::from(low) + (high << 32);
                        (n > 0).then(|| {
                            let (lo, hi) = bounds(slot, sub);
                            (lo, hi, n)
                        })
                    })
                })
            })
    }

    fn heap_bytes(&self) -> usize {
        self.slots.capacity() * size_of::<Option<Box<[u32; SUB]>>>()
            + self.slots.iter().flatten().count() * size_of::<[u32; SUB]>()
            + self.high.len() * 4 * size_of::<u64>()
    }
}

/// The slot and sub-bucket of a magnitude.
fn locate(m: u64) -> (usize, usize) {
    if m < SUB as u64 {
        return (0, m as usize);
    }
    let k = 63 - m.leading_zeros(); // 2^k ≤ m < 2^(k+1), k ≥ SUB_BITS
    let sub = (m >> (k - SUB_BITS)) as usize - SUB;
    ((k - SUB_BITS + 1) as usize, sub)
}

/// The lowest and highest magnitude of a bucket.
fn bounds(slot: usize, sub: usize) -> (u64, u64) {
    if slot == 0 {
        return (sub as u64, sub as u64);
    }
    let shift = slot as u32 - 1; // width 2^(k − SUB_BITS) with k = slot + SUB_BITS − 1
    let lo = ((SUB + sub) as u64) << shift;
    (lo, lo + ((1u64 << shift) - 1))
}

/// A streaming histogram of `i64` values; see the module doc for the layout and the
/// error bound.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Histogram {
    positive: Octaves,
    /// Magnitudes of negative values.
    negative: Octaves,
    count: u64,
    min: i64,
    max: i64,
}

impl Histogram {
    /// An empty histogram (allocates nothing).
    pub fn new() -> Self {
        Self::default()
    }

    /// Records one value.
    pub fn record(&mut self, value: i64) {
        self.record_n(value, 1);
    }

    /// Records `n` copies of a value.
    pub fn record_n(&mut self, value: i64, n: u64) {
        if n == 0 {
            return;
        }
        if value < 0 {
            self.negative.add(value.unsigned_abs(), n);
        } else {
            self.positive.add(value as u64, n);
        }
        if self.count == 0 {
            (self.min, self.max) = (value, value);
        }
        self.min = self.min.min(value);
        self.max = self.max.max(value);
        self.count += n;
    }

    /// Adds every value of `other`.
    pub fn merge(&mut self, other: &Self) {
        for (lo, _, n) in other.positive.buckets() {
            self.positive.add(lo, n);
        }
        for (lo, _, n) in other.negative.buckets() {
            self.negative.add(lo, n);
        }
        if other.count > 0 {
            if self.count == 0 {
                (self.min, self.max) = (other.min, other.max);
            }
            self.min = self.min.min(other.min);
            self.max = self.max.max(other.max);
            self.count += other.count;
        }
    }

    /// Values recorded.
    pub fn count(&self) -> u64 {
        self.count
    }

    /// The smallest value recorded (exact); `None` when empty.
    pub fn min(&self) -> Option<i64> {
        (self.count > 0).then_some(self.min)
    }

    /// The largest value recorded (exact); `None` when empty.
    pub fn max(&self) -> Option<i64> {
        (self.count > 0).then_some(self.max)
    }

    /// The nearest-rank `pct`-th percentile within [`RELATIVE_ERROR`]; `None` when empty
    /// or `pct` is outside `[0, 100]`.
    pub fn percentile(&self, pct: f64) -> Option<i64> {
        let rank = nearest_rank(usize::try_from(self.count).ok()?, pct)? as u64;
        // The extremes are known exactly.
        if rank == 1 {
            return Some(self.min);
        }
        if rank == self.count {
            return Some(self.max);
        }
        // Ascending order: negative values by decreasing magnitude, then the rest.
        let negative = self
            .negative
            .buckets()
            .rev()
            .map(|(lo, hi, n)| (-(hi as i128), -(lo as i128), n));
        let positive = self
            .positive
            .buckets()
            .map(|(lo, hi, n)| (lo as i128, hi as i128, n));
        let mut seen = 0u64;
        for (lo, hi, n) in negative.chain(positive) {
            seen += n;
            if seen >= rank {
                let mid = lo + (hi - lo) / 2;
                let mid = mid.clamp(i128::from(self.min), i128::from(self.max));
                // Clamped into the i64 range of min..=max.
                return Some(mid as i64);
            }
        }
        Some(self.max)
    }

    /// For each of `bounds` (ascending), how many values are at most that bound: the
    /// cumulative counts of a Prometheus histogram's `le` buckets. A bucket of the layout
    /// counts below a bound when its midpoint does (the midpoint is what
    /// [`Self::percentile`] reports), so only values within [`RELATIVE_ERROR`] of a bound
    /// can be counted on the wrong side of it; below 64 the counts are exact.
    pub fn cumulative_counts(&self, bounds: &[i64]) -> Vec<u64> {
        let negative = self
            .negative
            .buckets()
            .rev()
            .map(|(lo, hi, n)| (-(hi as i128), -(lo as i128), n));
        let positive = self
            .positive
            .buckets()
            .map(|(lo, hi, n)| (lo as i128, hi as i128, n));
        let mut buckets = negative.chain(positive).peekable();
        let mut seen = 0u64;
        bounds
            .iter()
            .map(|&bound| {
                while let Some(&(lo, hi, n)) = buckets.peek() {
                    if lo + (hi - lo) / 2 > i128::from(bound) {
                        break;
                    }
                    seen += n;
                    buckets.next();
                }
                seen
            })
            .collect()
    }

    /// Heap bytes held (for memory bounds in tests and docs).
    pub fn heap_bytes(&self) -> usize {
        self.positive.heap_bytes() + self.negative.heap_bytes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::percentile_nearest_rank;

    /// A small deterministic generator (SplitMix64).
    fn next(state: &mut u64) -> u64 {
        *state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = *state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn within_bound(got: i64, want: i64) -> bool {
        (got as f64 - want as f64).abs() <= want.unsigned_abs() as f64 * RELATIVE_ERROR
    }

    #[test]
    fn buckets_tile_the_range_without_gaps() {
        let mut expect_lo = 0u64;
        for slot in 0..SLOTS {
            for sub in 0..SUB {
                let (lo, hi) = bounds(slot, sub);
                if slot > 0 || sub > 0 {
                    assert_eq!(lo, expect_lo, "slot {slot} sub {sub}");
                }
                assert_eq!(locate(lo), (slot, sub));
                assert_eq!(locate(hi), (slot, sub));
                expect_lo = hi.wrapping_add(1);
                // Half a bucket is within the stated bound of its lowest value.
                assert!((hi - lo) as f64 / 2.0 <= lo as f64 * RELATIVE_ERROR || hi == lo);
            }
        }
        assert_eq!(expect_lo, 0, "the last bucket ends at u64::MAX");
    }

    #[test]
    fn small_values_are_exact() {
        let mut h = Histogram::new();
        for v in [-63, -5, 0, 3, 3, 63] {
            h.record(v);
        }
        assert_eq!(h.percentile(0.0), Some(-63));
        assert_eq!(h.percentile(50.0), Some(0));
        assert_eq!(h.percentile(60.0), Some(3));
        assert_eq!(h.percentile(100.0), Some(63));
        assert_eq!(h.count(), 6);
    }

    #[test]
    fn empty_has_nothing_and_allocates_nothing() {
        let h = Histogram::new();
        assert_eq!(h.percentile(50.0), None);
        assert_eq!(h.min(), None);
        assert_eq!(h.heap_bytes(), 0);
    }

    #[test]
    fn extremes_are_exact_and_percentiles_within_the_bound() {
        // Random signed samples over many magnitudes against the exact nearest rank.
        let mut state = 7;
        for case in 0..200 {
            let n = 1 + (next(&mut state) % 2000) as usize;
            let scale = 1u64 << (next(&mut state) % 40);
            let mut values: Vec<i64> = (0..n)
                .map(|_| {
                    let v = (next(&mut state) % scale) as i64;
                    if case % 3 == 0 && next(&mut state) % 4 == 0 {
                        -v
                    } else {
                        v
                    }
                })
                .collect();
            let mut h = Histogram::new();
            for &v in &values {
                h.record(v);
            }
            values.sort_unstable();
            assert_eq!(h.min(), values.first().copied());
            assert_eq!(h.max(), values.last().copied());
            for pct in [0.0, 1.0, 25.0, 50.0, 90.0, 95.0, 99.0, 99.9, 100.0] {
                let want = percentile_nearest_rank(&values, pct).unwrap();
                let got = h.percentile(pct).unwrap();
                assert!(
                    within_bound(got, want),
                    "case {case} p{pct}: {got} vs {want}"
                );
            }
        }
    }

    #[test]
    fn merge_equals_recording_everything_in_one() {
        let mut state = 11;
        let (mut a, mut b, mut both) = (Histogram::new(), Histogram::new(), Histogram::new());
        for i in 0..5000 {
            let v = (next(&mut state) % 1_000_000) as i64 - 200_000;
            if i % 3 == 0 { &mut a } else { &mut b }.record(v);
            both.record(v);
        }
        a.merge(&b);
        assert_eq!(a, both);
        let mut empty = Histogram::new();
        empty.merge(&both);
        assert_eq!(empty, both);
    }

    #[test]
    fn counts_beyond_32_bits_are_kept() {
        let mut h = Histogram::new();
        h.record_n(1_000, 3 << 32);
        h.record_n(1_000, (1 << 32) - 1);
        h.record(5);
        assert_eq!(h.count(), (4 << 32) - 1 + 1);
        // Rank 2 and the last rank are both in the 1,000 bucket, not at 5.
        assert_eq!(h.percentile(50.0), Some(1_000));
        let mut other = Histogram::new();
        other.merge(&h);
        assert_eq!(other.percentile(50.0), Some(1_000));
        assert_eq!(other.count(), h.count());
    }

    #[test]
    fn memory_follows_the_spread_not_the_count() {
        let mut h = Histogram::new();
        // A million delays between 10 µs and 2 ms.
        let mut state = 3;
        for _ in 0..1_000_000 {
            h.record(10_000 + (next(&mut state) % 1_990_000) as i64);
        }
        assert_eq!(h.count(), 1_000_000);
        assert!(
            h.heap_bytes() <= 8 * 256 + SLOTS * 8,
            "{} bytes",
            h.heap_bytes()
        );
        // The whole i64 range, both signs: still bounded.
        h.record(i64::MIN);
        h.record(i64::MAX);
        assert!(
            h.heap_bytes() <= 2 * SLOTS * (256 + 8),
            "{} bytes",
            h.heap_bytes()
        );
        assert_eq!(h.percentile(0.0), Some(i64::MIN));
        assert_eq!(h.percentile(100.0), Some(i64::MAX));
    }

    #[test]
    fn cumulative_counts_are_exact_below_64_and_put_each_bucket_by_its_midpoint() {
        let mut h = Histogram::new();
        for v in [-3, 0, 5, 5, 63] {
            h.record(v);
        }
        // 1,000 lies in [1,000, 1,007] (width 8 in the octave from 512), midpoint 1,003.
        h.record_n(1_000, 4);
        assert_eq!(
            h.cumulative_counts(&[-4, -3, 4, 5, 63, 1_002, 1_003, i64::MAX]),
            [0, 1, 2, 4, 5, 5, 9, 9]
        );
        assert_eq!(Histogram::new().cumulative_counts(&[0, 1]), [0, 0]);
    }
}
