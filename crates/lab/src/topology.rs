//! Lab topologies: hosts and routers joined by point-to-point links, read from TOML and
//! resolved into everything `lab up` builds: namespaces, veth pairs with fixed MACs,
//! dual-stack addresses from the benchmarking ranges, routes, static neighbours, and
//! each router's `dualperf route` configuration.
//!
//! ```toml
//! version = 1
//! name = "two-hop"
//!
//! [[node]]
//! name = "sender"
//! kind = "host"            # or "router", "kernel", "nat44", "tayga"
//! # qos = "qos/policy.toml" # a router's service policies (dualperf route --qos)
//! # cpu = 1                 # pin a router's forwarding thread (dualperf route --cpu)
//!
//! [[link]]
//! a = "sender"
//! b = "r1"
//! mtu = 1500               # default 1500
//! # Emulated where a router sends onto the link (hosts send as the kernel does):
//! rate = "10mbit"          # default: no limit
//! delay = "5ms"            # one way; default 0
//! jitter = "1ms"           # uniform ±; default 0
//! loss = "1%"              # or "ge:P,R,LOSS_GOOD,LOSS_BAD" (Gilbert–Elliott, %)
//! limit = 100              # queue limit, packets; default 1000
//! limit_bytes = 150000     # default: none
//! ```
//!
//! Addresses: link `k` (1-based, in file order) is 198.18.k.0/24 and 2001:2:0:k::/64;
//! side `a` is `.1` / `::1`, side `b` is `.2` / `::2` (RFC 2544 App. C.2.2 and RFC 5180
//! §8 ranges, so nothing here can collide with a real network). MACs are
//! `02:64:70:KK:KK:0S` (locally administered), `KK:KK` the link number and `S` the side.
//! A node's interface toward `peer` is named `to-PEER`.
//!
//! Routing is static: a host's default route points to the router at the far end of its
//! first link to a router; a router reaches every other link's subnet by the shortest
//! path through routers (ties broken by link order).

use std::collections::{BTreeMap, VecDeque};
use std::net::{Ipv4Addr, Ipv6Addr};

use router::config::{
    Emulation, LossModel, RouterConfig, RouterInterface, RouterNeighbor, RouterRoute,
};
use serde::{Deserialize, Serialize};
use toml::Spanned;
use traffic::units::{parse_duration, Rate};
use wire::time::Duration;

/// The topology format this build reads.
pub const TOPOLOGY_VERSION: u32 = 1;
/// Most links (the address plan gives each a /24 of 198.18.0.0/15).
pub const MAX_LINKS: usize = 255;

/// A topology that cannot be used, with its line when known.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}{message}", line.map_or(String::new(), |l| format!("line {l}: ")))]
pub struct TopologyError {
    /// 1-based line.
    pub line: Option<usize>,
    /// What is wrong.
    pub message: String,
}

fn err(line: Option<usize>, message: impl Into<String>) -> TopologyError {
    TopologyError {
        line,
        message: message.into(),
    }
}

/// Host, router, kernel router, kernel NAT44 or TAYGA NAT64.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    /// Sends and receives with the kernel's stack.
    Host,
    /// Forwards with `dualperf route`; the kernel's forwarding is off.
    Router,
    /// Forwards with the kernel and masquerades IPv4 onto its `outside` link with
    /// nftables; IPv6 is routed, not translated (see [`crate::nat44`]).
    Nat44,
    /// Forwards both families with the Linux kernel (`ip_forward`, IPv6 `forwarding`),
    /// with the addresses, routes and static neighbours a router would have: a device
    /// under test that is Linux itself.
    Kernel,
    /// Forwards like [`Kind::Kernel`] and translates between IPv6 and IPv4 with TAYGA,
    /// a stateless NAT64 (RFC 7915, RFC 6052 addresses; see [`crate::tayga`]).
    Tayga,
}

impl Kind {
    /// Whether a node of this kind forwards (routes are found through it).
    pub fn forwards(self) -> bool {
        !matches!(self, Kind::Host)
    }

    /// Whether the kernel holds the node's addresses, routes and neighbours (a router's
    /// are `dualperf route`'s).
    pub fn kernel_addresses(self) -> bool {
        !matches!(self, Kind::Router)
    }

