//! Many flows on one timer: the [`Scheduler`] keeps every flow's [`Schedule`] in one
//! min-heap of deadlines, so one sender thread serves thousands of flows, each packet
//! in deadline order.
//!
//! It is sans-IO like a single [`Schedule`]: the driver asks [`Scheduler::poll_timeout`]
//! when the earliest packet of any flow is due, sleeps until then, and drains
//! [`Scheduler::poll_transmit`] with one clock reading. Packets come out in deadline
//! order across flows (ties by flow index), so no flow waits behind another's backlog:
//! a flow that is late only delays packets that were due after its own. A flow whose
//! connection cannot take more (a full TCP window) is parked with
//! [`Scheduler::handle_park`] and leaves the heap until [`Scheduler::handle_unpark`].
//!
//! Unpaced flows (bulk) have no deadlines: each is served up to [`UNPACED_BURST`] packets
//! per instant (one `sendmmsg` batch of UDP datagrams; a TCP flow's window parks it
//! sooner), then keyed by the instant after, so several bulk flows on one scheduler take
//! turns, and a paced flow that falls due waits at most one burst of each.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use wire::time::{Duration, Instant};

use crate::schedule::{Schedule, Transmit};

const ONE_NS: Duration = Duration::from_nanos(1);

/// The most packets an unpaced flow is handed at one instant.
pub const UNPACED_BURST: u32 = 64;

/// A flow's place in a [`Scheduler`], as [`Scheduler::insert`] returned it.
pub type FlowIndex = usize;

/// Every flow of one sender thread, on one heap of deadlines.
#[derive(Debug, Default)]
pub struct Scheduler {
    flows: Vec<Slot>,
    /// `(deadline, flow)`; an entry whose deadline no longer matches its flow's key is
    /// stale and skipped (a flow has at most one live entry).
    heap: BinaryHeap<Reverse<(Instant, FlowIndex)>>,
    /// Flows not yet finished.
    active: usize,
}

#[derive(Debug)]
struct Slot {
    sched: Schedule,
    /// The deadline of the flow's live heap entry; `None` while it has none (parked or
    /// finished).
    key: Option<Instant>,
    parked: bool,
    finished: bool,
    /// An unpaced flow: the instant it was last served at, and how many packets then.
    burst: (Instant, u32),
}

impl Scheduler {
    /// An empty scheduler.
    pub fn new() -> Self {
        Self::default()
    }

    /// Add a flow; returns its index.
    pub fn insert(&mut self, sched: Schedule) -> FlowIndex {
        let i = self.flows.len();
        self.flows.push(Slot {
            sched,
            key: None,
            parked: false,
            finished: false,
            burst: (Instant::from_nanos(0), 0),
        });
        self.active += 1;
        self.requeue(i, None);
        i
    }

    /// Move every deadline `by` later, as if each flow had been made at an origin `by`
    /// later. A sender inserts thousands of flows made at origin zero while it sets them
    /// up, then starts them all at once at the origin it fixes when it is ready; the
    /// insertion's allocations and page faults then fall before the first deadline.
    pub fn delay(&mut self, by: Duration) {
        for slot in &mut self.flows {
            slot.sched.delay(by);
            slot.key = slot.key.map(|k| k + by);
            slot.burst.0 += by;
        }
        // The same shift for every entry keeps the heap's order.
        let mut heap = std::mem::take(&mut self.heap).into_vec();
        for Reverse((at, _)) in &mut heap {
            *at += by;
        }
        self.heap = BinaryHeap::from(heap);
    }

    /// Flows added.
    pub fn len(&self) -> usize {
        self.flows.len()
    }

    /// Whether no flow was added.
    pub fn is_empty(&self) -> bool {
        self.flows.is_empty()
    }

    /// A flow's schedule (its counts, start and end).
    pub fn schedule(&self, i: FlowIndex) -> &Schedule {
        &self.flows[i].sched
    }

    /// Whether every flow has handed out its last packet (or was stopped).
    pub fn is_finished(&self) -> bool {
        self.active == 0
    }

    /// Whether flow `i` has ended.
    pub fn is_flow_finished(&self, i: FlowIndex) -> bool {
        self.flows[i].finished
    }

    /// When the earliest packet of any flow that is not parked is due; `None` if no such
    /// flow has packets left. A soft deadline, as [`Schedule::poll_timeout`]'s.
    pub fn poll_timeout(&mut self) -> Option<Instant> {
        self.drop_stale();
        self.heap.peek().map(|Reverse((at, _))| *at)
    }

