//! RSVP at a host (RFC 2205): one thread that owns the raw RSVP sockets
//! ([`netio::raw::RawRsvpSocket`], IP protocol 46) and a host role of the sans-IO engine
//! (`rsvp::Sender` for `send --reserve`, `rsvp::Receiver` for `recv` and `agent`).
//!
//! The thread is a thin driver; the state machine is the engine's. Its loop: wait with
//! `ppoll` on the sockets and a wake-up socket until the role's next deadline
//! (`poll_timeout`), parse what arrived ([`wire::rsvp::Message::parse`]; malformed
//! datagrams are counted and dropped) into `handle_message`, run `handle_timeout` when
//! due, send every `poll_transmit` (with the Router Alert option when it asks: Path and
//! PathTear, RFC 2205 §3.1.3) and hand every `poll_event` to the owner's channel.
//! Commands from the owner ([`RsvpHost::run`], [`RsvpHost::ask`]) run on the thread
//! between two turns, so the role is never shared.
//!
//! Stopping ([`RsvpHost::stop`], dropping the handle, or the stop flag, e.g. Ctrl-C):
//! the role's [`Role::shutdown`] tears what it holds (PathTear from a sender, ResvTear
//! from a receiver), those messages are sent, and the thread ends.

use std::io;
use std::net::IpAddr;
use std::os::fd::AsRawFd;
use std::os::unix::net::UnixDatagram;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{mpsc, Arc};
use std::thread::JoinHandle;

use netio::raw::RawRsvpSocket;
use rsvp::{Event, Transmit};
use wire::rsvp::Message;
use wire::time::Instant;

/// The longest wait in `ppoll`: how soon the stop flag is seen.
const STOP_CHECK_NS: u64 = 200_000_000;
/// Receive buffer: the largest IP datagram.
const BUF_LEN: usize = 65_536;

/// A host role of the engine, as the driver sees it.
pub(crate) trait Role: Send + 'static {
    /// A message that arrived from `ip_src`.
    fn handle_message(&mut self, now: Instant, ip_src: IpAddr, msg: Message);
    /// Fire due timers.
    fn handle_timeout(&mut self, now: Instant);
    /// When `handle_timeout` should run next.
    fn poll_timeout(&self) -> Option<Instant>;
    /// The next message to send.
    fn poll_transmit(&mut self) -> Option<Transmit>;
    /// The next thing that happened.
    fn poll_event(&mut self) -> Option<Event>;
    /// Tear down every state held (the messages then come from `poll_transmit`).
    fn shutdown(&mut self, now: Instant);
}

/// The monotonic clock, as the engine counts time.
pub(crate) fn now() -> Instant {
    Instant::from_nanos(netio::clock::mono_ns())
}

/// What the driver counted.
#[derive(Debug, Default)]
pub(crate) struct Counters {
    /// RSVP datagrams received.
    pub(crate) received: AtomicU64,
    /// Of them, truncated or not parsed (dropped).
    pub(crate) malformed: AtomicU64,
    /// Messages sent.
    pub(crate) sent: AtomicU64,
    /// Messages the kernel refused to send.
    pub(crate) send_errors: AtomicU64,
}

type Job<R> = Box<dyn FnOnce(&mut R, Instant) + Send>;

enum Command<R> {
    Run(Job<R>),
    Stop,
}

/// A running RSVP host thread owning a role `R`.
pub(crate) struct RsvpHost<R: Role> {
    commands: mpsc::Sender<Command<R>>,
    wake: UnixDatagram,
    thread: Option<JoinHandle<R>>,
    counters: Arc<Counters>,
}

impl<R: Role> RsvpHost<R> {
    /// Start the thread with `role` on `sockets` (one per address family the role's
    /// flows use); events go to `events`; a set `stop` flag ends it as [`Self::stop`]
    /// does.
    pub(crate) fn start(
        role: R,
        sockets: Vec<RawRsvpSocket>,
        events: mpsc::Sender<Event>,
        stop: Option<Arc<AtomicBool>>,
    ) -> io::Result<Self> {
        let (wake, woken) = UnixDatagram::pair()?;
        wake.set_nonblocking(true)?;
        woken.set_nonblocking(true)?;
        let (commands, rx) = mpsc::channel();
        let counters = Arc::new(Counters::default());
        let mut driver = Driver {
            role,
            sockets,
            woken,
            commands: rx,
            events,
            stop,
            counters: counters.clone(),
        };
        let thread = std::thread::Builder::new()
            .name("rsvp".into())
            .spawn(move || {
                driver.run();
                driver.role
            })?;
        Ok(Self {
            commands,
            wake,
            thread: Some(thread),
            counters,
        })
    }

