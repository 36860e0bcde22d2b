//! The RSVP objects of RFC 2205 Appendix A that are not IntServ data: SESSION (A.1),
//! RSVP_HOP (A.2), TIME_VALUES (A.4), ERROR_SPEC (A.5), STYLE (A.7), FILTER_SPEC (A.9)
//! and SENDER_TEMPLATE (A.10), RESV_CONFIRM (A.14). C-Type 1 carries IPv4 addresses,
//! C-Type 2 IPv6; FILTER_SPEC and SENDER_TEMPLATE C-Type 3 is the IPv6 flow-label form.
//!
//! Each type has `ctype`, `body_len`, `emit_body` and `parse_body(class, ctype, body)`;
//! a body of the wrong size for its C-Type is [`ParseError::BadObject`], an unknown
//! C-Type [`ParseError::UnknownCType`].

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use super::object::class;
use super::ParseError;

/// SESSION (class 1; C-Type 1 IPv4, 2 IPv6, chosen by `dst`'s family).
///
/// ```text
/// | DestAddress (4 or 16) | Protocol Id | Flags | DstPort (16) |
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Session {
    /// Destination address of the data flows (unicast or multicast).
    pub dst: IpAddr,
    /// IP protocol of the data flows (17 UDP, 6 TCP).
    pub protocol: u8,
    /// Flags: 0x01 E_Police (police at the edge).
    pub flags: u8,
    /// Destination port, 0 for none.
    pub dst_port: u16,
}

/// RSVP_HOP (class 3; C-Type 1/2): the previous/next hop's address and logical
/// interface handle.
///
/// ```text
/// | Next/Previous Hop Address (4 or 16) | Logical Interface Handle (32) |
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Hop {
    /// The address of the node that sent the message (PHOP in Path, NHOP in Resv).
    pub addr: IpAddr,
    /// Logical Interface Handle: returned unchanged in messages to that hop.
    pub lih: u32,
}

/// SENDER_TEMPLATE (class 11) and FILTER_SPEC (class 10) share this format:
/// C-Type 1 IPv4 src+port, 2 IPv6 src+port, 3 IPv6 src + flow label (RFC 2205 A.9:
/// 12 zero bits + 20-bit label).
///
/// ```text
/// C-Type 1: | IPv4 SrcAddress (4)  | ////// (16) | SrcPort (16) |
/// C-Type 2: | IPv6 SrcAddress (16) | ////// (16) | SrcPort (16) |
/// C-Type 3: | IPv6 SrcAddress (16) | ////// (12 bits) | Flow Label (20 bits) |
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FilterSpec {
    /// C-Type 1.
    V4 {
        /// Sender address.
        src: Ipv4Addr,
        /// Sender port, 0 for none.
        src_port: u16,
    },
    /// C-Type 2.
    V6 {
        /// Sender address.
        src: Ipv6Addr,
        /// Sender port, 0 for none.
        src_port: u16,
    },
    /// C-Type 3.
    FlowLabel {
        /// Sender address.
        src: Ipv6Addr,
        /// The flow label, < 2^20.
        flow_label: u32,
    },
}

/// STYLE (class 8, C-Type 1): FF 0x0a, SE 0x12, WF 0x11.
///
/// ```text
/// | Flags (8) | Option Vector (24): 19 reserved, sharing (2), sender selection (3) |
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Style {
    /// Fixed Filter: distinct reservation, explicit senders (0x0a).
    Ff,
    /// Shared Explicit: shared reservation, explicit senders (0x12).
    Se,
    /// Wildcard Filter: shared reservation, all senders (0x11).
    Wf,
}

/// ERROR_SPEC (class 6; C-Type 1/2).
///
/// ```text
/// | Error Node Address (4 or 16) | Flags | Error Code | Error Value (16) |
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ErrorSpec {
    /// The node that found the error (or that confirms, in a ResvConf).
    pub node: IpAddr,
    /// Flags: 0x01 InPlace, 0x02 NotGuilty.
    pub flags: u8,
    /// Error Code ([`super::code`]).
    pub code: u8,
    /// Error Value.
    pub value: u16,
}

