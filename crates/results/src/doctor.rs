//! What `dualperf doctor --json` prints, and what `dualperf run` keeps in a run directory
//! as `doctor.json`: this host checked for what measurements depend on (its clocks and
//! timers, CPU frequency and idle states, steal time, socket buffer limits, clock
//! synchronisation, privileges, namespaces, packet sockets, tools, cores), each check
//! with a verdict, what was found, why it matters and how to fix it. docs/doctor.md
//! lists every check, its thresholds and its source.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Version of [`DoctorDoc`].
pub const DOCTOR_FORMAT_VERSION: u32 = 1;

/// `dualperf doctor --json`: every check of this host, and the worst verdict.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct DoctorDoc {
    /// [`DOCTOR_FORMAT_VERSION`].
    pub format_version: u32,
    /// `dualperf` and its version.
    pub tool: String,
    /// The wall clock when the checks ran, ns since the Unix epoch.
    pub checked_unix_ns: u64,
    /// The worst verdict of [`Self::checks`].
    pub status: Status,
    /// Every check, in a fixed order (docs/doctor.md).
    pub checks: Vec<Check>,
    /// The figures the checks judged, for programs.
    pub figures: Figures,
}

/// A verdict, ordered from best to worst.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    /// Nothing to do.
    Ok,
    /// Measurements run, but some figures are less exact than they could be, or a
    /// feature (the lab) needs something first.
    Warn,
    /// Measurements this check is about are wrong or impossible on this host.
    Fail,
}

impl Status {
    /// `ok`, `warn` or `fail`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Ok => "ok",
            Self::Warn => "warn",
            Self::Fail => "fail",
        }
    }
}

impl std::fmt::Display for Status {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.pad(self.as_str())
    }
}

/// Which check.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum CheckId {
    /// The kernel's clocksource: whether reading the clock stays in the vDSO.
    Clocksource,
    /// Timer resolution and how late sleeps wake.
    Timer,
    /// The thread's timer slack, and whether dualperf can lower it.
    TimerSlack,
    /// The CPU frequency scaling governor.
    CpuGovernor,
    /// Deep CPU idle states and their exit latency.
    CpuIdle,
    /// CPU time the hypervisor gave to others (steal).
    Steal,
    /// The kernel's limits on socket buffers against what dualperf asks for.
    SocketBuffers,
    /// Clock synchronisation (adjtimex, chrony).
    ClockSync,
    /// `CAP_NET_ADMIN` and network namespaces, for the lab.
    Namespaces,
    /// Packet sockets (`AF_PACKET`) and `CAP_NET_RAW`, for the lab's router.
    AfPacket,
    /// The programs the lab runs.
    Tools,
    /// CPUs this process may run on.
    Cores,
}

impl CheckId {
    /// Its name in the document: `clocksource`, `timer-slack`, ….
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Clocksource => "clocksource",
            Self::Timer => "timer",
            Self::TimerSlack => "timer-slack",
            Self::CpuGovernor => "cpu-governor",
            Self::CpuIdle => "cpu-idle",
            Self::Steal => "steal",
            Self::SocketBuffers => "socket-buffers",
            Self::ClockSync => "clock-sync",
            Self::Namespaces => "namespaces",
            Self::AfPacket => "af-packet",
            Self::Tools => "tools",
            Self::Cores => "cores",
        }
    }
}

impl std::fmt::Display for CheckId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.pad(self.as_str())
    }
}

/// One check of the host.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Check {
    /// Which.
    pub id: CheckId,
    /// What it checks, in a few words.
    pub title: String,
    /// The verdict.
    pub status: Status,
    /// What was found, with its figures and their units.
    pub found: String,
    /// Why it matters to a measurement.
    pub why: String,
    /// How to fix it (a command where there is one); `None` when there is nothing to do.
    pub fix: Option<String>,
}

impl Check {
    /// One line: `warn steal: 2.5 % of CPU time stolen over 0.25 s …`.
    pub fn line(&self) -> String {
        format!("{} {}: {}", self.status, self.id, self.found)
    }
}

impl DoctorDoc {
    /// The checks that are not ok, in order.
    pub fn problems(&self) -> impl Iterator<Item = &Check> {
        self.checks.iter().filter(|c| c.status != Status::Ok)
    }

    /// The checks that are not ok and bear on a measurement in `scope`, in order: a
    /// loopback comparison is not told that the lab would need root, nor that the clock
    /// is not synchronised for one-way delays across hosts.
    pub fn problems_for(&self, scope: Scope) -> impl Iterator<Item = &Check> {
        self.problems().filter(move |c| c.id.bears_on(scope))
    }
}

