//! `dualperf campaign MESH --store URL`: a controller of a mesh campaign. It queues the
//! mesh's runs in PostgreSQL (once, whichever controller comes first), then claims them
//! (`lab::pgqueue`) with `--workers` threads and measures each with the agents:
//! `dualperf send --from SRC DST`, the source agent sending to the destination agent.
//! Several controllers may drive one campaign; each ends when no run is left.

use std::io::Read;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use lab::mesh::Mesh;
use lab::pgqueue::{Claim, Outcome, Queue};

use crate::usage;

/// Drive a mesh campaign: every ordered pair of agents, both families, the mesh's tests,
/// in rounds (docs/campaigns.md).
///
/// The mesh's runs live in PostgreSQL (--store): the first controller queues them, and
/// every controller of the campaign claims runs there (SELECT … FOR UPDATE SKIP LOCKED),
/// measures them with the agents, and writes each result or failure back. A claim is a
/// lease: if a controller dies, its runs are claimed again once their leases pass. No two
/// exclusive tests (throughput) share a host at once. A run whose family an agent lacks
/// is recorded failed with the reason.
#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:
  dualperf campaign plans/mesh/fleet16.toml --store postgresql://dualperf@db/fleet --key-file agent.key
  dualperf export --store postgresql://dualperf@db/fleet --sql \"SELECT state, count(*) FROM campaign_runs GROUP BY state\"")]
pub(crate) struct CampaignArgs {
    /// The mesh (TOML): agents, tests, rounds, interval and slip.
    mesh: PathBuf,
    /// The PostgreSQL store that holds the queue and the results.
    #[arg(
        long,
        value_name = "URL",
        env = "DUALPERF_STORE",
        hide_env_values = true
    )]
    store: String,
    /// This controller's name in its claims [default: HOST-PID].
    #[arg(long, value_name = "NAME")]
    controller: Option<String>,
    /// Runs measured at once by this controller.
    #[arg(long, default_value_t = 4, value_name = "N", value_parser = clap::value_parser!(u16).range(1..=256))]
    workers: u16,
    /// A claim's lease: a run this controller has not finished by then may be claimed by
    /// another. A run is stopped and failed at half its lease.
    #[arg(long, default_value = "60s", value_parser = crate::args::std_duration, value_name = "DURATION")]
    lease: Duration,
    /// The agents' key, from a file (else DUALPERF_KEY).
    #[arg(long, value_name = "FILE")]
    key_file: Option<PathBuf>,
    /// Claim and finish every run without measuring it: the queue's own rate, for sizing
    /// a fleet's PostgreSQL (bench/README.md). The runs are recorded failed, "not
    /// measured (--no-measure)".
    #[arg(long)]
    no_measure: bool,
    /// Queue the campaign's runs and exit (a benchmark times the claims alone).
    #[arg(long, hide = true)]
    queue_only: bool,
    /// Print the controller's summary as JSON.
    #[arg(long)]
    json: bool,
}

/// What one controller did.
#[derive(Debug, Default, serde::Serialize)]
struct Summary {
    campaign: String,
    controller: String,
    queued_now: u64,
    claims: u64,
    done: u64,
    failed: u64,
    /// Finishes refused: the lease had passed and another controller had the run.
    lost_claims: u64,
    elapsed_ns: u64,
    claims_per_s: f64,
    campaign_done: i64,
    campaign_failed: i64,
}

