//! A receiver's figures in Prometheus's text exposition format (version 0.0.4,
//! <https://prometheus.io/docs/instrumenting/exposition_formats/>), named by its
//! conventions (<https://prometheus.io/docs/practices/naming/>): base units in the name
//! (`_seconds`, `_bytes`), counters ending in `_total`, one `family="ipv4|ipv6"` label.
//!
//! What is sampled ([`ReceiverSample`], [`FlowSample`]) is built by the binary from the
//! counters and meters the receive path already keeps; this module only writes text.
//!
//! # Cardinality
//!
//! Per-flow series exist for at most `--metrics-flows` flows (open ones first, then the
//! most recently finished); every other flow is counted in its family's totals and in
//! `dualperf_flows_unexported`. A flow costs [`SERIES_PER_FLOW`] series, the receiver
//! [`RECEIVER_SERIES`]: at the default of [`DEFAULT_MAX_FLOWS`] flows, at most
//! `RECEIVER_SERIES + 16 · SERIES_PER_FLOW` = 777 series per receiver, whatever its flow
//! count (10,000 flows add nothing but their families' totals).

use std::fmt::Write;
use std::net::IpAddr;

use crate::recv::CounterSnapshot;

/// The exposition's media type.
pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// `--metrics-flows`' default: flows with series of their own.
pub const DEFAULT_MAX_FLOWS: u16 = 16;

/// The `le` bounds of the delay, RTT and |IPDV| histograms, in ns (10 µs to 2.5 s, in
/// 1–2.5–5 steps), `+Inf` after them.
pub const BUCKETS_NS: [i64; 16] = [
    10_000,
    25_000,
    50_000,
    100_000,
    250_000,
    500_000,
    1_000_000,
    2_500_000,
    5_000_000,
    10_000_000,
    25_000_000,
    50_000_000,
    100_000_000,
    250_000_000,
    1_000_000_000,
    2_500_000_000,
];

/// Series one flow adds: 9 plain ones and two histograms of `BUCKETS_NS.len() + 3`.
pub const SERIES_PER_FLOW: usize = 9 + 2 * (BUCKETS_NS.len() + 3);

/// Series the receiver has whatever its flows: 13 counters and gauges, 2 refusal
/// reasons, 5 per family.
pub const RECEIVER_SERIES: usize = 13 + 2 + 2 * 5;

/// An IP version, as the `family` label says it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Family {
    /// `family="ipv4"`.
    Ipv4,
    /// `family="ipv6"`.
    Ipv6,
}

impl Family {
    /// The family of a peer's address; an IPv4-mapped IPv6 address is IPv4.
    pub fn of(ip: IpAddr) -> Self {
        match ip.to_canonical() {
            IpAddr::V4(_) => Self::Ipv4,
            IpAddr::V6(_) => Self::Ipv6,
        }
    }

    /// The label's value.
    pub fn label(self) -> &'static str {
        match self {
            Self::Ipv4 => "ipv4",
            Self::Ipv6 => "ipv6",
        }
    }

    /// Both, in label order.
    pub const ALL: [Family; 2] = [Family::Ipv4, Family::Ipv6];
}

/// One histogram: cumulative counts at each of [`BUCKETS_NS`], the count and the sum.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct HistogramSample {
    /// Values at most each bound of [`BUCKETS_NS`] (`meter::Histogram::cumulative_counts`).
    pub cumulative: Vec<u64>,
    /// Every value (the `+Inf` bucket).
    pub count: u64,
    /// Their sum, in ns.
    pub sum_ns: i128,
}

