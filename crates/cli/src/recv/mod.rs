//! `dualperf recv`: the receiver. One port carries UDP data, TCP data and the TCP control
//! channel, on IPv4 and IPv6 at once ([::] with V6ONLY off).
//!
//! Threads: one reads UDP datagrams in batches (recvmmsg) and echoes round-trip probes;
//! one accepts TCP connections; each connection gets its own thread, so a stalled or
//! hostile peer never holds up anyone else. Flow state lives in one table behind a mutex
//! that the UDP thread takes once per batch, not per packet.
//!
//! Garbage is counted and dropped: datagrams that are not probes, probes of unknown
//! flows or from the wrong source, oversized or malformed control messages, wrong keys,
//! connections that stall during the handshake.

mod conn;
mod udp;

use std::collections::{HashMap, HashSet};
use std::net::{IpAddr, Ipv6Addr, SocketAddr};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use anyhow::{Context, Result};
use meter::log::Entry;
use meter::{FlowMeter, IntervalSeries, RxRecord};
use results::recv::{CounterSnapshot, FlowReport, RecvLine};
use wire::control::{FlowAnnounce, FlowGrant, Meter, Protocol};
use wire::probe::SeqUnwrapper;

use crate::control::DEFAULT_PORT;

/// `recv --busy-poll`'s default: receivers of flows faster than about 50,000 pkt/s
/// poll; slower ones sleep between packets.
pub(crate) const DEFAULT_BUSY_POLL: &str = "20us";

/// Receive flows from `dualperf send`: dual-stack UDP and TCP data and the control
/// channel on one port.
///
/// Every packet is recorded (flow, sequence, size, send and kernel receive timestamps,
/// received DSCP/ECN, hop limit and flow label). Round-trip probes are echoed only to
/// the sender that registered them, with that flow's marking, never larger than received.
/// Ctrl-C prints what was measured and flushes the log.
#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:
  dualperf recv
  dualperf recv --port 5000 --key secret --log recv.dplog --json
  dualperf recv --log recv.dplog.zst      # zstd-compressed log; read it with dualperf decode
  dualperf recv --busy-poll 0             # always sleep in the kernel between datagrams

The log format and the figures: docs/output.md.")]
pub(crate) struct RecvArgs {
    /// Port for UDP and TCP data and the TCP control channel (0 picks a free one; the
    /// chosen port is printed on stderr).
    #[arg(short, long, default_value_t = DEFAULT_PORT)]
    port: u16,
    /// Address to listen on. The default [::] accepts IPv4 and IPv6.
    #[arg(long, value_name = "ADDR")]
    bind: Option<IpAddr>,
    /// Shared secret. Senders must prove they know it (HMAC-SHA256 over a fresh nonce).
    #[arg(long, env = "DUALPERF_KEY", hide_env_values = true)]
    key: Option<String>,
    /// Write every received packet's record to this binary log as it arrives; read it
    /// with `dualperf decode`. A writer thread takes the records: the receiver never waits
    /// for the disk, and records it could not take are counted per flow
    /// (`unlogged_records`), never lost silently. A name ending in `.zst` writes it
    /// zstd-compressed (about a quarter of the size; `decode` reads either).
    #[arg(long, value_name = "FILE")]
    log: Option<PathBuf>,
    /// Print results as JSON lines: one object per finished session and a final one.
    #[arg(long)]
    json: bool,
    /// Exit after this many sender sessions have finished (0: run until Ctrl-C).
    #[arg(long, default_value_t = 0, value_name = "N")]
    sessions: u64,
    /// Time a new connection has to say who it is and authenticate.
    #[arg(long, default_value = "5s", value_parser = crate::args::std_duration, value_name = "DURATION")]
    handshake_timeout: Duration,
    /// Poll the UDP socket instead of sleeping in the kernel while datagrams come less
    /// than this far apart on average (0: never). On loopback the sender's CPU pays for
    /// waking a sleeping receiver, which limits a fast flow's rate and timing; a polling
    /// receiver reads without a wake-up, napping 10 µs between reads (spinning while it
    /// echoes round-trip probes). After 1 ms without a datagram it sleeps again. The
    /// default polls for flows faster than about 50,000 datagrams a second.
    #[arg(long, default_value = DEFAULT_BUSY_POLL, value_parser = crate::args::std_duration, value_name = "DURATION")]
    busy_poll: Duration,
    /// Stop when standard input closes: a receiver started by `dualperf run` ends with
    /// its parent, even one killed with SIGKILL.
    #[arg(long, hide = true)]
    stdin_lifeline: bool,
}

