//! Units on the command line and in files: rates, durations, byte counts.
//!
//! Rates take an explicit unit so a number is never ambiguous: `30000pps`, `0.56pps`,
//! `64kbit`, `10mbit`, `1.5gbit`, `1000bit` (SI prefixes, powers of 1000, as iperf and tc
//! use for bit rates), or one packet per exact interval, `every:30ms` (a media clock's
//! packetisation, which no whole number of milli-packets per second hits exactly). Durations: `10s`, `250ms`, `100us`, `1m`, `1.5s`; a bare number is
//! seconds. Byte counts: `1472`, `64k`/`64KB` (×1000), `1KiB` (×1024), `10M`, `1G`.

use core::fmt;
use core::str::FromStr;
use serde::{Deserialize, Serialize};
use wire::time::Duration;

/// A unit string that could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UnitError {
    /// A rate without a known unit or with a bad number.
    #[error("invalid rate '{0}': use e.g. 30000pps, 0.56pps, 64kbit, 10mbit, 1gbit, every:30ms")]
    Rate(String),
    /// A bad duration.
    #[error("invalid duration '{0}': use e.g. 10s, 250ms, 100us, 2m")]
    Duration(String),
    /// A bad byte count.
    #[error("invalid byte count '{0}': use e.g. 1472, 64k, 1KiB, 10M")]
    Bytes(String),
}

/// A send rate: packets per second or bits per second of payload. Serialised as its
/// text form (`"30000pps"`, `"10000000bit"`), which parses back to the same value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rate {
    /// Packets per second, in thousandths (so `0.56pps` is exact).
    MilliPps(u64),
    /// Payload bits per second.
    Bps(u64),
    /// One packet every this many nanoseconds, exactly.
    EveryNs(u64),
}

impl Rate {
    /// Packets per second, as a float, for `size_bytes`-byte packets.
    pub fn pps(self, size_bytes: u32) -> f64 {
        match self {
            Self::MilliPps(m) => m as f64 / 1000.0,
            Self::Bps(b) => b as f64 / (8.0 * f64::from(size_bytes.max(1))),
            Self::EveryNs(ns) => 1e9 / ns.max(1) as f64,
        }
    }

    /// The inter-departure time as an exact fraction of nanoseconds `(num, den)`.
    pub fn interval_ns(self, size_bytes: u32) -> (u128, u128) {
        match self {
            Self::MilliPps(m) => (1_000_000_000_000, u128::from(m.max(1))),
            Self::Bps(b) => (
                u128::from(size_bytes.max(1)) * 8 * 1_000_000_000,
                u128::from(b.max(1)),
            ),
            Self::EveryNs(ns) => (u128::from(ns.max(1)), 1),
        }
    }
}

impl fmt::Display for Rate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Self::MilliPps(m) if m % 1000 == 0 => write!(f, "{}pps", m / 1000),
            Self::MilliPps(m) => write!(f, "{}pps", m as f64 / 1000.0),
            Self::Bps(b) => write!(f, "{b}bit"),
            Self::EveryNs(ns) if ns % 1_000_000 == 0 => write!(f, "every:{}ms", ns / 1_000_000),
            Self::EveryNs(ns) if ns % 1_000 == 0 => write!(f, "every:{}us", ns / 1_000),
            Self::EveryNs(ns) => write!(f, "every:{ns}ns"),
        }
    }
}

impl Serialize for Rate {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl schemars::JsonSchema for Rate {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Rate".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "type": "string",
            "description": "A send rate as written: `30000pps`, `10mbit`, `every:20ms`"
        })
    }
}

impl<'de> Deserialize<'de> for Rate {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

fn split_number(s: &str) -> Option<(f64, String)> {
    let s = s.trim();
    let end = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(s.len());
    let value: f64 = s[..end].parse().ok()?;
    if !value.is_finite() || value < 0.0 {
        return None;
    }
    Some((value, s[end..].trim().to_ascii_lowercase()))
}

impl FromStr for Rate {
    type Err = UnitError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let err = || UnitError::Rate(s.to_owned());
        if let Some(gap) = s.trim().strip_prefix("every:") {
            let ns = parse_duration(gap).map_err(|_| err())?.as_nanos();
            return if ns == 0 {
                Err(err())
            } else {
                Ok(Self::EveryNs(ns))
            };
        }
        let (value, unit) = split_number(s).ok_or_else(err)?;
        let rate = match unit.as_str() {
            "pps" | "pkt/s" | "p/s" => Self::MilliPps((value * 1000.0).round() as u64),
            "kpps" => Self::MilliPps((value * 1e6).round() as u64),
            "bit" | "bps" | "bit/s" => Self::Bps(value.round() as u64),
            // A bare K/M/G means bits, as iperf reads `-b 10M`.
            "k" | "kbit" | "kbps" | "kbit/s" => Self::Bps((value * 1e3).round() as u64),
            "m" | "mbit" | "mbps" | "mbit/s" => Self::Bps((value * 1e6).round() as u64),
            "g" | "gbit" | "gbps" | "gbit/s" => Self::Bps((value * 1e9).round() as u64),
            _ => return Err(err()),
        };
        match rate {
            Self::MilliPps(0) | Self::Bps(0) => Err(err()),
            r => Ok(r),
        }
    }
}

