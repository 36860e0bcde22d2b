//! The reverse direction through a NAT in front of the asker (`send --reverse-mode
//! callback`, iperf3 `-R`'s way): the agent opens nothing toward the asker.
//!
//! - TCP (the session's control connection, each TCP flow's data connection): the
//!   agent's session asks for each with `Dial{ticket}` on the request's connection; the
//!   asker connects to the agent's port and says `Callback{ticket}`; the agent's
//!   receiver hands that connection to the session ([`Tickets::deliver`]), which uses it
//!   as if it had connected. Tickets are random, single use, expire with the wait, and
//!   are taken only from the asker's address; any other is refused and counted.
//! - UDP: each flow's socket waits, unconnected, for the asker's receiver to punch it
//!   (`wire::punch`); a punch from the asker's address with a token of the socket's
//!   flows connects the socket to the punch's source (the NAT's mapping), and the
//!   socket answers so the punching stops. Anything else is ignored and counted. The
//!   asker's receiver keeps the mapping open while a flow is quiet (`recv::punch`).
//!
//! So the agent still sends only to the asker's address (or `--allow`), and only from
//! sockets the asker reached first.

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr, TcpStream};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, SyncSender};
use std::sync::{Arc, Mutex};
use std::time::{Duration as StdDuration, Instant};

use anyhow::{anyhow, bail, Context, Result};
use traffic::FlowSpec;
use wire::control::{FlowGrant, Msg};
use wire::prefix::unmapped;
use wire::punch::{Kind, Repr};

use crate::control::write_msg;

/// How the reverse direction reaches us (`send --reverse-mode`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum ReverseMode {
    /// Callback when the agent offers it, listen otherwise (with a note).
    #[default]
    Auto,
    /// Over connections we open and to where our punches come from: works behind a NAT.
    Callback,
    /// The agent connects and sends to a receiver we start: both ends must be
    /// reachable.
    Listen,
}

/// The keepalive interval of a quiet reverse UDP flow through a NAT: RFC 4787 REQ-5
/// asks NATs to keep a UDP mapping at least 2 minutes, but many keep less; RFC 8085
/// §3.5 advises keep-alives no more often than every 15 s.
pub(crate) const KEEPALIVE: StdDuration = StdDuration::from_secs(15);

/// The reverse direction's settings.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct ReverseOptions {
    pub(crate) mode: ReverseMode,
    /// Keepalive interval of a quiet UDP flow in callback mode.
    pub(crate) keepalive: StdDuration,
    /// Our receiver's first punch waits this long (a test aid).
    pub(crate) punch_delay: StdDuration,
}

impl Default for ReverseOptions {
    fn default() -> Self {
        Self {
            mode: ReverseMode::Auto,
            keepalive: KEEPALIVE,
            punch_delay: StdDuration::ZERO,
        }
    }
}

/// What an agent counts of callbacks and punches it refused.
#[derive(Debug, Default)]
pub(crate) struct Refusals {
    pub(crate) callbacks: AtomicU64,
    pub(crate) punches: AtomicU64,
}

/// A session waiting for the connection its `Dial` asked for.
struct Waiting {
    asker: IpAddr,
    tx: SyncSender<TcpStream>,
}

/// The agent's open tickets: connections askers were asked to open, by ticket.
#[derive(Default)]
pub(crate) struct Tickets {
    waiting: Mutex<HashMap<u64, Waiting>>,
    pub(crate) refused: Arc<Refusals>,
}

impl Tickets {
    /// A new ticket for a connection from `asker`, and where it will come.
    fn open(&self, asker: IpAddr) -> (u64, Receiver<TcpStream>) {
        let (tx, rx) = std::sync::mpsc::sync_channel(1);
        let mut waiting = self.waiting.lock().unwrap_or_else(|e| e.into_inner());
        let ticket = loop {
            let t = u64::from_ne_bytes(crate::control::random_bytes::<8>());
            if !waiting.contains_key(&t) {
                break t;
            }
        };
        waiting.insert(ticket, Waiting { asker, tx });
        (ticket, rx)
    }

    /// The ticket's wait is over (its connection came or it expired).
    fn close(&self, ticket: u64) {
        self.waiting
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&ticket);
    }

    /// A connection that said `Callback{ticket}`, from `peer`: handed to the session
    /// that asked for it. An unknown or expired ticket, or one from another address than
    /// its asker's, is refused with the reason (and counted); the ticket stays for its
    /// asker in the last case.
    pub(crate) fn deliver(
        &self,
        ticket: u64,
        stream: TcpStream,
        peer: SocketAddr,
    ) -> Result<(), String> {
        let from = unmapped(peer.ip());
        let mut waiting = self.waiting.lock().unwrap_or_else(|e| e.into_inner());
        let why = match waiting.get(&ticket) {
            None => "an unknown or expired ticket",
            Some(w) if w.asker != from => "a ticket of another asker",
            Some(_) => match waiting.remove(&ticket).map(|w| w.tx.try_send(stream)) {
                Some(Ok(())) => return Ok(()),
                _ => "an expired ticket",
            },
        };
        let n = self.refused.callbacks.fetch_add(1, Ordering::Relaxed) + 1;
        Err(format!(
            "callback from {peer} refused: {why} ({n} callback(s) refused so far)"
        ))
    }
}

