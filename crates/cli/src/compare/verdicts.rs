//! The battery's statistics and what a reader sees: each test's verdict per metric from
//! its repetitions (`meter::verdict`: medians, IPv6 − IPv4 with its interval, a false
//! discovery rate over the whole table), one table per metric, and a closing summary in
//! plain words.

use meter::repeat::Verdict;
use meter::verdict::{RunsComparison, RunsInput, Scale, DEFAULT_FDR};
use results::compare::{CompareReport, Point, PointStats, Side, Verdicts};

/// A metric of the table: where its figure is in a run and in a test's statistics, its
/// unit, and its range.
struct Metric {
    /// The table's title.
    title: &'static str,
    /// The metric in a sentence.
    noun: &'static str,
    /// The unit shown.
    unit: &'static str,
    /// Stored value / shown value.
    scale: f64,
    /// Decimals shown.
    digits: usize,
    /// The run's figure.
    get: fn(&Side) -> Option<f64>,
    /// The test's verdict.
    stat: fn(&mut PointStats) -> &mut Option<RunsComparison>,
    /// The largest value the metric can take (it cannot go below 0).
    high: f64,
    /// Compared as a ratio (a positive quantity) or as a difference (one that can be 0).
    compared: Scale,
    /// How finely a run's value is known (`meter::verdict::RunsInput::resolution`).
    resolution: f64,
}

const METRICS: [Metric; 4] = [
    Metric {
        title: "Throughput",
        noun: "throughput",
        unit: "Mbit/s",
        scale: 1e6,
        digits: 3,
        get: |s| s.throughput_bps,
        stat: |p| &mut p.throughput_bps,
        high: f64::INFINITY,
        compared: Scale::Log,
        resolution: 0.0,
    },
    Metric {
        title: "Round-trip time, median",
        noun: "round-trip time",
        unit: "µs",
        scale: 1e3,
        digits: 1,
        get: |s| s.rtt_median_ns,
        stat: |p| &mut p.rtt_median_ns,
        high: f64::INFINITY,
        compared: Scale::Log,
        // Each run's median is read from its round-trip histogram.
        resolution: meter::hist::RELATIVE_ERROR,
    },
    Metric {
        title: "Jitter",
        noun: "jitter",
        unit: "µs",
        scale: 1e3,
        digits: 1,
        get: |s| s.jitter_ns,
        stat: |p| &mut p.jitter_ns,
        high: f64::INFINITY,
        compared: Scale::Log,
        resolution: 0.0,
    },
    Metric {
        title: "Loss",
        noun: "loss",
        unit: "%",
        scale: 1.0,
        digits: 3,
        get: |s| s.loss_pct,
        stat: |p| &mut p.loss_pct,
        high: 100.0,
        compared: Scale::Linear,
        resolution: 0.0,
    },
];

/// Fills each point's statistics from its runs, all metrics of all tests as one table
/// whose verdicts hold [`DEFAULT_FDR`], and says how.
pub(super) fn assess(points: &mut [Point]) -> Verdicts {
    // (point, metric, IPv4's values, IPv6's values, the repetitions' pairs)
    type Cell = (usize, usize, Vec<f64>, Vec<f64>, Vec<(f64, f64)>);
    let mut cells: Vec<Cell> = Vec::new();
    for (p, point) in points.iter().enumerate() {
        for (m, metric) in METRICS.iter().enumerate() {
            // A run that fell behind its schedule is kept in --json, not counted here.
            let figure = |s: &Option<Side>| {
                s.as_ref()
                    .filter(|s| super::fell_behind(s).is_none())
                    .and_then(metric.get)
            };
            let a = point.runs.iter().filter_map(|r| figure(&r.ipv4)).collect();
            let b = point.runs.iter().filter_map(|r| figure(&r.ipv6)).collect();
            let pairs = point
                .runs
                .iter()
                .filter_map(|r| Some((figure(&r.ipv4)?, figure(&r.ipv6)?)))
                .collect();
            cells.push((p, m, a, b, pairs));
        }
    }
    let inputs: Vec<RunsInput<'_>> = cells
        .iter()
        .map(|(_, m, a, b, pairs)| RunsInput {
            a,
            b,
            pairs,
            low: 0.0,
            high: METRICS[*m].high,
            scale: METRICS[*m].compared,
            // The tests of one metric share the host's run-to-run spread.
            group: *m,
            resolution: METRICS[*m].resolution,
        })
        .collect();
    let v = meter::verdict::verdicts(&inputs, DEFAULT_FDR)
        .expect("DEFAULT_FDR is strictly between 0 and 1");
    for ((p, m, ..), c) in cells.iter().zip(v.comparisons) {
        *(METRICS[*m].stat)(&mut points[*p].stats) = c;
    }
    Verdicts {
        fdr: v.fdr,
        tested: v.tested as u64,
        discoveries: v.discoveries as u64,
        level: v.level,
    }
}

