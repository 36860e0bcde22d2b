//! ICMPv6 (RFC 4443): the message view and the messages a router originates.
//!
//! ```text
//! Echo Request (128) / Reply (129):   Time Exceeded (3):          Packet Too Big (2):
//! | type | code |   checksum    |     |  3  |  0  |  checksum  |   |  2  |  0  | checksum |
//! |  identifier  |   sequence    |     |        unused          |   |          MTU         |
//! | data ...                     |     | invoking packet ...    |   | invoking packet ...  |
//! ```
//!
//! The checksum covers the IPv6 pseudo-header (source, destination, upper-layer length,
//! next header 58; RFC 8200 §8.1) and the whole message (RFC 4443 §2.3), so
//! [`Packet::verify_checksum`] and [`Packet::fill_checksum`] take the addresses.
//!
//! The builders return complete IPv6 packets (40-byte header, no extension headers, then
//! the ICMPv6 message). Choices, for errors:
//! - source: the router address given; destination: the invoking packet's source; hop
//!   limit [`HOP_LIMIT`] = 64; traffic class [`ERROR_DS_FIELD`] = 0xC0 (CS6, as for
//!   ICMPv4), flow label 0.
//! - the data is as much of the invoking packet, from its IPv6 header and bounded by its
//!   payload length, as keeps the whole error within [`MAX_ERROR_LEN`] = 1280 bytes, the
//!   IPv6 minimum MTU (RFC 4443 §2.4(c)).
//! - no error is built (`None`) when the invoking packet is not a valid IPv6 packet, or
//!   when RFC 4443 §2.4(e) forbids one:
//!   - (e.1) it is an ICMPv6 error message (type below 128), found by walking the
//!     Hop-by-Hop, Routing, Destination Options, Fragment and AH headers (a chain that
//!     is truncated, too long, or ends in an ICMPv6 message too short to show its type
//!     is treated as an error message);
//!   - (e.2) it is an ICMPv6 Redirect;
//!   - (e.3) it is destined to a multicast address, except for Packet Too Big (Time
//!     Exceeded *is* suppressed for multicast destinations: §2.4(e.3) excepts only Packet
//!     Too Big and Parameter Problem code 2);
//!   - (e.6) its source does not uniquely identify a single node: the unspecified
//!     address, a multicast address, or (as RFC 4291 §2.5.3 forbids it on the wire) the
//!     loopback address. Known anycast addresses are for the caller.
//!
//!   (e.4, e.5: link-layer multicast and broadcast, apply the same exceptions) and §2.4(f)
//!   rate limiting are the caller's.

use std::net::Ipv6Addr;

use super::{be, field, ERROR_DS_FIELD, HEADER_LEN, HOP_LIMIT};
use crate::checksum;
use crate::ipv6::{self, NEXT_ICMPV6};
use crate::{Error, Result};

/// Type of Destination Unreachable.
pub const TYPE_DEST_UNREACHABLE: u8 = 1;
/// Type of Packet Too Big.
pub const TYPE_PACKET_TOO_BIG: u8 = 2;
/// Type of Time Exceeded.
pub const TYPE_TIME_EXCEEDED: u8 = 3;
/// Type of Parameter Problem.
pub const TYPE_PARAMETER_PROBLEM: u8 = 4;
/// Type of Echo Request.
pub const TYPE_ECHO_REQUEST: u8 = 128;
/// Type of Echo Reply.
pub const TYPE_ECHO_REPLY: u8 = 129;
/// Type of Router Solicitation (RFC 4861).
pub const TYPE_ROUTER_SOLICIT: u8 = 133;
/// Type of Router Advertisement (RFC 4861).
pub const TYPE_ROUTER_ADVERT: u8 = 134;
/// Type of Neighbor Solicitation (RFC 4861).
pub const TYPE_NEIGHBOR_SOLICIT: u8 = 135;
/// Type of Neighbor Advertisement (RFC 4861).
pub const TYPE_NEIGHBOR_ADVERT: u8 = 136;
/// Type of Redirect (RFC 4861).
pub const TYPE_REDIRECT: u8 = 137;
/// Time Exceeded code: hop limit exceeded in transit.
pub const CODE_HOP_LIMIT_EXCEEDED: u8 = 0;
/// The largest error message the builders produce, IPv6 header included: the IPv6
/// minimum MTU (RFC 4443 §2.4(c)).
pub const MAX_ERROR_LEN: usize = 1280;

