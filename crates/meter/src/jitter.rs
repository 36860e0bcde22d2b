//! Every delay-variation ("jitter") definition in use, side by side.
//!
//! Notation: `S_i` send stamp, `R_i` receive stamp, `D_i = R_i − S_i` (one-way
//! delay, or RTT for echoes), see [`RxRecord::delay_ns`].
//!
//! | Field | Definition | Order / selection |
//! |---|---|---|
//! | [`Jitter::ditg_ns`] | D-ITG ITGDec: `Σ_{i=2..N} \|D_i − D_{i−1}\| / (N−1)` | arrival order, every record |
//! | [`Jitter::rfc3550_ns`] | RFC 3550 EWMA: `J += (\|D_i − D_{i−1}\| − J)/16`, value after the last packet | arrival order, every record |
//! | [`Jitter::ipdv`] | RFC 3393 / RFC 5481 §4.1 IPDV: `D(s) − D(s−1)` | consecutive **sequence numbers**, both received; first copy of duplicates |
//! | `pdv_p*_ns` | RFC 5481 §4.2 PDV: `D_i − D_min`, nearest-rank percentiles | every record |
//!
//! All four estimate how much adjacent packets' delays differ, but they are not
//! interchangeable: D-ITG averages over the whole flow, RFC 3550 is a ~16-packet
//! memory snapshot, IPDV pairs by sequence number and skips pairs around a
//! loss, and PDV measures against the minimum delay (RFC 5481 recommends it
//! for most uses, e.g. de-jitter buffer sizing).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::record::RxRecord;
use crate::stats::percentile_nearest_rank;

/// Every jitter definition of one set of records; each is `None` when
/// undefined (too few packets or pairs).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Jitter {
    /// D-ITG "Average jitter": mean `|D_i − D_{i−1}|` over consecutive records
    /// in arrival order, divided by `N − 1`; `None` when `N < 2`.
    pub ditg_ns: Option<f64>,
    /// RFC 3550 interarrival jitter after the last packet; `None` when `N < 2`.
    pub rfc3550_ns: Option<f64>,
    /// IPDV by sequence number; `None` when no two consecutive sequence
    /// numbers were both received.
    pub ipdv: Option<IpdvStats>,
    /// Median PDV (`D_i − D_min`), nearest rank; `None` when no records.
    pub pdv_p50_ns: Option<u64>,
    /// 95th percentile PDV, nearest rank.
    pub pdv_p95_ns: Option<u64>,
    /// 99th percentile PDV, nearest rank.
    pub pdv_p99_ns: Option<u64>,
}

impl Jitter {
    /// Every definition over `records` (arrival order).
    ///
    /// Arrival-order definitions (D-ITG, RFC 3550, PDV) treat the slice as one
    /// stream even if it holds several flows (that is D-ITG's TOTAL); IPDV
    /// always pairs within a flow, keyed on `(flow, seq)`.
    pub fn from_records(records: &[RxRecord]) -> Self {
        let delays: Vec<i64> = records.iter().map(RxRecord::delay_ns).collect();
        Self::from_parts(records, &delays)
    }

    /// As [`Jitter::from_records`], with `delays_ns[i] == records[i].delay_ns()`
    /// already computed by the caller.
    pub(crate) fn from_parts(records: &[RxRecord], delays_ns: &[i64]) -> Self {
        let pdv = pdv_sorted_ns(delays_ns);
        Self {
            ditg_ns: ditg_jitter_ns(delays_ns),
            rfc3550_ns: rfc3550_jitter_ns(delays_ns),
            ipdv: IpdvStats::from_records(records),
            pdv_p50_ns: percentile_nearest_rank(&pdv, 50.0),
            pdv_p95_ns: percentile_nearest_rank(&pdv, 95.0),
            pdv_p99_ns: percentile_nearest_rank(&pdv, 99.0),
        }
    }
}

/// D-ITG jitter of delays in arrival order: `Σ_{i=2..N} |D_i − D_{i−1}| / (N−1)`;
/// `None` when fewer than two delays.
///
/// Source: D-ITG 2.8.1 `src/ITGDec/ITGDecod.cpp` (jbucar/ditg 2aafb67),
/// lines 1092–1093 accumulate `fabs(lastdelay − currentdelay)` per flow and
/// line 792 divides by `pktrecv − 1`; D-ITG manual §3.5.3 "Figure 2: Jitter
/// calculation formula". Unlike ITGDec, which prints 0 for a single packet,
/// we return `None`.
pub fn ditg_jitter_ns(delays_ns: &[i64]) -> Option<f64> {
    if delays_ns.len() < 2 {
        return None;
    }
    // Exact integer sum; each |ΔD| < 2^64 and there are < 2^64 of them.
    let sum: u128 = delays_ns
        .windows(2)
        .map(|w| u128::from(w[1].abs_diff(w[0])))
        .sum();
    Some(sum as f64 / (delays_ns.len() - 1) as f64)
}

