//! `dualperf portcheck --criteria`: the eight criteria of Bouras et al. (H.323 study) for an application ported
//! to IPv6, as a checklist. Each criterion gets what can be known automatically:
//! - from the sources (if paths are given): the findings of the rules that bear on it,
//!   and the IPv6 identifiers that show its IPv6 side is handled;
//! - from a program under test (started after `--`, or `--pid`): the sockets it holds
//!   (`/proc/PID/fd` matched against `/proc/PID/net/{tcp,tcp6,udp,udp6}`), probes of
//!   its TCP listeners over 127.0.0.1 and ::1, and the IPv6 flow labels it leases
//!   (`/proc/PID/net/ip6_flowlabel`: those it owns, and, for a program started here,
//!   those that appeared in its namespace while it ran — shared leases show no owner);
//! - and what stays a manual check, said as such.

use std::collections::{BTreeMap, HashMap};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, TcpStream};
use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context, Result};
use port::rules::{rule, CRITERIA, EVIDENCE};
use port::walk::{scan_paths, Options, Scan};
use serde::Serialize;

use super::PortcheckArgs;

/// A socket of the process under test.
#[derive(Clone, Debug, Serialize)]
pub(crate) struct ProcSocket {
    pub proto: &'static str,
    pub local: SocketAddr,
    pub listening: bool,
}

/// A probe of a TCP listener over loopback.
#[derive(Clone, Debug, Serialize)]
struct Probe {
    port: u16,
    dest: SocketAddr,
    accepted: bool,
}

#[derive(Debug, Default, Serialize)]
struct Runtime {
    pid: u32,
    command: Vec<String>,
    sockets: Vec<ProcSocket>,
    probes: Vec<Probe>,
    flow_labels: Vec<String>,
    /// Set when the program had exited before it could be inspected.
    exited: Option<String>,
}

#[derive(Debug, Serialize)]
struct Check {
    number: usize,
    name: &'static str,
    what: &'static str,
    /// pass, fail, partial, unknown or manual.
    verdict: &'static str,
    evidence: Vec<String>,
}

pub(super) fn run(args: &PortcheckArgs, opts: &Options) -> Result<()> {
    let scan = (!args.paths.is_empty()).then(|| scan_paths(&args.paths, opts));
    let runtime = if let Some(pid) = args.pid {
        Some(inspect(pid, Vec::new(), None)?)
    } else if !args.command.is_empty() {
        Some(run_and_inspect(&args.command, args.settle)?)
    } else {
        None
    };
    if scan.is_none() && runtime.is_none() {
        crate::usage!(
            "--criteria needs sources (PATH…) or a program under test (after `--`, or --pid)"
        );
    }
    let checks = judge(scan.as_ref(), runtime.as_ref());
    if args.json || args.format == super::Format::Json {
        return crate::out::print_json(&serde_json::json!({
            "criteria": checks,
            "runtime": runtime,
            "sources": scan.as_ref().map(|s| serde_json::json!({
                "files_scanned": s.files_scanned,
                "finding_count": s.finding_count(),
                "evidence": s.evidence,
            })),
        }));
    }
    let mut o = String::from(
        "The eight criteria of Bouras et al. (H.323 study) for an application ported to IPv6:\n\n",
    );
    for c in &checks {
        o += &format!("[{:^7}] {}. {} ({})\n", c.verdict, c.number, c.name, c.what);
        for e in &c.evidence {
            o += &format!("            {e}\n");
        }
    }
    if let Some(r) = &runtime {
        o += &format!("\nProgram under test (pid {}):\n", r.pid);
        for s in &r.sockets {
            o += &format!(
                "  {} {}{}\n",
                s.proto,
                s.local,
                if s.listening { " (listening)" } else { "" }
            );
        }
        for p in &r.probes {
            o += &format!(
                "  probe {} → {}\n",
                p.dest,
                if p.accepted { "accepted" } else { "refused" }
            );
        }
    }
    crate::out::print(o)
}

