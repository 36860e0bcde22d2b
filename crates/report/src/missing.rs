//! What a partial run directory lacks: the runs its resolved plan lists (every point ×
//! family × repetition) that have no finished result, per point done against planned,
//! and the line a table built from such runs carries under its title.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A run the plan lists that has no finished result (`runs/ID.json` with exit code 0).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct MissingRun {
    /// The run directory it belongs to.
    pub dir: String,
    /// The run's id (its result file's name).
    pub id: String,
    /// The point's id.
    pub point: String,
    /// 4 or 6.
    pub family: u8,
    /// From 1.
    pub repetition: u32,
    /// It ran and failed (`runs/ID.failed` holds its stderr); else it never ran.
    pub failed: bool,
}

/// A point's finished runs against those its plans list, over every directory.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct PointRuns {
    /// The point's id.
    pub point: String,
    /// Its runs with a finished result.
    pub done: usize,
    /// Its runs the plans list: families × repetitions, per directory.
    pub planned: usize,
}

/// `report --json`'s account of a partial report: present only when some planned run
/// has no result.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Completeness {
    /// Runs with a finished result, of those planned.
    pub done: usize,
    /// Runs the plans list (directories with a `resolved.json`).
    pub planned: usize,
    /// Every point in plan order, done against planned.
    pub points: Vec<PointRuns>,
    /// Every planned run without a result, in plan order per directory.
    pub missing: Vec<MissingRun>,
}

/// What a table built from a partial run says under its title.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Partial {
    /// Its points' runs with a finished result.
    pub done: usize,
    /// Its points' runs the plans list.
    pub planned: usize,
    /// The ids of its points' runs without one.
    pub missing: Vec<String>,
    /// The line under its title: `partial: 5 of 42 runs; missing: …`.
    pub note: String,
}

/// How many runs a partial line names before it counts the rest.
const NAMED: usize = 6;

impl Completeness {
    /// Whether every planned run has a result (or nothing is known of a plan).
    pub fn is_whole(&self) -> bool {
        self.missing.is_empty()
    }

