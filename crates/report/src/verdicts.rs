//! The verdict layer: IPv6 against IPv4 for every point and metric of the plan's
//! tables, as one page of comparisons (`results::compare::CompareReport`).
//!
//! - **Paired analysis** where the runs are pairs: a plan ordered "interleaved" or
//!   "alternating" runs each point over both families back to back in every repetition,
//!   so each repetition's IPv6 run is compared with its IPv4 run and what the host does
//!   to both cancels. Each family's median, the median of the pairs' differences with
//!   its interval, and a verdict; the verdicts hold a false discovery rate over every
//!   comparison of the page (Benjamini–Hochberg, `meter::verdict`), and the intervals
//!   are widened to match. A run that fell behind its schedule
//!   ([`results::compare::fell_behind`]) is left out, and named.
//! - **Pooled analysis** otherwise (order "random"): no pairs, no verdict here; the
//!   report's tables compare each family's mean by Welch's t-test, and the page says so.
//!
//! `dualperf compare` prints [`render`] of its run directory; `dualperf report` prints
//! the same under its tables.

use std::collections::BTreeMap;

use lab::plan::Order;
use lab::store::RunRecord;
use lab::tables::Column;
use meter::repeat::Verdict;
use meter::verdict::{RunsInput, Scale, DEFAULT_FDR};
use results::compare::{
    fell_behind, Analysis, CompareReport, Point, Repetition, Side, VerdictRow, VerdictTable,
    Verdicts, COMPARE_FORMAT_VERSION,
};

use crate::load::Runs;
use crate::tables::Table;

/// Whether the runs are pairs: the plan ran each point over both families back to back.
pub fn paired(runs: &Runs) -> bool {
    matches!(
        runs.provenance.order,
        Some(Order::Interleaved | Order::Alternating)
    )
}

/// The verdict tables: the declared tables, or every table when the plan declares none.
fn verdict_tables(tables: &[Table]) -> Vec<&Table> {
    let declared: Vec<&Table> = tables.iter().filter(|t| t.declared).collect();
    if declared.is_empty() {
        tables.iter().collect()
    } else {
        declared
    }
}

/// A column's key: `throughput`, `bg1.loss`, `r1.cpu_per_frame`.
fn column_key(c: &Column) -> String {
    match (&c.router, c.flow) {
        (Some(r), _) => format!("{r}.{}", c.metric.key),
        (None, 0) => c.metric.key.to_owned(),
        (None, n) => format!("bg{n}.{}", c.metric.key),
    }
}

/// How a metric is compared (`meter::verdict::RunsInput`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Spec {
    /// As a ratio or as a difference.
    pub scale: Scale,
    /// The smallest value it can take.
    pub low: f64,
    /// The largest.
    pub high: f64,
    /// How finely a run's value is known.
    pub resolution: f64,
}

/// How a metric is compared: as a ratio on the logarithms for a quantity that is never
/// 0 (a rate, a time), as a difference for one that can be (a percentage); the range
/// it can take; how finely a run's value is known (a figure read from a histogram,
/// within its buckets' relative error).
fn comparison_of(c: &Column) -> Spec {
    let pct = c.metric.base_unit() == "%";
    let (scale, high) = if pct {
        (Scale::Linear, 100.0)
    } else {
        (Scale::Log, f64::INFINITY)
    };
    let low = if c.metric.non_negative {
        0.0
    } else {
        f64::NEG_INFINITY
    };
    // A median is read from the run's histogram of round trips.
    let resolution = if c.metric.key.ends_with("_median") {
        meter::hist::RELATIVE_ERROR
    } else {
        0.0
    };
    Spec {
        scale,
        low,
        high,
        resolution,
    }
}

