//! dualperf's experiment runner: plans, run lists and result directories.
//!
//! - [`check`]: a plan's flows and QoS files checked before anything runs;
//! - [`doctor`]: the host check (`dualperf doctor`, a run directory's `doctor.json`):
//!   /proc and /sys read under a root, judged with no I/O, and its text;
//! - [`dryrun`]: `run --dry-run`'s text and document: each run and what it would run;
//! - [`executor`]: who starts a plan's receiver and senders: `dualperf` processes, or
//!   an executor the binary supplies that runs the same command lines in process;
//! - [`failures`]: why runs failed, each reason once with the runs it hit;
//! - [`host`]: the host a run was measured on (`host.json`);
//! - [`dut`]: a running lab as a device under test between two tester ports;
//! - [`hosts`]: plans across real hosts (`target = "hosts"`): their agents, keys, and
//!   the `dualperf send --from` and `clock --peer` commands that drive them;
//! - [`hostsfile`]: the hosts file `lab up` writes for its namespaces (`/etc/netns`);
//! - [`index`]: the SQLite index of run directories, for queries across runs;
//! - [`pgqueue`]: a campaign's work queue in PostgreSQL: claims with `SKIP LOCKED`, leases,
//!   per-host exclusivity;
//! - [`pgschema`]: the PostgreSQL store's numbered migrations;
//! - [`pgstore`]: the PostgreSQL store of run directories and their records, for a fleet's
//!   many writers (`--store postgresql://…`);
//! - [`mesh`]: a mesh campaign's plan: agents, every ordered pair, both families, tests, rounds;
//! - [`nat44`]: a lab's kernel NAT44 node: its routes and nftables rules;
//! - [`nodesetup`]: the sysctls the hidden `lab node-setup` may write (keys under `net`);
//! - [`pathinfo`]: the path a lab's flows take, from its topology (`path.json`);
//! - [`plan`]: a TOML plan → validated points and the ordered list of runs;
//! - [`progress`]: a run's progress bar on a terminal;
//! - [`resume`]: the settings a run goes on with, and the command that resumes it;
//! - [`status`]: what `lab up` and `lab status` show of a lab: nodes, routers' counters;
//! - [`store`]: the run directory of versioned, self-describing files, written so that a
//!   killed run loses nothing it had finished and resumes without measuring twice;
//! - [`tayga`]: a lab's stateless NAT64 node: TAYGA's configuration and process;
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

pub mod check;
pub mod doctor;
pub mod dryrun;
pub mod dut;
pub mod executor;
pub mod failures;
pub mod host;
pub mod hosts;
pub mod hostsfile;
#[cfg(feature = "index")]
pub mod index;
pub mod laberror;
pub(crate) mod linkfamily;
pub mod mesh;
pub mod nat44;
pub mod netlab;
pub mod nodesetup;
pub mod pathinfo;
#[cfg(feature = "postgres")]
pub mod pgqueue;
#[cfg(feature = "postgres")]
pub mod pgschema;
#[cfg(feature = "postgres")]
pub mod pgstore;
pub mod plan;
pub mod progress;
pub mod resume;
pub mod rows;
pub mod rundoc;
pub mod runner;
pub mod status;
pub mod store;
pub mod tables;
pub mod tayga;
pub mod topology;

#[cfg(test)]
mod testdata;
