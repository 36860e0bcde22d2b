//! `send --reserve`: each UDP flow's bandwidth reserved with RSVP (RFC 2205) before and
//! while it runs, with an IntServ service (Controlled-Load, RFC 2211; Guaranteed,
//! RFC 2212).
//!
//! - flags → a validated [`Reserve`] ([`ReserveArgs::config`]): UDP flows with a rate
//!   only; on IPv6 the flow-label filter (FILTER_SPEC C-Type 3) gives every flow an
//!   explicit flow label (its `--flow-label`, else one picked here and leased as
//!   `--flow-label` would be), since the kernel's automatic labels cannot be read back;
//! - per flow a Tspec (RFC 2210): r = the flow's rate while it sends, in IP bytes per
//!   second; b = one packet (its largest IP datagram) or `--reserve-burst`; p = +inf;
//!   m and M = its smallest and largest IP datagram;
//! - once registered ([`start`]), an `rsvp::Sender` on an [`RsvpHost`] thread sends each
//!   flow's Path to the receiver (Router Alert on; the receiver answers with Resv because
//!   the flow's `Register` asked it to, `wire::control::ReserveRequest`);
//! - when the flows stop, [`Reserving::snapshot`] takes where each reservation stood;
//!   after the receiver's results (which carry what it saw, a refusal included: RFC 2205
//!   sends ResvErr to the receiver), [`finish`] tears the Paths down and gives each
//!   flow's [`Reservation`].

use std::collections::HashSet;
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::Ordering;
use std::sync::mpsc;

use anyhow::{Context, Result};
use results::send::{FilterKind, FlowOutcome, ReceivedFlow, Reservation, ReservationState};
use rsvp::{Event, Flow, SenderFlow, ServiceKind};
use traffic::FlowSpec;
use wire::control::{FlowGrant, Protocol, Refusal, ReserveRequest, ReserveService};
use wire::rsvp::ErrorSpec;
use wire::rsvp::{FilterSpec, Session, TokenBucket};
use wire::time::{Duration, Instant};

use super::flow::Conn;
use crate::rsvp_host::{self, Role, RsvpHost};
use crate::usage;

/// IP protocol number of UDP, the session's protocol.
const UDP: u8 = 17;

/// The RSVP flags of `send`.
#[derive(Debug, Clone, clap::Args)]
pub(crate) struct ReserveArgs {
    /// Reserve each UDP flow's bandwidth with RSVP (RFC 2205) on every RSVP router on
    /// the way: controlled-load (RFC 2211) or guaranteed (RFC 2212). The receiver
    /// (`dualperf recv` or `agent`, asked in the session) answers each flow's Path with a
    /// Resv; the report gives each flow's setup time (Path sent → Resv back), refreshes,
    /// and a refusal with the node and the reason. Tspec: the flow's rate while it sends
    /// in IP bytes/s, a bucket of one packet (see --reserve-burst), its smallest and
    /// largest IP datagram. Needs CAP_NET_RAW (a raw socket of IP protocol 46) here and
    /// at the receiver. On IPv6 flows are told apart by flow label (see
    /// --reserve-filter): each flow gets an explicit one, its --flow-label or else one
    /// picked and leased here. Example: `dualperf send 2001:2:0:4::2 --stream webaudio
    /// --reserve controlled-load`.
    #[arg(long, value_enum, value_name = "SERVICE",
          conflicts_with_all = ["reverse", "bidir", "from", "stamp"])]
    reserve: Option<ServiceArg>,
    /// The RSVP refresh period R: Paths are refreshed every R (each interval drawn from
    /// 0.5R to 1.5R), and state not refreshed for (K + 0.5) · 1.5 · R, K = 3, times out.
    #[arg(long, default_value = "30s", value_parser = crate::args::duration,
          value_name = "DURATION", requires = "reserve")]
    reserve_refresh: Duration,
    /// The Tspec's bucket depth b in bytes (default: one packet, the flow's largest IP
    /// datagram): raise it for flows that send bursts, such as video frames.
    #[arg(long, value_parser = crate::args::byte_count, value_name = "BYTES",
          requires = "reserve")]
    reserve_burst: Option<u64>,
    /// How routers tell the flows apart (FILTER_SPEC): flow-label (IPv6 only, the
    /// default there: source address and flow label) or 5-tuple (source address and
    /// port; the only one for IPv4).
    #[arg(long, value_enum, value_name = "FILTER", requires = "reserve")]
    reserve_filter: Option<FilterArg>,
    /// Before the flows start, wait until every flow's Resv has come back (each hop has
    /// installed its reservation), at most this long; 0 (the default) starts them at once,
    /// their first packets maybe ahead of the reservation.
    #[arg(long, default_value = "0s", value_parser = crate::args::duration,
          value_name = "DURATION", requires = "reserve")]
    reserve_wait: Duration,
}

