//! What the router's forwarding loop keeps besides its rings: the forwarder, each
//! interface's egress, and the counters its stats document ([`RouterStats`]) is made
//! of, with the decisions about them that need no socket: when a frame arrived, what a
//! turn, gap or yield of the loop counts, the cost per frame, what a reload of the QoS
//! file changes, and when the loop must wake.
//!
//! Nothing here reads a clock: the driver passes the monotonic time (`now_ns`), and
//! what it read of the forwarding thread ([`ThreadTimes`]) when the counters start and
//! when a snapshot is taken.

use qos::hist::Histogram;
use wire::time::Instant;

use crate::egress::Egress;
use crate::forward::{Forwarder, Output};
use crate::rsvp::{RsvpRouter, RsvpSetup};
use crate::stats::{
    CpuStats, InterfaceStats, IoStats, LoopStats, QosReloads, RouterStats, WriterStats,
    FORMAT_VERSION,
};

/// A turn or a gap between turns longer than this is a stall (counted).
pub const STALL_NS: u64 = 1_000_000;
/// The longest the loop sleeps with nothing due: it wakes to see a stop and refresh the
/// counters.
pub const IDLE_WAKE_NS: u64 = 100_000_000;
/// While frames wait for room in a TX ring, the loop looks again this soon.
pub const BACKLOG_RETRY_NS: u64 = 200_000;

/// The scheduler's counters of the forwarding thread (`/proc/thread-self`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SchedCounters {
    /// Times another task took its CPU while it could run
    /// (`nonvoluntary_ctxt_switches`).
    pub involuntary_switches: u64,
    /// How long it waited for a CPU in all, ns (`schedstat`).
    pub wait_ns: u64,
}

/// What the driver read of the forwarding thread at one moment.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ThreadTimes {
    /// Its CPU time (`CLOCK_THREAD_CPUTIME_ID`), ns.
    pub cpu_ns: u64,
    /// Its scheduler's counters; `None` where the kernel does not tell.
    pub sched: Option<SchedCounters>,
}

/// When a frame the kernel stamped `stamp_ns` (wall clock) arrived, on the monotonic clock
/// of a turn at `now_ns` (whose wall time is `wall_now_ns`): the time its egress link or
/// policy is offered it. A router that falls behind its RX rings (on a busy host) so
/// still queues what arrived over 90 ms as spread over those 90 ms, as the traffic was,
/// not as one burst at the turn that overflows a queue the traffic never filled. Never
/// before `last_ns`, the frame offered before (in ring order, so the links' clocks do not
/// go back), nor after `now_ns`; `now_ns` for a frame without a stamp.
pub fn arrival_ns(stamp_ns: u64, wall_now_ns: u64, now_ns: u64, last_ns: u64) -> u64 {
    let at = if stamp_ns == 0 {
        now_ns
    } else {
        now_ns.saturating_sub(wall_now_ns.saturating_sub(stamp_ns))
    };
    at.max(last_ns).min(now_ns)
}

/// The arrival times of the frames offered to the egresses, in order ([`arrival_ns`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Arrivals {
    /// When the last frame offered arrived (monotonic ns).
    last_ns: u64,
}

impl Arrivals {
    /// When the frame stamped `stamp_ns` arrived, in a turn at `now_ns` (wall time
    /// `wall_now_ns`); it becomes the last offered.
    pub fn at(&mut self, stamp_ns: u64, wall_now_ns: u64, now_ns: u64) -> Instant {
        self.last_ns = arrival_ns(stamp_ns, wall_now_ns, now_ns, self.last_ns);
        Instant::from_nanos(self.last_ns)
    }
}

/// How the loop itself ran ([`LoopStats`], the record that shows a stall), with what
/// its percentiles and scheduler counters are made from.
#[derive(Debug, Default)]
pub struct LoopRecord {
    /// What the stats file shows as `loop`.
    pub stats: LoopStats,
    /// Busy turn durations, ns.
    turn_hist: Histogram,
    /// The scheduler's counters when the record started.
    sched_base: Option<SchedCounters>,
}

