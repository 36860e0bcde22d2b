//! The DS field: DSCP (RFC 2474 §3, the six high bits) and ECN (RFC 3168 §5, the two low
//! bits) of the IPv4 TOS octet and the IPv6 Traffic Class octet.
//!
//! DSCP and ECN are separate settings everywhere in dualperf, so a `--dscp` never
//! silently carries ECN bits (a recurring iperf3/irtt complaint, see
//! `reference/peer-tools.md` §4).

use core::fmt;
use core::str::FromStr;

/// A DiffServ codepoint, 0..=63 (serialised as its number).
#[derive(
    Clone,
    Copy,
    Debug,
    Default,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    serde::Serialize,
    schemars::JsonSchema,
)]
#[serde(transparent)]
pub struct Dscp(u8);

impl<'de> serde::Deserialize<'de> for Dscp {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let v = u8::deserialize(d)?;
        Self::new(v).ok_or_else(|| serde::de::Error::custom("DSCP above 63"))
    }
}

/// Named codepoints: Default/CS (RFC 2474 §4.2.2), AF (RFC 2597 §6), EF (RFC 3246 §2.4),
/// VOICE-ADMIT (RFC 5865 §4), LE (RFC 8622 §4).
const NAMES: &[(&str, u8)] = &[
    ("BE", 0),
    ("DF", 0),
    ("CS0", 0),
    ("LE", 1),
    ("CS1", 8),
    ("AF11", 10),
    ("AF12", 12),
    ("AF13", 14),
    ("CS2", 16),
    ("AF21", 18),
    ("AF22", 20),
    ("AF23", 22),
    ("CS3", 24),
    ("AF31", 26),
    ("AF32", 28),
    ("AF33", 30),
    ("CS4", 32),
    ("AF41", 34),
    ("AF42", 36),
    ("AF43", 38),
    ("CS5", 40),
    ("VA", 44),
    ("EF", 46),
    ("CS6", 48),
    ("CS7", 56),
];

impl Dscp {
    /// Expedited Forwarding, 101110 (RFC 3246).
    pub const EF: Self = Self(46);
    /// Default forwarding, 000000.
    pub const DEFAULT: Self = Self(0);

    /// A codepoint from its 6-bit value; `None` above 63.
    pub const fn new(value: u8) -> Option<Self> {
        if value < 64 {
            Some(Self(value))
        } else {
            None
        }
    }
    /// The 6-bit value.
    pub const fn value(self) -> u8 {
        self.0
    }
    /// The codepoint of a DS octet (TOS or traffic class).
    pub const fn from_ds_byte(byte: u8) -> Self {
        Self(byte >> 2)
    }
    /// The conventional name (EF, AF41, CS1…), if the codepoint has one.
    pub fn name(self) -> Option<&'static str> {
        NAMES
            .iter()
            .find(|(n, v)| *v == self.0 && *n != "DF" && *n != "CS0")
            .map(|(n, _)| *n)
    }
}

impl fmt::Display for Dscp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.name() {
            Some(n) => write!(f, "{n}"),
            None => write!(f, "{}", self.0),
        }
    }
}

/// Why a DSCP or ECN string was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DsParseError {
    /// Not a known name and not a number in range.
    #[error("unknown DSCP '{0}': use 0-63 (decimal or 0x hex) or a name such as EF, AF41, CS1, BE, LE, VA")]
    UnknownDscp(String),
    /// Not a known ECN codepoint.
    #[error("unknown ECN '{0}': use not-ect, ect1, ect0, ce or 0-3")]
    UnknownEcn(String),
}

fn parse_small_int(s: &str) -> Option<u32> {
    if let Some(hex) = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        u32::from_str_radix(hex, 16).ok()
    } else {
        s.parse().ok()
    }
}