    /// Whether the node forwards with the kernel (`ip_forward`, IPv6 `forwarding` on).
    pub fn kernel_forwards(self) -> bool {
        matches!(self, Kind::Nat44 | Kind::Kernel | Kind::Tayga)
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    version: Spanned<u32>,
    name: Spanned<String>,
    #[serde(default)]
    description: String,
    #[serde(default)]
    node: Vec<Spanned<NodeFile>>,
    #[serde(default)]
    link: Vec<Spanned<LinkFile>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct NodeFile {
    name: String,
    kind: Kind,
    #[serde(default)]
    qos: Option<String>,
    #[serde(default)]
    cpu: Option<usize>,
    #[serde(default)]
    outside: Option<String>,
    #[serde(default)]
    firewall: Option<bool>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct LinkFile {
    a: String,
    b: String,
    #[serde(default)]
    mtu: Option<u32>,
    #[serde(default)]
    rate: Option<String>,
    #[serde(default)]
    delay: Option<String>,
    #[serde(default)]
    jitter: Option<String>,
    #[serde(default)]
    loss: Option<String>,
    #[serde(default)]
    limit: Option<u32>,
    #[serde(default)]
    limit_bytes: Option<u64>,
    #[serde(default)]
    ipv4: Option<crate::linkfamily::FamilyFile>,
    #[serde(default)]
    ipv6: Option<crate::linkfamily::FamilyFile>,
}

/// One side of a link.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct End {
    /// Index into [`Topology::nodes`].
    pub node: usize,
    /// Interface name in the node's namespace.
    pub ifname: String,
    /// MAC address, `02:64:70:…`.
    pub mac: String,
    /// IPv4 address (/24).
    pub ipv4: Ipv4Addr,
    /// IPv6 address (/64).
    pub ipv6: Ipv6Addr,
}

/// A resolved link.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Link {
    /// 1-based number, in file order.
    pub number: usize,
    /// Side `a` and side `b`.
    pub ends: [End; 2],
    /// IP MTU of both ends.
    pub mtu: u32,
    /// IPv6's MTU where a router sends onto the link, when lower than `mtu`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mtu6: Option<u32>,
    /// What routers emulate when they send onto it.
    pub emulation: Emulation,
}

/// A node.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Node {
    /// Name, as written.
    pub name: String,
    /// What it is: host, router, kernel, nat44 or tayga.
    pub kind: Kind,
    /// A router's QoS file (`dualperf route --qos`), read and checked with the topology.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub qos: Option<NodeQos>,
    /// The CPU a router's forwarding thread is pinned to (`dualperf route --cpu`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu: Option<usize>,
    /// A NAT44's outside: the peer its masqueraded IPv4 leaves toward.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outside: Option<String>,
    /// A NAT44 that also drops new connections coming in on its outside, both families.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub firewall: bool,
}

/// A router's QoS file: where it was read from and its text.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct NodeQos {
    /// The file, as resolved (relative paths are taken from the topology's directory).
    pub path: String,
    /// Its text, as read when the topology was.
    pub text: String,
}

/// A route of a node: `prefix/len` via `gateway` out of `ifname`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Route {
    /// Destination prefix; `None` for the default route.
    pub prefix: Option<(std::net::IpAddr, u8)>,
    /// Next hop.
    pub gateway: std::net::IpAddr,
    /// Egress interface.
    pub ifname: String,
}

/// A static neighbour entry of a node.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Neighbor {
    /// The neighbour's address.
    pub ip: std::net::IpAddr,
    /// Its MAC.
    pub mac: String,
    /// The interface it is on.
    pub ifname: String,
}

/// The MAC a lab gives the kernel's side of a router's veth whose router answers to
/// `mac` (`02:64:70:…` becomes `02:64:71:…`; still locally administered, never a
/// lab address).
pub fn kernel_mac(mac: &str) -> String {
    mac.replacen("02:64:70:", "02:64:71:", 1)
}

/// A validated topology.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Topology {
    /// Lab name (namespaces are `dp-NAME.NODE`; names hold no dots, so one lab's prefix is never another's).
    pub name: String,
    /// What it is.
    pub description: String,
    /// Nodes, in file order.
    pub nodes: Vec<Node>,
    /// Links, in file order.
    pub links: Vec<Link>,
}

fn name_ok(s: &str, max: usize) -> bool {
    !s.is_empty()
        && s.len() <= max
        && s.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !s.starts_with('-')
}

/// Whether `s` can name a lab: 1 to 16 of a-z, 0-9 and '-' (no dots, no slashes), so
/// it is safe in paths and namespace names.
pub fn valid_lab_name(s: &str) -> bool {
    name_ok(s, 16)
}

/// What the node keys `outside` and `firewall` allow for node `name` of `kind`: only a
/// NAT44 takes them, and a NAT44 needs `outside`.
pub(crate) fn check_node_keys(
    name: &str,
    kind: Kind,
    outside: Option<&str>,
    firewall: Option<bool>,
) -> Result<(), String> {
    if kind != Kind::Nat44 {
        for (key, given) in [
            ("outside", outside.is_some()),
            ("firewall", firewall.is_some()),
        ] {
            if given {
                return Err(format!("node '{name}': only a nat44 takes {key}"));
            }
        }
    } else if outside.is_none() {
        return Err(format!(
            "node '{name}': a nat44 needs outside = \"PEER\", the node its masqueraded IPv4 leaves toward"
        ));
    }
    Ok(())
}

