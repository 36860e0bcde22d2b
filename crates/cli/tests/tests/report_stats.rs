//! What a report claims from few runs: one run gets no statistics, said plainly; five
//! runs get intervals that stay inside each metric's range.

use serde_json::Value;

use crate::support::{path_str, run, TempDir};

/// One point, UDP round trip, so that every metric but one-way delay is one that
/// cannot be negative.
fn plan(repetitions: u32) -> String {
    format!(
        r#"version = 1
name = "stats-{repetitions}"
repetitions = {repetitions}
duration = "200ms"

[flow]
udp = true
rate = "2000pps"
meter = "rtt"
"#
    )
}

/// Runs the plan and returns (`report --json`, the HTML page, `report` text).
fn report(repetitions: u32) -> (Value, String, String) {
    let tmp = TempDir::new(&format!("report-stats-{repetitions}"));
    let plan_file = tmp.path("plan.toml");
    std::fs::write(&plan_file, plan(repetitions)).unwrap();
    let dir = tmp.path("results");
    run(&["run", path_str(&plan_file), "--dir", path_str(&dir)]).assert_success();
    let json = run(&["report", path_str(&dir), "--json"]);
    json.assert_success();
    let page = tmp.path("report.html");
    run(&["report", path_str(&dir), "--html", path_str(&page)]).assert_success();
    let text = run(&["report", path_str(&dir)]);
    text.assert_success();
    (
        json.json(),
        std::fs::read_to_string(&page).unwrap(),
        text.stdout.clone(),
    )
}

/// The HTML tables' cells (between `<td` and `</td>`).
fn cells(html: &str) -> Vec<&str> {
    html.split("<td")
        .skip(1)
        .filter_map(|c| {
            c.split_once('>')
                .and_then(|(_, rest)| rest.split_once("</td>"))
        })
        .map(|(cell, _)| cell)
        .collect()
}

