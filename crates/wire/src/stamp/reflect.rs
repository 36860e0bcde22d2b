//! What a STAMP Session-Reflector answers (RFC 8762 §4.3, RFC 8972 §4): the reflected
//! packet for a test packet received, never longer than it (no amplification), with the
//! sender's fields copied, its own timestamps, the TLVs it knows filled in and the
//! others returned with the U flag; stateless (the reflector's sequence number is the
//! sender's) or stateful (a counter per session: sender address, port and SSID); and a
//! token bucket per sender address over a packet rate.
//!
//! No clock is read here: the caller passes the monotonic time that paces the rate
//! limit, and a function giving the wall clock, called for the receive time when the
//! kernel gave none and for the send time (t3) just before the packet is written.

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};

use super::{
    sync_source, timestamp_method, ErrorEstimate, Mode, ReflectorRepr, SenderRepr, StampError,
    TimestampFormat, Tlv, TlvBody,
};

/// Most sessions a stateful reflector keeps counters for, and most senders it keeps
/// a rate bucket for; beyond, the oldest half is forgotten.
const MAX_TRACKED: usize = 65_536;

/// How the reflector answers.
#[derive(Clone, Debug)]
pub struct ReflectConfig {
    /// Unauthenticated or authenticated.
    pub mode: Mode,
    /// The HMAC key of authenticated mode.
    pub key: Option<Vec<u8>>,
    /// Number the answers per session (RFC 8972 §4) instead of copying the sender's.
    pub stateful: bool,
    /// Reflected packets a second per sender address (0: unlimited).
    pub max_pps: u32,
    /// The format of its own timestamps.
    pub format: TimestampFormat,
}

/// How a test packet arrived.
#[derive(Clone, Copy, Debug)]
pub struct Arrival {
    /// Its sender.
    pub src: SocketAddr,
    /// The kernel's receive time, ns since the Unix epoch.
    pub kernel_ts_ns: Option<u64>,
    /// The DS field it arrived with.
    pub tos: Option<u8>,
    /// The hop limit (TTL) it arrived with.
    pub hop_limit: Option<u8>,
}

/// Why a test packet gets no answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refusal {
    /// Not a test packet of this mode, or too short for its answer.
    Malformed,
    /// Its HMAC does not match the key.
    Auth,
    /// Its sender is over the packet rate.
    RateLimited,
}

/// An answer written: its length, and the DS field it asks to be sent with (Class of
/// Service TLV's DSCP1, RFC 8972 §4.4).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Reflection {
    /// Octets written, as many as were received.
    pub len: usize,
    /// The DS field for the answer, if the sender asked for one.
    pub tos: Option<u8>,
}

/// A sender's token bucket: `max_pps` tokens a second, as many at most.
#[derive(Clone, Copy, Debug)]
struct Bucket {
    tokens: f64,
    at_ns: u64,
}

/// The reflector's state: its sessions' counters and its senders' buckets.
#[derive(Debug)]
pub struct ReflectorState {
    config: ReflectConfig,
    error_estimate: ErrorEstimate,
    sessions: HashMap<(SocketAddr, u16), u32>,
    buckets: HashMap<IpAddr, Bucket>,
}

/// An IPv4-mapped IPv6 address as the IPv4 address it is.
fn canonical(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
        v4 => v4,
    }
}

impl ReflectorState {
    /// A reflector stamping with its clock's `error_estimate` (RFC 8762 §4.2.1).
    pub fn new(config: ReflectConfig, error_estimate: ErrorEstimate) -> Self {
        Self {
            config,
            error_estimate,
            sessions: HashMap::new(),
            buckets: HashMap::new(),
        }
    }

