//! A mesh campaign over a fleet: 16 lab hosts behind two kernel routers
//! (`plans/topologies/fleet16.toml`), an agent on each, the queue and results in a real
//! PostgreSQL in the lab's `ctl` host, two controllers there. Two rounds of every ordered
//! pair, both families, a light RTT test and an exclusive throughput test. During the
//! campaign one agent is killed and one controller is SIGKILLed: the dead agent's runs
//! are recorded failed with the reason, the other controller takes the dead one's claims
//! once they expire, and every run ends done or failed. Needs root; under `CI=true` a
//! missing capability or PostgreSQL is a failure.

use std::time::{Duration, Instant};

use serde_json::Value;

use crate::lab::{privileged, Lab};
use crate::pg::PgCluster;
use crate::support::{path_str, Proc, TempDir};

const HOSTS: usize = 16;

/// The mesh of the fleet's 16 hosts; h15 is listed without IPv6, so its IPv6 runs are
/// recorded failed as such.
fn mesh() -> String {
    let mut text = String::from(
        "version = 1\nname = \"fleet\"\nrounds = 2\ninterval = \"3s\"\nslip = \"1s\"\n",
    );
    for i in 1..=HOSTS {
        let link = i + 1;
        text.push_str(&format!(
            "\n[[agent]]\nname = \"h{i:02}\"\nipv4 = \"198.18.{link}.1\"\n"
        ));
        if i != 15 {
            text.push_str(&format!("ipv6 = \"2001:2:0:{link:x}::1\"\n"));
        }
    }
    text.push_str(
        "\n[[test]]\nname = \"rtt\"\nargs = [\"--meter\", \"rtt\", \"--rate\", \"200pps\", \"--duration\", \"100ms\"]\n\
         \n[[test]]\nname = \"throughput\"\nexclusive = true\nargs = [\"--udp\", \"--bulk\", \"--rate\", \"20mbit\", \"--duration\", \"100ms\"]\n",
    );
    text
}

/// `export --store --sql` in the lab's ctl host: the rows as JSON objects.
fn sql(lab: &Lab, url: &str, query: &str) -> Vec<Value> {
    let out = lab.exec("ctl", &["export", "--store", url, "--json", "--sql", query]);
    out.assert_success();
    out.json().as_array().unwrap().clone()
}

fn count(lab: &Lab, url: &str, filter: &str) -> i64 {
    let q =
        format!("SELECT count(*) AS n FROM campaign_runs WHERE campaign = 'fleet' AND {filter}");
    sql(lab, url, &q)[0]["n"].as_i64().unwrap()
}

fn until(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(900);
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(500));
    }
}

