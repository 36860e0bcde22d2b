//! The router's stats document: what `dualperf route --stats FILE` writes every 500 ms,
//! at once on SIGUSR1, and at exit (and prints to stderr at exit without `--stats`),
//! and what `dualperf lab status` and a lab run's record read back. Fields are
//! described in docs/output.md.
//!
//! The driver fills these from the forwarder, the egress links and policies, its rings
//! and its threads; nothing here reads a clock.

use qos::hist::Summary;
use qos::link::{LinkParams, LinkStats};
use qos::policy::{ClassStats, ReservationStats};
use serde::{Deserialize, Serialize};

use crate::forward::IfaceStats;

/// The stats document's format version.
pub const FORMAT_VERSION: u32 = 1;

/// The whole stats file.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct RouterStats {
    /// [`FORMAT_VERSION`].
    pub format_version: u32,
    /// Time since the router started, ns.
    pub uptime_ns: u64,
    /// Snapshots taken because SIGUSR1 asked (a caller waits for it to grow, so it knows
    /// the file it reads was taken after its signal).
    pub usr1_answered: u64,
    /// What became of the QoS file's reloads.
    pub qos: QosReloads,
    /// The router's cost per frame.
    pub cpu: CpuStats,
    /// How the forwarding loop ran: the record that shows a stall.
    #[serde(rename = "loop")]
    pub looped: LoopStats,
    /// The writer thread's hand-over counters.
    pub writer: WriterStats,
    /// Per interface, in configuration order.
    pub interfaces: Vec<InterfaceStats>,
    /// The router's RSVP (its QoS file has `[rsvp]`); absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rsvp: Option<RsvpStats>,
}

/// The router's RSVP (RFC 2205): the engine's counters, with what the router's glue
/// counts and each interface's reservable bandwidth.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct RsvpStats {
    /// R, the refresh period the router announces, ms.
    pub refresh_ms: u64,
    /// K: refreshes that may be lost in a row before state times out.
    pub keep: u32,
    /// The engine's counters: messages in and out by type, states, admissions and
    /// refusals by error code, timeouts, tears, refreshes.
    #[serde(flatten)]
    pub engine: ::rsvp::Stats,
    /// Packets handed over as RSVP whose IP headers held no RSVP message to read.
    #[serde(default)]
    pub not_rsvp: u64,
    /// Messages the engine sent that could not be framed (no route or neighbour for the
    /// next hop, larger than the MTU): lost.
    #[serde(default)]
    pub unsent: u64,
    /// Per interface, in configuration order: what reservations may take and take now.
    #[serde(default)]
    pub interfaces: Vec<RsvpInterfaceStats>,
}

/// One interface's reservable bandwidth and the reservations against it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct RsvpInterfaceStats {
    /// Kernel interface name.
    pub name: String,
    /// `rsvp_bandwidth`, bit/s; `null`: reservations are admitted without installing.
    pub reservable_bps: Option<u64>,
    /// The rates of the reservations installed now, bit/s.
    pub reserved_bps: u64,
    /// Reservations installed now in the interface's policy.
    pub reservations: u64,
    /// Reservations admitted now without installing (no `rsvp_bandwidth`).
    pub unmanaged: u64,
}

/// One interface: what arrived (the forwarder's view) and what left (the egress
/// link's and policy's view).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct InterfaceStats {
    /// Kernel interface name.
    pub name: String,
    /// The MAC the router answers to on it.
    pub mac: String,
    /// The forwarder's counters for frames received on it.
    pub ingress: IfaceStats,
    /// The egress link's counters, with its queueing delay percentiles.
    pub egress: LinkStats,
    /// The egress link's parameters (a policy's tx-ring replaces the queue limit).
    pub egress_link: LinkParams,
    /// The service policy on the egress; `null` without one.
    pub qos: Option<PolicyStats>,
    /// What the driver counts beyond the forwarder and the link.
    pub io: IoStats,
    /// Frames dropped because the kernel marked their TX slot `TP_STATUS_WRONG_FORMAT`.
    pub tx_wrong_format: u64,
}

