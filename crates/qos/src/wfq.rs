//! Class-based weighted fair queueing by virtual finish tags, in its self-clocked form
//! (SCFQ; S. J. Golestani, "A self-clocked fair queueing scheme for broadband
//! applications", IEEE INFOCOM '94). It is the practical way to emulate generalized
//! processor sharing (GPS; Parekh & Gallager, IEEE/ACM ToN 1993; WFQ by Demers, Keshav
//! & Shenker, SIGCOMM '89).
//!
//! Class i has a weight φᵢ and a FIFO. A packet of L bytes arriving at class i gets the
//! start tag S = max(Fᵢ, V) and the finish tag F = S + L/φᵢ, where Fᵢ is the finish tag
//! of the class's previous packet and V is the system virtual time. The smallest F is
//! sent next, and ties go to the earlier arrival (a global arrival sequence number). GPS
//! would advance V at rate C/Σ_active φⱼ, which needs the link rate and a simulation of
//! the fluid system. SCFQ takes V to be the finish tag of the packet in service (the last
//! one dequeued) instead. So a class that was idle restarts at V: it gets no credit for
//! its idle time. While classes are backlogged, each gets bytes in proportion to its
//! weight. Over any interval in which classes i and j are both backlogged, their normalised
//! service differs by at most Lmaxᵢ/φᵢ + Lmaxⱼ/φⱼ (Golestani's bound).
//!
//! When the scheduler empties (the end of a busy period), V and every Fᵢ are reset to 0,
//! as in Golestani's paper. No order changes: tags leave in non-decreasing order, so at
//! that moment V is the largest Fᵢ. A later arrival would have started at V in any case.
//! The reset only keeps the numbers small. [`Wfq::virtual_time`] therefore reads 0 once
//! the backlog is 0.
//!
//! Arithmetic is exact and integer. Tags are u128 in units of 1/W byte per unit of weight,
//! where W = lcm(φ₁, …, φₙ) ([`Wfq::tag_scale`]), so L/φᵢ is the integer L·(W/φᵢ) and a tie
//! in the definition is a tie here. If the lcm exceeds 2⁶⁴ (several large coprime
//! weights), W is 2⁶⁴ and W/φᵢ is rounded down, which is an error below one part in 2³²
//! per packet. Tag arithmetic saturates, so no input can make it panic.
//!
//! The next packet is found by a linear scan over the class heads. A class's tags never
//! decrease along its FIFO, so its head holds its smallest (tag, arrival) pair. Classes
//! are few (a policy's class map), so the O(N) scan is simpler than a heap of heads,
//! which would need re-keying whenever a head leaves.

use std::collections::VecDeque;

use serde::Serialize;
use wire::time::Instant;

use crate::{DropReason, Verdict};

/// The largest tag scale: above it, W/φ is rounded down.
const MAX_SCALE: u128 = 1 << 64;

/// A class's configuration.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct WfqClass {
    /// Weight φ (> 0; zero is raised to 1). Shares are proportional to it.
    pub weight: u32,
    /// Queue limit, packets.
    pub limit_packets: u32,
}

/// A class's counters.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct WfqStats {
    /// Packets accepted into the queue.
    pub enqueued: u64,
    /// Packets sent.
    pub sent_packets: u64,
    /// Bytes sent.
    pub sent_bytes: u64,
    /// Tail drops.
    pub dropped: u64,
}

struct Entry {
    finish: u128,
    seq: u64,
    pkt: Vec<u8>,
}

struct Class {
    cfg: WfqClass,
    /// W/φ: the tag units one byte costs this class.
    per_byte: u128,
    queue: VecDeque<Entry>,
    /// Fᵢ: the finish tag of the class's last accepted packet.
    last_finish: u128,
    stats: WfqStats,
}

/// The scheduler.
pub struct Wfq {
    classes: Vec<Class>,
    /// W, the tag units per byte per unit of weight.
    scale: u128,
    /// V: the finish tag of the packet last dequeued.
    virtual_time: u128,
    /// The next arrival's sequence number (tie-break).
    next_seq: u64,
}

fn gcd(mut a: u128, mut b: u128) -> u128 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

