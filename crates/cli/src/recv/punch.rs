//! The receiver's side of reverse UDP flows through a NAT (`send --reverse-mode
//! callback`): for a session that came over a connection we opened (the agent's, in
//! callback mode), punch each UDP flow's socket at the agent (`wire::punch`) until it
//! answers, so the NAT in front of us maps our socket to the agent's and the agent's
//! flow finds its way back; then keep that mapping open with a keepalive whenever the
//! flow has been quiet for the keepalive interval (RFC 4787 REQ-5, RFC 8085 §3.5).
//! Punches and keepalives leave from the receiver's UDP socket, where the flow arrives.

use std::collections::HashSet;
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use wire::control::FlowGrant;
use wire::punch::{Kind, Repr};

use super::Shared;

/// How often an unanswered flow is punched.
const PUNCH_EVERY: Duration = Duration::from_millis(200);

/// What the receiver keeps for punching.
#[derive(Debug, Default)]
pub(crate) struct Punches {
    /// The socket punches leave from (the receiver's first UDP socket).
    pub(crate) socket: OnceLock<Arc<netio::UdpSocket>>,
    /// Flows (id, token) whose punch the agent answered.
    answered: Mutex<HashSet<(u16, u64)>>,
    /// Keepalive interval and the first punch's delay, when set
    /// ([`super::Receiver::set_nat_keepalive`]).
    pub(crate) timing: Mutex<Option<(Duration, Duration)>>,
}

impl Punches {
    /// Whether `datagram` from `src` is an agent's answer to a punch (then noted, for
    /// the punching to stop); anything else is left to the meter.
    pub(super) fn answered(&self, datagram: &[u8], _src: SocketAddr) -> bool {
        match Repr::parse_bytes(datagram) {
            Ok(r) if r.kind == Kind::Answer => {
                self.answered
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .insert((r.flow, r.token));
                true
            }
            _ => false,
        }
    }

    fn is_answered(&self, flow: u16, token: u64) -> bool {
        self.answered
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .contains(&(flow, token))
    }

    fn forget(&self, flows: &[Punched]) {
        let mut answered = self.answered.lock().unwrap_or_else(|e| e.into_inner());
        for f in flows {
            answered.remove(&(f.id, f.token));
        }
    }
}

/// One UDP flow being punched and kept open.
struct Punched {
    id: u16,
    token: u64,
    to: SocketAddr,
    /// Answered (or its data came).
    open: bool,
    /// The next punch, or the next keepalive unless the flow is heard before.
    next: Instant,
    /// The flow's last arrival seen, to tell it quiet.
    last_rx: u64,
}

/// Stops the punching when dropped.
pub(super) struct Stop(Arc<AtomicBool>);

impl Drop for Stop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

/// Start punching the UDP flows of `grants` (with the source ports their announces
/// gave) at `peer_ip`, in `scope`, until the returned guard is dropped. `None` when
/// the session has no UDP flow.
pub(super) fn start<'scope>(
    scope: &'scope std::thread::Scope<'scope, '_>,
    shared: &'scope Shared,
    peer_ip: IpAddr,
    grants: &[FlowGrant],
    src_ports: &[Option<u16>],
) -> Option<Stop> {
    let (keepalive, delay) = shared
        .punches
        .timing
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .unwrap_or((Duration::from_secs(15), Duration::ZERO));
    let first = Instant::now() + delay;
    let flows: Vec<Punched> = grants
        .iter()
        .zip(src_ports)
        .filter_map(|(g, port)| {
            Some(Punched {
                id: g.id,
                token: g.token,
                to: SocketAddr::new(peer_ip, (*port)?),
                open: false,
                next: first,
                last_rx: 0,
            })
        })
        .collect();
    if flows.is_empty() {
        return None;
    }
    let stop = Arc::new(AtomicBool::new(false));
    let done = stop.clone();
    scope.spawn(move || run(shared, flows, keepalive, &done));
    Some(Stop(stop))
}

/// Punch each flow until it is answered, then keep it open, until `done`.
fn run(shared: &Shared, mut flows: Vec<Punched>, keepalive: Duration, done: &AtomicBool) {
    let Some(socket) = shared.punches.socket.get() else {
        return;
    };
    while !done.load(Ordering::SeqCst) && !shared.stop.load(Ordering::Relaxed) {
        let now = Instant::now();
        for f in &mut flows {
            let last_rx = shared
                .flows
                .flow(f.id)
                .and_then(|flow| shared.flows.with_state(&flow, |s| s.last_rx_mono_ns))
                .unwrap_or(0);
            if !f.open && (last_rx != 0 || shared.punches.is_answered(f.id, f.token)) {
                f.open = true;
                f.next = now + keepalive;
            }
            if f.open && last_rx != f.last_rx {
                // Heard: the mapping was just refreshed.
                f.last_rx = last_rx;
                f.next = now + keepalive;
            }
            if now < f.next {
                continue;
            }
            let kind = if f.open { Kind::Keepalive } else { Kind::Punch };
            let punch = Repr {
                kind,
                flow: f.id,
                token: f.token,
                tx_ns: netio::clock::wall_ns(),
            };
            // A lost punch is sent again; a failed send is no different.
            let _ = socket.send_to_marked(&punch.to_bytes(), f.to, &netio::Marking::default());
            f.next = now + if f.open { keepalive } else { PUNCH_EVERY };
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    shared.punches.forget(&flows);
}
