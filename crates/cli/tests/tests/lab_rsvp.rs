//! RSVP (RFC 2205) in the two-hop lab, for real: the sender's `send --reserve` signals
//! through both routers to the receiver, r1 admits against its reservable bandwidth on
//! the 10 Mbit/s bottleneck and installs the flow into its flow-label table, r2 passes the
//! signalling on (`[rsvp]` only). R = 200 ms, so L = (3 + 0.5) · 1.5 · R = 1.05 s. Root
//! only, like `lab.rs`; tshark is needed for the capture (under `CI=true` a missing one is
//! a failure).
//!
//! The bounds are counts that hold on a busy host; nothing assumes the host keeps time.

use std::collections::BTreeMap;
use std::net::Ipv6Addr;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::lab::{alive, privileged, Lab};
use crate::support::{path_str, Proc, TempDir, BIN, HANG_GUARD};

const RECEIVER_V4: &str = "198.18.4.2";
const RECEIVER_V6: &str = "2001:2:0:4::2";
const SENDER_V6: &str = "2001:2:0:1::1";
const BG_B_V4: &str = "198.18.5.2";
/// r1's address on the bottleneck, whose admission control refuses.
const R1_V6: &str = "2001:2:0:3::1";

/// The study's audio stream (1250 B every 50 ms, 200 kbit/s) for 3 s, after a second
/// in which its reservation is set up.
const WEBAUDIO: &[&str] = &["--stream", "webaudio", "--start", "1s", "--duration", "3s"];
/// Reserved with R = 200 ms; a bucket of about four packets, so that a late sender's
/// catch-up is not excess.
const RESERVE: &[&str] = &[
    "--reserve",
    "controlled-load",
    "--reserve-refresh",
    "200ms",
    "--reserve-burst",
    "5200",
];

/// The QoS files, written into `dir`: r1 the shipped flow-label RSVP policy with R =
/// 200 ms, 1 Mbit/s reservable on the bottleneck and a class for the test's own control
/// connections; r2 the shipped transit with R = 200 ms.
fn qos_files(dir: &TempDir) -> (String, String) {
    let shipped = |name: &str| {
        std::fs::read_to_string(format!(
            "{}/../../plans/qos/{name}.toml",
            env!("CARGO_MANIFEST_DIR")
        ))
        .unwrap()
    };
    let once = |text: String, from: &str, to: &str| {
        assert_eq!(text.matches(from).count(), 1, "{from}");
        text.replace(from, to)
    };
    let r1 = once(
        shipped("seed001-rsvp-flow-label"),
        "refresh = \"30s\"",
        "refresh = \"200ms\"",
    );
    let r1 = once(
        r1,
        "rsvp_bandwidth = \"7mbit\"",
        "rsvp_bandwidth = \"1mbit\"",
    );
    // The sessions' control connections (TCP to the receiver's port 4646) get a class of
    // their own: lost in the congested best effort, a handshake may outlast the receiver's
    // 5 s for it.
    let r1 = once(
        r1,
        "reservation = \"rsvp\"\n",
        "reservation = \"rsvp\"\n\n[[class_map]]\nname = \"control\"\nprotocol = \"tcp\"\ndst_port = 4646\n",
    );
    let r1 = once(
        r1,
        "[[policy_map.class]]\nname = \"class-default\"",
        "[[policy_map.class]]\nname = \"control\"\nbandwidth = \"5%\"\n\n[[policy_map.class]]\nname = \"class-default\"",
    );
    let r2 = once(
        shipped("rsvp-transit"),
        "refresh = \"30s\"",
        "refresh = \"200ms\"",
    );
    let (p1, p2) = (dir.path("r1.qos.toml"), dir.path("r2.qos.toml"));
    std::fs::write(&p1, r1).unwrap();
    std::fs::write(&p2, r2).unwrap();
    (path_str(&p1).to_owned(), path_str(&p2).to_owned())
}

/// The lab with both routers speaking RSVP.
fn rsvp_lab(tag: &str, dir: &TempDir, pcap: Option<&Path>) -> Lab {
    let (r1, r2) = qos_files(dir);
    Lab::up_with_qos_files(tag, pcap, &[("r1", &r1), ("r2", &r2)])
}

