//! The one vocabulary of metrics: each metric's key (its name in plans, JSON and CSV),
//! title, definition, units and how its value is read from a run. Plans are checked
//! against it (`lab`), reports render with it (`report`); a new metric is one more
//! [`Metric`] here, or in a [`Vocabulary`] a caller builds with [`Vocabulary::with`].
//!
//! Every figure is one run's (`dualperf send --json`, or a lab router's counters over
//! the run), in the metric's stored unit; statistics over runs are `report`'s. "Median
//! RTT" and "mean RTT" are two metrics with two keys (`rtt_median`, `rtt`), never one
//! key with two meanings.

use std::fmt;
use std::hash::{Hash, Hasher};

use serde::{Deserialize, Serialize};
use wire::control::{Meter, Protocol};

use crate::send::{Reservation, ReservationState, SendReport};

/// The units a metric may be shown in.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Units {
    /// `(name, stored value per unit)`, smallest first; the first is the stored unit
    /// (1 per unit). Reports choose among these by the data's magnitude.
    pub ladder: &'static [(&'static str, f64)],
    /// Other spellings a plan may use, `(spelling, name)`: the papers' `Mbps`.
    pub aliases: &'static [(&'static str, &'static str)],
    /// What an error about a unit lists.
    pub choices: &'static str,
}

/// Time, stored in ns.
pub const TIME: Units = Units {
    ladder: &[("ns", 1.0), ("µs", 1e3), ("ms", 1e6), ("s", 1e9)],
    aliases: &[("us", "µs")],
    choices: "ns, µs, ms, s",
};

/// A bit rate, stored in bit/s. Case matters: `MBps` would be megabytes, a factor of
/// 8 off.
pub const BIT_RATE: Units = Units {
    ladder: &[
        ("bit/s", 1.0),
        ("kbit/s", 1e3),
        ("Mbit/s", 1e6),
        ("Gbit/s", 1e9),
    ],
    aliases: &[
        ("bps", "bit/s"),
        ("kbps", "kbit/s"),
        ("Kbps", "kbit/s"),
        ("Mbps", "Mbit/s"),
        ("mbps", "Mbit/s"),
        ("Gbps", "Gbit/s"),
        ("gbps", "Gbit/s"),
    ],
    choices: "bit/s, kbit/s, Mbit/s, Gbit/s; Kbps, Mbps",
};

/// A share, in %.
pub const PERCENT: Units = Units {
    ladder: &[("%", 1.0)],
    aliases: &[],
    choices: "%",
};

/// A count of flows.
pub const FLOWS: Units = Units {
    ladder: &[("flows", 1.0)],
    aliases: &[],
    choices: "flows",
};

/// Where a metric's per-run value comes from.
#[derive(Clone, Copy, Debug)]
pub enum Source {
    /// A flow's `dualperf send --json` (the measured flow's, or a background flow's),
    /// in the stored unit; `None` when the run has none.
    Report(fn(&SendReport) -> Option<f64>),
    /// Every flow of the run together: the sum over the measured flow's report and its
    /// background flows' ([`Metric::of_run`]) of what each gives; `None` when none
    /// gives anything.
    Run(fn(&SendReport) -> Option<f64>),
    /// A lab router's counters over the run (`r1.cpu_per_frame`): `lab` reads them.
    Router(RouterFigure),
}

/// A figure of a lab router's counters (`router::stats::CpuStats`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RouterFigure {
    /// `cpu_ns_per_frame`.
    CpuPerFrame,
    /// `qos_ns_per_frame`.
    QosPerFrame,
    /// `rsvp_ns_per_frame`.
    RsvpPerFrame,
}

