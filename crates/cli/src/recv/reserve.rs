//! The receiver's side of `send --reserve` (RSVP, RFC 2205), for `recv` and `agent`:
//! a flow whose authenticated `Register` asked for a reservation
//! (`FlowAnnounce::reserve`) has its Path answered with a Resv; nothing else is ever
//! answered, so a plain receiver still sends nothing unasked.
//!
//! On the first such flow an [`RsvpHost`] thread starts with an `rsvp::Receiver` and
//! raw RSVP sockets for both families (one that cannot open is left out); without
//! `CAP_NET_RAW` none opens, and every reserved flow's result says so
//! (`ReservationSeen::error`) while the flow runs unreserved. Per flow the session is
//! our address and data port (protocol UDP) and the sender is the peer's address with
//! the flow's source port or flow label: a Path from any other sender is dropped before
//! the engine sees it. When the control session ends its flows are forgotten and, once
//! no flow of a session is left, the session's reservations are torn (ResvTear).

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::AtomicBool;
use std::sync::{mpsc, Arc, Mutex};

use rsvp::{Event, Flow, ServiceKind, Transmit};
use wire::control::{
    FlowAnnounce, FlowGrant, FlowResult, Protocol, Refusal, ReservationSeen, ReserveService,
};
use wire::rsvp::{FilterSpec, Message, MsgType, Session};
use wire::time::Instant;

use crate::rsvp_host::{self, Role, RsvpHost};

/// IP protocol number of UDP, the session's protocol.
const UDP: u8 = 17;

/// The receiver role on the RSVP thread: the engine, which senders it may answer, and
/// what it saw of each flow (by the flow's id in the control session).
#[derive(Debug)]
pub(crate) struct ReceiverRole {
    engine: rsvp::Receiver,
    /// (session, sender template) → the flow's id.
    allowed: HashMap<(Session, FilterSpec), u16>,
    seen: HashMap<u16, ReservationSeen>,
}

impl ReceiverRole {
    fn new() -> Self {
        Self {
            engine: rsvp::Receiver::new(rsvp::Config {
                seed: u64::from_ne_bytes(crate::control::random_bytes()),
                ..rsvp::Config::default()
            }),
            allowed: HashMap::new(),
            seen: HashMap::new(),
        }
    }

    fn add(&mut self, id: u16, session: Session, senders: &[FilterSpec], service: ServiceKind) {
        self.engine.add_session(session, service);
        for s in senders {
            self.allowed.insert((session, *s), id);
        }
        self.seen.insert(id, ReservationSeen::default());
    }

    /// Forget flow `id`; a session none of whose flows is left is torn.
    fn remove(&mut self, id: u16) -> Option<ReservationSeen> {
        let sessions: Vec<Session> = self
            .allowed
            .iter()
            .filter(|(_, &i)| i == id)
            .map(|((s, _), _)| *s)
            .collect();
        self.allowed.retain(|_, i| *i != id);
        for s in sessions {
            if !self.allowed.keys().any(|(x, _)| *x == s) {
                self.engine.remove_session(&s);
            }
        }
        self.seen.remove(&id)
    }

    fn id_of(&self, flow: &Flow) -> Option<u16> {
        self.allowed.get(&(flow.session, flow.sender)).copied()
    }
}

impl Role for ReceiverRole {
    fn handle_message(&mut self, now: Instant, ip_src: IpAddr, msg: Message) {
        // Only the senders that asked, in their session, are answered.
        if matches!(msg.kind, MsgType::Path | MsgType::PathTear) {
            let asked = msg
                .sender
                .as_ref()
                .is_some_and(|s| self.allowed.contains_key(&(msg.session, s.template)));
            if !asked {
                return;
            }
        }
        self.engine.handle_message(now, ip_src, msg);
    }
    fn handle_timeout(&mut self, now: Instant) {
        self.engine.handle_timeout(now);
    }
    fn poll_timeout(&self) -> Option<Instant> {
        self.engine.poll_timeout()
    }
    fn poll_transmit(&mut self) -> Option<Transmit> {
        let t = self.engine.poll_transmit()?;
        if t.message.kind == MsgType::Resv {
            for fd in &t.message.flows {
                for f in &fd.filters {
                    let flow = Flow {
                        session: t.message.session,
                        sender: *f,
                    };
                    if let Some(seen) = self.id_of(&flow).and_then(|id| self.seen.get_mut(&id)) {
                        seen.resv_sent += 1;
                    }
                }
            }
        }
        Some(t)
    }
    fn poll_event(&mut self) -> Option<Event> {
        let e = self.engine.poll_event()?;
        let (flow, update): (Flow, fn(&mut ReservationSeen, &Event)) = match &e {
            Event::Refused { flow, .. } => (*flow, |s, e| {
                if let Event::Refused { error, .. } = e {
                    s.refused = Some(Refusal {
                        code: error.code,
                        value: error.value,
                        node: error.node,
                    });
                }
            }),
            Event::Confirmed { flow } => (*flow, |s, _| {
                s.confirmed = true;
                s.refused = None;
            }),
            _ => return Some(e),
        };
        if let Some(seen) = self.id_of(&flow).and_then(|id| self.seen.get_mut(&id)) {
            update(seen, &e);
        }
        Some(e)
    }
    fn shutdown(&mut self, _: Instant) {
        let ids: Vec<u16> = self.seen.keys().copied().collect();
        for id in ids {
            self.remove(id);
        }
    }
}

