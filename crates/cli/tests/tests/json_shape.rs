//! The JSON documents dualperf writes keep their shape: for fixed-seed runs on loopback
//! (`send --json` with each meter, `recv --json`, `decode --json`, a small plan's
//! `run --dry-run --json`, `run --json` and run record, and `report --json` over it),
//! every key path and the JSON type of its value equal those recorded in
//! `fixtures/shapes/*.txt`.
//!
//! The fixtures were written by the binary before the crates were restructured
//! (issue 13), so a renamed, dropped or retyped field fails here. To record shapes
//! anew after a deliberate change of format: `DUALPERF_BLESS_SHAPES=1 cargo test
//! json_shape`, then review the diff.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

use serde_json::Value;

use crate::support::{path_str, run, send, Receiver, TempDir};

/// Every key path of `v` with the JSON types seen there. Array items share the path
/// `[]`; object keys that are data rather than names (numbers, flow ids, sizes) share
/// the path `*`. Integers and fractions are different types (`int`, `float`).
fn shape(v: &Value) -> BTreeMap<String, BTreeSet<&'static str>> {
    let mut out = BTreeMap::new();
    walk(v, String::new(), &mut out);
    out
}

fn walk(v: &Value, path: String, out: &mut BTreeMap<String, BTreeSet<&'static str>>) {
    let kind = match v {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(n) if n.is_f64() => "float",
        Value::Number(_) => "int",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    };
    out.entry(path.clone()).or_default().insert(kind);
    match v {
        Value::Array(items) => {
            for item in items {
                walk(item, format!("{path}[]"), out);
            }
        }
        Value::Object(map) => {
            for (k, item) in map {
                let key = if is_data_key(k) { "*" } else { k.as_str() };
                walk(item, format!("{path}/{key}"), out);
            }
        }
        _ => {}
    }
}

/// A key that is a value (a number, a flow or run id, a file name), not a field name.
fn is_data_key(k: &str) -> bool {
    k.chars().next().is_some_and(|c| c.is_ascii_digit())
        || k.contains('.')
        || k.contains(['=', ' ', ':'])
}

fn render(shape: &BTreeMap<String, BTreeSet<&'static str>>) -> String {
    let mut s = String::new();
    for (path, kinds) in shape {
        let kinds: Vec<&str> = kinds.iter().copied().collect();
        s.push_str(&format!(
            "{} {}\n",
            if path.is_empty() { "/" } else { path },
            kinds.join("|")
        ));
    }
    s
}

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/shapes")
        .join(format!("{name}.txt"))
}

/// What a host's load and checks decide rather than the format: the host checks that
/// were not ok, why a run fell behind and is not counted, a point's errors. These are
/// held by the tests of those features; here they are dropped before the shape is taken.
fn strip_host_dependent(v: &mut Value) {
    match v {
        Value::Object(map) => {
            map.remove("host_checks");
            map.remove("not_counted");
            if let Some(Value::Array(errors)) = map.get_mut("errors") {
                errors.clear();
            }
            map.values_mut().for_each(strip_host_dependent);
        }
        Value::Array(items) => items.iter_mut().for_each(strip_host_dependent),
        _ => {}
    }
}

fn parse_fixture(text: &str) -> BTreeMap<String, BTreeSet<String>> {
    text.lines()
        .filter_map(|l| l.rsplit_once(' '))
        .map(|(path, kinds)| {
            let path = if path == "/" {
                String::new()
            } else {
                path.to_string()
            };
            (path, kinds.split('|').map(str::to_string).collect())
        })
        .collect()
}

/// Whether the kinds seen now at a path fit those recorded. A recorded `X|null` is
/// data: one run's values may all be `X`, or all `null` (a mean of nothing, a
/// comparison without a baseline), so either alone fits too.
fn kinds_fit(want: &BTreeSet<String>, got: &BTreeSet<&'static str>) -> bool {
    let got: BTreeSet<String> = got.iter().map(|k| k.to_string()).collect();
    if got == *want {
        return true;
    }
    let nullable = want.contains("null");
    let non_null = |s: &BTreeSet<String>| {
        s.iter()
            .filter(|k| *k != "null")
            .cloned()
            .collect::<BTreeSet<_>>()
    };
    nullable
        && got.is_subset(want)
        && (got.len() == 1 && got.contains("null") || non_null(&got) == non_null(want))
}

