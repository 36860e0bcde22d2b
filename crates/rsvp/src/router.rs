//! RSVP at a router (RFC 2205 §3, processing rules of RFC 2209 §3), for unicast sessions.
//!
//! - **Path** (RFC 2209 "PATH MESSAGE ARRIVES"): path state per [`Flow`] (session and
//!   sender template) with the previous hop from RSVP_HOP and the outgoing interface from
//!   [`Env::route`] of the session's destination; new or changed state is forwarded at once,
//!   downstream with our RSVP_HOP (our address on the outgoing interface, LIH = its index),
//!   IP source and destination kept (the sender's and the session's), Router Alert on,
//!   Send_TTL − 1. No route: PathErr 24/5 ([`ROUTING_PROBLEM`]) back to the previous hop.
//! - **Resv** ("RESV MESSAGE ARRIVES"): reservation state per flow and next hop on the
//!   interface the Resv came in on. FF gives each filter its own reservation; SE is served
//!   as FF (one reservation per filter: never less than asked, but not shared); WF is
//!   refused with ResvErr 6. The requests of all next hops on an interface are merged
//!   (least upper bound, [`crate::state::merge`]) and a change is handed to [`Env::admit`]
//!   with what was installed before. Refused: ResvErr (the code and value `admit` gave)
//!   toward the next hop that asked, its request undone, nothing installed. Admitted (or a
//!   RESV_CONFIRM to carry): Resv upstream to the previous hop at once, with our RSVP_HOP.
//!   No path state: ResvErr 3 (none for the session) or 4 (none for that sender).
//! - **Tears** remove at once and go on: PathTear downstream (and it takes the flow's
//!   reservations with it), ResvTear upstream when the flow's last reservation goes,
//!   else a Resv refresh with the smaller merged flowspec.
//! - **Errors**: PathErr goes on to the previous hop, ResvErr to each next hop holding a
//!   reservation for the filters it names. Neither changes state.
//! - **Timers** (RFC 2205 §3.7): each path state refreshes Path downstream and its
//!   reservation's Resv upstream every jittered R; state whose neighbour's lifetime L
//!   passes unrefreshed is removed as if torn, and the tear is sent onward.
//! - **ResvConf** travels to the receiver as plain unicast; one handed to a router is
//!   counted as ignored.
//! - **Parse failures**: [`Router::handle_parse_error`] answers an unknown object class
//!   or C-Type of a Path with PathErr (of a Resv with ResvErr) to the RSVP_HOP, as RFC 2205
//!   §3.10 asks, when SESSION and RSVP_HOP can be read; other failures are only counted.

use std::collections::{HashMap, VecDeque};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use wire::rsvp::{object, FlowSpec, Hop, Message, MsgType, ParseError, Session};
use wire::time::{Duration, Instant};

use crate::host::refresh_of;
use crate::msg::{self, blank, error_spec, unicast};
use crate::state::{Psb, Rsb};
use crate::timer::{jitter, lifetime, Timers};
use crate::{Config, Env, Flow, Stats, Transmit, MAX_FIRINGS, ROUTING_PROBLEM};

mod resv;

/// What a timer entry is for.
#[derive(Clone, Copy, Debug)]
enum Timer {
    PathRefresh(Flow),
    PathExpire(Flow),
    ResvExpire(Flow, IpAddr),
}

/// Why state goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Cause {
    Tear,
    Timeout,
}

/// A merged reservation installed on an interface, and when it was first installed
/// (`reinstall` goes oldest first).
#[derive(Clone, Copy, Debug)]
struct Installed {
    spec: FlowSpec,
    seq: u64,
}

/// An RSVP router's soft state and the messages it has to send.
#[derive(Debug)]
pub struct Router {
    config: Config,
    rng: ChaCha8Rng,
    paths: HashMap<Flow, Psb>,
    /// Path states per session (to tell "no path" from "no such sender").
    sessions: HashMap<Session, usize>,
    resvs: HashMap<Flow, Vec<Rsb>>,
    /// Reservation states in `resvs` (kept, not counted per message).
    rsb_count: usize,
    installed: HashMap<(usize, Flow), Installed>,
    install_seq: u64,
    timers: Timers<Timer>,
    out: VecDeque<Transmit>,
    stats: Stats,
}

impl Router {
    /// A router with no state.
    pub fn new(config: Config) -> Self {
        Self {
            rng: ChaCha8Rng::seed_from_u64(config.seed),
            config: config.clamped(),
            paths: HashMap::new(),
            sessions: HashMap::new(),
            resvs: HashMap::new(),
            rsb_count: 0,
            installed: HashMap::new(),
            install_seq: 0,
            timers: Timers::new(),
            out: VecDeque::new(),
            stats: Stats::default(),
        }
    }

    /// Handle a message that arrived on `in_iface` from `ip_src` to `ip_dst` (our address
    /// for Resv and errors; the session's for Path and PathTear).
    pub fn handle_message(
        &mut self,
        now: Instant,
        in_iface: usize,
        ip_src: IpAddr,
        ip_dst: IpAddr,
        msg: Message,
        env: &mut impl Env,
    ) {
        self.stats.messages_in.count(msg.kind);
        match msg.kind {
            MsgType::Path => self.on_path(now, in_iface, ip_src, msg, env),
            MsgType::Resv => self.on_resv(now, in_iface, ip_dst, msg, env),
            MsgType::PathTear => self.on_path_tear(msg, env),
            MsgType::ResvTear => self.on_resv_tear(msg, env),
            MsgType::PathErr => self.on_path_err(msg, env),
            MsgType::ResvErr => self.on_resv_err(msg, env),
            // addressed to the receiver: a router holds nothing for it
            MsgType::ResvConf => self.stats.ignored += 1,
        }
        self.gauges();
    }

