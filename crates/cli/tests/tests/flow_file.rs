//! `send --flows FILE`: one flow per line, comments ignored, flows run together; mistakes name the file and line and exit 2.

use crate::support::{hist, only, path_str, send, u, Receiver, TempDir};

#[test]
fn a_flow_file_runs_each_listed_flow_and_every_packet_arrives() {
    let dir = TempDir::new("flows-ok");
    let file = dir.path("flows.txt");
    std::fs::write(
        &file,
        "# two flows to one receiver\n\
         --udp --rate 500pps --size 64 --count 200\n\
         \n\
         --tcp --rate 500pps --size 128 --count 100 --dscp AF41   # marked\n",
    )
    .unwrap();
    let rx = Receiver::start(&["--json", "--sessions", "1"]);
    let out = send("::1", rx.port, &["--flows", path_str(&file), "--json"]);
    out.assert_success();
    let report = out.json();
    let flows = report["flows"].as_array().expect("flows");
    assert_eq!(flows.len(), 2, "{report:#}");

    let (udp, tcp) = (&flows[0], &flows[1]);
    assert_eq!(udp["spec"]["protocol"], "udp");
    assert_eq!(udp["spec"]["label"], "line 2");
    assert_eq!(u(udp, "/sent/packets"), 200);
    assert_eq!(u(udp, "/received/packets"), 200);
    assert_eq!(u(udp, "/received/bytes"), 200 * 64);
    assert_eq!(u(udp, "/received/loss/lost"), 0);

    assert_eq!(tcp["spec"]["protocol"], "tcp");
    assert_eq!(tcp["spec"]["label"], "line 4");
    assert_eq!(u(tcp, "/sent/packets"), 100);
    assert_eq!(u(tcp, "/received/packets"), 100);
    assert_eq!(u(tcp, "/received/bytes"), 100 * 128);
    assert_eq!(u(tcp, "/received/loss/lost"), 0);
    // AF41 is DSCP 34; on IPv6 TCP reports it per segment.
    assert_eq!(hist(tcp, "/received/marking/dscp_seen"), only("34", 100));
    // The unmarked UDP flow arrives with DSCP 0.
    assert_eq!(hist(udp, "/received/marking/dscp_seen"), only("0", 200));
    assert_ne!(udp["id"], tcp["id"], "each flow has its own id");

    let recv = rx.finish();
    recv.finished.assert_success();
    assert_eq!(recv.flows.len(), 2);
    let sessions: Vec<u64> = recv.flows.iter().map(|f| u(f, "/session")).collect();
    assert_eq!(sessions, [1, 1], "both flows belong to one session");
    assert_eq!(u(&recv.counters, "/datagrams"), 200);
}

/// Regression: the results of ~60 or more flows exceeded the 64 KiB control-message
/// limit, so the sender got no results at all. After authentication the limit is 16 MiB.
#[test]
fn eighty_flows_in_one_session_are_all_reported() {
    let dir = TempDir::new("flows-many");
    let file = dir.path("flows.txt");
    let line = "--udp --rate 200pps --size 64 --count 10 --dscp CS1\n";
    std::fs::write(&file, line.repeat(80)).unwrap();
    let rx = Receiver::start(&["--json", "--sessions", "1"]);
    let out = send(
        "127.0.0.1",
        rx.port,
        &["--flows", path_str(&file), "--json"],
    );
    out.assert_success();
    let report = out.json();
    let flows = report["flows"].as_array().expect("flows");
    assert_eq!(flows.len(), 80);
    for f in flows {
        assert_eq!(u(f, "/sent/packets"), 10);
        assert_eq!(u(f, "/received/packets"), 10, "{f:#}");
        assert_eq!(hist(f, "/received/marking/dscp_seen"), only("8", 10));
    }
    let recv = rx.finish();
    recv.finished.assert_success();
    assert_eq!(u(&recv.counters, "/datagrams"), 800);
}

#[test]
fn a_bad_option_in_a_flow_file_names_the_line_and_exits_2() {
    let dir = TempDir::new("flows-bad-option");
    let file = dir.path("flows.txt");
    std::fs::write(
        &file,
        "--udp --rate 500pps --count 10\n--udp --rate 500pps --bogus\n",
    )
    .unwrap();
    // Parsing fails before any connection: nothing needs to listen on port 9.
    let out = send("127.0.0.1", 9, &["--flows", path_str(&file)]);
    assert_eq!(out.code(), Some(2), "stderr: {}", out.stderr);
    let want = format!("{}:2:", file.display());
    assert!(out.stderr.contains(&want), "stderr: {}", out.stderr);
    assert!(out.stderr.contains("--bogus"), "stderr: {}", out.stderr);
}

