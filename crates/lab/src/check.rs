//! A plan's checks before anything runs: every flow's options as `dualperf send` reads
//! them, and the QoS files its points give a lab's routers.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use traffic::options::{canonical, NamedOptions};
use traffic::OptionError;

use crate::executor::Place;
use crate::hosts::{Hosts, KeyError};
use crate::plan::{Plan, SendOption};
use crate::runner::Target;
use crate::topology::{Kind, Topology, TopologyError};

/// A flow of a plan that `dualperf send` would refuse.
#[derive(Debug, thiserror::Error)]
#[error("{message}")]
pub struct FlowError {
    /// The plan line of the option it names, when the plan sets that option (else the
    /// line of the background flow it is in, when known).
    pub line: Option<usize>,
    /// `point 'ID': …`, `point 'ID': background LABEL: …`.
    pub message: String,
}

/// Check every point's flow and background flows as `send` reads them; each note
/// `send` would print goes to `note`, in order.
pub fn flows(plan: &Plan, note: &mut dyn FnMut(String)) -> Result<(), FlowError> {
    for point in &plan.points {
        if let Err((e, line)) = flow(&point.options(), note) {
            return Err(FlowError {
                line,
                message: format!("point '{}': {e}", point.id),
            });
        }
        for b in &point.background {
            let options = b.options();
            if let Err((e, line)) = flow(&options, note) {
                return Err(FlowError {
                    line: line.or_else(|| options.first().and_then(|o| o.line)),
                    message: format!("point '{}': background {}: {e}", point.id, b.label),
                });
            }
        }
    }
    Ok(())
}

/// Check one flow's options as `send` reads them; a mistake comes with the plan line of
/// the option it names, when the plan sets that option.
pub fn flow(
    options: &[SendOption],
    note: &mut dyn FnMut(String),
) -> Result<(), (OptionError, Option<usize>)> {
    let mut named = NamedOptions::new(|path| std::fs::read_to_string(path));
    for o in options {
        named
            .set(&o.name, o.value.as_deref())
            .map_err(|e| (e, o.line))?;
    }
    let specs = named
        .finish_reserved()
        .and_then(|(f, reserve)| {
            let specs = f.to_specs("check".into(), 0)?;
            // `send --reserve` reserves every flow of the send alike.
            reserve.map_or(Ok(()), |r| r.check(&specs.flows))?;
            Ok(specs)
        })
        .map_err(|e| {
            let line = options
                .iter()
                .find(|o| canonical(&o.name).is_some_and(|n| e.option() == format!("--{n}")))
                .and_then(|o| o.line);
            (e, line)
        })?;
    for n in specs.notes {
        note(n);
    }
    Ok(())
}

