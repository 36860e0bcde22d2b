//! The run directory: versioned, self-describing files, each written whole or not at all.
//!
//! ```text
//! RUN_DIR/
//!   plan.toml          the plan as given
//!   resolved.json      the expanded plan: points, their send arguments, the run order
//!   host.json          where it ran: kernel, CPU, sysctls, qdiscs, dualperf version
//!   runs/ID.json       one finished run: which, the command, and `dualperf send --json`
//!   hosts/NAME/host.json   target = "hosts": each host as `dualperf clock --peer --json`
//!                          saw it when the plan started (a resume adds
//!                          host-resumed-UNIX.json beside it)
//!   doctor.json        `dualperf doctor`'s checks of the host, briefly, when the plan
//!                      started (a resume adds doctor-resumed-UNIX.json); older run
//!                      directories have none
//!   lab/               target = "lab:…": the topology, each router's configuration and
//!                      QoS file, the QoS files the points name (`Store::keep_lab`)
//! ```
//!
//! A result file is written to `ID.json.tmp` and renamed into place, so a run killed
//! mid-measurement leaves no file that looks finished; `--resume` measures exactly the
//! runs without one.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};

use results::clock::{PeerClockDoc, CLOCK_FORMAT_VERSION};
use results::doctor::{DoctorDoc, DOCTOR_FORMAT_VERSION};
use results::send::SendReport;
use router::stats::RouterStats;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::plan::{Overrides, Plan, Run};
use crate::tables::{Column, TableSpec, Unit, Vocabulary};
use crate::topology::{Kind, Topology};
use results::metric::RouterFigure;

/// Version of the files in a run directory.
pub const FORMAT_VERSION: u32 = 1;

/// The host's checks when a plan started ([`Store::put_doctor`]).
pub const DOCTOR_FILE: &str = "doctor.json";

/// A run directory that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// A directory could not be made.
    #[error("cannot create {path}: {source}")]
    Create {
        /// The directory.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// A file could not be read or written.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// A file is not what this version writes.
    #[error("{path}: {message}")]
    Format {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> StoreError + '_ {
    move |source| StoreError::Io {
        path: path.to_owned(),
        source,
    }
}

/// One finished run, as stored.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RunRecord {
    /// [`FORMAT_VERSION`].
    pub format_version: u32,
    /// Which run.
    pub run: Run,
    /// The point's id.
    pub point: String,
    /// The sender's command line (after `dualperf`).
    pub argv: Vec<String>,
    /// Wall-clock start, ns since the Unix epoch.
    pub started_unix_ns: u64,
    /// The sender's exit status: 0 measured, 1 measured with an error (see `stderr`).
    pub exit_code: i32,
    /// What the sender said on stderr.
    pub stderr: String,
    /// `dualperf send --json`; `None` (`null`) when the sender printed none.
    pub report: Option<SendReport>,
    /// How many times the run was measured: an executor may measure a run that fell
    /// behind its schedule again (`dualperf compare`); the last one is kept.
    #[serde(default = "one", skip_serializing_if = "is_one")]
    pub attempts: u32,
    /// The background flows' `dualperf send --json`, in the point's order (or, for one
    /// that gave none, its exit code and stderr).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub background: Vec<Background>,
    /// A lab's routers' counters at the end of the run (`dualperf route --stats`; they
    /// start from zero at each run).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub routers: BTreeMap<String, RouterStats>,
    /// Routers whose forwarding loop stalled during the run longer than
    /// [`crate::runner::ROUTER_STALL_LIMIT_NS`]: node → its longest turn or gap, ns. A
    /// stalled router held frames in its rings (or lost them), so the run's delays and
    /// losses may be the router's, not the path's.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub router_stalls: BTreeMap<String, u64>,
}

fn one() -> u32 {
    1
}

fn is_one(n: &u32) -> bool {
    *n == 1
}

/// `resolved.json`: the plan as `dualperf run` expanded it, and each point's `send`
/// arguments.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Resolved {
    /// [`FORMAT_VERSION`].
    pub format_version: u32,
    /// Whether the plan ran with `--quick`.
    pub quick: bool,
    /// The expanded plan.
    pub plan: Plan,
    /// Each point's `dualperf send` arguments, in point order.
    pub point_args: Vec<Vec<String>>,
    /// `dualperf run --repetitions`, `--duration`: what the run was started with
    /// instead of the plan's values (the plan above has them already); a resume goes
    /// on with the same.
    #[serde(default, skip_serializing_if = "Overrides::is_none")]
    pub overrides: Overrides,
}

