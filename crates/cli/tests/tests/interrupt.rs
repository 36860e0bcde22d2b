//! Ctrl-C (SIGINT) stops `recv` and `send` cleanly and keeps what was measured: summaries printed, log flushed, exit 0.

use std::time::Duration;

use crate::support::{path_str, run, send, spawn_send, u, Receiver, TempDir};

#[test]
fn ctrl_c_on_recv_prints_the_counters_and_leaves_a_complete_log() {
    let dir = TempDir::new("interrupt-recv");
    let log = dir.path("recv.dplog");
    let rx = Receiver::start(&["--log", path_str(&log), "--json"]);
    let out = send(
        "::1",
        rx.port,
        &[
            "--rate", "1000pps", "--size", "64", "--count", "300", "--json",
        ],
    );
    out.assert_success();
    assert_eq!(u(&out.json(), "/flows/0/received/packets"), 300);

    let recv = rx.interrupt_and_finish();
    assert_eq!(
        recv.finished.code(),
        Some(0),
        "stderr: {}",
        recv.finished.stderr
    );
    assert!(
        recv.finished.stderr.contains("interrupted"),
        "stderr: {}",
        recv.finished.stderr
    );
    assert_eq!(recv.flows.len(), 1);
    assert_eq!(u(&recv.flows[0], "/summary/packets"), 300);
    assert_eq!(u(&recv.counters, "/datagrams"), 300);

    let decoded = run(&["decode", path_str(&log), "--json"]);
    let doc = decoded.assert_success().json();
    assert!(
        decoded.stderr.is_empty(),
        "a clean log has no partial record: {}",
        decoded.stderr
    );
    assert_eq!(u(&doc, "/summary/total/packets"), 300);
    assert_eq!(u(&doc, "/summary/flows/0/loss/sent"), 300);
    assert_eq!(u(&doc, "/summary/flows/0/loss/lost"), 0);
}

#[test]
fn ctrl_c_on_recv_mid_flow_keeps_the_packets_received_so_far() {
    let dir = TempDir::new("interrupt-recv-mid");
    let log = dir.path("recv.dplog");
    let rx = Receiver::start(&["--log", path_str(&log), "--json"]);
    let sender = spawn_send(
        "127.0.0.1",
        rx.port,
        &[
            "--rate",
            "200pps",
            "--size",
            "64",
            "--duration",
            "30s",
            "--json",
        ],
    );
    // Let some packets arrive. Only pacing: nothing below depends on how many.
    std::thread::sleep(Duration::from_secs(1));
    let recv = rx.interrupt_and_finish();
    assert_eq!(
        recv.finished.code(),
        Some(0),
        "stderr: {}",
        recv.finished.stderr
    );
    assert_eq!(recv.flows.len(), 1);
    let got = u(&recv.flows[0], "/summary/packets");
    assert!(got > 0);
    // Whatever the receiver reported is exactly what its log holds.
    let doc = run(&["decode", path_str(&log), "--json"])
        .assert_success()
        .json();
    assert_eq!(u(&doc, "/summary/total/packets"), got);
    // The sender loses its receiver; it must not hang. Its exit status is not checked.
    sender.interrupt();
    let _ = sender.finish();
}

#[test]
fn ctrl_c_on_send_stops_the_flow_and_both_ends_agree_on_the_count() {
    let rx = Receiver::start(&["--json", "--sessions", "1"]);
    let mut sender = spawn_send(
        "::1",
        rx.port,
        &[
            "--udp",
            "--rate",
            "500pps",
            "--size",
            "64",
            "--duration",
            "30s",
            "--json",
        ],
    );
    std::thread::sleep(Duration::from_secs(1));
    assert!(
        sender.is_running(),
        "a 30 s flow is still running after 1 s"
    );
    sender.interrupt();
    let out = sender.finish();
    assert_eq!(out.code(), Some(0), "stderr: {}", out.stderr);
    assert!(out.stderr.contains("interrupted"), "stderr: {}", out.stderr);
    let report = out.json();
    assert_eq!(report["interrupted"], true);
    let f = &report["flows"][0];
    let sent = u(f, "/sent/packets");
    assert!(sent > 0, "something was sent before the interrupt");
    assert_eq!(u(f, "/received/packets"), sent);
    assert_eq!(u(f, "/received/loss/sent"), sent);
    assert_eq!(u(f, "/received/loss/lost"), 0);

    let recv = rx.finish();
    recv.finished.assert_success();
    assert_eq!(u(&recv.flows[0], "/summary/packets"), sent);
    assert_eq!(u(&recv.flows[0], "/sent_packets"), sent);
    assert_eq!(u(&recv.counters, "/datagrams"), sent);
}

