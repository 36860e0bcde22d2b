//! The HTML report in a real browser: headless Chromium (Debian's `chromium`) loads the
//! page, every plot is in the DOM, and nothing is logged to the console. The page is
//! static (no script, link, image, frame or CSS URL, the only URL the SVG namespace), so
//! it makes no network request; that is checked on its text.
//!
//! Needs `chromium`. Without it the test is skipped, except under `CI=true`, where
//! `.ci/run` installs it and a missing browser is a failure.

use std::process::Command;

use crate::support::{path_str, run, TempDir};

const PLAN: &str = r#"version = 1
name = "html"
repetitions = 2
duration = "200ms"

[flow]
udp = true
rate = "500pps"

[factors]
size = [64, 512]

[[points]]
label = "G.711.1"
group = "VoIP"
voip = "g711.1"
rate = false
"#;

#[test]
fn headless_chromium_loads_the_report_with_every_plot_and_no_console_message() {
    if Command::new("chromium")
        .arg("--version")
        .output()
        .map_or(true, |o| !o.status.success())
    {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "under CI=true this test must run: chromium is not installed (apt-get install chromium)"
        );
        eprintln!("skipped: chromium is not installed");
        return;
    }
    let tmp = TempDir::new("report-html");
    let plan = tmp.path("plan.toml");
    std::fs::write(&plan, PLAN).unwrap();
    let dir = tmp.path("results");
    run(&["run", path_str(&plan), "--dir", path_str(&dir)]).assert_success();
    let page = tmp.path("report.html");
    run(&["report", path_str(&dir), "--html", path_str(&page)]).assert_success();
    let html = std::fs::read_to_string(&page).unwrap();
    // 4 metrics × 2 tables (the size sweep, the VoIP group), each a chart of the means
    // and a box plot of the runs; and each of the 3 points' delay distributions. A
    // table's loss with none lost in any run (a mean of 0 over runs that cannot be
    // below it) is said in words instead of its 2 plots.
    let doc = run(&["report", path_str(&dir), "--json"])
        .assert_success()
        .json();
    let lossless = doc["rows"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["metric"] == "loss")
        .all(|r| ["ipv4", "ipv6"].iter().all(|s| r[s]["mean"] == 0.0));
    let plots = if lossless { 15 } else { 19 };
    assert_eq!(html.matches("<svg ").count(), plots);
    assert_eq!(
        html.matches("<p class=\"not-drawn\">Packet loss (%): no loss in any run")
            .count(),
        if lossless { 2 } else { 0 }
    );
    assert_eq!(html.matches("distribution, every run</title>").count(), 3);
    // What was run, where and when, and dualperf's version, on the page and every plot.
    assert!(
        html.contains("<p class=\"meta\">plan html · host "),
        "{html}"
    );
    assert_eq!(html.matches(r##"fill="#555">plan html · "##).count(), plots);
    assert!(html.contains(concat!("dualperf ", env!("CARGO_PKG_VERSION"))));
    for never in [
        "<script", "<link", "<img", "<iframe", "src=", "href=", "url(", "@import",
    ] {
        assert!(!html.contains(never), "the page holds {never}");
    }
    assert_eq!(
        html.matches("http").count(),
        html.matches("xmlns=\"http://www.w3.org/2000/svg\"").count()
    );
    let profile = tmp.path("chromium-profile");
    let out = Command::new("chromium")
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            // Whatever the browser itself might try, nothing leaves the machine.
            "--host-resolver-rules=MAP * ~NOTFOUND",
            "--enable-logging=stderr",
            "--v=0",
        ])
        .arg(format!("--user-data-dir={}", path_str(&profile)))
        .arg("--dump-dom")
        .arg(format!("file://{}", path_str(&page)))
        .output()
        .expect("run chromium");
    assert!(
        out.status.success(),
        "chromium failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let dom = String::from_utf8_lossy(&out.stdout);
    assert_eq!(dom.matches("<svg ").count(), plots, "the DOM as loaded");
    // One unit per metric on the page, chosen from its values (64 to 2048 kbit/s):
    // kbit/s in every table and plot, never Mbit/s beside it.
    assert!(dom.contains("VoIP – Throughput (kbit/s)"));
    assert!(!dom.contains("Mbit/s"), "one throughput unit on the page");
    // Two runs a side: the delays' medians beside their means, and the plots say what
    // their significance marks mean.
    assert!(dom.contains("Median IPv4"));
    assert!(dom.contains("IPv6 vs IPv4 by Welch's t-test (2 or more runs a side)"));
    let log = String::from_utf8_lossy(&out.stderr);
    let console: Vec<&str> = log.lines().filter(|l| l.contains("CONSOLE")).collect();
    assert!(console.is_empty(), "console messages: {console:#?}");

    // A screenshot of the page as drawn (kept with DUALPERF_KEEP_SCREENSHOT=PATH, to
    // look at): a PNG of the window's size, with more than a blank page's bytes.
    let shot = std::env::var("DUALPERF_KEEP_SCREENSHOT")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|_| tmp.path("report.png"));
    let out = Command::new("chromium")
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--disable-background-networking",
            "--host-resolver-rules=MAP * ~NOTFOUND",
            "--hide-scrollbars",
            "--window-size=1400,2400",
        ])
        .arg(format!("--user-data-dir={}", path_str(&profile)))
        .arg(format!("--screenshot={}", path_str(&shot)))
        .arg(format!("file://{}", path_str(&page)))
        .output()
        .expect("run chromium");
    assert!(
        out.status.success(),
        "chromium: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let png = std::fs::read(&shot).expect("the screenshot");
    assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
    let dim = |at: usize| u32::from_be_bytes(png[at..at + 4].try_into().unwrap());
    assert_eq!((dim(16), dim(20)), (1400, 2400), "IHDR width and height");
    assert!(
        png.len() > 60_000,
        "a page of tables and plots, not a blank one: {} B",
        png.len()
    );
}
