//! Sender schedule accuracy: how far each packet's actual send time fell
//! behind the time the schedule intended.
//!
//! Per packet, `error = actual_ns − scheduled_ns`, saturating at 0 when the
//! packet left early (counted separately). This is the per-packet form of
//! irtt's aggregate "timer error" (irtt `doc/irtt-client.md`): it tells whether
//! a measured rate shortfall is the sender's own (cf. D-ITG's 1000 → 288 pps,
//! jbucar/ditg#4) rather than the network's.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::hist::Histogram;
use crate::record::TxRecord;
use crate::stats::percentile_nearest_rank;

/// Default threshold above which a packet counts as late: 1 ms, a typical
/// Linux timer-slack plus scheduler-quantum budget. Flows with sub-millisecond
/// inter-departure times should pass their own (e.g. the IDT) to
/// [`schedule_error_with`].
pub const DEFAULT_LATE_THRESHOLD_NS: u64 = 1_000_000;

/// Schedule error statistics of a set of sent packets.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ScheduleError {
    /// Packets considered.
    pub packets: u64,
    /// Mean error.
    pub mean_ns: f64,
    /// Median error, nearest rank.
    pub p50_ns: u64,
    /// 99th percentile error, nearest rank.
    pub p99_ns: u64,
    /// Largest error.
    pub max_ns: u64,
    /// The threshold used for `late_packets`.
    pub late_threshold_ns: u64,
    /// Packets whose error exceeded `late_threshold_ns`.
    pub late_packets: u64,
    /// Packets sent before their scheduled time (error counted as 0).
    pub early_packets: u64,
}

/// Schedule error of `tx` (any order, any flows) with
/// [`DEFAULT_LATE_THRESHOLD_NS`]; `None` when `tx` is empty.
pub fn schedule_error(tx: &[TxRecord]) -> Option<ScheduleError> {
    schedule_error_with(tx, DEFAULT_LATE_THRESHOLD_NS)
}

/// Schedule error of `tx` counting packets more than `late_threshold_ns` late;
/// `None` when `tx` is empty.
pub fn schedule_error_with(tx: &[TxRecord], late_threshold_ns: u64) -> Option<ScheduleError> {
    let mut errors: Vec<u64> = tx
        .iter()
        .map(|t| t.actual_ns.saturating_sub(t.scheduled_ns))
        .collect();
    errors.sort_unstable();
    let max_ns = *errors.last()?;
    let sum: u128 = errors.iter().map(|&e| u128::from(e)).sum();
    Some(ScheduleError {
        packets: errors.len() as u64,
        mean_ns: sum as f64 / errors.len() as f64,
        p50_ns: percentile_nearest_rank(&errors, 50.0)?,
        p99_ns: percentile_nearest_rank(&errors, 99.0)?,
        max_ns,
        late_threshold_ns,
        late_packets: errors.iter().filter(|&&e| e > late_threshold_ns).count() as u64,
        early_packets: tx.iter().filter(|t| t.actual_ns < t.scheduled_ns).count() as u64,
    })
}

/// A sender's records of one flow (or several together) as they are made: the
/// streaming form of [`sent_summary`] and [`schedule_error_with`], in memory that does
/// not grow with the packet count. Counts, bytes, times, the mean, maximum, late and
/// early counts are exact; the p50 and p99 come from a histogram
/// ([`crate::hist::RELATIVE_ERROR`]).
#[derive(Clone, Debug, PartialEq)]
pub struct TxMeter {
    late_threshold_ns: u64,
    packets: u64,
    bytes: u64,
    first_ns: Option<u64>,
    last_ns: Option<u64>,
    error_sum_ns: u128,
    errors: Histogram,
    late_packets: u64,
    early_packets: u64,
}

impl Default for TxMeter {
    fn default() -> Self {
        Self::new(DEFAULT_LATE_THRESHOLD_NS)
    }
}

impl TxMeter {
    /// A meter counting packets more than `late_threshold_ns` late.
    pub fn new(late_threshold_ns: u64) -> Self {
        Self {
            late_threshold_ns,
            packets: 0,
            bytes: 0,
            first_ns: None,
            last_ns: None,
            error_sum_ns: 0,
            errors: Histogram::new(),
            late_packets: 0,
            early_packets: 0,
        }
    }

    /// Takes one sent packet's record.
    pub fn handle_record(&mut self, t: &TxRecord) {
        self.handle_records(t, 1);
    }

