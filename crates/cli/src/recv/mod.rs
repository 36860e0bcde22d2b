//! `dualperf recv`: the receiver. One port carries UDP data, TCP data and the TCP control
//! channel, on IPv4 and IPv6 at once ([::] with V6ONLY off).
//!
//! Threads: `--threads` UDP threads, each reading its own socket of one `SO_REUSEPORT`
//! group in batches (recvmmsg) and echoing round-trip probes from it; one accepts TCP
//! connections; each connection gets its own thread, so a stalled or hostile peer never
//! holds up anyone else. Flow state lives in a table sharded per UDP thread
//! ([`shard`]): a UDP thread locks its own shard once per batch, and no other thread
//! takes that lock but to register and finish flows (or, should a flow's datagrams come
//! in on two sockets, to hand the strays to the flow's shard).
//!
//! Garbage is counted and dropped: datagrams that are not probes, probes of unknown
//! flows or from the wrong source, oversized or malformed control messages, wrong keys,
//! connections that stall during the handshake.

mod conn;
mod metrics;
mod punch;
mod reserve;
mod shard;
mod udp;

use std::net::{IpAddr, Ipv6Addr, SocketAddr};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use anyhow::{Context, Result};
use meter::log::Entry;
use results::recv::{CounterSnapshot, FlowReport, RecvLine};
use wire::control::{FlowAnnounce, FlowGrant};

use shard::Flows;

use crate::control::{DEFAULT_PORT, MAX_SESSION_WINDOWS};

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
  dualperf recv --threads 4               # four UDP sockets and threads on one port
  dualperf recv --stamp --stamp-stateful  # also a STAMP Session-Reflector on UDP 862

The log format and the figures: docs/output.md; STAMP: docs/stamp.md.")]
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
    /// than this far apart on average (0: never; each UDP thread by its own socket's). On loopback the sender's CPU pays for
    /// waking a sleeping receiver, which limits a fast flow's rate and timing; a polling
    /// receiver reads without a wake-up, napping 10 µs between reads (spinning while it
    /// echoes round-trip probes). After 1 ms without a datagram it sleeps again. The
    /// default polls for flows faster than about 50,000 datagrams a second.
    #[arg(long, default_value = DEFAULT_BUSY_POLL, value_parser = crate::args::std_duration, value_name = "DURATION")]
    busy_poll: Duration,
    /// UDP threads, each reading its own socket: the sockets share the port
    /// (SO_REUSEPORT) and the kernel gives all datagrams of one sender socket to one of
    /// them, by a hash, so flows from different source ports spread over the cores. The
    /// default is one per CPU this process may use (online CPUs, fewer under an affinity
    /// mask or a CPU quota); 1 receives on one plain socket.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..=1024))]
    threads: Option<u16>,
    /// Take every UDP datagram on its own: no UDP GRO. By default datagrams of one
    /// sender that arrive together (a GSO send, or back to back through a NIC's GRO) come
    /// in one receive buffer and are split here, each counted and measured on its own;
    /// they share one arrival time, the first one's (`gro_datagrams` in the counters).
    #[arg(long)]
    no_gro: bool,
    /// Copy only the head of each UDP datagram out of the kernel, as iperf3's
    /// `--skip-rx-copy`: its first 256 bytes, which hold the probe (after an RTP header,
    /// if any), with its full length from `MSG_TRUNC`. Every datagram is still counted
    /// and measured at its full size; the payload after the head is never read. Saves
    /// the receiver a copy per datagram, and on loopback the sender some cache traffic.
    /// Implies `--no-gro`: a coalesced buffer cut short would hide the datagrams after
    /// its first. A round-trip echo keeps the datagram's length: its head, then zeros.
    /// A datagram whose probe lies beyond the head (an RTP header over 208 bytes) counts
    /// as malformed. The counters' `head_only_datagrams` (docs/output.md) says how many
    /// were taken so. Example: `dualperf recv --skip-rx-copy`, then `dualperf send HOST
    /// --udp --bulk --no-gso --size 1400` from the sender.
    #[arg(long)]
    skip_rx_copy: bool,
    /// Serve Prometheus metrics at http://ADDR:PORT/metrics, for example `[::]:9464`:
    /// per flow and per family (`family="ipv4|ipv6"`) the packets, bytes, loss,
    /// duplicates and reordering, one-way delay and |IPDV| as histograms in seconds and
    /// the RFC 3550 jitter; the receiver's sessions, refusals and authentication
    /// failures. A scrape reads the counters the receive path keeps; a finished flow's
    /// final figures stay for later scrapes. Names, buckets and limits: docs/prometheus.md.
    #[arg(long, value_name = "ADDR:PORT")]
    metrics: Option<SocketAddr>,
    /// Flows with series of their own at --metrics: open flows first, then the newest
    /// finished. Every other flow is counted in its family's totals only, so a receiver
    /// of 10,000 flows serves as many series as one of 16.
    #[arg(long, value_name = "N", default_value_t = results::prom::DEFAULT_MAX_FLOWS, requires = "metrics", value_parser = clap::value_parser!(u16).range(1..))]
    metrics_flows: u16,
    /// Stop when standard input closes: a receiver started by `dualperf run` ends with
    /// its parent, even one killed with SIGKILL.
    #[arg(long, hide = true)]
    stdin_lifeline: bool,
    #[command(flatten)]
    stamp: StampArgs,
}