impl LoopRecord {
    /// A fresh record; the scheduler's counters (`sched`, as of now) count from here on.
    pub fn start(sched: Option<SchedCounters>) -> Self {
        Self {
            sched_base: sched,
            ..Self::default()
        }
    }

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

    /// Update the percentiles and the scheduler's counters from `sched`, read on the
    /// forwarding thread now: times another task took the forwarding thread's CPU
    /// while it could run, and how long it waited for a CPU in all, ns, since the record
    /// started. A long turn or gap with these rising is the scheduler's doing, not the
    /// loop's (pin the router with `--cpu` on a CPU nothing else uses).
    pub fn update(&mut self, sched: Option<SchedCounters>) {
        self.stats.turn_ns = self.turn_hist.summary();
        if let (Some(base), Some(now)) = (self.sched_base, sched) {
            self.stats.involuntary_switches = Some(
                now.involuntary_switches
                    .saturating_sub(base.involuntary_switches),
            );
            self.stats.runqueue_wait_ns = Some(now.wait_ns.saturating_sub(base.wait_ns));
        }
    }
}

/// The router's cost per frame ([`CpuStats`]), counted from a start: the router's,
/// then each reload's.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CpuAccount {
    /// The thread's CPU time at the start, ns.
    thread_cpu_ns: u64,
    /// Frames received before the start.
    frames: u64,
    busy_ns: u64,
    qos_ns: u64,
    qos_frames: u64,
    /// RSVP is on: its cost per frame is reported (0 before any message).
    rsvp_on: bool,
    rsvp_ns: u64,
    rsvp_messages: u64,
}

impl CpuAccount {
    /// Accounting from a moment when the thread's CPU time was `thread_cpu_ns` and
    /// `frames` had been received.
    pub fn from_here(thread_cpu_ns: u64, frames: u64) -> Self {
        Self {
            thread_cpu_ns,
            frames,
            ..Self::default()
        }
    }

    /// A service policy took `ns` to enqueue a frame (classify, mark, police, queue).
    pub fn policy_enqueue(&mut self, ns: u64) {
        self.qos_ns += ns;
        self.qos_frames += 1;
    }

    /// Whether RSVP is on (its cost per frame is reported).
    pub fn set_rsvp(&mut self, on: bool) {
        self.rsvp_on = on;
    }

    /// RSVP took `ns` for `messages` messages received (0: its timers).
    pub fn rsvp(&mut self, ns: u64, messages: u64) {
        self.rsvp_ns += ns;
        self.rsvp_messages += messages;
    }

    /// The cost per frame, `frames` having been received in all and the thread's CPU
    /// time being `thread_cpu_ns`.
    pub fn stats(&self, frames: u64, thread_cpu_ns: u64) -> CpuStats {
        let frames = frames.saturating_sub(self.frames);
        let per = |ns: u64, n: u64| (n > 0).then(|| ns as f64 / n as f64);
        CpuStats {
            busy_ns: self.busy_ns,
            thread_cpu_ns: thread_cpu_ns.saturating_sub(self.thread_cpu_ns),
            frames,
            cpu_ns_per_frame: (frames > 0).then(|| self.busy_ns as f64 / frames as f64),
            qos_ns: self.qos_ns,
            qos_frames: self.qos_frames,
            qos_ns_per_frame: (self.qos_frames > 0)
                .then(|| self.qos_ns as f64 / self.qos_frames as f64),
            rsvp_ns: self.rsvp_ns,
            rsvp_messages: self.rsvp_messages,
            rsvp_ns_per_message: per(self.rsvp_ns, self.rsvp_messages),
            rsvp_ns_per_frame: per(self.rsvp_ns, frames).filter(|_| self.rsvp_on),
        }
    }
}

