//! Experiment plans: a TOML file that names a base flow, the factors to sweep, the
//! repetitions and the order, expanded into the list of runs to measure.
//!
//! ```toml
//! version = 1                      # plan format
//! name = "udp-sizes"
//! description = "UDP at three sizes, IPv4 against IPv6"
//! repetitions = 15
//! duration = "60s"                 # of each run
//! order = "interleaved"            # IPv4 and IPv6 alternate (ABAB…); "alternating" (ABBA…); or "random"
//! seed = 1                         # of "random"
//! target = "loopback"              # or "lab:topologies/two-hop.toml" (relative to the plan),
//!                                  # or "hosts" (agents on real hosts: see `hosts`)
//! background_lead = "2s"           # background flows start this long before the measured one
//! interval = "1s"                  # the measured flow's series in these windows (report plots them)
//!
//! [flow]                           # the base flow: `dualperf send` options
//! udp = true
//! rate = "30000pps"
//! meter = "rtt"
//!
//! [factors]                        # swept as a cross product, in this order
//! size = [64, 512, 1024]           # any send option; `ip = [4, 6]` (the default) too
//!
//! [[points]]                       # extra points beside the sweep
//! label = "VoIP G.711.1"
//! group = "VoIP"                   # the report table it goes in (default: one for all)
//! voip = "g711.1"
//! # from = "HOST", to = "HOST"     # target = "hosts": the measured flow's ends
//! # Flows beside the measured one, from the lab's bg-a to bg-b (or from = "sender"),
//! # measured too (bg1.loss in a table); in [flow] they apply to every point.
//! background = [{ label = "UDP", udp = true, rate = "5mbit" }, { tcp = true, bulk = true }]
//! qos = { r1 = "qos/bouras-llq.toml" }   # lab router → QoS file for this point ("none")
//! factors = { flows = 8 }          # what the point stands for in tables and plots
//!
//! [[tables]]                       # the report's tables (see `tables`)
//! title = "Table 1. UDP throughput by size"
//! where = { protocol = "udp" }
//! metrics = ["throughput:Mbit/s"]
//!
//! [quick]                          # what `--quick` changes
//! repetitions = 1
//! duration = "2s"
//! ```
//!
//! A flow option `key = value` becomes `--key value` (`true` a bare `--key`, `false`
//! nothing); underscores become dashes. Runs are ordered repetition by repetition; within
//! a repetition each point runs over IPv4 then IPv6 (interleaved), or all of the
//! repetition's runs are shuffled with `seed` (random), so drift of the host does not
//! fall on one family. Every run has a stable id, so an interrupted plan resumes where
//! it stopped.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use toml::Spanned;

use crate::tables::{parse_table, TableSpec, Vocabulary};

pub mod fit;
pub mod peer;
pub(crate) mod point;
mod quick;
pub mod select;

pub use point::{
    file_safe, Background, PlanError, Point, SendOption, Setting, BACKGROUND_KEYS, FLOW_TABLE_KEYS,
    POINT_KEYS,
};
use point::{key_line, runner_owned};
use quick::{lengths, QuickFile};
use traffic::units::parse_duration;
use wire::time::Duration;

/// Most background flows a point may run.
pub const MAX_BACKGROUND: usize = 64;

/// The plan format this build reads.
pub const PLAN_VERSION: u32 = 1;
/// Most points a plan may sweep.
pub const MAX_POINTS: usize = 100_000;
/// Most runs a plan may have.
pub const MAX_RUNS: u64 = 1_000_000;

/// The order of runs within a repetition.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum Order {
    /// Each point over IPv4 then IPv6.
    #[default]
    Interleaved,
    /// Shuffled with the plan's seed.
    Random,
    /// Each point over both families back to back, the first family alternating from
    /// point to point and from repetition to repetition (IPv4 then IPv6, then IPv6 then
    /// IPv4, …), so neither always runs on a host the other has just warmed or
    /// disturbed: `dualperf compare`'s order.
    Alternating,
}

/// Where a plan's flows go (`target = …`), read once when the plan is parsed. Written
/// (plan files, `resolved.json`) as the plan spells it: `loopback`, `lab:TOPOLOGY.toml`,
/// `hosts`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub enum Target {
    /// On this host, to 127.0.0.1 and ::1.
    Loopback,
    /// A namespace lab built for the plan from this topology file (relative to the
    /// plan, as written after `lab:`); the flows go from its `sender` to its `receiver`.
    Lab(String),
    /// Between the agents of [`Plan::hosts`].
    Hosts,
    /// From here to the far end of [`Plan::peer`] ([`peer`]).
    Peer,
}

impl Target {
    /// The topology file of a lab target, trimmed.
    pub fn lab_topology(&self) -> Option<&str> {
        match self {
            Self::Lab(path) => Some(path.trim()),
            _ => None,
        }
    }

    /// The host checks that bear on measuring here.
    pub fn scope(&self) -> results::doctor::Scope {
        match self {
            Self::Loopback => results::doctor::Scope::Loopback,
            Self::Lab(_) => results::doctor::Scope::Lab,
            Self::Hosts | Self::Peer => results::doctor::Scope::Hosts,
        }
    }
}

impl std::str::FromStr for Target {
    type Err = ();

    fn from_str(s: &str) -> Result<Self, ()> {
        match s {
            "loopback" => Ok(Self::Loopback),
            "hosts" => Ok(Self::Hosts),
            "peer" => Ok(Self::Peer),
            _ => match s.strip_prefix("lab:") {
                Some(path) if !path.trim().is_empty() => Ok(Self::Lab(path.to_owned())),
                _ => Err(()),
            },
        }
    }
}

impl std::fmt::Display for Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Loopback => f.write_str("loopback"),
            Self::Lab(path) => write!(f, "lab:{path}"),
            Self::Hosts => f.write_str("hosts"),
            Self::Peer => f.write_str("peer"),
        }
    }
}

impl TryFrom<String> for Target {
    type Error = String;

    fn try_from(s: String) -> Result<Self, String> {
        s.parse().map_err(|()| {
            format!("target '{s}': \"loopback\", \"lab:TOPOLOGY.toml\", \"hosts\" or \"peer\"")
        })
    }
}

impl From<Target> for String {
    fn from(t: Target) -> Self {
        t.to_string()
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PlanFile {
    version: Spanned<u32>,
    name: String,
    #[serde(default)]
    description: String,
    #[serde(default)]
    repetitions: Option<Spanned<u32>>,
    duration: Spanned<String>,
    #[serde(default)]
    order: Order,
    #[serde(default)]
    seed: u64,
    #[serde(default)]
    target: Option<Spanned<String>>,
    #[serde(default)]
    background_lead: Option<Spanned<String>>,
    #[serde(default)]
    interval: Option<Spanned<String>>,
    #[serde(default)]
    flow: Option<Spanned<toml::Table>>,
    #[serde(default)]
    factors: Option<Spanned<toml::Table>>,
    #[serde(default)]
    points: Vec<Spanned<toml::Table>>,
    #[serde(default)]
    quick: Option<QuickFile>,
    #[serde(default)]
    tables: Vec<Spanned<toml::Table>>,
    #[serde(default)]
    hosts: Option<BTreeMap<String, Spanned<crate::hosts::HostFile>>>,
    #[serde(default)]
    stamp: Option<Spanned<StampFile>>,
    #[serde(default)]
    peer: Option<Spanned<peer::PeerFile>>,
}

/// `[stamp]`: the measured flows are STAMP sessions (RFC 8762) to a Session-Reflector
/// at the receiver's address.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct StampFile {
    #[serde(default)]
    port: Option<u16>,
    #[serde(default)]
    reflectors: Vec<Vec<String>>,
}

/// A plan's measured flows as STAMP sessions (`[stamp]`): `send --stamp` to the
/// receiver's address at `port`, where the runner first starts `reflectors` (commands,
/// in the receiver's namespace in a lab: one per family for a reflector that binds one),
/// or where one already listens.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct StampTarget {
    /// The reflector's UDP port (default 862).
    pub port: u16,
    /// The commands that run the reflector, each program first (`[["stamp-suite", "-i",
    /// …]]`); none: a reflector is already there.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub reflectors: Vec<Vec<String>>,
}

