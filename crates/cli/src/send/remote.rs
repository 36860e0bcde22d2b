//! Flows another host sends, driven from here over one control session with a
//! `dualperf agent`: `--reverse` (the agent sends to a receiver this process starts),
//! `--bidir` (that and our own flows to the agent, at once) and `--from AGENT` (the agent
//! sends to a third host). The agent runs an ordinary send session and returns its
//! report, so each direction is measured and reported exactly as `send` does.

use std::net::{IpAddr, Ipv6Addr, SocketAddr, TcpStream};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration as StdDuration;

use anyhow::{bail, Context, Result};
use results::send::{BidirReport, SendReport, SEND_FORMAT_VERSION};
use wire::control::Msg;

use super::callback::ReverseMode;
use super::{run_session, PartialReport, SendConfig};
use crate::control::{write_msg, MsgReader, Welcomed};
use crate::recv::{Receiver, ReceiverConfig};

/// Where a request to send goes, and what to prove to it.
pub(crate) struct AgentRef {
    pub(crate) addr: SocketAddr,
    pub(crate) key: Option<Vec<u8>>,
    pub(crate) connect_timeout: StdDuration,
}

/// Where the agent's flows go.
pub(crate) enum Target {
    /// A receiver at this address, and its key (which stays here: the agent asks us to
    /// answer the receiver's challenge).
    Host(SocketAddr, Option<String>),
    /// Back to us (as the agent sees our address) at this port, and our receiver's key.
    Asker(u16, String),
}

/// Ask `agent` to send `config.flows` to `target`; wait for its report. Ctrl-C (`stop`)
/// asks the agent to halt, and its report of what was sent until then still comes back.
pub(crate) fn request_send(
    agent: &AgentRef,
    target: Target,
    config: &SendConfig,
    announce: bool,
    stop: &AtomicBool,
) -> Result<SendReport> {
    let (mut ctrl, mut reader, _) = open_agent(agent)?;
    let request = Request {
        target,
        config,
        announce,
        stop,
        dial: None,
    };
    request_on(&mut ctrl, &mut reader, request)
}

/// The control connection to `agent`, authenticated, and what its `Welcome` said.
fn open_agent(agent: &AgentRef) -> Result<(TcpStream, MsgReader, Welcomed)> {
    let mut ctrl = netio::tcp::connect(
        agent.addr,
        &netio::Marking::default(),
        true,
        None,
        agent.connect_timeout,
    )
    .with_context(|| {
        format!(
            "cannot reach a dualperf agent at {} (is `dualperf agent` running?)",
            agent.addr
        )
    })?;
    ctrl.set_read_timeout(Some(agent.connect_timeout.max(StdDuration::from_secs(10))))?;
    let mut reader = MsgReader::new();
    let welcomed =
        crate::control::handshake(&mut ctrl, &mut reader, agent.key.as_deref(), "agent")?;
    Ok((ctrl, reader, welcomed))
}

/// Opens a connection to the agent for one of its `Dial`s (callback mode).
type Dial<'a> = &'a dyn Fn(u64) -> Result<()>;

/// A request to send, on an open control connection.
struct Request<'a> {
    target: Target,
    config: &'a SendConfig,
    announce: bool,
    stop: &'a AtomicBool,
    /// Callback mode: how we answer the agent's `Dial`s.
    dial: Option<Dial<'a>>,
}

/// Ask the agent on `ctrl` to send; wait for its report ([`request_send`]).
fn request_on(
    ctrl: &mut TcpStream,
    reader: &mut MsgReader,
    request: Request<'_>,
) -> Result<SendReport> {
    let Request {
        target,
        config,
        announce,
        stop,
        dial,
    } = request;
    // The destination's key stays here: the agent asks us to answer its challenge.
    let (dest, port, key) = match target {
        Target::Host(addr, key) => (Some(addr), 0, key),
        Target::Asker(port, key) => (None, port, Some(key)),
    };
    let request = Msg::SendRequest {
        dest,
        port,
        flows: serde_json::to_value(&config.flows)?,
        interval_ns: config.interval.map(|w| w.as_nanos()),
        threads: config.threads.and_then(|t| u16::try_from(t).ok()),
        connect_timeout_ns: u64::try_from(config.connect_timeout.as_nanos()).ok(),
        cdf: config.cdf,
        hold: config.hold.is_some(),
        callback: dial.is_some(),
    };
    write_msg(ctrl, &request)?;
    match reader.read(ctrl)? {
        Msg::SendAccepted {} => {}
        Msg::Error { message } => bail!("{message}"),
        other => bail!("unexpected reply from the agent: {other:?}"),
    }
    // A held request starts on our `Go`, announced then.
    if announce && config.hold.is_none() {
        eprintln!("dualperf send: started");
    }
    let hold = config.hold.as_deref();
    let asked = Asked {
        key: key.as_deref(),
        hold,
        announce,
        dial,
    };
    wait_done(ctrl, reader, &asked, stop)
}

