//! `dualperf clock`: how precisely this host can time packets.

use anyhow::Result;
use serde::Serialize;

/// Report timer resolution and the accuracy of sleeping and of sleep-then-spin waits.
///
/// For each wait length it runs many absolute-deadline waits and reports how late they
/// woke (overshoot). Plain sleeps overshoot by the kernel's timer slack and scheduling
/// latency; the hybrid wait used by `dualperf send` sleeps, then spins for the last part.
#[derive(Debug, clap::Args)]
pub(crate) struct ClockArgs {
    /// Waits per measurement.
    #[arg(long, default_value_t = 200)]
    samples: usize,
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

#[derive(Debug, Serialize)]
struct WaitStats {
    wait_ns: u64,
    mode: &'static str,
    overshoot_mean_ns: f64,
    overshoot_p50_ns: u64,
    overshoot_p99_ns: u64,
    overshoot_max_ns: u64,
}

#[derive(Debug, Serialize)]
struct ClockReport {
    monotonic_resolution_ns: u64,
    realtime_resolution_ns: u64,
    /// Cost of one clock read, averaged over many.
    clock_read_ns: f64,
    /// The thread's timer slack before dualperf lowers it to 1 ns for pacing.
    default_timer_slack_ns: u64,
    waits: Vec<WaitStats>,
}

pub(crate) fn run(args: ClockArgs) -> Result<()> {
    let samples = args.samples.max(10);
    let reads = 1_000_000u64;
    let t0 = netio::clock::mono_ns();
    let mut sink = 0u64;
    for _ in 0..reads {
        sink = sink.wrapping_add(netio::clock::mono_ns());
    }
    let clock_read_ns = (netio::clock::mono_ns() - t0) as f64 / reads as f64;
    std::hint::black_box(sink);
    let default_timer_slack_ns = netio::clock::timer_slack_ns().unwrap_or(0);
    let mut waits = Vec::new();
    // Measure as `send` waits: with the thread's timer slack at 1 ns.
    let _ = netio::clock::set_timer_slack_ns(1);
    for wait_ns in [10_000u64, 100_000, 1_000_000] {
        for (mode, spin_ns) in [("sleep", 0u64), ("sleep+spin 50us", 50_000)] {
            let mut over: Vec<u64> = (0..samples)
                .map(|_| {
                    let deadline = netio::clock::mono_ns() + wait_ns;
                    let woke = netio::clock::sleep_until(deadline, spin_ns);
                    woke.saturating_sub(deadline)
                })
                .collect();
            over.sort_unstable();
            // Nearest-rank percentiles, as everywhere in dualperf.
            let pick = |pct: f64| meter::percentile_nearest_rank(&over, pct).unwrap_or(0);
            waits.push(WaitStats {
                wait_ns,
                mode,
                overshoot_mean_ns: over.iter().sum::<u64>() as f64 / over.len() as f64,
                overshoot_p50_ns: pick(50.0),
                overshoot_p99_ns: pick(99.0),
                overshoot_max_ns: *over.last().unwrap_or(&0),
            });
        }
    }
    let report = ClockReport {
        monotonic_resolution_ns: netio::clock::resolution_ns(netio::clock::ClockId::Monotonic),
        realtime_resolution_ns: netio::clock::resolution_ns(netio::clock::ClockId::Realtime),
        clock_read_ns,
        default_timer_slack_ns,
        waits,
    };
    if args.json {
        return crate::out::print_json(&report);
    }
    let mut text = format!(
        "timer resolution: monotonic {} ns, realtime {} ns; one clock read ≈ {:.1} ns; timer slack {} ns (lowered to 1 ns for the waits below, as send does)",
        report.monotonic_resolution_ns, report.realtime_resolution_ns, report.clock_read_ns, report.default_timer_slack_ns
    );
    let mut t = report::text_table::Table::new(&[
        "wait",
        "mode",
        "late mean µs",
        "p50 µs",
        "p99 µs",
        "max µs",
    ]);
    for w in &report.waits {
        t.row(vec![
            format!("{} µs", w.wait_ns / 1000),
            w.mode.to_owned(),
            format!("{:.1}", w.overshoot_mean_ns / 1e3),
            format!("{:.1}", w.overshoot_p50_ns as f64 / 1e3),
            format!("{:.1}", w.overshoot_p99_ns as f64 / 1e3),
            format!("{:.1}", w.overshoot_max_ns as f64 / 1e3),
        ]);
    }
    text.push('\n');
    text.push_str(&t.render());
    crate::out::print(text)
}
