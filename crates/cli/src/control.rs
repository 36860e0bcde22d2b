//! Control-channel plumbing shared by `send` and `recv`: framed message I/O on a
//! `TcpStream`, randomness, and address resolution.

use std::io::{Read, Write};
use std::net::{IpAddr, SocketAddr, TcpStream, ToSocketAddrs};

use anyhow::{bail, Context, Result};
use meter::clock::{Exchange, OffsetEstimate, OffsetFilter};
use wire::control::stranger::{FirstBytes, Silence};
use wire::control::{self, Msg, PeerClosed, Results, MAX_MSG_LEN};
use wire::frame::FrameDecoder;
use wire::prefix::unmapped;

/// Default port of the receiver (UDP and TCP data, TCP control).
pub(crate) const DEFAULT_PORT: u16 = 4646;

/// Most windows a session may ask the receiver for, all flows together: the series
/// travel in one results message (about 300 bytes of JSON a window, under its 16 MiB).
pub(crate) const MAX_SESSION_WINDOWS: u64 = 30_000;

/// Reads framed control messages from a stream.
pub(crate) struct MsgReader {
    decoder: FrameDecoder,
    /// What the peer sent before its first message, to tell what it is if none reads.
    first: FirstBytes,
}

impl MsgReader {
    pub(crate) fn new() -> Self {
        Self {
            decoder: FrameDecoder::new(MAX_MSG_LEN),
            first: FirstBytes::new(),
        }
    }

    /// `err`, from reading the first answer of a peer we connected to as `who`, in
    /// words that say what the peer seems to be when nothing it sent was dualperf's
    /// ([`wire::control::stranger::NotDualperf`]): bytes of another protocol, an immediate
    /// close, or silence.
    pub(crate) fn explain_first_answer(
        &self,
        addr: Option<SocketAddr>,
        who: &str,
        err: anyhow::Error,
    ) -> anyhow::Error {
        let reset = err.chain().any(|c| {
            c.downcast_ref::<std::io::Error>().is_some_and(|e| {
                matches!(
                    e.kind(),
                    std::io::ErrorKind::ConnectionReset | std::io::ErrorKind::ConnectionAborted
                )
            })
        });
        let silence = if err.is::<PeerClosed>() || reset {
            Some(Silence::Closed)
        } else if is_timeout_error(&err) {
            Some(Silence::Timeout)
        } else {
            None
        };
        match self.first.not_dualperf(addr, who, silence) {
            Some(not_dualperf) => anyhow::Error::new(not_dualperf),
            None => err,
        }
    }

    /// The next message; an error on EOF, timeout, oversized or malformed input.
    pub(crate) fn read(&mut self, stream: &mut TcpStream) -> Result<Msg> {
        self.read_by(stream, None)
    }

    /// The next message, which must be complete by `deadline` (a peer dripping bytes
    /// cannot stretch it): past it, an `io::ErrorKind::TimedOut` error.
    pub(crate) fn read_by(
        &mut self,
        stream: &mut TcpStream,
        deadline: Option<std::time::Instant>,
    ) -> Result<Msg> {
        self.read_with(stream, deadline, |body| Ok(control::parse(body)?))
    }

    /// The next message's body, parsed by `parse`.
    fn read_with<T>(
        &mut self,
        stream: &mut TcpStream,
        deadline: Option<std::time::Instant>,
        mut parse: impl FnMut(&[u8]) -> Result<T>,
    ) -> Result<T> {
        let mut buf = [0u8; 4096];
        loop {
            if let Some(body) = self.decoder.poll_frame()? {
                let msg = parse(body)?;
                self.first.handle_message();
                return Ok(msg);
            }
            if let Some(deadline) = deadline {
                let left = deadline.saturating_duration_since(std::time::Instant::now());
                if left.is_zero() {
                    return Err(std::io::Error::from(std::io::ErrorKind::TimedOut))
                        .context("the handshake deadline passed");
                }
                stream.set_read_timeout(Some(left))?;
            }
            let n = stream
                .read(&mut buf)
                .context("reading from the control connection")?;
            if n == 0 {
                return Err(anyhow::Error::new(PeerClosed));
            }
            self.first.handle_bytes(&buf[..n]);
            self.decoder.handle_bytes(&buf[..n]);
        }
    }

    /// A session's results: `Results` messages up to the one without `more`, their flows
    /// gathered ([`control::ResultsGather`]), with the figures read straight into their
    /// types `S`, `R`, `I` (no tree of JSON values per flow: 10,000 flows' results are
    /// 12 MB of JSON). Any other first message comes back as [`Results::Other`].
    pub(crate) fn read_results<S, R, I>(
        &mut self,
        stream: &mut TcpStream,
    ) -> Result<Results<S, R, I>>
    where
        S: serde::de::DeserializeOwned,
        R: serde::de::DeserializeOwned,
        I: serde::de::DeserializeOwned,
    {
        let mut gather = control::ResultsGather::new();
        loop {
            let read = self.read_with(stream, None, |body| {
                Ok(control::parse_results_or_other::<S, R, I>(body)?)
            });
            let read = match read {
                Ok(read) => read,
                Err(e) if gather.is_empty() => return Err(e),
                Err(e) => return Err(e.context("the receiver's results were cut short")),
            };
            if let Some(results) = gather.handle_read(read)? {
                return Ok(results);
            }
        }
    }

