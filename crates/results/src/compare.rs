//! What `dualperf compare --json` prints: the battery's tests, each run several times over
//! both families, with every run's full `send --json` flow and each test's verdicts
//! (docs/output.md).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use traffic::Rate;
use wire::control::Protocol;

use meter::verdict::RunsComparison;

use crate::send::FlowOutcome;

/// One family's figures for a test.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Side {
    /// The receiver's payload bit rate, first to last arrival (as `send`'s
    /// `received.bitrate_bps`).
    pub throughput_bps: Option<f64>,
    /// Mean round trip of the echoes, the receiver's hold time taken out.
    pub rtt_mean_ns: Option<f64>,
    /// Median round trip of the echoes (from the meter's histogram, within 1/128), the
    /// receiver's hold time taken out: the figure the table compares, which one stalled
    /// packet cannot move.
    pub rtt_median_ns: Option<f64>,
    /// D-ITG's jitter of the round trips: mean |D(i) − D(i−1)| (ITGDec).
    pub jitter_ns: Option<f64>,
    /// Packets the receiver never saw, % of those sent (RFC 7680).
    pub loss_pct: Option<f64>,
    /// Packets sent.
    pub sent_packets: u64,
    /// Packets received; `None` if the receiver did not report.
    pub received_packets: Option<u64>,
    /// How many times the run was measured: 1, or more when the attempts before fell
    /// behind their schedule (each measured again at once, at most 3 times in all; this
    /// is the last).
    #[serde(default = "one")]
    pub attempts: u32,
    /// The flow's whole `send --json` result.
    pub flow: FlowOutcome,
}

/// A document written before [`Side::attempts`] measured each run once.
fn one() -> u32 {
    1
}

/// One repetition of a test: its run over each family, back to back.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Repetition {
    /// 1, 2, …: the battery's pass this run belongs to.
    pub repetition: u32,
    /// Whether IPv6 ran first in this pair: the order alternates from test to test and
    /// from pass to pass, so neither family always follows the other.
    pub ipv6_first: bool,
    /// Over IPv4; `None` if it could not run (or the battery was interrupted first).
    pub ipv4: Option<Side>,
    /// Over IPv6; `None` likewise.
    pub ipv6: Option<Side>,
}

/// A test's verdict per metric, from its repetitions (`meter::verdict`): the medians of
/// the runs of each family, IPv6 − IPv4 with its interval, and whether that interval
/// leaves out 0. `None` where a family has no run with the figure.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct PointStats {
    /// Throughput, bit/s.
    pub throughput_bps: Option<RunsComparison>,
    /// Median round trip, ns.
    pub rtt_median_ns: Option<RunsComparison>,
    /// D-ITG's jitter of the round trips, ns.
    pub jitter_ns: Option<RunsComparison>,
    /// Loss, % of packets sent.
    pub loss_pct: Option<RunsComparison>,
}

/// A test: one flow, run over both families, several times.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Point {
    /// `UDP 64 B`, `VoIP g711.1`, `game quake3`.
    pub name: String,
    /// Transport.
    pub protocol: Protocol,
    /// Payload bytes (the mean for random sizes).
    pub size_bytes: u32,
    /// The constant rate of the test; `None` for the game models' random gaps.
    pub rate: Option<Rate>,
    /// Every repetition, in the order they ran.
    pub runs: Vec<Repetition>,
    /// The verdict per metric.
    pub stats: PointStats,
    /// What went wrong in this test's runs, if anything (`rep 2 IPv6: …`).
    pub errors: Vec<String>,
}

/// How the table's verdicts allow for its many comparisons (`meter::verdict`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Verdicts {
    /// The false discovery rate the verdicts control over the whole table
    /// (Benjamini–Hochberg).
    pub fdr: f64,
    /// Comparisons with a p-value (tests × metrics).
    pub tested: u64,
    /// Those whose difference is significant.
    pub discoveries: u64,
    /// Every interval's confidence level (false-coverage-rate adjusted, Benjamini &
    /// Yekutieli 2005): `1 − max(discoveries, 1) · fdr / tested`; `None` when nothing
    /// was tested.
    pub level: Option<f64>,
}

/// The version of [`CompareReport`]'s format.
pub const COMPARE_FORMAT_VERSION: u32 = 2;

/// `dualperf compare --json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct CompareReport {
    /// [`COMPARE_FORMAT_VERSION`].
    pub format_version: u32,
    /// `dualperf` and its version.
    pub tool: String,
    /// `loopback`, or `lab:NAME`.
    pub target: String,
    /// The size tests' rate.
    pub rate: Rate,
    /// The size tests' payload sizes.
    pub sizes_bytes: Vec<u32>,
    /// Each size test's duration.
    pub duration_ns: u64,
    /// Each VoIP and game test's duration.
    pub model_duration_ns: u64,
    /// Runs per family per test asked for (`--repeat`).
    pub repetitions: u32,
    /// Whether Ctrl-C ended the battery early.
    pub interrupted: bool,
    /// A `--quick` battery: fewer and shorter runs.
    pub quick: bool,
    /// How the verdicts allow for the table's many comparisons.
    pub verdicts: Verdicts,
    /// The closing summary in plain words, one sentence per line.
    pub summary: Vec<String>,
    /// This host's check (`dualperf doctor`), taken before the battery.
    pub doctor: Option<crate::doctor::DoctorDoc>,
    /// The tests, in the order they ran.
    pub points: Vec<Point>,
}
