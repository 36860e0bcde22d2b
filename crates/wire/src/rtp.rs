//! The RTP fixed header of RFC 3550 §5.1, which dualperf writes in front of the probe
//! when a flow imitates a real RTP media stream, plus a sans-IO [`RtpStream`] that numbers
//! and timestamps the packets of one source.
//!
//! ```text
//!  0                   1                   2                   3
//!  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |V=2|P|X|  CC   |M|     PT      |       sequence number         |  0
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |                           timestamp                           |  4
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |           synchronization source (SSRC) identifier            |  8
//! +=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+
//! |            contributing source (CSRC) identifiers             | 12
//! |                             ....                              |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+ 12 + 4·CC
//! |   header extension (X = 1, RFC 3550 §5.3.1):                  |
//! |      defined by profile       |           length              |
//! |                 header extension (length · 4 bytes)           |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |                            payload                            |
//! |                               +-------------------------------+
//! |                               |  padding (P = 1) ...  | count |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! ```
//!
//! All fields are big-endian. The fixed header is [`HEADER_LEN`] = 12 bytes.
//!
//! - `V` (2 bits) is [`VERSION`] = 2; other versions are rejected.
//! - `P`: the packet ends with padding whose last octet counts the padding octets,
//!   itself included.
//! - `X`: one header extension follows the CSRC list; its `length` counts 32-bit words
//!   after the 4-byte extension header.
//! - `CC` (4 bits) is the number of CSRC identifiers, at most [`MAX_CSRCS`].
//! - `M` is the profile's marker bit (e.g. the first packet of a talkspurt).
//! - `PT` (7 bits) is the payload type; the static ones of RFC 3551 are `PT_*`.
//! - `sequence number` increments by one per packet and wraps.
//! - `timestamp` is the sampling instant of the first payload octet, in units of the
//!   payload type's clock ([`clock_rate_hz`]), and wraps.
//!
//! [`Repr`] carries the fixed header and the CSRC list. Parsing skips the header
//! extension and padding; emitting writes neither. RFC 3550 §A.8 interarrival jitter is
//! computed by the meter crate, not here.

use crate::{Error, Result};

/// The RTP version this build writes and reads.
pub const VERSION: u8 = 2;
/// Length of the fixed header, without CSRCs.
pub const HEADER_LEN: usize = 12;
/// The most CSRC identifiers a header can carry (the CC field is 4 bits).
pub const MAX_CSRCS: usize = 15;
/// Length of the header extension's own header (profile and length).
pub const EXT_HEADER_LEN: usize = 4;

/// Static payload type of G.711 µ-law audio (RFC 3551 Table 4).
pub const PT_PCMU: u8 = 0;
/// Static payload type of G.723.1 audio (RFC 3551 Table 4).
pub const PT_G723: u8 = 4;
/// Static payload type of G.711 A-law audio (RFC 3551 Table 4).
pub const PT_PCMA: u8 = 8;
/// Static payload type of G.729 audio (RFC 3551 Table 4).
pub const PT_G729: u8 = 18;
/// Static payload type of H.261 video (RFC 3551 Table 5).
pub const PT_H261: u8 = 31;

/// The RTP clock rate of a static payload type of RFC 3551 Tables 4 and 5, or `None`
/// for unassigned, reserved and dynamic (96–127) types.
pub const fn clock_rate_hz(pt: u8) -> Option<u32> {
    match pt {
        // PCMU, GSM, G723, DVI4/8000, LPC, PCMA, G722 (8000 per RFC 3551 §4.5.2 though it
        // samples at 16 kHz),
        // QCELP, CN, G728, G729.
        0 | 3 | 4 | 5 | 7 | 8 | 9 | 12 | 13 | 15 | 18 => Some(8_000),
        6 => Some(16_000),                           // DVI4/16000
        10 | 11 => Some(44_100),                     // L16 stereo, L16 mono
        16 => Some(11_025),                          // DVI4/11025
        17 => Some(22_050),                          // DVI4/22050
        14 | 25 | 26 | 28 | 31..=34 => Some(90_000), // MPA, CelB, JPEG, nv, H261, MPV, MP2T, H263
        _ => None,
    }
}

