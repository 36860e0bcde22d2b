//! Value parsers shared by the subcommands' flags: units always explicit. Flow options'
//! own parsers are `traffic::options`'.

use std::net::IpAddr;
use std::time::Duration as StdDuration;

pub(crate) use wire::prefix::Prefix;
use wire::time::Duration;

/// `10s`, `250ms`, `100us`, `2m`; a bare number is seconds.
pub(crate) fn duration(s: &str) -> Result<Duration, String> {
    traffic::parse_duration(s).map_err(|e| e.to_string())
}

/// As [`duration`], as a `std::time::Duration`.
pub(crate) fn std_duration(s: &str) -> Result<StdDuration, String> {
    duration(s).map(Into::into)
}

/// A file the user named (a plan, a topology, a flow file, a router config): its text,
/// or a usage error (exit code 2) saying which file could not be read and why.
pub(crate) fn read_input(path: &std::path::Path, what: &str) -> anyhow::Result<String> {
    std::fs::read_to_string(path).map_err(|e| {
        anyhow::Error::new(crate::UsageError(format!(
            "cannot read {what} {}: {e}",
            path.display()
        )))
    })
}

/// `1472`, `64k`, `1KiB`, `10M`.
pub(crate) fn byte_count(s: &str) -> Result<u64, String> {
    traffic::parse_bytes(s).map_err(|e| e.to_string())
}

/// An address prefix (`agent --allow`, `recv --stamp-allow`): `198.18.0.0/15`,
/// `2001:2::/48`, `[2001:2::1]`, or one address (IPv4-mapped IPv6 counts as IPv4).
pub(crate) fn prefix(s: &str) -> Result<Prefix, String> {
    let (addr, len) = match s.split_once('/') {
        Some((a, l)) => (a, Some(l)),
        None => (s, None),
    };
    let net: IpAddr = addr
        .trim_start_matches('[')
        .trim_end_matches(']')
        .parse()
        .map_err(|_| format!("'{s}' is not an address or prefix (198.18.0.0/15, 2001:2::/48)"))?;
    let net = wire::prefix::unmapped(net);
    let max = if net.is_ipv4() { 32 } else { 128 };
    let len = match len {
        None => Some(max),
        Some(l) => l.parse::<u8>().ok(),
    };
    len.and_then(|len| Prefix::new(net, len))
        .ok_or_else(|| format!("'{s}': the prefix length must be 0 to {max}"))
}

/// A key given in hex (`--stamp-key`): at least 16 bytes.
pub(crate) fn hex_key(s: &str) -> Result<Vec<u8>, String> {
    let s = s.trim();
    if s.len() % 2 != 0 || !s.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err("the key must be hex digits, two per byte".into());
    }
    let key: Vec<u8> = (0..s.len())
        .step_by(2)
        .filter_map(|i| u8::from_str_radix(&s[i..i + 2], 16).ok())
        .collect();
    if key.len() < 16 {
        return Err(format!(
            "the key has {} bytes; give at least 16 (32 hex digits)",
            key.len()
        ));
    }
    Ok(key)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefixes_parse_and_contain() {
        let p = prefix("198.18.0.0/15").unwrap();
        assert!(p.contains("198.19.255.1".parse().unwrap()));
        assert!(!p.contains("198.20.0.1".parse().unwrap()));
        assert!(p.contains("::ffff:198.18.0.1".parse().unwrap()));
        let p = prefix("2001:2::/48").unwrap();
        assert!(p.contains("2001:2:0:4::2".parse().unwrap()));
        assert!(!p.contains("2001:3::1".parse().unwrap()));
        assert!(!p.contains("198.18.0.1".parse().unwrap()));
        let one = prefix("10.0.0.1").unwrap();
        assert!(one.contains("10.0.0.1".parse().unwrap()));
        assert!(!one.contains("10.0.0.2".parse().unwrap()));
        assert!(prefix("0.0.0.0/0")
            .unwrap()
            .contains("8.8.8.8".parse().unwrap()));
        for bad in ["10.0.0.0/33", "2001::/129", "nope", "10.0.0.0/x", ""] {
            assert!(prefix(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn parses_units_and_rejects_junk() {
        assert_eq!(duration("250ms").unwrap(), Duration::from_millis(250));
        assert_eq!(byte_count("64k").unwrap(), 64_000);
    }
}
