//! The layer graph of ARCHITECTURE.md, checked against `cargo metadata`: each crate of
//! the workspace may depend (normal and build dependencies) only on the crates listed
//! for it here, and every crate of the workspace is listed. A new crate or a new edge
//! is a decision to write down in ARCHITECTURE.md and here, not an accident.

use std::collections::{BTreeMap, BTreeSet};
use std::process::Command;

use serde_json::Value;

/// Crate → the workspace crates it may depend on. Bottom up:
/// - floor 1, the leaves: `wire` (formats), `meter` (measurement math), `bmwg` (device
///   benchmarking methods: RFC 2544 searches, sans-IO), `netio` (the kernel: the only
///   crate with `unsafe`);
/// - floor 2, sans-IO cores on formats: `traffic`, `qos`, `dualstack`, `rsvp`;
/// - floor 3: `results` (output documents), `router` (forwarding, sans-IO), `port`;
/// - floor 4: `lab` (plans, run directories, namespaces);
/// - floor 5: `report` (tables, statistics, plots from run directories);
/// - the top: `cli`, the one binary, binds everything to the kernel.
///
/// No core (`wire`, `meter`, `bmwg`, `traffic`, `qos`, `router`, `dualstack`, `rsvp`) may reach
/// `netio`.
pub(crate) const ALLOWED: &[(&str, &[&str])] = &[
    ("wire", &[]),
    ("meter", &[]),
    ("bmwg", &[]),
    ("netio", &[]),
    ("traffic", &["wire"]),
    ("qos", &["wire"]),
    ("dualstack", &["wire"]),
    ("rsvp", &["wire"]),
    ("results", &["wire", "meter", "traffic"]),
    ("router", &["wire", "qos", "traffic", "rsvp"]),
    ("port", &["wire", "dualstack"]),
    ("lab", &["wire", "traffic", "results", "router"]),
    ("report", &["meter", "results", "lab"]),
    (
        "cli",
        &[
            "wire",
            "meter",
            "bmwg",
            "netio",
            "traffic",
            "qos",
            "dualstack",
            "results",
            "router",
            "rsvp",
            "port",
            "lab",
            "report",
        ],
    ),
];

/// Each workspace crate with the workspace crates it depends on.
fn workspace_graph() -> BTreeMap<String, BTreeSet<String>> {
    let out = Command::new(env!("CARGO"))
        .args([
            "metadata",
            "--format-version",
            "1",
            "--no-deps",
            "--offline",
        ])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("cargo metadata runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let meta: Value = serde_json::from_slice(&out.stdout).unwrap();
    let members: BTreeSet<String> = meta["packages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["name"].as_str().unwrap().to_owned())
        .collect();
    meta["packages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            let deps = p["dependencies"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|d| d["kind"].is_null() || d["kind"] == "build")
                .filter_map(|d| d["name"].as_str())
                .filter(|n| members.contains(*n))
                .map(str::to_owned)
                .collect();
            (p["name"].as_str().unwrap().to_owned(), deps)
        })
        .collect()
}

#[test]
fn every_crate_depends_only_on_what_the_layer_graph_allows() {
    let allowed: BTreeMap<&str, BTreeSet<&str>> = ALLOWED
        .iter()
        .map(|(c, deps)| (*c, deps.iter().copied().collect()))
        .collect();
    let graph = workspace_graph();
    let mut wrong = Vec::new();
    for (krate, deps) in &graph {
        let Some(may) = allowed.get(krate.as_str()) else {
            wrong.push(format!(
                "{krate}: not in the layer graph (tests/tests/layers.rs, ARCHITECTURE.md)"
            ));
            continue;
        };
        for d in deps {
            if !may.contains(d.as_str()) {
                wrong.push(format!("{krate} -> {d}: the layer graph forbids it"));
            }
        }
    }
    for krate in allowed.keys() {
        if !graph.contains_key(*krate) {
            wrong.push(format!(
                "{krate}: in the layer graph but not in the workspace"
            ));
        }
    }
    assert!(wrong.is_empty(), "{wrong:#?}");
}

#[test]
fn the_allowed_graph_has_no_cycle_and_only_the_binary_reaches_the_kernel() {
    // A graph that allowed a cycle (a -> b -> a) would let two crates grow into one.
    let allowed: BTreeMap<&str, &[&str]> = ALLOWED.iter().copied().collect();
    fn reaches(
        g: &BTreeMap<&str, &[&str]>,
        from: &str,
        to: &str,
        seen: &mut BTreeSet<String>,
    ) -> bool {
        g.get(from)
            .into_iter()
            .flat_map(|d| d.iter())
            .any(|d| *d == to || (seen.insert((*d).to_owned()) && reaches(g, d, to, seen)))
    }
    for krate in allowed.keys() {
        assert!(
            !reaches(&allowed, krate, krate, &mut BTreeSet::new()),
            "{krate} reaches itself"
        );
    }
    for (krate, deps) in &allowed {
        assert!(
            *krate == "cli" || !deps.contains(&"netio"),
            "{krate} may not touch the kernel"
        );
    }
}