/// Fills each row of `tables` with its comparison (`specs[i]` says how table `i`'s
/// metric is compared), all of them as one page whose verdicts hold [`DEFAULT_FDR`]:
/// with pairs under paired analysis, without (medians only, no verdict) under pooled.
/// Runs that do not count (`Side::not_counted`) are left out.
pub fn judge(
    points: &[Point],
    tables: &mut [VerdictTable],
    specs: &[Spec],
    analysis: Analysis,
) -> Verdicts {
    // (table, IPv4's values, IPv6's values, the repetitions' pairs)
    type Cell = (usize, Vec<f64>, Vec<f64>, Vec<(f64, f64)>);
    let mut cells: Vec<Cell> = Vec::new();
    for (m, t) in tables.iter().enumerate() {
        for row in &t.rows {
            let runs = points
                .iter()
                .find(|p| p.id == row.point)
                .map_or(&[][..], |p| &p.runs[..]);
            let figure = |s: &Option<Side>| {
                let s = s.as_ref().filter(|s| s.not_counted.is_none())?;
                s.figures.get(&t.metric).copied()
            };
            let a = runs.iter().filter_map(|r| figure(&r.ipv4)).collect();
            let b = runs.iter().filter_map(|r| figure(&r.ipv6)).collect();
            let pairs = match analysis {
                Analysis::Paired => runs
                    .iter()
                    .filter_map(|r| Some((figure(&r.ipv4)?, figure(&r.ipv6)?)))
                    .collect(),
                Analysis::Pooled => Vec::new(),
            };
            cells.push((m, a, b, pairs));
        }
    }
    let inputs: Vec<RunsInput<'_>> = cells
        .iter()
        .map(|(m, a, b, pairs)| RunsInput {
            a,
            b,
            pairs,
            low: specs[*m].low,
            high: specs[*m].high,
            scale: specs[*m].scale,
            // The points of one metric share the host's run-to-run spread.
            group: *m,
            resolution: specs[*m].resolution,
        })
        .collect();
    let v = meter::verdict::verdicts(&inputs, DEFAULT_FDR)
        .expect("DEFAULT_FDR is strictly between 0 and 1");
    let mut found = v.comparisons.into_iter();
    for t in tables.iter_mut() {
        for row in &mut t.rows {
            row.comparison = found.next().flatten();
        }
    }
    Verdicts {
        fdr: v.fdr,
        tested: v.tested as u64,
        discoveries: v.discoveries as u64,
        level: v.level,
    }
}

/// The decimals a unit is shown with.
fn digits(unit: &str) -> usize {
    match unit {
        "µs" | "us" | "kbit/s" | "Kbit/s" | "kbps" | "Kbps" | "pkt/s" => 1,
        "ns" | "bit/s" => 0,
        _ => 3,
    }
}

/// The page of verdicts of `runs`, over the plan's `tables` (the report's, with their
/// units), for the run directory `dir`.
pub fn compare_doc(runs: &Runs, tables: &[Table], dir: Option<String>) -> CompareReport {
    let analysis = if paired(runs) {
        Analysis::Paired
    } else {
        Analysis::Pooled
    };
    let shown = verdict_tables(tables);
    // Every column of every verdict table, each once per table.
    let columns: Vec<(&Table, &Column)> = shown
        .iter()
        .flat_map(|t| t.metrics.iter().map(move |c| (*t, c)))
        .collect();
    let points = points(runs, &columns);
    let mut specs = Vec::new();
    let mut vtables: Vec<VerdictTable> = Vec::new();
    for (t, c) in &columns {
        let key = column_key(c);
        let all_zero = points
            .iter()
            .filter(|p| t.rows.iter().any(|row| row.point == p.id))
            .flat_map(|p| p.runs.iter().flat_map(|r| [&r.ipv4, &r.ipv6]))
            .flatten()
            .filter_map(|s| s.figures.get(&key))
            .all(|v| *v == 0.0);
        specs.push(comparison_of(c));
        vtables.push(VerdictTable {
            title: t.title.clone(),
            metric: key,
            heading: c.heading(),
            unit: c.unit.name.clone(),
            scale: c.unit.scale,
            noun: c.metric.title.to_lowercase(),
            all_zero,
            rows: t
                .rows
                .iter()
                .filter(|row| points.iter().any(|p| p.id == row.point))
                .map(|row| VerdictRow {
                    point: row.point.clone(),
                    label: row.label.clone(),
                    comparison: None,
                })
                .collect(),
        });
    }
    let verdicts = judge(&points, &mut vtables, &specs, analysis);
    let mut doc = CompareReport {
        format_version: COMPARE_FORMAT_VERSION,
        tool: format!("dualperf {}", env!("CARGO_PKG_VERSION")),
        dir,
        plan: runs.provenance.plan.clone().unwrap_or_default(),
        target: runs
            .provenance
            .target
            .clone()
            .unwrap_or_else(|| "loopback".into()),
        repetitions: runs.provenance.repetitions.unwrap_or(0),
        duration_ns: runs.provenance.duration_ns.unwrap_or(0),
        quick: runs.provenance.quick,
        interrupted: !runs.completeness.is_whole(),
        analysis,
        verdicts,
        tables: vtables,
        summary: Vec::new(),
        host_checks: runs.provenance.doctor.clone(),
        definitions: definitions(&columns),
        points,
    };
    doc.summary = summary(&doc);
    doc
}

