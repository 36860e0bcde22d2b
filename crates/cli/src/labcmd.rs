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
/// 2001:2::/48, static routes and neighbours, offloads off. Needs root.
///
/// `down` removes the lab's processes, namespaces (and with them the veths) and state
/// file, also after a crash; the routers' logs and final counters stay in
/// /run/dualperf/labs/LAB/. `up` on a lab that is already up rebuilds it.
#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:
  sudo dualperf lab up plans/topologies/two-hop.toml
  sudo dualperf lab exec two-hop receiver -- dualperf recv
  sudo dualperf lab exec two-hop sender -- dualperf send 198.18.4.2 --rate 1000pps
  sudo dualperf lab status two-hop
  sudo dualperf lab down two-hop
  sudo dualperf lab up plans/topologies/two-hop.toml --json   # namespaces, routers, addresses

Topology format (every key, addresses, routes): docs/topology.md. A router's QoS file:
docs/qos.md.")]
pub(crate) struct LabArgs {
    #[command(subcommand)]
    action: Action,
}

#[derive(Debug, clap::Subcommand)]
enum Action {
    /// Build the topology (removing a lab of the same name first).
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
    /// Run a command inside a node's namespace.
    Exec {
        /// The lab's name.
        name: String,
        /// The node.
        node: String,
        /// The command and its arguments.
        #[arg(last = true, required = true)]
        command: Vec<String>,
    },
}

pub(crate) fn run(args: LabArgs) -> Result<()> {
    match args.action {
        Action::Up {
            topology,
            pcap,
            json,
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
            let state = netlab::up(&t, &exe, pcap.as_deref())?;
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
            let r = match netlab::down(&name) {
                Ok(r) => r,
                Err(e @ netlab::LabError::NotFound(_)) => usage!("{e}"),
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
            let state = match netlab::state(&name) {
                Ok(s) => s,
                Err(e @ netlab::LabError::NotFound(_)) => usage!("{e}"),
                Err(e) => return Err(e.into()),
            };
            let Some(state) = state else {
                usage!("no lab '{name}' is up");
            };
            // Fresh counters: each running router rewrites its file on SIGUSR1.
            let running = |pid: u32| std::path::Path::new(&format!("/proc/{pid}")).exists();
            let asked: Vec<u32> = state
                .routers
                .iter()
                .map(|r| r.pid)
                .filter(|p| running(*p))
                .collect();
            for pid in &asked {
                let _ = std::process::Command::new("kill")
                    .args(["-USR1", &pid.to_string()])
                    .status();
            }
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
                Err(e @ netlab::LabError::NotFound(_)) => usage!("{e}"),
                Err(e) => return Err(e.into()),
            };
            let status = std::process::Command::new("ip")
                .args(["netns", "exec", &ns])
                .args(&command)
                .status()
                .context("cannot run ip netns exec")?;
            std::process::exit(status.code().unwrap_or(1));
        }
    }
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
