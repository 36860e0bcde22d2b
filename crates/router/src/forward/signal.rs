//! RSVP at the forwarder: which packets an RSVP router takes in, and the frames it sends
//! of its own.
//!
//! With [`Forwarder::set_rsvp`] on, [`Forwarder::handle_frame_in_place`] hands these to
//! the router's RSVP engine as [`Action::Signal`] instead of forwarding them:
//! - IPv4 protocol 46 with the Router Alert option (RFC 2113), whoever the destination:
//!   Path, PathTear and ResvConf travel to the session's addresses and every RSVP hop
//!   takes them in (RFC 2205 §3.1.3);
//! - IPv6 whose Hop-by-Hop header carries Router Alert value 1 (RSVP, RFC 2711) before
//!   protocol 46;
//! - protocol 46 to one of the router's own addresses: Resv, ResvErr, ResvTear and
//!   PathErr are sent hop by hop to the previous or next hop's address.
//!
//! Fragments are not taken in (a fragment is not a whole message); sources no router
//! forwards from (RFC 1812 §5.3.7, RFC 4291) are not either. With it off, the default,
//! protocol 46 is forwarded as any packet: the router is an RSVP-unaware hop
//! (RFC 2205 §2.9), which the "no reservation" control of a plan wants.
//!
//! The engine's answers go out through [`Forwarder::route_packet`] (by the routing table,
//! as a Path continues toward its destination) or [`Forwarder::frame_for_neighbor`] (out
//! of a given interface to an on-link hop, as a Resv goes to its PHOP).

use std::net::{IpAddr, Ipv4Addr};

use wire::alert;
use wire::ethernet::EtherType;
use wire::rsvp::PROTOCOL;
use wire::{ipv4, ipv6};

use super::{Decision, Forwarder, Output};

/// Why a packet the router originates cannot be framed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum OriginateError {
    /// Not a whole IPv4 or IPv6 packet.
    #[error("not a whole IPv4 or IPv6 packet")]
    Malformed,
    /// The interface does not exist.
    #[error("interface {0} does not exist")]
    NoInterface(usize),
    /// No route to the destination.
    #[error("no route to {0}")]
    NoRoute(IpAddr),
    /// No neighbour entry (static or learned) for the next hop.
    #[error("no neighbour entry for {ip} on interface {iface}")]
    NoNeighbor {
        /// The egress interface.
        iface: usize,
        /// The next hop.
        ip: IpAddr,
    },
    /// Larger than the egress interface's MTU for its family (this router does not
    /// fragment).
    #[error("{len} bytes exceed interface {iface}'s MTU of {mtu}")]
    TooBig {
        /// The egress interface.
        iface: usize,
        /// The packet's length.
        len: usize,
        /// The MTU.
        mtu: u32,
    },
}

/// RFC 1812 §5.3.7's martian sources (0/8, 127/8, 224/4 and 240/4) and link-local ones.
fn martian_v4(src: Ipv4Addr) -> bool {
    let o = src.octets();
    o[0] == 0 || o[0] == 127 || o[0] >= 224 || src.is_link_local()
}

impl Forwarder {
    /// Take RSVP messages in ([`Action::Signal`](super::Action::Signal)) or forward
    /// them as any packet (the default): see the module's documentation.
    pub fn set_rsvp(&mut self, on: bool) {
        self.rsvp = on;
    }

    /// Whether RSVP messages are taken in.
    pub fn rsvp(&self) -> bool {
        self.rsvp
    }

    /// Whether the checked IPv4 packet `p` is an RSVP message for this router.
    pub(super) fn rsvp_v4(&self, p: &ipv4::Packet<&[u8]>) -> bool {
        self.rsvp
            && p.protocol() == PROTOCOL
            && !p.more_frags()
            && p.frag_offset() == 0
            && !martian_v4(p.src_addr())
            && (alert::ipv4_has_router_alert(p.options()) || self.is_mine(p.dst_addr().into()))
    }

