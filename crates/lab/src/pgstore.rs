//! The PostgreSQL store: run directories' rows and their typed records, for a fleet's
//! many writers and its queries across hosts (`--store postgresql://…`).
//!
//! The run directories stay the record, as with the SQLite index ([`crate::index`]):
//! storing a directory again replaces its rows, in one transaction, so it is
//! idempotent. Each run's row carries its IP version and the address it was sent to,
//! and `record` holds the whole [`RunRecord`] (the run file's JSON).
//!
//! ```sql
//! dirs(host, dir, plan, description, quick, hostname, kernel, dualperf_version,
//!      stored_unix_ns; PRIMARY KEY (host, dir))
//! factors(host, dir, point, key, value; PRIMARY KEY (host, dir, point, key))
//! runs(host, dir, run_id, point, family, repetition, started_unix_ns, started_at,
//!      exit_code, dst_addr, protocol, size_bytes, throughput_bps, rtt_ns, owd_ns,
//!      delay_ns, jitter_ns, loss_pct, packets_sent, packets_received, argv, record;
//!      PRIMARY KEY (host, dir, run_id, started_at)) PARTITION BY RANGE (started_at)
//! ```
//!
//! `host` is the writer's host name: two hosts' directories of one path are two keys.
//! `runs` is cut into one partition a month (`runs_YYYY_MM`, made as rows come): a
//! fleet's runs grow by the pair and the hour, and a month is dropped or searched whole.
//!
//! Migrations are numbered ([`MIGRATIONS`]); `dualperf_schema` lists those applied. A
//! writer applies what is missing under an advisory lock, so many writers that start
//! at once apply each migration once.

use std::collections::BTreeMap;
use std::path::PathBuf;

use postgres::types::{ToSql, Type};
use postgres::{Client, NoTls, Row};
use serde_json::Value;

pub use crate::pgschema::MIGRATIONS;
use crate::rows::{rows_of, StoreRows};
use crate::store::{Store, StoreError};

/// The environment variable that names the store when `--store` does not.
pub const STORE_ENV: &str = "DUALPERF_STORE";

/// The advisory lock key under which migrations run ("dualperf" in ASCII, 8 bytes).
const MIGRATION_LOCK: i64 = 0x6475_616c_7065_7266;

/// The columns of [`PgStore::export_runs`]' rows, as `dualperf export` prints them.
pub const EXPORT_COLUMNS: [&str; 18] = [
    "plan",
    "dir",
    "run_id",
    "point",
    "family",
    "repetition",
    "started_unix_ns",
    "protocol",
    "size_bytes",
    "throughput_bps",
    "rtt_ns",
    "owd_ns",
    "delay_ns",
    "jitter_ns",
    "loss_pct",
    "packets_sent",
    "packets_received",
    "factors",
];