impl Wfq {
    /// A scheduler over `classes` (indices in [`Wfq::enqueue`] are positions here). A zero
    /// weight is raised to 1.
    pub fn new(classes: &[WfqClass]) -> Self {
        let cfgs: Vec<WfqClass> = classes
            .iter()
            .map(|c| WfqClass {
                weight: c.weight.max(1),
                ..*c
            })
            .collect();
        // lcm of the weights, capped (each step stays below 2⁶⁴ · 2³², well inside u128).
        let scale = cfgs.iter().fold(1u128, |w, c| {
            let phi = u128::from(c.weight);
            (w / gcd(w, phi) * phi).min(MAX_SCALE)
        });
        Self {
            classes: cfgs
                .into_iter()
                .map(|cfg| Class {
                    per_byte: scale / u128::from(cfg.weight),
                    cfg,
                    queue: VecDeque::new(),
                    last_finish: 0,
                    stats: WfqStats::default(),
                })
                .collect(),
            scale,
            virtual_time: 0,
            next_seq: 0,
        }
    }

    /// Offer `pkt` to class `class`; it gets its finish tag now. A class out of range
    /// drops it (without counting it anywhere), as a full queue would.
    pub fn enqueue(&mut self, class: usize, pkt: Vec<u8>, _now: Instant) -> Verdict {
        let Some(c) = self.classes.get_mut(class) else {
            return Verdict::Dropped(DropReason::QueueLimitPackets);
        };
        if c.queue.len() >= c.cfg.limit_packets as usize {
            c.stats.dropped += 1;
            return Verdict::Dropped(DropReason::QueueLimitPackets);
        }
        let start = c.last_finish.max(self.virtual_time);
        let cost = (pkt.len() as u128).saturating_mul(c.per_byte);
        let finish = start.saturating_add(cost);
        c.last_finish = finish;
        c.stats.enqueued += 1;
        c.queue.push_back(Entry {
            finish,
            seq: self.next_seq,
            pkt,
        });
        self.next_seq = self.next_seq.wrapping_add(1);
        Verdict::Queued
    }

    /// The packet with the smallest finish tag (the earliest arrival on a tie), and its
    /// class.
    pub fn dequeue(&mut self, _now: Instant) -> Option<(usize, Vec<u8>)> {
        let (i, _) = self
            .classes
            .iter()
            .enumerate()
            .filter_map(|(i, c)| c.queue.front().map(|e| (i, (e.finish, e.seq))))
            .min_by_key(|&(_, key)| key)?;
        let c = self.classes.get_mut(i)?;
        let e = c.queue.pop_front()?;
        c.stats.sent_packets += 1;
        c.stats.sent_bytes += e.pkt.len() as u64;
        self.virtual_time = e.finish;
        if self.classes.iter().all(|c| c.queue.is_empty()) {
            // End of the busy period: restart the virtual clock.
            self.virtual_time = 0;
            for c in &mut self.classes {
                c.last_finish = 0;
            }
        }
        Some((i, e.pkt))
    }

    /// V, the finish tag of the packet last dequeued (0 while the scheduler is empty), in
    /// tag units: [`Wfq::tag_scale`] units are one byte per unit of weight.
    pub fn virtual_time(&self) -> u128 {
        self.virtual_time
    }

    /// W, the tag units per byte per unit of weight: the lcm of the weights, at most 2⁶⁴.
    pub fn tag_scale(&self) -> u128 {
        self.scale
    }

    /// A class's counters (`None` out of range).
    pub fn stats(&self, class: usize) -> Option<&WfqStats> {
        self.classes.get(class).map(|c| &c.stats)
    }

    /// Packets queued in one class (0 out of range).
    pub fn queue_len(&self, class: usize) -> usize {
        self.classes.get(class).map_or(0, |c| c.queue.len())
    }

    /// Packets queued in all classes.
    pub fn backlog(&self) -> usize {
        self.classes.iter().map(|c| c.queue.len()).sum()
    }
}

#[cfg(test)]
mod tests {
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    use super::*;

    const T: Instant = Instant::ZERO;

    fn wfq(weights: &[u32]) -> Wfq {
        let classes: Vec<WfqClass> = weights
            .iter()
            .map(|&weight| WfqClass {
                weight,
                limit_packets: 100_000,
            })
            .collect();
        Wfq::new(&classes)
    }

    /// 'A', 'B', … for class 0, 1, ….
    fn name(c: usize) -> char {
        char::from(b'A' + c as u8)
    }

