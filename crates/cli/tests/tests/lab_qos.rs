//! The QoS study's (Bouras et al.) DiffServ policy in the two-hop lab, for real: router r1 runs
//! `plans/qos/bouras-*.toml` on its egress onto the 10 Mbit/s bottleneck (traffic from
//! the sender's subnet marked EF, priority 20 % = 2 Mbit/s with a 50,000 B burst; best
//! effort in a queue of 75, with or without WRED). Foreground goes sender → receiver,
//! background bg-a → bg-b; both cross the bottleneck. Root only, like `lab.rs`.
//!
//! Figures from a run on the development VM (2 cores) are in the comments; the bounds
//! are what the mechanism guarantees, with room for a loaded CI machine.

use crate::lab::{privileged, Lab};
use crate::support::{Proc, TempDir};

const RECEIVER_V4: &str = "198.18.4.2";
const RECEIVER_V6: &str = "2001:2:0:4::2";
const BG_B_V4: &str = "198.18.5.2";
/// Background that saturates the bottleneck: 12 Mbit/s of UDP for 6 s.
const BG_UDP_12: &[&str] = &[
    "--udp",
    "--rate",
    "12mbit",
    "--size",
    "1400",
    "--duration",
    "6s",
];

fn policy(name: &str) -> String {
    format!("{}/../../plans/qos/{name}.toml", env!("CARGO_MANIFEST_DIR"))
}

/// A flow's (sent, received) packets from `dualperf send --json`.
fn counts(doc: &serde_json::Value, flow: usize) -> (f64, f64) {
    let f = &doc["flows"][flow];
    (
        f["sent"]["packets"].as_f64().unwrap(),
        f["received"]["packets"].as_f64().unwrap(),
    )
}

fn loss_percent((sent, received): (f64, f64)) -> f64 {
    100.0 * (1.0 - received / sent)
}

