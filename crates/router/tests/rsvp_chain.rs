//! sender host → r1 → r2 → receiver host, wired back to back in memory: the routers are
//! two `RouterState`s (a `Forwarder`, the egresses a QoS file builds, and their
//! `RsvpRouter`), the hosts `rsvp::Sender` and `rsvp::Receiver` engines. A harness moves
//! Ethernet frames over the links, 1 ms per link, in virtual time: what a router sends is
//! what its forwarder framed, and what it takes in is what its forwarder hands over as
//! `Action::Signal` (anything it forwards goes on to the next link, as a ResvConf does).
//!
//! Addresses of the two-hop lab: link 1 sender–r1, link 3 r1–r2, link 4 r2–receiver
//! (198.18.k.0/24, 2001:2:0:k::/64). r1's to-r2 has the policy with the signalled
//! flow-label table and an `rsvp_bandwidth`; r2 is a transit RSVP router (`[rsvp]` only).

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use router::config::CheckedConfig;
use router::egress::{Egress, QosFile};
use router::forward::{Action, Forwarder, Output};
use router::rsvp::{build, ip_packet, rsvp_payload, Budget};
use router::state::{RouterState, ThreadTimes};
use router::stats::WriterStats;
use rsvp::{lifetime, Config, Event, Flow, Receiver, Sender, ServiceKind, Transmit};
use wire::ethernet::{self, EtherType};
use wire::rsvp::{code, FilterSpec, Message, MsgType, Session, TokenBucket};
use wire::time::{Duration, Instant};
use wire::{ipv4, ipv6};

const LINK: Duration = Duration::from_millis(1);
const R: Duration = Duration::from_secs(30);

const MAC_S: [u8; 6] = [2, 0x64, 0x70, 0, 1, 2];
const MAC_R1: [[u8; 6]; 2] = [[2, 0x64, 0x70, 0, 1, 1], [2, 0x64, 0x70, 0, 3, 1]];
const MAC_R2: [[u8; 6]; 2] = [[2, 0x64, 0x70, 0, 3, 2], [2, 0x64, 0x70, 0, 4, 1]];
const MAC_RX: [u8; 6] = [2, 0x64, 0x70, 0, 4, 2];

fn mac(m: [u8; 6]) -> String {
    ethernet::Address(m).to_string()
}

fn v6(s: &str) -> Ipv6Addr {
    s.parse().unwrap()
}

fn emulation(rate_bps: u64) -> String {
    format!(
        "[interface.emulation]\nrate_bps = {rate_bps}\ndelay_ns = 0\njitter_ns = 0\nlimit_packets = 1000\n[interface.emulation.loss]\nmodel = \"none\"\n"
    )
}

fn iface(name: &str, k: u8, host: u8, rate_bps: u64) -> String {
    format!(
        "[[interface]]\nname = \"{name}\"\nipv4 = \"198.18.{k}.{host}/24\"\nipv6 = \"2001:2:0:{k}::{host}/64\"\nmtu = 1500\n{}",
        emulation(rate_bps)
    )
}

fn route(k: u8, via_k: u8, via_host: u8, name: &str) -> String {
    format!(
        "[[route]]\nprefix = \"198.18.{k}.0/24\"\nvia = \"198.18.{via_k}.{via_host}\"\ninterface = \"{name}\"\n\
         [[route]]\nprefix = \"2001:2:0:{k}::/64\"\nvia = \"2001:2:0:{via_k}::{via_host}\"\ninterface = \"{name}\"\n"
    )
}

fn neighbor(name: &str, k: u8, host: u8, m: [u8; 6]) -> String {
    format!(
        "[[neighbor]]\ninterface = \"{name}\"\nip = \"198.18.{k}.{host}\"\nmac = \"{m}\"\n\
         [[neighbor]]\ninterface = \"{name}\"\nip = \"2001:2:0:{k}::{host}\"\nmac = \"{m}\"\n",
        m = mac(m)
    )
}

fn r1_config() -> CheckedConfig {
    let text = [
        "seed = 1\n".to_owned(),
        iface("to-sender", 1, 1, 0),
        iface("to-r2", 3, 1, 10_000_000),
        route(4, 3, 2, "to-r2"),
        neighbor("to-sender", 1, 2, MAC_S),
        neighbor("to-r2", 3, 2, MAC_R2[0]),
    ]
    .concat();
    CheckedConfig::from_toml(&text).unwrap()
}

