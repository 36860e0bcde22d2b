//! The reverse direction in callback mode (`send --reverse-mode callback`, the way
//! through a NAT in front of the controller) on loopback: both families, UDP and TCP,
//! exact counts; `auto` falling back to listen mode against an agent without callback
//! mode (and `callback` refused by it with the reason); and a punch from another
//! address or with a wrong token, which gets no answer and is counted.

use std::net::UdpSocket;
use std::time::Duration;

use serde_json::Value;

use crate::support::{run, u, Proc};

use crate::agent::Agent;

fn send_args<'a>(host: &'a str, port: &'a str, args: &[&'a str]) -> Vec<&'a str> {
    let mut all = vec!["send", host, "--port", port, "--key", "k", "--json"];
    all.extend_from_slice(args);
    all
}

fn assert_whole(report: &Value, flow: usize, packets: u64, what: &str) {
    let f = &report["flows"][flow];
    assert_eq!(u(f, "/sent/packets"), packets, "{what}: {f:#}");
    assert_eq!(u(f, "/received/packets"), packets, "{what}: {f:#}");
    assert_eq!(u(f, "/received/loss/lost"), 0, "{what}");
}

#[test]
fn reverse_callback_over_both_families_udp_and_tcp_on_loopback() {
    let agent = Agent::start(&[]);
    let port = agent.port.to_string();
    for host in ["127.0.0.1", "::1"] {
        for proto in ["--udp", "--tcp"] {
            let what = format!("{host} {proto}");
            let flow = [
                "--reverse",
                "--reverse-mode",
                "callback",
                proto,
                "--rate",
                "500pps",
                "--size",
                "200",
                "--count",
                "120",
            ];
            let out = run(&send_args(host, &port, &flow));
            out.assert_success();
            let rev = out.json();
            crate::schema::assert_valid("send", &rev);
            assert_whole(&rev, 0, 120, &what);
            let dest: std::net::SocketAddr = rev["dest"].as_str().unwrap().parse().unwrap();
            assert_eq!(dest.is_ipv4(), host.contains('.'), "{what}: {dest}");
            assert_eq!(rev["clock"]["same_clock"], true, "{what}");
        }
    }
    // Round trips too: the agent's UDP flow gets its echoes on the punched socket.
    let rtt = [
        "--reverse",
        "--reverse-mode",
        "callback",
        "--meter",
        "rtt",
        "--rate",
        "500pps",
        "--count",
        "100",
    ];
    let out = run(&send_args("127.0.0.1", &port, &rtt));
    out.assert_success();
    let rev = out.json();
    assert_whole(&rev, 0, 100, "rtt");
    assert_eq!(u(&rev["flows"][0], "/rtt/packets"), 100, "{rev:#}");
    let stderr = agent.proc.stderr_so_far();
    assert_eq!(stderr.matches("(callback mode)").count(), 5, "{stderr}");
    assert_eq!(stderr.matches("ignored a datagram").count(), 0, "{stderr}");
    let c = agent.counters();
    assert_eq!(u(&c, "/send_refusals"), 0);
}

#[test]
fn reverse_auto_falls_back_to_listen_when_the_agent_lacks_callback() {
    let agent = Agent::start(&["--no-callback"]);
    let port = agent.port.to_string();
    let count = ["--reverse", "--count", "80", "--rate", "1000pps"];
    for (host, tcp) in [("127.0.0.1", false), ("::1", true)] {
        let mut args = send_args(host, &port, &count);
        if tcp {
            args.push("--tcp");
        }
        let out = run(&args);
        out.assert_success();
        assert_whole(&out.json(), 0, 80, host);
        assert_eq!(
            out.stderr
                .matches("offers no callback mode: the reverse direction uses listen mode")
                .count(),
            1,
            "{}",
            out.stderr
        );
    }
    let mut args = send_args("127.0.0.1", &port, &count);
    args.extend(["--reverse-mode", "callback"]);
    let out = run(&args);
    assert_eq!(out.code(), Some(1), "{}", out.stderr);
    assert!(
        out.stderr.contains("predates reverse through NAT"),
        "{}",
        out.stderr
    );
    let stderr = agent.proc.stderr_so_far();
    assert_eq!(stderr.matches("(callback mode)").count(), 0, "{stderr}");
    let c = agent.counters();
    assert_eq!(u(&c, "/send_refusals"), 0);
}

/// A punch for flow 1 with `token`.
fn punch(token: u64) -> Vec<u8> {
    let mut p = vec![0xd7, 0x11, 0, 1];
    p.extend_from_slice(&token.to_be_bytes());
    p.extend_from_slice(&0u64.to_be_bytes());
    p
}

