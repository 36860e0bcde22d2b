//! The path a lab's flows take, read from its topology: the nodes and links from the
//! sender to the receiver, each direction's bottleneck rate and per-family MTU, the
//! routers crossed. `compare --lab` writes it as the path's facts (`DIR/path.json`,
//! [`results::path::PathFacts`], method "topology"), as `compare HOST` writes what it
//! measures, and fits its battery to it ([`crate::plan::fit`]).
//!
//! What acts where, as `lab up` builds it: a link's rate and its IPv6 MTU (`ipv6 = { mtu
//! = … }`) act where a router sends onto it (`dualperf route`'s emulation); a host or a
//! kernel node sends at the veth's speed, with the link's MTU for both families. The
//! path is the one the static routes give (`Topology::routes`): a host's first link
//! toward a forwarding node, then the shortest path through forwarding nodes.

use std::collections::{BTreeMap, VecDeque};
use std::net::{IpAddr, SocketAddr};

use results::path::{
    Capacity, Direction, Fact, Family, FamilyPath, FarEnd, Hops, PathFacts, Pmtu, PmtuMethod,
    PATH_FORMAT_VERSION,
};

use crate::plan::fit::{fit, FitDoc, Fitted, Given, PathLimits, DEFAULT_SHARE};
use crate::plan::Plan;
use crate::topology::{Kind, Link, Topology};

/// The initial TTL / hop limit Linux sends with (`net.ipv4.ip_default_ttl`,
/// `net.ipv6.conf.*.hop_limit`).
const INITIAL_TTL: u8 = 64;

/// One direction of a lab's path.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Way {
    /// The least rate of a rate-limited link a router sends onto; `None` when none is.
    pub rate_bps: Option<u64>,
    /// IPv4's path MTU: the least link MTU.
    pub mtu4: u32,
    /// IPv6's: the least of each link's MTU and, where a router sends onto it, its IPv6
    /// MTU.
    pub mtu6: u32,
    /// Forwarding nodes crossed (each decrements the TTL / hop limit).
    pub hops: u8,
}

/// The path between two nodes of a lab.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LabPath {
    /// The nodes, from the first to the last.
    pub nodes: Vec<usize>,
    /// From the first node to the last.
    pub forward: Way,
    /// Back.
    pub reverse: Way,
}

/// IPv6's MTU where a router sends onto link `l`: the link's `ipv6 = { mtu = … }` when
/// it has one (the router's `mtu6`), else the link's MTU.
fn router_mtu6(l: &Link) -> u32 {
    l.mtu6.unwrap_or(l.mtu)
}

impl LabPath {
    /// The path from node `from` to node `to` of `t`; `None` when either is unknown or
    /// no route joins them.
    pub fn between(t: &Topology, from: &str, to: &str) -> Option<Self> {
        let (a, b) = (t.node(from)?, t.node(to)?);
        let nodes = route(t, a, b)?;
        let way = |nodes: &[usize]| {
            let mut w = Way {
                rate_bps: None,
                mtu4: u32::MAX,
                mtu6: u32::MAX,
                hops: 0,
            };
            for pair in nodes.windows(2) {
                let (u, v) = (pair[0], pair[1]);
                let (link, _, _) = t.ends_of(u).find(|(_, _, p)| p.node == v)?;
                let router = t.nodes[u].kind == Kind::Router;
                w.mtu4 = w.mtu4.min(link.mtu);
                w.mtu6 = w
                    .mtu6
                    .min(if router { router_mtu6(link) } else { link.mtu });
                let rate = link.emulation.rate_bps;
                if router && rate > 0 {
                    w.rate_bps = Some(w.rate_bps.map_or(rate, |r| r.min(rate)));
                }
            }
            w.hops = nodes.len().saturating_sub(2).min(255) as u8;
            Some(w)
        };
        let forward = way(&nodes)?;
        let back: Vec<usize> = nodes.iter().rev().copied().collect();
        let reverse = way(&back)?;
        Some(Self {
            nodes,
            forward,
            reverse,
        })
    }