/// A service policy's counters.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct PolicyStats {
    /// The policy-map's name.
    pub policy: String,
    /// Per class, in match order.
    pub classes: Vec<ClassStats>,
    /// Per reservation table.
    pub reservations: Vec<ReservationStats>,
}

/// What became of the QoS file's reloads (SIGUSR2; SIGHUP, like SIGINT and SIGTERM, stops
/// the router).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct QosReloads {
    /// Reloads that took effect (each restarts every egress's counters).
    pub reloads: u64,
    /// Reloads refused (the file did not read); the policies before stayed.
    pub refused: u64,
    /// Why the last reload was refused, until one takes effect.
    pub error: Option<String>,
}

/// What the driver counts per interface beyond the forwarder and the link.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct IoStats {
    /// Sends that found the TX ring full (the frame waited for the next try).
    pub tx_ring_full: u64,
    /// Frames dropped because too many were already waiting for the TX ring.
    pub tx_backlog_drops: u64,
    /// Frames received truncated (longer than a ring slot): dropped.
    pub rx_truncated: u64,
    /// Frames the kernel dropped for lack of room in the RX ring (running total).
    pub kernel_rx_drops: u64,
    /// Socket errors (the interface went down, …); the router carries on.
    pub io_errors: u64,
}

/// How the loop itself ran: the record that shows a stall. A turn is the work from one
/// look at the rings to the next (receive, forward, send, counters); a gap is the time
/// between the starts of two turns when the loop did not choose to sleep or yield in
/// between (a long turn, or the thread preempted while busy-polling). A reload's turn
/// is not counted: the counters start afresh after it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct LoopStats {
    /// Turns that handled at least one frame or wrote the counters.
    pub busy_turns: u64,
    /// Turns that found nothing (busy-polling).
    pub idle_turns: u64,
    /// Sleeps in ppoll.
    pub sleeps: u64,
    /// Yields while polling with nothing to do: while another task on this CPU could
    /// run, it ran then (the loop's choice, so no gap spans a yield;
    /// `involuntary_switches` and `runqueue_wait_ns` do count them).
    pub yields: u64,
    /// The time spent in those yields, ns.
    pub yield_ns: u64,
    /// The longest busy turn, ns.
    pub max_turn_ns: u64,
    /// The longest gap between the starts of two turns with no sleep between, ns.
    pub max_gap_ns: u64,
    /// Busy turns longer than 1 ms.
    pub turns_over_1ms: u64,
    /// Gaps longer than 1 ms.
    pub gaps_over_1ms: u64,
    /// Busy turn durations' percentiles, ns.
    pub turn_ns: Summary,
    /// Times another task took the forwarding thread's CPU while it could run
    /// (`nonvoluntary_ctxt_switches`); `null` where the kernel does not tell.
    pub involuntary_switches: Option<u64>,
    /// How long the forwarding thread waited for a CPU in all, ns
    /// (`/proc/thread-self/schedstat`); `null` where the kernel does not tell.
    pub runqueue_wait_ns: Option<u64>,
}