/// `v` in a metric's shown unit with a sign; more decimals when the usual ones would
/// round a non-zero difference to 0.
fn signed(v: f64, digits: usize) -> String {
    let mut d = digits;
    while d < digits + 4
        && v != 0.0
        && format!("{:.*}", d, v.abs())
            .trim_matches(['0', '.'])
            .is_empty()
    {
        d += 1;
    }
    format!("{v:+.d$}")
}

fn plain(v: Option<f64>, digits: usize) -> String {
    v.map_or("-".to_owned(), |x| format!("{x:.digits$}"))
}

fn interval(low: Option<f64>, high: Option<f64>, scale: f64, digits: usize) -> String {
    match (low, high) {
        (Some(l), Some(h)) => format!(
            "[{}, {}]",
            signed(l / scale, digits),
            signed(h / scale, digits)
        ),
        _ => "-".to_owned(),
    }
}

/// One metric's table, or one line when the metric is 0 in every run of every test (a
/// loss table of zeros says nothing a line cannot).
fn metric_table(r: &CompareReport, metric: &Metric, out: &mut String) {
    let mut stats: Vec<(&Point, Option<RunsComparison>)> = Vec::new();
    for p in &r.points {
        let mut s = p.stats.clone();
        stats.push((p, *(metric.stat)(&mut s)));
    }
    let all_zero = r.points.iter().all(|p| {
        p.runs
            .iter()
            .flat_map(|run| [run.ipv4.as_ref(), run.ipv6.as_ref()])
            .flatten()
            .all(|s| (metric.get)(s).is_none_or(|v| v == 0.0))
    });
    if all_zero {
        out.push_str(&format!(
            "{}: 0 in every run of every test, over both families.\n",
            metric.title
        ));
        return;
    }
    let d = metric.digits;
    let mut t = report::text_table::Table::new(&[
        &format!("{} ({})", metric.title, metric.unit),
        "runs",
        "IPv4",
        "IPv6",
        "Δ",
        "interval",
        "Δ %",
        "interval %",
    ]);
    for (p, c) in stats {
        let Some(c) = c else {
            t.row(vec![p.name.clone(), "-".into(), "-".into(), "-".into()]);
            continue;
        };
        let (delta, delta_pct) = match c.verdict {
            Verdict::Significant => (
                signed(c.diff / metric.scale, d),
                c.rel_diff_pct.map_or("-".into(), |x| signed(x, 1)),
            ),
            Verdict::NotSignificant => ("≈".into(), "≈".into()),
            // No test: the difference in parentheses, no sign of a finding.
            Verdict::Undefined => (
                format!("({})", signed(c.diff / metric.scale, d)),
                "-".into(),
            ),
        };
        t.row(vec![
            p.name.clone(),
            format!("{}+{}", c.n_a, c.n_b),
            plain(Some(c.median_a / metric.scale), d),
            plain(Some(c.median_b / metric.scale), d),
            delta,
            interval(c.ci_low, c.ci_high, metric.scale, d),
            delta_pct,
            interval(c.rel_ci_low_pct, c.rel_ci_high_pct, 1.0, 1),
        ]);
    }
    out.push_str(&t.render());
}