#[test]
fn a_punch_from_another_ip_or_token_is_counted_and_gets_no_answer() {
    let agent = Agent::start(&[]);
    let port = agent.port.to_string();
    // Our receiver's first punch waits 6 s (the agent waits up to the 20 s of
    // --connect-timeout for it): the strangers' punches come first, however busy the
    // machine.
    let args = send_args(
        "127.0.0.1",
        &port,
        &[
            "--reverse",
            "--reverse-mode",
            "callback",
            "--punch-delay",
            "6s",
            "--connect-timeout",
            "20s",
            "--count",
            "60",
            "--rate",
            "1000pps",
        ],
    );
    let controller = Proc::spawn(&args);
    let line = agent
        .proc
        .wait_stderr_line(|l| l.contains("waits for 127.0.0.1's punch"));
    let flow_port: u16 = line
        .split("UDP port ")
        .nth(1)
        .and_then(|r| r.split(' ').next())
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| panic!("no port in {line:?}"));
    let to = format!("127.0.0.1:{flow_port}");
    // Another address (127.0.0.2 is loopback too), then the asker's with a wrong token.
    for (from, why, n) in [
        ("127.0.0.2:0", "not from the asker's address", 1),
        (
            "127.0.0.1:0",
            "not a flow of this socket, or a wrong token",
            2,
        ),
    ] {
        let sock = UdpSocket::bind(from).unwrap();
        sock.send_to(&punch(0x5eed), &to).unwrap();
        let said = format!(
            "ignored a datagram from {}: {why} ({n} ignored so far)",
            sock.local_addr().unwrap()
        );
        agent.proc.wait_stderr_line(|l| l.ends_with(&said));
        sock.set_read_timeout(Some(Duration::from_millis(300)))
            .unwrap();
        let mut buf = [0u8; 64];
        assert!(sock.recv_from(&mut buf).is_err(), "{from} got an answer");
    }
    let out = controller.finish();
    out.assert_success();
    assert_whole(&out.json(), 0, 60, "after the strangers");
    let stderr = agent.proc.stderr_so_far();
    assert_eq!(stderr.matches("ignored a datagram").count(), 2, "{stderr}");
    drop(agent);
}

/// Hello, challenge, empty auth: the `Welcome` of an end without a key, and the
/// address we spoke from.
fn welcome(addr: std::net::SocketAddr) -> (Value, String) {
    let mut c = crate::support::Control::connect(addr);
    let ours = c.stream.local_addr().unwrap().to_string();
    c.send(&serde_json::json!({"type": "hello", "version": 1}));
    assert_eq!(c.recv()["type"], "challenge");
    c.send(&serde_json::json!({"type": "auth", "mac": ""}));
    (c.recv(), ours)
}

#[test]
fn welcome_says_the_peer_address_and_what_an_agent_offers() {
    // A receiver: our address as it saw it (IPv4, unmapped), and no features.
    let rx = crate::support::Receiver::start(&[]);
    let (w, ours) = welcome(rx.addr_v4());
    assert_eq!(w["type"], "welcome", "{w}");
    assert_eq!(w["peer"], ours.as_str(), "{w}");
    assert!(ours.starts_with("127.0.0.1:"), "{ours}");
    assert_eq!(w.get("features"), None, "{w}");
    drop(rx);
    // An agent (on ::1, keyless): the same, and what it offers.
    for (extra, features) in [
        (None, serde_json::json!(["send", "callback"])),
        (Some("--no-callback"), serde_json::json!(["send"])),
    ] {
        let mut args = vec!["--bind", "::1"];
        args.extend(extra);
        let mut all = vec!["agent", "--port", "0", "--json"];
        all.extend_from_slice(&args);
        let proc = Proc::spawn(&all);
        let line = proc.wait_stderr_line(|l| l.starts_with("dualperf agent: listening on"));
        let port: u16 = line
            .split_once("]:")
            .and_then(|(_, rest)| rest.split(' ').next())
            .and_then(|p| p.parse().ok())
            .unwrap_or_else(|| panic!("no port in {line:?}"));
        let (w, ours) = welcome(std::net::SocketAddr::from((
            std::net::Ipv6Addr::LOCALHOST,
            port,
        )));
        assert_eq!(w["peer"], ours.as_str(), "{w}");
        assert!(ours.starts_with("[::1]:"), "{ours}");
        assert_eq!(w["features"], features, "{extra:?}: {w}");
    }
}
