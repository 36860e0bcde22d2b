//! Measures a plan's runs with `dualperf` processes: one receiver for the whole plan on a
//! free port, one `dualperf send --json` per run, each result stored as soon as its run
//! ends. On loopback, or in a lab's namespaces (`ip netns exec`): senders in the
//! `sender` node, the receiver in the `receiver` node. Across real hosts
//! ([`Target::Hosts`]) nothing is started on them: their agents receive, and each flow
//! is a local `dualperf send --from AGENT DEST` that has the sending host's agent send
//! it; the plan starts by asking every agent for its clock (`dualperf clock --peer`).
//! Against one far end ([`Target::Peer`], `dualperf compare HOST`) nothing is started
//! either: each run is `dualperf send ADDR --port P` from here (`--reverse` when the far
//! end's agent sends, `--stamp` to a reflector).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use crate::executor::{
    local_sender, start_receiver, start_reflector, Executor, Output, Receiver, Sender,
};
pub use crate::executor::{Place, RunError};
use crate::hosts::{Hosts, Invocation, BG_FROM, BG_TO, RECEIVER, SENDER};
use crate::plan::point::send_argv;
use crate::plan::{Plan, Run};
use crate::store::{Background, RunRecord, Store, FORMAT_VERSION};
use results::clock::{PeerClockDoc, CLOCK_FORMAT_VERSION};
use results::send::SendReport;
use router::stats::RouterStats;

/// Where a plan's flows run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Target {
    /// Receivers and senders started by the runner: on loopback, or in a lab.
    Local(Place),
    /// Between the agents of real hosts (`target = "hosts"`), which the runner only
    /// drives: each flow is a local `dualperf send --from`.
    Hosts(Hosts),
    /// From here to one far end (`target = "peer"`), with its key.
    Peer(crate::plan::peer::Peer, Option<crate::hosts::Key>),
}

/// How to measure.
pub struct RunConfig<'a> {
    /// The `dualperf` binary.
    pub exe: PathBuf,
    /// Where.
    pub target: Target,
    /// Skip runs already stored.
    pub resume: bool,
    /// Set on Ctrl-C.
    pub stop: &'a AtomicBool,
    /// Called before each run: (runs done, runs to do in all, the run).
    pub progress: &'a dyn Fn(usize, usize, &Run),
    /// The text of every QoS file the plan's points name, by the name they give it.
    pub qos_files: BTreeMap<String, String>,
}

/// How long a sender may run beyond its duration before it is killed.
const SEND_MARGIN: std::time::Duration = std::time::Duration::from_secs(60);

/// What a plan measured.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Outcome {
    /// Runs measured now.
    pub measured: usize,
    /// Runs found already stored (with `--resume`).
    pub skipped: usize,
    /// Runs whose sender failed (kept as `runs/ID.failed`, measured again on
    /// `--resume`).
    pub failed: usize,
    /// Each failed run and why ([`crate::failures::summary`] words them).
    pub failures: Vec<crate::failures::Failure>,
}

