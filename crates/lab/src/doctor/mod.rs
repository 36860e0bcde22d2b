//! The host check of `dualperf doctor` and of every run directory (`doctor.json`):
//! what this host offers the measurements, judged into a [`DoctorDoc`].
//!
//! Three steps, kept apart so tests can fake each: [`sysfs`] reads files under a root
//! (`/`, or a fake `/proc` and `/sys` in a temporary directory) into [`Readings`], the
//! binary measures and asks what is not a file (sleeps, clock reads, adjtimex, `PATH`)
//! into a [`Live`] and a [`StealSample`], and [`judge`] weighs both with [`checks`], with
//! no I/O. [`text`] is the document as `dualperf doctor` prints it; [`programs`] finds
//! programs on `PATH` and asks chrony for its tracking.

pub mod checks;
pub mod programs;
pub mod sysfs;

use std::fmt::Write;
use std::path::PathBuf;

use results::clock::SyncState;
use results::doctor::{worst, Check, DoctorDoc, Figures, Status, DOCTOR_FORMAT_VERSION};

use self::checks::Sleeps;
use self::sysfs::{BufferLimits, Caps, CpuTimes, Host, IdleState};

/// Everything the doctor learns that is not a file under the root.
#[derive(Clone, Debug)]
pub struct Live {
    /// `clock_getres(CLOCK_MONOTONIC)`, ns.
    pub timer_resolution_ns: u64,
    /// One clock read, ns.
    pub clock_read_ns: f64,
    /// How late plain sleeps woke with the slack at 1 ns.
    pub sleeps: Sleeps,
    /// `PR_SET_TIMERSLACK` to 1 ns took (read back as 1).
    pub slack_lowered: bool,
    /// adjtimex and chrony.
    pub sync: SyncState,
    /// iproute2's `ip` on `PATH`.
    pub ip: Option<PathBuf>,
    /// CPUs this process may run on.
    pub cpus_allowed: Option<usize>,
}

/// What the steal sample saw: `/proc/stat` before and after, and how far apart (ns).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StealSample {
    /// `/proc/stat` as the sample began.
    pub before: Option<CpuTimes>,
    /// `/proc/stat` as it ended.
    pub after: Option<CpuTimes>,
    /// How long it took, ns.
    pub over_ns: u64,
}

/// What the checks read from files.
#[derive(Clone, Debug)]
pub struct Readings {
    clocksource: Option<String>,
    clocksources_available: Vec<String>,
    timer_slack_ns: Option<u64>,
    governors: Vec<(usize, String)>,
    idle_driver: Option<String>,
    idle_states: Vec<IdleState>,
    buffers: BufferLimits,
    caps: Option<Caps>,
    has_net_ns: bool,
    max_net_namespaces: Option<u64>,
    has_packet_sockets: bool,
    cpus_online: Option<usize>,
}

impl Readings {
    /// Every file the checks read, under `host`'s root.
    pub fn read(host: &Host) -> Self {
        let (clocksource, clocksources_available) = host.clocksource();
        let (idle_driver, idle_states) = host.idle();
        Self {
            clocksource,
            clocksources_available,
            timer_slack_ns: host.timer_slack_ns(),
            governors: host.governors(),
            idle_driver,
            idle_states,
            buffers: host.buffer_limits(),
            caps: host.caps(),
            has_net_ns: host.has_net_ns(),
            max_net_namespaces: host.max_net_namespaces(),
            has_packet_sockets: host.has_packet_sockets(),
            cpus_online: host.cpus_online(),
        }
    }
}

