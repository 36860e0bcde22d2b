//! The STAMP Session-Sender (RFC 8762 §4.2): `dualperf send --stamp`.
//!
//! One flow of `send`'s vocabulary (its rate or gaps, its sizes, its marking) goes to a
//! STAMP Session-Reflector (RFC 8762 §4.3: `recv --stamp`, stamp-suite, a router…) as
//! STAMP test packets paced by the flow's [`Schedule`]; each reply brings back the four
//! timestamps of an exchange, and every figure of `send`'s report comes out of them
//! through `meter`'s streaming state.
//!
//! - **Packets** (`wire::stamp::writer`): the base packet, the Class of Service TLV
//!   with `--stamp-cos`, the HMAC TLV in authenticated mode when needed, and Extra
//!   Padding up to the flow's size. The flow's DSCP/ECN, TTL and flow label go on the
//!   socket.
//! - **Threads.** This thread sends on the schedule (sleeps, then spins the last
//!   stretch before each deadline) and stamps each packet with the wall clock just
//!   before handing it to the kernel; a receiver thread reads the replies (recvmmsg,
//!   kernel receive timestamps) until the schedule has ended and `--stamp-timeout` has
//!   passed, or every packet was answered. Ctrl-C stops the sending; the replies in
//!   flight are still awaited and the report printed.
//! - **Figures** (`results::stamp::ReplyMeter`, pure): the round trip less the
//!   turnaround, the forward and reverse one-way delays, loss by direction when the
//!   reflector is stateful, from each reply's four timestamps.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration as StdDuration;

use anyhow::{Context, Result};
use meter::{TxMeter, TxRecord};
use results::send::SendReport;
use results::stamp::{ReplyMeta, ReplyMeter, Session, FLOW_ID};
use traffic::{FlowSpec, Schedule, Transmit};
use wire::stamp::{ErrorEstimate, Mode, PacketWriter, TimestampFormat, MAX_UDP_PAYLOAD};
use wire::time::{Duration, Instant};

use crate::send::session::PartialReport;

/// Packets handed to the kernel in one call at most.
const BATCH: usize = netio::MAX_BATCH;
/// Longest single sleep of the sender, so Ctrl-C is seen promptly at any rate.
const MAX_SLEEP_NS: u64 = 100_000_000;
/// The most and least spin before a deadline by default (as `send`'s engines).
const MAX_SPIN_NS: u64 = 50_000;
const MIN_SPIN_NS: u64 = 15_000;
/// How long a send the kernel takes nothing of is retried.
const STUCK_NS: u64 = 1_000_000_000;
/// How often the receiver looks at the clock and the sender's state while idle.
const RECV_TICK: StdDuration = StdDuration::from_millis(20);
/// The kernel's cap on its maximum clock error (`NTP_PHASE_LIMIT`, 16 s): our Error
/// Estimate when the kernel's cannot be read.
const UNKNOWN_ERROR_NS: u64 = 16_000_000_000;

/// A validated `send --stamp`.
#[derive(Clone, Debug)]
pub(crate) struct StampConfig {
    /// The Session-Reflector.
    pub(crate) dest: SocketAddr,
    /// The flow: schedule, sizes, marking; its `meter` picks the report's primary
    /// figure (the round trip, or with `Owd` the forward one-way view).
    pub(crate) spec: FlowSpec,
    pub(crate) mode: Mode,
    /// The HMAC key of authenticated mode (RFC 8762 §4.4), at least 16 octets.
    pub(crate) key: Option<Vec<u8>>,
    /// The Session-Sender Identifier (RFC 8972 §3), non-zero.
    pub(crate) ssid: u16,
    /// Ask for the flow's DSCP on the replies with a Class of Service TLV.
    pub(crate) cos: bool,
    pub(crate) format: TimestampFormat,
    /// How long replies are awaited after the last packet.
    pub(crate) timeout: StdDuration,
    /// Busy-wait this long before each deadline (`None`: from the rate).
    pub(crate) spin: Option<Duration>,
    /// A progress line on stderr.
    pub(crate) progress: bool,
    /// Say "dualperf send: started" on stderr when sending begins.
    pub(crate) announce_start: bool,
    /// Report the round trip's distribution (`send --cdf`).
    pub(crate) cdf: bool,
}

