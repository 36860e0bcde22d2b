//! The STAMP Session-Reflector (RFC 8762 §4.3, RFC 8972): `dualperf recv --stamp`.
//!
//! One thread reads test packets on its UDP port (dual-stack, recvmmsg batches, kernel
//! receive timestamps and the received DS byte and TTL), answers each with a reflected
//! packet never larger than the one received, and sends it back from the address it
//! was sent to (a batch of answers in one sendmmsg). Stateless (the reflector's
//! sequence number is the sender's) or stateful (a counter per session: sender address,
//! port and SSID; RFC 8972 §4), so a sender can tell forward from reverse loss. A sender outside `--stamp-allow`, or over
//! `--stamp-max-pps`, gets no answer; everything dropped is counted.

use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result};
use wire::stamp::reflect::{Arrival, ReflectConfig, ReflectorState, Refusal};
use wire::stamp::{ErrorEstimate, Mode, TimestampFormat};

use crate::args::Prefix;

/// What the reflector needs.
#[derive(Clone, Debug)]
pub(crate) struct ReflectorConfig {
    pub(crate) bind: SocketAddr,
    pub(crate) mode: Mode,
    pub(crate) key: Option<Vec<u8>>,
    pub(crate) stateful: bool,
    /// Reflected packets a second per sender address (0: unlimited).
    pub(crate) max_pps: u32,
    /// Poll the socket while test packets come less than this far apart (`recv
    /// --busy-poll`; zero: always sleep in the kernel).
    pub(crate) busy_poll: Duration,
    /// Senders it answers (empty: any).
    pub(crate) allow: Vec<Prefix>,
    pub(crate) format: TimestampFormat,
}

/// What the reflector did.
#[derive(Debug, Default)]
pub(crate) struct ReflectorCounters {
    pub(crate) reflected: AtomicU64,
    pub(crate) malformed: AtomicU64,
    pub(crate) auth_failures: AtomicU64,
    pub(crate) not_allowed: AtomicU64,
    pub(crate) rate_limited: AtomicU64,
    pub(crate) send_failures: AtomicU64,
}

impl ReflectorCounters {
    /// The counters as `recv --json` reports them.
    pub(crate) fn snapshot(&self) -> results::recv::StampCounters {
        let g = |a: &AtomicU64| a.load(Ordering::Relaxed);
        results::recv::StampCounters {
            reflected: g(&self.reflected),
            malformed: g(&self.malformed),
            auth_failures: g(&self.auth_failures),
            not_allowed: g(&self.not_allowed),
            rate_limited: g(&self.rate_limited),
            send_failures: g(&self.send_failures),
        }
    }
}

/// The reflector's UDP socket, bound and ready.
pub(crate) struct Reflector {
    socket: netio::UdpSocket,
    config: ReflectorConfig,
    pub(crate) counters: Arc<ReflectorCounters>,
}

impl Reflector {
    /// Bind the port (dual-stack on `[::]`).
    pub(crate) fn bind(config: ReflectorConfig) -> Result<Self> {
        let dual = config.bind.ip() == IpAddr::V6(std::net::Ipv6Addr::UNSPECIFIED);
        let socket = netio::UdpSocket::bind(config.bind, dual)
            .with_context(|| format!("cannot bind the STAMP reflector to UDP {}", config.bind))?;
        socket
            .enable_recv_meta()
            .context("cannot enable receive metadata on the STAMP socket")?;
        socket.set_read_timeout(Some(Duration::from_millis(100)))?;
        let _ = socket.set_buffer_sizes(Some(4 << 20), Some(4 << 20));
        Ok(Self {
            socket,
            config,
            counters: Arc::new(ReflectorCounters::default()),
        })
    }

    pub(crate) fn local_addr(&self) -> Result<SocketAddr> {
        Ok(self.socket.local_addr()?)
    }

