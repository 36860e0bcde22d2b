//! What `dualperf compare --json` prints: the battery's tests, each over both families,
//! with every test's full `send --json` flow (docs/output.md).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use traffic::Rate;
use wire::control::Protocol;

use crate::send::FlowOutcome;

/// One family's figures for a test.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Side {
    /// The receiver's payload bit rate, first to last arrival (as `send`'s
    /// `received.bitrate_bps`).
    pub throughput_bps: Option<f64>,
    /// Mean round trip of the echoes, the receiver's hold time taken out.
    pub rtt_mean_ns: Option<f64>,
    /// D-ITG's jitter of the round trips: mean |D(i) − D(i−1)| (ITGDec).
    pub jitter_ns: Option<f64>,
    /// Packets the receiver never saw, % of those sent (RFC 7680).
    pub loss_pct: Option<f64>,
    /// Packets sent.
    pub sent_packets: u64,
    /// Packets received; `None` if the receiver did not report.
    pub received_packets: Option<u64>,
    /// The flow's whole `send --json` result.
    pub flow: FlowOutcome,
}

/// A test: one flow, run over both families.
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
    /// Over IPv4; `None` if it could not run.
    pub ipv4: Option<Side>,
    /// Over IPv6; `None` if it could not run.
    pub ipv6: Option<Side>,
    /// (IPv6 − IPv4) / IPv4 × 100 per metric.
    pub delta_pct: Delta,
    /// What went wrong in this test, if anything.
    pub errors: Vec<String>,
}

/// (IPv6 − IPv4) / IPv4 × 100 of each figure; `None` where either is missing.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Delta {
    /// Throughput.
    pub throughput: Option<f64>,
    /// Mean round trip.
    pub rtt: Option<f64>,
    /// Jitter.
    pub jitter: Option<f64>,
}

/// The version of [`CompareReport`]'s format.
pub const COMPARE_FORMAT_VERSION: u32 = 1;

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
    /// Whether Ctrl-C ended the battery early.
    pub interrupted: bool,
    /// `--quick` gives each VoIP and game test half a second.
    pub quick: bool,
    /// The tests, in the order they ran.
    pub points: Vec<Point>,
}
