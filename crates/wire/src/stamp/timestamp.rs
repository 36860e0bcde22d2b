//! The timestamps and the Error Estimate of STAMP test packets (RFC 8762 §4.2.1).
//!
//! A STAMP timestamp is 64 bits in one of two formats, told apart by the Z bit of the
//! Error Estimate that goes with it (RFC 8186 §2.3):
//!
//! ```text
//! NTP (RFC 5905 §6, Z = 0, the default)     PTPv2 truncated (IEEE 1588, Z = 1)
//! +-------------------+-------------------+ +-------------------+-------------------+
//! | seconds since     | fraction of a     | | seconds since     | nanoseconds       |
//! | 1900-01-01 (u32)  | second, 2^-32 s   | | 1970-01-01 (u32)  | (u32, < 10^9)     |
//! +-------------------+-------------------+ +-------------------+-------------------+
//! ```
//!
//! Conversions take and give nanoseconds since the Unix epoch (`*_unix_ns`), the wall
//! clock stamps of the rest of the program. Both formats hold 32-bit seconds, so both
//! are exact over 1970-01-01 ..= 2106-02-07 06:28:15.999999999 UTC:
//! - NTP seconds wrap (era 1) on 2036-02-07 06:28:16 UTC; an NTP seconds value below
//!   the Unix epoch's (2,208,988,800) is read as era 1, so the range above is covered.
//!   The fraction is rounded to the nearest 2^-32 s (≈ 0.23 ns) and back to the nearest
//!   nanosecond, so `ntp_to_unix_ns(ntp_from_unix_ns(ns)) == ns` in that range.
//! - PTP's epoch is TAI, the wall clock's is UTC: this module does not add the TAI-UTC
//!   offset (37 s since 2017); a caller that needs true PTP time adds it.
//!
//! The Error Estimate (RFC 4656 §4.1.2, with the Z bit of RFC 8186 §2.3; RFC 8762 §4.2.1
//! Figure 3):
//!
//! ```text
//!  0                   1
//!  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |S|Z|   Scale   |   Multiplier  |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! ```
//!
//! S: the clock is synchronized to UTC by an external source. Z: the format of the
//! timestamps (0 NTP, 1 PTP). The error is Multiplier × 2^(Scale − 32) s; a Multiplier
//! of 0 is not allowed (RFC 4656 §4.1.2) and reads as an unknown error.

/// Seconds from the NTP epoch (1900-01-01) to the Unix epoch (1970-01-01): 70 years,
/// 17 of them leap years.
pub const NTP_UNIX_OFFSET_S: u64 = 2_208_988_800;
const NS_PER_S: u64 = 1_000_000_000;
const ERA_S: u64 = 1 << 32;

/// The format of a STAMP timestamp, the Z bit of its Error Estimate.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TimestampFormat {
    /// NTP 64-bit (Z = 0, RFC 5905 §6): 32-bit seconds since 1900 and a 32-bit fraction.
    /// The default of RFC 8762 §4.2.1.
    Ntp,
    /// PTPv2 truncated (Z = 1): 32-bit seconds since 1970 and 32-bit nanoseconds.
    Ptp,
}

impl TimestampFormat {
    /// The timestamp in this format of `ns` nanoseconds since the Unix epoch.
    pub fn from_unix_ns(self, ns: u64) -> u64 {
        match self {
            Self::Ntp => ntp_from_unix_ns(ns),
            Self::Ptp => ptp_from_unix_ns(ns),
        }
    }

    /// Nanoseconds since the Unix epoch of a timestamp in this format.
    pub fn to_unix_ns(self, ts: u64) -> u64 {
        match self {
            Self::Ntp => ntp_to_unix_ns(ts),
            Self::Ptp => ptp_to_unix_ns(ts),
        }
    }
}

/// The NTP timestamp (32.32 seconds since 1900) of `ns` nanoseconds since the Unix
/// epoch; seconds wrap modulo 2^32 (NTP eras).
pub fn ntp_from_unix_ns(ns: u64) -> u64 {
    let secs = (ns / NS_PER_S + NTP_UNIX_OFFSET_S) % ERA_S;
    // sub < 2^30, so sub << 32 < 2^62; the rounded fraction stays below 2^32.
    let sub = ns % NS_PER_S;
    let frac = ((sub << 32) + NS_PER_S / 2) / NS_PER_S;
    (secs << 32) | frac
}