/// Measure every run of `plan` not yet in `store`: its receiver and measured senders
/// started by `executor` (on a hosts plan, the senders are always processes).
pub fn execute(
    plan: &Plan,
    store: &Store,
    config: &RunConfig<'_>,
    executor: &mut dyn Executor,
) -> Result<Outcome, RunError> {
    let port = match &config.target {
        Target::Local(place) => executor.start_receiver(place)?,
        Target::Hosts(hosts) => {
            ask_hosts(plan, store, &config.exe, hosts)?;
            0
        }
        Target::Peer(peer, key) => {
            executor.peer_key(key.as_ref());
            peer.port
        }
    };
    // A plan's own STAMP reflector, in the receiver's place, for the whole plan.
    let _reflectors = match (&plan.stamp, &config.target) {
        (Some(st), Target::Local(place)) => st
            .reflectors
            .iter()
            .map(|c| start_reflector(c, place))
            .collect::<Result<Vec<_>, _>>()?,
        _ => Vec::new(),
    };
    let mut job = Job {
        plan,
        config,
        port,
        bg_receiver: None,
    };
    let mut outcome = Outcome::default();
    // Each run to measure with its number in the plan's order (from 1).
    let todo: Vec<(usize, &Run)> = plan
        .runs
        .iter()
        .enumerate()
        .filter(|(_, r)| !(config.resume && store.has_run(&r.id)))
        .map(|(i, r)| (i + 1, r))
        .collect();
    outcome.skipped = plan.runs.len() - todo.len();
    let interrupted = |o: &Outcome| RunError::Interrupted {
        done: o.skipped + o.measured,
        total: plan.runs.len(),
    };
    for (i, &(number, run)) in todo.iter().enumerate() {
        if config.stop.load(Ordering::SeqCst) {
            return Err(interrupted(&outcome));
        }
        if let Some(why) = executor.receiver_exited() {
            return Err(RunError::Receiver(format!(
                "{why} after {} runs",
                outcome.skipped + outcome.measured
            )));
        }
        (config.progress)(i, todo.len(), run);
        let record = job.measure(run, executor)?;
        if config.stop.load(Ordering::SeqCst) {
            // A run cut short by Ctrl-C is not a measurement of the plan's duration:
            // not stored, measured again on --resume.
            return Err(interrupted(&outcome));
        }
        if record.exit_code == 2 {
            return Err(RunError::Usage {
                run: run.id.clone(),
                stderr: record.stderr.trim().to_owned(),
            });
        }
        // A run counts as finished only with a report; a failed one is kept beside it
        // for its stderr, and measured again on --resume.
        if record.exit_code == 0 && record.report.is_some() {
            store.put_run(&record)?;
            outcome.measured += 1;
        } else {
            outcome.failed += 1;
            outcome.failures.push(crate::failures::Failure {
                number,
                id: run.id.clone(),
                reason: crate::failures::reason(record.exit_code, &record.stderr),
            });
            store.put_failed_run(&record)?;
        }
    }
    Ok(outcome)
}

/// A plan being measured: what every run shares.
struct Job<'a> {
    plan: &'a Plan,
    config: &'a RunConfig<'a>,
    /// The plan's receiver's port (0 on a hosts plan).
    port: u16,
    /// The background flows' receiver, started with the first run that has them.
    bg_receiver: Option<Receiver>,
}

