//! The real clocks and the pacing wait.
//!
//! Everything is plain `u64` nanoseconds: [`mono_ns`] counts from an
//! arbitrary point (boot) on `CLOCK_MONOTONIC`, [`wall_ns`] from the Unix
//! epoch on `CLOCK_REALTIME` (the clock kernel receive timestamps use). The
//! pure crates wrap these numbers in their own time types.
//!
//! Every wall stamp the process takes — [`wall_ns`] and the kernel receive
//! timestamps of UDP and packet sockets — carries the process-wide test offset
//! of [`set_wall_offset_ns`] (0 unless a test sets it). [`adjtimex_state`]
//! reads how the kernel disciplines `CLOCK_REALTIME`.

use std::io;
use std::sync::atomic::{AtomicI64, Ordering};

/// `adjtimex(2)`'s return value for an unsynchronised clock (`TIME_ERROR`, alias
/// `TIME_BAD`). Kernel ABI values, spelled out here because libc exports them for
/// glibc targets only.
const TIME_ERROR: libc::c_int = 5;
/// `STA_UNSYNC`: the clock is not synchronised.
const STA_UNSYNC: libc::c_int = 0x0040;
/// `STA_NANO`: `offset` is in ns, not µs.
const STA_NANO: libc::c_int = 0x2000;

/// The process-wide shift of wall stamps, ns; see [`set_wall_offset_ns`].
static WALL_OFFSET_NS: AtomicI64 = AtomicI64::new(0);

/// The kernel clock discipline, as `adjtimex(2)` reports it (read only).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct KernelSync {
    /// The clock is synchronised: `adjtimex` did not return `TIME_ERROR` and
    /// `STA_UNSYNC` is clear (an NTP daemon disciplines it).
    pub synchronised: bool,
    /// The `status` bits (`STA_*`).
    pub status: u32,
    /// Maximum error, ns (`maxerror`, µs in the kernel; it grows by 500 ppm while
    /// no daemon updates it).
    pub max_error_ns: u64,
    /// Estimated error, ns (`esterror`, µs in the kernel).
    pub est_error_ns: u64,
    /// The offset still being slewed out, ns (`offset`: ns with `STA_NANO`, else µs).
    pub offset_ns: i64,
    /// The frequency correction, parts per million (`freq` / 2^16).
    pub freq_ppm: f64,
}

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

/// `CLOCK_REALTIME` in ns since the Unix epoch, plus the test offset of
/// [`set_wall_offset_ns`] (saturating; 0 unless a test set it).
pub fn wall_ns() -> u64 {
    shift_wall(now_ns(ClockId::Realtime))
}

/// Test aid: shifts every wall stamp this process takes by `ns` (either sign), so a
/// test can fake a host whose clock is off. A time namespace cannot do this: it
/// shifts only `CLOCK_MONOTONIC` and `CLOCK_BOOTTIME`, not `CLOCK_REALTIME`, which
/// one-way delays use.
///
/// Every wall stamp carries the offset: [`wall_ns`], and the kernel receive
/// timestamps netio hands back (`RecvMeta::kernel_ts_ns` of UDP sockets,
/// `RxInfo::timestamp_ns` of packet sockets), all through [`shift_wall`]. Process
/// wide, for all threads; set it once before any socket is used (stamps taken while
/// it changes may carry either value).
pub fn set_wall_offset_ns(ns: i64) {
    WALL_OFFSET_NS.store(ns, Ordering::Relaxed);
}

/// The test offset of [`set_wall_offset_ns`], ns (0 by default). It exists so tests
/// can fake a host whose clock is off (a time namespace shifts only
/// `CLOCK_MONOTONIC`/`CLOCK_BOOTTIME`, not `CLOCK_REALTIME`); every wall stamp the
/// process takes — [`wall_ns`] and kernel receive timestamps — carries it. A process
/// whose offset is not 0 does not read the clock of the other processes of its kernel.
pub fn wall_offset_ns() -> i64 {
    WALL_OFFSET_NS.load(Ordering::Relaxed)
}

/// A `CLOCK_REALTIME` stamp `ns` (e.g. from the kernel) plus the test offset of
/// [`set_wall_offset_ns`], saturating at 0 and `u64::MAX`.
pub fn shift_wall(ns: u64) -> u64 {
    shifted(ns, wall_offset_ns())
}

fn shifted(ns: u64, offset_ns: i64) -> u64 {
    ns.saturating_add_signed(offset_ns)
}

/// Reads the kernel clock discipline with `adjtimex(2)`, `modes` 0: reads only,
/// never sets anything, needs no privilege.
pub fn adjtimex_state() -> io::Result<KernelSync> {
    // SAFETY: timex is plain old data (integers and padding); all-zero is valid and
    // sets `modes` to 0.
    let mut tx: libc::timex = unsafe { std::mem::zeroed() };
    // SAFETY: `tx` is a valid, writable timex; with `modes` 0 the kernel only fills it.
    let ret = unsafe { libc::adjtimex(&mut tx) };
    let state = crate::sys::cvt(ret)?;
    Ok(kernel_sync(
        state,
        tx.status,
        tx.maxerror,
        tx.esterror,
        tx.offset,
        tx.freq,
    ))
}