/// Parse a duration such as `10s`, `250ms`, `100us`, `2m`; a bare number is seconds.
pub fn parse_duration(s: &str) -> Result<Duration, UnitError> {
    let err = || UnitError::Duration(s.to_owned());
    let (value, unit) = split_number(s).ok_or_else(err)?;
    let scale = match unit.as_str() {
        "" | "s" | "sec" => 1.0,
        "ms" => 1e-3,
        "us" | "µs" => 1e-6,
        "ns" => 1e-9,
        "m" | "min" => 60.0,
        "h" => 3600.0,
        _ => return Err(err()),
    };
    Ok(Duration::from_secs_f64(value * scale))
}

/// Parse a byte count such as `1472`, `64k`, `1KiB`, `10M`.
pub fn parse_bytes(s: &str) -> Result<u64, UnitError> {
    let err = || UnitError::Bytes(s.to_owned());
    let (value, unit) = split_number(s).ok_or_else(err)?;
    let scale = match unit.as_str() {
        "" | "b" => 1.0,
        "k" | "kb" => 1e3,
        "m" | "mb" => 1e6,
        "g" | "gb" => 1e9,
        "kib" => 1024.0,
        "mib" => 1024.0 * 1024.0,
        "gib" => 1024.0 * 1024.0 * 1024.0,
        _ => return Err(err()),
    };
    Ok((value * scale).round() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_parse_with_units() {
        assert_eq!(
            "30000pps".parse::<Rate>().unwrap(),
            Rate::MilliPps(30_000_000)
        );
        assert_eq!("0.56pps".parse::<Rate>().unwrap(), Rate::MilliPps(560));
        assert_eq!("10mbit".parse::<Rate>().unwrap(), Rate::Bps(10_000_000));
        assert_eq!("64kbit".parse::<Rate>().unwrap(), Rate::Bps(64_000));
        assert_eq!("1.5Gbit".parse::<Rate>().unwrap(), Rate::Bps(1_500_000_000));
        assert_eq!("10M".parse::<Rate>().unwrap(), Rate::Bps(10_000_000));
        assert!("30000".parse::<Rate>().is_err());
        assert!("0pps".parse::<Rate>().is_err());
        assert!("-1pps".parse::<Rate>().is_err());
        assert!("fastpps".parse::<Rate>().is_err());
    }

    #[test]
    fn rate_intervals_are_exact() {
        assert_eq!(
            "1000pps".parse::<Rate>().unwrap().interval_ns(64),
            (1_000_000_000_000, 1_000_000)
        );
        // 64 kbit/s of 160-byte packets: 50 pkt/s, 20 ms apart.
        let (n, d) = Rate::Bps(64_000).interval_ns(160);
        assert_eq!(n / d, 20_000_000);
        assert_eq!(Rate::Bps(64_000).pps(160), 50.0);
        assert_eq!(Rate::MilliPps(560).to_string(), "0.56pps");
        for r in [
            Rate::MilliPps(560),
            Rate::MilliPps(30_000_000),
            Rate::Bps(73_600),
        ] {
            assert_eq!(r.to_string().parse::<Rate>().unwrap(), r);
        }
    }

    #[test]
    fn durations_and_bytes_parse() {
        assert_eq!(parse_duration("10s").unwrap(), Duration::from_secs(10));
        assert_eq!(parse_duration("250ms").unwrap(), Duration::from_millis(250));
        assert_eq!(parse_duration("1.5").unwrap(), Duration::from_millis(1500));
        assert_eq!(parse_duration("2m").unwrap(), Duration::from_secs(120));
        assert!(parse_duration("10 parsecs").is_err());
        assert_eq!(parse_bytes("64k").unwrap(), 64_000);
        assert_eq!(parse_bytes("1KiB").unwrap(), 1024);
        assert!(parse_bytes("x").is_err());
    }

    #[test]
    fn every_is_an_exact_interval_that_round_trips() {
        let r: Rate = "every:30ms".parse().unwrap();
        assert_eq!(r, Rate::EveryNs(30_000_000));
        assert_eq!(r.interval_ns(172), (30_000_000, 1));
        assert_eq!(r.to_string(), "every:30ms");
        for text in ["every:125us", "every:7ns", "every:1ms"] {
            let r: Rate = text.parse().unwrap();
            assert_eq!(r.to_string(), text);
        }
        assert!("every:0ms".parse::<Rate>().is_err());
        assert!("every:soon".parse::<Rate>().is_err());
    }
}
