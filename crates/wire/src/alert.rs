//! The Router Alert options that make a router look at a packet not addressed to it:
//! IPv4's (RFC 2113) and IPv6's in a Hop-by-Hop Options header (RFC 2711). RSVP's Path,
//! PathTear and ResvConf travel to the data's destination with one (RFC 2205 §3.1.3), and
//! every RSVP router on the way takes them in.
//!
//! ```text
//! IPv4 option (RFC 2113 §2.1)            IPv6 Hop-by-Hop header with Router Alert
//! +--------+--------+--------+--------+  +--------+--------+--------+--------+
//! |10010100|00000100|  2 octet value  |  |  Next  |Hdr Ext | 000 00101 |  2  |
//! +--------+--------+--------+--------+  | Header |Len = 0 |  type 5   | len |
//!  type 148  len 4    0: examine it      +--------+--------+--------+--------+
//!                                        |  value (1 = RSVP) | PadN: 1 |  0  |
//!                                        +--------+--------+--------+--------+
//! ```
//!
//! The readers are checked: any bytes give an answer, never a panic. A malformed
//! option list (a length running past its end, a length below 2) carries no alert.

use std::net::{Ipv4Addr, Ipv6Addr};

use crate::{ipv4, ipv6};

/// IPv4 option type of Router Alert: copied flag set, class 0, number 20 (RFC 2113 §2.1).
pub const IPV4_OPTION: u8 = 148;
/// IPv4 option type End of Option List (RFC 791).
pub const IPV4_EOL: u8 = 0;
/// IPv4 option type No Operation (RFC 791).
pub const IPV4_NOP: u8 = 1;
/// IPv6 option type of Router Alert (RFC 2711 §2.1): skip if unknown, may not change.
pub const IPV6_OPTION: u8 = 5;
/// IPv6 option type Pad1 (RFC 8200 §4.2).
pub const IPV6_PAD1: u8 = 0;
/// IPv6 option type PadN (RFC 8200 §4.2).
pub const IPV6_PADN: u8 = 1;
/// IPv6 Router Alert value of a packet carrying an RSVP message (RFC 2711 §2.1).
pub const VALUE_RSVP: u16 = 1;

/// The IPv4 Router Alert option as [`ipv4_packet_with_alert`] writes it: type 148,
/// length 4, value 0 ("every router examines this packet").
pub const IPV4_ALERT: [u8; 4] = [IPV4_OPTION, 4, 0, 0];
/// The Hop-by-Hop options [`ipv6_packet_with_alert`] writes after the header's first two
/// octets: Router Alert (value 1, RSVP) and a PadN of 2 to fill the 8 octets.
const IPV6_HBH_OPTIONS: [u8; 6] = [IPV6_OPTION, 2, 0, VALUE_RSVP as u8, IPV6_PADN, 0];

/// Whether an IPv4 header's options (what [`ipv4::Packet::options`] returns) hold the
/// Router Alert option of RFC 2113: type 148, length 4, value 0. The list is walked per
/// RFC 791 §3.1: End of Option List (0) ends it, No Operation (1) is one octet, every
/// other option is type, length (counting both), data. An option whose length is below 2
/// or runs past the end makes the list malformed: no alert. A Router Alert with another
/// value (reserved by RFC 2113) is not one.
pub fn ipv4_has_router_alert(options: &[u8]) -> bool {
    let mut at = 0;
    while let Some(&kind) = options.get(at) {
        match kind {
            IPV4_EOL => return false,
            IPV4_NOP => at += 1,
            _ => {
                let Some(&len) = options.get(at + 1) else {
                    return false;
                };
                let len = usize::from(len);
                if len < 2 || at + len > options.len() {
                    return false;
                }
                if kind == IPV4_OPTION && options[at..at + len] == IPV4_ALERT {
                    return true;
                }
                at += len;
            }
        }
    }
    false
}

/// What an IPv6 Router Alert says, and where the packet's upper layer starts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ipv6Alert {
    /// The Router Alert value: 0 MLD, 1 RSVP, 2 Active Networks (RFC 2711 §2.1).
    pub value: u16,
    /// The Next Header of the Hop-by-Hop header: the upper layer (46 for RSVP) or the
    /// next extension header.
    pub next_header: u8,
    /// Offset, from the start of the packet, of what follows the Hop-by-Hop header.
    pub payload_offset: usize,
}

