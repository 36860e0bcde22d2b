//! `dualperf compare`: the main job. A standard battery run back to back over IPv4 and
//! IPv6 on loopback, reported side by side with the relative difference.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use anyhow::{Context, Result};
use results::compare::{CompareReport, Delta, Point, Side};
use traffic::{FlowSpec, Rate, StopSpec};
use wire::control::{Meter, Protocol};
use wire::time::Duration;

use crate::recv::{Receiver, ReceiverConfig};
use crate::send::{run_session, FlowOutcome, SendConfig};
use crate::usage;

/// Compare IPv4 and IPv6 on this host: the main battery, side by side.
///
/// UDP and TCP at several packet sizes, each test run over 127.0.0.1 and then over ::1
/// (or, with --lab, through the two-hop namespace lab and its 10 Mbit/s bottleneck)
/// with the round-trip meter, and one table with IPv4, IPv6 and the relative difference
/// for throughput, RTT, jitter and loss.
///
/// Starts its own receiver; nothing else is needed. Throughput is the receiver's payload
/// bit rate; RTT and jitter come from the sender's echoes (jitter: D-ITG's mean |ΔD|).
#[derive(Debug, clap::Args)]
pub(crate) struct CompareArgs {
    /// A short battery (1 s per size test at 5000 pkt/s, 0.5 s per VoIP test) that
    /// finishes in under 30 s.
    #[arg(long)]
    quick: bool,
    /// Length of each test.
    #[arg(long, value_parser = crate::args::duration, value_name = "DURATION")]
    duration: Option<Duration>,
    /// Send rate of each test.
    #[arg(long)]
    rate: Option<Rate>,
    /// Payload sizes in bytes, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "64,512,1024,1472")]
    sizes: Vec<u32>,
    /// Protocols, comma-separated: udp, tcp.
    #[arg(long, value_delimiter = ',', default_value = "udp,tcp")]
    protocols: Vec<String>,
    /// Leave out the VoIP tests (D-ITG's five codec models with an RTP header).
    #[arg(long)]
    no_voip: bool,
    /// Leave out the gaming tests (D-ITG's Quake 3 and Counter-Strike active and idle
    /// models; each is run with the same seed over both families, so IPv4 and IPv6 carry
    /// the very same packet sequence).
    #[arg(long)]
    no_games: bool,
    /// Run through the namespace testbed instead of loopback: builds the two-hop lab
    /// (sender — r1 — 10 Mbit/s — r2 — receiver, dualperf route in both routers) for
    /// the battery and removes it afterwards. Needs root.
    #[arg(long)]
    lab: bool,
    /// With --lab: another topology (it needs nodes named sender and receiver).
    #[arg(long, value_name = "FILE", requires = "lab")]
    topology: Option<std::path::PathBuf>,
    /// Print JSON with every test's full sender- and receiver-side results.
    #[arg(long)]
    json: bool,
}

/// The seed of the gaming tests: fixed, so every battery sends the same game traffic.
const GAME_SEED: u64 = 2006;

/// The topology `compare --lab` builds unless told otherwise.
const TWO_HOP: &str = include_str!("../../../plans/topologies/two-hop.toml");

/// The lab a battery runs through: where its flows go, and the guard that removes it.
struct LabRun {
    name: String,
    sender_ns: String,
    receiver_ns: String,
    receiver_v4: Ipv4Addr,
    receiver_v6: Ipv6Addr,
    _guard: lab::netlab::Guard,
}

impl LabRun {
    fn up(path: Option<&std::path::Path>) -> Result<Self> {
        let text = match path {
            Some(p) => crate::args::read_input(p, "the topology")?,
            None => TWO_HOP.to_owned(),
        };
        let t = match lab::topology::Topology::parse_at(
            &text,
            path.and_then(std::path::Path::parent),
        ) {
            Ok(t) => t,
            Err(e) => usage!("topology: {e}"),
        };
        let (sender_ns, receiver_ns, receiver_v4, receiver_v6) =
            match lab::runner::Place::of_lab(&t) {
                Ok(lab::runner::Place::Lab {
                    sender_ns,
                    receiver_ns,
                    receiver_v4,
                    receiver_v6,
                    ..
                }) => (sender_ns, receiver_ns, receiver_v4, receiver_v6),
                Ok(lab::runner::Place::Loopback) => usage!("topology: not a lab"),
                Err(e) => usage!("topology: {e}"),
            };
        let exe = std::env::current_exe().context("cannot find the dualperf binary")?;
        crate::out::note!("dualperf compare: building lab '{}' …", t.name);
        lab::netlab::up(&t, &exe, None)?;
        Ok(Self {
            name: t.name.clone(),
            sender_ns,
            receiver_ns,
            receiver_v4,
            receiver_v6,
            _guard: lab::netlab::Guard(t.name.clone()),
        })
    }
}

