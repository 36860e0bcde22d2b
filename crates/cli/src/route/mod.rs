//! `dualperf route`: a userspace IPv4/IPv6 router. The decisions are `qos`'s
//! (`forward::Forwarder`, one `link::Link` per egress); this driver moves frames between
//! them and `AF_PACKET` rings, and sleeps until the next frame or the next link event.

mod pcap;

use std::collections::VecDeque;
use std::net::IpAddr;
use std::path::PathBuf;

use anyhow::{Context, Result};
use lab::topology::{Loss, RouterConfig};
use netio::packet::{PacketSocket, RingConfig};
use qos::forward::{Forwarder, Interface, Route};
use qos::link::{Link, LinkParams, LossModel};
use qos::policy::Policy;
use wire::ethernet;
use wire::time::{Duration, Instant};

use crate::usage;

/// Forward IPv4 and IPv6 between interfaces, emulating each egress link.
///
/// Frames are read and written through AF_PACKET mmap rings on the configured
/// interfaces (veths of a `dualperf lab`, or real NICs). The router decrements TTL and
/// hop limit (IPv4 checksum updated incrementally, RFC 1624), answers ARP, neighbour
/// solicitations and echo requests for its own addresses, and sends ICMP time exceeded,
/// packet too big and fragmentation needed. Each egress is a link with a rate (counting
/// Ethernet frame bytes), delay, jitter, random loss and a tail-drop queue; see
/// crates/qos/src/link.rs. The kernel's own addresses and forwarding should be off on
/// these interfaces (`dualperf lab up` does that). Addresses, routes and neighbours must
/// lie in the benchmarking ranges 198.18.0.0/15 and 2001:2::/48.
#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:
  dualperf route --config r1.toml --stats r1.stats.json
  dualperf route --config r1.toml --pcap captures/

The configuration is what `dualperf lab up` writes for each router (TOML: [[interface]]
with name, ipv4, ipv6, mtu and emulation; [[route]]; [[neighbor]]); see
crates/lab/src/topology.rs, RouterConfig.")]
pub(crate) struct RouteArgs {
    /// The router configuration (TOML).
    #[arg(long, value_name = "FILE")]
    config: PathBuf,
    /// Keep the counters (JSON) in FILE, rewritten every 500 ms, at once on SIGUSR1, and
    /// at exit.
    #[arg(long, value_name = "FILE")]
    stats: Option<PathBuf>,
    /// Capture every interface into DIR/IFACE.pcap (frames received and sent).
    #[arg(long, value_name = "DIR")]
    pcap: Option<PathBuf>,
    /// QoS policies (TOML modelled on MQC: [[class_map]], [[policy_map]] with
    /// [[policy_map.class]], [[service_policy]] interface/output); see
    /// crates/lab/src/qosconf/mod.rs and plans/qos/. A policy's tx_ring replaces the
    /// interface's queue limit; its class queues hold the rest. SIGUSR2 reads the file
    /// again and restarts every egress (counters from zero); a file that does not read
    /// leaves the policies as they were.
    #[arg(long, value_name = "FILE")]
    qos: Option<PathBuf>,
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

    fn qos_json(&self) -> serde_json::Value {
        match self {
            Self::Link(_) => serde_json::Value::Null,
            Self::Policy(p) => serde_json::json!({
                "policy": p.name(),
                "classes": p.stats(),
                "reservations": p.reservation_stats(),
            }),
        }
    }
}

/// Validated configuration: what the forwarder and the links are built from.
struct Config {
    names: Vec<String>,
    ipv4: Vec<(std::net::Ipv4Addr, u8)>,
    ipv6: Vec<(std::net::Ipv6Addr, u8)>,
    mtu: Vec<u32>,
    links: Vec<LinkParams>,
    routes: Vec<Route>,
    neighbors: Vec<(usize, IpAddr, ethernet::Address)>,
    seed: u64,
}

fn prefix<A: std::str::FromStr>(s: &str) -> Option<(A, u8)> {
    let (a, len) = s.split_once('/')?;
    Some((a.parse().ok()?, len.parse().ok()?))
}

