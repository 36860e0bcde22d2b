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
        assert!(sent > 0, "{f:#}");
        // TCP loses nothing: every message sent is received and counted.
        assert_eq!(u(f, "/received/packets"), sent);
        assert_eq!(u(f, "/received/bytes"), u(f, "/sent/bytes"));
        // 250 ms windows from the first arrival to the last, as the receiver saw them (a
        // busy host may read the last bytes well after the sender's second is up), each
        // starting where the one before ended, and every byte in one of them.
        let series = f["intervals"].as_array().unwrap();
        let span = f["received"]["duration_ns"].as_u64().unwrap_or(0);
        assert_eq!(series.len() as u64, span / 250_000_000 + 1, "{f:#}");
        let first = u(f, "/received/first_rx_ns");
        for (k, i) in series.iter().enumerate() {
            assert_eq!(u(i, "/start_ns"), first + k as u64 * 250_000_000, "{i:#}");
        }
        let in_series: u64 = series.iter().map(|i| u(i, "/bytes")).sum();
        assert_eq!(in_series, u(f, "/received/bytes"));
        received += u(f, "/received/bytes");
    }
    assert_eq!(u(&j, "/sum/flows"), 2);
    assert_eq!(u(&j, "/sum/received/bytes"), received);
    assert!(j["sum"]["received"]["bitrate_bps"].as_f64().unwrap() > 0.0);
    rx.finish().finished.assert_success();
}

/// `TCP_INFO` (Linux `struct tcp_info`) of a bulk TCP flow, per `--interval` window and
/// over the flow: present, typed as the schema says, the windows' retransmits adding up
/// to the total (iperf3's Retr), the summary's extremes bounding the samples.
#[test]
fn bulk_tcp_reports_tcp_info_per_interval_and_in_sum() {
    let rx = Receiver::start(&["--json", "--sessions", "2"]);
    let out = send(
        "127.0.0.1",
        rx.port,
        &[
            "--tcp",
            "--bulk",
            "--duration",
            "1s",
            "--interval",
            "200ms",
            "--json",
        ],
    );
    out.assert_success();
    let j = out.json();
    crate::schema::assert_valid("send", &j);
    let tcp = &j["flows"][0]["tcp"];
    let sum = &tcp["summary"];
    for key in [
        "samples",
        "retransmits",
        "mss_bytes",
        "max_cwnd_bytes",
        "cwnd_bytes",
        "srtt_min_ns",
        "srtt_max_ns",
        "rttvar_ns",
        "min_rtt_ns",
    ] {
        assert!(sum[key].is_u64(), "{key}: {tcp:#}");
    }
    assert!(sum["srtt_mean_ns"].is_f64(), "{tcp:#}");
    // Nullable where the kernel may have no value yet; the keys are always there.
    for key in ["bytes_retrans", "pacing_rate_bps", "delivery_rate_bps"] {
        assert!(sum.get(key).is_some(), "{key}: {tcp:#}");
    }
    assert!(
        u(sum, "/mss_bytes") > 0 && u(sum, "/cwnd_bytes") > 0,
        "{tcp:#}"
    );
    let series = tcp["intervals"].as_array().unwrap();
    // Five 200 ms windows, and the last sample after the flow ended.
    assert!((5..=7).contains(&series.len()), "{} samples", series.len());
    assert!(u(sum, "/samples") >= series.len() as u64, "{tcp:#}");
    let retransmits: u64 = series.iter().map(|s| u(s, "/retransmits")).sum();
    assert_eq!(retransmits, u(sum, "/retransmits"), "{tcp:#}");
    let mut at = 0;
    for s in series {
        assert!(u(s, "/at_ns") >= at, "in time order: {tcp:#}");
        at = u(s, "/at_ns");
        assert!(u(s, "/cwnd_bytes") <= u(sum, "/max_cwnd_bytes"), "{tcp:#}");
        let srtt = u(s, "/srtt_ns");
        assert!(
            (u(sum, "/srtt_min_ns")..=u(sum, "/srtt_max_ns")).contains(&srtt),
            "{tcp:#}"
        );
    }
    // Without --interval there is no series; a UDP flow has no `tcp` at all.
    let out = send(
        "::1",
        rx.port,
        &["--tcp", "--bulk", "--count", "20", "--json"],
    );
    out.assert_success();
    let f = &out.json()["flows"][0];
    assert!(f["tcp"]["intervals"].is_null(), "{f:#}");
    assert!(u(f, "/tcp/summary/samples") >= 1, "{f:#}");
    rx.finish().finished.assert_success();
}

#[test]
fn bulk_tcp_window_kernel_pacing_and_header_fields() {
    let rx = Receiver::start(&["--json", "--sessions", "5"]);
    let bulk = |extra: &[&str]| {
        let mut args = vec!["--tcp", "--bulk", "--count", "20", "--json"];
        args.extend_from_slice(extra);
        let out = send("::1", rx.port, &args);
        out.assert_success();
        let j = out.json();
        crate::schema::assert_valid("send", &j);
        j["flows"][0].clone()
    };
    // -w: the send buffer granted is what was asked for, doubled as Linux keeps it.
    for (window, granted) in [("256KiB", 512 * 1024), ("1MiB", 2 * 1024 * 1024)] {
        let f = bulk(&["-w", window]);
        assert_eq!(u(&f, "/tcp/summary/send_buffer_bytes"), granted, "{f:#}");
        assert_eq!(u(&f, "/spec/window_bytes"), granted / 2, "{f:#}");
    }
    // A bulk flow with a rate is paced by the kernel at it: 100 Mbit/s of 128 KiB
    // messages and their 4-byte prefixes, in bytes per second, rounded up, as bits.
    let f = bulk(&["--rate", "100mbit"]);
    let pps = 100e6 / (131_072.0 * 8.0);
    let cap = (pps * 131_076.0_f64).ceil() as u64 * 8;
    assert_eq!(u(&f, "/tcp/summary/max_pacing_rate_bps"), cap, "{f:#}");
    // Unpaced, and unmarked: no cap, and no per-segment header fields at the receiver.
    let f = bulk(&[]);
    assert!(
        f["tcp"]["summary"]["max_pacing_rate_bps"].is_null(),
        "{f:#}"
    );
    assert_eq!(u(&f, "/received/marking/tos_unknown"), 20, "{f:#}");
    // Marked: the receiver reads the fields, as for any measured flow.
    let f = bulk(&["--dscp", "EF"]);
    assert_eq!(u(&f, "/received/marking/dscp_seen/46"), 20, "{f:#}");
    assert_eq!(u(&f, "/received/marking/tos_unknown"), 0, "{f:#}");
    rx.finish().finished.assert_success();
}

#[test]
fn bulk_refuses_what_it_cannot_do() {
    for (args, want) in [
        (&["--tcp", "--bulk", "--meter", "rtt"][..], "one way"),
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
