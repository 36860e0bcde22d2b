//! IPv4 and IPv6 address prefixes (`198.18.0.0/15`, `2001:2::/48`): the one type the
//! agent's `--allow`, the STAMP reflector's `--stamp-allow` and the QoS classifiers'
//! `src`/`dst` parse, and the one mask comparison the router's routes use.

use std::fmt;
use std::net::IpAddr;
use std::str::FromStr;

/// An address and how many of its leading bits count; the length is at most the
/// family's width (32 or 128).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Prefix {
    addr: IpAddr,
    bits: u8,
}

/// A prefix that does not parse.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PrefixError {
    /// The part before `/` is not an IPv4 or IPv6 address.
    #[error("'{0}' is not an address")]
    Address(String),
    /// The length is not a number up to the family's width.
    #[error("the prefix length must be 0 to {0}")]
    Length(u8),
}

impl Prefix {
    /// `addr/bits`, or `None` when `bits` is beyond the family's width.
    pub fn new(addr: IpAddr, bits: u8) -> Option<Self> {
        (bits <= width(addr)).then_some(Self { addr, bits })
    }

    /// The address as written (its bits past the length are kept).
    pub fn addr(&self) -> IpAddr {
        self.addr
    }

    /// The prefix length.
    pub fn bits(&self) -> u8 {
        self.bits
    }

    /// Whether `ip` is inside, an IPv4-mapped IPv6 address (`::ffff:a.b.c.d`) being
    /// the IPv4 address it carries.
    pub fn contains(&self, ip: IpAddr) -> bool {
        matches(unmapped(ip), unmapped(self.addr), self.bits)
    }
}

/// `a.b.c.d/len`, `x:y::/len`, or one address (its full width).
impl FromStr for Prefix {
    type Err = PrefixError;

    fn from_str(s: &str) -> Result<Self, PrefixError> {
        let (a, len) = match s.split_once('/') {
            Some((a, l)) => (a, Some(l)),
            None => (s, None),
        };
        let addr: IpAddr = a.parse().map_err(|_| PrefixError::Address(a.to_owned()))?;
        let max = width(addr);
        let bits = match len {
            None => max,
            Some(l) => l
                .parse::<u8>()
                .ok()
                .filter(|l| *l <= max)
                .ok_or(PrefixError::Length(max))?,
        };
        Ok(Self { addr, bits })
    }
}

impl fmt::Display for Prefix {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.addr, self.bits)
    }
}

/// Whether `addr` lies in `prefix/len`: the same family only (no mapping), a length
/// beyond the family's width taken as the full width.
pub fn matches(addr: IpAddr, prefix: IpAddr, len: u8) -> bool {
    match (addr, prefix) {
        (IpAddr::V4(a), IpAddr::V4(p)) => {
            let m = u32::MAX
                .checked_shl(32 - u32::from(len.min(32)))
                .unwrap_or(0);
            u32::from(a) & m == u32::from(p) & m
        }
        (IpAddr::V6(a), IpAddr::V6(p)) => {
            let m = u128::MAX
                .checked_shl(128 - u32::from(len.min(128)))
                .unwrap_or(0);
            u128::from(a) & m == u128::from(p) & m
        }
        _ => false,
    }
}

/// An IPv4-mapped IPv6 address as the IPv4 address it carries; any other as it is.
pub fn unmapped(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
        v4 => v4,
    }
}

fn width(addr: IpAddr) -> u8 {
    if addr.is_ipv4() {
        32
    } else {
        128
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn prefixes_parse_print_and_contain() {
        let p: Prefix = "198.18.0.0/15".parse().unwrap();
        assert_eq!((p.addr(), p.bits()), (ip("198.18.0.0"), 15));
        assert_eq!(p.to_string(), "198.18.0.0/15");
        assert!(p.contains(ip("198.19.255.1")));
        assert!(!p.contains(ip("198.20.0.1")));
        assert!(p.contains(ip("::ffff:198.18.0.1")));
        let p: Prefix = "2001:2::/48".parse().unwrap();
        assert!(p.contains(ip("2001:2:0:4::2")));
        assert!(!p.contains(ip("2001:3::1")));
        assert!(!p.contains(ip("198.18.0.1")));
        let one: Prefix = "10.0.0.1".parse().unwrap();
        assert_eq!(one.bits(), 32);
        assert!(one.contains(ip("10.0.0.1")));
        assert!(!one.contains(ip("10.0.0.2")));
        assert_eq!("2001:2::1".parse::<Prefix>().unwrap().bits(), 128);
        assert!("0.0.0.0/0"
            .parse::<Prefix>()
            .unwrap()
            .contains(ip("8.8.8.8")));
        assert_eq!(
            "10.0.0.0/33".parse::<Prefix>(),
            Err(PrefixError::Length(32))
        );
        assert_eq!(
            "2001::/129".parse::<Prefix>(),
            Err(PrefixError::Length(128))
        );
        assert_eq!("10.0.0.0/x".parse::<Prefix>(), Err(PrefixError::Length(32)));
        assert_eq!(
            "nope".parse::<Prefix>(),
            Err(PrefixError::Address("nope".into()))
        );
        assert!("".parse::<Prefix>().is_err());
        assert_eq!(Prefix::new(ip("10.0.0.0"), 33), None);
    }

    #[test]
    fn matches_is_one_family_and_clamps_the_length() {
        assert!(matches(ip("198.18.1.2"), ip("198.18.0.0"), 15));
        assert!(!matches(ip("::ffff:198.18.1.2"), ip("198.18.0.0"), 15));
        assert!(matches(ip("10.0.0.1"), ip("10.0.0.1"), 200));
        assert!(!matches(ip("10.0.0.2"), ip("10.0.0.1"), 200));
        assert!(matches(ip("2001:2::9"), ip("2001:2::"), 48));
    }

    #[test]
    fn mapped_addresses_become_v4() {
        assert_eq!(unmapped(ip("::ffff:127.0.0.1")), ip("127.0.0.1"));
        assert_eq!(unmapped(ip("::1")), ip("::1"));
        assert_eq!(unmapped(ip("198.18.0.1")), ip("198.18.0.1"));
    }
}
