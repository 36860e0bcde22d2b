//! The measurement probe: a compact, versioned header at the start of every payload
//! dualperf sends (after a real RTP header when the flow is RTP).
//!
//! ```text
//!  0                   1                   2                   3
//!  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |  magic (0xD6) |version| flags |            flow id            |  0
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |                        sequence number                        |  4
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |            transmit timestamp, ns since the Unix epoch        |  8
//! |                             (u64)                             |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+ 16
//! |   echo extension (flag EXT, echoes only, payload >= 32 bytes):  |
//! |            receiver receive timestamp, ns (u64)               | 16
//! |            receiver transmit timestamp, ns (u64)              | 24
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+ 32
//! ```
//!
//! All fields are big-endian. The base header is [`HEADER_LEN`] = 16 bytes, the smallest
//! payload any preset uses (D-ITG clamps sizes to at least 16 bytes too). The rest of
//! the payload is padding and is not interpreted.
//!
//! - `version` (4 bits) is [`VERSION`]; a receiver drops other versions.
//! - `flags` (4 bits): [`FLAG_ECHO`] marks a round-trip echo sent back by the receiver;
//!   [`FLAG_EXT`] says the echo extension follows.
//! - `flow id` is assigned by the receiver when the sender registers its flows on the
//!   control channel, so it is unique at that receiver across all senders.
//! - `sequence number` counts from 0 per flow and wraps; receivers unwrap it with
//!   [`SeqUnwrapper`].
//! - `transmit timestamp` is the sender's wall clock (CLOCK_REALTIME) when the packet was
//!   handed to the kernel, so one-way delay between processes on one host is exact.

use crate::{Error, Result};

/// The first octet of every probe.
pub const MAGIC: u8 = 0xD6;
/// The probe format version this build writes and reads.
pub const VERSION: u8 = 1;
/// Length of the base header.
pub const HEADER_LEN: usize = 16;
/// Length of the header with the echo extension.
pub const EXT_HEADER_LEN: usize = 32;
/// Flag: this probe is an echo of a round-trip meter.
pub const FLAG_ECHO: u8 = 0x1;
/// Flag: the echo extension (receiver timestamps) follows the base header.
pub const FLAG_EXT: u8 = 0x2;
const KNOWN_FLAGS: u8 = FLAG_ECHO | FLAG_EXT;

mod field {
    pub(super) type Field = core::ops::Range<usize>;
    pub(super) const MAGIC: usize = 0;
    pub(super) const VER_FLAGS: usize = 1;
    pub(super) const FLOW: Field = 2..4;
    pub(super) const SEQ: Field = 4..8;
    pub(super) const TX_NS: Field = 8..16;
    pub(super) const ECHO_RX_NS: Field = 16..24;
    pub(super) const ECHO_TX_NS: Field = 24..32;
}

/// A read/write view of a probe header in a buffer.
#[derive(Debug, Clone)]
pub struct Packet<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Packet<T> {
    /// Wrap a buffer without checks; accessors may panic if it is too short.
    pub const fn new_unchecked(buffer: T) -> Self {
        Self { buffer }
    }

    /// Wrap a buffer and validate it: length, magic, version, flags and, when the
    /// extension flag is set, the extension's length. Required for untrusted input; when
    /// it returns `Ok`, no accessor panics.
    pub fn new_checked(buffer: T) -> Result<Self> {
        let packet = Self::new_unchecked(buffer);
        packet.check()?;
        Ok(packet)
    }