/// Where a measurement runs, which decides the checks that bear on it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// On this host's loopback: one clock, no namespaces.
    Loopback,
    /// Through the namespace lab on this host: one kernel clock; namespaces, packet
    /// sockets and iproute2 needed.
    Lab,
    /// Between hosts (`dualperf agent`s): their clocks' synchronisation bears on one-way
    /// delays.
    Hosts,
}

impl Scope {
    /// The scope of a plan's or a comparison's target: `hosts`, `lab:…`, or anything
    /// else (`loopback`) on this host's loopback.
    pub fn of_target(target: &str) -> Self {
        if target == "hosts" {
            Self::Hosts
        } else if target.starts_with("lab:") {
            Self::Lab
        } else {
            Self::Loopback
        }
    }
}

impl CheckId {
    /// Whether this check bears on a measurement in `scope`. The host's own timing
    /// (clocks, timers, CPUs, steal, buffers) bears on every measurement; clock
    /// synchronisation only between hosts (one host has one clock); the lab's needs
    /// (namespaces, packet sockets, iproute2) only in the lab.
    pub fn bears_on(self, scope: Scope) -> bool {
        match self {
            Self::ClockSync => scope == Scope::Hosts,
            Self::Namespaces | Self::AfPacket | Self::Tools => scope == Scope::Lab,
            _ => true,
        }
    }
}

/// The worst verdict of `checks` ([`Status::Ok`] for none).
pub fn worst<'a>(checks: impl IntoIterator<Item = &'a Check>) -> Status {
    checks
        .into_iter()
        .map(|c| c.status)
        .max()
        .unwrap_or(Status::Ok)
}

