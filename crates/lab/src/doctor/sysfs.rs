//! Reading what the doctor judges from `/proc` and `/sys`, under a root directory, so
//! tests build fake trees in a temporary directory. Every file is read with a size cap
//! and parsed by checked parsers that return `None` (never panic) on anything else.

use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};

/// The most read of any one file (the longest read here, `/proc/self/status`, is about
/// 1.5 KiB; `/proc/stat`'s first line is read alone).
const MAX_FILE_BYTES: u64 = 64 * 1024;
/// The most CPUs (and idle states per CPU) looked at: the kernel's `NR_CPUS` is at
/// most 8192 (arch/x86/Kconfig), and `CPUIDLE_STATE_MAX` is 10
/// (include/linux/cpuidle.h).
const MAX_CPUS: usize = 8192;
const MAX_IDLE_STATES: usize = 10;

/// A host's `/proc` and `/sys`, read from under `root` (`/` for this host).
#[derive(Clone, Debug)]
pub struct Host {
    root: PathBuf,
}

/// One CPU idle state (`/sys/devices/system/cpu/cpuN/cpuidle/stateM/`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IdleState {
    /// Which CPU.
    pub cpu: usize,
    /// `name`, e.g. `C6`.
    pub name: String,
    /// `latency`: its exit latency, µs (Documentation/admin-guide/pm/cpuidle.rst).
    pub latency_us: u64,
    /// `disable` is 1: the governor never picks it.
    pub disabled: bool,
}

/// The aggregate `cpu` line of `/proc/stat`, in ticks of `USER_HZ`
/// (Documentation/filesystems/proc.rst, "1.7 Miscellaneous kernel statistics").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CpuTimes {
    /// user + nice + system + idle + iowait + irq + softirq + steal. `guest` and
    /// `guest_nice` are left out: the kernel already counts them in `user` and `nice`.
    pub total: u64,
    /// `steal`: time a hypervisor ran something else while this guest wanted to run.
    pub steal: u64,
}

/// The socket buffer limits (`/proc/sys/net/…`), bytes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BufferLimits {
    /// `net.core.rmem_max`: the most `SO_RCVBUF` may set.
    pub rmem_max: Option<u64>,
    /// `net.core.wmem_max`: the most `SO_SNDBUF` may set.
    pub wmem_max: Option<u64>,
    /// `net.ipv4.tcp_rmem`'s third field: the most TCP receive autotuning grows to.
    pub tcp_rmem_max: Option<u64>,
    /// `net.ipv4.tcp_wmem`'s third field: the most TCP send autotuning grows to.
    pub tcp_wmem_max: Option<u64>,
}

/// The process's effective capabilities (`CapEff` of `/proc/self/status`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Caps(pub u64);

impl Caps {
    /// `CAP_NET_ADMIN` (include/uapi/linux/capability.h).
    const NET_ADMIN: u32 = 12;
    /// `CAP_NET_RAW` (include/uapi/linux/capability.h).
    const NET_RAW: u32 = 13;

    /// `CAP_NET_ADMIN` is among them.
    pub fn net_admin(self) -> bool {
        self.0 >> Self::NET_ADMIN & 1 == 1
    }

    /// `CAP_NET_RAW` is among them.
    pub fn net_raw(self) -> bool {
        self.0 >> Self::NET_RAW & 1 == 1
    }
}

impl Host {
    /// This host.
    pub fn this() -> Self {
        Self::at(Path::new("/"))
    }

    /// The tree under `root`.
    pub fn at(root: &Path) -> Self {
        Self {
            root: root.to_owned(),
        }
    }

    fn path(&self, rel: &str) -> PathBuf {
        self.root.join(rel)
    }

    /// A file's text, trimmed; `None` if unreadable, not UTF-8 or empty.
    fn text(&self, rel: &str) -> Option<String> {
        read_capped(&self.path(rel))
    }

