//! `dualperf interop`: how this host's dual stack behaves, observed with real sockets on
//! loopback or between two nodes of a lab: the 2×2 table of Bouras et al. (H.323 study) (TCP
//! and UDP), RFC 3986 bracketed literals, RFC 6724 ordering of several answers, and a
//! Happy Eyeballs (RFC 8305) connect against a dual-stack, a refused and a stalled
//! IPv6 server. The decisions, the report and its text are `dualstack`'s
//! (`dualstack::interop`); this file only binds them to sockets and the clock.

use std::io::{Read, Write};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, TcpStream, ToSocketAddrs, UdpSocket};
use std::sync::mpsc;
use std::time::Duration as StdDuration;

use anyhow::{bail, Context, Result};
use dualstack::eyeballs::{self, HappyEyeballs, Outcome};
use dualstack::interop::{
    literal_inputs, mapped, parse_literal, short, table_plan, Cell, Eyeballs, Literal, Report,
    Selection,
};
use dualstack::select::{parse_gai_conf, PolicyTable};
use wire::time::{Duration, Instant};

/// Check dual-stack behaviour on this host: the IPv4/IPv6 client × server table (Bouras et al.,
/// H.323 study), bracketed IPv6 literals (RFC 3986), address selection over several DNS
/// answers (RFC 6724) and Happy Eyeballs (RFC 8305).
///
/// Everything is observed, not assumed: servers and clients are real sockets on
/// loopback (127.0.0.1, ::1), or, with --lab, in a lab's `receiver` and `sender`
/// namespaces at their benchmark-range addresses. A dual-stack IPv6 server is one
/// `[::]` socket with IPV6_V6ONLY = 0; the address it reports for an IPv4 client is
/// the IPv4-mapped `::ffff:a.b.c.d` (RFC 4291 §2.5.5.2). Only loopback or the lab's
/// own addresses are ever contacted; name lookups (`--name`) are never connected to.
#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:
  dualperf interop                       # loopback: the 2×2 table, literals, RFC 6724, Happy Eyeballs
  dualperf interop --json
  dualperf interop --lab two-hop         # sender → receiver of a running lab (root)
  dualperf interop --name localhost --gai-conf /etc/gai.conf")]
pub(crate) struct InteropArgs {
    /// Run servers in this lab's server node and clients in its client node (a lab
    /// made by `dualperf lab up`; needs root).
    #[arg(long, value_name = "LAB")]
    lab: Option<String>,
    /// With --lab: the node that runs the servers.
    #[arg(
        long,
        default_value = "receiver",
        requires = "lab",
        value_name = "NODE"
    )]
    server_node: String,
    /// With --lab: the node that runs the clients.
    #[arg(long, default_value = "sender", requires = "lab", value_name = "NODE")]
    client_node: String,
    /// The name whose addresses are ordered (resolved by getaddrinfo; never contacted).
    #[arg(long, default_value = "localhost")]
    name: String,
    /// The address-selection policy file (glibc's defaults if it does not exist).
    #[arg(long, default_value = "/etc/gai.conf", value_name = "FILE")]
    gai_conf: std::path::PathBuf,
    /// Happy Eyeballs' connection attempt delay (RFC 8305 §5: 250 ms recommended).
    #[arg(long, default_value = "250ms", value_parser = crate::args::std_duration, value_name = "DURATION")]
    attempt_delay: StdDuration,
    /// How long one connection attempt or datagram may take.
    #[arg(long, default_value = "2s", value_parser = crate::args::std_duration, value_name = "DURATION")]
    timeout: StdDuration,
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

/// Where servers and clients run, and the server's addresses.
#[derive(Clone, Debug)]
struct Place {
    server_ns: Option<String>,
    client_ns: Option<String>,
    v4: Ipv4Addr,
    v6: Ipv6Addr,
}