/// The STAMP Session-Reflector (RFC 8762/8972) beside the receiver.
#[derive(Debug, clap::Args)]
pub(crate) struct StampArgs {
    /// Also run a STAMP Session-Reflector (RFC 8762, with RFC 8972's SSID and TLVs):
    /// any STAMP Session-Sender (`dualperf send --stamp`, stamp-suite, a router) can
    /// measure the path to this host. Each reflected packet is as long as the test
    /// packet it answers, never longer.
    #[arg(long)]
    stamp: bool,
    /// The reflector's UDP port (RFC 8762's 862 needs root or CAP_NET_BIND_SERVICE).
    #[arg(long, default_value_t = wire::stamp::DEFAULT_PORT, requires = "stamp", value_name = "PORT")]
    stamp_port: u16,
    /// Stateful: count each session's packets (sender address, port and SSID) and send
    /// that count as the reflector's sequence number, so a sender tells forward loss from
    /// reverse loss (RFC 8972 §4). Default: stateless (the sender's number is echoed).
    #[arg(long, requires = "stamp")]
    stamp_stateful: bool,
    /// Authenticated mode (RFC 8762 §4.4): test packets carry an HMAC-SHA-256 under
    /// this key, given in hex (at least 16 bytes); packets that fail it get no answer.
    #[arg(
        long,
        env = "DUALPERF_STAMP_KEY",
        hide_env_values = true,
        requires = "stamp",
        value_name = "HEX"
    )]
    stamp_key: Option<String>,
    /// Most reflected packets a second per sender address (a token bucket of one
    /// second); 0: no limit.
    #[arg(long, default_value_t = 0, requires = "stamp", value_name = "PPS")]
    stamp_max_pps: u32,
    /// Answer only senders in these prefixes (198.18.0.0/15,2001:2::/48). Default: any.
    #[arg(long, value_delimiter = ',', value_parser = crate::args::prefix, requires = "stamp", value_name = "PREFIX")]
    stamp_allow: Vec<crate::args::Prefix>,
    /// Stamp in PTPv2's truncated format instead of NTP's (RFC 8762 §4.2.1).
    #[arg(long, requires = "stamp")]
    stamp_ptp: bool,
}

impl StampArgs {
    /// The reflector's configuration, with the receiver's bind address.
    fn config(
        &self,
        bind_ip: IpAddr,
        busy_poll: Duration,
    ) -> Result<Option<crate::stamp::reflector::ReflectorConfig>> {
        if !self.stamp {
            return Ok(None);
        }
        let key = match &self.stamp_key {
            None => None,
            Some(hex) => Some(crate::args::hex_key(hex).map_err(crate::UsageError)?),
        };
        Ok(Some(crate::stamp::reflector::ReflectorConfig {
            bind: SocketAddr::new(bind_ip, self.stamp_port),
            mode: if key.is_some() {
                wire::stamp::Mode::Authenticated
            } else {
                wire::stamp::Mode::Unauthenticated
            },
            key,
            stateful: self.stamp_stateful,
            max_pps: self.stamp_max_pps,
            busy_poll,
            allow: self.stamp_allow.clone(),
            format: if self.stamp_ptp {
                wire::stamp::TimestampFormat::Ptp
            } else {
                wire::stamp::TimestampFormat::Ntp
            },
        }))
    }
}

pub(crate) fn run(args: RecvArgs) -> Result<()> {
    serve(args, None, "recv")
}