#[test]
fn an_invalid_value_in_a_flow_file_names_the_line_and_exits_2() {
    let dir = TempDir::new("flows-bad-value");
    let file = dir.path("flows.txt");
    std::fs::write(
        &file,
        "# comment\n--udp --count 10\n--udp --size 8 --count 10\n",
    )
    .unwrap();
    let out = send("127.0.0.1", 9, &["--flows", path_str(&file)]);
    assert_eq!(out.code(), Some(2), "stderr: {}", out.stderr);
    assert!(
        out.stderr.contains(&format!("{}:3", file.display())),
        "stderr: {}",
        out.stderr
    );
    assert!(out.stderr.contains("--size 8"), "stderr: {}", out.stderr);
}

#[test]
fn a_flow_file_with_only_comments_is_a_usage_error() {
    let dir = TempDir::new("flows-empty");
    let file = dir.path("flows.txt");
    std::fs::write(&file, "# nothing\n\n   # still nothing\n").unwrap();
    let out = send("127.0.0.1", 9, &["--flows", path_str(&file)]);
    assert_eq!(out.code(), Some(2), "stderr: {}", out.stderr);
    assert!(
        out.stderr.contains("lists no flows"),
        "stderr: {}",
        out.stderr
    );
}

#[test]
fn a_missing_flow_file_is_reported() {
    let dir = TempDir::new("flows-missing");
    let file = dir.path("absent.txt");
    let out = send("127.0.0.1", 9, &["--flows", path_str(&file)]);
    assert_eq!(out.code(), Some(2), "stderr: {}", out.stderr);
    assert!(
        out.stderr.contains("cannot read the flow file"),
        "stderr: {}",
        out.stderr
    );
}

/// A D-ITG script runs line by line: each ITGSend option becomes dualperf's own, and the
/// receiver sees what D-ITG's model asks for.
#[test]
fn a_ditg_script_runs_translated_line_by_line() {
    let dir = TempDir::new("ditg-script");
    let file = dir.path("script.txt");
    std::fs::write(
        &file,
        "-a ::1 -rp 9501 -T UDP -C 200 -c 100 -z 50 -b 184\n\
         -a ::1 -T TCP -z 40 -c 64 -C 400 -D\n\
         -a ::1 VoIP -x G.711.2 -h RTP -z 30\n\
         -a ::1 -T UDP -C 1000 -c 32 -t 2000 -B C 100 C 400\n",
    )
    .unwrap();
    let rx = Receiver::start(&["--json", "--sessions", "1"]);
    let out = send(
        "::1",
        rx.port,
        &["--ditg-script", path_str(&file), "--json"],
    );
    out.assert_success();
    let report = out.json();
    let flows = report["flows"].as_array().expect("flows");
    assert_eq!(flows.len(), 4, "{report:#}");
    // -C 200 -c 100 -z 50 -b 184 (EF).
    assert_eq!(flows[0]["spec"]["rate"], "200pps");
    assert_eq!(u(&flows[0], "/received/packets"), 50);
    assert_eq!(u(&flows[0], "/received/bytes"), 5000);
    assert_eq!(
        hist(&flows[0], "/received/marking/dscp_seen"),
        only("46", 50)
    );
    // -T TCP -D.
    assert_eq!(flows[1]["spec"]["protocol"], "tcp");
    assert_eq!(flows[1]["spec"]["nodelay"], true);
    assert_eq!(u(&flows[1], "/received/packets"), 40);
    // VoIP -x G.711.2 -h RTP: 172-byte payloads at 50 pkt/s.
    assert_eq!(u(&flows[2], "/spec/size_bytes"), 172);
    assert_eq!(u(&flows[2], "/received/packets"), 30);
    // -B C 100 C 400: 100 ms on, 400 ms off over 2 s at 1000 pkt/s: four bursts of 100.
    assert_eq!(u(&flows[3], "/sent/packets"), 400);
    assert_eq!(u(&flows[3], "/received/packets"), 400);
    assert_eq!(u(&flows[3], "/received/loss/lost"), 0);
    rx.finish().finished.assert_success();

    // A line for another receiver, or an option dualperf cannot honour, names the line.
    for (script, want) in [
        (
            "-a 127.0.0.2 -C 10\n",
            "script.txt:1: -a 127.0.0.2 is not ::1",
        ),
        ("-C 10\n-T SCTP\n", "script.txt:2: D-ITG -T SCTP"),
    ] {
        std::fs::write(&file, script).unwrap();
        let out = send("::1", 9, &["--ditg-script", path_str(&file)]);
        assert_eq!(out.code(), Some(2), "{}", out.stderr);
        assert!(out.stderr.contains(want), "{}", out.stderr);
    }
}