/// What went wrong with the store.
#[derive(Debug, thiserror::Error)]
pub enum PgError {
    /// The server or the connection.
    #[error("PostgreSQL: {0}")]
    Postgres(#[from] postgres::Error),
    /// The store holds a newer schema than this build knows.
    #[error("the store's schema is version {found}, newer than this dualperf's {known}: upgrade dualperf")]
    Newer {
        /// The store's.
        found: i32,
        /// This build's newest.
        known: i32,
    },
    /// A column of a query's result has a type this export cannot write.
    #[error("column {column} has type {ty}: cast it to text (`{column}::text`) in the query")]
    ColumnType {
        /// The column.
        column: String,
        /// Its type.
        ty: String,
    },
    /// A run directory did not read.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// A connection to the store.
pub struct PgStore {
    client: Client,
}

impl PgStore {
    /// Connect to `url` (`postgresql://user@host:port/db`, or libpq's `key=value`
    /// form; without TLS) and bring its schema up to date.
    pub fn connect(url: &str) -> Result<Self, PgError> {
        let mut store = Self::connect_only(url)?;
        store.migrate()?;
        Ok(store)
    }

    /// Connect without touching the schema (to read).
    pub fn connect_only(url: &str) -> Result<Self, PgError> {
        Ok(Self {
            client: Client::connect(url, NoTls)?,
        })
    }

    /// The connection, for the work queue (`pgqueue`).
    pub(crate) fn into_client(self) -> Client {
        self.client
    }

    /// The schema version the store holds (0: none).
    pub fn schema_version(&mut self) -> Result<i32, PgError> {
        let exists: bool = self
            .client
            .query_one("SELECT to_regclass('dualperf_schema') IS NOT NULL", &[])?
            .get(0);
        if !exists {
            return Ok(0);
        }
        let row = self
            .client
            .query_one("SELECT coalesce(max(version), 0) FROM dualperf_schema", &[])?;
        Ok(row.get(0))
    }

    /// Apply the migrations the store lacks, under an advisory lock: many writers that
    /// start at once apply each one once. Returns the versions applied.
    pub fn migrate(&mut self) -> Result<Vec<i32>, PgError> {
        let known = MIGRATIONS.last().map_or(0, |m| m.0);
        let mut tx = self.client.transaction()?;
        tx.execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK])?;
        tx.batch_execute(
            "CREATE TABLE IF NOT EXISTS dualperf_schema (
                version INTEGER PRIMARY KEY,
                description TEXT NOT NULL,
                applied_at TIMESTAMPTZ NOT NULL DEFAULT now()
            )",
        )?;
        let found: i32 = tx
            .query_one("SELECT coalesce(max(version), 0) FROM dualperf_schema", &[])?
            .get(0);
        if found > known {
            return Err(PgError::Newer { found, known });
        }
        let mut applied = Vec::new();
        for (version, what, sql) in MIGRATIONS.iter().filter(|m| m.0 > found) {
            tx.batch_execute(sql)?;
            tx.execute(
                "INSERT INTO dualperf_schema (version, description) VALUES ($1, $2)",
                &[version, what],
            )?;
            applied.push(*version);
        }
        tx.commit()?;
        Ok(applied)
    }

    /// Store run directory `store`, written on `host`, in one transaction that
    /// replaces what the store held of it. Returns its canonical path and its runs.
    pub fn put_store(&mut self, host: &str, store: &Store) -> Result<(PathBuf, usize), PgError> {
        let StoreRows { dir, factors, runs } = rows_of(store)?;
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX));
        // The months' partitions first, each made in a short transaction of its own:
        // one made inside the writer's would wait, holding the writer's row locks, for
        // other writers.
        let months: std::collections::BTreeSet<(i64, u32)> = runs
            .iter()
            .map(|(r, _)| month_of(r.started_unix_ns))
            .collect();
        for (y, m) in months {
            self.ensure_partition(y, m)?;
        }
        let mut tx = self.client.transaction()?;
        // Writers of one directory take turns; writers of others do not wait.
        tx.execute(
            "SELECT pg_advisory_xact_lock(hashtextextended($1 || '\n' || $2, 0))",
            &[&host, &dir.dir],
        )?;
        // The cascade removes the directory's runs and factors with it.
        tx.execute(
            "DELETE FROM dirs WHERE host = $1 AND dir = $2",
            &[&host, &dir.dir],
        )?;
        tx.execute(
            "INSERT INTO dirs VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)",
            &[
                &host,
                &dir.dir,
                &dir.plan,
                &dir.description,
                &dir.quick,
                &dir.hostname,
                &dir.kernel,
                &dir.dualperf_version,
                &now,
            ],
        )?;
        for f in &factors {
            tx.execute(
                "INSERT INTO factors VALUES ($1, $2, $3, $4, $5)",
                &[&host, &dir.dir, &f.point, &f.key, &f.value],
            )?;
        }
        let insert = tx.prepare(
            "INSERT INTO runs VALUES ($1, $2, $3, $4, $5, $6, $7::bigint,
                to_timestamp(($7::bigint / 1e9)::double precision), $8, $9::text::inet, $10, $11, $12,
                $13, $14, $15, $16, $17, $18, $19, $20::text::jsonb, $21)",
        )?;
        for (r, record) in &runs {
            let record = serde_json::to_value(record).unwrap_or(Value::Null);
            let family = i16::from(r.family);
            let repetition = i32::try_from(r.repetition).unwrap_or(i32::MAX);
            let params: [&(dyn ToSql + Sync); 21] = [
                &host,
                &dir.dir,
                &r.run_id,
                &r.point,
                &family,
                &repetition,
                &r.started_unix_ns,
                &r.exit_code,
                &r.dst_addr,
                &r.protocol,
                &r.size_bytes,
                &r.throughput_bps,
                &r.rtt_ns,
                &r.owd_ns,
                &r.delay_ns,
                &r.jitter_ns,
                &r.loss_pct,
                &r.packets_sent,
                &r.packets_received,
                &r.argv,
                &record,
            ];
            tx.execute(&insert, &params)?;
        }
        tx.commit()?;
        Ok((PathBuf::from(dir.dir), runs.len()))
    }

    /// `runs`' partition for month `m` of year `y`, made if missing, in a transaction of
    /// its own under a lock (two writers may make it at once).
    fn ensure_partition(&mut self, y: i64, m: u32) -> Result<(), PgError> {
        let name = format!("runs_{y:04}_{m:02}");
        let exists: bool = self
            .client
            .query_one("SELECT to_regclass($1) IS NOT NULL", &[&name])?
            .get(0);
        if exists {
            return Ok(());
        }
        let (ny, nm) = if m == 12 { (y + 1, 1) } else { (y, m + 1) };
        let mut tx = self.client.transaction()?;
        tx.execute(
            "SELECT pg_advisory_xact_lock(hashtextextended($1, 0))",
            &[&name],
        )?;
        tx.batch_execute(&format!(
            "CREATE TABLE IF NOT EXISTS {name} PARTITION OF runs FOR VALUES
                FROM ('{y:04}-{m:02}-01 00:00:00+00') TO ('{ny:04}-{nm:02}-01 00:00:00+00')"
        ))?;
        tx.commit()?;
        Ok(())
    }

    /// The runs `dualperf export` lists, in [`EXPORT_COLUMNS`]' order and values as the
    /// SQLite index gives them: those of directories `dirs` (canonical paths; every one
    /// when empty) and of plan `plan` (any when `None`), by plan, directory, start and id
    /// (byte order, as SQLite sorts text).
    pub fn export_runs(
        &mut self,
        dirs: &[String],
        plan: Option<&str>,
    ) -> Result<Vec<Vec<Value>>, PgError> {
        let sql = "SELECT d.plan, r.dir, r.run_id, r.point, r.family::bigint,
                r.repetition::bigint, r.started_unix_ns, r.protocol, r.size_bytes,
                r.throughput_bps, r.rtt_ns, r.owd_ns, r.delay_ns, r.jitter_ns, r.loss_pct,
                r.packets_sent, r.packets_received,
                (SELECT json_object_agg(f.key, f.value) FROM factors f
                  WHERE f.host = r.host AND f.dir = r.dir AND f.point = r.point) AS factors
            FROM runs r JOIN dirs d USING (host, dir)
            WHERE (cardinality($1::text[]) = 0 OR r.dir = ANY($1))
              AND ($2::text IS NULL OR d.plan = $2)
            ORDER BY d.plan COLLATE \"C\", r.dir COLLATE \"C\", r.started_unix_ns,
                r.run_id COLLATE \"C\"";
        let rows = self.client.query(sql, &[&dirs, &plan])?;
        rows.iter()
            .map(|row| {
                let mut values = row_values(row)?;
                // The factors as SQLite's json_group_object writes them: compact, by name.
                if let Some(last) = values.last_mut() {
                    *last = match last.take() {
                        Value::Null => Value::from("{}"),
                        Value::Object(m) => {
                            let sorted: BTreeMap<String, Value> = m.into_iter().collect();
                            Value::from(serde_json::to_string(&sorted).unwrap_or_default())
                        }
                        other => other,
                    };
                }
                Ok(values)
            })
            .collect()
    }

    /// One query that changes nothing (it runs in a read-only transaction): its columns
    /// and rows, every value as JSON.
    pub fn query(&mut self, sql: &str) -> Result<(Vec<String>, Vec<Vec<Value>>), PgError> {
        let mut tx = self.client.build_transaction().read_only(true).start()?;
        let stmt = tx.prepare(sql)?;
        let columns = stmt.columns().iter().map(|c| c.name().to_owned()).collect();
        let rows = tx.query(&stmt, &[])?;
        let values = rows.iter().map(row_values).collect::<Result<_, _>>()?;
        tx.commit()?;
        Ok((columns, values))
    }
}