fn r2_config() -> CheckedConfig {
    let text = [
        "seed = 2\n".to_owned(),
        iface("to-r1", 3, 2, 0),
        iface("to-receiver", 4, 1, 0),
        route(1, 3, 1, "to-r1"),
        neighbor("to-r1", 3, 1, MAC_R1[1]),
        neighbor("to-receiver", 4, 2, MAC_RX),
    ]
    .concat();
    CheckedConfig::from_toml(&text).unwrap()
}

/// r1's QoS file: the signalled flow-label table served by a 70 % class, `budget` of
/// reservable bandwidth on to-r2.
fn r1_qos(budget: &str) -> String {
    format!(
        r#"version = 1
[rsvp]
refresh = "30s"
keep = 3

[[class_map]]
name = "reserved"
reservation = "rsvp"

[[policy_map]]
name = "intserv"

[[policy_map.reservation]]
name = "rsvp"
key = "flow-label"
max_flows = 1000
signalled = true

[[policy_map.class]]
name = "reserved"
bandwidth = "70%"

[[policy_map.class]]
name = "class-default"

[[service_policy]]
interface = "to-r2"
output = "intserv"
rsvp_bandwidth = "{budget}"
"#
    )
}

/// A QoS file without `[rsvp]`: one FIFO class on to-r2.
const FIFO: &str = "version = 1\n[[policy_map]]\nname = \"fifo\"\n[[policy_map.class]]\nname = \"class-default\"\n[[service_policy]]\ninterface = \"to-r2\"\noutput = \"fifo\"\n";

const TRANSIT: &str = "version = 1\n[rsvp]\nrefresh = \"30s\"\nkeep = 3\n";

const THREAD: ThreadTimes = ThreadTimes {
    cpu_ns: 0,
    sched: None,
};

fn router(cfg: &CheckedConfig, macs: [[u8; 6]; 2], qos: &str) -> RouterState {
    let ifaces = (0..2)
        .map(|i| cfg.interface(i, ethernet::Address(macs[i]), None).unwrap())
        .collect();
    let fwd = Forwarder::new(ifaces, cfg.routes.clone(), cfg.neighbors.clone()).unwrap();
    let built = build(cfg, Some(file(qos)), Instant::ZERO).unwrap();
    let mut state = RouterState::new(fwd, built.egress, THREAD);
    state.set_rsvp(built.rsvp.as_ref(), cfg.seed);
    state
}

fn file(text: &str) -> QosFile<'_> {
    QosFile {
        name: "qos.toml",
        text,
    }
}

/// The receiver's session and the sender's flow-label template.
fn flow() -> Flow {
    Flow {
        session: Session {
            dst: IpAddr::V6(v6("2001:2:0:4::2")),
            protocol: 17,
            flags: 0,
            dst_port: 5001,
        },
        sender: FilterSpec::FlowLabel {
            src: v6("2001:2:0:1::2"),
            flow_label: 0x12345,
        },
    }
}

/// 200 kbit/s in packets of 1298 bytes of IP (1250 of audio): the study's audio flow.
fn tspec() -> TokenBucket {
    TokenBucket {
        rate_bytes_per_s: 25_000.0,
        depth_bytes: 2_600.0,
        peak_bytes_per_s: f32::INFINITY,
        min_policed_bytes: 64,
        max_packet_bytes: 1_400,
    }
}

fn config(seed: u64) -> Config {
    Config {
        refresh: R,
        keep: 3,
        seed,
    }
}

/// Where a frame goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Node {
    Sender,
    Router(usize, usize),
    Receiver,
}

struct Net {
    now: Instant,
    routers: [RouterState; 2],
    sender: Sender,
    receiver: Receiver,
    /// The sender's messages are lost from now on (a killed sender).
    sender_dead: bool,
    queue: BinaryHeap<Reverse<(Instant, usize)>>,
    frames: Vec<Option<(Node, Vec<u8>)>>,
    /// RSVP messages taken in: (when, where, kind).
    log: Vec<(Instant, Node, MsgType)>,
    events: Vec<(Instant, Event)>,
}

