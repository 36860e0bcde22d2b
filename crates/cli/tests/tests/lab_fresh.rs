//! The lab on a fresh machine: it needs Linux, root and iproute2's `ip`, nothing else.
//! `lab up`, `lab exec` and `lab down` run with a `PATH` that holds `ip` alone (no
//! ethtool, no procps' sysctl or kill), and without `ip` `lab up` says how to install it
//! before it makes anything. Each lab has a name of its own and a guard that removes it
//! even when the test fails; root is needed as in `lab.rs`.

use std::path::{Path, PathBuf};
use std::process::Command;

use netio::ethtool::{self, Offloads};

use crate::lab::{alive, privileged, router_pids, two_hop_named, Lab};
use crate::support::{path_str, run_with_env, Proc, TempDir, BIN};

/// Where `ip` is: the first in `PATH`, else where Debian puts it (a user's `PATH` lacks
/// the sbin directories).
fn real_ip() -> Option<PathBuf> {
    let path = std::env::var("PATH").unwrap_or_default();
    let found = path
        .split(':')
        .chain(["/usr/sbin", "/sbin", "/usr/bin", "/bin"])
        .map(|d| Path::new(d).join("ip"))
        .find(|p| p.is_file());
    found
}

/// Namespaces of lab `name` that exist, listed by the real `ip` (not through the
/// PATH under test).
fn namespaces_of(name: &str) -> Vec<String> {
    let Some(ip) = real_ip() else {
        return Vec::new(); // no ip at all: nothing can have made a namespace
    };
    let out = Command::new(ip).args(["netns", "list"]).output().unwrap();
    assert!(out.status.success());
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .filter(|n| n.starts_with(&format!("dp-{name}.")))
        .map(str::to_owned)
        .collect()
}

/// Run `f` on a thread of its own inside namespace `ns` (`setns` for that thread only).
fn in_namespace<T: Send + 'static>(ns: &str, f: impl FnOnce() -> T + Send + 'static) -> T {
    let ns = ns.to_owned();
    std::thread::spawn(move || {
        netio::netns::enter(&ns).unwrap_or_else(|e| panic!("{ns}: {e}"));
        f()
    })
    .join()
    .unwrap_or_else(|p| std::panic::resume_unwind(p))
}

#[test]
fn lab_up_exec_and_down_need_only_ip_in_path_and_every_veth_has_its_offloads_off() {
    if !privileged() {
        return;
    }
    let ip = real_ip().expect("privileged() ran ip");
    let bin = TempDir::new("fresh-path");
    std::os::unix::fs::symlink(&ip, bin.path("ip")).unwrap();
    let only_ip = bin.path("");
    let only_ip = path_str(&only_ip);
    let name = format!("tfr-{}", std::process::id() % 100_000);
    let dir = TempDir::new("lab-fresh");
    let topo = dir.path("topo.toml");
    std::fs::write(&topo, two_hop_named(&name)).unwrap();
    let lab = Lab::guard(&name);

    let up = run_with_env(&["lab", "up", path_str(&topo), "--json"], ("PATH", only_ip));
    up.assert_success();
    let doc = up.json();
    assert_eq!(lab.namespaces().len(), 6);

    // Traffic crosses both routers, both families.
    let rx = Proc::spawn_with_env(
        &[
            "lab",
            "exec",
            &name,
            "receiver",
            "--",
            BIN,
            "recv",
            "--sessions",
            "2",
        ],
        &[("PATH", only_ip)],
    );
    rx.wait_stderr_line(|l| l.contains("listening on"));
    for dest in ["198.18.4.2", "2001:2:0:4::2"] {
        let send = run_with_env(
            &[
                "lab", "exec", &name, "sender", "--", BIN, "send", dest, "--udp", "--rate",
                "200pps", "--count", "20", "--json",
            ],
            ("PATH", only_ip),
        );
        send.assert_success();
        let flow = &send.json()["flows"][0];
        assert_eq!(flow["received"]["packets"], 20, "{dest}: {flow:#}");
    }
    let rx = rx.finish();
    assert!(rx.status.success(), "{}", rx.stderr);

    // Every veth end: the five offloads off, read back through the kernel's interface
    // in its namespace; and the per-interface sysctls node-setup wrote.
    let nodes = doc["topology"]["nodes"].as_array().unwrap();
    let mut ends = 0;
    for link in doc["topology"]["links"].as_array().unwrap() {
        for end in link["ends"].as_array().unwrap() {
            let node = &nodes[end["node"].as_u64().unwrap() as usize];
            let ns = format!("dp-{name}.{}", node["name"].as_str().unwrap());
            let ifname = end["ifname"].as_str().unwrap().to_owned();
            let router = node["kind"] == "router";
            let (offloads, disable_ipv6, accept_dad) = in_namespace(&ns, move || {
                // /proc/sys/net shows the namespace of the thread that opens it.
                let conf = |key: &str| {
                    std::fs::read_to_string(format!("/proc/sys/net/ipv6/conf/{ifname}/{key}"))
                        .unwrap()
                        .trim()
                        .to_owned()
                };
                let offloads = ethtool::offloads(&ifname).unwrap();
                (offloads, conf("disable_ipv6"), conf("accept_dad"))
            });
            assert_eq!(offloads, Offloads::default(), "{ns} {end}");
            assert_eq!(disable_ipv6, if router { "1" } else { "0" }, "{ns} {end}");
            assert_eq!(accept_dad, "0", "{ns} {end}");
            ends += 1;
        }
    }
    assert_eq!(ends, 10, "two-hop has five links");

    // node-setup's errors name what failed.
    let sender_ns = format!("dp-{name}.sender");
    let bad = Command::new(&ip)
        .args(["netns", "exec", &sender_ns, BIN, "lab", "node-setup"])
        .args(["--offloads-off", "nosuch0"])
        .env("PATH", only_ip)
        .output()
        .unwrap();
    assert!(!bad.status.success());
    let said = String::from_utf8_lossy(&bad.stderr);
    assert!(
        said.contains("nosuch0") && said.contains("no interface nosuch0 in this network namespace"),
        "{said}"
    );

    // Down stops the routers without procps' kill, and removes every namespace.
    let pids = router_pids(&doc);
    assert_eq!(pids.len(), 2);
    run_with_env(&["lab", "down", &name], ("PATH", only_ip)).assert_success();
    assert!(lab.namespaces().is_empty(), "{:?}", lab.namespaces());
    assert!(pids.iter().all(|p| !alive(*p)), "a router survived");
}

