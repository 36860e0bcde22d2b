//! `dualperf decode`: per-packet logs → summaries, interval series, every jitter.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write;
use std::io::{BufReader, Read};
use std::path::PathBuf;

use anyhow::{Context, Result};
use meter::log::{Entry, LogReader};
use meter::{FlowSummary, IntervalSeries, SummaryMeter, TxMeter};
use results::decode::LogEnd;
use wire::time::Duration;

use crate::{human, usage};

/// Decode a per-packet log written by `dualperf recv --log` or `dualperf send --log`.
///
/// The text output is a summary per flow (and their total when there are several):
/// counts, loss, rates, delay, every jitter definition (D-ITG, RFC 3550, IPDV, PDV),
/// duplicates, reordering and marking, each figure in the unit that suits it (`3.05 µs`,
/// `4.10 Mbit/s`, `1.46 MiB`). `--itgdec` prints D-ITG ITGDec's layout instead.
#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:
  dualperf decode recv.dplog
  dualperf decode recv.dplog --interval 1s
  dualperf decode recv.dplog --itgdec > dualperf.txt   # diff against ITGDec's output
  dualperf decode recv.dplog --flow 2 --json
  dualperf decode recv.dplog --interval 100ms --csv > series.csv
  dualperf decode send.dplog --packets > packets.csv")]
pub(crate) struct DecodeArgs {
    /// The log file (`-` reads standard input). Read in one pass in constant memory,
    /// whatever its size; a log cut short is read up to the cut, which is reported.
    log: PathBuf,
    /// Print JSON: metadata, per-flow and total summaries, and the interval series if asked.
    #[arg(long, conflicts_with = "csv")]
    json: bool,
    /// Print CSV: the summary table, or the interval series with --interval.
    #[arg(long)]
    csv: bool,
    /// Also compute a time series with windows of this length (100ms, 1s), keyed on
    /// receive time. Empty windows are reported as missing values, not zeros. As text: a
    /// table with times in seconds since the first window's start; with --csv or --json:
    /// every figure in ns, bit/s and bytes, times on the receiver's clock.
    #[arg(long, value_parser = crate::args::duration, value_name = "DURATION")]
    interval: Option<Duration>,
    /// Print the text report in the exact layout of D-ITG's ITGDec (`Average delay =
    /// 0.000003 s`, a TOTAL RESULTS block even for one flow, then dualperf's extras; with
    /// --interval, the series as CSV), so it can be diffed against ITGDec's output line
    /// by line.
    #[arg(long, conflicts_with_all = ["json", "csv"])]
    itgdec: bool,
    /// Only this flow.
    #[arg(long, value_name = "ID")]
    flow: Option<u32>,
    /// Print every record as CSV instead of summaries (as ITGDec -l), in file order:
    /// received packets (`rx`: send and receive stamps, header fields) and sent ones
    /// (`tx`: scheduled and actual send time).
    #[arg(long, conflicts_with_all = ["json", "csv", "interval", "itgdec"])]
    packets: bool,
}

