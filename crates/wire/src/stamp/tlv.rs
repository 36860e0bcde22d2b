//! STAMP TLVs (RFC 8972 §4): the optional extensions that follow the base packet.
//!
//! Every TLV (RFC 8972 §4):
//!
//! ```text
//!  0                   1                   2                   3
//!  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |STAMP TLV Flags|     Type      |           Length              |  0
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! ~                            Value                              ~  4
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//!
//! STAMP TLV Flags (RFC 8972 §4, IANA registry of §5.2):
//!  0 1 2 3 4 5 6 7
//! +-+-+-+-+-+-+-+-+
//! |U|M|I|R|R|R|R|R|   U unrecognized, M malformed, I integrity failed,
//! +-+-+-+-+-+-+-+-+   R reserved: zero on transmit, ignored on receipt
//! ```
//!
//! Length is the length of the Value in octets. The types decoded here:
//!
//! ```text
//! Extra Padding (RFC 8972 §4.1), Type 1, any Length: Value zero-filled here
//! (the RFC suggests pseudorandom octets and allows zeros; received octets are
//! not kept, only their number).
//!
//! Timestamp Information (RFC 8972 §4.3), Type 3, Length 4:
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |  Sync Src In  | Timestamp In  | Sync Src Out  | Timestamp Out |  4
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! (values: the registries of §5.4, `sync_source`, and §5.5, `timestamp_method`)
//!
//! Class of Service (RFC 8972 §4.4), Type 4, Length 4:
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |   DSCP1   |   DSCP2   |ECN| RP|          Reserved             |  4
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! DSCP1: the DSCP the Session-Sender asks for the reflected packet; DSCP2 and ECN:
//! what the reflector received (ECN per erratum 8199); RP (`rpd` here, its name in
//! draft-ietf-ippm-stamp-cos-ecn): 1 when the reflector could not use DSCP1. The
//! Reserved bits (which that draft gives to EC1/RPE) are zero on emit, ignored on parse.
//!
//! HMAC (RFC 8972 §4.8), Type 8, Length 16: HMAC-SHA-256 truncated to 16 octets over
//! the Sequence Number of the base packet followed by all the TLVs before this one.
//! ```
//!
//! Parsing (never fails, never panics; the base packet decides whether the packet is
//! accepted):
//! - TLVs follow one another to the end of the packet. When fewer than 4 octets are
//!   left they are packet padding (RFC 8762 §4.2) and ignored.
//! - A TLV whose Length runs past the end of the packet is malformed: it is kept, as
//!   [`TlvBody::Unknown`] with the octets that are there and `malformed` set, and ends
//!   the list (RFC 8972 §4: a reflector copies the remainder with M set). So a
//!   reflector can echo it and a sender sees it flagged.
//! - A TLV of a decoded type whose Length is wrong for it is kept as
//!   [`TlvBody::Unknown`] with `malformed` set; so is any TLV that arrives with M set
//!   (RFC 8972 §4: its contents must not be used).
//! - Types not decoded here are [`TlvBody::Unknown`], flags as they came.
//!
//! Integrity, when a key is given (RFC 8972 §4.8), without failing the packet:
//! - each HMAC TLV is checked over the Sequence Number and the TLV octets before it, as
//!   received; a wrong one gets `integrity_failed`;
//! - an HMAC TLV followed by any TLV but Extra Padding is in the wrong place, which the
//!   RFC says is handled as a verification failure: it gets `integrity_failed`;
//! - TLVs with no HMAC TLV at all (except a lone Extra Padding TLV) are not protected:
//!   every one gets `integrity_failed`. A key is the "control" of §4.8 that enables
//!   integrity protection of extensions, in either mode.
//!
//! `integrity_failed` thus means "I on the wire, or failed here": a receiver that finds
//! it on any TLV must not trust the TLVs (RFC 8972 §4.8).

use super::StampError;

/// Length of a TLV's Flags, Type and Length fields.
pub const TLV_HEADER_LEN: usize = 4;
/// Length of the HMAC TLV's value (RFC 8972 §4.8).
pub const HMAC_LEN: usize = 16;
const COS_LEN: usize = 4;
const TIMESTAMP_INFO_LEN: usize = 4;

