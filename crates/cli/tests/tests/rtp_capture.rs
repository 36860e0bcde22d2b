//! A dualperf RTP stream as Wireshark sees it: tshark captures a G.711 flow on loopback and must find one RTP stream with no sequence errors, whose loss and RFC 3550 jitter agree with dualperf's.
//!
//! Needs root (packet capture) and tshark. Without them the test is skipped, except under
//! `CI=true`, where a missing capability is a failure.

use std::process::{Child, Command, Stdio};

use crate::support::{send, u, Receiver, TempDir};

/// Kills the capture if the test fails before stopping it.
struct Capture(Child);

impl Drop for Capture {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn capture_possible() -> Result<(), String> {
    // The effective user id is the second field of the Uid: line.
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let root = status
        .lines()
        .find(|l| l.starts_with("Uid:"))
        .and_then(|l| l.split_whitespace().nth(2))
        == Some("0");
    if !root {
        return Err("not root: packet capture needs CAP_NET_RAW".into());
    }
    match Command::new("tshark").arg("--version").output() {
        Ok(o) if o.status.success() => Ok(()),
        _ => Err("tshark is not installed (apt-get install tshark)".into()),
    }
}

/// One row of `tshark -z rtp,streams`: packets, lost, mean and max jitter in ms.
fn wireshark_stream(pcap: &str, port: u16) -> Vec<(u64, i64, f64, f64)> {
    let out = Command::new("tshark")
        .args([
            "-r",
            pcap,
            "-d",
            &format!("udp.port=={port},rtp"),
            "-q",
            "-z",
            "rtp,streams",
        ])
        .output()
        .expect("run tshark");
    let text = String::from_utf8_lossy(&out.stdout);
    text.lines()
        .filter(|l| l.contains("127.0.0.1") && !l.contains("Src IP"))
        .map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            // Start End SrcIP SrcPort DstIP DstPort SSRC Payload Pkts Lost (pct) MinΔ MeanΔ MaxΔ MinJ MeanJ MaxJ [Problems]
            assert!(f.len() >= 17, "unexpected tshark line: {l}\n{text}");
            assert_eq!(
                f.get(17),
                None,
                "tshark reports problems with the stream: {l}"
            );
            (
                f[8].parse().unwrap(),
                f[9].parse().unwrap(),
                f[15].parse().unwrap(),
                f[16].parse().unwrap(),
            )
        })
        .collect()
}

#[test]
fn wireshark_sees_one_clean_rtp_stream_whose_jitter_and_loss_agree_with_dualperf() {
    if let Err(why) = capture_possible() {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "under CI=true this test must run: {why}"
        );
        eprintln!("skipped: {why}");
        return;
    }
    let dir = TempDir::new("rtp-capture");
    let pcap = dir.path("rtp.pcapng");
    let pcap = pcap.to_str().unwrap().to_owned();
    let rx = Receiver::start(&["--json", "--sessions", "1"]);
    let port = rx.port;
    let mut capture = Capture(
        Command::new("tshark")
            .args([
                "-i",
                "lo",
                "-f",
                &format!("udp port {}", rx.port),
                "-w",
                &pcap,
            ])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start tshark"),
    );
    // tshark says "Capturing on 'Loopback: lo'" once it listens.
    {
        use std::io::{BufRead, BufReader};
        let stderr = capture.0.stderr.take().expect("tshark stderr");
        let mut lines = BufReader::new(stderr).lines();
        assert!(
            lines.any(|l| l.map(|l| l.contains("Capturing on")).unwrap_or(false)),
            "tshark did not start capturing"
        );
        std::thread::spawn(move || lines.for_each(drop));
    }
    // dumpcap announces itself a moment before its filter is attached: without this
    // pause the first packet is sometimes missing from the capture (seen: 149 of 150).
    std::thread::sleep(std::time::Duration::from_millis(500));
    let out = send(
        "127.0.0.1",
        rx.port,
        &["--voip", "g711.2", "--duration", "3s", "--json"],
    );
    out.assert_success();
    rx.finish().finished.assert_success();
    // Stop the capture cleanly so the file is complete. The capture hands packets over
    // in blocks with a timeout (TPACKET_V3): without a pause the last packet was
    // sometimes missing (seen: 149 of 150).
    std::thread::sleep(std::time::Duration::from_millis(1500));
    let _ = Command::new("kill")
        .args(["-INT", &capture.0.id().to_string()])
        .status();
    let _ = capture.0.wait();

    let f = &out.json()["flows"][0];
    let sent = u(f, "/sent/packets");
    let streams = wireshark_stream(&pcap, port);
    assert_eq!(streams.len(), 1, "one RTP stream: {streams:?}");
    let (packets, lost, mean_ms, max_ms) = streams[0];
    assert_eq!(packets, sent);
    assert_eq!(u(f, "/received/packets"), packets);
    assert_eq!(lost, 0);
    assert_eq!(u(f, "/received/loss/lost"), 0);
    // tshark prints milliseconds with 3 decimals: allow 5 % plus half a display unit.
    let ours = &f["received_rtp"];
    for (name, theirs_ms) in [("mean_ns", mean_ms), ("max_ns", max_ms)] {
        let ours_ms = ours[name].as_f64().unwrap() / 1e6;
        let tolerance = 0.05 * theirs_ms + 0.0005;
        assert!(
            (ours_ms - theirs_ms).abs() <= tolerance,
            "jitter {name}: dualperf {ours_ms:.4} ms, Wireshark {theirs_ms:.3} ms"
        );
    }
}