/// `--reserve`'s services.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
enum ServiceArg {
    ControlledLoad,
    Guaranteed,
}

/// `--reserve-filter`'s filters.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
enum FilterArg {
    FlowLabel,
    #[value(name = "5-tuple")]
    FiveTuple,
}

/// A validated `--reserve`.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Reserve {
    pub(crate) service: ReserveService,
    pub(crate) refresh: Duration,
    pub(crate) burst: Option<u64>,
    pub(crate) filter: FilterKind,
    /// Wait this long at most for every flow's Resv before the flows start.
    pub(crate) wait: Duration,
}

impl Reserve {
    /// What the flow's `Register` asks of the receiver.
    pub(crate) fn request(&self) -> ReserveRequest {
        ReserveRequest {
            service: self.service,
        }
    }
}

impl ReserveArgs {
    /// Whether `--reserve` was given.
    pub(crate) fn given(&self) -> bool {
        self.reserve.is_some()
    }

    /// The validated `--reserve` for `flows` to `dest`, or `None` without it. With the
    /// flow-label filter every flow gets its explicit flow label here.
    pub(crate) fn config(
        &self,
        dest: SocketAddr,
        flows: &mut [FlowSpec],
    ) -> Result<Option<Reserve>> {
        let Some(service) = self.reserve else {
            return Ok(None);
        };
        let service = match service {
            ServiceArg::ControlledLoad => ReserveService::ControlledLoad,
            ServiceArg::Guaranteed => ReserveService::Guaranteed,
        };
        let v6 = dest.ip().to_canonical().is_ipv6();
        let filter = match (self.reserve_filter, v6) {
            (Some(FilterArg::FlowLabel), false) => usage!(
                "--reserve-filter flow-label is IPv6's; {dest} is IPv4, whose flows are reserved by 5-tuple"
            ),
            (Some(FilterArg::FiveTuple), _) | (None, false) => FilterKind::FiveTuple,
            (Some(FilterArg::FlowLabel) | None, true) => FilterKind::FlowLabel,
        };
        let config = rsvp::Config {
            refresh: self.reserve_refresh,
            ..rsvp::Config::default()
        };
        if let Err(e) = config.validate() {
            usage!("--reserve-refresh: {e}");
        }
        for (i, f) in flows.iter().enumerate() {
            if f.protocol == Protocol::Tcp {
                usage!("--reserve reserves UDP flows only: flow {i} ({}) is TCP, whose rate is its congestion control's", f.label);
            }
            if tspec(f, v6, None).is_none() {
                usage!("--reserve needs each flow's rate: flow {i} ({}) has no mean rate (unpaced bulk, or gaps without a mean)", f.label);
            }
        }
        if filter == FilterKind::FlowLabel {
            label_flows(flows)?;
        }
        Ok(Some(Reserve {
            service,
            refresh: self.reserve_refresh,
            burst: self.reserve_burst,
            filter,
            wait: self.reserve_wait,
        }))
    }
}