/// One flow's figures, open or finished.
#[derive(Clone, Debug, PartialEq)]
pub struct FlowSample {
    /// The sender's address family.
    pub family: Family,
    /// The receiver's session number.
    pub session: u64,
    /// The flow's id in its session.
    pub flow: u16,
    /// The flow's label, as the sender announced it.
    pub label: String,
    /// Its session has reported: the figures are final, the run's own.
    pub finished: bool,
    /// Records received, duplicates included.
    pub packets: u64,
    /// Payload bytes of those.
    pub bytes: u64,
    /// Packets expected: the sender's count once known, else the highest sequence + 1.
    pub expected: u64,
    /// Sequence numbers below `expected` never received.
    pub lost: u64,
    /// Packets whose sequence number had already come (RFC 5560's duplicates).
    pub duplicates: u64,
    /// Reordered packets (RFC 4737 §3.3).
    pub reordered: u64,
    /// One-way delay: the receiver's arrival stamp minus the sender's (round-trip
    /// probes too: their RTT is the sender's to measure).
    pub delay: HistogramSample,
    /// |IPDV| of consecutive packets (RFC 3393; RFC 5481 §4.1).
    pub ipdv_abs: HistogramSample,
    /// RFC 3550 §6.4.1's interarrival jitter, when two packets came.
    pub rfc3550_jitter_ns: Option<f64>,
}

/// One family's totals over every flow, exported or not.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FamilyTotals {
    /// Open flows.
    pub flows_active: u64,
    /// Flows finished since the receiver started.
    pub flows_finished: u64,
    /// Records received by all of them.
    pub packets: u64,
    /// Their payload bytes.
    pub bytes: u64,
    /// Flows counted here whose own series are not exported (`--metrics-flows`).
    pub flows_unexported: u64,
}

/// The receiver's own figures.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ReceiverSample {
    /// What its counters say.
    pub counters: CounterSnapshot,
    /// Sessions open now.
    pub sessions_active: u64,
    /// Sessions finished.
    pub sessions_finished: u64,
    /// IPv4's totals, then IPv6's.
    pub families: [FamilyTotals; 2],
}

/// The exposition: the receiver's series, then each flow's.
pub fn render(r: &ReceiverSample, flows: &[FlowSample]) -> String {
    let mut out = Exposition::default();
    receiver(&mut out, r);
    flow_series(&mut out, flows);
    out.text
}

fn receiver(out: &mut Exposition, r: &ReceiverSample) {
    let c = &r.counters;
    let plain: [(&str, &str, &str, u64); 13] = [
        (
            "dualperf_datagrams_total",
            "counter",
            "UDP datagrams taken from the receiver's sockets.",
            c.datagrams,
        ),
        (
            "dualperf_malformed_datagrams_total",
            "counter",
            "Datagrams that held no valid probe.",
            c.malformed_datagrams,
        ),
        (
            "dualperf_unknown_flow_datagrams_total",
            "counter",
            "Datagrams naming no registered flow.",
            c.unknown_flow,
        ),
        (
            "dualperf_wrong_source_datagrams_total",
            "counter",
            "Datagrams from another source than their flow's sender.",
            c.wrong_source,
        ),
        (
            "dualperf_late_datagrams_total",
            "counter",
            "Datagrams that came after their flow's session had reported.",
            c.late_after_finish,
        ),
        (
            "dualperf_echo_failures_total",
            "counter",
            "Round-trip echoes the kernel refused.",
            c.echo_failures,
        ),
        (
            "dualperf_auth_failures_total",
            "counter",
            "Control connections that failed authentication.",
            c.auth_failures,
        ),
        (
            "dualperf_handshake_timeouts_total",
            "counter",
            "Control connections that did not say who they are in time.",
            c.handshake_timeouts,
        ),
        (
            "dualperf_bad_connections_total",
            "counter",
            "Connections closed for a protocol error.",
            c.bad_connections,
        ),
        (
            "dualperf_sessions_finished_total",
            "counter",
            "Sender sessions finished.",
            r.sessions_finished,
        ),
        (
            "dualperf_sessions_active",
            "gauge",
            "Sender sessions open now.",
            r.sessions_active,
        ),
        (
            "dualperf_head_only_datagrams_total",
            "counter",
            "Datagrams taken by their head only (--skip-rx-copy).",
            c.head_only_datagrams,
        ),
        (
            "dualperf_gro_datagrams_total",
            "counter",
            "Datagrams that came coalesced by UDP GRO.",
            c.gro_datagrams,
        ),
    ];
    for (name, kind, help, v) in plain {
        out.head(name, kind, help);
        out.sample(name, &[], v as f64);
    }
    let name = "dualperf_refusals_total";
    out.head(name, "counter", "Requests refused, by reason: busy (too many sessions), send (an agent's send request refused).");
    out.sample(name, &[("reason", "busy")], c.refused_busy as f64);
    out.sample(name, &[("reason", "send")], c.send_refusals as f64);
    type Pick = fn(&FamilyTotals) -> u64;
    let by_family: [(&str, &str, &str, Pick); 5] = [
        ("dualperf_flows_active", "gauge", "Flows open now.", |t| {
            t.flows_active
        }),
        (
            "dualperf_flows_finished_total",
            "counter",
            "Flows finished.",
            |t| t.flows_finished,
        ),
        (
            "dualperf_received_packets_total",
            "counter",
            "Records received by every flow, duplicates included.",
            |t| t.packets,
        ),
        (
            "dualperf_received_bytes_total",
            "counter",
            "Payload bytes of those.",
            |t| t.bytes,
        ),
        (
            "dualperf_flows_unexported",
            "gauge",
            "Flows counted in the totals without series of their own (--metrics-flows).",
            |t| t.flows_unexported,
        ),
    ];
    for (name, kind, help, pick) in by_family {
        out.head(name, kind, help);
        for (f, t) in Family::ALL.iter().zip(&r.families) {
            out.sample(name, &[("family", f.label())], pick(t) as f64);
        }
    }
}

