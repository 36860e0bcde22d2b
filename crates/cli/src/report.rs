//! `dualperf report`: statistics across repetitions from run directories, IPv4 against
//! IPv6 per point and metric. It never measures.

use std::collections::BTreeMap;
use std::fmt::Write;
use std::path::PathBuf;

use anyhow::{Context, Result};
use lab::store::{RunRecord, Store};
use meter::repeat::{compare, Comparison, Sample, Verdict, DEFAULT_ALPHA, DEFAULT_LEVEL};
use serde::Serialize;

use crate::usage;

/// Tables of a plan's results: for every point and metric, the mean over repetitions
/// with its 95 % confidence interval (Student t) for IPv4 and IPv6, the relative
/// difference, and Welch's t-test; a difference the data do not support is labelled
/// "not significant", whatever its size.
///
/// Metrics per run: throughput (the receiver's payload bit rate), delay (the mean round
/// trip with --meter rtt, else one-way), jitter (D-ITG's mean |ΔD|) and loss %.
#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:
  dualperf report results/sharma2013-1795360000
  dualperf report results/a results/b --markdown > tables.md
  dualperf report results/a --csv > tables.csv
  dualperf report results/a --html report.html --svg plots/")]
pub(crate) struct ReportArgs {
    /// Run directories written by `dualperf run`.
    #[arg(required = true)]
    dirs: Vec<PathBuf>,
    /// Markdown tables.
    #[arg(long, conflicts_with_all = ["csv", "json"])]
    markdown: bool,
    /// CSV, one row per point and metric.
    #[arg(long, conflicts_with = "json")]
    csv: bool,
    /// JSON with every figure.
    #[arg(long)]
    json: bool,
    /// Also write one self-contained HTML page with every table and plot (inline SVG,
    /// no network requests) to this file.
    #[arg(long, value_name = "FILE")]
    html: Option<PathBuf>,
    /// Also write every plot as an SVG file into this directory.
    #[arg(long, value_name = "DIR")]
    svg: Option<PathBuf>,
}

/// A metric read from each run's report.
struct Metric {
    key: &'static str,
    title: &'static str,
    unit: &'static str,
    /// The unit of the stored values (what JSON and CSV carry).
    base_unit: &'static str,
    /// Divides the stored value for display.
    scale: f64,
    /// Where it is in a flow of `send --json`, by meter.
    value: fn(&serde_json::Value) -> Option<f64>,
}

fn summary(flow: &serde_json::Value) -> &serde_json::Value {
    // The round-trip figures with --meter rtt, else the receiver's one-way ones; never
    // one for the other (a run without them has no value, not the other kind's).
    if flow["spec"]["meter"] == "rtt" {
        &flow["rtt"]
    } else {
        &flow["received"]
    }
}

const METRICS: [Metric; 4] = [
    Metric {
        key: "throughput",
        title: "Throughput",
        unit: "Mbit/s",
        base_unit: "bit/s",
        scale: 1e6,
        value: |f| f["received"]["bitrate_bps"].as_f64(),
    },
    Metric {
        key: "delay",
        title: "Delay (RTT or one-way, mean)",
        unit: "µs",
        base_unit: "ns",
        scale: 1e3,
        value: |f| summary(f)["delay"]["mean_ns"].as_f64(),
    },
    Metric {
        key: "jitter",
        title: "Jitter (D-ITG, mean |ΔD|)",
        unit: "µs",
        base_unit: "ns",
        scale: 1e3,
        value: |f| summary(f)["jitter"]["ditg_ns"].as_f64(),
    },
    Metric {
        key: "loss",
        title: "Loss",
        unit: "%",
        base_unit: "%",
        scale: 1.0,
        value: |f| f["received"]["loss"]["loss_pct"].as_f64(),
    },
];

/// One point's metric over both families.
#[derive(Serialize)]
struct Row {
    point: String,
    factors: BTreeMap<String, String>,
    metric: &'static str,
    unit: &'static str,
    ipv4: Option<Sample>,
    ipv6: Option<Sample>,
    ipv6_vs_ipv4: Option<Comparison>,
}

