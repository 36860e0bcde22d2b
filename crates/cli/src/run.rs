//! `dualperf run`: measure every run of a plan into a run directory.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use lab::plan::{Overrides, Plan, SendOption};
use lab::runner::{execute, Place, RunConfig, RunError, Target};
use lab::store::{HostInfo, Resolved, Store};
use traffic::options::{canonical, NamedOptions};
use traffic::OptionError;

use crate::usage;

/// Run an experiment plan: its points over IPv4 and IPv6, repeated, interleaved, into a
/// run directory that `dualperf report` reads.
///
/// Each run is one `dualperf send --json` against a receiver this command starts on
/// loopback (or in a lab's namespaces); with `target = "hosts"`, one `dualperf send
/// --from AGENT` that has a host's `dualperf agent` send to another's, the hosts' keys
/// (`key_file`, `key_env`) passed in environment variables, never recorded. Its result
/// is stored as soon as it ends. The run directory is named when the run starts;
/// Ctrl-C (or a kill) loses nothing finished, Ctrl-C names the command that goes on, and
/// `--resume` measures only what is missing. Every random traffic model of a point is
/// seeded from the plan's name and the point (the same over IPv4 and IPv6; `seed` in a
/// flow sets its own). The plan format is described in docs/plans.md and the shipped
/// plans are in `plans/`.
#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:
  dualperf run plans/sharma2013.toml --quick --dry-run
  dualperf run plans/sharma2013.toml --dir results/sharma
  dualperf run plans/sharma2013.toml --dir results/sharma --resume
  dualperf run plans/sharma2013.toml --resume       # the newest unfinished run in results/
  dualperf run plans/sharma2013.toml --repetitions 5 --duration 10s
  dualperf run plans/sharma2013.toml --quick --dry-run --json   # every run's send arguments
  dualperf run plans/sharma2013.toml --json > run.json          # counts, directory, index

What a run directory holds, and the --json documents: docs/output.md.")]
pub(crate) struct RunArgs {
    /// The plan (TOML).
    plan: PathBuf,
    /// The run directory (default: results/NAME-UNIXTIME).
    #[arg(long, value_name = "DIR")]
    dir: Option<PathBuf>,
    /// Go on with an interrupted run: measure only the runs it lacks. With --dir, that
    /// directory; without, the newest unfinished run of this plan in results/. It goes
    /// on with the --quick, --repetitions and --duration it was started with (giving
    /// others is refused).
    #[arg(long)]
    resume: bool,
    /// Apply the plan's [quick] table (fewer repetitions, shorter runs).
    #[arg(long)]
    quick: bool,
    /// Repetitions of every point and family instead of the plan's (or its [quick]
    /// table's): between --quick and the full plan.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    repetitions: Option<u32>,
    /// The length of each run instead of the plan's (or its [quick] table's): 10s,
    /// 500ms, 2min.
    #[arg(long, value_name = "DURATION", value_parser = run_duration)]
    duration: Option<wire::time::Duration>,
    /// Print the runs and the estimated time; measure nothing.
    #[arg(long)]
    dry_run: bool,
    /// Print JSON on stdout: with --dry-run the runs and their `dualperf send`
    /// arguments, else at the end what was measured (counts, run directory, index).
    #[arg(long)]
    json: bool,
    /// The SQLite index the run directory is recorded in for `dualperf export`
    /// (default: index.sqlite in the run directory's parent).
    #[arg(long, value_name = "FILE")]
    index: Option<PathBuf>,
}

pub(crate) fn run(args: RunArgs) -> Result<()> {
    let text = crate::args::read_input(&args.plan, "the plan")?;
    let at = |line: Option<usize>| match line {
        Some(l) => format!("{}:{l}", args.plan.display()),
        None => args.plan.display().to_string(),
    };
    // The whole plan is checked even under --quick, so a mistake in a table or a
    // factor the quick variant leaves out is found before the long run.
    let whole = match Plan::parse(&text, false) {
        Ok(p) => p,
        Err(e) => usage!("{}: {}", at(e.line), e.message),
    };
    // Where the run goes, and, for a resume, what it was started with.
    let (dir, settings, resumed) = place(&args, &whole.name)?;
    let mut plan = if settings.quick {
        match Plan::parse(&text, true) {
            Ok(p) => p,
            Err(e) => usage!("{}: {}", at(e.line), e.message),
        }
    } else {
        whole
    };
    if let Err(e) = plan.override_with(&settings.overrides) {
        usage!("{}: {}", args.plan.display(), e.message);
    }
    // Every point's options are checked as send reads them before anything runs.
    for point in &plan.points {
        if let Err((e, line)) = check_flow(&point.options()) {
            usage!("{}: point '{}': {e}", at(line), point.id);
        }
        for b in &point.background {
            let options = b.options();
            if let Err((e, line)) = check_flow(&options) {
                let line = line.or_else(|| options.first().and_then(|o| o.line));
                usage!(
                    "{}: point '{}': background {}: {e}",
                    at(line),
                    point.id,
                    b.label
                );
            }
        }
    }
    if args.dry_run {
        let (target, _) = target_of(&plan, &args.plan, false)?;
        if args.json {
            return crate::out::print_json(&crate::out::sorted_json(&dry_run_json(
                &plan, &target,
            ))?);
        }
        return crate::out::print(dry_run(&plan, &target));
    }
    let job = Job {
        who: "dualperf run",
        plan_path: &args.plan,
        text: &text,
        plan: &plan,
        dir: &dir,
        settings,
        resume: args.resume,
        resumed,
        index: args.index.as_deref(),
    };
    let exe = std::env::current_exe().context("cannot find the dualperf binary")?;
    let Measured {
        outcome,
        index_path,
        indexed,
        interrupted,
    } = measure(&job, &mut lab::executor::Processes::new(exe))?;
    if let (true, Ok(o)) = (args.json, &outcome) {
        // Keys in name order, as before the document had a type.
        crate::out::print_json(&crate::out::sorted_json(&lab::rundoc::RunSummary {
            plan: plan.name.clone(),
            dir: dir.clone(),
            quick: settings.quick,
            repetitions: plan.repetitions,
            run_duration_ns: plan.duration.as_nanos(),
            runs_planned: plan.runs.len(),
            runs_measured: o.measured,
            runs_already_there: o.skipped,
            runs_failed: o.failed,
            interrupted,
            index: index_path,
            runs_indexed: indexed,
        })?)?;
    }
    job.finish(outcome)
}

