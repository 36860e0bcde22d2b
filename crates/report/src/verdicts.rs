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
    let resolution = c.metric.resolution;
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
/// Runs that do not count (`Side::not_counted`) are left out. A row whose point has
/// caveats (`Point::caveats`) is not compared: medians only, marked
/// (`VerdictRow::not_compared`), outside the page's false discovery rate.
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
            let point = points.iter().find(|p| p.id == row.point);
            let runs = point.map_or(&[][..], |p| &p.runs[..]);
            let held = point.is_some_and(|p| !p.caveats.is_empty());
            let figure = |s: &Option<Side>| {
                let s = s.as_ref().filter(|s| s.not_counted.is_none())?;
                s.figures.get(&t.metric).copied()
            };
            let a = runs.iter().filter_map(|r| figure(&r.ipv4)).collect();
            let b = runs.iter().filter_map(|r| figure(&r.ipv6)).collect();
            let pairs = match analysis {
                _ if held => Vec::new(),
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
            row.not_compared = points
                .iter()
                .find(|p| p.id == row.point)
                .filter(|p| !p.caveats.is_empty())
                .map(|p| crate::verdicts_path::marks(&p.caveats));
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
            .try_fold(false, |_, v| (*v == 0.0).then_some(true))
            // At least one run has the figure, and every one that has it is 0.
            .unwrap_or(false);
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
                    not_compared: None,
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
    doc.summary.extend(crate::verdicts_path::bulk_tcp(
        &doc,
        runs.provenance.path.as_ref(),
    ));
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
        // Each repetition's start of each family, to tell which ran first.
        let mut starts: BTreeMap<(u32, u8), u64> = BTreeMap::new();
        let mut errors = Vec::new();
        for r in records {
            starts.insert((r.run.repetition, r.run.family), r.started_unix_ns);
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
                rep.ipv6 = Some(side);
            } else {
                rep.ipv4 = Some(side);
            }
        }
        for (n, rep) in reps.iter_mut() {
            if let (Some(v4), Some(v6)) = (starts.get(&(*n, 4)), starts.get(&(*n, 6))) {
                rep.ipv6_first = v6 < v4;
            }
        }
        let flow = records
            .iter()
            .find_map(|r| r.report.as_ref()?.flows.first());
        let spec = flow.map(|f| f.spec.clone()).unwrap_or_default();
        let caveats = flow.map_or_else(Vec::new, |f| {
            crate::verdicts_path::caveats(f, runs.provenance.path.as_ref())
        });
        out.push(Point {
            id: id.clone(),
            name: label,
            protocol: spec.protocol,
            size_bytes: spec.size_bytes,
            rate: spec.idt_ms.is_none().then_some(spec.rate),
            runs: reps.into_values().collect(),
            errors,
            caveats,
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
        if let Some(mark) = &row.not_compared {
            tt.row(vec![
                row.label.clone(),
                format!("{}+{}", c.n_a, c.n_b),
                plain(Some(c.median_a / t.scale), d),
                plain(Some(c.median_b / t.scale), d),
                format!("‡ {mark}"),
            ]);
            continue;
        }
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
            "Pooled analysis: the runs are not in pairs (the plan's order is random), so no paired verdict is made; `dualperf report` of the run directory compares each family's mean (Welch's t-test).".into(),
        ];
    }
    let mut lines = Vec::new();
    // The metrics with no difference, each with its table's direction (if any).
    let mut quiet: Vec<(Option<&str>, &str)> = Vec::new();
    for t in &r.tables {
        let direction = direction_of(&t.title);
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
        let title = match direction {
            Some(d) => format!("{} ({d})", capitalised(&t.noun)),
            None => capitalised(&t.noun),
        };
        match (up.is_empty(), down.is_empty()) {
            (true, true) => quiet.push((direction, &t.noun)),
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
                of(down.len())
            )),
        }
    }
    if r.verdicts.tested == 0 {
        lines.push("No verdicts: each family needs at least 2 runs of a point.".into());
    } else {
        // One sentence per direction, in the tables' order.
        let mut directions: Vec<Option<&str>> = Vec::new();
        for (d, _) in &quiet {
            if !directions.contains(d) {
                directions.push(*d);
            }
        }
        for d in directions {
            let nouns: Vec<&str> = quiet.iter().filter(|q| q.0 == d).map(|q| q.1).collect();
            let list = match nouns.as_slice() {
                [one] => capitalised(one),
                [init @ .., last] => format!("{} and {last}", capitalised(&init.join(", "))),
                [] => unreachable!("a direction of the quiet list"),
            };
            let verb = if nouns.len() == 1 { "shows" } else { "show" };
            let which = d.map_or(String::new(), |d| format!(", {d},"));
            lines.push(format!(
                "{list} {verb} no difference between the families{which} in any point (≈ throughout)."
            ));
        }
    }
    lines.extend(crate::verdicts_path::not_compared(r));
    lines
}