impl Resolved {
    /// The resolved form of `plan`.
    pub fn new(plan: &Plan, quick: bool) -> Self {
        Self {
            format_version: FORMAT_VERSION,
            quick,
            plan: plan.clone(),
            point_args: plan.points.iter().map(|p| p.args()).collect(),
            overrides: Overrides::default(),
        }
    }

    /// The same, recording the overrides `plan` was run with.
    pub fn with_overrides(mut self, overrides: Overrides) -> Self {
        self.overrides = overrides;
        self
    }

    /// Read one back. The declared tables are read one by one, as a plan's would be
    /// (the file may have been edited): a table that does not read, or names a metric
    /// the standard vocabulary lacks or a unit its metric does not have, is left out,
    /// and its 1-based position returned.
    pub fn parse(bytes: &[u8]) -> Result<(Self, Vec<usize>), serde_json::Error> {
        Self::parse_with(bytes, &Vocabulary::standard())
    }

    /// The same, the tables' metrics read from `vocabulary`.
    pub fn parse_with(
        bytes: &[u8],
        vocabulary: &Vocabulary,
    ) -> Result<(Self, Vec<usize>), serde_json::Error> {
        let mut value: serde_json::Value = serde_json::from_slice(bytes)?;
        let tables = match value.get_mut("plan") {
            Some(plan) => plan
                .get_mut("tables")
                .map(serde_json::Value::take)
                .unwrap_or_default(),
            None => serde_json::Value::Null,
        };
        if let Some(plan) = value.get_mut("plan").and_then(|p| p.as_object_mut()) {
            plan.insert("tables".into(), serde_json::Value::Array(Vec::new()));
        }
        let mut resolved: Self = serde_json::from_value(value)?;
        let mut left_out = Vec::new();
        for (i, v) in tables.as_array().into_iter().flatten().enumerate() {
            match read_table(v.clone(), vocabulary) {
                Some(t) => resolved.plan.tables.push(t),
                None => left_out.push(i + 1),
            }
        }
        Ok((resolved, left_out))
    }

    /// Whether `other` measures the same runs: equal but for the report's tables, which
    /// only present what was measured. Run directories of the same measurement resume
    /// and pool whatever tables their plans declare.
    pub fn same_measurement(&self, other: &Self) -> bool {
        let strip = |r: &Self| {
            let mut r = r.clone();
            r.plan.tables.clear();
            r
        };
        strip(self) == strip(other)
    }
}

/// A table of `resolved.json`, its metrics by key from `vocabulary` and their units
/// from the metrics; `None` when it does not read.
fn read_table(mut v: serde_json::Value, vocabulary: &Vocabulary) -> Option<TableSpec> {
    /// A column as written, its metric by key.
    #[derive(Deserialize)]
    struct Written {
        metric: String,
        unit: Unit,
        #[serde(default)]
        flow: u8,
        #[serde(default)]
        router: Option<String>,
    }
    let written: Vec<Written> = serde_json::from_value(v.get_mut("metrics")?.take()).ok()?;
    v["metrics"] = serde_json::Value::Array(Vec::new());
    let mut spec: TableSpec = serde_json::from_value(v).ok()?;
    for c in written {
        let metric = vocabulary.get(&c.metric)?;
        spec.metrics.push(Column {
            unit: Unit::parse(&metric, &c.unit.name)?,
            metric,
            flow: c.flow,
            router: c.router,
        });
    }
    (!spec.metrics.is_empty()).then_some(spec)
}

/// `host.json` (and `host-resumed-UNIX.json`): where a plan ran (flent's metadata, for
/// one host).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct HostInfo {
    /// [`FORMAT_VERSION`].
    pub format_version: u32,
    /// dualperf's version.
    pub dualperf: String,
    /// `/proc/sys/kernel/osrelease`.
    pub kernel: Option<String>,
    /// `/proc/sys/kernel/hostname`.
    pub hostname: Option<String>,
    /// The CPU's model name.
    pub cpu: Option<String>,
    /// CPUs this process may use.
    pub cpus: Option<usize>,
    /// The sysctls that change IPv4/IPv6 results (`net.ipv6.auto_flowlabels`, …), as
    /// read; `None` where unreadable.
    pub sysctls: BTreeMap<String, Option<String>>,
    /// `tc qdisc show dev lo`.
    pub qdisc_lo: Option<String>,
    /// The plan's target.
    pub target: String,
}

/// What a background flow of a run left: its report, or why there is none.
#[derive(Clone, Debug, PartialEq, Serialize, JsonSchema)]
#[serde(untagged)]
pub enum Background {
    /// Its `dualperf send --json`.
    Report(Box<SendReport>),
    /// It printed no report.
    Failed {
        /// Its exit status; `None` when a signal ended it.
        exit_code: Option<i32>,
        /// What it said on stderr.
        stderr: String,
    },
}

