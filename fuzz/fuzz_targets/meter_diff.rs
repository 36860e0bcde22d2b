//! Arbitrary bytes as the packets of a few flows on their way from a sender to a
//! receiver (loss, gaps past the reordering window, duplicates, late packets, 32-bit
//! sequence numbers that wrap, clock steps on either side, sizes and marking that
//! change, coalesced runs) and as the records both ends make of them. The streaming
//! meters must give what the batch reference gives from the whole record list:
//! - `FlowMeter` fed as a receiver's shard feeds it (a run of consecutive numbers in
//!   one step, `handle_records`, its numbers unwrapped by `SeqUnwrapper`) is equal,
//!   state and answers, to one fed one record at a time;
//! - that meter's summary, interval series and RTP jitter equal `summarize`,
//!   `try_intervals` and `rtp_jitter` of the flow's records, and `SummaryMeter` (as
//!   `decode` feeds it) equals `summarize_all`, `try_intervals` and
//!   `rtp_jitter_by_flow` of them all;
//! - `TxMeter`, a batch at a time or a record at a time, equals `sent_summary` and
//!   `schedule_error_with`.
//!
//! Every exact figure is compared for equality; the delay standard deviation to
//! rounding; histogram percentiles within `hist::RELATIVE_ERROR` (so exactly below 64).
//! A packet older than the reordering window (`Loss::outside_window`) is where the
//! stream may differ from the batch: there its sequence figures are held to the bounds
//! that difference allows, and every other figure is still compared exactly.
#![no_main]
use std::collections::BTreeMap;

use libfuzzer_sys::fuzz_target;
use meter::hist::RELATIVE_ERROR;
use meter::seq::{MAX_OPEN_RUNS, WINDOW_PACKETS};
use meter::{
    rtp_jitter, rtp_jitter_by_flow, schedule_error_with, sent_summary, summarize, summarize_all,
    try_intervals, Arrival, FlowMeter, FlowSummary, Interval, IntervalError, IntervalSeries,
    RxRecord, SummaryMeter, TxMeter, TxRecord,
};
use wire::probe::SeqUnwrapper;

/// Records at most per input (a run counts its packets), to keep an input fast.
const MAX_RECORDS: usize = 40_000;
/// Windows at most in an interval series the target builds.
const MAX_SERIES: u64 = 1_024;
const MS: u64 = 1_000_000;

/// The input, a byte at a time; zeros once it is used up.
struct Bytes<'a>(&'a [u8]);

impl Bytes<'_> {
    fn byte(&mut self) -> u8 {
        let (&b, rest) = self.0.split_first().unwrap_or((&0, &[]));
        self.0 = rest;
        b
    }

    fn u16(&mut self) -> u16 {
        u16::from_be_bytes([self.byte(), self.byte()])
    }

    fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// One sender's flow: its next number and what its packets carry.
struct Gen {
    id: u32,
    /// 32-bit numbers on the wire, unwrapped by the receiver; else 64-bit numbers as
    /// a log holds them (`decode`), fed as they are.
    wire: bool,
    first: u128,
    /// The next new number (u128: a raw flow may send up to u64::MAX itself).
    next: u128,
    /// Numbers skipped and not delivered yet, `[start, end)`.
    missing: Vec<(u128, u128)>,
    delay_ns: i64,
    rtp_hz: Option<u32>,
    sent: Option<u64>,
    template: RxRecord,
}

