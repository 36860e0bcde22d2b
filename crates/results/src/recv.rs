//! What `dualperf recv --json` prints: one line per finished flow, then the receiver's
//! counters (docs/output.md).

use std::net::IpAddr;

use meter::FlowSummary;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use wire::control::{FlowResult, Meter, Protocol};

use crate::human;

mod flow;

pub use flow::{Datagrams, FlowOrigin, FlowState, WindowBudget};

/// One line of `recv --json`: `{"type": "flow", "data": …}` as each flow ends, and
/// `{"type": "counters", "data": …}` last.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
#[serde(tag = "type", content = "data", rename_all = "lowercase")]
pub enum RecvLine {
    /// A finished flow.
    Flow(Box<FlowReport>),
    /// The receiver's counters, when it exits.
    Counters(CounterSnapshot),
}

/// Read through a JSON value: serde's buffering of tagged content cannot read the
/// report's maps keyed by numbers (`marking.dscp_seen`: `{"46": 1000}`).
impl<'de> Deserialize<'de> for RecvLine {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        let mut line = serde_json::Value::deserialize(d)?;
        let data = line
            .get_mut("data")
            .map(serde_json::Value::take)
            .ok_or_else(|| D::Error::missing_field("data"))?;
        match line.get("type").and_then(serde_json::Value::as_str) {
            Some("flow") => serde_json::from_value(data).map(Self::Flow),
            Some("counters") => serde_json::from_value(data).map(Self::Counters),
            Some(other) => return Err(D::Error::unknown_variant(other, &["flow", "counters"])),
            None => return Err(D::Error::missing_field("type")),
        }
        .map_err(D::Error::custom)
    }
}

/// One finished flow, as the receiver reports it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct FlowReport {
    /// The flow's id in its session.
    pub id: u16,
    /// The control session it belonged to.
    pub session: u64,
    /// The sender's address.
    pub peer: IpAddr,
    /// Transport.
    pub protocol: Protocol,
    /// One-way or round trip.
    pub meter: Meter,
    /// The sender's label of the flow.
    pub label: String,
    /// Packets the sender says it sent; `None` if it did not say.
    pub sent_packets: Option<u64>,
    /// Malformed packets of this flow.
    pub malformed: u64,
    /// The one-way figures ([`meter::summarize`]).
    pub summary: FlowSummary,
    /// For RTP flows: the RFC 3550 jitter against the RTP timestamps.
    pub rtp: Option<meter::RtpJitterSummary>,
    /// The series the sender asked for, in windows from the flow's first arrival.
    pub intervals: Option<Vec<meter::Interval>>,
    /// Why the series asked for is missing.
    pub intervals_error: Option<String>,
    /// Records of this flow that the receiver's `--log` could not take (the disk did not
    /// keep up, or the file failed): they are measured here but missing from the log.
    /// `None` without `--log`.
    #[serde(default)]
    pub unlogged_records: Option<u64>,
    /// The sender asked for it (`send --cdf`): the smallest one-way delay, then its
    /// percentiles 1 to 100 ([`meter::FlowMeter::delay_cdf_ns`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delay_cdf_ns: Option<Vec<i64>>,
    /// With `send -O/--omit`: what was left out of the figures (the warm-up), by the
    /// probes' transmit timestamps (docs/output.md, "Omitted warm-up").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub omitted: Option<wire::control::Omitted>,
}

impl FlowReport {
    /// The flow's line of `recv`'s text output, with its newline.
    pub fn text(&self) -> String {
        let s = &self.summary;
        let label = if self.label.is_empty() {
            String::new()
        } else {
            format!(", {}", self.label)
        };
        if self.protocol == Protocol::Tcp {
            // TCP carries messages, a write each, in order and whole: their bytes count.
            let lost = match s.loss.lost {
                0 => String::new(),
                n => format!(", {n} lost"),
            };
            return format!(
                "flow {} from {} (tcp/{}{label}): {} in {} messages{lost}, {}, delay mean {}\n",
                self.id,
                self.peer,
                format!("{:?}", self.meter).to_lowercase(),
                human::bytes(s.bytes),
                s.packets,
                human::or_missing(s.bitrate_bps, human::bitrate),
                human::or_missing(s.delay.as_ref().map(|d| d.mean_ns), human::duration),
            );
        }
        format!(
            "flow {} from {} ({:?}/{:?}{label}): {} packets, {} lost ({} %), {} dup, {} reordered, {} bit/s, delay mean {}\n",
            self.id,
            self.peer,
            self.protocol,
            self.meter,
            s.packets,
            s.loss.lost,
            s.loss.loss_pct.map_or("-".into(), |p| format!("{p:.3}")),
            s.loss.duplicates,
            s.loss.reordered,
            s.bitrate_bps.map_or("-".into(), |b| format!("{b:.0}")),
            s.delay.as_ref().map_or("-".into(), |d| format!("{:.1} µs", d.mean_ns / 1e3)),
        )
    }

