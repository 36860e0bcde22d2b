//! What `dualperf compare --json` prints, and what `dualperf report` computes for any run
//! directory whose runs are paired: IPv6 against IPv4 per point and metric of the plan's
//! tables, each repetition's IPv4 run against its IPv6 run, with a verdict that allows
//! for the page's many comparisons (`meter::verdict`), and the runs it used, each with
//! its full `send --json` flow (docs/output.md).

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use traffic::Rate;
use wire::control::Protocol;

use meter::verdict::RunsComparison;

use crate::send::FlowOutcome;

/// One run of a point over one family.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Side {
    /// The run's id in its run directory (`runs/ID.json`).
    pub run: String,
    /// The run's value of each metric of the tables, by metric key (`throughput`,
    /// `bg1.loss`, `r1.cpu_per_frame`), in the metric's stored unit (the vocabulary's:
    /// bit/s, ns, %); a metric the run has no value of is left out.
    pub figures: BTreeMap<String, f64>,
    /// Packets sent.
    pub sent_packets: u64,
    /// Packets received; `None` if the receiver did not report.
    pub received_packets: Option<u64>,
    /// How many times the run was measured: 1, or more when the attempts before fell
    /// behind their schedule (each measured again at once, at most 3 times in all; this
    /// is the last).
    #[serde(default = "one")]
    pub attempts: u32,
    /// Why the verdicts leave this run out: it fell behind its schedule
    /// ([`fell_behind`]); `None`: it counts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub not_counted: Option<String>,
    /// The flow's whole `send --json` result.
    pub flow: FlowOutcome,
}

/// A document written before [`Side::attempts`] measured each run once.
fn one() -> u32 {
    1
}

/// One repetition of a point: its run over each family, back to back.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Repetition {
    /// 1, 2, …: the plan's pass this pair belongs to.
    pub repetition: u32,
    /// Whether IPv6 ran first in this pair (order "alternating" alternates it from
    /// point to point and from pass to pass).
    pub ipv6_first: bool,
    /// Over IPv4; `None` if it has no result (failed, or not run yet).
    pub ipv4: Option<Side>,
    /// Over IPv6; `None` likewise.
    pub ipv6: Option<Side>,
}

/// A point of the plan: one flow, run over both families, several times.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Point {
    /// The point's id in the plan.
    pub id: String,
    /// Its label in the tables' rows (`VoIP G.711.1`, `protocol udp, size 64`).
    pub name: String,
    /// Transport of its measured flow.
    pub protocol: Protocol,
    /// Payload bytes (the mean for random sizes).
    pub size_bytes: u32,
    /// The constant rate of the flow; `None` for a model's random gaps.
    pub rate: Option<Rate>,
    /// Every repetition with a run, in order.
    pub runs: Vec<Repetition>,
    /// What the verdicts left out of this point's runs, and why (`run 2 IPv6: …`).
    pub errors: Vec<String>,
    /// Why the point is not compared at all, though its medians are shown: it fragments
    /// over a family, or it offers more than the path carries. Its rows are left out of
    /// the verdicts' false discovery rate and of the summary's sentences (docs/compare.md,
    /// "A battery that fits the path").
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub caveats: Vec<Caveat>,
}

/// The share of the path's capacity above which a point is [`Caveat::Oversubscribed`]:
/// 90 % of it, since what a bottleneck's queue does to a flow near its rate is the
/// queue's, not the family's.
pub const OVERSUBSCRIBED: f64 = 0.9;

/// Why a point's families are not compared: a difference it shows would be the path's,
/// not IPv6's.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Caveat {
    /// Its packets are larger than this family's path MTU, so IP fragments each one
    /// (IPv4 on the way, IPv6 at the source: RFC 791, RFC 8200 §4.5): over a 1500-byte
    /// path a UDP payload of 1472 bytes fits IPv4 (1472 + 28) but not IPv6 (1472 + 48).
    Fragments {
        /// 4 or 6.
        family: u8,
        /// The IP packet it would need unfragmented (payload and headers).
        ip_bytes: u64,
        /// The family's path MTU.
        mtu: u32,
    },
    /// It offers more than [`OVERSUBSCRIBED`] of the path's capacity over this family
    /// (its packets with their headers, as the path's capacity counts them): the
    /// bottleneck's queue decides its loss and delay.
    Oversubscribed {
        /// 4 or 6.
        family: u8,
        /// The rate it offers, bit/s.
        offered_bps: u64,
        /// The path's capacity, bit/s.
        capacity_bps: u64,
    },
}

impl Caveat {
    /// The row's mark: `fragments over IPv6`, `oversubscribed`.
    pub fn mark(&self) -> String {
        match self {
            Self::Fragments { family, .. } => format!("fragments over IPv{family}"),
            Self::Oversubscribed { .. } => "oversubscribed".to_owned(),
        }
    }

    /// The reason in full: `1472 + 48 = 1520 bytes > the 1500-byte path MTU over IPv6`.
    pub fn reason(&self) -> String {
        match self {
            Self::Fragments {
                family,
                ip_bytes,
                mtu,
            } => format!("{ip_bytes}-byte packets > the {mtu}-byte path MTU over IPv{family}"),
            Self::Oversubscribed {
                family,
                offered_bps,
                capacity_bps,
            } => format!(
                "offers {:.3} Mbit/s over IPv{family}, {:.0} % of the path's {:.3} Mbit/s",
                *offered_bps as f64 / 1e6,
                *offered_bps as f64 * 100.0 / (*capacity_bps).max(1) as f64,
                *capacity_bps as f64 / 1e6
            ),
        }
    }
}

