//! Across "hosts" in the namespace lab: `dualperf agent` in lab nodes, driven from
//! other nodes. Reverse and bidirectional flows between the sender and the receiver over
//! IPv4 and IPv6, UDP and TCP, through both routers; the clock offset of an agent whose
//! clock is faked off; a seed plan run from a controller node (`ctl`, on its own link to
//! r1) against agents in the sender, receiver and background nodes. Root only (under
//! `CI=true` a missing capability fails).

use serde_json::Value;

use crate::lab::{privileged, Lab};
use crate::support::{u, Proc};

const SENDER_V4: &str = "198.18.1.1";
const RECEIVER_V4: &str = "198.18.4.2";
const RECEIVER_V6: &str = "2001:2:0:4::2";

/// `dualperf agent` in `node` of `lab` with key `k`, allowed to send anywhere in the
/// lab's ranges.
fn agent(lab: &Lab, node: &str, extra: &[&str]) -> Proc {
    let mut args = vec![
        "agent",
        "--key",
        "k",
        "--allow",
        "198.18.0.0/15,2001:2::/48",
        "--handshake-timeout",
        "30s",
    ];
    args.extend_from_slice(extra);
    let p = lab.spawn(node, &args);
    p.wait_stderr_line(|l| l.starts_with("dualperf agent: listening on"));
    p
}

fn whole(report: &Value, packets: u64, what: &str) {
    let f = &report["flows"][0];
    assert_eq!(u(f, "/sent/packets"), packets, "{what}: {f:#}");
    assert_eq!(u(f, "/received/packets"), packets, "{what}: {f:#}");
}

#[test]
fn reverse_and_bidir_between_two_lab_hosts_over_both_families_and_transports() {
    if !privileged() {
        return;
    }
    let lab = Lab::up_shipped("rv", "two-hop.toml");
    let _agent = agent(&lab, "receiver", &[]);
    for dest in [RECEIVER_V4, RECEIVER_V6] {
        for proto in ["--udp", "--tcp"] {
            let what = format!("{dest} {proto}");
            let flow = [
                "--key",
                "k",
                proto,
                "--rate",
                "200pps",
                "--size",
                "200",
                "--count",
                "200",
                "--nodelay",
                "--json",
            ];
            let flow: Vec<&str> = flow
                .into_iter()
                .filter(|a| !(proto == "--udp" && *a == "--nodelay"))
                .collect();
            let mut args = vec!["send", dest, "--reverse"];
            args.extend(&flow);
            let out = lab.exec("sender", &args);
            out.assert_success();
            let rev = out.json();
            whole(&rev, 200, &format!("reverse {what}"));
            // The receiver's agent sent to the sender's address; one kernel, one clock.
            let to: std::net::SocketAddr = rev["dest"].as_str().unwrap().parse().unwrap();
            assert_eq!(to.is_ipv4(), dest.contains('.'), "{what}");
            if to.is_ipv4() {
                assert_eq!(to.ip().to_string(), SENDER_V4);
            }
            assert_eq!(rev["clock"]["same_clock"], true);
            // Two router hops on the way back: TTL / hop limit 64 − 2 on every datagram.
            if proto == "--udp" {
                let seen = &rev["flows"][0]["received"]["marking"]["hop_limit_seen"];
                assert_eq!(seen, &serde_json::json!({"62": 200}), "{what}");
            }

            let mut args = vec!["send", dest, "--bidir"];
            args.extend(&flow);
            let out = lab.exec("sender", &args);
            out.assert_success();
            let both = out.json();
            assert_eq!(both["errors"], serde_json::json!([]), "{what}");
            whole(&both["forward"], 200, &format!("bidir forward {what}"));
            whole(&both["reverse"], 200, &format!("bidir reverse {what}"));
        }
    }
}

/// The faked offset of the receiver's agent, ns (a time namespace cannot shift the
/// CLOCK_REALTIME one-way delays use; the agent's hidden flag shifts every wall stamp).
const OFFSET_NS: i64 = -2_500_000_000;

#[test]
fn the_offset_between_two_lab_hosts_is_found_within_its_bound() {
    if !privileged() {
        return;
    }
    let lab = Lab::up_shipped("ck", "two-hop.toml");
    let offset = OFFSET_NS.to_string();
    let _agent = agent(&lab, "receiver", &["--fake-clock-offset-ns", &offset]);
    for dest in [RECEIVER_V4, RECEIVER_V6] {
        let out = lab.exec("sender", &["clock", "--peer", dest, "--key", "k", "--json"]);
        out.assert_success();
        let doc = out.json();
        let o = &doc["offset"];
        let est = o["offset_ns"].as_i64().unwrap();
        let bound = u(o, "/bound_ns");
        eprintln!("{dest}: injected {OFFSET_NS} ns, estimated {est} ± {bound} ns");
        assert!(
            (est - OFFSET_NS).unsigned_abs() <= bound,
            "{dest}: estimated {est} ± {bound} ns, injected {OFFSET_NS} ns"
        );
        // A one-way flow to it carries the same estimate in its report.
        let out = lab.exec(
            "sender",
            &[
                "send", dest, "--key", "k", "--count", "100", "--rate", "500pps", "--json",
            ],
        );
        out.assert_success();
        let c = &out.json()["clock"];
        let est = c["offset_ns"].as_i64().unwrap();
        assert!((est - OFFSET_NS).unsigned_abs() <= u(c, "/bound_ns"), "{c}");
    }
}

