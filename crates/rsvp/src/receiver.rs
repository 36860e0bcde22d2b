//! The receiver host role (see [`crate::host`]): reservations for the senders of the
//! sessions it accepts.

use std::collections::{HashMap, VecDeque};
use std::net::IpAddr;

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use wire::rsvp::{ErrorSpec, FlowDescriptor, FlowSpec, Hop, Message, MsgType, Session, Style};
use wire::time::{Duration, Instant};

use crate::host::{flows_of, refresh_of, Event, ServiceKind};
use crate::msg::{self, unicast};
use crate::timer::{jitter, lifetime, Timers};
use crate::{filter_src, Config, Flow, Stats, Transmit, MAX_FIRINGS};

/// A receiver's view of one sender of an accepted session.
#[derive(Clone, Debug, PartialEq)]
struct RecvFlow {
    phop: Hop,
    flowspec: FlowSpec,
    phop_refresh: Duration,
    expires: Instant,
    expiry_armed: Instant,
    refresh_armed: Instant,
    refused: Option<ErrorSpec>,
}

#[derive(Clone, Copy, Debug)]
enum RecvTimer {
    Refresh(Flow),
    PathExpire(Flow),
}

/// The receiver host role: reservations for the senders of the sessions it accepts.
#[derive(Debug)]
pub struct Receiver {
    config: Config,
    rng: ChaCha8Rng,
    sessions: HashMap<Session, ServiceKind>,
    flows: HashMap<Flow, RecvFlow>,
    timers: Timers<RecvTimer>,
    out: VecDeque<Transmit>,
    events: VecDeque<Event>,
    stats: Stats,
}

impl Receiver {
    /// A receiver that accepts no session yet.
    pub fn new(config: Config) -> Self {
        Self {
            rng: ChaCha8Rng::seed_from_u64(config.seed),
            config: config.clamped(),
            sessions: HashMap::new(),
            flows: HashMap::new(),
            timers: Timers::new(),
            out: VecDeque::new(),
            events: VecDeque::new(),
            stats: Stats::default(),
        }
    }

    /// Answer Paths for `session` (its destination is our address) with `service`.
    pub fn add_session(&mut self, session: Session, service: ServiceKind) {
        self.sessions.insert(session, service);
    }

    /// Stop answering `session`: ResvTear for each of its senders now.
    pub fn remove_session(&mut self, session: &Session) {
        self.sessions.remove(session);
        let mut gone: Vec<Flow> = self
            .flows
            .keys()
            .filter(|f| f.session == *session)
            .copied()
            .collect();
        gone.sort_by_key(|f| filter_src(&f.sender));
        for flow in gone {
            self.drop_flow(&flow);
        }
        self.gauges();
    }

    /// Handle a message addressed to us from `ip_src`.
    pub fn handle_message(&mut self, now: Instant, ip_src: IpAddr, msg: Message) {
        let _ = ip_src;
        self.stats.messages_in.count(msg.kind);
        match msg.kind {
            MsgType::Path => self.on_path(now, msg),
            MsgType::PathTear => {
                let flow = msg.sender.as_ref().map(|s| Flow {
                    session: msg.session,
                    sender: s.template,
                });
                match flow {
                    Some(flow) if self.flows.contains_key(&flow) => {
                        self.stats.path_tears += 1;
                        self.drop_flow(&flow);
                        self.events.push_back(Event::PathGone {
                            flow,
                            timed_out: false,
                        });
                    }
                    _ => self.stats.ignored += 1,
                }
            }
            MsgType::ResvErr => {
                let Some(error) = msg.error else {
                    self.stats.malformed += 1;
                    return;
                };
                for flow in flows_of(&msg) {
                    let Some(f) = self.flows.get_mut(&flow) else {
                        self.stats.ignored += 1;
                        continue;
                    };
                    self.stats.refuse(error.code);
                    if f.refused != Some(error) {
                        f.refused = Some(error);
                        self.events.push_back(Event::Refused { flow, error });
                    }
                }
            }
            MsgType::ResvConf => {
                for flow in flows_of(&msg) {
                    match self.flows.get_mut(&flow) {
                        Some(f) => {
                            f.refused = None;
                            self.events.push_back(Event::Confirmed { flow });
                        }
                        None => self.stats.ignored += 1,
                    }
                }
            }
            _ => self.stats.ignored += 1,
        }
        self.gauges();
    }

