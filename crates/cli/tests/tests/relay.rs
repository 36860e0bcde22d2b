//! Loss, duplicates and reordering against a test relay with a known schedule: the relay
//! sits on loopback between `send` and `recv`, drops, duplicates and holds back datagrams
//! at fixed positions, and the sender's report, the receiver's own line and the decoded
//! receiver log must all show exactly the counts the schedule implies.

use std::io::{self, Read, Write};
use std::net::{
    IpAddr, Ipv4Addr, Ipv6Addr, Shutdown, SocketAddr, TcpListener, TcpStream, UdpSocket,
};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::support::{counters, path_str, run, send, u, Receiver, TempDir};

/// Probes the sender sends.
const COUNT: u64 = 3600;

/// A held datagram still waiting when nothing has arrived for this long is released.
const IDLE_RELEASE: Duration = Duration::from_millis(200);

/// What the relay does, keyed on a datagram's position: the 0-based count of datagrams
/// received from the sender (on loopback with one flow, its sequence number).
struct Schedule {
    /// Never forwarded.
    drops: &'static [u64],
    /// Forwarded twice, back to back.
    duplicates: &'static [u64],
    /// `(position, k)`: forwarded only after `k` more datagrams have been forwarded.
    holds: &'static [(u64, u64)],
}

/// Every event 300 positions from the next, none at 0 or in the last 250 positions, so
/// no two effects interact (the longest hold spans 200 positions).
const SCHEDULE: Schedule = Schedule {
    drops: &[300, 1500, 2100, 3300],
    duplicates: &[900, 2700],
    holds: &[(600, 1), (1200, 200), (1800, 3), (2400, 1), (3000, 3)],
};

impl Schedule {
    fn is_drop(&self, i: u64) -> bool {
        self.drops.contains(&i)
    }

    fn is_duplicate(&self, i: u64) -> bool {
        self.duplicates.contains(&i)
    }

    fn hold(&self, i: u64) -> Option<u64> {
        self.holds.iter().find(|(p, _)| *p == i).map(|(_, k)| *k)
    }

    /// Every event as `(first position, last position it affects)`, sorted.
    fn spans(&self) -> Vec<(u64, u64)> {
        let mut spans: Vec<(u64, u64)> = self.drops.iter().map(|&p| (p, p)).collect();
        spans.extend(self.duplicates.iter().map(|&p| (p, p)));
        spans.extend(self.holds.iter().map(|&(p, k)| (p, p + k)));
        spans.sort_unstable();
        spans
    }
}