/// An agent session's way back to its asker in callback mode.
pub(crate) struct Dialer {
    /// The request's connection (the session writes `Dial` on it).
    asker: Mutex<TcpStream>,
    asker_ip: IpAddr,
    tickets: Arc<Tickets>,
    /// How long a callback or a punch may take.
    wait: StdDuration,
}

impl Dialer {
    pub(crate) fn new(
        asker: &TcpStream,
        asker_ip: IpAddr,
        tickets: Arc<Tickets>,
        wait: StdDuration,
    ) -> std::io::Result<Self> {
        Ok(Self {
            asker: Mutex::new(asker.try_clone()?),
            asker_ip: unmapped(asker_ip),
            tickets,
            wait,
        })
    }

    /// A TCP connection to the asker, opened by the asker: `Dial` on the request's
    /// connection, then the connection that calls back with its ticket.
    pub(crate) fn stream(&self) -> Result<TcpStream> {
        let (ticket, rx) = self.tickets.open(self.asker_ip);
        let asked = {
            let mut asker = self.asker.lock().unwrap_or_else(|e| e.into_inner());
            write_msg(&mut asker, &Msg::Dial { ticket })
        };
        let got = asked.and_then(|()| {
            rx.recv_timeout(self.wait).map_err(|_| {
                anyhow!(
                    "the asker did not call back within {:?} (is something between us refusing its connections to this port?)",
                    self.wait
                )
            })
        });
        self.tickets.close(ticket);
        let stream = got?;
        stream.set_nonblocking(false)?;
        let _ = stream.set_nodelay(true);
        Ok(stream)
    }

    /// A TCP flow's data connection, opened by the asker, marked as the flow asks.
    pub(crate) fn data_stream(&self, spec: &FlowSpec, id: u16) -> Result<TcpStream> {
        if spec.cport.is_some() {
            bail!("flow {id}: --cport does not apply to a reverse flow in callback mode (the asker opens its connection)");
        }
        if spec.congestion.is_some() {
            bail!("flow {id}: --congestion is not available for a reverse flow in callback mode: use --reverse-mode listen");
        }
        let stream = self.stream()?;
        netio::tcp::set_marking(&stream, &super::session::marking_of(spec))
            .with_context(|| format!("flow {id}: cannot apply its marking"))?;
        stream.set_nodelay(spec.nodelay)?;
        Ok(stream)
    }

    /// Connect each UDP socket of `udp` (one per flow, shared among flows that share it)
    /// to where its flows' punches come from, and answer one punch per flow.
    pub(crate) fn await_punches(
        &self,
        flows: &[FlowSpec],
        udp: &[Option<Arc<netio::UdpSocket>>],
        grants: &[FlowGrant],
    ) -> Result<()> {
        let mut sockets: Vec<(Arc<netio::UdpSocket>, netio::Marking, Vec<&FlowGrant>)> = Vec::new();
        for ((spec, sock), grant) in flows.iter().zip(udp).zip(grants) {
            let Some(sock) = sock else { continue };
            match sockets.iter_mut().find(|(s, ..)| Arc::ptr_eq(s, sock)) {
                Some((.., g)) => g.push(grant),
                None => sockets.push((sock.clone(), super::session::marking_of(spec), vec![grant])),
            }
        }
        let until = Instant::now() + self.wait;
        for (sock, marking, grants) in sockets {
            let port = sock.local_addr()?.port();
            crate::out::note!(
                "dualperf agent: UDP port {port} waits for {}'s punch",
                self.asker_ip
            );
            let from = self.await_punch(&sock, &grants, until)?;
            sock.connect_marked(from, &marking)
                .with_context(|| format!("cannot send to {from} with marking {marking:?}"))?;
            for g in &grants {
                let answer = Repr {
                    kind: Kind::Answer,
                    flow: g.id,
                    token: g.token,
                    tx_ns: netio::clock::wall_ns(),
                };
                sock.send(&answer.to_bytes())?;
            }
        }
        Ok(())
    }

