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
    for (t, p) in points.iter().enumerate() {
        assert!(p["errors"].as_array().unwrap().is_empty(), "{p:#}");
        let runs = p["runs"].as_array().unwrap();
        assert_eq!(runs.len(), 5, "{p:#}");
        for (rep, r) in runs.iter().enumerate() {
            assert_eq!(r["repetition"], rep + 1);
            // Interleaved: the family that goes first alternates by test and by pass.
            assert_eq!(r["ipv6_first"], (rep + t) % 2 == 1, "{r:#}");
            for side in ["ipv4", "ipv6"] {
                let sent = u(r, &format!("/{side}/sent_packets"));
                assert!(sent > 0, "{r:#}");
                assert_eq!(
                    u(r, &format!("/{side}/received_packets")),
                    sent,
                    "{side} {r:#}"
                );
                assert!(r[side]["rtt_median_ns"].as_f64().unwrap() > 0.0);
            }
        }
        // A verdict per metric from five runs a family: its medians are medians of the
        // runs, its interval holds its difference, and "significant" means the interval
        // leaves out 0.
        for metric in ["throughput_bps", "rtt_median_ns", "jitter_ns", "loss_pct"] {
            let s = &p["stats"][metric];
            assert_eq!(
                (s["n_a"].as_u64(), s["n_b"].as_u64()),
                (Some(5), Some(5)),
                "{metric} {s:#}"
            );
            let mut v4: Vec<f64> = runs
                .iter()
                .map(|r| r["ipv4"][metric].as_f64().unwrap())
                .collect();
            v4.sort_by(f64::total_cmp);
            assert_eq!(s["median_a"].as_f64().unwrap(), v4[2], "{metric}");
            let verdict = s["verdict"].as_str().unwrap();
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
        // The game models run with one seed over both families: the same packets.
        if t >= 7 {
            for r in runs {
                assert_eq!(
                    r["ipv4"]["flow"]["spec"]["seed"],
                    r["ipv6"]["flow"]["spec"]["seed"]
                );
                assert_eq!(
                    u(r, "/ipv4/flow/sent/bytes"),
                    u(r, "/ipv6/flow/sent/bytes"),
                    "{r:#}"
                );
            }
        }
    }
    // Ten tests × four metrics, all tested at one level.
    assert_eq!(doc["verdicts"]["tested"], 40);
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