/// Give every flow an explicit, distinct flow label: its own, or one from a random base
/// in 1..0x7ffff (labels with bit 19 set may be reserved for stateless use).
fn label_flows(flows: &mut [FlowSpec]) -> Result<()> {
    let mut used = HashSet::new();
    for (i, f) in flows.iter().enumerate() {
        match f.marking.flow_label {
            Some(0) => usage!("--reserve with the flow-label filter needs a label: flow {i} has --flow-label 0 (add --reserve-filter 5-tuple)"),
            Some(l) if !used.insert(l) => usage!("--reserve with the flow-label filter tells flows apart by label, and flow {i} shares {l:#x} with another: give each its own --flow-label, or add --reserve-filter 5-tuple"),
            _ => {}
        }
    }
    let base = u32::from_ne_bytes(crate::control::random_bytes()) % 0x7_0000 + 1;
    let mut next = base;
    for f in flows.iter_mut().filter(|f| f.marking.flow_label.is_none()) {
        while used.contains(&next) {
            next = next % 0x7_ffff + 1;
        }
        f.marking.flow_label = Some(next);
        used.insert(next);
    }
    Ok(())
}

/// The Tspec (RFC 2210 token bucket) of `spec` over IPv6 (`v6`) or IPv4; `None`
/// without a rate.
fn tspec(spec: &FlowSpec, v6: bool, burst: Option<u64>) -> Option<TokenBucket> {
    if spec.unpaced {
        return None;
    }
    let headers = if v6 { 48.0 } else { 28.0 };
    // Packets (or video frames) per second while the flow sends: talk spurts and ON
    // periods send at the full rate, which the reservation must cover.
    let pps = match &spec.idt_ms {
        None => spec.rate.pps(spec.size_bytes),
        Some(d) => 1000.0 / d.mean().filter(|m| *m > 0.0)?,
    };
    let largest = traffic::sender::max_payload(spec) as f64 + headers;
    let (rate, smallest) = match (&spec.video, &spec.size_dist) {
        (Some(v), _) => {
            let per_frame = v.mean_packets_per_frame()?;
            let bytes = v.frame_bytes.mean()? + per_frame * (f64::from(v.header_bytes) + headers);
            (pps * bytes, wire::probe::HEADER_LEN as f64 + headers)
        }
        (None, Some(d)) => (
            pps * (d.mean()? + headers),
            wire::probe::HEADER_LEN as f64 + headers,
        ),
        (None, None) => {
            let size = f64::from(spec.size_bytes) + headers;
            (pps * size, size)
        }
    };
    let largest = largest.min(65_535.0);
    (rate.is_finite() && rate > 0.0).then(|| TokenBucket {
        rate_bytes_per_s: rate as f32,
        depth_bytes: burst.map_or(largest, |b| b as f64) as f32,
        peak_bytes_per_s: f32::INFINITY,
        min_policed_bytes: smallest as u32,
        max_packet_bytes: largest as u32,
    })
}

/// The sender role on the RSVP thread: the engine and the flows to tear at the end.
struct SenderRole {
    engine: rsvp::Sender,
    flows: Vec<Flow>,
}

impl Role for SenderRole {
    fn handle_message(&mut self, now: Instant, ip_src: IpAddr, msg: wire::rsvp::Message) {
        self.engine.handle_message(now, ip_src, msg);
    }
    fn handle_timeout(&mut self, now: Instant) {
        self.engine.handle_timeout(now);
    }
    fn poll_timeout(&self) -> Option<Instant> {
        self.engine.poll_timeout()
    }
    fn poll_transmit(&mut self) -> Option<rsvp::Transmit> {
        self.engine.poll_transmit()
    }
    fn poll_event(&mut self) -> Option<Event> {
        self.engine.poll_event()
    }
    fn shutdown(&mut self, _: Instant) {
        for f in self.flows.drain(..) {
            let _ = self.engine.tear(&f);
        }
    }
}

/// One reserved flow: its RSVP identity and Tspec.
struct Planned {
    flow: Flow,
    tspec: TokenBucket,
}