    /// Run `job` on the thread with the role and the time, soon.
    pub(crate) fn run(&self, job: impl FnOnce(&mut R, Instant) + Send + 'static) {
        let _ = self.commands.send(Command::Run(Box::new(job)));
        let _ = self.wake.send(&[1]);
    }

    /// Run `job` on the thread and wait for its answer; `None` when the thread is gone.
    pub(crate) fn ask<T: Send + 'static>(
        &self,
        job: impl FnOnce(&mut R, Instant) -> T + Send + 'static,
    ) -> Option<T> {
        let (tx, rx) = mpsc::channel();
        self.run(move |role, now| {
            let _ = tx.send(job(role, now));
        });
        rx.recv().ok()
    }

    /// What the driver counted so far.
    pub(crate) fn counters(&self) -> &Counters {
        &self.counters
    }

    /// Tear down, send the tears, end the thread; the role as it ended.
    pub(crate) fn stop(mut self) -> Option<R> {
        self.end()
    }

    fn end(&mut self) -> Option<R> {
        let _ = self.commands.send(Command::Stop);
        let _ = self.wake.send(&[1]);
        self.thread.take().and_then(|t| t.join().ok())
    }
}

impl<R: Role> Drop for RsvpHost<R> {
    fn drop(&mut self) {
        self.end();
    }
}

/// The thread's side.
struct Driver<R> {
    role: R,
    sockets: Vec<RawRsvpSocket>,
    woken: UnixDatagram,
    commands: mpsc::Receiver<Command<R>>,
    events: mpsc::Sender<Event>,
    stop: Option<Arc<AtomicBool>>,
    counters: Arc<Counters>,
}

impl<R: Role> Driver<R> {
    fn run(&mut self) {
        let mut buf = vec![0u8; BUF_LEN];
        let mut fds = vec![self.woken.as_raw_fd()];
        fds.extend(self.sockets.iter().map(RawRsvpSocket::as_raw_fd));
        loop {
            if !self.take_commands() || self.stop.as_ref().is_some_and(|s| s.load(Ordering::SeqCst))
            {
                break;
            }
            let at = now();
            if self.role.poll_timeout().is_some_and(|t| t <= at) {
                self.role.handle_timeout(at);
            }
            self.flush();
            let wait = match self.role.poll_timeout() {
                Some(t) => t.saturating_duration_since(now()).as_nanos(),
                None => STOP_CHECK_NS,
            };
            let Ok(ready) = netio::poll::poll_readable(&fds, Some(wait.min(STOP_CHECK_NS))) else {
                std::thread::sleep(std::time::Duration::from_millis(10));
                continue;
            };
            if ready[0] {
                let mut drain = [0u8; 64];
                while self.woken.recv(&mut drain).is_ok() {}
            }
            for i in (0..self.sockets.len()).filter(|&i| ready[i + 1]) {
                self.receive(i, &mut buf);
            }
            self.flush();
        }
        self.role.shutdown(now());
        self.flush();
    }

    /// Run the queued commands; `false` once told to stop (or the owner is gone).
    fn take_commands(&mut self) -> bool {
        loop {
            match self.commands.try_recv() {
                Ok(Command::Run(job)) => {
                    job(&mut self.role, now());
                    // What a command caused leaves before the next command runs.
                    self.flush();
                }
                Ok(Command::Stop) | Err(mpsc::TryRecvError::Disconnected) => return false,
                Err(mpsc::TryRecvError::Empty) => return true,
            }
        }
    }

    /// Every datagram waiting on socket `i`, parsed into the role.
    fn receive(&mut self, i: usize, buf: &mut [u8]) {
        loop {
            let got = match self.sockets[i].recv(buf) {
                Ok(Some(got)) => got,
                Ok(None) => return,
                Err(e) if e.kind() == io::ErrorKind::InvalidData => {
                    self.counters.malformed.fetch_add(1, Ordering::Relaxed);
                    continue;
                }
                Err(_) => return,
            };
            self.counters.received.fetch_add(1, Ordering::Relaxed);
            let parsed = match got.truncated {
                true => None,
                false => Message::parse(&buf[got.payload.clone()]).ok(),
            };
            match parsed {
                Some(msg) => self.role.handle_message(now(), got.src.to_canonical(), msg),
                None => {
                    self.counters.malformed.fetch_add(1, Ordering::Relaxed);
                }
            }
        }
    }