/// One metric: what it is called, what it means, its units and how a run's value is
/// read. Its key is its identity: two metrics are equal when their keys are.
#[derive(Clone, Copy, Debug)]
pub struct Metric {
    /// Its name in plans, JSON and CSV: `throughput`, `rtt_median`.
    pub key: &'static str,
    /// Its name in a table heading: `Throughput`.
    pub title: &'static str,
    /// How it is measured, for a table's caption, citing its RFC or peer tool.
    pub definition: &'static str,
    /// The units it may be shown in (the first is the stored one).
    pub units: Units,
    /// The unit a table uses unless the plan names one.
    pub default_unit: &'static str,
    /// Whether its values can never be negative: everything but a one-way delay, which
    /// between two hosts carries the clock offset and may be below zero. Reports give
    /// such metrics an interval that cannot leave their range.
    pub non_negative: bool,
    /// The key of the metrics it shares a unit with on a report's page (the delays
    /// share `delay`'s); its own key when alone.
    pub family: &'static str,
    /// Keys of the metrics a table of it shows too (`delay` is `rtt` or `owd`).
    pub alike: &'static [&'static str],
    /// Where a run's value comes from.
    pub source: Source,
    /// How finely a run's value is known, as a fraction of itself: a figure read from
    /// the meter's log-linear histogram (a percentile) is within
    /// [`meter::hist::RELATIVE_ERROR`]; 0 for exact figures (sums, means, counts). The
    /// verdicts never take the spread of paired runs below what that rounding alone
    /// gives (`meter::verdict::RunsInput::resolution`).
    pub resolution: f64,
}

impl Metric {
    /// A metric read from a flow's report, with the usual defaults: never negative,
    /// alone in its unit family, alike to no other.
    pub const fn new(
        key: &'static str,
        title: &'static str,
        definition: &'static str,
        units: Units,
        default_unit: &'static str,
        read: fn(&SendReport) -> Option<f64>,
    ) -> Self {
        Self {
            key,
            title,
            definition,
            units,
            default_unit,
            non_negative: true,
            family: key,
            alike: &[],
            source: Source::Report(read),
            resolution: 0.0,
        }
    }

    /// The unit of the stored values (`ns`, `bit/s`, `%`).
    pub fn base_unit(&self) -> &'static str {
        self.units.ladder.first().map_or("", |u| u.0)
    }

    /// The unit a table uses unless the plan names one.
    pub fn default_unit(&self) -> Unit {
        Unit::parse(self, self.default_unit).unwrap_or(Unit {
            name: String::new(),
            scale: 1.0,
        })
    }

    /// Its value in a run's `dualperf send --json` report (docs/output.md), in the
    /// stored unit; `None` when the run has none, or for a router's figure.
    pub fn of(&self, report: &SendReport) -> Option<f64> {
        match self.source {
            Source::Report(read) | Source::Run(read) => read(report),
            Source::Router(_) => None,
        }
    }

    /// Its value in a run whose flows' reports are `reports`, the measured flow's
    /// first: of a [`Source::Run`] metric the sum over them (`None` when none has a
    /// value), of any other the first report's ([`Metric::of`]).
    pub fn of_run<'a>(&self, mut reports: impl Iterator<Item = &'a SendReport>) -> Option<f64> {
        match self.source {
            Source::Run(read) => reports.filter_map(read).reduce(|a, b| a + b),
            _ => self.of(reports.next()?),
        }
    }

    /// Whether it is of every flow of the run together ([`Source::Run`]).
    pub fn of_every_flow(&self) -> bool {
        matches!(self.source, Source::Run(_))
    }

    /// The router figure it is, if it is one.
    pub fn router_figure(&self) -> Option<RouterFigure> {
        match self.source {
            Source::Router(f) => Some(f),
            Source::Report(_) | Source::Run(_) => None,
        }
    }

    /// Whether a table of this metric shows what `other` shows (delay is rtt or owd).
    pub fn covers(&self, other: &Metric) -> bool {
        self == other || self.alike.contains(&other.key)
    }
}

impl PartialEq for Metric {
    fn eq(&self, other: &Self) -> bool {
        self.key == other.key
    }
}

impl Eq for Metric {}

impl Hash for Metric {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.key.hash(state);
    }
}

impl fmt::Display for Metric {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.key)
    }
}

/// Written as its key.
impl Serialize for Metric {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.key)
    }
}

