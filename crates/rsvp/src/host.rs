//! The two host roles (RFC 2205 §3.1, §3.7 at the ends of a path).
//!
//! - [`Sender`]: per flow, a Path now and at jittered refreshes; the first Resv says the
//!   flow is reserved ([`Event::Reserved`] with the setup time since the first Path);
//!   a Resv asking RESV_CONFIRM is answered with ResvConf to the receiver that asked
//!   (RFC 2205 §3.1.8); PathErr is an [`Event::PathError`]; a reservation not refreshed
//!   within L, or torn, is [`Event::Released`]; `tear` sends PathTear.
//! - [`Receiver`]: for a session it was told about, a Path is answered with a Resv FF
//!   to the previous hop: FLOWSPEC from the sender's Tspec (Controlled-Load: the Tspec
//!   as is; Guaranteed: R = r, S = 0), FILTER_SPEC = the sender template, RESV_CONFIRM =
//!   the session's address (ours); refreshed; ResvErr → [`Event::Refused`], ResvConf →
//!   [`Event::Confirmed`]; a Path that times out or is torn drops the reservation with
//!   a ResvTear ([`Event::PathGone`]).

use std::collections::{HashMap, VecDeque};
use std::net::IpAddr;

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use wire::rsvp::{
    ErrorSpec, FilterSpec, FlowDescriptor, FlowSpec, Hop, Message, MsgType, SenderDescriptor,
    Service, Session, Style, TokenBucket,
};
use wire::time::{Duration, Instant};

use crate::msg::{self, blank, error_spec, unicast};
use crate::timer::{jitter, lifetime, Timers};
use crate::{filter_src, Config, Error, Flow, Stats, Transmit, MAX_FIRINGS};

pub use crate::receiver::Receiver;

/// The IntServ service a flow asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ServiceKind {
    /// Controlled-Load (RFC 2211).
    ControlledLoad,
    /// Guaranteed (RFC 2212).
    Guaranteed,
}

impl ServiceKind {
    /// The FLOWSPEC a receiver asks for a sender's Tspec: Controlled-Load takes the Tspec
    /// as is; Guaranteed asks R = r and S = 0 (no slack).
    pub fn flowspec(self, tspec: TokenBucket) -> FlowSpec {
        let service = match self {
            Self::ControlledLoad => Service::ControlledLoad,
            Self::Guaranteed => Service::Guaranteed {
                rate_bytes_per_s: tspec.rate_bytes_per_s,
                slack_us: 0,
            },
        };
        FlowSpec { service, tspec }
    }
}

/// What happened at a host.
#[derive(Clone, Debug, PartialEq)]
pub enum Event {
    /// Sender: the first Resv for the flow arrived, `setup` after its first Path.
    Reserved {
        /// The flow.
        flow: Flow,
        /// First Path sent → first Resv received.
        setup: Duration,
    },
    /// Sender: a PathErr for the flow.
    PathError {
        /// The flow.
        flow: Flow,
        /// Its ERROR_SPEC.
        error: ErrorSpec,
    },
    /// Sender: the flow's reservation was torn or not refreshed within L.
    Released {
        /// The flow.
        flow: Flow,
    },
    /// Receiver: a ResvErr for the flow (reported once per distinct error).
    Refused {
        /// The flow.
        flow: Flow,
        /// Its ERROR_SPEC (code 1: admission control failure).
        error: ErrorSpec,
    },
    /// Receiver: a ResvConf for the flow.
    Confirmed {
        /// The flow.
        flow: Flow,
    },
    /// Receiver: the flow's path state was torn or timed out; its reservation was torn.
    PathGone {
        /// The flow.
        flow: Flow,
        /// Timed out (else torn by PathTear).
        timed_out: bool,
    },
}

/// A sender's flow and what happened to it.
#[derive(Clone, Debug, PartialEq)]
pub struct SenderFlow {
    /// The service it is meant for.
    pub service: ServiceKind,
    /// Its Tspec (SENDER_TSPEC).
    pub tspec: TokenBucket,
    /// When its first Path was sent.
    pub first_path: Instant,
    /// First Path → first Resv, once reserved.
    pub setup: Option<Duration>,
    /// Reserved now (a Resv within its lifetime).
    pub reserved: bool,
    /// The flowspec of the last Resv.
    pub flowspec: Option<FlowSpec>,
    /// Path refreshes sent (after the first Path).
    pub path_refreshes: u64,
    /// Resv refreshes received (after the first Resv).
    pub resv_refreshes: u64,
    /// The last PathErr.
    pub error: Option<ErrorSpec>,
    refresh_armed: Instant,
    resv_expires: Instant,
    resv_armed: Option<Instant>,
}

