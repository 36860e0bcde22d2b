//! `dualperf compare HOST` on loopback: `localhost` (its loopback pair, RFC 6761) against
//! a `dualperf agent` this test starts (both directions, a run directory `report`
//! renders and `run --resume` finds complete), a `dualperf recv` (forward only, said),
//! `dualperf recv --stamp` and stamp-suite's reflector (STAMP sessions); `--v4/--v6`;
//! a literal of one family refused in one line; and the quick shape's estimate, from
//! the dry run (never a wall clock).

use std::process::{Command, Stdio};

use crate::support::{path_str, run, Proc, Receiver, TempDir};

/// A `dualperf agent` with key `k` on a free port.
fn agent() -> (Proc, u16) {
    let a = crate::agent::Agent::start(&[]);
    (a.proc, a.port)
}

/// `compare` with a one-point battery (UDP 64 B, no VoIP or games, 2 runs of 100 ms a family), `extra`
/// naming the far end, into `dir`, with the agent's key in DUALPERF_KEY.
fn compare(dir: &str, extra: &[&str]) -> crate::support::Finished {
    let mut args = vec![
        "compare",
        "--sizes",
        "64",
        "--protocols",
        "udp",
        "--no-voip",
        "--no-games",
        "--repeat",
        "2",
        "--duration",
        "100ms",
        "--dir",
        dir,
    ];
    args.extend_from_slice(extra);
    Proc::spawn_with_env(&args, &[("DUALPERF_KEY", "k")]).finish()
}

/// The ids of the runs a run directory holds, sorted.
fn runs(dir: &std::path::Path) -> Vec<String> {
    let mut ids: Vec<String> = std::fs::read_dir(dir.join("runs"))
        .unwrap()
        .filter_map(|e| {
            let name = e.unwrap().file_name().into_string().unwrap();
            name.strip_suffix(".json").map(str::to_owned)
        })
        .collect();
    ids.sort();
    ids
}

