//! Streaming meters: every figure of a [`FlowSummary`] updated as each record arrives, in
//! memory that does not grow with the packet count. The live receiver, the sender (its
//! echoes) and `decode` feed records one at a time into the same state, so they print
//! the same figures.
//!
//! What is exact and what is not (docs/output.md has the same table):
//! - **exact**, equal to the batch computation ([`crate::summarize`]) from the full
//!   record list: counts, bytes, first/last receive times, duration and rates, delay
//!   min/mean/max (the mean from an exact integer sum), D-ITG jitter (exact integer
//!   sum), RFC 3550 jitter (the same recurrence in the same order), IPDV pairs,
//!   mean, mean |IPDV|, min and max, loss, loss periods, duplicates, RFC 4737 reordering
//!   (all within the reordering window of [`crate::seq`]; beyond it, see
//!   [`crate::Loss::outside_window`]), D-ITG's loss figures, received marking, the
//!   interval series and the RTP jitter;
//! - **floating point**: the delay standard deviation, from exact integer sums of the
//!   delays and of their squares about the first delay (one rounding, in the final
//!   division; floating point throughout only when those sums would overflow), equal
//!   to the two-pass value up to rounding;
//! - **histogram** ([`crate::hist`], within [`crate::hist::RELATIVE_ERROR`] of the
//!   exact nearest-rank value): delay percentiles, PDV percentiles (RFC 5481 §4.2:
//!   `PDV p = delay p − min delay`, from the same histogram, so the bound is relative to
//!   the delay), |IPDV| percentiles.

use std::collections::BTreeMap;

use crate::hist::Histogram;
use crate::interval::{Interval, IntervalError, IntervalSeries};
use crate::jitter::{IpdvStats, Jitter, Rfc3550Jitter};
use crate::loss::Loss;
use crate::marking::MarkingCounter;
use crate::record::RxRecord;
use crate::rtp::{RtpJitter, RtpJitterSummary};
use crate::seq::{Arrival, IpdvSums, SeqState};
use crate::summary::{DelayStats, FlowSummary, Summary, TOTAL_FLOW};

/// The arrival-order figures of a stream of records (one flow, or all flows interleaved
/// as D-ITG's TOTAL): counts, rates, delay, D-ITG and RFC 3550 jitter, PDV, marking.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Arrivals {
    packets: u64,
    bytes: u64,
    first_rx_ns: Option<u64>,
    last_rx_ns: Option<u64>,
    delay_sum_ns: i128,
    /// The first delay, and Σ (D_i − that)²: the variance exactly, in integers (the
    /// shift keeps the squares small). Welford's one-pass update, used before, cost a
    /// division per packet in a dependency chain through every packet. The sum is 192
    /// bits wide (`delay_sq_carry` counts its overflows of 128 bits): deviations of
    /// decades, as between a sender's clock and a stamp of 0, pass 2^128 within a few
    /// hundred packets.
    delay_ref_ns: i64,
    delay_sq_sum: u128,
    delay_sq_carry: u64,
    delay: Histogram,
    prev_delay_ns: Option<i64>,
    /// Σ |D_i − D_{i−1}| (D-ITG, `ITGDecod.cpp` lines 1092–1093).
    ditg_sum_ns: u128,
    rfc3550: Rfc3550Jitter,
    marking: MarkingCounter,
    kernel_ts_packets: u64,
}

impl Arrivals {
    /// Takes the next record in arrival order; `delay_ns` is `r.delay_ns()`.
    pub fn handle(&mut self, r: &RxRecord, delay_ns: i64) {
        self.handle_run(r, delay_ns, 1);
    }

    /// Takes `n` records in a row that differ from `r` in their sequence numbers only
    /// (the datagrams of one coalesced receive), as `n` calls of [`Self::handle`].
    pub fn handle_run(&mut self, r: &RxRecord, delay_ns: i64, n: u64) {
        if n == 0 {
            return;
        }
        let first = self.packets == 0;
        self.packets += n;
        self.bytes += u64::from(r.size_bytes) * n;
        self.first_rx_ns = Some(self.first_rx_ns.map_or(r.rx_ns, |f| f.min(r.rx_ns)));
        self.last_rx_ns = Some(self.last_rx_ns.map_or(r.rx_ns, |l| l.max(r.rx_ns)));
        self.delay_sum_ns += i128::from(delay_ns) * i128::from(n);
        if first {
            self.delay_ref_ns = delay_ns;
        }
        let dev = u128::from(delay_ns.abs_diff(self.delay_ref_ns));
        self.add_squares(dev * dev, n);
        self.delay.record_n(delay_ns, n);
        // The pair with the record before; the n − 1 pairs within add 0.
        if let Some(prev) = self.prev_delay_ns.replace(delay_ns) {
            self.ditg_sum_ns += u128::from(prev.abs_diff(delay_ns));
        }
        self.rfc3550.update_n(delay_ns, n);
        self.marking.handle_records(r, n);
        self.kernel_ts_packets += u64::from(r.kernel_ts) * n;
    }