/// The forwarder, each interface's egress (in interface order) and the counters.
pub struct RouterState {
    /// The forwarding decisions.
    pub fwd: Forwarder,
    /// What sends on each interface.
    pub egress: Vec<Egress>,
    /// What the driver counts per interface beyond the forwarder and the link.
    pub io: Vec<IoStats>,
    /// The cost per frame.
    pub cpu: CpuAccount,
    /// How the loop ran.
    pub looped: LoopRecord,
    /// When the frames offered to the egresses arrived.
    pub arrivals: Arrivals,
    /// Snapshots taken because SIGUSR1 asked (in the stats: a caller waits for it to
    /// grow, so it knows the file it reads was taken after its signal).
    pub usr1_answered: u64,
    /// What became of the QoS file's reloads.
    pub qos: QosReloads,
    /// RSVP, when the QoS file has `[rsvp]` ([`RouterState::set_rsvp`]).
    pub rsvp: Option<RsvpRouter>,
    /// The seed of RSVP's refresh jitter.
    rsvp_seed: u64,
}

impl RouterState {
    /// The state of a router starting with `fwd` and `egress` (one per interface), the
    /// forwarding thread being as `thread` says.
    pub fn new(fwd: Forwarder, egress: Vec<Egress>, thread: ThreadTimes) -> Self {
        let n = egress.len();
        Self {
            fwd,
            egress,
            io: vec![IoStats::default(); n],
            cpu: CpuAccount::from_here(thread.cpu_ns, 0),
            looped: LoopRecord::start(thread.sched),
            arrivals: Arrivals::default(),
            usr1_answered: 0,
            qos: QosReloads::default(),
            rsvp: None,
            rsvp_seed: 0,
        }
    }

    /// Take part in RSVP as `setup` says (`None`: not at all, RSVP is forwarded as any
    /// packet), with refresh jitter from `seed`: the forwarder hands RSVP messages over
    /// when on. A router already taking part keeps its state.
    pub fn set_rsvp(&mut self, setup: Option<&RsvpSetup>, seed: u64) {
        self.rsvp_seed = seed;
        match setup {
            None => self.rsvp = None,
            Some(s) if self.rsvp.is_none() => self.rsvp = Some(RsvpRouter::new(s, seed)),
            Some(_) => {}
        }
        self.fwd.set_rsvp(self.rsvp.is_some());
        self.cpu.set_rsvp(self.rsvp.is_some());
    }

    /// The RSVP message in `packet` (an IP packet received on `iface`, as
    /// [`crate::forward::Action::Signal`] gives it) at `now`; the frames to send in
    /// answer are pushed onto `out`. Nothing without RSVP.
    pub fn signal(&mut self, now: Instant, iface: usize, packet: &[u8], out: &mut Vec<Output>) {
        if let Some(r) = &mut self.rsvp {
            r.handle_signal(now, iface, packet, &self.fwd, &mut self.egress, out);
        }
    }

    /// RSVP's timers due at `now` (refreshes, lifetimes; the messages a reload's
    /// reinstall left): whether there was any; the frames to send are pushed onto `out`.
    pub fn rsvp_timeout(&mut self, now: Instant, out: &mut Vec<Output>) -> bool {
        match &mut self.rsvp {
            Some(r) if r.due(now) => {
                r.handle_timeout(now, &self.fwd, &mut self.egress, out);
                true
            }
            _ => false,
        }
    }

    /// Frames received on every interface.
    pub fn rx_frames(&self) -> u64 {
        self.fwd.stats().iter().map(|s| s.rx_frames).sum()
    }

    /// Start the CPU accounting and the loop's record afresh (after a reload, which a
    /// plan sends before each run), the forwarding thread being as `thread` says.
    pub fn restart_counters(&mut self, thread: ThreadTimes) {
        self.looped = LoopRecord::start(thread.sched);
        self.cpu = CpuAccount::from_here(thread.cpu_ns, self.rx_frames());
        self.cpu.set_rsvp(self.rsvp.is_some());
    }

