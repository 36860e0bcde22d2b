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
//! The metrics and their stored units (what JSON and CSV carry):
//! - `throughput`: the receiver's payload bit rate, bit/s (every flow of a run together);
//! - `rtt`: mean round-trip time of the echoes (`--meter rtt`), ns;
//! - `owd`: mean one-way delay at the receiver, ns;
//! - `delay`: `rtt` for a flow metered round trip, else `owd`, ns;
//! - `jitter`: D-ITG's mean |ΔD| of the same delays, ns;
//! - `loss`: the receiver's lost share of the sent packets, %.

use std::collections::BTreeMap;
use std::fmt;

use results::send::SendReport;
use serde::{Deserialize, Serialize};
use wire::control::{Meter, Protocol};

/// What a table shows, read from each run's report.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
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
    /// RFC 3550's interarrival jitter J after the last packet (iperf's), ns.
    #[serde(rename = "jitter_rfc3550")]
    JitterRfc3550,
    /// The received UDP flow's rate in Ethernet frames, bit/s.
    #[serde(rename = "frame_throughput")]
    FrameThroughput,
    /// A lab router's CPU time per frame it received over the run, ns (`r1.cpu_per_frame`).
    #[serde(rename = "cpu_per_frame")]
    CpuPerFrame,
    /// A lab router's time inside its service policies per frame, ns (`r1.qos_per_frame`).
    #[serde(rename = "qos_per_frame")]
    QosPerFrame,
}

