//! The SQLite index of run directories, for queries across runs and plans.
//!
//! The run directories stay the record ([`crate::store`]); the index is derived from
//! them and can be rebuilt at any time: indexing a directory again replaces its rows,
//! so it is idempotent. `dualperf run` indexes its directory when it ends (interrupted
//! too); after a kill, `--resume` or `dualperf export DIR` brings the index up to date.
//!
//! ```sql
//! dirs(dir PRIMARY KEY, plan, description, quick, hostname, kernel, dualperf_version,
//!      indexed_unix_ns)
//! runs(dir, run_id, point, family, repetition, started_unix_ns, exit_code,
//!      protocol, size_bytes, throughput_bps, rtt_ns, owd_ns, delay_ns, jitter_ns,
//!      loss_pct, packets_sent, packets_received, argv; PRIMARY KEY (dir, run_id))
//! factors(dir, point, key, value; PRIMARY KEY (dir, point, key))
//! ```
//!
//! The metric columns are [`Metric::of`](results::metric::Metric::of) of the run's
//! report, in the stored units their names carry.

use std::path::{Path, PathBuf};

/// The parameters of [`Index::query`].
pub use rusqlite::ToSql;
use rusqlite::{params, Connection, OpenFlags};
use serde_json::Value;

use crate::rows::{rows_of, StoreRows};
use crate::store::{Store, StoreError};

/// The schema this build writes (`PRAGMA user_version`).
pub const SCHEMA_VERSION: i64 = 1;

/// The runs as `dualperf export` lists them, one [`ExportRow`] a row: its columns in
/// that type's order; the caller adds its `WHERE` and `ORDER BY` after `WHERE 1`.
pub const EXPORT_RUNS: &str = "SELECT d.plan, r.dir, r.run_id, r.point, r.family, r.repetition,
       r.started_unix_ns, r.protocol, r.size_bytes, r.throughput_bps, r.rtt_ns, r.owd_ns,
       r.delay_ns, r.jitter_ns, r.loss_pct, r.packets_sent, r.packets_received,
       (SELECT json_group_object(f.key, f.value) FROM factors f
         WHERE f.dir = r.dir AND f.point = r.point) AS factors
  FROM runs r JOIN dirs d USING (dir)";

/// One run of the index as `dualperf export --json` prints it (a row of
/// [`EXPORT_RUNS`], the factors read as an object). A metric the run lacks is null.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ExportRow {
    /// The plan's name (empty when its `resolved.json` did not read).
    pub plan: String,
    /// The run directory, absolute.
    pub dir: String,
    /// The run's id.
    pub run_id: String,
    /// Its point's id.
    pub point: String,
    /// IP version, 4 or 6.
    pub family: u8,
    /// Its repetition, from 0.
    pub repetition: u32,
    /// When it started, ns since the Unix epoch.
    pub started_unix_ns: i64,
    /// Its first flow's protocol, `udp` or `tcp`.
    pub protocol: Option<String>,
    /// Its first flow's payload size, bytes.
    pub size_bytes: Option<i64>,
    /// Throughput, bit/s.
    pub throughput_bps: Option<f64>,
    /// Round-trip time, ns.
    pub rtt_ns: Option<f64>,
    /// One-way delay, ns.
    pub owd_ns: Option<f64>,
    /// Delay, ns.
    pub delay_ns: Option<f64>,
    /// Jitter, ns.
    pub jitter_ns: Option<f64>,
    /// Loss, %.
    pub loss_pct: Option<f64>,
    /// Its first flow's packets sent.
    pub packets_sent: Option<i64>,
    /// Its first flow's packets received.
    pub packets_received: Option<i64>,
    /// Its point's factors, name to value; null when they did not read.
    pub factors: Option<std::collections::BTreeMap<String, String>>,
}

/// The index file `dualperf run` uses beside a run directory: in its parent.
pub fn default_path(run_dir: &Path) -> PathBuf {
    run_dir
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."))
        .join("index.sqlite")
}

