//! Forwarding decisions of an IPv4/IPv6 router, frame in → frame out, sans-IO.
//!
//! For a frame received on interface `i`, [`Forwarder::handle_frame`] returns at most
//! one frame to send and the interface to send it on:
//!
//! - **ARP** (RFC 826): a request for the interface's IPv4 address gets a reply.
//! - **Neighbour Discovery** (RFC 4861 §7.2.3–7.2.4): a solicitation for one of the
//!   interface's IPv6 addresses gets a solicited advertisement (router flag set).
//! - **Echo** to one of the router's addresses gets a reply (RFC 792, RFC 4443 §4.2).
//! - **RSVP** (when [`Forwarder::set_rsvp`] is on; module `signal`): a message with a
//!   Router Alert or addressed to the router is handed over as [`Action::Signal`], and
//!   [`Forwarder::route_packet`] frames what the router originates.
//! - **Forwarding** (RFC 1812 §5.2, RFC 8200 §3): the longest-prefix route picks the
//!   egress interface and next hop, a static or learned neighbour entry its MAC; the TTL
//!   or hop limit is decremented, the IPv4 header checksum updated incrementally
//!   (RFC 1624), and the Ethernet header rewritten. Ethernet padding is not carried.
//! - **Errors**: TTL or hop limit that would reach 0 → ICMP time exceeded (RFC 792,
//!   RFC 4443 §3.3) from the ingress interface's address; an IPv6 packet larger than the
//!   egress MTU → packet too big (RFC 4443 §3.2); an IPv4 packet with DF larger than the
//!   egress MTU → fragmentation needed with the next-hop MTU (RFC 1191). The `icmp`
//!   builders in `wire` decide when an error must not be sent (about an ICMP error, a
//!   non-first fragment, an unspecified or multicast source).
//!
//! Not done, and counted as drops: IPv4 fragmentation of packets without DF
//! (`too_big`), destination-unreachable messages for missing routes (`no_route`), ARP
//! and NDP resolution of unknown next hops (`no_neighbor`: the lab installs static
//! entries, and entries are learned from requests and solicitations).

use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use serde::{Deserialize, Serialize};
use wire::ethernet::{self, EtherType};
use wire::{arp, icmp, ipv4, ipv6};

use qos::prefix_match;

mod signal;

pub use signal::OriginateError;

/// One interface of the router.
#[derive(Clone, Debug, PartialEq)]
pub struct Interface {
    /// Its name (for stats).
    pub name: String,
    /// Its MAC: the source of what it sends, and what it accepts frames for.
    pub mac: ethernet::Address,
    /// Its IPv4 address and prefix length.
    pub ipv4: Option<(Ipv4Addr, u8)>,
    /// Its IPv6 address and prefix length.
    pub ipv6: Option<(Ipv6Addr, u8)>,
    /// IP MTU: the largest IP packet it sends (IPv6's too, unless `mtu6` is set).
    pub mtu: u32,
    /// IPv6's own MTU, when it differs: the largest IPv6 packet it sends.
    pub mtu6: Option<u32>,
}

impl Interface {
    /// The largest IPv6 packet it sends.
    pub fn ipv6_mtu(&self) -> u32 {
        self.mtu6.unwrap_or(self.mtu)
    }
}

/// A route: packets to `prefix/len` leave on `iface` toward `via` (or straight to their
/// destination when `via` is `None`, on a connected subnet).
#[derive(Clone, Debug, PartialEq)]
pub struct Route {
    /// Prefix address.
    pub prefix: IpAddr,
    /// Prefix length.
    pub len: u8,
    /// Next hop.
    pub via: Option<IpAddr>,
    /// Egress interface index.
    pub iface: usize,
}

/// A configuration the forwarder cannot use.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ForwardError {
    /// A route or neighbour names an interface that does not exist.
    #[error("interface {0} does not exist")]
    NoInterface(usize),
    /// A prefix length beyond the family's width.
    #[error("prefix length {len} is too long for {prefix}")]
    PrefixLength {
        /// The prefix.
        prefix: IpAddr,
        /// Its length.
        len: u8,
    },
    /// An MTU below IPv6's minimum of 1280 bytes.
    #[error("interface {0}: an MTU below 1280 (IPv6's minimum)")]
    Mtu(String),
}

/// Counters of one interface, as frames arrive on it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct IfaceStats {
    /// Frames received.
    pub rx_frames: u64,
    /// Their bytes.
    pub rx_bytes: u64,
    /// IPv4 packets forwarded.
    pub forwarded_ipv4: u64,
    /// IPv6 packets forwarded.
    pub forwarded_ipv6: u64,
    /// ARP replies sent.
    pub arp_replies: u64,
    /// Neighbour advertisements sent.
    pub neighbor_adverts: u64,
    /// Echo replies sent.
    pub echo_replies: u64,
    /// ICMP time exceeded sent (the packet is dropped).
    pub ttl_exceeded: u64,
    /// ICMP packet too big / fragmentation needed sent, or a too-large packet without
    /// DF dropped.
    pub too_big: u64,
    /// No route to the destination.
    pub no_route: u64,
    /// No neighbour entry for the next hop.
    pub no_neighbor: u64,
    /// Malformed or truncated frames and packets, or a bad IPv4 header checksum.
    pub malformed: u64,
    /// Frames for another MAC, or of another protocol than IPv4, IPv6 and ARP.
    pub ignored: u64,
    /// Packets with a source no router forwards (RFC 1812 §5.3.7, RFC 4291), or
    /// link-local IPv4 either way.
    pub martian: u64,
    /// Addressed to the router but not answered (not echo, ARP or NDP), or multicast,
    /// broadcast or link-local traffic that a router does not forward.
    pub local: u64,
    /// RSVP messages taken in for the router's RSVP engine (`Action::Signal`, with
    /// RSVP on); absent when 0, as in the documents of routers without RSVP.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub rsvp: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// What to send: `frame` out of interface `iface`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Output {
    /// Egress interface.
    pub iface: usize,
    /// The Ethernet frame.
    pub frame: Vec<u8>,
}

/// What [`Forwarder::handle_frame_in_place`] made of a frame.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Action {
    /// Nothing to send (the reason is counted).
    Drop,
    /// The frame was rewritten in place for its next hop (Ethernet addresses, TTL or
    /// hop limit, IPv4 checksum): send its first `len` bytes (Ethernet padding is not
    /// carried) out of interface `iface`.
    Forward {
        /// Egress interface.
        iface: usize,
        /// Bytes of the rewritten frame to send.
        len: usize,
    },
    /// A new frame to send (an ARP or NDP answer, an echo reply, an ICMP error); the
    /// frame received is left as it was.
    Reply(Output),
    /// An RSVP message for the router (see [`Forwarder::set_rsvp`]): its IP packet is
    /// `frame[start..start + len]` (Ethernet padding excluded), received on `iface`. The
    /// frame is left as it was; nothing is sent for it here.
    Signal {
        /// The interface it came in on.
        iface: usize,
        /// Offset of the IP header in the frame.
        start: usize,
        /// Length of the IP packet.
        len: usize,
    },
}