impl MetricKind {
    /// Every metric, in the order a report lists them.
    pub const ALL: [Self; 10] = [
        Self::Throughput,
        Self::Rtt,
        Self::Owd,
        Self::Delay,
        Self::Jitter,
        Self::Loss,
        Self::JitterRfc3550,
        Self::FrameThroughput,
        Self::CpuPerFrame,
        Self::QosPerFrame,
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
            Self::JitterRfc3550 => "jitter_rfc3550",
            Self::FrameThroughput => "frame_throughput",
            Self::CpuPerFrame => "cpu_per_frame",
            Self::QosPerFrame => "qos_per_frame",
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
            Self::JitterRfc3550 => "Jitter (RFC 3550)",
            Self::FrameThroughput => "Frame throughput",
            Self::CpuPerFrame => "CPU time per frame",
            Self::QosPerFrame => "QoS time per frame",
        }
    }

    /// The unit of the stored values.
    pub fn base_unit(self) -> &'static str {
        match self {
            Self::Throughput | Self::FrameThroughput => "bit/s",
            Self::Loss => "%",
            _ => "ns",
        }
    }

    /// The unit a table uses unless the plan names one.
    pub fn default_unit(self) -> Unit {
        match self {
            Self::Throughput | Self::FrameThroughput => Unit::parse(self, "Mbit/s"),
            Self::Loss => Unit::parse(self, "%"),
            _ => Unit::parse(self, "µs"),
        }
        .unwrap_or(Unit {
            name: String::new(),
            scale: 1.0,
        })
    }

    /// Whether its values can never be negative: everything but a one-way delay, which
    /// between two hosts carries the clock offset and may be below zero. Reports give
    /// such metrics an interval that cannot leave their range.
    pub fn non_negative(self) -> bool {
        !matches!(self, Self::Owd | Self::Delay)
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
            Self::JitterRfc3550 => {
                "RFC 3550 §6.4.1 interarrival jitter J (gain 1/16) after the last packet, as iperf reports it"
            }
            Self::FrameThroughput => {
                "the UDP throughput counting each datagram's UDP, IP (20 or 40 B) and Ethernet (14 B) headers, as a capture on the link counts it"
            }
            Self::CpuPerFrame => {
                "the router thread's CPU time (CLOCK_THREAD_CPUTIME_ID) in loop turns that handled frames, over the frames it received: its whole cost per frame, kernel receive and send included, as the WebAudio thesis (RSVP with flow labels) measures a router's processing load"
            }
            Self::QosPerFrame => {
                "the router's time inside its service policy (classification with reservation lookup, marking, policing, queueing) per frame it offered the policy, by the monotonic clock"
            }
        }
    }

    /// Its value in a run's `dualperf send --json` report (docs/output.md), in the
    /// stored unit; `None` when the run has none.
    ///
    /// Throughput is the sum over every flow of the run (`sum`, as iperf3's SUM) when
    /// it has several, so `--parallel` runs count whole; the other metrics are the
    /// first flow's. The round-trip figures count only for a flow metered round trip
    /// and the one-way ones only from the receiver: never one for the other.
    pub fn of(self, report: &SendReport) -> Option<f64> {
        let flow = report.flows.first()?;
        let summary = if flow.spec.meter == Meter::Rtt {
            flow.rtt.as_ref()
        } else {
            flow.received.as_ref()
        };
        let received = flow.received.as_ref();
        match self {
            // Receiver's payload bits over its first-to-last arrival span.
            Self::Throughput => {
                if report.flows.len() > 1 {
                    report.sum.received.as_ref()?.bitrate_bps
                } else {
                    received?.bitrate_bps
                }
            }
            // Mean of the per-packet round trips of the echoes (D-ITG's -m rttm).
            Self::Rtt => Some(flow.rtt.as_ref()?.delay.as_ref()?.mean_ns),
            // Mean one-way delay, RFC 7679's singleton per packet.
            Self::Owd => Some(received?.delay.as_ref()?.mean_ns),
            Self::Delay => Some(summary?.delay.as_ref()?.mean_ns),
            // D-ITG's jitter: mean |D(i) − D(i−1)| (ITGDec).
            Self::Jitter => summary?.jitter.ditg_ns,
            // Lost share of the sent packets, RFC 7680 (the sender's count is the total).
            Self::Loss => received?.loss.loss_pct,
            // RFC 3550 §6.4.1's J (EWMA gain 1/16) after the last packet, as iperf reports.
            Self::JitterRfc3550 => summary?.jitter.rfc3550_ns,
            // A router's figure: read from the run's router counters ([`Column::of`]).
            Self::CpuPerFrame | Self::QosPerFrame => None,
            // The H.323 study's (Bouras et al.) data-link rate: payload rate × (payload + headers) / payload,
            // headers UDP 8 + IPv4 20 or IPv6 40 + Ethernet 14 (no FCS, as a capture).
            Self::FrameThroughput => {
                if flow.spec.protocol != Protocol::Udp {
                    return None;
                }
                let r = received?;
                let (bytes, packets) = (r.bytes as f64, r.packets as f64);
                let ip = if report.dest.is_ipv6() { 40.0 } else { 20.0 };
                (bytes > 0.0).then(|| {
                    r.bitrate_bps
                        .map(|b| b * (bytes + packets * (8.0 + ip + 14.0)) / bytes)
                })?
            }
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
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
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
            MetricKind::Throughput | MetricKind::FrameThroughput => match text {
                "bit/s" | "bps" => ("bit/s", 1.0),
                "kbit/s" | "kbps" | "Kbps" => ("kbit/s", 1e3),
                "Mbit/s" | "Mbps" | "mbps" => ("Mbit/s", 1e6),
                "Gbit/s" | "Gbps" | "gbps" => ("Gbit/s", 1e9),
                _ => return None,
            },
            MetricKind::Loss => match text {
                "%" => ("%", 1.0),
                _ => return None,
            },
            _ => match text {
                "ns" => ("ns", 1.0),
                "µs" | "us" => ("µs", 1e3),
                "ms" => ("ms", 1e6),
                "s" => ("s", 1e9),
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
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Column {
    /// What it shows.
    pub metric: MetricKind,
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
            format!("{r}: {} ({})", self.metric.title(), self.unit)
        } else if self.flow == 0 {
            format!("{} ({})", self.metric.title(), self.unit)
        } else {
            format!("bg{}: {} ({})", self.flow, self.metric.title(), self.unit)
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
    /// A metric no report has.
    #[error("tables: no metric '{0}' (throughput, frame_throughput, rtt, owd, delay, jitter, jitter_rfc3550, loss; bgN.METRIC for background flow N; ROUTER.cpu_per_frame, ROUTER.qos_per_frame)")]
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
    let mut metrics = Vec::new();
    for item in list {
        let text = item.as_str().ok_or(TableError::Metrics)?;
        let (name, unit) = match text.split_once(':') {
            Some((n, u)) => (n.trim(), Some(u.trim())),
            None => (text.trim(), None),
        };
        let (flow, router, name) = match name.split_once('.') {
            Some((bg, m)) => match bg.strip_prefix("bg").and_then(|n| n.parse::<u8>().ok()) {
                Some(n) if (1..=64).contains(&n) => (n, None, m),
                _ if (m == "cpu_per_frame" || m == "qos_per_frame")
                    && !bg.is_empty()
                    && bg.len() <= 12
                    && bg
                        .bytes()
                        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-') =>
                {
                    (0, Some(bg.to_owned()), m)
                }
                _ => return Err(TableError::Metric(name.into())),
            },
            None if name == "cpu_per_frame" || name == "qos_per_frame" => {
                return Err(TableError::Metric(name.into()))
            }
            None => (0, None, name),
        };
        let metric = MetricKind::from_key(name).ok_or_else(|| TableError::Metric(name.into()))?;
        let unit = match unit {
            None => metric.default_unit(),
            Some(u) => Unit::parse(metric, u).ok_or_else(|| TableError::Unit {
                metric: metric.key(),
                unit: u.into(),
                choices: match metric {
                    MetricKind::Throughput | MetricKind::FrameThroughput => {
                        "bit/s, kbit/s, Mbit/s, Gbit/s; Kbps, Mbps"
                    }
                    MetricKind::Loss => "%",
                    _ => "ns, µs, ms, s",
                },
            })?,
        };
        metrics.push(Column {
            metric,
            unit,
            flow,
            router,
        });
    }
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
            (MetricKind::QosPerFrame, "µs")
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
            "rtt": {"delay": {"mean_ns": 20.0}, "jitter": {"ditg_ns": 3.0}}
        }]}));
        let get = |m: MetricKind, r: &SendReport| m.of(r);
        assert_eq!(get(MetricKind::Delay, &rtt), Some(20.0));
        assert_eq!(get(MetricKind::Jitter, &rtt), Some(3.0));
        assert_eq!(get(MetricKind::Rtt, &rtt), Some(20.0));
        assert_eq!(get(MetricKind::Owd, &rtt), Some(7.0));
        assert_eq!(get(MetricKind::Loss, &rtt), Some(0.5));
        assert_eq!(get(MetricKind::Throughput, &rtt), Some(1e6));
        let owd = report(serde_json::json!({"flows": [{
            "spec": {"meter": "owd"},
            "received": {"bitrate_bps": 1e6, "delay": {"mean_ns": 7.0}, "jitter": {"ditg_ns": 1.0}},
            "rtt": null
        }, {}], "sum": {"received": {"bitrate_bps": 3e6}}}));
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
        // Frames on the link: 10 datagrams of 100 B payload, + UDP 8 + IP + Ethernet 14.
        let udp = |dest: &str| {
            report(serde_json::json!({"dest": dest, "flows": [{
                "spec": {"protocol": "udp"},
                "received": {"bitrate_bps": 8000.0, "bytes": 1000, "packets": 10,
                             "jitter": {"rfc3550_ns": 5.0}}
            }]}))
        };
        assert_eq!(
            get(MetricKind::FrameThroughput, &udp("[::1]:9")),
            Some(12_960.0)
        );
        assert_eq!(
            get(MetricKind::FrameThroughput, &udp("127.0.0.1:9")),
            Some(11_360.0)
        );
        assert_eq!(get(MetricKind::JitterRfc3550, &udp("[::1]:9")), Some(5.0));
        let tcp = report(
            serde_json::json!({"dest": "[::1]:9", "flows": [{"spec": {"protocol": "tcp"},
            "received": {"bitrate_bps": 1.0, "bytes": 1, "packets": 1}}]}),
        );
        assert_eq!(
            get(MetricKind::FrameThroughput, &tcp),
            None,
            "TCP has no datagrams"
        );
        assert!(MetricKind::Rtt.covers(MetricKind::Delay));
        assert!(!MetricKind::Jitter.covers(MetricKind::Delay));
    }
}