/// The topology file `text` as TOML, with its format version and lab name checked.
fn read_file(text: &str) -> Result<File, TopologyError> {
    let line_at = |offset: usize| Some(wire::span::line_at(text, offset));
    let file: File = toml::from_str(text).map_err(|e| {
        err(
            e.span().and_then(|s| line_at(s.start)),
            e.message().to_owned(),
        )
    })?;
    if *file.version.get_ref() != TOPOLOGY_VERSION {
        return Err(err(
            line_at(file.version.span().start),
            format!(
                "topology format version {} is not {TOPOLOGY_VERSION}",
                file.version.get_ref()
            ),
        ));
    }
    let name = file.name.get_ref();
    if !name_ok(name, 16) {
        return Err(err(
            line_at(file.name.span().start),
            format!("lab name '{name}': 1 to 16 of a-z, 0-9 and '-'"),
        ));
    }
    Ok(file)
}

/// The node `nf`, declared at `line`, checked against the nodes declared before it
/// (`nodes`); a router's `qos` file is read relative to `base`.
fn resolve_node(
    nf: &NodeFile,
    line: Option<usize>,
    base: Option<&std::path::Path>,
    nodes: &[Node],
) -> Result<Node, TopologyError> {
    // `to-NAME` must fit Linux's 15-byte interface names.
    if !name_ok(&nf.name, 12) {
        return Err(err(
            line,
            format!("node name '{}': 1 to 12 of a-z, 0-9 and '-'", nf.name),
        ));
    }
    if nodes.iter().any(|x| x.name == nf.name) {
        return Err(err(line, format!("node '{}' is declared twice", nf.name)));
    }
    let qos = match &nf.qos {
        None => None,
        Some(_) if nf.kind != Kind::Router => {
            return Err(err(
                line,
                format!("node '{}': only a router takes qos", nf.name),
            ))
        }
        Some(q) => {
            let path = base.map_or_else(|| std::path::PathBuf::from(q), |b| b.join(q));
            let text = std::fs::read_to_string(&path).map_err(|e| {
                err(
                    line,
                    format!("node '{}': qos {}: {e}", nf.name, path.display()),
                )
            })?;
            Some(NodeQos {
                path: path.display().to_string(),
                text,
            })
        }
    };
    if nf.cpu.is_some() && nf.kind != Kind::Router {
        return Err(err(
            line,
            format!("node '{}': only a router takes cpu", nf.name),
        ));
    }
    check_node_keys(&nf.name, nf.kind, nf.outside.as_deref(), nf.firewall)
        .map_err(|m| err(line, m))?;
    Ok(Node {
        name: nf.name.clone(),
        kind: nf.kind,
        qos,
        cpu: nf.cpu,
        outside: nf.outside.clone(),
        firewall: nf.firewall.unwrap_or(false),
    })
}

/// Link `number` (1-based, in file order), `lf` declared at `line`, between two of
/// `nodes` and checked against the links before it (`links`), with its ends'
/// interface names, MACs and addresses.
fn resolve_link(
    number: usize,
    lf: &LinkFile,
    line: Option<usize>,
    nodes: &[Node],
    links: &[Link],
) -> Result<Link, TopologyError> {
    let find = |n: &str| {
        nodes
            .iter()
            .position(|x| x.name == n)
            .ok_or_else(|| err(line, format!("link to unknown node '{n}'")))
    };
    let (a, b) = (find(&lf.a)?, find(&lf.b)?);
    if a == b {
        return Err(err(line, "a link joins two different nodes"));
    }
    if links.iter().any(|x| {
        let (p, q) = (x.ends[0].node, x.ends[1].node);
        (p, q) == (a, b) || (p, q) == (b, a)
    }) {
        return Err(err(
            line,
            format!("a second link between {} and {}", lf.a, lf.b),
        ));
    }
    let mtu = lf.mtu.unwrap_or(1500);
    if !(1280..=65535).contains(&mtu) {
        return Err(err(line, "mtu: 1280 (IPv6's minimum) to 65535"));
    }
    let mut emulation = link_emulation(lf, line)?;
    let routed = [a, b].iter().any(|&n| nodes[n].kind == Kind::Router);
    let family = crate::linkfamily::resolve(lf.ipv4.as_ref(), lf.ipv6.as_ref(), mtu, routed)
        .map_err(|m| err(line, m))?;
    (emulation.ipv4, emulation.ipv6) = (family.ipv4, family.ipv6);
    let end = |node: usize, peer: usize, side: u8| End {
        node,
        ifname: format!("to-{}", nodes[peer].name),
        mac: format!(
            "02:64:70:{:02x}:{:02x}:{:02x}",
            number >> 8,
            number & 0xff,
            side
        ),
        ipv4: Ipv4Addr::new(198, 18, number as u8, side),
        ipv6: Ipv6Addr::new(0x2001, 2, 0, number as u16, 0, 0, 0, u16::from(side)),
    };
    Ok(Link {
        number,
        ends: [end(a, b, 1), end(b, a, 2)],
        mtu,
        mtu6: family.mtu6,
        emulation,
    })
}

