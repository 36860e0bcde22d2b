//! `dualperf compare`: the battery plan's points run several times over IPv4 and IPv6 in
//! pairs into a run directory, both sides measured completely, each point with a
//! verdict per metric; `dualperf report` of that directory prints the same verdicts.

use crate::support::{run, u, TempDir};

#[test]
fn quick_battery_measures_both_families_five_times_for_every_test_and_gives_verdicts() {
    let tmp = TempDir::new("compare-quick");
    let dir = tmp.path("run");
    let out = run(&[
        "compare".as_ref(),
        "--quick".as_ref(),
        "--sizes".as_ref(),
        "64,1472".as_ref(),
        "--protocols".as_ref(),
        "udp".as_ref(),
        "--duration".as_ref(),
        "200ms".as_ref(),
        "--json".as_ref(),
        "--dir".as_ref(),
        dir.as_os_str(),
    ]);
    let doc = out.assert_success().json();
    crate::schema::assert_valid("compare", &doc);
    assert_eq!(doc["repetitions"], 5);
    assert_eq!(doc["analysis"], "paired");
    assert_eq!(doc["dir"], dir.display().to_string());
    let points = doc["points"].as_array().expect("points");
    // Two size tests, D-ITG's five VoIP codecs and three game models.
    assert_eq!(points.len(), 10, "{doc:#}");
    let names: Vec<&str> = points.iter().map(|p| p["name"].as_str().unwrap()).collect();
    assert_eq!(names[..3], ["size 64", "size 1472", "VoIP G.711.1"]);
    assert_eq!(
        names[7..],
        [
            "Quake 3",
            "Counter-Strike active",
            "Counter-Strike inactive"
        ]
    );
    // Every run is in the run directory, with the plan, its expansion and the host check.
    for file in ["plan.toml", "resolved.json", "doctor.json", "host.json"] {
        assert!(dir.join(file).is_file(), "{file}");
    }
    assert_eq!(std::fs::read_dir(dir.join("runs")).unwrap().count(), 100);
    assert!(tmp.path("index.sqlite").is_file());
    let tables = doc["tables"].as_array().unwrap();
    let metrics: Vec<&str> = tables
        .iter()
        .map(|t| t["metric"].as_str().unwrap())
        .collect();
    assert_eq!(metrics, ["throughput", "rtt_median", "jitter", "loss"]);
    // What this host did to the runs: a run that fell behind its schedule in each of its
    // attempts is named in its point's errors and left out of the statistics. Nothing
    // else may go wrong.
    let tested: usize = points
        .iter()
        .enumerate()
        .map(|(t, p)| check_point(t, p, tables))
        .sum();
    // Ten points × four metrics (on a host that kept up), all tested at one level.
    assert_eq!(doc["verdicts"]["tested"], tested);
    let level = doc["verdicts"]["level"].as_f64().unwrap();
    assert!((0.95..1.0).contains(&level));
    assert!(!doc["summary"].as_array().unwrap().is_empty());
    // The VoIP tests run at their codec's rate with a real RTP header.
    assert_eq!(points[2]["rate"], "100pps");
    assert_eq!(
        points[2]["runs"][0]["ipv6"]["flow"]["spec"]["rtp"]["payload_type"],
        0
    );
}

