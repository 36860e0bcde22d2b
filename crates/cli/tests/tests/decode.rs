//! `dualperf decode`: logs written by `recv --log` and `send --log` decode to exact counts as JSON, CSV, readable text, ITGDec text and interval series; bad input fails clearly.

use std::path::Path;

use crate::support::{path_str, run, send, u, Receiver, TempDir};

/// A receiver log holding one finished session of `count` 64-byte UDP packets.
fn receiver_log(dir: &TempDir, count: u64) -> std::path::PathBuf {
    let log = dir.path("recv.dplog");
    let rx = Receiver::start(&["--log", path_str(&log), "--json", "--sessions", "1"]);
    let n = count.to_string();
    let out = send(
        "127.0.0.1",
        rx.port,
        &["--rate", "500pps", "--size", "64", "--count", &n, "--json"],
    );
    out.assert_success();
    assert_eq!(u(&out.json(), "/flows/0/received/packets"), count);
    rx.finish().finished.assert_success();
    log
}

fn decode(log: &Path, extra: &[&str]) -> crate::support::Finished {
    let mut args = vec!["decode", path_str(log)];
    args.extend_from_slice(extra);
    run(&args)
}

#[test]
fn decode_json_shows_the_logged_flow_with_every_packet() {
    let dir = TempDir::new("decode-json");
    let log = receiver_log(&dir, 200);
    let out = decode(&log, &["--json"]);
    out.assert_success();
    let doc = out.json();
    assert_eq!(doc["meta"]["tool"], "dualperf recv");
    let flows = doc["summary"]["flows"].as_array().expect("summary.flows");
    assert_eq!(flows.len(), 1, "{doc:#}");
    let f = &flows[0];
    assert_eq!(u(f, "/packets"), 200);
    assert_eq!(u(f, "/unique_packets"), 200);
    assert_eq!(u(f, "/bytes"), 200 * 64);
    // The receiver logged the sender's count with the flow, so loss is known.
    assert_eq!(u(f, "/loss/sent"), 200);
    assert_eq!(u(f, "/loss/lost"), 0);
    assert_eq!(u(&doc, "/summary/total/packets"), 200);
    let id = u(f, "/flow").to_string();
    assert_eq!(u(&doc["flow_info"][&id], "/sent_packets"), 200);
    assert_eq!(doc["flow_info"][&id]["announce"]["protocol"], "udp");
    assert!(doc["intervals"].is_null(), "no series unless asked");
}

#[test]
fn decode_csv_prints_a_header_and_one_row_per_flow_plus_total() {
    let dir = TempDir::new("decode-csv");
    let log = receiver_log(&dir, 200);
    let out = decode(&log, &["--csv"]);
    out.assert_success();
    let lines: Vec<&str> = out.stdout.lines().collect();
    assert_eq!(lines.len(), 3, "{}", out.stdout);
    let header: Vec<&str> = lines[0].split(',').collect();
    assert_eq!(header[0], "flow");
    let col = |name: &str| {
        header
            .iter()
            .position(|h| *h == name)
            .unwrap_or_else(|| panic!("no {name} column"))
    };
    for row in &lines[1..] {
        let cells: Vec<&str> = row.split(',').collect();
        assert_eq!(cells.len(), header.len(), "{row}");
        assert_eq!(cells[col("packets")], "200");
        assert_eq!(cells[col("lost")], "0");
    }
    assert!(lines[2].starts_with("total,"), "{}", lines[2]);
}

/// `--itgdec` keeps ITGDec's layout line for line, TOTAL RESULTS included even for one
/// flow, so it can be diffed against ITGDec's own output.
#[test]
fn decode_itgdec_text_has_itgdec_labels() {
    let dir = TempDir::new("decode-text");
    let log = receiver_log(&dir, 200);
    let out = decode(&log, &["--itgdec"]);
    out.assert_success();
    for label in [
        "Flow number",
        "TOTAL RESULTS",
        "Total time",
        "Average delay",
        "Average jitter",
        "Average bitrate",
        "Packets dropped",
    ] {
        assert!(
            out.stdout.contains(label),
            "no {label:?} in\n{}",
            out.stdout
        );
    }
    // Once per flow block and once in the total, each with 200.
    let totals: Vec<&str> = out
        .stdout
        .lines()
        .filter(|l| l.starts_with("Total packets"))
        .collect();
    assert_eq!(totals.len(), 2, "{}", out.stdout);
    for l in totals {
        assert_eq!(l.split_whitespace().last(), Some("200"), "{l}");
    }
}

