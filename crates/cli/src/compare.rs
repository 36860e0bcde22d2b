//! `dualperf compare`: the main job, as a plan like any other. The battery is
//! `plans/compare.toml` (shipped inside the binary); the flags select within it or change
//! it; `run::measure` runs it into a run directory with the in-process executor
//! (`inproc.rs`), and the `report` crate's verdict layer prints its verdicts, exactly as
//! `dualperf report DIR` prints them again.

use std::path::PathBuf;

use anyhow::Result;
use lab::plan::select::Selection;
use lab::plan::{Overrides, Plan};
use traffic::Rate;
use wire::time::Duration;

use crate::run::{Job, Measured, Settings};
use crate::usage;

/// Compare IPv4 and IPv6 on this host, or to HOST: the main battery, side by side, with
/// verdicts.
///
/// UDP and TCP at several packet sizes, D-ITG's VoIP codecs and game models, each test
/// run --repeat times over 127.0.0.1 and over ::1 (or, with --lab, through the two-hop
/// namespace lab and its 10 Mbit/s bottleneck; or to HOST's IPv4 and IPv6 addresses)
/// with the round-trip meter. HOST runs `dualperf agent` (both directions: each test
/// also has HOST send to us), `dualperf recv` (forward only) or, with --stamp, any STAMP
/// Session-Reflector (RFC 8762: the round trip and each direction's one-way view, with
/// nothing of ours there). The battery
/// is the plan plans/compare.toml: copy it, change it and give it with --plan. The
/// families are paired: every test runs over both, back to back, in an order that
/// alternates, and the whole battery is passed through again for each repetition, so
/// slow drifts of the host fall on both families alike.
///
/// Each table (throughput, median RTT, jitter, loss) shows the median of each family's
/// runs and IPv6 against IPv4 in the metric's unit and in %, with an interval: the
/// median of the pairs (each pass's IPv6 run against its IPv4 run), so what the host
/// does to both runs of a pair cancels. "≈" means the interval holds 0: the runs do not
/// show a difference, whatever the medians say. The verdicts hold a 5 % false discovery
/// rate over the whole page (Benjamini–Hochberg), so a battery with no real difference
/// shows none in 19 cases out of 20, and the intervals are widened to match
/// (docs/compare.md).
///
/// Every run is kept in a run directory (results/compare-UNIXTIME, or --dir), indexed
/// in SQLite: `dualperf report DIR` prints the same verdicts again, with the report's
/// tables, plots (--html) and exports. Starts its own receiver; nothing else is needed.
#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:
  dualperf compare                       # 10 runs a family per test, about 3 minutes
  dualperf compare --quick               # 5 runs a family, under a minute
  dualperf compare --repeat 10 --no-games --sizes 64,1472
  dualperf compare --quick --dir cmp     # then: dualperf report cmp --html cmp.html
  dualperf compare --json > cmp.json     # every run, every flow, the statistics
  dualperf compare --plan my-battery.toml   # a copy of plans/compare.toml, changed
  sudo dualperf compare --lab            # through the two-hop lab (root, iproute2)
  dualperf compare b.example.org --quick # to b's agent: its A and AAAA, both directions
  dualperf compare b --v4 198.18.4.2 --v6 2001:2:0:4::2 --key-file agent.key
  dualperf compare router.example --stamp   # a STAMP reflector, nothing of ours there
  dualperf compare b --quick --dry-run   # the runs and the time they take

