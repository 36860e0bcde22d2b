//! dualperf's router, sans-IO: what `dualperf route` decides, configures and reports,
//! without a socket or a clock (time comes in as `now`, as in [`qos`]). The driver in
//! the `cli` crate moves frames between `AF_PACKET` rings and these types.
//!
//! Modules:
//! - [`forward`]: the forwarding decisions of an IPv4/IPv6 router, frame in → frame out.
//! - [`config`]: the router's configuration file (`dualperf route --config`, written by
//!   `lab up` for each router): interfaces, routes, neighbours, link emulation.
//! - [`qosconf`]: the QoS file format (`dualperf route --qos`, MQC in TOML) and its
//!   compiler into [`qos::policy`] params.
//! - [`egress`]: what sends on each interface: its link, or a service policy in front.
//! - [`state`]: what the forwarding loop keeps besides its rings (forwarder, egresses,
//!   counters) and its decisions about them; it makes the stats document.
//! - [`stats`]: the router's stats file document (`dualperf route --stats`), typed.
//! - [`rsvp`]: RSVP at the router: the [`::rsvp`] engine over the forwarder's routes
//!   and the egress policies' signalled reservation tables.
//!
//! The queueing disciplines, links and policies themselves are [`qos`]'s.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod config;
pub mod egress;
pub mod forward;
pub mod qosconf;
pub mod rsvp;
pub mod state;
pub mod stats;
