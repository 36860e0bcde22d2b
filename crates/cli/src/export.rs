//! `dualperf export`: runs from the SQLite index as CSV or JSON, one row per run, or
//! the answer to any read-only SQL query across runs and plans.

use std::path::PathBuf;

use anyhow::{Context, Result};
use lab::index::{default_path, Index};
use lab::pgstore::PgStore;
use lab::store::Store;

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
    #[arg(long, conflicts_with = "store")]
    prune: bool,
    /// Read (and store the named run directories into) a PostgreSQL store instead of
    /// the SQLite index: postgresql://USER@HOST:PORT/DB, no TLS. The same rows as from
    /// the index; --sql runs in a read-only transaction over its tables dirs, runs
    /// (with dst_addr and record, the whole run file) and factors (docs/output.md).
    #[arg(
        long,
        value_name = "URL",
        env = "DUALPERF_STORE",
        hide_env_values = true,
        conflicts_with = "index"
    )]
    store: Option<String>,
}

/// This host's name, the key a store gives the directories it writes.
pub(crate) fn host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_owned())
        .ok()
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "localhost".into())
}

/// Store run directory `store` in the PostgreSQL store at `url`; its runs.
pub(crate) fn store_dir(url: &str, store: &Store) -> Result<usize> {
    let mut pg = PgStore::connect(url).context("cannot open the PostgreSQL store")?;
    Ok(pg.put_store(&host_name(), store)?.1)
}

/// `export --store`: from PostgreSQL, as [`run`] from the index.
fn run_store(args: &ExportArgs, url: &str) -> Result<()> {
    let mut pg = PgStore::connect(url).context("cannot open the PostgreSQL store")?;
    let mut dirs = Vec::new();
    for d in &args.dirs {
        let store = match Store::open(d) {
            Ok(s) => s,
            Err(e) => usage!("{e}"),
        };
        let (abs, n) = pg.put_store(&host_name(), &store)?;
        crate::out::note!("dualperf export: stored {n} runs of {}", d.display());
        dirs.push(abs.to_string_lossy().into_owned());
    }
    let (columns, rows) = match &args.sql {
        Some(sql) => pg.query(sql)?,
        None => (
            lab::pgstore::EXPORT_COLUMNS.map(String::from).to_vec(),
            pg.export_runs(&dirs, args.plan.as_deref())?,
        ),
    };
    print_rows(args, &columns, rows)
}

/// The rows as `--json` or CSV.
fn print_rows(
    args: &ExportArgs,
    columns: &[String],
    rows: Vec<Vec<serde_json::Value>>,
) -> Result<()> {
    if args.json {
        if args.sql.is_some() {
            // A query's own columns: no type to hold them to.
            return crate::out::print_json(&lab::index::objects(columns, rows));
        }
        let runs = lab::index::export_rows(columns, rows)
            .context("an indexed run does not read as export's row")?;
        // Keys in name order, as the document has always had them.
        return crate::out::print_json(&crate::out::sorted_json(&runs)?);
    }
    crate::out::print(lab::index::csv(columns, &rows))
}

pub(crate) fn run(args: ExportArgs) -> Result<()> {
    if let Some(url) = &args.store {
        return run_store(&args, url);
    }
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
    let (columns, rows) = match &args.sql {
        Some(sql) => index.query(sql, &[])?,
        None => index.export_runs(&dirs, args.plan.as_deref())?,
    };
    print_rows(&args, &columns, rows)
}
