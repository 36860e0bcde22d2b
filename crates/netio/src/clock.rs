//! The real clocks and the pacing wait.
//!
//! Everything is plain `u64` nanoseconds: [`mono_ns`] counts from an
//! arbitrary point (boot) on `CLOCK_MONOTONIC`, [`wall_ns`] from the Unix
//! epoch on `CLOCK_REALTIME` (the clock kernel receive timestamps use). The
//! pure crates wrap these numbers in their own time types.

use std::io;

/// A clock [`resolution_ns`] can ask about.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ClockId {
    /// `CLOCK_MONOTONIC`: never jumps, slewed by NTP.
    Monotonic,
    /// `CLOCK_REALTIME`: wall-clock time, may jump.
    Realtime,
    /// `CLOCK_THREAD_CPUTIME_ID`: CPU time the calling thread has used (user and
    /// system), not counting time asleep.
    ThreadCpu,
}

impl ClockId {
    fn raw(self) -> libc::clockid_t {
        match self {
            Self::Monotonic => libc::CLOCK_MONOTONIC,
            Self::Realtime => libc::CLOCK_REALTIME,
            Self::ThreadCpu => libc::CLOCK_THREAD_CPUTIME_ID,
        }
    }
}

/// `CLOCK_MONOTONIC` in ns.
pub fn mono_ns() -> u64 {
    now_ns(ClockId::Monotonic)
}

/// `CLOCK_REALTIME` in ns since the Unix epoch.
pub fn wall_ns() -> u64 {
    now_ns(ClockId::Realtime)
}

/// CPU time the calling thread has used, ns (`CLOCK_THREAD_CPUTIME_ID`: user and
/// system time, sleep excluded). A router's cost per packet is its difference over
/// the packets handled in between.
pub fn thread_cpu_ns() -> u64 {
    now_ns(ClockId::ThreadCpu)
}

/// `clock_getres` in ns (1 on any machine with high-resolution timers).
pub fn resolution_ns(clock: ClockId) -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec; the clock id is a constant the
    // kernel always supports, so the call cannot fail.
    let ret = unsafe { libc::clock_getres(clock.raw(), &mut ts) };
    debug_assert_eq!(ret, 0);
    timespec_to_ns(&ts)
}

/// Hybrid wait for pacing: sleeps (`clock_nanosleep`, `TIMER_ABSTIME` on
/// `CLOCK_MONOTONIC`) until `deadline_ns - spin_ns`, then busy-waits until
/// [`mono_ns`] `>= deadline_ns`. Returns `mono_ns()` at wake, which is never
/// before the deadline. A deadline in the past returns at once.
///
/// The sleep part overshoots by the thread's timer slack (50 µs by default
/// for normal threads, see [`set_timer_slack_ns`]) plus wake-up latency;
/// `spin_ns` should cover that.
pub fn sleep_until(deadline_ns: u64, spin_ns: u64) -> u64 {
    let sleep_to = deadline_ns.saturating_sub(spin_ns);
    if mono_ns() < sleep_to {
        let ts = ns_to_timespec(sleep_to);
        loop {
            // SAFETY: `ts` is a valid timespec; the remainder pointer may be null with
            // TIMER_ABSTIME. clock_nanosleep returns the error number directly.
            let ret = unsafe {
                libc::clock_nanosleep(
                    libc::CLOCK_MONOTONIC,
                    libc::TIMER_ABSTIME,
                    &ts,
                    std::ptr::null_mut(),
                )
            };
            // EINTR: a signal woke us early; the absolute deadline is unchanged.
            if ret != libc::EINTR {
                break;
            }
        }
    }
    loop {
        let now = mono_ns();
        if now >= deadline_ns {
            return now;
        }
        std::hint::spin_loop();
    }
}

/// Sets the calling thread's timer slack (`PR_SET_TIMERSLACK`), the extra
/// time the kernel may add to any sleep to batch wake-ups. 0 restores the
/// thread's default; 1 ns is the tightest.
pub fn set_timer_slack_ns(ns: u64) -> io::Result<()> {
    let value = libc::c_ulong::try_from(ns).unwrap_or(libc::c_ulong::MAX);
    // SAFETY: PR_SET_TIMERSLACK takes one unsigned long by value, no pointers.
    let ret = unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, value, 0, 0, 0) };
    crate::sys::cvt(ret).map(drop)
}

/// The calling thread's timer slack in ns (`PR_GET_TIMERSLACK`).
pub fn timer_slack_ns() -> io::Result<u64> {
    // SAFETY: PR_GET_TIMERSLACK takes no arguments and returns the slack.
    let ret = unsafe { libc::prctl(libc::PR_GET_TIMERSLACK, 0, 0, 0, 0) };
    crate::sys::cvt(ret).map(|v| v as u64)
}

fn now_ns(clock: ClockId) -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec; the three clocks always exist on Linux
    // (the first two through the vDSO).
    let ret = unsafe { libc::clock_gettime(clock.raw(), &mut ts) };
    debug_assert_eq!(ret, 0);
    timespec_to_ns(&ts)
}

fn timespec_to_ns(ts: &libc::timespec) -> u64 {
    // Both clocks are non-negative on Linux; clamp instead of wrapping if not.
    let secs = u64::try_from(ts.tv_sec).unwrap_or(0);
    let nanos = u64::try_from(ts.tv_nsec).unwrap_or(0);
    secs.saturating_mul(1_000_000_000).saturating_add(nanos)
}

fn ns_to_timespec(ns: u64) -> libc::timespec {
    libc::timespec {
        tv_sec: libc::time_t::try_from(ns / 1_000_000_000).unwrap_or(libc::time_t::MAX),
        // Always < 1e9, fits any c_long.
        tv_nsec: (ns % 1_000_000_000) as libc::c_long,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timespec_conversion_round_trips() {
        let ns = 1_234_567_890_123;
        assert_eq!(timespec_to_ns(&ns_to_timespec(ns)), ns);
    }

    #[test]
    fn resolution_is_positive_and_fine() {
        for id in [ClockId::Monotonic, ClockId::Realtime] {
            let r = resolution_ns(id);
            assert!(r > 0 && r <= 10_000_000, "{id:?}: {r}");
        }
    }

    #[test]
    fn thread_cpu_time_grows_with_work_and_not_with_sleep() {
        let a = thread_cpu_ns();
        std::thread::sleep(std::time::Duration::from_millis(50));
        let b = thread_cpu_ns();
        // Busy work until the thread has used 5 ms more.
        let mut x = 0u64;
        while thread_cpu_ns() < b + 5_000_000 {
            x = x.wrapping_add(std::hint::black_box(1));
        }
        let c = thread_cpu_ns();
        assert!(x > 0);
        // Sleeping 50 ms used far less than 50 ms of CPU; the busy loop at least 5 ms.
        assert!(b - a < 25_000_000, "{}", b - a);
        assert!(c - b >= 5_000_000);
    }

    #[test]
    fn wall_clock_is_after_2020() {
        assert!(wall_ns() > 1_577_836_800 * 1_000_000_000);
    }

    #[test]
    fn past_deadline_returns_at_once_and_not_before_it() {
        let now = mono_ns();
        assert!(sleep_until(now.saturating_sub(1_000), 0) >= now);
        assert!(sleep_until(0, u64::MAX) > 0);
    }

    #[test]
    fn timer_slack_can_be_set_and_read() {
        // Runs on its own test thread; slack is per thread.
        set_timer_slack_ns(1_000).unwrap();
        assert_eq!(timer_slack_ns().unwrap(), 1_000);
    }
}
