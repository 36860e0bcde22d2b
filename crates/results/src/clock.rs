//! Hosts and their clocks: what an agent says about itself (`HostDoc`), how well its
//! clock is disciplined (`SyncState`), and what `dualperf clock --peer` prints
//! (`PeerClockDoc`). A plan across hosts keeps one `HostDoc` per host in its run directory.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

pub use meter::clock::OffsetEstimate;

/// Version of [`PeerClockDoc`].
pub const CLOCK_FORMAT_VERSION: u32 = 1;

/// A host's own view of its clock's synchronisation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema, Default)]
pub struct SyncState {
    /// The kernel's discipline (`adjtimex(2)`), `None` where it cannot be read.
    pub kernel: Option<KernelClock>,
    /// `chronyc tracking`, when chrony runs on the host.
    pub chrony: Option<ChronyTracking>,
}

/// A host's synchronisation in a few words: the kernel's, then chrony's when it runs.
pub fn sync_text(sync: &SyncState) -> String {
    let mut parts = Vec::new();
    match &sync.kernel {
        Some(k) => parts.push(format!(
            "{} (kernel: est. error {:.3} ms, max error {:.3} ms)",
            if k.synchronised {
                "synchronised"
            } else {
                "NOT synchronised"
            },
            k.est_error_ns as f64 / 1e6,
            k.max_error_ns as f64 / 1e6
        )),
        None => parts.push("state unknown".into()),
    }
    if let Some(c) = &sync.chrony {
        parts.push(format!(
            "chrony: {} stratum {}, system time {:+.3} ms, root dispersion {:.3} ms",
            c.reference,
            c.stratum,
            c.system_time_offset_ns / 1e6,
            c.root_dispersion_ns / 1e6
        ));
    }
    parts.join("; ")
}

/// The kernel clock discipline as `adjtimex(2)` reports it (read only: `modes` 0).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct KernelClock {
    /// The clock is synchronised (return value is not `TIME_ERROR` and `STA_UNSYNC` is
    /// clear): an NTP daemon disciplines it.
    pub synchronised: bool,
    /// The `status` bits (`STA_*`).
    pub status: u32,
    /// Maximum error, ns (`maxerror`, which the kernel grows by 500 ppm while nobody
    /// updates it).
    pub max_error_ns: u64,
    /// Estimated error, ns (`esterror`).
    pub est_error_ns: u64,
    /// The remaining offset being slewed out, ns (`offset`).
    pub offset_ns: i64,
    /// The clock's frequency correction, parts per million (`freq` / 2^16).
    pub freq_ppm: f64,
}

/// `chronyc -c tracking`, field by field (chrony's documentation of `tracking`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ChronyTracking {
    /// Reference ID (hex) and name or address of the source.
    pub reference: String,
    /// Stratum of the host.
    pub stratum: u32,
    /// How far the system clock is from chrony's best estimate, ns ("System time";
    /// positive: fast).
    pub system_time_offset_ns: f64,
    /// Offset of the last clock update, ns ("Last offset").
    pub last_offset_ns: f64,
    /// Long-term average of the offset, ns ("RMS offset").
    pub rms_offset_ns: f64,
    /// Network path delay to the stratum-1 source, ns ("Root delay").
    pub root_delay_ns: f64,
    /// Total dispersion accumulated to the stratum-1 source, ns ("Root dispersion").
    pub root_dispersion_ns: f64,
    /// "Normal", "Insert second", "Delete second" or "Not synchronised".
    pub leap_status: String,
}

/// What a host says about itself: an agent answers a host query with this.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct HostDoc {
    /// `dualperf` and its version.
    pub tool: String,
    /// The host's name.
    pub hostname: String,
    /// The kernel (`uname -sr`).
    pub kernel: String,
    /// CPUs this process may use.
    pub cpus: usize,
    /// The kernel's boot id (`/proc/sys/kernel/random/boot_id`): two ends with the same
    /// boot id read one clock.
    pub boot_id: Option<String>,
    /// The host's own clock synchronisation.
    pub clock: SyncState,
    /// The wall clock when the host answered, ns since the Unix epoch.
    pub wall_unix_ns: u64,
}

/// `dualperf clock --peer --json`: this host, the peer, and the offset between them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct PeerClockDoc {
    /// [`CLOCK_FORMAT_VERSION`].
    pub format_version: u32,
    /// The peer's address as asked.
    pub peer: std::net::SocketAddr,
    /// This host.
    pub local: HostDoc,
    /// The peer, as it describes itself.
    pub remote: HostDoc,
    /// The peer's clock minus this host's, and its bound.
    pub offset: Option<OffsetEstimate>,
}

