//! The dual-stack cores behind `dualperf interop`, sans-IO: no sockets, no clock.
//!
//! - [`hostport`]: host and host:port strings and URL authorities with bracketed IPv6
//!   literals (RFC 3986 §3.2.2, which obsoletes RFC 2732; zone ids per RFC 6874).
//! - [`select`]: destination address selection (RFC 6724 §6) with the policy table of
//!   §2.1, and `/etc/gai.conf`'s `label`/`precedence` lines.
//! - [`eyeballs`]: the Happy Eyeballs connection-attempt state machine (RFC 8305 §4–§5).

pub mod eyeballs;
pub mod hostport;
pub mod select;