    fn on_path(&mut self, now: Instant, msg: Message) {
        let (Some(sender), Some(phop)) = (msg.sender, msg.hop) else {
            self.stats.malformed += 1;
            return;
        };
        let Some(&service) = self.sessions.get(&msg.session) else {
            self.stats.ignored += 1;
            return;
        };
        let flow = Flow {
            session: msg.session,
            sender: sender.template,
        };
        let phop_refresh = refresh_of(msg.time_values_ms, self.config.refresh);
        let expires = now + lifetime(phop_refresh, self.config.keep);
        let flowspec = service.flowspec(sender.tspec);
        if let Some(f) = self.flows.get_mut(&flow) {
            let changed = f.phop != phop || f.flowspec != flowspec;
            f.phop = phop;
            f.flowspec = flowspec;
            f.phop_refresh = phop_refresh;
            f.expires = expires;
            if changed {
                self.send_resv(&flow, true);
            }
            return;
        }
        let next = now + jitter(self.config.refresh, &mut self.rng);
        let f = RecvFlow {
            phop,
            flowspec,
            phop_refresh,
            expires,
            expiry_armed: self.timers.arm(expires, RecvTimer::PathExpire(flow)),
            refresh_armed: self.timers.arm(next, RecvTimer::Refresh(flow)),
            refused: None,
        };
        self.flows.insert(flow, f);
        self.send_resv(&flow, true);
    }

