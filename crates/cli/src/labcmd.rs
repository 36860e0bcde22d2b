//! `dualperf lab`: a topology of hosts and `dualperf route` routers in network
//! namespaces. The work is `lab::netlab`'s; this is the command line.

use std::path::PathBuf;

use anyhow::{Context, Result};
use lab::netlab;
use lab::topology::Topology;

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
                // Keys in name order, as the document has always had them.
                crate::out::print_json(&crate::out::sorted_json(&state)?)?;
            } else {
                print!("{}", lab::status::nodes_text(&state));
            }
            let tayga = match state.tayga.len() {
                0 => String::new(),
                n => format!(", {n} tayga"),
            };
            crate::out::note!(
                "dualperf lab: '{}' is up ({} namespaces, {} routers{tayga}); `dualperf lab down {}` removes it",
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
            let routers = lab::status::routers(&state);
            if json {
                let doc = lab::status::LabStatus {
                    topology: state.topology,
                    namespaces: state.namespaces,
                    routers,
                };
                // Keys in name order, as the document has always had them.
                return crate::out::print_json(&crate::out::sorted_json(&doc)?);
            }
            print!("{}", lab::status::nodes_text(&state));
            print!("{}", lab::status::tayga_text(&state));
            for r in &routers {
                print!("{}", lab::status::router_text(r));
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
        match lab::nodesetup::sysctl_write(s) {
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
    for w in &writes {
        std::fs::write(&w.path, &w.value).with_context(|| {
            format!("cannot set {} = {} ({})", w.key, w.value, w.path.display())
        })?;
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