How to read the table and how the verdicts are made: docs/compare.md. JSON format:
docs/output.md.")]
pub(crate) struct CompareArgs {
    /// The far end: a name (its A and AAAA records both used; one missing is an error)
    /// or an address, where `dualperf agent`, `dualperf recv` or (--stamp) a STAMP
    /// reflector answers. Without it: this host's loopback (or --lab).
    #[arg(value_name = "HOST", conflicts_with = "lab")]
    host: Option<String>,
    /// The far end's IPv4 address, instead of HOST's A record (with --v6).
    #[arg(long, value_name = "ADDR", requires = "v6", conflicts_with = "lab")]
    v4: Option<std::net::Ipv4Addr>,
    /// The far end's IPv6 address, instead of HOST's AAAA record (with --v4).
    #[arg(long, value_name = "ADDR", requires = "v4", conflicts_with = "lab")]
    v6: Option<std::net::Ipv6Addr>,
    /// The far end's port [default: 4646; 862 with --stamp].
    #[arg(long, alias = "stamp-port", value_name = "PORT")]
    port: Option<u16>,
    /// The far end's key, from a file [default: DUALPERF_KEY, as send takes it]. The
    /// run directory's plan names the file (or the variable), never the key.
    #[arg(long, value_name = "FILE")]
    key_file: Option<PathBuf>,
    /// The far end is a STAMP Session-Reflector (RFC 8762; `dualperf recv --stamp`,
    /// stamp-suite, a router): UDP tests at 1000 pkt/s, STAMP sessions.
    #[arg(long)]
    stamp: bool,
    /// Print the runs and the time they take; measure nothing.
    #[arg(long)]
    dry_run: bool,
    /// The battery's [quick] table: 5 runs a family per test, each 250 ms, size tests
    /// at 5000 pkt/s; under a minute.
    #[arg(long)]
    quick: bool,
    /// Runs per family per test [default: the plan's, 10; 5 with --quick]. A verdict
    /// needs at least 2; more runs give narrower intervals (more, shorter runs beat
    /// fewer, longer ones: it is the pairs that are compared).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=1000))]
    repeat: Option<u32>,
    /// Length of each run [default: the plan's, 500ms; 250ms with --quick]. The VoIP
    /// and game tests take it too.
    #[arg(long, value_parser = crate::args::duration, value_name = "DURATION")]
    duration: Option<Duration>,
    /// Send rate of each size test [default: the plan's, 10000pps; 5000pps with
    /// --quick].
    #[arg(long)]
    rate: Option<Rate>,
    /// Payload sizes in bytes, comma-separated [default: the plan's, 64,512,1024,1472].
    #[arg(long, value_delimiter = ',')]
    sizes: Option<Vec<u32>>,
    /// Protocols, comma-separated: udp, tcp [default: both]. The VoIP and game tests
    /// are UDP: they run when udp is among them.
    #[arg(long, value_delimiter = ',')]
    protocols: Option<Vec<String>>,
    /// Leave out the VoIP tests (the plan's points in group "VoIP": D-ITG's five codec
    /// models with an RTP header).
    #[arg(long)]
    no_voip: bool,
    /// Leave out the gaming tests (group "Games": D-ITG's Quake 3 and Counter-Strike
    /// active and idle models; each with one seed, so IPv4 and IPv6 carry the very same
    /// packet sequence).
    #[arg(long)]
    no_games: bool,
    /// Run through the namespace testbed instead of loopback: builds the two-hop lab
    /// (sender — r1 — 10 Mbit/s — r2 — receiver, dualperf route in both routers) for
    /// the battery and removes it afterwards. Needs root and iproute2.
    #[arg(long)]
    lab: bool,
    /// With --lab: another topology (it needs nodes named sender and receiver).
    #[arg(long, value_name = "FILE", requires = "lab")]
    topology: Option<PathBuf>,
    /// Run the battery as given, not fitted to the lab's path. Fitted (the default),
    /// sizes above the largest UDP payload both families carry unfragmented become it,
    /// and the size tests' rate is cut to what keeps the largest at half the
    /// bottleneck (docs/compare.md, "A battery that fits the path"). Either way the
    /// verdicts leave out rows that fragment or oversubscribe (‡).
    #[arg(long)]
    no_fit: bool,
    /// The battery as a plan file instead of the shipped plans/compare.toml (a copy of
    /// it, changed; any plan whose points run over both families works).
    #[arg(long, value_name = "FILE")]
    plan: Option<PathBuf>,
    /// The run directory [default: results/compare-UNIXTIME].
    #[arg(long, value_name = "DIR")]
    dir: Option<PathBuf>,
    /// The SQLite index the run directory is recorded in (default: index.sqlite in the
    /// run directory's parent).
    #[arg(long, value_name = "FILE")]
    index: Option<PathBuf>,
    /// Also store the runs and their records in PostgreSQL (as `run --store`):
    /// postgresql://USER@HOST:PORT/DB.
    #[arg(
        long,
        value_name = "URL",
        env = "DUALPERF_STORE",
        hide_env_values = true
    )]
    store: Option<String>,
    /// Print JSON with every test's verdicts and every run's full sender- and
    /// receiver-side results.
    #[arg(long)]
    json: bool,
}

/// The battery, as shipped.
pub(crate) const BATTERY: &str = include_str!("../../../plans/compare.toml");