#[test]
fn one_run_says_no_statistics_and_five_runs_keep_intervals_in_range() {
    let (doc, html, text) = report(1);
    let notice = "One run per point and family: no statistics.";
    assert!(html.contains(notice), "the page says it plainly");
    assert!(text.contains(notice), "and so does the text report");
    assert!(html.contains("plan stats-1"), "the page names the plan");
    let cells = cells(&html);
    assert!(!cells.is_empty());
    for c in &cells {
        assert!(
            !c.contains("significant") && !c.contains("n.s."),
            "no verdict at n = 1: {c}"
        );
    }
    assert!(cells.iter().any(|c| c.contains("one run: no statistics")));
    for row in doc["rows"].as_array().unwrap() {
        for side in ["ipv4", "ipv6"] {
            if row[side].is_object() {
                assert_eq!(row[side]["n"], 1, "{row}");
                assert!(row[side]["ci_low"].is_null(), "{row}");
            }
        }
    }
    // Every plot of the statistics says it too (the run's delay distribution is one
    // run's, as it says).
    let cdfs = html
        .matches("round-trip time distribution, every run</title>")
        .count();
    assert_eq!(cdfs, 1, "the plan's one point has its delay distribution");
    assert_eq!(
        html.matches("<svg ").count() - cdfs,
        html.matches(r##"fill="#555">one run: no statistics · plan stats-1"##)
            .count()
    );

    let (doc, html, _) = report(5);
    assert!(!html.contains(notice));
    // One delay distribution for the point, every run on it: 10 lines.
    let cdf = html
        .split("<svg ")
        .find(|svg| svg.contains("round-trip time distribution, every run"))
        .expect("the point's delay distribution");
    assert_eq!(cdf.matches("<polyline").count(), 10);
    let mut checked = 0;
    for row in doc["rows"].as_array().unwrap() {
        let metric = row["metric"].as_str().unwrap();
        // Only a one-way delay may be below zero (a clock offset between hosts); this
        // plan's `delay` is its round trip.
        if metric == "owd" {
            continue;
        }
        for side in ["ipv4", "ipv6"] {
            let s = &row[side];
            if !s.is_object() {
                continue;
            }
            assert_eq!(s["n"], 5, "{row}");
            assert_eq!(s["interval"], "percentile_bootstrap", "{metric}: {row}");
            let (low, high) = (
                s["ci_low"].as_f64().unwrap(),
                s["ci_high"].as_f64().unwrap(),
            );
            let mean = s["mean"].as_f64().unwrap();
            assert!(
                0.0 <= low && low <= mean && mean <= high,
                "{metric} {side}: {s}"
            );
            checked += 1;
        }
    }
    assert!(
        checked >= 8,
        "throughput, rtt, jitter, loss… on both sides: {checked}"
    );
}

#[test]
fn a_partial_run_names_what_is_missing_and_every_file_written_is_named() {
    let tmp = TempDir::new("report-partial");
    let plan_file = tmp.path("plan.toml");
    std::fs::write(&plan_file, plan(2)).unwrap();
    let dir = tmp.path("results");
    run(&["run", path_str(&plan_file), "--dir", path_str(&dir)]).assert_success();
    // Whole: nothing extra.
    let whole = run(&["report", path_str(&dir)]);
    whole.assert_success();
    assert!(!whole.stdout.contains("artial"), "{}", whole.stdout);
    assert!(run(&["report", path_str(&dir), "--json"])
        .assert_success()
        .json()["partial"]
        .is_null());
    // One of the four runs gone.
    let gone = dir.join("runs/rep002-flow-ipv6.json");
    std::fs::remove_file(&gone).unwrap_or_else(|e| panic!("{}: {e}", gone.display()));
    let text = run(&["report", path_str(&dir)]);
    text.assert_success();
    let out = &text.stdout;
    assert!(
        out.contains("Partial: 3 of 4 planned runs have results"),
        "{out}"
    );
    assert!(out.contains("\n  point flow: 3 of 4 runs\n"), "{out}");
    assert!(
        out.contains("\npartial: 3 of 4 runs; missing: point flow IPv6 rep 2\n"),
        "under each table's title: {out}"
    );
    let json = run(&["report", path_str(&dir), "--json"]);
    json.assert_success();
    assert!(
        json.stderr
            .contains("warning: Partial: 3 of 4 planned runs"),
        "{}",
        json.stderr
    );
    let doc = json.json();
    assert_eq!(doc["partial"]["done"], 3);
    assert_eq!(doc["partial"]["planned"], 4);
    assert_eq!(doc["partial"]["missing"][0]["id"], "rep002-flow-ipv6");
    assert_eq!(doc["partial"]["missing"][0]["failed"], false);
    assert_eq!(doc["partial"]["points"][0]["done"], 3);
    // Every file written is named, and what is not drawn is said.
    let page = tmp.path("report.html");
    let svgs = tmp.path("svg");
    let html = run(&[
        "report",
        path_str(&dir),
        "--html",
        path_str(&page),
        "--svg",
        path_str(&svgs),
    ]);
    html.assert_success();
    let written: Vec<String> = std::fs::read_dir(&svgs)
        .unwrap()
        .map(|e| e.unwrap().path().display().to_string())
        .collect();
    assert!(!written.is_empty());
    let err = &html.stderr;
    for f in &written {
        assert!(err.contains(&format!("\n  {f}")), "{f}: {err}");
    }
    let svg_count = written.len();
    assert!(
        err.contains(&format!(
            "wrote {svg_count} SVG plot{} in {}",
            if svg_count == 1 { "" } else { "s" },
            path_str(&svgs)
        )),
        "{err}"
    );
    let page_text = std::fs::read_to_string(&page).unwrap();
    assert_eq!(page_text.matches("<svg ").count(), svg_count);
    assert!(
        err.contains(&format!("wrote {} ({svg_count} plots", path_str(&page))),
        "{err}"
    );
    assert!(page_text.contains("partial: 3 of 4 runs; missing: point flow IPv6 rep 2"));
    // Each plot not drawn is said on stderr and on the page, in the same words.
    let not_drawn: Vec<&str> = err.lines().filter(|l| l.contains("not drawn: ")).collect();
    assert_eq!(
        page_text.matches("<p class=\"not-drawn\">").count(),
        not_drawn.len(),
        "{err}"
    );
}
