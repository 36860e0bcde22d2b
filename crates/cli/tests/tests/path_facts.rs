//! The path's facts per family (`crates/cli/src/facts.rs`, printed by the hidden test aid
//! `dualperf path-facts`, written by `compare HOST` as `path.json`), end to end: on
//! loopback against `recv` (forward only) and an agent (both directions), and in labs
//! the test builds: two routers and a 1,400-byte link (hops 2, DPLPMTUD finds 1400),
//! and the kernel's NAT44 (a NAT on IPv4 only, both directions measured).

use serde_json::Value;

use crate::lab::{privileged, Lab};
use crate::support::{run, Proc, Receiver};

/// `dualperf path-facts ARGS` here: its document, valid against its schema.
fn facts(args: &[&str]) -> Value {
    let mut all = vec!["path-facts"];
    all.extend_from_slice(args);
    let out = run(&all);
    out.assert_success();
    let doc = out.json();
    crate::schema::assert_valid("path", &doc);
    doc
}

/// A fact's value, failing with why it was not measured.
fn measured<'a>(fact: &'a Value, what: &str) -> &'a Value {
    fact.get("measured")
        .unwrap_or_else(|| panic!("{what} not measured: {fact}"))
}

/// Every measured direction's hops, path MTU (DPLPMTUD, the kernel agreeing), and
/// intact marking; `reverse`: whether the reverse direction was measured.
fn assert_directions(doc: &Value, hops: u64, pmtu: [u64; 2], reverse: bool) {
    let fams = doc["families"].as_array().unwrap();
    assert_eq!(fams.len(), 2, "{doc:#}");
    for (f, (family, mtu)) in fams.iter().zip([("ipv4", pmtu[0]), ("ipv6", pmtu[1])]) {
        assert_eq!(f["family"], family);
        for way in ["forward", "reverse"] {
            let d = &f[way];
            if way == "reverse" && !reverse {
                assert_eq!(
                    d["hops"]["not_measured"],
                    "the far end is dualperf recv: the forward direction only"
                );
                continue;
            }
            let what = format!("{family} {way}");
            let h = measured(&d["hops"], &what);
            assert_eq!(
                (&h["sent"], &h["hops"]),
                (&64.into(), &hops.into()),
                "{what}"
            );
            let p = measured(&d["pmtu"], &what);
            assert_eq!(p["bytes"], mtu, "{what}: {p}");
            assert_eq!(p["method"], "dplpmtud", "{what}");
            assert!(p.get("kernel_bytes").is_none(), "{what}: {p}");
            let m = measured(&d["marking"], &what);
            assert_eq!(m["dscp"]["verdict"], "intact", "{what}: {m}");
            assert_eq!(m["ecn"]["verdict"], "intact", "{what}: {m}");
            let label = if family == "ipv6" { "intact" } else { "" };
            assert_eq!(
                m["flow_label"]["verdict"].as_str().unwrap_or_default(),
                label,
                "{what}: {m}"
            );
        }
    }
}

