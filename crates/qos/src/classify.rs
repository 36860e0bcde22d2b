//! Classification: what a packet is (its [`Fields`]), class maps matched first-match
//! in ACL style, and per-flow reservation tables keyed by the IPv4 5-tuple, the IPv6
//! 5-tuple or the IPv6 (source, destination, flow label) 3-tuple (WebAudio thesis, RFC 6437).
//!
//! Ports come from the transport header: on IPv6 after walking the extension headers
//! ([`crate::mark::ipv6_l4`], RFC 8200); a non-first fragment, ESP or a truncated chain
//! has no ports, so a condition on ports does not match it while a pure L3 condition
//! still does. The 3-tuple needs no walk: all three fields sit at fixed offsets of the
//! 40-byte header, which is the saving the WebAudio thesis measured.

use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use wire::time::Instant;
use wire::{ipv4, ipv6};

use crate::bucket::Bucket;
use crate::mark::{ipv6_l4, L4};
use crate::prefix_match;

/// What classification looks at, read once per packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Fields {
    /// Source address.
    pub src: IpAddr,
    /// Destination address.
    pub dst: IpAddr,
    /// Transport protocol (IPv4 protocol; IPv6 after the extension headers, or the
    /// last next-header seen when there is no transport header).
    pub protocol: u8,
    /// Source and destination ports, when the packet has a TCP, UDP or SCTP header.
    pub ports: Option<(u16, u16)>,
    /// DSCP.
    pub dscp: u8,
    /// ECN.
    pub ecn: u8,
    /// IPv6 flow label (0 on IPv4).
    pub flow_label: u32,
    /// IP packet length, bytes.
    pub len: usize,
    /// Reservation tables (by index) holding the packet's flow, as bits; 0 from
    /// [`Fields::parse`], set by whoever looks the flow up.
    pub reserved: u32,
}

fn ports(packet: &[u8], protocol: u8, offset: usize) -> Option<(u16, u16)> {
    if !has_ports(protocol) {
        return None;
    }
    let h = packet.get(offset..offset + 4)?;
    Some((
        u16::from_be_bytes([h[0], h[1]]),
        u16::from_be_bytes([h[2], h[3]]),
    ))
}

impl Fields {
    /// Read an IPv4 or IPv6 packet (IP header first); `None` if it is neither.
    pub fn parse(packet: &[u8]) -> Option<Self> {
        match packet.first()? >> 4 {
            4 => {
                let p = ipv4::Packet::new_checked(packet).ok()?;
                let first = p.frag_offset() == 0;
                let off = p.header_len();
                let packet = &packet[..usize::from(p.total_len())];
                Some(Self {
                    src: p.src_addr().into(),
                    dst: p.dst_addr().into(),
                    protocol: p.protocol(),
                    ports: if first {
                        ports(packet, p.protocol(), off)
                    } else {
                        None
                    },
                    dscp: p.dscp(),
                    ecn: p.ecn(),
                    flow_label: 0,
                    len: packet.len(),
                    reserved: 0,
                })
            }
            6 => {
                let p = ipv6::Packet::new_checked(packet).ok()?;
                let (protocol, ports) = match ipv6_l4(packet) {
                    L4::At { protocol, offset } => (protocol, ports(packet, protocol, offset)),
                    _ => (p.next_header(), None),
                };
                Some(Self {
                    src: p.src_addr().into(),
                    dst: p.dst_addr().into(),
                    protocol,
                    ports,
                    dscp: p.dscp(),
                    ecn: p.ecn(),
                    flow_label: p.flow_label(),
                    len: ipv6::HEADER_LEN + usize::from(p.payload_len()),
                    reserved: 0,
                })
            }
            _ => None,
        }
    }
}

/// One condition of a class map.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Cond {
    /// Source address in prefix.
    Src(IpAddr, u8),
    /// Destination address in prefix.
    Dst(IpAddr, u8),
    /// Source address in any of these prefixes (an IPv4 and an IPv6 one, say).
    SrcAny(Vec<(IpAddr, u8)>),
    /// Destination address in any of these prefixes.
    DstAny(Vec<(IpAddr, u8)>),
    /// Transport protocol.
    Protocol(u8),
    /// Source port in range (inclusive); never matches a packet without ports.
    SrcPort(u16, u16),
    /// Destination port in range (inclusive); never matches a packet without ports.
    DstPort(u16, u16),
    /// DSCP among these.
    Dscp(Vec<u8>),
    /// ECN codepoint.
    Ecn(u8),
    /// IPv6 flow label; never matches IPv4.
    FlowLabel(u32),
    /// IP length in range (inclusive).
    Len(usize, usize),
    /// The packet's flow holds a reservation in table `n` of the policy (bit `n` of
    /// [`Fields::reserved`]).
    Reserved(u8),
}

