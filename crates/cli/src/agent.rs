//! `dualperf agent`: a receiver (everything `recv` does) that, on an authenticated
//! request, also sends flows itself: back to the asker (`send --reverse`, `--bidir`) or
//! to a destination the asker names (`send --from`, plans across hosts).
//!
//! An agent is a traffic source on request, so it must not become anyone's amplifier:
//! it wants a key unless it listens on loopback only; it sends only to the asker's own
//! address and to the prefixes of `--allow`; each request's flows are checked against
//! per-session caps on rate, bytes and duration before they start, and halted at the
//! byte and duration caps while they run; at most `--max-senders` requests run at once.
//! Every refusal goes back to the asker as an `Error` with its reason, is printed here,
//! and is counted (`send_refusals`).

use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration as StdDuration;

use anyhow::Result;
use traffic::policy::Policy;
use traffic::{FlowSpec, Rate};
use wire::control::Msg;
use wire::prefix::unmapped;
use wire::time::Duration;

use crate::args::Prefix;
use crate::control::{write_msg, MsgReader};
use crate::recv::{RecvArgs, SendService, ServeError};
use crate::send::callback::{Dialer, Tickets};
use crate::send::{run_session, wait_for_go, Hold, PartialReport, RunCaps, SendConfig};

/// Run as a measurement agent: receive as `dualperf recv` does, and on an authenticated
/// request send flows too (to the asker for `send --reverse`/`--bidir`, or to a
/// destination within `--allow` for `send --from` and plans across hosts).
///
/// It refuses, with the reason on both sides: a wrong or missing key; a destination that
/// is neither the asker's address nor inside `--allow`; flows above the caps on rate,
/// bytes or duration; more than `--max-senders` requests at once; and connections beyond
/// 64 in their handshake at once (a flood of junk connections).
#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:
  dualperf agent --key-file /etc/dualperf/agent.key --allow 198.18.0.0/15,2001:2::/48
  DUALPERF_KEY=secret dualperf agent --max-rate 100mbit --max-duration 5min
  dualperf agent --bind ::1                  # this host only: no key needed
Then, from another host:
  dualperf send HOST --key secret --reverse --tcp --bulk      # HOST sends to us
  dualperf send HOST --key secret --bidir --voip g711.1       # both ways at once
  dualperf send --from HOST OTHER --key secret                # HOST sends to OTHER

A systemd unit with hardening options: dist/dualperf-agent.service. Security model and
caps: docs/agent.md.")]
pub(crate) struct AgentArgs {
    #[command(flatten)]
    recv: RecvArgs,
    /// Read the shared secret from this file (its first line), instead of --key or
    /// DUALPERF_KEY: keeps it out of the process list.
    #[arg(long, value_name = "FILE", conflicts_with = "key")]
    key_file: Option<std::path::PathBuf>,
    /// Where the agent may send, beyond the asker's own address (which it always may, so
    /// `--reverse` works): addresses or prefixes, comma-separated or repeated
    /// (198.18.0.0/15,2001:2::/48). Default: nowhere else.
    #[arg(long, value_name = "PREFIX", value_delimiter = ',', value_parser = crate::args::prefix)]
    allow: Vec<Prefix>,
    /// Most a request may send, all its flows together, in payload bits a second
    /// (10mbit, 1gbit). A flow whose mean rate is unknown (a heavy-tailed --idt) is
    /// refused; a TCP --bulk flow without --rate is window-limited and bounded by
    /// --max-bytes and --max-duration while it runs.
    #[arg(long, default_value = "1gbit", value_parser = bit_rate, value_name = "RATE")]
    max_rate: u64,
    /// Most payload bytes a request may send (10G, 500M); flows that would send more are
    /// refused, and flows are halted when they reach it.
    #[arg(long, default_value = "100G", value_parser = crate::args::byte_count, value_name = "BYTES")]
    max_bytes: u64,
    /// Longest a request may send; longer flows are refused, and flows are halted at it.
    #[arg(long, default_value = "1h", value_parser = crate::args::std_duration, value_name = "DURATION")]
    max_duration: StdDuration,
    /// Most requests to send at once; more are refused until one ends.
    #[arg(long, default_value_t = 4, value_name = "N")]
    max_senders: usize,
    /// Shift every wall-clock stamp this process takes (send and receive times, clock
    /// exchanges) by this many ns: a test aid that fakes a host whose clock is off.
    #[arg(long, hide = true, allow_hyphen_values = true, value_name = "NS")]
    fake_clock_offset_ns: Option<i64>,
    /// Offer no callback mode (an agent as it was before reverse through NAT): a test
    /// aid.
    #[arg(long, hide = true)]
    no_callback: bool,
}