pub(crate) fn run(args: DecodeArgs) -> Result<()> {
    let input: Box<dyn Read> = if args.log.as_os_str() == "-" {
        Box::new(std::io::stdin().lock())
    } else {
        Box::new(std::fs::File::open(&args.log).map_err(|e| {
            crate::UsageError(format!("cannot open the log {}: {e}", args.log.display()))
        })?)
    };
    let (input, compression, stream_end) = crate::logsink::open_log(input)
        .with_context(|| format!("cannot read {}", args.log.display()))?;
    // Not a log at all (a wrong file) is for the user to fix; a log that ends early is
    // reported where it ends, with everything before it.
    let mut reader = LogReader::open(BufReader::with_capacity(1 << 20, input))
        .map_err(|e| crate::UsageError(format!("cannot decode {}: {e:#}", args.log.display())))?;
    if args.packets {
        return packet_csv(&mut reader, args.flow, &args.log, &stream_end);
    }
    let meta: serde_json::Value =
        serde_json::from_str(reader.meta_json()).unwrap_or(serde_json::Value::Null);
    let version = reader.header().version;
    let wanted = |id: u32| args.flow.is_none_or(|f| f == id);

    // One pass, in constant memory: every record goes into the streaming meters as it
    // is read (the live receiver's and sender's meters, so the figures are theirs).
    let mut rx = SummaryMeter::new();
    if let Some(w) = args.interval {
        let series = IntervalSeries::new(w.as_nanos())
            .map_err(|e| anyhow::Error::new(crate::UsageError(format!("--interval: {e}"))))?;
        rx = rx.with_intervals(series);
    }
    let mut tx: BTreeMap<u32, TxMeter> = BTreeMap::new();
    let mut info: BTreeMap<u32, serde_json::Value> = BTreeMap::new();
    let mut ended: BTreeSet<u32> = BTreeSet::new();
    let mut end = LogEnd {
        format_version: version,
        compression: (compression == crate::logsink::Compression::Zstd).then(|| "zstd".into()),
        ..LogEnd::default()
    };
    let mut last_flow = None;
    loop {
        let entry = match reader.next_entry() {
            Ok(Some(entry)) => entry,
            Ok(None) => break,
            Err(e) => {
                end.error = Some(format!("{e}"));
                break;
            }
        };
        match entry {
            Entry::FlowInfo { flow, json } if wanted(flow) => {
                let v = serde_json::from_str(&json).unwrap_or(serde_json::Value::Null);
                // RTP flows: the RFC 3550 §6.4.1 jitter against the RTP timestamps the
                // receiver logged, with the media clock it was announced.
                if let Some(hz) = v["announce"]["rtp_clock_hz"].as_u64() {
                    rx.set_rtp_clock(flow, u32::try_from(hz).unwrap_or(u32::MAX));
                }
                info.insert(flow, v);
            }
            Entry::FlowEnd { flow, json } if wanted(flow) => {
                let v: serde_json::Value =
                    serde_json::from_str(&json).unwrap_or(serde_json::Value::Null);
                let into = info.entry(flow).or_insert_with(|| serde_json::json!({}));
                if let (Some(into), Some(from)) = (into.as_object_mut(), v.as_object()) {
                    into.extend(from.iter().map(|(k, v)| (k.clone(), v.clone())));
                }
                ended.insert(flow);
            }
            Entry::Rx(r) if wanted(r.flow) => {
                rx.handle_record(&r);
                end.rx_records += 1;
                end.last_rx_ns = end.last_rx_ns.max(Some(r.rx_ns));
                last_flow = Some(r.flow);
            }
            Entry::Tx(t) if wanted(t.flow) => {
                tx.entry(t.flow).or_default().handle_record(&t);
                end.tx_records += 1;
                last_flow = Some(t.flow);
            }
            _ => {}
        }
    }
    end.bytes_read = reader.offset();
    end.truncated_tail_bytes = reader.truncated_tail_bytes();
    // A compressed stream that ended early (damaged or cut) is a damaged end too.
    end.error = end.error.take().or_else(|| stream_end.error());
    let cut_short = end.truncated_tail_bytes > 0 || end.error.is_some();
    // Which flows the end of the log cut off: in version 3 every flow without its end
    // entry; before, flows were written whole, so only the last one, if the file ends
    // in a partial or damaged entry.
    end.cut_flows = if version >= 3 {
        let seen: BTreeSet<u32> = info
            .keys()
            .chain(tx.keys())
            .copied()
            .chain(rx.flow_ids())
            .collect();
        seen.difference(&ended).copied().collect()
    } else {
        last_flow.filter(|_| cut_short).into_iter().collect()
    };
    end.complete = !cut_short && end.cut_flows.is_empty();
    if args
        .flow
        .is_some_and(|id| rx.flow_ids().all(|f| f != id) && !tx.contains_key(&id))
    {
        usage!(
            "flow {} has no records in {}",
            args.flow.unwrap_or_default(),
            args.log.display()
        );
    }
    warn_if_cut(&end);

    // Sent counts: from the flow's end entry (or, before version 3, its info), else from
    // the sender's own records; none for a flow the log cut short, whose tail is unknown
    // rather than lost. A sender's log holds arrivals only for round-trip flows (the
    // echoes): for its one-way flows there is nothing to lose, and counting their
    // packets as sent would report them all lost.
    let sender_log = meta["tool"] == "dualperf send";
    let arrivals_expected =
        |id: u32| !sender_log || info.get(&id).is_some_and(|i| i["spec"]["meter"] == "rtt");
    let mut sent: BTreeMap<u32, u64> = info
        .iter()
        .filter(|(id, _)| arrivals_expected(**id) && !end.cut_flows.contains(id))
        .filter_map(|(id, i)| Some((*id, i.get("sent_packets")?.as_u64()?)))
        .collect();
    for (id, t) in &tx {
        if arrivals_expected(*id) && !end.cut_flows.contains(id) {
            sent.entry(*id).or_insert(t.packets());
        }
    }
    let summary = rx.summary(&sent);
    let received_rtp = rx.rtp();
    let intervals = rx
        .intervals()
        .transpose()
        .map_err(|e| anyhow::Error::new(crate::UsageError(format!("--interval: {e}"))))?;
    let schedule: BTreeMap<u32, meter::ScheduleError> = tx
        .iter()
        .filter_map(|(id, t)| Some((*id, t.schedule_error()?)))
        .collect();
    let sent_side: BTreeMap<u32, meter::SentSummary> =
        tx.iter().map(|(id, t)| (*id, t.sent_summary())).collect();

    let mut out = String::new();
    if args.json {
        let doc = results::decode::DecodeDoc {
            format_version: results::decode::DECODE_FORMAT_VERSION,
            log: args.log.clone(),
            meta,
            flow_info: info,
            summary,
            sent: sent_side,
            schedule_error: schedule,
            intervals,
            received_rtp,
            log_end: Some(end),
        };
        out = serde_json::to_string_pretty(&doc)? + "\n";
    } else if args.csv {
        match &intervals {
            Some(iv) => write!(out, "{}", meter::text::csv_intervals(iv))?,
            None => write!(out, "{}", meter::text::csv_summary(&summary))?,
        }
    } else if args.itgdec {
        if end.rx_records > 0 || end.tx_records == 0 {
            write!(out, "{}", meter::text::itgdec_text(&summary))?;
        } else {
            writeln!(
                out,
                "No received packets in this log (a sender's log of one-way flows: the receiver's log has the arrivals)."
            )?;
        }
        let na = || "-".to_owned();
        for (id, s) in &sent_side {
            writeln!(
                out,
                "Flow {id} sent: {} packets, {} bytes, {} pkt/s, {} kbit/s (first to last send)",
                s.packets,
                s.bytes,
                s.rate_pps.map_or_else(na, |r| format!("{r:.3}")),
                s.bitrate_bps.map_or_else(na, |b| format!("{:.3}", b / 1e3)),
            )?;
        }
        for (id, j) in &received_rtp {
            writeln!(
                out,
                "Flow {id} RTP jitter (RFC 3550, against RTP timestamps): last {:.3} µs, mean {:.3} µs, max {:.3} µs over {} packets",
                j.last_ns / 1e3,
                j.mean_ns / 1e3,
                j.max_ns / 1e3,
                j.packets
            )?;
        }
        for (id, e) in &schedule {
            writeln!(
                out,
                "Flow {id} send schedule error: mean {:.3} µs, p99 {:.3} µs, max {:.3} µs",
                e.mean_ns / 1e3,
                e.p99_ns as f64 / 1e3,
                e.max_ns as f64 / 1e3
            )?;
        }
        if !end.complete {
            writeln!(out, "{}", cut_sentence(&end))?;
        }
        if let Some(iv) = &intervals {
            writeln!(out)?;
            write!(out, "{}", meter::text::csv_intervals(iv))?;
        }
    } else {
        out = human_text(&Decoded {
            summary: &summary,
            info: &info,
            sent: &sent_side,
            schedule: &schedule,
            rtp: &received_rtp,
            end: &end,
            sender_log,
        });
        if let (Some(iv), Some(w)) = (&intervals, args.interval) {
            let _ = writeln!(
                out,
                "\nreceived per {} window of receive time, from the first window's start",
                human::duration(w.as_nanos() as f64)
            );
            out.push_str(&human::interval_table(iv, w.as_nanos()));
        }
    }
    crate::out::print(out)
}

