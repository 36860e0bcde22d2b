//! `dualperf run`: a plan's runs land in a run directory, a kill loses nothing finished,
//! and `--resume` measures only what is missing.

use std::path::Path;
use std::time::{Duration, Instant};

use crate::support::{path_str, run, u, Proc, TempDir};

/// Two sizes × two families × two repetitions of 300 ms: 8 runs (`pg_store.rs` too).
pub(crate) const PLAN: &str = r#"version = 1
name = "tiny"
repetitions = 2
duration = "300ms"

[flow]
udp = true
rate = "200pps"

[factors]
size = [64, 256]

[[tables]]
title = "Table 1. UDP by size"
metrics = ["throughput:kbit/s", "loss"]
"#;

fn result_ids(dir: &Path) -> Vec<String> {
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

    let stored = kill_after_a_few_runs(&plan, &dir);
    let all = resume_the_rest(&plan, &dir, &stored);
    let tp = assert_json_report(&dir, &all);
    let mean = tp["ipv4"]["mean"].as_f64().unwrap();
    assert_markdown_report(&dir, &tp);
    let csv = assert_csv_report(&dir, mean);
    assert_html_and_plot_files(&tmp, &dir, &csv);
    assert_sqlite_index(&tmp, &dir);
    // Resuming under another plan is refused.
    std::fs::write(&plan, PLAN.replace("[64, 256]", "[64, 512]")).unwrap();
    let other = run(&["run", path_str(&plan), "--dir", path_str(&dir), "--resume"]);
    assert_eq!(other.code(), Some(2), "{}", other.stderr);
}