/// Each metric's definition once, `Title: definition`.
fn definitions(columns: &[(&Table, &Column)]) -> Vec<String> {
    let mut seen = Vec::new();
    let mut lines = Vec::new();
    for (_, c) in columns {
        let key = c.metric.key;
        if !seen.contains(&key) {
            seen.push(key);
            lines.push(format!("{}: {}.", c.metric.title, c.metric.definition));
        }
    }
    lines
}

/// The points of the verdict tables, in plan order, each with its runs paired by
/// repetition and their figures for `columns`.
fn points(runs: &Runs, columns: &[(&Table, &Column)]) -> Vec<Point> {
    let mut by_point: BTreeMap<&str, Vec<&RunRecord>> = BTreeMap::new();
    for r in &runs.records {
        by_point.entry(r.point.as_str()).or_default().push(r);
    }
    let mut out = Vec::new();
    for id in &runs.order {
        let in_tables = columns
            .iter()
            .any(|(t, _)| t.rows.iter().any(|row| &row.point == id));
        let Some(records) = by_point.get(id.as_str()).filter(|_| in_tables) else {
            continue;
        };
        let label = columns
            .iter()
            .flat_map(|(t, _)| &t.rows)
            .find(|row| &row.point == id)
            .map_or_else(|| id.clone(), |row| row.label.clone());
        let mut reps: BTreeMap<u32, Repetition> = BTreeMap::new();
        let mut errors = Vec::new();
        for r in records {
            let Some(side) = side(r, columns) else {
                continue;
            };
            if let Some(why) = &side.not_counted {
                errors.push(format!(
                    "run {} IPv{}: {why}",
                    r.run.repetition, r.run.family
                ));
            }
            let rep = reps.entry(r.run.repetition).or_insert(Repetition {
                repetition: r.run.repetition,
                ipv6_first: false,
                ipv4: None,
                ipv6: None,
            });
            if r.run.family == 6 {
                rep.ipv6_first = rep.ipv4.is_none();
                rep.ipv6 = Some(side);
            } else {
                rep.ipv4 = Some(side);
            }
        }
        let spec = records
            .iter()
            .find_map(|r| r.report.as_ref()?.flows.first())
            .map(|f| f.spec.clone())
            .unwrap_or_default();
        out.push(Point {
            id: id.clone(),
            name: label,
            protocol: spec.protocol,
            size_bytes: spec.size_bytes,
            rate: spec.idt_ms.is_none().then_some(spec.rate),
            runs: reps.into_values().collect(),
            errors,
        });
    }
    out
}