    /// Accept bodies up to `max_len` from now on (after authentication).
    pub(crate) fn set_max_len(&mut self, max_len: usize) {
        self.decoder.set_max_len(max_len);
    }

    /// Bytes already read past the last message (the start of a data stream).
    pub(crate) fn into_decoder(self) -> FrameDecoder {
        self.decoder
    }
}

/// Whether a read ended because its timeout ran out (or a signal cut it short), so the
/// caller should check its stop flag and read again.
pub(crate) fn is_timeout(e: &std::io::Error) -> bool {
    matches!(
        e.kind(),
        std::io::ErrorKind::WouldBlock
            | std::io::ErrorKind::TimedOut
            | std::io::ErrorKind::Interrupted
    )
}

/// [`is_timeout`] anywhere in an error's chain.
pub(crate) fn is_timeout_error(err: &anyhow::Error) -> bool {
    err.chain()
        .any(|c| c.downcast_ref::<std::io::Error>().is_some_and(is_timeout))
}

/// Write one message.
pub(crate) fn write_msg(stream: &mut TcpStream, msg: &Msg) -> Result<()> {
    write_framed(stream, &control::encode(msg))
}

/// Write one message already encoded in its frame (`control::ResultsPart::encode`).
pub(crate) fn write_framed(stream: &mut TcpStream, framed: &[u8]) -> Result<()> {
    stream
        .write_all(framed)
        .context("writing to the control connection")
}

/// What a peer's `Welcome` said beyond its version.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Welcomed {
    /// What it can do beyond the base protocol (`callback`).
    pub(crate) features: Vec<String>,
    /// Our address and port as it saw them (a peer that predates it says nothing).
    pub(crate) peer: Option<SocketAddr>,
}

impl Welcomed {
    /// Whether the peer advertised `feature`.
    pub(crate) fn has(&self, feature: &str) -> bool {
        self.features.iter().any(|f| f == feature)
    }
}

/// The sender's side of the handshake, up to `Welcome`; `who` names the peer in errors
/// ("receiver", "agent").
pub(crate) fn handshake(
    ctrl: &mut TcpStream,
    reader: &mut MsgReader,
    key: Option<&[u8]>,
    who: &str,
) -> Result<Welcomed> {
    let mac = |nonce: &str| Ok(key.map(|k| control::auth_mac(k, nonce)).unwrap_or_default());
    handshake_with(ctrl, reader, &mac, who)
}

/// How a sender proves a receiver's key: the MAC of the receiver's nonce (an agent
/// asks the one who asked it to send, which holds the key).
pub(crate) type Prover = dyn Fn(&str) -> Result<String> + Send + Sync;

/// [`handshake`], with the MAC of the nonce from `prove`.
pub(crate) fn handshake_with(
    ctrl: &mut TcpStream,
    reader: &mut MsgReader,
    prove: &dyn Fn(&str) -> Result<String>,
    who: &str,
) -> Result<Welcomed> {
    // Asked now: a peer that resets the connection takes its address with it.
    let addr = ctrl.peer_addr().ok();
    write_msg(
        ctrl,
        &Msg::Hello {
            version: control::PROTOCOL_VERSION,
        },
    )?;
    let first = reader
        .read(ctrl)
        .map_err(|e| reader.explain_first_answer(addr, who, e))?;
    let nonce = match first {
        Msg::Challenge { nonce, .. } => nonce,
        Msg::Error { message } => bail!("{who} refused: {message}"),
        other => bail!("unexpected reply from {who}: {other:?}"),
    };
    let mac = prove(&nonce)?;
    write_msg(ctrl, &Msg::Auth { mac })?;
    match reader.read(ctrl) {
        Ok(Msg::Welcome { features, peer, .. }) => {
            // Results of many flows can be large; the peer is now authenticated.
            reader.set_max_len(control::MAX_SESSION_MSG_LEN);
            Ok(Welcomed { features, peer })
        }
        Ok(Msg::Error { message }) => bail!("{who} refused: {message}"),
        Ok(other) => bail!("unexpected reply from {who}: {other:?}"),
        Err(e) => Err(e.context(format!("{who} closed the session during authentication"))),
    }
}

