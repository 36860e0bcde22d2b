//! The lab's devices under test for `dualperf rfc2544`, for real: a `kernel` node
//! (plans/topologies/dut-kernel.toml) forwards both families with Linux, a `tayga` node
//! (plans/topologies/dut-tayga.toml) translates IPv6 to IPv4 and back with TAYGA's
//! stateless NAT64, and `lab down` leaves no namespace and no TAYGA behind. Root and
//! TAYGA (`apt-get install tayga`) are needed, as in `lab.rs`.
//!
//! Addresses (both labs): sender 198.18.1.1 / 2001:2:0:1::1, dut 198.18.1.2 and
//! 198.18.2.1, receiver 198.18.2.2 / 2001:2:0:2::2. Through TAYGA the receiver is
//! 2001:2:0:6464::c612:202 (the prefix 2001:2:0:6464::/96 + 198.18.2.2) and the sender
//! 198.19.1.1 (its static map).

use crate::lab::{alive, privileged, Lab};
use crate::support::{run_with_env, TempDir};

/// A short TCP flow: exact counts however busy the machine.
const TCP: [&str; 5] = ["--tcp", "--duration", "300ms", "--rate", "100pps"];

/// One flow from `from` to each of `dests` in turn: the peer address the far end's
/// `recv` saw for each, each checked to have received every message sent.
fn peers(lab: &Lab, from: &str, to: &str, dests: &[&str]) -> Vec<String> {
    let sessions = dests.len().to_string();
    let rx = lab.spawn(to, &["recv", "--sessions", &sessions, "--json"]);
    rx.wait_stderr_line(|l| l.contains("listening on"));
    for dest in dests {
        lab.exec(from, &[&["send", dest][..], &TCP].concat())
            .assert_success();
    }
    let seen = rx.finish();
    seen.assert_success();
    seen.stdout
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|v| v["type"] == "flow")
        .map(|v| {
            let f = &v["data"];
            let peer = f["peer"].as_str().unwrap_or_default().to_owned();
            let (sent, got) = (f["sent_packets"].as_u64(), f["summary"]["packets"].as_u64());
            assert!(
                sent.is_some_and(|s| s > 0) && got == sent,
                "{peer}: sent {sent:?}, received {got:?}"
            );
            peer
        })
        .collect()
}

#[test]
fn a_kernel_dut_forwards_both_families_and_a_tayga_dut_translates_both_ways() {
    if !privileged() {
        return;
    }
    let kernel = Lab::up_shipped("dk", "dut-kernel.toml");
    let tayga = Lab::up_shipped("dt", "dut-tayga.toml");
    assert_eq!(
        peers(
            &kernel,
            "sender",
            "receiver",
            &["198.18.2.2", "2001:2:0:2::2"]
        ),
        ["198.18.1.1", "2001:2:0:1::1"]
    );
    // IPv6 to the prefix + the receiver's IPv4 arrives as IPv4 from the sender's map...
    assert_eq!(
        peers(&tayga, "sender", "receiver", &["2001:2:0:6464::c612:202"]),
        ["198.19.1.1"]
    );
    // ...and IPv4 to that map arrives as IPv6 from the prefix + the receiver's IPv4.
    assert_eq!(
        peers(&tayga, "receiver", "sender", &["198.19.1.1"]),
        ["2001:2:0:6464::c612:202"]
    );
    // TAYGA runs in the dut's namespace, as the state records it, with its config.
    let state = tayga.state_json();
    let procs = state["tayga"].as_array().expect("the state lists TAYGA");
    assert_eq!(procs.len(), 1, "{state}");
    let pid = procs[0]["pid"].as_u64().unwrap();
    let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap();
    assert!(String::from_utf8_lossy(&cmdline).contains("tayga"));
    let conf = format!("/run/dualperf/labs/{}/dut-tayga.conf", tayga.name);
    let conf = std::fs::read_to_string(conf).unwrap();
    assert!(
        conf.contains("prefix 2001:2:0:6464::/96\n")
            && conf.contains("map 198.19.1.1 2001:2:0:1::1\n"),
        "{conf}"
    );
    assert!(kernel.state_json().get("tayga").is_none());
    let status = crate::support::run(&["lab", "status", &tayga.name]);
    status.assert_success();
    assert!(
        status
            .stdout
            .contains(&format!("tayga dut pid {pid} running (/run/dualperf/labs/")),
        "{}",
        status.stdout
    );

    tayga.down();
    kernel.down();
    assert!(tayga.namespaces().is_empty(), "{:?}", tayga.namespaces());
    assert!(kernel.namespaces().is_empty(), "{:?}", kernel.namespaces());
    assert!(!alive(pid), "TAYGA survived lab down");
}

#[test]
fn a_tayga_that_does_not_start_fails_lab_up_and_leaves_nothing() {
    if !privileged() {
        return;
    }
    // A `tayga` first in PATH that makes the TUN with the real one, then refuses to run.
    let real = ["/usr/sbin/tayga", "/usr/local/sbin/tayga"]
        .into_iter()
        .find(|p| std::path::Path::new(p).is_file())
        .expect("TAYGA is installed (apt-get install tayga)");
    let bin = TempDir::new("dut-fake-tayga");
    let fake = bin.path("tayga");
    std::fs::write(
        &fake,
        format!(
            "#!/bin/sh\ncase \"$1\" in --mktun) exec {real} \"$@\";; esac\n\
             echo 'fake tayga: refusing to run' >&2\nexit 1\n"
        ),
    )
    .unwrap();
    std::fs::set_permissions(&fake, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let path = format!(
        "{}:{}",
        bin.path("").display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let name = format!("tdf-{}", std::process::id() % 100_000);
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../plans/topologies/dut-tayga.toml"
    ))
    .unwrap()
    .replace("name = \"dut-tayga\"", &format!("name = \"{name}\""));
    let dir = TempDir::new("dut-fail-topo");
    let topo = dir.path("topo.toml");
    std::fs::write(&topo, text).unwrap();
    let lab = Lab::guard(&name);
    let up = run_with_env(&["lab", "up", topo.to_str().unwrap()], ("PATH", &path));
    assert_eq!(up.status.code(), Some(1), "{}", up.stderr);
    assert_eq!(
        up.stderr,
        "dualperf: error: tayga on node dut did not start: fake tayga: refusing to run\n"
    );
    assert!(lab.namespaces().is_empty(), "{:?}", lab.namespaces());
    let state = format!("/run/dualperf/labs/{name}/state.json");
    assert!(!std::path::Path::new(&state).exists());
}