#[derive(Clone, Copy, Debug)]
enum SenderTimer {
    Refresh(Flow),
    ResvExpire(Flow),
}

/// The sender host role: Path state for its own flows.
#[derive(Debug)]
pub struct Sender {
    config: Config,
    rng: ChaCha8Rng,
    flows: HashMap<Flow, SenderFlow>,
    timers: Timers<SenderTimer>,
    out: VecDeque<Transmit>,
    events: VecDeque<Event>,
    stats: Stats,
}

impl Sender {
    /// A sender with no flows.
    pub fn new(config: Config) -> Self {
        Self {
            rng: ChaCha8Rng::seed_from_u64(config.seed),
            config: config.clamped(),
            flows: HashMap::new(),
            timers: Timers::new(),
            out: VecDeque::new(),
            events: VecDeque::new(),
            stats: Stats::default(),
        }
    }

    /// Start signalling a flow from `template` (our address, port or flow label) to
    /// `session`: a Path now, and refreshes.
    pub fn add_flow(
        &mut self,
        now: Instant,
        session: Session,
        template: FilterSpec,
        tspec: TokenBucket,
        service: ServiceKind,
    ) -> Result<Flow, Error> {
        if session.dst.is_ipv4() != filter_src(&template).is_ipv4() {
            return Err(Error::FamilyMismatch);
        }
        let flow = Flow {
            session,
            sender: template,
        };
        if self.flows.contains_key(&flow) {
            return Err(Error::DuplicateFlow);
        }
        let next = now + jitter(self.config.refresh, &mut self.rng);
        let f = SenderFlow {
            service,
            tspec,
            first_path: now,
            setup: None,
            reserved: false,
            flowspec: None,
            path_refreshes: 0,
            resv_refreshes: 0,
            error: None,
            refresh_armed: self.timers.arm(next, SenderTimer::Refresh(flow)),
            resv_expires: now,
            resv_armed: None,
        };
        self.flows.insert(flow, f);
        self.send_path(&flow, MsgType::Path);
        self.gauges();
        Ok(flow)
    }

    /// Stop a flow: PathTear now, state gone.
    pub fn tear(&mut self, flow: &Flow) -> Result<(), Error> {
        if !self.flows.contains_key(flow) {
            return Err(Error::UnknownFlow);
        }
        self.send_path(flow, MsgType::PathTear);
        if self.flows.remove(flow).is_some_and(|f| f.reserved) {
            self.stats.installed -= 1;
        }
        self.gauges();
        Ok(())
    }