#[test]
fn decode_interval_series_accounts_for_every_packet() {
    let dir = TempDir::new("decode-interval");
    let log = receiver_log(&dir, 200);
    let out = decode(&log, &["--interval", "100ms", "--json"]);
    out.assert_success();
    let doc = out.json();
    let series = doc["intervals"].as_array().expect("an intervals array");
    assert!(!series.is_empty());
    let packets: u64 = series
        .iter()
        .map(|i| i["packets"].as_u64().expect("packets"))
        .sum();
    assert_eq!(packets, 200);
    for w in series {
        assert_eq!(u(w, "/end_ns") - u(w, "/start_ns"), 100_000_000);
    }
    // CSV series: a header, then one line per window.
    let csv = decode(&log, &["--interval", "100ms", "--csv"]);
    csv.assert_success();
    let lines: Vec<&str> = csv.stdout.lines().collect();
    assert!(
        lines[0].starts_with("start_ns,end_ns,packets"),
        "{}",
        lines[0]
    );
    assert_eq!(lines.len(), series.len() + 1);
}

#[test]
fn decode_of_a_log_cut_short_keeps_every_whole_record_and_counts_no_false_loss() {
    let dir = TempDir::new("decode-truncated");
    let log = receiver_log(&dir, 200);
    let whole = decode(&log, &["--json"]);
    whole.assert_success();
    let doc = whole.json();
    assert_eq!(doc["log_end"]["complete"], true, "{doc}");
    assert_eq!(u(&doc, "/summary/flows/0/loss/sent"), 200);
    let bytes = std::fs::read(&log).unwrap();
    // As `head -c` would cut it: halfway, inside a record (each is 40 bytes, the file
    // has an odd-length header, so an even half lands inside one somewhere).
    for cut in [bytes.len() / 2, bytes.len() / 2 + 1] {
        std::fs::write(&log, &bytes[..cut]).unwrap();
        let out = decode(&log, &["--json"]);
        out.assert_success();
        assert!(
            out.stderr.contains("Log cut short"),
            "stderr: {}",
            out.stderr
        );
        let doc = out.json();
        let end = &doc["log_end"];
        assert_eq!(end["complete"], false, "{end}");
        assert_eq!(end["cut_flows"].as_array().map(Vec::len), Some(1), "{end}");
        let packets = u(&doc, "/summary/flows/0/packets");
        assert!(packets > 50 && packets < 150, "{packets}");
        assert_eq!(u(end, "/rx_records"), packets);
        // The cut tail is not loss: the flow's sent count (in its end entry) is gone,
        // and what the log holds arrived in order without a gap.
        assert_eq!(
            doc["summary"]["flows"][0]["loss"]["sent"],
            serde_json::Value::Null
        );
        assert_eq!(u(&doc, "/summary/flows/0/loss/lost"), 0);
        assert_eq!(u(&doc, "/summary/flows/0/loss/expected"), packets);
        assert_eq!(
            u(end, "/bytes_read") + u(end, "/truncated_tail_bytes"),
            cut as u64
        );
        // The text report says where the log ends.
        let text = decode(&log, &[]);
        text.assert_success();
        assert!(
            text.stdout.contains("Log cut short: it ends at byte"),
            "{}",
            text.stdout
        );
    }
}

#[test]
fn decode_of_a_sender_log_counts_the_schedule_and_the_echoes() {
    let dir = TempDir::new("decode-sender");
    let log = dir.path("send.dplog");
    let rx = Receiver::start(&["--json", "--sessions", "1"]);
    let out = send(
        "::1",
        rx.port,
        &[
            "--meter",
            "rtt",
            "--rate",
            "1000pps",
            "--size",
            "64",
            "--count",
            "100",
            "--log",
            path_str(&log),
            "--json",
        ],
    );
    out.assert_success();
    assert_eq!(u(&out.json(), "/flows/0/rtt/packets"), 100);
    rx.finish().finished.assert_success();
    let doc = decode(&log, &["--json"]).assert_success().json();
    assert_eq!(doc["meta"]["tool"], "dualperf send");
    assert_eq!(u(&doc, "/summary/flows/0/packets"), 100);
    // Sent counts come from the transmit records.
    assert_eq!(u(&doc, "/summary/flows/0/loss/sent"), 100);
    assert_eq!(u(&doc, "/summary/flows/0/loss/lost"), 0);
    let schedule = doc["schedule_error"].as_object().expect("schedule_error");
    assert_eq!(schedule.len(), 1);
}

