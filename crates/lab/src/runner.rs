//! Measures a plan's runs with `dualperf` processes: one receiver for the whole plan on a
//! free port, one `dualperf send --json` per run, each result stored as soon as its run
//! ends. On loopback, or in a lab's namespaces (`ip netns exec`): senders in the
//! `sender` node, the receiver in the `receiver` node.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use crate::plan::{Plan, Run};
use crate::store::{Background, RunRecord, Store, StoreError, FORMAT_VERSION};
use results::send::SendReport;
use router::stats::RouterStats;

/// Why a plan stopped.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// The run directory.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// A process could not be started or read.
    #[error("{what}: {source}")]
    Process {
        /// Which.
        what: String,
        /// Why.
        source: std::io::Error,
    },
    /// The receiver did not say where it listens.
    #[error("the receiver did not start: {0}")]
    Receiver(String),
    /// A lab router refused or did not take a point's QoS file.
    #[error("run {run}: {message}")]
    Lab {
        /// The run.
        run: String,
        /// Why.
        message: String,
    },
    /// A sender refused its options: the plan is wrong, and so is every later run.
    #[error("run {run}: dualperf send refused the options: {stderr}")]
    Usage {
        /// The run.
        run: String,
        /// What the sender said.
        stderr: String,
    },
    /// Interrupted; what was finished is stored.
    #[error("interrupted after {done} of {total} runs; `--resume` goes on from there")]
    Interrupted {
        /// Runs stored.
        done: usize,
        /// Runs in the plan.
        total: usize,
    },
}

/// Where the receiver and the senders run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Place {
    /// On this host, to 127.0.0.1 and ::1.
    Loopback,
    /// In a lab's namespaces: senders in one, the receiver in another at these addresses.
    Lab {
        /// The lab's name.
        lab: String,
        /// Its routers: (node, its topology's QoS file text, if any).
        routers: Vec<(String, Option<String>)>,
        /// Background flows' place: from node `bg-a` to node `bg-b`, when the lab has
        /// them (namespaces and the receiver's addresses).
        background: Option<(String, String, std::net::Ipv4Addr, std::net::Ipv6Addr)>,
        /// The senders' namespace.
        sender_ns: String,
        /// The receiver's namespace.
        receiver_ns: String,
        /// The receiver's IPv4 address.
        receiver_v4: std::net::Ipv4Addr,
        /// The receiver's IPv6 address.
        receiver_v6: std::net::Ipv6Addr,
    },
}

impl Place {
    /// The place of a lab's flows: from its node `sender` to its node `receiver` (at
    /// the addresses of the receiver's first link). An error names what is missing.
    pub fn of_lab(t: &crate::topology::Topology) -> Result<Self, String> {
        let (Some(sender), Some(receiver)) = (t.node("sender"), t.node("receiver")) else {
            return Err("the lab needs nodes named 'sender' and 'receiver'".into());
        };
        let (_, end, _) = t
            .ends_of(receiver)
            .next()
            .ok_or_else(|| "the receiver has no link".to_owned())?;
        let background = match (t.node("bg-a"), t.node("bg-b")) {
            (Some(a), Some(b)) => t
                .ends_of(b)
                .next()
                .map(|(_, e, _)| (t.namespace(a), t.namespace(b), e.ipv4, e.ipv6)),
            _ => None,
        };
        Ok(Self::Lab {
            lab: t.name.clone(),
            routers: t
                .nodes
                .iter()
                .filter(|n| n.kind == crate::topology::Kind::Router)
                .map(|n| (n.name.clone(), n.qos.as_ref().map(|q| q.text.clone())))
                .collect(),
            background,
            sender_ns: t.namespace(sender),
            receiver_ns: t.namespace(receiver),
            receiver_v4: end.ipv4,
            receiver_v6: end.ipv6,
        })
    }

