//! DSCP marking of IPv4 and IPv6 packets in place (RFC 2474 §3), and the walk over
//! IPv6 extension headers to the transport header (RFC 8200 §4) that port-matching
//! classifiers need.
//!
//! Marking keeps the ECN bits (RFC 3168 §5). On IPv4 the header checksum is updated
//! incrementally (RFC 1624 eqn. 3) over the 16-bit word that holds version, IHL and the
//! DS field; IPv6 has no header checksum, and the flow label is left alone.

use wire::checksum::update_u16;
use wire::{ipv4, ipv6};

/// Set the DSCP of the IPv4 packet in `packet` (header first), keeping ECN; returns
/// `false` when it is not a valid IPv4 header.
pub fn set_dscp_v4(packet: &mut [u8], dscp: u8) -> bool {
    let Ok(mut p) = ipv4::Packet::new_checked(&mut packet[..]) else {
        return false;
    };
    let old_word = u16::from_be_bytes([p.packet()[0], p.ds_field()]);
    let ds = (dscp << 2) | p.ecn();
    let new_word = u16::from_be_bytes([p.packet()[0], ds]);
    let sum = update_u16(p.checksum(), old_word, new_word);
    p.set_ds_field(ds);
    p.set_checksum(sum);
    true
}

/// Set the DSCP of the IPv6 packet in `packet`, keeping ECN and the flow label; returns
/// `false` when it is not a valid IPv6 header.
pub fn set_dscp_v6(packet: &mut [u8], dscp: u8) -> bool {
    let Ok(mut p) = ipv6::Packet::new_checked(&mut packet[..]) else {
        return false;
    };
    let tc = (dscp << 2) | p.ecn();
    p.set_traffic_class(tc);
    true
}

/// Where an IPv6 packet's transport header is, or why there is none.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum L4 {
    /// The transport protocol and its offset from the start of the IPv6 header.
    At {
        /// Next-header value of the transport (6 TCP, 17 UDP, 58 ICMPv6, …).
        protocol: u8,
        /// Byte offset of its header.
        offset: usize,
    },
    /// A non-first fragment: ports are not in this packet.
    LaterFragment,
    /// ESP: the rest is encrypted.
    Encrypted,
    /// Next header 59: nothing follows.
    NoNextHeader,
    /// The chain runs past the packet.
    Truncated,
}