impl Net {
    fn new(r1_budget: &str) -> Self {
        Self::with(r1_budget, flow())
    }

    /// The chain with `flow` added at the sender (and its session at the receiver).
    fn with(r1_budget: &str, flow: Flow) -> Self {
        let mut sender = Sender::new(config(1));
        let mut receiver = Receiver::new(config(4));
        receiver.add_session(flow.session, ServiceKind::ControlledLoad);
        let f = sender
            .add_flow(
                Instant::ZERO,
                flow.session,
                flow.sender,
                tspec(),
                ServiceKind::ControlledLoad,
            )
            .unwrap();
        assert_eq!(f, flow);
        Self {
            now: Instant::ZERO,
            routers: [
                router(&r1_config(), MAC_R1, &r1_qos(r1_budget)),
                router(&r2_config(), MAC_R2, TRANSIT),
            ],
            sender,
            receiver,
            sender_dead: false,
            queue: BinaryHeap::new(),
            frames: Vec::new(),
            log: Vec::new(),
            events: Vec::new(),
        }
    }

    /// What is at the far end of `node`'s link.
    fn across(node: Node) -> Node {
        match node {
            Node::Sender => Node::Router(0, 0),
            Node::Router(0, 0) => Node::Sender,
            Node::Router(0, 1) => Node::Router(1, 0),
            Node::Router(1, 0) => Node::Router(0, 1),
            Node::Router(1, 1) => Node::Receiver,
            Node::Receiver => Node::Router(1, 1),
            Node::Router(..) => unreachable!(),
        }
    }

    fn put(&mut self, from: Node, frame: Vec<u8>) {
        self.frames.push(Some((Self::across(from), frame)));
        self.queue
            .push(Reverse((self.now + LINK, self.frames.len() - 1)));
    }

    /// A host's message, framed for the router on its link.
    fn host_sends(&mut self, from: Node, t: &Transmit) {
        let packet = ip_packet(t).unwrap();
        let (src, dst) = match from {
            Node::Sender => (MAC_S, MAC_R1[0]),
            _ => (MAC_RX, MAC_R2[1]),
        };
        let ethertype = match t.dst {
            IpAddr::V4(_) => EtherType::Ipv4,
            IpAddr::V6(_) => EtherType::Ipv6,
        };
        self.put(from, eth(src, dst, ethertype, &packet));
    }

    fn flush(&mut self) {
        while let Some(t) = self.sender.poll_transmit() {
            if !self.sender_dead {
                self.host_sends(Node::Sender, &t);
            }
        }
        while let Some(t) = self.receiver.poll_transmit() {
            self.host_sends(Node::Receiver, &t);
        }
        let now = self.now;
        let from_sender = std::iter::from_fn(|| self.sender.poll_event());
        let mut events: Vec<Event> = from_sender.collect();
        events.extend(std::iter::from_fn(|| self.receiver.poll_event()));
        self.events.extend(events.into_iter().map(|e| (now, e)));
    }

    fn deliver(&mut self, to: Node, mut frame: Vec<u8>) {
        let now = self.now;
        match to {
            Node::Router(r, i) => {
                let mut out = Vec::new();
                let state = &mut self.routers[r];
                match state.fwd.handle_frame_in_place(i, &mut frame) {
                    Action::Signal { iface, start, len } => {
                        let packet = &frame[start..start + len];
                        let (_, _, body) = rsvp_payload(packet).unwrap();
                        if let Ok(m) = Message::parse(body) {
                            self.log.push((now, to, m.kind));
                        }
                        state.signal(now, iface, packet, &mut out);
                    }
                    Action::Forward { iface, len } => {
                        frame.truncate(len);
                        out.push(Output { iface, frame });
                    }
                    Action::Reply(o) => out.push(o),
                    Action::Drop => panic!("{to:?} dropped a frame at {now:?}"),
                }
                for o in out {
                    self.put(Node::Router(r, o.iface), o.frame);
                }
            }
            Node::Sender | Node::Receiver => {
                let (src, _, body) = rsvp_payload(&frame[ethernet::HEADER_LEN..]).unwrap();
                let msg = Message::parse(body).unwrap();
                self.log.push((now, to, msg.kind));
                match to {
                    Node::Sender if !self.sender_dead => self.sender.handle_message(now, src, msg),
                    Node::Receiver => self.receiver.handle_message(now, src, msg),
                    _ => {}
                }
            }
        }
    }

