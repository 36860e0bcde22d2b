//! Control-channel plumbing shared by `send` and `recv`: framed message I/O on a
//! `TcpStream`, randomness, and address resolution.

use std::io::{Read, Write};
use std::net::{IpAddr, SocketAddr, TcpStream, ToSocketAddrs};

use anyhow::{bail, Context, Result};
use meter::clock::{Exchange, OffsetEstimate, OffsetFilter};
use wire::control::{self, Msg, MAX_MSG_LEN};
use wire::frame::FrameDecoder;

/// Default port of the receiver (UDP and TCP data, TCP control).
pub(crate) const DEFAULT_PORT: u16 = 4646;

/// Most windows a session may ask the receiver for, all flows together: the series
/// travel in one results message (about 300 bytes of JSON a window, under its 16 MiB).
pub(crate) const MAX_SESSION_WINDOWS: u64 = 30_000;

/// The peer closed the control connection (end of stream where a message was due).
#[derive(Debug)]
pub(crate) struct PeerClosed;

impl std::fmt::Display for PeerClosed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("the peer closed the control connection")
    }
}

impl std::error::Error for PeerClosed {}

/// The peer answered with something that is not dualperf's control protocol (an HTTP
/// server, sshd, a TLS port), or with nothing at all: what it sent, for the error.
#[derive(Debug)]
pub(crate) struct NotDualperf {
    /// Whom we connected to: "receiver", "agent", "peer".
    pub(crate) who: String,
    pub(crate) addr: Option<SocketAddr>,
    /// The first bytes the peer sent (at most [`HEAD_LEN`]).
    pub(crate) head: Vec<u8>,
    /// How its answer ended, when it sent nothing: closed, or silent until the timeout.
    pub(crate) silence: Option<Silence>,
}

/// How a peer that sent nothing ended its answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Silence {
    Closed,
    Timeout,
}

/// Bytes of a peer's first answer kept to tell what it is.
pub(crate) const HEAD_LEN: usize = 48;

impl std::fmt::Display for NotDualperf {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let at = match self.addr {
            Some(a) => format!("the {} at {a}", self.who),
            None => format!("the {}", self.who),
        };
        let question = match self.who.as_str() {
            "agent" => "is `dualperf agent` listening there?",
            _ => "is `dualperf recv` or `agent` listening there?",
        };
        match (self.silence, stranger(&self.head)) {
            (Some(Silence::Closed), _) if self.head.is_empty() => write!(
                f,
                "{at} closed the connection without answering: {question}"
            ),
            (Some(Silence::Timeout), _) if self.head.is_empty() => write!(
                f,
                "{at} accepted the connection but never answered: {question} (an iperf3 \
                 server, for one, waits silently for its own client)"
            ),
            (_, Some(Stranger::Known(proto))) => write!(
                f,
                "{at} answered with what looks like {proto}: {question} It sent \"{}\"",
                escaped(&self.head)
            ),
            (_, Some(Stranger::Text)) => write!(
                f,
                "{at} answered with text, not dualperf's control protocol: {question} It \
                 sent \"{}\"",
                escaped(&self.head)
            ),
            _ => write!(
                f,
                "{at} answered with bytes that are not dualperf's control protocol: \
                 {question} It sent \"{}\"",
                escaped(&self.head)
            ),
        }
    }
}

impl std::error::Error for NotDualperf {}

/// What a peer's first bytes say it is, when they are not a dualperf control message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Stranger {
    /// A protocol recognised by its opening bytes ("HTTP", "SSH", "TLS").
    Known(&'static str),
    /// Printable text of no protocol recognised.
    Text,
    /// Bytes that are neither.
    Binary,
}

/// Opening bytes of the protocols a mistyped port most often reaches, by name.
const OPENINGS: &[(&[u8], &str)] = &[
    (b"HTTP/", "HTTP"),
    (b"<!DOCTYPE", "HTML"),
    (b"<html", "HTML"),
    (b"SSH-", "SSH"),
    // A TLS record: handshake (22) or alert (21), then version 3.x.
    (b"\x16\x03", "TLS"),
    (b"\x15\x03", "TLS"),
    (b"220 ", "an SMTP or FTP greeting"),
    (b"220-", "an SMTP or FTP greeting"),
    (b"+OK", "POP3"),
    (b"* OK", "IMAP"),
    (b"RFB ", "VNC"),
    (b"-ERR", "Redis"),
    (b"AMQP", "AMQP"),
];