/// What the link `lf`, declared at `line`, emulates: its rate, delay, jitter, loss and
/// queue limits (unset ones are 0, no loss and 1000 packets).
fn link_emulation(lf: &LinkFile, line: Option<usize>) -> Result<Emulation, TopologyError> {
    let rate_bps = match &lf.rate {
        None => 0,
        Some(r) => match r.parse::<Rate>() {
            Ok(Rate::Bps(b)) if b > 0 => b,
            _ => return Err(err(line, format!("rate '{r}': a bit rate, e.g. 10mbit"))),
        },
    };
    let dur = |v: &Option<String>, what: &str| -> Result<u64, TopologyError> {
        match v {
            None => Ok(0),
            Some(s) => parse_duration(s)
                .ok()
                .filter(|d| *d <= Duration::from_secs(60))
                .map(Duration::as_nanos)
                .ok_or_else(|| err(line, format!("{what} '{s}': e.g. 5ms, at most 60s"))),
        }
    };
    let delay_ns = dur(&lf.delay, "delay")?;
    let jitter_ns = dur(&lf.jitter, "jitter")?;
    let loss = match &lf.loss {
        None => LossModel::None,
        Some(s) => crate::linkfamily::parse_loss(s).ok_or_else(|| {
            err(
                line,
                format!("loss '{s}': a percentage (1%) or ge:P,R,LOSS_GOOD,LOSS_BAD in %"),
            )
        })?,
    };
    if lf.limit == Some(0) || lf.limit_bytes == Some(0) {
        return Err(err(line, "a queue limit of 0 drops everything"));
    }
    Ok(Emulation {
        rate_bps,
        delay_ns,
        jitter_ns,
        loss,
        limit_packets: lf.limit.unwrap_or(1000),
        limit_bytes: lf.limit_bytes,
        ipv4: None,
        ipv6: None,
    })
}

impl Topology {
    /// Parse and resolve a topology file; a router's `qos` file is read relative to the
    /// current directory (see [`Topology::parse_at`]).
    pub fn parse(text: &str) -> Result<Self, TopologyError> {
        Self::parse_at(text, None)
    }

    /// Parse and resolve a topology file found in directory `base`: a router's `qos`
    /// path is relative to it. Each QoS file is checked against the router's
    /// interfaces and link rates.
    pub fn parse_at(text: &str, base: Option<&std::path::Path>) -> Result<Self, TopologyError> {
        let line_at = |offset: usize| Some(wire::span::line_at(text, offset));
        let file = read_file(text)?;
        let name = file.name.get_ref().clone();
        let mut nodes: Vec<Node> = Vec::new();
        for n in &file.node {
            let node = resolve_node(n.get_ref(), line_at(n.span().start), base, &nodes)?;
            nodes.push(node);
        }
        if file.link.len() > MAX_LINKS {
            return Err(err(None, format!("at most {MAX_LINKS} links")));
        }
        let mut links: Vec<Link> = Vec::new();
        for (i, l) in file.link.iter().enumerate() {
            let line = line_at(l.span().start);
            let link = resolve_link(i + 1, l.get_ref(), line, &nodes, &links)?;
            links.push(link);
        }
        for (i, n) in nodes.iter().enumerate() {
            if !links.iter().any(|l| l.ends.iter().any(|e| e.node == i)) {
                return Err(err(None, format!("node '{}' has no link", n.name)));
            }
        }
        let t = Self {
            name,
            description: file.description,
            nodes,
            links,
        };
        for (i, n) in file.node.iter().enumerate() {
            t.check_nat44(i)
                .map_err(|m| err(line_at(n.span().start), m))?;
        }
        if let Some(second) = file
            .node
            .iter()
            .filter(|n| n.get_ref().kind == Kind::Tayga)
            .nth(1)
        {
            return Err(err(
                line_at(second.span().start),
                format!(
                    "node '{}': a second tayga (a lab has one NAT64 prefix and one IPv4 pool)",
                    second.get_ref().name
                ),
            ));
        }
        for (i, n) in t.nodes.iter().enumerate() {
            let Some(q) = &n.qos else { continue };
            let line = file
                .node
                .iter()
                .find(|x| x.get_ref().name == n.name)
                .and_then(|x| line_at(x.span().start));
            t.check_qos(i, &q.text)
                .map_err(|m| err(line, format!("node '{}': qos {}: {m}", n.name, q.path)))?;
        }
        Ok(t)
    }