/// The two-hop topology with a controller host `ctl` on a link of its own to r1 (link 6:
/// ctl 198.18.6.1): the controller reaches every agent through the routers, and only
/// its control connections to the receiver side cross the bottleneck.
fn two_hop_with_controller() -> String {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../plans/topologies/two-hop.toml"
    ))
    .unwrap();
    format!(
        "{text}\n[[node]]\nname = \"ctl\"\nkind = \"host\"\n\n[[link]]\na = \"ctl\"\nb = \"r1\"\n"
    )
}

/// The H.323 study's (Bouras et al.) plan (`plans/bouras-h323.toml`) with its lab target swapped for the hosts
/// of the lab: the agents in its four host nodes.
fn seed_plan(target: &str) -> String {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../plans/bouras-h323.toml"
    ))
    .unwrap();
    let lab_target = "target = \"lab:topologies/two-hop.toml\"";
    assert!(text.contains(lab_target));
    let mut plan = text.replace(lab_target, &format!("target = \"{target}\""));
    if target == "hosts" {
        for (name, v4, v6) in [
            ("sender", "198.18.1.1", "2001:2:0:1::1"),
            ("receiver", "198.18.4.2", "2001:2:0:4::2"),
            ("bg-a", "198.18.2.1", "2001:2:0:2::1"),
            ("bg-b", "198.18.5.2", "2001:2:0:5::2"),
        ] {
            plan.push_str(&format!(
                "\n[hosts.{name}]\nagent4 = \"{v4}\"\nagent6 = \"{v6}\"\nkey_env = \"DUALPERF_PLAN_KEY\"\n"
            ));
        }
    }
    plan
}

/// What `report --json DIR` shows: each table's title, columns and row labels, and
/// which figures exist (point, metric, flow, router, and whether IPv4 and IPv6 have one).
/// Units are left out: the report picks each table's unit from the size of its figures
/// (a jitter of 0.9 ms shows in µs, one of 1.1 ms in ms), and two runs of one path may
/// fall on either side.
pub(crate) type Shape = (
    Vec<(String, String, Vec<String>)>,
    Vec<(String, String, u64, String, bool, bool)>,
);

pub(crate) fn report_shape(dir: &std::path::Path) -> Shape {
    let out = crate::support::run(&["report", crate::support::path_str(dir), "--json"]);
    out.assert_success();
    let doc = out.json();
    let tables = doc["tables"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            let labels = t["rows"]
                .as_array()
                .unwrap()
                .iter()
                .map(|r| r["label"].as_str().unwrap().to_owned())
                .collect();
            let title = t["title"].as_str().unwrap();
            let metrics = t["metrics"]
                .as_array()
                .unwrap()
                .iter()
                .map(|m| m["metric"].as_str().unwrap())
                .collect::<Vec<_>>()
                .join(",");
            (
                title.split(" (").next().unwrap().to_owned(),
                metrics,
                labels,
            )
        })
        .collect();
    let mut figures: Vec<_> = doc["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["point"].as_str().unwrap().to_owned(),
                r["metric"].to_string(),
                r["flow"].as_u64().unwrap_or(0),
                r["router"].to_string(),
                !r["ipv4"].is_null(),
                !r["ipv6"].is_null(),
            )
        })
        .collect();
    figures.sort();
    (tables, figures)
}

/// Print each failed run's record (its error and stderr) of run directory `dir`, before
/// the directory goes with the test's temporary one.
fn say_why_runs_failed(ran: &crate::support::Finished, dir: &std::path::Path) {
    if ran.status.success() {
        return;
    }
    for entry in std::fs::read_dir(dir.join("runs"))
        .into_iter()
        .flatten()
        .flatten()
    {
        let name = entry.file_name().to_string_lossy().into_owned();
        let Ok(rec) =
            serde_json::from_slice::<Value>(&std::fs::read(entry.path()).unwrap_or_default())
        else {
            continue;
        };
        if name.ends_with(".failed.json") || rec["exit_code"] != 0 {
            eprintln!(
                "{name}: exit {}\nstderr: {}\nbackground: {}",
                rec["exit_code"], rec["stderr"], rec["background"]
            );
        }
    }
}