/// What the agent's messages are answered with while it sends.
struct Asked<'a> {
    /// The destination's key, for its challenges.
    key: Option<&'a str>,
    /// Lets held flows start.
    hold: Option<&'a super::Hold>,
    /// Say when the flows start.
    announce: bool,
    /// Callback mode: answers `Dial`.
    dial: Option<Dial<'a>>,
}

/// The agent's `SendDone`, answering its challenges with `key` (the destination's),
/// its `Ready` with `Go` once `hold` lets the flows start (saying so if `announce`), its
/// `Dial`s with `dial`, and asking it to halt once `stop` is set.
fn wait_done(
    ctrl: &mut TcpStream,
    reader: &mut MsgReader,
    asked: &Asked<'_>,
    stop: &AtomicBool,
) -> Result<SendReport> {
    let Asked {
        key,
        hold,
        announce,
        dial,
    } = *asked;
    ctrl.set_read_timeout(Some(StdDuration::from_millis(200)))?;
    let mut halted = false;
    // Held flows let go of unstarted, not by Ctrl-C: an error beside the report.
    let mut unstarted = false;
    loop {
        match reader.read(ctrl) {
            Ok(Msg::SendDone { report, error }) if unstarted && !stop.load(Ordering::SeqCst) => {
                let error = error.map_or(String::new(), |e| format!(" (the agent: {e})"));
                let error =
                    format!("halted before the flows started: whoever held them went away{error}");
                return match report.map(serde_json::from_value::<SendReport>) {
                    Some(Ok(report)) => Err(anyhow::Error::new(PartialReport { report, error })),
                    _ => Err(anyhow::anyhow!(error)),
                };
            }
            Ok(Msg::Ready {}) => {
                if hold.is_none_or(|hold| hold(stop)) {
                    write_msg(ctrl, &Msg::Go {})?;
                    if announce {
                        eprintln!("dualperf send: started");
                    }
                } else if !halted {
                    // Any other message halts the held flows unsent; the agent reports.
                    halted = true;
                    unstarted = true;
                    write_msg(ctrl, &Msg::Finish { flows: Vec::new() })?;
                }
            }
            Ok(Msg::SendDone { report, error }) => {
                let report = match report.map(serde_json::from_value::<SendReport>) {
                    Some(Ok(r)) => r,
                    Some(Err(e)) => bail!("the agent's report does not read: {e}"),
                    None => bail!(
                        "the agent sent nothing: {}",
                        error.unwrap_or_else(|| "no reason given".into())
                    ),
                };
                return match error {
                    None => Ok(report),
                    Some(error) => Err(anyhow::Error::new(PartialReport {
                        report,
                        error: format!("the agent's flows: {error}"),
                    })),
                };
            }
            Ok(Msg::AuthQuery { nonce }) => {
                let mac = key
                    .map(|k| wire::control::auth_mac(k.as_bytes(), &nonce))
                    .unwrap_or_default();
                write_msg(ctrl, &Msg::AuthAnswer { mac })?;
            }
            Ok(Msg::Dial { ticket }) => match dial {
                Some(dial) => dial(ticket).context("calling the agent back")?,
                None => {
                    bail!("the agent asked to be called back, which this request did not offer")
                }
            },
            Ok(Msg::Error { message }) => bail!("the agent: {message}"),
            Ok(other) => bail!("unexpected message from the agent: {other:?}"),
            Err(e) if crate::control::is_timeout_error(&e) => {
                if stop.load(Ordering::SeqCst) && !halted {
                    // Any message halts the agent's flows; it still reports.
                    halted = true;
                    let _ = write_msg(ctrl, &Msg::Finish { flows: Vec::new() });
                }
            }
            Err(e) => return Err(e.context("the agent closed the session before reporting")),
        }
    }
}

