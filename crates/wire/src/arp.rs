//! ARP (RFC 826) for IPv4 over Ethernet, the only combination dualperf's router speaks.
//!
//! ```text
//!  0                   1                   2                   3
//!  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |      hardware type (1)        |     protocol type (0x0800)    |  0
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |  hw len (6)   | proto len (4) |          operation            |  4
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |                 source hardware address (6)                   |  8
//! +                               +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |                               |   source protocol address     | 12
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+                               +
//! |           (4)                 |                               | 16
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+                               +
//! |                 target hardware address (6)                   | 20
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |                 target protocol address (4)                   | 24
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+ 28
//! ```
//!
//! The packet is [`BUFFER_LEN`] = 28 bytes; bytes after it (Ethernet padding) are ignored.
//! [`Packet::new_checked`] rejects any hardware type other than Ethernet (1), protocol
//! type other than IPv4 (0x0800), hardware length other than 6 or protocol length other
//! than 4 with [`Error::Malformed`]. The operation is 1 (request) or 2 (reply); other
//! values parse as [`Operation::Unknown`] and are for the caller to drop.
//!
//! To answer a request for one of our addresses (RFC 826, "Packet Reception"), swap
//! source and target, put our MAC in the source hardware address and set
//! [`Operation::Reply`].

use std::net::Ipv4Addr;

use crate::ethernet::Address;
use crate::{Error, Result};

/// Length of an Ethernet/IPv4 ARP packet.
pub const BUFFER_LEN: usize = 28;
/// Hardware type of Ethernet.
pub const HTYPE_ETHERNET: u16 = 1;
/// Protocol type of IPv4.
pub const PTYPE_IPV4: u16 = 0x0800;

/// The ARP operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Operation {
    /// Request, 1.
    Request,
    /// Reply, 2.
    Reply,
    /// Any other value (RARP and InARP included).
    Unknown(u16),
}

impl From<u16> for Operation {
    fn from(value: u16) -> Self {
        match value {
            1 => Self::Request,
            2 => Self::Reply,
            other => Self::Unknown(other),
        }
    }
}

impl From<Operation> for u16 {
    fn from(value: Operation) -> Self {
        match value {
            Operation::Request => 1,
            Operation::Reply => 2,
            Operation::Unknown(other) => other,
        }
    }
}

mod field {
    pub(super) type Field = core::ops::Range<usize>;
    pub(super) const HTYPE: Field = 0..2;
    pub(super) const PTYPE: Field = 2..4;
    pub(super) const HLEN: usize = 4;
    pub(super) const PLEN: usize = 5;
    pub(super) const OPER: Field = 6..8;
    pub(super) const SHA: Field = 8..14;
    pub(super) const SPA: Field = 14..18;
    pub(super) const THA: Field = 18..24;
    pub(super) const TPA: Field = 24..28;
}

/// A read/write view of an Ethernet/IPv4 ARP packet in a buffer.
#[derive(Debug, Clone)]
pub struct Packet<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Packet<T> {
    /// Wrap a buffer without checks; accessors may panic if it is too short.
    pub const fn new_unchecked(buffer: T) -> Self {
        Self { buffer }
    }

    /// Wrap a buffer and validate it: at least 28 bytes, Ethernet hardware type, IPv4
    /// protocol type, lengths 6 and 4. Required for untrusted input; when it returns
    /// `Ok`, no accessor panics.
    pub fn new_checked(buffer: T) -> Result<Self> {
        let packet = Self::new_unchecked(buffer);
        packet.check()?;
        Ok(packet)
    }

    fn check(&self) -> Result<()> {
        let len = self.buffer.as_ref().len();
        if len < BUFFER_LEN {
            return Err(Error::Truncated {
                need: BUFFER_LEN,
                have: len,
            });
        }
        if self.hardware_type() != HTYPE_ETHERNET {
            return Err(Error::Malformed("ARP hardware type is not Ethernet"));
        }
        if self.protocol_type() != PTYPE_IPV4 {
            return Err(Error::Malformed("ARP protocol type is not IPv4"));
        }
        if self.hardware_len() != 6 || self.protocol_len() != 4 {
            return Err(Error::Malformed("ARP address lengths are not 6 and 4"));
        }
        Ok(())
    }

