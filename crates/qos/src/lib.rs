//! What a router does with a packet at time `t`: the links it sends on and, later, the
//! QoS disciplines in front of them. Sans-IO, in Linux's qdisc vocabulary:
//!
//! - every discipline takes packets with `enqueue(pkt, now)` and gives them back with
//!   `dequeue(now)`; `poll_timeout()` says when something next happens, so a driver
//!   sleeps until then (or until a packet arrives) and never polls in a loop;
//! - every drop has a [`DropReason`], counted in the discipline's stats;
//! - each algorithm is split into params (validated once), state and stats.
//!
//! Time is [`wire::time::Instant`], handed in; this crate never reads a clock, never
//! touches a socket, and its randomness is seeded (ChaCha8), so a run replays exactly.
//!
//! Modules:
//! - [`link`]: a link with a rate, propagation delay and jitter, random loss (Bernoulli
//!   or Gilbert–Elliott) and a tail-drop queue limited in packets and/or bytes.
//! - [`bucket`]: a token bucket in exact integer arithmetic.
//! - [`cbwfq`]: LLQ + CBWFQ in front of a link used as the tx-ring.
//! - [`classify`]: packet fields, first-match class maps, and reservation tables keyed
//!   by the 5-tuple or the IPv6 flow-label 3-tuple.
//! - [`drr`]: deficit round robin over class queues.
//! - [`fq`]: flow-based fair queueing inside a class (`fair-queue`).
//! - [`mark`]: DSCP marking in place (RFC 1624 checksum update) and the IPv6
//!   extension-header walk to the transport header (RFC 8200).
//! - [`mdrr`]: modified deficit round robin with a low-latency queue (Cisco 12000/IOS XR).
//! - [`police`]: policing with conform, exceed and violate actions (transmit, drop,
//!   remark).
//! - [`policy`]: a service policy (MQC's policy-map): classify, mark, police, queue.
//! - [`reserve`]: a policy's per-flow reservation tables, admitted by first packets or
//!   installed and removed by RSVP signalling with a token bucket per flow.
//! - [`tbf`]: a token-bucket shaper with an inner queue.
//! - [`tcm`]: the srTCM (RFC 2697) and trTCM (RFC 2698) meters.
//! - [`wfq`]: class-based weighted fair queueing by self-clocked finish tags (SCFQ).
//! - [`wred`]: WRED's drop decision with Cisco's semantics and a selectable count rule.
//! - [`hist`]: a log-linear histogram for delay percentiles.
//!
//! The forwarding decisions (ARP, NDP, ICMP, routes) and the router's configuration are
//! the `router` crate's, built on this one.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod bucket;
pub mod cbwfq;
pub mod classify;
pub mod drr;
pub mod fq;
pub mod hist;
pub mod link;
pub mod mark;
pub mod mdrr;
pub mod police;
pub mod policy;
pub mod reserve;
pub mod tbf;
pub mod tcm;
pub mod wfq;
pub mod wred;

use serde::Serialize;

/// Whether `addr` lies in `prefix/len` (same family only; a length beyond the family's
/// width is taken as the full width).
pub fn prefix_match(addr: std::net::IpAddr, prefix: std::net::IpAddr, len: u8) -> bool {
    wire::prefix::matches(addr, prefix, len)
}

/// Why a packet was dropped.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum DropReason {
    /// The queue already held its limit of packets (tail drop).
    QueueLimitPackets,
    /// The packet would have taken the queue past its limit of bytes (tail drop).
    QueueLimitBytes,
    /// The link's random loss model lost it on the wire.
    RandomLoss,
    /// A policer found it beyond its rate and burst.
    Policed,
    /// WRED dropped it at random (min-th ≤ average < max-th).
    WredEarly,
    /// WRED dropped it because the average was at or above max-th.
    WredForced,
}

/// What `enqueue` did with a packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Queued; it will come out of `dequeue` (or be dropped later with a reason).
    Queued,
    /// Dropped at once.
    Dropped(DropReason),
}

/// A queueing discipline: what every link, queue and scheduler of the router is, so they
/// nest and the driver treats them alike (Linux's `Qdisc_ops`, sans-IO).
///
/// Contract: offer packets with [`Qdisc::enqueue`]; take what is ready with
/// [`Qdisc::dequeue`] until it returns `None`; then sleep until [`Qdisc::poll_timeout`]
/// or the next packet to offer. `now` never goes backwards.
pub trait Qdisc {
    /// Offer `pkt` at `now`.
    fn enqueue(&mut self, pkt: Vec<u8>, now: wire::time::Instant) -> Verdict;
    /// The next packet ready to leave at `now`.
    fn dequeue(&mut self, now: wire::time::Instant) -> Option<Vec<u8>>;
    /// When something next becomes ready; `None` when empty.
    fn poll_timeout(&self) -> Option<wire::time::Instant>;
}

impl Qdisc for link::Link {
    fn enqueue(&mut self, pkt: Vec<u8>, now: wire::time::Instant) -> Verdict {
        link::Link::enqueue(self, pkt, now)
    }

    fn dequeue(&mut self, now: wire::time::Instant) -> Option<Vec<u8>> {
        link::Link::dequeue(self, now)
    }

    fn poll_timeout(&self) -> Option<wire::time::Instant> {
        link::Link::poll_timeout(self)
    }
}
