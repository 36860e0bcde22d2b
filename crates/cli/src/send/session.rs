//! The sender's control session: handshake, registration, flows, finish, results.
//!
//! After registration a watcher thread owns the reading side of the control connection.
//! Normally the only thing it reads is the receiver's `Results` after our `Finish`; if the
//! receiver stops or dies first, the watcher returns early and every flow is halted, so
//! the sender reports what it measured instead of blasting into the void.

use std::collections::hash_map::Entry;
use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{mpsc, Arc};
use std::time::Duration as StdDuration;

use anyhow::{bail, Context, Result};
use meter::FlowSummary;
use traffic::FlowSpec;
use wire::control::{FlowGrant, FlowSent, Meter, Msg, Protocol, Results};
use wire::time::Instant;

use super::engine::{run_engine, EngineRun, FlowPlan, Pacing, StartGate};
use super::flow::Conn;
use super::tcpinfo::{LiveTcp, TcpStats};
use super::SendConfig;
use crate::control::{write_msg, MsgReader};
use results::send::{FlowOutcome, ReceivedFlow, SendReport, SenderFlow, SumStats};

/// How long the sender waits for the receiver's results after `Finish`: the receiver
/// may first wait for packets in flight and summarise millions of records.
const RESULTS_TIMEOUT: StdDuration = StdDuration::from_secs(120);

/// Clock exchanges at the start of a session (RFC 5905 keeps the least-delay sample of
/// its last eight).
const CLOCK_EXCHANGES: u32 = 8;
/// From the moment every engine is ready to the flows' origin: time for each engine to
/// take the origin and put its flows on its scheduler.
const START_MARGIN_NS: u64 = 5_000_000;

/// A report with what was measured, and the error that cut the session short.
#[derive(Debug)]
pub(crate) struct PartialReport {
    pub(crate) report: SendReport,
    pub(crate) error: String,
}

impl std::fmt::Display for PartialReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.error)
    }
}

impl std::error::Error for PartialReport {}

impl PartialReport {
    /// `report`, or with `errors` a [`PartialReport`] carrying it.
    pub(crate) fn unless_errors(report: SendReport, errors: &[String]) -> Result<SendReport> {
        if errors.is_empty() {
            Ok(report)
        } else {
            Err(anyhow::Error::new(Self {
                report,
                error: errors.join("; "),
            }))
        }
    }
}

/// The marking a flow's sockets apply.
pub(crate) fn marking_of(spec: &FlowSpec) -> netio::Marking {
    netio::Marking {
        tos: spec.marking.tos(),
        ttl: spec.marking.ttl,
        flow_label: spec.marking.flow_label,
    }
}

/// Open a control session, run every flow, collect both sides' results.
///
/// Fails without a report when nothing was measured (no receiver, refused); once flows
/// have run, a failure comes back as a [`PartialReport`] carrying everything measured.
pub(crate) fn run_session(config: &SendConfig, stop: &Arc<AtomicBool>) -> Result<SendReport> {
    let dest = config.dest;
    let Control {
        mut ctrl,
        mut reader,
        clock,
        sync,
        translated,
    } = open_control(config)?;
    let cpus = std::thread::available_parallelism().map_or(1, usize::from);
    let engines = traffic::sender::assign(&config.flows, config.threads, cpus);
    let (conns, grants) = register(&mut ctrl, &mut reader, config, &engines, translated)?;
    let reserving = super::reserve::start(config, &conns)?;
    // From here on the watcher reads the control connection.
    let (results_rx, watcher_done) = watch_results(&ctrl, reader)?;
    let log = open_log(config, &grants)?;
    let run = Arc::new(EngineRun {
        pacing: Pacing {
            spin: config.spin,
            batch_window: config.batch_window,
        },
        halt: Arc::new(AtomicBool::new(false)),
        progress: Arc::new(AtomicU64::new(0)),
        progress_bytes: Arc::new(AtomicU64::new(0)),
        log: log.as_ref().map(crate::logsink::LogSink::producer),
    });
    let (started, tcp_streams) = start_engines(config, stop, &run, &grants, conns, &engines)?;
    let (capped, tcp_reports) = supervise(config, stop, &run, &started, &watcher_done, tcp_streams);
    let results = join_engines(started.handles, &engines)?;
    let reserving = reserving.map(super::reserve::Reserving::snapshot);

    let mut errors: Vec<String> = capped.into_iter().collect();
    if started.unstarted && !stop.load(Ordering::SeqCst) {
        errors.push("halted before the flows started: whoever held them went away".into());
    }
    errors.extend(
        results
            .iter()
            .zip(&grants)
            .filter_map(|(r, g)| r.error.as_ref().map(|e| format!("flow {}: {e}", g.id))),
    );
    if let Some(log) = &log {
        close_log(log, &grants, &results, &mut errors);
    }
    let mut remote = finish(
        &mut ctrl,
        &grants,
        &results,
        &results_rx,
        &watcher_done,
        &mut errors,
    );
    let reservations = super::reserve::finish(reserving, &grants, &mut remote);
    let mut flows = outcomes(config, &grants, results, remote, log.is_some(), tcp_reports);
    super::reserve::merge(&mut flows, reservations);
    let report = SendReport {
        format_version: 1,
        tool: format!("dualperf {}", env!("CARGO_PKG_VERSION")),
        dest,
        interrupted: stop.load(Ordering::SeqCst),
        clock,
        sync,
        sum: SumStats::of(&flows),
        flows,
    };
    PartialReport::unless_errors(report, &errors)
}