impl Gen {
    /// Flow `i` as four bytes describe it.
    fn new(i: usize, b: &mut Bytes) -> Self {
        let (f0, f1, f2, f3) = (b.byte(), b.byte(), b.byte(), b.byte());
        let i = i as u32;
        let id = match f0 & 3 {
            0 | 1 => i + 1,
            2 => 65_535 - i,
            _ => u32::MAX - i,
        };
        let (wire, first) = match f0 >> 2 & 3 {
            0 => (true, 0),
            1 => (true, u128::from(u32::MAX - u32::from(f1))),
            2 => (true, u128::from(f1) << 24),
            _ => (false, u128::from(u64::MAX - u64::from(f1))),
        };
        let rtp_hz = (f2 & 1 == 1).then(|| [8_000, 90_000, 48_000, 1][usize::from(f2 >> 1 & 3)]);
        Gen {
            id,
            wire,
            first,
            next: first,
            missing: Vec::new(),
            delay_ns: i64::from(f2 >> 3) * 20_000 - if f0 & 0x10 != 0 { 300_000 } else { 0 },
            rtp_hz,
            // 0: the sender's count is not known (else see `finish_sent`).
            sent: (f3 != 0).then_some(u64::from(f3)),
            template: RxRecord {
                flow: id,
                size_bytes: 64 + u32::from(f1) * 4,
                tos: Some(0xb8),
                hop_limit: Some(64),
                flow_label: (f0 & 0x20 != 0).then_some(0x12345),
                kernel_ts: f0 & 0x40 != 0,
                ..RxRecord::default()
            },
        }
    }

    /// One of the numbers skipped, delivered late (`missing` is not empty).
    fn late(&mut self, arg: u8, t: u8) -> (u128, u32) {
        let i = usize::from(arg) % self.missing.len();
        let (start, end) = self.missing[i];
        let seq = match t % 3 {
            0 => start,
            1 => end - 1,
            _ => start + (end - start) / 2,
        };
        self.missing.remove(i);
        if start < seq {
            self.missing.push((start, seq));
        }
        if seq + 1 < end {
            self.missing.push((seq + 1, end));
        }
        (seq, 1)
    }

    /// What the flow's packets carry changes.
    fn mark(&mut self, arg: u8) {
        let r = &mut self.template;
        match arg % 4 {
            0 => r.size_bytes = u32::from(arg) * 6,
            1 => {
                r.tos = [None, Some(0), Some(0xb8), Some(0xbb)][usize::from(arg / 4 % 4)];
                r.kernel_ts = !r.kernel_ts;
            }
            2 => r.size_bytes = [0, 1, 65_507, u32::MAX][usize::from(arg / 4 % 4)],
            _ => {
                r.hop_limit = (arg > 100).then_some(arg);
                r.flow_label = r.flow_label.map(|l| l ^ u32::from(arg));
            }
        }
    }

    /// The sender's count from its byte: near what it sent, above it too, or far below
    /// (a count that does not match what arrived, as a mismatch would give).
    fn finish_sent(&mut self) {
        let sent = u64::try_from(self.next).unwrap_or(u64::MAX);
        self.sent = self.sent.map(|f3| match f3 {
            0..=127 => sent.saturating_add(3).saturating_sub(f3 % 7),
            _ => sent / (f3 - 126),
        });
    }
}

/// Datagrams of one flow, `n` of them, alike but for their consecutive numbers.
#[derive(Clone, Copy)]
struct Datagrams {
    gen: usize,
    /// The first number: on the wire (a u32) for a wire flow, else as logged.
    seq: u64,
    n: u32,
    record: RxRecord,
}

/// What the bytes describe: the receiver's datagrams in arrival order, the sender's
/// batches in send order, and the figures' parameters.
struct Traffic {
    gens: Vec<Gen>,
    rx: Vec<Datagrams>,
    tx: Vec<(TxRecord, u64)>,
    window_ns: u64,
    max_windows: u64,
    late_threshold_ns: u64,
}