/// A sender's log of a one-way flow has no arrivals: decode reports what was sent, and
/// never the 100 % loss that counting its packets as sent would fabricate.
#[test]
fn decode_of_a_one_way_sender_log_reports_the_sent_side_and_no_loss() {
    let dir = TempDir::new("decode-sender-owd");
    let log = dir.path("send.dplog");
    let rx = Receiver::start(&["--json", "--sessions", "1"]);
    let args = ["--rate", "500pps", "--size", "80", "--count", "50", "--log"];
    let mut args = args.to_vec();
    args.push(path_str(&log));
    send("::1", rx.port, &args).assert_success();
    rx.finish().finished.assert_success();
    let doc = decode(&log, &["--json"]).assert_success().json();
    // The sender's log entries (its metadata, each flow's spec and end) are the types'.
    crate::schema::assert_valid("decode", &doc);
    assert_eq!(doc["meta"]["tool"], "dualperf send", "{doc:#}");
    crate::schema::assert_valid("log-meta", &doc["meta"]);
    let flows = doc["flow_info"].as_object().unwrap();
    assert_eq!(flows.len(), 1, "{doc:#}");
    for flow in flows.values() {
        assert_eq!(u(flow, "/sent_packets"), 50, "{flow:#}");
        crate::schema::assert_valid("log-flow", flow);
    }
    assert!(
        doc["summary"]["flows"].as_array().unwrap().is_empty(),
        "{doc:#}"
    );
    let sent = doc["sent"].as_object().expect("sent");
    assert_eq!(sent.len(), 1);
    let flow = sent.values().next().unwrap();
    assert_eq!(u(flow, "/packets"), 50);
    assert_eq!(u(flow, "/bytes"), 4000);
    let text = decode(&log, &[]).assert_success().stdout.clone();
    assert!(text.contains("No received packets in this log"), "{text}");
    let sent = text
        .lines()
        .find(|l| l.trim_start().starts_with("sent "))
        .unwrap_or_else(|| panic!("no sent line in\n{text}"));
    assert!(sent.contains("50 packets, 3.91 KiB (4000 B)"), "{sent}");
    assert!(
        !text.contains("100.000 %") && !text.contains("lost "),
        "{text}"
    );
    let itgdec = decode(&log, &["--itgdec"]).assert_success().stdout.clone();
    assert!(
        itgdec.contains("No received packets in this log"),
        "{itgdec}"
    );
    assert!(itgdec.contains("sent: 50 packets, 4000 bytes"), "{itgdec}");
    assert!(!itgdec.contains("100.00 %"), "{itgdec}");
    // Every record as CSV: a header and one tx row per packet, sequence 0..49.
    let csv = decode(&log, &["--packets"]).assert_success().stdout.clone();
    let rows: Vec<&str> = csv.lines().collect();
    assert_eq!(rows.len(), 51);
    assert!(rows[0].starts_with("kind,flow,seq,size_bytes"));
    for (i, row) in rows[1..].iter().enumerate() {
        let f: Vec<&str> = row.split(',').collect();
        assert_eq!(
            (f[0], f[2], f[3]),
            ("tx", i.to_string().as_str(), "80"),
            "{row}"
        );
    }
}

#[test]
fn decode_of_a_garbage_file_fails_with_a_clear_message() {
    let dir = TempDir::new("decode-garbage");
    let file = dir.path("garbage.bin");
    let mut rng = crate::support::Prng::new(42);
    std::fs::write(&file, rng.bytes(4096)).unwrap();
    let out = decode(&file, &[]);
    // Exit status 2: the input is for the user to fix.
    assert_eq!(out.code(), Some(2), "stderr: {}", out.stderr);
    assert!(out.stdout.is_empty());
    assert!(
        out.stderr.contains("cannot decode") && out.stderr.contains("not a dualperf packet log"),
        "stderr: {}",
        out.stderr
    );
}