impl Cond {
    /// Whether `f` meets the condition.
    pub fn matches(&self, f: &Fields) -> bool {
        match self {
            Self::Src(p, l) => prefix_match(f.src, *p, *l),
            Self::Dst(p, l) => prefix_match(f.dst, *p, *l),
            Self::SrcAny(v) => v.iter().any(|(p, l)| prefix_match(f.src, *p, *l)),
            Self::DstAny(v) => v.iter().any(|(p, l)| prefix_match(f.dst, *p, *l)),
            Self::Protocol(p) => f.protocol == *p,
            Self::SrcPort(a, b) => f.ports.is_some_and(|(s, _)| (*a..=*b).contains(&s)),
            Self::DstPort(a, b) => f.ports.is_some_and(|(_, d)| (*a..=*b).contains(&d)),
            Self::Dscp(set) => set.contains(&f.dscp),
            Self::Ecn(e) => f.ecn == *e,
            Self::FlowLabel(l) => f.src.is_ipv6() && f.flow_label == *l,
            Self::Len(a, b) => (*a..=*b).contains(&f.len),
            Self::Reserved(n) => f.reserved & (1u32 << (n & 31)) != 0,
        }
    }
}

/// A class map: its conditions, all of which (`match-all`, Cisco's default) or any of
/// which (`match-any`) must hold.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClassMap {
    /// Its name.
    pub name: String,
    /// `match-all` (true) or `match-any`.
    pub all: bool,
    /// The conditions.
    pub conds: Vec<Cond>,
}

impl ClassMap {
    /// Whether the class looks only at reservations (so a packet's other fields need
    /// not be parsed for it).
    pub fn only_reservations(&self) -> bool {
        !self.conds.is_empty() && self.conds.iter().all(|c| matches!(c, Cond::Reserved(_)))
    }

    /// Whether `f` belongs to the class.
    pub fn matches(&self, f: &Fields) -> bool {
        if self.all {
            self.conds.iter().all(|c| c.matches(f))
        } else {
            self.conds.iter().any(|c| c.matches(f))
        }
    }
}

/// First-match classification over class maps; `None` is class-default.
pub fn classify(maps: &[ClassMap], f: &Fields) -> Option<usize> {
    maps.iter().position(|m| m.matches(f))
}

/// A reservation key.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FlowKey {
    /// IPv4 (src, dst, protocol, src port, dst port).
    V4(Ipv4Addr, Ipv4Addr, u8, u16, u16),
    /// IPv6 (src, dst, protocol, src port, dst port).
    V6(Ipv6Addr, Ipv6Addr, u8, u16, u16),
    /// IPv6 (src, dst, flow label).
    Label(Ipv6Addr, Ipv6Addr, u32),
}

impl FlowKey {
    /// The key [`flow_key`] reads from a packet of this 5-tuple (an RSVP SESSION with an
    /// IPv4 or IPv6 FILTER_SPEC, C-Type 1 or 2, RFC 2205 A.1 and A.9). `None` when no
    /// packet has it: the addresses' families differ, or `protocol` has no ports there
    /// (only TCP, UDP, DCCP, SCTP and UDP-Lite carry them first in their header).
    pub fn for_5tuple(
        src: IpAddr,
        src_port: u16,
        dst: IpAddr,
        protocol: u8,
        dst_port: u16,
    ) -> Option<Self> {
        if !has_ports(protocol) {
            return None;
        }
        match (src, dst) {
            (IpAddr::V4(s), IpAddr::V4(d)) => Some(Self::V4(s, d, protocol, src_port, dst_port)),
            (IpAddr::V6(s), IpAddr::V6(d)) => Some(Self::V6(s, d, protocol, src_port, dst_port)),
            _ => None,
        }
    }

    /// The key [`flow_key`] reads from an IPv6 packet of this 3-tuple under a flow-label
    /// table (an RSVP FILTER_SPEC C-Type 3, RFC 2205 A.9). `None` when no packet has it:
    /// a zero label (no flow, RFC 6437) or one wider than 20 bits.
    pub fn for_label(src: Ipv6Addr, dst: Ipv6Addr, label: u32) -> Option<Self> {
        (label != 0 && label <= 0xf_ffff).then_some(Self::Label(src, dst, label))
    }