    /// The current clocksource and those available: clocksource0's
    /// `current_clocksource` and `available_clocksource` (space-separated), the
    /// attributes of kernel/time/clocksource.c.
    pub fn clocksource(&self) -> (Option<String>, Vec<String>) {
        const DIR: &str = "sys/devices/system/clocksource/clocksource0";
        let current = self.text(&format!("{DIR}/current_clocksource"));
        let available = self
            .text(&format!("{DIR}/available_clocksource"))
            .map(|t| t.split_whitespace().take(64).map(str::to_owned).collect())
            .unwrap_or_default();
        (current, available)
    }

    /// `/proc/self/timerslack_ns` (Linux 4.6, Documentation/filesystems/proc.rst).
    pub fn timer_slack_ns(&self) -> Option<u64> {
        parse_u64(&self.text("proc/self/timerslack_ns")?)
    }

    /// The CPU numbers that have a `cpuN` directory, sorted.
    fn cpus(&self) -> Vec<usize> {
        let Ok(entries) = std::fs::read_dir(self.path("sys/devices/system/cpu")) else {
            return Vec::new();
        };
        let mut cpus: Vec<usize> = entries
            .filter_map(|e| e.ok())
            .filter_map(|e| {
                let name = e.file_name();
                let n = name.to_str()?.strip_prefix("cpu")?;
                if n.is_empty() || !n.bytes().all(|b| b.is_ascii_digit()) {
                    return None;
                }
                n.parse::<usize>().ok().filter(|&n| n < MAX_CPUS)
            })
            .collect();
        cpus.sort_unstable();
        cpus
    }

    /// Each CPU's `cpufreq/scaling_governor`, where it has one (none in most VMs).
    pub fn governors(&self) -> Vec<(usize, String)> {
        self.cpus()
            .into_iter()
            .filter_map(|cpu| {
                let g = self.text(&format!(
                    "sys/devices/system/cpu/cpu{cpu}/cpufreq/scaling_governor"
                ))?;
                // A governor's name is one word (CPUFREQ_NAME_LEN is 16).
                (g.len() <= 16 && !g.contains(char::is_whitespace)).then_some((cpu, g))
            })
            .collect()
    }

    /// The cpuidle driver (`cpuidle/current_driver`; `none` when there is none) and
    /// every CPU's idle states whose `name` and `latency` read.
    pub fn idle(&self) -> (Option<String>, Vec<IdleState>) {
        let driver = self.text("sys/devices/system/cpu/cpuidle/current_driver");
        let mut states = Vec::new();
        for cpu in self.cpus() {
            for i in 0..MAX_IDLE_STATES {
                let dir = format!("sys/devices/system/cpu/cpu{cpu}/cpuidle/state{i}");
                if !self.path(&dir).is_dir() {
                    break;
                }
                let (Some(name), Some(latency_us)) = (
                    self.text(&format!("{dir}/name")),
                    self.text(&format!("{dir}/latency"))
                        .as_deref()
                        .and_then(parse_u64),
                ) else {
                    continue;
                };
                let disabled = self
                    .text(&format!("{dir}/disable"))
                    .as_deref()
                    .and_then(parse_u64)
                    .is_some_and(|d| d != 0);
                states.push(IdleState {
                    cpu,
                    name,
                    latency_us,
                    disabled,
                });
            }
        }
        (driver, states)
    }

    /// `/proc/stat`'s aggregate `cpu` line.
    pub fn cpu_times(&self) -> Option<CpuTimes> {
        let file = std::fs::File::open(self.path("proc/stat")).ok()?;
        let mut line = String::new();
        BufReader::new(file.take(MAX_FILE_BYTES))
            .read_line(&mut line)
            .ok()?;
        parse_stat_cpu(&line)
    }

