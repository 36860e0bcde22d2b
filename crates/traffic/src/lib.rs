//! What to send when: flow specifications, units, and send schedules.
//!
//! Everything here is pure and seeded: a [`schedule::Schedule`] is handed the time and
//! answers which packet is due, so it is tested in virtual time with exact numbers.
//! Stochastic inter-departure-time and size distributions, seeded and reproducible, live in
//! [`dist`]; application models arrive with later work and plug into the same schedule.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod app;
pub mod dist;
pub mod flow;
pub mod schedule;
pub mod units;
pub mod voip;

pub use flow::{FlowSpec, MarkingSpec, RtpSpec, StopSpec};
pub use schedule::{Schedule, Transmit};
pub use units::{parse_bytes, parse_duration, Rate, UnitError};
