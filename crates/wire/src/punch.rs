//! The punch: a small UDP datagram that opens and keeps open a NAT's mapping for a
//! reverse flow (`send --reverse` in callback mode), so the agent can send its flow back
//! to the address and port the controller's packets arrive from.
//!
//! ```text
//!  0                   1                   2                   3
//!  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |  magic (0xD7) |version| kind  |            flow id            |  0
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |                 token (u64, from the flow's grant)            |  4
//! |                                                               |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |            transmit timestamp, ns since the Unix epoch        | 12
//! |                             (u64)                             |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+ 20
//! ```
//!
//! All fields are big-endian; the datagram is exactly [`LEN`] bytes (more is malformed).
//! The magic differs from the probe's (0xD6), so a receiver that predates punches counts
//! one as a malformed datagram and nothing else.
//!
//! - [`Kind::Punch`] goes from the controller's receiver to the agent's flow socket
//!   until the agent answers; the agent accepts it only from the asker's address and
//!   with the flow's token, and then sends the flow to the punch's source.
//! - [`Kind::Answer`] is the agent's reply, from the flow's socket to that source: the
//!   mapping works both ways, so the receiver stops punching.
//! - [`Kind::Keepalive`] goes from the receiver while the flow is quiet, to refresh the
//!   NAT's mapping (RFC 4787 REQ-5, RFC 8085 §3.5); it is never answered.

use crate::{Error, Result};

/// The first octet of every punch.
pub const MAGIC: u8 = 0xD7;
/// The punch format version this build writes and reads.
pub const VERSION: u8 = 1;
/// Length of a punch datagram.
pub const LEN: usize = 20;

mod field {
    pub(super) type Field = core::ops::Range<usize>;
    pub(super) const MAGIC: usize = 0;
    pub(super) const VER_KIND: usize = 1;
    pub(super) const FLOW: Field = 2..4;
    pub(super) const TOKEN: Field = 4..12;
    pub(super) const TX_NS: Field = 12..20;
}

/// What a punch datagram is for.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Kind {
    /// Opens the mapping; asks the agent to send the flow to its source.
    #[default]
    Punch,
    /// Keeps the mapping open while the flow is quiet.
    Keepalive,
    /// The agent's reply to a punch it accepted.
    Answer,
}

impl Kind {
    fn code(self) -> u8 {
        match self {
            Kind::Punch => 1,
            Kind::Keepalive => 2,
            Kind::Answer => 3,
        }
    }

    fn from_code(code: u8) -> Option<Self> {
        match code {
            1 => Some(Kind::Punch),
            2 => Some(Kind::Keepalive),
            3 => Some(Kind::Answer),
            _ => None,
        }
    }
}

/// A read/write view of a punch in a buffer.
#[derive(Debug, Clone)]
pub struct Packet<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Packet<T> {
    /// Wrap a buffer without checks; accessors may panic if it is too short.
    pub const fn new_unchecked(buffer: T) -> Self {
        Self { buffer }
    }

    /// Wrap a buffer and validate it: length, magic, version and kind. Required for
    /// untrusted input; when it returns `Ok`, no accessor panics.
    pub fn new_checked(buffer: T) -> Result<Self> {
        let packet = Self::new_unchecked(buffer);
        packet.check()?;
        Ok(packet)
    }

    fn check(&self) -> Result<()> {
        let data = self.buffer.as_ref();
        if data.len() < LEN {
            return Err(Error::Truncated {
                need: LEN,
                have: data.len(),
            });
        }
        if data.len() > LEN {
            return Err(Error::TooLong {
                len: data.len(),
                max: LEN,
            });
        }
        if data[field::MAGIC] != MAGIC {
            return Err(Error::WrongMagic(data[field::MAGIC]));
        }
        if self.version() != VERSION {
            return Err(Error::UnsupportedVersion(self.version()));
        }
        if Kind::from_code(self.kind_code()).is_none() {
            return Err(Error::Malformed("unknown punch kind"));
        }
        Ok(())
    }