pub(crate) fn run(args: RecvArgs) -> Result<()> {
    let stop = crate::interrupt::flag();
    if args.stdin_lifeline {
        let stop = stop.clone();
        std::thread::spawn(move || {
            // Read until end of file (or an error): the parent is gone.
            let _ = std::io::copy(&mut std::io::stdin(), &mut std::io::sink());
            stop.store(true, Ordering::SeqCst);
        });
    }
    let bind_ip = args.bind.unwrap_or(IpAddr::V6(Ipv6Addr::UNSPECIFIED));
    let config = ReceiverConfig {
        bind: SocketAddr::new(bind_ip, args.port),
        key: args.key.map(String::into_bytes),
        log: args.log,
        handshake_timeout: args.handshake_timeout,
        busy_poll: args.busy_poll,
    };
    let receiver = Receiver::start(config, stop.clone())?;
    eprintln!(
        "dualperf recv: listening on {} (UDP and TCP{})",
        receiver.local_addr(),
        if receiver.shared.key.is_some() {
            ", key required"
        } else {
            ""
        }
    );
    let json = args.json;
    let mut printed = 0;
    while !stop.load(Ordering::SeqCst) {
        std::thread::sleep(Duration::from_millis(50));
        printed = receiver.print_new_reports(printed, json);
        if args.sessions > 0 && receiver.sessions_done() >= args.sessions {
            break;
        }
    }
    let report = receiver.shutdown()?;
    let _ = report.print_remaining(printed, json);
    report.print_counters(json);
    Ok(())
}

/// What the receiver needs to start.
pub(crate) struct ReceiverConfig {
    pub(crate) bind: SocketAddr,
    pub(crate) key: Option<Vec<u8>>,
    pub(crate) log: Option<PathBuf>,
    pub(crate) handshake_timeout: Duration,
    /// The UDP loop polls while datagrams come closer than this ([`netio::poll::RecvPoll`]).
    pub(crate) busy_poll: Duration,
}

/// Counters of everything refused or dropped.
#[derive(Debug, Default)]
pub(crate) struct Counters {
    pub(crate) datagrams: AtomicU64,
    pub(crate) malformed_datagrams: AtomicU64,
    pub(crate) unknown_flow: AtomicU64,
    pub(crate) wrong_source: AtomicU64,
    pub(crate) bad_connections: AtomicU64,
    pub(crate) auth_failures: AtomicU64,
    pub(crate) handshake_timeouts: AtomicU64,
    pub(crate) late_after_finish: AtomicU64,
    pub(crate) echo_failures: AtomicU64,
}

impl Counters {
    fn snapshot(&self) -> CounterSnapshot {
        let g = |a: &AtomicU64| a.load(Ordering::Relaxed);
        CounterSnapshot {
            datagrams: g(&self.datagrams),
            malformed_datagrams: g(&self.malformed_datagrams),
            unknown_flow: g(&self.unknown_flow),
            wrong_source: g(&self.wrong_source),
            bad_connections: g(&self.bad_connections),
            auth_failures: g(&self.auth_failures),
            handshake_timeouts: g(&self.handshake_timeouts),
            late_after_finish: g(&self.late_after_finish),
            echo_failures: g(&self.echo_failures),
        }
    }
}

/// State of one registered flow.
pub(crate) struct FlowState {
    pub(crate) announce: FlowAnnounce,
    pub(crate) token: u64,
    pub(crate) session: u64,
    pub(crate) peer_ip: IpAddr,
    /// Every figure of the flow, updated as packets arrive (constant memory).
    pub(crate) meter: FlowMeter,
    /// The flow's key in the log: unique per log file, unlike the wrapping 16-bit ids.
    pub(crate) log_key: u32,
    /// Records the log writer could not take (see `crate::logsink`).
    pub(crate) unlogged: u64,
    pub(crate) unwrapper: SeqUnwrapper,
    pub(crate) malformed: u64,
    pub(crate) last_rx_mono_ns: u64,
    /// Largest delay seen, to size the wait for packets still in flight.
    pub(crate) max_delay_ns: u64,
    pub(crate) attached: bool,
}