    fn next_timer(&self) -> Option<Instant> {
        let hosts = [self.sender.poll_timeout(), self.receiver.poll_timeout()];
        let routers = self
            .routers
            .iter()
            .map(|r| r.rsvp.as_ref().and_then(|x| x.poll_timeout()));
        hosts.into_iter().chain(routers).flatten().min()
    }

    fn run_until(&mut self, end: Instant) {
        loop {
            self.flush();
            let next_frame = self.queue.peek().map(|Reverse((at, _))| *at);
            let Some(next) = [next_frame, self.next_timer()].into_iter().flatten().min() else {
                break;
            };
            if next > end {
                break;
            }
            self.now = self.now.max(next);
            let now = self.now;
            while let Some(&Reverse((at, i))) = self.queue.peek() {
                if at > now {
                    break;
                }
                self.queue.pop();
                let (to, frame) = self.frames[i].take().unwrap();
                self.deliver(to, frame);
            }
            if self.sender.poll_timeout().is_some_and(|t| t <= now) {
                self.sender.handle_timeout(now);
            }
            if self.receiver.poll_timeout().is_some_and(|t| t <= now) {
                self.receiver.handle_timeout(now);
            }
            for r in 0..2 {
                let mut out = Vec::new();
                self.routers[r].rsvp_timeout(now, &mut out);
                for o in out {
                    self.put(Node::Router(r, o.iface), o.frame);
                }
            }
        }
        self.now = end;
    }

    fn budget(&self, r: usize, iface: usize) -> Budget {
        self.routers[r]
            .rsvp
            .as_ref()
            .unwrap()
            .budget(iface)
            .unwrap()
            .clone()
    }

    /// The class r1's policy on to-r2 gives a data packet of the flow with `label`,
    /// forwarded by r1 from the sender (0: reserved, 1: class-default).
    fn r1_class(&mut self, label: u32) -> usize {
        self.r1_class_of(EtherType::Ipv6, &udp6(label))
    }

    /// The class r1's policy on to-r2 gives `packet` from the sender, forwarded by r1.
    fn r1_class_of(&mut self, ethertype: EtherType, packet: &[u8]) -> usize {
        let mut f = eth(MAC_S, MAC_R1[0], ethertype, packet);
        let now = self.now;
        let r1 = &mut self.routers[0];
        let Action::Forward { iface: 1, len } = r1.fwd.handle_frame_in_place(0, &mut f) else {
            panic!("not forwarded to to-r2")
        };
        let Egress::Policy(p) = &mut r1.egress[1] else {
            panic!("no policy on to-r2")
        };
        p.classify(&f[..len], now)
    }

    fn r1_table(&self) -> qos::policy::ReservationStats {
        let Egress::Policy(p) = &self.routers[0].egress[1] else {
            panic!("no policy on to-r2")
        };
        p.reservation_stats()[0].clone()
    }

    fn taken_in(&self, node: Node, kind: MsgType) -> Vec<Instant> {
        self.log
            .iter()
            .filter(|(_, n, k)| *n == node && *k == kind)
            .map(|(t, _, _)| *t)
            .collect()
    }
}

fn eth(src: [u8; 6], dst: [u8; 6], ethertype: EtherType, packet: &[u8]) -> Vec<u8> {
    let mut f = vec![0u8; ethernet::HEADER_LEN + packet.len()];
    ethernet::Repr {
        src_addr: ethernet::Address(src),
        dst_addr: ethernet::Address(dst),
        ethertype,
    }
    .emit(&mut ethernet::Frame::new_unchecked(&mut f[..]));
    f[ethernet::HEADER_LEN..].copy_from_slice(packet);
    f
}