/// What the family handlers decide, before any byte of the frame is changed.
enum Decision {
    Drop,
    Reply(Output),
    /// An RSVP message of `len` bytes of IP for the router.
    Signal {
        len: usize,
    },
    Forward {
        iface: usize,
        mac: ethernet::Address,
        packet_len: usize,
    },
}

impl From<Option<Output>> for Decision {
    fn from(o: Option<Output>) -> Self {
        o.map_or(Self::Drop, Self::Reply)
    }
}

/// The forwarding engine.
pub struct Forwarder {
    ifaces: Vec<Interface>,
    /// Longest prefix first.
    routes: Vec<Route>,
    neighbors: HashMap<(usize, IpAddr), Neighbor>,
    stats: Vec<IfaceStats>,
    /// RSVP messages are taken in ([`Forwarder::set_rsvp`]).
    rsvp: bool,
}

/// Most entries learned from ARP and NDP (static ones do not count): a flood of
/// solicitations cannot grow the table without bound.
pub const MAX_LEARNED: usize = 4096;

#[derive(Clone, Copy, Debug)]
struct Neighbor {
    mac: ethernet::Address,
    /// From the configuration: never replaced by what is learned.
    fixed: bool,
}

impl Forwarder {
    /// A forwarder over `ifaces`, with `routes` beyond the interfaces' own subnets and
    /// static `neighbors` (interface, address, MAC).
    pub fn new(
        ifaces: Vec<Interface>,
        routes: Vec<Route>,
        neighbors: Vec<(usize, IpAddr, ethernet::Address)>,
    ) -> Result<Self, ForwardError> {
        let mut all = Vec::new();
        for (i, f) in ifaces.iter().enumerate() {
            if f.mtu < 1280 || f.mtu6.is_some_and(|m| m < 1280) {
                return Err(ForwardError::Mtu(f.name.clone()));
            }
            if let Some((a, len)) = f.ipv4 {
                all.push(Route {
                    prefix: a.into(),
                    len,
                    via: None,
                    iface: i,
                });
            }
            if let Some((a, len)) = f.ipv6 {
                all.push(Route {
                    prefix: a.into(),
                    len,
                    via: None,
                    iface: i,
                });
            }
        }
        all.extend(routes);
        for r in &all {
            let width = if r.prefix.is_ipv4() { 32 } else { 128 };
            if r.len > width {
                return Err(ForwardError::PrefixLength {
                    prefix: r.prefix,
                    len: r.len,
                });
            }
            if r.iface >= ifaces.len() {
                return Err(ForwardError::NoInterface(r.iface));
            }
        }
        // Stable: among equal lengths the interfaces' own subnets, then file order.
        all.sort_by_key(|r| std::cmp::Reverse(r.len));
        let mut table = HashMap::new();
        for (i, ip, mac) in neighbors {
            if i >= ifaces.len() {
                return Err(ForwardError::NoInterface(i));
            }
            table.insert((i, ip), Neighbor { mac, fixed: true });
        }
        Ok(Self {
            stats: vec![IfaceStats::default(); ifaces.len()],
            ifaces,
            routes: all,
            neighbors: table,
            rsvp: false,
        })
    }

    /// The interfaces.
    pub fn interfaces(&self) -> &[Interface] {
        &self.ifaces
    }

    /// Counters per interface, in interface order.
    pub fn stats(&self) -> &[IfaceStats] {
        &self.stats
    }

    /// The route for `dst`.
    pub fn lookup(&self, dst: IpAddr) -> Option<&Route> {
        self.routes
            .iter()
            .find(|r| prefix_match(dst, r.prefix, r.len))
    }

    /// Whether `ip` is one of the router's own addresses.
    pub fn is_mine(&self, ip: IpAddr) -> bool {
        self.ifaces.iter().any(|f| match ip {
            IpAddr::V4(a) => f.ipv4.is_some_and(|(x, _)| x == a),
            IpAddr::V6(a) => f.ipv6.is_some_and(|(x, _)| x == a),
        })
    }

    /// Decide what to do with `frame`, received on interface `iface`: at most one frame
    /// to send, as a new buffer. [`Self::handle_frame_in_place`] does the same without
    /// allocating for a forwarded frame.
    pub fn handle_frame(&mut self, iface: usize, frame: &[u8]) -> Option<Output> {
        let mut buf = frame.to_vec();
        match self.handle_frame_in_place(iface, &mut buf) {
            Action::Drop => None,
            Action::Reply(out) => Some(out),
            Action::Signal { .. } => None,
            Action::Forward { iface, len } => {
                buf.truncate(len);
                Some(Output { iface, frame: buf })
            }
        }
    }

    /// Decide what to do with `frame`, received on interface `iface`, rewriting a
    /// forwarded frame where it lies (a router's RX slot): its Ethernet header for the
    /// next hop, the TTL (with the IPv4 checksum updated per RFC 1624) or hop limit.
    /// Frames that are not forwarded are left unchanged.
    pub fn handle_frame_in_place(&mut self, iface: usize, frame: &mut [u8]) -> Action {
        let decision = self.decide(iface, frame);
        let Decision::Forward {
            iface: out,
            mac,
            packet_len,
        } = decision
        else {
            return match decision {
                Decision::Reply(o) => Action::Reply(o),
                Decision::Signal { len } => Action::Signal {
                    iface,
                    start: ethernet::HEADER_LEN,
                    len,
                },
                _ => Action::Drop,
            };
        };
        let len = ethernet::HEADER_LEN + packet_len;
        let frame = &mut frame[..len];
        let mut eth = ethernet::Frame::new_unchecked(&mut *frame);
        let ethertype = eth.ethertype();
        ethernet::Repr {
            src_addr: self.ifaces[out].mac,
            dst_addr: mac,
            ethertype,
        }
        .emit(&mut eth);
        let packet = &mut frame[ethernet::HEADER_LEN..];
        if ethertype == EtherType::Ipv4 {
            ipv4::Packet::new_unchecked(packet).decrement_ttl();
            self.stats[iface].forwarded_ipv4 += 1;
        } else {
            let mut q = ipv6::Packet::new_unchecked(packet);
            let hop = q.hop_limit();
            q.set_hop_limit(hop - 1);
            self.stats[iface].forwarded_ipv6 += 1;
        }
        Action::Forward { iface: out, len }
    }

