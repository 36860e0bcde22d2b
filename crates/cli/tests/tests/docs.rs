//! The reference documents stay true (docs/plans.md, docs/topology.md, docs/qos.md,
//! docs/flows.md).
//!
//! - Their examples go through the real readers: each fenced `toml` block of plans.md
//!   and of flows.md is a plan `dualperf run --dry-run` takes (saved beside the shipped
//!   plans' `topologies/` and `qos/`, so a lab target and a point's QoS files resolve
//!   as in `plans/`), each of topology.md a topology `lab::topology` reads, each of
//!   qos.md a QoS file `router::qosconf` reads and resolves on a 10 Mbit/s link (or,
//!   with `[[interface]]`, a router configuration that `router::config` checks), and
//!   each flow file of flows.md (a `text` block whose first line is `# flow file`) one
//!   `dualperf send --flows` reads whole. A block whose first line is `# fragment` is
//!   part of a file and is skipped.
//! - README.md stays readable: no table cell over 40 words, every page of docs/ in its
//!   index, every command in its table (and in docs/commands.md), the main job and CI's
//!   test command first; ARCHITECTURE.md one page that names every crate. Every local
//!   link of these pages and of docs/ names a file that is there.
//! - Every key the code takes is named in its document as `` `key` ``. The lists come
//!   from the code itself: serde's error for an unknown key lists every field of a
//!   `deny_unknown_fields` struct (and for an unknown value every variant of an enum),
//!   the plan's other readers name theirs in their errors or in `lab::plan`'s key
//!   lists, the router configuration's JSON Schema its properties, and `dualperf send
//!   --help` the options.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use ::lab::plan::{Plan, BACKGROUND_KEYS, FLOW_TABLE_KEYS, POINT_KEYS};
use ::lab::topology::Topology;
use ::results::metric::Vocabulary;
use ::router::config::RouterConfig;
use ::router::qosconf::QosConfig;
use serde_json::Value;

use crate::support::{path_str, run, TempDir};

/// The key no format has: serde's error for it lists the keys each format does have.
const PROBE: &str = "zz_unknown";

