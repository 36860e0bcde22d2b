//! What `dualperf send` prints without `--json`: a [`SendReport`] (and `--bidir`'s
//! [`crate::send::BidirReport`]) as text.

use std::collections::BTreeMap;

use meter::FlowSummary;
use wire::control::{Meter, Protocol};
use wire::ds::{Dscp, Ecn};

use crate::human;
use crate::send::{FlowOutcome, SendReport, StampOutcome};

/// Most flows shown one row each unless `--per-flow` asks for every row.
pub const MAX_ROWS: usize = 20;

/// Widest line of the default result table (`--wide` prints every column).
pub const WIDTH: usize = 100;

/// `dualperf send`'s results as text: one table row per flow (up to [`MAX_ROWS`] flows,
/// or all with `per_flow`; beyond that how the flows spread), then notes. The table fits
/// [`WIDTH`] columns, or with `wide` has every column of the sender's figures.
pub fn send_text(report: &SendReport, per_flow: bool, wide: bool) -> String {
    let rows = per_flow || report.flows.len() <= MAX_ROWS;
    let mut s = format!(
        "dualperf send to {}{}\n",
        report.dest,
        if report.interrupted {
            " (interrupted)"
        } else {
            ""
        }
    );
    if rows && wide {
        s.push_str(&wide_table(&report.flows));
    } else if rows {
        s.push_str(&table(&report.flows));
    } else if let Some(spread) = &report.sum.spread {
        s.push_str(&spread_text(report.flows.len(), spread));
    }
    for f in report
        .flows
        .iter()
        .filter(|f| rows && f.spec.meter == Meter::Rtt)
    {
        s.push_str(&format!(
            "flow {}: delay is the round trip{}\n",
            f.id,
            f.receiver_hold.map_or(String::new(), |h| format!(
                " minus the receiver's hold time (mean {}, max {})",
                human::duration(h.mean_ns),
                human::duration(h.max_ns as f64)
            ))
        ));
    }
    for f in report.flows.iter().filter(|_| rows) {
        if let Some(tcp) = &f.tcp {
            s.push_str(&tcp_text(f.id, &tcp.summary, wide));
        }
    }
    if report.flows.len() > 1 {
        let rate = |b: Option<f64>| human::or_missing(b, human::bitrate);
        let tcp: Vec<_> = report.flows.iter().filter_map(|f| f.tcp.as_ref()).collect();
        s.push_str(&format!(
            "sum of {} flows: sent {}, received {}{}\n",
            report.sum.flows,
            rate(report.sum.sent.bitrate_bps),
            rate(report.sum.received.as_ref().and_then(|r| r.bitrate_bps)),
            if tcp.is_empty() {
                String::new()
            } else {
                format!(
                    ", {} TCP retransmits",
                    tcp.iter().map(|t| t.summary.retransmits).sum::<u64>()
                )
            }
        ));
    }
    for f in report.flows.iter().filter(|_| rows) {
        // -O: what the figures above leave out, on each side.
        if let (Some(p), Some(b)) = (f.sent.omitted_packets, f.sent.omitted_bytes) {
            let what = |n: u64, bytes: u64| match counted(f) {
                human::Counted::Packets => format!("{n} packets ({})", human::bytes(bytes)),
                _ => format!("{} ({n} messages)", human::bytes(bytes)),
            };
            let received = f.received_omitted.map_or(String::new(), |r| {
                format!(", received {}", what(r.omitted_packets, r.omitted_bytes))
            });
            s.push_str(&format!(
                "flow {}: omitted warm-up (-O): sent {}{received}\n",
                f.id,
                what(p, b)
            ));
        }
        if let Some(e) = &f.intervals_error {
            s.push_str(&format!("flow {}: no interval series: {e}\n", f.id));
        }
        let Some(series) = &f.intervals else {
            continue;
        };
        let window_ns = series
            .first()
            .map_or(0, |i| i.end_ns.saturating_sub(i.start_ns));
        s.push_str(&format!(
            "flow {}: received per {} window, times from the flow's first arrival\n",
            f.id,
            human::duration(window_ns as f64)
        ));
        s.push_str(&human::interval_table_of(series, window_ns, counted(f)));
    }
    for f in report.flows.iter().filter(|_| rows) {
        if let Some(r) = &f.reservation {
            s.push_str(&r.text(f.id));
        }
    }
    for f in report.flows.iter().filter(|_| rows) {
        if let Some(st) = &f.stamp {
            s.push_str(&stamp_text(f, st));
        }
    }
    s.push_str(&clock_text(report));
    let failed: Vec<_> = report.flows.iter().filter(|f| f.error.is_some()).collect();
    for f in failed.iter().take(if rows { usize::MAX } else { MAX_ROWS }) {
        if let Some(e) = &f.error {
            s.push_str(&format!("flow {}: ended early: {e}\n", f.id));
        }
    }
    if !rows && failed.len() > MAX_ROWS {
        s.push_str(&format!(
            "… and {} more flows ended early (see --json)\n",
            failed.len() - MAX_ROWS
        ));
    }
    s
}