/// Read through a JSON value rather than serde's untagged buffering, which cannot read
/// a report's maps keyed by numbers (`marking.dscp`: `{"46": 1000}`).
impl<'de> Deserialize<'de> for Background {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        struct Failed {
            exit_code: Option<i32>,
            stderr: String,
        }
        let value = serde_json::Value::deserialize(d)?;
        if value.get("flows").is_some() {
            let report = serde_json::from_value(value).map_err(serde::de::Error::custom)?;
            return Ok(Self::Report(Box::new(report)));
        }
        let f: Failed = serde_json::from_value(value).map_err(serde::de::Error::custom)?;
        Ok(Self::Failed {
            exit_code: f.exit_code,
            stderr: f.stderr,
        })
    }
}

impl Background {
    /// Its report, if it gave one.
    pub fn report(&self) -> Option<&SendReport> {
        match self {
            Self::Report(r) => Some(r),
            Self::Failed { .. } => None,
        }
    }
}

impl Column {
    /// Its value in a run: from the measured flow's report, the background flow's, or
    /// the router's counters.
    pub fn of(&self, record: &RunRecord) -> Option<f64> {
        if let Some(node) = &self.router {
            let stats = record.routers.get(node)?;
            return match self.metric.router_figure()? {
                RouterFigure::CpuPerFrame => stats.cpu.cpu_ns_per_frame,
                RouterFigure::QosPerFrame => stats.cpu.qos_ns_per_frame,
                RouterFigure::RsvpPerFrame => stats.cpu.rsvp_ns_per_frame,
            };
        }
        match self.flow {
            // A metric of every flow (reservations admitted) takes the background
            // flows' reports too.
            0 if self.metric.of_every_flow() => self.metric.of_run(
                record
                    .report
                    .iter()
                    .chain(record.background.iter().filter_map(Background::report)),
            ),
            0 => self.metric.of(record.report.as_ref()?),
            n => self
                .metric
                .of(record.background.get(usize::from(n) - 1)?.report()?),
        }
    }
}

/// A run directory.
#[derive(Clone, Debug)]
pub struct Store {
    dir: PathBuf,
}

impl Store {
    /// A store in `dir`, created if missing.
    pub fn create(dir: &Path) -> Result<Self, StoreError> {
        std::fs::create_dir_all(dir.join("runs")).map_err(io(dir))?;
        Ok(Self {
            dir: dir.to_owned(),
        })
    }

    /// An existing store, for reading.
    pub fn open(dir: &Path) -> Result<Self, StoreError> {
        let runs = dir.join("runs");
        if !runs.is_dir() {
            return Err(StoreError::Format {
                path: dir.to_owned(),
                message: "not a dualperf run directory (no runs/)".into(),
            });
        }
        Ok(Self {
            dir: dir.to_owned(),
        })
    }

    /// The directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Whether the directory holds anything measured.
    pub fn has_runs(&self) -> Result<bool, StoreError> {
        let runs = self.dir.join("runs");
        let mut entries = std::fs::read_dir(&runs).map_err(io(&runs))?;
        Ok(entries.any(|e| e.is_ok_and(|e| e.path().extension().is_some_and(|x| x == "json"))))
    }

    /// Write `name` whole: to a temporary file first, then renamed into place.
    pub fn write_file(&self, name: &str, bytes: &[u8]) -> Result<(), StoreError> {
        let path = self.dir.join(name);
        let tmp = self.dir.join(format!("{name}.tmp"));
        let mut f = std::fs::File::create(&tmp).map_err(io(&tmp))?;
        f.write_all(bytes).map_err(io(&tmp))?;
        f.sync_all().map_err(io(&tmp))?;
        std::fs::rename(&tmp, &path).map_err(io(&path))
    }

    /// Write `name` as pretty JSON, whole.
    pub fn write_json(&self, name: &str, value: &impl Serialize) -> Result<(), StoreError> {
        let text = serde_json::to_vec_pretty(value).map_err(|e| StoreError::Format {
            path: self.dir.join(name),
            message: e.to_string(),
        })?;
        self.write_file(name, &text)
    }

