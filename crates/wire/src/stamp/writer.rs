//! The Session-Sender's side of a STAMP session (RFC 8762 §4.2): which TLVs a test
//! packet of a given size carries ([`layout`]) and the writer of a session's packets
//! ([`PacketWriter`]).
//!
//! The UDP payload is the base packet (44 octets unauthenticated, 112 authenticated;
//! RFC 8762 §4.2.1, §4.2.2), then, in this order, a Class of Service TLV when asked
//! (RFC 8972 §4.4), in authenticated mode the HMAC TLV that must close any TLV but Extra
//! Padding (RFC 8972 §4.8), and an Extra Padding TLV that brings the packet to the
//! flow's size (RFC 8972 §4.1; it may follow the HMAC TLV, which then need not hash
//! it). A size below what these need plus one TLV header (4 octets) gets no padding:
//! the packet is then longer than asked.

use super::tlv::HMAC_LEN;
use super::{
    ErrorEstimate, Mode, SenderRepr, StampError, TimestampFormat, Tlv, TlvBody, TLV_HEADER_LEN,
};

/// Value octets of the Class of Service TLV (RFC 8972 §4.4).
const COS_VALUE_LEN: usize = 4;
/// The largest UDP payload over IPv4 (65,535 − 20 − 8).
pub const MAX_UDP_PAYLOAD: usize = 65_507;

/// The TLVs of one packet and its length (see the module's doc).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Layout {
    /// Value octets of the Extra Padding TLV; `None` when none fits.
    pub padding: Option<u16>,
    /// An HMAC TLV follows the Class of Service TLV: authenticated mode with any TLV
    /// but Extra Padding (RFC 8972 §4.8).
    pub hmac: bool,
    /// The UDP payload, octets.
    pub len: usize,
}

/// The layout of a packet the flow wants `size` octets long: the base packet; the Class
/// of Service TLV if `cos`, closed by the HMAC TLV in authenticated mode (RFC 8972
/// §4.8: any TLV but a lone Extra Padding needs it); then an Extra Padding TLV whose
/// value fills up to `size` when at least its header fits (RFC 8972 §4.1). Shorter sizes
/// give the packet without padding, longer than asked; sizes beyond a UDP payload are
/// capped.
pub fn layout(size: usize, mode: Mode, cos: bool) -> Layout {
    let hmac = cos && mode == Mode::Authenticated;
    let fixed = mode.base_len()
        + if cos {
            TLV_HEADER_LEN + COS_VALUE_LEN
        } else {
            0
        }
        + if hmac { TLV_HEADER_LEN + HMAC_LEN } else { 0 };
    let size = size.min(MAX_UDP_PAYLOAD);
    let Some(value) = size.checked_sub(fixed + TLV_HEADER_LEN) else {
        return Layout {
            padding: None,
            hmac,
            len: fixed,
        };
    };
    let value = value.min(usize::from(u16::MAX));
    Layout {
        padding: Some(value as u16),
        hmac,
        len: fixed + TLV_HEADER_LEN + value,
    }
}

/// The TLVs of a packet of `layout`, each with U set as a Session-Sender sends them
/// (RFC 8972 §4); `cos` is the DSCP to ask for (DSCP1; DSCP2, ECN and RP are the
/// reflector's to fill and go out as 0, RFC 8972 §4.4). The HMAC TLV's value is
/// computed on emit.
fn tlvs_of(layout: Layout, cos: Option<u8>) -> Vec<Tlv> {
    let mut tlvs = Vec::new();
    if let Some(dscp1) = cos {
        tlvs.push(Tlv::for_sender(TlvBody::ClassOfService {
            dscp1,
            dscp2: 0,
            ecn: 0,
            rpd: 0,
        }));
    }
    if layout.hmac {
        tlvs.push(Tlv::for_sender(TlvBody::Hmac([0; HMAC_LEN])));
    }
    if let Some(p) = layout.padding {
        tlvs.push(Tlv::for_sender(TlvBody::ExtraPadding(p)));
    }
    tlvs
}

/// Writes the session's packets: one [`SenderRepr`] whose TLVs are remade only when the
/// size changes.
pub struct PacketWriter {
    mode: Mode,
    key: Option<Vec<u8>>,
    format: TimestampFormat,
    cos: Option<u8>,
    repr: SenderRepr,
    /// The size `repr.tlvs` were made for.
    made_for: Option<usize>,
}

impl PacketWriter {
    /// Packets of session `ssid`, stamped in `format`, with our `error_estimate`.
    pub fn new(
        mode: Mode,
        key: Option<Vec<u8>>,
        ssid: u16,
        error_estimate: ErrorEstimate,
        cos: Option<u8>,
    ) -> Self {
        Self {
            mode,
            key,
            format: error_estimate.format,
            cos,
            repr: SenderRepr {
                seq: 0,
                timestamp: 0,
                error_estimate,
                ssid,
                tlvs: Vec::new(),
            },
            made_for: None,
        }
    }

