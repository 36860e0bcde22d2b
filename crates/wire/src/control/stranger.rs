//! Telling, from the first bytes a peer sends, that it does not speak dualperf's control
//! protocol: an HTTP server, sshd or a TLS port reached by a mistyped port, or a peer that
//! closes or stays silent. [`FirstBytes`] keeps what a peer sent until a message of it
//! reads; [`FirstBytes::not_dualperf`] turns a failed first read into [`NotDualperf`],
//! whose text says what the peer seems to be and what to check.

use std::net::SocketAddr;

/// Bytes of a peer's first answer kept to tell what it is.
pub const HEAD_LEN: usize = 48;

/// The peer answered with something that is not dualperf's control protocol (an HTTP
/// server, sshd, a TLS port), or with nothing at all: what it sent, for the error.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotDualperf {
    /// Whom we connected to: "receiver", "agent", "peer".
    pub who: String,
    /// Where we connected, when known.
    pub addr: Option<SocketAddr>,
    /// The first bytes the peer sent (at most [`HEAD_LEN`]).
    pub head: Vec<u8>,
    /// How its answer ended, when it sent nothing: closed, or silent until the timeout.
    pub silence: Option<Silence>,
}

/// How a peer that sent nothing ended its answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Silence {
    /// It closed (or reset) the connection.
    Closed,
    /// It stayed silent until the read's timeout.
    Timeout,
}

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
pub enum Stranger {
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
pub fn stranger(head: &[u8]) -> Option<Stranger> {
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
        (Some(len), Some(&b'{')) => len <= super::MAX_SESSION_MSG_LEN,
        // A length alone, within the limit, may be ours.
        (Some(len), None) => len <= super::MAX_SESSION_MSG_LEN,
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

/// The first bytes a peer sent, kept until a message of it has read (to tell what it is
/// if none does).
#[derive(Debug, Default)]
pub struct FirstBytes {
    /// At most [`HEAD_LEN`] bytes, from the start of the connection.
    head: Vec<u8>,
    /// Whether a whole message has read.
    spoke: bool,
}

impl FirstBytes {
    /// Nothing read yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Bytes read from the peer: kept, up to [`HEAD_LEN`] in all, until it has spoken.
    pub fn handle_bytes(&mut self, bytes: &[u8]) {
        if !self.spoke && self.head.len() < HEAD_LEN {
            let take = bytes.len().min(HEAD_LEN - self.head.len());
            self.head.extend_from_slice(&bytes[..take]);
        }
    }

    /// A whole message of the peer has read: it speaks dualperf, its bytes are dropped.
    pub fn handle_message(&mut self) {
        self.spoke = true;
        self.head = Vec::new();
    }

    /// The bytes kept so far.
    pub fn head(&self) -> &[u8] {
        &self.head
    }

    /// Why a first read from the peer we connected to as `who` failed, when nothing it
    /// sent was dualperf's: bytes of another protocol ([`stranger`]), or nothing before
    /// `silence` (a close or a timeout). `None` once a message has read, or when what it
    /// sent may be ours (the failure then says more than this would).
    pub fn not_dualperf(
        &self,
        addr: Option<SocketAddr>,
        who: &str,
        silence: Option<Silence>,
    ) -> Option<NotDualperf> {
        if self.spoke {
            return None;
        }
        let not_ours = match stranger(&self.head) {
            Some(_) => true,
            // Nothing at all before the close or the timeout.
            None => self.head.is_empty() && silence.is_some(),
        };
        not_ours.then(|| NotDualperf {
            who: who.to_owned(),
            addr,
            head: self.head.clone(),
            silence,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
    fn first_bytes_keep_the_head_until_a_message_reads() {
        let mut first = FirstBytes::new();
        first.handle_bytes(&[b'x'; 40]);
        first.handle_bytes(&[b'y'; 20]);
        assert_eq!(first.head().len(), HEAD_LEN);
        assert_eq!(&first.head()[38..42], b"xxyy");
        assert_eq!(first.head()[HEAD_LEN - 1], b'y');
        // Nothing more is kept once the head is full.
        first.handle_bytes(b"z");
        assert_eq!(first.head().len(), HEAD_LEN);
        assert!(!first.head().contains(&b'z'));
        // A message read drops the head, and nothing after it is kept.
        first.handle_message();
        assert_eq!(first.head(), b"");
        first.handle_bytes(b"HTTP/1.0");
        assert_eq!(first.head(), b"");
    }

    #[test]
    fn a_failed_first_read_is_not_dualperf_only_when_nothing_sent_was_ours() {
        let addr: Option<SocketAddr> = Some("198.18.0.2:4646".parse().unwrap());
        let read = |bytes: &[u8]| {
            let mut first = FirstBytes::new();
            first.handle_bytes(bytes);
            first
        };
        // Another protocol's bytes, whatever ended the read.
        assert_eq!(
            read(b"SSH-2.0-x\r\n").not_dualperf(addr, "agent", None),
            Some(NotDualperf {
                who: "agent".into(),
                addr,
                head: b"SSH-2.0-x\r\n".to_vec(),
                silence: None,
            })
        );
        // Nothing, then a close or a timeout.
        for silence in [Silence::Closed, Silence::Timeout] {
            assert_eq!(
                read(b"").not_dualperf(None, "peer", Some(silence)),
                Some(NotDualperf {
                    who: "peer".into(),
                    addr: None,
                    head: Vec::new(),
                    silence: Some(silence),
                })
            );
        }
        // Nothing, and another failure; a frame of ours begun; a peer that has spoken.
        assert_eq!(read(b"").not_dualperf(addr, "receiver", None), None);
        assert_eq!(
            read(b"\x00\x00\x00\x2a{").not_dualperf(addr, "receiver", Some(Silence::Closed)),
            None
        );
        let mut spoke = read(b"\x00\x00\x00\x02{}");
        spoke.handle_message();
        spoke.handle_bytes(b"HTTP/1.0");
        assert_eq!(
            spoke.not_dualperf(addr, "receiver", Some(Silence::Closed)),
            None
        );
    }
}
