//! What `dualperf decode` prints without `--json`: a [`Decoded`] log as text, in
//! dualperf's own layout ([`text`], each figure in the unit that suits it) or in D-ITG
//! ITGDec's ([`itgdec`]), and where a log cut short ends ([`cut_sentence`]).

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write;

use meter::FlowSummary;
use wire::control::Meter;

use super::read::Decoded;
use super::LogEnd;
use crate::human;
use crate::log::LogFlow;

/// The report in D-ITG ITGDec's layout (`decode --itgdec`), then the sent side, RTP
/// jitter and schedule error of each flow, where the log ends, and the interval series
/// as CSV.
pub fn itgdec(d: &Decoded) -> String {
    let mut out = String::new();
    if d.end.rx_records > 0 || d.end.tx_records == 0 {
        let _ = write!(out, "{}", meter::text::itgdec_text(&d.summary));
    } else {
        let _ = writeln!(
            out,
            "No received packets in this log (a sender's log of one-way flows: the receiver's log has the arrivals)."
        );
    }
    let na = || "-".to_owned();
    for (id, s) in &d.sent {
        let _ = writeln!(
            out,
            "Flow {id} sent: {} packets, {} bytes, {} pkt/s, {} kbit/s (first to last send)",
            s.packets,
            s.bytes,
            s.rate_pps.map_or_else(na, |r| format!("{r:.3}")),
            s.bitrate_bps.map_or_else(na, |b| format!("{:.3}", b / 1e3)),
        );
    }
    for (id, j) in &d.received_rtp {
        let _ = writeln!(
            out,
            "Flow {id} RTP jitter (RFC 3550, against RTP timestamps): last {:.3} µs, mean {:.3} µs, max {:.3} µs over {} packets",
            j.last_ns / 1e3,
            j.mean_ns / 1e3,
            j.max_ns / 1e3,
            j.packets
        );
    }
    for (id, e) in &d.schedule_error {
        let _ = writeln!(
            out,
            "Flow {id} send schedule error: mean {:.3} µs, p99 {:.3} µs, max {:.3} µs",
            e.mean_ns / 1e3,
            e.p99_ns as f64 / 1e3,
            e.max_ns as f64 / 1e3
        );
    }
    if !d.end.complete {
        let _ = writeln!(out, "{}", cut_sentence(&d.end));
    }
    if let Some(iv) = &d.intervals {
        let _ = writeln!(out);
        let _ = write!(out, "{}", meter::text::csv_intervals(iv));
    }
    out
}

/// Width of the label column of the text report.
const LABEL: usize = 16;

/// One `  label          value` line of a flow's block.
fn line(out: &mut String, label: &str, value: impl std::fmt::Display) {
    let _ = writeln!(out, "  {label:<LABEL$}{value}");
}

/// The text report: a block per flow (what arrived, then what was sent), the total of
/// several flows, where a log cut short ends, then the interval series as a table.
pub fn text(d: &Decoded) -> String {
    let mut out = String::new();
    let received: BTreeMap<u32, &FlowSummary> =
        d.summary.flows.iter().map(|f| (f.flow, f)).collect();
    if d.end.rx_records == 0 && d.end.tx_records > 0 {
        out.push_str("No received packets in this log (a sender's log of one-way flows: the receiver's log has the arrivals).\n");
    }
    let ids: BTreeSet<u32> = received.keys().chain(d.sent.keys()).copied().collect();
    if ids.is_empty() {
        out.push_str("No packet records in this log.\n");
    }
    for (n, id) in ids.iter().enumerate() {
        if n > 0 || !out.is_empty() {
            out.push('\n');
        }
        let info = d.flow_info.get(id);
        let _ = writeln!(out, "flow {id}{}", describe(info));
        // A sender's log holds the echoes of its round-trip flows: their delay is the
        // round trip (the receiver's hold time not taken out).
        let rtt = d.sender_log && info.and_then(LogFlow::meter) == Some(Meter::Rtt);
        if let Some(f) = received.get(id) {
            flow_lines(&mut out, f, if rtt { "round trip" } else { "delay" });
        }
        if let Some(j) = d.received_rtp.get(id) {
            // RFC 3550 §6.4.1 against the RTP timestamps, at the announced media clock.
            line(
                &mut out,
                "RTP jitter",
                format!(
                    "last {}, mean {}, max {} over {} packets (RFC 3550 §6.4.1, on RTP timestamps)",
                    human::duration(j.last_ns),
                    human::duration(j.mean_ns),
                    human::duration(j.max_ns),
                    j.packets
                ),
            );
        }
        if let Some(s) = d.sent.get(id) {
            line(
                &mut out,
                "sent",
                format!(
                    "{} packets, {} ({} B), {}, {} (first to last send)",
                    s.packets,
                    human::bytes(s.bytes),
                    s.bytes,
                    human::or_missing(s.rate_pps, human::packet_rate),
                    human::or_missing(s.bitrate_bps, human::bitrate),
                ),
            );
        }
        if let Some(e) = d.schedule_error.get(id) {
            // Actual minus scheduled send time; a packet sent early counts as 0.
            line(
                &mut out,
                "schedule error",
                format!(
                    "mean {}, p50 {}, p99 {}, max {}",
                    human::duration(e.mean_ns),
                    human::duration(e.p50_ns as f64),
                    human::duration(e.p99_ns as f64),
                    human::duration(e.max_ns as f64),
                ),
            );
            line(
                &mut out,
                "",
                format!(
                    "{} of {} packets later than {} (error: actual − scheduled send time)",
                    e.late_packets,
                    e.packets,
                    human::duration(e.late_threshold_ns as f64),
                ),
            );
        }
    }
    if d.summary.flows.len() > 1 {
        let _ = writeln!(
            out,
            "\ntotal of {} flows (delay to PDV: all flows' arrivals as one stream, as ITGDec's TOTAL)",
            d.summary.flows.len()
        );
        flow_lines(&mut out, &d.summary.total, "delay");
    }
    if !d.end.complete {
        out.push('\n');
        out.push_str(&cut_sentence(&d.end));
        out.push('\n');
    }
    if let (Some(iv), Some(w)) = (&d.intervals, d.interval_ns) {
        let _ = writeln!(
            out,
            "\nreceived per {} window of receive time, from the first window's start",
            human::duration(w as f64)
        );
        out.push_str(&human::interval_table(iv, w));
    }
    out
}