/// One measurement: a point over one family in one repetition.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Run {
    /// Stable id, also the result file's name.
    pub id: String,
    /// Index into [`Plan::points`].
    pub point: usize,
    /// 4 or 6.
    pub family: u8,
    /// From 1.
    pub repetition: u32,
}

/// A validated, expanded plan.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Plan {
    /// Plan name.
    pub name: String,
    /// What it reproduces.
    pub description: String,
    /// Repetitions of every point and family.
    pub repetitions: u32,
    /// Length of each run.
    #[serde(rename = "duration_ns")]
    pub duration: Duration,
    /// Order of runs within a repetition.
    pub order: Order,
    /// Seed of the random order.
    pub seed: u64,
    /// Where the flows go: `loopback`, `lab:TOPOLOGY.toml` (a namespace lab built for
    /// the plan; the flows go from its `sender` to its `receiver`), or `hosts` (between
    /// the agents of [`Plan::hosts`]).
    #[schemars(with = "String")]
    pub target: Target,
    /// `target = "hosts"`: the hosts, by name (`[hosts.NAME]`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub hosts: BTreeMap<String, crate::hosts::Host>,
    /// `[stamp]`: the measured flows are STAMP sessions to this reflector.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stamp: Option<StampTarget>,
    /// `target = "peer"`: the far end (`[peer]`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub peer: Option<peer::Peer>,
    /// The points.
    pub points: Vec<Point>,
    /// The families measured, from the `ip` factor.
    pub families: Vec<u8>,
    /// Every run, in the order they are measured.
    pub runs: Vec<Run>,
    /// The report's tables, in order; none: one per metric and group.
    pub tables: Vec<TableSpec>,
    /// How long background flows run before the measured one starts (default 2 s).
    #[serde(rename = "background_lead_ns", skip_serializing_if = "Option::is_none")]
    pub background_lead: Option<Duration>,
    /// `interval`: the measured flow reports its receiver-side series in windows of
    /// this length (`send --interval`), which `report` draws over time.
    #[serde(
        rename = "interval_ns",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub interval: Option<Duration>,
}

/// What one run costs beyond its duration: starting the sender, the control session,
/// waiting for the last echoes (an estimate for `--dry-run`, measured on loopback).
pub const RUN_OVERHEAD: Duration = Duration::from_millis(700);

impl Plan {
    /// Parse and expand a plan; `quick` applies its `[quick]` table. Its tables name
    /// metrics of the standard vocabulary.
    pub fn parse(text: &str, quick: bool) -> Result<Self, PlanError> {
        Self::parse_with(text, quick, &Vocabulary::standard())
    }

    /// The same, its tables' metrics checked against `vocabulary`. In phases: the file,
    /// its scalars, the base flow, the factors, the points, then what hangs off them.
    pub fn parse_with(text: &str, quick: bool, vocabulary: &Vocabulary) -> Result<Self, PlanError> {
        let file = read_file(text)?;
        let target = parse_target(text, file.target.as_ref())?;
        let declared = crate::hosts::parse_hosts(
            text,
            file.hosts.as_ref(),
            target == Target::Hosts,
            file.target
                .as_ref()
                .and_then(|t| line_at(text, t.span().start)),
        )?;
        let declared = declared.as_ref();
        let target_line = file
            .target
            .as_ref()
            .and_then(|t| line_at(text, t.span().start));
        let peer = peer::parse(text, file.peer.as_ref(), &target, target_line)?;
        let quick_file = if quick { file.quick.as_ref() } else { None };
        let (repetitions, duration) = lengths(text, &file, quick_file)?;
        let base = BaseFlow::parse(text, file.flow.as_ref(), declared)?;
        let background_lead = background_lead(text, file.background_lead.as_ref())?;
        let interval = interval(text, file.interval.as_ref(), file.stamp.is_some())?;
        if let Some(s) = base.settings.iter().find(|s| s.key == "ip") {
            return Err(PlanError::at(
                s.line,
                "ip is a factor (ip = [4, 6]), not a flow option",
            ));
        }
        let factors_table = quick_file
            .and_then(|q| q.factors.as_ref())
            .or(file.factors.as_ref());
        let (families, mut factors) = parse_factors(text, factors_table)?;
        let directions = peer::take_direction(
            text,
            &mut factors,
            factors_table.map(|t| t.span()),
            peer.as_ref(),
        )?;
        let mut points = sweep(text, &base, &factors, factors_table)?;
        for p in &file.points {
            points.push(extra_point(text, p, &base, declared)?);
        }
        if points.is_empty() {
            // No sweep and no extra point: the base flow alone.
            points.push(base.point("flow".into(), BTreeMap::new(), base.settings.clone()));
        }
        let mut points = quick::selected(text, quick_file, peer::cross(points, &directions))?;
        if let Some(declared) = declared {
            points.iter_mut().for_each(crate::hosts::resolve);
            crate::hosts::check_families(declared, &points, &families)?;
        }
        check_counts(&points, &families, repetitions)?;
        let tables = parse_tables(text, &file.tables, &points, vocabulary, quick)?;
        let stamp = parse_stamp(text, file.stamp, &target)?.or_else(|| peer::stamp(peer.as_ref()));
        let runs = order_runs(
            points.len(),
            &families,
            repetitions,
            file.order,
            file.seed,
            &points,
        );
        Ok(Self {
            name: file.name,
            description: file.description,
            repetitions,
            duration,
            order: file.order,
            seed: file.seed,
            target,
            hosts: declared.map(|d| d.hosts.clone()).unwrap_or_default(),
            stamp,
            peer,
            points,
            families,
            runs,
            tables,
            background_lead,
            interval,
        })
    }

    /// The measured flow's `send` arguments at `point`: its options with its seed
    /// ([`Plan::flow_args`]), and the plan's `interval`.
    pub fn measured_args(&self, point: &Point) -> Vec<String> {
        let mut args = self.flow_args(point);
        if let Some(i) = self.interval {
            args.extend(["--interval".to_owned(), format!("{}ns", i.as_nanos())]);
        }
        args
    }

    /// The point's flow options and `--seed` ([`Plan::seed`]): the same over both
    /// families, so IPv4 and IPv6 carry the same packet sequences.
    pub fn flow_args(&self, point: &Point) -> Vec<String> {
        seeded(point.args(), &point.settings, || {
            self.point_seed(point, None)
        })
    }

    /// A background flow's options and its own `--seed`, the same over both families.
    pub fn background_args(&self, point: &Point, flow: &Background) -> Vec<String> {
        seeded(flow.args(), &flow.settings, || {
            self.point_seed(point, Some(&flow.label))
        })
    }

    /// The seed of the random models (`--idt`, `--size-dist`, `--voip`'s talk spurts,
    /// `--app`, on/off periods) of a point's measured flow (`background`: of its
    /// background flow of that label), unless the flow sets `seed` itself: drawn from
    /// the plan's name and the point's id (and the label), so every run of the point,
    /// over either family and in every repetition, sends the same sequence.
    pub fn point_seed(&self, point: &Point, background: Option<&str>) -> u64 {
        flow_seed(&self.name, &point.id, background)
    }

