//! Loss, loss periods, duplicates and reordering from sequence numbers.
//!
//! Definitions (per flow; sequence numbers start at 0):
//! - **expected** = packets sent when the sender told us, else `max_seq + 1`
//!   (then losses after the last received packet are invisible).
//! - **lost** = sequence numbers in `0..expected` never received, so a
//!   duplicate can never hide a loss (D-ITG's rule can, see [`DitgLoss`]).
//! - **loss periods** ("bursts"): maximal runs of consecutive lost sequence
//!   numbers in `0..expected` (RFC 3357 §4 "loss period"; the same section's
//!   "loss distance" is the gap between them).
//! - **duplicate**: a packet whose sequence number was already received.
//! - **reordered** (RFC 4737 §3.3): a packet whose sequence number is below
//!   `NextExp` (= largest sequence number seen so far + 1, initially 0) and is
//!   not a duplicate.
//! - **reordering extent** (RFC 4737 §4.2): for a reordered packet at arrival
//!   position `i`, `i − j` where `j` is the earliest arrival position holding a
//!   larger sequence number; positions count non-duplicate packets only.

use std::collections::{BTreeMap, HashSet};

use serde::{Deserialize, Serialize};

/// Loss and ordering metrics of one flow, or of several flows summed.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Loss {
    /// Packets the sender reports having sent; `None` when unknown.
    pub sent: Option<u64>,
    /// `sent` when known, else `max_seq + 1` (0 when nothing was received).
    pub expected: u64,
    /// Sequence numbers in `0..expected` never received.
    pub lost: u64,
    /// `lost / expected · 100`; `None` when `expected == 0`.
    pub loss_pct: Option<f64>,
    /// Number of loss periods (maximal runs of lost sequence numbers).
    pub bursts: u64,
    /// `lost / bursts`; `None` when there was no loss.
    pub mean_burst_len: Option<f64>,
    /// Longest loss period in packets (0 when no loss).
    pub max_burst_len: u64,
    /// Loss-period length → number of such periods (RFC 3357 distribution).
    pub burst_len_hist: BTreeMap<u64, u64>,
    /// Packets whose sequence number had already been received.
    pub duplicates: u64,
    /// Reordered packets (RFC 4737 §3.3).
    pub reordered: u64,
    /// Largest reordering extent in packets (RFC 4737 §4.2); `None` when
    /// nothing was reordered.
    pub max_reorder_extent: Option<u64>,
    /// Distinct received sequence numbers `>= expected` (only possible when
    /// `sent` is given and smaller than what arrived: a sender/receiver
    /// mismatch worth flagging).
    pub beyond_expected: u64,
    /// Packets older than the streaming meter's reordering window
    /// ([`crate::seq`]): a duplicate or an original whose loss was already final
    /// cannot be told apart there, so they are neither duplicates nor reordered,
    /// and their numbers stay lost. Always 0 from the batch computation.
    #[serde(default)]
    pub outside_window: u64,
    /// The same packets judged by D-ITG's rules, for comparison with ITGDec.
    pub ditg: DitgLoss,
}

/// Loss as D-ITG's ITGDec computes it, for side-by-side comparison.
///
/// Source: D-ITG 2.8.1 `src/ITGDec/ITGDecod.cpp` (jbucar/ditg 2aafb67),
/// `setline()` lines 1100–1111 and the report at line 816: with D-ITG's
/// sequence numbers starting at 1, per received packet
/// `dropped = maxSeq − 1 + 1 − recv + dup`, where `dup` only grows when
/// `recv − dup` exceeds the range `maxSeq`; a loss event is counted when a
/// packet's number exceeds `dropped + recv`, and uncounted when a late packet
/// shrinks `dropped`. Percent is `dropped / (recv + dropped) · 100` (recv
/// includes duplicates). We replay that with `seq + 1`. Consequences: losses
/// after the last received packet are invisible, a duplicate can mask a loss,
/// and the first packet's gap is never an event. One deviation: D-ITG's
/// unsigned event counter can wrap below zero; ours saturates at 0.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct DitgLoss {
    /// ITGDec "Packets dropped".
    pub dropped: u64,
    /// ITGDec "Packets dropped" percentage (0 when nothing dropped, as ITGDec
    /// prints).
    pub loss_pct: f64,
    /// ITGDec loss events (printed only in debug builds).
    pub loss_events: u64,
    /// ITGDec "Average loss-burst size" = `dropped / loss_events`; `None` when
    /// there is no event (ITGDec prints 0 without loss and divides by zero
    /// otherwise).
    pub mean_burst_len: Option<f64>,
}