/// The link rate QoS examples are resolved on (the two-hop lab's bottleneck).
const LINK_BPS: u64 = 10_000_000;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn read_doc(name: &str) -> String {
    let path = root().join("docs").join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// A fenced block of a document.
struct Block {
    /// Its info string (`toml`, `text`).
    lang: String,
    /// The document's line of its first line.
    line: usize,
    text: String,
}

/// Every fenced block of `doc` but those marked `# fragment`.
fn blocks(doc: &str) -> Vec<Block> {
    let mut out = Vec::new();
    let mut open: Option<Block> = None;
    for (n, line) in doc.lines().enumerate() {
        let fence = line.trim_start().strip_prefix("```");
        if let Some(block) = open.as_mut() {
            if fence.is_none() {
                block.text.push_str(line);
                block.text.push('\n');
                continue;
            }
            let block = open.take().expect("an open block");
            if block.text.lines().next().map(str::trim) != Some("# fragment") {
                out.push(block);
            }
        } else if let Some(lang) = fence {
            open = Some(Block {
                lang: lang.trim().to_owned(),
                line: n + 2,
                text: String::new(),
            });
        }
    }
    assert!(open.is_none(), "a code fence is never closed");
    out
}

fn toml_blocks(doc: &str) -> Vec<Block> {
    blocks(doc)
        .into_iter()
        .filter(|b| b.lang == "toml")
        .collect()
}

/// The fields serde lists in its error for [`PROBE`] ("unknown field `zz_unknown`,
/// expected one of `a`, `b`").
fn fields_in(message: &str) -> Vec<String> {
    let (_, listed) = message
        .split_once(&format!("`{PROBE}`"))
        .unwrap_or_else(|| panic!("not an error about an unknown field: {message}"));
    let fields: Vec<String> = listed
        .split('`')
        .skip(1)
        .step_by(2)
        .map(str::to_owned)
        .collect();
    assert!(!fields.is_empty(), "no fields listed: {message}");
    fields
}

/// The keys of `keys` that `doc` never writes as `` `key` `` (or, for a value,
/// `` `"key"` ``).
fn undocumented(doc: &str, keys: &BTreeSet<String>) -> Vec<String> {
    keys.iter()
        .filter(|k| !doc.contains(&format!("`{k}`")) && !doc.contains(&format!("`\"{k}\"`")))
        .cloned()
        .collect()
}

/// Every key of a topology: the top level's, `[[node]]`'s and `[[link]]`'s.
fn topology_keys() -> BTreeSet<String> {
    let mut keys = BTreeSet::new();
    for probe in [
        format!("version = 1\nname = \"x\"\n{PROBE} = 1\n"),
        format!("version = 1\nname = \"x\"\n[[node]]\n{PROBE} = 1\n"),
        format!("version = 1\nname = \"x\"\n[[link]]\n{PROBE} = 1\n"),
    ] {
        let e = Topology::parse(&probe).expect_err(&probe);
        keys.extend(fields_in(&e.message));
    }
    keys
}

/// Every key of a QoS file, table by table.
fn qos_keys() -> BTreeSet<String> {
    let policy = "version = 1\n[[policy_map]]\nname = \"p\"\n";
    let class = format!("{policy}[[policy_map.class]]\nname = \"class-default\"\n");
    let mut keys = BTreeSet::new();
    for probe in [
        format!("version = 1\n{PROBE} = 1\n"),
        format!("version = 1\n[[class_map]]\n{PROBE} = 1\n"),
        format!("version = 1\n[[policy_map]]\n{PROBE} = 1\n"),
        format!("{policy}[[policy_map.reservation]]\n{PROBE} = 1\n"),
        format!("{policy}[[policy_map.class]]\n{PROBE} = 1\n"),
        format!("{class}police = {{ {PROBE} = 1 }}\n"),
        format!("{class}random_detect = {{ {PROBE} = 1 }}\n"),
        format!("{class}random_detect = {{ dscp = [{{ {PROBE} = 1 }}] }}\n"),
        format!("version = 1\n[[service_policy]]\n{PROBE} = 1\n"),
    ] {
        let e = QosConfig::parse(&probe).expect_err(&probe);
        keys.extend(fields_in(&e.message));
    }
    keys
}

/// Every property name, `const` and `enum` string of a JSON Schema.
fn schema_names(v: &Value, out: &mut BTreeSet<String>) {
    match v {
        Value::Object(m) => {
            if let Some(Value::Object(props)) = m.get("properties") {
                out.extend(props.keys().cloned());
            }
            if let Some(Value::String(c)) = m.get("const") {
                out.insert(c.clone());
            }
            if let Some(Value::Array(e)) = m.get("enum") {
                out.extend(e.iter().filter_map(Value::as_str).map(str::to_owned));
            }
            m.values().for_each(|x| schema_names(x, out));
        }
        Value::Array(a) => a.iter().for_each(|x| schema_names(x, out)),
        _ => {}
    }
}

/// Every key of a router configuration (and the loss models' names).
fn router_config_keys() -> BTreeSet<String> {
    let schema = serde_json::to_value(schemars::schema_for!(RouterConfig))
        .expect("the router configuration's schema as JSON");
    let mut keys = BTreeSet::new();
    schema_names(&schema, &mut keys);
    keys
}

#[test]
fn every_key_of_the_topology_format_is_in_docs_topology_md() {
    let keys = topology_keys();
    for k in ["version", "kind", "cpu", "qos", "limit_bytes", "jitter"] {
        assert!(keys.contains(k), "the parser's keys, as derived: {keys:?}");
    }
    let missing = undocumented(&read_doc("topology.md"), &keys);
    assert!(
        missing.is_empty(),
        "docs/topology.md does not name these topology keys: {missing:?}"
    );
}

#[test]
fn every_toml_example_in_docs_topology_md_is_a_topology_the_lab_reads() {
    let doc = read_doc("topology.md");
    let examples = toml_blocks(&doc);
    assert!(examples.len() >= 2, "docs/topology.md has its examples");
    // As if saved in plans/topologies/: a router's `qos` path is taken from there.
    let dir = root().join("plans/topologies");
    for b in &examples {
        if let Err(e) = Topology::parse_at(&b.text, Some(&dir)) {
            panic!(
                "docs/topology.md:{}: the example does not read: {e}\n{}",
                b.line, b.text
            );
        }
    }
}

#[test]
fn every_key_of_the_qos_and_router_formats_is_in_docs_qos_md() {
    let qos = qos_keys();
    for k in [
        "match",
        "flow_label",
        "bandwidth_remaining",
        "violate",
        "count_rule",
        "admit",
    ] {
        assert!(
            qos.contains(k),
            "the QoS parser's keys, as derived: {qos:?}"
        );
    }
    let router = router_config_keys();
    for k in [
        "neighbor",
        "limit_packets",
        "loss_good",
        "model",
        "gilbert_elliott",
    ] {
        assert!(
            router.contains(k),
            "the router configuration's keys: {router:?}"
        );
    }
    let doc = read_doc("qos.md");
    let missing = undocumented(&doc, &qos);
    assert!(
        missing.is_empty(),
        "docs/qos.md does not name these QoS file keys: {missing:?}"
    );
    let missing = undocumented(&doc, &router);
    assert!(
        missing.is_empty(),
        "docs/qos.md does not name these router configuration keys or values: {missing:?}"
    );
}

#[test]
fn every_toml_example_in_docs_qos_md_is_a_file_the_router_reads() {
    let doc = read_doc("qos.md");
    let examples = toml_blocks(&doc);
    let mut policies = 0;
    let mut configs = 0;
    for b in &examples {
        let at = format!("docs/qos.md:{}", b.line);
        if b.text.contains("[[interface]]") {
            let cfg: RouterConfig = toml::from_str(&b.text).unwrap_or_else(|e| {
                panic!(
                    "{at}: the router configuration does not read: {e}\n{}",
                    b.text
                )
            });
            if let Err(e) = cfg.check() {
                panic!("{at}: the router configuration is refused: {e}\n{}", b.text);
            }
            configs += 1;
            continue;
        }
        let q = QosConfig::parse(&b.text)
            .unwrap_or_else(|e| panic!("{at}: the QoS file does not read: {e}\n{}", b.text));
        for (interface, _, _) in &q.service {
            match q.params_for(interface, LINK_BPS) {
                Ok(Some(_)) => {}
                other => panic!(
                    "{at}: the policy on {interface} does not resolve on a {LINK_BPS} bit/s link: {other:?}"
                ),
            }
        }
        policies += 1;
    }
    assert!(
        policies >= 3 && configs >= 1,
        "docs/qos.md has its examples ({policies} QoS files, {configs} router configurations)"
    );
}

/// The long options `dualperf send --help` lists, with their visible aliases.
fn send_options() -> BTreeSet<String> {
    let out = run(&["send", "--help"]);
    out.assert_success();
    let mut options = BTreeSet::new();
    let mut in_options = false;
    for line in out.stdout.lines() {
        if line == "Options:" {
            in_options = true;
            continue;
        }
        // The section ends at the next heading (`Examples:`), written from column 0.
        if in_options && !line.is_empty() && !line.starts_with(' ') {
            break;
        }
        let text = line.trim_start();
        let indent = line.len() - text.len();
        // An option's own line is indented 2 or 6 (`  -r, --rate <RATE>`, `      --tcp`);
        // its help below it more, where a wrapped sentence may begin with an option.
        let spec = if in_options && indent <= 6 && text.starts_with('-') {
            text.split('<').next().unwrap_or("")
        } else if in_options && text.starts_with("[alias") {
            text
        } else {
            continue;
        };
        options.extend(
            spec.split([' ', ',', '[', ']'])
                .filter(|t| t.starts_with("--") && t.len() > 2)
                .map(str::to_owned),
        );
    }
    // Not a flow's: every command has it.
    options.remove("--help");
    options
}

#[test]
fn every_option_of_send_help_is_in_docs_flows_md() {
    let options = send_options();
    for o in [
        "--rate",
        "--bitrate",
        "--time",
        "--size-dist",
        "--stamp-timeout",
    ] {
        assert!(
            options.contains(o),
            "send --help's options, as read: {options:?}"
        );
    }
    let missing = undocumented(&read_doc("flows.md"), &options);
    assert!(
        missing.is_empty(),
        "docs/flows.md does not name these `dualperf send` options: {missing:?}"
    );
}

#[test]
fn the_plans_and_flow_files_in_docs_flows_md_are_read_by_dualperf() {
    let doc = read_doc("flows.md");
    let dir = TempDir::new("docs-flows");
    let all = blocks(&doc);
    let plans: Vec<&Block> = all.iter().filter(|b| b.lang == "toml").collect();
    let flow_files: Vec<&Block> = all
        .iter()
        .filter(|b| b.lang == "text" && b.text.starts_with("# flow file"))
        .collect();
    assert!(
        !plans.is_empty() && !flow_files.is_empty(),
        "docs/flows.md has its examples"
    );
    for b in &plans {
        let path = dir.path(&format!("plan-{}.toml", b.line));
        std::fs::write(&path, &b.text).expect("write the plan");
        let out = run(&["run", path_str(&path), "--dry-run"]);
        assert!(
            out.status.success(),
            "docs/flows.md:{}: dualperf run --dry-run refuses the plan: {}\n{}",
            b.line,
            out.stderr,
            b.text
        );
    }
    // A flow file that reads whole gets as far as the receiver. Here that is a listener
    // that closes each connection at once, so nothing is sent: exit status 1 (the
    // session failed), where a mistake in the file would be 2.
    let listener = std::net::TcpListener::bind("[::1]:0").expect("listen on ::1");
    let port = listener.local_addr().expect("its port").port().to_string();
    let n = flow_files.len();
    std::thread::spawn(move || {
        // Each connection is closed as its iteration ends.
        for _conn in listener.incoming().take(n) {}
    });
    for b in &flow_files {
        let path = dir.path(&format!("flows-{}.txt", b.line));
        std::fs::write(&path, &b.text).expect("write the flow file");
        let out = run(&[
            "send",
            "::1",
            "--port",
            &port,
            "--flows",
            path_str(&path),
            "--connect-timeout",
            "5s",
        ]);
        assert_eq!(
            out.code(),
            Some(1),
            "docs/flows.md:{}: dualperf send --flows should read the file and then find no receiver: {}\n{}",
            b.line,
            out.stderr,
            b.text
        );
    }
}

/// The start of a plan: what every plan needs.
const PLAN_HEAD: &str = "version = 1\nname = \"x\"\nduration = \"1s\"\n";

/// The error `Plan::parse` gives for `text`, which must not parse.
fn plan_error(text: &str) -> String {
    Plan::parse(text, false).expect_err(text).message
}

/// Every key of the plan format, table by table, and the values of its enumerations:
/// the top level's, `[quick]`'s, `[stamp]`'s, `[hosts.NAME]`'s, `[[tables]]`'s, the
/// plan's own keys of `[flow]`, `[[points]]` and a background flow (every other key
/// there is a `dualperf send` option: flows.md), `order`'s and `target`'s values, and
/// the tables' metrics.
fn plan_keys() -> BTreeSet<String> {
    let mut keys = BTreeSet::new();
    for probe in [
        format!("{PLAN_HEAD}{PROBE} = 1\n"),
        format!("{PLAN_HEAD}[quick]\n{PROBE} = 1\n"),
        format!("{PLAN_HEAD}[stamp]\n{PROBE} = 1\n"),
        format!("{PLAN_HEAD}target = \"hosts\"\n[hosts.sender]\n{PROBE} = 1\n"),
        format!("{PLAN_HEAD}order = \"{PROBE}\"\n"),
    ] {
        keys.extend(fields_in(&plan_error(&probe)));
    }
    // "tables: unknown key 'zz_unknown' (title, where, metrics, paper)"
    let e = plan_error(&format!(
        "{PLAN_HEAD}[[tables]]\ntitle = \"t\"\nmetrics = [\"loss\"]\n{PROBE} = 1\n"
    ));
    let listed = e
        .split_once(&format!("'{PROBE}'"))
        .and_then(|(_, rest)| rest.split_once('('))
        .and_then(|(_, rest)| rest.split_once(')'))
        .unwrap_or_else(|| panic!("not an error about an unknown table key: {e}"))
        .0;
    keys.extend(listed.split(',').map(|k| k.trim().to_owned()));
    // "target 'zz_unknown': \"loopback\", \"lab:TOPOLOGY.toml\" (…) or \"hosts\" (…)"
    let e = plan_error(&format!("{PLAN_HEAD}target = \"{PROBE}\"\n"));
    let targets: Vec<String> = e.split('"').skip(1).step_by(2).map(str::to_owned).collect();
    assert!(
        targets.len() >= 3,
        "the targets, as the error names them: {e}"
    );
    keys.extend(targets);
    keys.extend(
        FLOW_TABLE_KEYS
            .iter()
            .chain(&POINT_KEYS)
            .chain(&BACKGROUND_KEYS)
            .map(|k| (*k).to_owned()),
    );
    keys.extend(
        Vocabulary::standard()
            .metrics()
            .iter()
            .map(|m| m.key.to_owned()),
    );
    keys
}

#[test]
fn every_key_of_the_plan_format_is_in_docs_plans_md() {
    let keys = plan_keys();
    for k in [
        "repetitions",
        "background_lead",
        "interval",
        "reflectors",
        "key_file",
        "paper",
        "random",
        "loopback",
        "lab:TOPOLOGY.toml",
        "count",
        "group",
        "jitter_rfc3550",
    ] {
        assert!(keys.contains(k), "the plan's keys, as derived: {keys:?}");
    }
    let missing = undocumented(&read_doc("plans.md"), &keys);
    assert!(
        missing.is_empty(),
        "docs/plans.md does not name these plan keys or values: {missing:?}"
    );
}

/// A directory to save plans in that has the shipped plans' `topologies/` and `qos/`
/// beside it, so a lab target and a point's QoS files resolve as in `plans/`.
fn plan_dir(name: &str) -> TempDir {
    let dir = TempDir::new(name);
    for sub in ["topologies", "qos"] {
        std::os::unix::fs::symlink(root().join("plans").join(sub), dir.path(sub))
            .expect("link the shipped plans' directory");
    }
    dir
}

#[test]
fn every_toml_example_in_docs_plans_md_is_a_plan_dualperf_run_takes() {
    let doc = read_doc("plans.md");
    let examples = toml_blocks(&doc);
    assert!(
        examples.len() >= 4,
        "docs/plans.md has its examples ({} plans)",
        examples.len()
    );
    let dir = plan_dir("docs-plans");
    for b in &examples {
        let path = dir.path(&format!("plan-{}.toml", b.line));
        std::fs::write(&path, &b.text).expect("write the plan");
        let out = run(&["run", path_str(&path), "--dry-run"]);
        assert!(
            out.status.success(),
            "docs/plans.md:{}: dualperf run --dry-run refuses the plan: {}\n{}",
            b.line,
            out.stderr,
            b.text
        );
    }
}

#[test]
fn a_flow_that_sets_its_own_duration_is_refused_by_dry_run_naming_the_plans() {
    // The runner gives every send the plan's --duration, and send refuses a second:
    // this plan once passed --dry-run and failed on its first run.
    let dir = TempDir::new("flow-duration");
    let path = dir.path("plan.toml");
    std::fs::write(
        &path,
        format!("{PLAN_HEAD}\n[flow]\nudp = true\nduration = \"5s\"\n"),
    )
    .expect("write the plan");
    let out = run(&["run", path_str(&path), "--dry-run"]);
    assert_eq!(out.code(), Some(2), "{}", out.stderr);
    let want = format!(
        "{}:7: duration is the plan's, not a flow's: every run lasts the plan's top-level duration",
        path.display()
    );
    assert!(out.stderr.contains(&want), "{}", out.stderr);
}

// README.md and ARCHITECTURE.md: pages people can read.

/// The most words a cell of a README table may hold: the table is one line per command,
/// and its detail is in docs/commands.md.
const MAX_CELL_WORDS: usize = 40;

fn read_top(name: &str) -> String {
    let path = root().join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The text of `doc` outside its fenced blocks, each line with its line number.
fn prose(doc: &str) -> Vec<(usize, &str)> {
    let mut fenced = false;
    let mut out = Vec::new();
    for (n, line) in doc.lines().enumerate() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
        } else if !fenced {
            out.push((n + 1, line));
        }
    }
    out
}