#[test]
fn lab_up_without_ip_in_path_says_how_to_install_it_and_makes_nothing() {
    let empty = TempDir::new("no-ip-path");
    let empty = empty.path("");
    let name = format!("tnoip-{}", std::process::id() % 100_000);
    let dir = TempDir::new("lab-no-ip");
    let topo = dir.path("topo.toml");
    std::fs::write(&topo, two_hop_named(&name)).unwrap();
    let _lab = Lab::guard(&name);

    let out = run_with_env(&["lab", "up", path_str(&topo)], ("PATH", path_str(&empty)));
    assert_eq!(out.code(), Some(1), "{}", out.stderr);
    assert_eq!(out.stderr.trim().lines().count(), 1, "{}", out.stderr);
    // SAFETY: geteuid has no preconditions.
    let want = if unsafe { libc::geteuid() } == 0 {
        "the lab needs iproute2's ip, which is not in PATH: install it with apt-get install iproute2"
    } else {
        // Without root that comes first (a user's PATH often lacks /usr/sbin).
        "the lab needs root (CAP_NET_ADMIN) to create network namespaces: run it with sudo"
    };
    assert!(out.stderr.contains(want), "{}", out.stderr);
    assert_eq!(namespaces_of(&name), Vec::<String>::new());
    assert!(!Path::new(&format!("/run/dualperf/labs/{name}")).exists());
}

#[test]
fn lab_node_setup_refuses_the_hosts_own_namespace() {
    if !privileged() {
        return;
    }
    // The value the host has already, so that even a node-setup that wrote it would
    // change nothing.
    let now = std::fs::read_to_string("/proc/sys/net/ipv4/ip_forward").unwrap();
    let arg = format!("net.ipv4.ip_forward={}", now.trim());
    let out = crate::support::run(&["lab", "node-setup", "--sysctl", &arg]);
    assert_eq!(out.code(), Some(1), "{}", out.stderr);
    assert!(
        out.stderr
            .contains("lab node-setup runs only inside a lab node's namespace"),
        "{}",
        out.stderr
    );
    // A key outside net is a usage error, checked before anything else.
    let out = crate::support::run(&["lab", "node-setup", "--sysctl", "kernel.panic=0"]);
    assert_eq!(out.code(), Some(2), "{}", out.stderr);
}
