//! TCP connections to the receiver: control sessions and TCP data streams.

use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use meter::log::Entry;
use meter::RxRecord;
use results::recv::FlowReport;
use wire::control::{self, Meter, Msg, PROTOCOL_VERSION};
use wire::frame::{self, FrameDecoder};
use wire::prefix::unmapped;
use wire::probe::{Packet, Repr, SeqUnwrapper};

use super::shard::{Flow, FlowState};
use super::{ServeError, Shared, MAX_HANDSHAKES};

use crate::control::{
    is_timeout, is_timeout_error, random_bytes, write_framed, write_msg, MsgReader,
};

/// How long a new connection may wait for one of the [`MAX_HANDSHAKES`] slots before it
/// is turned away busy. A sender of a thousand TCP flows attaches them all at once, and
/// their handshakes (one short message each) free slots within milliseconds; connections
/// that hold their slot silently (junk) free none, so newcomers are still turned away.
const HANDSHAKE_SLOT_WAIT: Duration = Duration::from_millis(250);

/// Whether a handshake slot is free, waiting up to [`HANDSHAKE_SLOT_WAIT`] for one. The
/// connections behind wait in the listen backlog meanwhile.
fn wait_for_handshake_slot(shared: &Shared) -> bool {
    let until = Instant::now() + HANDSHAKE_SLOT_WAIT;
    loop {
        if shared.handshaking.load(Ordering::SeqCst) < MAX_HANDSHAKES {
            return true;
        }
        if Instant::now() >= until || shared.stop.load(Ordering::Relaxed) {
            return false;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
}

pub(super) fn accept_loop(shared: &Arc<Shared>, listener: &TcpListener) {
    while !shared.stop.load(Ordering::Relaxed) {
        match listener.accept() {
            Ok((mut stream, _)) => {
                if !wait_for_handshake_slot(shared) {
                    // Turned away before it costs a thread; the reason fits the socket
                    // buffer, so this write does not wait.
                    shared.counters.refused_busy.fetch_add(1, Ordering::Relaxed);
                    let _ = stream.set_nonblocking(true);
                    refuse(
                        &mut stream,
                        "busy: too many connections are in their handshake at once; try again",
                    );
                    // Take what the peer already sent (its hello) and close our side
                    // first: closing with unread bytes would reset the connection, and
                    // the peer would lose the reason with it.
                    let mut sink = [0u8; 4096];
                    let _ = stream.read(&mut sink);
                    let _ = stream.shutdown(std::net::Shutdown::Write);
                    continue;
                }
                if let Err(e) = spawn_connection(shared, stream, false) {
                    eprintln!("dualperf recv: cannot start a connection thread: {e}");
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                std::thread::sleep(Duration::from_millis(20));
            }
            Err(e) => {
                eprintln!("dualperf recv: accept failed: {e}");
                std::thread::sleep(Duration::from_millis(100));
            }
        }
    }
}

/// Serve `stream` on a thread of its own, counted in its handshake until it is done;
/// `adopted`: we opened it (for an agent's `Dial`), so its session's UDP flows are
/// punched through the NAT in front of us.
fn spawn_connection(shared: &Arc<Shared>, stream: TcpStream, adopted: bool) -> std::io::Result<()> {
    shared.handshaking.fetch_add(1, Ordering::SeqCst);
    let s = shared.clone();
    let spawned = std::thread::Builder::new()
        .name("recv-conn".into())
        .spawn(move || {
            let handshake = Handshake {
                count: &s.handshaking,
                open: std::cell::Cell::new(true),
            };
            if let Err(e) = handle_connection(&s, stream, &handshake, adopted) {
                // Refusals counted under their own heading (failed authentication,
                // handshake timeout) are not also bad connections.
                if !e.is::<Counted>() {
                    s.counters.bad_connections.fetch_add(1, Ordering::Relaxed);
                }
                if !s.stop.load(Ordering::Relaxed) {
                    eprintln!("dualperf recv: connection dropped: {e:#}");
                }
            }
        });
    if spawned.is_err() {
        shared.handshaking.fetch_sub(1, Ordering::SeqCst);
    }
    spawned.map(drop)
}

/// Serve a connection we opened (`super::Receiver::adopt`).
pub(super) fn adopt(shared: &Arc<Shared>, stream: TcpStream) -> Result<()> {
    spawn_connection(shared, stream, true).context("cannot start a connection thread")
}

/// A connection in its handshake, counted in [`Shared::handshaking`] until it is done
/// (authenticated, attached, or gone).
struct Handshake<'a> {
    count: &'a std::sync::atomic::AtomicU64,
    open: std::cell::Cell<bool>,
}

impl Handshake<'_> {
    fn done(&self) {
        if self.open.replace(false) {
            self.count.fetch_sub(1, Ordering::SeqCst);
        }
    }
}

impl Drop for Handshake<'_> {
    fn drop(&mut self) {
        self.done();
    }
}