/// The control connection, authenticated, with the receiver's clock against ours
/// (measured before any flow loads the path) and, between two clocks, how well each
/// end's is disciplined; and whether a NAT on the way translated our address (the
/// receiver saw the connection come from another address or port than ours).
fn open_control(config: &SendConfig) -> Result<Control> {
    let dest = config.dest;
    // In callback mode (an agent's reverse flows through the asker's NAT) the asker opens it.
    let mut ctrl = match &config.callback {
        Some(dialer) => dialer.stream()?,
        None => netio::tcp::connect(
            dest,
            &netio::Marking::default(),
            true,
            None,
            config.connect_timeout,
        )
        .with_context(|| {
            format!("cannot reach a dualperf receiver at {dest} (is `dualperf recv` running?)")
        })?,
    };
    ctrl.set_read_timeout(Some(config.connect_timeout.max(StdDuration::from_secs(10))))?;
    let mut reader = MsgReader::new();
    let welcomed = match &config.prover {
        Some(prove) => {
            crate::control::handshake_with(&mut ctrl, &mut reader, &**prove, "receiver")?
        }
        None => {
            crate::control::handshake(&mut ctrl, &mut reader, config.key.as_deref(), "receiver")?
        }
    };
    let translated = config.callback.is_none()
        && match (welcomed.peer, ctrl.local_addr()) {
            (Some(seen), Ok(ours)) => {
                seen.ip().to_canonical() != ours.ip().to_canonical() || seen.port() != ours.port()
            }
            _ => false,
        };
    let clock = crate::control::estimate_offset(&mut ctrl, &mut reader, CLOCK_EXCHANGES)?;
    let sync = match clock {
        Some(c) if !c.same_clock => Some(crate::control::session_sync(&mut ctrl, &mut reader)?),
        _ => None,
    };
    Ok(Control {
        ctrl,
        reader,
        clock,
        sync,
        translated,
    })
}

/// An open control connection ([`open_control`]).
struct Control {
    ctrl: TcpStream,
    reader: MsgReader,
    clock: Option<meter::clock::OffsetEstimate>,
    sync: Option<results::send::SessionSync>,
    /// A NAT translated our address on the way.
    translated: bool,
}

/// The receiver's results, as they come.
type ResultsMsg = Result<Results<FlowSummary, meter::RtpJitterSummary, Vec<meter::Interval>>>;

/// A thread that reads the receiver's results (of many flows, maybe in several
/// messages): they come on the channel, and the flag is set once it has read them (or
/// the connection ended).
fn watch_results(
    ctrl: &TcpStream,
    mut reader: MsgReader,
) -> Result<(mpsc::Receiver<ResultsMsg>, Arc<AtomicBool>)> {
    let (results_tx, results_rx) = mpsc::channel();
    let watcher_done = Arc::new(AtomicBool::new(false));
    let mut rd = ctrl.try_clone()?;
    rd.set_read_timeout(None)?;
    let done = watcher_done.clone();
    std::thread::Builder::new()
        .name("control-watch".into())
        .spawn(move || {
            let msg: ResultsMsg = reader.read_results(&mut rd);
            done.store(true, Ordering::SeqCst);
            let _ = results_tx.send(msg);
        })?;
    Ok((results_rx, watcher_done))
}

