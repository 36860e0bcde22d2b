//! `dualperf route`: a userspace IPv4/IPv6 router, the driver of the sans-IO `router`
//! crate. The decisions are `router`'s (`forward::Forwarder`) and `qos`'s (one
//! `link::Link` or service policy per egress); the configuration, QoS file and stats
//! document are `router`'s types. `engine.rs` moves frames between them and `AF_PACKET`
//! rings; `aux.rs` is the second thread that writes the stats file, captures and log
//! lines, so nothing on the forwarding thread waits for a disk.

mod aux;
mod engine;
mod pcap;

use std::path::PathBuf;

use anyhow::{Context, Result};
use netio::packet::{PacketSocket, RingConfig};

use self::aux::{Aux, Sinks};
use self::engine::{CpuBase, Engine};
use qos::link::{Link, LinkParams};
use qos::policy::Policy;
use router::config::{CheckedConfig, RouterConfig};
use router::forward::{Forwarder, Interface};
use router::stats::{PolicyStats, QosReloads};
use wire::ethernet;
use wire::time::{Duration, Instant};

use crate::usage;

/// The least busy-poll window after a frame: about one wake-up's latency.
const BUSY_POLL_LEAST_NS: u64 = 50_000;

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

/// What sends on one interface: the emulated link alone, or a service policy in front
/// of it.
enum Egress {
    Link(Box<Link>),
    Policy(Box<Policy>),
}

impl Egress {
    fn enqueue(&mut self, frame: Vec<u8>, now: Instant, cpu: &mut CpuBase) {
        // A drop is counted in the link's or the policy's stats.
        match self {
            Self::Link(l) => {
                let _ = l.enqueue(frame, now);
            }
            Self::Policy(p) => {
                // The policy's own cost (classify, mark, police, queue), by the
                // monotonic clock (a vDSO read) around it.
                let t0 = netio::clock::mono_ns();
                let _ = p.enqueue(frame, now);
                cpu.qos_ns += netio::clock::mono_ns().saturating_sub(t0);
                cpu.qos_frames += 1;
            }
        }
    }

    /// A frame that crosses the egress at once (see [`Link::pass`]); never with a
    /// service policy, which classifies and counts every frame.
    fn pass(&mut self, len: usize, now: Instant) -> bool {
        match self {
            Self::Link(l) => l.pass(len, now),
            Self::Policy(_) => false,
        }
    }

    fn dequeue(&mut self, now: Instant) -> Option<Vec<u8>> {
        match self {
            Self::Link(l) => l.dequeue(now),
            Self::Policy(p) => p.dequeue(now),
        }
    }

    fn poll_timeout(&self) -> Option<Instant> {
        match self {
            Self::Link(l) => l.poll_timeout(),
            Self::Policy(p) => p.poll_timeout(),
        }
    }

    fn link(&self) -> &Link {
        match self {
            Self::Link(l) => l,
            Self::Policy(p) => p.link(),
        }
    }

    fn qos_stats(&self) -> Option<PolicyStats> {
        match self {
            Self::Link(_) => None,
            Self::Policy(p) => Some(PolicyStats {
                policy: p.name().to_owned(),
                classes: p.stats(),
                reservations: p.reservation_stats(),
            }),
        }
    }
}