    /// The receiver's address for `family` (4 or 6).
    pub fn dest(&self, family: u8) -> String {
        match (self, family) {
            (Self::Loopback, 4) => "127.0.0.1".into(),
            (Self::Loopback, _) => "::1".into(),
            (Self::Lab { receiver_v4, .. }, 4) => receiver_v4.to_string(),
            (Self::Lab { receiver_v6, .. }, _) => receiver_v6.to_string(),
        }
    }

    /// A command running `exe` here: directly, or in `ns` through `ip netns exec`.
    fn command(exe: &PathBuf, ns: Option<&str>) -> Command {
        match ns {
            None => Command::new(exe),
            Some(ns) => {
                let mut c = Command::new("ip");
                c.args(["netns", "exec", ns]).arg(exe);
                c
            }
        }
    }

    /// Where background flows go: on loopback, loopback; in a lab, from `bg-a` to
    /// `bg-b`, if it has them.
    pub fn background(&self) -> Option<Place> {
        match self {
            Self::Loopback => Some(Self::Loopback),
            Self::Lab {
                background: Some((s, r, v4, v6)),
                ..
            } => Some(Self::Lab {
                lab: String::new(),
                routers: Vec::new(),
                background: None,
                sender_ns: s.clone(),
                receiver_ns: r.clone(),
                receiver_v4: *v4,
                receiver_v6: *v6,
            }),
            Self::Lab { .. } => None,
        }
    }

    fn sender_ns(&self) -> Option<&str> {
        match self {
            Self::Loopback => None,
            Self::Lab { sender_ns, .. } => Some(sender_ns),
        }
    }

    fn receiver_ns(&self) -> Option<&str> {
        match self {
            Self::Loopback => None,
            Self::Lab { receiver_ns, .. } => Some(receiver_ns),
        }
    }
}

/// How to measure.
pub struct RunConfig<'a> {
    /// The `dualperf` binary.
    pub exe: PathBuf,
    /// Where.
    pub place: Place,
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
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Outcome {
    /// Runs measured now.
    pub measured: usize,
    /// Runs found already stored (with `--resume`).
    pub skipped: usize,
    /// Runs whose sender failed (kept as `runs/ID.failed.json`, measured again on
    /// `--resume`).
    pub failed: usize,
}

/// The receiver process, stopped when dropped. It holds the write end of the receiver's
/// standard input: if this process dies, even by SIGKILL, the pipe closes and the
/// receiver (`--stdin-lifeline`) stops by itself.
struct Receiver {
    child: Child,
    port: u16,
    _lifeline: Option<std::process::ChildStdin>,
}

