//! RSVP, the Resource ReSerVation Protocol (RFC 2205), with the IntServ objects of
//! RFC 2210 (Controlled-Load, RFC 2211; Guaranteed, RFC 2212) and the IPv6 flow-label
//! FILTER_SPEC: bytes ⇄ meaning.
//!
//! ```text
//! common header (RFC 2205 §3.1.1)
//!  0                   1                   2                   3
//!  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! | Vers  | Flags |   Msg Type    |         RSVP Checksum         |  0
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |   Send_TTL    |  (Reserved)   |          RSVP Length          |  4
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+  8
//! | objects: Length (16) | Class-Num (8) | C-Type (8) | body ...  |
//! ```
//!
//! - [`Packet`]: a view of the common header, checked by [`Packet::new_checked`] (version
//!   1, RSVP Length within the buffer, checksum when one was sent).
//! - [`Message`]: the meaning of a whole message, with `parse`, `buffer_len`, `emit` and
//!   `to_bytes`. Which objects each message type needs is RFC 2205 §3.1.2–§3.1.8;
//!   parse checks them and accepts the objects in any order (only the order of FLOWSPEC
//!   and FILTER_SPEC in a flow descriptor list carries meaning); emit writes the RFC's
//!   order.
//! - [`object`]: the object header, the object walk and RFC 2205 §3.10's handling of
//!   unknown classes by the two top bits of the Class-Num.
//! - [`objects`]: SESSION, RSVP_HOP, TIME_VALUES, ERROR_SPEC, STYLE, FILTER_SPEC /
//!   SENDER_TEMPLATE (C-Types 1, 2 and 3) and RESV_CONFIRM (RFC 2205 Appendix A).
//! - [`intserv`]: SENDER_TSPEC and FLOWSPEC C-Type 2 (RFC 2210 §3.1–§3.3).
//!
//! Kept as bytes ([`Opaque`]): ADSPEC (carried in the sender descriptor), POLICY_DATA
//! and unknown classes `0b11xxxxxx` (both in [`Message::forward`], re-emitted unchanged).
//! Skipped: NULL, INTEGRITY (RFC 2747; no keys here, and it is hop-by-hop), SCOPE
//! (computed per hop) and unknown classes `0b10xxxxxx`.

pub mod intserv;
mod message;
pub mod object;
pub mod objects;
#[cfg(test)]
mod samples;

pub use intserv::{FlowSpec, Service, TokenBucket};
pub use message::{FlowDescriptor, Message, SenderDescriptor};
pub use object::Opaque;
pub use objects::{ErrorSpec, FilterSpec, Hop, Session, Style};

/// The IP protocol number of RSVP.
pub const PROTOCOL: u8 = 46;
/// The RSVP version this build reads and writes (RFC 2205 §3.1.1).
pub const VERSION: u8 = 1;
/// Length of the common header.
pub const HEADER_LEN: usize = 8;

/// Error codes of ERROR_SPEC (RFC 2205 Appendix B).
pub mod code {
    /// 0: Confirmation (in a ResvConf).
    pub const CONFIRM: u8 = 0;
    /// 1: Admission Control failure (values: 1 delay bound, 2 bandwidth unavailable,
    /// 3 MTU in flowspec larger than the interface MTU).
    pub const ADMISSION: u8 = 1;
    /// 2: Policy Control failure.
    pub const POLICY: u8 = 2;
    /// 3: No path information for this Resv message.
    pub const NO_PATH: u8 = 3;
    /// 4: No sender information for this Resv message.
    pub const NO_SENDER: u8 = 4;
    /// 5: Conflicting reservation style.
    pub const CONFLICTING_STYLE: u8 = 5;
    /// 6: Unknown reservation style.
    pub const UNKNOWN_STYLE: u8 = 6;
    /// 7: Conflicting destination ports.
    pub const CONFLICTING_DST_PORTS: u8 = 7;
    /// 8: Conflicting sender ports.
    pub const CONFLICTING_SRC_PORTS: u8 = 8;
    /// 12: Service preempted.
    pub const PREEMPTED: u8 = 12;
    /// 13: Unknown object class; the value is (Class-Num << 8 | C-Type).
    pub const UNKNOWN_CLASS: u8 = 13;
    /// 14: Unknown object C-Type; the value is (Class-Num << 8 | C-Type).
    pub const UNKNOWN_CTYPE: u8 = 14;
    /// 21: Traffic Control Error (values: 1 service conflict, 2 service unsupported,
    /// 3 bad flowspec value, 4 bad Tspec value, 5 bad Adspec value).
    pub const TRAFFIC_CONTROL: u8 = 21;
    /// 22: Traffic Control System error.
    pub const TRAFFIC_CONTROL_SYSTEM: u8 = 22;
    /// 23: RSVP System error.
    pub const SYSTEM: u8 = 23;
    /// Admission Control failure value 2: requested bandwidth unavailable.
    pub const ADMISSION_BANDWIDTH: u16 = 2;
    /// Traffic Control Error value 2: service unsupported.
    pub const TC_SERVICE_UNSUPPORTED: u16 = 2;
    /// Traffic Control Error value 3: bad flowspec value.
    pub const TC_BAD_FLOWSPEC: u16 = 3;
}