    /// Whether the IPv6 `packet` (checked, without padding, from a source a router
    /// forwards from) is an RSVP message for this router.
    pub(super) fn rsvp_v6(&self, packet: &[u8]) -> bool {
        if !self.rsvp {
            return false;
        }
        let Ok(p) = ipv6::Packet::new_checked(packet) else {
            return false;
        };
        let mine = self.is_mine(p.dst_addr().into());
        match p.next_header() {
            PROTOCOL => mine,
            ipv6::NEXT_HOP_BY_HOP => alert::ipv6_router_alert(packet).is_some_and(|a| {
                a.next_header == PROTOCOL && (a.value == alert::VALUE_RSVP || mine)
            }),
            _ => false,
        }
    }

    /// Hand `len` bytes of IP received on `iface` to the RSVP engine, counting them.
    pub(super) fn signal(&mut self, iface: usize, len: usize) -> Decision {
        self.stats[iface].rsvp += 1;
        Decision::Signal { len }
    }

    /// Frame an IP `packet` the router originates (an RSVP message, whole, with its IP
    /// header) for its next hop: the longest-prefix route's interface, its gateway or the
    /// destination itself on a connected subnet, that hop's MAC from the neighbour
    /// table. The packet is sent as it is: its TTL or hop limit is the caller's.
    pub fn route_packet(&self, packet: &[u8]) -> Result<Output, OriginateError> {
        let dst: IpAddr = match packet.first().map(|b| b >> 4) {
            Some(ipv4::VERSION) => ipv4::Packet::new_checked(packet)
                .map_err(|_| OriginateError::Malformed)?
                .dst_addr()
                .into(),
            Some(ipv6::VERSION) => ipv6::Packet::new_checked(packet)
                .map_err(|_| OriginateError::Malformed)?
                .dst_addr()
                .into(),
            _ => return Err(OriginateError::Malformed),
        };
        let route = self.lookup(dst).ok_or(OriginateError::NoRoute(dst))?;
        self.frame_for_neighbor(route.iface, route.via.unwrap_or(dst), packet)
    }

