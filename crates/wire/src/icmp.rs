//! ICMP for IPv4 (RFC 792) and IPv6 (RFC 4443): zero-copy message views and the
//! messages a userspace router originates, built as complete IP packets.
//!
//! Both families share the 8-byte header shape:
//!
//! ```text
//!  0                   1                   2                   3
//!  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |     Type      |     Code      |          Checksum             |  0
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |                     Rest of header                            |  4
//! |  echo: Identifier | Sequence;  errors: unused, or MTU         |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |     Data: echo data, or as much of the invoking packet as fits |  8
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! ```
//!
//! The ICMPv4 checksum covers the message only; the ICMPv6 checksum also covers the IPv6
//! pseudo-header of RFC 8200 §8.1 (RFC 4443 §2.3).
//!
//! - [`v4`]: [`v4::Packet`] (alias [`Icmpv4Packet`]) and the builders [`v4_time_exceeded`], [`v4_frag_needed`],
//!   [`v4_echo_reply`]. Errors are at most 576 bytes (RFC 1812 §4.3.2.3) and never sent
//!   about the packets RFC 1812 §4.3.2.7 lists.
//! - [`v6`]: [`v6::Packet`] (alias [`Icmpv6Packet`]) and the builders [`v6_time_exceeded`],
//!   [`v6_packet_too_big`], [`v6_echo_reply`]. Errors are at most 1280 bytes (RFC 4443
//!   §2.4(c)) and never sent about the packets RFC 4443 §2.4(e) lists.
//! - Neighbor Discovery ([`crate::ndp`], re-exported here): [`parse_ns`] and
//!   [`neighbor_advert`].
//!
//! Every builder takes the bytes of an IP packet, starting at its IP header (no Ethernet
//! header), and returns `None` when no message may or can be built; what it returns
//! always parses back with valid checksums. Rate limiting (RFC 1812 §4.3.2.8, RFC 4443
//! §2.4(f)) and the link-layer conditions (a frame received as a link-layer broadcast or
//! multicast, RFC 1812 §4.3.2.7 and RFC 4443 §2.4(e.4, e.5)) are the caller's, which alone
//! knows them.

pub mod v4;
pub mod v6;

pub use crate::ndp::{neighbor_advert, parse_ns, NeighborSolicit};
pub use v4::{v4_echo_reply, v4_frag_needed, v4_time_exceeded};
pub use v6::{v6_echo_reply, v6_packet_too_big, v6_time_exceeded};

/// The ICMPv4 message view, [`v4::Packet`], under the name smoltcp uses.
pub type Icmpv4Packet<T> = v4::Packet<T>;
/// The ICMPv6 message view, [`v6::Packet`], under the name smoltcp uses.
pub type Icmpv6Packet<T> = v6::Packet<T>;

/// Length of the ICMP header (type, code, checksum, rest of header), both families.
pub const HEADER_LEN: usize = 8;
/// TTL / hop limit of the messages the builders originate (Linux's default of 64).
pub const HOP_LIMIT: u8 = 64;
/// DS octet of the error messages the builders originate: 0xC0, DSCP CS6 (network
/// control, RFC 4594 §3.1), not ECN-capable, as Linux sends ICMPv4 errors. Used for
/// ICMPv6 errors too, so a QoS policy classes both families' router errors alike.
pub const ERROR_DS_FIELD: u8 = 0xc0;

pub(crate) mod field {
    pub(crate) type Field = core::ops::Range<usize>;
    pub(crate) const TYPE: usize = 0;
    pub(crate) const CODE: usize = 1;
    pub(crate) const CHECKSUM: Field = 2..4;
    pub(crate) const REST: Field = 4..8;
    pub(crate) const DATA: usize = 8;
}

pub(crate) fn be<const N: usize>(s: &[u8]) -> [u8; N] {
    let mut out = [0u8; N];
    out.copy_from_slice(s);
    out
}