#[test]
fn ctrl_c_on_a_tcp_round_trip_send_reports_every_echo_of_what_was_sent() {
    let rx = Receiver::start(&["--json", "--sessions", "1"]);
    let sender = spawn_send(
        "127.0.0.1",
        rx.port,
        &[
            "--tcp",
            "--meter",
            "rtt",
            "--rate",
            "500pps",
            "--size",
            "64",
            "--duration",
            "30s",
            "--json",
        ],
    );
    std::thread::sleep(Duration::from_secs(1));
    sender.interrupt();
    let out = sender.finish();
    assert_eq!(out.code(), Some(0), "stderr: {}", out.stderr);
    let f = &out.json()["flows"][0];
    let sent = u(f, "/sent/packets");
    assert!(sent > 0);
    assert_eq!(u(f, "/received/packets"), sent);
    assert_eq!(u(f, "/rtt/packets"), sent);
    rx.finish().finished.assert_success();
}

/// Regression (was: main.rs `is_broken_pipe`): when the receiver goes away during a TCP flow,
/// the next write to the data socket fails with EPIPE and `main` mistakes it for a
/// closed stdout (`dualperf send | head`), exiting 0 with no report and no error.
#[test]
fn send_fails_loudly_when_the_receiver_goes_away_mid_tcp_flow() {
    let rx = Receiver::start(&["--json"]);
    let sender = spawn_send(
        "127.0.0.1",
        rx.port,
        &[
            "--tcp",
            "--rate",
            "200pps",
            "--size",
            "64",
            "--duration",
            "30s",
            "--json",
        ],
    );
    std::thread::sleep(Duration::from_secs(1));
    let recv = rx.interrupt_and_finish();
    assert_eq!(recv.finished.code(), Some(0));
    let out = sender.finish();
    assert_eq!(
        out.code(),
        Some(1),
        "the send cannot complete without its receiver; stdout: {:?} stderr: {:?}",
        out.stdout,
        out.stderr
    );
    assert!(
        out.stderr.contains("dualperf: error"),
        "stderr: {}",
        out.stderr
    );
}

/// A receiver killed outright (SIGKILL: no chance to end its flows) leaves a log whose
/// records reached the disk as they arrived: `decode` reads it up to the cut, names the
/// flow it cut short and counts nothing after the cut as lost. The sender, whose
/// receiver died first, still reports what it sent.
#[test]
fn a_receiver_killed_outright_leaves_a_log_that_decodes_without_false_loss() {
    receiver_killed_outright("interrupt-recv-kill", "recv.dplog");
}

/// The same with a zstd-compressed log: every flush ends a zstd block, so the stream
/// cut by the kill still reads up to its last flush.
#[test]
fn a_receiver_killed_outright_leaves_a_compressed_log_that_decodes_without_false_loss() {
    let doc = receiver_killed_outright("interrupt-recv-kill-zst", "recv.dplog.zst");
    assert_eq!(doc["log_end"]["compression"], "zstd");
}

fn receiver_killed_outright(dir_name: &str, log_name: &str) -> serde_json::Value {
    let dir = TempDir::new(dir_name);
    let log = dir.path(log_name);
    let rx = Receiver::start(&["--log", path_str(&log), "--json"]);
    let sender = spawn_send(
        "127.0.0.1",
        rx.port,
        &[
            "--rate",
            "2000pps",
            "--size",
            "64",
            "--duration",
            "30s",
            "--json",
        ],
    );
    // Let packets arrive and the writer flush (it flushes when idle for 100 ms, and
    // its buffer as it fills). Only pacing: nothing below depends on how many.
    std::thread::sleep(Duration::from_secs(2));
    rx.proc.kill9();
    std::thread::sleep(Duration::from_millis(300));
    let out = sender.finish();
    let report = out.json();
    assert!(
        u(&report["flows"][0], "/sent/packets") > 0,
        "{}",
        out.stderr
    );

    let decoded = run(&["decode", path_str(&log), "--json"]);
    let doc = decoded.assert_success().json();
    assert!(
        decoded.stderr.contains("Log cut short"),
        "{}",
        decoded.stderr
    );
    let end = &doc["log_end"];
    assert_eq!(end["complete"], false, "{end}");
    assert_eq!(end["cut_flows"].as_array().map(Vec::len), Some(1), "{end}");
    let flow = &doc["summary"]["flows"][0];
    let packets = u(flow, "/packets");
    assert!(packets > 0, "{doc}");
    assert_eq!(flow["loss"]["sent"], serde_json::Value::Null);
    // Loopback delivers in order: up to the cut, nothing is missing.
    assert_eq!(u(flow, "/loss/lost"), 0);
    assert_eq!(u(flow, "/loss/expected"), packets);
    doc
}
