//! `target = "peer"`: this host against one far end, over both of its addresses, which
//! is what `dualperf compare HOST` runs (and saves, literals and all, so `dualperf run
//! DIR/plan.toml --resume` measures the same addresses).
//!
//! ```toml
//! target = "peer"
//!
//! [peer]
//! name = "receiver"                # as given (recorded; the addresses are what is used)
//! v4 = "198.18.4.2"                # the far end's IPv4 address
//! v6 = "2001:2:0:4::2"             # and its IPv6 address
//! port = 4646                      # default 4646 (862 with far_end = "stamp")
//! key_env = "DUALPERF_KEY"         # or key_file = "agent.key" (relative to the plan)
//! far_end = "agent"                # agent | recv | stamp
//!
//! [factors]
//! direction = ["forward", "reverse"]   # with far_end = "agent" only
//! ```
//!
//! The flows go from here to the far end (`dualperf send ADDR --port P`); with the
//! runner-owned factor `direction`, a `reverse` point has the far end's agent send to us
//! (`--reverse`). Every point, sweep and extra alike, then runs in each direction, and
//! the direction is one of its factors (`direction=reverse` in its id), so the verdict
//! layer pairs the families within each direction and tables split by it
//! (`where = { direction = "reverse" }`). `far_end = "recv"` measures forward only, and
//! `far_end = "stamp"` sends STAMP sessions (RFC 8762) to any Session-Reflector there:
//! each run gives the round trip and both one-way views.

use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use toml::Spanned;

use super::point::{key_line, PlanError};
use super::{Factor, Point, StampTarget, Target};
use crate::hosts::{KeySource, DEFAULT_AGENT_PORT};
use wire::time::Duration;

/// The runner-owned factor that runs each point in both directions.
pub const DIRECTION: &str = "direction";

/// What answers at the far end.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum FarEnd {
    /// `dualperf agent`: receives, and sends to us on request (`--reverse`).
    Agent,
    /// `dualperf recv`: receives only (forward only).
    Recv,
    /// A STAMP Session-Reflector (RFC 8762): `send --stamp`.
    Stamp,
}

impl FarEnd {
    /// Its name in plans.
    pub fn name(self) -> &'static str {
        match self {
            Self::Agent => "agent",
            Self::Recv => "recv",
            Self::Stamp => "stamp",
        }
    }
}

/// The far end of a peer plan.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Peer {
    /// The name it was given by, when it was given one (recorded, not looked up again).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Its IPv4 address.
    pub v4: Ipv4Addr,
    /// Its IPv6 address.
    pub v6: Ipv6Addr,
    /// Its port (UDP and TCP; a reflector's UDP port).
    pub port: u16,
    /// Where its key comes from; `None`: it wants none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<KeySource>,
    /// What answers there.
    pub far_end: FarEnd,
}

impl Peer {
    /// Its address in runs of `family`.
    pub fn addr(&self, family: u8) -> SocketAddr {
        let ip = match family {
            4 => IpAddr::V4(self.v4),
            _ => IpAddr::V6(self.v6),
        };
        SocketAddr::new(ip, self.port)
    }

    /// How `--dry-run` and compare show it.
    pub fn describe(&self) -> String {
        let name = self
            .name
            .as_ref()
            .map_or(String::new(), |n| format!("{n}: "));
        format!(
            "{name}IPv4 {}, IPv6 {}, port {}, {}",
            self.v4,
            self.v6,
            self.port,
            match self.far_end {
                FarEnd::Agent => "dualperf agent (both directions)",
                FarEnd::Recv => "dualperf recv (forward only)",
                FarEnd::Stamp => "a STAMP Session-Reflector (round trip and each direction)",
            }
        )
    }
}

/// `[peer]` as written.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct PeerFile {
    #[serde(default)]
    name: Option<String>,
    v4: Spanned<String>,
    v6: Spanned<String>,
    #[serde(default)]
    port: Option<Spanned<u16>>,
    #[serde(default)]
    key_file: Option<Spanned<String>>,
    #[serde(default)]
    key_env: Option<Spanned<String>>,
    #[serde(default)]
    far_end: Option<FarEnd>,
}