/// Read by its key from the standard vocabulary; a document naming a metric of another
/// vocabulary is read by that vocabulary's [`Vocabulary::get`].
impl<'de> Deserialize<'de> for Metric {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let key = String::deserialize(d)?;
        Vocabulary::standard().get(&key).ok_or_else(|| {
            serde::de::Error::custom(format!(
                "no metric '{key}' ({})",
                Vocabulary::standard().keys()
            ))
        })
    }
}

/// The standard vocabulary's keys, each with its title, stored unit and definition.
impl schemars::JsonSchema for Metric {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Metric".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        let one_of: Vec<serde_json::Value> = STANDARD
            .iter()
            .map(|m| {
                serde_json::json!({
                    "description": format!("{} ({}): {}.", m.title, m.base_unit(), m.definition),
                    "type": "string",
                    "const": m.key,
                })
            })
            .collect();
        schemars::json_schema!({
            "description": "A metric, by its key in the vocabulary (results::metric).",
            "oneOf": one_of
        })
    }
}

/// A display unit: its name and what a stored value is divided by.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Unit {
    /// As printed: `Mbit/s`, `ms`, `%`.
    pub name: String,
    /// Stored value / scale = displayed value.
    pub scale: f64,
}

impl Unit {
    /// A unit of a metric by its name or another spelling of it (the papers' `Mbps`,
    /// printed as `Mbit/s`).
    pub fn parse(metric: &Metric, text: &str) -> Option<Self> {
        let units = &metric.units;
        let name = units
            .aliases
            .iter()
            .find(|(spelling, _)| *spelling == text)
            .map_or(text, |(_, name)| name);
        let (name, scale) = units.ladder.iter().find(|(n, _)| *n == name)?;
        Some(Self {
            name: (*name).to_owned(),
            scale: *scale,
        })
    }
}

impl fmt::Display for Unit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name)
    }
}

/// The metrics a plan may name and a report shows, in the order a report lists them.
#[derive(Clone, Debug, PartialEq)]
pub struct Vocabulary {
    metrics: Vec<Metric>,
}

impl Default for Vocabulary {
    fn default() -> Self {
        Self::standard()
    }
}

impl Vocabulary {
    /// dualperf's metrics ([`STANDARD`]).
    pub fn standard() -> Self {
        Self {
            metrics: STANDARD.to_vec(),
        }
    }

    /// The same with one more metric, listed last.
    ///
    /// # Panics
    /// When it has a metric of the same key: one key, one meaning.
    #[must_use]
    pub fn with(mut self, metric: Metric) -> Self {
        assert!(
            self.get(metric.key).is_none(),
            "the vocabulary has a metric '{}' already",
            metric.key
        );
        self.metrics.push(metric);
        self
    }

    /// The metric of a key.
    pub fn get(&self, key: &str) -> Option<Metric> {
        self.metrics.iter().find(|m| m.key == key).copied()
    }

    /// Every metric, in order.
    pub fn metrics(&self) -> &[Metric] {
        &self.metrics
    }