/// The figures the checks judged; `None` where the host does not expose one.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Figures {
    /// The current clocksource (`/sys/devices/system/clocksource/clocksource0/`).
    pub clocksource: Option<String>,
    /// The cost of one `CLOCK_MONOTONIC` read, ns (the mean of many, as `dualperf clock`).
    pub clock_read_ns: f64,
    /// `clock_getres(CLOCK_MONOTONIC)`, ns.
    pub timer_resolution_ns: u64,
    /// The length of each sleep measured, ns.
    pub sleep_wait_ns: u64,
    /// How many sleeps were measured.
    pub sleep_samples: u32,
    /// How late a sleep woke, median, ns (timer slack lowered to 1 ns, as `send` does).
    pub sleep_overshoot_p50_ns: u64,
    /// How late a sleep woke, 99th percentile (nearest rank), ns.
    pub sleep_overshoot_p99_ns: u64,
    /// The process's timer slack as inherited (`/proc/self/timerslack_ns`), ns.
    pub timer_slack_ns: Option<u64>,
    /// The CPUs' frequency scaling governors, each once, sorted; empty when not exposed.
    pub governors: Vec<String>,
    /// The cpuidle driver (`/sys/devices/system/cpu/cpuidle/current_driver`).
    pub idle_driver: Option<String>,
    /// The largest exit latency of an enabled idle state on any CPU, ns.
    pub idle_exit_latency_max_ns: Option<u64>,
    /// The share of CPU time stolen during the sample, %.
    pub steal_pct: Option<f64>,
    /// How long steal was sampled, ns.
    pub steal_sample_ns: u64,
    /// The share of CPU time stolen since boot, %.
    pub steal_since_boot_pct: Option<f64>,
    /// `net.core.rmem_max`, bytes.
    pub rmem_max_bytes: Option<u64>,
    /// `net.core.wmem_max`, bytes.
    pub wmem_max_bytes: Option<u64>,
    /// `net.ipv4.tcp_rmem`'s maximum (its third field), bytes.
    pub tcp_rmem_max_bytes: Option<u64>,
    /// `net.ipv4.tcp_wmem`'s maximum (its third field), bytes.
    pub tcp_wmem_max_bytes: Option<u64>,
    /// The kernel's clock is synchronised (`adjtimex`).
    pub clock_synchronised: Option<bool>,
    /// The process has `CAP_NET_ADMIN` (`CapEff` bit 12).
    pub cap_net_admin: Option<bool>,
    /// The process has `CAP_NET_RAW` (`CapEff` bit 13).
    pub cap_net_raw: Option<bool>,
    /// CPUs online (`/sys/devices/system/cpu/online`).
    pub cpus_online: Option<u32>,
    /// CPUs this process may run on (`sched_getaffinity`).
    pub cpus_allowed: Option<u32>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(id: CheckId, status: Status) -> Check {
        Check {
            id,
            title: "t".into(),
            status,
            found: "f".into(),
            why: "w".into(),
            fix: None,
        }
    }

    #[test]
    fn the_worst_verdict_wins_and_problems_are_the_rest() {
        assert_eq!(worst(&[]), Status::Ok);
        let checks = vec![
            check(CheckId::Clocksource, Status::Ok),
            check(CheckId::Steal, Status::Warn),
            check(CheckId::Tools, Status::Ok),
        ];
        assert_eq!(worst(&checks), Status::Warn);
        let mut more = checks.clone();
        more.push(check(CheckId::Cores, Status::Fail));
        assert_eq!(worst(&more), Status::Fail);
        assert!(Status::Ok < Status::Warn && Status::Warn < Status::Fail);
        let doc = DoctorDoc {
            format_version: DOCTOR_FORMAT_VERSION,
            tool: "dualperf 0".into(),
            checked_unix_ns: 1,
            status: worst(&more),
            checks: more,
            figures: Figures {
                clocksource: None,
                clock_read_ns: 20.0,
                timer_resolution_ns: 1,
                sleep_wait_ns: 1_000_000,
                sleep_samples: 10,
                sleep_overshoot_p50_ns: 1,
                sleep_overshoot_p99_ns: 2,
                timer_slack_ns: None,
                governors: Vec::new(),
                idle_driver: None,
                idle_exit_latency_max_ns: None,
                steal_pct: None,
                steal_sample_ns: 0,
                steal_since_boot_pct: None,
                rmem_max_bytes: None,
                wmem_max_bytes: None,
                tcp_rmem_max_bytes: None,
                tcp_wmem_max_bytes: None,
                clock_synchronised: None,
                cap_net_admin: None,
                cap_net_raw: None,
                cpus_online: None,
                cpus_allowed: None,
            },
        };
        let ids: Vec<CheckId> = doc.problems().map(|c| c.id).collect();
        assert_eq!(ids, [CheckId::Steal, CheckId::Cores]);
        // What bears on where the measurement runs.
        let mut scoped = doc.clone();
        scoped.checks.extend([
            check(CheckId::ClockSync, Status::Warn),
            check(CheckId::Namespaces, Status::Warn),
        ]);
        let for_scope =
            |scope| -> Vec<CheckId> { scoped.problems_for(scope).map(|c| c.id).collect() };
        assert_eq!(for_scope(Scope::Loopback), [CheckId::Steal, CheckId::Cores]);
        assert_eq!(
            for_scope(Scope::Lab),
            [CheckId::Steal, CheckId::Cores, CheckId::Namespaces]
        );
        assert_eq!(
            for_scope(Scope::Hosts),
            [CheckId::Steal, CheckId::Cores, CheckId::ClockSync]
        );
        assert_eq!(Scope::of_target("loopback"), Scope::Loopback);
        assert_eq!(Scope::of_target("lab:topologies/two-hop.toml"), Scope::Lab);
        assert_eq!(Scope::of_target("hosts"), Scope::Hosts);
        assert_eq!(doc.checks[1].line(), "warn steal: f");
        assert_eq!(
            format!("[{:<6}|{:>7}]", Status::Ok, CheckId::Tools),
            "[ok    |  tools]"
        );
        // It reads back as written, with its names as documented.
        let value = serde_json::to_value(&doc).unwrap();
        assert_eq!(value["status"], "fail");
        assert_eq!(value["checks"][1]["id"], "steal");
        assert_eq!(serde_json::from_value::<DoctorDoc>(value).unwrap(), doc);
    }

    #[test]
    fn ids_serialize_as_their_names() {
        for id in [
            CheckId::Clocksource,
            CheckId::Timer,
            CheckId::TimerSlack,
            CheckId::CpuGovernor,
            CheckId::CpuIdle,
            CheckId::Steal,
            CheckId::SocketBuffers,
            CheckId::ClockSync,
            CheckId::Namespaces,
            CheckId::AfPacket,
            CheckId::Tools,
            CheckId::Cores,
        ] {
            assert_eq!(serde_json::to_value(id).unwrap(), id.as_str());
        }
        for s in [Status::Ok, Status::Warn, Status::Fail] {
            assert_eq!(serde_json::to_value(s).unwrap(), s.as_str());
        }
    }
}