pub(crate) fn run(args: CompareArgs) -> Result<()> {
    let lab = if args.lab {
        Some(LabRun::up(args.topology.as_deref())?)
    } else {
        None
    };
    let duration = args.duration.unwrap_or(if args.quick {
        Duration::from_secs(1)
    } else {
        Duration::from_secs(5)
    });
    let rate = args.rate.unwrap_or(if args.quick {
        Rate::MilliPps(5_000_000)
    } else {
        Rate::MilliPps(10_000_000)
    });
    let mut protocols = Vec::new();
    for p in &args.protocols {
        protocols.push(match p.to_ascii_lowercase().as_str() {
            "udp" => Protocol::Udp,
            "tcp" => Protocol::Tcp,
            other => usage!("unknown protocol '{other}': use udp or tcp"),
        });
    }
    for &s in &args.sizes {
        if s < wire::probe::HEADER_LEN as u32 || s > 65_507 {
            usage!("size {s} is outside 16..=65507 bytes");
        }
    }
    let stop = crate::interrupt::flag();
    let start_receiver = || {
        Receiver::start(
            ReceiverConfig {
                bind: SocketAddr::new(IpAddr::V6(Ipv6Addr::UNSPECIFIED), 0),
                key: None,
                log: None,
                handshake_timeout: std::time::Duration::from_secs(5),
                busy_poll: crate::args::std_duration(crate::recv::DEFAULT_BUSY_POLL)
                    .expect("the default busy-poll window parses"),
                // One flow at a time: one UDP thread, as the receiver always had.
                threads: 1,
                gro: true,
                service: None,
            },
            Arc::new(AtomicBool::new(false)),
        )
        .context("starting the receiver")
    };
    // In the lab the receiver's sockets (and its threads) live in the receiver's
    // namespace: a thread enters it, and the threads it starts inherit it.
    let receiver = match &lab {
        None => start_receiver()?,
        Some(l) => {
            let ns = l.receiver_ns.clone();
            std::thread::scope(|s| {
                s.spawn(|| {
                    netio::netns::enter(&ns).with_context(|| format!("entering {ns}"))?;
                    start_receiver()
                })
                .join()
                .map_err(|_| anyhow::anyhow!("the receiver thread panicked"))?
            })?
        }
    };
    let (dest_v4, dest_v6): (IpAddr, IpAddr) = match &lab {
        None => (Ipv4Addr::LOCALHOST.into(), Ipv6Addr::LOCALHOST.into()),
        Some(l) => (l.receiver_v4.into(), l.receiver_v6.into()),
    };
    let port = receiver.local_addr().port();
    let progress = crate::out::progress_on_stderr();
    let base = FlowSpec {
        meter: Meter::Rtt,
        rate,
        size_bytes: 64,
        stop: StopSpec::after(duration),
        nodelay: true,
        ..FlowSpec::default()
    };
    let mut tests: Vec<FlowSpec> = Vec::new();
    for &protocol in &protocols {
        for &size in &args.sizes {
            tests.push(FlowSpec {
                protocol,
                size_bytes: size,
                label: format!("{} {size} B", format!("{protocol:?}").to_uppercase()),
                ..base.clone()
            });
        }
    }
    // VoIP and the games are UDP models: they run when UDP is among the protocols.
    let udp = protocols.contains(&Protocol::Udp);
    // A quick battery gives each of them half a second (13 to 72 packets).
    let model_stop = StopSpec::after(if args.quick {
        Duration::from_millis(500)
    } else {
        duration
    });
    if udp && !args.no_voip {
        // D-ITG's VoIP models with a real RTP header, at their own rates.
        for codec in traffic::voip::Codec::ALL {
            tests.push(FlowSpec {
                rate: codec.rate(),
                stop: model_stop,
                size_bytes: codec.payload_bytes(traffic::voip::VoipHeader::Rtp, false),
                label: format!("VoIP {codec}"),
                rtp: Some(codec.rtp()),
                ..base.clone()
            });
        }
    }
    if udp && !args.no_games {
        use traffic::app::App;
        for app in [App::Quake3, App::Csa, App::Csi] {
            let model = app.model();
            tests.push(FlowSpec {
                stop: model_stop,
                // Sizes come from the model; the table shows their mean.
                size_bytes: model.size.mean().map_or(64, |m| m.round() as u32),
                label: format!("game {app}"),
                idt_ms: Some(model.idt_ms),
                size_dist: Some(model.size),
                seed: GAME_SEED,
                ..base.clone()
            });
        }
    }
    let battery = || -> Vec<Point> {
        let total = tests.len() * 2;
        let mut done = 0;
        let mut points = Vec::new();
        'outer: for spec in tests {
            let mut point = Point {
                name: spec.label.clone(),
                protocol: spec.protocol,
                size_bytes: spec.size_bytes,
                rate: spec.idt_ms.is_none().then_some(spec.rate),
                ipv4: None,
                ipv6: None,
                delta_pct: Delta::default(),
                errors: Vec::new(),
            };
            for v6 in [false, true] {
                if stop.load(Ordering::SeqCst) {
                    points.push(point);
                    break 'outer;
                }
                done += 1;
                let family = if v6 { "IPv6" } else { "IPv4" };
                let ip = if v6 { dest_v6 } else { dest_v4 };
                if progress {
                    eprint!("\r[{done}/{total}] {family} {} …          ", spec.label);
                }
                let config = SendConfig::new(SocketAddr::new(ip, port), vec![spec.clone()]);
                // One failed test does not end the battery: keep what it measured and say
                // what went wrong.
                let (report, error) = match run_session(&config, &stop) {
                    Ok(r) => (Some(r), None),
                    Err(e) => match e.downcast::<crate::send::PartialReport>() {
                        Ok(p) => (Some(p.report), Some(p.error)),
                        Err(e) => (None, Some(format!("{e:#}"))),
                    },
                };
                if let Some(e) = &error {
                    eprintln!("dualperf compare: {family} {}: {e}", spec.label);
                    point.errors.push(format!("{family}: {e}"));
                }
                let side = report.and_then(|r| r.flows.into_iter().next()).map(side_of);
                if v6 {
                    point.ipv6 = side;
                } else {
                    point.ipv4 = side;
                }
            }
            point.delta_pct = delta(point.ipv4.as_ref(), point.ipv6.as_ref());
            points.push(point);
        }
        points
    };
    // In the lab the senders' sockets are made in the sender's namespace.
    let points = match &lab {
        None => battery(),
        Some(l) => std::thread::scope(|s| {
            s.spawn(|| -> Result<Vec<Point>> {
                netio::netns::enter(&l.sender_ns)
                    .with_context(|| format!("entering {}", l.sender_ns))?;
                Ok(battery())
            })
            .join()
            .map_err(|_| anyhow::anyhow!("the sender thread panicked"))?
        })?,
    };
    if progress {
        eprint!("\r{}\r", " ".repeat(60));
    }
    drop(receiver.shutdown());
    let report = CompareReport {
        format_version: results::compare::COMPARE_FORMAT_VERSION,
        tool: format!("dualperf {}", env!("CARGO_PKG_VERSION")),
        target: match &lab {
            None => "loopback".to_owned(),
            Some(l) => format!("lab:{}", l.name),
        },
        rate,
        sizes_bytes: args.sizes.clone(),
        duration_ns: duration.as_nanos(),
        interrupted: stop.load(Ordering::SeqCst),
        quick: args.quick,
        points,
    };
    if args.json {
        crate::out::print_json(&report)?;
    } else {
        crate::out::print(render(&report))?;
    }
    Ok(())
}

