//! The path's facts per family, measured against a far end (`compare HOST` writes them as
//! `DIR/path.json`): the sessions and sockets only. Which flows probe what, and how their
//! reports read into facts, is `results::path`'s.
//!
//! Per family, in this order:
//! 1. a control connection: our address (`getsockname`) against the one the far end saw
//!    (`Welcome.peer`: NAT), and the clock offset (RFC 5905 §8 exchanges);
//! 2. one session of the probe flow (hops and marking) and DPLPMTUD's first round
//!    (RFC 8899 §5.3), then a session of its refinement round; the kernel's path MTU
//!    (RFC 1191 / RFC 8201) read on a socket connected to the far end;
//! 3. with a capacity duration, a bulk TCP session;
//! 4. with an agent, the same flows sent by the agent to us (the reverse direction).
//!
//! A STAMP reflector answers only STAMP packets: one probe session gives the forward
//! hops and marking (Ses-Sender TTL, Class of Service TLV) and the reverse hops.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result};
use results::path::{
    self, Direction, Fact, Family, FamilyPath, FarEnd, Ladder, PathFacts, PATH_FORMAT_VERSION,
    REFINE_SIZES,
};
use results::send::SendReport;
use traffic::FlowSpec;

use crate::control::MsgReader;
use crate::send::session::PartialReport;
use crate::send::SendConfig;

/// Measure the path's facts (a test aid; `compare HOST` writes them as `path.json`).
///
/// Per family: NAT and the clock over a control connection, hops and marking from a probe
/// flow, the path MTU by DPLPMTUD (RFC 8899) beside the kernel's, and with --capacity a
/// bulk TCP transfer; with an agent, the reverse direction too. Prints path.json's document.
#[derive(Debug, clap::Args)]
#[command(after_help = "Example:
  dualperf path-facts 127.0.0.1 ::1 --far-end agent --key K --capacity 1s")]
pub(crate) struct FactsArgs {
    /// The far end's addresses, one per family to measure.
    #[arg(required = true, value_name = "ADDR")]
    addrs: Vec<IpAddr>,
    /// Its control port (a STAMP reflector's UDP port with --far-end stamp).
    #[arg(short, long, default_value_t = crate::control::DEFAULT_PORT)]
    port: u16,
    /// What answers there: agent, recv or stamp.
    #[arg(long, default_value = "recv", value_parser = ["agent", "recv", "stamp"])]
    far_end: String,
    /// The far end's key.
    #[arg(long, env = "DUALPERF_KEY", hide_env_values = true)]
    key: Option<String>,
    /// Measure the capacity with a bulk TCP transfer this long per family and direction.
    #[arg(long, value_parser = crate::args::std_duration, value_name = "DURATION")]
    capacity: Option<Duration>,
    /// Print the report's Path block instead of the JSON document.
    #[arg(long)]
    text: bool,
}

/// `dualperf path-facts`.
pub(crate) fn run(args: FactsArgs) -> Result<()> {
    let far_end = match args.far_end.as_str() {
        "agent" => FarEnd::Agent,
        "stamp" => FarEnd::Stamp,
        _ => FarEnd::Recv,
    };
    let mut addrs: Vec<SocketAddr> = args
        .addrs
        .iter()
        .map(|&ip| SocketAddr::new(ip, args.port))
        .collect();
    addrs.sort_by_key(SocketAddr::is_ipv6);
    let target = Target {
        host: args
            .addrs
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join(" "),
        far_end,
        addrs,
        key: args.key.map(String::into_bytes),
        capacity: args.capacity,
    };
    let facts = measure(&target, &crate::interrupt::flag());
    match args.text {
        true => crate::out::print(report::path::text(&facts)),
        false => crate::out::print(serde_json::to_string_pretty(&facts)? + "\n"),
    }
}