impl FlowState {
    /// The marking of the flow's echoes. A flow label of 0 means "no label": setting it
    /// would switch automatic labels off on the shared socket for everyone.
    pub(crate) fn marking(&self) -> netio::Marking {
        netio::Marking {
            tos: self.announce.tos,
            ttl: self.announce.ttl,
            flow_label: self.announce.flow_label.filter(|l| *l != 0),
        }
    }

    /// Keep the largest delay (one-way here; clocks of one host, or synchronised ones).
    pub(crate) fn note_delay(&mut self, r: &RxRecord) {
        let d = u64::try_from(r.delay_ns()).unwrap_or(0);
        if d > self.max_delay_ns {
            self.max_delay_ns = d.min(5_000_000_000);
        }
    }
}

/// Most interval windows a session's results may carry, all flows together (the sender
/// checks the same bound for flows with a duration).
const MAX_SESSION_WINDOWS: u64 = crate::send::MAX_SESSION_WINDOWS;

/// Why a flow announcement is refused, if it is.
fn check_announce(a: &FlowAnnounce, peer_ip: IpAddr) -> Result<(), String> {
    let i = a.index;
    if a.interval_ns.is_some_and(|w| w < 1_000_000) {
        return Err(format!("flow {i}: an interval below 1 ms"));
    }
    if (a.size_bytes as usize) < wire::probe::HEADER_LEN {
        return Err(format!(
            "flow {i}: size {} is below the 16-byte probe",
            a.size_bytes
        ));
    }
    let max = match a.protocol {
        Protocol::Udp => 65_507,
        Protocol::Tcp => wire::frame::MAX_DATA_LEN,
    };
    if a.size_bytes as usize > max {
        return Err(format!(
            "flow {i}: size {} exceeds {max} bytes",
            a.size_bytes
        ));
    }
    if a.ttl == Some(0) {
        return Err(format!("flow {i}: a TTL / hop limit of 0 cannot be sent"));
    }
    match a.flow_label {
        Some(l) if l > 0xF_FFFF => {
            return Err(format!("flow {i}: flow label {l:#x} exceeds 20 bits"))
        }
        Some(_) if peer_ip.is_ipv4() => {
            return Err(format!(
                "flow {i}: a flow label needs IPv6, the sender is {peer_ip}"
            ))
        }
        _ => {}
    }
    if a.protocol == Protocol::Udp && a.meter == Meter::Rtt && a.src_port.is_none() {
        return Err(format!(
            "flow {i}: a UDP round-trip flow must announce its source port"
        ));
    }
    Ok(())
}

/// All registered flows, by id.
#[derive(Default)]
pub(crate) struct FlowTable {
    next_id: u16,
    /// The last log key given out.
    log_keys: u32,
    pub(crate) flows: HashMap<u16, FlowState>,
    /// Ids whose session has reported, until reused: their packets are late, not unknown.
    pub(crate) finished: HashSet<u16>,
    /// The UDP loop's log records not handed to the writer yet (with `--log`). They
    /// wait here, under the table's lock, so that a flow's end hands them over before
    /// its FlowEnd entry is written.
    pub(crate) udp_log: Option<crate::logsink::Chunk>,
}

impl FlowTable {
    /// Hands the UDP loop's pending log records to the writer (all of them with
    /// `force`, else only when due: see [`crate::logsink::HOLD_NS`]); records it cannot
    /// take are counted against their flows.
    pub(crate) fn submit_udp_log(
        &mut self,
        log: &crate::logsink::LogProducer,
        now_ns: u64,
        force: bool,
    ) {
        let Some(chunk) = &mut self.udp_log else {
            return;
        };
        let dropped = if force {
            log.submit(chunk)
        } else {
            log.submit_if_due(chunk, now_ns)
        };
        for (id, n) in dropped.unwrap_or_default() {
            if let Some(f) = self.flows.get_mut(&(id as u16)) {
                f.unlogged += n;
            }
        }
    }

