//! The IPv6 fixed header of RFC 8200 §3, with the DS field of RFC 2474/3168 in the
//! traffic class and the flow label of RFC 6437.
//!
//! ```text
//!  0                   1                   2                   3
//!  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |Version| Traffic Class |              Flow Label               |  0
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |         Payload Length        |  Next Header  |   Hop Limit   |  4
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |                                                               |  8
//! +                         Source Address                        +
//! |                            (128 bits)                         |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |                                                               | 24
//! +                      Destination Address                      +
//! |                            (128 bits)                         |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+ 40
//! ```
//!
//! The header is [`HEADER_LEN`] = 40 bytes and has no checksum. The traffic class is the
//! DS octet (DSCP in its six high bits, ECN in the two low). `Payload Length` counts
//! everything after the fixed header, extension headers included; a buffer may be longer
//! (Ethernet padding), so [`Packet::payload`] ends at `40 + payload_len`.
//!
//! Jumbograms (RFC 2675: payload length 0 and a Hop-by-Hop header carrying the real
//! length) are not supported: a payload length of 0 with next header 0 (Hop-by-Hop) is
//! an [`Error::Malformed`]. A payload length of 0 with any other next header is an
//! ordinary empty payload (next header 59, "No Next Header", for example).
//!
//! Extension headers are not parsed here: [`Packet::next_header`] is the fixed header's.

use std::net::Ipv6Addr;

use crate::{Error, Result};

/// Length of the fixed header.
pub const HEADER_LEN: usize = 40;
/// The IP version this module reads and writes.
pub const VERSION: u8 = 6;
/// Next header value of the Hop-by-Hop Options header.
pub const NEXT_HOP_BY_HOP: u8 = 0;
/// Next header value of the Routing header.
pub const NEXT_ROUTING: u8 = 43;
/// Next header value of the Fragment header.
pub const NEXT_FRAGMENT: u8 = 44;
/// Next header value of the Authentication Header.
pub const NEXT_AUTH: u8 = 51;
/// Next header value of ICMPv6.
pub const NEXT_ICMPV6: u8 = 58;
/// Next header value "No Next Header".
pub const NEXT_NONE: u8 = 59;
/// Next header value of the Destination Options header.
pub const NEXT_DEST_OPTS: u8 = 60;

mod field {
    pub(super) type Field = core::ops::Range<usize>;
    pub(super) const VER_TC_FLOW: Field = 0..4;
    pub(super) const LENGTH: Field = 4..6;
    pub(super) const NXT_HDR: usize = 6;
    pub(super) const HOP_LIMIT: usize = 7;
    pub(super) const SRC: Field = 8..24;
    pub(super) const DST: Field = 24..40;
}

/// The solicited-node multicast address of `addr` (RFC 4291 §2.7.1):
/// ff02::1:ffXX:XXXX with the low 24 bits of `addr`.
pub fn solicited_node(addr: &Ipv6Addr) -> Ipv6Addr {
    let o = addr.octets();
    Ipv6Addr::from([
        0xff, 0x02, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x01, 0xff, o[13], o[14], o[15],
    ])
}

/// A read/write view of an IPv6 packet in a buffer.
#[derive(Debug, Clone)]
pub struct Packet<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Packet<T> {
    /// Wrap a buffer without checks; accessors may panic if it is too short.
    pub const fn new_unchecked(buffer: T) -> Self {
        Self { buffer }
    }

