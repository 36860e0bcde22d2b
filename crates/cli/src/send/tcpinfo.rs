//! What the sending kernel says about each TCP flow's connection while a session runs:
//! `TCP_INFO` (Linux `struct tcp_info`, include/uapi/linux/tcp.h, read by
//! [`netio::tcp::tcp_info`]) sampled by the session's main thread on a duplicate of each
//! TCP data socket, so the engines never stop for it.
//!
//! Samples are taken at each `--interval` edge (those go in the flow's series and on the
//! live lines, as iperf3's Retr and Cwnd), at least every [`SUMMARY_EVERY_NS`] while the
//! flows run (for the summary's extremes and mean), and once after the engines finished
//! (the summary's totals and last state, and the series' last window). Each series
//! sample's retransmits are the change of `tcpi_total_retrans` since the one before
//! (from 0 at the connection's start), so they add up to the summary's total, which is
//! the last sample's `tcpi_total_retrans`.

use std::net::TcpStream;

use netio::tcp::TcpInfo;
use results::send::{TcpInfoSample, TcpInfoSummary, TcpReport};

/// Least time between two samples taken for the summary alone, ns.
pub(super) const SUMMARY_EVERY_NS: u64 = 100_000_000;

/// The TCP figures of one live `--interval` line: iperf3's Retr (summed over the TCP
/// flows, as its SUM line) and Cwnd (only with a single TCP flow: iperf3's SUM line has
/// none, and a sum of windows of different paths means nothing).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct LiveTcp {
    pub(super) retransmits: u64,
    pub(super) cwnd_bytes: Option<u64>,
}

/// The `TCP_INFO` samples of a session's flows, in flow order (`None` for UDP flows).
pub(super) struct TcpStats {
    origin_ns: u64,
    /// Whether the flows keep a series (`--interval`).
    intervals: bool,
    flows: Vec<Option<FlowTcp>>,
    /// No summary-only sample before this.
    next_summary_ns: u64,
    /// When the latest sample was taken (monotonic clock).
    sampled_ns: Option<u64>,
}

struct FlowTcp {
    /// A duplicate of the flow's data socket; dropped at [`TcpStats::finish`].
    stream: Option<TcpStream>,
    sums: Sums,
    /// The latest sample read, and when (since the origin).
    last: Option<(u64, TcpInfo)>,
    series: Vec<TcpInfoSample>,
    /// `tcpi_total_retrans` at the series' latest sample.
    series_retrans: u32,
    /// `SO_SNDBUF` read at [`TcpStats::finish`].
    send_buffer_bytes: Option<u64>,
    /// `last` was read after the series' latest sample.
    fresh: bool,
}

impl TcpStats {
    /// Sampling `streams` (one per flow, `None` for a flow that is not TCP) from
    /// `origin_ns` on; with `intervals`, a series sample at each window edge.
    pub(super) fn new(origin_ns: u64, intervals: bool, streams: Vec<Option<TcpStream>>) -> Self {
        Self {
            origin_ns,
            intervals,
            flows: streams
                .into_iter()
                .map(|s| {
                    s.map(|stream| FlowTcp {
                        stream: Some(stream),
                        sums: Sums::default(),
                        last: None,
                        series: Vec::new(),
                        series_retrans: 0,
                        send_buffer_bytes: None,
                        fresh: false,
                    })
                })
                .collect(),
            next_summary_ns: origin_ns,
            sampled_ns: None,
        }
    }

    /// Whether any flow is sampled.
    pub(super) fn any(&self) -> bool {
        self.flows.iter().any(Option::is_some)
    }

    /// A summary sample of every flow once [`SUMMARY_EVERY_NS`] passed since the last
    /// sample (none before the origin).
    pub(super) fn poll(&mut self, now_ns: u64) {
        if self.any() && now_ns >= self.next_summary_ns {
            self.sample(now_ns);
        }
    }

    /// At a window edge: sample every flow into its series; the live line's figures.
    pub(super) fn edge(&mut self, now_ns: u64) -> Option<LiveTcp> {
        self.sample(now_ns);
        self.close_window()
    }

    /// After the engines finished: the last sample (also the series' last window), then
    /// the sockets are let go; the live line's figures of that last window.
    pub(super) fn finish(&mut self, now_ns: u64) -> Option<LiveTcp> {
        // An edge at this same moment has just read the final state.
        if self.sampled_ns != Some(now_ns) {
            self.sample(now_ns);
        }
        let live = self.close_window();
        for f in self.flows.iter_mut().flatten() {
            if let Some(stream) = f.stream.take() {
                f.send_buffer_bytes = netio::tcp::send_buffer(&stream).ok().map(|b| b as u64);
            }
        }
        live
    }

    /// Each flow's report, in flow order.
    pub(super) fn reports(self) -> Vec<Option<TcpReport>> {
        let intervals = self.intervals;
        self.flows
            .into_iter()
            .map(|f| {
                let f = f?;
                let (_, last) = f.last?;
                Some(TcpReport {
                    summary: TcpInfoSummary {
                        send_buffer_bytes: f.send_buffer_bytes,
                        ..f.sums.summary(&last)
                    },
                    intervals: intervals.then_some(f.series),
                })
            })
            .collect()
    }