/// A plan to measure into a run directory, as `run` and `compare` both do.
pub(crate) struct Job<'a> {
    /// Who says what happens: `dualperf run`, `dualperf compare`.
    pub(crate) who: &'static str,
    /// The plan's file (for messages, the resume command, files beside it).
    pub(crate) plan_path: &'a Path,
    /// Its text, kept as `plan.toml`.
    pub(crate) text: &'a str,
    /// The plan, expanded, with the settings applied.
    pub(crate) plan: &'a Plan,
    /// The run directory.
    pub(crate) dir: &'a Path,
    /// `--quick`, `--repetitions`, `--duration`.
    pub(crate) settings: Settings,
    /// Go on with the runs `dir` lacks.
    pub(crate) resume: bool,
    /// For a resume, the unfinished run `--resume` without `--dir` found.
    pub(crate) resumed: Option<Option<lab::store::Unfinished>>,
    /// `--index`.
    pub(crate) index: Option<&'a Path>,
}

/// What [`measure`] did.
pub(crate) struct Measured {
    /// What the runner measured, or why it stopped.
    pub(crate) outcome: Result<lab::runner::Outcome, RunError>,
    /// The SQLite index.
    pub(crate) index_path: PathBuf,
    /// Runs indexed there; `None` when indexing failed (said on stderr).
    pub(crate) indexed: Option<usize>,
    /// Whether Ctrl-C stopped it.
    pub(crate) interrupted: bool,
}

/// Measure `job` into its run directory with `executor`: the directory's files, the
/// host check, the lab (built for the plan and removed after), every run, the index.
pub(crate) fn measure(
    job: &Job<'_>,
    executor: &mut dyn lab::executor::Executor,
) -> Result<Measured> {
    let (plan, dir, who) = (job.plan, job.dir, job.who);
    let store = open_dir(job)?;
    let stop = crate::interrupt::flag();
    let tty = crate::out::progress_on_stderr();
    let started = std::time::Instant::now();
    let progress = |done: usize, total: usize, run: &lab::plan::Run| {
        let elapsed = started.elapsed();
        // Once runs have been measured, their pace predicts the rest better than the
        // plan's estimate does.
        let left = if done > 0 {
            elapsed.mul_f64((total - done) as f64 / done as f64)
        } else {
            std::time::Duration::from_nanos(plan.estimated(total - done).as_nanos())
        };
        let point = &plan.points[run.point].id;
        let what = format!(
            "{point} · IPv{} · repetition {}/{}",
            run.family, run.repetition, plan.repetitions
        );
        if tty {
            eprint!("\r\x1b[2K{}", progress_bar(done, total, &what, left, 24));
        } else {
            crate::out::note!(
                "{who}: {}/{total} {what} (about {} left, {} so far)",
                done + 1,
                crate::human::span(left),
                crate::human::span(elapsed)
            );
        }
    };
    let exe = std::env::current_exe().context("cannot find the dualperf binary")?;
    // A lab target: build it, and keep its topology and router configurations with the
    // results. A hosts target: read the hosts' keys.
    let (mut target, topology) = target_of(plan, job.plan_path, true)?;
    let qos_files = match qos_files(plan, job.plan_path, topology.as_ref().map(|(t, _)| t)) {
        Ok(q) => q,
        Err(e) => usage!("{}: {e}", job.plan_path.display()),
    };
    let _lab = match &topology {
        None => None,
        Some((t, text)) => {
            // A lab of its own, under a name no other process uses (a lab up under the
            // topology's name is left alone); the run directory keeps the topology.
            crate::out::note!(
                "{who}: building lab '{}' (topology '{}') …",
                lab::netlab::job_name(&t.name, std::process::id()),
                t.name
            );
            let (own, guard) = lab::netlab::up_own(t, &exe)?;
            target = match Place::of_lab(&own) {
                Ok(p) => Target::Local(p),
                Err(e) => usage!("{}: {e}", job.plan_path.display()),
            };
            keep_lab(&store, t, text, &qos_files)?;
            Some(guard)
        }
    };
    let outcome = execute(
        plan,
        &store,
        &RunConfig {
            exe,
            target,
            resume: job.resume,
            stop: &stop,
            progress: &progress,
            qos_files,
        },
        executor,
    );
    if tty {
        eprintln!();
    }
    // The run directory is the record; the index is derived from it, so a failure here
    // loses nothing (`dualperf export DIR` indexes it again).
    let index_path = job
        .index
        .map_or_else(|| lab::index::default_path(dir), Path::to_owned);
    let indexed = match lab::index::Index::open(&index_path).and_then(|mut i| i.put_store(&store)) {
        Ok((_, n)) => {
            crate::out::note!("{who}: {n} runs indexed in {}", index_path.display());
            Some(n)
        }
        Err(e) => {
            eprintln!("{who}: warning: not indexed: {e}");
            None
        }
    };
    Ok(Measured {
        outcome,
        index_path,
        indexed,
        interrupted: stop.load(std::sync::atomic::Ordering::SeqCst),
    })
}

