//! `dualperf decode`: per-packet logs → summaries, interval series, every jitter.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write;
use std::io::{BufReader, Read};
use std::path::PathBuf;

use anyhow::{Context, Result};
use meter::log::{Entry, LogReader};
use meter::{IntervalSeries, SummaryMeter, TxMeter};
use results::decode::LogEnd;
use wire::time::Duration;

use crate::usage;

/// Decode a per-packet log written by `dualperf recv --log` or `dualperf send --log`.
///
/// The text output has the fields of D-ITG's ITGDec (delay, jitter, bit rate, packet
/// rate, drops, loss bursts) so results can be compared line by line, followed by the
/// other jitter definitions (RFC 3550, IPDV, PDV percentiles), duplicates and reordering.
#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:
  dualperf decode recv.dplog
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
    /// receive time. Empty windows are reported as missing values, not zeros.
    #[arg(long, value_parser = crate::args::duration, value_name = "DURATION")]
    interval: Option<Duration>,
    /// Only this flow.
    #[arg(long, value_name = "ID")]
    flow: Option<u32>,
    /// Print every record as CSV instead of summaries (as ITGDec -l), in file order:
    /// received packets (`rx`: send and receive stamps, header fields) and sent ones
    /// (`tx`: scheduled and actual send time).
    #[arg(long, conflicts_with_all = ["json", "csv", "interval"])]
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
    } else {
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
    }
    crate::out::print(out)
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
