//! `dualperf agent` on loopback: `send --reverse` and `--bidir` over IPv4 and IPv6, UDP
//! and TCP, each direction measured; every refusal (no key, a destination outside
//! `--allow`, rate, bytes and duration caps, a plain receiver asked to send, a flood of
//! junk connections) with its reason, the agent serving well-formed sessions afterwards;
//! the clock offset of an agent whose clock is faked off by a known amount; and held
//! sessions (`--wait-for-go`), here and through an agent, that start only when told.

use std::io::Write;
use std::net::TcpStream;
use std::time::Duration;

use serde_json::Value;

use crate::support::{run, run_with_env, u, Proc, Receiver};

/// A `dualperf agent` on a free port, dual-stack, with key `k`.
pub(crate) struct Agent {
    pub(crate) proc: Proc,
    pub(crate) port: u16,
}

impl Agent {
    pub(crate) fn start(extra: &[&str]) -> Self {
        let mut args = vec!["agent", "--port", "0", "--key", "k", "--json"];
        args.extend_from_slice(extra);
        let proc = Proc::spawn(&args);
        let line = proc.wait_stderr_line(|l| l.starts_with("dualperf agent: listening on"));
        let port = line
            .split_once("]:")
            .and_then(|(_, rest)| rest.split(' ').next())
            .and_then(|p| p.parse().ok())
            .unwrap_or_else(|| panic!("no port in {line:?}"));
        Self { proc, port }
    }

    /// Stop it; its final counters line.
    pub(crate) fn counters(self) -> Value {
        self.proc.interrupt();
        let done = self.proc.finish();
        let lines = done.json_lines();
        let last = lines.last().expect("agent --json prints its counters");
        assert_eq!(last["type"], "counters", "{last}");
        last["data"].clone()
    }
}

/// `send ARGS` against the agent.
fn send(host: &str, port: u16, args: &[&str]) -> crate::support::Finished {
    let port = port.to_string();
    let mut all = vec!["send", host, "--port", &port];
    all.extend_from_slice(args);
    run(&all)
}

/// The flow's delay distribution (`send --cdf`): the smallest delay and percentiles 1
/// to 100, in order, all non-negative (one kernel's clock on both ends).
fn assert_cdf(report: &Value, what: &str) {
    let cdf: Vec<i64> = report["flows"][0]["delay_cdf_ns"]
        .as_array()
        .unwrap_or_else(|| panic!("{what}: no delay_cdf_ns in {report:#}"))
        .iter()
        .map(|v| v.as_i64().unwrap())
        .collect();
    assert_eq!(cdf.len(), 101, "{what}");
    assert!(cdf.windows(2).all(|w| w[0] <= w[1]), "{what}: {cdf:?}");
    assert!(cdf[0] >= 0, "{what}: {cdf:?}");
}

fn assert_whole(report: &Value, packets: u64, what: &str) {
    let f = &report["flows"][0];
    assert_eq!(u(f, "/sent/packets"), packets, "{what}: {f:#}");
    assert_eq!(u(f, "/received/packets"), packets, "{what}: {f:#}");
    assert_eq!(u(f, "/received/loss/lost"), 0, "{what}");
}

