//! Truth tests: a difference between the families, injected into a lab where nothing
//! else tells them apart, must be found by `dualperf compare` with the right sign and an
//! interval that covers its size. The lab is `plans/topologies/truth.toml` (sender — r1
//! — r2 — receiver, nothing shaped) with a per-family key on its r1 — r2 link, which
//! both routers apply where they send onto it, so a delay counts twice in a round trip
//! and a loss once in each direction. They need root; under `CI=true` a missing
//! capability is a failure.
//!
//! The battery is one UDP point (64 B at 5000 pkt/s for 2 s, metered round trip, six
//! repetitions): 10,000 packets a run, so a 1 % loss is about 100 ± 10 packets a run and
//! a busy host does not hide it. Only the sign, the verdict and the coverage are
//! asserted, never a difference's value.

use serde_json::Value;

use crate::lab::{privileged, Lab};
use crate::support::{path_str, Proc, TempDir};

const TRUTH: &str = include_str!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../plans/topologies/truth.toml"
));

const BATTERY: &str = r#"version = 1
name = "truth"
description = "one UDP point metered round trip, for the truth tests"
repetitions = 6
duration = "2s"
order = "alternating"

[flow]
meter = "rtt"

[factors]
protocol = ["udp"]
size = [64]
rate = ["5000pps"]

[[tables]]
title = "Round-trip time, median"
metrics = ["rtt_median:µs"]

[[tables]]
title = "Loss"
metrics = ["loss:%"]
"#;

/// The truth topology named `name`, with `key` (a per-family key) on its r1 — r2 link.
fn truth_with(name: &str, key: &str) -> String {
    let link = "a = \"r1\"\nb = \"r2\"\n";
    assert!(TRUTH.contains(link), "truth.toml has its r1 — r2 link");
    assert!(TRUTH.contains("\nname = \"truth\"\n"));
    TRUTH
        .replacen("\nname = \"truth\"\n", &format!("\nname = \"{name}\"\n"), 1)
        .replacen(link, &format!("{link}{key}\n"), 1)
}

/// `compare --lab` through the truth lab with `key` injected, over the one-point
/// battery: its JSON. The lab compare builds is removed even when the test fails.
fn compare_with(tag: &str, key: &str) -> Value {
    let dir = TempDir::new(&format!("truth-{tag}"));
    let name = format!("t{tag}-{}", std::process::id() % 100_000);
    let topo = dir.path("topo.toml");
    std::fs::write(&topo, truth_with(&name, key)).unwrap();
    let plan = dir.path("battery.toml");
    std::fs::write(&plan, BATTERY).unwrap();
    let compare = Proc::spawn(&[
        "compare",
        "--lab",
        "--topology",
        path_str(&topo),
        "--plan",
        path_str(&plan),
        "--json",
        "--dir",
        path_str(&dir.path("run")),
    ]);
    let _guard = Lab::guard(&::lab::netlab::job_name(&name, compare.pid() as u32));
    let out = compare.finish_within(std::time::Duration::from_secs(600));
    out.assert_success();
    out.json()
}

/// The comparison of `metric`'s one row.
fn comparison<'a>(doc: &'a Value, metric: &str) -> &'a Value {
    let table = doc["tables"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["metric"] == metric)
        .unwrap_or_else(|| panic!("no {metric} table: {doc:#}"));
    assert_eq!(table["rows"].as_array().unwrap().len(), 1, "{table:#}");
    &table["rows"][0]["comparison"]
}

/// `c` (IPv6 − IPv4) found, with the sign of `size` (in the metric's unit), and its
/// interval covering `size` to within a quarter of it: the interval is a 95 % one, and
/// where a figure cannot go below 0 (IPv6's loss) it stops at −(IPv4's median), itself a
/// sample of the injected draw, so an exact check would fail now and then by design.
fn assert_found(c: &Value, size: f64, what: &str) {
    assert_eq!(c["verdict"], "significant", "{what}: {c:#}");
    let diff = c["diff"].as_f64().unwrap();
    assert_eq!(diff.signum(), size.signum(), "{what}: the sign: {c:#}");
    let (low, high) = (
        c["ci_low"].as_f64().unwrap(),
        c["ci_high"].as_f64().unwrap(),
    );
    assert_eq!(low.signum(), size.signum(), "{what}: 0 outside: {c:#}");
    assert_eq!(high.signum(), size.signum(), "{what}: 0 outside: {c:#}");
    let slack = size.abs() / 4.0;
    assert!(
        low - slack <= size && size <= high + slack,
        "{what}: [{low}, {high}] does not cover {size}: {c:#}"
    );
    assert_eq!(c["n_pairs"], 6, "{what}: {c:#}");
}

#[test]
fn ipv6_only_delay_is_found_with_its_sign_and_size() {
    if !privileged() {
        return;
    }
    // 2 ms more for IPv6 where each router sends onto r1 — r2: 4 ms more round trip
    // (the table's unit is ns).
    let doc = compare_with("tdly", "ipv6 = { delay = \"2ms\" }");
    assert_found(
        comparison(&doc, "rtt_median"),
        4e6,
        "RTT, IPv6 +2 ms each way",
    );
}

#[test]
fn ipv4_only_loss_is_found_with_its_sign_and_size() {
    if !privileged() {
        return;
    }
    // 1 % of IPv4 lost each way over r1 — r2: the receiver misses 1 % of what was sent,
    // so IPv6 − IPv4 is −1 (percentage points).
    let doc = compare_with("tlos", "ipv4 = { loss = \"1%\" }");
    assert_found(comparison(&doc, "loss"), -1.0, "loss, IPv4 1 %");
}
