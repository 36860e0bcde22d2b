//! The forwarding loop: AF_PACKET rings ⇄ the `router` forwarder and egress links.
//!
//! One turn reads every RX ring, forwards each frame in its RX slot
//! ([`Forwarder::handle_frame_in_place`]) and, when the egress link would pass it at
//! once, copies it straight into the egress TX slot; frames the link must hold (rate,
//! delay, loss, a policy's queues) go into a pooled buffer. Then each link gives what
//! is due, and each TX ring that got frames is kicked once. A turn makes no syscall but
//! those kicks: the clock is the vDSO's, the rings are shared memory.
//!
//! Between turns the loop busy-polls the RX rings for a while after the last frame
//! ([`netio::poll::BusyPoll`]), then sleeps in `ppoll` until a frame, the next link event or 100 ms.

use std::collections::VecDeque;
use std::os::fd::RawFd;

use netio::packet::PacketSocket;
use qos::hist::Histogram;
use router::forward::{Action, Forwarder};
use router::stats::{CpuStats, InterfaceStats, IoStats, LoopStats, RouterStats};
use wire::time::Instant;

use super::aux::Aux;
use super::Egress;

/// Frames read from one RX ring per turn at most, so one busy interface cannot starve
/// the others.
const RX_BATCH: usize = 64;
/// Most frames held for a full TX ring per interface, beyond the link's own queue.
const MAX_PENDING: usize = 4096;
/// Buffers kept for reuse (frames queued in links and policies).
const POOL_MAX: usize = 8192;
/// A turn or a gap between turns longer than this is a stall (counted).
const STALL_NS: u64 = 1_000_000;

/// When a frame the kernel stamped `stamp_ns` (wall clock) arrived, on the monotonic clock
/// of a turn at `now_ns` (whose wall time is `wall_now_ns`): the time its egress link or
/// policy is offered it. A router that falls behind its RX rings (on a busy host) so
/// still queues what arrived over 90 ms as spread over those 90 ms, as the traffic was,
/// not as one burst at the turn that overflows a queue the traffic never filled. Never
/// before `last_ns`, the frame offered before (in ring order, so the links' clocks do not
/// go back), nor after `now_ns`; `now_ns` for a frame without a stamp.
fn arrival_ns(stamp_ns: u64, wall_now_ns: u64, now_ns: u64, last_ns: u64) -> u64 {
    let at = if stamp_ns == 0 {
        now_ns
    } else {
        now_ns.saturating_sub(wall_now_ns.saturating_sub(stamp_ns))
    };
    at.max(last_ns).min(now_ns)
}

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

/// How the loop itself ran ([`LoopStats`], the record that shows a stall), with what
/// its percentiles and scheduler counters are made from.
#[derive(Debug, Default)]
pub(super) struct LoopRecord {
    /// What the stats file shows as `loop`.
    pub(super) stats: LoopStats,
    /// Busy turn durations, ns.
    turn_hist: Histogram,
    /// The scheduler's counters when the record started.
    sched_base: Option<netio::cpu::SchedStats>,
}

impl LoopRecord {
    fn turn(&mut self, took_ns: u64) {
        let s = &mut self.stats;
        s.busy_turns += 1;
        s.max_turn_ns = s.max_turn_ns.max(took_ns);
        s.turns_over_1ms += u64::from(took_ns > STALL_NS);
        self.turn_hist.record(took_ns);
    }

    fn gap(&mut self, ns: u64) {
        let s = &mut self.stats;
        s.max_gap_ns = s.max_gap_ns.max(ns);
        s.gaps_over_1ms += u64::from(ns > STALL_NS);
    }

    /// A fresh record; the scheduler's counters are taken from here on.
    fn start() -> Self {
        Self {
            sched_base: netio::cpu::thread_sched_stats().ok(),
            ..Self::default()
        }
    }

