//! What the sending kernel says about each TCP flow's connection while a session runs:
//! `TCP_INFO` (Linux `struct tcp_info`, include/uapi/linux/tcp.h, read by
//! [`netio::tcp::tcp_info`]) sampled by the session's main thread on a duplicate of each
//! TCP data socket, so the engines never stop for it; the figures are
//! `results::tcp_info`'s.
//!
//! Samples are taken at each `--interval` edge (those go in the flow's series and on the
//! live lines, as iperf3's Retr and Cwnd), at least every [`SUMMARY_EVERY_NS`] while the
//! flows run (for the summary's extremes and mean), and once after the engines finished
//! (the summary's totals and last state, and the series' last window).

use std::net::TcpStream;

use netio::tcp::TcpInfo;
use results::send::TcpReport;
pub(super) use results::tcp_info::LiveTcp;
use results::tcp_info::{close_window, FlowTcpInfo, TcpReading};

/// Least time between two samples taken for the summary alone, ns.
pub(super) const SUMMARY_EVERY_NS: u64 = 100_000_000;

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
    info: FlowTcpInfo,
    /// `SO_SNDBUF` read at [`TcpStats::finish`].
    send_buffer_bytes: Option<u64>,
}

/// The fields of `info` the figures use.
fn reading(info: &TcpInfo) -> TcpReading {
    TcpReading {
        snd_mss_bytes: info.snd_mss_bytes,
        srtt_us: info.srtt_us,
        rttvar_us: info.rttvar_us,
        cwnd_bytes: info.cwnd_bytes(),
        total_retrans_segments: info.total_retrans_segments,
        pacing_rate_bytes_per_s: info.pacing_rate_bytes_per_s,
        max_pacing_rate_bytes_per_s: info.max_pacing_rate_bytes_per_s,
        min_rtt_us: info.min_rtt_us,
        delivery_rate_bytes_per_s: info.delivery_rate_bytes_per_s,
        bytes_retrans: info.bytes_retrans,
    }
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
                        info: FlowTcpInfo::default(),
                        send_buffer_bytes: None,
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
            .map(|f| f.and_then(|f| f.info.report(intervals, f.send_buffer_bytes)))
            .collect()
    }

    fn sample(&mut self, now_ns: u64) {
        let at_ns = now_ns.saturating_sub(self.origin_ns);
        for f in self.flows.iter_mut().flatten() {
            let Some(stream) = &f.stream else { continue };
            // The socket is ours (a dup), so this fails only on a kernel without
            // TCP_INFO: the flow then has no report.
            if let Ok(info) = netio::tcp::tcp_info(stream) {
                f.info.add(at_ns, &reading(&info));
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
        Some(close_window(
            self.flows.iter_mut().flatten().map(|f| &mut f.info),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn without_sockets_nothing_is_sampled_and_no_flow_reports() {
        let mut none = TcpStats::new(0, true, vec![None, None]);
        assert!(!none.any());
        assert_eq!(none.edge(10), None);
        assert_eq!(none.finish(20), None);
        assert!(none.reports().iter().all(Option::is_none));
    }

    #[test]
    fn a_reading_copies_what_the_figures_use() {
        let info = TcpInfo {
            snd_mss_bytes: 1448,
            snd_cwnd_segments: 10,
            srtt_us: 250,
            rttvar_us: 40,
            total_retrans_segments: 3,
            pacing_rate_bytes_per_s: Some(1),
            max_pacing_rate_bytes_per_s: Some(2),
            min_rtt_us: Some(200),
            delivery_rate_bytes_per_s: Some(3),
            bytes_retrans: Some(4),
            ..TcpInfo::default()
        };
        let r = reading(&info);
        assert_eq!(r.cwnd_bytes, 14_480);
        assert_eq!(
            (
                r.snd_mss_bytes,
                r.srtt_us,
                r.rttvar_us,
                r.total_retrans_segments
            ),
            (1448, 250, 40, 3)
        );
        assert_eq!(
            (
                r.pacing_rate_bytes_per_s,
                r.max_pacing_rate_bytes_per_s,
                r.min_rtt_us,
                r.delivery_rate_bytes_per_s,
                r.bytes_retrans
            ),
            (Some(1), Some(2), Some(200), Some(3), Some(4))
        );
    }
}