    /// Unwrap the buffer.
    pub fn into_inner(self) -> T {
        self.buffer
    }
    /// The hardware type.
    pub fn hardware_type(&self) -> u16 {
        u16::from_be_bytes(be(&self.buffer.as_ref()[field::HTYPE]))
    }
    /// The protocol type.
    pub fn protocol_type(&self) -> u16 {
        u16::from_be_bytes(be(&self.buffer.as_ref()[field::PTYPE]))
    }
    /// The hardware address length.
    pub fn hardware_len(&self) -> u8 {
        self.buffer.as_ref()[field::HLEN]
    }
    /// The protocol address length.
    pub fn protocol_len(&self) -> u8 {
        self.buffer.as_ref()[field::PLEN]
    }
    /// The operation.
    pub fn operation(&self) -> Operation {
        Operation::from(u16::from_be_bytes(be(&self.buffer.as_ref()[field::OPER])))
    }
    /// The sender's hardware address.
    pub fn source_hardware_addr(&self) -> Address {
        Address(be(&self.buffer.as_ref()[field::SHA]))
    }
    /// The sender's protocol address.
    pub fn source_protocol_addr(&self) -> Ipv4Addr {
        Ipv4Addr::from(be::<4>(&self.buffer.as_ref()[field::SPA]))
    }
    /// The target's hardware address (ignored in requests, usually zero).
    pub fn target_hardware_addr(&self) -> Address {
        Address(be(&self.buffer.as_ref()[field::THA]))
    }
    /// The target's protocol address.
    pub fn target_protocol_addr(&self) -> Ipv4Addr {
        Ipv4Addr::from(be::<4>(&self.buffer.as_ref()[field::TPA]))
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Packet<T> {
    /// Set the hardware type.
    pub fn set_hardware_type(&mut self, value: u16) {
        self.buffer.as_mut()[field::HTYPE].copy_from_slice(&value.to_be_bytes());
    }
    /// Set the protocol type.
    pub fn set_protocol_type(&mut self, value: u16) {
        self.buffer.as_mut()[field::PTYPE].copy_from_slice(&value.to_be_bytes());
    }
    /// Set the hardware address length.
    pub fn set_hardware_len(&mut self, value: u8) {
        self.buffer.as_mut()[field::HLEN] = value;
    }
    /// Set the protocol address length.
    pub fn set_protocol_len(&mut self, value: u8) {
        self.buffer.as_mut()[field::PLEN] = value;
    }
    /// Set the operation.
    pub fn set_operation(&mut self, value: Operation) {
        self.buffer.as_mut()[field::OPER].copy_from_slice(&u16::from(value).to_be_bytes());
    }
    /// Set the sender's hardware address.
    pub fn set_source_hardware_addr(&mut self, value: Address) {
        self.buffer.as_mut()[field::SHA].copy_from_slice(&value.0);
    }
    /// Set the sender's protocol address.
    pub fn set_source_protocol_addr(&mut self, value: Ipv4Addr) {
        self.buffer.as_mut()[field::SPA].copy_from_slice(&value.octets());
    }
    /// Set the target's hardware address.
    pub fn set_target_hardware_addr(&mut self, value: Address) {
        self.buffer.as_mut()[field::THA].copy_from_slice(&value.0);
    }
    /// Set the target's protocol address.
    pub fn set_target_protocol_addr(&mut self, value: Ipv4Addr) {
        self.buffer.as_mut()[field::TPA].copy_from_slice(&value.octets());
    }
}

fn be<const N: usize>(s: &[u8]) -> [u8; N] {
    let mut out = [0u8; N];
    out.copy_from_slice(s);
    out
}

/// The meaning of an Ethernet/IPv4 ARP packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Repr {
    /// Request, reply or other.
    pub operation: Operation,
    /// The sender's MAC.
    pub source_hardware_addr: Address,
    /// The sender's IPv4 address.
    pub source_protocol_addr: Ipv4Addr,
    /// The target's MAC (zero in requests).
    pub target_hardware_addr: Address,
    /// The IPv4 address being resolved (requests) or answered to (replies).
    pub target_protocol_addr: Ipv4Addr,
}

impl Repr {
    /// Parse a packet (checked again here, so an unchecked view is fine).
    pub fn parse<T: AsRef<[u8]>>(packet: &Packet<T>) -> Result<Self> {
        packet.check()?;
        Ok(Self {
            operation: packet.operation(),
            source_hardware_addr: packet.source_hardware_addr(),
            source_protocol_addr: packet.source_protocol_addr(),
            target_hardware_addr: packet.target_hardware_addr(),
            target_protocol_addr: packet.target_protocol_addr(),
        })
    }