/// Our Error Estimate (RFC 8762 §4.2.1, RFC 4656 §4.1.2): S set when the kernel says the
/// clock is synchronised, with its estimated error; else its maximum error.
fn sender_error_estimate(format: TimestampFormat) -> ErrorEstimate {
    let (synchronized, error_ns) = match netio::clock::adjtimex_state() {
        Ok(k) if k.synchronised => (true, k.est_error_ns.max(1)),
        Ok(k) => (false, k.max_error_ns.max(1)),
        Err(_) => (false, UNKNOWN_ERROR_NS),
    };
    ErrorEstimate::for_error_ns(error_ns, synchronized, format)
}

/// What the sender and the receiver thread share.
#[derive(Default)]
struct Shared {
    /// Packets numbered below this have been handed (or are being handed) to the
    /// kernel: raised before each send, so no reply can outrun it.
    staged: AtomicU64,
    /// Sending is over; `sent` is final and `end_ns` (monotonic) set.
    done: AtomicBool,
    sent: AtomicU64,
    end_ns: AtomicU64,
    /// The kernel reported an ICMP port unreachable from the reflector.
    refused: AtomicBool,
}

/// What the sending loop did.
struct Sent {
    tx: TxMeter,
    error: Option<String>,
}

/// Run the session: send the flow, collect the replies, report.
///
/// Fails without a report when nothing could be sent (socket, marking, key); once
/// packets went out, a failure comes back as a [`PartialReport`] with every figure.
pub(crate) fn run(config: &StampConfig, stop: &Arc<AtomicBool>) -> Result<SendReport> {
    let spec = &config.spec;
    let sock = Arc::new(open_socket(config)?);
    let ee = sender_error_estimate(config.format);
    let cos = config
        .cos
        .then(|| spec.marking.dscp.map_or(0, |d| d.value()));
    let mut writer = PacketWriter::new(config.mode, config.key.clone(), config.ssid, ee, cos);
    // A packet of the largest size must be writable (the key, the TLVs) before any goes.
    let mut probe = vec![0u8; MAX_UDP_PAYLOAD];
    writer
        .write(0, 0, results::stamp::max_size(spec), &mut probe)
        .map_err(|e| anyhow::anyhow!("cannot write a STAMP packet: {e}"))?;
    if let Some(n) = results::stamp::size_note(spec, &writer) {
        crate::out::note!("dualperf send: note: {n}");
    }

    let shared = Arc::new(Shared::default());
    let receiver = {
        let sock = sock.clone();
        let shared = shared.clone();
        let resolution = netio::clock::resolution_ns(netio::clock::ClockId::Realtime);
        let meter = ReplyMeter::new(config.ssid, cos, resolution);
        let config = config.clone();
        std::thread::Builder::new()
            .name("stamp-recv".into())
            .spawn(move || receive(&sock, &shared, meter, &config))?
    };
    if config.announce_start {
        eprintln!("dualperf send: started");
    }
    let sent = send_loop(&sock, config, &mut writer, &shared, stop);
    shared.sent.store(sent.tx.packets(), Ordering::SeqCst);
    shared
        .end_ns
        .store(netio::clock::mono_ns(), Ordering::SeqCst);
    shared.done.store(true, Ordering::SeqCst);
    let (meter, recv_error) = receiver
        .join()
        .map_err(|_| anyhow::anyhow!("the STAMP receiver thread panicked"))?;
    if config.progress {
        eprintln!();
    }

    let packets = sent.tx.packets();
    let figures = meter.finish(packets, config.mode, ee);
    let mut errors: Vec<String> = sent.error.iter().cloned().collect();
    errors.extend(recv_error);
    if packets > 0 && figures.outcome.replies == 0 {
        let refused = shared.refused.load(Ordering::SeqCst);
        errors.push(results::stamp::no_reply(
            config.dest,
            refused,
            config.timeout,
        ));
    }
    let report = figures.into_report(Session {
        spec,
        tx: &sent.tx,
        error: sent.error,
        delay_cdf_ns: config.cdf.then(|| meter.rtt_cdf_ns()).flatten(),
        dest: config.dest,
        tool: format!("dualperf {}", env!("CARGO_PKG_VERSION")),
        interrupted: stop.load(Ordering::SeqCst),
    });
    PartialReport::unless_errors(report, &errors)
}

