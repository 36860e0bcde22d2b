//! `dualperf rfc2544`: benchmark a device under test by RFC 2544, RFC 5180 (IPv6),
//! RFC 8219 (NAT64) and RFC 9004 (back-to-back frames), between two tester ports whose
//! frames an XDP program sends and counts (`netio::xdp`), with the methods of the
//! sans-IO `bmwg` crate. clap args → [`Config`] (validated here, before anything is
//! opened) → [`device::run`] (a lab's device) or [`selftest::run`] (the tester alone, back
//! to back on a throwaway veth pair: its ceiling).
//!
//! - `port.rs`: a thread per tester port, inside the port's namespace.
//! - `trial.rs`: one trial: arm the receivers, ramp and send on both ports at once, wait
//!   the timeout, count.
//! - `driver.rs`: the `bmwg` methods over the ports, interleaved trial by trial.
//! - `selftest.rs`: the throwaway namespaces and the tester's ceiling.
//! - `device.rs`: a lab's device: its paths, addresses, GRO, the ceiling first.
//! - `tables.rs`: the run directory, text tables.

mod device;
mod driver;
mod port;
mod selftest;
mod tables;
mod trial;

use std::path::PathBuf;

use anyhow::Result;
use results::bmwg::PathKind;

use crate::usage;

/// Benchmark a device by RFC 2544 / RFC 5180 / RFC 8219 / RFC 9004: throughput (NDR and
/// PDR), latency, PDV and IPDV, the frame loss rate curve and back-to-back frames, over
/// IPv4, IPv6 and NAT64, interleaved trial by trial.
///
/// The device is a running lab's node between its hosts `sender` (tester port a) and
/// `receiver` (port b), as in plans/topologies/dut-kernel.toml and dut-tayga.toml
/// (`dualperf lab up`). Frames are sent by an XDP program run with BPF_PROG_TEST_RUN's
/// live frames, paced inside the program, and counted per stream by an XDP program on
/// the receiving port (needs root and kernel ≥ 5.18). First the tester measures its own
/// ceiling per frame size and family back to back on a throwaway veth pair; a device
/// figure at that ceiling is printed as "≥ N" (a lower bound). The device's two ingress
/// interfaces get GRO turned on: a veth accepts frames sent by XDP only when its peer
/// has NAPI on. Frame sizes include the 4-byte FCS (a 64-byte frame is 60 bytes handed
/// to the veth). Results: a table on stdout, and a run directory with rfc2544.json and
/// report.txt, written after each completed test (Ctrl-C keeps what was measured).
#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:
  dualperf lab up plans/topologies/dut-kernel.toml
  dualperf rfc2544 --lab dut-kernel --quick          # 64/512/1518 (IPv4), 1280/1518 (IPv6), a few minutes
  dualperf rfc2544 --lab dut-kernel --sizes 64 --tests throughput --duration 60s
  dualperf lab up plans/topologies/dut-tayga.toml
  dualperf rfc2544 --lab dut-tayga --quick --paths ipv6,nat64 --unidirectional
  dualperf rfc2544 --self-test --sizes 64,1518 --json   # the tester's own ceiling, no device

Its throughput table has a line per path and frame size, such as
  size B  path   dir  NDR frames/s  NDR Mbit/s  PDR frames/s  PDR Mbit/s     search
  64      IPv4  both   ≥ 1,051,453     ≥ 538.3   ≥ 1,051,453     ≥ 538.3  14 trials
  1280   NAT64  both        30,833       315.7        33,429       342.3  26 trials