/// The Router Alert of an IPv6 `packet` (starting with its fixed header) whose first
/// extension header is Hop-by-Hop (next header 0, where RFC 8200 §4.1 requires it):
/// the first Router Alert option among its TLVs (Pad1 is one octet; every other option
/// is type, data length, data), with the header's Next Header and the offset after it.
/// `None` if the packet is not IPv6, has no Hop-by-Hop header, the header or an option
/// runs past the payload, or no Router Alert of data length 2 is there.
pub fn ipv6_router_alert(packet: &[u8]) -> Option<Ipv6Alert> {
    let p = ipv6::Packet::new_checked(packet).ok()?;
    if p.next_header() != ipv6::NEXT_HOP_BY_HOP {
        return None;
    }
    let payload = p.payload();
    let hbh_len = (usize::from(*payload.get(1)?) + 1) * 8;
    let hbh = payload.get(..hbh_len)?;
    let mut at = 2;
    let mut value = None;
    while at < hbh.len() {
        let kind = hbh[at];
        if kind == IPV6_PAD1 {
            at += 1;
            continue;
        }
        let len = usize::from(*hbh.get(at + 1)?);
        let data = hbh.get(at + 2..at + 2 + len)?;
        if kind == IPV6_OPTION && value.is_none() {
            if len != 2 {
                return None;
            }
            value = Some(u16::from_be_bytes([data[0], data[1]]));
        }
        at += 2 + len;
    }
    Some(Ipv6Alert {
        value: value?,
        next_header: hbh[0],
        payload_offset: ipv6::HEADER_LEN + hbh_len,
    })
}

/// The largest payload an IPv4 packet of [`ipv4_packet_with_alert`] carries: 65,535
/// bytes of total length less 24 of header.
pub const IPV4_MAX_PAYLOAD: usize = 65_535 - ipv4::HEADER_LEN - IPV4_ALERT.len();
/// The largest payload an IPv6 packet of [`ipv6_packet_with_alert`] carries: 65,535
/// bytes of payload length less 8 of Hop-by-Hop header.
pub const IPV6_MAX_PAYLOAD: usize = 65_535 - 8;

/// A whole IPv4 packet around `payload`: a 24-byte header (IHL 6) whose only option is
/// Router Alert ([`IPV4_ALERT`]), DSCP 0, identification 0, no fragment flags, and its
/// checksum filled. A payload beyond [`IPV4_MAX_PAYLOAD`] is cut there.
pub fn ipv4_packet_with_alert(
    src: Ipv4Addr,
    dst: Ipv4Addr,
    ttl: u8,
    protocol: u8,
    payload: &[u8],
) -> Vec<u8> {
    let payload = &payload[..payload.len().min(IPV4_MAX_PAYLOAD)];
    let header_len = ipv4::HEADER_LEN + IPV4_ALERT.len();
    let mut buf = vec![0u8; header_len + payload.len()];
    let mut p = ipv4::Packet::new_unchecked(&mut buf[..]);
    ipv4::Repr {
        src_addr: src,
        dst_addr: dst,
        protocol,
        payload_len: IPV4_ALERT.len() + payload.len(),
        ttl,
        dscp: 0,
        ecn: 0,
        ident: 0,
        dont_frag: false,
    }
    .emit(&mut p);
    p.set_header_len(header_len);
    p.options_mut().copy_from_slice(&IPV4_ALERT);
    p.fill_checksum();
    buf[header_len..].copy_from_slice(payload);
    buf
}

/// A whole IPv6 packet around `payload`: the fixed header (traffic class and flow label
/// 0) and an 8-byte Hop-by-Hop header with Router Alert value 1 (RSVP, RFC 2711) and a
/// PadN, whose Next Header is `next_header`. A payload beyond [`IPV6_MAX_PAYLOAD`] is
/// cut there.
pub fn ipv6_packet_with_alert(
    src: Ipv6Addr,
    dst: Ipv6Addr,
    hop_limit: u8,
    next_header: u8,
    payload: &[u8],
) -> Vec<u8> {
    let payload = &payload[..payload.len().min(IPV6_MAX_PAYLOAD)];
    let start = ipv6::HEADER_LEN + 8;
    let mut buf = vec![0u8; start + payload.len()];
    ipv6::Repr {
        src_addr: src,
        dst_addr: dst,
        next_header: ipv6::NEXT_HOP_BY_HOP,
        payload_len: 8 + payload.len(),
        hop_limit,
        traffic_class: 0,
        flow_label: 0,
    }
    .emit(&mut ipv6::Packet::new_unchecked(&mut buf[..]));
    buf[ipv6::HEADER_LEN] = next_header;
    buf[ipv6::HEADER_LEN + 1] = 0; // (0 + 1) · 8 octets
    buf[ipv6::HEADER_LEN + 2..start].copy_from_slice(&IPV6_HBH_OPTIONS);
    buf[start..].copy_from_slice(payload);
    buf
}

#[cfg(test)]
mod tests {
    use super::*;

    const RSVP: u8 = 46;

