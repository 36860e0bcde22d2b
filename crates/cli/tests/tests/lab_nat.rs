//! The lab's kernel NAT44 (`plans/topologies/nat44.toml`: sender — nat — r1 — receiver),
//! for real: nftables masquerades the sender's IPv4 behind the NAT's outside address,
//! IPv6 is routed, the receiver cannot reach the NAT's inside over IPv4, names resolve
//! through the hosts file `lab up` writes for each namespace, and `lab down` leaves
//! nothing. Root and nftables' `nft` are needed, as in `lab.rs`.
//!
//! Addresses: sender 198.18.1.1 / 2001:2:0:1::1, the NAT 198.18.1.2 inside and 198.18.2.1
//! outside (the masquerade address), r1 198.18.2.2 and 198.18.3.1, receiver 198.18.3.2 /
//! 2001:2:0:3::2.

use std::process::Command;

use crate::lab::{alive, privileged, router_pids, Lab};
use crate::support::{run, run_with_env, TempDir};

/// The `peer` of each flow a `recv --json` reported on stdout, in order, each with the
/// messages its sender sent and those that arrived.
fn peers(stdout: &str) -> Vec<(String, u64, u64)> {
    stdout
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|v| v["type"] == "flow")
        .map(|v| {
            let f = &v["data"];
            (
                f["peer"].as_str().unwrap_or_default().to_owned(),
                f["sent_packets"].as_u64().unwrap_or_default(),
                f["summary"]["packets"].as_u64().unwrap_or_default(),
            )
        })
        .collect()
}

/// `send DEST` of a TCP flow (exact counts at any load) for one second.
const TCP: [&str; 5] = ["--tcp", "--duration", "1", "--rate", "100pps"];

/// [`peers`]' addresses, each checked to have received all its sender sent.
fn whole(flows: &[(String, u64, u64)]) -> Vec<&str> {
    for (peer, sent, got) in flows {
        assert!(
            *sent > 0 && got == sent,
            "{peer}: sent {sent}, received {got}"
        );
    }
    flows.iter().map(|(p, _, _)| p.as_str()).collect()
}

/// The first address `getent DATABASE NAME` gives inside `node` of lab `lab`.
fn getent(lab: &str, node: &str, database: &str, name: &str) -> String {
    let out = run(&["lab", "exec", lab, node, "--", "getent", database, name]);
    out.assert_success();
    out.stdout
        .split_whitespace()
        .next()
        .unwrap_or_default()
        .to_owned()
}

/// Lab `name`'s directories under /etc/netns.
fn etc_netns(name: &str) -> Vec<String> {
    std::fs::read_dir("/etc/netns")
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(&format!("dp-{name}.")))
        .collect()
}

#[test]
fn nat44_masquerades_ipv4_routes_ipv6_and_names_resolve_in_lab_exec() {
    if !privileged() {
        return;
    }
    let lab = Lab::up_shipped("nat", "nat44.toml");
    assert_eq!(lab.namespaces().len(), 4);
    let mut dirs = etc_netns(&lab.name);
    dirs.sort();
    let ns = |n: &str| format!("dp-{}.{n}", lab.name);
    assert_eq!(dirs, [ns("nat"), ns("r1"), ns("receiver"), ns("sender")]);

    // The receiver sees the NAT's outside address over IPv4, the sender's own over IPv6.
    let rx = lab.spawn("receiver", &["recv", "--sessions", "2", "--json"]);
    rx.wait_stderr_line(|l| l.contains("listening on"));
    for dest in ["198.18.3.2", "2001:2:0:3::2"] {
        lab.exec("sender", &[&["send", dest][..], &TCP].concat())
            .assert_success();
    }
    let seen = rx.finish();
    seen.assert_success();
    assert_eq!(whole(&peers(&seen.stdout)), ["198.18.2.1", "2001:2:0:1::1"]);

    // Names from the hosts file, both families, from either side of the NAT.
    assert_eq!(
        getent(&lab.name, "sender", "ahostsv4", "receiver"),
        "198.18.3.2"
    );
    assert_eq!(
        getent(&lab.name, "sender", "ahostsv6", "receiver"),
        "2001:2:0:3::2"
    );
    assert_eq!(
        getent(&lab.name, "receiver", "ahostsv4", "sender"),
        "198.18.1.1"
    );
    assert_eq!(
        getent(&lab.name, "nat", "ahostsv6", "sender"),
        "2001:2:0:1::1"
    );

    // From outside, the sender is reachable over IPv6 and not over IPv4: nothing beyond
    // the NAT routes its inside, and the NAT lets in only what conntrack knows.
    let tx = lab.spawn("sender", &["recv", "--sessions", "1", "--json"]);
    tx.wait_stderr_line(|l| l.contains("listening on"));
    let v4 = lab.exec("receiver", &[&["send", "198.18.1.1"][..], &TCP].concat());
    assert_eq!(v4.status.code(), Some(1), "{}", v4.stderr);
    assert!(
        v4.stderr
            .contains("cannot reach a dualperf receiver at 198.18.1.1:4646"),
        "{}",
        v4.stderr
    );
    lab.exec("receiver", &[&["send", "2001:2:0:1::1"][..], &TCP].concat())
        .assert_success();
    let inside = tx.finish();
    assert_eq!(whole(&peers(&inside.stdout)), ["2001:2:0:3::2"]);

    // Down leaves nothing: no namespace, veth, /etc/netns directory or router.
    let routers = router_pids(&lab.state_json());
    assert_eq!(routers.len(), 1);
    lab.down();
    assert!(lab.namespaces().is_empty(), "{:?}", lab.namespaces());
    assert!(
        etc_netns(&lab.name).is_empty(),
        "{:?}",
        etc_netns(&lab.name)
    );
    assert!(routers.iter().all(|p| !alive(*p)), "the router survived");
    let links = Command::new("ip").args(["-o", "link"]).output().unwrap();
    let links = String::from_utf8_lossy(&links.stdout);
    assert!(
        !links.contains("to-nat") && !links.contains("to-sender"),
        "{links}"
    );
}