/// `udp`, `rtt`: a value as its JSON string.
fn name(v: impl serde::Serialize) -> Option<String> {
    serde_json::to_value(v).ok()?.as_str().map(str::to_owned)
}

/// `: udp, meter owd, "flow 0", from 127.0.0.1 port 42483`: what the log says of a flow.
fn describe(info: Option<&LogFlow>) -> String {
    let mut parts = Vec::new();
    parts.extend(info.and_then(LogFlow::protocol).and_then(name));
    parts.extend(
        info.and_then(LogFlow::meter)
            .and_then(name)
            .map(|m| format!("meter {m}")),
    );
    parts.extend(info.and_then(LogFlow::label).map(|l| format!("{l:?}")));
    if let Some(peer) = info.and_then(|i| i.peer) {
        let port = info.and_then(|i| i.announce.as_ref()?.src_port);
        parts.push(match port {
            Some(p) => format!("from {peer} port {p}"),
            None => format!("from {peer}"),
        });
    }
    match parts.is_empty() {
        true => String::new(),
        false => format!(": {}", parts.join(", ")),
    }
}

/// The lines of one flow's (or the total's) received figures; `delay` names the delay.
fn flow_lines(out: &mut String, f: &FlowSummary, delay: &str) {
    use human::{duration, or_missing};
    let loss = &f.loss;
    line(
        out,
        "packets",
        format!(
            "{} received ({} unique), {} sent",
            f.packets,
            f.unique_packets,
            loss.sent
                .map_or_else(|| "unknown".into(), |n| n.to_string())
        ),
    );
    // Sequence numbers never received among those expected (RFC 7680's loss), bursts
    // as loss periods (RFC 3357).
    let mut lost = format!(
        "{} of {} expected ({})",
        loss.lost,
        loss.expected,
        or_missing(loss.loss_pct, human::percent)
    );
    if loss.sent.is_none() {
        lost.push_str(", the sender's count unknown: expected up to the highest number");
    }
    if loss.bursts > 0 {
        lost.push_str(&format!(
            "; {} bursts, mean {} pkt, longest {} pkt",
            loss.bursts,
            loss.mean_burst_len
                .map_or_else(|| "-".into(), |b| format!("{b:.2}")),
            loss.max_burst_len
        ));
    }
    line(out, "lost", lost);
    line(
        out,
        "lost (D-ITG)",
        format!(
            "{} dropped ({}), by ITGDec's rule",
            loss.ditg.dropped,
            human::percent(loss.ditg.loss_pct)
        ),
    );
    line(
        out,
        "received",
        format!(
            "{} ({} B) in {}, first to last arrival",
            human::bytes(f.bytes),
            f.bytes,
            or_missing(f.duration_ns.map(|d| d as f64), duration)
        ),
    );
    // D-ITG's rates: over first to last arrival, N packets over N − 1 gaps.
    line(
        out,
        "rate",
        format!(
            "{}, {} (payload)",
            or_missing(f.bitrate_bps, human::bitrate),
            or_missing(f.rate_pps, human::packet_rate)
        ),
    );
    delay_lines(out, f, delay);
    let mut order = format!(
        "{} duplicated, {} reordered (RFC 4737)",
        loss.duplicates, loss.reordered
    );
    if let Some(x) = loss.max_reorder_extent {
        order.push_str(&format!(", extent up to {x} pkt"));
    }
    if loss.outside_window > 0 {
        order.push_str(&format!(
            ", {} outside the reordering window",
            loss.outside_window
        ));
    }
    line(out, "order", order);
    marking_lines(out, f);
}