impl RecvArgs {
    /// Whether a key was given (`--key` or `DUALPERF_KEY`).
    pub(crate) fn has_key(&self) -> bool {
        self.key.as_ref().is_some_and(|k| !k.is_empty())
    }

    /// Use `key` as the shared secret (an agent's `--key-file`).
    pub(crate) fn set_key(&mut self, key: String) {
        self.key = Some(key);
    }

    /// Whether the receiver listens on a loopback address only.
    pub(crate) fn loopback_only(&self) -> bool {
        self.bind.is_some_and(|ip| ip.is_loopback())
    }
}

/// Run a receiver until Ctrl-C or `--sessions`: `recv` without a service, `agent` with
/// its sender; `name` is the subcommand in what it prints.
pub(crate) fn serve(
    args: RecvArgs,
    service: Option<Arc<dyn SendService>>,
    name: &str,
) -> Result<()> {
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
        threads: args.threads.map_or_else(default_threads, usize::from),
        gro: !args.no_gro,
        skip_rx_copy: args.skip_rx_copy,
        service,
    };
    let reflector = match args.stamp.config(bind_ip, args.busy_poll)? {
        Some(c) => {
            let r = crate::stamp::reflector::Reflector::bind(c)?;
            crate::out::note!(
                "dualperf {name}: STAMP reflector on UDP {}",
                r.local_addr()?
            );
            let counters = r.counters.clone();
            let stop = stop.clone();
            Some((
                std::thread::Builder::new()
                    .name("stamp-reflector".into())
                    .spawn(move || r.run(&stop))?,
                counters,
            ))
        }
        None => None,
    };
    let receiver = Receiver::start(config, stop.clone())?;
    crate::out::note!(
        "dualperf {name}: listening on {} (UDP and TCP{})",
        receiver.local_addr(),
        if receiver.shared.key.is_some() {
            ", key required"
        } else {
            ""
        }
    );
    if let Some(addr) = args.metrics {
        receiver.shared.kept.enable(usize::from(args.metrics_flows));
        let (local, _thread) = metrics::serve(addr, receiver.shared.clone(), stop.clone())?;
        crate::out::note!("dualperf {name}: Prometheus metrics at http://{local}/metrics");
    }
    let json = args.json;
    while !stop.load(Ordering::SeqCst) {
        std::thread::sleep(Duration::from_millis(50));
        for r in receiver.take_reports() {
            print_report(&r, json);
        }
        if args.sessions > 0 && receiver.sessions_done() >= args.sessions {
            break;
        }
    }
    let mut report = receiver.shutdown()?;
    if let Some((thread, counters)) = reflector {
        stop.store(true, Ordering::SeqCst);
        let _ = thread.join();
        report.counters.stamp = Some(counters.snapshot());
    }
    for r in &report.reports {
        print_report(r, json);
    }
    report.print_counters(json);
    Ok(())
}

/// `recv --threads`' default: one UDP thread per CPU this process may use.
pub(crate) fn default_threads() -> usize {
    std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get)
}

/// What the receiver needs to start.
pub(crate) struct ReceiverConfig {
    pub(crate) bind: SocketAddr,
    pub(crate) key: Option<Vec<u8>>,
    pub(crate) log: Option<PathBuf>,
    pub(crate) handshake_timeout: Duration,
    /// The UDP loop polls while datagrams come closer than this ([`netio::poll::RecvPoll`]).
    pub(crate) busy_poll: Duration,
    /// UDP threads, each with its own socket (1: one socket without `SO_REUSEPORT`).
    pub(crate) threads: usize,
    /// Receive UDP with GRO where the kernel has it (`netio::UdpSocket::enable_gro`).
    pub(crate) gro: bool,
    /// Copy only each UDP datagram's head out of the kernel (`recv --skip-rx-copy`);
    /// turns GRO off.
    pub(crate) skip_rx_copy: bool,
    /// What serves requests to send (`dualperf agent`); `None`: such requests are
    /// refused, as a plain `recv` never sends.
    pub(crate) service: Option<Arc<dyn SendService>>,
}

/// Most connections in their handshake at once; more wait a moment for a slot and are
/// then turned away (`refused_busy`), so junk connections cannot take a thread each
/// without bound.
pub(crate) const MAX_HANDSHAKES: u64 = 64;

