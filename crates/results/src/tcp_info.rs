//! `send`'s TCP figures from the sending kernel's `TCP_INFO` (Linux `struct tcp_info`,
//! include/uapi/linux/tcp.h; read by the binary with `netio::tcp::tcp_info`): each
//! flow's series of `--interval` samples, its summary, and the figures of a live line.
//! Pure: the binary reads the sockets and the clock and hands each reading in.
//!
//! Each series sample's retransmits are the change of `tcpi_total_retrans` since the one
//! before (from 0 at the connection's start), so they add up to the summary's total,
//! which is the last sample's `tcpi_total_retrans`.

use crate::send::{TcpInfoSample, TcpInfoSummary, TcpReport};

/// The fields of one `TCP_INFO` reading the figures use, as `netio::tcp::TcpInfo` has
/// them (`None`: a kernel too old for the field).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TcpReading {
    /// `tcpi_snd_mss`.
    pub snd_mss_bytes: u32,
    /// `tcpi_rtt`: the smoothed RTT, 0 before the first RTT sample.
    pub srtt_us: u32,
    /// `tcpi_rttvar`.
    pub rttvar_us: u32,
    /// `tcpi_snd_cwnd` × `tcpi_snd_mss`.
    pub cwnd_bytes: u64,
    /// `tcpi_total_retrans`.
    pub total_retrans_segments: u32,
    /// `tcpi_pacing_rate` (`~0`: unlimited).
    pub pacing_rate_bytes_per_s: Option<u64>,
    /// `tcpi_max_pacing_rate` (`~0`: unlimited).
    pub max_pacing_rate_bytes_per_s: Option<u64>,
    /// `tcpi_min_rtt` (`~0` before the first RTT sample).
    pub min_rtt_us: Option<u32>,
    /// `tcpi_delivery_rate` (0 before any sample).
    pub delivery_rate_bytes_per_s: Option<u64>,
    /// `tcpi_bytes_retrans`.
    pub bytes_retrans: Option<u64>,
}

/// The TCP figures of one live `--interval` line: iperf3's Retr (summed over the TCP
/// flows, as its SUM line) and Cwnd (only with a single TCP flow: iperf3's SUM line has
/// none, and a sum of windows of different paths means nothing).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LiveTcp {
    /// Retransmits in the window, all TCP flows.
    pub retransmits: u64,
    /// The congestion window of the one TCP flow.
    pub cwnd_bytes: Option<u64>,
}

/// One flow's readings: its summary's sums, its latest reading, its series.
#[derive(Clone, Debug, Default)]
pub struct FlowTcpInfo {
    sums: Sums,
    /// The latest reading, and when (since the session's origin).
    last: Option<(u64, TcpReading)>,
    series: Vec<TcpInfoSample>,
    /// `tcpi_total_retrans` at the series' latest sample.
    series_retrans: u32,
    /// `last` was read after the series' latest sample.
    fresh: bool,
}

impl FlowTcpInfo {
    /// A reading taken `at_ns` after the session's origin.
    pub fn add(&mut self, at_ns: u64, reading: &TcpReading) {
        self.sums.add(reading);
        self.last = Some((at_ns, *reading));
        self.fresh = true;
    }

    /// The flow's report: the summary (with `send_buffer_bytes`, `SO_SNDBUF` at the
    /// end), and with `intervals` the series; `None` when nothing was read.
    pub fn report(self, intervals: bool, send_buffer_bytes: Option<u64>) -> Option<TcpReport> {
        let (_, last) = self.last?;
        Some(TcpReport {
            summary: TcpInfoSummary {
                send_buffer_bytes,
                ..self.sums.summary(&last)
            },
            intervals: intervals.then_some(self.series),
        })
    }
}