    /// A reload of the QoS file at `now` built `egress` and `rsvp`: it replaces every
    /// egress (frames still queued are discarded; the caller restarts the counters after
    /// this turn). RSVP keeps its soft state and installs every admitted reservation
    /// again into the new policies, against the new budgets (refused ones get ResvErr,
    /// sent at the next [`RouterState::rsvp_timeout`]); a file without `[rsvp]` ends
    /// RSVP and everything it held; one that adds it starts RSVP.
    pub fn reloaded(&mut self, egress: Vec<Egress>, rsvp: Option<&RsvpSetup>, now: Instant) {
        self.egress = egress;
        self.qos.reloads += 1;
        self.qos.error = None;
        let kept = self.rsvp.is_some();
        self.set_rsvp(rsvp, self.rsvp_seed);
        if let (true, Some(r), Some(setup)) = (kept, &mut self.rsvp, rsvp) {
            r.reloaded(setup, &self.fwd, &mut self.egress, now);
        }
    }

    /// A reload of the QoS file was refused (`why`: it did not read, or
    /// [`Egress::build`] refused it): the running egresses stay, and the stats say why
    /// until a reload takes effect.
    pub fn refused(&mut self, why: String) {
        self.qos.error = Some(why);
        self.qos.refused += 1;
    }

    /// Each interface with a service policy, and the policy's name, in interface order.
    pub fn service_policies(&self) -> Vec<(&str, &str)> {
        self.fwd
            .interfaces()
            .iter()
            .zip(&self.egress)
            .filter_map(|(f, e)| Some((f.name.as_str(), e.policy_name()?)))
            .collect()
    }