/// The reservations of a running session.
pub(crate) struct Reserving {
    config: Reserve,
    host: RsvpHost<SenderRole>,
    events: mpsc::Receiver<Event>,
    /// Per flow, in flow order (`None`: not reserved).
    planned: Vec<Option<Planned>>,
    /// Where each stood when the flows stopped, and whether it was released before.
    snapshot: Vec<Option<AtStop>>,
}

/// Start signalling: a Path for every UDP flow of the registered session, from its
/// socket's address and port (or flow label) to the receiver at `config.dest`.
pub(crate) fn start(config: &super::SendConfig, conns: &[Conn]) -> Result<Option<Reserving>> {
    let Some(reserve) = config.reserve.clone() else {
        return Ok(None);
    };
    let dest = config.dest;
    let session = Session {
        dst: dest.ip().to_canonical(),
        protocol: UDP,
        flags: 0,
        dst_port: dest.port(),
    };
    let v6 = session.dst.is_ipv6();
    let sockets = rsvp_host::open_sockets(!v6, v6).context(
        "--reserve: cannot open a raw RSVP socket (IP protocol 46): it needs root or CAP_NET_RAW",
    )?;
    let mut planned = Vec::new();
    for (spec, conn) in config.flows.iter().zip(conns) {
        let Conn::Udp(sock) = conn else {
            planned.push(None);
            continue;
        };
        let local = sock.local_addr()?;
        let template = match (local.ip().to_canonical(), spec.marking.flow_label) {
            (IpAddr::V6(src), Some(flow_label)) if reserve.filter == FilterKind::FlowLabel => {
                FilterSpec::FlowLabel { src, flow_label }
            }
            (IpAddr::V6(src), _) => FilterSpec::V6 {
                src,
                src_port: local.port(),
            },
            (IpAddr::V4(src), _) => FilterSpec::V4 {
                src,
                src_port: local.port(),
            },
        };
        let tspec = tspec(spec, v6, reserve.burst).context("--reserve: a flow without a rate")?;
        planned.push(Some(Planned {
            flow: Flow {
                session,
                sender: template,
            },
            tspec,
        }));
    }
    let engine = rsvp::Sender::new(rsvp::Config {
        refresh: reserve.refresh,
        seed: u64::from_ne_bytes(crate::control::random_bytes()),
        ..rsvp::Config::default()
    });
    let (tx, events) = mpsc::channel();
    let role = SenderRole {
        engine,
        flows: Vec::new(),
    };
    let host = RsvpHost::start(role, sockets, tx, None)
        .context("--reserve: cannot start the RSVP thread")?;
    let service = match reserve.service {
        ReserveService::ControlledLoad => ServiceKind::ControlledLoad,
        ReserveService::Guaranteed => ServiceKind::Guaranteed,
    };
    let added: Vec<(Flow, TokenBucket)> = planned
        .iter()
        .flatten()
        .map(|p| (p.flow, p.tspec))
        .collect();
    host.run(move |role, now| {
        for (flow, tspec) in added {
            if role
                .engine
                .add_flow(now, flow.session, flow.sender, tspec, service)
                .is_ok()
            {
                role.flows.push(flow);
            }
        }
    });
    let reserving = Reserving {
        config: reserve,
        host,
        events,
        planned,
        snapshot: Vec::new(),
    };
    reserving.wait_reserved();
    Ok(Some(reserving))
}

impl Reserving {
    /// `--reserve-wait`: until every flow is reserved (or its Path refused), at most
    /// that long. The events it reads are in the engine's flows too.
    fn wait_reserved(&self) {
        let until = std::time::Instant::now() + std::time::Duration::from(self.config.wait);
        let mut waiting: HashSet<Flow> = self.planned.iter().flatten().map(|p| p.flow).collect();
        while !waiting.is_empty() {
            let left = until.saturating_duration_since(std::time::Instant::now());
            match self.events.recv_timeout(left) {
                Ok(Event::Reserved { flow, .. } | Event::PathError { flow, .. }) => {
                    waiting.remove(&flow);
                }
                Ok(_) => {}
                Err(_) => return,
            }
        }
    }