#[test]
fn decode_of_a_missing_file_fails_with_a_clear_message() {
    let dir = TempDir::new("decode-missing");
    let out = decode(&dir.path("absent.dplog"), &[]);
    assert_eq!(out.code(), Some(2), "stderr: {}", out.stderr);
    assert!(out.stderr.contains("cannot open"), "stderr: {}", out.stderr);
}

#[test]
fn decode_of_a_flow_not_in_the_log_is_a_usage_error() {
    let dir = TempDir::new("decode-flow");
    let log = receiver_log(&dir, 20);
    let out = decode(&log, &["--flow", "999"]);
    assert_eq!(out.code(), Some(2), "stderr: {}", out.stderr);
    assert!(
        out.stderr.contains("flow 999 has no records"),
        "stderr: {}",
        out.stderr
    );
    let one = decode(&log, &["--flow", "1", "--json"]);
    assert_eq!(
        u(&one.assert_success().json(), "/summary/total/packets"),
        20
    );
}

/// Regression: `--flow N` used to keep every flow's sent count, so the other flows
/// showed up as 100 % lost and inflated the total loss.
#[test]
fn decode_of_one_flow_leaves_the_other_flows_out_entirely() {
    let dir = TempDir::new("decode-one-of-two");
    let log = dir.path("recv.dplog");
    let rx = Receiver::start(&["--log", path_str(&log), "--json", "--sessions", "2"]);
    for count in ["30", "50"] {
        let out = send(
            "127.0.0.1",
            rx.port,
            &[
                "--rate", "500pps", "--size", "64", "--count", count, "--json",
            ],
        );
        out.assert_success();
    }
    rx.finish().finished.assert_success();
    // Log keys count flows in the order their sessions reported: 1, then 2.
    let out = decode(&log, &["--flow", "2", "--json"]);
    let doc = out.assert_success().json();
    let flows = doc["summary"]["flows"].as_array().expect("summary.flows");
    assert_eq!(flows.len(), 1, "{doc:#}");
    assert_eq!(u(&flows[0], "/packets"), 50);
    assert_eq!(u(&doc, "/summary/total/packets"), 50);
    assert_eq!(u(&doc, "/summary/total/loss/lost"), 0);
}

#[test]
fn decode_reports_the_rtp_jitter_the_live_receiver_reported() {
    let dir = TempDir::new("decode-rtp");
    let log = dir.path("recv.dplog");
    let rx = Receiver::start(&["--log", path_str(&log), "--json", "--sessions", "2"]);
    // An RTP stream (G.711.1 behind a real RTP header, 8 kHz clock), then plain probes.
    let rtp = send(
        "::1",
        rx.port,
        &[
            "--voip",
            "g711.1",
            "--voip-header",
            "rtp",
            "--count",
            "50",
            "--json",
        ],
    );
    rtp.assert_success();
    let plain = send(
        "127.0.0.1",
        rx.port,
        &[
            "--rate", "500pps", "--size", "64", "--count", "20", "--json",
        ],
    );
    plain.assert_success();
    let recv = rx.finish();
    recv.finished.assert_success();
    let sender_rtp = &rtp.json()["flows"][0]["received_rtp"];
    assert_eq!(u(sender_rtp, "/packets"), 50, "{sender_rtp}");
    assert!(plain.json()["flows"][0]["received_rtp"].is_null());
    let live: Vec<&serde_json::Value> = recv.flows.iter().map(|f| &f["rtp"]).collect();
    assert_eq!(live.len(), 2);
    assert!(live[1].is_null(), "the plain flow has no RTP jitter");

    let out = decode(&log, &["--json"]);
    out.assert_success();
    let doc = out.json();
    // Flows are keyed 1, 2 in the order their sessions reported.
    let logged = doc["received_rtp"].as_object().expect("received_rtp");
    assert_eq!(logged.keys().collect::<Vec<_>>(), ["1"], "{doc:#}");
    // The same figures as the live receiver computed, to the last bit.
    assert_eq!(&logged["1"], live[0]);
    // And as the sender reported them (its copy went through one more JSON parse).
    for name in ["last_ns", "mean_ns", "max_ns"] {
        let (ours, theirs) = (logged["1"][name].as_f64(), sender_rtp[name].as_f64());
        let (ours, theirs) = (ours.unwrap(), theirs.unwrap());
        assert!(
            (ours - theirs).abs() <= ours.abs() * 1e-15,
            "{name}: {ours} vs {theirs}"
        );
    }
    assert_eq!(logged["1"]["packets"], sender_rtp["packets"]);
    let text = decode(&log, &["--itgdec"]);
    text.assert_success();
    assert!(
        text.stdout
            .contains("Flow 1 RTP jitter (RFC 3550, against RTP timestamps)")
            && !text.stdout.contains("Flow 2 RTP jitter"),
        "{}",
        text.stdout
    );
    // The readable text has it in flow 1's block only.
    let text = decode(&log, &[]).assert_success().stdout.clone();
    let blocks = flow_blocks(&text);
    assert_eq!(blocks.len(), 3, "two flows and their total: {text}");
    assert!(blocks[0].starts_with("flow 1:"), "{text}");
    let rtp: Vec<&str> = blocks[0]
        .lines()
        .filter(|l| l.trim_start().starts_with("RTP jitter"))
        .collect();
    assert_eq!(rtp.len(), 1, "{text}");
    assert!(
        rtp[0].contains("over 50 packets (RFC 3550 §6.4.1"),
        "{}",
        rtp[0]
    );
    assert!(!blocks[1].contains("RTP jitter"), "{text}");
    assert!(!blocks[2].contains("RTP jitter"), "{text}");
}

