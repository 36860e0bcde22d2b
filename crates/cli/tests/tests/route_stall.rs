//! The router's forwarding thread never waits for its stats file: with a writer that
//! takes a second per write (a disk that stalls), forwarding loses nothing. Before the
//! writer had a thread of its own, each write held the loop, and the RX ring (a few ms
//! of traffic) overflowed.

use std::process::{Command, Stdio};

use crate::lab::{privileged, Lab};
use crate::support::{path_str, TempDir, BIN};

#[test]
fn a_stats_writer_stuck_for_a_second_costs_no_frame() {
    if !privileged() {
        return;
    }
    let lab = Lab::up_shipped("st", "one-router.toml");
    let dir = TempDir::new("route-stall");
    // Replace the lab's r1 by one whose writer sleeps 1 s before every stats write.
    let state = lab.state_json();
    let r1 = &state["routers"][0];
    assert_eq!(r1["node"], "r1");
    let pid = r1["pid"].as_i64().unwrap() as i32;
    // SAFETY: kill(2) on the router process the lab started.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGTERM) }, 0);
    while std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| !s.contains(") Z")) {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let stats = dir.path("r1.stats.json");
    let mut router = Command::new("ip")
        .args([
            "netns",
            "exec",
            &format!("dp-{}.r1", lab.name),
            BIN,
            "route",
        ])
        .args(["--config", r1["config"].as_str().unwrap()])
        .args(["--stats", path_str(&stats), "--debug-stats-delay", "1s"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    struct Reap<'a>(&'a mut std::process::Child);
    impl Drop for Reap<'_> {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
    let guard = Reap(&mut router);
    let router_pid = guard.0.id() as i32;
    // Up once it has written its first snapshot (a second after starting).
    while !stats.exists() {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    // 5 s at 20,000 frames/s of 1000-byte payloads: each stuck write spans 20,000
    // frames, far beyond a ring of 8192 slots, were the loop to wait for it.
    for dest in ["198.18.2.2", "2001:2:0:2::2"] {
        let flow = lab.flow(
            dest,
            &[
                "--udp",
                "--rate",
                "20000pps",
                "--size",
                "1000",
                "--duration",
                "5s",
            ],
        );
        let sent = flow["sent"]["packets"].as_u64().unwrap();
        let lost = flow["received"]["loss"]["lost"].as_u64().unwrap();
        eprintln!("{dest}: {sent} sent, {lost} lost while the stats writer stalled");
        assert!(sent >= 99_000, "{sent}");
        assert_eq!(lost, 0, "{dest}: frames lost while the writer was stuck");
    }
    // SIGTERM: the router writes its last snapshot (the writer still sleeps first).
    // SAFETY: kill(2) on the router this test started and has not reaped.
    assert_eq!(unsafe { libc::kill(router_pid, libc::SIGTERM) }, 0);
    let status = guard.0.wait().unwrap();
    assert!(status.success(), "{status}");
    let doc: serde_json::Value = serde_json::from_slice(&std::fs::read(&stats).unwrap()).unwrap();
    let writer = &doc["writer"];
    // The writer really was stuck: every write waited its second (a sleep never ends
    // early), and snapshots piled up behind it.
    assert!(writer["max_stats_write_ns"].as_u64().unwrap() >= 1_000_000_000);
    assert!(writer["stats_writes"].as_u64().unwrap() >= 5, "{writer}");
    assert!(
        writer["stats_superseded"].as_u64().unwrap() >= 5,
        "{writer}"
    );
    let mut forwarded = 0;
    for iface in doc["interfaces"].as_array().unwrap() {
        assert_eq!(iface["io"]["kernel_rx_drops"], 0, "{iface}");
        assert_eq!(iface["io"]["tx_backlog_drops"], 0, "{iface}");
        forwarded += iface["ingress"]["forwarded_ipv4"].as_u64().unwrap()
            + iface["ingress"]["forwarded_ipv6"].as_u64().unwrap();
    }
    assert!(forwarded >= 198_000, "{forwarded}");
    drop(guard);
    lab.down();
}
