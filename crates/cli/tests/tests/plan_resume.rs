//! `dualperf run` says where its results are and how to go on: the run directory when it
//! starts, and on Ctrl-C the command that resumes it (with the overrides it was started
//! with), which completes it; `--resume` without `--dir` finds the newest unfinished run
//! of the plan; every random model of a point is seeded alike over both families; and a
//! plan across hosts whose every run an agent refuses exits non-zero with the reason.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::support::{path_str, run, Proc, TempDir, BIN, HANG_GUARD};

/// The plan's own repetitions and duration are long; the test runs it with
/// `--repetitions 2 --duration 300ms`: 3 points × 2 families × 2 = 12 runs. Each flow
/// draws its gaps from an exponential distribution (a random model to seed).
const PLAN: &str = r#"version = 1
name = "tiny"
repetitions = 15
duration = "60s"

[flow]
udp = true
idt = "exp:5"

[factors]
size = [64, 128, 256]
"#;

/// `dualperf ARGS` started in `cwd`, stdout and stderr into files there; killed and
/// reaped when dropped, so a failing test leaves nothing running.
struct InDir {
    child: Child,
    out: PathBuf,
    err: PathBuf,
}

impl InDir {
    fn spawn(cwd: &Path, name: &str, args: &[&str]) -> Self {
        let out = cwd.join(format!("{name}.stdout"));
        let err = cwd.join(format!("{name}.stderr"));
        let child = Command::new(BIN)
            .args(args)
            .current_dir(cwd)
            .env_remove("DUALPERF_KEY")
            .stdin(Stdio::null())
            .stdout(std::fs::File::create(&out).unwrap())
            .stderr(std::fs::File::create(&err).unwrap())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {BIN}: {e}"));
        Self { child, out, err }
    }

    fn stderr(&self) -> String {
        std::fs::read_to_string(&self.err).unwrap_or_default()
    }