/// A UDP socket connected to the reflector with the flow's marking, reporting receive
/// metadata (kernel timestamps, DS field, hop limit).
fn open_socket(config: &StampConfig) -> Result<netio::UdpSocket> {
    let any: IpAddr = if config.dest.is_ipv4() {
        Ipv4Addr::UNSPECIFIED.into()
    } else {
        Ipv6Addr::UNSPECIFIED.into()
    };
    let sock = netio::UdpSocket::bind(SocketAddr::new(any, 0), false)?;
    let m = &config.spec.marking;
    let marking = netio::Marking {
        tos: m.tos(),
        ttl: m.ttl,
        flow_label: m.flow_label,
    };
    sock.connect_marked(config.dest, &marking)
        .with_context(|| format!("cannot apply marking {marking:?} towards {}", config.dest))?;
    sock.enable_recv_meta()?;
    sock.set_read_timeout(Some(RECV_TICK))?;
    let _ = sock.set_buffer_sizes(Some(4 << 20), Some(4 << 20));
    Ok(sock)
}

/// The spin before each deadline when none is given: 50 µs, or a quarter of the mean
/// gap if shorter, at least 15 µs (as `send`'s engines).
fn spin_ns(config: &StampConfig) -> u64 {
    if let Some(s) = config.spin {
        return s.as_nanos();
    }
    match config.spec.mean_pps() {
        Some(pps) if pps > 0.0 => ((1e9 / pps / 4.0) as u64).clamp(MIN_SPIN_NS, MAX_SPIN_NS),
        _ => MAX_SPIN_NS,
    }
}

/// Send the flow on its schedule until it ends, fails, or `stop` is set.
fn send_loop(
    sock: &netio::UdpSocket,
    config: &StampConfig,
    writer: &mut PacketWriter,
    shared: &Shared,
    stop: &AtomicBool,
) -> Sent {
    // Timer slack (50 µs by default) would make every sleep overshoot by that much.
    let _ = netio::clock::set_timer_slack_ns(1);
    let spin = spin_ns(config);
    let mut out = Sent {
        tx: TxMeter::default(),
        error: None,
    };
    let origin = Instant::from_nanos(netio::clock::mono_ns() + 1_000_000);
    let mut sched = match Schedule::new(&config.spec, origin) {
        Ok(s) => s,
        Err(e) => {
            out.error = Some(format!("invalid traffic model: {e}"));
            return out;
        }
    };
    let mut bufs = vec![vec![0u8; MAX_UDP_PAYLOAD]; BATCH];
    let mut due: Vec<Transmit> = Vec::with_capacity(BATCH);
    loop {
        if stop.load(Ordering::Relaxed) {
            sched.handle_stop();
            return out;
        }
        let now = Instant::from_nanos(netio::clock::mono_ns());
        due.clear();
        while due.len() < BATCH {
            match sched.poll_transmit(now) {
                Some(t) => due.push(t),
                None => break,
            }
        }
        if !due.is_empty() {
            if let Err(e) = flush(sock, writer, &due, &mut bufs, shared, &mut out.tx, stop) {
                out.error = Some(format!(
                    "sending failed after {} packets: {e}",
                    out.tx.packets()
                ));
                return out;
            }
            continue;
        }
        let Some(next) = sched.poll_timeout() else {
            return out;
        };
        let now = netio::clock::mono_ns();
        let deadline = next.as_nanos();
        if deadline > now + MAX_SLEEP_NS {
            netio::clock::sleep_until(now + MAX_SLEEP_NS, 0);
        } else {
            netio::clock::sleep_until(deadline, spin);
        }
    }
}

/// Write and send the packets `due`, stamped with the wall clock just before the call
/// (again before each retry), and record them; an error ends the flow.
fn flush(
    sock: &netio::UdpSocket,
    writer: &mut PacketWriter,
    due: &[Transmit],
    bufs: &mut [Vec<u8>],
    shared: &Shared,
    tx: &mut TxMeter,
    stop: &AtomicBool,
) -> Result<(), String> {
    let last = due.last().map_or(0, |t| t.seq + 1);
    shared.staged.fetch_max(last, Ordering::SeqCst);
    let mut lens = [0usize; BATCH];
    let mut off = 0;
    let mut stuck_since = None;
    while off < due.len() {
        let wall = netio::clock::wall_ns();
        let actual = netio::clock::mono_ns();
        for (i, t) in due.iter().enumerate().skip(off) {
            lens[i] = writer
                .write(t.seq, wall, t.size_bytes as usize, &mut bufs[i])
                .map_err(|e| e.to_string())?;
        }
        let mut slices: [&[u8]; BATCH] = [&[]; BATCH];
        for (slot, i) in slices.iter_mut().zip(off..due.len()) {
            *slot = &bufs[i][..lens[i]];
        }
        match sock.send_batch(&slices[..due.len() - off]) {
            Ok(0) => {
                // A full socket buffer: retry, unless stopped or stuck for a second.
                let since = *stuck_since.get_or_insert(actual);
                if stop.load(Ordering::Relaxed) || actual.saturating_sub(since) > STUCK_NS {
                    return Ok(());
                }
                std::thread::yield_now();
            }
            // An ICMP port unreachable for an earlier packet, consumed by this call: the
            // batch is retried (the reflector may come up).
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionRefused => {
                shared.refused.store(true, Ordering::Relaxed);
            }
            Err(e) => return Err(e.to_string()),
            Ok(n) => {
                stuck_since = None;
                for (i, t) in due.iter().enumerate().skip(off).take(n) {
                    tx.handle_record(&TxRecord {
                        flow: u32::from(FLOW_ID),
                        seq: t.seq,
                        size_bytes: lens[i] as u32,
                        scheduled_ns: t.scheduled.as_nanos(),
                        actual_ns: actual,
                    });
                }
                off += n;
            }
        }
    }
    Ok(())
}