    fn sample(&mut self, now_ns: u64) {
        let at_ns = now_ns.saturating_sub(self.origin_ns);
        for f in self.flows.iter_mut().flatten() {
            let Some(stream) = &f.stream else { continue };
            // The socket is ours (a dup), so this fails only on a kernel without
            // TCP_INFO: the flow then has no report.
            if let Ok(info) = netio::tcp::tcp_info(stream) {
                f.sums.add(&info);
                f.last = Some((at_ns, info));
                f.fresh = true;
            }
        }
        self.next_summary_ns = now_ns.saturating_add(SUMMARY_EVERY_NS);
        self.sampled_ns = Some(now_ns);
    }

    /// Ends a series window at each flow's latest sample.
    fn close_window(&mut self) -> Option<LiveTcp> {
        if !self.intervals || !self.any() {
            return None;
        }
        let mut live = LiveTcp {
            retransmits: 0,
            cwnd_bytes: None,
        };
        let tcp_flows = self.flows.iter().flatten().count();
        for f in self.flows.iter_mut().flatten() {
            let Some((at_ns, info)) = f.last.filter(|_| f.fresh) else {
                // No new sample since the last edge (the read failed): nothing to add.
                continue;
            };
            f.fresh = false;
            let s = sample_of(at_ns, &info, f.series_retrans);
            f.series_retrans = info.total_retrans_segments;
            live.retransmits += s.retransmits;
            if tcp_flows == 1 {
                live.cwnd_bytes = Some(s.cwnd_bytes);
            }
            f.series.push(s);
        }
        Some(live)
    }
}

/// One series sample from `info`, its retransmits counted from `retrans_before`
/// (`tcpi_total_retrans` at the previous sample; iperf3's Retr is the same change).
fn sample_of(at_ns: u64, info: &TcpInfo, retrans_before: u32) -> TcpInfoSample {
    TcpInfoSample {
        at_ns,
        retransmits: u64::from(info.total_retrans_segments.wrapping_sub(retrans_before)),
        cwnd_bytes: info.cwnd_bytes(),
        srtt_ns: srtt_ns(info),
        rttvar_ns: srtt_ns(info).map(|_| u64::from(info.rttvar_us) * 1_000),
        pacing_rate_bps: pacing_rate_bps(info),
        delivery_rate_bps: delivery_rate_bps(info),
    }
}

/// `tcpi_rtt` in ns; `None` before the first RTT sample (the kernel reports 0 then, and
/// never less than 1 µs after).
fn srtt_ns(info: &TcpInfo) -> Option<u64> {
    (info.srtt_us > 0).then(|| u64::from(info.srtt_us) * 1_000)
}

/// `tcpi_pacing_rate` in bit/s; `None` from an older kernel or while unlimited (`~0`).
fn pacing_rate_bps(info: &TcpInfo) -> Option<u64> {
    info.pacing_rate_bytes_per_s
        .filter(|&r| r != u64::MAX)
        .map(|r| r.saturating_mul(8))
}

/// `tcpi_delivery_rate` in bit/s; `None` from an older kernel or before any sample (0).
fn delivery_rate_bps(info: &TcpInfo) -> Option<u64> {
    info.delivery_rate_bytes_per_s
        .filter(|&r| r > 0)
        .map(|r| r.saturating_mul(8))
}

/// A flow's samples summed as they come (constant memory).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
struct Sums {
    samples: u64,
    max_cwnd_bytes: u64,
    srtt_samples: u64,
    srtt_sum_ns: u128,
    srtt_min_ns: Option<u64>,
    srtt_max_ns: Option<u64>,
}

impl Sums {
    fn add(&mut self, info: &TcpInfo) {
        self.samples += 1;
        self.max_cwnd_bytes = self.max_cwnd_bytes.max(info.cwnd_bytes());
        if let Some(srtt) = srtt_ns(info) {
            self.srtt_samples += 1;
            self.srtt_sum_ns += u128::from(srtt);
            self.srtt_min_ns = Some(self.srtt_min_ns.map_or(srtt, |m| m.min(srtt)));
            self.srtt_max_ns = Some(self.srtt_max_ns.map_or(srtt, |m| m.max(srtt)));
        }
    }