/// Why the index cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum IndexError {
    /// SQLite refused.
    #[error("{path}: {source}")]
    Sqlite {
        /// The index file.
        path: PathBuf,
        /// What SQLite said.
        source: rusqlite::Error,
    },
    /// The file holds another schema.
    #[error("{path}: index schema {found} is not {SCHEMA_VERSION}, the one this dualperf writes (delete it and index the run directories again)")]
    Schema {
        /// The index file.
        path: PathBuf,
        /// Its `user_version`.
        found: i64,
    },
    /// A query that would write.
    #[error("only read-only queries are run (SELECT …); refused: {0}")]
    NotReadOnly(String),
    /// A run directory could not be read.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// An open index.
pub struct Index {
    conn: Connection,
    path: PathBuf,
}

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS dirs (
    dir TEXT PRIMARY KEY,
    plan TEXT NOT NULL,
    description TEXT NOT NULL,
    quick INTEGER NOT NULL,
    hostname TEXT,
    kernel TEXT,
    dualperf_version TEXT,
    indexed_unix_ns INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS runs (
    dir TEXT NOT NULL REFERENCES dirs(dir) ON DELETE CASCADE,
    run_id TEXT NOT NULL,
    point TEXT NOT NULL,
    family INTEGER NOT NULL,
    repetition INTEGER NOT NULL,
    started_unix_ns INTEGER NOT NULL,
    exit_code INTEGER NOT NULL,
    protocol TEXT,
    size_bytes INTEGER,
    throughput_bps REAL,
    rtt_ns REAL,
    owd_ns REAL,
    delay_ns REAL,
    jitter_ns REAL,
    loss_pct REAL,
    packets_sent INTEGER,
    packets_received INTEGER,
    argv TEXT NOT NULL,
    PRIMARY KEY (dir, run_id)
);
CREATE TABLE IF NOT EXISTS factors (
    dir TEXT NOT NULL REFERENCES dirs(dir) ON DELETE CASCADE,
    point TEXT NOT NULL,
    key TEXT NOT NULL,
    value TEXT NOT NULL,
    PRIMARY KEY (dir, point, key)
);
CREATE INDEX IF NOT EXISTS runs_point ON runs (point, family);
";

impl Index {
    /// Open (creating) the index at `path` for writing.
    pub fn open(path: &Path) -> Result<Self, IndexError> {
        let e = |source| IndexError::Sqlite {
            path: path.to_owned(),
            source,
        };
        let conn = Connection::open(path).map_err(e)?;
        // A writer waits for another (a second `dualperf run` beside this one).
        conn.busy_timeout(std::time::Duration::from_secs(10))
            .map_err(e)?;
        let found: i64 = conn
            .query_row("PRAGMA user_version", [], |r| r.get(0))
            .map_err(e)?;
        if found != 0 && found != SCHEMA_VERSION {
            return Err(IndexError::Schema {
                path: path.to_owned(),
                found,
            });
        }
        conn.execute_batch(SCHEMA).map_err(e)?;
        conn.execute_batch(&format!(
            "PRAGMA user_version = {SCHEMA_VERSION}; PRAGMA foreign_keys = ON;"
        ))
        .map_err(e)?;
        Ok(Self {
            conn,
            path: path.to_owned(),
        })
    }

    /// Open an existing index for reading only (queries cannot change it).
    pub fn open_read_only(path: &Path) -> Result<Self, IndexError> {
        let e = |source| IndexError::Sqlite {
            path: path.to_owned(),
            source,
        };
        let conn = Connection::open_with_flags(
            path,
            OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )
        .map_err(e)?;
        // Wait for a `dualperf run` that is indexing; attach no other database.
        conn.busy_timeout(std::time::Duration::from_secs(10))
            .map_err(e)?;
        conn.set_limit(rusqlite::limits::Limit::SQLITE_LIMIT_ATTACHED, 0)
            .map_err(e)?;
        let found: i64 = conn
            .query_row("PRAGMA user_version", [], |r| r.get(0))
            .map_err(e)?;
        if found != SCHEMA_VERSION {
            return Err(IndexError::Schema {
                path: path.to_owned(),
                found,
            });
        }
        Ok(Self {
            conn,
            path: path.to_owned(),
        })
    }

    fn err(&self) -> impl Fn(rusqlite::Error) -> IndexError + '_ {
        |source| IndexError::Sqlite {
            path: self.path.clone(),
            source,
        }
    }

    /// Index a whole run directory in one transaction: its plan, host and points'
    /// factors, then every finished run it holds (a failed run, kept as `runs/ID.failed`
    /// for its stderr, is not a result). What the index held of the directory is
    /// replaced, so indexing again is idempotent and a run file removed since is gone
    /// from the index; a reader sees the old rows or the new, never a mix. The directory
    /// is keyed by its canonical path, so one directory is one key however it was named.
    /// Returns that path and the number of runs.
    pub fn put_store(&mut self, store: &Store) -> Result<(PathBuf, usize), IndexError> {
        let StoreRows { dir, factors, runs } = rows_of(store)?;
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX));
        let key = dir.dir.clone();
        let path = self.path.clone();
        let err = |source| IndexError::Sqlite {
            path: path.clone(),
            source,
        };
        let tx = self.conn.transaction().map_err(err)?;
        // The cascade removes the directory's runs and factors with it.
        tx.execute("DELETE FROM dirs WHERE dir = ?1", [&key])
            .map_err(&err)?;
        tx.execute(
            "INSERT INTO dirs VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
            params![
                key,
                dir.plan,
                dir.description,
                dir.quick,
                dir.hostname,
                dir.kernel,
                dir.dualperf_version,
                now
            ],
        )
        .map_err(&err)?;
        for f in &factors {
            tx.execute(
                "INSERT OR REPLACE INTO factors VALUES (?1, ?2, ?3, ?4)",
                params![key, f.point, f.key, f.value],
            )
            .map_err(&err)?;
        }
        for (r, _) in &runs {
            tx.execute(
                "INSERT OR REPLACE INTO runs VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10,
                 ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18)",
                params![
                    key,
                    r.run_id,
                    r.point,
                    r.family,
                    r.repetition,
                    r.started_unix_ns,
                    r.exit_code,
                    r.protocol,
                    r.size_bytes,
                    r.throughput_bps,
                    r.rtt_ns,
                    r.owd_ns,
                    r.delay_ns,
                    r.jitter_ns,
                    r.loss_pct,
                    r.packets_sent,
                    r.packets_received,
                    r.argv,
                ],
            )
            .map_err(&err)?;
        }
        tx.commit().map_err(&err)?;
        Ok((PathBuf::from(key), runs.len()))
    }

    /// Indexed directories that no longer exist (moved or deleted).
    pub fn missing_dirs(&self) -> Result<Vec<String>, IndexError> {
        let (_, rows) = self.query("SELECT dir FROM dirs ORDER BY dir", &[])?;
        Ok(rows
            .into_iter()
            .filter_map(|r| r.first().and_then(Value::as_str).map(str::to_owned))
            .filter(|d| !Path::new(d).is_dir())
            .collect())
    }

    /// Forget the directories that no longer exist; returns how many.
    pub fn prune(&mut self) -> Result<usize, IndexError> {
        let gone = self.missing_dirs()?;
        let err = self.err();
        for d in &gone {
            self.conn
                .execute("DELETE FROM dirs WHERE dir = ?1", [d])
                .map_err(&err)?;
        }
        Ok(gone.len())
    }

    /// Run one query; every value as JSON (NULL as null, BLOBs as hex text).
    /// Returns the column names and the rows.
    pub fn query(
        &self,
        sql: &str,
        args: &[&dyn ToSql],
    ) -> Result<(Vec<String>, Vec<Vec<Value>>), IndexError> {
        let err = self.err();
        let mut stmt = self.conn.prepare(sql).map_err(&err)?;
        // A read-only connection still lets `VACUUM INTO 'file'` write a new file:
        // only statements that change nothing are run.
        if !stmt.readonly() {
            return Err(IndexError::NotReadOnly(sql.chars().take(80).collect()));
        }
        let columns: Vec<String> = stmt
            .column_names()
            .iter()
            .map(|c| (*c).to_owned())
            .collect();
        let n = columns.len();
        let rows = stmt
            .query_map(args, |row| {
                (0..n)
                    .map(|i| {
                        use rusqlite::types::ValueRef;
                        Ok(match row.get_ref(i)? {
                            ValueRef::Null => Value::Null,
                            ValueRef::Integer(v) => Value::from(v),
                            ValueRef::Real(v) => {
                                serde_json::Number::from_f64(v).map_or(Value::Null, Value::Number)
                            }
                            ValueRef::Text(t) => Value::from(String::from_utf8_lossy(t)),
                            ValueRef::Blob(b) => Value::from(
                                b.iter().map(|x| format!("{x:02x}")).collect::<String>(),
                            ),
                        })
                    })
                    .collect()
            })
            .map_err(&err)?
            .collect::<Result<Vec<Vec<Value>>, _>>()
            .map_err(&err)?;
        Ok((columns, rows))
    }

    /// The runs `dualperf export` lists, as rows of [`EXPORT_RUNS`]: those of the run
    /// directories `dirs` (absolute, as indexed; every one when empty) and of the plan
    /// named `plan` (any when `None`), by plan, directory, start and id.
    pub fn export_runs(
        &self,
        dirs: &[String],
        plan: Option<&str>,
    ) -> Result<(Vec<String>, Vec<Vec<Value>>), IndexError> {
        let mut sql = format!("{EXPORT_RUNS} WHERE 1");
        let mut params: Vec<&dyn ToSql> = Vec::new();
        if !dirs.is_empty() {
            let marks = vec!["?"; dirs.len()].join(",");
            sql.push_str(&format!(" AND r.dir IN ({marks})"));
            for d in dirs {
                params.push(d);
            }
        }
        if let Some(p) = &plan {
            sql.push_str(" AND d.plan = ?");
            params.push(p);
        }
        sql.push_str(" ORDER BY d.plan, r.dir, r.started_unix_ns, r.run_id");
        self.query(&sql, &params)
    }
}

