//! `dualperf rfc2544 --lab LAB`: the device between the lab's `sender` (port a) and
//! `receiver` (port b). GRO goes on at the device's two ingress interfaces (a veth takes
//! XDP-transmitted frames only when its peer has NAPI on), the tester's ceiling is
//! measured first on a throwaway veth pair at the same sizes, then per frame size every
//! path runs each test, trial by trial in turn.
//!
//! NAT64 (RFC 8219 single translation): port a sends IPv6 to the NAT64 prefix + b's
//! IPv4 (RFC 6052 §2.2, a /96), which arrives at b as IPv4; b sends IPv4 to a's mapped
//! IPv4 address, 20 bytes shorter, which arrives at a as IPv6 of the path's size. The
//! receivers count by the tag's stream, which translation keeps.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use anyhow::{anyhow, Context, Result};
use lab::dut::{DutKind, DutPath, TesterPortInfo};
use results::bmwg::{self as doc, PathKind, Rfc2544Doc};

use super::driver::{add_entry, key, template, Bench, End, Interrupted, Job};
use super::port::PortWorker;
use super::selftest::{self, Need};
use super::trial::Flow;
use super::{path_name, path_v6, tables, Config};
use crate::usage;

/// RFC 6052 §2.2: `v4` in the last 32 bits of a /96 prefix.
pub(crate) fn embed(prefix: Ipv6Addr, v4: Ipv4Addr) -> Ipv6Addr {
    let mut o = prefix.octets();
    o[12..].copy_from_slice(&v4.octets());
    Ipv6Addr::from(o)
}

/// The paths to run: `--paths`, or the device's own (NAT64 for a tayga).
fn paths(cfg: &Config, p: &DutPath) -> Result<Vec<PathKind>> {
    let list = cfg.paths.clone().unwrap_or_else(|| {
        let mut v = vec![PathKind::Ipv4, PathKind::Ipv6];
        if p.nat64.is_some() {
            v.push(PathKind::Nat64);
        }
        v
    });
    if list.contains(&PathKind::Nat64) && p.nat64.is_none() {
        usage!(
            "--paths nat64: lab '{}' has no NAT64 device (its dut is {}; use a tayga lab such as plans/topologies/dut-tayga.toml)",
            p.lab,
            p.kind.name()
        );
    }
    Ok(list)
}

/// Port `x`'s address of one family.
fn addr(x: &TesterPortInfo, v6: bool) -> Result<IpAddr> {
    let a: Option<IpAddr> = if v6 {
        x.v6.map(Into::into)
    } else {
        x.v4.map(Into::into)
    };
    a.ok_or_else(|| {
        anyhow!(
            "tester port {}/{} has no IPv{} address",
            x.ns,
            x.ifname,
            if v6 { 6 } else { 4 }
        )
    })
}

/// Source and destination of each direction of `path`, and the size of b's frames.
fn addresses(p: &DutPath, path: PathKind, size: usize) -> Result<[(IpAddr, IpAddr, usize); 2]> {
    Ok(match path {
        PathKind::Ipv4 | PathKind::Ipv6 => {
            let v6 = path == PathKind::Ipv6;
            let (a, b) = (addr(&p.a, v6)?, addr(&p.b, v6)?);
            [(a, b, size), (b, a, size)]
        }
        PathKind::Nat64 | PathKind::Nat46 => {
            let n = p.nat64.as_ref().ok_or_else(|| anyhow!("no NAT64 device"))?;
            let IpAddr::V4(b4) = addr(&p.b, false)? else {
                unreachable!("an IPv4 address")
            };
            [
                (addr(&p.a, true)?, IpAddr::V6(embed(n.prefix, b4)), size),
                (b4.into(), IpAddr::V4(n.a_mapped_v4), size - 20),
            ]
        }
    })
}

/// The ceilings `jobs` need: each direction's family and size.
fn needs(p: &DutPath, paths: &[PathKind], cfg: &Config) -> Result<Vec<Need>> {
    let mut out: Vec<Need> = Vec::new();
    for &path in paths {
        for &size in sizes(cfg, path) {
            let dirs = addresses(p, path, size)?;
            for (i, (src, _, sz)) in dirs.iter().enumerate() {
                let n = Need {
                    size: *sz,
                    v6: src.is_ipv6(),
                };
                if (i == 0 || cfg.bidirectional) && !out.contains(&n) {
                    out.push(n);
                }
            }
        }
    }
    out.sort();
    Ok(out)
}

fn sizes(cfg: &Config, path: PathKind) -> &[usize] {
    if path_v6(path) {
        &cfg.sizes_v6
    } else {
        &cfg.sizes_v4
    }
}

/// The highest rate for one direction: the tester's ceiling at its size and family.
fn ceiling(d: &Rfc2544Doc, size: usize, v6: bool) -> Option<u64> {
    d.tester
        .ceiling
        .iter()
        .find(|c| c.frame_size == size as u64 && c.v6 == v6)
        .map(|c| c.fps)
}

/// Turns GRO on at the device's two ingress interfaces, inside its namespace.
fn gro_on(p: &DutPath) -> Result<()> {
    let (ns, ifs) = (p.dut_ns.clone(), p.dut_ifs.clone());
    std::thread::spawn(move || -> Result<()> {
        netio::netns::enter(&ns).with_context(|| format!("entering {ns}"))?;
        for i in &ifs {
            netio::ethtool::set_offload(i, netio::ethtool::Offload::Gro, true)
                .with_context(|| format!("turning GRO on at {ns}/{i}"))?;
        }
        Ok(())
    })
    .join()
    .map_err(|_| anyhow!("the GRO thread panicked"))?
}