/// How late waits of one length woke: `dualperf clock`'s rows (`doctor` judges one).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct WaitStats {
    /// How long each wait asked for, ns.
    pub wait_ns: u64,
    /// How it waited: `sleep`, or `sleep+spin 50us` (sleep, then spin the last 50 µs).
    pub mode: String,
    /// The mean of how late the waits woke, ns.
    pub overshoot_mean_ns: f64,
    /// Their median, ns.
    pub overshoot_p50_ns: u64,
    /// Their 99th percentile, ns.
    pub overshoot_p99_ns: u64,
    /// The latest, ns.
    pub overshoot_max_ns: u64,
}

impl WaitStats {
    /// The figures of waits of `wait_ns` that woke `over` ns late each (nearest-rank
    /// percentiles, as everywhere in dualperf); none measured gives zeros.
    pub fn of(wait_ns: u64, mode: &str, mut over: Vec<u64>) -> Self {
        over.sort_unstable();
        let pick = |pct: f64| meter::percentile_nearest_rank(&over, pct).unwrap_or(0);
        Self {
            wait_ns,
            mode: mode.to_owned(),
            overshoot_mean_ns: over.iter().sum::<u64>() as f64 / over.len().max(1) as f64,
            overshoot_p50_ns: pick(50.0),
            overshoot_p99_ns: pick(99.0),
            overshoot_max_ns: *over.last().unwrap_or(&0),
        }
    }
}

/// `dualperf clock --json`: how precisely this host can time packets.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ClockReport {
    /// `CLOCK_MONOTONIC`'s resolution, ns.
    pub monotonic_resolution_ns: u64,
    /// `CLOCK_REALTIME`'s resolution, ns.
    pub realtime_resolution_ns: u64,
    /// Cost of one clock read, averaged over many.
    pub clock_read_ns: f64,
    /// The thread's timer slack before dualperf lowers it to 1 ns for pacing.
    pub default_timer_slack_ns: u64,
    /// How late waits woke, per length and mode.
    pub waits: Vec<WaitStats>,
    /// This host's clock synchronisation (adjtimex, chrony).
    pub sync: SyncState,
}

/// `dualperf clock`'s text: the resolutions, a read's cost, the slack, the clock's
/// synchronisation, then a table of the waits.
pub fn report_text(report: &ClockReport) -> String {
    let mut text = format!(
        "timer resolution: monotonic {} ns, realtime {} ns; one clock read ≈ {:.1} ns; timer slack {} ns (lowered to 1 ns for the waits below, as send does)",
        report.monotonic_resolution_ns, report.realtime_resolution_ns, report.clock_read_ns, report.default_timer_slack_ns
    );
    let mut t = crate::text_table::Table::new(&[
        "wait",
        "mode",
        "late mean µs",
        "p50 µs",
        "p99 µs",
        "max µs",
    ]);
    for w in &report.waits {
        t.row(vec![
            format!("{} µs", w.wait_ns / 1000),
            w.mode.clone(),
            format!("{:.1}", w.overshoot_mean_ns / 1e3),
            format!("{:.1}", w.overshoot_p50_ns as f64 / 1e3),
            format!("{:.1}", w.overshoot_p99_ns as f64 / 1e3),
            format!("{:.1}", w.overshoot_max_ns as f64 / 1e3),
        ]);
    }
    text.push_str(&format!("\nclock: {}\n", sync_text(&report.sync)));
    text.push_str(&t.render());
    text
}