    /// Every flow and what happened to it, in no order.
    pub fn flows(&self) -> impl Iterator<Item = (&Flow, &SenderFlow)> + '_ {
        self.flows.iter()
    }

    /// A flow and what happened to it.
    pub fn flow(&self, flow: &Flow) -> Option<&SenderFlow> {
        self.flows.get(flow)
    }

    /// Handle a message addressed to us from `ip_src`.
    pub fn handle_message(&mut self, now: Instant, ip_src: IpAddr, msg: Message) {
        let _ = ip_src;
        self.stats.messages_in.count(msg.kind);
        match msg.kind {
            MsgType::Resv => self.on_resv(now, msg),
            MsgType::ResvTear => {
                for flow in flows_of(&msg) {
                    match self.flows.get_mut(&flow) {
                        Some(f) if f.reserved => {
                            f.reserved = false;
                            self.stats.installed -= 1;
                            f.resv_armed = None;
                            self.stats.resv_tears += 1;
                            self.events.push_back(Event::Released { flow });
                        }
                        _ => self.stats.ignored += 1,
                    }
                }
            }
            MsgType::PathErr => {
                let flow = msg.sender.as_ref().map(|s| Flow {
                    session: msg.session,
                    sender: s.template,
                });
                match (flow, msg.error) {
                    (Some(flow), Some(error)) if self.flows.contains_key(&flow) => {
                        if let Some(f) = self.flows.get_mut(&flow) {
                            f.error = Some(error);
                        }
                        self.stats.refuse(error.code);
                        self.events.push_back(Event::PathError { flow, error });
                    }
                    _ => self.stats.ignored += 1,
                }
            }
            _ => self.stats.ignored += 1,
        }
        self.gauges();
    }

    fn on_resv(&mut self, now: Instant, msg: Message) {
        let lifetime = lifetime(
            refresh_of(msg.time_values_ms, self.config.refresh),
            self.config.keep,
        );
        let mut confirmed = Vec::new();
        for fd in &msg.flows {
            for filter in &fd.filters {
                let flow = Flow {
                    session: msg.session,
                    sender: *filter,
                };
                let Some(f) = self.flows.get_mut(&flow) else {
                    self.stats.ignored += 1;
                    continue;
                };
                f.flowspec = Some(fd.flowspec);
                f.resv_expires = now + lifetime;
                if f.resv_armed.is_none() {
                    f.resv_armed = Some(
                        self.timers
                            .arm(f.resv_expires, SenderTimer::ResvExpire(flow)),
                    );
                }
                if f.setup.is_none() {
                    let setup = now - f.first_path;
                    f.setup = Some(setup);
                    self.events.push_back(Event::Reserved { flow, setup });
                } else {
                    f.resv_refreshes += 1;
                }
                if !f.reserved {
                    f.reserved = true;
                    self.stats.installed += 1;
                }
                confirmed.push(FlowDescriptor {
                    flowspec: fd.flowspec,
                    filters: vec![*filter],
                });
            }
        }
        // RFC 2205 §3.1.8: the ResvConf goes to the receiver that asked, from us
        if let (Some(to), Some(first)) = (msg.confirm, confirmed.first()) {
            let ours = filter_src(&first.filters[0]);
            let mut m = msg::resv(
                MsgType::ResvConf,
                msg.session,
                Hop { addr: ours, lih: 0 },
                None,
                msg.style.unwrap_or(Style::Ff),
                confirmed,
                Some(to),
            );
            m.hop = None;
            m.error = Some(error_spec(ours, (wire::rsvp::code::CONFIRM, 0)));
            self.push(unicast(None, ours, to, m));
        }
    }

    /// Fire due timers: Path refreshes and reservation lifetimes.
    pub fn handle_timeout(&mut self, now: Instant) {
        let mut fired = 0;
        while fired < MAX_FIRINGS {
            let Some((at, t)) = self.timers.pop_due(now) else {
                break;
            };
            match t {
                SenderTimer::Refresh(flow) => {
                    if self.flows.get(&flow).map(|f| f.refresh_armed) != Some(at) {
                        continue;
                    }
                    let next = now + jitter(self.config.refresh, &mut self.rng);
                    let armed = self.timers.arm(next, t);
                    if let Some(f) = self.flows.get_mut(&flow) {
                        f.refresh_armed = armed;
                        f.path_refreshes += 1;
                    }
                    self.stats.refreshes_sent += 1;
                    self.send_path(&flow, MsgType::Path);
                }
                SenderTimer::ResvExpire(flow) => {
                    let Some(f) = self.flows.get_mut(&flow) else {
                        continue;
                    };
                    if f.resv_armed != Some(at) {
                        continue;
                    }
                    if f.resv_expires > now {
                        f.resv_armed = Some(self.timers.arm(f.resv_expires, t));
                    } else {
                        f.resv_armed = None;
                        if std::mem::replace(&mut f.reserved, false) {
                            self.stats.installed -= 1;
                        }
                        self.stats.resv_timeouts += 1;
                        self.events.push_back(Event::Released { flow });
                    }
                }
            }
            fired += 1;
        }
        if fired == MAX_FIRINGS && self.timers.next().is_some_and(|t| t <= now) {
            self.stats.deferred += 1;
        }
        self.gauges();
    }

    /// Count a message that failed to parse (a host answers none: RFC 2205 §3.10's
    /// errors are sent by the node that would forward the message).
    pub fn handle_parse_error(&mut self, error: &wire::rsvp::ParseError) {
        let _ = error;
        self.stats.malformed += 1;
    }

    /// When `handle_timeout` should run next.
    pub fn poll_timeout(&self) -> Option<Instant> {
        self.timers.next()
    }

    /// The next message to send.
    pub fn poll_transmit(&mut self) -> Option<Transmit> {
        self.out.pop_front()
    }

    /// The next thing that happened.
    pub fn poll_event(&mut self) -> Option<Event> {
        self.events.pop_front()
    }

    /// Counters.
    pub fn stats(&self) -> &Stats {
        &self.stats
    }

    fn send_path(&mut self, flow: &Flow, kind: MsgType) {
        let Some(f) = self.flows.get(flow) else {
            return;
        };
        let ours = filter_src(&flow.sender);
        let mut m = blank(kind, flow.session);
        m.hop = Some(Hop { addr: ours, lih: 0 });
        if kind == MsgType::Path {
            m.time_values_ms = Some(self.config.refresh_ms());
        }
        m.sender = Some(SenderDescriptor {
            template: flow.sender,
            tspec: f.tspec,
            adspec: None,
        });
        self.push(msg::downstream(None, ours, m));
    }

    fn push(&mut self, t: Transmit) {
        self.stats.messages_out.count(t.message.kind);
        self.out.push_back(t);
    }

    fn gauges(&mut self) {
        self.stats.path_states = self.flows.len() as u64;
    }
}