/// The receiver thread: replies into `meter` until sending is over and either every
/// packet was answered or `--stamp-timeout` has passed since the last one; the meter,
/// and a receive error that ended it early.
fn receive(
    sock: &netio::UdpSocket,
    shared: &Shared,
    mut meter: ReplyMeter,
    config: &StampConfig,
) -> (ReplyMeter, Option<String>) {
    let mut bufs = vec![vec![0u8; 65_536]; BATCH];
    let mut metas = vec![netio::RecvMeta::default(); BATCH];
    let timeout_ns = u64::try_from(config.timeout.as_nanos()).unwrap_or(u64::MAX);
    let key = config.key.as_deref();
    let mut last_print = std::time::Instant::now();
    loop {
        match sock.recv_batch(&mut bufs, &mut metas) {
            Ok(n) => {
                let fallback = netio::clock::wall_ns();
                let staged = shared.staged.load(Ordering::SeqCst);
                for (buf, m) in bufs.iter().zip(&metas).take(n) {
                    let meta = ReplyMeta {
                        len: m.len,
                        rx_ns: m.kernel_ts_ns.unwrap_or(fallback),
                        kernel_ts: m.kernel_ts_ns.is_some(),
                        tos: m.tos,
                        hop_limit: m.hop_limit,
                        flow_label: m.flow_label,
                    };
                    let body = &buf[..m.len.min(buf.len())];
                    meter.handle_datagram(body, config.mode, key, meta, staged);
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionRefused => {
                shared.refused.store(true, Ordering::Relaxed);
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return (meter, Some(format!("receiving replies failed: {e}"))),
        }
        if config.progress && last_print.elapsed() >= StdDuration::from_millis(500) {
            last_print = std::time::Instant::now();
            eprint!(
                "\rdualperf send: {} STAMP packets, {} answered   ",
                shared.staged.load(Ordering::Relaxed),
                meter.answered()
            );
        }
        if shared.done.load(Ordering::SeqCst) {
            let sent = shared.sent.load(Ordering::SeqCst);
            let end = shared.end_ns.load(Ordering::SeqCst);
            let waited = netio::clock::mono_ns().saturating_sub(end);
            if meter.answered() >= sent || waited >= timeout_ns {
                return (meter, None);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_stamp_flags_parse_and_refuse_what_stamp_cannot_do() {
        use clap::Parser;
        let parse = |extra: &[&str]| {
            let mut args = vec!["dualperf", "send", "::1", "--stamp"];
            args.extend_from_slice(extra);
            crate::Cli::try_parse_from(args)
        };
        let key = "00112233445566778899aabbccddeeff";
        let all = [
            "--stamp-auth",
            "--stamp-key",
            key,
            "--stamp-ssid",
            "7",
            "--stamp-cos",
            "--stamp-ptp",
            "--stamp-timeout",
            "500ms",
            "--voip",
            "g711.1",
            "--dscp",
            "EF",
        ];
        assert!(parse(&all).is_ok());
        let refused: [&[&str]; 10] = [
            &["--tcp"],
            &["--reverse"],
            &["--bidir"],
            &["--from", "::2"],
            &["--calls", "2"],
            &["-P", "2"],
            &["--flows", "f"],
            &["--interval", "1s"],
            &["--log", "x.log"],
            &["--stamp-ssid", "0"],
        ];
        for bad in refused {
            assert!(parse(bad).is_err(), "{bad:?}");
        }
        // The STAMP options need --stamp.
        for alone in ["--stamp-cos", "--stamp-auth", "--stamp-ptp"] {
            assert!(crate::Cli::try_parse_from(["dualperf", "send", "::1", alone]).is_err());
        }
    }
}
