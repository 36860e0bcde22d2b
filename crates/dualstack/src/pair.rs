//! A host by name as an address pair, one per family: what `dualperf compare HOST` and a
//! plan's `[hosts.X] name = …` measure between. The lookup itself (getaddrinfo) is the
//! caller's; this takes the addresses it gave, in its order, and picks one of each
//! family, or says which record is missing.
//!
//! The pick, within a family: the widest scope first (RFC 6724 §3.1, §3.2: a global
//! address before a link-local one, which needs a zone to be reached), then the higher
//! RFC 6724 §2.1 precedence (a global IPv6 address, 40, before a ULA, 3), then the
//! lookup's own order. IPv4-mapped IPv6 addresses count as IPv4, and repeats as one.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use crate::select::{scope, PolicyTable};

/// A host's two addresses: the one to measure over IPv4, the one over IPv6.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct Pair {
    /// Its IPv4 address.
    pub v4: Ipv4Addr,
    /// Its IPv6 address.
    pub v6: Ipv6Addr,
}

impl Pair {
    /// The address of `family` (4, else 6).
    pub fn of(&self, family: u8) -> IpAddr {
        match family {
            4 => IpAddr::V4(self.v4),
            _ => IpAddr::V6(self.v6),
        }
    }
}

/// Why a name gives no pair. Each says, in one line, what the lookup found and what is
/// missing; the caller puts its own name in front (`dualperf compare: …`).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PairError {
    /// IPv4 only: no AAAA record.
    #[error("{name} has an A record ({v4}) but no AAAA record; {needs}")]
    NoAaaa {
        /// The name as given.
        name: String,
        /// The IPv4 address it has.
        v4: Ipv4Addr,
        /// What the caller needs both for ("compare needs both (or give --v4 ADDR --v6 ADDR)").
        needs: String,
    },
    /// IPv6 only: no A record.
    #[error("{name} has an AAAA record ({v6}) but no A record; {needs}")]
    NoA {
        /// The name as given.
        name: String,
        /// The IPv6 address it has.
        v6: Ipv6Addr,
        /// What the caller needs both for.
        needs: String,
    },
    /// The lookup gave nothing.
    #[error("{name} has no A or AAAA record; {needs}")]
    None {
        /// The name as given.
        name: String,
        /// What the caller needs both for.
        needs: String,
    },
}

/// `name`'s pair from the addresses its lookup gave (`addrs`, in the lookup's order);
/// `needs` ends the error, saying why both families are needed and what else to give.
pub fn from_lookup(name: &str, addrs: &[IpAddr], needs: &str) -> Result<Pair, PairError> {
    let (v4, v6) = best(addrs);
    match (v4, v6) {
        (Some(v4), Some(v6)) => Ok(Pair { v4, v6 }),
        (Some(v4), None) => Err(PairError::NoAaaa {
            name: name.to_owned(),
            v4,
            needs: needs.to_owned(),
        }),
        (None, Some(v6)) => Err(PairError::NoA {
            name: name.to_owned(),
            v6,
            needs: needs.to_owned(),
        }),
        (None, None) => Err(PairError::None {
            name: name.to_owned(),
            needs: needs.to_owned(),
        }),
    }
}

/// `localhost` and names under `.localhost` (RFC 6761 §6.3: they are the loopback
/// addresses, whatever a hosts file says): 127.0.0.1 and ::1, without a lookup.
pub fn localhost(name: &str) -> Option<Pair> {
    let name = name.strip_suffix('.').unwrap_or(name).to_ascii_lowercase();
    (name == "localhost" || name.ends_with(".localhost")).then_some(Pair {
        v4: Ipv4Addr::LOCALHOST,
        v6: Ipv6Addr::LOCALHOST,
    })
}

