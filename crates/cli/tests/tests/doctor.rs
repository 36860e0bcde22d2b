//! `dualperf doctor`: it runs (as root and as nobody), prints every check, its `--json`
//! validates against its schema, and `dualperf run` keeps its checks in the run
//! directory, whose warnings `dualperf report` shows.

use std::path::Path;
use std::process::Command;

use serde_json::Value;

use crate::schema::{assert_valid, validator};
use crate::support::{path_str, run, TempDir, BIN};

/// The checks, in the order the doctor prints them (docs/doctor.md).
const IDS: [&str; 12] = [
    "clocksource",
    "timer",
    "timer-slack",
    "cpu-governor",
    "cpu-idle",
    "steal",
    "socket-buffers",
    "clock-sync",
    "namespaces",
    "af-packet",
    "tools",
    "cores",
];

/// A fake `/proc` and `/sys` under `root` for `doctor --root`: a bare-metal host with
/// a powersave CPU, a deep idle state, default socket limits and no capabilities, so
/// some checks warn and some pass whatever the machine running the test. `/proc/stat`
/// is this host's, so the steal sample sees ticks pass.
pub fn fake_host(root: &Path) {
    let put = |rel: &str, text: &str| {
        let p = root.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    };
    let cs = "sys/devices/system/clocksource/clocksource0";
    put(&format!("{cs}/current_clocksource"), "tsc\n");
    put(&format!("{cs}/available_clocksource"), "tsc hpet acpi_pm\n");
    put("proc/self/timerslack_ns", "50000\n");
    for (cpu, governor) in [(0, "performance"), (1, "powersave")] {
        let dir = format!("sys/devices/system/cpu/cpu{cpu}");
        put(&format!("{dir}/cpufreq/scaling_governor"), governor);
        for (i, (name, latency)) in [("POLL", "0"), ("C1", "2"), ("C6", "133")]
            .iter()
            .enumerate()
        {
            put(&format!("{dir}/cpuidle/state{i}/name"), name);
            put(&format!("{dir}/cpuidle/state{i}/latency"), latency);
            put(&format!("{dir}/cpuidle/state{i}/disable"), "0");
        }
    }
    put(
        "sys/devices/system/cpu/cpuidle/current_driver",
        "intel_idle\n",
    );
    put("sys/devices/system/cpu/online", "0-1\n");
    put("proc/sys/net/core/rmem_max", "212992\n");
    put("proc/sys/net/core/wmem_max", "212992\n");
    put("proc/sys/net/ipv4/tcp_rmem", "4096\t131072\t6291456\n");
    put("proc/sys/net/ipv4/tcp_wmem", "4096\t16384\t4194304\n");
    put(
        "proc/self/status",
        "Name:\tdualperf\nCapEff:\t0000000000000000\n",
    );
    put("proc/self/ns/net", "");
    put("proc/sys/user/max_net_namespaces", "63432\n");
    put(
        "proc/net/packet",
        "sk RefCnt Type Proto Iface R Rmem User Inode\n",
    );
    std::os::unix::fs::symlink("/proc/stat", root.join("proc/stat")).unwrap();
}

