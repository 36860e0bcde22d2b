//! Why a lab command failed ([`LabError`]), and running one of the commands a lab is
//! made with (`ip`, `nft`, `sysctl`) as a process.

use std::ffi::OsStr;
use std::path::PathBuf;
use std::process::{Command, Stdio};

/// Why a lab command failed.
#[derive(Debug, thiserror::Error)]
pub enum LabError {
    /// A command failed.
    #[error("{command}: {message}")]
    Command {
        /// The command line.
        command: String,
        /// What it said, or why it did not run.
        message: String,
    },
    /// The state directory.
    #[error("{path}: {source}")]
    Io {
        /// Where.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// A router did not start.
    #[error("router {node} did not start: {log}")]
    Router {
        /// Which.
        node: String,
        /// Its log.
        log: String,
    },
    /// A daemon a node runs (TAYGA) did not start.
    #[error("{what} did not start: {log}")]
    Daemon {
        /// Which, and on which node.
        what: String,
        /// Its log.
        log: String,
    },
    /// No such lab or node.
    #[error("{0}")]
    NotFound(String),
    /// `up` found a lab of this name already there, and left it as it was.
    #[error(
        "lab '{name}' already exists ({found}); dualperf leaves it as it is: \
         `dualperf lab down {name}` removes it"
    )]
    Exists {
        /// The lab's name.
        name: String,
        /// What is there: its namespaces, its state file.
        found: String,
    },
    /// No lab of this name is up.
    #[error("no lab '{name}' is up; {}", labs_up(.up))]
    NoSuchLab {
        /// The name asked for.
        name: String,
        /// The labs that are up ([`crate::netlab::labs`]).
        up: Vec<String>,
    },
    /// The machine lacks something the lab needs (a tool, a privilege, a kernel
    /// feature), found by [`crate::netlab::preflight`] before anything was made.
    #[error("the lab needs {need}: {fix}")]
    Preflight {
        /// What is missing and why, e.g. "iproute2's ip, which is not in PATH".
        need: String,
        /// The command or step that provides it.
        fix: String,
    },
}

/// [`LabError::NoSuchLab`]'s list of the labs that are up.
fn labs_up(up: &[String]) -> String {
    match up {
        [] => "no lab is up here".to_owned(),
        [one] => format!("the lab up here is '{one}'"),
        _ => format!(
            "the labs up here are {}",
            up.iter()
                .map(|n| format!("'{n}'"))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

/// Run `args` (a program, then its arguments) to its end: its stdout, or what it said
/// on stderr when it failed.
pub(crate) fn run<S: AsRef<OsStr>>(args: &[S]) -> Result<String, LabError> {
    let command = || {
        args.iter()
            .map(|a| a.as_ref().to_string_lossy())
            .collect::<Vec<_>>()
            .join(" ")
    };
    let out = Command::new(&args[0])
        .args(&args[1..])
        .stdin(Stdio::null())
        .output()
        .map_err(|e| LabError::Command {
            command: command(),
            message: match (e.kind(), args[0].as_ref().to_string_lossy()) {
                (std::io::ErrorKind::NotFound, p) if !p.contains('/') => {
                    format!("{p} is not in PATH")
                }
                _ => e.to_string(),
            },
        })?;
    if !out.status.success() {
        let said = String::from_utf8_lossy(&out.stderr).trim().to_owned();
        return Err(LabError::Command {
            command: command(),
            message: if said.is_empty() {
                out.status.to_string()
            } else {
                said
            },
        });
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}
