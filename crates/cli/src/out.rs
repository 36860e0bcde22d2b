//! Writing results to stdout. A closed stdout (`dualperf … | head`) ends the program
//! quietly with exit code 0, as ripgrep does; a broken pipe anywhere else (a socket) is a
//! real error and is reported.
//!
//! Messages on stderr are of two kinds: warnings and errors, always written, and notes
//! and progress (what is being built, how far a run is), which `--quiet` silences.
//! Progress bars redraw a line, so they appear only on a terminal (not with
//! `TERM=dumb`). dualperf writes no colour itself; clap's help and error colours follow
//! the terminal and `NO_COLOR` (<https://no-color.org>).

use std::io::{IsTerminal, Write};
use std::sync::atomic::{AtomicBool, Ordering};

use anyhow::Result;

/// stdout was closed by the reader.
#[derive(Debug)]
pub(crate) struct StdoutClosed;

impl std::fmt::Display for StdoutClosed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("stdout closed")
    }
}

impl std::error::Error for StdoutClosed {}

/// Whether `--quiet` was given.
static QUIET: AtomicBool = AtomicBool::new(false);

/// Silence notes and progress for the rest of the program (`--quiet`).
pub(crate) fn set_quiet(quiet: bool) {
    QUIET.store(quiet, Ordering::Relaxed);
}

/// Whether notes and progress are silenced.
pub(crate) fn quiet() -> bool {
    QUIET.load(Ordering::Relaxed)
}

/// Whether a progress line may be drawn on stderr: not under `--quiet`, and only on a
/// terminal that understands `\r` redraws.
pub(crate) fn progress_on_stderr() -> bool {
    !quiet()
        && std::io::stderr().is_terminal()
        && std::env::var_os("TERM").is_none_or(|t| t != "dumb")
}

/// Write a note to stderr (`eprintln!` arguments) unless `--quiet` was given. Warnings
/// and errors do not go through here: they are always written.
macro_rules! note {
    ($($t:tt)*) => {
        if !$crate::out::quiet() {
            eprintln!($($t)*);
        }
    };
}
pub(crate) use note;

/// Write `text` to stdout and flush.
pub(crate) fn print(text: impl AsRef<str>) -> Result<()> {
    let mut out = std::io::stdout().lock();
    out.write_all(text.as_ref().as_bytes())
        .and_then(|()| out.flush())
        .map_err(|e| {
            if e.kind() == std::io::ErrorKind::BrokenPipe {
                anyhow::Error::new(StdoutClosed)
            } else {
                anyhow::Error::new(e).context("writing to stdout")
            }
        })
}

/// `value` as a JSON value whose objects list their keys sorted at every level, as
/// dualperf's files and documents always have: a struct serializes its fields in
/// declaration order, and serde_json's map (without `preserve_order`) sorts them.
pub(crate) fn sorted_json(value: &impl serde::Serialize) -> serde_json::Result<serde_json::Value> {
    serde_json::to_value(value)
}

/// Write `value` as one line of JSON (JSON Lines).
pub(crate) fn print_json_line(value: &impl serde::Serialize) -> Result<()> {
    print(serde_json::to_string(value)? + "\n")
}

/// Write `value` as pretty JSON and a newline.
pub(crate) fn print_json(value: &impl serde::Serialize) -> Result<()> {
    print(serde_json::to_string_pretty(value)? + "\n")
}