/// The traffic `data` describes: a header (flows, window, limits), four bytes per flow,
/// then events of three bytes (what happens, to which flow, and the time that passes).
fn traffic(data: &[u8]) -> Traffic {
    let mut b = Bytes(data);
    let head = b.byte();
    let flows = 1 + usize::from(head % 4);
    let window_ns = 1u64 << (b.byte() % 40);
    let max_windows = 1 + u64::from(b.u16() % 1_100);
    let late_threshold_ns = u64::from(b.byte()) * 10_000;
    let mut rx_now = match head >> 2 & 3 {
        0 => 1_700_000_000_000_000_000,
        1 => 0,
        2 => 5 * MS,
        _ => u64::MAX - (1 << 40),
    };
    let mut sched_now = 1_000_000_000u64;
    let mut gens: Vec<Gen> = (0..flows).map(|i| Gen::new(i, &mut b)).collect();
    let mut rx: Vec<Datagrams> = Vec::new();
    let mut tx: Vec<(TxRecord, u64)> = Vec::new();
    let mut records = 0usize;
    while !b.is_empty() && records < MAX_RECORDS {
        let op = b.byte();
        let arg = b.byte();
        let t = b.byte();
        rx_now = rx_now.saturating_add(u64::from(t) * 10_000);
        sched_now += u64::from(t) * 10_000;
        let g = &mut gens[usize::from(op) % flows];
        // The packet's delay: the flow's, varied a little.
        let delay = g.delay_ns + i64::from(t) * 7_919 % 5_000;
        let mut record = RxRecord {
            tx_ns: rx_now.saturating_add_signed(-delay),
            rx_ns: rx_now,
            ..g.template
        };
        // New numbers sent: (skipped, then delivered in a run of).
        let mut send = |g: &mut Gen, skipped: u128, n: u32| {
            if skipped > 0 {
                g.missing.push((g.next, g.next + skipped));
                if g.missing.len() > 256 {
                    g.missing.remove(0);
                }
            }
            let err = u64::from(t) * u64::from(t) * 50;
            let actual_ns = if t % 5 == 0 {
                sched_now - err
            } else {
                sched_now + err
            };
            let sent_seq = u64::try_from(g.next).unwrap_or(u64::MAX);
            let lost = u64::try_from(skipped.min(64)).unwrap_or(64);
            let tx_record = |seq: u64, size_bytes: u32| TxRecord {
                flow: g.id,
                seq,
                size_bytes,
                scheduled_ns: sched_now,
                actual_ns,
            };
            if lost > 0 {
                tx.push((tx_record(sent_seq, g.template.size_bytes), lost));
            }
            g.next += skipped;
            let first = g.next;
            g.next += u128::from(n);
            let seq = u64::try_from(first).unwrap_or(u64::MAX);
            tx.push((tx_record(seq, g.template.size_bytes), u64::from(n)));
            (first, n)
        };
        let delivered: Option<(u128, u32)> = match op >> 2 & 7 {
            // In order: one packet, or a coalesced run.
            0 | 1 => Some(send(g, 0, 1)),
            2 => Some(send(g, 0, 1 + u32::from(arg % 64))),
            // Loss, then the next packet: a few, or past the reordering window.
            3 => {
                let skipped = match arg {
                    255 => 1 + u128::from(b.u16()) * 2,
                    254 if !g.wire => {
                        // Up to u64::MAX itself, as an untrusted log may hold.
                        (u128::from(u64::MAX) - u128::from(b.byte())).saturating_sub(g.next)
                    }
                    _ => 1 + u128::from(arg % 64),
                };
                Some(send(g, skipped, 1))
            }
            // A duplicate of a recent packet.
            4 => {
                let back = 1 + u128::from(arg % 8);
                (g.next >= g.first + back).then(|| (g.next - back, 1))
            }
            // A late packet: one of the numbers skipped, if any.
            5 => {
                if g.missing.is_empty() {
                    Some(send(g, 0, 1))
                } else {
                    Some(g.late(arg, t))
                }
            }
            // A clock steps: the receiver's back or forward, or the sender's.
            6 => {
                match arg % 4 {
                    0 => rx_now = rx_now.saturating_sub(u64::from(arg / 4 + 1) * MS),
                    1 => rx_now = rx_now.saturating_add(u64::from(arg / 4) * 1_000 * MS),
                    2 => g.delay_ns += i64::from(arg as i8) * 100_000,
                    _ => {
                        g.delay_ns = match arg / 4 % 4 {
                            0 => -3_600_000_000_000,
                            1 => 1_700_000_000_000_000_000,
                            2 => 0,
                            _ => -1_700_000_000_000_000_000,
                        }
                    }
                }
                None
            }
            // What the packets carry changes.
            _ => {
                g.mark(arg);
                None
            }
        };
        if let Some((first, n)) = delivered {
            let first64 = u64::try_from(first).unwrap_or(u64::MAX);
            record.rtp_ts = g.rtp_hz.map(|_| {
                (first64 as u32)
                    .wrapping_mul(160)
                    .wrapping_add(u32::from(t) * 3)
            });
            rx.push(Datagrams {
                gen: usize::from(op) % flows,
                seq: if g.wire {
                    u64::from(first64 as u32)
                } else {
                    first64
                },
                n,
                record,
            });
            records += n as usize;
        }
    }
    for g in &mut gens {
        g.finish_sent();
    }
    // Windows wide enough that no series has more than MAX_SERIES of them.
    let span = {
        let lo = rx.iter().map(|d| d.record.rx_ns).min().unwrap_or(0);
        let hi = rx.iter().map(|d| d.record.rx_ns).max().unwrap_or(0);
        hi - lo
    };
    Traffic {
        gens,
        rx,
        tx,
        window_ns: window_ns.max(span / MAX_SERIES + 1),
        max_windows,
        late_threshold_ns,
    }
}