pub(crate) fn run(args: ReportArgs) -> Result<()> {
    let mut records: Vec<RunRecord> = Vec::new();
    let mut factors: BTreeMap<String, BTreeMap<String, String>> = BTreeMap::new();
    let mut order: Vec<String> = Vec::new();
    let mut plan_seen: Option<serde_json::Value> = None;
    for dir in &args.dirs {
        let store = match Store::open(dir) {
            Ok(s) => s,
            Err(e) => usage!("{e}"),
        };
        // The points' factors and their order, from the resolved plan.
        if let Ok(text) = std::fs::read(dir.join("resolved.json")) {
            let resolved: serde_json::Value = serde_json::from_slice(&text).unwrap_or_default();
            // Repetitions pool across directories only when they measured the same plan.
            match &plan_seen {
                Some(first) if *first != resolved => usage!(
                    "{} measured another plan (or with/without --quick) than {}: report them separately",
                    dir.display(),
                    args.dirs[0].display()
                ),
                Some(_) => {}
                None => plan_seen = Some(resolved.clone()),
            }
            for p in resolved["plan"]["points"].as_array().into_iter().flatten() {
                let Some(id) = p["id"].as_str() else { continue };
                if !order.iter().any(|o| o == id) {
                    order.push(id.to_owned());
                }
                let f = serde_json::from_value(p["factors"].clone()).unwrap_or_default();
                factors.insert(id.to_owned(), f);
            }
        }
        records.extend(store.runs()?.into_iter().filter(|r| r.exit_code == 0));
    }
    if records.is_empty() {
        usage!(
            "no finished runs in {}",
            args.dirs
                .iter()
                .map(|d| d.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    for r in &records {
        if !order.contains(&r.point) {
            order.push(r.point.clone());
        }
    }
    let mut rows = Vec::new();
    for point in &order {
        for m in &METRICS {
            let values = |family: u8| -> Vec<f64> {
                records
                    .iter()
                    .filter(|r| &r.point == point && r.run.family == family && r.exit_code == 0)
                    .filter_map(|r| (m.value)(&r.report["flows"][0]))
                    .collect()
            };
            let ipv4 = Sample::new(&values(4), DEFAULT_LEVEL);
            let ipv6 = Sample::new(&values(6), DEFAULT_LEVEL);
            let cmp = ipv4
                .as_ref()
                .zip(ipv6.as_ref())
                .and_then(|(a, b)| compare(a, b, DEFAULT_ALPHA));
            rows.push(Row {
                point: point.clone(),
                factors: factors.get(point).cloned().unwrap_or_default(),
                metric: m.key,
                unit: m.base_unit,
                ipv4,
                ipv6,
                ipv6_vs_ipv4: cmp,
            });
        }
    }
    if args.html.is_some() || args.svg.is_some() {
        let groups = groups(&rows);
        let plots: Vec<(String, String)> = groups.iter().map(|g| plot(g, &rows)).collect();
        if let Some(dir) = &args.svg {
            std::fs::create_dir_all(dir)
                .with_context(|| format!("cannot create {}", dir.display()))?;
            for (i, (name, svg)) in plots.iter().enumerate() {
                // Numbered, so two groups alike once made safe never overwrite each other.
                let path = dir.join(format!("{i:02}-{name}.svg"));
                std::fs::write(&path, svg)
                    .with_context(|| format!("cannot write {}", path.display()))?;
            }
        }
        if let Some(path) = &args.html {
            let page = html(&args.dirs, &groups, &rows, &plots, records.len());
            std::fs::write(path, page)
                .with_context(|| format!("cannot write {}", path.display()))?;
        }
    }
    if args.json {
        return crate::out::print_json(&serde_json::json!({
            "format_version": 1,
            "runs": records.len(),
            "level": DEFAULT_LEVEL,
            "alpha": DEFAULT_ALPHA,
            "rows": rows,
        }));
    }
    if args.csv {
        let mut s = String::from(
            "point,metric,unit,ipv4_n,ipv4_mean,ipv4_ci_low,ipv4_ci_high,ipv6_n,ipv6_mean,ipv6_ci_low,ipv6_ci_high,rel_diff_pct,p,verdict\n",
        );
        let o = |v: Option<f64>| v.map_or(String::new(), |v| v.to_string());
        for r in &rows {
            let side = |s: &Option<Sample>| match s {
                Some(s) => format!("{},{},{},{}", s.n, s.mean, o(s.ci_low), o(s.ci_high)),
                None => ",,,".into(),
            };
            let c = r.ipv6_vs_ipv4.as_ref();
            let _ = writeln!(
                s,
                "\"{}\",{},{},{},{},{},{},{}",
                r.point.replace('"', "\"\""),
                r.metric,
                r.unit,
                side(&r.ipv4),
                side(&r.ipv6),
                o(c.and_then(|c| c.rel_diff_pct)),
                o(c.and_then(|c| c.p)),
                c.map_or("undefined", |c| verdict(c.verdict))
            );
        }
        return crate::out::print(s);
    }
    crate::out::print(tables(&rows, records.len(), args.markdown))
}

fn verdict(v: Verdict) -> &'static str {
    match v {
        Verdict::Significant => "significant",
        Verdict::NotSignificant => "not significant",
        Verdict::Undefined => "undefined",
    }
}

/// One table per metric and per protocol when the points sweep one (the seeds' shape:
/// "UDP – Throughput (Mbit/s) by packet size: IPv4 | IPv6 | Δ %").
fn tables(rows: &[Row], runs: usize, markdown: bool) -> String {
    let mut out = format!(
        "dualperf report: {runs} runs; mean ± half-width of the {:.0} % confidence interval (Student t) over repetitions;\n\
         Δ % = (IPv6 − IPv4) / IPv4; p from Welch's t-test; \"not significant\" at p ≥ {DEFAULT_ALPHA} whatever Δ.\n\n",
        DEFAULT_LEVEL * 100.0
    );
    for g in groups(rows) {
        let m = g.m();
        let title = g.title();
        let fmt = |s: &Option<Sample>| match s {
            Some(s) => {
                let v = s.mean / m.scale;
                match s.ci_high {
                    Some(h) => format!("{v:.3} ± {:.3}", (h - s.mean) / m.scale),
                    None => format!("{v:.3} (n={})", s.n),
                }
            }
            None => "-".into(),
        };
        let mut body: Vec<Vec<String>> = Vec::new();
        for r in g.rows(rows) {
            let label = row_label(r);
            let c = r.ipv6_vs_ipv4.as_ref();
            body.push(vec![
                label,
                fmt(&r.ipv4),
                fmt(&r.ipv6),
                c.and_then(|c| c.rel_diff_pct)
                    .map_or("-".into(), |d| format!("{d:+.2}")),
                c.and_then(|c| c.p)
                    .map_or("-".into(), |p| format!("{p:.3}")),
                c.map_or("undefined", |c| verdict(c.verdict)).to_owned(),
            ]);
        }
        let header = ["point", "IPv4", "IPv6", "Δ %", "p", "IPv6 vs IPv4"];
        if markdown {
            let _ = writeln!(out, "### {title}\n");
            let _ = writeln!(out, "| {} |", header.join(" | "));
            let _ = writeln!(out, "|{}", "---|".repeat(header.len()));
            for row in body {
                let _ = writeln!(out, "| {} |", row.join(" | "));
            }
            out.push('\n');
        } else {
            let _ = writeln!(out, "{title}");
            let mut t = crate::table::Table::new(&header);
            for row in body {
                t.row(row);
            }
            out.push_str(&t.render());
            out.push('\n');
        }
    }
    out
}

/// A table and its plot: one metric over the points of one protocol (or of none).
struct Group {
    protocol: String,
    metric: &'static str,
}

impl Group {
    fn m(&self) -> &'static Metric {
        METRICS
            .iter()
            .find(|m| m.key == self.metric)
            .unwrap_or(&METRICS[0])
    }

    fn title(&self) -> String {
        let m = self.m();
        if self.protocol.is_empty() {
            format!("{} ({})", m.title, m.unit)
        } else {
            format!("{} – {} ({})", self.protocol, m.title, m.unit)
        }
    }

    fn rows<'a>(&'a self, rows: &'a [Row]) -> impl Iterator<Item = &'a Row> + 'a {
        rows.iter()
            .filter(move |r| r.metric == self.metric && protocol_of(r) == self.protocol)
    }
}

