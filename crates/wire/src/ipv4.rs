//! The IPv4 header of RFC 791 §3.1, with the DS field of RFC 2474/3168.
//!
//! ```text
//!  0                   1                   2                   3
//!  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |Version|  IHL  |   DSCP    |ECN|          Total Length         |  0
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |         Identification        |0|D|M|      Fragment Offset    |  4
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |  Time to Live |    Protocol   |         Header Checksum       |  8
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |                       Source Address                          | 12
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |                    Destination Address                        | 16
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |                    Options (IHL > 5)                          | 20
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! ```
//!
//! The fixed header is [`HEADER_LEN`] = 20 bytes; `IHL` counts 32-bit words of header,
//! options included (5..=15). `Total Length` counts header and payload; a buffer may be
//! longer (Ethernet pads frames to 60 bytes), so [`Packet::payload`] ends at the total
//! length, never at the end of the buffer. `Fragment Offset` counts 8-byte units;
//! [`Packet::frag_offset`] returns bytes. The header checksum is the RFC 1071 checksum of
//! the header alone ([`crate::checksum`]).
//!
//! Setters do not re-validate: after [`Packet::set_total_len`] or
//! [`Packet::set_header_len`] on a checked view, check again before using
//! [`Packet::payload`]. A forwarding router works on the [`Packet`] view: [`Packet::decrement_ttl`] updates
//! the checksum incrementally (RFC 1624) instead of recomputing it. [`Repr`] is for
//! packets a node originates or terminates: it drops options on parse and never writes
//! them, and it does not keep the fragment fields (check [`Packet::more_frags`] and
//! [`Packet::frag_offset`] before treating a payload as a whole upper-layer message).

use std::net::Ipv4Addr;

use crate::checksum;
use crate::{Error, Result};

/// Length of the header without options.
pub const HEADER_LEN: usize = 20;
/// The IP version this module reads and writes.
pub const VERSION: u8 = 4;
/// Protocol number of ICMP (RFC 792).
pub const PROTO_ICMP: u8 = 1;
/// Protocol number of TCP.
pub const PROTO_TCP: u8 = 6;
/// Protocol number of UDP.
pub const PROTO_UDP: u8 = 17;
/// Protocol (next header) number of ICMPv6 (RFC 4443); found in IPv6 headers.
pub const PROTO_ICMPV6: u8 = 58;

mod field {
    pub(super) type Field = core::ops::Range<usize>;
    pub(super) const VER_IHL: usize = 0;
    pub(super) const DS: usize = 1;
    pub(super) const LENGTH: Field = 2..4;
    pub(super) const IDENT: Field = 4..6;
    pub(super) const FLG_OFF: Field = 6..8;
    pub(super) const TTL: usize = 8;
    pub(super) const PROTOCOL: usize = 9;
    pub(super) const CHECKSUM: Field = 10..12;
    pub(super) const SRC: Field = 12..16;
    pub(super) const DST: Field = 16..20;
}

const FLAG_DF: u16 = 0x4000;
const FLAG_MF: u16 = 0x2000;
const OFFSET_MASK: u16 = 0x1fff;

/// A read/write view of an IPv4 packet in a buffer.
#[derive(Debug, Clone)]
pub struct Packet<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Packet<T> {
    /// Wrap a buffer without checks; accessors may panic if it is too short.
    pub const fn new_unchecked(buffer: T) -> Self {
        Self { buffer }
    }

    /// Wrap a buffer and validate it: at least 20 bytes, version 4, a header length of at
    /// least 20 bytes that fits the buffer, and a total length between the header length
    /// and the buffer length. The checksum is not checked (see
    /// [`Packet::verify_checksum`]). Required for untrusted input; when it returns `Ok`,
    /// no accessor panics.
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
        let header_len = self.header_len();
        if header_len < HEADER_LEN {
            return Err(Error::Malformed("IPv4 IHL below 5"));
        }
        if header_len > len {
            return Err(Error::Truncated {
                need: header_len,
                have: len,
            });
        }
        let total_len = usize::from(self.total_len());
        if total_len < header_len {
            return Err(Error::Malformed(
                "IPv4 total length below the header length",
            ));
        }
        if total_len > len {
            return Err(Error::Truncated {
                need: total_len,
                have: len,
            });
        }
        Ok(())
    }

    /// Unwrap the buffer.
    pub fn into_inner(self) -> T {
        self.buffer
    }
    /// The version (4 bits).
    pub fn version(&self) -> u8 {
        self.buffer.as_ref()[field::VER_IHL] >> 4
    }
    /// The header length in bytes, options included: IHL · 4.
    pub fn header_len(&self) -> usize {
        usize::from(self.buffer.as_ref()[field::VER_IHL] & 0x0f) * 4
    }
    /// The DS octet (formerly TOS): DSCP and ECN.
    pub fn ds_field(&self) -> u8 {
        self.buffer.as_ref()[field::DS]
    }
    /// The DSCP, the six high bits of the DS octet.
    pub fn dscp(&self) -> u8 {
        self.ds_field() >> 2
    }
    /// The ECN codepoint, the two low bits of the DS octet.
    pub fn ecn(&self) -> u8 {
        self.ds_field() & 0x03
    }
    /// The total length of header and payload.
    pub fn total_len(&self) -> u16 {
        u16::from_be_bytes(be(&self.buffer.as_ref()[field::LENGTH]))
    }
    /// The identification.
    pub fn ident(&self) -> u16 {
        u16::from_be_bytes(be(&self.buffer.as_ref()[field::IDENT]))
    }
    fn flags_offset(&self) -> u16 {
        u16::from_be_bytes(be(&self.buffer.as_ref()[field::FLG_OFF]))
    }
    /// The Don't Fragment flag.
    pub fn dont_frag(&self) -> bool {
        self.flags_offset() & FLAG_DF != 0
    }
    /// The More Fragments flag.
    pub fn more_frags(&self) -> bool {
        self.flags_offset() & FLAG_MF != 0
    }
    /// The fragment offset in bytes (the field counts 8-byte units).
    pub fn frag_offset(&self) -> u16 {
        (self.flags_offset() & OFFSET_MASK) << 3
    }
    /// The time to live.
    pub fn ttl(&self) -> u8 {
        self.buffer.as_ref()[field::TTL]
    }
    /// The protocol of the payload (the IPv6 name, "next header", is used too).
    pub fn next_header(&self) -> u8 {
        self.buffer.as_ref()[field::PROTOCOL]
    }
    /// The protocol of the payload; the same as [`Packet::next_header`].
    pub fn protocol(&self) -> u8 {
        self.next_header()
    }
    /// The header checksum as stored.
    pub fn checksum(&self) -> u16 {
        u16::from_be_bytes(be(&self.buffer.as_ref()[field::CHECKSUM]))
    }
    /// The source address.
    pub fn src_addr(&self) -> Ipv4Addr {
        Ipv4Addr::from(be::<4>(&self.buffer.as_ref()[field::SRC]))
    }
    /// The destination address.
    pub fn dst_addr(&self) -> Ipv4Addr {
        Ipv4Addr::from(be::<4>(&self.buffer.as_ref()[field::DST]))
    }
    /// The whole header, options included.
    pub fn header(&self) -> &[u8] {
        &self.buffer.as_ref()[..self.header_len()]
    }
    /// The options (empty when IHL is 5).
    pub fn options(&self) -> &[u8] {
        &self.buffer.as_ref()[HEADER_LEN..self.header_len()]
    }
    /// The payload, from the end of the header to the total length (bytes beyond the
    /// total length, such as Ethernet padding, are excluded).
    pub fn payload(&self) -> &[u8] {
        &self.buffer.as_ref()[self.header_len()..usize::from(self.total_len())]
    }
    /// The packet, header and payload, up to the total length.
    pub fn packet(&self) -> &[u8] {
        &self.buffer.as_ref()[..usize::from(self.total_len())]
    }
    /// Whether the header checksum is correct.
    pub fn verify_checksum(&self) -> bool {
        checksum::internet(self.header()) == 0
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Packet<T> {
    /// Set the version (4 bits).
    pub fn set_version(&mut self, version: u8) {
        let b = &mut self.buffer.as_mut()[field::VER_IHL];
        *b = (*b & 0x0f) | (version << 4);
    }
    /// Set the header length in bytes (a multiple of 4, 20..=60).
    pub fn set_header_len(&mut self, len: usize) {
        let b = &mut self.buffer.as_mut()[field::VER_IHL];
        *b = (*b & 0xf0) | ((len / 4) as u8 & 0x0f);
    }
    /// Set the DS octet.
    pub fn set_ds_field(&mut self, ds: u8) {
        self.buffer.as_mut()[field::DS] = ds;
    }
    /// Set the DSCP (6 bits), keeping the ECN bits.
    pub fn set_dscp(&mut self, dscp: u8) {
        let ds = (self.ds_field() & 0x03) | (dscp << 2);
        self.set_ds_field(ds);
    }
    /// Set the ECN codepoint (2 bits), keeping the DSCP.
    pub fn set_ecn(&mut self, ecn: u8) {
        let ds = (self.ds_field() & 0xfc) | (ecn & 0x03);
        self.set_ds_field(ds);
    }
    /// Set the total length.
    pub fn set_total_len(&mut self, len: u16) {
        self.buffer.as_mut()[field::LENGTH].copy_from_slice(&len.to_be_bytes());
    }
    /// Set the identification.
    pub fn set_ident(&mut self, ident: u16) {
        self.buffer.as_mut()[field::IDENT].copy_from_slice(&ident.to_be_bytes());
    }
    fn set_flags_offset(&mut self, value: u16) {
        self.buffer.as_mut()[field::FLG_OFF].copy_from_slice(&value.to_be_bytes());
    }
    /// Set the Don't Fragment flag.
    pub fn set_dont_frag(&mut self, on: bool) {
        let v = self.flags_offset();
        self.set_flags_offset(if on { v | FLAG_DF } else { v & !FLAG_DF });
    }
    /// Set the More Fragments flag.
    pub fn set_more_frags(&mut self, on: bool) {
        let v = self.flags_offset();
        self.set_flags_offset(if on { v | FLAG_MF } else { v & !FLAG_MF });
    }
    /// Set the fragment offset in bytes (a multiple of 8; the low 3 bits are dropped).
    pub fn set_frag_offset(&mut self, offset: u16) {
        let v = self.flags_offset();
        self.set_flags_offset((v & !OFFSET_MASK) | (offset >> 3));
    }
    /// Set the time to live (the checksum is not updated; see
    /// [`Packet::decrement_ttl`]).
    pub fn set_ttl(&mut self, ttl: u8) {
        self.buffer.as_mut()[field::TTL] = ttl;
    }
    /// Set the protocol of the payload.
    pub fn set_next_header(&mut self, protocol: u8) {
        self.buffer.as_mut()[field::PROTOCOL] = protocol;
    }
    /// Set the protocol of the payload; the same as [`Packet::set_next_header`].
    pub fn set_protocol(&mut self, protocol: u8) {
        self.set_next_header(protocol);
    }
    /// Set the header checksum.
    pub fn set_checksum(&mut self, checksum: u16) {
        self.buffer.as_mut()[field::CHECKSUM].copy_from_slice(&checksum.to_be_bytes());
    }
    /// Set the source address.
    pub fn set_src_addr(&mut self, addr: Ipv4Addr) {
        self.buffer.as_mut()[field::SRC].copy_from_slice(&addr.octets());
    }
    /// Set the destination address.
    pub fn set_dst_addr(&mut self, addr: Ipv4Addr) {
        self.buffer.as_mut()[field::DST].copy_from_slice(&addr.octets());
    }
    /// Compute the header checksum over the header (options included, as given by the
    /// IHL) and store it.
    pub fn fill_checksum(&mut self) {
        self.set_checksum(0);
        let c = checksum::internet(self.header());
        self.set_checksum(c);
    }
    /// The options, mutably.
    pub fn options_mut(&mut self) -> &mut [u8] {
        let range = HEADER_LEN..self.header_len();
        &mut self.buffer.as_mut()[range]
    }
    /// The payload, mutably, up to the total length.
    pub fn payload_mut(&mut self) -> &mut [u8] {
        let range = self.header_len()..usize::from(self.total_len());
        &mut self.buffer.as_mut()[range]
    }
    /// Decrement the TTL by one and update the checksum incrementally with RFC 1624
    /// eqn. 3 ([`checksum::update_u16`]), as a forwarding router does (RFC 1812
    /// §5.3.1). Returns the new TTL. A TTL of 0 stays 0 and nothing changes: the caller
    /// must drop a packet whose TTL was 0 or 1 on arrival and send Time Exceeded.
    ///
    /// The TTL shares its 16-bit checksum word with the protocol octet (bytes 8–9), so
    /// the update is of the word `TTL << 8 | protocol`. A correct checksum stays correct;
    /// an incorrect one stays incorrect.
    pub fn decrement_ttl(&mut self) -> u8 {
        let ttl = self.ttl();
        if ttl == 0 {
            return 0;
        }
        let protocol = u16::from(self.next_header());
        let old = u16::from(ttl) << 8 | protocol;
        let new = u16::from(ttl - 1) << 8 | protocol;
        let c = checksum::update_u16(self.checksum(), old, new);
        self.set_ttl(ttl - 1);
        self.set_checksum(c);
        ttl - 1
    }
}

fn be<const N: usize>(s: &[u8]) -> [u8; N] {
    let mut out = [0u8; N];
    out.copy_from_slice(s);
    out
}

/// The meaning of an IPv4 header without options, for packets a node originates or
/// terminates.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Repr {
    /// Source address.
    pub src_addr: Ipv4Addr,
    /// Destination address.
    pub dst_addr: Ipv4Addr,
    /// Protocol of the payload (`PROTO_*`).
    pub protocol: u8,
    /// Length of the payload (total length minus the header length).
    pub payload_len: usize,
    /// Time to live.
    pub ttl: u8,
    /// DSCP, 0..=63.
    pub dscp: u8,
    /// ECN codepoint, 0..=3.
    pub ecn: u8,
    /// Identification.
    pub ident: u16,
    /// Don't Fragment.
    pub dont_frag: bool,
}

impl Repr {
    /// Parse a packet (checked again here, so an unchecked view is fine). Fails on a
    /// header checksum error with [`Error::Malformed`]. Options are allowed and skipped;
    /// fragment fields are not kept.
    pub fn parse<T: AsRef<[u8]>>(packet: &Packet<T>) -> Result<Self> {
        packet.check()?;
        if !packet.verify_checksum() {
            return Err(Error::Malformed("IPv4 header checksum"));
        }
        Ok(Self {
            src_addr: packet.src_addr(),
            dst_addr: packet.dst_addr(),
            protocol: packet.next_header(),
            payload_len: packet.payload().len(),
            ttl: packet.ttl(),
            dscp: packet.dscp(),
            ecn: packet.ecn(),
            ident: packet.ident(),
            dont_frag: packet.dont_frag(),
        })
    }

    /// Bytes needed to emit this header: [`HEADER_LEN`] (no options).
    pub const fn buffer_len(&self) -> usize {
        HEADER_LEN
    }

    /// Write the header, without options, into the front of the view's buffer and fill
    /// the checksum; the payload goes at `buffer[HEADER_LEN..]`. DSCP and ECN are masked
    /// to 6 and 2 bits, the fragment offset and More Fragments are 0.
    ///
    /// Panics if the buffer is shorter than [`Repr::buffer_len`]; the total length
    /// saturates at 65535 when `payload_len` exceeds 65515.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, packet: &mut Packet<T>) {
        packet.set_version(VERSION);
        packet.set_header_len(HEADER_LEN);
        packet.set_ds_field((self.dscp << 2) | (self.ecn & 0x03));
        let total = u16::try_from(HEADER_LEN + self.payload_len).unwrap_or(u16::MAX);
        packet.set_total_len(total);
        packet.set_ident(self.ident);
        packet.set_flags_offset(if self.dont_frag { FLAG_DF } else { 0 });
        packet.set_ttl(self.ttl);
        packet.set_next_header(self.protocol);
        packet.set_src_addr(self.src_addr);
        packet.set_dst_addr(self.dst_addr);
        packet.fill_checksum();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The IPv4 header of Wikipedia's checksum example ("IPv4 header checksum"):
    /// 192.168.0.1 → 192.168.0.199, UDP, TTL 64, DF, total length 115, checksum b861.
    const WIKI: [u8; 20] = [
        0x45, 0x00, 0x00, 0x73, 0x00, 0x00, 0x40, 0x00, 0x40, 0x11, 0xb8, 0x61, 0xc0, 0xa8, 0x00,
        0x01, 0xc0, 0xa8, 0x00, 0xc7,
    ];

    fn wiki_packet() -> Vec<u8> {
        let mut v = WIKI.to_vec();
        v.resize(115, 0xaa);
        v
    }

    #[test]
    fn parses_captured_header() {
        let bytes = wiki_packet();
        let p = Packet::new_checked(&bytes[..]).unwrap();
        assert_eq!(p.version(), 4);
        assert_eq!(p.header_len(), 20);
        assert_eq!((p.dscp(), p.ecn()), (0, 0));
        assert_eq!(p.total_len(), 115);
        assert_eq!(p.ident(), 0);
        assert!(p.dont_frag() && !p.more_frags());
        assert_eq!(p.frag_offset(), 0);
        assert_eq!(p.ttl(), 64);
        assert_eq!(p.protocol(), PROTO_UDP);
        assert_eq!(p.checksum(), 0xb861);
        assert_eq!(p.src_addr(), Ipv4Addr::new(192, 168, 0, 1));
        assert_eq!(p.dst_addr(), Ipv4Addr::new(192, 168, 0, 199));
        assert!(p.options().is_empty());
        assert_eq!(p.payload().len(), 95);
        assert!(p.verify_checksum());
        // Recomputing gives the same checksum.
        let mut copy = bytes.clone();
        let mut q = Packet::new_unchecked(&mut copy[..]);
        q.fill_checksum();
        assert_eq!(q.checksum(), 0xb861);

        let r = Repr::parse(&p).unwrap();
        assert_eq!(
            r,
            Repr {
                src_addr: Ipv4Addr::new(192, 168, 0, 1),
                dst_addr: Ipv4Addr::new(192, 168, 0, 199),
                protocol: PROTO_UDP,
                payload_len: 95,
                ttl: 64,
                dscp: 0,
                ecn: 0,
                ident: 0,
                dont_frag: true,
            }
        );
        let mut out = [0u8; 20];
        r.emit(&mut Packet::new_unchecked(&mut out[..]));
        assert_eq!(out, WIKI);
    }

    #[test]
    fn decrement_ttl_keeps_the_checksum_valid() {
        let mut bytes = wiki_packet();
        let mut p = Packet::new_checked(&mut bytes[..]).unwrap();
        for expected in (0..64).rev() {
            assert_eq!(p.decrement_ttl(), expected);
            assert!(p.verify_checksum(), "ttl {expected}");
            let incremental = p.checksum();
            p.fill_checksum();
            assert_eq!(p.checksum(), incremental);
        }
        assert_eq!(p.decrement_ttl(), 0);
        assert_eq!(p.ttl(), 0);
        assert!(p.verify_checksum());
    }

    #[test]
    fn payload_excludes_ethernet_padding() {
        // A 28-byte ICMP-sized packet padded to a 46-byte Ethernet payload.
        let repr = Repr {
            src_addr: Ipv4Addr::new(198, 18, 0, 1),
            dst_addr: Ipv4Addr::new(198, 19, 0, 1),
            protocol: PROTO_ICMP,
            payload_len: 8,
            ttl: 64,
            dscp: 46,
            ecn: 1,
            ident: 0x1234,
            dont_frag: false,
        };
        let mut buf = vec![0u8; 46];
        repr.emit(&mut Packet::new_unchecked(&mut buf[..]));
        buf[20..28].copy_from_slice(&[8, 0, 0xf7, 0xff, 0, 0, 0, 0]);
        buf[28..].fill(0xee);
        let p = Packet::new_checked(&buf[..]).unwrap();
        assert_eq!(p.payload(), &[8, 0, 0xf7, 0xff, 0, 0, 0, 0]);
        assert_eq!(p.packet().len(), 28);
        assert_eq!(p.ds_field(), 46 << 2 | 1);
        assert_eq!(Repr::parse(&p).unwrap(), repr);
        let mut buf2 = buf.clone();
        let mut q = Packet::new_checked(&mut buf2[..]).unwrap();
        q.payload_mut().fill(1);
        assert!(buf2[28..].iter().all(|&b| b == 0xee));
    }

    #[test]
    fn options_are_exposed_and_skipped_by_repr() {
        let mut buf = [0u8; 28];
        buf[0] = 0x46; // IHL 6
        buf[3] = 28;
        buf[8] = 1;
        buf[9] = PROTO_TCP;
        buf[20..24].copy_from_slice(&[0x94, 0x04, 0, 0]); // router alert
        let mut p = Packet::new_checked(&mut buf[..]).unwrap();
        p.fill_checksum();
        assert_eq!(p.header_len(), 24);
        assert_eq!(p.options(), &[0x94, 0x04, 0, 0]);
        assert_eq!(p.payload().len(), 4);
        let r = Repr::parse(&p).unwrap();
        assert_eq!(r.payload_len, 4);
        assert_eq!(r.protocol, PROTO_TCP);
    }

    #[test]
    fn fragment_fields() {
        let mut buf = wiki_packet();
        let mut p = Packet::new_unchecked(&mut buf[..]);
        p.set_dont_frag(false);
        p.set_more_frags(true);
        p.set_frag_offset(1480);
        assert_eq!(&buf[6..8], &[0x20, 185]);
        let p = Packet::new_unchecked(&buf[..]);
        assert!(p.more_frags() && !p.dont_frag());
        assert_eq!(p.frag_offset(), 1480);
    }

    #[test]
    fn rejects_truncation_bad_ihl_total_len_version_and_checksum() {
        let bytes = wiki_packet();
        assert_eq!(
            Packet::new_checked(&bytes[..19]).unwrap_err(),
            Error::Truncated { need: 20, have: 19 }
        );
        // The buffer ends before the total length.
        assert_eq!(
            Packet::new_checked(&bytes[..114]).unwrap_err(),
            Error::Truncated {
                need: 115,
                have: 114
            }
        );
        let mut b = bytes.clone();
        b[0] = 0x44; // IHL 4
        assert!(matches!(
            Packet::new_checked(&b[..]),
            Err(Error::Malformed(_))
        ));
        let mut b = bytes.clone();
        b[0] = 0x4f; // IHL 15 = 60 bytes, longer than the 40-byte buffer
        assert_eq!(
            Packet::new_checked(&b[..40]).unwrap_err(),
            Error::Truncated { need: 60, have: 40 }
        );
        let mut b = bytes.clone();
        b[2] = 0;
        b[3] = 19; // total length below the header
        assert!(matches!(
            Packet::new_checked(&b[..]),
            Err(Error::Malformed(_))
        ));
        let mut b = bytes.clone();
        b[0] = 0x65;
        assert_eq!(
            Packet::new_checked(&b[..]).unwrap_err(),
            Error::UnsupportedVersion(6)
        );
        let mut b = bytes.clone();
        b[8] = 63; // TTL changed without the checksum
        let p = Packet::new_checked(&b[..]).unwrap();
        assert!(!p.verify_checksum());
        assert!(matches!(Repr::parse(&p), Err(Error::Malformed(_))));
    }
}
