//! STAMP interop with an implementation nobody here wrote: stamp-suite (crates.io,
//! `cargo install stamp-suite --locked`), on loopback over IPv4 and IPv6, both
//! directions: its Session-Sender against `dualperf recv --stamp`, and `dualperf send
//! --stamp` against its Session-Reflector; stateless and stateful, open and
//! authenticated, with and without the Class of Service TLV. Counts and sequence
//! numbers are compared exactly; times by what holds on one clock (t1 ≤ t2 ≤ t3 ≤ t4).
//! Under `CI=true` a missing stamp-suite is a failure.

use std::process::{Command, Stdio};

use serde_json::Value;

use crate::support::{u, Proc};

/// A 32-byte HMAC key in hex.
const KEY: &str = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff";

/// stamp-suite's binary, or `None` (skip; a failure under `CI=true`).
fn stamp_suite() -> Option<String> {
    let home = std::env::var("HOME").unwrap_or_default();
    for cand in [
        "stamp-suite".to_owned(),
        format!("{home}/.cargo/bin/stamp-suite"),
    ] {
        if Command::new(&cand)
            .arg("--version")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
        {
            return Some(cand);
        }
    }
    assert!(
        std::env::var("CI").as_deref() != Ok("true"),
        "under CI=true stamp-suite must be installed (cargo install stamp-suite --locked)"
    );
    eprintln!("skipped: stamp-suite is not installed");
    None
}