/// Most clock exchanges and host queries a session may make before it registers.
const MAX_QUERIES: u32 = 256;

/// An error already counted in a specific counter.
#[derive(Debug)]
struct Counted(String);

impl std::fmt::Display for Counted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Counted {}

/// Read a handshake message by `deadline`; a timeout is counted as a handshake timeout.
fn handshake_read(
    shared: &Shared,
    reader: &mut MsgReader,
    stream: &mut TcpStream,
    deadline: Instant,
    what: &str,
) -> Result<Msg> {
    match reader.read_by(stream, Some(deadline)) {
        Ok(m) => Ok(m),
        Err(e) if is_timeout_error(&e) => {
            shared
                .counters
                .handshake_timeouts
                .fetch_add(1, Ordering::Relaxed);
            Err(anyhow::Error::new(Counted(format!(
                "handshake timed out waiting for {what}"
            ))))
        }
        Err(e) => Err(e.context(format!("waiting for {what}"))),
    }
}

fn handle_connection(
    shared: &Shared,
    mut stream: TcpStream,
    handshake: &Handshake<'_>,
    adopted: bool,
) -> Result<()> {
    // The whole handshake, up to the flows being registered, must finish by this deadline.
    let deadline = Instant::now() + shared.handshake_timeout;
    stream.set_nonblocking(false)?;
    let _ = stream.set_nodelay(true);
    let mut reader = MsgReader::new();
    let first = handshake_read(
        shared,
        &mut reader,
        &mut stream,
        deadline,
        "the first message",
    )?;
    match first {
        Msg::Hello { version } => {
            shared.active_sessions.fetch_add(1, Ordering::SeqCst);
            let session = Session {
                version,
                deadline,
                adopted,
            };
            let result = control_session(shared, stream, reader, session, handshake);
            shared.active_sessions.fetch_sub(1, Ordering::SeqCst);
            result
        }
        Msg::Attach { flow, token } => {
            handshake.done();
            data_stream(shared, stream, reader.into_decoder(), flow, token)
        }
        Msg::Callback { ticket } if !adopted => {
            handshake.done();
            let peer = stream.peer_addr()?;
            let Some(service) = &shared.service else {
                refuse(
                    &mut stream,
                    "this receiver takes no callbacks (it is not an agent)",
                );
                bail!("a callback to a receiver that is not an agent");
            };
            let mut answer = stream.try_clone()?;
            if let Err(why) = service.callback(ticket, stream, peer) {
                refuse(&mut answer, &why);
                shared
                    .counters
                    .send_refusals
                    .fetch_add(1, Ordering::Relaxed);
                eprintln!("dualperf agent: {why}");
            }
            Ok(())
        }
        other => {
            refuse(&mut stream, "expected hello or attach");
            bail!("unexpected first message {other:?}")
        }
    }
}

fn refuse(stream: &mut TcpStream, message: &str) {
    let _ = write_msg(
        stream,
        &Msg::Error {
            message: message.to_owned(),
        },
    );
}