fn flow_series(out: &mut Exposition, flows: &[FlowSample]) {
    type Pick = fn(&FlowSample) -> Option<f64>;
    let plain: [(&str, &str, &str, Pick); 9] = [
        ("dualperf_flow_received_packets_total", "counter", "Records received, duplicates included.", |f| Some(f.packets as f64)),
        ("dualperf_flow_received_bytes_total", "counter", "Payload bytes received.", |f| Some(f.bytes as f64)),
        ("dualperf_flow_expected_packets", "gauge", "Packets expected: the sender's count once the flow finished, else the highest sequence number + 1.", |f| Some(f.expected as f64)),
        ("dualperf_flow_lost_packets", "gauge", "Sequence numbers below the expected count never received (RFC 7680); falls when a late packet comes.", |f| Some(f.lost as f64)),
        ("dualperf_flow_loss_ratio", "gauge", "Lost over expected packets (0 to 1); absent while nothing is expected.", |f| (f.expected > 0).then(|| f.lost as f64 / f.expected as f64)),
        ("dualperf_flow_duplicate_packets_total", "counter", "Packets whose sequence number had already come (RFC 5560).", |f| Some(f.duplicates as f64)),
        ("dualperf_flow_reordered_packets_total", "counter", "Reordered packets (RFC 4737 section 3.3).", |f| Some(f.reordered as f64)),
        ("dualperf_flow_rfc3550_jitter_seconds", "gauge", "Interarrival jitter (RFC 3550 section 6.4.1).", |f| f.rfc3550_jitter_ns.map(|j| j / 1e9)),
        ("dualperf_flow_finished", "gauge", "1 once the flow's session reported: its figures are final, the run's own.", |f| Some(if f.finished { 1.0 } else { 0.0 })),
    ];
    for (name, kind, help, pick) in plain {
        let values: Vec<(&FlowSample, f64)> = flows
            .iter()
            .filter_map(|f| pick(f).map(|v| (f, v)))
            .collect();
        if values.is_empty() {
            continue;
        }
        out.head(name, kind, help);
        for (f, v) in values {
            out.sample(
                name,
                &flow_labels(f, &f.flow.to_string(), &f.session.to_string()),
                v,
            );
        }
    }
    type Hist = fn(&FlowSample) -> &HistogramSample;
    let hists: [(&str, &str, Hist); 2] = [
        ("dualperf_flow_one_way_delay_seconds", "One-way delay of every record (RFC 7679): the receiver's arrival stamp minus the sender's, on their two clocks.", |f| &f.delay),
        ("dualperf_flow_ipdv_abs_seconds", "|IPDV| of consecutive packets (RFC 3393, RFC 5481 section 4.1).", |f| &f.ipdv_abs),
    ];
    for (name, help, pick) in hists {
        if flows.is_empty() {
            continue;
        }
        out.head(name, "histogram", help);
        for f in flows {
            let (id, session) = (f.flow.to_string(), f.session.to_string());
            out.histogram(name, &flow_labels(f, &id, &session), pick(f));
        }
    }
}