/// The jobs of the frame sizes at index `slot` of each path's list, in path order.
fn jobs(
    cfg: &Config,
    p: &DutPath,
    ports: &[PortWorker; 2],
    paths: &[PathKind],
    size_slot: usize,
    d: &mut Rfc2544Doc,
) -> Result<Vec<Job>> {
    let ends = [
        End {
            mac: ports[0].mac,
            next_mac: p.a.gw_mac,
        },
        End {
            mac: ports[1].mac,
            next_mac: p.b.gw_mac,
        },
    ];
    let mut out = Vec::new();
    for (pi, &path) in paths.iter().enumerate() {
        let Some(&size) = sizes(cfg, path).get(size_slot) else {
            continue;
        };
        let dirs = addresses(p, path, size)?;
        let stream = (2 * pi) as u8;
        let mut flows = Vec::new();
        let mut max = u64::MAX;
        for (i, (src, dst, sz)) in dirs.into_iter().enumerate() {
            if i == 1 && !cfg.bidirectional {
                break;
            }
            let s = stream + i as u8;
            flows.push(Flow {
                tx: i,
                rx: 1 - i,
                key: key(path, size, s),
                frame: template(ends[i], src, dst, sz, s, cfg.rfc4814)?,
            });
            max = max.min(ceiling(d, sz, src.is_ipv6()).unwrap_or(cfg.max_rate_fps));
        }
        out.push(Job {
            path,
            size,
            flows,
            max_fps: max.max(1000),
            entry: add_entry(d, path, size, cfg.bidirectional),
        });
    }
    Ok(out)
}

/// `dualperf rfc2544 --lab LAB`.
pub(crate) fn run(cfg: &Config, lab_name: &str) -> Result<()> {
    let p = match lab::dut::dut_path(lab_name) {
        Ok(p) => p,
        Err(e) => usage!("--lab {lab_name}: {e}"),
    };
    let paths = paths(cfg, &p)?;
    let dir = tables::run_dir(cfg)?;
    crate::out::note!("rfc2544 {lab_name}: run directory {}", dir.display());
    let stop = crate::interrupt::flag();
    let save = |d: &Rfc2544Doc| tables::write(&dir, d);
    let kind = match p.kind {
        DutKind::Route => doc::DeviceKind::Route,
        DutKind::Kernel => doc::DeviceKind::Kernel,
        DutKind::Tayga => doc::DeviceKind::Tayga,
        DutKind::Nat44 => doc::DeviceKind::Nat44,
    };
    let mut d = selftest::empty_doc(
        cfg,
        doc::Device {
            name: p.dut_ns.rsplit('.').next().unwrap_or("dut").to_owned(),
            kind,
            lab: Some(p.lab.clone()),
        },
    );
    // The tester's ceiling first, at the sizes and families the paths send.
    let needs = needs(&p, &paths, cfg)?;
    let ceil = selftest::measure(cfg, &needs, stop.clone(), &|_| Ok(()));
    match ceil {
        Ok(c) => d.tester.ceiling = c.tester.ceiling,
        Err(e) if e.is::<Interrupted>() => {
            crate::out::note!("rfc2544 {lab_name}: interrupted during the tester's self-test");
            return Ok(());
        }
        Err(e) => return Err(e.context("measuring the tester's ceiling")),
    }
    save(&d)?;
    gro_on(&p)?;
    let ports = [
        PortWorker::spawn(&p.a.ns, &p.a.ifname)?,
        PortWorker::spawn(&p.b.ns, &p.b.ifname)?,
    ];
    let slots = paths
        .iter()
        .map(|&x| sizes(cfg, x).len())
        .max()
        .unwrap_or(0);
    let mut bench = Bench {
        cfg,
        ports,
        doc: d,
        save: &save,
        stop,
        who: format!("rfc2544 {lab_name}"),
        self_test: false,
    };
    let mut interrupted = false;
    for slot in 0..slots {
        let jobs = jobs(cfg, &p, &bench.ports, &paths, slot, &mut bench.doc)?;
        match bench.all(&jobs) {
            Ok(()) => {}
            Err(e) if e.is::<Interrupted>() => {
                interrupted = true;
                break;
            }
            Err(e) => {
                let _ = save(&bench.doc);
                return Err(e);
            }
        }
    }
    let mut d = bench.doc;
    let capped = d
        .paths
        .iter()
        .filter(|x| x.throughput.as_ref().is_some_and(|t| t.lower_bound))
        .map(|x| format!("{} {} B", path_name(x.path), x.frame_size))
        .collect::<Vec<_>>();
    if !capped.is_empty() {
        d.notes.push(format!(
            "the tester's ceiling capped the NDR of {}: the device forwards at least that",
            capped.join(", ")
        ));
    }
    if interrupted {
        d.notes
            .push("interrupted: the tests after the last completed one are missing".into());
    }
    save(&d)?;
    tables::show(cfg, &d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nat64_frames_go_to_the_prefix_plus_bs_ipv4_and_back_to_as_mapped_address() {
        let prefix: Ipv6Addr = "2001:2:0:6464::".parse().unwrap();
        let b4 = Ipv4Addr::new(198, 18, 2, 2);
        assert_eq!(
            embed(prefix, b4),
            "2001:2:0:6464::c612:202".parse::<Ipv6Addr>().unwrap()
        );
    }
}