/// `dualperf send DEST ARGS --json` from the sender, running on.
fn spawn_send(lab: &Lab, dest: &str, args: &[&[&str]]) -> Proc {
    let mut all = vec!["send", dest];
    all.extend(args.iter().flat_map(|a| a.iter().copied()));
    all.push("--json");
    lab.spawn("sender", &all)
}

/// A finished send's one flow.
fn flow(send: Proc) -> Value {
    let out = send.finish();
    out.assert_success();
    out.json()["flows"][0].clone()
}

fn u(v: &Value, ptr: &str) -> u64 {
    v.pointer(ptr)
        .and_then(Value::as_u64)
        .unwrap_or_else(|| panic!("no {ptr} in {v:#}"))
}

/// Best-effort UDP from bg-a to bg-b at 20 Mbit/s, twice the bottleneck (so it stays
/// saturated when a busy host sends it in bursts), until dropped.
struct Background {
    _rx: Proc,
    _tx: Proc,
}

impl Background {
    fn start(lab: &Lab) -> Self {
        let rx = lab.spawn("bg-b", &["recv", "--sessions", "1"]);
        rx.wait_stderr_line(|l| l.contains("listening on"));
        let tx = lab.spawn(
            "bg-a",
            &[
                "send",
                BG_B_V4,
                "--udp",
                "--rate",
                "20mbit",
                "--size",
                "1400",
                "--duration",
                "120s",
            ],
        );
        // Let the bottleneck's queue fill before the foreground starts.
        std::thread::sleep(Duration::from_millis(1500));
        Self { _rx: rx, _tx: tx }
    }
}

/// A router of the lab: its process and stats file, as `lab up` recorded them (or as
/// [`restart`] started it again).
struct Router {
    pid: i32,
    config: String,
    stats: PathBuf,
}