/// A TCP flow's connection as its sender's kernel saw it (`TCP_INFO`): retransmitted
/// segments (iperf3's Retr), the largest congestion window (iperf3's Cwnd) and the
/// smoothed RTT's range over the samples; with `wide` a second line with the rest.
fn tcp_text(id: u16, t: &crate::send::TcpInfoSummary, wide: bool) -> String {
    let d = |ns: Option<u64>| human::or_missing(ns, |v| human::duration(v as f64));
    let mut s = format!(
        "flow {id}: TCP {} retransmits, cwnd max {}, srtt min {}, mean {}, max {}\n",
        t.retransmits,
        human::bytes(t.max_cwnd_bytes),
        d(t.srtt_min_ns),
        human::or_missing(t.srtt_mean_ns, human::duration),
        d(t.srtt_max_ns),
    );
    if wide {
        let rate = |bps: Option<u64>| human::or_missing(bps, |v| human::bitrate(v as f64));
        s.push_str(&format!(
            "  at the end: cwnd {} ({} B segments), rttvar {}, pacing {}, delivery {}; min RTT {}; {} retransmitted; {} samples\n",
            human::bytes(t.cwnd_bytes),
            t.mss_bytes,
            d(t.rttvar_ns),
            rate(t.pacing_rate_bps),
            rate(t.delivery_rate_bps),
            d(t.min_rtt_ns),
            human::or_missing(t.bytes_retrans, human::bytes),
            t.samples,
        ));
    }
    s
}

/// What a flow's counts count: UDP datagrams, TCP messages (a write each, with its
/// length), or, for a TCP bulk flow, whose messages are only how its writes were cut,
/// bytes alone.
fn counted(f: &FlowOutcome) -> human::Counted {
    match (f.spec.protocol, f.spec.bulk) {
        (Protocol::Tcp, true) if f.stamp.is_none() => human::Counted::Bytes,
        (Protocol::Tcp, false) if f.stamp.is_none() => human::Counted::Messages,
        _ => human::Counted::Packets,
    }
}

/// A flow's count of `n` packets or messages carrying `bytes`, in what it counts:
/// `100 pkt`, `100 msg`, `1.55 GiB` (with `exact`, `1664090112 B`).
fn count_cell(f: &FlowOutcome, n: u64, bytes: u64, exact: bool) -> String {
    match counted(f) {
        human::Counted::Packets => format!("{n} pkt"),
        human::Counted::Messages => format!("{n} msg"),
        human::Counted::Bytes if exact => format!("{bytes} B"),
        human::Counted::Bytes => human::bytes(bytes),
    }
}

/// The figure a flow's delay columns show: the round trip of the echoes for
/// `--meter rtt`, else the receiver's one-way delay.
fn delay_summary(f: &FlowOutcome) -> Option<&FlowSummary> {
    if f.spec.meter == Meter::Rtt {
        f.rtt.as_ref()
    } else {
        f.received.as_ref()
    }
}

/// `udp/owd`, `stamp/rtt`: how a flow went and what it measured.
fn proto(f: &FlowOutcome) -> String {
    match &f.stamp {
        Some(_) => format!("stamp/{:?}", f.spec.meter).to_lowercase(),
        None => format!("{:?}/{:?}", f.spec.protocol, f.spec.meter).to_lowercase(),
    }
}