fn bad(class: u8) -> ParseError {
    ParseError::BadObject { class }
}

fn unknown_ctype(class: u8, ctype: u8) -> ParseError {
    ParseError::UnknownCType { class, ctype }
}

fn u16_at(b: &[u8], at: usize) -> u16 {
    u16::from_be_bytes([b[at], b[at + 1]])
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_be_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

/// The C-Type of an address-keyed object: 1 for IPv4, 2 for IPv6.
pub fn addr_ctype(addr: IpAddr) -> u8 {
    match addr {
        IpAddr::V4(_) => 1,
        IpAddr::V6(_) => 2,
    }
}

fn addr_len(addr: IpAddr) -> usize {
    match addr {
        IpAddr::V4(_) => 4,
        IpAddr::V6(_) => 16,
    }
}

fn put_addr(b: &mut [u8], addr: IpAddr) -> usize {
    match addr {
        IpAddr::V4(a) => b[..4].copy_from_slice(&a.octets()),
        IpAddr::V6(a) => b[..16].copy_from_slice(&a.octets()),
    }
    addr_len(addr)
}

/// Split an address-keyed body (C-Type 1: IPv4, 2: IPv6) of exactly `rest` octets
/// after the address into the address and the rest.
fn take_addr(
    class: u8,
    ctype: u8,
    body: &[u8],
    rest: usize,
) -> Result<(IpAddr, &[u8]), ParseError> {
    let n = match ctype {
        1 => 4,
        2 => 16,
        _ => return Err(unknown_ctype(class, ctype)),
    };
    if body.len() != n + rest {
        return Err(bad(class));
    }
    let addr = if n == 4 {
        IpAddr::V4(Ipv4Addr::new(body[0], body[1], body[2], body[3]))
    } else {
        let mut o = [0u8; 16];
        o.copy_from_slice(&body[..16]);
        IpAddr::V6(Ipv6Addr::from(o))
    };
    Ok((addr, &body[n..]))
}

impl Session {
    /// C-Type: 1 IPv4, 2 IPv6.
    pub fn ctype(&self) -> u8 {
        addr_ctype(self.dst)
    }
    /// Body length: 8 or 20.
    pub fn body_len(&self) -> usize {
        addr_len(self.dst) + 4
    }
    /// Write the body into `b` (`body_len` octets).
    pub fn emit_body(&self, b: &mut [u8]) {
        let n = put_addr(b, self.dst);
        b[n] = self.protocol;
        b[n + 1] = self.flags;
        b[n + 2..n + 4].copy_from_slice(&self.dst_port.to_be_bytes());
    }
    /// Read a body.
    pub fn parse_body(ctype: u8, body: &[u8]) -> Result<Self, ParseError> {
        let (dst, r) = take_addr(class::SESSION, ctype, body, 4)?;
        Ok(Self {
            dst,
            protocol: r[0],
            flags: r[1],
            dst_port: u16_at(r, 2),
        })
    }
}

impl Hop {
    /// C-Type: 1 IPv4, 2 IPv6.
    pub fn ctype(&self) -> u8 {
        addr_ctype(self.addr)
    }
    /// Body length: 8 or 20.
    pub fn body_len(&self) -> usize {
        addr_len(self.addr) + 4
    }
    /// Write the body.
    pub fn emit_body(&self, b: &mut [u8]) {
        let n = put_addr(b, self.addr);
        b[n..n + 4].copy_from_slice(&self.lih.to_be_bytes());
    }
    /// Read a body.
    pub fn parse_body(ctype: u8, body: &[u8]) -> Result<Self, ParseError> {
        let (addr, r) = take_addr(class::RSVP_HOP, ctype, body, 4)?;
        Ok(Self {
            addr,
            lih: u32_at(r, 0),
        })
    }
}

impl ErrorSpec {
    /// C-Type: 1 IPv4, 2 IPv6.
    pub fn ctype(&self) -> u8 {
        addr_ctype(self.node)
    }
    /// Body length: 8 or 20.
    pub fn body_len(&self) -> usize {
        addr_len(self.node) + 4
    }
    /// Write the body.
    pub fn emit_body(&self, b: &mut [u8]) {
        let n = put_addr(b, self.node);
        b[n] = self.flags;
        b[n + 1] = self.code;
        b[n + 2..n + 4].copy_from_slice(&self.value.to_be_bytes());
    }
    /// Read a body.
    pub fn parse_body(ctype: u8, body: &[u8]) -> Result<Self, ParseError> {
        let (node, r) = take_addr(class::ERROR_SPEC, ctype, body, 4)?;
        Ok(Self {
            node,
            flags: r[0],
            code: r[1],
            value: u16_at(r, 2),
        })
    }
}

/// RESV_CONFIRM (class 15; C-Type 1/2): the receiver address a ResvConf goes to.
pub mod confirm {
    use super::*;

    /// Body length: 4 or 16.
    pub fn body_len(addr: IpAddr) -> usize {
        addr_len(addr)
    }
    /// Write the body.
    pub fn emit_body(addr: IpAddr, b: &mut [u8]) {
        put_addr(b, addr);
    }
    /// Read a body.
    pub fn parse_body(ctype: u8, body: &[u8]) -> Result<IpAddr, ParseError> {
        Ok(take_addr(class::RESV_CONFIRM, ctype, body, 0)?.0)
    }
}

/// TIME_VALUES (class 5, C-Type 1): the refresh period R in milliseconds.
pub mod time_values {
    use super::*;

    /// C-Type.
    pub const CTYPE: u8 = 1;
    /// Body length.
    pub const BODY_LEN: usize = 4;
    /// Read a body.
    pub fn parse_body(ctype: u8, body: &[u8]) -> Result<u32, ParseError> {
        if ctype != CTYPE {
            return Err(unknown_ctype(class::TIME_VALUES, ctype));
        }
        if body.len() != BODY_LEN {
            return Err(bad(class::TIME_VALUES));
        }
        Ok(u32_at(body, 0))
    }
}

impl Style {
    /// C-Type.
    pub const CTYPE: u8 = 1;
    /// Body length.
    pub const BODY_LEN: usize = 4;

    /// The 24-bit option vector.
    pub fn option_vector(self) -> u32 {
        match self {
            Self::Ff => 0x0a,
            Self::Se => 0x12,
            Self::Wf => 0x11,
        }
    }
    /// Short name: "FF", "SE", "WF".
    pub fn name(self) -> &'static str {
        match self {
            Self::Ff => "FF",
            Self::Se => "SE",
            Self::Wf => "WF",
        }
    }
    /// Write the body (flags 0).
    pub fn emit_body(&self, b: &mut [u8]) {
        b[..4].copy_from_slice(&self.option_vector().to_be_bytes());
    }
    /// Read a body; the flags octet is ignored (none are defined).
    pub fn parse_body(ctype: u8, body: &[u8]) -> Result<Self, ParseError> {
        if ctype != Self::CTYPE {
            return Err(unknown_ctype(class::STYLE, ctype));
        }
        if body.len() != Self::BODY_LEN {
            return Err(bad(class::STYLE));
        }
        match u32_at(body, 0) & 0x00ff_ffff {
            0x0a => Ok(Self::Ff),
            0x12 => Ok(Self::Se),
            0x11 => Ok(Self::Wf),
            v => Err(ParseError::UnknownStyle(v)),
        }
    }
}

