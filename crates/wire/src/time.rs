//! Time types: a monotonic [`Instant`] and a [`Duration`], both `u64` nanoseconds.
//!
//! Following irtt's rule "monotonic for differences, wall for comparing wall clock time",
//! the monotonic types here are used for scheduling and schedule error. Wall-clock stamps
//! (for one-way delay, which compares clocks of two processes) stay plain `u64`
//! nanoseconds since the Unix epoch in fields named `*_ns`.
//!
//! Nothing in this module reads a clock: only `netio` does.

use core::fmt;
use core::ops::{Add, AddAssign, Sub};

/// A point in monotonic time, in nanoseconds since an arbitrary origin.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Instant {
    nanos: u64,
}

impl Instant {
    /// The origin.
    pub const ZERO: Self = Self { nanos: 0 };

    /// An instant `nanos` nanoseconds after the origin.
    pub const fn from_nanos(nanos: u64) -> Self {
        Self { nanos }
    }

    /// Nanoseconds since the origin.
    pub const fn as_nanos(self) -> u64 {
        self.nanos
    }

    /// Time elapsed since `earlier`, zero if `earlier` is later.
    pub fn saturating_duration_since(self, earlier: Self) -> Duration {
        Duration::from_nanos(self.nanos.saturating_sub(earlier.nanos))
    }
}

impl Add<Duration> for Instant {
    type Output = Self;
    fn add(self, rhs: Duration) -> Self {
        Self::from_nanos(self.nanos.saturating_add(rhs.as_nanos()))
    }
}

impl AddAssign<Duration> for Instant {
    fn add_assign(&mut self, rhs: Duration) {
        *self = *self + rhs;
    }
}

impl Sub<Self> for Instant {
    type Output = Duration;
    fn sub(self, rhs: Self) -> Duration {
        self.saturating_duration_since(rhs)
    }
}

/// A span of time in nanoseconds (serialised as the number of nanoseconds).
#[derive(
    Clone,
    Copy,
    Debug,
    Default,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    serde::Serialize,
    serde::Deserialize,
    schemars::JsonSchema,
)]
#[serde(transparent)]
pub struct Duration {
    nanos: u64,
}

impl Duration {
    /// No time.
    pub const ZERO: Self = Self { nanos: 0 };
    /// The longest representable span.
    pub const MAX: Self = Self { nanos: u64::MAX };

    /// A span of `nanos` nanoseconds.
    pub const fn from_nanos(nanos: u64) -> Self {
        Self { nanos }
    }
    /// A span of `micros` microseconds.
    pub const fn from_micros(micros: u64) -> Self {
        Self::from_nanos(micros.saturating_mul(1_000))
    }
    /// A span of `millis` milliseconds.
    pub const fn from_millis(millis: u64) -> Self {
        Self::from_nanos(millis.saturating_mul(1_000_000))
    }
    /// A span of `secs` seconds.
    pub const fn from_secs(secs: u64) -> Self {
        Self::from_nanos(secs.saturating_mul(1_000_000_000))
    }
    /// A span of `secs` seconds, rounded to the nearest nanosecond; negative or NaN is zero.
    pub fn from_secs_f64(secs: f64) -> Self {
        let nanos = (secs * 1e9).round();
        if nanos.is_nan() || nanos <= 0.0 {
            Self::ZERO
        } else if nanos >= u64::MAX as f64 {
            Self::MAX
        } else {
            Self::from_nanos(nanos as u64)
        }
    }
    /// The span in nanoseconds.
    pub const fn as_nanos(self) -> u64 {
        self.nanos
    }
    /// The span in seconds.
    pub fn as_secs_f64(self) -> f64 {
        self.nanos as f64 / 1e9
    }
}

impl Add for Duration {
    type Output = Self;
    fn add(self, rhs: Self) -> Self {
        Self::from_nanos(self.nanos.saturating_add(rhs.nanos))
    }
}

impl From<Duration> for std::time::Duration {
    fn from(d: Duration) -> Self {
        Self::from_nanos(d.nanos)
    }
}

impl From<std::time::Duration> for Duration {
    fn from(d: std::time::Duration) -> Self {
        Self::from_nanos(u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
    }
}

impl fmt::Display for Duration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let n = self.nanos;
        if n >= 1_000_000_000 {
            write!(f, "{:.3}s", n as f64 / 1e9)
        } else if n >= 1_000_000 {
            write!(f, "{:.3}ms", n as f64 / 1e6)
        } else if n >= 1_000 {
            write!(f, "{:.3}µs", n as f64 / 1e3)
        } else {
            write!(f, "{n}ns")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn instant_arithmetic_saturates() {
        let a = Instant::from_nanos(10);
        let b = a + Duration::from_nanos(5);
        assert_eq!(b.as_nanos(), 15);
        assert_eq!((b - a).as_nanos(), 5);
        assert_eq!((a - b).as_nanos(), 0);
        assert_eq!(
            (Instant::from_nanos(u64::MAX) + Duration::from_secs(1)).as_nanos(),
            u64::MAX
        );
    }

    #[test]
    fn duration_conversions() {
        assert_eq!(Duration::from_millis(3).as_nanos(), 3_000_000);
        assert_eq!(Duration::from_secs_f64(0.5).as_nanos(), 500_000_000);
        assert_eq!(Duration::from_secs_f64(-1.0), Duration::ZERO);
        assert_eq!(Duration::from_secs_f64(f64::NAN), Duration::ZERO);
        assert_eq!(Duration::from_micros(1500).to_string(), "1.500ms");
    }
}