/// Serves a control session's request to send (`Msg::SendRequest`): `dualperf agent`.
pub(crate) trait SendService: Send + Sync {
    /// Serve `request` on its authenticated control connection to the end: refuse it
    /// (with its reason, on the connection and in the returned error) or run the flows
    /// and report. `peer` is the asker's address as this host sees it.
    fn serve(
        &self,
        stream: std::net::TcpStream,
        reader: crate::control::MsgReader,
        peer: SocketAddr,
        request: wire::control::Msg,
        stop: &Arc<AtomicBool>,
    ) -> Result<(), ServeError>;

    /// What the service advertises in `Welcome` (`wire::control::FEATURE_CALLBACK`).
    fn features(&self) -> Vec<String> {
        Vec::new()
    }

    /// A connection an asker opened for one of our `Dial`s (`Callback{ticket}`, from
    /// `peer`): hand it to the session that asked, or say why not.
    fn callback(
        &self,
        ticket: u64,
        stream: std::net::TcpStream,
        peer: SocketAddr,
    ) -> Result<(), String> {
        let _ = (ticket, stream);
        Err(format!(
            "callback from {peer} refused: this agent takes no callbacks"
        ))
    }
}

/// Why a request to send was not served to the end.
#[derive(Debug)]
pub(crate) enum ServeError {
    /// Refused (`--allow`, caps, malformed flows): the reason was sent to the asker.
    Refused(String),
    /// The session broke.
    Failed(anyhow::Error),
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
    pub(crate) refused_busy: AtomicU64,
    pub(crate) send_refusals: AtomicU64,
    pub(crate) gro_buffers: AtomicU64,
    pub(crate) gro_datagrams: AtomicU64,
    pub(crate) head_only_datagrams: AtomicU64,
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
            refused_busy: g(&self.refused_busy),
            send_refusals: g(&self.send_refusals),
            gro_buffers: g(&self.gro_buffers),
            gro_datagrams: g(&self.gro_datagrams),
            head_only_datagrams: g(&self.head_only_datagrams),
            stamp: None,
        }
    }
}