/// What the text report is made of.
struct Decoded<'a> {
    summary: &'a meter::Summary,
    info: &'a BTreeMap<u32, serde_json::Value>,
    sent: &'a BTreeMap<u32, meter::SentSummary>,
    schedule: &'a BTreeMap<u32, meter::ScheduleError>,
    rtp: &'a BTreeMap<u32, meter::RtpJitterSummary>,
    end: &'a LogEnd,
    /// A sender's log: its arrivals are the echoes of round-trip flows.
    sender_log: bool,
}

/// Width of the label column of the text report.
const LABEL: usize = 16;

/// One `  label          value` line of a flow's block.
fn line(out: &mut String, label: &str, value: impl std::fmt::Display) {
    let _ = writeln!(out, "  {label:<LABEL$}{value}");
}

/// The text report: a block per flow (what arrived, then what was sent), the total of
/// several flows, then where a log cut short ends.
fn human_text(d: &Decoded<'_>) -> String {
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
        let info = d.info.get(id);
        let _ = writeln!(out, "flow {id}{}", describe(info));
        // A sender's log holds the echoes of its round-trip flows: their delay is the
        // round trip (the receiver's hold time not taken out).
        let rtt = d.sender_log && field(info, "meter") == Some("rtt");
        if let Some(f) = received.get(id) {
            flow_lines(&mut out, f, if rtt { "round trip" } else { "delay" });
        }
        if let Some(j) = d.rtp.get(id) {
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
        if let Some(e) = d.schedule.get(id) {
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
        out.push_str(&cut_sentence(d.end));
        out.push('\n');
    }
    out
}

/// A field of a flow's info: the receiver's `announce`, or the sender's `spec`.
fn field<'a>(info: Option<&'a serde_json::Value>, name: &str) -> Option<&'a str> {
    let info = info?;
    info["announce"][name]
        .as_str()
        .or_else(|| info["spec"][name].as_str())
}