/// A 1298-byte UDP packet of the audio flow (port 4000 → 5001) with flow `label`.
fn udp6(label: u32) -> Vec<u8> {
    let payload_len = 8 + 1250;
    let mut p = vec![0u8; ipv6::HEADER_LEN + payload_len];
    ipv6::Repr {
        src_addr: v6("2001:2:0:1::2"),
        dst_addr: v6("2001:2:0:4::2"),
        next_header: ipv4::PROTO_UDP,
        payload_len,
        hop_limit: 64,
        traffic_class: 0,
        flow_label: label,
    }
    .emit(&mut ipv6::Packet::new_unchecked(&mut p[..]));
    p[40..44].copy_from_slice(&[0x0f, 0xa0, 0x13, 0x89]);
    p
}

/// A 1278-byte UDP packet from the sender's `port` to the receiver's 5001 over IPv4.
fn udp4(port: u16) -> Vec<u8> {
    let payload_len = 8 + 1250;
    let mut p = vec![0u8; ipv4::HEADER_LEN + payload_len];
    ipv4::Repr {
        src_addr: Ipv4Addr::new(198, 18, 1, 2),
        dst_addr: Ipv4Addr::new(198, 18, 4, 2),
        protocol: ipv4::PROTO_UDP,
        payload_len,
        ttl: 64,
        dscp: 0,
        ecn: 0,
        ident: 0,
        dont_frag: false,
    }
    .emit(&mut ipv4::Packet::new_unchecked(&mut p[..]));
    p[20..22].copy_from_slice(&port.to_be_bytes());
    p[22..24].copy_from_slice(&5001u16.to_be_bytes());
    p
}

fn ms(n: u64) -> Instant {
    Instant::from_nanos(n * 1_000_000)
}

#[test]
fn path_and_resv_through_two_routers_install_the_flow_in_r1s_policy_only() {
    let mut net = Net::new("1mbit");
    assert_eq!(net.r1_class(0x12345), 1, "nothing reserved before RSVP");
    net.run_until(ms(1_000));
    // Path with Router Alert was taken in at r1 (from the sender) and r2 (from r1),
    // the Resv at r2 (from the receiver) and r1 (from r2); the ResvConf to the receiver
    // was forwarded, not taken in.
    for (r, iface, kind) in [
        (0, 0, MsgType::Path),
        (1, 0, MsgType::Path),
        (1, 1, MsgType::Resv),
        (0, 1, MsgType::Resv),
    ] {
        assert_eq!(
            net.taken_in(Node::Router(r, iface), kind).len(),
            1,
            "{r} {iface} {kind:?}"
        );
        assert_eq!(net.routers[r].fwd.stats()[iface].rsvp, 1);
    }
    assert_eq!(net.log.len(), 4 + 2 + 1, "{:?}", net.log);
    assert_eq!(net.taken_in(Node::Receiver, MsgType::ResvConf), [ms(9)]);
    // Path 3 links, Resv 3 links back: reserved 6 ms after the first Path.
    assert_eq!(
        net.events,
        [
            (
                ms(6),
                Event::Reserved {
                    flow: flow(),
                    setup: Duration::from_millis(6)
                }
            ),
            (ms(9), Event::Confirmed { flow: flow() }),
        ]
    );
    // r1 installed 25,000 bytes/s = 200 kbit/s on to-r2; r2 has no rsvp_bandwidth.
    assert_eq!(
        net.budget(0, 1),
        Budget {
            reservable_bps: Some(1_000_000),
            reserved_bps: 200_000,
            reservations: 1,
            unmanaged: 0,
        }
    );
    assert_eq!(net.budget(0, 0), Budget::default());
    assert_eq!(
        net.budget(1, 1),
        Budget {
            unmanaged: 1,
            ..Budget::default()
        }
    );
    let t = net.r1_table();
    assert_eq!((t.flows, t.installed, t.removed), (1, 1, 0));
    // The flow's packets are served by the reserved class; another label is not.
    assert_eq!(net.r1_class(0x12345), 0);
    assert_eq!(net.r1_class(0x12346), 1);
    // The stats document says so, and reads back.
    let doc = net.routers[0].stats(1_000_000_000, THREAD, WriterStats::default(), &[0, 0]);
    let rsvp = doc.rsvp.clone().unwrap();
    assert_eq!((rsvp.refresh_ms, rsvp.keep), (30_000, 3));
    assert_eq!((rsvp.engine.installed, rsvp.engine.admitted), (1, 1));
    assert_eq!(
        (rsvp.engine.messages_in.path, rsvp.engine.messages_in.resv),
        (1, 1)
    );
    assert_eq!(
        (rsvp.engine.messages_out.path, rsvp.engine.messages_out.resv),
        (1, 1)
    );
    assert_eq!((rsvp.not_rsvp, rsvp.unsent), (0, 0));
    let names: Vec<&str> = rsvp.interfaces.iter().map(|i| i.name.as_str()).collect();
    assert_eq!(names, ["to-sender", "to-r2"]);
    assert_eq!(
        (
            rsvp.interfaces[1].reservable_bps,
            rsvp.interfaces[1].reserved_bps
        ),
        (Some(1_000_000), 200_000)
    );
    let v = serde_json::to_value(&doc).unwrap();
    assert_eq!(v["rsvp"]["messages_in"]["path"], 1);
    assert_eq!(v["rsvp"]["interfaces"][1]["reservations"], 1);
    assert_eq!(
        serde_json::from_value::<router::stats::RouterStats>(v).unwrap(),
        doc
    );
    // The loop wakes for the engine's next timer (a refresh, 15 to 45 s on).
    let next = net.routers[0]
        .rsvp
        .as_ref()
        .unwrap()
        .poll_timeout()
        .unwrap();
    assert!(next >= ms(15_000) && next <= ms(45_001), "{next:?}");
    assert_eq!(net.routers[0].wake_ns(1_000_000_000, false), 1_100_000_000);
    assert_eq!(
        net.routers[0].wake_ns(next.as_nanos() - 1, false),
        next.as_nanos()
    );
}

