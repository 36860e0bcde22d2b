//! The receiver's flow table, sharded so that UDP threads never share a lock per batch.
//!
//! - The **registry** (one mutex) gives out flow ids and log keys and knows every open
//!   flow. Only control sessions, TCP attaches and shutdown take it; UDP threads never do.
//! - Each **shard** (its own mutex) knows every open flow too, so whichever UDP socket a
//!   datagram comes out of can check it. Shard `i < udp_shards` belongs to UDP thread
//!   `i`, which locks it once per batch; the last shard holds the TCP flows' state and is
//!   locked by their connection threads. Control sessions lock each shard only to register
//!   and to finish flows (and, while a session waits for stragglers, to look at them).
//!
//! A flow's measured state ([`FlowState`]: meter, sequence unwrapper, counts) lives in
//! exactly one shard, its **home**: for a TCP flow the TCP shard, from registration; for a
//! UDP flow the shard of the first socket one of its datagrams came out of, which claims
//! it (a compare-and-swap on [`Flow::home`]). The kernel hashes each sender socket's
//! 4-tuple to one socket of the `SO_REUSEPORT` group, so a flow's datagrams normally all
//! come out of its home's socket. If some come out of another (a sender that changes its
//! source port, several sockets of one flow), that shard checks and echoes them as usual
//! and hands them to the home after its batch, under the home's lock: every datagram is
//! metered, exactly once, in one order that the log records too ([`Forward`]). Nothing is
//! merged afterwards, so nothing is approximated.
//!
//! Nothing here assumes a source port belongs to one flow: many flows may announce the
//! same port (flows sharing one sender socket) and each is checked against its own
//! announcement.

use std::collections::{HashMap, HashSet};
use std::net::IpAddr;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use meter::log::Entry;
use meter::RxRecord;
pub(crate) use results::recv::{Datagrams, FlowState};
use wire::control::{FlowAnnounce, FlowGrant, Meter, Protocol};

use crate::control::MAX_SESSION_WINDOWS;
use crate::logsink::{Chunk, LogProducer};

/// [`Flow::home`] of a UDP flow none of whose datagrams has come yet.
const UNCLAIMED: usize = usize::MAX;

/// What every shard knows of a registered flow: fixed at registration, shared.
#[derive(Debug)]
pub(crate) struct Flow {
    pub(crate) id: u16,
    pub(crate) announce: FlowAnnounce,
    pub(crate) token: u64,
    pub(crate) session: u64,
    pub(crate) peer_ip: IpAddr,
    /// The flow's key in the log: unique per log file, unlike the wrapping 16-bit ids.
    pub(crate) log_key: u32,
    /// The shard that holds the flow's [`FlowState`], or [`UNCLAIMED`].
    home: AtomicUsize,
    /// A TCP data connection has attached (only one may).
    attached: AtomicBool,
    /// The source port a translated UDP flow ([`FlowAnnounce::translated`]) was first
    /// seen from, or [`UNLATCHED`].
    latched_port: AtomicU32,
}

/// [`Flow::latched_port`] before a translated flow's first datagram.
const UNLATCHED: u32 = u32::MAX;

impl Flow {
    /// The marking of the flow's echoes. A flow label of 0 means "no label": setting it
    /// would switch automatic labels off on the shared socket for everyone.
    pub(crate) fn marking(&self) -> netio::Marking {
        netio::Marking {
            tos: self.announce.tos,
            ttl: self.announce.ttl,
            flow_label: self.announce.flow_label.filter(|l| *l != 0),
        }
    }

    /// Whether a datagram from `src` may belong to this flow: a UDP flow, from the
    /// registering host, from the announced source port if one was announced (several
    /// flows may announce the same one); behind a NAT (`translated`), from the port its
    /// first datagram came from.
    pub(crate) fn accepts_datagram_from(&self, src_ip: IpAddr, src_port: u16) -> bool {
        self.announce.protocol == Protocol::Udp
            && src_ip == self.peer_ip
            && match self.announce.src_port {
                None => true,
                Some(_) if self.announce.translated => {
                    match self.latched_port.compare_exchange(
                        UNLATCHED,
                        src_port.into(),
                        Ordering::AcqRel,
                        Ordering::Acquire,
                    ) {
                        Ok(_) => true,
                        Err(port) => port == u32::from(src_port),
                    }
                }
                Some(p) => p == src_port,
            }
    }