impl Loss {
    /// Metrics of one flow's sequence numbers in arrival order; `sent` is the
    /// sender's packet count when known.
    pub fn from_seqs(seqs: &[u64], sent: Option<u64>) -> Self {
        let expected =
            sent.unwrap_or_else(|| seqs.iter().max().map_or(0, |&max| max.saturating_add(1)));
        let order = Ordering::from_seqs(seqs);
        let mut unique: Vec<u64> = order.seen.into_iter().collect();
        unique.sort_unstable();
        let in_range = unique.partition_point(|&s| s < expected);
        let periods = loss_periods(&unique[..in_range], expected);
        let lost = periods.iter().sum::<u64>();
        let mut burst_len_hist = BTreeMap::new();
        for &len in &periods {
            *burst_len_hist.entry(len).or_insert(0) += 1;
        }
        Self {
            sent,
            expected,
            lost,
            loss_pct: percent(lost, expected),
            bursts: periods.len() as u64,
            mean_burst_len: ratio(lost, periods.len() as u64),
            max_burst_len: periods.iter().copied().max().unwrap_or(0),
            burst_len_hist,
            duplicates: order.duplicates,
            reordered: order.reordered,
            max_reorder_extent: order.max_extent,
            beyond_expected: (unique.len() - in_range) as u64,
            outside_window: 0,
            ditg: DitgLoss::from_seqs(seqs),
        }
    }

    /// Sum of per-flow metrics; `received_packets` (all flows, duplicates
    /// included) is needed for D-ITG's percentage. `sent` is known only if it
    /// is known for every part.
    pub fn combine(parts: &[Self], received_packets: u64) -> Self {
        let mut total = Self {
            sent: (!parts.is_empty()).then_some(0),
            ..Self::default()
        };
        for p in parts {
            total.sent = total.sent.zip(p.sent).map(|(a, b)| a.saturating_add(b));
            total.expected = total.expected.saturating_add(p.expected);
            total.lost = total.lost.saturating_add(p.lost);
            total.bursts += p.bursts;
            total.max_burst_len = total.max_burst_len.max(p.max_burst_len);
            for (&len, &count) in &p.burst_len_hist {
                *total.burst_len_hist.entry(len).or_insert(0) += count;
            }
            total.duplicates += p.duplicates;
            total.reordered += p.reordered;
            total.max_reorder_extent = total.max_reorder_extent.max(p.max_reorder_extent);
            total.beyond_expected += p.beyond_expected;
            total.outside_window += p.outside_window;
            total.ditg.dropped = total.ditg.dropped.saturating_add(p.ditg.dropped);
            total.ditg.loss_events += p.ditg.loss_events;
        }
        total.loss_pct = percent(total.lost, total.expected);
        total.mean_burst_len = ratio(total.lost, total.bursts);
        total.ditg.finish(received_packets);
        total
    }
}

impl DitgLoss {
    /// Replays ITGDec's `setline()` over one flow's sequence numbers in
    /// arrival order (see the type doc).
    pub fn from_seqs(seqs: &[u64]) -> Self {
        // i128: D-ITG's quantities are differences of u64 sequence numbers.
        let (mut recv, mut dropped, mut dup, mut max, mut events) = (0i128, 0i128, 0i128, 0, 0u64);
        for (k, &seq) in seqs.iter().enumerate() {
            let s = i128::from(seq) + 1;
            recv += 1;
            if k == 0 {
                // The first packet only initialises (ITGDecod.cpp `flownum == 0` branch).
                max = s;
                continue;
            }
            max = max.max(s);
            if s > dropped + recv {
                events += 1;
            }
            if max < recv - dup {
                dup = recv - max;
                dropped = 0;
            } else {
                let now = max - recv + dup;
                if now < dropped {
                    events = events.saturating_sub(1);
                }
                dropped = now;
            }
        }
        Self::from_counts(
            u64::try_from(dropped).unwrap_or(u64::MAX),
            events,
            seqs.len() as u64,
        )
    }

    /// The figures from ITGDec's final `dropped` and loss-event counts and the packets
    /// received (duplicates included).
    pub fn from_counts(dropped: u64, loss_events: u64, received_packets: u64) -> Self {
        let mut ditg = Self {
            dropped,
            loss_events,
            ..Self::default()
        };
        ditg.finish(received_packets);
        ditg
    }

    /// Derives the ratios from `dropped` and `loss_events` as ITGDec prints them.
    fn finish(&mut self, received_packets: u64) {
        self.loss_pct = if received_packets > 0 && self.dropped > 0 {
            100.0 * self.dropped as f64 / (received_packets as f64 + self.dropped as f64)
        } else {
            0.0
        };
        self.mean_burst_len = ratio(self.dropped, self.loss_events);
    }
}