where ≥ marks a figure the tester's ceiling capped (the device did at least that);
latency (median, p99.9, PDV, IPDV), loss-curve and back-to-back tables follow.
What each figure means, worked examples, limits: docs/rfc2544.md.")]
#[command(group(clap::ArgGroup::new("target").required(true).args(["lab", "self_test"])))]
pub(crate) struct Rfc2544Args {
    /// The running lab whose node between `sender` and `receiver` is the device.
    #[arg(long, value_name = "LAB")]
    lab: Option<String>,
    /// No device: measure the tester's ceiling back to back on a throwaway veth pair
    /// (namespaces dp-rfc2544-PID.a/.b, removed afterwards).
    #[arg(long)]
    self_test: bool,
    /// Short trials: final trials of 2 s, 3 back-to-back searches, and the sizes 64,
    /// 512, 1518 (IPv4) / 1280, 1518 (IPv6); 3 to 5 minutes a device measured on an
    /// otherwise idle 2-CPU host, the tester's self-test included (longer beside builds).
    #[arg(long)]
    quick: bool,
    /// Frame sizes in bytes with FCS, comma-separated (default RFC 2544 §9.1's 64, 128,
    /// 256, 512, 1024, 1280, 1518; IPv6 84 instead of 64, RFC 5180 §5.1). A size below a
    /// family's minimum (IPv6: 84) is raised to it for that family.
    #[arg(long, value_delimiter = ',', value_name = "BYTES")]
    sizes: Option<Vec<usize>>,
    /// Paths through the device: ipv4, ipv6, nat64 (default ipv4,ipv6, and nat64 for a
    /// tayga device).
    #[arg(long, value_delimiter = ',', value_name = "PATH")]
    paths: Option<Vec<String>>,
    /// Send from port a to port b only (default: both directions at once, RFC 2544 §14;
    /// rates are per direction).
    #[arg(long)]
    unidirectional: bool,
    /// The final trial duration of the throughput search (RFC 2544 §24: at least 60 s;
    /// default 60s, 2s with --quick).
    #[arg(long, value_parser = crate::args::std_duration, value_name = "TIME")]
    duration: Option<std::time::Duration>,
    /// The PDR's loss ratio: `0.5%` or `0.005`.
    #[arg(long, default_value = "0.5%", value_parser = ratio)]
    pdr: f64,
    /// A frame received later than this after it was sent counts as lost (a per-frame
    /// timeout, Lencse and Shima 2020).
    #[arg(long, default_value = "10ms", value_parser = crate::args::std_duration)]
    timeout: std::time::Duration,
    /// Which tests: throughput, latency, flr, b2b (latency needs throughput's NDR).
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "throughput,latency,flr,b2b"
    )]
    tests: Vec<String>,
    /// The same UDP ports in every frame (default: RFC 4814 §4.5 pseudorandom ports).
    #[arg(long)]
    fixed_ports: bool,
    /// The highest rate tried, frames per second per direction (`20M`, `500k`): a veth
    /// has no line rate, so the self-test searches up to this.
    #[arg(long, default_value = "20M", value_parser = rate)]
    max_rate: u64,
    /// The run directory (default results/rfc2544-UNIXTIME).
    #[arg(long, visible_alias = "out", value_name = "DIR")]
    dir: Option<PathBuf>,
    /// Print the document (rfc2544.json) on stdout instead of the tables.
    #[arg(long)]
    json: bool,
}

/// What to benchmark.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Target {
    /// The tester alone, back to back.
    SelfTest,
    /// A running lab's device.
    Lab(String),
}

/// Which tests run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Tests {
    pub throughput: bool,
    pub latency: bool,
    pub flr: bool,
    pub b2b: bool,
}

/// Durations and goals of the methods, ns.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Timing {
    /// The search's first trial duration.
    pub initial_ns: u64,
    /// The search's final trial duration.
    pub final_ns: u64,
    /// The search's width goal.
    pub precision: f64,
    /// The PDR's loss ratio.
    pub pdr_ratio: f64,
    /// The per-frame timeout.
    pub timeout_ns: u64,
    /// The ramp before each trial (not before a back-to-back burst).
    pub ramp_ns: u64,
    /// Its steps.
    pub ramp_steps: u32,
    /// A latency trial's duration.
    pub latency_ns: u64,
    /// A frame loss rate trial's duration.
    pub flr_ns: u64,
    /// Back-to-back searches (RFC 9004 §3.4).
    pub b2b_repeats: u32,
    /// The longest back-to-back burst, ns of frames (RFC 9004 §3.3: 2 s).
    pub b2b_max_burst_ns: u64,
    /// The wait after a burst for the device to drain (RFC 9004 §3.3: 2 s).
    pub b2b_drain_ns: u64,
    /// The back-to-back search's precision.
    pub b2b_precision: f64,
    /// The most trials of one search.
    pub max_trials: u32,
}

/// A validated `dualperf rfc2544`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Config {
    pub target: Target,
    pub quick: bool,
    /// IPv4 frame sizes (with FCS).
    pub sizes_v4: Vec<usize>,
    /// IPv6 frame sizes (with FCS).
    pub sizes_v6: Vec<usize>,
    /// The paths asked for; `None`: the device's default.
    pub paths: Option<Vec<PathKind>>,
    pub bidirectional: bool,
    pub rfc4814: bool,
    pub tests: Tests,
    pub timing: Timing,
    pub max_rate_fps: u64,
    pub dir: Option<PathBuf>,
    pub json: bool,
}

/// The largest frame a tester port sends: Ethernet's 1518 (a 1500-byte MTU).
pub(crate) const MAX_SIZE: usize = 1518;

