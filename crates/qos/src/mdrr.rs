//! Modified deficit round robin (MDRR), as on the Cisco 12000 and in IOS XR: deficit round
//! robin (Shreedhar & Varghese, SIGCOMM '95; see [`crate::drr`]) over ordinary class
//! queues plus one low-latency queue (LLQ). The LLQ runs in one of two modes (Cisco IOS
//! 12.0ST Class of Service feature guide, MDRR section,
//! <http://www.cisco.com/en/US/docs/ios/12_0st/12_0st10/feature/guide/10st_cos.pdf>):
//!
//! - [`LowLatencyMode::Strict`]: the LLQ is served whenever it is non-empty, even in the
//!   middle of an ordinary queue's turn (which resumes afterwards). It can starve the
//!   others.
//! - [`LowLatencyMode::Alternate`]: turns alternate between the LLQ and the ordinary
//!   queues: LLQ, Q1, LLQ, Q2, …. The LLQ is then itself a DRR queue with its own quantum,
//!   and each of its turns follows the deficit rule below. While the LLQ is empty the
//!   ordinary queues take turns back to back; while they are all empty the LLQ does.
//!
//! The "modified" deficit rule (Cisco IOS XR QoS configuration guide, MDRR section): a
//! queue whose turn begins adds its quantum Q to its deficit counter DC, so DC starts at
//! Q. The queue is served while DC > 0. The packet that takes DC to zero or below is still
//! sent, so DC may go negative. The turn then ends, and the debt carries over to the next
//! turn, which again adds Q. A queue that empties has DC reset to 0 and leaves the round.
//! Classic DRR sends a packet only if it fits in DC. MDRR overshoots by less than one
//! packet per turn and pays it back at the next turn, so over time each backlogged queue
//! still gets bytes in proportion to its quantum. Cisco advises Q ≥ MTU. Then every turn
//! sends at least one packet and the work per packet is O(1). With a smaller Q, some turns
//! send nothing.
//!
//! Choices the sources leave open:
//! - a turn that sends nothing (DC still ≤ 0 after adding Q) still counts as a visit for
//!   the alternation. So in alternate mode the LLQ gets one quantum for each visit to an
//!   ordinary queue, and shares stay proportional to the quanta;
//! - in strict mode the LLQ's quantum is unused and its DC stays 0;
//! - the strict-mode LLQ does not end an ordinary queue's turn: that turn carries on with
//!   the same DC once the LLQ is empty.

use std::collections::VecDeque;

use serde::Serialize;
use wire::time::Instant;

use crate::{DropReason, Verdict};

/// A queue's configuration (the LLQ's or an ordinary class's).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct MdrrClass {
    /// Bytes added to the deficit at each turn (> 0; Cisco advises ≥ the MTU).
    pub quantum_bytes: u32,
    /// Queue limit, packets.
    pub limit_packets: u32,
}

/// How the low-latency queue is served.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum LowLatencyMode {
    /// Whenever it is non-empty; it can starve the ordinary queues.
    Strict,
    /// One LLQ turn between any two turns of ordinary queues.
    Alternate,
}

/// Which queue a packet goes to or came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum MdrrTarget {
    /// The low-latency queue.
    LowLatency,
    /// The ordinary class at this position in [`Mdrr::new`]'s `classes`.
    Class(usize),
}

/// A queue's counters.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct MdrrStats {
    /// Packets accepted into the queue.
    pub enqueued: u64,
    /// Packets sent.
    pub sent_packets: u64,
    /// Bytes sent.
    pub sent_bytes: u64,
    /// Tail drops.
    pub dropped: u64,
}

struct Queue {
    cfg: MdrrClass,
    fifo: VecDeque<Vec<u8>>,
    /// DC, bytes; negative when the last turn overshot.
    deficit: i64,
    stats: MdrrStats,
}

impl Queue {
    fn new(cfg: &MdrrClass) -> Self {
        Self {
            cfg: MdrrClass {
                quantum_bytes: cfg.quantum_bytes.max(1),
                ..*cfg
            },
            fifo: VecDeque::new(),
            deficit: 0,
            stats: MdrrStats::default(),
        }
    }