pub(crate) struct Shared {
    pub(crate) key: Option<Vec<u8>>,
    pub(crate) handshake_timeout: Duration,
    /// The UDP loop polls while datagrams come closer than this.
    pub(crate) busy_poll: Duration,
    /// Copy only each UDP datagram's head (`recv --skip-rx-copy`).
    pub(crate) skip_rx_copy: bool,
    /// Every registered flow, sharded per UDP thread.
    pub(crate) flows: Flows,
    pub(crate) counters: Counters,
    pub(crate) stop: Arc<AtomicBool>,
    pub(crate) next_session: AtomicU64,
    /// Control sessions still running; shutdown waits for them to file their flows.
    pub(crate) active_sessions: AtomicU64,
    pub(crate) sessions_done: AtomicU64,
    pub(crate) log: Option<crate::logsink::LogSink>,
    /// Finished flows' reports not yet taken ([`Receiver::take_reports`]): a receiver
    /// that prints them as they come keeps none, whatever it has served.
    pub(crate) reports: Mutex<Vec<FlowReport>>,
    /// Connections still in their handshake ([`MAX_HANDSHAKES`]).
    pub(crate) handshaking: AtomicU64,
    pub(crate) service: Option<Arc<dyn SendService>>,
    /// Punching reverse UDP flows through a NAT in front of us (`punch`).
    pub(crate) punches: punch::Punches,
    /// RSVP for the flows whose senders asked (`send --reserve`).
    pub(crate) rsvp: reserve::Reservations,
    /// Finished flows' figures for `--metrics`.
    pub(crate) kept: metrics::Kept,
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
        self.flows.register(session, peer_ip, announced, |flow| {
            let Some(log) = &self.log else {
                return;
            };
            let info = results::log::LogFlow {
                flow_id: Some(flow.id),
                session: Some(session),
                peer: Some(peer_ip),
                announce: Some(flow.announce.clone()),
                ..Default::default()
            };
            let entry = Entry::FlowInfo {
                flow: flow.log_key,
                json: info.to_json(),
            };
            if let Err(e) = log.write_entry(&entry) {
                eprintln!(
                    "dualperf recv: warning: the log lost flow {}'s entry: {e:#}",
                    flow.id
                );
            }
        })
    }

    /// Remove flows from the table, summarise them, end them in the log.
    pub(crate) fn finish_flows(&self, ids: &[(u16, Option<u64>)]) -> Vec<FlowReport> {
        let producer = self.log.as_ref().map(crate::logsink::LogSink::producer);
        let only_ids: Vec<u16> = ids.iter().map(|(id, _)| *id).collect();
        // Every record each shard holds goes before the FlowEnd entries below.
        let finished = self.flows.finish(&only_ids, |shard| {
            if let Some(log) = &producer {
                shard.submit_udp_log(log, netio::clock::mono_ns(), true);
            }
        });
        let sent_of: std::collections::HashMap<u16, Option<u64>> = ids.iter().copied().collect();
        let mut out = Vec::new();
        // The series of one session are bounded together, whatever its flow count.
        let mut windows = results::recv::WindowBudget::new(MAX_SESSION_WINDOWS);
        for shard::Finished { flow, state } in finished {
            let id = flow.id;
            let sent = sent_of.get(&id).copied().flatten();
            if let Some(log) = &self.log {
                // After every shard's lock: every record of the flow was handed over before.
                let end = results::log::LogFlow {
                    flow_id: Some(id),
                    session: Some(flow.session),
                    sent_packets: Some(sent),
                    unlogged_records: Some(state.unlogged),
                    ..Default::default()
                };
                let entry = Entry::FlowEnd {
                    flow: flow.log_key,
                    json: end.to_json(),
                };
                if let Err(e) = log.write_entry(&entry) {
                    eprintln!("dualperf recv: warning: the log lost flow {id}'s end: {e:#}");
                }
            }
            let origin = results::recv::FlowOrigin {
                id,
                session: flow.session,
                peer: flow.peer_ip,
                announce: &flow.announce,
            };
            let report = state.report(&origin, sent, self.log.is_some(), &mut windows);
            self.kept.handle_finished(&flow, &state, &report.summary);
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
        // With port 0 the kernel picks a free TCP port, and the UDP sockets take the
        // same number: another program may hold that UDP port, so try a few.
        let mut tries = if bind.port() == 0 { 16 } else { 1 };
        let (listener, local, sockets) = loop {
            let listener = match netio::tcp::listen(bind, dual_stack) {
                Err(e) if dual_stack && e.raw_os_error() == Some(EAFNOSUPPORT) => {
                    // IPv6 is disabled on this host: serve IPv4 alone rather than nothing.
                    eprintln!("dualperf recv: warning: IPv6 is unavailable here ({e}); listening on IPv4 only");
                    bind =
                        SocketAddr::new(IpAddr::V4(std::net::Ipv4Addr::UNSPECIFIED), bind.port());
                    dual_stack = false;
                    netio::tcp::listen(bind, false)
                }
                other => other,
            }
            .with_context(|| format!("cannot listen on TCP {bind}"))?;
            let local = listener.local_addr()?;
            tries -= 1;
            let gro = config.gro && !config.skip_rx_copy;
            match bind_udp(local, dual_stack, config.threads, gro) {
                Ok(sockets) => break (listener, local, sockets),
                Err(e) if tries > 0 && is_addr_in_use(&e) => continue,
                Err(e) => return Err(e),
            }
        };
        let log = match &config.log {
            Some(path) => {
                let meta = results::log::LogMeta {
                    tool: Some("dualperf recv".into()),
                    version: Some(env!("CARGO_PKG_VERSION").into()),
                    listen: Some(local.to_string()),
                    created_unix_ns: Some(netio::clock::wall_ns()),
                    ..Default::default()
                };
                Some(crate::logsink::LogSink::create(path, &meta.to_json())?)
            }
            None => None,
        };
        let flows = Flows::new(sockets.len());
        if let Some(log) = &log {
            for i in 0..flows.udp_shards() {
                flows.shard(i).udp_log = Some(log.producer().chunk());
            }
        }
        let shared = Arc::new(Shared {
            key: config.key,
            handshake_timeout: config.handshake_timeout,
            busy_poll: config.busy_poll,
            skip_rx_copy: config.skip_rx_copy,
            flows,
            counters: Counters::default(),
            stop,
            next_session: AtomicU64::new(1),
            active_sessions: AtomicU64::new(0),
            sessions_done: AtomicU64::new(0),
            log,
            reports: Mutex::new(Vec::new()),
            handshaking: AtomicU64::new(0),
            service: config.service,
            punches: punch::Punches::default(),
            rsvp: reserve::Reservations::default(),
            kept: metrics::Kept::default(),
        });
        let sockets: Vec<Arc<netio::UdpSocket>> = sockets.into_iter().map(Arc::new).collect();
        if let Some(first) = sockets.first() {
            let _ = shared.punches.socket.set(first.clone());
        }
        listener.set_nonblocking(true)?;
        let mut receiver = Self {
            shared,
            local,
            threads: Vec::new(),
        };
        let started = sockets
            .into_iter()
            .enumerate()
            .try_for_each(|(i, socket)| {
                receiver.spawn(format!("recv-udp-{i}"), move |s| udp::run(&s, i, &socket))
            })
            .and_then(|()| {
                receiver.spawn("recv-accept".into(), move |s| {
                    conn::accept_loop(&s, &listener);
                })
            });
        if let Err(e) = started {
            // Stop and join whatever started.
            let _ = receiver.shutdown();
            return Err(anyhow::Error::new(e).context("cannot start the receiver's threads"));
        }
        Ok(receiver)
    }

    /// Start a thread of the receiver's.
    fn spawn(
        &mut self,
        name: String,
        run: impl FnOnce(Arc<Shared>) + Send + 'static,
    ) -> std::io::Result<()> {
        let shared = self.shared.clone();
        let thread = std::thread::Builder::new()
            .name(name)
            .spawn(move || run(shared))?;
        self.threads.push(thread);
        Ok(())
    }

    pub(crate) fn local_addr(&self) -> SocketAddr {
        self.local
    }

    /// The keepalive interval of reverse UDP flows through a NAT in front of us, and
    /// how long their first punch waits (a test aid; `send --reverse-mode callback`).
    pub(crate) fn set_nat_keepalive(&self, keepalive: Duration, first_punch: Duration) {
        *self
            .shared
            .punches
            .timing
            .lock()
            .unwrap_or_else(|e| e.into_inner()) = Some((keepalive, first_punch));
    }

    /// Serve a connection we opened (to an agent, for its `Dial`) as if we had
    /// accepted it: the agent's session or TCP flow on it, with its UDP flows punched
    /// through the NAT in front of us.
    pub(crate) fn adopt(&self, stream: std::net::TcpStream) -> Result<()> {
        conn::adopt(&self.shared, stream)
    }

    pub(crate) fn sessions_done(&self) -> u64 {
        self.shared.sessions_done.load(Ordering::SeqCst)
    }

    /// The reports of flows finished since the last call, which the receiver no longer
    /// keeps: a receiver that runs for days holds only its open flows.
    pub(crate) fn take_reports(&self) -> Vec<FlowReport> {
        std::mem::take(
            &mut *self
                .shared
                .reports
                .lock()
                .unwrap_or_else(|e| e.into_inner()),
        )
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
        let open: Vec<(u16, Option<u64>)> = self
            .shared
            .flows
            .open_ids()
            .into_iter()
            .map(|id| (id, None))
            .collect();
        self.shared.finish_flows(&open);
        if let Some(log) = &self.shared.log {
            log.finish()?;
            crate::out::note!("dualperf: wrote {}", log.written());
        }
        Ok(ReceiverReport {
            reports: self.take_reports(),
            counters: self.shared.counters.snapshot(),
        })
    }
}