/// RFC 3550 interarrival jitter of delays in arrival order, after the last
/// one; `None` when fewer than two delays. See [`Rfc3550Jitter`].
pub fn rfc3550_jitter_ns(delays_ns: &[i64]) -> Option<f64> {
    let mut jitter = Rfc3550Jitter::new();
    for &d in delays_ns {
        jitter.update(d);
    }
    jitter.value_ns()
}

/// Running RFC 3550 interarrival jitter estimator, fed one delay per packet in
/// arrival order (the live receiver and interval series use it directly).
///
//= https://www.rfc-editor.org/rfc/rfc3550#section-6.4.1
//# If Si is the RTP timestamp from packet i, and Ri is the time of arrival
//# in RTP timestamp units for packet i, then for two packets i and j, D may
//# be expressed as
//#    D(i,j) = (Rj - Ri) - (Sj - Si) = (Rj - Sj) - (Ri - Si)
//# [...]
//#    J(i) = J(i-1) + (|D(i-1,i)| - J(i-1))/16
///
/// `D(i−1,i)` is the difference of consecutive transit times, i.e. of our
/// `delay_ns`. The first packet only initialises the previous transit (J stays
/// 0, RFC 3550 §A.8); we keep J in `f64` ns rather than A.8's scaled integer,
/// so the value is the exact recurrence, not A.8's rounded one.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Rfc3550Jitter {
    prev_delay_ns: Option<i64>,
    jitter_ns: f64,
    pairs: u64,
}

impl Rfc3550Jitter {
    /// An estimator that has seen no packet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Feeds the delay of the next packet in arrival order.
    pub fn update(&mut self, delay_ns: i64) {
        if let Some(prev) = self.prev_delay_ns {
            let d = prev.abs_diff(delay_ns) as f64;
            self.jitter_ns += (d - self.jitter_ns) / 16.0;
            self.pairs += 1;
        }
        self.prev_delay_ns = Some(delay_ns);
    }

    /// Feeds `n` packets in a row with one delay, as `n` calls of [`Self::update`]: the
    /// same floating-point steps, so the same J to the bit.
    pub fn update_n(&mut self, delay_ns: i64, n: u64) {
        if n == 0 {
            return;
        }
        self.update(delay_ns);
        // Every next pair's |D(i−1, i)| is 0.
        for _ in 1..n {
            if self.jitter_ns == 0.0 {
                break;
            }
            self.jitter_ns += (0.0 - self.jitter_ns) / 16.0;
        }
        self.pairs += n - 1;
    }

    /// Current J; `None` until two packets have been seen.
    pub fn value_ns(&self) -> Option<f64> {
        (self.pairs > 0).then_some(self.jitter_ns)
    }
}

/// IPDV statistics by sequence number (RFC 3393, RFC 5481 §4.1).
///
//= https://www.rfc-editor.org/rfc/rfc5481#section-4.1
//# IPDV(i) = D(i) - D(i-1)
///
/// where `i` is the packet's index in the *sent* stream, i.e. its sequence
/// number, so reordering does not create extra variation. A pair is formed
/// only when both `seq − 1` and `seq` of the same flow were received (the
/// "adjacent packets" selection function of RFC 3393 and RFC 5481 §4.1, as
/// irtt's `recorder.go` does); pairs with a
/// missing neighbour are skipped, and a duplicated sequence number uses its
/// first received copy. Percentiles are of `|IPDV|` (irtt reports its summary
/// over `|IPDV|`), nearest rank.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct IpdvStats {
    /// Number of `(seq − 1, seq)` pairs with both packets received.
    pub pairs: u64,
    /// Signed mean IPDV (drift of delay along the stream).
    pub mean_ns: f64,
    /// Mean `|IPDV|`.
    pub mean_abs_ns: f64,
    /// Most negative IPDV.
    pub min_ns: i64,
    /// Most positive IPDV.
    pub max_ns: i64,
    /// Median `|IPDV|`, nearest rank.
    pub abs_p50_ns: u64,
    /// 95th percentile `|IPDV|`, nearest rank.
    pub abs_p95_ns: u64,
    /// 99th percentile `|IPDV|`, nearest rank.
    pub abs_p99_ns: u64,
}

