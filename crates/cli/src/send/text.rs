//! What `dualperf send` prints without `--json`.

use std::collections::BTreeMap;

use meter::FlowSummary;
use results::send::{FlowOutcome, SendReport, StampOutcome};
use wire::control::Meter;
use wire::ds::{Dscp, Ecn};

/// Most flows shown one row each unless `--per-flow` asks for every row.
pub(crate) const MAX_ROWS: usize = 20;

/// `dualperf send`'s results as text: one table row per flow (up to [`MAX_ROWS`] flows,
/// or all with `per_flow`; beyond that how the flows spread), then notes.
pub(crate) fn send_text(report: &SendReport, per_flow: bool) -> String {
    let rows = per_flow || report.flows.len() <= MAX_ROWS;
    let mut t = report::text_table::Table::new(&[
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
    for f in report.flows.iter().filter(|_| rows) {
        let summary = if f.spec.meter == Meter::Rtt {
            f.rtt.as_ref()
        } else {
            f.received.as_ref()
        };
        let rx = f.received.as_ref();
        t.row(vec![
            format!("{} {}", f.id, f.spec.label),
            match &f.stamp {
                Some(_) => format!("stamp/{:?}", f.spec.meter).to_lowercase(),
                None => format!("{:?}/{:?}", f.spec.protocol, f.spec.meter).to_lowercase(),
            },
            f.spec.size_bytes.to_string(),
            f.sent.packets.to_string(),
            rx.map_or_else(dash, |r| r.packets.to_string()),
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
    let mut s = format!(
        "dualperf send to {}{}\n",
        report.dest,
        if report.interrupted {
            " (interrupted)"
        } else {
            ""
        }
    );
    if rows {
        s.push_str(&t.render());
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
                " minus the receiver's hold time (mean {:.1} µs, max {:.1} µs)",
                h.mean_ns / 1e3,
                h.max_ns as f64 / 1e3
            ))
        ));
    }
    if report.flows.len() > 1 {
        let mbit = |b: Option<f64>| b.map_or_else(|| "-".to_owned(), |b| format!("{:.3}", b / 1e6));
        s.push_str(&format!(
            "sum of {} flows: sent {} Mbit/s, received {} Mbit/s\n",
            report.sum.flows,
            mbit(report.sum.sent.bitrate_bps),
            mbit(report.sum.received.as_ref().and_then(|r| r.bitrate_bps)),
        ));
    }
    for f in report.flows.iter().filter(|_| rows) {
        if let Some(e) = &f.intervals_error {
            s.push_str(&format!("flow {}: no interval series: {e}\n", f.id));
        }
        let Some(series) = &f.intervals else {
            continue;
        };
        s.push_str(&format!("flow {}: received per interval\n", f.id));
        let origin = series.first().map_or(0, |i| i.start_ns);
        for i in series {
            s.push_str(&format!(
                "  [{:7.2}-{:7.2} s] {:>12} bytes {:>10} Mbit/s\n",
                (i.start_ns - origin) as f64 / 1e9,
                (i.end_ns - origin) as f64 / 1e9,
                i.bytes,
                i.bitrate_bps
                    .map_or_else(|| "-".to_owned(), |b| format!("{:.3}", b / 1e6)),
            ));
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
            crate::hostinfo::sync_text(&sync.sender),
            crate::hostinfo::sync_text(&sync.receiver)
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
    let us = |s: Option<&FlowSummary>| {
        s.and_then(|s| s.delay.as_ref())
            .map_or_else(|| "-".to_owned(), |d| format!("{:.1}", d.mean_ns / 1e3))
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
        "  mean µs: round trip {} (reflector's turnaround removed), forward {}, reverse {} (one-way: two clocks)\n",
        us(f.rtt.as_ref()),
        us(f.received.as_ref()),
        us(st.reverse.as_ref()),
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
        let err = ns.map_or_else(|| "unknown".to_owned(), |n| format!("± {}", human_ns(n)));
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

/// A span in the unit that suits it: ns, µs, ms or s.
fn human_ns(ns: u64) -> String {
    match ns {
        0..1_000 => format!("{ns} ns"),
        1_000..1_000_000 => format!("{:.3} µs", ns as f64 / 1e3),
        1_000_000..1_000_000_000 => format!("{:.3} ms", ns as f64 / 1e6),
        _ => format!("{:.3} s", ns as f64 / 1e9),
    }
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

/// `send --bidir` as text: each direction with its heading, then what went wrong.
pub(crate) fn bidir_text(report: &results::send::BidirReport, per_flow: bool) -> String {
    let mut s = String::new();
    for (name, r) in [
        ("forward (to the agent)", &report.forward),
        ("reverse (from the agent)", &report.reverse),
    ] {
        s.push_str(&format!("{name}:\n"));
        match r {
            Some(r) => s.push_str(&send_text(r, per_flow)),
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
fn spread_text(flows: usize, spread: &results::send::Spread) -> String {
    let mut t = report::text_table::Table::new(&["over flows", "flows", "median", "p90", "worst"]);
    let rows = [
        ("lost %", spread.loss_pct, 1.0, 3),
        ("delay mean µs", spread.delay_mean_ns, 1e3, 1),
        ("jitter µs (D-ITG)", spread.jitter_ditg_ns, 1e3, 1),
        ("sched err p99 µs", spread.schedule_error_p99_ns, 1e3, 1),
    ];
    for (name, q, unit, digits) in rows {
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
        let v = |x: f64| format!("{:.digits$}", x / unit);
        t.row(vec![
            name.into(),
            q.flows.to_string(),
            v(q.median),
            v(q.p90),
            v(q.worst),
        ]);
    }
    let pct = |p: Option<f64>| p.map_or_else(|| "-".to_owned(), |p| format!("{p:.3} %"));
    format!(
        "{flows} flows (one row each with --per-flow, every figure with --json)\n{}delivered {} of the packets sent; {} sent within 1 ms of their deadline\n",
        t.render(),
        pct(spread.delivered_pct),
        pct(spread.on_time_pct),
    )
}
