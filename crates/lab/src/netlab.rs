//! Building and removing a topology in network namespaces with iproute2 and the
//! `dualperf` binary itself, and running one `dualperf route` per router.
//!
//! Every name carries the lab's prefix: namespaces are `dp-LAB.NODE`, and the veths live
//! only inside them, so deleting the namespaces deletes the links. The state file
//! (`/run/dualperf/labs/LAB/state.json`) records what `up` made; `down` also finds the
//! namespaces by prefix, so it leaves nothing behind after a crash or a `kill -9`. `up`
//! never touches a lab it finds: a name already taken (namespaces or a state file) is
//! [`LabError::Exists`]. A job that builds a lab for itself (`compare --lab`, a plan's
//! `lab:` target) names it [`job_name`], its topology's name and its process id, through
//! [`up_own`], and removes only that one.
//!
//! From the machine the lab needs Linux, root (`CAP_NET_ADMIN`, with `CAP_NET_RAW` for
//! the routers and `CAP_SYS_ADMIN` for `ip netns`) and iproute2's `ip`, nothing else: [`preflight`] checks them before `up`
//! makes anything. The kernel setup iproute2 does not do (sysctls, offloads) is done by
//! `dualperf lab node-setup` run inside each namespace (`ip netns exec NS dualperf lab
//! node-setup`), which writes `/proc/sys/net` and uses the ethtool ioctls through
//! `netio`: `lab` itself never links `netio`, and needs neither procps' `sysctl` nor
//! `ethtool`. Signals go through `/bin/sh`'s `kill` builtin, not procps' `kill`.
//!
//! Per node, `up` sets:
//! - all: loopback up, IPv6 DAD and router advertisements off (addresses usable at once,
//!   no autoconfiguration);
//! - hosts: dual-stack addresses, default routes via their router, static neighbour
//!   entries for every peer;
//! - routers: no kernel addresses and IPv6 off on their interfaces, kernel forwarding
//!   off: only `dualperf route` answers and forwards;
//! - kernel, nat44 and tayga nodes: a host's addresses and static neighbours, a router's
//!   routes, kernel forwarding on in both families; a nat44's nftables rules
//!   ([`crate::nat44`]); a tayga's TUN, routes into it and TAYGA process
//!   ([`crate::tayga`]), recorded in the state and stopped by `down` as routers are;
//! - every veth: TSO, GSO, GRO and checksum offloads off, so the router sees wire-sized
//!   frames with full checksums.
//!
//! Order: namespaces, then every veth (down), then one `node-setup` per namespace
//! (sysctls for the namespace and for each of its veths, offloads off), then addresses
//! and links up. A veth's IPv6 settings are copied from `default` when it is made, so
//! `node-setup` sets them on each veth as well, while it is still down (IPv6 starts on
//! an interface, with its link-local address and DAD, only when it goes up).

use std::ffi::OsStr;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration as StdDuration, Instant as StdInstant};

use serde::{Deserialize, Serialize};

pub(crate) use crate::laberror::run;
pub use crate::laberror::LabError;
use crate::topology::{Kind, Topology};
use router::stats::RouterStats;

/// Where lab state lives.
pub const STATE_ROOT: &str = "/run/dualperf/labs";

/// What `up` made; `dualperf lab up --json` prints it.
#[derive(Clone, Debug, Serialize, Deserialize, schemars::JsonSchema)]
pub struct LabState {
    /// The topology, resolved.
    pub topology: Topology,
    /// Namespaces, in node order.
    pub namespaces: Vec<String>,
    /// Router processes.
    pub routers: Vec<RouterProc>,
    /// TAYGA processes, one per tayga node.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tayga: Vec<crate::tayga::TaygaProc>,
}

/// A running `dualperf route`.
#[derive(Clone, Debug, Serialize, Deserialize, schemars::JsonSchema)]
pub struct RouterProc {
    /// Node name.
    pub node: String,
    /// Process id.
    pub pid: u32,
    /// Its configuration file.
    pub config: PathBuf,
    /// Where it writes its counters (every 500 ms, on SIGUSR1 and at exit).
    pub stats: PathBuf,
    /// Its stdout and stderr.
    pub log: PathBuf,
}

/// The state directory of lab `name`.
pub fn state_dir(name: &str) -> PathBuf {
    Path::new(STATE_ROOT).join(name)
}

/// Send signal `sig` (`TERM`, `KILL`, `USR1`, …) to every process of `pids`. Through the
/// `kill` builtin of `/bin/sh`, which every Linux system has (Debian's is dash, an
/// essential package): the `kill` program comes with procps, which a minimal system
/// lacks. An error when any of them could not be signalled (the others were).
pub fn signal(sig: &str, pids: &[u32]) -> Result<(), LabError> {
    if pids.is_empty() {
        return Ok(());
    }
    let pids: Vec<String> = pids.iter().map(u32::to_string).collect();
    // `sh -c SCRIPT ARG0 ARGS…`: the signal is $0, the pids are "$@".
    let mut args = vec!["/bin/sh", "-c", "kill -s \"$0\" \"$@\"", sig];
    args.extend(pids.iter().map(String::as_str));
    run(&args).map(drop)
}

fn io(path: &Path) -> impl Fn(std::io::Error) -> LabError + '_ {
    move |source| LabError::Io {
        path: path.to_owned(),
        source,
    }
}

/// Namespaces whose name starts with `dp-NAME.` (names hold no dots, so no other lab's).
pub fn namespaces_of(name: &str) -> Result<Vec<String>, LabError> {
    let prefix = format!("dp-{name}.");
    Ok(run(&["ip", "netns", "list"])?
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .filter(|n| n.starts_with(&prefix))
        .map(str::to_owned)
        .collect())
}

/// The labs up on this machine: each name with a namespace `dp-NAME.NODE` or a state
/// file, sorted.
pub fn labs() -> Result<Vec<String>, LabError> {
    let netns = run(&["ip", "netns", "list"])?;
    let with_state = std::fs::read_dir(STATE_ROOT)
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| e.path().join("state.json").is_file())
        .map(|e| e.file_name().to_string_lossy().into_owned());
    Ok(lab_names(&netns, with_state))
}