/// The default result table, one row per flow, at most [`WIDTH`] columns wide: each
/// figure in the unit that suits it, the flow's label shortened if the line needs it.
fn table(flows: &[FlowOutcome]) -> String {
    use human::{duration, or_missing};
    let header = [
        "flow",
        "proto",
        "size",
        "sent",
        "recv",
        "lost",
        "rx rate",
        "delay",
        "jitter",
        "sched p99",
    ];
    let mut rows: Vec<Vec<String>> = Vec::new();
    for f in flows {
        let rx = f.received.as_ref();
        let summary = delay_summary(f);
        rows.push(vec![
            format!("{} {}", f.id, f.spec.label),
            proto(f),
            human::bytes(u64::from(f.spec.size_bytes)),
            count_cell(f, f.sent.packets, f.sent.bytes, false),
            or_missing(rx, |r| count_cell(f, r.packets, r.bytes, false)),
            or_missing(rx.and_then(|r| r.loss.loss_pct), |p| format!("{p:.2} %")),
            // Payload bits over the first to the last arrival (D-ITG's definition).
            or_missing(rx.and_then(|r| r.bitrate_bps), human::bitrate),
            or_missing(summary.and_then(|s| s.delay.as_ref()), |d| {
                duration(d.mean_ns)
            }),
            // D-ITG's jitter: mean |D_i − D_{i−1}| of consecutive arrivals.
            or_missing(summary.and_then(|s| s.jitter.ditg_ns), duration),
            // 99th percentile of actual − scheduled send time (meter::schedule).
            or_missing(f.sent.schedule_error.as_ref(), |e| {
                duration(e.p99_ns as f64)
            }),
        ]);
    }
    // The columns after the first, with their two-space gaps; the flow column gets
    // what is left of the line.
    let width = |i: usize| {
        rows.iter()
            .map(|r| r[i].chars().count())
            .chain([header[i].chars().count()])
            .max()
            .unwrap_or(0)
    };
    let rest: usize = (1..header.len()).map(|i| width(i) + 2).sum();
    let room = WIDTH.saturating_sub(rest).max(header[0].len());
    for r in &mut rows {
        r[0] = shorten(&r[0], room);
    }
    let mut t = crate::text_table::Table::new(&header);
    for r in rows {
        t.row(r);
    }
    t.render()
        + "delay: mean, one-way (round trip for rtt flows); jitter: D-ITG's mean |ΔD| of arrivals;\n\
           sched p99: 99th percentile of actual − scheduled send time; every column: --wide\n"
}

/// `s` cut to `n` characters, ending in `…` when cut.
fn shorten(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        return s.to_owned();
    }
    let mut cut: String = s.chars().take(n.saturating_sub(1)).collect();
    cut.push('…');
    cut
}

/// The full result table of `--wide`: every column, in fixed units.
fn wide_table(flows: &[FlowOutcome]) -> String {
    let mut t = crate::text_table::Table::new(&[
        "flow",
        "proto",
        "size B",
        "sent",
        "received",
        "lost %",
        "sent pps",
        "rx Mbit/s",
        "delay mean µs",
        "jitter µs (D-ITG)",
        "sched err p99 µs",
    ]);
    let dash = || "-".to_owned();
    for f in flows {
        let summary = delay_summary(f);
        let rx = f.received.as_ref();
        t.row(vec![
            format!("{} {}", f.id, f.spec.label),
            proto(f),
            f.spec.size_bytes.to_string(),
            count_cell(f, f.sent.packets, f.sent.bytes, true),
            rx.map_or_else(dash, |r| count_cell(f, r.packets, r.bytes, true)),
            rx.and_then(|r| r.loss.loss_pct)
                .map_or_else(dash, |p| format!("{p:.3}")),
            f.sent.rate_pps.map_or_else(dash, |r| format!("{r:.1}")),
            rx.and_then(|r| r.bitrate_bps)
                .map_or_else(dash, |b| format!("{:.3}", b / 1e6)),
            summary
                .and_then(|s| s.delay.as_ref())
                .map_or_else(dash, |d| format!("{:.1}", d.mean_ns / 1e3)),
            summary
                .and_then(|s| s.jitter.ditg_ns)
                .map_or_else(dash, |j| format!("{:.1}", j / 1e3)),
            f.sent
                .schedule_error
                .as_ref()
                .map_or_else(dash, |e| format!("{:.1}", e.p99_ns as f64 / 1e3)),
        ]);
    }
    t.render()
}