    /// Tail-drops at the limit; queues otherwise.
    fn offer(&mut self, pkt: Vec<u8>) -> Verdict {
        if self.fifo.len() >= self.cfg.limit_packets as usize {
            self.stats.dropped += 1;
            return Verdict::Dropped(DropReason::QueueLimitPackets);
        }
        self.stats.enqueued += 1;
        self.fifo.push_back(pkt);
        Verdict::Queued
    }

    /// Sends the head: DC −= its size, or DC = 0 if the queue is left empty.
    fn send(&mut self) -> Option<Vec<u8>> {
        let pkt = self.fifo.pop_front()?;
        let len = pkt.len() as u64;
        self.stats.sent_packets += 1;
        self.stats.sent_bytes += len;
        self.deficit = if self.fifo.is_empty() {
            0
        } else {
            self.deficit
                .saturating_sub(i64::try_from(len).unwrap_or(i64::MAX))
        };
        Some(pkt)
    }
}

/// Whose turn it is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Turn {
    /// The LLQ's (alternate mode only).
    LowLatency,
    /// The ordinary queue at the front of the active list.
    Class,
}

/// The scheduler.
pub struct Mdrr {
    mode: LowLatencyMode,
    llq: Queue,
    classes: Vec<Queue>,
    /// Non-empty ordinary queues in service order; the front has or gets the next turn.
    active: VecDeque<usize>,
    /// The open turn: its queue is non-empty and has DC > 0.
    turn: Option<Turn>,
    /// Alternate mode: whether the LLQ (if non-empty) takes the next turn.
    llq_next: bool,
}

impl Mdrr {
    /// A scheduler with the low-latency queue `llq` in `mode` and the ordinary queues
    /// `classes` (indices in [`MdrrTarget::Class`] are positions here). A zero quantum is
    /// raised to 1 byte (a queue must make progress).
    pub fn new(llq: MdrrClass, mode: LowLatencyMode, classes: &[MdrrClass]) -> Self {
        Self {
            mode,
            llq: Queue::new(&llq),
            classes: classes.iter().map(Queue::new).collect(),
            active: VecDeque::new(),
            turn: None,
            llq_next: true,
        }
    }

    /// Offer `pkt` to `target`. An ordinary class out of range drops it (without counting
    /// it anywhere), as a full queue would.
    pub fn enqueue(&mut self, target: MdrrTarget, pkt: Vec<u8>, _now: Instant) -> Verdict {
        match target {
            MdrrTarget::LowLatency => self.llq.offer(pkt),
            MdrrTarget::Class(i) => {
                let Some(q) = self.classes.get_mut(i) else {
                    return Verdict::Dropped(DropReason::QueueLimitPackets);
                };
                let verdict = q.offer(pkt);
                // A queue is in the active list exactly while it is non-empty.
                if verdict == Verdict::Queued && q.fifo.len() == 1 {
                    self.active.push_back(i);
                }
                verdict
            }
        }
    }

    /// The next packet in MDRR order, and its queue.
    pub fn dequeue(&mut self, _now: Instant) -> Option<(MdrrTarget, Vec<u8>)> {
        if self.mode == LowLatencyMode::Strict {
            if let Some(pkt) = self.llq.send() {
                // No turns, no deficit.
                self.llq.deficit = 0;
                return Some((MdrrTarget::LowLatency, pkt));
            }
        }
        // Each pass either sends, or ends a turn that sent nothing after raising that
        // queue's DC by its quantum; DC > −(largest packet), so this ends.
        loop {
            let turn = match self.turn {
                Some(t) => t,
                None => self.begin_turn()?,
            };
            let (target, q) = match turn {
                Turn::LowLatency => (MdrrTarget::LowLatency, &mut self.llq),
                Turn::Class => {
                    let i = *self.active.front()?;
                    (MdrrTarget::Class(i), self.classes.get_mut(i)?)
                }
            };
            let sent = if q.deficit > 0 { q.send() } else { None };
            let emptied = q.fifo.is_empty();
            if emptied || q.deficit <= 0 {
                self.end_turn(turn, emptied);
            }
            if let Some(pkt) = sent {
                return Some((target, pkt));
            }
        }
    }

