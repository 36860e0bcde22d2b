//! A token bucket in exact integer arithmetic: tokens are kept in byte·nanoseconds per
//! second (bytes × 10⁹), so filling at `rate_bps / 8` bytes a second for any number of
//! nanoseconds never rounds. The building block of the meters (RFC 2697, RFC 2698),
//! policers and shapers.

use wire::time::Instant;

/// Scale of the token count: one byte is 10⁹ units.
const SCALE: u128 = 1_000_000_000;

/// A bucket of `depth_bytes`, filled at `rate_bps` (bits/s).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Bucket {
    /// Fill rate, bytes per second.
    rate_bytes_per_s: u128,
    /// Depth, scaled.
    depth: u128,
    /// Tokens, scaled.
    tokens: u128,
    /// When the tokens were last brought up to date.
    last: Instant,
}

impl Bucket {
    /// A full bucket at time `now`. `rate_bps` must be a multiple of 8 for exactness
    /// (bytes per second); any remainder is dropped.
    pub fn full(rate_bps: u64, depth_bytes: u64, now: Instant) -> Self {
        let depth = u128::from(depth_bytes) * SCALE;
        Self {
            rate_bytes_per_s: u128::from(rate_bps / 8),
            depth,
            tokens: depth,
            last: now,
        }
    }

    /// The tokens that `now - last` adds, without the depth cap.
    fn earned(&self, now: Instant) -> u128 {
        let dt = u128::from(now.saturating_duration_since(self.last).as_nanos());
        dt * self.rate_bytes_per_s
    }

    /// Bring the tokens up to `now`; returns what overflowed the depth (scaled).
    pub fn fill(&mut self, now: Instant) -> u128 {
        let total = self.tokens + self.earned(now);
        self.last = self.last.max(now);
        if total > self.depth {
            self.tokens = self.depth;
            total - self.depth
        } else {
            self.tokens = total;
            0
        }
    }

    /// Add `scaled` tokens (another bucket's overflow); returns what overflowed.
    pub fn add_scaled(&mut self, scaled: u128) -> u128 {
        let total = self.tokens + scaled;
        if total > self.depth {
            self.tokens = self.depth;
            total - self.depth
        } else {
            self.tokens = total;
            0
        }
    }

    /// Whether `bytes` tokens are there.
    pub fn has(&self, bytes: usize) -> bool {
        self.tokens >= bytes as u128 * SCALE
    }

    /// Take `bytes` tokens (the caller checked [`Bucket::has`]).
    pub fn take(&mut self, bytes: usize) {
        self.tokens = self.tokens.saturating_sub(bytes as u128 * SCALE);
    }

    /// When the tokens were last brought up to date.
    pub fn last(&self) -> Instant {
        self.last
    }

    /// Whole bytes of tokens now held.
    pub fn tokens_bytes(&self) -> u64 {
        u64::try_from(self.tokens / SCALE).unwrap_or(u64::MAX)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn filling_is_exact_and_capped() {
        let mut b = Bucket::full(1_000_000, 10_000, Instant::ZERO);
        b.take(10_000);
        assert_eq!(b.tokens_bytes(), 0);
        // 125,000 B/s for 4 ms = exactly 500 B.
        assert_eq!(b.fill(Instant::from_nanos(4_000_000)), 0);
        assert_eq!(b.tokens_bytes(), 500);
        // 1 s more would be 125,500: capped at 10,000, the rest overflows.
        let over = b.fill(Instant::from_nanos(1_004_000_000));
        assert_eq!((b.tokens_bytes(), over / SCALE), (10_000, 115_500));
    }
}
