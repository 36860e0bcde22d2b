//! Reading run directories: their finished runs, and from their resolved plans the
//! points' factors, the points' order and the declared tables.

use std::collections::BTreeMap;
use std::path::PathBuf;

use lab::store::{Resolved, RunRecord, Store};
use lab::tables::TableSpec;

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
    let mut plan_seen: Option<Resolved> = None;
    let mut specs: Vec<TableSpec> = Vec::new();
    for dir in dirs {
        let store = match Store::open(dir) {
            Ok(s) => s,
            Err(e) => return Err(Error::Open(e)),
        };
        // The points' factors and their order, from the resolved plan.
        if let Ok(text) = std::fs::read(dir.join("resolved.json")) {
            let (resolved, left_out) = match Resolved::parse(&text) {
                Ok(r) => r,
                Err(e) => {
                    warnings.push(format!(
                        "{}: resolved.json does not read ({e}); its points' factors and tables are left out",
                        dir.display()
                    ));
                    add_runs(&store, &mut records)?;
                    continue;
                }
            };
            // Repetitions pool across directories only when they measured the same plan.
            match &plan_seen {
                Some(first) if !first.same_measurement(&resolved) => {
                    return Err(Error::OtherPlan {
                        dir: dir.clone(),
                        first: dirs[0].clone(),
                    })
                }
                Some(_) => {}
                None => {
                    // The first directory's tables; one from before plans declared
                    // tables has none.
                    for i in left_out {
                        warnings.push(format!(
                            "{}: table {i} in resolved.json does not read; left out",
                            dir.display()
                        ));
                    }
                    specs = resolved.plan.tables.clone();
                    plan_seen = Some(resolved.clone());
                }
            }
            for p in &resolved.plan.points {
                if !order.contains(&p.id) {
                    order.push(p.id.clone());
                }
                factors.insert(p.id.clone(), p.factors.clone());
            }
        }
        add_runs(&store, &mut records)?;
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

/// A directory's finished runs (exit code 0), added to `records`.
fn add_runs(store: &Store, records: &mut Vec<RunRecord>) -> Result<(), Error> {
    records.extend(
        store
            .runs()
            .map_err(Error::Store)?
            .into_iter()
            .filter(|r| r.exit_code == 0),
    );
    Ok(())
}