const NS: u64 = 1_000_000_000;
const MS: u64 = 1_000_000;

/// `0.5%` or `0.005`: a ratio in [0, 1).
fn ratio(s: &str) -> Result<f64, String> {
    let (num, scale) = match s.strip_suffix('%') {
        Some(n) => (n, 100.0),
        None => (s, 1.0),
    };
    let v: f64 = num
        .trim()
        .parse()
        .map_err(|_| format!("'{s}' is not a ratio (0.5% or 0.005)"))?;
    let v = v / scale;
    if !(0.0..1.0).contains(&v) {
        return Err(format!("'{s}' is not a ratio in [0, 1)"));
    }
    Ok(v)
}

/// `20M`, `500k`, `1000000`: frames per second.
fn rate(s: &str) -> Result<u64, String> {
    let t = s.trim().trim_end_matches("fps").trim_end_matches("pps");
    let (num, mult) = match t.chars().last() {
        Some('k' | 'K') => (&t[..t.len() - 1], 1e3),
        Some('M') => (&t[..t.len() - 1], 1e6),
        Some('G') => (&t[..t.len() - 1], 1e9),
        _ => (t, 1.0),
    };
    let v: f64 = num
        .parse()
        .map_err(|_| format!("'{s}' is not a rate in frames per second (20M, 500k)"))?;
    let v = (v * mult).round();
    if !(1000.0..=1e10).contains(&v) {
        return Err(format!("'{s}': a rate of 1k to 10G frames per second"));
    }
    Ok(v as u64)
}

fn path_kind(s: &str) -> Option<PathKind> {
    match s.trim() {
        "ipv4" => Some(PathKind::Ipv4),
        "ipv6" => Some(PathKind::Ipv6),
        "nat64" => Some(PathKind::Nat64),
        _ => None,
    }
}

/// A path's name as the document and `--paths` spell it.
pub(crate) fn path_name(p: PathKind) -> &'static str {
    match p {
        PathKind::Ipv4 => "ipv4",
        PathKind::Ipv6 => "ipv6",
        PathKind::Nat64 => "nat64",
        PathKind::Nat46 => "nat46",
    }
}

/// Whether a path's frames enter the device as IPv6 (its frame sizes are IPv6's).
pub(crate) fn path_v6(p: PathKind) -> bool {
    matches!(p, PathKind::Ipv6 | PathKind::Nat64)
}

impl Timing {
    /// `--quick`'s or the full set's, with the final duration `--duration` gave.
    fn new(quick: bool, final_ns: Option<u64>, pdr_ratio: f64, timeout_ns: u64) -> Self {
        let t = if quick {
            Timing {
                initial_ns: 100 * MS,
                final_ns: 2 * NS,
                precision: 0.02,
                pdr_ratio,
                timeout_ns,
                ramp_ns: 50 * MS,
                ramp_steps: 5,
                latency_ns: 2 * NS,
                flr_ns: 500 * MS,
                b2b_repeats: 3,
                b2b_max_burst_ns: 50 * MS,
                b2b_drain_ns: 50 * MS,
                b2b_precision: 0.05,
                max_trials: 40,
            }
        } else {
            // RFC 2544 §24: trials of at least 60 s; RFC 9004 §3.3, §3.4: bursts up to 2 s,
            // 2 s to drain, 50 searches.
            Timing {
                initial_ns: NS,
                final_ns: 60 * NS,
                precision: 0.005,
                pdr_ratio,
                timeout_ns,
                ramp_ns: 200 * MS,
                ramp_steps: 10,
                latency_ns: 60 * NS,
                flr_ns: 10 * NS,
                b2b_repeats: 50,
                b2b_max_burst_ns: 2 * NS,
                b2b_drain_ns: 2 * NS,
                b2b_precision: 0.005,
                max_trials: 100,
            }
        };
        match final_ns {
            None => t,
            // A shorter final duration shortens every trial with it.
            Some(f) => Timing {
                initial_ns: t.initial_ns.min(f),
                final_ns: f,
                latency_ns: t.latency_ns.min(f),
                flr_ns: t.flr_ns.min(f),
                ramp_ns: t.ramp_ns.min(f / 4),
                b2b_max_burst_ns: t.b2b_max_burst_ns.min(f),
                b2b_drain_ns: t.b2b_drain_ns.min(f),
                ..t
            },
        }
    }
}