/// `|got − want| ≤ |want| · RELATIVE_ERROR`: the histogram's bound.
fn within(got: i128, want: i128) -> bool {
    (got - want).unsigned_abs() as f64 <= want.unsigned_abs() as f64 * RELATIVE_ERROR
}

/// Whether a sender's count `sent` may fall among loss runs the meter has closed
/// (`meter::seq`: more than the window below NextExp, or with more runs revealed than it
/// keeps open), where its loss is an upper bound.
fn among_closed(own: &[RxRecord], sent: Option<u64>) -> bool {
    let Some(sent) = sent else {
        return false;
    };
    let (mut next, mut revealed) = (0u128, 0);
    for r in own {
        let seq = u128::from(r.seq);
        if seq >= next {
            revealed += usize::from(seq > next);
            next = seq + 1;
        }
    }
    let sent = u128::from(sent);
    sent < next && (next - sent > u128::from(WINDOW_PACKETS) || revealed >= MAX_OPEN_RUNS)
}

/// The rounding allowed between the meter's delay deviation and the batch's two-pass
/// one over `records`: the batch's own, and where the meter's sums about the first delay
/// overflow 128 bits (`meter::stream`) the error of its floating-point form.
fn stddev_tolerance(records: &[RxRecord], batch_ns: f64) -> f64 {
    let max = records
        .iter()
        .map(|r| r.delay_ns().unsigned_abs())
        .max()
        .unwrap_or(0) as f64;
    let tol = 1e-9 * batch_ns.max(1.0) + 8.0 * f64::EPSILON * max;
    let reference = records.first().map_or(0, RxRecord::delay_ns);
    let (mut s1, mut s2) = (0i128, Some(0u128));
    for r in records {
        s1 += i128::from(r.delay_ns()) - i128::from(reference);
        let dev = u128::from(r.delay_ns().abs_diff(reference));
        s2 = s2.and_then(|s2| s2.checked_add(dev * dev));
    }
    let n = records.len() as u128;
    let s1_sq = s1.unsigned_abs().checked_mul(s1.unsigned_abs());
    if s2.and_then(|s2| s2.checked_mul(n)).is_some() && s1_sq.is_some() {
        return tol;
    }
    // E[x²] − E[x]², both at most (2·max)², each to a few roundings.
    let var_error = 32.0 * f64::EPSILON * 4.0 * max * max;
    tol + var_error.sqrt().min(var_error / batch_ns)
}