/// Lengths of the maximal runs of numbers in `0..expected` missing from the
/// ascending, distinct `received` (all `< expected`).
fn loss_periods(received: &[u64], expected: u64) -> Vec<u64> {
    let mut periods = Vec::new();
    let mut next = 0;
    for &s in received {
        if s > next {
            periods.push(s - next);
        }
        next = s + 1;
    }
    if expected > next {
        periods.push(expected - next);
    }
    periods
}

/// Duplicate and reordering counts from one pass in arrival order.
struct Ordering {
    seen: HashSet<u64>,
    duplicates: u64,
    reordered: u64,
    max_extent: Option<u64>,
}

impl Ordering {
    fn from_seqs(seqs: &[u64]) -> Self {
        let mut order = Self {
            seen: HashSet::with_capacity(seqs.len()),
            duplicates: 0,
            reordered: 0,
            max_extent: None,
        };
        // In-order packets raise NextExp, so their (position, seq) pairs have
        // strictly increasing seq: the earliest position holding a seq larger
        // than s is found by binary search.
        let mut in_order: Vec<(u64, u64)> = Vec::new();
        let mut next_expected = 0u64;
        let mut position = 0u64;
        for &s in seqs {
            if !order.seen.insert(s) {
                order.duplicates += 1;
                continue;
            }
            if s >= next_expected {
                next_expected = s.saturating_add(1);
                in_order.push((position, s));
            } else {
                order.reordered += 1;
                let first_larger = in_order.partition_point(|&(_, seq)| seq <= s);
                // Exists: s < next_expected = last in-order seq + 1 ⇒ that seq > s.
                if let Some(&(j, _)) = in_order.get(first_larger) {
                    order.max_extent = order.max_extent.max(Some(position - j));
                }
            }
            position += 1;
        }
        order
    }
}

/// `part / whole · 100`; `None` when `whole == 0`.
pub(crate) fn percent(part: u64, whole: u64) -> Option<f64> {
    (whole > 0).then(|| part as f64 / whole as f64 * 100.0)
}