#[test]
fn a_mesh_campaign_over_16_hosts_survives_a_dead_agent_and_a_dead_controller() {
    if !privileged() {
        return;
    }
    let lab = Lab::up_shipped("fleet", "fleet16.toml");
    let ctl_ns = format!("dp-{}.ctl", lab.name());
    let Some(pg) = PgCluster::start_in("fleet", &ctl_ns, "127.0.0.1") else {
        return;
    };
    let tmp = TempDir::new("fleet");
    let key = tmp.path("agent.key");
    std::fs::write(&key, "fleet-key\n").unwrap();
    let mesh_file = tmp.path("fleet.toml");
    std::fs::write(&mesh_file, mesh()).unwrap();
    let mut agents: Vec<Option<Proc>> = (1..=HOSTS)
        .map(|i| {
            let args = [
                "agent",
                "--key-file",
                path_str(&key),
                "--allow",
                "198.18.0.0/15,2001:2::/48",
                "--threads",
                "1",
            ];
            let a = lab.spawn(&format!("h{i:02}"), &args);
            a.wait_stderr_line(|l| l.starts_with("dualperf agent: listening on"));
            Some(a)
        })
        .collect();
    let controller = |name: &str| {
        lab.spawn(
            "ctl",
            &[
                "campaign",
                path_str(&mesh_file),
                "--store",
                &pg.url,
                "--key-file",
                path_str(&key),
                "--controller",
                name,
                "--workers",
                "3",
                "--lease",
                "6s",
                "--json",
            ],
        )
    };
    let a = controller("ctl-a");
    let b = controller("ctl-b");
    // 2 rounds × 240 ordered pairs × 2 families × 2 tests.
    let total = 2 * 240 * 2 * 2;
    until("the queue", || {
        sql(
            &lab,
            &pg.url,
            "SELECT to_regclass('campaign_runs') IS NOT NULL AS t",
        )[0]["t"]
            == true
            && count(&lab, &pg.url, "true") == total
    });
    // Kill h16's agent once some runs are done, and controller a a little later.
    until("100 runs done", || {
        count(&lab, &pg.url, "state = 'done'") >= 100
    });
    agents[15].take().unwrap().kill9();
    until("300 runs done", || {
        count(&lab, &pg.url, "state = 'done'") >= 300
    });
    let held = count(&lab, &pg.url, "state = 'claimed' AND claimed_by = 'ctl-a'");
    a.kill9();
    let b = b.finish_within(Duration::from_secs(900));
    b.assert_success();
    let summary = b.json();
    assert_eq!(summary["controller"], "ctl-b");
    drop(agents);

    // Every run ended, done or failed; none is left queued or claimed.
    assert_eq!(count(&lab, &pg.url, "state IN ('done', 'failed')"), total);
    // Runs a dead controller held were taken again by the other after their leases.
    if held > 0 {
        assert!(
            count(&lab, &pg.url, "attempts >= 2 AND claimed_by = 'ctl-b'") >= 1,
            "ctl-a held {held} claims, none taken again"
        );
    }
    // Runs without h15's IPv6 (which the mesh does not give) failed as such, never ran.
    let v6_h15 = "family = 6 AND 'h15' IN (src, dst)";
    assert_eq!(count(&lab, &pg.url, v6_h15), 2 * 30 * 2);
    assert_eq!(
        count(&lab, &pg.url, &format!("{v6_h15} AND state = 'failed' AND reason = 'h15 has no IPv6 address' AND attempts = 0")),
        2 * 30 * 2
    );
    // Every run neither h15's IPv6 nor h16's is done, with its measurement.
    let healthy = format!("NOT ({v6_h15}) AND 'h16' NOT IN (src, dst)");
    let healthy_runs = count(&lab, &pg.url, &healthy);
    assert_eq!(
        count(
            &lab,
            &pg.url,
            &format!("{healthy} AND state = 'done' AND jsonb_array_length(result->'flows') = 1")
        ),
        healthy_runs
    );
    // h16's runs after its agent died failed with the reason the sender gave.
    let h16_failed = sql(
        &lab,
        &pg.url,
        "SELECT reason FROM campaign_runs WHERE campaign = 'fleet' AND 'h16' IN (src, dst) AND state = 'failed'",
    );
    assert!(!h16_failed.is_empty());
    for r in &h16_failed {
        assert!(r["reason"].as_str().is_some_and(|s| !s.is_empty()), "{r}");
    }
    // No two throughput tests overlapped on any host: the check, over each run's claim
    // (from when it was claimed to when it was finished, wider than its measurement).
    let overlaps = sql(&lab, &pg.url, OVERLAPS);
    assert_eq!(overlaps[0]["n"], 0, "{overlaps:?}");
    // Every pair's IPv6 minus IPv4 median RTT.
    let pairs = sql(&lab, &pg.url, V6_MINUS_V4);
    let measured: Vec<&Value> = pairs
        .iter()
        .filter(|p| p["v6_minus_v4_ns"].is_number())
        .collect();
    // All 240 pairs but those of h15 (no IPv6) and, perhaps, h16 (dead).
    assert!(
        measured.len() >= 240 - 2 * 15 - 2 * 15,
        "{}",
        measured.len()
    );
    for p in pairs.iter().filter(|p| {
        p["src"] != "h15" && p["dst"] != "h15" && p["src"] != "h16" && p["dst"] != "h16"
    }) {
        assert!(p["v6_minus_v4_ns"].is_number(), "{p}");
    }
}

/// Exclusive runs whose claims overlapped on a host.
pub(crate) const OVERLAPS: &str = "WITH x AS (
    SELECT id, src AS host, claimed_at, finished_at FROM campaign_runs
     WHERE campaign = 'fleet' AND exclusive AND state = 'done'
    UNION ALL
    SELECT id, dst, claimed_at, finished_at FROM campaign_runs
     WHERE campaign = 'fleet' AND exclusive AND state = 'done')
  SELECT count(*) AS n FROM x a JOIN x b
    ON a.host = b.host AND a.id < b.id
   AND a.claimed_at < b.finished_at AND b.claimed_at < a.finished_at";

/// Each pair's median RTT over IPv6 minus over IPv4, over the rounds' RTT runs.
pub(crate) const V6_MINUS_V4: &str = "SELECT src, dst,
       percentile_cont(0.5) WITHIN GROUP (ORDER BY rtt_ns) FILTER (WHERE family = 6)
     - percentile_cont(0.5) WITHIN GROUP (ORDER BY rtt_ns) FILTER (WHERE family = 4)
       AS v6_minus_v4_ns
  FROM (SELECT src, dst, family,
               (result->'flows'->0->'rtt'->'delay'->>'p50_ns')::float8 AS rtt_ns
          FROM campaign_runs
         WHERE campaign = 'fleet' AND test = 'rtt' AND state = 'done') r
 GROUP BY src, dst ORDER BY src, dst";
