//! A lab's stateless NAT64 node (`kind = "tayga"`): the kernel forwards both families,
//! as a `kernel` node's does, and TAYGA (<http://www.litech.org/tayga/>, Debian's
//! `tayga`) translates between IPv6 and IPv4 (RFC 7915, SIIT) through a TUN device,
//! `nat64`, in the node's namespace.
//!
//! The address plan (all of it inside the benchmarking ranges, RFC 2544 App. C.2.2 and
//! RFC 5180 §8):
//! - IPv4 is seen from IPv6 through the network-specific prefix [`PREFIX`],
//!   `2001:2:0:6464::/96` (RFC 6052 §2.2, a /96 inside 2001:2::/48): 198.18.2.2 is
//!   `2001:2:0:6464::c612:202`.
//! - IPv6 is seen from IPv4 through static `map`s: the IPv6 address of every host's link
//!   end is mapped to 198.19.K.S, where its IPv4 address is 198.18.K.S (link K, side
//!   S), so a host at 198.18.1.1 / 2001:2:0:1::1 is 198.19.1.1 when translated
//!   ([`mapped_v4`]). The pool, [`POOL`], is 198.19.0.0/16: no link's (links are
//!   198.18.K.0/24).
//! - TAYGA's own IPv4 address (the source of its ICMPv4 errors, and it answers ping) is
//!   [`TAYGA_V4`], 198.19.0.1 (no link 0, so no host maps to it); its IPv6 one is the
//!   prefix's image of it, `2001:2:0:6464::c613:1`.
//!
//! On the node: `prefix` and the pool are routed into the TUN. Hosts reach both through
//! their default routes, and every other forwarding node (router, kernel, nat44) through
//! its first hop toward the tayga node ([`routes_via`]); a lab has at most one tayga.
//!
//! `lab up` writes the configuration to `/run/dualperf/labs/LAB/NODE-tayga.conf`, makes
//! the TUN (`tayga --mktun`), raises it, routes into it, and runs `tayga -d --config
//! FILE` in the namespace (in the foreground, its messages in `NODE-tayga.log`), ready
//! once the TUN has its carrier (TAYGA holds it open). The process is recorded in the
//! lab's state and `lab down` stops it, as it stops the routers.

use std::net::{Ipv4Addr, Ipv6Addr};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::laberror::{run, LabError};
use crate::topology::{End, Kind, Topology};

// The address plan (a topology's, since every forwarding node routes it): the NAT64
// prefix, its length and the IPv4 pool, with the routes toward a tayga node.
pub use crate::topology::{routes_via, POOL, PREFIX, PREFIX_LEN};
/// TAYGA's own IPv4 address.
pub const TAYGA_V4: Ipv4Addr = Ipv4Addr::new(198, 19, 0, 1);
/// TAYGA's TUN device.
pub const TUN: &str = "nat64";

/// A running TAYGA.
#[derive(Clone, Debug, Serialize, Deserialize, schemars::JsonSchema)]
pub struct TaygaProc {
    /// Node name.
    pub node: String,
    /// Process id.
    pub pid: u32,
    /// Its configuration file.
    pub config: PathBuf,
    /// Its stdout and stderr.
    pub log: PathBuf,
}

/// The IPv4 address the IPv6 address of link end `end` is seen as through a tayga node:
/// its IPv4 address 198.18.K.S moved to 198.19.K.S.
pub fn mapped_v4(end: &End) -> Ipv4Addr {
    let [_, _, k, s] = end.ipv4.octets();
    Ipv4Addr::new(198, 19, k, s)
}

/// The IPv6 address IPv4 address `v4` is seen as through a tayga node: [`PREFIX`] with
/// `v4` in its last 32 bits (RFC 6052 §2.2, a /96).
pub fn nat64_address(v4: Ipv4Addr) -> Ipv6Addr {
    let mut o = PREFIX.octets();
    o[12..].copy_from_slice(&v4.octets());
    Ipv6Addr::from(o)
}

/// The static maps of topology `t`'s tayga nodes: every host's link end, its mapped
/// IPv4 address and its IPv6 address, in link order.
pub fn maps(t: &Topology) -> Vec<(Ipv4Addr, Ipv6Addr)> {
    t.links
        .iter()
        .flat_map(|l| l.ends.iter())
        .filter(|e| t.nodes[e.node].kind == Kind::Host)
        .map(|e| (mapped_v4(e), e.ipv6))
        .collect()
}

/// The configuration file (tayga.conf(5)) of tayga node `i`, its data directory `data`.
pub fn config(t: &Topology, i: usize, data: &Path) -> String {
    let mut out = format!(
        "# dualperf lab {lab}, node {node} (tayga): stateless NAT64 (RFC 7915).\n\
         # IPv4 is seen from IPv6 as {PREFIX}/{PREFIX_LEN} + the IPv4 address (RFC 6052);\n\
         # each host's IPv6 is seen from IPv4 as 198.19.K.S, its IPv4 being 198.18.K.S.\n\
         tun-device {TUN}\n\
         ipv4-addr {TAYGA_V4}\n\
         prefix {PREFIX}/{PREFIX_LEN}\n\
         data-dir {data}\n",
        lab = t.name,
        node = t.nodes[i].name,
        data = data.display(),
    );
    for (v4, v6) in maps(t) {
        out.push_str(&format!("map {v4} {v6}\n"));
    }
    out
}