mod field {
    pub(super) type Field = core::ops::Range<usize>;
    pub(super) const VPXCC: usize = 0;
    pub(super) const M_PT: usize = 1;
    pub(super) const SEQ: Field = 2..4;
    pub(super) const TIMESTAMP: Field = 4..8;
    pub(super) const SSRC: Field = 8..12;
    pub(super) const CSRCS: usize = 12;
    pub(super) const CSRC_LEN: usize = 4;
    pub(super) const EXT_PROFILE: Field = 0..2;
    pub(super) const EXT_LENGTH: Field = 2..4;
}

/// A read/write view of an RTP packet in a buffer.
#[derive(Debug, Clone)]
pub struct Packet<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Packet<T> {
    /// Wrap a buffer without checks; accessors may panic if it is too short.
    pub const fn new_unchecked(buffer: T) -> Self {
        Self { buffer }
    }

    /// Wrap a buffer and validate it: length, version, that the CSRC list and the header
    /// extension fit, and that padding is non-empty and no longer than what follows the
    /// header. Required for untrusted input; when it returns `Ok`, no accessor panics.
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
        let csrcs_end = self.csrcs_end();
        if len < csrcs_end {
            return Err(Error::Truncated {
                need: csrcs_end,
                have: len,
            });
        }
        if self.extension() {
            if len < csrcs_end + EXT_HEADER_LEN {
                return Err(Error::Truncated {
                    need: csrcs_end + EXT_HEADER_LEN,
                    have: len,
                });
            }
            if len < self.header_len() {
                return Err(Error::Truncated {
                    need: self.header_len(),
                    have: len,
                });
            }
        }
        if self.padding() {
            let pad = usize::from(self.buffer.as_ref()[len - 1]);
            if pad == 0 {
                return Err(Error::Malformed("RTP padding length 0"));
            }
            if pad > len - self.header_len() {
                return Err(Error::Malformed("RTP padding longer than the payload"));
            }
        }
        Ok(())
    }

    fn csrcs_end(&self) -> usize {
        field::CSRCS + usize::from(self.csrc_count()) * field::CSRC_LEN
    }

    /// Unwrap the buffer.
    pub fn into_inner(self) -> T {
        self.buffer
    }
    /// The version (2 bits).
    pub fn version(&self) -> u8 {
        self.buffer.as_ref()[field::VPXCC] >> 6
    }
    /// The padding bit.
    pub fn padding(&self) -> bool {
        self.buffer.as_ref()[field::VPXCC] & 0x20 != 0
    }
    /// The extension bit.
    pub fn extension(&self) -> bool {
        self.buffer.as_ref()[field::VPXCC] & 0x10 != 0
    }
    /// The CSRC count (4 bits).
    pub fn csrc_count(&self) -> u8 {
        self.buffer.as_ref()[field::VPXCC] & 0x0f
    }
    /// The marker bit.
    pub fn marker(&self) -> bool {
        self.buffer.as_ref()[field::M_PT] & 0x80 != 0
    }
    /// The payload type (7 bits).
    pub fn payload_type(&self) -> u8 {
        self.buffer.as_ref()[field::M_PT] & 0x7f
    }
    /// The (wrapping) sequence number.
    pub fn seq(&self) -> u16 {
        u16::from_be_bytes(be(&self.buffer.as_ref()[field::SEQ]))
    }
    /// The (wrapping) media timestamp, in units of the payload type's clock.
    pub fn timestamp(&self) -> u32 {
        u32::from_be_bytes(be(&self.buffer.as_ref()[field::TIMESTAMP]))
    }
    /// The synchronization source identifier.
    pub fn ssrc(&self) -> u32 {
        u32::from_be_bytes(be(&self.buffer.as_ref()[field::SSRC]))
    }
    /// The CSRC identifier at `index`, or `None` when `index >= csrc_count()`.
    pub fn csrc(&self, index: usize) -> Option<u32> {
        if index >= usize::from(self.csrc_count()) {
            return None;
        }
        let start = field::CSRCS + index * field::CSRC_LEN;
        Some(u32::from_be_bytes(be(
            &self.buffer.as_ref()[start..start + field::CSRC_LEN]
        )))
    }
    /// The header extension's profile-defined 16 bits, when the extension bit is set.
    pub fn extension_profile(&self) -> Option<u16> {
        let start = self.extension().then(|| self.csrcs_end())?;
        Some(u16::from_be_bytes(be(
            &self.buffer.as_ref()[start..][field::EXT_PROFILE]
        )))
    }
    /// The header extension's data (after its 4-byte header), when the extension bit is
    /// set.
    pub fn extension_data(&self) -> Option<&[u8]> {
        let start = self
            .extension()
            .then(|| self.csrcs_end() + EXT_HEADER_LEN)?;
        Some(&self.buffer.as_ref()[start..self.header_len()])
    }
    /// Length of the whole header: fixed part, CSRC list and header extension.
    pub fn header_len(&self) -> usize {
        let csrcs_end = self.csrcs_end();
        if !self.extension() {
            return csrcs_end;
        }
        let words = u16::from_be_bytes(be(&self.buffer.as_ref()[csrcs_end..][field::EXT_LENGTH]));
        csrcs_end + EXT_HEADER_LEN + usize::from(words) * 4
    }
    /// Number of padding octets at the end, the count octet included; 0 without padding.
    pub fn padding_len(&self) -> usize {
        if self.padding() {
            let data = self.buffer.as_ref();
            usize::from(data[data.len() - 1])
        } else {
            0
        }
    }
    /// The payload: what follows the header, without the padding.
    pub fn payload(&self) -> &[u8] {
        let data = self.buffer.as_ref();
        &data[self.header_len()..data.len() - self.padding_len()]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Packet<T> {
    /// Set the version (2 bits).
    pub fn set_version(&mut self, version: u8) {
        let b = &mut self.buffer.as_mut()[field::VPXCC];
        *b = (*b & 0x3f) | (version & 0x03) << 6;
    }
    /// Set the padding bit.
    pub fn set_padding(&mut self, padding: bool) {
        set_bit(&mut self.buffer.as_mut()[field::VPXCC], 0x20, padding);
    }
    /// Set the extension bit.
    pub fn set_extension(&mut self, extension: bool) {
        set_bit(&mut self.buffer.as_mut()[field::VPXCC], 0x10, extension);
    }
    /// Set the CSRC count (4 bits).
    pub fn set_csrc_count(&mut self, count: u8) {
        let b = &mut self.buffer.as_mut()[field::VPXCC];
        *b = (*b & 0xf0) | (count & 0x0f);
    }
    /// Set the marker bit.
    pub fn set_marker(&mut self, marker: bool) {
        set_bit(&mut self.buffer.as_mut()[field::M_PT], 0x80, marker);
    }
    /// Set the payload type (7 bits).
    pub fn set_payload_type(&mut self, pt: u8) {
        let b = &mut self.buffer.as_mut()[field::M_PT];
        *b = (*b & 0x80) | (pt & 0x7f);
    }
    /// Set the sequence number.
    pub fn set_seq(&mut self, seq: u16) {
        self.buffer.as_mut()[field::SEQ].copy_from_slice(&seq.to_be_bytes());
    }
    /// Set the media timestamp.
    pub fn set_timestamp(&mut self, timestamp: u32) {
        self.buffer.as_mut()[field::TIMESTAMP].copy_from_slice(&timestamp.to_be_bytes());
    }
    /// Set the synchronization source identifier.
    pub fn set_ssrc(&mut self, ssrc: u32) {
        self.buffer.as_mut()[field::SSRC].copy_from_slice(&ssrc.to_be_bytes());
    }
    /// Set the CSRC identifier at `index` (the CSRC count is set separately).
    pub fn set_csrc(&mut self, index: usize, csrc: u32) {
        let start = field::CSRCS + index * field::CSRC_LEN;
        self.buffer.as_mut()[start..start + field::CSRC_LEN].copy_from_slice(&csrc.to_be_bytes());
    }
    /// The payload, mutably: what follows the header, without the padding.
    pub fn payload_mut(&mut self) -> &mut [u8] {
        let range = self.header_len()..self.buffer.as_ref().len() - self.padding_len();
        &mut self.buffer.as_mut()[range]
    }
}

fn set_bit(byte: &mut u8, mask: u8, on: bool) {
    if on {
        *byte |= mask;
    } else {
        *byte &= !mask;
    }
}

fn be<const N: usize>(s: &[u8]) -> [u8; N] {
    let mut out = [0u8; N];
    out.copy_from_slice(s);
    out
}

/// The meaning of an RTP header: the fixed part and the CSRC list. The header extension
/// and padding are skipped by [`Repr::parse`] and never written by [`Repr::emit`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Repr {
    /// The marker bit.
    pub marker: bool,
    /// The payload type, 0–127.
    pub payload_type: u8,
    /// Wrapping sequence number.
    pub seq: u16,
    /// Wrapping media timestamp, in units of the payload type's clock.
    pub timestamp: u32,
    /// Synchronization source identifier.
    pub ssrc: u32,
    /// Contributing source identifiers, at most [`MAX_CSRCS`].
    pub csrcs: Vec<u32>,
}