/// `--log`: the log streams as the flows run: each flow's FlowInfo first (written
/// here), its records as they are made, its FlowEnd last ([`close_log`]).
fn open_log(config: &SendConfig, grants: &[FlowGrant]) -> Result<Option<crate::logsink::LogSink>> {
    let Some(path) = &config.log else {
        return Ok(None);
    };
    let meta = results::log::LogMeta {
        tool: Some("dualperf send".into()),
        version: Some(env!("CARGO_PKG_VERSION").into()),
        dest: Some(config.dest.to_string()),
        ..Default::default()
    };
    let log = crate::logsink::LogSink::create(path, &meta.to_json())?;
    for (spec, g) in config.flows.iter().zip(grants) {
        let info = results::log::LogFlow {
            flow_id: Some(g.id),
            spec: Some(spec.clone()),
            ..Default::default()
        };
        log.write_entry(&meter::log::Entry::FlowInfo {
            flow: u32::from(g.id),
            json: info.to_json(),
        })?;
    }
    Ok(Some(log))
}

/// The engine threads, started together at `origin`.
struct Started {
    handles: Vec<std::thread::JoinHandle<Vec<SenderFlow>>>,
    origin: Instant,
    /// A held session whose flows were halted before they started.
    unstarted: bool,
}

/// One engine thread per group of flows, each given its plans in flow order; once every
/// engine has its flows set up (or has died, which its join reports), all start
/// together a little later, so that no flow's first deadline falls in the setup. With
/// them, a duplicate of each TCP data socket, for `TCP_INFO`.
fn start_engines(
    config: &SendConfig,
    stop: &Arc<AtomicBool>,
    run: &Arc<EngineRun>,
    grants: &[FlowGrant],
    conns: Vec<Conn>,
    engines: &[usize],
) -> Result<(Started, Vec<Option<TcpStream>>)> {
    let n_engines = engines.iter().max().map_or(0, |m| m + 1);
    let mut plans: Vec<Vec<FlowPlan>> = (0..n_engines).map(|_| Vec::new()).collect();
    // TCP_INFO is read on a duplicate of each TCP data socket (the engine's shutdown
    // still sends the FIN; the duplicates are closed once the engines are done).
    let mut tcp_streams = Vec::new();
    for (((spec, grant), conn), &e) in config.flows.iter().zip(grants).zip(conns).zip(engines) {
        tcp_streams.push(match &conn {
            Conn::Tcp(stream) => stream.try_clone().ok(),
            Conn::Udp(_) => None,
        });
        // A kernel-paced flow is written as fast as the socket takes it.
        let mut spec = spec.clone();
        spec.unpaced |= traffic::sender::kernel_paced(&spec);
        plans[e].push(FlowPlan {
            id: grant.id,
            spec,
            conn,
        });
    }
    let mut handles = Vec::new();
    let (ready_tx, ready_rx) = mpsc::channel();
    let mut origin_txs = Vec::new();
    for (e, plans) in plans.into_iter().enumerate() {
        let run = run.clone();
        let (origin_tx, origin_rx) = mpsc::channel();
        origin_txs.push(origin_tx);
        let gate = StartGate {
            ready: ready_tx.clone(),
            origin: origin_rx,
        };
        handles.push(
            std::thread::Builder::new()
                .name(format!("send-{e}"))
                .spawn(move || run_engine(&run, plans, gate))?,
        );
    }
    drop(ready_tx);
    for _ in 0..n_engines {
        if ready_rx.recv().is_err() {
            break;
        }
    }
    // A held session is now set up: its flows start when told, or are halted unsent.
    let unstarted = config.hold.as_ref().is_some_and(|hold| !hold(stop));
    if unstarted {
        run.halt.store(true, Ordering::SeqCst);
    }
    let origin = Instant::from_nanos(netio::clock::mono_ns() + START_MARGIN_NS);
    for tx in origin_txs {
        let _ = tx.send(origin);
    }
    if config.announce_start {
        eprintln!("dualperf send: started");
    }
    Ok((
        Started {
            handles,
            origin,
            unstarted,
        },
        tcp_streams,
    ))
}

