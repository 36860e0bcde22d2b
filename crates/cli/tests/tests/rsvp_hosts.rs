//! `send --reserve`: RSVP between the hosts (RFC 2205). Usage errors need nothing; the
//! loopback runs need root for the raw sockets (skipped otherwise, unless CI=true). On
//! loopback RSVP works host to host: the sender's Path goes straight to the receiver,
//! whose Resv comes straight back (the sender is its previous hop).

use serde_json::Value;

use crate::support::{send, Receiver};

/// Root (CAP_NET_RAW for the raw RSVP sockets); under CI=true it must be.
fn root() -> bool {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } == 0 {
        return true;
    }
    assert!(
        std::env::var("CI").as_deref() != Ok("true"),
        "under CI=true this test must run: RSVP's raw sockets need root"
    );
    eprintln!("skipped: RSVP's raw sockets need root (CAP_NET_RAW)");
    false
}

/// `send` to port 9 where nothing listens: a usage error (exit 2) before connecting.
fn usage_error(dest: &str, args: &[&str]) -> String {
    let out = send(dest, 9, args);
    assert_eq!(
        out.code(),
        Some(2),
        "send {dest} {args:?}; stderr: {}",
        out.stderr
    );
    assert!(out.stdout.is_empty(), "no report: {}", out.stdout);
    out.stderr
}

#[test]
fn reserve_refuses_tcp_flows_unknown_services_and_flow_labels_on_ipv4() {
    let e = usage_error("::1", &["--tcp", "--reserve", "controlled-load"]);
    assert!(
        e.contains("--reserve reserves UDP flows only: flow 0 (flow 0) is TCP"),
        "{e}"
    );
    let e = usage_error("::1", &["--reserve", "best-effort"]);
    assert!(
        e.contains("invalid value 'best-effort' for '--reserve <SERVICE>'"),
        "{e}"
    );
    assert!(
        e.contains("[possible values: controlled-load, guaranteed]"),
        "{e}"
    );
    let e = usage_error(
        "127.0.0.1",
        &["--reserve", "guaranteed", "--reserve-filter", "flow-label"],
    );
    assert!(e.contains("--reserve-filter flow-label is IPv6's"), "{e}");
    let e = usage_error("::1", &["--reserve-refresh", "1s"]);
    assert!(e.contains("--reserve <SERVICE>"), "{e}");
    let e = usage_error("::1", &["--reserve", "guaranteed", "--reverse"]);
    assert!(e.contains("cannot be used with"), "{e}");
}

/// One 2 s UDP flow of 100 packets/s of 200 bytes from `send --reserve controlled-load`
/// (R = 200 ms) to a receiver at `dest`: its report's flow.
fn reserved_flow(dest: &str, recv: &Receiver, extra: &[&str]) -> Value {
    let mut args = vec![
        "--rate",
        "100pps",
        "--size",
        "200",
        "--duration",
        "2s",
        "--reserve",
        "controlled-load",
        "--reserve-refresh",
        "200ms",
        "--json",
    ];
    args.extend_from_slice(extra);
    let out = send(dest, recv.port, &args);
    out.assert_success();
    out.json()["flows"][0].clone()
}

