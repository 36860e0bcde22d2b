//! `dualperf lab`: a topology of hosts and `dualperf route` routers in network
//! namespaces. The work is `lab::netlab`'s; this is the command line.

use std::path::PathBuf;

use anyhow::{Context, Result};
use lab::netlab;
use lab::topology::Topology;
use router::stats::RouterStats;

use crate::usage;

/// Build a dual-stack testbed in network namespaces: hosts, routers running
/// `dualperf route` with emulated links, veth pairs, addresses from 198.18.0.0/15 and
/// 2001:2::/48, static routes and neighbours, offloads off. Needs Linux, root
/// (CAP_NET_ADMIN) and iproute2's ip (apt-get install iproute2), nothing else: `up`
/// checks them before it builds anything.
///
/// `down` removes the lab's processes, namespaces (and with them the veths) and state
/// file, also after a crash; the routers' logs and final counters stay in
/// /run/dualperf/labs/LAB/. `up` never touches a lab that is there: it refuses, and
/// `--replace` removes it first. `down`, `status` and `exec` of a lab that is not up
/// fail and list the labs that are.
#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:
  sudo dualperf lab up plans/topologies/two-hop.toml
  sudo dualperf lab exec two-hop receiver -- dualperf recv
  sudo dualperf lab exec two-hop sender -- dualperf send 198.18.4.2 --rate 1000pps
  sudo dualperf lab status two-hop
  sudo dualperf lab down two-hop
  sudo dualperf lab up plans/topologies/two-hop.toml --replace  # remove the lab up as two-hop, rebuild
  sudo dualperf lab up plans/topologies/two-hop.toml --json   # namespaces, routers, addresses

Topology format (every key, addresses, routes): docs/topology.md. A router's QoS file:
docs/qos.md.")]
pub(crate) struct LabArgs {
    #[command(subcommand)]
    action: Action,
}

#[derive(Debug, clap::Subcommand)]
enum Action {
    /// Build the topology; a lab of the same name already up is left as it is, and an
    /// error (`--replace` removes it first).
    Up {
        /// The topology (TOML, docs/topology.md), e.g. plans/topologies/two-hop.toml or
        /// one-router.toml. A router node may take `qos = "FILE"` (its service policies,
        /// docs/qos.md) and `cpu = N` (pin its forwarding thread to CPU N).
        topology: PathBuf,
        /// Capture every router interface into DIR/ROUTER/IFACE.pcap.
        #[arg(long, value_name = "DIR")]
        pcap: Option<PathBuf>,
        /// Print the lab as JSON instead of the table of nodes: its topology, namespaces
        /// and routers (process id, configuration, counters and log files).
        #[arg(long)]
        json: bool,
        /// Remove a lab of the topology's name first, if one is up (its processes,
        /// namespaces and state file, as `lab down` does), then build it afresh.
        #[arg(long)]
        replace: bool,
    },
    /// Remove the lab: its processes, namespaces, veths and state file.
    Down {
        /// The lab's name.
        name: String,
    },
    /// The lab's nodes, addresses and routers' counters (JSON with --json).
    Status {
        /// The lab's name.
        name: String,
        /// JSON.
        #[arg(long)]
        json: bool,
    },
    /// Run a command inside a node's namespace, and exit with its status. SIGINT,
    /// SIGTERM and SIGHUP sent to `lab exec` go on to the command, and `lab exec` waits
    /// for it; killed outright (SIGKILL), `lab exec` takes the command with it.
    Exec {
        /// The lab's name.
        name: String,
        /// The node.
        node: String,
        /// The command and its arguments.
        #[arg(last = true, required = true)]
        command: Vec<String>,
    },
    /// Set up the kernel of the network namespace this runs in: `lab up` runs it in each
    /// node's (`ip netns exec dp-LAB.NODE dualperf lab node-setup …`), so the lab needs
    /// neither sysctl nor ethtool.
    #[command(hide = true)]
    NodeSetup {
        /// A sysctl to write, as sysctl(8) names it (`net.ipv4.ip_forward=0`); only keys
        /// under `net.`, which belong to the namespace.
        #[arg(long = "sysctl", value_name = "KEY=VALUE")]
        sysctls: Vec<String>,
        /// An interface whose TSO, GSO, GRO and checksum offloads go off.
        #[arg(long = "offloads-off", value_name = "IFACE")]
        offloads_off: Vec<String>,
    },
}

