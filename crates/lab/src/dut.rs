//! A running lab as a device under test (RFC 2544 §6, RFC 8219 §4): its node `sender`
//! and its node `receiver` are the tester's two ports, each with one link to the same
//! forwarding node, the DUT (`plans/topologies/dut-kernel.toml`, `dut-tayga.toml`,
//! `one-router.toml`). [`dut_path`] reads what `dualperf rfc2544 --lab` needs from the
//! lab's state: each port's namespace, interface, MAC and addresses, the DUT's address
//! and MAC on each side and its interfaces (the cli turns GRO on there), and for a
//! NAT64 the prefix and what the sender's IPv6 address is mapped to.

use std::net::{Ipv4Addr, Ipv6Addr};

use serde::Serialize;

use crate::laberror::LabError;
use crate::topology::{End, Kind, Topology};

/// What the DUT forwards with.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum DutKind {
    /// `dualperf route` (a `router` node).
    Route,
    /// The Linux kernel (a `kernel` node).
    Kernel,
    /// The kernel and TAYGA's stateless NAT64 (a `tayga` node).
    Tayga,
    /// The kernel with nftables' NAT44 (a `nat44` node).
    Nat44,
}

impl DutKind {
    /// Its name in a result document: `route`, `kernel`, `tayga` or `nat44`.
    pub fn name(self) -> &'static str {
        match self {
            DutKind::Route => "route",
            DutKind::Kernel => "kernel",
            DutKind::Tayga => "tayga",
            DutKind::Nat44 => "nat44",
        }
    }
}

/// One tester port: a host node's end of its link to the DUT.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct TesterPortInfo {
    /// Its namespace (`dp-LAB.NODE`).
    pub ns: String,
    /// Its interface there (`to-DUT`).
    pub ifname: String,
    /// Its MAC (the kernel's, as the lab set it).
    pub mac: [u8; 6],
    /// Its IPv4 address.
    pub v4: Option<Ipv4Addr>,
    /// Its IPv6 address.
    pub v6: Option<Ipv6Addr>,
    /// The DUT's IPv4 address on this side.
    pub gw_v4: Option<Ipv4Addr>,
    /// The DUT's IPv6 address on this side.
    pub gw_v6: Option<Ipv6Addr>,
    /// The MAC the DUT answers to on this side: where the port sends (a `router`'s is
    /// not its veth's, see [`crate::topology::kernel_mac`]).
    pub gw_mac: [u8; 6],
}

/// A NAT64 DUT's translation ([`crate::tayga`]).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Nat64Info {
    /// The /96 prefix IPv4 addresses are seen through from IPv6 (RFC 6052 §2.2).
    pub prefix: Ipv6Addr,
    /// What port `a`'s IPv6 address is seen as from IPv4.
    pub a_mapped_v4: Ipv4Addr,
}

/// Tester port `a` (node `sender`) — DUT — tester port `b` (node `receiver`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct DutPath {
    /// The lab.
    pub lab: String,
    /// What the DUT forwards with.
    pub kind: DutKind,
    /// Port a: the sender.
    pub a: TesterPortInfo,
    /// Port b: the receiver.
    pub b: TesterPortInfo,
    /// The DUT's namespace.
    pub dut_ns: String,
    /// The DUT's interfaces: facing a, facing b.
    pub dut_ifs: [String; 2],
    /// A NAT64's prefix and mapping; `None` for other kinds.
    pub nat64: Option<Nat64Info>,
}

/// Running lab `lab` as sender — DUT — receiver, from its state; an error when the lab
/// is not up or is not that shape.
pub fn dut_path(lab: &str) -> Result<DutPath, LabError> {
    let state = crate::netlab::state_of(lab)?;
    from_topology(&state.topology)
}

/// Topology `t` as sender — DUT — receiver: nodes `sender` and `receiver` are hosts whose
/// first links both lead to the same forwarding node.
pub fn from_topology(t: &Topology) -> Result<DutPath, LabError> {
    let shape = |why: String| {
        LabError::NotFound(format!(
            "lab '{}' is not sender — DUT — receiver (two hosts named sender and receiver, \
             each linked to the same forwarding node, as plans/topologies/dut-kernel.toml): {why}",
            t.name
        ))
    };
    let port = |name: &str| -> Result<(usize, &End, &End), LabError> {
        let i = t
            .node(name)
            .ok_or_else(|| shape(format!("it has no node '{name}'")))?;
        if t.nodes[i].kind != Kind::Host {
            return Err(shape(format!("'{name}' is not a host")));
        }
        let (_, mine, peer) = t
            .ends_of(i)
            .next()
            .ok_or_else(|| shape(format!("'{name}' has no link")))?;
        Ok((i, mine, peer))
    };
    let (_, a, dut_a) = port("sender")?;
    let (_, b, dut_b) = port("receiver")?;
    let dut = dut_a.node;
    if dut_b.node != dut {
        return Err(shape(format!(
            "the sender is linked to '{}' and the receiver to '{}'",
            t.nodes[dut].name, t.nodes[dut_b.node].name
        )));
    }
    let kind = match t.nodes[dut].kind {
        Kind::Router => DutKind::Route,
        Kind::Kernel => DutKind::Kernel,
        Kind::Tayga => DutKind::Tayga,
        Kind::Nat44 => DutKind::Nat44,
        Kind::Host => {
            return Err(shape(format!(
                "'{}' between them is a host",
                t.nodes[dut].name
            )))
        }
    };
    let info = |mine: &End, gw: &End| TesterPortInfo {
        ns: t.namespace(mine.node),
        ifname: mine.ifname.clone(),
        mac: mac(&mine.mac),
        v4: Some(mine.ipv4),
        v6: Some(mine.ipv6),
        gw_v4: Some(gw.ipv4),
        gw_v6: Some(gw.ipv6),
        gw_mac: mac(&gw.mac),
    };
    Ok(DutPath {
        lab: t.name.clone(),
        kind,
        a: info(a, dut_a),
        b: info(b, dut_b),
        dut_ns: t.namespace(dut),
        dut_ifs: [dut_a.ifname.clone(), dut_b.ifname.clone()],
        nat64: (kind == DutKind::Tayga).then(|| Nat64Info {
            prefix: crate::tayga::PREFIX,
            a_mapped_v4: crate::tayga::mapped_v4(a),
        }),
    })
}

