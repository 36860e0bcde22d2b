//! Traffic control for RSVP (RFC 2205 §1, §2.2): what the engine's [`Env`] asks of the
//! router, answered over the forwarder's routes and the egress policies.
//!
//! - **Route**: the longest-prefix route's interface and the router's address on it, of
//!   the destination's family.
//! - **Admit**: on an interface with an `rsvp_bandwidth` (its *reservable* bandwidth,
//!   IOS's `ip rsvp bandwidth`), a merged reservation is admitted while the reservations
//!   there take no more than that: `reserved − old + new ≤ reservable`, each counted at
//!   its flowspec's rate (the token rate r, bytes/s × 8 for bit/s; Guaranteed service
//!   reserves its Rspec rate R, RFC 2212, if higher). Admitted, it is installed with
//!   [`Policy::reserve`] in the first signalled table of the interface's policy whose key
//!   fits the filter (FILTER_SPEC C-Type 3: a flow-label table, keyed by source,
//!   destination and label; C-Type 1 or 2: the 5-tuple of source and port with the
//!   session's destination, protocol and port; an IPv4 5-tuple fits a flow-label table
//!   too, which keys IPv4 by its 5-tuple). Refusals carry RFC 2205 Appendix B codes:
//!   - (1, 2) Admission Control failure, requested bandwidth unavailable: over the budget;
//!   - (1, 3) Admission Control failure, MTU in flowspec larger than interface MTU;
//!   - (1, 0x8001) Admission Control failure with an organization-specific sub-code
//!     (ss = 10, sub-code 1): the table holds its `max_flows` (resources unavailable,
//!     not a service the router lacks);
//!   - (21, 2) Traffic Control Error, service unsupported: no signalled table can hold
//!     the filter (an IPv6 5-tuple where only flow-label tables are, say);
//!   - (21, 3) Traffic Control Error, bad flowspec value: a rate that is not a positive
//!     finite number, a negative or infinite depth.
//! - An interface without `rsvp_bandwidth` admits every reservation and installs nothing
//!   (a transit router with room to spare): counted `unmanaged`.
//! - **Release** removes what admit installed and gives its rate back.

use std::collections::HashMap;
use std::net::IpAddr;

use ::rsvp::{Env, ErrorSpecCode, Route};
use qos::classify::FlowKey;
use qos::policy::ReserveError;
use wire::rsvp::{code, FilterSpec, FlowSpec, Service, Session};
use wire::time::Instant;

use crate::egress::Egress;
use crate::forward::Forwarder;

/// Admission Control failure, organization-specific sub-code 1 (ss = 10): the
/// reservation table is full.
pub const ADMISSION_TABLE_FULL: u16 = 0x8001;
/// Admission Control failure sub-code 3: MTU in flowspec larger than interface MTU.
pub const ADMISSION_MTU: u16 = 3;

/// One interface's reservable bandwidth and what reservations take of it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Budget {
    /// `rsvp_bandwidth`, bit/s; `None`: reservations are admitted without installing.
    pub reservable_bps: Option<u64>,
    /// The rates of the reservations installed now, bit/s.
    pub reserved_bps: u64,
    /// Reservations installed now.
    pub reservations: u64,
    /// Reservations admitted now without installing (no `rsvp_bandwidth`).
    pub unmanaged: u64,
}

/// What admit did for one (interface, session, filter).
#[derive(Clone, Copy, Debug)]
struct Held {
    /// The rate counted against the budget, bit/s.
    bps: u64,
    /// The table and key it is installed under; `None`: admitted unmanaged.
    installed: Option<(usize, FlowKey)>,
}

/// The budgets and what is held against them.
#[derive(Debug, Default)]
pub(super) struct Tc {
    pub(super) budgets: Vec<Budget>,
    held: HashMap<(usize, Session, FilterSpec), Held>,
}

impl Tc {
    /// Budgets of `reservable` bit/s per interface (`None`: unmanaged), nothing held.
    pub(super) fn new(reservable: &[Option<u64>]) -> Self {
        Self {
            budgets: reservable
                .iter()
                .map(|&r| Budget {
                    reservable_bps: r,
                    ..Budget::default()
                })
                .collect(),
            held: HashMap::new(),
        }
    }

    fn forget(&mut self, iface: usize, held: Held) {
        let b = &mut self.budgets[iface];
        match held.installed {
            Some(_) => {
                b.reserved_bps = b.reserved_bps.saturating_sub(held.bps);
                b.reservations = b.reservations.saturating_sub(1);
            }
            None => b.unmanaged = b.unmanaged.saturating_sub(1),
        }
    }