impl IpdvStats {
    /// IPDV statistics of `records` (any order, any number of flows); `None`
    /// when no pair exists.
    pub fn from_records(records: &[RxRecord]) -> Option<Self> {
        let values = ipdv_values_ns(records);
        let (&first, _) = values.split_first()?;
        let mut sum: i128 = 0;
        let mut sum_abs: u128 = 0;
        let (mut min_ns, mut max_ns) = (first, first);
        for &v in &values {
            sum += i128::from(v);
            sum_abs += u128::from(v.unsigned_abs());
            min_ns = min_ns.min(v);
            max_ns = max_ns.max(v);
        }
        let mut abs: Vec<u64> = values.iter().map(|v| v.unsigned_abs()).collect();
        abs.sort_unstable();
        let n = values.len();
        Some(Self {
            pairs: n as u64,
            mean_ns: sum as f64 / n as f64,
            mean_abs_ns: sum_abs as f64 / n as f64,
            min_ns,
            max_ns,
            abs_p50_ns: percentile_nearest_rank(&abs, 50.0)?,
            abs_p95_ns: percentile_nearest_rank(&abs, 95.0)?,
            abs_p99_ns: percentile_nearest_rank(&abs, 99.0)?,
        })
    }
}

/// Signed IPDV values `D(s) − D(s−1)`, ordered by `(flow, seq)`; see
/// [`IpdvStats`] for the pair selection. Saturates instead of overflowing.
pub fn ipdv_values_ns(records: &[RxRecord]) -> Vec<i64> {
    let mut first_delay: BTreeMap<(u32, u64), i64> = BTreeMap::new();
    for r in records {
        first_delay
            .entry((r.flow, r.seq))
            .or_insert_with(|| r.delay_ns());
    }
    let mut values = Vec::new();
    let mut prev: Option<((u32, u64), i64)> = None;
    for (&(flow, seq), &delay) in &first_delay {
        if let Some(((prev_flow, prev_seq), prev_delay)) = prev {
            if prev_flow == flow && prev_seq.checked_add(1) == Some(seq) {
                values.push(delay.saturating_sub(prev_delay));
            }
        }
        prev = Some(((flow, seq), delay));
    }
    values
}