    /// The packet due earliest across all flows, if one is due at `now`, with its flow.
    pub fn poll_transmit(&mut self, now: Instant) -> Option<(FlowIndex, Transmit)> {
        loop {
            self.drop_stale();
            let &Reverse((at, i)) = self.heap.peek()?;
            if at > now {
                return None;
            }
            // An unpaced flow in the middle of its burst at `now` is keyed `now` and would
            // be keyed `now` again: it stays on top, and the heap is left alone (popping,
            // requeueing and pushing it per packet took 7 % of a bulk sender's time).
            let slot = &mut self.flows[i];
            if at == now
                && slot.burst.0 == now
                && slot.burst.1 + 1 < UNPACED_BURST
                && slot.sched.is_unpaced()
            {
                if let Some(t) = slot.sched.poll_transmit(now) {
                    if slot.sched.poll_timeout().is_some_and(|due| due <= now) {
                        slot.burst.1 += 1;
                        return Some((i, t));
                    }
                    // Its last packet: off the heap as below.
                    self.heap.pop();
                    self.flows[i].key = None;
                    self.requeue(i, Some(now));
                    return Some((i, t));
                }
            }
            self.heap.pop();
            self.flows[i].key = None;
            let t = self.flows[i].sched.poll_transmit(now);
            // An unpaced flow is served a burst per instant, then goes behind everything
            // due now, so draining one instant ends.
            let slot = &mut self.flows[i];
            let served = slot.sched.is_unpaced().then(|| {
                slot.burst = match slot.burst {
                    (at, n) if at == now => (at, n + 1),
                    _ => (now, 1),
                };
                if slot.burst.1 < UNPACED_BURST {
                    now
                } else {
                    now + ONE_NS
                }
            });
            self.requeue(i, served);
            if let Some(t) = t {
                return Some((i, t));
            }
        }
    }

    /// Take flow `i` off the heap until [`Self::handle_unpark`]: its connection cannot
    /// take more now. Its packets fall due meanwhile and are handed out late.
    pub fn handle_park(&mut self, i: FlowIndex) {
        let slot = &mut self.flows[i];
        slot.parked = true;
        slot.key = None;
    }

    /// Put a parked flow back; at `now` it is served after flows due earlier.
    pub fn handle_unpark(&mut self, i: FlowIndex, now: Instant) {
        if !self.flows[i].parked {
            return;
        }
        self.flows[i].parked = false;
        let served = self.flows[i].sched.is_unpaced().then_some(now);
        self.requeue(i, served);
    }

    /// Whether flow `i` is parked.
    pub fn is_parked(&self, i: FlowIndex) -> bool {
        self.flows[i].parked
    }

    /// Stop one flow (its connection failed, or the receiver refused it).
    pub fn handle_stop_flow(&mut self, i: FlowIndex) {
        self.flows[i].sched.handle_stop();
        self.requeue(i, None);
    }

    /// Stop every flow (interrupted by the user, or the receiver went away).
    pub fn handle_stop(&mut self) {
        for i in 0..self.flows.len() {
            self.handle_stop_flow(i);
        }
    }

    /// Give flow `i` a live heap entry at its next deadline (an unpaced flow at
    /// `served`, when it was last served), or mark it finished.
    fn requeue(&mut self, i: FlowIndex, served: Option<Instant>) {
        let slot = &mut self.flows[i];
        if slot.finished {
            return;
        }
        let Some(due) = slot.sched.poll_timeout() else {
            slot.finished = true;
            slot.key = None;
            self.active -= 1;
            return;
        };
        if slot.parked {
            return;
        }
        let at = match served {
            Some(t) => due.max(t),
            None => due,
        };
        if slot.key == Some(at) {
            return;
        }
        slot.key = Some(at);
        self.heap.push(Reverse((at, i)));
    }

    /// Pop entries that no longer match their flow's key.
    fn drop_stale(&mut self) {
        while let Some(&Reverse((at, i))) = self.heap.peek() {
            if self.flows[i].key == Some(at) {
                return;
            }
            self.heap.pop();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::flow::{FlowSpec, StopSpec};
    use crate::units::Rate;
    use wire::time::Duration;

    fn flow(pps: u64, start_us: u64, count: u64) -> FlowSpec {
        FlowSpec {
            rate: Rate::MilliPps(pps * 1000),
            size_bytes: 160,
            start_offset: Duration::from_micros(start_us),
            stop: StopSpec {
                count: Some(count),
                ..StopSpec::default()
            },
            ..FlowSpec::default()
        }
    }

    /// Run a scheduler in virtual time, always waking exactly at its timeout: every
    /// packet, in the order handed out, with the instant it was handed out.
    fn drain(s: &mut Scheduler) -> Vec<(Instant, FlowIndex, Transmit)> {
        let mut out = Vec::new();
        while let Some(at) = s.poll_timeout() {
            let before = out.len();
            while let Some((i, t)) = s.poll_transmit(at) {
                out.push((at, i, t));
            }
            assert!(out.len() > before, "woke at {at:?} for nothing");
        }
        out
    }

    /// SplitMix64, for reproducible random rates.
    struct Rng(u64);
    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = self.0;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^ (z >> 31)
        }
    }