/// A QoS file a plan's point names that cannot be given to its router.
#[derive(Debug, thiserror::Error)]
pub enum QosError {
    /// A point sets qos, but the plan has no lab.
    #[error("point '{point}': qos needs a lab target (target = \"lab:TOPOLOGY.toml\")")]
    NoLab {
        /// The point's id.
        point: String,
    },
    /// The lab has no node of that name.
    #[error("point '{point}': qos: the lab has no node '{node}'")]
    NoNode {
        /// The point's id.
        point: String,
        /// The node named.
        node: String,
    },
    /// `qos = "none"` for a node that is not a router.
    #[error("point '{point}': qos: '{node}' is not a router")]
    NotRouter {
        /// The point's id.
        point: String,
        /// The node named.
        node: String,
    },
    /// The file does not read.
    #[error("point '{point}': qos {}: {source}", path.display())]
    Read {
        /// The point's id.
        point: String,
        /// The file, relative to the plan's directory.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The router does not take the file.
    #[error("point '{point}': qos {} on {node}: {message}", path.display())]
    Check {
        /// The point's id.
        point: String,
        /// The file.
        path: PathBuf,
        /// The router.
        node: String,
        /// Why.
        message: String,
    },
}

/// The QoS files the plan's points give their lab's routers (paths relative to the
/// plan), read and checked against the routers they go to, by the name the plan gives.
pub fn qos_files(
    plan: &Plan,
    plan_path: &Path,
    topology: Option<&Topology>,
) -> Result<BTreeMap<String, String>, QosError> {
    let mut out = BTreeMap::new();
    for point in &plan.points {
        let id = || point.id.clone();
        for (node, file) in &point.qos {
            let Some(t) = topology else {
                return Err(QosError::NoLab { point: id() });
            };
            let Some(i) = t.node(node) else {
                return Err(QosError::NoNode {
                    point: id(),
                    node: node.clone(),
                });
            };
            if file == "none" {
                if t.nodes[i].kind != Kind::Router {
                    return Err(QosError::NotRouter {
                        point: id(),
                        node: node.clone(),
                    });
                }
                continue;
            }
            if out.contains_key(file) {
                continue;
            }
            let path = plan_path.parent().unwrap_or(Path::new(".")).join(file);
            let text = std::fs::read_to_string(&path).map_err(|source| QosError::Read {
                point: id(),
                path: path.clone(),
                source,
            })?;
            t.check_qos(i, &text).map_err(|message| QosError::Check {
                point: id(),
                path: path.clone(),
                node: node.clone(),
                message,
            })?;
            out.insert(file.clone(), text);
        }
    }
    Ok(out)
}

/// Where a plan cannot run: its hosts' keys or its lab's topology do not read.
#[derive(Debug, thiserror::Error)]
pub enum TargetError {
    /// A host's key does not read.
    #[error("{}: {source}", plan.display())]
    Keys {
        /// The plan's file.
        plan: PathBuf,
        /// Why.
        source: KeyError,
    },
    /// The topology's file does not read.
    #[error("cannot read the plan's topology {}: {source}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The topology is not one.
    #[error("{}: {source}", path.display())]
    Topology {
        /// The file.
        path: PathBuf,
        /// Why.
        source: TopologyError,
    },
    /// The lab cannot carry a plan's runs.
    #[error("{}: {message}", path.display())]
    Place {
        /// The topology's file.
        path: PathBuf,
        /// Why.
        message: String,
    },
}

/// Where a plan's flows run, and its lab's topology with the topology's text.
pub type Located = (Target, Option<(Topology, String)>);

/// What a hosts plan's `key_env` is read through: a variable's value by its name.
pub type Env = dyn Fn(&str) -> Option<String>;

/// Where a plan's flows run, and the lab's topology (and its text) when it names one:
/// its file resolved against the plan's directory, else the shipped topology of that
/// name. For a hosts plan, with `env` (the process environment in `dualperf run`), the
/// hosts' keys are read (`key_file` relative to the plan, `key_env` through `env`);
/// without it (a dry run), none are.
pub fn target(plan: &Plan, plan_path: &Path, env: Option<&Env>) -> Result<Located, TargetError> {
    let file = match &plan.target {
        crate::plan::Target::Loopback => return Ok((Target::Local(Place::Loopback), None)),
        crate::plan::Target::Lab(path) => path.trim(),
        crate::plan::Target::Hosts => {
            let keys = match env {
                Some(env) => {
                    let dir = plan_path.parent().unwrap_or(Path::new("."));
                    crate::hosts::read_keys(&plan.hosts, dir, env).map_err(|source| {
                        TargetError::Keys {
                            plan: plan_path.to_owned(),
                            source,
                        }
                    })?
                }
                None => BTreeMap::new(),
            };
            let hosts = Hosts::new(plan.hosts.clone(), keys);
            return Ok((Target::Hosts(hosts), None));
        }
        crate::plan::Target::Peer => return peer_target(plan, plan_path, env),
    };
    let beside = plan_path.parent().unwrap_or(Path::new(".")).join(file);
    let path = if beside.is_file() {
        beside
    } else {
        PathBuf::from(file)
    };
    // A shipped plan's shipped topology, when no file is there.
    let text = match crate::topology::builtin(file).filter(|_| !path.is_file()) {
        Some(t) => t.to_owned(),
        None => std::fs::read_to_string(&path).map_err(|source| TargetError::Read {
            path: path.clone(),
            source,
        })?,
    };
    let t = Topology::parse_at(&text, path.parent()).map_err(|source| TargetError::Topology {
        path: path.clone(),
        source,
    })?;
    let place = Place::of_lab(&t).map_err(|message| TargetError::Place { path, message })?;
    Ok((Target::Local(place), Some((t, text))))
}

/// A peer plan's far end, and with `env` its key ([`crate::plan::peer::read_key`]).
fn peer_target(plan: &Plan, plan_path: &Path, env: Option<&Env>) -> Result<Located, TargetError> {
    let Some(peer) = plan.peer.clone() else {
        unreachable!("a peer plan parses with its [peer]")
    };
    let key = match env {
        Some(env) => {
            let dir = plan_path.parent().unwrap_or(Path::new("."));
            crate::plan::peer::read_key(&peer, dir, env).map_err(|source| TargetError::Keys {
                plan: plan_path.to_owned(),
                source,
            })?
        }
        None => None,
    };
    Ok((Target::Peer(peer, key), None))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn option(name: &str, value: Option<&str>, line: usize) -> SendOption {
        SendOption {
            name: name.into(),
            value: value.map(Into::into),
            line: Some(line),
        }
    }

    fn check_flow(options: &[SendOption]) -> Result<(), (OptionError, Option<usize>)> {
        flow(options, &mut |_| {})
    }

    #[test]
    fn a_flow_mistake_is_placed_on_the_line_of_the_option_it_names() {
        let base = [
            option("udp", None, 3),
            option("rate", Some("100pps"), 4),
            option("size", Some("512"), 5),
        ];
        assert!(check_flow(&base).is_ok());
        for (extra, line, text) in [
            (
                option("ttl", Some("0"), 9),
                Some(9),
                "invalid value '0' for '--ttl'",
            ),
            (option("color", Some("red"), 9), Some(9), "'--color'"),
            (
                option("voip", Some("g711.1"), 9),
                Some(9),
                "cannot be used with",
            ),
            (
                option("congestion", Some("bbr"), 9),
                Some(9),
                "applies to TCP flows",
            ),
            (option("tcp", None, 9), Some(9), "cannot be used with"),
            (
                option("count", Some("0"), 9),
                Some(9),
                "a stop condition of zero",
            ),
        ] {
            let mut flow = base.to_vec();
            flow.push(extra);
            let (e, at) = check_flow(&flow).unwrap_err();
            assert_eq!(at, line, "{e}");
            assert!(e.to_string().contains(text), "{e}");
        }
        // A check names the option it is about.
        let (e, at) = check_flow(&[option("size", Some("8"), 2)]).unwrap_err();
        assert_eq!((e.option(), at), ("--size", Some(2)));
        let (e, at) =
            check_flow(&[option("bulk", None, 2), option("meter", Some("rtt"), 3)]).unwrap_err();
        assert_eq!((e.option(), at), ("--bulk", Some(2)));
    }

    #[test]
    fn a_reserved_flow_gives_every_sender_reserve_and_is_checked_as_send_would() {
        let text = r#"version = 1
name = "r"
duration = "4s"
target = "lab:topologies/two-hop.toml"

[flow]
stream = "webaudio"
reserve = "controlled-load"
reserve_refresh = "30s"

[[points]]
label = "8 flows"
reserve_filter = "5-tuple"
background = [{ label = "audio", from = "sender", stream = "webaudio", count = 2, reserve = "controlled-load" }, { udp = true, rate = "2mbit" }]
"#;
        let plan = Plan::parse(text, false).unwrap();
        let point = &plan.points[0];
        let argv = crate::plan::point::send_argv(
            None,
            "2001:2:0:4::2".into(),
            5201,
            plan.measured_args(point),
            4_000_000_000,
            false,
        );
        let has = |args: &[String], pair: [&str; 2]| args.windows(2).any(|w| w == pair);
        assert!(has(&argv, ["--reserve", "controlled-load"]), "{argv:?}");
        assert!(has(&argv, ["--reserve-refresh", "30s"]), "{argv:?}");
        assert!(has(&argv, ["--reserve-filter", "5-tuple"]), "{argv:?}");
        let audio: Vec<_> = point
            .background
            .iter()
            .map(|b| plan.background_args(point, b))
            .collect();
        assert_eq!(audio.len(), 3);
        for a in &audio[..2] {
            assert!(has(a, ["--reserve", "controlled-load"]), "{a:?}");
        }
        assert!(
            !audio[2].contains(&"--reserve".to_owned()),
            "the base load is not reserved"
        );
        assert!(flows(&plan, &mut |_| {}).is_ok());
        // What send refuses is found before anything runs, on the option's line.
        let (e, at) = check_flow(&[
            option("tcp", None, 4),
            option("reserve", Some("controlled-load"), 5),
        ])
        .unwrap_err();
        assert_eq!((e.option(), at), ("--reserve", Some(5)), "{e}");
        assert!(e.to_string().contains("UDP flows only"), "{e}");
        let (e, at) = check_flow(&[option("reserve_refresh", Some("1s"), 6)]).unwrap_err();
        assert_eq!((e.option(), at), ("--reserve-refresh", Some(6)), "{e}");
    }

    #[test]
    fn a_hosts_plan_reads_its_keys_only_when_it_runs() {
        let text = r#"version = 1
name = "across"
duration = "2s"
target = "hosts"

[flow]
udp = true

[factors]
ip = [4]

[hosts.sender]
agent4 = "198.18.1.2"
key_env = "NOT_READ_BY_A_DRY_RUN"

[hosts.receiver]
agent4 = "198.18.4.2"
"#;
        let plan = Plan::parse(text, false).unwrap();
        // A dry run reads no keys.
        let (place, topology) = target(&plan, Path::new("plans/x.toml"), None).unwrap();
        assert!(topology.is_none());
        assert!(matches!(place, Target::Hosts(h) if h.hosts.len() == 2));
        // Running it reads the keys: a missing variable is an error naming it.
        let e = target(&plan, Path::new("plans/x.toml"), Some(&|_| None)).unwrap_err();
        assert_eq!(
            e.to_string(),
            "plans/x.toml: host sender: key_env: the environment variable \
             NOT_READ_BY_A_DRY_RUN is not set"
        );
        // With it set, the sender has its key.
        let env = |var: &str| (var == "NOT_READ_BY_A_DRY_RUN").then(|| "k".repeat(16));
        let (place, _) = target(&plan, Path::new("plans/x.toml"), Some(&env)).unwrap();
        let Target::Hosts(h) = place else {
            panic!("not a hosts target")
        };
        assert_eq!(h.keys.keys().collect::<Vec<_>>(), ["sender"]);
    }

    fn lab_plan(topology: &str) -> Plan {
        let text = format!(
            "version = 1\nname = \"l\"\nduration = \"1s\"\ntarget = \"lab:{topology}\"\n\n\
             [flow]\nudp = true\n\n[factors]\nip = [4]\n"
        );
        Plan::parse(&text, false).unwrap()
    }

    #[test]
    fn a_lab_plan_finds_its_topology_beside_it_or_shipped_or_says_why_not() {
        // No file beside the plan: the shipped topology of that name.
        let plan = lab_plan("topologies/two-hop.toml");
        let (place, topology) = target(&plan, Path::new("/nonexistent/p.toml"), None).unwrap();
        let (t, text) = topology.unwrap();
        assert_eq!(t.name, "two-hop");
        assert_eq!(
            text,
            crate::topology::builtin("topologies/two-hop.toml").unwrap()
        );
        assert!(matches!(place, Target::Local(Place::Lab { lab, .. }) if lab == "two-hop"));
        // Neither a file nor shipped: the file that does not read.
        let plan = lab_plan("nowhere.toml");
        let e = target(&plan, Path::new("/nonexistent/p.toml"), None).unwrap_err();
        assert_eq!(
            e.to_string(),
            "cannot read the plan's topology nowhere.toml: No such file or directory (os error 2)"
        );
        // A topology without a sender and a receiver cannot carry the runs.
        let dir =
            std::env::temp_dir().join(format!("dualperf-check-target-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let two_hop = crate::topology::builtin("topologies/two-hop.toml").unwrap();
        std::fs::write(
            dir.join("t.toml"),
            two_hop.replace("\"receiver\"", "\"sink\""),
        )
        .unwrap();
        std::fs::write(dir.join("bad.toml"), "version = 1\n").unwrap();
        let place = target(&lab_plan("t.toml"), &dir.join("p.toml"), None).map(|_| ());
        let parse = target(&lab_plan("bad.toml"), &dir.join("p.toml"), None).map(|_| ());
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(
            place.unwrap_err().to_string(),
            format!(
                "{}: the lab needs nodes named 'sender' and 'receiver'",
                dir.join("t.toml").display()
            )
        );
        let e = parse.unwrap_err();
        assert!(
            matches!(&e, TargetError::Topology { path, .. } if *path == dir.join("bad.toml")),
            "{e}"
        );
    }
}