/// The year and month of a time in ns since the Unix epoch (UTC).
fn month_of(unix_ns: i64) -> (i64, u32) {
    let days = unix_ns.div_euclid(86_400_000_000_000);
    // Howard Hinnant's civil_from_days.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m)
}

/// A row's values as JSON: integers, floats, text, booleans, JSON and times (RFC 3339
/// text); any other type is an error that says to cast it.
fn row_values(row: &Row) -> Result<Vec<Value>, PgError> {
    row.columns()
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let ty = c.type_();
            let v = match *ty {
                Type::INT2 => row.try_get::<_, Option<i16>>(i)?.map(Value::from),
                Type::INT4 => row.try_get::<_, Option<i32>>(i)?.map(Value::from),
                Type::INT8 => row.try_get::<_, Option<i64>>(i)?.map(Value::from),
                Type::FLOAT4 => row.try_get::<_, Option<f32>>(i)?.map(|v| f64(f64::from(v))),
                Type::FLOAT8 => row.try_get::<_, Option<f64>>(i)?.map(f64),
                Type::BOOL => row.try_get::<_, Option<bool>>(i)?.map(Value::from),
                Type::TEXT | Type::VARCHAR | Type::NAME | Type::BPCHAR => {
                    row.try_get::<_, Option<String>>(i)?.map(Value::from)
                }
                Type::JSON | Type::JSONB => row.try_get::<_, Option<Value>>(i)?,
                Type::INET => row
                    .try_get::<_, Option<std::net::IpAddr>>(i)?
                    .map(|ip| Value::from(ip.to_string())),
                _ => {
                    return Err(PgError::ColumnType {
                        column: c.name().to_owned(),
                        ty: ty.name().to_owned(),
                    })
                }
            };
            Ok(v.unwrap_or(Value::Null))
        })
        .collect()
}

/// A float as JSON (null when not finite, as from SQLite).
fn f64(v: f64) -> Value {
    serde_json::Number::from_f64(v).map_or(Value::Null, Value::Number)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn month_of_follows_the_civil_calendar_in_utc() {
        assert_eq!(month_of(0), (1970, 1));
        // 2026-11-29T12:00:00Z, and the last ns of 2026-11-30 and the first of December.
        assert_eq!(month_of(1_795_953_600_000_000_000), (2026, 11));
        assert_eq!(month_of(1_796_083_199_999_999_999), (2026, 11));
        assert_eq!(month_of(1_796_083_200_000_000_000), (2026, 12));
        // 2024-02-29 (a leap day) and 1969-12-31.
        assert_eq!(month_of(1_709_164_800_000_000_000), (2024, 2));
        assert_eq!(month_of(-1), (1969, 12));
    }

    #[test]
    fn migrations_are_numbered_from_1_without_gaps() {
        for (i, (v, what, sql)) in MIGRATIONS.iter().enumerate() {
            assert_eq!(*v, i as i32 + 1);
            assert!(!what.is_empty() && !sql.is_empty());
        }
    }
}
