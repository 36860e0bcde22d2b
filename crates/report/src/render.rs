//! The report's tables as aligned text, Markdown and CSV, and the cells, headers and
//! captions the HTML page shares.

use std::fmt::Write;

use lab::tables::Column;
use meter::repeat::{Comparison, Interval, Median, Sample, Verdict, DEFAULT_ALPHA, DEFAULT_LEVEL};

use crate::stats::Results;
use crate::tables::Table;
use crate::text_table;
use crate::units;

/// How a comparison reads: `significant`, `not significant` or `undefined`.
pub fn verdict(v: Verdict) -> &'static str {
    match v {
        Verdict::Significant => "significant",
        Verdict::NotSignificant => "not significant",
        Verdict::Undefined => "undefined",
    }
}

/// What a table says where a side has fewer than two runs: no interval, no test.
pub const ONE_RUN: &str = "one run: no statistics";

/// Whether either side of a row has fewer than two runs.
fn one_run(ipv4: Option<&Sample>, ipv6: Option<&Sample>) -> bool {
    ipv4.into_iter().chain(ipv6).any(|s| s.n < 2)
}

/// How a row's comparison reads: its verdict, or [`ONE_RUN`].
fn reading(cmp: Option<&Comparison>, one: bool) -> &'static str {
    if one {
        ONE_RUN
    } else {
        cmp.map_or("undefined", |c| verdict(c.verdict))
    }
}

/// `mean [low, high]` (or `mean ± half-width`, or the mean alone) in the column's unit,
/// every number with the same decimals ([`units::decimals`]).
fn figure(mean: f64, low: Option<f64>, high: Option<f64>, symmetric: bool, c: &Column) -> String {
    let scaled = |v: f64| v / c.unit.scale;
    let mean = scaled(mean);
    let ci = low.zip(high).map(|(l, h)| (scaled(l), scaled(h)));
    let d = units::decimals(mean, ci);
    match ci {
        Some((_, h)) if symmetric => format!("{mean:.d$} ± {:.d$}", h - mean),
        Some((l, h)) => format!("{mean:.d$} [{l:.d$}, {h:.d$}]"),
        None => format!("{mean:.d$}"),
    }
}

/// The mean and its confidence interval, in the column's unit: `mean ± half-width`
/// for Student's (symmetric), `mean [low, high]` for the bootstrap's (it need not be).
fn cell(s: Option<&Sample>, c: &Column) -> String {
    match s {
        Some(s) => {
            let symmetric = s.interval != Interval::PercentileBootstrap;
            if s.ci_high.is_some() {
                figure(s.mean, s.ci_low, s.ci_high, symmetric, c)
            } else {
                format!("{} (n={})", figure(s.mean, None, None, false, c), s.n)
            }
        }
        None => "–".into(),
    }
}

/// A median over repetitions and its bootstrap interval, in the column's unit.
fn median_cell(m: Option<&Median>, c: &Column) -> String {
    match m {
        Some(m) if m.ci_high.is_some() => figure(m.median, m.ci_low, m.ci_high, false, c),
        Some(m) => format!("{} (n={})", figure(m.median, None, None, false, c), m.n),
        None => "–".into(),
    }
}

/// Whether a column has the runs' median delays beside its means (in some row).
pub(crate) fn has_medians(t: &Table, results: &Results, c: &Column) -> bool {
    t.rows.iter().any(|r| {
        results
            .row(&r.point, c)
            .is_some_and(|row| row.median.is_some())
    })
}

/// The median cells of a row's column: IPv4, IPv6, Δ % with "(n.s.)" where the
/// bootstrap interval of the difference holds 0.
fn median_cells(results: &Results, point: &str, c: &Column) -> [String; 3] {
    let m = results.row(point, c).and_then(|r| r.median.as_ref());
    let (a, b) = (
        m.and_then(|m| m.ipv4.as_ref()),
        m.and_then(|m| m.ipv6.as_ref()),
    );
    let cmp = m.and_then(|m| m.ipv6_vs_ipv4.as_ref());
    let delta = cmp
        .and_then(|c| c.rel_diff_pct)
        .map_or("–".into(), |d| format!("{d:+.2}"));
    let one = a.into_iter().chain(b).any(|m| m.n < 2);
    let mark = match cmp.map(|c| c.verdict) {
        _ if one => " (one run)",
        Some(Verdict::Significant) | None => "",
        Some(Verdict::NotSignificant) => " (n.s.)",
        Some(Verdict::Undefined) => " (n/a)",
    };
    [
        median_cell(a, c),
        median_cell(b, c),
        format!("{delta}{mark}"),
    ]
}