pub(crate) fn run(mut args: AgentArgs) -> Result<()> {
    if let Some(path) = &args.key_file {
        let text = std::fs::read_to_string(path).map_err(|e| {
            crate::UsageError(format!("cannot read --key-file {}: {e}", path.display()))
        })?;
        let key = text.lines().next().unwrap_or("").trim().to_owned();
        if key.is_empty() {
            crate::usage!("--key-file {} is empty", path.display());
        }
        args.recv.set_key(key);
    }
    if !args.recv.has_key() && !args.recv.loopback_only() {
        crate::usage!("an agent sends traffic on request: give it a key (--key, --key-file or DUALPERF_KEY), or --bind 127.0.0.1 or ::1 to serve this host only");
    }
    if args.max_senders == 0 {
        crate::usage!("--max-senders must be at least 1");
    }
    if let Some(ns) = args.fake_clock_offset_ns {
        netio::clock::set_wall_offset_ns(ns);
    }
    let service = Arc::new(Agent {
        policy: Policy {
            allow: args.allow,
            max_rate_bps: args.max_rate,
            max_bytes: args.max_bytes,
            max_duration: args.max_duration,
        },
        max_senders: args.max_senders,
        running: AtomicUsize::new(0),
        callback: !args.no_callback,
        tickets: Arc::new(Tickets::default()),
    });
    crate::recv::serve(args.recv, Some(service), "agent")
}

/// `10mbit`, `1gbit`: payload bits a second.
fn bit_rate(s: &str) -> Result<u64, String> {
    match s.parse::<Rate>().map_err(|e| e.to_string())? {
        Rate::Bps(b) => Ok(b),
        _ => Err(format!("'{s}' is not in bits a second (10mbit, 1gbit)")),
    }
}

/// Longest an asker may let the agent take to reach a destination's receiver.
const MAX_CONNECT_TIMEOUT: StdDuration = StdDuration::from_secs(120);

/// Longest a held request's flows wait for the asker's `Go` (an asker that neither says
/// go nor leaves frees the agent's slot after this).
const MAX_HOLD: StdDuration = StdDuration::from_secs(600);

/// The agent's sending side.
struct Agent {
    policy: Policy,
    max_senders: usize,
    running: AtomicUsize,
    /// Whether it sends reverse flows in callback mode (through a NAT at the asker).
    callback: bool,
    /// Connections its callback-mode sessions asked their askers for.
    tickets: Arc<Tickets>,
}

/// A slot of `--max-senders`, given back when dropped.
struct Slot<'a>(&'a AtomicUsize);

impl Drop for Slot<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

