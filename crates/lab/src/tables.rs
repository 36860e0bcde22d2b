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
//! metrics puts them side by side (seed 003's Table 2: throughput and loss by rate).
//!
//! The metrics and their stored units (what JSON and CSV carry):
//! - `throughput`: the receiver's payload bit rate, bit/s (every flow of a run together);
//! - `rtt`: mean round-trip time of the echoes (`--meter rtt`), ns;
//! - `owd`: mean one-way delay at the receiver, ns;
//! - `delay`: `rtt` for a flow metered round trip, else `owd`, ns;
//! - `jitter`: D-ITG's mean |ΔD| of the same delays, ns;
//! - `loss`: the receiver's lost share of the sent packets, %.

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};

/// What a table shows, read from each run's report.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum MetricKind {
    /// Receiver's payload bit rate, bit/s.
    Throughput,
    /// Mean round-trip time, ns.
    Rtt,
    /// Mean one-way delay, ns.
    Owd,
    /// `Rtt` when the flow is metered round trip, else `Owd`, ns.
    Delay,
    /// D-ITG's mean |ΔD|, ns.
    Jitter,
    /// Lost packets, % of sent.
    Loss,
}

impl MetricKind {
    /// Every metric, in the order a report lists them.
    pub const ALL: [Self; 6] = [
        Self::Throughput,
        Self::Rtt,
        Self::Owd,
        Self::Delay,
        Self::Jitter,
        Self::Loss,
    ];

    /// Its name in plans, JSON and CSV.
    pub fn key(self) -> &'static str {
        match self {
            Self::Throughput => "throughput",
            Self::Rtt => "rtt",
            Self::Owd => "owd",
            Self::Delay => "delay",
            Self::Jitter => "jitter",
            Self::Loss => "loss",
        }
    }

    /// Its name in a table heading.
    pub fn title(self) -> &'static str {
        match self {
            Self::Throughput => "Throughput",
            Self::Rtt => "Round trip time",
            Self::Owd => "One-way delay",
            Self::Delay => "Delay",
            Self::Jitter => "Jitter",
            Self::Loss => "Packet loss",
        }
    }

    /// The unit of the stored values.
    pub fn base_unit(self) -> &'static str {
        match self {
            Self::Throughput => "bit/s",
            Self::Rtt | Self::Owd | Self::Delay | Self::Jitter => "ns",
            Self::Loss => "%",
        }
    }

    /// The unit a table uses unless the plan names one.
    pub fn default_unit(self) -> Unit {
        match self {
            Self::Throughput => Unit::parse(self, "Mbit/s"),
            Self::Rtt | Self::Owd | Self::Delay | Self::Jitter => Unit::parse(self, "µs"),
            Self::Loss => Unit::parse(self, "%"),
        }
        .unwrap_or(Unit {
            name: String::new(),
            scale: 1.0,
        })
    }

    /// How it is measured, for a table's caption.
    pub fn definition(self) -> &'static str {
        match self {
            Self::Throughput => "the receiver's payload bit rate, first to last arrival",
            Self::Rtt => "mean round trip of the echoes, the receiver's hold time taken out",
            Self::Owd => "mean one-way delay, receiver clock minus sender clock (RFC 7679)",
            Self::Delay => "mean round trip for a flow metered round trip, else mean one-way delay",
            Self::Jitter => {
                "D-ITG's mean |D(i) − D(i−1)| of consecutive delays (not RFC 3550's EWMA)"
            }
            Self::Loss => "packets the receiver never saw, % of those sent (RFC 7680)",
        }
    }

    /// Its value in a run's `dualperf send --json` report (docs/output.md), in the
    /// stored unit; `None` when the run has none.
    ///
    /// Throughput is the sum over every flow of the run (`sum`, as iperf3's SUM) when
    /// it has several, so `--parallel` runs count whole; the other metrics are the
    /// first flow's. The round-trip figures count only for a flow metered round trip
    /// and the one-way ones only from the receiver: never one for the other.
    pub fn of(self, report: &serde_json::Value) -> Option<f64> {
        let flow = &report["flows"][0];
        let summary = if flow["spec"]["meter"] == "rtt" {
            &flow["rtt"]
        } else {
            &flow["received"]
        };
        match self {
            // Receiver's payload bits over its first-to-last arrival span.
            Self::Throughput => match report["flows"].as_array().map(Vec::len) {
                Some(n) if n > 1 => report["sum"]["received"]["bitrate_bps"].as_f64(),
                _ => flow["received"]["bitrate_bps"].as_f64(),
            },
            // Mean of the per-packet round trips of the echoes (D-ITG's -m rttm).
            Self::Rtt => flow["rtt"]["delay"]["mean_ns"].as_f64(),
            // Mean one-way delay, RFC 7679's singleton per packet.
            Self::Owd => flow["received"]["delay"]["mean_ns"].as_f64(),
            Self::Delay => summary["delay"]["mean_ns"].as_f64(),
            // D-ITG's jitter: mean |D(i) − D(i−1)| (ITGDec).
            Self::Jitter => summary["jitter"]["ditg_ns"].as_f64(),
            // Lost share of the sent packets, RFC 7680 (the sender's count is the total).
            Self::Loss => flow["received"]["loss"]["loss_pct"].as_f64(),
        }
    }

    /// Whether a table of this metric shows what `other` shows (delay is rtt or owd).
    pub fn covers(self, other: Self) -> bool {
        self == other
            || matches!(
                (self, other),
                (Self::Rtt | Self::Owd, Self::Delay) | (Self::Delay, Self::Rtt | Self::Owd)
            )
    }

    fn from_key(key: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|m| m.key() == key)
    }
}

