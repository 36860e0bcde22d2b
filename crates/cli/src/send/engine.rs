//! A sender thread: every flow given to it on one [`Scheduler`], sent from one loop.
//!
//! The loop asks the scheduler when the earliest packet of any flow is due, waits (a
//! `ppoll` on the sockets that bring echoes or wait to be writable, or a plain sleep),
//! spins for the last stretch, then takes every packet due with one clock reading and
//! stages it on its flow's out: UDP flows that mark alike share one socket, so packets
//! of many flows leave in one `sendmmsg`; a TCP flow writes its messages to its own
//! non-blocking connection and, when the window is full, is parked until the socket is
//! writable. Echoes of round-trip flows are read in the same loop. Every packet keeps
//! its scheduled and actual send time.

use std::collections::HashMap;
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{mpsc, Arc};

use meter::log::Entry;
use netio::poll::{Interest, Ready};
use traffic::{FlowSpec, Schedule, Scheduler};
use wire::time::{Duration, Instant};

use super::flow::{echo_record, echo_repr, Conn, EchoMeta, FlowState, Out, UdpOut};
use crate::logsink::{Chunk, LogProducer};
use results::send::SenderFlow;

/// Longest single wait, so a stop request is seen promptly even at 0.1 pkt/s.
const MAX_SLEEP_NS: u64 = 100_000_000;
/// The most and least spin before a deadline by default (see [`default_spin_ns`]).
const MAX_SPIN_NS: u64 = 50_000;
const MIN_SPIN_NS: u64 = 15_000;
/// Most packets staged in one round of the loop (four full batches).
const ROUND: usize = 4 * super::flow::BATCH;
/// How long a send that the kernel takes nothing of is retried.
const STUCK_NS: u64 = 1_000_000_000;
/// Echoes read per call.
const ECHO_BATCH: usize = 64;

/// How an engine waits for its deadlines.
#[derive(Clone, Copy, Debug)]
pub(super) struct Pacing {
    /// Busy-wait this long before a deadline (`None`: from the engine's packet rate).
    pub(super) spin: Option<Duration>,
    /// Wake once for all packets due within this window.
    pub(super) batch_window: Duration,
}

/// What every engine of a session shares.
pub(super) struct EngineRun {
    pub(super) pacing: Pacing,
    /// Set when the user interrupts or the receiver goes away.
    pub(super) halt: Arc<AtomicBool>,
    /// Packets and payload bytes handed to the kernel so far, all flows together.
    pub(super) progress: Arc<AtomicU64>,
    pub(super) progress_bytes: Arc<AtomicU64>,
    /// The sender's log, if asked for: send records and echoes stream to it.
    pub(super) log: Option<LogProducer>,
}

/// How an engine learns when its flows start: it says it is ready once they are set up,
/// then is given the origin every engine shares. Setting 10,000 flows up takes
/// milliseconds, which would otherwise make their first packets late.
pub(super) struct StartGate {
    pub(super) ready: mpsc::Sender<()>,
    pub(super) origin: mpsc::Receiver<Instant>,
}

/// One flow given to an engine.
pub(super) struct FlowPlan {
    pub(super) id: u16,
    pub(super) spec: FlowSpec,
    pub(super) conn: Conn,
}

/// The spin before each deadline when none is given: 50 µs, or a quarter of the mean gap
/// between the engine's packets if that is shorter, but at least 15 µs (about a wake-up's
/// latency: a shorter spin wakes late, and at that rate the thread hardly sleeps).
fn default_spin_ns(flows: &[FlowPlan]) -> u64 {
    let pps: f64 = flows
        .iter()
        .filter(|f| !f.spec.unpaced)
        .filter_map(|f| f.spec.mean_pps())
        .sum();
    if pps <= 0.0 {
        return MAX_SPIN_NS;
    }
    ((1e9 / pps / 4.0) as u64).clamp(MIN_SPIN_NS, MAX_SPIN_NS)
}