fn run_and_inspect(command: &[String], settle: Duration) -> Result<Runtime> {
    let baseline: std::collections::BTreeSet<String> =
        flow_labels(std::path::Path::new("/proc/self"))
            .into_iter()
            .map(|(label, _)| label)
            .collect();
    let mut child = std::process::Command::new(&command[0])
        .args(&command[1..])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .with_context(|| format!("starting {}", command[0]))?;
    std::thread::sleep(settle);
    let result = match child.try_wait()? {
        Some(status) => Ok(Runtime {
            pid: child.id(),
            command: command.to_vec(),
            exited: Some(format!("exited before inspection ({status})")),
            ..Runtime::default()
        }),
        None => inspect(child.id(), command.to_vec(), Some(&baseline)),
    };
    let _ = child.kill();
    let _ = child.wait();
    result
}

/// Flow labels leased in a namespace (`/proc/PID/net/ip6_flowlabel`), with their owner:
/// a pid for process-shared leases, a uid for user-shared ones, 0 otherwise.
fn flow_labels(proc: &std::path::Path) -> Vec<(String, u32)> {
    let text = std::fs::read_to_string(proc.join("net/ip6_flowlabel")).unwrap_or_default();
    text.lines()
        .skip(1)
        .filter_map(|l| {
            let mut f = l.split_whitespace();
            let label = f.next()?.to_string();
            let owner = f.nth(1)?.parse().ok()?;
            Some((label, owner))
        })
        .collect()
}

fn inspect(
    pid: u32,
    command: Vec<String>,
    baseline: Option<&std::collections::BTreeSet<String>>,
) -> Result<Runtime> {
    let proc = PathBuf::from(format!("/proc/{pid}"));
    let mut inodes = Vec::new();
    for e in
        std::fs::read_dir(proc.join("fd")).with_context(|| format!("reading /proc/{pid}/fd"))?
    {
        if let Ok(target) = std::fs::read_link(e?.path()) {
            let t = target.to_string_lossy();
            if let Some(n) = t.strip_prefix("socket:[").and_then(|r| r.strip_suffix(']')) {
                inodes.push(n.to_string());
            }
        }
    }
    let mut table: HashMap<String, ProcSocket> = HashMap::new();
    for (file, proto) in [
        ("tcp", "tcp"),
        ("tcp6", "tcp6"),
        ("udp", "udp"),
        ("udp6", "udp6"),
    ] {
        let text = std::fs::read_to_string(proc.join("net").join(file)).unwrap_or_default();
        for (inode, s) in parse_proc_net(&text, proto) {
            table.insert(inode, s);
        }
    }
    // A socket shared by two descriptors (dup, fork) is one socket.
    inodes.sort_unstable();
    inodes.dedup();
    let sockets: Vec<ProcSocket> = inodes
        .iter()
        .filter_map(|i| table.get(i).cloned())
        .collect();
    let mut probes = Vec::new();
    for s in sockets
        .iter()
        .filter(|s| s.listening && s.proto.starts_with("tcp"))
    {
        let port = s.local.port();
        let mut dests = Vec::new();
        match s.local.ip() {
            IpAddr::V4(a) if a.is_unspecified() || a.is_loopback() => {
                dests.push(IpAddr::V4(Ipv4Addr::LOCALHOST))
            }
            IpAddr::V6(a) if a.is_unspecified() => dests.extend([
                IpAddr::V6(Ipv6Addr::LOCALHOST),
                IpAddr::V4(Ipv4Addr::LOCALHOST),
            ]),
            IpAddr::V6(a) if a.is_loopback() => dests.push(IpAddr::V6(Ipv6Addr::LOCALHOST)),
            _ => {}
        }
        for ip in dests {
            let dest = SocketAddr::new(ip, port);
            let accepted = TcpStream::connect_timeout(&dest, Duration::from_secs(1)).is_ok();
            probes.push(Probe {
                port,
                dest,
                accepted,
            });
        }
    }
    let flow_labels = flow_labels(&proc)
        .into_iter()
        .filter(|(label, owner)| *owner == pid || baseline.is_some_and(|b| !b.contains(label)))
        .map(|(label, _)| label)
        .collect();
    Ok(Runtime {
        pid,
        command,
        sockets,
        probes,
        flow_labels,
        exited: None,
    })
}

