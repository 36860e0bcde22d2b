//! `dualperf send`: flows from flags or a flow file, paced on absolute deadlines, with
//! sender-side and receiver-side results per flow.

use std::io::{IsTerminal, Write};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, TcpStream};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration as StdDuration;

use anyhow::{bail, Context, Result};
use clap::Parser;
use meter::{FlowSummary, RxRecord, ScheduleError, TxRecord};
use serde::Serialize;
use traffic::{FlowSpec, MarkingSpec, Rate, Schedule, StopSpec};
use wire::control::{self, FlowAnnounce, FlowSent, Meter, Msg, Protocol, PROTOCOL_VERSION};
use wire::ds::{Dscp, Ecn};
use wire::frame::{self, FrameDecoder};
use wire::probe::{self, Packet, Repr, SeqUnwrapper};
use wire::time::{Duration, Instant};

use crate::session::{resolve, write_msg, Family, MsgReader, DEFAULT_PORT};
use crate::usage;

/// Send flows to a `dualperf recv` and report what both ends measured.
///
/// Examples:
///   dualperf send 127.0.0.1 --rate 30000pps --size 64 --duration 10s
///   dualperf send ::1 --tcp --rate 10mbit --size 1024 --meter rtt --dscp EF
///   dualperf send [::1]:4646 --flows flows.txt --json
#[derive(Debug, clap::Args)]
pub(crate) struct SendArgs {
    /// Receiver: an address, a name, HOST:PORT or [IPv6]:PORT.
    dest: String,
    /// Use IPv4 only.
    #[arg(short = '4', conflicts_with = "ipv6")]
    ipv4: bool,
    /// Use IPv6 only.
    #[arg(short = '6')]
    ipv6: bool,
    /// Receiver port, when DEST carries none.
    #[arg(short, long, default_value_t = DEFAULT_PORT)]
    port: u16,
    #[command(flatten)]
    flow: FlowArgs,
    /// Run the flows listed in FILE instead of the one given by flags: one flow per line,
    /// written with the same flow options as this command (e.g. `--tcp --rate 100pps
    /// --size 512 --dscp AF41 --start 2s --duration 5s`); `#` starts a comment. Flows run
    /// concurrently, each on its own thread and socket.
    #[arg(long, value_name = "FILE")]
    flows: Option<PathBuf>,
    /// Shared secret of a receiver started with --key.
    #[arg(long, env = "DUALPERF_KEY", hide_env_values = true)]
    key: Option<String>,
    /// Print one JSON object with sender- and receiver-side results per flow.
    #[arg(long)]
    json: bool,
    /// Write the sender's per-packet records (send schedule, and echoes for --meter rtt)
    /// to this binary log.
    #[arg(long, value_name = "FILE")]
    log: Option<PathBuf>,
    /// Spin (busy-wait) for the last part of each wait before a deadline. Default: 50µs,
    /// or a quarter of the inter-departure time if that is shorter; 0 never spins.
    #[arg(long, value_parser = parse_wire_duration, value_name = "DURATION")]
    spin: Option<Duration>,
    /// At high rates, wake once for all packets due within this window and send them in
    /// one sendmmsg, instead of waking for each packet. Bounds the extra schedule error;
    /// 0 wakes for every packet.
    #[arg(long, default_value = "20us", value_parser = parse_wire_duration, value_name = "DURATION")]
    batch_window: Duration,
}

