//! Class-based weighted fair queueing with a low-latency priority class (Cisco's LLQ +
//! CBWFQ, pre-HQF), in front of a link whose queue is the interface's tx-ring.
//!
//! - **tx-ring** (reference §1.3): the link's own queue, limited to `tx_ring` packets.
//!   A packet goes straight into the ring while it has room; only when the ring is full
//!   (the interface is *congested*) does it enter the class queues. When the link takes
//!   a packet from the ring, the scheduler refills it.
//! - **Priority class** (`priority`, reference §1.1): served first, strictly. Its
//!   implicit policer (token bucket at the priority rate, burst 200 ms of it unless set)
//!   acts only under congestion: a priority packet that finds the ring full is queued if
//!   the bucket holds its size (which it takes), else dropped. Packets that go straight
//!   into the ring neither need nor take tokens.
//! - **Bandwidth classes** (`bandwidth`, `bandwidth percent`, `bandwidth remaining
//!   percent`, and class-default): served after the priority queue by deficit round
//!   robin with quanta proportional to their bandwidth (pre-HQF proportional sharing of
//!   what the priority class leaves; DRR stands in for Cisco's WFQ weights, a choice
//!   documented here), or by WFQ with φ ∝ bandwidth ([`Scheduler::Wfq`]), or by MDRR
//!   whose low-latency queue is the priority class (strict or alternate). Each has a
//!   tail-drop queue limit.
//!
//! Bytes: the policer counts the packet as given (the Ethernet frame in the router); the
//! link counts frame bytes at its rate.

use std::collections::VecDeque;

use serde::Serialize;
use wire::time::Instant;

use crate::bucket::Bucket;
use crate::drr::{Drr, DrrClass};
use crate::hist::Histogram;
use crate::link::Link;
use crate::mdrr::{LowLatencyMode, Mdrr, MdrrClass, MdrrTarget};
use crate::wfq::{Wfq, WfqClass};
use crate::{DropReason, Verdict};

/// The priority class.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct Priority {
    /// Rate of its conditional policer, bit/s.
    pub rate_bps: u64,
    /// Its burst, bytes (Cisco's default: 200 ms of the rate).
    pub burst_bytes: u64,
    /// Queue limit, packets.
    pub limit_packets: u32,
}

impl Priority {
    /// Cisco's default burst: 200 ms of `rate_bps`.
    pub fn default_burst(rate_bps: u64) -> u64 {
        rate_bps / 8 / 5
    }
}

/// A bandwidth class: its share (any unit, only ratios count) and queue limit.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct Share {
    /// Relative bandwidth (kbit/s, percent, …).
    pub weight: u32,
    /// Queue limit, packets.
    pub limit_packets: u32,
}

/// Where a packet goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub enum Class {
    /// The priority (LLQ) class.
    Priority,
    /// Bandwidth class `n` (in configuration order).
    Bandwidth(usize),
}

/// Counters of one class.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct ClassStats {
    /// Packets offered.
    pub offered_packets: u64,
    /// Bytes offered.
    pub offered_bytes: u64,
    /// Packets that went straight to the ring or left the class queue for it.
    pub sent_packets: u64,
    /// Their bytes.
    pub sent_bytes: u64,
    /// Dropped by the priority class's conditional policer.
    pub dropped_policer: u64,
    /// Tail drops at the class queue.
    pub dropped_queue: u64,
    /// Dropped by the early-drop hook (WRED) before the class queue.
    pub dropped_early: u64,
}

/// How the bandwidth classes (and, under MDRR, the priority class) are served.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Scheduler {
    /// Deficit round robin, quanta ∝ weight; the priority class strictly first.
    #[default]
    Drr,
    /// Self-clocked weighted fair queueing, φ = weight; the priority class strictly
    /// first.
    Wfq,
    /// MDRR with the priority class as its low-latency queue, served strictly.
    MdrrStrict,
    /// MDRR with the priority class as its low-latency queue, alternating with the
    /// others (its quantum is the largest class's).
    MdrrAlternate,
}

enum Inner {
    Drr(Drr),
    Wfq(Wfq),
    Mdrr(Mdrr),
}

impl Inner {
    fn len(&self, class: Class) -> usize {
        match (self, class) {
            (Self::Drr(d), Class::Bandwidth(i)) => d.len(i),
            (Self::Wfq(w), Class::Bandwidth(i)) => w.queue_len(i),
            (Self::Mdrr(m), Class::Bandwidth(i)) => m.queue_len(MdrrTarget::Class(i)),
            (Self::Mdrr(m), Class::Priority) => m.queue_len(MdrrTarget::LowLatency),
            (_, Class::Priority) => 0,
        }
    }

