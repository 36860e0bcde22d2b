//! The dual-stack cores behind `dualperf interop`, sans-IO: no sockets, no clock.
//!
//! - [`hostport`]: host and host:port strings and URL authorities with bracketed IPv6
//!   literals (RFC 3986 §3.2.2, which obsoletes RFC 2732; zone ids per RFC 6874).
//! - [`select`]: destination address selection (RFC 6724 §6) with the policy table of
//!   §2.1, and `/etc/gai.conf`'s `label`/`precedence` lines.
//! - [`eyeballs`]: the Happy Eyeballs connection-attempt state machine (RFC 8305 §4–§5).
//! - [`interop`]: what `dualperf interop` observed, as its document and its text, and
//!   the plan of what it tries.
//! - [`pair`]: a host's lookup as one address per family (`compare HOST`, plans' names).
//!
//! Nothing here opens a socket, resolves a name or reads a clock: callers pass text,
//! addresses and instants (`wire::time`) in and get decisions out.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod eyeballs;
pub mod hostport;
pub mod interop;
pub mod pair;
pub mod select;
