//! The seed studies' RTP streams, talk spurts, and bulk load, end to end on loopback.

use crate::support::{send, u, Receiver};

#[test]
fn webaudio_and_h261_streams_carry_rtp_at_their_model_rates() {
    let rx = Receiver::start(&["--json", "--sessions", "2"]);
    // WebAudio: 1250 B of audio behind a 12-byte RTP header every 50 ms.
    let out = send(
        "::1",
        rx.port,
        &["--stream", "webaudio", "--count", "10", "--json"],
    );
    out.assert_success();
    let f = &out.json()["flows"][0];
    assert_eq!(u(f, "/spec/size_bytes"), 1262);
    assert_eq!(f["spec"]["rate"], "20pps");
    assert_eq!(u(f, "/received/packets"), 10);
    assert_eq!(u(f, "/received/bytes"), 12_620);
    // The receiver found RTP headers (clock 8 kHz) in front of the probes.
    assert_eq!(u(f, "/received_rtp/packets"), 10);
    // H.261: frames of several packets, none above 1400 bytes, every one measured.
    let out = send(
        "127.0.0.1",
        rx.port,
        &[
            "--stream",
            "h261",
            "--duration",
            "1s",
            "--seed",
            "9",
            "--json",
        ],
    );
    out.assert_success();
    let f = &out.json()["flows"][0];
    let sent = u(f, "/sent/packets");
    // 15 frames of 3203 B in the mean: about 3 packets each.
    assert!((20..=100).contains(&sent), "{sent} packets");
    assert_eq!(u(f, "/received/packets"), sent);
    assert_eq!(u(f, "/received/loss/lost"), 0);
    assert!(u(f, "/received/bytes") <= 1400 * sent);
    assert_eq!(u(f, "/received_rtp/packets"), sent);
    rx.finish().finished.assert_success();
}

#[test]
fn talk_spurts_leave_silences_that_are_not_loss() {
    let rx = Receiver::start(&["--json", "--sessions", "1"]);
    // G.711.1 at 100 pkt/s for 3 s with 0.2 s spurts and 0.3 s pauses: about 40 % sent.
    let out = send(
        "::1",
        rx.port,
        &[
            "--voip",
            "g711.1",
            "--vad",
            "onoff:0.2,0.3",
            "--duration",
            "3s",
            "--seed",
            "4",
            "--json",
        ],
    );
    out.assert_success();
    let f = &out.json()["flows"][0];
    let sent = u(f, "/sent/packets");
    assert!((40..250).contains(&sent), "{sent} of 300 deadlines");
    assert_eq!(u(f, "/spec/size_bytes"), 92, "full-size packets in a spurt");
    assert_eq!(u(f, "/received/packets"), sent);
    assert_eq!(u(f, "/received/loss/lost"), 0);
    rx.finish().finished.assert_success();
    for bad in [
        &["--vad", "onoff"][..],
        &["--voip", "g711.1", "--vad", "onoff:0,1"],
        &["--voip", "g711.1", "--vad", "brady"],
        &["--stream", "h261", "--vad", "onoff"],
        &["--stream", "webaudio", "--ptime", "30ms"],
    ] {
        let out = send("::1", 9, bad);
        assert_eq!(out.code(), Some(2), "{bad:?}: {}", out.stderr);
    }
}

#[test]
fn bulk_tcp_streams_report_per_interval_and_in_sum() {
    let rx = Receiver::start(&["--json", "--sessions", "1"]);
    let out = send(
        "::1",
        rx.port,
        &[
            "--tcp",
            "--bulk",
            "--parallel",
            "2",
            "--congestion",
            "reno",
            "--duration",
            "1s",
            "--interval",
            "250ms",
            "--json",
        ],
    );
    out.assert_success();
    let j = out.json();
    let flows = j["flows"].as_array().unwrap();
    assert_eq!(flows.len(), 2);
    let mut received = 0;
    for f in flows {
        assert_eq!(u(f, "/spec/size_bytes"), 128 * 1024);
        assert_eq!(f["spec"]["unpaced"], true);
        let sent = u(f, "/sent/packets");
        assert!(sent > 10, "{sent} messages in 1 s");
        // TCP loses nothing: every message sent is received and counted.
        assert_eq!(u(f, "/received/packets"), sent);
        assert_eq!(u(f, "/received/bytes"), u(f, "/sent/bytes"));
        let series = f["intervals"].as_array().unwrap();
        assert!((4..=6).contains(&series.len()), "{} windows", series.len());
        let in_series: u64 = series.iter().map(|i| u(i, "/bytes")).sum();
        assert_eq!(in_series, u(f, "/received/bytes"));
        received += u(f, "/received/bytes");
    }
    assert_eq!(u(&j, "/sum/flows"), 2);
    assert_eq!(u(&j, "/sum/received/bytes"), received);
    assert!(j["sum"]["received"]["bitrate_bps"].as_f64().unwrap() > 0.0);
    rx.finish().finished.assert_success();
}

#[test]
fn bulk_refuses_what_it_cannot_do() {
    for (args, want) in [
        (&["--bulk"][..], "needs --rate"),
        (&["--tcp", "--bulk", "--meter", "rtt"], "one way"),
        (
            &["--tcp", "--bulk", "--voip", "g711.1"],
            "cannot be used with",
        ),
        (
            &["--bulk", "--rate", "1mbit", "--congestion", "bbr"],
            "applies to TCP",
        ),
        (
            &["--tcp", "--bulk", "--on", "exp:10", "--off", "exp:90"],
            "no deadlines to gate",
        ),
        (&["--on", "const:0", "--off", "const:10"], "always zero"),
        (&["--voip", "g711.1", "--vad", "onoff:1e306,1"], "--vad"),
        (&["--interval", "1ms"], "--interval"),
        (&["--interval", "10ms", "--duration", "1h"], "windows"),
        (
            &["--flows", "/dev/null", "--dscp", "EF"],
            "write them on the file",
        ),
    ] {
        let out = send("::1", 9, args);
        assert_eq!(out.code(), Some(2), "{args:?}: {}", out.stderr);
        assert!(out.stderr.contains(want), "{args:?}: {}", out.stderr);
    }
    // An algorithm the kernel does not have is a clear failure, not a silent default.
    let rx = Receiver::start(&["--json"]);
    let out = send(
        "::1",
        rx.port,
        &[
            "--tcp",
            "--bulk",
            "--congestion",
            "nosuch",
            "--duration",
            "1s",
        ],
    );
    assert_eq!(out.code(), Some(1), "{}", out.stderr);
    assert!(
        out.stderr.contains("congestion control nosuch"),
        "{}",
        out.stderr
    );
    rx.interrupt_and_finish();
}