/// The summary in plain words: per metric, where IPv6 differs, by how much and in how
/// many tests; the metrics that show no difference together at the end.
pub(super) fn summary(r: &CompareReport) -> Vec<String> {
    let mut lines = Vec::new();
    let mut quiet: Vec<&str> = Vec::new();
    for metric in &METRICS {
        let mut tested = 0;
        let mut up: Vec<(f64, Option<f64>)> = Vec::new();
        let mut down: Vec<(f64, Option<f64>)> = Vec::new();
        for p in &r.points {
            let mut s = p.stats.clone();
            let Some(c) = *(metric.stat)(&mut s) else {
                continue;
            };
            if c.verdict == Verdict::Undefined {
                continue;
            }
            tested += 1;
            if c.verdict == Verdict::Significant {
                let shown = (c.diff / metric.scale, c.rel_diff_pct);
                if c.diff > 0.0 {
                    up.push(shown);
                } else {
                    down.push(shown);
                }
            }
        }
        if tested == 0 {
            continue;
        }
        let range = |v: &[(f64, Option<f64>)]| {
            let abs: Vec<f64> = v.iter().map(|x| x.0.abs()).collect();
            let pct: Vec<f64> = v.iter().filter_map(|x| x.1.map(f64::abs)).collect();
            let span = |xs: &[f64], digits: usize| {
                let lo = xs.iter().copied().fold(f64::INFINITY, f64::min);
                let hi = xs.iter().copied().fold(0.0, f64::max);
                let f = |x: f64| signed(x, digits).trim_start_matches('+').to_owned();
                if f(lo) == f(hi) {
                    f(lo)
                } else {
                    format!("{}–{}", f(lo), f(hi))
                }
            };
            let mut s = format!("{} {}", span(&abs, metric.digits), metric.unit);
            if pct.len() == v.len() && !pct.is_empty() {
                s.push_str(&format!(" ({} %)", span(&pct, 0)));
            }
            s
        };
        let of = |k: usize| {
            if k == 1 {
                format!("1 of {tested} tests")
            } else {
                format!("{k} of {tested} tests")
            }
        };
        let title = capitalised(metric.noun);
        match (up.is_empty(), down.is_empty()) {
            (true, true) => quiet.push(metric.noun),
            (false, true) => lines.push(format!(
                "{title} is {} higher over IPv6 on this host (significant in {}).",
                range(&up),
                of(up.len())
            )),
            (true, false) => lines.push(format!(
                "{title} is {} lower over IPv6 on this host (significant in {}).",
                range(&down),
                of(down.len())
            )),
            (false, false) => lines.push(format!(
                "{title} differs both ways: {} higher over IPv6 in {}, {} lower in {}.",
                range(&up),
                of(up.len()),
                range(&down),
                down.len()
            )),
        }
    }
    if r.verdicts.tested == 0 {
        lines.push("No verdicts: each family needs at least 2 runs of a test (--repeat).".into());
    } else if !quiet.is_empty() {
        let list = match quiet.as_slice() {
            [one] => capitalised(one),
            [init @ .., last] => format!("{} and {last}", capitalised(&init.join(", "))),
            [] => unreachable!("not empty"),
        };
        let verb = if quiet.len() == 1 { "shows" } else { "show" };
        lines.push(format!(
            "{list} {verb} no difference between the families in any test (≈ throughout)."
        ));
    }
    lines
}

fn capitalised(s: &str) -> String {
    let mut c = s.chars();
    c.next()
        .map_or(String::new(), |f| f.to_uppercase().chain(c).collect())
}