pub(crate) fn run(args: CompareArgs) -> Result<()> {
    // A topology given is read and checked before anything is made.
    if let Some(t) = &args.topology {
        let text = crate::args::read_input(t, "the topology")?;
        if let Err(e) = lab::topology::Topology::parse_at(&text, t.parent()) {
            usage!("{}: {e}", t.display());
        }
    }
    let far = crate::compare_host::far_end(&crate::compare_host::Given {
        host: args.host.as_deref(),
        v4: args.v4,
        v6: args.v6,
        port: args.port,
        key_file: args.key_file.as_deref(),
        stamp: args.stamp,
        dry_run: args.dry_run,
    })?;
    let (text, plan_path) = match &args.plan {
        Some(p) => (crate::args::read_input(p, "the plan")?, p.clone()),
        None => (BATTERY.to_owned(), PathBuf::from("plans/compare.toml")),
    };
    let selected = selection(&args).map(|mut s| {
        if let Some(f) = &far {
            f.peer.select(&mut s, args.quick);
        }
        s
    });
    let text = match selected.and_then(|s| s.apply(&text, plan_path.parent())) {
        Ok(t) => t,
        Err(e) => usage!("{}: {e}", plan_path.display()),
    };
    let mut plan = match Plan::parse(&text, args.quick) {
        Ok(p) => p,
        Err(e) => usage!(
            "{}{}: {}",
            plan_path.display(),
            e.line.map_or(String::new(), |l| format!(":{l}")),
            e.message
        ),
    };
    let overrides = Overrides {
        repetitions: args.repeat,
        duration: args.duration,
    };
    if let Err(e) = plan.override_with(&overrides) {
        usage!("{}: {}", plan_path.display(), e.message);
    }
    // --lab: the battery fitted to the lab's path, unless --no-fit.
    let (text, fitted) = fit_lab(&args, text, &mut plan, &plan_path, &overrides)?;
    if plan.runs.is_empty() {
        usage!("nothing to compare: every test of the battery is left out");
    }
    if args.dry_run {
        return dry_run(&plan, &plan_path, args.quick);
    }
    // A far end: the path's facts first, and the battery fitted to them.
    let (text, host_fit) = match &far {
        Some(f) => {
            crate::out::note!("dualperf compare: {}", f.peer.heading());
            let given = lab::plan::fit::Given {
                sizes: args.sizes.is_some(),
                rate: args.rate.is_some(),
            };
            let (t, h) = crate::compare_host::facts_and_fit(
                f,
                text,
                &mut plan,
                args.quick,
                &overrides,
                given,
                !args.no_fit,
            )?;
            (t, Some(h))
        }
        None => (text, None),
    };
    if plan.repetitions < 2 {
        crate::out::note!(
            "dualperf compare: one run a family gives medians but no verdicts (--repeat 2 or more)"
        );
    }
    let dir = run_dir(&args, &plan)?;
    if let Some(f) = &fitted {
        f.write(&dir)?;
    }
    if let Some(h) = &host_fit {
        h.write(&dir)?;
    }
    let saved = dir.join("plan.toml");
    let job = Job {
        who: "dualperf compare",
        // Resumed from its own copy: the battery as it ran, selections applied.
        plan_path: &saved,
        text: &text,
        plan: &plan,
        dir: &dir,
        settings: Settings {
            quick: args.quick,
            overrides,
        },
        resume: false,
        resumed: None,
        index: args.index.as_deref(),
        store: args.store.as_deref(),
    };
    let stop = crate::interrupt::flag();
    let mut executor = crate::inproc::InProcess::new("dualperf compare", stop);
    let Measured { outcome, .. } = crate::run::measure(&job, &mut executor)?;
    drop(executor);
    // The verdicts of the run directory, as `dualperf report DIR` prints them.
    let mut warnings = Vec::new();
    match report::load(std::slice::from_ref(&dir), &mut warnings) {
        Ok(runs) => {
            let mut doc = report::Report::new(&runs).verdicts;
            doc.dir = Some(dir.display().to_string());
            if args.json {
                crate::out::print_json(&doc)?;
            } else {
                crate::out::print(report::verdicts::render(&doc))?;
                if let Some(f) = &fitted {
                    crate::out::print(format!("\n{}\n", f.lines().join("\n")))?;
                }
                if let Some(line) = far.as_ref().and_then(|f| f.peer.footer()) {
                    crate::out::print(format!("{line}\n"))?;
                }
                if let Some(h) = &host_fit {
                    crate::out::print(h.text())?;
                }
            }
            crate::out::note!(
                "dualperf compare: every run is in {} (`dualperf report {}` prints these verdicts again, with plots: --html FILE)",
                dir.display(),
                dir.display()
            );
        }
        Err(e) => eprintln!("dualperf compare: no verdicts: {e}"),
    }
    for w in warnings {
        eprintln!("dualperf compare: warning: {w}");
    }
    job.finish(outcome)
}

/// `--dry-run`: the runs, and the time compare takes to measure them in this process.
fn dry_run(plan: &Plan, plan_path: &std::path::Path, quick: bool) -> Result<()> {
    let target = match lab::check::target(plan, plan_path, None) {
        Ok((t, _)) => t,
        Err(e) => usage!("{e}"),
    };
    let estimate = crate::compare_host::estimate(plan, quick);
    crate::out::print(lab::dryrun::text(plan, &target))?;
    crate::out::print(format!(
        "dualperf compare measures them in about {} ({} s), in this process (the line above is `dualperf run`'s, a process a run)\n",
        crate::human::span(estimate),
        estimate.as_secs()
    ))
}