    /// The socket buffer limits.
    pub fn buffer_limits(&self) -> BufferLimits {
        let one = |rel: &str| self.text(rel).as_deref().and_then(parse_u64);
        let third = |rel: &str| self.text(rel).as_deref().and_then(parse_triple_max);
        BufferLimits {
            rmem_max: one("proc/sys/net/core/rmem_max"),
            wmem_max: one("proc/sys/net/core/wmem_max"),
            tcp_rmem_max: third("proc/sys/net/ipv4/tcp_rmem"),
            tcp_wmem_max: third("proc/sys/net/ipv4/tcp_wmem"),
        }
    }

    /// The process's effective capabilities.
    pub fn caps(&self) -> Option<Caps> {
        parse_cap_eff(&self.text("proc/self/status")?)
    }

    /// Whether the kernel has network namespaces: `/proc/self/ns/net` exists
    /// (CONFIG_NET_NS; namespaces(7)). A magic link: looked at, not followed.
    pub fn has_net_ns(&self) -> bool {
        std::fs::symlink_metadata(self.path("proc/self/ns/net")).is_ok()
    }

    /// `/proc/sys/user/max_net_namespaces`: how many network namespaces a user may
    /// make (0 forbids them; namespaces(7), "/proc/sys/user").
    pub fn max_net_namespaces(&self) -> Option<u64> {
        parse_u64(&self.text("proc/sys/user/max_net_namespaces")?)
    }

    /// Whether the kernel has packet sockets: `/proc/net/packet` exists (CONFIG_PACKET,
    /// packet(7)).
    pub fn has_packet_sockets(&self) -> bool {
        self.path("proc/net/packet").is_file()
    }

    /// How many CPUs are online (`/sys/devices/system/cpu/online`, a CPU list:
    /// Documentation/ABI/stable/sysfs-devices-system-cpu).
    pub fn cpus_online(&self) -> Option<usize> {
        parse_cpu_list(&self.text("sys/devices/system/cpu/online")?)
    }
}

/// `path`'s text, at most [`MAX_FILE_BYTES`], trimmed; `None` if unreadable, not UTF-8
/// or empty.
fn read_capped(path: &Path) -> Option<String> {
    let mut bytes = Vec::new();
    std::fs::File::open(path)
        .ok()?
        .take(MAX_FILE_BYTES)
        .read_to_end(&mut bytes)
        .ok()?;
    let text = String::from_utf8(bytes).ok()?;
    let text = text.trim();
    (!text.is_empty()).then(|| text.to_owned())
}

/// A decimal number, surrounding whitespace allowed.
pub(crate) fn parse_u64(text: &str) -> Option<u64> {
    let t = text.trim();
    if t.is_empty() || !t.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    t.parse().ok()
}

/// The third of three numbers (`tcp_rmem`: min, default, max; ip-sysctl.rst).
pub(crate) fn parse_triple_max(text: &str) -> Option<u64> {
    let fields: Vec<&str> = text.split_whitespace().collect();
    match fields.as_slice() {
        [a, b, c] => {
            parse_u64(a)?;
            parse_u64(b)?;
            parse_u64(c)
        }
        _ => None,
    }
}

/// `CapEff:` of a `/proc/PID/status`, read as the lab's preflight reads it.
pub(crate) fn parse_cap_eff(status: &str) -> Option<Caps> {
    crate::netlab::cap_eff(status).map(Caps)
}

/// The aggregate `cpu` line of `/proc/stat`: `cpu user nice system idle iowait irq
/// softirq steal guest guest_nice`. Kernels before 2.6.11 have no `steal` field: no
/// times then. Sums saturate.
pub(crate) fn parse_stat_cpu(line: &str) -> Option<CpuTimes> {
    let mut fields = line.split_whitespace();
    if fields.next()? != "cpu" {
        return None;
    }
    let values: Vec<u64> = fields.take(10).map(parse_u64).collect::<Option<_>>()?;
    if values.len() < 8 {
        return None;
    }
    let total = values[..8].iter().fold(0u64, |a, &v| a.saturating_add(v));
    Some(CpuTimes {
        total,
        steal: values[7],
    })
}

