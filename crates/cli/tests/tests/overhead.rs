//! `dualperf overhead`: the seeds' arithmetic, exactly.

use crate::support::{run, u};

#[test]
fn kharche_table_1_and_seed_000s_frames() {
    let doc = run(&["overhead", "--payload", "32,252", "--json"])
        .assert_success()
        .json();
    crate::schema::assert_valid("overhead", &doc);
    let rows = doc["rows"].as_array().unwrap();
    let row = |payload: u64, transport: &str, ip: &str| {
        rows.iter()
            .find(|r| {
                u(r, "/payload_bytes") == payload && r["transport"] == transport && r["ip"] == ip
            })
            .unwrap_or_else(|| panic!("no row {payload} {transport} {ip}"))
    };
    // Kharche & Patil, Table 1 (32 bytes of data): 55.55 %, 65.21 %, 46.67 %, 60 %.
    for (transport, ip, headers, total) in [
        ("tcp", "v4", 40.0, 72.0),
        ("tcp", "v6", 60.0, 92.0),
        ("udp", "v4", 28.0, 60.0),
        ("udp", "v6", 48.0, 80.0),
    ] {
        let pct = row(32, transport, ip)["overhead_pct"].as_f64().unwrap();
        assert_eq!(pct, headers * 100.0 / total, "{transport}/{ip}");
    }
    // Bouras et al. (H.323 study): 294-byte frames over IPv4 become 314 over IPv6.
    assert_eq!(u(row(252, "udp", "v4"), "/captured_frame_bytes"), 294);
    assert_eq!(u(row(252, "udp", "v6"), "/captured_frame_bytes"), 314);
}

#[test]
fn codec_bandwidths_are_ditgs() {
    let text = run(&["overhead", "--codecs"])
        .assert_success()
        .stdout
        .clone();
    // D-ITG's VoIP payload bit rates with RTP, no VAD: 73.6, 68.8, 8.74, 12.8, 11.09 kbit/s.
    for (codec, kbit) in [
        ("g711.1", "73.60"),
        ("g711.2", "68.80"),
        ("g723.1", "8.74"),
        ("g729.2", "12.80"),
        ("g729.3", "11.09"),
    ] {
        let line = text
            .lines()
            .find(|l| l.starts_with(codec) && l.contains(" rtp ") && l.contains(" - "))
            .unwrap_or_else(|| panic!("no {codec} rtp row in\n{text}"));
        assert!(line.contains(kbit), "{codec}: {line}");
    }
    let doc = run(&["overhead", "--codecs", "--json"])
        .assert_success()
        .json();
    crate::schema::assert_valid("overhead-codecs", &doc);
    let g711 = &doc["codecs"][0];
    assert_eq!(g711["ipv4"]["payload_bps"], 73_600.0);
    assert_eq!(g711["ipv6"]["ip_bps"], 112_000.0);
}

#[test]
fn impossible_sizes_are_usage_errors() {
    let out = run(&["overhead", "--payload", "70000"]);
    assert_eq!(out.code(), Some(2));
    assert!(
        out.stderr.contains("largest UDP payload over IPv4"),
        "{}",
        out.stderr
    );
    let out = run(&["overhead", "--mtu", "500"]);
    assert_eq!(out.code(), Some(2));
    assert!(out.stderr.contains("too small"), "{}", out.stderr);
}