/// Holds a streamed summary to the batch one of `records` (see the module doc);
/// `bounded` when the sender's count may fall among closed loss runs.
fn agree(streamed: &FlowSummary, batch: &FlowSummary, records: &[RxRecord], bounded: bool) {
    let mut s = streamed.clone();
    match (&mut s.delay, &batch.delay) {
        (Some(sd), Some(bd)) => {
            let tol = stddev_tolerance(records, bd.stddev_ns);
            assert!(
                (sd.stddev_ns - bd.stddev_ns).abs() <= tol,
                "stddev {sd:?} vs {bd:?}"
            );
            for (got, want) in [
                (sd.p50_ns, bd.p50_ns),
                (sd.p95_ns, bd.p95_ns),
                (sd.p99_ns, bd.p99_ns),
            ] {
                let (got, want) = (got.unwrap(), want.unwrap());
                assert!(
                    within(got.into(), want.into()),
                    "delay percentile {got} vs {want}"
                );
            }
            // PDV p = delay p − min: the same error, relative to the delay.
            for (got, want) in [
                (s.jitter.pdv_p50_ns, batch.jitter.pdv_p50_ns),
                (s.jitter.pdv_p95_ns, batch.jitter.pdv_p95_ns),
                (s.jitter.pdv_p99_ns, batch.jitter.pdv_p99_ns),
            ] {
                let min = i128::from(bd.min_ns);
                let (got, want) = (
                    i128::from(got.unwrap()) + min,
                    i128::from(want.unwrap()) + min,
                );
                assert!(within(got, want), "pdv {got} vs {want}");
            }
            sd.stddev_ns = bd.stddev_ns;
            (sd.p50_ns, sd.p95_ns, sd.p99_ns) = (bd.p50_ns, bd.p95_ns, bd.p99_ns);
        }
        (sd, bd) => assert_eq!(sd, bd),
    }
    s.jitter.pdv_p50_ns = batch.jitter.pdv_p50_ns;
    s.jitter.pdv_p95_ns = batch.jitter.pdv_p95_ns;
    s.jitter.pdv_p99_ns = batch.jitter.pdv_p99_ns;
    let (sl, bl) = (&streamed.loss, &batch.loss);
    assert!(sl.lost <= sl.expected, "over 100 % lost: {sl:?}");
    if bounded {
        // Lost, its periods and the numbers beyond the count: upper bounds (beyond it,
        // less the late packets outside the window, whose numbers stay holes).
        assert!(sl.lost >= bl.lost, "{sl:?} vs {bl:?}");
        assert!(
            sl.beyond_expected + sl.outside_window >= bl.beyond_expected,
            "{sl:?} vs {bl:?}"
        );
        let l = &mut s.loss;
        (l.lost, l.loss_pct, l.beyond_expected) = (bl.lost, bl.loss_pct, bl.beyond_expected);
        (l.bursts, l.mean_burst_len, l.max_burst_len) =
            (bl.bursts, bl.mean_burst_len, bl.max_burst_len);
        l.burst_len_hist = bl.burst_len_hist.clone();
    }
    if sl.outside_window > 0 {
        // Every packet below NextExp is a duplicate, reordered or outside the window;
        // what the stream calls a duplicate or reordered, the batch does too.
        assert_eq!(
            sl.duplicates + sl.reordered + sl.outside_window,
            bl.duplicates + bl.reordered,
            "{sl:?} vs {bl:?}"
        );
        assert!(sl.duplicates <= bl.duplicates && sl.reordered <= bl.reordered);
        assert!(sl.lost >= bl.lost, "{sl:?} vs {bl:?}");
        assert_eq!(
            s.unique_packets + sl.duplicates + sl.outside_window,
            s.packets
        );
        let pairs = |f: &FlowSummary| f.jitter.ipdv.map_or(0, |i| i.pairs);
        assert!(pairs(streamed) <= pairs(batch));
        s.unique_packets = batch.unique_packets;
        s.loss = batch.loss.clone();
        s.jitter.ipdv = batch.jitter.ipdv;
    } else if let (Some(si), Some(bi)) = (&mut s.jitter.ipdv, &batch.jitter.ipdv) {
        for (got, want) in [
            (si.abs_p50_ns, bi.abs_p50_ns),
            (si.abs_p95_ns, bi.abs_p95_ns),
            (si.abs_p99_ns, bi.abs_p99_ns),
        ] {
            assert!(
                within(got.into(), want.into()),
                "|ipdv| percentile {got} vs {want}"
            );
        }
        (si.abs_p50_ns, si.abs_p95_ns, si.abs_p99_ns) =
            (bi.abs_p50_ns, bi.abs_p95_ns, bi.abs_p99_ns);
    }
    assert_eq!(&s, batch);
}