pub(crate) fn run(args: InteropArgs) -> Result<()> {
    let place = match &args.lab {
        None => Place {
            server_ns: None,
            client_ns: None,
            v4: Ipv4Addr::LOCALHOST,
            v6: Ipv6Addr::LOCALHOST,
        },
        Some(lab) => lab_place(lab, &args.server_node, &args.client_node)?,
    };
    let timeout = args.timeout;
    let mut cells = matrix_tcp(&place, timeout)?;
    cells.extend(matrix_udp(&place, timeout)?);
    let literals = literals(&place, timeout)?;
    let selection = selection(&args, &place)?;
    let eyeballs = eyeballs_scenarios(&place, args.attempt_delay, timeout)?;
    let report = Report {
        place: if args.lab.is_some() {
            "lab"
        } else {
            "loopback"
        },
        server_v4: place.v4,
        server_v6: place.v6,
        matrix: cells,
        literals,
        address_selection: selection,
        happy_eyeballs: eyeballs,
    };
    if args.json {
        // Through a JSON value, whose keys are sorted: the document as it has always been.
        return crate::out::print_json(&serde_json::to_value(&report)?);
    }
    crate::out::print(dualstack::interop::render(&report))
}

fn lab_place(lab: &str, server: &str, client: &str) -> Result<Place> {
    let state = lab::netlab::state(lab)?
        .with_context(|| format!("no lab {lab:?} is up (dualperf lab up)"))?;
    let t = &state.topology;
    let s = t
        .node(server)
        .with_context(|| format!("lab {lab} has no node {server:?}"))?;
    let c = t
        .node(client)
        .with_context(|| format!("lab {lab} has no node {client:?}"))?;
    let (_, end, _) = t
        .ends_of(s)
        .next()
        .with_context(|| format!("node {server} has no link"))?;
    Ok(Place {
        server_ns: Some(t.namespace(s)),
        client_ns: Some(t.namespace(c)),
        v4: end.ipv4,
        v6: end.ipv6,
    })
}

/// Runs `f` on a thread inside network namespace `ns` (or here). Sockets made there
/// stay in that namespace wherever they are used afterwards.
fn in_ns<T: Send + 'static>(
    ns: Option<&str>,
    f: impl FnOnce() -> Result<T> + Send + 'static,
) -> Result<T> {
    let ns = ns.map(str::to_string);
    std::thread::spawn(move || {
        if let Some(ns) = &ns {
            netio::netns::enter(ns).with_context(|| format!("entering namespace {ns}"))?;
        }
        f()
    })
    .join()
    .map_err(|_| anyhow::anyhow!("a socket thread panicked"))?
}

/// TCP: an IPv4-only server, a dual-stack IPv6 server and an IPv6-only server; clients of
/// each family connect, send a byte, and the server reports the peer it accepted.
fn matrix_tcp(p: &Place, timeout: StdDuration) -> Result<Vec<Cell>> {
    let (v4, v6) = (p.v4, p.v6);
    let (l4, l6, l6only) = in_ns(p.server_ns.as_deref(), move || {
        Ok((
            netio::tcp::listen(SocketAddr::new(v4.into(), 0), false)?,
            netio::tcp::listen(SocketAddr::new(Ipv6Addr::UNSPECIFIED.into(), 0), true)?,
            netio::tcp::listen(SocketAddr::new(v6.into(), 0), false)?,
        ))
    })?;
    let (p4, p6, p6o) = (
        l4.local_addr()?.port(),
        l6.local_addr()?.port(),
        l6only.local_addr()?.port(),
    );
    let servers = [&l4, &l6, &l6only];
    let mut cells = Vec::new();
    for (client, server, dest, which, note) in table_plan(v4, v6, [p4, p6, p6o]) {
        let listener = servers[which];
        let attempt = in_ns(p.client_ns.as_deref(), move || {
            let mut s = TcpStream::connect_timeout(&dest, timeout)?;
            s.write_all(b"x")?;
            Ok(s.local_addr()?)
        });
        let mut cell = Cell::new("tcp", (client, server, dest, note));
        match attempt {
            Ok(local) => {
                cell.client_local = Some(local.ip().to_string());
                let (mut conn, peer) = listener.accept()?;
                conn.set_read_timeout(Some(timeout))?;
                let mut b = [0u8; 1];
                cell.ok = conn.read_exact(&mut b).is_ok();
                cell.server_saw = Some(peer.ip().to_string());
            }
            Err(e) => cell.error = Some(root_cause(&e)),
        }
        cells.push(cell);
    }
    Ok(cells)
}

