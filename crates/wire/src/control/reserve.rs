//! Signalled reservations (RSVP, RFC 2205) on the control channel: what a sender asks
//! of the receiver for a flow in its `Register` ([`ReserveRequest`]), and what the
//! receiver saw of that flow's reservation, in its `Results` ([`ReservationSeen`]).
//!
//! RFC 2205 sends ResvErr and ResvConf downstream, to the receiver (§3.1.5, §3.1.8): a
//! sender learns of a refusal only through the receiver, which is what
//! [`ReservationSeen::refused`] carries back. Both fields are optional and read as
//! absent by a peer that predates them, so a receiver that knows nothing of RSVP never
//! answers a Path, and a sender that asks nothing is never answered.

use std::net::IpAddr;

use serde::{Deserialize, Serialize};

/// The IntServ service a flow's reservation asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum ReserveService {
    /// Controlled-Load (RFC 2211): the flowspec is the sender's Tspec.
    ControlledLoad,
    /// Guaranteed (RFC 2212): the Tspec with the Rspec R = r, S = 0.
    Guaranteed,
}

impl ReserveService {
    /// The name as the command line and the reports spell it.
    pub fn name(self) -> &'static str {
        match self {
            Self::ControlledLoad => "controlled-load",
            Self::Guaranteed => "guaranteed",
        }
    }
}

/// A sender's request, in its authenticated `Register`, that the receiver answer the
/// flow's RSVP Path with a Resv (`send --reserve`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ReserveRequest {
    /// The service to reserve.
    pub service: ReserveService,
}

/// An ERROR_SPEC that refused a reservation (RFC 2205 Appendix B): code 1 value 2 is
/// "Admission Control failure: requested bandwidth unavailable".
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Refusal {
    /// Error Code.
    pub code: u8,
    /// Error Value.
    pub value: u16,
    /// The node that refused (the ERROR_SPEC's Error Node Address).
    pub node: IpAddr,
}

/// What the receiver saw of one flow's reservation.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ReservationSeen {
    /// Resv messages it sent for the flow (the first and its refreshes).
    pub resv_sent: u64,
    /// A ResvConf came back: every hop up to the sender installed the reservation.
    #[serde(default)]
    pub confirmed: bool,
    /// The last ResvErr for the flow, unless a ResvConf came after it.
    #[serde(default)]
    pub refused: Option<Refusal>,
    /// Why the receiver could not signal at all (no raw socket without `CAP_NET_RAW`):
    /// the flow ran unreserved.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn services_are_spelled_as_on_the_command_line() {
        let r = ReserveRequest {
            service: ReserveService::ControlledLoad,
        };
        assert_eq!(
            serde_json::to_string(&r).unwrap(),
            r#"{"service":"controlled-load"}"#
        );
        let g: ReserveRequest = serde_json::from_str(r#"{"service":"guaranteed"}"#).unwrap();
        assert_eq!(g.service, ReserveService::Guaranteed);
        assert_eq!(g.service.name(), "guaranteed");
        assert!(serde_json::from_str::<ReserveRequest>(r#"{"service":"best-effort"}"#).is_err());
    }

    #[test]
    fn a_view_without_its_optional_fields_reads() {
        let seen: ReservationSeen = serde_json::from_str(r#"{"resv_sent":3}"#).unwrap();
        assert_eq!(
            seen,
            ReservationSeen {
                resv_sent: 3,
                ..ReservationSeen::default()
            }
        );
        let refused = ReservationSeen {
            resv_sent: 1,
            confirmed: false,
            refused: Some(Refusal {
                code: 1,
                value: 2,
                node: "198.18.3.1".parse().unwrap(),
            }),
            error: None,
        };
        let text = serde_json::to_string(&refused).unwrap();
        assert_eq!(
            text,
            r#"{"resv_sent":1,"confirmed":false,"refused":{"code":1,"value":2,"node":"198.18.3.1"}}"#
        );
        assert_eq!(
            serde_json::from_str::<ReservationSeen>(&text).unwrap(),
            refused
        );
    }
}