#[test]
fn compare_localhost_by_name_over_both_families() {
    let (agent, port) = agent();
    let tmp = TempDir::new("compare-host-agent");
    let dir = tmp.path("d");
    let p = port.to_string();
    let done = compare(path_str(&dir), &["localhost", "--port", &p]);
    done.assert_success();
    assert!(
        done.stderr.contains(&format!(
            "dualperf compare: localhost at 127.0.0.1 and ::1, port {port}: dualperf agent: both directions"
        )),
        "{}",
        done.stderr
    );
    // Each table in both directions, every run counted.
    for title in [
        "Throughput, here → localhost\n",
        "Throughput, localhost → here\n",
        "Jitter, localhost → here\n",
    ] {
        assert!(
            done.stdout.contains(title),
            "no {title:?} in:\n{}",
            done.stdout
        );
    }
    assert_eq!(
        runs(&dir),
        [
            "rep001-direction=forward,protocol=udp,rate=10000pps,size=64-ipv4",
            "rep001-direction=forward,protocol=udp,rate=10000pps,size=64-ipv6",
            "rep001-direction=reverse,protocol=udp,rate=10000pps,size=64-ipv4",
            "rep001-direction=reverse,protocol=udp,rate=10000pps,size=64-ipv6",
            "rep002-direction=forward,protocol=udp,rate=10000pps,size=64-ipv4",
            "rep002-direction=forward,protocol=udp,rate=10000pps,size=64-ipv6",
            "rep002-direction=reverse,protocol=udp,rate=10000pps,size=64-ipv4",
            "rep002-direction=reverse,protocol=udp,rate=10000pps,size=64-ipv6",
        ]
    );
    // A reverse run measured what the agent sent to us, to our address of its family.
    let rec: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(
            dir.join("runs/rep001-direction=reverse,protocol=udp,rate=10000pps,size=64-ipv6.json"),
        )
        .unwrap(),
    )
    .unwrap();
    assert!(
        rec["argv"]
            .as_array()
            .unwrap()
            .contains(&"--reverse".into()),
        "{rec}"
    );
    assert_eq!(rec["argv"][1], "::1");
    // The agent's report: it sent to us over IPv6, to our receiver's port, not its own;
    // a forward run's flows went to the agent's port.
    let dest = |id: &str| -> std::net::SocketAddr {
        let path = dir.join(format!("runs/{id}.json"));
        let rec: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        rec["report"]["dest"].as_str().unwrap().parse().unwrap()
    };
    let back = dest("rep001-direction=reverse,protocol=udp,rate=10000pps,size=64-ipv6");
    assert_eq!(back.ip().to_string(), "::1");
    assert_ne!(back.port(), port);
    let there = dest("rep001-direction=forward,protocol=udp,rate=10000pps,size=64-ipv4");
    assert_eq!(there, std::net::SocketAddr::from(([127, 0, 0, 1], port)));
    // The saved plan holds the literals and where the key comes from, never the key.
    let plan = std::fs::read_to_string(dir.join("plan.toml")).unwrap();
    for line in [
        "target = \"peer\"",
        "name = \"localhost\"",
        "v4 = \"127.0.0.1\"",
        "v6 = \"::1\"",
        "far_end = \"agent\"",
        "key_env = \"DUALPERF_KEY\"",
    ] {
        assert!(plan.contains(line), "no {line} in:\n{plan}");
    }
    assert!(!plan.contains("\"k\""), "{plan}");
    // The path's facts under the verdicts, over both families, kept as path.json.
    assert!(
        done.stdout
            .contains("Path to localhost (dualperf agent, both directions)"),
        "{}",
        done.stdout
    );
    let path: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("path.json")).unwrap()).unwrap();
    assert_eq!(path["host"], "localhost");
    assert_eq!(path["families"].as_array().unwrap().len(), 2, "{path}");
    assert!(dir.join("fit.json").is_file());
    // `report DIR` renders the same verdicts, and the path.
    let report = run(&["report", path_str(&dir)]);
    report.assert_success();
    assert!(
        report.stdout.contains("direction=reverse"),
        "{}",
        report.stdout
    );
    assert!(
        report.stdout.contains("Path to localhost"),
        "{}",
        report.stdout
    );
    // And `run DIR/plan.toml --resume` goes to the same addresses: nothing is missing.
    let resumed = Proc::spawn_with_env(
        &[
            "run",
            path_str(&dir.join("plan.toml")),
            "--dir",
            path_str(&dir),
            "--resume",
            "--repetitions",
            "2",
            "--duration",
            "100ms",
        ],
        &[("DUALPERF_KEY", "k")],
    )
    .finish();
    drop(agent);
    assert!(
        resumed
            .stderr
            .contains("0 runs measured, 8 already there, 0 with errors"),
        "{}",
        resumed.stderr
    );
}

#[test]
fn compare_against_recv_says_forward_only() {
    let recv = Receiver::start(&[]);
    let tmp = TempDir::new("compare-host-recv");
    let dir = tmp.path("d");
    let p = recv.port.to_string();
    // A name with its addresses given: the name is recorded, not looked up.
    let done = compare(
        path_str(&dir),
        &["far", "--v4", "127.0.0.1", "--v6", "::1", "--port", &p],
    );
    done.assert_success();
    assert!(
        done.stderr
            .contains("dualperf recv: forward only (here → there)"),
        "{}",
        done.stderr
    );
    assert!(
        done.stdout
            .contains("Forward only: far runs `dualperf recv`, which never sends"),
        "{}",
        done.stdout
    );
    assert!(!done.stdout.contains("→ here"), "{}", done.stdout);
    assert_eq!(runs(&dir).len(), 4);
    let plan = std::fs::read_to_string(dir.join("plan.toml")).unwrap();
    assert!(plan.contains("far_end = \"recv\""), "{plan}");
    assert!(plan.contains("name = \"far\""), "{plan}");
}

#[test]
fn compare_stamp_against_dualperfs_reflector() {
    let port = free_udp_port();
    let p = port.to_string();
    let reflector = Proc::spawn(&["recv", "--port", "0", "--stamp", "--stamp-port", &p]);
    reflector.wait_stderr_line(|l| l.contains("STAMP reflector on"));
    let tmp = TempDir::new("compare-host-stamp");
    let dir = tmp.path("d");
    let done = compare(path_str(&dir), &["localhost", "--stamp", "--port", &p]);
    drop(reflector);
    assert_stamp_battery(&done, &dir);
}

