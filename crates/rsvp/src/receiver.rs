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
            config,
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
