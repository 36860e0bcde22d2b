//! What the doctor measures or asks rather than reads from a file: how late sleeps
//! wake and what a clock read costs (the measurements of `dualperf clock`), whether the
//! timer slack can be lowered, the kernel's and chrony's clock state, `ip` on `PATH`,
//! the process's CPU affinity, and a steal sample taken while the sleeps run, into
//! `lab::doctor`'s [`Live`] and [`StealSample`] (tests there fake them by hand).

use std::time::Duration;

use lab::doctor::checks::Sleeps;
use lab::doctor::sysfs::Host;
use lab::doctor::{Live, StealSample};

/// How long the doctor may take: the steal sample and the sleeps run side by side.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Budget {
    /// How long steal is sampled.
    pub(crate) steal_sample: Duration,
    /// The length of each sleep.
    pub(crate) sleep_wait_ns: u64,
    /// How many sleeps.
    pub(crate) sleep_samples: u32,
    /// Clock reads averaged for the cost of one.
    pub(crate) clock_reads: u64,
}

/// `dualperf doctor`: 200 sleeps of 1 ms (≈ 0.21 s, the steal sample's 0.25 s beside
/// them). 1 ms is the longest wait `dualperf clock` measures, the gap of a 1000 pkt/s
/// flow.
pub(crate) const FULL: Budget = Budget {
    steal_sample: Duration::from_millis(250),
    sleep_wait_ns: 1_000_000,
    sleep_samples: 200,
    clock_reads: 100_000,
};

/// [`super::record`], beside `run` and `compare`: ≈ 0.1 s (the p99 of 100 sleeps is
/// their second latest).
pub(crate) const FAST: Budget = Budget {
    steal_sample: Duration::from_millis(100),
    sleep_wait_ns: 1_000_000,
    sleep_samples: 100,
    clock_reads: 20_000,
};

/// Measures this host within `budget`: the sleeps (and the slack) on a thread of their
/// own, so the caller's timer slack stays as it was, while this thread samples steal
/// from `host`'s `/proc/stat`.
pub(crate) fn measure(host: &Host, budget: &Budget) -> (Live, StealSample) {
    let b = *budget;
    let sleeper = std::thread::spawn(move || {
        // As send's engines do: the slack at 1 ns, then read back.
        let slack_lowered = netio::clock::set_timer_slack_ns(1).is_ok()
            && netio::clock::timer_slack_ns().is_ok_and(|s| s == 1);
        let w = crate::clock::measure_waits(
            b.sleep_wait_ns,
            0,
            usize::try_from(b.sleep_samples).unwrap_or(usize::MAX),
            "sleep",
        );
        let clock_read_ns = crate::clock::clock_read_ns(b.clock_reads);
        (
            slack_lowered,
            Sleeps {
                wait_ns: w.wait_ns,
                samples: b.sleep_samples,
                overshoot_p50_ns: w.overshoot_p50_ns,
                overshoot_p99_ns: w.overshoot_p99_ns,
            },
            clock_read_ns,
        )
    });
    let t0 = netio::clock::mono_ns();
    let before = host.cpu_times();
    std::thread::sleep(budget.steal_sample);
    let after = host.cpu_times();
    let over_ns = netio::clock::mono_ns().saturating_sub(t0);
    // Meanwhile: what is not timed.
    let sync = crate::hostinfo::sync_state();
    let ip = lab::doctor::programs::find_on_path("ip");
    let cpus_allowed = netio::cpu::allowed_cpus().ok().map(|c| c.len());
    let (slack_lowered, sleeps, clock_read_ns) = sleeper.join().unwrap_or((
        false,
        Sleeps {
            wait_ns: budget.sleep_wait_ns,
            samples: 0,
            overshoot_p50_ns: 0,
            overshoot_p99_ns: 0,
        },
        0.0,
    ));
    let live = Live {
        timer_resolution_ns: netio::clock::resolution_ns(netio::clock::ClockId::Monotonic),
        clock_read_ns,
        sleeps,
        slack_lowered,
        sync,
        ip,
        cpus_allowed,
    };
    (
        live,
        StealSample {
            before,
            after,
            over_ns,
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fast_measurement_of_this_host_is_quick_and_whole() {
        let host = Host::this();
        let slack = netio::clock::timer_slack_ns().ok();
        let started = std::time::Instant::now();
        let (live, steal) = measure(&host, &FAST);
        // The budget's sleeps and sample, with room for a loaded machine.
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "{:?}",
            started.elapsed()
        );
        assert_eq!(live.sleeps.samples, FAST.sleep_samples);
        assert!(live.sleeps.overshoot_p50_ns <= live.sleeps.overshoot_p99_ns);
        assert!(live.clock_read_ns > 0.0);
        assert!(live.timer_resolution_ns >= 1);
        assert!(
            live.slack_lowered,
            "prctl on one's own thread needs no privilege"
        );
        assert!(live.cpus_allowed.is_some_and(|n| n >= 1));
        assert!(steal.over_ns >= FAST.steal_sample.as_nanos() as u64);
        let (a, b) = (steal.before.unwrap(), steal.after.unwrap());
        assert!(b.total >= a.total && b.steal >= a.steal);
        // The caller's slack is its own: the sleeps ran on a thread of their own.
        assert_eq!(netio::clock::timer_slack_ns().ok(), slack);
    }
}