    #[test]
    fn thousands_of_flows_each_packet_at_its_deadline() {
        let origin = Instant::from_nanos(1_000_000);
        let mut s = Scheduler::new();
        let mut specs = Vec::new();
        for k in 0..5_000u64 {
            // 50 pkt/s each, start phases spread over one 20 ms period.
            let spec = flow(50, (k * 7_919) % 20_000, 10);
            s.insert(Schedule::new(&spec, origin).unwrap());
            specs.push(spec);
        }
        let out = drain(&mut s);
        assert_eq!(out.len(), 50_000);
        assert!(s.is_finished());
        // In virtual time nothing is late: each packet leaves at its own deadline, and
        // the deadlines are those of the flow's own schedule.
        let mut next_seq = vec![0u64; specs.len()];
        let mut last = Instant::from_nanos(0);
        for (at, i, t) in &out {
            assert_eq!(*at, t.scheduled);
            assert!(*at >= last, "out of deadline order");
            last = *at;
            assert_eq!(t.seq, next_seq[*i], "flow {i} out of sequence");
            next_seq[*i] += 1;
            let alone = Schedule::new(&specs[*i], origin).unwrap();
            assert_eq!(t.scheduled, alone.deadline(t.seq));
        }
        assert!(next_seq.iter().all(|&n| n == 10));

        // Inserted at origin zero and delayed to `origin`: the same packets, in the same
        // order, at the same instants.
        let mut delayed = Scheduler::new();
        for spec in &specs {
            delayed.insert(Schedule::new(spec, Instant::ZERO).unwrap());
        }
        delayed.delay(origin - Instant::ZERO);
        assert_eq!(drain(&mut delayed), out);
    }

    #[test]
    fn random_rates_no_flow_starves_even_when_the_sender_is_late() {
        for seed in 0..20u64 {
            let mut rng = Rng(seed);
            let origin = Instant::from_nanos(0);
            let mut s = Scheduler::new();
            let mut want = Vec::new();
            let flows = 1 + rng.next() % 300;
            for _ in 0..flows {
                let pps = 1 + rng.next() % 100_000;
                let count = 1 + rng.next() % 50;
                let spec = flow(pps, rng.next() % 10_000, count);
                s.insert(Schedule::new(&spec, origin).unwrap());
                want.push(count);
            }
            // A sender that wakes late by a random amount each time, and serves at most
            // a few packets per wake-up: every packet still goes out, each flow in
            // sequence, and among the packets handed out at one wake-up the earliest
            // deadline goes first.
            let mut got = vec![0u64; want.len()];
            let mut now = origin;
            let mut rounds = 0;
            while let Some(at) = s.poll_timeout() {
                now = now.max(at) + Duration::from_nanos(rng.next() % 200_000);
                let mut prev = None;
                for _ in 0..(1 + rng.next() % 8) {
                    let Some((i, t)) = s.poll_transmit(now) else {
                        break;
                    };
                    assert!(t.scheduled <= now);
                    assert!(prev.is_none_or(|p| p <= t.scheduled));
                    prev = Some(t.scheduled);
                    assert_eq!(t.seq, got[i]);
                    got[i] += 1;
                }
                rounds += 1;
                assert!(rounds < 1_000_000);
            }
            assert_eq!(got, want, "seed {seed}");
        }
    }