/// The direction a table is of, from the title a battery with directions gives it
/// ("Throughput, here → receiver"); `None` for a table of one direction.
fn direction_of(title: &str) -> Option<&str> {
    title
        .rsplit_once(", ")
        .map(|(_, d)| d)
        .filter(|d| d.contains('→'))
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
    // The host checks are not repeated here: `report` prints them under its opening
    // lines, `compare` as it starts (both from the run directory's doctor.json).
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
    if r.points.iter().any(|p| !p.caveats.is_empty()) {
        out.push_str("‡: not compared: the point's packets fragment over that family (larger than its path MTU), or it offers over 90 % of the path's capacity (path.json).\n");
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

#[cfg(test)]
mod tests {
    use super::*;

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

    /// The battery's four metrics: key, table title, heading, unit, scale, noun.
    const METRICS: [(&str, &str, &str, &str, f64, &str); 4] = [
        (
            "throughput",
            "Throughput",
            "Throughput (Mbit/s)",
            "Mbit/s",
            1e6,
            "throughput",
        ),
        (
            "rtt_median",
            "Round-trip time, median",
            "Median round trip time (µs)",
            "µs",
            1e3,
            "median round trip time",
        ),
        ("jitter", "Jitter", "Jitter (µs)", "µs", 1e3, "jitter"),
        ("loss", "Loss", "Packet loss (%)", "%", 1.0, "packet loss"),
    ];

    /// How the battery compares its metrics: ratios of the first three (a median of a
    /// histogram within its buckets' error), differences of loss.
    fn specs() -> Vec<Spec> {
        let log = |resolution| Spec {
            scale: Scale::Log,
            low: 0.0,
            high: f64::INFINITY,
            resolution,
        };
        vec![
            log(0.0),
            log(meter::hist::RELATIVE_ERROR),
            log(0.0),
            Spec {
                scale: Scale::Linear,
                low: 0.0,
                high: 100.0,
                resolution: 0.0,
            },
        ]
    }

    fn side(run: String, throughput_bps: f64, rtt_ns: f64, jitter_ns: f64, loss_pct: f64) -> Side {
        let flow = serde_json::from_value(serde_json::json!({
            "id": 1,
            "spec": {
                "protocol": "udp", "meter": "rtt", "rate": "5000pps", "size_bytes": 64,
                "stop": {"duration_ns": 400_000_000, "count": null, "limit_bytes": null},
                "start_offset_ns": 0,
                "marking": {"dscp": null, "ecn": null, "ttl": null, "flow_label": null},
                "nodelay": false, "label": "",
            },
            "sent": {"packets": 1000, "bytes": 64000},
        }))
        .expect("a minimal flow outcome");
        let figures = [throughput_bps, rtt_ns, jitter_ns, loss_pct]
            .into_iter()
            .zip(METRICS)
            .map(|(v, m)| (m.0.to_owned(), v))
            .collect();
        Side {
            run,
            figures,
            sent_packets: 1000,
            received_packets: Some(1000),
            attempts: 1,
            not_counted: None,
            flow,
        }
    }

    /// One run of point `t` as loopback gives them, noisily: every figure drawn around
    /// the point's own centre with a skewed (log-normal) run-to-run spread; the round
    /// trip is the host's state at that moment (`host`, shared by the two runs of a
    /// pair) times a run's own 3 % spread times `rtt_factor`.
    fn run_of(state: &mut u64, run: String, t: usize, host: f64, rtt_factor: f64) -> Side {
        let lognormal =
            |state: &mut u64, centre: f64, sigma: f64| centre * (sigma * normal(state)).exp();
        let loss = if uniform(state) < 0.2 {
            0.05 * uniform(state)
        } else {
            0.0
        };
        side(
            run,
            lognormal(state, 2e6 * (t + 1) as f64, 0.01),
            lognormal(state, 5_000.0 + 4_000.0 * t as f64, 0.03) * host * rtt_factor,
            lognormal(state, 800.0 + 300.0 * t as f64, 0.5),
            loss,
        )
    }

    /// A battery of 16 points × `reps` runs a family, every family's runs drawn from one
    /// distribution, except IPv6's round trips in the first `shifted` points, which are
    /// `rtt_factor` times longer. The host's state varies from pair to pair by a
    /// log-normal factor of σ `host_sigma`.
    fn draw(seed: u64, reps: u32, host_sigma: f64, shifted: usize, rtt_factor: f64) -> Vec<Point> {
        let mut state = seed;
        (0..16)
            .map(|t| Point {
                id: format!("p{t}"),
                name: format!("point {t}"),
                protocol: serde_json::from_value(serde_json::json!("udp")).expect("udp"),
                size_bytes: 64,
                rate: None,
                runs: (0..reps)
                    .map(|rep| {
                        let factor = if t < shifted { rtt_factor } else { 1.0 };
                        let host = (host_sigma * normal(&mut state)).exp();
                        let id = |f: u8| format!("p{t}-r{}-v{f}", rep + 1);
                        Repetition {
                            repetition: rep + 1,
                            ipv6_first: (rep as usize + t) % 2 == 1,
                            ipv4: Some(run_of(&mut state, id(4), t, host, 1.0)),
                            ipv6: Some(run_of(&mut state, id(6), t, host, factor)),
                        }
                    })
                    .collect(),
                errors: Vec::new(),
                caveats: Vec::new(),
            })
            .collect()
    }

    /// The page of `points` under `analysis`: one table per metric with a row per point.
    fn page(points: Vec<Point>, reps: u32, analysis: Analysis) -> CompareReport {
        let mut tables: Vec<VerdictTable> = METRICS
            .iter()
            .map(|&(key, title, heading, unit, scale, noun)| VerdictTable {
                title: title.into(),
                metric: key.into(),
                heading: heading.into(),
                unit: unit.into(),
                scale,
                noun: noun.into(),
                all_zero: points
                    .iter()
                    .flat_map(|p| p.runs.iter().flat_map(|r| [&r.ipv4, &r.ipv6]))
                    .flatten()
                    .all(|s| s.figures[key] == 0.0),
                rows: points
                    .iter()
                    .map(|p| VerdictRow {
                        point: p.id.clone(),
                        label: p.name.clone(),
                        comparison: None,
                        not_compared: None,
                    })
                    .collect(),
            })
            .collect();
        let verdicts = judge(&points, &mut tables, &specs(), analysis);
        let mut r = CompareReport {
            format_version: COMPARE_FORMAT_VERSION,
            tool: "dualperf test".into(),
            dir: None,
            plan: "compare".into(),
            target: "loopback".into(),
            repetitions: reps,
            duration_ns: 400_000_000,
            quick: true,
            interrupted: false,
            analysis,
            verdicts,
            tables,
            summary: Vec::new(),
            host_checks: Vec::new(),
            definitions: Vec::new(),
            points,
        };
        r.summary = summary(&r);
        r
    }

    fn fixture(
        seed: u64,
        reps: u32,
        host_sigma: f64,
        shifted: usize,
        rtt_factor: f64,
    ) -> CompareReport {
        page(
            draw(seed, reps, host_sigma, shifted, rtt_factor),
            reps,
            Analysis::Paired,
        )
    }

    /// Point `p`'s comparison of metric `m` (the index of its table).
    fn cmp(r: &CompareReport, m: usize, p: usize) -> meter::verdict::RunsComparison {
        r.tables[m].rows[p].comparison.expect("a comparison")
    }

    /// The data rows of each metric's table in the text report.
    fn table_rows(text: &str) -> Vec<Vec<String>> {
        text.lines()
            .filter(|l| l.starts_with("point "))
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
        // 16 points × 4 metrics, every one testable.
        assert_eq!(r.verdicts.tested, 64);
        assert_eq!(r.verdicts.discoveries, 0, "{:#?}", r.tables[1].rows[0]);
        let text = render(&r);
        let rows = table_rows(&text);
        assert_eq!(rows.len(), 64, "{text}");
        for row in &rows {
            // point, runs, IPv4, IPv6, Δ, interval, Δ %, interval %
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
            ["Throughput, median round trip time, jitter and packet loss show no difference between the families in any point (≈ throughout)."]
        );
        // The medians still differ from row to row, as noise does: the table does not
        // hide them, it declines to call them a difference.
        assert!(rows.iter().any(|row| row[2] != row[3]));
    }

    /// A battery with two directions gives each table the direction in its title: the
    /// summary names the direction of each finding and of each quiet list, so the same
    /// metric is not listed twice in one sentence.
    #[test]
    fn the_summary_names_each_direction_of_a_battery_with_two() {
        let mut r = fixture(2026, 3, 0.15, 0, 1.0);
        let mut reverse = r.tables.clone();
        for t in &mut r.tables {
            t.title = format!("{}, here → b", t.title);
        }
        for t in &mut reverse {
            t.title = format!("{}, b → here", t.title);
        }
        r.tables.extend(reverse);
        assert_eq!(
            summary(&r),
            [
                "Throughput, median round trip time, jitter and packet loss show no difference between the families, here → b, in any point (≈ throughout).",
                "Throughput, median round trip time, jitter and packet loss show no difference between the families, b → here, in any point (≈ throughout).",
            ]
        );
        // A finding names its direction too.
        let mut shifted = fixture(23, 3, 0.15, 8, 1.5);
        for t in &mut shifted.tables {
            t.title = format!("{}, b → here", t.title);
        }
        let lines = summary(&shifted);
        assert!(
            lines
                .iter()
                .any(|l| l.starts_with("Median round trip time (b → here) is ")),
            "{lines:?}"
        );
        assert_eq!(direction_of("Round-trip time, median"), None);
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
        // by 3 % more on its own: IPv6 adds 20 % to the round trip of the first 8 points
        // in a battery of 5 runs a family, 50 % in a --quick one (3).
        for (reps, factor) in [(3, 1.5), (5, 1.2)] {
            shift_found(reps, factor);
        }
    }

    fn shift_found(reps: u32, factor: f64) {
        let r = fixture(23, reps, 0.15, 8, factor);
        let shift_pct = (factor - 1.0) * 100.0;
        for t in 0..16 {
            let c = cmp(&r, 1, t);
            let (low, high) = (c.rel_ci_low_pct.unwrap(), c.rel_ci_high_pct.unwrap());
            if t < 8 {
                assert_eq!(c.verdict, Verdict::Significant, "{reps} {t}: {c:?}");
                assert!(low <= shift_pct && shift_pct <= high, "{reps} {t}: {c:?}");
                assert!(low > 0.0 && c.ci_low.unwrap() > 0.0);
            } else {
                assert_eq!(c.verdict, Verdict::NotSignificant, "{reps} {t}: {c:?}");
                assert!(low <= 0.0 && 0.0 <= high);
            }
            for m in [0, 2, 3] {
                assert_eq!(
                    cmp(&r, m, t).verdict,
                    Verdict::NotSignificant,
                    "{reps} {t} {m}"
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
            r.summary[0].starts_with("Median round trip time is ")
                && r.summary[0].contains(" µs (")
                && r.summary[0].ends_with(" higher over IPv6 (significant in 8 of 16 points)."),
            "{}",
            r.summary[0]
        );
        assert_eq!(
            r.summary[1],
            "Throughput, jitter and packet loss show no difference between the families in any point (≈ throughout)."
        );
    }

    #[test]
    fn one_run_a_family_gives_medians_without_verdicts() {
        let r = fixture(5, 1, 0.15, 0, 1.0);
        assert_eq!(r.verdicts.tested, 0);
        assert_eq!(r.verdicts.level, None);
        let text = render(&r);
        let rows = table_rows(&text);
        assert_eq!(rows.len(), 64, "{text}");
        assert!(
            rows.iter()
                .all(|row| row[1] == "1+1" && row[4].starts_with('(') && row[5] == "-"),
            "{text}"
        );
        assert_eq!(
            r.summary,
            ["No verdicts: each family needs at least 2 runs of a point."]
        );
    }

    /// Runs not in pairs (order "random") get no paired verdict, even where IPv6 is
    /// really slower: the pairs are not used, nothing is tested, and the page says why.
    #[test]
    fn pooled_runs_give_no_verdict_and_say_so() {
        let points = draw(23, 3, 0.15, 8, 1.5);
        let paired = page(points.clone(), 3, Analysis::Paired);
        assert_eq!(paired.verdicts.tested, 64, "the same runs, paired");
        assert_eq!(paired.verdicts.discoveries, 8);
        let r = page(points, 3, Analysis::Pooled);
        assert_eq!(
            (r.verdicts.tested, r.verdicts.discoveries, r.verdicts.level),
            (0, 0, None)
        );
        for (m, t) in r.tables.iter().enumerate() {
            for (p, row) in t.rows.iter().enumerate() {
                let c = row.comparison.expect("medians of both families");
                assert_eq!(
                    (c.n_a, c.n_b, c.n_pairs, c.verdict),
                    (3, 3, 0, Verdict::Undefined),
                    "{m} {p}"
                );
            }
        }
        assert_eq!(
            r.summary,
            ["Pooled analysis: the runs are not in pairs (the plan's order is random), so no paired verdict is made; `dualperf report` of the run directory compares each family's mean (Welch's t-test)."]
        );
        let text = render(&r);
        assert!(
            text.starts_with("Verdicts, plan 'compare': IPv4 (127.0.0.1) vs IPv6 (::1); 3 runs a family per point, 400 ms each, pooled (not in pairs)\n"),
            "{text}"
        );
        assert!(table_rows(&text).is_empty(), "{text}");
        assert!(text.contains(&format!("\n{}\n", r.summary[0])), "{text}");
    }

    #[test]
    fn a_loss_table_of_zeros_is_one_line() {
        let mut points = draw(9, 3, 0.15, 0, 1.0);
        for p in &mut points {
            for run in &mut p.runs {
                for s in [&mut run.ipv4, &mut run.ipv6].into_iter().flatten() {
                    s.figures.insert("loss".into(), 0.0);
                }
            }
        }
        let r = page(points, 3, Analysis::Paired);
        assert_eq!(
            r.tables.iter().map(|t| t.all_zero).collect::<Vec<_>>(),
            [false, false, false, true]
        );
        let text = render(&r);
        assert!(
            text.contains(
                "\nPacket loss (%): 0 in every run of every point, over both families.\n"
            ),
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

    /// The host's checks that were not ok stay in the document (`--json`; which of them
    /// bear on the comparison is `load`'s choice), but the page does not repeat them:
    /// `report` prints them under its opening lines, `compare` as it starts.
    #[test]
    fn the_host_checks_are_kept_in_the_document_not_repeated_on_the_page() {
        let mut r = fixture(1, 2, 0.15, 0, 1.0);
        let without = render(&r);
        r.host_checks = vec![
            "warn steal: 3 % of the CPU taken by the hypervisor".into(),
            "warn namespaces: not root".into(),
        ];
        let json = serde_json::to_value(&r).expect("a document");
        assert_eq!(
            json["host_checks"],
            serde_json::json!([
                "warn steal: 3 % of the CPU taken by the hypervisor",
                "warn namespaces: not root"
            ])
        );
        assert_eq!(render(&r), without);
    }

    /// A run that fell behind its schedule stays in the document but not in the
    /// statistics: it measured the host, not the stacks.
    #[test]
    fn a_run_that_fell_behind_is_kept_but_not_counted() {
        let mut points = draw(3, 5, 0.15, 0, 1.0);
        let run = points[0].runs[2].ipv4.as_mut().unwrap();
        run.flow.sent.planned_packets = Some(1000);
        run.flow.sent.packets = 899;
        run.not_counted = fell_behind(&run.flow);
        assert_eq!(
            run.not_counted.as_deref(),
            Some("sent 899 of 1000 planned packets: the host fell behind (dualperf doctor may say why); not counted")
        );
        let why = format!("run 3 IPv4: {}", run.not_counted.clone().unwrap());
        points[0].errors.push(why);
        let kept = points[1].runs[2].ipv4.as_mut().unwrap();
        kept.flow.sent.planned_packets = Some(1000);
        kept.flow.sent.packets = 900;
        assert_eq!(fell_behind(&kept.flow), None);
        let r = page(points, 5, Analysis::Paired);
        for m in 0..4 {
            let c = cmp(&r, m, 0);
            assert_eq!((c.n_a, c.n_b, c.n_pairs), (4, 5, 4), "{m}");
            assert_eq!(cmp(&r, m, 1).n_pairs, 5, "{m}");
        }
        assert!(r.points[0].runs[2].ipv4.is_some(), "kept in the document");
        let text = render(&r);
        assert!(
            text.contains("\n1 run not counted (fell behind its schedule; named in --json's errors); the verdicts use the runs that kept up.\n"),
            "{text}"
        );
    }

    #[test]
    fn fragmenting_and_oversubscribed_rows_are_named_not_compared() {
        use results::compare::Caveat;
        // IPv6's round trips are 1.5 times IPv4's in points 0 to 2: point 0 fragments
        // over IPv6, point 1 oversubscribes the path, point 2 is compared.
        let mut points = draw(41, 5, 0.05, 3, 1.5);
        points[0].caveats = vec![Caveat::Fragments {
            family: 6,
            ip_bytes: 1520,
            mtu: 1500,
        }];
        points[1].caveats = vec![
            Caveat::Oversubscribed {
                family: 4,
                offered_bps: 60_560_000,
                capacity_bps: 10_000_000,
            },
            Caveat::Oversubscribed {
                family: 6,
                offered_bps: 64_160_000,
                capacity_bps: 10_000_000,
            },
        ];
        let r = page(points, 5, Analysis::Paired);
        // 14 points × 4 metrics are the page's comparisons; the other two are not.
        assert_eq!(r.verdicts.tested, 56);
        for m in 0..4 {
            let marks: Vec<Option<&str>> = r.tables[m].rows[..3]
                .iter()
                .map(|row| row.not_compared.as_deref())
                .collect();
            assert_eq!(
                marks,
                [Some("fragments over IPv6"), Some("oversubscribed"), None]
            );
            for p in 0..2 {
                let c = cmp(&r, m, p);
                assert_eq!((c.verdict, c.p, c.ci_low), (Verdict::Undefined, None, None));
                assert_eq!((c.n_a, c.n_b), (5, 5));
            }
        }
        assert_eq!(cmp(&r, 1, 2).verdict, Verdict::Significant);
        let rtt = r
            .summary
            .iter()
            .find(|l| l.starts_with("Median round trip time"));
        assert!(
            rtt.is_some_and(|l| l.ends_with("higher over IPv6 (significant in 1 of 14 points).")),
            "{:?}",
            r.summary
        );
        assert_eq!(
            r.summary.last().map(String::as_str),
            Some("Not compared (‡), 2 of 16 points: point 0 (fragments over IPv6), point 1 (oversubscribed); their differences are fragmentation's and the queue's, not IPv6's.")
        );
        let text = render(&r);
        let rows = table_rows(&text);
        assert_eq!(rows[0][4], "‡ fragments over IPv6", "{text}");
        assert_eq!(rows[1][4], "‡ oversubscribed", "{text}");
        assert_eq!((rows[0].len(), rows[2].len()), (5, 8), "{text}");
        assert!(text.contains("\n‡: not compared: "), "{text}");
    }
}
