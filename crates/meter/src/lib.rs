//! What received packets mean: per-packet records → summaries, interval
//! series, jitter, loss and ordering metrics, and the binary per-packet log.
//!
//! This crate is pure: it never touches a socket, never reads a clock and has
//! no async runtime. The live receiver, the sender (for round-trip echoes and
//! its schedule) and the offline decoder all feed it the same records.
//!
//! # Layers
//!
//! - [`record`]: the inputs, [`RxRecord`] (a packet as received) and
//!   [`TxRecord`] (a packet as sent). Slices are in arrival (or send) order.
//! - Metrics, each citing its definition where it is computed:
//!   [`jitter`] (D-ITG mean |ΔD|, RFC 3550 EWMA, RFC 3393/5481 IPDV by
//!   sequence number, RFC 5481 PDV percentiles), [`loss`] (loss, RFC 3357 loss
//!   periods, duplicates, RFC 4737 reordering, and D-ITG's own loss rules for
//!   comparison), [`marking`] (received DSCP/ECN, hop limit, flow label),
//!   [`schedule`] (sender schedule error), [`omit`] (which packets `-O` leaves
//!   out, by their stamps), [`stats`] (mean, standard deviation, nearest-rank
//!   percentiles, reusable elsewhere), [`rtp`] (RFC 3550 jitter against the RTP
//!   timestamps the records carry).
//! - Aggregates: [`summary`] ([`summarize`], [`summarize_all`] → per-flow
//!   [`FlowSummary`] and a D-ITG-style total) and [`interval`] ([`intervals`]:
//!   per-window series where an empty window is `null`, not 0). These batch
//!   functions take the whole record list; they are the reference.
//! - Streaming: [`stream`] ([`FlowMeter`], [`SummaryMeter`]) and
//!   [`schedule::TxMeter`] compute the same figures one record at a time in
//!   memory that does not grow with the packet count, from [`seq`] (loss,
//!   duplicates and reordering in a window of open loss runs), [`hist`] (a sparse
//!   log-linear histogram for percentiles, within [`hist::RELATIVE_ERROR`]) and
//!   [`interval::IntervalSeries`]. Every socket loop and `decode` use these;
//!   property tests hold them to the batch reference.
//! - Clocks: [`clock`] (the offset between two hosts' clocks and its bound, from
//!   timestamped exchanges: RFC 5905's on-wire method and minimum-delay filter).
//! - Across runs: [`repeat`] (mean, standard deviation and Student-t
//!   confidence interval of repetitions; Welch's t-test of IPv6 against IPv4) and
//!   [`verdict`] (a table of IPv6-against-IPv4 comparisons of medians over a few runs,
//!   its verdicts holding the false discovery rate, its intervals adjusted to match).
//! - Formats: [`log`] (versioned binary per-packet log, safe on untrusted
//!   input) and [`text`] (ITGDec-compatible report, CSV).
//!
//! # Example
//!
//! ```
//! use std::collections::BTreeMap;
//! use meter::{summarize_all, text, RxRecord};
//!
//! let records: Vec<RxRecord> = (0..4u64)
//!     .filter(|&seq| seq != 2) // seq 2 was lost
//!     .map(|seq| RxRecord {
//!         flow: 1,
//!         seq,
//!         size_bytes: 100,
//!         tx_ns: seq * 1_000_000,
//!         rx_ns: seq * 1_000_000 + 50_000,
//!         ..RxRecord::default()
//!     })
//!     .collect();
//! let summary = summarize_all(&records, &BTreeMap::from([(1, 4)]));
//! let flow = summary.flow(1).unwrap();
//! assert_eq!(flow.loss.lost, 1);
//! assert_eq!(flow.delay.unwrap().mean_ns, 50_000.0);
//! assert_eq!(flow.jitter.ditg_ns, Some(0.0));
//! assert!(text::itgdec_text(&summary).contains("Packets dropped          =             1 (25.00 %)"));
//! ```

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod clock;
pub mod hist;
pub mod interval;
pub mod jitter;
pub mod log;
pub mod loss;
pub mod marking;
pub mod omit;
pub mod record;
pub mod repeat;
pub mod rtp;
pub mod schedule;
pub mod seq;
pub mod stats;
pub mod stream;
pub mod summary;
pub mod text;
pub mod verdict;

pub use hist::Histogram;
pub use interval::{
    intervals, try_intervals, Interval, IntervalError, IntervalSeries, MAX_WINDOWS,
};
pub use jitter::{IpdvStats, Jitter, Rfc3550Jitter};
pub use log::{Entry, LogError, LogReader, LogWriter};
pub use loss::{DitgLoss, Loss};
pub use marking::{Marking, MarkingCounter};
pub use record::{RxRecord, TxRecord};
pub use repeat::{compare, Comparison, Sample, Verdict};
pub use rtp::{rtp_jitter, rtp_jitter_by_flow, RtpJitter, RtpJitterSummary};
pub use schedule::{
    schedule_error, schedule_error_with, sent_by_flow, sent_summary, ScheduleError, SentSummary,
    TxMeter,
};
pub use seq::{Arrival, SeqState};
pub use stats::{percentile_nearest_rank, Stats};
pub use stream::{Arrivals, FlowMeter, SummaryMeter};
pub use summary::{summarize, summarize_all, DelayStats, FlowSummary, Summary, TOTAL_FLOW};
pub use text::{csv_intervals, csv_summary, itgdec_text, itgdec_text_with, ItgdecOptions};
