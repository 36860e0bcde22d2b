//! Per-flow and total summaries: counts, rates, delay, every jitter, loss and
//! ordering, received marking.
//!
//! Which records a metric runs over:
//! - **Arrival-order** metrics (rates, delay, D-ITG and RFC 3550 jitter, PDV)
//!   treat the given slice as one stream. For [`Summary::total`] that is all
//!   flows' records interleaved in arrival order, exactly as ITGDec's "TOTAL
//!   RESULTS" does (`ITGDecod.cpp` line 645 accumulates `|ΔD|` over every
//!   record regardless of flow), so a total jitter mixes flows with different
//!   delays and is only comparable with D-ITG's.
//! - **Sequence-number** metrics (IPDV, loss, bursts, duplicates, reordering)
//!   always key on `(flow, seq)`: per flow, then summed (loss counters) or
//!   pooled (IPDV pairs) for the total.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::jitter::Jitter;
use crate::loss::Loss;
use crate::marking::Marking;
use crate::record::RxRecord;
use crate::stats::{percentile_nearest_rank, Stats};

/// The `flow` id given to [`Summary::total`].
pub const TOTAL_FLOW: u32 = u32::MAX;

/// Everything measured about one flow (or all flows, for the total).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct FlowSummary {
    /// Flow id; [`TOTAL_FLOW`] for the total.
    pub flow: u32,
    /// Records received, duplicates included (D-ITG "Total packets").
    pub packets: u64,
    /// Distinct `(flow, seq)` received.
    pub unique_packets: u64,
    /// Payload bytes of all records, duplicates included (D-ITG "Bytes
    /// received").
    pub bytes: u64,
    /// Earliest receive stamp; `None` when no record.
    pub first_rx_ns: Option<u64>,
    /// Latest receive stamp; `None` when no record.
    pub last_rx_ns: Option<u64>,
    /// `last_rx_ns − first_rx_ns` (D-ITG "Total time"); `None` when fewer than
    /// two records (undefined, not zero).
    pub duration_ns: Option<u64>,
    /// Payload bit rate `bytes · 8 / duration`; `None` when fewer than two
    /// records or zero duration.
    ///
    /// As D-ITG: ITGDec prints `byterecv · 8 / 1000 / totaltime` kbit/s over
    /// first→last receive time (`ITGDecod.cpp` line 809), so all N packets'
    /// bytes are divided by N−1 inter-arrival gaps.
    pub bitrate_bps: Option<f64>,
    /// Packet rate `packets / duration` (D-ITG "Average packet rate", same
    /// caveat); `None` as for `bitrate_bps`.
    pub rate_pps: Option<f64>,
    /// One-way delay (or RTT) statistics over every record; `None` when no
    /// record.
    pub delay: Option<DelayStats>,
    /// Every jitter definition.
    pub jitter: Jitter,
    /// Loss and ordering.
    pub loss: Loss,
    /// Received header fields.
    pub marking: Marking,
    /// Records whose receive stamp came from the kernel.
    pub kernel_ts_packets: u64,
}

/// Delay statistics over every received record (duplicates included, as
/// D-ITG does).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct DelayStats {
    /// Minimum delay (D-ITG "Minimum delay").
    pub min_ns: i64,
    /// Mean delay (D-ITG "Average delay").
    pub mean_ns: f64,
    /// Maximum delay (D-ITG "Maximum delay").
    pub max_ns: i64,
    /// **Population** standard deviation `sqrt(Σ(D−mean)²/N)`, what ITGDec
    /// prints as "Delay standard deviation" (`ITGDecod.cpp` computes
    /// `sqrt(E[D²] − E[D]²)` in its summary block; we use the numerically
    /// stabler two-pass form of the same quantity; the streaming meter, exact
    /// integer sums about the first delay).
    pub stddev_ns: f64,
    /// Median delay, nearest rank (exact from records; from the streaming meter's
    /// histogram within [`crate::hist::RELATIVE_ERROR`]). `None` in documents written
    /// before it existed.
    #[serde(default)]
    pub p50_ns: Option<i64>,
    /// 95th percentile delay, as `p50_ns`.
    #[serde(default)]
    pub p95_ns: Option<i64>,
    /// 99th percentile delay, as `p50_ns`.
    #[serde(default)]
    pub p99_ns: Option<i64>,
}