    /// Takes `n` records that differ from `t` in their sequence numbers only (a bulk
    /// sender's batch: one size, one due instant, one send call), as `n` calls of
    /// [`Self::handle_record`] would.
    pub fn handle_records(&mut self, t: &TxRecord, n: u64) {
        if n == 0 {
            return;
        }
        self.packets += n;
        self.bytes += u64::from(t.size_bytes) * n;
        self.first_ns = Some(self.first_ns.map_or(t.actual_ns, |f| f.min(t.actual_ns)));
        self.last_ns = Some(self.last_ns.map_or(t.actual_ns, |l| l.max(t.actual_ns)));
        let error = t.actual_ns.saturating_sub(t.scheduled_ns);
        self.error_sum_ns += u128::from(error) * u128::from(n);
        self.errors
            .record_n(i64::try_from(error).unwrap_or(i64::MAX), n);
        self.late_packets += u64::from(error > self.late_threshold_ns) * n;
        self.early_packets += u64::from(t.actual_ns < t.scheduled_ns) * n;
    }

    /// Packets recorded.
    pub fn packets(&self) -> u64 {
        self.packets
    }

    /// Payload bytes recorded.
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// As [`sent_summary`] of every record taken.
    pub fn sent_summary(&self) -> SentSummary {
        let packets = self.packets;
        let duration_ns = self
            .first_ns
            .zip(self.last_ns)
            .and_then(|(a, b)| (packets >= 2 && b > a).then_some(b - a));
        let per_second = |count: f64| duration_ns.map(|d| count * 1e9 / d as f64);
        SentSummary {
            packets,
            bytes: self.bytes,
            first_ns: self.first_ns,
            last_ns: self.last_ns,
            duration_ns,
            rate_pps: per_second(packets as f64),
            bitrate_bps: per_second(self.bytes as f64 * 8.0),
        }
    }

    /// As [`schedule_error_with`] of every record taken; `None` before the first.
    pub fn schedule_error(&self) -> Option<ScheduleError> {
        let as_u64 = |v: i64| v.unsigned_abs();
        Some(ScheduleError {
            packets: self.packets,
            mean_ns: self.error_sum_ns as f64 / self.packets as f64,
            p50_ns: self.errors.percentile(50.0).map(as_u64)?,
            p99_ns: self.errors.percentile(99.0).map(as_u64)?,
            max_ns: self.errors.max().map(as_u64)?,
            late_threshold_ns: self.late_threshold_ns,
            late_packets: self.late_packets,
            early_packets: self.early_packets,
        })
    }

    /// Heap bytes held.
    pub fn heap_bytes(&self) -> usize {
        self.errors.heap_bytes()
    }
}

/// Packets sent per flow (one [`TxRecord`] per packet), the `sent` map that
/// [`crate::summarize_all`] takes.
pub fn sent_by_flow(tx: &[TxRecord]) -> BTreeMap<u32, u64> {
    let mut sent = BTreeMap::new();
    for t in tx {
        *sent.entry(t.flow).or_insert(0) += 1;
    }
    sent
}

/// What a sender handed to the kernel: counts, and rates over its first→last actual
/// send time, the span D-ITG's ITGDec divides by on either side (`ITGDecod.cpp` line 809).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SentSummary {
    /// Records.
    pub packets: u64,
    /// Payload bytes.
    pub bytes: u64,
    /// Earliest and latest actual send time (monotonic clock); `None` when empty.
    pub first_ns: Option<u64>,
    /// See `first_ns`.
    pub last_ns: Option<u64>,
    /// `last_ns − first_ns`; `None` when fewer than two records or no time passed.
    pub duration_ns: Option<u64>,
    /// `packets / duration`; `None` with `duration_ns`.
    pub rate_pps: Option<f64>,
    /// `bytes · 8 / duration`; `None` with `duration_ns`.
    pub bitrate_bps: Option<f64>,
}

