//! `dualperf report DIR` on a `dualperf rfc2544` run directory: RFC 2544's tables under
//! the tester's ceiling, the plots, the HTML page, and `--json` the document itself.

use crate::support::{path_str, run, TempDir};

/// A self-contained rfc2544.json: a kernel device, 64-byte IPv4 at the tester's
/// ceiling (a lower bound) and 84-byte IPv6 below it.
const DOC: &str = r#"{
  "schema": "dualperf.rfc2544/1",
  "device": {"name": "dut", "kind": "kernel", "lab": "dut-kernel"},
  "tester": {"method": "xdp-live-frames", "cpu": "virtual",
             "ceiling": [{"frame_size": 64, "v6": false, "fps": 4700000, "cores": 1},
                         {"frame_size": 84, "v6": true, "fps": 4200000, "cores": 1}]},
  "settings": {"quick": true, "initial_duration_ns": 1000000000, "final_duration_ns": 10000000000,
               "pdr_ratio": 0.005, "precision": 0.005, "timeout_ns": 2000000, "bidirectional": false,
               "rfc4814_ports": true, "ramp_ns": 100000000, "b2b_repeats": 5},
  "paths": [
    {"path": "ipv4", "frame_size": 64, "direction": "a_to_b",
     "throughput": {"ndr_fps": 4700000, "pdr_fps": 4700000, "ndr_bps": 2406400000, "pdr_bps": 2406400000,
                    "ndr_upper_fps": null, "pdr_upper_fps": null, "lower_bound": true, "converged": true,
                    "trials": []}},
    {"path": "ipv6", "frame_size": 84, "direction": "a_to_b",
     "throughput": {"ndr_fps": 900000, "pdr_fps": 950000, "ndr_bps": 604800000, "pdr_bps": 638400000,
                    "ndr_upper_fps": 905000, "pdr_upper_fps": 955000, "lower_bound": false, "converged": true,
                    "trials": []}}
  ]
}"#;

#[test]
fn an_rfc2544_directory_reports_its_tables_under_the_ceiling_with_plots_and_json() {
    let tmp = TempDir::new("report-rfc2544");
    let dir = tmp.path("run");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("rfc2544.json"), DOC).unwrap();
    let (html, svg) = (tmp.path("page.html"), tmp.path("svg"));
    let out = run(&[
        "report",
        path_str(&dir),
        "--html",
        path_str(&html),
        "--svg",
        path_str(&svg),
    ]);
    out.assert_success();
    let lines: Vec<&str> = out.stdout.lines().collect();
    assert_eq!(
        lines[2],
        "Tester ceiling (back to back, frames/s): 64 B IPv4 4,700,000 (1 core), 84 B IPv6 4,200,000 (1 core)"
    );
    assert_eq!(
        &lines[5..9],
        [
            "size B  path  dir  NDR frames/s  NDR Mbit/s  PDR frames/s  PDR Mbit/s    search",
            "-------------------------------------------------------------------------------",
            "64      IPv4  a→b   ≥ 4,700,000    ≥ 2406.4   ≥ 4,700,000    ≥ 2406.4  0 trials",
            "84      IPv6  a→b       900,000       604.8       950,000       638.4  0 trials",
        ]
    );
    let page = std::fs::read_to_string(&html).unwrap();
    assert_eq!(page.matches("<p class=\"ceiling\">").count(), 1);
    assert_eq!(page.matches("<svg").count(), 1);
    let files: Vec<_> = std::fs::read_dir(&svg).unwrap().collect();
    assert_eq!(files.len(), 1);
    assert!(svg.join("01-rfc2544-throughput.svg").is_file());

    let json = run(&["report", path_str(&dir), "--json"]);
    json.assert_success();
    let want: serde_json::Value = serde_json::from_str(DOC).unwrap();
    assert_eq!(json.json(), want);

    // It is reported alone, and has no CSV.
    let two = run(&["report", path_str(&dir), path_str(&dir)]);
    assert_eq!(two.code(), Some(2), "{}", two.stderr);
    assert!(
        two.stderr
            .contains("an rfc2544 run directory is reported alone"),
        "{}",
        two.stderr
    );
    let csv = run(&["report", path_str(&dir), "--csv"]);
    assert_eq!(csv.code(), Some(2), "{}", csv.stderr);
}
