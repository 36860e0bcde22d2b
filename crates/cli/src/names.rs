//! A host's name as one address per family ([`dualstack::pair`]): the lookup here (the
//! system resolver, /etc/hosts included), the choice and its errors in the library.
//! Literals are taken as they are, and `localhost` is the loopback pair (RFC 6761 §6.3)
//! even where the hosts file gives it one family only.

use std::net::{IpAddr, ToSocketAddrs};

use dualstack::pair::Pair;

/// Every address `host` resolves to, in the resolver's order (a literal: itself).
pub(crate) fn lookup(host: &str) -> std::io::Result<Vec<IpAddr>> {
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    if let Ok(ip) = bare.parse::<IpAddr>() {
        return Ok(vec![ip]);
    }
    Ok((bare, 0).to_socket_addrs()?.map(|a| a.ip()).collect())
}

/// `host`'s IPv4 and IPv6 addresses, or one line saying why not (it does not resolve, or
/// a family is missing: `needs` ends that line).
pub(crate) fn pair(host: &str, needs: &str) -> Result<Pair, String> {
    if let Some(p) = dualstack::pair::localhost(host) {
        return Ok(p);
    }
    let addrs = lookup(host).map_err(|e| format!("cannot resolve {host}: {e}"))?;
    if let [one] = addrs[..] {
        if host
            .trim_start_matches('[')
            .trim_end_matches(']')
            .parse::<IpAddr>()
            .is_ok()
        {
            let family = if one.is_ipv4() { 4 } else { 6 };
            return Err(format!("{host} is one IPv{family} address; {needs}"));
        }
    }
    dualstack::pair::from_lookup(host, &addrs, needs).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn localhost_and_literals() {
        let p = pair("localhost", "x").unwrap();
        assert_eq!(
            (p.v4.to_string(), p.v6.to_string()),
            ("127.0.0.1".into(), "::1".into())
        );
        assert_eq!(
            lookup("[::1]").unwrap(),
            vec!["::1".parse::<IpAddr>().unwrap()]
        );
        assert_eq!(
            pair("127.0.0.1", "give both").unwrap_err(),
            "127.0.0.1 is one IPv4 address; give both"
        );
        assert_eq!(
            pair("[::1]", "x").unwrap_err(),
            "[::1] is one IPv6 address; x"
        );
    }
}