fn router(lab: &Lab, node: &str) -> Router {
    let state = lab.state_json();
    let r = state["routers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["node"] == node)
        .unwrap()
        .clone();
    Router {
        pid: r["pid"].as_i64().unwrap() as i32,
        config: r["config"].as_str().unwrap().to_owned(),
        stats: PathBuf::from(r["stats"].as_str().unwrap()),
    }
}

impl Router {
    /// Its counters, fresh: SIGUSR1, then its stats file once it has answered.
    fn stats(&self) -> Value {
        let read =
            || -> Option<Value> { serde_json::from_slice(&std::fs::read(&self.stats).ok()?).ok() };
        let answered = |v: &Option<Value>| {
            v.as_ref()
                .and_then(|v| v["usr1_answered"].as_u64())
                .unwrap_or(0)
        };
        let before = answered(&read());
        // SAFETY: kill(2) on a router of this test's lab.
        assert_eq!(unsafe { libc::kill(self.pid, libc::SIGUSR1) }, 0);
        let deadline = Instant::now() + HANG_GUARD;
        loop {
            let now = read();
            if answered(&now) > before {
                return now.unwrap();
            }
            assert!(
                Instant::now() < deadline,
                "router {} never answered",
                self.pid
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

/// A router's RSVP counters and its reservations on the bottleneck (`to-r2`).
fn rsvp(stats: &Value) -> (&Value, &Value) {
    let r = &stats["rsvp"];
    assert!(r.is_object(), "no rsvp in the stats: {stats:#}");
    let iface = r["interfaces"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["name"] == "to-r2")
        .unwrap_or_else(|| panic!("no to-r2 in {r:#}"));
    (r, iface)
}

/// Reservations installed now on r1's bottleneck.
fn installed(stats: &Value) -> u64 {
    rsvp(stats).1["reservations"].as_u64().unwrap()
}

/// Poll `stats` until `done` holds (a guard against hangs only); the last counters.
fn until(what: &str, stats: impl Fn() -> Value, done: impl Fn(&Value) -> bool) -> Value {
    let deadline = Instant::now() + HANG_GUARD;
    loop {
        let s = stats();
        if done(&s) {
            return s;
        }
        assert!(
            Instant::now() < deadline,
            "never: {what}; last {:#}",
            s["rsvp"]
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// r1's bottleneck egress: its classes and its reservation table.
fn egress(stats: &Value) -> Value {
    stats["interfaces"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["name"] == "to-r2")
        .unwrap()["qos"]
        .clone()
}

fn drops(class: &Value) -> u64 {
    class["dropped"]
        .as_object()
        .unwrap()
        .values()
        .filter_map(Value::as_u64)
        .sum()
}

/// What a reserved flow's report must say: reserved, set up, refreshed. (Not whether the
/// receiver got the sender's ResvConf: sent once and forwarded as data, it may be lost
/// where best effort is congested.)
fn check_reserved(f: &Value, filter: &str) {
    let r = &f["reservation"];
    assert_eq!(r["state"], "reserved", "{r:#}");
    assert_eq!(r["filter"], filter, "{r:#}");
    assert_eq!(r["refused"], Value::Null, "{r:#}");
    assert!(r["setup_ns"].as_u64().is_some_and(|s| s > 0), "{r:#}");
    assert!(u(r, "/refreshes_sent") >= 1, "{r:#}");
}

#[test]
fn a_reserved_flow_loses_nothing_under_saturation_and_one_beyond_the_budget_is_refused() {
    if !privileged() {
        return;
    }
    let dir = TempDir::new("lab-rsvp-qos");
    let lab = rsvp_lab("rq", &dir, None);
    let r1 = router(&lab, "r1");
    let rx = lab.spawn("receiver", &["recv", "--sessions", "4"]);
    rx.wait_stderr_line(|l| l.contains("listening on"));
    let bg = Background::start(&lab);
    // At once: the audio flow reserved over IPv6 and over IPv4, the same flow without a
    // reservation, and 2 Mbit/s asking beyond r1's 1 Mbit/s.
    let sends = [
        spawn_send(&lab, RECEIVER_V6, &[WEBAUDIO, RESERVE]),
        spawn_send(&lab, RECEIVER_V4, &[WEBAUDIO, RESERVE]),
        spawn_send(&lab, RECEIVER_V6, &[WEBAUDIO]),
        spawn_send(
            &lab,
            RECEIVER_V6,
            &[
                &[
                    "--udp",
                    "--rate",
                    "2mbit",
                    "--size",
                    "1250",
                    "--start",
                    "1s",
                    "--duration",
                    "2s",
                ],
                RESERVE,
            ],
        ),
    ];
    let [v6, v4, plain, over] = sends.map(flow);
    let stats = r1.stats();
    drop(bg);
    rx.finish().assert_success();
    let lost = |f: &Value| u(f, "/sent/packets") - u(f, "/received/packets");
    eprintln!(
        "lost: reserved IPv6 {} of {}, IPv4 {} of {}, unreserved {} of {}, over budget {} of {}",
        lost(&v6),
        u(&v6, "/sent/packets"),
        lost(&v4),
        u(&v4, "/sent/packets"),
        lost(&plain),
        u(&plain, "/sent/packets"),
        lost(&over),
        u(&over, "/sent/packets")
    );
    eprintln!(
        "setup: IPv6 {} ns, IPv4 {} ns",
        v6["reservation"]["setup_ns"], v4["reservation"]["setup_ns"]
    );
    // Measured (2-core VM): reserved 0 of 60 lost over IPv6 and IPv4; unreserved 41 of 60
    // (5 and 21 beside a CPU hog, whose background comes in bursts); beyond the budget 298
    // of 400 (83, 85). Reserved: every packet of 3 s at 20 packets/s arrives.
    check_reserved(&v6, "flow-label");
    check_reserved(&v4, "5-tuple");
    for f in [&v6, &v4] {
        assert!(u(f, "/sent/packets") >= 59, "{f:#}");
        assert_eq!(lost(f), 0, "{:#}", f["reservation"]);
    }
    // Unreserved, it shares the saturated best-effort queue and loses there.
    assert_eq!(plain["reservation"], Value::Null);
    assert!(lost(&plain) > 0, "{plain:#}");
    // Beyond the reservable bandwidth: refused by r1 (ResvErr, admission control failure,
    // requested bandwidth unavailable), and the flow ran best effort.
    let r = &over["reservation"];
    assert_eq!(r["state"], "refused", "{r:#}");
    assert_eq!(
        (u(r, "/refused/code"), u(r, "/refused/value")),
        (1, 2),
        "{r:#}"
    );
    assert_eq!(r["refused"]["node"], R1_V6, "{r:#}");
    assert_eq!(r["setup_ns"], Value::Null, "{r:#}");
    assert!(lost(&over) > 0, "{over:#}");
    // r1: two admitted (now torn down), the third refused with code 1, signalling time
    // counted; its reserved class dropped nothing while best effort overflowed.
    let (counters, bottleneck) = rsvp(&stats);
    assert_eq!(u(counters, "/admitted"), 2, "{counters:#}");
    assert!(u(counters, "/refused/1") >= 1, "{counters:#}");
    assert_eq!(bottleneck["reservable_bps"], 1_000_000, "{bottleneck:#}");
    assert_eq!(u(bottleneck, "/reservations"), 0, "{bottleneck:#}");
    assert!(u(&stats, "/cpu/rsvp_ns") > 0, "{:#}", stats["cpu"]);
    assert!(u(&stats, "/cpu/rsvp_messages") > 0, "{:#}", stats["cpu"]);
    let qos = egress(&stats);
    let table = &qos["reservations"][0];
    assert_eq!(
        (u(table, "/installed"), u(table, "/removed")),
        (2, 2),
        "{table:#}"
    );
    // Every packet of both reserved flows was classified as reserved.
    let reserved_sent = u(&v6, "/sent/packets") + u(&v4, "/sent/packets");
    assert!(u(table, "/hits") >= reserved_sent, "{table:#}");
    let class = |name: &str| {
        qos["classes"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["name"] == name)
            .unwrap()
            .clone()
    };
    let (reserved, best_effort) = (class("reserved"), class("class-default"));
    assert_eq!(drops(&reserved), 0, "{reserved:#}");
    assert!(drops(&best_effort) > 0, "{best_effort:#}");
    assert_eq!(counters["refresh_ms"], 200);
    lab.down();
}

/// `nft ARGS` (words split at spaces) in `node`'s namespace: its output.
fn nft(lab: &Lab, node: &str, args: &str) -> String {
    let out = Command::new("ip")
        .args(["netns", "exec", &format!("dp-{}.{node}", lab.name), "nft"])
        .args(args.split(' '))
        .output()
        .expect("nft (nftables) must be installed");
    assert!(
        out.status.success(),
        "nft {args}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The packets counted by the `counter` of the sender's one rule.
fn nft_counted(lab: &Lab) -> u64 {
    let list = nft(lab, "sender", "list chain inet dp-rsvp out");
    let at = list.find("counter packets ").expect("a counter") + "counter packets ".len();
    list[at..].split(' ').next().unwrap().parse().unwrap()
}

/// Whether tshark runs; under `CI=true` it must.
fn tshark_available() -> bool {
    let found = Command::new("tshark")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    assert!(
        found || std::env::var("CI").as_deref() != Ok("true"),
        "under CI=true this test must run: tshark is missing"
    );
    if !found {
        eprintln!("skipped: tshark is not installed");
    }
    found
}

/// `tshark -r FILE ARGS`: its output.
fn tshark(file: &Path, args: &[&str]) -> String {
    let out = Command::new("tshark")
        .arg("-r")
        .arg(file)
        .args(args)
        .output()
        .expect("tshark");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The fields read of every RSVP message (IPv6 sessions).
const FIELDS: &[&str] = &[
    "rsvp.msg",
    "rsvp.session.destination_address",
    "rsvp.session.protocol",
    "rsvp.session.destination_port",
    // FILTER_SPEC and SENDER_TEMPLATE C-Type 3 (flow label): tshark 4.0 shows only the
    // object's 20 octets.
    "rsvp.template_filter.data",
    "rsvp.tspec.token_bucket_rate",
    "rsvp.flowspec.service_header",
    "rsvp.flowspec.token_bucket_rate",
    "rsvp.style.style",
    "rsvp.error.error_node_ipv6",
    "rsvp.error.error_code",
    "rsvp.error_value",
    "rsvp.confirm.receiver_address_ipv6",
    "ipv6.opt.router_alert",
];

/// Every RSVP message in the capture `file`, as tshark shows it: field → value
/// (several occurrences joined by commas).
fn rsvp_rows(file: &Path) -> Vec<BTreeMap<&'static str, String>> {
    let mut args = vec![
        "-Y",
        "rsvp",
        "-T",
        "fields",
        "-E",
        "separator=|",
        "-E",
        "occurrence=a",
        "-E",
        "aggregator=,",
    ];
    for f in FIELDS {
        args.extend(["-e", f]);
    }
    tshark(file, &args)
        .lines()
        .map(|l| {
            FIELDS
                .iter()
                .copied()
                .zip(l.split('|').map(str::to_owned))
                .collect()
        })
        .collect()
}

/// C-Type 3's 20 octets in hex: the source address, then 12 zero bits and the flow label.
fn label_filter(hex: &str) -> (Ipv6Addr, u32) {
    assert_eq!(hex.len(), 40, "C-Type 3 is 20 octets: {hex}");
    let octets: Vec<u8> = (0..20)
        .map(|i| u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).unwrap())
        .collect();
    let mut a = [0u8; 16];
    a.copy_from_slice(&octets[..16]);
    let word = u32::from_be_bytes([octets[16], octets[17], octets[18], octets[19]]);
    assert_eq!(word >> 20, 0, "bits before the flow label: {hex}");
    (Ipv6Addr::from(a), word)
}

/// The RSVP payloads of a capture (classic pcap, Ethernet), read here: IPv4 past its
/// options, IPv6 past a Hop-by-Hop header.
fn rsvp_payloads(file: &Path) -> Vec<Vec<u8>> {
    let b = std::fs::read(file).unwrap();
    assert_eq!(b[..4], 0xa1b2_3c4du32.to_le_bytes(), "{}", file.display());
    let mut at = 24;
    let mut out = Vec::new();
    while at + 16 <= b.len() {
        let len = u32::from_le_bytes(b[at + 8..at + 12].try_into().unwrap()) as usize;
        let frame = &b[at + 16..at + 16 + len];
        at += 16 + len;
        let ip = &frame[14..];
        let payload = match u16::from_be_bytes([frame[12], frame[13]]) {
            0x0800 if ip[9] == 46 => {
                let total = usize::from(u16::from_be_bytes([ip[2], ip[3]]));
                &ip[usize::from(ip[0] & 0xf) * 4..total]
            }
            0x86dd => {
                let end = 40 + usize::from(u16::from_be_bytes([ip[4], ip[5]]));
                let (mut next, mut off) = (ip[6], 40);
                if next == 0 {
                    next = ip[off];
                    off += (usize::from(ip[off + 1]) + 1) * 8;
                }
                if next != 46 {
                    continue;
                }
                &ip[off..end]
            }
            _ => continue,
        };
        out.push(payload.to_vec());
    }
    out
}

/// The capture's RSVP messages: tshark shows none malformed or with a warning, every one
/// parses with `wire::rsvp`, and (with `DUALPERF_RSVP_SEEDS=DIR`) the first of each type
/// and family is written to DIR as a fuzz seed (`seed-capture-TYPE-FAMILY.bin`; those of
/// `fuzz/corpus/rsvp_parse` were written so). Messages by type and family.
fn check_payloads(files: &[PathBuf]) -> BTreeMap<String, u64> {
    let mut kinds = BTreeMap::new();
    let seeds = std::env::var_os("DUALPERF_RSVP_SEEDS").map(PathBuf::from);
    for f in files {
        let bad = tshark(
            f,
            &[
                "-Y",
                "rsvp && (_ws.malformed || _ws.expert.severity >= warning)",
            ],
        );
        assert_eq!(bad, "", "{}: malformed RSVP or a warning", f.display());
        for p in rsvp_payloads(f) {
            let m = wire::rsvp::Message::parse(&p)
                .unwrap_or_else(|e| panic!("{}: {e}: {p:02x?}", f.display()));
            let family = if m.session.dst.is_ipv6() {
                "ipv6"
            } else {
                "ipv4"
            };
            let kind = format!("{:?}-{family}", m.kind).to_lowercase();
            let n = kinds.entry(kind.clone()).or_insert(0);
            if let Some(dir) = seeds.as_ref().filter(|_| *n == 0) {
                std::fs::write(dir.join(format!("seed-capture-{kind}.bin")), &p).unwrap();
            }
            *n += 1;
        }
    }
    kinds
}

/// A flow's IPv6 flow label and Tspec rate, from its report.
fn label_and_rate(f: &Value) -> (u32, f64) {
    (
        u(f, "/spec/marking/flow_label") as u32,
        f["reservation"]["rate_bytes_per_s"].as_f64().unwrap(),
    )
}

/// The rows of message type `msg` whose filter or template is the flow with `label`:
/// at least one, each with the flow's session (the receiver, UDP, the data's port) and
/// sender (its address and label).
fn messages<'a>(
    rows: &'a [BTreeMap<&'static str, String>],
    msg: u8,
    label: u32,
    port: &str,
) -> Vec<&'a BTreeMap<&'static str, String>> {
    let mine: Vec<_> = rows
        .iter()
        .filter(|r| r["rsvp.msg"] == msg.to_string())
        .filter(|r| {
            r["rsvp.template_filter.data"]
                .split(',')
                .filter(|d| !d.is_empty())
                .any(|d| label_filter(d).1 == label)
        })
        .collect();
    assert!(
        !mine.is_empty(),
        "no message {msg} of label {label:#x} in {rows:#?}"
    );
    for r in &mine {
        assert_eq!(r["rsvp.session.destination_address"], RECEIVER_V6, "{r:?}");
        assert_eq!(r["rsvp.session.protocol"], "17", "{r:?}");
        assert_eq!(r["rsvp.session.destination_port"], port, "{r:?}");
        let data = &r["rsvp.template_filter.data"];
        assert!(!data.contains(','), "one filter: {r:?}");
        assert_eq!(
            label_filter(data),
            (SENDER_V6.parse().unwrap(), label),
            "{r:?}"
        );
    }
    mine
}

fn float(s: &str) -> f64 {
    s.parse()
        .unwrap_or_else(|e| panic!("not a number {s:?}: {e}"))
}

/// What tshark shows of the five message types against what the flows' reports say was
/// sent: `reserved` set up, confirmed and torn down, `refused` refused by r1.
fn check_capture(files: &[PathBuf], reserved: &Value, refused: &Value) {
    let kinds = check_payloads(files);
    eprintln!("RSVP messages captured at r1: {kinds:?}");
    for kind in ["path", "resv", "resvconf", "pathtear"] {
        assert!(kinds.contains_key(&format!("{kind}-ipv4")), "{kinds:?}");
    }
    let rows: Vec<_> = files.iter().flat_map(|f| rsvp_rows(f)).collect();
    // The session's port is the one the data went to.
    let (label, rate) = label_and_rate(reserved);
    let data_port = |label: u32| -> String {
        let ports: std::collections::BTreeSet<String> = files
            .iter()
            .flat_map(|f| {
                tshark(
                    f,
                    &[
                        "-Y",
                        &format!("udp && ipv6.flow == {label:#x}"),
                        "-T",
                        "fields",
                        "-e",
                        "udp.dstport",
                    ],
                )
                .lines()
                .map(str::to_owned)
                .collect::<Vec<_>>()
            })
            .collect();
        assert_eq!(ports.len(), 1, "the data of label {label:#x}: {ports:?}");
        ports.into_iter().next().unwrap()
    };
    let port = data_port(label);
    for r in messages(&rows, 1, label, &port) {
        assert_eq!(
            float(&r["rsvp.tspec.token_bucket_rate"]),
            rate,
            "Path {r:?}"
        );
        assert_eq!(r["ipv6.opt.router_alert"], "1", "Path {r:?}");
    }
    for r in messages(&rows, 2, label, &port) {
        assert_eq!(r["rsvp.flowspec.service_header"], "5", "Resv {r:?}");
        assert_eq!(
            float(&r["rsvp.flowspec.token_bucket_rate"]),
            rate,
            "Resv {r:?}"
        );
        assert_eq!(r["rsvp.style.style"], "0x00000a", "Resv {r:?}");
    }
    for r in messages(&rows, 7, label, &port) {
        assert_eq!(r["rsvp.error.error_code"], "0", "ResvConf {r:?}");
        assert_eq!(
            r["rsvp.confirm.receiver_address_ipv6"], RECEIVER_V6,
            "ResvConf {r:?}"
        );
    }
    for r in messages(&rows, 5, label, &port) {
        assert_eq!(r["ipv6.opt.router_alert"], "1", "PathTear {r:?}");
    }
    let (label, rate) = label_and_rate(refused);
    let port = data_port(label);
    for r in messages(&rows, 4, label, &port) {
        assert_eq!(r["rsvp.error.error_node_ipv6"], R1_V6, "ResvErr {r:?}");
        assert_eq!(
            (&*r["rsvp.error.error_code"], &*r["rsvp.error_value"]),
            ("1", "2"),
            "ResvErr {r:?}"
        );
        assert_eq!(
            float(&r["rsvp.flowspec.token_bucket_rate"]),
            rate,
            "ResvErr {r:?}"
        );
    }
}

/// A child process of this test, killed and reaped on drop.
struct Reaped(std::process::Child);

impl Drop for Reaped {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Stop `r` (SIGTERM: it flushes its captures) and start it again as `lab up` did, with
/// its QoS file and stats file but no capture, once it forwards: the new router, and
/// the process to reap.
fn restart(lab: &Lab, dir: &TempDir, r: &Router) -> (Router, Reaped) {
    // SAFETY: kill(2) on a router of this test's lab.
    assert_eq!(unsafe { libc::kill(r.pid, libc::SIGTERM) }, 0);
    let deadline = Instant::now() + HANG_GUARD;
    while alive(r.pid as u64) {
        assert!(Instant::now() < deadline, "r1 did not stop");
        std::thread::sleep(Duration::from_millis(20));
    }
    // The new router counts its answers to SIGUSR1 from zero.
    let _ = std::fs::remove_file(&r.stats);
    let log = dir.path("r1-again.log");
    let child = Command::new("ip")
        .args([
            "netns",
            "exec",
            &format!("dp-{}.r1", lab.name),
            BIN,
            "route",
        ])
        .args(["--config", &r.config])
        .arg("--stats")
        .arg(&r.stats)
        .arg("--qos")
        .arg(format!("/run/dualperf/labs/{}/r1.qos.toml", lab.name))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .unwrap();
    let pid = child.id() as i32;
    let reaped = Reaped(child);
    while !std::fs::read_to_string(&log)
        .unwrap_or_default()
        .contains("dualperf route: forwarding")
    {
        assert!(
            Instant::now() < deadline && alive(pid as u64),
            "r1 again: {}",
            std::fs::read_to_string(&log).unwrap_or_default()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let again = Router {
        pid,
        config: r.config.clone(),
        stats: r.stats.clone(),
    };
    (again, reaped)
}

fn counter(stats: &Value, ptr: &str) -> u64 {
    u(&stats["rsvp"], ptr)
}

/// The reserved flow running from the sender in the fault checks.
const LONG: [&[&str]; 2] = [&["--stream", "webaudio", "--duration", "60s"], RESERVE];

/// Once r1 holds the sender's reservation, K - 1 = 2 of the sender's Path refreshes lost
/// (nft drops exactly two: a limit whose burst is 2 and which refills once an hour): the
/// state survives. r1's counters before.
fn two_paths_lost(lab: &Lab, r1: &Router) -> Value {
    let before = until("a reservation at r1", || r1.stats(), |s| installed(s) == 1);
    nft(lab, "sender", "add table inet dp-rsvp");
    nft(
        lab,
        "sender",
        "add chain inet dp-rsvp out { type filter hook output priority 0 ; }",
    );
    nft(
        lab,
        "sender",
        "add rule inet dp-rsvp out meta l4proto 46 @th,8,8 1 limit rate 1/hour burst 2 packets counter drop",
    );
    let deadline = Instant::now() + HANG_GUARD;
    while nft_counted(lab) < 2 {
        assert!(Instant::now() < deadline, "two Paths never dropped");
        std::thread::sleep(Duration::from_millis(20));
    }
    let dropped = r1.stats();
    // Two more Paths reach r1: the refreshes go on, and nothing timed out meanwhile.
    let survived = until(
        "Path refreshes after the two lost",
        || r1.stats(),
        |s| counter(s, "/messages_in/path") >= counter(&dropped, "/messages_in/path") + 2,
    );
    assert_eq!(nft_counted(lab), 2, "exactly two Paths dropped");
    for c in ["/path_timeouts", "/resv_timeouts"] {
        assert_eq!(
            counter(&survived, c),
            counter(&before, c),
            "{c}: {:#}",
            survived["rsvp"]
        );
    }
    assert_eq!(installed(&survived), 1, "{:#}", survived["rsvp"]);
    assert_eq!(
        counter(&survived, "/admitted"),
        counter(&before, "/admitted"),
        "not admitted again"
    );
    before
}

/// The sender killed (SIGKILL: no PathTear; its control connection's TCP dropped, so the
/// receiver does not end the session either): r1's state times out.
fn killed_sender_times_out(lab: &Lab, r1: &Router, before: &Value, sender: Proc) {
    nft(lab, "sender", "flush chain inet dp-rsvp out");
    nft(
        lab,
        "sender",
        "add rule inet dp-rsvp out meta l4proto tcp drop",
    );
    let ns = format!("dp-{}.sender", lab.name);
    let pids = crate::lab::pids_in(&ns, "dualperf");
    assert_eq!(pids.len(), 1, "{pids:?}");
    // SAFETY: kill(2) on the send this test started in its lab.
    assert_eq!(unsafe { libc::kill(pids[0] as i32, libc::SIGKILL) }, 0);
    let killed = Instant::now();
    drop(sender);
    let gone = until(
        "the killed sender's reservation gone at r1",
        || r1.stats(),
        |s| installed(s) == 0 && counter(s, "/path_timeouts") > counter(before, "/path_timeouts"),
    );
    eprintln!(
        "killed sender: r1's reservation seen gone {:?} after the kill (L = 1.05 s; polled)",
        killed.elapsed()
    );
    assert_eq!(
        counter(&gone, "/messages_in/path_tear"),
        counter(before, "/messages_in/path_tear"),
        "no PathTear came"
    );
    nft(lab, "sender", "delete table inet dp-rsvp");
}

#[test]
fn captured_rsvp_decodes_in_tshark_and_soft_state_meets_lost_refreshes_kills_and_restarts() {
    if !privileged() || !tshark_available() {
        return;
    }
    let dir = TempDir::new("lab-rsvp-faults");
    let pcap = dir.path("pcap");
    let lab = rsvp_lab("rf", &dir, Some(&pcap));
    let r1 = router(&lab, "r1");
    let rx = lab.spawn("receiver", &["recv"]);
    rx.wait_stderr_line(|l| l.contains("listening on"));
    // Path, Resv, ResvConf and PathTear of a reserved flow (over IPv6 and IPv4); ResvErr
    // of one beyond the reservable bandwidth.
    let sends = [
        spawn_send(
            &lab,
            RECEIVER_V6,
            &[&["--stream", "webaudio", "--duration", "2s"], RESERVE],
        ),
        spawn_send(
            &lab,
            RECEIVER_V6,
            &[
                &[
                    "--udp",
                    "--rate",
                    "2mbit",
                    "--size",
                    "1250",
                    "--duration",
                    "1s",
                ],
                RESERVE,
            ],
        ),
        spawn_send(
            &lab,
            RECEIVER_V4,
            &[&["--stream", "webaudio", "--duration", "2s"], RESERVE],
        ),
    ];
    let [reserved, refused, reserved_v4] = sends.map(flow);
    check_reserved(&reserved_v4, "5-tuple");
    check_reserved(&reserved, "flow-label");
    assert_eq!(reserved["reservation"]["confirmed"], true, "{reserved:#}");
    assert_eq!(refused["reservation"]["state"], "refused", "{refused:#}");
    assert_eq!(refused["reservation"]["refused"]["node"], R1_V6);

    let long = spawn_send(&lab, RECEIVER_V6, &LONG);
    let before = two_paths_lost(&lab, &r1);
    killed_sender_times_out(&lab, &r1, &before, long);

    // r1 restarted: the next refreshes rebuild the reservation.
    let sender = spawn_send(&lab, RECEIVER_V6, &LONG);
    until("a reservation at r1", || r1.stats(), |s| installed(s) == 1);
    let (r1, again) = restart(&lab, &dir, &r1);
    let rebuilt = until(
        "the reservation rebuilt at the restarted r1",
        || r1.stats(),
        |s| installed(s) == 1,
    );
    assert_eq!(counter(&rebuilt, "/admitted"), 1, "{:#}", rebuilt["rsvp"]);
    assert!(counter(&rebuilt, "/messages_in/path") >= 1);
    assert!(counter(&rebuilt, "/messages_in/resv") >= 1);
    drop(sender);
    drop(rx);

    // The capture of the first r1 (flushed as it stopped).
    let files: Vec<PathBuf> = std::fs::read_dir(pcap.join("r1"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    check_capture(&files, &reserved, &refused);
    drop(again);
    lab.down();
}