    /// The flow's report as the sender receives it: its figures serialised from where
    /// they are, with no copy or tree of JSON values.
    pub fn result(
        &self,
    ) -> FlowResult<&FlowSummary, &meter::RtpJitterSummary, &Vec<meter::Interval>> {
        FlowResult {
            id: self.id,
            summary: &self.summary,
            malformed: self.malformed,
            rtp: self.rtp.as_ref(),
            intervals: self.intervals.as_ref(),
            intervals_error: self.intervals_error.clone(),
            delay_cdf_ns: self.delay_cdf_ns.clone(),
            omitted: self.omitted,
            reservation: None,
        }
    }
}

/// The receiver's counters of what it could not attribute to a flow, or refused.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct CounterSnapshot {
    /// UDP datagrams received.
    pub datagrams: u64,
    /// Datagrams that were not a valid probe.
    pub malformed_datagrams: u64,
    /// Probes of no registered flow.
    pub unknown_flow: u64,
    /// Probes from another address than their flow's sender.
    pub wrong_source: u64,
    /// Connections closed for a protocol error.
    pub bad_connections: u64,
    /// Senders that failed to prove the shared key.
    pub auth_failures: u64,
    /// Control connections that did not finish their handshake in time.
    pub handshake_timeouts: u64,
    /// Packets of a flow that arrived after its session had reported.
    pub late_after_finish: u64,
    /// Echoes the kernel refused to send.
    pub echo_failures: u64,
    /// Connections turned away at once because too many others were still in their
    /// handshake (a flood of junk connections cannot take every thread).
    #[serde(default)]
    pub refused_busy: u64,
    /// Requests to send (an agent's `--reverse`, `--bidir`, `--from`) refused: by a plain
    /// receiver, or by an agent's `--allow` and caps.
    #[serde(default)]
    pub send_refusals: u64,
    /// Receive buffers that held several datagrams coalesced by the kernel (UDP GRO,
    /// `recv` without `--no-gro`), and the datagrams they held (counted in `datagrams`
    /// too). Datagrams that arrive together share one arrival time.
    #[serde(default)]
    pub gro_buffers: u64,
    /// See `gro_buffers`.
    #[serde(default)]
    pub gro_datagrams: u64,
    /// Datagrams taken by their head alone (`recv --skip-rx-copy`; counted in `datagrams`
    /// too): their length came from the kernel (`MSG_TRUNC`), the payload after the head
    /// was not copied.
    #[serde(default)]
    pub head_only_datagrams: u64,
    /// The STAMP reflector's counters (`recv --stamp`); `None` without one.
    #[serde(default)]
    pub stamp: Option<StampCounters>,
}

impl CounterSnapshot {
    /// The counters' lines of `recv`'s text output, each with its newline: the
    /// receiver's, then the STAMP reflector's if there is one.
    pub fn text(&self) -> String {
        let c = self;
        let mut text = format!(
            "dualperf recv: {} datagrams; dropped: {} malformed, {} unknown flow, {} wrong source, {} late; {} bad connections, {} failed authentications, {} handshake timeouts, {} turned away busy; {} echoes failed; {} requests to send refused\n",
            c.datagrams, c.malformed_datagrams, c.unknown_flow, c.wrong_source, c.late_after_finish, c.bad_connections, c.auth_failures, c.handshake_timeouts, c.refused_busy, c.echo_failures, c.send_refusals
        );
        if let Some(s) = &c.stamp {
            text += &format!(
                "dualperf recv: STAMP reflector: {} reflected; not answered: {} malformed, {} failed authentication, {} not allowed, {} over --stamp-max-pps; {} replies failed\n",
                s.reflected, s.malformed, s.auth_failures, s.not_allowed, s.rate_limited, s.send_failures
            );
        }
        text
    }
}

