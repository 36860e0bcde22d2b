//! `dualperf rfc2544`, for real: the tester's self-test on its own throwaway veth pair
//! (namespaces dp-rfc2544-PID.a/.b, gone afterwards) counts every frame it sends, and a
//! short run against a kernel device in a lab writes a document that validates. Root is
//! needed (XDP programs, namespaces), as in `lab.rs`. Rates are capped low and trials
//! short: the counts are asserted, never a rate.

use serde_json::Value;

use crate::lab::{privileged, Lab};
use crate::schema::assert_valid;
use crate::support::{path_str, Proc, TempDir};

/// Frames at `rate` for `ns`, rounded to the nearest (bmwg::frames_at).
fn frames_at(rate: u64, ns: u64) -> u64 {
    ((rate as u128 * ns as u128 + 500_000_000) / 1_000_000_000).max(1) as u64
}

fn trials(p: &Value) -> &Vec<Value> {
    p["throughput"]["trials"]
        .as_array()
        .expect("the search's trials")
}

/// `rfc2544 --lab LAB --quick --duration 100ms --json --dir DIR/run` with `args`: the
/// document it printed, valid against the schema, and the directory that holds the run.
fn device_run(lab: &Lab, args: &[&str]) -> (Value, TempDir) {
    let tmp = TempDir::new(&format!("rfc2544-{}", lab.name));
    let dir = tmp.path("run");
    let mut all = vec![
        "rfc2544",
        "--lab",
        &lab.name,
        "--quick",
        "--duration",
        "100ms",
    ];
    all.extend_from_slice(args);
    all.extend_from_slice(&["--json", "--dir", path_str(&dir)]);
    let out = Proc::spawn(&all).finish();
    out.assert_success();
    let doc = out.json();
    assert_valid("rfc2544", &doc);
    (doc, tmp)
}