/// Every check, in docs/doctor.md's order, and the figures they judged.
pub fn judge(r: &Readings, live: &Live, steal: &StealSample, checked_unix_ns: u64) -> DoctorDoc {
    let (steal_check, steal_pct, steal_since_boot_pct) =
        checks::steal(steal.before.zip(steal.after), steal.over_ns);
    let checks = vec![
        checks::clocksource(
            r.clocksource.as_deref(),
            &r.clocksources_available,
            live.clock_read_ns,
        ),
        checks::timer(live.timer_resolution_ns, &live.sleeps),
        checks::timer_slack(r.timer_slack_ns, live.slack_lowered),
        checks::cpu_governor(&r.governors),
        checks::cpu_idle(r.idle_driver.as_deref(), &r.idle_states),
        steal_check,
        checks::socket_buffers(&r.buffers, r.caps.map(Caps::net_admin)),
        checks::clock_sync(&live.sync),
        checks::namespaces(r.caps, r.has_net_ns, r.max_net_namespaces),
        checks::af_packet(r.has_packet_sockets, r.caps),
        checks::tools(live.ip.as_deref()),
        checks::cores(r.cpus_online, live.cpus_allowed),
    ];
    let mut governors: Vec<String> = r.governors.iter().map(|(_, g)| g.clone()).collect();
    governors.sort();
    governors.dedup();
    let count = |n: Option<usize>| n.and_then(|n| u32::try_from(n).ok());
    let figures = Figures {
        clocksource: r.clocksource.clone(),
        clock_read_ns: live.clock_read_ns,
        timer_resolution_ns: live.timer_resolution_ns,
        sleep_wait_ns: live.sleeps.wait_ns,
        sleep_samples: live.sleeps.samples,
        sleep_overshoot_p50_ns: live.sleeps.overshoot_p50_ns,
        sleep_overshoot_p99_ns: live.sleeps.overshoot_p99_ns,
        timer_slack_ns: r.timer_slack_ns,
        governors,
        idle_driver: r.idle_driver.clone(),
        idle_exit_latency_max_ns: r
            .idle_states
            .iter()
            .filter(|s| !s.disabled)
            .map(|s| s.latency_us.saturating_mul(1_000))
            .max(),
        steal_pct,
        steal_sample_ns: steal.over_ns,
        steal_since_boot_pct,
        rmem_max_bytes: r.buffers.rmem_max,
        wmem_max_bytes: r.buffers.wmem_max,
        tcp_rmem_max_bytes: r.buffers.tcp_rmem_max,
        tcp_wmem_max_bytes: r.buffers.tcp_wmem_max,
        clock_synchronised: live.sync.kernel.as_ref().map(|k| k.synchronised),
        cap_net_admin: r.caps.map(Caps::net_admin),
        cap_net_raw: r.caps.map(Caps::net_raw),
        cpus_online: count(r.cpus_online),
        cpus_allowed: count(live.cpus_allowed),
    };
    DoctorDoc {
        format_version: DOCTOR_FORMAT_VERSION,
        tool: format!("dualperf {}", env!("CARGO_PKG_VERSION")),
        checked_unix_ns,
        status: worst(&checks),
        checks,
        figures,
    }
}

/// The width the why and fix lines are wrapped to (`max_term_width` of the help).
pub const TEXT_WIDTH: usize = 100;

/// One line per check (status, id, what was found), then for each check that is not ok
/// why it matters and how to fix it.
pub fn text(doc: &DoctorDoc) -> String {
    let n = |s: Status| doc.checks.iter().filter(|c| c.status == s).count();
    let mut out = format!(
        "dualperf doctor: {} ({} checks: {} ok, {} warn, {} fail)\n",
        doc.status,
        doc.checks.len(),
        n(Status::Ok),
        n(Status::Warn),
        n(Status::Fail)
    );
    let width = doc
        .checks
        .iter()
        .map(|c| c.id.as_str().len())
        .max()
        .unwrap_or(0);
    for c in &doc.checks {
        let _ = writeln!(
            out,
            "{:<4}  {:<width$}  {}",
            c.status.as_str(),
            c.id.as_str(),
            c.found
        );
    }
    let problems: Vec<&Check> = doc.problems().collect();
    if !problems.is_empty() {
        out.push('\n');
    }
    for c in problems {
        let _ = writeln!(out, "{} {}: {}", c.status, c.id, c.title);
        out.push_str(&wrap(&format!("why: {}", c.why), "  ", TEXT_WIDTH));
        if let Some(fix) = &c.fix {
            out.push_str(&wrap(&format!("fix: {fix}"), "  ", TEXT_WIDTH));
        }
    }
    out
}