/// What the STAMP Session-Reflector of `recv --stamp` did.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct StampCounters {
    /// Test packets answered.
    pub reflected: u64,
    /// Test packets too short or not STAMP (RFC 8762 §4.2), not answered.
    pub malformed: u64,
    /// Authenticated test packets whose HMAC did not verify (RFC 8762 §4.4).
    pub auth_failures: u64,
    /// Test packets from senders outside `--stamp-allow`.
    pub not_allowed: u64,
    /// Test packets over a sender's `--stamp-max-pps`.
    pub rate_limited: u64,
    /// Answers the kernel refused to send.
    pub send_failures: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Flow 7 of 198.18.0.1, `protocol`, labelled `label`: datagrams 0, 1 and 3 of
    /// four, 64 bytes, 1 ms apart, each 100 µs on its way.
    fn report(protocol: Protocol, label: &str) -> FlowReport {
        let announce = wire::control::FlowAnnounce {
            protocol,
            label: label.into(),
            ..Default::default()
        };
        let mut state = FlowState::new(7, &announce, 10);
        for seq in [0u32, 1, 3] {
            let tx_ns = 1_000_000_000 + u64::from(seq) * 1_000_000;
            let record = meter::RxRecord {
                size_bytes: 64,
                tx_ns,
                rx_ns: tx_ns + 100_000,
                ..Default::default()
            };
            let d = Datagrams { seq, n: 1, record };
            state.handle_datagrams(&d, 0, None::<fn(&meter::RxRecord)>);
        }
        let origin = FlowOrigin {
            id: 7,
            session: 1,
            peer: "198.18.0.1".parse().unwrap(),
            announce: &announce,
        };
        state.report(&origin, Some(4), false, &mut WindowBudget::new(10))
    }

    #[test]
    fn a_flow_reads_as_one_line() {
        assert_eq!(
            report(Protocol::Udp, "").text(),
            "flow 7 from 198.18.0.1 (Udp/Owd): 3 packets, 1 lost (25.000 %), 0 dup, 0 reordered, 512000 bit/s, delay mean 100.0 µs\n"
        );
        assert_eq!(
            report(Protocol::Udp, "voice").text(),
            "flow 7 from 198.18.0.1 (Udp/Owd, voice): 3 packets, 1 lost (25.000 %), 0 dup, 0 reordered, 512000 bit/s, delay mean 100.0 µs\n"
        );
        assert_eq!(
            report(Protocol::Tcp, "bulk").text(),
            "flow 7 from 198.18.0.1 (tcp/owd, bulk): 192 B in 3 messages, 1 lost, 512 kbit/s, delay mean 100 µs\n"
        );
        let mut whole = report(Protocol::Tcp, "");
        whole.summary.loss.lost = 0;
        (whole.summary.bitrate_bps, whole.summary.delay) = (None, None);
        assert_eq!(
            whole.text(),
            "flow 7 from 198.18.0.1 (tcp/owd): 192 B in 3 messages, -, delay mean -\n"
        );
        let mut empty = report(Protocol::Udp, "");
        empty.summary.loss.loss_pct = None;
        (empty.summary.bitrate_bps, empty.summary.delay) = (None, None);
        assert_eq!(
            empty.text(),
            "flow 7 from 198.18.0.1 (Udp/Owd): 3 packets, 1 lost (- %), 0 dup, 0 reordered, - bit/s, delay mean -\n"
        );
    }

    #[test]
    fn a_flow_result_holds_the_report_figures() {
        let r = report(Protocol::Udp, "voice");
        let result = r.result();
        assert_eq!((result.id, result.malformed), (7, 0));
        assert!(std::ptr::eq(result.summary, &r.summary));
        assert_eq!(
            serde_json::to_value(&result).unwrap(),
            serde_json::json!({
                "id": 7,
                "summary": serde_json::to_value(&r.summary).unwrap(),
                "malformed": 0,
                "rtp": null,
                "intervals": null,
                "intervals_error": null,
            })
        );
    }

    #[test]
    fn the_counters_read_as_a_line_and_the_reflector_s_as_another() {
        let mut c = CounterSnapshot {
            datagrams: 100,
            malformed_datagrams: 1,
            unknown_flow: 2,
            wrong_source: 3,
            bad_connections: 4,
            auth_failures: 5,
            handshake_timeouts: 6,
            late_after_finish: 7,
            echo_failures: 8,
            refused_busy: 9,
            send_refusals: 10,
            ..CounterSnapshot::default()
        };
        let receiver = "dualperf recv: 100 datagrams; dropped: 1 malformed, 2 unknown flow, 3 wrong source, 7 late; 4 bad connections, 5 failed authentications, 6 handshake timeouts, 9 turned away busy; 8 echoes failed; 10 requests to send refused\n";
        assert_eq!(c.text(), receiver);
        c.stamp = Some(StampCounters {
            reflected: 20,
            malformed: 1,
            auth_failures: 2,
            not_allowed: 3,
            rate_limited: 4,
            send_failures: 5,
        });
        assert_eq!(
            c.text(),
            format!("{receiver}dualperf recv: STAMP reflector: 20 reflected; not answered: 1 malformed, 2 failed authentication, 3 not allowed, 4 over --stamp-max-pps; 5 replies failed\n")
        );
    }

    #[test]
    fn lines_read_back_whatever_their_key_order() {
        let counters = RecvLine::Counters(CounterSnapshot {
            datagrams: 7,
            ..CounterSnapshot::default()
        });
        let text = serde_json::to_string(&counters).unwrap();
        assert_eq!(serde_json::from_str::<RecvLine>(&text).unwrap(), counters);
        let reversed = r#"{"data": {"datagrams": 7, "malformed_datagrams": 0, "unknown_flow": 0,
            "wrong_source": 0, "bad_connections": 0, "auth_failures": 0, "handshake_timeouts": 0,
            "late_after_finish": 0, "echo_failures": 0}, "type": "counters"}"#;
        assert_eq!(
            serde_json::from_str::<RecvLine>(reversed).unwrap(),
            counters
        );
        for bad in [
            r#"{"type": "x", "data": {}}"#,
            r#"{"data": {}}"#,
            r#"{"type": "flow"}"#,
        ] {
            assert!(serde_json::from_str::<RecvLine>(bad).is_err(), "{bad}");
        }
    }
}