/// A flow's labels: its family, session, id and label.
fn flow_labels<'a>(f: &'a FlowSample, id: &'a str, session: &'a str) -> [(&'a str, &'a str); 4] {
    [
        ("family", f.family.label()),
        ("session", session),
        ("flow", id),
        ("label", &f.label),
    ]
}

/// The text being written.
#[derive(Default)]
struct Exposition {
    text: String,
}

impl Exposition {
    fn head(&mut self, name: &str, kind: &str, help: &str) {
        let _ = writeln!(self.text, "# HELP {name} {}", escape(help, false));
        let _ = writeln!(self.text, "# TYPE {name} {kind}");
    }

    fn sample(&mut self, name: &str, labels: &[(&str, &str)], value: f64) {
        self.text.push_str(name);
        if !labels.is_empty() {
            self.text.push('{');
            for (i, (k, v)) in labels.iter().enumerate() {
                let sep = if i == 0 { "" } else { "," };
                let _ = write!(self.text, "{sep}{k}=\"{}\"", escape(v, true));
            }
            self.text.push('}');
        }
        let _ = writeln!(self.text, " {}", number(value));
    }

    fn histogram(&mut self, name: &str, labels: &[(&str, &str)], h: &HistogramSample) {
        let bucket = format!("{name}_bucket");
        for (bound, n) in BUCKETS_NS.iter().zip(&h.cumulative) {
            let le = number(*bound as f64 / 1e9);
            let with: Vec<(&str, &str)> = labels.iter().copied().chain([("le", &*le)]).collect();
            self.sample(&bucket, &with, *n as f64);
        }
        let with: Vec<(&str, &str)> = labels.iter().copied().chain([("le", "+Inf")]).collect();
        self.sample(&bucket, &with, h.count as f64);
        self.sample(&format!("{name}_sum"), labels, h.sum_ns as f64 / 1e9);
        self.sample(&format!("{name}_count"), labels, h.count as f64);
    }
}

/// A value as the format writes it (Go's float syntax: shortest round trip).
fn number(v: f64) -> String {
    if v.is_nan() {
        "NaN".into()
    } else if v.is_infinite() {
        if v > 0.0 { "+Inf" } else { "-Inf" }.into()
    } else {
        format!("{v}")
    }
}