pub(crate) fn run(args: RouteArgs) -> Result<()> {
    let text = crate::args::read_input(&args.config, "the router config")?;
    let file: RouterConfig = match toml::from_str(&text) {
        Ok(f) => f,
        Err(e) => usage!("{}: {}", args.config.display(), e.message()),
    };
    let cfg = match file.check() {
        Ok(c) => c,
        Err(e) => usage!("{}: {e}", args.config.display()),
    };
    let mut socks = Vec::new();
    let mut ifaces = Vec::new();
    for (i, name) in cfg.names.iter().enumerate() {
        // A slot holds the frame after 66 bytes of ring header: room for the MTU.
        let ring = RingConfig {
            frame_size: (cfg.mtu[i] + 14 + 66).next_power_of_two().max(2048),
            rx_frames: args.ring_slots.max(64),
            tx_frames: args.ring_slots.max(64),
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
        if let Ok(kernel_mtu) = sock.mtu() {
            if kernel_mtu < cfg.mtu[i] {
                usage!(
                    "{name}: the configured MTU {} is above the interface's {kernel_mtu}: the kernel would refuse the larger frames",
                    cfg.mtu[i]
                );
            }
        }
        ifaces.push(Interface {
            name: name.clone(),
            mac,
            ipv4: Some(cfg.ipv4[i]),
            ipv6: Some(cfg.ipv6[i]),
            mtu: cfg.mtu[i],
        });
        socks.push(sock);
    }
    let fwd = match Forwarder::new(ifaces, cfg.routes.clone(), cfg.neighbors.clone()) {
        Ok(f) => f,
        Err(e) => usage!("{}: {e}", args.config.display()),
    };
    let start = Instant::from_nanos(netio::clock::mono_ns());
    let mut qos = QosReloads::default();
    let links = match load_egress(&cfg, args.qos.as_deref(), start) {
        Ok(l) => l,
        Err(e) => usage!("{e}"),
    };
    let mut pcaps = Vec::new();
    if let Some(dir) = &args.pcap {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
        for name in &cfg.names {
            let path = dir.join(pcap::file_name(name));
            let f = std::fs::File::create(&path)
                .with_context(|| format!("cannot create {}", path.display()))?;
            pcaps.push(pcap::PcapWriter::new(std::io::BufWriter::new(f))?);
        }
    }
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
    let stop = crate::interrupt::flag();
    let asked = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    signal_hook::flag::register(signal_hook::consts::SIGUSR1, asked.clone())
        .context("cannot install the SIGUSR1 handler")?;
    let reload = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    signal_hook::flag::register(signal_hook::consts::SIGUSR2, reload.clone())
        .context("cannot install the SIGUSR2 handler")?;
    for (name, l) in cfg.names.iter().zip(&links) {
        if let Egress::Policy(p) = l {
            crate::out::note!("dualperf route: {name}: service-policy output {}", p.name());
        }
    }
    crate::out::note!(
        "dualperf route: forwarding between {} ({} routes)",
        cfg.names.join(", "),
        cfg.routes.len()
    );
    let mut eng = Engine::new(cfg.names.clone(), socks, fwd, links, aux);
    let mut busy_poll = netio::poll::BusyPoll::new(BUSY_POLL_LEAST_NS, args.busy_poll.as_nanos());
    let started = netio::clock::mono_ns();
    let mut next_stats = started;
    let mut last_frame_ns = 0u64;
    // The start of the previous turn, unless the loop slept since.
    let mut prev_turn: Option<u64> = None;
    while !stop.load(std::sync::atomic::Ordering::Relaxed) {
        let t0 = netio::clock::mono_ns();
        if let Some(p) = prev_turn {
            eng.record_gap(t0.saturating_sub(p));
        }
        let handled = eng.turn(t0);
        // Where the frames' work ends: the cost per frame leaves out the counters below.
        let t_frames = if handled > 0 {
            netio::clock::mono_ns()
        } else {
            t0
        };
        let mut busy = handled > 0;
        let mut restart = false;
        // SIGUSR2: read the QoS file again and start every egress afresh (counters from
        // zero; frames still queued are discarded). A file that does not read keeps the
        // running policies and says why in the stats.
        let reloaded = reload.swap(false, std::sync::atomic::Ordering::Relaxed);
        if reloaded {
            busy = true;
            match load_egress(&cfg, args.qos.as_deref(), Instant::from_nanos(t0)) {
                Ok(l) => {
                    eng.links = l;
                    // The counters start afresh after this turn, which is the reload's,
                    // not the traffic's.
                    restart = true;
                    qos.reloads += 1;
                    qos.error = None;
                    eng.aux
                        .log(format!("dualperf route: reloaded {}", qos_file(&args)));
                    for (name, l) in cfg.names.iter().zip(&eng.links) {
                        if let Egress::Policy(p) = l {
                            let line = format!(
                                "dualperf route: {name}: service-policy output {}",
                                p.name()
                            );
                            eng.aux.log(line);
                        }
                    }
                }
                Err(e) => {
                    eng.aux.log(format!(
                        "dualperf route: reload refused, policies unchanged: {e}"
                    ));
                    qos.error = Some(e);
                    qos.refused += 1;
                }
            }
        }
        // Every 500 ms, and at once on SIGUSR1 (`dualperf lab status` asks so) and
        // after a reload: a snapshot for the writer thread.
        let usr1 = asked.swap(false, std::sync::atomic::Ordering::Relaxed);
        if t0 >= next_stats || reloaded || usr1 {
            busy = true;
            eng.usr1_answered += u64::from(usr1);
            eng.read_kernel_drops();
            let doc = eng.stats(&qos, t0 - started);
            eng.aux.stats(doc);
            next_stats = t0 + 500_000_000;
        } else {
            eng.aux.retry();
        }
        let t1 = netio::clock::mono_ns();
        eng.record_turn(t1.saturating_sub(t0), busy, t_frames - t0, handled);
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
                eng.record_yield(netio::clock::mono_ns().saturating_sub(t1));
                prev_turn = None;
            }
            continue;
        }
        // Sleep until a frame arrives, the next link event, or 100 ms (to see Ctrl-C
        // and refresh the counters); while a TX ring is backed up, retry in 200 µs.
        let (event, backlog) = eng.wake_at();
        let mut wake = t1 + 100_000_000;
        if let Some(t) = event {
            wake = wake.min(t);
        }
        if backlog {
            wake = wake.min(t1 + 200_000);
        }
        if wake <= t1 {
            prev_turn = (!restart).then_some(t0);
            continue;
        }
        let readable = eng.sleep(wake - t1)?;
        busy_poll.after_sleep(netio::clock::mono_ns().saturating_sub(t1), readable);
        prev_turn = None;
    }
    eng.read_kernel_drops();
    let doc = eng.stats(&qos, netio::clock::mono_ns() - started);
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