impl FromStr for Dscp {
    type Err = DsParseError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let t = s.trim();
        if let Some(v) = parse_small_int(t) {
            return u8::try_from(v)
                .ok()
                .and_then(Self::new)
                .ok_or_else(|| DsParseError::UnknownDscp(s.to_owned()));
        }
        NAMES
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(t))
            .map(|(_, v)| Self(*v))
            .ok_or_else(|| DsParseError::UnknownDscp(s.to_owned()))
    }
}

/// The ECN codepoint (RFC 3168 §5).
#[derive(
    Clone,
    Copy,
    Debug,
    Default,
    PartialEq,
    Eq,
    Hash,
    serde::Serialize,
    serde::Deserialize,
    schemars::JsonSchema,
)]
#[serde(rename_all = "kebab-case")]
pub enum Ecn {
    /// 00: not ECN-capable transport.
    #[default]
    NotEct,
    /// 01: ECT(1).
    Ect1,
    /// 10: ECT(0).
    Ect0,
    /// 11: congestion experienced.
    Ce,
}

impl Ecn {
    /// The codepoint of the two low bits of `bits`.
    pub const fn from_bits(bits: u8) -> Self {
        match bits & 0b11 {
            0b00 => Self::NotEct,
            0b01 => Self::Ect1,
            0b10 => Self::Ect0,
            _ => Self::Ce,
        }
    }
    /// The two-bit value.
    pub const fn bits(self) -> u8 {
        match self {
            Self::NotEct => 0,
            Self::Ect1 => 1,
            Self::Ect0 => 2,
            Self::Ce => 3,
        }
    }
}

impl fmt::Display for Ecn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::NotEct => "not-ect",
            Self::Ect1 => "ect1",
            Self::Ect0 => "ect0",
            Self::Ce => "ce",
        })
    }
}

impl FromStr for Ecn {
    type Err = DsParseError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let t = s.trim().to_ascii_lowercase();
        Ok(match t.as_str() {
            "0" | "not-ect" | "notect" | "none" => Self::NotEct,
            "1" | "ect1" | "ect(1)" => Self::Ect1,
            "2" | "ect0" | "ect(0)" => Self::Ect0,
            "3" | "ce" => Self::Ce,
            _ => return Err(DsParseError::UnknownEcn(s.to_owned())),
        })
    }
}

/// The DS octet (IPv4 TOS, IPv6 Traffic Class) for a DSCP and an ECN codepoint:
/// `DSCP << 2 | ECN` (RFC 2474 §3, RFC 3168 §5).
pub const fn ds_byte(dscp: Dscp, ecn: Ecn) -> u8 {
    dscp.0 << 2 | ecn.bits()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_numbers_parse() {
        assert_eq!("EF".parse::<Dscp>().unwrap().value(), 46);
        assert_eq!("af41".parse::<Dscp>().unwrap().value(), 34);
        assert_eq!("CS1".parse::<Dscp>().unwrap().value(), 8);
        assert_eq!("0x2e".parse::<Dscp>().unwrap(), Dscp::EF);
        assert_eq!("63".parse::<Dscp>().unwrap().value(), 63);
        assert!("64".parse::<Dscp>().is_err());
        assert!("AF44".parse::<Dscp>().is_err());
        assert_eq!(Dscp::EF.to_string(), "EF");
        assert_eq!(Dscp::new(0).unwrap().to_string(), "BE");
        assert_eq!(Dscp::new(5).unwrap().to_string(), "5");
    }

    #[test]
    fn ds_byte_matches_rfc_examples() {
        // reference/qos.md §6.1: EF → 0xB8, EF with ECT(1) → 0xB9.
        assert_eq!(ds_byte(Dscp::EF, Ecn::NotEct), 0xB8);
        assert_eq!(ds_byte(Dscp::EF, Ecn::Ect1), 0xB9);
        assert_eq!(Dscp::from_ds_byte(0xB9), Dscp::EF);
        assert_eq!(Ecn::from_bits(0xB9), Ecn::Ect1);
        assert_eq!("ce".parse::<Ecn>().unwrap(), Ecn::Ce);
        assert!("x".parse::<Ecn>().is_err());
    }
}