/// STAMP TLV Types (IANA "STAMP TLV Types", RFC 8972 §5.1).
pub mod tlv_type {
    /// Reserved.
    pub const RESERVED: u8 = 0;
    /// Extra Padding (RFC 8972 §4.1).
    pub const EXTRA_PADDING: u8 = 1;
    /// Location (RFC 8972 §4.2); not decoded here.
    pub const LOCATION: u8 = 2;
    /// Timestamp Information (RFC 8972 §4.3).
    pub const TIMESTAMP_INFO: u8 = 3;
    /// Class of Service (RFC 8972 §4.4).
    pub const CLASS_OF_SERVICE: u8 = 4;
    /// Direct Measurement (RFC 8972 §4.5); not decoded here.
    pub const DIRECT_MEASUREMENT: u8 = 5;
    /// Access Report (RFC 8972 §4.6); not decoded here.
    pub const ACCESS_REPORT: u8 = 6;
    /// Follow-Up Telemetry (RFC 8972 §4.7); not decoded here.
    pub const FOLLOW_UP_TELEMETRY: u8 = 7;
    /// HMAC (RFC 8972 §4.8).
    pub const HMAC: u8 = 8;
}

/// Synchronization sources of the Timestamp Information TLV (IANA "STAMP
/// Synchronization Sources", RFC 8972 §5.4).
pub mod sync_source {
    /// Reserved (also "not reported").
    pub const RESERVED: u8 = 0;
    /// NTP.
    pub const NTP: u8 = 1;
    /// PTP.
    pub const PTP: u8 = 2;
    /// SSU/BITS.
    pub const SSU_BITS: u8 = 3;
    /// GPS, GLONASS, LORAN-C, BDS or Galileo.
    pub const GNSS: u8 = 4;
    /// A local free-running clock.
    pub const LOCAL_FREE_RUNNING: u8 = 5;
}

/// Timestamping methods of the Timestamp Information TLV (IANA "STAMP Timestamping
/// Methods", RFC 8972 §5.5).
pub mod timestamp_method {
    /// Reserved (also "not reported").
    pub const RESERVED: u8 = 0;
    /// Hardware assisted.
    pub const HW_ASSIST: u8 = 1;
    /// Software, local.
    pub const SW_LOCAL: u8 = 2;
    /// Control plane.
    pub const CONTROL_PLANE: u8 = 3;
}

/// The STAMP TLV Flags (RFC 8972 §4): U, M and I.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, Hash)]
pub struct TlvFlags {
    /// U: the reflector did not recognize the type (a Session-Sender sets it on every
    /// TLV it sends, RFC 8972 §4; see [`TlvFlags::SENDER`]).
    pub unrecognized: bool,
    /// M: the TLV is malformed.
    pub malformed: bool,
    /// I: the integrity check of the TLVs failed (on the wire, or when parsed here).
    pub integrity_failed: bool,
}

impl TlvFlags {
    const U: u8 = 0x80;
    const M: u8 = 0x40;
    const I: u8 = 0x20;

    /// What a Session-Sender sends: U set, M and I clear (RFC 8972 §4).
    pub const SENDER: Self = Self {
        unrecognized: true,
        malformed: false,
        integrity_failed: false,
    };

    /// Decode the flags octet; the reserved bits are ignored.
    pub const fn from_u8(b: u8) -> Self {
        Self {
            unrecognized: b & Self::U != 0,
            malformed: b & Self::M != 0,
            integrity_failed: b & Self::I != 0,
        }
    }

    /// Encode the flags octet, reserved bits zero.
    pub const fn to_u8(self) -> u8 {
        (if self.unrecognized { Self::U } else { 0 })
            | (if self.malformed { Self::M } else { 0 })
            | (if self.integrity_failed { Self::I } else { 0 })
    }
}

/// The value of a TLV, by type.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum TlvBody {
    /// Extra Padding (RFC 8972 §4.1): this many value octets, zero-filled.
    ExtraPadding(u16),
    /// Class of Service (RFC 8972 §4.4): each field is masked to its width on emit.
    ClassOfService {
        /// DSCP1 (6 bits): the DSCP the sender asks for the reflected packet.
        dscp1: u8,
        /// DSCP2 (6 bits): the DSCP the reflector received.
        dscp2: u8,
        /// ECN (2 bits): the ECN the reflector received.
        ecn: u8,
        /// RP (2 bits): 1 when the reflector could not use DSCP1; 0 from a sender.
        rpd: u8,
    },
    /// Timestamp Information (RFC 8972 §4.3): how the reflector took its timestamps; a
    /// sender sends zeros.
    TimestampInfo {
        /// Sync Src In: synchronization source at the reflector's ingress
        /// ([`sync_source`]).
        sync_src_in: u8,
        /// Timestamp In: how the Receive Timestamp was taken ([`timestamp_method`]).
        timestamp_in: u8,
        /// Sync Src Out: synchronization source at the reflector's egress.
        sync_src_out: u8,
        /// Timestamp Out: how the (transmit) Timestamp was taken.
        timestamp_out: u8,
    },
    /// HMAC (RFC 8972 §4.8): the truncated digest as received; computed on emit when a
    /// key is given.
    Hmac([u8; HMAC_LEN]),
    /// Any other type, or a malformed TLV, kept as it came (a reflector echoes it, with
    /// U set for an unknown type, RFC 8972 §4).
    Unknown {
        /// The Type field.
        kind: u8,
        /// The value octets (at most 65,535 can be emitted).
        value: Vec<u8>,
    },
}

