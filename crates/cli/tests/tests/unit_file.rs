//! `dist/dualperf-agent.service`: systemd accepts it as written (every directive known,
//! the binary it starts present), and its hardening stays where `docs/agent.md` says it
//! is (`systemd-analyze security` rates its exposure below 2.0, "OK"). Needs
//! systemd-analyze; under `CI=true` its absence is a failure.

use std::process::Command;

use crate::support::{path_str, TempDir, BIN};

fn analyze(args: &[&str]) -> Option<std::process::Output> {
    match Command::new("systemd-analyze").args(args).output() {
        Ok(o) => Some(o),
        Err(e) => {
            assert!(
                std::env::var("CI").as_deref() != Ok("true"),
                "under CI=true systemd-analyze must be installed: {e}"
            );
            eprintln!("skipped: systemd-analyze: {e}");
            None
        }
    }
}

#[test]
fn the_agent_unit_verifies_and_stays_hardened() {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../dist/dualperf-agent.service"
    ))
    .unwrap();
    assert!(text.contains("ExecStart=/usr/local/bin/dualperf agent --key-file"));
    // Verify it against the binary under test in place of the installed one.
    let dir = TempDir::new("unit");
    let unit = dir.path("dualperf-agent.service");
    std::fs::write(&unit, text.replace("/usr/local/bin/dualperf", BIN)).unwrap();
    let Some(out) = analyze(&["verify", path_str(&unit)]) else {
        return;
    };
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{said}");
    assert!(said.trim().is_empty(), "systemd-analyze verify: {said}");
    let out = analyze(&["security", "--offline=yes", path_str(&unit)]).unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let level: f64 = text
        .lines()
        .find_map(|l| {
            l.split_once("Overall exposure level for ")?
                .1
                .split(": ")
                .nth(1)
        })
        .and_then(|rest| rest.split_whitespace().next()?.parse().ok())
        .unwrap_or_else(|| panic!("no exposure level in:\n{text}"));
    assert!(level < 2.0, "exposure {level}:\n{text}");
}
