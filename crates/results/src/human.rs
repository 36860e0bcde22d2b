//! Figures for people: durations, rates and byte counts scaled to a unit that suits
//! them, each printed with its unit (the machine formats, JSON and CSV, keep plain ns,
//! bit/s and bytes).
//!
//! - Durations: `ns`, `µs`, `ms` with three significant digits (`850 ns`, `3.05 µs`,
//!   `41.2 ms`), seconds with millisecond resolution (`2.998 s`, `61.000 s`).
//! - Bit rates: SI, powers of 1000, as networks count them: `bit/s`, `kbit/s`, `Mbit/s`,
//!   `Gbit/s`, `Tbit/s`, three significant digits (`4.10 Mbit/s`).
//! - Byte counts: powers of 1024 (iperf3's "KBytes" are 1024-based too) under their IEC
//!   names, `B`, `KiB`, `MiB`, `GiB`, `TiB` (`1.46 MiB`): the names `--size` and `--bytes`
//!   read back with the same meaning, where `KB` would mean 1000.
//! - Packet rates: `pkt/s`, three significant digits below 1000, whole packets above.
//! - Percentages: three decimals (`0.125 %`), `<0.001 %` for a nonzero share too small
//!   to show.
//!
//! A value that is not finite prints as `-`, as a missing one does.

/// What a missing figure prints as.
pub const MISSING: &str = "-";

/// `v` formatted by `f`, or [`MISSING`].
pub fn or_missing<T>(v: Option<T>, f: impl FnOnce(T) -> String) -> String {
    v.map_or_else(|| MISSING.to_owned(), f)
}

/// A magnitude below 1000 with three significant digits: `0.982`, `3.05`, `41.2`, `412`.
fn sig3(x: f64) -> String {
    // The thresholds are where rounding carries into one more integer digit.
    let decimals = if x < 0.9995 {
        3
    } else if x < 9.995 {
        2
    } else if x < 99.95 {
        1
    } else {
        0
    };
    format!("{x:.decimals$}")
}

/// `x` in the largest of `units` (factor, name; ascending) that keeps it at least 1,
/// with three significant digits, a leading `-` when negative.
fn scaled(x: f64, units: &[(f64, &str)]) -> String {
    if !x.is_finite() {
        return MISSING.to_owned();
    }
    let sign = if x < 0.0 { "-" } else { "" };
    let a = x.abs();
    if a == 0.0 {
        return format!("0 {}", units[0].1);
    }
    let mut pick = units[0];
    for &(factor, name) in units {
        pick = (factor, name);
        // 999.5 and above would round to 1000: the next unit up shows it as 1.00.
        if a / factor < 999.5 {
            break;
        }
    }
    format!("{sign}{} {}", sig3(a / pick.0), pick.1)
}

/// A duration or delay given in ns (negative for a one-way delay under a clock offset,
/// or an IPDV): `850 ns`, `3.05 µs`, `41.2 ms`, `2.998 s`.
pub fn duration(ns: f64) -> String {
    if ns.is_finite() && ns.abs() >= 999.5e6 {
        let sign = if ns < 0.0 { "-" } else { "" };
        return format!("{sign}{:.3} s", ns.abs() / 1e9);
    }
    scaled(ns, &[(1.0, "ns"), (1e3, "µs"), (1e6, "ms")])
}

/// A span of time for people, in the two largest units that matter: `850 ms`, `45 s`,
/// `2 min 10 s`, `19 h 43 min`, `3 d 4 h` (a zero second part left out: `2 min`, `1 h`).
/// Rounded to the smallest unit shown; for delays, whose digits matter, see [`duration`].
pub fn span(d: std::time::Duration) -> String {
    if d.as_nanos() < 999_500_000 {
        return duration(d.as_nanos() as f64);
    }
    let two = |big: u64, big_unit: &str, small: u64, small_unit: &str| match small {
        0 => format!("{big} {big_unit}"),
        _ => format!("{big} {big_unit} {small} {small_unit}"),
    };
    // Whole seconds (half up), then whole minutes, then whole hours.
    let s = (d.as_millis() + 500) / 1000;
    let s = u64::try_from(s).unwrap_or(u64::MAX);
    if s < 60 {
        return format!("{s} s");
    }
    if s < 3600 {
        return two(s / 60, "min", s % 60, "s");
    }
    let m = s.saturating_add(30) / 60;
    if m < 24 * 60 {
        return two(m / 60, "h", m % 60, "min");
    }
    let h = s.saturating_add(1800) / 3600;
    two(h / 24, "d", h % 24, "h")
}

