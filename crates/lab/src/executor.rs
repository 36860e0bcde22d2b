//! Who runs a plan's receiver and its measured senders: [`Processes`], `dualperf`
//! child processes (what `dualperf run` uses, and what a run's record shows: each
//! sender's command line, measurable by hand), or an executor the binary supplies that
//! runs the same command lines on its own threads (`dualperf compare`). The runner
//! ([`crate::runner::execute`]) decides what runs when; an executor only starts things.
//!
//! Background flows, STAMP reflectors and the senders of a hosts plan are always
//! processes: they run beside the measured flow, or on other hosts.

use std::io::{BufRead, BufReader, Read, Write};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};

use crate::store::StoreError;

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
    /// A lab router refused or did not take a point's QoS file, or a run's flows have
    /// nowhere to go.
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
    /// A host of a hosts plan did not answer `dualperf clock --peer` (before any run).
    #[error("host {host} ({addr}): {message}")]
    Host {
        /// The host's name in the plan.
        host: String,
        /// Its agent's address as asked.
        addr: String,
        /// Why.
        message: String,
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
    pub(crate) fn command(exe: &PathBuf, ns: Option<&str>) -> Command {
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

    /// The senders' namespace; `None` here.
    pub fn sender_ns(&self) -> Option<&str> {
        match self {
            Self::Loopback => None,
            Self::Lab { sender_ns, .. } => Some(sender_ns),
        }
    }

    /// The receiver's namespace; `None` here.
    pub fn receiver_ns(&self) -> Option<&str> {
        match self {
            Self::Loopback => None,
            Self::Lab { receiver_ns, .. } => Some(receiver_ns),
        }
    }
}

/// Starts a plan's receiver and its measured senders ([`crate::runner::execute`]).
pub trait Executor {
    /// Starts the plan's receiver at `place` (in a lab: in its receiver node), for the
    /// whole plan; returns the port it listens on (UDP and TCP). It runs until the
    /// executor is dropped.
    fn start_receiver(&mut self, place: &Place) -> Result<u16, RunError>;
    /// Why the receiver is no longer running, if it is not.
    fn receiver_exited(&mut self) -> Option<String>;
    /// Starts one measured sender at `place` (in a lab: in its sender node): `argv` as
    /// `dualperf` reads it (`send … --json`). `hold`: it sets its session up, says so
    /// ([`Sender::wait_ready`]) and sends only on [`Sender::go`].
    fn start_sender(
        &mut self,
        place: &Place,
        argv: &[String],
        hold: bool,
    ) -> Result<Box<dyn Sender>, RunError>;
    /// A peer plan's far end's key, which its senders hand on (`DUALPERF_KEY`); told
    /// before the first sender starts.
    fn peer_key(&mut self, _key: Option<&crate::hosts::Key>) {}
}

/// A started sender.
pub trait Sender {
    /// Whether a held sender has set its session up by `deadline`.
    fn wait_ready(&self, deadline: std::time::Instant) -> bool;
    /// Starts a held sender's flows.
    fn go(&mut self);
    /// Waits for it to end; one still running at `deadline` is stopped and has no exit
    /// code.
    fn wait(self: Box<Self>, deadline: std::time::Instant) -> Result<Finished, RunError>;
}

/// What a sender left: its exit code (`None`: stopped at its deadline, or killed), its
/// standard output (`dualperf send --json`'s report) and its standard error.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Finished {
    /// 0 when it finished, 2 when it refused its options.
    pub exit_code: Option<i32>,
    /// Its report.
    pub stdout: String,
    /// What it said.
    pub stderr: String,
    /// How many times the run was measured (an executor may measure a run that fell
    /// behind its schedule again); 1 for a process.
    pub attempts: u32,
}

/// `dualperf` child processes: the receiver (`recv --stdin-lifeline`) and one `dualperf
/// send` per run, in a lab through `ip netns exec`.
pub struct Processes {
    exe: PathBuf,
    receiver: Option<Receiver>,
    key: Option<crate::hosts::Key>,
}

impl Processes {
    /// Runs `exe` (the `dualperf` binary).
    pub fn new(exe: PathBuf) -> Self {
        Self {
            exe,
            receiver: None,
            key: None,
        }
    }
}

impl Executor for Processes {
    fn start_receiver(&mut self, place: &Place) -> Result<u16, RunError> {
        let r = start_receiver(&self.exe, place)?;
        let port = r.port;
        self.receiver = Some(r);
        Ok(port)
    }

    fn receiver_exited(&mut self) -> Option<String> {
        match self.receiver.as_mut().map(|r| r.child.try_wait()) {
            Some(Ok(Some(status))) => Some(format!("the receiver exited ({status})")),
            _ => None,
        }
    }

    fn start_sender(
        &mut self,
        place: &Place,
        argv: &[String],
        hold: bool,
    ) -> Result<Box<dyn Sender>, RunError> {
        let mut cmd = local_sender(&self.exe, place, argv);
        if let Some(k) = &self.key {
            cmd.env(crate::hosts::KEY_ENV, k.expose());
        }
        Ok(Box::new(Output::spawn(&mut cmd, &self.exe, "send", hold)?))
    }

    fn peer_key(&mut self, key: Option<&crate::hosts::Key>) {
        self.key = key.cloned();
    }
}