/// Each cell of each table row of `doc` (not its `|---|` rows), with its line number. A
/// cell ends at a `|` that is not escaped as `\|`.
fn table_cells(doc: &str) -> Vec<(usize, String)> {
    let mut cells = Vec::new();
    for (n, line) in prose(doc) {
        let row = line.trim();
        if !row.starts_with('|') || row.chars().all(|c| "|-: ".contains(c)) {
            continue;
        }
        let mut cell = String::new();
        let mut prev = ' ';
        for c in row.trim_matches('|').chars() {
            if c == '|' && prev != '\\' {
                cells.push((n, std::mem::take(&mut cell)));
            } else {
                cell.push(c);
            }
            prev = c;
        }
        cells.push((n, cell));
    }
    cells
}

/// Cells of `doc` over [`MAX_CELL_WORDS`] words, as `line: words: start of the cell`.
fn long_cells(doc: &str) -> Vec<String> {
    table_cells(doc)
        .into_iter()
        .filter_map(|(n, cell)| {
            let words = cell.split_whitespace().count();
            let start: String = cell.trim().chars().take(60).collect();
            (words > MAX_CELL_WORDS).then(|| format!("README.md:{n}: {words} words: {start}"))
        })
        .collect()
}

#[test]
fn no_cell_of_a_readme_table_is_over_40_words() {
    // The rule itself, on a table written for it: 41 words is over, 40 is not, and an
    // escaped bar does not end a cell.
    let forty = vec!["w"; 40].join(" ");
    let sample = format!("| a | b |\n|---|---|\n| `x` | {forty} |\n| `y \\| z` | {forty} w |\n");
    let cells = table_cells(&sample);
    assert_eq!(cells.len(), 6, "{cells:?}");
    assert_eq!(cells[4].1.trim(), "`y \\| z`");
    assert_eq!(long_cells(&sample).len(), 1, "{:?}", long_cells(&sample));

    let readme = read_top("README.md");
    let cells = table_cells(&readme);
    assert!(
        cells.len() >= 3 * 15,
        "README.md has its command table ({} cells)",
        cells.len()
    );
    let long = long_cells(&readme);
    assert!(
        long.is_empty(),
        "cells over {MAX_CELL_WORDS} words (their detail belongs in docs/): {long:#?}"
    );
}