/// `[peer]`: required by `target = "peer"`, a mistake with any other target.
pub(crate) fn parse(
    text: &str,
    file: Option<&Spanned<PeerFile>>,
    target: &Target,
    target_line: Option<usize>,
) -> Result<Option<Peer>, PlanError> {
    let line = |offset: usize| Some(wire::span::line_at(text, offset));
    let Some(spanned) = file else {
        if *target == Target::Peer {
            return Err(PlanError::at(
                target_line,
                "target = \"peer\" needs a [peer] table (v4, v6, far_end)",
            ));
        }
        return Ok(None);
    };
    if *target != Target::Peer {
        return Err(PlanError::at(
            line(spanned.span().start),
            "[peer] needs target = \"peer\"",
        ));
    }
    let f = spanned.get_ref();
    let v4 = f.v4.get_ref().parse::<Ipv4Addr>().map_err(|_| {
        PlanError::at(
            line(f.v4.span().start),
            format!("peer v4 '{}' is not an IPv4 address", f.v4.get_ref()),
        )
    })?;
    let v6 = f.v6.get_ref().parse::<Ipv6Addr>().map_err(|_| {
        PlanError::at(
            line(f.v6.span().start),
            format!(
                "peer v6 '{}' is not an IPv6 address (no brackets, no zone)",
                f.v6.get_ref()
            ),
        )
    })?;
    let far_end = f.far_end.unwrap_or(FarEnd::Agent);
    let port = match &f.port {
        None if far_end == FarEnd::Stamp => wire::stamp::DEFAULT_PORT,
        None => DEFAULT_AGENT_PORT,
        Some(p) if *p.get_ref() == 0 => {
            return Err(PlanError::at(
                line(p.span().start),
                "peer port must be 1 to 65535",
            ))
        }
        Some(p) => *p.get_ref(),
    };
    let key = crate::hosts::key_source(text, f.key_file.as_ref(), f.key_env.as_ref(), "peer")?;
    Ok(Some(Peer {
        name: f.name.clone(),
        v4,
        v6,
        port,
        key,
        far_end,
    }))
}

/// A STAMP far end's reflector, as the runner's `[stamp]` sends to it.
pub(crate) fn stamp(peer: Option<&Peer>) -> Option<StampTarget> {
    peer.filter(|p| p.far_end == FarEnd::Stamp)
        .map(|p| StampTarget {
            port: p.port,
            reflectors: Vec::new(),
        })
}

/// The `direction` factor taken out of the sweep (it is not a send option): its values
/// and its line, checked against the far end.
pub(crate) fn take_direction(
    text: &str,
    factors: &mut Vec<Factor>,
    factors_span: Option<std::ops::Range<usize>>,
    peer: Option<&Peer>,
) -> Result<Vec<String>, PlanError> {
    let Some(i) = factors.iter().position(|(k, _, _)| k == DIRECTION) else {
        return Ok(Vec::new());
    };
    let (_, values, line) = factors.remove(i);
    let line = line.or_else(|| factors_span.and_then(|s| key_line(text, s, DIRECTION)));
    match peer.map(|p| p.far_end) {
        Some(FarEnd::Agent) => {}
        Some(other) => {
            return Err(PlanError::at(
                line,
                format!(
                    "direction needs far_end = \"agent\": a {} far end only receives",
                    other.name()
                ),
            ))
        }
        None => {
            return Err(PlanError::at(
                line,
                "direction is the runner's: it needs target = \"peer\" with far_end = \"agent\"",
            ))
        }
    }
    let mut out: Vec<String> = Vec::new();
    for v in values {
        match v.as_deref() {
            Some(d @ ("forward" | "reverse")) if !out.iter().any(|o| o == d) => out.push(d.into()),
            Some("forward" | "reverse") => {}
            _ => {
                return Err(PlanError::at(
                    line,
                    "direction takes \"forward\" and/or \"reverse\"",
                ))
            }
        }
    }
    Ok(out)
}

/// Every point once in each direction, in turn (a point's directions side by side, so
/// slow drifts fall on both): `direction` among its factors, and in its id (a swept
/// point's id lists its factors in name order; an extra point's label gets its
/// direction after it).
pub(crate) fn cross(points: Vec<Point>, directions: &[String]) -> Vec<Point> {
    if directions.is_empty() {
        return points;
    }
    let mut out = Vec::with_capacity(points.len() * directions.len());
    for p in points {
        let swept = !p.factors.contains_key("point");
        for d in directions {
            let mut q = p.clone();
            q.factors.insert(DIRECTION.into(), d.clone());
            q.id = if swept {
                q.factors
                    .iter()
                    .map(|(k, v)| format!("{k}={v}"))
                    .collect::<Vec<_>>()
                    .join(",")
            } else {
                format!("{} {DIRECTION}={d}", p.id)
            };
            out.push(q);
        }
    }
    out
}