/// `/proc/net/{tcp,tcp6,udp,udp6}` lines → (inode, socket). Addresses are hex in host
/// byte order per 32-bit word (the kernel prints `__be32` words with `%08X`).
pub(crate) fn parse_proc_net(text: &str, proto: &'static str) -> Vec<(String, ProcSocket)> {
    let mut out = Vec::new();
    for line in text.lines().skip(1) {
        let f: Vec<&str> = line.split_whitespace().collect();
        let (Some(local), Some(state), Some(inode)) = (f.get(1), f.get(3), f.get(9)) else {
            continue;
        };
        let Some(local) = parse_hex_addr(local) else {
            continue;
        };
        // TCP_LISTEN is 0x0A; an unconnected bound UDP socket shows 07 (TCP_CLOSE).
        let listening = if proto.starts_with("tcp") {
            *state == "0A"
        } else {
            *state == "07"
        };
        out.push((
            inode.to_string(),
            ProcSocket {
                proto,
                local,
                listening,
            },
        ));
    }
    out
}

fn parse_hex_addr(s: &str) -> Option<SocketAddr> {
    let (addr, port) = s.split_once(':')?;
    let port = u16::from_str_radix(port, 16).ok()?;
    let word = |i: usize| -> Option<[u8; 4]> {
        Some(
            u32::from_str_radix(addr.get(i * 8..i * 8 + 8)?, 16)
                .ok()?
                .to_le_bytes(),
        )
    };
    let ip = match addr.len() {
        8 => IpAddr::V4(Ipv4Addr::from(word(0)?)),
        32 => {
            let mut b = [0u8; 16];
            for i in 0..4 {
                b[i * 4..i * 4 + 4].copy_from_slice(&word(i)?);
            }
            IpAddr::V6(Ipv6Addr::from(b))
        }
        _ => return None,
    };
    Some(SocketAddr::new(ip, port))
}

