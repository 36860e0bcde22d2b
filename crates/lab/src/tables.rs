//! Report tables a plan declares: a title in the paper's words, which points go in it,
//! and the metrics it shows in the paper's units.
//!
//! ```toml
//! [[tables]]
//! title = "Table 3. IPv4 and IPv6 TCP Throughput"
//! where = { protocol = "tcp" }     # points whose factors have these values
//! metrics = ["throughput:Mbit/s"]  # one or more "metric[:unit]"
//! ```
//!
//! `where` matches a point's factors: the swept values (`protocol`, `size`, …), and for
//! the extra `[[points]]` their `group` and `point` (the label). A table with several
//! metrics puts them side by side (Sharma 2013's Table 2: throughput and loss by rate).
//!
//! A metric of a point's background flow is `bgN.metric` (`bg1.loss`, the first
//! background flow's). A table may carry the paper's own numbers, by row label, one per
//! metric in the table's units (`"-"` where the paper has none); the report prints
//! them beside the measured ones:
//!
//! ```toml
//! paper = { "8 Mbps" = [7.98, 0, 0.205], "9 Mbps" = [8.89, 0.99, 2.641] }
//! ```
//!
//! The metrics, their titles, definitions and stored units (what JSON and CSV carry)
//! are the vocabulary's ([`results::metric`]): `throughput`, `rtt` (the mean round
//! trip), `rtt_median`, `owd`, `delay`, `jitter`, `loss`, … A plan naming a metric the
//! vocabulary lacks is refused with the list of those it has.

use std::collections::BTreeMap;

pub use results::metric::{Metric, Unit, Vocabulary};
use serde::{Deserialize, Serialize};

/// A metric in a table, in its unit.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Column {
    /// What it shows.
    pub metric: Metric,
    /// In what unit.
    pub unit: Unit,
    /// Of which flow: 0 the measured one, N the point's Nth background flow.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub flow: u8,
    /// Of which lab router, for a router's figure (`r1.cpu_per_frame`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub router: Option<String>,
}

fn is_zero(v: &u8) -> bool {
    *v == 0
}

impl Column {
    /// `Throughput (Mbit/s)`, `bg1: Packet loss (%)`, `r1: CPU time per frame (ns)`.
    pub fn heading(&self) -> String {
        if let Some(r) = &self.router {
            format!("{r}: {} ({})", self.metric.title, self.unit)
        } else if self.flow == 0 {
            format!("{} ({})", self.metric.title, self.unit)
        } else {
            format!("bg{}: {} ({})", self.flow, self.metric.title, self.unit)
        }
    }
}

/// A table a plan declares.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct TableSpec {
    /// As printed above it: `Table 3. IPv4 and IPv6 TCP Throughput`.
    pub title: String,
    /// The points it holds: every factor named here has this value.
    #[serde(rename = "where")]
    pub select: BTreeMap<String, String>,
    /// Its metrics, side by side.
    pub metrics: Vec<Column>,
    /// The paper's numbers by row label, one per metric in its unit (`None`: the paper
    /// has none).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub paper: BTreeMap<String, Vec<Option<f64>>>,
}

impl TableSpec {
    /// Whether a point (by its factors) belongs in the table.
    pub fn holds(&self, factors: &BTreeMap<String, String>) -> bool {
        self.select
            .iter()
            .all(|(k, v)| factors.get(k).is_some_and(|f| f == v))
    }
}

/// Why a `[[tables]]` entry cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TableError {
    /// A key the table does not know.
    #[error("tables: unknown key '{0}' (title, where, metrics, paper)")]
    UnknownKey(String),
    /// `paper` is not rows of numbers, one per metric.
    #[error("tables: paper is {{ \"row label\" = [one number per metric, or \"-\"] }}: {0}")]
    Paper(String),
    /// No title, or not a string.
    #[error("tables: every table needs a title (a string)")]
    Title,
    /// `where` is not a table of scalars.
    #[error("tables: where is a table of factor = value, e.g. where = {{ protocol = \"tcp\" }}")]
    Where,
    /// `metrics` missing, empty or not strings.
    #[error(
        "tables: metrics is a list of \"metric[:unit]\", e.g. [\"throughput:Mbit/s\", \"loss\"]"
    )]
    Metrics,
    /// A metric the vocabulary does not have, or one named without the flow or
    /// router it needs.
    #[error("tables: no metric '{name}' ({known}; bgN.METRIC for background flow N; {routers})")]
    Metric {
        /// As the plan wrote it.
        name: String,
        /// The vocabulary's metrics of a flow.
        known: String,
        /// Its metrics of a lab router, `ROUTER.KEY`.
        routers: String,
    },
    /// A unit that does not fit the metric.
    #[error("tables: '{unit}' is not a unit of {metric} ({choices})")]
    Unit {
        /// The metric.
        metric: &'static str,
        /// The unit asked for.
        unit: String,
        /// What it takes.
        choices: &'static str,
    },
}