    /// Wrap a buffer and validate it: at least 40 bytes, version 6, room for
    /// `40 + payload_len` bytes, and not a jumbogram. Required for untrusted input; when
    /// it returns `Ok`, no accessor panics.
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
        if self.version() != VERSION {
            return Err(Error::UnsupportedVersion(self.version()));
        }
        if self.payload_len() == 0 && self.next_header() == NEXT_HOP_BY_HOP {
            return Err(Error::Malformed("IPv6 jumbogram (payload length 0)"));
        }
        let total = HEADER_LEN + usize::from(self.payload_len());
        if total > len {
            return Err(Error::Truncated {
                need: total,
                have: len,
            });
        }
        Ok(())
    }

    fn first_word(&self) -> u32 {
        u32::from_be_bytes(be(&self.buffer.as_ref()[field::VER_TC_FLOW]))
    }

    /// Unwrap the buffer.
    pub fn into_inner(self) -> T {
        self.buffer
    }
    /// The version (4 bits).
    pub fn version(&self) -> u8 {
        self.buffer.as_ref()[0] >> 4
    }
    /// The traffic class octet: DSCP and ECN.
    pub fn traffic_class(&self) -> u8 {
        (self.first_word() >> 20) as u8
    }
    /// The DSCP, the six high bits of the traffic class.
    pub fn dscp(&self) -> u8 {
        self.traffic_class() >> 2
    }
    /// The ECN codepoint, the two low bits of the traffic class.
    pub fn ecn(&self) -> u8 {
        self.traffic_class() & 0x03
    }
    /// The flow label (20 bits).
    pub fn flow_label(&self) -> u32 {
        self.first_word() & 0x000f_ffff
    }
    /// The payload length: bytes after the fixed header, extension headers included.
    pub fn payload_len(&self) -> u16 {
        u16::from_be_bytes(be(&self.buffer.as_ref()[field::LENGTH]))
    }
    /// The next header (the first extension header or the upper-layer protocol).
    pub fn next_header(&self) -> u8 {
        self.buffer.as_ref()[field::NXT_HDR]
    }
    /// The hop limit.
    pub fn hop_limit(&self) -> u8 {
        self.buffer.as_ref()[field::HOP_LIMIT]
    }
    /// The source address.
    pub fn src_addr(&self) -> Ipv6Addr {
        Ipv6Addr::from(be::<16>(&self.buffer.as_ref()[field::SRC]))
    }
    /// The destination address.
    pub fn dst_addr(&self) -> Ipv6Addr {
        Ipv6Addr::from(be::<16>(&self.buffer.as_ref()[field::DST]))
    }
    /// The payload, `payload_len` bytes after the fixed header (trailing bytes of the
    /// buffer, such as Ethernet padding, are excluded).
    pub fn payload(&self) -> &[u8] {
        &self.buffer.as_ref()[HEADER_LEN..HEADER_LEN + usize::from(self.payload_len())]
    }
    /// The packet, header and payload, up to `40 + payload_len`.
    pub fn packet(&self) -> &[u8] {
        &self.buffer.as_ref()[..HEADER_LEN + usize::from(self.payload_len())]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Packet<T> {
    fn set_first_word(&mut self, word: u32) {
        self.buffer.as_mut()[field::VER_TC_FLOW].copy_from_slice(&word.to_be_bytes());
    }
    /// Set the version (4 bits).
    pub fn set_version(&mut self, version: u8) {
        let w = self.first_word();
        self.set_first_word((w & 0x0fff_ffff) | u32::from(version & 0x0f) << 28);
    }
    /// Set the traffic class octet.
    pub fn set_traffic_class(&mut self, tc: u8) {
        let w = self.first_word();
        self.set_first_word((w & 0xf00f_ffff) | u32::from(tc) << 20);
    }
    /// Set the DSCP (6 bits), keeping the ECN bits.
    pub fn set_dscp(&mut self, dscp: u8) {
        let tc = (self.traffic_class() & 0x03) | (dscp << 2);
        self.set_traffic_class(tc);
    }
    /// Set the ECN codepoint (2 bits), keeping the DSCP.
    pub fn set_ecn(&mut self, ecn: u8) {
        let tc = (self.traffic_class() & 0xfc) | (ecn & 0x03);
        self.set_traffic_class(tc);
    }
    /// Set the flow label (the low 20 bits of `label`).
    pub fn set_flow_label(&mut self, label: u32) {
        let w = self.first_word();
        self.set_first_word((w & 0xfff0_0000) | (label & 0x000f_ffff));
    }
    /// Set the payload length.
    pub fn set_payload_len(&mut self, len: u16) {
        self.buffer.as_mut()[field::LENGTH].copy_from_slice(&len.to_be_bytes());
    }
    /// Set the next header.
    pub fn set_next_header(&mut self, next_header: u8) {
        self.buffer.as_mut()[field::NXT_HDR] = next_header;
    }
    /// Set the hop limit.
    pub fn set_hop_limit(&mut self, hop_limit: u8) {
        self.buffer.as_mut()[field::HOP_LIMIT] = hop_limit;
    }
    /// Decrement the hop limit by one, as a forwarding router does (RFC 8200 §3), and
    /// return the new value. A hop limit of 0 stays 0: the caller must drop a packet whose
    /// hop limit was 0 or 1 on arrival and send Time Exceeded. (IPv6 has no header
    /// checksum to update.)
    pub fn decrement_hop_limit(&mut self) -> u8 {
        let h = self.hop_limit().saturating_sub(1);
        self.set_hop_limit(h);
        h
    }
    /// Set the source address.
    pub fn set_src_addr(&mut self, addr: Ipv6Addr) {
        self.buffer.as_mut()[field::SRC].copy_from_slice(&addr.octets());
    }
    /// Set the destination address.
    pub fn set_dst_addr(&mut self, addr: Ipv6Addr) {
        self.buffer.as_mut()[field::DST].copy_from_slice(&addr.octets());
    }
    /// The payload, mutably, up to `payload_len`.
    pub fn payload_mut(&mut self) -> &mut [u8] {
        let end = HEADER_LEN + usize::from(self.payload_len());
        &mut self.buffer.as_mut()[HEADER_LEN..end]
    }
}

fn be<const N: usize>(s: &[u8]) -> [u8; N] {
    let mut out = [0u8; N];
    out.copy_from_slice(s);
    out
}

/// The meaning of an IPv6 fixed header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Repr {
    /// Source address.
    pub src_addr: Ipv6Addr,
    /// Destination address.
    pub dst_addr: Ipv6Addr,
    /// Next header (first extension header or upper-layer protocol).
    pub next_header: u8,
    /// Payload length, extension headers included.
    pub payload_len: usize,
    /// Hop limit.
    pub hop_limit: u8,
    /// Traffic class octet (DSCP << 2 | ECN).
    pub traffic_class: u8,
    /// Flow label, 20 bits.
    pub flow_label: u32,
}

