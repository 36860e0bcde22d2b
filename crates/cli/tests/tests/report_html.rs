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
    // 4 metrics × 2 tables (the size sweep, the VoIP group).
    assert_eq!(html.matches("<svg ").count(), 8);
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
    assert_eq!(dom.matches("<svg ").count(), 8, "the DOM as loaded");
    assert!(dom.contains("VoIP – Throughput (Mbit/s)"));
    let log = String::from_utf8_lossy(&out.stderr);
    let console: Vec<&str> = log.lines().filter(|l| l.contains("CONSOLE")).collect();
    assert!(console.is_empty(), "console messages: {console:#?}");
}
