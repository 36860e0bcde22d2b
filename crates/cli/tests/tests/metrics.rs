//! `--metrics`: what `recv` and `agent` serve to Prometheus. On loopback, Prometheus's
//! own `promtool check metrics` judges a scrape taken while flows run, and the series
//! after the run equal the run's own report. In the lab, a real Prometheus scrapes two
//! agents and PromQL gives each family's loss as the run reported it. promtool and
//! prometheus come from Debian's `prometheus` package (CI installs it); under `CI=true`
//! a missing one is a failure, elsewhere the test says it skipped.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::lab::{privileged, Lab};
use crate::support::{path_str, Proc, TempDir};

/// The path of Debian's `prometheus` package's program `name`, if installed.
fn prometheus_tool(name: &str) -> Option<&'static str> {
    let path: &'static str = match name {
        "promtool" => "/usr/bin/promtool",
        _ => "/usr/bin/prometheus",
    };
    if std::path::Path::new(path).exists() {
        return Some(path);
    }
    assert!(
        std::env::var("CI").as_deref() != Ok("true"),
        "under CI=true this test must run: {path} (Debian's prometheus) is missing"
    );
    eprintln!("skipped: {path} (Debian's prometheus) is missing");
    None
}

/// One HTTP/1.1 request `head` to `addr`: the status line and the body.
fn http(addr: SocketAddr, head: &str) -> (String, String) {
    let mut conn = TcpStream::connect(addr).unwrap();
    conn.set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    conn.write_all(head.as_bytes()).unwrap();
    let mut text = String::new();
    conn.read_to_string(&mut text).unwrap();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    (
        head.lines().next().unwrap_or("").to_owned(),
        body.to_owned(),
    )
}

fn scrape(addr: SocketAddr) -> String {
    let (status, body) = http(addr, "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n");
    assert_eq!(status, "HTTP/1.1 200 OK", "{body}");
    body
}

/// The value of series `series` (name and labels as the exposition writes them).
fn value(text: &str, series: &str) -> Option<f64> {
    text.lines()
        .find_map(|l| l.strip_prefix(series)?.strip_prefix(' '))
        .map(|v| v.parse().unwrap())
}

/// The address after `what` in a line of `proc`'s stderr ("… at http://ADDR/metrics").
fn metrics_addr(proc: &Proc, what: &str) -> SocketAddr {
    let line = proc.wait_stderr_line(|l| l.contains(what));
    let rest = line.split_once("http://").unwrap().1;
    rest.trim_end_matches("/metrics").parse().unwrap()
}

