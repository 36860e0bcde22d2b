//! The forwarding loop: AF_PACKET rings ⇄ the `router` forwarder and egress links.
//!
//! One turn reads every RX ring, forwards each frame in its RX slot
//! ([`router::forward::Forwarder::handle_frame_in_place`]) and, when the egress link would pass it at
//! once, copies it straight into the egress TX slot; frames the link must hold (rate,
//! delay, loss, a policy's queues) go into a pooled buffer. Then each link gives what
//! is due, and each TX ring that got frames is kicked once. A turn makes no syscall but
//! those kicks: the clock is the vDSO's, the rings are shared memory.
//!
//! RSVP messages for the router (`Action::Signal`, with `[rsvp]` in the QoS file) go to
//! its RSVP engine (`router::rsvp`), timed into the CPU account like a policy's enqueue;
//! what it sends, and what its timers send at the start of each turn, goes straight to
//! the TX ring of its interface, ahead of the egress's queues (a router's own control
//! traffic, as IOS sends RSVP with PAK_PRIORITY): a congested class does not drop it, and
//! the link's emulated delay and loss do not apply to it.
//!
//! Between turns the loop busy-polls the RX rings for a while after the last frame
//! ([`netio::poll::BusyPoll`]), then sleeps in `ppoll` until a frame, the next link event or 100 ms.

use std::collections::VecDeque;
use std::os::fd::RawFd;

use netio::packet::PacketSocket;
use router::egress::Egress;
use router::forward::{Action, Output};
use router::state::{CpuAccount, RouterState, SchedCounters, ThreadTimes};
use router::stats::{IoStats, RouterStats};
use wire::time::Instant;

use super::aux::Aux;

/// Frames read from one RX ring per turn at most, so one busy interface cannot starve
/// the others.
const RX_BATCH: usize = 64;
/// Most frames held for a full TX ring per interface, beyond the link's own queue.
const MAX_PENDING: usize = 4096;
/// Buffers kept for reuse (frames queued in links and policies).
const POOL_MAX: usize = 8192;

/// Reusable frame buffers: a frame that must wait in a link is copied into one, and it
/// comes back once sent. In a steady state no frame allocates.
#[derive(Default)]
struct Pool(Vec<Vec<u8>>);

impl Pool {
    fn copy(&mut self, frame: &[u8]) -> Vec<u8> {
        let mut b = self.0.pop().unwrap_or_else(|| Vec::with_capacity(2048));
        b.clear();
        b.extend_from_slice(frame);
        b
    }

    fn give(&mut self, b: Vec<u8>) {
        if self.0.len() < POOL_MAX {
            self.0.push(b);
        }
    }
}

/// Count a socket error on interface `iface` and log it: the first, then every
/// thousandth (an interface that stays down must not flood the log).
fn io_error(io: &mut IoStats, iface: &str, e: &std::io::Error, aux: &mut Aux) {
    io.io_errors += 1;
    if io.io_errors % 1000 == 1 {
        aux.log(format!(
            "dualperf route: {iface}: {e} ({} so far)",
            io.io_errors
        ));
    }
}

/// What the forwarding thread's CPU clock and scheduler say now (read on that thread).
pub(super) fn thread_times() -> ThreadTimes {
    ThreadTimes {
        cpu_ns: netio::clock::thread_cpu_ns(),
        sched: netio::cpu::thread_sched_stats()
            .ok()
            .map(|s| SchedCounters {
                involuntary_switches: s.involuntary_switches,
                wait_ns: s.wait_ns,
            }),
    }
}

/// Offer `frame` to `egress` at `at`. A service policy's own cost (classify, mark,
/// police, queue) is measured by the monotonic clock (a vDSO read) around it.
fn offer(egress: &mut Egress, frame: Vec<u8>, at: Instant, cpu: &mut CpuAccount) {
    if let Egress::Link(_) = egress {
        egress.enqueue(frame, at);
        return;
    }
    let t0 = netio::clock::mono_ns();
    egress.enqueue(frame, at);
    cpu.policy_enqueue(netio::clock::mono_ns().saturating_sub(t0));
}

/// Queue what RSVP sends for its interface's TX ring (after frames already waiting
/// there); beyond [`MAX_PENDING`] a frame is dropped and counted.
fn queue_signals(out: &mut Vec<Output>, pending: &mut [VecDeque<Vec<u8>>], io: &mut [IoStats]) {
    for o in out.drain(..) {
        if pending[o.iface].len() >= MAX_PENDING {
            io[o.iface].tx_backlog_drops += 1;
        } else {
            pending[o.iface].push_back(o.frame);
        }
    }
}