/// The options of one flow, shared by the command line and flow files.
#[derive(Debug, Clone, clap::Args)]
pub(crate) struct FlowArgs {
    /// UDP datagrams (default).
    #[arg(long, conflicts_with = "tcp")]
    udp: bool,
    /// Length-prefixed messages on one TCP connection.
    #[arg(long)]
    tcp: bool,
    /// Send rate: packets per second (30000pps) or payload bits per second (10mbit).
    #[arg(short, long, default_value = "1000pps")]
    rate: Rate,
    /// Payload bytes per packet (UDP payload, or TCP message body). At least 16: the probe header.
    #[arg(short, long, default_value_t = 512, value_name = "BYTES")]
    size: u32,
    /// Stop after this long (10s, 500ms, 2m).
    #[arg(short = 't', long, value_parser = parse_wire_duration, value_name = "DURATION")]
    duration: Option<Duration>,
    /// Stop after this many packets.
    #[arg(short = 'n', long, value_name = "N")]
    count: Option<u64>,
    /// Stop after this many payload bytes (1M, 64k).
    #[arg(long, value_parser = parse_byte_count, value_name = "BYTES")]
    bytes: Option<u64>,
    /// owd: the receiver measures one-way delay. rtt: the receiver echoes each probe and
    /// the sender measures round-trip time.
    #[arg(short, long, default_value = "owd", value_parser = parse_meter)]
    meter: Meter,
    /// DSCP: 0-63 or a name (EF, AF41, CS1, BE, LE, VA).
    #[arg(long)]
    dscp: Option<Dscp>,
    /// ECN codepoint: not-ect, ect1, ect0, ce.
    #[arg(long)]
    ecn: Option<Ecn>,
    /// IPv4 TTL / IPv6 hop limit (1-255).
    #[arg(long, value_parser = clap::value_parser!(u8).range(1..))]
    ttl: Option<u8>,
    /// IPv6 flow label (0x12345 or decimal, up to 20 bits), for UDP and TCP alike.
    #[arg(long, value_parser = parse_flow_label)]
    flow_label: Option<u32>,
    /// TCP_NODELAY: send each TCP message at once (no Nagle).
    #[arg(long)]
    nodelay: bool,
    /// Start this long after the run begins (for flow files).
    #[arg(long, value_parser = parse_wire_duration, value_name = "DURATION")]
    start: Option<Duration>,
    /// A name for this flow in the output.
    #[arg(long)]
    label: Option<String>,
}

#[derive(Parser)]
#[command(name = "flow line", no_binary_name = true, disable_help_flag = true)]
struct FlowLine {
    #[command(flatten)]
    flow: FlowArgs,
}

impl FlowArgs {
    fn to_spec(&self, default_label: String) -> Result<FlowSpec> {
        if self.size < probe::HEADER_LEN as u32 {
            usage!(
                "--size {} is too small: the probe header needs {} bytes",
                self.size,
                probe::HEADER_LEN
            );
        }
        if self.size > 65_507 && !self.tcp {
            usage!(
                "--size {} exceeds the largest UDP payload (65507 bytes)",
                self.size
            );
        }
        let mut stop = StopSpec {
            duration: self.duration,
            count: self.count,
            bytes: self.bytes,
        };
        if stop.duration.is_none() && stop.count.is_none() && stop.bytes.is_none() {
            stop.duration = Some(Duration::from_secs(10));
        }
        Ok(FlowSpec {
            protocol: if self.tcp {
                Protocol::Tcp
            } else {
                Protocol::Udp
            },
            meter: self.meter,
            rate: self.rate,
            size_bytes: self.size,
            stop,
            start_offset: self.start.unwrap_or_default(),
            marking: MarkingSpec {
                dscp: self.dscp,
                ecn: self.ecn,
                ttl: self.ttl,
                flow_label: self.flow_label,
            },
            nodelay: self.nodelay,
            label: self.label.clone().unwrap_or(default_label),
        })
    }
}

pub(crate) fn parse_wire_duration(s: &str) -> Result<Duration, String> {
    traffic::parse_duration(s).map_err(|e| e.to_string())
}

pub(crate) fn parse_std_duration(s: &str) -> Result<StdDuration, String> {
    parse_wire_duration(s).map(Into::into)
}

fn parse_byte_count(s: &str) -> Result<u64, String> {
    traffic::parse_bytes(s).map_err(|e| e.to_string())
}

fn parse_meter(s: &str) -> Result<Meter, String> {
    match s.to_ascii_lowercase().as_str() {
        "owd" | "owdm" => Ok(Meter::Owd),
        "rtt" | "rttm" => Ok(Meter::Rtt),
        _ => Err(format!("unknown meter '{s}': use owd or rtt")),
    }
}

fn parse_flow_label(s: &str) -> Result<u32, String> {
    let v = if let Some(h) = s.strip_prefix("0x") {
        u32::from_str_radix(h, 16)
    } else {
        s.parse()
    }
    .map_err(|_| format!("invalid flow label '{s}'"))?;
    if v > 0xF_FFFF {
        return Err(format!("flow label {s} exceeds 20 bits (max 0xfffff)"));
    }
    Ok(v)
}

/// A validated send: destination, flows, options.
pub(crate) struct SendConfig {
    pub(crate) dest: SocketAddr,
    pub(crate) flows: Vec<FlowSpec>,
    pub(crate) key: Option<Vec<u8>>,
    pub(crate) spin: Option<Duration>,
    pub(crate) batch_window: Duration,
    pub(crate) log: Option<PathBuf>,
    pub(crate) progress: bool,
}

