//! The doctor's judgement: pure functions from what was read and measured to a
//! [`Check`]. No file, clock or process here, so every verdict is tested on made-up
//! inputs. Each threshold names where it comes from: a kernel document, or the size or
//! time dualperf itself uses (the constants below, each checked against its source by a
//! test of the binary, in crates/cli/src/doctor/mod.rs).
//!
//! The verdicts mean (docs/doctor.md): `ok`, nothing to do; `warn`, measurements run but
//! some figures are less exact than they could be, or a feature (the lab) needs
//! something first (root, a package, a sysctl); `fail`, what the check is about is
//! wrong or impossible with this kernel or machine.

use std::path::Path;

use results::clock::SyncState;
use results::doctor::{Check, CheckId, Status};
use results::human;

use super::sysfs::{BufferLimits, Caps, CpuTimes, IdleState};

/// How long `send` spins before each deadline by default, after sleeping until then:
/// a wake-up later than this makes a packet leave late (`MAX_SPIN_NS` in
/// crates/cli/src/send/engine.rs).
pub const SEND_SPIN_NS: u64 = 50_000;
/// The receive buffer `recv` asks for its UDP sockets (`set_buffer_sizes(Some(4 <<
/// 20), Some(16 << 20))` in crates/cli/src/recv/mod.rs).
pub const RECV_UDP_RCVBUF_BYTES: u64 = 16 << 20;
/// The send buffer `send` asks for its UDP sockets without `--window`
/// (`map_or(4 << 20, …)` in crates/cli/src/send/session.rs), and `recv` for its echoes.
pub const SEND_UDP_SNDBUF_BYTES: u64 = 4 << 20;
/// The receive buffer `recv` sets on a TCP data stream whose header fields it reads
/// (`DATA_RECV_BUFFER` in crates/cli/src/recv/conn.rs); a bulk flow's autotuned window
/// needs as much room.
pub const TCP_DATA_RCVBUF_BYTES: u64 = 4 << 20;
/// A timer coarser than this is not a high-resolution timer: with
/// `CONFIG_HIGH_RES_TIMERS` `clock_getres` says 1 ns, without it a tick, 1 to 10 ms
/// (Documentation/timers/highres.rst; time(7), "High-resolution timers").
pub const HRTIMER_RESOLUTION_NS: u64 = 1_000;
/// Steal above this share of CPU time is a warning: a vCPU then loses 10 ms a second,
/// in stretches of the hypervisor's scheduling slices (milliseconds), each longer by
/// two orders than a loopback or lab delay (tens of µs), so delay tails and the loss
/// of bursts become the hypervisor's.
pub const STEAL_WARN_PCT: f64 = 1.0;
/// Steal above this share fails: a tenth of the time stopped, so rates near a core's
/// capacity and every delay percentile above the 90th are the hypervisor's.
pub const STEAL_FAIL_PCT: f64 = 10.0;

/// Clocksources read in the vDSO, without a system call (each sets a
/// `vdso_clock_mode`: arch/x86/kernel/tsc.c `tsc`, arch/x86/kernel/kvmclock.c
/// `kvm-clock`, drivers/clocksource/hyperv_timer.c `hyperv_clocksource_tsc_page`,
/// drivers/clocksource/arm_arch_timer.c `arch_sys_counter`,
/// drivers/clocksource/timer-riscv.c `riscv_clocksource`, arch/s390/kernel/time.c
/// `tod`).
const VDSO_CLOCKSOURCES: &[&str] = &[
    "tsc",
    "kvm-clock",
    "hyperv_clocksource_tsc_page",
    "arch_sys_counter",
    "riscv_clocksource",
    "tod",
];
/// Clocksources that count the timer tick (kernel/time/jiffies.c): every timestamp is
/// rounded to 1/HZ, 1 to 10 ms.
const TICK_CLOCKSOURCES: &[&str] = &["jiffies", "refined-jiffies"];

fn check(
    id: CheckId,
    title: &str,
    status: Status,
    found: String,
    why: &str,
    fix: Option<String>,
) -> Check {
    Check {
        id,
        title: title.to_owned(),
        status,
        found,
        why: why.to_owned(),
        fix,
    }
}