/// The delay (`delay` names it), the jitters, IPDV and PDV of a flow's figures.
fn delay_lines(out: &mut String, f: &FlowSummary, delay: &str) {
    use human::{duration, or_missing};
    match &f.delay {
        Some(d) => {
            let p = |v: Option<i64>| or_missing(v.map(|v| v as f64), duration);
            line(
                out,
                delay,
                format!(
                    "min {}, mean {}, max {}, sd {}",
                    duration(d.min_ns as f64),
                    duration(d.mean_ns),
                    duration(d.max_ns as f64),
                    duration(d.stddev_ns)
                ),
            );
            line(
                out,
                "",
                format!(
                    "p50 {}, p95 {}, p99 {}",
                    p(d.p50_ns),
                    p(d.p95_ns),
                    p(d.p99_ns)
                ),
            );
        }
        None => line(out, delay, human::MISSING),
    }
    let j = &f.jitter;
    let ns = |v: Option<f64>| or_missing(v, duration);
    let ns_u = |v: Option<u64>| or_missing(v.map(|v| v as f64), duration);
    // D-ITG: mean |D_i − D_{i−1}| of consecutive arrivals; RFC 3550 §6.4.1: the
    // running estimate after the last packet.
    line(
        out,
        "jitter",
        format!(
            "D-ITG {} (mean |ΔD|), RFC 3550 {} (§6.4.1)",
            ns(j.ditg_ns),
            ns(j.rfc3550_ns)
        ),
    );
    // RFC 3393 IPDV between consecutive sequence numbers.
    match &j.ipdv {
        Some(i) => line(
            out,
            "IPDV",
            format!(
                "mean |ipdv| {}, p99 |ipdv| {}, over {} pairs (RFC 3393)",
                duration(i.mean_abs_ns),
                duration(i.abs_p99_ns as f64),
                i.pairs
            ),
        ),
        None => line(out, "IPDV", "- (no two consecutive numbers received)"),
    }
    // RFC 5481 §4.2 PDV: each delay minus the smallest.
    line(
        out,
        "PDV",
        format!(
            "p50 {}, p95 {}, p99 {} (RFC 5481 §4.2)",
            ns_u(j.pdv_p50_ns),
            ns_u(j.pdv_p95_ns),
            ns_u(j.pdv_p99_ns)
        ),
    );
}

/// The header fields a flow's packets carried, and its kernel stamps.
fn marking_lines(out: &mut String, f: &FlowSummary) {
    let m = &f.marking;
    line(
        out,
        "DSCP/ECN",
        listing(&m.tos_seen, m.tos_unknown, |t| {
            format!(
                "{}/{}",
                wire::ds::Dscp::from_ds_byte(*t),
                wire::ds::Ecn::from_bits(*t)
            )
        }),
    );
    line(
        out,
        "TTL/hop limit",
        listing(&m.hop_limit_seen, m.hop_limit_unknown, u8::to_string),
    );
    line(
        out,
        "flow label",
        listing(&m.flow_label_seen, m.flow_label_unknown, |v| {
            format!("{v:#07x}")
        }),
    );
    line(
        out,
        "kernel stamps",
        format!("{} of {} packets", f.kernel_ts_packets, f.packets),
    );
}

/// `value ×count` pairs, most frequent first, at most 4, then the unknown count.
fn listing<K: Ord>(seen: &BTreeMap<K, u64>, unknown: u64, name: impl Fn(&K) -> String) -> String {
    const MAX: usize = 4;
    let mut pairs: Vec<(&K, &u64)> = seen.iter().collect();
    pairs.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
    let mut parts: Vec<String> = pairs
        .iter()
        .take(MAX)
        .map(|(k, n)| format!("{} ×{n}", name(k)))
        .collect();
    if pairs.len() > MAX {
        parts.push(format!("+{} more", pairs.len() - MAX));
    }
    if unknown > 0 {
        parts.push(format!("unknown ×{unknown}"));
    }
    match parts.is_empty() {
        true => "none".to_owned(),
        false => parts.join(", "),
    }
}

/// Says where a log that is not whole ends.
pub fn cut_sentence(end: &LogEnd) -> String {
    let mut s = format!(
        "Log cut short: it ends at byte {}{} after {} received and {} sent records",
        end.bytes_read,
        if end.compression.is_some() {
            " (of the uncompressed stream)"
        } else {
            ""
        },
        end.rx_records,
        end.tx_records
    );
    if let Some(t) = end.last_rx_ns {
        s += &format!(" (last arrival at {t} ns)");
    }
    if end.truncated_tail_bytes > 0 {
        s += &format!(
            ", then {} bytes of a partial record",
            end.truncated_tail_bytes
        );
    }
    if let Some(e) = &end.error {
        s += &format!(", then a damaged entry ({e})");
    }
    if !end.cut_flows.is_empty() {
        let flows: Vec<String> = end.cut_flows.iter().map(u32::to_string).collect();
        s += &format!(
            "; flow(s) {} have no end entry: their figures cover the records up to the cut, and packets after it are not counted as lost",
            flows.join(", ")
        );
    }
    s + "."
}