    /// Register flows for a session, returning their grants.
    pub(crate) fn register(
        &mut self,
        session: u64,
        peer_ip: IpAddr,
        announced: Vec<FlowAnnounce>,
    ) -> Result<Vec<FlowGrant>, String> {
        if self.flows.len() + announced.len() > usize::from(u16::MAX) - 1 {
            return Err("the receiver's flow table is full".into());
        }
        for a in &announced {
            check_announce(a, peer_ip)?;
        }
        let mut grants = Vec::with_capacity(announced.len());
        for announce in announced {
            let id = loop {
                self.next_id = self.next_id.wrapping_add(1);
                if self.next_id != 0 && !self.flows.contains_key(&self.next_id) {
                    break self.next_id;
                }
            };
            self.finished.remove(&id);
            self.log_keys += 1;
            let mut meter = FlowMeter::new(u32::from(id));
            if let Some(hz) = announce.rtp_clock_hz {
                // RFC 3550 §6.4.1 interarrival jitter against the RTP timestamps.
                meter = meter.with_rtp_clock(hz);
            }
            if let Some(w) = announce.interval_ns {
                // The series of one session travel in one message: no flow may build
                // more windows than a session may report.
                if let Ok(series) = IntervalSeries::with_max_windows(w, MAX_SESSION_WINDOWS) {
                    meter = meter.with_intervals(series);
                }
            }
            let token = u64::from_ne_bytes(crate::control::random_bytes());
            grants.push(FlowGrant {
                index: announce.index,
                id,
                token,
            });
            self.flows.insert(
                id,
                FlowState {
                    announce,
                    token,
                    session,
                    peer_ip,
                    meter,
                    log_key: self.log_keys,
                    unlogged: 0,
                    unwrapper: SeqUnwrapper::default(),
                    malformed: 0,
                    last_rx_mono_ns: 0,
                    max_delay_ns: 0,
                    attached: false,
                },
            );
        }
        Ok(grants)
    }
}

pub(crate) struct Shared {
    pub(crate) key: Option<Vec<u8>>,
    pub(crate) handshake_timeout: Duration,
    /// The UDP loop polls while datagrams come closer than this.
    pub(crate) busy_poll: Duration,
    pub(crate) table: Mutex<FlowTable>,
    pub(crate) counters: Counters,
    pub(crate) stop: Arc<AtomicBool>,
    pub(crate) udp: netio::UdpSocket,
    pub(crate) next_session: AtomicU64,
    /// Control sessions still running; shutdown waits for them to file their flows.
    pub(crate) active_sessions: AtomicU64,
    pub(crate) sessions_done: AtomicU64,
    pub(crate) log: Option<crate::logsink::LogSink>,
    pub(crate) reports: Mutex<Vec<FlowReport>>,
}

impl Shared {
    /// Register a session's flows; each one's FlowInfo goes to the log before any of
    /// its packets can arrive (the sender learns its id only from the grants).
    pub(crate) fn register_flows(
        &self,
        session: u64,
        peer_ip: IpAddr,
        announced: Vec<FlowAnnounce>,
    ) -> Result<Vec<FlowGrant>, String> {
        let mut table = self.table.lock().unwrap_or_else(|e| e.into_inner());
        let grants = table.register(session, peer_ip, announced)?;
        if let Some(log) = &self.log {
            for g in &grants {
                let Some(state) = table.flows.get(&g.id) else {
                    continue;
                };
                let info = serde_json::json!({
                    "flow_id": g.id,
                    "session": session,
                    "peer": peer_ip,
                    "announce": state.announce,
                });
                let entry = Entry::FlowInfo {
                    flow: state.log_key,
                    json: info.to_string(),
                };
                if let Err(e) = log.write_entry(&entry) {
                    eprintln!(
                        "dualperf recv: warning: the log lost flow {}'s entry: {e:#}",
                        g.id
                    );
                }
            }
        }
        Ok(grants)
    }