    /// The source of the first acceptable punch on `sock` (from the asker's address,
    /// with the id and token of one of `grants`), by `until`. Others are ignored,
    /// counted and said.
    fn await_punch(
        &self,
        sock: &netio::UdpSocket,
        grants: &[&FlowGrant],
        until: Instant,
    ) -> Result<SocketAddr> {
        sock.set_read_timeout(Some(StdDuration::from_millis(100)))?;
        let mut bufs = vec![vec![0u8; 2048]; 8];
        let mut metas = vec![netio::RecvMeta::default(); 8];
        while Instant::now() < until {
            let n = match sock.recv_batch(&mut bufs, &mut metas) {
                Ok(n) => n,
                Err(e)
                    if matches!(
                        e.kind(),
                        std::io::ErrorKind::WouldBlock
                            | std::io::ErrorKind::TimedOut
                            | std::io::ErrorKind::Interrupted
                    ) =>
                {
                    continue
                }
                Err(e) => return Err(anyhow::Error::new(e).context("waiting for the punch")),
            };
            for (buf, meta) in bufs.iter().zip(&metas).take(n) {
                match accept_punch(&buf[..meta.len], meta.src, self.asker_ip, grants) {
                    Ok(()) => {
                        sock.set_read_timeout(None)?;
                        return Ok(meta.src);
                    }
                    Err(why) => {
                        let n = self.tickets.refused.punches.fetch_add(1, Ordering::Relaxed) + 1;
                        crate::out::note!(
                            "dualperf agent: ignored a datagram from {}: {why} ({n} ignored so far)",
                            meta.src
                        );
                    }
                }
            }
        }
        bail!(
            "no punch came from {} within {:?} (does a firewall in front of this host drop UDP to its ephemeral ports?)",
            self.asker_ip,
            self.wait
        )
    }
}

/// Whether a datagram from `src` is a punch this socket takes: a well-formed
/// [`Kind::Punch`] from the asker's address (any port: a NAT picks it), for one of
/// `grants` with its token.
fn accept_punch(
    bytes: &[u8],
    src: SocketAddr,
    asker: IpAddr,
    grants: &[&FlowGrant],
) -> Result<(), &'static str> {
    let punch = Repr::parse_bytes(bytes).map_err(|_| "not a punch")?;
    if unmapped(src.ip()) != asker {
        return Err("not from the asker's address");
    }
    if punch.kind != Kind::Punch {
        return Err("not a punch");
    }
    if !grants
        .iter()
        .any(|g| g.id == punch.flow && g.token == punch.token)
    {
        return Err("not a flow of this socket, or a wrong token");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_punch_is_taken_only_from_the_asker_with_a_flows_token() {
        let grant = FlowGrant {
            index: 0,
            id: 7,
            token: 0xfeed,
        };
        let asker: IpAddr = "198.18.0.1".parse().unwrap();
        let punch = |kind, flow, token| {
            Repr {
                kind,
                flow,
                token,
                tx_ns: 1,
            }
            .to_bytes()
        };
        let from = |ip: &str| SocketAddr::new(ip.parse().unwrap(), 40_000);
        let ok = punch(Kind::Punch, 7, 0xfeed);
        assert_eq!(
            accept_punch(&ok, from("198.18.0.1"), asker, &[&grant]),
            Ok(())
        );
        assert_eq!(
            accept_punch(&ok, from("::ffff:198.18.0.1"), asker, &[&grant]),
            Ok(())
        );
        assert_eq!(
            accept_punch(&ok, from("198.18.0.2"), asker, &[&grant]),
            Err("not from the asker's address")
        );
        for bad in [punch(Kind::Punch, 7, 0xfeee), punch(Kind::Punch, 8, 0xfeed)] {
            assert_eq!(
                accept_punch(&bad, from("198.18.0.1"), asker, &[&grant]),
                Err("not a flow of this socket, or a wrong token")
            );
        }
        assert_eq!(
            accept_punch(
                &punch(Kind::Keepalive, 7, 0xfeed),
                from("198.18.0.1"),
                asker,
                &[&grant]
            ),
            Err("not a punch")
        );
        assert_eq!(
            accept_punch(&ok[..19], from("198.18.0.1"), asker, &[&grant]),
            Err("not a punch")
        );
    }

    #[test]
    fn tickets_are_single_use_and_only_for_their_asker() {
        let tickets = Tickets::default();
        let asker: IpAddr = "127.0.0.1".parse().unwrap();
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let conn = || TcpStream::connect(addr).unwrap();
        let (ticket, rx) = tickets.open(asker);
        let other: SocketAddr = "127.0.0.2:1".parse().unwrap();
        let me: SocketAddr = "127.0.0.1:1".parse().unwrap();
        assert!(tickets
            .deliver(ticket, conn(), other)
            .unwrap_err()
            .ends_with("a ticket of another asker (1 callback(s) refused so far)"));
        assert_eq!(tickets.deliver(ticket, conn(), me), Ok(()));
        assert!(rx.try_recv().is_ok());
        assert!(tickets
            .deliver(ticket, conn(), me)
            .unwrap_err()
            .ends_with("an unknown or expired ticket (2 callback(s) refused so far)"));
        let (ticket, rx) = tickets.open(asker);
        drop(rx);
        assert!(tickets
            .deliver(ticket, conn(), me)
            .unwrap_err()
            .ends_with("an expired ticket (3 callback(s) refused so far)"));
        assert_eq!(tickets.refused.callbacks.load(Ordering::Relaxed), 3);
    }
}
