//! `dualperf portcheck --criteria`: the eight criteria of Bouras et al. (H.323 study) for
//! an application ported to IPv6, as a checklist ([`judge`]), from the sources' findings
//! and evidence and from what is seen of a program under test: the sockets it holds
//! (`/proc/PID/fd` matched against `/proc/PID/net/{tcp,tcp6,udp,udp6}`: [`sockets_of`]),
//! probes of its TCP listeners over 127.0.0.1 and ::1 (where: [`probe_targets`]; the
//! binary connects) and the IPv6 flow labels it leases (`/proc/PID/net/ip6_flowlabel`:
//! [`leased_labels`]). This module reads `/proc` but opens no socket and starts no
//! process.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::path::Path;

use serde::Serialize;

use crate::rules::{rule, CRITERIA, EVIDENCE};
use crate::walk::Scan;

/// A socket of the process under test.
#[derive(Clone, Debug, Serialize, schemars::JsonSchema)]
pub struct ProcSocket {
    /// `tcp`, `tcp6`, `udp` or `udp6`: the `/proc/net` table it was found in.
    pub proto: &'static str,
    /// Its local address.
    pub local: SocketAddr,
    /// A TCP listener, or a bound unconnected UDP socket.
    pub listening: bool,
}

/// A probe of a TCP listener over loopback.
#[derive(Clone, Debug, Serialize, schemars::JsonSchema)]
pub struct Probe {
    /// The listener's port.
    pub port: u16,
    /// Where the connection went.
    pub dest: SocketAddr,
    /// The connection was accepted.
    pub accepted: bool,
}

/// What was seen of the program under test.
#[derive(Debug, Default, Serialize, schemars::JsonSchema)]
pub struct Runtime {
    /// Its process id.
    pub pid: u32,
    /// The command it was started with (empty for `--pid`).
    pub command: Vec<String>,
    /// The sockets it holds.
    pub sockets: Vec<ProcSocket>,
    /// The probes of its TCP listeners over loopback.
    pub probes: Vec<Probe>,
    /// The IPv6 flow labels it leases.
    pub flow_labels: Vec<String>,
    /// Set when the program had exited before it could be inspected.
    pub exited: Option<String>,
}

/// One criterion, judged.
#[derive(Debug, Serialize, schemars::JsonSchema)]
pub struct Check {
    /// 1 to 8.
    pub number: usize,
    /// Its short name.
    pub name: &'static str,
    /// What it asks.
    pub what: &'static str,
    /// pass, fail, partial, unknown or manual.
    pub verdict: &'static str,
    /// What it was judged on, one line each.
    pub evidence: Vec<String>,
}

