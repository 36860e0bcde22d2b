//! `dualperf report`: statistics across repetitions from run directories, IPv4 against
//! IPv6 per point and metric. It never measures.

use std::collections::BTreeMap;
use std::fmt::Write;
use std::path::PathBuf;

use anyhow::Result;
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
  dualperf report results/a --csv > tables.csv")]
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
}

/// A metric read from each run's report.
struct Metric {
    key: &'static str,
    title: &'static str,
    unit: &'static str,
    /// Divides the stored value for display.
    scale: f64,
    /// Where it is in a flow of `send --json`, by meter.
    value: fn(&serde_json::Value) -> Option<f64>,
}

fn summary(flow: &serde_json::Value) -> &serde_json::Value {
    // The round-trip figures with --meter rtt, else the receiver's one-way ones.
    if flow["spec"]["meter"] == "rtt" && !flow["rtt"].is_null() {
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
        scale: 1e6,
        value: |f| f["received"]["bitrate_bps"].as_f64(),
    },
    Metric {
        key: "delay",
        title: "Delay (RTT or one-way, mean)",
        unit: "µs",
        scale: 1e3,
        value: |f| summary(f)["delay"]["mean_ns"].as_f64(),
    },
    Metric {
        key: "jitter",
        title: "Jitter (D-ITG, mean |ΔD|)",
        unit: "µs",
        scale: 1e3,
        value: |f| summary(f)["jitter"]["ditg_ns"].as_f64(),
    },
    Metric {
        key: "loss",
        title: "Loss",
        unit: "%",
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
    for dir in &args.dirs {
        let store = match Store::open(dir) {
            Ok(s) => s,
            Err(e) => usage!("{e}"),
        };
        // The points' factors and their order, from the resolved plan.
        if let Ok(text) = std::fs::read(dir.join("resolved.json")) {
            let resolved: serde_json::Value = serde_json::from_slice(&text).unwrap_or_default();
            for p in resolved["plan"]["points"].as_array().into_iter().flatten() {
                let Some(id) = p["id"].as_str() else { continue };
                if !order.iter().any(|o| o == id) {
                    order.push(id.to_owned());
                }
                let f = serde_json::from_value(p["factors"].clone()).unwrap_or_default();
                factors.insert(id.to_owned(), f);
            }
        }
        records.extend(store.runs()?);
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
                unit: m.unit,
                ipv4,
                ipv6,
                ipv6_vs_ipv4: cmp,
            });
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
    let mut groups: Vec<(String, &'static str)> = Vec::new();
    for r in rows {
        let g = r
            .factors
            .get("protocol")
            .map_or_else(String::new, |p| p.to_uppercase());
        if !groups.iter().any(|(x, m)| *x == g && *m == r.metric) {
            groups.push((g, r.metric));
        }
    }
    for (group, metric) in groups {
        let m = METRICS
            .iter()
            .find(|m| m.key == metric)
            .unwrap_or(&METRICS[0]);
        let title = if group.is_empty() {
            format!("{} ({})", m.title, m.unit)
        } else {
            format!("{group} – {} ({})", m.title, m.unit)
        };
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
        for r in rows.iter().filter(|r| {
            r.metric == metric
                && r.factors
                    .get("protocol")
                    .map_or_else(String::new, |p| p.to_uppercase())
                    == group
        }) {
            let label: String = if r.factors.is_empty() {
                r.point.clone()
            } else {
                r.factors
                    .iter()
                    .filter(|(k, _)| *k != "protocol")
                    .map(|(k, v)| {
                        if k == "point" {
                            v.clone()
                        } else {
                            format!("{k} {v}")
                        }
                    })
                    .collect::<Vec<_>>()
                    .join(", ")
            };
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