/// A control session's opening: the sender's protocol version, the handshake's deadline,
/// and whether we opened the connection (`adopt`).
struct Session {
    version: u32,
    deadline: Instant,
    adopted: bool,
}

fn control_session(
    shared: &Shared,
    mut stream: TcpStream,
    mut reader: MsgReader,
    session: Session,
    handshake: &Handshake<'_>,
) -> Result<()> {
    let Session {
        version,
        deadline,
        adopted,
    } = session;
    if version != PROTOCOL_VERSION {
        refuse(
            &mut stream,
            &format!(
                "protocol version {version} is not supported (receiver speaks {PROTOCOL_VERSION})"
            ),
        );
        bail!("sender speaks protocol version {version}");
    }
    let peer = stream.peer_addr()?;
    let peer_ip = unmapped(peer.ip());
    authenticate(shared, &mut stream, &mut reader, deadline, peer_ip)?;
    write_msg(
        &mut stream,
        &Msg::Welcome {
            receiver: format!("dualperf {}", env!("CARGO_PKG_VERSION")),
            features: shared
                .service
                .as_ref()
                .map(|s| s.features())
                .unwrap_or_default(),
            peer: Some(SocketAddr::new(peer_ip, peer.port())),
        },
    )?;
    // Authenticated: registrations may now be large (thousands of flows), and the rest
    // of the handshake (clock exchanges, a host query, the registration) may cross a
    // congested path: a known peer gets a fresh deadline of at least 30 s.
    handshake.done();
    let deadline =
        deadline.max(Instant::now() + shared.handshake_timeout.max(Duration::from_secs(30)));
    reader.set_max_len(control::MAX_SESSION_MSG_LEN);
    let mut queries = 0;
    let flows = loop {
        let msg = match handshake_read(shared, &mut reader, &mut stream, deadline, "register") {
            // A peer that only asked about this host and its clock (`clock --peer`).
            Err(e) if queries > 0 && e.is::<control::PeerClosed>() => return Ok(()),
            other => other?,
        };
        queries += 1;
        if queries > MAX_QUERIES {
            refuse(&mut stream, "too many clock exchanges and host queries");
            bail!("more than {MAX_QUERIES} queries before registering");
        }
        match msg {
            Msg::TimeRequest { t1_ns } => {
                // RFC 5905 §8: t2 on arrival, t3 as the reply leaves, on the clock
                // one-way delays use.
                let t2_ns = netio::clock::wall_ns();
                let reply = Msg::TimeReply {
                    t1_ns,
                    t2_ns,
                    t3_ns: netio::clock::wall_ns(),
                    boot_id: crate::hostinfo::boot_id(),
                    resolution_ns: netio::clock::resolution_ns(netio::clock::ClockId::Realtime),
                };
                write_msg(&mut stream, &reply)?;
            }
            Msg::HostQuery {} => {
                let host = serde_json::to_value(crate::hostinfo::host_doc()).unwrap_or_default();
                write_msg(&mut stream, &Msg::HostReply { host })?;
            }
            Msg::Register { flows } => break flows,
            request @ Msg::SendRequest { .. } => {
                return serve_request(shared, stream, reader, request);
            }
            _ => {
                refuse(&mut stream, "expected register");
                bail!("no register message");
            }
        }
    };
    let session = shared.next_session.fetch_add(1, Ordering::SeqCst);
    let src_ports: Vec<Option<u16>> = flows
        .iter()
        .map(|f| {
            (f.protocol == control::Protocol::Udp)
                .then_some(f.src_port)
                .flatten()
        })
        .collect();
    let asking = super::reserve::asking(&flows);
    let registered = shared.register_flows(session, peer_ip, flows);
    let grants = match registered {
        Ok(g) => g,
        Err(why) => {
            refuse(&mut stream, &why);
            bail!("flows refused: {why}");
        }
    };
    // From here on every exit path files the session's flows (the guard's drop).
    let mut guard = SessionGuard {
        shared,
        ids: grants.iter().map(|g| g.id).collect(),
    };
    let punched = adopted.then(|| grants.clone());
    // `send --reserve`: the flows that asked get their Paths answered from now on.
    let (rsvp, local) = (&shared.rsvp, stream.local_addr()?);
    rsvp.register(local, peer_ip, asking, &grants, &shared.stop);
    write_msg(&mut stream, &Msg::Registered { flows: grants })?;
    // The session now lasts as long as the sender sends; poll so Ctrl-C is noticed.
    stream.set_read_timeout(Some(Duration::from_millis(200)))?;
    let sent = std::thread::scope(|scope| {
        // Through the NAT in front of us, the agent's UDP flows follow our punches.
        let _punching = punched
            .as_ref()
            .and_then(|g| super::punch::start(scope, shared, peer_ip, g, &src_ports));
        wait_for_finish(shared, &mut stream, &mut reader)
    })?;
    let sent_of: Option<HashMap<u16, u64>> = sent
        .as_ref()
        .map(|s| s.iter().map(|f| (f.id, f.packets)).collect());
    let wanted: Vec<(u16, Option<u64>)> = guard
        .ids
        .iter()
        .map(|id| (*id, sent_of.as_ref().and_then(|s| s.get(id).copied())))
        .collect();
    if sent.is_some() {
        wait_for_stragglers(shared, &wanted);
    }
    guard.ids.clear();
    let reports = shared.finish_flows(&wanted);
    let mut results: Vec<_> = reports.iter().map(FlowReport::result).collect();
    shared.rsvp.finish(&mut results);
    stream.set_read_timeout(Some(shared.handshake_timeout))?;
    // Results of thousands of flows exceed one message: several, each under the limit.
    for part in control::results_messages(results, control::MAX_SESSION_MSG_LEN) {
        write_framed(&mut stream, &part.encode())?;
    }
    if sent.is_none() {
        drain_before_close(&mut stream);
    }
    Ok(())
}