    /// Count a message that failed to parse; for an unknown object class or C-Type in a
    /// Path or Resv (RFC 2205 §3.10), answer PathErr or ResvErr with the code
    /// [`ParseError::error_code`] gives, to the RSVP_HOP the message names.
    pub fn handle_parse_error(
        &mut self,
        in_iface: usize,
        ip_dst: IpAddr,
        error: &ParseError,
        raw: &[u8],
        env: &impl Env,
    ) {
        self.stats.malformed += 1;
        let Some(code) = error.error_code() else {
            return;
        };
        let Some((kind, session, hop)) = salvage(raw) else {
            return;
        };
        // a Path is addressed to the session: our address is the one toward the PHOP
        let (answer, iface, node) = match kind {
            MsgType::Path => {
                let (iface, node) = toward(env, hop.addr);
                (MsgType::PathErr, iface, node)
            }
            MsgType::Resv => (MsgType::ResvErr, Some(in_iface), ip_dst),
            _ => return,
        };
        let mut m = blank(answer, session);
        m.error = Some(error_spec(node, code));
        if answer == MsgType::ResvErr {
            m.hop = Some(Hop {
                addr: node,
                lih: hop.lih,
            });
        }
        self.stats.refuse(code.0);
        self.push(unicast(iface, node, hop.addr, m));
    }

    /// Fire the timers due at `now`: at most [`MAX_FIRINGS`] per call.
    pub fn handle_timeout(&mut self, now: Instant, env: &mut impl Env) {
        let mut fired = 0;
        while fired < MAX_FIRINGS {
            let Some((at, t)) = self.timers.pop_due(now) else {
                break;
            };
            if self.fire(now, at, t, env) {
                fired += 1;
            }
        }
        if fired == MAX_FIRINGS && self.timers.next().is_some_and(|t| t <= now) {
            self.stats.deferred += 1;
        }
        self.gauges();
    }

    /// When `handle_timeout` should run next (it may be early: harmless).
    pub fn poll_timeout(&self) -> Option<Instant> {
        self.timers.next()
    }

    /// The next message to send.
    pub fn poll_transmit(&mut self) -> Option<Transmit> {
        self.out.pop_front()
    }

    /// Counters.
    pub fn stats(&self) -> &Stats {
        &self.stats
    }

    /// The path state of `flow`, if held.
    pub fn path(&self, flow: &Flow) -> Option<&Psb> {
        self.paths.get(flow)
    }

    /// The reservation states of `flow` (one per next hop).
    pub fn resvs(&self, flow: &Flow) -> &[Rsb] {
        self.resvs.get(flow).map_or(&[], Vec::as_slice)
    }

    /// The merged flowspec installed for `flow` on `iface`, if any.
    pub fn installed(&self, iface: usize, flow: &Flow) -> Option<&FlowSpec> {
        self.installed.get(&(iface, *flow)).map(|i| &i.spec)
    }

