//! The two Neighbor Discovery messages (RFC 4861) a router must speak to be reachable
//! over IPv6 on Ethernet: Neighbor Solicitation in, Neighbor Advertisement out.
//!
//! ```text
//! Neighbor Solicitation (§4.3)            Neighbor Advertisement (§4.4)
//! | 135  |  0   |    checksum    |        | 136  |  0   |    checksum    |
//! |           reserved           |        |R|S|O|        reserved        |
//! |                              |        |                              |
//! +       target address         +        +       target address         +
//! |         (16 octets)          |        |         (16 octets)          |
//! |                              |        |                              |
//! | options ...                  |        | options ...                  |
//!
//! Source/Target Link-layer Address option for Ethernet (§4.6.1, RFC 2464 §8):
//! | type (1 or 2) | length (1)   |   link-layer address (6 octets) ...  |
//! ```
//!
//! [`parse_ns`] validates a whole IPv6 packet as §7.1.1 requires: IPv6 hop limit 255 (so
//! it cannot have been forwarded), a correct ICMPv6 checksum, code 0, at least 24 octets
//! of ICMPv6, a target that is not multicast, no zero-length option, and, from the
//! unspecified address (Duplicate Address Detection), a solicited-node multicast
//! destination and no Source Link-layer Address option. The IPv6 next header must be
//! ICMPv6 itself (extension headers are not walked). Unrecognised options are skipped
//! (§4.6).
//!
//! [`neighbor_advert`] builds the reply as a complete IPv6 packet: hop limit 255, traffic
//! class 0 (Linux's default `ndisc_tclass`), Router and Override flags set, and a Target
//! Link-layer Address option. The caller chooses the destination (§7.2.4): the
//! solicitation's source with `solicited = true`, or, when that source is the unspecified
//! address (DAD), the all-nodes address ff02::1 with `solicited = false`.

use std::net::Ipv6Addr;

use crate::ethernet::Address;
use crate::icmp::v6::{Packet, TYPE_NEIGHBOR_ADVERT, TYPE_NEIGHBOR_SOLICIT};
use crate::ipv6::{self, NEXT_ICMPV6};
use crate::{Error, Result};

/// The hop limit every Neighbor Discovery message carries and requires (§7.1.1).
pub const HOP_LIMIT: u8 = 255;
/// Option type of the Source Link-layer Address.
pub const OPT_SOURCE_LL_ADDR: u8 = 1;
/// Option type of the Target Link-layer Address.
pub const OPT_TARGET_LL_ADDR: u8 = 2;
/// Neighbor Advertisement flag: the sender is a router.
pub const FLAG_ROUTER: u32 = 0x8000_0000;
/// Neighbor Advertisement flag: sent in response to a Neighbor Solicitation.
pub const FLAG_SOLICITED: u32 = 0x4000_0000;
/// Neighbor Advertisement flag: override an existing cache entry.
pub const FLAG_OVERRIDE: u32 = 0x2000_0000;
/// Length of a Neighbor Solicitation or Advertisement without options.
pub const MESSAGE_LEN: usize = 24;
/// Length of the Neighbor Advertisement [`neighbor_advert`] builds, IPv6 header
/// included: 40 + 24 + an 8-octet option.
pub const ADVERT_PACKET_LEN: usize = ipv6::HEADER_LEN + MESSAGE_LEN + 8;

const TARGET: core::ops::Range<usize> = 8..24;

/// A validated Neighbor Solicitation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NeighborSolicit {
    /// The address whose link-layer address is asked for.
    pub target: Ipv6Addr,
    /// The solicitor's MAC, from the Source Link-layer Address option (absent in DAD).
    pub source_ll: Option<Address>,
}