/// The run directory: `--dir`, or results/compare-UNIXTIME; one that already holds runs
/// is refused (resume it with `dualperf run`).
fn run_dir(args: &CompareArgs, plan: &Plan) -> Result<PathBuf> {
    let dir = args.dir.clone().unwrap_or_else(|| {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        PathBuf::from("results").join(format!("{}-{now}", lab::plan::file_safe(&plan.name)))
    });
    if dir.join("runs").is_dir() && std::fs::read_dir(dir.join("runs"))?.next().is_some() {
        usage!(
            "{} already holds runs: give compare another --dir (or go on with `dualperf run {} --dir {} --resume`)",
            dir.display(),
            dir.join("plan.toml").display(),
            dir.display()
        );
    }
    Ok(dir)
}

/// `--lab`: the battery fitted to the lab's path from sender to receiver
/// ([`lab::pathinfo::LabFit`]: `--sizes` and `--rate` kept as given, all of it with
/// `--no-fit`), with its text and plan changed to match; the fit for the run directory.
fn fit_lab(
    args: &CompareArgs,
    text: String,
    plan: &mut Plan,
    plan_path: &std::path::Path,
    overrides: &Overrides,
) -> Result<(String, Option<lab::pathinfo::LabFit>)> {
    let given = lab::plan::fit::Given {
        sizes: args.sizes.is_some(),
        rate: args.rate.is_some(),
    };
    let fit = match lab::pathinfo::LabFit::of(plan, plan_path, given, !args.no_fit) {
        Ok(f) => f,
        Err(e) => usage!("{e}"),
    };
    let factors = fit
        .as_ref()
        .map_or_else(Vec::new, |f| f.fitted.factors.clone());
    if factors.is_empty() {
        return Ok((text, fit));
    }
    let s = Selection {
        factors,
        ..Selection::default()
    };
    let fitted = s.apply(&text, None).and_then(|t| {
        let mut p = Plan::parse(&t, args.quick).map_err(|e| e.message)?;
        p.override_with(overrides).map_err(|e| e.message)?;
        *plan = p;
        Ok(t)
    });
    match fitted {
        Ok(t) => Ok((t, fit)),
        Err(e) => usage!("{}: the fitted battery: {e}", plan_path.display()),
    }
}

/// What the flags change in the battery ([`lab::plan::select`]): `--sizes`,
/// `--protocols` and `--rate` replace the sweep's factors, `--no-voip`, `--no-games` and
/// a protocol list without UDP (the VoIP and game models are UDP) leave out the points of
/// those groups, `--lab` sets the target.
fn selection(args: &CompareArgs) -> Result<Selection, String> {
    let mut s = Selection::default();
    if let Some(sizes) = &args.sizes {
        if let Some(bad) = sizes
            .iter()
            .find(|&&s| s < wire::probe::HEADER_LEN as u32 || s > 65_507)
        {
            return Err(format!("size {bad} is outside 16..=65507 bytes"));
        }
        let values = sizes.iter().map(|&s| toml::Value::Integer(s.into()));
        s.factors
            .push(("size".into(), toml::Value::Array(values.collect())));
    }
    let mut udp = true;
    if let Some(protocols) = &args.protocols {
        let mut list = Vec::new();
        for p in protocols {
            match p.to_ascii_lowercase().as_str() {
                p @ ("udp" | "tcp") => list.push(toml::Value::String(p.to_owned())),
                other => return Err(format!("unknown protocol '{other}': use udp or tcp")),
            }
        }
        udp = list.iter().any(|p| p.as_str() == Some("udp"));
        s.factors
            .push(("protocol".into(), toml::Value::Array(list)));
    }
    if let Some(rate) = &args.rate {
        let value = toml::Value::Array(vec![toml::Value::String(rate.to_string())]);
        s.factors.push(("rate".into(), value));
    }
    if args.no_voip || !udp {
        s.leave_out_groups.push("VoIP".into());
    }
    if args.no_games || !udp {
        s.leave_out_groups.push("Games".into());
    }
    if args.lab {
        s.target = Some(match &args.topology {
            Some(t) => format!(
                "lab:{}",
                std::path::absolute(t)
                    .map_err(|e| format!("{}: {e}", t.display()))?
                    .display()
            ),
            None => "lab:topologies/two-hop.toml".to_owned(),
        });
    }
    Ok(s)
}