/// Whether a point runs in reverse (the far end's agent sends to us).
pub fn is_reverse(point: &Point) -> bool {
    point.factors.get(DIRECTION).map(String::as_str) == Some("reverse")
}

/// The measured flow's `send` options toward the far end at `point`: a STAMP far end's
/// `--stamp --cdf` (the flow options, no interval), else the measured options, `--cdf`,
/// and `--reverse` for a reverse point.
pub fn send_args(plan: &super::Plan, peer: &Peer, point: &Point) -> Vec<String> {
    let mut args = if peer.far_end == FarEnd::Stamp {
        let mut a = plan.flow_args(point);
        a.push("--stamp".into());
        a
    } else {
        plan.measured_args(point)
    };
    args.push("--cdf".into());
    if is_reverse(point) {
        args.push("--reverse".into());
    }
    args
}

/// What a run measured in `dualperf compare`'s own process costs beyond its duration
/// (the session's setup, the last echoes' wait, the results' exchange; measured on
/// loopback): an estimate for its `--dry-run`.
pub const IN_PROCESS_OVERHEAD: Duration = Duration::from_millis(60);
/// The same for a reverse run (a receiver of its own, the far end's agent connecting
/// back and reporting): about 0.35 s on loopback.
pub const REVERSE_OVERHEAD: Duration = Duration::from_millis(350);

/// Whether `compare`'s executor runs the runs of `plan` as `dualperf send` processes:
/// a peer plan's STAMP runs (an in-process sender runs sessions with dualperf).
pub fn as_process(plan: &super::Plan) -> bool {
    plan.peer
        .as_ref()
        .is_some_and(|p| p.far_end == FarEnd::Stamp)
}

/// How long measuring every run of `plan` takes in `dualperf compare` (in its own
/// process or not, [`as_process`]): the duration and [`IN_PROCESS_OVERHEAD`] or
/// [`super::RUN_OVERHEAD`] a run ([`REVERSE_OVERHEAD`] a reverse one). Deterministic: `--quick`'s budget is checked on it.
pub fn estimated_in_process(plan: &super::Plan) -> Duration {
    let ns: u64 = plan
        .runs
        .iter()
        .map(|r| {
            let over = match (as_process(plan), is_reverse(&plan.points[r.point])) {
                (true, _) => super::RUN_OVERHEAD,
                (false, true) => REVERSE_OVERHEAD,
                (false, false) => IN_PROCESS_OVERHEAD,
            };
            plan.duration.as_nanos() + over.as_nanos()
        })
        .sum();
    Duration::from_nanos(ns)
}