/// Parse and validate a Neighbor Solicitation from a whole IPv6 packet (header first, no
/// Ethernet header), per RFC 4861 §7.1.1 (see the module doc). Errors are
/// [`Error::Malformed`] for a packet that is not a valid solicitation, and the IPv6
/// header's errors for one that is not a valid IPv6 packet.
pub fn parse_ns(ipv6_packet: &[u8]) -> Result<NeighborSolicit> {
    let ip = ipv6::Packet::new_checked(ipv6_packet)?;
    if ip.next_header() != NEXT_ICMPV6 {
        return Err(Error::Malformed("NS: IPv6 next header is not ICMPv6"));
    }
    if ip.hop_limit() != HOP_LIMIT {
        return Err(Error::Malformed("NS: hop limit is not 255"));
    }
    let (src, dst) = (ip.src_addr(), ip.dst_addr());
    let icmp = Packet::new_checked(ip.payload())?;
    if icmp.msg_type() != TYPE_NEIGHBOR_SOLICIT {
        return Err(Error::Malformed("NS: not a Neighbor Solicitation"));
    }
    if !icmp.verify_checksum(&src, &dst) {
        return Err(Error::Malformed("NS: ICMPv6 checksum"));
    }
    if icmp.code() != 0 {
        return Err(Error::Malformed("NS: code is not 0"));
    }
    let message = icmp.into_inner();
    if message.len() < MESSAGE_LEN {
        return Err(Error::Truncated {
            need: MESSAGE_LEN,
            have: message.len(),
        });
    }
    let mut target = [0u8; 16];
    target.copy_from_slice(&message[TARGET]);
    let target = Ipv6Addr::from(target);
    if target.is_multicast() {
        return Err(Error::Malformed("NS: multicast target"));
    }
    let mut source_ll = None;
    let mut options = &message[MESSAGE_LEN..];
    while !options.is_empty() {
        let [kind, len, ..] = *options else {
            return Err(Error::Malformed("NS: truncated option"));
        };
        let len = usize::from(len) * 8;
        if len == 0 {
            return Err(Error::Malformed("NS: zero-length option"));
        }
        let Some(option) = options.get(..len) else {
            return Err(Error::Malformed("NS: option longer than the message"));
        };
        if kind == OPT_SOURCE_LL_ADDR && source_ll.is_none() {
            if len != 8 {
                return Err(Error::Malformed(
                    "NS: source link-layer option is not Ethernet",
                ));
            }
            source_ll = Some(Address::from_bytes(&option[2..8]));
        }
        options = &options[len..];
    }
    if src.is_unspecified() {
        if dst != ipv6::solicited_node(&target) {
            return Err(Error::Malformed(
                "NS: DAD not sent to the solicited-node address",
            ));
        }
        if source_ll.is_some() {
            return Err(Error::Malformed("NS: DAD with a source link-layer option"));
        }
    }
    Ok(NeighborSolicit { target, source_ll })
}

