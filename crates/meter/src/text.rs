//! Text renderers: an ITGDec-compatible report and CSV tables. Pure
//! functions from summaries to `String`.
//!
//! [`itgdec_text`] prints the fields, labels, units and number formats of
//! D-ITG 2.8.1 ITGDec's summary (`src/ITGDec/ITGDecod.cpp`, the `elab_type ==
//! 1` block: `%-25s= %13.6lf s` and friends) so a D-ITG user can read both
//! side by side. Values are ours, which differ from ITGDec's on purpose in
//! three places: "Packets dropped" is duplicate-aware and counts losses after
//! the last received packet when the sent count is known, with percent
//! `lost / expected` (ITGDec's own figures follow in the extras as "Dropped
//! (D-ITG rule)"); timestamps never wrap at midnight; and a value ITGDec could
//! never have (a delay of a flow with no packet) prints as `n/a`. Where ITGDec
//! prints 0 for an undefined value (jitter of one packet, bit rate over zero
//! time, burst size without loss) we print 0 too. After ITGDec's fields each
//! block lists our extra metrics, labelled so they cannot be mistaken for
//! ITGDec's.

use std::collections::BTreeMap;
use std::fmt::{Display, Write as _};

use crate::interval::Interval;
use crate::summary::{FlowSummary, Summary};

const DASHES: &str = "----------------------------------------------------------";
const UNDERSCORES: &str = "__________________________________________________________";
/// Most values listed per marking histogram in the text report.
const MAX_LISTED_VALUES: usize = 8;

/// Endpoints printed as ITGDec's "From" / "To" lines.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FlowEndpoints {
    /// Sender, e.g. `[2001:db8::1]:40000`.
    pub from: String,
    /// Receiver.
    pub to: String,
}

/// Optional extras for [`itgdec_text_with`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ItgdecOptions {
    /// "From"/"To" lines per flow id; flows without an entry omit them.
    pub endpoints: BTreeMap<u32, FlowEndpoints>,
    /// ITGDec's "Error lines" in the total block: log entries the caller
    /// could not use (e.g. a truncated tail).
    pub error_lines: u64,
}

/// ITGDec-style report of `summary` without endpoints and with 0 error lines.
pub fn itgdec_text(summary: &Summary) -> String {
    itgdec_text_with(summary, &ItgdecOptions::default())
}

/// ITGDec-style report of `summary`: one block per flow, then TOTAL RESULTS.
pub fn itgdec_text_with(summary: &Summary, options: &ItgdecOptions) -> String {
    let mut out = String::new();
    for flow in &summary.flows {
        out.push_str(DASHES);
        out.push('\n');
        let _ = writeln!(out, "Flow number: {}", flow.flow);
        if let Some(ends) = options.endpoints.get(&flow.flow) {
            let _ = writeln!(out, "From {}", ends.from);
            let _ = writeln!(out, "To    {}", ends.to);
        }
        out.push_str(DASHES);
        out.push('\n');
        itgdec_fields(&mut out, flow);
        extras(&mut out, flow);
        out.push_str(DASHES);
        out.push('\n');
    }
    let _ = write!(
        out,
        "\n{UNDERSCORES}\n****************  TOTAL RESULTS   ******************\n{UNDERSCORES}\n"
    );
    field(&mut out, "Number of flows", summary.flows.len());
    itgdec_fields(&mut out, &summary.total);
    field(&mut out, "Error lines", options.error_lines);
    extras(&mut out, &summary.total);
    out.push_str(DASHES);
    out.push('\n');
    out
}