impl FilterSpec {
    /// The largest flow label (20 bits).
    pub const MAX_FLOW_LABEL: u32 = 0xf_ffff;

    /// C-Type: 1, 2 or 3.
    pub fn ctype(&self) -> u8 {
        match self {
            Self::V4 { .. } => 1,
            Self::V6 { .. } => 2,
            Self::FlowLabel { .. } => 3,
        }
    }
    /// The sender address.
    pub fn src(&self) -> IpAddr {
        match *self {
            Self::V4 { src, .. } => IpAddr::V4(src),
            Self::V6 { src, .. } | Self::FlowLabel { src, .. } => IpAddr::V6(src),
        }
    }
    /// Body length: 8 or 20.
    pub fn body_len(&self) -> usize {
        match self {
            Self::V4 { .. } => 8,
            Self::V6 { .. } | Self::FlowLabel { .. } => 20,
        }
    }
    /// Write the body. A flow label is masked to its 20 bits.
    pub fn emit_body(&self, b: &mut [u8]) {
        match *self {
            Self::V4 { src, src_port } => {
                b[..4].copy_from_slice(&src.octets());
                b[6..8].copy_from_slice(&src_port.to_be_bytes());
            }
            Self::V6 { src, src_port } => {
                b[..16].copy_from_slice(&src.octets());
                b[18..20].copy_from_slice(&src_port.to_be_bytes());
            }
            Self::FlowLabel { src, flow_label } => {
                b[..16].copy_from_slice(&src.octets());
                b[16..20].copy_from_slice(&(flow_label & Self::MAX_FLOW_LABEL).to_be_bytes());
            }
        }
    }
    /// Read a body of class FILTER_SPEC or SENDER_TEMPLATE. The reserved bits before a
    /// port are ignored; those before a flow label must be zero.
    pub fn parse_body(class: u8, ctype: u8, body: &[u8]) -> Result<Self, ParseError> {
        if ctype == 3 {
            let (src, r) = take_addr(class, 2, body, 4)?;
            let IpAddr::V6(src) = src else {
                unreachable!("C-Type 2 is IPv6")
            };
            let flow_label = u32_at(r, 0);
            if flow_label > Self::MAX_FLOW_LABEL {
                return Err(bad(class));
            }
            return Ok(Self::FlowLabel { src, flow_label });
        }
        let (src, r) = take_addr(class, ctype, body, 4)?;
        let src_port = u16_at(r, 2);
        Ok(match src {
            IpAddr::V4(src) => Self::V4 { src, src_port },
            IpAddr::V6(src) => Self::V6 { src, src_port },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v4(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn session_both_families() {
        let s = Session {
            dst: v4("198.18.4.2"),
            protocol: 17,
            flags: 1,
            dst_port: 5001,
        };
        let mut b = vec![0u8; s.body_len()];
        s.emit_body(&mut b);
        assert_eq!(b, [198, 18, 4, 2, 17, 1, 0x13, 0x89]);
        assert_eq!((s.ctype(), Session::parse_body(1, &b)), (1, Ok(s)));
        let s6 = Session {
            dst: v4("2001:2:0:4::2"),
            protocol: 17,
            flags: 0,
            dst_port: 9,
        };
        let mut b = vec![0u8; s6.body_len()];
        s6.emit_body(&mut b);
        assert_eq!(b.len(), 20);
        assert_eq!(&b[..4], &[0x20, 0x01, 0, 2]);
        assert_eq!(&b[16..], &[17, 0, 0, 9]);
        assert_eq!((s6.ctype(), Session::parse_body(2, &b)), (2, Ok(s6)));
        assert_eq!(
            Session::parse_body(1, &b),
            Err(ParseError::BadObject { class: 1 })
        );
        assert_eq!(
            Session::parse_body(3, &b),
            Err(ParseError::UnknownCType { class: 1, ctype: 3 })
        );
    }

    #[test]
    fn hop_error_spec_confirm_round_trip() {
        for addr in [v4("198.18.1.1"), v4("2001:2:0:1::1")] {
            let h = Hop {
                addr,
                lih: 0xdead_beef,
            };
            let mut b = vec![0u8; h.body_len()];
            h.emit_body(&mut b);
            assert_eq!(&b[b.len() - 4..], &[0xde, 0xad, 0xbe, 0xef]);
            assert_eq!(Hop::parse_body(h.ctype(), &b), Ok(h));

            let e = ErrorSpec {
                node: addr,
                flags: 2,
                code: 1,
                value: 2,
            };
            let mut b = vec![0u8; e.body_len()];
            e.emit_body(&mut b);
            assert_eq!(&b[b.len() - 4..], &[2, 1, 0, 2]);
            assert_eq!(ErrorSpec::parse_body(e.ctype(), &b), Ok(e));

            let mut b = vec![0u8; confirm::body_len(addr)];
            confirm::emit_body(addr, &mut b);
            assert_eq!(confirm::parse_body(addr_ctype(addr), &b), Ok(addr));
        }
        assert_eq!(
            ErrorSpec::parse_body(9, &[0; 8]),
            Err(ParseError::UnknownCType { class: 6, ctype: 9 })
        );
        assert_eq!(
            confirm::parse_body(1, &[0; 8]),
            Err(ParseError::BadObject { class: 15 })
        );
    }

    #[test]
    fn styles_by_option_vector() {
        for (s, ov) in [(Style::Ff, 0x0a), (Style::Se, 0x12), (Style::Wf, 0x11)] {
            let mut b = [0u8; 4];
            s.emit_body(&mut b);
            assert_eq!(b, [0, 0, 0, ov]);
            assert_eq!(Style::parse_body(1, &b), Ok(s));
        }
        assert_eq!(Style::parse_body(1, &[0xff, 0, 0, 0x0a]), Ok(Style::Ff));
        assert_eq!(
            Style::parse_body(1, &[0, 0, 0, 0x09]),
            Err(ParseError::UnknownStyle(9))
        );
        assert_eq!(
            Style::parse_body(2, &[0, 0, 0, 0x0a]),
            Err(ParseError::UnknownCType { class: 8, ctype: 2 })
        );
        assert_eq!(time_values::parse_body(1, &[0, 0, 0x75, 0x30]), Ok(30_000));
        assert_eq!(
            time_values::parse_body(1, &[0; 8]),
            Err(ParseError::BadObject { class: 5 })
        );
    }

    #[test]
    fn filter_specs_all_ctypes() {
        let src6: Ipv6Addr = "2001:2:0:1::2".parse().unwrap();
        let cases = [
            (
                FilterSpec::V4 {
                    src: "198.18.1.2".parse().unwrap(),
                    src_port: 4000,
                },
                1,
                8,
            ),
            (
                FilterSpec::V6 {
                    src: src6,
                    src_port: 4001,
                },
                2,
                20,
            ),
            (
                FilterSpec::FlowLabel {
                    src: src6,
                    flow_label: 0xabcde,
                },
                3,
                20,
            ),
        ];
        for (f, ctype, len) in cases {
            assert_eq!((f.ctype(), f.body_len()), (ctype, len));
            let mut b = vec![0u8; len];
            f.emit_body(&mut b);
            for class in [class::FILTER_SPEC, class::SENDER_TEMPLATE] {
                assert_eq!(FilterSpec::parse_body(class, ctype, &b), Ok(f));
            }
        }
        let f = FilterSpec::FlowLabel {
            src: src6,
            flow_label: 0xabcde,
        };
        let mut b = [0u8; 20];
        f.emit_body(&mut b);
        assert_eq!(&b[16..], &[0x00, 0x0a, 0xbc, 0xde]);
        b[16] = 0x10;
        assert_eq!(
            FilterSpec::parse_body(10, 3, &b),
            Err(ParseError::BadObject { class: 10 })
        );
        assert_eq!(
            FilterSpec::parse_body(10, 3, &b[..8]),
            Err(ParseError::BadObject { class: 10 })
        );
        assert_eq!(
            FilterSpec::parse_body(11, 4, &b),
            Err(ParseError::UnknownCType {
                class: 11,
                ctype: 4
            })
        );
        assert_eq!(f.src(), IpAddr::V6(src6));
    }
}