    /// Remove flows from the table, summarise them, end them in the log.
    pub(crate) fn finish_flows(&self, ids: &[(u16, Option<u64>)]) -> Vec<FlowReport> {
        let states: Vec<(FlowState, Option<u64>, u16)> = {
            let mut table = self.table.lock().unwrap_or_else(|e| e.into_inner());
            // Every record the UDP loop holds goes before the FlowEnd entries below.
            if let Some(log) = &self.log {
                table.submit_udp_log(&log.producer(), netio::clock::mono_ns(), true);
            }
            let states: Vec<_> = ids
                .iter()
                .filter_map(|(id, sent)| table.flows.remove(id).map(|s| (s, *sent, *id)))
                .collect();
            table.finished.extend(states.iter().map(|(_, _, id)| *id));
            states
        };
        let mut out = Vec::new();
        // The series of one session travel in one results message: bound them together.
        let mut windows_left = MAX_SESSION_WINDOWS;
        for (state, sent, id) in states {
            if let Some(log) = &self.log {
                // After the table lock: every record of the flow was handed over before.
                let end = serde_json::json!({
                    "flow_id": id,
                    "session": state.session,
                    "sent_packets": sent,
                    "unlogged_records": state.unlogged,
                });
                let entry = Entry::FlowEnd {
                    flow: state.log_key,
                    json: end.to_string(),
                };
                if let Err(e) = log.write_entry(&entry) {
                    eprintln!("dualperf recv: warning: the log lost flow {id}'s end: {e:#}");
                }
            }
            let mut report = FlowReport {
                id,
                session: state.session,
                peer: state.peer_ip,
                protocol: state.announce.protocol,
                meter: state.announce.meter,
                label: state.announce.label.clone(),
                sent_packets: sent,
                malformed: state.malformed,
                summary: state.meter.summary(sent),
                rtp: state.meter.rtp(),
                intervals: None,
                intervals_error: None,
                unlogged_records: self.log.as_ref().map(|_| state.unlogged),
            };
            if let Some(w) = state.announce.interval_ns {
                let windows = state.meter.interval_windows();
                match state.meter.intervals() {
                    _ if windows > windows_left => {
                        report.intervals_error = Some(format!(
                            "{windows} windows of {} exceed the {windows_left} left of the {MAX_SESSION_WINDOWS} a session may report: use a longer --interval",
                            wire::time::Duration::from_nanos(w)
                        ));
                    }
                    Some(Ok(series)) => {
                        windows_left -= windows;
                        report.intervals = Some(series);
                    }
                    Some(Err(e)) => {
                        report.intervals_error = Some(format!(
                            "{e} of {} a session may report: use a longer --interval",
                            wire::time::Duration::from_nanos(w)
                        ));
                    }
                    None => {}
                }
            }
            out.push(report);
        }
        self.reports
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .extend(out.iter().cloned());
        out
    }
}

/// Linux EAFNOSUPPORT: the address family (here IPv6) is not supported by the host.
const EAFNOSUPPORT: i32 = 97;

/// A running receiver.
pub(crate) struct Receiver {
    shared: Arc<Shared>,
    local: SocketAddr,
    threads: Vec<JoinHandle<()>>,
}

impl Receiver {
    /// Bind the sockets and start the threads.
    pub(crate) fn start(config: ReceiverConfig, stop: Arc<AtomicBool>) -> Result<Self> {
        let mut bind = config.bind;
        let mut dual_stack = bind.ip() == IpAddr::V6(Ipv6Addr::UNSPECIFIED);
        let listener = match netio::tcp::listen(bind, dual_stack) {
            Err(e) if dual_stack && e.raw_os_error() == Some(EAFNOSUPPORT) => {
                // IPv6 is disabled on this host: serve IPv4 alone rather than nothing.
                eprintln!("dualperf recv: warning: IPv6 is unavailable here ({e}); listening on IPv4 only");
                bind = SocketAddr::new(IpAddr::V4(std::net::Ipv4Addr::UNSPECIFIED), bind.port());
                dual_stack = false;
                netio::tcp::listen(bind, false)
            }
            other => other,
        }
        .with_context(|| format!("cannot listen on TCP {bind}"))?;
        let local = listener.local_addr()?;
        let udp = netio::UdpSocket::bind(local, dual_stack)
            .with_context(|| format!("cannot bind UDP {local}"))?;
        udp.enable_recv_meta()
            .context("cannot enable receive metadata on the UDP socket")?;
        udp.set_read_timeout(Some(Duration::from_millis(100)))?;
        let _ = udp.set_buffer_sizes(Some(4 << 20), Some(16 << 20));
        let log = match &config.log {
            Some(path) => {
                let meta = serde_json::json!({
                    "tool": "dualperf recv",
                    "version": env!("CARGO_PKG_VERSION"),
                    "listen": local,
                    "created_unix_ns": netio::clock::wall_ns(),
                });
                Some(crate::logsink::LogSink::create(path, &meta.to_string())?)
            }
            None => None,
        };
        let shared = Arc::new(Shared {
            key: config.key,
            handshake_timeout: config.handshake_timeout,
            busy_poll: config.busy_poll,
            table: Mutex::new(FlowTable::default()),
            counters: Counters::default(),
            stop,
            udp,
            next_session: AtomicU64::new(1),
            active_sessions: AtomicU64::new(0),
            sessions_done: AtomicU64::new(0),
            log,
            reports: Mutex::new(Vec::new()),
        });
        listener.set_nonblocking(true)?;
        let s1 = shared.clone();
        let s2 = shared.clone();
        let threads = vec![
            std::thread::Builder::new()
                .name("recv-udp".into())
                .spawn(move || udp::run(&s1))?,
            std::thread::Builder::new()
                .name("recv-accept".into())
                .spawn(move || conn::accept_loop(&s2, &listener))?,
        ];
        Ok(Self {
            shared,
            local,
            threads,
        })
    }