#[test]
fn reverse_and_bidir_are_measured_in_each_direction_over_both_families_and_transports() {
    let agent = Agent::start(&[]);
    for host in ["127.0.0.1", "::1"] {
        for proto in ["--udp", "--tcp"] {
            let what = format!("{host} {proto}");
            let flow = [proto, "--rate", "500pps", "--size", "200", "--count", "150"];
            let mut args = vec!["--key", "k", "--reverse", "--json", "--cdf"];
            args.extend(flow);
            let out = send(host, agent.port, &args);
            out.assert_success();
            let rev = out.json();
            crate::schema::assert_valid("send", &rev);
            assert_whole(&rev, 150, &format!("reverse {what}"));
            assert_cdf(&rev, &format!("reverse {what}"));
            // The agent's TCP flow carries its TCP_INFO; a UDP flow has none.
            let tcp = rev["flows"][0].get("tcp");
            assert_eq!(tcp.is_some(), proto == "--tcp", "reverse {what}: {rev:#}");
            // The agent sent to the receiver this send started, not to its own port.
            let dest: std::net::SocketAddr = rev["dest"].as_str().unwrap().parse().unwrap();
            assert_ne!(dest.port(), agent.port, "{what}");
            assert_eq!(dest.is_ipv4(), host.contains('.'), "{what}: {dest}");
            // One kernel, one clock: the offset is exactly 0.
            assert_eq!(rev["clock"]["same_clock"], true, "{what}");
            assert_eq!(u(&rev, "/clock/offset_ns"), 0);

            let mut args = vec!["--key", "k", "--bidir", "--json", "--cdf"];
            args.extend(flow);
            let out = send(host, agent.port, &args);
            out.assert_success();
            let both = out.json();
            crate::schema::assert_valid("send-bidir", &both);
            assert_eq!(both["errors"], serde_json::json!([]), "{what}");
            assert_whole(&both["forward"], 150, &format!("bidir forward {what}"));
            assert_whole(&both["reverse"], 150, &format!("bidir reverse {what}"));
            assert_cdf(&both["forward"], &format!("bidir forward {what}"));
            assert_cdf(&both["reverse"], &format!("bidir reverse {what}"));
            let fwd: std::net::SocketAddr =
                both["forward"]["dest"].as_str().unwrap().parse().unwrap();
            assert_eq!(fwd.port(), agent.port, "{what}");
        }
    }
    // The text form names each direction.
    let out = send(
        "::1",
        agent.port,
        &["--key", "k", "--bidir", "--count", "20"],
    );
    out.assert_success();
    assert!(
        out.stdout.contains("forward (to the agent):"),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout.contains("reverse (from the agent):"),
        "{}",
        out.stdout
    );
    let c = agent.counters();
    assert_eq!(u(&c, "/send_refusals"), 0);
}

#[test]
fn the_agent_refuses_with_reasons_and_keeps_serving() {
    let agent = Agent::start(&[
        "--max-rate",
        "1mbit",
        "--max-bytes",
        "100k",
        "--max-duration",
        "2s",
        "--handshake-timeout",
        "30s",
    ]);
    let p = agent.port;
    refuse_past_the_caps(p);

    // A plain receiver never sends.
    let rx = Receiver::start(&["--json"]);
    assert_refused(
        send("127.0.0.1", rx.port, &["--reverse", "--count", "10"]),
        "never sends",
    );
    let recv = rx.interrupt_and_finish();
    assert_eq!(u(&recv.counters, "/send_refusals"), 1);

    let junk = flood_until_busy(p);
    drop(junk);
    serve_after_the_flood(p);

    let c = agent.counters();
    // allow, rate, bytes, duration.
    assert_eq!(u(&c, "/send_refusals"), 4, "{c:#}");
    assert_eq!(u(&c, "/auth_failures"), 1, "{c:#}");
    assert!(u(&c, "/refused_busy") >= 1, "{c:#}");
}

/// `out` is a refusal that says `why`: exit 1, the reason on stderr, no report.
fn assert_refused(out: crate::support::Finished, why: &str) {
    assert_eq!(out.code(), Some(1), "{why}: {}", out.stderr);
    assert!(out.stderr.contains(why), "want {why:?} in: {}", out.stderr);
    assert!(out.stdout.is_empty(), "no report: {}", out.stdout);
}