/// The peer's key, read as a hosts plan's are ([`crate::hosts::read_keys`]).
pub fn read_key(
    peer: &Peer,
    plan_dir: &std::path::Path,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Option<crate::hosts::Key>, crate::hosts::KeyError> {
    let host = crate::hosts::Host {
        name: None,
        agent: None,
        agent4: Some(peer.v4),
        agent6: Some(peer.v6),
        port: peer.port,
        key: peer.key.clone(),
    };
    let name = peer.name.clone().unwrap_or_else(|| "peer".into());
    let mut keys = crate::hosts::read_keys(&BTreeMap::from([(name.clone(), host)]), plan_dir, env)?;
    Ok(keys.remove(&name))
}

/// What `dualperf compare HOST`'s quick battery keeps toward a far end (the directions
/// double the runs, and a reverse run costs about 0.35 s more): 150 ms runs, three
/// sizes (unless the user gives them), no game models, so `--quick` stays within 90 s
/// of its dry run's estimate.
pub const QUICK_DURATION: &str = "150ms";
/// The quick battery's sizes toward a far end.
pub const QUICK_SIZES: [i64; 3] = [64, 512, 1472];

impl Peer {
    /// How compare names it: its name, or its addresses.
    pub fn label(&self) -> String {
        self.name
            .clone()
            .unwrap_or_else(|| format!("{} and {}", self.v4, self.v6))
    }

    /// `dualperf compare`'s battery toward it: `target = "peer"` with its literals, both
    /// directions for an agent (each table split by direction), STAMP flows to a
    /// reflector (UDP at 1000 pkt/s, the delay and loss tables); `quick` shorter still.
    pub fn select(&self, s: &mut super::select::Selection, quick: bool) {
        let name = self.label();
        let mut peer = toml::Table::new();
        peer.insert("name".into(), name.clone().into());
        peer.insert("v4".into(), self.v4.to_string().into());
        peer.insert("v6".into(), self.v6.to_string().into());
        peer.insert("port".into(), i64::from(self.port).into());
        peer.insert("far_end".into(), self.far_end.name().into());
        match &self.key {
            Some(KeySource::File(f)) => peer.insert("key_file".into(), f.clone().into()),
            Some(KeySource::Env(v)) => peer.insert("key_env".into(), v.clone().into()),
            None => None,
        };
        s.target = Some("peer".into());
        s.set.push(("peer".into(), toml::Value::Table(peer)));
        if quick {
            s.set.push(("quick.duration".into(), QUICK_DURATION.into()));
            s.leave_out_groups.push("Games".into());
            if !s.factors.iter().any(|(k, _)| k == "size") {
                let sizes = QUICK_SIZES.map(toml::Value::Integer).to_vec();
                s.factors.push(("size".into(), toml::Value::Array(sizes)));
            }
        }
        match self.far_end {
            FarEnd::Agent => {
                let values = vec!["forward".into(), "reverse".into()];
                s.factors
                    .push((DIRECTION.into(), toml::Value::Array(values)));
                s.tables_by = Some((
                    DIRECTION.into(),
                    vec![
                        ("forward".into(), format!("here → {name}")),
                        ("reverse".into(), format!("{name} → here")),
                    ],
                ));
            }
            FarEnd::Recv => {}
            FarEnd::Stamp => stamp_battery(s),
        }
    }

    /// What is said before the battery: where it goes and what answers there.
    pub fn heading(&self) -> String {
        let what = match self.far_end {
            FarEnd::Agent => "dualperf agent: both directions",
            FarEnd::Recv => "dualperf recv: forward only (here → there); run `dualperf agent` there for the reverse direction too",
            FarEnd::Stamp => "a STAMP Session-Reflector (RFC 8762): the round trip and each direction's one-way delay and loss, with nothing of ours there",
        };
        format!(
            "{} at {} and {}, port {}: {what}",
            self.label(),
            self.v4,
            self.v6,
            self.port
        )
    }

    /// What is said under the verdicts about it.
    pub fn footer(&self) -> Option<String> {
        match self.far_end {
            FarEnd::Recv => Some(format!(
                "Forward only: {} runs `dualperf recv`, which never sends; `dualperf agent` there measures the reverse direction too.",
                self.label()
            )),
            FarEnd::Stamp => Some("One-way delays are not corrected for the two clocks' offset; their IPv6 − IPv4 difference is, as long as the offset holds still over the battery.".into()),
            FarEnd::Agent => None,
        }
    }
}

/// A STAMP battery: UDP at 1000 pkt/s, no game models, the delay and loss tables.
fn stamp_battery(s: &mut super::select::Selection) {
    s.leave_out_groups.push("Games".into());
    s.factors.retain(|(k, _)| k != "protocol" && k != "rate");
    let udp = toml::Value::Array(vec!["udp".into()]);
    s.factors.push(("protocol".into(), udp));
    let rate = toml::Value::Array(vec!["1000pps".into()]);
    s.factors.push(("rate".into(), rate));
    let tables = [
        ("Round-trip time, median", "rtt_median:µs"),
        ("One-way delay", "owd:µs"),
        ("Jitter", "jitter:µs"),
        ("Loss", "loss:%"),
    ]
    .map(|(title, metric)| {
        let mut t = toml::Table::new();
        t.insert("title".into(), title.into());
        t.insert("metrics".into(), toml::Value::Array(vec![metric.into()]));
        toml::Value::Table(t)
    });
    s.set
        .push(("tables".into(), toml::Value::Array(tables.to_vec())));
}

/// How long `dualperf compare` takes over `plan`: its runs ([`estimated_in_process`])
/// and, toward a far end, the path's facts first: `capacity` over each family and
/// direction measured and about 3 s of probes (an agent), 2 s (a receiver), or 1 s of
/// STAMP probes.
pub fn compare_estimate(plan: &super::Plan, capacity: Duration) -> Duration {
    let secs = Duration::from_secs;
    let facts = match plan.peer.as_ref().map(|p| p.far_end) {
        None => Duration::ZERO,
        Some(FarEnd::Agent) => Duration::from_nanos(capacity.as_nanos() * 4) + secs(3),
        Some(FarEnd::Recv) => Duration::from_nanos(capacity.as_nanos() * 2) + secs(2),
        Some(FarEnd::Stamp) => secs(1),
    };
    estimated_in_process(plan) + facts
}

#[cfg(test)]
mod tests {
    use crate::plan::{Plan, Target};
    use wire::time::Duration;

    const PEER: &str = r#"version = 1
name = "p"
duration = "100ms"
repetitions = 2
target = "peer"

[peer]
name = "receiver"
v4 = "198.18.4.2"
v6 = "2001:2:0:4::2"
key_env = "DUALPERF_KEY"
far_end = "agent"

[flow]
udp = true

[factors]
size = [64]
direction = ["forward", "reverse"]

[[points]]
label = "VoIP"
voip = "g711.1"

[[tables]]
title = "Loss, reverse"
where = { direction = "reverse" }
metrics = ["loss"]
"#;

    #[test]
    fn peer_target_plan_round_trips_with_literals() {
        let plan = Plan::parse(PEER, false).unwrap();
        assert_eq!(plan.target, Target::Peer);
        let peer = plan.peer.clone().unwrap();
        assert_eq!(
            peer,
            super::Peer {
                name: Some("receiver".into()),
                v4: "198.18.4.2".parse().unwrap(),
                v6: "2001:2:0:4::2".parse().unwrap(),
                port: 4646,
                key: Some(crate::hosts::KeySource::Env("DUALPERF_KEY".into())),
                far_end: super::FarEnd::Agent,
            }
        );
        let ids: Vec<&str> = plan.points.iter().map(|p| p.id.as_str()).collect();
        assert_eq!(
            ids,
            [
                "direction=forward,size=64",
                "direction=reverse,size=64",
                "VoIP direction=forward",
                "VoIP direction=reverse"
            ]
        );
        assert_eq!(plan.runs.len(), 4 * 2 * 2);
        let reverse = &plan.points[1];
        assert_eq!(
            super::send_args(&plan, &peer, reverse)
                .iter()
                .filter(|a| a.starts_with("--"))
                .cloned()
                .collect::<Vec<_>>(),
            ["--udp", "--size", "--seed", "--cdf", "--reverse"]
        );
        assert!(!super::send_args(&plan, &peer, &plan.points[0]).contains(&"--reverse".into()));
        assert_eq!(peer.addr(6).to_string(), "[2001:2:0:4::2]:4646");
        // The plan as saved (resolved.json) reads back the same.
        let json = serde_json::to_string(&plan).unwrap();
        assert_eq!(serde_json::from_str::<Plan>(&json).unwrap(), plan);
        // A STAMP far end: port 862 by default, STAMP flows.
        let stamp = PEER
            .replace("far_end = \"agent\"", "far_end = \"stamp\"")
            .replace("direction = [\"forward\", \"reverse\"]\n", "")
            .replace("where = { direction = \"reverse\" }\n", "");
        let plan = Plan::parse(&stamp, false).unwrap();
        assert_eq!(
            plan.stamp.as_ref().map(|s| (s.port, s.reflectors.len())),
            Some((862, 0))
        );
        let args = super::send_args(&plan, plan.peer.as_ref().unwrap(), &plan.points[0]);
        assert!(args.contains(&"--stamp".into()), "{args:?}");
    }

    #[test]
    fn direction_factor_needs_a_peer_agent_target() {
        let recv = PEER.replace("far_end = \"agent\"", "far_end = \"recv\"");
        let e = Plan::parse(&recv, false).unwrap_err();
        assert_eq!(
            (e.line, e.message.as_str()),
            (
                Some(19),
                "direction needs far_end = \"agent\": a recv far end only receives"
            )
        );
        let loopback = "version = 1\nname = \"l\"\nduration = \"1s\"\n\n[factors]\ndirection = [\"reverse\"]\n";
        let e = Plan::parse(loopback, false).unwrap_err();
        assert_eq!(
            (e.line, e.message.as_str()),
            (
                Some(6),
                "direction is the runner's: it needs target = \"peer\" with far_end = \"agent\""
            )
        );
        let bad = PEER.replace("\"forward\", \"reverse\"", "\"sideways\"");
        assert_eq!(
            Plan::parse(&bad, false).unwrap_err().message,
            "direction takes \"forward\" and/or \"reverse\""
        );
        // [peer] belongs to target = "peer", which needs it.
        let e = Plan::parse(&PEER.replace("target = \"peer\"\n", ""), false).unwrap_err();
        assert_eq!(
            (e.line, e.message.as_str()),
            (Some(6), "[peer] needs target = \"peer\"")
        );
        let e = Plan::parse(
            "version = 1\nname = \"n\"\nduration = \"1s\"\ntarget = \"peer\"\n",
            false,
        )
        .unwrap_err();
        assert_eq!(e.line, Some(4));
        let e = Plan::parse(&PEER.replace("198.18.4.2", "receiver"), false).unwrap_err();
        assert_eq!(
            (e.line, e.message.as_str()),
            (Some(9), "peer v4 'receiver' is not an IPv4 address")
        );
    }

    /// The far end compare found, by name.
    fn far(far_end: super::FarEnd) -> super::Peer {
        super::Peer {
            name: Some("receiver".into()),
            v4: "198.18.4.2".parse().unwrap(),
            v6: "2001:2:0:4::2".parse().unwrap(),
            port: 4646,
            key: Some(crate::hosts::KeySource::Env("DUALPERF_KEY".into())),
            far_end,
        }
    }

    /// compare's battery (plans/compare.toml) toward `peer`, `--quick`.
    fn quick_battery(peer: &super::Peer) -> Plan {
        let battery = include_str!("../../../../plans/compare.toml");
        let mut s = crate::plan::select::Selection::default();
        peer.select(&mut s, true);
        Plan::parse(&s.apply(battery, None).unwrap(), true).unwrap()
    }

    #[test]
    fn compares_battery_toward_an_agent_runs_both_directions_within_90_s() {
        let agent = far(super::FarEnd::Agent);
        let plan = quick_battery(&agent);
        assert_eq!(plan.peer.as_ref(), Some(&agent));
        // 3 sizes × 2 protocols + 5 codecs, no games, each in both directions.
        assert_eq!(plan.points.len(), 22);
        assert_eq!(plan.runs.len(), 220);
        assert_eq!(plan.duration, Duration::from_millis(150));
        assert_eq!(
            plan.points.iter().filter(|p| super::is_reverse(p)).count(),
            11
        );
        let titles: Vec<&str> = plan.tables.iter().map(|t| t.title.as_str()).collect();
        assert_eq!(titles[0], "Throughput, here → receiver");
        assert_eq!(titles[4], "Throughput, receiver → here");
        // 110 runs at 150 + 60 ms, 110 at 150 + 350 ms, 4 capacity seconds and 3 of probes.
        let est = super::compare_estimate(&plan, Duration::from_secs(1));
        assert_eq!(est, Duration::from_millis(110 * 210 + 110 * 500 + 7_000));
        assert_eq!(
            agent.heading(),
            "receiver at 198.18.4.2 and 2001:2:0:4::2, port 4646: dualperf agent: both directions"
        );
        assert_eq!(agent.footer(), None);
    }

    #[test]
    fn compares_battery_toward_a_reflector_is_stamp_over_udp_with_the_delay_tables() {
        let refl = super::Peer {
            port: 862,
            key: None,
            ..far(super::FarEnd::Stamp)
        };
        let plan = quick_battery(&refl);
        assert_eq!(plan.stamp.as_ref().map(|s| s.port), Some(862));
        // 3 UDP sizes and 5 codecs, one direction.
        assert_eq!(plan.points.len(), 8);
        assert!(plan.points[..3]
            .iter()
            .all(|p| p.factors["protocol"] == "udp" && p.factors["rate"] == "1000pps"));
        let titles: Vec<&str> = plan.tables.iter().map(|t| t.title.as_str()).collect();
        assert_eq!(
            titles,
            ["Round-trip time, median", "One-way delay", "Jitter", "Loss"]
        );
        assert!(refl
            .footer()
            .unwrap()
            .starts_with("One-way delays are not corrected"));
        let recv = far(super::FarEnd::Recv);
        assert_eq!(
            recv.footer().unwrap(),
            "Forward only: receiver runs `dualperf recv`, which never sends; `dualperf agent` there measures the reverse direction too."
        );
    }
}