/// The challenge, the sender's answer checked against `--key` (a failure is counted and
/// refused with its reason), and on success nothing yet said: the caller welcomes.
fn authenticate(
    shared: &Shared,
    stream: &mut TcpStream,
    reader: &mut MsgReader,
    deadline: Instant,
    peer_ip: std::net::IpAddr,
) -> Result<()> {
    let nonce = control::hex(&random_bytes::<16>());
    write_msg(
        stream,
        &Msg::Challenge {
            nonce: nonce.clone(),
            auth_required: shared.key.is_some(),
        },
    )?;
    let Msg::Auth { mac } = handshake_read(shared, reader, stream, deadline, "auth")? else {
        refuse(stream, "expected auth");
        bail!("no auth message");
    };
    if let Some(key) = &shared.key {
        if !control::verify_mac(key, &nonce, &mac) {
            shared
                .counters
                .auth_failures
                .fetch_add(1, Ordering::Relaxed);
            let why = if mac.is_empty() {
                "authentication required: this receiver was started with --key; pass the same --key to dualperf send"
            } else {
                "authentication failed: wrong key"
            };
            refuse(stream, why);
            return Err(anyhow::Error::new(Counted(format!(
                "{why} (from {peer_ip})"
            ))));
        }
    }
    Ok(())
}

/// Wait for the sender's Finish, polling so that Ctrl-C is noticed: its flows' sent
/// counts, or `None` when this receiver is stopping first.
fn wait_for_finish(
    shared: &Shared,
    stream: &mut TcpStream,
    reader: &mut MsgReader,
) -> Result<Option<Vec<control::FlowSent>>> {
    let sent = loop {
        match reader.read(stream) {
            Ok(Msg::Finish { flows }) => break Some(flows),
            Ok(other) => {
                refuse(stream, "expected finish");
                bail!("unexpected message {other:?}");
            }
            Err(e) if is_timeout_error(&e) => {
                if shared.stop.load(Ordering::Relaxed) {
                    break None;
                }
            }
            Err(e) => return Err(e.context("sender left without finishing")),
        }
    };
    Ok(sent)
}