/// The receiver-side counts the schedule implies for `COUNT` probes.
fn expected_counts(s: &Schedule) -> [(&'static str, u64); 11] {
    let drops = s.drops.len() as u64;
    let duplicates = s.duplicates.len() as u64;
    [
        ("packets", COUNT - drops + duplicates),
        ("unique_packets", COUNT - drops),
        ("loss/sent", COUNT),
        ("loss/expected", COUNT),
        ("loss/lost", drops),
        // Each drop is an isolated loss: one loss period of one packet.
        ("loss/bursts", drops),
        ("loss/max_burst_len", u64::from(drops > 0)),
        ("loss/duplicates", duplicates),
        // RFC 4737 §3.3: a held datagram arrives below NextExp and is no duplicate.
        ("loss/reordered", s.holds.len() as u64),
        // RFC 4737 §4.2: held behind k others, it arrives k positions after the earliest
        // larger sequence number (no duplicate falls inside a hold's span).
        (
            "loss/max_reorder_extent",
            s.holds.iter().map(|&(_, k)| k).max().unwrap_or(0),
        ),
        ("loss/beyond_expected", 0),
    ]
}

/// The same counts read from a flow summary (`meter::FlowSummary` as JSON).
fn counts_of(summary: &Value) -> [(&'static str, u64); 11] {
    expected_counts(&SCHEDULE).map(|(name, _)| (name, u(summary, &format!("/{name}"))))
}

/// What the relay did, to show the schedule really ran.
#[derive(Debug, Default, Clone)]
struct RelayStats {
    /// Datagrams received from the sender.
    from_sender: u64,
    /// Datagrams received from the receiver (ignored; none expected from a one-way flow).
    from_receiver: u64,
    /// Datagrams sent to the receiver, copies included.
    forwarded: u64,
    dropped: Vec<u64>,
    duplicated: Vec<u64>,
    /// `(position, datagrams forwarded between holding and releasing it)`.
    released: Vec<(u64, u64)>,
    /// Held datagrams released because the sender went quiet.
    released_idle: Vec<u64>,
    /// Control messages whose `src_port`s were rewritten (see [`Relay`]).
    registers_rewritten: u64,
}

struct Held {
    data: Vec<u8>,
    position: u64,
    /// Forwards still to wait for.
    remaining: u64,
    k: u64,
}

/// A loopback relay on one kernel-chosen port for TCP and UDP. TCP connections are
/// proxied to the receiver's port; UDP datagrams from the sender are forwarded to it from
/// the relay's own socket under [`SCHEDULE`], and datagrams from the receiver are ignored.
///
/// One deviation from a byte-for-byte proxy: the receiver accepts a flow's datagrams only
/// from the source port the sender announced in its `register` message, and the relay
/// forwards from its own port, so the relay rewrites each announced `src_port` to that
/// port (the control channel carries no per-message MAC). Everything else passes as is.
struct Relay {
    port: u16,
    stop: Arc<AtomicBool>,
    stats: Arc<Mutex<RelayStats>>,
    /// Every proxied TCP stream, to shut down on stop.
    streams: Arc<Mutex<Vec<TcpStream>>>,
    threads: Arc<Mutex<Vec<JoinHandle<()>>>>,
    main: Vec<JoinHandle<()>>,
}

impl Relay {
    /// With `coalesce`, datagrams go to the receiver from a second socket, in batches
    /// of up to 64 in the order the schedule gives them, each run of equal-sized ones as
    /// one UDP GSO send (`netio::UdpSocket::send_batch` on loopback), so a receiver with
    /// UDP GRO takes them in coalesced buffers; announced source ports then name that
    /// socket.
    fn start(ip: IpAddr, receiver_port: u16, coalesce: bool) -> Self {
        let (listener, udp) = bind_pair(ip);
        let port = listener.local_addr().expect("relay address").port();
        let upstream = SocketAddr::new(ip, receiver_port);
        let gso = coalesce.then(|| {
            let sock = netio::UdpSocket::bind(SocketAddr::new(ip, 0), false).expect("bind");
            sock.connect(upstream)
                .expect("connect the relay's GSO socket");
            sock
        });
        let src_port = match &gso {
            Some(sock) => sock.local_addr().expect("GSO socket address").port(),
            None => port,
        };
        let stop = Arc::new(AtomicBool::new(false));
        let stats = Arc::new(Mutex::new(RelayStats::default()));
        let streams = Arc::new(Mutex::new(Vec::new()));
        let threads = Arc::new(Mutex::new(Vec::new()));
        let rewrites = Arc::new(AtomicU64::new(0));

        listener
            .set_nonblocking(true)
            .expect("nonblocking listener");
        let accept = {
            let (stop, streams, threads, rewrites) = (
                stop.clone(),
                streams.clone(),
                threads.clone(),
                rewrites.clone(),
            );
            std::thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    match listener.accept() {
                        Ok((client, _)) => {
                            proxy(client, upstream, src_port, &streams, &threads, &rewrites)
                        }
                        Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                            std::thread::sleep(Duration::from_millis(5));
                        }
                        Err(e) => panic!("relay accept: {e}"),
                    }
                }
            })
        };

        udp.set_read_timeout(Some(Duration::from_millis(10)))
            .expect("UDP read timeout");
        let datagrams = {
            let (stop, stats) = (stop.clone(), stats.clone());
            std::thread::spawn(move || {
                let mut forwarder = Forwarder {
                    sock: udp,
                    upstream,
                    gso,
                    pending: Vec::new(),
                    held: Vec::new(),
                    stats: RelayStats::default(),
                };
                forwarder.run(&stop);
                forwarder.stats.registers_rewritten = rewrites.load(Ordering::SeqCst);
                *stats.lock().unwrap_or_else(|e| e.into_inner()) = forwarder.stats;
            })
        };
        Self {
            port,
            stop,
            stats,
            streams,
            threads,
            main: vec![accept, datagrams],
        }
    }

    /// Stop every thread and return what the relay did.
    fn finish(mut self) -> RelayStats {
        self.shut_down();
        self.stats.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    fn shut_down(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        for s in self
            .streams
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .drain(..)
        {
            let _ = s.shutdown(Shutdown::Both);
        }
        let mut all: Vec<JoinHandle<()>> = self.main.drain(..).collect();
        all.extend(
            self.threads
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .drain(..),
        );
        for t in all {
            let _ = t.join();
        }
    }
}