    /// Adds `n` times `square` (below 2^128) to the 192-bit sum of squares.
    fn add_squares(&mut self, square: u128, n: u64) {
        let n = u128::from(n);
        if let Some(sum) = square
            .checked_mul(n)
            .and_then(|x| self.delay_sq_sum.checked_add(x))
        {
            self.delay_sq_sum = sum;
            return;
        }
        // square · n = high · 2^64 + low, each product below 2^128.
        let low = (square & u128::from(u64::MAX)) * n;
        let high = (square >> 64) * n;
        let (sum, c1) = self.delay_sq_sum.overflowing_add(low);
        let (sum, c2) = sum.overflowing_add(high << 64);
        self.delay_sq_sum = sum;
        // Below 2^64: at most 2^64 packets of squares below 2^128.
        self.delay_sq_carry += (high >> 64) as u64 + u64::from(c1) + u64::from(c2);
    }

    /// Records taken.
    pub fn packets(&self) -> u64 {
        self.packets
    }

    /// The population variance of the delay (as `stats::Stats::stddev_population`
    /// squared): with S1 = Σ (D − ref) and S2 = Σ (D − ref)², it is (n·S2 − S1²) / n²,
    /// exact in integers up to the one division, unless n·S2 overflows 128 bits (delays
    /// that vary by seconds over billions of packets, or by years), then in floating
    /// point.
    fn delay_variance(&self) -> f64 {
        let n = self.packets;
        if n == 0 {
            return 0.0;
        }
        let s1 = self.delay_sum_ns - i128::from(n) * i128::from(self.delay_ref_ns);
        let s2 = self.delay_sq_sum;
        let exact = s1
            .unsigned_abs()
            .checked_mul(s1.unsigned_abs())
            .zip(s2.checked_mul(u128::from(n)))
            .filter(|_| self.delay_sq_carry == 0)
            .map(|(s1_sq, n_s2)| n_s2.saturating_sub(s1_sq));
        let var = match exact {
            Some(numerator) => numerator as f64 / (n as f64 * n as f64),
            None => {
                let mean = s1 as f64 / n as f64;
                let s2 = self.delay_sq_carry as f64 * 2f64.powi(128) + s2 as f64;
                s2 / n as f64 - mean * mean
            }
        };
        var.max(0.0)
    }

    fn delay_stats(&self) -> Option<DelayStats> {
        let n = self.packets;
        Some(DelayStats {
            min_ns: self.delay.min()?,
            mean_ns: self.delay_sum_ns as f64 / n as f64,
            max_ns: self.delay.max()?,
            stddev_ns: self.delay_variance().sqrt(),
            p50_ns: self.delay.percentile(50.0),
            p95_ns: self.delay.percentile(95.0),
            p99_ns: self.delay.percentile(99.0),
        })
    }

    /// The summary of these arrivals with the given sequence figures.
    fn summary(&self, flow: u32, loss: Loss, unique: u64, ipdv: Option<IpdvStats>) -> FlowSummary {
        let packets = self.packets;
        let duration_ns = self
            .last_rx_ns
            .zip(self.first_rx_ns)
            .filter(|_| packets >= 2)
            .map(|(l, f)| l - f);
        let per_second = |count: f64| {
            duration_ns
                .filter(|d| *d > 0)
                .map(|d| count * 1e9 / d as f64)
        };
        // RFC 5481 §4.2: PDV(i) = D(i) − D(min); its percentiles are the delay's minus
        // the minimum.
        let min = self.delay.min();
        let pdv = |pct: f64| {
            let p = self.delay.percentile(pct)?;
            Some(p.abs_diff(min?))
        };
        FlowSummary {
            flow,
            packets,
            unique_packets: unique,
            bytes: self.bytes,
            first_rx_ns: self.first_rx_ns,
            last_rx_ns: self.last_rx_ns,
            duration_ns,
            bitrate_bps: per_second(self.bytes as f64 * 8.0),
            rate_pps: per_second(packets as f64),
            delay: self.delay_stats(),
            jitter: Jitter {
                ditg_ns: (packets >= 2).then(|| self.ditg_sum_ns as f64 / (packets - 1) as f64),
                rfc3550_ns: self.rfc3550.value_ns(),
                ipdv,
                pdv_p50_ns: pdv(50.0),
                pdv_p95_ns: pdv(95.0),
                pdv_p99_ns: pdv(99.0),
            },
            loss,
            marking: self.marking.marking(),
            kernel_ts_packets: self.kernel_ts_packets,
        }
    }

    /// Heap bytes held.
    pub fn heap_bytes(&self) -> usize {
        self.delay.heap_bytes()
    }
}

/// IPDV statistics from exact sums and a histogram of |IPDV|.
fn ipdv_stats(sums: &IpdvSums, abs: &Histogram) -> Option<IpdvStats> {
    let n = sums.pairs;
    let abs_p = |pct: f64| abs.percentile(pct).map(i64::unsigned_abs);
    (n > 0).then(|| IpdvStats {
        pairs: n,
        mean_ns: sums.sum_ns as f64 / n as f64,
        mean_abs_ns: sums.sum_abs_ns as f64 / n as f64,
        min_ns: sums.min_ns,
        max_ns: sums.max_ns,
        abs_p50_ns: abs_p(50.0).unwrap_or(0),
        abs_p95_ns: abs_p(95.0).unwrap_or(0),
        abs_p99_ns: abs_p(99.0).unwrap_or(0),
    })
}

