//! `dualperf portcheck`: the scanner through the binary (formats, filters, exit codes,
//! ignore files) and `--criteria` against real programs under test on loopback.

use std::path::Path;

use crate::support::{run, Receiver, TempDir};

fn fixture() -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../port/tests/fixtures/legacy")
        .display()
        .to_string()
}

#[test]
fn the_legacy_fixture_in_text_json_and_sarif_with_exit_codes() {
    let dir = fixture();
    let text = run(&["portcheck", &dir]);
    assert_eq!(
        text.code(),
        Some(1),
        "errors found → exit 1\n{}",
        text.stderr
    );
    assert!(text.stdout.contains("util.c:21:"), "{}", text.stdout);
    assert!(text
        .stdout
        .contains("error[gethostbyname]: gethostbyname() resolves IPv4 addresses only"));
    assert!(text.stdout.contains("= fix: getaddrinfo()"));
    assert!(
        text.stdout.contains("in 4 of 4 files scanned"),
        "{}",
        text.stdout
    );

    let json = run(&["portcheck", "--json", "--fail-on", "none", &dir]);
    assert_eq!(json.code(), Some(0));
    let j = json.json();
    crate::schema::assert_valid("portcheck", &j);
    assert_eq!(j["files_scanned"], 4);
    let n = j["finding_count"].as_u64().unwrap();
    assert!(n > 100, "{n}");
    let f = &j["findings"][0];
    for key in [
        "path",
        "line",
        "column",
        "rule",
        "severity",
        "why",
        "fix",
        "criterion",
        "snippet",
    ] {
        assert!(!f[key].is_null(), "{key} missing in {f}");
    }

    let errors = run(&["portcheck", "--json", "--min-severity", "error", &dir]).json();
    let m = errors["finding_count"].as_u64().unwrap();
    assert!(m > 0 && m < n);
    assert!(errors["findings"]
        .as_array()
        .unwrap()
        .iter()
        .all(|f| f["severity"] == "error"));

    let only = run(&["portcheck", "--json", "--rule", "inet_ntoa", &dir]).json();
    assert!(only["findings"]
        .as_array()
        .unwrap()
        .iter()
        .all(|f| f["rule"] == "inet_ntoa"));
    assert!(only["finding_count"].as_u64().unwrap() >= 5);

    let tmp = TempDir::new("portcheck-sarif");
    let out = tmp.path("out.sarif");
    let r = run(&[
        "portcheck",
        "--format",
        "sarif",
        "-o",
        out.to_str().unwrap(),
        &dir,
    ]);
    assert_eq!(r.code(), Some(1));
    assert!(r.stdout.is_empty());
    let s: serde_json::Value = serde_json::from_slice(&std::fs::read(&out).unwrap()).unwrap();
    assert_eq!(s["version"], "2.1.0");
    assert_eq!(s["runs"][0]["results"].as_array().unwrap().len() as u64, n);
}

#[test]
fn comments_strings_and_ignore_files_are_respected() {
    let tmp = TempDir::new("portcheck-ignore");
    std::fs::write(tmp.path(".gitignore"), "third_party/\n").unwrap();
    std::fs::create_dir_all(tmp.path("third_party")).unwrap();
    std::fs::write(tmp.path("third_party/old.c"), "h = gethostbyname(n);\n").unwrap();
    std::fs::write(
        tmp.path("clean.c"),
        "/* gethostbyname(n) was here */\nconst char *m = \"inet_ntoa failed\";\n// AF_INET\n",
    )
    .unwrap();
    std::fs::write(
        tmp.path("tool.py"),
        "# socket.gethostbyname\nprint('AF_INET')\n",
    )
    .unwrap();
    let root = tmp.path("").display().to_string();
    let clean = run(&["portcheck", "--json", &root]);
    assert_eq!(clean.code(), Some(0), "{}", clean.stdout);
    assert_eq!(clean.json()["finding_count"], 0);
    assert_eq!(clean.json()["files_scanned"], 2);
    let all = run(&["portcheck", "--json", "--no-ignore", &root]);
    assert_eq!(all.code(), Some(1));
    assert_eq!(all.json()["finding_count"], 1);
    assert_eq!(all.json()["findings"][0]["rule"], "gethostbyname");
}

#[test]
fn usage_mistakes_are_refused_with_exit_2() {
    for args in [
        vec!["portcheck", "--rule", "no_such_rule", "."],
        vec!["portcheck", "--lang", "cobol", "."],
        vec!["portcheck", "--fail-on", "sometimes", "."],
        vec!["portcheck", "/nonexistent/dualperf/src"],
        vec!["portcheck", ".", "--", "true"],
    ] {
        let r = run(&args);
        assert_eq!(r.code(), Some(2), "{args:?}: {}", r.stderr);
        assert!(r.stderr.contains("dualperf: error:"), "{}", r.stderr);
    }
    let rules = run(&["portcheck", "--list-rules", "--json"]);
    rules.assert_success();
    let list = rules.json();
    crate::schema::assert_valid("portcheck-rules", &list);
    assert!(list.as_array().unwrap().len() >= 25);
    assert!(run(&["portcheck", "--list-rules"])
        .stdout
        .contains("Criteria (Bouras et al., H.323 study):"));
}

fn criteria_of(doc: &serde_json::Value, n: usize) -> String {
    doc["criteria"][n - 1]["verdict"]
        .as_str()
        .unwrap()
        .to_string()
}