/// While the engines run: live lines and the TCP flows' series at `--interval`'s window
/// edges, halting on a stop, on the receiver's going away or at an agent's caps, and
/// `--progress`. Returns why a cap halted the flows, and each TCP flow's report.
fn supervise(
    config: &SendConfig,
    stop: &Arc<AtomicBool>,
    run: &EngineRun,
    started: &Started,
    watcher_done: &AtomicBool,
    tcp_streams: Vec<Option<TcpStream>>,
) -> (
    Option<String>,
    std::vec::IntoIter<Option<results::send::TcpReport>>,
) {
    let (halt, progress, progress_bytes) = (&run.halt, &run.progress, &run.progress_bytes);
    let origin = started.origin;
    let handles = &started.handles;
    let total_planned: Option<u64> = config.flows.iter().map(FlowSpec::planned_packets).sum();
    let all_tcp = config.flows.iter().all(|f| f.protocol == Protocol::Tcp);
    let mut last_print = std::time::Instant::now();
    let mut capped: Option<String> = None;
    let mut tcp = TcpStats::new(origin.as_nanos(), config.interval.is_some(), tcp_streams);
    // The window edges of --interval: live lines, and the TCP flows' series.
    let mut live = config
        .interval
        .filter(|_| config.live || tcp.any())
        .map(|w| LiveIntervals::new(w, origin, config.flows.len(), config.live));
    while !handles.iter().all(std::thread::JoinHandle::is_finished) {
        // Wake every 20 ms, or at the next window edge of --interval if that is sooner,
        // so each live line counts what was handed to the kernel up to its edge.
        let mut nap = StdDuration::from_millis(20);
        let now = netio::clock::mono_ns();
        tcp.poll(now);
        if let Some(live) = live.as_mut() {
            live.poll(now, progress_bytes.load(Ordering::Relaxed), &mut tcp);
            nap = nap.min(StdDuration::from_nanos(live.next_ns.saturating_sub(now)));
        }
        std::thread::sleep(nap);
        if stop.load(Ordering::Relaxed) || watcher_done.load(Ordering::Relaxed) {
            halt.store(true, Ordering::SeqCst);
        }
        if capped.is_none() {
            capped = cap_reached(config, progress_bytes.load(Ordering::Relaxed), origin);
            if capped.is_some() {
                halt.store(true, Ordering::SeqCst);
            }
        }
        if config.progress && last_print.elapsed() >= StdDuration::from_millis(500) {
            last_print = std::time::Instant::now();
            let sent = progress.load(Ordering::Relaxed);
            match total_planned {
                // TCP carries bytes: its messages are only how its writes were cut.
                _ if all_tcp => eprint!(
                    "\rdualperf send: {} sent   ",
                    crate::human::bytes(progress_bytes.load(Ordering::Relaxed))
                ),
                Some(t) if t > 0 => eprint!(
                    "\rdualperf send: {sent}/{t} packets ({:.0} %)   ",
                    sent as f64 * 100.0 / t as f64
                ),
                _ => eprint!("\rdualperf send: {sent} packets   "),
            }
        }
    }
    if config.progress {
        eprintln!();
    }
    // The engines are done: the last TCP_INFO sample, and the last, partial window.
    let now = netio::clock::mono_ns();
    match live.as_mut() {
        Some(live) => live.finish(now, progress_bytes.load(Ordering::Relaxed), &mut tcp),
        None => {
            tcp.finish(now);
        }
    }
    (capped, tcp.reports().into_iter())
}

/// Why an agent's caps halt the flows, once `bytes` or the time since `origin` reach
/// them.
fn cap_reached(config: &SendConfig, bytes: u64, origin: Instant) -> Option<String> {
    let caps = config.caps.as_ref()?;
    let ran = StdDuration::from_nanos(netio::clock::mono_ns().saturating_sub(origin.as_nanos()));
    caps.reached(bytes, ran)
}

/// Each engine's results, back in flow order.
fn join_engines(
    handles: Vec<std::thread::JoinHandle<Vec<SenderFlow>>>,
    engines: &[usize],
) -> Result<Vec<SenderFlow>> {
    let mut per_engine = Vec::new();
    for h in handles {
        let results = h
            .join()
            .map_err(|_| anyhow::anyhow!("a sender thread panicked"))?;
        per_engine.push(results.into_iter());
    }
    Ok(engines
        .iter()
        .map(|&e| per_engine[e].next().unwrap_or_else(SenderFlow::empty))
        .collect())
}

