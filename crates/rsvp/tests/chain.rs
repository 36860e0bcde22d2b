//! sender → r1 → r2 → receiver, wired in memory: a harness moves each node's Transmits
//! to the node that owns (or, with Router Alert, intercepts on the way to) the
//! destination, 1 ms per hop, through bytes (`to_bytes` → `Message::parse`), in virtual
//! time. The two-hop lab's addresses: link k is 198.18.k.0/24.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::net::{IpAddr, Ipv4Addr};

use rsvp::{
    lifetime, Config, Env, ErrorSpecCode, Event, Flow, Receiver, Route, Router, Sender,
    ServiceKind, Transmit,
};
use wire::rsvp::{code, FilterSpec, FlowSpec, Message, MsgType, Session, TokenBucket};
use wire::time::{Duration, Instant};

const HOP: Duration = Duration::from_millis(1);
const R: Duration = Duration::from_secs(30);

fn ip(a: u8, b: u8) -> IpAddr {
    IpAddr::V4(Ipv4Addr::new(198, 18, a, b))
}

const S: usize = 0;
const R1: usize = 1;
const R2: usize = 2;
const RX: usize = 3;

/// A router's surroundings: its interfaces (the /24s behind each, our address on it), a
/// reservable rate per interface, and what traffic control was asked.
struct RouterEnv {
    ifaces: Vec<(Vec<u8>, IpAddr)>,
    budget: Option<f32>,
    now: Instant,
    admits: Vec<(Instant, usize, Flow, FlowSpec, Option<FlowSpec>)>,
    releases: Vec<(Instant, usize, Flow)>,
}

impl RouterEnv {
    fn new(ifaces: Vec<(Vec<u8>, IpAddr)>) -> Self {
        Self {
            ifaces,
            budget: None,
            now: Instant::ZERO,
            admits: Vec::new(),
            releases: Vec::new(),
        }
    }
}

impl Env for RouterEnv {
    fn route(&self, dst: IpAddr) -> Option<Route> {
        let IpAddr::V4(d) = dst else { return None };
        let net = d.octets()[2];
        self.ifaces
            .iter()
            .position(|(nets, _)| nets.contains(&net))
            .map(|iface| Route {
                iface,
                local: self.ifaces[iface].1,
            })
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
        self.admits
            .push((self.now, iface, flow, *new, old.copied()));
        match self.budget {
            Some(b) if new.tspec.rate_bytes_per_s > b => {
                Err((code::ADMISSION, code::ADMISSION_BANDWIDTH))
            }
            _ => Ok(()),
        }
    }
    fn release(&mut self, iface: usize, session: &Session, filter: &FilterSpec) {
        let flow = Flow {
            session: *session,
            sender: *filter,
        };
        self.releases.push((self.now, iface, flow));
    }
}

enum Node {
    Sender(Sender),
    Router(Router, RouterEnv),
    Receiver(Receiver),
}

impl Node {
    fn poll_timeout(&self) -> Option<Instant> {
        match self {
            Node::Sender(n) => n.poll_timeout(),
            Node::Router(n, _) => n.poll_timeout(),
            Node::Receiver(n) => n.poll_timeout(),
        }
    }
    fn poll_transmit(&mut self) -> Option<Transmit> {
        match self {
            Node::Sender(n) => n.poll_transmit(),
            Node::Router(n, _) => n.poll_transmit(),
            Node::Receiver(n) => n.poll_transmit(),
        }
    }
}

struct Delivery {
    to: usize,
    in_iface: usize,
    src: IpAddr,
    dst: IpAddr,
    msg: Message,
}

struct Net {
    now: Instant,
    nodes: Vec<Node>,
    /// (node, iface) ↔ (node, iface)
    links: Vec<((usize, usize), (usize, usize))>,
    queue: BinaryHeap<Reverse<(Instant, u64, usize)>>,
    pending: Vec<Option<Delivery>>,
    /// A node whose messages are lost from now on.
    dead: Option<usize>,
    /// Every delivery: (arrival, from, to, kind).
    log: Vec<(Instant, usize, usize, MsgType)>,
    events: Vec<(Instant, usize, Event)>,
}