/// The cells of one row: per metric IPv4, IPv6, Δ %; with a single metric also p,
/// Hedges' g and the verdict, with several a "(n.s.)" on a Δ the data do not support.
/// Where a side has one run, no p, no g and no verdict: [`ONE_RUN`].
pub(crate) fn cells(t: &Table, results: &Results, point: &str, label: &str) -> Vec<String> {
    let mut out = Vec::new();
    for (i, c) in t.metrics.iter().enumerate() {
        let row = results.row(point, c);
        let cmp = row.and_then(|r| r.ipv6_vs_ipv4.as_ref());
        let (ipv4, ipv6) = (
            row.and_then(|r| r.ipv4.as_ref()),
            row.and_then(|r| r.ipv6.as_ref()),
        );
        let one = one_run(ipv4, ipv6);
        out.push(cell(ipv4, c));
        out.push(cell(ipv6, c));
        let delta = cmp
            .and_then(|c| c.rel_diff_pct)
            .map_or("–".into(), |d| format!("{d:+.2}"));
        if t.metrics.len() == 1 {
            out.push(delta);
            let figure = |v: Option<f64>, digits: usize| match v {
                Some(v) if !one => format!("{v:.digits$}"),
                _ => "–".into(),
            };
            out.push(figure(cmp.and_then(|c| c.p), 3));
            out.push(figure(cmp.and_then(|c| c.effect_size_g), 2));
            out.push(reading(cmp, one).to_owned());
        } else {
            let mark = match cmp.map(|c| c.verdict) {
                _ if one => " (one run)",
                Some(Verdict::Significant) | None => "",
                Some(Verdict::NotSignificant) => " (n.s.)",
                Some(Verdict::Undefined) => " (n/a)",
            };
            out.push(format!("{delta}{mark}"));
        }
        if !t.paper.is_empty() {
            out.push(
                t.paper
                    .get(label)
                    .and_then(|v| v.get(i).copied().flatten())
                    .map_or("–".into(), units::num),
            );
        }
        if has_medians(t, results, c) {
            out.extend(median_cells(results, point, c));
        }
    }
    out
}

/// The headings of a table's columns. A single metric's unit is in its IPv4 and IPv6
/// headings (a declared title need not name it); with several, in each metric's first.
pub(crate) fn header(t: &Table, results: &Results) -> Vec<String> {
    let mut h = vec![t.label_heading.clone()];
    let paper = !t.paper.is_empty();
    if let [c] = t.metrics.as_slice() {
        let u = &c.unit;
        h.extend([format!("IPv4 ({u})"), format!("IPv6 ({u})")]);
        h.extend(["Δ %", "p", "g", "IPv6 vs IPv4"].map(String::from));
        if paper {
            h.push(format!("Paper ({u})"));
        }
        if has_medians(t, results, c) {
            h.extend([format!("Median IPv4 ({u})"), format!("Median IPv6 ({u})")]);
            h.push("Median Δ %".into());
        }
    } else {
        for c in &t.metrics {
            h.push(format!("{}: IPv4", c.heading()));
            h.extend(["IPv6", "Δ %"].map(String::from));
            if paper {
                h.push("Paper".into());
            }
            if has_medians(t, results, c) {
                h.extend(["Median IPv4", "Median IPv6", "Median Δ %"].map(String::from));
            }
        }
    }
    h
}