    /// Send what the role has to send; hand over what happened.
    fn flush(&mut self) {
        while let Some(t) = self.role.poll_transmit() {
            let socket = self
                .sockets
                .iter()
                .find(|s| s.is_v6() == t.dst.to_canonical().is_ipv6());
            let sent = socket.map(|s| {
                s.send(
                    t.dst,
                    Some(t.src),
                    t.ttl,
                    t.router_alert,
                    &t.message.to_bytes(),
                )
            });
            let counter = match sent {
                Some(Ok(())) => &self.counters.sent,
                _ => &self.counters.send_errors,
            };
            counter.fetch_add(1, Ordering::Relaxed);
        }
        while let Some(e) = self.role.poll_event() {
            let _ = self.events.send(e);
        }
    }
}

/// Raw RSVP sockets for the families asked (`v4`, `v6`), or why not (without
/// `CAP_NET_RAW`: a `PermissionDenied` that says so).
pub(crate) fn open_sockets(v4: bool, v6: bool) -> io::Result<Vec<RawRsvpSocket>> {
    let mut sockets = Vec::new();
    if v4 {
        sockets.push(RawRsvpSocket::open(false)?);
    }
    if v6 {
        sockets.push(RawRsvpSocket::open(true)?);
    }
    Ok(sockets)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::VecDeque;
    use wire::rsvp::{MsgType, Session};

    /// A role that records what it was given and sends one message per command.
    #[derive(Default)]
    struct Echo {
        got: Vec<MsgType>,
        out: VecDeque<Transmit>,
        torn: bool,
    }

    impl Role for Echo {
        fn handle_message(&mut self, _: Instant, _: IpAddr, msg: Message) {
            self.got.push(msg.kind);
        }
        fn handle_timeout(&mut self, _: Instant) {}
        fn poll_timeout(&self) -> Option<Instant> {
            None
        }
        fn poll_transmit(&mut self) -> Option<Transmit> {
            self.out.pop_front()
        }
        fn poll_event(&mut self) -> Option<Event> {
            None
        }
        fn shutdown(&mut self, _: Instant) {
            self.torn = true;
        }
    }

    #[test]
    fn commands_run_on_the_thread_in_order_and_stop_tears_down() {
        let (tx, _rx) = mpsc::channel();
        let host = RsvpHost::start(Echo::default(), Vec::new(), tx, None).unwrap();
        host.run(|e, _| e.got.push(MsgType::Path));
        let seen = host.ask(|e, _| e.got.clone()).unwrap();
        assert_eq!(seen, vec![MsgType::Path]);
        let end = host.stop().unwrap();
        assert!(end.torn);
        assert_eq!(end.got, vec![MsgType::Path]);
    }

    #[test]
    fn a_message_for_a_family_without_a_socket_counts_as_a_send_error() {
        let (tx, _rx) = mpsc::channel();
        let host = RsvpHost::start(Echo::default(), Vec::new(), tx, None).unwrap();
        host.ask(|e, _| {
            let session = Session {
                dst: "127.0.0.1".parse().unwrap(),
                protocol: 17,
                flags: 0,
                dst_port: 4646,
            };
            let message = Message {
                kind: MsgType::PathTear,
                send_ttl: 64,
                session,
                hop: Some(wire::rsvp::Hop {
                    addr: session.dst,
                    lih: 0,
                }),
                time_values_ms: None,
                error: None,
                style: None,
                confirm: None,
                sender: None,
                flows: Vec::new(),
                forward: Vec::new(),
            };
            e.out.push_back(Transmit {
                iface: None,
                src: "127.0.0.1".parse().unwrap(),
                dst: "127.0.0.1".parse().unwrap(),
                router_alert: true,
                ttl: 64,
                message,
            });
        });
        // What a command caused leaves (or fails) before the next command runs.
        host.ask(|_, _| ()).unwrap();
        assert_eq!(host.counters().send_errors.load(Ordering::Relaxed), 1);
        assert_eq!(host.counters().sent.load(Ordering::Relaxed), 0);
    }
}