/// The whole text report: the battery's description, one table per metric, the
/// summary, the host's warnings, and how to read it all.
pub(super) fn render(r: &CompareReport) -> String {
    let path = if r.target == "loopback" {
        "IPv4 (127.0.0.1) vs IPv6 (::1)".to_owned()
    } else {
        format!("IPv4 vs IPv6 through {}", r.target)
    };
    let mut out = format!(
        "dualperf compare: {path}, round-trip meter; {} run{} a family per test, interleaved, {} each; sizes {} B at {}, VoIP at its codec's rate, games by their models{}\n",
        r.repetitions,
        if r.repetitions == 1 { "" } else { "s" },
        crate::human::span(std::time::Duration::from_nanos(r.duration_ns)),
        r.sizes_bytes.iter().map(u32::to_string).collect::<Vec<_>>().join("/"),
        r.rate,
        if r.interrupted { " (interrupted)" } else { "" },
    );
    out.push_str(&format!(
        "Medians of each family's runs; Δ: IPv6 against IPv4, the median of the pairs (each pass's IPv6 run against its IPv4 run), with its\ninterval. ≈: the interval holds 0, the runs show no difference.\n{}\n",
        match r.verdicts.level {
            Some(level) => format!(
                "Verdicts hold a {:.0} % false discovery rate over all {} comparisons (Benjamini–Hochberg); every interval is at {} % (adjusted to match).",
                r.verdicts.fdr * 100.0,
                r.verdicts.tested,
                level_pct(level)
            ),
            None => "No verdicts: each family needs at least 2 runs of a test.".to_owned(),
        }
    ));
    for metric in &METRICS {
        out.push('\n');
        metric_table(r, metric, &mut out);
    }
    out.push('\n');
    for line in &r.summary {
        out.push_str(line);
        out.push('\n');
    }
    if let Some(doc) = &r.doctor {
        // Only what bears on this comparison: on one host, clock synchronisation does not;
        // on loopback, neither do the lab's needs. --json keeps every check.
        let scope = results::doctor::Scope::of_target(&r.target);
        let problems: Vec<_> = doc.problems_for(scope).collect();
        if !problems.is_empty() {
            out.push_str("\nHost check (dualperf doctor; the figures above may carry these):\n");
            for c in problems {
                out.push_str(&format!("  {}\n", c.line()));
            }
        }
    }
    let errors: usize = r.points.iter().map(|p| p.errors.len()).sum();
    if errors > 0 {
        out.push_str(&format!(
            "\n{errors} run{} failed (each named above on stderr and in --json's errors); the statistics use the runs that did.\n",
            if errors == 1 { "" } else { "s" }
        ));
    }
    out.push_str(&format!(
        "\nThroughput: receiver payload bit rate. RTT: each run's median round trip, less the time the receiver held each\n\
         probe (as irtt does). Jitter: mean |ΔRTT| in arrival order (D-ITG). Loss: RFC 7680, % of packets sent.\n\
         runs: IPv4's + IPv6's. (Δ): no verdict (fewer than 2 pairs, or no spread at all). How to read it: docs/compare.md.\n{}\n",
        if r.target == "loopback" {
            "Loopback has no wire: differences reflect the stacks, not headers on a link."
        } else {
            "Through the lab the headers count: every frame crosses the emulated links at their rate."
        }
    ));
    out
}

