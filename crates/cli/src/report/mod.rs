//! `dualperf report`: statistics across repetitions from run directories, IPv4 against
//! IPv6 per point and metric, in the tables the plan declares. It never measures.

mod render;

use std::collections::{BTreeMap, HashMap};
use std::fmt::Write;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use lab::store::{RunRecord, Store};
use lab::tables::{Column, MetricKind, TableSpec, Unit};
use meter::repeat::{compare, Comparison, Sample, DEFAULT_ALPHA, DEFAULT_LEVEL};
use serde::Serialize;

use crate::usage;

/// Tables of a plan's results: for every point and metric, the mean over repetitions
/// with its 95 % confidence interval (Student t) for IPv4 and IPv6, the relative
/// difference, and Welch's t-test; a difference the data do not support is labelled
/// "not significant", whatever its size.
///
/// The tables are those the plan declares ([[tables]]: title, points, metrics and units,
/// e.g. "Table 3. IPv4 and IPv6 TCP Throughput" in Mbit/s by payload size); points no
/// table holds get one table per metric and group. Metrics per run: throughput (the
/// receiver's payload bit rate), rtt or one-way delay (mean), jitter (D-ITG's mean |ΔD|)
/// and loss %.
#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:
  dualperf report results/sharma2013-1795360000
  dualperf report results/a results/b --markdown > tables.md
  dualperf report results/a --csv > tables.csv
  dualperf report results/a --html report.html --png plots/ --svg plots/")]
pub(crate) struct ReportArgs {
    /// Run directories written by `dualperf run` (repetitions of the same plan pool).
    #[arg(required = true)]
    dirs: Vec<PathBuf>,
    /// Markdown tables.
    #[arg(long, conflicts_with_all = ["csv", "json"])]
    markdown: bool,
    /// CSV: one row per table row and metric, in the table's unit.
    #[arg(long, conflicts_with = "json")]
    csv: bool,
    /// JSON with every figure, in the stored units (bit/s, ns, %), and the tables.
    #[arg(long)]
    json: bool,
    /// Also write one self-contained HTML page with every table and plot (inline SVG,
    /// no network requests) to this file.
    #[arg(long, value_name = "FILE")]
    html: Option<PathBuf>,
    /// Also write every plot as an SVG file into this directory.
    #[arg(long, value_name = "DIR")]
    svg: Option<PathBuf>,
    /// Also write every plot as a PNG file (1440×840) into this directory.
    #[arg(long, value_name = "DIR")]
    png: Option<PathBuf>,
}

/// One point's metric over both families, in the stored unit.
#[derive(Clone, Serialize)]
pub(crate) struct Row {
    point: String,
    factors: BTreeMap<String, String>,
    metric: MetricKind,
    /// 0: the measured flow; N: the point's Nth background flow.
    #[serde(skip_serializing_if = "is_zero")]
    flow: u8,
    /// The lab router a router's figure is of.
    #[serde(skip_serializing_if = "Option::is_none")]
    router: Option<String>,
    unit: &'static str,
    ipv4: Option<Sample>,
    ipv6: Option<Sample>,
    ipv6_vs_ipv4: Option<Comparison>,
}

/// A table as reported: its spec (declared or made up), its points in plan order, and
/// what labels its rows.
#[derive(Serialize)]
pub(crate) struct Table {
    title: String,
    /// `true` when the plan declared it.
    declared: bool,
    metrics: Vec<Column>,
    /// Heading of the first column: the factor that varies (`Payload size (bytes)`) or
    /// `Point`.
    label_heading: String,
    rows: Vec<TableRow>,
    /// The paper's numbers by row label, one per metric (declared tables only).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    paper: BTreeMap<String, Vec<Option<f64>>>,
    /// The varying factor's numeric values when it is the only one (an x axis).
    #[serde(skip)]
    x: Option<Vec<f64>>,
}

#[derive(Serialize)]
pub(crate) struct TableRow {
    point: String,
    label: String,
}

/// Everything `report` read: the statistics of every (point, metric).
pub(crate) struct Results {
    /// In plan order, point by point.
    rows: Vec<Row>,
    index: HashMap<(String, MetricKind, u8, Option<String>), usize>,
    pub(crate) runs: usize,
}

impl Results {
    pub(crate) fn row(&self, point: &str, c: &Column) -> Option<&Row> {
        self.index
            .get(&(point.to_owned(), c.metric, c.flow, c.router.clone()))
            .map(|i| &self.rows[*i])
    }
}

fn is_zero(v: &u8) -> bool {
    *v == 0
}