/// The TAYGA program: `tayga` in `PATH`, else in `/usr/sbin` or `/usr/local/sbin` (a
/// user's `PATH` often lacks them); `None` when there is none.
pub fn program() -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain(["/usr/sbin", "/usr/local/sbin"].map(PathBuf::from))
        .map(|d| d.join("tayga"))
        .find(|p| p.is_file())
}

/// TAYGA and the TUN driver are needed when `t` has a tayga node:
/// [`LabError::Preflight`] when either is missing.
pub(crate) fn preflight(t: &Topology) -> Result<Option<PathBuf>, LabError> {
    let Some(n) = t.nodes.iter().find(|n| n.kind == Kind::Tayga) else {
        return Ok(None);
    };
    let Some(tayga) = program() else {
        return Err(LabError::Preflight {
            need: format!(
                "TAYGA for the tayga node '{}', which is not in PATH, /usr/sbin or /usr/local/sbin",
                n.name
            ),
            fix: "install it with apt-get install tayga".into(),
        });
    };
    if !Path::new("/dev/net/tun").exists() {
        return Err(LabError::Preflight {
            need: format!(
                "the TUN driver (/dev/net/tun) for the tayga node '{}'",
                n.name
            ),
            fix: "load it with modprobe tun".into(),
        });
    }
    Ok(Some(tayga))
}

fn io(path: &Path) -> impl Fn(std::io::Error) -> LabError + '_ {
    move |source| LabError::Io {
        path: path.to_owned(),
        source,
    }
}

/// Tayga node `i` of `t`: writes its configuration into `dir`, makes and raises its
/// TUN, routes the prefix and the pool into it and starts `tayga` (the program
/// `tayga`) in its own process group. The caller records the process, then waits with
/// [`wait_ready`].
pub(crate) fn spawn(
    t: &Topology,
    i: usize,
    dir: &Path,
    tayga: &Path,
) -> Result<TaygaProc, LabError> {
    let node = &t.nodes[i].name;
    let data = dir.join(format!("{node}-tayga"));
    std::fs::create_dir_all(&data).map_err(io(&data))?;
    let conf = dir.join(format!("{node}-tayga.conf"));
    std::fs::write(&conf, config(t, i, &data)).map_err(io(&conf))?;
    let ns = t.namespace(i);
    let (tayga_s, conf_s) = (tayga.to_string_lossy(), conf.to_string_lossy());
    run(&[
        "ip", "netns", "exec", &ns, &tayga_s, "--mktun", "--config", &conf_s,
    ])?;
    run(&["ip", "-n", &ns, "link", "set", TUN, "up"])?;
    let prefix = format!("{PREFIX}/{PREFIX_LEN}");
    run(&["ip", "-n", &ns, "-6", "route", "add", &prefix, "dev", TUN])?;
    let pool = format!("{}/{}", POOL.0, POOL.1);
    run(&["ip", "-n", &ns, "-4", "route", "add", &pool, "dev", TUN])?;
    let log = dir.join(format!("{node}-tayga.log"));
    let log_file = std::fs::File::create(&log).map_err(io(&log))?;
    let err_file = log_file.try_clone().map_err(io(&log))?;
    // `-d`: in the foreground, its messages on stdout (no syslog needed). `ip netns
    // exec` execs it, so the pid is TAYGA's own.
    let child = Command::new("ip")
        .args(["netns", "exec", &ns])
        .arg(tayga)
        .arg("-d")
        .arg("--config")
        .arg(&conf)
        .stdin(Stdio::null())
        .stdout(log_file)
        .stderr(err_file)
        .process_group(0)
        .spawn()
        .map_err(|e| LabError::Command {
            command: format!("ip netns exec {ns} {tayga_s} -d --config {conf_s}"),
            message: e.to_string(),
        })?;
    Ok(TaygaProc {
        node: node.clone(),
        pid: child.id(),
        config: conf,
        log,
    })
}