    fn backlog(&self) -> usize {
        match self {
            Self::Drr(d) => d.backlog(),
            Self::Wfq(w) => w.backlog(),
            Self::Mdrr(m) => m.backlog(),
        }
    }

    fn enqueue(&mut self, class: Class, pkt: Vec<u8>, now: Instant) -> Verdict {
        match (self, class) {
            (Self::Drr(d), Class::Bandwidth(i)) => d.enqueue(i, pkt, now),
            (Self::Wfq(w), Class::Bandwidth(i)) => w.enqueue(i, pkt, now),
            (Self::Mdrr(m), Class::Bandwidth(i)) => m.enqueue(MdrrTarget::Class(i), pkt, now),
            (Self::Mdrr(m), Class::Priority) => m.enqueue(MdrrTarget::LowLatency, pkt, now),
            (_, Class::Priority) => Verdict::Dropped(DropReason::QueueLimitPackets),
        }
    }

    fn dequeue(&mut self, now: Instant) -> Option<(Class, Vec<u8>)> {
        match self {
            Self::Drr(d) => d.dequeue(now).map(|(i, p)| (Class::Bandwidth(i), p)),
            Self::Wfq(w) => w.dequeue(now).map(|(i, p)| (Class::Bandwidth(i), p)),
            Self::Mdrr(m) => m.dequeue(now).map(|(t, p)| match t {
                MdrrTarget::LowLatency => (Class::Priority, p),
                MdrrTarget::Class(i) => (Class::Bandwidth(i), p),
            }),
        }
    }
}

/// LLQ + CBWFQ in front of a link.
pub struct Cbwfq {
    link: Link,
    tx_ring: usize,
    priority: Option<(Priority, Bucket)>,
    /// The priority queue (empty under MDRR, whose low-latency queue it is).
    prio_queue: VecDeque<Vec<u8>>,
    drr: Inner,
    stats_prio: ClassStats,
    stats: Vec<ClassStats>,
    /// Arrival times of the packets in each class queue (priority last), FIFO like
    /// the queues, for the queueing delay.
    arrivals: Vec<VecDeque<Instant>>,
    /// Time each class queue waited before entering the ring (priority last).
    delay: Vec<Histogram>,
    /// Since when each class queue has been empty (priority last).
    empty_since: Vec<Option<Instant>>,
}

impl Cbwfq {
    /// A DRR scheduler feeding `link`; see [`Cbwfq::with_scheduler`].
    pub fn new(link: Link, priority: Option<Priority>, shares: &[Share], now: Instant) -> Self {
        Self::with_scheduler(link, priority, shares, Scheduler::Drr, now)
    }

    /// A scheduler feeding `link`, whose queue limit is taken as the tx-ring depth.
    /// DRR and MDRR quanta are `weight × 100` bytes, so a 1500-byte packet is sent
    /// within a round or two whatever the weights; WFQ's φ is the weight.
    pub fn with_scheduler(
        link: Link,
        priority: Option<Priority>,
        shares: &[Share],
        scheduler: Scheduler,
        now: Instant,
    ) -> Self {
        let tx_ring = link.params().limit_packets.unwrap_or(1) as usize;
        let quantum = |w: u32| w.max(1).saturating_mul(100);
        let inner = match scheduler {
            Scheduler::Drr => Inner::Drr(Drr::new(
                &shares
                    .iter()
                    .map(|s| DrrClass {
                        quantum_bytes: quantum(s.weight),
                        limit_packets: s.limit_packets,
                    })
                    .collect::<Vec<_>>(),
            )),
            Scheduler::Wfq => Inner::Wfq(Wfq::new(
                &shares
                    .iter()
                    .map(|s| WfqClass {
                        weight: s.weight,
                        limit_packets: s.limit_packets,
                    })
                    .collect::<Vec<_>>(),
            )),
            Scheduler::MdrrStrict | Scheduler::MdrrAlternate => {
                let classes: Vec<MdrrClass> = shares
                    .iter()
                    .map(|s| MdrrClass {
                        quantum_bytes: quantum(s.weight),
                        limit_packets: s.limit_packets,
                    })
                    .collect();
                let llq = MdrrClass {
                    quantum_bytes: classes
                        .iter()
                        .map(|c| c.quantum_bytes)
                        .max()
                        .unwrap_or(1500),
                    limit_packets: priority.map_or(0, |p| p.limit_packets),
                };
                let mode = if scheduler == Scheduler::MdrrStrict {
                    LowLatencyMode::Strict
                } else {
                    LowLatencyMode::Alternate
                };
                Inner::Mdrr(Mdrr::new(llq, mode, &classes))
            }
        };
        let n = shares.len() + 1;
        Self {
            link,
            tx_ring,
            priority: priority.map(|p| (p, Bucket::full(p.rate_bps, p.burst_bytes, now))),
            prio_queue: VecDeque::new(),
            drr: inner,
            stats_prio: ClassStats::default(),
            stats: vec![ClassStats::default(); shares.len()],
            arrivals: vec![VecDeque::new(); n],
            delay: vec![Histogram::default(); n],
            empty_since: vec![Some(now); n],
        }
    }

