//! The STAMP Session-Reflector (RFC 8762 §4.3, RFC 8972): `dualperf recv --stamp`.
//!
//! One thread reads test packets on its UDP port (dual-stack, recvmmsg batches, kernel
//! receive timestamps and the received DS byte and TTL), answers each with a reflected
//! packet never larger than the one received, and sends it back from the address it
//! was sent to (a batch of answers in one sendmmsg). Stateless (the reflector's
//! sequence number is the sender's) or stateful (a counter per session: sender address,
//! port and SSID; RFC 8972 §4), so a sender can tell forward from reverse loss. A sender outside `--stamp-allow`, or over
//! `--stamp-max-pps`, gets no answer; everything dropped is counted.

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result};
use wire::stamp::{ErrorEstimate, Mode, ReflectorRepr, SenderRepr, TimestampFormat, Tlv, TlvBody};

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

/// Most sessions a stateful reflector keeps counters for, and most senders it keeps
/// a rate bucket for; beyond, the oldest half is forgotten.
const MAX_TRACKED: usize = 65_536;

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

/// A sender's token bucket: `max_pps` tokens a second, as many at most.
#[derive(Clone, Copy, Debug)]
struct Bucket {
    tokens: f64,
    at_ns: u64,
}

/// The reflector's state, apart from its socket: what a test packet gets back.
pub(crate) struct State {
    config: ReflectorConfig,
    error_estimate: ErrorEstimate,
    sessions: HashMap<(SocketAddr, u16), u32>,
    buckets: HashMap<IpAddr, Bucket>,
}