/// Ends a series window at each flow's latest reading (a flow with none since the last
/// window adds nothing); the live line's figures.
pub fn close_window<'a>(flows: impl IntoIterator<Item = &'a mut FlowTcpInfo>) -> LiveTcp {
    let flows: Vec<&mut FlowTcpInfo> = flows.into_iter().collect();
    let mut live = LiveTcp {
        retransmits: 0,
        cwnd_bytes: None,
    };
    let tcp_flows = flows.len();
    for f in flows {
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
    live
}

/// One series sample from `info`, its retransmits counted from `retrans_before`
/// (`tcpi_total_retrans` at the previous sample; iperf3's Retr is the same change).
fn sample_of(at_ns: u64, info: &TcpReading, retrans_before: u32) -> TcpInfoSample {
    TcpInfoSample {
        at_ns,
        retransmits: u64::from(info.total_retrans_segments.wrapping_sub(retrans_before)),
        cwnd_bytes: info.cwnd_bytes,
        srtt_ns: srtt_ns(info),
        rttvar_ns: srtt_ns(info).map(|_| u64::from(info.rttvar_us) * 1_000),
        pacing_rate_bps: pacing_rate_bps(info),
        delivery_rate_bps: delivery_rate_bps(info),
    }
}

/// `tcpi_rtt` in ns; `None` before the first RTT sample (the kernel reports 0 then, and
/// never less than 1 µs after).
fn srtt_ns(info: &TcpReading) -> Option<u64> {
    (info.srtt_us > 0).then(|| u64::from(info.srtt_us) * 1_000)
}

/// `tcpi_pacing_rate` in bit/s; `None` from an older kernel or while unlimited (`~0`).
fn pacing_rate_bps(info: &TcpReading) -> Option<u64> {
    info.pacing_rate_bytes_per_s
        .filter(|&r| r != u64::MAX)
        .map(|r| r.saturating_mul(8))
}

/// `tcpi_delivery_rate` in bit/s; `None` from an older kernel or before any sample (0).
fn delivery_rate_bps(info: &TcpReading) -> Option<u64> {
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
    fn add(&mut self, info: &TcpReading) {
        self.samples += 1;
        self.max_cwnd_bytes = self.max_cwnd_bytes.max(info.cwnd_bytes);
        if let Some(srtt) = srtt_ns(info) {
            self.srtt_samples += 1;
            self.srtt_sum_ns += u128::from(srtt);
            self.srtt_min_ns = Some(self.srtt_min_ns.map_or(srtt, |m| m.min(srtt)));
            self.srtt_max_ns = Some(self.srtt_max_ns.map_or(srtt, |m| m.max(srtt)));
        }
    }

    /// The summary, `last` the final sample.
    fn summary(&self, last: &TcpReading) -> TcpInfoSummary {
        TcpInfoSummary {
            samples: self.samples,
            retransmits: u64::from(last.total_retrans_segments),
            bytes_retrans: last.bytes_retrans,
            mss_bytes: u64::from(last.snd_mss_bytes),
            max_cwnd_bytes: self.max_cwnd_bytes,
            cwnd_bytes: last.cwnd_bytes,
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

    fn info(total_retrans: u32, cwnd_segments: u32, srtt_us: u32) -> TcpReading {
        TcpReading {
            snd_mss_bytes: 1000,
            cwnd_bytes: u64::from(cwnd_segments) * 1000,
            srtt_us,
            rttvar_us: 5,
            total_retrans_segments: total_retrans,
            pacing_rate_bytes_per_s: Some(u64::MAX),
            delivery_rate_bytes_per_s: Some(0),
            min_rtt_us: Some(u32::MAX),
            bytes_retrans: Some(0),
            ..TcpReading::default()
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
        // A series window is closed from each flow's latest reading.
        let mut flows = vec![FlowTcpInfo::default(), FlowTcpInfo::default()];
        for (f, (total, cwnd)) in flows.iter_mut().zip([(3, 10), (4, 20)]) {
            f.series_retrans = 1;
            f.add(5, &info(total, cwnd, 50));
        }
        let live = close_window(&mut flows);
        assert_eq!(
            live,
            LiveTcp {
                retransmits: 5,
                cwnd_bytes: None
            }
        );
        // No new reading since: nothing more to count.
        assert_eq!(close_window(&mut flows).retransmits, 0);
        flows.pop();
        flows[0].add(9, &info(8, 30, 50));
        let live = close_window(&mut flows);
        assert_eq!(
            live,
            LiveTcp {
                retransmits: 5,
                cwnd_bytes: Some(30_000)
            }
        );
        let report = flows.pop().unwrap().report(true, Some(4096)).unwrap();
        let series = report.intervals.as_ref().unwrap();
        let sum: u64 = series.iter().map(|s| s.retransmits).sum();
        assert_eq!(sum + 1, 8, "from the count before the first window");
        assert_eq!(report.summary.send_buffer_bytes, Some(4096));
        assert_eq!(report.summary.samples, 2);
        // Nothing read: no report.
        assert!(FlowTcpInfo::default().report(true, None).is_none());
    }
}