    /// Every merged reservation installed now: (interface, flow, flowspec), in no order.
    pub fn installs(&self) -> impl Iterator<Item = (usize, &Flow, &FlowSpec)> + '_ {
        self.installed.iter().map(|((i, f), v)| (*i, f, &v.spec))
    }

    /// After traffic control lost what was installed (a QoS reload): admit every
    /// installed reservation again (`old` = `None`), oldest first. A refused one is
    /// removed with its reservation states, ResvErr goes to its next hops and ResvTear
    /// upstream.
    pub fn reinstall(&mut self, env: &mut impl Env) {
        let mut all: Vec<((usize, Flow), Installed)> =
            self.installed.iter().map(|(k, v)| (*k, *v)).collect();
        all.sort_by_key(|(_, i)| i.seq);
        for ((iface, flow), inst) in all {
            let Err(code) = env.admit(iface, &flow.session, &flow.sender, &inst.spec, None) else {
                continue;
            };
            self.stats.refuse(code.0);
            self.installed.remove(&(iface, flow));
            let list = self.resvs.remove(&flow).unwrap_or_default();
            let (gone, kept): (Vec<Rsb>, Vec<Rsb>) =
                list.into_iter().partition(|r| r.iface == iface);
            self.rsb_count -= gone.len();
            for rsb in &gone {
                self.send_resv_err(&flow, rsb, None, code, env);
            }
            if kept.is_empty() {
                if let Some(last) = gone.first() {
                    self.send_resv_tear_up(&flow, last, env);
                }
            } else {
                self.resvs.insert(flow, kept);
                self.send_resv_up(&flow, None, env);
            }
        }
        self.gauges();
    }

    fn gauges(&mut self) {
        self.stats.path_states = self.paths.len() as u64;
        self.stats.resv_states = self.rsb_count as u64;
        self.stats.installed = self.installed.len() as u64;
    }

    fn push(&mut self, t: Transmit) {
        self.stats.messages_out.count(t.message.kind);
        self.out.push_back(t);
    }

    fn lifetime(&self, refresh: Duration) -> Duration {
        lifetime(refresh, self.config.keep)
    }

    fn on_path(
        &mut self,
        now: Instant,
        in_iface: usize,
        ip_src: IpAddr,
        msg: Message,
        env: &mut impl Env,
    ) {
        let (Some(sender), Some(phop)) = (msg.sender.clone(), msg.hop) else {
            self.stats.malformed += 1;
            return;
        };
        let flow = Flow {
            session: msg.session,
            sender: sender.template,
        };
        let Some(out) = env.route(msg.session.dst) else {
            let mut m = blank(MsgType::PathErr, msg.session);
            let (iface, node) = toward(env, phop.addr);
            m.error = Some(error_spec(node, ROUTING_PROBLEM));
            m.sender = Some(sender);
            self.stats.refuse(ROUTING_PROBLEM.0);
            self.push(unicast(iface, node, phop.addr, m));
            return;
        };
        let phop_refresh = refresh_of(msg.time_values_ms, self.config.refresh);
        let expires = now + self.lifetime(phop_refresh);
        if let Some(psb) = self.paths.get_mut(&flow) {
            let phop_changed = psb.phop != phop;
            let changed = phop_changed
                || psb.sender != sender
                || psb.out != Some(out)
                || psb.forward != msg.forward;
            psb.sender = sender;
            psb.phop = phop;
            psb.in_iface = in_iface;
            psb.ip_src = ip_src;
            psb.out = Some(out);
            psb.send_ttl = msg.send_ttl;
            psb.forward = msg.forward;
            psb.phop_refresh = phop_refresh;
            psb.expires = expires;
            let resend = phop_changed || std::mem::take(&mut psb.resv_refresh_needed);
            if changed {
                self.forward_path(&flow);
            }
            if resend {
                self.send_resv_up(&flow, None, env);
            }
            return;
        }
        let refresh_at = now + jitter(self.config.refresh, &mut self.rng);
        let psb = Psb {
            sender,
            phop,
            in_iface,
            ip_src,
            out: Some(out),
            send_ttl: msg.send_ttl,
            forward: msg.forward,
            phop_refresh,
            expires,
            expiry_armed: self.timers.arm(expires, Timer::PathExpire(flow)),
            refresh_armed: self.timers.arm(refresh_at, Timer::PathRefresh(flow)),
            resv_refresh_needed: false,
        };
        self.paths.insert(flow, psb);
        *self.sessions.entry(flow.session).or_default() += 1;
        self.forward_path(&flow);
    }

    /// Send `flow`'s Path (or PathTear) downstream; false if it has nowhere to go.
    fn forward_path_kind(&mut self, flow: &Flow, kind: MsgType) -> bool {
        let Some(psb) = self.paths.get(flow) else {
            return false;
        };
        let Some(out) = psb.out else {
            return false;
        };
        if psb.send_ttl <= 1 {
            return false;
        }
        let mut m = blank(kind, flow.session);
        m.send_ttl = psb.send_ttl - 1;
        m.hop = Some(Hop {
            addr: out.local,
            lih: out.iface as u32,
        });
        m.sender = Some(psb.sender.clone());
        if kind == MsgType::Path {
            m.time_values_ms = Some(self.config.refresh_ms());
            m.forward = psb.forward.clone();
        }
        let t = msg::downstream(Some(out.iface), psb.ip_src, m);
        self.push(t);
        true
    }

    fn forward_path(&mut self, flow: &Flow) -> bool {
        self.forward_path_kind(flow, MsgType::Path)
    }

    fn on_path_tear(&mut self, msg: Message, env: &mut impl Env) {
        let Some(sender) = msg.sender else {
            self.stats.malformed += 1;
            return;
        };
        let flow = Flow {
            session: msg.session,
            sender: sender.template,
        };
        if !self.remove_path(&flow, Cause::Tear, env) {
            self.stats.ignored += 1;
        }
    }

    /// Remove `flow`'s path state and the reservations that hang on it; PathTear onward.
    fn remove_path(&mut self, flow: &Flow, cause: Cause, env: &mut impl Env) -> bool {
        if !self.paths.contains_key(flow) {
            return false;
        }
        self.forward_path_kind(flow, MsgType::PathTear);
        self.paths.remove(flow);
        if let Some(n) = self.sessions.get_mut(&flow.session) {
            *n -= 1;
            if *n == 0 {
                self.sessions.remove(&flow.session);
            }
        }
        match cause {
            Cause::Tear => self.stats.path_tears += 1,
            Cause::Timeout => self.stats.path_timeouts += 1,
        }
        for rsb in self.resvs.remove(flow).unwrap_or_default() {
            self.rsb_count -= 1;
            self.stats.resv_tears += 1;
            if self.installed.remove(&(rsb.iface, *flow)).is_some() {
                env.release(rsb.iface, &flow.session, &flow.sender);
            }
        }
        true
    }

    fn on_path_err(&mut self, msg: Message, env: &mut impl Env) {
        let Some(flow) = msg.sender.as_ref().map(|s| Flow {
            session: msg.session,
            sender: s.template,
        }) else {
            self.stats.ignored += 1;
            return;
        };
        let Some(phop) = self.paths.get(&flow).map(|p| p.phop) else {
            self.stats.ignored += 1;
            return;
        };
        let (iface, local) = toward(env, phop.addr);
        self.push(unicast(iface, local, phop.addr, msg));
    }

    /// Handle one popped timer entry; false if it was stale.
    fn fire(&mut self, now: Instant, at: Instant, t: Timer, env: &mut impl Env) -> bool {
        match t {
            Timer::PathRefresh(flow) => {
                let Some(psb) = self.paths.get_mut(&flow) else {
                    return false;
                };
                if psb.refresh_armed != at {
                    return false;
                }
                psb.out = env.route(flow.session.dst);
                let next = now + jitter(self.config.refresh, &mut self.rng);
                psb.refresh_armed = self.timers.arm(next, Timer::PathRefresh(flow));
                if self.forward_path(&flow) {
                    self.stats.refreshes_sent += 1;
                }
                if self.send_resv_up(&flow, None, env) {
                    self.stats.refreshes_sent += 1;
                }
            }
            Timer::PathExpire(flow) => {
                let Some(psb) = self.paths.get_mut(&flow) else {
                    return false;
                };
                if psb.expiry_armed != at {
                    return false;
                }
                if psb.expires > now {
                    psb.expiry_armed = self.timers.arm(psb.expires, t);
                } else {
                    self.remove_path(&flow, Cause::Timeout, env);
                }
            }
            Timer::ResvExpire(flow, nhop) => {
                let Some(rsb) = self
                    .resvs
                    .get_mut(&flow)
                    .and_then(|l| l.iter_mut().find(|r| r.nhop.addr == nhop))
                else {
                    return false;
                };
                if rsb.expiry_armed != at {
                    return false;
                }
                if rsb.expires > now {
                    rsb.expiry_armed = self.timers.arm(rsb.expires, t);
                } else {
                    self.remove_resv(&flow, nhop, Cause::Timeout, env);
                }
            }
        }
        true
    }
}