/// The local links of `doc` (`](target)`, not `http://…`), each as its file (empty for
/// the page itself) and its anchor (empty for none).
fn local_links(doc: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for (_, line) in prose(doc) {
        for (i, _) in line.match_indices("](") {
            let rest = &line[i + 2..];
            let Some(end) = rest.find(')') else { continue };
            let target = &rest[..end];
            if target.contains("://") {
                continue;
            }
            let (file, anchor) = target.split_once('#').unwrap_or((target, ""));
            out.push((file.to_owned(), anchor.to_owned()));
        }
    }
    out
}

/// The files `doc` links to.
fn link_targets(doc: &str) -> BTreeSet<String> {
    local_links(doc).into_iter().map(|(file, _)| file).collect()
}

/// The anchors of `doc`'s headings, as GitHub makes them: lower case, letters, digits,
/// `-` and `_` kept, spaces as `-`, everything else dropped.
fn anchors(doc: &str) -> BTreeSet<String> {
    prose(doc)
        .into_iter()
        .filter(|(_, l)| l.starts_with('#'))
        .map(|(_, l)| {
            l.trim_start_matches('#')
                .trim()
                .to_lowercase()
                .chars()
                .filter(|c| c.is_alphanumeric() || matches!(c, ' ' | '-' | '_'))
                .map(|c| if c == ' ' { '-' } else { c })
                .collect()
        })
        .collect()
}