/// Holds a streamed series to the batch one: equal, but where packets fell outside the
/// reordering window (`exact` false) the stream keeps the losses they would have taken
/// back, so its windows may count more lost.
fn agree_series(streamed: Result<Vec<Interval>, IntervalError>, batch: &[Interval], exact: bool) {
    let mut streamed = streamed.expect("a series within its window limit");
    if !exact {
        assert_eq!(streamed.len(), batch.len());
        for (s, b) in streamed.iter_mut().zip(batch) {
            assert!(s.lost >= b.lost, "{s:?} vs {b:?}");
            s.lost = b.lost;
        }
    }
    assert_eq!(streamed, batch);
}

/// The receiver's state of one flow id: fed as a shard feeds it, and one at a time.
struct Receiver {
    shard_seqs: SeqUnwrapper,
    single_seqs: SeqUnwrapper,
    shard: FlowMeter,
    single: FlowMeter,
}

impl Receiver {
    /// Takes datagrams `d` (of a `wire` flow, or a logged one) one record at a time, as
    /// `decode` does (with `all`, which takes every flow, and into `records`), and as the
    /// receiver's shard takes them.
    fn take(
        &mut self,
        d: &Datagrams,
        wire: bool,
        all: &mut SummaryMeter,
        records: &mut Vec<RxRecord>,
    ) {
        // One record at a time, as `decode` and an unbatched receive do.
        let first = records.len();
        let mut arrivals: Vec<Arrival> = Vec::new();
        for k in 0..d.n {
            let seq = if wire {
                self.single_seqs.unwrap((d.seq as u32).wrapping_add(k))
            } else {
                d.seq.saturating_add(u64::from(k))
            };
            let record = RxRecord { seq, ..d.record };
            arrivals.push(self.single.handle_record(&record));
            all.handle_record(&record);
            records.push(record);
        }
        // As the receiver's shard does (`recv::shard::FlowState::handle_datagrams`): a
        // run whose numbers run on above the highest yet in one step.
        let run_first = match (wire, d.n > 1) {
            (true, true) => self.shard_seqs.unwrap_consecutive(d.seq as u32, d.n),
            (false, true) => d.seq.checked_add(u64::from(d.n) - 1).map(|_| d.seq),
            (_, false) => None,
        };
        if let Some(seq) = run_first {
            assert_eq!(seq, records[first].seq, "unwrapped in one step");
            let arrival = self
                .shard
                .handle_records(&RxRecord { seq, ..d.record }, u64::from(d.n));
            assert_eq!(arrival, arrivals[0], "a run's first arrival");
        } else {
            for (k, record) in records[first..].iter().enumerate() {
                let seq = if wire {
                    self.shard_seqs
                        .unwrap((d.seq as u32).wrapping_add(k as u32))
                } else {
                    record.seq
                };
                assert_eq!(seq, record.seq, "unwrapped one by one");
                assert_eq!(self.shard.handle_record(record), arrivals[k]);
            }
        }
    }
}

