//! Bytes ⇄ meaning for everything dualperf puts on the wire, plus the time types the
//! packets carry.
//!
//! The layers follow smoltcp's split:
//! - a `Packet<T: AsRef<[u8]>>` is a zero-copy view over a buffer whose accessors are
//!   named after the fields. [`probe::Packet::new_checked`] must be used on untrusted
//!   input; after it returns `Ok`, no accessor panics.
//! - a `Repr` is the validated meaning of a packet, with `parse` and `emit`.
//!
//! Modules:
//! - [`time`]: monotonic [`time::Instant`] and [`time::Duration`] in nanoseconds; wall
//!   clock stamps are plain `u64` nanoseconds since the Unix epoch (`*_ns` fields).
//! - [`ds`]: DSCP and ECN, with the names of RFC 2474/2597/3246/8622.
//! - [`probe`]: the measurement probe header carried at the start of every payload.
//! - [`rtp`]: the RFC 3550 RTP fixed header and a sans-IO stream numberer/timestamper.
//! - [`frame`]: length-prefixed framing for message boundaries on TCP.
//! - [`overhead`]: header overhead, fragmentation and Ethernet framing of IPv4 and IPv6.
//! - [`control`]: the control-channel messages and the HMAC handshake.
//! - [`punch`]: the datagram that opens and keeps open a NAT mapping for a reverse flow.
//! - [`stamp`]: STAMP test packets (RFC 8762) with their optional extensions (RFC 8972).
//! - [`span`]: byte offsets → line numbers, for the TOML parsers' errors.
//! - [`prefix`]: IPv4 and IPv6 address prefixes, parsed and matched.
//! - [`scrape`]: the HTTP/1 request line a metrics scraper sends.
//! - [`testframe`]: the RFC 2544 tester's Ethernet/IP/UDP test frame and its 18-byte tag
//!   (stream, sequence, transmit time), built, parsed and kept checksum-valid.
//!
//! The L2/L3 formats of a userspace router:
//! - [`checksum`]: the RFC 1071 Internet checksum, pseudo-headers and the RFC 1624
//!   incremental update.
//! - [`ethernet`]: Ethernet II frames and MAC addresses.
//! - [`arp`]: ARP for IPv4 over Ethernet (RFC 826).
//! - [`ipv4`]: the IPv4 header (RFC 791), with TTL decrement and incremental checksum.
//! - [`ipv6`]: the IPv6 fixed header (RFC 8200) and solicited-node addresses.
//! - [`icmp`]: ICMPv4 (RFC 792) and ICMPv6 (RFC 4443) views, and the Time Exceeded,
//!   Fragmentation Needed / Packet Too Big and Echo Reply messages a router originates.
//! - [`ndp`]: Neighbor Solicitation parsing and Neighbor Advertisement building
//!   (RFC 4861).
//! - [`alert`]: the Router Alert options of IPv4 (RFC 2113) and IPv6 (RFC 2711), found
//!   and written.
//! - [`rsvp`]: RSVP messages (RFC 2205) with the IntServ Tspec and flowspecs
//!   (RFC 2210/2211/2212) and the IPv6 flow-label FILTER_SPEC.
//!
//! This crate never touches a socket and never reads a clock.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod alert;
pub mod arp;
pub mod checksum;
pub mod control;
pub mod ds;
pub mod ethernet;
pub mod frame;
pub mod icmp;
pub mod ipv4;
pub mod ipv6;
pub mod ndp;
pub mod overhead;
pub mod prefix;
pub mod probe;
pub mod punch;
pub mod rsvp;
pub mod rtp;
pub mod scrape;
pub mod span;
pub mod stamp;
pub mod testframe;
pub mod time;

/// Parsing a packet or message failed: it is malformed, truncated or of an unknown version.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    /// The buffer is shorter than the header it must hold.
    #[error("truncated: need {need} bytes, have {have}")]
    Truncated {
        /// Bytes required.
        need: usize,
        /// Bytes available.
        have: usize,
    },
    /// The magic number does not match.
    #[error("wrong magic 0x{0:02x}")]
    WrongMagic(u8),
    /// The version is not one this build understands.
    #[error("unsupported version {0}")]
    UnsupportedVersion(u8),
    /// A length field exceeds the allowed maximum.
    #[error("length {len} exceeds the maximum {max}")]
    TooLong {
        /// Announced length.
        len: usize,
        /// Maximum allowed.
        max: usize,
    },
    /// A field holds a value that is not allowed.
    #[error("malformed: {0}")]
    Malformed(&'static str),
}

/// Result type of this crate.
pub type Result<T> = core::result::Result<T, Error>;