/// One flow's streaming state, without an interval series of its own.
#[derive(Clone, Debug, Default, PartialEq)]
struct FlowCore {
    flow: u32,
    arrivals: Arrivals,
    seq: SeqState,
    /// |IPDV| values.
    ipdv_abs: Histogram,
    rtp: Option<RtpJitter>,
}

impl FlowCore {
    fn handle(
        &mut self,
        r: &RxRecord,
        delay_ns: i64,
        series: Option<&mut IntervalSeries>,
    ) -> Arrival {
        self.handle_run(r, delay_ns, 1, series)
    }

    /// `n` (≥ 1) records in a row that differ from `r` in their sequence numbers only
    /// (`r.seq..r.seq + n`), as `n` calls of [`Self::handle`]; what the first was.
    fn handle_run(
        &mut self,
        r: &RxRecord,
        delay_ns: i64,
        n: u64,
        mut series: Option<&mut IntervalSeries>,
    ) -> Arrival {
        let n = n.max(1);
        self.arrivals.handle_run(r, delay_ns, n);
        let window = series
            .as_mut()
            .and_then(|s| s.handle_records(r, delay_ns, n));
        let hist = &mut self.ipdv_abs;
        let mut first = None;
        self.seq.handle_run(
            r.seq,
            n,
            delay_ns,
            window,
            |v, count| hist.record_n(i64::try_from(v.unsigned_abs()).unwrap_or(i64::MAX), count),
            |arrival| {
                first.get_or_insert(arrival);
                let Some(series) = series.as_deref_mut() else {
                    return;
                };
                match arrival {
                    Arrival::InOrder { revealed } if revealed > 0 => {
                        if let Some(w) = window {
                            series.charge_lost(w, revealed);
                        }
                    }
                    Arrival::Reordered { window: Some(w) } => series.take_back_lost(w),
                    _ => {}
                }
            },
        );
        if let (Some(rtp), Some(ts)) = (&mut self.rtp, r.rtp_ts) {
            for _ in 0..n {
                rtp.update(r.rx_ns, ts);
            }
        }
        // `handle_run` hands over the first arrival always.
        first.unwrap_or(Arrival::InOrder { revealed: 0 })
    }

    fn summary(&self, sent: Option<u64>) -> FlowSummary {
        let loss = self.seq.loss(sent);
        self.arrivals.summary(
            self.flow,
            loss,
            self.seq.unique(),
            ipdv_stats(self.seq.ipdv(), &self.ipdv_abs),
        )
    }
}

/// One flow's streaming meter: its summary, RTP jitter and interval series.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FlowMeter {
    core: FlowCore,
    series: Option<IntervalSeries>,
}

impl FlowMeter {
    /// A meter for flow `flow` that has seen nothing.
    pub fn new(flow: u32) -> Self {
        Self {
            core: FlowCore {
                flow,
                ..FlowCore::default()
            },
            series: None,
        }
    }

    /// Also computes the RFC 3550 jitter against the RTP timestamps of the records that
    /// carry one, for a media clock of `clock_hz` ([`crate::rtp`]).
    pub fn with_rtp_clock(mut self, clock_hz: u32) -> Self {
        self.core.rtp = Some(RtpJitter::new(clock_hz));
        self
    }

    /// Also builds an interval series ([`IntervalSeries`]).
    pub fn with_intervals(mut self, series: IntervalSeries) -> Self {
        self.series = Some(series);
        self
    }

    /// Takes the next record of the flow, in arrival order.
    pub fn handle_record(&mut self, r: &RxRecord) -> Arrival {
        self.core.handle(r, r.delay_ns(), self.series.as_mut())
    }

    /// Takes `n` records in a row that differ from `r` in their sequence numbers only,
    /// `r.seq..r.seq + n` (the datagrams of one coalesced receive, which arrived
    /// together and were sent together), as `n` calls of [`Self::handle_record`] would,
    /// to the bit, in a few steps for the lot where the numbers run on in order; what
    /// the first was.
    pub fn handle_records(&mut self, r: &RxRecord, n: u64) -> Arrival {
        self.core
            .handle_run(r, r.delay_ns(), n, self.series.as_mut())
    }

    /// Records taken (duplicates included).
    pub fn packets(&self) -> u64 {
        self.core.arrivals.packets
    }

    /// Distinct sequence numbers received (duplicates and packets outside the window
    /// left out).
    pub fn unique_packets(&self) -> u64 {
        self.core.seq.unique()
    }

    /// Payload bytes of every record taken (duplicates included).
    pub fn bytes(&self) -> u64 {
        self.core.arrivals.bytes
    }

    /// Every record's delay (one-way, or the round trip for echoed probes), in ns.
    pub fn delay_histogram(&self) -> &Histogram {
        &self.core.arrivals.delay
    }

    /// The sum of every record's delay, in ns (exact).
    pub fn delay_sum_ns(&self) -> i128 {
        self.core.arrivals.delay_sum_ns
    }

    /// |IPDV| of consecutive packets (RFC 3393, RFC 5481 §4.1), in ns.
    pub fn ipdv_abs_histogram(&self) -> &Histogram {
        &self.core.ipdv_abs
    }

    /// Everything measured so far; `sent` is the sender's count when known.
    pub fn summary(&self, sent: Option<u64>) -> FlowSummary {
        self.core.summary(sent)
    }