    /// The reflected packet for `received` into `out`. `now_mono` (ns, any monotonic
    /// clock) paces the rate limit; `wall_ns` reads the wall clock (ns since the Unix
    /// epoch).
    pub fn reflect(
        &mut self,
        received: &[u8],
        arrival: &Arrival,
        now_mono: u64,
        mut wall_ns: impl FnMut() -> u64,
        out: &mut [u8],
    ) -> Result<Reflection, Refusal> {
        if !self.admit(canonical(arrival.src.ip()), now_mono) {
            return Err(Refusal::RateLimited);
        }
        let sender = match SenderRepr::parse(received, self.config.mode, self.config.key.as_deref())
        {
            Ok(s) => s,
            Err(StampError::BadHmac) => return Err(Refusal::Auth),
            Err(_) => return Err(Refusal::Malformed),
        };
        // t2: the kernel's receive time (RFC 8762 §4.3.1 Receive Timestamp).
        let t2_ns = arrival.kernel_ts_ns.unwrap_or_else(&mut wall_ns);
        let tos = arrival.tos.unwrap_or(0);
        let mut reply_tos = None;
        let tlvs = sender
            .tlvs
            .iter()
            .map(|t| self.reflect_tlv(t, tos, &mut reply_tos))
            .collect();
        let seq = if self.config.stateful {
            self.next_seq(arrival.src, sender.ssid)
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
            sender_ttl: arrival.hop_limit.unwrap_or(0),
            tlvs,
        };
        let len = reply.buffer_len(self.config.mode);
        // RFC 8762 §4.3: the reflected packet is as long as the one received, never
        // longer (no amplification); a sender's trailing padding is kept as zeros.
        if len > received.len() || received.len() > out.len() {
            return Err(Refusal::Malformed);
        }
        // t3 as late as possible: just before the packet is written.
        reply.timestamp = fmt.from_unix_ns(wall_ns());
        let n = reply
            .emit(
                &mut out[..received.len()],
                self.config.mode,
                self.config.key.as_deref(),
            )
            .map_err(|_| Refusal::Malformed)?;
        out[n..received.len()].fill(0);
        Ok(Reflection {
            len: received.len(),
            tos: reply_tos,
        })
    }