#[test]
fn a_seed_plan_runs_across_agents_from_a_controller_node_with_the_lab_runs_tables() {
    if !privileged() {
        return;
    }
    let dir = crate::support::TempDir::new("hosts-plan");
    let lab = Lab::up_text("hp", &two_hop_with_controller());
    let _agents: Vec<Proc> = ["sender", "receiver", "bg-a", "bg-b"]
        .into_iter()
        .map(|n| agent(&lab, n, &[]))
        .collect();
    let plan = dir.path("plan.toml");
    std::fs::write(&plan, seed_plan("hosts")).unwrap();
    let out = dir.path("across");
    let bin = crate::support::BIN;
    // `dualperf run PLAN --quick --dir OUT [extra]` in the controller node, the agents'
    // key in the environment.
    let run_plan = |extra: &[&str]| {
        let mut args = vec!["lab", "exec", &lab.name, "ctl", "--", bin, "run"];
        args.extend([crate::support::path_str(&plan), "--quick", "--dir"]);
        args.push(crate::support::path_str(&out));
        args.extend(extra);
        Proc::spawn_with_env(&args, &[("DUALPERF_PLAN_KEY", "k")])
            .finish_within(std::time::Duration::from_secs(600))
    };
    let ran = run_plan(&[]);
    say_why_runs_failed(&ran, &out);
    ran.assert_success();
    // Every run in the one run directory: 4 points × 2 families.
    let runs = std::fs::read_dir(out.join("runs")).unwrap().count();
    assert_eq!(runs, 8, "{}", ran.stderr);
    for entry in std::fs::read_dir(out.join("runs")).unwrap() {
        let rec: Value =
            serde_json::from_slice(&std::fs::read(entry.unwrap().path()).unwrap()).unwrap();
        let argv: Vec<&str> = rec["argv"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(Value::as_str)
            .collect();
        assert!(argv.contains(&"--from"), "{argv:?}");
        assert!(!argv.contains(&"k"), "no key in the record: {argv:?}");
        assert!(u(&rec, "/report/flows/0/received/packets") > 0);
        // Each run's delay distribution came back through the agents, for the CDFs.
        assert_eq!(
            rec["report"]["flows"][0]["delay_cdf_ns"]
                .as_array()
                .map(Vec::len),
            Some(101),
            "{argv:?}"
        );
        // One kernel in the lab: every session found one clock.
        assert_eq!(rec["report"]["clock"]["same_clock"], true);
    }
    // Each host's description and clock.
    for host in ["sender", "receiver", "bg-a", "bg-b"] {
        let doc: Value = serde_json::from_slice(
            &std::fs::read(out.join(format!("hosts/{host}/host.json"))).unwrap(),
        )
        .unwrap();
        assert!(doc["remote"]["hostname"].is_string(), "{host}: {doc:#}");
        assert_eq!(doc["offset"]["same_clock"], true, "{host}");
    }
    // Resume finds every run stored and measures none (it asks the hosts again); export
    // lists the plan's runs from the index.
    let resumed = run_plan(&["--resume"]);
    resumed.assert_success();
    assert_eq!(std::fs::read_dir(out.join("runs")).unwrap().count(), 8);
    let csv = crate::support::run(&["export", crate::support::path_str(&out)]);
    csv.assert_success();
    assert_eq!(csv.stdout.lines().count(), 1 + 8, "{}", csv.stdout);
    let text = crate::support::run(&["report", crate::support::path_str(&out)]);
    text.assert_success();
    for title in [
        "Experiment 1.",
        "Experiments 1–4. RTP audio",
        "Experiments 1–4. RTP video",
    ] {
        assert!(text.stdout.contains(title), "{title} in:\n{}", text.stdout);
    }
    drop(_agents);
    drop(lab);

    // The same plan in one process against its own lab: the same tables, row for row
    // and column for column, with values in the same cells.
    let name = format!("tsp-{}", std::process::id() % 100_000);
    let mut topo = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../plans/topologies/two-hop.toml"
    ))
    .unwrap();
    topo = topo.replacen("name = \"two-hop\"", &format!("name = \"{name}\""), 1);
    std::fs::write(dir.path("lab.toml"), topo).unwrap();
    let plan = dir.path("single.toml");
    std::fs::write(&plan, seed_plan("lab:lab.toml")).unwrap();
    let single = dir.path("single");
    let running = Proc::spawn(&[
        "run",
        crate::support::path_str(&plan),
        "--quick",
        "--dir",
        crate::support::path_str(&single),
    ]);
    // The plan builds a lab of its own, named after the topology and its pid.
    let _down = scopeguard(&::lab::netlab::job_name(&name, running.pid() as u32));
    let ran = running.finish_within(std::time::Duration::from_secs(600));
    say_why_runs_failed(&ran, &single);
    ran.assert_success();
    let across = report_shape(&out);
    let mut one = report_shape(&single);
    // The one difference: a lab run also reads its routers' counters; across hosts the
    // routers are the network's, not the runner's.
    one.1.retain(|f| {
        let router = f.3 != "null";
        assert!(!router || f.1 == "\"cpu_per_frame\"", "{f:?}");
        !router
    });
    let declared: Vec<&str> = one.0.iter().take(3).map(|t| t.0.as_str()).collect();
    assert!(
        declared.iter().all(|t| t.starts_with("Experiment")),
        "the seed plan's three tables first: {declared:?}"
    );
    assert_eq!(across, one);
}

/// Takes the single-process run's lab down even when the test fails.
fn scopeguard(name: &str) -> impl Drop {
    struct Down(String);
    impl Drop for Down {
        fn drop(&mut self) {
            let _ = std::process::Command::new(crate::support::BIN)
                .args(["lab", "down", &self.0])
                .output();
        }
    }
    Down(name.to_owned())
}