/// The address of each family to measure over, if the lookup gave one: the widest
/// scope, then the highest precedence, then the first (module docs).
pub fn best(addrs: &[IpAddr]) -> (Option<Ipv4Addr>, Option<Ipv6Addr>) {
    let table = PolicyTable::rfc6724();
    let mut seen: Vec<IpAddr> = Vec::new();
    for a in addrs {
        let a = match a {
            IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(*a, IpAddr::V4),
            v4 => *v4,
        };
        if !seen.contains(&a) {
            seen.push(a);
        }
    }
    // Stable: equal ranks keep the lookup's order.
    seen.sort_by_key(|a| {
        (
            std::cmp::Reverse(scope(*a)),
            std::cmp::Reverse(table.precedence(*a)),
        )
    });
    let v4 = seen.iter().find_map(|a| match a {
        IpAddr::V4(v4) => Some(*v4),
        IpAddr::V6(_) => None,
    });
    let v6 = seen.iter().find_map(|a| match a {
        IpAddr::V6(v6) => Some(*v6),
        IpAddr::V4(_) => None,
    });
    (v4, v6)
}

#[cfg(test)]
mod tests {
    use super::*;

    const NEEDS: &str = "compare needs both (or give --v4 ADDR --v6 ADDR)";

    fn ips(list: &[&str]) -> Vec<IpAddr> {
        list.iter().map(|a| a.parse().unwrap()).collect()
    }

    #[test]
    fn pair_of_a_only_names_the_missing_aaaa() {
        let e = from_lookup("receiver", &ips(&["198.18.4.2"]), NEEDS).unwrap_err();
        assert_eq!(
            e.to_string(),
            "receiver has an A record (198.18.4.2) but no AAAA record; compare needs both (or give --v4 ADDR --v6 ADDR)"
        );
        // An IPv4-mapped address is IPv4: still no AAAA.
        let e = from_lookup("m", &ips(&["::ffff:198.18.4.2"]), NEEDS).unwrap_err();
        assert!(matches!(e, PairError::NoAaaa { v4, .. } if v4 == Ipv4Addr::new(198, 18, 4, 2)));
    }

    #[test]
    fn pair_of_aaaa_only_names_the_missing_a() {
        let e = from_lookup("only6", &ips(&["2001:2:0:4::2"]), NEEDS).unwrap_err();
        assert_eq!(
            e.to_string(),
            "only6 has an AAAA record (2001:2:0:4::2) but no A record; compare needs both (or give --v4 ADDR --v6 ADDR)"
        );
        let e = from_lookup("none", &[], "x").unwrap_err();
        assert_eq!(e.to_string(), "none has no A or AAAA record; x");
    }

    #[test]
    fn pair_prefers_global_over_ula_and_link_local_and_dedupes() {
        let got = from_lookup(
            "h",
            &ips(&[
                "fe80::1",
                "fd00::5",
                "169.254.1.1",
                "198.18.4.2",
                "198.18.4.2",
                "2001:2:0:4::2",
                "2001:2:0:4::3",
            ]),
            NEEDS,
        )
        .unwrap();
        assert_eq!(
            got,
            Pair {
                v4: "198.18.4.2".parse().unwrap(),
                v6: "2001:2:0:4::2".parse().unwrap(),
            }
        );
        // A ULA beats a link-local address; lookup order breaks ties.
        assert_eq!(
            best(&ips(&["fe80::1", "fd00::5", "fd00::6"])),
            (None, Some("fd00::5".parse().unwrap()))
        );
        assert_eq!(got.of(4), "198.18.4.2".parse::<IpAddr>().unwrap());
        assert_eq!(got.of(6), "2001:2:0:4::2".parse::<IpAddr>().unwrap());
    }

    #[test]
    fn pair_of_literals_and_localhost() {
        // What localhost resolves to: loopback over both families.
        assert_eq!(
            from_lookup("localhost", &ips(&["::1", "127.0.0.1"]), NEEDS).unwrap(),
            Pair {
                v4: Ipv4Addr::LOCALHOST,
                v6: Ipv6Addr::LOCALHOST
            }
        );
        let loopback = Some(Pair {
            v4: Ipv4Addr::LOCALHOST,
            v6: Ipv6Addr::LOCALHOST,
        });
        assert_eq!(localhost("localhost"), loopback);
        assert_eq!(localhost("LocalHost."), loopback);
        assert_eq!(localhost("a.localhost"), loopback);
        assert_eq!(localhost("notlocalhost"), None);
        assert_eq!(
            best(&ips(&["198.18.4.2"])),
            (Some("198.18.4.2".parse().unwrap()), None)
        );
    }
}
