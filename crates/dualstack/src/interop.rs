//! `dualperf interop`'s report: what the binary observed of this host's dual stack with
//! real sockets, as types (its `--json`) and as text. The binary binds the cores of this
//! crate to sockets and the clock; here is what needs neither: the plan of the 2×2
//! table (which client tries which server, and what to expect), the literals it
//! tries, address selection over what it found, the Happy Eyeballs timeline, and the
//! text.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

use serde::Serialize;
use wire::time::Instant;

use crate::eyeballs::{Event, EventKind};
use crate::hostport::{naive_split, parse_host_port, parse_url, HostPort, HostPortError};
use crate::select::{self, Candidate, PolicyTable};

/// Everything `dualperf interop` observed: its `--json` document.
#[derive(Debug, Serialize, schemars::JsonSchema)]
pub struct Report {
    /// `loopback`, or `lab` (two nodes of a running lab).
    pub place: &'static str,
    /// The servers' IPv4 address.
    pub server_v4: Ipv4Addr,
    /// The servers' IPv6 address.
    pub server_v6: Ipv6Addr,
    /// The cells of the 2×2 table, TCP then UDP.
    pub matrix: Vec<Cell>,
    /// Host and URL strings with literals.
    pub literals: Vec<Literal>,
    /// RFC 6724 ordering.
    pub address_selection: Selection,
    /// Happy Eyeballs against three servers.
    pub happy_eyeballs: Vec<Eyeballs>,
}

/// One cell of the 2×2 table.
#[derive(Debug, Serialize, schemars::JsonSchema)]
pub struct Cell {
    /// `tcp` or `udp`.
    pub proto: &'static str,
    /// The client's kind (`IPv4`, `IPv6`, `IPv6 (mapped)`).
    pub client: &'static str,
    /// The server's kind (`IPv4`, `IPv6 dual-stack`, `IPv6-only (V6ONLY=1)`).
    pub server: &'static str,
    /// What the client connected or sent to.
    pub dest: SocketAddr,
    /// The byte arrived.
    pub ok: bool,
    /// The client's address as the server saw it (`accept`/`recvfrom`).
    pub server_saw: Option<String>,
    /// The client's own address (`getsockname`).
    pub client_local: Option<String>,
    /// Why it failed, as [`short`] words it.
    pub error: Option<String>,
    /// What to expect.
    pub note: &'static str,
}

