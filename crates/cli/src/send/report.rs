//! What `dualperf send` reports: sender-side figures, the receiver's summary, and the
//! round-trip summary of echoes, per flow.

use std::net::SocketAddr;

use meter::{FlowSummary, ScheduleError, TxRecord};
use serde::Serialize;
use traffic::FlowSpec;
use wire::control::Meter;

/// Sender-side figures of one flow.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct SentStats {
    pub(crate) packets: u64,
    pub(crate) bytes: u64,
    /// First to last actual send time; `None` with fewer than two packets.
    pub(crate) duration_ns: Option<u64>,
    /// Actual send time of the first and the last packet (monotonic clock).
    #[serde(skip)]
    pub(crate) first_ns: Option<u64>,
    #[serde(skip)]
    pub(crate) last_ns: Option<u64>,
    /// Achieved send rate, `packets / duration` over first→last send, the same
    /// definition as the receiver's rate (D-ITG's "Average packet rate").
    pub(crate) rate_pps: Option<f64>,
    /// Payload bits over the same span.
    pub(crate) bitrate_bps: Option<f64>,
    /// The mean rate asked for; `None` when the gap distribution has no mean.
    pub(crate) requested_pps: Option<f64>,
    /// Packets the stop conditions allow (rate × duration, count, bytes: the least).
    pub(crate) planned_packets: Option<u64>,
    /// Actual − scheduled send time (mean, p99, late packets).
    pub(crate) schedule_error: Option<ScheduleError>,
}

/// How long the receiver held round-trip probes before echoing them (subtracted from
/// each RTT, as irtt subtracts server processing time). Only probes of at least 32 bytes
/// carry the receiver's timestamps.
#[derive(Debug, Clone, Copy, Serialize)]
pub(crate) struct HoldStats {
    pub(crate) packets: u64,
    pub(crate) mean_ns: f64,
    pub(crate) max_ns: u64,
}

impl HoldStats {
    pub(crate) fn from_ns(holds: &[i64]) -> Option<Self> {
        let max = holds.iter().copied().max()?;
        Some(Self {
            packets: holds.len() as u64,
            mean_ns: holds.iter().map(|h| *h as f64).sum::<f64>() / holds.len() as f64,
            max_ns: u64::try_from(max).unwrap_or(0),
        })
    }
}

/// Results of one flow.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct FlowOutcome {
    pub(crate) id: u16,
    pub(crate) spec: FlowSpec,
    pub(crate) sent: SentStats,
    /// The receiver's summary (one-way figures); `None` if it did not report.
    pub(crate) received: Option<FlowSummary>,
    /// For RTP flows: the receiver's RFC 3550 jitter against the RTP timestamps, the
    /// figure RTP tools such as Wireshark report.
    pub(crate) received_rtp: Option<meter::RtpJitterSummary>,
    /// The sender's summary of echoes (round-trip figures, --meter rtt).
    pub(crate) rtt: Option<FlowSummary>,
    /// Receiver hold time of echoes (--meter rtt).
    pub(crate) receiver_hold: Option<HoldStats>,
    /// The receiver's series in `--interval` windows from the flow's first arrival.
    pub(crate) intervals: Option<Vec<meter::Interval>>,
    /// Why the receiver did not report the series, if it did not.
    pub(crate) intervals_error: Option<String>,
    /// Malformed messages the receiver saw on this flow; `None` if it did not report.
    pub(crate) malformed_at_receiver: Option<u64>,
    /// Why the flow ended early, if it did.
    pub(crate) error: Option<String>,
}

/// Results of a session.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct SendReport {
    pub(crate) format_version: u32,
    pub(crate) tool: String,
    pub(crate) dest: SocketAddr,
    pub(crate) interrupted: bool,
    /// Every flow together.
    pub(crate) sum: SumStats,
    pub(crate) flows: Vec<FlowOutcome>,
}

/// Every flow of a session together (iperf3's SUM), each side over its own span: the
/// earliest first packet to the latest last packet of any flow.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct SumStats {
    pub(crate) flows: usize,
    pub(crate) sent: SideSum,
    /// `None` when the receiver reported no flow.
    pub(crate) received: Option<SideSum>,
}