impl Drop for Relay {
    fn drop(&mut self) {
        self.shut_down();
    }
}

/// A TCP listener on a kernel-chosen port of `ip` and a UDP socket on the same port.
fn bind_pair(ip: IpAddr) -> (TcpListener, UdpSocket) {
    let mut last = None;
    // The kernel's TCP port may be taken for UDP; a few tries find one free for both.
    for _ in 0..20 {
        let listener = TcpListener::bind(SocketAddr::new(ip, 0)).expect("relay TCP listener");
        let port = listener.local_addr().expect("relay address").port();
        match UdpSocket::bind(SocketAddr::new(ip, port)) {
            Ok(udp) => {
                // The relay reads one datagram at a time while the sender bursts 50 every
                // 500 µs: a deep buffer, so a relay thread that loses its core for a
                // while (tests run side by side on two) drops nothing the schedule did
                // not.
                let bytes: libc::c_int = 16 << 20;
                for opt in [libc::SO_RCVBUFFORCE, libc::SO_RCVBUF] {
                    // SAFETY: a valid socket, an int option of the size given.
                    let rc = unsafe {
                        libc::setsockopt(
                            std::os::fd::AsRawFd::as_raw_fd(&udp),
                            libc::SOL_SOCKET,
                            opt,
                            (&bytes as *const libc::c_int).cast(),
                            size_of::<libc::c_int>() as libc::socklen_t,
                        )
                    };
                    if rc == 0 {
                        break;
                    }
                }
                return (listener, udp);
            }
            Err(e) => last = Some(e),
        }
    }
    panic!("no port free for both TCP and UDP on {ip}: {last:?}");
}

/// Proxy one accepted connection to `upstream` with two copy threads.
fn proxy(
    client: TcpStream,
    upstream: SocketAddr,
    relay_port: u16,
    streams: &Mutex<Vec<TcpStream>>,
    threads: &Mutex<Vec<JoinHandle<()>>>,
    rewrites: &Arc<AtomicU64>,
) {
    client.set_nonblocking(false).expect("blocking stream");
    let server = TcpStream::connect(upstream).expect("relay connects to the receiver");
    let clone = |s: &TcpStream| s.try_clone().expect("clone a stream");
    streams
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .extend([clone(&client), clone(&server)]);
    let (c_read, s_write) = (clone(&client), clone(&server));
    let rewrites = rewrites.clone();
    let up = std::thread::spawn(move || copy_frames(c_read, s_write, relay_port, &rewrites));
    let down = std::thread::spawn(move || {
        let (mut from, mut to) = (server, client);
        let _ = io::copy(&mut from, &mut to);
        let _ = to.shutdown(Shutdown::Write);
    });
    threads
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .extend([up, down]);
}

/// Sender to receiver: control frames (u32 BE length, JSON body) passed on, a
/// `register` message with its `src_port`s set to the relay's port.
fn copy_frames(mut from: TcpStream, mut to: TcpStream, relay_port: u16, rewrites: &AtomicU64) {
    loop {
        let mut prefix = [0u8; 4];
        if from.read_exact(&mut prefix).is_err() {
            break;
        }
        let mut body = vec![0u8; u32::from_be_bytes(prefix) as usize];
        if from.read_exact(&mut body).is_err() {
            break;
        }
        if let Some(rewritten) = rewrite_register(&body, relay_port) {
            rewrites.fetch_add(1, Ordering::SeqCst);
            body = rewritten;
        }
        let len = u32::try_from(body.len()).expect("a control message fits a u32 length");
        let mut frame = len.to_be_bytes().to_vec();
        frame.extend_from_slice(&body);
        if to.write_all(&frame).is_err() {
            break;
        }
    }
    let _ = to.shutdown(Shutdown::Write);
}

