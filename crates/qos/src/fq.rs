//! Flow-based fair queueing inside one class: Cisco's `fair-queue` under class-default
//! (reference qos.md §1.2). Conversations are hashed from the addresses, protocol, ports
//! and DS field into 256 queues (IOS's default number of dynamic queues), and served by
//! deficit round robin whose quantum follows IOS's weight 32384 / (IP precedence + 1):
//! a conversation gets service in proportion to precedence + 1, 1500 bytes per turn
//! at precedence 0. DRR stands in for IOS's sequence numbers (weight × length, smallest
//! first), the same proportional share without per-packet tags; the choice is recorded
//! here. The class's queue limit bounds each conversation (IOS: with `fair-queue`,
//! `queue-limit` is per flow queue, the congestive discard threshold): an aggressive
//! conversation loses its own packets and a thin one still gets in.
//!
//! The queue presents itself as one FIFO to the class scheduler: [`FairQueue::peek_len`]
//! settles which packet is next (advancing the round as DRR would), [`FairQueue::pop`]
//! takes it.

use std::collections::VecDeque;

use crate::classify::Fields;

/// Conversation queues.
pub const QUEUES: usize = 256;

/// Bytes a precedence-0 conversation may send per turn.
const BASE_QUANTUM: i64 = 1500;

/// The fair queue of one class.
#[derive(Clone, Debug)]
pub struct FairQueue {
    /// Bytes before the IP header in each packet (14 for Ethernet frames).
    offset: usize,
    queues: Vec<VecDeque<Vec<u8>>>,
    deficit: Vec<i64>,
    /// Active conversations in service order; the front is being served.
    active: VecDeque<usize>,
    turn_started: bool,
    len: usize,
}

