//! The report's tables as text, Markdown and HTML, and its plots as SVG.

use std::fmt::Write;
use std::path::PathBuf;

use lab::tables::Column;
use meter::repeat::{Sample, Verdict, DEFAULT_ALPHA, DEFAULT_LEVEL};

use super::{Results, Table};

pub(crate) fn verdict(v: Verdict) -> &'static str {
    match v {
        Verdict::Significant => "significant",
        Verdict::NotSignificant => "not significant",
        Verdict::Undefined => "undefined",
    }
}

/// A value with about five significant digits (85.054, 0.16230), never in exponent form.
fn num(v: f64, digits_like: f64) -> String {
    let mag = digits_like.abs();
    let decimals = if mag > 0.0 && mag.is_finite() {
        (4 - mag.log10().floor() as i32).clamp(0, 6) as usize
    } else {
        3
    };
    format!("{v:.decimals$}")
}

/// `mean ± half-width` of the confidence interval, in the column's unit.
fn cell(s: Option<&Sample>, c: &Column) -> String {
    match s {
        Some(s) => {
            let mean = s.mean / c.unit.scale;
            match s.ci_high {
                Some(h) => format!(
                    "{} ± {}",
                    num(mean, mean),
                    num((h - s.mean) / c.unit.scale, mean)
                ),
                None => format!("{} (n={})", num(mean, mean), s.n),
            }
        }
        None => "–".into(),
    }
}

/// The cells of one row: per metric IPv4, IPv6, Δ %; with a single metric also p and
/// the verdict, with several a "(n.s.)" on a Δ the data do not support.
fn cells(t: &Table, results: &Results, point: &str, label: &str) -> Vec<String> {
    let mut out = Vec::new();
    for (i, c) in t.metrics.iter().enumerate() {
        let row = results.row(point, c);
        let cmp = row.and_then(|r| r.ipv6_vs_ipv4.as_ref());
        out.push(cell(row.and_then(|r| r.ipv4.as_ref()), c));
        out.push(cell(row.and_then(|r| r.ipv6.as_ref()), c));
        let delta = cmp
            .and_then(|c| c.rel_diff_pct)
            .map_or("–".into(), |d| format!("{d:+.2}"));
        if t.metrics.len() == 1 {
            out.push(delta);
            out.push(
                cmp.and_then(|c| c.p)
                    .map_or("–".into(), |p| format!("{p:.3}")),
            );
            out.push(cmp.map_or("undefined", |c| verdict(c.verdict)).to_owned());
        } else {
            let mark = match cmp.map(|c| c.verdict) {
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
                    .map_or("–".into(), |v| num(v, v)),
            );
        }
    }
    out
}

fn header(t: &Table) -> Vec<String> {
    let mut h = vec![t.label_heading.clone()];
    let paper = !t.paper.is_empty();
    if t.metrics.len() == 1 {
        h.extend(["IPv4", "IPv6", "Δ %", "p", "IPv6 vs IPv4"].map(String::from));
        if paper {
            h.push("Paper".into());
        }
    } else {
        for c in &t.metrics {
            h.push(format!("{}: IPv4", c.heading()));
            h.extend(["IPv6", "Δ %"].map(String::from));
            if paper {
                h.push("Paper".into());
            }
        }
    }
    h
}