/// The RSVP message types (RFC 2205 §3.1.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MsgType {
    /// 1: Path, sender → receivers, hop by hop along the data path.
    Path = 1,
    /// 2: Resv, receiver → senders, hop by hop along the reverse path.
    Resv = 2,
    /// 3: PathErr, towards the sender.
    PathErr = 3,
    /// 4: ResvErr, towards the receiver.
    ResvErr = 4,
    /// 5: PathTear, towards the receivers.
    PathTear = 5,
    /// 6: ResvTear, towards the senders.
    ResvTear = 6,
    /// 7: ResvConf, to the receiver that asked for a confirmation.
    ResvConf = 7,
}

impl MsgType {
    /// The type of a Msg Type octet, `None` if unknown.
    pub fn from_u8(value: u8) -> Option<Self> {
        Some(match value {
            1 => Self::Path,
            2 => Self::Resv,
            3 => Self::PathErr,
            4 => Self::ResvErr,
            5 => Self::PathTear,
            6 => Self::ResvTear,
            7 => Self::ResvConf,
            _ => return None,
        })
    }

    /// The RFC's name of the message type.
    pub fn name(self) -> &'static str {
        match self {
            Self::Path => "Path",
            Self::Resv => "Resv",
            Self::PathErr => "PathErr",
            Self::ResvErr => "ResvErr",
            Self::PathTear => "PathTear",
            Self::ResvTear => "ResvTear",
            Self::ResvConf => "ResvConf",
        }
    }
}

/// Why a message was refused. [`ParseError::error_code`] says which ERROR_SPEC a node
/// answers with (RFC 2205 §3.10, Appendix B), when it answers at all.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum ParseError {
    /// The buffer ends inside the common header or an object.
    #[error("truncated RSVP message")]
    Truncated,
    /// The version is not 1.
    #[error("RSVP version {0}, not 1")]
    BadVersion(u8),
    /// The RSVP Length is shorter than the header, longer than the buffer, or not filled
    /// by whole objects.
    #[error("bad RSVP length")]
    BadLength,
    /// The checksum does not match.
    #[error("bad RSVP checksum")]
    BadChecksum,
    /// The Msg Type is not one of RFC 2205's seven.
    #[error("unknown RSVP message type {0}")]
    UnknownMsgType(u8),
    /// An object's Length is under 4 or not a multiple of 4.
    #[error("object of class {class} has bad length {len}")]
    BadObjectLength {
        /// Class-Num of the object.
        class: u8,
        /// Its Length field.
        len: u16,
    },
    /// An unknown Class-Num of the form `0b0xxxxxxx`: the message is refused with an
    /// "Unknown object class" error (code 13).
    #[error("unknown object class {class} (C-Type {ctype})")]
    UnknownClass {
        /// Class-Num.
        class: u8,
        /// C-Type.
        ctype: u8,
    },
    /// A known class with a C-Type this build does not know (code 14).
    #[error("unknown C-Type {ctype} of object class {class}")]
    UnknownCType {
        /// Class-Num.
        class: u8,
        /// C-Type.
        ctype: u8,
    },
    /// A STYLE whose option vector is none of FF, SE, WF (code 6).
    #[error("unknown reservation style 0x{0:06x}")]
    UnknownStyle(u32),
    /// An object the message type requires is absent (Class-Num given).
    #[error("required object of class {0} missing")]
    Missing(u8),
    /// A FLOWSPEC of a service other than Controlled-Load and Guaranteed (code 21,
    /// "Traffic Control Error", value 2 "Service unsupported").
    #[error("unsupported IntServ service {0}")]
    UnsupportedService(u8),
    /// An object that may appear once appears twice (Class-Num given).
    #[error("object of class {0} appears twice")]
    Duplicate(u8),
    /// A known object whose body is malformed (wrong size for its C-Type, NaN or
    /// negative IntServ numbers, a bad IntServ header, nonzero flow-label bits).
    #[error("malformed object of class {class}")]
    BadObject {
        /// Class-Num.
        class: u8,
    },
}