/// The lab names in `ip netns list`'s output `netns` (namespaces `dp-NAME.NODE`) and
/// `with_state` (state directories that hold a state file), sorted, each once.
fn lab_names(netns: &str, with_state: impl Iterator<Item = String>) -> Vec<String> {
    let mut names: Vec<String> = netns
        .lines()
        .filter_map(|l| l.split_whitespace().next()?.strip_prefix("dp-"))
        .filter_map(|n| n.split_once('.').map(|(lab, _)| lab.to_owned()))
        .chain(with_state)
        .filter(|n| crate::topology::valid_lab_name(n))
        .collect();
    names.sort();
    names.dedup();
    names
}

/// What is there of lab `name` (its namespaces, its state file), if anything.
fn found(name: &str) -> Result<Option<String>, LabError> {
    let namespaces = namespaces_of(name)?;
    let state_file = state_dir(name).join("state.json");
    let mut what = Vec::new();
    match namespaces.len() {
        0 => {}
        1 => what.push(format!("namespace {}", namespaces[0])),
        n => what.push(format!("{n} namespaces {}", namespaces.join(", "))),
    }
    if state_file.exists() {
        what.push(format!("state file {}", state_file.display()));
    }
    Ok((!what.is_empty()).then(|| what.join(", ")))
}

/// [`LabError::NoSuchLab`] unless lab `name` is there (its namespaces or state file).
pub fn check_exists(name: &str) -> Result<(), LabError> {
    check_name(name)?;
    if found(name)?.is_some() {
        return Ok(());
    }
    Err(LabError::NoSuchLab {
        name: name.to_owned(),
        up: labs()?,
    })
}

/// The name of the lab one job of process `pid` builds for itself from a topology named
/// `base`: `BASE-PID`, BASE cut (and any `-` it then ends with) so the whole is a lab
/// name of at most 16 characters. No other process of this machine gives the same name
/// while this one runs.
pub fn job_name(base: &str, pid: u32) -> String {
    let suffix = format!("-{pid}");
    let keep = 16usize.saturating_sub(suffix.len());
    let cut: String = base.chars().take(keep).collect();
    let cut = cut.trim_end_matches('-');
    let cut = if cut.is_empty() { "lab" } else { cut };
    format!("{cut}{suffix}")
}

/// Build `topology` as a lab of this process's own, named [`job_name`] (its name and
/// this process's id), for one job: the topology as built (under that name), and the
/// guard that removes the lab and its state directory when dropped. A lab already
/// there under that name is left alone and is [`LabError::Exists`].
pub fn up_own(topology: &Topology, exe: &Path) -> Result<(Topology, Guard), LabError> {
    let mut own = topology.clone();
    own.name = job_name(&topology.name, std::process::id());
    up(&own, exe, None)?;
    let guard = Guard {
        name: own.name.clone(),
        state_dir: true,
    };
    Ok((own, guard))
}

/// Build `topology`; `exe` is the `dualperf` binary the routers run, and that sets up
/// each namespace (`lab node-setup`). What the machine lacks is found by [`preflight`]
/// before anything is made. A lab already there under the same name (namespaces or a
/// state file) is [`LabError::Exists`], and left as it is; the state file is claimed
/// with `O_EXCL`, so of two `up`s of one name at once, one builds and the other
/// refuses. A lab that fails half-way is removed again.
pub fn up(topology: &Topology, exe: &Path, pcap: Option<&Path>) -> Result<LabState, LabError> {
    check_name(&topology.name)?;
    preflight()?;
    crate::nat44::preflight(topology)?;
    let tayga = crate::tayga::preflight(topology)?;
    let exists = |found: String| LabError::Exists {
        name: topology.name.clone(),
        found,
    };
    if let Some(what) = found(&topology.name)? {
        return Err(exists(what));
    }
    let dir = state_dir(&topology.name);
    std::fs::create_dir_all(&dir).map_err(io(&dir))?;
    let claim = dir.join("state.json");
    match std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&claim)
    {
        Ok(_) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            return Err(exists(format!("state file {}", claim.display())));
        }
        Err(e) => {
            return Err(LabError::Io {
                path: claim,
                source: e,
            })
        }
    }
    let mut state = LabState {
        topology: topology.clone(),
        namespaces: (0..topology.nodes.len())
            .map(|i| topology.namespace(i))
            .collect(),
        routers: Vec::new(),
        tayga: Vec::new(),
    };
    // Recorded before anything is made, so a failure half-way is cleaned up by `down`.
    write_state(&state)?;
    match build(topology, exe, pcap, tayga.as_deref(), &mut state) {
        Ok(()) => {
            write_state(&state)?;
            Ok(state)
        }
        Err(e) => {
            let _ = write_state(&state);
            let _ = down(&topology.name);
            Err(e)
        }
    }
}

