//! `rfc2544`'s output: the run directory (`rfc2544.json`, `report.txt`, rewritten
//! after each completed test) and the tables, the same on stdout, in report.txt and
//! from `dualperf report DIR`: one renderer, `report::rfc2544`. A figure at the
//! tester's ceiling is printed "≥ N".

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use results::bmwg::Rfc2544Doc;

use super::Config;

/// `--dir`, or results/rfc2544-UNIXTIME (as `run` and `compare` name theirs), created.
pub(crate) fn run_dir(cfg: &Config) -> Result<PathBuf> {
    let dir = cfg.dir.clone().unwrap_or_else(|| {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        PathBuf::from("results").join(format!("rfc2544-{now}"))
    });
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    Ok(dir)
}

/// Writes `d` into `dir`: rfc2544.json and report.txt, each through a temporary file.
pub(crate) fn write(dir: &Path, d: &Rfc2544Doc) -> Result<()> {
    let json = serde_json::to_string_pretty(&crate::out::sorted_json(d)?)? + "\n";
    for (name, text) in [("rfc2544.json", json), ("report.txt", text(d))] {
        let tmp = dir.join(format!("{name}.tmp"));
        std::fs::write(&tmp, text).with_context(|| format!("writing {}", tmp.display()))?;
        std::fs::rename(&tmp, dir.join(name))
            .with_context(|| format!("writing {}", dir.join(name).display()))?;
    }
    Ok(())
}

/// Prints `d`: the document with `--json`, else the tables.
pub(crate) fn show(cfg: &Config, d: &Rfc2544Doc) -> Result<()> {
    if cfg.json {
        return crate::out::print_json(&crate::out::sorted_json(d)?);
    }
    crate::out::print(text(d))
}

/// The tables, as `dualperf report DIR` prints them (`report::rfc2544`).
fn text(d: &Rfc2544Doc) -> String {
    report::rfc2544::text(d, false)
}
