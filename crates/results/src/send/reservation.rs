//! A flow's signalled reservation (`send --reserve`, RSVP of RFC 2205 with the IntServ
//! services of RFC 2211 and RFC 2212): what the sender saw, merged with what the
//! receiver reported ([`wire::control::ReservationSeen`]), and its line of text.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use wire::control::{Refusal, ReserveService};

use crate::human;

/// Where a flow's reservation stood when its data stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ReservationState {
    /// A Resv reached the sender and was refreshed within its lifetime.
    Reserved,
    /// A node on the path refused it (ResvErr, reported by the receiver); the flow ran
    /// best effort.
    Refused,
    /// No Resv reached the sender, and no refusal was reported.
    Pending,
    /// Reserved, then torn down (ResvTear) or not refreshed within its lifetime.
    Torn,
}

/// How routers tell the flow's packets: the FILTER_SPEC of its Resv.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum FilterKind {
    /// IPv6 source address and flow label (C-Type 3, RFC 2205 A.9).
    #[serde(rename = "flow-label")]
    FlowLabel,
    /// Source address and port (C-Type 1 for IPv4, 2 for IPv6) with the session's
    /// destination, protocol and port.
    #[serde(rename = "5-tuple")]
    FiveTuple,
}

/// One flow's reservation, in the send report.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Reservation {
    /// The IntServ service asked for.
    pub service: ReserveService,
    /// The reservation style the receiver asks: always "FF" (fixed filter, one
    /// reservation per sender).
    pub style: String,
    /// How the flow's packets are classified.
    pub filter: FilterKind,
    /// The Tspec's token rate r (RFC 2210): IP bytes per second while the flow sends.
    pub rate_bytes_per_s: f64,
    /// The Tspec's bucket depth b, bytes.
    pub burst_bytes: u64,
    /// The sender's first Path → the first Resv at the sender: every hop has installed
    /// the reservation by then. `None` without a Resv.
    pub setup_ns: Option<u64>,
    /// Path refreshes sent after the first Path.
    pub refreshes_sent: u64,
    /// Resv messages that reached the sender (the first and its refreshes).
    pub resv_received: u64,
    /// Where it stood when the flow's data stopped.
    pub state: ReservationState,
    /// The refusal the receiver reported (RFC 2205 sends ResvErr to the receiver).
    pub refused: Option<Refusal>,
    /// The receiver got a ResvConf (`None`: the receiver did not report).
    #[serde(default)]
    pub confirmed: Option<bool>,
    /// Resv messages the receiver sent (`None`: the receiver did not report).
    #[serde(default)]
    pub resv_sent_by_receiver: Option<u64>,
    /// Why the reservation could not be signalled (the receiver had no raw socket).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

impl Reservation {
    /// The line `dualperf send` prints for flow `id`.
    pub fn text(&self, id: u16) -> String {
        let asked = format!(
            "{}, {}",
            self.service.name(),
            human::bitrate(self.rate_bytes_per_s * 8.0)
        );
        let setup = self.setup_ns.map(|ns| human::duration(ns as f64));
        let line = match (self.state, &self.refused, setup) {
            (ReservationState::Refused, Some(r), _) => format!(
                "refused by {}: {} (code {}, value {})",
                r.node,
                error_text(r.code, r.value),
                r.code,
                r.value
            ),
            (ReservationState::Reserved, _, Some(s)) => format!("reserved in {s} ({asked})"),
            (ReservationState::Torn, _, Some(s)) => {
                format!("reserved in {s} ({asked}), then torn down or timed out")
            }
            _ => match &self.error {
                Some(e) => format!("not reserved ({asked}): {e}"),
                None => format!("not reserved ({asked}): no Resv reached the sender"),
            },
        };
        format!("flow {id}: {line}\n")
    }
}

/// An ERROR_SPEC's code and value in words (RFC 2205 Appendix B; code 24 is RFC 3209's).
pub fn error_text(code: u8, value: u16) -> String {
    let what = match code {
        0 => "confirmation",
        1 => "admission control failure",
        2 => "policy control failure",
        3 => "no path information for this Resv",
        4 => "no sender information for this Resv",
        5 => "conflicting reservation style",
        6 => "unknown reservation style",
        7 => "conflicting destination ports",
        8 => "conflicting sender ports",
        12 => "service preempted",
        13 => "unknown object class",
        14 => "unknown object C-Type",
        21 => "traffic control error",
        22 => "traffic control system error",
        23 => "RSVP system error",
        24 => "routing problem",
        _ => return format!("error code {code}"),
    };
    let detail = match (code, value) {
        (1, 1) => Some("delay bound cannot be met"),
        (1, 2) => Some("requested bandwidth unavailable"),
        (1, 3) => Some("MTU in flowspec larger than interface MTU"),
        (21, 1) => Some("service conflict"),
        (21, 2) => Some("service unsupported"),
        (21, 3) => Some("bad flowspec value"),
        (21, 4) => Some("bad Tspec value"),
        (21, 5) => Some("bad Adspec value"),
        (24, 5) => Some("no route available toward destination"),
        _ => None,
    };
    match detail {
        Some(d) => format!("{what}, {d}"),
        None => what.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reserved() -> Reservation {
        Reservation {
            service: ReserveService::ControlledLoad,
            style: "FF".into(),
            filter: FilterKind::FlowLabel,
            rate_bytes_per_s: 25_000.0,
            burst_bytes: 1_298,
            setup_ns: Some(1_800_000),
            refreshes_sent: 3,
            resv_received: 4,
            state: ReservationState::Reserved,
            refused: None,
            confirmed: Some(true),
            resv_sent_by_receiver: Some(4),
            error: None,
        }
    }

    #[test]
    fn each_state_says_what_happened_in_one_line() {
        let r = reserved();
        assert_eq!(
            r.text(0),
            "flow 0: reserved in 1.80 ms (controlled-load, 200 kbit/s)\n"
        );
        let refused = Reservation {
            setup_ns: None,
            resv_received: 0,
            state: ReservationState::Refused,
            refused: Some(Refusal {
                code: 1,
                value: 2,
                node: "198.18.3.1".parse().unwrap(),
            }),
            ..reserved()
        };
        assert_eq!(
            refused.text(2),
            "flow 2: refused by 198.18.3.1: admission control failure, requested bandwidth unavailable (code 1, value 2)\n"
        );
        let pending = Reservation {
            setup_ns: None,
            state: ReservationState::Pending,
            error: Some("the receiver cannot signal: no CAP_NET_RAW".into()),
            ..reserved()
        };
        assert_eq!(
            pending.text(1),
            "flow 1: not reserved (controlled-load, 200 kbit/s): the receiver cannot signal: no CAP_NET_RAW\n"
        );
    }

    #[test]
    fn filters_and_states_are_spelled_as_documented() {
        let v = serde_json::to_value(reserved()).unwrap();
        assert_eq!(v["filter"], "flow-label");
        assert_eq!(v["state"], "reserved");
        assert_eq!(v["service"], "controlled-load");
        assert!(v.get("error").is_none());
        let five = serde_json::to_value(FilterKind::FiveTuple).unwrap();
        assert_eq!(five, "5-tuple");
        assert_eq!(
            error_text(24, 5),
            "routing problem, no route available toward destination"
        );
        assert_eq!(error_text(99, 0), "error code 99");
    }
}