pub(crate) fn run(args: ReportArgs) -> Result<()> {
    let mut records: Vec<RunRecord> = Vec::new();
    let mut factors: BTreeMap<String, BTreeMap<String, String>> = BTreeMap::new();
    let mut order: Vec<String> = Vec::new();
    let mut plan_seen: Option<serde_json::Value> = None;
    let mut specs: Vec<TableSpec> = Vec::new();
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
                Some(first) if !lab::plan::same_measurement(first, &resolved) => usage!(
                    "{} measured another plan (or with/without --quick) than {}: report them separately",
                    dir.display(),
                    args.dirs[0].display()
                ),
                Some(_) => {}
                None => {
                    // The first directory's tables; one from before plans declared
                    // tables has none.
                    specs = table_specs(dir, &resolved["plan"]["tables"]);
                    plan_seen = Some(resolved.clone());
                }
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
    // Runs whose lab routers stalled (dualperf run recorded it): their delays and
    // losses may be the router's. Said on stderr, so the tables stay as they are.
    let stalled: Vec<&str> = records
        .iter()
        .filter(|r| !r.router_stalls.is_empty())
        .map(|r| r.run.id.as_str())
        .collect();
    if !stalled.is_empty() {
        eprintln!(
            "dualperf report: warning: {} of {} runs had a router loop stall over {} ms ({}{}): their delays and losses may be the router's",
            stalled.len(),
            records.len(),
            lab::runner::ROUTER_STALL_LIMIT_NS / 1_000_000,
            stalled[..stalled.len().min(5)].join(", "),
            if stalled.len() > 5 { ", …" } else { "" }
        );
    }
    for r in &records {
        if !order.contains(&r.point) {
            order.push(r.point.clone());
        }
    }
    let mut rows = Vec::new();
    let mut index = HashMap::new();
    // The measured flow, then each background flow any run has, then each lab router.
    let flows = records
        .iter()
        .map(|r| r.background.len())
        .max()
        .unwrap_or(0)
        .min(lab::plan::MAX_BACKGROUND) as u8;
    let routers: std::collections::BTreeSet<&String> =
        records.iter().flat_map(|r| r.routers.keys()).collect();
    let mut columns: Vec<Column> = (0..=flows)
        .flat_map(|flow| {
            MetricKind::ALL
                .into_iter()
                .filter(|m| !matches!(m, MetricKind::CpuPerFrame | MetricKind::QosPerFrame))
                .map(move |m| Column {
                    metric: m,
                    unit: m.default_unit(),
                    flow,
                    router: None,
                })
        })
        .collect();
    for r in &routers {
        for metric in [MetricKind::CpuPerFrame, MetricKind::QosPerFrame] {
            columns.push(Column {
                metric,
                unit: metric.default_unit(),
                flow: 0,
                router: Some((*r).clone()),
            });
        }
    }
    for point in &order {
        for column in &columns {
            let values = |family: u8| -> Vec<f64> {
                records
                    .iter()
                    .filter(|r| &r.point == point && r.run.family == family)
                    .filter_map(|r| column.of(r))
                    .collect()
            };
            let ipv4 = Sample::new(&values(4), DEFAULT_LEVEL);
            let ipv6 = Sample::new(&values(6), DEFAULT_LEVEL);
            if ipv4.is_none() && ipv6.is_none() {
                continue;
            }
            let cmp = ipv4
                .as_ref()
                .zip(ipv6.as_ref())
                .and_then(|(a, b)| compare(a, b, DEFAULT_ALPHA));
            index.insert(
                (
                    point.clone(),
                    column.metric,
                    column.flow,
                    column.router.clone(),
                ),
                rows.len(),
            );
            rows.push(Row {
                point: point.clone(),
                factors: factors.get(point).cloned().unwrap_or_default(),
                metric: column.metric,
                flow: column.flow,
                router: column.router.clone(),
                unit: column.metric.base_unit(),
                ipv4,
                ipv6,
                ipv6_vs_ipv4: cmp,
            });
        }
    }
    let results = Results {
        rows,
        index,
        runs: records.len(),
    };
    let has = |p: &str, flow: u8| {
        flow == 0
            || MetricKind::ALL.iter().any(|m| {
                results
                    .row(
                        p,
                        &Column {
                            metric: *m,
                            unit: m.default_unit(),
                            flow,
                            router: None,
                        },
                    )
                    .is_some()
            })
    };
    let tables = tables(&specs, &order, &factors, flows, &has);

    let plots = if args.html.is_some() || args.svg.is_some() || args.png.is_some() {
        render::plots(&tables, &results)
    } else {
        Vec::new()
    };
    if let Some(dir) = &args.svg {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
        for p in &plots {
            let path = dir.join(format!("{}.svg", p.file));
            std::fs::write(&path, &p.svg)
                .with_context(|| format!("cannot write {}", path.display()))?;
        }
    }
    if let Some(dir) = &args.png {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
        let fonts = report::png::Fonts::system()?;
        for p in &plots {
            let path = dir.join(format!("{}.png", p.file));
            let png = fonts
                .render(&p.svg)
                .with_context(|| format!("cannot draw {}", path.display()))?;
            std::fs::write(&path, png)
                .with_context(|| format!("cannot write {}", path.display()))?;
        }
    }
    if let Some(path) = &args.html {
        let page = render::html(&args.dirs, &tables, &results, &plots);
        std::fs::write(path, page).with_context(|| format!("cannot write {}", path.display()))?;
    }
    if args.json {
        return crate::out::print_json(&serde_json::json!({
            "format_version": 2,
            "runs": results.runs,
            "level": DEFAULT_LEVEL,
            "alpha": DEFAULT_ALPHA,
            "rows": results.rows,
            "tables": tables,
        }));
    }
    if args.csv {
        return crate::out::print(csv(&tables, &results));
    }
    crate::out::print(render::text(&tables, &results, args.markdown))
}

