//! `dualperf schema`: every output document has a JSON Schema generated from its types;
//! `docs/schemas/` holds the same files; real outputs validate against them.
//!
//! The outputs are validated strictly: the test adds `"additionalProperties": false` to
//! every object schema that lists its properties, so a key the types do not declare
//! (a field written by hand beside the types) fails as surely as a missing one.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::support::{path_str, run, send, Receiver, TempDir};

fn docs_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/schemas")
}

/// The schema `dualperf schema NAME` prints, made strict.
pub fn validator(name: &str) -> jsonschema::Validator {
    let mut schema = run(&["schema", name]).assert_success().json();
    strict(&mut schema);
    jsonschema::validator_for(&schema).unwrap_or_else(|e| panic!("the {name} schema compiles: {e}"))
}

fn strict(v: &mut Value) {
    match v {
        Value::Object(map) => {
            if map.get("type") == Some(&Value::from("object"))
                && map.contains_key("properties")
                && !map.contains_key("additionalProperties")
            {
                map.insert("additionalProperties".into(), Value::Bool(false));
            }
            for item in map.values_mut() {
                strict(item);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(strict),
        _ => {}
    }
}

/// Assert `doc` validates against the schema of `name`.
pub fn assert_valid(name: &str, doc: &Value) {
    let v = validator(name);
    let errors: Vec<String> = v
        .iter_errors(doc)
        .map(|e| format!("{e} at {}", e.instance_path()))
        .collect();
    assert!(errors.is_empty(), "{name}: {errors:#?}\n{doc:#}");
}

#[test]
fn the_schemas_in_docs_are_the_ones_the_binary_prints() {
    let tmp = TempDir::new("schema-dir");
    let dir = tmp.path("schemas");
    run(&["schema", "--dir", path_str(&dir)]).assert_success();
    let listing = run(&["schema"]).assert_success().stdout.clone();
    let mut names = Vec::new();
    for e in std::fs::read_dir(&dir).unwrap() {
        let name = e.unwrap().file_name().to_string_lossy().into_owned();
        let doc = name.trim_end_matches(".schema.json").to_owned();
        assert!(
            listing.contains(&format!("  {doc} ")),
            "{doc} listed: {listing}"
        );
        let fresh = std::fs::read_to_string(dir.join(&name)).unwrap();
        let kept = std::fs::read_to_string(docs_dir().join(&name)).unwrap_or_else(|e| {
            panic!("docs/schemas/{name}: {e} (write it with `dualperf schema --dir docs/schemas`)")
        });
        assert_eq!(
            fresh, kept,
            "docs/schemas/{name} is stale: `dualperf schema --dir docs/schemas`"
        );
        names.push(doc);
    }
    names.sort();
    let mut kept: Vec<String> = std::fs::read_dir(docs_dir())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter_map(|n| n.strip_suffix(".schema.json").map(str::to_owned))
        .collect();
    kept.sort();
    assert_eq!(names, kept, "docs/schemas has exactly the documents");
    let unknown = run(&["schema", "nothing"]);
    assert_eq!(unknown.code(), Some(2), "{}", unknown.stderr);
    assert!(
        unknown.stderr.contains("no document 'nothing'"),
        "{}",
        unknown.stderr
    );
}

#[test]
fn send_recv_and_decode_outputs_validate() {
    let dir = TempDir::new("schema-outputs");
    let log = dir.path("recv.dplog");
    let rx = Receiver::start(&["--log", path_str(&log), "--json", "--sessions", "3"]);
    let args = [
        "--udp", "--rate", "1000pps", "--size", "64", "--count", "200", "--json",
    ];
    let owd = send("127.0.0.1", rx.port, &args).assert_success().json();
    let mut rtt_args = args.to_vec();
    rtt_args.extend(["--meter", "rtt", "--interval", "100ms"]);
    let rtt = send("::1", rx.port, &rtt_args).assert_success().json();
    let rtp = send(
        "127.0.0.1",
        rx.port,
        &[
            "--voip",
            "g711.1",
            "--voip-header",
            "rtp",
            "--count",
            "100",
            "--json",
        ],
    )
    .assert_success()
    .json();
    let recv = rx.finish();
    recv.finished.assert_success();
    // Each validates, and reads back into the type that wrote it.
    for doc in [&owd, &rtt, &rtp] {
        assert_valid("send", doc);
        serde_json::from_value::<results::send::SendReport>(doc.clone()).unwrap();
    }
    for line in recv.finished.json_lines() {
        assert_valid("recv", &line);
        serde_json::from_value::<results::recv::RecvLine>(line).unwrap();
    }
    let decoded = run(&["decode", path_str(&log), "--json", "--interval", "50ms"])
        .assert_success()
        .json();
    assert_valid("decode", &decoded);
    assert_valid("log-meta", &decoded["meta"]);
    let flows = decoded["flow_info"].as_object().unwrap();
    assert_eq!(flows.len(), 3, "{decoded:#}");
    for flow in flows.values() {
        assert_valid("log-flow", flow);
        serde_json::from_value::<results::log::LogFlow>(flow.clone()).unwrap();
    }
    serde_json::from_value::<results::decode::DecodeDoc>(decoded.clone()).unwrap();
    // The check can fail: a key the types do not declare is refused.
    let mut extra = owd.clone();
    extra["flows"][0]["sent"]["packets_sent"] = Value::from(1);
    assert!(!validator("send").is_valid(&extra));
    let mut missing = owd;
    missing["sum"].as_object_mut().unwrap().remove("sent");
    assert!(!validator("send").is_valid(&missing));
}

const PLAN: &str = r#"version = 1
name = "schema"
repetitions = 2
duration = "200ms"

[flow]
udp = true
rate = "200pps"

[factors]
size = [64, 512]

[[tables]]
title = "Table 1. UDP"
metrics = ["throughput:kbit/s", "loss", "delay"]
"#;

#[test]
fn run_records_and_reports_validate() {
    let tmp = TempDir::new("schema-plan");
    let plan = tmp.path("schema.toml");
    std::fs::write(&plan, PLAN).unwrap();
    let dir = tmp.path("results");
    let dry = run(&["run", path_str(&plan), "--dry-run", "--json"])
        .assert_success()
        .json();
    assert_valid("run-dry-run", &dry);
    serde_json::from_value::<lab::rundoc::DryRun>(dry).unwrap();
    let summary = run(&["run", path_str(&plan), "--dir", path_str(&dir), "--json"])
        .assert_success()
        .json();
    assert_valid("run", &summary);
    serde_json::from_value::<lab::rundoc::RunSummary>(summary).unwrap();
    let mut n = 0;
    for e in std::fs::read_dir(dir.join("runs")).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_some_and(|x| x == "json") {
            let rec: Value = serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap();
            assert_valid("run-record", &rec);
            serde_json::from_value::<lab::store::RunRecord>(rec).unwrap();
            n += 1;
        }
    }
    assert_eq!(n, 8);
    for (name, file) in [("resolved", "resolved.json"), ("host", "host.json")] {
        let doc: Value = serde_json::from_slice(&std::fs::read(dir.join(file)).unwrap()).unwrap();
        assert_valid(name, &doc);
    }
    let report = run(&["report", path_str(&dir), "--json"])
        .assert_success()
        .json();
    assert_valid("report", &report);
    serde_json::from_value::<report::ReportDoc>(report).unwrap();
}

#[test]
fn router_stats_files_validate() {
    // Stats files a lab router wrote before its document had types (one with QoS
    // policies, reservations and WRED); the lab tests validate live ones as root.
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../router/testdata");
    let mut n = 0;
    for e in std::fs::read_dir(&dir).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_some_and(|x| x == "json") {
            let doc: Value = serde_json::from_slice(&std::fs::read(&p).unwrap()).unwrap();
            assert_valid("router-stats", &doc);
            n += 1;
        }
    }
    assert!(n >= 2, "{n} stats files in {}", dir.display());
}
