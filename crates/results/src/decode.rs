//! What `dualperf decode LOG --json` prints (docs/output.md), how a log is read into it
//! ([`read`]) and what `decode` prints without `--json` ([`text`]).

use std::collections::BTreeMap;
use std::path::PathBuf;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

pub mod read;
pub mod text;

pub use read::{decode, packet_csv, DecodeOptions, Decoded};

use crate::log::{LogFlow, LogMeta};

/// `v` with the keys of every object in name order (as the log's own JSON was printed
/// before it had types).
fn in_name_order<S: serde::Serializer, T: Serialize>(v: &T, s: S) -> Result<S::Ok, S::Error> {
    serde_json::to_value(v)
        .map_err(serde::ser::Error::custom)?
        .serialize(s)
}

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
    /// sent, when); `null` if unreadable.
    #[serde(serialize_with = "in_name_order")]
    pub meta: Option<LogMeta>,
    /// Per logged flow key: what the writer recorded about the flow (its announcement,
    /// session, peer) and, merged in from its end entry, what it knew once the flow
    /// ended (`sent_packets`, `unlogged_records`).
    #[serde(serialize_with = "in_name_order")]
    pub flow_info: BTreeMap<u32, LogFlow>,
    /// Per-flow and total summaries of the arrivals ([`meter::SummaryMeter`], the
    /// streaming form of [`meter::summarize_all`]).
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
    /// Where and how the log ends: whether it is whole, and if not, where it was cut and
    /// which flows that cut short. `None` in documents written before it existed.
    #[serde(default)]
    pub log_end: Option<LogEnd>,
}

/// How a log ends. A log cut short (its writer killed, the file truncated or damaged)
/// is read up to the cut; the flows it cuts short have no sent count from the log, so
/// packets after the cut are not counted as lost: their figures cover what the log holds.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct LogEnd {
    /// True when the log is whole: no partial or damaged entry at the end, and (format
    /// version 3) every flow's end entry present.
    pub complete: bool,
    /// The log's format version.
    pub format_version: u16,
    /// How the log file was compressed: `"zstd"` (a name ending in `.zst` when
    /// written), or `null` for a plain log. Byte counts here are of the uncompressed
    /// stream.
    pub compression: Option<String>,
    /// Bytes read up to the last whole entry.
    pub bytes_read: u64,
    /// Bytes of a partial last entry that were ignored.
    pub truncated_tail_bytes: u64,
    /// What stopped the reading before the end of the file, if anything did (a damaged
    /// entry); everything before it was read.
    pub error: Option<String>,
    /// Received-packet records read.
    pub rx_records: u64,
    /// Sent-packet records read.
    pub tx_records: u64,
    /// The latest receive stamp read; `None` without received packets.
    pub last_rx_ns: Option<u64>,
    /// Flows the cut left without their end: their sent count is not used.
    pub cut_flows: Vec<u32>,
}