/// r1's per-class counters on its bottleneck interface, fresh (`lab status` asks the
/// router to rewrite them).
fn r1_classes(lab: &Lab) -> Vec<serde_json::Value> {
    let out = crate::support::run(&["lab", "status", &lab.name, "--json"]);
    out.assert_success();
    let doc = out.json();
    let r1 = doc["routers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["node"] == "r1")
        .unwrap()
        .clone();
    let iface = r1["stats"]["interfaces"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["name"] == "to-r2")
        .unwrap()
        .clone();
    assert_eq!(iface["qos"]["policy"], "bouras");
    crate::schema::assert_valid("router-stats", &r1["stats"]);
    iface["qos"]["classes"].as_array().unwrap().clone()
}

fn dropped(class: &serde_json::Value, reason: &str) -> u64 {
    class["dropped"][reason].as_u64().unwrap()
}

/// Background senders from bg-a to bg-b (a receiver there for `sessions` of them).
fn background(lab: &Lab, sessions: usize, flows: &[&[&str]]) -> (Proc, Vec<Proc>) {
    let n = sessions.to_string();
    let rx = lab.spawn("bg-b", &["recv", "--sessions", &n]);
    rx.wait_stderr_line(|l| l.contains("listening on"));
    let senders = flows
        .iter()
        .map(|args| {
            let mut all = vec!["send", BG_B_V4];
            all.extend_from_slice(args);
            all.push("--json");
            lab.spawn("bg-a", &all)
        })
        .collect();
    // Let the bottleneck's queue fill before the foreground starts.
    std::thread::sleep(std::time::Duration::from_millis(1500));
    (rx, senders)
}

/// A foreground flow sender → receiver, to completion.
fn foreground(lab: &Lab, dest: &str, args: &[&str]) -> serde_json::Value {
    let rx = lab.spawn("receiver", &["recv", "--sessions", "1"]);
    rx.wait_stderr_line(|l| l.contains("listening on"));
    let mut all = vec!["send", dest];
    all.extend_from_slice(args);
    all.push("--json");
    let out = lab.exec("sender", &all);
    out.assert_success();
    rx.finish();
    out.json()
}

#[test]
fn ef_loses_nearly_nothing_while_12_mbit_of_best_effort_udp_saturates_the_bottleneck() {
    if !privileged() {
        return;
    }
    let lab = Lab::up_with_qos("qef", None, Some(&policy("bouras-wred-30-50")));
    for dest in [RECEIVER_V4, RECEIVER_V6] {
        let (bg_rx, bg) = background(&lab, 1, &[BG_UDP_12]);
        let fg = foreground(
            &lab,
            dest,
            &[
                "--udp",
                "--rate",
                "1mbit",
                "--size",
                "200",
                "--duration",
                "3s",
            ],
        );
        let bg_doc = bg.into_iter().next().unwrap().finish();
        bg_doc.assert_success();
        bg_rx.finish();
        // Measured: EF 0 of 1875 lost (v4 and v6); background 24 % lost.
        let fg_loss = loss_percent(counts(&fg, 0));
        let bg_loss = loss_percent(counts(&bg_doc.json(), 0));
        eprintln!("{dest}: EF loss {fg_loss:.3} %, background loss {bg_loss:.2} %");
        assert!(fg_loss <= 0.2, "{dest}: EF lost {fg_loss} %");
        // 12 Mbit/s of 1442-byte frames into 10 Mbit/s less EF's 1 Mbit/s: ≥ 20 %.
        assert!(bg_loss > 15.0, "{dest}: background lost only {bg_loss} %");
    }
    let classes = r1_classes(&lab);
    let (ef, be) = (&classes[0], &classes[1]);
    assert_eq!(ef["name"], "foreground");
    assert_eq!(ef["marked_packets"], ef["offered_packets"]);
    for reason in ["priority_policer", "police", "queue_limit"] {
        assert_eq!(dropped(ef, reason), 0, "EF {reason}: {ef}");
    }
    // Best effort loses to WRED (the average crosses 30 and 50 packets).
    assert!(
        dropped(be, "wred_early") + dropped(be, "wred_forced") > 0,
        "{be}"
    );
    lab.down();
}

#[test]
fn ef_above_its_2_mbit_priority_is_policed_only_under_congestion() {
    if !privileged() {
        return;
    }
    let lab = Lab::up_with_qos("qpol", None, Some(&policy("bouras-llq")));
    let ef = [
        "--udp",
        "--rate",
        "3mbit",
        "--size",
        "1000",
        "--duration",
        "3s",
    ];
    // Alone, 3 Mbit/s of EF passes whole: the tx-ring always has room.
    let alone = loss_percent(counts(&foreground(&lab, RECEIVER_V4, &ef), 0));
    let policed_alone = dropped(&r1_classes(&lab)[0], "priority_policer");
    // Under 12 Mbit/s of background, the conditional policer holds EF to 2 Mbit/s of
    // frames plus its 50,000 B burst: of 1125 frames of 1042 B in 3 s, about
    // 3 × 2e6 / 8 / 1042 + 50,000 / 1042 ≈ 768 pass, 32 % are dropped.
    let (bg_rx, bg) = background(&lab, 1, &[BG_UDP_12]);
    let congested = loss_percent(counts(&foreground(&lab, RECEIVER_V4, &ef), 0));
    bg.into_iter().next().unwrap().finish().assert_success();
    bg_rx.finish();
    let policed = dropped(&r1_classes(&lab)[0], "priority_policer");
    // Measured: 0 % alone, 31.6 % congested.
    eprintln!("EF 3 Mbit/s: loss {alone:.2} % alone, {congested:.2} % under congestion");
    assert!(alone < 1.0, "alone: {alone} %");
    assert_eq!(policed_alone, 0);
    assert!(
        (22.0..42.0).contains(&congested),
        "congested: {congested} %"
    );
    assert!(policed > 0);
    lab.down();
}

#[test]
fn lowering_the_wred_thresholds_raises_best_effort_loss() {
    if !privileged() {
        return;
    }
    // Bouras et al. (QoS study) §4.4: background TCP (bulk) + UDP 5 Mbit/s, foreground EF 700 kbit/s, with
    // WRED at 55/75 (scenario 2) and at 10/20 (lowered further than the paper's 30/50:
    // with the kernel's CUBIC and sub-millisecond base RTT the average queue here sits
    // near 26 packets, so 30/50 seldom acts; see the issue note).
    let dir = TempDir::new("wred-low");
    let low = dir.path("bouras-wred-10-20.toml");
    std::fs::write(
        &low,
        std::fs::read_to_string(policy("bouras-wred-55-75"))
            .unwrap()
            .replace("min = 55, max = 75", "min = 10, max = 20"),
    )
    .unwrap();
    let mut results = Vec::new();
    for (tag, file) in [
        ("qw55", policy("bouras-wred-55-75")),
        ("qw10", low.display().to_string()),
    ] {
        let lab = Lab::up_with_qos(tag, None, Some(&file));
        let (bg_rx, bg) = background(
            &lab,
            2,
            &[
                &["--tcp", "--bulk", "--duration", "8s"],
                &[
                    "--udp",
                    "--rate",
                    "5mbit",
                    "--size",
                    "1400",
                    "--duration",
                    "8s",
                ],
            ],
        );
        let fg = foreground(
            &lab,
            RECEIVER_V4,
            &[
                "--udp",
                "--rate",
                "700kbit",
                "--size",
                "200",
                "--duration",
                "5s",
            ],
        );
        let docs: Vec<serde_json::Value> = bg
            .into_iter()
            .map(|p| {
                let f = p.finish();
                f.assert_success();
                f.json()
            })
            .collect();
        bg_rx.finish();
        let classes = r1_classes(&lab);
        let be = &classes[1];
        let be_drops =
            dropped(be, "wred_early") + dropped(be, "wred_forced") + dropped(be, "queue_limit");
        let be_offered = be["offered_packets"].as_f64().unwrap();
        let r = (
            loss_percent(counts(&fg, 0)),
            loss_percent(counts(&docs[1], 0)),
            100.0 * be_drops as f64 / be_offered,
        );
        eprintln!(
            "WRED {tag}: EF loss {:.2} %, background UDP loss {:.2} %, best-effort drops at r1 {:.2} %",
            r.0, r.1, r.2
        );
        results.push(r);
        lab.down();
    }
    // Measured here: 55/75 UDP 0.74 %, r1 BE 1.2 %; 10/20 UDP 7.8 %, r1 BE 8.1 %. EF 0
    // both. On CI's machine 55/75 once reached UDP 2.77 %, r1 BE 3.69 % (10/20: 7.87 %,
    // 8.08 %): how often CUBIC's sawtooth lifts the average past 55 varies with the host,
    // so the claim tested is "clearly more" (half again, plus half a point), not a ratio
    // of two.
    let (high, low) = (results[0], results[1]);
    assert!(high.0 <= 0.5 && low.0 <= 0.5, "EF {results:?}");
    assert!(low.1 > 1.5 * high.1 + 0.5, "UDP {results:?}");
    assert!(low.2 > 1.5 * high.2 + 0.5, "best effort at r1 {results:?}");
}

#[test]
fn a_plan_gives_each_point_its_policy_and_keeps_the_routers_counters_per_run() {
    if !privileged() {
        return;
    }
    let dir = TempDir::new("qos-plan");
    let name = format!("tqp-{}", std::process::id() % 100_000);
    std::fs::write(
        dir.path("topo.toml"),
        std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../plans/topologies/two-hop.toml"
        ))
        .unwrap()
        .replace("name = \"two-hop\"", &format!("name = \"{name}\"")),
    )
    .unwrap();
    std::fs::write(
        dir.path("llq.toml"),
        std::fs::read_to_string(policy("bouras-llq")).unwrap(),
    )
    .unwrap();
    let plan = dir.path("plan.toml");
    std::fs::write(
        &plan,
        r#"version = 1
name = "qos-per-point"
duration = "3s"
background_lead = "1500ms"
target = "lab:topo.toml"

[flow]
udp = true
rate = "1mbit"
size = 200
background = [{ udp = true, rate = "12mbit", size = 1400 }]

[factors]
ip = [4]

[[points]]
label = "best effort"

[[points]]
label = "llq"
qos = { r1 = "llq.toml" }
"#,
    )
    .unwrap();
    let results = dir.path("results");
    let out = crate::support::run(&[
        "run",
        crate::support::path_str(&plan),
        "--dir",
        crate::support::path_str(&results),
    ]);
    if out.code() != Some(0) {
        // Say why a run failed: its exit code and stderr are kept beside the results.
        for e in std::fs::read_dir(results.join("runs"))
            .into_iter()
            .flatten()
            .flatten()
        {
            if e.path().to_string_lossy().contains(".failed") {
                let r: serde_json::Value =
                    serde_json::from_slice(&std::fs::read(e.path()).unwrap()).unwrap();
                eprintln!(
                    "{}: exit {} stderr {}\nbackground {}",
                    e.path().display(),
                    r["exit_code"],
                    r["stderr"],
                    r["background"]
                );
            }
        }
    }
    out.assert_success();
    let record = |point: &str| -> serde_json::Value {
        serde_json::from_slice(
            &std::fs::read(results.join(format!("runs/rep001-{point}-ipv4.json"))).unwrap(),
        )
        .unwrap()
    };
    let (be, llq) = (record("best_effort"), record("llq"));
    // A lab run's record, with its routers' stats files, has the documented shape.
    for r in [&be, &llq] {
        crate::schema::assert_valid("run-record", r);
        for stats in r["routers"].as_object().unwrap().values() {
            crate::schema::assert_valid("router-stats", stats);
        }
    }
    let fg_loss = |r: &serde_json::Value| loss_percent(counts(&r["report"], 0));
    let bg_loss = |r: &serde_json::Value| loss_percent(counts(&r["background"][0], 0));
    let egress = |r: &serde_json::Value| {
        r["routers"]["r1"]["interfaces"]
            .as_array()
            .unwrap()
            .iter()
            .find(|i| i["name"] == "to-r2")
            .unwrap()
            .clone()
    };
    eprintln!(
        "best effort: EF loss {:.2} %, background {:.2} %; llq: EF {:.2} %, background {:.2} %",
        fg_loss(&be),
        bg_loss(&be),
        fg_loss(&llq),
        bg_loss(&llq)
    );
    eprintln!(
        "llq: r1's foreground class {}; the foreground's sender at worst {} ns late",
        egress(&llq)["qos"]["classes"][0],
        llq["report"]["flows"][0]["sent"]["schedule_error"]["max_ns"]
    );
    // Without a policy the foreground shares the tail-drop queue and loses there: on an
    // idle host about as the background does (5 % and more), less on a busy one (1.4 %
    // and 4.6 % beside a CPU hog, the background 22 %: how a full queue's room falls to
    // each flow depends on how the host spaces their frames); with the policy, nearly
    // nothing.
    assert!(fg_loss(&be) > 0.0, "{}", fg_loss(&be));
    assert!(fg_loss(&llq) <= 0.2, "{}", fg_loss(&llq));
    assert!(fg_loss(&be) > fg_loss(&llq), "{}", fg_loss(&be));
    assert!(bg_loss(&llq) > 15.0);
    // Each run's router counters are its own: the policy only in the llq run, and the
    // class counters add up to that run's frames.
    assert!(egress(&be)["qos"].is_null());
    let classes = egress(&llq)["qos"]["classes"].as_array().unwrap().clone();
    assert_eq!(classes[0]["name"], "foreground");
    let fg_sent = counts(&llq["report"], 0).0 as u64;
    let offered = classes[0]["offered_packets"].as_u64().unwrap();
    // The foreground's datagrams plus its control connection's few segments.
    assert!(
        (fg_sent..fg_sent + 100).contains(&offered),
        "{offered} vs {fg_sent}"
    );
    assert!(results.join("lab/llq.toml").exists());
}