/// The clocks' line: nothing for one clock; the offset and its bound between two hosts,
/// and a warning when the bound exceeds the delay variation a one-way flow measured.
fn clock_text(report: &SendReport) -> String {
    let Some(c) = report.clock.filter(|c| !c.same_clock) else {
        return String::new();
    };
    let ms = |ns: f64| ns / 1e6;
    // A STAMP session estimates the offset from its replies' timestamps.
    let (peer, what) = match report.flows.iter().any(|f| f.stamp.is_some()) {
        true => ("reflector", "STAMP replies"),
        false => ("receiver", "exchanges"),
    };
    let mut s = format!(
        "clocks: the {peer}'s reads {:+.3} ms against the sender's (± {:.3} ms; least round trip {:.3} ms over {} {what}); one-way delays include it\n",
        ms(c.offset_ns as f64),
        ms(c.bound_ns as f64),
        ms(c.delay_min_ns as f64),
        c.samples
    );
    if let Some(sync) = &report.sync {
        s.push_str(&format!(
            "sender's clock: {}\nreceiver's clock: {}\n",
            crate::clock::sync_text(&sync.sender),
            crate::clock::sync_text(&sync.receiver)
        ));
    }
    if let Some(caveat) = report.clock_caveat() {
        s.push_str(&format!(
            "warning: the clocks' uncertainty (± {:.3} ms) exceeds the delay variation measured ({:.3} ms, max − min): one-way delays here say less than their spread; compare with --meter rtt\n",
            ms(caveat.bound_ns as f64),
            ms(caveat.variation_ns as f64)
        ));
    }
    s
}

/// The STAMP lines of flow `f`, measured against a Session-Reflector (`send --stamp`):
/// the one-way means, loss by direction, what the reflector saw, and the odd replies.
fn stamp_text(f: &FlowOutcome, st: &StampOutcome) -> String {
    let mean = |s: Option<&FlowSummary>| {
        human::or_missing(s.and_then(|s| s.delay.as_ref()), |d| {
            human::duration(d.mean_ns)
        })
    };
    let count = |v: Option<u64>| v.map_or_else(|| "?".to_owned(), |v| v.to_string());
    let stateful = match (st.replies, st.reflector_stateful) {
        (0, _) => "no reply from the reflector",
        (_, Some(true)) => "stateful reflector",
        _ => "reflector stateless, or stateful without forward loss (its numbers were ours)",
    };
    let mut s = format!(
        "flow {}: STAMP, {} mode, SSID {}, {} timestamps, {stateful}\n",
        f.id, st.mode, st.ssid, st.timestamp_format
    );
    s.push_str(&format!(
        "  mean: round trip {} (reflector's turnaround removed), forward {}, reverse {} (one-way: two clocks)\n",
        mean(f.rtt.as_ref()),
        mean(f.received.as_ref()),
        mean(st.reverse.as_ref()),
    ));
    s.push_str(&format!(
        "  lost: forward {}, reverse {}, round trip {} of {} sent{}\n",
        count(st.forward_lost),
        count(st.reverse_lost),
        st.round_trip_lost,
        f.sent.packets,
        match (st.forward_lost, st.replies) {
            (Some(_), _) => "",
            (None, 0) => " (directions not told apart without a reply)",
            (None, _) => " (directions not told apart: a stateless reflector's numbers are ours)",
        }
    ));
    if let Some(rx) = &f.received {
        let mut seen = Vec::new();
        if let Some(cos) = &st.cos {
            seen.push(format!("DSCP {}", dscp_counts(&rx.marking.dscp_seen)));
            seen.push(format!("ECN {}", ecn_counts(&rx.marking.ecn_seen)));
            if cos.unsupported_replies > 0 {
                seen.push(format!(
                    "no Class of Service answer in {} replies",
                    cos.unsupported_replies
                ));
            }
        }
        if !rx.marking.hop_limit_seen.is_empty() {
            seen.push(format!("TTL {}", plain_counts(&rx.marking.hop_limit_seen)));
        }
        if !seen.is_empty() {
            s.push_str(&format!("  the reflector saw: {}\n", seen.join(", ")));
        }
    }
    if let (Some(cos), Some(rtt)) = (&st.cos, &f.rtt) {
        s.push_str(&format!(
            "  replies asked to carry DSCP {} came with DSCP {}{}\n",
            Dscp::new(cos.requested_dscp).map_or_else(String::new, |d| d.to_string()),
            dscp_counts(&rtt.marking.dscp_seen),
            if cos.refused_replies > 0 {
                format!(
                    " ({} refused by the reflector, RP set)",
                    cos.refused_replies
                )
            } else {
                String::new()
            }
        ));
    }
    let odd: Vec<String> = [
        ("duplicate", st.duplicate_replies),
        ("unknown (other session or never sent)", st.unknown_replies),
        ("malformed or failing the HMAC", st.malformed_replies),
        ("with SSID 0", st.zero_ssid_replies),
        (
            "with TLVs failing integrity",
            st.tlv_integrity_failed_replies,
        ),
    ]
    .iter()
    .filter(|(_, n)| *n > 0)
    .map(|(what, n)| format!("{n} {what}"))
    .collect();
    if !odd.is_empty() {
        s.push_str(&format!("  replies: {}\n", odd.join(", ")));
    }
    let ee = |ns: Option<u64>, sync: Option<bool>| {
        let err = ns.map_or_else(
            || "unknown".to_owned(),
            |n| format!("± {}", human::duration(n as f64)),
        );
        match sync {
            Some(true) => format!("{err}, synchronised"),
            Some(false) => format!("{err}, not synchronised"),
            None => "no reply".to_owned(),
        }
    };
    s.push_str(&format!(
        "  clock error estimates: ours {}; the reflector's {}\n",
        ee(st.sender_error_estimate_ns, Some(st.sender_synchronized)),
        ee(st.reflector_error_estimate_ns, st.reflector_synchronized)
    ));
    s
}