/// The clocksource: read in the vDSO (ok), by a system call (warn), or counting ticks
/// (fail). `read_ns` is the measured cost of one clock read.
pub fn clocksource(current: Option<&str>, available: &[String], read_ns: f64) -> Check {
    const TITLE: &str = "Clocksource";
    const WHY: &str =
        "Every packet is stamped when it is sent and when it arrives. With a clocksource \
        the vDSO reads (the TSC, kvm-clock, the arm64 counter), a stamp costs tens of ns in user \
        space; with any other one, every stamp is a system call and a device read (about 1 µs for \
        hpet and acpi_pm), which caps the packet rate and adds that much to each delay. A tick \
        clocksource (jiffies) rounds every stamp to 1 to 10 ms.";
    let cost = format!("one clock read ≈ {}", human::duration(read_ns));
    let Some(current) = current else {
        return check(
            CheckId::Clocksource,
            TITLE,
            Status::Warn,
            format!("not exposed (no /sys/devices/system/clocksource/clocksource0); {cost}"),
            WHY,
            Some("`dualperf clock` measures what a clock read and a sleep cost here".into()),
        );
    };
    if VDSO_CLOCKSOURCES.contains(&current) {
        return check(
            CheckId::Clocksource,
            TITLE,
            Status::Ok,
            format!("{current}, read in the vDSO; {cost}"),
            WHY,
            None,
        );
    }
    let better = available
        .iter()
        .find(|a| VDSO_CLOCKSOURCES.contains(&a.as_str()));
    let fix = match better {
        Some(b) => format!(
            "echo {b} | sudo tee /sys/devices/system/clocksource/clocksource0/current_clocksource \
             (for good: the kernel parameter clocksource={b}; if the kernel left {b} as unstable, \
             `sudo dmesg | grep -i clocksource` says why)"
        ),
        None => format!(
            "none of the available clocksources ({}) is read in the vDSO: on a VM, give it a \
             stable TSC or kvm-clock (the hypervisor's CPU model and clock settings)",
            available.join(", ")
        ),
    };
    let (status, what) = if TICK_CLOCKSOURCES.contains(&current) {
        (Status::Fail, "counts timer ticks: stamps rounded to 1/HZ")
    } else {
        (
            Status::Warn,
            "not read in the vDSO: every stamp is a system call",
        )
    };
    check(
        CheckId::Clocksource,
        TITLE,
        status,
        format!("{current}, {what}; {cost}"),
        WHY,
        Some(fix),
    )
}

/// What a sleep measurement found (the binary's `clock::measure_waits`, plain sleeps
/// with the timer slack at 1 ns).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Sleeps {
    /// How long each sleep asked for, ns.
    pub wait_ns: u64,
    /// How many sleeps.
    pub samples: u32,
    /// The median of how late they woke, ns.
    pub overshoot_p50_ns: u64,
    /// The 99th percentile of how late they woke, ns.
    pub overshoot_p99_ns: u64,
}

/// Timer resolution and sleep accuracy: `send` sleeps until [`SEND_SPIN_NS`] before
/// each deadline and spins the rest, so sleeps that wake later than that make packets
/// leave late: warn when the 99th percentile does, fail when the median does (or the
/// timers are not high-resolution at all).
pub fn timer(resolution_ns: u64, sleeps: &Sleeps) -> Check {
    const TITLE: &str = "Timer resolution and sleep accuracy";
    const WHY: &str =
        "send paces packets by sleeping until 50 µs before each deadline and spinning \
        the rest; a sleep that wakes later than that sends its packet late, and the schedule \
        error (send's sched p99) grows by as much. Receivers and the lab's router wake the same \
        way.";
    let found = format!(
        "resolution {} ns; {} sleeps of {} woke late by {} (median), {} (p99)",
        resolution_ns,
        sleeps.samples,
        human::duration(sleeps.wait_ns as f64),
        human::duration(sleeps.overshoot_p50_ns as f64),
        human::duration(sleeps.overshoot_p99_ns as f64)
    );
    let spin = human::duration(SEND_SPIN_NS as f64);
    let (status, fix) = if resolution_ns > HRTIMER_RESOLUTION_NS {
        (
            Status::Fail,
            Some(
                "a kernel with high-resolution timers (CONFIG_HIGH_RES_TIMERS=y; not booted \
                 with highres=off)"
                    .to_owned(),
            ),
        )
    } else if sleeps.overshoot_p50_ns > SEND_SPIN_NS {
        (
            Status::Fail,
            Some(format!(
                "most sleeps wake later than send's {spin} spin: give send a longer --spin \
                 (e.g. --spin 500us, more CPU), or run on an idle host with CPUs to spare"
            )),
        )
    } else if sleeps.overshoot_p99_ns > SEND_SPIN_NS {
        (
            Status::Warn,
            Some(format!(
                "some sleeps wake later than send's {spin} spin: a longer --spin covers them \
                 (more CPU); `dualperf clock` measures several wait lengths"
            )),
        )
    } else {
        (Status::Ok, None)
    };
    check(CheckId::Timer, TITLE, status, found, WHY, fix)
}

/// Timer slack: dualperf lowers its waiting threads' slack to 1 ns (`PR_SET_TIMERSLACK`);
/// if it cannot, every sleep may wake up to the inherited slack late.
pub fn timer_slack(inherited_ns: Option<u64>, lowered: bool) -> Check {
    const TITLE: &str = "Timer slack";
    const WHY: &str = "The kernel may wake a sleeping thread up to its timer slack late, to batch \
        wake-ups (50 µs by default; prctl(2), PR_SET_TIMERSLACK). dualperf sets 1 ns on every \
        thread that paces or waits for packets; a process that cannot (a seccomp filter) sleeps \
        with the slack it inherited.";
    let inherited = inherited_ns.map_or("unknown".to_owned(), |ns| human::duration(ns as f64));
    if lowered {
        return check(
            CheckId::TimerSlack,
            TITLE,
            Status::Ok,
            format!("inherited {inherited}; lowered to 1 ns on dualperf's waiting threads"),
            WHY,
            None,
        );
    }
    let status = match inherited_ns {
        Some(ns) if ns <= SEND_SPIN_NS => Status::Warn,
        _ => Status::Fail,
    };
    check(
        CheckId::TimerSlack,
        TITLE,
        status,
        format!("inherited {inherited}; it cannot be lowered (PR_SET_TIMERSLACK refused)"),
        WHY,
        Some(
            "run dualperf outside the sandbox or seccomp profile that refuses prctl; lower the \
             inherited slack (systemd: TimerSlackNSec=1)"
                .to_owned(),
        ),
    )
}