fn flow() -> Flow {
    Flow {
        session: Session {
            dst: ip(4, 2),
            protocol: 17,
            flags: 0,
            dst_port: 5001,
        },
        sender: FilterSpec::V4 {
            src: Ipv4Addr::new(198, 18, 1, 2),
            src_port: 4000,
        },
    }
}

/// 200 kbit/s in 1250-byte packets, the study's audio flow.
fn tspec() -> TokenBucket {
    TokenBucket {
        rate_bytes_per_s: 25_000.0,
        depth_bytes: 1_250.0,
        peak_bytes_per_s: f32::INFINITY,
        min_policed_bytes: 1_250,
        max_packet_bytes: 1_250,
    }
}

fn config(seed: u64) -> Config {
    Config {
        refresh: R,
        keep: 3,
        seed,
    }
}

fn r1() -> Node {
    let env = RouterEnv::new(vec![(vec![1], ip(1, 1)), (vec![3, 4], ip(3, 1))]);
    Node::Router(Router::new(config(11)), env)
}

fn r2() -> Node {
    let env = RouterEnv::new(vec![(vec![1, 3], ip(3, 2)), (vec![4], ip(4, 1))]);
    Node::Router(Router::new(config(12)), env)
}

impl Net {
    /// The chain with one flow added at time 0.
    fn chain() -> Self {
        let mut sender = Sender::new(config(1));
        let mut receiver = Receiver::new(config(4));
        receiver.add_session(flow().session, ServiceKind::ControlledLoad);
        let f = sender
            .add_flow(
                Instant::ZERO,
                flow().session,
                flow().sender,
                tspec(),
                ServiceKind::ControlledLoad,
            )
            .unwrap();
        assert_eq!(f, flow());
        Self {
            now: Instant::ZERO,
            nodes: vec![Node::Sender(sender), r1(), r2(), Node::Receiver(receiver)],
            links: vec![((S, 0), (R1, 0)), ((R1, 1), (R2, 0)), ((R2, 1), (RX, 0))],
            queue: BinaryHeap::new(),
            pending: Vec::new(),
            dead: None,
            log: Vec::new(),
            events: Vec::new(),
        }
    }

    fn owns(&self, node: usize, addr: IpAddr) -> bool {
        match &self.nodes[node] {
            Node::Router(_, env) => env.ifaces.iter().any(|(_, a)| *a == addr),
            Node::Sender(_) => addr == ip(1, 2),
            Node::Receiver(_) => addr == ip(4, 2),
        }
    }

    fn across(&self, node: usize, iface: usize) -> (usize, usize) {
        self.links
            .iter()
            .find_map(|&(a, b)| {
                if a == (node, iface) {
                    Some(b)
                } else if b == (node, iface) {
                    Some(a)
                } else {
                    None
                }
            })
            .expect("a link")
    }

    /// Hand a node's message to the network: forwarded hop by hop to the node that owns
    /// the destination, or to the first router on the way when it carries Router Alert.
    fn send(&mut self, from: usize, t: Transmit) {
        if self.dead == Some(from) {
            return;
        }
        let msg = Message::parse(&t.message.to_bytes()).expect("our messages parse");
        assert_eq!(msg, t.message);
        let (mut at, mut hops) = (self.across(from, t.iface.unwrap_or(0)), 1u64);
        loop {
            let (node, in_iface) = at;
            let router = matches!(self.nodes[node], Node::Router(..));
            if self.owns(node, t.dst) || (router && t.router_alert) {
                break;
            }
            let Node::Router(_, env) = &self.nodes[node] else {
                panic!("{:?} for {} reached a host that is not it", msg.kind, t.dst)
            };
            let out = env.route(t.dst).expect("routed").iface;
            assert_ne!(out, in_iface);
            at = self.across(node, out);
            hops += 1;
        }
        let arrive = self.now + Duration::from_nanos(HOP.as_nanos() * hops);
        self.log.push((arrive, from, at.0, msg.kind));
        self.pending.push(Some(Delivery {
            to: at.0,
            in_iface: at.1,
            src: t.src,
            dst: t.dst,
            msg,
        }));
        self.queue.push(Reverse((
            arrive,
            self.pending.len() as u64,
            self.pending.len() - 1,
        )));
    }