/// What to measure, and against what.
#[derive(Clone, Debug)]
pub(crate) struct Target {
    /// The far end as the user gave it (for the document).
    pub(crate) host: String,
    /// What answers there.
    pub(crate) far_end: FarEnd,
    /// The far end's control (or STAMP) address of each family to measure, IPv4 first.
    pub(crate) addrs: Vec<SocketAddr>,
    /// The far end's key (`--key`); `None` for a STAMP reflector or an open receiver.
    pub(crate) key: Option<Vec<u8>>,
    /// A bulk TCP transfer of this length per family and direction measures the
    /// capacity; `None` leaves it "not measured" (a lab reads it from the topology).
    pub(crate) capacity: Option<Duration>,
}

/// The facts of every family of `t`. Never fails: what cannot be measured is said so in
/// the fact ("not measured: …").
pub(crate) fn measure(t: &Target, stop: &Arc<AtomicBool>) -> PathFacts {
    PathFacts {
        format_version: PATH_FORMAT_VERSION,
        host: t.host.clone(),
        far_end: t.far_end,
        notes: path::method_notes(t.far_end),
        families: t.addrs.iter().map(|&a| family(t, a, stop)).collect(),
    }
}

/// One family's facts.
fn family(t: &Target, remote: SocketAddr, stop: &Arc<AtomicBool>) -> FamilyPath {
    let fam = Family::of(&remote);
    if t.far_end == FarEnd::Stamp {
        return stamp_family(remote, stop);
    }
    let (local, nat, clock) = match control(t, remote) {
        Ok((local, seen, clock)) => (
            Some(local),
            path::nat(local, seen),
            clock.map_or_else(
                || Fact::not("the far end did not answer clock exchanges"),
                Fact::Measured,
            ),
        ),
        Err(e) => {
            // Every session would fail the same way, each after its own timeout.
            let why = format!("{e:#}");
            return FamilyPath {
                family: fam,
                local: None,
                remote,
                nat: Fact::not(why.clone()),
                forward: Direction::not_measured(&why),
                reverse: Direction::not_measured(&why),
                clock: Fact::not(why),
            };
        }
    };
    let forward = direction(t, remote, fam, Way::Forward, stop);
    let reverse = match t.far_end {
        FarEnd::Agent => direction(t, remote, fam, Way::Reverse, stop),
        _ => Direction::not_measured("the far end is dualperf recv: the forward direction only"),
    };
    FamilyPath {
        family: fam,
        local,
        remote,
        nat,
        forward,
        reverse,
        clock,
    }
}

