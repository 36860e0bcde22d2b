//! RSVP soft state (RFC 2205, processing rules of RFC 2209), sans-IO: a [`Router`] and
//! the two host roles, [`Sender`] and [`Receiver`].
//!
//! Nothing here opens a socket or reads a clock. A driver hands each node the messages
//! it receives (`handle_message`, already parsed by [`wire::rsvp::Message::parse`]) and
//! the time (`handle_timeout(now)` when [`Router::poll_timeout`] says), and drains what
//! it must send with `poll_transmit` ([`Transmit`]: addresses, Router Alert, TTL and the
//! message) and, at hosts, what happened with `poll_event` ([`Event`]). Randomness (the
//! refresh jitter) comes from a generator seeded by [`Config::seed`], so a run replays.
//!
//! A router asks its surroundings through [`Env`]: where a destination is routed (the
//! outgoing interface and our address on it), and whether a merged reservation is
//! admitted (and then installed) on an interface, or released.
//!
//! Soft state (RFC 2205 §3.7): every state is refreshed by its neighbour every R (each
//! interval drawn from [0.5R, 1.5R], [`timer::jitter`]) and removed when its lifetime
//! L = (K + 0.5) · 1.5 · R ([`lifetime`]) passes without one, R being the period the
//! neighbour announced in its TIME_VALUES. A node that times state out sends the matching
//! PathTear or ResvTear onward, so the nodes behind it clear at once; tears remove at once.
//!
//! Modules: [`timer`] (jitter, lifetime, the heap of deadlines), [`state`] (path and
//! reservation state, flowspec merging), [`router`] (RFC 2209 at a router), [`host`]
//! (sender and receiver), [`stats`] (counters), `msg` (building messages).

#![forbid(unsafe_code)]
#![warn(missing_docs)]

use std::net::IpAddr;

use wire::rsvp::{FilterSpec, FlowSpec, Message, Session};
use wire::time::Duration;

pub mod host;
mod msg;
mod receiver;
pub mod router;
pub mod state;
pub mod stats;
pub mod timer;

pub use host::{Event, Receiver, Sender, SenderFlow, ServiceKind};
pub use router::Router;
pub use stats::{ByType, Stats};
pub use timer::lifetime;

/// The IP TTL and Send_TTL of the messages a node originates.
pub const DEFAULT_TTL: u8 = 64;

/// The most timers one `handle_timeout` call fires; the rest wait for the next call (and
/// the call counts in [`Stats::deferred`]), so 10,000 states falling due together never
/// hold a forwarding thread for long.
pub const MAX_FIRINGS: usize = 256;

/// Error code 24 "Routing Problem", value 5 "No route available toward destination"
/// (RFC 3209 §7.3; RFC 2205 Appendix B has no code for a Path without a route): the
/// PathErr a router sends back for a Path it cannot route.
pub const ROUTING_PROBLEM: (u8, u16) = (24, 5);

/// An ERROR_SPEC's (Error Code, Error Value), RFC 2205 Appendix B.
pub type ErrorSpecCode = (u8, u16);

/// How a node refreshes its state.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Config {
    /// The refresh period R this node uses and announces in TIME_VALUES (default 30 s,
    /// RFC 2205 §3.7).
    pub refresh: Duration,
    /// K: how many refreshes in a row may be lost before state times out (default 3).
    pub keep: u32,
    /// Seed of the refresh jitter.
    pub seed: u64,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            refresh: Duration::from_secs(30),
            keep: 3,
            seed: 0,
        }
    }
}

impl Config {
    /// The config, or why it cannot run: R must be at least 1 ms (TIME_VALUES counts
    /// milliseconds) and at most 2³² − 1 ms.
    pub fn validate(self) -> Result<Self, Error> {
        let ms = self.refresh.as_nanos() / 1_000_000;
        if ms == 0 || ms > u64::from(u32::MAX) {
            return Err(Error::BadRefresh(self.refresh));
        }
        Ok(self)
    }

    /// The config with R at least 1 ms (what every node's constructor uses, so a zero R
    /// cannot make a timer fire at the same instant forever).
    pub fn clamped(self) -> Self {
        Self {
            refresh: self.refresh.max(Duration::from_millis(1)),
            ..self
        }
    }