/// The declared tables of a run directory's `resolved.json`, each checked as a plan's
/// would be (the file may have been edited): an entry that does not read, or a unit its
/// metric does not have, is left out with a warning.
fn table_specs(dir: &Path, value: &serde_json::Value) -> Vec<TableSpec> {
    let mut out = Vec::new();
    for (i, v) in value.as_array().into_iter().flatten().enumerate() {
        let spec = serde_json::from_value::<TableSpec>(v.clone())
            .ok()
            .filter(|t| !t.metrics.is_empty())
            .and_then(|mut t| {
                for c in &mut t.metrics {
                    c.unit = Unit::parse(c.metric, &c.unit.name)?;
                }
                Some(t)
            });
        match spec {
            Some(t) => out.push(t),
            None => eprintln!(
                "dualperf report: warning: {}: table {} in resolved.json does not read; left out",
                dir.display(),
                i + 1
            ),
        }
    }
    out
}

/// The metrics every point is reported in, declared or not.
const DEFAULT_METRICS: [MetricKind; 4] = [
    MetricKind::Throughput,
    MetricKind::Delay,
    MetricKind::Jitter,
    MetricKind::Loss,
];

/// The plan's tables over the points they hold; then, so nothing measured goes
/// unreported, one table per metric and group for every (point, metric) no declared
/// table shows (the point's `group`, else its swept protocol).
fn tables(
    specs: &[TableSpec],
    order: &[String],
    factors: &BTreeMap<String, BTreeMap<String, String>>,
    flows: u8,
    has: &dyn Fn(&str, u8) -> bool,
) -> Vec<Table> {
    let empty = BTreeMap::new();
    let factors_of = |p: &str| factors.get(p).unwrap_or(&empty);
    let mut out = Vec::new();
    for spec in specs {
        let points: Vec<&String> = order.iter().filter(|p| spec.holds(factors_of(p))).collect();
        if points.is_empty() {
            continue;
        }
        let mut t = table(
            spec.title.clone(),
            true,
            spec.metrics.clone(),
            &spec.select,
            &points,
            factors,
        );
        t.paper = spec.paper.clone();
        out.push(t);
    }
    let shown = |p: &str, m: MetricKind, flow: u8| {
        specs.iter().any(|s| {
            s.holds(factors_of(p))
                && s.metrics
                    .iter()
                    .any(|c| c.flow == flow && c.router.is_none() && c.metric.covers(m))
        })
    };
    let declared = !out.is_empty();
    // Background flows beyond the eighth (seed 001's many identical streams) have rows
    // in `--json` but no tables of their own unless the plan declares them.
    for (flow, m) in (0..=flows.min(8)).flat_map(|f| DEFAULT_METRICS.map(|m| (f, m))) {
        let mut loose: Vec<(String, Vec<&String>)> = Vec::new();
        for p in order.iter().filter(|p| !shown(p, m, flow) && has(p, flow)) {
            let f = factors_of(p);
            let group = f
                .get("group")
                .cloned()
                .or_else(|| f.get("protocol").map(|p| p.to_uppercase()))
                .unwrap_or_default();
            match loose.iter_mut().find(|(g, _)| *g == group) {
                Some((_, points)) => points.push(p),
                None => loose.push((group, vec![p])),
            }
        }
        for (group, points) in loose {
            let select: BTreeMap<String, String> = ["group", "protocol"]
                .into_iter()
                .filter(|k| points.iter().all(|p| factors_of(p).contains_key(*k)))
                .map(|k| (k.to_owned(), String::new()))
                .collect();
            let column = Column {
                metric: m,
                unit: m.default_unit(),
                flow,
                router: None,
            };
            let mut title = if group.is_empty() {
                column.heading()
            } else {
                format!("{group} – {}", column.heading())
            };
            if declared {
                title = format!("Also measured: {title}");
            }
            out.push(table(title, false, vec![column], &select, &points, factors));
        }
    }
    // Declared tables first, in the plan's order; the rest by group, then metric.
    let (decl, mut rest): (Vec<Table>, Vec<Table>) = out.into_iter().partition(|t| t.declared);
    let group_rank = |t: &Table| {
        order
            .iter()
            .position(|p| t.rows.first().is_some_and(|r| &r.point == p))
            .unwrap_or(usize::MAX)
    };
    rest.sort_by_key(|t| group_rank(t));
    decl.into_iter().chain(rest).collect()
}