/// Whether `e` comes from a port another socket holds.
fn is_addr_in_use(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::AddrInUse)
    })
}

/// The receiver's UDP sockets on `local` (the TCP listener's address and port): one
/// plain socket for one thread, else a `SO_REUSEPORT` group of `threads`. Each asks for
/// receive metadata, wakes every 100 ms to check the stop flag, and has large buffers.
fn bind_udp(
    local: SocketAddr,
    dual_stack: bool,
    threads: usize,
    gro: bool,
) -> Result<Vec<netio::UdpSocket>> {
    let threads = threads.max(1);
    let mut sockets = Vec::with_capacity(threads);
    for _ in 0..threads {
        let udp = if threads == 1 {
            netio::UdpSocket::bind(local, dual_stack)
        } else {
            netio::UdpSocket::bind_reuseport(local, dual_stack)
        }
        .with_context(|| format!("cannot bind UDP {local}"))?;
        udp.enable_recv_meta()
            .context("cannot enable receive metadata on the UDP socket")?;
        udp.set_read_timeout(Some(Duration::from_millis(100)))?;
        let _ = udp.set_buffer_sizes(Some(4 << 20), Some(16 << 20));
        if gro {
            // A kernel without UDP GRO hands every datagram over on its own.
            udp.enable_gro()
                .context("cannot enable UDP GRO on the UDP socket")?;
        }
        sockets.push(udp);
    }
    Ok(sockets)
}

