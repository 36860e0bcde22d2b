//! ICMPv4 (RFC 792): the message view and the messages a router originates.
//!
//! ```text
//! Echo Request (8) / Echo Reply (0):       Time Exceeded (11), code 0:
//! | type | code |    checksum    |         | 11  |  0   |    checksum    |
//! |   identifier  |   sequence    |         |            unused           |
//! | data ...                      |         | invoking IPv4 packet ...    |
//!
//! Destination Unreachable (3), code 4, Fragmentation Needed and DF set (RFC 1191):
//! |  3  |  4   |    checksum    |
//! |    unused   | next-hop MTU  |
//! | invoking IPv4 packet ...    |
//! ```
//!
//! The builders return complete IPv4 packets (20-byte header, no options, then the ICMP
//! message). Choices, for errors:
//! - source: the router address given; destination: the invoking packet's source;
//!   TTL [`HOP_LIMIT`] = 64; DS octet [`ERROR_DS_FIELD`] = 0xC0 (CS6, as Linux, which also
//!   keeps the invoking packet's old TOS bits 0x1E; we do not); identification 0 and
//!   Don't Fragment set, which RFC 6864 §4 allows for such atomic datagrams of at most 576
//!   bytes.
//! - the data is as much of the invoking packet, from its IP header and bounded by its
//!   total length, as keeps the whole error within [`MAX_ERROR_LEN`] = 576 bytes
//!   (RFC 1812 §4.3.2.3).
//! - no error is built (`None`) when the invoking packet is not a valid IPv4 packet
//!   (including a bad header checksum), or, per RFC 1812 §4.3.2.7, when it is an ICMP
//!   error message (types 3, 4, 5, 11, 12, and, as Linux assumes, any type above 18), a
//!   non-initial fragment, destined to a multicast or the limited broadcast address, or
//!   from a source that does not define a single host (0.0.0.0/8, 127.0.0.0/8,
//!   224.0.0.0/4, 240.0.0.0/4 and 255.255.255.255). Directed broadcasts and link-layer
//!   broadcasts are for the caller to recognise.

use std::net::Ipv4Addr;

use super::{be, field, ERROR_DS_FIELD, HEADER_LEN, HOP_LIMIT};
use crate::checksum;
use crate::ipv4::{self, PROTO_ICMP};
use crate::{Error, Result};

/// Type of Echo Reply.
pub const TYPE_ECHO_REPLY: u8 = 0;
/// Type of Destination Unreachable.
pub const TYPE_DEST_UNREACHABLE: u8 = 3;
/// Type of Source Quench (deprecated by RFC 6633, still an error message).
pub const TYPE_SOURCE_QUENCH: u8 = 4;
/// Type of Redirect.
pub const TYPE_REDIRECT: u8 = 5;
/// Type of Echo Request.
pub const TYPE_ECHO_REQUEST: u8 = 8;
/// Type of Time Exceeded.
pub const TYPE_TIME_EXCEEDED: u8 = 11;
/// Type of Parameter Problem.
pub const TYPE_PARAMETER_PROBLEM: u8 = 12;
/// Destination Unreachable code: fragmentation needed and DF set (RFC 1191).
pub const CODE_FRAG_NEEDED: u8 = 4;
/// Time Exceeded code: TTL exceeded in transit.
pub const CODE_TTL_EXCEEDED: u8 = 0;
/// The largest error message the builders produce, IPv4 header included (RFC 1812
/// §4.3.2.3).
pub const MAX_ERROR_LEN: usize = 576;

/// Whether an ICMPv4 message of this type is an error message, or is to be treated as
/// one: 3, 4, 5, 11, 12, and any type above 18 (unknown; Linux's `icmp_send` assumes
/// those are errors too, so never answers them with an error).
pub const fn is_error(msg_type: u8) -> bool {
    matches!(
        msg_type,
        TYPE_DEST_UNREACHABLE
            | TYPE_SOURCE_QUENCH
            | TYPE_REDIRECT
            | TYPE_TIME_EXCEEDED
            | TYPE_PARAMETER_PROBLEM
    ) || msg_type > 18
}