fn loss(l: Loss) -> LossModel {
    match l {
        Loss::None => LossModel::None,
        Loss::Bernoulli { p } => LossModel::Bernoulli { p },
        Loss::GilbertElliott {
            p,
            r,
            loss_good,
            loss_bad,
        } => LossModel::GilbertElliott {
            p,
            r,
            loss_good,
            loss_bad,
        },
    }
}

/// Whether `ip` is in the benchmarking ranges (198.18.0.0/15, RFC 2544; 2001:2::/48,
/// RFC 5180): the router takes no other address, so a mistaken configuration on a real
/// network cannot answer ARP or NDP for someone else's.
fn benchmark_range(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(a) => {
            u32::from(a) & 0xfffe_0000 == u32::from(std::net::Ipv4Addr::new(198, 18, 0, 0))
        }
        IpAddr::V6(a) => {
            let s = a.segments();
            s[0] == 0x2001 && s[1] == 0x0002 && s[2] == 0
        }
    }
}

fn config(file: &RouterConfig) -> std::result::Result<Config, String> {
    let mut c = Config {
        names: Vec::new(),
        ipv4: Vec::new(),
        ipv6: Vec::new(),
        mtu: Vec::new(),
        links: Vec::new(),
        routes: Vec::new(),
        neighbors: Vec::new(),
        seed: file.seed,
    };
    if file.interfaces.is_empty() {
        return Err("no [[interface]]".into());
    }
    for f in &file.interfaces {
        c.names.push(f.name.clone());
        c.ipv4.push(
            prefix(&f.ipv4).ok_or_else(|| {
                format!("interface {}: ipv4 '{}' is not ADDR/LEN", f.name, f.ipv4)
            })?,
        );
        c.ipv6.push(
            prefix(&f.ipv6).ok_or_else(|| {
                format!("interface {}: ipv6 '{}' is not ADDR/LEN", f.name, f.ipv6)
            })?,
        );
        for ip in [
            IpAddr::from(c.ipv4[c.ipv4.len() - 1].0),
            IpAddr::from(c.ipv6[c.ipv6.len() - 1].0),
        ] {
            if !benchmark_range(ip) {
                return Err(format!(
                    "interface {}: {ip} is outside 198.18.0.0/15 and 2001:2::/48, the only ranges dualperf route takes",
                    f.name
                ));
            }
        }
        c.mtu.push(f.mtu);
        let e = &f.emulation;
        let params = LinkParams {
            rate_bps: e.rate_bps,
            overhead_bytes: 0,
            delay: Duration::from_nanos(e.delay_ns),
            jitter: Duration::from_nanos(e.jitter_ns),
            loss: loss(e.loss),
            limit_packets: Some(e.limit_packets),
            limit_bytes: e.limit_bytes,
        };
        params
            .validate()
            .map_err(|e| format!("interface {}: {e}", f.name))?;
        c.links.push(params);
    }
    let iface = |name: &str| {
        c.names
            .iter()
            .position(|n| n == name)
            .ok_or_else(|| format!("no interface '{name}'"))
    };
    for r in &file.routes {
        let (p, len) = prefix::<IpAddr>(&r.prefix)
            .ok_or_else(|| format!("route prefix '{}' is not ADDR/LEN", r.prefix))?;
        let via: IpAddr = r
            .via
            .parse()
            .map_err(|_| format!("route via '{}' is not an address", r.via))?;
        let i = iface(&r.interface)?;
        if !benchmark_range(p) || !benchmark_range(via) {
            return Err(format!(
                "route {} via {via}: outside 198.18.0.0/15 and 2001:2::/48",
                r.prefix
            ));
        }
        c.routes.push(Route {
            prefix: p,
            len,
            via: Some(via),
            iface: i,
        });
    }
    for n in &file.neighbors {
        let ip: IpAddr =
            n.ip.parse()
                .map_err(|_| format!("neighbor ip '{}' is not an address", n.ip))?;
        let mac: ethernet::Address = n
            .mac
            .parse()
            .map_err(|_| format!("neighbor mac '{}' is not a MAC address", n.mac))?;
        let i = iface(&n.interface)?;
        if !benchmark_range(ip) {
            return Err(format!(
                "neighbor {ip}: outside 198.18.0.0/15 and 2001:2::/48"
            ));
        }
        c.neighbors.push((i, ip, mac));
    }
    Ok(c)
}