    /// One TLV as reflected (RFC 8972 §4): known ones filled in, unknown ones copied
    /// with the U flag.
    fn reflect_tlv(&self, t: &Tlv, tos: u8, reply_tos: &mut Option<u8>) -> Tlv {
        // A sender sets U on every TLV; a reflector that knows the type clears it
        // (RFC 8972 §4), one that does not leaves it set.
        let mut flags = t.flags;
        flags.unrecognized = false;
        let body = match &t.body {
            // RFC 8972 §4.4: DSCP2 and ECN as received; DSCP1 asks for the reply's DSCP.
            TlvBody::ClassOfService { dscp1, .. } => {
                *reply_tos = Some((dscp1 & 0x3f) << 2);
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
                    sync_source::NTP
                } else {
                    sync_source::LOCAL_FREE_RUNNING
                };
                TlvBody::TimestampInfo {
                    sync_src_in: src,
                    timestamp_in: timestamp_method::SW_LOCAL,
                    sync_src_out: src,
                    timestamp_out: timestamp_method::SW_LOCAL,
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
    use crate::stamp::TlvFlags;

    const NTP: TimestampFormat = TimestampFormat::Ntp;
    /// The kernel's receive time of every packet here, and the reflector's wall clock.
    const T2: u64 = 1_700_000_000_000_000_000;
    const T3: u64 = 1_700_000_000_000_020_000;

    fn state(stateful: bool, max_pps: u32) -> ReflectorState {
        ReflectorState::new(
            ReflectConfig {
                mode: Mode::Unauthenticated,
                key: None,
                stateful,
                max_pps,
                format: NTP,
            },
            ErrorEstimate::for_error_ns(1000, true, NTP),
        )
    }

    fn arrival(src: &str, tos: u8) -> Arrival {
        Arrival {
            src: src.parse().unwrap(),
            tos: Some(tos),
            hop_limit: Some(61),
            kernel_ts_ns: Some(T2),
        }
    }

    fn packet(seq: u32, ssid: u16, tlvs: Vec<Tlv>, pad: usize) -> Vec<u8> {
        let s = SenderRepr {
            seq,
            timestamp: NTP.from_unix_ns(1_699_999_999_999_000_000),
            error_estimate: ErrorEstimate::for_error_ns(1000, false, NTP),
            ssid,
            tlvs,
        };
        let mut buf = vec![0u8; s.buffer_len(Mode::Unauthenticated) + pad];
        s.emit(&mut buf, Mode::Unauthenticated, None).unwrap();
        buf
    }

    fn reflect(
        state: &mut ReflectorState,
        bytes: &[u8],
        src: &str,
        tos: u8,
    ) -> Result<(ReflectorRepr, Reflection), Refusal> {
        let mut out = vec![0u8; 2048];
        let done = state.reflect(bytes, &arrival(src, tos), 0, || T3, &mut out)?;
        let r = ReflectorRepr::parse(&out[..done.len], Mode::Unauthenticated, None).unwrap();
        Ok((r, done))
    }

    #[test]
    fn a_stateless_reflector_echoes_the_senders_fields_and_stamps_its_own() {
        let mut st = state(false, 0);
        let p = packet(7, 0x1234, Vec::new(), 0);
        let (r, done) = reflect(&mut st, &p, "198.18.1.1:5000", 0xb8).unwrap();
        assert_eq!(
            done,
            Reflection {
                len: p.len(),
                tos: None
            },
            "as long as received"
        );
        assert_eq!(
            (r.seq, r.sender_seq, r.ssid, r.sender_ttl),
            (7, 7, 0x1234, 61)
        );
        assert_eq!(NTP.to_unix_ns(r.receive_timestamp) / 1000, T2 / 1000);
        assert_eq!(NTP.to_unix_ns(r.timestamp) / 1000, T3 / 1000);
        let s = SenderRepr::parse(&p, Mode::Unauthenticated, None).unwrap();
        assert_eq!(r.sender_timestamp, s.timestamp);
        assert_eq!(r.sender_error_estimate, s.error_estimate);
        assert!(r.error_estimate.synchronized);
        // Without the kernel's receive time, t2 is read from the wall clock too.
        let mut out = vec![0u8; 2048];
        let late = Arrival {
            kernel_ts_ns: None,
            ..arrival("198.18.1.1:5000", 0)
        };
        let done = st.reflect(&p, &late, 0, || T3, &mut out).unwrap();
        let r = ReflectorRepr::parse(&out[..done.len], Mode::Unauthenticated, None).unwrap();
        assert_eq!(NTP.to_unix_ns(r.receive_timestamp) / 1000, T3 / 1000);
    }

    #[test]
    fn a_stateful_reflector_counts_per_session() {
        let mut st = state(true, 0);
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
        let mut st = state(false, 0);
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
        let (r, done) = reflect(&mut st, &p, "[2001:2::1]:7", (34 << 2) | 2).unwrap();
        assert_eq!(done.len, p.len());
        assert_eq!(done.tos, Some(46 << 2), "DSCP1 asked for the reply");
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
    fn short_packets_and_floods_get_no_answer() {
        let mut st = state(false, 0);
        let p = packet(1, 0, Vec::new(), 0);
        assert_eq!(
            reflect(&mut st, &p[..40], "198.18.1.1:1", 0).err(),
            Some(Refusal::Malformed)
        );
        assert!(reflect(&mut st, &p, "198.18.1.1:1", 0).is_ok());
        // 10 pkt/s: a burst of 10 passes at one instant, the 11th does not; 100 ms
        // later one more does.
        let mut st = state(false, 10);
        let mut out = vec![0u8; 2048];
        let a = arrival("198.18.1.1:1", 0);
        let mut at = |now: u64| st.reflect(&p, &a, now, || T3, &mut out);
        let ok = (0..11).filter(|_| at(1_000).is_ok()).count();
        assert_eq!(ok, 10);
        assert_eq!(at(1_000).err(), Some(Refusal::RateLimited));
        assert!(at(100_001_000).is_ok());
        // Another sender has its own bucket; an IPv4-mapped address is its IPv4 one.
        let mut out = vec![0u8; 2048];
        for (src, ok) in [("198.18.1.2:1", true), ("[::ffff:198.18.1.1]:1", false)] {
            let r = st.reflect(&p, &arrival(src, 0), 100_001_000, || T3, &mut out);
            assert_eq!(r.is_ok(), ok, "{src}");
        }
    }
}
