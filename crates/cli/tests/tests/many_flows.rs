//! Many flows on one scheduler: `--calls N` copies, shared sockets, UDP and TCP and
//! round-trip flows in one sender loop, and the report's spread across flows.

use crate::support::{hist, only, path_str, send, u, Receiver, TempDir};

#[test]
fn three_hundred_calls_on_one_thread_all_arrive_and_the_report_gives_their_spread() {
    let rx = Receiver::start(&["--json", "--sessions", "1"]);
    let args = [
        "--rate",
        "200pps",
        "--size",
        "64",
        "--count",
        "10",
        "--calls",
        "300",
        "--threads",
        "1",
        "--seed",
        "3",
        "--json",
    ];
    let out = send("127.0.0.1", rx.port, &args);
    out.assert_success();
    let report = out.json();
    let flows = report["flows"].as_array().expect("flows");
    assert_eq!(flows.len(), 300);
    for (k, f) in flows.iter().enumerate() {
        assert_eq!(f["spec"]["label"], format!("flow 0 #{}", k + 1));
        assert_eq!(u(f, "/sent/packets"), 10);
        assert_eq!(u(f, "/received/packets"), 10, "{f:#}");
        assert_eq!(u(f, "/received/loss/lost"), 0);
    }
    // Start phases differ: the calls do not all begin at one instant.
    let starts: std::collections::BTreeSet<u64> = flows
        .iter()
        .map(|f| u(f, "/spec/start_offset_ns"))
        .collect();
    assert!(starts.len() > 250, "{} distinct start phases", starts.len());
    let spread = &report["sum"]["spread"];
    assert_eq!(spread["delivered_pct"], 100.0);
    assert_eq!(u(spread, "/loss_pct/flows"), 300);
    assert_eq!(spread["loss_pct"]["worst"], 0.0);
    assert_eq!(u(spread, "/schedule_error_p99_ns/flows"), 300);
    assert_eq!(u(&report, "/sum/sent/packets"), 3_000);
    assert_eq!(u(&report, "/sum/received/packets"), 3_000);
    let recv = rx.finish();
    recv.finished.assert_success();
    assert_eq!(u(&recv.counters, "/datagrams"), 3_000);
    assert_eq!(u(&recv.counters, "/wrong_source"), 0);
}

#[test]
fn many_flows_print_their_spread_not_a_row_each_unless_asked() {
    for (per_flow, rows) in [(false, 0), (true, 30)] {
        let rx = Receiver::start(&["--json", "--sessions", "1"]);
        let mut args = vec![
            "--rate", "500pps", "--size", "64", "--count", "5", "--calls", "30",
        ];
        if per_flow {
            args.push("--per-flow");
        }
        let out = send("::1", rx.port, &args);
        out.assert_success();
        let text = &out.stdout;
        assert_eq!(
            text.lines().filter(|l| l.contains("flow 0 #")).count(),
            rows,
            "{text}"
        );
        assert_eq!(text.contains("over flows"), !per_flow, "{text}");
        assert!(text.contains("sum of 30 flows"), "{text}");
        rx.finish().finished.assert_success();
    }
}

#[test]
fn udp_tcp_and_round_trip_flows_share_one_sender_loop_and_keep_their_marking() {
    let dir = TempDir::new("many-mixed");
    let file = dir.path("flows.txt");
    std::fs::write(
        &file,
        "--udp --rate 1000pps --size 64 --count 200 --dscp EF\n\
         --udp --rate 1000pps --size 64 --count 200 --dscp EF --meter rtt\n\
         --udp --rate 700pps --size 300 --count 150 --dscp AF41\n\
         --udp --rate 500pps --size 64 --count 100\n\
         --tcp --rate 1000pps --size 128 --count 200 --dscp CS1\n\
         --tcp --rate 1000pps --size 128 --count 200 --meter rtt\n\
         --voip g711.1 --count 100\n",
    )
    .unwrap();
    for dest in ["127.0.0.1", "::1"] {
        let rx = Receiver::start(&["--json", "--sessions", "1"]);
        let out = send(
            dest,
            rx.port,
            &["--flows", path_str(&file), "--threads", "1", "--json"],
        );
        out.assert_success();
        let report = out.json();
        let flows = report["flows"].as_array().expect("flows");
        let want = [
            (200, "46"),
            (200, "46"),
            (150, "34"),
            (100, "0"),
            (200, "8"),
            (200, "0"),
            (100, "0"),
        ];
        for (f, (n, dscp)) in flows.iter().zip(want) {
            assert_eq!(u(f, "/sent/packets"), n, "{f:#}");
            assert_eq!(u(f, "/received/packets"), n, "{f:#}");
            assert_eq!(
                hist(f, "/received/marking/dscp_seen"),
                only(dscp, n),
                "{f:#}"
            );
        }
        // The round-trip flows got every echo, each matched to its own flow.
        for i in [1, 5] {
            assert_eq!(u(&flows[i], "/rtt/packets"), 200, "{:#}", flows[i]);
            assert_eq!(u(&flows[i], "/rtt/loss/lost"), 0);
        }
        let recv = rx.finish();
        recv.finished.assert_success();
        assert_eq!(u(&recv.counters, "/wrong_source"), 0);
        assert_eq!(u(&recv.counters, "/unknown_flow"), 0);
    }
}