impl TlvBody {
    /// The Type field of this TLV ([`tlv_type`]).
    pub fn kind(&self) -> u8 {
        match self {
            Self::ExtraPadding(_) => tlv_type::EXTRA_PADDING,
            Self::ClassOfService { .. } => tlv_type::CLASS_OF_SERVICE,
            Self::TimestampInfo { .. } => tlv_type::TIMESTAMP_INFO,
            Self::Hmac(_) => tlv_type::HMAC,
            Self::Unknown { kind, .. } => *kind,
        }
    }

    /// Length of the value, what the Length field says.
    pub fn value_len(&self) -> usize {
        match self {
            Self::ExtraPadding(n) => usize::from(*n),
            Self::ClassOfService { .. } => COS_LEN,
            Self::TimestampInfo { .. } => TIMESTAMP_INFO_LEN,
            Self::Hmac(_) => HMAC_LEN,
            Self::Unknown { value, .. } => value.len(),
        }
    }

    /// Decode the value of a well-formed TLV; `None` when the length is wrong for a
    /// decoded type.
    fn decode(kind: u8, value: &[u8]) -> Option<Self> {
        Some(match kind {
            tlv_type::EXTRA_PADDING => Self::ExtraPadding(u16::try_from(value.len()).ok()?),
            tlv_type::CLASS_OF_SERVICE => {
                let [b0, b1, _, _] = *<&[u8; COS_LEN]>::try_from(value).ok()?;
                Self::ClassOfService {
                    dscp1: b0 >> 2,
                    dscp2: (b0 & 0x03) << 4 | b1 >> 4,
                    ecn: (b1 >> 2) & 0x03,
                    rpd: b1 & 0x03,
                }
            }
            tlv_type::TIMESTAMP_INFO => {
                let [a, b, c, d] = *<&[u8; TIMESTAMP_INFO_LEN]>::try_from(value).ok()?;
                Self::TimestampInfo {
                    sync_src_in: a,
                    timestamp_in: b,
                    sync_src_out: c,
                    timestamp_out: d,
                }
            }
            tlv_type::HMAC => Self::Hmac(*<&[u8; HMAC_LEN]>::try_from(value).ok()?),
            kind => Self::Unknown {
                kind,
                value: value.to_vec(),
            },
        })
    }

    /// Write the value into `out`, which is exactly [`TlvBody::value_len`] long.
    fn write_value(&self, out: &mut [u8]) {
        match self {
            Self::ExtraPadding(_) => out.fill(0),
            Self::ClassOfService {
                dscp1,
                dscp2,
                ecn,
                rpd,
            } => {
                let (dscp1, dscp2) = (dscp1 & 0x3f, dscp2 & 0x3f);
                out.copy_from_slice(&[
                    dscp1 << 2 | dscp2 >> 4,
                    (dscp2 & 0x0f) << 4 | (ecn & 0x03) << 2 | (rpd & 0x03),
                    0,
                    0,
                ]);
            }
            Self::TimestampInfo {
                sync_src_in,
                timestamp_in,
                sync_src_out,
                timestamp_out,
            } => out.copy_from_slice(&[*sync_src_in, *timestamp_in, *sync_src_out, *timestamp_out]),
            Self::Hmac(h) => out.copy_from_slice(h),
            Self::Unknown { value, .. } => out.copy_from_slice(value),
        }
    }
}

/// One TLV: its flags and its value.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Tlv {
    /// The STAMP TLV Flags.
    pub flags: TlvFlags,
    /// The Type and Value.
    pub body: TlvBody,
}

impl Tlv {
    /// A TLV with no flags set.
    pub fn new(body: TlvBody) -> Self {
        Self {
            flags: TlvFlags::default(),
            body,
        }
    }