/// What every reserved loopback flow reports: reserved, set up, refreshed, confirmed at
/// the receiver; `ip_bytes` per packet (200 bytes of payload in UDP in IPv4 or IPv6).
fn check_reserved(flow: &Value, filter: &str, ip_bytes: u64) {
    let r = &flow["reservation"];
    assert_eq!(r["state"], "reserved", "{r}");
    assert_eq!(r["service"], "controlled-load");
    assert_eq!(r["style"], "FF");
    assert_eq!(r["filter"], filter);
    assert_eq!(r["refused"], Value::Null);
    assert_eq!(
        r["rate_bytes_per_s"].as_f64(),
        Some((100 * ip_bytes) as f64)
    );
    assert_eq!(r["burst_bytes"].as_u64(), Some(ip_bytes));
    assert!(r["setup_ns"].as_u64().is_some_and(|s| s > 0), "{r}");
    // R = 200 ms, each refresh within 100-300 ms: at least one in 2 s however busy.
    assert!(r["refreshes_sent"].as_u64().is_some_and(|n| n >= 1), "{r}");
    assert!(r["resv_received"].as_u64().is_some_and(|n| n >= 1), "{r}");
    assert_eq!(r["confirmed"], true, "{r}");
    assert!(
        r["resv_sent_by_receiver"].as_u64().is_some_and(|n| n >= 1),
        "{r}"
    );
    assert_eq!(r.get("error"), None, "{r}");
    assert_eq!(flow["received"]["packets"].as_u64(), Some(200));
}

#[test]
fn a_reserved_flow_to_a_receiver_on_loopback_is_reserved_over_ipv4_and_ipv6() {
    if !root() {
        return;
    }
    let recv = Receiver::start(&["--sessions", "2", "--json"]);
    let v4 = reserved_flow("127.0.0.1", &recv, &[]);
    check_reserved(&v4, "5-tuple", 228);
    // The flows start once the Resv is back (within 10 s, however busy the host).
    let v6 = reserved_flow("::1", &recv, &["--reserve-wait", "10s"]);
    check_reserved(&v6, "flow-label", 248);
    // The flow-label filter gave the flow an explicit label, which it sent with.
    let label = v6["spec"]["marking"]["flow_label"].as_u64().unwrap();
    assert!((1..0x80000).contains(&label), "{label:#x}");
    recv.finish().finished.assert_success();
}

/// A receiver run without CAP_NET_RAW, killed when the test ends however it ends.
struct Unprivileged(std::process::Child);

impl Drop for Unprivileged {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn a_receiver_without_cap_net_raw_says_so_and_the_flow_runs_unreserved() {
    use std::io::BufRead;
    use std::process::{Command, Stdio};
    if !root() {
        return;
    }
    // Root without CAP_NET_RAW: setpriv drops it from the bounding and inheritable sets.
    let mut recv = Unprivileged(
        Command::new("setpriv")
            .args(["--bounding-set", "-net_raw", "--inh-caps", "-net_raw"])
            .args([env!("CARGO_BIN_EXE_dualperf"), "recv", "--port", "0"])
            .args(["--sessions", "1"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("setpriv (util-linux) runs dualperf recv"),
    );
    let stderr = recv.0.stderr.take().unwrap();
    let mut lines = std::io::BufReader::new(stderr).lines();
    let port: u16 = lines
        .by_ref()
        .map_while(Result::ok)
        .find_map(|l| {
            let rest = l.strip_prefix("dualperf recv: listening on [::]:")?;
            rest.split(' ').next()?.parse().ok()
        })
        .expect("the receiver says where it listens");
    let out = send(
        "127.0.0.1",
        port,
        &[
            "--rate",
            "100pps",
            "--size",
            "200",
            "--duration",
            "1s",
            "--reserve",
            "controlled-load",
            "--json",
        ],
    );
    out.assert_success();
    let flow = &out.json()["flows"][0];
    let r = &flow["reservation"];
    assert_eq!(r["state"], "pending", "{r}");
    assert_eq!(r["resv_received"].as_u64(), Some(0), "{r}");
    assert_eq!(r["resv_sent_by_receiver"].as_u64(), Some(0), "{r}");
    assert_eq!(r["confirmed"], false, "{r}");
    let error = r["error"].as_str().unwrap_or_default();
    assert!(
        error.starts_with("the receiver cannot signal RSVP: ") && error.contains("CAP_NET_RAW"),
        "{r}"
    );
    // Unreserved, but measured as ever.
    assert_eq!(flow["received"]["packets"].as_u64(), Some(100));
    assert!(recv.0.wait().unwrap().success());
}