    /// Picks the next turn and adds the quantum to that queue's DC.
    fn begin_turn(&mut self) -> Option<Turn> {
        let llq_ready = self.mode == LowLatencyMode::Alternate && !self.llq.fifo.is_empty();
        let (turn, q) = if llq_ready && (self.llq_next || self.active.is_empty()) {
            (Turn::LowLatency, &mut self.llq)
        } else {
            let &i = self.active.front()?;
            (Turn::Class, self.classes.get_mut(i)?)
        };
        q.deficit = q.deficit.saturating_add(i64::from(q.cfg.quantum_bytes));
        self.turn = Some(turn);
        Some(turn)
    }

    /// Ends the open turn; an ordinary queue goes to the back of the round, or leaves it
    /// if `emptied`.
    fn end_turn(&mut self, turn: Turn, emptied: bool) {
        self.turn = None;
        match turn {
            Turn::LowLatency => self.llq_next = false,
            Turn::Class => {
                if emptied {
                    self.active.pop_front();
                } else {
                    self.active.rotate_left(1);
                }
                self.llq_next = true;
            }
        }
    }

    fn queue(&self, target: MdrrTarget) -> Option<&Queue> {
        match target {
            MdrrTarget::LowLatency => Some(&self.llq),
            MdrrTarget::Class(i) => self.classes.get(i),
        }
    }

    /// A queue's deficit counter, bytes (negative after an overshoot; 0 out of range).
    pub fn deficit(&self, target: MdrrTarget) -> i64 {
        self.queue(target).map_or(0, |q| q.deficit)
    }

    /// A queue's counters (`None` for a class out of range).
    pub fn stats(&self, target: MdrrTarget) -> Option<&MdrrStats> {
        self.queue(target).map(|q| &q.stats)
    }

    /// Packets queued in one queue (0 out of range).
    pub fn queue_len(&self, target: MdrrTarget) -> usize {
        self.queue(target).map_or(0, |q| q.fifo.len())
    }

    /// Packets queued in all queues, the LLQ included.
    pub fn backlog(&self) -> usize {
        self.llq.fifo.len() + self.classes.iter().map(|q| q.fifo.len()).sum::<usize>()
    }
}

#[cfg(test)]
mod tests {
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    use super::*;
    use MdrrTarget::{Class, LowLatency};

    const T: Instant = Instant::ZERO;

    fn class(quantum_bytes: u32) -> MdrrClass {
        MdrrClass {
            quantum_bytes,
            limit_packets: 100_000,
        }
    }

    fn mdrr(mode: LowLatencyMode, llq: u32, q: &[u32]) -> Mdrr {
        let classes: Vec<MdrrClass> = q.iter().map(|&q| class(q)).collect();
        Mdrr::new(class(llq), mode, &classes)
    }

    /// 'L' for the LLQ, '1', '2', … for ordinary class 0, 1, ….
    fn name(t: MdrrTarget) -> char {
        match t {
            LowLatency => 'L',
            Class(i) => char::from(b'1' + i as u8),
        }
    }

    fn order(m: &mut Mdrr, n: usize) -> String {
        (0..n).map(|_| name(m.dequeue(T).unwrap().0)).collect()
    }

    #[test]
    fn strict_llq_takes_the_whole_link_while_backlogged() {
        // Reference §6.7: LLQ and BE both backlogged, 1500 B quanta and packets.
        let mut m = mdrr(LowLatencyMode::Strict, 1500, &[1500]);
        for _ in 0..200 {
            m.enqueue(LowLatency, vec![0; 1500], T);
            m.enqueue(Class(0), vec![1; 1500], T);
        }
        assert_eq!(order(&mut m, 100), "L".repeat(100));
        assert_eq!(m.stats(Class(0)).unwrap().sent_packets, 0);
        // The LLQ's quantum is unused: its DC stays 0.
        assert_eq!(m.deficit(LowLatency), 0);
        // BE only gets the link once the LLQ is empty.
        assert_eq!(order(&mut m, 300), "L".repeat(100) + &"1".repeat(200));
        assert_eq!(m.dequeue(T), None);
    }