/// What a receiver saw that was not taken before its shutdown.
pub(crate) struct ReceiverReport {
    /// Reports not taken by [`Receiver::take_reports`].
    pub(crate) reports: Vec<FlowReport>,
    pub(crate) counters: CounterSnapshot,
}

impl ReceiverReport {
    fn print_counters(&self, json: bool) {
        if json {
            let _ = crate::out::print_json_line(&RecvLine::Counters(self.counters.clone()));
        } else {
            let _ = crate::out::print(self.counters.text());
        }
    }
}

/// Print a finished flow. Output errors are ignored: a closed stdout must not stop a
/// receiver whose log is still being written.
fn print_report(r: &FlowReport, json: bool) {
    if json {
        let _ = crate::out::print_json_line(&RecvLine::Flow(Box::new(r.clone())));
    } else {
        let _ = crate::out::print(r.text());
    }
}

#[cfg(test)]
mod tests {
    use std::net::TcpStream;

    use wire::control::{FlowResult, FlowSent, Msg, Protocol};

    use super::*;
    use crate::control::{write_msg, MsgReader};

    const FLOWS: usize = 10_000;
    const SENDERS: usize = 4;
    const PER_FLOW: u32 = 3;

    /// A receiver in this process on a free port.
    fn receiver(threads: usize) -> Receiver {
        let config = ReceiverConfig {
            bind: "[::]:0".parse().unwrap(),
            key: None,
            log: None,
            handshake_timeout: Duration::from_secs(10),
            busy_poll: Duration::ZERO,
            threads,
            gro: true,
            skip_rx_copy: false,
            service: None,
        };
        Receiver::start(config, Arc::new(AtomicBool::new(false))).unwrap()
    }

    /// The handshake of a control session without a key, up to `Welcome`.
    fn open_session(port: u16) -> (TcpStream, MsgReader) {
        let mut ctrl = TcpStream::connect(("127.0.0.1", port)).unwrap();
        ctrl.set_read_timeout(Some(Duration::from_secs(60)))
            .unwrap();
        let mut reader = MsgReader::new();
        write_msg(
            &mut ctrl,
            &Msg::Hello {
                version: wire::control::PROTOCOL_VERSION,
            },
        )
        .unwrap();
        assert!(matches!(
            reader.read(&mut ctrl).unwrap(),
            Msg::Challenge { .. }
        ));
        write_msg(&mut ctrl, &Msg::Auth { mac: String::new() }).unwrap();
        assert!(matches!(
            reader.read(&mut ctrl).unwrap(),
            Msg::Welcome { .. }
        ));
        reader.set_max_len(wire::control::MAX_SESSION_MSG_LEN);
        (ctrl, reader)
    }

    /// A probe of `flow` at `seq`, sent now.
    fn probe(flow: u16, seq: u32) -> Vec<u8> {
        let mut buf = vec![0u8; 64];
        let repr = wire::probe::Repr {
            flow,
            seq,
            tx_ns: netio::clock::wall_ns(),
            ..wire::probe::Repr::default()
        };
        repr.emit(&mut buf).unwrap();
        buf
    }