/// Stopping with the sender still sending: it reads these results after its own
/// Finish. Close our side and drain, so that Finish is not met by a reset that would
/// discard the results in its receive queue.
fn drain_before_close(stream: &mut TcpStream) {
    let _ = stream.shutdown(std::net::Shutdown::Write);
    let _ = stream.set_read_timeout(Some(Duration::from_millis(100)));
    let until = Instant::now() + Duration::from_secs(2);
    let mut sink = [0u8; 4096];
    while Instant::now() < until && matches!(stream.read(&mut sink), Ok(n) if n > 0) {}
}

/// A request to send: served by an agent, refused by a plain receiver.
fn serve_request(
    shared: &Shared,
    mut stream: TcpStream,
    reader: MsgReader,
    request: Msg,
) -> Result<()> {
    let peer = stream.peer_addr()?;
    let peer = SocketAddr::new(unmapped(peer.ip()), peer.port());
    let Some(service) = &shared.service else {
        shared
            .counters
            .send_refusals
            .fetch_add(1, Ordering::Relaxed);
        let why = "this is `dualperf recv`, which never sends: run `dualperf agent` on this host to serve --reverse, --bidir and --from";
        refuse(&mut stream, why);
        return Err(anyhow::Error::new(Counted(format!(
            "refused {peer}'s request to send: not an agent"
        ))));
    };
    match service.serve(stream, reader, peer, request, &shared.stop) {
        Ok(()) => Ok(()),
        Err(ServeError::Refused(why)) => {
            shared
                .counters
                .send_refusals
                .fetch_add(1, Ordering::Relaxed);
            Err(anyhow::Error::new(Counted(format!(
                "refused {peer}'s request to send: {why}"
            ))))
        }
        Err(ServeError::Failed(e)) => Err(e.context(format!("sending for {peer}"))),
    }
}

/// Files a session's flows on every exit path, and counts the session as done.
struct SessionGuard<'a> {
    shared: &'a Shared,
    ids: Vec<u16>,
}

impl Drop for SessionGuard<'_> {
    fn drop(&mut self) {
        if !self.ids.is_empty() {
            let open: Vec<(u16, Option<u64>)> = self.ids.iter().map(|id| (*id, None)).collect();
            self.shared.finish_flows(&open);
        }
        self.shared.sessions_done.fetch_add(1, Ordering::SeqCst);
    }
}