/// How the runs were compared.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Analysis {
    /// Each repetition's IPv6 run against its IPv4 run, back to back (plans ordered
    /// "interleaved" or "alternating"): medians, the pairs' differences, verdicts.
    Paired,
    /// Runs not in pairs (order "random"): each family's runs as one sample; `report`'s
    /// tables compare their means (Welch), and no paired verdict is made.
    Pooled,
}

/// One metric of one table: a row per point.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct VerdictTable {
    /// The plan's table title.
    pub title: String,
    /// The metric's key (`throughput`, `rtt_median`, `bg1.loss`).
    pub metric: String,
    /// The column heading: title and unit (`Throughput (Mbit/s)`).
    pub heading: String,
    /// The unit shown.
    pub unit: String,
    /// Stored value / shown value.
    pub scale: f64,
    /// The metric in words, for the summary (`throughput`).
    pub noun: String,
    /// Whether the metric is 0 in every run of every point (shown as one line).
    pub all_zero: bool,
    /// One row per point.
    pub rows: Vec<VerdictRow>,
}

/// A point's verdict for one metric.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct VerdictRow {
    /// The point's id.
    pub point: String,
    /// Its label.
    pub label: String,
    /// The medians of each family's runs, IPv6 − IPv4 with its interval and the
    /// verdict; `None` where a family has no run with the figure.
    pub comparison: Option<RunsComparison>,
    /// Why the row is not compared (its point's [`Caveat`] marks: `fragments over
    /// IPv6`, `oversubscribed`): its comparison has the medians but no verdict, and it
    /// is not among the page's tested comparisons.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub not_compared: Option<String>,
}

/// How the page's verdicts allow for its many comparisons (`meter::verdict`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Verdicts {
    /// The false discovery rate the verdicts control over every comparison of the page
    /// (Benjamini–Hochberg).
    pub fdr: f64,
    /// Comparisons with a p-value (points × metrics).
    pub tested: u64,
    /// Those whose difference is significant.
    pub discoveries: u64,
    /// Every interval's confidence level (false-coverage-rate adjusted, Benjamini &
    /// Yekutieli 2005): `1 − max(discoveries, 1) · fdr / tested`; `None` when nothing
    /// was tested.
    pub level: Option<f64>,
}

/// The version of [`CompareReport`]'s format.
pub const COMPARE_FORMAT_VERSION: u32 = 3;

/// `dualperf compare --json`, and `verdicts` in `dualperf report --json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct CompareReport {
    /// [`COMPARE_FORMAT_VERSION`].
    pub format_version: u32,
    /// `dualperf` and its version.
    pub tool: String,
    /// The run directory the runs are in (`dualperf report DIR` prints these verdicts
    /// again); `None` when not known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dir: Option<String>,
    /// The plan's name (`compare` for the battery).
    pub plan: String,
    /// `loopback`, `lab:NAME`, `hosts`.
    pub target: String,
    /// Runs per family per point the plan asked for.
    pub repetitions: u32,
    /// Each run's length.
    pub duration_ns: u64,
    /// Whether the plan ran with `--quick`.
    pub quick: bool,
    /// Whether runs of the plan are missing (Ctrl-C, failures): the verdicts use those
    /// there are.
    pub interrupted: bool,
    /// Paired, or pooled (no verdicts).
    pub analysis: Analysis,
    /// How the verdicts allow for the page's many comparisons.
    pub verdicts: Verdicts,
    /// One per metric of each of the plan's tables, in order.
    pub tables: Vec<VerdictTable>,
    /// The closing summary in plain words, one sentence per line.
    pub summary: Vec<String>,
    /// The host checks that were not ok when the runs started (`doctor.json`), one
    /// line each.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub host_checks: Vec<String>,
    /// The metrics' definitions, as `metric: definition`, for the page's foot.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub definitions: Vec<String>,
    /// The points, in plan order, with the runs the verdicts used.
    pub points: Vec<Point>,
}

/// Why a run does not count, if it fell behind its schedule: it sent nothing, or, on a
/// constant-rate schedule (whose plan is exact, unlike a model's random gaps), less than
/// 90 % of the packets it planned: its sender did not get the CPU (`dualperf doctor`
/// may say why). A paced run on a host that keeps up sends every planned packet. The
/// verdicts leave such runs out; `compare` measures one again while it falls behind.
pub fn fell_behind(flow: &FlowOutcome) -> Option<String> {
    if flow.sent.packets == 0 {
        return Some("sent no packets in its time (the host may be overloaded)".to_owned());
    }
    if flow.spec.idt_ms.is_some() {
        return None;
    }
    let planned = flow
        .sent
        .planned_packets
        .filter(|&p| flow.sent.packets * 10 < p * 9)?;
    Some(format!(
        "sent {} of {planned} planned packets: the host fell behind (dualperf doctor may say why); not counted",
        flow.sent.packets
    ))
}