fn nat_verdicts(doc: &Value) -> Vec<String> {
    doc["families"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            measured(&f["nat"], "nat")["verdict"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect()
}

#[test]
fn path_facts_against_a_loopback_recv_are_forward_only_no_hops_no_nat_loopbacks_mtu() {
    let rx = Receiver::start(&["--key", "k"]);
    let port = rx.port.to_string();
    let doc = facts(&["127.0.0.1", "::1", "--port", &port, "--key", "k"]);
    rx.proc.interrupt();
    assert_eq!(doc["far_end"], "recv");
    assert_directions(&doc, 0, [65_535, 65_536], false);
    assert_eq!(nat_verdicts(&doc), ["none", "none"]);
    for f in doc["families"].as_array().unwrap() {
        assert_eq!(measured(&f["clock"], "clock")["same_clock"], true);
        assert_eq!(
            f["forward"]["capacity"]["not_measured"],
            "no capacity transfer was asked for"
        );
    }
}

#[test]
fn path_facts_of_an_unreachable_far_end_say_why_at_once() {
    // A port nothing listens on: refused at once, and no session after it is tried.
    let port = std::net::TcpListener::bind("[::1]:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
        .to_string();
    let doc = facts(&["::1", "--port", &port, "--key", "k", "--far-end", "agent"]);
    let f = &doc["families"][0];
    let why = f["nat"]["not_measured"].as_str().unwrap();
    assert!(
        why.starts_with(&format!("cannot reach [::1]:{port}")),
        "{why}"
    );
    for fact in [&f["clock"], &f["forward"]["hops"], &f["reverse"]["pmtu"]] {
        assert_eq!(fact["not_measured"], why);
    }
}

/// An agent on a free port (`Proc`, its port).
fn agent(extra: &[&str]) -> (Proc, String) {
    let a = crate::agent::Agent::start(extra);
    (a.proc, a.port.to_string())
}

#[test]
fn path_facts_against_a_loopback_agent_measure_both_directions() {
    let (agent, port) = agent(&[]);
    let doc = facts(&[
        "127.0.0.1",
        "::1",
        "--port",
        &port,
        "--key",
        "k",
        "--far-end",
        "agent",
        "--capacity",
        "200ms",
    ]);
    drop(agent);
    assert_eq!(doc["far_end"], "agent");
    assert_directions(&doc, 0, [65_535, 65_536], true);
    for f in doc["families"].as_array().unwrap() {
        for way in ["forward", "reverse"] {
            let c = measured(&f[way]["capacity"], way);
            assert_eq!(c["how"], "tcp 0.2s");
            assert!(c["bps"].as_f64().unwrap() > 0.0, "{c}");
        }
    }
}

#[test]
fn path_facts_against_dualperfs_stamp_reflector_give_hops_and_marking_and_say_what_it_cannot() {
    let port = std::net::UdpSocket::bind("[::]:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
        .to_string();
    let reflector = Proc::spawn(&["recv", "--port", "0", "--stamp", "--stamp-port", &port]);
    reflector.wait_stderr_line(|l| l.contains("STAMP reflector on"));
    let doc = facts(&["127.0.0.1", "::1", "--port", &port, "--far-end", "stamp"]);
    drop(reflector);
    assert_eq!(doc["far_end"], "stamp");
    for f in doc["families"].as_array().unwrap() {
        // Forward: the Ses-Sender TTL it returns; back: its replies' TTL against an
        // inferred initial one.
        let fwd = measured(&f["forward"]["hops"], "forward");
        assert_eq!(
            (&fwd["hops"], &fwd["sent_inferred"]),
            (&0.into(), &false.into())
        );
        let rev = measured(&f["reverse"]["hops"], "reverse");
        assert_eq!(
            (&rev["hops"], &rev["sent_inferred"]),
            (&0.into(), &true.into())
        );
        let m = measured(&f["forward"]["marking"], "marking");
        assert_eq!(
            (&m["dscp"]["verdict"], &m["ecn"]["verdict"]),
            (&"intact".into(), &"intact".into())
        );
        assert!(m.get("flow_label").is_none(), "{m}");
        assert_eq!(
            f["nat"]["not_measured"],
            "not measurable with a STAMP reflector (it does not say whom it saw)"
        );
        assert!(f["forward"]["pmtu"]["not_measured"].is_string());
        assert!(f["clock"]["measured"]["bound_ns"].is_u64());
    }
}

/// The two-hop lab with its bottleneck's MTU at 1,400 bytes, an agent on `receiver`.
fn two_hop_1400() -> Lab {
    let text = crate::lab::two_hop_named("x");
    let bottleneck = "rate = \"10mbit\"\n";
    assert!(text.contains(bottleneck));
    Lab::up_text(
        "pf",
        &text.replace(bottleneck, &format!("{bottleneck}mtu = 1400\n")),
    )
}

#[test]
fn path_facts_in_a_two_hop_lab_count_two_routers_and_find_its_1400_byte_link() {
    if !privileged() {
        return;
    }
    let lab = two_hop_1400();
    let agent = lab.spawn("receiver", &["agent", "--key", "k"]);
    agent.wait_stderr_line(|l| l.starts_with("dualperf agent: listening on"));
    let out = lab.exec(
        "sender",
        &[
            "path-facts",
            "198.18.4.2",
            "2001:2:0:4::2",
            "--key",
            "k",
            "--far-end",
            "agent",
        ],
    );
    out.assert_success();
    let doc = out.json();
    // Each router decrements the TTL and hop limit; the bottleneck's routers send ICMP
    // "fragmentation needed" / "packet too big" for larger probes, so the kernel learns
    // 1400 too.
    assert_directions(&doc, 2, [1400, 1400], true);
    for f in doc["families"].as_array().unwrap() {
        let p = measured(&f["forward"]["pmtu"], "pmtu");
        assert_eq!(p["smallest_lost"], 1402, "{p}");
    }
    assert_eq!(nat_verdicts(&doc), ["none", "none"]);
    drop(agent);
    lab.down();
}

#[test]
fn path_facts_through_the_kernels_nat44_report_the_nat_on_ipv4_only() {
    if !privileged() {
        return;
    }
    let lab = Lab::up_shipped("pfn", "nat44.toml");
    let agent = lab.spawn("receiver", &["agent", "--key", "k"]);
    agent.wait_stderr_line(|l| l.starts_with("dualperf agent: listening on"));
    let out = lab.exec(
        "sender",
        &[
            "path-facts",
            "198.18.3.2",
            "2001:2:0:3::2",
            "--key",
            "k",
            "--far-end",
            "agent",
        ],
    );
    out.assert_success();
    let doc = out.json();
    // The masquerade maps the control connection's address and port at random.
    assert_eq!(nat_verdicts(&doc), ["address_and_port", "none"]);
    let nat = measured(&doc["families"][0]["nat"], "nat");
    assert!(
        nat["seen"].as_str().unwrap().starts_with("198.18.2.1:"),
        "{nat}"
    );
    assert!(
        nat["ours"].as_str().unwrap().starts_with("198.18.1.1:"),
        "{nat}"
    );
    // Two forwarding nodes (the NAT and r1) each way, on both families; IPv4's forward
    // flows are announced as translated (the receiver takes them from the NAT's port),
    // and its reverse comes back through the NAT in callback mode.
    for (family, way) in [
        (0, "forward"),
        (0, "reverse"),
        (1, "forward"),
        (1, "reverse"),
    ] {
        let d = &doc["families"][family][way];
        let what = format!("family {family} {way}");
        assert_eq!(measured(&d["hops"], &what)["hops"], 2, "{what}");
        assert_eq!(measured(&d["pmtu"], &what)["bytes"], 1500, "{what}");
        assert_eq!(measured(&d["marking"], &what)["dscp"]["verdict"], "intact");
    }
    drop(agent);
    lab.down();
}