    fn v6(s: &str) -> Ipv6Addr {
        s.parse().unwrap()
    }

    #[test]
    fn ipv4_round_trip_writes_ihl_6_the_option_and_a_valid_checksum() {
        let payload = [7u8; 13];
        let bytes = ipv4_packet_with_alert(
            Ipv4Addr::new(198, 18, 1, 1),
            Ipv4Addr::new(198, 18, 4, 2),
            63,
            RSVP,
            &payload,
        );
        assert_eq!(bytes.len(), 24 + 13);
        assert_eq!(bytes[0], 0x46, "version 4, IHL 6");
        let p = ipv4::Packet::new_checked(&bytes[..]).unwrap();
        assert_eq!(
            (p.header_len(), p.total_len(), p.ttl(), p.protocol()),
            (24, 37, 63, RSVP)
        );
        assert_eq!(
            (p.src_addr(), p.dst_addr()),
            (Ipv4Addr::new(198, 18, 1, 1), Ipv4Addr::new(198, 18, 4, 2))
        );
        assert!(p.verify_checksum());
        assert_eq!(p.options(), &[0x94, 0x04, 0, 0]);
        assert!(ipv4_has_router_alert(p.options()));
        assert_eq!(p.payload(), &payload);
        assert!(!p.dont_frag() && !p.more_frags());
    }

    #[test]
    fn ipv4_option_walk_skips_nops_and_other_options_and_stops_at_eol() {
        // After NOPs and a 7-byte Record Route (type 7).
        let list = [1, 1, 7, 7, 4, 0, 0, 0, 0, 148, 4, 0, 0, 0];
        assert!(ipv4_has_router_alert(&list));
        // An End of Option List before it ends the list.
        assert!(!ipv4_has_router_alert(&[1, 0, 148, 4, 0, 0]));
        // A 148 inside another option's data is not an option.
        assert!(!ipv4_has_router_alert(&[7, 6, 148, 4, 0, 0, 1, 1]));
        // Empty, or NOPs only.
        assert!(!ipv4_has_router_alert(&[]));
        assert!(!ipv4_has_router_alert(&[1, 1, 1, 1]));
    }

    #[test]
    fn ipv4_wrong_lengths_and_values_carry_no_alert() {
        // Length 3 or 5 (RFC 2113 says 4), a reserved value, truncated, length 0 or 1
        // (which would loop or step back), a length past the end.
        for list in [
            &[148u8, 3, 0, 0][..],
            &[148, 5, 0, 0, 0, 0, 0, 0],
            &[148, 4, 0, 1],
            &[148, 4, 0],
            &[148],
            &[7, 0, 148, 4, 0, 0],
            &[7, 1, 148, 4, 0, 0],
            &[7, 40, 148, 4, 0, 0],
        ] {
            assert!(!ipv4_has_router_alert(list), "{list:?}");
        }
    }

    #[test]
    fn ipv6_round_trip_gives_value_next_header_and_payload_offset() {
        let payload = [9u8; 21];
        let bytes =
            ipv6_packet_with_alert(v6("2001:2:0:1::1"), v6("2001:2:0:4::2"), 64, RSVP, &payload);
        assert_eq!(bytes.len(), 40 + 8 + 21);
        let p = ipv6::Packet::new_checked(&bytes[..]).unwrap();
        assert_eq!(
            (
                p.next_header(),
                p.payload_len(),
                p.hop_limit(),
                p.flow_label()
            ),
            (0, 29, 64, 0)
        );
        assert_eq!(&bytes[40..48], &[RSVP, 0, 5, 2, 0, 1, 1, 0]);
        let a = ipv6_router_alert(&bytes).unwrap();
        assert_eq!(
            a,
            Ipv6Alert {
                value: VALUE_RSVP,
                next_header: RSVP,
                payload_offset: 48
            }
        );
        assert_eq!(&bytes[a.payload_offset..], &payload);
    }

    /// An IPv6 packet with next header 0 and `hbh` as its whole payload (and more).
    fn with_hbh(hbh: &[u8], extra: usize) -> Vec<u8> {
        let mut b = vec![0u8; 40 + hbh.len() + extra];
        ipv6::Repr {
            src_addr: v6("2001:2::1"),
            dst_addr: v6("2001:2::2"),
            next_header: 0,
            payload_len: hbh.len() + extra,
            hop_limit: 1,
            traffic_class: 0,
            flow_label: 0,
        }
        .emit(&mut ipv6::Packet::new_unchecked(&mut b[..]));
        b[40..40 + hbh.len()].copy_from_slice(hbh);
        b
    }

