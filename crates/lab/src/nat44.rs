//! A lab's kernel NAT44 node (`kind = "nat44"`): the kernel forwards both families
//! (`ip_forward`, IPv6 `forwarding`), and nftables masquerades IPv4 leaving on the
//! interface toward the node's `outside` peer. IPv6 is routed, not translated.
//!
//! What makes it a NAT in the lab, beyond the masquerade:
//! - routes: no node beyond the NAT (on its outside) has an IPv4 route to a link on its
//!   inside ([`Topology::hides_ipv4`]); IPv6 is routed everywhere;
//! - filtering: IPv4 that comes in on the outside reaches the inside only when conntrack
//!   knows it (a reply, or an ICMP error about a mapped flow), as behind a home router;
//! - `firewall = true` does the same for IPv6: a stateful firewall, new connections
//!   from outside dropped in both families.
//!
//! The rules are written to the lab's state directory (`NODE.nft`) and loaded with
//! `nft -f` inside the node's namespace; they go when the namespace does. Ports are
//! mapped at random (`masquerade random`), so a peer outside sees neither the inside
//! address nor its port.

use std::collections::BTreeSet;
use std::path::Path;
use std::process::{Command, Stdio};

use crate::laberror::{run, LabError};
use crate::topology::{End, Kind, Link, Topology};