/// Meters the traffic `data` describes every way and holds the ways to each other.
fn check(data: &[u8]) {
    let t = traffic(data);
    let mut clocks: BTreeMap<u32, u32> = BTreeMap::new();
    let mut sent: BTreeMap<u32, u64> = BTreeMap::new();
    for g in &t.gens {
        if let Some(hz) = g.rtp_hz {
            clocks.entry(g.id).or_insert(hz);
        }
        if let Some(n) = g.sent {
            sent.entry(g.id).or_insert(n);
        }
    }
    let mut receivers: BTreeMap<u32, Receiver> = BTreeMap::new();
    let mut all = SummaryMeter::new().with_intervals(IntervalSeries::new(t.window_ns).unwrap());
    for (&flow, &hz) in &clocks {
        all.set_rtp_clock(flow, hz);
    }
    let mut records: Vec<RxRecord> = Vec::new();
    for d in &t.rx {
        let wire = t.gens[d.gen].wire;
        let flow = d.record.flow;
        let r = receivers.entry(flow).or_insert_with(|| {
            let meter = || {
                let m = FlowMeter::new(flow).with_intervals(
                    IntervalSeries::with_max_windows(t.window_ns, t.max_windows).unwrap(),
                );
                match clocks.get(&flow) {
                    Some(&hz) => m.with_rtp_clock(hz),
                    None => m,
                }
            };
            Receiver {
                shard_seqs: SeqUnwrapper::default(),
                single_seqs: SeqUnwrapper::default(),
                shard: meter(),
                single: meter(),
            }
        });
        r.take(d, wire, &mut all, &mut records);
    }

    let (mut exact, mut any_bounded) = (true, false);
    for (&flow, r) in &receivers {
        assert!(
            r.shard == r.single,
            "flow {flow}: a run at a time leaves another state"
        );
        let own: Vec<RxRecord> = records.iter().filter(|x| x.flow == flow).copied().collect();
        let streamed = r.single.summary(sent.get(&flow).copied());
        assert_eq!(r.shard.summary(sent.get(&flow).copied()), streamed);
        let flow_sent = sent.get(&flow).copied();
        let bounded = among_closed(&own, flow_sent);
        any_bounded |= bounded;
        agree(&streamed, &summarize(&own, flow_sent), &own, bounded);
        let flow_exact = streamed.loss.outside_window == 0;
        exact &= flow_exact;
        let batch = try_intervals(&own, t.window_ns, own[0].rx_ns).unwrap();
        let series = r.single.intervals().unwrap();
        if batch.len() as u64 > t.max_windows {
            assert!(
                matches!(series, Err(IntervalError::TooManyWindows { max, .. }) if max == t.max_windows)
            );
        } else {
            agree_series(series, &batch, flow_exact);
        }
        let want = clocks.get(&flow).and_then(|&hz| rtp_jitter(&own, hz));
        assert_eq!(r.single.rtp(), want);
        let cdf = r.single.delay_cdf_ns().unwrap();
        assert!(cdf.windows(2).all(|w| w[0] <= w[1]), "an ascending cdf");
        let delays = own.iter().map(RxRecord::delay_ns);
        assert_eq!(
            (cdf[0], cdf[100]),
            (delays.clone().min().unwrap(), delays.max().unwrap())
        );
    }

    let streamed = all.summary(&sent);
    let batch = summarize_all(&records, &sent);
    assert_eq!(streamed.flows.len(), batch.flows.len());
    for (s, b) in streamed.flows.iter().zip(&batch.flows) {
        assert_eq!(s.flow, b.flow);
        let own: Vec<RxRecord> = records
            .iter()
            .filter(|x| x.flow == s.flow)
            .copied()
            .collect();
        let bounded = among_closed(&own, sent.get(&s.flow).copied());
        agree(s, b, &own, bounded);
    }
    agree(&streamed.total, &batch.total, &records, any_bounded);
    if let Some(origin) = records.first().map(|r| r.rx_ns) {
        agree_series(
            all.intervals().unwrap(),
            &try_intervals(&records, t.window_ns, origin).unwrap(),
            exact,
        );
    }
    assert_eq!(all.rtp(), rtp_jitter_by_flow(&records, &clocks));

    check_sender(&t);
}

/// The sender's side: a batch at a time and a record at a time, against the batch.
fn check_sender(t: &Traffic) {
    let mut batched = TxMeter::new(t.late_threshold_ns);
    let mut single = TxMeter::new(t.late_threshold_ns);
    let mut sent_records: Vec<TxRecord> = Vec::new();
    for &(r, n) in &t.tx {
        batched.handle_records(&r, n);
        for k in 0..n {
            let r = TxRecord {
                seq: r.seq.saturating_add(k),
                ..r
            };
            single.handle_record(&r);
            sent_records.push(r);
        }
    }
    assert_eq!(batched, single);
    assert_eq!(single.sent_summary(), sent_summary(&sent_records));
    let batch = schedule_error_with(&sent_records, t.late_threshold_ns);
    match (single.schedule_error(), batch) {
        (Some(mut s), Some(b)) => {
            for (got, want) in [(s.p50_ns, b.p50_ns), (s.p99_ns, b.p99_ns)] {
                assert!(
                    within(got.into(), want.into()),
                    "schedule percentile {got} vs {want}"
                );
            }
            (s.p50_ns, s.p99_ns) = (b.p50_ns, b.p99_ns);
            assert_eq!(s, b);
        }
        (s, b) => assert_eq!(s, b),
    }
}

fuzz_target!(|data: &[u8]| check(data));
