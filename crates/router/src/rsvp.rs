//! RSVP at the router: the soft-state engine ([`::rsvp::Router`], RFC 2205 and RFC 2209)
//! joined to the forwarder and the egress policies.
//!
//! With `[rsvp]` in the QoS file ([`RsvpSetup`]), the forwarder hands the router every
//! RSVP message for it ([`crate::forward::Action::Signal`]: Path and PathTear by their
//! Router Alert, Resv and the errors by their destination). [`RsvpRouter::handle_signal`]
//! reads the IP header (IPv4 options or the IPv6 Hop-by-Hop header, [`wire::alert`]),
//! parses the message ([`Message::parse`]; a malformed one is counted, and answered when
//! RFC 2205 §3.10 says so) and hands it to the engine; [`RsvpRouter::handle_timeout`] fires
//! its refresh and lifetime timers. What the engine sends is built into IP packets (with
//! Router Alert for Path and PathTear) and framed by the forwarder for the next hop
//! ([`Forwarder::route_packet`], [`Forwarder::frame_for_neighbor`]): the frames are the
//! driver's to send.
//!
//! The engine asks its surroundings through [`::rsvp::Env`], answered by [`tc`]: routes,
//! and admission against each interface's `rsvp_bandwidth` with installs into the
//! policy's signalled reservation table ([`qos::policy::Policy::reserve`]).
//!
//! A reload of the QoS file replaces every egress, and with them every installed flow:
//! [`RsvpRouter::reloaded`] keeps the soft state and installs every admitted reservation
//! again into the new policies, against the new budgets (refused ones get ResvErr from the
//! engine). The refresh period and K stay those the router started with.

use std::net::IpAddr;

use ::rsvp::{Config, Router, Transmit};
use wire::rsvp::{Message, PROTOCOL};
use wire::time::Instant;
use wire::{alert, ipv4, ipv6};

use crate::config::CheckedConfig;
use crate::egress::{self, Egress, EgressError, QosFile};
use crate::forward::{Forwarder, Output};
use crate::qosconf::{QosConfig, RsvpParams};
use crate::stats::{RsvpInterfaceStats, RsvpStats};

pub mod tc;

pub use tc::Budget;

/// The QoS file's RSVP part for this router: its timers and each interface's reservable
/// bandwidth.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RsvpSetup {
    /// `[rsvp]`: R and K.
    pub params: RsvpParams,
    /// Each interface's `rsvp_bandwidth` in bit/s, in configuration order; `None`:
    /// reservations there are admitted without installing.
    pub reservable_bps: Vec<Option<u64>>,
}

impl RsvpSetup {
    /// The RSVP part of the checked QoS file `q` (named `file`) for the router `cfg`;
    /// `None` without `[rsvp]`.
    pub fn from_qos(
        cfg: &CheckedConfig,
        q: &QosConfig,
        file: &str,
    ) -> Result<Option<Self>, EgressError> {
        let Some(params) = q.rsvp() else {
            return Ok(None);
        };
        let reservable_bps = cfg
            .names
            .iter()
            .zip(&cfg.links)
            .map(|(name, link)| q.rsvp_bandwidth_bps(name, link.rate_bps))
            .collect::<Result<_, _>>()
            .map_err(|source| EgressError::Qos {
                file: file.to_owned(),
                source,
            })?;
        Ok(Some(Self {
            params,
            reservable_bps,
        }))
    }
}

/// What a QoS file builds: each interface's egress and the RSVP setup.
#[derive(Debug)]
pub struct Built {
    /// Each interface's egress ([`Egress::build`]).
    pub egress: Vec<Egress>,
    /// `Some` when the file has `[rsvp]`.
    pub rsvp: Option<RsvpSetup>,
}

/// Each interface's egress and the RSVP setup from the QoS file `qos` (if any), read once;
/// policies start at `now`.
pub fn build(
    cfg: &CheckedConfig,
    qos: Option<QosFile<'_>>,
    now: Instant,
) -> Result<Built, EgressError> {
    let Some(f) = qos else {
        return Ok(Built {
            egress: Egress::build(cfg, None, now)?,
            rsvp: None,
        });
    };
    let q = egress::read(cfg, f)?;
    Ok(Built {
        egress: Egress::build_from(cfg, Some((&q, f.name)), now)?,
        rsvp: RsvpSetup::from_qos(cfg, &q, f.name)?,
    })
}

