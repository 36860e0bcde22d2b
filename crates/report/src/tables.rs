//! The report's tables: the plan's declared tables over the points they hold, and one
//! table per metric and group for whatever they leave out, with the labels of their rows.

use std::collections::BTreeMap;

use lab::tables::{Column, TableSpec};
use results::metric::{self, Metric};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A table as reported: its spec (declared or made up), its points in plan order, and
/// what labels its rows.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Table {
    /// The plan's title, or one made up from the group and metric.
    pub title: String,
    /// `true` when the plan declared it.
    pub declared: bool,
    /// Its metrics, each in its unit.
    pub metrics: Vec<Column>,
    /// Heading of the first column: the factor that varies (`Payload size (bytes)`) or
    /// `Point`.
    pub label_heading: String,
    /// Its rows, one per point.
    pub rows: Vec<TableRow>,
    /// The paper's numbers by row label, one per metric (declared tables only).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub paper: BTreeMap<String, Vec<Option<f64>>>,
    /// What the reader should know about its figures, printed under it (the clocks of
    /// runs across hosts: see [`crate::clock`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    /// Built from a partial run: its points' runs done against planned, and which are
    /// missing (printed under its title).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub partial: Option<crate::missing::Partial>,
    /// The varying factor's numeric values when it is the only one (an x axis).
    #[serde(skip)]
    pub x: Option<Vec<f64>>,
}

/// A table's row: the point it shows and its label.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct TableRow {
    /// The point's id.
    pub point: String,
    /// What the first column shows.
    pub label: String,
}

/// The metrics every point is reported in, declared or not.
const DEFAULT_METRICS: [Metric; 4] = [
    metric::THROUGHPUT,
    metric::DELAY,
    metric::JITTER,
    metric::LOSS,
];

/// The plan's tables over the points they hold (`has`: whether a point has figures of
/// a flow); then, so nothing measured goes
/// unreported, one table per metric and group for every (point, metric) no declared
/// table shows (the point's `group`, else its swept protocol).
pub fn tables(
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
    let shown = |p: &str, m: &Metric, flow: u8| {
        specs.iter().any(|s| {
            s.holds(factors_of(p))
                && s.metrics
                    .iter()
                    .any(|c| c.flow == flow && c.router.is_none() && c.metric.covers(m))
        })
    };
    let declared = !out.is_empty();
    // Background flows beyond the eighth (the WebAudio thesis's many identical streams) have rows
    // in `--json` but no tables of their own unless the plan declares them.
    for (flow, m) in (0..=flows.min(8)).flat_map(|f| DEFAULT_METRICS.map(|m| (f, m))) {
        let mut loose: Vec<(String, Vec<&String>)> = Vec::new();
        for p in order.iter().filter(|p| !shown(p, &m, flow) && has(p, flow)) {
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
    // The factors that tell the rows apart: two values or more among the rows that
    // have them (a factor with one value, say the rate of every sweep point, tells
    // none of them apart).
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
            let mut values = points.iter().filter_map(|p| f(p).get(*k));
            let first = values.next();
            values.any(|v| Some(v) != first)
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
        notes: Vec::new(),
        partial: None,
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

#[cfg(test)]
mod tests {
    use super::*;
    use results::metric::Unit;

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

    fn spec(title: &str, select: &[(&str, &str)], metrics: &[(Metric, &str)]) -> TableSpec {
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
                    unit: Unit::parse(m, u).unwrap(),
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
            &[(metric::THROUGHPUT, "Mbps"), (metric::RTT, "ms")],
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
                        && t.metrics.iter().any(|c| c.metric.covers(&m))),
                    "{p} {m:?}"
                );
            }
        }
    }

    #[test]
    fn rows_are_labelled_by_what_tells_them_apart() {
        let (order, factors) = sweep();
        let t = tables(
            &[spec("All", &[], &[(metric::LOSS, "%")])],
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
            &[spec("V", &[("group", "VoIP")], &[(metric::LOSS, "%")])],
            &order,
            &factors,
            0,
            &|_, _| true,
        );
        assert_eq!(t[0].rows[0].label, "G.711.1");
    }
}