    /// Update the percentiles and the scheduler's counters (called on the forwarding
    /// thread): times another task took the forwarding thread's CPU while it could run
    /// (`nonvoluntary_ctxt_switches`), and how long it waited for a CPU in all, ns
    /// (`/proc/thread-self/schedstat`): a long turn or gap with these rising is the
    /// scheduler's doing, not the loop's (pin the router with `--cpu` on a CPU nothing
    /// else uses).
    fn update(&mut self) {
        self.stats.turn_ns = self.turn_hist.summary();
        if let (Some(base), Ok(now)) = (self.sched_base, netio::cpu::thread_sched_stats()) {
            self.stats.involuntary_switches = Some(
                now.involuntary_switches
                    .saturating_sub(base.involuntary_switches),
            );
            self.stats.runqueue_wait_ns = Some(now.wait_ns.saturating_sub(base.wait_ns));
        }
    }
}

/// Where the CPU accounting starts: at start, then at each reload.
pub(super) struct CpuBase {
    pub(super) thread_cpu_ns: u64,
    pub(super) frames: u64,
    pub(super) busy_ns: u64,
    pub(super) qos_ns: u64,
    pub(super) qos_frames: u64,
}

impl CpuBase {
    /// Accounting from now on, `frames` having been received so far.
    fn from_here(frames: u64) -> Self {
        Self {
            thread_cpu_ns: netio::clock::thread_cpu_ns(),
            frames,
            busy_ns: 0,
            qos_ns: 0,
            qos_frames: 0,
        }
    }
}

/// The forwarding state and everything the loop touches.
pub(super) struct Engine {
    pub(super) names: Vec<String>,
    pub(super) socks: Vec<PacketSocket>,
    pub(super) fds: Vec<RawFd>,
    pub(super) fwd: Forwarder,
    pub(super) links: Vec<Egress>,
    pub(super) io: Vec<IoStats>,
    pub(super) cpu: CpuBase,
    pub(super) aux: Aux,
    pub(super) looped: LoopRecord,
    /// Snapshots taken because SIGUSR1 asked (in the stats: a caller waits for it to
    /// grow, so it knows the file it reads was taken after its signal).
    pub(super) usr1_answered: u64,
    pending: Vec<VecDeque<Vec<u8>>>,
    kick: Vec<bool>,
    pool: Pool,
    readable: Vec<bool>,
    /// When the last frame offered to a link arrived (monotonic ns): see [`arrival_ns`].
    last_arrival_ns: u64,
}

impl Engine {
    pub(super) fn new(
        names: Vec<String>,
        socks: Vec<PacketSocket>,
        fwd: Forwarder,
        links: Vec<Egress>,
        aux: Aux,
    ) -> Self {
        let n = socks.len();
        Self {
            fds: socks.iter().map(PacketSocket::fd).collect(),
            names,
            socks,
            cpu: CpuBase::from_here(0),
            fwd,
            links,
            io: vec![IoStats::default(); n],
            aux,
            looped: LoopRecord::start(),
            usr1_answered: 0,
            pending: vec![VecDeque::new(); n],
            kick: vec![false; n],
            pool: Pool::default(),
            readable: vec![false; n],
            last_arrival_ns: 0,
        }
    }

    /// Start the CPU accounting and the loop's record afresh (after a reload, which
    /// a plan sends before each run).
    pub(super) fn restart_counters(&mut self) {
        self.looped = LoopRecord::start();
        self.cpu = CpuBase::from_here(self.rx_frames());
    }