    #[test]
    fn a_parked_flow_waits_and_others_go_on() {
        let origin = Instant::from_nanos(0);
        let mut s = Scheduler::new();
        let a = s.insert(Schedule::new(&flow(1_000, 0, 5), origin).unwrap());
        let b = s.insert(Schedule::new(&flow(1_000, 500, 5), origin).unwrap());
        assert_eq!(s.poll_transmit(origin).map(|(i, _)| i), Some(a));
        s.handle_park(a);
        assert!(s.is_parked(a));
        // Only b's packets come while a is parked.
        let t5 = Instant::from_nanos(5_000_000);
        let mut got = Vec::new();
        while let Some((i, _)) = s.poll_transmit(t5) {
            got.push(i);
        }
        assert_eq!(got, vec![b; 5]);
        assert_eq!(s.poll_timeout(), None);
        assert!(!s.is_finished());
        // Unparked, a's four late packets are all due at once.
        s.handle_unpark(a, t5);
        let late: Vec<_> = std::iter::from_fn(|| s.poll_transmit(t5)).collect();
        assert_eq!(late.len(), 4);
        assert!(late.iter().all(|(i, _)| *i == a));
        assert!(s.is_finished());
    }

    #[test]
    fn stopping_ends_every_flow() {
        let origin = Instant::from_nanos(0);
        let mut s = Scheduler::new();
        for k in 0..10 {
            s.insert(Schedule::new(&flow(100, k, 1_000), origin).unwrap());
        }
        assert!(s.poll_transmit(origin).is_some());
        s.handle_stop();
        assert!(s.is_finished());
        assert_eq!(s.poll_timeout(), None);
        assert_eq!(s.poll_transmit(Instant::from_nanos(u64::MAX / 2)), None);
    }

    #[test]
    fn unpaced_flows_take_turns_in_bursts_and_a_due_paced_flow_waits_one_burst_of_each() {
        let origin = Instant::from_nanos(0);
        let mut s = Scheduler::new();
        let bulk = |count| FlowSpec {
            unpaced: true,
            ..flow(1, 0, count)
        };
        let n = UNPACED_BURST as usize;
        let x = s.insert(Schedule::new(&bulk(10 * n as u64), origin).unwrap());
        let y = s.insert(Schedule::new(&bulk(10 * n as u64), origin).unwrap());
        let p = s.insert(Schedule::new(&flow(1_000, 10, 3), origin).unwrap());
        // Each instant is drained, as a sender thread does.
        let mut drain = |us: u64| {
            let now = Instant::from_nanos(us * 1_000);
            std::iter::from_fn(|| s.poll_transmit(now))
                .map(|(i, _)| i)
                .collect::<Vec<_>>()
        };
        // One instant: a burst of each bulk flow, in turn, then it ends.
        let first = drain(0);
        assert_eq!(first.len(), 2 * n);
        assert!(first[..n].iter().all(|&i| i == x), "{first:?}");
        assert!(first[n..].iter().all(|&i| i == y), "{first:?}");
        // The paced flow, due at 10 µs, goes after one burst of each bulk flow.
        let at_10 = drain(10);
        assert_eq!(at_10.len(), 2 * n + 1, "{at_10:?}");
        assert_eq!(at_10[2 * n], p);
        assert_eq!(at_10.iter().filter(|&&i| i == p).count(), 1);
    }
    #[test]
    fn an_unpaced_flow_is_served_whole_bursts_to_its_last_packet() {
        // 150 packets: bursts of 64 at successive instants, the last one short, every
        // sequence number once and in order; a paced flow keeps its turn meanwhile.
        let origin = Instant::from_nanos(1_000);
        let mut s = Scheduler::new();
        let bulk = FlowSpec {
            unpaced: true,
            ..flow(1, 0, 150)
        };
        let x = s.insert(Schedule::new(&bulk, origin).unwrap());
        let p = s.insert(Schedule::new(&flow(1_000_000, 0, 2), origin).unwrap());
        let mut bursts = Vec::new();
        let mut seqs = Vec::new();
        for ns in 0..4 {
            let now = origin + Duration::from_nanos(ns);
            let got: Vec<_> = std::iter::from_fn(|| s.poll_transmit(now)).collect();
            seqs.extend(got.iter().filter(|(i, _)| *i == x).map(|(_, t)| t.seq));
            bursts.push(
                got.iter()
                    .map(|(i, _)| if *i == x { 'x' } else { 'p' })
                    .collect::<String>(),
            );
        }
        let n = UNPACED_BURST as usize;
        // The paced flow's first packet is due at the origin, with the bulk flow's
        // first: it has the higher index, so it follows one burst.
        assert_eq!(bursts[0], format!("{}p", "x".repeat(n)));
        assert_eq!(bursts[1], "x".repeat(n));
        assert_eq!(bursts[2], "x".repeat(150 - 2 * n));
        assert_eq!(bursts[3], "");
        assert_eq!(seqs, (0..150).collect::<Vec<u64>>());
        assert!(s.is_flow_finished(x));
        assert!(!s.is_flow_finished(p));
    }
}