    /// Run `repetitions` times and/or for `duration` each instead of the plan's values
    /// (`dualperf run --repetitions N --duration D`): the runs are ordered afresh.
    pub fn override_with(&mut self, o: &Overrides) -> Result<(), PlanError> {
        if let Some(r) = o.repetitions {
            if r == 0 {
                return Err(PlanError::at(None, "repetitions must be at least 1"));
            }
            let total = (self.points.len() as u64) * (self.families.len() as u64) * u64::from(r);
            if total > MAX_RUNS {
                return Err(PlanError::at(
                    None,
                    format!("{total} runs: a plan may have at most {MAX_RUNS}"),
                ));
            }
            self.repetitions = r;
            self.runs = order_runs(
                self.points.len(),
                &self.families,
                r,
                self.order,
                self.seed,
                &self.points,
            );
        }
        if let Some(d) = o.duration {
            if d == Duration::ZERO {
                return Err(PlanError::at(None, "the duration must be above 0"));
            }
            self.duration = d;
        }
        Ok(())
    }

    /// The topology file of a lab target, as written in the plan.
    pub fn lab_topology(&self) -> Option<&str> {
        self.target.lab_topology()
    }

    /// How long measuring every run takes, roughly (for `--dry-run` and the ETA).
    pub fn estimated(&self, runs: usize) -> Duration {
        let each = self.duration + RUN_OVERHEAD;
        // Runs with background flows wait for them first (and for the routers' reload).
        let with_bg = self
            .runs
            .iter()
            .filter(|r| !self.points[r.point].background.is_empty())
            .count();
        let lead = self
            .background_lead
            .unwrap_or(Duration::from_secs(2))
            .as_nanos()
            .saturating_mul(with_bg as u64)
            / self.runs.len().max(1) as u64;
        Duration::from_nanos((each.as_nanos() + lead).saturating_mul(runs as u64))
    }
}

/// The 1-based line of byte `offset` of a plan's text ([`wire::span::line_at`]).
fn line_at(text: &str, offset: usize) -> Option<usize> {
    Some(wire::span::line_at(text, offset))
}

/// The plan file as TOML reads it, of the format this build reads.
fn read_file(text: &str) -> Result<PlanFile, PlanError> {
    let file: PlanFile = toml::from_str(text).map_err(|e| {
        PlanError::at(
            e.span().and_then(|s| line_at(text, s.start)),
            e.message().to_owned(),
        )
    })?;
    if *file.version.get_ref() != PLAN_VERSION {
        return Err(PlanError::at(
            line_at(text, file.version.span().start),
            format!(
                "plan format version {} is not {PLAN_VERSION}, the one this dualperf reads",
                file.version.get_ref()
            ),
        ));
    }
    Ok(file)
}

/// `target`, read once: loopback when absent.
fn parse_target(text: &str, target: Option<&Spanned<String>>) -> Result<Target, PlanError> {
    let Some(t) = target else {
        return Ok(Target::Loopback);
    };
    t.get_ref().parse().map_err(|()| {
        PlanError::at(
            line_at(text, t.span().start),
            format!(
                "target '{}': \"loopback\", \"lab:TOPOLOGY.toml\" (a topology file, relative to the plan), \"hosts\" (with [hosts]) or \"peer\" (with [peer])",
                t.get_ref()
            ),
        )
    })
}

/// A table's flow options (`[flow]`, a `[[points]]` entry), each with its line.
fn settings_of(text: &str, table: &Spanned<toml::Table>) -> Result<Vec<Setting>, PlanError> {
    let mut out = Vec::new();
    for (key, value) in table.get_ref() {
        if FLOW_TABLE_KEYS.contains(&key.as_str()) {
            continue;
        }
        let line = key_line(text, table.span(), key);
        if let Some(why) = runner_owned(key) {
            return Err(PlanError::at(line, why));
        }
        out.push(Setting {
            key: key.clone(),
            value: scalar(value, line, key)?,
            line,
        });
    }
    Ok(out)
}

/// `[flow]`: what every point starts from.
struct BaseFlow {
    settings: Vec<Setting>,
    background: Option<Vec<Background>>,
    qos: Option<BTreeMap<String, String>>,
    from: Option<String>,
    to: Option<String>,
}

impl BaseFlow {
    fn parse(
        text: &str,
        flow: Option<&Spanned<toml::Table>>,
        declared: Option<&crate::hosts::Declared>,
    ) -> Result<Self, PlanError> {
        let Some(t) = flow else {
            return Ok(Self {
                settings: Vec::new(),
                background: None,
                qos: None,
                from: None,
                to: None,
            });
        };
        // A point's `factors` say what it stands for; the base flow is no point.
        if t.get_ref().contains_key("factors") {
            return Err(PlanError::at(
                key_line(text, t.span(), "factors"),
                "factors in [flow]: sweep options with the top-level [factors] table; a [[points]] entry's factors = { … } says what that point stands for",
            ));
        }
        let settings = settings_of(text, t)?;
        let (background, qos) = specials(text, t, declared)?;
        let (from, to) = crate::hosts::point_ends(text, t, declared)?;
        Ok(Self {
            settings,
            background,
            qos,
            from,
            to,
        })
    }

    /// A point of the base flow's background, QoS and hosts.
    fn point(
        &self,
        id: String,
        factors: BTreeMap<String, String>,
        settings: Vec<Setting>,
    ) -> Point {
        Point {
            id,
            factors,
            settings,
            background: self.background.clone().unwrap_or_default(),
            qos: self.qos.clone().unwrap_or_default(),
            from: self.from.clone(),
            to: self.to.clone(),
        }
    }
}

/// `background_lead`, at most 600 s.
fn background_lead(
    text: &str,
    lead: Option<&Spanned<String>>,
) -> Result<Option<Duration>, PlanError> {
    let Some(l) = lead else {
        return Ok(None);
    };
    parse_duration(l.get_ref())
        .ok()
        .filter(|d| *d <= Duration::from_secs(600))
        .map(Some)
        .ok_or_else(|| {
            PlanError::at(
                line_at(text, l.span().start),
                format!(
                    "background_lead '{}': a length such as 2s, at most 600s",
                    l.get_ref()
                ),
            )
        })
}

/// `interval`: from 10 ms to 1 h, and not with `[stamp]`.
fn interval(
    text: &str,
    interval: Option<&Spanned<String>>,
    stamp: bool,
) -> Result<Option<Duration>, PlanError> {
    let Some(l) = interval else {
        return Ok(None);
    };
    let line = line_at(text, l.span().start);
    let d = parse_duration(l.get_ref())
        .ok()
        .filter(|d| *d >= Duration::from_millis(10) && *d <= Duration::from_secs(3600))
        .ok_or_else(|| {
            PlanError::at(
                line,
                format!(
                    "interval '{}': a window length such as 1s or 100ms, from 10ms to 1h",
                    l.get_ref()
                ),
            )
        })?;
    if stamp {
        return Err(PlanError::at(
            line,
            "interval: STAMP flows ([stamp]) report no interval series",
        ));
    }
    Ok(Some(d))
}

/// A swept factor: its option, its values (`None`: a bare flag) and its line.
type Factor = (String, Vec<Option<String>>, Option<usize>);