/// The interface toward `addr` and our address on it (unspecified without a route).
fn toward(env: &impl Env, addr: IpAddr) -> (Option<usize>, IpAddr) {
    match env.route(addr) {
        Some(r) => (Some(r.iface), r.local),
        None => (None, unspecified(addr)),
    }
}

fn unspecified(like: IpAddr) -> IpAddr {
    match like {
        IpAddr::V4(_) => IpAddr::V4(Ipv4Addr::UNSPECIFIED),
        IpAddr::V6(_) => IpAddr::V6(Ipv6Addr::UNSPECIFIED),
    }
}

/// The type, SESSION and RSVP_HOP of a message that failed to parse, when they can be read.
fn salvage(raw: &[u8]) -> Option<(MsgType, Session, Hop)> {
    let p = wire::rsvp::Packet::new_checked(raw).ok()?;
    let kind = MsgType::from_u8(p.msg_type())?;
    let (mut session, mut hop) = (None, None);
    for o in object::objects(p.objects()) {
        let o = o.ok()?;
        match o.class {
            object::class::SESSION => session = Session::parse_body(o.ctype, o.body).ok(),
            object::class::RSVP_HOP => hop = Hop::parse_body(o.ctype, o.body).ok(),
            _ => {}
        }
    }
    Some((kind, session?, hop?))
}

#[cfg(test)]
mod tests {
    use std::net::Ipv4Addr;

    use wire::rsvp::{
        code, FilterSpec, FlowDescriptor, FlowSpec, Hop, Message, MsgType, SenderDescriptor,
        Service, Session, Style, TokenBucket,
    };
    use wire::time::{Duration, Instant};

    use super::*;
    use crate::{lifetime, ErrorSpecCode, Route};

    const R: Duration = Duration::from_secs(30);

    fn ip(a: u8, b: u8) -> IpAddr {
        IpAddr::V4(Ipv4Addr::new(198, 18, a, b))
    }

    fn v6(link: u16, host: u16) -> IpAddr {
        IpAddr::V6(Ipv6Addr::new(0x2001, 2, 0, link, 0, 0, 0, host))
    }

    /// r1 of the two-hop lab: iface 0 198.18.1.1 toward the sender (198.18.1.2), iface 1
    /// 198.18.3.1 toward r2 and the receiver (198.18.3.0/24, 198.18.4.0/24).
    #[derive(Default)]
    struct TestEnv {
        /// bytes/s iface 1 may reserve (None: unlimited)
        budget: Option<f32>,
        admits: Vec<(usize, Flow, FlowSpec, Option<FlowSpec>)>,
        releases: Vec<(usize, Flow)>,
    }

    impl Env for TestEnv {
        fn route(&self, dst: IpAddr) -> Option<Route> {
            match dst {
                IpAddr::V4(a) if a.octets()[..3] == [198, 18, 1] => Some(Route {
                    iface: 0,
                    local: ip(1, 1),
                }),
                IpAddr::V4(a) if matches!(a.octets()[..3], [198, 18, 3] | [198, 18, 4]) => {
                    Some(Route {
                        iface: 1,
                        local: ip(3, 1),
                    })
                }
                // 2001:2:0:k::/64 is link k
                IpAddr::V6(a) if a.segments()[..4] == [0x2001, 2, 0, 1] => Some(Route {
                    iface: 0,
                    local: v6(1, 1),
                }),
                IpAddr::V6(a) if matches!(a.segments()[..4], [0x2001, 2, 0, 3 | 4]) => {
                    Some(Route {
                        iface: 1,
                        local: v6(3, 1),
                    })
                }
                _ => None,
            }
        }
        fn admit(
            &mut self,
            iface: usize,
            session: &Session,
            filter: &FilterSpec,
            new: &FlowSpec,
            old: Option<&FlowSpec>,
        ) -> Result<(), ErrorSpecCode> {
            let flow = Flow {
                session: *session,
                sender: *filter,
            };
            self.admits.push((iface, flow, *new, old.copied()));
            match self.budget {
                Some(b) if new.tspec.rate_bytes_per_s > b => {
                    Err((code::ADMISSION, code::ADMISSION_BANDWIDTH))
                }
                _ => Ok(()),
            }
        }
        fn release(&mut self, iface: usize, session: &Session, filter: &FilterSpec) {
            self.releases.push((
                iface,
                Flow {
                    session: *session,
                    sender: *filter,
                },
            ));
        }
    }

