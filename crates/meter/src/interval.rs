//! Time-interval series: per-window rates, delay, jitter and loss, keyed on
//! receive time, as ITGDec's `-b/-d/-j/-p/-c <ms>` outputs
//! (`src/ITGDec/ITGDecod.cpp` `elabsplit()`, line 1417 for jitter) but with
//! one deliberate difference: **an empty window has no rate, delay or jitter**
//! (`None`, `null` in JSON) instead of ITGDec's 0 (lines 1396–1411), so a
//! stall is not mistaken for zero delay.
//!
//! Window `k` covers `[origin + k·window, origin + (k+1)·window)` of `rx_ns`.
//! Every window from `origin` to the one holding the latest record appears.
//! Records before `origin` fall in no window, but still precede the next
//! record for jitter pairs and loss detection. Per window:
//! - `bitrate_bps = bytes · 8 / window`, `rate_pps = packets / window` (the
//!   full window length, also for the last window);
//! - delay mean/min/max over the window's records;
//! - `jitter_ditg_ns`: mean `|D_i − D_{i−1}|` over consecutive records (arrival
//!   order) whose *second* record falls in the window; the first may lie in an
//!   earlier window, as in ITGDec, which keeps `lastdelay` across windows;
//! - `jitter_rfc3550_ns`: the running RFC 3550 J after the window's last
//!   record in arrival order (never reset, as iperf reports it);
//! - `lost`: gap-based, like ITGDec's `-p`: when a record of a flow arrives
//!   with a sequence number above that flow's `NextExp` (largest seen + 1), the
//!   skipped numbers that are *never* received anywhere in the input are
//!   charged to that record's window. Numbers that arrive later (reordered)
//!   are not lost. Losses after a flow's last received number are in no
//!   window (only [`crate::Loss`] knows them, from the sent count).
//!
//! Arrival-order quantities treat the input as one stream; loss keys on
//! `(flow, seq)`, so a mixed-flow input gives per-flow-correct loss.

use std::collections::{BTreeMap, HashMap};

use serde::{Deserialize, Serialize};
use thiserror::Error;

use crate::jitter::Rfc3550Jitter;
use crate::record::RxRecord;

/// Largest series [`try_intervals`] builds (4 Mi windows, about 0.6 GB): a
/// corrupt stamp in an untrusted log must not exhaust memory.
pub const MAX_WINDOWS: u64 = 1 << 22;

/// One window of the series.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Interval {
    /// Window start (inclusive), same clock as `rx_ns`.
    pub start_ns: u64,
    /// Window end (exclusive).
    pub end_ns: u64,
    /// Records received in the window (duplicates included).
    pub packets: u64,
    /// Payload bytes received in the window.
    pub bytes: u64,
    /// `bytes · 8 / window`; `None` for an empty window.
    pub bitrate_bps: Option<f64>,
    /// `packets / window`; `None` for an empty window.
    pub rate_pps: Option<f64>,
    /// Mean delay of the window's records; `None` for an empty window.
    pub delay_mean_ns: Option<f64>,
    /// Minimum delay; `None` for an empty window.
    pub delay_min_ns: Option<i64>,
    /// Maximum delay; `None` for an empty window.
    pub delay_max_ns: Option<i64>,
    /// D-ITG jitter of the pairs ending in the window; `None` without a pair.
    pub jitter_ditg_ns: Option<f64>,
    /// Running RFC 3550 jitter at the window's last record; `None` for an
    /// empty window or before the second packet.
    pub jitter_rfc3550_ns: Option<f64>,
    /// Never-received sequence numbers revealed by a gap in this window;
    /// `None` for an empty window.
    pub lost: Option<u64>,
}

/// Why a series could not be built.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Error)]
pub enum IntervalError {
    /// The window length was zero.
    #[error("interval window must be longer than 0 ns")]
    ZeroWindow,
    /// The records span more windows than [`MAX_WINDOWS`].
    #[error("records span {windows} windows, more than the limit of {max}")]
    TooManyWindows {
        /// Windows the series would need.
        windows: u64,
        /// The limit.
        max: u64,
    },
}