pub(crate) fn run(args: SendArgs) -> Result<()> {
    let family = match (args.ipv4, args.ipv6) {
        (true, _) => Family::V4,
        (_, true) => Family::V6,
        _ => Family::Any,
    };
    // An IPv4-mapped IPv6 address is IPv4 on the wire: treat it as such.
    let dest = resolve(&args.dest, args.port, family)?;
    let dest = SocketAddr::new(crate::session::canonical(dest.ip()), dest.port());
    let flows = match &args.flows {
        Some(path) => read_flow_file(path)?,
        None => vec![args.flow.to_spec("flow 0".into())?],
    };
    for f in &flows {
        if f.marking.flow_label.is_some() && dest.is_ipv4() {
            usage!("--flow-label applies to IPv6 only; {dest} is IPv4");
        }
    }
    let config = SendConfig {
        dest,
        flows,
        key: args.key.map(String::into_bytes),
        spin: args.spin,
        batch_window: args.batch_window,
        log: args.log,
        progress: std::io::stderr().is_terminal() && !args.json,
    };
    let report = run_session(&config, &crate::interrupt::flag())?;
    if args.json {
        crate::out::print_json(&report)?;
    } else {
        crate::out::print(report.to_text())?;
    }
    Ok(())
}

fn read_flow_file(path: &PathBuf) -> Result<Vec<FlowSpec>> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("cannot read flow file {}", path.display()))?;
    let mut flows = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let line = line.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        let parsed = FlowLine::try_parse_from(line.split_whitespace()).map_err(|e| {
            anyhow::Error::new(crate::UsageError(format!(
                "{}:{}: {}",
                path.display(),
                n + 1,
                e.to_string().trim().trim_start_matches("error: ")
            )))
        })?;
        let spec = parsed
            .flow
            .to_spec(format!("line {}", n + 1))
            .with_context(|| format!("{}:{}", path.display(), n + 1))?;
        flows.push(spec);
    }
    if flows.is_empty() {
        usage!("flow file {} lists no flows", path.display());
    }
    Ok(flows)
}

/// Sender-side figures of one flow.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct SentStats {
    pub(crate) packets: u64,
    pub(crate) bytes: u64,
    /// First to last actual send time.
    pub(crate) duration_ns: u64,
    /// Achieved send rate: (packets − 1) / duration, as D-ITG computes rates over first→last.
    pub(crate) rate_pps: Option<f64>,
    pub(crate) bitrate_bps: Option<f64>,
    pub(crate) requested_pps: f64,
    /// Packets the stop conditions allow (rate × duration, count, bytes: the least).
    pub(crate) planned_packets: Option<u64>,
    pub(crate) schedule_error: Option<ScheduleError>,
}

/// Results of one flow.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct FlowOutcome {
    pub(crate) id: u16,
    pub(crate) spec: FlowSpec,
    pub(crate) sent: SentStats,
    /// The receiver's summary (one-way figures for --meter owd).
    pub(crate) received: Option<FlowSummary>,
    /// The sender's summary of echoes (round-trip figures for --meter rtt).
    pub(crate) rtt: Option<FlowSummary>,
    pub(crate) malformed_at_receiver: u64,
}

/// Results of a session.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct SendReport {
    pub(crate) format_version: u32,
    pub(crate) tool: String,
    pub(crate) dest: SocketAddr,
    pub(crate) interrupted: bool,
    pub(crate) flows: Vec<FlowOutcome>,
}

enum Conn {
    Udp(Arc<netio::UdpSocket>),
    Tcp(TcpStream),
}

struct FlowResult {
    tx: Vec<TxRecord>,
    echoes: Vec<RxRecord>,
}