    /// Frame an IP `packet` the router originates for the neighbour `next_hop` out of
    /// interface `iface` (a Resv to its previous hop, which is on that link), with the
    /// neighbour's MAC from the static or learned entries. The packet must be whole
    /// (its length field matching what is given) and fit the interface's MTU.
    pub fn frame_for_neighbor(
        &self,
        iface: usize,
        next_hop: IpAddr,
        packet: &[u8],
    ) -> Result<Output, OriginateError> {
        let f = self
            .ifaces
            .get(iface)
            .ok_or(OriginateError::NoInterface(iface))?;
        let (ethertype, whole, mtu) = match packet.first().map(|b| b >> 4) {
            Some(ipv4::VERSION) => (
                EtherType::Ipv4,
                ipv4::Packet::new_checked(packet)
                    .is_ok_and(|p| usize::from(p.total_len()) == packet.len()),
                f.mtu,
            ),
            Some(ipv6::VERSION) => (
                EtherType::Ipv6,
                ipv6::Packet::new_checked(packet)
                    .is_ok_and(|p| ipv6::HEADER_LEN + usize::from(p.payload_len()) == packet.len()),
                f.ipv6_mtu(),
            ),
            _ => return Err(OriginateError::Malformed),
        };
        if !whole {
            return Err(OriginateError::Malformed);
        }
        if packet.len() > mtu as usize {
            return Err(OriginateError::TooBig {
                iface,
                len: packet.len(),
                mtu,
            });
        }
        let neighbor =
            self.neighbors
                .get(&(iface, next_hop))
                .ok_or(OriginateError::NoNeighbor {
                    iface,
                    ip: next_hop,
                })?;
        Ok(self.frame(iface, neighbor.mac, ethertype, packet))
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::{frame, router, udp4, udp6, v4, v6, H0, N1, R0, R1};
    use super::super::{Action, Route};
    use super::*;
    use wire::ethernet;

    const RSVP_BODY: [u8; 12] = [0x10, 1, 0, 0, 64, 0, 0, 12, 0, 4, 1, 1];

    /// A Path-like IPv4 packet from the sender, with the Router Alert option.
    fn path4(dst: Ipv4Addr) -> Vec<u8> {
        alert::ipv4_packet_with_alert(v4([198, 18, 1, 1]), dst, 64, PROTOCOL, &RSVP_BODY)
    }

    /// A Path-like IPv6 packet from the sender, with a Hop-by-Hop Router Alert of `value`.
    fn path6(dst: &str, value: u16, next_header: u8) -> Vec<u8> {
        let mut p = alert::ipv6_packet_with_alert(
            v6("2001:2:0:1::1"),
            v6(dst),
            64,
            next_header,
            &RSVP_BODY,
        );
        p[44..46].copy_from_slice(&value.to_be_bytes());
        p
    }

    /// A unicast protocol 46 packet without any Router Alert.
    fn plain4(dst: Ipv4Addr) -> Vec<u8> {
        let mut p = udp4(dst, 64, RSVP_BODY.len(), false);
        let mut q = ipv4::Packet::new_unchecked(&mut p[..]);
        q.set_protocol(PROTOCOL);
        q.fill_checksum();
        p
    }

    fn plain6(dst: &str) -> Vec<u8> {
        let mut p = udp6(v6(dst), 64, RSVP_BODY.len());
        ipv6::Packet::new_unchecked(&mut p[..]).set_next_header(PROTOCOL);
        p
    }

    /// Hand `pkt` in on interface 0; what happened and whether the frame was left alone.
    fn handle(r: &mut Forwarder, ethertype: EtherType, pkt: &[u8], pad: usize) -> (Action, bool) {
        let mut f = frame(R0, ethertype, pkt, pad);
        let before = f.clone();
        let a = r.handle_frame_in_place(0, &mut f);
        (a, f == before)
    }

    fn signal(len: usize) -> Action {
        Action::Signal {
            iface: 0,
            start: ethernet::HEADER_LEN,
            len,
        }
    }

    #[test]
    fn ipv4_router_alert_is_taken_in_whoever_the_destination() {
        let mut r = router(1500);
        r.set_rsvp(true);
        // To the receiver beyond the router, with Ethernet padding after it.
        let pkt = path4(v4([198, 18, 4, 2]));
        assert_eq!(
            handle(&mut r, EtherType::Ipv4, &pkt, 6),
            (signal(pkt.len()), true)
        );
        // The RA option after NOPs: 28-byte header.
        let mut nops = vec![0u8; 28 + RSVP_BODY.len()];
        nops[..20].copy_from_slice(&pkt[..20]);
        nops[20..28].copy_from_slice(&[1, 1, 1, 1, 148, 4, 0, 0]);
        nops[28..].copy_from_slice(&RSVP_BODY);
        let mut q = ipv4::Packet::new_unchecked(&mut nops[..]);
        q.set_header_len(28);
        q.set_total_len(40);
        q.fill_checksum();
        assert_eq!(
            handle(&mut r, EtherType::Ipv4, &nops, 0),
            (signal(40), true)
        );
        // With TTL 1 it is still the router's to handle (not a time exceeded).
        let mut ttl1 = path4(v4([198, 18, 4, 2]));
        ipv4::Packet::new_unchecked(&mut ttl1[..]).set_ttl(1);
        ipv4::Packet::new_unchecked(&mut ttl1[..]).fill_checksum();
        assert_eq!(
            handle(&mut r, EtherType::Ipv4, &ttl1, 0).0,
            signal(ttl1.len())
        );
        let s = &r.stats()[0];
        assert_eq!((s.rsvp, s.forwarded_ipv4, s.ttl_exceeded), (3, 0, 0));
    }

    #[test]
    fn ipv4_without_alert_or_not_rsvp_or_fragments_are_forwarded() {
        let mut r = router(1500);
        r.set_rsvp(true);
        // Protocol 46 without Router Alert to someone else: a Resv between two other hops.
        let fwd = |len| Action::Forward {
            iface: 1,
            len: ethernet::HEADER_LEN + len,
        };
        let pkt = plain4(v4([198, 18, 4, 2]));
        assert_eq!(handle(&mut r, EtherType::Ipv4, &pkt, 0).0, fwd(pkt.len()));
        // Router Alert on UDP.
        let mut udp = path4(v4([198, 18, 4, 2]));
        ipv4::Packet::new_unchecked(&mut udp[..]).set_protocol(ipv4::PROTO_UDP);
        ipv4::Packet::new_unchecked(&mut udp[..]).fill_checksum();
        assert_eq!(handle(&mut r, EtherType::Ipv4, &udp, 0).0, fwd(udp.len()));
        // A first fragment of an RSVP message.
        let mut frag = path4(v4([198, 18, 4, 2]));
        ipv4::Packet::new_unchecked(&mut frag[..]).set_more_frags(true);
        ipv4::Packet::new_unchecked(&mut frag[..]).fill_checksum();
        assert_eq!(handle(&mut r, EtherType::Ipv4, &frag, 0).0, fwd(frag.len()));
        let s = &r.stats()[0];
        assert_eq!((s.rsvp, s.forwarded_ipv4), (0, 3));
    }

    #[test]
    fn ipv6_hop_by_hop_router_alert_for_rsvp_is_taken_in() {
        let mut r = router(1500);
        r.set_rsvp(true);
        let pkt = path6("2001:2:0:4::2", 1, PROTOCOL);
        assert_eq!(
            handle(&mut r, EtherType::Ipv6, &pkt, 4),
            (signal(pkt.len()), true)
        );
        // MLD's value 0, or RA 1 before UDP: forwarded.
        for pkt in [
            path6("2001:2:0:4::2", 0, PROTOCOL),
            path6("2001:2:0:4::2", 1, ipv4::PROTO_UDP),
        ] {
            assert_eq!(
                handle(&mut r, EtherType::Ipv6, &pkt, 0).0,
                Action::Forward {
                    iface: 1,
                    len: ethernet::HEADER_LEN + pkt.len()
                }
            );
        }
        let s = &r.stats()[0];
        assert_eq!((s.rsvp, s.forwarded_ipv6), (1, 2));
    }

    #[test]
    fn rsvp_to_the_routers_own_address_is_taken_in() {
        let mut r = router(1500);
        r.set_rsvp(true);
        // A Resv to this hop: to the address of the interface it came in on, or another.
        for dst in [v4([198, 18, 1, 2]), v4([198, 18, 3, 1])] {
            let pkt = plain4(dst);
            assert_eq!(
                handle(&mut r, EtherType::Ipv4, &pkt, 0),
                (signal(pkt.len()), true)
            );
        }
        let pkt = plain6("2001:2:0:1::2");
        assert_eq!(
            handle(&mut r, EtherType::Ipv6, &pkt, 0),
            (signal(pkt.len()), true)
        );
        // From a martian source: not taken in (and dropped as such, as before).
        let mut m = plain4(v4([198, 18, 1, 2]));
        ipv4::Packet::new_unchecked(&mut m[..]).set_src_addr(v4([127, 0, 0, 1]));
        ipv4::Packet::new_unchecked(&mut m[..]).fill_checksum();
        assert_eq!(handle(&mut r, EtherType::Ipv4, &m, 0).0, Action::Drop);
        assert_eq!(r.stats()[0].rsvp, 3);
        assert_eq!(r.stats()[0].local, 1);
    }

    #[test]
    fn with_rsvp_off_rsvp_is_forwarded_unchanged_as_any_packet() {
        let mut r = router(1500);
        assert!(!r.rsvp());
        let p4 = path4(v4([198, 18, 4, 2]));
        let p6 = path6("2001:2:0:4::2", 1, PROTOCOL);
        for (ethertype, pkt) in [(EtherType::Ipv4, &p4), (EtherType::Ipv6, &p6)] {
            let out = r.handle_frame(0, &frame(R0, ethertype, pkt, 0)).unwrap();
            assert_eq!(out.iface, 1);
            let f = ethernet::Frame::new_checked(&out.frame[..]).unwrap();
            assert_eq!((f.dst_addr(), f.src_addr()), (N1, R1));
            let ip = f.payload();
            assert_eq!(ip.len(), pkt.len());
            if ethertype == EtherType::Ipv4 {
                let q = ipv4::Packet::new_checked(ip).unwrap();
                assert_eq!(q.ttl(), 63);
                assert!(q.verify_checksum());
                assert_eq!(q.options(), &alert::IPV4_ALERT);
                // Everything but TTL and checksum (bytes 8, 10, 11) as it came.
                let same = |b: &[u8]| [&b[..8], &b[9..10], &b[12..]].concat();
                assert_eq!(same(ip), same(pkt));
            } else {
                assert_eq!(ip[7], 63);
                assert_eq!((&ip[..7], &ip[8..]), (&pkt[..7], &pkt[8..]));
            }
        }
        // Addressed to the router, it is local traffic the router does not answer.
        assert_eq!(
            handle(&mut r, EtherType::Ipv4, &plain4(v4([198, 18, 1, 2])), 0).0,
            Action::Drop
        );
        let s = &r.stats()[0];
        assert_eq!(
            (s.rsvp, s.forwarded_ipv4, s.forwarded_ipv6, s.local),
            (0, 1, 1, 1)
        );
    }

    #[test]
    fn what_the_router_originates_is_framed_for_its_next_hop() {
        let mut r = Forwarder::new(
            router(1500).interfaces().to_vec(),
            vec![Route {
                prefix: v6("2001:2:0:4::").into(),
                len: 64,
                via: Some(v6("2001:2:0:3::2").into()),
                iface: 1,
            }],
            vec![
                (1, v6("2001:2:0:3::2").into(), N1),
                (0, v4([198, 18, 1, 1]).into(), H0),
            ],
        )
        .unwrap();
        r.set_rsvp(true);
        // By the route: IPv6 toward 2001:2:0:4::2 via the gateway's MAC.
        let p6 = path6("2001:2:0:4::2", 1, PROTOCOL);
        let out = r.route_packet(&p6).unwrap();
        assert_eq!(out.iface, 1);
        let f = ethernet::Frame::new_checked(&out.frame[..]).unwrap();
        assert_eq!(
            (f.dst_addr(), f.src_addr(), f.ethertype()),
            (N1, R1, EtherType::Ipv6)
        );
        assert_eq!(f.payload(), &p6[..]);
        // On a connected subnet, straight to the destination; unchanged, TTL included.
        let back = alert::ipv4_packet_with_alert(
            v4([198, 18, 1, 2]),
            v4([198, 18, 1, 1]),
            1,
            PROTOCOL,
            &RSVP_BODY,
        );
        let out = r.route_packet(&back).unwrap();
        let f = ethernet::Frame::new_checked(&out.frame[..]).unwrap();
        assert_eq!((out.iface, f.dst_addr(), f.src_addr()), (0, H0, R0));
        assert_eq!(f.payload(), &back[..]);
        // To a given neighbour out of a given interface.
        let resv = plain4(v4([198, 18, 1, 1]));
        let out = r
            .frame_for_neighbor(0, v4([198, 18, 1, 1]).into(), &resv)
            .unwrap();
        assert_eq!(out, r.route_packet(&resv).unwrap());
        // What cannot go.
        assert_eq!(
            r.route_packet(&path4(v4([198, 18, 4, 2]))),
            Err(OriginateError::NoRoute(v4([198, 18, 4, 2]).into()))
        );
        assert_eq!(
            r.route_packet(&plain4(v4([198, 18, 3, 9]))),
            Err(OriginateError::NoNeighbor {
                iface: 1,
                ip: v4([198, 18, 3, 9]).into()
            })
        );
        assert_eq!(
            r.frame_for_neighbor(1, v4([198, 18, 1, 1]).into(), &resv),
            Err(OriginateError::NoNeighbor {
                iface: 1,
                ip: v4([198, 18, 1, 1]).into()
            })
        );
        assert_eq!(
            r.frame_for_neighbor(2, v4([198, 18, 1, 1]).into(), &resv),
            Err(OriginateError::NoInterface(2))
        );
        let big = udp6(v6("2001:2:0:4::2"), 64, 1501 - ipv6::HEADER_LEN);
        assert_eq!(
            r.route_packet(&big),
            Err(OriginateError::TooBig {
                iface: 1,
                len: 1501,
                mtu: 1500
            })
        );
        for bad in [&[][..], &[0x45; 10], &[0x20; 60], &resv[..resv.len() - 1]] {
            assert_eq!(r.route_packet(bad), Err(OriginateError::Malformed));
        }
        let mut padded = resv.clone();
        padded.push(0);
        assert_eq!(
            r.frame_for_neighbor(0, v4([198, 18, 1, 1]).into(), &padded),
            Err(OriginateError::Malformed)
        );
        // Sending counts nothing as received.
        assert_eq!(r.stats()[0], Default::default());
    }
}