    fn decide(&mut self, iface: usize, frame: &[u8]) -> Decision {
        let Some(st) = self.stats.get_mut(iface) else {
            return Decision::Drop;
        };
        st.rx_frames += 1;
        st.rx_bytes += frame.len() as u64;
        let Ok(eth) = ethernet::Frame::new_checked(frame) else {
            st.malformed += 1;
            return Decision::Drop;
        };
        let me = self.ifaces[iface].mac;
        let dst = eth.dst_addr();
        if dst != me && !dst.is_broadcast() && !dst.is_multicast() {
            st.ignored += 1;
            return Decision::Drop;
        }
        let src_mac = eth.src_addr();
        let payload = eth.payload();
        // A packet that came as a link-layer broadcast or multicast is never forwarded
        // and never gets an ICMP error (RFC 1812 §5.3.4 and §4.3.2.7; RFC 4443
        // §2.4(e)): only ARP and neighbour solicitations are answered from such frames.
        let group = dst != me;
        match eth.ethertype() {
            EtherType::Arp => self.handle_arp(iface, payload).into(),
            EtherType::Ipv4 if group => {
                self.stats[iface].local += 1;
                Decision::Drop
            }
            EtherType::Ipv4 => self.handle_ipv4(iface, src_mac, payload),
            EtherType::Ipv6 => self.handle_ipv6(iface, src_mac, payload, group),
            EtherType::Unknown(_) => {
                self.stats[iface].ignored += 1;
                Decision::Drop
            }
        }
    }

    /// A frame to `dst_mac` out of `iface` carrying `packet`.
    fn frame(
        &self,
        iface: usize,
        dst_mac: ethernet::Address,
        ethertype: EtherType,
        packet: &[u8],
    ) -> Output {
        let mut frame = vec![0u8; ethernet::HEADER_LEN + packet.len()];
        let mut f = ethernet::Frame::new_unchecked(&mut frame[..]);
        ethernet::Repr {
            src_addr: self.ifaces[iface].mac,
            dst_addr: dst_mac,
            ethertype,
        }
        .emit(&mut f);
        frame[ethernet::HEADER_LEN..].copy_from_slice(packet);
        Output { iface, frame }
    }

    /// An ICMP error back to the sender, if one may be sent.
    fn reply(
        &self,
        iface: usize,
        dst_mac: ethernet::Address,
        ethertype: EtherType,
        packet: Option<Vec<u8>>,
    ) -> Decision {
        packet
            .map(|p| self.frame(iface, dst_mac, ethertype, &p))
            .into()
    }

    /// Whether `ip` is on `iface`'s own subnet.
    fn on_link(&self, iface: usize, ip: IpAddr) -> bool {
        let f = &self.ifaces[iface];
        match ip {
            IpAddr::V4(a) => f
                .ipv4
                .is_some_and(|(p, len)| prefix_match(a.into(), p.into(), len)),
            IpAddr::V6(a) => f
                .ipv6
                .is_some_and(|(p, len)| prefix_match(a.into(), p.into(), len)),
        }
    }

    /// RFC 826's merge step: an entry already there (and not static) is refreshed;
    /// a new one is added only when `for_us` (the request or solicitation was for one
    /// of our addresses), only for an address on the interface's subnet, and only while
    /// fewer than [`MAX_LEARNED`] entries are learned.
    fn learn(&mut self, iface: usize, ip: IpAddr, mac: ethernet::Address, for_us: bool) {
        if !self.on_link(iface, ip) || mac.is_multicast() || mac.is_broadcast() {
            return;
        }
        let learned = self.neighbors.values().filter(|n| !n.fixed).count();
        match self.neighbors.get_mut(&(iface, ip)) {
            Some(n) if n.fixed => {}
            Some(n) => n.mac = mac,
            None if for_us && learned < MAX_LEARNED => {
                self.neighbors
                    .insert((iface, ip), Neighbor { mac, fixed: false });
            }
            None => {}
        }
    }

    /// The route to `dst`, counting a missing one against `iface`.
    fn route(&mut self, iface: usize, dst: IpAddr) -> Option<Route> {
        let route = self.lookup(dst).cloned();
        if route.is_none() {
            self.stats[iface].no_route += 1;
        }
        route
    }

    /// The next hop's MAC for `dst` on the route's interface, counting a missing
    /// neighbour entry against `iface`.
    fn next_hop(
        &mut self,
        iface: usize,
        route: &Route,
        dst: IpAddr,
        packet_len: usize,
    ) -> Decision {
        let next_hop = route.via.unwrap_or(dst);
        let Some(mac) = self.neighbors.get(&(route.iface, next_hop)).map(|n| n.mac) else {
            self.stats[iface].no_neighbor += 1;
            return Decision::Drop;
        };
        Decision::Forward {
            iface: route.iface,
            mac,
            packet_len,
        }
    }

    fn handle_arp(&mut self, iface: usize, payload: &[u8]) -> Option<Output> {
        let repr = arp::Packet::new_checked(payload)
            .ok()
            .and_then(|p| arp::Repr::parse(&p).ok());
        let Some(repr) = repr else {
            self.stats[iface].malformed += 1;
            return None;
        };
        // Learn the sender (RFC 826's merge step), then answer a request for us.
        let mine = self.ifaces[iface].ipv4.map(|(a, _)| a);
        let for_us = Some(repr.target_protocol_addr) == mine;
        self.learn(
            iface,
            repr.source_protocol_addr.into(),
            repr.source_hardware_addr,
            for_us,
        );
        if repr.operation != arp::Operation::Request || Some(repr.target_protocol_addr) != mine {
            self.stats[iface].local += 1;
            return None;
        }
        let reply = arp::Repr {
            operation: arp::Operation::Reply,
            source_hardware_addr: self.ifaces[iface].mac,
            source_protocol_addr: repr.target_protocol_addr,
            target_hardware_addr: repr.source_hardware_addr,
            target_protocol_addr: repr.source_protocol_addr,
        };
        let mut buf = vec![0u8; arp::BUFFER_LEN];
        reply.emit(&mut arp::Packet::new_unchecked(&mut buf[..]));
        self.stats[iface].arp_replies += 1;
        Some(self.frame(iface, repr.source_hardware_addr, EtherType::Arp, &buf))
    }