/// Check what the lab needs from the machine, before anything is made: Linux with
/// network namespaces and IPv6, root (`CAP_NET_ADMIN`, `CAP_NET_RAW`, `CAP_SYS_ADMIN`), iproute2's
/// `ip` in `PATH` with `ip netns`, and a writable `/run`. The first thing
/// missing is a [`LabError::Preflight`]: one line with what, why, and the fix.
pub fn preflight() -> Result<(), LabError> {
    let missing = |need: &str, fix: &str| {
        Err(LabError::Preflight {
            need: need.to_owned(),
            fix: fix.to_owned(),
        })
    };
    if !Path::new("/proc/self/ns/net").exists() {
        return missing(
            "Linux with network namespaces, which this system lacks (no /proc/self/ns/net)",
            "run it on Linux with a kernel built with CONFIG_NET_NS=y",
        );
    }
    if !Path::new("/proc/sys/net/ipv6").exists() {
        return missing(
            "IPv6 in the kernel, which is off here (no /proc/sys/net/ipv6)",
            "boot without ipv6.disable=1",
        );
    }
    // Before the tools: a user's PATH often lacks /usr/sbin, where ip is, and sudo's has it.
    if let Ok(status) = std::fs::read_to_string("/proc/self/status") {
        if let Some(e) = privilege_problem(&status) {
            return Err(e);
        }
    }
    const INSTALL: &str = "install it with apt-get install iproute2";
    match Command::new("ip").arg("-V").stdin(Stdio::null()).output() {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return missing("iproute2's ip, which is not in PATH", INSTALL);
        }
        Err(e) => return missing(&format!("iproute2's ip, which does not run ({e})"), INSTALL),
        Ok(out) => {
            let said = String::from_utf8_lossy(&out.stdout) + String::from_utf8_lossy(&out.stderr);
            if !out.status.success() || !said.contains("iproute2") {
                let first = said.lines().next().unwrap_or("").trim().to_owned();
                return missing(
                    &format!("iproute2's ip, and the ip in PATH is another ({first})"),
                    INSTALL,
                );
            }
        }
    }
    if let Err(e) = run(&["ip", "netns", "list"]) {
        return missing(
            &format!("ip with network namespace support (`ip netns`), which fails here ({e})"),
            INSTALL,
        );
    }
    if let Err(e) = std::fs::create_dir_all(STATE_ROOT) {
        return missing(
            &format!(
                "a writable /run for its namespaces (/run/netns) and state ({STATE_ROOT}: {e})"
            ),
            "mount /run read-write (as a tmpfs)",
        );
    }
    Ok(())
}

/// `CAP_NET_ADMIN` (12), `CAP_NET_RAW` (13) and `CAP_SYS_ADMIN` (21),
/// `linux/capability.h`: veths, addresses and routes need the first, the routers'
/// AF_PACKET rings the second (packet(7)), `ip netns add` (a bind mount under
/// /run/netns) and `ip netns exec` (setns, a mount namespace) the third.
const LAB_CAPS: u64 = 1 << 12 | 1 << 13 | 1 << 21;

/// The effective capabilities in a `/proc/PID/status` text (its `CapEff:` line: at most
/// 16 hex digits, proc(5)); `None` when it has none or it does not read.
pub fn cap_eff(status: &str) -> Option<u64> {
    let hex = status
        .lines()
        .find_map(|l| l.strip_prefix("CapEff:"))?
        .trim();
    if hex.is_empty() || hex.len() > 16 || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    u64::from_str_radix(hex, 16).ok()
}

/// Why a process whose `/proc/PID/status` is `status` cannot build a lab, if it cannot:
/// `None` when it holds [`LAB_CAPS`], or when the text does not say.
fn privilege_problem(status: &str) -> Option<LabError> {
    if cap_eff(status)? & LAB_CAPS == LAB_CAPS {
        return None;
    }
    let euid = status
        .lines()
        .find_map(|l| l.strip_prefix("Uid:"))
        .and_then(|u| u.split_whitespace().nth(1));
    let (need, fix) = if euid == Some("0") {
        // Root without the capabilities: a container, or a bounding set that drops them.
        (
            "CAP_NET_ADMIN, CAP_NET_RAW and CAP_SYS_ADMIN to create network namespaces, \
             which this root lacks",
            "grant them (a container: --cap-add NET_ADMIN --cap-add NET_RAW --cap-add SYS_ADMIN)",
        )
    } else {
        (
            "root (CAP_NET_ADMIN) to create network namespaces",
            "run it with sudo",
        )
    };
    Some(LabError::Preflight {
        need: need.to_owned(),
        fix: fix.to_owned(),
    })
}

fn write_state(state: &LabState) -> Result<(), LabError> {
    let path = state_dir(&state.topology.name).join("state.json");
    let text = serde_json::to_vec_pretty(state).map_err(|e| LabError::Io {
        path: path.clone(),
        source: std::io::Error::other(e),
    })?;
    let tmp = path.with_extension("json.tmp");
    std::fs::write(&tmp, text).map_err(io(&tmp))?;
    std::fs::rename(&tmp, &path).map_err(io(&path))
}

/// Builds the lab `t` in phases: namespaces, veths, each node's setup, addresses,
/// kernel-addressed nodes' neighbours and routes, NAT44 rules, TAYGAs (program `tayga`)
/// and then the routers (each process recorded in `state` as it starts). `pcap`, when
/// given, is where each router writes its captures.
fn build(
    t: &Topology,
    exe: &Path,
    pcap: Option<&Path>,
    tayga: Option<&Path>,
    state: &mut LabState,
) -> Result<(), LabError> {
    make_namespaces(t)?;
    crate::hostsfile::write(t)?;
    make_veths(t)?;
    set_up_nodes(t, exe)?;
    address_and_raise_links(t)?;
    fill_hosts_neighbors_and_routes(t)?;
    crate::nat44::apply(t, &state_dir(&t.name))?;
    if let Some(tayga) = tayga {
        start_taygas(t, tayga, state)?;
    }
    start_routers(t, exe, pcap, state)
}

/// Starts TAYGA (the program `tayga`) on each tayga node of `t`, recording each in
/// `state` (and on disk) before waiting until it translates.
fn start_taygas(t: &Topology, tayga: &Path, state: &mut LabState) -> Result<(), LabError> {
    let dir = state_dir(&t.name);
    for (i, node) in t.nodes.iter().enumerate() {
        if node.kind != Kind::Tayga {
            continue;
        }
        let p = crate::tayga::spawn(t, i, &dir, tayga)?;
        state.tayga.push(p.clone());
        write_state(state)?;
        crate::tayga::wait_ready(&t.namespace(i), &p, alive)?;
    }
    Ok(())
}

/// One network namespace per node of `t`, each with its loopback up.
fn make_namespaces(t: &Topology) -> Result<(), LabError> {
    for i in 0..t.nodes.len() {
        let ns = t.namespace(i);
        run(&["ip", "netns", "add", &ns])?;
        run(&["ip", "-n", &ns, "link", "set", "lo", "up"])?;
    }
    Ok(())
}