/// Whether an ICMPv6 message of this type is an error message (type below 128, RFC 4443
/// §2.1).
pub const fn is_error(msg_type: u8) -> bool {
    msg_type < 128
}

/// A read/write view of an ICMPv6 message (the IPv6 upper-layer payload) in a buffer.
/// The message is the whole buffer: pass [`ipv6::Packet::payload`].
#[derive(Debug, Clone)]
pub struct Packet<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Packet<T> {
    /// Wrap a buffer without checks; accessors may panic if it is too short.
    pub const fn new_unchecked(buffer: T) -> Self {
        Self { buffer }
    }

    /// Wrap a buffer and validate it: it must hold the 8-byte header. The checksum is not
    /// checked (see [`Packet::verify_checksum`]). Required for untrusted input; when it
    /// returns `Ok`, no accessor panics.
    pub fn new_checked(buffer: T) -> Result<Self> {
        let packet = Self::new_unchecked(buffer);
        packet.check()?;
        Ok(packet)
    }

    fn check(&self) -> Result<()> {
        let len = self.buffer.as_ref().len();
        if len < HEADER_LEN {
            return Err(Error::Truncated {
                need: HEADER_LEN,
                have: len,
            });
        }
        Ok(())
    }

    /// Unwrap the buffer.
    pub fn into_inner(self) -> T {
        self.buffer
    }
    /// The message type.
    pub fn msg_type(&self) -> u8 {
        self.buffer.as_ref()[field::TYPE]
    }
    /// The code.
    pub fn code(&self) -> u8 {
        self.buffer.as_ref()[field::CODE]
    }
    /// The checksum as stored.
    pub fn checksum(&self) -> u16 {
        u16::from_be_bytes(be(&self.buffer.as_ref()[field::CHECKSUM]))
    }
    /// The 32-bit rest of the header (identifier and sequence of echoes, the MTU of
    /// Packet Too Big, the pointer of Parameter Problem, flags of NDP messages).
    pub fn rest_of_header(&self) -> u32 {
        u32::from_be_bytes(be(&self.buffer.as_ref()[field::REST]))
    }
    /// The echo identifier (the high 16 bits of the rest of the header).
    pub fn echo_ident(&self) -> u16 {
        (self.rest_of_header() >> 16) as u16
    }
    /// The echo sequence number (the low 16 bits of the rest of the header).
    pub fn echo_seq(&self) -> u16 {
        self.rest_of_header() as u16
    }
    /// The MTU of a Packet Too Big message (the rest of the header).
    pub fn mtu(&self) -> u32 {
        self.rest_of_header()
    }
    /// The data after the 8-byte header.
    pub fn data(&self) -> &[u8] {
        &self.buffer.as_ref()[field::DATA..]
    }
    /// The checksum the message should carry between `src` and `dst`: over the
    /// pseudo-header and the message with its checksum field taken as zero.
    pub fn compute_checksum(&self, src: &Ipv6Addr, dst: &Ipv6Addr) -> u16 {
        let data = self.buffer.as_ref();
        let mut sum = pseudo_header(src, dst, data.len());
        sum.add(&data[..field::CHECKSUM.start])
            .add(&data[field::CHECKSUM.end..]);
        sum.finish()
    }
    /// Whether the checksum is correct for a message sent from `src` to `dst` (the IPv6
    /// header's addresses; with a Routing header, the final destination).
    pub fn verify_checksum(&self, src: &Ipv6Addr, dst: &Ipv6Addr) -> bool {
        let data = self.buffer.as_ref();
        let mut sum = pseudo_header(src, dst, data.len());
        sum.add(data);
        sum.finish() == 0
    }
}