/// `0-3,6` for a sorted list of CPUs.
fn cpu_ranges(cpus: &[usize]) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut i = 0;
    while i < cpus.len() {
        let mut j = i;
        while j + 1 < cpus.len() && cpus[j + 1] == cpus[j] + 1 {
            j += 1;
        }
        parts.push(if i == j {
            cpus[i].to_string()
        } else {
            format!("{}-{}", cpus[i], cpus[j])
        });
        i = j + 1;
    }
    parts.join(",")
}

/// The frequency governor: `performance` everywhere is ok, any other warns. Not exposed
/// (most VMs: no cpufreq driver) is ok: nothing can be set from here.
pub fn cpu_governor(governors: &[(usize, String)]) -> Check {
    const TITLE: &str = "CPU frequency scaling governor";
    const WHY: &str = "A governor other than performance lowers the clock while a CPU idles and \
        raises it with load (Documentation/admin-guide/pm/cpufreq.rst): the first packets of a \
        run, and every packet of a sparse flow, meet a slow CPU, so delays and the cost per \
        packet depend on the load, and interleaved IPv4 and IPv6 runs can meet different \
        clocks.";
    if governors.is_empty() {
        return check(
            CheckId::CpuGovernor,
            TITLE,
            Status::Ok,
            "not exposed (no cpufreq: a VM, or a CPU without frequency scaling): the hypervisor \
             or firmware sets the clock, nothing to set from here"
                .to_owned(),
            WHY,
            None,
        );
    }
    let mut by_governor: Vec<(&str, Vec<usize>)> = Vec::new();
    for (cpu, g) in governors {
        match by_governor.iter_mut().find(|(name, _)| name == g) {
            Some((_, cpus)) => cpus.push(*cpu),
            None => by_governor.push((g, vec![*cpu])),
        }
    }
    let found = by_governor
        .iter()
        .map(|(g, cpus)| format!("{g} on CPU {}", cpu_ranges(cpus)))
        .collect::<Vec<_>>()
        .join(", ");
    if by_governor.iter().all(|(g, _)| *g == "performance") {
        return check(CheckId::CpuGovernor, TITLE, Status::Ok, found, WHY, None);
    }
    check(
        CheckId::CpuGovernor,
        TITLE,
        Status::Warn,
        found,
        WHY,
        Some(
            "sudo cpupower frequency-set -g performance (or: echo performance | sudo tee \
             /sys/devices/system/cpu/cpu*/cpufreq/scaling_governor)"
                .to_owned(),
        ),
    )
}

/// Deep idle states: an enabled state whose exit latency exceeds [`SEND_SPIN_NS`] warns
/// (a wake-up from it outlasts send's spin). None exposed (a VM without a cpuidle
/// driver) is ok: the hypervisor decides.
pub fn cpu_idle(driver: Option<&str>, states: &[IdleState]) -> Check {
    const TITLE: &str = "Deep CPU idle states";
    const WHY: &str = "A CPU leaving an idle state takes its exit latency to run again \
        (Documentation/admin-guide/pm/cpuidle.rst): that much is added to a wake-up, so a \
        sender wakes late after a gap and a receiver stamps packets late. Deeper than send's \
        50 µs spin, it shows in delays and the schedule error.";
    let driver_text = driver.unwrap_or("none");
    if states.is_empty() || driver == Some("none") {
        return check(
            CheckId::CpuIdle,
            TITLE,
            Status::Ok,
            format!(
                "not exposed (cpuidle driver {driver_text}, no idle states: a VM idles as its \
                 hypervisor decides)"
            ),
            WHY,
            None,
        );
    }
    let deep: Vec<&IdleState> = states
        .iter()
        .filter(|s| !s.disabled && s.latency_us.saturating_mul(1_000) > SEND_SPIN_NS)
        .collect();
    let deepest = states
        .iter()
        .filter(|s| !s.disabled)
        .max_by_key(|s| s.latency_us);
    let deepest_text = deepest.map_or("none enabled".to_owned(), |s| {
        format!(
            "deepest enabled {} ({} µs exit latency)",
            s.name, s.latency_us
        )
    });
    if deep.is_empty() {
        return check(
            CheckId::CpuIdle,
            TITLE,
            Status::Ok,
            format!("driver {driver_text}; {deepest_text}"),
            WHY,
            None,
        );
    }
    let mut names: Vec<String> = Vec::new();
    for s in &deep {
        let n = format!("{} ({} µs)", s.name, s.latency_us);
        if !names.contains(&n) {
            names.push(n);
        }
    }
    let mut cpus: Vec<usize> = deep.iter().map(|s| s.cpu).collect();
    cpus.dedup();
    check(
        CheckId::CpuIdle,
        TITLE,
        Status::Warn,
        format!(
            "driver {driver_text}; enabled on CPU {} with an exit latency over {}: {}",
            cpu_ranges(&cpus),
            human::duration(SEND_SPIN_NS as f64),
            names.join(", ")
        ),
        WHY,
        Some(format!(
            "sudo cpupower idle-set -D {} (disables the idle states of that latency or more \
             until reboot; for good: tuned-adm profile latency-performance, or the kernel \
             parameter intel_idle.max_cstate=1)",
            SEND_SPIN_NS / 1_000
        )),
    )
}