/// Set `plans` up, wait at `gate` for the origin, run them to their ends (or a halt),
/// then collect the last echoes; one result per plan, in order.
pub(super) fn run_engine(
    run: &EngineRun,
    plans: Vec<FlowPlan>,
    gate: StartGate,
) -> Vec<SenderFlow> {
    // Timer slack (50 µs by default) would make every sleep overshoot by that much.
    let _ = netio::clock::set_timer_slack_ns(1);
    let spin_ns = run
        .pacing
        .spin
        .map_or_else(|| default_spin_ns(&plans), Duration::as_nanos);
    let mut engine = Engine {
        run,
        spin_ns,
        sched: Scheduler::new(),
        flows: Vec::with_capacity(plans.len()),
        udp: Vec::new(),
        by_id: HashMap::new(),
        chunk: run.log.as_ref().map(LogProducer::chunk),
        tcp_echo: Vec::new(),
        parked: Vec::new(),
        tcp_staged: Vec::new(),
        unreported: (0, 0),
        echo_bufs: Vec::new(),
        echo_metas: Vec::new(),
        read_buf: Vec::new(),
        too_big: Vec::new(),
    };
    // Each plan's result: the flow's index in the engine, or why it could not run.
    let slots: Vec<Result<usize, Box<SenderFlow>>> = plans
        .into_iter()
        .map(|plan| {
            let i = engine.flows.len();
            engine.add(plan).map(|()| i)
        })
        .collect();
    let _ = gate.ready.send(());
    // No origin: the session failed before the start, and nothing is sent.
    if let Ok(origin) = gate.origin.recv() {
        engine.start(origin);
        engine.run();
        engine.linger_for_echoes();
    }
    engine.submit_log(None);
    let mut results: Vec<Option<SenderFlow>> = engine
        .flows
        .into_iter()
        .zip(engine.too_big)
        .map(|(f, too_big)| {
            if let Out::Tcp(out) = &f.out {
                let _ = out.stream.shutdown(std::net::Shutdown::Write);
            }
            Some(SenderFlow {
                too_big: too_big.unwrap_or(0),
                ..f.into_result()
            })
        })
        .collect();
    slots
        .into_iter()
        .map(|slot| match slot {
            Ok(i) => results[i].take().unwrap_or_else(SenderFlow::empty),
            Err(failed) => *failed,
        })
        .collect()
}

struct Engine<'a> {
    run: &'a EngineRun,
    spin_ns: u64,
    sched: Scheduler,
    /// Indexed as the scheduler's flows.
    flows: Vec<FlowState>,
    /// The shared UDP sockets.
    udp: Vec<UdpOut>,
    /// Flow ids of this engine's round-trip flows, for echoes on shared sockets.
    by_id: HashMap<u16, usize>,
    chunk: Option<Chunk>,
    /// TCP flows that read echoes, and TCP flows parked on a full window: the sockets to
    /// wait on, kept as lists so no step of the loop walks every flow.
    tcp_echo: Vec<usize>,
    parked: Vec<usize>,
    /// TCP flows with messages staged in this round and not yet written.
    tcp_staged: Vec<usize>,
    /// Packets and bytes sent since the shared progress counters were last updated.
    unreported: (u64, u64),
    echo_bufs: Vec<Vec<u8>>,
    echo_metas: Vec<netio::RecvMeta>,
    read_buf: Vec<u8>,
    /// Indexed as `flows`: for a `--df` flow, the datagrams the kernel refused as larger
    /// than the route's MTU (`EMSGSIZE`), counted, not an error; `None` for other flows.
    too_big: Vec<Option<u64>>,
}