/// A read/write view of an ICMPv4 message (what follows the IPv4 header) in a buffer.
/// The message is the whole buffer: pass [`ipv4::Packet::payload`].
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
    /// The 32-bit rest of the header (identifier and sequence of echoes; the next-hop MTU
    /// in the low 16 bits of Fragmentation Needed; unused in Time Exceeded).
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
    /// The next-hop MTU of a Fragmentation Needed message (the low 16 bits of the rest
    /// of the header, RFC 1191 §4).
    pub fn next_hop_mtu(&self) -> u16 {
        self.rest_of_header() as u16
    }
    /// The data after the 8-byte header.
    pub fn data(&self) -> &[u8] {
        &self.buffer.as_ref()[field::DATA..]
    }
    /// Whether the checksum over the whole message is correct.
    pub fn verify_checksum(&self) -> bool {
        checksum::internet(self.buffer.as_ref()) == 0
    }
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
    /// Compute the checksum over the whole buffer and store it.
    pub fn fill_checksum(&mut self) {
        self.set_checksum(0);
        let c = checksum::internet(self.buffer.as_ref());
        self.set_checksum(c);
    }
}

/// Whether `addr` may be the source of a packet an error is sent about: it defines a
/// single host (RFC 1812 §4.3.2.7).
fn is_single_host(addr: Ipv4Addr) -> bool {
    let first = addr.octets()[0];
    !(first == 0 || addr.is_loopback() || first >= 224)
}

/// The invoking packet, if an error may be sent about it.
fn invoking(offending: &[u8]) -> Option<ipv4::Packet<&[u8]>> {
    let ip = ipv4::Packet::new_checked(offending).ok()?;
    if !ip.verify_checksum() || ip.frag_offset() != 0 {
        return None;
    }
    if !is_single_host(ip.src_addr())
        || ip.dst_addr().is_multicast()
        || ip.dst_addr().is_broadcast()
    {
        return None;
    }
    if ip.protocol() == PROTO_ICMP {
        // An ICMP packet too short to show its type is treated as an error message.
        let &msg_type = ip.payload().first()?;
        if is_error(msg_type) {
            return None;
        }
    }
    Some(ip)
}

fn build_error(
    router: Ipv4Addr,
    msg_type: u8,
    code: u8,
    rest: u32,
    offending: &[u8],
) -> Option<Vec<u8>> {
    let ip = invoking(offending)?;
    let invoking = ip.packet();
    let quoted = &invoking[..invoking
        .len()
        .min(MAX_ERROR_LEN - ipv4::HEADER_LEN - HEADER_LEN)];
    let icmp_len = HEADER_LEN + quoted.len();
    let mut out = vec![0u8; ipv4::HEADER_LEN + icmp_len];
    ipv4::Repr {
        src_addr: router,
        dst_addr: ip.src_addr(),
        protocol: PROTO_ICMP,
        payload_len: icmp_len,
        ttl: HOP_LIMIT,
        dscp: ERROR_DS_FIELD >> 2,
        ecn: ERROR_DS_FIELD & 0x03,
        ident: 0,
        dont_frag: true,
    }
    .emit(&mut ipv4::Packet::new_unchecked(&mut out[..]));
    let mut icmp = Packet::new_unchecked(&mut out[ipv4::HEADER_LEN..]);
    icmp.set_msg_type(msg_type);
    icmp.set_code(code);
    icmp.set_rest_of_header(rest);
    icmp.data_mut().copy_from_slice(quoted);
    icmp.fill_checksum();
    Some(out)
}

/// A Time Exceeded (type 11, code 0: TTL exceeded in transit) from `router` about the
/// IPv4 packet `offending` (from its IP header, as received), as a complete IPv4 packet
/// of at most 576 bytes. `None` when no error may be sent about it (see the module doc).
pub fn v4_time_exceeded(router: Ipv4Addr, offending: &[u8]) -> Option<Vec<u8>> {
    build_error(router, TYPE_TIME_EXCEEDED, CODE_TTL_EXCEEDED, 0, offending)
}

/// A Destination Unreachable, Fragmentation Needed and DF set (type 3, code 4) from
/// `router` about `offending`, carrying `next_hop_mtu` in the low 16 bits of the rest of
/// the header (RFC 1191 §4), as a complete IPv4 packet of at most 576 bytes. `None` when
/// no error may be sent about it (see the module doc).
pub fn v4_frag_needed(router: Ipv4Addr, next_hop_mtu: u16, offending: &[u8]) -> Option<Vec<u8>> {
    build_error(
        router,
        TYPE_DEST_UNREACHABLE,
        CODE_FRAG_NEEDED,
        u32::from(next_hop_mtu),
        offending,
    )
}