    /// Whether a table keyed by `kind` can hold this key: a flow-label table keys IPv6
    /// by its 3-tuple and IPv4 by its 5-tuple, a 5-tuple table keys both by the 5-tuple.
    pub fn fits(&self, kind: KeyKind) -> bool {
        match self {
            Self::V4(..) => true,
            Self::V6(..) => kind == KeyKind::FiveTuple,
            Self::Label(..) => kind == KeyKind::FlowLabel,
        }
    }
}

/// How a reservation table keys its flows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KeyKind {
    /// The 5-tuple (ports after the extension-header walk on IPv6).
    FiveTuple,
    /// The IPv6 3-tuple at fixed offsets; IPv4 falls back to its 5-tuple.
    FlowLabel,
}

/// The key of `packet` (IP header first), or `None` when it has none (no ports for a
/// 5-tuple, a zero flow label for a 3-tuple, not IP).
pub fn flow_key(kind: KeyKind, packet: &[u8]) -> Option<FlowKey> {
    if kind == KeyKind::FlowLabel && packet.first()? >> 4 == 6 {
        // Fixed offsets only: no extension-header walk.
        let p = ipv6::Packet::new_checked(packet).ok()?;
        let label = p.flow_label();
        return (label != 0).then(|| FlowKey::Label(p.src_addr(), p.dst_addr(), label));
    }
    let f = Fields::parse(packet)?;
    let (sp, dp) = f.ports?;
    match (f.src, f.dst) {
        (IpAddr::V4(s), IpAddr::V4(d)) => Some(FlowKey::V4(s, d, f.protocol, sp, dp)),
        (IpAddr::V6(s), IpAddr::V6(d)) => Some(FlowKey::V6(s, d, f.protocol, sp, dp)),
        _ => None,
    }
}

/// What [`Reservations::lookup_or_admit`] found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Admission {
    /// The packet has no key of the table's kind (no ports, a zero flow label, not IP).
    NoKey,
    /// Its flow was reserved (and the packet within the flow's token bucket, if it has one).
    Hit,
    /// Its flow is reserved but the packet is beyond the flow's token bucket: it is to be
    /// served as if the flow were not reserved (RFC 2211: nonconformant traffic is
    /// forwarded best effort).
    Excess,
    /// Its flow was not, and is not admitted.
    Miss,
    /// Its flow was reserved now.
    Admitted,
    /// Its flow would be admitted, but the table is full.
    Full,
}

/// A reserved flow's token bucket: the rate r and depth b of its Tspec (RFC 2210, RFC
/// 2215 token bucket), counting whole IP packets.
#[derive(Clone, Debug)]
struct Meter {
    rate_bps: u64,
    burst_bytes: u64,
    bucket: Bucket,
}

/// One reserved flow: the class it was reserved for, and its token bucket when the
/// reservation was signalled with one.
#[derive(Clone, Debug)]
struct Flow {
    class: usize,
    meter: Option<Meter>,
}

/// Per-flow reservations: key → reserved class (an index the caller gives meaning) and,
/// for a flow reserved with a rate, its token bucket.
#[derive(Clone, Debug)]
pub struct Reservations {
    kind: KeyKind,
    table: HashMap<FlowKey, Flow>,
}

impl Reservations {
    /// An empty table keyed by `kind`.
    pub fn new(kind: KeyKind) -> Self {
        Self {
            kind,
            table: HashMap::new(),
        }
    }

    /// Reserve `key` for `class`, with no token bucket (every packet of it is within).
    pub fn insert(&mut self, key: FlowKey, class: usize) {
        self.table.insert(key, Flow { class, meter: None });
    }