/// The blocks of decode's text, each from its `flow N:` line (or `total of`) to the
/// next.
fn flow_blocks(text: &str) -> Vec<String> {
    let mut blocks: Vec<String> = Vec::new();
    for line in text.lines() {
        if line.starts_with("flow ") || line.starts_with("total of ") {
            blocks.push(String::new());
        }
        if let Some(b) = blocks.last_mut() {
            b.push_str(line);
            b.push('\n');
        }
    }
    blocks
}

/// The figures of a text line `  label   figures`: what follows the label column.
fn figures<'a>(block: &'a str, label: &str) -> &'a str {
    block
        .lines()
        .find_map(|l| {
            let rest = l.strip_prefix("  ")?.strip_prefix(label)?;
            rest.starts_with("  ").then(|| rest.trim())
        })
        .unwrap_or_else(|| panic!("no {label:?} line in\n{block}"))
}

/// One flow: one block with every figure in its unit, and no total repeating it.
#[test]
fn decode_text_of_one_flow_has_no_total_and_scales_its_units() {
    let dir = TempDir::new("decode-human");
    let log = receiver_log(&dir, 200);
    let out = decode(&log, &[]);
    out.assert_success();
    let text = &out.stdout;
    let blocks = flow_blocks(text);
    assert_eq!(blocks.len(), 1, "{text}");
    assert!(
        blocks[0].starts_with("flow 1: udp, meter owd, \"flow 0\", from 127.0.0.1 port "),
        "{text}"
    );
    for absent in ["TOTAL", "total of", "dualperf extras", "Average delay"] {
        assert!(!text.contains(absent), "{absent:?} in\n{text}");
    }
    let b = &blocks[0];
    assert_eq!(figures(b, "packets"), "200 received (200 unique), 200 sent");
    assert_eq!(figures(b, "lost"), "0 of 200 expected (0.000 %)");
    // 200 × 64 B = 12,800 B = 12.5 KiB.
    assert!(
        figures(b, "received").starts_with("12.5 KiB (12800 B) in "),
        "{b}"
    );
    // Loopback delays are microseconds (or milliseconds on a loaded host), never
    // `0.000003 s`.
    let delay = figures(b, "delay");
    let values: Vec<&str> = delay.split(", ").collect();
    assert_eq!(values.len(), 4, "{delay}");
    for (v, name) in values.iter().zip(["min ", "mean ", "max ", "sd "]) {
        let v = v.strip_prefix(name).unwrap_or_else(|| panic!("{delay}"));
        let (number, unit) = v.split_once(' ').unwrap_or_else(|| panic!("{v}"));
        assert!(number.parse::<f64>().is_ok(), "{v}");
        assert!(["ns", "µs", "ms"].contains(&unit), "{v}");
    }
    assert!(
        ["µs", "ms"]
            .iter()
            .any(|u| values[1].ends_with(&format!(" {u}"))),
        "a mean loopback delay in µs or ms: {delay}"
    );
    assert!(!text.contains("0.0000"), "{text}");
    for label in ["rate", "jitter", "IPDV", "PDV", "order", "DSCP/ECN"] {
        figures(b, label);
    }
}