    fn admit(
        &mut self,
        at: (usize, &Session, &FilterSpec),
        new: &FlowSpec,
        mtu: u32,
        egress: &mut [Egress],
        now: Instant,
    ) -> Result<(), ErrorSpecCode> {
        let (iface, session, filter) = at;
        let key = (iface, *session, *filter);
        let old = self.held.get(&key).copied();
        let Some(budget) = self.budgets.get(iface) else {
            return Err((code::TRAFFIC_CONTROL_SYSTEM, 0));
        };
        let Some(reservable) = budget.reservable_bps else {
            if old.is_none() {
                self.budgets[iface].unmanaged += 1;
                let held = Held {
                    bps: 0,
                    installed: None,
                };
                self.held.insert(key, held);
            }
            return Ok(());
        };
        let bad = (code::TRAFFIC_CONTROL, code::TC_BAD_FLOWSPEC);
        let bps = rate_bps(new).ok_or(bad)?;
        let burst = burst_bytes(new).ok_or(bad)?;
        if new.tspec.max_packet_bytes > mtu {
            return Err((code::ADMISSION, ADMISSION_MTU));
        }
        let old_bps = old.and_then(|h| h.installed.map(|_| h.bps)).unwrap_or(0);
        if budget
            .reserved_bps
            .saturating_sub(old_bps)
            .saturating_add(bps)
            > reservable
        {
            return Err((code::ADMISSION, code::ADMISSION_BANDWIDTH));
        }
        let unsupported = (code::TRAFFIC_CONTROL, code::TC_SERVICE_UNSUPPORTED);
        let flow = flow_key(session, filter).ok_or(unsupported)?;
        let Some(Egress::Policy(policy)) = egress.get_mut(iface) else {
            return Err(unsupported);
        };
        let table = match old.and_then(|h| h.installed) {
            Some((t, _)) => t,
            None => policy.signalled_table_for(&flow).ok_or(unsupported)?,
        };
        policy
            .reserve(table, flow, bps, burst, now)
            .map_err(|e| match e {
                ReserveError::Full => (code::ADMISSION, ADMISSION_TABLE_FULL),
                _ => unsupported,
            })?;
        if let Some(h) = old {
            self.forget(iface, h);
        }
        let b = &mut self.budgets[iface];
        b.reserved_bps += bps;
        b.reservations += 1;
        let installed = Some((table, flow));
        self.held.insert(key, Held { bps, installed });
        Ok(())
    }

    fn release(
        &mut self,
        iface: usize,
        session: &Session,
        filter: &FilterSpec,
        egress: &mut [Egress],
    ) {
        let Some(held) = self.held.remove(&(iface, *session, *filter)) else {
            return;
        };
        if let (Some((table, key)), Some(Egress::Policy(p))) =
            (held.installed, egress.get_mut(iface))
        {
            p.release(table, &key);
        }
        self.forget(iface, held);
    }
}

/// The rate a flowspec reserves, bit/s: the token rate r (bytes/s × 8), or for
/// Guaranteed service its Rspec rate R when higher (RFC 2212 §3). `None` unless a
/// positive finite number.
pub fn rate_bps(spec: &FlowSpec) -> Option<u64> {
    let mut r = f64::from(spec.tspec.rate_bytes_per_s);
    if let Service::Guaranteed {
        rate_bytes_per_s, ..
    } = spec.service
    {
        r = r.max(f64::from(rate_bytes_per_s));
    }
    (r.is_finite() && r > 0.0).then(|| (r * 8.0).round() as u64)
}

/// The token bucket depth b of a flowspec, bytes (rounded up); `None` when negative or
/// not finite.
pub fn burst_bytes(spec: &FlowSpec) -> Option<u64> {
    let b = f64::from(spec.tspec.depth_bytes);
    (b.is_finite() && b >= 0.0).then(|| b.ceil() as u64)
}

/// The key under which a reservation table finds the packets of `filter`'s flow in
/// `session` (RFC 2205 A.1, A.9): the flow-label 3-tuple for C-Type 3, else the 5-tuple.
/// `None` when no packet carries it (a flow label with an IPv4 session, a protocol
/// without ports, a zero label).
pub fn flow_key(session: &Session, filter: &FilterSpec) -> Option<FlowKey> {
    let (src, port) = match *filter {
        FilterSpec::FlowLabel { src, flow_label } => {
            let IpAddr::V6(dst) = session.dst else {
                return None;
            };
            return FlowKey::for_label(src, dst, flow_label);
        }
        FilterSpec::V4 { src, src_port } => (IpAddr::V4(src), src_port),
        FilterSpec::V6 { src, src_port } => (IpAddr::V6(src), src_port),
    };
    FlowKey::for_5tuple(src, port, session.dst, session.protocol, session.dst_port)
}

/// The engine's surroundings for one call: routes from the forwarder, admission against
/// the budgets, installs into the egress policies at `now`.
pub(super) struct Surroundings<'a> {
    pub(super) tc: &'a mut Tc,
    pub(super) fwd: &'a Forwarder,
    pub(super) egress: &'a mut [Egress],
    pub(super) now: Instant,
}