/// The Echo Reply to `request`, a whole IPv4 packet carrying an Echo Request to us, as a
/// complete IPv4 packet: addresses swapped, TTL 64, the request's DSCP with ECN cleared,
/// its identification and Don't Fragment flag, no options, and the ICMP message with
/// type 0, code 0 and identifier, sequence number and data unchanged.
///
/// `None` when `request` is not a valid IPv4 packet (header checksum included), is a
/// fragment, is not ICMP, is not an Echo Request with a valid checksum, comes from a
/// source that does not define a single host, or is addressed to a multicast or the
/// limited broadcast address (answering those needs the interface's unicast address,
/// which the caller has and this function does not).
pub fn v4_echo_reply(request: &[u8]) -> Option<Vec<u8>> {
    let ip = ipv4::Packet::new_checked(request).ok()?;
    if !ip.verify_checksum()
        || ip.more_frags()
        || ip.frag_offset() != 0
        || ip.protocol() != PROTO_ICMP
    {
        return None;
    }
    let (src, dst) = (ip.src_addr(), ip.dst_addr());
    if !is_single_host(src) || !is_single_host(dst) {
        return None;
    }
    let icmp = Packet::new_checked(ip.payload()).ok()?;
    if icmp.msg_type() != TYPE_ECHO_REQUEST || !icmp.verify_checksum() {
        return None;
    }
    let message = icmp.into_inner();
    let mut out = vec![0u8; ipv4::HEADER_LEN + message.len()];
    ipv4::Repr {
        src_addr: dst,
        dst_addr: src,
        protocol: PROTO_ICMP,
        payload_len: message.len(),
        ttl: HOP_LIMIT,
        dscp: ip.dscp(),
        ecn: 0,
        ident: ip.ident(),
        dont_frag: ip.dont_frag(),
    }
    .emit(&mut ipv4::Packet::new_unchecked(&mut out[..]));
    out[ipv4::HEADER_LEN..].copy_from_slice(message);
    let mut reply = Packet::new_unchecked(&mut out[ipv4::HEADER_LEN..]);
    reply.set_msg_type(TYPE_ECHO_REPLY);
    reply.set_code(0);
    reply.fill_checksum();
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    const ROUTER: Ipv4Addr = Ipv4Addr::new(198, 18, 0, 1);
    const HOST: Ipv4Addr = Ipv4Addr::new(198, 18, 0, 10);
    const FAR: Ipv4Addr = Ipv4Addr::new(198, 19, 0, 20);

    /// A UDP packet of `total` bytes from HOST to FAR with the given TTL, plus `pad`
    /// bytes of Ethernet padding.
    fn udp(total: usize, ttl: u8, pad: usize) -> Vec<u8> {
        let mut buf = vec![0u8; total + pad];
        ipv4::Repr {
            src_addr: HOST,
            dst_addr: FAR,
            protocol: ipv4::PROTO_UDP,
            payload_len: total - 20,
            ttl,
            dscp: 46,
            ecn: 0,
            ident: 0x4242,
            dont_frag: true,
        }
        .emit(&mut ipv4::Packet::new_unchecked(&mut buf[..]));
        for (i, b) in buf[20..total].iter_mut().enumerate() {
            *b = i as u8;
        }
        buf[total..].fill(0xee);
        buf
    }

    fn ping(src: Ipv4Addr, dst: Ipv4Addr, msg_type: u8, data_len: usize) -> Vec<u8> {
        let mut buf = vec![0u8; 28 + data_len];
        ipv4::Repr {
            src_addr: src,
            dst_addr: dst,
            protocol: PROTO_ICMP,
            payload_len: 8 + data_len,
            ttl: 63,
            dscp: 10,
            ecn: 2,
            ident: 0x1234,
            dont_frag: true,
        }
        .emit(&mut ipv4::Packet::new_unchecked(&mut buf[..]));
        let mut icmp = Packet::new_unchecked(&mut buf[20..]);
        icmp.set_msg_type(msg_type);
        icmp.set_rest_of_header(0xbeef_0007);
        for (i, b) in icmp.data_mut().iter_mut().enumerate() {
            *b = i as u8 ^ 0x5a;
        }
        icmp.fill_checksum();
        buf
    }

    /// Parse a built packet, check both checksums and return the IPv4 and ICMP views.
    fn parse(bytes: &[u8]) -> (ipv4::Packet<&[u8]>, Packet<&[u8]>) {
        let ip = ipv4::Packet::new_checked(bytes).unwrap();
        assert!(ip.verify_checksum());
        assert_eq!(ip.packet().len(), bytes.len());
        let icmp = Packet::new_checked(&bytes[ip.header_len()..]).unwrap();
        assert!(icmp.verify_checksum());
        (ip, icmp)
    }

    #[test]
    fn time_exceeded_quotes_the_invoking_packet() {
        let offending = udp(100, 1, 0);
        let out = v4_time_exceeded(ROUTER, &offending).unwrap();
        assert_eq!(out.len(), 20 + 8 + 100);
        let (ip, icmp) = parse(&out);
        assert_eq!(ip.src_addr(), ROUTER);
        assert_eq!(ip.dst_addr(), HOST);
        assert_eq!(ip.protocol(), PROTO_ICMP);
        assert_eq!(ip.ttl(), 64);
        assert_eq!(ip.ds_field(), 0xc0);
        assert!(ip.dont_frag());
        assert_eq!((icmp.msg_type(), icmp.code()), (11, 0));
        assert_eq!(icmp.rest_of_header(), 0);
        assert_eq!(icmp.data(), &offending[..]);
        // Ethernet padding after the total length is not quoted.
        let padded = udp(100, 1, 18);
        assert_eq!(v4_time_exceeded(ROUTER, &padded).unwrap(), out);
    }

    #[test]
    fn errors_are_capped_at_576_bytes() {
        let offending = udp(1500, 1, 0);
        let out = v4_time_exceeded(ROUTER, &offending).unwrap();
        assert_eq!(out.len(), 576);
        let (ip, icmp) = parse(&out);
        assert_eq!(ip.total_len(), 576);
        assert_eq!(icmp.data(), &offending[..548]);

        let out = v4_frag_needed(ROUTER, 1400, &offending).unwrap();
        assert_eq!(out.len(), 576);
        let (_, icmp) = parse(&out);
        assert_eq!((icmp.msg_type(), icmp.code()), (3, 4));
        assert_eq!(icmp.rest_of_header(), 1400);
        assert_eq!(icmp.next_hop_mtu(), 1400);
        assert_eq!(&out[24..28], &[0, 0, 0x05, 0x78]);
        assert_eq!(icmp.data(), &offending[..548]);
    }

    #[test]
    fn no_errors_about_errors_fragments_or_bad_sources() {
        // An ICMP error message (Time Exceeded) as the invoking packet.
        let te = v4_time_exceeded(ROUTER, &udp(100, 1, 0)).unwrap();
        assert_eq!(v4_time_exceeded(Ipv4Addr::new(198, 19, 0, 1), &te), None);
        assert_eq!(v4_frag_needed(ROUTER, 1280, &te), None);
        // Unknown ICMP types are treated as errors; echo requests are not.
        assert_eq!(v4_time_exceeded(ROUTER, &ping(HOST, FAR, 42, 4)), None);
        assert!(v4_time_exceeded(ROUTER, &ping(HOST, FAR, 8, 4)).is_some());

        // A non-first fragment; a first fragment is fine.
        let mut frag = udp(100, 1, 0);
        let mut p = ipv4::Packet::new_unchecked(&mut frag[..]);
        p.set_more_frags(true);
        p.fill_checksum();
        assert!(v4_time_exceeded(ROUTER, &frag).is_some());
        let mut p = ipv4::Packet::new_unchecked(&mut frag[..]);
        p.set_frag_offset(1480);
        p.fill_checksum();
        assert_eq!(v4_time_exceeded(ROUTER, &frag), None);

        for src in [
            Ipv4Addr::UNSPECIFIED,
            Ipv4Addr::new(0, 1, 2, 3),
            Ipv4Addr::LOCALHOST,
            Ipv4Addr::new(224, 0, 0, 5),
            Ipv4Addr::new(240, 0, 0, 1),
            Ipv4Addr::BROADCAST,
        ] {
            let mut b = udp(100, 1, 0);
            let mut p = ipv4::Packet::new_unchecked(&mut b[..]);
            p.set_src_addr(src);
            p.fill_checksum();
            assert_eq!(v4_time_exceeded(ROUTER, &b), None, "{src}");
        }
        for dst in [Ipv4Addr::new(239, 1, 1, 1), Ipv4Addr::BROADCAST] {
            let mut b = udp(100, 1, 0);
            let mut p = ipv4::Packet::new_unchecked(&mut b[..]);
            p.set_dst_addr(dst);
            p.fill_checksum();
            assert_eq!(v4_time_exceeded(ROUTER, &b), None, "{dst}");
        }
        // Bad header checksum, truncation, garbage.
        let mut b = udp(100, 1, 0);
        b[8] = 2;
        assert_eq!(v4_time_exceeded(ROUTER, &b), None);
        assert_eq!(v4_time_exceeded(ROUTER, &udp(100, 1, 0)[..99]), None);
        assert_eq!(v4_time_exceeded(ROUTER, &[]), None);
    }

    #[test]
    fn echo_reply_swaps_addresses_and_keeps_the_data() {
        let request = ping(HOST, ROUTER, TYPE_ECHO_REQUEST, 56);
        let reply = v4_echo_reply(&request).unwrap();
        assert_eq!(reply.len(), request.len());
        let (ip, icmp) = parse(&reply);
        assert_eq!(ip.src_addr(), ROUTER);
        assert_eq!(ip.dst_addr(), HOST);
        assert_eq!(ip.ttl(), 64);
        assert_eq!((ip.dscp(), ip.ecn()), (10, 0));
        assert_eq!(ip.ident(), 0x1234);
        assert!(ip.dont_frag());
        assert_eq!((icmp.msg_type(), icmp.code()), (0, 0));
        assert_eq!((icmp.echo_ident(), icmp.echo_seq()), (0xbeef, 7));
        assert_eq!(icmp.data(), &request[28..]);
        // Padding after the request is not echoed.
        let mut padded = request.clone();
        padded.extend_from_slice(&[0; 10]);
        assert_eq!(v4_echo_reply(&padded).unwrap(), reply);
    }

    #[test]
    fn echo_reply_refuses_non_requests() {
        assert_eq!(v4_echo_reply(&ping(HOST, ROUTER, TYPE_ECHO_REPLY, 8)), None);
        assert_eq!(v4_echo_reply(&udp(100, 64, 0)), None);
        assert_eq!(v4_echo_reply(&ping(HOST, Ipv4Addr::BROADCAST, 8, 8)), None);
        assert_eq!(
            v4_echo_reply(&ping(HOST, Ipv4Addr::new(224, 0, 0, 1), 8, 8)),
            None
        );
        assert_eq!(
            v4_echo_reply(&ping(Ipv4Addr::UNSPECIFIED, ROUTER, 8, 8)),
            None
        );
        let mut bad = ping(HOST, ROUTER, TYPE_ECHO_REQUEST, 8);
        bad[30] ^= 1; // ICMP checksum no longer matches
        assert_eq!(v4_echo_reply(&bad), None);
        let mut frag = ping(HOST, ROUTER, TYPE_ECHO_REQUEST, 8);
        let mut p = ipv4::Packet::new_unchecked(&mut frag[..]);
        p.set_more_frags(true);
        p.fill_checksum();
        assert_eq!(v4_echo_reply(&frag), None);
        assert_eq!(
            v4_echo_reply(&ping(HOST, ROUTER, TYPE_ECHO_REQUEST, 0)[..27]),
            None
        );
        // The shortest echo request, with no data, is answered.
        let reply = v4_echo_reply(&ping(HOST, ROUTER, TYPE_ECHO_REQUEST, 0)).unwrap();
        assert_eq!(reply.len(), 28);
    }

    #[test]
    fn view_rejects_short_messages() {
        assert_eq!(
            Packet::new_checked(&[8u8, 0, 0, 0, 0, 0, 0][..]).unwrap_err(),
            Error::Truncated { need: 8, have: 7 }
        );
        assert!(is_error(3) && is_error(11) && is_error(19) && !is_error(8) && !is_error(0));
    }
}