/// Escapes `\` and line feeds (HELP text), and `"` too in label values.
fn escape(s: &str, label: bool) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '"' if label => out.push_str("\\\""),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flow() -> FlowSample {
        FlowSample {
            family: Family::Ipv6,
            session: 3,
            flow: 1,
            label: "voip \"a\"\\b".into(),
            finished: true,
            packets: 1_000,
            bytes: 160_000,
            expected: 1_010,
            lost: 10,
            duplicates: 0,
            reordered: 2,
            delay: HistogramSample {
                cumulative: vec![
                    0, 0, 0, 5, 990, 1_000, 1_000, 1_000, 1_000, 1_000, 1_000, 1_000, 1_000, 1_000,
                    1_000, 1_000,
                ],
                count: 1_000,
                sum_ns: 200_000_000,
            },
            ipdv_abs: HistogramSample {
                cumulative: vec![999; 16],
                count: 999,
                sum_ns: 1_998_000,
            },
            rfc3550_jitter_ns: Some(2_500.0),
        }
    }

    #[test]
    fn a_flow_writes_its_figures_with_escaped_labels_and_named_buckets() {
        let text = render(&ReceiverSample::default(), &[flow()]);
        let labels = r#"family="ipv6",session="3",flow="1",label="voip \"a\"\\b""#;
        for line in [
            format!("dualperf_flow_received_packets_total{{{labels}}} 1000"),
            format!("dualperf_flow_lost_packets{{{labels}}} 10"),
            format!("dualperf_flow_loss_ratio{{{labels}}} {}", 10.0 / 1010.0),
            format!("dualperf_flow_rfc3550_jitter_seconds{{{labels}}} 0.0000025"),
            format!("dualperf_flow_one_way_delay_seconds_bucket{{{labels},le=\"0.0001\"}} 5"),
            format!("dualperf_flow_one_way_delay_seconds_bucket{{{labels},le=\"0.00025\"}} 990"),
            format!("dualperf_flow_one_way_delay_seconds_bucket{{{labels},le=\"+Inf\"}} 1000"),
            format!("dualperf_flow_one_way_delay_seconds_sum{{{labels}}} 0.2"),
            format!("dualperf_flow_one_way_delay_seconds_count{{{labels}}} 1000"),
            format!("dualperf_flow_ipdv_abs_seconds_sum{{{labels}}} 0.001998"),
            "# TYPE dualperf_flow_one_way_delay_seconds histogram".into(),
            "# TYPE dualperf_flow_finished gauge".into(),
        ] {
            assert!(text.lines().any(|l| l == line), "{line} not in\n{text}");
        }
    }

    #[test]
    fn the_receiver_writes_its_counters_and_each_familys_totals() {
        let mut r = ReceiverSample::default();
        r.counters.auth_failures = 2;
        r.counters.refused_busy = 1;
        r.sessions_active = 1;
        r.families[1].flows_unexported = 9_984;
        let text = render(&r, &[]);
        for line in [
            "dualperf_auth_failures_total 2",
            "dualperf_sessions_active 1",
            "dualperf_refusals_total{reason=\"busy\"} 1",
            "dualperf_refusals_total{reason=\"send\"} 0",
            "dualperf_flows_unexported{family=\"ipv4\"} 0",
            "dualperf_flows_unexported{family=\"ipv6\"} 9984",
        ] {
            assert!(text.lines().any(|l| l == line), "{line} not in\n{text}");
        }
        // No flow: no flow series, and as many series as RECEIVER_SERIES says.
        assert!(!text.contains("dualperf_flow_"), "{text}");
        let series = text.lines().filter(|l| !l.starts_with('#')).count();
        assert_eq!(series, RECEIVER_SERIES);
    }

    #[test]
    fn a_flow_adds_as_many_series_as_series_per_flow_says() {
        let count = |flows: &[FlowSample]| {
            render(&ReceiverSample::default(), flows)
                .lines()
                .filter(|l| !l.starts_with('#'))
                .count()
        };
        assert_eq!(count(&[flow()]) - count(&[]), SERIES_PER_FLOW);
        // An undefined figure has no series: nothing expected, no loss ratio.
        let idle = FlowSample {
            expected: 0,
            rfc3550_jitter_ns: None,
            ..flow()
        };
        assert_eq!(count(&[idle]) - count(&[]), SERIES_PER_FLOW - 2);
    }

    #[test]
    fn family_follows_the_canonical_address() {
        assert_eq!(
            Family::of("::ffff:198.18.0.1".parse().unwrap()),
            Family::Ipv4
        );
        assert_eq!(Family::of("2001:2::1".parse().unwrap()), Family::Ipv6);
        assert_eq!(Family::of("198.18.0.1".parse().unwrap()), Family::Ipv4);
    }
}
