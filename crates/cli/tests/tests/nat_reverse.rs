//! The reverse direction through the lab's kernel NAT44 (`plans/topologies/nat44.toml`:
//! sender — nat — r1 — receiver; the NAT masquerades the sender's IPv4 behind 198.18.2.1
//! and lets in only what conntrack knows), from `sender` against an agent on `receiver`
//! (198.18.3.2): listen mode cannot get through (the agent's connections to the NAT's
//! address find nothing: the negative control), callback mode measures UDP and TCP with
//! every packet, and a reverse UDP flow held longer than the NAT's UDP timeout survives
//! on the controller's keepalives and is lost without them. Root and nftables' `nft`
//! are needed, as in `lab_nat.rs`.

use std::process::Command;
use std::time::Duration;

use crate::lab::{privileged, Lab};
use crate::support::u;

/// The agent on `receiver`, at its default port.
fn agent(lab: &Lab) -> crate::support::Proc {
    let agent = lab.spawn("receiver", &["agent", "--key", "k", "--json"]);
    agent.wait_stderr_line(|l| l.starts_with("dualperf agent: listening on"));
    agent
}

/// `send 198.18.3.2 --reverse ARGS` from `sender`.
fn reverse(lab: &Lab, args: &[&str]) -> crate::support::Finished {
    let mut all = vec![
        "send",
        "198.18.3.2",
        "--key",
        "k",
        "--json",
        "--reverse",
        "--connect-timeout",
        "3s",
    ];
    all.extend_from_slice(args);
    lab.exec("sender", &all)
}

fn assert_whole(report: &serde_json::Value, packets: u64, what: &str) {
    let f = &report["flows"][0];
    assert_eq!(u(f, "/sent/packets"), packets, "{what}: {f:#}");
    assert_eq!(u(f, "/received/packets"), packets, "{what}: {f:#}");
    assert_eq!(u(f, "/received/loss/lost"), 0, "{what}");
}

#[test]
fn reverse_listen_fails_through_nat44_and_callback_measures_udp_and_tcp() {
    if !privileged() {
        return;
    }
    let lab = Lab::up_shipped("nrv", "nat44.toml");
    let agent = agent(&lab);
    let flow = ["--count", "200", "--rate", "1000pps", "--size", "300"];

    // Listen mode: the agent connects to where it saw us, the NAT's outside address,
    // where nothing listens.
    let listen = reverse(&lab, &[&["--reverse-mode", "listen"][..], &flow].concat());
    assert_eq!(listen.code(), Some(1), "{}", listen.stderr);
    assert!(
        listen
            .stderr
            .contains("cannot reach a dualperf receiver at 198.18.2.1:"),
        "{}",
        listen.stderr
    );

    for (mode, proto) in [
        ("callback", "--udp"),
        ("callback", "--tcp"),
        // The default: the agent offers callback mode, so it is taken.
        ("auto", "--udp"),
    ] {
        let what = format!("{mode} {proto}");
        let out = reverse(
            &lab,
            &[&["--reverse-mode", mode, proto][..], &flow].concat(),
        );
        out.assert_success();
        let rev = out.json();
        assert_whole(&rev, 200, &what);
        // The agent sent to us as it sees us: behind the NAT's address.
        let dest: std::net::SocketAddr = rev["dest"].as_str().unwrap().parse().unwrap();
        assert_eq!(dest.ip().to_string(), "198.18.2.1", "{what}");
    }
    agent.proc_interrupt_and_check();
}

/// Sets `nf_conntrack_udp_timeout` and `_stream` in the lab node's namespace (they
/// exist per namespace once its NAT rules are loaded).
fn udp_timeout(lab: &Lab, node: &str, seconds: u32) {
    for key in [
        "nf_conntrack_udp_timeout",
        "nf_conntrack_udp_timeout_stream",
    ] {
        let out = Command::new("ip")
            .args(["netns", "exec", &format!("dp-{}.{node}", lab.name)])
            .args(["sysctl", "-w", &format!("net.netfilter.{key}={seconds}")])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{key}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

/// A held reverse UDP flow of 100 packets, started `hold` after it is set up (its punch
/// answered), with our receiver's keepalive every `keepalive`.
fn held(lab: &Lab, keepalive: &str, hold: Duration) -> crate::support::Finished {
    let mut p = crate::support::Proc::spawn_piped(&[
        "lab",
        "exec",
        &lab.name,
        "sender",
        "--",
        crate::support::BIN,
        "send",
        "198.18.3.2",
        "--key",
        "k",
        "--json",
        "--reverse",
        "--reverse-mode",
        "callback",
        "--nat-keepalive",
        keepalive,
        "--wait-for-go",
        "--count",
        "100",
        "--rate",
        "1000pps",
    ]);
    p.wait_stderr_line(|l| l == "dualperf send: ready");
    std::thread::sleep(hold);
    p.write_stdin(b"go\n");
    p.finish()
}

#[test]
fn reverse_udp_survives_a_hold_longer_than_the_nat_udp_timeout() {
    if !privileged() {
        return;
    }
    let lab = Lab::up_shipped("nka", "nat44.toml");
    udp_timeout(&lab, "nat", 3);
    let agent = agent(&lab);
    // Held 6 s, twice the NAT's UDP timeout: with a keepalive every second the mapping
    // lives and every packet arrives.
    let out = held(&lab, "1s", Duration::from_secs(6));
    out.assert_success();
    assert_whole(&out.json(), 100, "keepalive 1s");
    // Without keepalives (one an hour), the mapping is gone when the flow starts: not
    // one packet arrives.
    let out = held(&lab, "1h", Duration::from_secs(6));
    let report = out.json();
    assert_eq!(
        u(&report["flows"][0], "/received/packets"),
        0,
        "{report:#}\n{}",
        out.stderr
    );
    agent.proc_interrupt_and_check();
}

/// Stopping the agent: its counters show nothing refused.
trait Stop {
    fn proc_interrupt_and_check(self);
}

impl Stop for crate::support::Proc {
    fn proc_interrupt_and_check(self) {
        self.interrupt();
        let done = self.finish();
        let lines = done.json_lines();
        let last = lines.last().expect("agent --json prints its counters");
        assert_eq!(last["type"], "counters", "{last}");
        assert_eq!(u(&last["data"], "/send_refusals"), 0, "{last}");
    }
}