#[test]
fn the_readme_links_every_page_of_docs_and_every_link_resolves() {
    let readme = read_top("README.md");
    let targets = link_targets(&readme);
    let mut pages = Vec::new();
    for entry in std::fs::read_dir(root().join("docs")).expect("read docs/") {
        let entry = entry.expect("a docs/ entry");
        let name = entry.file_name().to_string_lossy().into_owned();
        if entry.path().is_dir() {
            pages.push(format!("docs/{name}/"));
        } else if name.ends_with(".md") {
            pages.push(format!("docs/{name}"));
        }
    }
    pages.sort();
    assert!(
        pages.len() >= 12 && pages.contains(&"docs/commands.md".to_owned()),
        "docs/ as read: {pages:?}"
    );
    let unlinked: Vec<&String> = pages.iter().filter(|p| !targets.contains(*p)).collect();
    assert!(
        unlinked.is_empty(),
        "README.md's documentation index does not link these pages: {unlinked:?}"
    );
    // Every local link of README.md, ARCHITECTURE.md and docs/*.md names a file that is
    // there (relative to the page that links it), and a heading there if it has an
    // anchor.
    assert_eq!(
        anchors("# A `b`: c (d = \"e\")\n## Quick start: two terminals\n"),
        BTreeSet::from([
            "a-b-c-d--e".to_owned(),
            "quick-start-two-terminals".to_owned()
        ])
    );
    let mut docs: Vec<(PathBuf, String)> = ["README.md", "ARCHITECTURE.md"]
        .iter()
        .map(|n| (root().join(n), read_top(n)))
        .collect();
    for p in pages.iter().filter(|p| p.ends_with(".md")) {
        docs.push((root().join(p), read_top(p)));
    }
    let mut broken = Vec::new();
    for (path, text) in &docs {
        let dir = path.parent().expect("a page's directory");
        for (file, anchor) in local_links(text) {
            let target = if file.is_empty() {
                path.clone()
            } else {
                dir.join(&file)
            };
            if !target.exists() {
                broken.push(format!("{}: {file}: no such file", path.display()));
            } else if !anchor.is_empty() {
                let page = std::fs::read_to_string(&target).unwrap_or_default();
                if !anchors(&page).contains(&anchor) {
                    broken.push(format!(
                        "{}: {file}#{anchor}: no such heading",
                        path.display()
                    ));
                }
            }
        }
    }
    assert!(broken.is_empty(), "links to nothing: {broken:#?}");
}

