//! A router's state blocks (RFC 2209 §2): path state (PSB) per flow, reservation state
//! (RSB) per flow and next hop, and the merging of flowspecs into the one reservation
//! traffic control holds per interface, session and filter (RFC 2205 §2.2, §3.4).

use std::net::IpAddr;

use wire::rsvp::{FlowSpec, Hop, Opaque, SenderDescriptor, Service, Style, TokenBucket};
use wire::time::{Duration, Instant};

use crate::Route;

/// Path state for one flow (RFC 2209 §2.1 "Path State Block").
#[derive(Clone, Debug, PartialEq)]
pub struct Psb {
    /// The sender descriptor the Path carried (template, Tspec, ADSPEC).
    pub sender: SenderDescriptor,
    /// The previous hop, from the Path's RSVP_HOP (not the IP source, which is the
    /// sender's).
    pub phop: Hop,
    /// The interface the Path came in on.
    pub in_iface: usize,
    /// The IP source of the Path (the sender's address).
    pub ip_src: IpAddr,
    /// Where the session's destination is routed (the Path's outgoing interface), if
    /// anywhere.
    pub out: Option<Route>,
    /// The Path's Send_TTL as it arrived.
    pub send_ttl: u8,
    /// Unknown objects of class `0b11xxxxxx` (RFC 2205 §3.10) and POLICY_DATA, forwarded.
    pub forward: Vec<Opaque>,
    /// The refresh period the previous hop announced.
    pub phop_refresh: Duration,
    /// When the state times out unless refreshed.
    pub expires: Instant,
    /// The deadline of its live expiry timer.
    pub(crate) expiry_armed: Instant,
    /// The deadline of its live refresh timer.
    pub(crate) refresh_armed: Instant,
    /// The previous hop said it lost this flow's path state (ResvErr 3 or 4, e.g. after a
    /// restart): send the reservation up with the next Path from it, not a whole
    /// refresh period later (RFC 2209's Resv_Refresh_Needed).
    pub resv_refresh_needed: bool,
}

/// Reservation state of one flow from one next hop (RFC 2209 §2.2 "Resv State Block").
#[derive(Clone, Debug, PartialEq)]
pub struct Rsb {
    /// The next hop, from the Resv's RSVP_HOP.
    pub nhop: Hop,
    /// The interface the Resv came in on: the flow's outgoing interface.
    pub iface: usize,
    /// The style the Resv asked for.
    pub style: Style,
    /// The flowspec the next hop asked for.
    pub flowspec: FlowSpec,
    /// The refresh period the next hop announced.
    pub nhop_refresh: Duration,
    /// When the state times out unless refreshed.
    pub expires: Instant,
    /// The deadline of its live expiry timer.
    pub(crate) expiry_armed: Instant,
}

/// The least upper bound of two Tspecs (RFC 2210 §3.1 merging; RFC 2211 §9): the larger
/// rate, depth and peak, the smaller minimum policed unit, the larger maximum packet size.
pub fn lub_tspec(a: &TokenBucket, b: &TokenBucket) -> TokenBucket {
    TokenBucket {
        rate_bytes_per_s: a.rate_bytes_per_s.max(b.rate_bytes_per_s),
        depth_bytes: a.depth_bytes.max(b.depth_bytes),
        peak_bytes_per_s: a.peak_bytes_per_s.max(b.peak_bytes_per_s),
        min_policed_bytes: a.min_policed_bytes.min(b.min_policed_bytes),
        max_packet_bytes: a.max_packet_bytes.max(b.max_packet_bytes),
    }
}

/// The least upper bound of two flowspecs: the Tspecs' LUB; Guaranteed takes the larger
/// rate R and the smaller slack S (RFC 2212 §"Guidelines for Implementors" / merging);
/// Guaranteed with Controlled-Load merges to Guaranteed (the stronger service).
pub fn lub(a: &FlowSpec, b: &FlowSpec) -> FlowSpec {
    let service = match (a.service, b.service) {
        (Service::ControlledLoad, Service::ControlledLoad) => Service::ControlledLoad,
        (
            Service::Guaranteed {
                rate_bytes_per_s: r1,
                slack_us: s1,
            },
            Service::Guaranteed {
                rate_bytes_per_s: r2,
                slack_us: s2,
            },
        ) => Service::Guaranteed {
            rate_bytes_per_s: r1.max(r2),
            slack_us: s1.min(s2),
        },
        (g @ Service::Guaranteed { .. }, Service::ControlledLoad)
        | (Service::ControlledLoad, g @ Service::Guaranteed { .. }) => g,
    };
    FlowSpec {
        service,
        tspec: lub_tspec(&a.tspec, &b.tspec),
    }
}

/// The merged flowspec of several requests, `None` for none.
pub fn merge<'a>(specs: impl IntoIterator<Item = &'a FlowSpec>) -> Option<FlowSpec> {
    specs.into_iter().fold(None, |acc, s| match acc {
        None => Some(*s),
        Some(m) => Some(lub(&m, s)),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tb(r: f32, b: f32, p: f32, m: u32, big_m: u32) -> TokenBucket {
        TokenBucket {
            rate_bytes_per_s: r,
            depth_bytes: b,
            peak_bytes_per_s: p,
            min_policed_bytes: m,
            max_packet_bytes: big_m,
        }
    }

    #[test]
    fn merge_takes_the_least_upper_bound_of_every_parameter() {
        let cl = FlowSpec {
            service: Service::ControlledLoad,
            tspec: tb(25_000.0, 1_250.0, f32::INFINITY, 64, 1_250),
        };
        let gs1 = FlowSpec {
            service: Service::Guaranteed {
                rate_bytes_per_s: 30_000.0,
                slack_us: 500,
            },
            tspec: tb(20_000.0, 3_000.0, 40_000.0, 100, 1_500),
        };
        let gs2 = FlowSpec {
            service: Service::Guaranteed {
                rate_bytes_per_s: 50_000.0,
                slack_us: 1_000,
            },
            tspec: tb(10_000.0, 500.0, 20_000.0, 20, 576),
        };
        assert_eq!(merge([] as [&FlowSpec; 0]), None);
        assert_eq!(merge([&cl]), Some(cl));
        assert_eq!(
            merge([&gs1, &gs2]),
            Some(FlowSpec {
                service: Service::Guaranteed {
                    rate_bytes_per_s: 50_000.0,
                    slack_us: 500,
                },
                tspec: tb(20_000.0, 3_000.0, 40_000.0, 20, 1_500),
            })
        );
        // CL with GS: Guaranteed, the Tspec of both
        assert_eq!(
            merge([&cl, &gs1]),
            Some(FlowSpec {
                service: gs1.service,
                tspec: tb(25_000.0, 3_000.0, f32::INFINITY, 64, 1_500),
            })
        );
        // order does not matter
        assert_eq!(merge([&gs2, &cl, &gs1]), merge([&gs1, &gs2, &cl]));
    }
}