fn rewrite_register(body: &[u8], relay_port: u16) -> Option<Vec<u8>> {
    let mut msg: Value = serde_json::from_slice(body).ok()?;
    if msg["type"] != "register" {
        return None;
    }
    for flow in msg["flows"].as_array_mut()? {
        if flow["src_port"].is_u64() {
            flow["src_port"] = relay_port.into();
        }
    }
    Some(serde_json::to_vec(&msg).expect("encode a control message"))
}

/// The UDP side of the relay.
struct Forwarder {
    sock: UdpSocket,
    upstream: SocketAddr,
    /// The coalescing relay's socket to the receiver, and what waits to go in a batch.
    gso: Option<netio::UdpSocket>,
    pending: Vec<Vec<u8>>,
    held: Vec<Held>,
    stats: RelayStats,
}

impl Forwarder {
    fn run(&mut self, stop: &AtomicBool) {
        let mut buf = [0u8; 65536];
        let mut last_arrival = Instant::now();
        while !stop.load(Ordering::Relaxed) {
            let (len, from) = match self.sock.recv_from(&mut buf) {
                Ok(got) => got,
                Err(e)
                    if matches!(
                        e.kind(),
                        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                    ) =>
                {
                    self.flush();
                    if !self.held.is_empty() && last_arrival.elapsed() >= IDLE_RELEASE {
                        for h in std::mem::take(&mut self.held) {
                            self.send(&h.data);
                            self.stats.released_idle.push(h.position);
                        }
                        self.flush();
                    }
                    continue;
                }
                // An ICMP error from an earlier send (the receiver gone): not a datagram.
                Err(_) => continue,
            };
            if from == self.upstream {
                self.stats.from_receiver += 1;
                continue;
            }
            last_arrival = Instant::now();
            let i = self.stats.from_sender;
            self.stats.from_sender += 1;
            let data = &buf[..len];
            if SCHEDULE.is_drop(i) {
                self.stats.dropped.push(i);
            } else if let Some(k) = SCHEDULE.hold(i) {
                self.held.push(Held {
                    data: data.to_vec(),
                    position: i,
                    remaining: k,
                    k,
                });
            } else {
                let data = data.to_vec();
                self.forward(&data);
                if SCHEDULE.is_duplicate(i) {
                    self.stats.duplicated.push(i);
                    self.forward(&data);
                }
            }
        }
    }

    /// Forward one datagram, then release every held datagram now due.
    fn forward(&mut self, data: &[u8]) {
        self.send(data);
        for h in &mut self.held {
            h.remaining -= 1;
        }
        let (due, waiting): (Vec<Held>, Vec<Held>) = std::mem::take(&mut self.held)
            .into_iter()
            .partition(|h| h.remaining == 0);
        self.held = waiting;
        for h in due {
            self.send(&h.data);
            self.stats.released.push((h.position, h.k));
        }
    }

    fn send(&mut self, data: &[u8]) {
        self.stats.forwarded += 1;
        if self.gso.is_some() {
            self.pending.push(data.to_vec());
            if self.pending.len() == netio::MAX_BATCH {
                self.flush();
            }
            return;
        }
        self.sock
            .send_to(data, self.upstream)
            .expect("relay forwards a datagram");
    }

    /// Send what waits for the coalescing socket, in order.
    fn flush(&mut self) {
        let Some(sock) = &self.gso else { return };
        let mut off = 0;
        while off < self.pending.len() {
            let batch: Vec<&[u8]> = self.pending[off..].iter().map(Vec::as_slice).collect();
            off += sock.send_batch(&batch).expect("relay forwards a batch");
        }
        self.pending.clear();
    }
}

/// How the receiver takes each datagram.
#[derive(Clone, Copy, PartialEq)]
enum RxCopy {
    /// Whole, 64-byte datagrams.
    Whole,
    /// `recv --skip-rx-copy`, 1000-byte datagrams: only each one's 256-byte head leaves
    /// the kernel.
    Head,
}