/// A confidence level as a percentage: whole when it is, else with the fewest decimals
/// (at least two) that do not round it up to 100.
fn level_pct(level: f64) -> String {
    let pct = level * 100.0;
    if (pct - pct.round()).abs() < 1e-9 {
        return format!("{pct:.0}");
    }
    (2..8)
        .map(|d| format!("{pct:.d$}"))
        .find(|s| s.parse::<f64>().is_ok_and(|v| v < 100.0))
        .unwrap_or_else(|| format!("{pct}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use results::compare::Repetition;
    use wire::control::Protocol;

    fn splitmix(state: &mut u64) -> u64 {
        *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = *state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn uniform(state: &mut u64) -> f64 {
        ((splitmix(state) >> 11) as f64 + 0.5) / (1u64 << 53) as f64
    }

    /// A standard normal draw (Box–Muller).
    fn normal(state: &mut u64) -> f64 {
        let (u1, u2) = (uniform(state), uniform(state));
        (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
    }

    fn side(throughput_bps: f64, rtt_ns: f64, jitter_ns: f64, loss_pct: f64) -> Side {
        let flow = serde_json::from_value(serde_json::json!({
            "id": 1,
            "spec": traffic::FlowSpec::default(),
            "sent": {"packets": 1000, "bytes": 64000},
        }))
        .expect("a minimal flow outcome");
        Side {
            throughput_bps: Some(throughput_bps),
            rtt_mean_ns: Some(rtt_ns),
            rtt_median_ns: Some(rtt_ns),
            jitter_ns: Some(jitter_ns),
            loss_pct: Some(loss_pct),
            sent_packets: 1000,
            received_packets: Some(1000),
            attempts: 1,
            flow,
        }
    }

    /// One run of test `t` as loopback gives them, noisily: every figure drawn around
    /// the test's own centre with a skewed (log-normal) run-to-run spread; the round trip
    /// is the host's state at that moment (`host`, shared by the two runs of a pair)
    /// times a run's own 3 % spread times `rtt_factor`.
    fn run_of(state: &mut u64, t: usize, host: f64, rtt_factor: f64) -> Side {
        let lognormal =
            |state: &mut u64, centre: f64, sigma: f64| centre * (sigma * normal(state)).exp();
        let loss = if uniform(state) < 0.2 {
            0.05 * uniform(state)
        } else {
            0.0
        };
        side(
            lognormal(state, 2e6 * (t + 1) as f64, 0.01),
            lognormal(state, 5_000.0 + 4_000.0 * t as f64, 0.03) * host * rtt_factor,
            lognormal(state, 800.0 + 300.0 * t as f64, 0.5),
            loss,
        )
    }

    /// A battery of 16 tests × `reps` runs a family, every family's runs drawn from one
    /// distribution, except IPv6's round trips in the first `shifted` tests, which are
    /// `rtt_factor` times longer. The host's state varies from pair to pair by a
    /// log-normal factor of σ `host_sigma`.
    fn fixture(
        seed: u64,
        reps: u32,
        host_sigma: f64,
        shifted: usize,
        rtt_factor: f64,
    ) -> CompareReport {
        let mut state = seed;
        let mut points: Vec<Point> = (0..16)
            .map(|t| Point {
                name: format!("test {t}"),
                protocol: Protocol::Udp,
                size_bytes: 64,
                rate: None,
                runs: (0..reps)
                    .map(|rep| {
                        let factor = if t < shifted { rtt_factor } else { 1.0 };
                        let host = (host_sigma * normal(&mut state)).exp();
                        Repetition {
                            repetition: rep + 1,
                            ipv6_first: (rep as usize + t) % 2 == 1,
                            ipv4: Some(run_of(&mut state, t, host, 1.0)),
                            ipv6: Some(run_of(&mut state, t, host, factor)),
                        }
                    })
                    .collect(),
                stats: PointStats::default(),
                errors: Vec::new(),
            })
            .collect();
        let verdicts = assess(&mut points);
        let mut r = CompareReport {
            format_version: results::compare::COMPARE_FORMAT_VERSION,
            tool: "dualperf test".into(),
            target: "loopback".into(),
            rate: traffic::Rate::MilliPps(5_000_000),
            sizes_bytes: vec![64],
            duration_ns: 400_000_000,
            model_duration_ns: 400_000_000,
            repetitions: reps,
            interrupted: false,
            quick: true,
            verdicts,
            summary: Vec::new(),
            doctor: None,
            points,
        };
        r.summary = summary(&r);
        r
    }

    /// The data rows of each metric's table in the text report.
    fn table_rows(text: &str) -> Vec<Vec<String>> {
        text.lines()
            .filter(|l| l.starts_with("test "))
            .map(|l| {
                l.split("  ")
                    .map(str::trim)
                    .filter(|c| !c.is_empty())
                    .map(str::to_owned)
                    .collect()
            })
            .collect()
    }

    #[test]
    fn noise_from_one_distribution_gives_no_verdict_in_any_row() {
        let r = fixture(2026, 3, 0.15, 0, 1.0);
        // 16 tests × 4 metrics, every one testable.
        assert_eq!(r.verdicts.tested, 64);
        assert_eq!(r.verdicts.discoveries, 0, "{:#?}", r.points[0].stats);
        let text = render(&r);
        let rows = table_rows(&text);
        assert_eq!(rows.len(), 64, "{text}");
        for row in &rows {
            // test, runs, IPv4, IPv6, Δ, interval, Δ %, interval %
            assert_eq!(row[1], "3+3", "{row:?}");
            assert_eq!(
                (row[4].as_str(), row[6].as_str()),
                ("≈", "≈"),
                "{row:?}\n{text}"
            );
            assert!(row[5].starts_with('['), "{row:?}");
        }
        assert_eq!(
            r.summary,
            ["Throughput, round-trip time, jitter and loss show no difference between the families in any test (≈ throughout)."]
        );
        // The medians still differ from row to row, as noise does: the table does not
        // hide them, it declines to call them a difference.
        assert!(rows.iter().any(|row| row[2] != row[3]));
    }

    /// Over many such batteries, few show any difference at all: the verdicts allow for
    /// the table's 64 comparisons (a 5 % false discovery rate, which is the chance of
    /// any false verdict when there is no real difference).
    #[test]
    fn batteries_of_noise_rarely_show_a_difference() {
        let batteries = 300;
        let any = (0..batteries)
            .filter(|seed| fixture(*seed, 3, 0.15, 0, 1.0).verdicts.discoveries > 0)
            .count();
        assert!(
            any as f64 <= 0.07 * batteries as f64,
            "{any} of {batteries}"
        );
    }

    #[test]
    fn a_real_shift_is_shown_with_an_interval_that_covers_it() {
        // A host whose state moves the round trips by 15 % from pair to pair, each run
        // by 3 % more on its own: IPv6 adds 20 % to the round trip of the first 8 tests
        // in a default battery (5 runs a family), 50 % in a --quick one (3).
        for (reps, factor) in [(3, 1.5), (5, 1.2)] {
            shift_found(reps, factor);
        }
    }

    fn shift_found(reps: u32, factor: f64) {
        let r = fixture(23, reps, 0.15, 8, factor);
        let shift_pct = (factor - 1.0) * 100.0;
        for (t, p) in r.points.iter().enumerate() {
            let c = p.stats.rtt_median_ns.unwrap();
            let (low, high) = (c.rel_ci_low_pct.unwrap(), c.rel_ci_high_pct.unwrap());
            if t < 8 {
                assert_eq!(c.verdict, Verdict::Significant, "{reps} {t}: {c:?}");
                assert!(low <= shift_pct && shift_pct <= high, "{reps} {t}: {c:?}");
                assert!(low > 0.0 && c.ci_low.unwrap() > 0.0);
            } else {
                assert_eq!(c.verdict, Verdict::NotSignificant, "{reps} {t}: {c:?}");
                assert!(low <= 0.0 && 0.0 <= high);
            }
            for other in [p.stats.throughput_bps, p.stats.jitter_ns, p.stats.loss_pct] {
                assert_eq!(
                    other.unwrap().verdict,
                    Verdict::NotSignificant,
                    "{reps} {t}"
                );
            }
        }
        let text = render(&r);
        let rtt_rows: Vec<Vec<String>> = table_rows(&text).into_iter().skip(16).take(16).collect();
        for row in &rtt_rows[..8] {
            assert!(
                row[4].starts_with('+') && row[6].starts_with('+'),
                "{row:?}"
            );
        }
        assert_eq!(r.summary.len(), 2, "{:?}", r.summary);
        assert!(
            r.summary[0].starts_with("Round-trip time is ")
                && r.summary[0].contains(" µs (")
                && r.summary[0]
                    .ends_with("higher over IPv6 on this host (significant in 8 of 16 tests)."),
            "{}",
            r.summary[0]
        );
        assert_eq!(
            r.summary[1],
            "Throughput, jitter and loss show no difference between the families in any test (≈ throughout)."
        );
    }

    #[test]
    fn one_run_a_family_gives_medians_without_verdicts() {
        let r = fixture(5, 1, 0.15, 0, 1.0);
        assert_eq!(r.verdicts.tested, 0);
        assert_eq!(r.verdicts.level, None);
        let text = render(&r);
        let rows = table_rows(&text);
        assert!(
            rows.iter()
                .all(|row| row[4].starts_with('(') && row[5] == "-"),
            "{text}"
        );
        assert_eq!(
            r.summary,
            ["No verdicts: each family needs at least 2 runs of a test (--repeat)."]
        );
    }

    #[test]
    fn a_loss_table_of_zeros_is_one_line() {
        let mut r = fixture(9, 3, 0.15, 0, 1.0);
        for p in &mut r.points {
            for run in &mut p.runs {
                for s in [&mut run.ipv4, &mut run.ipv6].into_iter().flatten() {
                    s.loss_pct = Some(0.0);
                }
            }
        }
        let text = render(&r);
        assert!(
            text.contains("\nLoss: 0 in every run of every test, over both families.\n"),
            "{text}"
        );
        assert_eq!(table_rows(&text).len(), 48);
    }

    #[test]
    fn small_differences_keep_a_digit_and_levels_read_plainly() {
        assert_eq!(signed(0.0004, 3), "+0.0004");
        assert_eq!(signed(-0.25, 1), "-0.2");
        assert_eq!(signed(0.0, 1), "+0.0");
        assert_eq!(level_pct(0.95), "95");
        assert_eq!(level_pct(1.0 - 0.05 / 64.0), "99.92");
        assert_eq!(level_pct(0.999_999), "99.9999");
    }

    /// Under the tables, only the host's problems that bear on the comparison: on
    /// loopback not the lab's needs, on one host not clock synchronisation.
    #[test]
    fn the_host_checks_shown_are_those_that_bear_on_the_comparison() {
        use results::doctor::{CheckId, Status};
        let mut doc = crate::doctor::record();
        for c in &mut doc.checks {
            c.status = match c.id {
                CheckId::Steal | CheckId::ClockSync | CheckId::Namespaces => Status::Warn,
                _ => Status::Ok,
            };
        }
        let mut r = fixture(1, 2, 0.15, 0, 1.0);
        r.doctor = Some(doc);
        let text = render(&r);
        assert!(text.contains("\n  warn steal: "), "{text}");
        assert!(
            !text.contains("clock-sync") && !text.contains("namespaces"),
            "{text}"
        );
        r.target = "lab:two-hop".into();
        let text = render(&r);
        assert!(text.contains("\n  warn steal: ") && text.contains("\n  warn namespaces: "));
        assert!(!text.contains("clock-sync"), "{text}");
    }

    /// A run that fell behind its schedule stays in the document but not in the
    /// statistics: it measured the host, not the stacks.
    #[test]
    fn a_run_that_fell_behind_is_kept_but_not_counted() {
        let mut r = fixture(3, 5, 0.15, 0, 1.0);
        let run = r.points[0].runs[2].ipv4.as_mut().unwrap();
        run.flow.sent.planned_packets = Some(1000);
        run.sent_packets = 899;
        assert_eq!(
            super::super::fell_behind(run).as_deref(),
            Some("sent 899 of 1000 planned packets: the host fell behind (dualperf doctor may say why); not counted")
        );
        let kept = r.points[1].runs[2].ipv4.as_mut().unwrap();
        kept.flow.sent.planned_packets = Some(1000);
        kept.sent_packets = 900;
        assert_eq!(super::super::fell_behind(kept), None);
        assess(&mut r.points);
        let c = r.points[0].stats.rtt_median_ns.unwrap();
        assert_eq!((c.n_a, c.n_b, c.n_pairs), (4, 5, 4));
        assert_eq!(r.points[1].stats.rtt_median_ns.unwrap().n_pairs, 5);
        assert!(r.points[0].runs[2].ipv4.is_some(), "kept in the document");
    }
}
