//! STAMP, the Simple Two-Way Active Measurement Protocol: the test packets of RFC 8762
//! and the optional extensions of RFC 8972, bytes ⇄ meaning.
//!
//! Implemented:
//! - RFC 8762 §4.2.1 / §4.2.2: the Session-Sender test packet, unauthenticated
//!   (44 octets) and authenticated (112 octets): [`SenderRepr`].
//! - RFC 8762 §4.3.1 / §4.3.2: the Session-Reflector test packet, both modes:
//!   [`ReflectorRepr`]. A zero-copy view of either, with setters (to stamp the transmit
//!   time last and refresh the HMAC): [`Packet`]. Layouts with offsets: [`packet`].
//! - RFC 8762 §4.4: the authenticated packets' HMAC (HMAC-SHA-256 truncated to 16
//!   octets over the first 96 octets), checked on parse when a key is given.
//! - RFC 8762 §4.2.1: NTP and PTPv2-truncated timestamps and the Error Estimate
//!   (RFC 4656 §4.1.2, Z of RFC 8186 §2.3): [`timestamp`].
//! - RFC 8972 §3: the SSID, in both modes and both packets.
//! - RFC 8972 §4: TLV framing and the U, M and I flags; the TLVs Extra Padding (§4.1),
//!   Timestamp Information (§4.3), Class of Service (§4.4) and HMAC (§4.8, computed on
//!   emit and checked on parse when a key is given): [`tlv`].
//! - A Session-Sender's packets: which TLVs a packet of a given size carries and the
//!   writer of a session's packets: [`writer`].
//! - A Session-Reflector's answers: the reflected packet, stateless or stateful, and a
//!   packet rate per sender: [`reflect`].
//!
//! Not implemented: the TLVs Location and its sub-TLVs (RFC 8972 §4.2), Direct
//! Measurement (§4.5), Access Report (§4.6) and Follow-Up Telemetry (§4.7), those of
//! later documents (RFC 9503 Destination Node Address and Return Path, RFC 9534
//! Micro-session ID, the reflected IPv6 header and extension-header TLVs of
//! draft-ietf-ippm-asymmetrical-pkts / stamp-ext-hdr) and the EC1/RPE bits
//! draft-ietf-ippm-stamp-cos-ecn puts in the CoS TLV's Reserved field. Their TLVs parse
//! as [`TlvBody::Unknown`], kept octet for octet, so a reflector can echo them.
//! Also not here: key management, and RFC 8762 §4.6's reading of short packets
//! (a shorter packet is [`StampError::Truncated`]).
//!
//! Choices the RFCs leave open, in brief (details in [`tlv`] and [`packet`]):
//! - A TLV whose Length runs past the end of the packet does not fail the packet: it
//!   is kept as the octets that are there, flagged malformed, as a reflector must echo
//!   it (RFC 8972 §4). [`StampError::TlvOverrun`] is only returned by `emit`, for a
//!   value longer than the 16-bit Length can state.
//! - Fewer than 4 octets after the last TLV are padding and ignored.
//! - With a key, a wrong base HMAC (authenticated mode) fails the packet with
//!   [`StampError::BadHmac`]; the HMAC TLV never fails it, it sets `integrity_failed`.
//!   Without a key nothing is checked. `emit` in authenticated mode needs a key.

pub mod packet;
pub mod reflect;
pub mod timestamp;
pub mod tlv;
pub mod writer;

use hmac::{Hmac, Mac};
use sha2::Sha256;

pub use packet::{Packet, ReflectorRepr, SenderRepr, HMAC_LEN, HMAC_OFFSET};
pub use timestamp::{
    ntp_from_unix_ns, ntp_to_unix_ns, ptp_from_unix_ns, ptp_to_unix_ns, ErrorEstimate,
    TimestampFormat, NTP_UNIX_OFFSET_S,
};
pub use tlv::{
    sync_source, timestamp_method, tlv_hmac, tlv_type, Tlv, TlvBody, TlvFlags, TLV_HEADER_LEN,
};
pub use writer::{format_name, layout, mode_name, Layout, PacketWriter, MAX_UDP_PAYLOAD};