    /// The delay's distribution: the smallest delay, then the nearest-rank percentiles
    /// 1 to 100 (101 values, ascending), from the delay histogram, so within
    /// [`crate::hist::RELATIVE_ERROR`] (the ends exact). The empirical CDF that flent
    /// plots, at one-percent steps; `None` before a record arrived.
    pub fn delay_cdf_ns(&self) -> Option<Vec<i64>> {
        let min = self.core.arrivals.delay.min()?;
        std::iter::once(Some(min))
            .chain((1..=100).map(|p| self.core.arrivals.delay.percentile(f64::from(p))))
            .collect()
    }

    /// The RTP jitter, if asked for and two RTP-stamped records arrived.
    pub fn rtp(&self) -> Option<RtpJitterSummary> {
        self.core.rtp.as_ref().and_then(RtpJitter::summary)
    }

    /// The interval series, if asked for.
    pub fn intervals(&self) -> Option<Result<Vec<Interval>, IntervalError>> {
        self.series.as_ref().map(IntervalSeries::windows)
    }

    /// Windows in the interval series so far (0 without one).
    pub fn interval_windows(&self) -> u64 {
        self.series.as_ref().map_or(0, IntervalSeries::len)
    }

    /// Heap bytes held, the interval series excluded (it grows with the run's length
    /// over the window, never with the packet count).
    pub fn heap_bytes(&self) -> usize {
        self.core.arrivals.heap_bytes()
            + self.core.seq.heap_bytes()
            + self.core.ipdv_abs.heap_bytes()
    }
}

/// Per-flow meters and their total over records of many flows in arrival order: the
/// streaming form of [`crate::summarize_all`], with one interval series over every
/// record (as [`crate::try_intervals`] builds it) and the RTP jitter of the flows whose
/// media clock is known.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SummaryMeter {
    flows: BTreeMap<u32, FlowCore>,
    total: Arrivals,
    series: Option<IntervalSeries>,
    rtp_clocks: BTreeMap<u32, u32>,
}

impl SummaryMeter {
    /// A meter that has seen nothing.
    pub fn new() -> Self {
        Self::default()
    }

    /// Also builds one interval series over all records.
    pub fn with_intervals(mut self, series: IntervalSeries) -> Self {
        self.series = Some(series);
        self
    }

    /// Flow `flow`'s records carry RTP timestamps of a `clock_hz` media clock; takes
    /// effect for records handled after this call.
    pub fn set_rtp_clock(&mut self, flow: u32, clock_hz: u32) {
        self.rtp_clocks.insert(flow, clock_hz);
        if let Some(core) = self.flows.get_mut(&flow) {
            core.rtp.get_or_insert_with(|| RtpJitter::new(clock_hz));
        }
    }

    /// Takes the next record, any flow, in arrival order.
    pub fn handle_record(&mut self, r: &RxRecord) -> Arrival {
        let delay_ns = r.delay_ns();
        self.total.handle(r, delay_ns);
        let clocks = &self.rtp_clocks;
        let core = self.flows.entry(r.flow).or_insert_with(|| FlowCore {
            flow: r.flow,
            rtp: clocks.get(&r.flow).map(|&hz| RtpJitter::new(hz)),
            ..FlowCore::default()
        });
        core.handle(r, delay_ns, self.series.as_mut())
    }

    /// Per-flow summaries and the total, as [`crate::summarize_all`] defines them; a
    /// flow in `sent` with no record still gets a summary (everything lost).
    pub fn summary(&self, sent: &BTreeMap<u32, u64>) -> Summary {
        let empty: BTreeMap<u32, FlowCore> = sent
            .keys()
            .filter(|f| !self.flows.contains_key(f))
            .map(|&flow| {
                (
                    flow,
                    FlowCore {
                        flow,
                        ..FlowCore::default()
                    },
                )
            })
            .collect();
        let mut all: Vec<&FlowCore> = self.flows.values().chain(empty.values()).collect();
        all.sort_by_key(|c| c.flow);
        let flows: Vec<FlowSummary> = all
            .iter()
            .map(|c| c.summary(sent.get(&c.flow).copied()))
            .collect();
        let parts: Vec<Loss> = flows.iter().map(|f| f.loss.clone()).collect();
        let loss = match parts.as_slice() {
            [single] => single.clone(),
            _ => Loss::combine(&parts, self.total.packets),
        };
        let mut sums = IpdvSums::default();
        let mut abs = Histogram::new();
        for c in &all {
            sums.merge(c.seq.ipdv());
            abs.merge(&c.ipdv_abs);
        }
        let unique = all.iter().map(|c| c.seq.unique()).sum();
        Summary {
            total: self
                .total
                .summary(TOTAL_FLOW, loss, unique, ipdv_stats(&sums, &abs)),
            flows,
        }
    }

