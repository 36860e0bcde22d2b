//! `dualperf decode`: per-packet logs → summaries, interval series, every jitter. The
//! reading and the reports are `results::decode`'s; this opens the log and prints.

use std::io::{BufReader, Read};
use std::path::PathBuf;

use anyhow::{Context, Result};
use meter::log::LogReader;
use results::decode::{text, DecodeOptions, LogEnd};
use wire::time::Duration;

use crate::usage;

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
        let stdout = std::io::stdout();
        let mut out = std::io::BufWriter::with_capacity(1 << 16, stdout.lock());
        let (end, any) =
            results::decode::packet_csv(&mut reader, args.flow, &mut out, || stream_end.error())?;
        warn_if_cut(&end);
        if let (Some(id), false) = (args.flow, any) {
            usage!("flow {id} has no records in {}", args.log.display());
        }
        return Ok(());
    }
    let options = DecodeOptions {
        flow: args.flow,
        interval_ns: args.interval.map(Duration::as_nanos),
        compression: (compression == crate::logsink::Compression::Zstd).then(|| "zstd".into()),
    };
    let decoded = results::decode::decode(&mut reader, &options, || stream_end.error())
        .map_err(|e| anyhow::Error::new(crate::UsageError(format!("--interval: {e}"))))?;
    if let Some(id) = args.flow.filter(|id| !decoded.flows_seen.contains(id)) {
        usage!("flow {id} has no records in {}", args.log.display());
    }
    warn_if_cut(&decoded.end);
    let out = if args.json {
        serde_json::to_string_pretty(&decoded.into_doc(args.log.clone()))? + "\n"
    } else if args.csv {
        match &decoded.intervals {
            Some(iv) => meter::text::csv_intervals(iv),
            None => meter::text::csv_summary(&decoded.summary),
        }
    } else if args.itgdec {
        text::itgdec(&decoded)
    } else {
        text::text(&decoded)
    };
    crate::out::print(out)
}

fn warn_if_cut(end: &LogEnd) {
    if !end.complete {
        eprintln!("dualperf decode: warning: {}", text::cut_sentence(end));
    }
}