impl Repr {
    /// Parse a checked packet.
    pub fn parse<T: AsRef<[u8]>>(packet: &Packet<T>) -> Result<Self> {
        packet.check()?;
        Ok(Self {
            marker: packet.marker(),
            payload_type: packet.payload_type(),
            seq: packet.seq(),
            timestamp: packet.timestamp(),
            ssrc: packet.ssrc(),
            csrcs: (0..usize::from(packet.csrc_count()))
                .filter_map(|i| packet.csrc(i))
                .collect(),
        })
    }

    /// Bytes needed to emit this header: 12 plus 4 per CSRC.
    pub fn buffer_len(&self) -> usize {
        HEADER_LEN + self.csrcs.len() * field::CSRC_LEN
    }

    /// Write the header into the front of `buffer`, with neither extension nor padding;
    /// the payload goes at `buffer[self.buffer_len()..]`.
    ///
    /// Fails with [`Error::TooLong`] for more than [`MAX_CSRCS`] CSRCs,
    /// [`Error::Malformed`] for a payload type above 127 and [`Error::Truncated`] when the
    /// buffer is smaller than [`Repr::buffer_len`].
    pub fn emit(&self, buffer: &mut [u8]) -> Result<()> {
        if self.csrcs.len() > MAX_CSRCS {
            return Err(Error::TooLong {
                len: self.csrcs.len(),
                max: MAX_CSRCS,
            });
        }
        if self.payload_type > 0x7f {
            return Err(Error::Malformed("RTP payload type above 127"));
        }
        if buffer.len() < self.buffer_len() {
            return Err(Error::Truncated {
                need: self.buffer_len(),
                have: buffer.len(),
            });
        }
        let mut packet = Packet::new_unchecked(buffer);
        packet.set_version(VERSION);
        packet.set_padding(false);
        packet.set_extension(false);
        // At most MAX_CSRCS, checked above.
        packet.set_csrc_count(self.csrcs.len() as u8);
        packet.set_marker(self.marker);
        packet.set_payload_type(self.payload_type);
        packet.set_seq(self.seq);
        packet.set_timestamp(self.timestamp);
        packet.set_ssrc(self.ssrc);
        for (i, &csrc) in self.csrcs.iter().enumerate() {
            packet.set_csrc(i, csrc);
        }
        Ok(())
    }
}