    #[test]
    fn weights_two_to_one_give_a_a_b_and_two_thirds_of_the_link() {
        // Reference §6.7: φA = 2, φB = 1, equal packets, both backlogged from t = 0.
        // In units of L: A's tags are 0.5, 1, 1.5, …; B's 1, 2, ….
        const L: u128 = 1000;
        let mut w = wfq(&[2, 1]);
        assert_eq!(w.tag_scale(), 2);
        let half_l = L * w.tag_scale() / 2;
        // All of A's packets arrive first: on the tie at F = 1, A's second packet wins.
        for c in [0, 1] {
            for _ in 0..30 {
                assert_eq!(w.enqueue(c, vec![0; L as usize], T), Verdict::Queued);
            }
        }
        let mut order = String::new();
        let mut tags = Vec::new();
        for _ in 0..30 {
            order.push(name(w.dequeue(T).unwrap().0));
            tags.push(w.virtual_time() / half_l);
        }
        assert_eq!(order, "AAB".repeat(10));
        // V in half-L units: A 0.5, A 1, B 1, A 1.5, A 2, B 2, ….
        assert_eq!(&tags[..6], [1, 2, 2, 3, 4, 4]);
        let n = |c| w.stats(c).unwrap().sent_packets;
        assert_eq!((n(0), n(1)), (20, 10));

        // Arrivals interleaved A, B, A, B, …: now B's first packet came before A's second,
        // so it wins the tie at F = 1. Still 2:1.
        let mut w = wfq(&[2, 1]);
        for _ in 0..30 {
            w.enqueue(0, vec![0; L as usize], T);
            w.enqueue(1, vec![1; L as usize], T);
        }
        let order: String = (0..30).map(|_| name(w.dequeue(T).unwrap().0)).collect();
        assert_eq!(order, "ABA".repeat(10));
    }

    #[test]
    fn equal_weights_share_bytes_equally_whatever_the_packet_sizes() {
        // A sends 1500 B, B 500 B: tags A 1500, 3000, …; B 500, 1000, 1500, …. Each tie
        // (1500, 3000, …) goes to A's packet, which arrived first.
        let mut w = wfq(&[1, 1]);
        for _ in 0..100 {
            w.enqueue(0, vec![0; 1500], T);
        }
        for _ in 0..300 {
            w.enqueue(1, vec![1; 500], T);
        }
        let mut order = String::new();
        let mut bytes = [0i64; 2];
        while w.queue_len(0) > 0 && w.queue_len(1) > 0 {
            let (c, p) = w.dequeue(T).unwrap();
            order.push(name(c).to_ascii_lowercase());
            bytes[c] += p.len() as i64;
            assert!((bytes[0] - bytes[1]).abs() <= 1500, "{bytes:?}");
        }
        // B 500, B 1000, A 1500, B 1500, B 2000, B 2500, A 3000, …, until A's 100th
        // packet (F = 150,000) empties A with B's last (F = 150,000) still queued.
        assert_eq!(order, "bb".to_owned() + &"abbb".repeat(99) + "a");
    }

    #[test]
    fn a_late_class_gets_no_credit_for_its_idle_time() {
        let mut w = wfq(&[1, 1]);
        for _ in 0..100 {
            w.enqueue(0, vec![0; 1000], T);
        }
        for _ in 0..50 {
            assert_eq!(w.dequeue(T).unwrap().0, 0);
        }
        // V = 50 packets of A; A's queued tags are 51 … 100 (units of 1000 B).
        assert_eq!(w.virtual_time(), 50 * 1000);
        for _ in 0..10 {
            w.enqueue(1, vec![1; 1000], T);
        }
        // B starts at V, not at 0: its tags are 51 … 60, so it alternates with A (A wins
        // each tie, having arrived first) instead of sending its 10 packets in a row.
        let order: String = (0..20).map(|_| name(w.dequeue(T).unwrap().0)).collect();
        assert_eq!(order, "AB".repeat(10));
        assert_eq!(w.virtual_time(), 60 * 1000);
        // Draining ends the busy period: V and the classes' tags restart at 0.
        while w.dequeue(T).is_some() {}
        assert_eq!(w.virtual_time(), 0);
        w.enqueue(1, vec![1; 1000], T);
        w.enqueue(0, vec![0; 1000], T);
        assert_eq!(w.dequeue(T).unwrap().0, 1, "B arrived first, both at F = 1");
        assert_eq!(w.virtual_time(), 1000);
    }