pub(crate) fn run(args: LabArgs) -> Result<()> {
    match args.action {
        Action::Up {
            topology,
            pcap,
            json,
            replace,
        } => {
            let text = crate::args::read_input(&topology, "the topology")?;
            let t = match Topology::parse_at(&text, topology.parent()) {
                Ok(t) => t,
                Err(e) => usage!(
                    "{}{}: {}",
                    topology.display(),
                    e.line.map_or(String::new(), |l| format!(":{l}")),
                    e.message
                ),
            };
            let exe = std::env::current_exe().context("cannot find the dualperf binary")?;
            if replace {
                let r = netlab::down(&t.name)?;
                if !r.namespaces.is_empty() {
                    crate::out::note!(
                        "dualperf lab: removed the lab up as '{}' ({} namespaces, {} processes stopped)",
                        t.name,
                        r.namespaces.len(),
                        r.processes.len()
                    );
                }
            }
            let state = match netlab::up(&t, &exe, pcap.as_deref()) {
                Ok(s) => s,
                Err(e @ netlab::LabError::Exists { .. }) => anyhow::bail!(
                    "{e}, and `dualperf lab up {} --replace` rebuilds it",
                    topology.display()
                ),
                Err(e) => return Err(e.into()),
            };
            if json {
                crate::out::print_json(&serde_json::json!({
                    "topology": state.topology,
                    "namespaces": state.namespaces,
                    "routers": state.routers,
                }))?;
            } else {
                print_nodes(&state);
            }
            crate::out::note!(
                "dualperf lab: '{}' is up ({} namespaces, {} routers); `dualperf lab down {}` removes it",
                t.name,
                state.namespaces.len(),
                state.routers.len(),
                t.name
            );
            Ok(())
        }
        Action::Down { name } => {
            let r = match netlab::down_existing(&name) {
                Ok(r) => r,
                Err(e @ (netlab::LabError::NotFound(_) | netlab::LabError::NoSuchLab { .. })) => {
                    usage!("{e}")
                }
                Err(e) => return Err(e.into()),
            };
            crate::out::note!(
                "dualperf lab: '{name}' is down ({} namespaces removed, {} processes stopped)",
                r.namespaces.len(),
                r.processes.len()
            );
            Ok(())
        }
        Action::Status { name, json } => {
            let state = match netlab::state_of(&name) {
                Ok(s) => s,
                Err(e @ (netlab::LabError::NotFound(_) | netlab::LabError::NoSuchLab { .. })) => {
                    usage!("{e}")
                }
                Err(e) => return Err(e.into()),
            };
            // Fresh counters: each running router rewrites its file on SIGUSR1.
            let running = |pid: u32| std::path::Path::new(&format!("/proc/{pid}")).exists();
            let asked: Vec<u32> = state
                .routers
                .iter()
                .map(|r| r.pid)
                .filter(|p| running(*p))
                .collect();
            // A router that ended since is shown as not running below.
            let _ = netlab::signal("USR1", &asked);
            if !asked.is_empty() {
                std::thread::sleep(std::time::Duration::from_millis(200));
            }
            let routers: Vec<RouterStatus> = state
                .routers
                .iter()
                .map(|r| RouterStatus {
                    node: r.node.clone(),
                    pid: r.pid,
                    running: running(r.pid),
                    stats: std::fs::read(&r.stats)
                        .ok()
                        .and_then(|b| serde_json::from_slice(&b).ok()),
                })
                .collect();
            if json {
                return crate::out::print_json(&serde_json::json!({
                    "topology": state.topology,
                    "namespaces": state.namespaces,
                    "routers": routers,
                }));
            }
            print_nodes(&state);
            for r in routers {
                println!(
                    "router {} pid {} {}",
                    r.node,
                    r.pid,
                    if r.running { "running" } else { "NOT RUNNING" }
                );
                if let Some(stats) = &r.stats {
                    print_loop(stats);
                    print_qos(stats);
                }
            }
            Ok(())
        }
        Action::Exec {
            name,
            node,
            command,
        } => {
            let ns = match netlab::namespace_of(&name, &node) {
                Ok(ns) => ns,
                Err(e @ (netlab::LabError::NotFound(_) | netlab::LabError::NoSuchLab { .. })) => {
                    usage!("{e}")
                }
                Err(e) => return Err(e.into()),
            };
            let code = exec(&ns, &command)?;
            std::process::exit(code);
        }
        Action::NodeSetup {
            sysctls,
            offloads_off,
        } => node_setup(&sysctls, &offloads_off),
    }
}