/// The interval series of `records` (arrival order) with windows of
/// `window_ns` starting at `origin_ns`; see the module doc.
///
/// Returns an empty series when no record is at or after `origin_ns`, when
/// `window_ns == 0`, or when the series would exceed [`MAX_WINDOWS`]; use
/// [`try_intervals`] to tell those apart.
pub fn intervals(records: &[RxRecord], window_ns: u64, origin_ns: u64) -> Vec<Interval> {
    try_intervals(records, window_ns, origin_ns).unwrap_or_default()
}

/// As [`intervals`], reporting a zero window or an oversized series as an
/// error.
pub fn try_intervals(
    records: &[RxRecord],
    window_ns: u64,
    origin_ns: u64,
) -> Result<Vec<Interval>, IntervalError> {
    if window_ns == 0 {
        return Err(IntervalError::ZeroWindow);
    }
    let window_of = |r: &RxRecord| {
        r.rx_ns
            .checked_sub(origin_ns)
            .map(|offset| offset / window_ns)
    };
    let Some(last) = records.iter().filter_map(window_of).max() else {
        return Ok(Vec::new());
    };
    let windows = last + 1;
    if windows > MAX_WINDOWS {
        return Err(IntervalError::TooManyWindows {
            windows,
            max: MAX_WINDOWS,
        });
    }

    let received = received_seqs(records);
    // Both casts are lossless: every window index is at most MAX_WINDOWS.
    let mut acc = vec![Accumulator::default(); windows as usize];
    let mut prev_delay: Option<i64> = None;
    let mut rfc3550 = Rfc3550Jitter::new();
    let mut next_expected: HashMap<u32, u64> = HashMap::new();
    for r in records {
        let delay = r.delay_ns();
        rfc3550.update(delay);
        let next = next_expected.entry(r.flow).or_insert(0);
        let revealed = match received.get(&r.flow) {
            Some(seqs) if r.seq > *next => missing_in(seqs, *next, r.seq),
            _ => 0,
        };
        *next = (*next).max(r.seq.saturating_add(1));

        if let Some(w) = window_of(r) {
            let a = &mut acc[w as usize];
            a.add_n(r, delay, 1);
            if let Some(prev) = prev_delay {
                a.jitter_sum_ns += u128::from(prev.abs_diff(delay));
                a.jitter_pairs += 1;
            }
            a.rfc3550_ns = rfc3550.value_ns();
            a.lost += u128::from(revealed);
        }
        prev_delay = Some(delay);
    }

    Ok(acc
        .iter()
        .enumerate()
        .map(|(k, a)| {
            let start_ns = origin_ns.saturating_add(k as u64 * window_ns);
            a.interval(start_ns, window_ns)
        })
        .collect())
}

/// The interval series built as records arrive, in memory proportional to the number of
/// windows (never to the number of packets): the streaming form of [`try_intervals`],
/// with the origin at the first record's receive time.
///
/// Loss is charged as in [`try_intervals`]: a gap is charged to the window of the record
/// that revealed it ([`IntervalSeries::charge_lost`]), and a number that arrives later
/// within the reordering window is taken back from that window
/// ([`IntervalSeries::take_back_lost`]); [`crate::seq::SeqState`] says which.
#[derive(Clone, Debug, PartialEq)]
pub struct IntervalSeries {
    window_ns: u64,
    max_windows: u64,
    origin_ns: Option<u64>,
    windows: Vec<Accumulator>,
    prev_delay_ns: Option<i64>,
    rfc3550: Rfc3550Jitter,
    error: Option<IntervalError>,
}

impl IntervalSeries {
    /// A series of `window_ns` windows, at most [`MAX_WINDOWS`] of them.
    pub fn new(window_ns: u64) -> Result<Self, IntervalError> {
        Self::with_max_windows(window_ns, MAX_WINDOWS)
    }

    /// A series of at most `max_windows` windows (a bound below [`MAX_WINDOWS`]): a
    /// record beyond it ends the series with [`IntervalError::TooManyWindows`].
    pub fn with_max_windows(window_ns: u64, max_windows: u64) -> Result<Self, IntervalError> {
        if window_ns == 0 {
            return Err(IntervalError::ZeroWindow);
        }
        Ok(Self {
            window_ns,
            max_windows: max_windows.min(MAX_WINDOWS),
            origin_ns: None,
            windows: Vec::new(),
            prev_delay_ns: None,
            rfc3550: Rfc3550Jitter::new(),
            error: None,
        })
    }