impl TableError {
    fn metric(name: &str, vocabulary: &Vocabulary) -> Self {
        let keys = |router: bool| {
            vocabulary
                .metrics()
                .iter()
                .filter(|m| m.router_figure().is_some() == router)
                .map(|m| {
                    if router {
                        format!("ROUTER.{}", m.key)
                    } else {
                        m.key.to_owned()
                    }
                })
                .collect::<Vec<_>>()
                .join(", ")
        };
        Self::Metric {
            name: name.to_owned(),
            known: keys(false),
            routers: keys(true),
        }
    }
}

/// One `"metric[:unit]"` of a table: `loss`, `bg2.throughput:Mbps`, `r1.cpu_per_frame`.
fn column(text: &str, vocabulary: &Vocabulary) -> Result<Column, TableError> {
    let (name, unit) = match text.split_once(':') {
        Some((n, u)) => (n.trim(), Some(u.trim())),
        None => (text.trim(), None),
    };
    let unknown = || TableError::metric(name, vocabulary);
    let (prefix, key) = match name.split_once('.') {
        Some((p, k)) => (Some(p), k),
        None => (None, name),
    };
    let metric = vocabulary.get(key).ok_or_else(unknown)?;
    let is_router = metric.router_figure().is_some();
    let (flow, router) = match prefix {
        None if !is_router => (0, None),
        Some(p) if !is_router => match p.strip_prefix("bg").and_then(|n| n.parse::<u8>().ok()) {
            Some(n) if (1..=64).contains(&n) => (n, None),
            _ => return Err(unknown()),
        },
        Some(r)
            if !r.is_empty()
                && r.len() <= 12
                && r.bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-') =>
        {
            (0, Some(r.to_owned()))
        }
        _ => return Err(unknown()),
    };
    let unit = match unit {
        None => metric.default_unit(),
        Some(u) => Unit::parse(&metric, u).ok_or_else(|| TableError::Unit {
            metric: metric.key,
            unit: u.into(),
            choices: metric.units.choices,
        })?,
    };
    Ok(Column {
        metric,
        unit,
        flow,
        router,
    })
}