/// `46 ×100, 0 ×2` style counts of DSCPs (by name where they have one).
fn dscp_counts(seen: &BTreeMap<u8, u64>) -> String {
    counts(seen, |v| {
        Dscp::new(v).map_or_else(|| v.to_string(), |d| d.to_string())
    })
}

/// ECN codepoints seen, by name.
fn ecn_counts(seen: &BTreeMap<u8, u64>) -> String {
    counts(seen, |v| Ecn::from_bits(v).to_string())
}

fn plain_counts(seen: &BTreeMap<u8, u64>) -> String {
    counts(seen, |v| v.to_string())
}

fn counts(seen: &BTreeMap<u8, u64>, name: impl Fn(u8) -> String) -> String {
    if seen.is_empty() {
        return "unknown".to_owned();
    }
    seen.iter()
        .map(|(&v, n)| format!("{} ×{n}", name(v)))
        .collect::<Vec<_>>()
        .join(", ")
}

/// One live line of `send --interval` (without its newline): the payload bytes every
/// flow together handed to the kernel in the window `[from_ns, to_ns)`, timed from the
/// flows' common start `origin_ns` with the decimals windows of `window_ns` need, and
/// their rate; for TCP flows iperf3's Retr (segments retransmitted in the window, every
/// TCP flow together) and Cwnd (one TCP flow only); with more than one flow, how many.
pub fn live_line(
    origin_ns: u64,
    window_ns: u64,
    (from_ns, to_ns): (u64, u64),
    bytes: u64,
    tcp: Option<crate::tcp_info::LiveTcp>,
    flows: usize,
) -> String {
    let span_s = (to_ns - from_ns) as f64 / 1e9;
    let who = if flows > 1 {
        format!(" ({flows} flows)")
    } else {
        String::new()
    };
    let when = human::window(origin_ns, from_ns, to_ns, human::window_decimals(window_ns));
    let tcp = tcp.map_or(String::new(), |t| {
        format!(
            "  {:>5} retr{}",
            t.retransmits,
            t.cwnd_bytes
                .map_or(String::new(), |c| format!("  {:>10} cwnd", human::bytes(c)))
        )
    });
    format!(
        "[{when:>13}] {:>11} {:>14} sent{tcp}{who}",
        human::bytes(bytes),
        human::bitrate(bytes as f64 * 8.0 / span_s),
    )
}