/// The run directory of `job`, checked (a new run goes into a directory without runs;
/// a resume, under the same plan), with the plan, its expansion, the host and the host
/// check written (a resume adds its own host and check).
fn open_dir(job: &Job<'_>) -> Result<Store> {
    let (plan, dir, who) = (job.plan, job.dir, job.who);
    let store = Store::create(dir)?;
    if store.has_runs()? && !job.resume {
        usage!(
            "{} already holds runs: give --resume to go on with it, or another --dir",
            dir.display()
        );
    }
    let resolved = Resolved::new(plan, job.settings.quick).with_overrides(job.settings.overrides);
    if job.resume {
        // Resuming under another plan would mix two experiments in one directory (a
        // file that no longer reads counts as another plan).
        let before = std::fs::read(dir.join("resolved.json"))
            .ok()
            .map(|b| Resolved::parse(&b).map(|(r, _)| r));
        if before.is_some_and(|b| !b.is_ok_and(|b| b.same_measurement(&resolved))) {
            usage!(
                "{} was started with another plan: resume it with the same one",
                dir.display()
            );
        }
    }
    match &job.resumed {
        None => crate::out::note!("{who}: run directory {}", dir.display()),
        Some(None) => crate::out::note!("{who}: resuming {}", dir.display()),
        Some(Some(u)) => crate::out::note!(
            "{who}: resuming {}, the newest unfinished run of plan '{}' in {DEFAULT_PARENT}/ ({} of {} runs done)",
            dir.display(),
            plan.name,
            u.done,
            u.total
        ),
    }
    store.write_file("plan.toml", job.text.as_bytes())?;
    store.write_json("resolved.json", &crate::out::sorted_json(&resolved)?)?;
    // The host a run directory was started on stays recorded; a resume adds its own.
    let host_file = if dir.join("host.json").exists() {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        format!("host-resumed-{now}.json")
    } else {
        "host.json".to_owned()
    };
    store.write_json(
        &host_file,
        &crate::out::sorted_json(&host_metadata(&plan.target.to_string()))?,
    )?;
    // This host's checks (`dualperf doctor`, briefly), kept for the report to warn of
    // beside the results; a resume adds its own.
    let doctor = crate::doctor::record();
    store.put_doctor(&doctor)?;
    // Only what bears on where the plan runs (doctor.json keeps every check).
    let scope = plan.target.scope();
    let problems: Vec<String> = doctor.problems_for(scope).map(|c| c.line()).collect();
    for line in &problems {
        crate::out::note!("{who}: host check: {line}");
    }
    if !problems.is_empty() {
        crate::out::note!("{who}: `dualperf doctor` says why each matters and how to fix it");
    }
    Ok(store)
}

/// A lab plan's lab, kept with the results: its topology, each router's configuration
/// and QoS file, and the QoS files the points name.
fn keep_lab(
    store: &Store,
    t: &lab::topology::Topology,
    text: &str,
    qos_files: &std::collections::BTreeMap<String, String>,
) -> Result<()> {
    let lab_dir = store.dir().join("lab");
    std::fs::create_dir_all(&lab_dir)
        .with_context(|| format!("cannot create {}", lab_dir.display()))?;
    store.write_file("lab/topology.toml", text.as_bytes())?;
    store.write_json("lab/topology.json", t)?;
    for (i, n) in t.nodes.iter().enumerate() {
        if n.kind == lab::topology::Kind::Router {
            let cfg = toml::to_string(&t.router_config(i)).unwrap_or_default();
            store.write_file(&format!("lab/{}.toml", n.name), cfg.as_bytes())?;
            if let Some(q) = &n.qos {
                store.write_file(&format!("lab/{}.qos.toml", n.name), q.text.as_bytes())?;
            }
        }
    }
    for (file, text) in qos_files {
        store.write_file(
            &format!("lab/{}", lab::plan::file_safe(file)),
            text.as_bytes(),
        )?;
    }
    Ok(())
}