    /// What fitting takes: both directions' least MTUs and rate, counting the 14 bytes
    /// of Ethernet header a lab's routers count.
    pub fn limits(&self) -> PathLimits {
        let rate = match (self.forward.rate_bps, self.reverse.rate_bps) {
            (Some(f), Some(r)) => Some(f.min(r)),
            (f, r) => f.or(r),
        };
        PathLimits {
            mtu4: Some(self.forward.mtu4.min(self.reverse.mtu4)),
            mtu6: Some(self.forward.mtu6.min(self.reverse.mtu6)),
            capacity_bps: rate,
            link_bytes: wire::overhead::ETHERNET_HEADER,
        }
    }

    /// The path's facts as the topology gives them (`DIR/path.json`, far end
    /// "topology"): the first and last node's addresses (their first links'), hops,
    /// path MTU and capacity each way; marking, NAT and the clock are not measured (every
    /// namespace reads this host's clock).
    pub fn facts(&self, t: &Topology, host: &str) -> PathFacts {
        let addr = |node: usize, family: Family| {
            let (_, end, _) = t.ends_of(node).next()?;
            let ip: IpAddr = match family {
                Family::Ipv4 => end.ipv4.into(),
                Family::Ipv6 => end.ipv6.into(),
            };
            Some(SocketAddr::new(ip, 0))
        };
        let (first, last) = (self.nodes[0], self.nodes[self.nodes.len() - 1]);
        let direction = |w: &Way, family: Family| Direction {
            hops: Fact::Measured(Hops {
                sent: INITIAL_TTL,
                sent_inferred: false,
                seen: INITIAL_TTL.saturating_sub(w.hops),
                hops: w.hops,
            }),
            pmtu: Fact::Measured(Pmtu {
                bytes: if family == Family::Ipv4 {
                    w.mtu4
                } else {
                    w.mtu6
                },
                method: PmtuMethod::Topology,
                smallest_lost: None,
                kernel_bytes: None,
                note: None,
            }),
            marking: Fact::not("not measured: the path comes from the lab's topology"),
            capacity: match w.rate_bps {
                Some(bps) => Fact::Measured(Capacity {
                    bps: bps as f64,
                    how: "topology".into(),
                }),
                None => Fact::not("no link on the path is rate-limited"),
            },
        };
        let families = [Family::Ipv4, Family::Ipv6]
            .into_iter()
            .filter_map(|family| {
                Some(FamilyPath {
                    family,
                    local: addr(first, family),
                    remote: addr(last, family)?,
                    nat: Fact::not("not measured: the path comes from the lab's topology"),
                    forward: direction(&self.forward, family),
                    reverse: direction(&self.reverse, family),
                    clock: Fact::not(
                        "not measured: every namespace of a lab reads this host's clock",
                    ),
                })
            })
            .collect();
        PathFacts {
            format_version: PATH_FORMAT_VERSION,
            host: host.to_owned(),
            far_end: FarEnd::Topology,
            notes: vec![format!(
                "From the topology of lab '{}': the path MTU is the least link MTU (IPv6's own where a router sends onto a link), the capacity the least rate a router sends at, counting 14 bytes of Ethernet header a packet; hops are the forwarding nodes crossed, from Linux's initial TTL of 64; ports are chosen per run.",
                t.name
            )],
            families,
        }
    }
}

/// `compare --lab`'s battery against its lab's path: the path's facts (`path.json`),
/// the battery fitted to it at [`DEFAULT_SHARE`] of its capacity, and the document of
/// the fit (`fit.json`).
#[derive(Clone, Debug, PartialEq)]
pub struct LabFit {
    /// The path from `sender` to `receiver`, as the topology gives it.
    pub facts: PathFacts,
    /// The factors to set (none when not applied) and the notes.
    pub fitted: Fitted,
    /// What `fit.json` holds.
    pub doc: FitDoc,
}