/// A display unit: its name and what a stored value is divided by.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Unit {
    /// As printed: `Mbit/s`, `ms`, `%`.
    pub name: String,
    /// Stored value / scale = displayed value.
    pub scale: f64,
}

impl Unit {
    /// A unit for a metric; the papers' spellings (`Mbps`, `Kbps`) are taken too and
    /// printed as the SI ones.
    pub fn parse(metric: MetricKind, text: &str) -> Option<Self> {
        let (name, scale) = match metric {
            // Case matters: "MBps" would be megabytes, a factor of 8 off.
            MetricKind::Throughput => match text {
                "bit/s" | "bps" => ("bit/s", 1.0),
                "kbit/s" | "kbps" | "Kbps" => ("kbit/s", 1e3),
                "Mbit/s" | "Mbps" | "mbps" => ("Mbit/s", 1e6),
                "Gbit/s" | "Gbps" | "gbps" => ("Gbit/s", 1e9),
                _ => return None,
            },
            MetricKind::Rtt | MetricKind::Owd | MetricKind::Delay | MetricKind::Jitter => {
                match text {
                    "ns" => ("ns", 1.0),
                    "µs" | "us" => ("µs", 1e3),
                    "ms" => ("ms", 1e6),
                    "s" => ("s", 1e9),
                    _ => return None,
                }
            }
            MetricKind::Loss => match text {
                "%" => ("%", 1.0),
                _ => return None,
            },
        };
        Some(Self {
            name: name.to_owned(),
            scale,
        })
    }
}

impl fmt::Display for Unit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name)
    }
}

/// A metric in a table, in its unit.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Column {
    /// What it shows.
    pub metric: MetricKind,
    /// In what unit.
    pub unit: Unit,
}

impl Column {
    /// `Throughput (Mbit/s)`.
    pub fn heading(&self) -> String {
        format!("{} ({})", self.metric.title(), self.unit)
    }
}

/// A table a plan declares.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TableSpec {
    /// As printed above it: `Table 3. IPv4 and IPv6 TCP Throughput`.
    pub title: String,
    /// The points it holds: every factor named here has this value.
    #[serde(rename = "where")]
    pub select: BTreeMap<String, String>,
    /// Its metrics, side by side.
    pub metrics: Vec<Column>,
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
    #[error("tables: unknown key '{0}' (title, where, metrics)")]
    UnknownKey(String),
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
    /// A metric no report has.
    #[error("tables: no metric '{0}' (throughput, rtt, owd, delay, jitter, loss)")]
    Metric(String),
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

/// One `[[tables]]` entry, checked.
pub fn parse_table(table: &toml::Table) -> Result<TableSpec, TableError> {
    if let Some(k) = table
        .keys()
        .find(|k| !matches!(k.as_str(), "title" | "where" | "metrics"))
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
    let mut metrics = Vec::new();
    for item in list {
        let text = item.as_str().ok_or(TableError::Metrics)?;
        let (name, unit) = match text.split_once(':') {
            Some((n, u)) => (n.trim(), Some(u.trim())),
            None => (text.trim(), None),
        };
        let metric = MetricKind::from_key(name).ok_or_else(|| TableError::Metric(name.into()))?;
        let unit = match unit {
            None => metric.default_unit(),
            Some(u) => Unit::parse(metric, u).ok_or_else(|| TableError::Unit {
                metric: metric.key(),
                unit: u.into(),
                choices: match metric {
                    MetricKind::Throughput => "bit/s, kbit/s, Mbit/s, Gbit/s; Kbps, Mbps",
                    MetricKind::Loss => "%",
                    _ => "ns, µs, ms, s",
                },
            })?,
        };
        metrics.push(Column { metric, unit });
    }
    Ok(TableSpec {
        title,
        select,
        metrics,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(text: &str) -> Result<TableSpec, TableError> {
        parse_table(&toml::from_str::<toml::Table>(text).unwrap())
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
    fn values_come_from_the_meter_the_flow_used() {
        let rtt = serde_json::json!({"flows": [{
            "spec": {"meter": "rtt"},
            "received": {"bitrate_bps": 1e6, "delay": {"mean_ns": 7.0},
                         "jitter": {"ditg_ns": 1.0}, "loss": {"loss_pct": 0.5}},
            "rtt": {"delay": {"mean_ns": 20.0}, "jitter": {"ditg_ns": 3.0}}
        }]});
        let get = |m: MetricKind, r: &serde_json::Value| m.of(r);
        assert_eq!(get(MetricKind::Delay, &rtt), Some(20.0));
        assert_eq!(get(MetricKind::Jitter, &rtt), Some(3.0));
        assert_eq!(get(MetricKind::Rtt, &rtt), Some(20.0));
        assert_eq!(get(MetricKind::Owd, &rtt), Some(7.0));
        assert_eq!(get(MetricKind::Loss, &rtt), Some(0.5));
        assert_eq!(get(MetricKind::Throughput, &rtt), Some(1e6));
        let owd = serde_json::json!({"flows": [{
            "spec": {"meter": "owd"},
            "received": {"bitrate_bps": 1e6, "delay": {"mean_ns": 7.0}, "jitter": {"ditg_ns": 1.0}},
            "rtt": null
        }, {}], "sum": {"received": {"bitrate_bps": 3e6}}});
        assert_eq!(get(MetricKind::Delay, &owd), Some(7.0));
        assert_eq!(get(MetricKind::Jitter, &owd), Some(1.0));
        assert_eq!(
            get(MetricKind::Rtt, &owd),
            None,
            "no round trip without echoes"
        );
        assert_eq!(
            get(MetricKind::Throughput, &owd),
            Some(3e6),
            "every flow counts"
        );
        assert!(MetricKind::Rtt.covers(MetricKind::Delay));
        assert!(!MetricKind::Jitter.covers(MetricKind::Delay));
    }
}
