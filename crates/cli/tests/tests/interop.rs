//! `dualperf interop` on loopback (and, as root, between two lab namespaces): seed
//! 000's 2×2 table observed with real sockets, literals, RFC 6724 order, Happy Eyeballs.

use serde_json::Value;

use crate::support::run;

fn cell<'a>(doc: &'a Value, proto: &str, client: &str, server: &str) -> &'a Value {
    doc["matrix"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["proto"] == proto && c["client"] == client && c["server"] == server)
        .unwrap_or_else(|| panic!("no {proto} {client} → {server} cell in {doc}"))
}

fn events(h: &Value) -> Vec<String> {
    h["timeline"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e.as_str().unwrap().to_string())
        .collect()
}

/// The table as Bouras et al. (H.323 study) draw it, with `v4`/`v6` the server's addresses and
/// `client_v4` the IPv4 address the client's packets come from.
fn check_matrix(doc: &Value, v4: &str, v6: &str, client_v4: &str) {
    for proto in ["tcp", "udp"] {
        let c = cell(doc, proto, "IPv4", "IPv4");
        assert_eq!(
            (c["ok"].as_bool(), c["server_saw"].as_str()),
            (Some(true), Some(client_v4)),
            "{c}"
        );
        // The dual-stack IPv6 server sees the IPv4 client as an IPv4-mapped address.
        let c = cell(doc, proto, "IPv4", "IPv6 dual-stack");
        assert_eq!(c["ok"], true, "{c}");
        assert_eq!(c["server_saw"], format!("::ffff:{client_v4}"), "{c}");
        let c = cell(doc, proto, "IPv6", "IPv6 dual-stack");
        assert_eq!(c["ok"], true, "{c}");
        assert!(
            !c["server_saw"].as_str().unwrap().starts_with("::ffff:"),
            "{c}"
        );
        // No IPv6 socket on the IPv4 server's port: refused (TCP RST, ICMPv6 for UDP).
        let c = cell(doc, proto, "IPv6", "IPv4");
        assert_eq!(c["ok"], false, "{c}");
        assert!(c["error"].as_str().unwrap().contains("refused"), "{c}");
        assert_eq!(
            c["dest"].as_str().unwrap(),
            format!(
                "[{v6}]:{}",
                c["dest"].as_str().unwrap().rsplit(':').next().unwrap()
            )
        );
        // …but an IPv6 socket reaches it through the mapped address.
        let c = cell(doc, proto, "IPv6 (mapped)", "IPv4");
        assert_eq!(
            (c["ok"].as_bool(), c["server_saw"].as_str()),
            (Some(true), Some(client_v4)),
            "{c}"
        );
        assert!(
            c["dest"]
                .as_str()
                .unwrap()
                .starts_with(&format!("[::ffff:{v4}]:")),
            "{c}"
        );
    }
    let c = cell(doc, "tcp", "IPv4", "IPv6-only (V6ONLY=1)");
    assert_eq!(c["ok"], false, "{c}");
}

fn check_eyeballs(doc: &Value, v4: &str, v6: &str) {
    let he = doc["happy_eyeballs"].as_array().unwrap();
    assert_eq!(he.len(), 3);
    let winner = |i: usize| he[i]["winner"].as_str().unwrap_or("none").to_string();
    assert!(
        winner(0).starts_with(&format!("[{v6}]:")),
        "both up: IPv6 first {}",
        he[0]
    );
    assert!(winner(1).starts_with(&format!("{v4}:")), "{}", he[1]);
    assert!(winner(2).starts_with(&format!("{v4}:")), "{}", he[2]);
    // Refused: the IPv4 attempt follows the IPv6 failure. Stalled: it starts without one
    // (the attempt delay ran out), and the stalled attempt is cancelled.
    let refused = events(&he[1]);
    let at = |ev: &[String], what: &str| ev.iter().position(|e| e.contains(what));
    assert!(at(&refused, "attempt 0 failed").is_some(), "{refused:?}");
    assert!(
        at(&refused, "attempt 0 failed") < at(&refused, "attempt 1 to"),
        "{refused:?}"
    );
    let stalled = events(&he[2]);
    assert!(!stalled.iter().any(|e| e.contains("failed")), "{stalled:?}");
    assert!(
        at(&stalled, "attempt 1 to").is_some() && at(&stalled, "attempt 0 cancelled").is_some(),
        "{stalled:?}"
    );
}

#[test]
fn loopback_shows_the_two_by_two_table_with_the_mapped_address() {
    let r = run(&["interop", "--json"]);
    r.assert_success();
    let doc = r.json();
    crate::schema::assert_valid("interop", &doc);
    check_matrix(&doc, "127.0.0.1", "::1", "127.0.0.1");
    check_eyeballs(&doc, "127.0.0.1", "::1");
    let lits = doc["literals"].as_array().unwrap();
    let lit = |prefix: &str| {
        lits.iter()
            .find(|l| l["input"].as_str().unwrap().starts_with(prefix))
            .unwrap()
    };
    assert_eq!(lit("[::1]:")["connected"], true);
    assert_eq!(lit("http://[::1]:")["connected"], true);
    assert_eq!(lit("[::ffff:127.0.0.1]:")["connected"], true);
    assert!(lit("::1:")["parsed"]["Err"].is_string(), "{}", lit("::1:"));
    assert_eq!(lit("[::1]:")["naive_split"][0], "[");
    let sel = &doc["address_selection"];
    assert_eq!(sel["answers_sorted"][0], "::1", "{sel}");
    // Text: the table, with the mapped address the server saw.
    let text = run(&["interop"]);
    text.assert_success();
    assert!(
        text.stdout.contains("server sees ::ffff:127.0.0.1"),
        "{}",
        text.stdout
    );
}

#[test]
fn between_two_lab_namespaces() {
    if !crate::lab::privileged() {
        return;
    }
    let lab = crate::lab::Lab::up_with_qos("iop", None, None);
    let r = run(&["interop", "--json", "--lab", &lab.name]);
    r.assert_success();
    let doc = r.json();
    let (v4, v6) = (
        doc["server_v4"].as_str().unwrap().to_string(),
        doc["server_v6"].as_str().unwrap().to_string(),
    );
    assert!(
        v4.starts_with("198.18.") || v4.starts_with("198.19."),
        "{v4}"
    );
    assert!(v6.starts_with("2001:2:"), "{v6}");
    let client_v4 = cell(&doc, "tcp", "IPv4", "IPv4")["server_saw"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        client_v4.starts_with("198.1") && client_v4 != v4,
        "{client_v4}"
    );
    check_matrix(&doc, &v4, &v6, &client_v4);
    check_eyeballs(&doc, &v4, &v6);
    lab.down();
}
