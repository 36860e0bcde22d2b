//! A plan's checks before anything runs: every flow's options as `dualperf send` reads
//! them, and the QoS files its points give a lab's routers.

use std::collections::BTreeMap;
use std::path::Path;

use traffic::options::{canonical, NamedOptions};
use traffic::OptionError;

use crate::plan::{Plan, SendOption};
use crate::topology::{Kind, Topology};

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
        .finish()
        .and_then(|f| f.to_specs("check".into(), 0))
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
        path: std::path::PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The router does not take the file.
    #[error("point '{point}': qos {} on {node}: {message}", path.display())]
    Check {
        /// The point's id.
        point: String,
        /// The file.
        path: std::path::PathBuf,
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
}