/// `[factors]`: the families (`ip`, default 4 and 6) and the other factors, in order.
fn parse_factors(
    text: &str,
    table: Option<&Spanned<toml::Table>>,
) -> Result<(Vec<u8>, Vec<Factor>), PlanError> {
    let mut families = vec![4, 6];
    let mut factors = Vec::new();
    let Some(t) = table else {
        return Ok((families, factors));
    };
    for (key, value) in t.get_ref() {
        let line = key_line(text, t.span(), key);
        let toml::Value::Array(values) = value else {
            return Err(PlanError::at(
                line,
                format!("factor {key} must be a list of values"),
            ));
        };
        if values.is_empty() {
            return Err(PlanError::at(line, format!("factor {key} has no values")));
        }
        if key == "from" || key == "to" {
            return Err(PlanError::at(
                line,
                format!("{key} is not a factor: it names a point's host (target = \"hosts\")"),
            ));
        }
        if let Some(why) = runner_owned(key) {
            return Err(PlanError::at(line, format!("factor {why}")));
        }
        let values = values
            .iter()
            .map(|v| scalar(v, line, key))
            .collect::<Result<Vec<_>, _>>()?;
        if key == "ip" {
            families = values
                .iter()
                .map(|v| match v.as_deref() {
                    Some("4") => Ok(4),
                    Some("6") => Ok(6),
                    _ => Err(PlanError::at(line, "ip takes 4 and/or 6")),
                })
                .collect::<Result<_, _>>()?;
            let mut seen = Vec::new();
            families.retain(|f| {
                let first = !seen.contains(f);
                seen.push(*f);
                first
            });
            continue;
        }
        factors.push((key.clone(), values, line));
    }
    Ok((families, factors))
}

/// The cross product of the factors, the first factor varying slowest: one point each.
fn sweep(
    text: &str,
    base: &BaseFlow,
    factors: &[Factor],
    factors_table: Option<&Spanned<toml::Table>>,
) -> Result<Vec<Point>, PlanError> {
    let combos = factors
        .iter()
        .try_fold(1usize, |n, (_, v, _)| n.checked_mul(v.len()))
        .filter(|n| *n <= MAX_POINTS)
        .ok_or_else(|| {
            PlanError::at(
                factors_table.and_then(|t| line_at(text, t.span().start)),
                format!("the factors make more than {MAX_POINTS} points"),
            )
        })?;
    let mut points = Vec::new();
    if factors.is_empty() {
        return Ok(points);
    }
    for mut index in 0..combos {
        let mut chosen = Vec::new();
        for (key, values, line) in factors.iter().rev() {
            let v = &values[index % values.len()];
            index /= values.len();
            chosen.push((key.clone(), v.clone(), *line));
        }
        chosen.reverse();
        let mut settings = base.settings.clone();
        let mut named = BTreeMap::new();
        for (key, value, line) in chosen {
            named.insert(key.clone(), value.clone().unwrap_or_else(|| "true".into()));
            settings.retain(|s| s.key != key);
            settings.push(Setting { key, value, line });
        }
        let id = named
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join(",");
        points.push(base.point(id, named, settings));
    }
    Ok(points)
}

/// A `[[points]]` entry: its label, group and options over the base flow's.
fn extra_point(
    text: &str,
    p: &Spanned<toml::Table>,
    base: &BaseFlow,
    declared: Option<&crate::hosts::Declared>,
) -> Result<Point, PlanError> {
    let mut extra = settings_of(text, p)?;
    let (background, qos) = specials(text, p, declared)?;
    let (from, to) = crate::hosts::point_ends(text, p, declared)?;
    let label = match extra.iter().position(|s| s.key == "label") {
        Some(i) => extra.remove(i),
        None => {
            return Err(PlanError::at(
                line_at(text, p.span().start),
                "every [[points]] entry needs a label",
            ))
        }
    };
    let label_text = label.value.clone().unwrap_or_default();
    // `group` names the report table the point belongs to; it is not a flow option.
    let group = extra
        .iter()
        .position(|s| s.key == "group")
        .map(|i| extra.remove(i))
        .and_then(|g| g.value);
    let mut settings = base.settings.clone();
    for s in extra {
        settings.retain(|b| b.key != s.key);
        settings.push(s);
    }
    settings.push(Setting {
        key: "label".into(),
        value: Some(label_text.clone()),
        line: label.line,
    });
    let mut named = BTreeMap::from([("point".to_owned(), label_text.clone())]);
    if let Some(g) = group {
        named.insert("group".to_owned(), g);
    }
    point_factors(text, p, &mut named)?;
    Ok(Point {
        id: label_text,
        factors: named,
        settings,
        background: background
            .or_else(|| base.background.clone())
            .unwrap_or_default(),
        qos: qos.or_else(|| base.qos.clone()).unwrap_or_default(),
        from: from.or_else(|| base.from.clone()),
        to: to.or_else(|| base.to.clone()),
    })
}

/// A point's `factors = { flows = 8 }`: what it stands for, for the report's tables and
/// plots (not flow options), into `named`.
fn point_factors(
    text: &str,
    p: &Spanned<toml::Table>,
    named: &mut BTreeMap<String, String>,
) -> Result<(), PlanError> {
    let Some(f) = p.get_ref().get("factors") else {
        return Ok(());
    };
    let line = key_line(text, p.span(), "factors");
    let t = f.as_table().ok_or_else(|| {
        PlanError::at(
            line,
            "factors of a point: a table, e.g. factors = { flows = 8 }",
        )
    })?;
    for (k, v) in t {
        if k == "point" || k == "group" {
            return Err(PlanError::at(
                line,
                format!("factors: '{k}' is the point's own"),
            ));
        }
        let v = scalar(v, line, k)?.unwrap_or_else(|| "true".into());
        named.insert(k.clone(), v);
    }
    Ok(())
}

/// Points apart as file names, and at most [`MAX_RUNS`] runs.
fn check_counts(points: &[Point], families: &[u8], repetitions: u32) -> Result<(), PlanError> {
    let mut seen = std::collections::BTreeSet::new();
    for p in points {
        // Run ids (file names) are the point ids made safe: they must stay apart.
        if !seen.insert(run_id(1, &p.id, 4)) {
            return Err(PlanError::at(
                None,
                format!(
                    "two points are both named '{}' (or alike once made a file name)",
                    p.id
                ),
            ));
        }
    }
    let total = (points.len() as u64) * (families.len() as u64) * u64::from(repetitions);
    if total > MAX_RUNS {
        return Err(PlanError::at(
            None,
            format!("{total} runs: a plan may have at most {MAX_RUNS}"),
        ));
    }
    Ok(())
}

/// `[[tables]]`, each holding some point (of the whole plan: `--quick` may leave a
/// table's points out, and then drops the table).
fn parse_tables(
    text: &str,
    tables: &[Spanned<toml::Table>],
    points: &[Point],
    vocabulary: &Vocabulary,
    quick: bool,
) -> Result<Vec<TableSpec>, PlanError> {
    let mut out = Vec::new();
    for t in tables {
        let line = line_at(text, t.span().start);
        let spec =
            parse_table(t.get_ref(), vocabulary).map_err(|e| PlanError::at(line, e.to_string()))?;
        if !points.iter().any(|p| spec.holds(&p.factors)) {
            // The quick variant may leave a table's points out (a size it skips);
            // the whole plan is where a table must hold something.
            if quick {
                continue;
            }
            return Err(PlanError::at(
                line,
                format!(
                    "table '{}': no point has every factor its where names",
                    spec.title
                ),
            ));
        }
        out.push(spec);
    }
    Ok(out)
}