/// The lines under a table's title: what the cells are and how each metric is measured.
pub(crate) fn caption(t: &Table, results: &Results) -> Vec<String> {
    let mut out = vec![format!(
        "Mean over repetitions and its {:.0} % confidence interval: [low, high] by the percentile \
         bootstrap for metrics that cannot be negative, ± half-width by Student's t for delays that may be one-way.",
        DEFAULT_LEVEL * 100.0
    )];
    if t.metrics.len() == 1 {
        out.push("g: Hedges' g, the difference in pooled standard deviations.".into());
    }
    for c in &t.metrics {
        if c.flow == 0 {
            let what = format!("{}: {}.", c.metric.title, c.metric.definition);
            if !out.contains(&what) {
                out.push(what);
            }
        }
    }
    if t.metrics.iter().any(|c| c.flow > 0) {
        out.push(
            "bgN: the point's Nth background flow (its `background` in the plan), measured alike."
                .into(),
        );
    }
    if !t.paper.is_empty() {
        out.push("Paper: the number the paper reports for the row, in the same unit.".into());
    }
    if t.metrics.iter().any(|c| has_medians(t, results, c)) {
        out.push(format!(
            "Median: the median over repetitions of each run's median delay (its histogram's, within 1/128), \
             [low, high] its {:.0} % percentile bootstrap interval; Median Δ % is (n.s.) where the bootstrap \
             interval of the difference of the medians holds 0 (Efron & Tibshirani 1993, §13.3, §16.2), \
             and has no verdict with fewer than {} runs a side (the interval of so few is too coarse to test with).",
            DEFAULT_LEVEL * 100.0,
            meter::repeat::MEDIAN_VERDICT_MIN_RUNS
        ));
    }
    out
}

/// What a report says when some of its points have one run on a side: there, Δ % is
/// the difference of two single runs, with no interval and no test.
pub(crate) fn one_run_notice(results: &Results) -> Option<String> {
    let rows = results
        .rows
        .iter()
        .filter(|r| r.ipv4.is_some() || r.ipv6.is_some());
    let one = |r: &&crate::stats::Row| one_run(r.ipv4.as_ref(), r.ipv6.as_ref());
    let (all, some) = (rows.clone().all(|r| one(&r)), rows.clone().any(|r| one(&r)));
    if all {
        Some(
            "One run per point and family: no statistics. Each cell is a single run's figure and Δ % the \
             difference of two single runs, which on a shared host can be noise; repeat the plan \
             (without --quick) before reading a difference."
                .into(),
        )
    } else if some {
        Some(format!(
            "Some points have one run on a side: there, \"{ONE_RUN}\" and no interval."
        ))
    } else {
        None
    }
}

/// A Markdown cell: a `|` would end it.
fn md(s: &str) -> String {
    s.replace('|', "\\|")
}

/// What heads the host checks of a report ([`crate::load::Provenance::doctor`]).
pub const DOCTOR_HEADING: &str =
    "Host checks not ok when the runs started (dualperf doctor; run it for why each matters and how to fix it):";

/// The tables as aligned text, or as Markdown, under a line saying what the cells are
/// and the host checks that were not ok when the runs started (`doctor`, one line each).
pub fn text(
    tables: &[Table],
    results: &Results,
    doctor: &[String],
    partial: &[String],
    markdown: bool,
) -> String {
    let mut out = format!(
        "dualperf report: {} runs; the mean over repetitions and its {:.0} % confidence interval;\n\
         Δ % = (IPv6 − IPv4) / IPv4; p from Welch's t-test; \"not significant\" (n.s.) at p ≥ {DEFAULT_ALPHA} whatever Δ.\n",
        results.runs,
        DEFAULT_LEVEL * 100.0
    );
    if let Some(notice) = one_run_notice(results) {
        let _ = writeln!(out, "{notice}");
    }
    // A partial run's runs done against planned, each point short of some.
    for (i, line) in partial.iter().enumerate() {
        match (markdown, i) {
            (true, 0) => {
                let _ = writeln!(out, "\n**{}**\n", md(line));
            }
            (true, _) => {
                let _ = writeln!(out, "- {}", md(line.trim_start()));
            }
            (false, _) => {
                let _ = writeln!(out, "{line}");
            }
        }
    }
    if markdown && partial.len() > 1 {
        out.push('\n');
    }
    if !doctor.is_empty() {
        if markdown {
            let _ = writeln!(out, "\n{}\n", md(DOCTOR_HEADING));
            for line in doctor {
                let _ = writeln!(out, "- {}", md(line));
            }
        } else {
            let _ = writeln!(out, "{DOCTOR_HEADING}");
            for line in doctor {
                let _ = writeln!(out, "  {line}");
            }
        }
    }
    out.push('\n');
    for t in tables {
        let header = header(t, results);
        let body: Vec<Vec<String>> = t
            .rows
            .iter()
            .map(|r| {
                let mut row = vec![r.label.clone()];
                row.extend(cells(t, results, &r.point, &r.label));
                row
            })
            .collect();
        if markdown {
            let _ = writeln!(out, "### {}\n", md(&t.title));
            if let Some(p) = &t.partial {
                let _ = writeln!(out, "**{}**\n", md(&p.note));
            }
            let _ = writeln!(out, "{}\n", caption(t, results).join(" "));
            let cells = |r: &[String]| r.iter().map(|c| md(c)).collect::<Vec<_>>().join(" | ");
            let _ = writeln!(out, "| {} |", cells(&header));
            let _ = writeln!(out, "|{}", "---|".repeat(header.len()));
            for row in body {
                let _ = writeln!(out, "| {} |", cells(&row));
            }
            for note in &t.notes {
                let _ = writeln!(out, "\n{}", md(note));
            }
            out.push('\n');
        } else {
            let _ = writeln!(out, "{}", t.title);
            if let Some(p) = &t.partial {
                let _ = writeln!(out, "{}", p.note);
            }
            let _ = writeln!(out, "{}", caption(t, results).join("\n"));
            let h: Vec<&str> = header.iter().map(String::as_str).collect();
            let mut table = text_table::Table::new(&h);
            for row in body {
                table.row(row);
            }
            out.push_str(&table.render());
            for note in &t.notes {
                let _ = writeln!(out, "{note}");
            }
            out.push('\n');
        }
    }
    out
}