/// The [`SentSummary`] of `tx` (one flow, or several taken together).
pub fn sent_summary(tx: &[TxRecord]) -> SentSummary {
    let packets = tx.len() as u64;
    let bytes = tx.iter().map(|t| u64::from(t.size_bytes)).sum::<u64>();
    let first_ns = tx.iter().map(|t| t.actual_ns).min();
    let last_ns = tx.iter().map(|t| t.actual_ns).max();
    let duration_ns = first_ns
        .zip(last_ns)
        .and_then(|(a, b)| (packets >= 2 && b > a).then_some(b - a));
    let per_second = |count: f64| duration_ns.map(|d| count * 1e9 / d as f64);
    SentSummary {
        packets,
        bytes,
        first_ns,
        last_ns,
        duration_ns,
        rate_pps: per_second(packets as f64),
        bitrate_bps: per_second(bytes as f64 * 8.0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tx(flow: u32, seq: u64, scheduled_ns: u64, actual_ns: u64) -> TxRecord {
        TxRecord {
            flow,
            seq,
            size_bytes: 64,
            scheduled_ns,
            actual_ns,
        }
    }

    #[test]
    fn mean_and_percentiles_of_lateness() {
        // 100 packets every 1 ms: packet i is (i+1) µs late, except packet
        // 50 which left 3 µs early and packet 99 which is 2.5 ms late.
        let mut records: Vec<TxRecord> = (0..100u64)
            .map(|i| tx(1, i, i * 1_000_000, i * 1_000_000 + (i + 1) * 1_000))
            .collect();
        records[50].actual_ns = records[50].scheduled_ns - 3_000;
        records[99].actual_ns = records[99].scheduled_ns + 2_500_000;
        let e = schedule_error(&records).unwrap();
        assert_eq!(e.packets, 100);
        // Σ (i+1) µs for i ≠ 50, 99 = 5050 − 51 − 100 = 4899 µs, plus 2500 µs.
        assert_eq!(e.mean_ns, 73_990.0);
        // Sorted errors: 0, 1..=50, 52..=99 µs, 2500 µs → rank 50 is 49 µs,
        // rank 99 is 99 µs.
        assert_eq!(e.p50_ns, 49_000);
        assert_eq!(e.p99_ns, 99_000);
        assert_eq!(e.max_ns, 2_500_000);
        assert_eq!(e.late_threshold_ns, 1_000_000);
        assert_eq!(e.late_packets, 1);
        assert_eq!(e.early_packets, 1);
    }

    #[test]
    fn custom_threshold_counts_more_late_packets() {
        let records = [tx(1, 0, 0, 10), tx(1, 1, 100, 150), tx(2, 0, 100, 100)];
        let e = schedule_error_with(&records, 20).unwrap();
        assert_eq!(e.mean_ns, 20.0);
        assert_eq!(e.p50_ns, 10);
        assert_eq!(e.late_packets, 1);
        assert_eq!(e.early_packets, 0);
    }

    #[test]
    fn a_run_of_records_counts_as_each_record_would() {
        // Runs as a bulk sender hands them over: late, early, on time, past the
        // threshold, and an empty run.
        let runs = [
            (tx(1, 0, 1_000, 4_000), 46),
            (tx(1, 46, 9_000, 8_000), 3),
            (tx(1, 49, 10_000, 10_000), 0),
            (tx(1, 49, 10_000, 2_000_000), 18),
            (tx(1, 67, 20_000, 20_000), 1),
        ];
        let (mut one_by_one, mut by_run) = (TxMeter::new(1_000_000), TxMeter::new(1_000_000));
        for (t, n) in &runs {
            for k in 0..*n {
                one_by_one.handle_record(&TxRecord {
                    seq: t.seq + k,
                    ..*t
                });
            }
            by_run.handle_records(t, *n);
        }
        assert_eq!(by_run, one_by_one);
        assert_eq!(by_run.packets(), 68);
        let e = by_run.schedule_error().unwrap();
        assert_eq!((e.late_packets, e.early_packets), (18, 3));
    }

    #[test]
    fn no_packets_no_schedule_error() {
        assert_eq!(schedule_error(&[]), None);
    }

    #[test]
    fn counts_sent_packets_per_flow() {
        let records = [tx(1, 0, 0, 0), tx(2, 0, 0, 0), tx(1, 1, 0, 0)];
        assert_eq!(sent_by_flow(&records), BTreeMap::from([(1, 2), (2, 1)]));
    }

    #[test]
    fn sent_summary_divides_by_the_first_to_last_send_time() {
        let t = [tx(1, 0, 0, 1_000), tx(1, 1, 0, 3_000), tx(1, 2, 0, 501_000)];
        let s = sent_summary(&t);
        assert_eq!((s.packets, s.bytes), (3, 192));
        assert_eq!(
            (s.first_ns, s.last_ns, s.duration_ns),
            (Some(1_000), Some(501_000), Some(500_000))
        );
        assert_eq!(s.rate_pps, Some(6000.0));
        assert_eq!(s.bitrate_bps, Some(3_072_000.0));
        let one = sent_summary(&t[..1]);
        assert_eq!((one.duration_ns, one.rate_pps), (None, None));
        assert_eq!(sent_summary(&[]).first_ns, None);
    }
}