/// How many CPUs a CPU list names (`0-3,6,8-9` is 7): ranges and single numbers,
/// comma-separated. `None` if malformed (a range backwards, a number over `NR_CPUS`).
pub(crate) fn parse_cpu_list(text: &str) -> Option<usize> {
    let mut n = 0usize;
    for part in text.trim().split(',') {
        let (a, b) = match part.split_once('-') {
            Some((a, b)) => (parse_u64(a)?, parse_u64(b)?),
            None => {
                let a = parse_u64(part)?;
                (a, a)
            }
        };
        if a > b || b >= MAX_CPUS as u64 {
            return None;
        }
        n = n.checked_add(usize::try_from(b - a + 1).ok()?)?;
    }
    Some(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parsers_read_what_the_kernel_writes() {
        assert_eq!(parse_u64(" 4194304\n"), Some(4_194_304));
        assert_eq!(parse_triple_max("4096\t131072\t33554432"), Some(33_554_432));
        let status = "Name:\tcat\nCapInh:\t0000000000000000\nCapEff:\t000001fffeffffff\n";
        let caps = parse_cap_eff(status).unwrap();
        assert!(caps.net_admin() && caps.net_raw());
        let caps = parse_cap_eff("CapEff:\t0000000000000000\n").unwrap();
        assert!(!caps.net_admin() && !caps.net_raw());
        // CAP_NET_ADMIN alone: bit 12.
        let caps = parse_cap_eff("CapEff:\t0000000000001000").unwrap();
        assert!(caps.net_admin() && !caps.net_raw());
        assert_eq!(
            parse_stat_cpu("cpu  6067396 1358 2332969 4400366 24773 0 258726 2314 0 0\n"),
            Some(CpuTimes {
                total: 6_067_396 + 1_358 + 2_332_969 + 4_400_366 + 24_773 + 258_726 + 2_314,
                steal: 2_314,
            })
        );
        assert_eq!(parse_cpu_list("0-1\n"), Some(2));
        assert_eq!(parse_cpu_list("0-3,6,8-9"), Some(7));
        assert_eq!(parse_cpu_list("0"), Some(1));
    }

    #[test]
    fn parsers_refuse_junk_without_panicking() {
        for junk in [
            "",
            "-1",
            "1.5",
            "0x10",
            "99999999999999999999999",
            "abc",
            "\u{0}",
        ] {
            assert_eq!(parse_u64(junk), None, "{junk:?}");
        }
        for junk in ["", "1 2", "1 2 3 4", "a b c", "1 2 -3"] {
            assert_eq!(parse_triple_max(junk), None, "{junk:?}");
        }
        for junk in [
            "",
            "CapEff:",
            "CapEff:\tzz",
            "CapEff:\t00000000000000000000001",
            "CapPrm:\t1",
        ] {
            assert_eq!(parse_cap_eff(junk), None, "{junk:?}");
        }
        for junk in [
            "",
            "cpu",
            "cpu0 1 2 3 4 5 6 7 8",
            "cpu 1 2 3 4 5 6 7",
            "cpu 1 2 3 x 5 6 7 8",
            "intr 1 2 3",
        ] {
            assert_eq!(parse_stat_cpu(junk), None, "{junk:?}");
        }
        let max = u64::MAX.to_string();
        let huge = format!("cpu {max} {max} {max} {max} {max} {max} {max} {max}");
        assert_eq!(parse_stat_cpu(&huge).map(|t| t.total), Some(u64::MAX));
        for junk in [
            "",
            ",",
            "3-1",
            "0-",
            "-3",
            "0-9999999",
            "a",
            "0,,1",
            "1-2-3",
        ] {
            assert_eq!(parse_cpu_list(junk), None, "{junk:?}");
        }
    }
}