    fn slot(&self, class: Class) -> usize {
        match class {
            Class::Priority => self.stats.len(),
            Class::Bandwidth(i) => i.min(self.stats.len()),
        }
    }

    fn stats_mut(&mut self, class: Class) -> &mut ClassStats {
        match class {
            Class::Priority => &mut self.stats_prio,
            Class::Bandwidth(i) => &mut self.stats[i],
        }
    }

    /// Move packets from the class queues into the ring while it has room.
    fn refill(&mut self, now: Instant) {
        while self.link.backlog_after(now) < self.tx_ring {
            let pkt = if let Some(p) = self.prio_queue.pop_front() {
                (Class::Priority, p)
            } else if let Some(x) = self.drr.dequeue(now) {
                x
            } else {
                break;
            };
            let (class, p) = pkt;
            let slot = self.slot(class);
            if let Some(t) = self.arrivals[slot].pop_front() {
                self.delay[slot].record(now.saturating_duration_since(t).as_nanos());
            }
            if self.arrivals[slot].is_empty() {
                self.empty_since[slot] = Some(now);
            }
            let len = p.len() as u64;
            let s = self.stats_mut(class);
            s.sent_packets += 1;
            s.sent_bytes += len;
            let _ = self.link.enqueue(p, now);
        }
    }

    /// Serve bandwidth class `i`'s queue by conversation (`fair-queue`; IP header at
    /// `offset`). Only under the DRR scheduler, before packets arrive; `false` otherwise.
    pub fn set_fair_queue(&mut self, i: usize, offset: usize) -> bool {
        match &mut self.drr {
            Inner::Drr(d) => d.set_fair_queue(i, offset),
            _ => false,
        }
    }

    /// Whether a packet arriving at `now` would wait in a class queue (the ring is full
    /// or packets are already waiting): the interface is congested, and the class's
    /// policer and WRED act.
    pub fn congested(&mut self, now: Instant) -> bool {
        self.refill(now);
        !self.prio_queue.is_empty()
            || self.drr.backlog() > 0
            || self.link.backlog_after(now) >= self.tx_ring
    }

    /// Packets waiting in a class's queue.
    pub fn class_backlog(&self, class: Class) -> usize {
        match class {
            Class::Priority => self.prio_queue.len() + self.drr.len(Class::Priority),
            Class::Bandwidth(_) => self.drr.len(class),
        }
    }

    /// Since when a class's queue has been empty (`None` while it holds packets).
    pub fn empty_since(&self, class: Class) -> Option<Instant> {
        self.empty_since.get(self.slot(class)).copied().flatten()
    }

    /// Offer `pkt` of `class` at `now`.
    pub fn enqueue(&mut self, class: Class, pkt: Vec<u8>, now: Instant) -> Verdict {
        self.enqueue_with(class, pkt, now, |_| None)
    }