/// One veth pair per link of `t`, its ends in their nodes' namespaces with the link's
/// MTU, left down.
fn make_veths(t: &Topology) -> Result<(), LabError> {
    for l in &t.links {
        let [a, b] = &l.ends;
        let (na, nb) = (t.namespace(a.node), t.namespace(b.node));
        // A router's side gets another MAC in the kernel than the router answers to
        // (see topology::kernel_mac): the namespace's kernel drops frames for the router
        // at once, as for another host, and the router reads them from its ring.
        let kernel_mac = |e: &crate::topology::End| match t.nodes[e.node].kind {
            Kind::Router => crate::topology::kernel_mac(&e.mac),
            Kind::Host | Kind::Nat44 | Kind::Kernel | Kind::Tayga => e.mac.clone(),
        };
        let (mac_a, mac_b) = (kernel_mac(a), kernel_mac(b));
        run(&[
            "ip", "link", "add", "name", &a.ifname, "address", &mac_a, "netns", &na, "type",
            "veth", "peer", "name", &b.ifname, "address", &mac_b, "netns", &nb,
        ])?;
        for end in [a, b] {
            let ns = t.namespace(end.node);
            let mtu = l.mtu.to_string();
            run(&["ip", "-n", &ns, "link", "set", &end.ifname, "mtu", &mtu])?;
        }
    }
    Ok(())
}

/// One `exe lab node-setup` process per namespace, while its veths are down: sysctls,
/// then offloads off (wire-sized frames with full checksums for the router).
fn set_up_nodes(t: &Topology, exe: &Path) -> Result<(), LabError> {
    for (i, node) in t.nodes.iter().enumerate() {
        let ifaces: Vec<&str> = t.ends_of(i).map(|(_, e, _)| e.ifname.as_str()).collect();
        let ns = t.namespace(i);
        let mut args: Vec<&OsStr> = ["ip", "netns", "exec", &ns].map(OsStr::new).to_vec();
        args.extend([exe.as_os_str(), OsStr::new("lab"), OsStr::new("node-setup")]);
        let sysctls = node_sysctls(node.kind, &ifaces);
        for s in &sysctls {
            args.extend([OsStr::new("--sysctl"), OsStr::new(s)]);
        }
        for f in &ifaces {
            args.extend([OsStr::new("--offloads-off"), OsStr::new(f)]);
        }
        run(&args)?;
    }
    Ok(())
}

/// Every link end up, a host's end with its IPv4 (/24) and IPv6 (/64, no DAD)
/// addresses first; a router's ends carry no kernel addresses.
fn address_and_raise_links(t: &Topology) -> Result<(), LabError> {
    for l in &t.links {
        for end in &l.ends {
            let ns = t.namespace(end.node);
            if t.nodes[end.node].kind.kernel_addresses() {
                run(&[
                    "ip",
                    "-n",
                    &ns,
                    "addr",
                    "add",
                    &format!("{}/24", end.ipv4),
                    "dev",
                    &end.ifname,
                ])?;
                run(&[
                    "ip",
                    "-n",
                    &ns,
                    "-6",
                    "addr",
                    "add",
                    &format!("{}/64", end.ipv6),
                    "dev",
                    &end.ifname,
                    "nodad",
                ])?;
            }
            run(&["ip", "-n", &ns, "link", "set", &end.ifname, "up"])?;
        }
    }
    Ok(())
}

/// Each host's permanent neighbour entries and its routes, as the topology gives them.
fn fill_hosts_neighbors_and_routes(t: &Topology) -> Result<(), LabError> {
    for (i, node) in t.nodes.iter().enumerate() {
        if !node.kind.kernel_addresses() {
            continue;
        }
        let ns = t.namespace(i);
        for n in t.neighbors(i) {
            run(&[
                "ip",
                "-n",
                &ns,
                "neigh",
                "replace",
                &n.ip.to_string(),
                "lladdr",
                &n.mac,
                "dev",
                &n.ifname,
                "nud",
                "permanent",
            ])?;
        }
        for r in t.routes(i) {
            let dest = r
                .prefix
                .map_or("default".to_owned(), |(ip, len)| format!("{ip}/{len}"));
            let family = if r.gateway.is_ipv4() { "-4" } else { "-6" };
            run(&[
                "ip",
                "-n",
                &ns,
                family,
                "route",
                "add",
                &dest,
                "via",
                &r.gateway.to_string(),
                "dev",
                &r.ifname,
            ])?;
        }
    }
    Ok(())
}

/// Starts each router of `t` in its namespace, one at a time: writes its config and
/// QoS file, spawns `exe route` in its own process group, records it in `state` (and on
/// disk) and waits until it forwards.
fn start_routers(
    t: &Topology,
    exe: &Path,
    pcap: Option<&Path>,
    state: &mut LabState,
) -> Result<(), LabError> {
    let dir = state_dir(&t.name);
    for (i, node) in t.nodes.iter().enumerate() {
        if node.kind != Kind::Router {
            continue;
        }
        let config = dir.join(format!("{}.toml", node.name));
        let text = toml::to_string(&t.router_config(i)).map_err(|e| LabError::Io {
            path: config.clone(),
            source: std::io::Error::other(e),
        })?;
        std::fs::write(&config, text).map_err(io(&config))?;
        let stats = dir.join(format!("{}.stats.json", node.name));
        let log = dir.join(format!("{}.log", node.name));
        let log_file = std::fs::File::create(&log).map_err(io(&log))?;
        let err_file = log_file.try_clone().map_err(io(&log))?;
        let ns = t.namespace(i);
        let mut cmd = Command::new("ip");
        cmd.args(["netns", "exec", &ns])
            .arg(exe)
            .arg("route")
            .arg("--config")
            .arg(&config)
            .arg("--stats")
            .arg(&stats);
        // Every router reads a QoS file, empty without policies, so `set_qos` can give
        // it one later (SIGUSR2).
        let qos = qos_path(&t.name, &node.name);
        let text = node.qos.as_ref().map_or(NO_QOS, |q| q.text.as_str());
        std::fs::write(&qos, text).map_err(io(&qos))?;
        cmd.arg("--qos").arg(&qos);
        if let Some(cpu) = node.cpu {
            cmd.arg("--cpu").arg(cpu.to_string());
        }
        if let Some(p) = pcap {
            let d = p.join(&node.name);
            std::fs::create_dir_all(&d).map_err(io(&d))?;
            cmd.arg("--pcap").arg(d);
        }
        // Its own process group: the router outlives `lab up` and a Ctrl-C there.
        let child = cmd
            .stdin(Stdio::null())
            .stdout(log_file)
            .stderr(err_file)
            .process_group(0)
            .spawn()
            .map_err(|e| LabError::Command {
                command: format!("ip netns exec {ns} dualperf route"),
                message: e.to_string(),
            })?;
        state.routers.push(RouterProc {
            node: node.name.clone(),
            pid: child.id(),
            config,
            stats,
            log: log.clone(),
        });
        write_state(state)?;
        wait_until_forwarding(&node.name, child.id(), &log)?;
    }
    Ok(())
}