/// Steal over a sample (`before` → `after`, `over_ns` apart) and since boot
/// (`after` alone): fail when the sample's share reaches [`STEAL_FAIL_PCT`], warn when
/// either reaches [`STEAL_WARN_PCT`].
pub fn steal(
    sample: Option<(CpuTimes, CpuTimes)>,
    over_ns: u64,
) -> (Check, Option<f64>, Option<f64>) {
    const TITLE: &str = "Steal time";
    const WHY: &str = "Steal is time the hypervisor ran something else while this VM's CPUs \
        wanted to run (/proc/stat, Documentation/filesystems/proc.rst). A stolen stretch stops \
        sender, receiver and router for milliseconds: delay tails, bursts lost and rates below \
        the offered load are then the hypervisor's, and they change from run to run.";
    let Some((before, after)) = sample else {
        return (
            check(
                CheckId::Steal,
                TITLE,
                Status::Warn,
                "unknown: /proc/stat has no cpu line with a steal field".to_owned(),
                WHY,
                None,
            ),
            None,
            None,
        );
    };
    let share = |steal: u64, total: u64| (total > 0).then(|| steal as f64 * 100.0 / total as f64);
    let since_boot = share(after.steal, after.total);
    let ticks = after.total.checked_sub(before.total);
    let stolen = after.steal.checked_sub(before.steal);
    let now = match (stolen, ticks) {
        (Some(s), Some(t)) => share(s, t),
        _ => None,
    };
    let boot_text = since_boot.map_or("unknown".to_owned(), human::percent);
    let found = match (now, stolen, ticks) {
        (Some(p), Some(s), Some(t)) => format!(
            "{} of CPU time over {} ({s} of {t} ticks), {boot_text} since boot",
            human::percent(p),
            human::duration(over_ns as f64)
        ),
        _ => format!(
            "no ticks passed in the {} sample; {boot_text} since boot",
            human::duration(over_ns as f64)
        ),
    };
    let status = if now.is_some_and(|p| p >= STEAL_FAIL_PCT) {
        Status::Fail
    } else if now
        .into_iter()
        .chain(since_boot)
        .any(|p| p >= STEAL_WARN_PCT)
    {
        Status::Warn
    } else {
        Status::Ok
    };
    let fix = (status != Status::Ok).then(|| {
        "a VM with dedicated (pinned) vCPUs or a less loaded host; repeat runs (the report's \
         intervals show the spread) and compare at a quiet time; `dualperf doctor` again \
         shows whether it passed"
            .to_owned()
    });
    (
        check(CheckId::Steal, TITLE, status, found, WHY, fix),
        now,
        since_boot,
    )
}