    /// Where each reservation stands now (the flows have stopped): taken before the
    /// session's end, when the receiver tears its reservations down.
    pub(crate) fn snapshot(mut self) -> Self {
        let flows: Vec<Option<Flow>> = self
            .planned
            .iter()
            .map(|p| p.as_ref().map(|p| p.flow))
            .collect();
        let states = self
            .host
            .ask(move |role, _| {
                flows
                    .iter()
                    .map(|f| f.and_then(|f| role.engine.flow(&f).map(AtStop::of)))
                    .collect::<Vec<_>>()
            })
            .unwrap_or_default();
        // What the events said is in the engine's flows too.
        while self.events.try_recv().is_ok() {}
        self.snapshot = states;
        self
    }
}

/// Tear the Paths down and give each flow's reservation, in flow order, with what the
/// receiver reported of it (taken out of `remote`, by the flows' ids in `grants`).
pub(crate) fn finish(
    reserving: Option<Reserving>,
    grants: &[FlowGrant],
    remote: &mut std::collections::HashMap<u16, ReceivedFlow>,
) -> Vec<Option<Reservation>> {
    let Some(r) = reserving else {
        return Vec::new();
    };
    let Reserving {
        config,
        host,
        planned,
        snapshot,
        ..
    } = r;
    let unsent = host.counters().send_errors.load(Ordering::Relaxed);
    drop(host.stop());
    planned
        .iter()
        .zip(grants)
        .enumerate()
        .map(|(i, (p, g))| {
            let p = p.as_ref()?;
            let seen = remote.get_mut(&g.id).and_then(|r| r.reservation.take());
            let snap = snapshot.get(i).copied().flatten();
            let mut r = reservation(&config, p, snap, seen);
            if r.error.is_none() && unsent > 0 && r.state != ReservationState::Reserved {
                r.error = Some(format!("{unsent} RSVP messages could not be sent"));
            }
            Some(r)
        })
        .collect()
}

/// Where a flow's reservation stood at the sender when the flows stopped.
#[derive(Clone, Copy, Debug, Default)]
struct AtStop {
    reserved: bool,
    setup: Option<Duration>,
    path_refreshes: u64,
    resv_refreshes: u64,
    path_error: Option<ErrorSpec>,
}

impl AtStop {
    fn of(f: &SenderFlow) -> Self {
        Self {
            reserved: f.reserved,
            setup: f.setup,
            path_refreshes: f.path_refreshes,
            resv_refreshes: f.resv_refreshes,
            path_error: f.error,
        }
    }
}

/// One flow's reservation from the sender's snapshot and the receiver's view.
fn reservation(
    config: &Reserve,
    p: &Planned,
    snap: Option<AtStop>,
    seen: Option<wire::control::ReservationSeen>,
) -> Reservation {
    let AtStop {
        reserved,
        setup,
        path_refreshes: refreshes,
        resv_refreshes,
        path_error,
    } = snap.unwrap_or_default();
    let refused = seen
        .as_ref()
        .and_then(|s| s.refused)
        .or(path_error.map(|e| Refusal {
            code: e.code,
            value: e.value,
            node: e.node,
        }));
    let state = match (reserved, refused, setup) {
        (true, _, _) => ReservationState::Reserved,
        (false, Some(_), _) => ReservationState::Refused,
        (false, None, Some(_)) => ReservationState::Torn,
        (false, None, None) => ReservationState::Pending,
    };
    Reservation {
        service: config.service,
        style: "FF".into(),
        filter: match p.flow.sender {
            FilterSpec::FlowLabel { .. } => FilterKind::FlowLabel,
            _ => FilterKind::FiveTuple,
        },
        rate_bytes_per_s: f64::from(p.tspec.rate_bytes_per_s),
        burst_bytes: p.tspec.depth_bytes as u64,
        setup_ns: setup.map(Duration::as_nanos),
        refreshes_sent: refreshes,
        resv_received: u64::from(setup.is_some()) + resv_refreshes,
        state,
        refused,
        confirmed: seen.as_ref().map(|s| s.confirmed),
        resv_sent_by_receiver: seen.as_ref().map(|s| s.resv_sent),
        error: seen.and_then(|s| s.error),
    }
}