    /// Whether router `i` can run the QoS file `text`: it reads, and every service
    /// policy names one of the router's interfaces and fits its link's rate.
    pub fn check_qos(&self, i: usize, text: &str) -> Result<(), String> {
        if self.nodes.get(i).map(|n| n.kind) != Some(Kind::Router) {
            return Err("only a router takes qos".into());
        }
        let cfg = router::qosconf::QosConfig::parse(text).map_err(|e| e.to_string())?;
        let ends: Vec<(String, u64)> = self
            .ends_of(i)
            .map(|(l, mine, _)| (mine.ifname.clone(), l.emulation.rate_bps))
            .collect();
        for (iface, _, l) in &cfg.service {
            let Some((_, rate)) = ends.iter().find(|(n, _)| n == iface) else {
                return Err(format!(
                    "line {}: service_policy on '{iface}': the router's interfaces are {}",
                    l.unwrap_or(0),
                    ends.iter()
                        .map(|(n, _)| n.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                ));
            };
            cfg.params_for(iface, *rate).map_err(|e| e.to_string())?;
        }
        Ok(())
    }

    /// The namespace of node `i`.
    pub fn namespace(&self, i: usize) -> String {
        format!("dp-{}.{}", self.name, self.nodes[i].name)
    }

    /// The node named `name`.
    pub fn node(&self, name: &str) -> Option<usize> {
        self.nodes.iter().position(|n| n.name == name)
    }

    /// The ends of node `i`'s links: (link, its end, the peer's end).
    pub fn ends_of(&self, i: usize) -> impl Iterator<Item = (&Link, &End, &End)> + '_ {
        self.links.iter().filter_map(move |l| {
            if l.ends[0].node == i {
                Some((l, &l.ends[0], &l.ends[1]))
            } else if l.ends[1].node == i {
                Some((l, &l.ends[1], &l.ends[0]))
            } else {
                None
            }
        })
    }

    /// Node `i`'s routes beyond its directly connected subnets.
    pub fn routes(&self, i: usize) -> Vec<Route> {
        let mut out = Vec::new();
        match self.nodes[i].kind {
            Kind::Host => {
                if let Some((_, mine, peer)) = self
                    .ends_of(i)
                    .find(|(_, _, p)| self.nodes[p.node].kind.forwards())
                {
                    for gw in [peer.ipv4.into(), peer.ipv6.into()] {
                        out.push(Route {
                            prefix: None,
                            gateway: gw,
                            ifname: mine.ifname.clone(),
                        });
                    }
                }
            }
            Kind::Router | Kind::Nat44 | Kind::Kernel | Kind::Tayga => {
                // Breadth-first from this node through routers and NATs: for every
                // node, the first hop toward it (the link and the peer end).
                let mut first: BTreeMap<usize, (String, usize)> = BTreeMap::new();
                let mut queue = VecDeque::new();
                for (l, mine, peer) in self.ends_of(i) {
                    if let std::collections::btree_map::Entry::Vacant(e) = first.entry(peer.node) {
                        e.insert((mine.ifname.clone(), l.number));
                        queue.push_back(peer.node);
                    }
                }
                while let Some(n) = queue.pop_front() {
                    if !self.nodes[n].kind.forwards() || n == i {
                        continue;
                    }
                    let hop = first[&n].clone();
                    for (_, _, peer) in self.ends_of(n) {
                        if peer.node != i && !first.contains_key(&peer.node) {
                            first.insert(peer.node, hop.clone());
                            queue.push_back(peer.node);
                        }
                    }
                }
                for l in &self.links {
                    if l.ends.iter().any(|e| e.node == i) {
                        continue; // directly connected
                    }
                    // Reach the link through the first hop toward its end `a` (or `b`
                    // when `a` is not reachable). On a tree, as the shipped topologies
                    // are, both lead the same way; with loops it may not be the
                    // shorter path.
                    let Some((ifname, via_link)) =
                        l.ends.iter().find_map(|e| first.get(&e.node)).cloned()
                    else {
                        continue;
                    };
                    let Some(hop) = self.links.iter().find(|x| x.number == via_link) else {
                        continue;
                    };
                    let peer = if hop.ends[0].node == i {
                        &hop.ends[1]
                    } else {
                        &hop.ends[0]
                    };
                    // IPv6 reaches every link; IPv4 not a NAT's inside from beyond it.
                    if !self.hides_ipv4(i, l.number) {
                        out.push(Route {
                            prefix: Some((Ipv4Addr::new(198, 18, l.number as u8, 0).into(), 24)),
                            gateway: peer.ipv4.into(),
                            ifname: ifname.clone(),
                        });
                    }
                    out.push(Route {
                        prefix: Some((
                            Ipv6Addr::new(0x2001, 2, 0, l.number as u16, 0, 0, 0, 0).into(),
                            64,
                        )),
                        gateway: peer.ipv6.into(),
                        ifname,
                    });
                }
                // The tayga node's prefix and pool, through the first hop toward it.
                let tayga = self.nodes.iter().position(|n| n.kind == Kind::Tayga);
                if let Some((ifname, via)) = tayga.filter(|&t| t != i).and_then(|t| first.get(&t)) {
                    if let Some(h) = self.links.iter().find(|x| x.number == *via) {
                        let peer = &h.ends[usize::from(h.ends[0].node == i)];
                        out.extend(routes_via(peer, ifname));
                    }
                }
            }
        }
        out
    }