#[test]
fn a_resv_above_rsvp_bandwidth_is_refused_and_the_receiver_hears_of_it() {
    let mut net = Net::new("150kbit");
    net.run_until(ms(1_000));
    // r1 refused at 5 ms: ResvErr back down to r2 (6 ms) and the receiver (7 ms).
    let refused = net
        .events
        .iter()
        .find_map(|(t, e)| match e {
            Event::Refused { flow: f, error } if *f == flow() => Some((*t, *error)),
            _ => None,
        })
        .expect("refused");
    assert_eq!(refused.0, ms(7));
    assert_eq!(
        (refused.1.code, refused.1.value, refused.1.node),
        (
            code::ADMISSION,
            code::ADMISSION_BANDWIDTH,
            IpAddr::V6(v6("2001:2:0:3::1"))
        )
    );
    assert_eq!(
        net.taken_in(Node::Router(1, 1), MsgType::ResvErr),
        [] as [Instant; 0]
    );
    assert_eq!(net.taken_in(Node::Router(1, 0), MsgType::ResvErr), [ms(6)]);
    assert!(!net
        .events
        .iter()
        .any(|(_, e)| matches!(e, Event::Reserved { .. })));
    // Nothing installed, the budget untouched, the flow's packets best effort.
    assert_eq!(
        net.budget(0, 1),
        Budget {
            reservable_bps: Some(150_000),
            ..Budget::default()
        }
    );
    let t = net.r1_table();
    assert_eq!((t.flows, t.installed), (0, 0));
    assert_eq!(net.r1_class(0x12345), 1);
    let s = net.routers[0]
        .rsvp
        .as_ref()
        .unwrap()
        .engine()
        .stats()
        .clone();
    assert_eq!((s.installed, s.admitted, s.refused_total()), (0, 0, 1));
    assert_eq!(s.refused.get(&code::ADMISSION), Some(&1));
}

#[test]
fn a_path_tear_releases_the_reservation_at_once() {
    let mut net = Net::new("1mbit");
    net.run_until(ms(1_000));
    assert_eq!(net.budget(0, 1).reserved_bps, 200_000);
    net.sender.tear(&flow()).unwrap();
    net.run_until(ms(2_000));
    assert_eq!(
        net.taken_in(Node::Router(0, 0), MsgType::PathTear),
        [ms(1_001)]
    );
    assert_eq!(
        net.budget(0, 1),
        Budget {
            reservable_bps: Some(1_000_000),
            ..Budget::default()
        }
    );
    assert_eq!(net.budget(1, 1), Budget::default());
    let t = net.r1_table();
    assert_eq!((t.flows, t.installed, t.removed), (0, 1, 1));
    assert_eq!(net.r1_class(0x12345), 1);
}

