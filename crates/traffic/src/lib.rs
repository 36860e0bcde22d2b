//! What to send when: flow specifications, units, and send schedules.
//!
//! Everything here is pure and seeded: a [`schedule::Schedule`] is handed the time and
//! answers which packet is due, so it is tested in virtual time with exact numbers.
//! Stochastic inter-departure-time and size distributions, seeded and reproducible, live in
//! [`distribution`]; D-ITG's application models in [`voip`] and [`app`], the seed studies' RTP
//! streams in [`stream`], all on the same schedule. The flow options `dualperf send`
//! takes, their parsers and checks are in [`options`]; D-ITG script lines translated into
//! them in [`ditg`]; how a sender carries its flows (threads, kernel pacing) in
//! [`sender`]; the windows of `--interval` in [`interval`].
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod app;
pub mod distribution;
pub mod ditg;
pub mod flow;
pub mod interval;
pub mod options;
pub mod overhead_table;
pub mod policy;
pub mod schedule;
pub mod scheduler;
pub mod sender;
pub mod stream;
pub mod units;
pub mod voip;

pub use flow::{FlowSpec, MarkingSpec, RtpSpec, StopSpec, VideoSpec};
pub use options::{FlowOptions, OptionError};
pub use schedule::{Schedule, Transmit};
pub use scheduler::{FlowIndex, Scheduler};
pub use units::{parse_bytes, parse_duration, Rate, UnitError};