impl<'a> Job<'a> {
    /// One run: the point's QoS files on the lab's routers, its background flows, the
    /// lead, the measured flow, then everything it left, as the record to store.
    fn measure(&mut self, run: &Run, executor: &mut dyn Executor) -> Result<RunRecord, RunError> {
        let (plan, config) = (self.plan, self.config);
        let point = &plan.points[run.point];
        self.set_qos(run)?;
        let lead = plan.background_lead.unwrap_or(DEFAULT_LEAD);
        let mut bg_procs = self.start_background(run)?;
        let (argv, fg) = self.foreground(run)?;
        // The measured flow's session is set up beside the background ones (a STAMP
        // flow has no session: it starts when the others have begun).
        let held = matches!(config.target, Target::Hosts(_)) || plan.stamp.is_none();
        let mut spawn_fg = |hold: bool| -> Result<Box<dyn Sender>, RunError> {
            match &fg {
                Foreground::Hosts(inv) => Ok(Box::new(spawn_send(&config.exe, inv, hold)?)),
                Foreground::Local(place, argv) => executor.start_sender(place, argv, hold),
                Foreground::Peer(argv) => executor.start_sender(&Place::Loopback, argv, hold),
            }
        };
        let held_fg = if held { Some(spawn_fg(true)?) } else { None };
        // Every session of the run is set up before any flow starts: a control
        // connection that crosses a link the flows saturate loses segments, which wait
        // out TCP's retransmission timeouts (and fail the handshake when they add up).
        let ready_by = std::time::Instant::now() + BACKGROUND_START;
        for p in &bg_procs {
            if !p.wait_ready(ready_by) {
                break;
            }
        }
        if let Some(p) = &held_fg {
            p.wait_ready(ready_by);
        }
        if !bg_procs.is_empty() {
            for p in &mut bg_procs {
                p.go();
            }
            // The lead counts from when every background flow has begun.
            let begun_by = std::time::Instant::now() + BACKGROUND_START;
            for p in &bg_procs {
                if !p.wait_started(begun_by) {
                    break;
                }
            }
            let until =
                std::time::Instant::now() + std::time::Duration::from_nanos(lead.as_nanos());
            while std::time::Instant::now() < until && !config.stop.load(Ordering::SeqCst) {
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
        }
        let started_unix_ns = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64);
        let fg = match held_fg {
            Some(mut p) => {
                p.go();
                p
            }
            None => spawn_fg(false)?,
        };
        // A sender gets its duration and a generous margin; a wedged one is killed and
        // its run counts as failed.
        let deadline = std::time::Instant::now()
            + std::time::Duration::from_nanos(plan.duration.as_nanos() + lead.as_nanos())
            + SEND_MARGIN;
        let finished = fg.wait(deadline)?;
        let background = finish_background(bg_procs, deadline)?;
        let routers = self.router_stats();
        let router_stalls = stalls(&routers);
        for (node, ns) in &router_stalls {
            eprintln!(
                "dualperf run: warning: run {}: router {node} stalled {:.1} ms (a loop turn or gap over {} ms); its delays and losses may be the router's",
                run.id,
                *ns as f64 / 1e6,
                ROUTER_STALL_LIMIT_NS / 1_000_000
            );
        }
        let code = finished.exit_code.unwrap_or(-1);
        let mut stderr = finished.stderr;
        let report: Option<SendReport> = match serde_json::from_str(&finished.stdout) {
            Ok(r) => Some(r),
            Err(e) if !finished.stdout.trim().is_empty() => {
                stderr.push_str(&format!(
                    "dualperf run: the sender's report does not read: {e}\n"
                ));
                None
            }
            Err(_) => None,
        };
        Ok(RunRecord {
            format_version: FORMAT_VERSION,
            run: run.clone(),
            point: point.id.clone(),
            argv,
            started_unix_ns,
            exit_code: code,
            stderr,
            report,
            attempts: finished.attempts,
            background,
            routers,
            router_stalls,
        })
    }

    /// A lab's routers start every run afresh with the point's QoS files (or the
    /// topology's), so their counters are the run's.
    fn set_qos(&self, run: &Run) -> Result<(), RunError> {
        let Target::Local(Place::Lab { lab, routers, .. }) = &self.config.target else {
            return Ok(());
        };
        let point = &self.plan.points[run.point];
        let failed = |message: String| RunError::Lab {
            run: run.id.clone(),
            message,
        };
        for (node, own) in routers {
            let text = match point.qos.get(node).map(String::as_str) {
                Some("none") => None,
                Some(file) => Some(
                    self.config
                        .qos_files
                        .get(file)
                        .ok_or_else(|| failed(format!("QoS file {file} was not read")))?,
                ),
                None => own.as_ref(),
            };
            crate::netlab::set_qos(lab, node, text.map(String::as_str))
                .map_err(|e| failed(e.to_string()))?;
        }
        Ok(())
    }