/// A free UDP port on loopback (bound, then released).
fn free_port() -> u16 {
    std::net::UdpSocket::bind("[::]:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// One line of stamp-suite's per-packet output (`-R`): seq, TTL seen by the reflector,
/// the reflector's receive and send timestamps (raw NTP).
#[derive(Debug)]
struct Reply {
    seq: u64,
    rtt_ms: f64,
    ttl: u64,
    t2: u64,
    t3: u64,
}

fn replies(stderr: &str) -> Vec<Reply> {
    stderr
        .lines()
        .filter(|l| l.starts_with("seq="))
        .map(|l| {
            let field = |name: &str| {
                l.split_whitespace()
                    .find_map(|w| w.strip_prefix(name))
                    .unwrap_or_else(|| panic!("no {name} in {l}"))
                    .trim_end_matches("ms")
                    .to_owned()
            };
            Reply {
                seq: field("seq=").parse().unwrap(),
                rtt_ms: field("rtt=").parse().unwrap(),
                ttl: field("ttl=").parse().unwrap(),
                t2: field("reflector_recv_ts=").parse().unwrap(),
                t3: field("reflector_send_ts=").parse().unwrap(),
            }
        })
        .collect()
}

/// `dualperf recv --stamp` on a free reflector port with `extra` options.
fn reflector(extra: &[&str]) -> (Proc, u16) {
    let port = free_port();
    let p = port.to_string();
    let mut args = vec![
        "recv",
        "--port",
        "0",
        "--stamp",
        "--stamp-port",
        &p,
        "--json",
    ];
    args.extend_from_slice(extra);
    let proc = Proc::spawn(&args);
    proc.wait_stderr_line(|l| l.contains("STAMP reflector on"));
    (proc, port)
}

/// Its final counters.
fn stamp_counters(proc: Proc) -> Value {
    proc.interrupt();
    let done = proc.finish();
    let lines = done.json_lines();
    lines.last().unwrap()["data"]["stamp"].clone()
}

const N: u64 = 100;

#[test]
fn stamp_suites_sender_against_dualperfs_reflector() {
    let Some(ss) = stamp_suite() else { return };
    for (host, local) in [("127.0.0.1", "127.0.0.1"), ("::1", "::1")] {
        for (stateful, auth) in [(false, false), (true, false), (false, true), (true, true)] {
            let what = format!("{host} stateful={stateful} auth={auth}");
            let mut extra = Vec::new();
            if stateful {
                extra.push("--stamp-stateful");
            }
            if auth {
                extra.extend(["--stamp-key", KEY]);
            }
            let (rx, port) = reflector(&extra);
            let port = port.to_string();
            let mut args = vec![
                "-r",
                host,
                "-S",
                local,
                "-p",
                &port,
                "-c",
                "100",
                "-d",
                "2",
                "-L",
                "2",
                "-R",
                "--output-format",
                "json",
            ];
            if auth {
                args.extend(["-A", "A", "--hmac-key", KEY]);
            }
            let out = Command::new(&ss).args(&args).output().unwrap();
            let stdout = String::from_utf8_lossy(&out.stdout);
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert!(out.status.success(), "{what}: {stderr}");
            let summary: Value = serde_json::from_str(stdout.trim())
                .unwrap_or_else(|e| panic!("{what}: {e}: {stdout}"));
            assert_eq!(u(&summary, "/packets_sent"), N, "{what}");
            assert_eq!(u(&summary, "/packets_received"), N, "{what}: {summary}");
            let rs = replies(&stderr);
            let seqs: Vec<u64> = rs.iter().map(|r| r.seq).collect();
            assert_eq!(seqs, (0..N).collect::<Vec<_>>(), "{what}");
            for r in &rs {
                // Our reflector reports the TTL it received (stamp-suite sends 255 on
                // loopback), and stamps its send after its receive.
                assert_eq!(r.ttl, 255, "{what}: {r:?}");
                assert!(r.t3 >= r.t2, "{what}: {r:?}");
                assert!(r.rtt_ms > 0.0, "{what}: {r:?}");
            }
            if stateful {
                assert_eq!(
                    u(&summary, "/measurements/last_reflector_sequence"),
                    N - 1,
                    "{what}"
                );
            }
            let c = stamp_counters(rx);
            assert_eq!(u(&c, "/reflected"), N, "{what}: {c}");
            assert_eq!(
                u(&c, "/malformed") + u(&c, "/auth_failures"),
                0,
                "{what}: {c}"
            );
        }
    }
}

#[test]
fn a_wrong_key_gets_no_answer_and_is_counted() {
    let Some(ss) = stamp_suite() else { return };
    let (rx, port) = reflector(&["--stamp-key", KEY]);
    let port = port.to_string();
    let other = "ff112233445566778899aabbccddeeff00112233445566778899aabbccddeeff";
    let out = Command::new(&ss)
        .args([
            "-r",
            "127.0.0.1",
            "-S",
            "127.0.0.1",
            "-p",
            &port,
            "-c",
            "10",
            "-d",
            "5",
            "-L",
            "1",
        ])
        .args(["-A", "A", "--hmac-key", other, "--output-format", "json"])
        .output()
        .unwrap();
    let summary: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(u(&summary, "/packets_received"), 0, "{summary}");
    let c = stamp_counters(rx);
    assert_eq!(u(&c, "/auth_failures"), 10, "{c}");
    assert_eq!(u(&c, "/reflected"), 0, "{c}");
}

#[test]
fn stamp_suites_class_of_service_tlv_is_understood_and_reflected() {
    let Some(ss) = stamp_suite() else { return };
    for (host, local) in [("127.0.0.1", "127.0.0.1"), ("::1", "::1")] {
        let (rx, port) = reflector(&[]);
        let port = port.to_string();
        let out = Command::new(&ss)
            .args([
                "-r", host, "-S", local, "-p", &port, "-c", "20", "-d", "2", "-L", "2",
            ])
            .args(["--cos", "--dscp", "46", "--output-format", "json"])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let summary: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(u(&summary, "/packets_received"), 20, "{host}: {summary}");
        // Every reply carried the CoS TLV back, recognised (U clear), well formed.
        let v = &summary["measurements"]["tlv_validation"];
        assert_eq!(u(v, "/by_type/4/observed"), 20, "{host}: {v}");
        assert_eq!(u(v, "/flags/unrecognized"), 0, "{host}: {v}");
        assert_eq!(u(v, "/flags/malformed"), 0, "{host}: {v}");
        assert_eq!(u(&stamp_counters(rx), "/reflected"), 20);
    }
}

/// stamp-suite's Session-Reflector on a free port of `local`, with `extra` options.
fn their_reflector(ss: &str, local: &str, extra: &[&str]) -> (std::process::Child, u16) {
    let port = free_port();
    let child = Command::new(ss)
        .args(["-i", "-S", local, "-o", &port.to_string()])
        .args(extra)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // It binds at once; give it a moment to be there.
    std::thread::sleep(std::time::Duration::from_millis(300));
    (child, port)
}

#[test]
fn dualperfs_sender_against_stamp_suites_reflector() {
    let Some(ss) = stamp_suite() else { return };
    for (host, local) in [("127.0.0.1", "127.0.0.1"), ("::1", "::1")] {
        for (stateful, auth, cos) in [
            (false, false, false),
            (true, false, false),
            (false, true, false),
            (true, true, true),
            (false, false, true),
        ] {
            let what = format!("{host} stateful={stateful} auth={auth} cos={cos}");
            let mut theirs = Vec::new();
            if stateful {
                theirs.push("--stateful-reflector");
            }
            if auth {
                theirs.extend(["-A", "A", "--hmac-key", KEY]);
            }
            let (mut child, port) = their_reflector(&ss, local, &theirs);
            let port = port.to_string();
            let mut ours = vec![
                "send", host, "--port", &port, "--stamp", "--count", "100", "--rate", "200pps",
                "--size", "120", "--dscp", "AF41", "--json",
            ];
            if auth {
                ours.extend(["--stamp-auth", "--stamp-key", KEY]);
            }
            if cos {
                ours.push("--stamp-cos");
            }
            let out = crate::support::run(&ours);
            let _ = child.kill();
            let _ = child.wait();
            out.assert_success();
            let r = out.json();
            crate::schema::assert_valid("send", &r);
            let f = &r["flows"][0];
            assert_eq!(u(f, "/sent/packets"), N, "{what}");
            assert_eq!(u(f, "/rtt/packets"), N, "{what}: {f:#}");
            assert_eq!(u(f, "/rtt/loss/lost"), 0, "{what}");
            assert_eq!(u(f, "/stamp/replies"), N, "{what}");
            assert_eq!(u(f, "/stamp/round_trip_lost"), 0, "{what}");
            assert_eq!(
                u(f, "/stamp/malformed_replies") + u(f, "/stamp/unknown_replies"),
                0,
                "{what}"
            );
            // One clock on loopback: both one-way delays are ≥ 0 within the clock
            // estimate's bound, and the round trip is the two together minus nothing.
            let bound = u(&r, "/clock/bound_ns") as i64;
            let fwd_min = f["received"]["delay"]["min_ns"].as_i64().unwrap();
            let rev_min = f["stamp"]["reverse"]["delay"]["min_ns"].as_i64().unwrap();
            assert!(
                fwd_min >= -bound && rev_min >= -bound,
                "{what}: {fwd_min} {rev_min} ± {bound}"
            );
            if cos {
                // The reflector saw AF41 (DSCP 34), as the CoS TLV reports it.
                assert_eq!(
                    f["received"]["marking"]["dscp_seen"],
                    serde_json::json!({"34": N}),
                    "{what}: {}",
                    f["received"]["marking"]
                );
            }
        }
    }
}