    /// Answer test packets until `stop`.
    ///
    /// Each received batch is answered with one `sendmmsg`; on loopback the answers
    /// to one sender go as one UDP GSO send (`netio::UdpSocket::send_batch_to`). The
    /// reflector's timestamp (t3) is taken as each answer is written, so an answer
    /// then waits for the rest of its batch to be written (well under a microsecond
    /// an answer) and for the kernel to send the messages before its own in the
    /// same call. A batch holds more than one packet only when packets queued while
    /// the last batch was answered. While test packets come densely the socket is
    /// polled (`--busy-poll`), so a sender on the same host pays no wake-up of this
    /// thread per packet.
    pub(crate) fn run(self, stop: &AtomicBool) {
        const BATCH: usize = netio::MAX_BATCH;
        // Each buffer allocated zeroed on its own: only the pages datagrams write to
        // become resident.
        let mut bufs: Vec<Vec<u8>> = (0..BATCH).map(|_| vec![0u8; MAX_DATAGRAM]).collect();
        let mut metas = vec![netio::RecvMeta::default(); BATCH];
        let mut outs: Vec<Vec<u8>> = (0..BATCH).map(|_| vec![0u8; MAX_DATAGRAM]).collect();
        let mut answers: Vec<Answer> = Vec::with_capacity(BATCH);
        let mut state = State::new(&self.config);
        let max_gap_ns = u64::try_from(self.config.busy_poll.as_nanos()).unwrap_or(u64::MAX);
        let mut poll = netio::poll::RecvPoll::new(max_gap_ns);
        let _ = netio::clock::set_timer_slack_ns(1);
        while !stop.load(Ordering::Relaxed) {
            let n = match self
                .socket
                .recv_batch_polled(&mut poll, POLL_NAP, &mut bufs, &mut metas)
            {
                Ok(n) => n,
                Err(e) if crate::control::is_timeout(&e) => continue,
                Err(e) => {
                    eprintln!("dualperf recv: STAMP reflector: {e}");
                    std::thread::sleep(Duration::from_millis(10));
                    continue;
                }
            };
            let now_mono = netio::clock::mono_ns();
            answers.clear();
            for (buf, meta) in bufs.iter().zip(&metas).take(n) {
                let received = &buf[..meta.len.min(buf.len())];
                let out = &mut outs[answers.len()];
                match state.reflect(received, meta, now_mono, out) {
                    Ok((len, marking)) => answers.push(Answer {
                        len,
                        dst: meta.src,
                        src_ip: meta.dst_ip,
                        marking,
                    }),
                    Err(why) => {
                        let c = &self.counters;
                        match why {
                            Drop::Malformed => &c.malformed,
                            Drop::Auth => &c.auth_failures,
                            Drop::NotAllowed => &c.not_allowed,
                            Drop::RateLimited => &c.rate_limited,
                        }
                        .fetch_add(1, Ordering::Relaxed);
                    }
                }
            }
            self.send_answers(&outs, &answers);
        }
    }

    /// Send the batch's answers, retrying what the kernel did not take at once; an
    /// answer it refuses (or that waits over [`STUCK_NS`]) counts as a failed reply.
    fn send_answers(&self, outs: &[Vec<u8>], answers: &[Answer]) {
        let mut batch = [netio::Datagram {
            buf: &[],
            dst: SocketAddr::from(([0, 0, 0, 0], 0)),
            src_ip: None,
            marking: netio::Marking::default(),
        }; netio::MAX_BATCH];
        for ((slot, a), out) in batch.iter_mut().zip(answers).zip(outs) {
            *slot = netio::Datagram {
                buf: &out[..a.len],
                dst: a.dst,
                src_ip: a.src_ip,
                marking: a.marking,
            };
        }
        let batch = &batch[..answers.len()];
        let (mut off, mut stuck_since) = (0, None);
        while off < batch.len() {
            match self.socket.send_batch_to(&batch[off..]) {
                Ok(0) => {
                    let now = netio::clock::mono_ns();
                    if now.saturating_sub(*stuck_since.get_or_insert(now)) > STUCK_NS {
                        let left = (batch.len() - off) as u64;
                        self.counters
                            .send_failures
                            .fetch_add(left, Ordering::Relaxed);
                        return;
                    }
                    std::thread::yield_now();
                }
                Ok(sent) => {
                    stuck_since = None;
                    self.counters
                        .reflected
                        .fetch_add(sent as u64, Ordering::Relaxed);
                    off += sent;
                }
                // The first answer cannot go (its marking, its source): skip it.
                Err(_) => {
                    self.counters.send_failures.fetch_add(1, Ordering::Relaxed);
                    off += 1;
                }
            }
        }
    }
}

/// One written answer: its length in its buffer, where it goes, from which address.
struct Answer {
    len: usize,
    dst: SocketAddr,
    src_ip: Option<IpAddr>,
    marking: netio::Marking,
}

