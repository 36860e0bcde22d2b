//! Reading run directories: their finished runs, and from their resolved plans the
//! points' factors, the points' order and the declared tables.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use lab::store::{RunRecord, Store};
use lab::tables::{TableSpec, Unit};

use crate::error::Error;

/// What run directories hold, pooled: the repetitions of one plan.
pub struct Runs {
    /// The finished runs (exit code 0), directory by directory.
    pub records: Vec<RunRecord>,
    /// Point ids in plan order, then those only runs name.
    pub order: Vec<String>,
    /// Each point's factors, from the resolved plans.
    pub factors: BTreeMap<String, BTreeMap<String, String>>,
    /// The tables the first directory's plan declares.
    pub specs: Vec<TableSpec>,
}

/// Reads run directories written by `dualperf run` (repetitions of the same plan pool).
/// What the reader should know but does not stop the report (a declared table that does
/// not read, runs whose lab routers stalled) is pushed to `warnings`, also when an error
/// follows.
pub fn load(dirs: &[PathBuf], warnings: &mut Vec<String>) -> Result<Runs, Error> {
    let mut records: Vec<RunRecord> = Vec::new();
    let mut factors: BTreeMap<String, BTreeMap<String, String>> = BTreeMap::new();
    let mut order: Vec<String> = Vec::new();
    let mut plan_seen: Option<serde_json::Value> = None;
    let mut specs: Vec<TableSpec> = Vec::new();
    for dir in dirs {
        let store = match Store::open(dir) {
            Ok(s) => s,
            Err(e) => return Err(Error::Open(e)),
        };
        // The points' factors and their order, from the resolved plan.
        if let Ok(text) = std::fs::read(dir.join("resolved.json")) {
            let resolved: serde_json::Value = serde_json::from_slice(&text).unwrap_or_default();
            // Repetitions pool across directories only when they measured the same plan.
            match &plan_seen {
                Some(first) if !lab::plan::same_measurement(first, &resolved) => {
                    return Err(Error::OtherPlan {
                        dir: dir.clone(),
                        first: dirs[0].clone(),
                    })
                }
                Some(_) => {}
                None => {
                    // The first directory's tables; one from before plans declared
                    // tables has none.
                    specs = table_specs(dir, &resolved["plan"]["tables"], warnings);
                    plan_seen = Some(resolved.clone());
                }
            }
            for p in resolved["plan"]["points"].as_array().into_iter().flatten() {
                let Some(id) = p["id"].as_str() else { continue };
                if !order.iter().any(|o| o == id) {
                    order.push(id.to_owned());
                }
                let f = serde_json::from_value(p["factors"].clone()).unwrap_or_default();
                factors.insert(id.to_owned(), f);
            }
        }
        records.extend(
            store
                .runs()
                .map_err(Error::Store)?
                .into_iter()
                .filter(|r| r.exit_code == 0),
        );
    }
    if records.is_empty() {
        return Err(Error::NoRuns {
            dirs: dirs.to_vec(),
        });
    }
    // Runs whose lab routers stalled (dualperf run recorded it): their delays and
    // losses may be the router's. A warning, so the tables stay as they are.
    let stalled: Vec<&str> = records
        .iter()
        .filter(|r| !r.router_stalls.is_empty())
        .map(|r| r.run.id.as_str())
        .collect();
    if !stalled.is_empty() {
        warnings.push(format!(
            "{} of {} runs had a router loop stall over {} ms ({}{}): their delays and losses may be the router's",
            stalled.len(),
            records.len(),
            lab::runner::ROUTER_STALL_LIMIT_NS / 1_000_000,
            stalled[..stalled.len().min(5)].join(", "),
            if stalled.len() > 5 { ", …" } else { "" }
        ));
    }
    for r in &records {
        if !order.contains(&r.point) {
            order.push(r.point.clone());
        }
    }
    Ok(Runs {
        records,
        order,
        factors,
        specs,
    })
}

/// The declared tables of a run directory's `resolved.json`, each checked as a plan's
/// would be (the file may have been edited): an entry that does not read, or a unit its
/// metric does not have, is left out with a warning.
fn table_specs(
    dir: &Path,
    value: &serde_json::Value,
    warnings: &mut Vec<String>,
) -> Vec<TableSpec> {
    let mut out = Vec::new();
    for (i, v) in value.as_array().into_iter().flatten().enumerate() {
        let spec = serde_json::from_value::<TableSpec>(v.clone())
            .ok()
            .filter(|t| !t.metrics.is_empty())
            .and_then(|mut t| {
                for c in &mut t.metrics {
                    c.unit = Unit::parse(c.metric, &c.unit.name)?;
                }
                Some(t)
            });
        match spec {
            Some(t) => out.push(t),
            None => warnings.push(format!(
                "{}: table {} in resolved.json does not read; left out",
                dir.display(),
                i + 1
            )),
        }
    }
    out
}
