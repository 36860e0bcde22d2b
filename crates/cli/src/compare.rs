//! `dualperf compare`: the main job. A standard battery run several times over IPv4 and
//! IPv6, interleaved, on loopback (or through the lab), reported side by side with each
//! difference, its interval and a verdict that allows for the table's many comparisons
//! (`compare/verdicts.rs`, `meter::verdict`).

mod verdicts;

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use anyhow::{Context, Result};
use results::compare::{CompareReport, Point, Repetition, Side};
use traffic::{FlowSpec, Rate, StopSpec};
use wire::control::{Meter, Protocol};
use wire::time::Duration;

use crate::recv::{Receiver, ReceiverConfig};
use crate::send::{run_session, FlowOutcome, SendConfig};
use crate::usage;

/// Compare IPv4 and IPv6 on this host: the main battery, side by side, with verdicts.
///
/// UDP and TCP at several packet sizes, D-ITG's VoIP codecs and game models, each test
/// run --repeat times over 127.0.0.1 and over ::1 (or, with --lab, through the two-hop
/// namespace lab and its 10 Mbit/s bottleneck) with the round-trip meter. The families
/// are interleaved: every test runs over both, back to back, in an order that alternates,
/// and the whole battery is passed through again for each repetition, so slow drifts of
/// the host fall on both families alike.
///
/// Each table (throughput, RTT, jitter, loss) shows the median of each family's runs and
/// IPv6 against IPv4 in the metric's unit and in %, with an interval: the median of the
/// pairs (each pass's IPv6 run against its IPv4 run), so what the host does to both runs
/// of a pair cancels. "≈" means the interval holds 0: the runs do not show a difference,
/// whatever the medians say. The verdicts hold a 5 % false discovery rate over the whole
/// table (Benjamini–Hochberg), so a battery with no real difference shows none in 19
/// cases out of 20, and the intervals are widened to match (docs/compare.md).
///
/// Starts its own receiver; nothing else is needed. Throughput is the receiver's payload
/// bit rate; RTT (each run's median) and jitter come from the sender's echoes (jitter:
/// D-ITG's mean |ΔD|). dualperf doctor's check of the host runs first; its warnings are
/// printed under the tables.
#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:
  dualperf compare                       # 10 runs a family per test, about 3 minutes
  dualperf compare --quick               # 5 runs a family, under a minute
  dualperf compare --repeat 10 --no-games --sizes 64,1472
  dualperf compare --json > cmp.json     # every run, every flow, the statistics
  sudo dualperf compare --lab            # through the two-hop lab (root, iproute2)

How to read the table and how the verdicts are made: docs/compare.md. JSON format:
docs/output.md.")]
pub(crate) struct CompareArgs {
    /// A short battery that finishes in under a minute: 5 runs a family per test, each
    /// 250 ms (size tests at 5000 pkt/s).
    #[arg(long)]
    quick: bool,
    /// Runs per family per test [default: 10; 5 with --quick]. A verdict needs at least
    /// 2; more runs give narrower intervals (more, shorter runs beat fewer, longer ones:
    /// it is the pairs that are compared).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=1000))]
    repeat: Option<u32>,
    /// Length of each run [default: 500ms; 250ms with --quick]. The VoIP and game tests
    /// take it too.
    #[arg(long, value_parser = crate::args::duration, value_name = "DURATION")]
    duration: Option<Duration>,
    /// Send rate of each size test [default: 10000pps; 5000pps with --quick].
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
    /// the battery and removes it afterwards. Needs root and iproute2.
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
        // Checked before anything is built.
        if let Err(e) = lab::runner::Place::of_lab(&t) {
            usage!("topology: {e}");
        }
        let exe = std::env::current_exe().context("cannot find the dualperf binary")?;
        // A lab of its own, under a name no other process uses: a lab up under the
        // topology's name (a user's, with agents in it) is left alone.
        crate::out::note!(
            "dualperf compare: building lab '{}' (topology '{}') …",
            lab::netlab::job_name(&t.name, std::process::id()),
            t.name
        );
        let (own, guard) = lab::netlab::up_own(&t, &exe)?;
        let (sender_ns, receiver_ns, receiver_v4, receiver_v6) =
            match lab::runner::Place::of_lab(&own) {
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
        Ok(Self {
            name: own.name,
            sender_ns,
            receiver_ns,
            receiver_v4,
            receiver_v6,
            _guard: guard,
        })
    }
}