/// A bit rate given in bit/s, in powers of 1000: `4.10 Mbit/s`.
pub fn bitrate(bps: f64) -> String {
    scaled(
        bps,
        &[
            (1.0, "bit/s"),
            (1e3, "kbit/s"),
            (1e6, "Mbit/s"),
            (1e9, "Gbit/s"),
            (1e12, "Tbit/s"),
        ],
    )
}

/// A byte count in powers of 1024 (IEC names): `512 B`, `1.46 MiB`.
pub fn bytes(n: u64) -> String {
    if n < 1024 {
        return format!("{n} B");
    }
    const K: f64 = 1024.0;
    scaled(
        n as f64,
        &[
            (1.0, "B"),
            (K, "KiB"),
            (K * K, "MiB"),
            (K * K * K, "GiB"),
            (K * K * K * K, "TiB"),
        ],
    )
}

/// A packet rate: `3.33 pkt/s`, `1000 pkt/s`.
pub fn packet_rate(pps: f64) -> String {
    if !pps.is_finite() {
        return MISSING.to_owned();
    }
    if pps.abs() >= 999.5 {
        format!("{pps:.0} pkt/s")
    } else if pps == 0.0 {
        "0 pkt/s".to_owned()
    } else {
        format!("{} pkt/s", sig3(pps))
    }
}

/// A percentage given in percent: `0.125 %`; `<0.001 %` for a share above zero that
/// three decimals would show as none.
pub fn percent(p: f64) -> String {
    if !p.is_finite() {
        return MISSING.to_owned();
    }
    if p > 0.0 && p < 0.0005 {
        return "<0.001 %".to_owned();
    }
    format!("{p:.3} %")
}

/// How many decimals of a second tell windows of `window_ns` apart: at least 2 (iperf3's
/// `0.00-1.00`), more for windows that are not a whole number of hundredths.
pub fn window_decimals(window_ns: u64) -> usize {
    (2..9)
        .find(|d| window_ns % 10u64.pow(9 - *d as u32) == 0)
        .unwrap_or(9)
}

/// A window `[from_ns, to_ns)` in seconds since `origin_ns`: `0.00-1.00 s`.
pub fn window(origin_ns: u64, from_ns: u64, to_ns: u64, decimals: usize) -> String {
    let s = |t: u64| t.saturating_sub(origin_ns) as f64 / 1e9;
    format!("{:.decimals$}-{:.decimals$} s", s(from_ns), s(to_ns))
}

/// What a flow's counts count.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Counted {
    /// Datagrams (UDP, STAMP).
    Packets,
    /// TCP messages, a write of the flow's size each.
    Messages,
    /// Bytes alone: a TCP bulk flow's messages are only how its writes were cut.
    Bytes,
}

/// [`interval_table`] of a flow whose counts count `counted`: TCP messages, and for a
/// TCP bulk flow bytes alone, with no column of lost numbers (TCP loses none).
pub fn interval_table_of(series: &[meter::Interval], window_ns: u64, counted: Counted) -> String {
    let origin = series.first().map_or(0, |i| i.start_ns);
    let decimals = window_decimals(window_ns);
    let count = match counted {
        Counted::Packets => Some("packets"),
        Counted::Messages => Some("messages"),
        Counted::Bytes => None,
    };
    let lost = counted == Counted::Packets;
    let mut header = vec!["interval"];
    header.extend(count);
    header.extend(["received", "rx rate", "delay mean", "delay max", "jitter"]);
    if lost {
        header.push("lost pkt");
    }
    let mut t = crate::text_table::Table::new(&header);
    for i in series {
        let mut row = vec![window(origin, i.start_ns, i.end_ns, decimals)];
        if count.is_some() {
            row.push(i.packets.to_string());
        }
        row.extend([
            bytes(i.bytes),
            or_missing(i.bitrate_bps, bitrate),
            or_missing(i.delay_mean_ns, duration),
            or_missing(i.delay_max_ns.map(|d| d as f64), duration),
            // D-ITG's jitter of the pairs ending in the window (meter::interval).
            or_missing(i.jitter_ditg_ns, duration),
        ]);
        if lost {
            row.push(or_missing(i.lost, |n| n.to_string()));
        }
        t.row(row);
    }
    let legend = if lost {
        "lost pkt: numbers skipped by an arrival in the window, never received; -: an empty window\n"
    } else {
        "-: an empty window\n"
    };
    t.render()
        + "rx rate: payload bits over the whole window; jitter: D-ITG's mean |ΔD| of its arrivals;\n"
        + legend
}