/// After `Finish`, give packets still in flight a moment: wait until every flow whose
/// sent count is known has settled ([`FlowState::settled`]), at most 10 s.
fn wait_for_stragglers(shared: &Shared, wanted: &[(u16, Option<u64>)]) {
    let deadline = Instant::now() + Duration::from_secs(10);
    let finish_mono = netio::clock::mono_ns();
    let ids: Vec<u16> = wanted.iter().map(|(id, _)| *id).collect();
    let sent: HashMap<u16, Option<u64>> = wanted.iter().copied().collect();
    loop {
        let now_mono = netio::clock::mono_ns();
        let done = shared.flows.all_open(&ids, |id, state| {
            sent.get(&id)
                .copied()
                .flatten()
                .is_none_or(|sent| FlowState::settled(state, sent, finish_mono, now_mono))
        });
        if done || Instant::now() >= deadline || shared.stop.load(Ordering::Relaxed) {
            return;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

fn data_stream(
    shared: &Shared,
    mut stream: TcpStream,
    decoder: FrameDecoder,
    flow_id: u16,
    token: u64,
) -> Result<()> {
    let peer_ip = unmapped(stream.peer_addr()?.ip());
    let flow = match shared.flows.flow(flow_id) {
        Some(f) if f.attach(token, peer_ip) => f,
        _ => {
            refuse(&mut stream, "unknown flow or bad token");
            bail!("attach to flow {flow_id} refused");
        }
    };
    let (meter, marking) = (flow.announce.meter, flow.marking());
    if meter == Meter::Rtt {
        // Linux fixes an accepted TCP socket's flow label at the handshake, so echoes on
        // TCP carry the DS field and hop limit of the flow but the kernel's flow label
        // (it reflects the sender's when net.ipv6.flowlabel_reflect has bit 0 set).
        let echo_marking = netio::Marking {
            flow_label: None,
            ..marking
        };
        netio::tcp::set_marking(&stream, &echo_marking).context("marking the echo stream")?;
    }
    // Per-segment header fields (DS field, hop limit, flow label) only where the flow's
    // measurement uses them: every flow but an unmarked bulk one, whose measure is its
    // throughput. They cost: an IPv6 socket then keeps a clone of each segment received,
    // charged to its receive buffer (netio::tcp::enable_recv_meta), and one getsockopt
    // per read.
    let wants_meta =
        meter == Meter::Rtt || !flow.announce.bulk || marking != netio::Marking::default();
    let meta_ok = wants_meta && netio::tcp::enable_recv_meta(&stream).is_ok();
    // The receive buffer: the sender's --window when it gave one (iperf3's -w). Else the
    // kernel's autotuning, unless the header fields are on: with them an IPv6 socket pins
    // a clone of the last segment in its buffer, and with loopback's 64 KB segments and
    // the default 128 KiB buffer that can close the window for good; a fixed 4 MiB
    // (8 MiB as the kernel counts it) leaves room for the clone and a full window.
    match flow.announce.window_bytes {
        Some(w) => {
            let _ = netio::tcp::set_recv_buffer(&stream, w as usize);
        }
        None if meta_ok => {
            let _ = netio::tcp::set_recv_buffer(&stream, DATA_RECV_BUFFER);
        }
        None => {}
    }
    // An unpaced bulk flow's reads wait for BULK_RECV_LOWAT bytes (SO_RCVLOWAT): the
    // sender's kernel wakes this thread once per that much instead of once per segment,
    // and on loopback, where the sender delivers every segment itself, each wake-up is
    // its cost. A message is then stamped when at most that many bytes more have come,
    // microseconds at the rates of an unpaced flow.
    if flow.announce.unpaced {
        let lowat = flow
            .announce
            .window_bytes
            .map_or(BULK_RECV_LOWAT, |w| (w as usize / 4).min(BULK_RECV_LOWAT));
        let _ = netio::tcp::set_recv_lowat(&stream, lowat);
    }
    stream.set_read_timeout(Some(Duration::from_millis(200)))?;
    stream.set_write_timeout(Some(shared.handshake_timeout))?;
    let mut rx = DataRx {
        shared,
        flow,
        meta_ok,
        unwrapper: SeqUnwrapper::default(),
        records: Vec::new(),
    };
    if meter == Meter::Owd {
        return rx.scan(stream, decoder);
    }
    // The same decoder goes on, with the data limit, over bytes already read past the attach.
    let mut data = decoder;
    data.set_max_len(frame::MAX_DATA_LEN);
    let mut buf = vec![0u8; first_read_len(&rx.flow.announce)];
    let mut echo_out: Vec<u8> = Vec::new();
    loop {
        let (rx_ns, meta) = rx.stamp(&stream);
        let mut malformed = 0;
        loop {
            match data.poll_frame() {
                Ok(Some(body)) => {
                    if !rx.record(body, body.len(), rx_ns, meta) {
                        malformed += 1;
                        continue;
                    }
                    let start = echo_out.len();
                    echo_out.extend_from_slice(&[0; frame::PREFIX_LEN]);
                    echo_out.extend_from_slice(body);
                    let _ = frame::emit_prefix(body.len(), &mut echo_out[start..]);
                    Packet::new_unchecked(&mut echo_out[start + frame::PREFIX_LEN..])
                        .make_echo(rx_ns, netio::clock::wall_ns());
                }
                Ok(None) => break,
                Err(_) => {
                    rx.flush(malformed + 1);
                    bail!("flow {flow_id}: oversized TCP message");
                }
            }
        }
        // Records first: a failed echo write must not lose them.
        rx.flush(malformed);
        if !echo_out.is_empty() {
            stream.write_all(&echo_out).context("writing echoes")?;
            echo_out.clear();
        }
        match stream.read(&mut buf) {
            Ok(0) => return Ok(()),
            Ok(n) => {
                data.handle_bytes(&buf[..n]);
                grow_read_buf(&mut buf, n);
            }
            Err(e) if is_timeout(&e) => {
                if shared.stop.load(Ordering::Relaxed) {
                    return Ok(());
                }
            }
            Err(e) => return Err(e).context("reading the TCP data stream"),
        }
    }
}

/// Receive buffer of a TCP data stream.
const DATA_RECV_BUFFER: usize = 4 << 20;

/// The least a read of an unpaced bulk flow waits for (`SO_RCVLOWAT`): one default
/// bulk message (iperf3's write size). Measured on loopback with bbr, a single TCP stream
/// moved 1.4–1.8 times the bytes per second with it as without.
const BULK_RECV_LOWAT: usize = 128 * 1024;

/// Most bytes read per `read` on a TCP data stream.
const DATA_READ_LEN: usize = 256 * 1024;

/// Bytes read per `read` on a TCP data stream at first, unless it is unpaced bulk: a
/// buffer grows to [`DATA_READ_LEN`] only while reads fill it, so a thousand streams of
/// small messages do not each hold 256 KiB (issue 14: memory per flow).
const DATA_READ_FIRST: usize = 16 * 1024;

/// The read buffer a TCP data stream of `announce` starts with.
fn first_read_len(announce: &control::FlowAnnounce) -> usize {
    if announce.unpaced {
        DATA_READ_LEN
    } else {
        DATA_READ_FIRST
    }
}

/// Double `buf` (up to [`DATA_READ_LEN`]) after a read of `n` bytes filled it; what it
/// holds stays.
fn grow_read_buf(buf: &mut Vec<u8>, n: usize) {
    if n == buf.len() && buf.len() < DATA_READ_LEN {
        buf.resize((buf.len() * 2).clamp(DATA_READ_FIRST, DATA_READ_LEN), 0);
    }
}

/// What a TCP data stream has received so far, before it goes into the flow table.
struct DataRx<'a> {
    shared: &'a Shared,
    flow: Arc<Flow>,
    meta_ok: bool,
    unwrapper: SeqUnwrapper,
    records: Vec<RxRecord>,
}

impl DataRx<'_> {
    /// The receive time and header fields of what the last read returned.
    fn stamp(&self, stream: &TcpStream) -> (u64, Option<netio::tcp::TcpRecvMeta>) {
        let rx_ns = netio::clock::wall_ns();
        let meta = if self.meta_ok {
            netio::tcp::last_recv_meta(stream).ok()
        } else {
            None
        };
        (rx_ns, meta)
    }

    /// Record a message of `len` bytes whose body starts with `head`; false if it is not
    /// a data probe of this flow.
    fn record(
        &mut self,
        head: &[u8],
        len: usize,
        rx_ns: u64,
        meta: Option<netio::tcp::TcpRecvMeta>,
    ) -> bool {
        match Packet::new_checked(head).and_then(|p| Repr::parse(&p)) {
            Ok(repr) if !repr.echo && repr.flow == self.flow.id => {
                self.records.push(RxRecord {
                    flow: u32::from(self.flow.id),
                    seq: self.unwrapper.unwrap(repr.seq),
                    size_bytes: len as u32,
                    tx_ns: repr.tx_ns,
                    rx_ns,
                    tos: meta.and_then(|m| m.tos),
                    hop_limit: meta.and_then(|m| m.hop_limit),
                    flow_label: meta.and_then(|m| m.flow_label),
                    kernel_ts: false,
                    rtp_ts: None,
                });
                true
            }
            _ => false,
        }
    }

    fn flush(&mut self, malformed: u64) {
        flush_records(self.shared, &self.flow, &mut self.records, malformed);
    }

    /// The one-way path: nothing is echoed, so only each message's probe is looked at
    /// and the rest of the stream is never copied ([`frame::FrameScanner`]); bulk TCP
    /// runs at memory speed.
    fn scan(&mut self, mut stream: TcpStream, mut decoder: FrameDecoder) -> Result<()> {
        // Keep what the full decoder's path would parse: the probe with its extension.
        let mut scanner =
            frame::FrameScanner::new(frame::MAX_DATA_LEN, wire::probe::EXT_HEADER_LEN);
        // Bytes read past the attach message come first.
        let mut buf = decoder.take_buffered();
        let mut n = buf.len();
        buf.resize(first_read_len(&self.flow.announce).max(n), 0);
        loop {
            let (rx_ns, meta) = self.stamp(&stream);
            let mut malformed = 0;
            let mut rest = &buf[..n];
            while !rest.is_empty() {
                let Ok(used) = scanner.handle_bytes(rest) else {
                    self.flush(malformed + 1);
                    bail!("flow {}: oversized TCP message", self.flow.id);
                };
                rest = &rest[used..];
                if let Some(f) = scanner.poll_frame() {
                    if !self.record(f.head, f.len, rx_ns, meta) {
                        malformed += 1;
                    }
                }
            }
            self.flush(malformed);
            n = match stream.read(&mut buf) {
                Ok(0) => return Ok(()),
                Ok(n) => {
                    grow_read_buf(&mut buf, n);
                    n
                }
                Err(e) if is_timeout(&e) => {
                    if self.shared.stop.load(Ordering::Relaxed) {
                        return Ok(());
                    }
                    0
                }
                Err(e) => return Err(e).context("reading the TCP data stream"),
            };
        }
    }
}

fn flush_records(shared: &Shared, flow: &Flow, records: &mut Vec<RxRecord>, malformed: u64) {
    if records.is_empty() && malformed == 0 {
        return;
    }
    // Under the lock of the flow's home shard, so that its FlowEnd follows these records.
    let filed = shared.flows.with_state(flow, |state| {
        state.malformed += malformed;
        if !records.is_empty() {
            state.last_rx_mono_ns = netio::clock::mono_ns();
        }
        let mut chunk = shared
            .log
            .as_ref()
            .map(|l| (l.producer(), l.producer().chunk()));
        for r in records.iter() {
            state.note_delay(r);
            state.meter_record(r);
            if let Some((_, chunk)) = &mut chunk {
                chunk.push(
                    &Entry::Rx(RxRecord {
                        flow: flow.log_key,
                        ..*r
                    }),
                    0,
                );
            }
        }
        if let Some((log, mut chunk)) = chunk {
            if let Some(dropped) = log.submit(&mut chunk) {
                state.unlogged += dropped.iter().map(|(_, n)| n).sum::<u64>();
            }
        }
    });
    if filed.is_none() {
        // The session already reported this flow: these arrived too late.
        shared
            .counters
            .late_after_finish
            .fetch_add(records.len() as u64, Ordering::Relaxed);
    }
    records.clear();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_read_buffer_grows_only_while_reads_fill_it() {
        let mut buf = vec![7u8; DATA_READ_FIRST];
        grow_read_buf(&mut buf, 160);
        assert_eq!(buf.len(), DATA_READ_FIRST, "a short read keeps the size");
        let mut sizes = Vec::new();
        for _ in 0..6 {
            let n = buf.len();
            grow_read_buf(&mut buf, n);
            sizes.push(buf.len() / 1024);
        }
        assert_eq!(sizes, [32, 64, 128, 256, 256, 256]);
        assert!(
            buf[..DATA_READ_FIRST].iter().all(|b| *b == 7),
            "what it held stays"
        );
        let bulk = control::FlowAnnounce {
            unpaced: true,
            ..control::FlowAnnounce::default()
        };
        assert_eq!(first_read_len(&bulk), DATA_READ_LEN);
        assert_eq!(
            first_read_len(&control::FlowAnnounce::default()),
            DATA_READ_FIRST
        );
    }
}
