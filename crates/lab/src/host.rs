//! The host a run was measured on, as a run directory's `host.json` records it.

use std::path::Path;

use crate::store::HostInfo;

/// What the host was: kernel, CPU, the sysctls that change IPv4/IPv6 results, loopback's
/// qdisc, the dualperf version (flent's metadata, for one host).
pub fn this_host(target: &str) -> HostInfo {
    let read = |p: &str| {
        std::fs::read_to_string(Path::new(p))
            .ok()
            .map(|s| s.trim().to_owned())
    };
    let cpu = read("/proc/cpuinfo").and_then(|c| {
        c.lines()
            .find(|l| l.starts_with("model name"))
            .and_then(|l| l.split_once(':'))
            .map(|(_, v)| v.trim().to_owned())
    });
    let sysctls = [
        "net/ipv6/auto_flowlabels",
        "net/ipv6/flowlabel_reflect",
        "net/ipv6/flowlabel_consistency",
        "net/ipv4/tcp_congestion_control",
        "net/ipv4/tcp_rmem",
        "net/ipv4/tcp_wmem",
        "net/core/default_qdisc",
        "net/core/rmem_max",
        "net/core/wmem_max",
    ]
    .iter()
    .map(|k| (k.replace('/', "."), read(&format!("/proc/sys/{k}"))))
    .collect();
    let qdisc_lo = std::process::Command::new("tc")
        .args(["qdisc", "show", "dev", "lo"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned());
    HostInfo {
        format_version: crate::store::FORMAT_VERSION,
        dualperf: env!("CARGO_PKG_VERSION").to_owned(),
        kernel: read("/proc/sys/kernel/osrelease"),
        hostname: read("/proc/sys/kernel/hostname"),
        cpu,
        cpus: std::thread::available_parallelism().map(|n| n.get()).ok(),
        sysctls,
        qdisc_lo,
        target: target.to_owned(),
    }
}