/// One `[[tables]]` entry, checked against the metrics of `vocabulary`.
pub fn parse_table(table: &toml::Table, vocabulary: &Vocabulary) -> Result<TableSpec, TableError> {
    if let Some(k) = table
        .keys()
        .find(|k| !matches!(k.as_str(), "title" | "where" | "metrics" | "paper"))
    {
        return Err(TableError::UnknownKey(k.clone()));
    }
    let title = table
        .get("title")
        .and_then(toml::Value::as_str)
        .filter(|t| !t.trim().is_empty())
        .ok_or(TableError::Title)?
        .to_owned();
    let mut select = BTreeMap::new();
    if let Some(w) = table.get("where") {
        let w = w.as_table().ok_or(TableError::Where)?;
        for (k, v) in w {
            let v = match v {
                toml::Value::String(s) => s.clone(),
                toml::Value::Integer(i) => i.to_string(),
                toml::Value::Float(f) => f.to_string(),
                toml::Value::Boolean(b) => b.to_string(),
                _ => return Err(TableError::Where),
            };
            select.insert(k.clone(), v);
        }
    }
    let list = table
        .get("metrics")
        .and_then(toml::Value::as_array)
        .filter(|l| !l.is_empty())
        .ok_or(TableError::Metrics)?;
    let metrics = list
        .iter()
        .map(|item| column(item.as_str().ok_or(TableError::Metrics)?, vocabulary))
        .collect::<Result<Vec<_>, _>>()?;
    let mut paper = BTreeMap::new();
    if let Some(p) = table.get("paper") {
        let p = p
            .as_table()
            .ok_or_else(|| TableError::Paper("not a table".into()))?;
        for (row, values) in p {
            let values = values
                .as_array()
                .filter(|v| v.len() == metrics.len())
                .ok_or_else(|| {
                    TableError::Paper(format!("'{row}' needs {} values", metrics.len()))
                })?;
            let values = values
                .iter()
                .map(|v| match v {
                    toml::Value::Integer(i) => Ok(Some(*i as f64)),
                    toml::Value::Float(f) if f.is_finite() => Ok(Some(*f)),
                    toml::Value::String(s) if s == "-" => Ok(None),
                    _ => Err(TableError::Paper(format!(
                        "'{row}': {v} is not a number or \"-\""
                    ))),
                })
                .collect::<Result<Vec<_>, _>>()?;
            paper.insert(row.clone(), values);
        }
    }
    Ok(TableSpec {
        title,
        select,
        metrics,
        paper,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::Background;
    use crate::testdata::report;
    use results::metric;
    use results::send::SendReport;

    fn table(text: &str) -> Result<TableSpec, TableError> {
        parse_table(
            &toml::from_str::<toml::Table>(text).unwrap(),
            &Vocabulary::standard(),
        )
    }

    #[test]
    fn a_table_names_its_points_metrics_and_units() {
        let t = table(
            r#"title = "Table 2. Result of Packet Rate"
where = { group = "Packet rate", size = 64 }
metrics = ["throughput:Mbps", "loss"]"#,
        )
        .unwrap();
        assert_eq!(t.metrics.len(), 2);
        assert_eq!(t.metrics[0].heading(), "Throughput (Mbit/s)");
        assert_eq!(t.metrics[0].unit.scale, 1e6);
        assert_eq!(t.metrics[1].heading(), "Packet loss (%)");
        let mut f = BTreeMap::from([
            ("group".to_owned(), "Packet rate".to_owned()),
            ("size".to_owned(), "64".to_owned()),
        ]);
        assert!(t.holds(&f));
        f.insert("size".into(), "128".into());
        assert!(!t.holds(&f));
        f.remove("size");
        assert!(!t.holds(&f), "a factor the point lacks does not match");
        assert!(
            table("title = \"T\"\nmetrics = [\"throughput:MBps\"]").is_err(),
            "megabytes are not megabits"
        );
        let t = table("title = \"T\"\nmetrics = [\"jitter: ms\", \"rtt\"]").unwrap();
        assert_eq!(
            (t.metrics[0].unit.scale, t.metrics[1].unit.name.as_str()),
            (1e6, "µs")
        );
        assert!(t.holds(&BTreeMap::new()), "no where: every point");
    }

    #[test]
    fn mistakes_say_what_a_table_takes() {
        for (text, want) in [
            ("metrics = [\"loss\"]", "needs a title"),
            ("title = \"T\"", "metrics is a list"),
            ("title = \"T\"\nmetrics = []", "metrics is a list"),
            ("title = \"T\"\nmetrics = [\"speed\"]", "no metric 'speed'"),
            (
                "title = \"T\"\nmetrics = [\"rtt:Mbit/s\"]",
                "'Mbit/s' is not a unit of rtt (ns, µs, ms, s)",
            ),
            (
                "title = \"T\"\nmetrics = [\"loss\"]\nwhere = 3",
                "where is a table",
            ),
            (
                "title = \"T\"\nmetrics = [\"loss\"]\ncolour = 1",
                "unknown key 'colour'",
            ),
        ] {
            let e = table(text).unwrap_err().to_string();
            assert!(e.contains(want), "{text}: {e}");
        }
    }

    #[test]
    fn background_columns_and_the_papers_numbers() {
        let t = table(
            "title = \"T\"\nmetrics = [\"loss\", \"bg2.throughput:Mbps\"]\npaper = { \"8 Mbps\" = [0, 7.98], \"9 Mbps\" = [0.99, \"-\"] }",
        )
        .unwrap();
        assert_eq!((t.metrics[0].flow, t.metrics[1].flow), (0, 2));
        assert_eq!(t.metrics[1].heading(), "bg2: Throughput (Mbit/s)");
        assert_eq!(t.paper["8 Mbps"], vec![Some(0.0), Some(7.98)]);
        assert_eq!(t.paper["9 Mbps"], vec![Some(0.99), None]);
        let mut record = crate::store::RunRecord {
            format_version: 1,
            run: crate::plan::Run {
                id: "r".into(),
                point: 0,
                family: 4,
                repetition: 1,
            },
            point: "beside".into(),
            argv: Vec::new(),
            started_unix_ns: 0,
            exit_code: 0,
            stderr: String::new(),
            report: Some(report(
                serde_json::json!({"flows": [{"received": {"bitrate_bps": 1.0}}]}),
            )),
            attempts: 1,
            background: vec![
                Background::Report(Box::new(report(
                    serde_json::json!({"flows": [{"received": {"bitrate_bps": 2.0}}]}),
                ))),
                Background::Report(Box::new(report(
                    serde_json::json!({"flows": [{"received": {"bitrate_bps": 3.0}}]}),
                ))),
            ],
            routers: BTreeMap::from([(
                "r1".to_owned(),
                router::stats::RouterStats {
                    cpu: router::stats::CpuStats {
                        cpu_ns_per_frame: Some(812.5),
                        ..Default::default()
                    },
                    ..Default::default()
                },
            )]),
            router_stalls: BTreeMap::new(),
        };
        assert_eq!(t.metrics[1].of(&record), Some(3.0));
        let cpu = table("title = \"T\"\nmetrics = [\"r1.cpu_per_frame:ns\"]").unwrap();
        assert_eq!(cpu.metrics[0].router.as_deref(), Some("r1"));
        assert_eq!(cpu.metrics[0].heading(), "r1: CPU time per frame (ns)");
        assert_eq!(cpu.metrics[0].of(&record), Some(812.5));
        let q = table("title = \"T\"\nmetrics = [\"r1.qos_per_frame\"]").unwrap();
        assert_eq!(
            (q.metrics[0].metric, q.metrics[0].unit.name.as_str()),
            (metric::QOS_PER_FRAME, "µs")
        );
        assert_eq!(q.metrics[0].of(&record), None, "no policy, no figure");
        record.background.pop();
        assert_eq!(t.metrics[1].of(&record), None);
        for (text, want) in [
            ("metrics = [\"bg0.loss\"]", "no metric 'bg0.loss'"),
            ("metrics = [\"bgx.loss\"]", "no metric"),
            ("metrics = [\"cpu_per_frame\"]", "ROUTER.cpu_per_frame"),
            ("metrics = [\"r1.loss\"]", "no metric 'r1.loss'"),
            (
                "metrics = [\"loss\"]\npaper = { a = [1, 2] }",
                "'a' needs 1 values",
            ),
            (
                "metrics = [\"loss\"]\npaper = { a = [\"x\"] }",
                "not a number",
            ),
        ] {
            let e = table(&format!("title = \"T\"\n{text}"))
                .unwrap_err()
                .to_string();
            assert!(e.contains(want), "{text}: {e}");
        }
    }

    #[test]
    fn values_come_from_the_meter_the_flow_used() {
        let rtt = report(serde_json::json!({"flows": [{
            "spec": {"meter": "rtt"},
            "received": {"bitrate_bps": 1e6, "delay": {"mean_ns": 7.0},
                         "jitter": {"ditg_ns": 1.0}, "loss": {"loss_pct": 0.5}},
            "rtt": {"delay": {"mean_ns": 20.0, "p50_ns": 18}, "jitter": {"ditg_ns": 3.0}}
        }]}));
        let get = |m: Metric, r: &SendReport| m.of(r);
        assert_eq!(get(metric::DELAY, &rtt), Some(20.0));
        assert_eq!(get(metric::JITTER, &rtt), Some(3.0));
        assert_eq!(get(metric::RTT, &rtt), Some(20.0));
        assert_eq!(get(metric::OWD, &rtt), Some(7.0));
        assert_eq!(get(metric::LOSS, &rtt), Some(0.5));
        assert_eq!(get(metric::THROUGHPUT, &rtt), Some(1e6));
        let owd = report(serde_json::json!({"flows": [{
            "spec": {"meter": "owd"},
            "received": {"bitrate_bps": 1e6, "delay": {"mean_ns": 7.0}, "jitter": {"ditg_ns": 1.0}},
            "rtt": null
        }, {}], "sum": {"received": {"bitrate_bps": 3e6}}}));
        assert_eq!(get(metric::DELAY, &owd), Some(7.0));
        assert_eq!(get(metric::JITTER, &owd), Some(1.0));
        assert_eq!(get(metric::RTT, &owd), None, "no round trip without echoes");
        assert_eq!(
            get(metric::THROUGHPUT, &owd),
            Some(3e6),
            "every flow counts"
        );
        // Frames on the link: 10 datagrams of 100 B payload, + UDP 8 + IP + Ethernet 14.
        let udp = |dest: &str| {
            report(serde_json::json!({"dest": dest, "flows": [{
                "spec": {"protocol": "udp"},
                "received": {"bitrate_bps": 8000.0, "bytes": 1000, "packets": 10,
                             "jitter": {"rfc3550_ns": 5.0}}
            }]}))
        };
        assert_eq!(
            get(metric::FRAME_THROUGHPUT, &udp("[::1]:9")),
            Some(12_960.0)
        );
        assert_eq!(
            get(metric::FRAME_THROUGHPUT, &udp("127.0.0.1:9")),
            Some(11_360.0)
        );
        assert_eq!(get(metric::JITTER_RFC3550, &udp("[::1]:9")), Some(5.0));
        let tcp = report(
            serde_json::json!({"dest": "[::1]:9", "flows": [{"spec": {"protocol": "tcp"},
            "received": {"bitrate_bps": 1.0, "bytes": 1, "packets": 1}}]}),
        );
        assert_eq!(
            get(metric::FRAME_THROUGHPUT, &tcp),
            None,
            "TCP has no datagrams"
        );
        assert_eq!(
            get(metric::RTT_MEDIAN, &rtt),
            Some(18.0),
            "the median, not the mean"
        );
        assert_eq!(get(metric::RTT_MEDIAN, &owd), None);
        assert!(metric::RTT.covers(&metric::DELAY));
        assert!(!metric::JITTER.covers(&metric::DELAY));
        assert!(!metric::RTT_MEDIAN.covers(&metric::RTT));
    }
}