    /// The run's background flows, held: each has set its session up when it says so.
    /// They run until stopped half a second after the measured flow ends (SIGINT: each
    /// reports what it measured); their duration is only a backstop.
    fn start_background(&mut self, run: &Run) -> Result<Vec<Output>, RunError> {
        let (plan, config) = (self.plan, self.config);
        let point = &plan.points[run.point];
        let lead = plan.background_lead.unwrap_or(DEFAULT_LEAD);
        let bg_ns = lead.as_nanos() + plan.duration.as_nanos() + BACKGROUND_BACKSTOP_NS;
        let failed = |message: String| RunError::Lab {
            run: run.id.clone(),
            message,
        };
        let mut procs = Vec::new();
        for b in &point.background {
            let args = plan.background_args(point, b);
            let proc = match &config.target {
                Target::Hosts(hosts) => {
                    let from = b.from.as_deref().unwrap_or(BG_FROM);
                    let to = b.to.as_deref().unwrap_or(BG_TO);
                    let inv = hosts
                        .send(from, to, run.family, args, bg_ns, true)
                        .map_err(failed)?;
                    spawn_send(&config.exe, &inv, true)?
                }
                Target::Peer(..) => {
                    return Err(failed(
                        "a peer plan measures one flow at a time: no background flows".into(),
                    ))
                }
                Target::Local(main) => {
                    let bg_place = main.background().ok_or_else(|| {
                        failed("background flows need lab nodes named 'bg-a' and 'bg-b'".into())
                    })?;
                    let (place, port) = if b.from_sender {
                        (main, self.port)
                    } else {
                        if self.bg_receiver.is_none() {
                            self.bg_receiver = Some(start_receiver(&config.exe, &bg_place)?);
                        }
                        (&bg_place, self.bg_receiver.as_ref().map_or(0, |r| r.port))
                    };
                    let argv = send_argv(None, place.dest(run.family), port, args, bg_ns, true);
                    Output::spawn(
                        &mut local_sender(&config.exe, place, &argv),
                        &config.exe,
                        "send",
                        true,
                    )?
                }
            };
            procs.push(proc);
        }
        Ok(procs)
    }

    /// The measured flow's command line (as recorded) and where it runs.
    fn foreground(&self, run: &Run) -> Result<(Vec<String>, Foreground<'a>), RunError> {
        let (plan, config) = (self.plan, self.config);
        let point = &plan.points[run.point];
        let duration_ns = plan.duration.as_nanos();
        Ok(match &config.target {
            Target::Hosts(hosts) => {
                let from = point.from.as_deref().unwrap_or(SENDER);
                let to = point.to.as_deref().unwrap_or(RECEIVER);
                // Each run's delay distribution, for the report's CDFs: the sending
                // agent's session asks the receiving agent for it.
                let mut args = plan.measured_args(point);
                args.push("--cdf".into());
                let inv = hosts
                    .send(from, to, run.family, args, duration_ns, false)
                    .map_err(|message| RunError::Lab {
                        run: run.id.clone(),
                        message,
                    })?;
                (inv.argv.clone(), Foreground::Hosts(inv))
            }
            Target::Local(place) => {
                // A STAMP plan's measured flow goes to the reflector instead.
                let (port, args) = match &plan.stamp {
                    Some(st) => {
                        let mut args = plan.flow_args(point);
                        args.push("--stamp".into());
                        args.push("--cdf".into());
                        (st.port, args)
                    }
                    None => {
                        // Each run's delay distribution, for the report's CDFs.
                        let mut args = plan.measured_args(point);
                        args.push("--cdf".into());
                        (self.port, args)
                    }
                };
                let argv = send_argv(None, place.dest(run.family), port, args, duration_ns, false);
                (argv.clone(), Foreground::Local(place, argv))
            }
            Target::Peer(peer, _) => {
                let args = crate::plan::peer::send_args(plan, peer, point);
                let dest = peer.addr(run.family);
                let argv = send_argv(
                    None,
                    dest.ip().to_string(),
                    dest.port(),
                    args,
                    duration_ns,
                    false,
                );
                (argv.clone(), Foreground::Peer(argv))
            }
        })
    }

    /// Each lab router's counters after the run.
    fn router_stats(&self) -> BTreeMap<String, RouterStats> {
        match &self.config.target {
            Target::Local(Place::Lab { lab, routers, .. }) => routers
                .iter()
                .filter_map(|(node, _)| {
                    crate::netlab::router_stats(lab, node)
                        .ok()
                        .map(|s| (node.clone(), s))
                })
                .collect(),
            Target::Local(Place::Loopback) | Target::Hosts(_) | Target::Peer(..) => BTreeMap::new(),
        }
    }
}

/// The background flows' reports, half a second after the measured flow ended: each
/// is interrupted and says what it measured (or is kept as failed).
fn finish_background(
    procs: Vec<Output>,
    deadline: std::time::Instant,
) -> Result<Vec<Background>, RunError> {
    if procs.is_empty() {
        return Ok(Vec::new());
    }
    std::thread::sleep(std::time::Duration::from_millis(500));
    for p in &procs {
        p.interrupt();
    }
    procs
        .into_iter()
        .map(|p| {
            let (status, out, err) = p.wait(deadline)?;
            Ok(match serde_json::from_str::<SendReport>(&out) {
                Ok(report) => Background::Report(Box::new(report)),
                Err(_) => Background::Failed {
                    exit_code: status.and_then(|s| s.code()),
                    stderr: err,
                },
            })
        })
        .collect()
}

