//! `dualperf route`: a userspace IPv4/IPv6 router, the driver of the sans-IO `router`
//! crate. The decisions are `router`'s (`forward::Forwarder`, `state::RouterState`) and
//! `qos`'s (one `link::Link` or service policy per egress, `egress::Egress`); the
//! configuration, QoS file and stats document are `router`'s types. This file reads the
//! files, opens the sockets and runs the loop with its clock and signals; `engine.rs`
//! moves frames between `router` and `AF_PACKET` rings; `aux.rs` is the second thread
//! that writes the stats file, captures and log lines, so nothing on the forwarding
//! thread waits for a disk.

mod aux;
mod engine;
mod pcap;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use anyhow::{Context, Result};
use netio::packet::{PacketSocket, RingConfig};

use self::aux::{Aux, Sinks};
use self::engine::Engine;
use router::config::CheckedConfig;
use router::egress::QosFile;
use router::forward::{Forwarder, Interface};
use router::state::RouterState;
use wire::ethernet;
use wire::time::{Duration, Instant};

use crate::usage;

/// The least busy-poll window after a frame: about one wake-up's latency.
const BUSY_POLL_LEAST_NS: u64 = 50_000;
/// A snapshot of the counters for the stats file this often (and on SIGUSR1).
const STATS_EVERY_NS: u64 = 500_000_000;

/// Forward IPv4 and IPv6 between interfaces, emulating each egress link.
///
/// Frames are read and written through AF_PACKET mmap rings on the configured
/// interfaces (veths of a `dualperf lab`, or real NICs). The router decrements TTL and
/// hop limit (IPv4 checksum updated incrementally, RFC 1624), answers ARP, neighbour
/// solicitations and echo requests for its own addresses, and sends ICMP time exceeded,
/// packet too big and fragmentation needed. Each egress is a link with a rate (counting
/// Ethernet frame bytes), delay, jitter, random loss and a tail-drop queue (a lab
/// topology's link keys, docs/topology.md). The kernel's own addresses and forwarding
/// should be off on these interfaces (`dualperf lab up` does that). Addresses, routes and
/// neighbours must lie in the benchmarking ranges 198.18.0.0/15 and 2001:2::/48.
#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:
  dualperf route --config r1.toml --stats r1.stats.json
  dualperf route --config r1.toml --pcap captures/
  dualperf route --config r1.toml --stats r1.stats.json --cpu 1
  dualperf route --config r1.toml --json > r1.final.json    # final counters on stdout