    /// One turn at `now_ns`: every RX ring, every link, every TX ring that got frames.
    /// Returns the frames received and sent.
    pub(super) fn turn(&mut self, now_ns: u64) -> u64 {
        let now = Instant::from_nanos(now_ns);
        // The wall clock of the kernel's stamps at `now`.
        let wall_now_ns = netio::clock::wall_ns();
        let mut last_arrival_ns = self.last_arrival_ns;
        let mut handled = 0u64;
        let n = self.socks.len();
        let capture = self.aux.capturing();
        for i in 0..n {
            let (before, rest) = self.socks.split_at_mut(i);
            let Some((me, after)) = rest.split_first_mut() else {
                continue;
            };
            let (fwd, links, pending, kick, pool, io, aux, cpu, names) = (
                &mut self.fwd,
                &mut self.links,
                &mut self.pending,
                &mut self.kick,
                &mut self.pool,
                &mut self.io,
                &mut self.aux,
                &mut self.cpu,
                &self.names,
            );
            let mut sent = 0u64;
            let got = me.recv_batch_mut(RX_BATCH, |frame, info| {
                if capture {
                    aux.pcap(i, info.timestamp_ns, frame);
                }
                if info.truncated {
                    io[i].rx_truncated += 1;
                    return;
                }
                last_arrival_ns =
                    arrival_ns(info.timestamp_ns, wall_now_ns, now_ns, last_arrival_ns);
                let at = Instant::from_nanos(last_arrival_ns);
                match fwd.handle_frame_in_place(i, frame) {
                    Action::Drop => {}
                    Action::Reply(out) => links[out.iface].enqueue(out.frame, at, cpu),
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
                            _ => links[o].enqueue(pool.copy(f), at, cpu),
                        }
                    }
                }
            });
            match got {
                // Readable with nothing in the ring: a socket error (the interface went
                // down, say). Reading it clears it, so poll stops reporting it.
                Ok(0) if self.readable[i] => {
                    if let Ok(Some(e)) = me.take_error() {
                        io_error(&mut self.io[i], &self.names[i], &e, &mut self.aux);
                    }
                }
                Ok(got) => handled += got as u64,
                Err(e) => io_error(&mut self.io[i], &self.names[i], &e, &mut self.aux),
            }
            self.readable[i] = false;
            handled += sent;
        }
        self.last_arrival_ns = last_arrival_ns;
        for o in 0..n {
            while let Some(f) = self.links[o].dequeue(now) {
                if self.pending[o].len() >= MAX_PENDING {
                    self.io[o].tx_backlog_drops += 1;
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
                        handled += 1;
                    }
                    Ok(false) => {
                        self.io[o].tx_ring_full += 1;
                        break;
                    }
                    Err(e) => {
                        io_error(&mut self.io[o], &self.names[o], &e, &mut self.aux);
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
                    io_error(&mut self.io[o], &self.names[o], &e, &mut self.aux);
                }
            }
        }
        handled
    }

    /// Whether any RX ring holds a frame (no syscall).
    pub(super) fn rx_pending(&self) -> bool {
        self.socks.iter().any(PacketSocket::rx_pending)
    }

    /// The next link event, and whether frames wait for a full TX ring.
    pub(super) fn wake_at(&self) -> (Option<u64>, bool) {
        let next = self
            .links
            .iter()
            .filter_map(|l| l.poll_timeout().map(|t| t.as_nanos()))
            .min();
        (next, self.pending.iter().any(|p| !p.is_empty()))
    }

    /// Sleep in ppoll for at most `timeout_ns`, until a frame arrives; whether one did.
    pub(super) fn sleep(&mut self, timeout_ns: u64) -> std::io::Result<bool> {
        self.looped.stats.sleeps += 1;
        self.readable = netio::poll::poll_readable(&self.fds, Some(timeout_ns))?;
        Ok(self.readable.iter().any(|&r| r))
    }

    /// Record a turn that took `took_ns`, of which `frames_ns` went to the frames.
    pub(super) fn record_turn(&mut self, took_ns: u64, busy: bool, frames_ns: u64, handled: u64) {
        if busy {
            self.looped.turn(took_ns);
        } else {
            self.looped.stats.idle_turns += 1;
        }
        if handled > 0 {
            self.cpu.busy_ns += frames_ns;
        }
    }

    /// Record a yield that took `ns` (other tasks ran for most of it, if any could).
    pub(super) fn record_yield(&mut self, ns: u64) {
        self.looped.stats.yields += 1;
        self.looped.stats.yield_ns += ns;
    }

    /// Record the gap between the starts of two turns with no sleep between.
    pub(super) fn record_gap(&mut self, ns: u64) {
        self.looped.gap(ns);
    }

    /// The kernel's RX ring drops since the last call, added to the running totals.
    pub(super) fn read_kernel_drops(&mut self) {
        for (i, sock) in self.socks.iter().enumerate() {
            // The kernel's counters reset on every read: keep running totals.
            if let Ok(k) = sock.stats() {
                self.io[i].kernel_rx_drops += k.drops;
            }
        }
    }

    fn rx_frames(&self) -> u64 {
        self.fwd.stats().iter().map(|s| s.rx_frames).sum()
    }

    fn cpu_stats(&self) -> CpuStats {
        let base = &self.cpu;
        let frames = self.rx_frames().saturating_sub(base.frames);
        CpuStats {
            busy_ns: base.busy_ns,
            thread_cpu_ns: netio::clock::thread_cpu_ns().saturating_sub(base.thread_cpu_ns),
            frames,
            cpu_ns_per_frame: (frames > 0).then(|| base.busy_ns as f64 / frames as f64),
            qos_ns: base.qos_ns,
            qos_frames: base.qos_frames,
            qos_ns_per_frame: (base.qos_frames > 0)
                .then(|| base.qos_ns as f64 / base.qos_frames as f64),
        }
    }

    /// The counters: per interface what arrived (the forwarder's view) and what left
    /// (the egress link's view), the kernel's ring drops, the loop's own record and
    /// the writer's.
    pub(super) fn stats(&mut self, qos: &router::stats::QosReloads, uptime_ns: u64) -> RouterStats {
        self.looped.update();
        let interfaces = self
            .fwd
            .interfaces()
            .iter()
            .zip(self.fwd.stats())
            .zip(&self.links)
            .zip(&self.socks)
            .zip(&self.io)
            .map(|((((f, rx), egress), sock), io)| {
                let link = egress.link();
                InterfaceStats {
                    name: f.name.clone(),
                    mac: f.mac.to_string(),
                    ingress: rx.clone(),
                    egress: link.stats(),
                    egress_link: link.params().clone(),
                    qos: egress.qos_stats(),
                    io: io.clone(),
                    tx_wrong_format: sock.tx_wrong_format(),
                }
            })
            .collect();
        RouterStats {
            format_version: router::stats::FORMAT_VERSION,
            uptime_ns,
            usr1_answered: self.usr1_answered,
            qos: qos.clone(),
            cpu: self.cpu_stats(),
            looped: self.looped.stats.clone(),
            writer: self.aux.writer_stats(),
            interfaces,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::arrival_ns;

    /// Frames that waited in the ring are offered at the times they arrived, in order,
    /// never after the turn and never back before a frame offered already.
    #[test]
    fn a_frame_is_offered_when_it_arrived_not_when_the_router_got_to_it() {
        // A turn at mono 1,000 ms, wall 5,000 ms, 90 ms behind its ring.
        let (now, wall) = (1_000_000_000, 5_000_000_000);
        let mut last = 900_000_000;
        let mut offered = Vec::new();
        for stamp in [4_910_000_000, 4_911_600_000, 4_913_200_000, 4_999_000_000] {
            last = arrival_ns(stamp, wall, now, last);
            offered.push(last);
        }
        assert_eq!(
            offered,
            [910_000_000, 911_600_000, 913_200_000, 999_000_000]
        );
        // One from another ring that arrived before the last offered: not before it.
        assert_eq!(arrival_ns(4_950_000_000, wall, now, last), 999_000_000);
        // Stamped after the turn's wall time (a clock step), or not stamped: the turn.
        assert_eq!(arrival_ns(5_000_000_007, wall, now, 0), now);
        assert_eq!(arrival_ns(0, wall, now, 0), now);
        // Older than the monotonic clock itself: from the last one offered.
        assert_eq!(arrival_ns(1, wall, now, 7), 7);
    }
}