impl Job<'_> {
    /// The command that goes on with this run.
    pub(crate) fn resume_command(&self) -> String {
        resume_command(self.plan_path, self.dir, &self.settings, self.index)
    }

    /// What the outcome means for the user: the counts, the failures each reason once
    /// with the command that measures them again, or where an interrupted run is and
    /// how to go on.
    pub(crate) fn finish(&self, outcome: Result<lab::runner::Outcome, RunError>) -> Result<()> {
        let (who, dir) = (self.who, self.dir);
        let resume_with = self.resume_command();
        match outcome {
            Ok(o) => {
                crate::out::note!(
                    "{who}: {} runs measured, {} already there, {} with errors; results in {}",
                    o.measured,
                    o.skipped,
                    o.failed,
                    dir.display()
                );
                if o.failed > 0 {
                    // Each reason once, from what the failed runs recorded.
                    for line in lab::failures::summary(&o.failures, o.measured + o.failed) {
                        eprintln!("{who}: {line}");
                    }
                    anyhow::bail!(
                        "{} of {} runs failed (each kept in {}/runs as ID.failed; `{resume_with}` measures them again)",
                        o.failed,
                        o.measured + o.failed,
                        dir.display()
                    );
                }
                Ok(())
            }
            Err(RunError::Interrupted { done, total }) => {
                // Said even under --quiet: where the results are and how to go on.
                eprintln!(
                    "{who}: interrupted after {done} of {total} runs; they are in {}",
                    dir.display()
                );
                eprintln!("{who}: to go on: {resume_with}");
                anyhow::bail!("interrupted after {done} of {total} runs")
            }
            Err(e @ RunError::Usage { .. }) => Err(crate::UsageError(format!("{e}")).into()),
            Err(e) => Err(e.into()),
        }
    }
}

/// Where run directories go when `--dir` is not given (`results/NAME-UNIXTIME`), and
/// where `--resume` without `--dir` looks for one.
const DEFAULT_PARENT: &str = "results";

/// A new run directory of plan `name`: `results/NAME-UNIXTIME`.
fn default_dir(name: &str) -> PathBuf {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    // The name comes from the plan: only safe characters reach the path.
    let name = lab::plan::file_safe(name);
    PathBuf::from(DEFAULT_PARENT).join(format!("{name}-{now}"))
}

/// Where a run goes and what it measures beside its plan: the directory (none for a dry
/// run), the settings (for a resume, those it was started with), and for a resume the
/// unfinished run `--resume` without `--dir` found (`Some(None)`: `--dir` named it).
type Placed = (PathBuf, Settings, Option<Option<lab::store::Unfinished>>);

fn place(args: &RunArgs, plan: &str) -> Result<Placed> {
    let given = Settings {
        quick: args.quick,
        overrides: Overrides {
            repetitions: args.repetitions,
            duration: args.duration,
        },
    };
    Ok(match (args.dry_run, args.resume, &args.dir) {
        (true, ..) => (PathBuf::new(), given, None),
        (false, true, dir) => {
            let (dir, found) = match dir {
                Some(d) => (d.clone(), None),
                None => match lab::store::latest_unfinished(Path::new(DEFAULT_PARENT), plan) {
                    Some(u) => (u.dir.clone(), Some(u)),
                    None => usage!(
                        "--resume without --dir: no unfinished run of plan '{plan}' in {DEFAULT_PARENT}/ (a run started with --dir DIR goes on with --dir DIR --resume)"
                    ),
                },
            };
            let settings = resumed_settings(&dir, given)?;
            (dir, settings, Some(found))
        }
        (false, false, Some(d)) => (d.clone(), given, None),
        (false, false, None) => (default_dir(plan), given, None),
    })
}

/// What a run measures beside its plan: `--quick`, `--repetitions`, `--duration`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Settings {
    pub(crate) quick: bool,
    pub(crate) overrides: Overrides,
}

/// The settings a resume of `dir` goes on with: those it was started with (its
/// `resolved.json`), which a resume need not repeat; one given otherwise is refused. A
/// directory without `resolved.json` takes what is given.
fn resumed_settings(dir: &Path, given: Settings) -> Result<Settings> {
    let Some(Ok((before, _))) = std::fs::read(dir.join("resolved.json"))
        .ok()
        .map(|b| Resolved::parse(&b))
    else {
        return Ok(given);
    };
    let started = Settings {
        quick: before.quick,
        overrides: before.overrides,
    };
    let o = (given.overrides, started.overrides);
    let differs = (given.quick && !started.quick)
        || o.0.repetitions.is_some_and(|r| Some(r) != o.1.repetitions)
        || o.0.duration.is_some_and(|d| Some(d) != o.1.duration);
    if differs {
        let flags = settings_flags(&started);
        usage!(
            "{} was started with {}: a resume goes on with the same (give them or leave them out)",
            dir.display(),
            if flags.is_empty() {
                "the plan's own repetitions and duration, without --quick".to_owned()
            } else {
                flags.join(" ")
            }
        );
    }
    Ok(started)
}

/// `--quick --repetitions N --duration D`, as far as they are set.
fn settings_flags(s: &Settings) -> Vec<String> {
    let mut flags = Vec::new();
    if s.quick {
        flags.push("--quick".to_owned());
    }
    if let Some(r) = s.overrides.repetitions {
        flags.extend(["--repetitions".to_owned(), r.to_string()]);
    }
    if let Some(d) = s.overrides.duration {
        flags.extend(["--duration".to_owned(), duration_arg(d)]);
    }
    flags
}