/// Several flows: a block each, then their total.
#[test]
fn decode_text_of_two_flows_ends_with_their_total() {
    let dir = TempDir::new("decode-human-two");
    let log = dir.path("recv.dplog");
    let rx = Receiver::start(&["--log", path_str(&log), "--json", "--sessions", "2"]);
    for count in ["30", "50"] {
        send(
            "127.0.0.1",
            rx.port,
            &[
                "--rate", "500pps", "--size", "64", "--count", count, "--json",
            ],
        )
        .assert_success();
    }
    rx.finish().finished.assert_success();
    let out = decode(&log, &[]);
    let text = &out.assert_success().stdout;
    let blocks = flow_blocks(text);
    assert_eq!(blocks.len(), 3, "{text}");
    assert!(blocks[0].starts_with("flow 1:"), "{text}");
    assert!(blocks[1].starts_with("flow 2:"), "{text}");
    assert!(blocks[2].starts_with("total of 2 flows"), "{text}");
    assert_eq!(
        figures(&blocks[0], "packets"),
        "30 received (30 unique), 30 sent"
    );
    assert_eq!(
        figures(&blocks[1], "packets"),
        "50 received (50 unique), 50 sent"
    );
    assert_eq!(
        figures(&blocks[2], "packets"),
        "80 received (80 unique), 80 sent"
    );
}

/// `--interval` as text: an aligned table whose times count from the first window's
/// start, every packet in some row; no receive-clock epoch anywhere.
#[test]
fn decode_interval_text_is_a_table_of_times_since_the_start() {
    let dir = TempDir::new("decode-interval-text");
    let log = receiver_log(&dir, 200);
    let doc = decode(&log, &["--interval", "100ms", "--json"])
        .assert_success()
        .json();
    let windows = doc["intervals"].as_array().expect("intervals").len();
    let out = decode(&log, &["--interval", "100ms"]);
    let text = &out.assert_success().stdout;
    assert!(
        text.contains(
            "\nreceived per 100 ms window of receive time, from the first window's start\n"
        ),
        "{text}"
    );
    let lines: Vec<&str> = text.lines().collect();
    let head = lines
        .iter()
        .position(|l| l.starts_with("interval "))
        .unwrap_or_else(|| panic!("no table header in\n{text}"));
    let columns: Vec<&str> = lines[head]
        .split("  ")
        .map(str::trim)
        .filter(|c| !c.is_empty())
        .collect();
    assert_eq!(
        columns,
        [
            "interval",
            "packets",
            "received",
            "rx rate",
            "delay mean",
            "delay max",
            "jitter",
            "lost pkt"
        ]
    );
    assert!(lines[head + 1].chars().all(|c| c == '-'), "{text}");
    let rows = &lines[head + 2..head + 2 + windows];
    let mut packets = 0;
    for (k, row) in rows.iter().enumerate() {
        let want = format!("{:.2}-{:.2} s ", k as f64 / 10.0, (k + 1) as f64 / 10.0);
        assert!(row.starts_with(&want), "row {k}: {row}");
        // Every row as wide as the header: the columns line up.
        assert_eq!(row.chars().count(), lines[head].chars().count(), "{row}");
        let cells: Vec<&str> = row.split_whitespace().collect();
        packets += cells[2].parse::<u64>().unwrap_or_else(|_| panic!("{row}"));
    }
    assert_eq!(packets, 200, "{text}");
    // After the rows, the legend.
    assert!(lines[head + 2 + windows].starts_with("rx rate: "), "{text}");
    // No epoch nanoseconds (19 digits) and no 16-digit fractions.
    for token in text.split(|c: char| !c.is_ascii_digit()) {
        assert!(token.len() < 10, "{token} in\n{text}");
    }
    // The machine formats keep ns on the receiver's clock.
    let csv = decode(&log, &["--interval", "100ms", "--csv"])
        .assert_success()
        .stdout
        .clone();
    let first: Vec<&str> = csv.lines().nth(1).expect("a row").split(',').collect();
    assert!(first[0].len() >= 18, "{csv}");
    // And --itgdec keeps the CSV series after ITGDec's layout, as before.
    let itgdec = decode(&log, &["--interval", "100ms", "--itgdec"])
        .assert_success()
        .stdout
        .clone();
    assert!(itgdec.contains("TOTAL RESULTS"), "{itgdec}");
    assert!(itgdec.contains("\nstart_ns,end_ns,packets,"), "{itgdec}");
}