/// The UDP port a Session-Reflector listens on by default (RFC 8762 §4.1; the
/// TWAMP-Test Receiver Port).
pub const DEFAULT_PORT: u16 = 862;

/// Unauthenticated (44-octet base packets) or authenticated (112 octets, HMAC-SHA-256
/// truncated to 16 octets, RFC 8762 §4.4) mode.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Mode {
    /// RFC 8762 §4.2.1 / §4.3.1.
    Unauthenticated,
    /// RFC 8762 §4.2.2 / §4.3.2.
    Authenticated,
}

impl Mode {
    /// Length of the base test packet, without TLVs: 44 or 112 octets.
    pub fn base_len(self) -> usize {
        match self {
            Self::Unauthenticated => 44,
            Self::Authenticated => 112,
        }
    }
}

/// A STAMP test packet could not be parsed or emitted.
#[derive(Debug, Clone, Copy, thiserror::Error, PartialEq, Eq)]
pub enum StampError {
    /// The packet is shorter than the base packet of its mode.
    #[error("truncated STAMP packet: need {need} octets, have {have}")]
    Truncated {
        /// Octets of the base packet.
        need: usize,
        /// Octets received.
        have: usize,
    },
    /// The HMAC of an authenticated packet does not match the key (RFC 8762 §4.4).
    #[error("STAMP packet HMAC does not match")]
    BadHmac,
    /// A TLV value is longer than its 16-bit Length field can state (on emit; parsing
    /// keeps a TLV that runs past the packet, flagged malformed).
    #[error("STAMP TLV value longer than 65,535 octets")]
    TlvOverrun,
    /// The buffer given to `emit` is shorter than the packet.
    #[error("buffer too small for the STAMP packet: need {need} octets, have {have}")]
    BufferTooSmall {
        /// Octets of the packet.
        need: usize,
        /// Octets of the buffer.
        have: usize,
    },
    /// An authenticated packet cannot be emitted without a key.
    #[error("an authenticated STAMP packet needs a key")]
    KeyRequired,
}

fn mac(key: &[u8], parts: &[&[u8]]) -> Hmac<Sha256> {
    // HMAC takes keys of any length (longer ones are hashed, RFC 2104 §2).
    let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(key).expect("HMAC takes any key length");
    for part in parts {
        mac.update(part);
    }
    mac
}

/// HMAC-SHA-256 of the concatenated `parts`, truncated to its first 16 octets (RFC 8762
/// §4.4, as RFC 4868 does for IPsec).
fn hmac16(key: &[u8], parts: &[&[u8]]) -> [u8; 16] {
    let digest = mac(key, parts).finalize().into_bytes();
    let mut out = [0; 16];
    out.copy_from_slice(&digest[..16]);
    out
}

/// Whether `tag` is [`hmac16`] of `parts`, compared in constant time.
fn hmac16_matches(key: &[u8], parts: &[&[u8]], tag: &[u8; 16]) -> bool {
    mac(key, parts).verify_truncated_left(tag).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn truncated_hmac_matches_only_its_own_tag() {
        let tag = hmac16(b"k", &[b"ab", b"c"]);
        assert_eq!(tag, hmac16(b"k", &[b"abc"]), "parts are concatenated");
        assert!(hmac16_matches(b"k", &[b"abc"], &tag));
        let mut bad = tag;
        bad[15] ^= 1;
        assert!(!hmac16_matches(b"k", &[b"abc"], &bad));
        assert!(!hmac16_matches(b"K", &[b"abc"], &tag));
        // Empty and very long keys are fine.
        let _ = hmac16(b"", &[b"x"]);
        let _ = hmac16(&[7; 1000], &[b"x"]);
    }

    #[test]
    fn errors_read_well() {
        assert_eq!(
            StampError::Truncated { need: 44, have: 3 }.to_string(),
            "truncated STAMP packet: need 44 octets, have 3"
        );
        assert_eq!(
            StampError::BadHmac.to_string(),
            "STAMP packet HMAC does not match"
        );
    }
}
