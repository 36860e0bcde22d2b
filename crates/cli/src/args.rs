//! Value parsers shared by the subcommands' flags: units always explicit.

use std::time::Duration as StdDuration;

use wire::control::Meter;
use wire::time::Duration;

/// `10s`, `250ms`, `100us`, `2m`; a bare number is seconds.
pub(crate) fn duration(s: &str) -> Result<Duration, String> {
    traffic::parse_duration(s).map_err(|e| e.to_string())
}

/// As [`duration`], as a `std::time::Duration`.
pub(crate) fn std_duration(s: &str) -> Result<StdDuration, String> {
    duration(s).map(Into::into)
}

/// `1472`, `64k`, `1KiB`, `10M`.
pub(crate) fn byte_count(s: &str) -> Result<u64, String> {
    traffic::parse_bytes(s).map_err(|e| e.to_string())
}

/// `owd` or `rtt` (D-ITG's `owdm`/`rttm` too).
pub(crate) fn meter(s: &str) -> Result<Meter, String> {
    match s.to_ascii_lowercase().as_str() {
        "owd" | "owdm" => Ok(Meter::Owd),
        "rtt" | "rttm" => Ok(Meter::Rtt),
        _ => Err(format!("unknown meter '{s}': use owd or rtt")),
    }
}

/// A 20-bit IPv6 flow label, decimal or `0x` hex.
pub(crate) fn flow_label(s: &str) -> Result<u32, String> {
    let v = if let Some(h) = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        u32::from_str_radix(h, 16)
    } else {
        s.parse()
    }
    .map_err(|_| format!("invalid flow label '{s}'"))?;
    if v > 0xF_FFFF {
        return Err(format!("flow label {s} exceeds 20 bits (max 0xfffff)"));
    }
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_units_and_rejects_junk() {
        assert_eq!(duration("250ms").unwrap(), Duration::from_millis(250));
        assert_eq!(byte_count("64k").unwrap(), 64_000);
        assert_eq!(meter("RTTM").unwrap(), Meter::Rtt);
        assert!(meter("x").is_err());
        assert_eq!(flow_label("0x12345").unwrap(), 0x12345);
        assert_eq!(flow_label("1048575").unwrap(), 0xF_FFFF);
        assert!(flow_label("0x100000").is_err());
        assert!(flow_label("zz").is_err());
    }
}