    #[test]
    fn tags_are_exact_with_coprime_weights() {
        // W = lcm(3, 5, 7) = 105, so L/φ is exact for every class.
        let mut w = wfq(&[3, 5, 7, 0]);
        assert_eq!(w.tag_scale(), 105);
        for c in 0..4 {
            w.enqueue(c, vec![0; 105], T);
        }
        let mut v = Vec::new();
        while let Some((c, _)) = w.dequeue(T) {
            v.push((c, w.virtual_time()));
        }
        // 105·105/φ: 1575 (φ = 7), 2205 (5), 3675 (3), 11025 (zero weight raised to 1),
        // and the last dequeue empties the scheduler, so V reads 0.
        assert_eq!(v, [(2, 1575), (1, 2205), (0, 3675), (3, 0)]);

        // Huge coprime weights: the scale is capped and nothing overflows.
        let mut w = wfq(&[u32::MAX, u32::MAX - 1, u32::MAX - 2, 1]);
        assert_eq!(w.tag_scale(), 1 << 64);
        for c in 0..4 {
            w.enqueue(c, vec![0; 1500], T);
        }
        let order: String = (0..4).map(|_| name(w.dequeue(T).unwrap().0)).collect();
        assert_eq!(order, "ABCD");
    }

    #[test]
    fn queue_limits_tail_drop_and_count() {
        let mut w = Wfq::new(&[WfqClass {
            weight: 1,
            limit_packets: 2,
        }]);
        let full = Verdict::Dropped(DropReason::QueueLimitPackets);
        assert_eq!(w.enqueue(0, vec![0; 100], T), Verdict::Queued);
        assert_eq!(w.enqueue(0, vec![0; 100], T), Verdict::Queued);
        assert_eq!(w.enqueue(0, vec![0; 100], T), full);
        // No such class: dropped, counted nowhere, no panic.
        assert_eq!(w.enqueue(3, vec![0; 100], T), full);
        assert_eq!((w.stats(3), w.queue_len(3)), (None, 0));
        let s = w.stats(0).unwrap();
        assert_eq!((s.enqueued, s.dropped), (2, 1));
        // A dropped packet takes no tag: the two queued ones have F = 100 and 200.
        w.dequeue(T);
        assert_eq!(w.virtual_time(), 100);
        assert_eq!(w.backlog(), 1);
        let json = serde_json::to_string(w.stats(0).unwrap()).unwrap();
        assert!(json.contains("\"dropped\":1"), "{json}");
        // No classes at all: nothing to send, nothing panics.
        let mut w = Wfq::new(&[]);
        assert_eq!(w.enqueue(0, vec![0; 100], T), full);
        assert_eq!(w.dequeue(T), None);
    }

    #[test]
    fn every_packet_is_sent_dropped_or_queued_and_each_class_keeps_its_order() {
        const MAX: usize = 1500;
        let mut rng = ChaCha8Rng::seed_from_u64(11);
        let classes: Vec<WfqClass> = (0..4)
            .map(|_| WfqClass {
                weight: rng.gen_range(1..10),
                limit_packets: rng.gen_range(5..40),
            })
            .collect();
        let mut w = Wfq::new(&classes);
        let mut offered = [0u64; 4];
        let mut next_seq = [0u32; 4];
        let mut seen = [0u32; 4];
        let mut last_v = 0u128;
        for step in 0..50_000 {
            if rng.gen_bool(0.55) {
                let c = rng.gen_range(0..4);
                let mut p = vec![0u8; rng.gen_range(4..=MAX)];
                p[..4].copy_from_slice(&next_seq[c].to_be_bytes());
                offered[c] += 1;
                if w.enqueue(c, p, T) == Verdict::Queued {
                    next_seq[c] += 1;
                }
            } else if let Some((c, p)) = w.dequeue(T) {
                let seq = u32::from_be_bytes([p[0], p[1], p[2], p[3]]);
                assert_eq!(seq, seen[c], "class {c} in order");
                seen[c] += 1;
                // Within a busy period V never goes backwards; it restarts at 0 once empty.
                let v = w.virtual_time();
                if w.backlog() > 0 {
                    assert!(v >= last_v, "step {step}: V {last_v} → {v}");
                } else {
                    assert_eq!(v, 0);
                }
                last_v = v;
            }
            for (c, &offered) in offered.iter().enumerate() {
                let s = w.stats(c).unwrap();
                assert_eq!(offered, s.enqueued + s.dropped, "class {c}");
                assert_eq!(s.enqueued, s.sent_packets + w.queue_len(c) as u64);
            }
        }
        while w.dequeue(T).is_some() {}
        let mut dropped = 0;
        for (c, &offered) in offered.iter().enumerate() {
            let s = w.stats(c).unwrap();
            assert_eq!(offered, s.sent_packets + s.dropped);
            assert!(s.sent_packets > 0, "class {c}: {s:?}");
            dropped += s.dropped;
        }
        // The limits were exercised.
        assert!(dropped > 0);
    }
}