/// Waits (up to 10 s) until the router `node`, process `pid`, says in its `log` that it
/// forwards; its exit or the deadline is [`LabError::Router`] with what it said.
fn wait_until_forwarding(node: &str, pid: u32, log: &Path) -> Result<(), LabError> {
    // Ready when it says so; gone means it failed.
    let deadline = StdInstant::now() + StdDuration::from_secs(10);
    loop {
        let said = std::fs::read_to_string(log).unwrap_or_default();
        if said.contains("dualperf route: forwarding") {
            return Ok(());
        }
        if !alive(pid) || StdInstant::now() > deadline {
            return Err(LabError::Router {
                node: node.to_owned(),
                log: said.trim().to_owned(),
            });
        }
        std::thread::sleep(StdDuration::from_millis(20));
    }
}

/// What `lab node-setup` writes in the namespace of a node of `kind` with interfaces
/// `ifaces`, as sysctl(8) names it (`KEY=VALUE`). `all` and `default` for the
/// namespace; each interface gets its own as well, because it was made before these
/// were written and took `default`'s values then.
fn node_sysctls(kind: Kind, ifaces: &[&str]) -> Vec<String> {
    let mut keys: Vec<(String, &str)> = Vec::new();
    for conf in ["all", "default"].into_iter().chain(ifaces.iter().copied()) {
        keys.push((format!("net.ipv6.conf.{conf}.accept_dad"), "0"));
        keys.push((format!("net.ipv6.conf.{conf}.accept_ra"), "0"));
    }
    if kind == Kind::Router {
        keys.push(("net.ipv4.ip_forward".into(), "0"));
        keys.push(("net.ipv6.conf.all.forwarding".into(), "0"));
        // No IPv6 in the kernel on the router's interfaces, nor on any made later.
        for conf in ["default"].into_iter().chain(ifaces.iter().copied()) {
            keys.push((format!("net.ipv6.conf.{conf}.disable_ipv6"), "1"));
        }
    }
    if kind.kernel_forwards() {
        keys.extend(crate::nat44::sysctls());
    }
    keys.into_iter().map(|(k, v)| format!("{k}={v}")).collect()
}

/// Whether process `pid` is running (not a zombie).
pub(crate) fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| {
            // "PID (comm) S …": the state follows the last ')'.
            let rest = &s[s.rfind(')')? + 1..];
            rest.split_whitespace().next().map(|st| st != "Z")
        })
        .unwrap_or(false)
}

fn check_name(name: &str) -> Result<(), LabError> {
    if crate::topology::valid_lab_name(name) {
        Ok(())
    } else {
        Err(LabError::NotFound(format!(
            "'{name}' is not a lab name (1 to 16 of a-z, 0-9 and '-')"
        )))
    }
}

/// A lab built for one job (a plan, a `compare --lab`), removed when dropped: also on
/// an error or Ctrl-C.
pub struct Guard {
    name: String,
    /// Whether its state directory goes too ([`up_own`]'s: no later `up` reuses it).
    state_dir: bool,
}

impl Guard {
    /// A guard for lab `name`, which the caller built: removed as [`down`] removes it,
    /// its state directory (the routers' logs and final counters) left.
    pub fn new(name: &str) -> Self {
        Self {
            name: name.to_owned(),
            state_dir: false,
        }
    }

    /// The lab's name.
    pub fn name(&self) -> &str {
        &self.name
    }
}

impl Drop for Guard {
    fn drop(&mut self) {
        if let Err(e) = down(&self.name) {
            eprintln!("dualperf: warning: removing lab '{}': {e}", self.name);
            return;
        }
        let dir = state_dir(&self.name);
        if self.state_dir && dir.exists() {
            if let Err(e) = std::fs::remove_dir_all(&dir) {
                eprintln!("dualperf: warning: removing {}: {e}", dir.display());
            }
        }
    }
}

/// A QoS file with no policy: every egress is its plain link.
pub const NO_QOS: &str = "version = 1\n# no service policies\n";

/// Where router `node` of lab `name` reads its QoS file.
pub fn qos_path(name: &str, node: &str) -> PathBuf {
    state_dir(name).join(format!("{node}.qos.toml"))
}

