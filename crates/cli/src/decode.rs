//! `dualperf decode`: per-packet logs → summaries, interval series, every jitter.

use std::collections::BTreeMap;
use std::fmt::Write;
use std::path::PathBuf;

use anyhow::{Context, Result};
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
    /// The log file.
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
    /// Print every record as CSV instead of summaries (as ITGDec -l): received packets
    /// (`rx`: send and receive stamps, header fields) and sent ones (`tx`: scheduled and
    /// actual send time).
    #[arg(long, conflicts_with_all = ["json", "csv", "interval"])]
    packets: bool,
}

pub(crate) fn run(args: DecodeArgs) -> Result<()> {
    let file = std::fs::File::open(&args.log)
        .with_context(|| format!("cannot open {}", args.log.display()))?;
    let mut contents = meter::log::read_log(std::io::BufReader::new(file))
        .with_context(|| format!("cannot decode {}", args.log.display()))?;
    if contents.truncated_tail_bytes > 0 {
        eprintln!(
            "dualperf decode: warning: the log ends in a partial record ({} bytes ignored); everything before it was read",
            contents.truncated_tail_bytes
        );
    }
    if let Some(id) = args.flow {
        contents.rx.retain(|r| r.flow == id);
        contents.tx.retain(|t| t.flow == id);
        contents.flows.retain(|f, _| *f == id);
        if contents.rx.is_empty() && contents.tx.is_empty() {
            usage!("flow {id} has no records in {}", args.log.display());
        }
    }
    if args.packets {
        return crate::out::print(packet_csv(&contents));
    }
    // Sent counts: from the flow info the writer recorded, else from the sender's own
    // records (a sender log of an interrupted run has no count in its info). A sender's
    // log holds arrivals only for round-trip flows (the echoes): for its one-way flows
    // there is nothing to lose, and counting their packets as sent would report them all
    // lost.
    let meta: serde_json::Value =
        serde_json::from_str(&contents.meta_json).unwrap_or(serde_json::Value::Null);
    let sender_log = meta["tool"] == "dualperf send";
    let info: BTreeMap<u32, serde_json::Value> = contents
        .flows
        .iter()
        .map(|(id, j)| {
            (
                *id,
                serde_json::from_str(j).unwrap_or(serde_json::Value::Null),
            )
        })
        .collect();
    let arrivals_expected =
        |id: u32| !sender_log || info.get(&id).is_some_and(|i| i["spec"]["meter"] == "rtt");
    let mut sent: BTreeMap<u32, u64> = info
        .iter()
        .filter(|(id, _)| arrivals_expected(**id))
        .filter_map(|(id, i)| Some((*id, i.get("sent_packets")?.as_u64()?)))
        .collect();
    for (id, n) in meter::sent_by_flow(&contents.tx) {
        if arrivals_expected(id) {
            sent.entry(id).or_insert(n);
        }
    }
    let summary = meter::summarize_all(&contents.rx, &sent);
    // RTP flows: the RFC 3550 §6.4.1 interarrival jitter against the RTP timestamps the
    // receiver logged, with the media clock it was announced (the live receiver's
    // `rtp`, the sender's `received_rtp`). Logs without RTP timestamps have none.
    let clocks: BTreeMap<u32, u32> = info
        .iter()
        .filter_map(|(id, i)| {
            let hz = i["announce"]["rtp_clock_hz"].as_u64()?;
            Some((*id, u32::try_from(hz).ok()?))
        })
        .collect();
    let received_rtp = meter::rtp_jitter_by_flow(&contents.rx, &clocks);
    let intervals = match args.interval {
        Some(w) => {
            let origin = contents.rx.iter().map(|r| r.rx_ns).min().unwrap_or(0);
            let series = meter::try_intervals(&contents.rx, w.as_nanos(), origin)
                .map_err(|e| anyhow::Error::new(crate::UsageError(format!("--interval: {e}"))))?;
            Some(series)
        }
        None => None,
    };
    let mut schedule: BTreeMap<u32, meter::ScheduleError> = BTreeMap::new();
    let mut sent_side: BTreeMap<u32, meter::SentSummary> = BTreeMap::new();
    let mut by_flow: BTreeMap<u32, Vec<meter::TxRecord>> = BTreeMap::new();
    for t in &contents.tx {
        by_flow.entry(t.flow).or_default().push(*t);
    }
    for (id, tx) in &by_flow {
        if let Some(e) = meter::schedule_error(tx) {
            schedule.insert(*id, e);
        }
        sent_side.insert(*id, meter::sent_summary(tx));
    }

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
        };
        out = serde_json::to_string_pretty(&doc)? + "\n";
    } else if args.csv {
        match &intervals {
            Some(iv) => write!(out, "{}", meter::text::csv_intervals(iv))?,
            None => write!(out, "{}", meter::text::csv_summary(&summary))?,
        }
    } else {
        if !contents.rx.is_empty() || contents.tx.is_empty() {
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
        if let Some(iv) = &intervals {
            writeln!(out)?;
            write!(out, "{}", meter::text::csv_intervals(iv))?;
        }
    }
    crate::out::print(out)
}

/// Every record of the log as CSV, received ones then sent ones; an unknown field is empty.
fn packet_csv(contents: &meter::log::LogContents) -> String {
    let opt = |v: Option<u64>| v.map_or(String::new(), |v| v.to_string());
    let mut out = String::from(
        "kind,flow,seq,size_bytes,tx_ns,rx_ns,scheduled_ns,actual_ns,tos,hop_limit,flow_label,kernel_ts\n",
    );
    for r in &contents.rx {
        let _ = writeln!(
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
        );
    }
    for t in &contents.tx {
        let _ = writeln!(
            out,
            "tx,{},{},{},,,{},{},,,,",
            t.flow, t.seq, t.size_bytes, t.scheduled_ns, t.actual_ns
        );
    }
    out
}