#[test]
fn a_nat44_firewall_drops_new_ipv6_from_outside_and_lets_replies_in() {
    if !privileged() {
        return;
    }
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../plans/topologies/nat44.toml"
    ))
    .unwrap()
    .replace("outside = \"r1\"\n", "outside = \"r1\"\nfirewall = true\n");
    let lab = Lab::up_text("fw", &text);
    // From the inside out, both families work (the replies come back in).
    let rx = lab.spawn("receiver", &["recv", "--sessions", "1", "--json"]);
    rx.wait_stderr_line(|l| l.contains("listening on"));
    lab.exec("sender", &[&["send", "2001:2:0:3::2"][..], &TCP].concat())
        .assert_success();
    assert_eq!(whole(&peers(&rx.finish().stdout)), ["2001:2:0:1::1"]);
    // From outside in, IPv6 is routed to the NAT but dropped there.
    let tx = lab.spawn("sender", &["recv", "--sessions", "1"]);
    tx.wait_stderr_line(|l| l.contains("listening on"));
    let v6 = lab.exec("receiver", &[&["send", "2001:2:0:1::1"][..], &TCP].concat());
    assert_eq!(v6.status.code(), Some(1), "{}", v6.stderr);
    assert!(
        v6.stderr
            .contains("cannot reach a dualperf receiver at [2001:2:0:1::1]:4646"),
        "{}",
        v6.stderr
    );
}

#[test]
fn a_nat44_lab_without_nft_in_path_is_refused_before_anything_is_made() {
    if !privileged() {
        return;
    }
    // PATH with iproute2's ip alone (as lab_fresh.rs builds it).
    let ip = ["/usr/sbin/ip", "/sbin/ip", "/usr/bin/ip", "/bin/ip"]
        .into_iter()
        .find(|p| std::path::Path::new(p).is_file())
        .expect("privileged() ran ip");
    let bin = TempDir::new("nat-path");
    std::os::unix::fs::symlink(ip, bin.path("ip")).unwrap();
    let only_ip = bin.path("");
    let name = format!("tnp-{}", std::process::id() % 100_000);
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../plans/topologies/nat44.toml"
    ))
    .unwrap()
    .replace("name = \"nat44\"", &format!("name = \"{name}\""));
    let dir = TempDir::new("nat-topo");
    let topo = dir.path("topo.toml");
    std::fs::write(&topo, text).unwrap();
    let lab = Lab::guard(&name);
    let up = run_with_env(
        &["lab", "up", topo.to_str().unwrap()],
        ("PATH", only_ip.to_str().unwrap()),
    );
    assert_eq!(up.status.code(), Some(1), "{}", up.stderr);
    assert_eq!(
        up.stderr,
        "dualperf: error: the lab needs nftables' nft for the nat44 node 'nat', which is not \
         in PATH: install it with apt-get install nftables\n"
    );
    assert!(lab.namespaces().is_empty());
    assert!(etc_netns(&name).is_empty());
}
