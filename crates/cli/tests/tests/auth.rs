//! `--key`: a wrong or missing key is refused with a clear message and counted; the right key is measured completely.

use crate::support::{counters, send, u, Receiver};

#[test]
fn wrong_and_missing_keys_are_refused_and_the_right_key_is_measured() {
    let rx = Receiver::start(&["--key", "right", "--json", "--sessions", "1"]);
    let flow = [
        "--rate", "1000pps", "--size", "64", "--count", "200", "--json",
    ];

    let mut args = vec!["--key", "wrong"];
    args.extend(flow);
    let wrong = send("127.0.0.1", rx.port, &args);
    assert_eq!(wrong.code(), Some(1), "stderr: {}", wrong.stderr);
    assert!(
        wrong.stderr.contains("wrong key"),
        "stderr: {}",
        wrong.stderr
    );
    assert!(
        wrong.stdout.is_empty(),
        "no report on failure: {}",
        wrong.stdout
    );

    let missing = send("::1", rx.port, &flow);
    assert_eq!(missing.code(), Some(1), "stderr: {}", missing.stderr);
    assert!(
        missing.stderr.contains("--key"),
        "stderr: {}",
        missing.stderr
    );

    // Refused sessions do not count towards --sessions 1: the receiver is still there.
    let mut args = vec!["--key", "right"];
    args.extend(flow);
    let right = send("127.0.0.1", rx.port, &args);
    right.assert_success();
    let f = &right.json()["flows"][0];
    assert_eq!(u(f, "/sent/packets"), 200);
    assert_eq!(u(f, "/received/packets"), 200);
    assert_eq!(u(f, "/received/loss/lost"), 0);

    let recv = rx.finish();
    recv.finished.assert_success();
    assert!(
        recv.finished.stderr.contains("key required"),
        "{}",
        recv.finished.stderr
    );
    assert_eq!(recv.flows.len(), 1);
    let c = counters(&recv.counters);
    assert_eq!(c[5], ("auth_failures", 2));
    assert_eq!(c[0], ("datagrams", 200));
    assert_eq!(
        c[1..4],
        [
            ("malformed_datagrams", 0),
            ("unknown_flow", 0),
            ("wrong_source", 0)
        ]
    );
    // bad_connections: see handshake::refused_handshakes_are_not_also_counted_as_bad_connections.
}

#[test]
fn the_key_can_come_from_the_environment() {
    let rx = Receiver::start(&["--key", "from-env", "--json", "--sessions", "1"]);
    let out = crate::support::run_with_env(
        &[
            "send",
            "::1",
            "-p",
            &rx.port.to_string(),
            "--count",
            "50",
            "--rate",
            "1000pps",
            "--size",
            "64",
            "--json",
        ],
        ("DUALPERF_KEY", "from-env"),
    );
    out.assert_success();
    assert_eq!(u(&out.json(), "/flows/0/received/packets"), 50);
    let recv = rx.finish();
    assert_eq!(u(&recv.counters, "/auth_failures"), 0);
}
