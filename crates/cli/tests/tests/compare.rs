//! `dualperf compare`: every test runs over IPv4 then IPv6 and both sides are measured completely.

use crate::support::{run, u};

#[test]
fn quick_battery_measures_both_families_for_every_test() {
    let out = run(&[
        "compare",
        "--quick",
        "--sizes",
        "64,1472",
        "--protocols",
        "udp",
        "--duration",
        "300ms",
        "--json",
    ]);
    let doc = out.assert_success().json();
    crate::schema::assert_valid("compare", &doc);
    let points = doc["points"].as_array().expect("points");
    // Two size tests, D-ITG's five VoIP codecs and three game models.
    assert_eq!(points.len(), 10, "{doc:#}");
    let names: Vec<&str> = points.iter().map(|p| p["name"].as_str().unwrap()).collect();
    assert_eq!(names[..2], ["UDP 64 B", "UDP 1472 B"]);
    assert_eq!(names[2], "VoIP g711.1");
    assert_eq!(names[7..], ["game quake3", "game csa", "game csi"]);
    // The game models run with one seed over both families: the same packets.
    for p in &points[7..] {
        assert_eq!(
            p["ipv4"]["flow"]["spec"]["seed"],
            p["ipv6"]["flow"]["spec"]["seed"]
        );
        assert_eq!(
            u(p, "/ipv4/flow/sent/bytes"),
            u(p, "/ipv6/flow/sent/bytes"),
            "{p:#}"
        );
    }
    for p in points {
        assert!(p["errors"].as_array().unwrap().is_empty(), "{p:#}");
        for side in ["ipv4", "ipv6"] {
            let sent = u(p, &format!("/{side}/sent_packets"));
            assert!(sent > 0, "{p:#}");
            assert_eq!(
                u(p, &format!("/{side}/received_packets")),
                sent,
                "{side} {p:#}"
            );
            assert!(p[side]["rtt_mean_ns"].as_f64().unwrap() > 0.0);
        }
    }
    // The VoIP tests run at their codec's rate with a real RTP header.
    assert_eq!(points[2]["rate"], "100pps");
    assert_eq!(points[2]["ipv6"]["flow"]["spec"]["rtp"]["payload_type"], 0);
}