#[test]
fn the_readme_opens_with_the_main_job_and_the_test_command_ci_runs() {
    let readme = read_top("README.md");
    let first = blocks(&readme)
        .into_iter()
        .next()
        .expect("README.md has a code block");
    assert_eq!(
        first.text.lines().collect::<Vec<_>>(),
        [
            "cargo run --release --bin dualperf -- compare",
            "cargo test --workspace"
        ],
        "README.md's first block (README.md:{})",
        first.line
    );
    assert!(first.line < 10, "the two commands are on the first screen");
    // .ci/run takes the first line of README.md that starts with `cargo test`.
    let ci = read_top(".ci/run");
    assert!(ci.contains("grep -m1 -E '^cargo test' README.md"), "{ci}");
    let taken = readme.lines().find(|l| l.starts_with("cargo test"));
    assert_eq!(taken, Some("cargo test --workspace"));
}

/// The subcommands `dualperf --help` lists (not `help`).
fn subcommands() -> Vec<String> {
    let out = run(&["--help"]);
    out.assert_success();
    let mut names = Vec::new();
    let mut in_commands = false;
    for line in out.stdout.lines() {
        if line == "Commands:" {
            in_commands = true;
            continue;
        }
        if in_commands && !line.starts_with(' ') {
            break;
        }
        // A command's own line is indented 2; its wrapped help more.
        if in_commands && line.starts_with("  ") && !line.starts_with("   ") {
            let name = line.split_whitespace().next().unwrap_or("");
            if name != "help" {
                names.push(name.to_owned());
            }
        }
    }
    names
}