pub(crate) fn run(args: CompareArgs) -> Result<()> {
    let duration = args.duration.unwrap_or(if args.quick {
        Duration::from_millis(250)
    } else {
        Duration::from_millis(500)
    });
    let rate = args.rate.unwrap_or(if args.quick {
        Rate::MilliPps(5_000_000)
    } else {
        Rate::MilliPps(10_000_000)
    });
    let repetitions = args.repeat.unwrap_or(if args.quick { 5 } else { 10 });
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
    if repetitions < 2 {
        crate::out::note!(
            "dualperf compare: one run a family gives medians but no verdicts (--repeat 2 or more)"
        );
    }
    // The host's check first: its warnings go with the results.
    let doctor = crate::doctor::record();
    let lab = if args.lab {
        Some(LabRun::up(args.topology.as_deref())?)
    } else {
        None
    };
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
                skip_rx_copy: false,
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
    let tests = battery_tests(&args, &protocols, &base);
    let battery = || -> Vec<Point> {
        let mut points: Vec<Point> = tests
            .iter()
            .map(|spec| Point {
                name: spec.label.clone(),
                protocol: spec.protocol,
                size_bytes: spec.size_bytes,
                rate: spec.idt_ms.is_none().then_some(spec.rate),
                runs: Vec::new(),
                stats: Default::default(),
                errors: Vec::new(),
            })
            .collect();
        let total = tests.len() * 2 * repetitions as usize;
        let mut done = 0;
        let started = std::time::Instant::now();
        // Every pass runs every test over both families back to back; which family goes
        // first alternates from test to test and from pass to pass, so neither always
        // runs on a host the other has just warmed (or disturbed).
        'passes: for rep in 0..repetitions {
            for (t, spec) in tests.iter().enumerate() {
                let ipv6_first = (rep as usize + t) % 2 == 1;
                let mut pair = Repetition {
                    repetition: rep + 1,
                    ipv6_first,
                    ipv4: None,
                    ipv6: None,
                };
                for v6 in [ipv6_first, !ipv6_first] {
                    if stop.load(Ordering::SeqCst) {
                        if pair.ipv4.is_some() || pair.ipv6.is_some() {
                            points[t].runs.push(pair);
                        }
                        break 'passes;
                    }
                    done += 1;
                    let family = if v6 { "IPv6" } else { "IPv4" };
                    let ip = if v6 { dest_v6 } else { dest_v4 };
                    if progress {
                        let left = time_left(duration.into(), total, done - 1, started.elapsed());
                        eprint!(
                            "\r[{done}/{total}] run {}/{repetitions} {family} {} … about {} left          ",
                            rep + 1,
                            spec.label,
                            crate::human::span(left)
                        );
                    }
                    let config = SendConfig::new(SocketAddr::new(ip, port), vec![spec.clone()]);
                    // One failed run does not end the battery: keep what it measured and
                    // say what went wrong.
                    let attempt = || match run_session(&config, &stop) {
                        Ok(r) => (r.flows.into_iter().next().map(side_of), None),
                        Err(e) => match e.downcast::<crate::send::PartialReport>() {
                            Ok(p) => (
                                p.report.flows.into_iter().next().map(side_of),
                                Some(p.error),
                            ),
                            Err(e) => (None, Some(format!("{e:#}"))),
                        },
                    };
                    let (side, error) = measure(&stop, attempt, |n, why| {
                        crate::out::note!(
                            "\rdualperf compare: run {} {family} {}: {why}; measuring it again ({n} of {ATTEMPTS})",
                            rep + 1,
                            spec.label
                        );
                    });
                    if let Some(e) = &error {
                        eprintln!(
                            "\rdualperf compare: run {} {family} {}: {e}",
                            rep + 1,
                            spec.label
                        );
                        points[t]
                            .errors
                            .push(format!("run {} {family}: {e}", rep + 1));
                    }
                    if v6 {
                        pair.ipv6 = side;
                    } else {
                        pair.ipv4 = side;
                    }
                }
                points[t].runs.push(pair);
            }
        }
        points
    };
    // In the lab the senders' sockets are made in the sender's namespace.
    let mut points = match &lab {
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
        eprint!("\r{}\r", " ".repeat(100));
    }
    drop(receiver.shutdown());
    let verdicts = verdicts::assess(&mut points);
    let mut report = CompareReport {
        format_version: results::compare::COMPARE_FORMAT_VERSION,
        tool: format!("dualperf {}", env!("CARGO_PKG_VERSION")),
        target: match &lab {
            None => "loopback".to_owned(),
            Some(l) => format!("lab:{}", l.name),
        },
        rate,
        sizes_bytes: args.sizes.clone(),
        duration_ns: duration.as_nanos(),
        model_duration_ns: duration.as_nanos(),
        repetitions,
        interrupted: stop.load(Ordering::SeqCst),
        quick: args.quick,
        verdicts,
        summary: Vec::new(),
        doctor: Some(doctor),
        points,
    };
    report.summary = verdicts::summary(&report);
    if args.json {
        crate::out::print_json(&report)?;
    } else {
        crate::out::print(verdicts::render(&report))?;
    }
    Ok(())
}