    fn handle_ipv4(
        &mut self,
        iface: usize,
        src_mac: ethernet::Address,
        payload: &[u8],
    ) -> Decision {
        let Ok(p) = ipv4::Packet::new_checked(payload) else {
            self.stats[iface].malformed += 1;
            return Decision::Drop;
        };
        if !p.verify_checksum() {
            self.stats[iface].malformed += 1;
            return Decision::Drop;
        }
        // The packet without Ethernet padding.
        let packet = &payload[..usize::from(p.total_len())];
        let dst = p.dst_addr();
        if self.rsvp_v4(&p) {
            return self.signal(iface, packet.len());
        }
        if self.is_mine(dst.into()) {
            return match icmp::v4_echo_reply(packet) {
                Some(reply) => {
                    self.stats[iface].echo_replies += 1;
                    Decision::Reply(self.frame(iface, src_mac, EtherType::Ipv4, &reply))
                }
                None => {
                    self.stats[iface].local += 1;
                    Decision::Drop
                }
            };
        }
        // RFC 1812 §5.3.7: martian sources (0/8, 127/8, 240/4, multicast) and link-local
        // (169.254/16, RFC 3927 §7) either way are not forwarded.
        let src = p.src_addr();
        let o = src.octets();
        let martian =
            o[0] == 0 || o[0] == 127 || o[0] >= 224 || src.is_link_local() || dst.is_link_local();
        if martian && !dst.is_broadcast() && !dst.is_multicast() {
            self.stats[iface].martian += 1;
            return Decision::Drop;
        }
        if dst.is_broadcast() || dst.is_multicast() || dst.is_unspecified() || dst.is_loopback() {
            self.stats[iface].local += 1;
            return Decision::Drop;
        }
        if p.ttl() <= 1 {
            self.stats[iface].ttl_exceeded += 1;
            let reply = self.ifaces[iface]
                .ipv4
                .and_then(|(me, _)| icmp::v4_time_exceeded(me, packet));
            return self.reply(iface, src_mac, EtherType::Ipv4, reply);
        }
        let Some(route) = self.route(iface, dst.into()) else {
            return Decision::Drop;
        };
        let out = route.iface;
        if packet.len() > self.ifaces[out].mtu as usize {
            self.stats[iface].too_big += 1;
            if !p.dont_frag() {
                return Decision::Drop; // fragmentation is not done here
            }
            let mtu = u16::try_from(self.ifaces[out].mtu).unwrap_or(u16::MAX);
            let reply = self.ifaces[iface]
                .ipv4
                .and_then(|(me, _)| icmp::v4_frag_needed(me, mtu, packet));
            return self.reply(iface, src_mac, EtherType::Ipv4, reply);
        }
        self.next_hop(iface, &route, dst.into(), packet.len())
    }