#[test]
fn every_command_has_a_row_in_the_readme_and_a_section_in_docs_commands_md() {
    let names = subcommands();
    assert!(
        names.len() >= 17 && names.iter().any(|n| n == "portcheck"),
        "the commands, as read: {names:?}"
    );
    let readme = read_top("README.md");
    let first_cells: Vec<String> = table_cells(&readme)
        .into_iter()
        .scan(0, |last, (n, cell)| {
            let first = *last != n;
            *last = n;
            Some(first.then_some(cell))
        })
        .flatten()
        .collect();
    let commands = read_doc("commands.md");
    let mut missing = Vec::new();
    for name in &names {
        let call = format!("`dualperf {name}");
        if !first_cells.iter().any(|c| c.contains(&call)) {
            missing.push(format!("README.md has no row for dualperf {name}"));
        }
        let heading = commands
            .lines()
            .any(|l| l.starts_with("## ") && l.split_whitespace().any(|w| w == name));
        if !heading {
            missing.push(format!("docs/commands.md has no section for {name}"));
        }
    }
    assert!(missing.is_empty(), "{missing:#?}");
}

#[test]
fn architecture_md_is_one_page_naming_every_crate_in_a_bullet_and_in_the_layer_graph() {
    let text = read_top("ARCHITECTURE.md");
    let lines = text.lines().count();
    assert!(
        lines <= 70,
        "ARCHITECTURE.md is {lines} lines: its detail belongs in docs/internals.md"
    );
    assert!(
        table_cells(&text).is_empty(),
        "ARCHITECTURE.md is bullets, not tables"
    );
    let graph = blocks(&text)
        .into_iter()
        .find(|b| b.text.contains("──►"))
        .expect("ARCHITECTURE.md draws the layer graph");
    let mut crates = Vec::new();
    for entry in std::fs::read_dir(root().join("crates")).expect("read crates/") {
        let entry = entry.expect("a crates/ entry");
        if entry.path().join("Cargo.toml").exists() {
            crates.push(entry.file_name().to_string_lossy().into_owned());
        }
    }
    crates.sort();
    assert!(crates.len() >= 12, "crates/ as read: {crates:?}");
    let mut missing = Vec::new();
    for c in &crates {
        if !text.lines().any(|l| l.starts_with(&format!("- `{c}`:"))) {
            missing.push(format!("no bullet `- `{c}`: …`"));
        }
        if !graph
            .text
            .split_whitespace()
            .any(|w| w.trim_matches(',') == c)
        {
            missing.push(format!("{c} is not in the layer graph"));
        }
    }
    assert!(missing.is_empty(), "ARCHITECTURE.md: {missing:#?}");
    // Each arrow drawn is what layers.rs allows (the binary's "everything below" aside).
    let drawn = drawn_edges(&graph.text);
    for (krate, allowed) in crate::layers::ALLOWED.iter().filter(|(k, _)| *k != "cli") {
        let allowed: BTreeSet<String> = allowed.iter().map(|c| (*c).to_owned()).collect();
        assert_eq!(
            drawn.get(*krate),
            Some(&allowed),
            "ARCHITECTURE.md's layer graph draws {krate}'s edges otherwise than layers.rs allows"
        );
    }
}

/// The edges the layer graph draws: each `NAME ──► a, b` (a crate alone, `NAME`, has
/// none), the segments of a line apart by runs of spaces, after its `floor N` or `top`.
fn drawn_edges(graph: &str) -> std::collections::BTreeMap<String, BTreeSet<String>> {
    let mut edges = std::collections::BTreeMap::new();
    for line in graph.lines() {
        let body = line
            .trim_start_matches("top")
            .trim_start_matches("floor")
            .trim_start()
            .trim_start_matches(|c: char| c.is_ascii_digit());
        for segment in body.split("   ").map(str::trim).filter(|s| !s.is_empty()) {
            let (name, to) = segment.split_once('─').unwrap_or((segment, ""));
            let to: BTreeSet<String> = to
                .trim_start_matches(['─', '►', ' '])
                .split(", ")
                .map(str::trim)
                .filter(|t| !t.is_empty())
                .map(str::to_owned)
                .collect();
            edges.insert(name.trim().to_owned(), to);
        }
    }
    edges
}