/// The peer's clock minus ours over an authenticated control connection: `n` exchanges
/// (RFC 5905 §8), the least-delay one kept ([`meter::clock::OffsetFilter`]). A peer
/// whose kernel is ours (same boot id) reads our clock: offset exactly 0.
pub(crate) fn estimate_offset(
    ctrl: &mut TcpStream,
    reader: &mut MsgReader,
    n: u32,
) -> Result<Option<OffsetEstimate>> {
    let ours = crate::hostinfo::boot_id();
    let own_res = netio::clock::resolution_ns(netio::clock::ClockId::Realtime);
    let mut filter: Option<OffsetFilter> = None;
    for _ in 0..n {
        let t1_ns = netio::clock::wall_ns();
        write_msg(ctrl, &Msg::TimeRequest { t1_ns })?;
        let reply = reader.read(ctrl)?;
        let t4_ns = netio::clock::wall_ns();
        let Msg::TimeReply {
            t1_ns: echoed,
            t2_ns,
            t3_ns,
            boot_id,
            resolution_ns,
        } = reply
        else {
            bail!("unexpected reply to a clock exchange: {reply:?}");
        };
        if ours.is_some() && boot_id == ours {
            return Ok(Some(OffsetEstimate::same_clock()));
        }
        if echoed != t1_ns {
            bail!("the peer's clock reply answers another request");
        }
        filter
            .get_or_insert_with(|| OffsetFilter::new(own_res.max(resolution_ns)))
            .handle_exchange(Exchange {
                t1_ns,
                t2_ns,
                t3_ns,
                t4_ns,
            });
    }
    Ok(filter.and_then(|f| f.estimate()))
}

/// `n` random bytes from the kernel.
pub(crate) fn random_bytes<const N: usize>() -> [u8; N] {
    let mut out = [0u8; N];
    if let Ok(mut f) = std::fs::File::open("/dev/urandom") {
        if f.read_exact(&mut out).is_ok() {
            return out;
        }
    }
    // Fall back to the clock and the address of a stack value: only the receiver's
    // nonces and tokens use this, and only if /dev/urandom is unreadable.
    let seed = netio::clock::wall_ns() ^ (&out as *const _ as u64);
    for (i, b) in out.iter_mut().enumerate() {
        *b = (seed.rotate_left(i as u32 * 7) >> 3) as u8;
    }
    out
}

/// Both ends' clock synchronisation: ours, and the peer's from a host query.
pub(crate) fn session_sync(
    ctrl: &mut TcpStream,
    reader: &mut MsgReader,
) -> Result<results::send::SessionSync> {
    write_msg(ctrl, &Msg::HostQuery {})?;
    let receiver = match reader.read(ctrl)? {
        Msg::HostReply { host } => {
            serde_json::from_value::<results::clock::HostDoc>(host)
                .context("the peer's description does not read")?
                .clock
        }
        other => bail!("unexpected reply to a host query: {other:?}"),
    };
    Ok(results::send::SessionSync {
        sender: crate::hostinfo::sync_state(),
        receiver,
    })
}

/// A fresh one-time key, hex (a receiver started for one session).
pub(crate) fn hex_key() -> String {
    control::hex(&random_bytes::<16>())
}

/// IP family restriction from `-4` / `-6`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Family {
    Any,
    V4,
    V6,
}

/// Resolve `dest` — an address, a name, `host:port`, `[v6]:port` — to one socket address
/// of the wanted family. `port` applies when `dest` carries none.
pub(crate) fn resolve(dest: &str, port: u16, family: Family) -> Result<SocketAddr> {
    let candidates: Vec<SocketAddr> = if let Ok(sa) = dest.parse::<SocketAddr>() {
        vec![sa]
    } else if let Ok(ip) = dest
        .trim_start_matches('[')
        .trim_end_matches(']')
        .parse::<IpAddr>()
    {
        vec![SocketAddr::new(ip, port)]
    } else {
        let with_port = if dest
            .rsplit_once(':')
            .is_some_and(|(h, p)| !h.contains(':') && p.parse::<u16>().is_ok())
        {
            dest.to_owned()
        } else {
            format!("{dest}:{port}")
        };
        with_port
            .to_socket_addrs()
            .with_context(|| format!("cannot resolve '{dest}'"))?
            .collect()
    };
    // An IPv4-mapped IPv6 address is IPv4 on the wire: treat it as IPv4 everywhere.
    let pick = candidates
        .into_iter()
        .map(|a| SocketAddr::new(unmapped(a.ip()), a.port()))
        .find(|a| match family {
            Family::Any => true,
            Family::V4 => a.is_ipv4(),
            Family::V6 => a.is_ipv6(),
        });
    match pick {
        Some(a) => Ok(a),
        None => bail!(
            "'{dest}' has no {} address",
            match family {
                Family::V4 => "IPv4",
                Family::V6 => "IPv6",
                Family::Any => "usable",
            }
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resolves_literals_with_and_without_ports() {
        assert_eq!(
            resolve("127.0.0.1", 9, Family::Any).unwrap(),
            "127.0.0.1:9".parse().unwrap()
        );
        assert_eq!(
            resolve("[::1]:7", 9, Family::Any).unwrap(),
            "[::1]:7".parse().unwrap()
        );
        assert_eq!(
            resolve("::1", 9, Family::V6).unwrap(),
            "[::1]:9".parse().unwrap()
        );
        assert_eq!(
            resolve("[::1]", 9, Family::V6).unwrap(),
            "[::1]:9".parse().unwrap()
        );
        assert!(resolve("::1", 9, Family::V4).is_err());
        assert_eq!(
            resolve("localhost:5", 9, Family::V4).unwrap(),
            "127.0.0.1:5".parse().unwrap()
        );
    }
}