/// FNV-1a over the conversation's fields.
fn conversation(packet: Option<&[u8]>) -> (usize, u8) {
    let Some(f) = packet.and_then(Fields::parse) else {
        return (0, 0);
    };
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    let mut eat = |bytes: &[u8]| {
        for b in bytes {
            h ^= u64::from(*b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
    };
    for a in [f.src, f.dst] {
        match a {
            std::net::IpAddr::V4(a) => eat(&a.octets()),
            std::net::IpAddr::V6(a) => eat(&a.octets()),
        }
    }
    let (sp, dp) = f.ports.unwrap_or((0, 0));
    eat(&[f.protocol, f.dscp]);
    eat(&sp.to_be_bytes());
    eat(&dp.to_be_bytes());
    ((h % QUEUES as u64) as usize, f.dscp >> 3)
}

impl FairQueue {
    /// An empty fair queue for packets whose IP header starts at `offset`.
    pub fn new(offset: usize) -> Self {
        Self {
            offset,
            queues: vec![VecDeque::new(); QUEUES],
            deficit: vec![0; QUEUES],
            active: VecDeque::new(),
            turn_started: false,
            len: 0,
        }
    }

    /// Packets held, all conversations together.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether it holds nothing.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Conversations with packets waiting.
    pub fn active_conversations(&self) -> usize {
        self.active.len()
    }

    /// Packets waiting in `pkt`'s conversation.
    pub fn conversation_len(&self, pkt: &[u8]) -> usize {
        let (q, _) = conversation(pkt.get(self.offset..));
        self.queues[q].len()
    }

    /// Add a packet to its conversation's queue.
    pub fn push(&mut self, pkt: Vec<u8>) {
        let (q, _) = conversation(pkt.get(self.offset..));
        self.queues[q].push_back(pkt);
        self.len += 1;
        if self.queues[q].len() == 1 {
            self.active.push_back(q);
        }
    }

    /// The length of the packet that goes next, settling the round up to it.
    pub fn peek_len(&mut self) -> Option<usize> {
        loop {
            let &q = self.active.front()?;
            let head = self.queues[q].front()?;
            if !self.turn_started {
                let (_, precedence) = conversation(head.get(self.offset..));
                self.deficit[q] += BASE_QUANTUM * (i64::from(precedence) + 1);
                self.turn_started = true;
            }
            if head.len() as i64 <= self.deficit[q] {
                return Some(head.len());
            }
            // The head does not fit: the turn ends, the deficit carries over.
            self.active.rotate_left(1);
            self.turn_started = false;
        }
    }

    /// Take the packet [`FairQueue::peek_len`] named.
    pub fn pop(&mut self) -> Option<Vec<u8>> {
        self.peek_len()?;
        let &q = self.active.front()?;
        let pkt = self.queues[q].pop_front()?;
        self.len -= 1;
        self.deficit[q] -= pkt.len() as i64;
        if self.queues[q].is_empty() {
            self.deficit[q] = 0;
            self.active.pop_front();
            self.turn_started = false;
        }
        Some(pkt)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use wire::ipv4;

    /// A UDP/IPv4 packet of `len` bytes from port `sport`, with `dscp`, tagged `tag`.
    fn udp(sport: u16, dscp: u8, len: usize, tag: u8) -> Vec<u8> {
        let mut p = vec![0u8; len];
        ipv4::Repr {
            src_addr: std::net::Ipv4Addr::new(198, 18, 2, 2),
            dst_addr: std::net::Ipv4Addr::new(198, 18, 5, 2),
            protocol: ipv4::PROTO_UDP,
            payload_len: len - 20,
            ttl: 64,
            dscp,
            ecn: 0,
            ident: 1,
            dont_frag: true,
        }
        .emit(&mut ipv4::Packet::new_unchecked(&mut p[..]));
        p[20..22].copy_from_slice(&sport.to_be_bytes());
        p[22..24].copy_from_slice(&5001u16.to_be_bytes());
        p[len - 1] = tag;
        p
    }

    #[test]
    fn a_small_flow_is_not_stuck_behind_a_bulk_one() {
        let mut fq = FairQueue::new(0);
        // 20 bulk packets first, then 2 of a thin flow: the thin flow's first packet
        // leaves second, not 21st.
        for _ in 0..20 {
            fq.push(udp(1000, 0, 1500, b'B'));
        }
        fq.push(udp(2000, 0, 100, b't'));
        fq.push(udp(2000, 0, 100, b't'));
        assert_eq!(fq.active_conversations(), 2);
        let order: String = std::iter::from_fn(|| fq.pop())
            .map(|p| char::from(p[p.len() - 1]))
            .collect();
        assert_eq!(&order[..3], "Btt", "{order}");
        assert_eq!(order.len(), 22);
        assert!(fq.is_empty() && fq.active_conversations() == 0);
    }

    #[test]
    fn conversations_are_counted_apart() {
        let mut fq = FairQueue::new(0);
        for _ in 0..5 {
            fq.push(udp(1000, 0, 100, 0));
        }
        fq.push(udp(2000, 0, 100, 0));
        assert_eq!(fq.conversation_len(&udp(1000, 0, 60, 9)), 5);
        assert_eq!(fq.conversation_len(&udp(2000, 0, 60, 9)), 1);
        assert_eq!(fq.conversation_len(&udp(3000, 0, 60, 9)), 0);
        assert_eq!(fq.len(), 6);
    }

    #[test]
    fn service_follows_precedence_plus_one() {
        // Two backlogged conversations of 1000-byte packets, precedence 0 (DSCP 0) and
        // precedence 2 (DSCP 16): quanta 1500 and 4500, so bytes 1 : 3.
        let mut fq = FairQueue::new(0);
        for _ in 0..400 {
            fq.push(udp(1000, 0, 1000, b'a'));
            fq.push(udp(2000, 16, 1000, b'c'));
        }
        let mut a = 0;
        let mut c = 0;
        for _ in 0..400 {
            let p = fq.pop().unwrap();
            if p[p.len() - 1] == b'a' {
                a += 1;
            } else {
                c += 1;
            }
        }
        // Exactly: per round a sends 1 or 2 (1500 B of deficit), c sends 4 or 5.
        assert_eq!((a, c), (100, 300));
    }

    #[test]
    fn every_packet_comes_out_once_in_order_within_its_conversation() {
        let mut fq = FairQueue::new(0);
        let mut sent = 0;
        for i in 0..300u16 {
            fq.push(udp(
                1000 + i % 7,
                (i % 7 % 3) as u8 * 8,
                60 + usize::from(i % 50) * 29,
                (i / 7) as u8,
            ));
            sent += 1;
            if i % 5 == 0 {
                let _ = fq.pop();
                sent -= 1;
            }
        }
        let mut last = [None::<u8>; 7];
        let mut n = 0;
        while let Some(p) = fq.pop() {
            let port = u16::from_be_bytes([p[20], p[21]]) - 1000;
            let tag = p[p.len() - 1];
            if let Some(l) = last[usize::from(port)] {
                assert!(tag >= l, "conversation {port} reordered");
            }
            last[usize::from(port)] = Some(tag);
            n += 1;
        }
        assert_eq!(n, sent);
        // Something that is not IP goes to one queue and still comes out.
        fq.push(vec![0xff; 30]);
        assert_eq!(fq.peek_len(), Some(30));
        assert_eq!(fq.pop().map(|p| p.len()), Some(30));
        assert_eq!(fq.pop(), None);
    }
}
