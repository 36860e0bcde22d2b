//! iperf3's throughput options: `send`'s `--cport`, `-O/--omit`, `-Z/--zerocopy` and
//! `recv --skip-rx-copy` (issue 22), end to end on loopback.

use std::net::{TcpListener, UdpSocket};
use std::process::Command;

use crate::support::{send, spawn_send, u, Receiver};

/// A port with the next one free for TCP and UDP on both families, as far as binding
/// them now tells (the ports are released before the test uses them).
fn free_port_pair() -> u16 {
    for _ in 0..50 {
        let Ok(l) = TcpListener::bind("[::]:0") else {
            continue;
        };
        let p = l.local_addr().unwrap().port();
        if p == u16::MAX {
            continue;
        }
        let holds = (
            TcpListener::bind(("::", p + 1)),
            UdpSocket::bind(("::", p)),
            UdpSocket::bind(("::", p + 1)),
        );
        if let (Ok(_), Ok(_), Ok(_)) = holds {
            return p;
        }
    }
    panic!("no two free ports in a row");
}

/// `ss` lines of sockets of `proto` (`-t`, `-u`) in any state, local port `port`.
fn ss_with_local_port(proto: &str, port: u16) -> Vec<String> {
    let out = Command::new("ss")
        .args(["-nH", "-a", proto])
        .output()
        .expect("ss runs");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| {
            l.split_whitespace()
                .nth(3)
                .is_some_and(|local| local.ends_with(&format!(":{port}")))
        })
        .map(str::to_owned)
        .collect()
}