/// A duration as `--duration` reads it, exactly: `10s`, `500ms`, `250us`, `7ns`.
fn duration_arg(d: wire::time::Duration) -> String {
    let ns = d.as_nanos();
    match ns {
        _ if ns % 1_000_000_000 == 0 => format!("{}s", ns / 1_000_000_000),
        _ if ns % 1_000_000 == 0 => format!("{}ms", ns / 1_000_000),
        _ if ns % 1_000 == 0 => format!("{}us", ns / 1_000),
        _ => format!("{ns}ns"),
    }
}

/// `--duration`: a length above 0.
fn run_duration(s: &str) -> std::result::Result<wire::time::Duration, String> {
    traffic::units::parse_duration(s)
        .ok()
        .filter(|d| *d > wire::time::Duration::ZERO)
        .ok_or_else(|| format!("'{s}' is not a length above 0 (e.g. 10s, 500ms, 2min)"))
}

/// The command that goes on with this run: `dualperf run PLAN --dir DIR --resume`, with
/// the settings it was started with and its `--index`, each word quoted for a shell
/// when it needs it.
fn resume_command(plan: &Path, dir: &Path, settings: &Settings, index: Option<&Path>) -> String {
    let mut words = vec![
        "dualperf".to_owned(),
        "run".to_owned(),
        plan.display().to_string(),
        "--dir".to_owned(),
        dir.display().to_string(),
        "--resume".to_owned(),
    ];
    words.extend(settings_flags(settings));
    if let Some(i) = index {
        words.extend(["--index".to_owned(), i.display().to_string()]);
    }
    words
        .iter()
        .map(|w| shell_word(w))
        .collect::<Vec<_>>()
        .join(" ")
}

/// `w` as one word for a POSIX shell: as it is when it holds only safe characters,
/// else in single quotes.
fn shell_word(w: &str) -> String {
    let safe = |c: char| c.is_ascii_alphanumeric() || "_-./=,:@%+".contains(c);
    if !w.is_empty() && w.chars().all(safe) {
        w.to_owned()
    } else {
        format!("'{}'", w.replace('\'', "'\\''"))
    }
}

/// Check one flow's options as `send` reads them; a mistake comes with the plan line of
/// the option it names, when the plan sets that option.
fn check_flow(options: &[SendOption]) -> Result<(), (OptionError, Option<usize>)> {
    let mut named = NamedOptions::new(|path| std::fs::read_to_string(path));
    for o in options {
        named
            .set(&o.name, o.value.as_deref())
            .map_err(|e| (e, o.line))?;
    }
    let specs = named
        .finish()
        .and_then(|f| f.to_specs("check".into(), 0))
        .map_err(|e| {
            let line = options
                .iter()
                .find(|o| canonical(&o.name).is_some_and(|n| e.option() == format!("--{n}")))
                .and_then(|o| o.line);
            (e, line)
        })?;
    for note in specs.notes {
        crate::out::note!("dualperf send: note: {note}");
    }
    Ok(())
}

/// `[#######.................]  12/46  size=512 · IPv6 · repetition 1/15  ETA 0:35`.
fn progress_bar(
    done: usize,
    total: usize,
    what: &str,
    left: std::time::Duration,
    width: usize,
) -> String {
    let filled = (done * width)
        .checked_div(total)
        .unwrap_or(width)
        .min(width);
    format!(
        "[{}{}] {:>w$}/{total}  {what}  ETA {}",
        "#".repeat(filled),
        ".".repeat(width - filled),
        done + 1,
        clock(left),
        w = total.to_string().len()
    )
}