/// The forwarding state and everything the loop touches.
pub(super) struct Engine {
    pub(super) names: Vec<String>,
    pub(super) socks: Vec<PacketSocket>,
    pub(super) fds: Vec<RawFd>,
    /// The forwarder, the egresses and the counters.
    pub(super) state: RouterState,
    pub(super) aux: Aux,
    pending: Vec<VecDeque<Vec<u8>>>,
    kick: Vec<bool>,
    pool: Pool,
    readable: Vec<bool>,
    /// What RSVP sends, before it joins `pending`.
    signals: Vec<Output>,
}

impl Engine {
    pub(super) fn new(
        names: Vec<String>,
        socks: Vec<PacketSocket>,
        state: RouterState,
        aux: Aux,
    ) -> Self {
        let n = socks.len();
        Self {
            fds: socks.iter().map(PacketSocket::fd).collect(),
            names,
            socks,
            state,
            aux,
            pending: vec![VecDeque::new(); n],
            kick: vec![false; n],
            pool: Pool::default(),
            readable: vec![false; n],
            signals: Vec::new(),
        }
    }

    /// Start the CPU accounting and the loop's record afresh (after a reload, which
    /// a plan sends before each run).
    pub(super) fn restart_counters(&mut self) {
        self.state.restart_counters(thread_times());
    }

    /// One turn at `now_ns`: every RX ring, every link, every TX ring that got frames.
    /// Returns the frames received and sent.
    pub(super) fn turn(&mut self, now_ns: u64) -> u64 {
        let now = Instant::from_nanos(now_ns);
        // The wall clock of the kernel's stamps at `now`.
        let wall_now_ns = netio::clock::wall_ns();
        let mut handled = 0u64;
        let n = self.socks.len();
        let capture = self.aux.capturing();
        self.rsvp_timers(now);
        for i in 0..n {
            let (before, rest) = self.socks.split_at_mut(i);
            let Some((me, after)) = rest.split_first_mut() else {
                continue;
            };
            let (pending, kick, pool, aux, names, signals) = (
                &mut self.pending,
                &mut self.kick,
                &mut self.pool,
                &mut self.aux,
                &self.names,
                &mut self.signals,
            );
            let RouterState {
                fwd,
                egress: links,
                io,
                cpu,
                arrivals,
                rsvp,
                ..
            } = &mut self.state;
            let mut sent = 0u64;
            let got = me.recv_batch_mut(RX_BATCH, |frame, info| {
                if capture {
                    aux.pcap(i, info.timestamp_ns, frame);
                }
                if info.truncated {
                    io[i].rx_truncated += 1;
                    return;
                }
                let at = arrivals.at(info.timestamp_ns, wall_now_ns, now_ns);
                match fwd.handle_frame_in_place(i, frame) {
                    Action::Drop => {}
                    Action::Signal { iface, start, len } => {
                        if let Some(r) = rsvp.as_mut() {
                            let t0 = netio::clock::mono_ns();
                            let packet = &frame[start..start + len];
                            r.handle_signal(now, iface, packet, fwd, links, signals);
                            cpu.rsvp(netio::clock::mono_ns().saturating_sub(t0), 1);
                            queue_signals(signals, pending, io);
                        }
                    }
                    Action::Reply(out) => offer(&mut links[out.iface], out.frame, at, cpu),
                    Action::Forward { iface: o, len } => {
                        let f = &frame[..len];
                        // The egress TX ring, unless the frame goes back out where it
                        // came in (that one is borrowed for reading).
                        let tx = match o.cmp(&i) {
                            std::cmp::Ordering::Less => before.get_mut(o),
                            std::cmp::Ordering::Greater => after.get_mut(o - i - 1),
                            std::cmp::Ordering::Equal => None,
                        };
                        match tx {
                            // Not while capturing: a frame sent now would be written
                            // to its egress's capture before frames that came in on that
                            // interface earlier in the turn.
                            Some(tx)
                                if !capture && pending[o].is_empty() && links[o].pass(len, at) =>
                            {
                                match tx.send(f) {
                                    Ok(true) => {
                                        kick[o] = true;
                                        sent += 1;
                                        if capture {
                                            aux.pcap(o, netio::clock::wall_ns(), f);
                                        }
                                    }
                                    Ok(false) => {
                                        io[o].tx_ring_full += 1;
                                        pending[o].push_back(pool.copy(f));
                                    }
                                    Err(e) => io_error(&mut io[o], &names[o], &e, aux),
                                }
                            }
                            _ => offer(&mut links[o], pool.copy(f), at, cpu),
                        }
                    }
                }
            });
            let io = &mut self.state.io[i];
            match got {
                // Readable with nothing in the ring: a socket error (the interface went
                // down, say). Reading it clears it, so poll stops reporting it.
                Ok(0) if self.readable[i] => {
                    if let Ok(Some(e)) = me.take_error() {
                        io_error(io, &self.names[i], &e, &mut self.aux);
                    }
                }
                Ok(got) => handled += got as u64,
                Err(e) => io_error(io, &self.names[i], &e, &mut self.aux),
            }
            self.readable[i] = false;
            handled += sent;
        }
        for o in 0..n {
            handled += self.send(o, now, capture);
        }
        handled
    }