#[test]
fn recv_metrics_pass_promtool_during_a_run_and_equal_the_report_after() {
    let Some(promtool) = prometheus_tool("promtool") else {
        return;
    };
    let rx = Proc::spawn(&[
        "recv",
        "--port",
        "0",
        "--metrics",
        "127.0.0.1:0",
        "--metrics-flows",
        "4",
    ]);
    let line = rx.wait_stderr_line(|l| l.starts_with("dualperf recv: listening on"));
    let port = line.split("]:").nth(1).unwrap().split(' ').next().unwrap();
    let addr = metrics_addr(&rx, "Prometheus metrics at");
    let sends: Vec<(&str, Proc)> = [("ipv4", "127.0.0.1"), ("ipv6", "::1")]
        .into_iter()
        .map(|(family, dest)| {
            let args = [
                "send",
                dest,
                "--port",
                port,
                "--rate",
                "500pps",
                "--duration",
                "3s",
                "--json",
            ];
            (family, Proc::spawn(&args))
        })
        .collect();
    // During the run: both families' flows are open and have packets.
    let deadline = Instant::now() + Duration::from_secs(60);
    let during = loop {
        let text = scrape(addr);
        let open = |f: &str| value(&text, &format!("dualperf_flows_active{{family=\"{f}\"}}"));
        let got = |f: &str| {
            value(
                &text,
                &format!("dualperf_received_packets_total{{family=\"{f}\"}}"),
            )
        };
        if ["ipv4", "ipv6"]
            .iter()
            .all(|f| open(f) == Some(1.0) && got(f) > Some(0.0))
        {
            break text;
        }
        assert!(
            Instant::now() < deadline,
            "no flow of each family open:\n{text}"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(
        during.contains("dualperf_flow_finished{family=\"ipv4\""),
        "{during}"
    );
    let mut check = Command::new(promtool)
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    check
        .stdin
        .take()
        .unwrap()
        .write_all(during.as_bytes())
        .unwrap();
    let checked = check.wait_with_output().unwrap();
    assert!(
        checked.status.success() && checked.stdout.is_empty() && checked.stderr.is_empty(),
        "promtool check metrics: {checked:?}\n{during}"
    );
    // After: each family's flow is final and its series are the run's report.
    for (family, send) in sends {
        let out = send.finish();
        out.assert_success();
        let flow = &out.json()["flows"][0]["received"];
        let text = scrape(addr);
        let labels = format!("family=\"{family}\",session=\"");
        let series = |name: &str| {
            let line = text
                .lines()
                .find(|l| l.starts_with(&format!("{name}{{{labels}")))
                .unwrap_or_else(|| panic!("no {name} of {family} in\n{text}"));
            line.rsplit(' ').next().unwrap().parse::<f64>().unwrap()
        };
        assert_eq!(series("dualperf_flow_finished"), 1.0);
        assert_eq!(
            series("dualperf_flow_received_packets_total"),
            flow["packets"].as_f64().unwrap()
        );
        assert_eq!(
            series("dualperf_flow_received_bytes_total"),
            flow["bytes"].as_f64().unwrap()
        );
        assert_eq!(
            series("dualperf_flow_expected_packets"),
            flow["loss"]["expected"].as_f64().unwrap()
        );
        assert_eq!(
            series("dualperf_flow_lost_packets"),
            flow["loss"]["lost"].as_f64().unwrap()
        );
        assert_eq!(
            series("dualperf_flow_one_way_delay_seconds_count"),
            flow["packets"].as_f64().unwrap()
        );
    }
    // Anything else than a scrape gets an error status.
    assert_eq!(
        http(addr, "GET / HTTP/1.1\r\n\r\n").0,
        "HTTP/1.1 404 Not Found"
    );
    assert_eq!(
        http(addr, "POST /metrics HTTP/1.1\r\n\r\n").0,
        "HTTP/1.1 405 Method Not Allowed"
    );
    assert_eq!(http(addr, "hello\r\n\r\n").0, "HTTP/1.1 400 Bad Request");
}

/// The truth lab (sender — r1 — r2 — receiver) with IPv4 losing 2 % and IPv6 1 % on
/// the r1 — r2 link, each way.
fn lossy_truth() -> String {
    let truth = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../plans/topologies/truth.toml"
    ))
    .unwrap();
    let link = "a = \"r1\"\nb = \"r2\"\n";
    assert!(truth.contains(link));
    truth.replacen(
        link,
        &format!("{link}ipv4 = {{ loss = \"2%\" }}\nipv6 = {{ loss = \"1%\" }}\n"),
        1,
    )
}

/// PromQL `query`'s result vector, asked of the Prometheus in the lab's receiver;
/// `None` while it is not ready (it answers 503 as it starts).
fn try_promql(lab: &Lab, promtool: &str, query: &str) -> Option<Vec<Value>> {
    let out = lab.exec_any(
        "receiver",
        &[
            promtool,
            "query",
            "instant",
            "-o",
            "json",
            "http://127.0.0.1:9090",
            query,
        ],
    );
    if out.code() != Some(0) {
        return None;
    }
    match serde_json::from_str::<Value>(&out.stdout) {
        Ok(Value::Array(v)) => Some(v),
        other => panic!("promtool query {query}: {other:?}\n{}", out.stdout),
    }
}

fn promql(lab: &Lab, promtool: &str, query: &str) -> Vec<Value> {
    try_promql(lab, promtool, query).unwrap_or_else(|| panic!("promtool query {query} failed"))
}