    /// The keys, for an error: `throughput, rtt, …`.
    pub fn keys(&self) -> String {
        self.metrics
            .iter()
            .map(|m| m.key)
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// The receiver's payload bit rate, first to last arrival: every flow of the run
/// together (`sum`, as iperf3's SUM) when it has several, so `--parallel` runs count
/// whole.
pub const THROUGHPUT: Metric = Metric::new(
    "throughput",
    "Throughput",
    "the receiver's payload bit rate, first to last arrival",
    BIT_RATE,
    "Mbit/s",
    |r| {
        if r.flows.len() > 1 {
            r.sum.received.as_ref()?.bitrate_bps
        } else {
            r.flows.first()?.received.as_ref()?.bitrate_bps
        }
    },
);

/// The mean of the first flow's per-packet round trips of the echoes (D-ITG's
/// `-m rttm`), only for a flow metered round trip.
pub const RTT: Metric = Metric {
    alike: &["delay"],
    family: "delay",
    ..Metric::new(
        "rtt",
        "Round trip time",
        "mean round trip of the echoes, the receiver's hold time taken out",
        TIME,
        "µs",
        |r| Some(r.flows.first()?.rtt.as_ref()?.delay.as_ref()?.mean_ns),
    )
};

/// The median (p50) of the first flow's round trips of the echoes, from the meter's
/// histogram within 1/128, only for a flow metered round trip.
pub const RTT_MEDIAN: Metric = Metric {
    family: "delay",
    resolution: meter::hist::RELATIVE_ERROR,
    ..Metric::new(
        "rtt_median",
        "Median round trip time",
        "median (p50, nearest rank) of the round trips (RFC 2681) of the echoes, the receiver's hold time taken out, from the meter's histogram within 1/128",
        TIME,
        "µs",
        |r| Some(r.flows.first()?.rtt.as_ref()?.delay.as_ref()?.p50_ns? as f64),
    )
};

/// The mean one-way delay at the receiver, RFC 7679's singleton per packet.
pub const OWD: Metric = Metric {
    alike: &["delay"],
    family: "delay",
    non_negative: false,
    ..Metric::new(
        "owd",
        "One-way delay",
        "mean one-way delay, receiver clock minus sender clock (RFC 7679)",
        TIME,
        "µs",
        |r| Some(r.flows.first()?.received.as_ref()?.delay.as_ref()?.mean_ns),
    )
};

/// `rtt` for a flow metered round trip, else `owd`.
pub const DELAY: Metric = Metric {
    alike: &["rtt", "owd"],
    family: "delay",
    non_negative: false,
    ..Metric::new(
        "delay",
        "Delay",
        "mean round trip for a flow metered round trip, else mean one-way delay",
        TIME,
        "µs",
        |r| Some(summary(r)?.delay.as_ref()?.mean_ns),
    )
};

/// D-ITG's jitter (ITGDec): the mean |D(i) − D(i−1)| of the delays `delay` is of.
pub const JITTER: Metric = Metric::new(
    "jitter",
    "Jitter",
    "D-ITG's mean |D(i) − D(i−1)| of consecutive delays (not RFC 3550's EWMA)",
    TIME,
    "µs",
    |r| summary(r)?.jitter.ditg_ns,
);

/// The receiver's lost share of the sent packets, RFC 7680 (the sender's count is the
/// total).
pub const LOSS: Metric = Metric::new(
    "loss",
    "Packet loss",
    "packets the receiver never saw, % of those sent (RFC 7680)",
    PERCENT,
    "%",
    |r| r.flows.first()?.received.as_ref()?.loss.loss_pct,
);

/// RFC 3550 §6.4.1's J (EWMA gain 1/16) after the last packet, as iperf reports it.
pub const JITTER_RFC3550: Metric = Metric {
    family: "jitter",
    ..Metric::new(
        "jitter_rfc3550",
        "Jitter (RFC 3550)",
        "RFC 3550 §6.4.1 interarrival jitter J (gain 1/16) after the last packet, as iperf reports it",
        TIME,
        "µs",
        |r| summary(r)?.jitter.rfc3550_ns,
    )
};

/// The H.323 study's (Bouras et al.) data-link rate of a UDP flow: payload rate ×
/// (payload + headers) / payload, headers UDP 8 + IPv4 20 or IPv6 40 + Ethernet 14 (no
/// FCS, as a capture).
pub const FRAME_THROUGHPUT: Metric = Metric::new(
    "frame_throughput",
    "Frame throughput",
    "the UDP throughput counting each datagram's UDP, IP (20 or 40 B) and Ethernet (14 B) headers, as a capture on the link counts it",
    BIT_RATE,
    "Mbit/s",
    frame_throughput,
);

/// A lab router's CPU time per frame it received over the run (`r1.cpu_per_frame`).
pub const CPU_PER_FRAME: Metric = Metric {
    source: Source::Router(RouterFigure::CpuPerFrame),
    ..Metric::new(
        "cpu_per_frame",
        "CPU time per frame",
        "the router thread's CPU time (CLOCK_THREAD_CPUTIME_ID) in loop turns that handled frames, over the frames it received: its whole cost per frame, kernel receive and send included, as the WebAudio thesis (RSVP with flow labels) measures a router's processing load",
        TIME,
        "µs",
        |_| None,
    )
};

/// A lab router's time inside its service policies per frame (`r1.qos_per_frame`).
pub const QOS_PER_FRAME: Metric = Metric {
    source: Source::Router(RouterFigure::QosPerFrame),
    ..Metric::new(
        "qos_per_frame",
        "QoS time per frame",
        "the router's time inside its service policy (classification with reservation lookup, marking, policing, queueing) per frame it offered the policy, by the monotonic clock",
        TIME,
        "µs",
        |_| None,
    )
};

/// A lab router's signalling time per frame (`r1.rsvp_per_frame`).
pub const RSVP_PER_FRAME: Metric = Metric {
    source: Source::Router(RouterFigure::RsvpPerFrame),
    ..Metric::new(
        "rsvp_per_frame",
        "RSVP time per frame",
        "the router's time in RSVP (RFC 2205: parsing messages, path and reservation soft state, admission, installs, refresh timers, building what it sends) over the frames it received, by the monotonic clock: signalling's cost per frame, beside qos_per_frame's classification",
        TIME,
        "µs",
        |_| None,
    )
};

/// The measured flow's reservation setup time (`send --reserve`).
pub const SETUP_LATENCY: Metric = Metric::new(
    "setup_latency",
    "Reservation setup latency",
    "the measured flow's first RSVP Path sent to the first Resv received at the sender (RFC 2205 §3.1): every RSVP hop has admitted and installed the reservation by then",
    TIME,
    "ms",
    |r| Some(r.flows.first()?.reservation.as_ref()?.setup_ns? as f64),
);

/// Flows of the run whose reservation was set up (`send --reserve`).
pub const ADMITTED: Metric = Metric {
    source: Source::Run(|r| reservations(r, |v| v.setup_ns.is_some())),
    ..Metric::new(
        "admitted",
        "Reservations admitted",
        "flows of the run, the measured one and those beside it, whose RSVP reservation was set up: a Resv reached the sender, so every hop admitted it (RFC 2205)",
        FLOWS,
        "flows",
        |_| None,
    )
};

/// Flows of the run whose reservation a node refused (`send --reserve`).
pub const REFUSED: Metric = Metric {
    source: Source::Run(|r| reservations(r, |v| v.state == ReservationState::Refused)),
    ..Metric::new(
        "refused",
        "Reservations refused",
        "flows of the run, the measured one and those beside it, whose RSVP reservation a node refused with a ResvErr (RFC 2205 §3.1.7, reported by the receiver): they ran best effort",
        FLOWS,
        "flows",
        |_| None,
    )
};

/// dualperf's metrics, in the order a report lists them.
pub const STANDARD: [Metric; 15] = [
    THROUGHPUT,
    RTT,
    RTT_MEDIAN,
    OWD,
    DELAY,
    JITTER,
    LOSS,
    JITTER_RFC3550,
    FRAME_THROUGHPUT,
    CPU_PER_FRAME,
    QOS_PER_FRAME,
    RSVP_PER_FRAME,
    SETUP_LATENCY,
    ADMITTED,
    REFUSED,
];

/// How many of a report's flows with a reservation `count` counts; `None` when no flow
/// asked for one.
fn reservations(r: &SendReport, count: fn(&Reservation) -> bool) -> Option<f64> {
    let asked: Vec<&Reservation> = r
        .flows
        .iter()
        .filter_map(|f| f.reservation.as_ref())
        .collect();
    (!asked.is_empty()).then(|| asked.iter().filter(|v| count(v)).count() as f64)
}

/// The first flow's summary the delays are of: its echoes' when metered round trip,
/// else the receiver's. Never one for the other.
fn summary(r: &SendReport) -> Option<&meter::FlowSummary> {
    let flow = r.flows.first()?;
    if flow.spec.meter == Meter::Rtt {
        flow.rtt.as_ref()
    } else {
        flow.received.as_ref()
    }
}

fn frame_throughput(report: &SendReport) -> Option<f64> {
    let flow = report.flows.first()?;
    if flow.spec.protocol != Protocol::Udp {
        return None;
    }
    let r = flow.received.as_ref()?;
    let (bytes, packets) = (r.bytes as f64, r.packets as f64);
    let ip = if report.dest.is_ipv6() { 40.0 } else { 20.0 };
    (bytes > 0.0).then(|| {
        r.bitrate_bps
            .map(|b| b * (bytes + packets * (8.0 + ip + 14.0)) / bytes)
    })?
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_unit_is_read_by_its_name_or_the_papers_spelling_of_it() {
        let unit = |m: &Metric, text: &str| Unit::parse(m, text).map(|u| (u.name, u.scale));
        assert_eq!(unit(&THROUGHPUT, "Mbps"), Some(("Mbit/s".into(), 1e6)));
        assert_eq!(unit(&THROUGHPUT, "Kbps"), Some(("kbit/s".into(), 1e3)));
        assert_eq!(
            unit(&THROUGHPUT, "MBps"),
            None,
            "megabytes are not megabits"
        );
        assert_eq!(unit(&RTT, "us"), Some(("µs".into(), 1e3)));
        assert_eq!(unit(&RTT, "Mbit/s"), None);
        assert_eq!(unit(&LOSS, "%"), Some(("%".into(), 1.0)));
        assert_eq!(
            (RTT.base_unit(), LOSS.base_unit(), THROUGHPUT.base_unit()),
            ("ns", "%", "bit/s")
        );
        assert_eq!(RTT_MEDIAN.default_unit().name, "µs");
    }

    #[test]
    fn every_key_has_one_meaning_and_the_vocabulary_grows_by_one_metric() {
        let standard = Vocabulary::standard();
        let mut keys: Vec<&str> = standard.metrics().iter().map(|m| m.key).collect();
        keys.sort_unstable();
        keys.dedup();
        assert_eq!(keys.len(), STANDARD.len());
        assert_ne!(RTT, RTT_MEDIAN);
        assert_ne!(RTT.title, RTT_MEDIAN.title, "two metrics, two names");
        assert_eq!(
            standard.keys(),
            "throughput, rtt, rtt_median, owd, delay, jitter, loss, jitter_rfc3550, \
             frame_throughput, cpu_per_frame, qos_per_frame, rsvp_per_frame, setup_latency, \
             admitted, refused"
        );
        let count = Units {
            ladder: &[("packets", 1.0)],
            aliases: &[],
            choices: "packets",
        };
        let sent = Metric::new(
            "sent_packets",
            "Sent packets",
            "sent",
            count,
            "packets",
            |r| Some(r.flows.first()?.sent.packets as f64),
        );
        let more = standard.clone().with(sent);
        assert_eq!(more.metrics().len(), STANDARD.len() + 1);
        assert_eq!(
            more.get("sent_packets").map(|m| m.title),
            Some("Sent packets")
        );
        assert_eq!(standard.get("sent_packets"), None);
        let again = std::panic::catch_unwind(|| Vocabulary::standard().with(RTT));
        assert!(again.is_err(), "a second 'rtt' is refused");
    }

    #[test]
    fn a_metric_is_written_and_read_by_its_key() {
        assert_eq!(
            serde_json::to_string(&RTT_MEDIAN).unwrap(),
            "\"rtt_median\""
        );
        let m: Metric = serde_json::from_str("\"jitter_rfc3550\"").unwrap();
        assert_eq!(m.title, "Jitter (RFC 3550)");
        let e = serde_json::from_str::<Metric>("\"speed\"").unwrap_err();
        assert!(e.to_string().contains("no metric 'speed'"), "{e}");
    }
}