    /// RSVP's timers due at `now` (at most `rsvp::MAX_FIRINGS` per turn), timed into the
    /// CPU account; what they send is queued for the TX rings.
    fn rsvp_timers(&mut self, now: Instant) {
        if !self.state.rsvp.as_ref().is_some_and(|r| r.due(now)) {
            return;
        }
        let t0 = netio::clock::mono_ns();
        self.state.rsvp_timeout(now, &mut self.signals);
        let ns = netio::clock::mono_ns().saturating_sub(t0);
        self.state.cpu.rsvp(ns, 0);
        queue_signals(&mut self.signals, &mut self.pending, &mut self.state.io);
    }

    /// What egress `o` gives at `now` into its TX ring (frames wait in order for room),
    /// then one kick; returns the frames sent.
    fn send(&mut self, o: usize, now: Instant, capture: bool) -> u64 {
        let mut sent = 0;
        let io = &mut self.state.io[o];
        while let Some(f) = self.state.egress[o].dequeue(now) {
            if self.pending[o].len() >= MAX_PENDING {
                io.tx_backlog_drops += 1;
                self.pool.give(f);
            } else {
                self.pending[o].push_back(f);
            }
        }
        while let Some(f) = self.pending[o].front() {
            match self.socks[o].send(f) {
                Ok(true) => {
                    if capture {
                        self.aux.pcap(o, netio::clock::wall_ns(), f);
                    }
                    if let Some(f) = self.pending[o].pop_front() {
                        self.pool.give(f);
                    }
                    self.kick[o] = true;
                    sent += 1;
                }
                Ok(false) => {
                    io.tx_ring_full += 1;
                    break;
                }
                Err(e) => {
                    io_error(io, &self.names[o], &e, &mut self.aux);
                    if let Some(f) = self.pending[o].pop_front() {
                        self.pool.give(f);
                    }
                }
            }
        }
        // One kick per interface and turn for everything queued in its TX ring;
        // while frames wait for room, kick again each turn.
        if std::mem::take(&mut self.kick[o]) || !self.pending[o].is_empty() {
            if let Err(e) = self.socks[o].flush() {
                io_error(io, &self.names[o], &e, &mut self.aux);
            }
        }
        sent
    }

    /// Whether any RX ring holds a frame (no syscall).
    pub(super) fn rx_pending(&self) -> bool {
        self.socks.iter().any(PacketSocket::rx_pending)
    }

    /// When a loop at `now_ns` must wake at the latest: the next link event, or soon
    /// while frames wait for a full TX ring ([`RouterState::wake_ns`]).
    pub(super) fn wake_at(&self, now_ns: u64) -> u64 {
        let backlog = self.pending.iter().any(|p| !p.is_empty());
        self.state.wake_ns(now_ns, backlog)
    }

    /// Sleep in ppoll for at most `timeout_ns`, until a frame arrives; whether one did.
    pub(super) fn sleep(&mut self, timeout_ns: u64) -> std::io::Result<bool> {
        self.state.record_sleep();
        self.readable = netio::poll::poll_readable(&self.fds, Some(timeout_ns))?;
        Ok(self.readable.iter().any(|&r| r))
    }

    /// The kernel's RX ring drops since the last call, added to the running totals.
    pub(super) fn read_kernel_drops(&mut self) {
        for (i, sock) in self.socks.iter().enumerate() {
            // The kernel's counters reset on every read: keep running totals.
            if let Ok(k) = sock.stats() {
                self.state.io[i].kernel_rx_drops += k.drops;
            }
        }
    }

    /// The counters ([`RouterState::stats`]) `uptime_ns` after the start, with the
    /// rings' and the writer's.
    pub(super) fn stats(&mut self, uptime_ns: u64) -> RouterStats {
        let tx_wrong_format: Vec<u64> = self
            .socks
            .iter()
            .map(PacketSocket::tx_wrong_format)
            .collect();
        let writer = self.aux.writer_stats();
        self.state
            .stats(uptime_ns, thread_times(), writer, &tx_wrong_format)
    }
}