    /// Reserve `key` for `class` with a token bucket of `rate_bps` (bit/s; a multiple of 8
    /// is exact) and `burst_bytes`, full at `now`; returns whether the key is new. A key
    /// already held keeps its bucket when the rate and burst are unchanged (a refresh);
    /// otherwise it gets the new bucket holding the tokens it had at `now`, up to the new
    /// depth.
    pub fn reserve(
        &mut self,
        key: FlowKey,
        class: usize,
        rate_bps: u64,
        burst_bytes: u64,
        now: Instant,
    ) -> bool {
        let old = self.table.remove(&key);
        let meter = match old.as_ref().and_then(|f| f.meter.clone()) {
            Some(m) if (m.rate_bps, m.burst_bytes) == (rate_bps, burst_bytes) => m,
            held => {
                let mut bucket = Bucket::full(rate_bps, burst_bytes, now);
                if let Some(mut m) = held {
                    m.bucket.fill(now);
                    let missing = burst_bytes.saturating_sub(m.bucket.tokens_bytes());
                    bucket.take(usize::try_from(missing).unwrap_or(usize::MAX));
                }
                Meter {
                    rate_bps,
                    burst_bytes,
                    bucket,
                }
            }
        };
        let meter = Some(meter);
        self.table.insert(key, Flow { class, meter });
        old.is_none()
    }

    /// Remove `key`'s reservation; returns the class it held.
    pub fn remove(&mut self, key: &FlowKey) -> Option<usize> {
        self.table.remove(key).map(|f| f.class)
    }

    /// Whether `key` is reserved.
    pub fn contains(&self, key: &FlowKey) -> bool {
        self.table.contains_key(key)
    }

    /// Reserved flows.
    pub fn len(&self) -> usize {
        self.table.len()
    }

    /// Whether no flow is reserved.
    pub fn is_empty(&self) -> bool {
        self.table.is_empty()
    }

    /// The reserved class of `packet`, if its flow has one (its token bucket is not
    /// looked at).
    pub fn lookup(&self, packet: &[u8]) -> Option<usize> {
        self.table
            .get(&flow_key(self.kind, packet)?)
            .map(|f| f.class)
    }

    /// How the table keys its flows.
    pub fn kind(&self) -> KeyKind {
        self.kind
    }

    /// Whether `packet` (an IP packet; its length is what a token bucket counts)
    /// arriving at `now` belongs to a reserved flow and is within the flow's token
    /// bucket (taking its bytes from it). If the flow is not reserved and `admit` says so
    /// for a packet with a key, reserve it (for `class`, without a bucket) while the
    /// table has fewer than `max` flows: the first packet of a flow stands in for its
    /// RSVP reservation. The key is read once.
    pub fn lookup_or_admit(
        &mut self,
        packet: &[u8],
        now: Instant,
        class: usize,
        max: usize,
        admit: impl FnOnce() -> bool,
    ) -> Admission {
        let Some(key) = flow_key(self.kind, packet) else {
            return Admission::NoKey;
        };
        if let Some(flow) = self.table.get_mut(&key) {
            let Some(m) = flow.meter.as_mut() else {
                return Admission::Hit;
            };
            m.bucket.fill(now);
            if !m.bucket.has(packet.len()) {
                return Admission::Excess;
            }
            m.bucket.take(packet.len());
            return Admission::Hit;
        }
        if !admit() {
            return Admission::Miss;
        }
        if self.table.len() >= max {
            return Admission::Full;
        }
        self.insert(key, class);
        Admission::Admitted
    }
}

