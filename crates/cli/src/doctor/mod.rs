//! `dualperf doctor`: this host checked for what measurements depend on.
//!
//! Three steps, kept apart so tests can fake each: `lab::doctor::sysfs` reads files
//! under a root (`/`, or a fake `/proc` and `/sys` in a temporary directory), [`live`]
//! measures and asks what is not a file (sleeps, clock reads, adjtimex, `PATH`), and
//! `lab::doctor::judge` weighs both, with no I/O, into a [`DoctorDoc`]. [`record`] is the
//! short run that `dualperf run` keeps in a run directory (`doctor.json`) and `compare`
//! beside its results.

mod live;

use std::path::PathBuf;

use anyhow::Result;
use lab::doctor::sysfs::Host;
use lab::doctor::{judge, text, Readings};
use results::doctor::DoctorDoc;

use self::live::Budget;

/// Check this host for what measurements depend on, and say what to fix.
///
/// Each check says ok, warn or fail, what it found, why it matters and how to fix it:
/// the clocksource (is a timestamp a vDSO read or a system call?), timer resolution and
/// how late sleeps wake (as `dualperf clock` measures, briefly), timer slack, the CPU
/// frequency governor and deep idle states, steal time (a VM's CPUs given to others),
/// socket buffer limits against the buffers dualperf asks for, clock synchronisation
/// (one-way delays across hosts), CAP_NET_ADMIN and network namespaces, packet sockets
/// and CAP_NET_RAW (the lab and its router), iproute2's ip, and the CPUs available.
/// Nothing is changed: the fixes are printed for you to run. It runs without root
/// (then the lab's checks warn) and takes about a quarter of a second.
///
/// The overall status is the worst check's; the exit status is 0 whatever the checks find.
/// Every check, its thresholds and their sources: docs/doctor.md. `dualperf run` keeps
/// a shorter run of the same checks in each run directory (doctor.json), and `dualperf
/// report` prints the warnings it holds.
#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:
  dualperf doctor
  dualperf doctor --json | jq '.checks[] | select(.status != \"ok\")'
  sudo dualperf doctor          # as the lab runs: with CAP_NET_ADMIN and CAP_NET_RAW

Checks, thresholds and sources: docs/doctor.md. The --json document: dualperf schema doctor.")]
pub(crate) struct DoctorArgs {
    /// Print the checks as JSON (`dualperf schema doctor`).
    #[arg(long)]
    json: bool,
    /// Read /proc and /sys under this directory instead of / (a test aid: a fake tree).
    #[arg(long, value_name = "DIR", hide = true)]
    root: Option<PathBuf>,
}

pub(crate) fn run(args: DoctorArgs) -> Result<()> {
    let host = match &args.root {
        Some(root) => {
            if !root.is_dir() {
                crate::usage!("--root {}: not a directory", root.display());
            }
            Host::at(root)
        }
        None => Host::this(),
    };
    let doc = examine(&host, &live::FULL);
    if args.json {
        return crate::out::print_json(&doc);
    }
    crate::out::print(text(&doc))
}

/// Every check of this host, briefly (about 0.1 s of sleeps and steal sample, taken side
/// by side; chronyc, when installed, may add to it): what `dualperf run` keeps in a run
/// directory and `compare` beside its results.
pub(crate) fn record() -> DoctorDoc {
    examine(&Host::this(), &live::FAST)
}

/// Reads `host`, measures within `budget`, and judges.
fn examine(host: &Host, budget: &Budget) -> DoctorDoc {
    let (live, steal) = live::measure(host, budget);
    let readings = Readings::read(host);
    judge(&readings, &live, &steal, netio::clock::wall_ns())
}

#[cfg(test)]
mod tests {
    use super::*;
    use lab::doctor::checks::{
        RECV_UDP_RCVBUF_BYTES, SEND_SPIN_NS, SEND_UDP_SNDBUF_BYTES, TCP_DATA_RCVBUF_BYTES,
    };
    use results::doctor::worst;

    #[test]
    fn the_constants_are_the_ones_dualperf_uses() {
        // Each threshold is a size or time dualperf itself uses: if the source changes,
        // the doctor must follow.
        let engine = include_str!("../send/engine.rs");
        assert!(engine.contains(&format!("const MAX_SPIN_NS: u64 = {};", "50_000")));
        assert_eq!(SEND_SPIN_NS, 50_000);
        let recv = include_str!("../recv/mod.rs");
        assert!(recv.contains("set_buffer_sizes(Some(4 << 20), Some(16 << 20))"));
        assert_eq!(
            (RECV_UDP_RCVBUF_BYTES, SEND_UDP_SNDBUF_BYTES),
            (16 << 20, 4 << 20)
        );
        let session = include_str!("../send/session.rs");
        assert!(session.contains("spec.window_bytes.map_or(4 << 20,"));
        let conn = include_str!("../recv/conn.rs");
        assert!(conn.contains("const DATA_RECV_BUFFER: usize = 4 << 20;"));
        assert_eq!(TCP_DATA_RCVBUF_BYTES, 4 << 20);
    }

    #[test]
    fn the_fast_record_of_this_host_holds_every_check() {
        let d = record();
        assert_eq!(d.checks.len(), 12);
        assert_eq!(d.figures.sleep_samples, live::FAST.sleep_samples);
        assert!(d.figures.steal_sample_ns >= 100_000_000);
        assert_eq!(d.status, worst(&d.checks));
    }
}