pub(crate) fn run(args: RouteArgs) -> Result<()> {
    let text = std::fs::read_to_string(&args.config)
        .with_context(|| format!("cannot read {}", args.config.display()))?;
    let file: RouterConfig = match toml::from_str(&text) {
        Ok(f) => f,
        Err(e) => usage!("{}: {}", args.config.display(), e.message()),
    };
    let cfg = match config(&file) {
        Ok(c) => c,
        Err(e) => usage!("{}: {e}", args.config.display()),
    };
    let mut socks = Vec::new();
    let mut ifaces = Vec::new();
    for (i, name) in cfg.names.iter().enumerate() {
        // A slot holds the frame after 66 bytes of ring header: room for the MTU.
        let ring = RingConfig {
            frame_size: (cfg.mtu[i] + 14 + 66).next_power_of_two().max(2048),
            ..RingConfig::default()
        };
        let sock = PacketSocket::open(name, &ring)
            .with_context(|| format!("cannot open AF_PACKET on {name}"))?;
        let mac = ethernet::Address(sock.mac().with_context(|| format!("{name}: no MAC"))?);
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
    let mut fwd = match Forwarder::new(ifaces, cfg.routes.clone(), cfg.neighbors.clone()) {
        Ok(f) => f,
        Err(e) => usage!("{}: {e}", args.config.display()),
    };
    let start = Instant::from_nanos(netio::clock::mono_ns());
    let mut qos = QosState::default();
    // Where the CPU accounting starts: now, then at each reload.
    let mut cpu = CpuBase {
        thread_cpu_ns: netio::clock::thread_cpu_ns(),
        frames: 0,
        busy_ns: 0,
        qos_ns: 0,
        qos_frames: 0,
    };
    let mut links = match load_egress(&cfg, args.qos.as_deref(), start) {
        Ok(l) => l,
        Err(e) => usage!("{e}"),
    };
    let mut pcaps = Vec::new();
    if let Some(dir) = &args.pcap {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
        for name in &cfg.names {
            let path = dir.join(format!("{}.pcap", lab::store::file_safe(name)));
            let f = std::fs::File::create(&path)
                .with_context(|| format!("cannot create {}", path.display()))?;
            pcaps.push(pcap::PcapWriter::new(std::io::BufWriter::new(f))?);
        }
    }
    let stop = crate::interrupt::flag();
    let asked = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    signal_hook::flag::register(signal_hook::consts::SIGUSR1, asked.clone())
        .context("cannot install the SIGUSR1 handler")?;
    let reload = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    signal_hook::flag::register(signal_hook::consts::SIGUSR2, reload.clone())
        .context("cannot install the SIGUSR2 handler")?;
    let mut io = vec![IoStats::default(); socks.len()];
    // Frames a full TX ring could not take yet, per interface (bounded).
    let mut pending: Vec<VecDeque<Vec<u8>>> = vec![VecDeque::new(); socks.len()];
    let fds: Vec<_> = socks.iter().map(PacketSocket::fd).collect();
    let started = netio::clock::mono_ns();
    let mut next_stats = started;
    for (name, l) in cfg.names.iter().zip(&links) {
        if let Egress::Policy(p) = l {
            eprintln!("dualperf route: {name}: service-policy output {}", p.name());
        }
    }
    eprintln!(
        "dualperf route: forwarding between {} ({} routes)",
        cfg.names.join(", "),
        cfg.routes.len()
    );
    let mut readable = vec![false; socks.len()];
    while !stop.load(std::sync::atomic::Ordering::Relaxed) {
        let now_ns = netio::clock::mono_ns();
        let now = Instant::from_nanos(now_ns);
        // The CPU time of frame handling (receive, forward, classify, queue, send), not
        // of waking idle or writing the counters: what a frame costs the router.
        let cpu_before = netio::clock::thread_cpu_ns();
        let mut handled = 0u64;
        for (i, sock) in socks.iter_mut().enumerate() {
            let mut frames: Vec<Vec<u8>> = Vec::new();
            let got = sock.recv_batch(256, |frame, info| {
                if let Some(p) = pcaps.get_mut(i) {
                    let _ = p.write(info.timestamp_ns, frame);
                }
                if info.truncated {
                    io[i].rx_truncated += 1;
                } else {
                    frames.push(frame.to_vec());
                }
            });
            match got {
                // Readable with nothing in the ring: a socket error (the interface went
                // down, say). Reading it clears it, so poll stops reporting it.
                Ok(0) if readable[i] => {
                    if let Ok(Some(e)) = sock.take_error() {
                        io[i].error(&cfg.names[i], &e);
                    }
                }
                Ok(_) => {}
                Err(e) => io[i].error(&cfg.names[i], &e),
            }
            handled += frames.len() as u64;
            for f in frames {
                if let Some(out) = fwd.handle_frame(i, &f) {
                    links[out.iface].enqueue(out.frame, now, &mut cpu);
                }
            }
        }
        for (i, link) in links.iter_mut().enumerate() {
            while let Some(f) = link.dequeue(now) {
                if pending[i].len() >= MAX_PENDING {
                    io[i].tx_backlog_drops += 1;
                } else {
                    pending[i].push_back(f);
                }
            }
            let mut sent = false;
            while let Some(f) = pending[i].front() {
                match socks[i].send(f) {
                    Ok(true) => {
                        if let Some(p) = pcaps.get_mut(i) {
                            let _ = p.write(netio::clock::wall_ns(), f);
                        }
                        pending[i].pop_front();
                        sent = true;
                        handled += 1;
                    }
                    Ok(false) => {
                        io[i].tx_ring_full += 1;
                        break;
                    }
                    Err(e) => {
                        io[i].error(&cfg.names[i], &e);
                        pending[i].pop_front();
                    }
                }
            }
            if sent || !pending[i].is_empty() {
                if let Err(e) = socks[i].flush() {
                    io[i].error(&cfg.names[i], &e);
                }
            }
        }
        if handled > 0 {
            cpu.busy_ns += netio::clock::thread_cpu_ns().saturating_sub(cpu_before);
        }
        // SIGUSR2: read the QoS file again and start every egress afresh (counters from
        // zero; frames still queued are discarded). A file that does not read keeps the
        // running policies and says why in the stats.
        let reloaded = reload.swap(false, std::sync::atomic::Ordering::Relaxed);
        if reloaded {
            match load_egress(&cfg, args.qos.as_deref(), now) {
                Ok(l) => {
                    links = l;
                    cpu = CpuBase {
                        thread_cpu_ns: netio::clock::thread_cpu_ns(),
                        frames: rx_frames(&fwd),
                        busy_ns: 0,
                        qos_ns: 0,
                        qos_frames: 0,
                    };
                    qos.reloads += 1;
                    qos.error = None;
                    eprintln!("dualperf route: reloaded {}", qos_file(&args));
                    for (name, l) in cfg.names.iter().zip(&links) {
                        if let Egress::Policy(p) = l {
                            eprintln!("dualperf route: {name}: service-policy output {}", p.name());
                        }
                    }
                }
                Err(e) => {
                    eprintln!("dualperf route: reload refused, policies unchanged: {e}");
                    qos.error = Some(e);
                    qos.refused += 1;
                }
            }
        }
        // Every 500 ms, and at once on SIGUSR1 (`dualperf lab status` asks so) and
        // after a reload.
        if now_ns >= next_stats
            || reloaded
            || asked.swap(false, std::sync::atomic::Ordering::Relaxed)
        {
            for (i, sock) in socks.iter().enumerate() {
                // The kernel's counters reset on every read: keep running totals.
                if let Ok(k) = sock.stats() {
                    io[i].kernel_rx_drops += k.drops;
                }
            }
            write_stats(
                &args,
                &stats_json(
                    &fwd,
                    &links,
                    &socks,
                    &io,
                    &qos,
                    &cpu_since(&cpu, &fwd),
                    now_ns - started,
                ),
            );
            next_stats = now_ns + 500_000_000;
        }
        // Sleep until a frame arrives, the next link event, or 100 ms (to see Ctrl-C
        // and refresh the counters); while a TX ring is backed up, retry in 200 µs.
        let mut wake = now_ns + 100_000_000;
        for l in &links {
            if let Some(t) = l.poll_timeout() {
                wake = wake.min(t.as_nanos());
            }
        }
        if pending.iter().any(|p| !p.is_empty()) {
            wake = wake.min(now_ns + 200_000);
        }
        let timeout = wake.saturating_sub(netio::clock::mono_ns());
        readable = netio::poll::poll_readable(&fds, Some(timeout))?;
    }
    for p in &mut pcaps {
        p.flush()?;
    }
    for (i, sock) in socks.iter().enumerate() {
        if let Ok(k) = sock.stats() {
            io[i].kernel_rx_drops += k.drops;
        }
    }
    let doc = stats_json(
        &fwd,
        &links,
        &socks,
        &io,
        &qos,
        &cpu_since(&cpu, &fwd),
        netio::clock::mono_ns() - started,
    );
    write_stats(&args, &doc);
    if args.stats.is_none() {
        eprintln!("{}", serde_json::to_string_pretty(&doc)?);
    }
    Ok(())
}

/// The router thread's CPU time spent handling frames, and the frames it received, since
/// it started or last reloaded: its cost per frame (receive, forward, classify, queue,
/// send), as seed 001 measures a router's processing load. Loop turns that handled no
/// frame (timer wake-ups, writing these counters) are left out.
#[derive(Debug, Default, serde::Serialize)]
struct CpuStats {
    /// CPU time of the forwarding thread in turns that handled frames (user + system,
    /// CLOCK_THREAD_CPUTIME_ID), ns.
    busy_ns: u64,
    /// All the thread's CPU time, idle turns and counters included, ns.
    thread_cpu_ns: u64,
    /// Frames received on every interface.
    frames: u64,
    /// `busy_ns / frames`; `null` before the first frame.
    cpu_ns_per_frame: Option<f64>,
    /// Time spent inside service policies' enqueue (classification, reservations,
    /// marking, policing, WRED, queueing), ns.
    qos_ns: u64,
    /// Frames offered to service policies.
    qos_frames: u64,
    /// `qos_ns / qos_frames`: a policy's cost per frame; `null` without a policy.
    qos_ns_per_frame: Option<f64>,
}

/// Where the CPU accounting starts: at start, then at each reload.
struct CpuBase {
    thread_cpu_ns: u64,
    frames: u64,
    busy_ns: u64,
    qos_ns: u64,
    qos_frames: u64,
}

fn cpu_since(base: &CpuBase, fwd: &Forwarder) -> CpuStats {
    let frames = rx_frames(fwd).saturating_sub(base.frames);
    CpuStats {
        busy_ns: base.busy_ns,
        thread_cpu_ns: netio::clock::thread_cpu_ns().saturating_sub(base.thread_cpu_ns),
        frames,
        cpu_ns_per_frame: (frames > 0).then(|| base.busy_ns as f64 / frames as f64),
        qos_ns: base.qos_ns,
        qos_frames: base.qos_frames,
        qos_ns_per_frame: (base.qos_frames > 0)
            .then(|| base.qos_ns as f64 / base.qos_frames as f64),
    }
}

fn rx_frames(fwd: &Forwarder) -> u64 {
    fwd.stats().iter().map(|s| s.rx_frames).sum()
}

/// What became of the QoS file's reloads (SIGUSR2; SIGHUP, like SIGINT and SIGTERM, stops the router).
#[derive(Debug, Default, serde::Serialize)]
struct QosState {
    /// Reloads that took effect (each restarts every egress's counters).
    reloads: u64,
    /// Reloads refused (the file did not read); the policies before stayed.
    refused: u64,
    /// Why the last reload was refused, until one takes effect.
    error: Option<String>,
}

fn qos_file(args: &RouteArgs) -> String {
    args.qos
        .as_deref()
        .map_or(String::new(), |p| p.display().to_string())
}

/// Each interface's egress: its link, behind the service policy the QoS file (if any)
/// attaches to it, whose tx-ring replaces the link's queue limit.
fn load_egress(
    cfg: &Config,
    qos_path: Option<&std::path::Path>,
    now: Instant,
) -> std::result::Result<Vec<Egress>, String> {
    let qos = match qos_path {
        None => None,
        Some(path) => {
            let text = std::fs::read_to_string(path)
                .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
            let q = lab::qosconf::QosConfig::parse(&text)
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

/// Most frames held for a full TX ring per interface, beyond the link's own queue.
const MAX_PENDING: usize = 1024;

/// What the driver counts per interface beyond the forwarder and the link.
#[derive(Clone, Debug, Default, serde::Serialize)]
struct IoStats {
    /// Sends that found the TX ring full (the frame waited for the next try).
    tx_ring_full: u64,
    /// Frames dropped because MAX_PENDING were already waiting for the TX ring.
    tx_backlog_drops: u64,
    /// Frames received truncated (longer than a ring slot): dropped.
    rx_truncated: u64,
    /// Frames the kernel dropped for lack of room in the RX ring (running total).
    kernel_rx_drops: u64,
    /// Socket errors (the interface went down, …); the router carries on.
    io_errors: u64,
}

impl IoStats {
    fn error(&mut self, iface: &str, e: &std::io::Error) {
        self.io_errors += 1;
        // The first, then every thousandth: an interface that stays down must not
        // flood the log.
        if self.io_errors % 1000 == 1 {
            eprintln!("dualperf route: {iface}: {e} ({} so far)", self.io_errors);
        }
    }
}

/// Replace the stats file (if there is one) with `doc`, whole.
fn write_stats(args: &RouteArgs, doc: &serde_json::Value) {
    if let Some(path) = &args.stats {
        let tmp = path.with_extension("json.tmp");
        let ok = std::fs::write(&tmp, serde_json::to_vec_pretty(&doc).unwrap_or_default())
            .and_then(|()| std::fs::rename(&tmp, path));
        if let Err(e) = ok {
            eprintln!(
                "dualperf route: warning: cannot write {}: {e}",
                path.display()
            );
        }
    }
}

/// The counters: per interface what arrived (the forwarder's view) and what left (the
/// egress link's view), plus the kernel's ring drops.
fn stats_json(
    fwd: &Forwarder,
    links: &[Egress],
    socks: &[PacketSocket],
    io: &[IoStats],
    qos: &QosState,
    cpu: &CpuStats,
    uptime_ns: u64,
) -> serde_json::Value {
    let ifaces: Vec<serde_json::Value> = fwd
        .interfaces()
        .iter()
        .zip(fwd.stats())
        .zip(links)
        .zip(socks)
        .zip(io)
        .map(|((((f, rx), egress), sock), io)| {
            let link = egress.link();
            serde_json::json!({
                "name": f.name,
                "mac": f.mac.to_string(),
                "ingress": rx,
                "egress": link.stats(),
                "egress_link": link.params(),
                "qos": egress.qos_json(),
                "io": io,
                "tx_wrong_format": sock.tx_wrong_format(),
            })
        })
        .collect();
    serde_json::json!({
        "format_version": 1,
        "uptime_ns": uptime_ns,
        "qos": qos,
        "cpu": cpu,
        "interfaces": ifaces,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_benchmarking_addresses_are_taken() {
        for ok in [
            "198.18.0.1",
            "198.19.255.254",
            "2001:2::1",
            "2001:2:0:ffff::1",
        ] {
            assert!(benchmark_range(ok.parse().unwrap()), "{ok}");
        }
        for bad in [
            "198.20.0.1",
            "192.168.1.1",
            "10.0.0.1",
            "2001:2:1::1",
            "2001:db8::1",
            "::1",
        ] {
            assert!(!benchmark_range(bad.parse().unwrap()), "{bad}");
        }
    }
}