/// The agent on port `p` (caps 1 Mbit/s, 100 kB, 2 s; key `k`) refuses a request
/// without a key, one to a destination outside `--allow`, and reverse flows past each
/// cap; a TCP bulk flow passes the checks and is halted at the byte cap.
fn refuse_past_the_caps(p: u16) {
    // No key.
    assert_refused(
        send("127.0.0.1", p, &["--reverse", "--count", "10"]),
        "--key",
    );
    // A destination that is neither the asker nor inside --allow (none given). The
    // request names 127.0.0.2; we ask from 127.0.0.1.
    let agent_at = format!("127.0.0.1:{p}");
    assert_refused(
        run(&[
            "send",
            "--from",
            &agent_at,
            "127.0.0.2",
            "--port",
            "9",
            "--key",
            "k",
            "--count",
            "10",
        ]),
        "outside --allow",
    );
    // Reverse flows from the agent, flows given as one string.
    let reverse = |flow: &str| {
        let mut args = vec!["--key", "k", "--reverse"];
        args.extend(flow.split_whitespace());
        send("::1", p, &args)
    };
    // Rate: 2 Mbit/s against 1 Mbit/s.
    assert_refused(
        reverse("--rate 2mbit --size 1000 --duration 1s"),
        "--max-rate",
    );
    // Bytes: 0.9 Mbit/s for 1.9 s is about 214 kB against 100 kB.
    assert_refused(
        reverse("--rate 900kbit --size 1000 --duration 1.9s"),
        "--max-bytes",
    );
    // Duration: 3 s against 2 s.
    assert_refused(reverse("--rate 10kbit --duration 3s"), "--max-duration");
    // A window-limited TCP bulk flow passes the checks and is halted at the byte cap.
    let out = send(
        "::1",
        p,
        &[
            "--key",
            "k",
            "--reverse",
            "--tcp",
            "--bulk",
            "--duration",
            "1s",
            "--json",
        ],
    );
    assert_eq!(out.code(), Some(1), "{}", out.stderr);
    assert!(out.stderr.contains("byte cap"), "{}", out.stderr);
    let sent = u(&out.json(), "/flows/0/sent/bytes");
    assert!(sent >= 100_000, "halted at the cap, not before: {sent}");
}

/// Floods the agent on port `p` with junk control connections (silent ones, garbage, a
/// huge length prefix) until a newcomer is refused as busy: the junk, still open.
fn flood_until_busy(p: u16) -> Vec<TcpStream> {
    // A flood of junk control connections: silent ones, garbage, a huge length prefix.
    let mut junk = Vec::new();
    for i in 0..300u32 {
        let Ok(mut c) = TcpStream::connect(("127.0.0.1", p)) else {
            continue;
        };
        let _ = match i % 3 {
            0 => Ok(()),
            1 => c.write_all(b"GET / HTTP/1.1\r\n\r\n\x00\xff garbage"),
            _ => c.write_all(&u32::MAX.to_be_bytes()),
        };
        junk.push(c);
    }
    // While silent ones hold every handshake slot (the agent waits 30 s for them), a
    // newcomer is turned away at once with the reason. Which of the flood got a slot
    // depends on timing: garbage ones free theirs at once, and silent ones that came
    // while garbage held the slots were turned away. So before each try more silent
    // ones come, until they hold all 64.
    let mut tries = Vec::new();
    let busy = (0..200).find_map(|_| {
        junk.extend((0..16).filter_map(|_| TcpStream::connect(("127.0.0.1", p)).ok()));
        let out = send(
            "127.0.0.1",
            p,
            &["--key", "k", "--count", "10", "--size", "64"],
        );
        if out.stderr.contains("busy: too many connections") {
            return Some(out);
        }
        tries.push(format!("{:?}: {}", out.code(), out.stderr.trim()));
        std::thread::sleep(Duration::from_millis(100));
        None
    });
    // On failure, say what the newcomers got instead (first and last tries).
    let busy = busy.unwrap_or_else(|| {
        panic!(
            "a newcomer is refused while the junk holds every slot; {} tries, the first: {:?}, the last: {:?}",
            tries.len(),
            tries.first(),
            tries.last()
        )
    });
    assert_eq!(busy.code(), Some(1), "{}", busy.stderr);
    junk
}

