//! A run directory as rows: what the SQLite index ([`crate::index`]) and the PostgreSQL
//! store (`pgstore`) hold of it, worked out once for both.

use std::path::{Path, PathBuf};

use results::metric::{self, Metric};

use crate::store::{HostInfo, Resolved, RunRecord, Store, StoreError};

/// The directory's row.
#[derive(Clone, Debug, PartialEq)]
pub struct DirRow {
    /// Its canonical path: one directory is one key however it was named.
    pub dir: String,
    /// The plan's name (empty when `resolved.json` did not read).
    pub plan: String,
    /// The plan's description.
    pub description: String,
    /// Run with `--quick`.
    pub quick: bool,
    /// `host.json`'s hostname.
    pub hostname: Option<String>,
    /// Its kernel.
    pub kernel: Option<String>,
    /// Its dualperf version.
    pub dualperf_version: Option<String>,
}

/// One point's factor.
#[derive(Clone, Debug, PartialEq)]
pub struct FactorRow {
    /// The point's id.
    pub point: String,
    /// The factor's name.
    pub key: String,
    /// Its value.
    pub value: String,
}

/// One finished run's row: its keys and its metrics in stored units.
#[derive(Clone, Debug, PartialEq)]
pub struct RunRow {
    /// The run's id.
    pub run_id: String,
    /// Its point's id.
    pub point: String,
    /// IP version, 4 or 6.
    pub family: u8,
    /// Its repetition.
    pub repetition: u32,
    /// When it started, ns since the Unix epoch.
    pub started_unix_ns: i64,
    /// The sender's exit status.
    pub exit_code: i32,
    /// The address the sender sent to (`send --json`'s `dest`, without its port).
    pub dst_addr: Option<String>,
    /// Its first flow's protocol.
    pub protocol: Option<&'static str>,
    /// Its first flow's payload size.
    pub size_bytes: Option<i64>,
    /// Throughput, bit/s ([`metric::THROUGHPUT`]).
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
    /// `argv` as JSON text.
    pub argv: String,
}

/// A run directory's rows, with its records.
#[derive(Clone, Debug)]
pub struct StoreRows {
    /// The directory.
    pub dir: DirRow,
    /// Its points' factors.
    pub factors: Vec<FactorRow>,
    /// Its finished runs, each with its record.
    pub runs: Vec<(RunRow, RunRecord)>,
}

/// The rows of `store`: its plan, host and points' factors, and every finished run (a
/// failed run, kept as `runs/ID.failed` for its stderr, is not a result). What cannot be
/// read leaves its columns empty: the runs are the record.
pub fn rows_of(store: &Store) -> Result<StoreRows, StoreError> {
    let records = store.runs()?;
    let dir = canonical(store.dir());
    let resolved = std::fs::read(dir.join("resolved.json"))
        .ok()
        .and_then(|b| Resolved::parse(&b).ok())
        .map(|(r, _)| r);
    let host: Option<HostInfo> = std::fs::read(dir.join("host.json"))
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok());
    let dir_row = DirRow {
        dir: dir.to_string_lossy().into_owned(),
        plan: resolved
            .as_ref()
            .map_or("", |r| r.plan.name.as_str())
            .to_owned(),
        description: resolved
            .as_ref()
            .map_or("", |r| r.plan.description.as_str())
            .to_owned(),
        quick: resolved.as_ref().is_some_and(|r| r.quick),
        hostname: host.as_ref().and_then(|h| h.hostname.clone()),
        kernel: host.as_ref().and_then(|h| h.kernel.clone()),
        dualperf_version: host.as_ref().map(|h| h.dualperf.clone()),
    };
    let factors = resolved
        .iter()
        .flat_map(|r| &r.plan.points)
        .flat_map(|p| {
            p.factors.iter().map(|(k, v)| FactorRow {
                point: p.id.clone(),
                key: k.clone(),
                value: v.clone(),
            })
        })
        .collect();
    let runs = records.into_iter().map(|r| (run_row(&r), r)).collect();
    Ok(StoreRows {
        dir: dir_row,
        factors,
        runs,
    })
}

/// A directory's canonical path, or the path as given when it cannot be resolved.
pub fn canonical(dir: &Path) -> PathBuf {
    std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_owned())
}

fn run_row(record: &RunRecord) -> RunRow {
    let flow = record.report.as_ref().and_then(|r| r.flows.first());
    let value = |m: Metric| m.of(record.report.as_ref()?);
    let int = |v: Option<u64>| v.and_then(|v| i64::try_from(v).ok());
    RunRow {
        run_id: record.run.id.clone(),
        point: record.point.clone(),
        family: record.run.family,
        repetition: record.run.repetition,
        started_unix_ns: i64::try_from(record.started_unix_ns).unwrap_or(i64::MAX),
        exit_code: record.exit_code,
        dst_addr: record.report.as_ref().map(|r| r.dest.ip().to_string()),
        protocol: flow.map(|f| protocol_name(f.spec.protocol)),
        size_bytes: int(flow.map(|f| u64::from(f.spec.size_bytes))),
        throughput_bps: value(metric::THROUGHPUT),
        rtt_ns: value(metric::RTT),
        owd_ns: value(metric::OWD),
        delay_ns: value(metric::DELAY),
        jitter_ns: value(metric::JITTER),
        loss_pct: value(metric::LOSS),
        packets_sent: int(flow.map(|f| f.sent.packets)),
        packets_received: int(flow.and_then(|f| f.received.as_ref()).map(|r| r.packets)),
        argv: serde_json::to_string(&record.argv).unwrap_or_default(),
    }
}

/// A protocol as run records spell it (`spec.protocol`).
fn protocol_name(p: wire::control::Protocol) -> &'static str {
    match p {
        wire::control::Protocol::Udp => "udp",
        wire::control::Protocol::Tcp => "tcp",
    }
}