/// The flows (session, filter) a Resv-like message names.
pub(crate) fn flows_of(msg: &Message) -> Vec<Flow> {
    msg.flows
        .iter()
        .flat_map(|fd| fd.filters.iter())
        .map(|f| Flow {
            session: msg.session,
            sender: *f,
        })
        .collect()
}

/// The refresh period a neighbour announced, or ours when it announced none.
pub(crate) fn refresh_of(ms: Option<u32>, ours: Duration) -> Duration {
    match ms {
        Some(ms) if ms > 0 => Duration::from_millis(u64::from(ms)),
        _ => ours,
    }
}

#[cfg(test)]
mod tests {
    use std::net::Ipv4Addr;

    use super::*;
    use crate::lifetime;

    const R: Duration = Duration::from_secs(30);

    fn ip(a: u8, b: u8) -> IpAddr {
        IpAddr::V4(Ipv4Addr::new(198, 18, a, b))
    }

    fn session() -> Session {
        Session {
            dst: ip(4, 2),
            protocol: 17,
            flags: 0,
            dst_port: 5001,
        }
    }

    fn template() -> FilterSpec {
        FilterSpec::V4 {
            src: Ipv4Addr::new(198, 18, 1, 2),
            src_port: 4000,
        }
    }

    fn tspec() -> TokenBucket {
        TokenBucket {
            rate_bytes_per_s: 25_000.0,
            depth_bytes: 1_250.0,
            peak_bytes_per_s: f32::INFINITY,
            min_policed_bytes: 1_250,
            max_packet_bytes: 1_250,
        }
    }

    fn at(ns: u64) -> Instant {
        Instant::from_nanos(ns)
    }

    fn resv_for(flow: &Flow, confirm: Option<IpAddr>) -> Message {
        msg::resv(
            MsgType::Resv,
            flow.session,
            Hop {
                addr: ip(1, 1),
                lih: 0,
            },
            Some(30_000),
            Style::Ff,
            vec![FlowDescriptor {
                flowspec: ServiceKind::ControlledLoad.flowspec(tspec()),
                filters: vec![flow.sender],
            }],
            confirm,
        )
    }

    #[test]
    fn guaranteed_asks_the_senders_rate_with_no_slack() {
        assert_eq!(
            ServiceKind::Guaranteed.flowspec(tspec()),
            FlowSpec {
                service: Service::Guaranteed {
                    rate_bytes_per_s: 25_000.0,
                    slack_us: 0
                },
                tspec: tspec(),
            }
        );
        assert_eq!(
            ServiceKind::ControlledLoad.flowspec(tspec()).service,
            Service::ControlledLoad
        );
    }

    #[test]
    fn a_sender_sends_path_now_and_at_jittered_refreshes() {
        let mut s = Sender::new(Config::default());
        let cl = ServiceKind::ControlledLoad;
        let flow = s
            .add_flow(at(5), session(), template(), tspec(), cl)
            .unwrap();
        assert_eq!(
            s.add_flow(at(5), session(), template(), tspec(), cl),
            Err(Error::DuplicateFlow)
        );
        let mut v6 = session();
        v6.dst = "2001:2:0:4::2".parse().unwrap();
        assert_eq!(
            s.add_flow(at(5), v6, template(), tspec(), cl),
            Err(Error::FamilyMismatch)
        );
        let t = s.poll_transmit().unwrap();
        assert_eq!(
            (t.iface, t.src, t.dst, t.router_alert, t.ttl),
            (None, ip(1, 2), ip(4, 2), true, 64)
        );
        assert_eq!(t.message.kind, MsgType::Path);
        assert_eq!(
            t.message.hop,
            Some(Hop {
                addr: ip(1, 2),
                lih: 0
            })
        );
        assert_eq!(t.message.time_values_ms, Some(30_000));
        let sd = t.message.sender.unwrap();
        assert_eq!((sd.template, sd.tspec), (template(), tspec()));
        let mut last = at(5);
        for _ in 0..100 {
            let next = s.poll_timeout().unwrap();
            let gap = (next - last).as_nanos();
            assert!((15_000_000_000..=45_000_000_000).contains(&gap), "{gap}");
            s.handle_timeout(next);
            assert_eq!(s.poll_transmit().unwrap().message.kind, MsgType::Path);
            assert!(s.poll_transmit().is_none());
            last = next;
        }
        assert_eq!(s.flow(&flow).unwrap().path_refreshes, 100);
        assert_eq!(s.stats().refreshes_sent, 100);
        assert_eq!(s.stats().messages_out.path, 101);
    }