/// Each flow's FlowEnd, and the log closed; its failures join `errors`.
fn close_log(
    log: &crate::logsink::LogSink,
    grants: &[FlowGrant],
    results: &[SenderFlow],
    errors: &mut Vec<String>,
) {
    for (g, r) in grants.iter().zip(results) {
        let end = results::log::LogFlow {
            flow_id: Some(g.id),
            sent_packets: Some(Some(r.sent_total().0)),
            unlogged_records: Some(r.unlogged),
            ..Default::default()
        };
        let entry = meter::log::Entry::FlowEnd {
            flow: u32::from(g.id),
            json: end.to_json(),
        };
        if let Err(e) = log.write_entry(&entry) {
            errors.push(format!("{e:#}"));
        }
    }
    match log.finish() {
        Ok(()) => crate::out::note!("dualperf: wrote {}", log.written()),
        Err(e) => errors.push(format!("{e:#}")),
    }
}

/// `Finish` with what each flow sent, and the receiver's results for it, by flow id;
/// what went wrong joins `errors`.
fn finish(
    ctrl: &mut TcpStream,
    grants: &[FlowGrant],
    results: &[SenderFlow],
    results_rx: &mpsc::Receiver<ResultsMsg>,
    watcher_done: &AtomicBool,
    errors: &mut Vec<String>,
) -> HashMap<u16, ReceivedFlow> {
    let sent: Vec<FlowSent> = grants
        .iter()
        .zip(results)
        .map(|(g, r)| FlowSent {
            id: g.id,
            // Every packet, omitted (-O) or not: the receiver counts loss from them.
            packets: r.sent_total().0,
            bytes: r.sent_total().1,
        })
        .collect();
    // The receiver may already have reported (it was stopped): then Finish may fail,
    // and its results cover only what it received until then.
    let receiver_ended_first = watcher_done.load(Ordering::SeqCst);
    let _ = write_msg(ctrl, &Msg::Finish { flows: sent });
    let remote: Vec<ReceivedFlow> = match results_rx.recv_timeout(RESULTS_TIMEOUT) {
        Ok(Ok(Results::Flows(flows, _))) => {
            if receiver_ended_first {
                errors.push("the receiver stopped before the flows ended; its results cover what it received until then".into());
            }
            flows
        }
        Ok(Ok(Results::Other(Msg::Error { message }))) => {
            errors.push(format!("receiver failed to report: {message}"));
            Vec::new()
        }
        Ok(Ok(Results::Other(other))) => {
            errors.push(format!("unexpected reply from receiver: {other:?}"));
            Vec::new()
        }
        Ok(Err(e)) => {
            errors.push(format!("no results from the receiver: {e:#}"));
            Vec::new()
        }
        Err(_) => {
            errors.push(format!(
                "no results from the receiver within {} s",
                RESULTS_TIMEOUT.as_secs()
            ));
            Vec::new()
        }
    };
    // Each flow's result by id, taken (not copied) into its outcome.
    remote.into_iter().map(|r| (r.id, r)).collect()
}

/// Each flow's outcome: what it sent, its echoes, the receiver's figures and its TCP
/// report.
fn outcomes(
    config: &SendConfig,
    grants: &[FlowGrant],
    results: Vec<SenderFlow>,
    mut remote: HashMap<u16, ReceivedFlow>,
    logged: bool,
    mut tcp_reports: std::vec::IntoIter<Option<results::send::TcpReport>>,
) -> Vec<FlowOutcome> {
    config
        .flows
        .iter()
        .zip(grants)
        .zip(results)
        .map(|((spec, grant), res)| {
            FlowOutcome::assemble(
                grant.id,
                spec,
                res,
                remote.remove(&grant.id),
                tcp_reports.next().flatten(),
                config.cdf,
                logged,
            )
        })
        .collect()
}