pub(crate) fn run(args: CampaignArgs) -> Result<()> {
    let text = crate::args::read_input(&args.mesh, "the mesh")?;
    let mesh = match Mesh::parse(&text) {
        Ok(m) => m,
        Err(e) => usage!("{}: {e}", args.mesh.display()),
    };
    for t in &mesh.tests {
        check_test_args(&t.name, &t.args)?;
    }
    let key = match &args.key_file {
        Some(f) => Some(
            crate::args::read_input(f, "the key")?
                .trim_end_matches(['\n', '\r'])
                .to_owned(),
        ),
        None => std::env::var("DUALPERF_KEY").ok().filter(|k| !k.is_empty()),
    };
    let controller = args
        .controller
        .clone()
        .unwrap_or_else(|| format!("{}-{}", crate::export::host_name(), std::process::id()));
    let mut queue = Queue::connect(&args.store).context("cannot open the PostgreSQL store")?;
    let queued_now = queue.enqueue(&mesh)?;
    crate::out::note!(
        "dualperf campaign: {}: {queued_now} runs queued by {controller}; {} workers",
        mesh.name,
        args.workers
    );
    if args.queue_only {
        return Ok(());
    }
    let stop = crate::interrupt::flag();
    let start = Instant::now();
    let counts = Arc::new(Counts::default());
    let exe = std::env::current_exe().context("cannot find the dualperf binary")?;
    let job = Arc::new(Job {
        mesh,
        controller: controller.clone(),
        lease: args.lease,
        key,
        exe,
        no_measure: args.no_measure,
        url: args.store.clone(),
    });
    let workers: Vec<_> = (0..args.workers)
        .map(|i| {
            let (job, counts, stop) = (job.clone(), counts.clone(), stop.clone());
            std::thread::Builder::new()
                .name(format!("campaign-{i}"))
                .spawn(move || work(&job, &counts, &stop))
        })
        .collect::<std::io::Result<_>>()?;
    let mut first_error = None;
    for w in workers {
        match w.join() {
            Ok(Ok(())) => {}
            Ok(Err(e)) => first_error = first_error.or(Some(e)),
            Err(_) => first_error = first_error.or(Some(anyhow::anyhow!("a worker panicked"))),
        }
    }
    let elapsed = start.elapsed();
    let progress = queue.progress(&job.mesh.name)?;
    let claims = counts.claims.load(Ordering::Relaxed);
    let summary = Summary {
        campaign: job.mesh.name.clone(),
        controller,
        queued_now,
        claims,
        done: counts.done.load(Ordering::Relaxed),
        failed: counts.failed.load(Ordering::Relaxed),
        lost_claims: counts.lost.load(Ordering::Relaxed),
        elapsed_ns: u64::try_from(elapsed.as_nanos()).unwrap_or(u64::MAX),
        claims_per_s: claims as f64 / elapsed.as_secs_f64().max(1e-9),
        campaign_done: progress.done,
        campaign_failed: progress.failed,
    };
    if args.json {
        crate::out::print_json(&summary)?;
    } else {
        crate::out::print(format!(
            "campaign {}: this controller ({}) claimed {} runs ({:.1}/s): {} done, {} failed, {} lost to an expired lease; the campaign: {} done, {} failed, {} left\n",
            summary.campaign,
            summary.controller,
            summary.claims,
            summary.claims_per_s,
            summary.done,
            summary.failed,
            summary.lost_claims,
            progress.done,
            progress.failed,
            progress.queued + progress.claimed,
        ))?;
    }
    match first_error {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

/// What the workers share.
struct Job {
    mesh: Mesh,
    controller: String,
    lease: Duration,
    key: Option<String>,
    exe: PathBuf,
    no_measure: bool,
    url: String,
}

#[derive(Default)]
struct Counts {
    claims: AtomicU64,
    done: AtomicU64,
    failed: AtomicU64,
    lost: AtomicU64,
}

/// One worker: claim, measure, finish, until no run is left (or Ctrl-C).
fn work(job: &Job, counts: &Counts, stop: &AtomicBool) -> Result<()> {
    let mut queue = Queue::connect(&job.url)?;
    let campaign = &job.mesh.name;
    while !stop.load(Ordering::Relaxed) {
        let Some(claim) = queue.claim(campaign, &job.controller, job.lease)? else {
            if queue.progress(campaign)?.finished() {
                return Ok(());
            }
            // Runs not yet due, or held by live claims (exclusive ones among them).
            std::thread::sleep(Duration::from_millis(100));
            continue;
        };
        counts.claims.fetch_add(1, Ordering::Relaxed);
        let outcome = if job.no_measure {
            Outcome::Failed {
                reason: "not measured (--no-measure)".into(),
                result: None,
            }
        } else {
            measure(job, &claim)
        };
        match &outcome {
            Outcome::Done(_) => counts.done.fetch_add(1, Ordering::Relaxed),
            Outcome::Failed { .. } => counts.failed.fetch_add(1, Ordering::Relaxed),
        };
        if !queue.finish(&claim, &job.controller, &outcome)? {
            counts.lost.fetch_add(1, Ordering::Relaxed);
            eprintln!(
                "dualperf campaign: warning: run {} ({} → {}, IPv{}, {}) was claimed again after this controller's lease passed; its result here is dropped",
                claim.id, claim.src, claim.dst, claim.family, claim.test
            );
        }
    }
    Ok(())
}

/// Measure `claim`: the source agent sends the test's flow to the destination agent.
fn measure(job: &Job, claim: &Claim) -> Outcome {
    let (Some(src), Some(dst)) = (job.mesh.agent(&claim.src), job.mesh.agent(&claim.dst)) else {
        return failed(format!("{} or {} is not in the mesh", claim.src, claim.dst));
    };
    let bracket = |a: &str| {
        if a.contains(':') {
            format!("[{a}]")
        } else {
            a.to_owned()
        }
    };
    let mut cmd = Command::new(&job.exe);
    cmd.arg("--quiet")
        .arg("send")
        .arg("--from")
        .arg(format!("{}:{}", bracket(&claim.src_addr), src.port))
        .arg(&claim.dst_addr)
        .args(["--port", &dst.port.to_string(), "--json"])
        .args(&claim.args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if let Some(k) = &job.key {
        cmd.env("DUALPERF_KEY", k);
    }
    netio::process::die_with_parent(&mut cmd, signal_hook::consts::SIGKILL);
    let limit = job.lease / 2;
    match run_within(cmd, limit) {
        Err(e) => failed(format!("cannot run dualperf send: {e}")),
        Ok(None) => failed(format!(
            "no result within {} (half the lease)",
            human_secs(limit)
        )),
        Ok(Some((code, stdout, stderr))) => {
            let doc: Option<serde_json::Value> = serde_json::from_str(&stdout).ok();
            match (code, doc) {
                (0, Some(doc)) => Outcome::Done(doc),
                (_, doc) => {
                    let why = stderr
                        .lines()
                        .rev()
                        .find(|l| !l.trim().is_empty())
                        .unwrap_or("dualperf send failed and said nothing")
                        .trim()
                        .chars()
                        .take(400)
                        .collect();
                    Outcome::Failed {
                        reason: why,
                        result: doc,
                    }
                }
            }
        }
    }
}

fn failed(reason: String) -> Outcome {
    Outcome::Failed {
        reason,
        result: None,
    }
}

fn human_secs(d: Duration) -> String {
    format!("{:.1} s", d.as_secs_f64())
}

/// Run `cmd` for at most `limit`: its exit code, stdout and stderr; `None` when it was
/// killed at the limit.
fn run_within(mut cmd: Command, limit: Duration) -> std::io::Result<Option<(i32, String, String)>> {
    let mut child = cmd.spawn()?;
    let mut out = child.stdout.take().expect("piped");
    let mut err = child.stderr.take().expect("piped");
    let reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = out.read_to_string(&mut s);
        s
    });
    let err_reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = err.read_to_string(&mut s);
        s
    });
    let deadline = Instant::now() + limit;
    let status = loop {
        if let Some(s) = child.try_wait()? {
            break Some(s);
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let stdout = reader.join().unwrap_or_default();
    let stderr = err_reader.join().unwrap_or_default();
    Ok(status.map(|s| (s.code().unwrap_or(-1), stdout, stderr)))
}

/// A test's `send` options must be ones `send` takes: checked before anything is queued.
fn check_test_args(name: &str, args: &[String]) -> Result<()> {
    let argv = ["dualperf", "send", "198.18.0.1", "--from", "198.18.0.2"]
        .into_iter()
        .map(String::from)
        .chain(args.iter().cloned());
    if let Err(e) = crate::parse_from(argv) {
        let first = e.to_string();
        let first = first
            .lines()
            .next()
            .unwrap_or("")
            .trim_start_matches("error: ")
            .to_owned();
        usage!("test {name}: its args are not ones dualperf send takes: {first}");
    }
    Ok(())
}