/// The receiver's reservations: the RSVP thread once a flow asks, and the flows that
/// asked (by id), with why they cannot be signalled if they cannot.
#[derive(Default)]
pub(crate) struct Reservations {
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    /// The thread, or why it could not start.
    host: Option<Result<RsvpHost<ReceiverRole>, String>>,
    /// Which families the thread has sockets for (v4, v6).
    families: (bool, bool),
    /// Flows that asked but cannot be signalled, and why.
    failed: HashMap<u16, String>,
    /// Every flow that asked.
    asked: Vec<u16>,
    /// Events the owner has not read (the thread's channel).
    events: Option<mpsc::Receiver<Event>>,
}

/// The flows of a `Register` that ask for a reservation, with their places in it
/// (taken before the registration consumes the announcements).
pub(crate) fn asking(flows: &[FlowAnnounce]) -> Vec<(usize, FlowAnnounce)> {
    flows
        .iter()
        .enumerate()
        .filter(|(_, f)| f.reserve.is_some() && f.protocol == Protocol::Udp)
        .map(|(i, f)| (i, f.clone()))
        .collect()
}

impl Reservations {
    /// A control session's registered flows that asked for a reservation ([`asking`];
    /// `grants` in the order of the `Register`): their Paths get answered. `local` is
    /// our end of the control connection (the address the sender sends to, and our data
    /// port), `peer` the sender's address. Returns once the engine knows the flows, so a
    /// Path that follows the grants is answered.
    pub(crate) fn register(
        &self,
        local: SocketAddr,
        peer: IpAddr,
        asking: Vec<(usize, FlowAnnounce)>,
        grants: &[FlowGrant],
        stop: &Arc<AtomicBool>,
    ) {
        let asking: Vec<(FlowAnnounce, FlowGrant)> = asking
            .into_iter()
            .filter_map(|(i, f)| grants.get(i).map(|g| (f, *g)))
            .collect();
        if asking.is_empty() {
            return;
        }
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        if state.host.is_none() {
            let (host, families, events) = start(stop);
            state.host = Some(host);
            state.families = families;
            state.events = events;
        }
        let session = Session {
            dst: local.ip().to_canonical(),
            protocol: UDP,
            flags: 0,
            dst_port: local.port(),
        };
        let peer = peer.to_canonical();
        let has_family = match session.dst {
            IpAddr::V4(_) => state.families.0,
            IpAddr::V6(_) => state.families.1,
        };
        let mut added = Vec::new();
        for (f, g) in asking {
            state.asked.push(g.id);
            let why = match &state.host {
                Some(Err(e)) => Some(e.clone()),
                _ if session.dst.is_ipv6() != peer.is_ipv6() => {
                    Some("the sender's address is of the other family".to_owned())
                }
                _ if !has_family => Some(format!("no raw RSVP socket for {}", session.dst)),
                _ => None,
            };
            match why {
                Some(why) => {
                    state.failed.insert(g.id, why);
                }
                None => added.push((g.id, senders(peer, &f), service(&f))),
            }
        }
        if let Some(Ok(host)) = &state.host {
            host.ask(move |role, _| {
                for (id, senders, service) in added {
                    role.add(id, session, &senders, service);
                }
            });
        }
    }

    /// The reservations of the flows of `results` that asked, written into them; the
    /// flows are forgotten (their reservations torn once none of a session is left).
    pub(crate) fn finish<S, R, I>(&self, results: &mut [FlowResult<S, R, I>]) {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let ids: Vec<u16> = results
            .iter()
            .map(|r| r.id)
            .filter(|id| state.asked.contains(id))
            .collect();
        if ids.is_empty() {
            return;
        }
        state.asked.retain(|id| !ids.contains(id));
        if let Some(events) = &state.events {
            // The role keeps what the results need; the events are only drained.
            while events.try_recv().is_ok() {}
        }
        let mut seen: HashMap<u16, ReservationSeen> = match &state.host {
            Some(Ok(host)) => {
                let wanted = ids.clone();
                host.ask(move |role, _| {
                    wanted
                        .iter()
                        .filter_map(|id| role.remove(*id).map(|s| (*id, s)))
                        .collect()
                })
                .unwrap_or_default()
            }
            _ => HashMap::new(),
        };
        for r in results.iter_mut().filter(|r| ids.contains(&r.id)) {
            let error = state.failed.remove(&r.id);
            let mut s = seen.remove(&r.id).unwrap_or_default();
            if error.is_some() {
                s.error = error;
            }
            r.reservation = Some(s);
        }
    }
}