    /// The flow's home shard, making it `shard` if it has none yet.
    pub(crate) fn claim(&self, shard: usize) -> usize {
        match self
            .home
            .compare_exchange(UNCLAIMED, shard, Ordering::AcqRel, Ordering::Acquire)
        {
            Ok(_) => shard,
            Err(home) => home,
        }
    }

    /// The flow's home shard, if it has one.
    pub(crate) fn home(&self) -> Option<usize> {
        Some(self.home.load(Ordering::Acquire)).filter(|h| *h != UNCLAIMED)
    }

    /// Attach a TCP data connection from `peer_ip` with `token`: true once, for the
    /// right token and host, if the flow is a TCP flow.
    pub(crate) fn attach(&self, token: u64, peer_ip: IpAddr) -> bool {
        self.token == token
            && self.peer_ip == peer_ip
            && self.announce.protocol == Protocol::Tcp
            && !self.attached.swap(true, Ordering::AcqRel)
    }
}

/// A flow's measured state ([`FlowState::new`]) with the receiver's bounds.
fn new_state(flow: &Flow) -> FlowState {
    FlowState::new(flow.id, &flow.announce, MAX_SESSION_WINDOWS)
}

/// Meter datagrams `d` of `flow` into `state`, and log them into `log`.
fn meter_datagrams(
    state: &mut FlowState,
    flow: &Flow,
    d: &Datagrams,
    now_mono_ns: u64,
    log: Option<&mut Chunk>,
) {
    let log = log.map(|chunk| {
        move |r: &RxRecord| {
            let logged = RxRecord {
                flow: flow.log_key,
                ..*r
            };
            chunk.push(&Entry::Rx(logged), u32::from(flow.id));
        }
    });
    state.handle_datagrams(d, now_mono_ns, log);
}

/// A flow as one shard holds it.
#[derive(Debug)]
struct Slot {
    flow: Arc<Flow>,
    /// The measured state, in the flow's home shard only.
    state: Option<Box<FlowState>>,
}

/// A datagram a shard took for a flow whose home is another shard, on its way there.
#[derive(Debug)]
pub(crate) struct Forward {
    home: usize,
    flow: Arc<Flow>,
    datagrams: Datagrams,
}

impl Forward {
    /// The datagram's flow.
    pub(crate) fn flow(&self) -> &Flow {
        &self.flow
    }
}

/// What became of a datagram a UDP thread took from its socket.
#[derive(Debug)]
pub(crate) enum Taken<'a> {
    /// Metered in this shard, the flow's home.
    Metered(&'a Flow),
    /// Checked here, to be metered in the flow's home: hand it over with
    /// [`Flows::forward`] once this shard's lock is released.
    Forward(Forward),
    /// Its flow's session has reported: the datagram is late.
    Late,
    /// No such flow.
    Unknown,
    /// Not from the flow's registered source, or the flow is not a UDP flow.
    WrongSource,
}

/// A shard's flows by id. Ids are the receiver's own 16-bit grants, looked up once per
/// datagram: a slot per id up to the largest granted (at most 65,536 slots, 1 MiB)
/// makes the lookup one bounds check, where hashing them (even by one multiplication
/// instead of SipHash) and probing a hash table took 4-5 % of a receiver's time at 3
/// million datagrams a second.
#[derive(Default)]
struct FlowTable(Vec<Option<Slot>>);

impl FlowTable {
    fn get_mut(&mut self, id: &u16) -> Option<&mut Slot> {
        self.0.get_mut(usize::from(*id)).and_then(Option::as_mut)
    }

    fn insert(&mut self, id: u16, slot: Slot) {
        let i = usize::from(id);
        if self.0.len() <= i {
            self.0.resize_with(i + 1, || None);
        }
        self.0[i] = Some(slot);
    }

    fn remove(&mut self, id: &u16) -> Option<Slot> {
        self.0.get_mut(usize::from(*id)).and_then(Option::take)
    }
}

/// One shard of the table: every open flow, the state of those at home here.
#[derive(Default)]
pub(crate) struct Shard {
    flows: FlowTable,
    /// Ids whose session has reported, until reused: their packets are late, not unknown.
    finished: HashSet<u16>,
    /// The UDP thread's log records not handed to the writer yet (with `--log`). They
    /// wait here, under the shard's lock, so that a flow's end hands them over before
    /// its FlowEnd entry is written.
    pub(crate) udp_log: Option<Chunk>,
}