/// Runs `plan` into `dir`, kills it (-9) once at least 3 of its 8 runs are stored and
/// sees its children end with it: the ids of the runs stored before the kill.
fn kill_after_a_few_runs(plan: &Path, dir: &Path) -> Vec<String> {
    // Kill -9 after a few runs are stored.
    let proc = Proc::spawn(&["run", path_str(plan), "--dir", path_str(dir)]);
    let t0 = Instant::now();
    while result_ids(dir).len() < 3 {
        assert!(t0.elapsed() < Duration::from_secs(60), "no results appear");
        std::thread::sleep(Duration::from_millis(20));
    }
    let kids = children(proc.pid());
    proc.kill9();
    let stored = result_ids(dir);
    assert!(stored.len() >= 3 && stored.len() < 8, "{stored:?}");
    // The receiver it started ends with it (its stdin lifeline closes).
    let t1 = Instant::now();
    while kids
        .iter()
        .any(|k| Path::new(&format!("/proc/{k}")).exists())
    {
        assert!(
            t1.elapsed() < Duration::from_secs(5),
            "a child of the killed run lives on"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    stored
}

/// A fresh run of `plan` into `dir` is refused; `--resume` measures only the runs not
/// `stored` and says so, and each result is its sender's report: all 8 run ids.
fn resume_the_rest(plan: &Path, dir: &Path, stored: &[String]) -> Vec<String> {
    // A fresh run into the same directory is refused; --resume measures the rest.
    let again = run(&["run", path_str(plan), "--dir", path_str(dir)]);
    assert_eq!(again.code(), Some(2), "{}", again.stderr);
    let resumed = run(&["run", path_str(plan), "--dir", path_str(dir), "--resume"]);
    resumed.assert_success();
    let all = result_ids(dir);
    assert_eq!(all.len(), 8, "{all:?}");
    // Nothing measured twice: the runs kept before the kill are the same files.
    for id in stored {
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
    all
}

/// `report --json` of `dir`, whose runs are `all`: every point and metric over both
/// families, two repetitions each. Its size=256 throughput row, whose IPv4 mean is
/// the mean of the two runs' own bit rates.
fn assert_json_report(dir: &Path, all: &[String]) -> serde_json::Value {
    // The report: every point and metric over both families, two repetitions each.
    let doc = run(&["report", path_str(dir), "--json"])
        .assert_success()
        .json();
    let rows = doc["rows"].as_array().unwrap();
    // Throughput, frame throughput, one-way delay, delay, jitter (D-ITG's and RFC
    // 3550's), loss: no rtt without --meter rtt.
    assert_eq!(rows.len(), 2 * 7, "{doc:#}");
    assert!(rows.iter().all(|r| r["metric"] != "rtt"));
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
    tp.clone()
}

/// `report --markdown` of `dir`: the plan's table, what it leaves out (delay, jitter)
/// and the row of throughput row `tp` to the places its interval calls for.
fn assert_markdown_report(dir: &Path, tp: &serde_json::Value) {
    let mean = tp["ipv4"]["mean"].as_f64().unwrap();
    // The plan's table: its title, its rows by payload size, kbit/s.
    let md = run(&["report", path_str(dir), "--markdown"])
        .assert_success()
        .stdout
        .clone();
    assert!(md.contains("### Table 1. UDP by size"), "{md}");
    assert!(
        md.contains("| Payload size (bytes) | Throughput (kbit/s): IPv4 | IPv6 | Δ % | Packet loss (%): IPv4 | IPv6 | Δ % |"),
        "{md}"
    );
    // What the declared table leaves out is reported too.
    // Each in the unit the page chose from its values' magnitude (jitter on loopback is
    // about a microsecond: ns or µs).
    let titles: Vec<(&str, &str)> = md
        .lines()
        .filter(|l| l.starts_with("### "))
        .map(|l| l.split_once(" (").unwrap_or((l, "")))
        .collect();
    let names: Vec<&str> = titles.iter().map(|t| t.0).collect();
    assert_eq!(
        names,
        [
            "### Table 1. UDP by size",
            "### Also measured: Delay",
            "### Also measured: Jitter"
        ],
        "{md}"
    );
    for (_, unit) in &titles[1..] {
        assert!(["ns)", "µs)", "ms)"].contains(unit), "{md}");
    }
    // About 400 kbit/s, then the bootstrap interval: the mean to the place of the
    // interval's second digit, as every figure of the page (two decimals while its
    // half-width is under 1 kbit/s, one up to 10).
    let (low, high) = (
        tp["ipv4"]["ci_low"].as_f64().unwrap() / 1e3,
        tp["ipv4"]["ci_high"].as_f64().unwrap() / 1e3,
    );
    let d = report::units::decimals(mean / 1e3, Some((low, high)));
    let kbit = format!("| 256 | {:.d$} [", mean / 1e3);
    assert!(md.contains(&kbit), "want {kbit}: {md}");
}

/// `report --csv` of `dir`: the size=256 throughput row in kbit/s, its mean `mean`
/// bit/s. The CSV text.
fn assert_csv_report(dir: &Path, mean: f64) -> String {
    // CSV: the same table row in its unit.
    let csv = run(&["report", path_str(dir), "--csv"])
        .assert_success()
        .stdout
        .clone();
    let line = csv
        .lines()
        .find(|l| l.contains("\"256\"") && l.contains(",throughput,"))
        .unwrap_or_else(|| panic!("{csv}"));
    let cells: Vec<&str> = line.split(',').collect();
    assert_eq!(cells[4], "\"kbit/s\"", "{line}");
    let csv_mean: f64 = cells[6].parse().unwrap();
    assert!((csv_mean - mean / 1e3).abs() <= 1e-9 * csv_mean, "{line}");
    csv
}

/// `report --html --svg --png` of `dir` into `tmp`: one self-contained page and the
/// same plots as files (the loss plots only when `csv` shows a packet lost).
fn assert_html_and_plot_files(tmp: &TempDir, dir: &Path, csv: &str) {
    // One self-contained page: the table and a plot per metric, nothing to fetch; the
    // same plots as SVG and PNG files.
    let page = tmp.path("report.html");
    let svgs = tmp.path("svg");
    let pngs = tmp.path("png");
    run(&[
        "report",
        path_str(dir),
        "--html",
        path_str(&page),
        "--svg",
        path_str(&svgs),
        "--png",
        path_str(&pngs),
    ])
    .assert_success();
    let html = std::fs::read_to_string(&page).unwrap();
    // No packet lost on loopback (said in words, not drawn), else its 2 plots.
    let lossless = !csv
        .lines()
        .filter(|l| l.contains(",loss,"))
        .any(|l| l.split(',').nth(6) != Some("0") || l.split(',').nth(10) != Some("0"));
    let plots = if lossless { 8 } else { 10 };
    assert_eq!(
        html.matches("<svg ").count(),
        plots,
        "per table and metric a plot of the means and a box plot of the runs; per point its delay distribution"
    );
    assert_eq!(html.matches("<table>").count(), 3);
    assert_eq!(
        html.matches("http").count(),
        html.matches("xmlns=\"http://www.w3.org/2000/svg\"").count(),
        "no URL but the SVG namespace"
    );
    assert!(!html.contains("NaN"));
    let names = |d: &Path| {
        let mut n: Vec<String> = std::fs::read_dir(d)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        n.sort();
        n
    };
    // The delay and jitter units follow the data (ns or µs, written "us"): left out.
    let unitless: Vec<String> = names(&svgs)
        .iter()
        .map(|n| n.replace("__ns_", "__U_").replace("__us_", "__U_"))
        .collect();
    // Each point's delay distribution after the delay's table.
    let mut want = vec![
        "Table_1._UDP_by_size-throughput.svg",
        "Table_1._UDP_by_size-throughput-runs.svg",
        "Table_1._UDP_by_size-loss.svg",
        "Table_1._UDP_by_size-loss-runs.svg",
        "Also_measured__Delay__U_-delay.svg",
        "Also_measured__Delay__U_-delay-runs.svg",
        "size_64-cdf.svg",
        "size_256-cdf.svg",
        "Also_measured__Jitter__U_-jitter.svg",
        "Also_measured__Jitter__U_-jitter-runs.svg",
    ];
    if lossless {
        want.retain(|n| !n.contains("-loss"));
    }
    let want: Vec<String> = want
        .iter()
        .enumerate()
        .map(|(i, n)| format!("{:02}-{n}", i + 1))
        .collect();
    assert_eq!(unitless, want);
    let png_files = names(&pngs);
    assert_eq!(png_files.len(), plots);
    for f in png_files {
        let bytes = std::fs::read(pngs.join(&f)).unwrap();
        assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n", "{f}");
        // IHDR: width and height, big-endian, after the signature and chunk header.
        assert_eq!(&bytes[16..24], [0, 0, 5, 160, 0, 0, 3, 72], "{f}: 1440×840");
    }
}

/// The SQLite index beside `dir` in `tmp`: every run once, queried read-only.
fn assert_sqlite_index(tmp: &TempDir, dir: &Path) {
    // The SQLite index beside the run directory, written by the resumed run: every run
    // once, with the same figures as its file, however often it is indexed again.
    assert!(tmp.path("index.sqlite").is_file());
    for _ in 0..2 {
        let rows = run(&["export", path_str(dir), "--json"])
            .assert_success()
            .json();
        crate::schema::assert_valid("export", &rows);
        let rows = rows.as_array().unwrap();
        assert_eq!(rows.len(), 8, "{rows:#?}");
        for r in rows {
            let id = r["run_id"].as_str().unwrap();
            let text =
                std::fs::read_to_string(dir.join("runs").join(format!("{id}.json"))).unwrap();
            let rec: serde_json::Value = serde_json::from_str(&text).unwrap();
            assert_eq!(
                r["throughput_bps"], rec["report"]["flows"][0]["received"]["bitrate_bps"],
                "{id}"
            );
            assert_eq!(r["plan"], "tiny");
            assert_eq!(r["factors"]["size"], r["size_bytes"].to_string());
        }
    }
    let counts = run(&[
        "export",
        "--index",
        path_str(&tmp.path("index.sqlite")),
        "--sql",
        "SELECT family, count(*) AS runs FROM runs GROUP BY family ORDER BY family",
    ])
    .assert_success()
    .stdout
    .clone();
    assert_eq!(counts, "family,runs\n4,4\n6,4\n");
    // The index is opened read-only for queries.
    let write = run(&[
        "export",
        "--index",
        path_str(&tmp.path("index.sqlite")),
        "--sql",
        "DELETE FROM runs",
    ]);
    assert_eq!(write.code(), Some(1), "{}", write.stderr);
    assert!(
        write.stderr.contains("only read-only queries"),
        "{}",
        write.stderr
    );
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

#[test]
fn background_flows_run_beside_each_measured_one_and_are_reported_with_the_papers_numbers() {
    let tmp = TempDir::new("plan-bg");
    let plan = tmp.path("bg.toml");
    std::fs::write(
        &plan,
        r#"version = 1
name = "bg"
duration = "600ms"
background_lead = "300ms"

[flow]
udp = true
rate = "100pps"
size = 100

[[points]]
label = "alone"

[[points]]
label = "beside"
background = [{ label = "UDP", udp = true, rate = "200pps", size = 500 }]

[[tables]]
title = "Table 9. Beside"
metrics = ["throughput:kbit/s", "bg1.throughput:kbit/s"]
paper = { "beside" = [80, 800] }
"#,
    )
    .unwrap();
    let dir = tmp.path("results");
    let dry = run(&["run", path_str(&plan), "--dry-run"])
        .assert_success()
        .stdout
        .clone();
    assert!(
        dry.contains("beside it, UDP: dualperf send 127.0.0.1 --udp --rate 200pps --size 500"),
        "{dry}"
    );
    run(&["run", path_str(&plan), "--dir", path_str(&dir)]).assert_success();
    let mut bg_rates = Vec::new();
    for family in ["ipv4", "ipv6"] {
        let alone: serde_json::Value = serde_json::from_slice(
            &std::fs::read(dir.join(format!("runs/rep001-alone-{family}.json"))).unwrap(),
        )
        .unwrap();
        assert!(alone.get("background").is_none(), "{alone}");
        let beside: serde_json::Value = serde_json::from_slice(
            &std::fs::read(dir.join(format!("runs/rep001-beside-{family}.json"))).unwrap(),
        )
        .unwrap();
        let bg = &beside["background"][0]["flows"][0];
        let fg = &beside["report"]["flows"][0];
        assert_eq!(bg["spec"]["size_bytes"], 500);
        assert_eq!(fg["sent"]["planned_packets"], 60);
        // Both went to the receivers, the measured flow's and the background's own, and
        // each kept to its rate: its n packets left (n − 1) gaps apart, give or take how
        // late its sender was at worst.
        for (flow, gap_ns) in [(bg, 5_000_000), (fg, 10_000_000)] {
            let n = u(flow, "/sent/packets");
            assert_eq!(u(flow, "/received/packets"), n, "{flow:#}");
            let late = u(flow, "/sent/schedule_error/max_ns");
            let span = u(flow, "/sent/duration_ns");
            assert!(span.abs_diff((n - 1) * gap_ns) <= late, "{flow:#}");
        }
        // It ran beside the measured flow. It began the lead of 300 ms before: its
        // first packet was due 5 ms after it said it had begun (send's start margin),
        // left at most its worst lateness after that and arrived at most its longest
        // delay later (and 1 ms for the wall clock's slewing against the monotonic one
        // that times the lead). It was stopped half a second after the measured sender
        // ended: it sent after that unless the host kept it off the CPU for as long.
        let (bg_first, fg_first) = (
            u(bg, "/received/first_rx_ns"),
            u(fg, "/received/first_rx_ns"),
        );
        let slack = 5_000_000
            + u(bg, "/sent/schedule_error/max_ns")
            + u(bg, "/received/delay/max_ns")
            + 1_000_000;
        assert!(bg_first + 300_000_000 <= fg_first + slack, "{beside:#}");
        assert!(
            u(bg, "/received/last_rx_ns") > u(fg, "/received/last_rx_ns"),
            "{beside:#}"
        );
        bg_rates.push(bg["received"]["bitrate_bps"].as_f64().unwrap());
    }
    let out = run(&["report", path_str(&dir), "--csv"])
        .assert_success()
        .stdout
        .clone();
    let bg_row = out
        .lines()
        .find(|l| {
            l.starts_with("\"Table 9. Beside\",\"beside\",") && l.contains(",bg1.throughput,")
        })
        .unwrap_or_else(|| panic!("{out}"));
    // Each family's mean is its one run's: the background's bits over its first-to-last
    // arrival span (500-byte payloads at 200 packets a second: about 800 kbit/s).
    for (column, rate) in [(6, bg_rates[0]), (10, bg_rates[1])] {
        let mean: f64 = bg_row.split(',').nth(column).unwrap().parse().unwrap();
        assert!((mean - rate / 1e3).abs() <= 1e-9 * mean, "{bg_row}");
    }
    let text = run(&["report", path_str(&dir)])
        .assert_success()
        .stdout
        .clone();
    let row = text
        .lines()
        .find(|l| l.starts_with("beside"))
        .unwrap_or_else(|| panic!("{text}"));
    // The paper's numbers, in the page's unit to three significant digits.
    let cells: Vec<&str> = row.split_whitespace().collect();
    assert!(
        cells.contains(&"80.0") && cells.last() == Some(&"800"),
        "{row}"
    );
    assert!(text.contains("bg1: Throughput (kbit/s): IPv4"), "{text}");
    // The point without background shows none.
    let alone = text.lines().find(|l| l.starts_with("alone")).unwrap();
    assert!(alone.matches('–').count() >= 4, "{alone}");
}

/// `run --json` says what it did on stdout (the runs a dry run would make, or the counts
/// of a real one), and `--quiet` leaves stderr empty on success.
#[test]
fn run_reports_as_json_and_keeps_quiet_when_asked() {
    let tmp = TempDir::new("plan-json");
    let plan = tmp.path("tiny.toml");
    std::fs::write(&plan, PLAN.replace("repetitions = 2", "repetitions = 1")).unwrap();
    let dry = run(&["run", path_str(&plan), "--dry-run", "--json"]);
    let doc = dry.assert_success().json();
    assert_eq!(doc["plan"], "tiny");
    let runs = doc["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 4, "{doc}");
    let first = &runs[0];
    assert_eq!(first["repetition"], 1);
    assert!(first["send"]["dest"] == "127.0.0.1" || first["send"]["dest"] == "::1");
    let args: Vec<&str> = first["send"]["args"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap())
        .collect();
    assert!(
        args.windows(2).any(|w| w == ["--rate", "200pps"]),
        "{args:?}"
    );
    assert_eq!(doc["run_duration_ns"], 300_000_000);

    let dir = tmp.path("results");
    let done = run(&[
        "--quiet",
        "run",
        path_str(&plan),
        "--dir",
        path_str(&dir),
        "--json",
    ]);
    let doc = done.assert_success().json();
    assert_eq!(done.stderr, "", "--quiet: no notes or progress");
    assert_eq!(doc["runs_planned"], 4);
    assert_eq!(doc["runs_measured"], 4);
    assert_eq!(doc["runs_failed"], 0);
    assert_eq!(doc["runs_indexed"], 4);
    assert_eq!(doc["interrupted"], false);
    assert_eq!(doc["dir"], path_str(&dir));
    assert_eq!(result_ids(&dir).len(), 4);
}
