//! What `dualperf recv --json` prints: one line per finished flow, then the receiver's
//! counters (docs/output.md).

use std::net::IpAddr;

use meter::FlowSummary;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use wire::control::{Meter, Protocol};

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
