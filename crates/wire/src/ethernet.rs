//! Ethernet II frames (IEEE 802.3 with an EtherType, RFC 894), without the preamble, the
//! start-of-frame delimiter and the frame check sequence, which the NIC or TAP device
//! handles.
//!
//! ```text
//!  0                   1                   2                   3
//!  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |                      destination address                      |  0
//! +                               +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |                               |                               |  4
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+        source address         +
//! |                                                               |  8
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |           EtherType           |            payload ...        | 12
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! ```
//!
//! The header is [`HEADER_LEN`] = 14 bytes. The payload is everything after it, including
//! any padding to the 60-byte minimum frame: upper layers bound their own length (the
//! IPv4 total length, the IPv6 payload length).
//!
//! - Addresses ([`Address`]) are 48-bit MACs; the least significant bit of the first
//!   octet marks a group (multicast) address, all ones is the broadcast address.
//!   IPv6 multicast maps to 33:33 plus the low 32 bits of the group (RFC 2464 §7).
//! - [`EtherType`] names IPv4 (0x0800), ARP (0x0806) and IPv6 (0x86DD).
//!
//! No VLAN tags: an IEEE 802.1Q frame parses with [`EtherType::Unknown`]`(0x8100)` and a
//! payload that starts with the tag control information; dualperf's lab links are
//! untagged. Values below 0x0600 (802.3 length fields) are likewise `Unknown`.

use core::fmt;
use core::str::FromStr;
use std::net::{Ipv4Addr, Ipv6Addr};

use crate::{Error, Result};

/// Length of the Ethernet II header.
pub const HEADER_LEN: usize = 14;

/// A 48-bit Ethernet (MAC) address.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Address(pub [u8; 6]);

impl Address {
    /// The broadcast address, ff:ff:ff:ff:ff:ff.
    pub const BROADCAST: Self = Self([0xff; 6]);

    /// The address from the first six octets of `data`; panics if `data` is shorter.
    pub fn from_bytes(data: &[u8]) -> Self {
        let mut a = [0u8; 6];
        a.copy_from_slice(&data[..6]);
        Self(a)
    }

    /// The six octets.
    pub const fn as_bytes(&self) -> &[u8; 6] {
        &self.0
    }

    /// Whether this is the broadcast address.
    pub fn is_broadcast(&self) -> bool {
        *self == Self::BROADCAST
    }

    /// Whether this is a group address (the I/G bit, the least significant bit of the
    /// first octet, is set); the broadcast address is one too.
    pub const fn is_multicast(&self) -> bool {
        self.0[0] & 0x01 != 0
    }

    /// Whether this is an individual (unicast) address.
    pub const fn is_unicast(&self) -> bool {
        !self.is_multicast()
    }

    /// The Ethernet group address of an IPv6 multicast address (RFC 2464 §7): 33:33
    /// followed by the low 32 bits of `addr`. `addr` is not checked to be multicast.
    pub fn from_ipv6_multicast(addr: &Ipv6Addr) -> Self {
        let o = addr.octets();
        Self([0x33, 0x33, o[12], o[13], o[14], o[15]])
    }

    /// The Ethernet group address of an IPv4 multicast address (RFC 1112 §6.4):
    /// 01:00:5e followed by the low 23 bits of `addr`. `addr` is not checked to be
    /// multicast.
    pub fn from_ipv4_multicast(addr: &Ipv4Addr) -> Self {
        let o = addr.octets();
        Self([0x01, 0x00, 0x5e, o[1] & 0x7f, o[2], o[3]])
    }
}

impl fmt::Display for Address {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let a = &self.0;
        write!(
            f,
            "{:02x}:{:02x}:{:02x}:{:02x}:{:02x}:{:02x}",
            a[0], a[1], a[2], a[3], a[4], a[5]
        )
    }
}

impl FromStr for Address {
    type Err = Error;

    /// Six groups of one or two hex digits separated by `:` (or all by `-`).
    fn from_str(s: &str) -> Result<Self> {
        let sep = if s.contains('-') { '-' } else { ':' };
        let mut out = [0u8; 6];
        let mut parts = s.split(sep);
        for o in &mut out {
            let part = parts
                .next()
                .ok_or(Error::Malformed("MAC address needs six octets"))?;
            if part.is_empty() || part.len() > 2 || !part.bytes().all(|b| b.is_ascii_hexdigit()) {
                return Err(Error::Malformed("MAC address octet is not 1-2 hex digits"));
            }
            *o = u8::from_str_radix(part, 16)
                .map_err(|_| Error::Malformed("MAC address octet is not hex"))?;
        }
        if parts.next().is_some() {
            return Err(Error::Malformed("MAC address has more than six octets"));
        }
        Ok(Self(out))
    }
}

/// The EtherType of the payload.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum EtherType {
    /// IPv4, 0x0800.
    Ipv4,
    /// ARP, 0x0806.
    Arp,
    /// IPv6, 0x86DD.
    Ipv6,
    /// Any other value (never 0x0800, 0x0806 or 0x86DD when made with `From<u16>`).
    Unknown(u16),
}

impl From<u16> for EtherType {
    fn from(value: u16) -> Self {
        match value {
            0x0800 => Self::Ipv4,
            0x0806 => Self::Arp,
            0x86dd => Self::Ipv6,
            other => Self::Unknown(other),
        }
    }
}

impl From<EtherType> for u16 {
    fn from(value: EtherType) -> Self {
        match value {
            EtherType::Ipv4 => 0x0800,
            EtherType::Arp => 0x0806,
            EtherType::Ipv6 => 0x86dd,
            EtherType::Unknown(other) => other,
        }
    }
}

impl fmt::Display for EtherType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Ipv4 => f.write_str("IPv4"),
            Self::Arp => f.write_str("ARP"),
            Self::Ipv6 => f.write_str("IPv6"),
            Self::Unknown(v) => write!(f, "0x{v:04x}"),
        }
    }
}

mod field {
    pub(super) type Field = core::ops::Range<usize>;
    pub(super) const DST: Field = 0..6;
    pub(super) const SRC: Field = 6..12;
    pub(super) const ETHERTYPE: Field = 12..14;
    pub(super) const PAYLOAD: usize = 14;
}

/// A read/write view of an Ethernet II frame in a buffer.
#[derive(Debug, Clone)]
pub struct Frame<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Frame<T> {
    /// Wrap a buffer without checks; accessors may panic if it is too short.
    pub const fn new_unchecked(buffer: T) -> Self {
        Self { buffer }
    }

    /// Wrap a buffer and validate it: it must hold the 14-byte header. Required for
    /// untrusted input; when it returns `Ok`, no accessor panics.
    pub fn new_checked(buffer: T) -> Result<Self> {
        let frame = Self::new_unchecked(buffer);
        frame.check()?;
        Ok(frame)
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
    /// The destination address.
    pub fn dst_addr(&self) -> Address {
        Address::from_bytes(&self.buffer.as_ref()[field::DST])
    }
    /// The source address.
    pub fn src_addr(&self) -> Address {
        Address::from_bytes(&self.buffer.as_ref()[field::SRC])
    }
    /// The EtherType.
    pub fn ethertype(&self) -> EtherType {
        let d = &self.buffer.as_ref()[field::ETHERTYPE];
        EtherType::from(u16::from_be_bytes([d[0], d[1]]))
    }
    /// The payload: everything after the header, padding included.
    pub fn payload(&self) -> &[u8] {
        &self.buffer.as_ref()[field::PAYLOAD..]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Frame<T> {
    /// Set the destination address.
    pub fn set_dst_addr(&mut self, addr: Address) {
        self.buffer.as_mut()[field::DST].copy_from_slice(&addr.0);
    }
    /// Set the source address.
    pub fn set_src_addr(&mut self, addr: Address) {
        self.buffer.as_mut()[field::SRC].copy_from_slice(&addr.0);
    }
    /// Set the EtherType.
    pub fn set_ethertype(&mut self, ethertype: EtherType) {
        self.buffer.as_mut()[field::ETHERTYPE].copy_from_slice(&u16::from(ethertype).to_be_bytes());
    }
    /// The payload, mutably.
    pub fn payload_mut(&mut self) -> &mut [u8] {
        &mut self.buffer.as_mut()[field::PAYLOAD..]
    }
}

/// The meaning of an Ethernet II header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Repr {
    /// Source address.
    pub src_addr: Address,
    /// Destination address.
    pub dst_addr: Address,
    /// EtherType of the payload.
    pub ethertype: EtherType,
}

impl Repr {
    /// Parse a frame (checked again here, so an unchecked view is fine).
    pub fn parse<T: AsRef<[u8]>>(frame: &Frame<T>) -> Result<Self> {
        frame.check()?;
        Ok(Self {
            src_addr: frame.src_addr(),
            dst_addr: frame.dst_addr(),
            ethertype: frame.ethertype(),
        })
    }

    /// Bytes needed to emit this header: [`HEADER_LEN`].
    pub const fn buffer_len(&self) -> usize {
        HEADER_LEN
    }

    /// Write the header into the front of the frame; the payload goes after it.
    ///
    /// Panics if the frame's buffer is shorter than [`Repr::buffer_len`].
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, frame: &mut Frame<T>) {
        frame.set_dst_addr(self.dst_addr);
        frame.set_src_addr(self.src_addr);
        frame.set_ethertype(self.ethertype);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const FRAME: [u8; 18] = [
        0xff, 0xff, 0xff, 0xff, 0xff, 0xff, // dst
        0x02, 0x00, 0x5e, 0x10, 0x20, 0x30, // src
        0x08, 0x06, // ARP
        0xde, 0xad, 0xbe, 0xef,
    ];

    #[test]
    fn parses_golden_frame() {
        let f = Frame::new_checked(&FRAME[..]).unwrap();
        assert_eq!(f.dst_addr(), Address::BROADCAST);
        assert_eq!(f.src_addr(), Address([0x02, 0x00, 0x5e, 0x10, 0x20, 0x30]));
        assert_eq!(f.ethertype(), EtherType::Arp);
        assert_eq!(f.payload(), &[0xde, 0xad, 0xbe, 0xef]);
        let r = Repr::parse(&f).unwrap();
        assert_eq!(r.ethertype, EtherType::Arp);
        assert_eq!(
            Frame::new_checked(&FRAME[..13]).unwrap_err(),
            Error::Truncated { need: 14, have: 13 }
        );
        // A header with no payload is fine.
        assert!(Frame::new_checked(&FRAME[..14])
            .unwrap()
            .payload()
            .is_empty());
    }

    #[test]
    fn emit_round_trips_and_payload_is_writable() {
        let repr = Repr {
            src_addr: "02:00:00:00:00:01".parse().unwrap(),
            dst_addr: "33:33:00:00:00:01".parse().unwrap(),
            ethertype: EtherType::Ipv6,
        };
        let mut buf = [0u8; 16];
        let mut f = Frame::new_unchecked(&mut buf[..]);
        repr.emit(&mut f);
        f.payload_mut().copy_from_slice(&[1, 2]);
        assert_eq!(&buf[12..], &[0x86, 0xdd, 1, 2]);
        assert_eq!(
            Repr::parse(&Frame::new_checked(&buf[..]).unwrap()).unwrap(),
            repr
        );
        assert_eq!(repr.buffer_len(), 14);
    }

    #[test]
    fn ethertype_conversions() {
        for (v, t) in [
            (0x0800, EtherType::Ipv4),
            (0x0806, EtherType::Arp),
            (0x86dd, EtherType::Ipv6),
            (0x8100, EtherType::Unknown(0x8100)),
        ] {
            assert_eq!(EtherType::from(v), t);
            assert_eq!(u16::from(t), v);
        }
        assert_eq!(EtherType::Unknown(0x88cc).to_string(), "0x88cc");
    }

    #[test]
    fn address_text_and_classes() {
        let a: Address = "02:00:5E:10:20:3a".parse().unwrap();
        assert_eq!(a.to_string(), "02:00:5e:10:20:3a");
        assert_eq!("2-0-5e-10-20-3a".parse::<Address>().unwrap(), a);
        for bad in [
            "",
            "02:00:5e:10:20",
            "02:00:5e:10:20:30:40",
            "02:00:5e:10:20:3g",
            "002:00:5e:10:20:30",
            "02::5e:10:20:30",
            "+2:00:5e:10:20:30",
        ] {
            assert!(bad.parse::<Address>().is_err(), "{bad}");
        }
        assert!(Address::BROADCAST.is_broadcast());
        assert!(Address::BROADCAST.is_multicast());
        assert!(a.is_unicast() && !a.is_multicast() && !a.is_broadcast());
        let group = Address::from_ipv6_multicast(&"ff02::1:ff12:3456".parse().unwrap());
        assert_eq!(group, Address([0x33, 0x33, 0xff, 0x12, 0x34, 0x56]));
        assert!(group.is_multicast() && !group.is_broadcast());
        assert_eq!(
            Address::from_ipv4_multicast(&Ipv4Addr::new(239, 129, 2, 3)),
            Address([0x01, 0x00, 0x5e, 0x01, 0x02, 0x03])
        );
    }
}