/// `[stamp]`: a reflector on loopback or in a lab, never across hosts.
fn parse_stamp(
    text: &str,
    stamp: Option<Spanned<StampFile>>,
    target: &Target,
) -> Result<Option<StampTarget>, PlanError> {
    let Some(st) = stamp else {
        return Ok(None);
    };
    if *target == Target::Hosts {
        return Err(PlanError::at(
            line_at(text, st.span().start),
            "[stamp] needs a loopback or lab target: across hosts the agents are the receivers",
        ));
    }
    if *target == Target::Peer {
        return Err(PlanError::at(
            line_at(text, st.span().start),
            "[stamp] with target = \"peer\": say far_end = \"stamp\" and the reflector's port in [peer]",
        ));
    }
    let st = st.into_inner();
    if st.port == Some(0) {
        return Err(PlanError::at(
            line_at(text, 0),
            "[stamp] port must be 1 to 65535",
        ));
    }
    Ok(Some(StampTarget {
        port: st.port.unwrap_or(862),
        reflectors: st.reflectors,
    }))
}

/// A table's `background` (a list of flows, each a table of `dualperf send` options and
/// an optional `label`) and `qos` (router node = QoS file), when present.
#[allow(clippy::type_complexity)]
fn specials(
    text: &str,
    table: &Spanned<toml::Table>,
    declared: Option<&crate::hosts::Declared>,
) -> Result<(Option<Vec<Background>>, Option<BTreeMap<String, String>>), PlanError> {
    let t = table.get_ref();
    let background = match t.get("background") {
        None => None,
        Some(v) => {
            let line = key_line(text, table.span(), "background");
            let want = "background is a list of flows, e.g. [{ udp = true, rate = \"5mbit\" }, { tcp = true, bulk = true }]";
            let list = v.as_array().ok_or_else(|| PlanError::at(line, want))?;
            let mut out = Vec::new();
            for item in list {
                let flow = item.as_table().ok_or_else(|| PlanError::at(line, want))?;
                let mut label = None;
                let mut count = 1usize;
                let mut settings = Vec::new();
                for (key, value) in flow {
                    match key.as_str() {
                        "from" | "to" => {}
                        "label" => {
                            label = Some(
                                value
                                    .as_str()
                                    .filter(|s| !s.trim().is_empty())
                                    .ok_or_else(|| PlanError::at(line, "background label: a name"))?
                                    .to_owned(),
                            );
                        }
                        "count" => {
                            count = value
                                .as_integer()
                                .and_then(|n| usize::try_from(n).ok())
                                .filter(|n| (1..=MAX_BACKGROUND).contains(n))
                                .ok_or_else(|| {
                                    PlanError::at(
                                        line,
                                        format!("background count: 1 to {MAX_BACKGROUND} copies of the flow"),
                                    )
                                })?;
                        }
                        "ip" => {
                            return Err(PlanError::at(
                                line,
                                "background: ip is the plan's, not a flow's: a background flow runs over each run's family",
                            ))
                        }
                        // What the runner gives every send it starts (a background
                        // flow gets no --interval, --cdf or --stamp from it).
                        "duration" | "time" | "port" | "json" | "announce_start"
                        | "announce-start" | "wait_for_go" | "wait-for-go" | "connect_timeout"
                        | "connect-timeout" => {
                            let why = runner_owned(key).unwrap_or_default();
                            return Err(PlanError::at(line, format!("background: {why}")));
                        }
                        _ => settings.push(Setting {
                            key: key.clone(),
                            value: scalar(value, line, key)?,
                            line,
                        }),
                    }
                }
                let (from_sender, from, to) = crate::hosts::background_ends(
                    flow.get("from"),
                    flow.get("to"),
                    line,
                    declared,
                )?;
                if out.len() + count > MAX_BACKGROUND {
                    return Err(PlanError::at(
                        line,
                        format!("at most {MAX_BACKGROUND} background flows"),
                    ));
                }
                for c in 0..count {
                    let label = match (&label, count) {
                        (Some(l), 1) => l.clone(),
                        (Some(l), _) => format!("{l} {}", c + 1),
                        (None, _) => format!("bg{}", out.len() + 1),
                    };
                    out.push(Background {
                        label,
                        from_sender,
                        from: from.clone(),
                        to: to.clone(),
                        settings: settings.clone(),
                    });
                }
            }
            Some(out)
        }
    };
    let qos = match t.get("qos") {
        None => None,
        Some(v) => {
            let line = key_line(text, table.span(), "qos");
            let want = "qos is a table of router = \"QoS file\" (or \"none\"), e.g. qos = { r1 = \"qos/bouras-llq.toml\" }";
            let map = v.as_table().ok_or_else(|| PlanError::at(line, want))?;
            let mut out = BTreeMap::new();
            for (node, file) in map {
                let f = file
                    .as_str()
                    .filter(|s| !s.trim().is_empty())
                    .ok_or_else(|| PlanError::at(line, want))?;
                out.insert(node.clone(), f.to_owned());
            }
            Some(out)
        }
    };
    Ok((background, qos))
}

/// A value as `dualperf send` takes it on the command line.
fn scalar(
    value: &toml::Value,
    line: Option<usize>,
    key: &str,
) -> Result<Option<String>, PlanError> {
    match value {
        toml::Value::String(s) => Ok(Some(s.clone())),
        toml::Value::Integer(i) => Ok(Some(i.to_string())),
        toml::Value::Float(f) => Ok(Some(f.to_string())),
        toml::Value::Boolean(true) => Ok(None),
        toml::Value::Boolean(false) => Ok(Some("false".into())),
        _ => Err(PlanError::at(
            line,
            format!("{key}: a flow option takes a string, a number or true/false"),
        )),
    }
}

/// Runs repetition by repetition: interleaved (each point over the families in turn),
/// alternating (the same, the first family alternating) or shuffled within the
/// repetition by a seeded Fisher–Yates.
fn order_runs(
    points: usize,
    families: &[u8],
    repetitions: u32,
    order: Order,
    seed: u64,
    named: &[Point],
) -> Vec<Run> {
    let mut runs = Vec::new();
    let mut state = seed;
    for repetition in 1..=repetitions {
        let mut rep: Vec<Run> = (0..points)
            .flat_map(|point| families.iter().map(move |&family| (point, family)))
            .map(|(point, family)| Run {
                id: run_id(repetition, &named[point].id, family),
                point,
                family,
                repetition,
            })
            .collect();
        if order == Order::Alternating {
            // Each point's runs are adjacent (families in order): reverse every other.
            let per_point = families.len().max(1);
            for (p, chunk) in rep.chunks_mut(per_point).enumerate() {
                if (repetition as usize - 1 + p) % 2 == 1 {
                    chunk.reverse();
                }
            }
        }
        if order == Order::Random {
            for i in (1..rep.len()).rev() {
                let j = (splitmix64(&mut state) % (i as u64 + 1)) as usize;
                rep.swap(i, j);
            }
        }
        runs.extend(rep);
    }
    runs
}

/// `args` with `--seed S` added, unless `settings` set `seed`.
fn seeded(mut args: Vec<String>, settings: &[Setting], seed: impl FnOnce() -> u64) -> Vec<String> {
    if !settings.iter().any(|s| s.key == "seed") {
        args.extend(["--seed".to_owned(), seed().to_string()]);
    }
    args
}

/// The seed of a plan's flow: FNV-1a (64-bit) over the plan's name, the point's id and
/// a background flow's label (each ended by a 0 byte), mixed by splitmix64. Stable
/// across builds and hosts: a plan sends the same sequences wherever it runs.
pub fn flow_seed(plan: &str, point: &str, background: Option<&str>) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    let parts = [Some(plan), Some(point), background];
    for part in parts.into_iter().flatten() {
        for b in part.bytes().chain([0]) {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
    splitmix64(&mut h)
}

/// What `dualperf run --repetitions N --duration D` changes of a plan (over its
/// `[quick]` table under `--quick`); kept in `resolved.json`, and a resume goes on with
/// the same.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema,
)]
pub struct Overrides {
    /// `--repetitions`: repetitions of every point and family.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repetitions: Option<u32>,
    /// `--duration`: the length of each run.
    #[serde(
        rename = "duration_ns",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub duration: Option<Duration>,
}