/// Per-flow summaries and their total.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Summary {
    /// One summary per flow id, ascending.
    pub flows: Vec<FlowSummary>,
    /// All records together, `flow == TOTAL_FLOW` (see the module doc for how
    /// each metric is totalled).
    pub total: FlowSummary,
}

impl Summary {
    /// The summary of flow `id`, if present.
    pub fn flow(&self, id: u32) -> Option<&FlowSummary> {
        self.flows.iter().find(|f| f.flow == id)
    }
}

/// Summary of one flow's records in arrival order; `sent_packets` is the
/// sender's count when known.
///
/// The flow id is taken from the first record (0 when there is none). Records
/// of other flow ids are not expected; if present they are still keyed on
/// `(flow, seq)` for sequence metrics, and `sent_packets` applies to the first
/// record's flow only.
pub fn summarize(records: &[RxRecord], sent_packets: Option<u64>) -> FlowSummary {
    let flow = records.first().map_or(0, |r| r.flow);
    let sent: BTreeMap<u32, u64> = sent_packets.map(|n| (flow, n)).into_iter().collect();
    summarize_records(flow, [flow], records, &sent)
}

/// Per-flow summaries (grouped by `flow`, arrival order kept) and the total
/// of all `records`; `sent` holds the sender's packet count per flow where
/// known.
///
/// A flow in `sent` with no record at all still gets a summary: zero packets,
/// everything lost.
pub fn summarize_all(records: &[RxRecord], sent: &BTreeMap<u32, u64>) -> Summary {
    let mut by_flow: BTreeMap<u32, Vec<RxRecord>> =
        sent.keys().map(|&flow| (flow, Vec::new())).collect();
    for r in records {
        by_flow.entry(r.flow).or_default().push(*r);
    }
    let flows = by_flow
        .iter()
        .map(|(&flow, recs)| summarize_records(flow, [flow], recs, sent))
        .collect();
    Summary {
        flows,
        total: summarize_records(TOTAL_FLOW, sent.keys().copied(), records, sent),
    }
}

/// The one engine behind both entry points: `flow` is the id to report.
/// Sequence metrics are computed per flow id present in `records` or in
/// `flows` (so a flow that never arrived still counts as lost) and combined.
fn summarize_records(
    flow: u32,
    flows: impl IntoIterator<Item = u32>,
    records: &[RxRecord],
    sent: &BTreeMap<u32, u64>,
) -> FlowSummary {
    let mut seqs: BTreeMap<u32, Vec<u64>> = flows.into_iter().map(|f| (f, Vec::new())).collect();
    for r in records {
        seqs.entry(r.flow).or_default().push(r.seq);
    }
    let parts: Vec<Loss> = seqs
        .iter()
        .map(|(f, s)| Loss::from_seqs(s, sent.get(f).copied()))
        .collect();
    let packets = records.len() as u64;
    let loss = match parts.as_slice() {
        [single] => single.clone(),
        _ => Loss::combine(&parts, packets),
    };

    let delays: Vec<i64> = records.iter().map(RxRecord::delay_ns).collect();
    let bytes: u64 = records.iter().map(|r| u64::from(r.size_bytes)).sum();
    let first_rx_ns = records.iter().map(|r| r.rx_ns).min();
    let last_rx_ns = records.iter().map(|r| r.rx_ns).max();
    let duration_ns = last_rx_ns
        .zip(first_rx_ns)
        .filter(|_| packets >= 2)
        .map(|(l, f)| l - f);
    let per_second = |count: f64| {
        duration_ns
            .filter(|d| *d > 0)
            .map(|d| count * 1e9 / d as f64)
    };

    FlowSummary {
        flow,
        packets,
        unique_packets: packets - loss.duplicates,
        bytes,
        first_rx_ns,
        last_rx_ns,
        duration_ns,
        bitrate_bps: per_second(bytes as f64 * 8.0),
        rate_pps: per_second(packets as f64),
        delay: DelayStats::from_delays(&delays),
        jitter: Jitter::from_parts(records, &delays),
        loss,
        marking: Marking::from_records(records),
        kernel_ts_packets: records.iter().filter(|r| r.kernel_ts).count() as u64,
    }
}