/// Give router `node` of a running lab the QoS file `text` (`None`: no policies) and
/// wait until it has reloaded (SIGUSR2; its counters start again from zero). The text is
/// checked by the router: a file it refuses is an error here, and the router keeps its
/// previous policies.
pub fn set_qos(name: &str, node: &str, text: Option<&str>) -> Result<(), LabError> {
    let r = router(name, node)?;
    let reloads = |stats: &Path| -> (u64, u64) {
        read_stats(stats).map_or((0, 0), |d| (d.qos.reloads, d.qos.refused))
    };
    let before = reloads(&r.stats);
    let path = qos_path(name, node);
    std::fs::write(&path, text.unwrap_or(NO_QOS)).map_err(io(&path))?;
    signal("USR2", &[r.pid])?;
    let deadline = StdInstant::now() + StdDuration::from_secs(5);
    loop {
        let now = reloads(&r.stats);
        if now.0 > before.0 {
            return Ok(());
        }
        if now.1 > before.1 {
            let error = read_stats(&r.stats).and_then(|d| d.qos.error);
            return Err(LabError::Router {
                node: node.into(),
                log: format!(
                    "refused the QoS file: {}",
                    error.as_deref().unwrap_or("(no reason given)")
                ),
            });
        }
        if StdInstant::now() > deadline {
            return Err(LabError::Router {
                node: node.into(),
                log: "did not reload its QoS file within 5 s".into(),
            });
        }
        std::thread::sleep(StdDuration::from_millis(20));
    }
}

/// Router `node` of running lab `name`.
fn router(name: &str, node: &str) -> Result<RouterProc, LabError> {
    state_of(name)?
        .routers
        .into_iter()
        .find(|r| r.node == node)
        .ok_or_else(|| LabError::NotFound(format!("lab '{name}' has no router '{node}'")))
}

/// A router's stats file, if it reads.
fn read_stats(path: &Path) -> Option<RouterStats> {
    std::fs::read(path)
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
}

/// Router `node`'s counters, fresh (SIGUSR1, then its stats file once rewritten).
pub fn router_stats(name: &str, node: &str) -> Result<RouterStats, LabError> {
    let r = router(name, node)?;
    // The router counts the snapshots SIGUSR1 asked for: one that counts more than the
    // file did before the signal was taken after it (its writer thread may still be
    // writing an older one when the signal comes).
    let answered = |path: &Path| read_stats(path).map_or(0, |d| d.usr1_answered);
    let before = answered(&r.stats);
    signal("USR1", &[r.pid])?;
    let deadline = StdInstant::now() + StdDuration::from_secs(5);
    while answered(&r.stats) <= before && StdInstant::now() < deadline {
        std::thread::sleep(StdDuration::from_millis(10));
    }
    let bytes = std::fs::read(&r.stats).map_err(io(&r.stats))?;
    serde_json::from_slice(&bytes).map_err(|e| LabError::Io {
        path: r.stats.clone(),
        source: std::io::Error::other(e),
    })
}

