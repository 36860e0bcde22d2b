//! `dualperf agent`: a receiver (everything `recv` does) that, on an authenticated
//! request, also sends flows itself: back to the asker (`send --reverse`, `--bidir`) or
//! to a destination the asker names (`send --from`, plans across hosts).
//!
//! An agent is a traffic source on request, so it must not become anyone's amplifier:
//! it wants a key unless it listens on loopback only; it sends only to the asker's own
//! address and to the prefixes of `--allow`; each request's flows are checked against
//! per-session caps on rate, bytes and duration before they start, and halted at the
//! byte and duration caps while they run; at most `--max-senders` requests run at once.
//! Every refusal goes back to the asker as an `Error` with its reason, is printed here,
//! and is counted (`send_refusals`).

use std::net::{IpAddr, SocketAddr, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration as StdDuration;

use anyhow::Result;
use traffic::{FlowSpec, Rate};
use wire::control::{Msg, Protocol};
use wire::time::Duration;

use crate::args::Prefix;
use crate::control::{canonical, write_msg, MsgReader};
use crate::recv::{RecvArgs, SendService, ServeError};
use crate::send::{run_session, wait_for_go, Hold, PartialReport, RunCaps, SendConfig};

/// Run as a measurement agent: receive as `dualperf recv` does, and on an authenticated
/// request send flows too (to the asker for `send --reverse`/`--bidir`, or to a
/// destination within `--allow` for `send --from` and plans across hosts).
///
/// It refuses, with the reason on both sides: a wrong or missing key; a destination that
/// is neither the asker's address nor inside `--allow`; flows above the caps on rate,
/// bytes or duration; more than `--max-senders` requests at once; and connections beyond
/// 64 in their handshake at once (a flood of junk connections).
#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:
  dualperf agent --key-file /etc/dualperf/agent.key --allow 198.18.0.0/15,2001:2::/48
  DUALPERF_KEY=secret dualperf agent --max-rate 100mbit --max-duration 5min
  dualperf agent --bind ::1                  # this host only: no key needed
Then, from another host:
  dualperf send HOST --key secret --reverse --tcp --bulk      # HOST sends to us
  dualperf send HOST --key secret --bidir --voip g711.1       # both ways at once
  dualperf send --from HOST OTHER --key secret                # HOST sends to OTHER

A systemd unit with hardening options: dist/dualperf-agent.service. Security model and
caps: docs/agent.md.")]
pub(crate) struct AgentArgs {
    #[command(flatten)]
    recv: RecvArgs,
    /// Read the shared secret from this file (its first line), instead of --key or
    /// DUALPERF_KEY: keeps it out of the process list.
    #[arg(long, value_name = "FILE", conflicts_with = "key")]
    key_file: Option<std::path::PathBuf>,
    /// Where the agent may send, beyond the asker's own address (which it always may, so
    /// `--reverse` works): addresses or prefixes, comma-separated or repeated
    /// (198.18.0.0/15,2001:2::/48). Default: nowhere else.
    #[arg(long, value_name = "PREFIX", value_delimiter = ',', value_parser = crate::args::prefix)]
    allow: Vec<Prefix>,
    /// Most a request may send, all its flows together, in payload bits a second
    /// (10mbit, 1gbit). A flow whose mean rate is unknown (a heavy-tailed --idt) is
    /// refused; a TCP --bulk flow without --rate is window-limited and bounded by
    /// --max-bytes and --max-duration while it runs.
    #[arg(long, default_value = "1gbit", value_parser = bit_rate, value_name = "RATE")]
    max_rate: u64,
    /// Most payload bytes a request may send (10G, 500M); flows that would send more are
    /// refused, and flows are halted when they reach it.
    #[arg(long, default_value = "100G", value_parser = crate::args::byte_count, value_name = "BYTES")]
    max_bytes: u64,
    /// Longest a request may send; longer flows are refused, and flows are halted at it.
    #[arg(long, default_value = "1h", value_parser = crate::args::std_duration, value_name = "DURATION")]
    max_duration: StdDuration,
    /// Most requests to send at once; more are refused until one ends.
    #[arg(long, default_value_t = 4, value_name = "N")]
    max_senders: usize,
    /// Shift every wall-clock stamp this process takes (send and receive times, clock
    /// exchanges) by this many ns: a test aid that fakes a host whose clock is off.
    #[arg(long, hide = true, allow_hyphen_values = true, value_name = "NS")]
    fake_clock_offset_ns: Option<i64>,
}

pub(crate) fn run(mut args: AgentArgs) -> Result<()> {
    if let Some(path) = &args.key_file {
        let text = std::fs::read_to_string(path).map_err(|e| {
            crate::UsageError(format!("cannot read --key-file {}: {e}", path.display()))
        })?;
        let key = text.lines().next().unwrap_or("").trim().to_owned();
        if key.is_empty() {
            crate::usage!("--key-file {} is empty", path.display());
        }
        args.recv.set_key(key);
    }
    if !args.recv.has_key() && !args.recv.loopback_only() {
        crate::usage!("an agent sends traffic on request: give it a key (--key, --key-file or DUALPERF_KEY), or --bind 127.0.0.1 or ::1 to serve this host only");
    }
    if args.max_senders == 0 {
        crate::usage!("--max-senders must be at least 1");
    }
    if let Some(ns) = args.fake_clock_offset_ns {
        netio::clock::set_wall_offset_ns(ns);
    }
    let service = Arc::new(Agent {
        policy: Policy {
            allow: args.allow,
            max_rate_bps: args.max_rate,
            max_bytes: args.max_bytes,
            max_duration: args.max_duration,
        },
        max_senders: args.max_senders,
        running: AtomicUsize::new(0),
    });
    crate::recv::serve(args.recv, Some(service), "agent")
}

/// `10mbit`, `1gbit`: payload bits a second.
fn bit_rate(s: &str) -> Result<u64, String> {
    match s.parse::<Rate>().map_err(|e| e.to_string())? {
        Rate::Bps(b) => Ok(b),
        _ => Err(format!("'{s}' is not in bits a second (10mbit, 1gbit)")),
    }
}

/// What an agent lets a request do.
#[derive(Clone, Debug)]
pub(crate) struct Policy {
    pub(crate) allow: Vec<Prefix>,
    pub(crate) max_rate_bps: u64,
    pub(crate) max_bytes: u64,
    pub(crate) max_duration: StdDuration,
}

/// Longest an asker may let the agent take to reach a destination's receiver.
const MAX_CONNECT_TIMEOUT: StdDuration = StdDuration::from_secs(120);

/// Longest a held request's flows wait for the asker's `Go` (an asker that neither says
/// go nor leaves frees the agent's slot after this).
const MAX_HOLD: StdDuration = StdDuration::from_secs(600);

/// Most flows one request may ask for.
const MAX_FLOWS: usize = 10_000;

impl Policy {
    /// Check a request to send `flows` to `dest`, asked by `asker`: the reason it is
    /// refused, if it is.
    pub(crate) fn check(
        &self,
        asker: IpAddr,
        dest: SocketAddr,
        flows: &[FlowSpec],
    ) -> Result<(), String> {
        let ip = canonical(dest.ip());
        if ip.is_unspecified() || ip.is_multicast() || dest.port() == 0 {
            return Err(format!("{dest} is not a unicast destination"));
        }
        if let IpAddr::V4(v4) = ip {
            if v4.is_broadcast() {
                return Err(format!("{dest} is a broadcast address"));
            }
        }
        if ip != canonical(asker) && !self.allow.iter().any(|p| p.contains(ip)) {
            let allowed = if self.allow.is_empty() {
                "only the asker's own address (no --allow given)".to_owned()
            } else {
                let list: Vec<String> = self.allow.iter().map(ToString::to_string).collect();
                format!("the asker's own address and {}", list.join(", "))
            };
            return Err(format!(
                "destination {ip} is outside --allow: this agent may send to {allowed}"
            ));
        }
        if flows.is_empty() {
            return Err("the request names no flows".into());
        }
        if flows.len() > MAX_FLOWS {
            return Err(format!(
                "{} flows exceed the {MAX_FLOWS} a request may ask for",
                flows.len()
            ));
        }
        let mut rate_bps = 0.0;
        let mut bytes = 0.0;
        for (i, f) in flows.iter().enumerate() {
            if f.marking.flow_label.is_some() && ip.is_ipv4() {
                return Err(format!("flow {i}: a flow label needs an IPv6 destination"));
            }
            let window_limited = f.unpaced && f.protocol == Protocol::Tcp;
            let bps = match mean_bps(f) {
                Some(b) => b,
                None if window_limited => 0.0,
                None if f.unpaced => {
                    return Err(format!(
                        "flow {i}: an unpaced UDP bulk flow has no rate, so it cannot be held to --max-rate: give it a --rate"
                    ))
                }
                None => {
                    return Err(format!(
                        "flow {i}: its mean rate is unknown (a heavy-tailed --idt), so it cannot be held to --max-rate"
                    ))
                }
            };
            rate_bps += bps;
            if let Some(d) = planned_duration(f, bps) {
                let end = f.start_offset + d;
                if StdDuration::from(end) > self.max_duration {
                    return Err(format!(
                        "flow {i} would send until {end}, beyond this agent's --max-duration of {}",
                        Duration::from(self.max_duration)
                    ));
                }
                bytes += bps / 8.0 * d.as_secs_f64();
            }
            if let Some(b) = f.stop.bytes {
                bytes = bytes.max(b as f64);
            }
        }
        if rate_bps > self.max_rate_bps as f64 {
            return Err(format!(
                "the flows ask for {:.3} Mbit/s, above this agent's --max-rate of {:.3} Mbit/s",
                rate_bps / 1e6,
                self.max_rate_bps as f64 / 1e6
            ));
        }
        if bytes > self.max_bytes as f64 {
            return Err(format!(
                "the flows would send about {:.0} bytes, above this agent's --max-bytes of {}",
                bytes, self.max_bytes
            ));
        }
        Ok(())
    }
}

/// A flow's mean payload rate, bits a second: mean packets a second × mean payload;
/// `None` for a window-limited bulk flow or a rate without a mean.
fn mean_bps(f: &FlowSpec) -> Option<f64> {
    let size = match &f.size_dist {
        None => f64::from(f.size_bytes),
        Some(d) => d.mean()?.max(0.0),
    };
    Some(f.mean_pps()? * size * 8.0)
}

/// How long a flow sends: its duration, or its count or byte limit at its mean rate.
fn planned_duration(f: &FlowSpec, bps: f64) -> Option<Duration> {
    let by_count = f
        .stop
        .count
        .zip(f.mean_pps().filter(|p| *p > 0.0))
        .map(|(n, pps)| n as f64 / pps);
    let by_bytes = f
        .stop
        .bytes
        .filter(|_| bps > 0.0)
        .map(|b| b as f64 * 8.0 / bps);
    let mut secs = [by_count, by_bytes]
        .into_iter()
        .flatten()
        .fold(f64::INFINITY, f64::min);
    if let Some(d) = f.stop.duration {
        secs = secs.min(d.as_secs_f64());
    }
    secs.is_finite()
        .then(|| Duration::from_nanos((secs * 1e9).min(u64::MAX as f64) as u64))
}

/// The agent's sending side.
struct Agent {
    policy: Policy,
    max_senders: usize,
    running: AtomicUsize,
}

/// A slot of `--max-senders`, given back when dropped.
struct Slot<'a>(&'a AtomicUsize);