impl ParseError {
    /// The (Error Code, Error Value) of the ERROR_SPEC a node sends back for this
    /// error, or `None` when the message is just dropped (RFC 2205 §3.10, App. B).
    pub fn error_code(&self) -> Option<(u8, u16)> {
        match *self {
            Self::UnknownClass { class, ctype } => Some((
                code::UNKNOWN_CLASS,
                u16::from(class) << 8 | u16::from(ctype),
            )),
            Self::UnknownCType { class, ctype } => Some((
                code::UNKNOWN_CTYPE,
                u16::from(class) << 8 | u16::from(ctype),
            )),
            Self::UnknownStyle(_) => Some((code::UNKNOWN_STYLE, 0)),
            Self::UnsupportedService(_) => {
                Some((code::TRAFFIC_CONTROL, code::TC_SERVICE_UNSUPPORTED))
            }
            _ => None,
        }
    }
}

mod field {
    pub(super) type Field = core::ops::Range<usize>;
    pub(super) const VER_FLAGS: usize = 0;
    pub(super) const MSG_TYPE: usize = 1;
    pub(super) const CHECKSUM: Field = 2..4;
    pub(super) const SEND_TTL: usize = 4;
    pub(super) const LENGTH: Field = 6..8;
}

/// A read/write view of an RSVP common header in a buffer.
#[derive(Debug, Clone)]
pub struct Packet<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Packet<T> {
    /// Wrap a buffer without checks; accessors may panic if it is too short.
    pub const fn new_unchecked(buffer: T) -> Self {
        Self { buffer }
    }

    /// Wrap a buffer and validate it: the header fits, version 1, an RSVP Length of at
    /// least the header, a multiple of 4 and within the buffer, and the checksum over
    /// those octets when it is not zero (zero: none sent). When it returns `Ok`, no
    /// accessor panics.
    pub fn new_checked(buffer: T) -> Result<Self, ParseError> {
        let packet = Self::new_unchecked(buffer);
        packet.check()?;
        Ok(packet)
    }

    fn check(&self) -> Result<(), ParseError> {
        let data = self.buffer.as_ref();
        if data.len() < HEADER_LEN {
            return Err(ParseError::Truncated);
        }
        if self.version() != VERSION {
            return Err(ParseError::BadVersion(self.version()));
        }
        let len = usize::from(self.length());
        if len > data.len() {
            return Err(ParseError::Truncated);
        }
        if len < HEADER_LEN || len % 4 != 0 {
            return Err(ParseError::BadLength);
        }
        if self.checksum() != 0 && crate::checksum::internet(&data[..len]) != 0 {
            return Err(ParseError::BadChecksum);
        }
        Ok(())
    }