    #[test]
    fn strict_llq_cuts_into_a_turn_which_then_resumes() {
        // BE: Q = 3000, 1000 B packets, so three packets a turn.
        let mut m = mdrr(LowLatencyMode::Strict, 1500, &[3000]);
        for _ in 0..6 {
            m.enqueue(Class(0), vec![1; 1000], T);
        }
        assert_eq!(order(&mut m, 1), "1");
        assert_eq!(m.deficit(Class(0)), 2000);
        m.enqueue(LowLatency, vec![0; 1500], T);
        assert_eq!(order(&mut m, 1), "L");
        // The same turn: DC 2000 → 1000 → 0, then a new turn adds 3000.
        assert_eq!(order(&mut m, 2), "11");
        assert_eq!(m.deficit(Class(0)), 0);
        assert_eq!(order(&mut m, 1), "1");
        assert_eq!(m.deficit(Class(0)), 2000);
    }

    #[test]
    fn alternate_splits_the_link_evenly_with_equal_quanta() {
        // Reference §6.7: alternate mode → about 50/50; here exactly, packet by packet.
        let mut m = mdrr(LowLatencyMode::Alternate, 1500, &[1500]);
        for _ in 0..200 {
            m.enqueue(LowLatency, vec![0; 1500], T);
            m.enqueue(Class(0), vec![1; 1500], T);
        }
        assert_eq!(order(&mut m, 100), "L1".repeat(50));
        let sent = |t| m.stats(t).unwrap().sent_bytes;
        assert_eq!((sent(LowLatency), sent(Class(0))), (75_000, 75_000));
    }

    #[test]
    fn alternate_interleaves_the_llq_between_ordinary_turns() {
        let mut m = mdrr(LowLatencyMode::Alternate, 1500, &[1500, 1500, 1500]);
        for _ in 0..20 {
            m.enqueue(LowLatency, vec![0; 1500], T);
            for c in 0..3 {
                m.enqueue(Class(c), vec![1; 1500], T);
            }
        }
        // LLQ, Q1, LLQ, Q2, LLQ, Q3, …: the LLQ gets half, the others a sixth each.
        assert_eq!(order(&mut m, 36), "L1L2L3".repeat(6));

        let mut m = mdrr(LowLatencyMode::Alternate, 1500, &[1500, 1500, 1500]);
        for _ in 0..4 {
            m.enqueue(LowLatency, vec![0; 1500], T);
            for c in 0..3 {
                m.enqueue(Class(c), vec![1; 1500], T);
            }
        }
        // Once the LLQ is empty the ordinary queues are served back to back.
        assert_eq!(order(&mut m, 16), "L1L2L3L1".to_owned() + "23123123");
        // The last turn was an ordinary one: a returning LLQ goes next; once the others
        // are empty it is served back to back.
        for _ in 0..3 {
            m.enqueue(LowLatency, vec![0; 1500], T);
        }
        for _ in 0..2 {
            m.enqueue(Class(0), vec![1; 1500], T);
        }
        assert_eq!(order(&mut m, 5), "L1L1L");
        assert_eq!(m.dequeue(T), None);
    }

    #[test]
    fn the_deficit_goes_negative_and_the_next_turn_pays_it_back() {
        // Class 1: Q = 1000, 1500 B packets; class 2: Q = 1500, 1500 B packets (one per turn).
        // Class 1's DC, turn by turn:
        //   turn 1: 0 + 1000 = 1000 > 0 → send 1500 → −500, turn ends;
        //   turn 2: −500 + 1000 = 500 > 0 → send 1500 → −1000, turn ends;
        //   turn 3: −1000 + 1000 = 0, not > 0 → nothing sent, turn ends at DC 0;
        //   turn 4 is turn 1 again.
        // So two packets (3000 B) every three turns, 1000 B a turn as the quantum says.
        // (Classic DRR would send nothing in turn 1: 1500 does not fit 1000.)
        let mut m = mdrr(LowLatencyMode::Alternate, 1500, &[1000, 1500]);
        for _ in 0..100 {
            m.enqueue(Class(0), vec![1; 1500], T);
            m.enqueue(Class(1), vec![2; 1500], T);
        }
        let mut seen = String::new();
        let mut dc = Vec::new();
        for _ in 0..15 {
            seen.push(name(m.dequeue(T).unwrap().0));
            dc.push(m.deficit(Class(0)));
        }
        assert_eq!(seen, "12122".repeat(3));
        let period = [-500, -500, -1000, -1000, 0];
        assert_eq!(dc, period.repeat(3));
        // Class 2 sends one packet a turn and ends each turn at DC 0.
        assert_eq!(m.deficit(Class(1)), 0);

        // A queue that empties has its DC reset to 0, not left negative.
        let mut m = mdrr(LowLatencyMode::Alternate, 1500, &[1000]);
        m.enqueue(Class(0), vec![1; 1500], T);
        assert_eq!(order(&mut m, 1), "1");
        assert_eq!(m.deficit(Class(0)), 0);
        // So the next packet starts a fresh turn at DC = Q.
        m.enqueue(Class(0), vec![1; 1500], T);
        m.enqueue(Class(0), vec![1; 1500], T);
        assert_eq!(order(&mut m, 1), "1");
        assert_eq!(m.deficit(Class(0)), -500);
    }