/// A sender here or in a lab's namespace. It sends itself: an agent's key in this
/// process's environment must not make it ask for `--from`.
pub(crate) fn local_sender(exe: &PathBuf, place: &Place, argv: &[String]) -> Command {
    let mut cmd = Place::command(exe, place.sender_ns());
    cmd.args(argv).env_remove(crate::hosts::AGENT_KEY_ENV);
    cmd
}

impl Sender for Output {
    fn wait_ready(&self, deadline: std::time::Instant) -> bool {
        Output::wait_ready(self, deadline)
    }

    fn go(&mut self) {
        Output::go(self);
    }

    fn wait(self: Box<Self>, deadline: std::time::Instant) -> Result<Finished, RunError> {
        let (status, stdout, stderr) = Output::wait(*self, deadline)?;
        Ok(Finished {
            exit_code: status.and_then(|s| s.code()),
            stdout,
            stderr,
            attempts: 1,
        })
    }
}

/// The receiver process, stopped when dropped. It holds the write end of the receiver's
/// standard input: if this process dies, even by SIGKILL, the pipe closes and the
/// receiver (`--stdin-lifeline`) stops by itself.
pub(crate) struct Receiver {
    pub(crate) child: Child,
    pub(crate) port: u16,
    _lifeline: Option<std::process::ChildStdin>,
}

impl Drop for Receiver {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub(crate) fn start_receiver(exe: &PathBuf, place: &Place) -> Result<Receiver, RunError> {
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

/// A plan's STAMP reflector (`[stamp] reflectors`, any program) where the receiver
/// runs, stopped when dropped (as a receiver is).
pub(crate) fn start_reflector(command: &[String], place: &Place) -> Result<Receiver, RunError> {
    let (program, args) = command
        .split_first()
        .ok_or_else(|| RunError::Receiver("a [stamp] reflector command is empty".into()))?;
    let mut child = Place::command(&PathBuf::from(program), place.receiver_ns())
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|source| RunError::Process {
            what: format!("starting the STAMP reflector {program}"),
            source,
        })?;
    // It binds its port as it starts; one that exits at once could not.
    std::thread::sleep(std::time::Duration::from_millis(500));
    if let Ok(Some(status)) = child.try_wait() {
        return Err(RunError::Receiver(format!(
            "the STAMP reflector {program} exited at once ({status})"
        )));
    }
    Ok(Receiver {
        child,
        port: 0,
        _lifeline: None,
    })
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

/// A `dualperf send` child with its stdout and stderr read on threads (so a full pipe
/// never blocks it).
pub(crate) struct Output {
    child: Child,
    out: std::thread::JoinHandle<String>,
    err: std::thread::JoinHandle<String>,
    /// Told when the sender says "dualperf send: started" (`--announce-start`).
    started: std::sync::mpsc::Receiver<()>,
    /// Told when a held sender says "dualperf send: ready" (`--wait-for-go`).
    ready: std::sync::mpsc::Receiver<()>,
    /// A held sender's stdin: a line starts its flows, closing it halts them unsent.
    go: Option<std::process::ChildStdin>,
}

impl Output {
    /// Start `cmd`; `hold` adds `--wait-for-go`: it sets its session up and waits for
    /// [`Output::go`] (the run's record keeps the command without it, which measures
    /// the same when run by hand).
    pub(crate) fn spawn(
        cmd: &mut Command,
        exe: &std::path::Path,
        what: &str,
        hold: bool,
    ) -> Result<Self, RunError> {
        if hold {
            cmd.arg("--wait-for-go");
        }
        let mut child = cmd
            .stdin(if hold { Stdio::piped() } else { Stdio::null() })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|source| RunError::Process {
                what: format!("starting {} {what}", exe.display()),
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
        let (tell_ready, ready) = std::sync::mpsc::channel();
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
                    if line == "dualperf send: ready" {
                        let _ = tell_ready.send(());
                        continue;
                    }
                    s.push_str(&line);
                    s.push('\n');
                }
            }
            s
        });
        let go = child.stdin.take();
        Ok(Self {
            child,
            out,
            err,
            started,
            ready,
            go,
        })
    }

    /// Start a held sender's flows (one that is gone ignores it).
    pub(crate) fn go(&mut self) {
        if let Some(mut stdin) = self.go.take() {
            let _ = stdin.write_all(b"go\n");
        }
    }

    /// Wait until a held sender says its session is set up, until `deadline`; `false`
    /// if it did not (it failed, or is still connecting).
    pub(crate) fn wait_ready(&self, deadline: std::time::Instant) -> bool {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        self.ready.recv_timeout(left).is_ok()
    }

    /// Ask it to stop (SIGINT: `dualperf send` reports what it measured, then exits).
    /// By the shell's own `kill`: procps' may not be installed.
    pub(crate) fn interrupt(&self) {
        let _ = crate::netlab::signal("INT", &[self.child.id()]);
    }

    /// Wait until it says its flows began, until `deadline`; `false` if it did not
    /// (it failed, or is still connecting).
    pub(crate) fn wait_started(&self, deadline: std::time::Instant) -> bool {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        self.started.recv_timeout(left).is_ok()
    }

    /// Wait for it until `deadline` (then kill it: `None`), and take what it said.
    pub(crate) fn wait(
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