    /// A lab plan's lab, kept with the results under `lab/`: its topology as given
    /// (`text`) and as read, each router's configuration and QoS file, and the QoS files
    /// the points name (`qos_files`, by the name the plan gives each, made file-safe).
    pub fn keep_lab(
        &self,
        t: &Topology,
        text: &str,
        qos_files: &BTreeMap<String, String>,
    ) -> Result<(), StoreError> {
        let lab_dir = self.dir.join("lab");
        std::fs::create_dir_all(&lab_dir).map_err(|source| StoreError::Create {
            path: lab_dir.clone(),
            source,
        })?;
        self.write_file("lab/topology.toml", text.as_bytes())?;
        self.write_json("lab/topology.json", t)?;
        for (i, n) in t.nodes.iter().enumerate() {
            if n.kind == Kind::Router {
                let cfg = toml::to_string(&t.router_config(i)).unwrap_or_default();
                self.write_file(&format!("lab/{}.toml", n.name), cfg.as_bytes())?;
                if let Some(q) = &n.qos {
                    self.write_file(&format!("lab/{}.qos.toml", n.name), q.text.as_bytes())?;
                }
            }
        }
        for (file, text) in qos_files {
            self.write_file(
                &format!("lab/{}", crate::plan::file_safe(file)),
                text.as_bytes(),
            )?;
        }
        Ok(())
    }

    fn run_name(id: &str) -> String {
        format!("runs/{id}.json")
    }

    /// Whether run `id` is finished.
    pub fn has_run(&self, id: &str) -> bool {
        self.dir.join(Self::run_name(id)).is_file()
    }

    /// Store a finished run.
    pub fn put_run(&self, record: &RunRecord) -> Result<(), StoreError> {
        self.write_json(&Self::run_name(&record.run.id), record)
    }

    /// Keep a failed run for its stderr, beside the finished ones; it does not count as
    /// finished, so `--resume` measures it again.
    pub fn put_failed_run(&self, record: &RunRecord) -> Result<(), StoreError> {
        self.write_json(&format!("runs/{}.failed", record.run.id), record)
    }

    /// Keep what host `name`'s agent said at the start (`dualperf clock --peer --json`)
    /// as `hosts/NAME/host.json`, or, when that exists (a resumed plan),
    /// `hosts/NAME/host-resumed-UNIX.json` with the controller's time in the document.
    /// Returns the file's path in the directory.
    pub fn put_host_clock(&self, name: &str, doc: &PeerClockDoc) -> Result<String, StoreError> {
        let dir = format!("hosts/{}", crate::plan::file_safe(name));
        let path = self.dir.join(&dir);
        std::fs::create_dir_all(&path).map_err(io(&path))?;
        let file = if path.join("host.json").exists() {
            format!(
                "{dir}/host-resumed-{}.json",
                doc.local.wall_unix_ns / 1_000_000_000
            )
        } else {
            format!("{dir}/host.json")
        };
        self.write_json(&file, doc)?;
        Ok(file)
    }

    /// Every host's `hosts/NAME/host.json`, by name; read back through its type (a file
    /// of another format version is an error).
    pub fn host_clocks(&self) -> Result<BTreeMap<String, PeerClockDoc>, StoreError> {
        let dir = self.dir.join("hosts");
        let mut out = BTreeMap::new();
        let Ok(entries) = std::fs::read_dir(&dir) else {
            return Ok(out);
        };
        for e in entries {
            let e = e.map_err(io(&dir))?;
            let path = e.path().join("host.json");
            if !path.is_file() {
                continue;
            }
            let bytes = std::fs::read(&path).map_err(io(&path))?;
            let doc: PeerClockDoc =
                serde_json::from_slice(&bytes).map_err(|e| StoreError::Format {
                    path: path.clone(),
                    message: e.to_string(),
                })?;
            if doc.format_version != CLOCK_FORMAT_VERSION {
                return Err(StoreError::Format {
                    path,
                    message: format!(
                        "format version {} is not {CLOCK_FORMAT_VERSION}",
                        doc.format_version
                    ),
                });
            }
            out.insert(e.file_name().to_string_lossy().into_owned(), doc);
        }
        Ok(out)
    }

    /// Keep the host's checks when the plan started (`dualperf doctor`) as `doctor.json`,
    /// or, when that exists (a resumed plan), `doctor-resumed-UNIX.json` with the
    /// checks' time. Returns the file's name.
    pub fn put_doctor(&self, doc: &DoctorDoc) -> Result<String, StoreError> {
        let file = if self.dir.join(DOCTOR_FILE).exists() {
            format!(
                "doctor-resumed-{}.json",
                doc.checked_unix_ns / 1_000_000_000
            )
        } else {
            DOCTOR_FILE.to_owned()
        };
        self.write_json(&file, doc)?;
        Ok(file)
    }

