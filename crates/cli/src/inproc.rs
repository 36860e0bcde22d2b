//! The in-process executor of `lab::runner`: the plan's receiver and each run's sender
//! on this process's threads instead of `dualperf` child processes (`dualperf compare`).
//! A sender reads the very command line a process would (`send … --json`), so a run
//! measures what the record says; what it saves is a process start and a handshake's
//! worth of waiting per run, which a battery of hundreds of short runs feels.
//!
//! In a lab, the receiver's thread enters the receiver's namespace and each sender's
//! thread the sender's (threads they start inherit it). A run that falls behind its
//! schedule is measured again at once, at most [`ATTEMPTS`] times in all: a busy moment
//! passes, a host that cannot keep up stays behind every time (the record keeps how
//! many it took, and the verdicts leave out a run still behind).
//!
//! A peer plan's reverse runs (`--reverse`: the far end's agent sends to a receiver of
//! the session's own) run here too, through `send`'s own reverse; its STAMP runs
//! (`--stamp`) are `dualperf send` processes ([`lab::executor::Processes`]). Its far
//! end's key, if any, goes to every sender.

use std::net::{IpAddr, Ipv6Addr, SocketAddr};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};

use anyhow::Context;
use clap::Parser;
use lab::executor::{Executor, Finished, Sender};
use lab::runner::{Place, RunError};
use results::send::SendReport;

use crate::recv::{Receiver, ReceiverConfig};

/// How many times in all a run is measured while it falls behind its schedule.
pub(crate) const ATTEMPTS: u32 = 3;

/// Runs the plan's receiver and senders in this process.
pub(crate) struct InProcess {
    /// Who notes a run measured again (`dualperf compare`).
    who: &'static str,
    receiver: Option<Receiver>,
    /// Set on Ctrl-C: a sender stops, and a run cut short is not measured again.
    stop: Arc<AtomicBool>,
    /// A peer plan's far end's key.
    key: Option<lab::hosts::Key>,
    /// The runs a plain session cannot measure, as processes.
    processes: lab::executor::Processes,
}

impl InProcess {
    pub(crate) fn new(who: &'static str, stop: Arc<AtomicBool>) -> Self {
        let exe = std::env::current_exe().unwrap_or_else(|_| "dualperf".into());
        Self {
            who,
            receiver: None,
            stop,
            key: None,
            processes: lab::executor::Processes::new(exe),
        }
    }
}

impl Drop for InProcess {
    fn drop(&mut self) {
        if let Some(r) = self.receiver.take() {
            drop(r.shutdown());
        }
    }
}

/// `f` on a thread in namespace `ns` (none: this one), its result back.
fn in_namespace<T: Send>(
    ns: Option<&str>,
    f: impl FnOnce() -> anyhow::Result<T> + Send,
) -> anyhow::Result<T> {
    let Some(ns) = ns else { return f() };
    std::thread::scope(|s| {
        s.spawn(|| {
            netio::netns::enter(ns).with_context(|| format!("entering {ns}"))?;
            f()
        })
        .join()
        .map_err(|_| anyhow::anyhow!("a thread in {ns} panicked"))?
    })
}

impl Executor for InProcess {
    fn start_receiver(&mut self, place: &Place) -> Result<u16, RunError> {
        let start = || {
            Receiver::start(
                ReceiverConfig {
                    bind: SocketAddr::new(IpAddr::V6(Ipv6Addr::UNSPECIFIED), 0),
                    key: None,
                    log: None,
                    // As `run`'s receiver: a handshake across a saturated lab link waits
                    // out TCP's retransmission timeouts.
                    handshake_timeout: std::time::Duration::from_secs(30),
                    busy_poll: crate::args::std_duration(crate::recv::DEFAULT_BUSY_POLL)
                        .expect("the default busy-poll window parses"),
                    // One flow at a time: one UDP thread.
                    threads: 1,
                    gro: true,
                    skip_rx_copy: false,
                    service: None,
                },
                Arc::new(AtomicBool::new(false)),
            )
            .context("starting the receiver")
        };
        let receiver = in_namespace(place.receiver_ns(), start)
            .map_err(|e| RunError::Receiver(format!("{e:#}")))?;
        let port = receiver.local_addr().port();
        self.receiver = Some(receiver);
        Ok(port)
    }

    fn receiver_exited(&mut self) -> Option<String> {
        None
    }

    fn peer_key(&mut self, key: Option<&lab::hosts::Key>) {
        self.key = key.cloned();
        self.processes.peer_key(key);
    }

