//! `dualperf export`: runs from the SQLite index as CSV or JSON, one row per run, or
//! the answer to any read-only SQL query across runs and plans.

use std::fmt::Write;
use std::path::PathBuf;

use anyhow::{Context, Result};
use lab::index::{default_path, Index, ToSql};
use lab::store::Store;
use serde_json::Value;

use crate::usage;

/// Export runs from the results index (SQLite) as CSV or JSON: one row per run with its
/// plan, point, family, repetition, factors and metrics in stored units (throughput_bps,
/// rtt_ns, owd_ns, delay_ns, jitter_ns, loss_pct).
///
/// `dualperf run` indexes every run directory into index.sqlite beside it (in its parent
/// directory). Naming run directories here indexes them again first (idempotent: a
/// directory is replaced, never doubled) and exports only them; with none, everything
/// the index holds is exported. `--sql` runs only statements that change nothing. The tables are dirs, runs and factors;
/// their schema is in docs/output.md ("dualperf export").
#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:
  dualperf export results/sharma2013-1795360000 > runs.csv
  dualperf export --json --plan sharma2013
  dualperf export --sql \"SELECT family, avg(throughput_bps) FROM runs WHERE protocol = 'udp' GROUP BY family\"")]
pub(crate) struct ExportArgs {
    /// Run directories to (re)index and export.
    dirs: Vec<PathBuf>,
    /// The index (default: index.sqlite beside the first run directory, else
    /// results/index.sqlite).
    #[arg(long, value_name = "FILE")]
    index: Option<PathBuf>,
    /// Only the runs of this plan (its name).
    #[arg(long, value_name = "NAME", conflicts_with = "sql")]
    plan: Option<String>,
    /// JSON: an array of objects (default: CSV with a header row).
    #[arg(long)]
    json: bool,
    /// Any read-only SQL query over the index instead of the run list.
    #[arg(long, value_name = "QUERY")]
    sql: Option<String>,
    /// First forget the indexed run directories that no longer exist.
    #[arg(long)]
    prune: bool,
}

pub(crate) fn run(args: ExportArgs) -> Result<()> {
    let path = args
        .index
        .clone()
        .unwrap_or_else(|| match args.dirs.first() {
            Some(d) => default_path(d),
            None => PathBuf::from("results/index.sqlite"),
        });
    let mut dirs = Vec::new();
    if args.prune {
        if !path.is_file() {
            usage!("no index at {}", path.display());
        }
        let n = Index::open(&path)?.prune()?;
        crate::out::note!("dualperf export: forgot {n} run directories that no longer exist");
    }
    if !args.dirs.is_empty() {
        let mut index = Index::open(&path)?;
        for d in &args.dirs {
            let store = match Store::open(d) {
                Ok(s) => s,
                Err(e) => usage!("{e}"),
            };
            let (abs, n) = index.put_store(&store)?;
            crate::out::note!("dualperf export: indexed {n} runs of {}", d.display());
            dirs.push(abs.to_string_lossy().into_owned());
        }
    } else if !path.is_file() {
        usage!(
            "no index at {}: name run directories to index them, or give --index FILE",
            path.display()
        );
    }
    let index = Index::open_read_only(&path)?;
    if args.dirs.is_empty() && args.sql.is_none() {
        let gone = index.missing_dirs()?;
        if !gone.is_empty() {
            eprintln!(
                "dualperf export: note: {} indexed run directories no longer exist (their rows are exported; --prune forgets them): {}",
                gone.len(),
                gone.join(", ")
            );
        }
    }
    let (columns, mut rows) = match &args.sql {
        Some(sql) => index.query(sql, &[])?,
        None => {
            let mut sql = format!("{} WHERE 1", lab::index::EXPORT_RUNS);
            let mut params: Vec<&dyn ToSql> = Vec::new();
            if !dirs.is_empty() {
                let marks = vec!["?"; dirs.len()].join(",");
                let _ = write!(sql, " AND r.dir IN ({marks})");
                for d in &dirs {
                    params.push(d);
                }
            }
            if let Some(p) = &args.plan {
                sql.push_str(" AND d.plan = ?");
                params.push(p);
            }
            sql.push_str(" ORDER BY d.plan, r.dir, r.started_unix_ns, r.run_id");
            index.query(&sql, &params)?
        }
    };
    // The factors column is JSON text from SQLite: an object in JSON output.
    if let Some(i) = columns.iter().position(|c| c == "factors") {
        if args.json && args.sql.is_none() {
            for r in &mut rows {
                if let Value::String(s) = &r[i] {
                    r[i] = serde_json::from_str(s).unwrap_or(Value::Null);
                }
            }
        }
    }
    if args.json {
        let objects: Vec<serde_json::Map<String, Value>> = rows
            .into_iter()
            .map(|r| columns.iter().cloned().zip(r).collect())
            .collect();
        if args.sql.is_some() {
            // A query's own columns: no type to hold them to.
            return crate::out::print_json(&objects);
        }
        let runs: Vec<lab::index::ExportRow> = objects
            .into_iter()
            .map(|o| serde_json::from_value(Value::Object(o)))
            .collect::<Result<_, _>>()
            .context("an indexed run does not read as export's row")?;
        // Keys in name order, as the document has always had them.
        return crate::out::print_json(&crate::out::sorted_json(&runs)?);
    }
    let mut out = columns
        .iter()
        .map(|c| csv_cell(&Value::from(c.as_str())))
        .collect::<Vec<_>>()
        .join(",");
    out.push('\n');
    for r in rows {
        out.push_str(&r.iter().map(csv_cell).collect::<Vec<_>>().join(","));
        out.push('\n');
    }
    crate::out::print(out)
}

/// RFC 4180: a text with a comma, quote or line break is quoted, quotes doubled; NULL is
/// an empty cell.
fn csv_cell(v: &Value) -> String {
    match v {
        Value::Null => String::new(),
        Value::String(s) if s.contains([',', '"', '\n', '\r']) => {
            format!("\"{}\"", s.replace('"', "\"\""))
        }
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_cells_quote_what_needs_it() {
        assert_eq!(csv_cell(&Value::Null), "");
        assert_eq!(csv_cell(&Value::from(4)), "4");
        assert_eq!(csv_cell(&Value::from(1.5)), "1.5");
        assert_eq!(csv_cell(&Value::from("size=64")), "size=64");
        assert_eq!(csv_cell(&Value::from("a,b")), "\"a,b\"");
        assert_eq!(csv_cell(&Value::from("say \"hi\"")), "\"say \"\"hi\"\"\"");
        assert_eq!(
            csv_cell(&Value::from("{\"size\":\"64\"}")),
            "\"{\"\"size\"\":\"\"64\"\"}\""
        );
    }
}
