//! Writing results to stdout. A closed stdout (`dualperf … | head`) ends the program
//! quietly with exit code 0, as ripgrep does; a broken pipe anywhere else (a socket) is a
//! real error and is reported.

use std::io::Write;

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
