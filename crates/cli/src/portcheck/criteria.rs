//! `dualperf portcheck --criteria`: the eight criteria of Bouras et al. (H.323 study) for
//! an application ported to IPv6, as a checklist, judged by `port::criteria` from the
//! sources (if paths are given) and from a program under test (started after `--`, or
//! `--pid`). Here: starting the program, and probing its TCP listeners over loopback.

use std::collections::BTreeSet;
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, Result};
use port::criteria::{self, Probe, Runtime};
use port::walk::{scan_paths, Options};

use super::PortcheckArgs;

pub(super) fn run(args: &PortcheckArgs, opts: &Options) -> Result<()> {
    let scan = (!args.paths.is_empty()).then(|| scan_paths(&args.paths, opts));
    let runtime = if let Some(pid) = args.pid {
        Some(inspect(pid, Vec::new(), None)?)
    } else if !args.command.is_empty() {
        Some(run_and_inspect(&args.command, args.settle)?)
    } else {
        None
    };
    if scan.is_none() && runtime.is_none() {
        crate::usage!(
            "--criteria needs sources (PATH…) or a program under test (after `--`, or --pid)"
        );
    }
    let checks = criteria::judge(scan.as_ref(), runtime.as_ref());
    if args.json || args.format == super::Format::Json {
        return crate::out::print_json(&criteria::json(&checks, runtime.as_ref(), scan.as_ref()));
    }
    crate::out::print(criteria::text(&checks, runtime.as_ref()))
}

fn run_and_inspect(command: &[String], settle: Duration) -> Result<Runtime> {
    let baseline: BTreeSet<String> = criteria::flow_labels(Path::new("/proc/self"))
        .into_iter()
        .map(|(label, _)| label)
        .collect();
    let mut child = std::process::Command::new(&command[0])
        .args(&command[1..])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .with_context(|| format!("starting {}", command[0]))?;
    std::thread::sleep(settle);
    let result = match child.try_wait()? {
        Some(status) => Ok(Runtime {
            pid: child.id(),
            command: command.to_vec(),
            exited: Some(format!("exited before inspection ({status})")),
            ..Runtime::default()
        }),
        None => inspect(child.id(), command.to_vec(), Some(&baseline)),
    };
    let _ = child.kill();
    let _ = child.wait();
    result
}

/// What is seen of process `pid`: its sockets, a TCP connection to each of its loopback
/// listeners, its flow labels (`baseline`: those leased before it started).
fn inspect(pid: u32, command: Vec<String>, baseline: Option<&BTreeSet<String>>) -> Result<Runtime> {
    let proc = PathBuf::from(format!("/proc/{pid}"));
    let sockets = criteria::sockets_of(&proc).with_context(|| format!("reading /proc/{pid}/fd"))?;
    let probes = sockets
        .iter()
        .flat_map(criteria::probe_targets)
        .map(|dest| Probe {
            port: dest.port(),
            dest,
            accepted: TcpStream::connect_timeout(&dest, Duration::from_secs(1)).is_ok(),
        })
        .collect();
    Ok(Runtime {
        pid,
        command,
        sockets,
        probes,
        flow_labels: criteria::leased_labels(&proc, pid, baseline),
        exited: None,
    })
}