impl State {
    pub(crate) fn new(config: &ReflectorConfig) -> Self {
        // Our clock's own error, as the kernel estimates it (RFC 8762 §4.2.1's Error
        // Estimate, RFC 4656 §4.1.2), S set when a daemon disciplines it.
        let (synced, err_ns) = netio::clock::adjtimex_state().map_or((false, u64::MAX), |k| {
            (k.synchronised, k.est_error_ns.max(1))
        });
        Self {
            config: config.clone(),
            error_estimate: ErrorEstimate::for_error_ns(err_ns, synced, config.format),
            sessions: HashMap::new(),
            buckets: HashMap::new(),
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
        let src_ip = crate::control::canonical(meta.src.ip());
        if !self.config.allow.is_empty() && !self.config.allow.iter().any(|p| p.contains(src_ip)) {
            return Err(Drop::NotAllowed);
        }
        if !self.admit(src_ip, now_mono) {
            return Err(Drop::RateLimited);
        }
        let sender = match SenderRepr::parse(received, self.config.mode, self.config.key.as_deref())
        {
            Ok(s) => s,
            Err(wire::stamp::StampError::BadHmac) => return Err(Drop::Auth),
            Err(_) => return Err(Drop::Malformed),
        };
        // t2: the kernel's receive time (RFC 8762 §4.3.1 Receive Timestamp).
        let t2_ns = meta.kernel_ts_ns.unwrap_or_else(netio::clock::wall_ns);
        let tos = meta.tos.unwrap_or(0);
        let mut marking = netio::Marking::default();
        let tlvs = sender
            .tlvs
            .iter()
            .map(|t| self.reflect_tlv(t, tos, &mut marking))
            .collect();
        let seq = if self.config.stateful {
            self.next_seq(meta.src, sender.ssid)
        } else {
            sender.seq
        };
        let fmt = self.config.format;
        let mut reply = ReflectorRepr {
            seq,
            timestamp: 0,
            error_estimate: self.error_estimate,
            ssid: sender.ssid,
            receive_timestamp: fmt.from_unix_ns(t2_ns),
            sender_seq: sender.seq,
            sender_timestamp: sender.timestamp,
            sender_error_estimate: sender.error_estimate,
            sender_ttl: meta.hop_limit.unwrap_or(0),
            tlvs,
        };
        let len = reply.buffer_len(self.config.mode);
        // RFC 8762 §4.3: the reflected packet is as long as the one received, never
        // longer (no amplification); a sender's trailing padding is kept as zeros.
        if len > received.len() || received.len() > out.len() {
            return Err(Drop::Malformed);
        }
        // t3 as late as possible: just before the packet is written.
        reply.timestamp = fmt.from_unix_ns(netio::clock::wall_ns());
        let n = reply
            .emit(
                &mut out[..received.len()],
                self.config.mode,
                self.config.key.as_deref(),
            )
            .map_err(|_| Drop::Malformed)?;
        out[n..received.len()].fill(0);
        Ok((received.len(), marking))
    }

    /// One TLV as reflected (RFC 8972 §4): known ones filled in, unknown ones copied
    /// with the U flag.
    fn reflect_tlv(&self, t: &Tlv, tos: u8, marking: &mut netio::Marking) -> Tlv {
        // A sender sets U on every TLV; a reflector that knows the type clears it
        // (RFC 8972 §4), one that does not leaves it set.
        let mut flags = t.flags;
        flags.unrecognized = false;
        let body = match &t.body {
            // RFC 8972 §4.4: DSCP2 and ECN as received; DSCP1 asks for the reply's DSCP.
            TlvBody::ClassOfService { dscp1, .. } => {
                marking.tos = Some((dscp1 & 0x3f) << 2);
                TlvBody::ClassOfService {
                    dscp1: *dscp1,
                    dscp2: tos >> 2,
                    ecn: tos & 0x03,
                    rpd: 0,
                }
            }
            // RFC 8972 §4.3: how this reflector stamps. NTP when the kernel reports
            // its clock disciplined (an NTP daemon), free-running otherwise; software
            // stamps (the kernel's on receive, ours on send).
            TlvBody::TimestampInfo { .. } => {
                let src = if self.error_estimate.synchronized {
                    wire::stamp::sync_source::NTP
                } else {
                    wire::stamp::sync_source::LOCAL_FREE_RUNNING
                };
                TlvBody::TimestampInfo {
                    sync_src_in: src,
                    timestamp_in: wire::stamp::timestamp_method::SW_LOCAL,
                    sync_src_out: src,
                    timestamp_out: wire::stamp::timestamp_method::SW_LOCAL,
                }
            }
            TlvBody::Unknown { kind, value } => {
                flags.unrecognized = true;
                TlvBody::Unknown {
                    kind: *kind,
                    value: value.clone(),
                }
            }
            other => other.clone(),
        };
        Tlv { flags, body }
    }

    /// Whether `src` may have one more reflected packet now.
    fn admit(&mut self, src: IpAddr, now_ns: u64) -> bool {
        let rate = f64::from(self.config.max_pps);
        if rate == 0.0 {
            return true;
        }
        if self.buckets.len() >= MAX_TRACKED && !self.buckets.contains_key(&src) {
            self.buckets.clear();
        }
        let b = self.buckets.entry(src).or_insert(Bucket {
            tokens: rate,
            at_ns: now_ns,
        });
        let dt = now_ns.saturating_sub(b.at_ns) as f64 / 1e9;
        b.tokens = (b.tokens + dt * rate).min(rate);
        b.at_ns = now_ns;
        if b.tokens >= 1.0 {
            b.tokens -= 1.0;
            true
        } else {
            false
        }
    }

    /// A stateful reflector's next sequence number for a session (RFC 8972 §4).
    fn next_seq(&mut self, src: SocketAddr, ssid: u16) -> u32 {
        if self.sessions.len() >= MAX_TRACKED && !self.sessions.contains_key(&(src, ssid)) {
            self.sessions.clear();
        }
        let n = self.sessions.entry((src, ssid)).or_insert(0);
        let seq = *n;
        *n = n.wrapping_add(1);
        seq
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use wire::stamp::TlvFlags;

    fn config(stateful: bool, max_pps: u32, allow: &[&str]) -> ReflectorConfig {
        ReflectorConfig {
            bind: "[::]:0".parse().unwrap(),
            mode: Mode::Unauthenticated,
            key: None,
            stateful,
            max_pps,
            busy_poll: Duration::ZERO,
            allow: allow
                .iter()
                .map(|p| crate::args::prefix(p).unwrap())
                .collect(),
            format: TimestampFormat::Ntp,
        }
    }

    fn meta(src: &str, len: usize, tos: u8) -> netio::RecvMeta {
        netio::RecvMeta {
            len,
            src: src.parse().unwrap(),
            tos: Some(tos),
            hop_limit: Some(61),
            kernel_ts_ns: Some(1_700_000_000_000_000_000),
            ..netio::RecvMeta::default()
        }
    }

    fn packet(seq: u32, ssid: u16, tlvs: Vec<Tlv>, pad: usize) -> Vec<u8> {
        let s = SenderRepr {
            seq,
            timestamp: TimestampFormat::Ntp.from_unix_ns(1_699_999_999_999_000_000),
            error_estimate: ErrorEstimate::for_error_ns(1000, false, TimestampFormat::Ntp),
            ssid,
            tlvs,
        };
        let mut buf = vec![0u8; s.buffer_len(Mode::Unauthenticated) + pad];
        s.emit(&mut buf, Mode::Unauthenticated, None).unwrap();
        buf
    }

    fn reflect(
        state: &mut State,
        bytes: &[u8],
        src: &str,
        tos: u8,
    ) -> Result<(ReflectorRepr, usize, netio::Marking), Drop> {
        let mut out = vec![0u8; 2048];
        let (len, marking) = state.reflect(bytes, &meta(src, bytes.len(), tos), 0, &mut out)?;
        let r = ReflectorRepr::parse(&out[..len], Mode::Unauthenticated, None).unwrap();
        Ok((r, len, marking))
    }

    #[test]
    fn a_stateless_reflector_echoes_the_senders_fields_and_stamps_its_own() {
        let mut st = State::new(&config(false, 0, &[]));
        let p = packet(7, 0x1234, Vec::new(), 0);
        let (r, len, _) = reflect(&mut st, &p, "198.18.1.1:5000", 0xb8).unwrap();
        assert_eq!(len, p.len(), "as long as received");
        assert_eq!(
            (r.seq, r.sender_seq, r.ssid, r.sender_ttl),
            (7, 7, 0x1234, 61)
        );
        assert_eq!(
            TimestampFormat::Ntp.to_unix_ns(r.receive_timestamp) / 1000,
            1_700_000_000_000_000_000 / 1000
        );
        let s = SenderRepr::parse(&p, Mode::Unauthenticated, None).unwrap();
        assert_eq!(r.sender_timestamp, s.timestamp);
        assert_eq!(r.sender_error_estimate, s.error_estimate);
    }

    #[test]
    fn a_stateful_reflector_counts_per_session() {
        let mut st = State::new(&config(true, 0, &[]));
        let seqs: Vec<u32> = [
            (5, "198.18.1.1:1", 1),
            (9, "198.18.1.1:1", 1),
            (0, "198.18.1.1:1", 2),
            (3, "198.18.1.2:1", 1),
            (20, "198.18.1.1:1", 1),
        ]
        .iter()
        .map(|(seq, src, ssid)| {
            reflect(&mut st, &packet(*seq, *ssid, Vec::new(), 0), src, 0)
                .unwrap()
                .0
                .seq
        })
        .collect();
        assert_eq!(seqs, [0, 1, 0, 0, 2]);
    }

    #[test]
    fn tlvs_are_filled_in_or_flagged_and_padding_is_kept() {
        let mut st = State::new(&config(false, 0, &[]));
        // As a sender sends them: U set on each (RFC 8972 §4).
        let tlvs = vec![
            Tlv {
                flags: TlvFlags::SENDER,
                body: TlvBody::ClassOfService {
                    dscp1: 46,
                    dscp2: 0,
                    ecn: 0,
                    rpd: 0,
                },
            },
            Tlv {
                flags: TlvFlags::SENDER,
                body: TlvBody::ExtraPadding(100),
            },
            Tlv {
                flags: TlvFlags::SENDER,
                body: TlvBody::Unknown {
                    kind: 200,
                    value: vec![1, 2, 3, 4],
                },
            },
        ];
        let p = packet(1, 0, tlvs, 3);
        // Received as AF41 with ECT(0).
        let (r, len, marking) = reflect(&mut st, &p, "[2001:2::1]:7", (34 << 2) | 2).unwrap();
        assert_eq!(len, p.len());
        assert_eq!(marking.tos, Some(46 << 2), "DSCP1 asked for the reply");
        assert_eq!(
            r.tlvs[0].body,
            TlvBody::ClassOfService {
                dscp1: 46,
                dscp2: 34,
                ecn: 2,
                rpd: 0
            }
        );
        assert_eq!(r.tlvs[1].body, TlvBody::ExtraPadding(100));
        assert!(r.tlvs[2].flags.unrecognized);
        assert!(!r.tlvs[1].flags.unrecognized);
    }

    #[test]
    fn short_packets_outsiders_and_floods_get_no_answer() {
        let mut st = State::new(&config(false, 0, &["198.18.0.0/15"]));
        let p = packet(1, 0, Vec::new(), 0);
        assert_eq!(
            reflect(&mut st, &p[..40], "198.18.1.1:1", 0).err(),
            Some(Drop::Malformed)
        );
        assert_eq!(
            reflect(&mut st, &p, "192.0.2.1:1", 0).err(),
            Some(Drop::NotAllowed)
        );
        assert!(reflect(&mut st, &p, "198.18.1.1:1", 0).is_ok());
        // 10 pkt/s: a burst of 10 passes at one instant, the 11th does not; 100 ms
        // later one more does.
        let mut st = State::new(&config(false, 10, &[]));
        let mut out = vec![0u8; 2048];
        let m = meta("198.18.1.1:1", p.len(), 0);
        let ok = (0..11)
            .filter(|_| st.reflect(&p, &m, 1_000, &mut out).is_ok())
            .count();
        assert_eq!(ok, 10);
        assert_eq!(
            st.reflect(&p, &m, 1_000, &mut out).err(),
            Some(Drop::RateLimited)
        );
        assert!(st.reflect(&p, &m, 100_001_000, &mut out).is_ok());
        // Another sender has its own bucket.
        assert!(st
            .reflect(&p, &meta("198.18.1.2:1", p.len(), 0), 1_000, &mut out)
            .is_ok());
    }
}