/// Whether [`flow_key`] reads ports for `protocol`.
fn has_ports(protocol: u8) -> bool {
    // TCP 6, UDP 17, UDP-Lite 136, SCTP 132, DCCP 33: ports are the first 4 bytes.
    matches!(protocol, 6 | 17 | 33 | 132 | 136)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn udp4(dscp: u8, sport: u16, dport: u16, frag_offset: u16) -> Vec<u8> {
        let mut p = vec![0u8; 20 + 8 + 32];
        ipv4::Repr {
            src_addr: Ipv4Addr::new(198, 18, 1, 1),
            dst_addr: Ipv4Addr::new(198, 18, 4, 2),
            protocol: ipv4::PROTO_UDP,
            payload_len: 40,
            ttl: 64,
            dscp,
            ecn: 0,
            ident: 1,
            dont_frag: false,
        }
        .emit(&mut ipv4::Packet::new_unchecked(&mut p[..]));
        p[20..22].copy_from_slice(&sport.to_be_bytes());
        p[22..24].copy_from_slice(&dport.to_be_bytes());
        if frag_offset != 0 {
            let mut q = ipv4::Packet::new_unchecked(&mut p[..]);
            q.set_frag_offset(frag_offset);
            q.fill_checksum();
        }
        p
    }

    fn udp6(label: u32, sport: u16, dport: u16, hbh: bool) -> Vec<u8> {
        let ext = if hbh { 8 } else { 0 };
        let mut p = vec![0u8; 40 + ext + 8 + 32];
        ipv6::Repr {
            src_addr: "2001:2:0:1::1".parse().unwrap(),
            dst_addr: "2001:2:0:4::2".parse().unwrap(),
            next_header: if hbh { 0 } else { 17 },
            payload_len: ext + 40,
            hop_limit: 64,
            traffic_class: 0xB8,
            flow_label: label,
        }
        .emit(&mut ipv6::Packet::new_unchecked(&mut p[..]));
        if hbh {
            p[40] = 17; // then UDP; HdrExtLen 0 = 8 bytes
        }
        p[40 + ext..42 + ext].copy_from_slice(&sport.to_be_bytes());
        p[42 + ext..44 + ext].copy_from_slice(&dport.to_be_bytes());
        p
    }

    #[test]
    fn fields_are_read_through_extension_headers() {
        let f = Fields::parse(&udp6(0x12345, 5004, 5006, true)).unwrap();
        assert_eq!(
            (f.protocol, f.ports, f.dscp, f.flow_label),
            (17, Some((5004, 5006)), 46, 0x12345)
        );
        let f = Fields::parse(&udp4(46, 1, 2, 0)).unwrap();
        assert_eq!(
            (f.protocol, f.ports, f.dscp, f.len),
            (17, Some((1, 2)), 46, 60)
        );
        assert!(Fields::parse(&[0x50; 40]).is_none());
    }

    #[test]
    fn first_match_acl_and_later_fragments() {
        let voice = ClassMap {
            name: "voice".into(),
            all: true,
            conds: vec![Cond::Protocol(17), Cond::DstPort(5000, 5010)],
        };
        let ef = ClassMap {
            name: "ef".into(),
            all: false,
            conds: vec![Cond::Dscp(vec![46]), Cond::FlowLabel(7)],
        };
        let maps = [voice, ef];
        let f = |p: &[u8]| Fields::parse(p).unwrap();
        assert_eq!(
            classify(&maps, &f(&udp4(46, 1, 5004, 0))),
            Some(0),
            "first match"
        );
        assert_eq!(classify(&maps, &f(&udp4(46, 1, 80, 0))), Some(1));
        assert_eq!(
            classify(&maps, &f(&udp4(0, 1, 80, 0))),
            None,
            "class-default"
        );
        // A later fragment has no ports: the port ACL misses, the L3 one still matches.
        let later = f(&udp4(46, 1, 5004, 185));
        assert_eq!(later.ports, None);
        assert_eq!(classify(&maps, &later), Some(1));
        let l3 = ClassMap {
            name: "net".into(),
            all: true,
            conds: vec![Cond::Dst("198.18.4.0".parse().unwrap(), 24)],
        };
        assert!(l3.matches(&later));
        // Flow label conditions never match IPv4.
        assert!(!Cond::FlowLabel(0).matches(&f(&udp4(0, 1, 2, 0))));
        assert!(Cond::FlowLabel(7).matches(&f(&udp6(7, 1, 2, false))));
    }

    #[test]
    fn reservations_by_five_tuple_and_by_flow_label() {
        let mut five = Reservations::new(KeyKind::FiveTuple);
        let mut label = Reservations::new(KeyKind::FlowLabel);
        for i in 0..1000u16 {
            five.insert(
                flow_key(KeyKind::FiveTuple, &udp6(0, 10_000 + i, 5004, true)).unwrap(),
                1,
            );
            label.insert(
                flow_key(KeyKind::FlowLabel, &udp6(u32::from(i) + 1, 0, 0, false)).unwrap(),
                2,
            );
        }
        assert_eq!((five.len(), label.len()), (1000, 1000));
        // The 5-tuple needs the ports behind the Hop-by-Hop header; the 3-tuple does not.
        assert_eq!(five.lookup(&udp6(0, 10_500, 5004, true)), Some(1));
        assert_eq!(five.lookup(&udp6(0, 9_999, 5004, true)), None);
        assert_eq!(label.lookup(&udp6(501, 1, 1, true)), Some(2));
        assert_eq!(
            label.lookup(&udp6(0, 1, 1, false)),
            None,
            "label 0: no flow"
        );
        assert_eq!(label.lookup(&udp6(2000, 1, 1, false)), None);
        // IPv4 under a flow-label table falls back to its 5-tuple.
        label.insert(flow_key(KeyKind::FlowLabel, &udp4(0, 1, 2, 0)).unwrap(), 3);
        assert_eq!(label.lookup(&udp4(0, 1, 2, 0)), Some(3));
    }

    #[test]
    fn keys_built_from_a_filter_are_the_keys_of_its_packets() {
        let (s4, d4) = (Ipv4Addr::new(198, 18, 1, 1), Ipv4Addr::new(198, 18, 4, 2));
        let s6: Ipv6Addr = "2001:2:0:1::1".parse().unwrap();
        let d6: Ipv6Addr = "2001:2:0:4::2".parse().unwrap();
        let v4 = FlowKey::for_5tuple(s4.into(), 1000, d4.into(), 17, 5006);
        for kind in [KeyKind::FiveTuple, KeyKind::FlowLabel] {
            assert_eq!(v4, flow_key(kind, &udp4(0, 1000, 5006, 0)), "{kind:?}");
        }
        assert_eq!(
            FlowKey::for_5tuple(s6.into(), 1000, d6.into(), 17, 5006),
            flow_key(KeyKind::FiveTuple, &udp6(0x12345, 1000, 5006, true))
        );
        assert_eq!(
            FlowKey::for_label(s6, d6, 0x12345),
            flow_key(KeyKind::FlowLabel, &udp6(0x12345, 1000, 5006, true))
        );
        // Keys no packet has.
        assert_eq!(FlowKey::for_5tuple(s4.into(), 1, d6.into(), 17, 2), None);
        assert_eq!(FlowKey::for_5tuple(s4.into(), 1, d4.into(), 1, 2), None);
        assert_eq!(FlowKey::for_label(s6, d6, 0), None);
        assert_eq!(FlowKey::for_label(s6, d6, 0x10_0000), None);
        // Which tables can hold which keys.
        let label = FlowKey::for_label(s6, d6, 1).unwrap();
        let v6 = FlowKey::for_5tuple(s6.into(), 1, d6.into(), 6, 2).unwrap();
        let fits = |k: FlowKey| [KeyKind::FiveTuple, KeyKind::FlowLabel].map(|t| k.fits(t));
        assert_eq!(
            [fits(v4.unwrap()), fits(v6), fits(label)],
            [[true, true], [true, false], [false, true]]
        );
    }

    #[test]
    fn a_reserved_flow_is_within_its_bucket_until_removed_and_a_refresh_keeps_its_tokens() {
        let mut t = Reservations::new(KeyKind::FlowLabel);
        let p = udp6(7, 1, 2, false); // 80 bytes
        let key = flow_key(KeyKind::FlowLabel, &p).unwrap();
        let at = Instant::from_nanos;
        let never = || panic!("a signalled flow is not admitted");
        // 8,000 bit/s = 1,000 B/s, depth 200 B: two packets, then none at the same time.
        assert!(t.reserve(key, 4, 8_000, 200, at(0)));
        assert_eq!(t.lookup_or_admit(&p, at(0), 0, 1, never), Admission::Hit);
        assert_eq!(t.lookup_or_admit(&p, at(0), 0, 1, never), Admission::Hit);
        assert_eq!(t.lookup_or_admit(&p, at(0), 0, 1, never), Admission::Excess);
        // A refresh with the same values does not refill it: 40 B + 40 ms · 1,000 B/s.
        assert!(!t.reserve(key, 4, 8_000, 200, at(20_000_000)));
        assert_eq!(
            t.lookup_or_admit(&p, at(39_000_000), 0, 1, never),
            Admission::Excess
        );
        assert_eq!(
            t.lookup_or_admit(&p, at(40_000_000), 0, 1, never),
            Admission::Hit
        );
        // A new flowspec carries the tokens held (0 B) into its bucket: 2,000 B/s.
        assert!(!t.reserve(key, 5, 16_000, 400, at(40_000_000)));
        assert_eq!(
            t.lookup_or_admit(&p, at(79_000_000), 0, 1, never),
            Admission::Excess
        );
        assert_eq!(
            t.lookup_or_admit(&p, at(80_000_000), 0, 1, never),
            Admission::Hit
        );
        assert_eq!(t.lookup(&p), Some(5));
        assert_eq!(t.remove(&key), Some(5));
        assert_eq!(t.remove(&key), None);
        assert_eq!(
            t.lookup_or_admit(&p, at(1), 0, 1, || false),
            Admission::Miss
        );
        assert!(t.is_empty());
    }
}