    fn flow(port: u16) -> Flow {
        Flow {
            session: Session {
                dst: ip(4, 2),
                protocol: 17,
                flags: 0,
                dst_port: 5001,
            },
            sender: FilterSpec::V4 {
                src: Ipv4Addr::new(198, 18, 1, 2),
                src_port: port,
            },
        }
    }

    fn tspec(rate: f32) -> TokenBucket {
        TokenBucket {
            rate_bytes_per_s: rate,
            depth_bytes: 1_250.0,
            peak_bytes_per_s: f32::INFINITY,
            min_policed_bytes: 64,
            max_packet_bytes: 1_250,
        }
    }

    fn cl(rate: f32) -> FlowSpec {
        FlowSpec {
            service: Service::ControlledLoad,
            tspec: tspec(rate),
        }
    }

    fn path(f: &Flow, refresh: Duration) -> Message {
        let mut m = blank(MsgType::Path, f.session);
        m.hop = Some(Hop {
            addr: ip(1, 2),
            lih: 0,
        });
        m.time_values_ms = Some((refresh.as_nanos() / 1_000_000) as u32);
        m.sender = Some(SenderDescriptor {
            template: f.sender,
            tspec: tspec(25_000.0),
            adspec: None,
        });
        m
    }

    fn resv(kind: MsgType, f: &Flow, nhop: IpAddr, spec: FlowSpec, refresh: Duration) -> Message {
        msg::resv(
            kind,
            f.session,
            Hop { addr: nhop, lih: 7 },
            Some((refresh.as_nanos() / 1_000_000) as u32),
            Style::Ff,
            vec![FlowDescriptor {
                flowspec: spec,
                filters: vec![f.sender],
            }],
            None,
        )
    }

    /// One nanosecond before `t`.
    fn before(t: Instant) -> Instant {
        Instant::from_nanos(t.as_nanos() - 1)
    }

    fn at(ns: u64) -> Instant {
        Instant::from_nanos(ns)
    }

    fn drain(r: &mut Router) -> Vec<Transmit> {
        std::iter::from_fn(|| r.poll_transmit()).collect()
    }

    fn send_path(r: &mut Router, env: &mut TestEnv, now: Instant, f: &Flow) {
        r.handle_message(now, 0, ip(1, 2), ip(4, 2), path(f, R), env);
    }

    fn send_resv(
        r: &mut Router,
        env: &mut TestEnv,
        now: Instant,
        f: &Flow,
        nhop: IpAddr,
        spec: FlowSpec,
    ) {
        r.handle_message(
            now,
            1,
            nhop,
            ip(3, 1),
            resv(MsgType::Resv, f, nhop, spec, R),
            env,
        );
    }

    #[test]
    fn path_is_forwarded_with_our_hop_and_the_senders_addresses() {
        let (mut r, mut env, f) = (
            Router::new(Config::default()),
            TestEnv::default(),
            flow(4000),
        );
        send_path(&mut r, &mut env, at(0), &f);
        let out = drain(&mut r);
        assert_eq!(out.len(), 1);
        let t = &out[0];
        assert_eq!(
            (t.iface, t.src, t.dst, t.router_alert),
            (Some(1), ip(1, 2), ip(4, 2), true)
        );
        assert_eq!(t.message.kind, MsgType::Path);
        assert_eq!(
            t.message.hop,
            Some(Hop {
                addr: ip(3, 1),
                lih: 1
            })
        );
        assert_eq!(t.message.send_ttl, 63);
        assert_eq!(t.ttl, 63);
        let psb = r.path(&f).unwrap();
        assert_eq!(
            psb.phop,
            Hop {
                addr: ip(1, 2),
                lih: 0
            }
        );
        assert_eq!(
            psb.out,
            Some(Route {
                iface: 1,
                local: ip(3, 1)
            })
        );
        // a refresh with nothing new is not forwarded
        send_path(&mut r, &mut env, at(1), &f);
        assert!(drain(&mut r).is_empty());
        assert_eq!(r.stats().messages_in.path, 2);
        assert_eq!(r.stats().messages_out.path, 1);
    }