/// `: udp, meter owd, "flow 0", from 127.0.0.1 port 42483`: what the log says of a flow.
fn describe(info: Option<&serde_json::Value>) -> String {
    let mut parts = Vec::new();
    parts.extend(field(info, "protocol").map(str::to_owned));
    parts.extend(field(info, "meter").map(|m| format!("meter {m}")));
    parts.extend(field(info, "label").map(|l| format!("{l:?}")));
    if let Some(peer) = info.and_then(|i| i["peer"].as_str()) {
        let port = info.and_then(|i| i["announce"]["src_port"].as_u64());
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
fn cut_sentence(end: &LogEnd) -> String {
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

fn warn_if_cut(end: &LogEnd) {
    if !end.complete {
        eprintln!("dualperf decode: warning: {}", cut_sentence(end));
    }
}

/// Every record of the log as CSV, in file order, streamed; an unknown field is empty.
fn packet_csv(
    reader: &mut LogReader<BufReader<Box<dyn Read>>>,
    flow: Option<u32>,
    path: &std::path::Path,
    stream_end: &crate::logsink::StreamEnd,
) -> Result<()> {
    use std::io::Write as _;
    let opt = |v: Option<u64>| v.map_or(String::new(), |v| v.to_string());
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::with_capacity(1 << 16, stdout.lock());
    writeln!(
        out,
        "kind,flow,seq,size_bytes,tx_ns,rx_ns,scheduled_ns,actual_ns,tos,hop_limit,flow_label,kernel_ts"
    )?;
    let mut any = false;
    let mut end = LogEnd::default();
    loop {
        let entry = match reader.next_entry() {
            Ok(Some(e)) => e,
            Ok(None) => break,
            Err(e) => {
                end.error = Some(e.to_string());
                break;
            }
        };
        match entry {
            Entry::Rx(r) if flow.is_none_or(|f| f == r.flow) => {
                any = true;
                end.rx_records += 1;
                writeln!(
                    out,
                    "rx,{},{},{},{},{},,,{},{},{},{}",
                    r.flow,
                    r.seq,
                    r.size_bytes,
                    r.tx_ns,
                    r.rx_ns,
                    opt(r.tos.map(u64::from)),
                    opt(r.hop_limit.map(u64::from)),
                    opt(r.flow_label.map(u64::from)),
                    u8::from(r.kernel_ts),
                )?;
            }
            Entry::Tx(t) if flow.is_none_or(|f| f == t.flow) => {
                any = true;
                end.tx_records += 1;
                writeln!(
                    out,
                    "tx,{},{},{},,,{},{},,,,",
                    t.flow, t.seq, t.size_bytes, t.scheduled_ns, t.actual_ns
                )?;
            }
            _ => {}
        }
    }
    out.flush()?;
    end.bytes_read = reader.offset();
    end.truncated_tail_bytes = reader.truncated_tail_bytes();
    end.error = end.error.take().or_else(|| stream_end.error());
    end.complete = end.truncated_tail_bytes == 0 && end.error.is_none();
    warn_if_cut(&end);
    if let (Some(id), false) = (flow, any) {
        usage!("flow {id} has no records in {}", path.display());
    }
    Ok(())
}
