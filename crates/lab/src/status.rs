//! What `dualperf lab up` and `lab status` show of a lab: its nodes with their
//! namespaces and addresses, and each router's process, forwarding loop (did it
//! stall?) and per-class QoS counters, asked for afresh. The binary prints the text.

use std::fmt::Write;
use std::path::Path;
use std::time::Duration;

use router::stats::RouterStats;
use serde::{Deserialize, Serialize};

use crate::netlab::{self, LabState};

/// How long the routers asked for fresh counters get to rewrite their stats files.
const FRESH_COUNTERS_WAIT: Duration = Duration::from_millis(200);

/// `dualperf lab status --json`: the lab as `up` made it, each router with fresh counters.
#[derive(Debug, Serialize, Deserialize, schemars::JsonSchema)]
pub struct LabStatus {
    /// The topology, resolved.
    pub topology: crate::topology::Topology,
    /// Namespaces, in node order.
    pub namespaces: Vec<String>,
    /// Each router, as [`routers`] found it.
    pub routers: Vec<RouterStatus>,
}

/// A lab router as `lab status` shows it: its process and its stats file.
#[derive(Debug, Serialize, Deserialize, schemars::JsonSchema)]
pub struct RouterStatus {
    /// The router's node.
    pub node: String,
    /// Its process id.
    pub pid: u32,
    /// Whether that process is still there.
    pub running: bool,
    /// Its stats file; `None` when it has none yet or it does not read.
    pub stats: Option<RouterStats>,
}

/// Each router of `state`, with fresh counters: each running router rewrites its stats
/// file on SIGUSR1, and gets 200 ms to do so. A router that ended since is not running.
pub fn routers(state: &LabState) -> Vec<RouterStatus> {
    let running = |pid: u32| Path::new(&format!("/proc/{pid}")).exists();
    let asked: Vec<u32> = state
        .routers
        .iter()
        .map(|r| r.pid)
        .filter(|p| running(*p))
        .collect();
    // A router that ended since is shown as not running below.
    let _ = netlab::signal("USR1", &asked);
    if !asked.is_empty() {
        std::thread::sleep(FRESH_COUNTERS_WAIT);
    }
    state
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
        .collect()
}

/// One line per node: its name, kind, namespace and each interface's addresses.
pub fn nodes_text(state: &LabState) -> String {
    let t = &state.topology;
    let mut out = String::new();
    for (i, n) in t.nodes.iter().enumerate() {
        let addrs: Vec<String> = t
            .ends_of(i)
            .map(|(_, mine, _)| format!("{} {} {}", mine.ifname, mine.ipv4, mine.ipv6))
            .collect();
        let _ = writeln!(
            out,
            "{:<10} {:<7} {}  {}",
            n.name,
            format!("{:?}", n.kind).to_lowercase(),
            t.namespace(i),
            addrs.join("; ")
        );
    }
    out
}

/// One line per TAYGA of `state` (its node, process, running or not, and configuration
/// file); nothing when the lab has none.
pub fn tayga_text(state: &LabState) -> String {
    state
        .tayga
        .iter()
        .map(|p| {
            let running = Path::new(&format!("/proc/{}", p.pid)).exists();
            format!(
                "tayga {} pid {} {} ({})\n",
                p.node,
                p.pid,
                if running { "running" } else { "NOT RUNNING" },
                p.config.display()
            )
        })
        .collect()
}

/// A router's line (its process, running or not), then, when its stats file reads, its
/// forwarding loop and its service policies' classes.
pub fn router_text(r: &RouterStatus) -> String {
    let mut out = format!(
        "router {} pid {} {}\n",
        r.node,
        r.pid,
        if r.running { "running" } else { "NOT RUNNING" }
    );
    if let Some(stats) = &r.stats {
        loop_text(&mut out, stats);
        qos_text(&mut out, stats);
    }
    out
}