    fn flush(&mut self) {
        for from in 0..self.nodes.len() {
            while let Some(t) = self.nodes[from].poll_transmit() {
                self.send(from, t);
            }
            let events: Vec<Event> = match &mut self.nodes[from] {
                Node::Sender(n) => std::iter::from_fn(|| n.poll_event()).collect(),
                Node::Receiver(n) => std::iter::from_fn(|| n.poll_event()).collect(),
                Node::Router(..) => Vec::new(),
            };
            for e in events {
                self.events.push((self.now, from, e));
            }
        }
    }

    fn deliver(&mut self, d: Delivery) {
        if self.dead == Some(d.to) {
            return;
        }
        let now = self.now;
        match &mut self.nodes[d.to] {
            Node::Sender(n) => n.handle_message(now, d.src, d.msg),
            Node::Receiver(n) => n.handle_message(now, d.src, d.msg),
            Node::Router(n, env) => {
                env.now = now;
                n.handle_message(now, d.in_iface, d.src, d.dst, d.msg, env);
            }
        }
    }

    fn run_until(&mut self, end: Instant) {
        loop {
            self.flush();
            let next_delivery = self.queue.peek().map(|Reverse((at, _, _))| *at);
            let next_timer = self.nodes.iter().filter_map(Node::poll_timeout).min();
            let Some(next) = [next_delivery, next_timer].into_iter().flatten().min() else {
                break;
            };
            if next > end {
                break;
            }
            self.now = next;
            while let Some(Reverse((at, _, i))) = self.queue.peek().copied() {
                if at > next {
                    break;
                }
                self.queue.pop();
                let d = self.pending[i].take().unwrap();
                self.deliver(d);
            }
            let now = self.now;
            for node in &mut self.nodes {
                if node.poll_timeout().is_some_and(|t| t <= now) {
                    match node {
                        Node::Sender(n) => n.handle_timeout(now),
                        Node::Receiver(n) => n.handle_timeout(now),
                        Node::Router(n, env) => {
                            env.now = now;
                            n.handle_timeout(now, env);
                        }
                    }
                }
            }
        }
        self.now = end;
    }

    fn router(&self, i: usize) -> (&Router, &RouterEnv) {
        match &self.nodes[i] {
            Node::Router(r, env) => (r, env),
            _ => panic!("not a router"),
        }
    }

    fn sender(&self) -> &Sender {
        match &self.nodes[S] {
            Node::Sender(s) => s,
            _ => panic!("not the sender"),
        }
    }

    fn events_of(&self, node: usize) -> Vec<(Instant, Event)> {
        self.events
            .iter()
            .filter(|(_, n, _)| *n == node)
            .map(|(t, _, e)| (*t, e.clone()))
            .collect()
    }
}

fn at_ms(ms: u64) -> Instant {
    Instant::from_nanos(ms * 1_000_000)
}

fn asked() -> FlowSpec {
    ServiceKind::ControlledLoad.flowspec(tspec())
}