/// The table a row goes in: the point's `group`, else its swept protocol, else none.
fn protocol_of(r: &Row) -> String {
    r.factors
        .get("group")
        .cloned()
        .or_else(|| r.factors.get("protocol").map(|p| p.to_uppercase()))
        .unwrap_or_default()
}

fn groups(rows: &[Row]) -> Vec<Group> {
    let mut out: Vec<Group> = Vec::new();
    for r in rows {
        let protocol = protocol_of(r);
        if !out
            .iter()
            .any(|g| g.protocol == protocol && g.metric == r.metric)
        {
            out.push(Group {
                protocol,
                metric: r.metric,
            });
        }
    }
    out
}

fn estimate(s: &Option<Sample>, scale: f64) -> Option<lab::plot::Estimate> {
    s.as_ref().map(|s| lab::plot::Estimate {
        value: s.mean / scale,
        interval: s.ci_low.zip(s.ci_high).map(|(a, b)| (a / scale, b / scale)),
    })
}

/// The plot of a group, and a file name for it: a line chart against the payload size
/// when every point of the group has a numeric size, else bars per point.
fn plot(g: &Group, rows: &[Row]) -> (String, String) {
    let m = g.m();
    let mine: Vec<&Row> = g.rows(rows).collect();
    let prefix = if g.protocol.is_empty() {
        "points".to_owned()
    } else {
        g.protocol.to_lowercase()
    };
    // The group comes from the plan: only safe characters reach a file name.
    let prefix = lab::store::file_safe(&prefix);
    let name = format!("{prefix}-{}", g.metric);
    let sizes: Option<Vec<f64>> = mine
        .iter()
        .map(|r| {
            r.factors
                .get("size")
                .and_then(|v| v.parse::<f64>().ok())
                .filter(|x| x.is_finite())
        })
        .collect();
    // A line needs the size to be the only thing that changes along it.
    let one_factor = mine
        .iter()
        .all(|r| r.factors.len() == mine[0].factors.len())
        && mine.iter().all(|r| {
            r.factors
                .iter()
                .all(|(k, v)| k == "size" || mine[0].factors.get(k) == Some(v))
        });
    let sizes = sizes.filter(|_| one_factor && !mine.is_empty());
    let svg = match sizes.filter(|s| s.len() >= 2) {
        Some(xs) => {
            let line = |family: &str, pick: fn(&Row) -> &Option<Sample>| {
                let mut points: Vec<(f64, lab::plot::Estimate)> = mine
                    .iter()
                    .zip(&xs)
                    .filter_map(|(r, x)| estimate(pick(r), m.scale).map(|e| (*x, e)))
                    .collect();
                points.sort_by(|a, b| a.0.total_cmp(&b.0));
                lab::plot::Line {
                    name: family.into(),
                    points,
                }
            };
            lab::plot::line_chart(
                &g.title(),
                "payload size (bytes)",
                m.unit,
                &[line("IPv4", |r| &r.ipv4), line("IPv6", |r| &r.ipv6)],
            )
        }
        None => {
            let cats: Vec<String> = mine.iter().map(|r| row_label(r)).collect();
            let bars = |family: &str, pick: fn(&Row) -> &Option<Sample>| lab::plot::Bars {
                name: family.into(),
                values: mine.iter().map(|r| estimate(pick(r), m.scale)).collect(),
            };
            lab::plot::bar_chart(
                &g.title(),
                m.unit,
                &cats,
                &[bars("IPv4", |r| &r.ipv4), bars("IPv6", |r| &r.ipv6)],
            )
        }
    };
    (name, svg)
}