#[test]
fn cport_is_the_source_port_the_receiver_sees_and_a_taken_port_is_named() {
    let rx = Receiver::start(&["--json"]);
    // TCP, two parallel copies: PORT and PORT+1, each connected to the receiver. The
    // sender closes first, so its side of each connection is left in TIME_WAIT, where
    // `ss` still shows both ends.
    let p = free_port_pair();
    let cport = p.to_string();
    let out = send(
        "127.0.0.1",
        rx.port,
        &[
            "--tcp", "--bulk", "--count", "50", "-P", "2", "--cport", &cport, "--json",
        ],
    );
    out.assert_success();
    let j = out.json();
    crate::schema::assert_valid("send", &j);
    for (k, f) in j["flows"].as_array().unwrap().iter().enumerate() {
        let port = p + k as u16;
        assert_eq!(u(f, "/spec/cport"), u64::from(port), "{f:#}");
        assert_eq!(u(f, "/received/packets"), 50, "{f:#}");
        let lines = ss_with_local_port("-t", port);
        let peer = format!("127.0.0.1:{}", rx.port);
        assert!(
            lines.iter().any(|l| l.contains(&peer)),
            "no TCP socket from port {port} to {peer}: {lines:?}"
        );
    }
    // UDP: a socket of its own on PORT, seen connected to the receiver while it runs
    // (the receiver also takes a flow's datagrams only from the port it announced).
    let p = free_port_pair();
    let cport = p.to_string();
    let mut run = spawn_send(
        "::1",
        rx.port,
        &[
            "--rate",
            "200pps",
            "--duration",
            "2s",
            "--cport",
            &cport,
            "--json",
        ],
    );
    let peer = format!("[::1]:{}", rx.port);
    let mut seen = Vec::new();
    while run.is_running() && seen.is_empty() {
        seen = ss_with_local_port("-u", p)
            .into_iter()
            .filter(|l| l.contains(&peer))
            .collect();
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let done = run.finish();
    done.assert_success();
    assert!(!seen.is_empty(), "no UDP socket from port {p} to {peer}");
    let f = &done.json()["flows"][0];
    assert_eq!(u(f, "/spec/cport"), u64::from(p), "{f:#}");
    assert_eq!(u(f, "/received/packets"), u(f, "/sent/packets"), "{f:#}");
    // A port in use: the error names the flow and the port, for both transports.
    let p = free_port_pair();
    let _tcp_holder = TcpListener::bind(("0.0.0.0", p)).unwrap();
    let _udp_holder = UdpSocket::bind(("0.0.0.0", p)).unwrap();
    let cport = p.to_string();
    for proto in ["--tcp", "--udp"] {
        let out = send(
            "127.0.0.1",
            rx.port,
            &[proto, "--count", "5", "--cport", &cport, "--label", "mine"],
        );
        assert!(!out.status.success(), "{proto}: {}", out.stdout);
        let want = format!("source port {p} (--cport) is in use");
        assert!(
            out.stderr.contains(&want) && out.stderr.contains("(mine)"),
            "{proto}: {}",
            out.stderr
        );
    }
    // The copies' ports must fit in 16 bits.
    let out = send(
        "127.0.0.1",
        rx.port,
        &["--tcp", "-P", "3", "--cport", "65534", "--count", "1"],
    );
    assert!(
        !out.status.success() && out.stderr.contains("--cport 65534 for 3 flows"),
        "{}",
        out.stderr
    );
    drop(rx);
}

#[test]
fn omit_leaves_the_warm_up_out_of_both_sides_figures_and_loses_nothing() {
    let rx = Receiver::start(&["--json"]);
    for (dest, proto) in [("127.0.0.1", "--udp"), ("::1", "--tcp")] {
        // 2 s at 500 pkt/s, the first second omitted: about half the packets counted.
        let out = send(
            dest,
            rx.port,
            &[
                proto,
                "--rate",
                "500pps",
                "--size",
                "200",
                "--duration",
                "2s",
                "-O",
                "1s",
                "--interval",
                "500ms",
                "--json",
            ],
        );
        out.assert_success();
        let j = out.json();
        crate::schema::assert_valid("send", &j);
        let f = &j["flows"][0];
        assert_eq!(u(f, "/spec/omit_ns"), 1_000_000_000, "{f:#}");
        let counted = u(f, "/sent/packets");
        let omitted = u(f, "/sent/omitted_packets");
        let total = counted + omitted;
        assert!(
            (300..=700).contains(&(counted * 1000 / total)),
            "{proto}: {counted} of {total} counted: {f:#}"
        );
        assert_eq!(u(f, "/sent/bytes"), counted * 200, "{f:#}");
        assert_eq!(u(f, "/sent/omitted_bytes"), omitted * 200, "{f:#}");
        // The receiver omitted the same packets, counted the rest, and lost none.
        assert_eq!(u(f, "/received_omitted/omitted_packets"), omitted, "{f:#}");
        assert_eq!(
            u(f, "/received_omitted/omitted_bytes"),
            omitted * 200,
            "{f:#}"
        );
        assert_eq!(u(f, "/received_omitted/counted_from_seq"), omitted, "{f:#}");
        assert_eq!(u(f, "/received/packets"), counted, "{f:#}");
        assert_eq!(u(f, "/received/loss/lost"), 0, "{f:#}");
        assert_eq!(u(f, "/received/loss/expected"), counted, "{f:#}");
        // The series covers the counted span only.
        let series = f["intervals"].as_array().unwrap();
        let in_series: u64 = series.iter().map(|w| u(w, "/packets")).sum();
        assert_eq!(in_series, counted, "{f:#}");
    }
    // Without -O none of it is there.
    let out = send("::1", rx.port, &["--count", "20", "--json"]);
    out.assert_success();
    let f = &out.json()["flows"][0];
    for key in [
        "/spec/omit_ns",
        "/sent/omitted_packets",
        "/received_omitted",
    ] {
        assert!(f.pointer(key).is_none(), "{key}: {f:#}");
    }
    // -O as long as the flow leaves nothing to count.
    let out = send("::1", rx.port, &["--duration", "1s", "-O", "1s"]);
    assert!(
        !out.status.success() && out.stderr.contains("--omit"),
        "{}",
        out.stderr
    );
    drop(rx);
}

#[test]
fn zerocopy_sends_complete_and_every_message_arrives_intact() {
    let rx = Receiver::start(&["--json"]);
    for dest in ["127.0.0.1", "::1"] {
        // 4 MiB of 64 KiB messages; then unpaced bulk for a moment.
        for extra in [
            &["--count", "64", "--size", "64KiB"][..],
            &["--duration", "500ms"],
        ] {
            let mut args = vec!["--tcp", "--bulk", "-Z", "--json"];
            args.extend_from_slice(extra);
            let out = send(dest, rx.port, &args);
            out.assert_success();
            let j = out.json();
            crate::schema::assert_valid("send", &j);
            let f = &j["flows"][0];
            assert_eq!(f["spec"]["zerocopy"], true, "{f:#}");
            // Most writes went out zero-copy (a copy only when the pool was all in flight).
            let sends = u(f, "/zerocopy/sends");
            assert!(sends > u(f, "/zerocopy/fallback_sends"), "{f:#}");
            // Every send completed before the flow's buffers were let go; loopback
            // copies them all after all (the receiving socket takes the pages).
            assert_eq!(u(f, "/zerocopy/completions"), sends, "{f:#}");
            assert_eq!(u(f, "/zerocopy/copied"), sends, "{f:#}");
            assert!(u(f, "/zerocopy/pool_buffers") >= 1, "{f:#}");
            // No buffer was rewritten under the kernel: every message arrived whole.
            let sent = u(f, "/sent/packets");
            assert_eq!(u(f, "/received/packets"), sent, "{f:#}");
            assert_eq!(u(f, "/received/loss/lost"), 0, "{f:#}");
            assert_eq!(u(f, "/malformed_at_receiver"), 0, "{f:#}");
        }
    }
    // Without -Z there is no `zerocopy`; -Z is for TCP bulk only.
    let out = send(
        "::1",
        rx.port,
        &["--tcp", "--bulk", "--count", "4", "--json"],
    );
    out.assert_success();
    assert!(out.json()["flows"][0].get("zerocopy").is_none());
    for bad in [&["-Z"][..], &["--tcp", "-Z"], &["--bulk", "-Z"]] {
        let mut args = bad.to_vec();
        args.extend(["--count", "4"]);
        let out = send("::1", rx.port, &args);
        assert!(
            !out.status.success() && out.stderr.contains("--zerocopy applies to TCP bulk"),
            "{bad:?}: {}",
            out.stderr
        );
    }
    drop(rx);
}

/// `recv --skip-rx-copy` takes only each datagram's head out of the kernel: every
/// datagram is still counted and measured at its full size, a round-trip flow's echoes go
/// back as long as its probes came, and the counters say how many were taken by their
/// head (a datagram shorter than the head is taken whole).
#[test]
fn skip_rx_copy_takes_heads_only_and_keeps_every_size_and_echo() {
    for dest in ["127.0.0.1", "::1"] {
        let rx = Receiver::start(&["--json", "--sessions", "2", "--skip-rx-copy"]);
        // 1000-byte round-trip probes: longer than the 256-byte head.
        let out = send(
            dest,
            rx.port,
            &[
                "--udp", "--rate", "2000pps", "--size", "1000", "--count", "400", "--meter", "rtt",
                "--json",
            ],
        );
        out.assert_success();
        let j = out.json();
        crate::schema::assert_valid("send", &j);
        let f = &j["flows"][0];
        assert_eq!(u(f, "/received/packets"), 400, "{f:#}");
        assert_eq!(u(f, "/received/bytes"), 400 * 1000, "{f:#}");
        assert_eq!(u(f, "/received/loss/lost"), 0, "{f:#}");
        assert_eq!(u(f, "/malformed_at_receiver"), 0, "{f:#}");
        assert_eq!(u(f, "/rtt/packets"), 400, "{f:#}");
        assert_eq!(u(f, "/rtt/bytes"), 400 * 1000, "{f:#}");
        // 200-byte one-way probes: shorter than the head, copied whole.
        let out = send(
            dest,
            rx.port,
            &[
                "--udp", "--rate", "2000pps", "--size", "200", "--count", "300", "--json",
            ],
        );
        out.assert_success();
        let f = &out.json()["flows"][0];
        assert_eq!(u(f, "/received/packets"), 300, "{f:#}");
        assert_eq!(u(f, "/received/bytes"), 300 * 200, "{f:#}");
        let recv = rx.finish();
        recv.finished.assert_success();
        crate::schema::assert_valid(
            "recv",
            &serde_json::json!({"type": "counters", "data": recv.counters}),
        );
        assert_eq!(u(&recv.counters, "/datagrams"), 700, "{}", recv.counters);
        assert_eq!(
            u(&recv.counters, "/head_only_datagrams"),
            400,
            "{}",
            recv.counters
        );
        assert_eq!(
            u(&recv.counters, "/malformed_datagrams"),
            0,
            "{}",
            recv.counters
        );
        assert_eq!(u(&recv.counters, "/gro_buffers"), 0, "{}", recv.counters);
    }
}

/// An iperf3 user writes `--skip-rx-copy` on the sending side (iperf3's client passes it
/// to its server): refused with the receiver's option named.
#[test]
fn skip_rx_copy_on_the_sender_names_the_receivers_option() {
    let out = crate::support::run(&["send", "::1", "--skip-rx-copy"]);
    assert_eq!(out.status.code(), Some(2), "{}", out.stderr);
    assert!(
        out.stderr.contains("dualperf recv --skip-rx-copy"),
        "{}",
        out.stderr
    );
}