    pub(crate) fn local_addr(&self) -> SocketAddr {
        self.local
    }

    pub(crate) fn sessions_done(&self) -> u64 {
        self.shared.sessions_done.load(Ordering::SeqCst)
    }

    /// Print reports that arrived since `from`; returns the new count.
    fn print_new_reports(&self, from: usize, json: bool) -> usize {
        let reports = self
            .shared
            .reports
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        for r in &reports[from..] {
            print_report(r, json);
        }
        reports.len()
    }

    /// Stop the threads, summarise flows still open, and return everything.
    pub(crate) fn shutdown(mut self) -> Result<ReceiverReport> {
        self.shared.stop.store(true, Ordering::SeqCst);
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
        // Sessions notice the stop flag within their 200 ms poll and file their flows.
        let deadline = std::time::Instant::now() + Duration::from_secs(2);
        while self.shared.active_sessions.load(Ordering::SeqCst) > 0
            && std::time::Instant::now() < deadline
        {
            std::thread::sleep(Duration::from_millis(10));
        }
        let open: Vec<(u16, Option<u64>)> = {
            let table = self.shared.table.lock().unwrap_or_else(|e| e.into_inner());
            let mut ids: Vec<_> = table.flows.keys().map(|id| (*id, None)).collect();
            ids.sort_unstable();
            ids
        };
        self.shared.finish_flows(&open);
        if let Some(log) = &self.shared.log {
            log.finish()?;
        }
        let reports = self
            .shared
            .reports
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        Ok(ReceiverReport {
            reports,
            counters: self.shared.counters.snapshot(),
        })
    }
}

/// Everything a receiver saw.
pub(crate) struct ReceiverReport {
    pub(crate) reports: Vec<FlowReport>,
    pub(crate) counters: CounterSnapshot,
}

impl ReceiverReport {
    fn print_remaining(&self, from: usize, json: bool) -> usize {
        for r in self.reports.iter().skip(from) {
            print_report(r, json);
        }
        self.reports.len()
    }

    fn print_counters(&self, json: bool) {
        if json {
            let _ = crate::out::print_json_line(&RecvLine::Counters(self.counters.clone()));
        } else {
            let c = &self.counters;
            let _ = crate::out::print(format!(
                "dualperf recv: {} datagrams; dropped: {} malformed, {} unknown flow, {} wrong source, {} late; {} bad connections, {} failed authentications, {} handshake timeouts; {} echoes failed\n",
                c.datagrams, c.malformed_datagrams, c.unknown_flow, c.wrong_source, c.late_after_finish, c.bad_connections, c.auth_failures, c.handshake_timeouts, c.echo_failures
            ));
        }
    }
}

/// Print a finished flow. Output errors are ignored: a closed stdout must not stop a
/// receiver whose log is still being written.
fn print_report(r: &FlowReport, json: bool) {
    if json {
        let _ = crate::out::print_json_line(&RecvLine::Flow(Box::new(r.clone())));
        return;
    }
    let s = &r.summary;
    let _ = crate::out::print(format!(
        "flow {} from {} ({:?}/{:?}{}): {} packets, {} lost ({} %), {} dup, {} reordered, {} bit/s, delay mean {}\n",
        r.id,
        r.peer,
        r.protocol,
        r.meter,
        if r.label.is_empty() { String::new() } else { format!(", {}", r.label) },
        s.packets,
        s.loss.lost,
        s.loss.loss_pct.map_or("-".into(), |p| format!("{p:.3}")),
        s.loss.duplicates,
        s.loss.reordered,
        s.bitrate_bps.map_or("-".into(), |b| format!("{b:.0}")),
        s.delay.as_ref().map_or("-".into(), |d| format!("{:.1} µs", d.mean_ns / 1e3)),
    ));
}