/// `text` in lines of at most `width` characters (a longer word stands alone), each
/// starting with `indent`, the continuation lines indented two more.
fn wrap(text: &str, indent: &str, width: usize) -> String {
    let mut out = String::new();
    let mut line = indent.to_owned();
    let mut empty = true;
    let more = format!("{indent}  ");
    for word in text.split_whitespace() {
        if !empty && line.chars().count() + 1 + word.chars().count() > width {
            out.push_str(&line);
            out.push('\n');
            line = more.clone();
            empty = true;
        }
        if !empty {
            line.push(' ');
        }
        line.push_str(word);
        empty = false;
    }
    if !empty {
        out.push_str(&line);
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    use results::clock::KernelClock;
    use results::doctor::CheckId;

    /// A fake host: files under a temporary root.
    fn fake_root(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("dualperf-doctor-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    /// Write `text` at `rel` under `root`, making its directories.
    fn put(root: &Path, rel: &str, text: &str) {
        let p = root.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }

    /// A bare-metal host as a well-tuned lab machine has it: every check ok.
    fn good_host(root: &Path) {
        let cs = "sys/devices/system/clocksource/clocksource0";
        put(root, &format!("{cs}/current_clocksource"), "tsc\n");
        put(
            root,
            &format!("{cs}/available_clocksource"),
            "tsc hpet acpi_pm \n",
        );
        put(root, "proc/self/timerslack_ns", "50000\n");
        for cpu in 0..4 {
            let dir = format!("sys/devices/system/cpu/cpu{cpu}");
            put(
                root,
                &format!("{dir}/cpufreq/scaling_governor"),
                "performance\n",
            );
            for (i, (name, latency, disable)) in [("POLL", 0, 0), ("C1", 2, 0), ("C6", 133, 1)]
                .iter()
                .enumerate()
            {
                let s = format!("{dir}/cpuidle/state{i}");
                put(root, &format!("{s}/name"), &format!("{name}\n"));
                put(root, &format!("{s}/latency"), &format!("{latency}\n"));
                put(root, &format!("{s}/disable"), &format!("{disable}\n"));
            }
        }
        put(
            root,
            "sys/devices/system/cpu/cpuidle/current_driver",
            "intel_idle\n",
        );
        put(root, "sys/devices/system/cpu/online", "0-3\n");
        put(
            root,
            "proc/stat",
            "cpu  100 0 50 1000 5 0 10 0 0 0\ncpu0 1 2 3\nintr 1 2 3\n",
        );
        put(root, "proc/sys/net/core/rmem_max", "16777216\n");
        put(root, "proc/sys/net/core/wmem_max", "4194304\n");
        put(
            root,
            "proc/sys/net/ipv4/tcp_rmem",
            "4096\t131072\t6291456\n",
        );
        put(root, "proc/sys/net/ipv4/tcp_wmem", "4096\t16384\t4194304\n");
        put(
            root,
            "proc/self/status",
            "Name:\tdualperf\nCapPrm:\t000001ffffffffff\nCapEff:\t000001ffffffffff\n",
        );
        put(root, "proc/self/ns/net", "");
        put(root, "proc/sys/user/max_net_namespaces", "63432\n");
        put(
            root,
            "proc/net/packet",
            "sk               RefCnt Type Proto  Iface R Rmem   User   Inode\n",
        );
    }

    fn good_live() -> Live {
        Live {
            timer_resolution_ns: 1,
            clock_read_ns: 21.5,
            sleeps: Sleeps {
                wait_ns: 1_000_000,
                samples: 200,
                overshoot_p50_ns: 4_000,
                overshoot_p99_ns: 12_000,
            },
            slack_lowered: true,
            sync: SyncState {
                kernel: Some(KernelClock {
                    synchronised: true,
                    status: 0x2001,
                    max_error_ns: 20_000_000,
                    est_error_ns: 5_000,
                    offset_ns: 0,
                    freq_ppm: 1.5,
                }),
                chrony: None,
            },
            ip: Some(PathBuf::from("/usr/sbin/ip")),
            cpus_allowed: Some(4),
        }
    }

    /// The steal sample of `root`'s `/proc/stat` now and after `after` replaces it.
    fn sample(root: &Path, after: &str) -> StealSample {
        let host = Host::at(root);
        let before = host.cpu_times();
        put(root, "proc/stat", after);
        StealSample {
            before,
            after: host.cpu_times(),
            over_ns: 250_000_000,
        }
    }

    /// Judge a fake tree with `live`, the steal sample moving to `stat_after`.
    fn doc(root: &Path, live: &Live, stat_after: &str) -> DoctorDoc {
        let steal = sample(root, stat_after);
        judge(&Readings::read(&Host::at(root)), live, &steal, 1)
    }

    const QUIET_STAT: &str = "cpu  130 0 60 1100 5 0 10 0 0 0\n";

    fn status(doc: &DoctorDoc, id: CheckId) -> Status {
        doc.checks.iter().find(|c| c.id == id).unwrap().status
    }

    #[test]
    fn a_well_tuned_host_passes_every_check_and_its_figures_are_read() {
        let root = fake_root("good");
        good_host(&root);
        let d = doc(&root, &good_live(), QUIET_STAT);
        for c in &d.checks {
            assert_eq!(c.status, Status::Ok, "{c:?}");
            assert_eq!(c.fix, None, "{c:?}");
        }
        assert_eq!(d.status, Status::Ok);
        assert_eq!(d.checks.len(), 12);
        let f = &d.figures;
        assert_eq!(f.clocksource.as_deref(), Some("tsc"));
        assert_eq!(f.governors, ["performance"]);
        assert_eq!(f.idle_driver.as_deref(), Some("intel_idle"));
        // C6 is disabled: C1's 2 µs is the deepest that counts.
        assert_eq!(f.idle_exit_latency_max_ns, Some(2_000));
        assert_eq!(f.timer_slack_ns, Some(50_000));
        assert_eq!(f.steal_pct, Some(0.0));
        assert_eq!(f.steal_since_boot_pct, Some(0.0));
        assert_eq!(
            (f.rmem_max_bytes, f.tcp_rmem_max_bytes),
            (Some(16 << 20), Some(6_291_456))
        );
        assert_eq!((f.cap_net_admin, f.cap_net_raw), (Some(true), Some(true)));
        assert_eq!((f.cpus_online, f.cpus_allowed), (Some(4), Some(4)));
        let text = text(&d);
        assert!(text.starts_with("dualperf doctor: ok (12 checks: 12 ok, 0 warn, 0 fail)\n"));
        assert_eq!(text.lines().count(), 13, "{text}");
        assert!(!text.contains("why:"), "{text}");
        assert!(
            text.contains(
                "\nok    clocksource     tsc, read in the vDSO; one clock read ≈ 21.5 ns\n"
            ),
            "{text}"
        );
        let _ = std::fs::remove_dir_all(&root);
    }

    #[test]
    fn each_file_check_goes_wrong_on_a_faked_tree() {
        let root = fake_root("bad");
        good_host(&root);
        let cs = "sys/devices/system/clocksource/clocksource0";
        put(&root, &format!("{cs}/current_clocksource"), "hpet\n");
        put(
            &root,
            "sys/devices/system/cpu/cpu1/cpufreq/scaling_governor",
            "powersave\n",
        );
        put(
            &root,
            "sys/devices/system/cpu/cpu2/cpuidle/state2/disable",
            "0\n",
        );
        put(&root, "proc/sys/net/core/rmem_max", "212992\n");
        // No CAP_NET_ADMIN nor CAP_NET_RAW: a user's shell.
        put(&root, "proc/self/status", "CapEff:\t0000000000000000\n");
        put(&root, "proc/sys/user/max_net_namespaces", "0\n");
        put(&root, "sys/devices/system/cpu/online", "0\n");
        // 3 of 50 ticks stolen: 6 %.
        let live = Live {
            cpus_allowed: Some(1),
            ..good_live()
        };
        let d = doc(&root, &live, "cpu  120 0 57 1020 5 0 10 3 0 0\n");
        for (id, want) in [
            (CheckId::Clocksource, Status::Warn),
            (CheckId::CpuGovernor, Status::Warn),
            (CheckId::CpuIdle, Status::Warn),
            (CheckId::Steal, Status::Warn),
            (CheckId::SocketBuffers, Status::Warn),
            (CheckId::Namespaces, Status::Warn),
            (CheckId::AfPacket, Status::Warn),
            (CheckId::Cores, Status::Warn),
        ] {
            assert_eq!(status(&d, id), want, "{id}: {:#?}", d.checks);
        }
        assert_eq!(d.status, Status::Warn);
        let idle = d.checks.iter().find(|c| c.id == CheckId::CpuIdle).unwrap();
        assert!(idle.found.contains("on CPU 2"), "{idle:?}");
        assert_eq!(d.figures.idle_exit_latency_max_ns, Some(133_000));
        assert_eq!(d.figures.governors, ["performance", "powersave"]);
        assert_eq!(d.figures.steal_pct, Some(6.0));
        assert_eq!(
            (d.figures.cap_net_admin, d.figures.cap_net_raw),
            (Some(false), Some(false))
        );
        // The text: one line per check, then why and fix for each that is not ok.
        let text = text(&d);
        assert!(text.starts_with("dualperf doctor: warn (12 checks: 4 ok, 8 warn, 0 fail)\n"));
        assert!(
            text.contains(
                "\nwarn  steal           6.000 % of CPU time over 250 ms (3 of 50 ticks)"
            ),
            "{text}"
        );
        assert!(
            text.contains("\nwarn socket-buffers: Socket buffer limits\n  why: "),
            "{text}"
        );
        assert!(
            text.contains("  fix: sudo sysctl -w net.core.rmem_max=16777216\n"),
            "{text}"
        );
        assert!(
            text.lines()
                .all(|l| l.chars().count() <= TEXT_WIDTH || !l.starts_with("  ")),
            "{text}"
        );
        let _ = std::fs::remove_dir_all(&root);
    }

    #[test]
    fn what_the_kernel_lacks_fails() {
        let root = fake_root("fail");
        good_host(&root);
        let cs = "sys/devices/system/clocksource/clocksource0";
        put(&root, &format!("{cs}/current_clocksource"), "jiffies\n");
        std::fs::remove_file(root.join("proc/self/ns/net")).unwrap();
        std::fs::remove_file(root.join("proc/net/packet")).unwrap();
        // 10 of 50 ticks stolen: 20 %.
        let d = doc(&root, &good_live(), "cpu  110 0 55 1025 5 0 10 10 0 0\n");
        for id in [
            CheckId::Clocksource,
            CheckId::Steal,
            CheckId::Namespaces,
            CheckId::AfPacket,
        ] {
            assert_eq!(status(&d, id), Status::Fail, "{id}: {:#?}", d.checks);
        }
        assert_eq!(d.status, Status::Fail);
        let _ = std::fs::remove_dir_all(&root);
    }

    #[test]
    fn the_live_inputs_go_wrong_too() {
        let root = fake_root("live");
        good_host(&root);
        let mut live = good_live();
        live.sleeps.overshoot_p99_ns = 90_000;
        live.slack_lowered = false;
        live.sync.kernel.as_mut().unwrap().synchronised = false;
        live.ip = None;
        let d = doc(&root, &live, QUIET_STAT);
        for id in [
            CheckId::Timer,
            CheckId::TimerSlack,
            CheckId::ClockSync,
            CheckId::Tools,
        ] {
            assert_eq!(status(&d, id), Status::Warn, "{id}: {:#?}", d.checks);
        }
        live.timer_resolution_ns = 4_000_000;
        let d = doc(&root, &live, QUIET_STAT);
        assert_eq!(status(&d, CheckId::Timer), Status::Fail);
        let _ = std::fs::remove_dir_all(&root);
    }

    #[test]
    fn a_vm_without_cpufreq_or_cpuidle_is_told_so_not_failed() {
        let root = fake_root("vm");
        good_host(&root);
        for cpu in 0..4 {
            let dir = root.join(format!("sys/devices/system/cpu/cpu{cpu}"));
            std::fs::remove_dir_all(dir.join("cpufreq")).unwrap();
            std::fs::remove_dir_all(dir.join("cpuidle")).unwrap();
        }
        std::fs::remove_file(root.join("sys/devices/system/cpu/cpuidle/current_driver")).unwrap();
        let d = doc(&root, &good_live(), QUIET_STAT);
        for id in [CheckId::CpuGovernor, CheckId::CpuIdle] {
            let c = d.checks.iter().find(|c| c.id == id).unwrap();
            assert_eq!(c.status, Status::Ok, "{c:?}");
            assert!(c.found.starts_with("not exposed"), "{c:?}");
        }
        assert!(d.figures.governors.is_empty());
        assert_eq!(d.figures.idle_exit_latency_max_ns, None);
        let _ = std::fs::remove_dir_all(&root);
    }

    #[test]
    fn an_empty_or_garbled_tree_is_judged_without_panicking() {
        let root = fake_root("empty");
        let d = doc(&root, &good_live(), QUIET_STAT);
        assert_eq!(d.checks.len(), 12);
        assert_eq!(d.figures.clocksource, None);
        // Garbage in every file read.
        good_host(&root);
        for rel in [
            "sys/devices/system/clocksource/clocksource0/current_clocksource",
            "proc/self/timerslack_ns",
            "sys/devices/system/cpu/cpu0/cpuidle/state1/latency",
            "proc/sys/net/core/rmem_max",
            "proc/sys/net/ipv4/tcp_rmem",
            "proc/self/status",
            "proc/sys/user/max_net_namespaces",
            "sys/devices/system/cpu/online",
        ] {
            std::fs::write(root.join(rel), b"\xff\xfe 9999999999999999999999 -1 \0").unwrap();
        }
        let d = doc(&root, &good_live(), "cpu x y z\n");
        assert_eq!(d.figures.timer_slack_ns, None);
        assert_eq!(d.figures.cpus_online, None);
        assert_eq!(d.figures.cap_net_admin, None);
        assert_eq!(d.figures.steal_pct, None);
        assert_eq!(status(&d, CheckId::Steal), Status::Warn);
        assert_eq!(status(&d, CheckId::Namespaces), Status::Warn);
        let _ = std::fs::remove_dir_all(&root);
    }

    #[test]
    fn cpu_times_are_read_from_the_first_line_alone() {
        let root = fake_root("stat");
        put(&root, "proc/stat", "cpu  1 2 3 4 5 6 7 8 9 10\ncpu0 x\n");
        assert_eq!(
            Host::at(&root).cpu_times(),
            Some(CpuTimes {
                total: 36,
                steal: 8
            })
        );
        let _ = std::fs::remove_dir_all(&root);
    }

    #[test]
    fn long_lines_wrap_under_their_indent() {
        let w = wrap(&"word ".repeat(30), "  ", 20);
        for l in w.lines() {
            assert!(l.chars().count() <= 20, "{w}");
        }
        assert!(w.starts_with("  word word"), "{w}");
        assert!(w.lines().skip(1).all(|l| l.starts_with("    word")), "{w}");
        assert_eq!(wrap("", "  ", 20), "");
        assert_eq!(
            wrap(&"x".repeat(30), "  ", 20),
            format!("  {}\n", "x".repeat(30))
        );
    }
}