/// `02:64:70:00:01:01` as bytes (the lab writes every MAC so; anything else is zeros).
fn mac(text: &str) -> [u8; 6] {
    let mut out = [0u8; 6];
    for (o, part) in out.iter_mut().zip(text.split(':')) {
        *o = u8::from_str_radix(part, 16).unwrap_or(0);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shipped(file: &str) -> Topology {
        Topology::parse(crate::topology::builtin(&format!("topologies/{file}")).unwrap()).unwrap()
    }

    #[test]
    fn the_dut_kernel_lab_is_sender_dut_receiver_with_both_families_on_each_side() {
        let p = from_topology(&shipped("dut-kernel.toml")).unwrap();
        let want = DutPath {
            lab: "dut-kernel".into(),
            kind: DutKind::Kernel,
            a: TesterPortInfo {
                ns: "dp-dut-kernel.sender".into(),
                ifname: "to-dut".into(),
                mac: [2, 0x64, 0x70, 0, 1, 1],
                v4: Some(Ipv4Addr::new(198, 18, 1, 1)),
                v6: Some("2001:2:0:1::1".parse().unwrap()),
                gw_v4: Some(Ipv4Addr::new(198, 18, 1, 2)),
                gw_v6: Some("2001:2:0:1::2".parse().unwrap()),
                gw_mac: [2, 0x64, 0x70, 0, 1, 2],
            },
            b: TesterPortInfo {
                ns: "dp-dut-kernel.receiver".into(),
                ifname: "to-dut".into(),
                mac: [2, 0x64, 0x70, 0, 2, 2],
                v4: Some(Ipv4Addr::new(198, 18, 2, 2)),
                v6: Some("2001:2:0:2::2".parse().unwrap()),
                gw_v4: Some(Ipv4Addr::new(198, 18, 2, 1)),
                gw_v6: Some("2001:2:0:2::1".parse().unwrap()),
                gw_mac: [2, 0x64, 0x70, 0, 2, 1],
            },
            dut_ns: "dp-dut-kernel.dut".into(),
            dut_ifs: ["to-sender".into(), "to-receiver".into()],
            nat64: None,
        };
        assert_eq!(p, want);
        assert_eq!(p.kind.name(), "kernel");
    }

    #[test]
    fn the_dut_tayga_lab_names_the_prefix_and_the_senders_mapped_ipv4() {
        let p = from_topology(&shipped("dut-tayga.toml")).unwrap();
        assert_eq!(p.kind, DutKind::Tayga);
        assert_eq!(
            p.nat64,
            Some(Nat64Info {
                prefix: "2001:2:0:6464::".parse().unwrap(),
                a_mapped_v4: Ipv4Addr::new(198, 19, 1, 1),
            })
        );
        assert_eq!(p.dut_ns, "dp-dut-tayga.dut");
    }

    #[test]
    fn a_router_dut_is_sent_to_at_the_mac_it_answers_to_and_other_shapes_are_refused() {
        let p = from_topology(&shipped("one-router.toml")).unwrap();
        assert_eq!((p.kind, p.kind.name()), (DutKind::Route, "route"));
        // The router answers to 02:64:70:…; its veth's kernel MAC is 02:64:71:….
        assert_eq!(p.a.gw_mac, [2, 0x64, 0x70, 0, 1, 2]);
        assert_eq!(p.dut_ifs, ["to-sender", "to-receiver"]);
        let e = from_topology(&shipped("two-hop.toml")).unwrap_err();
        assert_eq!(
            e.to_string(),
            "lab 'two-hop' is not sender — DUT — receiver (two hosts named sender and \
             receiver, each linked to the same forwarding node, as \
             plans/topologies/dut-kernel.toml): the sender is linked to 'r1' and the \
             receiver to 'r2'"
        );
        let e = from_topology(&shipped("dumbbell.toml")).unwrap_err();
        assert!(e.to_string().ends_with("it has no node 'sender'"), "{e}");
    }
}