    /// A TLV as a Session-Sender sends it: U set (RFC 8972 §4).
    pub fn for_sender(body: TlvBody) -> Self {
        Self {
            flags: TlvFlags::SENDER,
            body,
        }
    }

    /// Octets on the wire: header and value.
    pub fn wire_len(&self) -> usize {
        TLV_HEADER_LEN + self.body.value_len()
    }
}

/// The HMAC of the HMAC TLV (RFC 8972 §4.8): HMAC-SHA-256 (RFC 2104) keyed with `key`
/// over the Sequence Number field of the base packet (`seq_bytes`, its 4 octets as on
/// the wire) followed by all the TLVs before the HMAC TLV (`preceding_tlvs`, as on the
/// wire), truncated to its first 16 octets.
pub fn tlv_hmac(key: &[u8], seq_bytes: &[u8], preceding_tlvs: &[u8]) -> [u8; HMAC_LEN] {
    super::hmac16(key, &[seq_bytes, preceding_tlvs])
}

/// Octets the TLVs take on the wire.
pub(super) fn tlvs_len(tlvs: &[Tlv]) -> usize {
    tlvs.iter().map(Tlv::wire_len).sum()
}

/// Fails when a TLV's value is too long for its 16-bit Length field.
pub(super) fn check_tlvs(tlvs: &[Tlv]) -> Result<(), StampError> {
    if tlvs
        .iter()
        .any(|t| t.body.value_len() > usize::from(u16::MAX))
    {
        return Err(StampError::TlvOverrun);
    }
    Ok(())
}

/// Write `tlvs` into `out`, exactly [`tlvs_len`] long (checked by [`check_tlvs`]).
/// With a key, each HMAC TLV gets the HMAC over `seq_bytes` and the TLVs written before
/// it; without, the value it holds.
pub(super) fn emit_tlvs(tlvs: &[Tlv], out: &mut [u8], seq_bytes: &[u8], key: Option<&[u8]>) {
    let mut pos = 0;
    for tlv in tlvs {
        let len = tlv.body.value_len();
        let (done, rest) = out.split_at_mut(pos);
        let (header, rest) = rest.split_at_mut(TLV_HEADER_LEN);
        header[0] = tlv.flags.to_u8();
        header[1] = tlv.body.kind();
        // check_tlvs keeps len within u16.
        header[2..4].copy_from_slice(&u16::try_from(len).unwrap_or(u16::MAX).to_be_bytes());
        let value = &mut rest[..len];
        match (&tlv.body, key) {
            (TlvBody::Hmac(_), Some(key)) => value.copy_from_slice(&tlv_hmac(key, seq_bytes, done)),
            (body, _) => body.write_value(value),
        }
        pos += TLV_HEADER_LEN + len;
    }
}

/// Parse the TLVs that follow a base packet (`area`: everything after it), as the
/// module docs describe; with a key, check their integrity over `seq_bytes`.
pub(super) fn parse_tlvs(area: &[u8], seq_bytes: &[u8], key: Option<&[u8]>) -> Vec<Tlv> {
    let mut tlvs = Vec::new();
    let mut pos = 0;
    while area.len() - pos >= TLV_HEADER_LEN {
        let mut flags = TlvFlags::from_u8(area[pos]);
        let kind = area[pos + 1];
        let len = usize::from(u16::from_be_bytes([area[pos + 2], area[pos + 3]]));
        let start = pos + TLV_HEADER_LEN;
        let Some(value) = area.get(start..start + len) else {
            // Runs past the end: the rest of the packet, flagged (RFC 8972 §4).
            flags.malformed = true;
            tlvs.push(Tlv {
                flags,
                body: TlvBody::Unknown {
                    kind,
                    value: area[start..].to_vec(),
                },
            });
            break;
        };
        let decoded = if flags.malformed {
            None
        } else {
            TlvBody::decode(kind, value)
        };
        let body = decoded.unwrap_or_else(|| {
            flags.malformed = true;
            TlvBody::Unknown {
                kind,
                value: value.to_vec(),
            }
        });
        if let (TlvBody::Hmac(tag), Some(key)) = (&body, key) {
            if !super::hmac16_matches(key, &[seq_bytes, &area[..pos]], tag) {
                flags.integrity_failed = true;
            }
        }
        tlvs.push(Tlv { flags, body });
        pos = start + len;
    }
    if key.is_some() {
        check_hmac_placement(&mut tlvs);
    }
    tlvs
}

