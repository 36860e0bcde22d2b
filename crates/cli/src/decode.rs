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
  dualperf decode recv.dplog --interval 100ms --csv > series.csv")]
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
    // Sent counts: from the flow info the writer recorded, else from the sender's own
    // records (a sender log of an interrupted run has no count in its info).
    let mut sent: BTreeMap<u32, u64> = contents
        .flows
        .iter()
        .filter_map(|(id, json)| {
            let info: serde_json::Value = serde_json::from_str(json).ok()?;
            Some((*id, info.get("sent_packets")?.as_u64()?))
        })
        .collect();
    for (id, n) in meter::sent_by_flow(&contents.tx) {
        sent.entry(id).or_insert(n);
    }
    let summary = meter::summarize_all(&contents.rx, &sent);
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
    let mut by_flow: BTreeMap<u32, Vec<meter::TxRecord>> = BTreeMap::new();
    for t in &contents.tx {
        by_flow.entry(t.flow).or_default().push(*t);
    }
    for (id, tx) in &by_flow {
        if let Some(e) = meter::schedule_error(tx) {
            schedule.insert(*id, e);
        }
    }

    let mut out = String::new();
    if args.json {
        let meta: serde_json::Value =
            serde_json::from_str(&contents.meta_json).unwrap_or(serde_json::Value::Null);
        let flows: BTreeMap<u32, serde_json::Value> = contents
            .flows
            .iter()
            .map(|(id, j)| {
                (
                    *id,
                    serde_json::from_str(j).unwrap_or(serde_json::Value::Null),
                )
            })
            .collect();
        let doc = serde_json::json!({
            "format_version": 1,
            "log": args.log,
            "meta": meta,
            "flow_info": flows,
            "summary": summary,
            "schedule_error": schedule,
            "intervals": intervals,
        });
        out = serde_json::to_string_pretty(&doc)? + "\n";
    } else if args.csv {
        match &intervals {
            Some(iv) => write!(out, "{}", meter::text::csv_intervals(iv))?,
            None => write!(out, "{}", meter::text::csv_summary(&summary))?,
        }
    } else {
        write!(out, "{}", meter::text::itgdec_text(&summary))?;
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