/// `lab exec`: run `command` in namespace `ns` (`ip netns exec`, which becomes the
/// command) and give its exit status: its code, or 128 + the signal that ended it, as a
/// shell gives it. SIGINT, SIGTERM and SIGHUP sent to this process are passed on to the
/// command and this process waits for it; those a terminal sends (Ctrl-C, a hang-up)
/// are not, as sudo does: they reach the command, in this process's group, already, and
/// a dualperf command takes a second one as "stop at once". A signal this process
/// ignores (`nohup`) is left to the command to ignore too. Killed outright, this
/// process takes the command with it (SIGKILL on its parent's death).
fn exec(ns: &str, command: &[String]) -> Result<i32> {
    use signal_hook::consts::{SIGHUP, SIGINT, SIGKILL, SIGTERM};
    use signal_hook::iterator::exfiltrator::WithOrigin;
    use signal_hook::iterator::SignalsInfo;
    use signal_hook::low_level::siginfo::Cause;
    use std::os::unix::process::ExitStatusExt;
    use std::sync::{Arc, Mutex};
    // Taken before the command starts: one that comes at once is passed on too. One
    // this process was started ignoring (`nohup` ignores SIGHUP) stays ignored, and the
    // command inherits that.
    let taken: Vec<i32> = [SIGINT, SIGTERM, SIGHUP]
        .into_iter()
        .filter(|s| !netio::process::ignored(*s).unwrap_or(false))
        .collect();
    let mut signals =
        SignalsInfo::<WithOrigin>::new(taken).context("cannot take SIGINT, SIGTERM and SIGHUP")?;
    let mut cmd = std::process::Command::new("ip");
    cmd.args(["netns", "exec", ns]).args(command);
    netio::process::die_with_parent(&mut cmd, SIGKILL);
    let mut child = cmd.spawn().context("cannot run ip netns exec")?;
    let pid = child.id();
    // Set once the command has ended and before it is reaped, so no signal goes to a
    // process that took its number since.
    let ended = Arc::new(Mutex::new(false));
    let forwarder = ended.clone();
    std::thread::spawn(move || {
        for origin in signals.forever() {
            if origin.cause == Cause::Kernel {
                continue;
            }
            let ended = forwarder.lock().unwrap_or_else(|e| e.into_inner());
            if !*ended {
                // Only fails when it has just ended.
                let _ = netio::process::signal(pid, origin.signal);
            }
        }
    });
    netio::process::wait_exited(pid).context("cannot wait for the command")?;
    *ended.lock().unwrap_or_else(|e| e.into_inner()) = true;
    let status = child.wait().context("cannot wait for the command")?;
    Ok(status
        .code()
        .or(status.signal().map(|s| 128 + s))
        .unwrap_or(1))
}

/// `lab node-setup`: write `sysctls` under /proc/sys, then turn the offloads of
/// `ifaces` off, in the network namespace this process runs in.
fn node_setup(sysctls: &[String], ifaces: &[String]) -> Result<()> {
    // Every argument is checked before anything is written.
    let mut writes = Vec::with_capacity(sysctls.len());
    for s in sysctls {
        match sysctl_path(s) {
            Ok(w) => writes.push(w),
            Err(e) => usage!("--sysctl {s}: {e}"),
        }
    }
    // Only inside a lab node's namespace: run anywhere else (the host's own namespace),
    // a router's settings (ip_forward=0) would cut the host off its networks.
    if !in_lab_namespace() {
        anyhow::bail!(
            "lab node-setup runs only inside a lab node's namespace (ip netns exec \
             dp-LAB.NODE …), and this process is in no such namespace"
        );
    }
    for (path, value, key) in &writes {
        std::fs::write(path, value)
            .with_context(|| format!("cannot set {key} = {value} ({})", path.display()))?;
    }
    for ifname in ifaces {
        netio::ethtool::disable_offloads(ifname).context("cannot turn offloads off")?;
    }
    Ok(())
}

/// Whether this process's network namespace is one `ip netns` keeps under a lab's name
/// (`dp-…`): the same nsfs inode as its file under /var/run/netns.
fn in_lab_namespace() -> bool {
    use std::os::unix::fs::MetadataExt;
    let Ok(mine) = std::fs::metadata("/proc/self/ns/net") else {
        return false;
    };
    let Ok(entries) = std::fs::read_dir(netio::netns::NETNS_RUN_DIR) else {
        return false;
    };
    entries.flatten().any(|e| {
        e.file_name().to_string_lossy().starts_with("dp-")
            && std::fs::metadata(e.path())
                .is_ok_and(|m| (m.dev(), m.ino()) == (mine.dev(), mine.ino()))
    })
}