/// Numbers and timestamps the packets of one RTP source, sans IO: the caller says when
/// each packet's media was sampled, relative to the stream start, and gets its header.
#[derive(Clone, Debug)]
pub struct RtpStream {
    payload_type: u8,
    ssrc: u32,
    next_seq: u16,
    initial_timestamp: u32,
    clock_rate_hz: u32,
}

impl RtpStream {
    /// A stream whose first packet gets `initial_seq` and whose media time 0 maps to
    /// `initial_timestamp` (RFC 3550 recommends random initial values for both).
    pub const fn new(
        payload_type: u8,
        ssrc: u32,
        initial_seq: u16,
        initial_timestamp: u32,
        clock_rate_hz: u32,
    ) -> Self {
        Self {
            payload_type,
            ssrc,
            next_seq: initial_seq,
            initial_timestamp,
            clock_rate_hz,
        }
    }

    /// The header of the next packet, whose media was sampled `media_time_ns` after the
    /// stream start: the sequence number is one more than the previous packet's and the
    /// timestamp is `initial + round(media_time_ns · clock_rate / 10⁹)`, both wrapping.
    pub fn next(&mut self, media_time_ns: u64, marker: bool) -> Repr {
        let seq = self.next_seq;
        self.next_seq = seq.wrapping_add(1);
        let ticks = (u128::from(media_time_ns) * u128::from(self.clock_rate_hz) + 500_000_000)
            / 1_000_000_000;
        // RTP timestamps are modulo 2^32: keeping the low 32 bits is the intent.
        let ticks = ticks as u32;
        Repr {
            marker,
            payload_type: self.payload_type,
            seq,
            timestamp: self.initial_timestamp.wrapping_add(ticks),
            ssrc: self.ssrc,
            csrcs: Vec::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// V=2 P=0 X=0 CC=0 M=1 PT=0, seq 0x1234, ts 0xdeadbeef, ssrc 0x01020304.
    const BYTES: [u8; 12] = [
        0x80, 0x80, 0x12, 0x34, 0xde, 0xad, 0xbe, 0xef, 0x01, 0x02, 0x03, 0x04,
    ];

    fn golden_repr() -> Repr {
        Repr {
            marker: true,
            payload_type: PT_PCMU,
            seq: 0x1234,
            timestamp: 0xdead_beef,
            ssrc: 0x0102_0304,
            csrcs: Vec::new(),
        }
    }

    #[test]
    fn parses_golden_bytes() {
        let p = Packet::new_checked(&BYTES[..]).unwrap();
        assert_eq!(p.version(), 2);
        assert!(!p.padding() && !p.extension());
        assert_eq!(p.csrc_count(), 0);
        assert_eq!(p.header_len(), 12);
        assert!(p.payload().is_empty());
        assert_eq!(Repr::parse(&p).unwrap(), golden_repr());
    }

    #[test]
    fn emits_golden_bytes() {
        let mut buf = [0xffu8; 12];
        golden_repr().emit(&mut buf).unwrap();
        assert_eq!(buf, BYTES);
    }

    #[test]
    fn emit_then_parse_round_trips_with_csrcs() {
        let repr = Repr {
            marker: false,
            payload_type: PT_H261,
            seq: u16::MAX,
            timestamp: 7,
            ssrc: u32::MAX,
            csrcs: vec![0x1111_1111, 0x2222_2222, 0x3333_3333],
        };
        assert_eq!(repr.buffer_len(), 24);
        let mut buf = [0u8; 30];
        repr.emit(&mut buf).unwrap();
        assert_eq!(&buf[..2], &[0x83, 31]);
        assert_eq!(&buf[12..16], &[0x11; 4]);
        let p = Packet::new_checked(&buf[..]).unwrap();
        assert_eq!(p.header_len(), 24);
        assert_eq!(p.payload().len(), 6);
        assert_eq!(p.csrc(2), Some(0x3333_3333));
        assert_eq!(p.csrc(3), None);
        assert_eq!(Repr::parse(&p).unwrap(), repr);
        let full = Repr {
            csrcs: (0..15).collect(),
            ..repr
        };
        let mut buf = [0u8; 72];
        full.emit(&mut buf).unwrap();
        assert_eq!(
            Repr::parse(&Packet::new_checked(&buf[..]).unwrap()).unwrap(),
            full
        );
    }

    #[test]
    fn skips_extension_and_padding() {
        #[rustfmt::skip]
        let bytes = [
            0xb1, 0x12, 0x00, 0x01, 0x00, 0x00, 0x00, 0xa0, 0xca, 0xfe, 0xba, 0xbe, // P X CC=1
            0x0a, 0x0b, 0x0c, 0x0d,                                                 // CSRC
            0xbe, 0xde, 0x00, 0x01,                                                 // ext hdr
            0x01, 0x02, 0x03, 0x04,                                                 // ext data
            0x55, 0x66, 0x77,                                                       // payload
            0x00, 0x02,                                                             // padding
        ];
        let p = Packet::new_checked(&bytes[..]).unwrap();
        assert!(p.padding() && p.extension());
        assert_eq!(p.header_len(), 24);
        assert_eq!(p.extension_profile(), Some(0xbede));
        assert_eq!(p.extension_data(), Some(&[1u8, 2, 3, 4][..]));
        assert_eq!(p.padding_len(), 2);
        assert_eq!(p.payload(), &[0x55, 0x66, 0x77]);
        let r = Repr::parse(&p).unwrap();
        assert_eq!(r.csrcs, vec![0x0a0b_0c0d]);
        assert_eq!((r.payload_type, r.seq, r.timestamp), (PT_G729, 1, 160));
        // An empty extension and padding that fills everything after the header.
        let mut b = bytes;
        b[19] = 0x00;
        b[28] = 9;
        let p = Packet::new_checked(&b[..]).unwrap();
        assert_eq!(p.header_len(), 20);
        assert_eq!(p.extension_data(), Some(&[][..]));
        assert!(p.payload().is_empty());
        // Without the extension bit there is no extension.
        let p = Packet::new_checked(&BYTES[..]).unwrap();
        assert_eq!((p.extension_profile(), p.extension_data()), (None, None));
        assert_eq!(p.padding_len(), 0);
    }

    #[test]
    fn payload_mut_writes_after_the_header() {
        let repr = Repr {
            csrcs: vec![9],
            ..golden_repr()
        };
        let mut buf = [0u8; 20];
        repr.emit(&mut buf).unwrap();
        Packet::new_unchecked(&mut buf[..])
            .payload_mut()
            .copy_from_slice(&[7; 4]);
        assert_eq!(&buf[16..], &[7; 4]);
        assert_eq!(
            Repr::parse(&Packet::new_checked(&buf[..]).unwrap()).unwrap(),
            repr
        );
    }

    #[test]
    fn rejects_every_malformation() {
        assert_eq!(
            Packet::new_checked(&BYTES[..11]).unwrap_err(),
            Error::Truncated { need: 12, have: 11 }
        );
        assert_eq!(
            Packet::new_checked(&[][..]).unwrap_err(),
            Error::Truncated { need: 12, have: 0 }
        );
        for (first, version) in [(0x00, 0), (0x40, 1), (0xc0, 3)] {
            let mut b = BYTES;
            b[0] = first;
            assert_eq!(
                Packet::new_checked(&b[..]).unwrap_err(),
                Error::UnsupportedVersion(version)
            );
        }
        // Two CSRCs announced, one present.
        let mut b = [0u8; 16];
        b[..12].copy_from_slice(&BYTES);
        b[0] = 0x82;
        assert_eq!(
            Packet::new_checked(&b[..]).unwrap_err(),
            Error::Truncated { need: 20, have: 16 }
        );
        // Extension bit without the extension header.
        let mut b = BYTES;
        b[0] = 0x90;
        assert_eq!(
            Packet::new_checked(&b[..]).unwrap_err(),
            Error::Truncated { need: 16, have: 12 }
        );
        // Extension announcing two words, one present.
        let mut b = [0u8; 20];
        b[..12].copy_from_slice(&BYTES);
        b[0] = 0x90;
        b[15] = 2;
        assert_eq!(
            Packet::new_checked(&b[..]).unwrap_err(),
            Error::Truncated { need: 24, have: 20 }
        );
        // Padding of length 0.
        let mut b = [0u8; 16];
        b[..12].copy_from_slice(&BYTES);
        b[0] = 0xa0;
        assert_eq!(
            Packet::new_checked(&b[..]).unwrap_err(),
            Error::Malformed("RTP padding length 0")
        );
        // Padding longer than what follows the header.
        b[15] = 5;
        assert_eq!(
            Packet::new_checked(&b[..]).unwrap_err(),
            Error::Malformed("RTP padding longer than the payload")
        );
        b[15] = 4;
        assert!(Packet::new_checked(&b[..]).is_ok());
        // Padding bit on a bare header: the count octet would be inside the header.
        let mut b = BYTES;
        b[0] = 0xa0;
        assert!(Packet::new_checked(&b[..]).is_err());
        // Parse re-checks an unchecked packet.
        assert!(Repr::parse(&Packet::new_unchecked(&BYTES[..5])).is_err());
    }

    #[test]
    fn emit_rejects_bad_reprs() {
        let mut buf = [0u8; 128];
        let too_many = Repr {
            csrcs: vec![0; 16],
            ..golden_repr()
        };
        assert_eq!(
            too_many.emit(&mut buf).unwrap_err(),
            Error::TooLong { len: 16, max: 15 }
        );
        let bad_pt = Repr {
            payload_type: 128,
            ..golden_repr()
        };
        assert!(matches!(bad_pt.emit(&mut buf), Err(Error::Malformed(_))));
        let with_csrc = Repr {
            csrcs: vec![1],
            ..golden_repr()
        };
        assert_eq!(
            with_csrc.emit(&mut buf[..12]).unwrap_err(),
            Error::Truncated { need: 16, have: 12 }
        );
    }

    #[test]
    fn static_payload_type_clock_rates() {
        assert_eq!(clock_rate_hz(PT_PCMU), Some(8_000));
        assert_eq!(clock_rate_hz(PT_G723), Some(8_000));
        assert_eq!(clock_rate_hz(PT_PCMA), Some(8_000));
        assert_eq!(clock_rate_hz(PT_G729), Some(8_000));
        assert_eq!(clock_rate_hz(PT_H261), Some(90_000));
        assert_eq!(clock_rate_hz(10), Some(44_100));
        assert_eq!(clock_rate_hz(6), Some(16_000));
        assert_eq!(clock_rate_hz(2), None);
        assert_eq!(clock_rate_hz(96), None);
    }

    #[test]
    fn stream_g711_20ms_steps_by_160() {
        let mut s = RtpStream::new(PT_PCMU, 0xabcd, 100, 1000, 8_000);
        for i in 0..50u32 {
            let r = s.next(u64::from(i) * 20_000_000, i == 0);
            assert_eq!(r.seq, 100 + i as u16);
            assert_eq!(r.timestamp, 1000 + 160 * i);
            assert_eq!(r.marker, i == 0);
            assert_eq!((r.payload_type, r.ssrc), (PT_PCMU, 0xabcd));
            assert!(r.csrcs.is_empty());
        }
        // Rounding to the nearest tick: 62.4 µs is 0.4992 ticks, 62.5 µs is 0.5.
        let mut s = RtpStream::new(PT_PCMU, 1, 0, 0, 8_000);
        assert_eq!(s.next(62_400, false).timestamp, 0);
        assert_eq!(s.next(62_500, false).timestamp, 1);
        // H.261 at 90 kHz, 40 ms frames.
        let mut v = RtpStream::new(PT_H261, 1, 0, 0, 90_000);
        assert_eq!(v.next(40_000_000, true).timestamp, 3600);
    }

    #[test]
    fn stream_wraps_seq_and_timestamp() {
        let mut s = RtpStream::new(PT_G729, 7, 65534, u32::MAX - 159, 8_000);
        let seqs: Vec<u16> = (0..3).map(|i| s.next(i * 20_000_000, false).seq).collect();
        assert_eq!(seqs, [65534, 65535, 0]);
        let mut s = RtpStream::new(PT_G729, 7, 65534, u32::MAX - 159, 8_000);
        assert_eq!(s.next(0, false).timestamp, u32::MAX - 159);
        assert_eq!(s.next(20_000_000, false).timestamp, 0);
        assert_eq!(s.next(40_000_000, false).timestamp, 160);
        // Media time long enough to wrap the tick count itself (~6.2 days at 8 kHz).
        let mut s = RtpStream::new(PT_PCMU, 7, 0, 0, 8_000);
        let ns = (1u64 << 32) * 125_000 + 20_000_000; // 2^32 ticks + 160
        assert_eq!(s.next(ns, false).timestamp, 160);
    }

    #[test]
    fn random_bytes_never_panic() {
        let mut state: u64 = 0x2545_f491_4f6c_dd1d;
        let mut next = || {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            (state >> 33) as u32
        };
        let mut accepted = 0;
        for _ in 0..5000 {
            let len = (next() % 80) as usize;
            let mut buf: Vec<u8> = (0..len).map(|_| next() as u8).collect();
            // Mostly version 2, so the deeper checks run.
            if let Some(first) = buf.first_mut() {
                if next() % 4 != 0 {
                    *first = (*first & 0x3f) | 0x80;
                }
            }
            let Ok(p) = Packet::new_checked(&buf[..]) else {
                continue;
            };
            accepted += 1;
            let _ = (
                p.marker(),
                p.payload_type(),
                p.seq(),
                p.timestamp(),
                p.ssrc(),
            );
            let _ = (p.extension_profile(), p.extension_data(), p.padding_len());
            assert!(p.header_len() + p.payload().len() + p.padding_len() == buf.len());
            for i in 0..16 {
                let _ = p.csrc(i);
            }
            let repr = Repr::parse(&p).unwrap();
            let mut out = vec![0u8; repr.buffer_len()];
            repr.emit(&mut out).unwrap();
            assert_eq!(
                Repr::parse(&Packet::new_checked(&out[..]).unwrap()).unwrap(),
                repr
            );
        }
        assert!(accepted > 100, "only {accepted} accepted");
    }
}