    /// Fire due timers: Resv refreshes and path lifetimes.
    pub fn handle_timeout(&mut self, now: Instant) {
        let mut fired = 0;
        while fired < MAX_FIRINGS {
            let Some((at, t)) = self.timers.pop_due(now) else {
                break;
            };
            match t {
                RecvTimer::Refresh(flow) => {
                    if self.flows.get(&flow).map(|f| f.refresh_armed) != Some(at) {
                        continue;
                    }
                    let next = now + jitter(self.config.refresh, &mut self.rng);
                    let armed = self.timers.arm(next, t);
                    if let Some(f) = self.flows.get_mut(&flow) {
                        f.refresh_armed = armed;
                    }
                    self.stats.refreshes_sent += 1;
                    self.send_resv(&flow, false);
                }
                RecvTimer::PathExpire(flow) => {
                    let Some(f) = self.flows.get_mut(&flow) else {
                        continue;
                    };
                    if f.expiry_armed != at {
                        continue;
                    }
                    if f.expires > now {
                        f.expiry_armed = self.timers.arm(f.expires, t);
                    } else {
                        self.stats.path_timeouts += 1;
                        self.drop_flow(&flow);
                        self.events.push_back(Event::PathGone {
                            flow,
                            timed_out: true,
                        });
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

    /// The flowspec we ask for `flow`, while its path state lives.
    pub fn requested(&self, flow: &Flow) -> Option<&FlowSpec> {
        self.flows.get(flow).map(|f| &f.flowspec)
    }

    /// Resv (first: with RESV_CONFIRM) for `flow` to its previous hop.
    fn send_resv(&mut self, flow: &Flow, first: bool) {
        let Some(f) = self.flows.get(flow) else {
            return;
        };
        let ours = flow.session.dst;
        let m = msg::resv(
            MsgType::Resv,
            flow.session,
            Hop {
                addr: ours,
                lih: f.phop.lih,
            },
            Some(self.config.refresh_ms()),
            Style::Ff,
            vec![FlowDescriptor {
                flowspec: f.flowspec,
                filters: vec![flow.sender],
            }],
            first.then_some(ours),
        );
        let to = f.phop.addr;
        self.push(unicast(None, ours, to, m));
    }

    /// Forget `flow` and tear its reservation upstream.
    fn drop_flow(&mut self, flow: &Flow) {
        let Some(f) = self.flows.remove(flow) else {
            return;
        };
        let ours = flow.session.dst;
        let m = msg::resv(
            MsgType::ResvTear,
            flow.session,
            Hop {
                addr: ours,
                lih: f.phop.lih,
            },
            None,
            Style::Ff,
            vec![FlowDescriptor {
                flowspec: f.flowspec,
                filters: vec![flow.sender],
            }],
            None,
        );
        self.push(unicast(None, ours, f.phop.addr, m));
    }

    fn push(&mut self, t: Transmit) {
        self.stats.messages_out.count(t.message.kind);
        self.out.push_back(t);
    }

    fn gauges(&mut self) {
        self.stats.path_states = self.flows.len() as u64;
        self.stats.resv_states = self.flows.len() as u64;
    }
}

#[cfg(test)]
mod tests {
    use std::net::Ipv4Addr;

    use wire::rsvp::{code, SenderDescriptor, Service, TokenBucket};

    use super::*;
    use crate::msg::{blank, error_spec};

    fn ip(a: u8, b: u8) -> IpAddr {
        IpAddr::V4(Ipv4Addr::new(198, 18, a, b))
    }

    fn flow() -> Flow {
        Flow {
            session: Session {
                dst: ip(4, 2),
                protocol: 17,
                flags: 0,
                dst_port: 5001,
            },
            sender: wire::rsvp::FilterSpec::V4 {
                src: Ipv4Addr::new(198, 18, 1, 2),
                src_port: 4000,
            },
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

    fn path(kind: MsgType) -> Message {
        let mut m = blank(kind, flow().session);
        m.hop = Some(Hop {
            addr: ip(4, 1),
            lih: 1,
        });
        if kind == MsgType::Path {
            m.time_values_ms = Some(1_000);
        }
        m.sender = Some(SenderDescriptor {
            template: flow().sender,
            tspec: tspec(),
            adspec: None,
        });
        m
    }

    fn at(ns: u64) -> Instant {
        Instant::from_nanos(ns)
    }

    fn answer(rx: &mut Receiver, service: ServiceKind) -> Transmit {
        rx.add_session(flow().session, service);
        rx.handle_message(at(0), ip(1, 2), path(MsgType::Path));
        let t = rx.poll_transmit().unwrap();
        assert!(rx.poll_transmit().is_none());
        t
    }

    #[test]
    fn a_receiver_answers_a_path_for_its_session_with_resv_ff_to_the_previous_hop() {
        let mut rx = Receiver::new(Config::default());
        rx.handle_message(at(0), ip(1, 2), path(MsgType::Path));
        assert!(
            rx.poll_transmit().is_none(),
            "not a session it was told about"
        );
        assert_eq!(rx.stats().ignored, 1);
        let t = answer(&mut rx, ServiceKind::ControlledLoad);
        assert_eq!((t.src, t.dst, t.router_alert), (ip(4, 2), ip(4, 1), false));
        let m = &t.message;
        assert_eq!(m.kind, MsgType::Resv);
        assert_eq!(m.style, Some(Style::Ff));
        assert_eq!(
            m.hop,
            Some(Hop {
                addr: ip(4, 2),
                lih: 1
            })
        );
        assert_eq!(m.confirm, Some(ip(4, 2)));
        assert_eq!(m.flows.len(), 1);
        assert_eq!(m.flows[0].filters, vec![flow().sender]);
        assert_eq!(
            m.flows[0].flowspec,
            FlowSpec {
                service: Service::ControlledLoad,
                tspec: tspec()
            }
        );
        let mut gs = Receiver::new(Config::default());
        let t = answer(&mut gs, ServiceKind::Guaranteed);
        assert_eq!(
            t.message.flows[0].flowspec.service,
            Service::Guaranteed {
                rate_bytes_per_s: 25_000.0,
                slack_us: 0
            }
        );
        // refreshes carry no RESV_CONFIRM; the PHOP's Path keeps the state alive
        let mut p = path(MsgType::Path);
        p.time_values_ms = Some(30_000);
        rx.handle_message(at(1), ip(1, 2), p);
        assert!(
            rx.poll_transmit().is_none(),
            "a Path refresh is not answered at once"
        );
        // (an early wake for the old lifetime re-arms it and sends nothing)
        let r = loop {
            let next = rx.poll_timeout().unwrap();
            rx.handle_timeout(next);
            if let Some(r) = rx.poll_transmit() {
                assert!(next >= at(15_000_000_000), "{next:?}");
                break r;
            }
            assert_eq!(rx.poll_event(), None);
        };
        assert_eq!((r.message.kind, r.message.confirm), (MsgType::Resv, None));
        assert_eq!(rx.stats().refreshes_sent, 1);
    }

    #[test]
    fn a_receiver_reports_refusal_once_and_confirmation() {
        let mut rx = Receiver::new(Config::default());
        let t = answer(&mut rx, ServiceKind::ControlledLoad);
        let mut err = t.message.clone();
        err.kind = MsgType::ResvErr;
        err.confirm = None;
        err.time_values_ms = None;
        let error = error_spec(ip(3, 1), (code::ADMISSION, 2));
        err.error = Some(error);
        rx.handle_message(at(1), ip(4, 1), err.clone());
        rx.handle_message(at(2), ip(4, 1), err);
        assert_eq!(
            rx.poll_event(),
            Some(Event::Refused {
                flow: flow(),
                error
            })
        );
        assert_eq!(rx.poll_event(), None);
        assert_eq!(rx.stats().refused.get(&1), Some(&2));
        let mut conf = t.message;
        conf.kind = MsgType::ResvConf;
        conf.hop = None;
        conf.time_values_ms = None;
        conf.error = Some(error_spec(ip(1, 2), (code::CONFIRM, 0)));
        rx.handle_message(at(3), ip(1, 2), conf);
        assert_eq!(rx.poll_event(), Some(Event::Confirmed { flow: flow() }));
    }

    #[test]
    fn a_receiver_tears_its_reservation_when_the_path_times_out_or_is_torn() {
        let mut rx = Receiver::new(Config::default());
        answer(&mut rx, ServiceKind::ControlledLoad);
        // the PHOP announced R = 1 s: L = 5.25 s, before our own first refresh (≥ 15 s)
        rx.handle_timeout(at(5_249_999_999));
        assert_eq!(rx.poll_event(), None);
        rx.handle_timeout(at(5_250_000_000));
        assert_eq!(
            rx.poll_event(),
            Some(Event::PathGone {
                flow: flow(),
                timed_out: true
            })
        );
        let t = rx.poll_transmit().unwrap();
        assert_eq!((t.message.kind, t.dst), (MsgType::ResvTear, ip(4, 1)));
        assert_eq!(t.message.flows[0].filters, vec![flow().sender]);
        // again, torn this time
        rx.handle_message(at(6_000_000_000), ip(1, 2), path(MsgType::Path));
        rx.poll_transmit();
        rx.handle_message(at(7_000_000_000), ip(1, 2), path(MsgType::PathTear));
        assert_eq!(
            rx.poll_event(),
            Some(Event::PathGone {
                flow: flow(),
                timed_out: false
            })
        );
        assert_eq!(rx.poll_transmit().unwrap().message.kind, MsgType::ResvTear);
        assert_eq!(rx.requested(&flow()), None);
        let s = rx.stats();
        assert_eq!((s.path_timeouts, s.path_tears, s.path_states), (1, 1, 0));
    }
}