/// The frame sizes of one family: `given` (raised to the family's minimum, deduplicated,
/// in order) or the default list.
fn family_sizes(given: Option<&[usize]>, v6: bool, quick: bool) -> Vec<usize> {
    let min = wire::testframe::min_frame_size(v6);
    let list: Vec<usize> = match given {
        Some(g) => g.iter().map(|&s| s.max(min)).collect(),
        None if quick && v6 => vec![1280, 1518],
        None if quick => vec![64, 512, 1518],
        None if v6 => wire::testframe::SIZES_V6.to_vec(),
        None => wire::testframe::SIZES_V4.to_vec(),
    };
    let mut out = Vec::new();
    for s in list {
        if !out.contains(&s) {
            out.push(s);
        }
    }
    out
}

impl Config {
    /// The arguments as a config, or a usage error saying what to change.
    fn from_args(a: &Rfc2544Args) -> Result<Config> {
        let target = match (&a.lab, a.self_test) {
            (Some(l), false) => Target::Lab(l.clone()),
            (None, true) => Target::SelfTest,
            _ => usage!("give one of --lab LAB and --self-test"),
        };
        if let Some(sizes) = &a.sizes {
            if sizes.is_empty() {
                usage!("--sizes: give at least one frame size");
            }
            if let Some(&bad) = sizes.iter().find(|&&s| !(64..=MAX_SIZE).contains(&s)) {
                usage!("--sizes {bad}: frame sizes are 64 to {MAX_SIZE} bytes, FCS included");
            }
        }
        let paths = match &a.paths {
            None => None,
            Some(_) if target == Target::SelfTest => {
                usage!("--paths is for --lab: the self-test has no device to translate")
            }
            Some(list) => {
                let mut out = Vec::new();
                for p in list {
                    let Some(k) = path_kind(p) else {
                        usage!("--paths {p}: one of ipv4, ipv6, nat64");
                    };
                    if !out.contains(&k) {
                        out.push(k);
                    }
                }
                if out.is_empty() {
                    usage!("--paths: give at least one of ipv4, ipv6, nat64");
                }
                Some(out)
            }
        };
        let mut tests = Tests {
            throughput: false,
            latency: false,
            flr: false,
            b2b: false,
        };
        for t in &a.tests {
            match t.trim() {
                "throughput" => tests.throughput = true,
                "latency" => tests.latency = true,
                "flr" => tests.flr = true,
                "b2b" | "back-to-back" => tests.b2b = true,
                other => usage!("--tests {other}: one of throughput, latency, flr, b2b"),
            }
        }
        if tests.latency && !tests.throughput {
            usage!("--tests latency runs at the throughput's NDR: add throughput");
        }
        if !(tests.throughput || tests.flr || tests.b2b) {
            usage!("--tests: give at least one of throughput, latency, flr, b2b");
        }
        let final_ns = match a.duration {
            None => None,
            Some(d) if d.as_millis() < 50 => {
                usage!("--duration {d:?}: at least 50ms (RFC 2544 §24 asks for 60s)")
            }
            Some(d) => Some(d.as_nanos() as u64),
        };
        let timeout_ns = a.timeout.as_nanos() as u64;
        if timeout_ns == 0 || timeout_ns > 10 * NS {
            usage!("--timeout: more than 0 and at most 10s");
        }
        Ok(Config {
            sizes_v4: family_sizes(a.sizes.as_deref(), false, a.quick),
            sizes_v6: family_sizes(a.sizes.as_deref(), true, a.quick),
            target,
            quick: a.quick,
            paths,
            bidirectional: !a.unidirectional,
            rfc4814: !a.fixed_ports,
            tests,
            timing: Timing::new(a.quick, final_ns, a.pdr, timeout_ns),
            max_rate_fps: a.max_rate,
            dir: a.dir.clone(),
            json: a.json,
        })
    }
}