/// One side's totals.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct SideSum {
    pub(crate) packets: u64,
    pub(crate) bytes: u64,
    /// First to last packet over all flows; `None` when undefined.
    pub(crate) duration_ns: Option<u64>,
    /// `bytes · 8 / duration` (payload bits, as per flow).
    pub(crate) bitrate_bps: Option<f64>,
}

impl SideSum {
    fn new(packets: u64, bytes: u64, first: Option<u64>, last: Option<u64>) -> Self {
        let duration_ns = first.zip(last).and_then(|(a, b)| (b > a).then_some(b - a));
        Self {
            packets,
            bytes,
            duration_ns,
            bitrate_bps: duration_ns.map(|d| bytes as f64 * 8e9 / d as f64),
        }
    }
}

impl SumStats {
    pub(crate) fn of(flows: &[FlowOutcome]) -> Self {
        let sent = SideSum::new(
            flows.iter().map(|f| f.sent.packets).sum(),
            flows.iter().map(|f| f.sent.bytes).sum(),
            flows.iter().filter_map(|f| f.sent.first_ns).min(),
            flows.iter().filter_map(|f| f.sent.last_ns).max(),
        );
        let rx: Vec<&FlowSummary> = flows.iter().filter_map(|f| f.received.as_ref()).collect();
        let received = (!rx.is_empty()).then(|| {
            SideSum::new(
                rx.iter().map(|r| r.packets).sum(),
                rx.iter().map(|r| r.bytes).sum(),
                rx.iter().filter_map(|r| r.first_rx_ns).min(),
                rx.iter().filter_map(|r| r.last_rx_ns).max(),
            )
        });
        Self {
            flows: flows.len(),
            sent,
            received,
        }
    }
}

pub(crate) fn sent_stats(spec: &FlowSpec, tx: &[TxRecord]) -> SentStats {
    let s = meter::sent_summary(tx);
    SentStats {
        packets: s.packets,
        bytes: s.bytes,
        duration_ns: s.duration_ns,
        first_ns: s.first_ns,
        last_ns: s.last_ns,
        rate_pps: s.rate_pps,
        bitrate_bps: s.bitrate_bps,
        requested_pps: super::session::requested_pps(spec),
        planned_packets: super::session::planned_packets(spec),
        // An unpaced (bulk) flow has no schedule to miss.
        schedule_error: (!spec.unpaced).then(|| meter::schedule_error(tx)).flatten(),
    }
}

impl SendReport {
    /// Human-readable results.
    pub(crate) fn to_text(&self) -> String {
        let mut t = crate::table::Table::new(&[
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
        for f in &self.flows {
            let summary = if f.spec.meter == Meter::Rtt {
                f.rtt.as_ref()
            } else {
                f.received.as_ref()
            };
            let rx = f.received.as_ref();
            t.row(vec![
                format!("{} {}", f.id, f.spec.label),
                format!("{:?}/{:?}", f.spec.protocol, f.spec.meter).to_lowercase(),
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
            self.dest,
            if self.interrupted {
                " (interrupted)"
            } else {
                ""
            }
        );
        s.push_str(&t.render());
        for f in self.flows.iter().filter(|f| f.spec.meter == Meter::Rtt) {
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
        if self.flows.len() > 1 {
            let mbit =
                |b: Option<f64>| b.map_or_else(|| "-".to_owned(), |b| format!("{:.3}", b / 1e6));
            s.push_str(&format!(
                "sum of {} flows: sent {} Mbit/s, received {} Mbit/s\n",
                self.sum.flows,
                mbit(self.sum.sent.bitrate_bps),
                mbit(self.sum.received.as_ref().and_then(|r| r.bitrate_bps)),
            ));
        }
        for f in &self.flows {
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
        for f in &self.flows {
            if let Some(e) = &f.error {
                s.push_str(&format!("flow {}: ended early: {e}\n", f.id));
            }
        }
        s
    }
}