    #[test]
    fn path_state_times_out_exactly_at_l_and_the_tear_goes_on() {
        let (mut r, mut env, f) = (
            Router::new(Config::default()),
            TestEnv::default(),
            flow(4000),
        );
        let short = Duration::from_secs(1); // the PHOP's R: L = 5.25 s, before our first refresh
        r.handle_message(at(7), 0, ip(1, 2), ip(4, 2), path(&f, short), &mut env);
        drain(&mut r);
        let l = lifetime(short, 3);
        assert_eq!(l, Duration::from_millis(5_250));
        r.handle_timeout(before(at(7) + l), &mut env);
        assert!(r.path(&f).is_some());
        assert!(drain(&mut r).is_empty());
        r.handle_timeout(at(7) + l, &mut env);
        assert!(r.path(&f).is_none());
        let out = drain(&mut r);
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].message.kind, MsgType::PathTear);
        assert_eq!(
            (out[0].src, out[0].dst, out[0].router_alert),
            (ip(1, 2), ip(4, 2), true)
        );
        assert_eq!(r.stats().path_timeouts, 1);
        assert_eq!(r.stats().path_states, 0);
    }

    /// The PHOP refreshes at its longest interval, 1.5R: with K − 1 = 2 refreshes lost the
    /// third arrives at 4.5R < L = 5.25R; with K = 3 lost the state is gone at 5.25R.
    #[test]
    fn state_survives_k_minus_one_lost_refreshes_and_not_k() {
        let neighbour = Duration::from_secs(4); // L = 21 s; our own R = 30 s fires later
        let step = Duration::from_secs(6); // 1.5 · 4 s
        let l = lifetime(neighbour, 3);
        for lost in [2u64, 3] {
            let (mut r, mut env, f) = (
                Router::new(Config::default()),
                TestEnv::default(),
                flow(4000),
            );
            let p = path(&f, neighbour);
            let rv = resv(MsgType::Resv, &f, ip(3, 2), cl(25_000.0), neighbour);
            // the Path 1 ns after the Resv, so each state's timeout is seen on its own
            r.handle_message(at(0), 0, ip(1, 2), ip(4, 2), p.clone(), &mut env);
            r.handle_message(at(0), 1, ip(3, 2), ip(3, 1), rv.clone(), &mut env);
            r.handle_message(at(1), 0, ip(1, 2), ip(4, 2), p.clone(), &mut env);
            drain(&mut r);
            // refreshes 1..=lost are lost; the next one is due at (lost + 1) · 1.5R
            let next = at(0) + Duration::from_nanos(step.as_nanos() * (lost + 1));
            if lost == 2 {
                r.handle_timeout(before(next), &mut env);
                assert!(r.path(&f).is_some());
                assert_eq!(r.resvs(&f).len(), 1);
                r.handle_message(next, 0, ip(1, 2), ip(4, 2), p, &mut env);
                r.handle_message(next, 1, ip(3, 2), ip(3, 1), rv, &mut env);
                r.handle_timeout(before(next + l), &mut env);
                assert!(r.path(&f).is_some());
                assert_eq!(r.resvs(&f).len(), 1);
                assert_eq!(r.stats().path_timeouts + r.stats().resv_timeouts, 0);
                assert!(env.releases.is_empty());
            } else {
                assert!(next > at(0) + l);
                r.handle_timeout(before(at(0) + l), &mut env);
                assert_eq!(r.resvs(&f).len(), 1);
                r.handle_timeout(at(0) + l, &mut env);
                assert!(r.resvs(&f).is_empty());
                assert_eq!(env.releases, vec![(1, f)]);
                assert_eq!(r.stats().resv_timeouts, 1);
                assert!(r.path(&f).is_some());
                r.handle_timeout(at(1) + l, &mut env);
                assert!(r.path(&f).is_none());
                assert_eq!(r.stats().path_timeouts, 1);
                let kinds: Vec<MsgType> = drain(&mut r).iter().map(|t| t.message.kind).collect();
                assert_eq!(kinds, vec![MsgType::ResvTear, MsgType::PathTear]);
            }
        }
    }

    #[test]
    fn tears_remove_at_once_and_go_on() {
        let (mut r, mut env, f) = (
            Router::new(Config::default()),
            TestEnv::default(),
            flow(4000),
        );
        send_path(&mut r, &mut env, at(0), &f);
        send_resv(&mut r, &mut env, at(0), &f, ip(3, 2), cl(25_000.0));
        drain(&mut r);
        // ResvTear: the reservation goes, traffic control releases it, ResvTear upstream
        let tear = resv(MsgType::ResvTear, &f, ip(3, 2), cl(25_000.0), R);
        r.handle_message(at(5), 1, ip(3, 2), ip(3, 1), tear, &mut env);
        assert!(r.resvs(&f).is_empty());
        assert_eq!(r.installed(1, &f), None);
        assert_eq!(env.releases, vec![(1, f)]);
        let out = drain(&mut r);
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].message.kind, MsgType::ResvTear);
        assert_eq!((out[0].src, out[0].dst), (ip(1, 1), ip(1, 2)));
        // PathTear: the path goes with any reservation, PathTear downstream
        send_resv(&mut r, &mut env, at(6), &f, ip(3, 2), cl(25_000.0));
        drain(&mut r);
        let mut pt = path(&f, R);
        pt.kind = MsgType::PathTear;
        pt.time_values_ms = None;
        r.handle_message(at(7), 0, ip(1, 2), ip(4, 2), pt, &mut env);
        assert!(r.path(&f).is_none());
        assert!(r.resvs(&f).is_empty());
        assert_eq!(env.releases, vec![(1, f), (1, f)]);
        let out = drain(&mut r);
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].message.kind, MsgType::PathTear);
        assert_eq!(out[0].dst, ip(4, 2));
        let s = r.stats();
        assert_eq!(
            (
                s.path_tears,
                s.resv_tears,
                s.path_states,
                s.resv_states,
                s.installed
            ),
            (1, 2, 0, 0, 0)
        );
    }

    #[test]
    fn reservations_of_two_next_hops_merge_to_their_least_upper_bound() {
        let (mut r, mut env, f) = (
            Router::new(Config::default()),
            TestEnv::default(),
            flow(4000),
        );
        send_path(&mut r, &mut env, at(0), &f);
        let a = FlowSpec {
            service: Service::ControlledLoad,
            tspec: TokenBucket {
                depth_bytes: 3_000.0,
                max_packet_bytes: 1_500,
                ..tspec(20_000.0)
            },
        };
        let b = FlowSpec {
            service: Service::ControlledLoad,
            tspec: TokenBucket {
                min_policed_bytes: 20,
                ..tspec(30_000.0)
            },
        };
        send_resv(&mut r, &mut env, at(1), &f, ip(3, 2), a);
        send_resv(&mut r, &mut env, at(2), &f, ip(3, 3), b);
        let lub = FlowSpec {
            service: Service::ControlledLoad,
            tspec: TokenBucket {
                rate_bytes_per_s: 30_000.0,
                depth_bytes: 3_000.0,
                peak_bytes_per_s: f32::INFINITY,
                min_policed_bytes: 20,
                max_packet_bytes: 1_500,
            },
        };
        assert_eq!(env.admits, vec![(1, f, a, None), (1, f, lub, Some(a))]);
        assert_eq!(r.installed(1, &f), Some(&lub));
        // upstream: one Resv per change, the last with the merged flowspec
        let out = drain(&mut r);
        let up: Vec<&Transmit> = out
            .iter()
            .filter(|t| t.message.kind == MsgType::Resv)
            .collect();
        assert_eq!(up.len(), 2);
        assert_eq!(up[1].message.flows[0].flowspec, lub);
        assert_eq!(
            up[1].message.hop,
            Some(Hop {
                addr: ip(1, 1),
                lih: 0
            })
        );
        // the larger one leaves: the merge shrinks back to `a`, as a delta
        let tear = resv(MsgType::ResvTear, &f, ip(3, 3), b, R);
        r.handle_message(at(3), 1, ip(3, 3), ip(3, 1), tear, &mut env);
        assert_eq!(env.admits[2], (1, f, a, Some(lub)));
        assert_eq!(r.installed(1, &f), Some(&a));
        assert!(env.releases.is_empty());
    }

    #[test]
    fn refused_admission_answers_resv_err_code_1_toward_the_receiver_and_installs_nothing() {
        let mut env = TestEnv {
            budget: Some(20_000.0),
            ..TestEnv::default()
        };
        let (mut r, f) = (Router::new(Config::default()), flow(4000));
        send_path(&mut r, &mut env, at(0), &f);
        drain(&mut r);
        send_resv(&mut r, &mut env, at(1), &f, ip(3, 2), cl(25_000.0));
        assert_eq!(env.admits, vec![(1, f, cl(25_000.0), None)]);
        assert_eq!(r.installed(1, &f), None);
        assert!(r.resvs(&f).is_empty());
        let out = drain(&mut r);
        assert_eq!(out.len(), 1, "{out:?}");
        let t = &out[0];
        assert_eq!(t.message.kind, MsgType::ResvErr);
        assert_eq!(
            (t.iface, t.src, t.dst, t.router_alert),
            (Some(1), ip(3, 1), ip(3, 2), false)
        );
        let e = t.message.error.unwrap();
        assert_eq!((e.node, e.code, e.value), (ip(3, 1), 1, 2));
        assert_eq!(t.message.flows[0].filters, vec![f.sender]);
        let s = r.stats();
        assert_eq!((s.installed, s.admitted, s.resv_states), (0, 0, 0));
        assert_eq!(s.refused.get(&1), Some(&1));
        // a smaller request fits
        send_resv(&mut r, &mut env, at(2), &f, ip(3, 2), cl(10_000.0));
        assert_eq!(r.installed(1, &f), Some(&cl(10_000.0)));
        // growing past the budget is refused and the old reservation stays
        send_resv(&mut r, &mut env, at(3), &f, ip(3, 2), cl(25_000.0));
        assert_eq!(
            env.admits.last(),
            Some(&(1, f, cl(25_000.0), Some(cl(10_000.0))))
        );
        assert_eq!(r.installed(1, &f), Some(&cl(10_000.0)));
        assert_eq!(r.resvs(&f)[0].flowspec, cl(10_000.0));
    }

    #[test]
    fn resv_without_path_state_and_path_without_route_are_answered_with_errors() {
        let (mut r, mut env, f) = (
            Router::new(Config::default()),
            TestEnv::default(),
            flow(4000),
        );
        send_resv(&mut r, &mut env, at(0), &f, ip(3, 2), cl(1.0));
        send_path(&mut r, &mut env, at(1), &f);
        drain(&mut r);
        send_resv(&mut r, &mut env, at(2), &flow(4001), ip(3, 2), cl(1.0));
        let mut unrouted = flow(4000);
        unrouted.session.dst = ip(9, 9);
        send_path(&mut r, &mut env, at(3), &unrouted);
        let codes: Vec<(MsgType, u8, u16, IpAddr)> = drain(&mut r)
            .iter()
            .map(|t| {
                let e = t.message.error.unwrap();
                (t.message.kind, e.code, e.value, t.dst)
            })
            .collect();
        assert_eq!(
            codes,
            vec![
                (MsgType::ResvErr, 4, 0, ip(3, 2)),
                (MsgType::PathErr, 24, 5, ip(1, 2))
            ]
        );
        assert_eq!(r.stats().refused.get(&3), Some(&1));
        assert!(env.admits.is_empty());
        assert!(r.path(&unrouted).is_none());
    }

    #[test]
    fn ten_thousand_timeouts_fire_at_most_256_per_call() {
        let (mut r, mut env) = (Router::new(Config::default()), TestEnv::default());
        let short = Duration::from_secs(1);
        for port in 0..10_000u16 {
            let f = flow(port);
            r.handle_message(at(0), 0, ip(1, 2), ip(4, 2), path(&f, short), &mut env);
        }
        drain(&mut r);
        assert_eq!(r.stats().path_states, 10_000);
        let l = at(0) + lifetime(short, 3);
        assert_eq!(r.poll_timeout(), Some(l));
        let mut calls = 0;
        while r.stats().path_states > 0 {
            let before = r.stats().path_states;
            r.handle_timeout(l, &mut env);
            assert_eq!(before - r.stats().path_states, before.min(256));
            assert_eq!(drain(&mut r).len() as u64, before.min(256));
            calls += 1;
        }
        assert_eq!(calls, 40); // 39 · 256 + 16
        assert_eq!(r.stats().deferred, 39);
        assert_eq!(r.stats().path_timeouts, 10_000);
    }

    #[test]
    fn reinstall_admits_again_oldest_first_and_tears_what_no_longer_fits() {
        let (mut r, mut env) = (Router::new(Config::default()), TestEnv::default());
        let (f1, f2) = (flow(1), flow(2));
        for (f, rate) in [(f2, 10_000.0), (f1, 30_000.0)] {
            send_path(&mut r, &mut env, at(0), &f);
            send_resv(&mut r, &mut env, at(0), &f, ip(3, 2), cl(rate));
        }
        drain(&mut r);
        let mut reloaded = TestEnv {
            budget: Some(20_000.0),
            ..TestEnv::default()
        };
        r.reinstall(&mut reloaded);
        assert_eq!(
            reloaded.admits,
            vec![(1, f2, cl(10_000.0), None), (1, f1, cl(30_000.0), None)]
        );
        assert!(reloaded.releases.is_empty());
        assert_eq!(r.installed(1, &f2), Some(&cl(10_000.0)));
        assert_eq!(r.installed(1, &f1), None);
        assert!(r.resvs(&f1).is_empty());
        let kinds: Vec<(MsgType, IpAddr)> = drain(&mut r)
            .iter()
            .map(|t| (t.message.kind, t.dst))
            .collect();
        assert_eq!(
            kinds,
            vec![(MsgType::ResvErr, ip(3, 2)), (MsgType::ResvTear, ip(1, 2))]
        );
    }

    #[test]
    fn an_unknown_object_class_in_a_path_is_answered_with_path_err_13() {
        let (mut r, env, f) = (
            Router::new(Config::default()),
            TestEnv::default(),
            flow(4000),
        );
        let mut raw = path(&f, R).to_bytes();
        raw.extend_from_slice(&[0, 8, 60, 1, 0, 0, 0, 0]); // class 60 = 0b00111100
        let len = raw.len() as u16;
        raw[6..8].copy_from_slice(&len.to_be_bytes());
        raw[2..4].copy_from_slice(&[0, 0]); // no checksum
        let err = Message::parse(&raw).unwrap_err();
        assert_eq!(err.error_code(), Some((code::UNKNOWN_CLASS, 60 << 8 | 1)));
        r.handle_parse_error(0, ip(4, 2), &err, &raw, &env);
        let out = drain(&mut r);
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].message.kind, MsgType::PathErr);
        assert_eq!((out[0].src, out[0].dst), (ip(1, 1), ip(1, 2)));
        let e = out[0].message.error.unwrap();
        assert_eq!((e.code, e.value, e.node), (13, 60 << 8 | 1, ip(1, 1)));
        assert_eq!(r.stats().malformed, 1);
        // bytes that are not RSVP are only counted
        r.handle_parse_error(0, ip(4, 2), &ParseError::Truncated, &[1, 2], &env);
        assert!(drain(&mut r).is_empty());
        assert_eq!(r.stats().malformed, 2);
    }

    /// An IPv6 flow-label flow (FILTER_SPEC C-Type 3), every message through bytes.
    #[test]
    fn a_flow_label_flow_is_reserved_and_answered_over_ipv6() {
        let (mut r, mut env) = (Router::new(Config::default()), TestEnv::default());
        let IpAddr::V6(src) = v6(1, 2) else {
            unreachable!()
        };
        let f = Flow {
            session: Session {
                dst: v6(4, 2),
                protocol: 17,
                flags: 0,
                dst_port: 5001,
            },
            sender: FilterSpec::FlowLabel {
                src,
                flow_label: 0xabcde,
            },
        };
        let wire = |m: Message| Message::parse(&m.to_bytes()).unwrap();
        let mut p = path(&f, R);
        p.hop = Some(Hop {
            addr: v6(1, 2),
            lih: 0,
        });
        r.handle_message(at(0), 0, v6(1, 2), v6(4, 2), wire(p), &mut env);
        let down = drain(&mut r);
        assert_eq!(down.len(), 1);
        assert_eq!((down[0].src, down[0].dst), (v6(1, 2), v6(4, 2)));
        assert_eq!(
            down[0].message.hop,
            Some(Hop {
                addr: v6(3, 1),
                lih: 1
            })
        );
        assert_eq!(wire(down[0].message.clone()), down[0].message);
        let mut rv = resv(MsgType::Resv, &f, v6(3, 2), cl(25_000.0), R);
        rv.confirm = Some(v6(4, 2));
        r.handle_message(at(1), 1, v6(3, 2), v6(3, 1), wire(rv), &mut env);
        assert_eq!(env.admits, vec![(1, f, cl(25_000.0), None)]);
        let up = drain(&mut r);
        assert_eq!(up.len(), 1);
        assert_eq!((up[0].src, up[0].dst), (v6(1, 1), v6(1, 2)));
        assert_eq!(up[0].message.confirm, Some(v6(4, 2)));
        assert_eq!(up[0].message.flows[0].filters, vec![f.sender]);
        assert_eq!(wire(up[0].message.clone()), up[0].message);
    }
}