    /// Node `i`'s static neighbours: every peer address on its links.
    pub fn neighbors(&self, i: usize) -> Vec<Neighbor> {
        let mut out = Vec::new();
        for (_, mine, peer) in self.ends_of(i) {
            for ip in [peer.ipv4.into(), peer.ipv6.into()] {
                out.push(Neighbor {
                    ip,
                    mac: peer.mac.clone(),
                    ifname: mine.ifname.clone(),
                });
            }
        }
        out
    }
}

impl Topology {
    /// The `dualperf route` configuration of router `i`.
    pub fn router_config(&self, i: usize) -> RouterConfig {
        let interfaces = self
            .ends_of(i)
            .map(|(l, mine, _)| RouterInterface {
                name: mine.ifname.clone(),
                ipv4: format!("{}/24", mine.ipv4),
                ipv6: format!("{}/64", mine.ipv6),
                mtu: l.mtu,
                mtu6: l.mtu6,
                emulation: l.emulation.clone(),
                mac: Some(mine.mac.clone()),
            })
            .collect();
        let routes = self
            .routes(i)
            .into_iter()
            .filter_map(|r| {
                let (ip, len) = r.prefix?;
                Some(RouterRoute {
                    prefix: format!("{ip}/{len}"),
                    via: r.gateway.to_string(),
                    interface: r.ifname,
                })
            })
            .collect();
        let neighbors = self
            .neighbors(i)
            .into_iter()
            .map(|n| RouterNeighbor {
                interface: n.ifname,
                ip: n.ip.to_string(),
                mac: n.mac,
            })
            .collect();
        RouterConfig {
            seed: i as u64 + 1,
            interfaces,
            routes,
            neighbors,
        }
    }
}

/// The topologies shipped in `plans/topologies/`, by the path a shipped plan names them
/// with (`topologies/two-hop.toml`): a shipped plan finds them wherever it is run from.
pub fn builtin(file: &str) -> Option<&'static str> {
    let name = file.strip_prefix("topologies/")?;
    match name {
        "two-hop.toml" => Some(include_str!("../../../plans/topologies/two-hop.toml")),
        "one-router.toml" => Some(include_str!("../../../plans/topologies/one-router.toml")),
        "dumbbell.toml" => Some(include_str!("../../../plans/topologies/dumbbell.toml")),
        "nat44.toml" => Some(include_str!("../../../plans/topologies/nat44.toml")),
        "truth.toml" => Some(include_str!("../../../plans/topologies/truth.toml")),
        "dut-kernel.toml" => Some(include_str!("../../../plans/topologies/dut-kernel.toml")),
        "dut-tayga.toml" => Some(include_str!("../../../plans/topologies/dut-tayga.toml")),
        _ => None,
    }
}

/// The NAT64 prefix: a network-specific /96 (RFC 6052 §2.2) inside 2001:2::/48.
pub const PREFIX: Ipv6Addr = Ipv6Addr::new(0x2001, 2, 0, 0x6464, 0, 0, 0, 0);
/// [`PREFIX`]'s length.
pub const PREFIX_LEN: u8 = 96;
/// The IPv4 pool the hosts' IPv6 addresses are mapped into: 198.19.0.0/16.
pub const POOL: (Ipv4Addr, u8) = (Ipv4Addr::new(198, 19, 0, 0), 16);