#[test]
fn a_flow_is_reserved_on_both_routers_and_confirmed_to_the_receiver() {
    let mut net = Net::chain();
    net.run_until(at_ms(100));
    let f = flow();
    // Path S→r1→r2→R (3 ms), Resv back (3 ms); ResvConf S→R through both routers (3 ms)
    assert_eq!(
        net.events_of(S),
        vec![(
            at_ms(6),
            Event::Reserved {
                flow: f,
                setup: Duration::from_millis(6)
            }
        )]
    );
    assert_eq!(
        net.events_of(RX),
        vec![(at_ms(9), Event::Confirmed { flow: f })]
    );
    for (r, admit_at) in [(R2, 4), (R1, 5)] {
        let (router, env) = net.router(r);
        assert_eq!(env.admits, vec![(at_ms(admit_at), 1, f, asked(), None)]);
        assert_eq!(router.installed(1, &f), Some(&asked()));
        assert_eq!(router.stats().installed, 1);
    }
    let kinds: Vec<(u64, usize, usize, MsgType)> = net
        .log
        .iter()
        .map(|(t, a, b, k)| (t.as_nanos() / 1_000_000, *a, *b, *k))
        .collect();
    assert_eq!(
        kinds,
        vec![
            (1, S, R1, MsgType::Path),
            (2, R1, R2, MsgType::Path),
            (3, R2, RX, MsgType::Path),
            (4, RX, R2, MsgType::Resv),
            (5, R2, R1, MsgType::Resv),
            (6, R1, S, MsgType::Resv),
            (9, S, RX, MsgType::ResvConf),
        ]
    );

    // twenty refresh periods later: refreshed, never admitted again, nothing timed out
    net.run_until(Instant::ZERO + Duration::from_secs(600));
    for r in [R1, R2] {
        let (router, env) = net.router(r);
        assert_eq!(env.admits.len(), 1);
        assert!(env.releases.is_empty());
        let s = router.stats();
        assert_eq!(
            (
                s.path_timeouts,
                s.resv_timeouts,
                s.path_states,
                s.resv_states
            ),
            (0, 0, 1, 1)
        );
        // one Path down and one Resv up per refresh, R apart on average
        assert!(
            (30..=50).contains(&s.refreshes_sent),
            "{}",
            s.refreshes_sent
        );
    }
    let resvs_to_sender = net
        .log
        .iter()
        .filter(|(_, from, to, k)| (*from, *to, *k) == (R1, S, MsgType::Resv))
        .count() as u64;
    let flow_state = net.sender().flow(&f).unwrap();
    assert!(flow_state.reserved);
    assert_eq!(flow_state.resv_refreshes, resvs_to_sender - 1);
    assert!(
        flow_state.resv_refreshes >= 10,
        "{}",
        flow_state.resv_refreshes
    );
    assert_eq!(net.events_of(S).len(), 1);
}

#[test]
fn a_killed_sender_s_reservation_is_released_on_every_router_within_l() {
    let mut net = Net::chain();
    let kill = Instant::ZERO + Duration::from_secs(100);
    net.run_until(kill);
    net.dead = Some(S);
    let f = flow();
    let last_path = net
        .log
        .iter()
        .filter(|(_, from, _, k)| (*from, *k) == (S, MsgType::Path))
        .map(|(t, ..)| *t)
        .max()
        .unwrap();
    let l = lifetime(R, 3);
    net.run_until(kill + l + Duration::from_secs(1));
    // r1 times the path out exactly L after the last Path, r2 follows its PathTear
    let (r1, env1) = net.router(R1);
    assert_eq!(env1.releases, vec![(last_path + l, 1, f)]);
    assert_eq!(r1.stats().path_timeouts, 1);
    let (r2, env2) = net.router(R2);
    assert_eq!(env2.releases, vec![(last_path + l + HOP, 1, f)]);
    assert_eq!((r2.stats().path_tears, r2.stats().path_timeouts), (1, 0));
    assert!(last_path + l + HOP <= kill + l + HOP + HOP);
    assert_eq!(
        net.events_of(RX).last(),
        Some(&(
            last_path + l + HOP + HOP,
            Event::PathGone {
                flow: f,
                timed_out: false
            }
        ))
    );
    for r in [R1, R2] {
        let s = net.router(r).0.stats();
        assert_eq!((s.path_states, s.resv_states, s.installed), (0, 0, 0));
    }
}