/// `send --bidir` as text: each direction with its heading, then what went wrong.
pub fn bidir_text(report: &crate::send::BidirReport, per_flow: bool, wide: bool) -> String {
    let mut s = String::new();
    for (name, r) in [
        ("forward (to the agent)", &report.forward),
        ("reverse (from the agent)", &report.reverse),
    ] {
        s.push_str(&format!("{name}:\n"));
        match r {
            Some(r) => s.push_str(&send_text(r, per_flow, wide)),
            None => s.push_str("  not measured\n"),
        }
    }
    for e in &report.errors {
        s.push_str(&format!("error: {e}\n"));
    }
    s
}

/// How many flows spread: one row per figure, the median, 90th percentile and worst
/// flow.
fn spread_text(flows: usize, spread: &crate::send::Spread) -> String {
    let mut t = crate::text_table::Table::new(&["over flows", "flows", "median", "p90", "worst"]);
    let percent: fn(f64) -> String = human::percent;
    let rows = [
        ("lost", spread.loss_pct, percent),
        ("delay mean", spread.delay_mean_ns, human::duration),
        // D-ITG's jitter: mean |D_i − D_{i−1}| of consecutive arrivals.
        ("jitter (D-ITG)", spread.jitter_ditg_ns, human::duration),
        (
            "sched err p99",
            spread.schedule_error_p99_ns,
            human::duration,
        ),
    ];
    for (name, q, v) in rows {
        let Some(q) = q else {
            t.row(vec![
                name.into(),
                "0".into(),
                "-".into(),
                "-".into(),
                "-".into(),
            ]);
            continue;
        };
        t.row(vec![
            name.into(),
            q.flows.to_string(),
            v(q.median),
            v(q.p90),
            v(q.worst),
        ]);
    }
    let pct = |p: Option<f64>| human::or_missing(p, human::percent);
    format!(
        "{flows} flows (one row each with --per-flow, every figure with --json)\n{}delivered {} of the packets sent; {} sent within 1 ms of their deadline\n",
        t.render(),
        pct(spread.delivered_pct),
        pct(spread.on_time_pct),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_label_is_shortened_to_the_room_left_with_an_ellipsis() {
        assert_eq!(shorten("1 flow 0", 8), "1 flow 0");
        assert_eq!(shorten("3 a rather long label", 12), "3 a rather …");
        assert_eq!(shorten("12 µs-label", 5), "12 µ…");
    }

    #[test]
    fn a_live_line_says_the_window_the_bytes_their_rate_and_tcps_retr_and_cwnd() {
        use crate::tcp_info::LiveTcp;
        let origin = 7_000_000_000;
        // The second window of 1 s: 1,250,000 bytes are 10 Mbit/s.
        assert_eq!(
            live_line(
                origin,
                1_000_000_000,
                (origin + 1_000_000_000, origin + 2_000_000_000),
                1_250_000,
                None,
                1
            ),
            "[  1.00-2.00 s]    1.19 MiB    10.0 Mbit/s sent"
        );
        // A last, partial window of 250 ms of a 500 ms series, one TCP flow: its rate
        // is over the 250 ms, its Retr and Cwnd follow.
        let tcp = LiveTcp {
            retransmits: 3,
            cwnd_bytes: Some(65_536),
        };
        assert_eq!(
            live_line(
                origin,
                500_000_000,
                (origin + 2_500_000_000, origin + 2_750_000_000),
                1_000,
                Some(tcp),
                1
            ),
            "[  2.50-2.75 s]      1000 B    32.0 kbit/s sent      3 retr    64.0 KiB cwnd"
        );
        // Windows of 125 ms take three decimals; several flows have no Cwnd, and say
        // how many they are.
        let tcp = LiveTcp {
            retransmits: 0,
            cwnd_bytes: None,
        };
        assert_eq!(
            live_line(
                origin,
                125_000_000,
                (origin, origin + 125_000_000),
                0,
                Some(tcp),
                3
            ),
            "[0.000-0.125 s]         0 B        0 bit/s sent      0 retr (3 flows)"
        );
    }
}