/// Nanoseconds since the Unix epoch of an NTP timestamp, era 0 from 1970 and era 1
/// below (see the module docs); the fraction is rounded to the nearest nanosecond.
pub fn ntp_to_unix_ns(ts: u64) -> u64 {
    let secs = ts >> 32;
    let frac = ts & 0xffff_ffff;
    let unix_secs = if secs >= NTP_UNIX_OFFSET_S {
        secs - NTP_UNIX_OFFSET_S
    } else {
        secs + ERA_S - NTP_UNIX_OFFSET_S
    };
    // unix_secs < 2^32 and frac * 10^9 < 2^62: no overflow.
    let sub = (frac * NS_PER_S + (1 << 31)) >> 32;
    unix_secs * NS_PER_S + sub
}

/// The PTPv2 truncated timestamp (32-bit seconds and 32-bit nanoseconds since 1970) of
/// `ns` nanoseconds since the Unix epoch; seconds wrap modulo 2^32.
pub fn ptp_from_unix_ns(ns: u64) -> u64 {
    (((ns / NS_PER_S) % ERA_S) << 32) | (ns % NS_PER_S)
}

/// Nanoseconds since the Unix epoch of a PTPv2 truncated timestamp. A nanoseconds field
/// of 10^9 or more (not valid PTP) is added as it is, which cannot overflow.
pub fn ptp_to_unix_ns(ts: u64) -> u64 {
    (ts >> 32) * NS_PER_S + (ts & 0xffff_ffff)
}

/// The Error Estimate of a STAMP timestamp: RFC 8762 §4.2.1 / RFC 4656 §4.1.2 (S,
/// Scale, Multiplier) and RFC 8186 §2.3 (Z).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ErrorEstimate {
    /// S: the clock is synchronized to UTC by an external source.
    pub synchronized: bool,
    /// Z: the format of the timestamps this estimate goes with.
    pub format: TimestampFormat,
    /// Scale, 6 bits (0..=63); higher bits are dropped on the wire.
    pub scale: u8,
    /// Multiplier; 0 is not allowed (RFC 4656 §4.1.2) and means "unknown" here.
    pub multiplier: u8,
}

impl ErrorEstimate {
    const S: u16 = 0x8000;
    const Z: u16 = 0x4000;
    const SCALE_MASK: u8 = 0x3f;

    /// Decode the two octets of the field (as a big-endian `u16`).
    pub fn from_u16(v: u16) -> Self {
        let [hi, lo] = v.to_be_bytes();
        Self {
            synchronized: v & Self::S != 0,
            format: if v & Self::Z != 0 {
                TimestampFormat::Ptp
            } else {
                TimestampFormat::Ntp
            },
            scale: hi & Self::SCALE_MASK,
            multiplier: lo,
        }
    }

    /// Encode the field; a `scale` above 63 loses its high bits.
    pub fn to_u16(self) -> u16 {
        let mut v = u16::from(self.scale & Self::SCALE_MASK) << 8 | u16::from(self.multiplier);
        if self.synchronized {
            v |= Self::S;
        }
        if self.format == TimestampFormat::Ptp {
            v |= Self::Z;
        }
        v
    }

    /// The error, Multiplier × 2^(Scale − 32) s, in nanoseconds rounded up (so it is
    /// never understated) and saturated at `u64::MAX`; `None` when the Multiplier is 0.
    pub fn error_ns(self) -> Option<u64> {
        if self.multiplier == 0 {
            return None;
        }
        let units = u128::from(self.multiplier) << (self.scale & Self::SCALE_MASK);
        let ns = (units * u128::from(NS_PER_S)).div_ceil(1 << 32);
        Some(u64::try_from(ns).unwrap_or(u64::MAX))
    }