/// One point of the quick battery: its runs, which were counted, and its verdict per
/// metric against the runs that count; how many of its comparisons were tested.
fn check_point(t: usize, p: &serde_json::Value, tables: &[serde_json::Value]) -> usize {
    let mut tested = 0;
    let flagged: Vec<String> = p["errors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            let e = e.as_str().unwrap();
            assert!(e.contains("the host fell behind"), "{p:#}");
            // "run 2 IPv6: …"
            e.split(':').next().unwrap().to_owned()
        })
        .collect();
    let runs = p["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 5, "{p:#}");
    for (rep, r) in runs.iter().enumerate() {
        assert_eq!(r["repetition"], rep + 1);
        // Alternating: the family that goes first alternates by point and by pass.
        assert_eq!(r["ipv6_first"], (rep + t) % 2 == 1, "{r:#}");
        for (side, family) in [("ipv4", "IPv4"), ("ipv6", "IPv6")] {
            let sent = u(r, &format!("/{side}/sent_packets"));
            assert!(sent > 0, "{r:#}");
            assert_eq!(
                u(r, &format!("/{side}/received_packets")),
                sent,
                "{side} {r:#}"
            );
            assert!(r[side]["figures"]["rtt_median"].as_f64().unwrap() > 0.0);
            // Not counted exactly when its last attempt sent under 90 % of its
            // constant-rate schedule; measured again only while it did.
            let attempts = u(r, &format!("/{side}/attempts"));
            let behind = match r[side]["flow"]["sent"]["planned_packets"].as_u64() {
                Some(planned) if t < 7 => sent * 10 < planned * 9,
                _ => false,
            };
            let name = format!("run {} {family}", rep + 1);
            assert_eq!(flagged.contains(&name), behind, "{name}: {p:#}");
            assert_eq!(r[side]["not_counted"].is_string(), behind, "{r:#}");
            assert!((1..=3).contains(&attempts), "{r:#}");
            assert!(!behind || attempts == 3, "{r:#}");
        }
    }
    // A verdict per metric from the runs that count: its medians are medians of
    // those runs, its interval holds its difference, and "significant" means the
    // interval leaves out 0.
    for table in tables {
        let metric = table["metric"].as_str().unwrap();
        let s = &table["rows"][t]["comparison"];
        assert_eq!(table["rows"][t]["point"], p["id"]);
        let counted = |side: &str, family: &str| -> Vec<f64> {
            let mut v: Vec<f64> = runs
                .iter()
                .filter(|r| !flagged.contains(&format!("run {} {family}", r["repetition"])))
                .map(|r| r[side]["figures"][metric].as_f64().unwrap())
                .collect();
            v.sort_by(f64::total_cmp);
            v
        };
        let (v4, v6) = (counted("ipv4", "IPv4"), counted("ipv6", "IPv6"));
        if v4.is_empty() || v6.is_empty() {
            // A family with no run that counts: no comparison.
            assert!(s.is_null(), "{metric} {s:#}");
            continue;
        }
        assert_eq!(
            (s["n_a"].as_u64(), s["n_b"].as_u64()),
            (Some(v4.len() as u64), Some(v6.len() as u64)),
            "{metric} {s:#}"
        );
        let n = v4.len();
        let median = if n % 2 == 1 {
            v4[n / 2]
        } else {
            (v4[n / 2 - 1] + v4[n / 2]) / 2.0
        };
        let got = s["median_a"].as_f64().unwrap();
        assert!(
            (got - median).abs() <= median.abs() * 1e-12,
            "{metric}: {got} vs {median}"
        );
        let pairs = runs
            .iter()
            .filter(|r| {
                ["IPv4", "IPv6"]
                    .iter()
                    .all(|family| !flagged.contains(&format!("run {} {family}", r["repetition"])))
            })
            .count();
        assert_eq!(s["n_pairs"].as_u64(), Some(pairs as u64), "{metric} {s:#}");
        let verdict = s["verdict"].as_str().unwrap();
        if pairs < 2 {
            continue;
        }
        tested += 1;
        assert!(
            verdict == "significant" || verdict == "not_significant",
            "{metric} {s:#}"
        );
        let (low, high) = (
            s["ci_low"].as_f64().unwrap(),
            s["ci_high"].as_f64().unwrap(),
        );
        assert!(low <= high, "{s:#}");
        assert_eq!(verdict == "significant", low > 0.0 || high < 0.0, "{s:#}");
    }
    // The game models run with one seed over both families: the same packets (the
    // same bytes wherever both sent as many).
    if t >= 7 {
        for r in runs {
            assert_eq!(r["ipv4"]["flow"]["spec"]["seed"], 2006);
            assert_eq!(r["ipv6"]["flow"]["spec"]["seed"], 2006);
            if u(r, "/ipv4/sent_packets") == u(r, "/ipv6/sent_packets") {
                assert_eq!(
                    u(r, "/ipv4/flow/sent/bytes"),
                    u(r, "/ipv6/flow/sent/bytes"),
                    "{r:#}"
                );
            }
        }
    }
    tested
}

/// `compare --dir D` then `report D`: the same verdict page, character for character,
/// from the same run directory.
#[test]
fn report_of_a_compare_directory_prints_the_same_verdicts() {
    let tmp = TempDir::new("compare-report");
    let dir = tmp.path("run");
    let compared = run(&[
        "compare".as_ref(),
        "--repeat".as_ref(),
        "3".as_ref(),
        "--sizes".as_ref(),
        "64".as_ref(),
        "--protocols".as_ref(),
        "udp,tcp".as_ref(),
        "--no-games".as_ref(),
        "--duration".as_ref(),
        "100ms".as_ref(),
        "--dir".as_ref(),
        dir.as_os_str(),
    ]);
    let page = compared.assert_success().stdout.clone();
    assert!(page.starts_with("Verdicts, plan 'compare'"), "{page}");
    assert!(
        compared
            .stderr
            .contains(&format!("every run is in {}", dir.display())),
        "{}",
        compared.stderr
    );
    let reported = run(&["report".as_ref(), dir.as_os_str()]);
    let text = &reported.assert_success().stdout;
    assert!(
        text.contains(&page),
        "report's text lacks compare's verdicts:\n--- compare\n{page}\n--- report\n{text}"
    );
    // And the JSON: report --json carries the page compare --json prints.
    let json = run(&["report".as_ref(), dir.as_os_str(), "--json".as_ref()]);
    let doc = json.assert_success().json();
    assert_eq!(doc["verdicts"]["plan"], "compare");
    assert_eq!(doc["verdicts"]["analysis"], "paired");
    // Two size tests and five VoIP codecs, three runs a family each.
    assert_eq!(doc["verdicts"]["points"].as_array().unwrap().len(), 7);
    assert_eq!(doc["runs"], 42);
}

#[test]
fn the_text_table_gives_each_row_a_verdict_and_a_summary() {
    let tmp = TempDir::new("compare-text");
    let dir = tmp.path("run");
    let out = run(&[
        "compare".as_ref(),
        "--repeat".as_ref(),
        "2".as_ref(),
        "--sizes".as_ref(),
        "64".as_ref(),
        "--protocols".as_ref(),
        "udp,tcp".as_ref(),
        "--no-voip".as_ref(),
        "--no-games".as_ref(),
        "--duration".as_ref(),
        "200ms".as_ref(),
        "--dir".as_ref(),
        dir.as_os_str(),
    ]);
    let text = &out.assert_success().stdout;
    assert!(
        text.contains("2 runs a family per point, 200 ms each, paired"),
        "{text}"
    );
    assert!(
        text.contains("false discovery rate over all 8 comparisons"),
        "{text}"
    );
    for title in ["Throughput (", "Median round trip time (", "Jitter ("] {
        assert!(text.contains(title), "{title}: {text}");
    }
    // Every data row: runs 2+2, then a verdict: ≈ or a signed difference.
    let rows: Vec<&str> = text
        .lines()
        .filter(|l| l.starts_with("udp ") || l.starts_with("tcp "))
        .collect();
    assert!(rows.len() >= 6, "{text}");
    for row in rows {
        let cells: Vec<&str> = row
            .split("  ")
            .map(str::trim)
            .filter(|c| !c.is_empty())
            .collect();
        assert_eq!(cells[1], "2+2", "{row}");
        assert!(cells[4] == "≈" || cells[4].starts_with(['+', '-']), "{row}");
    }
    assert!(text.contains("docs/compare.md"), "{text}");
}

#[test]
fn one_run_a_family_is_allowed_but_says_it_gives_no_verdicts() {
    let tmp = TempDir::new("compare-one");
    let dir = tmp.path("run");
    let out = run(&[
        "compare".as_ref(),
        "--repeat".as_ref(),
        "1".as_ref(),
        "--sizes".as_ref(),
        "64".as_ref(),
        "--protocols".as_ref(),
        "udp".as_ref(),
        "--no-voip".as_ref(),
        "--no-games".as_ref(),
        "--duration".as_ref(),
        "100ms".as_ref(),
        "--json".as_ref(),
        "--dir".as_ref(),
        dir.as_os_str(),
    ]);
    assert!(
        out.stderr
            .contains("one run a family gives medians but no verdicts"),
        "{}",
        out.stderr
    );
    let doc = out.assert_success().json();
    assert_eq!(doc["verdicts"]["tested"], 0);
    assert_eq!(doc["tables"][1]["metric"], "rtt_median");
    assert_eq!(
        doc["tables"][1]["rows"][0]["comparison"]["verdict"],
        "undefined"
    );
    let zero = run(&["compare", "--repeat", "0"]);
    assert_eq!(zero.code(), Some(2), "{}", zero.stderr);
    // A directory that holds runs already is not mixed with a second battery.
    let again = run(&["compare".as_ref(), "--dir".as_ref(), dir.as_os_str()]);
    assert_eq!(again.code(), Some(2), "{}", again.stderr);
    assert!(
        again.stderr.contains("already holds runs"),
        "{}",
        again.stderr
    );
}
