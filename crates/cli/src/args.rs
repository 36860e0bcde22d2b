//! Value parsers shared by the subcommands' flags: units always explicit. Flow options'
//! own parsers are `traffic::options`'.

use std::time::Duration as StdDuration;

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_units_and_rejects_junk() {
        assert_eq!(duration("250ms").unwrap(), Duration::from_millis(250));
        assert_eq!(byte_count("64k").unwrap(), 64_000);
    }
}
