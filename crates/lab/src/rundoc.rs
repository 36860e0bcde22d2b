//! What `dualperf run --json` prints ([`RunSummary`]: what a plan's run measured and
//! where it went) and `dualperf run --dry-run --json` ([`DryRun`]: every run a plan
//! expands to, and what each would run), as types (docs/output.md).

use std::collections::BTreeMap;
use std::path::PathBuf;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// `dualperf run --json`: the counts of a plan's run, its directory and its index.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct RunSummary {
    /// The plan's name.
    pub plan: String,
    /// The run directory.
    pub dir: PathBuf,
    /// Whether `--quick` shortened the plan.
    pub quick: bool,
    /// Repetitions of each point and family.
    pub repetitions: u32,
    /// Each run's length (ns).
    pub run_duration_ns: u64,
    /// Runs the plan expands to.
    pub runs_planned: usize,
    /// Runs measured by this invocation.
    pub runs_measured: usize,
    /// Runs a resumed directory already held, not measured again.
    pub runs_already_there: usize,
    /// Runs that failed (their records say why).
    pub runs_failed: usize,
    /// Whether Ctrl-C stopped the run before its end.
    pub interrupted: bool,
    /// The SQLite index the runs went into.
    pub index: PathBuf,
    /// Runs indexed there; `null` when indexing failed (said on stderr).
    pub runs_indexed: Option<usize>,
}

/// `dualperf run --dry-run --json`: the runs a plan expands to and what each would run,
/// with nothing measured.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct DryRun {
    /// The plan's name.
    pub plan: String,
    /// Points of the plan (its factors' combinations).
    pub points: usize,
    /// IP families measured: 4, 6.
    pub families: Vec<u8>,
    /// Repetitions of each point and family.
    pub repetitions: u32,
    /// Each run's length (ns).
    pub run_duration_ns: u64,
    /// How long the whole plan is expected to take (ns).
    pub estimated_ns: u64,
    /// Every run, in the order it would be measured.
    pub runs: Vec<DryRunRun>,
}

/// One run of [`DryRun`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct DryRunRun {
    /// The run's id (its record's name in `runs/`).
    pub id: String,
    /// The point's id.
    pub point: String,
    /// The IP family: 4 or 6.
    pub family: u8,
    /// Which repetition, from 1.
    pub repetition: u32,
    /// The measured `dualperf send`.
    pub send: DrySend,
    /// The point's QoS settings, by name.
    pub qos: BTreeMap<String, String>,
    /// The point's background flows.
    pub background: Vec<DryBackground>,
}

/// What a run's measured `send` would be: across a plan's hosts, a command line; on a
/// local lab or loopback, a destination and the arguments.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum DrySend {
    /// Across hosts (`[hosts]`): the sender's agent sends to the receiver.
    Hosts {
        /// The sending host's name.
        from: String,
        /// The receiving host's name.
        to: String,
        /// The whole `dualperf send --from AGENT DEST …` command.
        command: String,
    },
    /// On this host: loopback or the plan's lab.
    Local {
        /// Where it sends, an address of the run's family.
        dest: String,
        /// The arguments of `dualperf send` after the destination.
        args: Vec<String>,
    },
}

/// A background flow of a run.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct DryBackground {
    /// Its label in the plan.
    pub label: String,
    /// Its `dualperf send` arguments.
    pub args: Vec<String>,
}
