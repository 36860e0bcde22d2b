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
                "--size", "120", "--dscp", "AF41", "--json", "--cdf",
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
            // --cdf: the round trip's smallest value and percentiles 1 to 100, the
            // smallest being the round trip's minimum.
            let cdf: Vec<i64> = f["delay_cdf_ns"]
                .as_array()
                .unwrap_or_else(|| panic!("{what}: no delay_cdf_ns"))
                .iter()
                .map(|v| v.as_i64().unwrap())
                .collect();
            assert_eq!(cdf.len(), 101, "{what}");
            assert!(cdf.windows(2).all(|w| w[0] <= w[1]), "{what}: {cdf:?}");
            assert_eq!(Some(cdf[0]), f["rtt"]["delay"]["min_ns"].as_i64(), "{what}");
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

#[test]
fn a_lab_plan_measures_the_path_to_stamp_suites_reflector_as_to_a_dualperf_receiver() {
    if !crate::lab::privileged() {
        return;
    }
    let Some(ss) = stamp_suite() else { return };
    // stamp-suite by its full path: the runner starts it in the receiver's namespace,
    // once per receiver address (it binds one address of one family).
    let ss = String::from_utf8(
        Command::new("sh")
            .args(["-c", &format!("command -v {ss}")])
            .output()
            .unwrap()
            .stdout,
    )
    .unwrap()
    .trim()
    .to_owned();
    let dir = crate::support::TempDir::new("stamp-plan");
    let name = format!("tsm-{}", std::process::id() % 100_000);
    let topo = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../plans/topologies/two-hop.toml"
    ))
    .unwrap()
    .replacen("name = \"two-hop\"", &format!("name = \"{name}\""), 1);
    std::fs::write(dir.path("lab.toml"), topo).unwrap();
    let base = "version = 1\nname = \"path\"\nrepetitions = 1\nduration = \"1s\"\ntarget = \"lab:lab.toml\"\n\
                [flow]\nudp = true\nrate = \"200pps\"\nsize = 64\nmeter = \"rtt\"\n";
    let stamp = format!(
        "{base}[stamp]\nport = 8620\nreflectors = [[\"{ss}\", \"-i\", \"-S\", \"198.18.4.2\", \"-o\", \"8620\", \"--stateful-reflector\"], [\"{ss}\", \"-i\", \"-S\", \"2001:2:0:4::2\", \"-o\", \"8620\", \"--stateful-reflector\"]]\n"
    );
    struct Down(String);
    impl Drop for Down {
        fn drop(&mut self) {
            let _ = Command::new(crate::support::BIN)
                .args(["lab", "down", &self.0])
                .output();
        }
    }
    let mut shapes = Vec::new();
    for (file, text) in [("dualperf.toml", base.to_owned()), ("stamp.toml", stamp)] {
        let plan = dir.path(file);
        std::fs::write(&plan, text).unwrap();
        let out = dir.path(&format!("{file}.d"));
        let running = Proc::spawn(&[
            "run",
            crate::support::path_str(&plan),
            "--dir",
            crate::support::path_str(&out),
        ]);
        // The plan builds a lab of its own, named after the topology and its pid.
        let _down = Down(::lab::netlab::job_name(&name, running.pid() as u32));
        let ran = running.finish();
        ran.assert_success();
        for entry in std::fs::read_dir(out.join("runs")).unwrap() {
            let rec: Value =
                serde_json::from_slice(&std::fs::read(entry.unwrap().path()).unwrap()).unwrap();
            let f = &rec["report"]["flows"][0];
            assert_eq!(u(f, "/rtt/packets"), 200, "{file}: {f:#}");
            let argv: Vec<&str> = rec["argv"]
                .as_array()
                .unwrap()
                .iter()
                .filter_map(Value::as_str)
                .collect();
            assert_eq!(argv.contains(&"--stamp"), file == "stamp.toml", "{argv:?}");
            if file == "stamp.toml" {
                // Two routers each way: the reflector saw TTL 62, the sender 62 back.
                assert_eq!(
                    f["received"]["marking"]["hop_limit_seen"],
                    serde_json::json!({"62": 200})
                );
                assert_eq!(u(f, "/stamp/replies"), 200);
            }
        }
        shapes.push(crate::lab_hosts::report_shape(&out));
    }
    // The same tables and the same figures, whichever reflects the packets.
    assert_eq!(shapes[0], shapes[1]);
}