/// A run's side: its figures for every column, and whether it counts.
fn side(r: &RunRecord, columns: &[(&Table, &Column)]) -> Option<Side> {
    let flow = r.report.as_ref()?.flows.first()?.clone();
    let figures = columns
        .iter()
        .filter_map(|(_, c)| Some((column_key(c), c.of(r).filter(|v| v.is_finite())?)))
        .collect();
    Some(Side {
        run: r.run.id.clone(),
        figures,
        sent_packets: flow.sent.packets,
        received_packets: flow.received.as_ref().map(|x| x.packets),
        attempts: r.attempts,
        not_counted: fell_behind(&flow),
        flow,
    })
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

/// One metric's table, or one line when the metric is 0 in every run of every point (a
/// loss table of zeros says nothing a line cannot).
fn metric_table(t: &VerdictTable, out: &mut String) {
    if t.all_zero {
        out.push_str(&format!(
            "{}: 0 in every run of every point, over both families.\n",
            t.heading
        ));
        return;
    }
    let d = digits(&t.unit);
    let mut tt = crate::text_table::Table::new(&[
        &t.heading,
        "runs",
        "IPv4",
        "IPv6",
        "Δ",
        "interval",
        "Δ %",
        "interval %",
    ]);
    for row in &t.rows {
        let Some(c) = row.comparison else {
            tt.row(vec![row.label.clone(), "-".into(), "-".into(), "-".into()]);
            continue;
        };
        let (delta, delta_pct) = match c.verdict {
            Verdict::Significant => (
                signed(c.diff / t.scale, d),
                c.rel_diff_pct.map_or("-".into(), |x| signed(x, 1)),
            ),
            Verdict::NotSignificant => ("≈".into(), "≈".into()),
            // No test: the difference in parentheses, no sign of a finding.
            Verdict::Undefined => (format!("({})", signed(c.diff / t.scale, d)), "-".into()),
        };
        tt.row(vec![
            row.label.clone(),
            format!("{}+{}", c.n_a, c.n_b),
            plain(Some(c.median_a / t.scale), d),
            plain(Some(c.median_b / t.scale), d),
            delta,
            interval(c.ci_low, c.ci_high, t.scale, d),
            delta_pct,
            interval(c.rel_ci_low_pct, c.rel_ci_high_pct, 1.0, 1),
        ]);
    }
    if t.title != t.heading && !t.title.is_empty() {
        out.push_str(&t.title);
        out.push('\n');
    }
    out.push_str(&tt.render());
}

/// The summary in plain words: per metric, where IPv6 differs, by how much and in how
/// many points; the metrics that show no difference together at the end.
pub fn summary(r: &CompareReport) -> Vec<String> {
    if r.analysis == Analysis::Pooled {
        return vec![
            "Pooled analysis: the runs are not in pairs (the plan's order is random), so no paired verdict is made; the tables above compare each family's mean (Welch's t-test).".into(),
        ];
    }
    let mut lines = Vec::new();
    let mut quiet: Vec<&str> = Vec::new();
    for t in &r.tables {
        let d = digits(&t.unit);
        let mut tested = 0;
        let mut up: Vec<(f64, Option<f64>)> = Vec::new();
        let mut down: Vec<(f64, Option<f64>)> = Vec::new();
        for c in t.rows.iter().filter_map(|row| row.comparison) {
            if c.verdict == Verdict::Undefined {
                continue;
            }
            tested += 1;
            if c.verdict == Verdict::Significant {
                let shown = (c.diff / t.scale, c.rel_diff_pct);
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
            let mut s = format!("{} {}", span(&abs, d), t.unit);
            if pct.len() == v.len() && !pct.is_empty() {
                s.push_str(&format!(" ({} %)", span(&pct, 0)));
            }
            s
        };
        let of = |k: usize| format!("{k} of {tested} points");
        let title = capitalised(&t.noun);
        match (up.is_empty(), down.is_empty()) {
            (true, true) => quiet.push(&t.noun),
            (false, true) => lines.push(format!(
                "{title} is {} higher over IPv6 (significant in {}).",
                range(&up),
                of(up.len())
            )),
            (true, false) => lines.push(format!(
                "{title} is {} lower over IPv6 (significant in {}).",
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
        lines.push("No verdicts: each family needs at least 2 runs of a point.".into());
    } else if !quiet.is_empty() {
        let list = match quiet.as_slice() {
            [one] => capitalised(one),
            [init @ .., last] => format!("{} and {last}", capitalised(&init.join(", "))),
            [] => unreachable!("not empty"),
        };
        let verb = if quiet.len() == 1 { "shows" } else { "show" };
        lines.push(format!(
            "{list} {verb} no difference between the families in any point (≈ throughout)."
        ));
    }
    lines
}

fn capitalised(s: &str) -> String {
    let mut c = s.chars();
    c.next()
        .map_or(String::new(), |f| f.to_uppercase().chain(c).collect())
}

/// The page of verdicts as text: what was compared and how, one table per metric, the
/// summary, the host checks, and the metrics' definitions.
pub fn render(r: &CompareReport) -> String {
    let path = if r.target == "loopback" {
        "IPv4 (127.0.0.1) vs IPv6 (::1)".to_owned()
    } else {
        format!("IPv4 vs IPv6 through {}", r.target)
    };
    let mut out = format!(
        "Verdicts, plan '{}': {path}; {} run{} a family per point, {} each, {}{}\n",
        r.plan,
        r.repetitions,
        if r.repetitions == 1 { "" } else { "s" },
        results::human::span(std::time::Duration::from_nanos(r.duration_ns)),
        match r.analysis {
            Analysis::Paired => "paired (IPv4 and IPv6 back to back in each repetition)",
            Analysis::Pooled => "pooled (not in pairs)",
        },
        if r.interrupted { " (partial)" } else { "" },
    );
    if r.analysis == Analysis::Paired {
        out.push_str(&format!(
            "Medians of each family's runs; Δ: IPv6 against IPv4, the median of the pairs (each repetition's IPv6 run against its IPv4\nrun), with its interval. ≈: the interval holds 0, the runs show no difference.\n{}\n",
            match r.verdicts.level {
                Some(level) => format!(
                    "Verdicts hold a {:.0} % false discovery rate over all {} comparisons (Benjamini–Hochberg); every interval is at {} % (adjusted to match).",
                    r.verdicts.fdr * 100.0,
                    r.verdicts.tested,
                    level_pct(level)
                ),
                None => "No verdicts: each family needs at least 2 runs of a point.".to_owned(),
            }
        ));
        for t in &r.tables {
            out.push('\n');
            metric_table(t, &mut out);
        }
    }
    out.push('\n');
    for line in &r.summary {
        out.push_str(line);
        out.push('\n');
    }
    if !r.host_checks.is_empty() {
        out.push_str("\nHost check (dualperf doctor; the figures above may carry these):\n");
        for c in &r.host_checks {
            out.push_str(&format!("  {c}\n"));
        }
    }
    let errors: usize = r.points.iter().map(|p| p.errors.len()).sum();
    if errors > 0 {
        out.push_str(&format!(
            "\n{errors} run{} not counted (fell behind its schedule; named in --json's errors); the verdicts use the runs that kept up.\n",
            if errors == 1 { "" } else { "s" }
        ));
    }
    out.push('\n');
    for d in &r.definitions {
        out.push_str(d);
        out.push('\n');
    }
    out.push_str(&format!(
        "runs: IPv4's + IPv6's. (Δ): no verdict (fewer than 2 pairs, or no spread at all). How to read it: docs/compare.md.\n{}\n",
        if r.target == "loopback" {
            "Loopback has no wire: differences reflect the stacks, not headers on a link."
        } else {
            "Through a lab or between hosts the headers count: every frame crosses the links at their rate."
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