impl SendService for Agent {
    fn serve(
        &self,
        mut stream: TcpStream,
        reader: MsgReader,
        peer: SocketAddr,
        request: Msg,
        stop: &Arc<AtomicBool>,
    ) -> Result<(), ServeError> {
        let Msg::SendRequest {
            dest,
            port,
            flows,
            interval_ns,
            threads,
            connect_timeout_ns,
            cdf,
            hold,
            callback,
        } = request
        else {
            return refuse(&mut stream, "expected a request to send".into());
        };
        let flows: Vec<FlowSpec> = match serde_json::from_value(flows) {
            Ok(f) => f,
            Err(e) => return refuse(&mut stream, format!("the flows do not read: {e}")),
        };
        if callback && !self.callback {
            return refuse(&mut stream, "this agent offers no callback mode".into());
        }
        if callback && dest.is_some() {
            return refuse(
                &mut stream,
                "callback mode sends only back to the asker (no destination)".into(),
            );
        }
        let dest = dest.unwrap_or(SocketAddr::new(peer.ip(), port));
        let dest = SocketAddr::new(unmapped(dest.ip()), dest.port());
        if let Err(why) = self.policy.check(peer.ip(), dest, &flows) {
            return refuse(&mut stream, why);
        }
        let interval = interval_ns.map(Duration::from_nanos);
        if interval.is_some_and(|w| w < Duration::from_millis(10)) {
            return refuse(&mut stream, "interval below 10 ms".into());
        }
        if self.running.fetch_add(1, Ordering::SeqCst) >= self.max_senders {
            self.running.fetch_sub(1, Ordering::SeqCst);
            return refuse(
                &mut stream,
                format!(
                    "busy: {} requests are sending (--max-senders); try again",
                    self.max_senders
                ),
            );
        }
        let _slot = Slot(&self.running);
        // The asker answers the destination's challenge: the watcher below hands its
        // answers over, the session's handshake waits for one.
        let (answers_tx, answers) = std::sync::mpsc::channel::<String>();
        let prover = asker_prover(&stream, answers, connect_timeout_ns)?;
        // A held request: once the session is set up, `Ready` to the asker, and its
        // `Go` (which the watcher hands over) starts the flows.
        let (go_tx, go) = std::sync::mpsc::channel::<()>();
        let hold = match hold {
            true => Some(held_start(&stream, go)?),
            false => None,
        };
        let wait = connect_timeout(connect_timeout_ns);
        let dialer = match callback {
            true => Some(Arc::new(
                Dialer::new(&stream, peer.ip(), self.tickets.clone(), wait)
                    .map_err(|e| ServeError::Failed(e.into()))?,
            )),
            false => None,
        };
        let config = SendConfig {
            callback: dialer,
            prover: Some(Arc::new(prover)),
            hold,
            // As the asker's --connect-timeout (across a congested link a lost SYN
            // waits out TCP's retries), within reason.
            connect_timeout: connect_timeout(connect_timeout_ns),
            interval,
            threads: threads.map(usize::from),
            cdf,
            caps: Some(RunCaps {
                bytes: self.policy.max_bytes,
                duration: self.policy.max_duration,
            }),
            ..SendConfig::new(dest, flows)
        };
        write_msg(&mut stream, &Msg::SendAccepted {}).map_err(ServeError::Failed)?;
        crate::out::note!(
            "dualperf agent: sending {} flow(s) to {dest} for {peer}{}",
            config.flows.len(),
            if callback { " (callback mode)" } else { "" }
        );
        // Anything from the asker (its Ctrl-C) or its going away halts the flows, as
        // does stopping the agent.
        let halt = Arc::new(AtomicBool::new(false));
        let done = Arc::new(AtomicBool::new(false));
        let watcher = watch_asker(&stream, reader, &halt, &done, stop, answers_tx, go_tx)?;
        let (report, error) = match run_session(&config, &halt) {
            Ok(r) => (Some(r), None),
            Err(e) => match e.downcast::<PartialReport>() {
                Ok(p) => (Some(p.report), Some(p.error)),
                Err(e) => (None, Some(format!("{e:#}"))),
            },
        };
        done.store(true, Ordering::SeqCst);
        let _ = watcher.join();
        let _ = stream.set_read_timeout(None);
        let msg = Msg::SendDone {
            report: report.and_then(|r| serde_json::to_value(r).ok()),
            error,
        };
        write_msg(&mut stream, &msg).map_err(ServeError::Failed)
    }

    fn features(&self) -> Vec<String> {
        let mut features = vec!["send".to_owned()];
        if self.callback {
            features.push(wire::control::FEATURE_CALLBACK.to_owned());
        }
        features
    }

    fn callback(&self, ticket: u64, stream: TcpStream, peer: SocketAddr) -> Result<(), String> {
        self.tickets.deliver(ticket, stream, peer)
    }
}

/// Refuses the asker on `stream`: an `Error` saying `why` to it, and
/// [`ServeError::Refused`] here.
fn refuse(stream: &mut TcpStream, why: String) -> Result<(), ServeError> {
    let _ = write_msg(
        stream,
        &Msg::Error {
            message: format!("agent refused: {why}"),
        },
    );
    Err(ServeError::Refused(why))
}