/// A local `dualperf` child with the invocation's arguments and environment.
fn spawn_send(exe: &std::path::Path, inv: &Invocation, hold: bool) -> Result<Output, RunError> {
    let mut cmd = Command::new(exe);
    cmd.args(&inv.argv);
    inv.apply_env(&mut cmd);
    Output::spawn(&mut cmd, exe, "send", hold)
}

/// How long a host's agent may take to answer `dualperf clock --peer`.
const CLOCK_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(60);

/// Ask every host's agent for its description and clock (`dualperf clock --peer
/// --json`, over the plan's first family) and keep each answer as
/// `hosts/NAME/host.json`; a host that does not answer stops the plan before any run.
fn ask_hosts(
    plan: &Plan,
    store: &Store,
    exe: &std::path::Path,
    hosts: &Hosts,
) -> Result<(), RunError> {
    let family = plan.families.first().copied().unwrap_or(4);
    for name in hosts.hosts.keys() {
        let failed = |addr: String, message: String| RunError::Host {
            host: name.clone(),
            addr,
            message,
        };
        let (agent, inv) = hosts
            .clock(name, family)
            .map_err(|m| failed("-".into(), m))?;
        let mut cmd = Command::new(exe);
        cmd.args(&inv.argv);
        inv.apply_env(&mut cmd);
        let out = Output::spawn(&mut cmd, exe, "clock --peer", false)?;
        let (status, stdout, stderr) = out.wait(std::time::Instant::now() + CLOCK_TIMEOUT)?;
        let doc = peer_clock(status, &stdout, &stderr).map_err(|m| failed(agent.to_string(), m))?;
        store.put_host_clock(name, &doc)?;
    }
    Ok(())
}

/// What `dualperf clock --peer --json` printed, or why it gave nothing usable.
fn peer_clock(
    status: Option<std::process::ExitStatus>,
    stdout: &str,
    stderr: &str,
) -> Result<PeerClockDoc, String> {
    let said = stderr
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .map_or(String::new(), |l| format!(": {}", l.trim()));
    let Some(status) = status else {
        return Err(format!(
            "its agent did not answer within {} s{said}",
            CLOCK_TIMEOUT.as_secs()
        ));
    };
    if !status.success() {
        return Err(format!(
            "its agent did not answer (dualperf clock --peer exited {}){said}",
            status
                .code()
                .map_or("on a signal".into(), |c| c.to_string())
        ));
    }
    let doc: PeerClockDoc = serde_json::from_str(stdout)
        .map_err(|e| format!("dualperf clock --peer's answer does not read: {e}"))?;
    if doc.format_version != CLOCK_FORMAT_VERSION {
        return Err(format!(
            "dualperf clock --peer's answer is format version {}, not {CLOCK_FORMAT_VERSION}",
            doc.format_version
        ));
    }
    Ok(doc)
}

/// A router loop turn or gap (`dualperf route`'s `loop.max_turn_ns`, `max_gap_ns`)
/// longer than this during a run flags the run (`router_stalls` in its record, and a
/// warning): 1 ms is about 100 frames of a 1 Gbit/s flow held back.
pub const ROUTER_STALL_LIMIT_NS: u64 = 1_000_000;

/// The routers whose loop stalled longer than [`ROUTER_STALL_LIMIT_NS`], with their
/// longest turn or gap.
fn stalls(routers: &BTreeMap<String, RouterStats>) -> BTreeMap<String, u64> {
    routers
        .iter()
        .filter_map(|(node, stats)| {
            let worst = stats.looped.max_turn_ns.max(stats.looped.max_gap_ns);
            (worst > ROUTER_STALL_LIMIT_NS).then(|| (node.clone(), worst))
        })
        .collect()
}