/// UDP: the same servers as datagram sockets; the client connects its socket (so an
/// ICMP port unreachable comes back as ECONNREFUSED), sends one datagram, and the
/// server reports the source address `recvfrom` gave.
fn matrix_udp(p: &Place, timeout: StdDuration) -> Result<Vec<Cell>> {
    let (v4, v6) = (p.v4, p.v6);
    let (u4, u6) = in_ns(p.server_ns.as_deref(), move || {
        Ok((
            netio::UdpSocket::bind(SocketAddr::new(v4.into(), 0), false)?.into_std(),
            netio::UdpSocket::bind(SocketAddr::new(Ipv6Addr::UNSPECIFIED.into(), 0), true)?
                .into_std(),
        ))
    })?;
    u4.set_read_timeout(Some(timeout))?;
    u6.set_read_timeout(Some(timeout))?;
    let (p4, p6) = (u4.local_addr()?.port(), u6.local_addr()?.port());
    let servers = [&u4, &u6];
    let mut cells = Vec::new();
    // UDP has no IPv6-only server row: the dual-stack rows show the same thing.
    for (client, server, dest, which, note) in table_plan(v4, v6, [p4, p6, 0])
        .into_iter()
        .filter(|c| c.3 < 2)
    {
        let sock = servers[which];
        let sent = in_ns(p.client_ns.as_deref(), move || {
            let any: SocketAddr = if dest.is_ipv4() {
                (Ipv4Addr::UNSPECIFIED, 0).into()
            } else {
                (Ipv6Addr::UNSPECIFIED, 0).into()
            };
            let c = UdpSocket::bind(any)?;
            c.connect(dest)?;
            c.send(b"x")?;
            let local = c.local_addr()?;
            Ok((c, local))
        });
        let mut cell = Cell::new("udp", (client, server, dest, note));
        match sent {
            Ok((c, local)) => {
                cell.client_local = Some(local.ip().to_string());
                let mut b = [0u8; 16];
                // Only this cell's datagram can be waiting: the one before it was read.
                let received = if cell.client.starts_with("IPv6")
                    && server == "IPv4"
                    && !dest.ip().to_string().starts_with("::ffff:")
                {
                    None
                } else {
                    sock.recv_from(&mut b).ok()
                };
                match received {
                    Some((_, from)) => {
                        cell.ok = true;
                        cell.server_saw = Some(from.ip().to_string());
                    }
                    None => {
                        c.set_read_timeout(Some(timeout))?;
                        cell.error = Some(match c.recv(&mut b) {
                            Err(e) => short(&e.to_string()),
                            Ok(_) => "not delivered".into(),
                        });
                    }
                }
            }
            Err(e) => cell.error = Some(root_cause(&e)),
        }
        cells.push(cell);
    }
    Ok(cells)
}

/// An error as the table shows it: "Connection refused", not "… (os error 111)".
fn root_cause(e: &anyhow::Error) -> String {
    short(&e.root_cause().to_string())
}