    #[test]
    fn a_sender_reports_its_reservation_answers_confirmation_and_sees_it_lapse() {
        let mut s = Sender::new(Config::default());
        let flow = s
            .add_flow(
                at(0),
                session(),
                template(),
                tspec(),
                ServiceKind::ControlledLoad,
            )
            .unwrap();
        s.poll_transmit();
        s.handle_message(at(6_000_000), ip(1, 1), resv_for(&flow, Some(ip(4, 2))));
        assert_eq!(
            s.poll_event(),
            Some(Event::Reserved {
                flow,
                setup: Duration::from_millis(6)
            })
        );
        let conf = s.poll_transmit().unwrap();
        assert_eq!(conf.message.kind, MsgType::ResvConf);
        assert_eq!(
            (conf.src, conf.dst, conf.router_alert),
            (ip(1, 2), ip(4, 2), false)
        );
        assert_eq!(conf.message.confirm, Some(ip(4, 2)));
        let e = conf.message.error.unwrap();
        assert_eq!((e.node, e.code, e.value), (ip(1, 2), 0, 0));
        assert_eq!(conf.message.flows[0].filters, vec![template()]);
        // a refresh: counted, no event, no ResvConf without RESV_CONFIRM
        let refresh_at = at(20_000_000_000);
        s.handle_message(refresh_at, ip(1, 1), resv_for(&flow, None));
        assert_eq!(s.poll_event(), None);
        assert!(s.poll_transmit().is_none());
        assert_eq!(s.flow(&flow).unwrap().resv_refreshes, 1);
        assert_eq!(s.stats().installed, 1);
        // no Resv for L: released
        let l = lifetime(R, 3);
        while s.poll_timeout().unwrap() < refresh_at + l {
            let t = s.poll_timeout().unwrap();
            s.handle_timeout(t);
            assert_eq!(s.poll_event(), None);
        }
        s.handle_timeout(refresh_at + l);
        assert_eq!(s.poll_event(), Some(Event::Released { flow }));
        assert!(!s.flow(&flow).unwrap().reserved);
        assert_eq!(s.stats().resv_timeouts, 1);
        // PathErr
        let mut pe = blank(MsgType::PathErr, session());
        let error = error_spec(ip(1, 1), (24, 5));
        pe.error = Some(error);
        pe.sender = Some(SenderDescriptor {
            template: template(),
            tspec: tspec(),
            adspec: None,
        });
        s.handle_message(refresh_at + l, ip(1, 1), pe);
        assert_eq!(s.poll_event(), Some(Event::PathError { flow, error }));
        // tear
        while s.poll_transmit().is_some() {}
        s.tear(&flow).unwrap();
        assert_eq!(s.poll_transmit().unwrap().message.kind, MsgType::PathTear);
        assert_eq!(s.tear(&flow), Err(Error::UnknownFlow));
    }

    #[test]
    fn a_zero_refresh_period_is_taken_as_one_millisecond() {
        let zero = Config {
            refresh: Duration::ZERO,
            ..Config::default()
        };
        let mut s = Sender::new(zero);
        s.add_flow(
            at(0),
            session(),
            template(),
            tspec(),
            ServiceKind::ControlledLoad,
        )
        .unwrap();
        let first = s.poll_transmit().unwrap();
        assert_eq!(first.message.time_values_ms, Some(1));
        let next = s.poll_timeout().unwrap();
        assert!((at(500_000)..=at(1_500_000)).contains(&next), "{next:?}");
    }
}