fn qos_file(args: &RouteArgs) -> String {
    args.qos
        .as_deref()
        .map_or(String::new(), |p| p.display().to_string())
}

/// Each interface's egress: its link, behind the service policy the QoS file (if any)
/// attaches to it, whose tx-ring replaces the link's queue limit.
fn load_egress(
    cfg: &CheckedConfig,
    qos_path: Option<&std::path::Path>,
    now: Instant,
) -> std::result::Result<Vec<Egress>, String> {
    let qos = match qos_path {
        None => None,
        Some(path) => {
            let text = std::fs::read_to_string(path)
                .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
            let q = router::qosconf::QosConfig::parse(&text)
                .map_err(|e| format!("{}: {e}", path.display()))?;
            for (iface, _, line) in &q.service {
                if !cfg.names.contains(iface) {
                    return Err(format!(
                        "{}: line {}: service_policy on '{iface}': the router has no such interface ({})",
                        path.display(),
                        line.unwrap_or(0),
                        cfg.names.join(", ")
                    ));
                }
            }
            Some((q, path.display().to_string()))
        }
    };
    let mut links = Vec::new();
    for (i, p) in cfg.links.iter().enumerate() {
        let seed = cfg.seed.wrapping_mul(1000).wrapping_add(i as u64);
        let policy = match &qos {
            None => None,
            Some((q, name)) => q
                .params_for(&cfg.names[i], p.rate_bps)
                .map_err(|e| format!("{name}: {e}"))?
                .map(|x| (x, q.policy_of(&cfg.names[i]).map_or(2, |s| s.tx_ring), name)),
        };
        links.push(match policy {
            None => Egress::Link(Box::new(
                Link::new(p.clone(), seed).map_err(|e| format!("{}: {e}", cfg.names[i]))?,
            )),
            Some((params, tx_ring, name)) => {
                let ring = LinkParams {
                    limit_packets: Some(tx_ring),
                    limit_bytes: None,
                    ..p.clone()
                };
                let link = Link::new(ring, seed).map_err(|e| format!("{}: {e}", cfg.names[i]))?;
                let pol =
                    Policy::new(params, link, seed, now).map_err(|e| format!("{name}: {e}"))?;
                Egress::Policy(Box::new(pol))
            }
        });
    }
    Ok(links)
}