    /// Bytes needed to emit this packet: [`BUFFER_LEN`].
    pub const fn buffer_len(&self) -> usize {
        BUFFER_LEN
    }

    /// Write the packet into the front of the view's buffer.
    ///
    /// Panics if the buffer is shorter than [`Repr::buffer_len`].
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, packet: &mut Packet<T>) {
        packet.set_hardware_type(HTYPE_ETHERNET);
        packet.set_protocol_type(PTYPE_IPV4);
        packet.set_hardware_len(6);
        packet.set_protocol_len(4);
        packet.set_operation(self.operation);
        packet.set_source_hardware_addr(self.source_hardware_addr);
        packet.set_source_protocol_addr(self.source_protocol_addr);
        packet.set_target_hardware_addr(self.target_hardware_addr);
        packet.set_target_protocol_addr(self.target_protocol_addr);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const HOST_MAC: Address = Address([0x02, 0x00, 0x00, 0x00, 0x00, 0x0a]);
    const ROUTER_MAC: Address = Address([0x02, 0x00, 0x00, 0x00, 0x00, 0x01]);

    // Who has 198.18.0.1? Tell 198.18.0.10 (from 02:00:00:00:00:0a), plus 4 bytes of
    // Ethernet padding.
    const REQUEST: [u8; 32] = [
        0x00, 0x01, 0x08, 0x00, 0x06, 0x04, 0x00, 0x01, // htype, ptype, lens, op
        0x02, 0x00, 0x00, 0x00, 0x00, 0x0a, 198, 18, 0, 10, // sha, spa
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 198, 18, 0, 1, // tha, tpa
        0, 0, 0, 0,
    ];

    #[test]
    fn request_to_reply_round_trip() {
        let p = Packet::new_checked(&REQUEST[..]).unwrap();
        let req = Repr::parse(&p).unwrap();
        assert_eq!(
            req,
            Repr {
                operation: Operation::Request,
                source_hardware_addr: HOST_MAC,
                source_protocol_addr: Ipv4Addr::new(198, 18, 0, 10),
                target_hardware_addr: Address([0; 6]),
                target_protocol_addr: Ipv4Addr::new(198, 18, 0, 1),
            }
        );
        let reply = Repr {
            operation: Operation::Reply,
            source_hardware_addr: ROUTER_MAC,
            source_protocol_addr: req.target_protocol_addr,
            target_hardware_addr: req.source_hardware_addr,
            target_protocol_addr: req.source_protocol_addr,
        };
        let mut buf = [0u8; BUFFER_LEN];
        reply.emit(&mut Packet::new_unchecked(&mut buf[..]));
        assert_eq!(
            buf,
            [
                0x00, 0x01, 0x08, 0x00, 0x06, 0x04, 0x00, 0x02, //
                0x02, 0x00, 0x00, 0x00, 0x00, 0x01, 198, 18, 0, 1, //
                0x02, 0x00, 0x00, 0x00, 0x00, 0x0a, 198, 18, 0, 10,
            ]
        );
        let back = Repr::parse(&Packet::new_checked(&buf[..]).unwrap()).unwrap();
        assert_eq!(back, reply);
        assert_eq!(back.buffer_len(), 28);
    }

    #[test]
    fn rejects_other_hardware_protocols_and_truncation() {
        assert_eq!(
            Packet::new_checked(&REQUEST[..27]).unwrap_err(),
            Error::Truncated { need: 28, have: 27 }
        );
        for (at, value) in [(1, 6), (2, 0x86), (4, 8), (5, 16)] {
            let mut b = REQUEST;
            b[at] = value;
            assert!(
                matches!(Packet::new_checked(&b[..]), Err(Error::Malformed(_))),
                "byte {at}"
            );
        }
    }

    #[test]
    fn unknown_operations_parse() {
        let mut b = REQUEST;
        b[7] = 3; // RARP request
        let r = Repr::parse(&Packet::new_checked(&b[..]).unwrap()).unwrap();
        assert_eq!(r.operation, Operation::Unknown(3));
        assert_eq!(u16::from(Operation::Unknown(3)), 3);
        assert_eq!(Operation::from(2), Operation::Reply);
    }
}