    /// The smallest error this field can state that is at least `ns` nanoseconds (at
    /// least 2^-32 s, as the Multiplier cannot be 0), with the given S and Z.
    pub fn for_error_ns(ns: u64, synchronized: bool, format: TimestampFormat) -> Self {
        // The error in units of 2^-32 s, rounded up: at most ~7.9e19, far below u128.
        let units = (u128::from(ns) << 32).div_ceil(u128::from(NS_PER_S)).max(1);
        // Multiplier × 2^Scale ≥ units is tightest at the smallest Scale that lets the
        // Multiplier fit in 8 bits: coarser scales only round up further.
        let (scale, multiplier) = (0..=Self::SCALE_MASK)
            .find_map(|scale| {
                let m = units.div_ceil(1 << scale);
                u8::try_from(m).ok().map(|m| (scale, m))
            })
            .unwrap_or((Self::SCALE_MASK, u8::MAX));
        Self {
            synchronized,
            format,
            scale,
            multiplier,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A small deterministic generator for sweeps (no dependency on `rand`).
    fn xorshift(state: &mut u64) -> u64 {
        *state ^= *state << 13;
        *state ^= *state >> 7;
        *state ^= *state << 17;
        *state
    }

    /// 2106-02-07 06:28:16 UTC, the first instant 32-bit seconds cannot hold.
    const END_NS: u64 = ERA_S * NS_PER_S;

    #[test]
    fn ntp_epoch_offset_and_known_values() {
        // The Unix epoch is NTP second 2,208,988,800 = 0x83AA7E80.
        assert_eq!(ntp_from_unix_ns(0), 0x83AA_7E80_0000_0000);
        assert_eq!(ntp_to_unix_ns(0x83AA_7E80_0000_0000), 0);
        // Half a second is a fraction of 2^31.
        assert_eq!(ntp_from_unix_ns(1_500_000_000), 0x83AA_7E81_8000_0000);
        // 2017-01-01T00:00:00Z = Unix 1,483,228,800 = NTP 3,692,217,600 (0xDC12_C500).
        assert_eq!(
            ntp_from_unix_ns(1_483_228_800 * NS_PER_S),
            0xDC12_C500_0000_0000
        );
        // NTP era 1 starts at 2036-02-07T06:28:16Z = Unix 2,085,978,496.
        assert_eq!(ntp_to_unix_ns(0), 2_085_978_496 * NS_PER_S);
        assert_eq!(ntp_from_unix_ns(2_085_978_496 * NS_PER_S), 0);
        // The last representable instant.
        assert_eq!(ntp_to_unix_ns(ntp_from_unix_ns(END_NS - 1)), END_NS - 1);
        // The largest fraction rounds up into the next second.
        assert_eq!(ntp_to_unix_ns(0x83AA_7E80_FFFF_FFFF), NS_PER_S);
    }

    #[test]
    fn ntp_round_trips_exactly_within_its_range() {
        let mut s = 0x1234_5678_9abc_def0;
        for _ in 0..100_000 {
            let ns = xorshift(&mut s) % END_NS;
            let back = ntp_to_unix_ns(ntp_from_unix_ns(ns));
            // 2^-32 s resolution: the round trip is within 1 ns, and in fact exact.
            assert!(back.abs_diff(ns) <= 1, "{ns} -> {back}");
            assert_eq!(back, ns);
        }
        for sub in [0, 1, 2, 499_999_999, 500_000_000, 999_999_998, 999_999_999] {
            let ns = 1_700_000_000 * NS_PER_S + sub;
            assert_eq!(ntp_to_unix_ns(ntp_from_unix_ns(ns)), ns);
        }
        // Timestamps never decrease with the time they stand for (within an era).
        let a = ntp_from_unix_ns(1_700_000_000_000_000_000);
        let b = ntp_from_unix_ns(1_700_000_000_000_000_001);
        assert!(b > a);
    }

    #[test]
    fn ptp_known_values_and_round_trips() {
        assert_eq!(ptp_from_unix_ns(0), 0);
        assert_eq!(
            ptp_from_unix_ns(1_700_000_000_123_456_789),
            (1_700_000_000 << 32) | 123_456_789
        );
        assert_eq!(
            ptp_to_unix_ns((1_700_000_000 << 32) | 123_456_789),
            1_700_000_000_123_456_789
        );
        // An invalid nanoseconds field does not panic.
        assert_eq!(
            ptp_to_unix_ns(u64::MAX),
            (ERA_S - 1) * NS_PER_S + (ERA_S - 1)
        );
        let mut s = 42;
        for _ in 0..100_000 {
            let ns = xorshift(&mut s) % END_NS;
            assert_eq!(ptp_to_unix_ns(ptp_from_unix_ns(ns)), ns);
            assert_eq!(
                TimestampFormat::Ptp.to_unix_ns(TimestampFormat::Ptp.from_unix_ns(ns)),
                ns
            );
            assert_eq!(
                TimestampFormat::Ntp.to_unix_ns(TimestampFormat::Ntp.from_unix_ns(ns)),
                ns
            );
        }
    }

    #[test]
    fn conversions_of_arbitrary_timestamps_never_panic() {
        let mut s = 7;
        for ts in [0, 1, u64::MAX, u64::MAX - 1, 1 << 63, 0xffff_ffff]
            .into_iter()
            .chain((0..10_000).map(|_| xorshift(&mut s)))
        {
            let _ = ntp_to_unix_ns(ts);
            let _ = ptp_to_unix_ns(ts);
            let _ = ntp_from_unix_ns(ts);
            let _ = ptp_from_unix_ns(ts);
        }
    }

    #[test]
    fn error_estimate_bits() {
        let e = ErrorEstimate::from_u16(0b1100_0101_0000_0111);
        assert_eq!(
            e,
            ErrorEstimate {
                synchronized: true,
                format: TimestampFormat::Ptp,
                scale: 5,
                multiplier: 7
            }
        );
        assert_eq!(e.to_u16(), 0b1100_0101_0000_0111);
        let e = ErrorEstimate::from_u16(0x3fff);
        assert_eq!(
            (e.synchronized, e.format, e.scale, e.multiplier),
            (false, TimestampFormat::Ntp, 63, 255)
        );
        for v in 0..=u16::MAX {
            assert_eq!(ErrorEstimate::from_u16(v).to_u16(), v);
        }
        // A Scale above 6 bits loses its high bits instead of spilling into S and Z.
        let wide = ErrorEstimate {
            synchronized: false,
            format: TimestampFormat::Ntp,
            scale: 0xff,
            multiplier: 1,
        };
        assert_eq!(wide.to_u16(), 0x3f01);
    }

    #[test]
    fn error_estimate_values() {
        let e = |scale, multiplier| ErrorEstimate {
            synchronized: false,
            format: TimestampFormat::Ntp,
            scale,
            multiplier,
        };
        assert_eq!(e(32, 1).error_ns(), Some(NS_PER_S));
        assert_eq!(e(25, 128).error_ns(), Some(NS_PER_S));
        assert_eq!(e(0, 1).error_ns(), Some(1), "0.23 ns rounds up to 1 ns");
        assert_eq!(e(22, 1).error_ns(), Some(976_563), "2^-10 s = 976,562.5 ns");
        assert_eq!(e(7, 0).error_ns(), None, "Multiplier 0 is not allowed");
        assert_eq!(e(63, 255).error_ns(), Some(u64::MAX), "saturates");
    }

    #[test]
    fn for_error_ns_is_the_smallest_encoding_at_least_as_large() {
        let units = |e: ErrorEstimate| u128::from(e.multiplier) << e.scale;
        let mut s = 99;
        let cases = [
            0,
            1,
            2,
            232,
            233,
            1_000,
            976_562,
            976_563,
            NS_PER_S,
            3_600 * NS_PER_S,
        ]
        .into_iter()
        .chain((0..200).map(|_| xorshift(&mut s) >> (xorshift(&mut s) % 64)));
        for ns in cases {
            let e = ErrorEstimate::for_error_ns(ns, true, TimestampFormat::Ptp);
            assert!(e.synchronized && e.format == TimestampFormat::Ptp);
            assert!(e.multiplier >= 1 && e.scale <= 63);
            assert!(e.error_ns().unwrap() >= ns, "{ns}: {e:?}");
            // Exactly: Multiplier × 2^Scale units of 2^-32 s cover ns ...
            let need = (u128::from(ns) << 32).div_ceil(u128::from(NS_PER_S)).max(1);
            assert!(units(e) >= need);
            // ... and no encoding with a smaller value does.
            for scale in 0..=63u8 {
                for m in 1..=255u8 {
                    let v = u128::from(m) << scale;
                    assert!(
                        v >= units(e) || v < need,
                        "{ns}: ({scale}, {m}) beats {e:?}"
                    );
                }
            }
            assert_eq!(ErrorEstimate::from_u16(e.to_u16()), e);
        }
        let one_s = ErrorEstimate::for_error_ns(NS_PER_S, false, TimestampFormat::Ntp);
        assert_eq!((one_s.scale, one_s.multiplier), (25, 128));
        let huge = ErrorEstimate::for_error_ns(u64::MAX, false, TimestampFormat::Ntp);
        assert_eq!(huge.error_ns(), Some(u64::MAX));
    }
}