/// Host and URL strings with IPv6 literals: parsed by RFC 3986's rules and by a naive
/// split at the first colon, and the parsed ones connected to a dual-stack server.
fn literals(p: &Place, timeout: StdDuration) -> Result<Vec<Literal>> {
    let l6 = in_ns(p.server_ns.as_deref(), || {
        Ok(netio::tcp::listen(
            SocketAddr::new(Ipv6Addr::UNSPECIFIED.into(), 0),
            true,
        )?)
    })?;
    l6.set_nonblocking(true)?;
    let port = l6.local_addr()?.port();
    let (v4, v6) = (p.v4, p.v6);
    let mut out = Vec::new();
    for input in literal_inputs(v4, v6, port) {
        let parsed = parse_literal(&input);
        let target = parsed
            .as_ref()
            .ok()
            .and_then(|hp| Some(SocketAddr::new(hp.host.ip()?, hp.port?)));
        let connected = match target {
            Some(t)
                if t.port() == port
                    && (t.ip() == IpAddr::V4(v4)
                        || t.ip() == IpAddr::V6(v6)
                        || t.ip() == IpAddr::V6(mapped(v4))) =>
            {
                let ok = in_ns(p.client_ns.as_deref(), move || {
                    Ok(TcpStream::connect_timeout(&t, timeout).is_ok())
                })?;
                while l6.accept().is_ok() {}
                Some(ok)
            }
            _ => None,
        };
        out.push(Literal::new(input, parsed, connected));
    }
    Ok(out)
}

/// getaddrinfo's order for a name against ours (RFC 6724 §6 with the gai.conf table),
/// and our order for the test servers' IPv4 and IPv6 addresses with the sources the
/// kernel picks for them (a connected UDP socket: nothing is sent), in the client's
/// namespace.
fn selection(args: &InteropArgs, p: &Place) -> Result<Selection> {
    let base = PolicyTable::glibc_default();
    let (table, conf) = match std::fs::read_to_string(&args.gai_conf) {
        Ok(text) => (
            parse_gai_conf(&text, &base)
                .with_context(|| format!("{}", args.gai_conf.display()))?
                .table,
            args.gai_conf.display().to_string(),
        ),
        Err(_) => (
            base,
            format!("{} absent: glibc's defaults", args.gai_conf.display()),
        ),
    };
    let mut order: Vec<IpAddr> = Vec::new();
    for a in (args.name.as_str(), 0u16)
        .to_socket_addrs()
        .with_context(|| format!("resolving {}", args.name))?
    {
        if !order.contains(&a.ip()) {
            order.push(a.ip());
        }
    }
    let name_sources: Vec<Option<IpAddr>> = order.iter().map(|&d| source_for(d)).collect();
    let answers = vec![IpAddr::V4(p.v4), IpAddr::V6(p.v6)];
    let probe = answers.clone();
    let sources = in_ns(p.client_ns.as_deref(), move || {
        Ok(probe.iter().map(|&d| source_for(d)).collect::<Vec<_>>())
    })?;
    Ok(Selection::decide(
        args.name.clone(),
        conf,
        &table,
        order,
        &name_sources,
        answers,
        sources,
    ))
}

fn source_for(dst: IpAddr) -> Option<IpAddr> {
    let any: SocketAddr = if dst.is_ipv4() {
        (Ipv4Addr::UNSPECIFIED, 0).into()
    } else {
        (Ipv6Addr::UNSPECIFIED, 0).into()
    };
    let s = UdpSocket::bind(any).ok()?;
    s.connect((dst, 9)).ok()?;
    Some(s.local_addr().ok()?.ip())
}

