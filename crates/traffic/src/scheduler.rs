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
//! per instant (or what [`Scheduler::set_unpaced_burst`] sets: one send call's worth of
//! UDP datagrams; a TCP flow's window parks it sooner), then keyed by the instant after,
//! so several bulk flows on one scheduler take turns, and a paced flow that falls due
//! waits at most one burst of each. [`Scheduler::poll_transmits`] hands out a burst's
//! packets a run at a time, where [`Scheduler::poll_transmit`] hands them out one by one.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use wire::time::{Duration, Instant};

use crate::schedule::{Schedule, Transmit};

const ONE_NS: Duration = Duration::from_nanos(1);

/// The most packets an unpaced flow is handed at one instant, by default.
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
    /// The most packets it is handed at one instant, if unpaced.
    burst_len: u32,
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
            burst_len: UNPACED_BURST,
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

    /// Hand unpaced flow `i` at most `packets` (at least 1) at one instant, instead of
    /// [`UNPACED_BURST`]: a sender whose send call takes 46 datagrams (a UDP GSO run of
    /// 1,400 bytes) sets 46, so a burst is whole calls, not one of 46 and one of 18.
    pub fn set_unpaced_burst(&mut self, i: FlowIndex, packets: u32) {
        self.flows[i].burst_len = packets.max(1);
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
        self.poll_transmits(now, |_| 1).map(|(i, t, _)| (i, t))
    }

    /// The packets due earliest across all flows, if one is due at `now`: a run of `n`
    /// of one flow that differ from the first, `t`, only in their sequence numbers
    /// (`t.seq..t.seq + n`; the RTP marker is the first's alone), exactly the packets
    /// that `n` calls of [`Self::poll_transmit`] would hand out next. `room(i)` says how
    /// many flow `i` can take now (at least 1 is handed out). Runs come from the middle
    /// of an unpaced flow's burst; anything else is handed out one packet at a time.
    pub fn poll_transmits(
        &mut self,
        now: Instant,
        mut room: impl FnMut(FlowIndex) -> u32,
    ) -> Option<(FlowIndex, Transmit, u32)> {
        loop {
            self.drop_stale();
            let &Reverse((at, i)) = self.heap.peek()?;
            if at > now {
                return None;
            }
            // An unpaced flow in the middle of its burst at `now` is keyed `now` and would
            // be keyed `now` again: its entry stays on top, untouched (popping and pushing
            // it per packet took 7 % of a bulk sender's time). `requeue` keeps an entry
            // whose key is unchanged, and ends the flow after its last packet (the entry
            // left behind is stale).
            let slot = &mut self.flows[i];
            if at == now
                && slot.burst.0 == now
                && slot.burst.1 + 1 < slot.burst_len
                && slot.sched.is_unpaced()
            {
                // A packet is served this way while `burst.1 + 1 < burst_len` before it.
                let most = room(i).clamp(1, slot.burst_len - 1 - slot.burst.1);
                if let Some((t, n)) = slot.sched.poll_transmits(now, most) {
                    slot.burst.1 += n;
                    self.requeue(i, Some(now));
                    return Some((i, t, n));
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
                if slot.burst.1 < slot.burst_len {
                    now
                } else {
                    now + ONE_NS
                }
            });
            self.requeue(i, served);
            if let Some(t) = t {
                return Some((i, t, 1));
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

    /// An unpaced flow of `count` packets.
    fn unpaced(count: u64) -> FlowSpec {
        FlowSpec {
            unpaced: true,
            ..flow(1, 0, count)
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
        let x = s.insert(Schedule::new(&unpaced(150), origin).unwrap());
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
    /// Runs are the packets single calls hand out, in the same order: bulk flows with
    /// packet, byte and time limits and bursts of their own length, beside paced flows,
    /// drained at instants a run at a time with the room a sender has left.
    #[test]
    fn runs_are_exactly_the_packets_single_calls_hand_out() {
        let (mut packets, mut in_runs) = (0, 0);
        for seed in 0..200u64 {
            let mut rng = Rng(seed);
            let origin = Instant::from_nanos(5_000);
            let mut one = Scheduler::new();
            for k in 0..1 + rng.next() % 4 {
                let mut spec = FlowSpec {
                    unpaced: rng.next() % 4 != 0,
                    size_bytes: 100 + (rng.next() % 1300) as u32,
                    ..flow(1_000 + rng.next() % 100_000, k * 3, 1 + rng.next() % 400)
                };
                match rng.next() % 3 {
                    0 => spec.stop.bytes = Some(rng.next() % 200_000),
                    1 => spec.stop.duration = Some(Duration::from_micros(rng.next() % 400)),
                    _ => {}
                }
                let i = one.insert(Schedule::new(&spec, origin).unwrap());
                if rng.next() % 2 == 0 {
                    one.set_unpaced_burst(i, 1 + (rng.next() % 70) as u32);
                }
            }
            let mut runs = Scheduler {
                flows: one
                    .flows
                    .iter()
                    .map(|f| Slot {
                        sched: f.sched.clone(),
                        ..*f
                    })
                    .collect(),
                heap: one.heap.clone(),
                active: one.active,
            };
            let (mut singles, mut flattened) = (Vec::new(), Vec::new());
            for step in 0..2_000u64 {
                let now = origin + Duration::from_nanos(step * (rng.next() % 3) * 500);
                singles.extend(std::iter::from_fn(|| one.poll_transmit(now)));
                while let Some((i, t, n)) = runs.poll_transmits(now, |_| (rng.next() % 50) as u32) {
                    assert!(n >= 1);
                    in_runs += u64::from(n > 1) * u64::from(n);
                    flattened.extend((0..u64::from(n)).map(|k| {
                        let marker = t.marker && k == 0;
                        (
                            i,
                            Transmit {
                                seq: t.seq + k,
                                marker,
                                ..t
                            },
                        )
                    }));
                }
                assert_eq!(one.poll_timeout(), runs.poll_timeout(), "seed {seed}");
            }
            assert_eq!(singles, flattened, "seed {seed}");
            packets += flattened.len() as u64;
        }
        // Most packets came in runs: the test compared runs, not single packets.
        assert!(in_runs * 2 > packets, "{in_runs} of {packets}");
    }

    #[test]
    fn a_burst_set_to_one_send_call_hands_out_whole_calls() {
        let origin = Instant::from_nanos(0);
        let mut s = Scheduler::new();
        let x = s.insert(Schedule::new(&unpaced(100), origin).unwrap());
        s.set_unpaced_burst(x, 46);
        let mut calls = Vec::new();
        for ns in 0..4 {
            let now = origin + Duration::from_nanos(ns);
            // A sender that takes 46 at a time.
            let mut room = 46;
            while let Some((_, _, n)) = s.poll_transmits(now, |_| room) {
                room -= n;
                if room == 0 {
                    calls.push(46);
                    room = 46;
                }
            }
            if room < 46 {
                calls.push(46 - room);
            }
        }
        assert_eq!(calls, [46, 46, 8]);
        assert!(s.is_flow_finished(x));
    }
}