    /// The host's checks the directory keeps, `doctor.json` first, then those of
    /// resumes in file-name order; none in a directory from before `dualperf doctor`.
    /// Each is read back through its type (a file of another format version is an
    /// error).
    pub fn doctors(&self) -> Result<Vec<(String, DoctorDoc)>, StoreError> {
        let mut names: Vec<String> = std::fs::read_dir(&self.dir)
            .map_err(io(&self.dir))?
            .filter_map(|e| e.ok()?.file_name().into_string().ok())
            .filter(|n| n.starts_with("doctor-resumed-") && n.ends_with(".json"))
            .collect();
        names.sort();
        if self.dir.join(DOCTOR_FILE).is_file() {
            names.insert(0, DOCTOR_FILE.to_owned());
        }
        names
            .into_iter()
            .map(|name| {
                let path = self.dir.join(&name);
                let bytes = std::fs::read(&path).map_err(io(&path))?;
                let doc: DoctorDoc =
                    serde_json::from_slice(&bytes).map_err(|e| StoreError::Format {
                        path: path.clone(),
                        message: e.to_string(),
                    })?;
                if doc.format_version != DOCTOR_FORMAT_VERSION {
                    return Err(StoreError::Format {
                        path,
                        message: format!(
                            "format version {} is not {DOCTOR_FORMAT_VERSION}",
                            doc.format_version
                        ),
                    });
                }
                Ok((name, doc))
            })
            .collect()
    }

    /// Every finished run, in file-name order.
    pub fn runs(&self) -> Result<Vec<RunRecord>, StoreError> {
        let dir = self.dir.join("runs");
        let mut paths: Vec<PathBuf> = std::fs::read_dir(&dir)
            .map_err(io(&dir))?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "json"))
            .collect();
        paths.sort();
        paths
            .iter()
            .map(|p| {
                let text = std::fs::read(p).map_err(io(p))?;
                let record: RunRecord =
                    serde_json::from_slice(&text).map_err(|e| StoreError::Format {
                        path: p.clone(),
                        message: e.to_string(),
                    })?;
                if record.format_version != FORMAT_VERSION {
                    return Err(StoreError::Format {
                        path: p.clone(),
                        message: format!(
                            "format version {} is not {FORMAT_VERSION}",
                            record.format_version
                        ),
                    });
                }
                Ok(record)
            })
            .collect()
    }
}

/// A run directory whose plan has runs it does not hold yet.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Unfinished {
    /// The directory.
    pub dir: PathBuf,
    /// Its finished runs.
    pub done: usize,
    /// The runs its plan lists.
    pub total: usize,
}

