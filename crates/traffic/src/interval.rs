//! `send --interval`: the windows a receiver reports its series in. A window is at least
//! [`MIN_INTERVAL`] and at most [`MAX_INTERVAL`], and the flows' windows together stay
//! within what a receiver reports in one session (its limit comes in as an argument).

use thiserror::Error;
use wire::time::Duration;

use crate::flow::FlowSpec;
use crate::schedule::MIN_GRACE;

/// Shortest `--interval`: windows of at least this, so a window holds a meaningful count.
pub const MIN_INTERVAL: Duration = Duration::from_millis(10);
/// Longest `--interval`.
pub const MAX_INTERVAL: Duration = Duration::from_secs(24 * 3600);

/// An `--interval` a session cannot report in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
pub enum IntervalError {
    /// Shorter than [`MIN_INTERVAL`] or longer than [`MAX_INTERVAL`].
    #[error("--interval {0} is outside {MIN_INTERVAL} to 24 h", MIN_INTERVAL = MIN_INTERVAL)]
    OutOfRange(Duration),
    /// More windows over the flows than the receiver reports in a session.
    #[error("--interval {interval} over these flows makes {windows} windows; the receiver reports at most {max} per session: use a longer interval")]
    TooManyWindows {
        /// The window asked for.
        interval: Duration,
        /// Windows over every flow with a duration, together.
        windows: u64,
        /// The most a session reports.
        max: u64,
    },
}

/// The windows of `interval` the receiver may report over `flows`: for each flow with a
/// duration, that duration with the sender's grace at its longest (1 % plus
/// [`MIN_GRACE`]) cut into windows, and one more for a window cut short. A flow stopped
/// by a count or bytes alone adds none.
pub fn windows(interval: Duration, flows: &[FlowSpec]) -> u64 {
    let w = interval.as_nanos().max(1);
    flows
        .iter()
        .filter_map(|f| f.stop.duration)
        .map(|d| (d + Duration::from_nanos(d.as_nanos() / 100) + MIN_GRACE).as_nanos() / w + 1)
        .sum()
}

/// `interval` checked against its bounds and, for flows with a duration, against the
/// `max_windows` a receiver reports per session.
pub fn check(
    interval: Duration,
    flows: &[FlowSpec],
    max_windows: u64,
) -> Result<Duration, IntervalError> {
    if interval < MIN_INTERVAL || interval > MAX_INTERVAL {
        return Err(IntervalError::OutOfRange(interval));
    }
    let windows = windows(interval, flows);
    if windows > max_windows {
        return Err(IntervalError::TooManyWindows {
            interval,
            windows,
            max: max_windows,
        });
    }
    Ok(interval)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::flow::StopSpec;

    fn lasting(secs: u64) -> FlowSpec {
        FlowSpec {
            stop: StopSpec::after(Duration::from_secs(secs)),
            ..FlowSpec::default()
        }
    }

    #[test]
    fn a_flow_of_ten_seconds_makes_its_windows_with_its_grace_and_one_more() {
        // 10 s + 100 ms + 10 ms in windows of 10 ms: 1,011, and one cut short.
        assert_eq!(windows(Duration::from_millis(10), &[lasting(10)]), 1_012);
        // In windows of 1 s: 10, and one.
        assert_eq!(windows(Duration::from_secs(1), &[lasting(10)]), 11);
        // A flow stopped by its count alone makes none.
        let counted = FlowSpec {
            stop: StopSpec {
                count: Some(100),
                ..StopSpec::default()
            },
            ..FlowSpec::default()
        };
        assert_eq!(windows(Duration::from_secs(1), &[counted, lasting(10)]), 11);
    }

    #[test]
    fn an_interval_outside_its_bounds_or_over_the_sessions_windows_is_refused() {
        let w = Duration::from_millis(10);
        assert_eq!(check(w, &vec![lasting(10); 29], 30_000), Ok(w));
        assert_eq!(
            check(w, &vec![lasting(10); 30], 30_000)
                .unwrap_err()
                .to_string(),
            "--interval 10.000ms over these flows makes 30360 windows; the receiver reports at most 30000 per session: use a longer interval"
        );
        assert_eq!(
            check(Duration::from_millis(9), &[], 30_000)
                .unwrap_err()
                .to_string(),
            "--interval 9.000ms is outside 10.000ms to 24 h"
        );
        assert_eq!(check(MAX_INTERVAL, &[], 30_000), Ok(MAX_INTERVAL));
        assert_eq!(
            check(MAX_INTERVAL + Duration::from_nanos(1), &[], 30_000),
            Err(IntervalError::OutOfRange(
                MAX_INTERVAL + Duration::from_nanos(1)
            ))
        );
    }
}