/// `KEY=VALUE` as sysctl(8) takes it → the file under /proc/sys, the value, the key. A
/// key with a `/` is a path (so names with dots work, as in sysctl(8)); otherwise dots
/// separate its parts. Only keys under `net` are taken: they belong to the network
/// namespace, while any other would change the whole host.
fn sysctl_path(arg: &str) -> Result<(PathBuf, String, String), String> {
    let (key, value) = arg
        .split_once('=')
        .ok_or_else(|| "not KEY=VALUE".to_owned())?;
    let (key, value) = (key.trim(), value.trim());
    let parts: Vec<&str> = if key.contains('/') {
        key.split('/').collect()
    } else {
        key.split('.').collect()
    };
    if parts.first() != Some(&"net") || parts.len() < 2 {
        return Err(format!("{key:?} is not a key under net"));
    }
    if parts
        .iter()
        .any(|p| p.is_empty() || *p == "." || *p == "..")
    {
        return Err(format!("{key:?} is not a sysctl key"));
    }
    if value.is_empty() || value.contains('\n') {
        return Err("the value is empty or holds a newline".to_owned());
    }
    let path = parts
        .iter()
        .fold(PathBuf::from("/proc/sys"), |p, part| p.join(part));
    Ok((path, value.to_owned(), key.to_owned()))
}

fn print_nodes(state: &netlab::LabState) {
    let t = &state.topology;
    for (i, n) in t.nodes.iter().enumerate() {
        let addrs: Vec<String> = t
            .ends_of(i)
            .map(|(_, mine, _)| format!("{} {} {}", mine.ifname, mine.ipv4, mine.ipv6))
            .collect();
        println!(
            "{:<10} {:<7} {}  {}",
            n.name,
            format!("{:?}", n.kind).to_lowercase(),
            t.namespace(i),
            addrs.join("; ")
        );
    }
}

/// A lab router as `lab status` shows it: its process and its stats file.
#[derive(serde::Serialize)]
struct RouterStatus {
    node: String,
    pid: u32,
    running: bool,
    /// Its stats file; `None` when it has none yet or it does not read.
    stats: Option<RouterStats>,
}

/// A router's forwarding loop: did it stall (see `loop` in docs/output.md)?
fn print_loop(stats: &RouterStats) {
    let l = &stats.looped;
    let sched = match (l.involuntary_switches, l.runqueue_wait_ns) {
        (Some(k), Some(w)) => format!(
            "; other tasks took its CPU {k} times, {:.1} ms in all",
            w as f64 / 1e6
        ),
        _ => String::new(),
    };
    println!(
        "  loop: longest turn {:.3} ms, longest gap {:.3} ms, turns over 1 ms {}, gaps over 1 ms {}{sched}",
        l.max_turn_ns as f64 / 1e6,
        l.max_gap_ns as f64 / 1e6,
        l.turns_over_1ms,
        l.gaps_over_1ms,
    );
}

/// Per-class counters of a router's service policies, one line per class.
fn print_qos(stats: &RouterStats) {
    for i in &stats.interfaces {
        let Some(qos) = &i.qos else {
            continue;
        };
        println!("  {} service-policy output {}", i.name, qos.policy);
        for c in &qos.classes {
            let d = &c.dropped;
            let ms = |v: Option<u64>| v.map_or("-".into(), |x| format!("{:.2}", x as f64 / 1e6));
            println!(
                "    {:<16} offered {:>9}  sent {:>9}  queued {:>4}  dropped: police {} priority-policer {} wred {}+{} queue-limit {}  queue delay p50 {} p99 {} ms",
                c.name,
                c.offered_packets,
                c.sent_packets,
                c.queued_packets,
                d.police,
                d.priority_policer,
                d.wred_early,
                d.wred_forced,
                d.queue_limit,
                ms(c.queue_delay.p50_ns),
                ms(c.queue_delay.p99_ns),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sysctl_keys_become_paths_under_proc_sys_net() {
        let (path, value, key) = sysctl_path("net.ipv6.conf.to-r1.accept_dad=0").unwrap();
        assert_eq!(
            path,
            PathBuf::from("/proc/sys/net/ipv6/conf/to-r1/accept_dad")
        );
        assert_eq!(
            (value.as_str(), key.as_str()),
            ("0", "net.ipv6.conf.to-r1.accept_dad")
        );
        // sysctl(8): a key with a slash is a path, so an interface name may hold dots.
        let (path, ..) = sysctl_path("net/ipv6/conf/eth0.7/disable_ipv6 = 1").unwrap();
        assert_eq!(
            path,
            PathBuf::from("/proc/sys/net/ipv6/conf/eth0.7/disable_ipv6")
        );
    }

    #[test]
    fn sysctls_outside_net_or_climbing_out_are_refused() {
        for bad in [
            "kernel.panic=1",
            "vm/swappiness=1",
            "net=1",
            "net/../kernel/panic=1",
            "net..ipv4.ip_forward=0",
            "/net/ipv4/ip_forward=0",
            "net.ipv4.ip_forward",
            "net.ipv4.ip_forward=",
        ] {
            assert!(sysctl_path(bad).is_err(), "{bad}");
        }
    }
}