/// Flow labels leased in a namespace (`/proc/PID/net/ip6_flowlabel`), with their owner:
/// a pid for process-shared leases, a uid for user-shared ones, 0 otherwise.
pub fn flow_labels(proc: &Path) -> Vec<(String, u32)> {
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

/// The flow labels of process `pid` (its `/proc` directory `proc`): those it owns, and
/// those not in `baseline` (the labels leased before a program started here ran; shared
/// leases show no owner).
pub fn leased_labels(proc: &Path, pid: u32, baseline: Option<&BTreeSet<String>>) -> Vec<String> {
    flow_labels(proc)
        .into_iter()
        .filter(|(label, owner)| *owner == pid || baseline.is_some_and(|b| !b.contains(label)))
        .map(|(label, _)| label)
        .collect()
}

/// The sockets a process holds (its `/proc` directory `proc`): its descriptors' socket
/// inodes found in its namespace's `/proc/net` tables. Fails when its descriptors cannot
/// be listed.
pub fn sockets_of(proc: &Path) -> io::Result<Vec<ProcSocket>> {
    let mut inodes = Vec::new();
    for e in std::fs::read_dir(proc.join("fd"))? {
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
    Ok(inodes
        .iter()
        .filter_map(|i| table.get(i).cloned())
        .collect())
}

/// Where a TCP listener is probed over loopback: 127.0.0.1 for an IPv4 listener on any
/// or the loopback address, ::1 and 127.0.0.1 for one on `::`, ::1 for one on ::1;
/// nowhere for other sockets.
pub fn probe_targets(s: &ProcSocket) -> Vec<SocketAddr> {
    if !(s.listening && s.proto.starts_with("tcp")) {
        return Vec::new();
    }
    let dests = match s.local.ip() {
        IpAddr::V4(a) if a.is_unspecified() || a.is_loopback() => {
            vec![IpAddr::V4(Ipv4Addr::LOCALHOST)]
        }
        IpAddr::V6(a) if a.is_unspecified() => vec![
            IpAddr::V6(Ipv6Addr::LOCALHOST),
            IpAddr::V4(Ipv4Addr::LOCALHOST),
        ],
        IpAddr::V6(a) if a.is_loopback() => vec![IpAddr::V6(Ipv6Addr::LOCALHOST)],
        _ => Vec::new(),
    };
    dests
        .into_iter()
        .map(|ip| SocketAddr::new(ip, s.local.port()))
        .collect()
}

/// `/proc/net/{tcp,tcp6,udp,udp6}` lines → (inode, socket). Addresses are hex in host
/// byte order per 32-bit word (the kernel prints `__be32` words with `%08X`).
pub fn parse_proc_net(text: &str, proto: &'static str) -> Vec<(String, ProcSocket)> {
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

/// Each of the eight criteria judged from the sources' `scan` and the program's `rt`.
pub fn judge(scan: Option<&Scan>, rt: Option<&Runtime>) -> Vec<Check> {
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

/// `portcheck --criteria --json`: the checks, the program under test, the sources.
#[derive(Debug, Serialize, schemars::JsonSchema)]
pub struct CriteriaDoc<'a> {
    /// The eight criteria, judged.
    pub criteria: &'a [Check],
    /// What was seen of the program under test (`--run` or `--pid`), else null.
    pub runtime: Option<&'a Runtime>,
    /// What the scan of the sources found, when sources were given, else null.
    pub sources: Option<Sources<'a>>,
}

/// The scan's share of `portcheck --criteria --json`.
#[derive(Debug, Serialize, schemars::JsonSchema)]
pub struct Sources<'a> {
    /// Source files read.
    pub files_scanned: u64,
    /// IPv4-dependent sites found in them.
    pub finding_count: usize,
    /// Each evidence identifier and how many files use it.
    pub evidence: &'a BTreeMap<&'static str, u64>,
}

/// `portcheck --criteria --json` as a value (keys sorted).
pub fn json(checks: &[Check], runtime: Option<&Runtime>, scan: Option<&Scan>) -> serde_json::Value {
    let doc = CriteriaDoc {
        criteria: checks,
        runtime,
        sources: scan.map(|s| Sources {
            files_scanned: s.files_scanned,
            finding_count: s.finding_count(),
            evidence: &s.evidence,
        }),
    };
    serde_json::to_value(doc).expect("a criteria document serialises")
}

/// `portcheck --criteria` as text: each check with its evidence, then what was seen of
/// the program under test.
pub fn text(checks: &[Check], runtime: Option<&Runtime>) -> String {
    let mut o = String::from(
        "The eight criteria of Bouras et al. (H.323 study) for an application ported to IPv6:\n\n",
    );
    for c in checks {
        o += &format!("[{:^7}] {}. {} ({})\n", c.verdict, c.number, c.name, c.what);
        for e in &c.evidence {
            o += &format!("            {e}\n");
        }
    }
    if let Some(r) = runtime {
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
    o
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

    #[test]
    fn tcp_listeners_are_probed_over_the_loopback_of_their_families() {
        let s = |proto, local: &str, listening| ProcSocket {
            proto,
            local: local.parse().unwrap(),
            listening,
        };
        let at = |v: &[&str]| -> Vec<SocketAddr> { v.iter().map(|a| a.parse().unwrap()).collect() };
        assert_eq!(
            probe_targets(&s("tcp", "0.0.0.0:80", true)),
            at(&["127.0.0.1:80"])
        );
        assert_eq!(
            probe_targets(&s("tcp", "127.0.0.1:80", true)),
            at(&["127.0.0.1:80"])
        );
        assert_eq!(
            probe_targets(&s("tcp6", "[::]:80", true)),
            at(&["[::1]:80", "127.0.0.1:80"])
        );
        assert_eq!(
            probe_targets(&s("tcp6", "[::1]:80", true)),
            at(&["[::1]:80"])
        );
        assert_eq!(probe_targets(&s("tcp", "198.18.0.1:80", true)), at(&[]));
        assert_eq!(probe_targets(&s("tcp", "0.0.0.0:80", false)), at(&[]));
        assert_eq!(probe_targets(&s("udp", "0.0.0.0:53", true)), at(&[]));
    }
}