pub(crate) fn run(args: Rfc2544Args) -> Result<()> {
    let cfg = Config::from_args(&args)?;
    match &cfg.target {
        Target::SelfTest => selftest::run(&cfg),
        Target::Lab(lab) => device::run(&cfg, lab),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Debug, Parser)]
    struct Cli {
        #[command(flatten)]
        a: Rfc2544Args,
    }

    fn cfg(args: &[&str]) -> Result<Config, String> {
        let cli = Cli::try_parse_from(std::iter::once("rfc2544").chain(args.iter().copied()))
            .map_err(|e| e.to_string())?;
        Config::from_args(&cli.a).map_err(|e| format!("{e:#}"))
    }

    #[test]
    fn defaults_are_rfc_2544s_sizes_both_directions_and_60_second_trials() {
        let c = cfg(&["--lab", "dut-kernel"]).unwrap();
        assert_eq!(c.target, Target::Lab("dut-kernel".into()));
        assert_eq!(c.sizes_v4, [64, 128, 256, 512, 1024, 1280, 1518]);
        assert_eq!(c.sizes_v6, [84, 128, 256, 512, 1024, 1280, 1518]);
        assert_eq!(c.paths, None);
        assert!(c.bidirectional && c.rfc4814 && !c.json && !c.quick);
        assert_eq!(
            c.tests,
            Tests {
                throughput: true,
                latency: true,
                flr: true,
                b2b: true
            }
        );
        assert_eq!(c.timing.final_ns, 60 * NS);
        assert_eq!(c.timing.initial_ns, NS);
        assert_eq!(c.timing.b2b_repeats, 50);
        assert_eq!(c.timing.b2b_drain_ns, 2 * NS);
        assert_eq!(c.timing.pdr_ratio, 0.005);
        assert_eq!(c.timing.timeout_ns, 10 * MS);
        assert_eq!(c.max_rate_fps, 20_000_000);
    }

    #[test]
    fn quick_takes_the_issues_sizes_and_short_trials() {
        let c = cfg(&["--lab", "x", "--quick"]).unwrap();
        assert_eq!(c.sizes_v4, [64, 512, 1518]);
        assert_eq!(c.sizes_v6, [1280, 1518]);
        assert_eq!(c.timing.final_ns, 2 * NS);
        assert_eq!(c.timing.b2b_repeats, 3);
    }

    #[test]
    fn given_sizes_are_raised_to_ipv6s_minimum_and_a_short_duration_shortens_every_trial() {
        let c = cfg(&[
            "--self-test",
            "--sizes",
            "64,84,512",
            "--quick",
            "--duration",
            "200ms",
        ])
        .unwrap();
        assert_eq!(c.target, Target::SelfTest);
        assert_eq!(c.sizes_v4, [64, 84, 512]);
        assert_eq!(c.sizes_v6, [84, 512]);
        assert_eq!(c.timing.final_ns, 200 * MS);
        assert_eq!(c.timing.initial_ns, 100 * MS);
        assert_eq!(c.timing.latency_ns, 200 * MS);
        assert_eq!(c.timing.flr_ns, 200 * MS);
        assert_eq!(c.timing.ramp_ns, 50 * MS);
        assert_eq!(c.timing.b2b_max_burst_ns, 50 * MS);
    }

    #[test]
    fn paths_tests_ratios_and_rates_parse() {
        let c = cfg(&[
            "--lab",
            "t",
            "--paths",
            "nat64,ipv6,nat64",
            "--tests",
            "throughput,latency",
            "--pdr",
            "0.1%",
            "--unidirectional",
            "--fixed-ports",
            "--max-rate",
            "500k",
            "--out",
            "/tmp/x",
        ])
        .unwrap();
        assert_eq!(c.paths, Some(vec![PathKind::Nat64, PathKind::Ipv6]));
        assert!(c.tests.throughput && c.tests.latency && !c.tests.flr && !c.tests.b2b);
        assert!((c.timing.pdr_ratio - 0.001).abs() < 1e-12);
        assert!(!c.bidirectional && !c.rfc4814);
        assert_eq!(c.max_rate_fps, 500_000);
        assert_eq!(c.dir, Some(PathBuf::from("/tmp/x")));
        assert_eq!(ratio("0.005"), Ok(0.005));
        assert_eq!(rate("1.5M"), Ok(1_500_000));
        assert_eq!(rate("20000"), Ok(20_000));
    }

    #[test]
    fn nonsense_is_refused_with_what_to_change() {
        let bad: [(&[&str], &str); 10] = [
            (&[], "required"),
            (&["--lab", "x", "--self-test"], "cannot be used"),
            (&["--lab", "x", "--sizes", "60"], "64 to 1518"),
            (&["--lab", "x", "--sizes", "9000"], "64 to 1518"),
            (
                &["--lab", "x", "--paths", "ipv5"],
                "one of ipv4, ipv6, nat64",
            ),
            (&["--self-test", "--paths", "ipv4"], "--paths is for --lab"),
            (&["--lab", "x", "--tests", "latency"], "add throughput"),
            (&["--lab", "x", "--tests", "speed"], "one of throughput"),
            (&["--lab", "x", "--pdr", "100%"], "ratio in [0, 1)"),
            (&["--lab", "x", "--duration", "10ms"], "at least 50ms"),
        ];
        for (args, want) in bad {
            let e = cfg(args).expect_err(&format!("{args:?} is refused"));
            assert!(e.contains(want), "{args:?}: {e}");
        }
        assert!(rate("5").is_err() && rate("fast").is_err());
    }
}