/// Rows as objects, each column's name to its value (`dualperf export --sql --json`).
pub fn objects(columns: &[String], rows: Vec<Vec<Value>>) -> Vec<serde_json::Map<String, Value>> {
    rows.into_iter()
        .map(|r| columns.iter().cloned().zip(r).collect())
        .collect()
}

/// The rows of [`Index::export_runs`] as `dualperf export --json`'s documents: the
/// factors, JSON text in SQLite, read as an object (null when they do not read).
pub fn export_rows(
    columns: &[String],
    mut rows: Vec<Vec<Value>>,
) -> Result<Vec<ExportRow>, serde_json::Error> {
    if let Some(i) = columns.iter().position(|c| c == "factors") {
        for r in &mut rows {
            if let Value::String(s) = &r[i] {
                r[i] = serde_json::from_str(s).unwrap_or(Value::Null);
            }
        }
    }
    objects(columns, rows)
        .into_iter()
        .map(|o| serde_json::from_value(Value::Object(o)))
        .collect()
}

/// Rows as CSV (RFC 4180) under a header row of their columns.
pub fn csv(columns: &[String], rows: &[Vec<Value>]) -> String {
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
    out
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
    use crate::plan::Run;
    use crate::store::{HostInfo, Resolved, RunRecord};

    #[test]
    fn the_schema_in_the_docs_is_the_one_the_index_creates() {
        let doc = std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/output.md"),
        )
        .unwrap();
        let after = doc
            .split_once("The index's tables, for `--sql`")
            .expect("the section in docs/output.md")
            .1;
        let block = after
            .split_once("```sql\n")
            .and_then(|(_, rest)| rest.split_once("```"))
            .expect("a sql block")
            .0;
        assert_eq!(
            block.trim(),
            SCHEMA.trim(),
            "docs/output.md's copy of the index schema"
        );
    }

    fn record(id: &str, family: u8, bitrate: f64, code: i32) -> RunRecord {
        RunRecord {
            format_version: crate::store::FORMAT_VERSION,
            run: Run {
                id: id.into(),
                point: 0,
                family,
                repetition: 1,
            },
            point: "size=64".into(),
            argv: vec!["send".into(), "::1".into()],
            started_unix_ns: 1_795_000_000_000_000_000,
            exit_code: code,
            stderr: String::new(),
            background: Vec::new(),
            routers: std::collections::BTreeMap::new(),
            router_stalls: std::collections::BTreeMap::new(),
            report: Some(crate::testdata::report(serde_json::json!({"flows": [{
                "spec": {"protocol": "udp", "meter": "owd", "size_bytes": 64},
                "sent": {"packets": 1000},
                "received": {"packets": 990, "bitrate_bps": bitrate,
                             "delay": {"mean_ns": 12000.0},
                             "jitter": {"ditg_ns": 800.0},
                             "loss": {"loss_pct": 1.0}},
                "rtt": null
            }]}))),
            attempts: 1,
        }
    }

    #[test]
    fn a_directory_indexed_twice_is_one_set_of_rows() {
        let tmp = std::env::temp_dir().join(format!("dualperf-index-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&tmp);
        let store = Store::create(&tmp.join("run-a")).unwrap();
        let plan = crate::plan::Plan::parse(
            "version = 1\nname = \"tiny\"\ndescription = \"d\"\nduration = \"1s\"\n\n[flow]\nudp = true\n\n[factors]\nsize = [64]\n",
            true,
        )
        .unwrap();
        assert_eq!(plan.points[0].id, "size=64");
        store
            .write_json("resolved.json", &Resolved::new(&plan, true))
            .unwrap();
        store
            .write_json(
                "host.json",
                &HostInfo {
                    format_version: crate::store::FORMAT_VERSION,
                    dualperf: "0.1.0".into(),
                    kernel: Some("6.1".into()),
                    hostname: None,
                    cpu: None,
                    cpus: None,
                    sysctls: Default::default(),
                    qdisc_lo: None,
                    target: "loopback".into(),
                },
            )
            .unwrap();
        store.put_run(&record("r4", 4, 5.0e6, 0)).unwrap();
        store.put_run(&record("r6", 6, 4.9e6, 0)).unwrap();
        store.put_run(&record("r6c", 6, 4.8e6, 0)).unwrap();
        store.put_failed_run(&record("r6b", 6, 0.0, 1)).unwrap();
        let path = default_path(store.dir());
        assert_eq!(path, tmp.join("index.sqlite"));
        let mut index = Index::open(&path).unwrap();
        assert_eq!(index.put_store(&store).unwrap().1, 3);
        // A run file gone since (and the directory named another way) leaves no row.
        std::fs::remove_file(store.dir().join("runs/r6c.json")).unwrap();
        let other_name = Store::open(&tmp.join("run-a/../run-a")).unwrap();
        for s in [&store, &other_name] {
            let (_, n) = index.put_store(s).unwrap();
            assert_eq!(n, 2);
        }
        let index = Index::open_read_only(&path).unwrap();
        // export's run list, whole and filtered, and as its documents.
        let (columns, all) = index.export_runs(&[], None).unwrap();
        assert_eq!(columns.len(), 18);
        let dir = all[0][1].as_str().unwrap().to_owned();
        assert_eq!(
            index
                .export_runs(std::slice::from_ref(&dir), Some("tiny"))
                .unwrap()
                .1,
            all
        );
        assert!(index.export_runs(&[], Some("other")).unwrap().1.is_empty());
        assert!(index
            .export_runs(&["/nowhere".into()], None)
            .unwrap()
            .1
            .is_empty());
        let runs = export_rows(&columns, all.clone()).unwrap();
        let brief: Vec<_> = runs
            .iter()
            .map(|r| (r.run_id.as_str(), r.family, r.throughput_bps, r.dir == dir))
            .collect();
        assert_eq!(
            brief,
            [("r4", 4, Some(5.0e6), true), ("r6", 6, Some(4.9e6), true)]
        );
        let size = std::collections::BTreeMap::from([("size".to_owned(), "64".to_owned())]);
        assert_eq!(runs[0].factors, Some(size));
        // Unconverted, the factors are JSON text, as CSV and --sql give them.
        let factors = &objects(&columns, all)[0]["factors"];
        assert_eq!(factors, &Value::from("{\"size\":\"64\"}"));
        let (cols, rows) = index
            .query(
                "SELECT family, throughput_bps, owd_ns, rtt_ns, delay_ns, jitter_ns, loss_pct,
                        packets_sent, packets_received, exit_code, d.plan, f.value
                 FROM runs JOIN dirs d USING (dir) JOIN factors f USING (dir, point)
                 WHERE f.key = 'size' ORDER BY run_id",
                &[],
            )
            .unwrap();
        assert_eq!(cols[0], "family");
        assert_eq!(rows.len(), 2, "indexed twice, stored once: {rows:?}");
        assert_eq!(
            rows[0],
            serde_json::json!([
                4, 5.0e6, 12000.0, null, 12000.0, 800.0, 1.0, 1000, 990, 0, "tiny", "64"
            ])
            .as_array()
            .unwrap()
            .clone()
        );
        assert_eq!(rows[1][0], 6);
        let (_, v) = index
            .query("SELECT dualperf_version, kernel, count(*) FROM dirs", &[])
            .unwrap();
        assert_eq!(
            v[0],
            serde_json::json!(["0.1.0", "6.1", 1])
                .as_array()
                .unwrap()
                .clone()
        );
        // Read-only means read-only, VACUUM INTO (which writes a new file) included.
        assert!(index.query("DELETE FROM runs", &[]).is_err());
        let copy = tmp.join("copy.sqlite");
        let e = index
            .query(&format!("VACUUM INTO '{}'", copy.display()), &[])
            .unwrap_err();
        assert!(e.to_string().contains("only read-only"), "{e}");
        assert!(!copy.exists());
        drop(index);
        // A directory moved away is reported, and pruned on request.
        let mut index = Index::open(&path).unwrap();
        assert!(index.missing_dirs().unwrap().is_empty());
        std::fs::rename(tmp.join("run-a"), tmp.join("run-b")).unwrap();
        assert_eq!(index.missing_dirs().unwrap().len(), 1);
        assert_eq!(index.prune().unwrap(), 1);
        let (_, n) = index.query("SELECT count(*) FROM runs", &[]).unwrap();
        assert_eq!(n[0][0], 0, "the cascade took the runs");
        drop(index);
        // Another schema is refused with what to do.
        let conn = Connection::open(&path).unwrap();
        conn.execute_batch("PRAGMA user_version = 7").unwrap();
        drop(conn);
        let e = Index::open(&path).err().unwrap().to_string();
        assert!(e.contains("schema 7"), "{e}");
        std::fs::remove_dir_all(&tmp).unwrap();
    }

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
        let columns = ["family".to_owned(), "note".to_owned()];
        let rows = [
            vec![Value::from(4), Value::from("a,b")],
            vec![Value::from(6), Value::Null],
        ];
        assert_eq!(csv(&columns, &rows), "family,note\n4,\"a,b\"\n6,\n");
        assert_eq!(csv(&columns, &[]), "family,note\n");
    }
}