impl Repr {
    /// Parse a packet (checked again here, so an unchecked view is fine).
    pub fn parse<T: AsRef<[u8]>>(packet: &Packet<T>) -> Result<Self> {
        packet.check()?;
        Ok(Self {
            src_addr: packet.src_addr(),
            dst_addr: packet.dst_addr(),
            next_header: packet.next_header(),
            payload_len: usize::from(packet.payload_len()),
            hop_limit: packet.hop_limit(),
            traffic_class: packet.traffic_class(),
            flow_label: packet.flow_label(),
        })
    }

    /// Bytes needed to emit this header: [`HEADER_LEN`].
    pub const fn buffer_len(&self) -> usize {
        HEADER_LEN
    }

    /// Write the fixed header into the front of the view's buffer; the payload goes at
    /// `buffer[HEADER_LEN..]`. The flow label is masked to 20 bits.
    ///
    /// Panics if the buffer is shorter than [`Repr::buffer_len`]; the payload length
    /// saturates at 65535 (no jumbograms).
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, packet: &mut Packet<T>) {
        packet.set_first_word(
            u32::from(VERSION) << 28
                | u32::from(self.traffic_class) << 20
                | (self.flow_label & 0x000f_ffff),
        );
        packet.set_payload_len(u16::try_from(self.payload_len).unwrap_or(u16::MAX));
        packet.set_next_header(self.next_header);
        packet.set_hop_limit(self.hop_limit);
        packet.set_src_addr(self.src_addr);
        packet.set_dst_addr(self.dst_addr);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn addr(s: &str) -> Ipv6Addr {
        s.parse().unwrap()
    }

    fn repr() -> Repr {
        Repr {
            src_addr: addr("2001:2::1"),
            dst_addr: addr("2001:2:0:1::2"),
            next_header: 17,
            payload_len: 8,
            hop_limit: 64,
            traffic_class: 0xb8,
            flow_label: 0x12345,
        }
    }

    #[test]
    fn traffic_class_and_flow_label_bit_positions() {
        let mut buf = [0u8; 48];
        repr().emit(&mut Packet::new_unchecked(&mut buf[..]));
        // Version 6, TC 0xb8 straddling the first two octets, flow label 0x12345.
        assert_eq!(&buf[..4], &[0x6b, 0x81, 0x23, 0x45]);
        assert_eq!(&buf[4..8], &[0x00, 0x08, 17, 64]);
        assert_eq!(&buf[8..24], &addr("2001:2::1").octets());
        let p = Packet::new_checked(&buf[..]).unwrap();
        assert_eq!(p.version(), 6);
        assert_eq!(p.traffic_class(), 0xb8);
        assert_eq!(p.dscp(), 46); // EF
        assert_eq!(p.ecn(), 0);
        assert_eq!(p.flow_label(), 0x12345);
        assert_eq!(Repr::parse(&p).unwrap(), repr());

        let mut q = Packet::new_unchecked(&mut buf[..]);
        q.set_ecn(3);
        assert_eq!(q.traffic_class(), 0xbb);
        q.set_dscp(0);
        assert_eq!(q.traffic_class(), 0x03);
        q.set_flow_label(0xfffff);
        assert_eq!(q.traffic_class(), 0x03);
        assert_eq!(q.version(), 6);
        q.set_traffic_class(0xff);
        assert_eq!(q.flow_label(), 0xfffff);
        assert_eq!(&buf[..4], &[0x6f, 0xff, 0xff, 0xff]);
    }

    #[test]
    fn payload_is_bounded_by_payload_len() {
        let mut buf = [0u8; 60];
        repr().emit(&mut Packet::new_unchecked(&mut buf[..]));
        buf[40..48].fill(7);
        let mut p = Packet::new_checked(&mut buf[..]).unwrap();
        assert_eq!(p.payload(), &[7; 8]);
        assert_eq!(p.packet().len(), 48);
        assert_eq!(p.decrement_hop_limit(), 63);
        p.set_hop_limit(0);
        assert_eq!(p.decrement_hop_limit(), 0);
        p.payload_mut().fill(1);
        assert!(buf[48..].iter().all(|&b| b == 0));
    }

    #[test]
    fn rejects_truncation_version_and_jumbograms() {
        let mut buf = [0u8; 48];
        repr().emit(&mut Packet::new_unchecked(&mut buf[..]));
        assert_eq!(
            Packet::new_checked(&buf[..39]).unwrap_err(),
            Error::Truncated { need: 40, have: 39 }
        );
        assert_eq!(
            Packet::new_checked(&buf[..47]).unwrap_err(),
            Error::Truncated { need: 48, have: 47 }
        );
        let mut b = buf;
        b[0] = 0x4b;
        assert_eq!(
            Packet::new_checked(&b[..]).unwrap_err(),
            Error::UnsupportedVersion(4)
        );
        let mut b = buf;
        b[4] = 0;
        b[5] = 0;
        b[6] = NEXT_HOP_BY_HOP;
        assert!(matches!(
            Packet::new_checked(&b[..]),
            Err(Error::Malformed(_))
        ));
        b[6] = NEXT_NONE;
        assert!(Packet::new_checked(&b[..]).unwrap().payload().is_empty());
    }

    #[test]
    fn solicited_node_address() {
        assert_eq!(
            solicited_node(&addr("2001:2::12:3456:789a")),
            addr("ff02::1:ff56:789a")
        );
        assert_eq!(solicited_node(&addr("2001:2::1")), addr("ff02::1:ff00:1"));
    }
}