fn table(
    title: String,
    declared: bool,
    metrics: Vec<Column>,
    select: &BTreeMap<String, String>,
    points: &[&String],
    factors: &BTreeMap<String, BTreeMap<String, String>>,
) -> Table {
    let empty = BTreeMap::new();
    let f = |p: &str| factors.get(p).unwrap_or(&empty);
    // The factors that tell the rows apart: present and not the same in every row.
    let mut keys: Vec<&String> = points
        .iter()
        .flat_map(|p| f(p).keys())
        .filter(|k| !select.contains_key(*k) && k.as_str() != "group")
        .collect();
    keys.sort_unstable();
    keys.dedup();
    let mut varying: Vec<&String> = keys
        .into_iter()
        .filter(|k| {
            let first = points.first().and_then(|p| f(p).get(*k));
            points.iter().any(|p| f(p).get(*k) != first)
        })
        .collect();
    // Points that name their own factors are told apart by those, not by their labels.
    if varying.len() > 1 {
        varying.retain(|k| k.as_str() != "point");
    }
    let single = match varying.as_slice() {
        [k] if points.iter().all(|p| f(p).contains_key(*k)) => Some(*k),
        _ => None,
    };
    let (label_heading, rows, x) = match single {
        Some(k) => {
            let labels: Vec<String> = points.iter().map(|p| f(p)[k].clone()).collect();
            let x: Option<Vec<f64>> = labels
                .iter()
                .map(|l| l.parse::<f64>().ok().filter(|v| v.is_finite()))
                .collect();
            (factor_heading(k), labels, x)
        }
        None => (
            "Point".to_owned(),
            points
                .iter()
                .map(|p| row_label(p, f(p), &varying))
                .collect(),
            None,
        ),
    };
    Table {
        title,
        declared,
        metrics,
        paper: BTreeMap::new(),
        label_heading,
        rows: points
            .iter()
            .zip(rows)
            .map(|(p, label)| TableRow {
                point: (*p).clone(),
                label,
            })
            .collect(),
        x: x.filter(|x| x.len() >= 2),
    }
}

fn factor_heading(key: &str) -> String {
    match key {
        // D-ITG's -c and ours: the payload, headers excluded.
        "size" => "Payload size (bytes)".into(),
        "point" => "Point".into(),
        "rate" => "Rate".into(),
        "protocol" => "Protocol".into(),
        other => other.replace('_', " "),
    }
}

/// A row's label from the factors that differ between the table's rows (the extra
/// point's label as it is, the others as `key value`); the point's id when none do.
fn row_label(point: &str, factors: &BTreeMap<String, String>, varying: &[&String]) -> String {
    let parts: Vec<String> = varying
        .iter()
        .filter_map(|k| {
            let v = factors.get(*k)?;
            Some(if k.as_str() == "point" {
                v.clone()
            } else {
                format!("{k} {v}")
            })
        })
        .collect();
    if parts.is_empty() {
        factors
            .get("point")
            .cloned()
            .unwrap_or_else(|| point.to_owned())
    } else {
        parts.join(", ")
    }
}