fn judge(scan: Option<&Scan>, rt: Option<&Runtime>) -> Vec<Check> {
    let mut by_criterion: BTreeMap<u8, BTreeMap<&'static str, usize>> = BTreeMap::new();
    if let Some(s) = scan {
        // Every rule that matched, the reported one and those listed with it.
        for (_, f) in s.findings() {
            for r in std::iter::once(f.rule)
                .chain(f.also.iter().copied())
                .filter_map(rule)
            {
                *by_criterion
                    .entry(r.criterion)
                    .or_default()
                    .entry(r.id)
                    .or_default() += 1;
            }
        }
    }
    let v6_sockets = rt.map(|r| r.sockets.iter().filter(|s| s.local.is_ipv6()).count());
    let v4_sockets = rt.map(|r| r.sockets.iter().filter(|s| s.local.is_ipv4()).count());
    let probe = |want_v6: bool| {
        rt.map(|r| {
            r.probes
                .iter()
                .filter(|p| p.dest.is_ipv6() == want_v6)
                .map(|p| p.accepted)
                .collect::<Vec<_>>()
        })
    };
    let (v6_probes, v4_probes) = (probe(true), probe(false));
    let dual_listener = rt.is_some_and(|r| {
        r.sockets
            .iter()
            .filter(|s| s.listening && s.local.is_ipv6())
            .any(|s| {
                r.probes
                    .iter()
                    .any(|p| p.port == s.local.port() && p.dest.is_ipv4() && p.accepted)
            })
    });
    (1..=8u8)
        .map(|n| {
            let (name, what) = CRITERIA[usize::from(n) - 1];
            let mut evidence = Vec::new();
            let mut fail = false;
            let mut pass = false;
            if let Some(s) = scan {
                let found = by_criterion.get(&n);
                if let Some(found) = found {
                    fail = true;
                    let list: Vec<String> = found.iter().map(|(id, k)| format!("{id} ×{k}")).collect();
                    evidence.push(format!("sources: {} finding(s): {}", found.values().sum::<usize>(), list.join(", ")));
                }
                let names = EVIDENCE.iter().find(|(c, _)| *c == n).map_or(&[][..], |(_, v)| *v);
                let seen: Vec<String> = names
                    .iter()
                    .filter_map(|id| s.evidence.get(id).map(|k| format!("{id} ({k} files)")))
                    .collect();
                if !seen.is_empty() {
                    pass = true;
                    evidence.push(format!("sources use: {}", seen.join(", ")));
                } else if found.is_none() {
                    evidence.push("sources: no finding and no IPv6 evidence".into());
                }
            }
            if let Some(r) = rt {
                if let Some(e) = &r.exited {
                    evidence.push(format!("program {e}"));
                }
                match n {
                    1 => {
                        if v6_sockets == Some(0) {
                            fail = true;
                            evidence.push("program: no IPv6 socket".into());
                        } else if v6_probes.as_ref().is_some_and(|p| p.contains(&true)) {
                            pass = true;
                            evidence.push("program: accepted a TCP connection over ::1".into());
                        } else if v6_sockets.unwrap_or(0) > 0 {
                            pass = true;
                            evidence.push(format!("program: {} IPv6 socket(s)", v6_sockets.unwrap_or(0)));
                        }
                    }
                    2 => {
                        if r.flow_labels.is_empty() {
                            evidence.push("program: no flow label leased now (labels set per packet with IPV6_FLOWINFO_SEND without a lease are not visible)".into());
                        } else {
                            pass = true;
                            evidence.push(format!("program: leases flow label(s) {}", r.flow_labels.join(", ")));
                        }
                    }
                    3 if v6_sockets == Some(0) && v4_sockets.unwrap_or(0) > 0 => {
                        fail = true;
                        evidence.push("program: IPv4 sockets only".into());
                    }
                    4 | 6 => {
                        let both = v4_probes.as_ref().is_some_and(|p| p.contains(&true)) && v6_probes.as_ref().is_some_and(|p| p.contains(&true));
                        if dual_listener {
                            pass = true;
                            evidence.push("program: one IPv6 listener accepts IPv4 too (IPV6_V6ONLY off: ::ffff: peers)".into());
                        } else if both {
                            pass = true;
                            evidence.push("program: one process serves IPv4 and IPv6 (a listener per family)".into());
                        } else if v4_probes.as_ref().is_some_and(|p| !p.is_empty()) || v6_probes.as_ref().is_some_and(|p| !p.is_empty()) {
                            fail = true;
                            evidence.push("program: its TCP listeners answer one family only".into());
                        }
                    }
                    _ => {}
                }
            }
            let verdict = match (pass, fail) {
                (true, true) => "partial",
                (true, false) => "pass",
                (false, true) => "fail",
                (false, false) if matches!(n, 5 | 7 | 8) && scan.is_none() => "manual",
                (false, false) => "unknown",
            };
            if matches!(n, 5 | 7) {
                evidence.push(match n {
                    5 => "manual: give it `[2001:db8::1]:80`-style input; `dualperf interop` shows how this host's resolver and sockets treat bracketed literals".into(),
                    _ => "manual: give it a name with an unreachable AAAA and a working A; `dualperf interop` shows RFC 6724 order and Happy Eyeballs here".into(),
                });
            }
            Check {
                number: usize::from(n),
                name,
                what,
                verdict,
                evidence,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proc_net_lines_are_decoded() {
        let tcp = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n   0: 0100007F:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 12345 1 0000000000000000 100 0 0 10 0\n";
        let v = parse_proc_net(tcp, "tcp");
        assert_eq!(v[0].0, "12345");
        assert_eq!(v[0].1.local, "127.0.0.1:8080".parse().unwrap());
        assert!(v[0].1.listening);
        let tcp6 = "header\n   0: 00000000000000000000000001000000:1F90 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 777 1\n   1: 0000000000000000FFFF00000100007F:0016 00000000000000000000000000000000:0000 01 0 0 0 0 0 778 1\n";
        let v = parse_proc_net(tcp6, "tcp6");
        assert_eq!(v[0].1.local, "[::1]:8080".parse().unwrap());
        assert_eq!(v[1].1.local, "[::ffff:127.0.0.1]:22".parse().unwrap());
        assert!(!v[1].1.listening);
        assert!(parse_proc_net("h\n 0: zz:1 0 0A 0 0 0 0 0 1\n", "tcp").is_empty());
    }
}