fn row_label(r: &Row) -> String {
    if r.factors.is_empty() {
        return r.point.clone();
    }
    r.factors
        .iter()
        .filter(|(k, _)| *k != "protocol" && *k != "group")
        .map(|(k, v)| {
            if k == "point" {
                v.clone()
            } else {
                format!("{k} {v}")
            }
        })
        .collect::<Vec<_>>()
        .join(", ")
}

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// One page, nothing fetched: styles inline, plots as inline SVG.
fn html(
    dirs: &[PathBuf],
    groups: &[Group],
    rows: &[Row],
    plots: &[(String, String)],
    runs: usize,
) -> String {
    let mut out = String::from(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>dualperf report</title>\
         <style>body{font-family:sans-serif;max-width:60em;margin:2em auto;padding:0 1em}\
         table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;padding:.2em .6em;text-align:right}\
         td:first-child,th:first-child{text-align:left}.ns{color:#777}</style></head><body>\n",
    );
    let _ = writeln!(
        out,
        "<h1>dualperf report</h1><p>{runs} runs from {}. Each cell is the mean over repetitions ± the half-width \
         of its {:.0} % confidence interval (Student t). Δ % = (IPv6 − IPv4) / IPv4; p from Welch's t-test; a \
         difference with p ≥ {DEFAULT_ALPHA} is <em>not significant</em>, whatever its size.</p>",
        esc(&dirs
            .iter()
            .map(|d| d.display().to_string())
            .collect::<Vec<_>>()
            .join(", ")),
        DEFAULT_LEVEL * 100.0
    );
    for (g, (_, svg)) in groups.iter().zip(plots) {
        let m = g.m();
        let _ = write!(
            out,
            "<h2>{}</h2>\n<table><tr><th>point</th><th>IPv4</th><th>IPv6</th><th>Δ %</th><th>p</th>\
             <th>IPv6 vs IPv4</th></tr>\n",
            esc(&g.title())
        );
        let cell = |s: &Option<Sample>| match s {
            Some(s) => match s.ci_high {
                Some(h) => format!("{:.3} ± {:.3}", s.mean / m.scale, (h - s.mean) / m.scale),
                None => format!("{:.3} (n={})", s.mean / m.scale, s.n),
            },
            None => "–".into(),
        };
        for r in g.rows(rows) {
            let c = r.ipv6_vs_ipv4.as_ref();
            let v = c.map_or("undefined", |c| verdict(c.verdict));
            let _ = writeln!(
                out,
                "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td class=\"{}\">{}</td></tr>",
                esc(&row_label(r)),
                cell(&r.ipv4),
                cell(&r.ipv6),
                c.and_then(|c| c.rel_diff_pct)
                    .map_or("–".into(), |d| format!("{d:+.2}")),
                c.and_then(|c| c.p).map_or("–".into(), |p| format!("{p:.3}")),
                if v == "significant" { "" } else { "ns" },
                v
            );
        }
        out.push_str("</table>\n");
        out.push_str(svg);
        out.push('\n');
    }
    out.push_str("</body></html>\n");
    out
}