The configuration is what `dualperf lab up` writes for each router: read one in
/run/dualperf/labs/LAB/NODE.toml of a running lab (TOML: [[interface]] with name, ipv4,
ipv6, mtu, emulation and optionally mac, the MAC the router answers to when not the
interface's own; [[route]]; [[neighbor]]). Router configuration and QoS file formats,
every key: docs/qos.md.

The stats file (fields in docs/output.md) has a `loop` record that shows whether the
forwarding loop ever stalled: its longest turn and gap, and how often other tasks took
its CPU; `dualperf lab status` prints it. bench/router.sh compares the router with the
kernel forwarding the same lab.")]
pub(crate) struct RouteArgs {
    /// The router configuration (TOML).
    #[arg(long, value_name = "FILE")]
    config: PathBuf,
    /// Keep the counters (JSON) in FILE, rewritten every 500 ms, at once on SIGUSR1, and
    /// at exit, by a thread of their own (a slow disk never holds up forwarding). `loop`
    /// records the forwarding loop's longest turn and gap: a stall shows there.
    #[arg(long, value_name = "FILE")]
    stats: Option<PathBuf>,
    /// Capture every interface into DIR/IFACE.pcap (frames received and sent).
    #[arg(long, value_name = "DIR")]
    pcap: Option<PathBuf>,
    /// At exit, print the final counters (the stats file's document) as JSON on stdout.
    /// Without it they go to stderr when there is no --stats file.
    #[arg(long)]
    json: bool,
    /// QoS policies (TOML modelled on MQC: [[class_map]], [[policy_map]] with
    /// [[policy_map.class]], [[service_policy]] interface/output); the format in
    /// docs/qos.md, examples in plans/qos/. A policy's tx_ring replaces the
    /// interface's queue limit; its class queues hold the rest. SIGUSR2 reads the file
    /// again and restarts every egress (counters from zero); a file that does not read
    /// leaves the policies as they were.
    #[arg(long, value_name = "FILE")]
    qos: Option<PathBuf>,
    /// Pin the forwarding thread to CPU N (the writer thread stays free). Without it
    /// the scheduler may put the router on the sender's CPU.
    #[arg(long, value_name = "N")]
    cpu: Option<usize>,
    /// The most the loop keeps polling the rings after the last frame before it sleeps
    /// in ppoll. The window adapts: steady traffic with gaps up to this long is taken
    /// without wake-ups (keeping one CPU busy while it flows), sparse traffic costs a
    /// wake-up per frame and no CPU between. 0 sleeps at once.
    #[arg(long, default_value = "2ms", value_parser = crate::args::duration, value_name = "DURATION")]
    busy_poll: Duration,
    /// Slots in each interface's RX and TX ring: at 500,000 frames/s, 8192 slots hold
    /// 16 ms of traffic while the router is away.
    #[arg(long, default_value_t = 8192, value_name = "N")]
    ring_slots: u32,
    /// Tests only: the writer thread sleeps this long before each stats write, as on a
    /// disk that stalls.
    #[arg(long, hide = true, value_parser = crate::args::std_duration, value_name = "DURATION")]
    debug_stats_delay: Option<std::time::Duration>,
}

/// The signals the loop watches: SIGINT and SIGTERM stop it, SIGUSR1 asks for a
/// snapshot of the counters, SIGUSR2 reloads the QoS file.
struct Signals {
    stop: Arc<AtomicBool>,
    snapshot: Arc<AtomicBool>,
    reload: Arc<AtomicBool>,
}

impl Signals {
    fn install() -> Result<Self> {
        let stop = crate::interrupt::flag();
        let snapshot = Arc::new(AtomicBool::new(false));
        signal_hook::flag::register(signal_hook::consts::SIGUSR1, snapshot.clone())
            .context("cannot install the SIGUSR1 handler")?;
        let reload = Arc::new(AtomicBool::new(false));
        signal_hook::flag::register(signal_hook::consts::SIGUSR2, reload.clone())
            .context("cannot install the SIGUSR2 handler")?;
        Ok(Self {
            stop,
            snapshot,
            reload,
        })
    }
}

pub(crate) fn run(args: RouteArgs) -> Result<()> {
    let text = crate::args::read_input(&args.config, "the router config")?;
    let cfg = match CheckedConfig::from_toml(&text) {
        Ok(c) => c,
        Err(e) => usage!("{}: {e}", args.config.display()),
    };
    let (socks, ifaces) = open_interfaces(&cfg, args.ring_slots)?;
    let fwd = match Forwarder::new(ifaces, cfg.routes.clone(), cfg.neighbors.clone()) {
        Ok(f) => f,
        Err(e) => usage!("{}: {e}", args.config.display()),
    };
    let start = Instant::from_nanos(netio::clock::mono_ns());
    let built = match load_egress(&cfg, args.qos.as_deref(), start) {
        Ok(b) => b,
        Err(e) => usage!("{e}"),
    };
    let pcaps = open_pcaps(args.pcap.as_deref(), &cfg.names)?;
    // The writer thread starts before the forwarding thread is pinned, so it keeps
    // every CPU.
    let aux = Aux::start(Sinks {
        stats: args.stats.clone(),
        pcaps,
        stats_delay: args.debug_stats_delay.unwrap_or_default(),
        avoid_cpu: args.cpu,
    })?;
    if let Some(cpu) = args.cpu {
        if let Err(e) = netio::cpu::pin_current_thread(cpu) {
            usage!("--cpu {cpu}: {e}");
        }
    }
    // Link events (a frame's end of serialization or propagation) wake the loop on time.
    let _ = netio::clock::set_timer_slack_ns(1);
    let signals = Signals::install()?;
    let mut state = RouterState::new(fwd, built.egress, engine::thread_times());
    state.set_rsvp(built.rsvp.as_ref(), cfg.seed);
    for (name, policy) in state.service_policies() {
        crate::out::note!("dualperf route: {name}: service-policy output {policy}");
    }
    if let Some(r) = &built.rsvp {
        crate::out::note!("dualperf route: {}", rsvp_note(r));
    }
    crate::out::note!(
        "dualperf route: forwarding between {} ({} routes)",
        cfg.names.join(", "),
        cfg.routes.len()
    );
    let mut eng = Engine::new(cfg.names.clone(), socks, state, aux);
    let started = netio::clock::mono_ns();
    forward(&mut eng, &args, &cfg, &signals, started)?;
    eng.read_kernel_drops();
    let doc = eng.stats(netio::clock::mono_ns() - started);
    // The stats file and captures are finished first: a closed stdout loses nothing.
    let value = crate::out::sorted_json(&doc)?;
    let finished = eng.aux.finish(doc);
    if args.json {
        crate::out::print_json(&value)?;
    } else if args.stats.is_none() {
        // The only record of the counters: written even under --quiet.
        eprintln!("{}", serde_json::to_string_pretty(&value)?);
    }
    finished
}

/// An `AF_PACKET` socket on each configured interface, and the interface as the
/// forwarder takes it.
fn open_interfaces(
    cfg: &CheckedConfig,
    ring_slots: u32,
) -> Result<(Vec<PacketSocket>, Vec<Interface>)> {
    let mut socks = Vec::new();
    let mut ifaces = Vec::new();
    for (i, name) in cfg.names.iter().enumerate() {
        // A slot holds the frame after 66 bytes of ring header: room for the MTU.
        let ring = RingConfig {
            frame_size: (cfg.mtu[i] + 14 + 66).next_power_of_two().max(2048),
            rx_frames: ring_slots.max(64),
            tx_frames: ring_slots.max(64),
            ..RingConfig::default()
        };
        let sock = PacketSocket::open(name, &ring)
            .with_context(|| format!("cannot open AF_PACKET on {name}"))?;
        // The configured MAC (a lab's router answers to its topology's MAC while the
        // kernel's side of the veth has another), else the interface's own.
        let mac = match &cfg.macs[i] {
            Some(m) => *m,
            None => ethernet::Address(sock.mac().with_context(|| format!("{name}: no MAC"))?),
        };
        match cfg.interface(i, mac, sock.mtu().ok()) {
            Ok(f) => ifaces.push(f),
            Err(e) => usage!("{e}"),
        }
        socks.push(sock);
    }
    Ok((socks, ifaces))
}

/// A capture per interface in `dir` (created), in interface order; none without a
/// directory.
fn open_pcaps(
    dir: Option<&Path>,
    names: &[String],
) -> Result<Vec<pcap::PcapWriter<std::io::BufWriter<std::fs::File>>>> {
    let mut pcaps = Vec::new();
    if let Some(dir) = dir {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
        for name in names {
            let path = dir.join(pcap::file_name(name));
            let f = std::fs::File::create(&path)
                .with_context(|| format!("cannot create {}", path.display()))?;
            pcaps.push(pcap::PcapWriter::new(std::io::BufWriter::new(f))?);
        }
    }
    Ok(pcaps)
}

/// The forwarding loop, from `started` (monotonic ns) until SIGINT or SIGTERM: turns,
/// reloads, snapshots of the counters, and the busy-polling or sleeps between.
fn forward(
    eng: &mut Engine,
    args: &RouteArgs,
    cfg: &CheckedConfig,
    signals: &Signals,
    started: u64,
) -> Result<()> {
    let mut busy_poll = netio::poll::BusyPoll::new(BUSY_POLL_LEAST_NS, args.busy_poll.as_nanos());
    let mut next_stats = started;
    let mut last_frame_ns = 0u64;
    // The start of the previous turn, unless the loop slept since.
    let mut prev_turn: Option<u64> = None;
    while !signals.stop.load(Ordering::Relaxed) {
        let t0 = netio::clock::mono_ns();
        if let Some(p) = prev_turn {
            eng.state.record_gap(t0.saturating_sub(p));
        }
        let handled = eng.turn(t0);
        // Where the frames' work ends: the cost per frame leaves out the counters below.
        let t_frames = if handled > 0 {
            netio::clock::mono_ns()
        } else {
            t0
        };
        let reloaded = signals.reload.swap(false, Ordering::Relaxed);
        // The counters start afresh after the turn of a reload that took, which is the
        // reload's, not the traffic's.
        let restart = reloaded && reload(eng, args, cfg, t0);
        let mut busy = handled > 0 || reloaded;
        // Every 500 ms, and at once on SIGUSR1 (`dualperf lab status` asks so) and
        // after a reload: a snapshot for the writer thread.
        let usr1 = signals.snapshot.swap(false, Ordering::Relaxed);
        if t0 >= next_stats || reloaded || usr1 {
            busy = true;
            eng.state.usr1_answered += u64::from(usr1);
            eng.read_kernel_drops();
            let doc = eng.stats(t0 - started);
            eng.aux.stats(doc);
            next_stats = t0 + STATS_EVERY_NS;
        } else {
            eng.aux.retry();
        }
        let t1 = netio::clock::mono_ns();
        eng.state
            .record_turn(t1.saturating_sub(t0), busy, t_frames - t0, handled);
        if handled > 0 {
            last_frame_ns = t1;
        }
        if restart {
            eng.restart_counters();
        }
        // Busy-poll while frames came recently: a frame arriving now is taken without
        // the wake-up a sleep would cost.
        if t1.saturating_sub(last_frame_ns) < busy_poll.window_ns() || eng.rx_pending() {
            prev_turn = (!restart).then_some(t0);
            if handled == 0 {
                // Polling with nothing to do: a task woken on this CPU (the receiver a
                // frame just reached, say) runs now rather than after our time slice.
                // Time given away so is the loop's choice, not a stall: no gap spans it.
                std::thread::yield_now();
                eng.state
                    .record_yield(netio::clock::mono_ns().saturating_sub(t1));
                prev_turn = None;
            }
            continue;
        }
        // Sleep until a frame arrives, the next link event, or 100 ms (to see Ctrl-C
        // and refresh the counters); while a TX ring is backed up, retry in 200 µs.
        let wake = eng.wake_at(t1);
        if wake <= t1 {
            prev_turn = (!restart).then_some(t0);
            continue;
        }
        let readable = eng.sleep(wake - t1)?;
        busy_poll.after_sleep(netio::clock::mono_ns().saturating_sub(t1), readable);
        prev_turn = None;
    }
    Ok(())
}

/// SIGUSR2 at `t0`: read the QoS file again and start every egress afresh (counters from
/// zero; frames still queued are discarded; the links' random draws afresh, from the
/// seed and the reload's number). A file that does not read keeps the running policies
/// and says why in the stats. Whether the reload took.
fn reload(eng: &mut Engine, args: &RouteArgs, cfg: &CheckedConfig, t0: u64) -> bool {
    let build = cfg.generation(eng.state.qos.reloads + 1);
    match load_egress(&build, args.qos.as_deref(), Instant::from_nanos(t0)) {
        Ok(built) => {
            let had_rsvp = eng.state.rsvp.is_some();
            eng.state
                .reloaded(built.egress, built.rsvp.as_ref(), Instant::from_nanos(t0));
            let file = qos_file(args.qos.as_deref());
            eng.aux.log(format!("dualperf route: reloaded {file}"));
            match &built.rsvp {
                Some(r) => eng.aux.log(format!("dualperf route: {}", rsvp_note(r))),
                None if had_rsvp => eng.aux.log(
                    "dualperf route: RSVP off: its state dropped, RSVP forwarded as any packet"
                        .to_owned(),
                ),
                None => {}
            }
            for (name, policy) in eng.state.service_policies() {
                eng.aux.log(format!(
                    "dualperf route: {name}: service-policy output {policy}"
                ));
            }
            true
        }
        Err(e) => {
            eng.aux.log(format!(
                "dualperf route: reload refused, policies unchanged: {e}"
            ));
            eng.state.refused(e);
            false
        }
    }
}

/// What the router's RSVP takes part with: R, K and the interfaces with a budget.
fn rsvp_note(r: &router::rsvp::RsvpSetup) -> String {
    let budgets = r
        .reservable_bps
        .iter()
        .filter_map(|b| b.map(|bps| format!("{bps} bit/s")))
        .collect::<Vec<_>>();
    format!(
        "RSVP on (refresh {} ms, keep {}); reservable: {}",
        r.params.refresh.as_nanos() / 1_000_000,
        r.params.keep,
        if budgets.is_empty() {
            "none (transit)".to_owned()
        } else {
            budgets.join(", ")
        }
    )
}

/// The QoS file's name as the user gave it; empty without one.
fn qos_file(path: Option<&Path>) -> String {
    path.map_or(String::new(), |p| p.display().to_string())
}

/// Each interface's egress and the RSVP setup ([`router::rsvp::build`]) with the QoS
/// file at `qos_path`, if any, read now; the error as the user and the stats see it.
fn load_egress(
    cfg: &CheckedConfig,
    qos_path: Option<&Path>,
    now: Instant,
) -> std::result::Result<router::rsvp::Built, String> {
    let text = match qos_path {
        None => None,
        Some(path) => Some(
            std::fs::read_to_string(path)
                .map_err(|e| format!("cannot read {}: {e}", path.display()))?,
        ),
    };
    let name = qos_file(qos_path);
    let file = text.as_deref().map(|text| QosFile { name: &name, text });
    router::rsvp::build(cfg, file, now).map_err(|e| e.to_string())
}