#[test]
fn a_killed_senders_reservation_goes_l_after_its_last_path() {
    let mut net = Net::new("1mbit");
    net.run_until(ms(100_000));
    net.sender_dead = true;
    let last = *net
        .taken_in(Node::Router(0, 0), MsgType::Path)
        .last()
        .unwrap();
    assert!(last > ms(15_000), "refreshed: {last:?}");
    let l = lifetime(R, 3);
    assert_eq!(l, Duration::from_millis(157_500));
    let gone = last + l;
    // The receiver's Resv refreshes keep coming; without Path refreshes r1's state goes
    // exactly L after the last Path it took in, and what it installed with it.
    net.run_until(Instant::from_nanos(gone.as_nanos() - 1));
    assert_eq!(net.budget(0, 1).reserved_bps, 200_000);
    assert_eq!(net.r1_table().flows, 1);
    net.run_until(gone);
    assert_eq!(net.budget(0, 1).reserved_bps, 0);
    assert_eq!(net.budget(0, 1).reservations, 0);
    let t = net.r1_table();
    assert_eq!((t.flows, t.removed), (0, 1));
    let s = net.routers[0]
        .rsvp
        .as_ref()
        .unwrap()
        .engine()
        .stats()
        .clone();
    assert_eq!((s.path_timeouts, s.installed), (1, 0));
    // r1 sent the PathTear on: r2 lets go at once (1 ms), not L after its own last Path.
    net.run_until(gone + LINK);
    assert_eq!(net.budget(1, 1).unmanaged, 0);
}

#[test]
fn a_qos_reload_keeps_rsvp_state_and_installs_it_again_in_the_new_policy() {
    let mut net = Net::new("1mbit");
    net.run_until(ms(1_000));
    let reload = |net: &mut Net, text: &str| {
        let built = build(&r1_config(), Some(file(text)), net.now).unwrap();
        let now = net.now;
        net.routers[0].reloaded(built.egress, built.rsvp.as_ref(), now);
    };
    // The same file: a new, empty policy, and the flow installed in it again at once.
    reload(&mut net, &r1_qos("1mbit"));
    assert_eq!(net.budget(0, 1).reserved_bps, 200_000);
    let t = net.r1_table();
    assert_eq!((t.flows, t.installed, t.lookups), (1, 1, 0));
    assert_eq!(net.r1_class(0x12345), 0);
    net.run_until(ms(1_100));
    assert!(!net
        .events
        .iter()
        .any(|(_, e)| matches!(e, Event::Refused { .. })));
    // A smaller budget: the reservation no longer fits, ResvErr to the receiver.
    reload(&mut net, &r1_qos("100kbit"));
    assert_eq!(
        net.budget(0, 1),
        Budget {
            reservable_bps: Some(100_000),
            ..Budget::default()
        }
    );
    assert_eq!(net.r1_table().flows, 0);
    assert_eq!(net.r1_class(0x12345), 1);
    net.run_until(ms(1_200));
    let refused: Vec<(Instant, u8, u16)> = net
        .events
        .iter()
        .filter_map(|(t, e)| match e {
            Event::Refused { error, .. } => Some((*t, error.code, error.value)),
            _ => None,
        })
        .collect();
    assert_eq!(refused, [(ms(1_102), 1, 2)]);
    // A file without [rsvp]: RSVP ends, the forwarder passes RSVP on as any packet.
    reload(&mut net, FIFO);
    assert!(net.routers[0].rsvp.is_none());
    assert!(!net.routers[0].fwd.rsvp());
}

#[test]
fn an_ipv4_flow_is_installed_by_its_5_tuple_in_the_flow_label_table() {
    let v4 = Flow {
        session: Session {
            dst: IpAddr::V4(Ipv4Addr::new(198, 18, 4, 2)),
            ..flow().session
        },
        sender: FilterSpec::V4 {
            src: Ipv4Addr::new(198, 18, 1, 2),
            src_port: 4000,
        },
    };
    let mut net = Net::with("1mbit", v4);
    net.run_until(ms(1_000));
    assert_eq!(net.taken_in(Node::Router(0, 0), MsgType::Path), [ms(1)]);
    assert_eq!(net.taken_in(Node::Router(0, 1), MsgType::Resv), [ms(5)]);
    assert_eq!(net.budget(0, 1).reserved_bps, 200_000);
    assert_eq!(net.r1_table().flows, 1);
    assert_eq!(net.r1_class_of(EtherType::Ipv4, &udp4(4000)), 0);
    assert_eq!(net.r1_class_of(EtherType::Ipv4, &udp4(4001)), 1);
}