/// The router's cost per frame, as the WebAudio thesis (RSVP with flow labels) measures a router's processing load.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct CpuStats {
    /// Time of the forwarding thread in turns that handled frames (receive, forward,
    /// classify, queue, send), ns, by the monotonic clock. Busy-polling that finds
    /// nothing and sleeps are left out.
    pub busy_ns: u64,
    /// All the thread's CPU time (CLOCK_THREAD_CPUTIME_ID, user + system), idle polling
    /// and counters included, ns.
    pub thread_cpu_ns: u64,
    /// Frames received on every interface.
    pub frames: u64,
    /// `busy_ns / frames`; `null` before the first frame.
    pub cpu_ns_per_frame: Option<f64>,
    /// Time spent inside service policies' enqueue (classification, reservations,
    /// marking, policing, WRED, queueing), ns.
    pub qos_ns: u64,
    /// Frames offered to service policies.
    pub qos_frames: u64,
    /// `qos_ns / qos_frames`: a policy's cost per frame; `null` without a policy.
    pub qos_ns_per_frame: Option<f64>,
    /// Time spent in RSVP (messages and timers: parsing, soft state, admission, installs,
    /// building what it sends), ns; absent without RSVP.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub rsvp_ns: u64,
    /// RSVP messages received; absent without any.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub rsvp_messages: u64,
    /// `rsvp_ns / rsvp_messages`; absent without a message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rsvp_ns_per_message: Option<f64>,
    /// `rsvp_ns / frames`: signalling's cost per frame received; absent without RSVP.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rsvp_ns_per_frame: Option<f64>,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// The counters of the hand-over to the writer thread, in the stats file as `writer`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct WriterStats {
    /// Stats files written (each replaces the last, whole).
    pub stats_writes: u64,
    /// Writes that failed (the error went to the log).
    pub stats_write_failures: u64,
    /// The longest a stats write took, ns: how long the disk made the writer wait,
    /// while forwarding went on.
    pub max_stats_write_ns: u64,
    /// Snapshots replaced by a newer one before the writer could take them.
    pub stats_superseded: u64,
    /// Frames not captured because the writer was behind (the pcap misses them; the
    /// frames themselves were forwarded).
    pub pcap_dropped: u64,
    /// Log lines lost the same way.
    pub log_dropped: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc() -> RouterStats {
        let iface = |name: &str, qos| InterfaceStats {
            name: name.into(),
            mac: "02:64:70:00:01:02".into(),
            ingress: IfaceStats::default(),
            egress: LinkStats::default(),
            egress_link: LinkParams::default(),
            qos,
            io: IoStats::default(),
            tx_wrong_format: 0,
        };
        RouterStats {
            format_version: FORMAT_VERSION,
            uptime_ns: 1_500_000_000,
            usr1_answered: 2,
            qos: QosReloads::default(),
            cpu: CpuStats {
                frames: 4,
                busy_ns: 10,
                cpu_ns_per_frame: Some(2.5),
                ..CpuStats::default()
            },
            looped: LoopStats::default(),
            writer: WriterStats::default(),
            interfaces: vec![
                iface("to-sender", None),
                iface(
                    "to-r2",
                    Some(PolicyStats {
                        policy: "bouras".into(),
                        classes: vec![ClassStats::default()],
                        reservations: vec![ReservationStats::default()],
                    }),
                ),
            ],
            rsvp: None,
        }
    }

    #[test]
    fn the_document_has_the_stats_file_keys_and_reads_back() {
        let d = doc();
        let v = serde_json::to_value(&d).unwrap();
        let keys = |v: &serde_json::Value| {
            let mut k: Vec<String> = v.as_object().unwrap().keys().cloned().collect();
            k.sort();
            k.join(",")
        };
        assert_eq!(
            keys(&v),
            "cpu,format_version,interfaces,loop,qos,uptime_ns,usr1_answered,writer"
        );
        assert_eq!(
            keys(&v["interfaces"][0]),
            "egress,egress_link,ingress,io,mac,name,qos,tx_wrong_format"
        );
        assert!(v["interfaces"][0]["qos"].is_null());
        assert_eq!(
            keys(&v["interfaces"][1]["qos"]),
            "classes,policy,reservations"
        );
        assert!(v["qos"]["error"].is_null());
        assert!(v["cpu"]["qos_ns_per_frame"].is_null());
        assert!(v["cpu"]["cpu_ns_per_frame"].is_f64());
        assert!(v["loop"]["involuntary_switches"].is_null());
        assert!(v["loop"]["turn_ns"]["p99_ns"].is_null());
        assert_eq!(v["format_version"], 1);
        let back: RouterStats = serde_json::from_value(v).unwrap();
        assert_eq!(back, d);
    }

    #[test]
    fn stats_files_written_before_the_types_existed_read_back_unchanged() {
        // Two routers' final stats, written by the route command when it still built
        // the document with json! (a 5-tuple reservation policy; a WRED policy).
        for text in [
            include_str!("../testdata/r1.stats.json"),
            include_str!("../testdata/r2.stats.json"),
        ] {
            let file: serde_json::Value = serde_json::from_str(text).unwrap();
            let typed: RouterStats = serde_json::from_str(text).unwrap();
            assert_eq!(serde_json::to_value(&typed).unwrap(), file);
            assert_eq!(serde_json::to_string_pretty(&file).unwrap(), text);
        }
    }
}
