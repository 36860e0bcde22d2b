//! dualperf's experiment runner: plans, run lists and result directories.
//!
//! - [`failures`]: why runs failed, each reason once with the runs it hit;
//! - [`hosts`]: plans across real hosts (`target = "hosts"`): their agents, keys, and
//!   the `dualperf send --from` and `clock --peer` commands that drive them;
//! - [`index`]: the SQLite index of run directories, for queries across runs;
//! - [`plan`]: a TOML plan → validated points and the ordered list of runs;
//! - [`store`]: the run directory of versioned, self-describing files, written so that a
//!   killed run loses nothing it had finished and resumes without measuring twice;
//! - [`tables`]: the report tables a plan declares, with their metrics and units;
//! - [`runner`]: measures a plan's runs with `dualperf` processes (a receiver, one sender
//!   per run), on loopback, inside a lab's namespaces, or through agents on real hosts.
//!
//! The `report` crate reads these run directories into tables, statistics and plots.
//!
//! The lab never links `netio`: it runs the `dualperf` binary as processes and reads
//! their JSON.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod failures;
pub mod hosts;
#[cfg(feature = "index")]
pub mod index;
pub mod netlab;
pub mod plan;
pub mod runner;
pub mod store;
pub mod tables;
pub mod topology;

#[cfg(test)]
mod testdata;