fn pseudo_header(src: &Ipv6Addr, dst: &Ipv6Addr, len: usize) -> checksum::Sum {
    // An IPv6 payload is at most 65535 bytes; saturate rather than wrap for larger
    // buffers (which then simply fail to verify).
    let len = u32::try_from(len).unwrap_or(u32::MAX);
    checksum::pseudo_header_v6(src, dst, NEXT_ICMPV6, len)
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Packet<T> {
    /// Set the message type.
    pub fn set_msg_type(&mut self, value: u8) {
        self.buffer.as_mut()[field::TYPE] = value;
    }
    /// Set the code.
    pub fn set_code(&mut self, value: u8) {
        self.buffer.as_mut()[field::CODE] = value;
    }
    /// Set the checksum.
    pub fn set_checksum(&mut self, value: u16) {
        self.buffer.as_mut()[field::CHECKSUM].copy_from_slice(&value.to_be_bytes());
    }
    /// Set the rest of the header.
    pub fn set_rest_of_header(&mut self, value: u32) {
        self.buffer.as_mut()[field::REST].copy_from_slice(&value.to_be_bytes());
    }
    /// The data, mutably.
    pub fn data_mut(&mut self) -> &mut [u8] {
        &mut self.buffer.as_mut()[field::DATA..]
    }
    /// Compute the checksum for a message from `src` to `dst` and store it.
    pub fn fill_checksum(&mut self, src: &Ipv6Addr, dst: &Ipv6Addr) {
        let c = self.compute_checksum(src, dst);
        self.set_checksum(c);
    }
}

/// What the invoking packet carries, as far as §2.4(e) cares.
enum Upper {
    /// An ICMPv6 message of this type.
    Icmpv6(u8),
    /// Another protocol, or a non-initial fragment whose upper layer is not visible.
    Other,
}

/// Walk the extension headers of `ip` to its upper layer; `None` when the chain is
/// malformed, longer than 8 headers, or ends in an ICMPv6 message without a type.
fn upper_layer(ip: &ipv6::Packet<&[u8]>) -> Option<Upper> {
    let mut next = ip.next_header();
    let mut data = ip.payload();
    for _ in 0..8 {
        let len = match next {
            NEXT_ICMPV6 => return data.first().map(|&t| Upper::Icmpv6(t)),
            ipv6::NEXT_HOP_BY_HOP | ipv6::NEXT_ROUTING | ipv6::NEXT_DEST_OPTS => {
                (usize::from(*data.get(1)?) + 1) * 8
            }
            ipv6::NEXT_FRAGMENT => {
                let offset = u16::from_be_bytes([*data.get(2)?, *data.get(3)?]) & 0xfff8;
                if offset != 0 {
                    return Some(Upper::Other);
                }
                8
            }
            ipv6::NEXT_AUTH => (usize::from(*data.get(1)?) + 2) * 4,
            _ => return Some(Upper::Other),
        };
        next = *data.first()?;
        data = data.get(len..)?;
    }
    None
}

/// Whether `addr` may be the source of a packet an error is sent about (§2.4(e.6)).
fn is_single_node(addr: &Ipv6Addr) -> bool {
    !(addr.is_unspecified() || addr.is_multicast() || addr.is_loopback())
}

/// The invoking packet, if an error of `msg_type` may be sent about it (§2.4(e)).
fn invoking(msg_type: u8, offending: &[u8]) -> Option<ipv6::Packet<&[u8]>> {
    let ip = ipv6::Packet::new_checked(offending).ok()?;
    if !is_single_node(&ip.src_addr()) {
        return None; // (e.6)
    }
    if ip.dst_addr().is_multicast() && msg_type != TYPE_PACKET_TOO_BIG {
        return None; // (e.3)
    }
    match upper_layer(&ip)? {
        Upper::Icmpv6(t) if is_error(t) || t == TYPE_REDIRECT => None, // (e.1), (e.2)
        _ => Some(ip),
    }
}

fn build_error(
    router: Ipv6Addr,
    msg_type: u8,
    code: u8,
    rest: u32,
    offending: &[u8],
) -> Option<Vec<u8>> {
    let ip = invoking(msg_type, offending)?;
    let invoking = ip.packet();
    let quoted = &invoking[..invoking
        .len()
        .min(MAX_ERROR_LEN - ipv6::HEADER_LEN - HEADER_LEN)];
    let icmp_len = HEADER_LEN + quoted.len();
    let dst = ip.src_addr();
    let mut out = vec![0u8; ipv6::HEADER_LEN + icmp_len];
    ipv6::Repr {
        src_addr: router,
        dst_addr: dst,
        next_header: NEXT_ICMPV6,
        payload_len: icmp_len,
        hop_limit: HOP_LIMIT,
        traffic_class: ERROR_DS_FIELD,
        flow_label: 0,
    }
    .emit(&mut ipv6::Packet::new_unchecked(&mut out[..]));
    let mut icmp = Packet::new_unchecked(&mut out[ipv6::HEADER_LEN..]);
    icmp.set_msg_type(msg_type);
    icmp.set_code(code);
    icmp.set_rest_of_header(rest);
    icmp.data_mut().copy_from_slice(quoted);
    icmp.fill_checksum(&router, &dst);
    Some(out)
}

/// A Time Exceeded (type 3, code 0: hop limit exceeded in transit) from `router` about
/// the IPv6 packet `offending` (from its IPv6 header, as received), as a complete IPv6
/// packet of at most 1280 bytes. `None` when RFC 4443 §2.4(e) forbids it (see the module
/// doc; multicast destinations included).
pub fn v6_time_exceeded(router: Ipv6Addr, offending: &[u8]) -> Option<Vec<u8>> {
    build_error(
        router,
        TYPE_TIME_EXCEEDED,
        CODE_HOP_LIMIT_EXCEEDED,
        0,
        offending,
    )
}

/// A Packet Too Big (type 2, code 0) from `router` about `offending`, carrying the
/// next-hop `mtu`, as a complete IPv6 packet of at most 1280 bytes. Sent for multicast
/// destinations too (RFC 4443 §2.4(e.3), exception 1). `None` when §2.4(e) forbids it.
pub fn v6_packet_too_big(router: Ipv6Addr, mtu: u32, offending: &[u8]) -> Option<Vec<u8>> {
    build_error(router, TYPE_PACKET_TOO_BIG, 0, mtu, offending)
}

/// The Echo Reply to `request`, a whole IPv6 packet whose next header is ICMPv6 (no
/// extension headers) carrying an Echo Request to us, as a complete IPv6 packet:
/// addresses swapped, hop limit 64, the request's DSCP with ECN cleared, flow label 0,
/// and the ICMPv6 message with type 129, code 0 and identifier, sequence number and data
/// unchanged (RFC 4443 §4.2).
///
/// `None` when `request` is not a valid IPv6 packet, has extension headers, is not an
/// Echo Request with a valid checksum, comes from the unspecified, a multicast or the
/// loopback address, or is addressed to a multicast address (RFC 4443 §4.2 answers those
/// from a unicast address of the interface, which the caller has and this function does
/// not).
pub fn v6_echo_reply(request: &[u8]) -> Option<Vec<u8>> {
    let ip = ipv6::Packet::new_checked(request).ok()?;
    let (src, dst) = (ip.src_addr(), ip.dst_addr());
    if ip.next_header() != NEXT_ICMPV6 || !is_single_node(&src) || !is_single_node(&dst) {
        return None;
    }
    let icmp = Packet::new_checked(ip.payload()).ok()?;
    if icmp.msg_type() != TYPE_ECHO_REQUEST || !icmp.verify_checksum(&src, &dst) {
        return None;
    }
    let message = icmp.into_inner();
    let mut out = vec![0u8; ipv6::HEADER_LEN + message.len()];
    ipv6::Repr {
        src_addr: dst,
        dst_addr: src,
        next_header: NEXT_ICMPV6,
        payload_len: message.len(),
        hop_limit: HOP_LIMIT,
        traffic_class: ip.dscp() << 2,
        flow_label: 0,
    }
    .emit(&mut ipv6::Packet::new_unchecked(&mut out[..]));
    out[ipv6::HEADER_LEN..].copy_from_slice(message);
    let mut reply = Packet::new_unchecked(&mut out[ipv6::HEADER_LEN..]);
    reply.set_msg_type(TYPE_ECHO_REPLY);
    reply.set_code(0);
    reply.fill_checksum(&dst, &src);
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn addr(s: &str) -> Ipv6Addr {
        s.parse().unwrap()
    }
    fn router() -> Ipv6Addr {
        addr("2001:2::1")
    }
    fn host() -> Ipv6Addr {
        addr("2001:2::a")
    }
    fn far() -> Ipv6Addr {
        addr("2001:2:0:1::14")
    }

    /// An IPv6 packet of `total` bytes from `src` to `dst` with `next_header` and the
    /// given payload prefix (the rest counts up).
    fn packet(
        src: Ipv6Addr,
        dst: Ipv6Addr,
        next_header: u8,
        total: usize,
        prefix: &[u8],
    ) -> Vec<u8> {
        let mut buf = vec![0u8; total];
        ipv6::Repr {
            src_addr: src,
            dst_addr: dst,
            next_header,
            payload_len: total - 40,
            hop_limit: 1,
            traffic_class: 0xb8,
            flow_label: 0x12345,
        }
        .emit(&mut ipv6::Packet::new_unchecked(&mut buf[..]));
        for (i, b) in buf[40..].iter_mut().enumerate() {
            *b = i as u8;
        }
        buf[40..40 + prefix.len()].copy_from_slice(prefix);
        buf
    }

    fn udp(total: usize) -> Vec<u8> {
        packet(host(), far(), 17, total, &[])
    }

    fn ping(src: Ipv6Addr, dst: Ipv6Addr, msg_type: u8, data_len: usize) -> Vec<u8> {
        let mut buf = packet(
            src,
            dst,
            NEXT_ICMPV6,
            48 + data_len,
            &[msg_type, 0, 0, 0, 0xbe, 0xef, 0, 7],
        );
        Packet::new_unchecked(&mut buf[40..]).fill_checksum(&src, &dst);
        buf
    }

    /// Parse a built packet, check the checksum and return both views.
    fn parse(bytes: &[u8]) -> (ipv6::Packet<&[u8]>, Packet<&[u8]>) {
        let ip = ipv6::Packet::new_checked(bytes).unwrap();
        assert_eq!(ip.packet().len(), bytes.len());
        assert_eq!(ip.next_header(), NEXT_ICMPV6);
        let icmp = Packet::new_checked(&bytes[ipv6::HEADER_LEN..]).unwrap();
        assert!(icmp.verify_checksum(&ip.src_addr(), &ip.dst_addr()));
        (ip, icmp)
    }

    #[test]
    fn time_exceeded_quotes_the_invoking_packet() {
        let offending = udp(200);
        let out = v6_time_exceeded(router(), &offending).unwrap();
        assert_eq!(out.len(), 40 + 8 + 200);
        let (ip, icmp) = parse(&out);
        assert_eq!(ip.src_addr(), router());
        assert_eq!(ip.dst_addr(), host());
        assert_eq!(ip.hop_limit(), 64);
        assert_eq!(ip.traffic_class(), 0xc0);
        assert_eq!(ip.flow_label(), 0);
        assert_eq!((icmp.msg_type(), icmp.code()), (3, 0));
        assert_eq!(icmp.rest_of_header(), 0);
        assert_eq!(icmp.data(), &offending[..]);
        // The checksum really depends on the pseudo-header.
        assert!(!icmp.verify_checksum(&far(), &host()));
        // Trailing bytes after the payload length are not quoted.
        let mut padded = offending.clone();
        padded.extend_from_slice(&[0xee; 6]);
        assert_eq!(v6_time_exceeded(router(), &padded).unwrap(), out);
    }

    #[test]
    fn errors_are_capped_at_1280_bytes() {
        let offending = udp(1500);
        let out = v6_time_exceeded(router(), &offending).unwrap();
        assert_eq!(out.len(), 1280);
        let (ip, icmp) = parse(&out);
        assert_eq!(ip.payload_len(), 1240);
        assert_eq!(icmp.data(), &offending[..1232]);

        let out = v6_packet_too_big(router(), 1400, &offending).unwrap();
        assert_eq!(out.len(), 1280);
        let (_, icmp) = parse(&out);
        assert_eq!((icmp.msg_type(), icmp.code()), (2, 0));
        assert_eq!(icmp.mtu(), 1400);
        assert_eq!(&out[44..48], &[0, 0, 0x05, 0x78]);
        assert_eq!(icmp.data(), &offending[..1232]);
    }

    #[test]
    fn rfc4443_section_2_4_e_suppressions() {
        // (e.1) an ICMPv6 error message, directly and behind extension headers.
        let te = v6_time_exceeded(router(), &udp(100)).unwrap();
        assert_eq!(v6_time_exceeded(addr("2001:2::2"), &te), None);
        assert_eq!(v6_packet_too_big(addr("2001:2::2"), 1280, &te), None);
        let behind_hbh_and_frag = packet(
            host(),
            far(),
            ipv6::NEXT_HOP_BY_HOP,
            100,
            &[
                ipv6::NEXT_FRAGMENT,
                0,
                1,
                4,
                0,
                0,
                0,
                0, // Hop-by-Hop, PadN
                NEXT_ICMPV6,
                0,
                0,
                1,
                0,
                0,
                0,
                9, // Fragment, offset 0, M
                1,
                0,
                0,
                0, // Destination Unreachable
            ],
        );
        assert_eq!(v6_time_exceeded(router(), &behind_hbh_and_frag), None);
        // A non-initial fragment of the same: its upper layer is invisible, so allowed.
        let mut later = behind_hbh_and_frag.clone();
        later[50] = 0x05; // fragment offset 0x05 << 8 bytes
        assert!(v6_time_exceeded(router(), &later).is_some());
        // A truncated extension header chain is treated as an error message.
        let truncated = packet(host(), far(), ipv6::NEXT_DEST_OPTS, 44, &[17, 1, 0, 0]);
        assert_eq!(v6_time_exceeded(router(), &truncated), None);
        // Informational messages are fine.
        assert!(v6_time_exceeded(router(), &ping(host(), far(), TYPE_ECHO_REQUEST, 8)).is_some());
        // (e.2) a Redirect.
        assert_eq!(
            v6_time_exceeded(router(), &ping(host(), far(), TYPE_REDIRECT, 32)),
            None
        );
        // (e.3) a multicast destination: Time Exceeded no, Packet Too Big yes.
        let mcast = packet(host(), addr("ff0e::101"), 17, 1500, &[]);
        assert_eq!(v6_time_exceeded(router(), &mcast), None);
        let ptb = v6_packet_too_big(router(), 1280, &mcast).unwrap();
        assert_eq!(ptb.len(), 1280);
        let (ip, _) = parse(&ptb);
        assert_eq!(ip.dst_addr(), host());
        // (e.6) sources that do not identify a single node.
        for src in ["::", "ff02::1", "::1"] {
            let p = packet(addr(src), far(), 17, 100, &[]);
            assert_eq!(v6_time_exceeded(router(), &p), None, "{src}");
            assert_eq!(v6_packet_too_big(router(), 1280, &p), None, "{src}");
        }
        // Not IPv6 at all.
        assert_eq!(v6_time_exceeded(router(), &[0x45; 60]), None);
    }

    #[test]
    fn echo_reply_swaps_addresses_and_keeps_the_data() {
        let request = ping(host(), router(), TYPE_ECHO_REQUEST, 56);
        let reply = v6_echo_reply(&request).unwrap();
        assert_eq!(reply.len(), request.len());
        let (ip, icmp) = parse(&reply);
        assert_eq!(ip.src_addr(), router());
        assert_eq!(ip.dst_addr(), host());
        assert_eq!(ip.hop_limit(), 64);
        assert_eq!(ip.traffic_class(), 0xb8);
        assert_eq!((icmp.msg_type(), icmp.code()), (129, 0));
        assert_eq!((icmp.echo_ident(), icmp.echo_seq()), (0xbeef, 7));
        assert_eq!(icmp.data(), &request[48..]);
    }

    #[test]
    fn echo_reply_refuses_non_requests() {
        assert_eq!(
            v6_echo_reply(&ping(host(), router(), TYPE_ECHO_REPLY, 8)),
            None
        );
        assert_eq!(
            v6_echo_reply(&ping(host(), addr("ff02::1"), TYPE_ECHO_REQUEST, 8)),
            None
        );
        assert_eq!(
            v6_echo_reply(&ping(addr("::"), router(), TYPE_ECHO_REQUEST, 8)),
            None
        );
        assert_eq!(v6_echo_reply(&udp(100)), None);
        let mut bad = ping(host(), router(), TYPE_ECHO_REQUEST, 8);
        bad[24] ^= 1; // destination changed: the pseudo-header checksum fails
        assert_eq!(v6_echo_reply(&bad), None);
        assert_eq!(
            v6_echo_reply(&ping(host(), router(), TYPE_ECHO_REQUEST, 8)[..47]),
            None
        );
    }

    #[test]
    fn view_basics() {
        assert_eq!(
            Packet::new_checked(&[128u8, 0, 0][..]).unwrap_err(),
            Error::Truncated { need: 8, have: 3 }
        );
        assert!(is_error(1) && is_error(127) && !is_error(128));
    }
}