#[test]
fn rfc2544_self_test_counts_every_frame_it_sends() {
    if !privileged() {
        return;
    }
    let tmp = TempDir::new("rfc2544-self");
    let dir = tmp.path("run");
    let proc = Proc::spawn(&[
        "rfc2544",
        "--self-test",
        "--sizes",
        "64",
        "--quick",
        "--duration",
        "100ms",
        "--max-rate",
        "200k",
        "--json",
        "--dir",
        path_str(&dir),
    ]);
    let pid = proc.pid();
    let out = proc.finish();
    out.assert_success();
    let doc = out.json();
    assert_valid("rfc2544", &doc);
    assert_eq!(doc["device"]["kind"], "none");
    let paths = doc["paths"].as_array().unwrap();
    // --sizes 64: IPv4's 64 and IPv6's minimum, 84 (RFC 5180 §5.1), both directions.
    let shape: Vec<(&str, u64, &str)> = paths
        .iter()
        .map(|p| {
            (
                p["path"].as_str().unwrap(),
                p["frame_size"].as_u64().unwrap(),
                p["direction"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(shape, [("ipv4", 64, "both"), ("ipv6", 84, "both")]);
    for (p, c) in paths
        .iter()
        .zip(doc["tester"]["ceiling"].as_array().unwrap())
    {
        assert_eq!(c["frame_size"], p["frame_size"]);
        assert_eq!(c["v6"], p["path"] == "ipv6");
        assert_eq!(c["fps"], p["throughput"]["ndr_fps"]);
        assert!(!trials(p).is_empty());
        for t in trials(p) {
            let (rate, ns) = (
                t["rate_fps"].as_u64().unwrap(),
                t["duration_ns"].as_u64().unwrap(),
            );
            assert!(rate <= 200_000, "{t}");
            // Both ports sent every frame of the trial, ramp excluded, unless a generator
            // fell behind: that one is stopped past its late limit, with fewer sent...
            let (offered, all) = (t["offered"].as_u64().unwrap(), 2 * frames_at(rate, ns));
            if t["tester_late"] == true {
                assert!(offered <= all, "{t}");
            } else {
                assert_eq!(offered, all, "{t}");
            }
            // ...and the receivers counted each one, on time or late.
            assert_eq!(
                t["received"].as_u64().unwrap() + t["late"].as_u64().unwrap(),
                t["offered"].as_u64().unwrap(),
                "{t}"
            );
        }
    }
    // The run directory holds the same document and the tables.
    let saved: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("rfc2544.json")).unwrap()).unwrap();
    assert_eq!(saved, doc);
    let report = std::fs::read_to_string(dir.join("report.txt")).unwrap();
    assert!(
        report.contains("Tester ceiling (back to back, frames/s)"),
        "{report}"
    );
    // Its namespaces are gone.
    let ns = std::process::Command::new("ip")
        .args(["netns", "list"])
        .output()
        .unwrap();
    let ns = String::from_utf8_lossy(&ns.stdout);
    assert!(!ns.contains(&format!("dp-rfc2544-{pid}.")), "{ns}");
}

#[test]
fn rfc2544_against_a_kernel_device_writes_a_document_that_validates() {
    if !privileged() {
        return;
    }
    let lab = Lab::up_shipped("r2544", "dut-kernel.toml");
    let (doc, tmp) = device_run(
        &lab,
        &[
            "--sizes",
            "64",
            "--max-rate",
            "100k",
            "--tests",
            "throughput,latency,flr",
        ],
    );
    let dir = tmp.path("run");
    assert_eq!(doc["device"]["kind"], "kernel");
    assert_eq!(doc["device"]["lab"], lab.name.as_str());
    let paths: Vec<(&str, u64)> = doc["paths"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            (
                p["path"].as_str().unwrap(),
                p["frame_size"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(paths, [("ipv4", 64), ("ipv6", 84)]);
    // The tester's ceiling was measured first, at the sizes and families the paths send.
    let ceiling: Vec<(u64, bool)> = doc["tester"]["ceiling"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["frame_size"].as_u64().unwrap(),
                c["v6"].as_bool().unwrap(),
            )
        })
        .collect();
    assert_eq!(ceiling, [(64, false), (84, true)]);
    for p in doc["paths"].as_array().unwrap() {
        for t in trials(p) {
            assert!(t["received"].as_u64() <= t["offered"].as_u64(), "{t}");
        }
        // The device forwards: at some load of the search every frame it was offered
        // arrived (at 100k frames/s at most, a kernel forwards every one; a generator
        // that sent frames the device drops, as when recycled pages carried its own
        // egress header, fails here). Not that the NDR is above 0: on a host busy enough
        // the generator falls behind in every trial, even at the search's floor, and
        // such trials classify nothing (seen with four busy loops on two CPUs).
        assert!(
            trials(p)
                .iter()
                .any(|t| { t["offered"].as_u64().unwrap() > 0 && t["received"] == t["offered"] }),
            "{p:#}"
        );
        assert!(!p["flr"].as_array().unwrap().is_empty(), "{p}");
    }
    let saved: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("rfc2544.json")).unwrap()).unwrap();
    assert_eq!(saved, doc);
}

#[test]
fn rfc2544_through_tayga_carries_1518_byte_frames_whole_both_ways() {
    if !privileged() {
        return;
    }
    let lab = Lab::up_shipped("r2544t", "dut-tayga.toml");
    let (doc, _dir) = device_run(
        &lab,
        &[
            "--paths",
            "nat64",
            "--sizes",
            "1518",
            "--max-rate",
            "2k",
            "--tests",
            "throughput",
        ],
    );
    assert_eq!(doc["device"]["kind"], "tayga");
    let p = &doc["paths"][0];
    assert_eq!(
        (p["path"].as_str(), p["frame_size"].as_u64()),
        (Some("nat64"), Some(1518))
    );
    // Both directions at once: IPv6 1500-byte packets from the sender become 1480-byte
    // IPv4 ones, and the receiver's 1480-byte IPv4 packets 1500-byte IPv6 ones. With
    // Don't Fragment clear TAYGA splits the latter into two fragments of at most 1280
    // bytes (RFC 7915 §5.1.1), which the tester does not count: exactly half of every
    // trial arrived. Some trial must have carried every frame (not that the NDR is above
    // 0: a busy host's generator may fall behind in every trial).
    assert!(
        trials(p)
            .iter()
            .any(|t| t["offered"].as_u64().unwrap() > 0 && t["received"] == t["offered"]),
        "{p:#}"
    );
}