/// Waits (up to 10 s) until TAYGA `p`, in namespace `ns`, holds its TUN open: the TUN
/// has its carrier (`LOWER_UP`). Its exit or the deadline is [`LabError::Daemon`].
pub(crate) fn wait_ready(ns: &str, p: &TaygaProc, alive: fn(u32) -> bool) -> Result<(), LabError> {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let link = run(&["ip", "-n", ns, "-o", "link", "show", TUN]).unwrap_or_default();
        if link.contains("LOWER_UP") && !link.contains("NO-CARRIER") {
            return Ok(());
        }
        if !alive(p.pid) || Instant::now() > deadline {
            let said = std::fs::read_to_string(&p.log).unwrap_or_default();
            return Err(LabError::Daemon {
                what: format!("tayga on node {}", p.node),
                log: said.trim().to_owned(),
            });
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(crate) const DUT_TAYGA: &str = include_str!("../../../plans/topologies/dut-tayga.toml");

    #[test]
    fn the_dut_tayga_lab_maps_each_hosts_ipv6_into_198_19_and_sees_ipv4_through_the_prefix() {
        let t = Topology::parse(DUT_TAYGA).unwrap();
        let dut = t.node("dut").unwrap();
        assert_eq!(t.nodes[dut].kind, Kind::Tayga);
        let want = "# dualperf lab dut-tayga, node dut (tayga): stateless NAT64 (RFC 7915).\n\
            # IPv4 is seen from IPv6 as 2001:2:0:6464::/96 + the IPv4 address (RFC 6052);\n\
            # each host's IPv6 is seen from IPv4 as 198.19.K.S, its IPv4 being 198.18.K.S.\n\
            tun-device nat64\n\
            ipv4-addr 198.19.0.1\n\
            prefix 2001:2:0:6464::/96\n\
            data-dir /run/dualperf/labs/dut-tayga/dut-tayga\n\
            map 198.19.1.1 2001:2:0:1::1\n\
            map 198.19.2.2 2001:2:0:2::2\n";
        assert_eq!(
            config(&t, dut, Path::new("/run/dualperf/labs/dut-tayga/dut-tayga")),
            want
        );
        assert_eq!(
            nat64_address(Ipv4Addr::new(198, 18, 2, 2)),
            "2001:2:0:6464::c612:202".parse::<Ipv6Addr>().unwrap()
        );
        assert_eq!(nat64_address(TAYGA_V4).to_string(), "2001:2:0:6464::c613:1");
        let (_, sender, _) = t.ends_of(t.node("sender").unwrap()).next().unwrap();
        assert_eq!(mapped_v4(sender), Ipv4Addr::new(198, 19, 1, 1));
        // The node forwards with the kernel: routes to nothing beyond its own links,
        // the hosts' defaults through it in both families.
        assert!(t.routes(dut).is_empty());
        let gws: Vec<String> = t
            .routes(t.node("receiver").unwrap())
            .iter()
            .map(|r| format!("{:?} {} {}", r.prefix, r.gateway, r.ifname))
            .collect();
        assert_eq!(gws, ["None 198.18.2.1 to-dut", "None 2001:2:0:2::1 to-dut"]);
        assert_eq!(t.neighbors(dut).len(), 4);
    }

    #[test]
    fn routers_beyond_the_tayga_reach_its_prefix_and_pool_through_it_and_a_second_is_refused() {
        // sender — dut (tayga) — r1 — receiver
        let text = DUT_TAYGA
            .replace(
                "[[node]]\nname = \"receiver\"",
                "[[node]]\nname = \"r1\"\nkind = \"router\"\n\n[[node]]\nname = \"receiver\"",
            )
            .replace(
                "[[link]]\na = \"dut\"\nb = \"receiver\"",
                "[[link]]\na = \"dut\"\nb = \"r1\"\n\n[[link]]\na = \"r1\"\nb = \"receiver\"",
            );
        let t = Topology::parse(&text).unwrap();
        let r1 = t.node("r1").unwrap();
        let cfg = t.router_config(r1);
        let routes: Vec<(&str, &str, &str)> = cfg
            .routes
            .iter()
            .map(|r| (r.prefix.as_str(), r.via.as_str(), r.interface.as_str()))
            .collect();
        assert_eq!(
            routes,
            [
                ("198.18.1.0/24", "198.18.2.1", "to-dut"),
                ("2001:2:0:1::/64", "2001:2:0:2::1", "to-dut"),
                ("198.19.0.0/16", "198.18.2.1", "to-dut"),
                ("2001:2:0:6464::/96", "2001:2:0:2::1", "to-dut"),
            ]
        );
        // The tayga itself routes them into its TUN, not through a peer.
        assert_eq!(t.routes(t.node("dut").unwrap()).len(), 2);
        // Hosts are mapped wherever they are: the receiver is beyond r1 on link 3.
        assert_eq!(
            maps(&t),
            [
                (
                    Ipv4Addr::new(198, 19, 1, 1),
                    "2001:2:0:1::1".parse().unwrap()
                ),
                (
                    Ipv4Addr::new(198, 19, 3, 2),
                    "2001:2:0:3::2".parse().unwrap()
                ),
            ]
        );
        let two = text.replace("kind = \"router\"", "kind = \"tayga\"");
        let e = Topology::parse(&two).unwrap_err();
        assert_eq!(
            (e.line, e.message.as_str()),
            (
                Some(line_of(&two, "name = \"r1\"")),
                "node 'r1': a second tayga (a lab has one NAT64 prefix and one IPv4 pool)"
            )
        );
    }

    /// The 1-based line before the line `what` of `text`: a node's `[[node]]`, where its
    /// name is `what`.
    fn line_of(text: &str, what: &str) -> usize {
        text.lines().position(|l| l == what).unwrap()
    }
}