/// Our control connection's address, the one the far end saw, and the clock offset.
fn control(
    t: &Target,
    remote: SocketAddr,
) -> Result<(
    SocketAddr,
    Option<SocketAddr>,
    Option<meter::clock::OffsetEstimate>,
)> {
    let mut ctrl = netio::tcp::connect(
        remote,
        &netio::Marking::default(),
        true,
        None,
        Duration::from_secs(5),
    )
    .with_context(|| format!("cannot reach {remote}"))?;
    ctrl.set_read_timeout(Some(Duration::from_secs(10)))?;
    let local = ctrl.local_addr()?;
    let local = SocketAddr::new(wire::prefix::unmapped(local.ip()), local.port());
    let mut reader = MsgReader::new();
    let welcomed = crate::control::handshake(&mut ctrl, &mut reader, t.key.as_deref(), "far end")?;
    let clock = crate::control::estimate_offset(&mut ctrl, &mut reader, 8)?;
    Ok((local, welcomed.peer, clock))
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Way {
    Forward,
    Reverse,
}

/// One session of `flows` in one direction; a report that came with an error
/// ([`PartialReport`]) still counts.
fn session(
    t: &Target,
    remote: SocketAddr,
    way: Way,
    flows: Vec<FlowSpec>,
    stop: &Arc<AtomicBool>,
) -> Result<SendReport> {
    let mut config = SendConfig::new(remote, flows);
    config.key.clone_from(&t.key);
    let r = match way {
        Way::Forward => crate::send::session::run_session(&config, stop),
        Way::Reverse => crate::send::remote::reverse(&config, None, false, stop),
    };
    r.or_else(|e| e.downcast::<PartialReport>().map(|p| p.report))
}

/// Hops, marking, path MTU and capacity of one direction.
fn direction(
    t: &Target,
    remote: SocketAddr,
    fam: Family,
    way: Way,
    stop: &Arc<AtomicBool>,
) -> Direction {
    let mut ladder = Ladder::new(fam, route_mtu(remote).unwrap_or(1500));
    let first = ladder.first_round();
    let mut flows = vec![path::probe_flow(fam)];
    flows.extend(path::ladder_flows(fam, &first));
    let report = match session(t, remote, way, flows, stop) {
        Ok(r) => r,
        Err(e) => return Direction::not_measured(&format!("{e:#}")),
    };
    let (hops, marking) = match report.flows.first() {
        Some(probe) => path::probe_direction(probe),
        None => (Fact::not("no report"), Fact::not("no report")),
    };
    ladder.record_round(&first, report.flows.get(1..).unwrap_or_default());
    let second = ladder.refine(REFINE_SIZES);
    if !second.is_empty() {
        if let Ok(r) = session(t, remote, way, path::ladder_flows(fam, &second), stop) {
            ladder.record_round(&second, &r.flows);
        }
    }
    // Only our kernel's cache can be read: the forward direction's.
    let kernel = match way {
        Way::Forward => route_mtu(remote).ok(),
        Way::Reverse => None,
    };
    let capacity = match t.capacity {
        None => Fact::not("no capacity transfer was asked for"),
        Some(d) => {
            let how = format!("tcp {}s", d.as_secs_f64());
            match session(t, remote, way, vec![path::capacity_flow(d)], stop) {
                Ok(r) => r
                    .flows
                    .first()
                    .map_or_else(|| Fact::not("no report"), |f| path::capacity(f, &how)),
                Err(e) => Fact::not(format!("{e:#}")),
            }
        }
    };
    Direction {
        hops,
        pmtu: ladder.fact(kernel),
        marking,
        capacity,
    }
}

/// The kernel's path MTU towards `remote`: the route's MTU, lowered by what ICMP taught
/// it (a UDP socket connected to it; nothing is sent).
fn route_mtu(remote: SocketAddr) -> Result<u32> {
    let any: IpAddr = match remote {
        SocketAddr::V4(_) => Ipv4Addr::UNSPECIFIED.into(),
        SocketAddr::V6(_) => Ipv6Addr::UNSPECIFIED.into(),
    };
    let sock = netio::UdpSocket::bind(SocketAddr::new(any, 0), false)?;
    sock.connect(remote)?;
    Ok(netio::pmtu::path_mtu(&sock)?)
}

/// A STAMP reflector's family: hops and marking from one probe session (the flow label
/// is not sent: no STAMP TLV returns it).
fn stamp_family(remote: SocketAddr, stop: &Arc<AtomicBool>) -> FamilyPath {
    let fam = Family::of(&remote);
    let mut forward = Direction::stamp_unmeasured();
    let mut reverse = Direction::stamp_unmeasured();
    let mut clock = Fact::not("no STAMP reply arrived");
    let mut spec = path::probe_flow(fam);
    spec.marking.flow_label = None;
    let config = crate::stamp::sender::StampConfig {
        dest: remote,
        spec,
        mode: wire::stamp::Mode::Unauthenticated,
        key: None,
        ssid: 0x4437,
        cos: true,
        format: wire::stamp::TimestampFormat::Ntp,
        timeout: Duration::from_secs(2),
        spin: None,
        progress: false,
        announce_start: false,
        cdf: false,
    };
    let report = crate::stamp::sender::run(&config, stop)
        .or_else(|e| e.downcast::<PartialReport>().map(|p| p.report));
    match report {
        Ok(r) if !r.flows.is_empty() => {
            (forward.hops, forward.marking) = path::probe_direction(&r.flows[0]);
            reverse.hops = path::stamp_reverse_hops(&r.flows[0]);
            if let Some(c) = r.clock {
                clock = Fact::Measured(c);
            }
        }
        Ok(_) => {}
        Err(e) => {
            forward = Direction::not_measured(&format!("{e:#}"));
            reverse = forward.clone();
        }
    }
    FamilyPath {
        family: fam,
        local: None,
        remote,
        nat: Fact::not("not measurable with a STAMP reflector (it does not say whom it saw)"),
        forward,
        reverse,
        clock,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::recv::{Receiver, ReceiverConfig};
    use results::path::{MarkVerdict, NatVerdict, PmtuMethod};

    /// A receiver on loopback, both families, with a key.
    fn receiver(key: &str) -> Receiver {
        Receiver::start(
            ReceiverConfig {
                bind: "[::]:0".parse().unwrap(),
                key: Some(key.as_bytes().to_vec()),
                log: None,
                handshake_timeout: Duration::from_secs(10),
                busy_poll: Duration::ZERO,
                threads: 1,
                gro: true,
                skip_rx_copy: false,
                service: None,
            },
            Arc::new(AtomicBool::new(false)),
        )
        .unwrap()
    }

    #[test]
    fn facts_against_a_loopback_receiver_are_no_hops_intact_marking_no_nat_and_loopbacks_mtu() {
        let rx = receiver("0123456789abcdef");
        let port = rx.local_addr().port();
        let target = Target {
            host: "localhost".into(),
            far_end: FarEnd::Recv,
            addrs: vec![
                SocketAddr::from(([127, 0, 0, 1], port)),
                SocketAddr::from((Ipv6Addr::LOCALHOST, port)),
            ],
            key: Some(b"0123456789abcdef".to_vec()),
            capacity: Some(Duration::from_millis(300)),
        };
        let facts = measure(&target, &Arc::new(AtomicBool::new(false)));
        rx.shutdown().unwrap();
        assert_eq!(facts.families.len(), 2);
        for (f, mtu) in facts.families.iter().zip([65_535, 65_536]) {
            let name = f.family.name();
            let nat = f
                .nat
                .measured()
                .unwrap_or_else(|| panic!("{name}: {:?}", f.nat));
            assert_eq!(nat.verdict, NatVerdict::None, "{name}");
            assert_eq!(Some(nat.ours), f.local);
            let fwd = &f.forward;
            let hops = fwd
                .hops
                .measured()
                .unwrap_or_else(|| panic!("{name}: {:?}", fwd.hops));
            assert_eq!((hops.sent, hops.seen, hops.hops), (64, 64, 0), "{name}");
            let m = fwd.marking.measured().unwrap();
            assert_eq!(
                (m.dscp.verdict, m.ecn.verdict),
                (MarkVerdict::Intact, MarkVerdict::Intact)
            );
            assert_eq!(
                m.flow_label.as_ref().map(|l| l.verdict),
                (f.family == Family::Ipv6).then_some(MarkVerdict::Intact),
                "{name}"
            );
            let pmtu = fwd
                .pmtu
                .measured()
                .unwrap_or_else(|| panic!("{name}: {:?}", fwd.pmtu));
            assert_eq!(
                (
                    pmtu.bytes,
                    pmtu.method,
                    pmtu.smallest_lost,
                    pmtu.kernel_bytes
                ),
                (mtu, PmtuMethod::Dplpmtud, None, None),
                "{name}"
            );
            assert!(fwd
                .capacity
                .measured()
                .is_some_and(|c| c.bps > 0.0 && c.how == "tcp 0.3s"));
            assert_eq!(
                f.reverse.hops,
                Fact::not("the far end is dualperf recv: the forward direction only")
            );
            assert!(f.clock.measured().is_some_and(|c| c.same_clock));
        }
    }
}