/// The router's RSVP: the engine, the budgets, and what could not be handled.
#[derive(Debug)]
pub struct RsvpRouter {
    engine: Router,
    params: RsvpParams,
    tc: tc::Tc,
    /// Signals whose IP packet held no RSVP message to read.
    not_rsvp: u64,
    /// Messages the engine sent that could not be framed (no route or neighbour).
    unsent: u64,
    /// Transmits wait (after a reload) though no timer is due.
    waiting: bool,
}

impl RsvpRouter {
    /// An RSVP router with no state, as `setup` says; `seed` seeds its refresh jitter.
    pub fn new(setup: &RsvpSetup, seed: u64) -> Self {
        let config = Config {
            refresh: setup.params.refresh,
            keep: setup.params.keep,
            seed,
        };
        Self {
            engine: Router::new(config),
            params: setup.params,
            tc: tc::Tc::new(&setup.reservable_bps),
            not_rsvp: 0,
            unsent: 0,
            waiting: false,
        }
    }

    /// The RSVP message in the IP `packet` received on `iface` at `now`: handed to the
    /// engine, and the frames it sends in answer pushed onto `out`.
    pub fn handle_signal(
        &mut self,
        now: Instant,
        iface: usize,
        packet: &[u8],
        fwd: &Forwarder,
        egress: &mut [Egress],
        out: &mut Vec<Output>,
    ) {
        let Some((src, dst, payload)) = rsvp_payload(packet) else {
            self.not_rsvp += 1;
            return;
        };
        let mut env = tc::Surroundings {
            tc: &mut self.tc,
            fwd,
            egress,
            now,
        };
        match Message::parse(payload) {
            Ok(msg) => self
                .engine
                .handle_message(now, iface, src, dst, msg, &mut env),
            Err(e) => self
                .engine
                .handle_parse_error(iface, dst, &e, payload, &env),
        }
        self.drain(fwd, out);
    }

    /// Whether [`RsvpRouter::handle_timeout`] has work at `now`: a timer due, or messages
    /// waiting since a reload.
    pub fn due(&self, now: Instant) -> bool {
        self.waiting || self.engine.poll_timeout().is_some_and(|t| t <= now)
    }

    /// Fire the timers due at `now` (at most [`::rsvp::MAX_FIRINGS`] per call; the rest
    /// on the next) and push the frames to send onto `out`.
    pub fn handle_timeout(
        &mut self,
        now: Instant,
        fwd: &Forwarder,
        egress: &mut [Egress],
        out: &mut Vec<Output>,
    ) {
        let mut env = tc::Surroundings {
            tc: &mut self.tc,
            fwd,
            egress,
            now,
        };
        self.engine.handle_timeout(now, &mut env);
        self.waiting = false;
        self.drain(fwd, out);
    }

    /// When [`RsvpRouter::handle_timeout`] should run next.
    pub fn poll_timeout(&self) -> Option<Instant> {
        if self.waiting {
            return Some(Instant::ZERO);
        }
        self.engine.poll_timeout()
    }

    /// A reload replaced every egress with `egress` (policies empty) and `setup` gives
    /// the budgets now: every reservation the engine holds is admitted and installed
    /// again, oldest first; refused ones are dropped with ResvErr (sent at the next
    /// [`RsvpRouter::handle_timeout`], which [`RsvpRouter::due`] asks for at once). R and
    /// K stay as the router started.
    pub fn reloaded(
        &mut self,
        setup: &RsvpSetup,
        fwd: &Forwarder,
        egress: &mut [Egress],
        now: Instant,
    ) {
        self.tc = tc::Tc::new(&setup.reservable_bps);
        let mut env = tc::Surroundings {
            tc: &mut self.tc,
            fwd,
            egress,
            now,
        };
        self.engine.reinstall(&mut env);
        self.waiting = true;
    }

    /// The engine (its state and counters).
    pub fn engine(&self) -> &Router {
        &self.engine
    }

    /// Interface `iface`'s budget.
    pub fn budget(&self, iface: usize) -> Option<&Budget> {
        self.tc.budgets.get(iface)
    }

    /// The counters for the stats document, the interfaces being called `names`.
    pub fn stats(&self, names: &[String]) -> RsvpStats {
        RsvpStats {
            refresh_ms: self.params.refresh.as_nanos() / 1_000_000,
            keep: self.params.keep,
            engine: self.engine.stats().clone(),
            not_rsvp: self.not_rsvp,
            unsent: self.unsent,
            interfaces: names
                .iter()
                .zip(&self.tc.budgets)
                .map(|(name, b)| RsvpInterfaceStats {
                    name: name.clone(),
                    reservable_bps: b.reservable_bps,
                    reserved_bps: b.reserved_bps,
                    reservations: b.reservations,
                    unmanaged: b.unmanaged,
                })
                .collect(),
        }
    }