    /// Unwrap the buffer.
    pub fn into_inner(self) -> T {
        self.buffer
    }
    /// The version nibble.
    pub fn version(&self) -> u8 {
        self.buffer.as_ref()[field::VER_FLAGS] >> 4
    }
    /// The flags nibble (none defined by RFC 2205).
    pub fn flags(&self) -> u8 {
        self.buffer.as_ref()[field::VER_FLAGS] & 0x0f
    }
    /// The Msg Type octet.
    pub fn msg_type(&self) -> u8 {
        self.buffer.as_ref()[field::MSG_TYPE]
    }
    /// The RSVP Checksum (0: none sent).
    pub fn checksum(&self) -> u16 {
        let d = self.buffer.as_ref();
        u16::from_be_bytes([d[field::CHECKSUM.start], d[field::CHECKSUM.start + 1]])
    }
    /// The Send_TTL: the IP TTL the message was sent with.
    pub fn send_ttl(&self) -> u8 {
        self.buffer.as_ref()[field::SEND_TTL]
    }
    /// The RSVP Length: the whole message with this header, in octets.
    pub fn length(&self) -> u16 {
        let d = self.buffer.as_ref();
        u16::from_be_bytes([d[field::LENGTH.start], d[field::LENGTH.start + 1]])
    }
    /// The objects: the octets after the header up to the RSVP Length.
    pub fn objects(&self) -> &[u8] {
        &self.buffer.as_ref()[HEADER_LEN..usize::from(self.length())]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Packet<T> {
    /// Write version 1, no flags, the Msg Type, Send_TTL, a zero reserved octet and the
    /// RSVP Length; the checksum is zeroed (see [`Packet::fill_checksum`]).
    pub fn set_header(&mut self, kind: MsgType, send_ttl: u8, length: u16) {
        let d = self.buffer.as_mut();
        d[field::VER_FLAGS] = VERSION << 4;
        d[field::MSG_TYPE] = kind as u8;
        d[field::CHECKSUM].fill(0);
        d[field::SEND_TTL] = send_ttl;
        d[field::SEND_TTL + 1] = 0;
        d[field::LENGTH].copy_from_slice(&length.to_be_bytes());
    }

    /// Compute and write the checksum over the RSVP Length octets. A computed 0 is sent
    /// as 0xFFFF (the same in one's complement), as 0 means "no checksum".
    pub fn fill_checksum(&mut self) {
        let len = usize::from(self.length());
        let d = self.buffer.as_mut();
        d[field::CHECKSUM].fill(0);
        let sum = match crate::checksum::internet(&d[..len]) {
            0 => 0xffff,
            s => s,
        };
        d[field::CHECKSUM].copy_from_slice(&sum.to_be_bytes());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn msg_type_numbers_round_trip() {
        for n in 0..=255u8 {
            if let Some(t) = MsgType::from_u8(n) {
                assert_eq!(t as u8, n);
            }
        }
        let known: Vec<u8> = (0..=255u8)
            .filter(|&n| MsgType::from_u8(n).is_some())
            .collect();
        assert_eq!(known, vec![1, 2, 3, 4, 5, 6, 7]);
        assert_eq!(MsgType::ResvConf.name(), "ResvConf");
    }

    #[test]
    fn error_codes_of_parse_errors() {
        let e = ParseError::UnknownClass {
            class: 0x42,
            ctype: 7,
        };
        assert_eq!(e.error_code(), Some((13, 0x4207)));
        let e = ParseError::UnknownCType {
            class: 10,
            ctype: 9,
        };
        assert_eq!(e.error_code(), Some((14, 0x0a09)));
        assert_eq!(ParseError::UnknownStyle(0x1f).error_code(), Some((6, 0)));
        assert_eq!(ParseError::BadChecksum.error_code(), None);
        assert_eq!(ParseError::Missing(1).error_code(), None);
    }

    #[test]
    fn header_checks() {
        // version 1, Path, no checksum, ttl 63, length 8
        let ok = [0x10, 1, 0, 0, 63, 0, 0, 8];
        let p = Packet::new_checked(&ok[..]).unwrap();
        assert_eq!(
            (p.version(), p.msg_type(), p.send_ttl(), p.length()),
            (1, 1, 63, 8)
        );
        assert!(p.objects().is_empty());
        let mut v2 = ok;
        v2[0] = 0x20;
        assert_eq!(
            Packet::new_checked(&v2[..]).unwrap_err(),
            ParseError::BadVersion(2)
        );
        let mut long = ok;
        long[7] = 12;
        assert_eq!(
            Packet::new_checked(&long[..]).unwrap_err(),
            ParseError::Truncated
        );
        let mut short = ok;
        short[7] = 4;
        assert_eq!(
            Packet::new_checked(&short[..]).unwrap_err(),
            ParseError::BadLength
        );
        let mut odd = [0u8; 12];
        odd[..8].copy_from_slice(&ok);
        odd[7] = 10;
        assert_eq!(
            Packet::new_checked(&odd[..]).unwrap_err(),
            ParseError::BadLength
        );
        assert_eq!(
            Packet::new_checked(&ok[..7]).unwrap_err(),
            ParseError::Truncated
        );
    }

    #[test]
    fn checksum_filled_and_checked() {
        let mut buf = [0u8; 8];
        let mut p = Packet::new_unchecked(&mut buf[..]);
        p.set_header(MsgType::Resv, 1, 8);
        p.fill_checksum();
        // words 0x1002, 0x0000, 0x0100, 0x0008: sum 0x110a, complement 0xeef5
        assert_eq!(p.checksum(), 0xeef5);
        assert!(Packet::new_checked(&buf[..]).is_ok());
        buf[4] ^= 0x40;
        assert_eq!(
            Packet::new_checked(&buf[..]).unwrap_err(),
            ParseError::BadChecksum
        );
    }
}