impl Env for Surroundings<'_> {
    fn route(&self, dst: IpAddr) -> Option<Route> {
        let r = self.fwd.lookup(dst)?;
        let f = self.fwd.interfaces().get(r.iface)?;
        let local = match dst {
            IpAddr::V4(_) => IpAddr::V4(f.ipv4?.0),
            IpAddr::V6(_) => IpAddr::V6(f.ipv6?.0),
        };
        Some(Route {
            iface: r.iface,
            local,
        })
    }

    fn admit(
        &mut self,
        iface: usize,
        session: &Session,
        filter: &FilterSpec,
        new: &FlowSpec,
        _old: Option<&FlowSpec>,
    ) -> Result<(), ErrorSpecCode> {
        let mtu = self
            .fwd
            .interfaces()
            .get(iface)
            .map_or(0, |f| match session.dst {
                IpAddr::V4(_) => f.mtu,
                IpAddr::V6(_) => f.ipv6_mtu(),
            });
        self.tc
            .admit((iface, session, filter), new, mtu, self.egress, self.now)
    }

    fn release(&mut self, iface: usize, session: &Session, filter: &FilterSpec) {
        self.tc.release(iface, session, filter, self.egress);
    }
}

#[cfg(test)]
mod tests {
    use std::net::{Ipv4Addr, Ipv6Addr};

    use wire::rsvp::TokenBucket;

    use super::*;

    fn spec(service: Service, rate: f32, depth: f32) -> FlowSpec {
        FlowSpec {
            service,
            tspec: TokenBucket {
                rate_bytes_per_s: rate,
                depth_bytes: depth,
                peak_bytes_per_s: f32::INFINITY,
                min_policed_bytes: 64,
                max_packet_bytes: 1500,
            },
        }
    }

    #[test]
    fn a_flowspec_reserves_its_token_rate_in_bits_or_a_higher_guaranteed_rate() {
        let cl = spec(Service::ControlledLoad, 25_000.0, 1_300.5);
        assert_eq!(
            (rate_bps(&cl), burst_bytes(&cl)),
            (Some(200_000), Some(1_301))
        );
        let gs = |r| {
            spec(
                Service::Guaranteed {
                    rate_bytes_per_s: r,
                    slack_us: 0,
                },
                25_000.0,
                1_300.0,
            )
        };
        assert_eq!(rate_bps(&gs(50_000.0)), Some(400_000));
        assert_eq!(rate_bps(&gs(10_000.0)), Some(200_000));
        for bad in [0.0, -1.0, f32::NAN, f32::INFINITY] {
            assert_eq!(rate_bps(&spec(Service::ControlledLoad, bad, 1.0)), None);
        }
        assert_eq!(burst_bytes(&spec(Service::ControlledLoad, 1.0, -1.0)), None);
        assert_eq!(
            burst_bytes(&spec(Service::ControlledLoad, 1.0, f32::INFINITY)),
            None
        );
    }

    #[test]
    fn a_filter_is_keyed_as_its_packets_are_in_a_reservation_table() {
        let v6 = |s: &str| s.parse::<Ipv6Addr>().unwrap();
        let session = |dst: IpAddr| Session {
            dst,
            protocol: 17,
            flags: 0,
            dst_port: 5001,
        };
        let s6 = session(IpAddr::V6(v6("2001:2:0:4::2")));
        let label = FilterSpec::FlowLabel {
            src: v6("2001:2:0:1::2"),
            flow_label: 0x12345,
        };
        assert_eq!(
            flow_key(&s6, &label),
            Some(FlowKey::Label(
                v6("2001:2:0:1::2"),
                v6("2001:2:0:4::2"),
                0x12345
            ))
        );
        let port = FilterSpec::V6 {
            src: v6("2001:2:0:1::2"),
            src_port: 4000,
        };
        assert_eq!(
            flow_key(&s6, &port),
            Some(FlowKey::V6(
                v6("2001:2:0:1::2"),
                v6("2001:2:0:4::2"),
                17,
                4000,
                5001
            ))
        );
        let a = Ipv4Addr::new(198, 18, 1, 2);
        let s4 = session(IpAddr::V4(Ipv4Addr::new(198, 18, 4, 2)));
        let f4 = FilterSpec::V4 {
            src: a,
            src_port: 4000,
        };
        assert_eq!(
            flow_key(&s4, &f4),
            Some(FlowKey::V4(a, Ipv4Addr::new(198, 18, 4, 2), 17, 4000, 5001))
        );
        // A flow label with an IPv4 session, or a zero label: no packet has it.
        assert_eq!(flow_key(&s4, &label), None);
        let zero = FilterSpec::FlowLabel {
            src: v6("2001:2:0:1::2"),
            flow_label: 0,
        };
        assert_eq!(flow_key(&s6, &zero), None);
    }
}