/// The routes of a forwarding node whose first hop toward the tayga node is `peer`, out
/// of `ifname`: [`PREFIX`] and [`POOL`] through it.
pub fn routes_via(peer: &End, ifname: &str) -> [Route; 2] {
    [
        Route {
            prefix: Some((POOL.0.into(), POOL.1)),
            gateway: peer.ipv4.into(),
            ifname: ifname.to_owned(),
        },
        Route {
            prefix: Some((PREFIX.into(), PREFIX_LEN)),
            gateway: peer.ipv6.into(),
            ifname: ifname.to_owned(),
        },
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(crate) const TWO_HOP: &str = include_str!("../../../plans/topologies/two-hop.toml");

    #[test]
    fn the_two_hop_lab_resolves_addresses_routes_and_neighbours() {
        let t = Topology::parse(TWO_HOP).unwrap();
        assert_eq!(t.name, "two-hop");
        let r1 = t.node("r1").unwrap();
        let sender = t.node("sender").unwrap();
        assert_eq!(t.namespace(sender), "dp-two-hop.sender");
        let (l, mine, peer) = t.ends_of(sender).next().unwrap();
        assert_eq!(l.number, 1);
        assert_eq!(mine.ifname, "to-r1");
        assert_eq!(mine.ipv4, Ipv4Addr::new(198, 18, 1, 1));
        assert_eq!(peer.ipv6, "2001:2:0:1::2".parse::<Ipv6Addr>().unwrap());
        assert_eq!(mine.mac, "02:64:70:00:01:01");
        // The sender's default routes go to r1.
        let routes = t.routes(sender);
        assert_eq!(routes.len(), 2);
        assert_eq!(routes[0].gateway, std::net::IpAddr::from([198, 18, 1, 2]));
        assert!(routes
            .iter()
            .all(|r| r.prefix.is_none() && r.ifname == "to-r1"));
        // r1 reaches the receiver's link through r2.
        let receiver = t.node("receiver").unwrap();
        let (rl, _, r2_end) = t.ends_of(receiver).next().unwrap();
        let r1_routes = t.routes(r1);
        let to_receiver = r1_routes
            .iter()
            .find(|r| r.prefix == Some((Ipv4Addr::new(198, 18, rl.number as u8, 0).into(), 24)))
            .unwrap();
        assert_eq!(to_receiver.ifname, "to-r2");
        let bottleneck = t.links.iter().find(|l| {
            l.ends.iter().any(|e| e.node == r1)
                && l.ends.iter().any(|e| t.nodes[e.node].name == "r2")
        });
        let bottleneck = bottleneck.unwrap();
        assert_eq!(bottleneck.emulation.rate_bps, 10_000_000);
        let r2_on_bottleneck = bottleneck.ends.iter().find(|e| e.node != r1).unwrap();
        assert_eq!(
            to_receiver.gateway,
            std::net::IpAddr::from(r2_on_bottleneck.ipv4)
        );
        assert_ne!(r2_end.node, r1);
        // Every router has a route to every link it is not on, in both families.
        for (i, n) in t.nodes.iter().enumerate() {
            if n.kind == Kind::Router {
                let on = t.ends_of(i).count();
                assert_eq!(t.routes(i).len(), 2 * (t.links.len() - on), "{}", n.name);
            }
        }
        // Neighbours: both families of every peer.
        assert_eq!(t.neighbors(r1).len(), 2 * t.ends_of(r1).count());
        // r1's route configuration, as TOML and back.
        let cfg = t.router_config(r1);
        assert_eq!(cfg.interfaces.len(), 3);
        assert_eq!(cfg.interfaces[0].ipv4, "198.18.1.2/24");
        let text = toml::to_string(&cfg).unwrap();
        assert_eq!(toml::from_str::<RouterConfig>(&text).unwrap(), cfg);
    }

    #[test]
    fn kernel_and_tayga_nodes_forward_with_kernel_addresses_routes_and_neighbours() {
        let text = "version = 1\nname = \"k\"\n\
            [[node]]\nname = \"a\"\nkind = \"host\"\n\
            [[node]]\nname = \"k1\"\nkind = \"kernel\"\n\
            [[node]]\nname = \"t1\"\nkind = \"tayga\"\n\
            [[node]]\nname = \"b\"\nkind = \"host\"\n\
            [[link]]\na = \"a\"\nb = \"k1\"\n\
            [[link]]\na = \"k1\"\nb = \"t1\"\n\
            [[link]]\na = \"t1\"\nb = \"b\"\n";
        let t = Topology::parse(text).unwrap();
        let kinds: Vec<Kind> = t.nodes.iter().map(|n| n.kind).collect();
        assert_eq!(kinds, [Kind::Host, Kind::Kernel, Kind::Tayga, Kind::Host]);
        for k in [Kind::Kernel, Kind::Tayga] {
            assert!(k.forwards() && k.kernel_addresses() && k.kernel_forwards());
        }
        assert!(!Kind::Router.kernel_addresses() && !Kind::Router.kernel_forwards());
        assert!(!Kind::Host.forwards() && !Kind::Host.kernel_forwards());
        let routes = |node: &str| -> Vec<String> {
            t.routes(t.node(node).unwrap())
                .iter()
                .map(|r| {
                    let to = r
                        .prefix
                        .map_or("default".into(), |(ip, l)| format!("{ip}/{l}"));
                    format!("{to} via {} dev {}", r.gateway, r.ifname)
                })
                .collect()
        };
        assert_eq!(
            routes("k1"),
            [
                "198.18.3.0/24 via 198.18.2.2 dev to-t1",
                "2001:2:0:3::/64 via 2001:2:0:2::2 dev to-t1",
                "198.19.0.0/16 via 198.18.2.2 dev to-t1",
                "2001:2:0:6464::/96 via 2001:2:0:2::2 dev to-t1"
            ]
        );
        assert_eq!(
            routes("t1"),
            [
                "198.18.1.0/24 via 198.18.2.1 dev to-k1",
                "2001:2:0:1::/64 via 2001:2:0:2::1 dev to-k1"
            ]
        );
        assert_eq!(
            routes("a"),
            [
                "default via 198.18.1.2 dev to-k1",
                "default via 2001:2:0:1::2 dev to-k1"
            ]
        );
        assert_eq!(t.neighbors(t.node("k1").unwrap()).len(), 4);
        // Only a router takes qos and cpu.
        for key in ["qos = \"q.toml\"", "cpu = 1"] {
            let bad = text.replace("kind = \"kernel\"", &format!("kind = \"kernel\"\n{key}"));
            let e = Topology::parse(&bad).unwrap_err();
            assert_eq!(e.line, Some(6), "{e}");
            assert!(
                e.message.starts_with("node 'k1': only a router takes"),
                "{e}"
            );
        }
        let shipped = Topology::parse(builtin("topologies/dut-kernel.toml").unwrap()).unwrap();
        assert_eq!(shipped.nodes[1].kind, Kind::Kernel);
    }

    #[test]
    fn mistakes_name_their_line() {
        let base = "version = 1\nname = \"x\"\n[[node]]\nname = \"h\"\nkind = \"host\"\n[[node]]\nname = \"r\"\nkind = \"router\"\n[[link]]\na = \"h\"\nb = \"r\"\n";
        assert!(Topology::parse(base).is_ok());
        for (text, line, want) in [
            (
                base.replace("b = \"r\"", "b = \"q\""),
                Some(9),
                "unknown node 'q'",
            ),
            (
                base.replace("b = \"r\"", "b = \"r\"\nrate = \"fast\""),
                Some(9),
                "rate 'fast'",
            ),
            (
                base.replace("b = \"r\"", "b = \"r\"\nloss = \"150%\""),
                Some(9),
                "loss '150%'",
            ),
            (
                base.replace("b = \"r\"", "b = \"r\"\nmtu = 500"),
                Some(9),
                "1280",
            ),
            (
                base.replace("name = \"r\"", "name = \"R1\""),
                Some(6),
                "node name 'R1'",
            ),
            (
                base.replace("name = \"x\"", "name = \"x y\""),
                Some(2),
                "lab name",
            ),
            (
                base.replace("kind = \"router\"", "kind = \"switch\""),
                Some(8),
                "unknown variant",
            ),
            (
                format!("{base}[[link]]\na = \"r\"\nb = \"h\"\n"),
                Some(12),
                "a second link",
            ),
        ] {
            let e = Topology::parse(&text).unwrap_err();
            assert_eq!(e.line, line, "{text}: {e}");
            assert!(e.to_string().contains(want), "{e}");
        }
        let ge = base.replace("b = \"r\"", "b = \"r\"\nloss = \"ge:1,25,0,100\"");
        let t = Topology::parse(&ge).unwrap();
        assert_eq!(
            t.links[0].emulation.loss,
            LossModel::GilbertElliott {
                p: 0.01,
                r: 0.25,
                loss_good: 0.0,
                loss_bad: 1.0
            }
        );
    }

    #[test]
    fn a_router_qos_file_is_read_beside_the_topology_and_checked_against_its_links() {
        let with = |q: &str| {
            TWO_HOP.replace(
                "name = \"r1\"\nkind = \"router\"\n",
                &format!("name = \"r1\"\nkind = \"router\"\nqos = \"{q}\"\n"),
            )
        };
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../plans/topologies");
        let t = Topology::parse_at(&with("../qos/bouras-llq.toml"), Some(&dir)).unwrap();
        let r1 = &t.nodes[t.node("r1").unwrap()];
        assert!(r1.qos.as_ref().unwrap().text.contains("priority = \"20%\""));
        // The policy names an interface r2 does not have (r2's are to-r1, to-receiver,
        // to-bg-b): refused, naming the node's line and the QoS file's.
        let bad = with("../qos/bouras-llq.toml").replace(
            "name = \"r1\"\nkind = \"router\"\nqos",
            "name = \"r1\"\nkind = \"router\"\n\n[[node]]\nname = \"r9\"\nkind = \"host\"\nqos",
        );
        let e = Topology::parse_at(&bad, Some(&dir)).unwrap_err();
        assert!(e.message.contains("only a router takes qos"), "{e}");
        let moved = TWO_HOP.replace(
            "name = \"r2\"\nkind = \"router\"\n",
            "name = \"r2\"\nkind = \"router\"\nqos = \"../qos/bouras-llq.toml\"\n",
        );
        let e = Topology::parse_at(&moved, Some(&dir)).unwrap_err();
        assert!(e.message.contains("service_policy on 'to-r2'"), "{e}");
        assert!(e.message.contains("to-r1, to-receiver, to-bg-b"), "{e}");
        assert!(e.line.is_some());
        let e = Topology::parse_at(&with("../qos/none.toml"), Some(&dir)).unwrap_err();
        assert!(e.message.contains("none.toml"), "{e}");
    }
}