#[test]
fn compare_stamp_against_stamp_suites_reflector() {
    let Some(bin) = stamp_suite() else { return };
    let port = free_udp_port();
    let p = port.to_string();
    // It binds one address: one reflector per family, each killed on drop.
    let _reflectors: Vec<Killed> = ["127.0.0.1", "::1"]
        .into_iter()
        .map(|addr| {
            Killed(
                Command::new(&bin)
                    .args(["-i", "-S", addr, "-o", &p])
                    .stdout(Stdio::null())
                    .stderr(Stdio::null())
                    .spawn()
                    .expect("start stamp-suite"),
            )
        })
        .collect();
    std::thread::sleep(std::time::Duration::from_millis(500));
    let tmp = TempDir::new("compare-host-stamp-suite");
    let dir = tmp.path("d");
    let done = compare(path_str(&dir), &["localhost", "--stamp", "--port", &p]);
    assert_stamp_battery(&done, &dir);
}

/// A STAMP battery: its tables, STAMP sessions over both families, the offset said.
fn assert_stamp_battery(done: &crate::support::Finished, dir: &std::path::Path) {
    done.assert_success();
    assert!(
        done.stderr.contains("a STAMP Session-Reflector (RFC 8762)"),
        "{}",
        done.stderr
    );
    for title in ["Round-trip time, median\n", "One-way delay\n", "Jitter\n"] {
        assert!(
            done.stdout.contains(title),
            "no {title:?} in:\n{}",
            done.stdout
        );
    }
    assert!(
        done.stdout
            .contains("One-way delays are not corrected for the two clocks' offset"),
        "{}",
        done.stdout
    );
    assert_eq!(
        runs(dir),
        [
            "rep001-protocol=udp,rate=1000pps,size=64-ipv4",
            "rep001-protocol=udp,rate=1000pps,size=64-ipv6",
            "rep002-protocol=udp,rate=1000pps,size=64-ipv4",
            "rep002-protocol=udp,rate=1000pps,size=64-ipv6",
        ]
    );
    let rec: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(
            dir.join("runs/rep001-protocol=udp,rate=1000pps,size=64-ipv6.json"),
        )
        .unwrap(),
    )
    .unwrap();
    assert!(
        rec["argv"].as_array().unwrap().contains(&"--stamp".into()),
        "{rec}"
    );
    assert_eq!(rec["exit_code"], 0, "{rec}");
}

#[test]
fn a_literal_of_one_family_is_a_one_line_usage_error() {
    let tmp = TempDir::new("compare-host-one");
    let dir = tmp.path("d");
    for (host, want) in [
        ("127.0.0.1", "dualperf: error: 127.0.0.1 is one IPv4 address; compare needs both (or give --v4 ADDR --v6 ADDR)\n"),
        ("::1", "dualperf: error: ::1 is one IPv6 address; compare needs both (or give --v4 ADDR --v6 ADDR)\n"),
    ] {
        let done = compare(path_str(&dir), &[host]);
        assert_eq!(done.status.code(), Some(2), "{}", done.stderr);
        assert_eq!(done.stderr, want);
        assert!(!dir.exists(), "a refused compare leaves no directory");
    }
}

#[test]
fn compare_host_quick_dry_run_estimates_under_90_s() {
    // Nothing is asked of the far end in a dry run (an agent, both directions, assumed).
    let done = run(&["compare", "localhost", "--quick", "--dry-run"]);
    done.assert_success();
    let first = done.stdout.lines().next().unwrap();
    assert!(
        first.starts_with(
            "plan compare: 22 points × 2 families × 5 repetitions = 220 runs of 150 ms"
        ),
        "{first}"
    );
    let last = done.stdout.lines().last().unwrap();
    let secs: u64 = last
        .split_once(" (")
        .and_then(|(_, r)| r.split_once(" s)"))
        .and_then(|(n, _)| n.parse().ok())
        .unwrap_or_else(|| panic!("no estimate in {last:?}"));
    // 110 forward runs at 150 + 60 ms, 110 reverse ones at 150 + 350 ms, and the path's
    // facts: 4 capacity transfers of 1 s and 3 s of probes.
    assert_eq!(secs, 85, "{last}");
    assert!(secs < 90);
}