/// Socket buffer limits against what dualperf asks for. With `CAP_NET_ADMIN` dualperf
/// sets its sizes past `rmem_max`/`wmem_max` (`SO_RCVBUFFORCE`, socket(7)); without, they
/// are capped there. TCP autotuning is capped by `tcp_rmem`/`tcp_wmem` either way.
pub fn socket_buffers(limits: &BufferLimits, cap_net_admin: Option<bool>) -> Check {
    const TITLE: &str = "Socket buffer limits";
    const WHY: &str = "recv asks 16 MiB of receive buffer for its UDP sockets and send 4 MiB of \
        send buffer, so a burst waits in the socket rather than being dropped by the kernel \
        (counted as loss the network never caused). The kernel caps what a process without \
        CAP_NET_ADMIN may set at net.core.rmem_max and wmem_max (socket(7)), and TCP's window \
        at tcp_rmem's and tcp_wmem's maximum (ip-sysctl.rst): a window below the bandwidth-delay \
        product caps TCP throughput.";
    let show = |v: Option<u64>| v.map_or("unknown".to_owned(), human::bytes);
    let forced = cap_net_admin == Some(true);
    let mut short = Vec::new();
    let mut sysctls = Vec::new();
    let mut want = |name: &str, have: Option<u64>, need: u64, sysctl: String| {
        if have.is_none_or(|h| h < need) {
            short.push(format!("{name} {} < {}", show(have), human::bytes(need)));
            sysctls.push(sysctl);
        }
    };
    if !forced {
        want(
            "rmem_max",
            limits.rmem_max,
            RECV_UDP_RCVBUF_BYTES,
            format!("net.core.rmem_max={RECV_UDP_RCVBUF_BYTES}"),
        );
        want(
            "wmem_max",
            limits.wmem_max,
            SEND_UDP_SNDBUF_BYTES,
            format!("net.core.wmem_max={SEND_UDP_SNDBUF_BYTES}"),
        );
    }
    let triple = |max: u64| format!("'4096 131072 {max}'");
    want(
        "tcp_rmem max",
        limits.tcp_rmem_max,
        TCP_DATA_RCVBUF_BYTES,
        format!("net.ipv4.tcp_rmem={}", triple(TCP_DATA_RCVBUF_BYTES)),
    );
    want(
        "tcp_wmem max",
        limits.tcp_wmem_max,
        SEND_UDP_SNDBUF_BYTES,
        format!("net.ipv4.tcp_wmem={}", triple(SEND_UDP_SNDBUF_BYTES)),
    );
    let found = format!(
        "rmem_max {}, wmem_max {}, tcp_rmem max {}, tcp_wmem max {}; {}",
        show(limits.rmem_max),
        show(limits.wmem_max),
        show(limits.tcp_rmem_max),
        show(limits.tcp_wmem_max),
        match cap_net_admin {
            Some(true) => "CAP_NET_ADMIN: dualperf sets its UDP buffers past rmem_max and wmem_max",
            Some(false) => "no CAP_NET_ADMIN: UDP buffers are capped at rmem_max and wmem_max",
            None => "CAP_NET_ADMIN unknown: UDP buffers may be capped at rmem_max and wmem_max",
        }
    );
    if short.is_empty() {
        return check(CheckId::SocketBuffers, TITLE, Status::Ok, found, WHY, None);
    }
    check(
        CheckId::SocketBuffers,
        TITLE,
        Status::Warn,
        format!("{found}; short: {}", short.join(", ")),
        WHY,
        Some(format!("sudo sysctl -w {}", sysctls.join(" "))),
    )
}

/// Clock synchronisation: synchronised is ok; unsynchronised (or unknown) warns, as it
/// matters only to one-way delays across hosts.
pub fn clock_sync(sync: &SyncState) -> Check {
    const TITLE: &str = "Clock synchronisation";
    const WHY: &str = "A one-way delay between two hosts is the receiver's clock minus the \
        sender's, so it carries their offset (dualperf reports the offset and its bound beside \
        the delays, never subtracting it). On one host (loopback, or the lab's namespaces, which \
        share one kernel clock) this does not matter, nor for round trips (--meter rtt).";
    let text = results::clock::sync_text(sync);
    let kernel = sync.kernel.as_ref().map(|k| k.synchronised);
    let chrony_unsync = sync
        .chrony
        .as_ref()
        .is_some_and(|c| c.leap_status == "Not synchronised");
    if kernel == Some(true) && !chrony_unsync {
        return check(CheckId::ClockSync, TITLE, Status::Ok, text, WHY, None);
    }
    check(
        CheckId::ClockSync,
        TITLE,
        Status::Warn,
        format!("{text}: one-way delays across hosts carry the clocks' offset; fine on one host"),
        WHY,
        Some(
            "run an NTP daemon on every host that measures one-way delays across hosts (sudo \
             apt-get install chrony; chronyc tracking shows its state), or measure round trips \
             (send --meter rtt)"
                .to_owned(),
        ),
    )
}

/// `CAP_NET_ADMIN` and network namespaces, for the lab: no namespaces in the kernel
/// fails; none allowed, or no privilege, warns.
pub fn namespaces(caps: Option<Caps>, has_net_ns: bool, max_net_ns: Option<u64>) -> Check {
    const TITLE: &str = "CAP_NET_ADMIN and network namespaces (the lab)";
    const WHY: &str = "The lab (dualperf lab, plans with a lab target) builds its hosts and \
        routers as network namespaces joined by veths (ip netns add, ip link): that needs a \
        kernel with network namespaces and root (CAP_NET_ADMIN, and CAP_SYS_ADMIN to mount them). \
        Measurements on loopback need neither.";
    let admin = caps.map(Caps::net_admin);
    let limit = max_net_ns.map_or("unknown".to_owned(), |n| n.to_string());
    let found = format!(
        "network namespaces: {}; user.max_net_namespaces {limit}; CAP_NET_ADMIN: {}",
        if has_net_ns { "yes" } else { "no" },
        match admin {
            Some(true) => "yes",
            Some(false) => "no",
            None => "unknown",
        }
    );
    let (status, fix) = if !has_net_ns {
        (
            Status::Fail,
            "a kernel built with CONFIG_NET_NS=y (every distribution kernel is)".to_owned(),
        )
    } else if max_net_ns == Some(0) {
        (
            Status::Warn,
            "sudo sysctl -w user.max_net_namespaces=10000".to_owned(),
        )
    } else if admin != Some(true) {
        (
            Status::Warn,
            "run the lab as root: sudo dualperf lab up …, sudo dualperf run PLAN".to_owned(),
        )
    } else {
        return check(CheckId::Namespaces, TITLE, Status::Ok, found, WHY, None);
    };
    check(CheckId::Namespaces, TITLE, status, found, WHY, Some(fix))
}