/// Once the junk is closed, the agent on port `p` serves whole sessions again: reverse
/// over IPv4, forward over IPv6.
fn serve_after_the_flood(p: u16) {
    // Well-formed sessions are served afterwards: the slots drain as the junk closes.
    std::thread::sleep(Duration::from_millis(300));
    let out = send(
        "127.0.0.1",
        p,
        &[
            "--key",
            "k",
            "--reverse",
            "--count",
            "100",
            "--rate",
            "1000pps",
            "--size",
            "64",
            "--json",
        ],
    );
    out.assert_success();
    assert_whole(&out.json(), 100, "after the flood");
    let out = send(
        "::1",
        p,
        &[
            "--key", "k", "--count", "100", "--rate", "1000pps", "--size", "64", "--json",
        ],
    );
    out.assert_success();
    assert_whole(&out.json(), 100, "forward after the flood");
}

#[test]
fn an_agent_needs_a_key_unless_it_serves_loopback_only() {
    let out = run(&["agent", "--port", "0"]);
    assert_eq!(out.code(), Some(2), "{}", out.stderr);
    assert!(out.stderr.contains("--key"), "{}", out.stderr);
    // On loopback only it starts without one.
    let agent = Proc::spawn(&["agent", "--port", "0", "--bind", "::1"]);
    agent.wait_stderr_line(|l| l.starts_with("dualperf agent: listening on [::1]:"));
}

/// The agent's clock is faked `OFFSET_NS` ahead (a time namespace would not shift it:
/// one-way delays are stamped on CLOCK_REALTIME, which time namespaces leave alone).
const OFFSET_NS: i64 = 1_234_567_890;

#[test]
fn the_offset_of_a_faked_clock_is_found_within_its_bound() {
    let offset = OFFSET_NS.to_string();
    let agent = Agent::start(&["--fake-clock-offset-ns", &offset]);
    let peer = format!("127.0.0.1:{}", agent.port);
    let out = run_with_env(&["clock", "--peer", &peer, "--json"], ("DUALPERF_KEY", "k"));
    out.assert_success();
    let doc = out.json();
    crate::schema::assert_valid("peer-clock", &doc);
    let o = &doc["offset"];
    assert_eq!(o["same_clock"], false, "{doc:#}");
    let est = o["offset_ns"].as_i64().unwrap();
    let bound = u(o, "/bound_ns");
    assert!(
        (est - OFFSET_NS).unsigned_abs() <= bound,
        "estimated {est} ± {bound} ns, injected {OFFSET_NS} ns"
    );
    assert_eq!(u(o, "/samples"), 16);
    assert!(
        doc["remote"]["boot_id"].is_null(),
        "a faked clock claims no boot id"
    );
    assert!(doc["local"]["boot_id"].is_string());

    // Its flows to us: the report carries the offset (our clock minus the agent's), and
    // the one-way delays corrected by it are not negative beyond the bound.
    let out = send(
        "127.0.0.1",
        agent.port,
        &["--key", "k", "--reverse", "--count", "50", "--json"],
    );
    out.assert_success();
    let r = out.json();
    let c = &r["clock"];
    let est = c["offset_ns"].as_i64().unwrap();
    let bound = u(c, "/bound_ns") as i64;
    assert!((est + OFFSET_NS).abs() <= bound, "{c}");
    // Two clocks: each end's own synchronisation goes with the offset.
    for end in ["sender", "receiver"] {
        assert!(
            r["sync"][end]["kernel"]["max_error_ns"].is_u64(),
            "{end}: {}",
            r["sync"]
        );
    }
    let min = r["flows"][0]["received"]["delay"]["min_ns"]
        .as_i64()
        .unwrap();
    assert!(min - est >= -bound, "corrected delay {} ns", min - est);
    // And ours to it: the other sign.
    let out = send(
        "::1",
        agent.port,
        &["--key", "k", "--count", "50", "--json"],
    );
    out.assert_success();
    let c = &out.json()["clock"];
    let est = c["offset_ns"].as_i64().unwrap();
    assert!((est - OFFSET_NS).unsigned_abs() <= u(c, "/bound_ns"), "{c}");
}