/// One CSV row per table row and metric, in the table's unit.
pub fn csv(tables: &[Table], results: &Results) -> String {
    let mut s = String::from(
        "table,row,point,metric,unit,ipv4_n,ipv4_mean,ipv4_ci_low,ipv4_ci_high,ipv6_n,ipv6_mean,ipv6_ci_low,ipv6_ci_high,rel_diff_pct,p,verdict,effect_size_g,ipv4_median,ipv4_median_ci_low,ipv4_median_ci_high,ipv6_median,ipv6_median_ci_low,ipv6_median_ci_high,median_rel_diff_pct,median_verdict\n",
    );
    let q = |t: &str| format!("\"{}\"", t.replace('"', "\"\""));
    for t in tables {
        for r in &t.rows {
            for c in &t.metrics {
                let row = results.row(&r.point, c);
                let scaled =
                    |v: Option<f64>| v.map_or(String::new(), |v| (v / c.unit.scale).to_string());
                let side = |s: Option<&Sample>| match s {
                    Some(s) => format!(
                        "{},{},{},{}",
                        s.n,
                        scaled(Some(s.mean)),
                        scaled(s.ci_low),
                        scaled(s.ci_high)
                    ),
                    None => ",,,".into(),
                };
                let cmp = row.and_then(|r| r.ipv6_vs_ipv4.as_ref());
                let o = |v: Option<f64>| v.map_or(String::new(), |v| v.to_string());
                let medians = row.and_then(|r| r.median.as_ref());
                let median = |m: Option<&Median>| match m {
                    Some(m) => format!(
                        "{},{},{}",
                        scaled(Some(m.median)),
                        scaled(m.ci_low),
                        scaled(m.ci_high)
                    ),
                    None => ",,".into(),
                };
                let mcmp = medians.and_then(|m| m.ipv6_vs_ipv4.as_ref());
                let _ = writeln!(
                    s,
                    "{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}",
                    q(&t.title),
                    q(&r.label),
                    q(&r.point),
                    match (&c.router, c.flow) {
                        (Some(r), _) => format!("{r}.{}", c.metric.key),
                        (None, 0) => c.metric.key.to_owned(),
                        (None, n) => format!("bg{n}.{}", c.metric.key),
                    },
                    q(&c.unit.name),
                    side(row.and_then(|r| r.ipv4.as_ref())),
                    side(row.and_then(|r| r.ipv6.as_ref())),
                    o(cmp.and_then(|c| c.rel_diff_pct)),
                    o(cmp.and_then(|c| c.p)),
                    reading(
                        cmp,
                        one_run(
                            row.and_then(|r| r.ipv4.as_ref()),
                            row.and_then(|r| r.ipv6.as_ref())
                        )
                    ),
                    o(cmp.and_then(|c| c.effect_size_g)),
                    median(medians.and_then(|m| m.ipv4.as_ref())),
                    median(medians.and_then(|m| m.ipv6.as_ref())),
                    o(mcmp.and_then(|c| c.rel_diff_pct)),
                    mcmp.map_or("", |c| verdict(c.verdict)),
                );
            }
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markdown_cells_escape_their_bars() {
        assert_eq!(md("a|b"), "a\\|b");
    }
}