/// A free UDP port on loopback (bound, then released).
fn free_udp_port() -> u16 {
    std::net::UdpSocket::bind("[::]:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A child killed and reaped on drop.
struct Killed(std::process::Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// stamp-suite's binary, or `None` (skip; a failure under `CI=true`), as stamp.rs finds it.
fn stamp_suite() -> Option<String> {
    let home = std::env::var("HOME").unwrap_or_default();
    for cand in [
        "stamp-suite".to_owned(),
        format!("{home}/.cargo/bin/stamp-suite"),
    ] {
        let ok = Command::new(&cand)
            .arg("--version")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        if ok {
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

/// The two-hop lab with `dualperf agent` (key from a file) on its receiver: the lab,
/// the agent and the key file's directory, each removed on drop.
fn lab_with_agent(tag: &str) -> Option<(crate::lab::Lab, Proc, TempDir)> {
    if !crate::lab::privileged() {
        return None;
    }
    let lab = crate::lab::Lab::up_with_qos(tag, None, None);
    let tmp = TempDir::new(&format!("compare-host-{tag}"));
    std::fs::write(tmp.path("agent.key"), "lab-key\n").unwrap();
    let agent = lab.spawn(
        "receiver",
        &["agent", "--key-file", path_str(&tmp.path("agent.key"))],
    );
    agent.wait_stderr_line(|l| l.starts_with("dualperf agent: listening on"));
    Some((lab, agent, tmp))
}

/// The acceptance run: from the lab's sender, `compare receiver --quick` (the name from
/// the namespace's hosts file) against the agent on its receiver gives verdicts in both
/// directions with the path's facts, in a run directory `report` renders.
#[test]
fn compare_receiver_by_name_in_two_hop_gives_both_directions_and_path_facts() {
    let Some((lab, agent, tmp)) = lab_with_agent("cmphost") else {
        return;
    };
    let dir = tmp.path("d");
    let key = tmp.path("agent.key");
    // The quick battery is meant to take under 90 s; a busy machine gets more.
    let done = lab
        .spawn(
            "sender",
            &[
                "compare",
                "receiver",
                "--quick",
                "--key-file",
                path_str(&key),
                "--dir",
                path_str(&dir),
            ],
        )
        .finish_within(std::time::Duration::from_secs(600));
    drop(agent);
    done.assert_success();
    assert!(
        done.stderr.contains(
            "dualperf compare: receiver at 198.18.4.2 and 2001:2:0:4::2, port 4646: dualperf agent: both directions"
        ),
        "{}",
        done.stderr
    );
    for title in [
        "Throughput, here → receiver\n",
        "Throughput, receiver → here\n",
        "Round-trip time, median, receiver → here\n",
        "Path to receiver (dualperf agent, both directions)",
    ] {
        assert!(
            done.stdout.contains(title),
            "no {title:?} in:\n{}",
            done.stdout
        );
    }
    // 11 points (3 sizes × 2 protocols, 5 codecs) × 2 directions × 2 families × 5.
    assert_eq!(runs(&dir).len(), 220);
    let path: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("path.json")).unwrap()).unwrap();
    assert_eq!(path["host"], "receiver");
    assert_eq!(path["families"].as_array().unwrap().len(), 2, "{path}");
    let report = run(&["report", path_str(&dir)]);
    report.assert_success();
    assert!(
        report.stdout.contains("Path to receiver"),
        "{}",
        report.stdout
    );
}

/// A name the sender's hosts file gives only an A record: one line naming the missing
/// AAAA (and the A address), exit 2, nothing made.
#[test]
fn a_name_with_only_an_a_record_is_a_one_line_error_naming_aaaa() {
    let Some((lab, agent, tmp)) = lab_with_agent("cmpa") else {
        return;
    };
    let hosts = format!("/etc/netns/dp-{}.sender/hosts", lab.name);
    let mut text = std::fs::read_to_string(&hosts).expect("lab up writes the sender's hosts file");
    text.push_str("198.18.4.2\tonly4\n");
    std::fs::write(&hosts, text).unwrap();
    let dir = tmp.path("d");
    let done = lab.exec("sender", &["compare", "only4", "--dir", path_str(&dir)]);
    drop(agent);
    assert_eq!(done.status.code(), Some(2), "{}", done.stderr);
    assert_eq!(
        done.stderr,
        "dualperf: error: only4 has an A record (198.18.4.2) but no AAAA record; compare needs both (or give --v4 ADDR --v6 ADDR)\n"
    );
    assert!(!dir.exists());
}

/// From the lab's sender, `compare receiver --stamp` against dualperf's reflector, then
/// against stamp-suite's (one per family, when installed), on the receiver: STAMP runs
/// over both families with the delay tables.
#[test]
fn compare_receiver_stamp_in_two_hop_against_dualperfs_and_stamp_suites_reflectors() {
    if !crate::lab::privileged() {
        return;
    }
    let lab = crate::lab::Lab::up_with_qos("cmpstamp", None, None);
    let tmp = TempDir::new("compare-host-lab-stamp");
    let compare = |dir: &std::path::Path, port: &str| {
        lab.exec(
            "sender",
            &[
                "compare",
                "receiver",
                "--stamp",
                "--port",
                port,
                "--no-voip",
                "--repeat",
                "2",
                "--duration",
                "100ms",
                "--dir",
                path_str(dir),
            ],
        )
    };
    let ours = lab.spawn(
        "receiver",
        &["recv", "--port", "0", "--stamp", "--stamp-port", "8620"],
    );
    ours.wait_stderr_line(|l| l.contains("STAMP reflector on"));
    let done = compare(&tmp.path("ours"), "8620");
    drop(ours);
    done.assert_success();
    assert!(done.stdout.contains("One-way delay\n"), "{}", done.stdout);
    // 4 sizes, UDP only, no VoIP: 4 points × 2 families × 2.
    assert_eq!(runs(&tmp.path("ours")).len(), 16);
    let Some(bin) = stamp_suite() else { return };
    let ns = format!("dp-{}.receiver", lab.name);
    let _theirs: Vec<Killed> = ["198.18.4.2", "2001:2:0:4::2"]
        .into_iter()
        .map(|addr| {
            Killed(
                Command::new("ip")
                    .args(["netns", "exec", &ns, &bin, "-i", "-S", addr, "-o", "8621"])
                    .stdout(Stdio::null())
                    .stderr(Stdio::null())
                    .spawn()
                    .expect("start stamp-suite"),
            )
        })
        .collect();
    std::thread::sleep(std::time::Duration::from_millis(500));
    let done = compare(&tmp.path("theirs"), "8621");
    done.assert_success();
    assert!(done.stdout.contains("One-way delay\n"), "{}", done.stdout);
    assert_eq!(runs(&tmp.path("theirs")).len(), 16);
}

/// A hosts plan's `name`: looked up per family when the plan starts (its dry run shows
/// the addresses), and a name of one family stops it in one line naming the other.
#[test]
fn a_hosts_plan_looks_its_names_up_per_family() {
    let tmp = TempDir::new("compare-host-names");
    let plan = |receiver: &str| {
        format!(
            "version = 1\nname = \"named\"\nduration = \"1s\"\ntarget = \"hosts\"\n\n[flow]\nudp = true\n\n[hosts.sender]\nname = \"localhost\"\n\n[hosts.receiver]\nname = \"{receiver}\"\n"
        )
    };
    std::fs::write(tmp.path("p.toml"), plan("localhost")).unwrap();
    let done = run(&["run", path_str(&tmp.path("p.toml")), "--dry-run"]);
    done.assert_success();
    let sends: Vec<&str> = done
        .stdout
        .lines()
        .filter(|l| l.contains("dualperf send"))
        .collect();
    assert_eq!(sends.len(), 2, "{}", done.stdout);
    assert!(
        sends[0].contains("dualperf send --from 127.0.0.1:4646 127.0.0.1 --port 4646"),
        "{}",
        sends[0]
    );
    assert!(
        sends[1].contains("dualperf send --from [::1]:4646 ::1 --port 4646"),
        "{}",
        sends[1]
    );
    std::fs::write(tmp.path("p.toml"), plan("127.0.0.1")).unwrap();
    let done = run(&["run", path_str(&tmp.path("p.toml")), "--dry-run"]);
    assert_eq!(done.status.code(), Some(2), "{}", done.stderr);
    assert_eq!(
        done.stderr,
        "dualperf: error: host receiver: 127.0.0.1 is one IPv4 address; the plan measures both (or give agent4 and agent6)\n"
    );
}

/// Through the kernel's NAT44 (plans/topologies/nat44.toml: sender — nat — r1 —
/// receiver, the NAT masquerading IPv4 at random ports): `compare receiver` from the
/// inside measures both directions over both families, every run without an error, and
/// path.json reports the NAT on IPv4 and none on IPv6.
#[test]
fn compare_through_nat44_measures_both_directions_on_both_families_and_reports_the_nat() {
    if !crate::lab::privileged() {
        return;
    }
    let lab = crate::lab::Lab::up_shipped("cmpnat", "nat44.toml");
    let tmp = TempDir::new("compare-host-nat44");
    let key = tmp.path("agent.key");
    std::fs::write(&key, "lab-key\n").unwrap();
    let agent = lab.spawn("receiver", &["agent", "--key-file", path_str(&key)]);
    agent.wait_stderr_line(|l| l.starts_with("dualperf agent: listening on"));
    let dir = tmp.path("d");
    let done = lab
        .spawn(
            "sender",
            &[
                "compare",
                "receiver",
                "--key-file",
                path_str(&key),
                "--repeat",
                "2",
                "--duration",
                "100ms",
                "--sizes",
                "64",
                "--no-voip",
                "--no-games",
                "--dir",
                path_str(&dir),
            ],
        )
        .finish_within(std::time::Duration::from_secs(600));
    drop(agent);
    done.assert_success();
    for title in [
        "Throughput, here → receiver\n",
        "Throughput, receiver → here\n",
    ] {
        assert!(
            done.stdout.contains(title),
            "no {title:?} in:\n{}",
            done.stdout
        );
    }
    // UDP and TCP at 64 bytes × 2 directions × 2 families × 2 repetitions. What was sent
    // arrived, whichever way it went and whichever family; a run whose sender did not
    // get the CPU in its 100 ms sends nothing (measured again, then left out of the
    // verdicts: `fell_behind`), so each test over each family needs one whole run only.
    let ids = runs(&dir);
    assert_eq!(ids.len(), 16, "{ids:?}");
    let mut whole = std::collections::BTreeSet::new();
    for id in &ids {
        let text = std::fs::read_to_string(dir.join("runs").join(format!("{id}.json"))).unwrap();
        let record: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(record["exit_code"], 0, "{id}: {}", record["stderr"]);
        let flow = &record["report"]["flows"][0];
        let sent = flow["sent"]["packets"].as_u64().unwrap();
        let received = flow["received"]["packets"].as_u64().unwrap_or(0);
        assert!(
            sent == 0 || received > 0,
            "{id}: sent {sent}, received none"
        );
        if received > 0 {
            whole.insert(id.strip_prefix("rep00").unwrap()[2..].to_owned());
        }
    }
    assert_eq!(whole.len(), 8, "{whole:?}");
    let path: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("path.json")).unwrap()).unwrap();
    let nat: Vec<&str> = path["families"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            f["nat"]["measured"]["verdict"]
                .as_str()
                .unwrap_or("not measured")
        })
        .collect();
    assert_eq!(nat, ["address_and_port", "none"], "{path}");
    assert!(done.stdout.contains("NAT"), "{}", done.stdout);
}