    /// Unwrap the buffer.
    pub fn into_inner(self) -> T {
        self.buffer
    }
    /// The version nibble.
    pub fn version(&self) -> u8 {
        self.buffer.as_ref()[field::VER_KIND] >> 4
    }
    /// The kind nibble, as sent.
    pub fn kind_code(&self) -> u8 {
        self.buffer.as_ref()[field::VER_KIND] & 0x0f
    }
    /// The flow id.
    pub fn flow(&self) -> u16 {
        u16::from_be_bytes(be(&self.buffer.as_ref()[field::FLOW]))
    }
    /// The flow's token.
    pub fn token(&self) -> u64 {
        u64::from_be_bytes(be(&self.buffer.as_ref()[field::TOKEN]))
    }
    /// The transmit timestamp, ns since the Unix epoch.
    pub fn tx_ns(&self) -> u64 {
        u64::from_be_bytes(be(&self.buffer.as_ref()[field::TX_NS]))
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Packet<T> {
    /// Set magic, version and kind.
    pub fn set_header(&mut self, kind: Kind) {
        let data = self.buffer.as_mut();
        data[field::MAGIC] = MAGIC;
        data[field::VER_KIND] = VERSION << 4 | kind.code();
    }
    /// Set the flow id.
    pub fn set_flow(&mut self, flow: u16) {
        self.buffer.as_mut()[field::FLOW].copy_from_slice(&flow.to_be_bytes());
    }
    /// Set the token.
    pub fn set_token(&mut self, token: u64) {
        self.buffer.as_mut()[field::TOKEN].copy_from_slice(&token.to_be_bytes());
    }
    /// Set the transmit timestamp.
    pub fn set_tx_ns(&mut self, ns: u64) {
        self.buffer.as_mut()[field::TX_NS].copy_from_slice(&ns.to_be_bytes());
    }
}

fn be<const N: usize>(s: &[u8]) -> [u8; N] {
    let mut out = [0u8; N];
    out.copy_from_slice(s);
    out
}

/// The meaning of a punch.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Repr {
    /// What it is for.
    pub kind: Kind,
    /// The flow id, from the flow's grant.
    pub flow: u16,
    /// The flow's token, from its grant.
    pub token: u64,
    /// Transmit timestamp, ns since the Unix epoch.
    pub tx_ns: u64,
}

impl Repr {
    /// Parse a checked packet.
    pub fn parse<T: AsRef<[u8]>>(packet: &Packet<T>) -> Result<Self> {
        packet.check()?;
        Ok(Self {
            kind: Kind::from_code(packet.kind_code())
                .ok_or(Error::Malformed("unknown punch kind"))?,
            flow: packet.flow(),
            token: packet.token(),
            tx_ns: packet.tx_ns(),
        })
    }

    /// Parse untrusted bytes.
    pub fn parse_bytes(data: &[u8]) -> Result<Self> {
        Self::parse(&Packet::new_checked(data)?)
    }

    /// Bytes needed to emit a punch.
    pub const fn buffer_len(&self) -> usize {
        LEN
    }

    /// Write the punch into the front of `buffer`; [`Error::Truncated`] if it is
    /// shorter than [`LEN`].
    pub fn emit(&self, buffer: &mut [u8]) -> Result<()> {
        if buffer.len() < LEN {
            return Err(Error::Truncated {
                need: LEN,
                have: buffer.len(),
            });
        }
        let mut packet = Packet::new_unchecked(&mut buffer[..LEN]);
        packet.set_header(self.kind);
        packet.set_flow(self.flow);
        packet.set_token(self.token);
        packet.set_tx_ns(self.tx_ns);
        Ok(())
    }

    /// The punch as a datagram.
    pub fn to_bytes(&self) -> [u8; LEN] {
        let mut out = [0u8; LEN];
        // LEN bytes are always enough.
        let _ = self.emit(&mut out);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PUNCH: Repr = Repr {
        kind: Kind::Punch,
        flow: 0x0102,
        token: 0x0304_0506_0708_090a,
        tx_ns: 0x0b0c_0d0e_0f10_1112,
    };

    #[test]
    fn punch_round_trips_in_its_documented_bytes() {
        let bytes = PUNCH.to_bytes();
        assert_eq!(
            bytes,
            [
                0xd7, 0x11, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09, 0x0a, 0x0b, 0x0c,
                0x0d, 0x0e, 0x0f, 0x10, 0x11, 0x12
            ]
        );
        assert_eq!(Repr::parse_bytes(&bytes), Ok(PUNCH));
        for (kind, code) in [(Kind::Punch, 1), (Kind::Keepalive, 2), (Kind::Answer, 3)] {
            let r = Repr { kind, ..PUNCH };
            let bytes = r.to_bytes();
            assert_eq!(bytes[1], 0x10 | code);
            assert_eq!(Repr::parse_bytes(&bytes), Ok(r));
        }
        let mut short = [0u8; LEN - 1];
        assert_eq!(
            PUNCH.emit(&mut short),
            Err(Error::Truncated {
                need: LEN,
                have: LEN - 1
            })
        );
    }

    #[test]
    fn punch_rejects_every_truncation_bad_magic_version_kind_and_excess() {
        let bytes = PUNCH.to_bytes();
        for n in 0..LEN {
            assert_eq!(
                Repr::parse_bytes(&bytes[..n]),
                Err(Error::Truncated { need: LEN, have: n }),
                "{n} bytes"
            );
        }
        let mut long = bytes.to_vec();
        long.push(0);
        assert_eq!(
            Repr::parse_bytes(&long),
            Err(Error::TooLong {
                len: LEN + 1,
                max: LEN
            })
        );
        let mut probe = bytes;
        probe[0] = crate::probe::MAGIC;
        assert_eq!(Repr::parse_bytes(&probe), Err(Error::WrongMagic(0xd6)));
        for version in [0u8, 2, 15] {
            let mut b = bytes;
            b[1] = version << 4 | 1;
            assert_eq!(
                Repr::parse_bytes(&b),
                Err(Error::UnsupportedVersion(version))
            );
        }
        for kind in [0u8, 4, 15] {
            let mut b = bytes;
            b[1] = 0x10 | kind;
            assert_eq!(
                Repr::parse_bytes(&b),
                Err(Error::Malformed("unknown punch kind"))
            );
        }
    }
}