/// [`KernelSync`] from `adjtimex`'s return value and raw fields.
fn kernel_sync(
    state: libc::c_int,
    status: libc::c_int,
    max_error_us: libc::c_long,
    est_error_us: libc::c_long,
    offset: libc::c_long,
    freq: libc::c_long,
) -> KernelSync {
    // Negative errors clamp to 0.
    let us_to_ns = |us: libc::c_long| u64::try_from(us).unwrap_or(0).saturating_mul(1_000);
    // c_long is i64 on 64-bit targets but i32 on 32-bit ones; lossless either way.
    #[allow(clippy::unnecessary_cast)]
    let offset = offset as i64;
    let offset_ns = if status & STA_NANO != 0 {
        offset
    } else {
        offset.saturating_mul(1_000)
    };
    KernelSync {
        synchronised: state != TIME_ERROR && status & STA_UNSYNC == 0,
        // The kernel's status is an int of flag bits: reinterpret, do not clamp.
        status: status as u32,
        max_error_ns: us_to_ns(max_error_us),
        est_error_ns: us_to_ns(est_error_us),
        offset_ns,
        freq_ppm: freq as f64 / 65_536.0,
    }
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
    fn adjtimex_reads_a_sane_state() {
        let k = adjtimex_state().expect("adjtimex with modes 0");
        assert!(k.freq_ppm.abs() <= 1_000.0, "{k:?}");
        // Unsynchronised whenever STA_UNSYNC is set.
        if k.status & STA_UNSYNC as u32 != 0 {
            assert!(!k.synchronised, "{k:?}");
        }
    }

    #[test]
    fn kernel_sync_converts_units_and_flags() {
        // Synchronised, µs offset.
        let k = kernel_sync(0, 0x0001, 16_000, 2, -5, 3 << 16);
        assert_eq!(
            k,
            KernelSync {
                synchronised: true,
                status: 1,
                max_error_ns: 16_000_000,
                est_error_ns: 2_000,
                offset_ns: -5_000,
                freq_ppm: 3.0,
            }
        );
        // STA_NANO: offset already in ns.
        assert_eq!(kernel_sync(0, STA_NANO, 0, 0, -5, 0).offset_ns, -5);
        // TIME_ERROR or STA_UNSYNC: not synchronised.
        assert!(!kernel_sync(TIME_ERROR, 0, 0, 0, 0, 0).synchronised);
        assert!(!kernel_sync(0, STA_UNSYNC, 0, 0, 0, 0).synchronised);
        // Extremes saturate instead of wrapping; negative errors clamp to 0.
        let k = kernel_sync(0, 0, libc::c_long::MAX, -1, libc::c_long::MIN, -(500 << 16));
        let max_us = u64::try_from(libc::c_long::MAX).unwrap();
        assert_eq!(
            (k.max_error_ns, k.est_error_ns),
            (max_us.saturating_mul(1_000), 0)
        );
        // c_long is i32 on 32-bit targets.
        #[allow(clippy::unnecessary_cast)]
        let min_ns = (libc::c_long::MIN as i64).saturating_mul(1_000);
        assert_eq!((k.offset_ns, k.freq_ppm), (min_ns, -500.0));
    }

    #[test]
    fn shifting_saturates() {
        assert_eq!(shifted(1_000, -400), 600);
        assert_eq!(shifted(1_000, 400), 1_400);
        assert_eq!(shifted(5, -10), 0);
        assert_eq!(shifted(u64::MAX - 1, 10), u64::MAX);
        assert_eq!(shifted(7, i64::MIN), 0);
        assert_eq!(shifted(u64::MAX, i64::MIN), u64::MAX - (1 << 63));
    }

    #[test]
    fn wall_offset_shifts_wall_stamps() {
        // The only test that sets the process-wide offset; it only moves the clock
        // forward, so tests reading `wall_ns` meanwhile still see a sane clock.
        assert_eq!(wall_offset_ns(), 0);
        let hour = 3_600 * 1_000_000_000i64;
        set_wall_offset_ns(hour);
        let raw = now_ns(ClockId::Realtime);
        let shifted_now = wall_ns();
        let kernel_stamp = shift_wall(1_000);
        set_wall_offset_ns(0);
        assert_eq!(kernel_stamp, 1_000 + hour as u64);
        assert!(shifted_now >= raw + hour as u64, "{shifted_now} {raw}");
        assert!(shifted_now < raw + hour as u64 + 1_000_000_000);
        assert_eq!(shift_wall(1_000), 1_000);
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