/// The battery: every size test for each protocol, then (with UDP) the VoIP and game
/// models, each a flow spec built on `base`.
fn battery_tests(args: &CompareArgs, protocols: &[Protocol], base: &FlowSpec) -> Vec<FlowSpec> {
    let mut tests: Vec<FlowSpec> = Vec::new();
    for &protocol in protocols {
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
    if udp && !args.no_voip {
        // D-ITG's VoIP models with a real RTP header, at their own rates.
        for codec in traffic::voip::Codec::ALL {
            tests.push(FlowSpec {
                rate: codec.rate(),
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
    tests
}

/// How long a battery of `total` runs of `planned` each has left once `finished` of them
/// took `elapsed`: the plan of the runs left, each with the mean overhead the finished
/// ones had beyond their plan (receiver set-up, handshake, results; never below none).
fn time_left(
    planned: std::time::Duration,
    total: usize,
    finished: usize,
    elapsed: std::time::Duration,
) -> std::time::Duration {
    let left = u32::try_from(total.saturating_sub(finished)).unwrap_or(u32::MAX);
    let overhead = match u32::try_from(finished) {
        Ok(n) if n > 0 => elapsed.saturating_sub(planned.saturating_mul(n)) / n,
        _ => std::time::Duration::ZERO,
    };
    planned.saturating_add(overhead).saturating_mul(left)
}

/// How many times in all a run is measured while it falls behind its schedule: a busy
/// moment of the host passes, a host that cannot keep up stays behind every time.
const ATTEMPTS: u32 = 3;

/// A run measured by `attempt` (its side, and the error that ended it if any), again at
/// once while it falls behind its schedule ([`fell_behind`]), at most [`ATTEMPTS`] times
/// in all; `retrying(n, why)` is told before attempt `n`. The last attempt is kept, with
/// how many it took in `attempts`, and why it does not count if it does not. A run that
/// failed, or that Ctrl-C cut short, is not measured again.
fn measure(
    stop: &AtomicBool,
    mut attempt: impl FnMut() -> (Option<Side>, Option<String>),
    mut retrying: impl FnMut(u32, &str),
) -> (Option<Side>, Option<String>) {
    let mut n = 1;
    loop {
        let (mut side, error) = attempt();
        if let Some(s) = side.as_mut() {
            s.attempts = n;
        }
        if error.is_some() || stop.load(Ordering::SeqCst) {
            return (side, error);
        }
        match side.as_ref().and_then(fell_behind) {
            None => return (side, None),
            Some(why) if n == ATTEMPTS => {
                return (
                    side,
                    Some(format!("{why} (behind in each of {n} attempts)")),
                )
            }
            Some(why) => {
                n += 1;
                retrying(n, &why);
            }
        }
    }
}

/// Why a run does not count, if it fell behind: it sent nothing, or, on a constant-rate
/// schedule (whose plan is exact, unlike a model's random gaps), less than 90 % of the
/// packets it planned: its sender did not get the CPU (`dualperf doctor` may say why).
/// A paced test on a host that keeps up sends every planned packet.
/// `verdicts::assess` leaves such runs out.
fn fell_behind(side: &Side) -> Option<String> {
    if side.sent_packets == 0 {
        return Some("sent no packets in its time (the host may be overloaded)".to_owned());
    }
    if side.flow.spec.idt_ms.is_some() {
        return None;
    }
    let planned = side
        .flow
        .sent
        .planned_packets
        .filter(|&p| side.sent_packets * 10 < p * 9)?;
    Some(format!(
        "sent {} of {planned} planned packets: the host fell behind (dualperf doctor may say why); not counted",
        side.sent_packets
    ))
}

fn side_of(flow: FlowOutcome) -> Side {
    let rtt = flow.rtt.as_ref();
    Side {
        throughput_bps: flow.received.as_ref().and_then(|r| r.bitrate_bps),
        rtt_mean_ns: rtt.and_then(|r| r.delay.as_ref()).map(|d| d.mean_ns),
        rtt_median_ns: rtt
            .and_then(|r| r.delay.as_ref())
            .and_then(|d| d.p50_ns)
            .map(|v| v as f64),
        jitter_ns: rtt.and_then(|r| r.jitter.ditg_ns),
        loss_pct: flow.received.as_ref().and_then(|r| r.loss.loss_pct),
        sent_packets: flow.sent.packets,
        received_packets: flow.received.as_ref().map(|r| r.packets),
        attempts: 1,
        flow,
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    /// A run of 1000 planned packets that sent `sent`.
    fn run_that_sent(sent: u64) -> (Option<Side>, Option<String>) {
        let flow: FlowOutcome = serde_json::from_value(serde_json::json!({
            "id": 1,
            "spec": FlowSpec::default(),
            "sent": {"packets": sent, "bytes": sent * 512, "planned_packets": 1000},
        }))
        .expect("a minimal flow outcome");
        (Some(side_of(flow)), None)
    }

    /// A run that fell behind its schedule is measured again while it does, at most
    /// three times in all; the one kept says how many it took.
    #[test]
    fn a_run_that_fell_behind_is_measured_again_a_bounded_number_of_times() {
        let stop = AtomicBool::new(false);
        let measured = |sent: &[u64]| {
            let mut left = sent.iter();
            let mut told = Vec::new();
            let (side, error) = measure(
                &stop,
                || run_that_sent(*left.next().expect("no more attempts than planned")),
                |n, why| told.push(format!("{n}: {why}")),
            );
            let side = side.unwrap();
            (side.sent_packets, side.attempts, error, told)
        };
        // On schedule at once: measured once.
        assert_eq!(measured(&[1000]), (1000, 1, None, vec![]));
        // Behind once, then on schedule: the second is kept, and the retry was said.
        let (sent, attempts, error, told) = measured(&[584, 1000]);
        assert_eq!((sent, attempts, error), (1000, 2, None));
        assert_eq!(told.len(), 1);
        assert!(
            told[0].starts_with("2: sent 584 of 1000 planned packets"),
            "{told:?}"
        );
        // Behind every time: the third is kept, and does not count.
        let (sent, attempts, error, told) = measured(&[584, 700, 899]);
        assert_eq!((sent, attempts, told.len()), (899, 3, 2));
        assert_eq!(
            error.as_deref(),
            Some("sent 899 of 1000 planned packets: the host fell behind (dualperf doctor may say why); not counted (behind in each of 3 attempts)")
        );
        // A run that failed, or was cut short by Ctrl-C, is not measured again.
        let (side, error) = measure(
            &stop,
            || (run_that_sent(10).0, Some("refused".to_owned())),
            |_, _| panic!("measured again"),
        );
        assert_eq!(
            (side.unwrap().attempts, error.as_deref()),
            (1, Some("refused"))
        );
        stop.store(true, Ordering::SeqCst);
        let (_, error) = measure(&stop, || run_that_sent(10), |_, _| panic!("measured again"));
        assert_eq!(error, None);
    }

    #[test]
    fn the_time_left_is_the_plan_of_the_runs_left_plus_their_measured_overhead() {
        let half = Duration::from_millis(500);
        // Nothing finished: the plan alone, 220 runs of 0.5 s.
        assert_eq!(
            time_left(half, 220, 0, Duration::ZERO),
            Duration::from_secs(110)
        );
        // 20 runs took 14 s, 4 s over their plan: 0.2 s each; 200 left take 0.7 s each.
        assert_eq!(
            time_left(half, 220, 20, Duration::from_secs(14)),
            Duration::from_secs(140)
        );
        // Runs that took less than planned (stopped early) add no negative overhead.
        assert_eq!(
            time_left(half, 10, 4, Duration::from_secs(1)),
            Duration::from_secs(3)
        );
        // All done: nothing left.
        assert_eq!(
            time_left(half, 10, 10, Duration::from_secs(9)),
            Duration::ZERO
        );
        assert_eq!(
            crate::human::span(time_left(half, 220, 20, Duration::from_secs(14))),
            "2 min 20 s"
        );
    }
}
