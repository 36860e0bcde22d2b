//! `recv --threads N` (issue 15): N UDP sockets share the port (SO_REUSEPORT), each read
//! by its own thread into its own shard of the flow table; every flow's counts stay
//! exact, round-trip probes are echoed, and the log holds each flow whole.

use crate::support::{path_str, run, spawn_send, u, Receiver, TempDir};

/// Eight flows of 500 datagrams, each marked differently, so that even a sender that
/// shares a socket among flows marked alike sends them from eight source ports; two
/// are round-trip flows.
const FLOWS: &str = "\
--udp --rate 1000pps --count 500 --size 64\n\
--udp --rate 1000pps --count 500 --size 64 --dscp CS1\n\
--udp --rate 1000pps --count 500 --size 64 --dscp CS2\n\
--udp --rate 1000pps --count 500 --size 64 --dscp CS3\n\
--udp --rate 1000pps --count 500 --size 64 --dscp CS4\n\
--udp --rate 1000pps --count 500 --size 64 --dscp AF11\n\
--udp --rate 1000pps --count 500 --size 64 --dscp AF21 --meter rtt\n\
--udp --rate 1000pps --count 500 --size 64 --dscp AF31 --meter rtt\n";

const COUNT: u64 = 500;

#[test]
fn three_receive_threads_count_every_flow_of_two_senders_exactly() {
    let dir = TempDir::new("recv-threads");
    let file = dir.path("flows.txt");
    std::fs::write(&file, FLOWS).unwrap();
    let log = dir.path("recv.dplog");
    let rx = Receiver::start(&[
        "--threads",
        "3",
        "--json",
        "--sessions",
        "2",
        "--log",
        path_str(&log),
    ]);
    // One session over IPv4 and one over IPv6 at once, into the same dual-stack sockets.
    let senders = ["127.0.0.1", "::1"]
        .map(|dest| spawn_send(dest, rx.port, &["--flows", path_str(&file), "--json"]));
    for (dest, sender) in ["127.0.0.1", "::1"].iter().zip(senders) {
        let out = sender.finish();
        out.assert_success();
        let report = out.json();
        let flows = report["flows"].as_array().expect("flows");
        assert_eq!(flows.len(), 8, "{dest}: {report:#}");
        for f in flows {
            assert_eq!(u(f, "/sent/packets"), COUNT, "{dest}: {f:#}");
            assert_eq!(u(f, "/received/packets"), COUNT, "{dest}: {f:#}");
            assert_eq!(u(f, "/received/unique_packets"), COUNT, "{dest}: {f:#}");
            assert_eq!(u(f, "/received/loss/lost"), 0, "{dest}: {f:#}");
            assert_eq!(u(f, "/received/loss/duplicates"), 0, "{dest}: {f:#}");
            if f["spec"]["meter"] == "rtt" {
                assert_eq!(u(f, "/rtt/packets"), COUNT, "{dest}: echoes {f:#}");
                assert_eq!(u(f, "/rtt/loss/lost"), 0, "{dest}: echoes {f:#}");
            }
        }
    }
    let recv = rx.finish();
    recv.finished.assert_success();
    assert_eq!(recv.flows.len(), 16);
    for f in &recv.flows {
        assert_eq!(u(f, "/sent_packets"), COUNT, "{f:#}");
        assert_eq!(u(f, "/summary/packets"), COUNT, "{f:#}");
        assert_eq!(u(f, "/summary/loss/lost"), 0, "{f:#}");
        assert_eq!(u(f, "/unlogged_records"), 0, "{f:#}");
    }
    let c = &recv.counters;
    assert_eq!(u(c, "/datagrams"), 16 * COUNT);
    for refused in [
        "malformed_datagrams",
        "unknown_flow",
        "wrong_source",
        "late_after_finish",
        "echo_failures",
    ] {
        assert_eq!(u(c, &format!("/{refused}")), 0, "{refused}: {c}");
    }

    // Every shard's records of a flow are in the log before the flow's end.
    let out = run(&["decode", path_str(&log), "--json"]);
    out.assert_success();
    let doc = out.json();
    assert_eq!(doc["log_end"]["complete"], true, "{}", doc["log_end"]);
    let flows = doc["summary"]["flows"].as_array().expect("summary.flows");
    assert_eq!(flows.len(), 16);
    for f in flows {
        assert_eq!(u(f, "/packets"), COUNT, "{f:#}");
        assert_eq!(u(f, "/loss/sent"), COUNT, "{f:#}");
        assert_eq!(u(f, "/loss/lost"), 0, "{f:#}");
    }
}

#[test]
fn zero_receive_threads_is_a_usage_error() {
    let out = run(&["recv", "--port", "0", "--threads", "0"]);
    assert_eq!(out.code(), Some(2), "stderr: {}", out.stderr);
    assert!(out.stderr.contains("--threads"), "stderr: {}", out.stderr);
}