/// ITGDec's fields from "Total time" to "Average loss-burst size".
fn itgdec_fields(out: &mut String, f: &FlowSummary) {
    let delay = f.delay.as_ref();
    // ITGDec prints 0 s for a single packet; so do we, for line-by-line comparison.
    field_s(
        out,
        "Total time",
        Some(f.duration_ns.unwrap_or(0) as f64),
        6,
    );
    field(out, "Total packets", f.packets);
    field_s(out, "Minimum delay", delay.map(|d| d.min_ns as f64), 6);
    field_s(out, "Maximum delay", delay.map(|d| d.max_ns as f64), 6);
    field_s(out, "Average delay", delay.map(|d| d.mean_ns), 6);
    field_s(
        out,
        "Average jitter",
        Some(f.jitter.ditg_ns.unwrap_or(0.0)),
        6,
    );
    field_s(
        out,
        "Delay standard deviation",
        delay.map(|d| d.stddev_ns),
        6,
    );
    field(out, "Bytes received", f.bytes);
    let kbps = f.bitrate_bps.unwrap_or(0.0) / 1000.0;
    field(out, "Average bitrate", format_args!("{kbps:13.6} Kbit/s"));
    let pps = f.rate_pps.unwrap_or(0.0);
    field(out, "Average packet rate", format_args!("{pps:13.6} pkt/s"));
    let pct = f.loss.loss_pct.unwrap_or(0.0);
    field(
        out,
        "Packets dropped",
        format_args!("{:13} ({pct:3.2} %)", f.loss.lost),
    );
    let burst = f.loss.mean_burst_len.unwrap_or(0.0);
    field(
        out,
        "Average loss-burst size",
        format_args!("{burst:13.6} pkt"),
    );
}

/// Our metrics that ITGDec does not print.
fn extras(out: &mut String, f: &FlowSummary) {
    let loss = &f.loss;
    let jitter = &f.jitter;
    let ipdv = jitter.ipdv.as_ref();
    out.push_str("-- dualperf extras (not in ITGDec) --\n");
    field(out, "Packets sent", or_na(loss.sent));
    field(out, "Packets duplicated", loss.duplicates);
    field(out, "Packets reordered", loss.reordered);
    field(out, "Loss bursts", loss.bursts);
    field(
        out,
        "Maximum loss-burst size",
        format_args!("{:13} pkt", loss.max_burst_len),
    );
    let ditg_pct = loss.ditg.loss_pct;
    field(
        out,
        "Dropped (D-ITG rule)",
        format_args!("{:13} ({ditg_pct:3.2} %)", loss.ditg.dropped),
    );
    field_s(out, "Jitter RFC 3550", jitter.rfc3550_ns, 9);
    field(out, "IPDV pairs", ipdv.map_or(0, |i| i.pairs));
    field_s(out, "IPDV mean |ipdv|", ipdv.map(|i| i.mean_abs_ns), 9);
    field_s(out, "IPDV p99 |ipdv|", ipdv.map(|i| i.abs_p99_ns as f64), 9);
    field_s(out, "PDV p50", jitter.pdv_p50_ns.map(|v| v as f64), 9);
    field_s(out, "PDV p95", jitter.pdv_p95_ns.map(|v| v as f64), 9);
    field_s(out, "PDV p99", jitter.pdv_p99_ns.map(|v| v as f64), 9);
    field(out, "Kernel timestamps", f.kernel_ts_packets);
    let m = &f.marking;
    field(
        out,
        "DS field (TOS) seen",
        listing(&m.tos_seen, m.tos_unknown, |v| format!("{v:#04x}")),
    );
    field(
        out,
        "Hop limit seen",
        listing(&m.hop_limit_seen, m.hop_limit_unknown, u8::to_string),
    );
    field(
        out,
        "Flow label seen",
        listing(&m.flow_label_seen, m.flow_label_unknown, |v| {
            format!("{v:#07x}")
        }),
    );
}

/// `label<pad to 25>= value`, ITGDec's line shape; integers take ITGDec's
/// `%13` width.
fn field(out: &mut String, label: &str, value: impl Display) {
    let _ = writeln!(out, "{label:<25}= {value:>13}");
}

/// A nanosecond quantity printed in seconds with `decimals` places (ITGDec
/// uses 6), or `n/a`.
fn field_s(out: &mut String, label: &str, ns: Option<f64>, decimals: usize) {
    match ns {
        Some(ns) => field(out, label, format_args!("{:13.decimals$} s", ns / 1e9)),
        None => field(out, label, "n/a"),
    }
}