/// The lines under a table's title: what the cells are and how each metric is measured.
fn caption(t: &Table) -> Vec<String> {
    let mut out = vec![format!(
        "Mean ± half-width of the {:.0} % confidence interval over repetitions.",
        DEFAULT_LEVEL * 100.0
    )];
    for c in &t.metrics {
        if c.flow == 0 {
            let what = format!("{}: {}.", c.metric.title(), c.metric.definition());
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
    out
}

/// A Markdown cell: a `|` would end it.
fn md(s: &str) -> String {
    s.replace('|', "\\|")
}

pub(crate) fn text(tables: &[Table], results: &Results, markdown: bool) -> String {
    let mut out = format!(
        "dualperf report: {} runs; mean ± half-width of the {:.0} % confidence interval (Student t) over repetitions;\n\
         Δ % = (IPv6 − IPv4) / IPv4; p from Welch's t-test; \"not significant\" (n.s.) at p ≥ {DEFAULT_ALPHA} whatever Δ.\n\n",
        results.runs,
        DEFAULT_LEVEL * 100.0
    );
    for t in tables {
        let header = header(t);
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
            let _ = writeln!(out, "### {}\n\n{}\n", md(&t.title), caption(t).join(" "));
            let cells = |r: &[String]| r.iter().map(|c| md(c)).collect::<Vec<_>>().join(" | ");
            let _ = writeln!(out, "| {} |", cells(&header));
            let _ = writeln!(out, "|{}", "---|".repeat(header.len()));
            for row in body {
                let _ = writeln!(out, "| {} |", cells(&row));
            }
            out.push('\n');
        } else {
            let _ = writeln!(out, "{}\n{}", t.title, caption(t).join("\n"));
            let h: Vec<&str> = header.iter().map(String::as_str).collect();
            let mut table = crate::table::Table::new(&h);
            for row in body {
                table.row(row);
            }
            out.push_str(&table.render());
            out.push('\n');
        }
    }
    out
}

/// A plot and the file name it is saved under.
pub(crate) struct Plot {
    pub(crate) file: String,
    pub(crate) svg: String,
    /// Index of its table.
    table: usize,
}

fn estimate(s: Option<&Sample>, scale: f64) -> Option<report::plot::Estimate> {
    s.map(|s| report::plot::Estimate {
        value: s.mean / scale,
        interval: s.ci_low.zip(s.ci_high).map(|(a, b)| (a / scale, b / scale)),
    })
}

/// One plot per table and metric: a line chart against the table's numeric factor (the
/// payload size) with confidence bands, else bars per row with error bars.
pub(crate) fn plots(tables: &[Table], results: &Results) -> Vec<Plot> {
    let mut out = Vec::new();
    for (ti, t) in tables.iter().enumerate() {
        for c in &t.metrics {
            let title = if t.metrics.len() == 1 {
                t.title.clone()
            } else {
                format!("{} – {}", t.title, c.metric.title())
            };
            let pick = |point: &str, family: u8| {
                results.row(point, c).and_then(|r| {
                    if family == 4 {
                        r.ipv4.as_ref()
                    } else {
                        r.ipv6.as_ref()
                    }
                })
            };
            let svg = match &t.x {
                Some(xs) => {
                    let line = |name: &str, family: u8| {
                        let mut points: Vec<(f64, report::plot::Estimate)> = t
                            .rows
                            .iter()
                            .zip(xs)
                            .filter_map(|(r, x)| {
                                estimate(pick(&r.point, family), c.unit.scale).map(|e| (*x, e))
                            })
                            .collect();
                        points.sort_by(|a, b| a.0.total_cmp(&b.0));
                        report::plot::Line {
                            name: name.into(),
                            points,
                        }
                    };
                    report::plot::line_chart(
                        &title,
                        &t.label_heading,
                        &c.heading(),
                        &[line("IPv4", 4), line("IPv6", 6)],
                    )
                }
                None => {
                    let cats: Vec<String> = t.rows.iter().map(|r| r.label.clone()).collect();
                    let bars = |name: &str, family: u8| report::plot::Bars {
                        name: name.into(),
                        values: t
                            .rows
                            .iter()
                            .map(|r| estimate(pick(&r.point, family), c.unit.scale))
                            .collect(),
                    };
                    report::plot::bar_chart(
                        &title,
                        &c.heading(),
                        &cats,
                        &[bars("IPv4", 4), bars("IPv6", 6)],
                    )
                }
            };
            // Numbered, so two titles alike once made safe never overwrite each other;
            // the title comes from the plan, so only safe characters reach a file name.
            // Cut to 100 characters: a long title must not make the name too long.
            let name: String = lab::store::file_safe(&format!("{}-{}", t.title, c.metric.key()))
                .chars()
                .take(100)
                .collect();
            let file = format!("{:02}-{name}", out.len() + 1);
            out.push(Plot {
                file,
                svg,
                table: ti,
            });
        }
    }
    out
}

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// One page, nothing fetched: styles inline, plots as inline SVG.
pub(crate) fn html(
    dirs: &[PathBuf],
    tables: &[Table],
    results: &Results,
    plots: &[Plot],
) -> String {
    let mut out = String::from(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>dualperf report</title>\
         <style>body{font-family:sans-serif;max-width:64em;margin:2em auto;padding:0 1em}\
         table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;padding:.2em .6em;text-align:right}\
         td:first-child,th:first-child{text-align:left}.ns{color:#777}caption{text-align:left;color:#444;padding:.3em 0}\
         </style></head><body>\n",
    );
    let _ = writeln!(
        out,
        "<h1>dualperf report</h1><p>{} runs from {}. Each cell is the mean over repetitions ± the half-width \
         of its {:.0} % confidence interval (Student t). Δ % = (IPv6 − IPv4) / IPv4; p from Welch's t-test; a \
         difference with p ≥ {DEFAULT_ALPHA} is <em>not significant</em> (n.s.), whatever its size.</p>",
        results.runs,
        esc(&dirs
            .iter()
            .map(|d| d.display().to_string())
            .collect::<Vec<_>>()
            .join(", ")),
        DEFAULT_LEVEL * 100.0
    );
    for (ti, t) in tables.iter().enumerate() {
        let _ = write!(
            out,
            "<h2>{}</h2>\n<table><caption>{}</caption><tr>",
            esc(&t.title),
            esc(&caption(t).join(" "))
        );
        for h in header(t) {
            let _ = write!(out, "<th>{}</th>", esc(&h));
        }
        out.push_str("</tr>\n");
        for r in &t.rows {
            let _ = write!(out, "<tr><td>{}</td>", esc(&r.label));
            for c in cells(t, results, &r.point, &r.label) {
                let class = if c.contains("not significant") || c.contains("(n.s.)") {
                    " class=\"ns\""
                } else {
                    ""
                };
                let _ = write!(out, "<td{class}>{}</td>", esc(&c));
            }
            out.push_str("</tr>\n");
        }
        out.push_str("</table>\n");
        for p in plots.iter().filter(|p| p.table == ti) {
            out.push_str(&p.svg);
            out.push('\n');
        }
    }
    out.push_str("</body></html>\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_keep_about_five_significant_digits() {
        assert_eq!(num(85.054164, 85.054164), "85.054");
        assert_eq!(num(0.1623, 0.1623), "0.16230");
        assert_eq!(num(14947.91, 14947.91), "14948");
        assert_eq!(num(0.012, 85.0), "0.012");
        assert_eq!(num(0.0, 0.0), "0.000");
        assert_eq!(num(0.0000012, 0.0000012), "0.000001");
    }

    #[test]
    fn markdown_cells_escape_their_bars() {
        assert_eq!(md("a|b"), "a\\|b");
    }
}
