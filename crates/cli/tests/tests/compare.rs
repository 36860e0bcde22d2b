//! `dualperf compare`: every test runs several times over IPv4 and IPv6, interleaved, both
//! sides measured completely, and each test carries a verdict per metric.

use crate::support::{run, u};

#[test]
fn quick_battery_measures_both_families_five_times_for_every_test_and_gives_verdicts() {
    let out = run(&[
        "compare",
        "--quick",
        "--sizes",
        "64,1472",
        "--protocols",
        "udp",
        "--duration",
        "200ms",
        "--json",
    ]);
    let doc = out.assert_success().json();
    crate::schema::assert_valid("compare", &doc);
    assert_eq!(doc["repetitions"], 5);
    let points = doc["points"].as_array().expect("points");
    // Two size tests, D-ITG's five VoIP codecs and three game models.
    assert_eq!(points.len(), 10, "{doc:#}");
    let names: Vec<&str> = points.iter().map(|p| p["name"].as_str().unwrap()).collect();
    assert_eq!(names[..2], ["UDP 64 B", "UDP 1472 B"]);
    assert_eq!(names[2], "VoIP g711.1");
    assert_eq!(names[7..], ["game quake3", "game csa", "game csi"]);
    // What this host did to the runs: a run that fell behind its schedule in each of its
    // attempts is flagged in its test's errors and left out of the statistics. Nothing
    // else may go wrong.
    let mut tested = 0;
    for (t, p) in points.iter().enumerate() {
        let flagged: Vec<String> = p["errors"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| {
                let e = e.as_str().unwrap();
                assert!(
                    e.contains("the host fell behind")
                        && e.ends_with("(behind in each of 3 attempts)"),
                    "{p:#}"
                );
                // "run 2 IPv6: …"
                e.split(':').next().unwrap().to_owned()
            })
            .collect();
        let runs = p["runs"].as_array().unwrap();
        assert_eq!(runs.len(), 5, "{p:#}");
        for (rep, r) in runs.iter().enumerate() {
            assert_eq!(r["repetition"], rep + 1);
            // Interleaved: the family that goes first alternates by test and by pass.
            assert_eq!(r["ipv6_first"], (rep + t) % 2 == 1, "{r:#}");
            for (side, family) in [("ipv4", "IPv4"), ("ipv6", "IPv6")] {
                let sent = u(r, &format!("/{side}/sent_packets"));
                assert!(sent > 0, "{r:#}");
                assert_eq!(
                    u(r, &format!("/{side}/received_packets")),
                    sent,
                    "{side} {r:#}"
                );
                assert!(r[side]["rtt_median_ns"].as_f64().unwrap() > 0.0);
                // Flagged exactly when its last attempt sent under 90 % of its constant-
                // rate schedule; measured again only while it did.
                let attempts = u(r, &format!("/{side}/attempts"));
                let behind = match r[side]["flow"]["sent"]["planned_packets"].as_u64() {
                    Some(planned) if t < 7 => sent * 10 < planned * 9,
                    _ => false,
                };
                let name = format!("run {} {family}", rep + 1);
                assert_eq!(flagged.contains(&name), behind, "{name}: {p:#}");
                assert!((1..=3).contains(&attempts), "{r:#}");
                assert!(!behind || attempts == 3, "{r:#}");
            }
        }
        // A verdict per metric from the runs that count: its medians are medians of
        // those runs, its interval holds its difference, and "significant" means the
        // interval leaves out 0.
        for metric in ["throughput_bps", "rtt_median_ns", "jitter_ns", "loss_pct"] {
            let s = &p["stats"][metric];
            let counted = |side: &str, family: &str| -> Vec<f64> {
                let mut v: Vec<f64> = runs
                    .iter()
                    .filter(|r| !flagged.contains(&format!("run {} {family}", r["repetition"])))
                    .map(|r| r[side][metric].as_f64().unwrap())
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
                    ["IPv4", "IPv6"].iter().all(|family| {
                        !flagged.contains(&format!("run {} {family}", r["repetition"]))
                    })
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
                assert_eq!(
                    r["ipv4"]["flow"]["spec"]["seed"],
                    r["ipv6"]["flow"]["spec"]["seed"]
                );
                if u(r, "/ipv4/sent_packets") == u(r, "/ipv6/sent_packets") {
                    assert_eq!(
                        u(r, "/ipv4/flow/sent/bytes"),
                        u(r, "/ipv6/flow/sent/bytes"),
                        "{r:#}"
                    );
                }
            }
        }
    }
    // Ten tests × four metrics (on a host that kept up), all tested at one level.
    assert_eq!(doc["verdicts"]["tested"], tested);
    let level = doc["verdicts"]["level"].as_f64().unwrap();
    assert!((0.95..1.0).contains(&level));
    assert!(!doc["summary"].as_array().unwrap().is_empty());
    // The host check goes with the results.
    assert!(!doc["doctor"]["checks"].as_array().unwrap().is_empty());
    // The VoIP tests run at their codec's rate with a real RTP header.
    assert_eq!(points[2]["rate"], "100pps");
    assert_eq!(
        points[2]["runs"][0]["ipv6"]["flow"]["spec"]["rtp"]["payload_type"],
        0
    );
}

#[test]
fn the_text_table_gives_each_row_a_verdict_and_a_summary() {
    let out = run(&[
        "compare",
        "--repeat",
        "2",
        "--sizes",
        "64",
        "--protocols",
        "udp,tcp",
        "--no-voip",
        "--no-games",
        "--duration",
        "200ms",
    ]);
    let text = &out.assert_success().stdout;
    assert!(
        text.contains("2 runs a family per test, interleaved"),
        "{text}"
    );
    assert!(
        text.contains("false discovery rate over all 8 comparisons"),
        "{text}"
    );
    for title in [
        "Throughput (Mbit/s)",
        "Round-trip time, median (µs)",
        "Jitter (µs)",
    ] {
        assert!(text.contains(title), "{title}: {text}");
    }
    // Every data row: runs 2+2, then a verdict: ≈ or a signed difference.
    let rows: Vec<&str> = text
        .lines()
        .filter(|l| l.starts_with("UDP 64 B") || l.starts_with("TCP 64 B"))
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
    let out = run(&[
        "compare",
        "--repeat",
        "1",
        "--sizes",
        "64",
        "--protocols",
        "udp",
        "--no-voip",
        "--no-games",
        "--duration",
        "100ms",
        "--json",
    ]);
    assert!(
        out.stderr
            .contains("one run a family gives medians but no verdicts"),
        "{}",
        out.stderr
    );
    let doc = out.assert_success().json();
    assert_eq!(doc["verdicts"]["tested"], 0);
    assert_eq!(
        doc["points"][0]["stats"]["rtt_median_ns"]["verdict"],
        "undefined"
    );
    let zero = run(&["compare", "--repeat", "0"]);
    assert_eq!(zero.code(), Some(2), "{}", zero.stderr);
}