/// The sysctls of a NAT44's namespace: the kernel forwards both families.
pub(crate) fn sysctls() -> [(String, &'static str); 2] {
    [
        ("net.ipv4.ip_forward".into(), "1"),
        ("net.ipv6.conf.all.forwarding".into(), "1"),
    ]
}

impl Topology {
    /// NAT44 node `i`'s link to its outside: (link, its end, the outside peer's end).
    pub fn outside_end(&self, i: usize) -> Option<(&Link, &End, &End)> {
        let outside = self.nodes[i].outside.as_deref()?;
        self.ends_of(i)
            .find(|(_, _, p)| self.nodes[p.node].name == outside)
    }

    /// The nodes on NAT44 `nat`'s inside: those reached from its inside links without
    /// crossing it.
    pub fn inside_nodes(&self, nat: usize) -> BTreeSet<usize> {
        let outside = self.outside_end(nat).map(|(l, _, _)| l.number);
        let mut inside = BTreeSet::new();
        let mut queue: Vec<usize> = self
            .ends_of(nat)
            .filter(|(l, _, _)| Some(l.number) != outside)
            .map(|(_, _, p)| p.node)
            .collect();
        while let Some(n) = queue.pop() {
            if n == nat || !inside.insert(n) {
                continue;
            }
            queue.extend(self.ends_of(n).map(|(_, _, p)| p.node));
        }
        inside
    }

    /// Whether node `from` has no IPv4 route to link `link` (its number): the link is
    /// on the inside of a NAT44 that `from` is beyond.
    pub fn hides_ipv4(&self, from: usize, link: usize) -> bool {
        let Some(l) = self.links.iter().find(|l| l.number == link) else {
            return false;
        };
        self.nodes.iter().enumerate().any(|(nat, n)| {
            if n.kind != Kind::Nat44 || nat == from {
                return false;
            }
            let inside = self.inside_nodes(nat);
            !inside.contains(&from) && l.ends.iter().any(|e| inside.contains(&e.node))
        })
    }

    /// Whether node `i`, when a NAT44, is one: its `outside` names a peer it has a link
    /// to, it has an inside, and its outside is not reached from its inside but through it.
    pub(crate) fn check_nat44(&self, i: usize) -> Result<(), String> {
        let n = &self.nodes[i];
        if n.kind != Kind::Nat44 {
            return Ok(());
        }
        let outside = n.outside.as_deref().unwrap_or_default();
        let Some((_, _, peer)) = self.outside_end(i) else {
            let peers: Vec<&str> = self
                .ends_of(i)
                .map(|(_, _, p)| self.nodes[p.node].name.as_str())
                .collect();
            return Err(format!(
                "node '{}': outside '{outside}' is not a node it has a link to (it has links to {})",
                n.name,
                if peers.is_empty() { "none".to_owned() } else { peers.join(", ") }
            ));
        };
        if self.ends_of(i).count() < 2 {
            return Err(format!(
                "node '{}': a nat44 needs a link besides the one to its outside '{outside}' (its inside)",
                n.name
            ));
        }
        if self.inside_nodes(i).contains(&peer.node) {
            return Err(format!(
                "node '{}': its outside '{outside}' is reached from its inside without crossing it",
                n.name
            ));
        }
        Ok(())
    }
}

/// The nftables ruleset of NAT44 node `i` (`nft -f` reads it in the node's namespace).
pub fn ruleset(t: &Topology, i: usize) -> String {
    let n = &t.nodes[i];
    let out = t
        .outside_end(i)
        .map_or(String::new(), |(_, mine, _)| mine.ifname.clone());
    // Without `firewall` the filter is IPv4's only: the NAT's own filtering.
    let (family, what) = if n.firewall {
        ("inet", "both families: a stateful firewall")
    } else {
        ("ip", "IPv4: what a NAT lets in")
    };
    format!(
        "# dualperf lab {lab}, node {node} (nat44): IPv4 leaving on {out} is masqueraded\n\
         table ip dp_nat {{\n\
         \tchain postrouting {{\n\
         \t\ttype nat hook postrouting priority srcnat; policy accept;\n\
         \t\toifname \"{out}\" masquerade random\n\
         \t}}\n\
         }}\n\
         # Coming in on {out}, {what}: only what conntrack knows (replies, related ICMP).\n\
         table {family} dp_filter {{\n\
         \tchain forward {{\n\
         \t\ttype filter hook forward priority filter; policy accept;\n\
         \t\tiifname \"{out}\" ct state established,related accept\n\
         \t\tiifname \"{out}\" drop\n\
         \t}}\n\
         }}\n",
        lab = t.name,
        node = n.name,
    )
}

/// `nft` is needed when `t` has a NAT44 node: [`LabError::Preflight`] when it is not
/// in PATH or does not run.
pub(crate) fn preflight(t: &Topology) -> Result<(), LabError> {
    let Some(n) = t.nodes.iter().find(|n| n.kind == Kind::Nat44) else {
        return Ok(());
    };
    let works = Command::new("nft")
        .arg("--version")
        .stdin(Stdio::null())
        .output();
    match works {
        Ok(out) if out.status.success() => Ok(()),
        Ok(out) => Err(LabError::Preflight {
            need: format!(
                "nftables' nft for the nat44 node '{}', and `nft --version` fails ({})",
                n.name, out.status
            ),
            fix: "install it with apt-get install nftables".into(),
        }),
        Err(e) => Err(LabError::Preflight {
            need: format!(
                "nftables' nft for the nat44 node '{}', which is {}",
                n.name,
                if e.kind() == std::io::ErrorKind::NotFound {
                    "not in PATH".to_owned()
                } else {
                    format!("not runnable ({e})")
                }
            ),
            fix: "install it with apt-get install nftables".into(),
        }),
    }
}

/// Loads each NAT44's ruleset in its namespace, from `dir/NODE.nft`.
pub(crate) fn apply(t: &Topology, dir: &Path) -> Result<(), LabError> {
    for (i, n) in t.nodes.iter().enumerate() {
        if n.kind != Kind::Nat44 {
            continue;
        }
        let file = dir.join(format!("{}.nft", n.name));
        std::fs::write(&file, ruleset(t, i)).map_err(|source| LabError::Io {
            path: file.clone(),
            source,
        })?;
        let ns = t.namespace(i);
        let file = file.to_string_lossy();
        run(&["ip", "netns", "exec", &ns, "nft", "-f", &file])?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::IpAddr;

    pub(crate) const NAT44: &str = include_str!("../../../plans/topologies/nat44.toml");

    fn prefixes(t: &Topology, node: &str) -> Vec<String> {
        t.routes(t.node(node).unwrap())
            .iter()
            .map(|r| {
                r.prefix
                    .map_or("default".to_owned(), |(ip, len)| format!("{ip}/{len}"))
                    + " via "
                    + &r.gateway.to_string()
                    + " dev "
                    + &r.ifname
            })
            .collect()
    }

    #[test]
    fn nat44_node_routes_ipv6_through_and_hides_its_inside_ipv4_prefixes() {
        let t = Topology::parse(NAT44).unwrap();
        let nat = t.node("nat").unwrap();
        assert_eq!(t.nodes[nat].kind, Kind::Nat44);
        assert_eq!(t.nodes[nat].outside.as_deref(), Some("r1"));
        assert_eq!(
            t.inside_nodes(nat).into_iter().collect::<Vec<_>>(),
            [t.node("sender").unwrap()]
        );
        // The sender's default routes go to the NAT's inside.
        assert_eq!(
            prefixes(&t, "sender"),
            [
                "default via 198.18.1.2 dev to-nat",
                "default via 2001:2:0:1::2 dev to-nat"
            ]
        );
        // The NAT (kernel routes) reaches the receiver's link through r1, both families.
        assert_eq!(
            prefixes(&t, "nat"),
            [
                "198.18.3.0/24 via 198.18.2.2 dev to-r1",
                "2001:2:0:3::/64 via 2001:2:0:2::2 dev to-r1"
            ]
        );
        // r1, beyond the NAT: IPv6 to the sender's link, and no IPv4 route to it.
        assert_eq!(
            prefixes(&t, "r1"),
            ["2001:2:0:1::/64 via 2001:2:0:2::1 dev to-nat"]
        );
        assert!(t.hides_ipv4(t.node("r1").unwrap(), 1));
        assert!(t.hides_ipv4(t.node("receiver").unwrap(), 1));
        assert!(!t.hides_ipv4(nat, 1));
        assert!(!t.hides_ipv4(t.node("sender").unwrap(), 3));
        assert!(!t.hides_ipv4(t.node("r1").unwrap(), 2));
        // r1's dualperf route configuration has the same one route.
        let cfg = t.router_config(t.node("r1").unwrap());
        let routes: Vec<(&str, &str)> = cfg
            .routes
            .iter()
            .map(|r| (r.prefix.as_str(), r.via.as_str()))
            .collect();
        assert_eq!(routes, [("2001:2:0:1::/64", "2001:2:0:2::1")]);
        // The receiver's default routes go to r1.
        assert_eq!(
            prefixes(&t, "receiver"),
            [
                "default via 198.18.3.1 dev to-r1",
                "default via 2001:2:0:3::1 dev to-r1"
            ]
        );
        // The NAT's kernel answers on its own addresses: the masquerade address is
        // its outside end's.
        let (_, mine, _) = t.outside_end(nat).unwrap();
        assert_eq!(IpAddr::from(mine.ipv4), IpAddr::from([198, 18, 2, 1]));
    }

    #[test]
    fn a_nat_behind_a_router_hides_its_inside_from_every_node_beyond_it() {
        // inner — nat — r0 — r1 — far: r0 and r1 both lose the inside's IPv4, and a
        // router on the inside keeps everything.
        let text = "version = 1\nname = \"n\"\n\
            [[node]]\nname = \"inner\"\nkind = \"host\"\n\
            [[node]]\nname = \"r9\"\nkind = \"router\"\n\
            [[node]]\nname = \"nat\"\nkind = \"nat44\"\noutside = \"r0\"\n\
            [[node]]\nname = \"r0\"\nkind = \"router\"\n\
            [[node]]\nname = \"far\"\nkind = \"host\"\n\
            [[link]]\na = \"inner\"\nb = \"r9\"\n\
            [[link]]\na = \"r9\"\nb = \"nat\"\n\
            [[link]]\na = \"nat\"\nb = \"r0\"\n\
            [[link]]\na = \"r0\"\nb = \"far\"\n";
        let t = Topology::parse(text).unwrap();
        let r0 = t.node("r0").unwrap();
        let r9 = t.node("r9").unwrap();
        assert_eq!(
            prefixes(&t, "r0"),
            [
                "2001:2:0:1::/64 via 2001:2:0:3::1 dev to-nat",
                "2001:2:0:2::/64 via 2001:2:0:3::1 dev to-nat"
            ]
        );
        assert_eq!(t.routes(r9).len(), 4, "{:?}", prefixes(&t, "r9"));
        assert!(t.hides_ipv4(r0, 1) && t.hides_ipv4(r0, 2) && !t.hides_ipv4(r0, 3));
        assert!(!t.hides_ipv4(r9, 4));
    }

    #[test]
    fn nat44_mistakes_name_their_line() {
        let base = "version = 1\nname = \"x\"\n\
            [[node]]\nname = \"h\"\nkind = \"host\"\n\
            [[node]]\nname = \"nat\"\nkind = \"nat44\"\noutside = \"r\"\n\
            [[node]]\nname = \"r\"\nkind = \"router\"\n\
            [[link]]\na = \"h\"\nb = \"nat\"\n\
            [[link]]\na = \"nat\"\nb = \"r\"\n";
        let t = Topology::parse(base).unwrap();
        assert!(!t.nodes[1].firewall);
        let fw = base.replace("outside = \"r\"", "outside = \"r\"\nfirewall = true");
        assert!(Topology::parse(&fw).unwrap().nodes[1].firewall);
        for (text, line, want) in [
            (
                base.replace("outside = \"r\"\n", ""),
                6,
                "node 'nat': a nat44 needs outside = \"PEER\", the node its masqueraded IPv4 leaves toward",
            ),
            (
                base.replace("outside = \"r\"", "outside = \"h2\""),
                6,
                "node 'nat': outside 'h2' is not a node it has a link to (it has links to h, r)",
            ),
            (
                base.replace("kind = \"host\"", "kind = \"host\"\noutside = \"nat\""),
                3,
                "node 'h': only a nat44 takes outside",
            ),
            (
                base.replace("kind = \"router\"", "kind = \"router\"\nfirewall = false"),
                10,
                "node 'r': only a nat44 takes firewall",
            ),
            (
                base.replace("[[link]]\na = \"h\"\nb = \"nat\"\n", "[[link]]\na = \"h\"\nb = \"r\"\n"),
                6,
                "node 'nat': a nat44 needs a link besides the one to its outside 'r' (its inside)",
            ),
            (
                format!("{base}[[link]]\na = \"h\"\nb = \"r\"\n"),
                6,
                "node 'nat': its outside 'r' is reached from its inside without crossing it",
            ),
            (
                base.replace("outside = \"r\"", "outside = \"r\"\nfirewall = \"yes\""),
                10,
                "invalid type: string \"yes\", expected a boolean",
            ),
        ] {
            let e = Topology::parse(&text).unwrap_err();
            assert_eq!((e.line, e.message.as_str()), (Some(line), want), "{text}");
        }
    }

    #[test]
    fn the_ruleset_masquerades_onto_the_outside_and_filters_what_comes_in() {
        let t = Topology::parse(NAT44).unwrap();
        let nat = t.node("nat").unwrap();
        let want = "# dualperf lab nat44, node nat (nat44): IPv4 leaving on to-r1 is masqueraded\n\
            table ip dp_nat {\n\
            \tchain postrouting {\n\
            \t\ttype nat hook postrouting priority srcnat; policy accept;\n\
            \t\toifname \"to-r1\" masquerade random\n\
            \t}\n\
            }\n\
            # Coming in on to-r1, IPv4: what a NAT lets in: only what conntrack knows (replies, related ICMP).\n\
            table ip dp_filter {\n\
            \tchain forward {\n\
            \t\ttype filter hook forward priority filter; policy accept;\n\
            \t\tiifname \"to-r1\" ct state established,related accept\n\
            \t\tiifname \"to-r1\" drop\n\
            \t}\n\
            }\n";
        assert_eq!(ruleset(&t, nat), want);
        let mut fw = t.clone();
        fw.nodes[nat].firewall = true;
        let with = ruleset(&fw, nat);
        assert_eq!(
            with,
            want.replace("table ip dp_filter", "table inet dp_filter")
                .replace(
                    "IPv4: what a NAT lets in",
                    "both families: a stateful firewall"
                )
        );
    }
}