/// `1:02:03`, `2:03`, `0:07`.
fn clock(d: std::time::Duration) -> String {
    let s = d.as_secs_f64().round() as u64;
    if s >= 3600 {
        format!("{}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60)
    } else {
        format!("{}:{:02}", s / 60, s % 60)
    }
}

/// The QoS files the plan's points give their lab's routers (paths relative to the
/// plan), read and checked against the routers they go to.
fn qos_files(
    plan: &Plan,
    plan_path: &Path,
    topology: Option<&lab::topology::Topology>,
) -> std::result::Result<std::collections::BTreeMap<String, String>, String> {
    let mut out = std::collections::BTreeMap::new();
    for point in &plan.points {
        for (node, file) in &point.qos {
            let Some(t) = topology else {
                return Err(format!(
                    "point '{}': qos needs a lab target (target = \"lab:TOPOLOGY.toml\")",
                    point.id
                ));
            };
            let Some(i) = t.node(node) else {
                return Err(format!(
                    "point '{}': qos: the lab has no node '{node}'",
                    point.id
                ));
            };
            if file == "none" {
                if t.nodes[i].kind != lab::topology::Kind::Router {
                    return Err(format!(
                        "point '{}': qos: '{node}' is not a router",
                        point.id
                    ));
                }
                continue;
            }
            if out.contains_key(file) {
                continue;
            }
            let path = plan_path.parent().unwrap_or(Path::new(".")).join(file);
            let text = std::fs::read_to_string(&path)
                .map_err(|e| format!("point '{}': qos {}: {e}", point.id, path.display()))?;
            t.check_qos(i, &text).map_err(|e| {
                format!(
                    "point '{}': qos {} on {node}: {e}",
                    point.id,
                    path.display()
                )
            })?;
            out.insert(file.clone(), text);
        }
    }
    Ok(out)
}

/// Where a plan's flows run, and the lab's topology when it names one (its file resolved
/// against the plan's directory). For a hosts plan, with `keys`, the hosts' keys are
/// read (`key_file` relative to the plan, `key_env` from the environment).
fn target_of(
    plan: &Plan,
    plan_path: &Path,
    keys: bool,
) -> Result<(Target, Option<(lab::topology::Topology, String)>)> {
    let file = match &plan.target {
        lab::plan::Target::Loopback => return Ok((Target::Local(Place::Loopback), None)),
        lab::plan::Target::Lab(path) => path.trim(),
        lab::plan::Target::Hosts => {
            let keys = if keys {
                let dir = plan_path.parent().unwrap_or(Path::new("."));
                match lab::hosts::read_keys(&plan.hosts, dir, &|var| std::env::var(var).ok()) {
                    Ok(k) => k,
                    Err(e) => usage!("{}: {e}", plan_path.display()),
                }
            } else {
                Default::default()
            };
            let hosts = lab::hosts::Hosts::new(plan.hosts.clone(), keys);
            return Ok((Target::Hosts(hosts), None));
        }
    };
    let beside = plan_path.parent().unwrap_or(Path::new(".")).join(file);
    let path = if beside.is_file() {
        beside
    } else {
        PathBuf::from(file)
    };
    // A shipped plan's shipped topology, when no file is there.
    let text = match lab::topology::builtin(file).filter(|_| !path.is_file()) {
        Some(t) => t.to_owned(),
        None => crate::args::read_input(&path, "the plan's topology")?,
    };
    let t = match lab::topology::Topology::parse_at(&text, path.parent()) {
        Ok(t) => t,
        Err(e) => usage!("{}: {e}", path.display()),
    };
    let place = match Place::of_lab(&t) {
        Ok(p) => p,
        Err(e) => usage!("{}: {e}", path.display()),
    };
    Ok((Target::Local(place), Some((t, text))))
}

/// `--dry-run --json`: the runs and what each would run, as data.
fn dry_run_json(plan: &Plan, target: &Target) -> lab::rundoc::DryRun {
    use lab::rundoc::{DryBackground, DryRun, DryRunRun, DrySend};
    let runs = plan
        .runs
        .iter()
        .map(|r| {
            let p = &plan.points[r.point];
            let send = match target {
                Target::Hosts(hosts) => {
                    let from = p.from.as_deref().unwrap_or(lab::hosts::SENDER);
                    let to = p.to.as_deref().unwrap_or(lab::hosts::RECEIVER);
                    DrySend::Hosts {
                        from: from.to_owned(),
                        to: to.to_owned(),
                        command: hosts_send(
                            hosts,
                            from,
                            to,
                            r.family,
                            plan.measured_args(p).join(" "),
                        ),
                    }
                }
                Target::Local(place) => DrySend::Local {
                    dest: place.dest(r.family),
                    args: plan.measured_args(p),
                },
            };
            let background = p
                .background
                .iter()
                .map(|b| DryBackground {
                    label: b.label.clone(),
                    args: plan.background_args(p, b),
                })
                .collect();
            DryRunRun {
                id: r.id.clone(),
                point: p.id.clone(),
                family: r.family,
                repetition: r.repetition,
                send,
                qos: p.qos.clone(),
                background,
            }
        })
        .collect();
    DryRun {
        plan: plan.name.clone(),
        points: plan.points.len(),
        families: plan.families.clone(),
        repetitions: plan.repetitions,
        run_duration_ns: plan.duration.as_nanos(),
        estimated_ns: plan.estimated(plan.runs.len()).as_nanos(),
        runs,
    }
}

fn dry_run(plan: &Plan, target: &Target) -> String {
    let mut s = format!(
        "plan {}: {} points × {} families × {} repetitions = {} runs of {}, about {} in all\n",
        plan.name,
        plan.points.len(),
        plan.families.len(),
        plan.repetitions,
        plan.runs.len(),
        crate::human::span(plan.duration.into()),
        crate::human::span(plan.estimated(plan.runs.len()).into())
    );
    let quoted = |args: Vec<String>| {
        args.iter()
            .map(|a| {
                if a.contains(' ') {
                    format!("'{a}'")
                } else {
                    a.clone()
                }
            })
            .collect::<Vec<_>>()
            .join(" ")
    };
    if let Target::Hosts(hosts) = target {
        s.push_str("hosts (each runs `dualperf agent`; nothing is started on them):\n");
        let width = hosts.hosts.keys().map(String::len).max().unwrap_or(0);
        for (name, host) in &hosts.hosts {
            s.push_str(&format!("  {name:<width$}  {}\n", host.describe()));
        }
    }
    for r in &plan.runs {
        let p = &plan.points[r.point];
        match target {
            Target::Hosts(hosts) => {
                let from = p.from.as_deref().unwrap_or(lab::hosts::SENDER);
                let to = p.to.as_deref().unwrap_or(lab::hosts::RECEIVER);
                s.push_str(&format!(
                    "{}  {from} → {to}: {}\n",
                    r.id,
                    hosts_send(hosts, from, to, r.family, quoted(plan.measured_args(p)))
                ));
            }
            Target::Local(place) => s.push_str(&format!(
                "{}  dualperf send {} {}\n",
                r.id,
                place.dest(r.family),
                quoted(plan.measured_args(p))
            )),
        }
        for (node, file) in &p.qos {
            s.push_str(&format!("    router {node}: qos {file}\n"));
        }
        for b in &p.background {
            match target {
                Target::Hosts(hosts) => {
                    let from = b.from.as_deref().unwrap_or(lab::hosts::BG_FROM);
                    let to = b.to.as_deref().unwrap_or(lab::hosts::BG_TO);
                    s.push_str(&format!(
                        "    beside it, {} from {from} to {to}: {}\n",
                        b.label,
                        hosts_send(
                            hosts,
                            from,
                            to,
                            r.family,
                            plan.background_args(p, b).join(" ")
                        )
                    ));
                }
                Target::Local(place) => {
                    let lab = matches!(place, Place::Lab { .. });
                    let (from, to) = if b.from_sender {
                        (" from sender", place.dest(r.family))
                    } else {
                        (
                            if lab { " from bg-a" } else { "" },
                            place
                                .background()
                                .map_or("(no bg-a/bg-b in the lab)".into(), |bp| bp.dest(r.family)),
                        )
                    };
                    s.push_str(&format!(
                        "    beside it, {}{from}: dualperf send {to} {}\n",
                        b.label,
                        plan.background_args(p, b).join(" ")
                    ));
                }
            }
        }
    }
    s
}

/// `dualperf send --from AGENT DEST --port PORT ARGS` of a flow between two hosts, as
/// `--dry-run` shows it.
fn hosts_send(hosts: &lab::hosts::Hosts, from: &str, to: &str, family: u8, args: String) -> String {
    match hosts.ends(from, to, family) {
        Ok((agent, dest)) => format!(
            "dualperf send --from {agent} {} --port {} {args}",
            dest.ip(),
            dest.port()
        ),
        Err(e) => format!("({e})"),
    }
}

/// What the host was: kernel, CPU, the sysctls that change IPv4/IPv6 results, loopback's
/// qdisc, the dualperf version (flent's metadata, for one host).
fn host_metadata(target: &str) -> HostInfo {
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
        format_version: lab::store::FORMAT_VERSION,
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn option(name: &str, value: Option<&str>, line: usize) -> SendOption {
        SendOption {
            name: name.into(),
            value: value.map(Into::into),
            line: Some(line),
        }
    }

    #[test]
    fn a_flow_mistake_is_placed_on_the_line_of_the_option_it_names() {
        let base = [
            option("udp", None, 3),
            option("rate", Some("100pps"), 4),
            option("size", Some("512"), 5),
        ];
        assert!(check_flow(&base).is_ok());
        for (extra, line, text) in [
            (
                option("ttl", Some("0"), 9),
                Some(9),
                "invalid value '0' for '--ttl'",
            ),
            (option("color", Some("red"), 9), Some(9), "'--color'"),
            (
                option("voip", Some("g711.1"), 9),
                Some(9),
                "cannot be used with",
            ),
            (
                option("congestion", Some("bbr"), 9),
                Some(9),
                "applies to TCP flows",
            ),
            (option("tcp", None, 9), Some(9), "cannot be used with"),
            (
                option("count", Some("0"), 9),
                Some(9),
                "a stop condition of zero",
            ),
        ] {
            let mut flow = base.to_vec();
            flow.push(extra);
            let (e, at) = check_flow(&flow).unwrap_err();
            assert_eq!(at, line, "{e}");
            assert!(e.to_string().contains(text), "{e}");
        }
        // A check names the option it is about.
        let (e, at) = check_flow(&[option("size", Some("8"), 2)]).unwrap_err();
        assert_eq!((e.option(), at), ("--size", Some(2)));
        let (e, at) =
            check_flow(&[option("bulk", None, 2), option("meter", Some("rtt"), 3)]).unwrap_err();
        assert_eq!((e.option(), at), ("--bulk", Some(2)));
    }

    #[test]
    fn the_resume_command_repeats_what_the_run_was_started_with_as_shell_words() {
        let plain = Settings {
            quick: false,
            overrides: Overrides::default(),
        };
        assert_eq!(
            resume_command(
                Path::new("plans/tiny.toml"),
                Path::new("results/tiny-17"),
                &plain,
                None
            ),
            "dualperf run plans/tiny.toml --dir results/tiny-17 --resume"
        );
        let all = Settings {
            quick: true,
            overrides: Overrides {
                repetitions: Some(5),
                duration: Some(wire::time::Duration::from_millis(2500)),
            },
        };
        assert_eq!(
            resume_command(
                Path::new("my plans/it's.toml"),
                Path::new("/r/x"),
                &all,
                Some(Path::new("i.sqlite"))
            ),
            "dualperf run 'my plans/it'\\''s.toml' --dir /r/x --resume --quick --repetitions 5 --duration 2500ms --index i.sqlite"
        );
        // A duration reads back exactly as it was.
        for (ns, text) in [
            (10_000_000_000, "10s"),
            (2_500_000_000, "2500ms"),
            (250_000, "250us"),
            (7, "7ns"),
        ] {
            let d = wire::time::Duration::from_nanos(ns);
            assert_eq!(duration_arg(d), text);
            assert_eq!(run_duration(text), Ok(d));
        }
        assert!(run_duration("0s").is_err() && run_duration("soon").is_err());
    }

    #[test]
    fn a_resume_goes_on_with_the_settings_it_was_started_with() {
        let dir =
            std::env::temp_dir().join(format!("dualperf-run-settings-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let none = Settings {
            quick: false,
            overrides: Overrides::default(),
        };
        // No resolved.json yet: what is given.
        assert_eq!(resumed_settings(&dir, none).unwrap(), none);
        let text = "version = 1\nname = \"x\"\nduration = \"1s\"\n[flow]\nudp = true\n[quick]\nduration = \"100ms\"\n";
        let started = Settings {
            quick: true,
            overrides: Overrides {
                repetitions: Some(3),
                duration: None,
            },
        };
        let mut plan = Plan::parse(text, true).unwrap();
        plan.override_with(&started.overrides).unwrap();
        let resolved = Resolved::new(&plan, true).with_overrides(started.overrides);
        std::fs::write(
            dir.join("resolved.json"),
            serde_json::to_vec(&resolved).unwrap(),
        )
        .unwrap();
        // Nothing given, or the same given: the recorded ones.
        assert_eq!(resumed_settings(&dir, none).unwrap(), started);
        assert_eq!(resumed_settings(&dir, started).unwrap(), started);
        // Others are refused, naming what it was started with.
        for other in [
            Overrides {
                repetitions: Some(4),
                duration: None,
            },
            Overrides {
                repetitions: None,
                duration: Some(wire::time::Duration::from_secs(1)),
            },
        ] {
            let e = resumed_settings(
                &dir,
                Settings {
                    quick: false,
                    overrides: other,
                },
            )
            .unwrap_err();
            assert!(
                e.to_string().contains(
                    "was started with --quick --repetitions 3: a resume goes on with the same"
                ),
                "{e}"
            );
        }
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn the_progress_bar_fills_with_the_runs_done() {
        assert_eq!(
            progress_bar(0, 4, "size=64 · IPv4", Duration::from_secs(7), 8),
            "[........] 1/4  size=64 · IPv4  ETA 0:07"
        );
        assert_eq!(
            progress_bar(23, 46, "p", Duration::from_secs(3725), 10),
            "[#####.....] 24/46  p  ETA 1:02:05"
        );
        assert_eq!(clock(Duration::from_millis(59_600)), "1:00");
    }

    #[test]
    fn a_dry_run_of_a_hosts_plan_shows_the_hosts_and_who_sends_to_whom() {
        let text = r#"version = 1
name = "across"
duration = "2s"
target = "hosts"

[flow]
udp = true
background = [{ from = "sender", udp = true }]

[factors]
ip = [4, 6]

[[points]]
label = "back"
from = "receiver"
to = "sender"

[hosts.sender]
agent4 = "198.18.1.2"
agent6 = "2001:2:0:1::2"
key_env = "NOT_READ_BY_A_DRY_RUN"

[hosts.receiver]
agent = "2001:2:0:4::2"
agent4 = "198.18.4.2"
"#;
        let e = Plan::parse(text, false).unwrap_err();
        assert!(e.to_string().contains("not both"), "{e}");
        let text = text.replace("agent = \"2001:2:0:4::2\"", "agent6 = \"2001:2:0:4::2\"");
        let plan = Plan::parse(&text, false).unwrap();
        let (target, topology) = target_of(&plan, Path::new("plans/x.toml"), false).unwrap();
        assert!(topology.is_none());
        let out = dry_run(&plan, &target);
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(
            lines[0],
            "plan across: 1 points × 2 families × 1 repetitions = 2 runs of 2 s, about 9 s in all"
        );
        // Each flow with its seed, the same over both families.
        let (seed, bg) = (
            lab::plan::flow_seed("across", "back", None),
            lab::plan::flow_seed("across", "back", Some("bg1")),
        );
        assert_eq!(
            lines[1..6],
            [
                "hosts (each runs `dualperf agent`; nothing is started on them):".to_owned(),
                "  receiver  IPv4 198.18.4.2, IPv6 2001:2:0:4::2, port 4646, no key".to_owned(),
                "  sender    IPv4 198.18.1.2, IPv6 2001:2:0:1::2, port 4646, key from $NOT_READ_BY_A_DRY_RUN".to_owned(),
                format!("rep001-back-ipv4  receiver → sender: dualperf send --from 198.18.4.2:4646 198.18.1.2 --port 4646 --udp --label back --seed {seed}"),
                format!("    beside it, bg1 from receiver to sender: dualperf send --from 198.18.4.2:4646 198.18.1.2 --port 4646 --udp --seed {bg}"),
            ]
        );
        assert_eq!(
            lines[6],
            format!("rep001-back-ipv6  receiver → sender: dualperf send --from [2001:2:0:4::2]:4646 2001:2:0:1::2 --port 4646 --udp --label back --seed {seed}")
        );
        // Running it reads the keys: a missing variable is a usage error naming it.
        let e = target_of(&plan, Path::new("plans/x.toml"), true).unwrap_err();
        assert!(
            e.to_string().contains("NOT_READ_BY_A_DRY_RUN is not set"),
            "{e}"
        );
    }
}