/// Walk the extension headers of the IPv6 packet in `packet` (RFC 8200 §4.1 order, any
/// order accepted) to its transport header. Hop-by-Hop (0), Routing (43), Destination
/// Options (60), Mobility (135), HIP (139) and Shim6 (140) are (HdrExtLen + 1) · 8
/// bytes; Fragment (44) is 8; AH (51, RFC 4302 §2.2) is (PayloadLen + 2) · 4.
pub fn ipv6_l4(packet: &[u8]) -> L4 {
    let Ok(p) = ipv6::Packet::new_checked(packet) else {
        return L4::Truncated;
    };
    let end = ipv6::HEADER_LEN + usize::from(p.payload_len());
    let mut next = p.next_header();
    let mut off = ipv6::HEADER_LEN;
    // Each header is at least 8 bytes, so the walk ends within end / 8 steps.
    loop {
        match next {
            0 | 43 | 60 | 135 | 139 | 140 => {
                let Some(h) = packet.get(off..off + 2).filter(|_| off + 8 <= end) else {
                    return L4::Truncated;
                };
                next = h[0];
                off += (usize::from(h[1]) + 1) * 8;
            }
            44 => {
                let Some(h) = packet.get(off..off + 8).filter(|_| off + 8 <= end) else {
                    return L4::Truncated;
                };
                if u16::from_be_bytes([h[2], h[3]]) >> 3 != 0 {
                    return L4::LaterFragment;
                }
                next = h[0];
                off += 8;
            }
            51 => {
                let Some(h) = packet.get(off..off + 2).filter(|_| off + 8 <= end) else {
                    return L4::Truncated;
                };
                next = h[0];
                off += (usize::from(h[1]) + 2) * 4;
            }
            50 => return L4::Encrypted,
            59 => return L4::NoNextHeader,
            protocol => {
                if off > end {
                    return L4::Truncated;
                }
                return L4::At {
                    protocol,
                    offset: off,
                };
            }
        }
        if off > end {
            return L4::Truncated;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::{Ipv4Addr, Ipv6Addr};

    fn v4(tos: u8) -> Vec<u8> {
        let mut p = vec![0u8; 40];
        ipv4::Repr {
            src_addr: Ipv4Addr::new(198, 18, 1, 1),
            dst_addr: Ipv4Addr::new(198, 18, 4, 2),
            protocol: ipv4::PROTO_UDP,
            payload_len: 20,
            ttl: 64,
            dscp: tos >> 2,
            ecn: tos & 3,
            ident: 1,
            dont_frag: true,
        }
        .emit(&mut ipv4::Packet::new_unchecked(&mut p[..]));
        p
    }

    /// qos.md §6.1.
    #[test]
    fn ef_marking_keeps_ecn_and_a_valid_checksum() {
        for (tos, dscp, want) in [(0x00, 46, 0xB8), (0x01, 46, 0xB9), (0xB8, 0, 0x00)] {
            let mut p = v4(tos);
            assert!(set_dscp_v4(&mut p, dscp));
            let q = ipv4::Packet::new_checked(&p[..]).unwrap();
            assert_eq!(q.ds_field(), want);
            assert!(q.verify_checksum());
            // The incremental update equals a full recomputation.
            let mut full = p.clone();
            ipv4::Packet::new_unchecked(&mut full[..]).fill_checksum();
            assert_eq!(full, p);
        }
        // IPv6: word 0x60012345 becomes 0x6B812345 (the flow label untouched).
        let mut p = vec![0u8; 40];
        ipv6::Repr {
            src_addr: Ipv6Addr::new(0x2001, 2, 0, 1, 0, 0, 0, 1),
            dst_addr: Ipv6Addr::new(0x2001, 2, 0, 4, 0, 0, 0, 2),
            next_header: 59,
            payload_len: 0,
            hop_limit: 64,
            traffic_class: 0,
            flow_label: 0x12345,
        }
        .emit(&mut ipv6::Packet::new_unchecked(&mut p[..]));
        assert_eq!(&p[..4], &[0x60, 0x01, 0x23, 0x45]);
        assert!(set_dscp_v6(&mut p, 46));
        assert_eq!(&p[..4], &[0x6B, 0x81, 0x23, 0x45]);
        let q = ipv6::Packet::new_checked(&p[..]).unwrap();
        assert_eq!((q.dscp(), q.ecn()), (46, 0));
        assert!(!set_dscp_v4(&mut [0u8; 10], 46));
    }

    /// An IPv6 packet whose chain is `headers` (next-header value, bytes) then `last`.
    fn chain(headers: &[(u8, Vec<u8>)], last: u8, tail: usize) -> Vec<u8> {
        let body: usize = headers.iter().map(|(_, b)| b.len()).sum::<usize>() + tail;
        let mut p = vec![0u8; 40 + body];
        let first = headers.first().map_or(last, |h| h.0);
        ipv6::Repr {
            src_addr: Ipv6Addr::new(0x2001, 2, 0, 1, 0, 0, 0, 1),
            dst_addr: Ipv6Addr::new(0x2001, 2, 0, 4, 0, 0, 0, 2),
            next_header: first,
            payload_len: body,
            hop_limit: 64,
            traffic_class: 0,
            flow_label: 0,
        }
        .emit(&mut ipv6::Packet::new_unchecked(&mut p[..]));
        let mut off = 40;
        for (i, (_, b)) in headers.iter().enumerate() {
            p[off..off + b.len()].copy_from_slice(b);
            p[off] = headers.get(i + 1).map_or(last, |h| h.0);
            off += b.len();
        }
        p
    }

    /// qos.md §6.1's L4 offsets.
    #[test]
    fn the_extension_header_walk_finds_the_transport_or_says_why_not() {
        assert_eq!(
            ipv6_l4(&chain(&[], 17, 8)),
            L4::At {
                protocol: 17,
                offset: 40
            }
        );
        let opts = |ext_len: u8| {
            let mut b = vec![0u8; (usize::from(ext_len) + 1) * 8];
            b[1] = ext_len;
            b
        };
        let p = chain(&[(0, opts(0)), (60, opts(1)), (43, opts(2))], 17, 8);
        assert_eq!(
            ipv6_l4(&p),
            L4::At {
                protocol: 17,
                offset: 88
            }
        );
        let frag = |offset: u16, more: bool| {
            let mut b = vec![0u8; 8];
            b[2..4].copy_from_slice(&((offset << 3) | u16::from(more)).to_be_bytes());
            b
        };
        assert_eq!(
            ipv6_l4(&chain(&[(44, frag(0, true))], 17, 8)),
            L4::At {
                protocol: 17,
                offset: 48
            }
        );
        assert_eq!(
            ipv6_l4(&chain(&[(44, frag(185, false))], 17, 8)),
            L4::LaterFragment
        );
        let mut ah = vec![0u8; 24];
        ah[1] = 4; // (4 + 2) · 4 = 24 bytes
        assert_eq!(
            ipv6_l4(&chain(&[(51, ah)], 6, 20)),
            L4::At {
                protocol: 6,
                offset: 64
            }
        );
        assert_eq!(ipv6_l4(&chain(&[(50, vec![0; 8])], 17, 8)), L4::Encrypted);
        assert_eq!(ipv6_l4(&chain(&[], 59, 0)), L4::NoNextHeader);
        // A Routing header claiming 24 bytes in a packet that has 8 of them.
        let mut p = chain(&[(43, opts(0))], 17, 0);
        p[41] = 2;
        assert_eq!(ipv6_l4(&p), L4::Truncated);
        assert_eq!(ipv6_l4(&[0u8; 12]), L4::Truncated);
    }
}