/// One CSV row per table row and metric, in the table's unit.
fn csv(tables: &[Table], results: &Results) -> String {
    let mut s = String::from(
        "table,row,point,metric,unit,ipv4_n,ipv4_mean,ipv4_ci_low,ipv4_ci_high,ipv6_n,ipv6_mean,ipv6_ci_low,ipv6_ci_high,rel_diff_pct,p,verdict\n",
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
                let _ = writeln!(
                    s,
                    "{},{},{},{},{},{},{},{},{},{}",
                    q(&t.title),
                    q(&r.label),
                    q(&r.point),
                    match (&c.router, c.flow) {
                        (Some(r), _) => format!("{r}.{}", c.metric.key()),
                        (None, 0) => c.metric.key().to_owned(),
                        (None, n) => format!("bg{n}.{}", c.metric.key()),
                    },
                    q(&c.unit.name),
                    side(row.and_then(|r| r.ipv4.as_ref())),
                    side(row.and_then(|r| r.ipv6.as_ref())),
                    o(cmp.and_then(|c| c.rel_diff_pct)),
                    o(cmp.and_then(|c| c.p)),
                    cmp.map_or("undefined", |c| render::verdict(c.verdict))
                );
            }
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sweep() -> (Vec<String>, BTreeMap<String, BTreeMap<String, String>>) {
        let mut order = Vec::new();
        let mut factors = BTreeMap::new();
        for proto in ["tcp", "udp"] {
            for size in ["64", "512"] {
                let id = format!("protocol={proto},size={size}");
                order.push(id.clone());
                factors.insert(
                    id,
                    BTreeMap::from([
                        ("protocol".to_owned(), proto.to_owned()),
                        ("size".to_owned(), size.to_owned()),
                    ]),
                );
            }
        }
        order.push("VoIP".into());
        factors.insert(
            "VoIP".into(),
            BTreeMap::from([
                ("group".to_owned(), "VoIP".to_owned()),
                ("point".to_owned(), "G.711.1".to_owned()),
            ]),
        );
        (order, factors)
    }

    fn spec(title: &str, select: &[(&str, &str)], metrics: &[(MetricKind, &str)]) -> TableSpec {
        TableSpec {
            title: title.into(),
            select: select
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect(),
            metrics: metrics
                .iter()
                .map(|(m, u)| Column {
                    metric: *m,
                    unit: Unit::parse(*m, u).unwrap(),
                    flow: 0,
                    router: None,
                })
                .collect(),
            paper: BTreeMap::new(),
        }
    }

    #[test]
    fn what_no_declared_table_shows_is_still_reported() {
        let (order, factors) = sweep();
        let specs = [spec(
            "Table 3. TCP",
            &[("protocol", "tcp")],
            &[(MetricKind::Throughput, "Mbps"), (MetricKind::Rtt, "ms")],
        )];
        let t = tables(&specs, &order, &factors, 0, &|_, _| true);
        let titles: Vec<&str> = t.iter().map(|t| t.title.as_str()).collect();
        assert_eq!(titles[0], "Table 3. TCP");
        assert_eq!(t[0].label_heading, "Payload size (bytes)");
        assert_eq!(t[0].x, Some(vec![64.0, 512.0]));
        // TCP's jitter and loss, and everything of UDP and VoIP, in "Also measured".
        for want in [
            "Also measured: TCP – Jitter (µs)",
            "Also measured: TCP – Packet loss (%)",
            "Also measured: UDP – Throughput (Mbit/s)",
            "Also measured: UDP – Delay (µs)",
            "Also measured: VoIP – Throughput (Mbit/s)",
        ] {
            assert!(titles.contains(&want), "{want}: {titles:#?}");
        }
        assert!(
            !titles.contains(&"Also measured: TCP – Delay (µs)"),
            "rtt shows the delay: {titles:#?}"
        );
        // Every (point, default metric) appears somewhere.
        for p in &order {
            for m in DEFAULT_METRICS {
                assert!(
                    t.iter().any(|t| t.rows.iter().any(|r| &r.point == p)
                        && t.metrics.iter().any(|c| c.metric.covers(m))),
                    "{p} {m:?}"
                );
            }
        }
    }

    #[test]
    fn rows_are_labelled_by_what_tells_them_apart() {
        let (order, factors) = sweep();
        let t = tables(
            &[spec("All", &[], &[(MetricKind::Loss, "%")])],
            &order,
            &factors,
            0,
            &|_, _| true,
        );
        let labels: Vec<&str> = t[0].rows.iter().map(|r| r.label.as_str()).collect();
        assert_eq!(
            labels,
            [
                "protocol tcp, size 64",
                "protocol tcp, size 512",
                "protocol udp, size 64",
                "protocol udp, size 512",
                "G.711.1"
            ]
        );
        assert_eq!(t[0].label_heading, "Point");
        assert!(t[0].x.is_none(), "no single numeric factor, no line chart");
        // One point alone is labelled by its name.
        let t = tables(
            &[spec("V", &[("group", "VoIP")], &[(MetricKind::Loss, "%")])],
            &order,
            &factors,
            0,
            &|_, _| true,
        );
        assert_eq!(t[0].rows[0].label, "G.711.1");
    }
}
