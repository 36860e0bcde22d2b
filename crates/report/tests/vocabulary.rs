//! A metric added to the vocabulary ([`results::metric`]) with no other change: a plan's
//! table may name it, a name the vocabulary lacks is refused, `report` titles, scales
//! and reads it from a run directory, and the verdict page `compare` prints compares it.

use std::collections::BTreeMap;
use std::path::PathBuf;

use lab::plan::Plan;
use lab::store::{Resolved, RunRecord, Store};
use results::metric::{Metric, Units, Vocabulary};

/// Counted packets: one unit.
const PACKETS: Units = Units {
    ladder: &[("packets", 1.0)],
    aliases: &[],
    choices: "packets",
};

/// The new metric: the sender's count of the measured flow's packets.
const SENT_PACKETS: Metric = Metric::new(
    "sent_packets",
    "Sent packets",
    "packets the sender sent, the count RFC 7680's loss is a share of",
    PACKETS,
    "packets",
    |r| Some(r.flows.first()?.sent.packets as f64),
);

fn plan_text(metrics: &str) -> String {
    format!(
        "version = 1\nname = \"vocabulary\"\nduration = \"1s\"\nrepetitions = 2\n\n\
         [flow]\nudp = true\nmeter = \"rtt\"\n\n[factors]\nsize = [64]\n\n\
         [[tables]]\ntitle = \"Sent\"\nmetrics = [{metrics}]\n"
    )
}

/// A run directory of `plan`, each run the recorded report with `sent.packets` of 40
/// (IPv4) or 60 (IPv6) plus its repetition.
fn run_dir(plan: &Plan) -> PathBuf {
    let dir =
        std::env::temp_dir().join(format!("dualperf-report-vocabulary-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let store = Store::create(&dir).unwrap();
    store
        .write_json("resolved.json", &Resolved::new(plan, false))
        .unwrap();
    for r in &plan.runs {
        let mut report: serde_json::Value =
            serde_json::from_str(include_str!("../../lab/tests/data/send-udp-rtt.json")).unwrap();
        let sent = if r.family == 4 { 40 } else { 60 } + u64::from(r.repetition);
        report["flows"][0]["sent"]["packets"] = sent.into();
        // On schedule: every planned packet sent (a run behind it would not count).
        report["flows"][0]["sent"]["planned_packets"] = sent.into();
        let record = RunRecord {
            format_version: lab::store::FORMAT_VERSION,
            run: r.clone(),
            point: plan.points[r.point].id.clone(),
            argv: Vec::new(),
            started_unix_ns: 0,
            exit_code: 0,
            stderr: String::new(),
            report: Some(serde_json::from_value(report).unwrap()),
            attempts: 1,
            background: Vec::new(),
            routers: BTreeMap::new(),
            router_stalls: BTreeMap::new(),
        };
        store.put_run(&record).unwrap();
    }
    dir
}

#[test]
fn a_metric_added_to_the_vocabulary_is_validated_and_reported() {
    let vocabulary = Vocabulary::standard().with(SENT_PACKETS);
    // Plan validation: the new key is taken, with its unit; unknown keys and units are
    // refused, naming what the vocabulary has.
    let plan = Plan::parse_with(&plan_text("\"sent_packets\""), false, &vocabulary).unwrap();
    assert_eq!(plan.tables[0].metrics[0].metric.key, "sent_packets");
    assert_eq!(plan.tables[0].metrics[0].unit.name, "packets");
    let e = Plan::parse(&plan_text("\"sent_packets\""), false)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("no metric 'sent_packets' (throughput, rtt, rtt_median,"),
        "the standard vocabulary has no sent_packets: {e}"
    );
    let e = Plan::parse_with(&plan_text("\"sent_bytes\""), false, &vocabulary)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("no metric 'sent_bytes'") && e.contains(", sent_packets;"),
        "{e}"
    );
    let e = Plan::parse_with(&plan_text("\"sent_packets:ms\""), false, &vocabulary)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("'ms' is not a unit of sent_packets (packets)"),
        "{e}"
    );

    // The report of a run directory: the declared table, titled, in its unit, with
    // each family's mean of its two runs (41 and 42; 61 and 62).
    let dir = run_dir(&plan);
    let mut warnings = Vec::new();
    let runs = report::load_with(std::slice::from_ref(&dir), &vocabulary, &mut warnings).unwrap();
    assert!(warnings.is_empty(), "{warnings:?}");
    let rendered = report::Report::new(&runs);
    let table = &rendered.tables[0];
    assert_eq!((table.title.as_str(), table.declared), ("Sent", true));
    assert_eq!(table.metrics[0].heading(), "Sent packets (packets)");
    let text = rendered.text(false);
    assert!(
        text.contains(
            "Sent packets: packets the sender sent, the count RFC 7680's loss is a share of."
        ),
        "{text}"
    );
    let row = rendered
        .results
        .rows
        .iter()
        .find(|r| r.metric.key == "sent_packets")
        .expect("a row of the new metric");
    assert_eq!(row.unit, "packets");
    let means = (
        row.ipv4.as_ref().map(|s| (s.n, s.mean)),
        row.ipv6.as_ref().map(|s| (s.n, s.mean)),
    );
    assert_eq!(means, (Some((2, 41.5)), Some((2, 61.5))));
    let line = text
        .lines()
        .find(|l| l.starts_with("size=64 "))
        .unwrap_or_else(|| panic!("a row for size 64: {text}"));
    assert!(
        line.contains("41.50 [41.00, 42.00]") && line.contains("61.50 [61.00, 62.00]"),
        "{line}\n{text}"
    );
    let csv = rendered.csv();
    assert!(
        csv.lines().any(|l| l.starts_with(
            "\"Sent\",\"size=64\",\"size=64\",sent_packets,\"packets\",2,41.5,41,42,2,61.5,61,62,"
        )),
        "{csv}"
    );

    // The verdict page `dualperf compare` prints (report's verdict layer, the same
    // page `report` prints under its tables): the new metric's table, each
    // repetition's IPv6 run against its IPv4 run.
    let page = &rendered.verdicts;
    assert_eq!(page.tables.len(), 1);
    assert_eq!(page.tables[0].metric, "sent_packets");
    assert_eq!(page.tables[0].heading, "Sent packets (packets)");
    let c = page.tables[0].rows[0].comparison.expect("a comparison");
    assert_eq!((c.n_pairs, c.median_a, c.median_b), (2, 41.5, 61.5));
    // Compared as a ratio: IPv4's median times e^(the median of the pairs' log ratios) − 1.
    let d = ((61.0_f64 / 41.0).ln() + (62.0_f64 / 42.0).ln()) / 2.0;
    assert!((c.diff - 41.5 * d.exp_m1()).abs() < 1e-9, "{c:?}");
    let shown = report::verdicts::render(page);
    assert!(shown.contains("Sent packets (packets)"), "{shown}");
    assert!(
        text.contains(&shown),
        "report prints the page compare prints"
    );

    // Read with the standard vocabulary, the table naming it is left out, said so.
    let mut warnings = Vec::new();
    let standard = report::load(std::slice::from_ref(&dir), &mut warnings).unwrap();
    assert!(standard.specs.is_empty());
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(
        warnings[0].contains("table 1 in resolved.json does not read"),
        "{warnings:?}"
    );
    let _ = std::fs::remove_dir_all(dir);
}