/// PDV values `D_i − D_min` (RFC 5481 §4.2), sorted ascending.
///
//= https://www.rfc-editor.org/rfc/rfc5481#section-4.2
//# PDV(i) = D(i) - D(min)
///
/// `D_min` is the minimum delay of the same records, so every value is
/// non-negative.
pub fn pdv_sorted_ns(delays_ns: &[i64]) -> Vec<u64> {
    let Some(&min) = delays_ns.iter().min() else {
        return Vec::new();
    };
    let mut pdv: Vec<u64> = delays_ns.iter().map(|&d| d.abs_diff(min)).collect();
    pdv.sort_unstable();
    pdv
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: i64 = 1_000_000;

    fn rx(flow: u32, seq: u64, delay_ns: u64) -> RxRecord {
        RxRecord {
            flow,
            seq,
            tx_ns: 1_000_000_000,
            rx_ns: 1_000_000_000 + delay_ns,
            ..RxRecord::default()
        }
    }

    fn assert_rel_eq(got: f64, want: f64) {
        let tolerance = 1e-9 * want.abs();
        assert!(
            (got - want).abs() <= tolerance,
            "got {got}, want {want} (±{tolerance})"
        );
    }

    #[test]
    fn ditg_jitter_is_mean_absolute_delay_difference() {
        // Delays 10, 14, 11, 11, 19 ms: |Δ| = 4, 3, 0, 8 → 15 ms / 4 = 3.75 ms.
        let delays = [10 * MS, 14 * MS, 11 * MS, 11 * MS, 19 * MS];
        assert_eq!(ditg_jitter_ns(&delays), Some(3_750_000.0));
    }

    #[test]
    fn ditg_jitter_needs_two_packets() {
        assert_eq!(ditg_jitter_ns(&[]), None);
        assert_eq!(ditg_jitter_ns(&[5]), None);
    }

    #[test]
    fn ditg_jitter_handles_negative_delays() {
        // Clocks disagree: -3 µs then +2 µs is a 5 µs swing.
        assert_eq!(ditg_jitter_ns(&[-3_000, 2_000]), Some(5_000.0));
    }

    #[test]
    fn rfc3550_constant_transit_has_zero_jitter() {
        assert_eq!(rfc3550_jitter_ns(&[7 * MS; 50]), Some(0.0));
    }

    #[test]
    fn rfc3550_first_pair_is_one_sixteenth() {
        // Transit x, x+10 ms: J = 10·(1 − 15/16) ms = 0.625 ms exactly.
        let x = 3 * MS;
        assert_eq!(rfc3550_jitter_ns(&[x, x + 10 * MS]), Some(625_000.0));
    }

    #[test]
    fn rfc3550_alternating_transit_converges_geometrically() {
        // Transit alternating x and x+10 ms: every |D| is 10 ms, so after n
        // differences J = 10·(1 − (15/16)^n) ms. n = 16 (17 packets):
        // 10^7 · (16^16 − 15^16) / 16^16 ns, computed exactly in u128.
        let x = 3 * MS;
        let delays: Vec<i64> = (0..17).map(|i| x + (i % 2) * 10 * MS).collect();
        let sixteen_16: u128 = 1 << 64;
        let fifteen_16: u128 = 15u128.pow(16);
        let exact_num = 10_000_000u128 * (sixteen_16 - fifteen_16);
        let want = exact_num as f64 / sixteen_16 as f64;
        assert_rel_eq(rfc3550_jitter_ns(&delays).unwrap(), want);
        // ≈ 6.439 ms, i.e. the 6.44 ms of the worked example.
        assert_eq!((want / 10_000.0).round(), 644.0);
    }

    #[test]
    fn rfc3550_needs_two_packets() {
        assert_eq!(rfc3550_jitter_ns(&[]), None);
        assert_eq!(rfc3550_jitter_ns(&[42]), None);
        let mut j = Rfc3550Jitter::new();
        j.update(1);
        assert_eq!(j.value_ns(), None);
        j.update(17);
        assert_eq!(j.value_ns(), Some(1.0));
    }

    #[test]
    fn ipdv_pairs_by_sequence_not_arrival_and_skips_losses() {
        // Sent 0..=5, seq 3 lost, 2 arrives after 4, seq 1 duplicated late.
        // Delays (ms): 0→10, 1→12, 2→15, 4→11, 5→14, late copy of 1→99.
        let records = [
            rx(1, 0, 10_000_000),
            rx(1, 1, 12_000_000),
            rx(1, 4, 11_000_000),
            rx(1, 2, 15_000_000),
            rx(1, 5, 14_000_000),
            rx(1, 1, 99_000_000),
        ];
        // Pairs (0,1): +2, (1,2): +3, (4,5): +3; (2,3), (3,4) skipped.
        assert_eq!(
            ipdv_values_ns(&records),
            vec![2_000_000, 3_000_000, 3_000_000]
        );
        let s = IpdvStats::from_records(&records).unwrap();
        assert_eq!(s.pairs, 3);
        assert_eq!(s.mean_ns, 8_000_000.0 / 3.0);
        assert_eq!(s.mean_abs_ns, 8_000_000.0 / 3.0);
        assert_eq!(s.min_ns, 2_000_000);
        assert_eq!(s.max_ns, 3_000_000);
        assert_eq!(s.abs_p50_ns, 3_000_000);
        assert_eq!(s.abs_p99_ns, 3_000_000);
        // Arrival order would have given |Δ| = 2, 1, 4, 1, 85 ms instead.
        let delays: Vec<i64> = records.iter().map(RxRecord::delay_ns).collect();
        assert_eq!(ditg_jitter_ns(&delays), Some(93_000_000.0 / 5.0));
    }

    #[test]
    fn ipdv_keeps_sign_and_percentiles_use_magnitude() {
        // Delays 10, 6, 7, 1 ms → IPDV −4, +1, −6 ms.
        let records = [
            rx(1, 0, 10_000_000),
            rx(1, 1, 6_000_000),
            rx(1, 2, 7_000_000),
            rx(1, 3, 1_000_000),
        ];
        let s = IpdvStats::from_records(&records).unwrap();
        assert_eq!(s.pairs, 3);
        assert_eq!(s.mean_ns, -3_000_000.0);
        assert_eq!(s.mean_abs_ns, 11_000_000.0 / 3.0);
        assert_eq!(s.min_ns, -6_000_000);
        assert_eq!(s.max_ns, 1_000_000);
        // |IPDV| sorted: 1, 4, 6 ms.
        assert_eq!(s.abs_p50_ns, 4_000_000);
        assert_eq!(s.abs_p95_ns, 6_000_000);
    }

    #[test]
    fn ipdv_never_pairs_across_flows() {
        let records = [rx(1, 0, 5), rx(2, 1, 9)];
        assert_eq!(IpdvStats::from_records(&records), None);
    }

    #[test]
    fn pdv_percentiles_are_nearest_rank_over_minimum() {
        // 20 delays 101..=120 µs → PDV 0..=19 µs.
        let records: Vec<RxRecord> = (0..20u64)
            .rev()
            .map(|i| rx(1, i, 101_000 + i * 1_000))
            .collect();
        let j = Jitter::from_records(&records);
        assert_eq!(j.pdv_p50_ns, Some(9_000));
        assert_eq!(j.pdv_p95_ns, Some(18_000));
        assert_eq!(j.pdv_p99_ns, Some(19_000));
    }

    #[test]
    fn empty_records_have_no_jitter() {
        assert_eq!(Jitter::from_records(&[]), Jitter::default());
        let one = Jitter::from_records(&[rx(1, 0, 5)]);
        assert_eq!(one.ditg_ns, None);
        assert_eq!(one.rfc3550_ns, None);
        assert_eq!(one.ipdv, None);
        assert_eq!(one.pdv_p99_ns, Some(0));
    }
}