    /// Offer `pkt` of `class` at `now`; if it would wait in a bandwidth class's queue,
    /// `early` is asked first with that queue's length and may drop it (WRED's hook).
    pub fn enqueue_with(
        &mut self,
        class: Class,
        pkt: Vec<u8>,
        now: Instant,
        early: impl FnOnce(usize) -> Option<DropReason>,
    ) -> Verdict {
        if let Class::Bandwidth(i) = class {
            if i >= self.stats.len() {
                return Verdict::Dropped(DropReason::QueueLimitPackets);
            }
        }
        let congested = self.congested(now);
        let len = pkt.len();
        let slot = self.slot(class);
        {
            let s = self.stats_mut(class);
            s.offered_packets += 1;
            s.offered_bytes += len as u64;
        }
        // Room in the ring and nothing waiting ahead: straight in, no policing.
        if !congested {
            let s = self.stats_mut(class);
            s.sent_packets += 1;
            s.sent_bytes += len as u64;
            self.delay[slot].record(0);
            return self.link.enqueue(pkt, now);
        }
        match class {
            Class::Priority => {
                let Some((p, bucket)) = self.priority.as_mut() else {
                    self.stats_prio.dropped_queue += 1;
                    return Verdict::Dropped(DropReason::QueueLimitPackets);
                };
                bucket.fill(now);
                if !bucket.has(len) {
                    self.stats_prio.dropped_policer += 1;
                    return Verdict::Dropped(DropReason::Policed);
                }
                if let Inner::Mdrr(m) = &mut self.drr {
                    if let v @ Verdict::Dropped(_) = m.enqueue(MdrrTarget::LowLatency, pkt, now) {
                        self.stats_prio.dropped_queue += 1;
                        return v;
                    }
                    bucket.take(len);
                } else {
                    if self.prio_queue.len() >= p.limit_packets as usize {
                        self.stats_prio.dropped_queue += 1;
                        return Verdict::Dropped(DropReason::QueueLimitPackets);
                    }
                    bucket.take(len);
                    self.prio_queue.push_back(pkt);
                }
            }
            Class::Bandwidth(i) => {
                if let Some(reason) = early(self.drr.len(class)) {
                    self.stats[i].dropped_early += 1;
                    return Verdict::Dropped(reason);
                }
                let v = self.drr.enqueue(class, pkt, now);
                if v != Verdict::Queued {
                    self.stats[i].dropped_queue += 1;
                    return v;
                }
            }
        }
        self.arrivals[slot].push_back(now);
        self.empty_since[slot] = None;
        Verdict::Queued
    }

    /// The next frame off the far end of the link by `now`.
    pub fn dequeue(&mut self, now: Instant) -> Option<Vec<u8>> {
        self.refill(now);
        let f = self.link.dequeue(now);
        self.refill(now);
        f
    }

    /// When something next happens: a frame arrives at the far end, or the link takes
    /// the next frame from the ring (and the scheduler refills it).
    pub fn poll_timeout(&self) -> Option<Instant> {
        self.link.poll_timeout()
    }

    /// The priority class's counters.
    pub fn priority_stats(&self) -> &ClassStats {
        &self.stats_prio
    }

    /// A bandwidth class's counters.
    pub fn class_stats(&self, i: usize) -> Option<&ClassStats> {
        self.stats.get(i)
    }

    /// How long a class's packets waited in its queue before entering the ring (0 for
    /// those that went straight in); the ring's own wait is the link's queue delay.
    pub fn queue_delay(&self, class: Class) -> &Histogram {
        &self.delay[self.slot(class)]
    }