/// `a / b`; `None` when `b == 0`.
pub(crate) fn ratio(a: u64, b: u64) -> Option<f64> {
    (b > 0).then(|| a as f64 / b as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loss_duplicates_reordering_and_bursts_with_sent_count() {
        // Arrival 0,1,2,4,3,3,7 of 9 sent: 5,6 and 8 never arrive.
        let loss = Loss::from_seqs(&[0, 1, 2, 4, 3, 3, 7], Some(9));
        assert_eq!(loss.sent, Some(9));
        assert_eq!(loss.expected, 9);
        assert_eq!(loss.lost, 3);
        assert_eq!(loss.loss_pct, Some(3.0 / 9.0 * 100.0));
        // Loss periods {5,6} and {8}.
        assert_eq!(loss.bursts, 2);
        assert_eq!(loss.mean_burst_len, Some(1.5));
        assert_eq!(loss.max_burst_len, 2);
        assert_eq!(loss.burst_len_hist, BTreeMap::from([(1, 1), (2, 1)]));
        // The second 3 is a duplicate, the first 3 (after 4) is reordered
        // with extent 1 (position 4 vs 4's position 3).
        assert_eq!(loss.duplicates, 1);
        assert_eq!(loss.reordered, 1);
        assert_eq!(loss.max_reorder_extent, Some(1));
        assert_eq!(loss.beyond_expected, 0);
    }

    #[test]
    fn ditg_rules_on_the_same_sequence() {
        // Replayed by hand with D-ITG numbers 1,2,3,5,4,4,8: the gap at 5
        // opens an event, 4 closes it (event undone), the duplicate 4 bumps
        // dup to 1, and 8 opens one event with dropped = 8 − 7 + 1 = 2.
        let ditg = DitgLoss::from_seqs(&[0, 1, 2, 4, 3, 3, 7]);
        assert_eq!(ditg.dropped, 2);
        assert_eq!(ditg.loss_events, 1);
        assert_eq!(ditg.loss_pct, 100.0 * 2.0 / 9.0);
        assert_eq!(ditg.mean_burst_len, Some(2.0));
    }

    #[test]
    fn expected_defaults_to_max_seq_plus_one() {
        let loss = Loss::from_seqs(&[0, 1, 2, 4, 3, 3, 7], None);
        assert_eq!(loss.sent, None);
        assert_eq!(loss.expected, 8);
        assert_eq!(loss.lost, 2);
        assert_eq!(loss.loss_pct, Some(25.0));
        assert_eq!(loss.bursts, 1);
        assert_eq!(loss.mean_burst_len, Some(2.0));
        assert_eq!(loss.max_burst_len, 2);
    }

    #[test]
    fn leading_and_trailing_losses_are_periods() {
        // 10 sent, received 2,3,7: periods {0,1}, {4,5,6}, {8,9}.
        let loss = Loss::from_seqs(&[2, 3, 7], Some(10));
        assert_eq!(loss.lost, 7);
        assert_eq!(loss.bursts, 3);
        assert_eq!(loss.burst_len_hist, BTreeMap::from([(2, 2), (3, 1)]));
        assert_eq!(loss.max_burst_len, 3);
        assert_eq!(loss.reordered, 0);
    }

    #[test]
    fn a_duplicate_cannot_hide_a_loss() {
        // 0,2,0: seq 1 lost. D-ITG counts 1 dropped after seq 2, then the late
        // duplicate makes recv 3 == range 3 and it reports none.
        let loss = Loss::from_seqs(&[0, 2, 0], None);
        assert_eq!(loss.lost, 1);
        assert_eq!(loss.duplicates, 1);
        assert_eq!(loss.ditg.dropped, 0);
        assert_eq!(loss.ditg.loss_pct, 0.0);
        assert_eq!(loss.ditg.mean_burst_len, None);
    }

    #[test]
    fn reorder_extent_counts_positions_back_to_first_larger_seq() {
        // Positions 0..: 0,1,4,5,2,3 → 2 and 3 reordered; for 2 (pos 4) the
        // earliest larger seq is 4 at pos 2 → extent 2; for 3 (pos 5) → 3.
        let loss = Loss::from_seqs(&[0, 1, 4, 5, 2, 3], None);
        assert_eq!(loss.reordered, 2);
        assert_eq!(loss.max_reorder_extent, Some(3));
        assert_eq!(loss.lost, 0);
    }

    #[test]
    fn nothing_received_of_known_sent_is_one_long_burst() {
        let loss = Loss::from_seqs(&[], Some(4));
        assert_eq!(loss.expected, 4);
        assert_eq!(loss.lost, 4);
        assert_eq!(loss.loss_pct, Some(100.0));
        assert_eq!(loss.bursts, 1);
        assert_eq!(loss.max_burst_len, 4);
        assert_eq!(loss.ditg, DitgLoss::default());
    }

    #[test]
    fn nothing_received_nothing_known() {
        let loss = Loss::from_seqs(&[], None);
        assert_eq!(loss.expected, 0);
        assert_eq!(loss.loss_pct, None);
        assert_eq!(loss.mean_burst_len, None);
    }

    #[test]
    fn seqs_beyond_sent_are_flagged_not_lost() {
        let loss = Loss::from_seqs(&[0, 1, 5], Some(2));
        assert_eq!(loss.expected, 2);
        assert_eq!(loss.lost, 0);
        assert_eq!(loss.beyond_expected, 1);
    }

    #[test]
    fn extreme_sequence_numbers_do_not_overflow() {
        let loss = Loss::from_seqs(&[u64::MAX, 0, u64::MAX], None);
        assert_eq!(loss.expected, u64::MAX);
        assert_eq!(loss.duplicates, 1);
        assert_eq!(loss.reordered, 1);
        assert_eq!(loss.max_reorder_extent, Some(1));
        // expected saturates at u64::MAX, so seq u64::MAX itself is beyond it.
        assert_eq!(loss.beyond_expected, 1);
        assert_eq!(loss.lost, u64::MAX - 1);
    }

    #[test]
    fn combine_sums_flows() {
        let a = Loss::from_seqs(&[0, 1, 2, 4, 3, 3, 7], Some(9));
        let b = Loss::from_seqs(&[0, 2], Some(4));
        let total = Loss::combine(&[a, b], 9);
        assert_eq!(total.sent, Some(13));
        assert_eq!(total.expected, 13);
        // a: 3 lost in 2 periods; b: {1}, {3} → 2 lost in 2 periods.
        assert_eq!(total.lost, 5);
        assert_eq!(total.loss_pct, Some(5.0 / 13.0 * 100.0));
        assert_eq!(total.bursts, 4);
        assert_eq!(total.mean_burst_len, Some(1.25));
        assert_eq!(total.max_burst_len, 2);
        assert_eq!(total.burst_len_hist, BTreeMap::from([(1, 3), (2, 1)]));
        assert_eq!(total.duplicates, 1);
        assert_eq!(total.reordered, 1);
        // D-ITG: a dropped 2 in 1 event; b (numbers 1,3) dropped 1 in 1 event.
        assert_eq!(total.ditg.dropped, 3);
        assert_eq!(total.ditg.loss_events, 2);
        assert_eq!(total.ditg.loss_pct, 100.0 * 3.0 / 12.0);
        assert_eq!(total.ditg.mean_burst_len, Some(1.5));
    }

    #[test]
    fn combine_needs_every_sent_count() {
        let a = Loss::from_seqs(&[0], Some(1));
        let b = Loss::from_seqs(&[0], None);
        assert_eq!(Loss::combine(&[a, b], 2).sent, None);
        assert_eq!(Loss::combine(&[], 0).sent, None);
    }
}
