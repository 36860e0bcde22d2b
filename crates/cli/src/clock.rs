//! `dualperf clock`: how precisely this host can time packets.

use anyhow::{Context, Result};
use results::clock::{ClockReport, HostDoc, PeerClockDoc, WaitStats};

/// Report timer resolution and the accuracy of sleeping and of sleep-then-spin waits.
///
/// For each wait length it runs many absolute-deadline waits and reports how late they
/// woke (overshoot). Plain sleeps overshoot by the kernel's timer slack and scheduling
/// latency; the hybrid wait used by `dualperf send` sleeps, then spins for the last part.
///
/// With --peer, it asks a `dualperf recv` or `agent` instead how its clock stands against
/// this host's: the offset (RFC 5905 on-wire method, the least-delay of several
/// exchanges) with its bound, and both hosts' own synchronisation (the kernel's
/// adjtimex state, chrony's tracking when chrony runs).
#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:
  dualperf clock
  dualperf clock --peer 198.18.4.2 --key secret
  dualperf clock --peer [2001:2:0:4::2]:4646 --json")]
pub(crate) struct ClockArgs {
    /// Waits per measurement.
    #[arg(long, default_value_t = 200)]
    samples: usize,
    /// Print JSON.
    #[arg(long)]
    json: bool,
    /// A receiver or agent to compare clocks with: ADDR, ADDR:PORT or [IPv6]:PORT.
    #[arg(long, value_name = "HOST")]
    peer: Option<String>,
    /// The peer's key.
    #[arg(long, env = "DUALPERF_KEY", hide_env_values = true, requires = "peer")]
    key: Option<String>,
    /// Clock exchanges with the peer; the one of least round-trip delay is kept.
    #[arg(long, default_value_t = 16, requires = "peer", value_name = "N",
          value_parser = clap::value_parser!(u32).range(1..=256))]
    exchanges: u32,
}

/// `clock --peer`: this host, the peer, the offset between their clocks.
fn peer(args: &ClockArgs, dest: &str) -> Result<()> {
    use crate::control::{write_msg, MsgReader};
    use wire::control::Msg;
    let addr = crate::control::resolve(
        dest,
        crate::control::DEFAULT_PORT,
        crate::control::Family::Any,
    )?;
    let timeout = std::time::Duration::from_secs(5);
    let mut ctrl = netio::tcp::connect(addr, &netio::Marking::default(), true, None, timeout)
        .with_context(|| format!("cannot reach a dualperf receiver or agent at {addr}"))?;
    ctrl.set_read_timeout(Some(timeout))?;
    let mut reader = MsgReader::new();
    crate::control::handshake(
        &mut ctrl,
        &mut reader,
        args.key.as_ref().map(String::as_bytes),
        "peer",
    )?;
    write_msg(&mut ctrl, &Msg::HostQuery {})?;
    let remote = match reader.read(&mut ctrl)? {
        Msg::HostReply { host } => serde_json::from_value::<HostDoc>(host)
            .context("the peer's description does not read")?,
        other => anyhow::bail!("unexpected reply from the peer: {other:?}"),
    };
    let offset = crate::control::estimate_offset(&mut ctrl, &mut reader, args.exchanges)?;
    let doc = PeerClockDoc {
        format_version: results::clock::CLOCK_FORMAT_VERSION,
        peer: addr,
        local: crate::hostinfo::host_doc(),
        remote,
        offset,
    };
    if args.json {
        return crate::out::print_json(&doc);
    }
    crate::out::print(results::clock::peer_text(&doc))
}

/// The mean cost of one `CLOCK_MONOTONIC` read over `reads` reads, ns.
pub(crate) fn clock_read_ns(reads: u64) -> f64 {
    let reads = reads.max(1);
    let t0 = netio::clock::mono_ns();
    let mut sink = 0u64;
    for _ in 0..reads {
        sink = sink.wrapping_add(netio::clock::mono_ns());
    }
    let ns = (netio::clock::mono_ns() - t0) as f64 / reads as f64;
    std::hint::black_box(sink);
    ns
}

/// Runs `samples` absolute-deadline waits of `wait_ns` each (sleep, then spin the last
/// `spin_ns`, as `send` waits) on the calling thread and says how late they woke. The
/// caller sets the thread's timer slack first (`send` lowers it to 1 ns).
pub(crate) fn measure_waits(wait_ns: u64, spin_ns: u64, samples: usize, mode: &str) -> WaitStats {
    let over: Vec<u64> = (0..samples.max(1))
        .map(|_| {
            let deadline = netio::clock::mono_ns() + wait_ns;
            let woke = netio::clock::sleep_until(deadline, spin_ns);
            woke.saturating_sub(deadline)
        })
        .collect();
    WaitStats::of(wait_ns, mode, over)
}

pub(crate) fn run(args: ClockArgs) -> Result<()> {
    if let Some(dest) = &args.peer {
        return peer(&args, dest);
    }
    let samples = args.samples.max(10);
    let clock_read_ns = clock_read_ns(1_000_000);
    let default_timer_slack_ns = netio::clock::timer_slack_ns().unwrap_or(0);
    let mut waits = Vec::new();
    // Measure as `send` waits: with the thread's timer slack at 1 ns.
    let _ = netio::clock::set_timer_slack_ns(1);
    for wait_ns in [10_000u64, 100_000, 1_000_000] {
        for (mode, spin_ns) in [("sleep", 0u64), ("sleep+spin 50us", 50_000)] {
            waits.push(measure_waits(wait_ns, spin_ns, samples, mode));
        }
    }
    let report = ClockReport {
        monotonic_resolution_ns: netio::clock::resolution_ns(netio::clock::ClockId::Monotonic),
        realtime_resolution_ns: netio::clock::resolution_ns(netio::clock::ClockId::Realtime),
        clock_read_ns,
        default_timer_slack_ns,
        waits,
        sync: crate::hostinfo::sync_state(),
    };
    if args.json {
        return crate::out::print_json(&report);
    }
    crate::out::print(results::clock::report_text(&report))
}