    /// Takes the next record in arrival order (`delay_ns` is its delay); returns the
    /// index of the window it fell in, `None` before the origin or after an error.
    pub fn handle_record(&mut self, r: &RxRecord, delay_ns: i64) -> Option<u64> {
        self.handle_records(r, delay_ns, 1)
    }

    /// Takes `n` (≥ 1) records in a row that differ from `r` in their sequence numbers
    /// only, as `n` calls of [`Self::handle_record`]: they fall in one window, its index
    /// returned.
    pub fn handle_records(&mut self, r: &RxRecord, delay_ns: i64, n: u64) -> Option<u64> {
        let n = n.max(1);
        self.rfc3550.update_n(delay_ns, n);
        let prev = self.prev_delay_ns.replace(delay_ns);
        let origin = *self.origin_ns.get_or_insert(r.rx_ns);
        if self.error.is_some() {
            return None;
        }
        let w = r.rx_ns.checked_sub(origin)? / self.window_ns;
        if w >= self.max_windows {
            self.error = Some(IntervalError::TooManyWindows {
                windows: w.saturating_add(1),
                max: self.max_windows,
            });
            self.windows = Vec::new();
            return None;
        }
        // Lossless: w < max_windows ≤ MAX_WINDOWS.
        let i = w as usize;
        if self.windows.len() <= i {
            self.windows.resize(i + 1, Accumulator::default());
        }
        let a = &mut self.windows[i];
        a.add_n(r, delay_ns, n);
        // The pair with the record before, then n − 1 pairs of equal delays.
        if let Some(prev) = prev {
            a.jitter_sum_ns += u128::from(prev.abs_diff(delay_ns));
            a.jitter_pairs += 1;
        }
        a.jitter_pairs += n - 1;
        a.rfc3550_ns = self.rfc3550.value_ns();
        Some(w)
    }

    /// Charges `n` newly revealed missing numbers to window `w`.
    pub fn charge_lost(&mut self, w: u64, n: u64) {
        if let Some(a) = self.windows.get_mut(w as usize) {
            // Sequence numbers from untrusted logs may jump by nearly 2^64, in two flows:
            // the count is wide enough for them all (saturated when reported).
            a.lost += u128::from(n);
        }
    }

    /// A number charged to window `w` arrived after all: one loss fewer.
    pub fn take_back_lost(&mut self, w: u64) {
        if let Some(a) = self.windows.get_mut(w as usize) {
            a.lost = a.lost.saturating_sub(1);
        }
    }

    /// Windows so far (the last may still be filling).
    pub fn len(&self) -> u64 {
        self.windows.len() as u64
    }

    /// True before the first window.
    pub fn is_empty(&self) -> bool {
        self.windows.is_empty()
    }

    /// The series, or why there is none.
    pub fn windows(&self) -> Result<Vec<Interval>, IntervalError> {
        if let Some(e) = self.error {
            return Err(e);
        }
        let origin = self.origin_ns.unwrap_or(0);
        Ok(self
            .windows
            .iter()
            .enumerate()
            .map(|(k, a)| {
                let start_ns = origin.saturating_add(k as u64 * self.window_ns);
                a.interval(start_ns, self.window_ns)
            })
            .collect())
    }
}

/// Running sums of one window.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
struct Accumulator {
    packets: u64,
    bytes: u64,
    delay_sum_ns: i128,
    delay_min_ns: i64,
    delay_max_ns: i64,
    jitter_sum_ns: u128,
    jitter_pairs: u64,
    rfc3550_ns: Option<f64>,
    /// Wider than the reported count: gaps of nearly 2^64 in several flows add up.
    lost: u128,
}

impl Accumulator {
    fn add_n(&mut self, r: &RxRecord, delay_ns: i64, n: u64) {
        if self.packets == 0 {
            self.delay_min_ns = delay_ns;
            self.delay_max_ns = delay_ns;
        }
        self.packets += n;
        self.bytes += u64::from(r.size_bytes) * n;
        self.delay_sum_ns += i128::from(delay_ns) * i128::from(n);
        self.delay_min_ns = self.delay_min_ns.min(delay_ns);
        self.delay_max_ns = self.delay_max_ns.max(delay_ns);
    }