/// Wait until `query` has `n` results.
fn until_results(lab: &Lab, promtool: &str, query: &str, n: usize) {
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let got = try_promql(lab, promtool, query);
        if got.as_ref().is_some_and(|v| v.len() == n) {
            return;
        }
        assert!(Instant::now() < deadline, "{query}: {got:?}");
        std::thread::sleep(Duration::from_millis(500));
    }
}

#[test]
fn prometheus_scrapes_two_lab_agents_and_promql_gives_each_familys_loss_as_reported() {
    if !privileged() {
        return;
    }
    let (Some(prometheus), Some(promtool)) =
        (prometheus_tool("prometheus"), prometheus_tool("promtool"))
    else {
        return;
    };
    let lab = Lab::up_text("prom", &lossy_truth());
    let tmp = TempDir::new("prometheus-lab");
    let key = tmp.path("agent.key");
    std::fs::write(&key, "lab-key\n").unwrap();
    let agent_args = [
        "agent",
        "--key-file",
        path_str(&key),
        "--metrics",
        "[::]:9464",
    ];
    let agents: Vec<Proc> = ["sender", "receiver"]
        .iter()
        .map(|node| {
            let agent = lab.spawn(node, &agent_args);
            agent.wait_stderr_line(|l| l.contains("Prometheus metrics at"));
            agent
        })
        .collect();
    let config = tmp.path("prometheus.yml");
    std::fs::write(
        &config,
        "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\nscrape_configs:\n  - job_name: dualperf\n    static_configs:\n      - targets: ['198.18.1.1:9464', '[2001:2:0:3::2]:9464']\n",
    )
    .unwrap();
    let data = tmp.path("tsdb");
    let prom = lab.spawn_any(
        "receiver",
        &[
            prometheus,
            "--config.file",
            path_str(&config),
            "--storage.tsdb.path",
            path_str(&data),
            "--web.listen-address",
            "127.0.0.1:9090",
        ],
    );
    // Prometheus is up and scrapes both agents.
    until_results(&lab, promtool, "up{job=\"dualperf\"} == 1", 2);
    // One flow over each family from the sender to the receiver's agent, through the
    // lossy link.
    let mut reported = Vec::new();
    for (family, dest) in [("ipv4", "198.18.3.2"), ("ipv6", "2001:2:0:3::2")] {
        let out = lab.exec(
            "sender",
            &[
                "send",
                dest,
                "--key",
                "lab-key",
                "--rate",
                "2000pps",
                "--duration",
                "2s",
                "--json",
            ],
        );
        out.assert_success();
        reported.push((family, out.json()["flows"][0]["received"]["loss"].clone()));
    }
    // Prometheus has scraped the receiver's agent since both flows finished.
    until_results(&lab, promtool, "dualperf_flow_finished == 1", 2);
    // Both agents' own series are there (the sender's agent received nothing).
    let sessions = promql(&lab, promtool, "dualperf_sessions_finished_total");
    assert_eq!(sessions.len(), 2, "{sessions:?}");
    for (family, loss) in reported {
        let one = |q: &str| {
            let v = promql(&lab, promtool, &format!("{q}{{family=\"{family}\"}}"));
            assert_eq!(v.len(), 1, "{q} {family}: {v:?}");
            v[0]["value"][1].as_str().unwrap().parse::<f64>().unwrap()
        };
        let lost = loss["lost"].as_f64().unwrap();
        let expected = loss["expected"].as_f64().unwrap();
        assert!(
            lost > 0.0,
            "the lossy link lost nothing over {family}: {loss}"
        );
        assert_eq!(one("dualperf_flow_lost_packets"), lost, "{family}");
        assert_eq!(one("dualperf_flow_expected_packets"), expected, "{family}");
        let pct = 100.0 * one("dualperf_flow_loss_ratio");
        let want = loss["loss_pct"].as_f64().unwrap();
        assert!(
            (pct - want).abs() < 1e-9,
            "{family}: PromQL {pct} % against {want} %"
        );
    }
    drop(prom);
    drop(agents);
}