impl Drop for Receiver {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn start_receiver(exe: &PathBuf, place: &Place) -> Result<Receiver, RunError> {
    let mut child = Place::command(exe, place.receiver_ns())
        // A control connection through a saturated lab link loses segments and waits
        // out TCP's retransmission timeouts (1 s, 3 s, …): give its handshake 30 s.
        .args([
            "recv",
            "--port",
            "0",
            "--stdin-lifeline",
            "--handshake-timeout",
            "30s",
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|source| RunError::Process {
            what: format!("starting {} recv", exe.display()),
            source,
        })?;
    let stderr = child
        .stderr
        .take()
        .ok_or_else(|| RunError::Receiver("no stderr".into()))?;
    let mut lines = BufReader::new(stderr).lines();
    // "dualperf recv: listening on [::]:PORT (UDP and TCP)", after any warnings (IPv6
    // unavailable, say); the receiver exits, ending its stderr, if it cannot listen.
    let mut said = Vec::new();
    let mut port = None;
    for line in lines.by_ref().take(32) {
        let Ok(line) = line else { break };
        port = listening_port(&line);
        said.push(line);
        if port.is_some() {
            break;
        }
    }
    let lifeline = child.stdin.take();
    let mut receiver = Receiver {
        child,
        port: 0,
        _lifeline: lifeline,
    };
    let Some(port) = port else {
        return Err(RunError::Receiver(said.join("; ")));
    };
    receiver.port = port;
    // Keep draining its stderr so it never blocks on a full pipe.
    std::thread::spawn(move || for _ in lines {});
    Ok(receiver)
}

/// The port of `dualperf recv`'s "listening on ADDR:PORT" line.
fn listening_port(line: &str) -> Option<u16> {
    line.strip_prefix("dualperf recv: listening on ")?
        .split_whitespace()
        .next()?
        .rsplit_once(':')?
        .1
        .parse()
        .ok()
}

/// Measure every run of `plan` not yet in `store`.
pub fn execute(plan: &Plan, store: &Store, config: &RunConfig<'_>) -> Result<Outcome, RunError> {
    let mut receiver = start_receiver(&config.exe, &config.place)?;
    // The background flows' receiver, started with the first run that has them.
    let mut bg_receiver: Option<Receiver> = None;
    let mut outcome = Outcome::default();
    let todo: Vec<&Run> = plan
        .runs
        .iter()
        .filter(|r| !(config.resume && store.has_run(&r.id)))
        .collect();
    outcome.skipped = plan.runs.len() - todo.len();
    for (i, run) in todo.iter().enumerate() {
        if config.stop.load(Ordering::SeqCst) {
            return Err(RunError::Interrupted {
                done: outcome.skipped + outcome.measured,
                total: plan.runs.len(),
            });
        }
        if let Ok(Some(status)) = receiver.child.try_wait() {
            return Err(RunError::Receiver(format!(
                "the receiver exited ({status}) after {} runs",
                outcome.skipped + outcome.measured
            )));
        }
        (config.progress)(i, todo.len(), run);
        let point = &plan.points[run.point];
        // A lab's routers start every run afresh with the point's QoS files (or the
        // topology's), so their counters are the run's.
        if let Place::Lab { lab, routers, .. } = &config.place {
            for (node, own) in routers {
                let text = match point.qos.get(node).map(String::as_str) {
                    Some("none") => None,
                    Some(file) => {
                        Some(config.qos_files.get(file).ok_or_else(|| RunError::Lab {
                            run: run.id.clone(),
                            message: format!("QoS file {file} was not read"),
                        })?)
                    }
                    None => own.as_ref(),
                };
                crate::netlab::set_qos(lab, node, text.map(String::as_str)).map_err(|e| {
                    RunError::Lab {
                        run: run.id.clone(),
                        message: e.to_string(),
                    }
                })?;
            }
        }
        let lead = plan.background_lead.unwrap_or(DEFAULT_LEAD);
        let mut bg_procs = Vec::new();
        if !point.background.is_empty() {
            let bg_place = config.place.background().ok_or_else(|| RunError::Lab {
                run: run.id.clone(),
                message: "background flows need lab nodes named 'bg-a' and 'bg-b'".into(),
            })?;
            if bg_receiver.is_none() {
                bg_receiver = Some(start_receiver(&config.exe, &bg_place)?);
            }
            let bg_port = bg_receiver.as_ref().map_or(0, |r| r.port);
            // They run until stopped half a second after the measured flow ends (SIGINT:
            // each reports what it measured); the duration is only a backstop.
            let bg_ns = lead.as_nanos() + plan.duration.as_nanos() + BACKGROUND_BACKSTOP_NS;
            for b in &point.background {
                let (place, port) = if b.from_sender {
                    (&config.place, receiver.port)
                } else {
                    (&bg_place, bg_port)
                };
                let mut argv: Vec<String> = vec![
                    "send".into(),
                    place.dest(run.family),
                    "--port".into(),
                    port.to_string(),
                ];
                argv.extend(b.args());
                argv.extend([
                    "--duration".into(),
                    format!("{bg_ns}ns"),
                    "--json".into(),
                    "--announce-start".into(),
                    "--connect-timeout".into(),
                    CONNECT_TIMEOUT.into(),
                ]);
                bg_procs.push(Output::spawn(
                    Place::command(&config.exe, place.sender_ns()).args(&argv),
                    &config.exe,
                )?);
            }
            // The lead counts from when every background flow has begun: their control
            // connections may cross a saturated link and take seconds.
            let connect_by = std::time::Instant::now() + BACKGROUND_START;
            for p in &bg_procs {
                if !p.wait_started(connect_by) {
                    break;
                }
            }
            let until =
                std::time::Instant::now() + std::time::Duration::from_nanos(lead.as_nanos());
            while std::time::Instant::now() < until && !config.stop.load(Ordering::SeqCst) {
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
        }
        let mut argv: Vec<String> = vec![
            "send".into(),
            config.place.dest(run.family),
            "--port".into(),
            receiver.port.to_string(),
        ];
        argv.extend(point.args());
        argv.extend([
            "--duration".into(),
            format!("{}ns", plan.duration.as_nanos()),
            "--json".into(),
            "--connect-timeout".into(),
            CONNECT_TIMEOUT.into(),
        ]);
        let started_unix_ns = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64);
        let fg = Output::spawn(
            Place::command(&config.exe, config.place.sender_ns()).args(&argv),
            &config.exe,
        )?;
        // A sender gets its duration and a generous margin; a wedged one is killed and
        // its run counts as failed.
        let deadline = std::time::Instant::now()
            + std::time::Duration::from_nanos(plan.duration.as_nanos() + lead.as_nanos())
            + SEND_MARGIN;
        let (status, stdout, stderr) = fg.wait(deadline)?;
        if !bg_procs.is_empty() {
            std::thread::sleep(std::time::Duration::from_millis(500));
            for p in &bg_procs {
                p.interrupt();
            }
        }
        let background: Vec<Background> = bg_procs
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
            .collect::<Result<_, RunError>>()?;
        let routers = match &config.place {
            Place::Lab { lab, routers, .. } => routers
                .iter()
                .filter_map(|(node, _)| {
                    crate::netlab::router_stats(lab, node)
                        .ok()
                        .map(|s| (node.clone(), s))
                })
                .collect(),
            Place::Loopback => BTreeMap::new(),
        };
        let router_stalls = stalls(&routers);
        for (node, ns) in &router_stalls {
            eprintln!(
                "dualperf run: warning: run {}: router {node} stalled {:.1} ms (a loop turn or gap over {} ms); its delays and losses may be the router's",
                run.id,
                *ns as f64 / 1e6,
                ROUTER_STALL_LIMIT_NS / 1_000_000
            );
        }
        if config.stop.load(Ordering::SeqCst) {
            // A run cut short by Ctrl-C is not a measurement of the plan's duration:
            // not stored, measured again on --resume.
            return Err(RunError::Interrupted {
                done: outcome.skipped + outcome.measured,
                total: plan.runs.len(),
            });
        }
        let code = status.and_then(|s| s.code()).unwrap_or(-1);
        if code == 2 {
            return Err(RunError::Usage {
                run: run.id.clone(),
                stderr: stderr.trim().to_owned(),
            });
        }
        let mut stderr = stderr;
        let report: Option<SendReport> = match serde_json::from_str(&stdout) {
            Ok(r) => Some(r),
            Err(e) if !stdout.trim().is_empty() => {
                stderr.push_str(&format!(
                    "dualperf run: the sender's report does not read: {e}\n"
                ));
                None
            }
            Err(_) => None,
        };
        // A run counts as finished only with a report; a failed one is kept beside it
        // for its stderr, and measured again on --resume.
        let finished = code == 0 && report.is_some();
        if !finished {
            outcome.failed += 1;
        }
        let record = RunRecord {
            format_version: FORMAT_VERSION,
            run: (*run).clone(),
            point: point.id.clone(),
            argv,
            started_unix_ns,
            exit_code: code,
            stderr,
            report,
            background,
            routers,
            router_stalls,
        };
        if finished {
            store.put_run(&record)?;
            outcome.measured += 1;
        } else {
            store.put_failed_run(&record)?;
        }
    }
    drop(receiver);
    drop(bg_receiver);
    Ok(outcome)
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

/// How long background flows may take to begin (their control connections).
const BACKGROUND_START: std::time::Duration = std::time::Duration::from_secs(30);

/// How long background flows run before the measured flow starts, by default.
const DEFAULT_LEAD: wire::time::Duration = wire::time::Duration::from_secs(2);

/// How long a sender may take to connect and set up its session. In a lab its control
/// connection may cross a link that background flows saturate, where lost SYNs and
/// segments wait out TCP's retransmission timeouts (1 s, 3 s, 7 s…): the receivers get
/// the same 30 s for their handshake.
const CONNECT_TIMEOUT: &str = "30s";

/// A `dualperf send` child with its stdout and stderr read on threads (so a full pipe
/// never blocks it).
struct Output {
    child: Child,
    out: std::thread::JoinHandle<String>,
    err: std::thread::JoinHandle<String>,
    /// Told when the sender says "dualperf send: started" (`--announce-start`).
    started: std::sync::mpsc::Receiver<()>,
}

impl Output {
    fn spawn(cmd: &mut Command, exe: &std::path::Path) -> Result<Self, RunError> {
        let mut child = cmd
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|source| RunError::Process {
                what: format!("starting {} send", exe.display()),
                source,
            })?;
        let out_pipe = child.stdout.take();
        let out = std::thread::spawn(move || {
            let mut s = String::new();
            if let Some(mut p) = out_pipe {
                let _ = p.read_to_string(&mut s);
            }
            s
        });
        let (tell, started) = std::sync::mpsc::channel();
        let err_pipe = child.stderr.take();
        let err = std::thread::spawn(move || {
            let mut s = String::new();
            if let Some(p) = err_pipe {
                for line in BufReader::new(p).lines() {
                    let Ok(line) = line else { break };
                    if line == "dualperf send: started" {
                        let _ = tell.send(());
                        continue;
                    }
                    s.push_str(&line);
                    s.push('\n');
                }
            }
            s
        });
        Ok(Self {
            child,
            out,
            err,
            started,
        })
    }

    /// Ask it to stop (SIGINT: `dualperf send` reports what it measured, then exits).
    fn interrupt(&self) {
        let _ = Command::new("kill")
            .args(["-INT", &self.child.id().to_string()])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
    }

    /// Wait until it says its flows began, until `deadline`; `false` if it did not
    /// (it failed, or is still connecting).
    fn wait_started(&self, deadline: std::time::Instant) -> bool {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        self.started.recv_timeout(left).is_ok()
    }

    /// Wait for it until `deadline` (then kill it: `None`), and take what it said.
    fn wait(
        mut self,
        deadline: std::time::Instant,
    ) -> Result<(Option<std::process::ExitStatus>, String, String), RunError> {
        let status = loop {
            match self.child.try_wait() {
                Ok(Some(status)) => break Some(status),
                Ok(None) if std::time::Instant::now() >= deadline => {
                    let _ = self.child.kill();
                    let _ = self.child.wait();
                    break None;
                }
                Ok(None) => std::thread::sleep(std::time::Duration::from_millis(20)),
                Err(source) => {
                    return Err(RunError::Process {
                        what: "waiting for dualperf send".into(),
                        source,
                    })
                }
            }
        };
        let out = self.out.join().unwrap_or_default();
        let err = self.err.join().unwrap_or_default();
        Ok((status, out, err))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
    fn the_port_comes_from_the_listening_line_only() {
        assert_eq!(
            listening_port("dualperf recv: listening on [::]:40123 (UDP and TCP)"),
            Some(40123)
        );
        assert_eq!(
            listening_port("dualperf recv: listening on 0.0.0.0:7 (UDP and TCP)"),
            Some(7)
        );
        assert_eq!(
            listening_port(
                "dualperf recv: warning: IPv6 is unavailable here (x); listening on IPv4 only"
            ),
            None
        );
        assert_eq!(
            listening_port("dualperf recv: listening on [::]:99999"),
            None
        );
    }
}