/// RFC 8972 §4.8: the HMAC TLV follows every TLV but Extra Padding, and all TLVs are
/// covered by one (but a lone Extra Padding TLV); what breaks either rule gets `I`.
fn check_hmac_placement(tlvs: &mut [Tlv]) {
    let is_hmac = |t: &Tlv| matches!(t.body, TlvBody::Hmac(_));
    let is_padding = |t: &Tlv| matches!(t.body, TlvBody::ExtraPadding(_));
    let Some(last_hmac) = tlvs.iter().rposition(is_hmac) else {
        if !(tlvs.len() == 1 && is_padding(&tlvs[0])) {
            for t in tlvs.iter_mut() {
                t.flags.integrity_failed = true;
            }
        }
        return;
    };
    // Anything but padding after the last HMAC TLV is uncovered: that HMAC TLV is out
    // of place. Every earlier HMAC TLV is followed by the last one: out of place too.
    let misplaced_last = !tlvs[last_hmac + 1..].iter().all(is_padding);
    for (i, t) in tlvs.iter_mut().enumerate() {
        if is_hmac(t) && (i < last_hmac || misplaced_last) {
            t.flags.integrity_failed = true;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SEQ: [u8; 4] = [0, 0, 0, 9];
    const KEY: &[u8] = b"stamp test key";

    fn encode(tlvs: &[Tlv], key: Option<&[u8]>) -> Vec<u8> {
        check_tlvs(tlvs).unwrap();
        let mut out = vec![0xAA; tlvs_len(tlvs)];
        emit_tlvs(tlvs, &mut out, &SEQ, key);
        out
    }

    fn cos(dscp1: u8, dscp2: u8, ecn: u8, rpd: u8) -> TlvBody {
        TlvBody::ClassOfService {
            dscp1,
            dscp2,
            ecn,
            rpd,
        }
    }

    #[test]
    fn flags_octet() {
        assert_eq!(TlvFlags::SENDER.to_u8(), 0x80);
        let all = TlvFlags {
            unrecognized: true,
            malformed: true,
            integrity_failed: true,
        };
        assert_eq!(all.to_u8(), 0xE0);
        assert_eq!(
            TlvFlags::from_u8(0x40),
            TlvFlags {
                malformed: true,
                ..TlvFlags::default()
            }
        );
        assert_eq!(
            TlvFlags::from_u8(0x20),
            TlvFlags {
                integrity_failed: true,
                ..TlvFlags::default()
            }
        );
        // Reserved bits are ignored on receipt and zero on transmit.
        assert_eq!(TlvFlags::from_u8(0x1F), TlvFlags::default());
        assert_eq!(TlvFlags::from_u8(0xFF).to_u8(), 0xE0);
        for b in 0..=u8::MAX {
            assert_eq!(TlvFlags::from_u8(b).to_u8(), b & 0xE0);
        }
    }

    #[test]
    fn known_answers_for_each_decoded_type() {
        // Class of Service: DSCP1 46 (101110), DSCP2 34 (100010), ECN 2, RP 1:
        // 101110|10 0010|10|01 then 16 reserved bits.
        let bytes = [0x80, 4, 0, 4, 0xBA, 0x29, 0x00, 0x00];
        let t = Tlv::for_sender(cos(46, 34, 2, 1));
        assert_eq!(encode(std::slice::from_ref(&t), None), bytes);
        assert_eq!(parse_tlvs(&bytes, &SEQ, None), [t]);
        // Reserved bits (draft EC1/RPE) are ignored on parse.
        let mut reserved = bytes;
        reserved[6] = 0xF0;
        reserved[7] = 0x01;
        assert_eq!(parse_tlvs(&reserved, &SEQ, None)[0].body, cos(46, 34, 2, 1));
        // Fields are masked to their widths on emit.
        assert_eq!(
            encode(&[Tlv::new(cos(0xFF, 0xFF, 0xFF, 0xFF))], None)[4..],
            [0xFF, 0xFF, 0, 0]
        );

        // Timestamp Information: the four octets in order.
        let bytes = [0x00, 3, 0, 4, 1, 2, 5, 3];
        let t = Tlv::new(TlvBody::TimestampInfo {
            sync_src_in: sync_source::NTP,
            timestamp_in: timestamp_method::SW_LOCAL,
            sync_src_out: sync_source::LOCAL_FREE_RUNNING,
            timestamp_out: timestamp_method::CONTROL_PLANE,
        });
        assert_eq!(encode(std::slice::from_ref(&t), None), bytes);
        assert_eq!(parse_tlvs(&bytes, &SEQ, None), [t]);

        // Extra Padding: zero-filled on emit; any received content, only its length kept.
        let t = Tlv::new(TlvBody::ExtraPadding(5));
        assert_eq!(
            encode(std::slice::from_ref(&t), None),
            [0, 1, 0, 5, 0, 0, 0, 0, 0]
        );
        assert_eq!(parse_tlvs(&[0, 1, 0, 5, 9, 8, 7, 6, 5], &SEQ, None), [t]);
        assert_eq!(
            parse_tlvs(&[0, 1, 0, 0], &SEQ, None),
            [Tlv::new(TlvBody::ExtraPadding(0))]
        );

        // HMAC: the value as it is when no key is given.
        let mut bytes = vec![0x20, 8, 0, 16];
        bytes.extend(1..=16u8);
        let t = Tlv {
            flags: TlvFlags {
                integrity_failed: true,
                ..TlvFlags::default()
            },
            body: TlvBody::Hmac(core::array::from_fn(|i| i as u8 + 1)),
        };
        assert_eq!(encode(std::slice::from_ref(&t), None), bytes);
        assert_eq!(parse_tlvs(&bytes, &SEQ, None), [t]);

        // Unknown types: kept as they came.
        let bytes = [0x80, 200, 0, 3, 7, 8, 9];
        let t = Tlv::for_sender(TlvBody::Unknown {
            kind: 200,
            value: vec![7, 8, 9],
        });
        assert_eq!(encode(std::slice::from_ref(&t), None), bytes);
        assert_eq!(parse_tlvs(&bytes, &SEQ, None), [t]);
    }

    #[test]
    fn kinds_and_lengths() {
        assert_eq!(TlvBody::ExtraPadding(3).kind(), tlv_type::EXTRA_PADDING);
        assert_eq!(cos(0, 0, 0, 0).kind(), tlv_type::CLASS_OF_SERVICE);
        let ti = TlvBody::TimestampInfo {
            sync_src_in: 0,
            timestamp_in: 0,
            sync_src_out: 0,
            timestamp_out: 0,
        };
        assert_eq!(ti.kind(), tlv_type::TIMESTAMP_INFO);
        assert_eq!(TlvBody::Hmac([0; 16]).kind(), tlv_type::HMAC);
        assert_eq!(
            TlvBody::Unknown {
                kind: 77,
                value: vec![]
            }
            .kind(),
            77
        );
        assert_eq!(Tlv::new(TlvBody::Hmac([0; 16])).wire_len(), 20);
        assert_eq!(Tlv::new(TlvBody::ExtraPadding(100)).wire_len(), 104);
        let big = Tlv::new(TlvBody::Unknown {
            kind: 9,
            value: vec![0; 65_536],
        });
        assert_eq!(check_tlvs(&[big]), Err(StampError::TlvOverrun));
        let max = Tlv::new(TlvBody::Unknown {
            kind: 9,
            value: vec![0; 65_535],
        });
        assert_eq!(check_tlvs(&[max]), Ok(()));
    }

    #[test]
    fn a_tlv_running_past_the_end_is_kept_flagged_with_what_is_there() {
        let mut bytes = encode(&[Tlv::for_sender(cos(1, 0, 0, 0))], None);
        bytes.extend([0x80, 1, 0, 10, 1, 2, 3, 4, 5, 6]); // says 10, has 6
        let tlvs = parse_tlvs(&bytes, &SEQ, None);
        assert_eq!(tlvs.len(), 2);
        assert_eq!(tlvs[0].body, cos(1, 0, 0, 0));
        assert_eq!(
            tlvs[1],
            Tlv {
                flags: TlvFlags {
                    unrecognized: true,
                    malformed: true,
                    integrity_failed: false
                },
                body: TlvBody::Unknown {
                    kind: 1,
                    value: vec![1, 2, 3, 4, 5, 6]
                },
            }
        );
        // Echoed, it is a well-formed TLV with M set, and parses to itself.
        let again = encode(&tlvs, None);
        assert_eq!(parse_tlvs(&again, &SEQ, None), tlvs);
        // A header and nothing more.
        let tlvs = parse_tlvs(&[0, 3, 0xFF, 0xFF], &SEQ, None);
        assert_eq!(
            tlvs[0].body,
            TlvBody::Unknown {
                kind: 3,
                value: vec![]
            }
        );
        assert!(tlvs[0].flags.malformed);
    }

    #[test]
    fn wrong_lengths_and_incoming_m_flags_keep_the_tlv_raw_and_malformed() {
        // CoS of 3 octets, Timestamp Info of 5, HMAC of 15.
        for (kind, len) in [(4u8, 3usize), (3, 5), (8, 15), (8, 17)] {
            let mut bytes = vec![0x80, kind, 0, len as u8];
            bytes.extend(vec![0x11; len]);
            let tlvs = parse_tlvs(&bytes, &SEQ, None);
            assert_eq!(tlvs.len(), 1);
            assert!(tlvs[0].flags.malformed && tlvs[0].flags.unrecognized);
            assert_eq!(
                tlvs[0].body,
                TlvBody::Unknown {
                    kind,
                    value: vec![0x11; len]
                }
            );
            assert_eq!(encode(&tlvs, None), {
                let mut b = bytes.clone();
                b[0] = 0xC0;
                b
            });
        }
        // A well-formed CoS TLV that arrives with M set is not decoded.
        let tlvs = parse_tlvs(&[0x40, 4, 0, 4, 0xBA, 0x29, 0, 0], &SEQ, None);
        assert_eq!(
            tlvs[0].body,
            TlvBody::Unknown {
                kind: 4,
                value: vec![0xBA, 0x29, 0, 0]
            }
        );
        assert!(tlvs[0].flags.malformed);
    }

    #[test]
    fn fewer_than_four_trailing_octets_are_padding() {
        let one = encode(&[Tlv::new(TlvBody::ExtraPadding(2))], None);
        for tail in 0..4 {
            let mut bytes = one.clone();
            bytes.extend(vec![0xEE; tail]);
            assert_eq!(parse_tlvs(&bytes, &SEQ, None).len(), 1, "tail {tail}");
            assert!(parse_tlvs(&bytes[one.len()..], &SEQ, None).is_empty());
        }
        // Four zero octets are a TLV of the Reserved type 0 with an empty value.
        let tlvs = parse_tlvs(&[0; 4], &SEQ, None);
        assert_eq!(
            tlvs,
            [Tlv::new(TlvBody::Unknown {
                kind: tlv_type::RESERVED,
                value: vec![]
            })]
        );
    }

    #[test]
    fn hmac_tlv_known_answer() {
        // RFC 4231 test case 2 (key "Jefe"), cut into "sequence number" and "TLVs":
        // HMAC-SHA-256 = 5bdcc146bf60754e6a042426089575c7 5a003f089d2739839dec58b964ec3843.
        let h = tlv_hmac(b"Jefe", b"what", b" do ya want for nothing?");
        assert_eq!(
            h,
            [
                0x5b, 0xdc, 0xc1, 0x46, 0xbf, 0x60, 0x75, 0x4e, 0x6a, 0x04, 0x24, 0x26, 0x08, 0x95,
                0x75, 0xc7
            ]
        );
    }

    #[test]
    fn hmac_tlvs_are_computed_on_emit_and_checked_on_parse() {
        let tlvs = [
            Tlv::for_sender(cos(46, 0, 0, 0)),
            Tlv::for_sender(TlvBody::Hmac([0; 16])),
            Tlv::for_sender(TlvBody::ExtraPadding(8)),
        ];
        let bytes = encode(&tlvs, Some(KEY));
        // The HMAC covers the sequence number and the CoS TLV, not the padding after it.
        let expected = tlv_hmac(KEY, &SEQ, &bytes[..8]);
        assert_eq!(bytes[12..28], expected);
        let parsed = parse_tlvs(&bytes, &SEQ, Some(KEY));
        assert!(
            parsed.iter().all(|t| !t.flags.integrity_failed),
            "{parsed:?}"
        );
        assert_eq!(parsed[1].body, TlvBody::Hmac(expected));
        // Without a key, nothing is checked.
        assert!(parse_tlvs(&bytes, &SEQ, None)
            .iter()
            .all(|t| !t.flags.integrity_failed));
        // A wrong key, another sequence number, or a changed octet: I on the HMAC TLV,
        // the packet is still parsed.
        let bad = parse_tlvs(&bytes, &SEQ, Some(b"other key"));
        assert!(bad[1].flags.integrity_failed && !bad[0].flags.integrity_failed);
        assert!(
            parse_tlvs(&bytes, &[0, 0, 0, 8], Some(KEY))[1]
                .flags
                .integrity_failed
        );
        let mut changed = bytes.clone();
        changed[4] ^= 0x04; // DSCP1
        assert!(
            parse_tlvs(&changed, &SEQ, Some(KEY))[1]
                .flags
                .integrity_failed
        );
        let mut changed = bytes.clone();
        changed[0] = 0; // the U flag is covered too
        assert!(
            parse_tlvs(&changed, &SEQ, Some(KEY))[1]
                .flags
                .integrity_failed
        );
        // Padding after the HMAC TLV is not covered.
        let mut changed = bytes.clone();
        let n = changed.len();
        changed[n - 1] = 0x55;
        assert!(
            !parse_tlvs(&changed, &SEQ, Some(KEY))[1]
                .flags
                .integrity_failed
        );
        // Without a key, emit writes the HMAC value it holds.
        assert_eq!(encode(&tlvs, None)[12..28], [0; 16]);
    }

    #[test]
    fn misplaced_or_missing_hmac_tlvs_fail_integrity() {
        // A TLV other than padding after the HMAC TLV: the HMAC TLV is out of place.
        let tlvs = [
            Tlv::for_sender(TlvBody::Hmac([0; 16])),
            Tlv::for_sender(cos(1, 0, 0, 0)),
        ];
        let parsed = parse_tlvs(&encode(&tlvs, Some(KEY)), &SEQ, Some(KEY));
        assert!(parsed[0].flags.integrity_failed);
        // Two HMAC TLVs, both right: the first is out of place, the last is fine.
        let tlvs = [
            Tlv::for_sender(cos(1, 0, 0, 0)),
            Tlv::for_sender(TlvBody::Hmac([0; 16])),
            Tlv::for_sender(TlvBody::Hmac([0; 16])),
        ];
        let parsed = parse_tlvs(&encode(&tlvs, Some(KEY)), &SEQ, Some(KEY));
        let flags: Vec<bool> = parsed.iter().map(|t| t.flags.integrity_failed).collect();
        assert_eq!(flags, [false, true, false]);
        // TLVs with no HMAC TLV: all unprotected, all flagged ...
        let tlvs = [
            Tlv::for_sender(cos(1, 0, 0, 0)),
            Tlv::new(TlvBody::ExtraPadding(4)),
        ];
        let parsed = parse_tlvs(&encode(&tlvs, Some(KEY)), &SEQ, Some(KEY));
        assert!(parsed.iter().all(|t| t.flags.integrity_failed));
        // ... but a lone Extra Padding TLV needs none (RFC 8972 §4.8).
        let tlvs = [Tlv::new(TlvBody::ExtraPadding(4))];
        let parsed = parse_tlvs(&encode(&tlvs, Some(KEY)), &SEQ, Some(KEY));
        assert!(!parsed[0].flags.integrity_failed);
        assert!(parse_tlvs(&[], &SEQ, Some(KEY)).is_empty());
    }

    #[test]
    fn random_tlv_areas_never_panic_and_reemit_to_themselves() {
        let mut s: u64 = 0x9E37_79B9_7F4A_7C15;
        let mut next = || {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            s
        };
        for _ in 0..20_000 {
            let len = (next() % 64) as usize;
            // Small Type and Length values, so the decoded types come up often.
            let bytes: Vec<u8> = (0..len)
                .map(|i| match i % 4 {
                    1 => (next() % 10) as u8,
                    2 => 0,
                    3 => (next() % 24) as u8,
                    _ => next() as u8,
                })
                .collect();
            for key in [None, Some(KEY)] {
                let tlvs = parse_tlvs(&bytes, &SEQ, key);
                assert!(tlvs_len(&tlvs) <= bytes.len());
                let again = encode(&tlvs, key);
                let reparsed = parse_tlvs(&again, &SEQ, key);
                if key.is_none() {
                    assert_eq!(reparsed, tlvs);
                } else {
                    // With a key the HMAC values are recomputed; all else is the same.
                    let strip = |v: &[Tlv]| -> Vec<Tlv> {
                        v.iter()
                            .map(|t| match t.body {
                                TlvBody::Hmac(_) => Tlv {
                                    body: TlvBody::Hmac([0; 16]),
                                    ..t.clone()
                                },
                                _ => t.clone(),
                            })
                            .collect()
                    };
                    assert_eq!(strip(&reparsed), strip(&tlvs));
                    assert_eq!(encode(&reparsed, key), again);
                }
            }
        }
    }
}
