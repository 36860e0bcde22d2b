//! The tester alone (siitperf's "X = Y" self-test): its two ports back to back on a
//! veth pair between two throwaway namespaces `dp-rfc2544-PID.a` and `.b` (removed by a
//! guard, also after an error or Ctrl-C), and per frame size and family the highest rate
//! at which the generator keeps its schedule and the receiver counts every frame: the
//! throughput search with no device. A device figure at that ceiling is a lower bound.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::process::Command;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use anyhow::{bail, Context, Result};
use results::bmwg::{self as doc, Ceiling, PathKind, Rfc2544Doc};

use super::driver::{add_entry, key, template, Bench, End, Interrupted, Job};
use super::port::PortWorker;
use super::trial::Flow;
use super::{tables, Config, Tests, Timing};

/// The veth pair's two namespaces, deleted on drop.
pub(crate) struct VethPair {
    pub ns: [String; 2],
}

pub(crate) const IFNAMES: [&str; 2] = ["tester-a", "tester-b"];

fn ip(args: &[&str]) -> Result<()> {
    let out = Command::new("ip")
        .args(args)
        .output()
        .context("running ip (iproute2)")?;
    if !out.status.success() {
        bail!(
            "ip {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(())
}

impl VethPair {
    /// Two namespaces joined by `tester-a` — `tester-b`, both up.
    pub fn create() -> Result<VethPair> {
        let base = format!("dp-rfc2544-{}", std::process::id());
        let pair = VethPair {
            ns: [format!("{base}.a"), format!("{base}.b")],
        };
        for n in &pair.ns {
            let _ = Command::new("ip").args(["netns", "del", n]).output();
            ip(&["netns", "add", n])?;
        }
        let [a, b] = &pair.ns;
        ip(&[
            "-n", a, "link", "add", IFNAMES[0], "type", "veth", "peer", "name", IFNAMES[1],
            "netns", b,
        ])?;
        ip(&["-n", a, "link", "set", IFNAMES[0], "up"])?;
        ip(&["-n", b, "link", "set", IFNAMES[1], "up"])?;
        Ok(pair)
    }
}

impl Drop for VethPair {
    fn drop(&mut self) {
        for n in &self.ns {
            let _ = Command::new("ip").args(["netns", "del", n]).output();
        }
    }
}

/// The self-test's first trials: 100 ms.
const SELF_TEST_INITIAL_NS: u64 = 100_000_000;

/// The self-test's final trials: at most 5 s (a full run's 60 s would make the ceiling
/// of fourteen sizes and families take an hour).
const SELF_TEST_FINAL_NS: u64 = 5_000_000_000;

/// With `--quick`, at most 1 s: a generator that cannot keep a rate falls behind by
/// 2 % of a trial (the late limit) well within it, and the device's own 2 s trials find
/// a ceiling set a little high (the search lowers it where the tester falls behind).
const SELF_TEST_QUICK_FINAL_NS: u64 = 1_000_000_000;

/// A frame size and family whose ceiling is wanted.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Need {
    pub size: usize,
    pub v6: bool,
}

const A4: Ipv4Addr = Ipv4Addr::new(198, 18, 0, 1);
const B4: Ipv4Addr = Ipv4Addr::new(198, 18, 0, 2);
const A6: Ipv6Addr = Ipv6Addr::new(0x2001, 2, 0, 0, 0, 0, 0, 1);
const B6: Ipv6Addr = Ipv6Addr::new(0x2001, 2, 0, 0, 0, 0, 0, 2);

/// The self-test's jobs on `ports`: one per need, port a to b (and b to a).
fn jobs(
    cfg: &Config,
    ports: &[PortWorker; 2],
    needs: &[Need],
    d: &mut Rfc2544Doc,
) -> Result<Vec<Job>> {
    let ends = [
        End {
            mac: ports[0].mac,
            next_mac: ports[1].mac,
        },
        End {
            mac: ports[1].mac,
            next_mac: ports[0].mac,
        },
    ];
    let mut out = Vec::new();
    for (i, n) in needs.iter().enumerate() {
        let path = if n.v6 { PathKind::Ipv6 } else { PathKind::Ipv4 };
        let (a, b): (IpAddr, IpAddr) = if n.v6 {
            (A6.into(), B6.into())
        } else {
            (A4.into(), B4.into())
        };
        let stream = (2 * i % 256) as u8;
        let mut flows = vec![Flow {
            tx: 0,
            rx: 1,
            key: key(path, n.size, stream),
            frame: template(ends[0], a, b, n.size, stream, cfg.rfc4814)?,
        }];
        if cfg.bidirectional {
            flows.push(Flow {
                tx: 1,
                rx: 0,
                key: key(path, n.size, stream + 1),
                frame: template(ends[1], b, a, n.size, stream + 1, cfg.rfc4814)?,
            });
        }
        out.push(Job {
            path,
            size: n.size,
            flows,
            max_fps: cfg.max_rate_fps,
            entry: add_entry(d, path, n.size, cfg.bidirectional),
        });
    }
    Ok(out)
}

/// The self-test's document before anything is measured.
pub(crate) fn empty_doc(cfg: &Config, device: doc::Device) -> Rfc2544Doc {
    let t = &cfg.timing;
    Rfc2544Doc {
        schema: doc::RFC2544_SCHEMA.into(),
        device,
        tester: doc::Tester {
            method: "xdp-live-frames".into(),
            ceiling: Vec::new(),
            cpu: cpu(),
        },
        settings: doc::Settings {
            quick: cfg.quick,
            initial_duration_ns: t.initial_ns,
            final_duration_ns: t.final_ns,
            pdr_ratio: t.pdr_ratio,
            precision: t.precision,
            timeout_ns: t.timeout_ns,
            bidirectional: cfg.bidirectional,
            rfc4814_ports: cfg.rfc4814,
            ramp_ns: t.ramp_ns,
            b2b_repeats: t.b2b_repeats,
        },
        paths: Vec::new(),
        notes: Vec::new(),
    }
}

/// `/proc/cpuinfo`'s model name.
fn cpu() -> String {
    std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|c| {
            c.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split_once(':'))
                .map(|(_, v)| v.trim().to_owned())
        })
        .unwrap_or_else(|| "unknown".into())
}

