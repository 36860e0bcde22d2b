//! Reading run directories: their finished runs, and from their resolved plans the
//! points' factors, the points' order and the declared tables.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use lab::store::{HostInfo, Resolved, RunRecord, Store};
use lab::tables::TableSpec;
use results::metric::Vocabulary;

use crate::error::Error;
use crate::missing::Completeness;

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
    /// What was run, where and when: for every page and plot.
    pub provenance: Provenance,
    /// The planned runs without a result, per point done against planned.
    pub completeness: Completeness,
    /// The metrics the declared tables may name and the report shows
    /// ([`Vocabulary::standard`] unless [`load_with`] was given another).
    pub vocabulary: Vocabulary,
}

/// What a report shows, where and when it was measured (flent labels every plot so).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Provenance {
    /// The plan's name.
    pub plan: Option<String>,
    /// Some directory ran with `--quick`.
    pub quick: bool,
    /// The hosts the directories ran on (`host.json`'s hostname and kernel), and the
    /// hosts of a plan across hosts.
    pub hosts: Vec<String>,
    /// dualperf's versions that measured.
    pub versions: Vec<String>,
    /// The first and the last run's start, ns since the Unix epoch.
    pub span_unix_ns: Option<(u64, u64)>,
    /// The host checks that were not ok when the runs started (`doctor.json`, written
    /// by `dualperf run`), one line each (`warn steal: …`), each once; none for a
    /// directory from before `dualperf doctor`.
    pub doctor: Vec<String>,
    /// How the first directory's plan ordered its runs: whether its runs form pairs of
    /// one repetition over both families, back to back (the verdict layer's paired
    /// analysis, [`crate::verdicts`]).
    pub order: Option<lab::plan::Order>,
    /// Where the first directory's plan ran (`loopback`, `lab:…`, `hosts`).
    pub target: Option<String>,
    /// Its repetitions and run length, as it ran (with `--quick` and any override).
    pub repetitions: Option<u32>,
    /// Each run's length, ns.
    pub duration_ns: Option<u64>,
    /// The path as the first directory's `path.json` gives it (its path MTU per family
    /// and its capacity): the verdict layer leaves uncompared the points that fragment
    /// or oversubscribe it ([`crate::verdicts_path`]); `None` without the file.
    pub path: Option<lab::plan::fit::PathLimits>,
    /// The first directory's `path.json` itself: the path block under the verdicts
    /// ([`crate::path`]).
    pub path_facts: Option<results::path::PathFacts>,
}

impl Provenance {
    /// One line: `plan P (quick) · host H · 2026-11-25 12:00–12:10 UTC · dualperf V`.
    pub fn line(&self) -> String {
        let mut parts = vec![self.plan_part()];
        if !self.hosts.is_empty() {
            parts.push(format!("host {}", self.hosts.join(", ")));
        }
        if let Some((a, b)) = self.span_unix_ns {
            let (da, ta) = utc(a);
            let (db, tb) = utc(b);
            parts.push(if da == db {
                format!("{da} {ta}–{tb} UTC")
            } else {
                format!("{da} {ta} – {db} {tb} UTC")
            });
        }
        if !self.versions.is_empty() {
            parts.push(self.versions.join(", "));
        }
        parts.join(" · ")
    }

    /// The same in fewer words, for a plot: `plan P (quick) · H · 2026-11-25 12:00 UTC ·
    /// dualperf V` (host names without their kernels, the first run's start).
    pub fn short_line(&self) -> String {
        let mut parts = vec![self.plan_part()];
        let names: Vec<&str> = self
            .hosts
            .iter()
            .map(|h| h.split(" (").next().unwrap_or(h))
            .collect();
        if !names.is_empty() {
            parts.push(names.join(", "));
        }
        if let Some((a, _)) = self.span_unix_ns {
            let (d, t) = utc(a);
            parts.push(format!("{d} {t} UTC"));
        }
        parts.extend(self.versions.iter().cloned());
        parts.join(" · ")
    }