fn side_of(flow: FlowOutcome) -> Side {
    let rtt = flow.rtt.as_ref();
    Side {
        throughput_bps: flow.received.as_ref().and_then(|r| r.bitrate_bps),
        rtt_mean_ns: rtt.and_then(|r| r.delay.as_ref()).map(|d| d.mean_ns),
        jitter_ns: rtt.and_then(|r| r.jitter.ditg_ns),
        loss_pct: flow.received.as_ref().and_then(|r| r.loss.loss_pct),
        sent_packets: flow.sent.packets,
        received_packets: flow.received.as_ref().map(|r| r.packets),
        flow,
    }
}

fn rel(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    match (a, b) {
        (Some(a), Some(b)) if a != 0.0 => Some((b - a) / a * 100.0),
        _ => None,
    }
}

fn delta(v4: Option<&Side>, v6: Option<&Side>) -> Delta {
    let get = |s: Option<&Side>, f: fn(&Side) -> Option<f64>| s.and_then(f);
    Delta {
        throughput: rel(get(v4, |s| s.throughput_bps), get(v6, |s| s.throughput_bps)),
        rtt: rel(get(v4, |s| s.rtt_mean_ns), get(v6, |s| s.rtt_mean_ns)),
        jitter: rel(get(v4, |s| s.jitter_ns), get(v6, |s| s.jitter_ns)),
    }
}