fn or_na(value: Option<impl Display>) -> String {
    value.map_or_else(|| "n/a".to_owned(), |v| v.to_string())
}

/// `value×count` pairs, most frequent first (ties by value), at most
/// [`MAX_LISTED_VALUES`], then the unknown count.
fn listing<K: Copy + Ord>(
    seen: &BTreeMap<K, u64>,
    unknown: u64,
    name: impl Fn(&K) -> String,
) -> String {
    let mut pairs: Vec<(&K, &u64)> = seen.iter().collect();
    pairs.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
    let mut parts: Vec<String> = pairs
        .iter()
        .take(MAX_LISTED_VALUES)
        .map(|(k, n)| format!("{}×{n}", name(k)))
        .collect();
    if pairs.len() > MAX_LISTED_VALUES {
        parts.push(format!("+{} more", pairs.len() - MAX_LISTED_VALUES));
    }
    if unknown > 0 {
        parts.push(format!("unknown×{unknown}"));
    }
    if parts.is_empty() {
        return "none".to_owned();
    }
    parts.join(", ")
}

/// A CSV column: header name and cell renderer.
type Column<T> = (&'static str, fn(&T) -> String);

const SUMMARY_COLUMNS: &[Column<FlowSummary>] = &[
    ("packets", |f| f.packets.to_string()),
    ("unique_packets", |f| f.unique_packets.to_string()),
    ("bytes", |f| f.bytes.to_string()),
    ("first_rx_ns", |f| cell(f.first_rx_ns)),
    ("last_rx_ns", |f| cell(f.last_rx_ns)),
    ("duration_ns", |f| {
        f.duration_ns.map_or(String::new(), |d| d.to_string())
    }),
    ("bitrate_bps", |f| cell(f.bitrate_bps)),
    ("rate_pps", |f| cell(f.rate_pps)),
    ("delay_min_ns", |f| cell(f.delay.map(|d| d.min_ns))),
    ("delay_mean_ns", |f| cell(f.delay.map(|d| d.mean_ns))),
    ("delay_max_ns", |f| cell(f.delay.map(|d| d.max_ns))),
    ("delay_stddev_ns", |f| cell(f.delay.map(|d| d.stddev_ns))),
    ("jitter_ditg_ns", |f| cell(f.jitter.ditg_ns)),
    ("jitter_rfc3550_ns", |f| cell(f.jitter.rfc3550_ns)),
    ("ipdv_pairs", |f| cell(f.jitter.ipdv.map(|i| i.pairs))),
    ("ipdv_mean_ns", |f| cell(f.jitter.ipdv.map(|i| i.mean_ns))),
    ("ipdv_mean_abs_ns", |f| {
        cell(f.jitter.ipdv.map(|i| i.mean_abs_ns))
    }),
    ("ipdv_min_ns", |f| cell(f.jitter.ipdv.map(|i| i.min_ns))),
    ("ipdv_max_ns", |f| cell(f.jitter.ipdv.map(|i| i.max_ns))),
    ("ipdv_abs_p50_ns", |f| {
        cell(f.jitter.ipdv.map(|i| i.abs_p50_ns))
    }),
    ("ipdv_abs_p95_ns", |f| {
        cell(f.jitter.ipdv.map(|i| i.abs_p95_ns))
    }),
    ("ipdv_abs_p99_ns", |f| {
        cell(f.jitter.ipdv.map(|i| i.abs_p99_ns))
    }),
    ("pdv_p50_ns", |f| cell(f.jitter.pdv_p50_ns)),
    ("pdv_p95_ns", |f| cell(f.jitter.pdv_p95_ns)),
    ("pdv_p99_ns", |f| cell(f.jitter.pdv_p99_ns)),
    ("sent", |f| cell(f.loss.sent)),
    ("expected", |f| f.loss.expected.to_string()),
    ("lost", |f| f.loss.lost.to_string()),
    ("loss_pct", |f| cell(f.loss.loss_pct)),
    ("bursts", |f| f.loss.bursts.to_string()),
    ("mean_burst_len", |f| cell(f.loss.mean_burst_len)),
    ("max_burst_len", |f| f.loss.max_burst_len.to_string()),
    ("duplicates", |f| f.loss.duplicates.to_string()),
    ("reordered", |f| f.loss.reordered.to_string()),
    ("max_reorder_extent", |f| cell(f.loss.max_reorder_extent)),
    ("beyond_expected", |f| f.loss.beyond_expected.to_string()),
    ("ditg_dropped", |f| f.loss.ditg.dropped.to_string()),
    ("ditg_loss_pct", |f| f.loss.ditg.loss_pct.to_string()),
    ("ditg_loss_events", |f| f.loss.ditg.loss_events.to_string()),
    ("kernel_ts_packets", |f| f.kernel_ts_packets.to_string()),
    ("tos_seen", |f| counts(&f.marking.tos_seen)),
    ("hop_limit_seen", |f| counts(&f.marking.hop_limit_seen)),
    ("flow_label_seen", |f| counts(&f.marking.flow_label_seen)),
];

const INTERVAL_COLUMNS: &[Column<Interval>] = &[
    ("start_ns", |i| i.start_ns.to_string()),
    ("end_ns", |i| i.end_ns.to_string()),
    ("packets", |i| i.packets.to_string()),
    ("bytes", |i| i.bytes.to_string()),
    ("bitrate_bps", |i| cell(i.bitrate_bps)),
    ("rate_pps", |i| cell(i.rate_pps)),
    ("delay_mean_ns", |i| cell(i.delay_mean_ns)),
    ("delay_min_ns", |i| cell(i.delay_min_ns)),
    ("delay_max_ns", |i| cell(i.delay_max_ns)),
    ("jitter_ditg_ns", |i| cell(i.jitter_ditg_ns)),
    ("jitter_rfc3550_ns", |i| cell(i.jitter_rfc3550_ns)),
    ("lost", |i| cell(i.lost)),
];

/// CSV of every flow summary and a final `total` row: header line, then one
/// line per flow. `None` is an empty cell; floats use Rust's shortest
/// round-trip form; marking histograms are `value:count` joined by `;`.
pub fn csv_summary(summary: &Summary) -> String {
    let mut out = String::from("flow");
    for (name, _) in SUMMARY_COLUMNS {
        out.push(',');
        out.push_str(name);
    }
    out.push('\n');
    let rows = summary
        .flows
        .iter()
        .map(|f| (f.flow.to_string(), f))
        .chain([("total".to_owned(), &summary.total)]);
    for (id, f) in rows {
        out.push_str(&id);
        for (_, render) in SUMMARY_COLUMNS {
            out.push(',');
            out.push_str(&render(f));
        }
        out.push('\n');
    }
    out
}

/// CSV of an interval series, one line per window; `None` is an empty cell.
pub fn csv_intervals(intervals: &[Interval]) -> String {
    let names: Vec<&str> = INTERVAL_COLUMNS.iter().map(|(name, _)| *name).collect();
    let mut out = names.join(",");
    out.push('\n');
    for interval in intervals {
        let cells: Vec<String> = INTERVAL_COLUMNS
            .iter()
            .map(|(_, render)| render(interval))
            .collect();
        out.push_str(&cells.join(","));
        out.push('\n');
    }
    out
}

/// An optional CSV cell: empty for `None`.
fn cell(value: Option<impl Display>) -> String {
    value.map_or_else(String::new, |v| v.to_string())
}

/// `value:count;value:count` for a histogram.
fn counts<K: Display>(seen: &BTreeMap<K, u64>) -> String {
    let parts: Vec<String> = seen.iter().map(|(k, n)| format!("{k}:{n}")).collect();
    parts.join(";")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::interval::intervals;
    use crate::record::RxRecord;
    use crate::summary::summarize_all;

    const BASE_NS: u64 = 1_700_000_000_000_000_000;

    fn rx(flow: u32, seq: u64, rx_us: u64, delay_us: u64) -> RxRecord {
        RxRecord {
            flow,
            seq,
            size_bytes: 1000,
            tx_ns: BASE_NS + (rx_us - delay_us) * 1_000,
            rx_ns: BASE_NS + rx_us * 1_000,
            tos: Some(0xb8),
            hop_limit: Some(64),
            flow_label: None,
            kernel_ts: true,
            rtp_ts: None,
        }
    }

    /// Flow 1: seqs 0,1,3 of 4 sent, delays 100, 300, 200 µs, arrivals at
    /// 0, 500, 1000 ms. Flow 2 sent 2 packets, none arrived.
    fn summary() -> Summary {
        let records = [
            rx(1, 0, 100, 100),
            rx(1, 1, 500_000, 300),
            rx(1, 3, 1_000_000, 200),
        ];
        summarize_all(&records, &BTreeMap::from([(1, 4), (2, 2)]))
    }

    #[test]
    fn itgdec_report_has_itgdec_fields_and_labelled_extras() {
        let options = ItgdecOptions {
            endpoints: BTreeMap::from([(
                1,
                FlowEndpoints {
                    from: "[2001:db8::1]:40000".to_owned(),
                    to: "[2001:db8::2]:9000".to_owned(),
                },
            )]),
            error_lines: 3,
        };
        let text = itgdec_text_with(&summary(), &options);
        // Flow 1: 0.9999 s from first to last arrival; 3000 B → 24000 bit /
        // 0.9999 s; jitter (200 + 100)/2 µs; mean delay 200 µs; population
        // σ = sqrt((100² + 100² + 0)/3) µs = 81.65 µs; seq 2 of 4 lost (25 %);
        // RFC 3550: 200/16 = 12.5 µs, then 12.5 + (100 − 12.5)/16 = 17.96875 µs.
        let flow1 = "\
----------------------------------------------------------
Flow number: 1
From [2001:db8::1]:40000
To    [2001:db8::2]:9000
----------------------------------------------------------
Total time               =      0.999900 s
Total packets            =             3
Minimum delay            =      0.000100 s
Maximum delay            =      0.000300 s
Average delay            =      0.000200 s
Average jitter           =      0.000150 s
Delay standard deviation =      0.000082 s
Bytes received           =          3000
Average bitrate          =     24.002400 Kbit/s
Average packet rate      =      3.000300 pkt/s
Packets dropped          =             1 (25.00 %)
Average loss-burst size  =      1.000000 pkt
-- dualperf extras (not in ITGDec) --
Packets sent             =             4
Packets duplicated       =             0
Packets reordered        =             0
Loss bursts              =             1
Maximum loss-burst size  =             1 pkt
Dropped (D-ITG rule)     =             1 (25.00 %)
Jitter RFC 3550          =   0.000017969 s
IPDV pairs               =             1
IPDV mean |ipdv|         =   0.000200000 s
IPDV p99 |ipdv|          =   0.000200000 s
PDV p50                  =   0.000100000 s
PDV p95                  =   0.000200000 s
PDV p99                  =   0.000200000 s
Kernel timestamps        =             3
DS field (TOS) seen      =        0xb8×3
Hop limit seen           =          64×3
Flow label seen          =     unknown×3
----------------------------------------------------------
";
        assert!(text.starts_with(flow1), "{text}");
        // Flow 2 never arrived: no delay, ITGDec's zeros elsewhere.
        assert!(text.contains(
            "Flow number: 2\n\
             ----------------------------------------------------------\n\
             Total time               =      0.000000 s\n\
             Total packets            =             0\n\
             Minimum delay            =           n/a\n"
        ));
        assert!(text.contains("Packets dropped          =             2 (100.00 %)\n"));
        let total = "
__________________________________________________________
****************  TOTAL RESULTS   ******************
__________________________________________________________
Number of flows          =             2
Total time               =      0.999900 s
Total packets            =             3
";
        assert!(text.contains(total), "{text}");
        // Total: 3 of 6 lost in 2 bursts; error lines from the options.
        assert!(text.contains(
            "Packets dropped          =             3 (50.00 %)\n\
             Average loss-burst size  =      1.500000 pkt\n\
             Error lines              =             3\n\
             -- dualperf extras (not in ITGDec) --\n"
        ));
        assert!(text.ends_with("Flow label seen          =     unknown×3\n----------------------------------------------------------\n"));
    }

    #[test]
    fn itgdec_report_without_options_omits_endpoints() {
        let text = itgdec_text(&summary());
        assert!(text.starts_with(&format!("{DASHES}\nFlow number: 1\n{DASHES}\nTotal time")));
        assert!(text.contains("Error lines              =             0\n"));
    }

    #[test]
    fn marking_listing_is_bounded() {
        let seen: BTreeMap<u8, u64> = (0..10).map(|v| (v, u64::from(v) + 1)).collect();
        assert_eq!(
            listing(&seen, 2, u8::to_string),
            "9×10, 8×9, 7×8, 6×7, 5×6, 4×5, 3×4, 2×3, +2 more, unknown×2"
        );
        assert_eq!(
            listing(&BTreeMap::<u8, u64>::new(), 0, u8::to_string),
            "none"
        );
    }

    #[test]
    fn csv_summary_has_one_row_per_flow_and_total() {
        let csv = csv_summary(&summary());
        let lines: Vec<&str> = csv.lines().collect();
        assert_eq!(lines.len(), 4);
        let header: Vec<&str> = lines[0].split(',').collect();
        assert_eq!(header.len(), SUMMARY_COLUMNS.len() + 1);
        assert_eq!(&header[..4], ["flow", "packets", "unique_packets", "bytes"]);
        let cells = |line: &str| -> BTreeMap<String, String> {
            header
                .iter()
                .zip(line.split(','))
                .map(|(h, c)| ((*h).to_owned(), c.to_owned()))
                .collect()
        };
        let one = cells(lines[1]);
        assert_eq!(one["flow"], "1");
        assert_eq!(one["delay_mean_ns"], "200000");
        assert_eq!(one["jitter_ditg_ns"], "150000");
        assert_eq!(one["loss_pct"], "25");
        assert_eq!(one["tos_seen"], "184:3");
        assert_eq!(one["flow_label_seen"], "");
        let two = cells(lines[2]);
        assert_eq!(two["flow"], "2");
        assert_eq!(two["delay_mean_ns"], "");
        assert_eq!(two["bitrate_bps"], "");
        assert_eq!(two["lost"], "2");
        let total = cells(lines[3]);
        assert_eq!(total["flow"], "total");
        assert_eq!(total["sent"], "6");
        assert_eq!(total["lost"], "3");
        assert_eq!(total["loss_pct"], "50");
    }

    #[test]
    fn csv_intervals_leave_empty_windows_blank() {
        let records = [rx(1, 0, 100, 100), rx(1, 1, 2_100, 300)];
        let series = intervals(&records, 1_000_000, BASE_NS);
        assert_eq!(
            csv_intervals(&series),
            format!(
                "start_ns,end_ns,packets,bytes,bitrate_bps,rate_pps,delay_mean_ns,delay_min_ns,\
                 delay_max_ns,jitter_ditg_ns,jitter_rfc3550_ns,lost\n\
                 {0},{1},1,1000,8000000,1000,100000,100000,100000,,,0\n\
                 {1},{2},0,0,,,,,,,,\n\
                 {2},{3},1,1000,8000000,1000,300000,300000,300000,200000,12500,0\n",
                BASE_NS,
                BASE_NS + 1_000_000,
                BASE_NS + 2_000_000,
                BASE_NS + 3_000_000
            )
        );
    }
}
