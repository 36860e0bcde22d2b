//! Deficit round robin (Shreedhar & Varghese, SIGCOMM '95; Linux's `sch_drr`): each
//! class has a FIFO and a quantum in bytes. Active classes are served in turn; a class
//! whose turn begins gets its quantum added to its deficit counter DC, sends head packets
//! while the head fits DC (DC −= size), and ends its turn when the head no longer fits
//! (moving to the back of the list) or its queue empties (DC reset to 0, leaving the
//! list). Over time each backlogged class gets bandwidth in proportion to its quantum,
//! whatever its packet sizes, and no class waits more than one round.

use std::collections::VecDeque;

use serde::Serialize;
use wire::time::Instant;

use crate::fq::FairQueue;
use crate::{DropReason, Verdict};

/// A class's configuration.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct DrrClass {
    /// Bytes added to the deficit at each turn (> 0).
    pub quantum_bytes: u32,
    /// Queue limit, packets.
    pub limit_packets: u32,
}

/// A class's counters.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct DrrStats {
    /// Packets enqueued.
    pub enqueued: u64,
    /// Packets sent.
    pub sent_packets: u64,
    /// Bytes sent.
    pub sent_bytes: u64,
    /// Tail drops.
    pub dropped: u64,
}

/// A class's queue: one FIFO, or conversations served fairly ([`FairQueue`]).
enum ClassQueue {
    Fifo(VecDeque<Vec<u8>>),
    Fair(Box<FairQueue>),
}

impl ClassQueue {
    fn len(&self) -> usize {
        match self {
            Self::Fifo(q) => q.len(),
            Self::Fair(q) => q.len(),
        }
    }

    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether `pkt` finds its queue at `limit`: the class's FIFO, or its conversation.
    fn full_for(&self, pkt: &[u8], limit: usize) -> bool {
        match self {
            Self::Fifo(q) => q.len() >= limit,
            Self::Fair(q) => q.conversation_len(pkt) >= limit,
        }
    }

    fn push_back(&mut self, pkt: Vec<u8>) {
        match self {
            Self::Fifo(q) => q.push_back(pkt),
            Self::Fair(q) => q.push(pkt),
        }
    }

    fn front_len(&mut self) -> Option<usize> {
        match self {
            Self::Fifo(q) => q.front().map(Vec::len),
            Self::Fair(q) => q.peek_len(),
        }
    }

    fn pop_front(&mut self) -> Option<Vec<u8>> {
        match self {
            Self::Fifo(q) => q.pop_front(),
            Self::Fair(q) => q.pop(),
        }
    }
}

struct Class {
    cfg: DrrClass,
    queue: ClassQueue,
    deficit: u64,
    stats: DrrStats,
}

/// The scheduler.
pub struct Drr {
    classes: Vec<Class>,
    /// Active classes in service order; the front is being served.
    active: VecDeque<usize>,
    /// Whether the front class has had its quantum for this turn.
    turn_started: bool,
}

impl Drr {
    /// A scheduler over `classes` (indices in [`Drr::enqueue`] are positions here).
    /// A zero quantum is raised to 1 byte (a class must make progress).
    pub fn new(classes: &[DrrClass]) -> Self {
        Self {
            classes: classes
                .iter()
                .map(|c| Class {
                    cfg: DrrClass {
                        quantum_bytes: c.quantum_bytes.max(1),
                        ..*c
                    },
                    queue: ClassQueue::Fifo(VecDeque::new()),
                    deficit: 0,
                    stats: DrrStats::default(),
                })
                .collect(),
            active: VecDeque::new(),
            turn_started: false,
        }
    }

    /// Offer `pkt` to class `class`.
    pub fn enqueue(&mut self, class: usize, pkt: Vec<u8>, _now: Instant) -> Verdict {
        let Some(c) = self.classes.get_mut(class) else {
            return Verdict::Dropped(DropReason::QueueLimitPackets);
        };
        if c.queue.full_for(&pkt, c.cfg.limit_packets as usize) {
            c.stats.dropped += 1;
            return Verdict::Dropped(DropReason::QueueLimitPackets);
        }
        c.stats.enqueued += 1;
        c.queue.push_back(pkt);
        if c.queue.len() == 1 {
            self.active.push_back(class);
        }
        Verdict::Queued
    }

    /// The next packet by DRR order, and its class.
    pub fn dequeue(&mut self, _now: Instant) -> Option<(usize, Vec<u8>)> {
        loop {
            let &i = self.active.front()?;
            let c = &mut self.classes[i];
            if !self.turn_started {
                c.deficit += u64::from(c.cfg.quantum_bytes);
                self.turn_started = true;
            }
            let head = c.queue.front_len().map_or(0, |l| l as u64);
            if head <= c.deficit {
                let pkt = c.queue.pop_front()?;
                c.deficit -= head;
                c.stats.sent_packets += 1;
                c.stats.sent_bytes += head;
                if c.queue.is_empty() {
                    c.deficit = 0;
                    self.active.pop_front();
                    self.turn_started = false;
                }
                return Some((i, pkt));
            }
            // The head does not fit: the turn ends, the deficit carries to the next.
            self.active.rotate_left(1);
            self.turn_started = false;
        }
    }

    /// A class's deficit counter.
    pub fn deficit(&self, class: usize) -> u64 {
        self.classes.get(class).map_or(0, |c| c.deficit)
    }