    fn handle_ipv6(
        &mut self,
        iface: usize,
        src_mac: ethernet::Address,
        payload: &[u8],
        group: bool,
    ) -> Decision {
        let Ok(p) = ipv6::Packet::new_checked(payload) else {
            self.stats[iface].malformed += 1;
            return Decision::Drop;
        };
        let packet = &payload[..ipv6::HEADER_LEN + usize::from(p.payload_len())];
        let dst = p.dst_addr();
        let src = p.src_addr();
        let mine = self.ifaces[iface].ipv6.map(|(a, _)| a);
        // Neighbour solicitation for our address (to it or to its solicited-node group).
        if p.next_header() == ipv4::PROTO_ICMPV6 {
            if let Ok(ns) = icmp::parse_ns(packet) {
                if Some(ns.target) != mine {
                    self.stats[iface].local += 1;
                    return Decision::Drop;
                }
                // RFC 4861 §7.2.3: learn the solicitor once the target is ours.
                if let (Some(source_ll), false) = (ns.source_ll, src.is_unspecified()) {
                    self.learn(iface, src.into(), source_ll, true);
                }
                // RFC 4861 §7.2.4: to the solicitation's source, or to all nodes (not
                // solicited) when the source was unspecified (DAD).
                let (to, to_mac, solicited) = if src.is_unspecified() {
                    let all = Ipv6Addr::new(0xff02, 0, 0, 0, 0, 0, 0, 1);
                    (all, ethernet::Address::from_ipv6_multicast(&all), false)
                } else {
                    (src, ns.source_ll.unwrap_or(src_mac), true)
                };
                let na = icmp::neighbor_advert(
                    ns.target,
                    self.ifaces[iface].mac,
                    to,
                    ns.target,
                    solicited,
                );
                self.stats[iface].neighbor_adverts += 1;
                return Decision::Reply(self.frame(iface, to_mac, EtherType::Ipv6, &na));
            }
        }
        if group {
            self.stats[iface].local += 1;
            return Decision::Drop;
        }
        // RFC 4291 §2.5.2–2.5.3, §2.7: no packet from these may be forwarded.
        if src.is_multicast() || src.is_loopback() || src.is_unspecified() {
            self.stats[iface].martian += 1;
            return Decision::Drop;
        }
        if self.rsvp_v6(packet) {
            return self.signal(iface, packet.len());
        }
        if self.is_mine(dst.into()) {
            return match icmp::v6_echo_reply(packet) {
                Some(reply) => {
                    self.stats[iface].echo_replies += 1;
                    Decision::Reply(self.frame(iface, src_mac, EtherType::Ipv6, &reply))
                }
                None => {
                    self.stats[iface].local += 1;
                    Decision::Drop
                }
            };
        }
        // Multicast, link-local and unspecified addresses stay on their link.
        let link_local = |a: &Ipv6Addr| a.segments()[0] & 0xffc0 == 0xfe80;
        if dst.is_multicast()
            || link_local(&dst)
            || link_local(&src)
            || dst.is_unspecified()
            || dst.is_loopback()
        {
            self.stats[iface].local += 1;
            return Decision::Drop;
        }
        if p.hop_limit() <= 1 {
            self.stats[iface].ttl_exceeded += 1;
            let reply = self.ifaces[iface]
                .ipv6
                .and_then(|(me, _)| icmp::v6_time_exceeded(me, packet));
            return self.reply(iface, src_mac, EtherType::Ipv6, reply);
        }
        let Some(route) = self.route(iface, dst.into()) else {
            return Decision::Drop;
        };
        let out = route.iface;
        if packet.len() > self.ifaces[out].ipv6_mtu() as usize {
            self.stats[iface].too_big += 1;
            let mtu = self.ifaces[out].ipv6_mtu();
            let reply = self.ifaces[iface]
                .ipv6
                .and_then(|(me, _)| icmp::v6_packet_too_big(me, mtu, packet));
            return self.reply(iface, src_mac, EtherType::Ipv6, reply);
        }
        self.next_hop(iface, &route, dst.into(), packet.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(super) const R0: ethernet::Address = ethernet::Address([2, 0x64, 0x70, 0, 1, 2]);
    pub(super) const R1: ethernet::Address = ethernet::Address([2, 0x64, 0x70, 0, 3, 1]);
    pub(super) const H0: ethernet::Address = ethernet::Address([2, 0x64, 0x70, 0, 1, 1]);
    pub(super) const N1: ethernet::Address = ethernet::Address([2, 0x64, 0x70, 0, 3, 2]);

    pub(super) fn v4(a: [u8; 4]) -> Ipv4Addr {
        Ipv4Addr::from(a)
    }

    pub(super) fn v6(s: &str) -> Ipv6Addr {
        s.parse().unwrap()
    }

    /// sender —(iface 0)— router —(iface 1)— next router, with routes beyond it.
    pub(super) fn router(mtu1: u32) -> Forwarder {
        router_mtus(mtu1, None)
    }

    /// As `router`, with IPv6's own MTU on interface 1.
    fn router_mtus(mtu1: u32, mtu6: Option<u32>) -> Forwarder {
        let ifaces = vec![
            Interface {
                name: "to-sender".into(),
                mac: R0,
                ipv4: Some((v4([198, 18, 1, 2]), 24)),
                ipv6: Some((v6("2001:2:0:1::2"), 64)),
                mtu: 1500,
                mtu6: None,
            },
            Interface {
                name: "to-r2".into(),
                mac: R1,
                ipv4: Some((v4([198, 18, 3, 1]), 24)),
                ipv6: Some((v6("2001:2:0:3::1"), 64)),
                mtu: mtu1,
                mtu6,
            },
        ];
        let routes = vec![
            Route {
                prefix: v4([198, 18, 4, 0]).into(),
                len: 24,
                via: Some(v4([198, 18, 3, 2]).into()),
                iface: 1,
            },
            Route {
                prefix: v6("2001:2:0:4::").into(),
                len: 64,
                via: Some(v6("2001:2:0:3::2").into()),
                iface: 1,
            },
        ];
        let neighbors = vec![
            (1, v4([198, 18, 3, 2]).into(), N1),
            (1, v6("2001:2:0:3::2").into(), N1),
        ];
        Forwarder::new(ifaces, routes, neighbors).unwrap()
    }

    pub(super) fn frame(
        dst: ethernet::Address,
        ethertype: EtherType,
        packet: &[u8],
        pad: usize,
    ) -> Vec<u8> {
        let mut f = vec![0u8; ethernet::HEADER_LEN + packet.len() + pad];
        ethernet::Repr {
            src_addr: H0,
            dst_addr: dst,
            ethertype,
        }
        .emit(&mut ethernet::Frame::new_unchecked(&mut f[..]));
        f[ethernet::HEADER_LEN..ethernet::HEADER_LEN + packet.len()].copy_from_slice(packet);
        f
    }

    /// A Neighbor Solicitation with a source link-layer option (RFC 4861 §4.3).
    fn solicit(src: Ipv6Addr, dst: Ipv6Addr, target: Ipv6Addr) -> Vec<u8> {
        let len = 4 + 4 + 16 + 8;
        let mut p = vec![0u8; ipv6::HEADER_LEN + len];
        ipv6::Repr {
            src_addr: src,
            dst_addr: dst,
            next_header: ipv4::PROTO_ICMPV6,
            payload_len: len,
            hop_limit: 255,
            traffic_class: 0,
            flow_label: 0,
        }
        .emit(&mut ipv6::Packet::new_unchecked(&mut p[..]));
        let m = &mut p[ipv6::HEADER_LEN..];
        m[0] = icmp::v6::TYPE_NEIGHBOR_SOLICIT;
        m[8..24].copy_from_slice(&target.octets());
        m[24] = 1; // source link-layer address
        m[25] = 1; // 8 bytes
        m[26..32].copy_from_slice(&H0.0);
        icmp::v6::Packet::new_unchecked(&mut p[ipv6::HEADER_LEN..]).fill_checksum(&src, &dst);
        p
    }

    pub(super) fn udp4(dst: Ipv4Addr, ttl: u8, payload_len: usize, dont_frag: bool) -> Vec<u8> {
        let mut p = vec![0xA5u8; ipv4::HEADER_LEN + payload_len];
        ipv4::Repr {
            src_addr: v4([198, 18, 1, 1]),
            dst_addr: dst,
            protocol: ipv4::PROTO_UDP,
            payload_len,
            ttl,
            dscp: 46,
            ecn: 1,
            ident: 7,
            dont_frag,
        }
        .emit(&mut ipv4::Packet::new_unchecked(&mut p[..]));
        p
    }

    pub(super) fn udp6(dst: Ipv6Addr, hop_limit: u8, payload_len: usize) -> Vec<u8> {
        let mut p = vec![0x5Au8; ipv6::HEADER_LEN + payload_len];
        ipv6::Repr {
            src_addr: v6("2001:2:0:1::1"),
            dst_addr: dst,
            next_header: ipv4::PROTO_UDP,
            payload_len,
            hop_limit,
            traffic_class: 0xB8,
            flow_label: 0x12345,
        }
        .emit(&mut ipv6::Packet::new_unchecked(&mut p[..]));
        p
    }

    #[test]
    fn ipv4_is_forwarded_with_ttl_minus_one_a_valid_checksum_and_new_macs() {
        let mut r = router(1500);
        let pkt = udp4(v4([198, 18, 4, 2]), 64, 100, false);
        // 6 bytes of Ethernet padding after the packet are not carried on.
        let out = r
            .handle_frame(0, &frame(R0, EtherType::Ipv4, &pkt, 6))
            .unwrap();
        assert_eq!(out.iface, 1);
        let f = ethernet::Frame::new_checked(&out.frame[..]).unwrap();
        assert_eq!((f.dst_addr(), f.src_addr()), (N1, R1));
        assert_eq!(out.frame.len(), ethernet::HEADER_LEN + pkt.len());
        let ip = ipv4::Packet::new_checked(f.payload()).unwrap();
        assert_eq!(ip.ttl(), 63);
        assert!(ip.verify_checksum(), "RFC 1624 update");
        assert_eq!((ip.dscp(), ip.ecn()), (46, 1), "marking untouched");
        assert_eq!(ip.payload(), &pkt[ipv4::HEADER_LEN..]);
        assert_eq!(r.stats()[0].forwarded_ipv4, 1);
    }

    #[test]
    fn ipv6_is_forwarded_with_hop_limit_minus_one_and_its_flow_label() {
        let mut r = router(1500);
        let pkt = udp6(v6("2001:2:0:4::2"), 2, 200);
        let out = r
            .handle_frame(0, &frame(R0, EtherType::Ipv6, &pkt, 0))
            .unwrap();
        assert_eq!(out.iface, 1);
        let f = ethernet::Frame::new_checked(&out.frame[..]).unwrap();
        assert_eq!(f.dst_addr(), N1);
        let ip = ipv6::Packet::new_checked(f.payload()).unwrap();
        assert_eq!(
            (ip.hop_limit(), ip.flow_label(), ip.traffic_class()),
            (1, 0x12345, 0xB8)
        );
        assert_eq!(r.stats()[0].forwarded_ipv6, 1);
    }

    #[test]
    fn forwarding_in_place_rewrites_the_frame_where_it_lies_and_nothing_else() {
        let mut r = router(1500);
        for (ethertype, pkt) in [
            (EtherType::Ipv4, udp4(v4([198, 18, 4, 2]), 64, 100, false)),
            (EtherType::Ipv6, udp6(v6("2001:2:0:4::2"), 64, 100)),
        ] {
            // 6 bytes of padding after the packet, as a short frame would carry.
            let mut f = frame(R0, ethertype, &pkt, 6);
            let copy = r.handle_frame(0, &f).unwrap();
            let len = ethernet::HEADER_LEN + pkt.len();
            assert_eq!(
                r.handle_frame_in_place(0, &mut f),
                Action::Forward { iface: 1, len }
            );
            assert_eq!((copy.iface, &copy.frame[..]), (1, &f[..len]));
            let e = ethernet::Frame::new_checked(&f[..len]).unwrap();
            assert_eq!((e.dst_addr(), e.src_addr()), (N1, R1));
            if ethertype == EtherType::Ipv4 {
                let ip = ipv4::Packet::new_checked(e.payload()).unwrap();
                assert_eq!(ip.ttl(), 63);
                assert!(ip.verify_checksum());
            } else {
                assert_eq!(
                    ipv6::Packet::new_checked(e.payload()).unwrap().hop_limit(),
                    63
                );
            }
            assert_eq!(&f[len..], &[0; 6], "the padding is left alone");
        }
        // What is not forwarded is left as it came.
        let mut f = frame(
            R0,
            EtherType::Ipv4,
            &udp4(v4([198, 18, 4, 2]), 1, 100, false),
            0,
        );
        let before = f.clone();
        assert!(matches!(
            r.handle_frame_in_place(0, &mut f),
            Action::Reply(_)
        ));
        assert_eq!(f, before);
        let mut f = frame(
            R0,
            EtherType::Ipv4,
            &udp4(v4([198, 19, 9, 9]), 64, 100, false),
            0,
        );
        assert_eq!(r.handle_frame_in_place(0, &mut f), Action::Drop);
        assert_eq!(r.stats()[0].forwarded_ipv4, 2);
        assert_eq!(r.stats()[0].forwarded_ipv6, 2);
    }

    #[test]
    fn a_ttl_or_hop_limit_of_one_gets_time_exceeded_from_the_ingress_address() {
        let mut r = router(1500);
        let pkt = udp4(v4([198, 18, 4, 2]), 1, 100, false);
        let out = r
            .handle_frame(0, &frame(R0, EtherType::Ipv4, &pkt, 0))
            .unwrap();
        assert_eq!(out.iface, 0, "back where it came from");
        let f = ethernet::Frame::new_checked(&out.frame[..]).unwrap();
        assert_eq!((f.dst_addr(), f.src_addr()), (H0, R0));
        let ip = ipv4::Packet::new_checked(f.payload()).unwrap();
        assert_eq!(ip.src_addr(), v4([198, 18, 1, 2]));
        assert_eq!(ip.dst_addr(), v4([198, 18, 1, 1]));
        let icmp = icmp::v4::Packet::new_checked(ip.payload()).unwrap();
        assert_eq!((icmp.msg_type(), icmp.code()), (11, 0));
        assert!(icmp.verify_checksum());
        assert_eq!(&icmp.data()[..ipv4::HEADER_LEN], &pkt[..ipv4::HEADER_LEN]);

        let pkt = udp6(v6("2001:2:0:4::2"), 1, 100);
        let out = r
            .handle_frame(0, &frame(R0, EtherType::Ipv6, &pkt, 0))
            .unwrap();
        let f = ethernet::Frame::new_checked(&out.frame[..]).unwrap();
        let ip = ipv6::Packet::new_checked(f.payload()).unwrap();
        assert_eq!(ip.src_addr(), v6("2001:2:0:1::2"));
        let icmp = icmp::v6::Packet::new_checked(ip.payload()).unwrap();
        assert_eq!(icmp.msg_type(), icmp::v6::TYPE_TIME_EXCEEDED);
        assert!(icmp.verify_checksum(&ip.src_addr(), &ip.dst_addr()));
        assert_eq!(r.stats()[0].ttl_exceeded, 2);
    }

    #[test]
    fn packets_beyond_the_egress_mtu_get_packet_too_big_or_frag_needed() {
        let mut r = router(1280);
        let pkt = udp6(v6("2001:2:0:4::2"), 64, 1400 - ipv6::HEADER_LEN);
        let out = r
            .handle_frame(0, &frame(R0, EtherType::Ipv6, &pkt, 0))
            .unwrap();
        let f = ethernet::Frame::new_checked(&out.frame[..]).unwrap();
        let ip = ipv6::Packet::new_checked(f.payload()).unwrap();
        let icmp = icmp::v6::Packet::new_checked(ip.payload()).unwrap();
        assert_eq!(
            (icmp.msg_type(), icmp.mtu()),
            (icmp::v6::TYPE_PACKET_TOO_BIG, 1280)
        );
        let pkt = udp4(v4([198, 18, 4, 2]), 64, 1400 - ipv4::HEADER_LEN, true);
        let out = r
            .handle_frame(0, &frame(R0, EtherType::Ipv4, &pkt, 0))
            .unwrap();
        let f = ethernet::Frame::new_checked(&out.frame[..]).unwrap();
        let ip = ipv4::Packet::new_checked(f.payload()).unwrap();
        let icmp = icmp::v4::Packet::new_checked(ip.payload()).unwrap();
        assert_eq!(
            (icmp.msg_type(), icmp.code(), icmp.next_hop_mtu()),
            (3, 4, 1280)
        );
        // Without DF the packet would need fragmenting, which this router does not do.
        let pkt = udp4(v4([198, 18, 4, 2]), 64, 1400 - ipv4::HEADER_LEN, false);
        assert!(r
            .handle_frame(0, &frame(R0, EtherType::Ipv4, &pkt, 0))
            .is_none());
        assert_eq!(r.stats()[0].too_big, 3);
        // 1280 bytes exactly still go.
        let pkt = udp6(v6("2001:2:0:4::2"), 64, 1280 - ipv6::HEADER_LEN);
        assert_eq!(
            r.handle_frame(0, &frame(R0, EtherType::Ipv6, &pkt, 0))
                .unwrap()
                .iface,
            1
        );
    }

    #[test]
    fn ipv6_packet_too_big_uses_mtu6_and_ipv4_keeps_mtu() {
        let mut r = router_mtus(1500, Some(1400));
        // 1401 bytes of IPv6: too big, and the ICMPv6 error names 1400 (RFC 4443 §3.2).
        let pkt = udp6(v6("2001:2:0:4::2"), 64, 1401 - ipv6::HEADER_LEN);
        let out = r
            .handle_frame(0, &frame(R0, EtherType::Ipv6, &pkt, 0))
            .unwrap();
        let f = ethernet::Frame::new_checked(&out.frame[..]).unwrap();
        let ip = ipv6::Packet::new_checked(f.payload()).unwrap();
        let icmp = icmp::v6::Packet::new_checked(ip.payload()).unwrap();
        assert_eq!(
            (out.iface, icmp.msg_type(), icmp.mtu()),
            (0, icmp::v6::TYPE_PACKET_TOO_BIG, 1400)
        );
        // 1400 bytes of IPv6 go, and so do 1500 bytes of IPv4 with DF.
        let pkt = udp6(v6("2001:2:0:4::2"), 64, 1400 - ipv6::HEADER_LEN);
        let out = r.handle_frame(0, &frame(R0, EtherType::Ipv6, &pkt, 0));
        assert_eq!(out.unwrap().iface, 1);
        let pkt = udp4(v4([198, 18, 4, 2]), 64, 1500 - ipv4::HEADER_LEN, true);
        let out = r.handle_frame(0, &frame(R0, EtherType::Ipv4, &pkt, 0));
        assert_eq!(out.unwrap().iface, 1);
        assert_eq!(r.stats()[0].too_big, 1);
        // An IPv6 MTU below IPv6's minimum is refused.
        let mut ifaces = vec![router(1500).ifaces[1].clone()];
        ifaces[0].mtu6 = Some(1279);
        assert!(Forwarder::new(ifaces, vec![], vec![]).is_err());
    }

    #[test]
    fn arp_and_neighbour_solicitations_for_the_router_are_answered_and_learned() {
        let mut r = router(1500);
        let mut req = vec![0u8; arp::BUFFER_LEN];
        arp::Repr {
            operation: arp::Operation::Request,
            source_hardware_addr: H0,
            source_protocol_addr: v4([198, 18, 1, 1]),
            target_hardware_addr: ethernet::Address([0; 6]),
            target_protocol_addr: v4([198, 18, 1, 2]),
        }
        .emit(&mut arp::Packet::new_unchecked(&mut req[..]));
        let out = r
            .handle_frame(
                0,
                &frame(ethernet::Address::BROADCAST, EtherType::Arp, &req, 18),
            )
            .unwrap();
        let f = ethernet::Frame::new_checked(&out.frame[..]).unwrap();
        assert_eq!(
            (f.dst_addr(), f.src_addr(), f.ethertype()),
            (H0, R0, EtherType::Arp)
        );
        let reply = arp::Repr::parse(&arp::Packet::new_checked(f.payload()).unwrap()).unwrap();
        assert_eq!(reply.operation, arp::Operation::Reply);
        assert_eq!(
            (reply.source_hardware_addr, reply.source_protocol_addr),
            (R0, v4([198, 18, 1, 2]))
        );
        // Learned: the sender is now reachable without a static entry (a route back to
        // 198.18.1.0/24 is the interface's own subnet).
        let mut back = udp4(v4([198, 18, 1, 1]), 64, 10, false);
        ipv4::Packet::new_unchecked(&mut back[..]).set_src_addr(v4([198, 18, 4, 2]));
        ipv4::Packet::new_unchecked(&mut back[..]).fill_checksum();
        let out = r
            .handle_frame(1, &frame(R1, EtherType::Ipv4, &back, 0))
            .unwrap();
        assert_eq!(out.iface, 0);
        assert_eq!(
            ethernet::Frame::new_checked(&out.frame[..])
                .unwrap()
                .dst_addr(),
            H0
        );
        // A request for someone else's address is not answered.
        let mut other = req.clone();
        arp::Packet::new_unchecked(&mut other[..]).set_target_protocol_addr(v4([198, 18, 1, 9]));
        assert!(r
            .handle_frame(
                0,
                &frame(ethernet::Address::BROADCAST, EtherType::Arp, &other, 0)
            )
            .is_none());

        // Neighbour solicitation for 2001:2:0:1::2, to its solicited-node group.
        let target = v6("2001:2:0:1::2");
        let group = ipv6::solicited_node(&target);
        let ns = solicit(v6("2001:2:0:1::1"), group, target);
        let out = r
            .handle_frame(
                0,
                &frame(
                    ethernet::Address::from_ipv6_multicast(&group),
                    EtherType::Ipv6,
                    &ns,
                    0,
                ),
            )
            .unwrap();
        let f = ethernet::Frame::new_checked(&out.frame[..]).unwrap();
        assert_eq!(f.dst_addr(), H0);
        let ip = ipv6::Packet::new_checked(f.payload()).unwrap();
        assert_eq!(
            (ip.src_addr(), ip.dst_addr(), ip.hop_limit()),
            (target, v6("2001:2:0:1::1"), 255)
        );
        let na = icmp::v6::Packet::new_checked(ip.payload()).unwrap();
        assert_eq!(na.msg_type(), icmp::v6::TYPE_NEIGHBOR_ADVERT);
        assert!(na.verify_checksum(&ip.src_addr(), &ip.dst_addr()));
        let s = &r.stats()[0];
        assert_eq!((s.arp_replies, s.neighbor_adverts), (1, 1));
    }

    #[test]
    fn echo_to_the_router_is_answered_and_strays_are_counted() {
        let mut r = router(1500);
        let mut echo = vec![0u8; ipv4::HEADER_LEN + 16];
        ipv4::Repr {
            src_addr: v4([198, 18, 1, 1]),
            dst_addr: v4([198, 18, 3, 1]),
            protocol: ipv4::PROTO_ICMP,
            payload_len: 16,
            ttl: 64,
            dscp: 0,
            ecn: 0,
            ident: 1,
            dont_frag: true,
        }
        .emit(&mut ipv4::Packet::new_unchecked(&mut echo[..]));
        {
            let mut i = icmp::v4::Packet::new_unchecked(&mut echo[ipv4::HEADER_LEN..]);
            i.set_msg_type(8);
            i.set_code(0);
            i.set_rest_of_header(0x0001_0002);
            i.fill_checksum();
        }
        let out = r
            .handle_frame(0, &frame(R0, EtherType::Ipv4, &echo, 0))
            .unwrap();
        let f = ethernet::Frame::new_checked(&out.frame[..]).unwrap();
        let ip = ipv4::Packet::new_checked(f.payload()).unwrap();
        assert_eq!(
            (ip.src_addr(), ip.dst_addr()),
            (v4([198, 18, 3, 1]), v4([198, 18, 1, 1]))
        );
        assert_eq!(
            icmp::v4::Packet::new_checked(ip.payload())
                .unwrap()
                .msg_type(),
            0
        );
        // No route, no neighbour, someone else's MAC, unknown ethertype, garbage.
        assert!(r
            .handle_frame(
                0,
                &frame(
                    R0,
                    EtherType::Ipv4,
                    &udp4(v4([198, 19, 0, 1]), 64, 8, false),
                    0
                )
            )
            .is_none());
        let mut r2 = Forwarder::new(
            r.interfaces().to_vec(),
            vec![Route {
                prefix: v4([198, 18, 4, 0]).into(),
                len: 24,
                via: Some(v4([198, 18, 3, 7]).into()),
                iface: 1,
            }],
            vec![],
        )
        .unwrap();
        assert!(r2
            .handle_frame(
                0,
                &frame(
                    R0,
                    EtherType::Ipv4,
                    &udp4(v4([198, 18, 4, 2]), 64, 8, false),
                    0
                )
            )
            .is_none());
        assert_eq!(r2.stats()[0].no_neighbor, 1);
        assert!(r
            .handle_frame(
                0,
                &frame(
                    N1,
                    EtherType::Ipv4,
                    &udp4(v4([198, 18, 4, 2]), 64, 8, false),
                    0
                )
            )
            .is_none());
        assert!(r
            .handle_frame(0, &frame(R0, EtherType::Unknown(0x88B5), &[0; 46], 0))
            .is_none());
        let mut bad = udp4(v4([198, 18, 4, 2]), 64, 8, false);
        bad[10] ^= 0xff; // header checksum
        assert!(r
            .handle_frame(0, &frame(R0, EtherType::Ipv4, &bad, 0))
            .is_none());
        let s = &r.stats()[0];
        assert_eq!(
            (s.echo_replies, s.no_route, s.ignored, s.malformed),
            (1, 1, 2, 1)
        );
    }

    #[test]
    fn arbitrary_bytes_never_panic_and_every_output_is_a_valid_frame() {
        let mut r = router(1500);
        let mut x = 0x1234_5678_9abc_def0u64;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let seeds = [
            frame(
                R0,
                EtherType::Ipv4,
                &udp4(v4([198, 18, 4, 2]), 64, 40, false),
                0,
            ),
            frame(R0, EtherType::Ipv6, &udp6(v6("2001:2:0:4::2"), 64, 40), 0),
        ];
        for i in 0..20_000 {
            let mut f = seeds[i % 2].clone();
            let flips = (next() % 4) as usize;
            for _ in 0..flips {
                let at = (next() as usize) % f.len();
                f[at] = next() as u8;
            }
            f.truncate((next() as usize) % (f.len() + 1));
            if let Some(out) = r.handle_frame(i % 2, &f) {
                assert!(ethernet::Frame::new_checked(&out.frame[..]).is_ok());
                assert!(out.iface < 2);
            }
        }
    }

    #[test]
    fn link_layer_broadcasts_martians_and_unsolicited_arp_are_not_acted_on() {
        let mut r = router(1500);
        // A unicast packet in a broadcast frame: neither forwarded nor answered with an
        // ICMP error, even with TTL 1.
        for ttl in [64, 1] {
            let pkt = udp4(v4([198, 18, 4, 2]), ttl, 20, false);
            assert!(r
                .handle_frame(
                    0,
                    &frame(ethernet::Address::BROADCAST, EtherType::Ipv4, &pkt, 0)
                )
                .is_none());
        }
        let pkt = udp6(v6("2001:2:0:4::2"), 1, 20);
        let group = ethernet::Address::from_ipv6_multicast(&v6("ff02::1"));
        assert!(r
            .handle_frame(0, &frame(group, EtherType::Ipv6, &pkt, 0))
            .is_none());
        assert_eq!(r.stats()[0].local, 3);
        // A martian source (127.0.0.1) is not forwarded.
        let mut m = udp4(v4([198, 18, 4, 2]), 64, 20, false);
        ipv4::Packet::new_unchecked(&mut m[..]).set_src_addr(v4([127, 0, 0, 1]));
        ipv4::Packet::new_unchecked(&mut m[..]).fill_checksum();
        assert!(r
            .handle_frame(0, &frame(R0, EtherType::Ipv4, &m, 0))
            .is_none());
        assert_eq!(r.stats()[0].martian, 1);
        // An ARP reply nobody asked for does not create an entry, nor replace a static one.
        let arp_frame = |op, ip: Ipv4Addr, mac: ethernet::Address, target: Ipv4Addr| {
            let mut b = vec![0u8; arp::BUFFER_LEN];
            arp::Repr {
                operation: op,
                source_hardware_addr: mac,
                source_protocol_addr: ip,
                target_hardware_addr: R1,
                target_protocol_addr: target,
            }
            .emit(&mut arp::Packet::new_unchecked(&mut b[..]));
            let mut f = frame(R1, EtherType::Arp, &b, 0);
            f[6..12].copy_from_slice(&mac.0);
            f
        };
        let evil = ethernet::Address([2, 0, 0, 0, 0, 0x66]);
        // (A gratuitous or third-party reply: its target is not us.)
        r.handle_frame(
            1,
            &arp_frame(
                arp::Operation::Reply,
                v4([198, 18, 3, 9]),
                evil,
                v4([198, 18, 3, 7]),
            ),
        );
        r.handle_frame(
            1,
            &arp_frame(
                arp::Operation::Request,
                v4([198, 18, 3, 2]),
                evil,
                v4([198, 18, 3, 1]),
            ),
        );
        let out = r
            .handle_frame(
                0,
                &frame(
                    R0,
                    EtherType::Ipv4,
                    &udp4(v4([198, 18, 4, 2]), 64, 20, false),
                    0,
                ),
            )
            .unwrap();
        assert_eq!(
            ethernet::Frame::new_checked(&out.frame[..])
                .unwrap()
                .dst_addr(),
            N1,
            "the static entry stands"
        );
        let mut to_9 = udp4(v4([198, 18, 3, 9]), 64, 20, false);
        ipv4::Packet::new_unchecked(&mut to_9[..]).fill_checksum();
        assert!(r
            .handle_frame(0, &frame(R0, EtherType::Ipv4, &to_9, 0))
            .is_none());
        assert_eq!(
            r.stats()[0].no_neighbor,
            1,
            "the unsolicited reply taught nothing"
        );
        // Requests for us from many addresses: at most MAX_LEARNED are kept.
        let mut big = Forwarder::new(
            vec![Interface {
                name: "wide".into(),
                mac: R0,
                ipv4: Some((v4([198, 18, 0, 1]), 15)),
                ipv6: None,
                mtu: 1500,
                mtu6: None,
            }],
            vec![],
            vec![],
        )
        .unwrap();
        for i in 0..(MAX_LEARNED as u32 + 100) {
            let ip = Ipv4Addr::from(u32::from(v4([198, 18, 0, 2])) + i);
            let mut b = vec![0u8; arp::BUFFER_LEN];
            arp::Repr {
                operation: arp::Operation::Request,
                source_hardware_addr: H0,
                source_protocol_addr: ip,
                target_hardware_addr: ethernet::Address([0; 6]),
                target_protocol_addr: v4([198, 18, 0, 1]),
            }
            .emit(&mut arp::Packet::new_unchecked(&mut b[..]));
            big.handle_frame(
                0,
                &frame(ethernet::Address::BROADCAST, EtherType::Arp, &b, 0),
            );
        }
        assert_eq!(big.neighbors.len(), MAX_LEARNED);
    }
}