/// `--reverse`: start a receiver here (a one-time key, any free port), and have the
/// agent at `config.dest` send `config.flows` to it. `log` is this receiver's log.
pub(crate) fn reverse(
    config: &SendConfig,
    log: Option<PathBuf>,
    announce: bool,
    stop: &Arc<AtomicBool>,
) -> Result<SendReport> {
    let agent = AgentRef {
        addr: config.dest,
        key: config.key.clone(),
        connect_timeout: config.connect_timeout,
    };
    let (mut ctrl, mut reader, welcomed) = open_agent(&agent)?;
    let callback = callback_mode(config.reverse.mode, &welcomed, agent.addr)?;
    let key = crate::control::hex_key();
    let receiver = Receiver::start(
        ReceiverConfig {
            bind: SocketAddr::new(IpAddr::V6(Ipv6Addr::UNSPECIFIED), 0),
            key: Some(key.clone().into_bytes()),
            log,
            handshake_timeout: config.connect_timeout.max(StdDuration::from_secs(10)),
            busy_poll: crate::args::std_duration(crate::recv::DEFAULT_BUSY_POLL)
                .unwrap_or_default(),
            // Callback mode: one socket, so one NAT mapping for every flow.
            threads: if callback {
                1
            } else {
                crate::recv::default_threads()
            },
            gro: true,
            skip_rx_copy: false,
            service: None,
        },
        Arc::new(AtomicBool::new(false)),
    )
    .context("starting the receiver for the reverse direction")?;
    receiver.set_nat_keepalive(config.reverse.keepalive, config.reverse.punch_delay);
    let port = receiver.local_addr().port();
    // The agent's `Dial`: a connection to it, with the ticket, served as if accepted.
    let dial = |ticket: u64| -> Result<()> {
        let mut stream = netio::tcp::connect(
            agent.addr,
            &netio::Marking::default(),
            true,
            None,
            agent.connect_timeout,
        )
        .with_context(|| format!("cannot reach the agent at {}", agent.addr))?;
        write_msg(&mut stream, &Msg::Callback { ticket })?;
        receiver.adopt(stream)
    };
    let request = Request {
        target: Target::Asker(port, key),
        config,
        announce,
        stop,
        dial: callback.then_some(&dial as Dial<'_>),
    };
    let outcome = request_on(&mut ctrl, &mut reader, request);
    // Its results went to the agent's session; what is left is the log to finish.
    let finished = receiver.shutdown();
    let report = outcome?;
    finished.context("finishing the reverse direction's receiver")?;
    Ok(report)
}

/// Whether the reverse direction goes in callback mode: as `mode` says, `auto` as the
/// agent at `addr` offers (with a note when it does not).
fn callback_mode(mode: ReverseMode, welcomed: &Welcomed, addr: SocketAddr) -> Result<bool> {
    let offered = welcomed.has(wire::control::FEATURE_CALLBACK);
    match mode {
        ReverseMode::Listen => Ok(false),
        ReverseMode::Callback if !offered => bail!(
            "the agent at {addr} predates reverse through NAT (its welcome offers no callback mode): use --reverse-mode listen where it can reach us"
        ),
        ReverseMode::Auto if !offered => {
            crate::out::note!("dualperf send: the agent at {addr} offers no callback mode: the reverse direction uses listen mode (the agent connects to us, so not through a NAT)");
            Ok(false)
        }
        ReverseMode::Callback | ReverseMode::Auto => Ok(true),
    }
}

/// `--bidir`: our flows to the agent at `config.dest` and its flows to us, at once.
pub(crate) fn bidir(config: &SendConfig, stop: &Arc<AtomicBool>) -> BidirReport {
    let split = |r: Result<SendReport>, which: &str, errors: &mut Vec<String>| match r {
        Ok(r) => Some(r),
        Err(e) => match e.downcast::<PartialReport>() {
            Ok(p) => {
                errors.push(format!("{which}: {}", p.error));
                Some(p.report)
            }
            Err(e) => {
                errors.push(format!("{which}: {e:#}"));
                None
            }
        },
    };
    let back = {
        let config = config.clone();
        let stop = stop.clone();
        std::thread::spawn(move || reverse(&config, None, false, &stop))
    };
    let forward = run_session(config, stop);
    let reverse = back
        .join()
        .unwrap_or_else(|_| Err(anyhow::anyhow!("the reverse direction's thread panicked")));
    let mut errors = Vec::new();
    let forward = split(forward, "forward", &mut errors);
    let reverse = split(reverse, "reverse", &mut errors);
    BidirReport {
        format_version: SEND_FORMAT_VERSION,
        forward,
        reverse,
        errors,
    }
}