    fn interval(&self, start_ns: u64, window_ns: u64) -> Interval {
        let mut interval = Interval {
            start_ns,
            end_ns: start_ns.saturating_add(window_ns),
            ..Interval::default()
        };
        if self.packets == 0 {
            return interval;
        }
        let per_second = |count: f64| count * 1e9 / window_ns as f64;
        let n = self.packets as f64;
        interval.packets = self.packets;
        interval.bytes = self.bytes;
        interval.bitrate_bps = Some(per_second(self.bytes as f64 * 8.0));
        interval.rate_pps = Some(per_second(n));
        interval.delay_mean_ns = Some(self.delay_sum_ns as f64 / n);
        interval.delay_min_ns = Some(self.delay_min_ns);
        interval.delay_max_ns = Some(self.delay_max_ns);
        interval.jitter_ditg_ns =
            (self.jitter_pairs > 0).then(|| self.jitter_sum_ns as f64 / self.jitter_pairs as f64);
        interval.jitter_rfc3550_ns = self.rfc3550_ns;
        interval.lost = Some(u64::try_from(self.lost).unwrap_or(u64::MAX));
        interval
    }
}

/// Distinct received sequence numbers per flow, ascending.
fn received_seqs(records: &[RxRecord]) -> BTreeMap<u32, Vec<u64>> {
    let mut seqs: BTreeMap<u32, Vec<u64>> = BTreeMap::new();
    for r in records {
        seqs.entry(r.flow).or_default().push(r.seq);
    }
    for s in seqs.values_mut() {
        s.sort_unstable();
        s.dedup();
    }
    seqs
}