/// Open a control session, run every flow, collect both sides' results.
pub(crate) fn run_session(config: &SendConfig, stop: &Arc<AtomicBool>) -> Result<SendReport> {
    let dest = config.dest;
    let mut ctrl = netio::tcp::connect(
        dest,
        &netio::Marking::default(),
        true,
        None,
        StdDuration::from_secs(5),
    )
    .with_context(|| {
        format!("cannot reach a dualperf receiver at {dest} (is `dualperf recv` running?)")
    })?;
    ctrl.set_read_timeout(Some(StdDuration::from_secs(10)))?;
    let mut reader = MsgReader::new();
    write_msg(
        &mut ctrl,
        &Msg::Hello {
            version: PROTOCOL_VERSION,
        },
    )?;
    let nonce = match reader.read(&mut ctrl)? {
        Msg::Challenge { nonce, .. } => nonce,
        Msg::Error { message } => bail!("receiver refused: {message}"),
        other => bail!("unexpected reply from receiver: {other:?}"),
    };
    let mac = config
        .key
        .as_deref()
        .map(|k| control::auth_mac(k, &nonce))
        .unwrap_or_default();
    write_msg(&mut ctrl, &Msg::Auth { mac })?;
    match reader.read(&mut ctrl) {
        Ok(Msg::Welcome { .. }) => {}
        Ok(Msg::Error { message }) => bail!("receiver refused: {message}"),
        Ok(other) => bail!("unexpected reply from receiver: {other:?}"),
        Err(e) => return Err(e.context("receiver closed the session during authentication")),
    }

    // Sockets first, so UDP source ports can be announced.
    let mut conns = Vec::new();
    let mut announces = Vec::new();
    for (i, spec) in config.flows.iter().enumerate() {
        let marking = netio::Marking {
            tos: spec.marking.tos(),
            ttl: spec.marking.ttl,
            flow_label: spec.marking.flow_label,
        };
        let src_port = if spec.protocol == Protocol::Udp {
            let any: IpAddr = if dest.is_ipv4() {
                Ipv4Addr::UNSPECIFIED.into()
            } else {
                Ipv6Addr::UNSPECIFIED.into()
            };
            let sock = netio::UdpSocket::bind(SocketAddr::new(any, 0), false)?;
            sock.connect_marked(dest, &marking)
                .with_context(|| format!("flow {i}: cannot apply marking {marking:?}"))?;
            let _ = sock.set_buffer_sizes(Some(4 << 20), Some(4 << 20));
            if spec.meter == Meter::Rtt {
                sock.enable_recv_meta()?;
            }
            let port = sock.local_addr()?.port();
            conns.push(Some(Conn::Udp(Arc::new(sock))));
            Some(port)
        } else {
            conns.push(None);
            None
        };
        announces.push(FlowAnnounce {
            index: i as u32,
            protocol: spec.protocol,
            meter: spec.meter,
            size_bytes: spec.size_bytes,
            tos: marking.tos,
            ttl: marking.ttl,
            flow_label: marking.flow_label,
            src_port,
            label: spec.label.clone(),
        });
    }
    write_msg(&mut ctrl, &Msg::Register { flows: announces })?;
    let grants = match reader.read(&mut ctrl)? {
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
    for (i, spec) in config.flows.iter().enumerate() {
        if spec.protocol != Protocol::Tcp {
            continue;
        }
        let marking = netio::Marking {
            tos: spec.marking.tos(),
            ttl: spec.marking.ttl,
            flow_label: spec.marking.flow_label,
        };
        let mut stream = netio::tcp::connect(
            dest,
            &marking,
            spec.nodelay,
            None,
            StdDuration::from_secs(5),
        )
        .with_context(|| format!("flow {i}: cannot open the TCP data connection"))?;
        write_msg(
            &mut stream,
            &Msg::Attach {
                flow: grants[i].id,
                token: grants[i].token,
            },
        )?;
        if spec.meter == Meter::Rtt {
            let _ = netio::tcp::enable_recv_meta(&stream);
        }
        conns[i] = Some(Conn::Tcp(stream));
    }

    // Run every flow on its own thread from a common origin.
    let origin = Instant::from_nanos(netio::clock::mono_ns() + 20_000_000);
    let progress = Arc::new(AtomicU64::new(0));
    let mut handles = Vec::new();
    for ((spec, grant), conn) in config.flows.iter().zip(&grants).zip(conns) {
        let spec = spec.clone();
        let id = grant.id;
        let stop = stop.clone();
        let spin = config.spin;
        let batch_window = config.batch_window;
        let progress = progress.clone();
        let conn = conn.context("internal: flow without a connection")?;
        handles.push(
            std::thread::Builder::new()
                .name(format!("flow-{id}"))
                .spawn(move || {
                    run_flow(
                        id,
                        &spec,
                        conn,
                        origin,
                        &stop,
                        (spin, batch_window),
                        &progress,
                    )
                })?,
        );
    }
    let total_planned: Option<u64> = config.flows.iter().map(planned_packets).sum();
    let mut results = Vec::new();
    let mut last_print = std::time::Instant::now();
    for h in handles {
        while !h.is_finished() {
            std::thread::sleep(StdDuration::from_millis(20));
            if config.progress && last_print.elapsed() >= StdDuration::from_millis(500) {
                last_print = std::time::Instant::now();
                let sent = progress.load(Ordering::Relaxed);
                match total_planned {
                    Some(t) if t > 0 => eprint!(
                        "\rdualperf send: {sent}/{t} packets ({:.0} %)   ",
                        sent as f64 * 100.0 / t as f64
                    ),
                    _ => eprint!("\rdualperf send: {sent} packets   "),
                }
            }
        }
        results.push(
            h.join()
                .map_err(|_| anyhow::anyhow!("a flow thread panicked"))??,
        );
    }
    if config.progress {
        eprintln!();
    }

    let sent: Vec<FlowSent> = grants
        .iter()
        .zip(&results)
        .map(|(g, r)| FlowSent {
            id: g.id,
            packets: r.tx.len() as u64,
            bytes: r.tx.iter().map(|t| u64::from(t.size_bytes)).sum(),
        })
        .collect();
    write_msg(
        &mut ctrl,
        &Msg::Finish {
            flows: sent.clone(),
        },
    )?;
    let remote = match reader.read(&mut ctrl) {
        Ok(Msg::Results { flows }) => flows,
        Ok(Msg::Error { message }) => bail!("receiver failed to report: {message}"),
        Ok(other) => bail!("unexpected reply from receiver: {other:?}"),
        Err(e) => return Err(e.context("waiting for the receiver's results")),
    };

    if let Some(path) = &config.log {
        write_sender_log(path, config, &grants, &results)?;
    }

    let mut flows = Vec::new();
    for ((spec, grant), res) in config.flows.iter().zip(&grants).zip(results) {
        let r = remote.iter().find(|r| r.id == grant.id);
        let received =
            r.and_then(|r| serde_json::from_value::<FlowSummary>(r.summary.clone()).ok());
        let packets = res.tx.len() as u64;
        flows.push(FlowOutcome {
            id: grant.id,
            spec: spec.clone(),
            sent: sent_stats(spec, &res.tx),
            received,
            rtt: (spec.meter == Meter::Rtt).then(|| meter::summarize(&res.echoes, Some(packets))),
            malformed_at_receiver: r.map_or(0, |r| r.malformed),
        });
    }
    Ok(SendReport {
        format_version: 1,
        tool: format!("dualperf {}", env!("CARGO_PKG_VERSION")),
        dest,
        interrupted: stop.load(Ordering::SeqCst),
        flows,
    })
}

fn planned_packets(spec: &FlowSpec) -> Option<u64> {
    let by_duration = spec
        .stop
        .duration
        .map(|d| (d.as_secs_f64() * spec.rate.pps(spec.size_bytes)).ceil() as u64);
    let by_bytes = spec
        .stop
        .bytes
        .map(|b| b.div_ceil(u64::from(spec.size_bytes)));
    [by_duration, spec.stop.count, by_bytes]
        .into_iter()
        .flatten()
        .min()
}

fn sent_stats(spec: &FlowSpec, tx: &[TxRecord]) -> SentStats {
    let packets = tx.len() as u64;
    let bytes = tx.iter().map(|t| u64::from(t.size_bytes)).sum();
    let duration_ns = match (tx.first(), tx.last()) {
        (Some(a), Some(b)) => b.actual_ns.saturating_sub(a.actual_ns),
        _ => 0,
    };
    let secs = duration_ns as f64 / 1e9;
    let rate_pps = (packets >= 2 && duration_ns > 0).then(|| (packets - 1) as f64 / secs);
    let bitrate_bps = (packets >= 2 && duration_ns > 0).then(|| {
        let first = tx.first().map_or(0, |t| u64::from(t.size_bytes));
        (bytes - first) as f64 * 8.0 / secs
    });
    SentStats {
        packets,
        bytes,
        duration_ns,
        rate_pps,
        bitrate_bps,
        requested_pps: spec.rate.pps(spec.size_bytes),
        planned_packets: planned_packets(spec),
        schedule_error: meter::schedule_error(tx),
    }
}

fn write_sender_log(
    path: &PathBuf,
    config: &SendConfig,
    grants: &[control::FlowGrant],
    results: &[FlowResult],
) -> Result<()> {
    let file =
        std::fs::File::create(path).with_context(|| format!("cannot create {}", path.display()))?;
    let meta = serde_json::json!({"tool": "dualperf send", "version": env!("CARGO_PKG_VERSION"), "dest": config.dest});
    let mut log = meter::log::LogWriter::new(std::io::BufWriter::new(file), &meta.to_string())?;
    for ((spec, g), r) in config.flows.iter().zip(grants).zip(results) {
        log.write_flow(u32::from(g.id), &serde_json::to_string(spec)?)?;
        for t in &r.tx {
            log.write_tx(t)?;
        }
        for e in &r.echoes {
            log.write_rx(e)?;
        }
    }
    log.flush()?;
    Ok(())
}

const BATCH: usize = 64;

fn run_flow(
    id: u16,
    spec: &FlowSpec,
    conn: Conn,
    origin: Instant,
    stop: &AtomicBool,
    (spin, batch_window): (Option<Duration>, Duration),
    progress: &AtomicU64,
) -> Result<FlowResult> {
    // Timer slack (50 µs by default) would make every sleep overshoot by that much.
    let _ = netio::clock::set_timer_slack_ns(1);
    let mut sched = Schedule::new(spec, origin);
    let (num, den) = spec.rate.interval_ns(spec.size_bytes);
    let interval_ns = u64::try_from(num / den).unwrap_or(u64::MAX);
    let spin_ns = spin.map_or((interval_ns / 4).min(50_000), Duration::as_nanos);
    // At high rates, wake once per batch of packets due within the batch window rather
    // than at every deadline; the first packet of a batch is at most one window late.
    let batch = (batch_window.as_nanos() / interval_ns.max(1)).clamp(1, BATCH as u64);
    let size = spec.size_bytes as usize;
    let mut tx = Vec::with_capacity(planned_packets(spec).unwrap_or(1024).min(1 << 20) as usize);
    let echoes_done = Arc::new(AtomicBool::new(false));
    let echoes_seen = Arc::new(AtomicU64::new(0));
    match conn {
        Conn::Udp(sock) => {
            let echo_thread = (spec.meter == Meter::Rtt).then(|| {
                let sock = sock.clone();
                let done = echoes_done.clone();
                let seen = echoes_seen.clone();
                std::thread::spawn(move || udp_echo_receiver(&sock, id, &done, &seen))
            });
            let mut bufs = vec![vec![0u8; size]; BATCH];
            let mut pending: Vec<(u64, u64)> = Vec::with_capacity(BATCH);
            loop {
                if stop.load(Ordering::Relaxed) {
                    sched.handle_stop();
                }
                let Some(deadline) = sched.poll_timeout_batch(batch) else {
                    break;
                };
                let now = netio::clock::mono_ns();
                if deadline.as_nanos() > now {
                    netio::clock::sleep_until(deadline.as_nanos(), spin_ns);
                }
                let now = Instant::from_nanos(netio::clock::mono_ns());
                pending.clear();
                while pending.len() < BATCH {
                    let Some(t) = sched.poll_transmit(now) else {
                        break;
                    };
                    let buf = &mut bufs[pending.len()];
                    let repr = Repr {
                        flow: id,
                        seq: t.seq as u32,
                        tx_ns: 0,
                        echo: false,
                        stamps: None,
                    };
                    repr.emit(buf)?;
                    pending.push((t.seq, t.scheduled.as_nanos()));
                }
                let n = pending.len();
                let mut off = 0;
                while off < n {
                    // One wall-clock stamp per sendmmsg, taken right before the call:
                    // the batch enters the kernel together.
                    let wall = netio::clock::wall_ns();
                    for b in &mut bufs[off..n] {
                        Packet::new_unchecked(&mut b[..]).set_tx_ns(wall);
                    }
                    let mut slices: [&[u8]; BATCH] = [&[]; BATCH];
                    for (slot, b) in slices.iter_mut().zip(&bufs[off..n]) {
                        *slot = b;
                    }
                    match sock.send_batch(&slices[..n - off]) {
                        // The kernel's queue is full (EAGAIN/ENOBUFS): let the receiver drain it.
                        Ok(0) => std::thread::yield_now(),
                        Ok(n) => {
                            let actual = netio::clock::mono_ns();
                            for &(seq, scheduled) in &pending[off..off + n] {
                                tx.push(TxRecord {
                                    flow: u32::from(id),
                                    seq,
                                    size_bytes: size as u32,
                                    scheduled_ns: scheduled,
                                    actual_ns: actual,
                                });
                            }
                            off += n;
                        }
                        Err(e) if e.kind() == std::io::ErrorKind::ConnectionRefused => {
                            // An ICMP port unreachable reported for an earlier datagram
                            // (the receiver went away): the error is consumed; retry.
                            std::thread::yield_now();
                        }
                        Err(e) => return Err(e).context("sending"),
                    }
                }
                progress.fetch_add(pending.len() as u64, Ordering::Relaxed);
            }
            let echoes = match echo_thread {
                Some(h) => {
                    linger_for_echoes(&echoes_done, &echoes_seen, tx.len() as u64);
                    h.join()
                        .map_err(|_| anyhow::anyhow!("echo thread panicked"))?
                }
                None => Vec::new(),
            };
            Ok(FlowResult { tx, echoes })
        }
        Conn::Tcp(mut stream) => {
            let echo_thread = if spec.meter == Meter::Rtt {
                let mut rd = stream.try_clone()?;
                let done = echoes_done.clone();
                let seen = echoes_seen.clone();
                Some(std::thread::spawn(move || {
                    tcp_echo_receiver(&mut rd, id, &done, &seen)
                }))
            } else {
                None
            };
            let msg_len = frame::PREFIX_LEN + size;
            let mut out = vec![0u8; msg_len * BATCH];
            let mut pending: Vec<(u64, u64)> = Vec::with_capacity(BATCH);
            loop {
                if stop.load(Ordering::Relaxed) {
                    sched.handle_stop();
                }
                let Some(deadline) = sched.poll_timeout_batch(batch) else {
                    break;
                };
                if deadline.as_nanos() > netio::clock::mono_ns() {
                    netio::clock::sleep_until(deadline.as_nanos(), spin_ns);
                }
                let now = Instant::from_nanos(netio::clock::mono_ns());
                pending.clear();
                while pending.len() < BATCH {
                    let Some(t) = sched.poll_transmit(now) else {
                        break;
                    };
                    let m = &mut out[pending.len() * msg_len..(pending.len() + 1) * msg_len];
                    frame::emit_prefix(size, m)?;
                    let repr = Repr {
                        flow: id,
                        seq: t.seq as u32,
                        tx_ns: 0,
                        echo: false,
                        stamps: None,
                    };
                    repr.emit(&mut m[frame::PREFIX_LEN..])?;
                    pending.push((t.seq, t.scheduled.as_nanos()));
                }
                let wall = netio::clock::wall_ns();
                for m in out[..pending.len() * msg_len].chunks_exact_mut(msg_len) {
                    Packet::new_unchecked(&mut m[frame::PREFIX_LEN..]).set_tx_ns(wall);
                }
                stream
                    .write_all(&out[..pending.len() * msg_len])
                    .context("writing the TCP data stream")?;
                let actual = netio::clock::mono_ns();
                for &(seq, scheduled) in &pending {
                    tx.push(TxRecord {
                        flow: u32::from(id),
                        seq,
                        size_bytes: size as u32,
                        scheduled_ns: scheduled,
                        actual_ns: actual,
                    });
                }
                progress.fetch_add(pending.len() as u64, Ordering::Relaxed);
            }
            let echoes = match echo_thread {
                Some(h) => {
                    linger_for_echoes(&echoes_done, &echoes_seen, tx.len() as u64);
                    let e = h
                        .join()
                        .map_err(|_| anyhow::anyhow!("echo thread panicked"))?;
                    let _ = stream.shutdown(std::net::Shutdown::Both);
                    e
                }
                None => {
                    let _ = stream.shutdown(std::net::Shutdown::Write);
                    Vec::new()
                }
            };
            Ok(FlowResult { tx, echoes })
        }
    }
}

/// Wait for echoes still in flight: until as many arrived as were sent, or 500 ms pass
/// with none, at most 3 s; then tell the echo thread to stop.
fn linger_for_echoes(done: &AtomicBool, seen: &AtomicU64, sent: u64) {
    let start = std::time::Instant::now();
    let mut last = seen.load(Ordering::Relaxed);
    let mut last_change = std::time::Instant::now();
    while last < sent
        && start.elapsed() < StdDuration::from_secs(3)
        && last_change.elapsed() < StdDuration::from_millis(500)
    {
        std::thread::sleep(StdDuration::from_millis(5));
        let now = seen.load(Ordering::Relaxed);
        if now != last {
            last = now;
            last_change = std::time::Instant::now();
        }
    }
    done.store(true, Ordering::SeqCst);
}

fn udp_echo_receiver(
    sock: &netio::UdpSocket,
    id: u16,
    done: &AtomicBool,
    seen: &AtomicU64,
) -> Vec<RxRecord> {
    let _ = sock.set_read_timeout(Some(StdDuration::from_millis(50)));
    let mut bufs = vec![vec![0u8; 65_536]; BATCH];
    let mut metas = vec![netio::RecvMeta::default(); BATCH];
    let mut out = Vec::new();
    let mut unwrapper = SeqUnwrapper::default();
    while !done.load(Ordering::Relaxed) {
        let Ok(n) = sock.recv_batch(&mut bufs, &mut metas) else {
            continue;
        };
        let fallback = netio::clock::wall_ns();
        for (buf, meta) in bufs.iter().zip(&metas).take(n) {
            let data = &buf[..meta.len.min(buf.len())];
            let Ok(repr) = Packet::new_checked(data).and_then(|p| Repr::parse(&p)) else {
                continue;
            };
            if !repr.echo || repr.flow != id {
                continue;
            }
            out.push(RxRecord {
                flow: u32::from(id),
                seq: unwrapper.unwrap(repr.seq),
                size_bytes: data.len() as u32,
                tx_ns: repr.tx_ns,
                rx_ns: meta.kernel_ts_ns.unwrap_or(fallback),
                tos: meta.tos,
                hop_limit: meta.hop_limit,
                flow_label: meta.flow_label,
                kernel_ts: meta.kernel_ts_ns.is_some(),
            });
            seen.fetch_add(1, Ordering::Relaxed);
        }
    }
    out
}

fn tcp_echo_receiver(
    stream: &mut TcpStream,
    id: u16,
    done: &AtomicBool,
    seen: &AtomicU64,
) -> Vec<RxRecord> {
    use std::io::Read;
    let _ = stream.set_read_timeout(Some(StdDuration::from_millis(50)));
    let mut decoder = FrameDecoder::new(4 << 20);
    let mut buf = vec![0u8; 256 * 1024];
    let mut out = Vec::new();
    let mut unwrapper = SeqUnwrapper::default();
    while !done.load(Ordering::Relaxed) {
        match stream.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => decoder.handle_bytes(&buf[..n]),
            Err(_) => continue,
        }
        let rx_ns = netio::clock::wall_ns();
        // On a connecting IPv4 socket Linux reports placeholders (TOS 0, TTL 1): unknown.
        let meta = netio::tcp::last_recv_meta(stream)
            .ok()
            .filter(|m| !m.handshake_only);
        while let Ok(Some(body)) = decoder.poll_frame() {
            let Ok(repr) = Packet::new_checked(body).and_then(|p| Repr::parse(&p)) else {
                continue;
            };
            if !repr.echo || repr.flow != id {
                continue;
            }
            out.push(RxRecord {
                flow: u32::from(id),
                seq: unwrapper.unwrap(repr.seq),
                size_bytes: body.len() as u32,
                tx_ns: repr.tx_ns,
                rx_ns,
                tos: meta.and_then(|m| m.tos),
                hop_limit: meta.and_then(|m| m.hop_limit),
                flow_label: meta.and_then(|m| m.flow_label),
                kernel_ts: false,
            });
            seen.fetch_add(1, Ordering::Relaxed);
        }
    }
    out
}