    fn check(&self) -> Result<()> {
        let data = self.buffer.as_ref();
        if data.len() < HEADER_LEN {
            return Err(Error::Truncated {
                need: HEADER_LEN,
                have: data.len(),
            });
        }
        if data[field::MAGIC] != MAGIC {
            return Err(Error::WrongMagic(data[field::MAGIC]));
        }
        if self.version() != VERSION {
            return Err(Error::UnsupportedVersion(self.version()));
        }
        if self.flags() & !KNOWN_FLAGS != 0 {
            return Err(Error::Malformed("unknown probe flags"));
        }
        if self.flags() & FLAG_EXT != 0 && data.len() < EXT_HEADER_LEN {
            return Err(Error::Truncated {
                need: EXT_HEADER_LEN,
                have: data.len(),
            });
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
    /// The flags nibble.
    pub fn flags(&self) -> u8 {
        self.buffer.as_ref()[field::VER_FLAGS] & 0x0f
    }
    /// The flow id.
    pub fn flow(&self) -> u16 {
        u16::from_be_bytes(be(&self.buffer.as_ref()[field::FLOW]))
    }
    /// The (wrapping) sequence number.
    pub fn seq(&self) -> u32 {
        u32::from_be_bytes(be(&self.buffer.as_ref()[field::SEQ]))
    }
    /// The sender's transmit timestamp, ns since the Unix epoch.
    pub fn tx_ns(&self) -> u64 {
        u64::from_be_bytes(be(&self.buffer.as_ref()[field::TX_NS]))
    }
    /// The receiver's receive timestamp in an echo extension.
    pub fn echo_rx_ns(&self) -> u64 {
        u64::from_be_bytes(be(&self.buffer.as_ref()[field::ECHO_RX_NS]))
    }
    /// The receiver's transmit timestamp in an echo extension.
    pub fn echo_tx_ns(&self) -> u64 {
        u64::from_be_bytes(be(&self.buffer.as_ref()[field::ECHO_TX_NS]))
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Packet<T> {
    /// Set magic, version and flags.
    pub fn set_header(&mut self, flags: u8) {
        let data = self.buffer.as_mut();
        data[field::MAGIC] = MAGIC;
        data[field::VER_FLAGS] = VERSION << 4 | (flags & 0x0f);
    }
    /// Set the flow id.
    pub fn set_flow(&mut self, flow: u16) {
        self.buffer.as_mut()[field::FLOW].copy_from_slice(&flow.to_be_bytes());
    }
    /// Set the sequence number.
    pub fn set_seq(&mut self, seq: u32) {
        self.buffer.as_mut()[field::SEQ].copy_from_slice(&seq.to_be_bytes());
    }
    /// Set the transmit timestamp (done last, right before the packet is sent).
    pub fn set_tx_ns(&mut self, ns: u64) {
        self.buffer.as_mut()[field::TX_NS].copy_from_slice(&ns.to_be_bytes());
    }
    /// Set the echo extension's timestamps.
    pub fn set_echo(&mut self, rx_ns: u64, tx_ns: u64) {
        let data = self.buffer.as_mut();
        data[field::ECHO_RX_NS].copy_from_slice(&rx_ns.to_be_bytes());
        data[field::ECHO_TX_NS].copy_from_slice(&tx_ns.to_be_bytes());
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Packet<T> {
    /// Turn a received probe into its round-trip echo, in place: set the echo flag and,
    /// when the buffer has room for the extension, the receiver's receive and transmit
    /// timestamps (so the sender can subtract the time the receiver held the probe).
    pub fn make_echo(&mut self, rx_ns: u64, tx_ns: u64) {
        let ext = self.buffer.as_ref().len() >= EXT_HEADER_LEN;
        self.set_header(FLAG_ECHO | if ext { FLAG_EXT } else { 0 });
        if ext {
            self.set_echo(rx_ns, tx_ns);
        }
    }
}

fn be<const N: usize>(s: &[u8]) -> [u8; N] {
    let mut out = [0u8; N];
    out.copy_from_slice(s);
    out
}

/// Where the probe starts in a payload: at 0, or right after a valid RTP header (the
/// probe's first octet, 0xD6, has the bits of RTP version 3, so the two never collide).
/// `None` if neither holds.
pub fn find(payload: &[u8]) -> Option<usize> {
    if payload.first() == Some(&MAGIC) {
        return Some(0);
    }
    let rtp = crate::rtp::Packet::new_checked(payload).ok()?;
    let offset = rtp.header_len();
    (payload.get(offset) == Some(&MAGIC)).then_some(offset)
}

/// Receiver timestamps carried by an echo.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct EchoStamps {
    /// When the receiver received the probe, ns since the Unix epoch.
    pub rx_ns: u64,
    /// When the receiver sent the echo, ns since the Unix epoch.
    pub tx_ns: u64,
}

/// The meaning of a probe header.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Repr {
    /// Flow id, assigned by the receiver.
    pub flow: u16,
    /// Wrapping sequence number.
    pub seq: u32,
    /// Sender transmit timestamp, ns since the Unix epoch.
    pub tx_ns: u64,
    /// Whether this is a round-trip echo.
    pub echo: bool,
    /// Receiver timestamps, present on echoes with room for them.
    pub stamps: Option<EchoStamps>,
}

impl Repr {
    /// Parse a checked packet.
    pub fn parse<T: AsRef<[u8]>>(packet: &Packet<T>) -> Result<Self> {
        packet.check()?;
        let flags = packet.flags();
        Ok(Self {
            flow: packet.flow(),
            seq: packet.seq(),
            tx_ns: packet.tx_ns(),
            echo: flags & FLAG_ECHO != 0,
            stamps: (flags & FLAG_EXT != 0).then(|| EchoStamps {
                rx_ns: packet.echo_rx_ns(),
                tx_ns: packet.echo_tx_ns(),
            }),
        })
    }

    /// Bytes needed to emit this header.
    pub const fn buffer_len(&self) -> usize {
        if self.stamps.is_some() {
            EXT_HEADER_LEN
        } else {
            HEADER_LEN
        }
    }

    /// Write the header into the front of `buffer`.
    ///
    /// Fails with [`Error::Truncated`] when the buffer is smaller than
    /// [`Repr::buffer_len`], so a payload too small for the probe is a clear error.
    pub fn emit(&self, buffer: &mut [u8]) -> Result<()> {
        if buffer.len() < self.buffer_len() {
            return Err(Error::Truncated {
                need: self.buffer_len(),
                have: buffer.len(),
            });
        }
        let mut packet = Packet::new_unchecked(buffer);
        let mut flags = 0;
        if self.echo {
            flags |= FLAG_ECHO;
        }
        if self.stamps.is_some() {
            flags |= FLAG_EXT;
        }
        packet.set_header(flags);
        packet.set_flow(self.flow);
        packet.set_seq(self.seq);
        packet.set_tx_ns(self.tx_ns);
        if let Some(s) = self.stamps {
            packet.set_echo(s.rx_ns, s.tx_ns);
        }
        Ok(())
    }
}

/// Turns wrapping 32-bit sequence numbers into 64-bit ones, in the manner of RFC 3550
/// §A.1: a number far below the highest seen is taken as a wrap, far above as a late
/// packet from before a wrap.
#[derive(Clone, Copy, Debug, Default)]
pub struct SeqUnwrapper {
    highest: Option<u64>,
}

impl SeqUnwrapper {
    /// Extend `seq` to 64 bits, choosing the candidate closest to the highest seen.
    pub fn unwrap(&mut self, seq: u32) -> u64 {
        let Some(highest) = self.highest else {
            self.highest = Some(u64::from(seq));
            return u64::from(seq);
        };
        let value = Self::nearest(highest, seq);
        if value > highest {
            self.highest = Some(value);
        }
        value
    }

    /// The `n` (≥ 1) numbers `seq`, `seq + 1`, … (wrapping) as `n` calls of
    /// [`Self::unwrap`] would take them, when each of those would return one more than
    /// the last: so whenever the first is at least the highest seen yet (each next one
    /// is then the new highest plus one). Returns the first's value; `None`, changing
    /// nothing, when the first lies below the highest (a late packet: unwrap them one
    /// by one).
    pub fn unwrap_consecutive(&mut self, seq: u32, n: u32) -> Option<u64> {
        let first = match self.highest {
            None => u64::from(seq),
            Some(highest) => Self::nearest(highest, seq),
        };
        if self.highest.is_some_and(|h| first < h) {
            return None;
        }
        // u64 numbers start below 2^32 and grow by one a packet: no overflow.
        self.highest = Some(first + u64::from(n.max(1)) - 1);
        Some(first)
    }

    /// The 64-bit candidate for `seq` closest to `highest`.
    fn nearest(highest: u64, seq: u32) -> u64 {
        let epoch = highest & !0xffff_ffff;
        let base = epoch | u64::from(seq);
        let candidates = [
            base.checked_sub(1 << 32),
            Some(base),
            base.checked_add(1 << 32),
        ];
        candidates
            .into_iter()
            .flatten()
            .min_by_key(|c| c.abs_diff(highest))
            .unwrap_or(base)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const BYTES: [u8; 16] = [
        0xD6, 0x10, 0x00, 0x07, 0x00, 0x00, 0x01, 0x00, 0x17, 0x9A, 0x2B, 0x3C, 0x4D, 0x5E, 0x6F,
        0x70,
    ];

    #[test]
    fn parses_golden_bytes() {
        let p = Packet::new_checked(&BYTES[..]).unwrap();
        let r = Repr::parse(&p).unwrap();
        assert_eq!(
            r,
            Repr {
                flow: 7,
                seq: 256,
                tx_ns: 0x179A_2B3C_4D5E_6F70,
                echo: false,
                stamps: None
            }
        );
    }

    #[test]
    fn emit_then_parse_round_trips_with_extension() {
        let repr = Repr {
            flow: 65535,
            seq: u32::MAX,
            tx_ns: 1,
            echo: true,
            stamps: Some(EchoStamps { rx_ns: 2, tx_ns: 3 }),
        };
        let mut buf = [0u8; 40];
        repr.emit(&mut buf).unwrap();
        assert_eq!(
            Repr::parse(&Packet::new_checked(&buf[..]).unwrap()).unwrap(),
            repr
        );
        let mut plain = [0u8; 16];
        Repr {
            stamps: None,
            ..repr
        }
        .emit(&mut plain)
        .unwrap();
        assert_eq!(&plain[..2], &[0xD6, 0x11]);
    }

    #[test]
    fn rejects_short_wrong_magic_version_and_flags() {
        assert_eq!(
            Packet::new_checked(&BYTES[..15]).unwrap_err(),
            Error::Truncated { need: 16, have: 15 }
        );
        let mut b = BYTES;
        b[0] = 0x00;
        assert_eq!(
            Packet::new_checked(&b[..]).unwrap_err(),
            Error::WrongMagic(0)
        );
        let mut b = BYTES;
        b[1] = 0x20;
        assert_eq!(
            Packet::new_checked(&b[..]).unwrap_err(),
            Error::UnsupportedVersion(2)
        );
        let mut b = BYTES;
        b[1] = 0x18;
        assert!(Packet::new_checked(&b[..]).is_err());
        // Extension flag without room for it.
        let mut b = BYTES;
        b[1] = 0x13;
        assert_eq!(
            Packet::new_checked(&b[..]).unwrap_err(),
            Error::Truncated { need: 32, have: 16 }
        );
    }

    #[test]
    fn echoes_carry_stamps_only_when_there_is_room() {
        let mut small = BYTES;
        Packet::new_unchecked(&mut small[..]).make_echo(5, 6);
        let r = Repr::parse(&Packet::new_checked(&small[..]).unwrap()).unwrap();
        assert!(r.echo);
        assert_eq!(r.stamps, None);
        assert_eq!((r.flow, r.seq), (7, 256));
        let mut big = [0u8; 40];
        big[..16].copy_from_slice(&BYTES);
        Packet::new_unchecked(&mut big[..]).make_echo(5, 6);
        let r = Repr::parse(&Packet::new_checked(&big[..]).unwrap()).unwrap();
        assert_eq!(r.stamps, Some(EchoStamps { rx_ns: 5, tx_ns: 6 }));
    }

    #[test]
    fn probe_is_found_alone_or_after_an_rtp_header() {
        assert_eq!(find(&BYTES), Some(0));
        let mut with_rtp = vec![0x80, 0x00, 0, 1, 0, 0, 0, 160, 1, 2, 3, 4];
        with_rtp.extend_from_slice(&BYTES);
        assert_eq!(find(&with_rtp), Some(12));
        with_rtp[12] = 0;
        assert_eq!(find(&with_rtp), None);
        assert_eq!(find(&[]), None);
        assert_eq!(find(&[0x80; 5]), None);
    }

    #[test]
    fn emit_into_small_buffer_is_a_clear_error() {
        let mut buf = [0u8; 12];
        assert_eq!(
            Repr::default().emit(&mut buf).unwrap_err(),
            Error::Truncated { need: 16, have: 12 }
        );
    }

    #[test]
    fn unwrapper_handles_wrap_and_late_packets() {
        let mut u = SeqUnwrapper::default();
        assert_eq!(u.unwrap(u32::MAX - 1), u64::from(u32::MAX - 1));
        assert_eq!(u.unwrap(u32::MAX), u64::from(u32::MAX));
        assert_eq!(u.unwrap(0), 1 << 32);
        assert_eq!(u.unwrap(u32::MAX), u64::from(u32::MAX)); // late, before the wrap
        assert_eq!(u.unwrap(5), (1 << 32) + 5);
        let mut v = SeqUnwrapper::default();
        assert_eq!(v.unwrap(3), 3);
        assert_eq!(v.unwrap(1), 1);
    }

    /// `unwrap_consecutive` leaves the unwrapper as the single calls would, across a
    /// wrap, and refuses a run that starts below the highest.
    #[test]
    fn unwrapper_takes_consecutive_numbers_as_single_calls_would() {
        for (before, first, n) in [
            (vec![], 7u32, 5u32),
            (vec![u32::MAX - 10], u32::MAX - 2, 6),
            (vec![4, 9], 9, 3),
            (vec![4, 9], 10, 1),
        ] {
            let (mut one, mut run) = (SeqUnwrapper::default(), SeqUnwrapper::default());
            for s in &before {
                assert_eq!(one.unwrap(*s), run.unwrap(*s));
            }
            let singles: Vec<u64> = (0..n).map(|k| one.unwrap(first.wrapping_add(k))).collect();
            let start = run.unwrap_consecutive(first, n).unwrap();
            let expected: Vec<u64> = (0..u64::from(n)).map(|k| start + k).collect();
            assert_eq!(singles, expected, "{before:?} then {first} x{n}");
            // The state after: the next number unwraps alike.
            let next = first.wrapping_add(n);
            assert_eq!(one.unwrap(next), run.unwrap(next));
        }
        let mut late = SeqUnwrapper::default();
        late.unwrap(100);
        assert_eq!(late.unwrap_consecutive(90, 4), None);
        assert_eq!(late.unwrap(101), 101, "a refused run changes nothing");
    }
}