/// The RSVP thread with sockets of every family that opens, or why none did.
#[allow(clippy::type_complexity)]
fn start(
    stop: &Arc<AtomicBool>,
) -> (
    Result<RsvpHost<ReceiverRole>, String>,
    (bool, bool),
    Option<mpsc::Receiver<Event>>,
) {
    let v4 = rsvp_host::open_sockets(true, false);
    let v6 = rsvp_host::open_sockets(false, true);
    let families = (v4.is_ok(), v6.is_ok());
    let first_error = match (&v4, &v6) {
        (Err(e), Err(_)) => Some(format!(
            "the receiver cannot signal RSVP: {e} (run it as root or with CAP_NET_RAW)"
        )),
        _ => None,
    };
    if let Some(e) = first_error {
        return (Err(e), families, None);
    }
    let sockets: Vec<_> = [v4, v6].into_iter().flatten().flatten().collect();
    let (tx, rx) = mpsc::channel();
    match RsvpHost::start(ReceiverRole::new(), sockets, tx, Some(stop.clone())) {
        Ok(host) => (Ok(host), families, Some(rx)),
        Err(e) => (
            Err(format!("the receiver cannot start its RSVP thread: {e}")),
            families,
            None,
        ),
    }
}

/// The sender templates a flow's Path may carry: the peer's address with the flow's
/// source port, or with its flow label (IPv6, when it sets one).
fn senders(peer: IpAddr, f: &FlowAnnounce) -> Vec<FilterSpec> {
    let mut out = Vec::new();
    match peer {
        IpAddr::V4(src) => {
            if let Some(src_port) = f.src_port {
                out.push(FilterSpec::V4 { src, src_port });
            }
        }
        IpAddr::V6(src) => {
            if let Some(src_port) = f.src_port {
                out.push(FilterSpec::V6 { src, src_port });
            }
            if let Some(flow_label) = f.flow_label.filter(|&l| l != 0) {
                out.push(FilterSpec::FlowLabel { src, flow_label });
            }
        }
    }
    out
}

fn service(f: &FlowAnnounce) -> ServiceKind {
    match f.reserve.map(|r| r.service) {
        Some(ReserveService::Guaranteed) => ServiceKind::Guaranteed,
        _ => ServiceKind::ControlledLoad,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use wire::control::ReserveRequest;
    use wire::rsvp::{Hop, SenderDescriptor, TokenBucket};

    fn session() -> Session {
        Session {
            dst: "198.18.4.2".parse().unwrap(),
            protocol: UDP,
            flags: 0,
            dst_port: 4646,
        }
    }

    fn path(src_port: u16) -> Message {
        let s = session();
        let sender = "198.18.1.2".parse().unwrap();
        Message {
            kind: MsgType::Path,
            send_ttl: 64,
            session: s,
            hop: Some(Hop {
                addr: IpAddr::V4(sender),
                lih: 0,
            }),
            time_values_ms: Some(30_000),
            error: None,
            style: None,
            confirm: None,
            sender: Some(SenderDescriptor {
                template: FilterSpec::V4 {
                    src: sender,
                    src_port,
                },
                tspec: TokenBucket {
                    rate_bytes_per_s: 25_000.0,
                    depth_bytes: 1278.0,
                    peak_bytes_per_s: f32::INFINITY,
                    min_policed_bytes: 1278,
                    max_packet_bytes: 1278,
                },
                adspec: None,
            }),
            flows: Vec::new(),
            forward: Vec::new(),
        }
    }

    #[test]
    fn only_the_senders_that_asked_are_answered_and_counted() {
        let mut role = ReceiverRole::new();
        let announce = FlowAnnounce {
            src_port: Some(5000),
            reserve: Some(ReserveRequest {
                service: ReserveService::ControlledLoad,
            }),
            ..FlowAnnounce::default()
        };
        let peer: IpAddr = "198.18.1.2".parse().unwrap();
        role.add(3, session(), &senders(peer, &announce), service(&announce));
        let now = Instant::from_nanos(1_000_000_000);
        // Another port of the same host did not ask: no Resv.
        role.handle_message(now, peer, path(5001));
        assert!(role.poll_transmit().is_none());
        role.handle_message(now, peer, path(5000));
        let resv = role.poll_transmit().unwrap();
        assert_eq!(resv.message.kind, MsgType::Resv);
        assert_eq!(resv.dst, peer);
        assert!(role.poll_transmit().is_none());
        let seen = role.remove(3).unwrap();
        assert_eq!(seen.resv_sent, 1);
        // The session's last flow gone: its reservation torn.
        assert_eq!(
            role.poll_transmit().unwrap().message.kind,
            MsgType::ResvTear
        );
    }

    #[test]
    fn a_flow_label_flow_may_be_signalled_by_port_or_label() {
        let announce = FlowAnnounce {
            src_port: Some(5000),
            flow_label: Some(0x12345),
            ..FlowAnnounce::default()
        };
        let peer: IpAddr = "2001:2:0:1::2".parse().unwrap();
        let IpAddr::V6(src) = peer else {
            unreachable!()
        };
        assert_eq!(
            senders(peer, &announce),
            vec![
                FilterSpec::V6 {
                    src,
                    src_port: 5000
                },
                FilterSpec::FlowLabel {
                    src,
                    flow_label: 0x12345
                }
            ]
        );
    }
}