impl Engine<'_> {
    /// Take a flow on; a flow that cannot run is kept with its error (as `failed`).
    fn add(&mut self, plan: FlowPlan) -> Result<(), Box<SenderFlow>> {
        let FlowPlan { id, spec, conn } = plan;
        let rtt = spec.meter == wire::control::Meter::Rtt;
        let failed = |why: String| {
            Box::new(SenderFlow {
                error: Some(why),
                ..SenderFlow::empty()
            })
        };
        let sched = match Schedule::new(&spec, Instant::ZERO) {
            Ok(s) => s,
            Err(e) => return Err(failed(format!("invalid traffic model: {e}"))),
        };
        let out = match conn {
            Conn::Udp(sock) => {
                if spec.dont_fragment {
                    // Probes of one size each: no GSO run may exceed the route's MTU.
                    sock.disable_gso();
                    if let Err(e) = netio::pmtu::set_dont_fragment(&*sock) {
                        return Err(failed(format!("cannot set Don't Fragment (--df): {e}")));
                    }
                }
                let k = match self.udp.iter().position(|o| Arc::ptr_eq(&o.sock, &sock)) {
                    Some(k) => k,
                    None => {
                        self.udp.push(UdpOut::new(sock));
                        self.udp.len() - 1
                    }
                };
                self.udp[k].reserve(traffic::sender::max_payload(&spec));
                self.udp[k].echoes |= rtt;
                if rtt && self.echo_bufs.is_empty() {
                    self.echo_bufs = vec![vec![0u8; 65_536]; ECHO_BATCH];
                    self.echo_metas = vec![netio::RecvMeta::default(); ECHO_BATCH];
                }
                Out::Udp(k)
            }
            Conn::Tcp(stream) => match FlowState::tcp_out(&spec, stream) {
                Ok(out) => {
                    if rtt {
                        self.tcp_echo.push(self.flows.len());
                        if self.read_buf.is_empty() {
                            self.read_buf = vec![0u8; 256 * 1024];
                        }
                    }
                    out
                }
                Err(e) => return Err(failed(format!("cannot set up the connection: {e}"))),
            },
        };
        if rtt {
            self.by_id.insert(id, self.flows.len());
        }
        // Made at origin zero; `start` moves every flow to the session's origin.
        let i = self.sched.insert(sched);
        debug_assert_eq!(i, self.flows.len());
        self.flows.push(FlowState::new(id, &spec, out));
        self.too_big.push(spec.dont_fragment.then_some(0));
        Ok(())
    }

    /// Count every flow's deadlines from `origin`.
    fn start(&mut self, origin: Instant) {
        // An unpaced UDP flow's burst at one instant is one batch (a whole number of GSO
        // runs): bursts of 64 sent 1,400-byte datagrams as calls of 46 and 18, a third
        // more calls through the stack than whole runs of 46.
        for (i, flow) in self.flows.iter().enumerate() {
            if let Out::Udp(k) = flow.out {
                let batch = u32::try_from(self.udp[k].capacity()).unwrap_or(u32::MAX);
                self.sched.set_unpaced_burst(i, batch);
            }
        }
        self.sched.delay(origin - Instant::ZERO);
    }

    /// The pacing loop.
    fn run(&mut self) {
        loop {
            if self.run.halt.load(Ordering::Relaxed) {
                self.sched.handle_stop();
                return;
            }
            let now = Instant::from_nanos(netio::clock::mono_ns());
            self.expire_parked(now);
            // A flow's last packets may still wait for room when its schedule is done
            // (a count's last TCP message on a full window): they are sent, or expire
            // with the flow's time.
            if self.sched.is_finished() && self.parked.is_empty() {
                return;
            }
            // Only parked flows left: wait for their sockets (or their ends).
            let wake = self
                .sched
                .poll_timeout()
                .map(|t| t + self.run.pacing.batch_window)
                .or_else(|| self.parked_end());
            if !self.wait_until(wake.map(Instant::as_nanos)) {
                continue;
            }
            self.send_due(Instant::from_nanos(netio::clock::mono_ns()));
            self.submit_log(Some(netio::clock::mono_ns()));
            if !self.echo_bufs.is_empty() {
                self.read_udp_echoes();
            }
        }
    }

    /// Wait until `deadline_ns` (sleep, then spin the last `spin_ns`), reading echoes and
    /// unparking writable flows meanwhile; true at the deadline, false if woken first
    /// (a socket was ready, or a halt).
    fn wait_until(&mut self, deadline_ns: Option<u64>) -> bool {
        let mut fds = Vec::new();
        loop {
            let now = netio::clock::mono_ns();
            if deadline_ns.is_some_and(|d| now >= d) {
                return true;
            }
            if self.run.halt.load(Ordering::Relaxed) {
                return false;
            }
            let nap = deadline_ns
                .map_or(MAX_SLEEP_NS, |d| {
                    d.saturating_sub(self.spin_ns).saturating_sub(now)
                })
                .min(MAX_SLEEP_NS);
            if nap == 0 {
                // The last stretch: spin.
                if let Some(d) = deadline_ns {
                    let _ = netio::clock::sleep_until(d, d);
                }
                return true;
            }
            self.poll_set(&mut fds);
            if fds.is_empty() {
                let _ = netio::clock::sleep_until(now + nap, 0);
                continue;
            }
            let raw: Vec<_> = fds.iter().map(|(fd, i, _)| (*fd, *i)).collect();
            match netio::poll::poll_ready(&raw, Some(nap)) {
                Ok(ready) if ready.iter().any(|r| *r != Ready::default()) => {
                    self.handle_ready(&fds, &ready);
                    return false;
                }
                Ok(_) => {}
                Err(_) => {
                    netio::clock::sleep_until(now + nap, 0);
                }
            }
        }
    }

    /// The descriptors to wait on: sockets that bring echoes (read), parked TCP flows
    /// (write); with who they belong to.
    fn poll_set(&self, fds: &mut Vec<(i32, Interest, Waiter)>) {
        fds.clear();
        for o in &self.udp {
            if o.echoes {
                fds.push((o.sock.as_raw_fd(), Interest::Read, Waiter::Udp));
            }
        }
        let tcp = |i: usize| match &self.flows[i].out {
            Out::Tcp(out) => Some(out.stream.as_raw_fd()),
            Out::Udp(_) => None,
        };
        for &i in &self.tcp_echo {
            let interest = if self.sched.is_parked(i) {
                Interest::ReadWrite
            } else {
                Interest::Read
            };
            fds.extend(tcp(i).map(|fd| (fd, interest, Waiter::Tcp(i))));
        }
        for &i in &self.parked {
            if self.flows[i].echo.is_none() {
                fds.extend(tcp(i).map(|fd| (fd, Interest::Write, Waiter::Tcp(i))));
            }
        }
    }

    fn handle_ready(&mut self, fds: &[(i32, Interest, Waiter)], ready: &[Ready]) {
        let mut udp_ready = false;
        for ((_, _, who), r) in fds.iter().zip(ready) {
            match *who {
                Waiter::Udp => udp_ready |= r.readable,
                Waiter::Tcp(i) => {
                    if r.readable {
                        self.read_tcp_echoes(i);
                    }
                    if r.writable && self.sched.is_parked(i) {
                        self.flush_tcp(i);
                    }
                }
            }
        }
        if udp_ready {
            self.read_udp_echoes();
        }
    }

    /// Stage the packets due at `now`, earliest first, sending each out as it fills, then
    /// the rest; at most [`ROUND`] packets, so a sender that is behind reads the clock
    /// again between rounds (and ends on time, with its shortfall counted).
    fn send_due(&mut self, now: Instant) {
        let mut staged = 0;
        while staged < ROUND {
            let (flows, udp) = (&self.flows, &self.udp);
            let room = |i: usize| u32::try_from(flows[i].out.room(udp)).unwrap_or(u32::MAX);
            let Some((i, t, n)) = self.sched.poll_transmits(now, room) else {
                break;
            };
            staged += n as usize;
            let start = self.sched.schedule(i).start();
            self.flows[i].stage(i, &t, n, start, &mut self.udp);
            match &self.flows[i].out {
                Out::Udp(k) => {
                    let k = *k;
                    if self.udp[k].is_full() {
                        self.flush_udp(k);
                    }
                }
                Out::Tcp(out) => {
                    if out.is_full() {
                        self.flush_tcp(i);
                    } else if out.staged.len() == n as usize {
                        // The batch began with this run.
                        self.tcp_staged.push(i);
                    }
                }
            }
        }
        for k in 0..self.udp.len() {
            if !self.udp[k].staged.is_empty() {
                self.flush_udp(k);
            }
        }
        for j in 0..self.tcp_staged.len() {
            let i = self.tcp_staged[j];
            if let Out::Tcp(out) = &self.flows[i].out {
                if !out.staged.is_empty() && out.stamped_ns.is_none() {
                    self.flush_tcp(i);
                }
            }
        }
        self.tcp_staged.clear();
        let (packets, bytes) = std::mem::take(&mut self.unreported);
        self.run.progress.fetch_add(packets, Ordering::Relaxed);
        self.run.progress_bytes.fetch_add(bytes, Ordering::Relaxed);
    }

    /// Send everything staged on shared socket `k`. One reading of each clock right
    /// before each call: the wall clock goes into the probes (one-way delay), the
    /// monotonic one into the schedule records.
    fn flush_udp(&mut self, k: usize) {
        let n = self.udp[k].staged.len();
        let mut off = 0;
        let mut stuck_since = None;
        while off < n {
            let wall = netio::clock::wall_ns();
            let actual = netio::clock::mono_ns();
            self.udp[k].stamp(off, wall);
            match self.udp[k].send(off) {
                Ok(0) => {
                    // Nothing went out (a full socket buffer): try again, unless asked to
                    // stop or nothing was taken for a second (what is left is the
                    // sender's shortfall).
                    let since = *stuck_since.get_or_insert(actual);
                    if self.run.halt.load(Ordering::Relaxed)
                        || actual.saturating_sub(since) > STUCK_NS
                    {
                        break;
                    }
                    std::thread::yield_now();
                }
                Ok(sent) => {
                    stuck_since = None;
                    // Runs of one flow's consecutive packets, due at one instant, one size:
                    // counted at once (a bulk flow's whole batch is one run).
                    let mut s = off;
                    while s < off + sent {
                        let first = self.udp[k].staged[s];
                        let mut n = 1;
                        while s + n < off + sent && {
                            let next = self.udp[k].staged[s + n];
                            next.flow == first.flow
                                && next.seq == first.seq + n as u64
                                && next.scheduled_ns == first.scheduled_ns
                                && next.size_bytes == first.size_bytes
                        } {
                            n += 1;
                        }
                        self.record_run(first, n as u64, actual, wall);
                        s += n;
                    }
                    off += sent;
                }
                Err(e) if netio::pmtu::is_too_big(&e) && self.count_too_big(k, off) => {
                    // A --df datagram above the route's MTU: counted, and the rest go.
                    off += 1;
                }
                Err(e) => {
                    // The socket failed: every flow on it ends with the error.
                    let sent_before = |f: &FlowState| f.tx.packets();
                    for i in 0..self.flows.len() {
                        if matches!(self.flows[i].out, Out::Udp(j) if j == k) {
                            let msg = format!(
                                "sending failed after {} packets: {e}",
                                sent_before(&self.flows[i])
                            );
                            self.flows[i].error.get_or_insert(msg);
                            self.sched.handle_stop_flow(i);
                        }
                    }
                    break;
                }
            }
        }
        self.udp[k].staged.clear();
    }

    /// Counts staged datagram `off` of socket `k` as too big, if its flow sends with
    /// `--df` (else the error is the socket's).
    fn count_too_big(&mut self, k: usize, off: usize) -> bool {
        let flow = self.udp[k].staged[off].flow;
        match &mut self.too_big[flow] {
            Some(n) => {
                *n += 1;
                true
            }
            None => false,
        }
    }

    /// Write flow `i`'s staged TCP messages; a full window parks the flow.
    fn flush_tcp(&mut self, i: usize) {
        let Out::Tcp(out) = &mut self.flows[i].out else {
            return;
        };
        if out.stamped_ns.is_none() {
            out.stamp(netio::clock::wall_ns(), netio::clock::mono_ns());
        }
        match out.write() {
            Ok(true) => {
                let actual = out.stamped_ns.unwrap_or(0);
                let wall = out.stamped_wall_ns;
                let staged = std::mem::take(&mut out.staged);
                for s in &staged {
                    self.record(*s, actual, wall);
                }
                if let Out::Tcp(out) = &mut self.flows[i].out {
                    out.staged = staged;
                    out.staged.clear();
                    out.stamped_ns = None;
                }
                self.unpark(i, Instant::from_nanos(netio::clock::mono_ns()));
            }
            Ok(false) => {
                if !self.sched.is_parked(i) {
                    self.sched.handle_park(i);
                    self.parked.push(i);
                }
            }
            Err(e) => {
                let msg = format!(
                    "sending failed after {} packets: {e}",
                    self.flows[i].tx.packets()
                );
                self.flows[i].error.get_or_insert(msg);
                self.drop_staged(i);
                self.parked.retain(|&p| p != i);
                self.sched.handle_stop_flow(i);
            }
        }
    }

    /// A packet the kernel took, its probe stamped `wall_ns`: count it (apart, if `-O`
    /// omits it), log it, show progress.
    fn record(&mut self, s: super::flow::Staged, actual_ns: u64, wall_ns: u64) {
        let flow = &mut self.flows[s.flow];
        let record = s.tx_record(flow.id, actual_ns);
        let omitted = flow
            .omit
            .as_mut()
            .is_some_and(|o| o.omits(wall_ns, s.size_bytes));
        if !omitted {
            flow.tx.handle_record(&record);
        }
        if let Some(chunk) = &mut self.chunk {
            chunk.push(&Entry::Tx(record), record.flow);
        }
        self.unreported.0 += 1;
        self.unreported.1 += u64::from(s.size_bytes);
    }

    /// `n` packets of one flow that differ from `s` only in their sequence numbers
    /// (`s.seq..s.seq + n`), taken by the kernel in one call: as `n` calls of
    /// [`Self::record`], in one step unless each must be logged or may be omitted.
    fn record_run(&mut self, s: super::flow::Staged, n: u64, actual_ns: u64, wall_ns: u64) {
        if n == 1 || self.chunk.is_some() || self.flows[s.flow].omit.is_some() {
            for k in 0..n {
                let one = super::flow::Staged {
                    seq: s.seq + k,
                    ..s
                };
                self.record(one, actual_ns, wall_ns);
            }
            return;
        }
        let flow = &mut self.flows[s.flow];
        flow.tx.handle_records(&s.tx_record(flow.id, actual_ns), n);
        self.unreported.0 += n;
        self.unreported.1 += u64::from(s.size_bytes) * n;
    }

    fn drop_staged(&mut self, i: usize) {
        if let Out::Tcp(out) = &mut self.flows[i].out {
            out.staged.clear();
            out.stamped_ns = None;
        }
    }

    fn unpark(&mut self, i: usize, now: Instant) {
        if self.sched.is_parked(i) {
            self.sched.handle_unpark(i, now);
            self.parked.retain(|&p| p != i);
        }
    }

    /// The earliest end among parked flows (they wait for room until their time is up).
    fn parked_end(&self) -> Option<Instant> {
        self.parked
            .iter()
            .filter_map(|&i| self.sched.schedule(i).end())
            .min()
    }

    /// Parked flows whose time is up end with what they sent; the rest of their batch
    /// is the sender's shortfall.
    /// It walks the parked list, not every flow: this runs on every turn of the loop,
    /// and a walk of 5,000 flows' states there took 38 % of the sender's CPU at 10,000
    /// flows (`perf`, issue 15).
    fn expire_parked(&mut self, now: Instant) {
        let mut k = 0;
        while k < self.parked.len() {
            let i = self.parked[k];
            if self.sched.schedule(i).end().is_some_and(|e| now >= e) {
                self.parked.swap_remove(k);
                self.drop_staged(i);
                self.sched.handle_unpark(i, now);
                self.sched.handle_stop_flow(i);
            } else {
                k += 1;
            }
        }
    }

    /// Read every echo waiting on the shared UDP sockets.
    fn read_udp_echoes(&mut self) {
        for k in 0..self.udp.len() {
            if !self.udp[k].echoes {
                continue;
            }
            loop {
                let n = match self.udp[k]
                    .sock
                    .try_recv_batch(&mut self.echo_bufs, &mut self.echo_metas)
                {
                    Ok(n) if n > 0 => n,
                    _ => break,
                };
                let fallback = netio::clock::wall_ns();
                for j in 0..n {
                    let m = self.echo_metas[j];
                    let body = &self.echo_bufs[j][..m.len.min(self.echo_bufs[j].len())];
                    let Some(repr) = echo_repr(body) else {
                        continue;
                    };
                    let Some(&i) = self.by_id.get(&repr.flow) else {
                        continue;
                    };
                    let meta = EchoMeta {
                        rx_ns: m.kernel_ts_ns.unwrap_or(fallback),
                        kernel_ts: m.kernel_ts_ns.is_some(),
                        tos: m.tos,
                        hop_limit: m.hop_limit,
                        flow_label: m.flow_label,
                    };
                    let flow = &mut self.flows[i];
                    let Some(echo) = flow.echo.as_mut() else {
                        continue;
                    };
                    if let Some(e) = echo_record(flow.id, &repr, body.len(), meta, echo) {
                        if let Some(chunk) = &mut self.chunk {
                            chunk.push(&Entry::Rx(e.0), e.0.flow);
                        }
                        echo.handle(e);
                    }
                }
                if n < ECHO_BATCH {
                    break;
                }
            }
        }
    }

    fn read_tcp_echoes(&mut self, i: usize) {
        let mut got = Vec::new();
        let open = self.flows[i].read_tcp_echoes(&mut self.read_buf, &mut got);
        for e in got {
            if let Some(chunk) = &mut self.chunk {
                chunk.push(&Entry::Rx(e.0), e.0.flow);
            }
            if let Some(echo) = self.flows[i].echo.as_mut() {
                echo.handle(e);
            }
        }
        if !open {
            // The receiver closed the connection: no more echoes will come.
            self.by_id.remove(&self.flows[i].id);
        }
    }

    /// Wait for echoes still in flight: until as many arrived as were sent, or none came
    /// for max(500 ms, 2 × the largest RTT seen), at most 10 s.
    fn linger_for_echoes(&mut self) {
        if self.by_id.is_empty() {
            return;
        }
        let start = netio::clock::mono_ns();
        let seen = |e: &Self| -> u64 {
            e.flows
                .iter()
                .filter_map(|f| f.echo.as_ref().map(|x| x.seen))
                .sum()
        };
        let mut last = seen(self);
        let mut last_change = start;
        let mut fds = Vec::new();
        loop {
            let now = netio::clock::mono_ns();
            let complete = self.flows.iter().all(|f| {
                f.echo.as_ref().is_none_or(|e| e.seen >= f.tx.packets())
                    || !self.by_id.contains_key(&f.id)
            });
            let max_rtt = self
                .flows
                .iter()
                .filter_map(|f| f.echo.as_ref().map(|e| e.max_rtt_ns))
                .max()
                .unwrap_or(0);
            let idle_limit = (2 * max_rtt).max(500_000_000);
            if complete || now - start >= 10_000_000_000 || now - last_change >= idle_limit {
                return;
            }
            self.poll_set(&mut fds);
            let raw: Vec<_> = fds.iter().map(|(fd, i, _)| (*fd, *i)).collect();
            if let Ok(ready) = netio::poll::poll_ready(&raw, Some(5_000_000)) {
                self.handle_ready(&fds, &ready);
            }
            self.submit_log(Some(netio::clock::mono_ns()));
            let now_seen = seen(self);
            if now_seen != last {
                last = now_seen;
                last_change = netio::clock::mono_ns();
            }
        }
    }

    /// Hand the records made so far to the log writer when due (`Some(now)`), or at
    /// once; records it could not take are counted against their flows.
    fn submit_log(&mut self, now_ns: Option<u64>) {
        let (Some(log), Some(chunk)) = (self.run.log.as_ref(), self.chunk.as_mut()) else {
            return;
        };
        let dropped = match now_ns {
            Some(now) => log.submit_if_due(chunk, now),
            None => log.submit(chunk),
        };
        for (id, n) in dropped.unwrap_or_default() {
            if let Some(f) = self.flows.iter_mut().find(|f| u32::from(f.id) == id) {
                f.unlogged += n;
            }
        }
    }
}