/// Largest UDP datagram a test packet can be.
const MAX_DATAGRAM: usize = 65_536;
/// Nap between polls of a quiet socket (as `recv`'s UDP threads).
const POLL_NAP: Duration = Duration::from_micros(10);
/// How long an answer may wait for room in the socket's send buffer.
const STUCK_NS: u64 = 100_000_000;

/// Why a test packet got no answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Drop {
    Malformed,
    Auth,
    NotAllowed,
    RateLimited,
}

/// The reflector's state, apart from its socket: its allow-list, then
/// `wire::stamp::reflect`'s answers on this host's clocks.
pub(crate) struct State {
    allow: Vec<Prefix>,
    answers: ReflectorState,
}

impl State {
    pub(crate) fn new(config: &ReflectorConfig) -> Self {
        // Our clock's own error, as the kernel estimates it (RFC 8762 §4.2.1's Error
        // Estimate, RFC 4656 §4.1.2), S set when a daemon disciplines it.
        let (synced, err_ns) = netio::clock::adjtimex_state().map_or((false, u64::MAX), |k| {
            (k.synchronised, k.est_error_ns.max(1))
        });
        let answers = ReflectConfig {
            mode: config.mode,
            key: config.key.clone(),
            stateful: config.stateful,
            max_pps: config.max_pps,
            format: config.format,
        };
        Self {
            allow: config.allow.clone(),
            answers: ReflectorState::new(
                answers,
                ErrorEstimate::for_error_ns(err_ns, synced, config.format),
            ),
        }
    }

    /// The reflected packet for `received` into `out`: its length and the marking to
    /// send it with. `now_mono` paces the rate limit.
    pub(crate) fn reflect(
        &mut self,
        received: &[u8],
        meta: &netio::RecvMeta,
        now_mono: u64,
        out: &mut [u8],
    ) -> Result<(usize, netio::Marking), Drop> {
        let src_ip = wire::prefix::unmapped(meta.src.ip());
        if !self.allow.is_empty() && !self.allow.iter().any(|p| p.contains(src_ip)) {
            return Err(Drop::NotAllowed);
        }
        let arrival = Arrival {
            src: meta.src,
            kernel_ts_ns: meta.kernel_ts_ns,
            tos: meta.tos,
            hop_limit: meta.hop_limit,
        };
        match self
            .answers
            .reflect(received, &arrival, now_mono, netio::clock::wall_ns, out)
        {
            Ok(r) => Ok((
                r.len,
                netio::Marking {
                    tos: r.tos,
                    ..netio::Marking::default()
                },
            )),
            Err(Refusal::Malformed) => Err(Drop::Malformed),
            Err(Refusal::Auth) => Err(Drop::Auth),
            Err(Refusal::RateLimited) => Err(Drop::RateLimited),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(allow: &[&str]) -> ReflectorConfig {
        ReflectorConfig {
            bind: "[::]:0".parse().unwrap(),
            mode: Mode::Unauthenticated,
            key: None,
            stateful: false,
            max_pps: 0,
            busy_poll: Duration::ZERO,
            allow: allow
                .iter()
                .map(|p| crate::args::prefix(p).unwrap())
                .collect(),
            format: TimestampFormat::Ntp,
        }
    }

    #[test]
    fn senders_outside_the_allow_list_get_no_answer() {
        let s = wire::stamp::SenderRepr {
            seq: 1,
            timestamp: 0,
            error_estimate: ErrorEstimate::for_error_ns(1000, false, TimestampFormat::Ntp),
            ssid: 0,
            tlvs: Vec::new(),
        };
        let mut p = vec![0u8; s.buffer_len(Mode::Unauthenticated)];
        s.emit(&mut p, Mode::Unauthenticated, None).unwrap();
        let mut st = State::new(&config(&["198.18.0.0/15"]));
        let mut out = vec![0u8; 2048];
        let mut from = |src: &str| {
            let meta = netio::RecvMeta {
                len: p.len(),
                src: src.parse().unwrap(),
                ..netio::RecvMeta::default()
            };
            st.reflect(&p, &meta, 0, &mut out).map(|(len, _)| len)
        };
        assert_eq!(from("192.0.2.1:1"), Err(Drop::NotAllowed));
        assert_eq!(from("198.18.1.1:1"), Ok(44));
        // An IPv4-mapped IPv6 sender is its IPv4 address.
        assert_eq!(from("[::ffff:192.0.2.1]:1"), Err(Drop::NotAllowed));
        assert_eq!(from("[::ffff:198.19.0.1]:1"), Ok(44));
    }
}