/// The newest unfinished run directory of the plan named `plan` under `parent`, among
/// those named as `dualperf run` names one it picks (`NAME-UNIXTIME`, the name made
/// file-safe; the newest has the largest time): one whose `resolved.json` names the
/// plan and lists a run without a result. `None` when there is none.
pub fn latest_unfinished(parent: &Path, plan: &str) -> Option<Unfinished> {
    let prefix = format!("{}-", crate::plan::file_safe(plan));
    let entries = std::fs::read_dir(parent).ok()?;
    let mut found: Option<(u64, Unfinished)> = None;
    for e in entries.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let Some(time) = name
            .strip_prefix(&prefix)
            .filter(|t| !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit()))
            .and_then(|t| t.parse::<u64>().ok())
        else {
            continue;
        };
        if found.as_ref().is_some_and(|(t, _)| *t >= time) {
            continue;
        }
        let dir = e.path();
        let Some((resolved, _)) = std::fs::read(dir.join("resolved.json"))
            .ok()
            .and_then(|b| Resolved::parse(&b).ok())
        else {
            continue;
        };
        if resolved.plan.name != plan {
            continue;
        }
        let store = Store { dir: dir.clone() };
        let total = resolved.plan.runs.len();
        let done = resolved
            .plan
            .runs
            .iter()
            .filter(|r| store.has_run(&r.id))
            .count();
        if done < total {
            found = Some((time, Unfinished { dir, done, total }));
        }
    }
    found.map(|(_, u)| u)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_latest_unfinished_run_of_a_plan_is_found_by_its_directory_name() {
        let parent = temp("unfinished");
        std::fs::create_dir_all(&parent).unwrap();
        let plan = tiny_plan(false);
        assert_eq!(plan.runs.len(), 4);
        // x-100: unfinished (1 of 4); x-300: finished; x-200: unfinished (0 of 4);
        // x-400: another plan's; x-500: no resolved.json; y-900, x-9z: not this
        // plan's names.
        let make = |name: &str, plan: &Plan, done: usize| {
            let s = Store::create(&parent.join(name)).unwrap();
            s.write_json("resolved.json", &Resolved::new(plan, false))
                .unwrap();
            for r in &plan.runs[..done] {
                std::fs::write(s.dir().join(format!("runs/{}.json", r.id)), b"{}").unwrap();
            }
        };
        make("x-100", &plan, 1);
        assert_eq!(
            latest_unfinished(&parent, "x"),
            Some(Unfinished {
                dir: parent.join("x-100"),
                done: 1,
                total: 4
            })
        );
        make("x-300", &plan, 4);
        make("x-200", &plan, 0);
        let mut other = plan.clone();
        other.name = "y".into();
        make("x-400", &other, 0);
        Store::create(&parent.join("x-500")).unwrap();
        make("y-900", &plan, 0);
        make("x-9z", &plan, 0);
        let got = latest_unfinished(&parent, "x").unwrap();
        assert_eq!((got.dir, got.done), (parent.join("x-200"), 0));
        assert_eq!(latest_unfinished(&parent, "z"), None);
        assert_eq!(latest_unfinished(&parent.join("nowhere"), "x"), None);
        let _ = std::fs::remove_dir_all(&parent);
    }

    fn temp(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("dualperf-store-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        d
    }

    fn tiny_plan(quick: bool) -> Plan {
        let text = "version = 1\nname = \"x\"\nduration = \"1s\"\n\n[flow]\nudp = true\n\n[factors]\nsize = [64, 512]\n\n[[tables]]\ntitle = \"T\"\nmetrics = [\"loss\", \"throughput:Mbps\"]\n";
        Plan::parse(text, quick).unwrap()
    }

    #[test]
    fn resolved_plans_read_back_and_differ_only_by_what_they_measure() {
        let a = Resolved::new(&tiny_plan(false), false);
        let text = serde_json::to_vec(&a).unwrap();
        let (back, left_out) = Resolved::parse(&text).unwrap();
        assert_eq!(back, a);
        assert!(left_out.is_empty());
        // Tables only present what was measured; --quick measures something else.
        let mut b = a.clone();
        b.plan.tables.clear();
        assert!(a.same_measurement(&b));
        let c = Resolved::new(&tiny_plan(true), true);
        assert!(!a.same_measurement(&c));
        // An edited table that no longer reads is left out, and named; the rest reads.
        let mut v: serde_json::Value = serde_json::from_slice(&text).unwrap();
        let good = v["plan"]["tables"][0].clone();
        let mut bad_unit = good.clone();
        bad_unit["metrics"][1]["unit"]["name"] = "furlongs".into();
        v["plan"]["tables"] = serde_json::json!([good, {"title": 3}, bad_unit]);
        let (back, left_out) = Resolved::parse(&serde_json::to_vec(&v).unwrap()).unwrap();
        assert_eq!(left_out, [2, 3]);
        assert_eq!(back.plan.tables, a.plan.tables);
        assert!(Resolved::parse(b"{\"plan\": 1}").is_err());
    }

    /// A flow's reservation as `send --reserve` reports it.
    fn reserved(setup_ns: Option<u64>, state: &str) -> serde_json::Value {
        serde_json::json!({
            "service": "controlled-load", "style": "FF", "filter": "flow-label",
            "rate_bytes_per_s": 25960.0, "burst_bytes": 1298, "setup_ns": setup_ns,
            "refreshes_sent": 0, "resv_received": u64::from(setup_ns.is_some()),
            "state": state,
            "refused": (state == "refused").then(|| serde_json::json!(
                {"code": 1, "value": 2, "node": "198.18.3.1"})),
        })
    }

    #[test]
    fn reservation_figures_come_from_every_flow_and_the_routers_rsvp_time() {
        let with = |r: serde_json::Value| {
            crate::testdata::report(serde_json::json!({"flows": [{"reservation": r}]}))
        };
        let mut routers = BTreeMap::new();
        let mut r1 = RouterStats::default();
        r1.cpu.rsvp_ns_per_frame = Some(812.5);
        r1.cpu.qos_ns_per_frame = Some(301.0);
        routers.insert("r1".to_owned(), r1);
        let mut record = RunRecord {
            format_version: FORMAT_VERSION,
            run: Run {
                id: "rep001-flow_label-ipv6".into(),
                point: 0,
                family: 6,
                repetition: 1,
            },
            point: "flow label".into(),
            argv: Vec::new(),
            started_unix_ns: 0,
            exit_code: 0,
            stderr: String::new(),
            report: Some(with(reserved(Some(1_834_500), "reserved"))),
            attempts: 1,
            background: vec![
                Background::Report(Box::new(with(reserved(Some(2_000_000), "torn")))),
                Background::Report(Box::new(with(reserved(None, "refused")))),
                Background::Failed {
                    exit_code: Some(1),
                    stderr: "no report".into(),
                },
                // The base load asks for no reservation.
                Background::Report(Box::new(crate::testdata::report(serde_json::json!({})))),
            ],
            routers,
            router_stalls: BTreeMap::new(),
        };
        let table: toml::Table = toml::from_str(
            r#"title = "T"
metrics = ["r1.qos_per_frame:ns", "r1.rsvp_per_frame:ns", "setup_latency", "admitted", "refused", "bg1.admitted"]"#,
        )
        .unwrap();
        let spec = crate::tables::parse_table(&table, &Vocabulary::standard()).unwrap();
        let values =
            |r: &RunRecord| -> Vec<Option<f64>> { spec.metrics.iter().map(|c| c.of(r)).collect() };
        assert_eq!(spec.metrics[2].unit.name, "ms");
        assert_eq!(
            values(&record),
            [
                Some(301.0),
                Some(812.5),
                Some(1_834_500.0),
                Some(2.0),
                Some(1.0),
                Some(1.0)
            ]
        );
        // Without any reservation: no figures, not zeros.
        record.report = Some(crate::testdata::report(serde_json::json!({})));
        record.background.truncate(0);
        record.routers.clear();
        assert_eq!(values(&record), [None; 6]);
    }

    #[test]
    fn background_reports_and_failures_read_back() {
        // A report's maps keyed by numbers (the DSCP histogram) read back too.
        let report = crate::testdata::report(serde_json::json!({}));
        assert!(!report.flows[0]
            .received
            .as_ref()
            .unwrap()
            .marking
            .dscp_seen
            .is_empty());
        let background = vec![
            Background::Report(Box::new(report)),
            Background::Failed {
                exit_code: Some(1),
                stderr: "cannot reach".into(),
            },
        ];
        let text = serde_json::to_string(&background).unwrap();
        let back: Vec<Background> = serde_json::from_str(&text).unwrap();
        assert_eq!(back, background);
        assert!(back[0].report().is_some() && back[1].report().is_none());
        assert!(serde_json::from_str::<Background>(r#"{"stderr": 1}"#).is_err());
    }

    #[test]
    fn runs_are_written_whole_and_read_back() {
        let dir = temp("rw");
        let s = Store::create(&dir).unwrap();
        assert!(!s.has_runs().unwrap());
        let record = RunRecord {
            format_version: FORMAT_VERSION,
            run: Run {
                id: "rep001-size=64-ipv4".into(),
                point: 0,
                family: 4,
                repetition: 1,
            },
            point: "size=64".into(),
            argv: vec!["send".into()],
            started_unix_ns: 1,
            exit_code: 0,
            stderr: String::new(),
            background: Vec::new(),
            routers: BTreeMap::new(),
            router_stalls: BTreeMap::new(),
            report: None,
            attempts: 1,
        };
        s.put_run(&record).unwrap();
        assert!(s.has_run("rep001-size=64-ipv4"));
        assert!(!s.has_run("rep002-size=64-ipv4"));
        // A leftover temporary file of a killed write is not a finished run.
        std::fs::write(dir.join("runs/rep002-size=64-ipv4.json.tmp"), b"{").unwrap();
        assert!(!s.has_run("rep002-size=64-ipv4"));
        assert_eq!(Store::open(&dir).unwrap().runs().unwrap(), vec![record]);
        std::fs::write(dir.join("runs/bad.json"), b"{").unwrap();
        assert!(s.runs().is_err());
        assert!(Store::open(&dir.join("nowhere")).is_err());
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn the_doctors_checks_are_kept_and_a_directory_without_them_reads() {
        use results::doctor::{Check, CheckId, Figures, Status};
        let dir = temp("doctor");
        let s = Store::create(&dir).unwrap();
        // A run directory from before the doctor: none, and no error.
        assert!(s.doctors().unwrap().is_empty());
        let figures: Figures = serde_json::from_value(serde_json::json!({
            "clocksource": "tsc", "clock_read_ns": 20.0, "timer_resolution_ns": 1,
            "sleep_wait_ns": 1_000_000, "sleep_samples": 100, "sleep_overshoot_p50_ns": 1,
            "sleep_overshoot_p99_ns": 2, "timer_slack_ns": 50_000, "governors": [],
            "idle_driver": null, "idle_exit_latency_max_ns": null, "steal_pct": 0.0,
            "steal_sample_ns": 100_000_000, "steal_since_boot_pct": 0.0,
            "rmem_max_bytes": null, "wmem_max_bytes": null, "tcp_rmem_max_bytes": null,
            "tcp_wmem_max_bytes": null, "clock_synchronised": true, "cap_net_admin": true,
            "cap_net_raw": true, "cpus_online": 2, "cpus_allowed": 2
        }))
        .unwrap();
        let doc = DoctorDoc {
            format_version: DOCTOR_FORMAT_VERSION,
            tool: "dualperf 0.1.0".into(),
            checked_unix_ns: 1_800_000_000_123_456_789,
            status: Status::Warn,
            checks: vec![Check {
                id: CheckId::Steal,
                title: "Steal time".into(),
                status: Status::Warn,
                found: "4 %".into(),
                why: "w".into(),
                fix: None,
            }],
            figures,
        };
        assert_eq!(s.put_doctor(&doc).unwrap(), "doctor.json");
        // A resume keeps the first and adds its own.
        assert_eq!(
            s.put_doctor(&doc).unwrap(),
            "doctor-resumed-1800000000.json"
        );
        let back = s.doctors().unwrap();
        let names: Vec<&str> = back.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["doctor.json", "doctor-resumed-1800000000.json"]);
        assert_eq!(back[0].1, doc);
        let mut other = serde_json::to_value(&doc).unwrap();
        other["format_version"] = 2.into();
        std::fs::write(dir.join("doctor.json"), other.to_string()).unwrap();
        let e = s.doctors().unwrap_err();
        assert!(e.to_string().contains("format version 2 is not 1"), "{e}");
        std::fs::write(dir.join("doctor.json"), b"{").unwrap();
        assert!(s.doctors().is_err());
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn hosts_clocks_are_kept_per_host_and_read_back_through_their_type() {
        let dir = temp("hosts");
        let s = Store::create(&dir).unwrap();
        assert!(s.host_clocks().unwrap().is_empty());
        let host = |name: &str| results::clock::HostDoc {
            tool: "dualperf 0.1.0".into(),
            hostname: name.into(),
            kernel: "Linux".into(),
            cpus: 1,
            boot_id: Some("b".into()),
            clock: results::clock::SyncState::default(),
            wall_unix_ns: 1_800_000_000_123_456_789,
        };
        let doc = PeerClockDoc {
            format_version: CLOCK_FORMAT_VERSION,
            peer: "[2001:2::1]:4646".parse().unwrap(),
            local: host("ctl"),
            remote: host("agent"),
            offset: None,
        };
        assert_eq!(
            s.put_host_clock("bg-a", &doc).unwrap(),
            "hosts/bg-a/host.json"
        );
        // A resume keeps the first answer and adds its own.
        assert_eq!(
            s.put_host_clock("bg-a", &doc).unwrap(),
            "hosts/bg-a/host-resumed-1800000000.json"
        );
        let back = s.host_clocks().unwrap();
        assert_eq!(back.len(), 1);
        assert_eq!(back["bg-a"], doc);
        // Another format is not read as this one.
        let mut other = serde_json::to_value(&doc).unwrap();
        other["format_version"] = 2.into();
        std::fs::create_dir_all(dir.join("hosts/x")).unwrap();
        std::fs::write(dir.join("hosts/x/host.json"), other.to_string()).unwrap();
        let e = s.host_clocks().unwrap_err();
        assert!(e.to_string().contains("format version 2 is not 1"), "{e}");
        std::fs::write(dir.join("hosts/x/host.json"), b"{\"peer\": 1}").unwrap();
        assert!(s.host_clocks().is_err());
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_lab_is_kept_with_its_topology_routers_and_qos_files() {
        let store = Store::create(&temp("keep-lab")).unwrap();
        let text = crate::topology::builtin("topologies/two-hop.toml").unwrap();
        let t = Topology::parse_at(text, None).unwrap();
        let qos = BTreeMap::from([("qos/ef.toml".to_owned(), "# ef\n".to_owned())]);
        store.keep_lab(&t, text, &qos).unwrap();
        let lab = store.dir().join("lab");
        let mut files: Vec<String> = std::fs::read_dir(&lab)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        files.sort();
        let read = |f: &str| std::fs::read_to_string(lab.join(f)).unwrap();
        let (topology, ef, r1) = (read("topology.toml"), read("qos_ef.toml"), read("r1.toml"));
        let back: Topology = serde_json::from_str(&read("topology.json")).unwrap();
        let _ = std::fs::remove_dir_all(store.dir());
        assert_eq!(
            files,
            [
                "qos_ef.toml",
                "r1.toml",
                "r2.toml",
                "topology.json",
                "topology.toml"
            ]
        );
        assert_eq!(topology, text);
        assert_eq!(ef, "# ef\n");
        assert_eq!(
            r1,
            toml::to_string(&t.router_config(t.node("r1").unwrap())).unwrap()
        );
        assert_eq!(back.name, "two-hop");
    }
}