    /// Adds a directory's plan: `planned` its runs (id, point id, family, repetition),
    /// `finished` whether a run has a finished result, `failed` whether it has a
    /// failed one.
    pub fn add_dir<'a>(
        &mut self,
        dir: &str,
        planned: impl IntoIterator<Item = (&'a str, &'a str, u8, u32)>,
        finished: impl Fn(&str) -> bool,
        failed: impl Fn(&str) -> bool,
    ) {
        for (id, point, family, repetition) in planned {
            let i = match self.points.iter().position(|p| p.point == point) {
                Some(i) => i,
                None => {
                    self.points.push(PointRuns {
                        point: point.to_owned(),
                        done: 0,
                        planned: 0,
                    });
                    self.points.len() - 1
                }
            };
            self.points[i].planned += 1;
            self.planned += 1;
            if finished(id) {
                self.points[i].done += 1;
                self.done += 1;
            } else {
                self.missing.push(MissingRun {
                    dir: dir.to_owned(),
                    id: id.to_owned(),
                    point: point.to_owned(),
                    family,
                    repetition,
                    failed: failed(id),
                });
            }
        }
    }

    /// Whether the runs come from more than one directory (a missing run then names
    /// its directory).
    fn dirs(&self) -> usize {
        let mut dirs: Vec<&str> = self.missing.iter().map(|m| m.dir.as_str()).collect();
        dirs.sort_unstable();
        dirs.dedup();
        dirs.len()
    }

    /// What a table over these points (id, row label) says under its title; `None`
    /// when they have every planned run.
    pub fn partial(&self, points: &[(&str, &str)]) -> Option<Partial> {
        let held = |p: &str| points.iter().any(|(id, _)| *id == p);
        let missing: Vec<&MissingRun> = self.missing.iter().filter(|m| held(&m.point)).collect();
        if missing.is_empty() {
            return None;
        }
        let (mut done, mut planned) = (0, 0);
        for p in self.points.iter().filter(|p| held(&p.point)) {
            done += p.done;
            planned += p.planned;
        }
        let label = |point: &str| {
            points
                .iter()
                .find(|(id, _)| *id == point)
                .map_or(point, |(_, l)| l)
                .to_owned()
        };
        let named = self.name_runs(&missing, &label);
        Some(Partial {
            done,
            planned,
            missing: missing.iter().map(|m| m.id.clone()).collect(),
            note: format!("partial: {done} of {planned} runs; missing: {named}"),
        })
    }

    /// Missing runs in few words: a point missing every run once (`point X: all 4
    /// runs`), the others one by one (`point X IPv6 rep 2`), the first [`NAMED`] and
    /// then how many more.
    fn name_runs(&self, missing: &[&MissingRun], label: &dyn Fn(&str) -> String) -> String {
        let many_dirs = self.dirs() > 1;
        let mut by_point: BTreeMap<(usize, &str), Vec<&MissingRun>> = BTreeMap::new();
        for m in missing {
            let rank = self
                .points
                .iter()
                .position(|p| p.point == m.point)
                .unwrap_or(usize::MAX);
            by_point.entry((rank, &m.point)).or_default().push(m);
        }
        for runs in by_point.values_mut() {
            runs.sort_by_key(|m| (m.repetition, m.family));
        }
        // Each item and how many runs it names.
        let mut items: Vec<(String, usize)> = Vec::new();
        for ((rank, point), runs) in &by_point {
            let planned = self.points.get(*rank).map_or(0, |p| p.planned);
            if runs.len() == planned && planned > 1 {
                items.push((
                    format!("point {}: all {planned} runs", label(point)),
                    planned,
                ));
                continue;
            }
            for m in runs {
                let mut s = format!(
                    "point {} IPv{} rep {}",
                    label(point),
                    m.family,
                    m.repetition
                );
                if m.failed {
                    s.push_str(" (failed)");
                }
                if many_dirs {
                    s.push_str(&format!(" in {}", m.dir));
                }
                items.push((s, 1));
            }
        }
        let shown = if items.len() > NAMED {
            NAMED - 1
        } else {
            items.len()
        };
        let mut s = items[..shown]
            .iter()
            .map(|(s, _)| s.as_str())
            .collect::<Vec<_>>()
            .join(", ");
        let rest = missing.len() - items[..shown].iter().map(|(_, n)| n).sum::<usize>();
        if shown < items.len() {
            s.push_str(&format!(
                ", and {rest} more run{}",
                if rest == 1 { "" } else { "s" }
            ));
        }
        s
    }

    /// The lines heading a partial report: the runs done against planned, and each
    /// point that lacks some (`point: 3 of 4 runs`); none when whole.
    pub fn lines(&self) -> Vec<String> {
        if self.is_whole() {
            return Vec::new();
        }
        let failed = self.missing.iter().filter(|m| m.failed).count();
        let mut out = vec![format!(
            "Partial: {} of {} planned runs have results{}; each table says which of its runs are missing.",
            self.done,
            self.planned,
            match failed {
                0 => String::new(),
                n => format!(" ({n} of the missing failed: their stderr is in runs/ID.failed)"),
            }
        )];
        let short: Vec<&PointRuns> = self.points.iter().filter(|p| p.done < p.planned).collect();
        let whole = self.points.len() - short.len();
        for p in &short {
            out.push(format!(
                "  point {}: {} of {} runs",
                p.point, p.done, p.planned
            ));
        }
        if whole > 0 {
            out.push(match whole {
                1 => "  the other point has every run".to_owned(),
                n => format!("  the other {n} points have every run"),
            });
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Points a to e, two families × three repetitions each (30 runs).
    fn planned() -> Vec<(String, String, u8, u32)> {
        let mut out = Vec::new();
        for p in ["a", "b", "c", "d", "e"] {
            for rep in 1..=3 {
                for family in [4, 6] {
                    out.push((
                        format!("rep00{rep}-{p}-ipv{family}"),
                        p.to_owned(),
                        family,
                        rep,
                    ));
                }
            }
        }
        out
    }

    fn add(c: &mut Completeness, dir: &str, finished: impl Fn(&str) -> bool) {
        let planned = planned();
        c.add_dir(
            dir,
            planned
                .iter()
                .map(|(id, p, f, r)| (id.as_str(), p.as_str(), *f, *r)),
            finished,
            |_| false,
        );
    }

    #[test]
    fn many_missing_runs_are_named_in_few_words() {
        // b lacks every run, c and d one each, e four: 12 of 30 missing.
        let mut c = Completeness::default();
        add(&mut c, "r", |id| {
            !(id.contains("-b-")
                || id == "rep002-c-ipv6"
                || id == "rep001-d-ipv4"
                || (id.contains("-e-") && !id.starts_with("rep001")))
        });
        assert_eq!((c.done, c.planned, c.missing.len()), (18, 30, 12));
        let all = ["a", "b", "c", "d", "e"].map(|p| (p, p));
        let p = c.partial(&all).unwrap();
        assert_eq!(
            p.note,
            "partial: 18 of 30 runs; missing: point b: all 6 runs, point c IPv6 rep 2, \
             point d IPv4 rep 1, point e IPv4 rep 2, point e IPv6 rep 2, and 2 more runs"
        );
        // A table of the whole points says nothing; one of some names only theirs.
        assert_eq!(c.partial(&[("a", "A")]), None);
        let p = c.partial(&[("a", "A"), ("d", "D")]).unwrap();
        assert_eq!(
            p.note,
            "partial: 11 of 12 runs; missing: point D IPv4 rep 1"
        );
        assert_eq!(
            c.lines(),
            [
                "Partial: 18 of 30 planned runs have results; each table says which of its runs are missing.",
                "  point b: 0 of 6 runs",
                "  point c: 5 of 6 runs",
                "  point d: 5 of 6 runs",
                "  point e: 2 of 6 runs",
                "  the other point has every run",
            ]
        );
        // Two directories: a missing run names its own.
        let mut two = Completeness::default();
        add(&mut two, "r1", |id| id != "rep001-a-ipv6");
        add(&mut two, "r2", |id| id != "rep003-a-ipv4");
        let p = two.partial(&[("a", "a")]).unwrap();
        assert_eq!(
            p.note,
            "partial: 10 of 12 runs; missing: point a IPv6 rep 1 in r1, point a IPv4 rep 3 in r2"
        );
        let mut whole = Completeness::default();
        add(&mut whole, "r", |_| true);
        assert!(whole.is_whole() && whole.lines().is_empty());
        assert_eq!(whole.partial(&all), None);
    }
}
