//! `dist/dualperf-agent.service`: systemd accepts it as written (every directive known,
//! the binary it starts present), and its hardening stays where `docs/agent.md` says it
//! is (`systemd-analyze security` rates its exposure below 2.0, "OK"). Needs
//! systemd-analyze; under `CI=true` its absence is a failure. What verify says about other
//! units the host has installed is not ours to judge.

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

/// The unit's file name, as verify names it in what it says about it.
const UNIT: &str = "dualperf-agent.service";

/// Kinds of systemd unit, as their files end.
const UNIT_KINDS: [&str; 11] = [
    ".service",
    ".socket",
    ".target",
    ".mount",
    ".automount",
    ".swap",
    ".timer",
    ".path",
    ".slice",
    ".scope",
    ".device",
];

/// The unit another unit file (or a drop-in of one) that `head`, the part of a line of
/// verify before its first ':', names; `None` if it names none.
fn unit_named(head: &str) -> Option<&str> {
    head.split('/')
        .rev()
        .map(|part| part.strip_suffix(".d").unwrap_or(part))
        .find(|part| !part.contains(' ') && UNIT_KINDS.iter().any(|k| part.ends_with(k)))
}

/// The lines of `systemd-analyze verify`'s report that bear on our unit: those about it,
/// and those about no unit in particular. Verify also loads the units ours is ordered
/// after, and what they pull in, so it speaks of whatever else the host has installed
/// (Debian's irtt.service: "Special user nobody configured"): those lines are not ours
/// to judge.
fn about_our_unit(said: &str) -> Vec<&str> {
    said.lines()
        .filter(|l| !l.trim().is_empty())
        .filter(|l| {
            let head = l.split_once(':').map_or("", |(h, _)| h);
            unit_named(head).is_none_or(|u| u == UNIT)
        })
        .collect()
}

#[test]
fn verify_is_judged_on_what_it_says_about_our_unit_only() {
    let said =
        "/lib/systemd/system/irtt.service:9: Special user nobody configured, this is not safe!
/etc/systemd/system/ssh.service.d/override.conf:3: Unknown key 'X' in section [Service], ignoring.
network-online.target: Failed to load configuration: No such file or directory
/tmp/dualperf-unit-1/dualperf-agent.service:22: Unknown key 'FooBar' in section [Service], ignoring.
dualperf-agent.service: Command /usr/local/bin/dualperf is not executable: No such file or directory
Failed to create /init.scope control group: Permission denied

";
    assert_eq!(
        about_our_unit(said),
        [
            "/tmp/dualperf-unit-1/dualperf-agent.service:22: Unknown key 'FooBar' in section [Service], ignoring.",
            "dualperf-agent.service: Command /usr/local/bin/dualperf is not executable: No such file or directory",
            "Failed to create /init.scope control group: Permission denied",
        ]
    );
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
    let ours = about_our_unit(&said);
    assert!(
        ours.is_empty(),
        "systemd-analyze verify: {}",
        ours.join("\n")
    );
    // A failure of verify is ours unless it spoke of other units only.
    assert!(
        out.status.success() || said.lines().any(|l| !l.trim().is_empty()),
        "systemd-analyze verify failed: {said}"
    );
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
