//! Application presets: D-ITG's VoIP codec models set the rate and payload size exactly.

use crate::support::{send, u, Receiver};

/// (codec, header, vad, payload bytes, pkt/s): D-ITG's table (reference/peer-tools.md §3.2).
const CASES: [(&str, &str, bool, u64, &str); 4] = [
    ("g711.1", "rtp", false, 92, "100pps"),
    ("g729.2", "crtp", true, 16, "50pps"),
    ("g723.1", "rtp", true, 31, "26pps"),
    ("G.729.3", "none", false, 30, "33pps"),
];

#[test]
fn voip_presets_send_ditg_payload_sizes_at_ditg_rates() {
    for (codec, header, vad, size, rate) in CASES {
        let rx = Receiver::start(&["--json", "--sessions", "1"]);
        let mut args = vec![
            "--voip",
            codec,
            "--voip-header",
            header,
            "--count",
            "20",
            "--json",
        ];
        if vad {
            args.extend(["--vad", "ditg"]);
        }
        let out = send("::1", rx.port, &args);
        out.assert_success();
        let f = &out.json()["flows"][0];
        assert_eq!(u(f, "/spec/size_bytes"), size, "{codec} {header} vad={vad}");
        assert_eq!(f["spec"]["rate"], rate, "{codec}");
        assert_eq!(u(f, "/received/packets"), 20);
        assert_eq!(u(f, "/received/bytes"), 20 * size);
        rx.finish().finished.assert_success();
    }
}

#[test]
fn voip_preset_rejects_an_explicit_rate_or_tcp() {
    for extra in [["--rate", "10pps"], ["--size", "100"]] {
        let mut args = vec!["--voip", "g711.1"];
        args.extend(extra);
        let out = send("::1", 9, &args);
        assert_eq!(out.code(), Some(2), "stderr: {}", out.stderr);
    }
    let out = send("::1", 9, &["--voip", "g711.1", "--tcp"]);
    assert_eq!(out.code(), Some(2), "stderr: {}", out.stderr);
    let out = send("::1", 9, &["--voip", "g722"]);
    assert!(
        out.stderr.contains("unknown codec"),
        "stderr: {}",
        out.stderr
    );
}

/// A VoIP flow "with RTP" carries a real RTP header before the probe: the receiver finds
/// the probe behind it (every packet measured) and so does the sender in the echoes.
#[test]
fn voip_rtp_flows_put_the_probe_behind_a_real_rtp_header() {
    let rx = Receiver::start(&["--json", "--sessions", "1"]);
    let out = send(
        "127.0.0.1",
        rx.port,
        &[
            "--voip", "g711.2", "--count", "50", "--meter", "rtt", "--json",
        ],
    );
    out.assert_success();
    let f = &out.json()["flows"][0];
    assert_eq!(f["spec"]["rtp"]["payload_type"], 0, "G.711 is PCMU");
    assert_eq!(u(f, "/spec/rtp/clock_rate_hz"), 8000);
    assert_eq!(u(f, "/received/packets"), 50);
    assert_eq!(u(f, "/received/bytes"), 50 * 172);
    assert_eq!(u(f, "/rtt/packets"), 50);
    assert_eq!(u(f, "/malformed_at_receiver"), 0);
    // The receiver read every RTP timestamp for the RFC 3550 jitter RTP tools report.
    assert_eq!(u(f, "/received_rtp/packets"), 50);
    assert!(f["received_rtp"]["mean_ns"].as_f64().unwrap() >= 0.0);
    let recv = rx.finish();
    assert_eq!(u(&recv.counters, "/malformed_datagrams"), 0);
}

/// Sizes from a distribution: `values:` cycles in order, so the bytes are exact.
#[test]
fn idt_and_size_distributions_drive_the_flow() {
    let rx = Receiver::start(&["--json", "--sessions", "1"]);
    let out = send(
        "127.0.0.1",
        rx.port,
        &[
            "--idt",
            "const:2",
            "--size-dist",
            "values:20,40,60",
            "--count",
            "30",
            "--json",
        ],
    );
    out.assert_success();
    let f = &out.json()["flows"][0];
    assert_eq!(u(f, "/received/packets"), 30);
    assert_eq!(u(f, "/received/bytes"), 10 * (20 + 40 + 60));
    assert_eq!(f["sent"]["requested_pps"], 500.0);
    rx.finish().finished.assert_success();
}

/// D-ITG's application models run with a recorded seed, and the same seed replays the
/// same traffic.
#[test]
fn app_models_replay_with_their_seed() {
    let rx = Receiver::start(&["--json", "--sessions", "3"]);
    let run = |app: &str, count: &str, extra: &[&str]| {
        let mut args = vec!["--app", app, "--count", count, "--seed", "42", "--json"];
        args.extend_from_slice(extra);
        let out = send("::1", rx.port, &args);
        out.assert_success();
        out.json()["flows"][0].clone()
    };
    let a = run("quake3", "60", &[]);
    let b = run("quake3", "60", &[]);
    assert_eq!(u(&a, "/spec/seed"), 42);
    assert_eq!(u(&a, "/received/packets"), 60);
    assert_eq!(
        u(&a, "/received/bytes"),
        u(&b, "/received/bytes"),
        "same seed, same sizes"
    );
    let dns = run("dns", "2", &["--tcp"]);
    assert_eq!(dns["spec"]["protocol"], "tcp");
    let size = u(&dns, "/received/bytes") / 2;
    assert!((100..320).contains(&size), "DNS sizes are 100..319: {size}");
    rx.finish().finished.assert_success();
}

#[test]
fn bad_models_are_usage_errors() {
    for args in [
        &["--idt", "exp:-1"][..],
        &["--idt", "zipf:1"],
        &["--app", "quake3", "--tcp"],
        &["--app", "csa", "--rate", "10pps"],
    ] {
        let out = send("::1", 9, args);
        assert_eq!(out.code(), Some(2), "{args:?}: {}", out.stderr);
    }
}