#[test]
fn criteria_for_a_dual_stack_server_and_an_ipv4_only_one() {
    let bin = env!("CARGO_BIN_EXE_dualperf");
    let dual = run(&[
        "portcheck",
        "--criteria",
        "--json",
        "--settle",
        "1s",
        "--",
        bin,
        "recv",
        "--port",
        "0",
    ]);
    dual.assert_success();
    let d = dual.json();
    crate::schema::assert_valid("portcheck-criteria", &d);
    let socks = d["runtime"]["sockets"].as_array().unwrap();
    assert!(
        socks
            .iter()
            .any(|s| s["proto"] == "tcp6" && s["listening"] == true),
        "{d}"
    );
    let probes = d["runtime"]["probes"].as_array().unwrap();
    assert!(probes.iter().any(|p| p["dest"].as_str().unwrap().starts_with("127.0.0.1:") && p["accepted"] == true), "{d}");
    assert!(
        probes
            .iter()
            .any(|p| p["dest"].as_str().unwrap().starts_with("[::1]:") && p["accepted"] == true),
        "{d}"
    );
    assert_eq!(criteria_of(&d, 1), "pass");
    assert_eq!(criteria_of(&d, 4), "pass");
    assert_eq!(criteria_of(&d, 6), "pass");

    let v4 = run(&[
        "portcheck",
        "--criteria",
        "--json",
        "--",
        bin,
        "recv",
        "--port",
        "0",
        "--bind",
        "127.0.0.1",
    ]);
    v4.assert_success();
    let v = v4.json();
    assert_eq!(criteria_of(&v, 1), "fail", "{v}");
    assert_eq!(criteria_of(&v, 3), "fail", "{v}");

    // Sources and a program together; the text checklist names every criterion.
    let both = run(&[
        "portcheck",
        "--criteria",
        &fixture(),
        "--",
        bin,
        "recv",
        "--port",
        "0",
    ]);
    both.assert_success();
    for n in 1..=8 {
        assert!(both.stdout.contains(&format!("] {n}. ")), "{}", both.stdout);
    }
    assert!(both.stdout.contains("gethostbyname ×"), "{}", both.stdout);
    // The sources alone, as JSON: the scan's share of the document.
    let sources = run(&["portcheck", "--criteria", "--json", &fixture()]);
    sources.assert_success();
    let s = sources.json();
    crate::schema::assert_valid("portcheck-criteria", &s);
    assert_eq!(s["sources"]["files_scanned"], 4, "{s}");
    assert_eq!(s["runtime"], serde_json::Value::Null, "{s}");
    let none = run(&["portcheck", "--criteria"]);
    assert_eq!(none.code(), Some(2));
}

#[test]
fn criteria_see_the_flow_label_a_program_leases() {
    let bin = env!("CARGO_BIN_EXE_dualperf");
    let rx = Receiver::start(&[]);
    // A label no earlier run left lingering in the table (leases linger 6 s).
    let label = 0x10000 + std::process::id() % 0xefff;
    let (port, label_arg) = (rx.port.to_string(), format!("{label:#x}"));
    let r = run(&[
        "portcheck",
        "--criteria",
        "--json",
        "--settle",
        "1500ms",
        "--",
        bin,
        "send",
        "::1",
        "-p",
        &port,
        "--udp",
        "--flow-label",
        &label_arg,
        "--rate",
        "100pps",
        "--duration",
        "4s",
    ]);
    r.assert_success();
    let d = r.json();
    let labels: Vec<&str> = d["runtime"]["flow_labels"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    assert!(
        labels.contains(&format!("{label:05X}").as_str()),
        "{labels:?} {d}"
    );
    assert_eq!(criteria_of(&d, 2), "pass", "{d}");
    drop(rx);
}

#[test]
fn one_finding_per_line_with_the_other_rules_listed() {
    let tmp = TempDir::new("portcheck-also");
    std::fs::write(
        tmp.path("partly.c"),
        "#define SAI struct sockaddr_in\nvoid f(void)\n{\n\tsin.sin_addr.s_addr = inet_addr(host); sin.sin_family = AF_INET;\n\tSAI *p;\n}\n",
    )
    .unwrap();
    let root = tmp.path("").display().to_string();
    let j = run(&["portcheck", "--json", "--fail-on", "none", &root]).json();
    let lines: Vec<u64> = j["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["line"].as_u64().unwrap())
        .collect();
    assert_eq!(lines, [1, 4, 5], "{j}");
    assert_eq!(j["findings"][1]["rule"], "inet_addr");
    assert_eq!(
        j["findings"][1]["also"],
        serde_json::json!(["sockaddr_in", "af_inet"])
    );
    let text = run(&["portcheck", "--fail-on", "none", &root]);
    assert!(
        text.stdout.contains("    = also: sockaddr_in, af_inet\n"),
        "{}",
        text.stdout
    );
    let sarif = run(&["portcheck", "--format", "sarif", "--fail-on", "none", &root]).json();
    let run0 = &sarif["runs"][0];
    assert_eq!(
        run0["results"][1]["properties"]["also"],
        serde_json::json!(["sockaddr_in", "af_inet"])
    );
    // The project's address when it has a real one; never a placeholder.
    match port::report::information_uri() {
        Some(uri) => assert_eq!(run0["tool"]["driver"]["informationUri"], uri),
        None => assert!(run0["tool"]["driver"].get("informationUri").is_none()),
    }
}
