//! `dualperf run`: a plan's runs land in a run directory, a kill loses nothing finished,
//! and `--resume` measures only what is missing.

use std::time::{Duration, Instant};

use crate::support::{path_str, run, Proc, TempDir};

const PLAN: &str = r#"version = 1
name = "tiny"
repetitions = 2
duration = "300ms"

[flow]
udp = true
rate = "200pps"

[factors]
size = [64, 256]
"#;

fn result_ids(dir: &std::path::Path) -> Vec<String> {
    let mut ids: Vec<String> = std::fs::read_dir(dir.join("runs"))
        .map(|d| {
            d.filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.ends_with(".json"))
                .collect()
        })
        .unwrap_or_default();
    ids.sort();
    ids
}

fn children(pid: i32) -> Vec<i32> {
    std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children"))
        .unwrap_or_default()
        .split_whitespace()
        .filter_map(|p| p.parse().ok())
        .collect()
}

#[test]
fn a_killed_run_resumes_without_measuring_twice() {
    let tmp = TempDir::new("plan-run");
    let plan = tmp.path("tiny.toml");
    std::fs::write(&plan, PLAN).unwrap();
    let dir = tmp.path("results");
    let dry = run(&["run", path_str(&plan), "--dry-run"])
        .assert_success()
        .stdout
        .clone();
    assert!(
        dry.starts_with("plan tiny: 2 points × 2 families × 2 repetitions = 8 runs"),
        "{dry}"
    );

    // Kill -9 after a few runs are stored.
    let proc = Proc::spawn(&["run", path_str(&plan), "--dir", path_str(&dir)]);
    let t0 = Instant::now();
    while result_ids(&dir).len() < 3 {
        assert!(t0.elapsed() < Duration::from_secs(60), "no results appear");
        std::thread::sleep(Duration::from_millis(20));
    }
    let kids = children(proc.pid());
    proc.kill9();
    let stored = result_ids(&dir);
    assert!(stored.len() >= 3 && stored.len() < 8, "{stored:?}");
    // The receiver it started ends with it (its stdin lifeline closes).
    let t1 = Instant::now();
    while kids
        .iter()
        .any(|k| std::path::Path::new(&format!("/proc/{k}")).exists())
    {
        assert!(
            t1.elapsed() < Duration::from_secs(5),
            "a child of the killed run lives on"
        );
        std::thread::sleep(Duration::from_millis(20));
    }

    // A fresh run into the same directory is refused; --resume measures the rest.
    let again = run(&["run", path_str(&plan), "--dir", path_str(&dir)]);
    assert_eq!(again.code(), Some(2), "{}", again.stderr);
    let resumed = run(&["run", path_str(&plan), "--dir", path_str(&dir), "--resume"]);
    resumed.assert_success();
    let all = result_ids(&dir);
    assert_eq!(all.len(), 8, "{all:?}");
    // Nothing measured twice: the runs kept before the kill are the same files.
    for id in &stored {
        assert!(all.contains(id));
    }
    let said = format!(
        "{} runs measured, {} already there",
        8 - stored.len(),
        stored.len()
    );
    assert!(resumed.stderr.contains(&said), "{}", resumed.stderr);
    // Each result is the sender's report of its own run.
    for id in &all {
        let text = std::fs::read_to_string(dir.join("runs").join(id)).unwrap();
        let rec: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(rec["exit_code"], 0, "{id}");
        let family = rec["run"]["family"].as_u64().unwrap();
        let dest = rec["report"]["dest"].as_str().unwrap();
        assert_eq!(dest.starts_with('['), family == 6, "{id}: {dest}");
        assert!(
            rec["report"]["flows"][0]["received"]["packets"]
                .as_u64()
                .unwrap()
                > 0
        );
    }
    // The report: every point and metric over both families, two repetitions each.
    let doc = run(&["report", path_str(&dir), "--json"])
        .assert_success()
        .json();
    let rows = doc["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 2 * 4, "{doc:#}");
    for r in rows {
        assert_eq!(r["ipv4"]["n"], 2, "{r:#}");
        assert_eq!(r["ipv6"]["n"], 2, "{r:#}");
    }
    let tp = rows
        .iter()
        .find(|r| r["point"] == "size=256" && r["metric"] == "throughput")
        .unwrap();
    // The report's mean is the mean of the two runs' own receiver bit rates.
    let per_run: Vec<f64> = all
        .iter()
        .filter(|id| id.contains("size=256-ipv4"))
        .map(|id| {
            let text = std::fs::read_to_string(dir.join("runs").join(id)).unwrap();
            let rec: serde_json::Value = serde_json::from_str(&text).unwrap();
            rec["report"]["flows"][0]["received"]["bitrate_bps"]
                .as_f64()
                .unwrap()
        })
        .collect();
    assert_eq!(per_run.len(), 2);
    let mean = tp["ipv4"]["mean"].as_f64().unwrap();
    assert!(
        (mean - (per_run[0] + per_run[1]) / 2.0).abs() <= 1e-9 * mean,
        "{mean} {per_run:?}"
    );
    assert_eq!(tp["unit"], "bit/s");
    assert!(tp["ipv4"]["ci_low"].as_f64().unwrap() <= mean);
    assert!(tp["ipv6_vs_ipv4"]["verdict"].is_string());
    let md = run(&["report", path_str(&dir), "--markdown"])
        .assert_success()
        .stdout
        .clone();
    assert!(md.contains("### Throughput (Mbit/s)"), "{md}");
    assert!(md.contains("| size 256 |"), "{md}");
    // One self-contained page: a table and a plot per metric, nothing to fetch.
    let page = tmp.path("report.html");
    let svgs = tmp.path("svg");
    run(&[
        "report",
        path_str(&dir),
        "--html",
        path_str(&page),
        "--svg",
        path_str(&svgs),
    ])
    .assert_success();
    let html = std::fs::read_to_string(&page).unwrap();
    assert_eq!(html.matches("<svg ").count(), 4, "one plot per metric");
    assert_eq!(html.matches("<table>").count(), 4);
    assert_eq!(
        html.matches("http").count(),
        html.matches("xmlns=\"http://www.w3.org/2000/svg\"").count(),
        "no URL but the SVG namespace"
    );
    assert!(!html.contains("NaN"));
    let files = std::fs::read_dir(&svgs).unwrap().count();
    assert_eq!(files, 4);
    // Resuming under another plan is refused.
    std::fs::write(&plan, PLAN.replace("[64, 256]", "[64, 512]")).unwrap();
    let other = run(&["run", path_str(&plan), "--dir", path_str(&dir), "--resume"]);
    assert_eq!(other.code(), Some(2), "{}", other.stderr);
}

#[test]
fn plan_mistakes_name_the_file_and_line() {
    let tmp = TempDir::new("plan-bad");
    let plan = tmp.path("bad.toml");
    for (text, want) in [
        (
            PLAN.replace("duration = \"300ms\"", "duration = \"later\""),
            "bad.toml:4: duration 'later'",
        ),
        (
            PLAN.replace("rate = \"200pps\"", "rate = \"fast\""),
            "bad.toml:8: point 'size=64'",
        ),
        (
            PLAN.replace("udp = true", "udp = true\ncolor = \"red\""),
            "bad.toml:8",
        ),
    ] {
        std::fs::write(&plan, &text).unwrap();
        let out = run(&["run", path_str(&plan), "--dry-run"]);
        assert_eq!(out.code(), Some(2), "{}", out.stderr);
        assert!(out.stderr.contains(want), "want {want}: {}", out.stderr);
    }
}