    /// The link.
    pub fn link(&self) -> &Link {
        &self.link
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::link::LinkParams;

    const S: u64 = 1_000_000_000;

    fn link(ring: u32) -> Link {
        Link::new(
            LinkParams {
                rate_bps: 10_000_000,
                limit_packets: Some(ring),
                ..LinkParams::default()
            },
            1,
        )
        .unwrap()
    }

    /// Offer constant-rate flows for `secs`; returns delivered bytes per class
    /// (priority first, then the bandwidth classes) and the largest priority-packet
    /// delay from offer to arrival at the far end.
    fn run(
        q: &mut Cbwfq,
        flows: &[(Class, u64 /* bit/s */, usize /* bytes */)],
        secs: u64,
    ) -> (Vec<u64>, u64) {
        let mut next: Vec<u64> = vec![0; flows.len()];
        let mut delivered = vec![0u64; 1 + q.stats.len()];
        let mut max_delay = 0u64;
        let end = secs * S;
        loop {
            let arrival = next.iter().copied().min().unwrap_or(u64::MAX);
            let link_event = q.poll_timeout().map_or(u64::MAX, Instant::as_nanos);
            let now = arrival.min(link_event);
            if now > end + S {
                break;
            }
            let t = Instant::from_nanos(now);
            for (i, (class, bps, size)) in flows.iter().enumerate() {
                if next[i] == now && now < end {
                    let mut p = vec![0u8; *size];
                    p[0] = match class {
                        Class::Priority => 0,
                        Class::Bandwidth(c) => 1 + *c as u8,
                    };
                    p[1..9].copy_from_slice(&now.to_be_bytes());
                    q.enqueue(*class, p, t);
                    next[i] = now + (*size as u64 * 8 * S) / bps;
                } else if now >= end {
                    next[i] = u64::MAX;
                }
            }
            while let Some(f) = q.dequeue(t) {
                delivered[usize::from(f[0])] += f.len() as u64;
                if f[0] == 0 {
                    let sent = u64::from_be_bytes(f[1..9].try_into().unwrap());
                    max_delay = max_delay.max(now - sent);
                }
            }
            if arrival == u64::MAX && link_event == u64::MAX {
                break;
            }
        }
        (delivered, max_delay)
    }

    fn llq(rate_bps: u64) -> Priority {
        Priority {
            rate_bps,
            burst_bytes: Priority::default_burst(rate_bps),
            limit_packets: 1000,
        }
    }

    const BE: Share = Share {
        weight: 25,
        limit_packets: 75,
    };

    #[test]
    fn priority_excess_passes_when_the_link_is_idle() {
        // EF 3 Mbit/s alone on 10 Mbit/s: all of it, nothing policed.
        let mut q = Cbwfq::new(link(2), Some(llq(2_000_000)), &[BE], Instant::ZERO);
        let (d, _) = run(&mut q, &[(Class::Priority, 3_000_000, 1000)], 10);
        let s = q.priority_stats();
        // Every packet offered in the 10 s (3751: the gap rounds down to whole ns).
        assert_eq!((d[0], s.offered_bytes), (3_751_000, 3_751_000));
        assert_eq!((s.dropped_policer, s.dropped_queue), (0, 0));
    }

    #[test]
    fn under_congestion_priority_gets_its_rate_plus_burst_and_the_rest_goes_to_be() {
        // qos.md §6.5: EF 3 Mbit/s + BE 10 Mbit/s for 10 s, priority 2 Mbit/s, burst
        // 50,000 B: EF ≈ 2 Mbit/s × 10 s + 50,000 B ≈ 2.55 MB, ≈ 32 % of EF dropped,
        // BE ≈ 8 Mbit/s.
        let mut q = Cbwfq::new(link(2), Some(llq(2_000_000)), &[BE], Instant::ZERO);
        let (d, ef_delay) = run(
            &mut q,
            &[
                (Class::Priority, 3_000_000, 1000),
                (Class::Bandwidth(0), 10_000_000, 1500),
            ],
            10,
        );
        let ef = d[0] as f64;
        assert!((ef - 2_550_000.0).abs() < 0.02 * 2_550_000.0, "EF {ef}");
        let s = q.priority_stats();
        let dropped = s.dropped_policer as f64 / s.offered_packets as f64;
        assert!((dropped - 0.32).abs() < 0.02, "EF dropped {dropped}");
        let be_bps = d[1] as f64 * 8.0 / 10.0;
        assert!((be_bps - 8e6).abs() < 0.3e6, "BE {be_bps}");
        // EF waits at most for the ring (2) and the frame on the wire, 1500 B each at
        // 10 Mbit/s (1.2 ms), plus its own 0.8 ms, plus the priority packets queued
        // ahead of it within its burst: bounded by the 50,000 B burst at 10 Mbit/s.
        let bound = 3 * 1_200_000 + 800_000 + 50_000 * 8 * 100;
        assert!(ef_delay <= bound, "EF delay {ef_delay} ns");
    }

    #[test]
    fn bandwidth_percentages_share_what_priority_leaves() {
        // A 30 %, B 10 %, both overloaded, EF 1 Mbit/s: A:B = 3:1 of the 9 Mbit/s left.
        let shares = [
            Share {
                weight: 30,
                limit_packets: 75,
            },
            Share {
                weight: 10,
                limit_packets: 75,
            },
        ];
        let mut q = Cbwfq::new(link(2), Some(llq(2_000_000)), &shares, Instant::ZERO);
        let (d, ef_delay) = run(
            &mut q,
            &[
                (Class::Priority, 1_000_000, 200),
                (Class::Bandwidth(0), 10_000_000, 1500),
                (Class::Bandwidth(1), 10_000_000, 1500),
            ],
            10,
        );
        let (a, b) = (d[1] as f64 * 8.0 / 10.0, d[2] as f64 * 8.0 / 10.0);
        assert!((a - 6.75e6).abs() < 0.25e6, "A {a}");
        assert!((b - 2.25e6).abs() < 0.25e6, "B {b}");
        assert_eq!(q.priority_stats().dropped_policer, 0, "EF within its rate");
        // EF within its rate never queues behind more than the ring and the wire:
        // (tx_ring + 1) × 1.2 ms, plus its own 0.16 ms.
        assert!(
            ef_delay <= 3 * 1_200_000 + 160_000,
            "EF delay {ef_delay} ns"
        );
    }
}