impl SendReport {
    /// Human-readable results.
    pub(crate) fn to_text(&self) -> String {
        let mut t = crate::table::Table::new(&[
            "flow",
            "proto",
            "size B",
            "sent",
            "received",
            "lost %",
            "rate pps",
            "Mbit/s",
            "delay mean µs",
            "jitter µs (D-ITG)",
            "sched err p99 µs",
        ]);
        for f in &self.flows {
            let summary = if f.spec.meter == Meter::Rtt {
                f.rtt.as_ref()
            } else {
                f.received.as_ref()
            };
            t.row(vec![
                format!("{} {}", f.id, f.spec.label),
                format!("{:?}/{:?}", f.spec.protocol, f.spec.meter).to_lowercase(),
                f.spec.size_bytes.to_string(),
                f.sent.packets.to_string(),
                f.received
                    .as_ref()
                    .map_or("-".into(), |r| r.packets.to_string()),
                f.received
                    .as_ref()
                    .and_then(|r| r.loss.loss_pct)
                    .map_or("-".into(), |p| format!("{p:.3}")),
                f.sent.rate_pps.map_or("-".into(), |r| format!("{r:.1}")),
                f.received
                    .as_ref()
                    .and_then(|r| r.bitrate_bps)
                    .map_or("-".into(), |b| format!("{:.3}", b / 1e6)),
                summary
                    .and_then(|s| s.delay.as_ref())
                    .map_or("-".into(), |d| format!("{:.1}", d.mean_ns / 1e3)),
                summary
                    .and_then(|s| s.jitter.ditg_ns)
                    .map_or("-".into(), |j| format!("{:.1}", j / 1e3)),
                f.sent
                    .schedule_error
                    .as_ref()
                    .map_or("-".into(), |e| format!("{:.1}", e.p99_ns as f64 / 1e3)),
            ]);
        }
        let mut s = format!(
            "dualperf send to {}{}\n",
            self.dest,
            if self.interrupted {
                " (interrupted)"
            } else {
                ""
            }
        );
        s.push_str(&t.render());
        s
    }
}