/// Open every flow's socket (UDP first, so its source port can be announced), register
/// the flows, then attach the TCP data connections. Behind a NAT (`translated`) the
/// ports the receiver will see are the NAT's, not ours: the UDP flows are announced as
/// translated, so the receiver takes each from the port its first datagram comes from.
fn register(
    ctrl: &mut TcpStream,
    reader: &mut MsgReader,
    config: &SendConfig,
    engines: &[usize],
    translated: bool,
) -> Result<(Vec<Conn>, Vec<FlowGrant>)> {
    let dest = config.dest;
    let mut udp = Vec::new();
    let mut announces = Vec::new();
    // UDP flows of one engine that mark alike share a socket (marking is per socket).
    let mut shared: HashMap<(usize, netio::Marking), Arc<netio::UdpSocket>> = HashMap::new();
    for (i, spec) in config.flows.iter().enumerate() {
        let marking = marking_of(spec);
        let src_port = if spec.protocol == Protocol::Udp {
            let open = || -> Result<Arc<netio::UdpSocket>> {
                let any: IpAddr = if dest.is_ipv4() {
                    Ipv4Addr::UNSPECIFIED.into()
                } else {
                    Ipv6Addr::UNSPECIFIED.into()
                };
                let port = spec.cport.unwrap_or(0);
                let sock = netio::UdpSocket::bind(SocketAddr::new(any, port), false)
                    .map_err(|e| cport_error(e, i, spec))?;
                // In callback mode it connects to where the asker's punch comes from.
                if config.callback.is_none() {
                    sock.connect_marked(dest, &marking)
                        .with_context(|| format!("flow {i}: cannot apply marking {marking:?}"))?;
                }
                if !config.gso {
                    sock.disable_gso();
                }
                let bytes = spec.window_bytes.map_or(4 << 20, |w| w as usize);
                let _ = sock.set_buffer_sizes(Some(bytes), Some(bytes));
                Ok(Arc::new(sock))
            };
            // A flow with its own source port (--cport) or with Don't Fragment (--df, a
            // socket option) has a socket of its own.
            let sock = match (spec.cport, spec.dont_fragment || config.reserve.is_some()) {
                (None, false) => match shared.entry((engines[i], marking)) {
                    Entry::Occupied(e) => e.get().clone(),
                    Entry::Vacant(e) => e.insert(open()?).clone(),
                },
                _ => open()?,
            };
            if spec.meter == Meter::Rtt {
                sock.enable_recv_meta()?;
            }
            let port = sock.local_addr()?.port();
            udp.push(Some(sock));
            Some(port)
        } else {
            udp.push(None);
            None
        };
        let (interval, cdf) = (config.interval, config.cdf);
        let mut announce = traffic::sender::announce(i as u32, spec, src_port, interval, cdf);
        announce.translated = translated && spec.protocol == Protocol::Udp;
        announce.reserve = config.reserve.as_ref().map(|r| r.request());
        announces.push(announce);
    }
    write_msg(ctrl, &Msg::Register { flows: announces })?;
    let grants = match reader.read(ctrl)? {
        Msg::Registered { flows } => flows,
        Msg::Error { message } => bail!("receiver refused the flows: {message}"),
        other => bail!("unexpected reply from receiver: {other:?}"),
    };
    if grants.len() != config.flows.len() {
        bail!(
            "receiver granted {} of {} flows",
            grants.len(),
            config.flows.len()
        );
    }
    if let Some(dialer) = &config.callback {
        dialer.await_punches(&config.flows, &udp, &grants)?;
    }
    let mut conns = Vec::new();
    for ((spec, grant), sock) in config.flows.iter().zip(&grants).zip(udp) {
        if let Some(sock) = sock {
            conns.push(Conn::Udp(sock));
            continue;
        }
        let dialed = match &config.callback {
            Some(dialer) => Some(dialer.data_stream(spec, grant.id)?),
            None => None,
        };
        let mut stream = match dialed {
            Some(stream) => stream,
            None => netio::tcp::connect_from(
            dest,
            spec.cport,
            &marking_of(spec),
            spec.nodelay,
            spec.congestion.as_deref(),
            config.connect_timeout,
        )
        .map_err(|e| {
            // TCP_CONGESTION fails with ENOENT for an algorithm the kernel does not have
            // and EPERM for one an unprivileged user may not choose.
            let cc_refused = matches!(
                e.kind(),
                std::io::ErrorKind::NotFound | std::io::ErrorKind::PermissionDenied
            );
            match &spec.congestion {
                _ if spec.cport.is_some() && port_in_use(&e) => {
                    cport_error(e, usize::from(grant.id), spec)
                }
                Some(cc) if cc_refused => anyhow::anyhow!(
                    "flow {}: congestion control {cc} refused ({e}): see /proc/sys/net/ipv4/tcp_available_congestion_control (and, unprivileged, tcp_allowed_congestion_control)",
                    grant.id
                ),
                _ => anyhow::Error::new(e)
                    .context(format!("flow {}: cannot open the TCP data connection", grant.id)),
            }
        })?,
        };
        if spec.zerocopy {
            netio::tcp::enable_zerocopy(&stream).with_context(|| {
                format!(
                    "flow {}: --zerocopy: SO_ZEROCOPY refused (Linux 4.14 or later)",
                    grant.id
                )
            })?;
        }
        if let Some(w) = spec.window_bytes {
            netio::tcp::set_send_buffer(&stream, w as usize)
                .with_context(|| format!("flow {}: --window {w}", grant.id))?;
        }
        if let Some(bytes_per_s) = traffic::sender::kernel_pacing(spec) {
            netio::tcp::set_max_pacing_rate(&stream, bytes_per_s)
                .with_context(|| format!("flow {}: SO_MAX_PACING_RATE", grant.id))?;
        }
        write_msg(
            &mut stream,
            &Msg::Attach {
                flow: grant.id,
                token: grant.token,
            },
        )?;
        if spec.meter == Meter::Rtt {
            let _ = netio::tcp::enable_recv_meta(&stream);
        }
        conns.push(Conn::Tcp(stream));
    }
    Ok((conns, grants))
}