    /// The layout of a packet the flow wants `size` octets long.
    pub fn layout(&self, size: usize) -> Layout {
        layout(size, self.mode, self.cos.is_some())
    }

    /// Write packet `seq` (its low 32 bits go on the wire) of a flow size of `size`,
    /// stamped `wall_ns` (ns since the Unix epoch), into `buf`; its length.
    pub fn write(
        &mut self,
        seq: u64,
        wall_ns: u64,
        size: usize,
        buf: &mut [u8],
    ) -> Result<usize, StampError> {
        if self.made_for != Some(size) {
            self.repr.tlvs = tlvs_of(self.layout(size), self.cos);
            self.made_for = Some(size);
        }
        self.repr.seq = seq as u32;
        self.repr.timestamp = self.format.from_unix_ns(wall_ns);
        self.repr.emit(buf, self.mode, self.key.as_deref())
    }
}

/// `ntp` or `ptp`.
pub fn format_name(f: TimestampFormat) -> &'static str {
    match f {
        TimestampFormat::Ntp => "ntp",
        TimestampFormat::Ptp => "ptp",
    }
}

/// `unauthenticated` or `authenticated`.
pub fn mode_name(m: Mode) -> &'static str {
    match m {
        Mode::Unauthenticated => "unauthenticated",
        Mode::Authenticated => "authenticated",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const NTP: TimestampFormat = TimestampFormat::Ntp;
    /// A wall-clock instant: 2023-11-14T22:13:20Z.
    const T0: u64 = 1_700_000_000_000_000_000;

    fn ee(synchronized: bool) -> ErrorEstimate {
        ErrorEstimate::for_error_ns(1_000, synchronized, NTP)
    }

    #[test]
    fn padding_fills_the_flows_size_when_a_tlv_fits() {
        let open = Mode::Unauthenticated;
        let auth = Mode::Authenticated;
        assert_eq!((open.base_len(), auth.base_len()), (44, 112));
        let l = |padding, hmac, len| Layout { padding, hmac, len };
        // Below the base packet, or too little room for a TLV header: the base packet.
        for size in [0, 16, 44, 45, 47] {
            assert_eq!(layout(size, open, false), l(None, false, 44), "{size}");
        }
        // From 48 octets on: a 4-octet header and size − 48 octets of padding.
        assert_eq!(layout(48, open, false), l(Some(0), false, 48));
        assert_eq!(layout(512, open, false), l(Some(464), false, 512));
        // With the Class of Service TLV (8 octets).
        assert_eq!(layout(0, open, true), l(None, false, 52));
        assert_eq!(layout(55, open, true), l(None, false, 52));
        assert_eq!(layout(56, open, true), l(Some(0), false, 56));
        // Authenticated: a lone Extra Padding TLV needs no HMAC TLV (RFC 8972 §4.8)…
        assert_eq!(layout(115, auth, false), l(None, false, 112));
        assert_eq!(layout(116, auth, false), l(Some(0), false, 116));
        assert_eq!(layout(512, auth, false), l(Some(396), false, 512));
        // … the Class of Service TLV does (20 octets more).
        assert_eq!(layout(100, auth, true), l(None, true, 140));
        assert_eq!(layout(143, auth, true), l(None, true, 140));
        assert_eq!(layout(144, auth, true), l(Some(0), true, 144));
        assert_eq!(layout(512, auth, true).len, 512);
        // Capped at a UDP payload.
        assert_eq!(layout(1 << 20, open, false).len, MAX_UDP_PAYLOAD);
    }

    #[test]
    fn written_packets_have_the_layouts_length_and_parse_back() {
        let key = vec![0x5a; 32];
        for (mode, key) in [
            (Mode::Unauthenticated, None),
            (Mode::Authenticated, Some(key)),
        ] {
            for cos in [None, Some(46)] {
                let mut w = PacketWriter::new(mode, key.clone(), 9, ee(true), cos);
                let mut buf = vec![0u8; 2048];
                for size in [0, 44, 47, 48, 60, 112, 136, 512, 1400] {
                    let n = w.write(3, T0, size, &mut buf).unwrap();
                    assert_eq!(n, w.layout(size).len, "{mode:?} {cos:?} {size}");
                    let p = SenderRepr::parse(&buf[..n], mode, key.as_deref()).unwrap();
                    assert_eq!((p.seq, p.ssid), (3, 9));
                    assert!(NTP.to_unix_ns(p.timestamp).abs_diff(T0) <= 1);
                    let has_cos = p
                        .tlvs
                        .iter()
                        .any(|t| matches!(t.body, TlvBody::ClassOfService { dscp1: 46, .. }));
                    assert_eq!(has_cos, cos.is_some());
                }
            }
        }
    }
}