    /// The summary, `last` the final sample.
    fn summary(&self, last: &TcpInfo) -> TcpInfoSummary {
        TcpInfoSummary {
            samples: self.samples,
            retransmits: u64::from(last.total_retrans_segments),
            bytes_retrans: last.bytes_retrans,
            mss_bytes: u64::from(last.snd_mss_bytes),
            max_cwnd_bytes: self.max_cwnd_bytes,
            cwnd_bytes: last.cwnd_bytes(),
            srtt_min_ns: self.srtt_min_ns,
            srtt_mean_ns: (self.srtt_samples > 0)
                .then(|| self.srtt_sum_ns as f64 / self.srtt_samples as f64),
            srtt_max_ns: self.srtt_max_ns,
            // ~0U until the first RTT sample.
            min_rtt_ns: last
                .min_rtt_us
                .filter(|&r| r != u32::MAX)
                .map(|r| u64::from(r) * 1_000),
            rttvar_ns: srtt_ns(last).map(|_| u64::from(last.rttvar_us) * 1_000),
            pacing_rate_bps: pacing_rate_bps(last),
            delivery_rate_bps: delivery_rate_bps(last),
            max_pacing_rate_bps: last
                .max_pacing_rate_bytes_per_s
                .filter(|&r| r != u64::MAX && r != u64::from(u32::MAX))
                .map(|r| r.saturating_mul(8)),
            send_buffer_bytes: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info(total_retrans: u32, cwnd_segments: u32, srtt_us: u32) -> TcpInfo {
        TcpInfo {
            state: 1,
            snd_mss_bytes: 1000,
            snd_cwnd_segments: cwnd_segments,
            srtt_us,
            rttvar_us: 5,
            total_retrans_segments: total_retrans,
            pacing_rate_bytes_per_s: Some(u64::MAX),
            delivery_rate_bytes_per_s: Some(0),
            min_rtt_us: Some(u32::MAX),
            bytes_retrans: Some(0),
            ..TcpInfo::default()
        }
    }

    #[test]
    fn the_summary_has_extremes_over_samples_and_the_last_state() {
        let mut sums = Sums::default();
        // Before the first RTT sample srtt is 0: not a sample of the RTT.
        for i in [info(0, 10, 0), info(2, 40, 30), info(5, 20, 10)] {
            sums.add(&i);
        }
        let mut last = info(6, 25, 20);
        last.pacing_rate_bytes_per_s = Some(1_000_000);
        last.delivery_rate_bytes_per_s = Some(500_000);
        last.min_rtt_us = Some(9);
        sums.add(&last);
        let s = sums.summary(&last);
        assert_eq!((s.samples, s.retransmits), (4, 6));
        assert_eq!(
            (s.max_cwnd_bytes, s.cwnd_bytes, s.mss_bytes),
            (40_000, 25_000, 1000)
        );
        assert_eq!((s.srtt_min_ns, s.srtt_max_ns), (Some(10_000), Some(30_000)));
        assert_eq!(s.srtt_mean_ns, Some(20_000.0));
        assert_eq!(s.min_rtt_ns, Some(9_000));
        assert_eq!(s.rttvar_ns, Some(5_000));
        assert_eq!(s.pacing_rate_bps, Some(8_000_000));
        assert_eq!(s.delivery_rate_bps, Some(4_000_000));
        // The kernel's "none yet" values are null, never 0 or ~0.
        let first = Sums::default().summary(&info(0, 10, 0));
        assert_eq!(first.srtt_mean_ns, None);
        assert_eq!(
            (
                first.min_rtt_ns,
                first.rttvar_ns,
                first.pacing_rate_bps,
                first.delivery_rate_bps
            ),
            (None, None, None, None)
        );
    }

    #[test]
    fn a_series_sample_counts_the_retransmits_since_the_one_before() {
        let s = sample_of(7, &info(12, 3, 40), 5);
        assert_eq!((s.at_ns, s.retransmits, s.cwnd_bytes), (7, 7, 3000));
        assert_eq!((s.srtt_ns, s.rttvar_ns), (Some(40_000), Some(5_000)));
        // A counter that wrapped still counts forward.
        assert_eq!(sample_of(0, &info(2, 1, 1), u32::MAX - 1).retransmits, 4);
    }

    #[test]
    fn live_figures_sum_retransmits_and_show_cwnd_of_a_single_tcp_flow() {
        // Without sockets nothing is sampled and no flow reports.
        let mut none = TcpStats::new(0, true, vec![None, None]);
        assert!(!none.any());
        assert_eq!(none.edge(10), None);
        assert!(none.reports().iter().all(Option::is_none));
        // A series window is closed from each flow's latest sample.
        let mut stats = TcpStats::new(0, true, Vec::new());
        for (total, cwnd) in [(3, 10), (4, 20)] {
            stats.flows.push(Some(FlowTcp {
                stream: None,
                sums: Sums::default(),
                last: Some((5, info(total, cwnd, 50))),
                series: Vec::new(),
                series_retrans: 1,
                send_buffer_bytes: None,
                fresh: true,
            }));
        }
        let live = stats.close_window().unwrap();
        assert_eq!(
            live,
            LiveTcp {
                retransmits: 5,
                cwnd_bytes: None
            }
        );
        // No new sample since: nothing more to count.
        assert_eq!(stats.close_window().unwrap().retransmits, 0);
        stats.flows.pop();
        let f = stats.flows[0].as_mut().unwrap();
        (f.last, f.fresh) = (Some((9, info(8, 30, 50))), true);
        let live = stats.close_window().unwrap();
        assert_eq!(
            live,
            LiveTcp {
                retransmits: 5,
                cwnd_bytes: Some(30_000)
            }
        );
        let reports = stats.reports();
        let series = reports[0].as_ref().unwrap().intervals.as_ref().unwrap();
        let sum: u64 = series.iter().map(|s| s.retransmits).sum();
        assert_eq!(sum + 1, 8, "from the count before the first window");
    }
}