/// Background flows' duration beyond the lead and the measured flow's, ns: a backstop
/// (they are interrupted half a second after the measured flow ends).
const BACKGROUND_BACKSTOP_NS: u64 = 60_000_000_000;

/// How long a run's senders may take to set up their sessions (their control
/// connections), and its background flows to begin once told.
const BACKGROUND_START: std::time::Duration = std::time::Duration::from_secs(30);

/// How long background flows run before the measured flow starts, by default.
const DEFAULT_LEAD: wire::time::Duration = wire::time::Duration::from_secs(2);

/// The measured flow's sender, before it is started.
enum Foreground<'a> {
    /// `dualperf send --from AGENT`, here.
    Hosts(Invocation),
    /// `dualperf send` here or in the lab's sender node.
    Local(&'a Place, Vec<String>),
    /// `dualperf send` here, to a peer plan's far end.
    Peer(Vec<String>),
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::executor::Processes;

    #[test]
    fn a_router_whose_loop_turned_or_paused_over_a_millisecond_flags_the_run() {
        let stats = |max_turn_ns, max_gap_ns| RouterStats {
            looped: router::stats::LoopStats {
                max_turn_ns,
                max_gap_ns,
                ..Default::default()
            },
            ..Default::default()
        };
        let routers = BTreeMap::from([
            ("r1".to_owned(), stats(400_000, 2_500_000)),
            ("r2".to_owned(), stats(1_000_000, 900_000)),
            ("r3".to_owned(), stats(1_000_001, 0)),
            // A router whose loop record is empty flags nothing.
            ("r4".to_owned(), RouterStats::default()),
        ]);
        assert_eq!(
            stalls(&routers),
            BTreeMap::from([("r1".to_owned(), 2_500_000), ("r3".to_owned(), 1_000_001)])
        );
    }

    #[test]
    fn every_local_sender_gets_the_same_tail_of_options() {
        assert_eq!(
            send_argv(None, "::1".into(), 4711, vec!["--udp".into()], 5, false),
            [
                "send",
                "::1",
                "--port",
                "4711",
                "--udp",
                "--duration",
                "5ns",
                "--json",
                "--connect-timeout",
                "30s"
            ]
        );
        let bg = send_argv(None, "198.18.3.2".into(), 1, Vec::new(), 7, true);
        assert_eq!(
            bg[5..],
            [
                "7ns",
                "--json",
                "--announce-start",
                "--connect-timeout",
                "30s"
            ]
        );
    }

    fn peer_doc(peer: &str) -> PeerClockDoc {
        let host = |name: &str| results::clock::HostDoc {
            tool: "dualperf 0.1.0".into(),
            hostname: name.into(),
            kernel: "Linux 6.1".into(),
            cpus: 2,
            boot_id: None,
            clock: results::clock::SyncState::default(),
            wall_unix_ns: 1_800_000_000_000_000_000,
        };
        PeerClockDoc {
            format_version: CLOCK_FORMAT_VERSION,
            peer: peer.parse().unwrap(),
            local: host("controller"),
            remote: host("agent"),
            offset: Some(results::clock::OffsetEstimate {
                offset_ns: 1_500_000,
                bound_ns: 200_000,
                delay_min_ns: 400_000,
                samples: 8,
                same_clock: false,
            }),
        }
    }

    #[test]
    fn a_host_s_clock_answer_is_read_or_its_failure_said() {
        use std::os::unix::process::ExitStatusExt;
        let ok = std::process::ExitStatus::from_raw(0);
        let failed = std::process::ExitStatus::from_raw(1 << 8);
        let doc = peer_doc("198.18.1.2:4646");
        let json = serde_json::to_string(&doc).unwrap();
        assert_eq!(peer_clock(Some(ok), &json, ""), Ok(doc.clone()));
        let e = peer_clock(None, "", "").unwrap_err();
        assert_eq!(e, "its agent did not answer within 60 s");
        let e = peer_clock(
            Some(failed),
            "",
            "warning: x\ndualperf clock: connection refused\n",
        )
        .unwrap_err();
        assert_eq!(
            e,
            "its agent did not answer (dualperf clock --peer exited 1): dualperf clock: connection refused"
        );
        assert!(peer_clock(Some(ok), "{}", "")
            .unwrap_err()
            .contains("does not read"));
        let mut v2 = doc;
        v2.format_version = 99;
        let e = peer_clock(Some(ok), &serde_json::to_string(&v2).unwrap(), "").unwrap_err();
        assert!(e.contains("format version 99"), "{e}");
    }

    /// A stand-in for `dualperf`: logs each call's arguments and key variables, and
    /// answers `clock` and `send` from files (or fails `clock` for the host at `fail`).
    /// A held `send` logs "ready" in `events` when it says so, and "go" once told.
    fn fake_dualperf(dir: &std::path::Path, fail: Option<&str>) -> PathBuf {
        use std::os::unix::fs::PermissionsExt;
        let d = dir.display();
        let fail = fail.map_or(String::new(), |addr| {
            format!("[ \"$1 $3\" = \"clock {addr}\" ] && {{ echo 'dualperf clock: connection refused' >&2; exit 1; }}\n")
        });
        let script = format!(
            "#!/bin/sh\necho \"$* | agent=${{DUALPERF_AGENT_KEY-unset}} key=${{DUALPERF_KEY-unset}}\" >> {d}/calls\n{fail}\
             case \"$1\" in\n  clock) cat {d}/clock.json ;;\n  send) hold=; ann=\n    for a; do [ \"$a\" = --wait-for-go ] && hold=1; [ \"$a\" = --announce-start ] && ann=1; done\n    if [ -n \"$hold\" ]; then echo ready >> {d}/events; echo 'dualperf send: ready' >&2; read go || exit 1; echo go >> {d}/events; fi\n    [ -n \"$ann\" ] && echo 'dualperf send: started' >&2\n    cat {d}/send.json ;;\nesac\n"
        );
        let exe = dir.join("dualperf");
        std::fs::write(&exe, script).unwrap();
        std::fs::set_permissions(&exe, std::fs::Permissions::from_mode(0o755)).unwrap();
        std::fs::write(
            dir.join("clock.json"),
            serde_json::to_string(&peer_doc("198.18.1.2:4646")).unwrap(),
        )
        .unwrap();
        let report = crate::testdata::report(serde_json::json!({}));
        std::fs::write(
            dir.join("send.json"),
            serde_json::to_string(&report).unwrap(),
        )
        .unwrap();
        exe
    }

    const HOSTS_PLAN: &str = r#"version = 1
name = "across"
duration = "1s"
target = "hosts"
background_lead = "0s"

[flow]
udp = true
background = [{ from = "sender", udp = true }, { from = "receiver", to = "sender", tcp = true }]

[factors]
ip = [6]

[hosts.sender]
agent6 = "2001:2:0:1::2"
key_env = "SENDER_KEY"

[hosts.receiver]
agent = "2001:2:0:4::2"
port = 5000
"#;

    #[test]
    fn a_hosts_plan_drives_the_agents_through_local_senders() {
        let dir =
            std::env::temp_dir().join(format!("dualperf-runner-hosts-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let exe = fake_dualperf(&dir, None);
        let plan = Plan::parse(HOSTS_PLAN, false).unwrap();
        let keys = BTreeMap::from([("sender".to_owned(), crate::hosts::Key::new("s-secret"))]);
        let stop = AtomicBool::new(false);
        let store = Store::create(&dir.join("run")).unwrap();
        let config = RunConfig {
            exe,
            target: Target::Hosts(Hosts::new(plan.hosts.clone(), keys)),
            resume: false,
            stop: &stop,
            progress: &|_, _, _| {},
            qos_files: BTreeMap::new(),
        };
        let outcome = execute(
            &plan,
            &store,
            &config,
            &mut Processes::new(config.exe.clone()),
        )
        .unwrap();
        assert_eq!((outcome.measured, outcome.failed), (1, 0));
        let calls = std::fs::read_to_string(dir.join("calls")).unwrap();
        let calls: Vec<&str> = calls.lines().collect();
        assert_eq!(
            calls[..2],
            [
                "clock --peer [2001:2:0:4::2]:5000 --json | agent=unset key=unset",
                "clock --peer [2001:2:0:1::2]:4646 --json | agent=unset key=s-secret",
            ]
        );
        let mut sends = calls[2..].to_vec();
        sends.sort_unstable();
        // Each flow with its seed: the point's, and each background flow's by label.
        let seed = |bg| crate::plan::flow_seed("across", "flow", bg);
        assert_eq!(
            sends,
            [
                format!("send --from [2001:2:0:1::2]:4646 2001:2:0:4::2 --port 5000 --udp --seed {} --cdf --duration 1000000000ns --json --connect-timeout 30s --wait-for-go | agent=s-secret key=unset", seed(None)),
                format!("send --from [2001:2:0:1::2]:4646 2001:2:0:4::2 --port 5000 --udp --seed {} --duration 61000000000ns --json --announce-start --connect-timeout 30s --wait-for-go | agent=s-secret key=unset", seed(Some("bg1"))),
                format!("send --from [2001:2:0:4::2]:5000 2001:2:0:1::2 --port 4646 --tcp --seed {} --duration 61000000000ns --json --announce-start --connect-timeout 30s --wait-for-go | agent=unset key=s-secret", seed(Some("bg2"))),
            ]
        );
        // Every session was set up before any flow started.
        let events = std::fs::read_to_string(dir.join("events")).unwrap();
        assert_eq!(
            events.lines().collect::<Vec<_>>(),
            ["ready", "ready", "ready", "go", "go", "go"]
        );
        let runs = store.runs().unwrap();
        assert_eq!(runs.len(), 1);
        assert_eq!(
            runs[0].argv[..3],
            ["send", "--from", "[2001:2:0:1::2]:4646"]
        );
        // The record keeps the command that measures the same by hand: no hold.
        assert!(!runs[0].argv.iter().any(|a| a == "--wait-for-go"));
        assert_eq!(runs[0].background.len(), 2);
        assert!(runs[0].background.iter().all(|b| b.report().is_some()));
        let clocks = store.host_clocks().unwrap();
        assert_eq!(clocks.keys().collect::<Vec<_>>(), ["receiver", "sender"]);
        // No key reaches the run directory.
        for e in std::fs::read_dir(dir.join("run/runs")).unwrap() {
            let text = std::fs::read_to_string(e.unwrap().path()).unwrap();
            assert!(!text.contains("s-secret"));
        }
        // A resume asks again, keeping the first answers.
        let again = RunConfig {
            resume: true,
            ..config
        };
        let outcome = execute(
            &plan,
            &store,
            &again,
            &mut Processes::new(again.exe.clone()),
        )
        .unwrap();
        assert_eq!((outcome.measured, outcome.skipped), (0, 1));
        let files = std::fs::read_dir(dir.join("run/hosts/sender"))
            .unwrap()
            .count();
        assert_eq!(files, 2, "host.json and host-resumed-….json");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_host_that_does_not_answer_stops_the_plan_before_any_run() {
        let dir =
            std::env::temp_dir().join(format!("dualperf-runner-nohost-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let exe = fake_dualperf(&dir, Some("[2001:2:0:1::2]:4646"));
        let plan = Plan::parse(HOSTS_PLAN, false).unwrap();
        let stop = AtomicBool::new(false);
        let store = Store::create(&dir.join("run")).unwrap();
        let config = RunConfig {
            exe,
            target: Target::Hosts(Hosts::new(plan.hosts.clone(), BTreeMap::new())),
            resume: false,
            stop: &stop,
            progress: &|_, _, _| {},
            qos_files: BTreeMap::new(),
        };
        let e = execute(
            &plan,
            &store,
            &config,
            &mut Processes::new(config.exe.clone()),
        )
        .unwrap_err();
        assert_eq!(
            e.to_string(),
            "host sender ([2001:2:0:1::2]:4646): its agent did not answer (dualperf clock --peer exited 1): dualperf clock: connection refused"
        );
        assert!(!store.has_runs().unwrap());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