impl Shard {
    /// Take datagrams `d` from `src` (canonical address) whose probes name flow `id`,
    /// for shard `me`: checked against the flow's registration, then metered here if
    /// this is (or becomes) the flow's home, else made ready to be handed over.
    pub(crate) fn take(
        &mut self,
        me: usize,
        id: u16,
        src: std::net::SocketAddr,
        d: Datagrams,
        now_mono_ns: u64,
    ) -> Taken<'_> {
        let Some(slot) = self.flows.get_mut(&id) else {
            return if self.finished.contains(&id) {
                Taken::Late
            } else {
                Taken::Unknown
            };
        };
        if !slot.flow.accepts_datagram_from(src.ip(), src.port()) {
            return Taken::WrongSource;
        }
        let home = match slot.state {
            Some(_) => me,
            None => slot.flow.claim(me),
        };
        if home != me {
            return Taken::Forward(Forward {
                home,
                flow: slot.flow.clone(),
                datagrams: d,
            });
        }
        let flow = &slot.flow;
        let state = slot.state.get_or_insert_with(|| Box::new(new_state(flow)));
        meter_datagrams(state, flow, &d, now_mono_ns, self.udp_log.as_mut());
        Taken::Metered(flow)
    }

    /// The state of `flow` if this shard holds it (not of another flow that reuses its id).
    fn state_of(&mut self, flow: &Flow) -> Option<&mut FlowState> {
        self.flows
            .get_mut(&flow.id)
            .filter(|s| std::ptr::eq(Arc::as_ptr(&s.flow), flow))
            .and_then(|s| s.state.as_deref_mut())
    }

    /// Meter the datagrams another shard took for a flow at home here; false when the
    /// flow has been finished meanwhile (they are late).
    fn handle_forward(&mut self, fwd: &Forward, now_mono_ns: u64) -> bool {
        let Some(slot) = self
            .flows
            .get_mut(&fwd.flow.id)
            .filter(|s| Arc::ptr_eq(&s.flow, &fwd.flow))
        else {
            return false;
        };
        let flow = &slot.flow;
        let state = slot.state.get_or_insert_with(|| Box::new(new_state(flow)));
        meter_datagrams(
            state,
            flow,
            &fwd.datagrams,
            now_mono_ns,
            self.udp_log.as_mut(),
        );
        true
    }

    /// Hands the UDP thread's pending log records to the writer (all of them with
    /// `force`, else only when due: see [`crate::logsink::HOLD_NS`]); records it cannot
    /// take are counted against their flows.
    pub(crate) fn submit_udp_log(&mut self, log: &LogProducer, now_ns: u64, force: bool) {
        let Some(chunk) = &mut self.udp_log else {
            return;
        };
        let dropped = if force {
            log.submit(chunk)
        } else {
            log.submit_if_due(chunk, now_ns)
        };
        for (id, n) in dropped.unwrap_or_default() {
            let state = self
                .flows
                .get_mut(&(id as u16))
                .and_then(|s| s.state.as_deref_mut());
            if let Some(state) = state {
                state.unlogged += n;
            }
        }
    }

    /// Whether records wait in the UDP log chunk.
    pub(crate) fn log_pending(&self) -> bool {
        self.udp_log.as_ref().is_some_and(|c| !c.is_empty())
    }
}

/// Ids and log keys given out, and every open flow.
#[derive(Debug, Default)]
struct Registry {
    next_id: u16,
    /// The last log key given out.
    log_keys: u32,
    flows: HashMap<u16, Arc<Flow>>,
}

/// Every registered flow: the registry and the shards (module docs).
pub(crate) struct Flows {
    registry: Mutex<Registry>,
    /// `udp_shards` UDP shards, then the TCP shard.
    shards: Vec<Mutex<Shard>>,
}

/// A finished flow and what it measured.
pub(crate) struct Finished {
    pub(crate) flow: Arc<Flow>,
    pub(crate) state: FlowState,
}

impl Flows {
    /// A table for `udp_shards` UDP threads (at least one).
    pub(crate) fn new(udp_shards: usize) -> Self {
        Self {
            registry: Mutex::default(),
            shards: (0..=udp_shards.max(1)).map(|_| Mutex::default()).collect(),
        }
    }

    /// How many UDP shards there are (shards `0..udp_shards()`).
    pub(crate) fn udp_shards(&self) -> usize {
        self.shards.len() - 1
    }

    /// The shard where TCP flows keep their state.
    fn tcp_shard(&self) -> usize {
        self.shards.len() - 1
    }