/// One flow of `COUNT` UDP probes through the relay to a receiver, logging with `log`;
/// every view of the flow must show the counts [`SCHEDULE`] implies.
fn relay_counts_match_the_schedule(ip: IpAddr, coalesce: bool, log: bool, copy: RxCopy) {
    let spans = SCHEDULE.spans();
    assert!(spans[0].0 > 0, "no event at position 0");
    assert!(
        spans
            .windows(2)
            .all(|w| w[1].0 >= w[0].0 + 300 && w[1].0 > w[0].1),
        "events at least 300 positions apart, spans disjoint: {spans:?}"
    );
    assert!(
        spans.iter().all(|&(_, last)| last < COUNT - 250),
        "no event in the last 250 positions: {spans:?}"
    );
    // The receiver stops waiting for stragglers once it holds as many records as were
    // sent: with more duplicates than drops it could stop before the last probes.
    assert!(SCHEDULE.duplicates.len() <= SCHEDULE.drops.len());

    let family = if ip.is_ipv4() { "v4" } else { "v6" };
    let mode = if coalesce { "gro" } else { "plain" };
    let head = if copy == RxCopy::Head { "-head" } else { "" };
    let dir = TempDir::new(&format!("relay-{family}-{mode}{head}-{log}"));
    let log = log.then(|| dir.path("recv.dplog"));
    let mut rx_args = vec!["--json", "--sessions", "1"];
    let size: u64 = match copy {
        RxCopy::Whole => 64,
        RxCopy::Head => {
            rx_args.push("--skip-rx-copy");
            1000
        }
    };
    if let Some(log) = &log {
        rx_args.extend(["--log", path_str(log)]);
    }
    let rx = Receiver::start(&rx_args);
    let relay = Relay::start(ip, rx.port, coalesce);
    let count = COUNT.to_string();
    let size_arg = size.to_string();
    // Coalesced: the sender too sends in batches (GSO to the relay, which takes them one
    // by one), 50 datagrams every 500 µs.
    let rate: &[&str] = if coalesce {
        &["--rate", "100000pps", "--batch-window", "500us"]
    } else {
        &["--rate", "2000pps"]
    };
    let mut args = vec!["--udp", "--count", &count, "--size", &size_arg, "--json"];
    args.extend_from_slice(rate);
    let out = send(&ip.to_string(), relay.port, &args);
    out.assert_success();
    let recv = rx.finish();
    recv.finished.assert_success();
    let stats = relay.finish();

    // The relay did what the schedule says, so nothing below passes vacuously.
    let drops = SCHEDULE.drops.len() as u64;
    let duplicates = SCHEDULE.duplicates.len() as u64;
    let received = COUNT - drops + duplicates;
    assert_eq!(stats.from_sender, COUNT, "{stats:?}");
    assert_eq!(stats.dropped, SCHEDULE.drops, "{stats:?}");
    assert_eq!(stats.duplicated, SCHEDULE.duplicates, "{stats:?}");
    assert_eq!(stats.released, SCHEDULE.holds, "{stats:?}");
    assert!(stats.released_idle.is_empty(), "{stats:?}");
    assert_eq!(stats.forwarded, received, "{stats:?}");
    assert_eq!(stats.registers_rewritten, 1, "{stats:?}");

    let expected = expected_counts(&SCHEDULE);
    assert_eq!(expected[0], ("packets", received));

    // 1. The receiver's summary as the sender reports it.
    let report = out.json();
    assert_eq!(report["interrupted"], false);
    let flows = report["flows"].as_array().expect("flows");
    assert_eq!(flows.len(), 1, "{report:#}");
    let flow = &flows[0];
    assert_eq!(u(flow, "/sent/packets"), COUNT);
    assert_eq!(u(flow, "/malformed_at_receiver"), 0);
    assert_eq!(counts_of(&flow["received"]), expected, "send --json");
    // Each datagram at its full size, also those taken by their head.
    assert_eq!(u(flow, "/received/bytes"), received * size);

    // 2. The receiver's own line.
    assert_eq!(recv.flows.len(), 1, "{:?}", recv.flows);
    let seen = &recv.flows[0];
    assert_eq!(seen["protocol"], "udp");
    assert_eq!(seen["peer"], ip.to_string());
    assert_eq!(u(seen, "/sent_packets"), COUNT);
    assert_eq!(counts_of(&seen["summary"]), expected, "recv --json");
    assert_eq!(
        counters(&recv.counters),
        [
            ("datagrams", received),
            ("malformed_datagrams", 0),
            ("unknown_flow", 0),
            ("wrong_source", 0),
            ("bad_connections", 0),
            ("auth_failures", 0),
            ("handshake_timeouts", 0),
        ]
    );

    // Coalesced: the receiver split GRO buffers, so the counts above held through it.
    // Taken by their heads: GRO is off, the kernel split the GSO sends itself.
    let gro = u(&recv.counters, "/gro_datagrams");
    let head_only = u(&recv.counters, "/head_only_datagrams");
    if copy == RxCopy::Head {
        assert_eq!(head_only, received);
        assert_eq!(gro, 0);
    } else if coalesce {
        assert!(gro > received / 2, "GRO datagrams {gro} of {received}");
        assert!(u(&recv.counters, "/gro_buffers") > 0);
    } else {
        assert_eq!(gro, 0);
    }
    if copy == RxCopy::Whole {
        assert_eq!(head_only, 0);
    }

    // 3. The receiver's log, decoded.
    let Some(log) = log else {
        return;
    };
    let doc = run(&["decode", path_str(&log), "--json"])
        .assert_success()
        .json();
    let logged: Vec<&Value> = doc["summary"]["flows"]
        .as_array()
        .expect("summary.flows")
        .iter()
        .filter(|f| u(f, "/packets") > 0)
        .collect();
    assert_eq!(logged.len(), 1, "one flow with records: {doc:#}");
    assert_eq!(counts_of(logged[0]), expected, "decode --json");
    assert_eq!(u(logged[0], "/bytes"), received * size, "decode --json");
}