    #[test]
    fn byte_shares_follow_the_quanta_whatever_the_packet_sizes() {
        const MAX: i64 = 1500;
        let (q1, q2) = (3000i64, 1000i64);
        let mut m = mdrr(LowLatencyMode::Alternate, 1500, &[q1 as u32, q2 as u32]);
        let mut rng = ChaCha8Rng::seed_from_u64(3);
        for _ in 0..20_000 {
            m.enqueue(Class(0), vec![1; rng.gen_range(64..=MAX as usize)], T);
            m.enqueue(Class(1), vec![2; rng.gen_range(64..=MAX as usize)], T);
        }
        // After k whole turns a backlogged queue has sent k·Q − DC bytes with
        // −MAX < DC ≤ 0, so kQ ≤ sent < kQ + MAX; during its (k+1)th turn,
        // sent < (k+1)Q + MAX. Class 1 goes first in each round, so at any moment, with k
        // the rounds completed:
        //   3·sent₂ ≥ 3kQ₂ = kQ₁ and sent₁ < (k+1)Q₁ + MAX → sent₁ − 3·sent₂ < Q₁ + MAX;
        //   sent₁ ≥ kQ₁ and 3·sent₂ < 3(k+1)Q₂ + 3·MAX → sent₁ − 3·sent₂ > −3(Q₂ + MAX).
        let mut sent = [0i64; 2];
        while m.queue_len(Class(0)) > 0 && m.queue_len(Class(1)) > 0 {
            let (t, p) = m.dequeue(T).unwrap();
            let Class(c) = t else { unreachable!() };
            sent[c] += p.len() as i64;
            let gap = sent[0] - 3 * sent[1];
            assert!(gap < q1 + MAX && gap > -3 * (q2 + MAX), "{sent:?}");
        }
        // Equal offered loads drained at 3:1: class 1 ran dry first, having sent all its
        // bytes while class 2 sent about a third of its own.
        assert_eq!(m.queue_len(Class(0)), 0);
        assert_eq!(sent[0] as u64, m.stats(Class(0)).unwrap().sent_bytes);
        assert!(sent[0] > 10_000_000, "{sent:?}");
    }

    #[test]
    fn queue_limits_tail_drop_and_count() {
        let mut m = Mdrr::new(
            MdrrClass {
                quantum_bytes: 1500,
                limit_packets: 1,
            },
            LowLatencyMode::Strict,
            &[MdrrClass {
                quantum_bytes: 0,
                limit_packets: 2,
            }],
        );
        let full = Verdict::Dropped(DropReason::QueueLimitPackets);
        assert_eq!(m.enqueue(LowLatency, vec![0; 100], T), Verdict::Queued);
        assert_eq!(m.enqueue(LowLatency, vec![0; 100], T), full);
        assert_eq!(m.enqueue(Class(0), vec![1; 100], T), Verdict::Queued);
        assert_eq!(m.enqueue(Class(0), vec![1; 100], T), Verdict::Queued);
        assert_eq!(m.enqueue(Class(0), vec![1; 100], T), full);
        assert_eq!(m.enqueue(Class(0), vec![1; 100], T), full);
        // No such class: dropped, counted nowhere, no panic.
        assert_eq!(m.enqueue(Class(7), vec![1; 100], T), full);
        assert_eq!(m.stats(Class(7)), None);
        assert_eq!((m.deficit(Class(7)), m.queue_len(Class(7))), (0, 0));
        let stats = |t| m.stats(t).unwrap().clone();
        assert_eq!(
            (stats(LowLatency).enqueued, stats(LowLatency).dropped),
            (1, 1)
        );
        assert_eq!((stats(Class(0)).enqueued, stats(Class(0)).dropped), (2, 2));
        // The zero quantum was raised to 1 byte: the class still drains (DC 1 > 0 sends
        // the first packet, DC −99; the next turn with DC > 0 is the 100th after).
        assert_eq!(order(&mut m, 3), "L11");
        assert_eq!(m.dequeue(T), None);
        assert_eq!(m.backlog(), 0);
        // Stats serialize.
        let json = serde_json::to_string(m.stats(Class(0)).unwrap()).unwrap();
        assert!(json.contains("\"sent_packets\":2"), "{json}");
    }