impl Overrides {
    /// Whether it changes nothing.
    pub fn is_none(&self) -> bool {
        self.repetitions.is_none() && self.duration.is_none()
    }
}

/// A file-name-safe run id.
fn run_id(repetition: u32, point: &str, family: u8) -> String {
    let safe = file_safe(point);
    format!("rep{repetition:03}-{safe}-ipv{family}")
}

fn splitmix64(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_interval_gives_the_measured_flow_its_series_and_is_checked() {
        let base = "version = 1\nname = \"s\"\nduration = \"1s\"\n";
        let flow = "[flow]\nudp = true\n";
        let p = Plan::parse(&format!("{base}interval = \"250ms\"\n{flow}"), false).unwrap();
        assert_eq!(p.interval, Some(Duration::from_millis(250)));
        let seed = flow_seed("s", "flow", None).to_string();
        assert_eq!(
            p.measured_args(&p.points[0]),
            ["--udp", "--seed", &seed, "--interval", "250000000ns"]
        );
        let p = Plan::parse(&format!("{base}{flow}"), false).unwrap();
        assert_eq!(p.measured_args(&p.points[0]), ["--udp", "--seed", &seed]);
        for (text, why) in [
            (
                format!("{base}interval = \"5ms\"\n{flow}"),
                "from 10ms to 1h",
            ),
            (
                format!("{base}interval = \"often\"\n{flow}"),
                "from 10ms to 1h",
            ),
            (
                format!("{base}interval = \"1s\"\n{flow}[stamp]\n"),
                "STAMP flows",
            ),
        ] {
            let e = Plan::parse(&text, false).unwrap_err();
            assert_eq!(e.line, Some(4), "{text}");
            assert!(e.message.contains(why), "{e}");
        }
    }

    #[test]
    fn a_stamp_section_sends_the_measured_flow_to_a_reflector() {
        let base = "version = 1\nname = \"s\"\nduration = \"1s\"\n[flow]\nudp = true\n";
        let p = Plan::parse(
            &format!("{base}[stamp]\nreflectors = [[\"r\", \"-x\"]]\n"),
            false,
        )
        .unwrap();
        assert_eq!(
            p.stamp,
            Some(StampTarget {
                port: 862,
                reflectors: vec![vec!["r".into(), "-x".into()]],
            })
        );
        let p = Plan::parse(&format!("{base}[stamp]\nport = 8620\n"), false).unwrap();
        assert_eq!(
            p.stamp.map(|s| (s.port, s.reflectors.len())),
            Some((8620, 0))
        );
        assert!(Plan::parse(base, false).unwrap().stamp.is_none());
        for bad in ["[stamp]\nport = 0\n", "[stamp]\nreflector = [\"x\"]\n"] {
            assert!(
                Plan::parse(&format!("{base}{bad}"), false).is_err(),
                "{bad}"
            );
        }
    }

    const PLAN: &str = r#"version = 1
name = "sizes"
repetitions = 2
duration = "5s"

[flow]
udp = true
rate = "1000pps"
meter = "rtt"

[factors]
protocol = ["udp", "tcp"]
size = [64, 512]

[[points]]
label = "g711"
group = "VoIP"
voip = "g711.1"

[quick]
repetitions = 1
duration = "1s"
"#;

    #[test]
    fn every_flow_of_a_point_is_seeded_alike_over_both_families_unless_it_sets_a_seed() {
        let text = r#"version = 1
name = "seeds"
duration = "1s"

[flow]
udp = true
idt = "exp:10"
background = [{ label = "noise", udp = true, idt = "exp:5" }, { udp = true, seed = 3 }]

[factors]
size = [64, 512]

[[points]]
label = "fixed"
seed = 7
"#;
        let p = Plan::parse(text, false).unwrap();
        // Stable across builds and hosts: FNV-1a of the names, mixed by splitmix64
        // (the value computed apart from this code).
        assert_eq!(flow_seed("seeds", "size=64", None), 0xfdd7_b02c_bfab_7554);
        let s64 = flow_seed("seeds", "size=64", None);
        let s512 = flow_seed("seeds", "size=512", None);
        let noise = flow_seed("seeds", "size=64", Some("noise"));
        assert!(s64 != s512 && s64 != noise && s512 != noise);
        // Another plan's point of the same id draws another sequence.
        assert_ne!(flow_seed("other", "size=64", None), s64);
        // The plan's name and the point's id are kept apart: no two splits collide.
        assert_ne!(flow_seed("ab", "c", None), flow_seed("a", "bc", None));
        let (a, b, fixed) = (&p.points[0], &p.points[1], &p.points[2]);
        assert_eq!(p.point_seed(a, None), s64);
        let tail = |args: Vec<String>| args[args.len() - 2..].to_vec();
        assert_eq!(tail(p.measured_args(a)), ["--seed", &s64.to_string()]);
        assert_eq!(tail(p.measured_args(b)), ["--seed", &s512.to_string()]);
        // A point's own seed is kept, and no second one is given.
        let own = p.measured_args(fixed);
        assert_eq!(own.iter().filter(|a| *a == "--seed").count(), 1);
        assert!(own.windows(2).any(|w| w == ["--seed", "7"]), "{own:?}");
        // Background flows: their own seed by label, or the one they set.
        assert_eq!(
            tail(p.background_args(a, &a.background[0])),
            ["--seed", &noise.to_string()]
        );
        assert_eq!(
            p.background_args(a, &a.background[1]),
            ["--udp", "--seed", "3"]
        );
        // The runs of a point over IPv4 and IPv6, in every repetition, are one point:
        // the arguments do not depend on the run.
        assert!(p.runs.iter().all(|r| r.point < p.points.len()));
    }

    #[test]
    fn repetitions_and_duration_can_be_overridden_and_the_runs_follow() {
        let mut p = Plan::parse(PLAN, false).unwrap();
        assert_eq!((p.repetitions, p.runs.len()), (2, 20));
        p.override_with(&Overrides {
            repetitions: Some(3),
            duration: Some(Duration::from_millis(1500)),
        })
        .unwrap();
        assert_eq!((p.repetitions, p.runs.len()), (3, 30));
        assert_eq!(p.duration, Duration::from_millis(1500));
        assert_eq!(p.runs[29].id, "rep003-g711-ipv6");
        // Over --quick's values too; nothing given changes nothing.
        let mut q = Plan::parse(PLAN, true).unwrap();
        let before = q.clone();
        q.override_with(&Overrides::default()).unwrap();
        assert_eq!(q, before);
        q.override_with(&Overrides {
            repetitions: Some(5),
            duration: None,
        })
        .unwrap();
        assert_eq!(
            (q.repetitions, q.runs.len(), q.duration),
            (5, 50, before.duration)
        );
        for bad in [
            Overrides {
                repetitions: Some(0),
                duration: None,
            },
            Overrides {
                repetitions: None,
                duration: Some(Duration::ZERO),
            },
            Overrides {
                repetitions: Some(u32::MAX),
                duration: None,
            },
        ] {
            assert!(p.clone().override_with(&bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn names_from_plans_cannot_leave_their_directory() {
        assert_eq!(file_safe("../../etc/passwd"), "_.._etc_passwd");
        assert_eq!(file_safe("size=64,protocol=udp"), "size=64,protocol=udp");
        assert_eq!(file_safe("VoIP G.711.1"), "VoIP_G.711.1");
        assert_eq!(file_safe(".hidden"), "hidden");
    }

    #[test]
    fn factors_expand_as_a_cross_product_and_runs_interleave_the_families() {
        let p = Plan::parse(PLAN, false).unwrap();
        let ids: Vec<&str> = p.points.iter().map(|p| p.id.as_str()).collect();
        assert_eq!(
            ids,
            [
                "protocol=udp,size=64",
                "protocol=udp,size=512",
                "protocol=tcp,size=64",
                "protocol=tcp,size=512",
                "g711"
            ]
        );
        assert_eq!(
            p.points[2].args(),
            ["--rate", "1000pps", "--meter", "rtt", "--tcp", "--size", "64"]
        );
        assert_eq!(
            p.points[4].args()[5..],
            ["--voip", "g711.1", "--label", "g711"]
        );
        assert_eq!(p.points[4].factors["group"], "VoIP");
        // One by one, each option keeps the line it is written on; a swept protocol is
        // the flag it names.
        let options = p.points[2].options();
        let tcp = options.iter().find(|o| o.name == "tcp").unwrap();
        assert_eq!((tcp.value.as_deref(), tcp.line), (None, Some(12)));
        let meter = options.iter().find(|o| o.name == "meter").unwrap();
        assert_eq!((meter.value.as_deref(), meter.line), (Some("rtt"), Some(9)));
        // 5 points × 2 families × 2 repetitions, ABAB within each repetition.
        assert_eq!(p.runs.len(), 20);
        let fams: Vec<u8> = p.runs[..4].iter().map(|r| r.family).collect();
        assert_eq!(fams, [4, 6, 4, 6]);
        assert_eq!(p.runs[0].id, "rep001-protocol=udp,size=64-ipv4");
        assert_eq!(p.runs[19].repetition, 2);
        assert_eq!(p.duration, Duration::from_secs(5));
        assert_eq!(p.estimated(20), Duration::from_millis(20 * 5700));
        let q = Plan::parse(PLAN, true).unwrap();
        assert_eq!((q.runs.len(), q.duration), (10, Duration::from_secs(1)));
    }

    #[test]
    fn a_random_order_shuffles_within_each_repetition_and_replays_with_its_seed() {
        let text = PLAN.replace(
            "repetitions = 2",
            "repetitions = 3\norder = \"random\"\nseed = 9",
        );
        let a = Plan::parse(&text, false).unwrap();
        let b = Plan::parse(&text, false).unwrap();
        assert_eq!(a.runs, b.runs);
        for rep in 1..=3 {
            let mut ids: Vec<&str> = a
                .runs
                .iter()
                .filter(|r| r.repetition == rep)
                .map(|r| r.id.as_str())
                .collect();
            assert_eq!(ids.len(), 10);
            ids.sort_unstable();
            ids.dedup();
            assert_eq!(ids.len(), 10, "each run once per repetition");
        }
        let interleaved = Plan::parse(PLAN, false).unwrap();
        assert_ne!(a.runs[..10], interleaved.runs[..10]);
    }

    #[test]
    fn mistakes_name_their_line() {
        for (text, line, want) in [
            (
                PLAN.replace("version = 1", "version = 2"),
                Some(1),
                "version 2",
            ),
            (
                PLAN.replace("duration = \"5s\"", "duration = \"soon\""),
                Some(4),
                "duration 'soon'",
            ),
            (
                PLAN.replace("size = [64, 512]", "size = 64"),
                Some(13),
                "must be a list",
            ),
            (
                PLAN.replace("rate = \"1000pps\"", "rate = [1]"),
                Some(8),
                "rate: a flow option",
            ),
            (
                PLAN.replace("name = \"sizes\"", "name = \"sizes\"\ncolour = 1"),
                Some(3),
                "unknown field",
            ),
            (
                PLAN.replace("label = \"g711\"\n", ""),
                Some(15),
                "needs a label",
            ),
            (
                PLAN.replace("protocol = [\"udp\", \"tcp\"]", "ip = [4, 5]"),
                Some(12),
                "ip takes 4",
            ),
            (
                PLAN.replace("name = \"sizes\"", "name = \"sizes\"\ntarget = \"moon\""),
                Some(3),
                "\"loopback\", \"lab:TOPOLOGY.toml\"",
            ),
        ] {
            let e = Plan::parse(&text, false).unwrap_err();
            if line.is_some() {
                assert_eq!(e.line, line, "{e}");
            }
            assert!(e.to_string().contains(want), "{e}");
        }
    }

    #[test]
    fn options_the_runner_gives_every_send_are_refused_in_a_flow_with_their_line() {
        // `send` refuses an option given twice: a flow's `duration` beside the runner's
        // own --duration passed --dry-run and failed on the first run.
        for (from, to, line, want) in [
            (
                "udp = true\n",
                "udp = true\nduration = \"10s\"\n",
                8,
                "duration is the plan's, not a flow's: every run lasts the plan's top-level duration",
            ),
            ("udp = true\n", "udp = true\ntime = 3\n", 8, "time is the plan's"),
            (
                "voip = \"g711.1\"\n",
                "voip = \"g711.1\"\nduration = \"1s\"\n",
                19,
                "duration is the plan's",
            ),
            (
                "size = [64, 512]",
                "size = [64, 512]\nduration = [\"1s\", \"2s\"]",
                14,
                "factor duration is the plan's",
            ),
            (
                "udp = true\n",
                "udp = true\ninterval = \"1s\"\n",
                8,
                "top-level interval",
            ),
            (
                "udp = true\n",
                "udp = true\nconnect_timeout = \"9s\"\n",
                8,
                "its own --connect-timeout",
            ),
            ("udp = true\n", "udp = true\nport = 9\n", 8, "its own --port"),
            (
                "udp = true\n",
                "udp = true\nwait_for_go = true\n",
                8,
                "its own --wait-for-go",
            ),
            ("udp = true\n", "udp = true\ncdf = true\n", 8, "delay distribution"),
            ("udp = true\n", "udp = true\nstamp = true\n", 8, "[stamp] table"),
            (
                "voip = \"g711.1\"\n",
                "voip = \"g711.1\"\nbackground = [{ udp = true, time = 5 }]\n",
                19,
                "background: time is the plan's",
            ),
        ] {
            let text = PLAN.replacen(from, to, 1);
            let e = Plan::parse(&text, false).unwrap_err();
            assert_eq!(e.line, Some(line), "{to}: {e}");
            assert!(e.message.contains(want), "{to}: {e}");
        }
        let text = PLAN.replace("udp = true\n", "udp = true\nfactors = { flows = 8 }\n");
        let e = Plan::parse(&text, false).unwrap_err();
        assert_eq!(e.line, Some(8), "{e}");
        assert!(e.message.contains("top-level [factors]"), "{e}");
        // The plan's own duration is every run's.
        let p = Plan::parse(PLAN, false).unwrap();
        assert!(p
            .points
            .iter()
            .all(|pt| !pt.args().contains(&"--duration".to_owned())));
    }

    #[test]
    fn huge_sweeps_are_refused_before_anything_is_allocated() {
        let many: Vec<String> = (0..1000).map(|i| i.to_string()).collect();
        let list = format!("[{}]", many.join(","));
        let text = PLAN.replace(
            "size = [64, 512]",
            &format!("size = {list}\nttl = {list}\ncount = {list}"),
        );
        let e = Plan::parse(&text, false).unwrap_err();
        assert!(e.to_string().contains("more than 100000 points"), "{e}");
        let text = PLAN.replace("repetitions = 2", "repetitions = 4000000000");
        assert!(Plan::parse(&text, false)
            .unwrap_err()
            .to_string()
            .contains("at most"));
    }

    #[test]
    fn repeated_families_and_points_alike_as_file_names_are_caught() {
        let text = PLAN.replace("protocol = [\"udp\", \"tcp\"]", "ip = [4, 6, 4]");
        let p = Plan::parse(&text, false).unwrap();
        assert_eq!(p.families, [4, 6]);
        let mut ids: Vec<&str> = p.runs.iter().map(|r| r.id.as_str()).collect();
        let n = ids.len();
        ids.sort_unstable();
        ids.dedup();
        assert_eq!(ids.len(), n, "every run once");
        let text = format!("{PLAN}\n[[points]]\nlabel = \"g/711\"\nvoip = \"g711.2\"\n")
            .replace("label = \"g711\"", "label = \"g 711\"");
        let e = Plan::parse(&text, false).unwrap_err();
        assert!(e.to_string().contains("alike once made a file name"), "{e}");
    }

    #[test]
    fn the_target_is_read_once_and_written_as_the_plan_spells_it() {
        for (text, target) in [
            ("loopback", Target::Loopback),
            ("hosts", Target::Hosts),
            ("lab: two-hop.toml", Target::Lab(" two-hop.toml".into())),
        ] {
            let t: Target = text.parse().unwrap();
            assert_eq!(t, target);
            assert_eq!(serde_json::to_string(&t).unwrap(), format!("\"{text}\""));
            assert_eq!(
                serde_json::from_str::<Target>(&format!("\"{text}\"")).unwrap(),
                t
            );
        }
        assert_eq!(
            Target::Lab(" two-hop.toml".into()).lab_topology(),
            Some("two-hop.toml")
        );
        assert_eq!(Target::Hosts.lab_topology(), None);
        for bad in ["moon", "lab:", "lab:  ", "Loopback"] {
            assert_eq!(bad.parse::<Target>(), Err(()), "{bad}");
            assert!(serde_json::from_str::<Target>(&format!("\"{bad}\"")).is_err());
        }
        let plan = Plan::parse(
            &PLAN.replace(
                "name = \"sizes\"",
                "name = \"sizes\"\ntarget = \"lab:two-hop.toml\"",
            ),
            false,
        )
        .unwrap();
        assert_eq!(plan.target, Target::Lab("two-hop.toml".into()));
        assert_eq!(plan.lab_topology(), Some("two-hop.toml"));
        assert_eq!(Plan::parse(PLAN, false).unwrap().target, Target::Loopback);
    }

    #[test]
    fn the_ip_factor_chooses_the_families() {
        let text = PLAN.replace("protocol = [\"udp\", \"tcp\"]", "ip = [6]");
        let p = Plan::parse(&text, false).unwrap();
        assert_eq!(p.families, [6]);
        assert!(p.runs.iter().all(|r| r.family == 6));
        assert_eq!(p.points[0].id, "size=64");
    }

    #[test]
    fn tables_are_checked_against_the_points_with_their_line() {
        let ok = format!(
            "{PLAN}\n[[tables]]\ntitle = \"Table 6. UDP\"\nwhere = {{ protocol = \"udp\" }}\nmetrics = [\"throughput:Mbps\", \"loss\"]\n"
        );
        let p = Plan::parse(&ok, false).unwrap();
        assert_eq!(p.tables.len(), 1);
        let held: Vec<&str> = p
            .points
            .iter()
            .filter(|pt| p.tables[0].holds(&pt.factors))
            .map(|pt| pt.id.as_str())
            .collect();
        assert_eq!(held, ["protocol=udp,size=64", "protocol=udp,size=512"]);
        let lines = PLAN.lines().count();
        let sctp = ok.replace("\"udp\" }", "\"sctp\" }");
        assert!(
            Plan::parse(&sctp, true).unwrap().tables.is_empty(),
            "quick drops it"
        );
        let e = Plan::parse(&sctp, false).unwrap_err();
        assert_eq!(e.line, Some(lines + 2), "{e}");
        assert!(e.to_string().contains("no point has"), "{e}");
        let e = Plan::parse(&ok.replace("Mbps", "furlongs"), false).unwrap_err();
        assert_eq!(e.line, Some(lines + 2), "{e}");
        assert!(e.to_string().contains("'furlongs' is not a unit"), "{e}");
    }

    #[test]
    fn background_flows_and_router_policies_are_per_point_or_from_the_base_flow() {
        let text = PLAN
            .replace(
                "meter = \"rtt\"\n",
                "meter = \"rtt\"\nqos = { r1 = \"qos/a.toml\" }\nbackground = [{ tcp = true, bulk = true }]\n",
            )
            .replace(
                "voip = \"g711.1\"\n",
                "voip = \"g711.1\"\nqos = { r1 = \"none\" }\nbackground = [{ label = \"video\", from = \"sender\", stream = \"h261\" }, { udp = true, rate = \"5mbit\" }]\n",
            )
            .replace("[quick]", "background_lead = \"1s\"\n[quick]");
        // background_lead is a top-level key: put it before the first table.
        let text = text
            .replace("background_lead = \"1s\"\n[quick]", "[quick]")
            .replacen(
                "duration = \"5s\"\n",
                "duration = \"5s\"\nbackground_lead = \"1s\"\n",
                1,
            );
        let p = Plan::parse(&text, false).unwrap();
        assert_eq!(p.background_lead, Some(Duration::from_secs(1)));
        let swept = &p.points[0];
        assert_eq!(swept.qos["r1"], "qos/a.toml");
        assert_eq!(swept.background.len(), 1);
        assert_eq!(swept.background[0].label, "bg1");
        assert_eq!(swept.background[0].args(), ["--tcp", "--bulk"]);
        assert!(!swept
            .args()
            .iter()
            .any(|a| a.contains("background") || a.contains("qos")));
        let voip = p.points.iter().find(|p| p.id == "g711").unwrap();
        assert_eq!(voip.qos["r1"], "none");
        assert_eq!(
            (
                voip.background[0].label.as_str(),
                voip.background[0].from_sender
            ),
            ("video", true)
        );
        assert_eq!(voip.background[1].label, "bg2");
        assert_eq!(voip.background[1].args(), ["--udp", "--rate", "5mbit"]);
        // Each run waits 1 s for its background: 5.7 s + 1 s a run.
        assert_eq!(p.estimated(10), Duration::from_millis(10 * 6700));
        // A plan without any of it serialises as before (resume and pooling still match).
        let plain = serde_json::to_value(Plan::parse(PLAN, false).unwrap()).unwrap();
        assert!(plain["points"][0].get("background").is_none());
        assert!(plain["points"][0].get("qos").is_none());
        assert!(plain.get("background_lead_ns").is_none());
        for (bad, want) in [
            ("background = 3", "background is a list of flows"),
            ("background = [3]", "background is a list of flows"),
            (
                "background = [{ duration = \"1s\" }]",
                "duration is the plan's",
            ),
            (
                "background = [{ from = \"r1\" }]",
                "\"bg-a\" (the default) or \"sender\"",
            ),
            ("background = [{ size = [1] }]", "a flow option takes"),
            ("qos = \"x.toml\"", "qos is a table of router"),
            ("qos = { r1 = 3 }", "qos is a table of router"),
        ] {
            let t = PLAN.replace(
                "voip = \"g711.1\"\n",
                &format!("voip = \"g711.1\"\n{bad}\n"),
            );
            let e = Plan::parse(&t, false).unwrap_err();
            assert!(e.to_string().contains(want), "{bad}: {e}");
            assert!(e.line.is_some(), "{bad}: {e}");
        }
    }
}
