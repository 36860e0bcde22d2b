//! `dualperf decode`: logs written by `recv --log` and `send --log` decode to exact counts as JSON, CSV, ITGDec text and interval series; bad input fails clearly.

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

#[test]
fn decode_text_has_itgdec_labels() {
    let dir = TempDir::new("decode-text");
    let log = receiver_log(&dir, 200);
    let out = decode(&log, &[]);
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
    assert!(text.contains("sent: 50 packets, 4000 bytes"), "{text}");
    assert!(!text.contains("100.00 %"), "{text}");
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
    let text = decode(&log, &[]);
    text.assert_success();
    assert!(
        text.stdout
            .contains("Flow 1 RTP jitter (RFC 3550, against RTP timestamps)")
            && !text.stdout.contains("Flow 2 RTP jitter"),
        "{}",
        text.stdout
    );
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