    /// The flows that have records, ascending.
    pub fn flow_ids(&self) -> impl Iterator<Item = u32> + '_ {
        self.flows.keys().copied()
    }

    /// The RTP jitter of every flow that has one.
    pub fn rtp(&self) -> BTreeMap<u32, RtpJitterSummary> {
        self.flows
            .iter()
            .filter_map(|(&f, c)| Some((f, c.rtp.as_ref()?.summary()?)))
            .collect()
    }

    /// The interval series over all records, if asked for.
    pub fn intervals(&self) -> Option<Result<Vec<Interval>, IntervalError>> {
        self.series.as_ref().map(IntervalSeries::windows)
    }

    /// Heap bytes held, interval series excluded.
    pub fn heap_bytes(&self) -> usize {
        self.total.heap_bytes()
            + self
                .flows
                .values()
                .map(|c| c.arrivals.heap_bytes() + c.seq.heap_bytes() + c.ipdv_abs.heap_bytes())
                .sum::<usize>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hist::RELATIVE_ERROR;
    use crate::record::TxRecord;
    use crate::schedule::{schedule_error_with, sent_summary, TxMeter};
    use crate::seq::{MAX_OPEN_RUNS, WINDOW_PACKETS};
    use proptest::prelude::*;

    const BASE_NS: u64 = 1_700_000_000_000_000_000;

    /// A small deterministic generator (SplitMix64).
    struct Rng(u64);

    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = self.0;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            z ^ (z >> 31)
        }

        fn below(&mut self, n: u64) -> u64 {
            self.next() % n.max(1)
        }
    }

    /// How a network mangles a stream, per packet in parts per thousand.
    #[derive(Clone, Copy, Debug)]
    struct Mangling {
        flows: u32,
        packets: u64,
        loss_permille: u64,
        dup_permille: u64,
        hold_permille: u64,
        max_hold: u64,
        /// Delays up to this many ns (clocks of one host); negative offsets when odd.
        delay_spread_ns: u64,
        seed: u64,
    }

    /// Records of `m.flows` interleaved flows in arrival order, and each flow's sent count.
    fn arrivals(m: Mangling) -> (Vec<RxRecord>, BTreeMap<u32, u64>) {
        let mut rng = Rng(m.seed);
        let mut sent = BTreeMap::new();
        // (arrival slot, record): held packets arrive some slots later.
        let mut slots: Vec<(u64, u64, RxRecord)> = Vec::new();
        let offset: i64 = if m.seed % 2 == 1 { -3_000_000 } else { 0 };
        for i in 0..m.packets {
            let flow = 1 + (i % u64::from(m.flows)) as u32;
            let seq = i / u64::from(m.flows);
            *sent.entry(flow).or_insert(0) += 1;
            if rng.below(1000) < m.loss_permille {
                continue;
            }
            let tx_ns = BASE_NS + i * 10_000;
            let record = RxRecord {
                flow,
                seq,
                size_bytes: 64 + rng.below(1400) as u32,
                tx_ns,
                rx_ns: 0,
                tos: (rng.below(50) > 0).then_some(0xb8),
                hop_limit: Some(64),
                flow_label: (flow == 2).then_some(0x12345),
                kernel_ts: rng.below(10) > 0,
                rtp_ts: (flow == 1).then_some((seq * 160) as u32),
            };
            let mut at = i;
            if rng.below(1000) < m.hold_permille {
                at += 1 + rng.below(m.max_hold);
            }
            slots.push((at, i, record));
            if rng.below(1000) < m.dup_permille {
                slots.push((at + rng.below(m.max_hold + 1), i, record));
            }
        }
        slots.sort_by_key(|&(at, i, _)| (at, i));
        // Receive stamps increase with arrival order; the delay sets the send stamp.
        let records = slots
            .into_iter()
            .enumerate()
            .map(|(k, (_, _, mut r))| {
                let delay = 20_000 + (k as u64 * 7919) % m.delay_spread_ns.max(1);
                r.rx_ns = BASE_NS + k as u64 * 10_000 + 1_000_000;
                let delay = delay as i64 + offset;
                r.tx_ns = r.rx_ns.wrapping_sub(delay as u64);
                r
            })
            .collect();
        (records, sent)
    }

    fn within(got: i64, want: i64) -> bool {
        (got as f64 - want as f64).abs() <= want.unsigned_abs() as f64 * RELATIVE_ERROR
    }

    /// Checks the streaming summary against the batch one: exact fields equal, the
    /// standard deviation to rounding, percentiles within the histogram's bound.
    fn assert_agrees(streamed: &FlowSummary, batch: &FlowSummary) {
        let mut fixed = streamed.clone();
        match (&mut fixed.delay, &batch.delay) {
            (Some(s), Some(b)) => {
                let tol = 1e-9 * b.stddev_ns.max(1.0);
                assert!(
                    (s.stddev_ns - b.stddev_ns).abs() <= tol,
                    "stddev {s:?} vs {b:?}"
                );
                for (got, want) in [
                    (s.p50_ns, b.p50_ns),
                    (s.p95_ns, b.p95_ns),
                    (s.p99_ns, b.p99_ns),
                ] {
                    assert!(
                        within(got.unwrap(), want.unwrap()),
                        "delay p {got:?} vs {want:?}"
                    );
                }
                // PDV p = delay p − min: the same error, relative to the delay.
                let min = b.min_ns;
                for (got, want, delay) in [
                    (fixed.jitter.pdv_p50_ns, batch.jitter.pdv_p50_ns, b.p50_ns),
                    (fixed.jitter.pdv_p95_ns, batch.jitter.pdv_p95_ns, b.p95_ns),
                    (fixed.jitter.pdv_p99_ns, batch.jitter.pdv_p99_ns, b.p99_ns),
                ] {
                    let (got, want) = (got.unwrap() as i64 + min, want.unwrap() as i64 + min);
                    assert_eq!(want, delay.unwrap());
                    assert!(within(got, want), "pdv {got} vs {want}");
                }
                s.stddev_ns = b.stddev_ns;
                (s.p50_ns, s.p95_ns, s.p99_ns) = (b.p50_ns, b.p95_ns, b.p99_ns);
            }
            (s, b) => assert_eq!(s, b),
        }
        fixed.jitter.pdv_p50_ns = batch.jitter.pdv_p50_ns;
        fixed.jitter.pdv_p95_ns = batch.jitter.pdv_p95_ns;
        fixed.jitter.pdv_p99_ns = batch.jitter.pdv_p99_ns;
        if let (Some(s), Some(b)) = (&mut fixed.jitter.ipdv, &batch.jitter.ipdv) {
            for (got, want) in [
                (s.abs_p50_ns, b.abs_p50_ns),
                (s.abs_p95_ns, b.abs_p95_ns),
                (s.abs_p99_ns, b.abs_p99_ns),
            ] {
                assert!(within(got as i64, want as i64), "|ipdv| p {got} vs {want}");
            }
            (s.abs_p50_ns, s.abs_p95_ns, s.abs_p99_ns) = (b.abs_p50_ns, b.abs_p95_ns, b.abs_p99_ns);
        }
        assert_eq!(&fixed, batch);
    }

    /// Checks `m`'s arrivals; returns the largest per-flow meter's heap bytes.
    fn check(m: Mangling) -> usize {
        let (records, sent) = arrivals(m);
        let window_ns = 3_000_000;
        let origin = records.first().map_or(0, |r| r.rx_ns);
        let mut all = SummaryMeter::new().with_intervals(IntervalSeries::new(window_ns).unwrap());
        all.set_rtp_clock(1, 8_000);
        let mut per_flow: BTreeMap<u32, FlowMeter> = BTreeMap::new();
        for r in &records {
            all.handle_record(r);
            per_flow
                .entry(r.flow)
                .or_insert_with(|| {
                    let m = FlowMeter::new(r.flow)
                        .with_intervals(IntervalSeries::new(window_ns).unwrap());
                    if r.flow == 1 {
                        m.with_rtp_clock(8_000)
                    } else {
                        m
                    }
                })
                .handle_record(r);
        }
        let streamed = all.summary(&sent);
        let batch = crate::summarize_all(&records, &sent);
        assert_eq!(streamed.flows.len(), batch.flows.len());
        assert_eq!(streamed.total.loss.outside_window, 0, "{m:?}");
        for (s, b) in streamed.flows.iter().zip(&batch.flows) {
            assert_agrees(s, b);
        }
        assert_agrees(&streamed.total, &batch.total);
        // One flow's own meter: the same as its part of the whole, with its own series.
        for (flow, meter) in &per_flow {
            let own: Vec<RxRecord> = records
                .iter()
                .filter(|r| r.flow == *flow)
                .copied()
                .collect();
            let batch_one = crate::summarize(&own, sent.get(flow).copied());
            assert_agrees(&meter.summary(sent.get(flow).copied()), &batch_one);
            let first = own.first().map_or(0, |r| r.rx_ns);
            assert_eq!(
                meter.intervals().unwrap().unwrap(),
                crate::try_intervals(&own, window_ns, first).unwrap()
            );
            assert_eq!(
                meter.rtp(),
                (*flow == 1)
                    .then(|| crate::rtp_jitter(&own, 8_000))
                    .flatten()
            );
            // The worst of these flows (delays of both signs over 5 ms, 4 % loss, every
            // open run in use) stays under 24 KiB; a realistic flow is below 16 KiB
            // (`a_long_mangled_run_stays_exact_and_small`).
            assert!(
                meter.heap_bytes() < 24 * 1024,
                "{} bytes",
                meter.heap_bytes()
            );
        }
        assert_eq!(
            all.intervals().unwrap().unwrap(),
            crate::try_intervals(&records, window_ns, origin).unwrap()
        );
        assert_eq!(
            all.rtp(),
            crate::rtp_jitter_by_flow(&records, &BTreeMap::from([(1, 8_000)]))
        );
        per_flow
            .values()
            .map(FlowMeter::heap_bytes)
            .max()
            .unwrap_or(0)
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(200))]

        #[test]
        fn streaming_equals_batch_within_the_window(
            flows in 1u32..4,
            packets in 0u64..3_000,
            loss_permille in 0u64..40,
            dup_permille in 0u64..30,
            hold_permille in 0u64..60,
            max_hold in 1u64..40,
            delay_spread_ns in 1u64..5_000_000,
            seed in any::<u64>(),
        ) {
            check(Mangling {
                flows, packets, loss_permille, dup_permille, hold_permille, max_hold,
                delay_spread_ns, seed,
            });
        }

        #[test]
        fn schedule_meter_equals_batch(
            errors in proptest::collection::vec((0u64..5_000_000, any::<bool>(), 1u32..2000), 0..2000),
            threshold in 0u64..2_000_000,
        ) {
            let tx: Vec<TxRecord> = errors
                .iter()
                .enumerate()
                .map(|(i, &(e, early, size))| {
                    let scheduled = 1_000_000_000 + i as u64 * 1_000;
                    TxRecord {
                        flow: 1,
                        seq: i as u64,
                        size_bytes: size,
                        scheduled_ns: scheduled,
                        actual_ns: if early { scheduled - e.min(999) } else { scheduled + e },
                    }
                })
                .collect();
            let mut meter = TxMeter::new(threshold);
            for t in &tx {
                meter.handle_record(t);
            }
            prop_assert_eq!(meter.sent_summary(), sent_summary(&tx));
            let batch = schedule_error_with(&tx, threshold);
            let streamed = meter.schedule_error();
            prop_assert_eq!(batch.is_some(), streamed.is_some());
            if let (Some(mut s), Some(b)) = (streamed, batch) {
                prop_assert!(within(s.p50_ns as i64, b.p50_ns as i64));
                prop_assert!(within(s.p99_ns as i64, b.p99_ns as i64));
                (s.p50_ns, s.p99_ns) = (b.p50_ns, b.p99_ns);
                prop_assert_eq!(s, b);
            }
        }
    }

    #[test]
    fn the_delay_cdf_is_the_minimum_then_each_percentile() {
        let m = Mangling {
            flows: 1,
            packets: 5_000,
            loss_permille: 0,
            dup_permille: 0,
            hold_permille: 0,
            max_hold: 0,
            delay_spread_ns: 2_000_000,
            seed: 8,
        };
        let (records, _) = arrivals(m);
        let mut meter = FlowMeter::new(1);
        assert_eq!(meter.delay_cdf_ns(), None, "nothing yet");
        for r in &records {
            meter.handle_record(r);
        }
        let cdf = meter.delay_cdf_ns().unwrap();
        let mut delays: Vec<i64> = records.iter().map(RxRecord::delay_ns).collect();
        delays.sort_unstable();
        assert_eq!(cdf.len(), 101);
        assert!(cdf.windows(2).all(|w| w[0] <= w[1]), "ascending");
        // The ends exact; the percentiles within the histogram's bound of the records'
        // nearest-rank percentiles (rank ⌈p·n/100⌉).
        assert_eq!((cdf[0], cdf[100]), (delays[0], delays[delays.len() - 1]));
        for p in [1_usize, 25, 50, 90, 99] {
            let want = delays[(p * delays.len()).div_ceil(100) - 1] as f64;
            let got = cdf[p] as f64;
            assert!(
                (got - want).abs() <= want.abs() * RELATIVE_ERROR + 1.0,
                "p{p}: {got} vs {want}"
            );
        }
    }

    #[test]
    fn a_long_mangled_run_stays_exact_and_small() {
        let m = Mangling {
            flows: 2,
            packets: 400_000,
            loss_permille: 2,
            dup_permille: 1,
            hold_permille: 5,
            max_hold: 300,
            delay_spread_ns: 2_000_000,
            seed: 42,
        };
        // The mangling happened: the comparison is not between two empty answers.
        let (records, sent) = arrivals(m);
        let loss = crate::summarize_all(&records, &sent).total.loss;
        assert!(
            loss.lost > 500 && loss.duplicates > 200 && loss.reordered > 1_000,
            "{loss:?}"
        );
        let bytes = check(m);
        assert!(bytes < 16 * 1024, "{bytes} bytes");
    }

    /// Found by the log fuzz target: two flows whose first packets reveal gaps of nearly
    /// 2^64 sequence numbers in the same window.
    #[test]
    fn huge_sequence_gaps_in_one_window_saturate() {
        let mut all = SummaryMeter::new().with_intervals(IntervalSeries::new(1_000_000).unwrap());
        for (flow, seq) in [(0, 7_566_047_373_982_433_280), (65_536, u64::MAX - 1)] {
            all.handle_record(&RxRecord {
                flow,
                seq,
                tx_ns: 64,
                rx_ns: 35_184_372_088_832,
                ..RxRecord::default()
            });
        }
        let series = all.intervals().unwrap().unwrap();
        assert_eq!(series[0].lost, Some(u64::MAX));
        let summary = all.summary(&BTreeMap::from([(1, 10)]));
        assert_eq!(summary.total.loss.lost, u64::MAX);
    }

    #[test]
    fn window_and_run_limits_are_what_the_docs_say() {
        assert_eq!(WINDOW_PACKETS, 65_536);
        assert_eq!(MAX_OPEN_RUNS, 128);
    }
    #[test]
    fn the_delay_variance_is_exact_far_from_zero_and_when_it_overflows() {
        let arrivals = |delays: &[i64]| {
            let mut a = Arrivals::default();
            for (seq, &d) in delays.iter().enumerate() {
                let tx_ns = BASE_NS;
                let rx_ns = tx_ns.checked_add_signed(d).unwrap();
                let r = RxRecord {
                    flow: 1,
                    seq: seq as u64,
                    size_bytes: 64,
                    tx_ns,
                    rx_ns,
                    tos: None,
                    hop_limit: None,
                    flow_label: None,
                    kernel_ts: false,
                    rtp_ts: None,
                };
                a.handle(&r, r.delay_ns());
            }
            a
        };
        // Delays of an hour plus 1, 3, 5, 7 ns: mean +4, variance (9+1+1+9)/4 = 5.
        // A running mean in f64 near 3.6e12 keeps about 1e-3 ns of it.
        let hour = 3_600_000_000_000;
        let a = arrivals(&[hour + 1, hour + 3, hour + 5, hour + 7]);
        assert_eq!(a.delay_variance(), 5.0);
        assert_eq!(a.delay_stats().unwrap().stddev_ns, 5f64.sqrt());
        // One packet, or all alike: none.
        assert_eq!(arrivals(&[-42]).delay_variance(), 0.0);
        assert_eq!(arrivals(&[7, 7, 7]).delay_variance(), 0.0);
        // Deviations of ±1e15 ns over 20,000 packets overflow n·S2 (2e34 · 2e4 > 3.4e38):
        // the floating-point form gives the same 1e30 within its precision.
        let wide: Vec<i64> = (0..20_000)
            .map(|i| if i % 2 == 0 { 0 } else { 2_000_000_000_000_000 })
            .collect();
        let var = arrivals(&wide).delay_variance();
        assert!((var / 1e30 - 1.0).abs() < 1e-12, "{var}");
    }
    /// Found by the `meter_diff` fuzz target: delays decades apart (a sender's stamps
    /// stepping between real time and 0) passed 2^128 in the sum of squares within a
    /// few hundred packets; it saturated there and the deviation came out 0.
    #[test]
    fn delays_decades_apart_keep_their_deviation() {
        let decades = 1_700_000_000_000_000_000;
        let delays: Vec<i64> = (0..1_000)
            .map(|i| {
                if i % 4 == 0 {
                    -3_600_000_000_000
                } else {
                    decades
                }
            })
            .collect();
        let (mut one, mut runs) = (Arrivals::default(), Arrivals::default());
        for (seq, &d) in delays.iter().enumerate() {
            let r = RxRecord {
                seq: seq as u64,
                tx_ns: BASE_NS,
                rx_ns: BASE_NS.checked_add_signed(d).unwrap(),
                ..RxRecord::default()
            };
            one.handle(&r, d);
        }
        for chunk in delays.chunks(4) {
            runs.handle(&RxRecord::default(), chunk[0]);
            runs.handle_run(&RxRecord::default(), chunk[1], 3);
        }
        let want = crate::stats::Stats::from_i64(&delays)
            .unwrap()
            .stddev_population;
        for a in [&one, &runs] {
            let got = a.delay_stats().unwrap().stddev_ns;
            assert!((got / want - 1.0).abs() < 1e-9, "{got} vs {want}");
        }
    }

    /// Datagrams of coalesced receives: runs of consecutive numbers that share every
    /// other field, in order, after gaps (a few past the reordering window, many past
    /// the open-run limit), late, or again. Taken a run at a time they leave the meter
    /// exactly as one record at a time does, every float to the bit.
    #[test]
    fn a_run_of_records_is_metered_as_its_records_one_by_one() {
        for seed in 0..300u64 {
            let mut rng = Rng(seed);
            let mut runs: Vec<(RxRecord, u64)> = Vec::new();
            let mut next = rng.below(3) * (u64::from(u32::MAX) - 20);
            for k in 0..400u64 {
                let longest = if rng.below(4) == 0 { 3 } else { 46 };
                let n = 1 + rng.below(longest);
                let start = match rng.below(12) {
                    // Late or again: below what came before.
                    0 | 1 => next.saturating_sub(1 + rng.below(120)),
                    2 => next + 1 + rng.below(3),
                    3 if seed % 5 == 0 => next + WINDOW_PACKETS + rng.below(50),
                    4 if seed % 7 == 0 => next + 1 + rng.below(40),
                    _ => next,
                };
                next = next.max(start + n);
                let rx_ns = BASE_NS + k * 3_000_000;
                let delay = 20_000 + rng.below(if seed % 3 == 0 { 2 } else { 90_000 });
                let r = RxRecord {
                    flow: 9,
                    seq: start,
                    size_bytes: 1 + rng.below(1400) as u32,
                    tx_ns: rx_ns - delay,
                    rx_ns,
                    tos: (rng.below(9) > 0).then_some(0xb8),
                    hop_limit: Some(64),
                    flow_label: None,
                    kernel_ts: rng.below(10) > 0,
                    rtp_ts: (seed % 2 == 0).then_some(k as u32 * 160),
                };
                runs.push((r, n));
            }
            let meter = || {
                let m = FlowMeter::new(9).with_intervals(IntervalSeries::new(50_000_000).unwrap());
                if seed % 2 == 0 {
                    m.with_rtp_clock(8_000)
                } else {
                    m
                }
            };
            let (mut one, mut many) = (meter(), meter());
            for (r, n) in &runs {
                let singles: Vec<Arrival> = (0..*n)
                    .map(|k| {
                        one.handle_record(&RxRecord {
                            seq: r.seq + k,
                            ..*r
                        })
                    })
                    .collect();
                assert_eq!(many.handle_records(r, *n), singles[0], "seed {seed}");
            }
            assert_eq!(one, many, "seed {seed}");
            assert_eq!(one.summary(Some(next)), many.summary(Some(next)));
        }
    }
}