    fn start_sender(
        &mut self,
        place: &Place,
        argv: &[String],
        hold: bool,
    ) -> Result<Box<dyn Sender>, RunError> {
        if argv.iter().any(|a| a == "--stamp") {
            return self.processes.start_sender(place, argv, hold);
        }
        // A reverse run is the same session with the far end's agent sending.
        let reverse = argv.iter().any(|a| a == "--reverse");
        let words = std::iter::once("dualperf".to_owned())
            .chain(argv.iter().filter(|a| *a != "--reverse").cloned());
        let config = match crate::Cli::try_parse_from(words) {
            Ok(crate::Cli {
                command: crate::Command::Send(args),
                ..
            }) => crate::send::plain_session(*args),
            Ok(_) => Err(anyhow::anyhow!("not a send command line")),
            Err(e) => Err(anyhow::anyhow!("{}", e.render())),
        };
        // A peer plan's key, as a process gets it in DUALPERF_KEY.
        let config = config.map(|mut c| {
            if let Some(k) = &self.key {
                c.key = Some(k.expose().as_bytes().to_vec());
            }
            c
        });
        let config = match config {
            Ok(c) => c,
            // As a process that refused its options: exit code 2.
            Err(e) => {
                return Ok(Box::new(Done(Finished {
                    exit_code: Some(2),
                    stdout: String::new(),
                    stderr: format!("dualperf: error: {e:#}\n"),
                    attempts: 1,
                })))
            }
        };
        let (go, held) = mpsc::channel::<()>();
        let stop = self.stop.clone();
        let ns = place.sender_ns().map(str::to_owned);
        let who = self.who;
        let thread = std::thread::spawn(move || {
            if hold && held.recv().is_err() {
                return Finished {
                    exit_code: Some(1),
                    stderr: "halted before it started\n".into(),
                    attempts: 1,
                    ..Finished::default()
                };
            }
            match in_namespace(ns.as_deref(), || Ok(measure(&config, reverse, &stop, who))) {
                Ok(f) => f,
                Err(e) => Finished {
                    exit_code: Some(1),
                    stderr: format!("{e:#}\n"),
                    attempts: 1,
                    ..Finished::default()
                },
            }
        });
        Ok(Box::new(Running {
            go: Some(go),
            thread,
        }))
    }
}

/// One run: its session (`reverse`: the far end's agent sending to us), again while it falls behind ([`ATTEMPTS`] in all); the last
/// attempt kept, as `send --json` would print it.
fn measure(
    config: &crate::send::SendConfig,
    reverse: bool,
    stop: &Arc<AtomicBool>,
    who: &str,
) -> Finished {
    let session = || match reverse {
        true => crate::send::remote::reverse(config, None, false, stop),
        false => crate::send::run_session(config, stop),
    };
    let attempt = || match session() {
        Ok(r) => (Some(r), None),
        Err(e) => match e.downcast::<crate::send::PartialReport>() {
            Ok(p) => (Some(p.report), Some(p.error)),
            Err(e) => (None, Some(format!("{e:#}"))),
        },
    };
    let (report, error, attempts) = again_while_behind(stop, attempt, |n, why| {
        crate::out::note!("\r{who}: a run {why}; measuring it again ({n} of {ATTEMPTS})");
    });
    Finished {
        exit_code: Some(if error.is_some() { 1 } else { 0 }),
        stdout: report
            .as_ref()
            .and_then(|r| serde_json::to_string(r).ok())
            .unwrap_or_default(),
        stderr: error
            .map(|e| format!("dualperf send: error: {e}\n"))
            .unwrap_or_default(),
        attempts,
    }
}

/// A run measured by `attempt` (its report, and the error that ended it if any), again
/// at once while it falls behind its schedule ([`results::compare::fell_behind`]), at
/// most [`ATTEMPTS`] times in all; `retrying(n, why)` is told before attempt `n`. The
/// last attempt is kept, with how many it took. A run that failed, or that Ctrl-C cut
/// short, is not measured again; one still behind after the last is kept (the verdicts
/// leave it out, and say so).
fn again_while_behind(
    stop: &AtomicBool,
    mut attempt: impl FnMut() -> (Option<SendReport>, Option<String>),
    mut retrying: impl FnMut(u32, &str),
) -> (Option<SendReport>, Option<String>, u32) {
    let mut n = 1;
    loop {
        let (report, error) = attempt();
        if error.is_some() || stop.load(Ordering::SeqCst) || n == ATTEMPTS {
            return (report, error, n);
        }
        let behind = report
            .as_ref()
            .and_then(|r| r.flows.first())
            .and_then(results::compare::fell_behind);
        match behind {
            None => return (report, None, n),
            Some(why) => {
                n += 1;
                retrying(n, &why);
            }
        }
    }
}

