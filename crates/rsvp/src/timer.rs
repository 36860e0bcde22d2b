//! Soft-state timing (RFC 2205 §3.7): refresh intervals drawn uniformly from
//! [0.5R, 1.5R], the state lifetime L = (K + 0.5) · 1.5 · R, and one min-heap of
//! deadlines for every timer of a node.
//!
//! The heap cancels lazily: an entry names a key and the instant it was armed for; the
//! owner of the state keeps the instant of its live entry and ignores a popped entry
//! whose instant differs (the state was re-armed, removed or replaced since).

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use rand::Rng;
use wire::time::{Duration, Instant};

/// The lifetime of state refreshed every `refresh` by a neighbour that may lose `keep`
/// refreshes in a row: L = (K + 0.5) · 1.5 · R (RFC 2205 §3.7). Rounded down to the
/// nanosecond.
pub fn lifetime(refresh: Duration, keep: u32) -> Duration {
    // (K + 0.5) · 1.5 = (2K + 1) · 3 / 4
    let factor = (u128::from(keep) * 2 + 1) * 3;
    let nanos = u128::from(refresh.as_nanos()) * factor / 4;
    Duration::from_nanos(u64::try_from(nanos).unwrap_or(u64::MAX))
}

/// One refresh interval: uniform in [0.5R, 1.5R] (RFC 2205 §3.7: "to avoid periodic
/// message synchronization"), to the nanosecond.
pub fn jitter(refresh: Duration, rng: &mut impl Rng) -> Duration {
    let r = refresh.as_nanos();
    let lo = r / 2;
    let hi = r.saturating_add(r / 2);
    Duration::from_nanos(rng.gen_range(lo..=hi))
}

/// Deadlines of keyed timers, earliest first; ties in arming order.
#[derive(Debug)]
pub struct Timers<K> {
    heap: BinaryHeap<Reverse<(Instant, u64, Entry<K>)>>,
    seq: u64,
}

/// A heap entry's payload; ordered by nothing (the sequence number decides ties).
#[derive(Debug)]
struct Entry<K>(K);

impl<K> PartialEq for Entry<K> {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}
impl<K> Eq for Entry<K> {}
impl<K> PartialOrd for Entry<K> {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl<K> Ord for Entry<K> {
    fn cmp(&self, _: &Self) -> std::cmp::Ordering {
        std::cmp::Ordering::Equal
    }
}

impl<K> Default for Timers<K> {
    fn default() -> Self {
        Self {
            heap: BinaryHeap::new(),
            seq: 0,
        }
    }
}

impl<K> Timers<K> {
    /// No timers.
    pub fn new() -> Self {
        Self::default()
    }

    /// Arm a timer for `key` at `at`; returns `at` for the owner to keep.
    pub fn arm(&mut self, at: Instant, key: K) -> Instant {
        self.seq += 1;
        self.heap.push(Reverse((at, self.seq, Entry(key))));
        at
    }

    /// The earliest deadline (possibly of a cancelled entry: waking for it is harmless).
    pub fn next(&self) -> Option<Instant> {
        self.heap.peek().map(|Reverse((at, _, _))| *at)
    }

    /// The earliest entry due at `now` (deadline ≤ now), removed from the heap.
    pub fn pop_due(&mut self, now: Instant) -> Option<(Instant, K)> {
        if self.next()? > now {
            return None;
        }
        self.heap.pop().map(|Reverse((at, _, Entry(k)))| (at, k))
    }

    /// Entries in the heap, live and cancelled.
    pub fn len(&self) -> usize {
        self.heap.len()
    }

    /// No entry at all.
    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand_chacha::ChaCha8Rng;

    #[test]
    fn lifetime_is_k_plus_half_times_one_and_a_half_r() {
        // R = 30 s, K = 3: 3.5 · 1.5 · 30 s = 157.5 s
        assert_eq!(
            lifetime(Duration::from_secs(30), 3),
            Duration::from_millis(157_500)
        );
        // R = 200 ms: 1.05 s
        assert_eq!(
            lifetime(Duration::from_millis(200), 3),
            Duration::from_millis(1_050)
        );
        assert_eq!(
            lifetime(Duration::from_secs(1), 0),
            Duration::from_millis(750)
        );
        assert_eq!(lifetime(Duration::MAX, 3), Duration::MAX);
    }

    #[test]
    fn jitter_stays_in_half_to_one_and_a_half_r_over_ten_thousand_draws() {
        let r = Duration::from_secs(30);
        let mut rng = ChaCha8Rng::seed_from_u64(42);
        let draws: Vec<u64> = (0..10_000)
            .map(|_| jitter(r, &mut rng).as_nanos())
            .collect();
        let (min, max) = (*draws.iter().min().unwrap(), *draws.iter().max().unwrap());
        assert!(min >= 15_000_000_000, "{min}");
        assert!(max <= 45_000_000_000, "{max}");
        // not degenerate: the draws reach both ends
        assert!(min < 18_000_000_000, "{min}");
        assert!(max > 42_000_000_000, "{max}");
        // and spread: the mean is R within 1 %
        let mean = draws.iter().sum::<u64>() / draws.len() as u64;
        assert!(mean.abs_diff(30_000_000_000) < 300_000_000, "{mean}");
    }

    #[test]
    fn timers_pop_in_deadline_order_then_arming_order() {
        let mut t = Timers::new();
        t.arm(Instant::from_nanos(20), "b");
        t.arm(Instant::from_nanos(10), "a");
        t.arm(Instant::from_nanos(20), "c");
        assert_eq!(t.next(), Some(Instant::from_nanos(10)));
        assert_eq!(t.pop_due(Instant::from_nanos(9)), None);
        assert_eq!(
            t.pop_due(Instant::from_nanos(20)),
            Some((Instant::from_nanos(10), "a"))
        );
        assert_eq!(
            t.pop_due(Instant::from_nanos(20)),
            Some((Instant::from_nanos(20), "b"))
        );
        assert_eq!(
            t.pop_due(Instant::from_nanos(20)),
            Some((Instant::from_nanos(20), "c"))
        );
        assert!(t.is_empty());
    }
}