impl DelayStats {
    /// Statistics of `delays_ns`; `None` when empty.
    pub fn from_delays(delays_ns: &[i64]) -> Option<Self> {
        let stats = Stats::from_i64(delays_ns)?;
        let mut sorted = delays_ns.to_vec();
        sorted.sort_unstable();
        Some(Self {
            min_ns: *sorted.first()?,
            mean_ns: stats.mean,
            max_ns: *sorted.last()?,
            stddev_ns: stats.stddev_population,
            p50_ns: percentile_nearest_rank(&sorted, 50.0),
            p95_ns: percentile_nearest_rank(&sorted, 95.0),
            p99_ns: percentile_nearest_rank(&sorted, 99.0),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::jitter::IpdvStats;

    const BASE_NS: u64 = 1_700_000_000_000_000_000;

    /// Packet `seq` sent at `seq` ms after BASE with the given delay in µs.
    fn rx(flow: u32, seq: u64, delay_us: u64) -> RxRecord {
        let tx_ns = BASE_NS + seq * 1_000_000;
        RxRecord {
            flow,
            seq,
            size_bytes: 100,
            tx_ns,
            rx_ns: tx_ns + delay_us * 1_000,
            tos: Some(0xb8),
            hop_limit: Some(64),
            flow_label: Some(0xabcde),
            kernel_ts: true,
            rtp_ts: None,
        }
    }

    /// 9 sent, arrivals 0,1,2,4,3,3,7 at 1.0, 2.2, 3.1, 5.3, 5.4, 5.5, 8.0 ms.
    fn lossy_flow() -> Vec<RxRecord> {
        let mut records = vec![
            rx(7, 0, 1000),
            rx(7, 1, 1200),
            rx(7, 2, 1100),
            rx(7, 4, 1300),
            rx(7, 3, 2400),
            rx(7, 3, 2500),
            rx(7, 7, 1000),
        ];
        records[6].tos = Some(0xbb);
        records[6].kernel_ts = false;
        records
    }

    #[test]
    fn summarizes_a_lossy_reordered_flow_exactly() {
        let s = summarize(&lossy_flow(), Some(9));
        assert_eq!(s.flow, 7);
        assert_eq!(s.packets, 7);
        assert_eq!(s.unique_packets, 6);
        assert_eq!(s.bytes, 700);
        assert_eq!(s.first_rx_ns, Some(BASE_NS + 1_000_000));
        assert_eq!(s.last_rx_ns, Some(BASE_NS + 8_000_000));
        assert_eq!(s.duration_ns, Some(7_000_000));
        // 5600 bit over 7 ms; 7 packets over 7 ms.
        assert_eq!(s.bitrate_bps, Some(800_000.0));
        assert_eq!(s.rate_pps, Some(1_000.0));

        // Delays (µs) 1000,1200,1100,1300,2400,2500,1000: mean 1500, squared
        // deviations sum to 2.6e6 µs² = 2.6e12 ns².
        let delay = s.delay.unwrap();
        assert_eq!(delay.min_ns, 1_000_000);
        assert_eq!(delay.max_ns, 2_500_000);
        assert_eq!(delay.mean_ns, 1_500_000.0);
        assert_eq!(delay.stddev_ns, (2.6e12f64 / 7.0).sqrt());

        // D-ITG: |ΔD| = 200,100,200,1100,100,1500 µs → 3200 µs / 6.
        assert_eq!(s.jitter.ditg_ns, Some(3_200_000.0 / 6.0));
        // RFC 3550 over the same |ΔD|: exactly 386325375/2097152 µs.
        let want = 386_325_375_000.0 / 2_097_152.0;
        let got = s.jitter.rfc3550_ns.unwrap();
        assert!((got - want).abs() <= 1e-9 * want, "{got} vs {want}");
        // IPDV by seq, first copies: 0→1 +200, 1→2 −100, 2→3 +1300,
        // 3→4 −1100 µs; 7 has no neighbour.
        assert_eq!(
            s.jitter.ipdv,
            Some(IpdvStats {
                pairs: 4,
                mean_ns: 75_000.0,
                mean_abs_ns: 675_000.0,
                min_ns: -1_100_000,
                max_ns: 1_300_000,
                abs_p50_ns: 200_000,
                abs_p95_ns: 1_300_000,
                abs_p99_ns: 1_300_000,
            })
        );
        // PDV sorted (µs): 0,0,100,200,300,1400,1500.
        assert_eq!(s.jitter.pdv_p50_ns, Some(200_000));
        assert_eq!(s.jitter.pdv_p95_ns, Some(1_500_000));
        assert_eq!(s.jitter.pdv_p99_ns, Some(1_500_000));

        assert_eq!(s.loss.expected, 9);
        assert_eq!(s.loss.lost, 3);
        assert_eq!(s.loss.bursts, 2);
        assert_eq!(s.loss.max_burst_len, 2);
        assert_eq!(s.loss.duplicates, 1);
        assert_eq!(s.loss.reordered, 1);

        assert_eq!(s.marking.tos_seen, BTreeMap::from([(0xb8, 6), (0xbb, 1)]));
        assert_eq!(s.marking.ecn_ce_packets(), 1);
        assert_eq!(s.marking.uniform_hop_limit(), Some(64));
        assert_eq!(s.marking.uniform_flow_label(), Some(0xabcde));
        assert_eq!(s.kernel_ts_packets, 6);
    }

    #[test]
    fn one_packet_has_no_rates_or_jitter() {
        let s = summarize(&[rx(3, 0, 10)], None);
        assert_eq!(s.packets, 1);
        assert_eq!(s.duration_ns, None);
        assert_eq!(s.bitrate_bps, None);
        assert_eq!(s.rate_pps, None);
        assert_eq!(s.jitter.ditg_ns, None);
        assert_eq!(s.jitter.rfc3550_ns, None);
        assert_eq!(s.delay.unwrap().stddev_ns, 0.0);
        assert_eq!(s.loss.expected, 1);
    }

    #[test]
    fn same_instant_arrivals_have_no_rates() {
        let mut b = rx(3, 1, 10);
        b.rx_ns = rx(3, 0, 10).rx_ns;
        let s = summarize(&[rx(3, 0, 10), b], None);
        assert_eq!(s.duration_ns, Some(0));
        assert_eq!(s.bitrate_bps, None);
    }

    #[test]
    fn empty_flow_with_known_sent_count_is_all_lost() {
        let s = summarize(&[], Some(5));
        assert_eq!(s.flow, 0);
        assert_eq!(s.packets, 0);
        assert_eq!(s.first_rx_ns, None);
        assert_eq!(s.delay, None);
        assert_eq!(s.jitter, Jitter::default());
        assert_eq!(s.loss.lost, 5);
        assert_eq!(s.loss.loss_pct, Some(100.0));
    }

    /// Flow 1 delays 1 µs, flow 2 delays 5 µs, interleaved arrivals at
    /// 10, 15, 20, 26 µs after BASE.
    fn two_flows() -> Vec<RxRecord> {
        let at = |flow, seq, rx_us: u64, delay_us: u64| RxRecord {
            flow,
            seq,
            size_bytes: 100,
            tx_ns: BASE_NS + (rx_us - delay_us) * 1_000,
            rx_ns: BASE_NS + rx_us * 1_000,
            ..RxRecord::default()
        };
        vec![
            at(1, 0, 10, 1),
            at(2, 0, 15, 5),
            at(1, 1, 20, 1),
            at(2, 1, 26, 5),
        ]
    }

    #[test]
    fn summarize_all_groups_flows_and_totals_like_itgdec() {
        let sent = BTreeMap::from([(1, 2), (2, 3), (3, 5)]);
        let summary = summarize_all(&two_flows(), &sent);
        let ids: Vec<u32> = summary.flows.iter().map(|f| f.flow).collect();
        assert_eq!(ids, vec![1, 2, 3]);

        let one = summary.flow(1).unwrap();
        assert_eq!(one.packets, 2);
        assert_eq!(one.bitrate_bps, Some(160_000_000.0));
        assert_eq!(one.jitter.ditg_ns, Some(0.0));
        assert_eq!(one.loss.lost, 0);
        let two = summary.flow(2).unwrap();
        assert_eq!(two.loss.lost, 1);
        // Flow 3 never arrived: still reported, everything lost.
        let three = summary.flow(3).unwrap();
        assert_eq!(three.packets, 0);
        assert_eq!(three.delay, None);
        assert_eq!(three.loss.lost, 5);
        assert_eq!(three.loss.bursts, 1);

        let total = &summary.total;
        assert_eq!(total.flow, TOTAL_FLOW);
        assert_eq!(total.packets, 4);
        assert_eq!(total.unique_packets, 4);
        assert_eq!(total.bytes, 400);
        assert_eq!(total.duration_ns, Some(16_000));
        assert_eq!(total.bitrate_bps, Some(200_000_000.0));
        assert_eq!(total.rate_pps, Some(250_000.0));
        // Interleaved arrival order (D-ITG TOTAL): |ΔD| = 4,4,4 µs.
        assert_eq!(total.jitter.ditg_ns, Some(4_000.0));
        // IPDV pairs stay within flows: two pairs of 0.
        let ipdv = total.jitter.ipdv.unwrap();
        assert_eq!(ipdv.pairs, 2);
        assert_eq!(ipdv.max_ns, 0);
        // PDV against the global minimum: 0,0,4,4 µs.
        assert_eq!(total.jitter.pdv_p50_ns, Some(0));
        assert_eq!(total.jitter.pdv_p95_ns, Some(4_000));
        assert_eq!(total.delay.unwrap().mean_ns, 3_000.0);
        assert_eq!(total.loss.sent, Some(10));
        assert_eq!(total.loss.expected, 10);
        assert_eq!(total.loss.lost, 6);
        assert_eq!(total.loss.loss_pct, Some(60.0));
        assert_eq!(total.loss.bursts, 2);
    }

    #[test]
    fn a_real_flow_with_the_total_id_is_not_a_total() {
        let mut records = two_flows();
        records[0].flow = TOTAL_FLOW;
        records[2].flow = TOTAL_FLOW;
        let summary = summarize_all(&records, &BTreeMap::from([(2, 3), (3, 5)]));
        let max = summary.flow(TOTAL_FLOW).unwrap();
        assert_eq!(max.packets, 2);
        assert_eq!(max.loss.expected, 2);
        assert_eq!(max.loss.lost, 0);
        assert_eq!(summary.total.loss.lost, 6);
    }

    #[test]
    fn total_of_flows_without_sent_counts_has_no_sent() {
        let summary = summarize_all(&two_flows(), &BTreeMap::new());
        assert_eq!(summary.flows.len(), 2);
        assert_eq!(summary.total.loss.sent, None);
        assert_eq!(summary.total.loss.expected, 4);
        assert_eq!(summary.total.loss.lost, 0);
    }

    #[test]
    fn summary_round_trips_through_json_with_nulls() {
        let summary = summarize_all(&lossy_flow(), &BTreeMap::from([(7, 9), (8, 1)]));
        let json = serde_json::to_value(&summary).unwrap();
        assert!(json["flows"][1]["delay"].is_null());
        assert!(json["flows"][1]["bitrate_bps"].is_null());
        assert_eq!(json["flows"][0]["loss"]["lost"], 3);
        let back: Summary = serde_json::from_value(json).unwrap();
        assert_eq!(back, summary);
    }
}