/// Three servers for one port: both families up; IPv6 refused; IPv6 stalled (an
/// IPv6-only listener with backlog 0 whose one queued connection is never accepted, so
/// further SYNs are dropped).
fn eyeballs_scenarios(
    p: &Place,
    delay: StdDuration,
    timeout: StdDuration,
) -> Result<Vec<Eyeballs>> {
    let mut out = Vec::new();
    let (v4, v6) = (p.v4, p.v6);
    for scenario in [
        "both families listen",
        "IPv6 refused",
        "IPv6 stalled (SYNs dropped)",
    ] {
        let servers = in_ns(p.server_ns.as_deref(), move || -> Result<_> {
            for _ in 0..20 {
                let l4 = netio::tcp::listen(SocketAddr::new(v4.into(), 0), false)?;
                let port = l4.local_addr()?.port();
                // "IPv6 refused": nothing listens on the IPv6 side of the port.
                let l6 = match scenario {
                    "both families listen" => {
                        netio::tcp::listen(SocketAddr::new(v6.into(), port), false).map(Some)
                    }
                    "IPv6 refused" => Ok(None),
                    _ => {
                        netio::tcp::listen_with_backlog(SocketAddr::new(v6.into(), port), false, 0)
                            .map(Some)
                    }
                };
                if let Ok(l6) = l6 {
                    return Ok((l4, l6, port));
                }
            }
            bail!("no port free on both {v4} and {v6}")
        })?;
        let (_l4, l6, port) = servers;
        let mut fillers = Vec::new();
        if scenario.starts_with("IPv6 stalled") {
            // Fill the accept queue until a connect times out: from then on SYNs drop.
            let dest = SocketAddr::new(v6.into(), port);
            fillers = in_ns(p.client_ns.as_deref(), move || {
                let mut v = Vec::new();
                for _ in 0..8 {
                    match TcpStream::connect_timeout(&dest, StdDuration::from_millis(300)) {
                        Ok(s) => v.push(s),
                        Err(_) => return Ok(v),
                    }
                }
                bail!("the IPv6 listener did not stall after 8 queued connections")
            })?;
        }
        let addrs = vec![
            SocketAddr::new(v6.into(), port),
            SocketAddr::new(v4.into(), port),
        ];
        let (winner, connect_ms, timeline) =
            happy_eyeballs(p.client_ns.as_deref(), &addrs, delay, timeout)?;
        drop(fillers);
        drop(l6);
        out.push(Eyeballs {
            scenario,
            addresses: addrs,
            winner,
            connect_ms,
            timeline,
        });
    }
    Ok(out)
}

/// Drives `dualstack::eyeballs` with real connects, one thread per attempt.
fn happy_eyeballs(
    ns: Option<&str>,
    addrs: &[SocketAddr],
    delay: StdDuration,
    timeout: StdDuration,
) -> Result<(Option<SocketAddr>, f64, Vec<String>)> {
    let params = eyeballs::Params {
        attempt_delay: Duration::from_nanos(delay.as_nanos() as u64),
        ..eyeballs::Params::default()
    };
    let now = || Instant::from_nanos(netio::clock::mono_ns());
    let start = now();
    let mut he = HappyEyeballs::new(addrs, params, start);
    let (tx, rx) = mpsc::channel::<(usize, bool)>();
    let deadline = start + Duration::from_nanos(3 * timeout.as_nanos() as u64);
    while he.outcome().is_none() && now() < deadline {
        while let Some(a) = he.poll_attempt(now()) {
            let (tx, ns) = (tx.clone(), ns.map(str::to_string));
            std::thread::spawn(move || {
                let ok = in_ns(ns.as_deref(), move || {
                    Ok(TcpStream::connect_timeout(&a.addr, timeout).is_ok())
                })
                .unwrap_or(false);
                let _ = tx.send((a.id, ok));
            });
        }
        let wait = he.poll_timeout().map_or(StdDuration::from_millis(50), |t| {
            StdDuration::from_nanos(t.as_nanos().saturating_sub(now().as_nanos()))
        });
        match rx.recv_timeout(wait.min(StdDuration::from_millis(50))) {
            Ok((id, true)) => he.handle_connected(id, now()),
            Ok((id, false)) => he.handle_failed(id, now()),
            Err(_) => {}
        }
    }
    while he.poll_cancel().is_some() {}
    let timeline = dualstack::interop::timeline(he.events(), start);
    Ok(match he.outcome() {
        Some(Outcome::Connected { addr, at, .. }) => {
            (Some(addr), (at - start).as_nanos() as f64 / 1e6, timeline)
        }
        _ => (None, (now() - start).as_nanos() as f64 / 1e6, timeline),
    })
}