#[test]
fn from_an_agent_to_a_keyed_receiver_the_key_stays_with_the_controller() {
    let agent = Agent::start(&[]);
    let rx = Receiver::start(&["--key", "dest-key", "--json"]);
    let at = format!("127.0.0.1:{}", agent.port);
    let port = rx.port.to_string();
    let from = |key: &str| {
        run(&[
            "send",
            "--from",
            &at,
            "127.0.0.1",
            "--port",
            &port,
            "--agent-key",
            "k",
            "--key",
            key,
            "--count",
            "50",
            "--rate",
            "1000pps",
            "--json",
            "--cdf",
        ])
    };
    // The agent forwards the receiver's challenge; the controller answers it.
    let out = from("dest-key");
    out.assert_success();
    let r = out.json();
    assert_whole(&r, 50, "from the agent");
    assert_cdf(&r, "from the agent");
    assert_eq!(r["dest"], format!("127.0.0.1:{port}"));
    let wrong = from("not-it");
    assert_eq!(wrong.code(), Some(1), "{}", wrong.stderr);
    assert!(wrong.stderr.contains("wrong key"), "{}", wrong.stderr);
    let recv = rx.interrupt_and_finish();
    assert_eq!(u(&recv.counters, "/auth_failures"), 1);
    assert_eq!(recv.flows.len(), 1);
}

#[test]
fn a_held_session_sends_nothing_before_go_and_nothing_at_all_when_let_go() {
    // `send --wait-for-go` (what `dualperf run` starts every sender with): the session
    // is set up, "ready" is said, and the flows start on a line on stdin; its end
    // halts them unsent. Here and through an agent (`--from`), whose session holds on
    // the asker's `Go`.
    let agent = Agent::start(&[]);
    let rx = Receiver::start(&["--key", "dest-key", "--json"]);
    let at = format!("127.0.0.1:{}", agent.port);
    let port = rx.port.to_string();
    let held = |from: bool| {
        let mut args = vec!["send"];
        if from {
            args.extend(["--from", &at, "--agent-key", "k"]);
        }
        args.extend([
            "127.0.0.1",
            "--port",
            &port,
            "--key",
            "dest-key",
            "--count",
            "50",
            "--rate",
            "1000pps",
            "--json",
            "--wait-for-go",
        ]);
        let p = Proc::spawn_piped(&args);
        p.wait_stderr_line(|l| l == "dualperf send: ready");
        p
    };
    let wall_ns = || {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos() as u64
    };
    for from in [false, true] {
        let what = if from { "through the agent" } else { "here" };
        // Held for longer than the 50 packets take: none may leave before the go.
        let mut p = held(from);
        std::thread::sleep(Duration::from_millis(300));
        let go_ns = wall_ns();
        p.write_stdin(b"go\n");
        let out = p.finish();
        out.assert_success();
        let r = out.json();
        assert_whole(&r, 50, what);
        let first = u(&r["flows"][0], "/received/first_rx_ns");
        assert!(
            first >= go_ns,
            "{what}: first arrival {first} before go {go_ns}"
        );
        // Let go of (stdin closed): nothing sent, and said.
        let mut p = held(from);
        p.close_stdin();
        let out = p.finish();
        assert_eq!(out.code(), Some(1), "{what}: {}", out.stderr);
        assert!(
            out.stderr.contains("halted before the flows started"),
            "{what}: {}",
            out.stderr
        );
        assert_eq!(u(&out.json()["flows"][0], "/sent/packets"), 0, "{what}");
    }
    let recv = rx.interrupt_and_finish();
    assert_eq!(recv.flows.len(), 4);
    drop(agent);
}
