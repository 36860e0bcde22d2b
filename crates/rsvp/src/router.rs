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
            config,
            paths: HashMap::new(),
            sessions: HashMap::new(),
            resvs: HashMap::new(),
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
        self.stats.resv_states = self.resvs.values().map(|l| l.len() as u64).sum();
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
            if changed {
                self.forward_path(&flow);
            }
            if phop_changed {
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