fn render(r: &CompareReport) -> String {
    let mut t = report::text_table::Table::new(&[
        "test",
        "Mbit/s v4",
        "v6",
        "Δ %",
        "RTT µs v4",
        "v6",
        "Δ %",
        "jitter µs v4",
        "v6",
        "Δ %",
        "loss % v4",
        "v6",
    ]);
    let f = |v: Option<f64>, scale: f64, digits: usize| {
        v.map_or("-".to_owned(), |x| format!("{:.*}", digits, x / scale))
    };
    let d = |v: Option<f64>| v.map_or("-".to_owned(), |x| format!("{x:+.1}"));
    for p in &r.points {
        let s4 = p.ipv4.as_ref();
        let s6 = p.ipv6.as_ref();
        t.row(vec![
            p.name.clone(),
            f(s4.and_then(|s| s.throughput_bps), 1e6, 3),
            f(s6.and_then(|s| s.throughput_bps), 1e6, 3),
            d(p.delta_pct.throughput),
            f(s4.and_then(|s| s.rtt_mean_ns), 1e3, 1),
            f(s6.and_then(|s| s.rtt_mean_ns), 1e3, 1),
            d(p.delta_pct.rtt),
            f(s4.and_then(|s| s.jitter_ns), 1e3, 1),
            f(s6.and_then(|s| s.jitter_ns), 1e3, 1),
            d(p.delta_pct.jitter),
            f(s4.and_then(|s| s.loss_pct), 1.0, 3),
            f(s6.and_then(|s| s.loss_pct), 1.0, 3),
        ]);
    }
    let (path, note) = if r.target == "loopback" {
        (
            "IPv4 (127.0.0.1) vs IPv6 (::1)".to_owned(),
            "Loopback has no wire: differences reflect the stacks, not headers on a link.",
        )
    } else {
        (
            format!("IPv4 vs IPv6 through {}", r.target),
            "Through the lab the headers count: every frame crosses the emulated links at their rate.",
        )
    };
    format!(
        "dualperf compare: {path}, round-trip meter, {} per test{}; sizes {} B at {}, VoIP at its codec's rate, games by their models{}\n{}\
         Throughput: receiver payload bit rate. RTT: mean of sender-measured round trips less the time the receiver held\n\
         each probe (as irtt does). Jitter: mean |ΔRTT| in arrival order (D-ITG).\n\
         Δ % = (IPv6 − IPv4) / IPv4. {note}\n",
        Duration::from_nanos(r.duration_ns),
        if r.quick { " (VoIP and games 0.5 s)" } else { "" },
        r.sizes_bytes.iter().map(u32::to_string).collect::<Vec<_>>().join("/"),
        r.rate,
        if r.interrupted { " (interrupted)" } else { "" },
        t.render()
    )
}