#[test]
fn an_ipv6_port_filter_finds_no_table_in_a_flow_label_policy_and_is_refused_21_2() {
    let by_port = Flow {
        sender: FilterSpec::V6 {
            src: v6("2001:2:0:1::2"),
            src_port: 4000,
        },
        ..flow()
    };
    let mut net = Net::with("1mbit", by_port);
    net.run_until(ms(1_000));
    let refused: Vec<(Instant, u8, u16)> = net
        .events
        .iter()
        .filter_map(|(t, e)| match e {
            Event::Refused { error, .. } => Some((*t, error.code, error.value)),
            _ => None,
        })
        .collect();
    assert_eq!(
        refused,
        [(ms(7), code::TRAFFIC_CONTROL, code::TC_SERVICE_UNSUPPORTED)]
    );
    assert_eq!(net.budget(0, 1).reserved_bps, 0);
    assert_eq!(net.r1_table().flows, 0);
}

#[test]
fn a_path_with_an_unknown_object_class_gets_path_err_13_back_and_garbage_is_only_counted() {
    let mut net = Net::new("1mbit");
    // The sender's first Path, with an object of unknown class 48 (0b00110000: a node
    // must refuse the message, RFC 2205 §3.10) added, sent without a checksum.
    let t = net.sender.poll_transmit().unwrap();
    assert_eq!(t.message.kind, MsgType::Path);
    let mut body = t.message.to_bytes();
    body.extend_from_slice(&[0, 4, 48, 1]);
    let len = u16::try_from(body.len()).unwrap();
    body[6..8].copy_from_slice(&len.to_be_bytes());
    body[2..4].copy_from_slice(&[0, 0]);
    let (IpAddr::V6(src), IpAddr::V6(dst)) = (t.src, t.dst) else {
        panic!("an IPv6 session")
    };
    let packet = wire::alert::ipv6_packet_with_alert(src, dst, 64, 46, &body);
    net.put(
        Node::Sender,
        eth(MAC_S, MAC_R1[0], EtherType::Ipv6, &packet),
    );
    // Garbage after a Router Alert: taken in, not an RSVP message that parses.
    let junk = wire::alert::ipv6_packet_with_alert(src, dst, 64, 46, &[0x10, 1, 0, 0]);
    net.put(Node::Sender, eth(MAC_S, MAC_R1[0], EtherType::Ipv6, &junk));
    net.run_until(ms(1_000));
    // PathErr (code 13, Unknown object class) from r1 to the sender's RSVP_HOP: the one
    // message that left r1. (The sender cannot match it to a flow: r1 could read no
    // SENDER_TEMPLATE from a message that did not parse, so it names only the session.)
    let to_sender: Vec<(Instant, MsgType)> = net
        .log
        .iter()
        .filter(|(_, n, _)| *n == Node::Sender)
        .map(|(t, _, k)| (*t, *k))
        .collect();
    assert_eq!(to_sender, [(ms(2), MsgType::PathErr)]);
    let s = net.routers[0]
        .rsvp
        .as_ref()
        .unwrap()
        .engine()
        .stats()
        .clone();
    assert_eq!((s.malformed, s.messages_in.path), (2, 0));
    assert_eq!(s.messages_out.path_err, 1);
    assert_eq!(s.messages_out.total(), 1);
    assert_eq!(s.refused.get(&code::UNKNOWN_CLASS), Some(&1));
    assert_eq!(net.routers[0].fwd.stats()[0].rsvp, 2);
    // Nothing reached r2, and nothing was reserved.
    assert_eq!(net.routers[1].fwd.stats()[0].rsvp, 0);
    assert_eq!(net.budget(0, 1).reserved_bps, 0);
}