/// What the first bytes a peer sent say it is: `None` when they may be dualperf's (a
/// frame whose length is within the limit and whose body starts as JSON, or nothing
/// yet), else the protocol they open, or whether they are text or binary.
pub(crate) fn stranger(head: &[u8]) -> Option<Stranger> {
    if head.is_empty() {
        return None;
    }
    if let Some(&(_, name)) = OPENINGS
        .iter()
        .find(|(open, _)| head.len() >= open.len() && head[..open.len()].eq_ignore_ascii_case(open))
    {
        return Some(Stranger::Known(name));
    }
    // MySQL's greeting: a 3-byte length, sequence 0, protocol version 10.
    if head.len() >= 5 && head[3] == 0 && head[4] == 10 {
        return Some(Stranger::Known("MySQL"));
    }
    let len = head
        .get(..4)
        .map(|p| u32::from_be_bytes([p[0], p[1], p[2], p[3]]) as usize);
    let framed = match (len, head.get(4)) {
        // A length within the session's limit and a JSON object after it.
        (Some(len), Some(&b'{')) => len <= control::MAX_SESSION_MSG_LEN,
        // A length alone, within the limit, may be ours.
        (Some(len), None) => len <= control::MAX_SESSION_MSG_LEN,
        (None, _) => false,
        (Some(_), Some(_)) => false,
    };
    if framed {
        return None;
    }
    if head
        .iter()
        .all(|&b| b.is_ascii_graphic() || matches!(b, b' ' | b'\t' | b'\r' | b'\n'))
    {
        return Some(Stranger::Text);
    }
    Some(Stranger::Binary)
}

/// `bytes` as a Rust-style escaped string: `HTTP/1.0 400\r\n`, `\x16\x03\x01`.
fn escaped(bytes: &[u8]) -> String {
    let mut s: String = bytes
        .iter()
        .flat_map(|&b| std::ascii::escape_default(b))
        .map(char::from)
        .collect();
    if bytes.len() >= HEAD_LEN {
        s.push('…');
    }
    s
}

/// Reads framed control messages from a stream.
pub(crate) struct MsgReader {
    decoder: FrameDecoder,
    /// The first bytes the peer sent, kept until a message of it has read (to tell what
    /// it is if none does).
    head: Vec<u8>,
    /// Whether a whole message has read.
    spoke: bool,
}

impl MsgReader {
    pub(crate) fn new() -> Self {
        Self {
            decoder: FrameDecoder::new(MAX_MSG_LEN),
            head: Vec::new(),
            spoke: false,
        }
    }