/// A failure to bind flow `i`'s socket: with `--cport`, said as the port being in use.
fn cport_error(e: std::io::Error, i: usize, spec: &FlowSpec) -> anyhow::Error {
    match spec.cport {
        Some(port) if port_in_use(&e) => anyhow::anyhow!(
            "flow {i} ({}): source port {port} (--cport) is in use: {e}",
            spec.label
        ),
        Some(port) => {
            anyhow::Error::new(e).context(format!("flow {i}: cannot bind source port {port}"))
        }
        None => anyhow::Error::new(e).context(format!("flow {i}: cannot open a UDP socket")),
    }
}

/// Whether binding a source port failed because the port is taken.
fn port_in_use(e: &std::io::Error) -> bool {
    matches!(
        e.kind(),
        std::io::ErrorKind::AddrInUse | std::io::ErrorKind::AddrNotAvailable
    )
}

/// The live lines of `--interval`: what every flow together handed to the kernel in each
/// window since the flows' common start (the sender's side, as iperf3's client prints;
/// the receiver's series comes with the results), and for TCP flows the retransmits and
/// congestion window at each edge (iperf3's Retr and Cwnd, [`LiveTcp`]). The edges also
/// time the TCP flows' `TCP_INFO` series, printed or not.
struct LiveIntervals {
    window_ns: u64,
    origin_ns: u64,
    flows: usize,
    /// Print the lines (not with `--json`).
    print: bool,
    /// End of the window being counted, and the byte count at its start.
    next_ns: u64,
    last_bytes: u64,
}

impl LiveIntervals {
    fn new(window: wire::time::Duration, origin: Instant, flows: usize, print: bool) -> Self {
        let window_ns = window.as_nanos().max(1);
        Self {
            window_ns,
            origin_ns: origin.as_nanos(),
            flows,
            print,
            next_ns: origin.as_nanos().saturating_add(window_ns),
            last_bytes: 0,
        }
    }

    fn line(&self, from_ns: u64, to_ns: u64, bytes: u64, tcp: Option<LiveTcp>) {
        use std::io::Write;
        if !self.print {
            return;
        }
        let line = results::send::text::live_line(
            self.origin_ns,
            self.window_ns,
            (from_ns, to_ns),
            bytes,
            tcp,
            self.flows,
        );
        // A closed stdout ends the program at the report; here it only loses lines.
        let _ = writeln!(std::io::stdout(), "{line}");
    }

    fn poll(&mut self, now_ns: u64, bytes: u64, tcp: &mut TcpStats) {
        while now_ns >= self.next_ns {
            let tcp = tcp.edge(now_ns);
            self.line(
                self.next_ns - self.window_ns,
                self.next_ns,
                bytes - self.last_bytes,
                tcp,
            );
            self.last_bytes = bytes;
            self.next_ns = self.next_ns.saturating_add(self.window_ns);
            if self.next_ns == u64::MAX {
                break;
            }
        }
    }

    /// The last, partial window, with the TCP flows' last sample.
    fn finish(&mut self, now_ns: u64, bytes: u64, tcp: &mut TcpStats) {
        self.poll(now_ns, bytes, tcp);
        let last_tcp = tcp.finish(now_ns);
        let from = self.next_ns - self.window_ns;
        if bytes > self.last_bytes && now_ns > from {
            self.line(from, now_ns, bytes - self.last_bytes, last_tcp);
        }
    }
}