    /// Lock shard `i` (poisoning ignored: the shard stays usable whatever panicked).
    pub(crate) fn shard(&self, i: usize) -> MutexGuard<'_, Shard> {
        self.shards[i].lock().unwrap_or_else(|e| e.into_inner())
    }

    fn registry(&self) -> MutexGuard<'_, Registry> {
        self.registry.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// An open flow.
    pub(crate) fn flow(&self, id: u16) -> Option<Arc<Flow>> {
        self.registry().flows.get(&id).cloned()
    }

    /// Every open flow's id, in order.
    pub(crate) fn open_ids(&self) -> Vec<u16> {
        let mut ids: Vec<u16> = self.registry().flows.keys().copied().collect();
        ids.sort_unstable();
        ids
    }

    /// Register flows for a session and return their grants. `on_flow` sees each new
    /// flow before any shard knows it (so its log entry precedes its records); every
    /// shard knows them all before this returns (so the sender, which learns the ids
    /// from the grants, cannot send to a shard that does not).
    pub(crate) fn register(
        &self,
        session: u64,
        peer_ip: IpAddr,
        announced: Vec<FlowAnnounce>,
        mut on_flow: impl FnMut(&Flow),
    ) -> Result<Vec<FlowGrant>, String> {
        // Held to the end, so that no finish or shutdown sees half a registration.
        let mut registry = self.registry();
        if registry.flows.len() + announced.len() > usize::from(u16::MAX) - 1 {
            return Err("the receiver's flow table is full".into());
        }
        for a in &announced {
            check_announce(a, peer_ip)?;
        }
        let mut grants = Vec::with_capacity(announced.len());
        let mut flows = Vec::with_capacity(announced.len());
        for announce in announced {
            let id = loop {
                registry.next_id = registry.next_id.wrapping_add(1);
                let id = registry.next_id;
                if id != 0 && !registry.flows.contains_key(&id) {
                    break id;
                }
            };
            registry.log_keys += 1;
            let token = u64::from_ne_bytes(crate::control::random_bytes());
            grants.push(FlowGrant {
                index: announce.index,
                id,
                token,
            });
            let home = match announce.protocol {
                Protocol::Udp => UNCLAIMED,
                Protocol::Tcp => self.tcp_shard(),
            };
            let flow = Arc::new(Flow {
                id,
                announce,
                token,
                session,
                peer_ip,
                log_key: registry.log_keys,
                home: AtomicUsize::new(home),
                attached: AtomicBool::new(false),
                latched_port: AtomicU32::new(UNLATCHED),
            });
            on_flow(&flow);
            registry.flows.insert(id, flow.clone());
            flows.push(flow);
        }
        for (i, shard) in self.shards.iter().enumerate() {
            let mut shard = shard.lock().unwrap_or_else(|e| e.into_inner());
            for flow in &flows {
                shard.finished.remove(&flow.id);
                let state = (flow.home() == Some(i)).then(|| Box::new(new_state(flow)));
                let slot = Slot {
                    flow: flow.clone(),
                    state,
                };
                shard.flows.insert(flow.id, slot);
            }
        }
        Ok(grants)
    }

    /// Run `f` on `flow`'s state under its home shard's lock; `None` if it has no home
    /// yet or is finished.
    pub(crate) fn with_state<R>(
        &self,
        flow: &Flow,
        f: impl FnOnce(&mut FlowState) -> R,
    ) -> Option<R> {
        let mut shard = self.shard(flow.home()?);
        shard.state_of(flow).map(f)
    }

    /// Hand datagrams that UDP shards took for flows at home elsewhere to their homes,
    /// one lock per home, in the order they were taken; with `log`, each home's records
    /// go to the writer when due. Returns how many found their flow finished meanwhile
    /// (late). Call it without holding any shard's lock.
    pub(crate) fn forward(
        &self,
        fwds: &mut Vec<Forward>,
        now_mono_ns: u64,
        log: Option<&LogProducer>,
    ) -> u64 {
        // Stable: a flow's datagrams keep their order.
        fwds.sort_by_key(|f| f.home);
        let mut late = 0;
        for group in fwds.chunk_by(|a, b| a.home == b.home) {
            let mut shard = self.shard(group[0].home);
            for fwd in group {
                if !shard.handle_forward(fwd, now_mono_ns) {
                    late += u64::from(fwd.datagrams.n);
                }
            }
            if let Some(log) = log {
                shard.submit_udp_log(log, now_mono_ns, false);
            }
        }
        fwds.clear();
        late
    }

    /// Whether `done` holds for each of `ids` that is still open, given its state (`None`
    /// while nothing has arrived). Each shard is locked once.
    pub(crate) fn all_open(
        &self,
        ids: &[u16],
        mut done: impl FnMut(u16, Option<&FlowState>) -> bool,
    ) -> bool {
        let flows: Vec<Arc<Flow>> = {
            let registry = self.registry();
            ids.iter()
                .filter_map(|id| registry.flows.get(id).cloned())
                .collect()
        };
        let mut by_home: Vec<Vec<&Arc<Flow>>> = vec![Vec::new(); self.shards.len()];
        for flow in &flows {
            match flow.home() {
                Some(h) => by_home[h].push(flow),
                None if !done(flow.id, None) => return false,
                None => {}
            }
        }
        for (i, flows) in by_home.iter().enumerate().filter(|(_, f)| !f.is_empty()) {
            let mut shard = self.shard(i);
            for flow in flows {
                if !done(flow.id, shard.state_of(flow).map(|s| &*s)) {
                    return false;
                }
            }
        }
        true
    }

    /// Run `f` on every open flow with its state (`None` while nothing has arrived), in
    /// order of their homes: each shard is locked once, as a control session looking at
    /// its flows locks it, never by a UDP thread's wait for anything else.
    pub(crate) fn visit_open(&self, mut f: impl FnMut(&Flow, Option<&FlowState>)) {
        let flows: Vec<Arc<Flow>> = self.registry().flows.values().cloned().collect();
        let mut by_home: Vec<Vec<&Arc<Flow>>> = vec![Vec::new(); self.shards.len()];
        for flow in &flows {
            match flow.home() {
                Some(h) => by_home[h].push(flow),
                None => f(flow, None),
            }
        }
        for (i, flows) in by_home.iter().enumerate().filter(|(_, f)| !f.is_empty()) {
            let mut shard = self.shard(i);
            for flow in flows {
                f(flow, shard.state_of(flow).map(|s| &*s));
            }
        }
    }

    /// Take `ids` out of every shard and out of the registry, returning each open one
    /// with its measured state, in the order of `ids`. `before` runs on each shard under
    /// its lock before its flows leave it (to hand its log records over: a flow's
    /// FlowEnd, written by the caller afterwards, then follows all of its records from
    /// every shard).
    pub(crate) fn finish(&self, ids: &[u16], mut before: impl FnMut(&mut Shard)) -> Vec<Finished> {
        let mut states: HashMap<u16, Box<FlowState>> = HashMap::new();
        for shard in &self.shards {
            let mut shard = shard.lock().unwrap_or_else(|e| e.into_inner());
            before(&mut shard);
            for id in ids {
                if let Some(slot) = shard.flows.remove(id) {
                    shard.finished.insert(*id);
                    if let Some(state) = slot.state {
                        // One home per flow: no second state can exist.
                        debug_assert!(!states.contains_key(id), "flow {id} has two homes");
                        states.insert(*id, state);
                    }
                }
            }
        }
        let mut registry = self.registry();
        ids.iter()
            .filter_map(|id| registry.flows.remove(id))
            .map(|flow| {
                let state = states
                    .remove(&flow.id)
                    .map_or_else(|| new_state(&flow), |s| *s);
                Finished { flow, state }
            })
            .collect()
    }
}