impl LabFit {
    /// The fit of `plan` (read from `plan_path`) to its lab's path from `sender` to
    /// `receiver`; `None` for a plan without a lab. Not `apply`ed (`--no-fit`), the
    /// battery is kept as given and the notes say what of it does not fit. An error
    /// says why the lab's path cannot be read.
    pub fn of(
        plan: &Plan,
        plan_path: &std::path::Path,
        given: Given,
        apply: bool,
    ) -> Result<Option<Self>, String> {
        if plan.lab_topology().is_none() {
            return Ok(None);
        }
        let (_, Some((t, _))) =
            crate::check::target(plan, plan_path, None).map_err(|e| e.to_string())?
        else {
            return Ok(None);
        };
        let path = LabPath::between(&t, "sender", "receiver")
            .ok_or_else(|| format!("lab '{}': no route from sender to receiver", t.name))?;
        let limits = path.limits();
        let kept = Given {
            sizes: true,
            rate: true,
        };
        let given = if apply { given } else { kept };
        let fitted = fit(plan, &limits, given, DEFAULT_SHARE).map_err(|e| e.to_string())?;
        Ok(Some(Self {
            facts: path.facts(&t, &format!("lab:{}", t.name)),
            doc: FitDoc::new(&fitted, apply, DEFAULT_SHARE, limits),
            fitted,
        }))
    }

    /// Writes `path.json` and `fit.json` into the run directory `dir` (made if need
    /// be).
    pub fn write(&self, dir: &std::path::Path) -> std::io::Result<()> {
        std::fs::create_dir_all(dir)?;
        std::fs::write(dir.join("path.json"), pretty(&self.facts)?)?;
        std::fs::write(dir.join("fit.json"), pretty(&self.doc)?)
    }

    /// The lines `compare` prints under its verdicts: how the battery was fitted (or
    /// that it was not), then each note.
    pub fn lines(&self) -> Vec<String> {
        let mut out = vec![if self.doc.applied {
            format!(
                "Fitted to the path from sender to receiver ({}; fit.json; --no-fit runs the battery as given):",
                self.summary()
            )
        } else {
            format!(
                "Not fitted (--no-fit); on the path from sender to receiver ({}):",
                self.summary()
            )
        }];
        if self.doc.notes.is_empty() {
            out.push("  the battery fits it as it is.".into());
        }
        out.extend(self.doc.notes.iter().map(|n| format!("  {}", n.text)));
        out
    }

    /// `path MTU 1500 bytes, 10.000 Mbit/s, load share 50 %`.
    fn summary(&self) -> String {
        let p = &self.doc.path;
        let mtu = match (p.mtu4, p.mtu6) {
            (Some(a), Some(b)) if a == b => format!("path MTU {a} bytes"),
            (a, b) => format!(
                "path MTU {} bytes over IPv4, {} over IPv6",
                a.map_or("?".into(), |v| v.to_string()),
                b.map_or("?".into(), |v| v.to_string())
            ),
        };
        let cap = p.capacity_bps.map_or("capacity unknown".into(), |c| {
            format!("{:.3} Mbit/s", c as f64 / 1e6)
        });
        format!("{mtu}, {cap}, load share {:.0} %", self.doc.share * 100.0)
    }
}

/// A document as pretty JSON with a final newline.
fn pretty<T: serde::Serialize>(v: &T) -> std::io::Result<String> {
    let mut s = serde_json::to_string_pretty(v).map_err(std::io::Error::other)?;
    s.push('\n');
    Ok(s)
}