/// A sender that refused its command line.
struct Done(Finished);

impl Sender for Done {
    fn wait_ready(&self, _: std::time::Instant) -> bool {
        true
    }

    fn go(&mut self) {}

    fn wait(self: Box<Self>, _: std::time::Instant) -> Result<Finished, RunError> {
        Ok(self.0)
    }
}

/// A sender on its thread: held until [`Sender::go`] (its session is set up then).
struct Running {
    go: Option<mpsc::Sender<()>>,
    thread: std::thread::JoinHandle<Finished>,
}

impl Sender for Running {
    fn wait_ready(&self, _: std::time::Instant) -> bool {
        true
    }

    fn go(&mut self) {
        if let Some(go) = self.go.take() {
            let _ = go.send(());
        }
    }

    /// Waits for the session to end: it keeps its own time (its duration, the last
    /// echoes' wait, the results' exchange), and Ctrl-C stops it.
    fn wait(mut self: Box<Self>, _: std::time::Instant) -> Result<Finished, RunError> {
        // A sender never told to go is halted: dropping the channel ends its wait.
        self.go.take();
        Ok(self.thread.join().unwrap_or_else(|_| Finished {
            exit_code: None,
            stderr: "the sender's thread panicked\n".into(),
            attempts: 1,
            ..Finished::default()
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A run of 1000 planned packets that sent `sent`.
    fn run_that_sent(sent: u64) -> (Option<SendReport>, Option<String>) {
        let report: SendReport = serde_json::from_value(serde_json::json!({
            "format_version": 1,
            "tool": "dualperf",
            "dest": "127.0.0.1:4646",
            "interrupted": false,
            "sum": {"flows": 1, "sent": {"packets": sent, "bytes": sent * 512, "duration_ns": null, "bitrate_bps": null}, "received": null},
            "flows": [{
                "id": 1,
                "spec": traffic::FlowSpec::default(),
                "sent": {"packets": sent, "bytes": sent * 512, "planned_packets": 1000},
            }],
        }))
        .expect("a minimal report");
        (Some(report), None)
    }

    fn sent(r: &Option<SendReport>) -> u64 {
        r.as_ref().unwrap().flows[0].sent.packets
    }

    /// A run that fell behind its schedule is measured again while it does, at most
    /// three times in all; the one kept says how many it took.
    #[test]
    fn a_run_that_fell_behind_is_measured_again_a_bounded_number_of_times() {
        let stop = AtomicBool::new(false);
        let measured = |plan: &[u64]| {
            let mut left = plan.iter();
            let mut told = Vec::new();
            let (report, error, attempts) = again_while_behind(
                &stop,
                || run_that_sent(*left.next().expect("no more attempts than planned")),
                |n, why| told.push(format!("{n}: {why}")),
            );
            (sent(&report), attempts, error, told)
        };
        // On schedule at once: measured once.
        assert_eq!(measured(&[1000]), (1000, 1, None, vec![]));
        // Behind once, then on schedule: the second is kept, and the retry was said.
        let (n, attempts, error, told) = measured(&[584, 1000]);
        assert_eq!((n, attempts, error), (1000, 2, None));
        assert_eq!(told.len(), 1);
        assert!(
            told[0].starts_with("2: sent 584 of 1000 planned packets"),
            "{told:?}"
        );
        // Behind every time: the third is kept (the verdicts leave it out).
        let (n, attempts, error, told) = measured(&[584, 700, 899]);
        assert_eq!((n, attempts, error, told.len()), (899, 3, None, 2));
        // A run that failed, or was cut short by Ctrl-C, is not measured again.
        let (report, error, attempts) = again_while_behind(
            &stop,
            || (run_that_sent(10).0, Some("refused".to_owned())),
            |_, _| panic!("measured again"),
        );
        assert_eq!(
            (sent(&report), attempts, error.as_deref()),
            (10, 1, Some("refused"))
        );
        stop.store(true, Ordering::SeqCst);
        let (_, error, attempts) =
            again_while_behind(&stop, || run_that_sent(10), |_, _| panic!("measured again"));
        assert_eq!((error, attempts), (None, 1));
    }
}