    /// `err`, from reading the first answer of a peer we connected to as `who`, in
    /// words that say what the peer seems to be when nothing it sent was dualperf's
    /// ([`NotDualperf`]): bytes of another protocol, an immediate close, or silence.
    pub(crate) fn explain_first_answer(
        &self,
        addr: Option<SocketAddr>,
        who: &str,
        err: anyhow::Error,
    ) -> anyhow::Error {
        if self.spoke {
            return err;
        }
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
        let not_ours = match stranger(&self.head) {
            Some(_) => true,
            // Nothing at all before the close or the timeout.
            None => self.head.is_empty() && silence.is_some(),
        };
        if !not_ours {
            return err;
        }
        anyhow::Error::new(NotDualperf {
            who: who.to_owned(),
            addr,
            head: self.head.clone(),
            silence,
        })
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
                self.spoke = true;
                self.head = Vec::new();
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
            if !self.spoke && self.head.len() < HEAD_LEN {
                let take = n.min(HEAD_LEN - self.head.len());
                self.head.extend_from_slice(&buf[..take]);
            }
            self.decoder.handle_bytes(&buf[..n]);
        }
    }

    /// A session's results: `Results` messages up to the one without `more`, their flows
    /// gathered, with the figures read straight into their types `S`, `R`, `I` (no tree
    /// of JSON values per flow: 10,000 flows' results are 12 MB of JSON). Any other first
    /// message comes back as [`Results::Other`]; anything else after a part is an error,
    /// as are figures not of these types, an empty part announcing more, and more flows
    /// than flow ids exist.
    pub(crate) fn read_results<S, R, I>(
        &mut self,
        stream: &mut TcpStream,
    ) -> Result<Results<S, R, I>>
    where
        S: serde::de::DeserializeOwned,
        R: serde::de::DeserializeOwned,
        I: serde::de::DeserializeOwned,
    {
        let mut all = Vec::new();
        loop {
            let read = self.read_with(stream, None, |body| {
                match control::parse_results::<S, R, I>(body) {
                    Ok(part) => Ok(Results::Flows(part.flows, part.more)),
                    Err(typed) => match control::parse(body)? {
                        Msg::Results { .. } => Err(anyhow::Error::new(typed)
                            .context("the receiver's results do not read as this version's")),
                        other => Ok(Results::Other(other)),
                    },
                }
            });
            let (flows, more) = match read {
                Ok(Results::Flows(flows, more)) => (flows, more),
                Ok(other) if all.is_empty() => return Ok(other),
                Ok(Results::Other(other)) => {
                    bail!("the receiver's results were cut short by {other:?}")
                }
                Err(e) if all.is_empty() => return Err(e),
                Err(e) => return Err(e.context("the receiver's results were cut short")),
            };
            if more && flows.is_empty() {
                bail!("the receiver sent an empty part of its results");
            }
            all.extend(flows);
            if all.len() > usize::from(u16::MAX) {
                bail!("the receiver sent results of more flows than flow ids exist");
            }
            if !more {
                return Ok(Results::Flows(all, false));
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

/// What [`MsgReader::read_results`] read.
#[derive(Debug)]
pub(crate) enum Results<S, R, I> {
    /// Every flow's result, and whether more were announced (false once gathered).
    Flows(Vec<control::FlowResult<S, R, I>>, bool),
    /// Another message where results were due (an error, say).
    Other(Msg),
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

/// The sender's side of the handshake, up to `Welcome`; `who` names the peer in errors
/// ("receiver", "agent").
pub(crate) fn handshake(
    ctrl: &mut TcpStream,
    reader: &mut MsgReader,
    key: Option<&[u8]>,
    who: &str,
) -> Result<()> {
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
) -> Result<()> {
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
        Ok(Msg::Welcome { .. }) => {
            // Results of many flows can be large; the peer is now authenticated.
            reader.set_max_len(control::MAX_SESSION_MSG_LEN);
            Ok(())
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
        .map(|a| SocketAddr::new(canonical(a.ip()), a.port()))
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

/// An IPv4-mapped IPv6 address as plain IPv4, so peers compare equal across families.
pub(crate) fn canonical(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
        v4 => v4,
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

    #[test]
    fn a_peer_that_is_not_dualperf_is_told_by_its_first_bytes() {
        use Stranger::{Binary, Known, Text};
        let cases: [(&[u8], Option<Stranger>); 17] = [
            (b"HTTP/1.0 400 Bad Request\r\n\r\n", Some(Known("HTTP"))),
            (b"http/1.1 200 OK", Some(Known("HTTP"))),
            (b"<!doctype html>", Some(Known("HTML"))),
            (b"SSH-2.0-OpenSSH_9.2p1 Debian\r\n", Some(Known("SSH"))),
            (b"\x16\x03\x03\x00\x7a\x02", Some(Known("TLS"))),
            (b"\x15\x03\x01\x00\x02\x02\x46", Some(Known("TLS"))),
            (
                b"220 mail.example ESMTP\r\n",
                Some(Known("an SMTP or FTP greeting")),
            ),
            (b"+OK POP3 ready\r\n", Some(Known("POP3"))),
            (b"-ERR unknown command 'x'\r\n", Some(Known("Redis"))),
            (b"J\x00\x00\x00\x0a8.0.36\x00", Some(Known("MySQL"))),
            (b"hello there\n", Some(Text)),
            (b"OK", Some(Text)),
            (b"\x00\x01\x02\xff\xfe", Some(Binary)),
            (b"\xff", Some(Binary)),
            // dualperf's own frames, whole or begun, and nothing at all.
            (b"\x00\x00\x00\x2a{\"type\":\"challenge\"", None),
            (b"\x00\x00\x00\x2a", None),
            (b"", None),
        ];
        for (head, want) in cases {
            assert_eq!(stranger(head), want, "{}", escaped(head));
        }
        // A frame too long even for a session, or not JSON, is not ours.
        assert_eq!(stranger(b"\x01\x00\x00\x01{"), Some(Binary));
        assert_eq!(stranger(b"\x00\x00\x00\x05hello"), Some(Binary));
    }

    #[test]
    fn a_stranger_is_named_with_what_it_sent_and_the_question_to_ask() {
        let addr = Some("127.0.0.1:8080".parse().unwrap());
        let e = |who: &str, head: &[u8], silence| {
            NotDualperf {
                who: who.into(),
                addr,
                head: head.to_vec(),
                silence,
            }
            .to_string()
        };
        assert_eq!(
            e(
                "receiver",
                b"HTTP/1.0 400 Bad Request\r\n\r\n",
                Some(Silence::Closed)
            ),
            "the receiver at 127.0.0.1:8080 answered with what looks like HTTP: is `dualperf \
             recv` or `agent` listening there? It sent \"HTTP/1.0 400 Bad Request\\r\\n\\r\\n\""
        );
        assert_eq!(
            e("agent", b"\x00\xff", None),
            "the agent at 127.0.0.1:8080 answered with bytes that are not dualperf's control \
             protocol: is `dualperf agent` listening there? It sent \"\\x00\\xff\""
        );
        assert_eq!(
            e("peer", b"", Some(Silence::Closed)),
            "the peer at 127.0.0.1:8080 closed the connection without answering: is `dualperf \
             recv` or `agent` listening there?"
        );
        let long = e("receiver", &[b'a'; HEAD_LEN], Some(Silence::Timeout));
        assert!(
            long.contains("answered with text") && long.ends_with("aaaa…\""),
            "{long}"
        );
    }

    #[test]
    fn mapped_addresses_become_v4() {
        let mapped: IpAddr = "::ffff:127.0.0.1".parse().unwrap();
        assert_eq!(canonical(mapped), "127.0.0.1".parse::<IpAddr>().unwrap());
        let v6: IpAddr = "::1".parse().unwrap();
        assert_eq!(canonical(v6), v6);
    }
}