/// A Neighbor Advertisement from `src` (MAC `src_mac`) to `dst` for `target`, as a
/// complete IPv6 packet of [`ADVERT_PACKET_LEN`] = 72 bytes: hop limit 255, flags Router,
/// Override and, when `solicited`, Solicited, and a Target Link-layer Address option
/// carrying `src_mac`. For an answer to DAD (the solicitation's source was `::`) pass
/// `dst` = ff02::1 and `solicited = false` (RFC 4861 §7.2.4).
pub fn neighbor_advert(
    src: Ipv6Addr,
    src_mac: Address,
    dst: Ipv6Addr,
    target: Ipv6Addr,
    solicited: bool,
) -> Vec<u8> {
    let mut out = vec![0u8; ADVERT_PACKET_LEN];
    ipv6::Repr {
        src_addr: src,
        dst_addr: dst,
        next_header: NEXT_ICMPV6,
        payload_len: ADVERT_PACKET_LEN - ipv6::HEADER_LEN,
        hop_limit: HOP_LIMIT,
        traffic_class: 0,
        flow_label: 0,
    }
    .emit(&mut ipv6::Packet::new_unchecked(&mut out[..]));
    let message = &mut out[ipv6::HEADER_LEN..];
    message[TARGET].copy_from_slice(&target.octets());
    message[MESSAGE_LEN] = OPT_TARGET_LL_ADDR;
    message[MESSAGE_LEN + 1] = 1;
    message[MESSAGE_LEN + 2..].copy_from_slice(&src_mac.0);
    let mut icmp = Packet::new_unchecked(message);
    icmp.set_msg_type(TYPE_NEIGHBOR_ADVERT);
    icmp.set_code(0);
    let mut flags = FLAG_ROUTER | FLAG_OVERRIDE;
    if solicited {
        flags |= FLAG_SOLICITED;
    }
    icmp.set_rest_of_header(flags);
    icmp.fill_checksum(&src, &dst);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const HOST_MAC: Address = Address([0x02, 0x00, 0x00, 0x00, 0x00, 0x0a]);
    const ROUTER_MAC: Address = Address([0x02, 0x00, 0x00, 0x00, 0x00, 0x01]);

    fn addr(s: &str) -> Ipv6Addr {
        s.parse().unwrap()
    }

    /// A Neighbor Solicitation for `target` from `src` to `dst`, with `options`.
    fn ns(
        src: Ipv6Addr,
        dst: Ipv6Addr,
        hop_limit: u8,
        target: Ipv6Addr,
        options: &[u8],
    ) -> Vec<u8> {
        let len = MESSAGE_LEN + options.len();
        let mut buf = vec![0u8; 40 + len];
        ipv6::Repr {
            src_addr: src,
            dst_addr: dst,
            next_header: NEXT_ICMPV6,
            payload_len: len,
            hop_limit,
            traffic_class: 0,
            flow_label: 0,
        }
        .emit(&mut ipv6::Packet::new_unchecked(&mut buf[..]));
        buf[40] = TYPE_NEIGHBOR_SOLICIT;
        buf[48..64].copy_from_slice(&target.octets());
        buf[64..].copy_from_slice(options);
        Packet::new_unchecked(&mut buf[40..]).fill_checksum(&src, &dst);
        buf
    }

    fn slla(mac: Address) -> Vec<u8> {
        let mut o = vec![OPT_SOURCE_LL_ADDR, 1];
        o.extend_from_slice(&mac.0);
        o
    }

    #[test]
    fn parses_a_solicitation() {
        let router = addr("2001:2::1");
        let host = addr("2001:2::a");
        let pkt = ns(
            host,
            ipv6::solicited_node(&router),
            255,
            router,
            &slla(HOST_MAC),
        );
        assert_eq!(
            parse_ns(&pkt).unwrap(),
            NeighborSolicit {
                target: router,
                source_ll: Some(HOST_MAC)
            }
        );
        // Unknown options are skipped; a unicast solicitation (NUD) works too.
        let mut opts = vec![14, 1, 0, 0, 0, 0, 0, 0]; // nonce option
        opts.extend_from_slice(&slla(HOST_MAC));
        let pkt = ns(host, router, 255, router, &opts);
        assert_eq!(parse_ns(&pkt).unwrap().source_ll, Some(HOST_MAC));
        // Without the option.
        let pkt = ns(host, router, 255, router, &[]);
        assert_eq!(parse_ns(&pkt).unwrap().source_ll, None);
        // DAD: from ::, to the solicited-node address, no option.
        let dad = ns(
            Ipv6Addr::UNSPECIFIED,
            ipv6::solicited_node(&host),
            255,
            host,
            &[],
        );
        assert_eq!(
            parse_ns(&dad).unwrap(),
            NeighborSolicit {
                target: host,
                source_ll: None
            }
        );
    }

    #[test]
    fn rejects_invalid_solicitations() {
        let router = addr("2001:2::1");
        let host = addr("2001:2::a");
        let dst = ipv6::solicited_node(&router);
        let opt = slla(HOST_MAC);
        // Forwarded: hop limit 254.
        assert!(matches!(
            parse_ns(&ns(host, dst, 254, router, &opt)),
            Err(Error::Malformed(_))
        ));
        // Bad checksum.
        let mut bad = ns(host, dst, 255, router, &opt);
        bad[70] ^= 0xff;
        assert!(parse_ns(&bad).is_err());
        // Code 1.
        let mut code = ns(host, dst, 255, router, &opt);
        code[41] = 1;
        Packet::new_unchecked(&mut code[40..]).fill_checksum(&host, &dst);
        assert!(parse_ns(&code).is_err());
        // Multicast target.
        assert!(parse_ns(&ns(host, dst, 255, addr("ff02::1"), &opt)).is_err());
        // Zero-length and overlong options.
        assert!(parse_ns(&ns(host, dst, 255, router, &[1, 0, 0, 0, 0, 0, 0, 0])).is_err());
        assert!(parse_ns(&ns(host, dst, 255, router, &[1, 2, 0, 0, 0, 0, 0, 0])).is_err());
        assert!(parse_ns(&ns(host, dst, 255, router, &[1])).is_err());
        // DAD with a source link-layer option, or to the wrong destination.
        let unspec = Ipv6Addr::UNSPECIFIED;
        assert!(parse_ns(&ns(unspec, dst, 255, router, &opt)).is_err());
        assert!(parse_ns(&ns(unspec, addr("ff02::1"), 255, router, &[])).is_err());
        // Too short a message (an ICMPv6 header only), another type, not IPv6.
        let mut short = ns(host, dst, 255, router, &[]);
        short.truncate(48);
        ipv6::Packet::new_unchecked(&mut short[..]).set_payload_len(8);
        Packet::new_unchecked(&mut short[40..]).fill_checksum(&host, &dst);
        assert_eq!(
            parse_ns(&short).unwrap_err(),
            Error::Truncated { need: 24, have: 8 }
        );
        let mut other = ns(host, dst, 255, router, &opt);
        other[40] = TYPE_NEIGHBOR_ADVERT;
        Packet::new_unchecked(&mut other[40..]).fill_checksum(&host, &dst);
        assert!(parse_ns(&other).is_err());
        assert!(parse_ns(&[0x60; 30]).is_err());
    }

    #[test]
    fn advert_bytes_field_by_field() {
        let router = addr("2001:2::1");
        let host = addr("2001:2::a");
        let na = neighbor_advert(router, ROUTER_MAC, host, router, true);
        assert_eq!(na.len(), 72);
        // IPv6 header.
        assert_eq!(&na[0..4], &[0x60, 0, 0, 0]);
        assert_eq!(&na[4..6], &[0, 32]); // payload length
        assert_eq!(na[6], 58); // ICMPv6
        assert_eq!(na[7], 255); // hop limit
        assert_eq!(&na[8..24], &router.octets());
        assert_eq!(&na[24..40], &host.octets());
        // ICMPv6 header.
        assert_eq!(na[40], 136);
        assert_eq!(na[41], 0);
        assert_eq!(&na[44..48], &[0xe0, 0, 0, 0]); // R, S, O
        assert_eq!(&na[48..64], &router.octets());
        // Target link-layer address option.
        assert_eq!(&na[64..72], &[2, 1, 0x02, 0, 0, 0, 0, 0x01]);
        // Checksum over the pseudo-header.
        let icmp = Packet::new_checked(&na[40..]).unwrap();
        assert!(icmp.verify_checksum(&router, &host));
        let expected = {
            let mut s = crate::checksum::pseudo_header_v6(&router, &host, 58, 32);
            s.add(&na[40..42]).add(&na[44..]);
            s.finish()
        };
        assert_eq!(u16::from_be_bytes([na[42], na[43]]), expected);

        // Answer to DAD: to all-nodes, not solicited.
        let all_nodes = addr("ff02::1");
        let dad = neighbor_advert(router, ROUTER_MAC, all_nodes, router, false);
        assert_eq!(&dad[44..48], &[0xa0, 0, 0, 0]); // R, O
        assert_eq!(&dad[24..40], &all_nodes.octets());
        assert!(Packet::new_checked(&dad[40..])
            .unwrap()
            .verify_checksum(&router, &all_nodes));
    }
}