/// Compare `docs`' merged shape with the fixture `name` (or record it when blessing).
/// A recorded path missing now is a change, unless a nullable value above it was null
/// every time (then nothing below it was seen).
fn check(name: &str, docs: &[Value]) {
    let mut merged: BTreeMap<String, BTreeSet<&'static str>> = BTreeMap::new();
    for d in docs {
        let mut d = d.clone();
        strip_host_dependent(&mut d);
        for (k, v) in shape(&d) {
            merged.entry(k).or_default().extend(v);
        }
    }
    let got = render(&merged);
    let path = fixture(name);
    if std::env::var_os("DUALPERF_BLESS_SHAPES").is_some() {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, &got).unwrap();
        return;
    }
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let want = parse_fixture(&text);
    let only_null = |p: &str| {
        merged.iter().any(|(a, kinds)| {
            p.starts_with(a.as_str())
                && p[a.len()..].starts_with(['/', '['])
                && kinds.len() == 1
                && kinds.contains("null")
        })
    };
    let mut missing = Vec::new();
    let mut changed = Vec::new();
    for (p, kinds) in &want {
        match merged.get(p) {
            None if only_null(p) => {}
            None => missing.push(p.clone()),
            Some(got) if !kinds_fit(kinds, got) => {
                changed.push(format!("{p}: recorded {kinds:?}, now {got:?}"))
            }
            Some(_) => {}
        }
    }
    let extra: Vec<&String> = merged.keys().filter(|p| !want.contains_key(*p)).collect();
    assert!(
        missing.is_empty() && changed.is_empty() && extra.is_empty(),
        "{name}: the JSON shape changed\n  recorded, now missing: {missing:#?}\n  retyped: {changed:#?}\n  new: {extra:#?}"
    );
}

const ARGS: &[&str] = &[
    "--udp", "--rate", "1000pps", "--size", "64", "--count", "300", "--seed", "7", "--json",
];

#[test]
fn send_recv_and_decode_json_keep_their_shape() {
    let dir = TempDir::new("json-shape");
    let log = dir.path("recv.dplog");
    let rx = Receiver::start(&["--log", path_str(&log), "--json", "--sessions", "2"]);
    let owd = send("127.0.0.1", rx.port, ARGS).assert_success().json();
    let mut rtt_args = ARGS.to_vec();
    rtt_args.extend(["--meter", "rtt"]);
    let rtt = send("::1", rx.port, &rtt_args).assert_success().json();
    let recv = rx.finish();
    recv.finished.assert_success();
    let decoded = run(&["decode", path_str(&log), "--json"])
        .assert_success()
        .json();
    check("send-owd", &[owd]);
    check("send-rtt", &[rtt]);
    let mut recv_lines = recv.flows.clone();
    recv_lines.push(recv.counters.clone());
    check("recv", &recv_lines);
    check("decode", &[decoded]);
}

const PLAN: &str = r#"version = 1
name = "shape"
repetitions = 2
duration = "300ms"

[flow]
udp = true
seed = 7
rate = "200pps"

[factors]
size = [64]

[[tables]]
title = "Table 1. UDP"
metrics = ["throughput:kbit/s", "loss", "rtt", "jitter"]
"#;

#[test]
fn a_run_record_and_its_report_keep_their_shape() {
    let tmp = TempDir::new("json-shape-plan");
    let plan = tmp.path("shape.toml");
    std::fs::write(&plan, PLAN).unwrap();
    let dir = tmp.path("results");
    let dry = run(&["run", path_str(&plan), "--dry-run", "--json"])
        .assert_success()
        .json();
    let summary = run(&["run", path_str(&plan), "--dir", path_str(&dir), "--json"])
        .assert_success()
        .json();
    let mut records = Vec::new();
    for e in std::fs::read_dir(dir.join("runs")).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_some_and(|x| x == "json") {
            records.push(serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap());
        }
    }
    assert_eq!(records.len(), 4, "two runs per family");
    let report = run(&["report", path_str(&dir), "--json"])
        .assert_success()
        .json();
    check("run-dry-run", &[dry]);
    check("run", &[summary]);
    check("run-record", &records);
    check("report", &[report]);
}

#[test]
fn compare_json_keeps_its_shape() {
    let dir = TempDir::new("json-shape-compare");
    let doc = run(&[
        "compare".as_ref(),
        "--quick".as_ref(),
        "--repeat".as_ref(),
        "2".as_ref(),
        "--sizes".as_ref(),
        "64".as_ref(),
        "--protocols".as_ref(),
        "udp".as_ref(),
        "--duration".as_ref(),
        "200ms".as_ref(),
        "--json".as_ref(),
        "--dir".as_ref(),
        dir.path("run").as_os_str(),
    ])
    .assert_success()
    .json();
    // What this host's checks and load leave is dropped by `check`.
    check("compare", &[doc]);
}

#[test]
fn doctor_json_keeps_its_shape() {
    // A faked tree, so that checks pass and warn (and the shape holds both a fix and
    // none) on any machine.
    let tmp = TempDir::new("json-shape-doctor");
    let root = tmp.path("root");
    crate::doctor::fake_host(&root);
    let doc = run(&["doctor", "--json", "--root", path_str(&root)])
        .assert_success()
        .json();
    check("doctor", &[doc]);
}