impl Drop for Slot<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

impl SendService for Agent {
    fn serve(
        &self,
        mut stream: TcpStream,
        mut reader: MsgReader,
        peer: SocketAddr,
        request: Msg,
        stop: &Arc<AtomicBool>,
    ) -> Result<(), ServeError> {
        let refuse = |stream: &mut TcpStream, why: String| {
            let _ = write_msg(
                stream,
                &Msg::Error {
                    message: format!("agent refused: {why}"),
                },
            );
            Err(ServeError::Refused(why))
        };
        let Msg::SendRequest {
            dest,
            port,
            flows,
            interval_ns,
            threads,
            connect_timeout_ns,
            cdf,
            hold,
        } = request
        else {
            return refuse(&mut stream, "expected a request to send".into());
        };
        let flows: Vec<FlowSpec> = match serde_json::from_value(flows) {
            Ok(f) => f,
            Err(e) => return refuse(&mut stream, format!("the flows do not read: {e}")),
        };
        let dest = dest.unwrap_or(SocketAddr::new(peer.ip(), port));
        let dest = SocketAddr::new(canonical(dest.ip()), dest.port());
        if let Err(why) = self.policy.check(peer.ip(), dest, &flows) {
            return refuse(&mut stream, why);
        }
        let interval = interval_ns.map(Duration::from_nanos);
        if interval.is_some_and(|w| w < Duration::from_millis(10)) {
            return refuse(&mut stream, "interval below 10 ms".into());
        }
        if self.running.fetch_add(1, Ordering::SeqCst) >= self.max_senders {
            self.running.fetch_sub(1, Ordering::SeqCst);
            return refuse(
                &mut stream,
                format!(
                    "busy: {} requests are sending (--max-senders); try again",
                    self.max_senders
                ),
            );
        }
        let _slot = Slot(&self.running);
        // The asker answers the destination's challenge: the watcher below hands its
        // answers over, the session's handshake waits for one.
        let (answers_tx, answers) = std::sync::mpsc::channel::<String>();
        let prover = {
            let asker = stream
                .try_clone()
                .map_err(|e| ServeError::Failed(e.into()))?;
            let answers = std::sync::Mutex::new(answers);
            let wait = connect_timeout_ns
                .map(StdDuration::from_nanos)
                .unwrap_or(StdDuration::from_secs(5))
                .clamp(StdDuration::from_secs(1), MAX_CONNECT_TIMEOUT);
            move |nonce: &str| -> Result<String> {
                let mut asker = asker.try_clone()?;
                write_msg(
                    &mut asker,
                    &Msg::AuthQuery {
                        nonce: nonce.to_owned(),
                    },
                )?;
                let answers = answers.lock().unwrap_or_else(|e| e.into_inner());
                answers.recv_timeout(wait).map_err(|_| {
                    anyhow::anyhow!("the asker did not answer the receiver's challenge")
                })
            }
        };
        // A held request: once the session is set up, `Ready` to the asker, and its
        // `Go` (which the watcher hands over) starts the flows.
        let (go_tx, go) = std::sync::mpsc::channel::<()>();
        let hold = match hold {
            true => {
                let asker = stream
                    .try_clone()
                    .map_err(|e| ServeError::Failed(e.into()))?;
                let go = std::sync::Mutex::new(go);
                let hold: Arc<Hold> = Arc::new(move |halt: &AtomicBool| {
                    let Ok(mut asker) = asker.try_clone() else {
                        return false;
                    };
                    if write_msg(&mut asker, &Msg::Ready {}).is_err() {
                        return false;
                    }
                    let go = go.lock().unwrap_or_else(|e| e.into_inner());
                    let until = std::time::Instant::now() + MAX_HOLD;
                    wait_for_go(&go, halt, Some(until)).is_some()
                });
                Some(hold)
            }
            false => None,
        };
        let config = SendConfig {
            prover: Some(Arc::new(prover)),
            hold,
            // As the asker's --connect-timeout (across a congested link a lost SYN
            // waits out TCP's retries), within reason.
            connect_timeout: connect_timeout_ns
                .map(StdDuration::from_nanos)
                .unwrap_or(StdDuration::from_secs(5))
                .clamp(StdDuration::from_secs(1), MAX_CONNECT_TIMEOUT),
            interval,
            threads: threads.map(usize::from),
            cdf,
            caps: Some(RunCaps {
                bytes: self.policy.max_bytes,
                duration: self.policy.max_duration,
            }),
            ..SendConfig::new(dest, flows)
        };
        write_msg(&mut stream, &Msg::SendAccepted {}).map_err(ServeError::Failed)?;
        crate::out::note!(
            "dualperf agent: sending {} flow(s) to {dest} for {peer}",
            config.flows.len()
        );
        // Anything from the asker (its Ctrl-C) or its going away halts the flows, as
        // does stopping the agent.
        let halt = Arc::new(AtomicBool::new(false));
        let done = Arc::new(AtomicBool::new(false));
        let watcher = {
            let mut rd = stream
                .try_clone()
                .map_err(|e| ServeError::Failed(e.into()))?;
            let _ = rd.set_read_timeout(Some(StdDuration::from_millis(200)));
            let (halt, done, stop) = (halt.clone(), done.clone(), stop.clone());
            std::thread::spawn(move || {
                while !done.load(Ordering::SeqCst) {
                    if stop.load(Ordering::SeqCst) {
                        halt.store(true, Ordering::SeqCst);
                    }
                    match reader.read(&mut rd) {
                        Err(e) if crate::control::is_timeout_error(&e) => {}
                        Ok(Msg::AuthAnswer { mac }) => {
                            let _ = answers_tx.send(mac);
                        }
                        Ok(Msg::Go {}) => {
                            let _ = go_tx.send(());
                        }
                        _ => {
                            halt.store(true, Ordering::SeqCst);
                            break;
                        }
                    }
                }
            })
        };
        let (report, error) = match run_session(&config, &halt) {
            Ok(r) => (Some(r), None),
            Err(e) => match e.downcast::<PartialReport>() {
                Ok(p) => (Some(p.report), Some(p.error)),
                Err(e) => (None, Some(format!("{e:#}"))),
            },
        };
        done.store(true, Ordering::SeqCst);
        let _ = watcher.join();
        let _ = stream.set_read_timeout(None);
        let msg = Msg::SendDone {
            report: report.and_then(|r| serde_json::to_value(r).ok()),
            error,
        };
        write_msg(&mut stream, &msg).map_err(ServeError::Failed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(allow: &[&str]) -> Policy {
        Policy {
            allow: allow
                .iter()
                .map(|p| crate::args::prefix(p).unwrap())
                .collect(),
            max_rate_bps: 10_000_000,
            max_bytes: 100_000_000,
            max_duration: StdDuration::from_secs(60),
        }
    }

    fn udp(rate: Rate, size: u32, secs: u64) -> FlowSpec {
        FlowSpec {
            rate,
            size_bytes: size,
            stop: traffic::flow::StopSpec::after(Duration::from_secs(secs)),
            ..FlowSpec::default()
        }
    }

    const ASKER: &str = "198.18.9.2";

    fn dest(s: &str) -> SocketAddr {
        s.parse().unwrap()
    }

    #[test]
    fn the_asker_is_always_allowed_and_others_only_inside_allow() {
        let flows = [udp(Rate::MilliPps(100_000), 100, 5)];
        let asker: IpAddr = ASKER.parse().unwrap();
        let none = policy(&[]);
        assert_eq!(none.check(asker, dest("198.18.9.2:4646"), &flows), Ok(()));
        let why = none
            .check(asker, dest("198.18.4.2:4646"), &flows)
            .unwrap_err();
        assert!(
            why.contains("outside --allow") && why.contains("no --allow"),
            "{why}"
        );
        let lab = policy(&["198.18.0.0/15"]);
        assert_eq!(lab.check(asker, dest("198.18.4.2:4646"), &flows), Ok(()));
        let why = lab
            .check(asker, dest("192.0.2.1:4646"), &flows)
            .unwrap_err();
        assert!(why.contains("198.18.0.0/15"), "{why}");
        for bad in [
            "224.0.0.1:4646",
            "255.255.255.255:4646",
            "198.18.9.2:0",
            "0.0.0.0:4646",
        ] {
            assert!(
                policy(&["0.0.0.0/0"])
                    .check(asker, dest(bad), &flows)
                    .is_err(),
                "{bad}"
            );
        }
    }

    #[test]
    fn rate_bytes_and_duration_caps_refuse_with_their_figures() {
        let asker: IpAddr = ASKER.parse().unwrap();
        let to = dest("198.18.9.2:4646");
        let p = policy(&[]);
        // 8 Mbit/s for 10 s: 10 MB, within every cap.
        assert_eq!(
            p.check(asker, to, &[udp(Rate::Bps(8_000_000), 1000, 10)]),
            Ok(())
        );
        // Two of them: 16 Mbit/s.
        let two = [
            udp(Rate::Bps(8_000_000), 1000, 10),
            udp(Rate::Bps(8_000_000), 1000, 10),
        ];
        let why = p.check(asker, to, &two).unwrap_err();
        assert!(
            why.contains("16.000 Mbit/s") && why.contains("--max-rate"),
            "{why}"
        );
        // 61 s against a 60 s cap.
        let why = p
            .check(asker, to, &[udp(Rate::Bps(1_000), 100, 61)])
            .unwrap_err();
        assert!(why.contains("--max-duration"), "{why}");
        // A start offset counts: 30 s + 31 s.
        let mut late = udp(Rate::Bps(1_000), 100, 31);
        late.start_offset = Duration::from_secs(30);
        assert!(p
            .check(asker, to, &[late])
            .unwrap_err()
            .contains("--max-duration"));
        // 9 Mbit/s for 60 s: 67.5 MB; the cap is 100 MB. A 200 MB byte limit is over.
        let mut big = udp(Rate::Bps(9_000_000), 1000, 60);
        assert_eq!(p.check(asker, to, std::slice::from_ref(&big)), Ok(()));
        let mut tighter = p.clone();
        tighter.max_bytes = 50_000_000;
        let why = tighter
            .check(asker, to, std::slice::from_ref(&big))
            .unwrap_err();
        assert!(why.contains("--max-bytes"), "{why}");
        big.stop.bytes = Some(200_000_000);
        big.stop.duration = None;
        // By its byte limit at 9 Mbit/s it would send for 178 s: over the duration cap.
        assert!(p.check(asker, to, &[big]).is_err());
        // A window-limited TCP bulk flow passes the static checks (bounded at run time).
        let bulk = FlowSpec {
            protocol: Protocol::Tcp,
            unpaced: true,
            ..udp(Rate::Bps(0), 131_072, 10)
        };
        assert_eq!(p.check(asker, to, &[bulk]), Ok(()));
        assert!(p.check(asker, to, &[]).is_err());
    }

    #[test]
    fn a_flow_label_needs_ipv6() {
        let mut f = udp(Rate::MilliPps(1_000), 100, 1);
        f.marking.flow_label = Some(7);
        let asker: IpAddr = ASKER.parse().unwrap();
        assert!(policy(&[])
            .check(asker, dest("198.18.9.2:1"), &[f])
            .is_err());
    }

    #[test]
    fn rates_must_be_bits() {
        assert_eq!(bit_rate("10mbit"), Ok(10_000_000));
        assert!(bit_rate("100pps").is_err());
    }
}