/// The nodes from `a` to `b`: directly when linked; else from host `a` through its
/// first link toward a forwarding node (its default route), then breadth-first through
/// forwarding nodes, ties by link order.
fn route(t: &Topology, a: usize, b: usize) -> Option<Vec<usize>> {
    if a == b {
        return Some(vec![a]);
    }
    let forwards = |n: usize| t.nodes[n].kind != Kind::Host;
    let mut prev: BTreeMap<usize, usize> = BTreeMap::new();
    let mut queue = VecDeque::new();
    let first: Vec<usize> = if t.ends_of(a).any(|(_, _, p)| p.node == b) {
        vec![b]
    } else if forwards(a) {
        t.ends_of(a).map(|(_, _, p)| p.node).collect()
    } else {
        t.ends_of(a)
            .map(|(_, _, p)| p.node)
            .find(|&p| forwards(p))
            .into_iter()
            .collect()
    };
    for n in first {
        prev.entry(n).or_insert(a);
        queue.push_back(n);
    }
    while let Some(n) = queue.pop_front() {
        if n == b {
            break;
        }
        if !forwards(n) {
            continue;
        }
        for (_, _, p) in t.ends_of(n) {
            if p.node != a && !prev.contains_key(&p.node) {
                prev.insert(p.node, n);
                queue.push_back(p.node);
            }
        }
    }
    let mut path = vec![b];
    let mut n = b;
    while n != a {
        n = *prev.get(&n)?;
        path.push(n);
    }
    path.reverse();
    Some(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn two_hop() -> Topology {
        Topology::parse(crate::topology::builtin("topologies/two-hop.toml").unwrap()).unwrap()
    }

    #[test]
    fn two_hops_path_is_sender_r1_r2_receiver_at_10_mbit_and_1500_bytes() {
        let t = two_hop();
        let p = LabPath::between(&t, "sender", "receiver").unwrap();
        let names: Vec<&str> = p.nodes.iter().map(|&n| t.nodes[n].name.as_str()).collect();
        assert_eq!(names, ["sender", "r1", "r2", "receiver"]);
        let way = Way {
            rate_bps: Some(10_000_000),
            mtu4: 1500,
            mtu6: 1500,
            hops: 2,
        };
        assert_eq!((p.forward, p.reverse), (way, way));
        assert_eq!(
            p.limits(),
            PathLimits {
                mtu4: Some(1500),
                mtu6: Some(1500),
                capacity_bps: Some(10_000_000),
                link_bytes: 14,
            }
        );
        assert_eq!(LabPath::between(&t, "sender", "nobody"), None);
    }

    #[test]
    fn a_rate_acts_only_where_a_router_sends_and_the_least_mtu_wins() {
        // sender —(rate 5mbit, mtu 1400)— r1 — receiver: the rate acts only from r1 to
        // sender (the host sends at veth speed), the MTU both ways.
        let t = Topology::parse(
            r#"version = 1
name = "t"
[[node]]
name = "sender"
kind = "host"
[[node]]
name = "r1"
kind = "router"
[[node]]
name = "receiver"
kind = "host"
[[link]]
a = "sender"
b = "r1"
rate = "5mbit"
mtu = 1400
[[link]]
a = "r1"
b = "receiver"
"#,
        )
        .unwrap();
        let p = LabPath::between(&t, "sender", "receiver").unwrap();
        assert_eq!(p.forward.rate_bps, None);
        assert_eq!(p.reverse.rate_bps, Some(5_000_000));
        assert_eq!(
            (p.forward.mtu4, p.forward.mtu6, p.forward.hops),
            (1400, 1400, 1)
        );
        assert_eq!(p.limits().capacity_bps, Some(5_000_000));
        assert_eq!(p.limits().max_udp_payload(), Some(1352));
    }

    #[test]
    fn an_ipv6_only_mtu_acts_where_a_router_sends_and_narrows_ipv6_only() {
        // sender — r1 —(ipv6 mtu 1400)— receiver: r1 sends IPv6 onto it at 1400 bytes;
        // the receiver (a host) sends at the link's 1500 both ways.
        let t = Topology::parse(
            r#"version = 1
name = "t"
[[node]]
name = "sender"
kind = "host"
[[node]]
name = "r1"
kind = "router"
[[node]]
name = "receiver"
kind = "host"
[[link]]
a = "sender"
b = "r1"
[[link]]
a = "r1"
b = "receiver"
ipv6 = { mtu = 1400 }
"#,
        )
        .unwrap();
        let p = LabPath::between(&t, "sender", "receiver").unwrap();
        assert_eq!((p.forward.mtu4, p.forward.mtu6), (1500, 1400));
        assert_eq!((p.reverse.mtu4, p.reverse.mtu6), (1500, 1500));
        assert_eq!(p.limits().max_udp_payload(), Some(1352));
    }

    #[test]
    fn the_facts_of_two_hop_say_topology_with_addresses_hops_pmtu_and_capacity() {
        let t = two_hop();
        let p = LabPath::between(&t, "sender", "receiver").unwrap();
        let facts = p.facts(&t, "lab:two-hop");
        assert_eq!(facts.far_end, FarEnd::Topology);
        assert_eq!(facts.families.len(), 2);
        let v6 = &facts.families[1];
        assert_eq!(v6.family, Family::Ipv6);
        assert_eq!(v6.remote.to_string(), "[2001:2:0:4::2]:0");
        assert_eq!(v6.local.unwrap().to_string(), "[2001:2:0:1::1]:0");
        assert_eq!(
            v6.forward.hops.measured().map(|h| (h.sent, h.seen, h.hops)),
            Some((64, 62, 2))
        );
        assert_eq!(v6.reverse.pmtu.measured().map(|m| m.bytes), Some(1500));
        assert_eq!(
            v6.forward
                .capacity
                .measured()
                .map(|c| (c.bps, c.how.as_str())),
            Some((10e6, "topology"))
        );
        // And back into fitting's limits.
        assert_eq!(PathLimits::from_facts(&facts), p.limits());
    }

    #[test]
    fn compare_lab_fits_its_battery_to_two_hop_and_says_so() {
        let text = format!(
            "target = \"lab:topologies/two-hop.toml\"\n{}",
            include_str!("../../../plans/compare.toml")
        );
        let plan = Plan::parse(&text, true).unwrap();
        let at = std::path::Path::new("nowhere/compare.toml");
        let f = LabFit::of(&plan, at, Given::default(), true)
            .unwrap()
            .unwrap();
        assert_eq!(
            f.doc.factors,
            [
                (
                    "size".to_owned(),
                    vec!["64".into(), "512".into(), "1024".into(), "1452".into()]
                ),
                ("rate".to_owned(), vec!["383pps".to_owned()]),
            ]
        );
        let lines = f.lines();
        assert_eq!(
            lines[0],
            "Fitted to the path from sender to receiver (path MTU 1500 bytes, 10.000 Mbit/s, load share 50 %; fit.json; --no-fit runs the battery as given):"
        );
        assert_eq!(lines.len(), 3, "{lines:#?}");
        assert_eq!(f.facts.host, "lab:two-hop");
        // --no-fit: nothing set, and the notes say what does not fit.
        let kept = LabFit::of(&plan, at, Given::default(), false)
            .unwrap()
            .unwrap();
        assert!(kept.fitted.factors.is_empty() && !kept.doc.applied);
        let texts: Vec<&str> = kept.doc.notes.iter().map(|n| n.text.as_str()).collect();
        assert_eq!(
            texts,
            [
                "Size 1472 fragments over IPv6: 1472 + 48 = 1520 > 1500 (kept, as given; its UDP rows are not compared).",
                "Rate 5000pps offers 65.920 Mbit/s in its largest test (TCP, size 1472, 1648 bytes a message on the path), above 50 % of the path's 10.000 Mbit/s (kept, as given).",
            ]
        );
        // Loopback has no lab: nothing to fit.
        let local = Plan::parse(include_str!("../../../plans/compare.toml"), true).unwrap();
        assert_eq!(LabFit::of(&local, at, Given::default(), true), Ok(None));
    }
}