    /// Frame every message the engine has to send.
    fn drain(&mut self, fwd: &Forwarder, out: &mut Vec<Output>) {
        while let Some(t) = self.engine.poll_transmit() {
            let framed = ip_packet(&t).and_then(|p| frame(fwd, &t, &p));
            match framed {
                Some(o) => out.push(o),
                None => self.unsent += 1,
            }
        }
    }
}

/// The source, destination and RSVP message of an IP `packet` the forwarder handed over:
/// IPv4 (any options) or IPv6 with protocol 46 right after the fixed header or after a
/// Hop-by-Hop header with Router Alert. `None` for anything else.
pub fn rsvp_payload(packet: &[u8]) -> Option<(IpAddr, IpAddr, &[u8])> {
    match packet.first()? >> 4 {
        ipv4::VERSION => {
            let p = ipv4::Packet::new_checked(packet).ok()?;
            if p.protocol() != PROTOCOL {
                return None;
            }
            let body = packet.get(p.header_len()..usize::from(p.total_len()))?;
            Some((p.src_addr().into(), p.dst_addr().into(), body))
        }
        ipv6::VERSION => {
            let p = ipv6::Packet::new_checked(packet).ok()?;
            let start = match p.next_header() {
                PROTOCOL => ipv6::HEADER_LEN,
                ipv6::NEXT_HOP_BY_HOP => {
                    let a = alert::ipv6_router_alert(packet)?;
                    (a.next_header == PROTOCOL).then_some(a.payload_offset)?
                }
                _ => return None,
            };
            let end = ipv6::HEADER_LEN + usize::from(p.payload_len());
            let body = packet.get(start..end)?;
            Some((p.src_addr().into(), p.dst_addr().into(), body))
        }
        _ => None,
    }
}

/// The IP packet of a message to send: Router Alert when the transmit asks (RFC 2113,
/// RFC 2711), else a plain header (DSCP 0, no fragment flags); `None` when its source and
/// destination are of different families.
pub fn ip_packet(t: &Transmit) -> Option<Vec<u8>> {
    let body = t.message.to_bytes();
    match (t.src, t.dst, t.router_alert) {
        (IpAddr::V4(s), IpAddr::V4(d), true) => {
            Some(alert::ipv4_packet_with_alert(s, d, t.ttl, PROTOCOL, &body))
        }
        (IpAddr::V6(s), IpAddr::V6(d), true) => {
            Some(alert::ipv6_packet_with_alert(s, d, t.ttl, PROTOCOL, &body))
        }
        (IpAddr::V4(s), IpAddr::V4(d), false) => {
            let mut buf = vec![0u8; ipv4::HEADER_LEN + body.len()];
            ipv4::Repr {
                src_addr: s,
                dst_addr: d,
                protocol: PROTOCOL,
                payload_len: body.len(),
                ttl: t.ttl,
                dscp: 0,
                ecn: 0,
                ident: 0,
                dont_frag: false,
            }
            .emit(&mut ipv4::Packet::new_unchecked(&mut buf[..]));
            buf[ipv4::HEADER_LEN..].copy_from_slice(&body);
            Some(buf)
        }
        (IpAddr::V6(s), IpAddr::V6(d), false) => {
            let mut buf = vec![0u8; ipv6::HEADER_LEN + body.len()];
            ipv6::Repr {
                src_addr: s,
                dst_addr: d,
                next_header: PROTOCOL,
                payload_len: body.len(),
                hop_limit: t.ttl,
                traffic_class: 0,
                flow_label: 0,
            }
            .emit(&mut ipv6::Packet::new_unchecked(&mut buf[..]));
            buf[ipv6::HEADER_LEN..].copy_from_slice(&body);
            Some(buf)
        }
        _ => None,
    }
}

/// The frame of `packet` for its next hop: out of the transmit's interface toward the
/// route's gateway when the route leaves there, else to the destination as a neighbour
/// on that interface (a Resv to its previous hop); by the routing table when the
/// transmit names no interface.
fn frame(fwd: &Forwarder, t: &Transmit, packet: &[u8]) -> Option<Output> {
    let Some(iface) = t.iface else {
        return fwd.route_packet(packet).ok();
    };
    let hop = match fwd.lookup(t.dst) {
        Some(r) if r.iface == iface => r.via.unwrap_or(t.dst),
        _ => t.dst,
    };
    fwd.frame_for_neighbor(iface, hop, packet).ok()
}