/// Who a polled descriptor belongs to.
#[derive(Clone, Copy, Debug)]
enum Waiter {
    /// A shared UDP socket.
    Udp,
    /// A flow's TCP connection (the flow's index).
    Tcp(usize),
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;
    use std::net::TcpStream;
    use wire::control::Protocol;
    use wire::frame;

    #[test]
    fn the_last_message_of_a_count_waits_out_a_full_window_and_is_sent() {
        // A TCP flow of 8 messages of 64 KiB to a peer that reads nothing for 300 ms:
        // the window fills long before the last message, which is handed out, finds no
        // room, and must still be written once the peer reads (a sender that ended with
        // its schedule sent 7).
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let stream = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (mut peer, _) = listener.accept().unwrap();
        netio::tcp::set_send_buffer(&stream, 16 << 10).unwrap();
        netio::tcp::set_recv_buffer(&peer, 16 << 10).unwrap();
        let spec = FlowSpec {
            protocol: Protocol::Tcp,
            bulk: true,
            unpaced: true,
            size_bytes: 64 << 10,
            stop: traffic::StopSpec {
                count: Some(8),
                ..Default::default()
            },
            ..FlowSpec::default()
        };
        let run = EngineRun {
            pacing: Pacing {
                spin: None,
                batch_window: Duration::ZERO,
            },
            halt: Arc::new(AtomicBool::new(false)),
            progress: Arc::new(AtomicU64::new(0)),
            progress_bytes: Arc::new(AtomicU64::new(0)),
            log: None,
        };
        let (ready, ready_rx) = mpsc::channel();
        let (origin_tx, origin) = mpsc::channel();
        let (results, read) = std::thread::scope(|s| {
            let reader = s.spawn(move || {
                std::thread::sleep(std::time::Duration::from_millis(300));
                let mut all = Vec::new();
                peer.read_to_end(&mut all).map(|_| all.len())
            });
            let engine = s.spawn(|| {
                let plan = FlowPlan {
                    id: 1,
                    spec,
                    conn: Conn::Tcp(stream),
                };
                run_engine(&run, vec![plan], StartGate { ready, origin })
            });
            ready_rx.recv().unwrap();
            origin_tx
                .send(Instant::from_nanos(netio::clock::mono_ns()))
                .unwrap();
            (engine.join().unwrap(), reader.join().unwrap().unwrap())
        });
        assert_eq!(results.len(), 1);
        assert_eq!(results[0].error, None);
        assert_eq!(results[0].sent_total(), (8, 8 * (64 << 10)));
        // Every message whole on the wire: its frame prefix and its payload.
        assert_eq!(read, 8 * (frame::PREFIX_LEN + (64 << 10)));
    }
}