    /// `plan P`, with ` (--quick)` when it ran so.
    fn plan_part(&self) -> String {
        format!(
            "plan {}{}",
            self.plan.as_deref().unwrap_or("(unknown)"),
            if self.quick { " (--quick)" } else { "" }
        )
    }
}

/// `(YYYY-MM-DD, HH:MM)` in UTC of a Unix time in ns (the civil-from-days algorithm of
/// Howard Hinnant, "chrono-Compatible Low-Level Date Algorithms").
fn utc(unix_ns: u64) -> (String, String) {
    let secs = unix_ns / 1_000_000_000;
    let (days, rem) = ((secs / 86_400) as i64, secs % 86_400);
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    (
        format!("{y:04}-{m:02}-{d:02}"),
        format!("{:02}:{:02}", rem / 3_600, rem % 3_600 / 60),
    )
}

/// Reads run directories written by `dualperf run` (repetitions of the same plan pool).
/// What the reader should know but does not stop the report (a declared table that does
/// not read, runs whose lab routers stalled) is pushed to `warnings`, also when an error
/// follows.
pub fn load(dirs: &[PathBuf], warnings: &mut Vec<String>) -> Result<Runs, Error> {
    load_with(dirs, &Vocabulary::standard(), warnings)
}

/// The same, the declared tables read and the runs reported in the metrics of
/// `vocabulary`.
pub fn load_with(
    dirs: &[PathBuf],
    vocabulary: &Vocabulary,
    warnings: &mut Vec<String>,
) -> Result<Runs, Error> {
    let mut records: Vec<RunRecord> = Vec::new();
    let mut factors: BTreeMap<String, BTreeMap<String, String>> = BTreeMap::new();
    let mut order: Vec<String> = Vec::new();
    let mut plan_seen: Option<Resolved> = None;
    let mut specs: Vec<TableSpec> = Vec::new();
    let mut provenance = Provenance::default();
    let mut completeness = Completeness::default();
    if let Some(first) = dirs.first() {
        provenance.path_facts = read_path(first, warnings);
        provenance.path = provenance
            .path_facts
            .as_ref()
            .map(lab::plan::fit::PathLimits::from_facts);
    }
    for dir in dirs {
        add_host(dir, &mut provenance);
        let store = match Store::open(dir) {
            Ok(s) => s,
            Err(e) => return Err(Error::Open(e)),
        };
        add_host_checks(dir, &store, &mut provenance, warnings);
        // The points' factors and their order, from the resolved plan.
        if let Ok(text) = std::fs::read(dir.join("resolved.json")) {
            let (resolved, left_out) = match Resolved::parse_with(&text, vocabulary) {
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
                    provenance.plan = Some(resolved.plan.name.clone());
                    provenance.order = Some(resolved.plan.order);
                    provenance.target = Some(resolved.plan.target.to_string());
                    provenance.repetitions = Some(resolved.plan.repetitions);
                    provenance.duration_ns = Some(resolved.plan.duration.as_nanos());
                    for name in resolved.plan.hosts.keys() {
                        provenance.hosts.push(name.clone());
                    }
                    plan_seen = Some(resolved.clone());
                }
            }
            provenance.quick |= resolved.quick;
            for p in &resolved.plan.points {
                if !order.contains(&p.id) {
                    order.push(p.id.clone());
                }
                factors.insert(p.id.clone(), p.factors.clone());
            }
            let first = records.len();
            add_runs(&store, &mut records)?;
            // Every run the plan lists: finished, failed, or never run.
            let finished: Vec<&str> = records[first..].iter().map(|r| r.run.id.as_str()).collect();
            let plan = &resolved.plan;
            completeness.add_dir(
                &dir.display().to_string(),
                plan.runs.iter().filter_map(|r| {
                    let point = plan.points.get(r.point)?;
                    Some((r.id.as_str(), point.id.as_str(), r.family, r.repetition))
                }),
                |id| finished.contains(&id),
                |id| dir.join("runs").join(format!("{id}.failed")).is_file(),
            );
            continue;
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
    let starts = records.iter().map(|r| r.started_unix_ns);
    provenance.span_unix_ns = starts.clone().min().zip(starts.max());
    Ok(Runs {
        records,
        order,
        factors,
        specs,
        provenance,
        completeness,
        vocabulary: vocabulary.clone(),
    })
}

/// The host a directory ran on and the dualperf that measured, each once.
fn add_host(dir: &Path, provenance: &mut Provenance) {
    if let Some(h) = std::fs::read(dir.join("host.json"))
        .ok()
        .and_then(|b| serde_json::from_slice::<HostInfo>(&b).ok())
    {
        let host = match (&h.hostname, &h.kernel) {
            (Some(n), Some(k)) => format!("{n} (Linux {k})"),
            (Some(n), None) => n.clone(),
            (None, Some(k)) => format!("Linux {k}"),
            (None, None) => String::new(),
        };
        let version = format!("dualperf {}", h.dualperf.trim_start_matches("dualperf "));
        for (list, item) in [
            (&mut provenance.hosts, host),
            (&mut provenance.versions, version),
        ] {
            if !item.is_empty() && !list.contains(&item) {
                list.push(item);
            }
        }
    }
}

/// The path's facts from a directory's `path.json` (`compare --lab` and `compare HOST`
/// write it); a file that does not read is a warning.
fn read_path(dir: &Path, warnings: &mut Vec<String>) -> Option<results::path::PathFacts> {
    crate::path::read(dir).unwrap_or_else(|e| {
        warnings.push(format!("{e}; the verdicts do not know the path"));
        None
    })
}

/// A directory's host checks that were not ok, each line once.
fn add_host_checks(
    dir: &Path,
    store: &Store,
    provenance: &mut Provenance,
    warnings: &mut Vec<String>,
) {
    // The host's checks: a warning, never a reason not to report; only those that
    // bear on where the plan ran (its target), when the resolved plan says.
    let scope = std::fs::read(dir.join("resolved.json"))
        .ok()
        .and_then(|text| Resolved::parse(&text).ok())
        .map(|(r, _)| r.plan.target.scope());
    match store.doctors() {
        Ok(docs) => {
            for (_, doc) in docs {
                let problems: Vec<_> = match scope {
                    Some(scope) => doc.problems_for(scope).collect(),
                    None => doc.problems().collect(),
                };
                for line in problems.into_iter().map(|c| c.line()) {
                    if !provenance.doctor.contains(&line) {
                        provenance.doctor.push(line);
                    }
                }
            }
        }
        Err(e) => warnings.push(format!("{e}; its host checks are left out")),
    }
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

#[cfg(test)]
mod tests {
    use super::*;
    use lab::plan::Run;

    fn temp(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!(
            "dualperf-report-load-{name}-{}",
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&d);
        d
    }

    /// A run directory holding one finished run.
    fn run_dir(name: &str) -> PathBuf {
        let dir = temp(name);
        let store = Store::create(&dir).unwrap();
        store
            .put_run(&finished("rep001-p-ipv4", "p", 4, 1))
            .unwrap();
        dir
    }

    /// `dualperf doctor --json` with a check of each verdict.
    fn doctor_json() -> serde_json::Value {
        let check = |id: &str, status: &str, found: &str| {
            serde_json::json!({"id": id, "title": "t", "status": status, "found": found,
                "why": "w", "fix": null})
        };
        serde_json::json!({
            "format_version": 1, "tool": "dualperf 0.1.0", "checked_unix_ns": 1,
            "status": "fail",
            "checks": [
                check("clocksource", "ok", "tsc"),
                check("steal", "warn", "4.000 % of CPU time"),
                check("af-packet", "fail", "no /proc/net/packet"),
            ],
            "figures": {
                "clocksource": "tsc", "clock_read_ns": 20.0, "timer_resolution_ns": 1,
                "sleep_wait_ns": 1_000_000, "sleep_samples": 100, "sleep_overshoot_p50_ns": 1,
                "sleep_overshoot_p99_ns": 2, "timer_slack_ns": 50_000, "governors": [],
                "idle_driver": null, "idle_exit_latency_max_ns": null, "steal_pct": 4.0,
                "steal_sample_ns": 100_000_000, "steal_since_boot_pct": 0.0,
                "rmem_max_bytes": null, "wmem_max_bytes": null, "tcp_rmem_max_bytes": null,
                "tcp_wmem_max_bytes": null, "clock_synchronised": true, "cap_net_admin": true,
                "cap_net_raw": true, "cpus_online": 2, "cpus_allowed": 2
            }
        })
    }

    #[test]
    fn the_host_checks_not_ok_are_kept_once_and_old_directories_have_none() {
        let a = run_dir("doctor-a");
        let mut warnings = Vec::new();
        let runs = load(std::slice::from_ref(&a), &mut warnings).unwrap();
        assert!(runs.provenance.doctor.is_empty(), "no doctor.json: none");
        assert!(warnings.is_empty(), "{warnings:?}");
        let text = serde_json::to_vec(&doctor_json()).unwrap();
        std::fs::write(a.join("doctor.json"), &text).unwrap();
        let b = run_dir("doctor-b");
        std::fs::write(b.join("doctor.json"), &text).unwrap();
        let runs = load(&[a.clone(), b.clone()], &mut warnings).unwrap();
        assert_eq!(
            runs.provenance.doctor,
            [
                "warn steal: 4.000 % of CPU time",
                "fail af-packet: no /proc/net/packet"
            ]
        );
        assert!(warnings.is_empty(), "{warnings:?}");
        // A file that does not read: a warning, and the report goes on.
        std::fs::write(b.join("doctor.json"), b"{").unwrap();
        let runs = load(&[a.clone(), b.clone()], &mut warnings).unwrap();
        assert_eq!(runs.provenance.doctor.len(), 2);
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        assert!(
            warnings[0].contains("doctor.json") && warnings[0].contains("left out"),
            "{warnings:?}"
        );
        for d in [a, b] {
            let _ = std::fs::remove_dir_all(d);
        }
    }

    /// A finished run of `id` at `point` (family, repetition).
    fn finished(id: &str, point: &str, family: u8, repetition: u32) -> RunRecord {
        let report =
            serde_json::from_str(include_str!("../../lab/tests/data/send-udp-rtt.json")).unwrap();
        RunRecord {
            format_version: lab::store::FORMAT_VERSION,
            run: Run {
                id: id.into(),
                point: 0,
                family,
                repetition,
            },
            point: point.into(),
            argv: Vec::new(),
            started_unix_ns: 0,
            exit_code: 0,
            stderr: String::new(),
            report: Some(report),
            attempts: 1,
            background: Vec::new(),
            routers: BTreeMap::new(),
            router_stalls: BTreeMap::new(),
        }
    }

    #[test]
    fn a_partial_run_names_its_missing_runs_per_point_and_under_each_table() {
        let dir = temp("partial");
        let store = Store::create(&dir).unwrap();
        let plan = lab::plan::Plan::parse(
            "version = 1\nname = \"x\"\nduration = \"1s\"\nrepetitions = 2\n\n[flow]\nudp = true\nmeter = \"rtt\"\n\n[factors]\nsize = [64, 512]\n\n[[tables]]\ntitle = \"T\"\nmetrics = [\"loss\", \"rtt\"]\n",
            false,
        )
        .unwrap();
        assert_eq!(plan.runs.len(), 8, "2 sizes × 2 families × 2 repetitions");
        store
            .write_json("resolved.json", &Resolved::new(&plan, false))
            .unwrap();
        // Size 64: all but IPv6's second repetition, which failed; size 512: IPv4's
        // first only.
        for r in &plan.runs {
            let point = &plan.points[r.point].id;
            let keep = if point.ends_with("64") {
                !(r.family == 6 && r.repetition == 2)
            } else {
                r.family == 4 && r.repetition == 1
            };
            let mut rec = finished(&r.id, point, r.family, r.repetition);
            if keep {
                store.put_run(&rec).unwrap();
            } else if r.family == 6 && r.repetition == 2 && point.ends_with("64") {
                rec.exit_code = 1;
                store.put_failed_run(&rec).unwrap();
            }
        }
        let mut warnings = Vec::new();
        let runs = load(std::slice::from_ref(&dir), &mut warnings).unwrap();
        let c = &runs.completeness;
        assert_eq!((c.done, c.planned), (4, 8));
        let per_point: Vec<(&str, usize, usize)> = c
            .points
            .iter()
            .map(|p| (p.point.as_str(), p.done, p.planned))
            .collect();
        assert_eq!(per_point, [("size=64", 3, 4), ("size=512", 1, 4)]);
        let missing: Vec<(&str, u8, u32, bool)> = c
            .missing
            .iter()
            .map(|m| (m.point.as_str(), m.family, m.repetition, m.failed))
            .collect();
        assert_eq!(missing.len(), 4);
        assert!(missing.contains(&("size=64", 6, 2, true)), "{missing:?}");
        assert_eq!(
            missing.iter().filter(|m| m.0 == "size=512" && !m.3).count(),
            3
        );
        let report = crate::Report::new(&runs);
        let t = &report.tables[0];
        let p = t
            .partial
            .as_ref()
            .expect("a table of a partial run says so");
        assert_eq!((p.done, p.planned, p.missing.len()), (4, 8, 4));
        assert_eq!(
            p.note,
            "partial: 4 of 8 runs; missing: point 64 IPv6 rep 2 (failed), point 512 IPv6 rep 1, \
             point 512 IPv4 rep 2, point 512 IPv6 rep 2"
        );
        let text = report.text(false);
        let lines: Vec<&str> = text.lines().collect();
        let head = lines
            .iter()
            .position(|l| {
                l.starts_with("Partial: 4 of 8 planned runs have results (1 of the missing failed")
            })
            .unwrap_or_else(|| panic!("{text}"));
        assert_eq!(
            lines[head + 1..head + 3],
            [
                "  point size=64: 3 of 4 runs",
                "  point size=512: 1 of 4 runs"
            ]
        );
        let title = lines.iter().position(|l| *l == "T").unwrap();
        assert_eq!(lines[title + 1], p.note, "the line under the table's title");
        let html = report.html(&[], &crate::Plots::default());
        assert!(
            html.contains(&format!(
                "<h2>T</h2>\n<p class=\"notice partial\">{}</p>",
                p.note
            )),
            "{html}"
        );
        let doc = serde_json::to_value(report.into_doc()).unwrap();
        assert_eq!(doc["partial"]["done"], 4);
        assert_eq!(doc["partial"]["planned"], 8);
        assert_eq!(doc["partial"]["missing"].as_array().unwrap().len(), 4);
        assert_eq!(
            doc["tables"][0]["partial"]["missing"]
                .as_array()
                .unwrap()
                .len(),
            4
        );

        // Whole: nothing extra, in the text, the tables or the document.
        for r in &plan.runs {
            let point = &plan.points[r.point].id;
            store
                .put_run(&finished(&r.id, point, r.family, r.repetition))
                .unwrap();
        }
        let runs = load(std::slice::from_ref(&dir), &mut warnings).unwrap();
        assert!(runs.completeness.is_whole());
        let report = crate::Report::new(&runs);
        assert!(report.tables.iter().all(|t| t.partial.is_none()));
        assert!(!report.text(false).contains("artial"));
        let doc = serde_json::to_value(report.into_doc()).unwrap();
        assert!(doc.get("partial").is_none());
        assert!(!doc.to_string().contains("partial"));
        let _ = std::fs::remove_dir_all(dir);
    }
}