    #[test]
    fn ipv6_options_after_padding_and_longer_headers_are_found() {
        // Pad1, Pad1, RA value 0 (MLD), PadN of 0 data octets: 8 octets.
        let b = with_hbh(&[17, 0, 0, 0, 5, 2, 0, 0, 1, 0], 0);
        // (10 bytes of payload, but the header says 8: the 2 after are the upper layer.)
        assert_eq!(
            ipv6_router_alert(&b),
            Some(Ipv6Alert {
                value: 0,
                next_header: 17,
                payload_offset: 48
            })
        );
        // A 16-octet header: PadN of 6 data octets, then RA 1, then PadN of 2.
        let hbh = [RSVP, 1, 1, 6, 0, 0, 0, 0, 0, 0, 5, 2, 0, 1, 1, 0];
        let b = with_hbh(&hbh, 4);
        assert_eq!(
            ipv6_router_alert(&b),
            Some(Ipv6Alert {
                value: 1,
                next_header: RSVP,
                payload_offset: 56
            })
        );
        // Another option type first (0x3e, skip if unknown) is skipped.
        let b = with_hbh(&[RSVP, 0, 0x3e, 0, 5, 2, 0, 1], 0);
        assert_eq!(ipv6_router_alert(&b).map(|a| a.value), Some(1));
    }

    #[test]
    fn ipv6_truncated_or_malformed_headers_carry_no_alert() {
        let good = ipv6_packet_with_alert(v6("2001:2::1"), v6("2001:2::2"), 64, RSVP, &[]);
        assert!(ipv6_router_alert(&good).is_some());
        // Every truncation of the buffer: never a panic, never an alert.
        for n in 0..good.len() {
            assert_eq!(ipv6_router_alert(&good[..n]), None, "{n}");
        }
        // A payload length shorter than the Hop-by-Hop header says it is.
        let mut short = good.clone();
        short[5] = 4;
        assert_eq!(ipv6_router_alert(&short[..44]), None);
        // Header length 1 (16 octets) over 8 octets of payload.
        let mut long = good.clone();
        long[41] = 1;
        assert_eq!(ipv6_router_alert(&long), None);
        // RA with data length 1 or 3, an option running past the header, no RA at all.
        for hbh in [
            [RSVP, 0, 5, 1, 0, 1, 0, 0],
            [RSVP, 0, 5, 3, 0, 1, 0, 0],
            [RSVP, 0, 1, 2, 0, 0, 5, 2],
            [RSVP, 0, 1, 4, 0, 0, 0, 0],
        ] {
            assert_eq!(ipv6_router_alert(&with_hbh(&hbh, 0)), None, "{hbh:?}");
        }
        // Not a Hop-by-Hop header first; not IPv6.
        let mut no_hbh = good.clone();
        no_hbh[6] = RSVP;
        assert_eq!(ipv6_router_alert(&no_hbh), None);
        let v4 =
            ipv4_packet_with_alert(Ipv4Addr::LOCALHOST, Ipv4Addr::LOCALHOST, 1, RSVP, &[0; 40]);
        assert_eq!(ipv6_router_alert(&v4), None);
    }

    #[test]
    fn arbitrary_bytes_never_panic() {
        let seeds = [
            ipv6_packet_with_alert(v6("2001:2::1"), v6("2001:2::2"), 64, RSVP, &[1; 16]),
            with_hbh(&[RSVP, 1, 1, 6, 0, 0, 0, 0, 0, 0, 5, 2, 0, 1, 1, 0], 8),
        ];
        let mut x = 0x2711_2113_dead_beefu64;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        for i in 0..20_000 {
            let mut b = seeds[i % 2].clone();
            for _ in 0..(next() % 4) {
                let at = (next() as usize) % b.len();
                b[at] = next() as u8;
            }
            b.truncate((next() as usize) % (b.len() + 1));
            if let Some(a) = ipv6_router_alert(&b) {
                assert!(a.payload_offset <= b.len());
            }
            let _ = ipv4_has_router_alert(&b);
        }
    }

    #[test]
    fn payloads_beyond_the_maximum_are_cut() {
        let big = vec![0u8; 70_000];
        let p4 = ipv4_packet_with_alert(Ipv4Addr::LOCALHOST, Ipv4Addr::LOCALHOST, 1, RSVP, &big);
        assert_eq!(p4.len(), 65_535);
        assert!(ipv4::Packet::new_checked(&p4[..])
            .unwrap()
            .verify_checksum());
        let p6 = ipv6_packet_with_alert(Ipv6Addr::LOCALHOST, Ipv6Addr::LOCALHOST, 1, RSVP, &big);
        assert_eq!(p6.len(), 40 + 65_535);
        assert_eq!(ipv6_router_alert(&p6).unwrap().payload_offset, 48);
    }
}