#[test]
fn relay_loss_duplicates_and_reordering_are_counted_exactly_over_ipv4() {
    relay_counts_match_the_schedule(IpAddr::V4(Ipv4Addr::LOCALHOST), false, true, RxCopy::Whole);
}

#[test]
fn relay_loss_duplicates_and_reordering_are_counted_exactly_over_ipv6() {
    relay_counts_match_the_schedule(IpAddr::V6(Ipv6Addr::LOCALHOST), false, true, RxCopy::Whole);
}

/// The same schedule with every hop coalesced: the sender's GSO sends, the relay's GSO
/// batches, and the receiver's GRO buffers split again. The counts are those of the
/// uncoalesced runs above, exactly.
#[test]
fn relay_counts_hold_through_gso_and_gro_over_ipv4() {
    relay_counts_match_the_schedule(IpAddr::V4(Ipv4Addr::LOCALHOST), true, true, RxCopy::Whole);
}

#[test]
fn relay_counts_hold_through_gso_and_gro_over_ipv6() {
    relay_counts_match_the_schedule(IpAddr::V6(Ipv6Addr::LOCALHOST), true, true, RxCopy::Whole);
}

/// Coalesced again, to a receiver that does not log: it meters each GRO buffer's runs
/// of consecutive datagrams in one step (a logging one takes them one by one), to the
/// same counts.
#[test]
fn relay_counts_hold_through_gro_runs_metered_at_once_over_ipv4() {
    relay_counts_match_the_schedule(IpAddr::V4(Ipv4Addr::LOCALHOST), true, false, RxCopy::Whole);
}

#[test]
fn relay_counts_hold_through_gro_runs_metered_at_once_over_ipv6() {
    relay_counts_match_the_schedule(IpAddr::V6(Ipv6Addr::LOCALHOST), true, false, RxCopy::Whole);
}

/// The same schedule to a receiver that copies only each datagram's head
/// (`recv --skip-rx-copy`), from a plain sender and from a coalescing one (its GSO sends
/// split by the kernel, as the receiver takes no GRO buffers): the same counts, and
/// every datagram at its full size.
#[test]
fn relay_counts_hold_when_the_receiver_copies_heads_only_over_ipv4() {
    relay_counts_match_the_schedule(IpAddr::V4(Ipv4Addr::LOCALHOST), false, true, RxCopy::Head);
}

#[test]
fn relay_counts_hold_through_gso_when_the_receiver_copies_heads_only_over_ipv6() {
    relay_counts_match_the_schedule(IpAddr::V6(Ipv6Addr::LOCALHOST), true, false, RxCopy::Head);
}