/// Why a flow announcement is refused, if it is.
fn check_announce(a: &FlowAnnounce, peer_ip: IpAddr) -> Result<(), String> {
    let i = a.index;
    if a.interval_ns.is_some_and(|w| w < 1_000_000) {
        return Err(format!("flow {i}: an interval below 1 ms"));
    }
    if (a.size_bytes as usize) < wire::probe::HEADER_LEN {
        return Err(format!(
            "flow {i}: size {} is below the 16-byte probe",
            a.size_bytes
        ));
    }
    let max = match a.protocol {
        Protocol::Udp => 65_507,
        Protocol::Tcp => wire::frame::MAX_DATA_LEN,
    };
    if a.size_bytes as usize > max {
        return Err(format!(
            "flow {i}: size {} exceeds {max} bytes",
            a.size_bytes
        ));
    }
    if a.ttl == Some(0) {
        return Err(format!("flow {i}: a TTL / hop limit of 0 cannot be sent"));
    }
    match a.flow_label {
        Some(l) if l > 0xF_FFFF => {
            return Err(format!("flow {i}: flow label {l:#x} exceeds 20 bits"))
        }
        Some(_) if peer_ip.is_ipv4() => {
            return Err(format!(
                "flow {i}: a flow label needs IPv6, the sender is {peer_ip}"
            ))
        }
        _ => {}
    }
    if a.protocol == Protocol::Udp && a.meter == Meter::Rtt && a.src_port.is_none() {
        return Err(format!(
            "flow {i}: a UDP round-trip flow must announce its source port"
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::net::SocketAddr;

    use super::*;

    const PEER: IpAddr = IpAddr::V4(std::net::Ipv4Addr::LOCALHOST);

    fn announce(index: u32, protocol: Protocol, src_port: Option<u16>) -> FlowAnnounce {
        FlowAnnounce {
            index,
            protocol,
            size_bytes: 64,
            src_port,
            ..FlowAnnounce::default()
        }
    }

    fn from(port: u16) -> SocketAddr {
        SocketAddr::new(PEER, port)
    }

    /// A probe sent at `seq` ms, received 100 µs later.
    fn record(id: u16, seq: u32) -> RxRecord {
        let tx_ns = 1_000_000_000 + u64::from(seq) * 1_000_000;
        RxRecord {
            flow: u32::from(id),
            size_bytes: 64,
            tx_ns,
            rx_ns: tx_ns + 100_000,
            ..RxRecord::default()
        }
    }

    /// Shard `me` takes datagram `seq` of flow `id` from `src`; "metered", "forward",
    /// "late", "unknown" or "wrong source", and the forward to hand over, if any.
    fn take(
        flows: &Flows,
        me: usize,
        id: u16,
        seq: u32,
        src: SocketAddr,
    ) -> (&'static str, Option<Forward>) {
        let mut shard = flows.shard(me);
        let d = Datagrams {
            seq,
            n: 1,
            record: record(id, seq),
        };
        match shard.take(me, id, src, d, 0) {
            Taken::Metered(f) => {
                assert_eq!(f.id, id);
                ("metered", None)
            }
            Taken::Forward(fwd) => ("forward", Some(fwd)),
            Taken::Late => ("late", None),
            Taken::Unknown => ("unknown", None),
            Taken::WrongSource => ("wrong source", None),
        }
    }

    fn ids(grants: &[FlowGrant]) -> Vec<u16> {
        grants.iter().map(|g| g.id).collect()
    }

    #[test]
    fn a_registered_flow_is_known_to_every_shard() {
        let flows = Flows::new(3);
        assert_eq!(flows.udp_shards(), 3);
        let mut seen = Vec::new();
        let grants = flows
            .register(1, PEER, vec![announce(0, Protocol::Udp, Some(5000))], |f| {
                seen.push(f.id);
            })
            .unwrap();
        let id = grants[0].id;
        assert_eq!(seen, [id], "the log hears of the flow");
        for shard in 0..3 {
            // Known everywhere: a datagram from the wrong port is refused as such, not
            // as an unknown flow, and claims nothing.
            assert_eq!(take(&flows, shard, id, 0, from(5001)).0, "wrong source");
            assert_eq!(take(&flows, shard, id + 1, 0, from(5000)).0, "unknown");
        }
        assert_eq!(flows.flow(id).unwrap().home(), None);
        assert_eq!(flows.open_ids(), [id]);
    }

    #[test]
    fn finish_collects_the_state_from_the_shard_that_has_the_packets() {
        let flows = Flows::new(3);
        let grants = flows
            .register(
                1,
                PEER,
                vec![
                    announce(0, Protocol::Udp, Some(5000)),
                    announce(1, Protocol::Udp, Some(6000)),
                ],
                |_| {},
            )
            .unwrap();
        let (a, b) = (grants[0].id, grants[1].id);
        for seq in 0..5 {
            assert_eq!(take(&flows, 2, a, seq, from(5000)).0, "metered");
        }
        for seq in [0, 1, 3] {
            assert_eq!(take(&flows, 1, b, seq, from(6000)).0, "metered");
        }
        assert_eq!(flows.flow(a).unwrap().home(), Some(2));
        assert_eq!(flows.flow(b).unwrap().home(), Some(1));
        let mut shards_seen = 0;
        let done = flows.finish(&[b, a, 999], |_| shards_seen += 1);
        assert_eq!(shards_seen, 4, "three UDP shards and the TCP shard");
        let got: Vec<(u16, u64, u64)> = done
            .iter()
            .map(|f| {
                (
                    f.flow.id,
                    f.state.meter.packets(),
                    f.state.meter.summary(Some(4)).loss.lost,
                )
            })
            .collect();
        assert_eq!(
            got,
            [(b, 3, 1), (a, 5, 0)],
            "in the order asked, unknown ids left out"
        );
        for shard in 0..3 {
            assert_eq!(take(&flows, shard, a, 5, from(5000)).0, "late");
        }
        assert!(flows.open_ids().is_empty());
    }

    #[test]
    fn datagrams_of_one_flow_in_two_shards_are_all_metered_at_its_home() {
        let flows = Flows::new(2);
        let grants = flows
            .register(1, PEER, vec![announce(0, Protocol::Udp, None)], |_| {})
            .unwrap();
        let id = grants[0].id;
        // Shard 1 sees the flow first and becomes its home; shard 0 then gets some of its
        // datagrams too (say, from another source port: none was announced).
        let mut forwards = Vec::new();
        for (shard, seq, port) in [(1, 0, 5000), (0, 1, 5001), (1, 2, 5000), (0, 3, 5001)] {
            let (what, fwd) = take(&flows, shard, id, seq, from(port));
            assert_eq!(what, if shard == 1 { "metered" } else { "forward" });
            forwards.extend(fwd);
        }
        assert_eq!(flows.forward(&mut forwards, 0, None), 0, "none late");
        assert!(forwards.is_empty());
        let unique = |flows: &Flows| {
            let f = flows.flow(id).unwrap();
            flows.with_state(&f, |s| s.meter.unique_packets())
        };
        assert_eq!(unique(&flows), Some(4));
        // One datagram still on its way when the flow finishes is late, not lost silently.
        let (_, fwd) = take(&flows, 0, id, 4, from(5001));
        forwards.extend(fwd);
        let done = flows.finish(&[id], |_| {});
        assert_eq!(flows.forward(&mut forwards, 0, None), 1);
        let [finished] = &done[..] else {
            panic!("one flow finished");
        };
        let summary = finished.state.meter.summary(Some(4));
        assert_eq!((summary.packets, summary.unique_packets), (4, 4));
        assert_eq!((summary.loss.lost, summary.loss.duplicates), (0, 0));
    }

    #[test]
    fn flows_announcing_one_source_port_are_each_checked_against_it() {
        let flows = Flows::new(2);
        let grants = flows
            .register(
                1,
                PEER,
                (0..3)
                    .map(|i| announce(i, Protocol::Udp, Some(7000)))
                    .collect(),
                |_| {},
            )
            .unwrap();
        for id in ids(&grants) {
            assert_eq!(take(&flows, 0, id, 0, from(7000)).0, "metered");
            assert_eq!(take(&flows, 0, id, 1, from(7001)).0, "wrong source");
            let other_host = SocketAddr::new(IpAddr::V6(std::net::Ipv6Addr::LOCALHOST), 7000);
            assert_eq!(take(&flows, 1, id, 1, other_host).0, "wrong source");
        }
        let done = flows.finish(&ids(&grants), |_| {});
        assert!(done.iter().all(|f| f.state.meter.packets() == 1));
    }

    #[test]
    fn a_translated_flow_is_taken_from_the_port_of_its_first_datagram_only() {
        let flows = Flows::new(2);
        let translated = FlowAnnounce {
            translated: true,
            ..announce(0, Protocol::Udp, Some(7000))
        };
        let grants = flows.register(1, PEER, vec![translated], |_| {}).unwrap();
        let id = grants[0].id;
        // The NAT gave it port 61034: the first datagram latches it, in any shard.
        assert_eq!(take(&flows, 0, id, 0, from(61_034)).0, "metered");
        assert_eq!(take(&flows, 1, id, 1, from(61_034)).0, "forward");
        // Neither the announced port nor another one is taken after that, nor another host.
        assert_eq!(take(&flows, 0, id, 2, from(7000)).0, "wrong source");
        assert_eq!(take(&flows, 0, id, 3, from(61_035)).0, "wrong source");
        let other_host = SocketAddr::new(IpAddr::V6(std::net::Ipv6Addr::LOCALHOST), 61_034);
        assert_eq!(take(&flows, 0, id, 4, other_host).0, "wrong source");
        assert_eq!(take(&flows, 0, id, 5, from(61_034)).0, "metered");
        let done = flows.finish(&[id], |_| {});
        assert_eq!(done[0].state.meter.packets(), 2);
    }

    #[test]
    fn a_tcp_flow_lives_in_the_tcp_shard_and_refuses_datagrams() {
        let flows = Flows::new(2);
        let grants = flows
            .register(1, PEER, vec![announce(0, Protocol::Tcp, None)], |_| {})
            .unwrap();
        let (id, token) = (grants[0].id, grants[0].token);
        let flow = flows.flow(id).unwrap();
        assert_eq!(flow.home(), Some(2));
        assert_eq!(take(&flows, 0, id, 0, from(5000)).0, "wrong source");
        assert!(!flow.attach(token ^ 1, PEER), "wrong token");
        assert!(flow.attach(token, PEER));
        assert!(!flow.attach(token, PEER), "only one connection attaches");
        let r = RxRecord {
            seq: 0,
            ..record(id, 0)
        };
        assert!(flows
            .with_state(&flow, |s| s.meter.handle_record(&r))
            .is_some());
        let waiting = flows.all_open(&[id], |_, s| s.is_some_and(|s| s.meter.packets() == 1));
        assert!(waiting);
        let done = flows.finish(&[id], |_| {});
        assert_eq!(done[0].state.meter.packets(), 1);
        assert!(flows.with_state(&flow, |_| ()).is_none(), "finished");
    }

    #[test]
    fn registration_refuses_bad_announcements_and_a_full_table() {
        let flows = Flows::new(1);
        let rtt_without_port = FlowAnnounce {
            meter: Meter::Rtt,
            ..announce(0, Protocol::Udp, None)
        };
        let err = flows
            .register(1, PEER, vec![rtt_without_port], |_| {})
            .unwrap_err();
        assert!(err.contains("source port"), "{err}");
        let many = (0..u32::from(u16::MAX))
            .map(|i| announce(i, Protocol::Udp, None))
            .collect();
        let err = flows.register(1, PEER, many, |_| {}).unwrap_err();
        assert!(err.contains("full"), "{err}");
        assert!(flows.open_ids().is_empty(), "nothing half registered");
    }
    /// Runs of one coalesced receive, handed over by another shard or metered at home,
    /// across the 32-bit wrap, late ones among them: the flow's figures are those of
    /// the same datagrams taken one at a time.
    #[test]
    fn runs_meter_as_their_datagrams_one_by_one() {
        let start = u32::MAX - 100;
        // (first number, datagrams): in order across the wrap, a gap, a late run (below
        // the highest: taken one by one), a duplicate run, a run after it.
        let runs: [(u32, u32); 7] = [
            (start, 46),
            (start.wrapping_add(46), 46),
            (start.wrapping_add(92), 46),
            (start.wrapping_add(150), 20),
            (start.wrapping_add(140), 10),
            (start.wrapping_add(150), 3),
            (start.wrapping_add(170), 46),
        ];
        let figures = |batched: bool| {
            let flows = Flows::new(2);
            let grants = flows
                .register(1, PEER, vec![announce(0, Protocol::Udp, None)], |_| {})
                .unwrap();
            let id = grants[0].id;
            // The flow's home is shard 1; shard 0 hands its runs over.
            assert_eq!(
                take(&flows, 1, id, start.wrapping_sub(1), from(9)).0,
                "metered"
            );
            for (k, &(seq, n)) in runs.iter().enumerate() {
                let me = k % 2;
                let one = |seq: u32, n: u32| Datagrams {
                    seq,
                    n,
                    // One send stamp for the run: its first datagram's.
                    record: record(id, seq),
                };
                let parts: Vec<Datagrams> = if batched {
                    vec![one(seq, n)]
                } else {
                    (0..n)
                        .map(|j| Datagrams {
                            seq: seq.wrapping_add(j),
                            ..one(seq, 1)
                        })
                        .collect()
                };
                let mut fwds = Vec::new();
                for d in parts {
                    match flows.shard(me).take(me, id, from(9), d, 0) {
                        Taken::Metered(_) => {}
                        Taken::Forward(fwd) => fwds.push(fwd),
                        _ => panic!("refused"),
                    }
                }
                assert_eq!(flows.forward(&mut fwds, 0, None), 0);
            }
            let flow = flows.flow(id).unwrap();
            flows
                .with_state(&flow, |s| (s.meter.clone(), s.summary(None)))
                .unwrap()
        };
        let (batched, singles) = (figures(true), figures(false));
        assert_eq!(batched, singles);
        let loss = batched.1.loss;
        assert_eq!((loss.duplicates, loss.reordered), (3, 10));
        assert_eq!(batched.1.packets, 1 + 46 * 4 + 20 + 10 + 3);
    }
}