/// The lab's state, if `up` left one.
pub fn state(name: &str) -> Result<Option<LabState>, LabError> {
    check_name(name)?;
    let path = state_dir(name).join("state.json");
    match std::fs::read(&path) {
        Ok(b) => serde_json::from_slice(&b)
            .map(Some)
            .map_err(|e| LabError::Io {
                path,
                source: std::io::Error::other(e),
            }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(LabError::Io { path, source: e }),
    }
}

/// What `down` removed.
#[derive(Clone, Debug, Default, Serialize)]
pub struct DownReport {
    /// Processes stopped (routers, and anything else running in the namespaces).
    pub processes: Vec<u32>,
    /// Namespaces deleted.
    pub namespaces: Vec<String>,
}

/// Remove lab `name`: stop every process in its namespaces and every router it recorded
/// (SIGTERM, so routers write their final counters and captures, then SIGKILL after 2 s),
/// delete the namespaces (and with them the veths) and the state file. The routers'
/// configurations, logs and final counters stay in the state directory until the next
/// `up`. Idempotent.
pub fn down(name: &str) -> Result<DownReport, LabError> {
    check_name(name)?;
    let mut report = DownReport::default();
    let mut namespaces = namespaces_of(name)?;
    let mut pids: Vec<u32> = Vec::new();
    // A state file that does not read (cut by a crash) is removed all the same: the
    // namespaces are found by their prefix.
    if let Some(s) = state(name).ok().flatten() {
        for ns in s.namespaces {
            if !namespaces.contains(&ns) {
                namespaces.push(ns);
            }
        }
        // A router whose namespace is already gone holds the namespace alive but is no
        // longer listed by `ip netns pids`: stop it by its recorded pid, if that pid is
        // still a dualperf router (not a process that reused the number).
        for r in &s.routers {
            let cmdline = std::fs::read(format!("/proc/{}/cmdline", r.pid)).unwrap_or_default();
            let cmdline = String::from_utf8_lossy(&cmdline);
            if cmdline.contains("dualperf") && cmdline.contains("route") && alive(r.pid) {
                pids.push(r.pid);
            }
        }
        for p in &s.tayga {
            let cmdline = std::fs::read(format!("/proc/{}/cmdline", p.pid)).unwrap_or_default();
            if String::from_utf8_lossy(&cmdline).contains("tayga") && alive(p.pid) {
                pids.push(p.pid);
            }
        }
    }
    let existing = namespaces_of(name)?;
    namespaces.retain(|n| existing.contains(n));
    for ns in &namespaces {
        if let Ok(out) = run(&["ip", "netns", "pids", ns]) {
            pids.extend(out.split_whitespace().filter_map(|p| p.parse::<u32>().ok()));
        }
    }
    // Once each: a second SIGTERM makes a dualperf process exit at once, without
    // writing its final counters and captures.
    pids.sort_unstable();
    pids.dedup();
    for sig in ["TERM", "KILL"] {
        let live: Vec<u32> = pids.iter().copied().filter(|p| alive(*p)).collect();
        if live.is_empty() {
            break;
        }
        // One may have ended since: what matters is that none is left below.
        let _ = signal(sig, &live);
        let deadline = StdInstant::now() + StdDuration::from_secs(2);
        while pids.iter().any(|p| alive(*p)) && StdInstant::now() < deadline {
            std::thread::sleep(StdDuration::from_millis(20));
        }
    }
    report.processes = pids;
    for ns in namespaces {
        run(&["ip", "netns", "del", &ns])?;
        report.namespaces.push(ns);
    }
    crate::hostsfile::remove(name)?;
    let dir = state_dir(name);
    let state_file = dir.join("state.json");
    if state_file.exists() {
        std::fs::remove_file(&state_file).map_err(io(&state_file))?;
    }
    Ok(report)
}

/// Lab `name`'s state; [`LabError::NoSuchLab`], listing the labs up, when it has none.
pub fn state_of(name: &str) -> Result<LabState, LabError> {
    match state(name)? {
        Some(s) => Ok(s),
        None => Err(LabError::NoSuchLab {
            name: name.to_owned(),
            up: labs()?,
        }),
    }
}

/// Remove lab `name` as `lab down NAME` does: [`down`], when the lab is there;
/// [`LabError::NoSuchLab`] (listing the labs up) when it is not.
pub fn down_existing(name: &str) -> Result<DownReport, LabError> {
    check_exists(name)?;
    down(name)
}

/// The namespace of `node` in a running lab.
pub fn namespace_of(name: &str, node: &str) -> Result<String, LabError> {
    let s = state_of(name)?;
    let i = s.topology.node(node).ok_or_else(|| {
        LabError::NotFound(format!(
            "lab '{name}' has no node '{node}' (it has {})",
            s.topology
                .nodes
                .iter()
                .map(|n| n.name.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ))
    })?;
    Ok(s.topology.namespace(i))
}

#[cfg(test)]
mod tests {
    use super::*;

    const ROOT_STATUS: &str = "Name:\tdualperf\nUmask:\t0022\nState:\tR (running)\n\
        Uid:\t0\t0\t0\t0\nGid:\t0\t0\t0\t0\nCapInh:\t0000000000000000\n\
        CapPrm:\t000001ffffffffff\nCapEff:\t000001ffffffffff\nCapBnd:\t000001ffffffffff\n";

    #[test]
    fn cap_eff_is_read_from_proc_status() {
        assert_eq!(cap_eff(ROOT_STATUS), Some(0x1ff_ffff_ffff));
        assert_eq!(cap_eff("CapEff:\t0000000000001000\n"), Some(1 << 12));
        assert_eq!(cap_eff("CapPrm:\t0000000000001000\n"), None);
        assert_eq!(cap_eff("CapEff:\tnot-hex\n"), None);
    }

    #[test]
    fn only_net_admin_net_raw_and_sys_admin_together_pass() {
        assert!(privilege_problem(ROOT_STATUS).is_none());
        // Exactly the three capabilities: enough; any two of them: not.
        let eff = |hex: &str| {
            ROOT_STATUS.replace("CapEff:\t000001ffffffffff", &format!("CapEff:\t{hex}"))
        };
        assert!(privilege_problem(&eff("0000000000203000")).is_none());
        for two in ["0000000000202000", "0000000000201000", "0000000000003000"] {
            assert!(privilege_problem(&eff(two)).is_some(), "{two}");
        }
        // A user: sudo.
        let user = "Uid:\t1000\t1000\t1000\t1000\nCapEff:\t0000000000000000\n";
        assert_eq!(
            privilege_problem(user).unwrap().to_string(),
            "the lab needs root (CAP_NET_ADMIN) to create network namespaces: run it with sudo"
        );
        // Root in a container without CAP_SYS_ADMIN: sudo would not help.
        let boxed = ROOT_STATUS.replace("CapEff:\t000001ffffffffff", "CapEff:\t00000000a80425fb");
        let err = privilege_problem(&boxed).unwrap().to_string();
        assert!(
            err.contains("--cap-add NET_ADMIN --cap-add NET_RAW --cap-add SYS_ADMIN"),
            "{err}"
        );
        // A text that does not say lets the tools speak for themselves.
        assert!(privilege_problem("Name:\tx\n").is_none());
    }

    #[test]
    fn routers_lose_ipv6_and_forwarding_on_every_interface() {
        let host = node_sysctls(Kind::Host, &["to-r1"]);
        assert!(host.contains(&"net.ipv6.conf.to-r1.accept_dad=0".to_owned()));
        assert!(host.contains(&"net.ipv6.conf.default.accept_ra=0".to_owned()));
        assert!(!host
            .iter()
            .any(|s| s.contains("disable_ipv6") || s.contains("forward")));
        let router = node_sysctls(Kind::Router, &["to-sender", "to-r2"]);
        for want in [
            "net.ipv4.ip_forward=0",
            "net.ipv6.conf.all.forwarding=0",
            "net.ipv6.conf.default.disable_ipv6=1",
            "net.ipv6.conf.to-sender.disable_ipv6=1",
            "net.ipv6.conf.to-r2.disable_ipv6=1",
        ] {
            assert!(router.contains(&want.to_owned()), "{want}: {router:?}");
        }
        assert!(router.iter().all(|s| s.starts_with("net.")));
    }

    #[test]
    fn a_nat44_forwards_both_families_with_the_kernel_and_keeps_ipv6() {
        let mut want: Vec<String> = ["all", "default", "to-r1"]
            .iter()
            .flat_map(|c| {
                [
                    format!("net.ipv6.conf.{c}.accept_dad=0"),
                    format!("net.ipv6.conf.{c}.accept_ra=0"),
                ]
            })
            .collect();
        want.push("net.ipv4.ip_forward=1".into());
        want.push("net.ipv6.conf.all.forwarding=1".into());
        assert_eq!(node_sysctls(Kind::Nat44, &["to-r1"]), want);
        // A kernel router and a TAYGA NAT64 forward with the kernel as a NAT44 does.
        assert_eq!(node_sysctls(Kind::Kernel, &["to-r1"]), want);
        assert_eq!(node_sysctls(Kind::Tayga, &["to-r1"]), want);
    }

    #[test]
    fn a_jobs_lab_is_its_topologys_name_and_the_pid_within_sixteen_characters() {
        assert_eq!(job_name("two-hop", 4242), "two-hop-4242");
        assert_eq!(job_name("two-hop", 4_194_304), "two-hop-4194304");
        // Cut to fit, and never ending in a '-' before the pid's.
        assert_eq!(job_name("tcmp-12345", 4_194_304), "tcmp-123-4194304");
        assert_eq!(job_name("abcdefg-hijk", 4_194_304), "abcdefg-4194304");
        assert_eq!(job_name("dumbbell", 1), "dumbbell-1");
        assert_eq!(job_name("a", u32::MAX), "a-4294967295");
        for (base, pid) in [
            ("two-hop", 1),
            ("sixteen-chars-ab", 99_999),
            ("x-------", 4_194_304),
            ("a", u32::MAX),
            ("abcdefghijklmnop", u32::MAX),
        ] {
            let n = job_name(base, pid);
            assert!(crate::topology::valid_lab_name(&n), "{base} {pid}: {n}");
            assert!(n.ends_with(&format!("-{pid}")), "{n}");
            assert_ne!(n, base);
        }
        // Two processes, two names.
        assert_ne!(
            job_name("sixteen-chars-ab", 12),
            job_name("sixteen-chars-ab", 1)
        );
    }

    #[test]
    fn the_labs_up_are_read_from_namespaces_and_state_files() {
        let netns = "dp-two-hop.sender (id: 3)\ndp-two-hop.r1\nblue\ndp-tq-1.receiver (id: 7)\n\
                     dp-.x\ndp-NoDots\n";
        let state = ["half-built".to_owned(), "two-hop".to_owned()];
        assert_eq!(
            lab_names(netns, state.into_iter()),
            ["half-built", "tq-1", "two-hop"]
        );
        assert_eq!(lab_names("", std::iter::empty()), Vec::<String>::new());
        let err = |up: &[&str]| {
            LabError::NoSuchLab {
                name: "twohop".into(),
                up: up.iter().map(|s| s.to_string()).collect(),
            }
            .to_string()
        };
        assert_eq!(err(&[]), "no lab 'twohop' is up; no lab is up here");
        assert_eq!(
            err(&["two-hop"]),
            "no lab 'twohop' is up; the lab up here is 'two-hop'"
        );
        assert_eq!(
            err(&["a", "two-hop"]),
            "no lab 'twohop' is up; the labs up here are 'a', 'two-hop'"
        );
    }

    /// A test lab: one-router under `name`, removed on drop.
    fn one_router(name: &str) -> Topology {
        let text = std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../plans/topologies/one-router.toml"
        ))
        .unwrap()
        .replace("name = \"one-router\"", &format!("name = \"{name}\""));
        Topology::parse(&text).unwrap()
    }

    /// Whether the lab tests here may run (root, iproute2); under CI they must.
    fn privileged() -> bool {
        match preflight() {
            Ok(()) => true,
            Err(e) => {
                assert!(
                    std::env::var("CI").as_deref() != Ok("true"),
                    "under CI=true this test must run: {e}"
                );
                eprintln!("skipped: {e}");
                false
            }
        }
    }

    #[test]
    fn up_refuses_a_lab_that_is_there_and_leaves_it_as_it_was() {
        if !privileged() {
            return;
        }
        let name = format!("tex-{}", std::process::id() % 100_000);
        let t = one_router(&name);
        let _guard = Guard::new(&name);
        // A namespace of the lab's (as a crashed `up` leaves), with a process in it.
        let ns = format!("dp-{name}.sender");
        run(&["ip", "netns", "add", &ns]).unwrap();
        let mut sleeper = Command::new("ip")
            .args(["netns", "exec", &ns, "sleep", "600"])
            .spawn()
            .unwrap();
        let err = up(&t, Path::new("/bin/false"), None).unwrap_err();
        assert_eq!(
            err.to_string(),
            format!(
                "lab '{name}' already exists (namespace {ns}); dualperf leaves it as it is: \
                 `dualperf lab down {name}` removes it"
            )
        );
        assert_eq!(namespaces_of(&name).unwrap(), std::slice::from_ref(&ns));
        assert!(
            sleeper.try_wait().unwrap().is_none(),
            "its process is untouched"
        );
        assert!(!state_dir(&name).join("state.json").exists());
        // A state file alone (a lab whose namespaces are gone) is a lab there too.
        let _ = sleeper.kill();
        let _ = sleeper.wait();
        run(&["ip", "netns", "del", &ns]).unwrap();
        std::fs::create_dir_all(state_dir(&name)).unwrap();
        std::fs::write(state_dir(&name).join("state.json"), "{}").unwrap();
        let err = up(&t, Path::new("/bin/false"), None).unwrap_err();
        assert!(matches!(&err, LabError::Exists { found, .. } if found.contains("state file")));
        assert_eq!(
            std::fs::read_to_string(state_dir(&name).join("state.json")).unwrap(),
            "{}"
        );
        assert!(labs().unwrap().contains(&name));
        check_exists(&name).unwrap();
        down_existing(&name).unwrap();
        // Gone: `lab down` of it again is an error that lists the labs up, internal
        // removal stays idempotent.
        let err = down_existing(&name).unwrap_err();
        assert!(
            matches!(&err, LabError::NoSuchLab { up, .. } if !up.contains(&name)),
            "{err}"
        );
        down(&name).unwrap();
    }

    #[test]
    fn a_failing_node_setup_leaves_no_namespace_behind() {
        if let Err(e) = preflight() {
            assert!(
                std::env::var("CI").as_deref() != Ok("true"),
                "under CI=true this test must run: {e}"
            );
            eprintln!("skipped: {e}");
            return;
        }
        let name = format!("tnsf-{}", std::process::id() % 100_000);
        let text = std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../plans/topologies/one-router.toml"
        ))
        .unwrap()
        .replace("name = \"one-router\"", &format!("name = \"{name}\""));
        let t = Topology::parse(&text).unwrap();
        let _guard = Guard::new(&name);
        // `/bin/false` stands in for dualperf: every `lab node-setup` fails, after the
        // namespaces and veths exist.
        let err = up(&t, Path::new("/bin/false"), None).unwrap_err();
        assert!(
            matches!(&err, LabError::Command { command, .. } if command.contains("node-setup")),
            "{err}"
        );
        assert_eq!(namespaces_of(&name).unwrap(), Vec::<String>::new());
        assert!(!state_dir(&name).join("state.json").exists());
    }
}