/// Each check's `(id, status)` in a `doctor --json` document.
fn verdicts(doc: &Value) -> Vec<(String, String)> {
    doc["checks"]
        .as_array()
        .expect("checks")
        .iter()
        .map(|c| {
            (
                c["id"].as_str().unwrap().to_owned(),
                c["status"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

#[test]
fn doctor_prints_one_line_per_check_then_why_and_fix_for_each_problem() {
    let out = run(&["doctor"]);
    out.assert_success();
    let lines: Vec<&str> = out.stdout.lines().collect();
    assert!(
        lines[0].starts_with("dualperf doctor: ") && lines[0].contains("(12 checks: "),
        "{}",
        out.stdout
    );
    let mut problems = 0;
    for (line, id) in lines[1..13].iter().zip(IDS) {
        let (status, rest) = line.split_at(6);
        assert!(
            ["ok    ", "warn  ", "fail  "].contains(&status),
            "{line}\n{}",
            out.stdout
        );
        assert!(rest.starts_with(&format!("{id} ")), "{line}");
        problems += usize::from(status != "ok    ");
    }
    // Each check that is not ok has its why and fix below.
    assert_eq!(
        out.stdout.matches("\n  why: ").count(),
        problems,
        "{}",
        out.stdout
    );
    assert_eq!(out.stderr, "");
}

#[test]
fn doctor_json_validates_against_its_schema_and_reads_back() {
    let doc = run(&["doctor", "--json"]).assert_success().json();
    assert_valid("doctor", &doc);
    let typed: results::doctor::DoctorDoc = serde_json::from_value(doc.clone()).unwrap();
    let ids: Vec<&str> = typed.checks.iter().map(|c| c.id.as_str()).collect();
    assert_eq!(ids, IDS);
    assert_eq!(typed.status, results::doctor::worst(&typed.checks));
    assert_eq!(typed.figures.sleep_samples, 200);
    // The check can fail: a key the type does not declare is refused, as is a verdict
    // it does not know.
    let mut extra = doc.clone();
    extra["checks"][0]["severity"] = Value::from(1);
    assert!(!validator("doctor").is_valid(&extra));
    let mut unknown = doc;
    unknown["checks"][0]["status"] = Value::from("maybe");
    assert!(!validator("doctor").is_valid(&unknown));
}

#[test]
fn a_faked_tree_gives_the_verdicts_it_holds() {
    let tmp = TempDir::new("doctor-root");
    let root = tmp.path("root");
    fake_host(&root);
    let doc = run(&["doctor", "--json", "--root", path_str(&root)])
        .assert_success()
        .json();
    assert_valid("doctor", &doc);
    let v = verdicts(&doc);
    let of = |id: &str| v.iter().find(|(i, _)| i == id).unwrap().1.as_str();
    for (id, want) in [
        ("clocksource", "ok"),
        ("cpu-governor", "warn"),
        ("cpu-idle", "warn"),
        ("socket-buffers", "warn"),
        ("namespaces", "warn"),
        ("af-packet", "warn"),
        ("cores", "ok"),
    ] {
        assert_eq!(of(id), want, "{id}: {doc:#}");
    }
    assert_eq!(
        doc["figures"]["governors"],
        serde_json::json!(["performance", "powersave"])
    );
    assert_eq!(doc["figures"]["idle_exit_latency_max_ns"], 133_000);
    assert_eq!(doc["figures"]["rmem_max_bytes"], 212_992);
    assert!(doc["figures"]["steal_pct"].is_f64(), "{doc:#}");
    let missing = run(&["doctor", "--root", path_str(&tmp.path("nowhere"))]);
    assert_eq!(missing.code(), Some(2), "{}", missing.stderr);
}

/// The doctor without root: the checks of privilege say so, nothing fails to run. As
/// root, the binary is run as nobody (`setpriv`), which drops every capability.
#[test]
fn doctor_runs_without_root_and_says_what_the_lab_lacks() {
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    let out = if root {
        let setpriv = Command::new("setpriv").arg("--version").output();
        if setpriv.map_or(true, |o| !o.status.success()) {
            assert!(
                std::env::var("CI").as_deref() != Ok("true"),
                "under CI=true this test must run: setpriv (util-linux) is missing"
            );
            eprintln!("skipped: running as root without setpriv");
            return;
        }
        Command::new("setpriv")
            .args([
                "--reuid=65534",
                "--regid=65534",
                "--clear-groups",
                BIN,
                "doctor",
                "--json",
            ])
            .output()
            .unwrap()
    } else {
        Command::new(BIN)
            .args(["doctor", "--json"])
            .output()
            .unwrap()
    };
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}\n{stdout}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(doc["figures"]["cap_net_admin"], false, "{doc:#}");
    assert_eq!(doc["figures"]["cap_net_raw"], false, "{doc:#}");
    let v = verdicts(&doc);
    for id in ["namespaces", "af-packet"] {
        let status = &v.iter().find(|(i, _)| i == id).unwrap().1;
        assert!(status == "warn" || status == "fail", "{id}: {doc:#}");
    }
    assert_eq!(v.len(), 12);
}

const PLAN: &str = r#"version = 1
name = "doctor"
repetitions = 1
duration = "200ms"

[flow]
udp = true
rate = "200pps"

[factors]
size = [64]
"#;

#[test]
fn run_keeps_the_doctors_checks_and_report_shows_their_warnings() {
    let tmp = TempDir::new("doctor-run");
    let plan = tmp.path("plan.toml");
    std::fs::write(&plan, PLAN).unwrap();
    let dir = tmp.path("results");
    run(&["run", path_str(&plan), "--dir", path_str(&dir)]).assert_success();
    // `run` keeps the short run of every check.
    let file = dir.join("doctor.json");
    let mut doc: Value = serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
    assert_valid("doctor", &doc);
    let typed: results::doctor::DoctorDoc = serde_json::from_value(doc.clone()).unwrap();
    assert_eq!(typed.checks.len(), 12);
    assert_eq!(typed.figures.sleep_samples, 100, "the fast run");
    // Whatever this host is, make one check warn with a finding of the test's own, and
    // every other pass.
    for c in doc["checks"].as_array_mut().unwrap() {
        let steal = c["id"] == "steal";
        c["status"] = Value::from(if steal { "warn" } else { "ok" });
        if steal {
            c["found"] = Value::from("9.9 % of CPU time stolen (the test's)");
        }
    }
    doc["status"] = Value::from("warn");
    std::fs::write(&file, serde_json::to_vec_pretty(&doc).unwrap()).unwrap();
    let line = "warn steal: 9.9 % of CPU time stolen (the test's)";
    let text = run(&["report", path_str(&dir)])
        .assert_success()
        .stdout
        .clone();
    let lines: Vec<&str> = text.lines().collect();
    let at = lines
        .iter()
        .position(|l| l.starts_with("Host checks not ok when the runs started"))
        .unwrap_or_else(|| panic!("{text}"));
    assert_eq!(lines[at + 1], format!("  {line}"), "{text}");
    assert_eq!(
        text.matches("  warn ").count(),
        1,
        "only the warning: {text}"
    );
    let md = run(&["report", path_str(&dir), "--markdown"])
        .assert_success()
        .stdout
        .clone();
    assert!(md.contains(&format!("\n- {line}\n")), "{md}");
    let page = tmp.path("report.html");
    run(&["report", path_str(&dir), "--html", path_str(&page)]).assert_success();
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(html.contains(&format!("<li>{line}</li>")), "{html}");
    // A run directory from before the doctor still reports, without the lines.
    std::fs::remove_file(&file).unwrap();
    let old = run(&["report", path_str(&dir)]);
    old.assert_success();
    assert!(!old.stdout.contains("Host checks"), "{}", old.stdout);
    assert_eq!(old.stderr, "", "no warning for a file that was never there");
}