    /// Issue 15: a session of 10,000 UDP flows (2,500 on each of four sender sockets,
    /// so several flows announce one source port) on two UDP threads gets every flow's
    /// results, in several `Results` messages: with interval series they exceed the
    /// session's message limit.
    #[test]
    fn ten_thousand_flows_of_one_session_all_get_their_results() {
        let rx = receiver(2);
        let port = rx.local_addr().port();
        let (mut ctrl, mut reader) = open_session(port);
        let senders: Vec<netio::UdpSocket> = (0..SENDERS)
            .map(|_| {
                let s = netio::UdpSocket::bind("127.0.0.1:0".parse().unwrap(), false).unwrap();
                s.connect(SocketAddr::from(([127, 0, 0, 1], port))).unwrap();
                s
            })
            .collect();
        let announces: Vec<FlowAnnounce> = (0..FLOWS)
            .map(|i| FlowAnnounce {
                index: i as u32,
                protocol: Protocol::Udp,
                size_bytes: 64,
                src_port: Some(senders[i % SENDERS].local_addr().unwrap().port()),
                label: format!("flow file line {i}"),
                // Series of 1 ms windows, as many as a session may report (the first
                // flows take them all): results much larger than one message.
                interval_ns: Some(1_000_000),
                ..FlowAnnounce::default()
            })
            .collect();
        let register = wire::control::encode(&Msg::Register {
            flows: announces.clone(),
        });
        eprintln!(
            "Register of {FLOWS} flows: {} bytes (limit {})",
            register.len() - 4,
            wire::control::MAX_SESSION_MSG_LEN
        );
        write_msg(&mut ctrl, &Msg::Register { flows: announces }).unwrap();
        let Msg::Registered { flows: grants } = reader.read(&mut ctrl).unwrap() else {
            panic!("not registered");
        };
        assert_eq!(grants.len(), FLOWS);
        let mut in_total = 0u64;
        for seq in 0..PER_FLOW {
            for (k, sender) in senders.iter().enumerate() {
                let probes: Vec<Vec<u8>> = grants
                    .iter()
                    .skip(k)
                    .step_by(SENDERS)
                    .map(|g| probe(g.id, seq))
                    .collect();
                for batch in probes.chunks(32) {
                    let refs: Vec<&[u8]> = batch.iter().map(Vec::as_slice).collect();
                    let mut sent = 0;
                    while sent < refs.len() {
                        sent += sender.send_batch(&refs[sent..]).unwrap();
                    }
                    in_total += sent as u64;
                    // Gently: a receive buffer capped by net.core.rmem_max holds little,
                    // so keep at most 256 datagrams ahead of what the receiver counted
                    // (a busy host may not run its threads for a while).
                    let until = std::time::Instant::now() + Duration::from_secs(10);
                    while in_total > rx.shared.counters.datagrams.load(Ordering::Relaxed) + 256
                        && std::time::Instant::now() < until
                    {
                        std::thread::sleep(Duration::from_micros(100));
                    }
                }
            }
        }
        let sent: Vec<FlowSent> = grants
            .iter()
            .map(|g| FlowSent {
                id: g.id,
                packets: u64::from(PER_FLOW),
                bytes: u64::from(PER_FLOW) * 64,
            })
            .collect();
        write_msg(&mut ctrl, &Msg::Finish { flows: sent }).unwrap();
        let mut parts = 0;
        let mut results: Vec<FlowResult> = Vec::new();
        loop {
            let Msg::Results { flows, more } = reader.read(&mut ctrl).unwrap() else {
                panic!("not results");
            };
            parts += 1;
            results.extend(flows);
            if !more {
                break;
            }
        }
        let sizes: Vec<usize> = results
            .iter()
            .map(|r| serde_json::to_vec(r).unwrap().len())
            .collect();
        let total: usize = sizes.iter().sum();
        let plain = results
            .iter()
            .position(|r| r.intervals.is_none())
            .expect("the window budget runs out before the last flow");
        eprintln!(
            "one flow's result: {} bytes ({PER_FLOW} packets, no series; {}); {FLOWS} flows: {total} bytes in {parts} Results messages",
            sizes[plain],
            serde_json::to_string(&results[plain]).unwrap()
        );
        assert_eq!(results.len(), FLOWS);
        assert!(total > wire::control::MAX_SESSION_MSG_LEN, "{total} bytes");
        assert!(
            parts > total / wire::control::MAX_SESSION_MSG_LEN,
            "{parts} parts for {total} bytes"
        );
        for (r, g) in results.iter().zip(&grants) {
            assert_eq!(r.id, g.id, "in registration order");
            assert_eq!(r.summary["packets"], u64::from(PER_FLOW), "{r:?}");
            assert_eq!(r.summary["loss"]["lost"], 0, "{r:?}");
        }
        // Issue 14: the reports are handed over once and not kept (a receiver serving
        // sessions for days holds only its open flows).
        let taken = rx.take_reports();
        assert_eq!(taken.len(), FLOWS);
        assert!(taken
            .iter()
            .all(|r| r.summary.packets == u64::from(PER_FLOW)));
        assert!(rx.take_reports().is_empty());
        let report = rx.shutdown().unwrap();
        assert!(report.reports.is_empty());
        assert_eq!(
            report.counters.datagrams,
            FLOWS as u64 * u64::from(PER_FLOW)
        );
        assert_eq!(
            report.counters.unknown_flow + report.counters.wrong_source,
            0
        );
    }
}