/// A window with no arrival is missing, not zero: `-` for its rate, delay and jitter.
#[test]
fn decode_interval_text_marks_empty_windows_missing() {
    let dir = TempDir::new("decode-interval-gaps");
    let log = dir.path("recv.dplog");
    let rx = Receiver::start(&["--log", path_str(&log), "--json", "--sessions", "1"]);
    // 200 ms on, 400 ms off: at least two whole windows of 100 ms in every silence.
    send(
        "127.0.0.1",
        rx.port,
        &[
            "--rate",
            "200pps",
            "--size",
            "64",
            "--on",
            "const:200",
            "--off",
            "const:400",
            "--count",
            "100",
            "--json",
        ],
    )
    .assert_success();
    rx.finish().finished.assert_success();
    let out = decode(&log, &["--interval", "100ms"]);
    let text = &out.assert_success().stdout;
    let empty: Vec<Vec<&str>> = text
        .lines()
        .map(|l| {
            l.split("  ")
                .map(str::trim)
                .filter(|c| !c.is_empty())
                .collect::<Vec<_>>()
        })
        .filter(|c| c.len() == 8 && c[0].ends_with(" s") && c[1] == "0")
        .collect();
    assert!(empty.len() >= 2, "no empty windows in\n{text}");
    for cells in &empty {
        assert_eq!(cells[2], "0 B", "{cells:?}");
        assert_eq!(&cells[3..], ["-", "-", "-", "-", "-"], "{cells:?}");
    }
}

/// `decode` feeds the log through the live receiver's streaming meter: every figure it
/// prints for the flow, histogram percentiles included, is the receiver's own.
#[test]
fn decode_prints_the_live_receivers_figures_exactly() {
    let doc = decode_matches_the_live_receiver("decode-live", "recv.dplog");
    assert_eq!(doc["log_end"]["compression"], serde_json::Value::Null);
}

/// The same through a zstd-compressed log (`--log NAME.zst`).
#[test]
fn decode_of_a_compressed_log_prints_the_live_receivers_figures_exactly() {
    let doc = decode_matches_the_live_receiver("decode-live-zst", "recv.dplog.zst");
    assert_eq!(doc["log_end"]["compression"], "zstd");
}

fn decode_matches_the_live_receiver(dir_name: &str, log_name: &str) -> serde_json::Value {
    let dir = TempDir::new(dir_name);
    let log = dir.path(log_name);
    let rx = Receiver::start(&["--log", path_str(&log), "--json", "--sessions", "1"]);
    let out = send(
        "127.0.0.1",
        rx.port,
        &[
            "--rate", "4000pps", "--size", "200", "--count", "4000", "--json",
        ],
    );
    out.assert_success();
    let recv_out = rx.finish().finished;
    recv_out.assert_success();
    let line = recv_out
        .stdout
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).expect("a JSON line"))
        .find(|v| v["type"] == "flow")
        .expect("a flow line");
    let mut live = line["data"]["summary"].clone();
    let decoded = decode(&log, &["--json"]);
    decoded.assert_success();
    let doc = decoded.json();
    assert_eq!(doc["log_end"]["complete"], true);
    assert_eq!(line["data"]["unlogged_records"], 0);
    let mut from_log = doc["summary"]["flows"][0].clone();
    assert_eq!(u(&from_log, "/packets"), 4000);
    // The log keys flows by its own numbering; everything else must be identical.
    live["flow"] = serde_json::Value::Null;
    from_log["flow"] = serde_json::Value::Null;
    assert_eq!(live, from_log);
    doc
}