/// Packet sockets for the lab's router: none in the kernel fails; no `CAP_NET_RAW` warns.
pub fn af_packet(has_packet: bool, caps: Option<Caps>) -> Check {
    const TITLE: &str = "Packet sockets (the lab's router)";
    const WHY: &str =
        "The lab's router (dualperf route) reads and writes frames through AF_PACKET \
        rings on its veths: that needs a kernel with packet sockets and CAP_NET_RAW (packet(7)).";
    let raw = caps.map(Caps::net_raw);
    let found = format!(
        "AF_PACKET: {}; CAP_NET_RAW: {}",
        if has_packet {
            "yes (/proc/net/packet)"
        } else {
            "no /proc/net/packet"
        },
        match raw {
            Some(true) => "yes",
            Some(false) => "no",
            None => "unknown",
        }
    );
    if !has_packet {
        return check(
            CheckId::AfPacket,
            TITLE,
            Status::Fail,
            found,
            WHY,
            Some("a kernel with CONFIG_PACKET (or: sudo modprobe af_packet)".to_owned()),
        );
    }
    if raw != Some(true) {
        return check(
            CheckId::AfPacket,
            TITLE,
            Status::Warn,
            found,
            WHY,
            Some("run the lab as root: sudo dualperf lab up …".to_owned()),
        );
    }
    check(CheckId::AfPacket, TITLE, Status::Ok, found, WHY, None)
}

/// The programs the lab runs: iproute2's `ip`.
pub fn tools(ip: Option<&Path>) -> Check {
    const TITLE: &str = "Tools the lab runs";
    const WHY: &str = "The lab builds namespaces, veths, addresses and routes with iproute2's ip. \
        Measurements on loopback need no other program.";
    match ip {
        Some(path) => check(
            CheckId::Tools,
            TITLE,
            Status::Ok,
            format!("ip: {}", path.display()),
            WHY,
            None,
        ),
        None => check(
            CheckId::Tools,
            TITLE,
            Status::Warn,
            "ip: not on PATH".to_owned(),
            WHY,
            Some("sudo apt-get install iproute2 (or your distribution's iproute2)".to_owned()),
        ),
    }
}