/// Measures the ceilings of `needs` on a throwaway veth pair: a document whose paths are
/// the searches and whose `tester.ceiling` their NDRs. `Interrupted` inside the error
/// when Ctrl-C stopped it (the document so far is in `save`'s last call).
pub(crate) fn measure(
    cfg: &Config,
    needs: &[Need],
    stop: Arc<AtomicBool>,
    save: &dyn Fn(&Rfc2544Doc) -> Result<()>,
) -> Result<Rfc2544Doc> {
    if !netio::xdp::live_frames_supported()
        .context("probing BPF_PROG_TEST_RUN's live frames (root needed)")?
    {
        bail!("this kernel has no BPF_PROG_TEST_RUN live frames (Linux 5.18 or later needed)");
    }
    let pair = VethPair::create()?;
    let ports = [
        PortWorker::spawn(&pair.ns[0], IFNAMES[0])?,
        PortWorker::spawn(&pair.ns[1], IFNAMES[1])?,
    ];
    // The ceiling is the NDR: only the search runs, its final trials at most
    // SELF_TEST_FINAL_NS long (the tester is measured, not a device).
    let only = Config {
        tests: Tests {
            throughput: true,
            latency: false,
            flr: false,
            b2b: false,
        },
        timing: Timing {
            initial_ns: cfg.timing.initial_ns.min(SELF_TEST_INITIAL_NS),
            final_ns: cfg.timing.final_ns.min(if cfg.quick {
                SELF_TEST_QUICK_FINAL_NS
            } else {
                SELF_TEST_FINAL_NS
            }),
            ..cfg.timing
        },
        ..cfg.clone()
    };
    let mut d = empty_doc(
        &only,
        doc::Device {
            name: "none".into(),
            kind: doc::DeviceKind::None,
            lab: None,
        },
    );
    let jobs = jobs(&only, &ports, needs, &mut d)?;
    let with_ceiling = |d: &Rfc2544Doc| -> Result<()> { save(&with_ceilings(d.clone(), &jobs)) };
    let mut bench = Bench {
        cfg: &only,
        ports,
        doc: d,
        save: &with_ceiling,
        stop,
        who: "rfc2544 self-test".into(),
        self_test: true,
    };
    let r = bench.all(&jobs);
    let d = with_ceilings(bench.doc, &jobs);
    drop(bench.ports);
    drop(pair);
    r.map(|()| d)
}

/// `d` with `tester.ceiling` from its searches' NDRs.
fn with_ceilings(mut d: Rfc2544Doc, jobs: &[Job]) -> Rfc2544Doc {
    d.tester.ceiling = jobs
        .iter()
        .filter_map(|j| {
            let t = d.paths[j.entry].throughput.as_ref()?;
            Some(Ceiling {
                frame_size: j.size as u64,
                v6: j.path == PathKind::Ipv6,
                fps: t.ndr_fps,
                cores: 1,
            })
        })
        .collect();
    d
}

/// `dualperf rfc2544 --self-test`.
pub(crate) fn run(cfg: &Config) -> Result<()> {
    let mut needs: Vec<Need> = cfg
        .sizes_v4
        .iter()
        .map(|&size| Need { size, v6: false })
        .collect();
    needs.extend(cfg.sizes_v6.iter().map(|&size| Need { size, v6: true }));
    let dir = tables::run_dir(cfg)?;
    crate::out::note!("rfc2544 self-test: run directory {}", dir.display());
    let save = |d: &Rfc2544Doc| tables::write(&dir, d);
    let d = match measure(cfg, &needs, crate::interrupt::flag(), &save) {
        Ok(d) => d,
        Err(e) if e.is::<Interrupted>() => {
            crate::out::note!(
                "rfc2544 self-test: interrupted; what was measured is in {}",
                dir.display()
            );
            return Ok(());
        }
        Err(e) => return Err(e),
    };
    tables::write(&dir, &d)?;
    tables::show(cfg, &d)
}