/// A router's forwarding loop: did it stall (see `loop` in docs/output.md)?
fn loop_text(out: &mut String, stats: &RouterStats) {
    let l = &stats.looped;
    let sched = match (l.involuntary_switches, l.runqueue_wait_ns) {
        (Some(k), Some(w)) => format!(
            "; other tasks took its CPU {k} times, {:.1} ms in all",
            w as f64 / 1e6
        ),
        _ => String::new(),
    };
    let _ = writeln!(
        out,
        "  loop: longest turn {:.3} ms, longest gap {:.3} ms, turns over 1 ms {}, gaps over 1 ms {}{sched}",
        l.max_turn_ns as f64 / 1e6,
        l.max_gap_ns as f64 / 1e6,
        l.turns_over_1ms,
        l.gaps_over_1ms,
    );
}

/// Per-class counters of a router's service policies, one line per class.
fn qos_text(out: &mut String, stats: &RouterStats) {
    for i in &stats.interfaces {
        let Some(qos) = &i.qos else {
            continue;
        };
        let _ = writeln!(out, "  {} service-policy output {}", i.name, qos.policy);
        for c in &qos.classes {
            let d = &c.dropped;
            let ms = |v: Option<u64>| v.map_or("-".into(), |x| format!("{:.2}", x as f64 / 1e6));
            let _ = writeln!(
                out,
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
    use crate::topology::Topology;

    fn one_router() -> LabState {
        let topology =
            Topology::parse(include_str!("../../../plans/topologies/one-router.toml")).unwrap();
        LabState {
            namespaces: (0..topology.nodes.len())
                .map(|i| topology.namespace(i))
                .collect(),
            topology,
            routers: Vec::new(),
            tayga: Vec::new(),
        }
    }

    #[test]
    fn a_tayga_is_a_line_with_its_process_and_configuration() {
        let mut state = one_router();
        assert_eq!(tayga_text(&state), "");
        state.tayga.push(crate::tayga::TaygaProc {
            node: "r1".into(),
            pid: u32::MAX,
            config: "/run/dualperf/labs/x/r1-tayga.conf".into(),
            log: "/run/dualperf/labs/x/r1-tayga.log".into(),
        });
        assert_eq!(
            tayga_text(&state),
            "tayga r1 pid 4294967295 NOT RUNNING (/run/dualperf/labs/x/r1-tayga.conf)\n"
        );
    }

    #[test]
    fn each_node_is_a_line_with_its_namespace_and_addresses() {
        assert_eq!(
            nodes_text(&one_router()),
            "sender     host    dp-one-router.sender  to-r1 198.18.1.1 2001:2:0:1::1\n\
             r1         router  dp-one-router.r1  to-sender 198.18.1.2 2001:2:0:1::2; \
             to-receiver 198.18.2.1 2001:2:0:2::1\n\
             receiver   host    dp-one-router.receiver  to-r1 198.18.2.2 2001:2:0:2::2\n"
        );
    }

    #[test]
    fn a_router_shows_its_loop_and_each_class_of_its_policies() {
        // A router's final stats with a WRED policy (router/testdata).
        let stats: RouterStats =
            serde_json::from_str(include_str!("../../router/testdata/r2.stats.json")).unwrap();
        let r = RouterStatus {
            node: "r2".into(),
            pid: 4242,
            running: true,
            stats: Some(stats),
        };
        let text = router_text(&r);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "router r2 pid 4242 running");
        assert_eq!(
            lines[1],
            "  loop: longest turn 1.304 ms, longest gap 1.307 ms, turns over 1 ms 1, gaps \
             over 1 ms 1; other tasks took its CPU 143238 times, 1717.2 ms in all"
        );
        assert_eq!(lines[2], "  to-r1 service-policy output bouras");
        // A class that saw no frame has no queue delay: "-".
        assert_eq!(
            &lines[3..],
            [
                "    foreground       offered         0  sent         0  queued    0  dropped: \
                 police 0 priority-policer 0 wred 0+0 queue-limit 0  queue delay p50 - p99 - ms",
                "    class-default    offered        22  sent        22  queued    0  dropped: \
                 police 0 priority-policer 0 wred 0+0 queue-limit 0  queue delay p50 0.00 p99 \
                 0.00 ms",
            ]
        );
        let gone = RouterStatus {
            running: false,
            stats: None,
            ..r
        };
        assert_eq!(router_text(&gone), "router r2 pid 4242 NOT RUNNING\n");
    }
}