/// CPUs this process may use: with one, sender and receiver share it.
pub fn cores(online: Option<usize>, allowed: Option<usize>) -> Check {
    const TITLE: &str = "CPUs available";
    const WHY: &str = "On one host the sender, the receiver (and in the lab each router) run at \
        once. With a single CPU they take turns: each packet waits for the other's time slice, \
        so delays and throughput measure the scheduler as much as the stack.";
    let show = |v: Option<usize>| v.map_or("unknown".to_owned(), |n| n.to_string());
    let found = format!(
        "{} online, {} this process may run on",
        show(online),
        show(allowed)
    );
    let usable = allowed.or(online);
    match usable {
        Some(n) if n >= 2 => check(CheckId::Cores, TITLE, Status::Ok, found, WHY, None),
        _ => {
            let fix = if online.is_some_and(|o| o >= 2) {
                "this process is confined to one CPU (taskset, a cgroup cpuset): widen it, e.g. \
                 taskset -c 0-1 dualperf …"
            } else {
                "a host or VM with at least 2 CPUs (3 for a lab with a router)"
            };
            check(
                CheckId::Cores,
                TITLE,
                Status::Warn,
                found,
                WHY,
                Some(fix.to_owned()),
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use results::clock::{ChronyTracking, KernelClock};

    fn sleeps(p50: u64, p99: u64) -> Sleeps {
        Sleeps {
            wait_ns: 1_000_000,
            samples: 200,
            overshoot_p50_ns: p50,
            overshoot_p99_ns: p99,
        }
    }

    #[test]
    fn clocksource_verdicts() {
        let avail = |s: &str| s.split(' ').map(str::to_owned).collect::<Vec<_>>();
        let ok = clocksource(Some("kvm-clock"), &avail("kvm-clock tsc"), 25.0);
        assert_eq!(ok.status, Status::Ok, "{ok:?}");
        assert!(ok.found.contains("one clock read ≈ 25.0 ns"), "{ok:?}");
        assert_eq!(ok.fix, None);
        let hpet = clocksource(Some("hpet"), &avail("hpet acpi_pm tsc"), 600.0);
        assert_eq!(hpet.status, Status::Warn);
        assert!(hpet.found.contains("system call"), "{hpet:?}");
        assert!(hpet
            .fix
            .as_deref()
            .unwrap()
            .starts_with("echo tsc | sudo tee"));
        let jiffies = clocksource(Some("jiffies"), &avail("jiffies"), 30.0);
        assert_eq!(jiffies.status, Status::Fail);
        assert!(jiffies.fix.unwrap().contains("none of the available"));
        assert_eq!(clocksource(None, &[], 20.0).status, Status::Warn);
    }

    #[test]
    fn timer_verdicts_follow_sends_spin() {
        assert_eq!(timer(1, &sleeps(5_000, 40_000)).status, Status::Ok);
        let late = timer(1, &sleeps(5_000, 80_000));
        assert_eq!(late.status, Status::Warn);
        assert!(late.found.contains("80.0 µs (p99)"), "{late:?}");
        assert_eq!(timer(1, &sleeps(60_000, 80_000)).status, Status::Fail);
        // A tick of 4 ms: no high-resolution timers.
        assert_eq!(timer(4_000_000, &sleeps(0, 0)).status, Status::Fail);
        assert_eq!(timer(1_000, &sleeps(0, 0)).status, Status::Ok);
    }

    #[test]
    fn timer_slack_verdicts() {
        assert_eq!(timer_slack(Some(50_000), true).status, Status::Ok);
        assert_eq!(timer_slack(Some(50_000), false).status, Status::Warn);
        assert_eq!(timer_slack(Some(200_000), false).status, Status::Fail);
        assert_eq!(timer_slack(None, false).status, Status::Fail);
    }

    #[test]
    fn governor_verdicts() {
        let g = |list: &[(usize, &str)]| {
            list.iter()
                .map(|(c, n)| (*c, (*n).to_owned()))
                .collect::<Vec<_>>()
        };
        let none = cpu_governor(&[]);
        assert_eq!(none.status, Status::Ok);
        assert!(none.found.starts_with("not exposed"), "{none:?}");
        let perf = cpu_governor(&g(&[(0, "performance"), (1, "performance")]));
        assert_eq!(
            (perf.status, perf.found.as_str()),
            (Status::Ok, "performance on CPU 0-1")
        );
        let mixed = cpu_governor(&g(&[
            (0, "performance"),
            (1, "powersave"),
            (2, "powersave"),
            (4, "powersave"),
        ]));
        assert_eq!(mixed.status, Status::Warn);
        assert_eq!(mixed.found, "performance on CPU 0, powersave on CPU 1-2,4");
        assert!(mixed
            .fix
            .unwrap()
            .contains("cpupower frequency-set -g performance"));
    }

    #[test]
    fn idle_verdicts() {
        let state = |cpu, name: &str, latency_us, disabled| IdleState {
            cpu,
            name: name.into(),
            latency_us,
            disabled,
        };
        assert_eq!(cpu_idle(None, &[]).status, Status::Ok);
        let vm = [
            state(0, "POLL", 0, false),
            state(0, "haltpoll idle", 1, false),
        ];
        let ok = cpu_idle(Some("haltpoll"), &vm);
        assert_eq!(ok.status, Status::Ok, "{ok:?}");
        assert!(ok.found.contains("haltpoll idle (1 µs"), "{ok:?}");
        let metal = [
            state(0, "C1", 2, false),
            state(0, "C6", 133, false),
            state(1, "C1", 2, false),
            state(1, "C6", 133, false),
        ];
        let deep = cpu_idle(Some("intel_idle"), &metal);
        assert_eq!(deep.status, Status::Warn);
        assert!(deep.found.contains("CPU 0-1"), "{deep:?}");
        assert!(deep.found.contains("C6 (133 µs)"), "{deep:?}");
        assert!(deep.fix.unwrap().contains("cpupower idle-set -D 50"));
        // Disabled, they no longer matter.
        let off: Vec<IdleState> = metal
            .iter()
            .map(|s| IdleState {
                disabled: s.latency_us > 50,
                ..s.clone()
            })
            .collect();
        assert_eq!(cpu_idle(Some("intel_idle"), &off).status, Status::Ok);
    }

    #[test]
    fn steal_verdicts() {
        let t = |total, steal| CpuTimes { total, steal };
        let (ok, now, boot) = steal(Some((t(1_000, 0), t(1_050, 0))), 250_000_000);
        assert_eq!(ok.status, Status::Ok, "{ok:?}");
        assert_eq!((now, boot), (Some(0.0), Some(0.0)));
        assert!(ok.found.contains("(0 of 50 ticks)"), "{ok:?}");
        // 2 of 50 ticks stolen: 4 %.
        let (warn, now, _) = steal(Some((t(1_000, 0), t(1_050, 2))), 250_000_000);
        assert_eq!(warn.status, Status::Warn);
        assert_eq!(now, Some(4.0));
        // None now, but 5 % since boot.
        let (old, _, boot) = steal(Some((t(1_000, 50), t(1_050, 50))), 250_000_000);
        assert_eq!(
            (old.status, boot),
            (Status::Warn, Some(50.0 / 1_050.0 * 100.0))
        );
        let (fail, _, _) = steal(Some((t(1_000, 0), t(1_050, 10))), 250_000_000);
        assert_eq!(fail.status, Status::Fail);
        // No tick in between: no share now, no panic.
        let (still, now, _) = steal(Some((t(1_000, 0), t(1_000, 0))), 1);
        assert_eq!((still.status, now), (Status::Ok, None));
        // Counters that went backwards (a wrapped or faked file): no share either.
        let (back, now, _) = steal(Some((t(1_000, 5), t(900, 0))), 1);
        assert_eq!((back.status, now), (Status::Ok, None));
        assert_eq!(steal(None, 1).0.status, Status::Warn);
    }

    #[test]
    fn socket_buffer_verdicts() {
        let limits = |r, w, tr, tw| BufferLimits {
            rmem_max: Some(r),
            wmem_max: Some(w),
            tcp_rmem_max: Some(tr),
            tcp_wmem_max: Some(tw),
        };
        let defaults = limits(212_992, 212_992, 6_291_456, 4_194_304);
        let capped = socket_buffers(&defaults, Some(false));
        assert_eq!(capped.status, Status::Warn);
        assert!(
            capped.found.contains("rmem_max 208 KiB < 16.0 MiB"),
            "{capped:?}"
        );
        assert_eq!(
            capped.fix.as_deref(),
            Some("sudo sysctl -w net.core.rmem_max=16777216 net.core.wmem_max=4194304")
        );
        // CAP_NET_ADMIN forces the sizes past the limits.
        assert_eq!(socket_buffers(&defaults, Some(true)).status, Status::Ok);
        let raised = limits(16 << 20, 4 << 20, 6_291_456, 4_194_304);
        assert_eq!(socket_buffers(&raised, Some(false)).status, Status::Ok);
        // TCP's autotuning limit holds even for root.
        let small_tcp = limits(16 << 20, 4 << 20, 1 << 20, 4 << 20);
        let tcp = socket_buffers(&small_tcp, Some(true));
        assert_eq!(tcp.status, Status::Warn);
        assert!(tcp
            .fix
            .unwrap()
            .contains("net.ipv4.tcp_rmem='4096 131072 4194304'"));
        assert_eq!(
            socket_buffers(&BufferLimits::default(), Some(true)).status,
            Status::Warn
        );
    }

    #[test]
    fn clock_sync_verdicts() {
        let kernel = |synchronised| KernelClock {
            synchronised,
            status: 0,
            max_error_ns: 16_000_000,
            est_error_ns: 1_000,
            offset_ns: 0,
            freq_ppm: 0.0,
        };
        let sync = |k: Option<KernelClock>, leap: Option<&str>| SyncState {
            kernel: k,
            chrony: leap.map(|l| ChronyTracking {
                reference: "0 ()".into(),
                stratum: 3,
                system_time_offset_ns: 0.0,
                last_offset_ns: 0.0,
                rms_offset_ns: 0.0,
                root_delay_ns: 0.0,
                root_dispersion_ns: 0.0,
                leap_status: l.into(),
            }),
        };
        assert_eq!(
            clock_sync(&sync(Some(kernel(true)), None)).status,
            Status::Ok
        );
        assert_eq!(
            clock_sync(&sync(Some(kernel(true)), Some("Normal"))).status,
            Status::Ok
        );
        let unsync = clock_sync(&sync(Some(kernel(false)), None));
        assert_eq!(unsync.status, Status::Warn);
        assert!(unsync.found.contains("fine on one host"), "{unsync:?}");
        assert_eq!(
            clock_sync(&sync(Some(kernel(true)), Some("Not synchronised"))).status,
            Status::Warn
        );
        assert_eq!(clock_sync(&sync(None, None)).status, Status::Warn);
    }

    #[test]
    fn namespace_af_packet_tools_and_cores_verdicts() {
        let root = Some(Caps(0x1ff_feff_ffff));
        let nobody = Some(Caps(0));
        assert_eq!(namespaces(root, true, Some(96_365)).status, Status::Ok);
        assert_eq!(namespaces(nobody, true, Some(96_365)).status, Status::Warn);
        assert_eq!(namespaces(None, true, None).status, Status::Warn);
        assert_eq!(namespaces(root, true, Some(0)).status, Status::Warn);
        assert_eq!(namespaces(root, false, Some(10)).status, Status::Fail);
        assert_eq!(af_packet(true, root).status, Status::Ok);
        assert_eq!(af_packet(true, nobody).status, Status::Warn);
        assert_eq!(af_packet(false, root).status, Status::Fail);
        assert_eq!(tools(Some(Path::new("/usr/sbin/ip"))).status, Status::Ok);
        assert_eq!(tools(None).status, Status::Warn);
        assert_eq!(cores(Some(2), Some(2)).status, Status::Ok);
        let one = cores(Some(1), Some(1));
        assert_eq!(one.status, Status::Warn);
        assert!(one.fix.unwrap().contains("at least 2 CPUs"));
        let confined = cores(Some(8), Some(1));
        assert_eq!(confined.status, Status::Warn);
        assert!(confined.fix.unwrap().contains("taskset"));
        assert_eq!(cores(Some(4), None).status, Status::Ok);
        assert_eq!(cores(None, None).status, Status::Warn);
    }

    #[test]
    fn cpu_lists_are_written_as_ranges() {
        assert_eq!(cpu_ranges(&[]), "");
        assert_eq!(cpu_ranges(&[0, 1, 2, 3, 6, 8, 9]), "0-3,6,8-9");
        assert_eq!(cpu_ranges(&[5]), "5");
    }
}