    #[test]
    fn every_packet_is_sent_dropped_or_queued_and_each_queue_keeps_its_order() {
        const MAX: usize = 1500;
        for (seed, mode) in [(1, LowLatencyMode::Strict), (2, LowLatencyMode::Alternate)] {
            let mut rng = ChaCha8Rng::seed_from_u64(seed);
            let mut cfg = || MdrrClass {
                quantum_bytes: rng.gen_range(200..3000),
                limit_packets: rng.gen_range(5..40),
            };
            let llq = cfg();
            let classes = [cfg(), cfg(), cfg()];
            let mut m = Mdrr::new(llq, mode, &classes);
            let targets = [LowLatency, Class(0), Class(1), Class(2)];
            let quantum = |t: MdrrTarget| match t {
                LowLatency => i64::from(llq.quantum_bytes),
                Class(i) => i64::from(classes[i].quantum_bytes),
            };
            let slot = |t: MdrrTarget| match t {
                LowLatency => 0,
                Class(i) => i + 1,
            };
            let mut offered = [0u64; 4];
            let mut next_seq = [0u32; 4];
            let mut seen = [0u32; 4];
            for step in 0..50_000 {
                if rng.gen_bool(0.55) {
                    let t = targets[rng.gen_range(0..4)];
                    let mut p = vec![0u8; rng.gen_range(4..=MAX)];
                    p[..4].copy_from_slice(&next_seq[slot(t)].to_be_bytes());
                    offered[slot(t)] += 1;
                    if m.enqueue(t, p, T) == Verdict::Queued {
                        next_seq[slot(t)] += 1;
                    }
                } else if let Some((t, p)) = m.dequeue(T) {
                    let seq = u32::from_be_bytes([p[0], p[1], p[2], p[3]]);
                    assert_eq!(seq, seen[slot(t)], "{t:?} in order");
                    seen[slot(t)] += 1;
                }
                for t in targets {
                    let s = m.stats(t).unwrap();
                    assert_eq!(offered[slot(t)], s.enqueued + s.dropped, "{t:?}");
                    assert_eq!(
                        s.enqueued,
                        s.sent_packets + m.queue_len(t) as u64,
                        "{t:?} at step {step}"
                    );
                    // −MAX < DC ≤ Q: it starts at most at Q, and drops below 0 by less
                    // than the packet that took it there.
                    let dc = m.deficit(t);
                    assert!(dc > -(MAX as i64) && dc <= quantum(t), "{t:?}: {dc}");
                    if mode == LowLatencyMode::Strict && t == LowLatency {
                        assert_eq!(dc, 0);
                    }
                }
            }
            while m.dequeue(T).is_some() {}
            assert_eq!(m.backlog(), 0);
            let mut dropped = 0;
            for t in targets {
                assert_eq!(m.deficit(t), 0, "{t:?} reset once empty");
                let s = m.stats(t).unwrap();
                assert_eq!(offered[slot(t)], s.sent_packets + s.dropped);
                assert!(s.sent_packets > 0, "{t:?}: {s:?}");
                dropped += s.dropped;
            }
            // The limits were exercised.
            assert!(dropped > 0, "{mode:?}");
        }
    }
}