/// r1 restarts just after a Path from the sender, so r2's Resv refresh is likely to reach
/// it before the sender's next Path does: r1 answers ResvErr 3 (no path state), and r2
/// sends the reservation up again with that next Path instead of a refresh period later.
#[test]
fn a_restarted_router_is_rebuilt_by_the_next_refreshes_within_one_and_a_half_r() {
    let mut net = Net::chain();
    net.run_until(Instant::ZERO + Duration::from_secs(100));
    let f = flow();
    let paths_from_s = |net: &Net, after: Instant| {
        net.log
            .iter()
            .filter(|(t, from, _, k)| (*from, *k) == (S, MsgType::Path) && *t > after)
            .map(|(t, ..)| *t)
            .min()
    };
    let last = net.now;
    net.run_until(last + Duration::from_secs(45));
    let path_at = paths_from_s(&net, last).unwrap();
    let mut net = Net::chain();
    net.run_until(path_at);
    let restart = net.now;
    net.nodes[R1] = r1(); // no state, and traffic control empty too
    let bound = restart + Duration::from_millis(45_000) + HOP + HOP + HOP;
    net.run_until(bound);
    // the unlucky order happened: r2's refresh first, refused for lack of path state
    let refusals: Vec<Instant> = net
        .log
        .iter()
        .filter(|(t, from, to, k)| (*from, *to, *k) == (R1, R2, MsgType::ResvErr) && *t > restart)
        .map(|(t, ..)| *t)
        .collect();
    assert_eq!(refusals.len(), 1);
    let next_path = paths_from_s(&net, restart).unwrap();
    assert!(refusals[0] < next_path);
    let (router, env) = net.router(R1);
    assert!(router.path(&f).is_some());
    assert_eq!(router.resvs(&f).len(), 1);
    assert_eq!(router.installed(1, &f), Some(&asked()));
    // installed when the Path's echo from r2 came back: Path r1→r2, Resv r2→r1
    assert_eq!(
        env.admits,
        vec![(next_path + HOP + HOP, 1, f, asked(), None)]
    );
    assert!(next_path + HOP + HOP <= bound);
    // the sender's reservation never lapsed
    assert!(net.sender().flow(&f).unwrap().reserved);
    assert!(!net
        .events_of(S)
        .iter()
        .any(|(_, e)| matches!(e, Event::Released { .. })));
}

#[test]
fn a_refusal_at_r1_reaches_the_receiver_once_and_the_sender_is_never_reserved() {
    let mut net = Net::chain();
    if let Node::Router(_, env) = &mut net.nodes[R1] {
        env.budget = Some(20_000.0);
    }
    net.run_until(Instant::ZERO + Duration::from_secs(300));
    let f = flow();
    let (r1, env1) = net.router(R1);
    assert_eq!(r1.installed(1, &f), None);
    assert!(env1.admits.len() >= 2, "every Resv refresh asks again");
    assert!(env1.admits.iter().all(|a| a.4.is_none()));
    let (r2, _) = net.router(R2);
    assert_eq!(r2.installed(1, &f), Some(&asked()));
    let refused: Vec<Event> = net.events_of(RX).into_iter().map(|(_, e)| e).collect();
    assert_eq!(refused.len(), 1, "{refused:?}");
    let Event::Refused { flow: rf, error } = &refused[0] else {
        panic!("{refused:?}")
    };
    assert_eq!(*rf, f);
    assert_eq!((error.node, error.code, error.value), (ip(3, 1), 1, 2));
    assert!(net.events_of(S).is_empty());
    assert_eq!(
        r1.stats().refused.get(&1).copied(),
        Some(env1.admits.len() as u64)
    );
}

#[test]
fn a_sender_s_tear_removes_the_reservation_everywhere_at_once() {
    let mut net = Net::chain();
    net.run_until(at_ms(100));
    let f = flow();
    if let Node::Sender(s) = &mut net.nodes[S] {
        s.tear(&f).unwrap();
        assert!(s.flow(&f).is_none());
    }
    net.run_until(at_ms(200));
    assert_eq!(net.router(R1).1.releases, vec![(at_ms(101), 1, f)]);
    assert_eq!(net.router(R2).1.releases, vec![(at_ms(102), 1, f)]);
    assert_eq!(
        net.events_of(RX).last(),
        Some(&(
            at_ms(103),
            Event::PathGone {
                flow: f,
                timed_out: false
            }
        ))
    );
}