/// A receiver's interval series (`decode --interval`, `send --interval`) as an aligned
/// table, then a legend: times in seconds since the first window's start, every figure
/// in its unit, `-` where an empty window has none (never 0: a stall is not zero delay).
pub fn interval_table(series: &[meter::Interval], window_ns: u64) -> String {
    interval_table_of(series, window_ns, Counted::Packets)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_take_the_unit_that_suits_them() {
        let cases: [(f64, &str); 17] = [
            (0.0, "0 ns"),
            (0.4, "0.400 ns"),
            (850.0, "850 ns"),
            (999.4, "999 ns"),
            (999.6, "1.00 µs"),
            (3_050.0, "3.05 µs"),
            (9_996.0, "10.0 µs"),
            (41_200.0, "41.2 µs"),
            (99_960.0, "100 µs"),
            (41_234_567.0, "41.2 ms"),
            (999_400_000.0, "999 ms"),
            (999_600_000.0, "1.000 s"),
            (2_998_400_000.0, "2.998 s"),
            (2_998_896_000.0, "2.999 s"),
            (61e9, "61.000 s"),
            (-2_450.0, "-2.45 µs"),
            (f64::NAN, "-"),
        ];
        for (ns, want) in cases {
            assert_eq!(duration(ns), want, "{ns} ns");
        }
        assert_eq!(duration(-1.5e9), "-1.500 s");
    }

    #[test]
    fn spans_show_the_two_largest_units_rounded_to_the_smaller() {
        let cases: [(f64, &str); 14] = [
            (0.0, "0 ns"),
            (0.25, "250 ms"),
            (0.9996, "1 s"),
            (45.4, "45 s"),
            (59.6, "1 min"),
            (130.0, "2 min 10 s"),
            (3599.4, "59 min 59 s"),
            (3599.6, "1 h"),
            (3629.0, "1 h"),
            (3631.0, "1 h 1 min"),
            (71_019.0, "19 h 44 min"),
            (86_369.0, "23 h 59 min"),
            (86_371.0, "1 d"),
            (3.0 * 86_400.0 + 4.0 * 3600.0 + 1799.0, "3 d 4 h"),
        ];
        for (secs, want) in cases {
            assert_eq!(
                span(std::time::Duration::from_secs_f64(secs)),
                want,
                "{secs} s"
            );
        }
    }

    #[test]
    fn bit_rates_scale_by_powers_of_1000() {
        assert_eq!(bitrate(0.0), "0 bit/s");
        assert_eq!(bitrate(800.0), "800 bit/s");
        assert_eq!(bitrate(64_000.0), "64.0 kbit/s");
        assert_eq!(bitrate(4_097_508.2), "4.10 Mbit/s");
        assert_eq!(bitrate(999_700.0), "1.00 Mbit/s");
        assert_eq!(bitrate(9.41e9), "9.41 Gbit/s");
        assert_eq!(bitrate(2.5e12), "2.50 Tbit/s");
        assert_eq!(bitrate(f64::INFINITY), "-");
    }

    #[test]
    fn byte_counts_scale_by_powers_of_1024_with_iec_names() {
        assert_eq!(bytes(0), "0 B");
        assert_eq!(bytes(512), "512 B");
        assert_eq!(bytes(1023), "1023 B");
        assert_eq!(bytes(1024), "1.00 KiB");
        assert_eq!(bytes(512_512), "500 KiB");
        assert_eq!(bytes(1_536_000), "1.46 MiB");
        assert_eq!(bytes(1_030_000), "0.982 MiB");
        assert_eq!(bytes(1_048_064), "1.00 MiB");
        assert_eq!(bytes(3 << 30), "3.00 GiB");
        assert_eq!(bytes(5 << 40), "5.00 TiB");
    }

    #[test]
    fn packet_rates_and_percentages() {
        assert_eq!(packet_rate(0.0), "0 pkt/s");
        assert_eq!(packet_rate(3.333), "3.33 pkt/s");
        assert_eq!(packet_rate(50.0), "50.0 pkt/s");
        assert_eq!(packet_rate(1000.368), "1000 pkt/s");
        assert_eq!(packet_rate(30_000.4), "30000 pkt/s");
        assert_eq!(percent(0.0), "0.000 %");
        assert_eq!(percent(0.0001), "<0.001 %");
        assert_eq!(percent(0.125), "0.125 %");
        assert_eq!(percent(100.0), "100.000 %");
    }

    #[test]
    fn windows_are_seconds_since_the_first_with_enough_decimals() {
        assert_eq!(window_decimals(1_000_000_000), 2);
        assert_eq!(window_decimals(100_000_000), 2);
        assert_eq!(window_decimals(10_000_000), 2);
        assert_eq!(window_decimals(5_000_000), 3);
        assert_eq!(window_decimals(250_000), 5);
        assert_eq!(window_decimals(1), 9);
        let origin = 1_795_656_970_929_588_027;
        assert_eq!(
            window(origin, origin, origin + 1_000_000_000, 2),
            "0.00-1.00 s"
        );
        assert_eq!(
            window(origin, origin + 5_000_000, origin + 10_000_000, 3),
            "0.005-0.010 s"
        );
    }

    #[test]
    fn an_interval_table_counts_from_the_first_window_and_leaves_empty_ones_missing() {
        let origin = 1_795_656_970_929_588_027;
        let full = meter::Interval {
            start_ns: origin,
            end_ns: origin + 500_000_000,
            packets: 500,
            bytes: 256_000,
            bitrate_bps: Some(4_096_000.0),
            rate_pps: Some(1000.0),
            delay_mean_ns: Some(3_270.0),
            delay_min_ns: Some(2_450),
            delay_max_ns: Some(64_100),
            jitter_ditg_ns: Some(320.4),
            jitter_rfc3550_ns: Some(201.2),
            lost: Some(0),
        };
        let empty = meter::Interval {
            start_ns: origin + 500_000_000,
            end_ns: origin + 1_000_000_000,
            ..meter::Interval::default()
        };
        assert_eq!(
            interval_table(&[full, empty], 500_000_000),
            "\
interval     packets  received      rx rate  delay mean  delay max  jitter  lost pkt
------------------------------------------------------------------------------------
0.00-0.50 s      500   250 KiB  4.10 Mbit/s     3.27 µs    64.1 µs  320 ns         0
0.50-1.00 s        0       0 B            -           -          -       -         -
rx rate: payload bits over the whole window; jitter: D-ITG's mean |ΔD| of its arrivals;
lost pkt: numbers skipped by an arrival in the window, never received; -: an empty window
"
        );
    }

    #[test]
    fn a_tcp_flows_interval_table_counts_messages_or_for_bulk_bytes_alone() {
        let origin = 1_795_656_970_929_588_027;
        let window = meter::Interval {
            start_ns: origin,
            end_ns: origin + 1_000_000_000,
            packets: 12_893,
            bytes: 12_893 * 131_072,
            bitrate_bps: Some(13.5e9),
            rate_pps: Some(12_893.0),
            delay_mean_ns: Some(697_000.0),
            delay_min_ns: Some(20_000),
            delay_max_ns: Some(15_400_000),
            jitter_ditg_ns: Some(76_700.0),
            jitter_rfc3550_ns: None,
            lost: Some(0),
        };
        assert_eq!(
            interval_table_of(&[window], 1_000_000_000, Counted::Bytes),
            "\
interval     received      rx rate  delay mean  delay max   jitter
------------------------------------------------------------------
0.00-1.00 s  1.57 GiB  13.5 Gbit/s      697 µs    15.4 ms  76.7 µs
rx rate: payload bits over the whole window; jitter: D-ITG's mean |ΔD| of its arrivals;
-: an empty window
"
        );
        let messages = interval_table_of(&[window], 1_000_000_000, Counted::Messages);
        assert!(
            messages.starts_with("interval     messages  received")
                && messages.contains(" 12893  1.57 GiB")
                && !messages.contains("lost"),
            "{messages}"
        );
        assert_eq!(
            interval_table_of(&[window], 1_000_000_000, Counted::Packets),
            interval_table(&[window], 1_000_000_000)
        );
    }

    #[test]
    fn missing_figures_print_as_a_dash() {
        assert_eq!(or_missing(None::<f64>, duration), "-");
        assert_eq!(or_missing(Some(3_050.0), duration), "3.05 µs");
    }
}