    /// A class's counters.
    pub fn stats(&self, class: usize) -> Option<&DrrStats> {
        self.classes.get(class).map(|c| &c.stats)
    }

    /// Serve class `class`'s packets by conversation (flow-based fair queueing, Cisco's
    /// `fair-queue`; the IP header at `offset` in each packet) instead of one FIFO.
    /// Only before the class holds packets; `false` otherwise or out of range.
    pub fn set_fair_queue(&mut self, class: usize, offset: usize) -> bool {
        match self.classes.get_mut(class) {
            Some(c) if c.queue.is_empty() => {
                c.queue = ClassQueue::Fair(Box::new(FairQueue::new(offset)));
                true
            }
            _ => false,
        }
    }

    /// Packets queued in one class.
    pub fn len(&self, class: usize) -> usize {
        self.classes.get(class).map_or(0, |c| c.queue.len())
    }

    /// Packets queued in all classes.
    pub fn backlog(&self) -> usize {
        self.classes.iter().map(|c| c.queue.len()).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const T: Instant = Instant::ZERO;

    fn drr(q: &[u32]) -> Drr {
        let classes: Vec<DrrClass> = q
            .iter()
            .map(|&quantum_bytes| DrrClass {
                quantum_bytes,
                limit_packets: 100_000,
            })
            .collect();
        Drr::new(&classes)
    }

    #[test]
    fn equal_quanta_share_bytes_equally_whatever_the_packet_sizes() {
        // Flow 0 sends 1500 B, flow 1 500 B, both backlogged, quanta 1500.
        let mut d = drr(&[1500, 1500]);
        for _ in 0..300 {
            d.enqueue(0, vec![0; 1500], T);
            d.enqueue(1, vec![1; 500], T);
            d.enqueue(1, vec![1; 500], T);
            d.enqueue(1, vec![1; 500], T);
        }
        let mut order = String::new();
        let mut bytes = [0i64; 2];
        for _ in 0..400 {
            let (c, p) = d.dequeue(T).unwrap();
            order.push(if c == 0 { 'A' } else { 'b' });
            bytes[c] += p.len() as i64;
            assert!((bytes[0] - bytes[1]).abs() <= 1500, "{bytes:?}");
        }
        assert!(order.starts_with(&"Abbb".repeat(100)), "{order}");
    }

    #[test]
    fn quanta_set_the_byte_ratio() {
        let mut d = drr(&[3000, 1000]);
        for _ in 0..4000 {
            d.enqueue(0, vec![0; 1000], T);
            d.enqueue(1, vec![1; 1000], T);
        }
        let mut n = [0u64; 2];
        for _ in 0..4000 {
            n[d.dequeue(T).unwrap().0] += 1;
        }
        // 3:1 within one packet.
        assert!((n[0] as i64 - 3 * n[1] as i64).abs() <= 3, "{n:?}");
    }

    #[test]
    fn a_small_quantum_sends_a_big_packet_every_third_round_and_resets_when_empty() {
        // Q = 500, 1500 B packets, against a class that sends a 500 B packet each turn.
        let mut d = drr(&[500, 500]);
        for _ in 0..30 {
            d.enqueue(0, vec![0; 1500], T);
            d.enqueue(1, vec![1; 500], T);
        }
        let mut order = String::new();
        for _ in 0..12 {
            let (c, _) = d.dequeue(T).unwrap();
            order.push(if c == 0 { 'A' } else { 'b' });
            if c == 0 {
                assert_eq!(d.deficit(0), 0, "DC is 0 after sending");
            }
        }
        // Class 0 starts each round: its DC reaches 1500 in its third turn.
        assert_eq!(order, "bbAbbbAbbbAb");
        // Drain class 1 entirely: its DC resets.
        while d.backlog() > 0 {
            d.dequeue(T);
        }
        assert_eq!((d.deficit(0), d.deficit(1)), (0, 0));
    }

    #[test]
    fn every_packet_is_sent_or_dropped_and_a_class_keeps_its_order() {
        let mut d = Drr::new(&[
            DrrClass {
                quantum_bytes: 700,
                limit_packets: 50,
            },
            DrrClass {
                quantum_bytes: 1300,
                limit_packets: 20,
            },
        ]);
        let mut x = 7u64;
        let mut next_seq = [0u32; 2];
        let mut seen = [0u32; 2];
        let (mut offered, mut sent) = (0u64, 0u64);
        for _ in 0..100_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            if x % 3 != 0 {
                let c = (x >> 8) as usize % 2;
                let mut p = vec![0u8; 64 + (x >> 16) as usize % 1400];
                p[..4].copy_from_slice(&next_seq[c].to_be_bytes());
                offered += 1;
                if d.enqueue(c, p, T) == Verdict::Queued {
                    next_seq[c] += 1;
                }
            } else if let Some((c, p)) = d.dequeue(T) {
                sent += 1;
                let seq = u32::from_be_bytes(p[..4].try_into().unwrap());
                assert_eq!(seq, seen[c], "class {c} in order");
                seen[c] += 1;
            }
        }
        let dropped: u64 = (0..2).map(|c| d.stats(c).unwrap().dropped).sum();
        assert_eq!(offered, sent + dropped + d.backlog() as u64);
    }
}