/// How long the agent waits to reach a destination's receiver, and for the asker's
/// answer to its challenge: the asker's `--connect-timeout` (5 s when unsaid), at least
/// 1 s and at most [`MAX_CONNECT_TIMEOUT`].
fn connect_timeout(connect_timeout_ns: Option<u64>) -> StdDuration {
    connect_timeout_ns
        .map(StdDuration::from_nanos)
        .unwrap_or(StdDuration::from_secs(5))
        .clamp(StdDuration::from_secs(1), MAX_CONNECT_TIMEOUT)
}

/// The session's prover: it passes the destination's challenge (`nonce`) to the asker
/// on `stream` as an `AuthQuery`, and waits up to [`connect_timeout`] for the answer
/// that the asker's watcher hands over on `answers`.
fn asker_prover(
    stream: &TcpStream,
    answers: std::sync::mpsc::Receiver<String>,
    connect_timeout_ns: Option<u64>,
) -> Result<impl Fn(&str) -> Result<String> + Send + Sync + 'static, ServeError> {
    let asker = stream
        .try_clone()
        .map_err(|e| ServeError::Failed(e.into()))?;
    let answers = std::sync::Mutex::new(answers);
    let wait = connect_timeout(connect_timeout_ns);
    Ok(move |nonce: &str| -> Result<String> {
        let mut asker = asker.try_clone()?;
        write_msg(
            &mut asker,
            &Msg::AuthQuery {
                nonce: nonce.to_owned(),
            },
        )?;
        let answers = answers.lock().unwrap_or_else(|e| e.into_inner());
        answers
            .recv_timeout(wait)
            .map_err(|_| anyhow::anyhow!("the asker did not answer the receiver's challenge"))
    })
}

/// A held request's start: says `Ready` to the asker on `stream`, then waits (at most
/// [`MAX_HOLD`], or until halted) for its `Go`, which the asker's watcher hands over on
/// `go`. False when the asker cannot be told or no `Go` came.
fn held_start(
    stream: &TcpStream,
    go: std::sync::mpsc::Receiver<()>,
) -> Result<Arc<Hold>, ServeError> {
    let asker = stream
        .try_clone()
        .map_err(|e| ServeError::Failed(e.into()))?;
    let go = std::sync::Mutex::new(go);
    let hold: Arc<Hold> = Arc::new(move |halt: &AtomicBool| {
        let Ok(mut asker) = asker.try_clone() else {
            return false;
        };
        if write_msg(&mut asker, &Msg::Ready {}).is_err() {
            return false;
        }
        let go = go.lock().unwrap_or_else(|e| e.into_inner());
        let until = std::time::Instant::now() + MAX_HOLD;
        wait_for_go(&go, halt, Some(until)).is_some()
    });
    Ok(hold)
}

/// A thread that reads the asker on `stream` while its flows run, until `done`: its
/// challenge answers go to `answers_tx`, its `Go` to `go_tx`; anything else from it, its
/// going away, or `stop` (the agent stopping) sets `halt`.
fn watch_asker(
    stream: &TcpStream,
    mut reader: MsgReader,
    halt: &Arc<AtomicBool>,
    done: &Arc<AtomicBool>,
    stop: &Arc<AtomicBool>,
    answers_tx: std::sync::mpsc::Sender<String>,
    go_tx: std::sync::mpsc::Sender<()>,
) -> Result<std::thread::JoinHandle<()>, ServeError> {
    let mut rd = stream
        .try_clone()
        .map_err(|e| ServeError::Failed(e.into()))?;
    let _ = rd.set_read_timeout(Some(StdDuration::from_millis(200)));
    let (halt, done, stop) = (halt.clone(), done.clone(), stop.clone());
    Ok(std::thread::spawn(move || {
        while !done.load(Ordering::SeqCst) {
            if stop.load(Ordering::SeqCst) {
                halt.store(true, Ordering::SeqCst);
            }
            match reader.read(&mut rd) {
                Err(e) if crate::control::is_timeout_error(&e) => {}
                Ok(Msg::AuthAnswer { mac }) => {
                    let _ = answers_tx.send(mac);
                }
                Ok(Msg::Go {}) => {
                    let _ = go_tx.send(());
                }
                _ => {
                    halt.store(true, Ordering::SeqCst);
                    break;
                }
            }
        }
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_must_be_bits() {
        assert_eq!(bit_rate("10mbit"), Ok(10_000_000));
        assert!(bit_rate("100pps").is_err());
    }
}