/// `dualperf clock --peer`'s text: each host, its kernel, tool and clock, then the
/// offset between them.
pub fn peer_text(doc: &PeerClockDoc) -> String {
    let mut s = String::new();
    for (who, h) in [("this host", &doc.local), ("peer", &doc.remote)] {
        s.push_str(&format!(
            "{who}: {} ({}, {}), clock {}\n",
            h.hostname,
            h.kernel,
            h.tool,
            sync_text(&h.clock)
        ));
    }
    match &doc.offset {
        Some(o) if o.same_clock => s.push_str("offset: 0 (one kernel, one clock)\n"),
        Some(o) => s.push_str(&format!(
            "offset: the peer's clock reads {:+.3} ms against ours, ± {:.3} ms (least round trip {:.3} ms of {} exchanges)\n",
            o.offset_ns as f64 / 1e6,
            o.bound_ns as f64 / 1e6,
            o.delay_min_ns as f64 / 1e6,
            o.samples
        )),
        None => s.push_str("offset: unknown (no consistent exchange)\n"),
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sync_text_says_the_kernels_state_then_chronys() {
        assert_eq!(sync_text(&SyncState::default()), "state unknown");
        let sync = SyncState {
            kernel: Some(KernelClock {
                synchronised: false,
                status: 0x40,
                max_error_ns: 16_000_000,
                est_error_ns: 1_600,
                offset_ns: 0,
                freq_ppm: 0.0,
            }),
            chrony: Some(ChronyTracking {
                reference: "CB00710F (ntp1.example.net)".into(),
                stratum: 3,
                system_time_offset_ns: -6_523.0,
                last_offset_ns: 0.0,
                rms_offset_ns: 0.0,
                root_delay_ns: 0.0,
                root_dispersion_ns: 1_100_737.0,
                leap_status: "Normal".into(),
            }),
        };
        assert_eq!(
            sync_text(&sync),
            "NOT synchronised (kernel: est. error 0.002 ms, max error 16.000 ms); chrony: \
             CB00710F (ntp1.example.net) stratum 3, system time -0.007 ms, root dispersion \
             1.101 ms"
        );
    }

    #[test]
    fn wait_stats_are_nearest_rank_over_the_overshoots() {
        let w = WaitStats::of(1_000_000, "sleep", vec![500, 100, 300, 200, 400]);
        assert_eq!(
            w,
            WaitStats {
                wait_ns: 1_000_000,
                mode: "sleep".into(),
                overshoot_mean_ns: 300.0,
                overshoot_p50_ns: 300,
                overshoot_p99_ns: 500,
                overshoot_max_ns: 500,
            }
        );
        let none = WaitStats::of(10_000, "sleep+spin 50us", Vec::new());
        assert_eq!(
            (
                none.overshoot_mean_ns,
                none.overshoot_p50_ns,
                none.overshoot_p99_ns,
                none.overshoot_max_ns
            ),
            (0.0, 0, 0, 0)
        );
    }

    #[test]
    fn the_clock_report_reads_as_a_line_the_sync_and_a_table_of_waits() {
        let report = ClockReport {
            monotonic_resolution_ns: 1,
            realtime_resolution_ns: 1,
            clock_read_ns: 20.46,
            default_timer_slack_ns: 50_000,
            waits: vec![WaitStats {
                wait_ns: 10_000,
                mode: "sleep".into(),
                overshoot_mean_ns: 1_500.0,
                overshoot_p50_ns: 1_200,
                overshoot_p99_ns: 9_000,
                overshoot_max_ns: 12_345,
            }],
            sync: SyncState::default(),
        };
        assert_eq!(
            report_text(&report),
            "timer resolution: monotonic 1 ns, realtime 1 ns; one clock read ≈ 20.5 ns; \
             timer slack 50000 ns (lowered to 1 ns for the waits below, as send does)\n\
             clock: state unknown\n\
             wait    mode  late mean µs  p50 µs  p99 µs  max µs\n\
             --------------------------------------------------\n\
             10 µs  sleep           1.5     1.2     9.0    12.3\n"
        );
    }

    fn host(name: &str) -> HostDoc {
        HostDoc {
            tool: "dualperf 0.9.0".into(),
            hostname: name.into(),
            kernel: "Linux 6.1.0".into(),
            cpus: 2,
            boot_id: None,
            clock: SyncState::default(),
            wall_unix_ns: 0,
        }
    }

    #[test]
    fn the_peer_text_names_both_hosts_then_the_offset() {
        let mut doc = PeerClockDoc {
            format_version: CLOCK_FORMAT_VERSION,
            peer: "198.18.4.2:4646".parse().unwrap(),
            local: host("here"),
            remote: host("there"),
            offset: Some(OffsetEstimate {
                offset_ns: -1_234_567,
                bound_ns: 250_000,
                delay_min_ns: 500_000,
                samples: 16,
                same_clock: false,
            }),
        };
        let hosts = "this host: here (Linux 6.1.0, dualperf 0.9.0), clock state unknown\n\
                     peer: there (Linux 6.1.0, dualperf 0.9.0), clock state unknown\n";
        assert_eq!(
            peer_text(&doc),
            format!(
                "{hosts}offset: the peer's clock reads -1.235 ms against ours, ± 0.250 ms \
                 (least round trip 0.500 ms of 16 exchanges)\n"
            )
        );
        doc.offset = Some(OffsetEstimate::same_clock());
        assert_eq!(
            peer_text(&doc),
            format!("{hosts}offset: 0 (one kernel, one clock)\n")
        );
        doc.offset = None;
        assert_eq!(
            peer_text(&doc),
            format!("{hosts}offset: unknown (no consistent exchange)\n")
        );
    }
}
