//! `dualperf run`: measure every run of a plan into a run directory.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use lab::plan::{Overrides, Plan};
pub(crate) use lab::resume::Settings;
use lab::resume::{Placed, DEFAULT_PARENT};
use lab::runner::{execute, Place, RunConfig, RunError, Target};
use lab::store::{Resolved, Store};

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
    #[arg(long, value_name = "DURATION", value_parser = lab::resume::parse_duration_arg)]
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
    /// Also store the run directory's runs and records in PostgreSQL, for a fleet's
    /// queries across hosts (`dualperf export --store`): postgresql://USER@HOST:PORT/DB
    /// (no TLS). The run directory stays the record; storing again replaces.
    #[arg(
        long,
        value_name = "URL",
        env = "DUALPERF_STORE",
        hide_env_values = true
    )]
    store: Option<String>,
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
    let Placed {
        dir,
        settings,
        resumed,
    } = place(&args, &whole.name)?;
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
    let mut note = |n: String| crate::out::note!("dualperf send: note: {n}");
    if let Err(e) = lab::check::flows(&plan, &mut note) {
        usage!("{}: {e}", at(e.line));
    }
    if args.dry_run {
        let (mut target, _) = target_of(&plan, &args.plan, false)?;
        resolve_names(&mut target)?;
        if args.json {
            let doc = lab::dryrun::document(&plan, &target);
            return crate::out::print_json(&crate::out::sorted_json(&doc)?);
        }
        return crate::out::print(lab::dryrun::text(&plan, &target));
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
        store: args.store.as_deref(),
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
    /// `--store`: a PostgreSQL store's URL.
    pub(crate) store: Option<&'a str>,
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
    // Where it runs, checked before the run directory is made: a topology, QoS file or
    // key that cannot be read leaves no directory behind.
    let (mut target, topology) = target_of(plan, job.plan_path, true)?;
    let named = resolve_names(&mut target)?;
    let qos_files =
        match lab::check::qos_files(plan, job.plan_path, topology.as_ref().map(|(t, _)| t)) {
            Ok(q) => q,
            Err(e) => usage!("{}: {e}", job.plan_path.display()),
        };
    let store = open_dir(job)?;
    record_names(&store, &named, job.resume)?;
    let stop = crate::interrupt::flag();
    let tty = crate::out::progress_on_stderr();
    let started = std::time::Instant::now();
    let progress = |done: usize, total: usize, run: &lab::plan::Run| {
        let elapsed = started.elapsed();
        let left = lab::progress::left(plan, done, total, elapsed);
        let what = lab::progress::what(plan, run);
        if tty {
            eprint!(
                "\r\x1b[2K{}",
                lab::progress::bar(done, total, &what, left, 24)
            );
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
    // results.
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
            store.keep_lab(t, text, &qos_files)?;
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
    if let Some(url) = job.store {
        match crate::export::store_dir(url, &store) {
            Ok(n) => crate::out::note!("{who}: {n} runs stored in PostgreSQL"),
            Err(e) => eprintln!(
                "{who}: warning: not stored in PostgreSQL ({e:#}); `dualperf export --store URL {}` stores it later",
                dir.display()
            ),
        }
    }
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
        if let Err(e) = lab::resume::same_plan(dir, &resolved) {
            usage!("{e}");
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
        &crate::out::sorted_json(&lab::host::this_host(&plan.target.to_string()))?,
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

impl Job<'_> {
    /// The command that goes on with this run.
    pub(crate) fn resume_command(&self) -> String {
        lab::resume::command(self.plan_path, self.dir, &self.settings, self.index)
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

/// Where a run goes and what it measures beside its plan (no directory for a dry run).
fn place(args: &RunArgs, plan: &str) -> Result<Placed> {
    let given = Settings {
        quick: args.quick,
        overrides: Overrides {
            repetitions: args.repetitions,
            duration: args.duration,
        },
    };
    if args.dry_run {
        return Ok(Placed {
            dir: PathBuf::new(),
            settings: given,
            resumed: None,
        });
    }
    match lab::resume::place(plan, args.dir.as_deref(), args.resume, given) {
        Ok(p) => Ok(p),
        Err(e) => usage!("{e}"),
    }
}

/// A hosts plan's hosts given by name, looked up per family now
/// ([`lab::hosts::resolve_names`], [`crate::names::pair`]): their addresses filled in.
fn resolve_names(target: &mut Target) -> Result<Vec<lab::hosts::Named>> {
    let Target::Hosts(h) = target else {
        return Ok(Vec::new());
    };
    let lookup = |name: &str| {
        crate::names::pair(name, "the plan measures both (or give agent4 and agent6)")
            .map(|p| (p.v4, p.v6))
    };
    match lab::hosts::resolve_names(&mut h.hosts, &lookup) {
        Ok(named) => Ok(named),
        Err(e) => usage!("{e}"),
    }
}

/// Each name's addresses kept as `hosts/HOST/addresses.json`; a resume whose lookup
/// gives other addresses than the run started with is refused, naming both.
fn record_names(store: &Store, named: &[lab::hosts::Named], resume: bool) -> Result<()> {
    for n in named {
        let path = store.dir().join(n.file());
        let before = std::fs::read_to_string(&path)
            .ok()
            .and_then(|t| serde_json::from_str::<lab::hosts::Named>(&t).ok());
        if let (true, Some(before)) = (resume, &before) {
            if let Err(e) = n.same_as(before) {
                usage!("{e}");
            }
        }
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)?;
        }
        store.write_json(&n.file(), n)?;
    }
    Ok(())
}

/// Where a plan's flows run, and its lab's topology ([`lab::check::target`]); with
/// `keys`, a hosts plan's keys are read from its files and the environment.
fn target_of(plan: &Plan, plan_path: &Path, keys: bool) -> Result<lab::check::Located> {
    let env = |var: &str| std::env::var(var).ok();
    match lab::check::target(plan, plan_path, keys.then_some(&env as _)) {
        Ok(t) => Ok(t),
        Err(e) => usage!("{e}"),
    }
}
