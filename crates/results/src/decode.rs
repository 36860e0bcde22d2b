//! What `dualperf decode LOG --json` prints (docs/output.md).

use std::collections::BTreeMap;
use std::path::PathBuf;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The version of [`DecodeDoc`]'s format.
pub const DECODE_FORMAT_VERSION: u32 = 1;

/// A decoded per-packet log.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct DecodeDoc {
    /// [`DECODE_FORMAT_VERSION`].
    pub format_version: u32,
    /// The log file.
    pub log: PathBuf,
    /// What the writer recorded about itself (`tool`, `version`, where it listened or
    /// sent, when), as it wrote it; `null` if unreadable.
    pub meta: serde_json::Value,
    /// Per logged flow key: what the writer recorded about the flow (its announcement,
    /// session, peer, sent count), as it wrote it.
    pub flow_info: BTreeMap<u32, serde_json::Value>,
    /// Per-flow and total summaries of the arrivals ([`meter::summarize_all`]).
    pub summary: meter::Summary,
    /// Per flow: the sender's figures from its send records ([`meter::sent_summary`]).
    pub sent: BTreeMap<u32, meter::SentSummary>,
    /// Per flow: actual − scheduled send time ([`meter::schedule_error`]).
    pub schedule_error: BTreeMap<u32, meter::ScheduleError>,
    /// The series with `--interval`; `null` without.
    pub intervals: Option<Vec<meter::Interval>>,
    /// Per flow that carried RTP: the RFC 3550 §6.4.1 jitter against the RTP
    /// timestamps ([`meter::rtp_jitter_by_flow`]), the live receiver's `rtp`; absent when
    /// no flow did (or the log predates RTP timestamps).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub received_rtp: BTreeMap<u32, meter::RtpJitterSummary>,
}