    /// Record a turn that took `took_ns`, of which `frames_ns` went to the frames; a
    /// turn that was not `busy` (no frame, no counters) is counted apart.
    pub fn record_turn(&mut self, took_ns: u64, busy: bool, frames_ns: u64, handled: u64) {
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
    pub fn record_yield(&mut self, ns: u64) {
        self.looped.stats.yields += 1;
        self.looped.stats.yield_ns += ns;
    }

    /// Record the gap between the starts of two turns with no sleep between.
    pub fn record_gap(&mut self, ns: u64) {
        self.looped.gap(ns);
    }

    /// Record a sleep (in ppoll).
    pub fn record_sleep(&mut self) {
        self.looped.stats.sleeps += 1;
    }

    /// When a loop at `now_ns` must wake at the latest (monotonic ns): at the next
    /// egress event or RSVP timer, within [`BACKLOG_RETRY_NS`] while frames wait for room in a TX
    /// ring (`backlog`), else within [`IDLE_WAKE_NS`]. At or before `now_ns`: go on.
    pub fn wake_ns(&self, now_ns: u64, backlog: bool) -> u64 {
        let mut wake = now_ns + IDLE_WAKE_NS;
        if let Some(t) = self
            .egress
            .iter()
            .filter_map(|l| l.poll_timeout().map(|t| t.as_nanos()))
            .min()
        {
            wake = wake.min(t);
        }
        if let Some(t) = self.rsvp.as_ref().and_then(RsvpRouter::poll_timeout) {
            wake = wake.min(t.as_nanos());
        }
        if backlog {
            wake = wake.min(now_ns + BACKLOG_RETRY_NS);
        }
        wake
    }

    /// The counters, `uptime_ns` after the start, the forwarding thread being as
    /// `thread` says: per interface what arrived (the forwarder's view) and what left
    /// (the egress link's view) with the driver's counts and the kernel's
    /// `tx_wrong_format` drops, the cost per frame, the loop's own record and the
    /// writer thread's.
    pub fn stats(
        &mut self,
        uptime_ns: u64,
        thread: ThreadTimes,
        writer: WriterStats,
        tx_wrong_format: &[u64],
    ) -> RouterStats {
        self.looped.update(thread.sched);
        let interfaces = self
            .fwd
            .interfaces()
            .iter()
            .zip(self.fwd.stats())
            .zip(&self.egress)
            .zip(tx_wrong_format)
            .zip(&self.io)
            .map(|((((f, rx), egress), &tx_wrong_format), io)| {
                let link = egress.link();
                InterfaceStats {
                    name: f.name.clone(),
                    mac: f.mac.to_string(),
                    ingress: rx.clone(),
                    egress: link.stats(),
                    egress_link: link.params().clone(),
                    qos: egress.qos_stats(),
                    io: io.clone(),
                    tx_wrong_format,
                }
            })
            .collect();
        RouterStats {
            format_version: FORMAT_VERSION,
            uptime_ns,
            usr1_answered: self.usr1_answered,
            qos: self.qos.clone(),
            cpu: self.cpu.stats(self.rx_frames(), thread.cpu_ns),
            looped: self.looped.stats.clone(),
            writer,
            interfaces,
            rsvp: self.rsvp.as_ref().map(|r| {
                let names: Vec<String> = self
                    .fwd
                    .interfaces()
                    .iter()
                    .map(|f| f.name.clone())
                    .collect();
                r.stats(&names)
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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

    #[test]
    fn arrivals_keep_the_last_one_offered_across_turns() {
        let mut a = Arrivals::default();
        let (now, wall) = (1_000_000_000, 5_000_000_000);
        assert_eq!(
            a.at(4_950_000_000, wall, now),
            Instant::from_nanos(950_000_000)
        );
        // The next turn, 1 ms later, with a frame from another ring stamped earlier.
        let t = a.at(4_900_000_000, wall + 1_000_000, now + 1_000_000);
        assert_eq!(t, Instant::from_nanos(950_000_000));
        assert_eq!(
            a.at(0, wall, now + 2_000_000),
            Instant::from_nanos(1_002_000_000)
        );
    }

    #[test]
    fn the_cost_per_frame_counts_from_its_start() {
        let mut c = CpuAccount::from_here(5_000, 10);
        let s = c.stats(10, 6_000);
        assert_eq!((s.frames, s.thread_cpu_ns), (0, 1_000));
        assert_eq!((s.cpu_ns_per_frame, s.qos_ns_per_frame), (None, None));
        c.busy_ns = 900;
        c.policy_enqueue(100);
        c.policy_enqueue(300);
        let s = c.stats(13, 9_000);
        assert_eq!(
            s,
            CpuStats {
                busy_ns: 900,
                thread_cpu_ns: 4_000,
                frames: 3,
                cpu_ns_per_frame: Some(300.0),
                qos_ns: 400,
                qos_frames: 2,
                qos_ns_per_frame: Some(200.0),
                ..CpuStats::default()
            }
        );
        // A thread clock or a frame count behind the start (not expected): zero.
        assert_eq!(c.stats(0, 0).frames, 0);
        assert_eq!(c.stats(0, 0).thread_cpu_ns, 0);
    }

    #[test]
    fn rsvp_costs_per_message_and_per_frame_received_only_with_rsvp_on() {
        let mut c = CpuAccount::from_here(0, 10);
        c.rsvp(500, 1);
        let s = c.stats(14, 0);
        let rsvp = |s: &CpuStats| {
            (
                s.rsvp_ns,
                s.rsvp_messages,
                s.rsvp_ns_per_message,
                s.rsvp_ns_per_frame,
            )
        };
        assert_eq!(rsvp(&s), (500, 1, Some(500.0), None));
        c.set_rsvp(true);
        // A turn's timers (no message), then a message.
        c.rsvp(1_500, 0);
        c.rsvp(1_000, 1);
        assert_eq!(
            rsvp(&c.stats(14, 0)),
            (3_000, 2, Some(1_500.0), Some(750.0))
        );
        assert_eq!(rsvp(&c.stats(10, 0)).3, None);
        // Without RSVP the document has none of them, as before RSVP existed.
        let v = serde_json::to_value(CpuAccount::from_here(0, 0).stats(4, 0)).unwrap();
        let keys: Vec<&String> = v.as_object().unwrap().keys().collect();
        assert!(!keys.iter().any(|k| k.starts_with("rsvp")), "{keys:?}");
        let on = serde_json::to_value(c.stats(14, 0)).unwrap();
        assert_eq!(on["rsvp_ns_per_frame"], 750.0);
    }

    #[test]
    fn turns_and_gaps_over_a_millisecond_are_stalls_and_the_scheduler_counts_from_the_start() {
        let base = SchedCounters {
            involuntary_switches: 7,
            wait_ns: 1_000,
        };
        let mut r = LoopRecord::start(Some(base));
        for took in [1_000, STALL_NS, STALL_NS + 1, 40_000] {
            r.turn(took);
        }
        r.gap(STALL_NS);
        r.gap(3 * STALL_NS);
        r.update(Some(SchedCounters {
            involuntary_switches: 10,
            wait_ns: 51_000,
        }));
        let s = &r.stats;
        assert_eq!(
            (s.busy_turns, s.max_turn_ns, s.turns_over_1ms),
            (4, STALL_NS + 1, 1)
        );
        assert_eq!((s.max_gap_ns, s.gaps_over_1ms), (3 * STALL_NS, 1));
        assert_eq!(
            (s.involuntary_switches, s.runqueue_wait_ns),
            (Some(3), Some(50_000))
        );
        assert!(s.turn_ns.p99_ns.is_some());
        // Without the scheduler's counters at the start or now: null, not 0.
        let mut r = LoopRecord::start(None);
        r.update(Some(base));
        assert_eq!(
            (r.stats.involuntary_switches, r.stats.runqueue_wait_ns),
            (None, None)
        );
        let mut r = LoopRecord::start(Some(base));
        r.update(None);
        assert_eq!(r.stats.involuntary_switches, None);
    }

    fn state(qos: Option<&str>) -> RouterState {
        let cfg = crate::egress::tests::config(0, 500);
        let ifaces = (0..2)
            .map(|i| {
                let mac = wire::ethernet::Address([2, 0x64, 0x70, 0, 0, i as u8]);
                cfg.interface(i, mac, None).unwrap()
            })
            .collect();
        let fwd = Forwarder::new(ifaces, cfg.routes.clone(), cfg.neighbors.clone()).unwrap();
        let file = qos.map(|text| crate::egress::QosFile {
            name: "r1.qos.toml",
            text,
        });
        let egress = Egress::build(&cfg, file, Instant::from_nanos(0)).unwrap();
        let thread = ThreadTimes {
            cpu_ns: 1_000,
            sched: None,
        };
        RouterState::new(fwd, egress, thread)
    }

    #[test]
    fn a_reload_replaces_every_egress_and_a_refused_one_says_why_until_one_takes() {
        let mut s = state(None);
        assert_eq!(s.service_policies(), []);
        let text = crate::egress::tests::qos("to-r2");
        let policy = state(Some(&text)).egress;
        s.reloaded(policy, None, Instant::ZERO);
        assert_eq!(s.service_policies(), [("to-r2", "fifo")]);
        assert_eq!((s.qos.reloads, s.qos.refused, &s.qos.error), (1, 0, &None));
        let why = crate::egress::EgressError::NoSuchInterface {
            file: "r1.qos.toml".into(),
            line: 10,
            iface: "to-r9".into(),
            names: "to-sender, to-r2".into(),
        };
        s.refused(why.to_string());
        assert_eq!(s.service_policies(), [("to-r2", "fifo")]);
        assert_eq!((s.qos.reloads, s.qos.refused), (1, 1));
        assert_eq!(s.qos.error.as_deref(), Some(why.to_string().as_str()));
        s.reloaded(state(None).egress, None, Instant::ZERO);
        assert_eq!(s.service_policies(), []);
        assert_eq!((s.qos.reloads, s.qos.refused, &s.qos.error), (2, 1, &None));
    }

    #[test]
    fn the_loop_wakes_at_the_next_egress_event_else_within_100_ms_or_200_us_with_a_backlog() {
        let mut s = state(None);
        let now = 10_000_000;
        assert_eq!(s.wake_ns(now, false), 110_000_000);
        assert_eq!(s.wake_ns(now, true), 10_200_000);
        // A frame on to-r2 leaves after its link's 2 ms.
        s.egress[1].enqueue(vec![0; 100], Instant::from_nanos(now));
        assert_eq!(s.wake_ns(now, false), 12_000_000);
        assert_eq!(s.wake_ns(now, true), 10_200_000);
        // Already due: at once.
        assert_eq!(s.wake_ns(13_000_000, false), 12_000_000);
    }

    #[test]
    fn the_stats_document_holds_each_interface_and_the_counters_since_the_restart() {
        let mut s = state(None);
        let mut frame = [0u8; 60];
        for _ in 0..4 {
            let _ = s.fwd.handle_frame_in_place(1, &mut frame);
        }
        s.record_turn(3_000, true, 2_000, 4);
        s.record_turn(500, false, 0, 0);
        s.record_gap(4_000);
        s.record_yield(700);
        s.record_sleep();
        s.usr1_answered = 2;
        s.io[1].tx_ring_full = 5;
        let thread = ThreadTimes {
            cpu_ns: 9_000,
            sched: None,
        };
        let writer = WriterStats {
            stats_writes: 3,
            ..WriterStats::default()
        };
        let doc = s.stats(1_500_000_000, thread, writer.clone(), &[0, 6]);
        assert_eq!(
            (doc.format_version, doc.uptime_ns, doc.usr1_answered),
            (1, 1_500_000_000, 2)
        );
        assert_eq!(doc.writer, writer);
        assert_eq!(
            (doc.cpu.frames, doc.cpu.busy_ns, doc.cpu.thread_cpu_ns),
            (4, 2_000, 8_000)
        );
        assert_eq!(doc.cpu.cpu_ns_per_frame, Some(500.0));
        let l = &doc.looped;
        assert_eq!(
            (l.busy_turns, l.idle_turns, l.sleeps, l.yields, l.yield_ns),
            (1, 1, 1, 1, 700)
        );
        assert_eq!((l.max_turn_ns, l.max_gap_ns), (3_000, 4_000));
        let names: Vec<&str> = doc.interfaces.iter().map(|i| i.name.as_str()).collect();
        assert_eq!(names, ["to-sender", "to-r2"]);
        let r2 = &doc.interfaces[1];
        assert_eq!(r2.mac, "02:64:70:00:00:01");
        assert_eq!((r2.ingress.rx_frames, r2.ingress.rx_bytes), (4, 240));
        assert_eq!((r2.io.tx_ring_full, r2.tx_wrong_format), (5, 6));
        assert_eq!(
            r2.egress_link.delay,
            wire::time::Duration::from_nanos(2_000_000)
        );
        assert_eq!(r2.qos, None);
        // After a restart (a reload's), the cost and the loop count afresh; the frames
        // received before are not this run's.
        s.restart_counters(thread);
        let doc = s.stats(1_600_000_000, thread, writer, &[0, 6]);
        assert_eq!(
            (doc.cpu.frames, doc.cpu.busy_ns, doc.cpu.thread_cpu_ns),
            (0, 0, 0)
        );
        assert_eq!((doc.looped.busy_turns, doc.looped.sleeps), (0, 0));
        assert_eq!(doc.interfaces[1].ingress.rx_frames, 4);
    }
}