    /// R in milliseconds, as TIME_VALUES carries it.
    pub fn refresh_ms(&self) -> u32 {
        u32::try_from(self.refresh.as_nanos() / 1_000_000)
            .unwrap_or(u32::MAX)
            .max(1)
    }
}

/// What the RSVP API refuses.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    /// A refresh period TIME_VALUES cannot carry.
    #[error("refresh period {0} is not between 1 ms and 2^32 - 1 ms")]
    BadRefresh(Duration),
    /// `Sender::add_flow` for a flow the sender already has.
    #[error("flow already added")]
    DuplicateFlow,
    /// A flow the host does not have.
    #[error("no such flow")]
    UnknownFlow,
    /// A sender template whose address family differs from the session's.
    #[error("sender template and session are of different address families")]
    FamilyMismatch,
}

/// One flow: the session (destination, protocol, port) and its sender (SENDER_TEMPLATE in
/// a Path, FILTER_SPEC in a Resv). A router's path state is keyed by it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Flow {
    /// SESSION.
    pub session: Session,
    /// SENDER_TEMPLATE / FILTER_SPEC.
    pub sender: FilterSpec,
}

/// Where a destination is routed: the outgoing interface and our address on it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Route {
    /// Interface index, as the driver numbers interfaces.
    pub iface: usize,
    /// Our address on that interface (of the destination's family).
    pub local: IpAddr,
}

/// What a router's surroundings answer: routes and traffic control.
pub trait Env {
    /// The route to `dst`, if any.
    fn route(&self, dst: IpAddr) -> Option<Route>;
    /// Admit the merged reservation `new` for `filter` of `session` on interface `iface`
    /// and install it; `old` is what is installed there now (so a change is a delta).
    /// Refused: the ERROR_SPEC code and value to report (code 1, admission control), and
    /// `old` stays installed.
    fn admit(
        &mut self,
        iface: usize,
        session: &Session,
        filter: &FilterSpec,
        new: &FlowSpec,
        old: Option<&FlowSpec>,
    ) -> Result<(), ErrorSpecCode>;
    /// Remove what `admit` installed for `filter` of `session` on `iface`.
    fn release(&mut self, iface: usize, session: &Session, filter: &FilterSpec);
}

/// An RSVP message to put on the wire.
#[derive(Clone, Debug, PartialEq)]
pub struct Transmit {
    /// The interface to send on (a router's Path, Resv and errors), or `None` for the
    /// host's routing table to choose.
    pub iface: Option<usize>,
    /// IP source address. A Path (and PathTear) keeps the sender's address at every hop
    /// (RFC 2205 §3.1.3); other messages carry the address of the node sending them.
    pub src: IpAddr,
    /// IP destination address: the session's for Path and PathTear, the previous or next
    /// hop's for the rest, the receiver's for ResvConf.
    pub dst: IpAddr,
    /// Send with the IP Router Alert option (RFC 2113 / RFC 2711): Path and PathTear.
    pub router_alert: bool,
    /// IP TTL (hop limit).
    pub ttl: u8,
    /// The message.
    pub message: Message,
}

/// The address a FILTER_SPEC / SENDER_TEMPLATE names.
pub fn filter_src(f: &FilterSpec) -> IpAddr {
    match *f {
        FilterSpec::V4 { src, .. } => IpAddr::V4(src),
        FilterSpec::V6 { src, .. } | FilterSpec::FlowLabel { src, .. } => IpAddr::V6(src),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn config_refuses_refresh_periods_time_values_cannot_carry() {
        let c = Config::default().validate().unwrap();
        assert_eq!(c.refresh_ms(), 30_000);
        let short = Config {
            refresh: Duration::from_micros(999),
            ..Config::default()
        };
        assert_eq!(
            short.validate(),
            Err(Error::BadRefresh(Duration::from_micros(999)))
        );
        let long = Config {
            refresh: Duration::from_millis(u64::from(u32::MAX) + 1),
            ..Config::default()
        };
        assert!(long.validate().is_err());
    }
}