/// How many numbers in `from..to` are absent from the ascending `received`.
fn missing_in(received: &[u64], from: u64, to: u64) -> u64 {
    let present = received.partition_point(|&s| s < to) - received.partition_point(|&s| s < from);
    (to - from) - present as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    const BASE_NS: u64 = 1_700_000_000_000_000_000;
    const MS: u64 = 1_000_000;

    fn rx(flow: u32, seq: u64, rx_offset_ns: u64, delay_ns: u64, size_bytes: u32) -> RxRecord {
        RxRecord {
            flow,
            seq,
            size_bytes,
            tx_ns: BASE_NS + rx_offset_ns - delay_ns,
            rx_ns: BASE_NS + rx_offset_ns,
            ..RxRecord::default()
        }
    }

    /// Window 0: seq 0, 1. Window 1: nothing. Window 2: seq 4 (revealing 2
    /// and 3), then 3 (reordered, so only 2 is lost).
    fn records() -> Vec<RxRecord> {
        vec![
            rx(1, 0, 100_000, 50_000, 125),
            rx(1, 1, 600_000, 70_000, 125),
            rx(1, 4, 2_100_000, 60_000, 250),
            rx(1, 3, 2_500_000, 90_000, 250),
        ]
    }

    #[test]
    fn series_with_an_empty_middle_window() {
        let series = intervals(&records(), MS, BASE_NS);
        assert_eq!(series.len(), 3);

        assert_eq!(
            series[0],
            Interval {
                start_ns: BASE_NS,
                end_ns: BASE_NS + MS,
                packets: 2,
                bytes: 250,
                bitrate_bps: Some(2_000_000.0),
                rate_pps: Some(2_000.0),
                delay_mean_ns: Some(60_000.0),
                delay_min_ns: Some(50_000),
                delay_max_ns: Some(70_000),
                jitter_ditg_ns: Some(20_000.0),
                jitter_rfc3550_ns: Some(1_250.0),
                lost: Some(0),
            }
        );
        assert_eq!(
            series[1],
            Interval {
                start_ns: BASE_NS + MS,
                end_ns: BASE_NS + 2 * MS,
                ..Interval::default()
            }
        );
        // Pairs ending here: |60−70| µs (first in window 0) and |90−60| µs.
        // RFC 3550: 1250 → +(10000−1250)/16 = 1796.875 → +(30000−1796.875)/16.
        assert_eq!(
            series[2],
            Interval {
                start_ns: BASE_NS + 2 * MS,
                end_ns: BASE_NS + 3 * MS,
                packets: 2,
                bytes: 500,
                bitrate_bps: Some(4_000_000.0),
                rate_pps: Some(2_000.0),
                delay_mean_ns: Some(75_000.0),
                delay_min_ns: Some(60_000),
                delay_max_ns: Some(90_000),
                jitter_ditg_ns: Some(20_000.0),
                jitter_rfc3550_ns: Some(3_559.570_312_5),
                lost: Some(1),
            }
        );
    }

    #[test]
    fn empty_window_serialises_as_null_not_zero() {
        let series = intervals(&records(), MS, BASE_NS);
        let json = serde_json::to_value(series[1]).unwrap();
        assert_eq!(json["packets"], 0);
        assert_eq!(json["bytes"], 0);
        for field in [
            "bitrate_bps",
            "rate_pps",
            "delay_mean_ns",
            "delay_min_ns",
            "delay_max_ns",
            "jitter_ditg_ns",
            "jitter_rfc3550_ns",
            "lost",
        ] {
            assert!(json[field].is_null(), "{field} is {}", json[field]);
        }
        let back: Interval = serde_json::from_value(json).unwrap();
        assert_eq!(back, series[1]);
    }

    #[test]
    fn records_before_origin_only_precede() {
        // Origin at 1 ms: seq 0 and 1 are before it; window 0 is then empty
        // and window 1 gets the pair (seq 1 → seq 4).
        let series = intervals(&records(), MS, BASE_NS + MS);
        assert_eq!(series.len(), 2);
        assert_eq!(series[0].packets, 0);
        assert_eq!(series[1].packets, 2);
        assert_eq!(series[1].jitter_ditg_ns, Some(20_000.0));
        assert_eq!(series[1].lost, Some(1));
    }

    #[test]
    fn loss_is_charged_per_flow() {
        // Flow 1 skips seq 1, flow 2 skips 1 and 2; interleaved arrivals.
        let records = [
            rx(1, 0, 0, 10, 1),
            rx(2, 0, 10, 10, 1),
            rx(1, 2, 20, 10, 1),
            rx(2, 3, 1_500, 10, 1),
        ];
        let series = intervals(&records, 1_000, BASE_NS);
        assert_eq!(series[0].lost, Some(1));
        assert_eq!(series[1].lost, Some(2));
    }

    /// Found by the `meter_diff` fuzz target: gaps of nearly 2^64 in two flows, revealed
    /// in one window, overflowed the batch count (a panic), and the streaming count,
    /// saturated as it was charged, came out one lower for each late packet after.
    #[test]
    fn huge_gaps_in_two_flows_add_up_then_saturate() {
        let records = [
            rx(1, u64::MAX - 1, 0, 10, 1),
            rx(2, 10, 10, 10, 1),
            rx(2, 3, 20, 10, 1),
        ];
        let batch = try_intervals(&records, MS, BASE_NS).unwrap();
        assert_eq!(batch[0].lost, Some(u64::MAX));
        let mut meter = crate::SummaryMeter::new().with_intervals(IntervalSeries::new(MS).unwrap());
        for r in &records {
            meter.handle_record(r);
        }
        assert_eq!(meter.intervals().unwrap().unwrap(), batch);
    }

    #[test]
    fn bad_windows_are_errors() {
        assert_eq!(
            try_intervals(&records(), 0, BASE_NS),
            Err(IntervalError::ZeroWindow)
        );
        assert_eq!(intervals(&records(), 0, BASE_NS), Vec::new());
        let far = [rx(1, 0, 0, 0, 1), rx(1, 1, u64::MAX - BASE_NS, 0, 1)];
        assert!(matches!(
            try_intervals(&far, 1, BASE_NS),
            Err(IntervalError::TooManyWindows {
                max: MAX_WINDOWS,
                ..
            })
        ));
        assert_eq!(intervals(&[], MS, 0), Vec::new());
        // Every record before the origin: no window at all.
        assert_eq!(try_intervals(&records(), MS, u64::MAX), Ok(Vec::new()));
    }
}