    /// The first stderr line (so far or to come) that starts with `prefix`.
    fn wait_line(&mut self, prefix: &str) -> String {
        let t0 = Instant::now();
        loop {
            if let Some(l) = self.stderr().lines().find(|l| l.starts_with(prefix)) {
                return l.to_owned();
            }
            assert!(
                t0.elapsed() < HANG_GUARD && matches!(self.child.try_wait(), Ok(None)),
                "no line {prefix:?}; stderr:\n{}",
                self.stderr()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn interrupt(&self) {
        // SAFETY: kill(2) with a pid this test spawned and has not reaped yet.
        let rc = unsafe { libc::kill(self.child.id() as i32, libc::SIGINT) };
        assert_eq!(rc, 0);
    }

    /// Wait for it to exit by itself: its exit code, stdout and stderr.
    fn finish(mut self, guard: Duration) -> (Option<i32>, String, String) {
        let t0 = Instant::now();
        let status = loop {
            if let Some(s) = self.child.try_wait().unwrap() {
                break s;
            }
            assert!(
                t0.elapsed() < guard,
                "did not exit; stderr:\n{}",
                self.stderr()
            );
            std::thread::sleep(Duration::from_millis(20));
        };
        let out = std::fs::read_to_string(&self.out).unwrap_or_default();
        (status.code(), out, self.stderr())
    }
}

impl Drop for InDir {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The finished runs in `dir` (`runs/ID.json`; a failed run's record is `ID.failed`).
fn finished(dir: &Path) -> Vec<String> {
    let mut ids: Vec<String> = std::fs::read_dir(dir.join("runs"))
        .map(|d| {
            d.filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter_map(|n| n.strip_suffix(".json").map(str::to_owned))
                .collect()
        })
        .unwrap_or_default();
    ids.sort();
    ids
}

/// Wait until `dir` holds at least `n` finished runs.
fn wait_finished(p: &mut InDir, dir: &Path, n: usize) {
    let t0 = Instant::now();
    while finished(dir).len() < n {
        assert!(
            t0.elapsed() < HANG_GUARD && matches!(p.child.try_wait(), Ok(None)),
            "{n} runs never finished; stderr:\n{}",
            p.stderr()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// What an interrupted run said: how many runs it had, and the command that goes on.
fn interrupted(stderr: &str, dir: &str) -> (usize, String) {
    let said = stderr
        .lines()
        .find_map(|l| l.strip_prefix("dualperf run: interrupted after "))
        .unwrap_or_else(|| panic!("no interruption line: {stderr}"));
    let (done, rest) = said.split_once(" of 12 runs; they are in ").unwrap();
    assert_eq!(rest, dir, "{stderr}");
    let command = stderr
        .lines()
        .find_map(|l| l.strip_prefix("dualperf run: to go on: "))
        .unwrap_or_else(|| panic!("no resume command: {stderr}"));
    (done.parse().unwrap(), command.to_owned())
}

#[test]
fn an_interrupted_run_names_its_directory_and_the_command_that_completes_it() {
    let tmp = TempDir::new("plan-resume");
    let plan = tmp.path("tiny.toml");
    std::fs::write(&plan, PLAN).unwrap();
    let cwd = tmp.path("");
    let p = path_str(&plan);
    // No --resume to go on with yet.
    let none = InDir::spawn(&cwd, "none", &["run", p, "--resume"]).finish(HANG_GUARD);
    assert_eq!(none.0, Some(2), "{}", none.2);
    assert!(
        none.2
            .contains("no unfinished run of plan 'tiny' in results/"),
        "{}",
        none.2
    );

    // 1. No --dir: it picks one under results/ and says which as it starts.
    let mut first = InDir::spawn(
        &cwd,
        "first",
        &["run", p, "--repetitions", "2", "--duration", "300ms"],
    );
    let line = first.wait_line("dualperf run: run directory ");
    let rel = line.strip_prefix("dualperf run: run directory ").unwrap();
    assert!(rel.starts_with("results/tiny-"), "{line}");
    let dir = cwd.join(rel);
    wait_finished(&mut first, &dir, 2);
    first.interrupt();
    let (code, _, stderr) = first.finish(HANG_GUARD);
    assert_eq!(code, Some(1), "{stderr}");
    let (done, command) = interrupted(&stderr, rel);
    assert!((2..12).contains(&done), "{stderr}");
    assert_eq!(finished(&dir).len(), done);
    assert_eq!(
        command,
        format!("dualperf run {p} --dir {rel} --resume --repetitions 2 --duration 300ms")
    );

    // 2. --resume without --dir (and without the overrides): the newest unfinished run
    // of the plan, with the overrides it was started with.
    let mut second = InDir::spawn(&cwd, "second", &["run", p, "--resume"]);
    let line = second.wait_line("dualperf run: resuming ");
    assert_eq!(
        line,
        format!("dualperf run: resuming {rel}, the newest unfinished run of plan 'tiny' in results/ ({done} of 12 runs done)")
    );
    wait_finished(&mut second, &dir, done + 1);
    second.interrupt();
    let (code, _, stderr) = second.finish(HANG_GUARD);
    assert_eq!(code, Some(1), "{stderr}");
    let (done2, command2) = interrupted(&stderr, rel);
    assert!(done2 > done && done2 < 12, "{stderr}");
    assert_eq!(command2, command);
    // Other overrides than it was started with are refused.
    let other = run(&[
        "run",
        p,
        "--dir",
        path_str(&dir),
        "--resume",
        "--repetitions",
        "3",
    ]);
    assert_eq!(other.code(), Some(2), "{}", other.stderr);
    assert!(
        other.stderr.contains(
            "was started with --repetitions 2 --duration 300ms: a resume goes on with the same"
        ),
        "{}",
        other.stderr
    );

    // 3. The exact command it printed completes the run.
    let words: Vec<&str> = command.split(' ').collect();
    assert_eq!(words[0], "dualperf");
    let (code, _, stderr) = InDir::spawn(&cwd, "third", &words[1..]).finish(HANG_GUARD * 2);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "{} runs measured, {done2} already there, 0 with errors",
            12 - done2
        )),
        "{stderr}"
    );
    let all = finished(&dir);
    assert_eq!(all.len(), 12, "{all:?}");

    // Every run measured 300 ms, and every point sent one sequence: the same seed over
    // both families and in both repetitions, recorded in the command and the report,
    // and a different one at each point.
    let mut seeds = std::collections::BTreeMap::new();
    for id in &all {
        let text = std::fs::read_to_string(dir.join(format!("runs/{id}.json"))).unwrap();
        let rec: Value = serde_json::from_str(&text).unwrap();
        let spec = &rec["report"]["flows"][0]["spec"];
        assert_eq!(spec["stop"]["duration_ns"], 300_000_000, "{id}");
        let seed = spec["seed"].as_u64().unwrap();
        let argv: Vec<&str> = rec["argv"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a.as_str().unwrap())
            .collect();
        let at = argv.iter().position(|a| *a == "--seed").unwrap();
        assert_eq!(argv[at + 1], seed.to_string(), "{id}");
        seeds
            .entry(rec["point"].as_str().unwrap().to_owned())
            .or_insert_with(Vec::new)
            .push(seed);
    }
    assert_eq!(seeds.len(), 3);
    let mut distinct: Vec<u64> = Vec::new();
    for (point, s) in &seeds {
        assert_eq!(s.len(), 4, "{point}");
        assert!(s.iter().all(|x| *x == s[0]), "{point}: {s:?}");
        distinct.push(s[0]);
    }
    distinct.dedup();
    assert_eq!(distinct.len(), 3, "{seeds:?}");
    let resolved: Value =
        serde_json::from_slice(&std::fs::read(dir.join("resolved.json")).unwrap()).unwrap();
    assert_eq!(
        resolved["overrides"],
        serde_json::json!({"repetitions": 2, "duration_ns": 300_000_000})
    );

    // The report of the completed run: every point over both families, two runs each.
    let doc = run(&["report", path_str(&dir), "--json"])
        .assert_success()
        .json();
    let rows = doc["rows"].as_array().unwrap();
    assert!(!rows.is_empty());
    for r in rows {
        assert_eq!(r["ipv4"]["n"], 2, "{r:#}");
        assert_eq!(r["ipv6"]["n"], 2, "{r:#}");
    }
}

/// A `dualperf agent` on a free port with key `k` and no `--allow`: it sends only to
/// the address that asks.
fn agent() -> (Proc, u16) {
    let proc = Proc::spawn(&["agent", "--port", "0", "--key", "k"]);
    let line = proc.wait_stderr_line(|l| l.starts_with("dualperf agent: listening on"));
    let port = line
        .split_once("]:")
        .and_then(|(_, rest)| rest.split(' ').next())
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| panic!("no port in {line:?}"));
    (proc, port)
}

#[test]
fn a_plan_across_hosts_whose_every_run_is_refused_fails_with_the_reason() {
    let (_sender, sender_port) = agent();
    let (_receiver, receiver_port) = agent();
    let tmp = TempDir::new("plan-refused");
    let plan = tmp.path("refused.toml");
    // The receiving host is 127.0.0.2: not the controller's own address (127.0.0.1),
    // and the sending agent has no --allow.
    std::fs::write(
        &plan,
        format!(
            r#"version = 1
name = "refused"
repetitions = 2
duration = "1s"
target = "hosts"

[flow]
udp = true
rate = "100pps"

[factors]
ip = [4]
size = [64, 128]

[hosts.sender]
agent4 = "127.0.0.1"
port = {sender_port}
key_env = "PLAN_KEY"

[hosts.receiver]
agent4 = "127.0.0.2"
port = {receiver_port}
key_env = "PLAN_KEY"
"#
        ),
    )
    .unwrap();
    let dir = tmp.path("results");
    let out = Proc::spawn_with_env(
        &["run", path_str(&plan), "--dir", path_str(&dir)],
        &[("PLAN_KEY", "k")],
    )
    .finish();
    assert_eq!(out.code(), Some(1), "{}", out.stderr);
    let want = "dualperf run: 4 of 4 runs failed: agent refused: destination 127.0.0.2 is outside --allow: this agent may send to only the asker's own address (no --allow given) (runs 1–4: rep001-size=64-ipv4, rep001-size=128-ipv4, …, rep002-size=128-ipv4)";
    let lines: Vec<&str> = out
        .stderr
        .lines()
        .filter(|l| l.starts_with("dualperf run: ") && l.contains("runs failed"))
        .collect();
    assert_eq!(lines, [want], "{}", out.stderr);
    assert!(
        out.stderr.contains("dualperf: error: 4 of 4 runs failed"),
        "{}",
        out.stderr
    );
    assert!(!out.stderr.contains("see their stderr"), "{}", out.stderr);
    // Each failed run kept what it said.
    let kept = std::fs::read_dir(dir.join("runs"))
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .file_name()
                .to_string_lossy()
                .ends_with(".failed")
        })
        .count();
    assert_eq!(kept, 4);
}