/// Each flow's reservation into its outcome.
pub(crate) fn merge(flows: &mut [FlowOutcome], reservations: Vec<Option<Reservation>>) {
    for (f, r) in flows.iter_mut().zip(reservations) {
        f.reservation = r;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;
    use traffic::Rate;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        reserve: ReserveArgs,
        #[arg(long)]
        reverse: bool,
        #[arg(long)]
        bidir: bool,
        #[arg(long)]
        from: Option<String>,
        #[arg(long)]
        stamp: bool,
    }

    fn args(line: &str) -> ReserveArgs {
        Cli::try_parse_from(line.split(' ')).unwrap().reserve
    }

    fn webaudio() -> FlowSpec {
        FlowSpec {
            rate: Rate::EveryNs(50_000_000),
            size_bytes: 1250,
            ..FlowSpec::default()
        }
    }

    #[test]
    fn a_webaudio_flows_tspec_counts_its_ip_datagrams() {
        let t = tspec(&webaudio(), false, None).unwrap();
        // 20 packets/s of 1250 + 8 + 20 bytes.
        assert_eq!(t.rate_bytes_per_s, 25_560.0);
        assert_eq!(
            (t.depth_bytes, t.min_policed_bytes, t.max_packet_bytes),
            (1278.0, 1278, 1278)
        );
        assert!(t.peak_bytes_per_s.is_infinite());
        let t6 = tspec(&webaudio(), true, Some(4000)).unwrap();
        assert_eq!(t6.rate_bytes_per_s, 25_960.0);
        assert_eq!((t6.depth_bytes, t6.max_packet_bytes), (4000.0, 1298));
        let bulk = FlowSpec {
            unpaced: true,
            ..webaudio()
        };
        assert_eq!(tspec(&bulk, false, None), None);
    }

    #[test]
    fn ipv6_flows_get_distinct_labels_and_ipv4_only_five_tuples() {
        let v6: SocketAddr = "[::1]:4646".parse().unwrap();
        let v4: SocketAddr = "127.0.0.1:4646".parse().unwrap();
        let mut flows = vec![webaudio(), webaudio(), webaudio()];
        flows[1].marking.flow_label = Some(0x12345);
        let r = args("x --reserve controlled-load")
            .config(v6, &mut flows)
            .unwrap()
            .unwrap();
        assert_eq!(r.filter, FilterKind::FlowLabel);
        assert_eq!(r.refresh, Duration::from_secs(30));
        let labels: HashSet<u32> = flows
            .iter()
            .map(|f| f.marking.flow_label.unwrap())
            .collect();
        assert_eq!(labels.len(), 3);
        assert!(labels.contains(&0x12345));
        assert!(labels.iter().all(|&l| (1..0x80000).contains(&l)));
        // Five-tuple: labels left alone; IPv4 has no other.
        let mut flows = vec![webaudio()];
        let r = args("x --reserve guaranteed --reserve-filter 5-tuple --reserve-refresh 200ms")
            .config(v6, &mut flows)
            .unwrap()
            .unwrap();
        assert_eq!(
            (r.filter, r.service),
            (FilterKind::FiveTuple, ReserveService::Guaranteed)
        );
        assert_eq!(flows[0].marking.flow_label, None);
        let r = args("x --reserve guaranteed")
            .config(v4, &mut flows)
            .unwrap()
            .unwrap();
        assert_eq!(r.filter, FilterKind::FiveTuple);
        let e = args("x --reserve guaranteed --reserve-filter flow-label")
            .config(v4, &mut flows)
            .unwrap_err();
        assert!(e.to_string().contains("is IPv6's"), "{e}");
        assert_eq!(args("x").config(v4, &mut flows).unwrap(), None);
    }

    #[test]
    fn the_state_comes_from_the_sender_and_a_refusal_from_the_receiver() {
        let config = Reserve {
            service: ReserveService::ControlledLoad,
            refresh: Duration::from_secs(30),
            burst: None,
            filter: FilterKind::FiveTuple,
            wait: Duration::ZERO,
        };
        let p = Planned {
            flow: Flow {
                session: Session {
                    dst: "198.18.4.2".parse().unwrap(),
                    protocol: UDP,
                    flags: 0,
                    dst_port: 4646,
                },
                sender: FilterSpec::V4 {
                    src: "198.18.1.2".parse().unwrap(),
                    src_port: 5000,
                },
            },
            tspec: tspec(&webaudio(), false, None).unwrap(),
        };
        let reserved = AtStop {
            reserved: true,
            setup: Some(Duration::from_micros(1800)),
            path_refreshes: 4,
            resv_refreshes: 2,
            path_error: None,
        };
        let refusal = Refusal {
            code: 1,
            value: 2,
            node: "198.18.3.1".parse().unwrap(),
        };
        let seen = |refused: Option<Refusal>| wire::control::ReservationSeen {
            resv_sent: 3,
            confirmed: refused.is_none(),
            refused,
            error: None,
        };
        let r = reservation(&config, &p, Some(reserved), Some(seen(None)));
        assert_eq!(r.state, ReservationState::Reserved);
        assert_eq!(
            (r.setup_ns, r.refreshes_sent, r.resv_received),
            (Some(1_800_000), 4, 3)
        );
        assert_eq!(
            (r.confirmed, r.resv_sent_by_receiver),
            (Some(true), Some(3))
        );
        assert_eq!((r.rate_bytes_per_s, r.burst_bytes), (25_560.0, 1278));
        // Refused on the way: no Resv reached the sender, the receiver heard the ResvErr.
        let never = AtStop::default();
        let r = reservation(&config, &p, Some(never), Some(seen(Some(refusal))));
        assert_eq!(
            (r.state, r.refused, r.setup_ns),
            (ReservationState::Refused, Some(refusal), None)
        );
        // Reserved once, then gone; or nothing from anyone.
        let gone = AtStop {
            reserved: false,
            ..reserved
        };
        assert_eq!(
            reservation(&config, &p, Some(gone), None).state,
            ReservationState::Torn
        );
        let r = reservation(&config, &p, None, None);
        assert_eq!(
            (r.state, r.confirmed, r.resv_received),
            (ReservationState::Pending, None, 0)
        );
    }

    #[test]
    fn flows_it_cannot_reserve_are_refused_by_name() {
        let v6: SocketAddr = "[::1]:4646".parse().unwrap();
        let reserve = args("x --reserve controlled-load");
        let mut tcp = vec![FlowSpec {
            protocol: Protocol::Tcp,
            label: "flow 0".into(),
            ..webaudio()
        }];
        let e = reserve.config(v6, &mut tcp).unwrap_err().to_string();
        assert_eq!(e, "--reserve reserves UDP flows only: flow 0 (flow 0) is TCP, whose rate is its congestion control's");
        let mut same = vec![webaudio(), webaudio()];
        same[0].marking.flow_label = Some(7);
        same[1].marking.flow_label = Some(7);
        let e = reserve.config(v6, &mut same).unwrap_err().to_string();
        assert!(e.contains("flow 1 shares 0x7"), "{e}");
        let e = args("x --reserve controlled-load --reserve-refresh 0s")
            .config(v6, &mut [webaudio()])
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("--reserve-refresh: refresh period"), "{e}");
        assert!(Cli::try_parse_from(["x", "--reserve", "best-effort"]).is_err());
        assert!(Cli::try_parse_from(["x", "--reserve-burst", "4k"]).is_err());
        assert!(Cli::try_parse_from(["x", "--reserve", "guaranteed", "--reverse"]).is_err());
    }
}