impl Cell {
    /// A cell of [`table_plan`]'s, not yet tried.
    pub fn new(
        proto: &'static str,
        (client, server, dest, note): (&'static str, &'static str, SocketAddr, &'static str),
    ) -> Cell {
        Cell {
            proto,
            client,
            server,
            dest,
            ok: false,
            server_saw: None,
            client_local: None,
            error: None,
            note,
        }
    }
}

/// One host or URL string with a literal.
#[derive(Debug, Serialize, schemars::JsonSchema)]
pub struct Literal {
    /// As written.
    pub input: String,
    /// Its host and port by RFC 3986's rules, or why it does not parse.
    pub parsed: Result<String, String>,
    /// What a split at the first `:` makes of it.
    pub naive_split: (String, Option<String>),
    /// Connected to the dual-stack test server at the parsed address.
    pub connected: Option<bool>,
}

impl Literal {
    /// `input` as [`parse_literal`] read it, and whether it `connected`.
    pub fn new(
        input: String,
        parsed: Result<HostPort, HostPortError>,
        connected: Option<bool>,
    ) -> Literal {
        Literal {
            parsed: parsed
                .map(|hp| {
                    format!(
                        "host {} port {}",
                        hp.host,
                        hp.port.map_or("none".into(), |p| p.to_string())
                    )
                })
                .map_err(|e| e.to_string()),
            naive_split: naive_split(&input),
            input,
            connected,
        }
    }
}

/// RFC 6724's order against getaddrinfo's, and for the test servers' two addresses.
#[derive(Debug, Serialize, schemars::JsonSchema)]
pub struct Selection {
    /// The name resolved.
    pub name: String,
    /// The policy file, or that it is absent.
    pub gai_conf: String,
    /// The name's addresses in getaddrinfo's order (glibc sorts them by RFC 6724 with
    /// the gai.conf table).
    pub getaddrinfo_order: Vec<IpAddr>,
    /// The same addresses sorted by `dualstack::select`; `agree` is null when
    /// the name has fewer than two addresses (nothing to order).
    pub rfc6724_order: Vec<IpAddr>,
    /// Whether the two orders agree.
    pub agree: Option<bool>,
    /// The test servers' two addresses as a resolver would return them unsorted (A
    /// before AAAA), the sources this host's kernel picks for them, and their RFC 6724
    /// order with the rule that decided.
    pub answers: Vec<IpAddr>,
    /// The source the kernel picks for each answer.
    pub sources: Vec<Option<IpAddr>>,
    /// The answers in RFC 6724's order.
    pub answers_sorted: Vec<IpAddr>,
    /// For each neighbouring pair of them, the rule that ordered it.
    pub deciding_rules: Vec<String>,
}

impl Selection {
    /// Sorts `order` (getaddrinfo's, with the kernel's `order_sources` for it) and
    /// `answers` (with `sources`) by RFC 6724 over `table`. Sorting getaddrinfo's own
    /// order: the sort is stable, so where RFC 6724 ties the resolver's order stands
    /// (rule 10) and only a real disagreement shows.
    pub fn decide(
        name: String,
        gai_conf: String,
        table: &PolicyTable,
        order: Vec<IpAddr>,
        order_sources: &[Option<IpAddr>],
        answers: Vec<IpAddr>,
        sources: Vec<Option<IpAddr>>,
    ) -> Selection {
        let sorted = |addrs: &[IpAddr], sources: &[Option<IpAddr>]| {
            let mut c: Vec<Candidate> = addrs
                .iter()
                .zip(sources)
                .map(|(&dst, &src)| Candidate { dst, src })
                .collect();
            select::sort_destinations(&mut c, table);
            c
        };
        let ours: Vec<IpAddr> = sorted(&order, order_sources)
            .iter()
            .map(|c| c.dst)
            .collect();
        let cands = sorted(&answers, &sources);
        let deciding_rules = cands
            .windows(2)
            .map(|w| {
                let (_, rule) = select::compare(&w[0], &w[1], table);
                format!("{} before {}: {rule}", w[0].dst, w[1].dst)
            })
            .collect();
        Selection {
            name,
            gai_conf,
            agree: (order.len() > 1).then(|| ours == order),
            getaddrinfo_order: order,
            rfc6724_order: ours,
            answers,
            sources,
            answers_sorted: cands.iter().map(|c| c.dst).collect(),
            deciding_rules,
        }
    }
}

/// One Happy Eyeballs scenario.
#[derive(Debug, Serialize, schemars::JsonSchema)]
pub struct Eyeballs {
    /// Which servers listen: both families, IPv6 refused, IPv6 stalled.
    pub scenario: &'static str,
    /// The addresses tried, in order.
    pub addresses: Vec<SocketAddr>,
    /// The address that connected.
    pub winner: Option<SocketAddr>,
    /// When it connected (or the attempts gave up), ms after the start.
    pub connect_ms: f64,
    /// The attempts' events, one line each ([`timeline`]).
    pub timeline: Vec<String>,
}

/// The IPv4-mapped IPv6 address of `v4` (`::ffff:a.b.c.d`, RFC 4291 §2.5.5.2).
pub fn mapped(v4: Ipv4Addr) -> Ipv6Addr {
    v4.to_ipv6_mapped()
}

/// The cells of the table: client, server, destination, which server (0 IPv4-only, 1
/// dual-stack IPv6, 2 IPv6-only) at ports `p`, and what to expect.
pub fn table_plan(
    v4: Ipv4Addr,
    v6: Ipv6Addr,
    p: [u16; 3],
) -> [(&'static str, &'static str, SocketAddr, usize, &'static str); 6] {
    let at = |ip: IpAddr, i: usize| SocketAddr::new(ip, p[i]);
    let (v4, v6, m) = (IpAddr::V4(v4), IpAddr::V6(v6), IpAddr::V6(mapped(v4)));
    [
        ("IPv4", "IPv4", at(v4, 0), 0, "IPv4 end to end"),
        (
            "IPv4",
            "IPv6 dual-stack",
            at(v4, 1),
            1,
            "IPv4 on the wire; the server sees an IPv4-mapped address",
        ),
        ("IPv6", "IPv6 dual-stack", at(v6, 1), 1, "IPv6 end to end"),
        (
            "IPv6",
            "IPv4",
            at(v6, 0),
            0,
            "no IPv6 socket on that port: refused (TCP RST, ICMPv6 port unreachable for UDP)",
        ),
        (
            "IPv6 (mapped)",
            "IPv4",
            at(m, 0),
            0,
            "an AF_INET6 socket reaches an IPv4 server through ::ffff:a.b.c.d; IPv4 on the wire",
        ),
        (
            "IPv4",
            "IPv6-only (V6ONLY=1)",
            at(v4, 2),
            2,
            "IPV6_V6ONLY=1 refuses IPv4: no port there",
        ),
    ]
}

/// An error as the table shows it: "Connection refused", not "… (os error 111)".
pub fn short(s: &str) -> String {
    s.split(" (os error").next().unwrap_or(s).to_string()
}

/// Host and URL strings with literals of the servers' addresses `v4`, `v6` at `port`,
/// and two more: good ones, and the mistakes legacy code makes or lets through.
pub fn literal_inputs(v4: Ipv4Addr, v6: Ipv6Addr, port: u16) -> [String; 8] {
    [
        format!("[{v6}]:{port}"),
        format!("http://[{v6}]:{port}/status"),
        format!("{v4}:{port}"),
        format!("[{}]:{port}", mapped(v4)),
        format!("{v6}"),
        format!("{v6}:{port}"),
        "[fe80::1%25eth0]:80".to_string(),
        format!("[{v4}]:{port}"),
    ]
}

/// A literal read by RFC 3986's rules: a URL's authority, or a host:port.
pub fn parse_literal(input: &str) -> Result<HostPort, HostPortError> {
    if input.contains("://") {
        parse_url(input).map(|u| u.host_port)
    } else {
        parse_host_port(input)
    }
}

/// The events of a Happy Eyeballs run started at `start`, one line each: when (ms) and
/// what.
pub fn timeline(events: &[Event], start: Instant) -> Vec<String> {
    events
        .iter()
        .map(|e| {
            let what = match e.kind {
                EventKind::Started { id, addr } => format!("attempt {id} to {addr} starts"),
                EventKind::Connected { id } => format!("attempt {id} connected"),
                EventKind::Failed { id } => format!("attempt {id} failed"),
                EventKind::Cancelled { id } => format!("attempt {id} cancelled"),
            };
            format!("{:>8.1} ms  {what}", (e.at - start).as_nanos() as f64 / 1e6)
        })
        .collect()
}

/// The report as `dualperf interop` prints it: the 2×2 tables (TCP, UDP), Bouras et
/// al.'s table as observed, the literals, address selection and Happy Eyeballs.
pub fn render(r: &Report) -> String {
    let (cells, lits, sel, he) = (
        &r.matrix,
        &r.literals,
        &r.address_selection,
        &r.happy_eyeballs,
    );
    let mut o = String::new();
    o += &format!(
        "Dual-stack interoperability (as in Bouras et al., H.323 study), servers at {} and {}:\n\n",
        r.server_v4, r.server_v6
    );
    for proto in ["tcp", "udp"] {
        o += &format!(
            "{:<8}{:<15}{:<22}{:<28}{:<5}{}\n",
            proto.to_uppercase(),
            "client",
            "server",
            "destination",
            "ok",
            "server saw / error"
        );
        for c in cells.iter().filter(|c| c.proto == proto) {
            o += &format!(
                "{:<8}{:<15}{:<22}{:<28}{:<5}{}\n",
                "",
                c.client,
                c.server,
                c.dest.to_string(),
                if c.ok { "yes" } else { "no" },
                c.server_saw
                    .clone()
                    .or_else(|| c.error.clone())
                    .unwrap_or_default()
            );
        }
        o += "\n";
    }
    o += "Bouras et al.'s table, as observed (TCP):\n";
    let saw = |client: &str, server: &str| {
        cells
            .iter()
            .find(|c| c.proto == "tcp" && c.client == client && c.server == server)
            .map(|c| match (&c.server_saw, &c.error) {
                (Some(s), _) => format!("server sees {s}"),
                (None, Some(e)) => format!("fails: {e}"),
                _ => "fails".into(),
            })
            .unwrap_or_default()
    };
    o += &format!(
        "  {:<13}{:<36}{}\n",
        "", "IPv4 server", "IPv6 server (dual-stack)"
    );
    o += &format!(
        "  {:<13}{:<36}{}\n",
        "IPv4 client",
        saw("IPv4", "IPv4"),
        saw("IPv4", "IPv6 dual-stack")
    );
    o += &format!(
        "  {:<13}{:<36}{}\n",
        "IPv6 client",
        saw("IPv6", "IPv4"),
        saw("IPv6", "IPv6 dual-stack")
    );
    o += &format!(
        "  {:<13}to ::ffff:{}: {}\n",
        "",
        r.server_v4,
        saw("IPv6 (mapped)", "IPv4")
    );
    o += "\nLiteral addresses (RFC 3986 §3.2.2), and a naive split at the first ':':\n";
    for l in lits {
        o += &format!(
            "  {:<32} {}{}\n  {:<32} naive: host {:?}, port {}\n",
            l.input,
            match &l.parsed {
                Ok(s) => s.clone(),
                Err(e) => format!("error: {e}"),
            },
            match l.connected {
                Some(true) => ", connected",
                Some(false) => ", connect FAILED",
                None => "",
            },
            "",
            l.naive_split.0,
            l.naive_split
                .1
                .as_deref()
                .map_or("none".to_string(), |p| format!("{p:?}"))
        );
    }
    o += &format!(
        "\nAddress selection (RFC 6724 §6; policy: {}):\n",
        sel.gai_conf
    );
    o += &format!(
        "  {:?} → getaddrinfo: {}; ours: {}{}\n",
        sel.name,
        join(&sel.getaddrinfo_order),
        join(&sel.rfc6724_order),
        match sel.agree {
            Some(true) => " (agree)",
            Some(false) => " (DIFFER)",
            None => " (one address: nothing to order)",
        }
    );
    let srcs: Vec<String> = sel
        .sources
        .iter()
        .map(|s| s.map_or("none".into(), |s| s.to_string()))
        .collect();
    o += &format!(
        "  answers {} (sources {}) → {}\n",
        join(&sel.answers),
        srcs.join(", "),
        join(&sel.answers_sorted)
    );
    for r in &sel.deciding_rules {
        o += &format!("    {r}\n");
    }
    o += "\nHappy Eyeballs (RFC 8305 §5: IPv6 first; the next attempt when the delay runs out, or\nafter a failure but never within 10 ms of the last start):\n";
    for h in he {
        o += &format!(
            "  {:<30} winner {:<24} after {:.1} ms\n",
            h.scenario,
            h.winner.map_or("none".into(), |a| a.to_string()),
            h.connect_ms
        );
        for t in &h.timeline {
            o += &format!("      {t}\n");
        }
    }
    o
}

/// Addresses, comma-separated.
fn join(v: &[IpAddr]) -> String {
    v.iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::eyeballs::{HappyEyeballs, Params};
    use wire::time::Duration;

    /// A report as loopback gives it, ports and times fixed.
    fn fixture() -> Report {
        let (v4, v6) = (Ipv4Addr::LOCALHOST, Ipv6Addr::LOCALHOST);
        let mut matrix: Vec<Cell> = table_plan(v4, v6, [5001, 5002, 5003])
            .into_iter()
            .map(|(client, server, dest, _, note)| Cell::new("tcp", (client, server, dest, note)))
            .collect();
        for (i, saw) in [
            (0, "127.0.0.1"),
            (1, "::ffff:127.0.0.1"),
            (2, "::1"),
            (4, "127.0.0.1"),
        ] {
            matrix[i].ok = true;
            matrix[i].server_saw = Some(saw.into());
        }
        matrix[3].error = Some(short("Connection refused (os error 111)"));
        matrix[5].error = Some(short("Connection refused (os error 111)"));
        let udp: Vec<Cell> = table_plan(v4, v6, [6001, 6002, 0])
            .into_iter()
            .filter(|c| c.3 < 2)
            .map(|(client, server, dest, _, note)| Cell::new("udp", (client, server, dest, note)))
            .collect();
        matrix.extend(udp);
        let literals = literal_inputs(v4, v6, 7001)
            .into_iter()
            .enumerate()
            .map(|(i, input)| {
                let parsed = parse_literal(&input);
                let connected = parsed.is_ok().then_some(i != 2);
                Literal::new(input, parsed, connected)
            })
            .collect();
        let a4 = IpAddr::V4(v4);
        let a6 = IpAddr::V6(v6);
        let address_selection = Selection::decide(
            "localhost".into(),
            "/etc/gai.conf absent: glibc's defaults".into(),
            &PolicyTable::glibc_default(),
            vec![a4, a6],
            &[Some(a4), Some(a6)],
            vec![a4, a6],
            vec![Some(a4), None],
        );
        let start = Instant::from_nanos(1_000_000_000);
        let addrs = [SocketAddr::new(a6, 8001), SocketAddr::new(a4, 8001)];
        let mut he = HappyEyeballs::new(&addrs, Params::default(), start);
        let first = he.poll_attempt(start).unwrap();
        he.handle_failed(first.id, start + Duration::from_nanos(300_000));
        let at = start + Duration::from_nanos(10_000_000);
        let second = he.poll_attempt(at).unwrap();
        he.handle_connected(second.id, at + Duration::from_nanos(150_000));
        let happy_eyeballs = vec![Eyeballs {
            scenario: "IPv6 refused",
            addresses: addrs.to_vec(),
            winner: Some(addrs[1]),
            connect_ms: 10.15,
            timeline: timeline(he.events(), start),
        }];
        Report {
            place: "loopback",
            server_v4: v4,
            server_v6: v6,
            matrix,
            literals,
            address_selection,
            happy_eyeballs,
        }
    }

    #[test]
    fn the_text_holds_every_table_as_interop_prints_it() {
        let want = [
            "Dual-stack interoperability (as in Bouras et al., H.323 study), servers at 127.0.0.1 and ::1:",
            "",
            "TCP     client         server                destination                 ok   server saw / error",
            "        IPv4           IPv4                  127.0.0.1:5001              yes  127.0.0.1",
            "        IPv4           IPv6 dual-stack       127.0.0.1:5002              yes  ::ffff:127.0.0.1",
            "        IPv6           IPv6 dual-stack       [::1]:5002                  yes  ::1",
            "        IPv6           IPv4                  [::1]:5001                  no   Connection refused",
            "        IPv6 (mapped)  IPv4                  [::ffff:127.0.0.1]:5001     yes  127.0.0.1",
            "        IPv4           IPv6-only (V6ONLY=1)  127.0.0.1:5003              no   Connection refused",
            "",
            "UDP     client         server                destination                 ok   server saw / error",
            "        IPv4           IPv4                  127.0.0.1:6001              no   ",
            "        IPv4           IPv6 dual-stack       127.0.0.1:6002              no   ",
            "        IPv6           IPv6 dual-stack       [::1]:6002                  no   ",
            "        IPv6           IPv4                  [::1]:6001                  no   ",
            "        IPv6 (mapped)  IPv4                  [::ffff:127.0.0.1]:6001     no   ",
            "",
            "Bouras et al.'s table, as observed (TCP):",
            "               IPv4 server                         IPv6 server (dual-stack)",
            "  IPv4 client  server sees 127.0.0.1               server sees ::ffff:127.0.0.1",
            "  IPv6 client  fails: Connection refused           server sees ::1",
            "               to ::ffff:127.0.0.1: server sees 127.0.0.1",
            "",
            "Literal addresses (RFC 3986 §3.2.2), and a naive split at the first ':':",
            "  [::1]:7001                       host ::1 port 7001, connected",
            "                                   naive: host \"[\", port \":1]:7001\"",
            "  http://[::1]:7001/status         host ::1 port 7001, connected",
            "                                   naive: host \"http\", port \"//[::1]:7001/status\"",
            "  127.0.0.1:7001                   host 127.0.0.1 port 7001, connect FAILED",
            "                                   naive: host \"127.0.0.1\", port \"7001\"",
            "  [::ffff:127.0.0.1]:7001          host ::ffff:127.0.0.1 port 7001, connected",
            "                                   naive: host \"[\", port \":ffff:127.0.0.1]:7001\"",
            "  ::1                              host ::1 port none, connected",
            "                                   naive: host \"\", port \":1\"",
            "  ::1:7001                         host ::1:7001 port none, connected",
            "                                   naive: host \"\", port \":1:7001\"",
            "  [fe80::1%25eth0]:80              host fe80::1%eth0 port 80, connected",
            "                                   naive: host \"[fe80\", port \":1%25eth0]:80\"",
            "  [127.0.0.1]:7001                 error: IPv4 address '127.0.0.1' in brackets: RFC 3986 §3.2.2 allows only IPv6 (or IPvFuture) inside '[ ]'; write it without brackets",
            "                                   naive: host \"[127.0.0.1]\", port \"7001\"",
            "",
            "Address selection (RFC 6724 §6; policy: /etc/gai.conf absent: glibc's defaults):",
            "  \"localhost\" → getaddrinfo: 127.0.0.1, ::1; ours: ::1, 127.0.0.1 (DIFFER)",
            "  answers 127.0.0.1, ::1 (sources 127.0.0.1, none) → 127.0.0.1, ::1",
            "    127.0.0.1 before ::1: rule 1: avoid unusable destinations",
            "",
            "Happy Eyeballs (RFC 8305 §5: IPv6 first; the next attempt when the delay runs out, or",
            "after a failure but never within 10 ms of the last start):",
            "  IPv6 refused                   winner 127.0.0.1:8001           after 10.2 ms",
            "           0.0 ms  attempt 0 to [::1]:8001 starts",
            "           0.3 ms  attempt 0 failed",
            "          10.0 ms  attempt 1 to 127.0.0.1:8001 starts",
            "          10.2 ms  attempt 1 connected",
        ];
        let text = render(&fixture());
        assert_eq!(text.lines().collect::<Vec<_>>(), want, "{text}");
        assert!(text.ends_with("connected\n"), "{text}");
    }

    #[test]
    fn the_document_keeps_its_keys_and_the_literals_their_readings() {
        let v = serde_json::to_value(fixture()).unwrap();
        let keys =
            |v: &serde_json::Value| v.as_object().unwrap().keys().cloned().collect::<Vec<_>>();
        assert_eq!(
            keys(&v),
            [
                "address_selection",
                "happy_eyeballs",
                "literals",
                "matrix",
                "place",
                "server_v4",
                "server_v6"
            ]
        );
        assert_eq!(
            keys(&v["matrix"][0]),
            [
                "client",
                "client_local",
                "dest",
                "error",
                "note",
                "ok",
                "proto",
                "server",
                "server_saw"
            ]
        );
        assert_eq!(v["matrix"].as_array().unwrap().len(), 6 + 5);
        assert_eq!(v["literals"][0]["parsed"]["Ok"], "host ::1 port 7001");
        assert!(v["literals"][7]["parsed"]["Err"]
            .as_str()
            .unwrap()
            .starts_with("IPv4 address '127.0.0.1' in brackets"));
        assert_eq!(v["literals"][7]["naive_split"][1], "7001");
        assert_eq!(v["address_selection"]["agree"], false);
        assert_eq!(v["happy_eyeballs"][0]["winner"], "127.0.0.1:8001");
    }

    #[test]
    fn the_table_plan_tries_each_client_against_each_server() {
        let plan = table_plan(
            Ipv4Addr::new(198, 18, 2, 2),
            "2001:2:0:2::2".parse().unwrap(),
            [1, 2, 3],
        );
        let rows: Vec<String> = plan
            .iter()
            .map(|(c, s, dest, which, _)| format!("{c} → {s} at {dest} ({which})"))
            .collect();
        assert_eq!(
            rows,
            [
                "IPv4 → IPv4 at 198.18.2.2:1 (0)",
                "IPv4 → IPv6 dual-stack at 198.18.2.2:2 (1)",
                "IPv6 → IPv6 dual-stack at [2001:2:0:2::2]:2 (1)",
                "IPv6 → IPv4 at [2001:2:0:2::2]:1 (0)",
                "IPv6 (mapped) → IPv4 at [::ffff:198.18.2.2]:1 (0)",
                "IPv4 → IPv6-only (V6ONLY=1) at 198.18.2.2:3 (2)",
            ]
        );
        assert_eq!(
            short("Connection refused (os error 111)"),
            "Connection refused"
        );
        assert_eq!(short("timed out"), "timed out");
    }
}
