//! The path's own facts per family (`DIR/path.json`, schema `path`): which addresses were
//! used, whether a NAT rewrote ours, how many hops each direction crossed, its path MTU,
//! whether DSCP, ECN and the flow label arrived as sent, its capacity, and the clock
//! offset that bounds one-way delays. These are what usually explains an IPv4/IPv6
//! difference, so `compare HOST` measures them before its battery and `report` prints
//! them under the verdicts.
//!
//! Each fact cites its definition. The reading of a probe's report into a fact, and the
//! DPLPMTUD ladder (RFC 8899 §5.3), are pure functions here with exact tests; the
//! sessions and sockets that measure them are `dualperf`'s (`cli/src/facts.rs`).

use std::collections::BTreeMap;
use std::net::SocketAddr;

use meter::clock::OffsetEstimate;
use meter::Marking;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::send::FlowOutcome;

/// The version of [`PathFacts`]' layout.
pub const PATH_FORMAT_VERSION: u32 = 1;

/// The path's facts, both families (`DIR/path.json`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct PathFacts {
    /// [`PATH_FORMAT_VERSION`].
    pub format_version: u32,
    /// The far end as the user gave it (a name or an address).
    pub host: String,
    /// What answers at the far end; it decides what can be measured.
    pub far_end: FarEnd,
    /// How the facts were measured, one sentence each (probe flows, ladder sizes, what
    /// could not be measured and why).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    /// Per family: IPv4 first, then IPv6.
    pub families: Vec<FamilyPath>,
}

/// What answers at the far end.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum FarEnd {
    /// `dualperf agent`: both directions.
    Agent,
    /// `dualperf recv`: the forward direction only.
    Recv,
    /// A STAMP Session-Reflector (RFC 8762): round trips, and each direction from the
    /// reflector's timestamps and TLVs.
    Stamp,
    /// No far end: the facts come from the lab's topology.
    Topology,
}

/// A fact, or why it was not measured.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Fact<T> {
    /// Measured (or read from the topology: each fact says how).
    Measured(T),
    /// Not measured, and why ("not measurable with a STAMP reflector").
    NotMeasured(String),
}

impl<T> Fact<T> {
    /// The fact, if measured.
    pub fn measured(&self) -> Option<&T> {
        match self {
            Fact::Measured(t) => Some(t),
            Fact::NotMeasured(_) => None,
        }
    }

    /// "Not measured" with this reason.
    pub fn not(reason: impl Into<String>) -> Self {
        Fact::NotMeasured(reason.into())
    }
}

/// IP version.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum Family {
    /// IPv4 (RFC 791).
    Ipv4,
    /// IPv6 (RFC 8200).
    Ipv6,
}

impl Family {
    /// The family of an address (a v4-mapped IPv6 address is IPv6 here: callers unmap).
    pub fn of(addr: &SocketAddr) -> Self {
        if addr.is_ipv4() {
            Family::Ipv4
        } else {
            Family::Ipv6
        }
    }

    /// "IPv4" or "IPv6".
    pub fn name(self) -> &'static str {
        match self {
            Family::Ipv4 => "IPv4",
            Family::Ipv6 => "IPv6",
        }
    }

    /// IP and UDP header bytes before a UDP payload: 20 + 8 (RFC 791 §3.1, RFC 768)
    /// or 40 + 8 (RFC 8200 §3).
    pub fn udp_overhead(self) -> u32 {
        match self {
            Family::Ipv4 => 28,
            Family::Ipv6 => 48,
        }
    }

    /// The largest IP packet dualperf sends: IPv4's largest (65,535, RFC 791 §3.1), and
    /// on IPv6 its largest UDP payload (65,507) with the headers.
    pub fn max_packet(self) -> u32 {
        match self {
            Family::Ipv4 => 65_535,
            Family::Ipv6 => 65_507 + 48,
        }
    }

    /// The least MTU a link of this family may have: 68 (RFC 791 §3.2) or 1280 (RFC
    /// 8200 §5).
    pub fn min_mtu(self) -> u32 {
        match self {
            Family::Ipv4 => 68,
            Family::Ipv6 => 1280,
        }
    }
}

/// One family's facts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct FamilyPath {
    /// The family.
    pub family: Family,
    /// Our address and port as our control socket had it (`getsockname`).
    pub local: Option<SocketAddr>,
    /// The far end's address and port we used.
    pub remote: SocketAddr,
    /// Whether our address was rewritten on the way (RFC 2663 §4.1 NAT, RFC 6296 NPTv6).
    pub nat: Fact<Nat>,
    /// From us to the far end.
    pub forward: Direction,
    /// From the far end to us.
    pub reverse: Direction,
    /// The far end's clock minus ours (RFC 5905 §8 on-wire method, least-delay sample):
    /// every one-way delay is the true delay plus `offset_ns`, within `± bound_ns`.
    pub clock: Fact<OffsetEstimate>,
}

/// One direction's facts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Direction {
    /// Routers crossed (RFC 791 §3.2 Time to Live, RFC 8200 §3 Hop Limit: each router
    /// decrements it by one).
    pub hops: Fact<Hops>,
    /// The largest IP packet that crosses the path unfragmented.
    pub pmtu: Fact<Pmtu>,
    /// DSCP, ECN and flow label as received against as sent.
    pub marking: Fact<MarkingFact>,
    /// The path's capacity in this direction.
    pub capacity: Fact<Capacity>,
}

impl Direction {
    /// A direction's facts before a STAMP session: what a reflector cannot give, and why.
    pub fn stamp_unmeasured() -> Self {
        Self {
            hops: Fact::not("no STAMP reply arrived"),
            pmtu: Fact::not("not measured with a STAMP reflector (no padded DF probes yet)"),
            marking: Fact::not(
                "not measurable with a STAMP reflector: its replies carry the marking it chooses",
            ),
            capacity: Fact::not(
                "not measurable with a STAMP reflector: it reflects test packets, it takes no \
                 transfer",
            ),
        }
    }

    /// Every fact "not measured" for one reason.
    pub fn not_measured(reason: &str) -> Self {
        Self {
            hops: Fact::not(reason),
            pmtu: Fact::not(reason),
            marking: Fact::not(reason),
            capacity: Fact::not(reason),
        }
    }
}

/// NAT on the path: the address and port we sent from against those the far end saw
/// (`Welcome.peer`, its `getpeername` of our control connection).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Nat {
    /// Ours (`getsockname` of the control connection).
    pub ours: SocketAddr,
    /// As the far end saw it.
    pub seen: SocketAddr,
    /// What was rewritten.
    pub verdict: NatVerdict,
}

/// What a NAT rewrote (RFC 2663 §4.1: basic NAT rewrites addresses, NAPT addresses and
/// ports; RFC 4787 for their behaviour with UDP).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum NatVerdict {
    /// The far end saw our address and port: no NAT.
    None,
    /// Only the port was rewritten (a port-translating firewall or NAPT to the same
    /// address).
    Port,
    /// The address was rewritten (the port kept).
    Address,
    /// Address and port were rewritten (NAPT, RFC 2663 §4.1.2; NAT44 masquerade).
    AddressAndPort,
}

/// The hop count of one direction: the TTL or hop limit sent minus the one seen.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Hops {
    /// The TTL / hop limit the packets left with.
    pub sent: u8,
    /// `sent` is inferred, not known: the least of 32, 64, 128, 255 not below `seen`
    /// (the common initial values, as traceroute's and p0f's guesses).
    pub sent_inferred: bool,
    /// The TTL / hop limit most packets arrived with.
    pub seen: u8,
    /// `sent − seen`: the routers crossed.
    pub hops: u8,
}

/// How a path MTU was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum PmtuMethod {
    /// Datagram PLPMTUD (RFC 8899 §4, RFC 4821): probes with DF of rising size, the
    /// largest that the far end received.
    Dplpmtud,
    /// The kernel's classic PMTUD cache (RFC 1191 for IPv4, RFC 8201 for IPv6), read
    /// with `getsockopt(IP_MTU / IPV6_MTU)`: learnt from ICMP, so it cannot see a black
    /// hole.
    Kernel,
    /// The least MTU of the lab's links on the path.
    Topology,
    /// Round trip with a STAMP reflector's padded replies (RFC 8762 §4.2.1, RFC 8972
    /// §4.1): the least of both directions.
    RoundTrip,
}

/// The path MTU of one direction, in bytes of IP packet (headers included).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Pmtu {
    /// The largest IP packet that crossed (DPLPMTUD's PLPMTU, RFC 8899 §2).
    pub bytes: u32,
    /// How it was found.
    pub method: PmtuMethod,
    /// The least IP size probed that did not cross (DPLPMTUD): the MTU is in
    /// `bytes..smallest_lost`. `None` when every size crossed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub smallest_lost: Option<u32>,
    /// The kernel's cached path MTU (RFC 1191 / RFC 8201), when it differs from `bytes`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kernel_bytes: Option<u32>,
    /// Why the two differ: "ICMP filtered or a black hole" when the kernel would send a
    /// size that was lost.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// What became of one header field on the way.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum MarkVerdict {
    /// Every packet arrived with the value sent.
    Intact,
    /// Some arrived with another non-zero value (RFC 2474 §3: a DS domain may re-mark).
    Remarked,
    /// Every changed packet arrived with 0 (RFC 8100 §4 bleaching; not-ECT for ECN).
    Bleached,
    /// ECN only: some arrived Congestion Experienced, the rest as sent (RFC 3168 §5).
    Ce,
    /// The receiver could not read the field.
    Unknown,
}

/// One marked field, sent against seen.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct FieldFact<V: Ord> {
    /// The value the packets were sent with.
    pub sent: V,
    /// Value received → packets.
    pub seen: BTreeMap<V, u64>,
    /// What became of it.
    pub verdict: MarkVerdict,
}

/// DSCP (RFC 2474 §3), ECN (RFC 3168 §5) and the IPv6 flow label (RFC 6437 §3) as
/// received against as sent.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct MarkingFact {
    /// The DSCP.
    pub dscp: FieldFact<u8>,
    /// The ECN codepoint (0 not-ECT, 1 ECT(1), 2 ECT(0), 3 CE).
    pub ecn: FieldFact<u8>,
    /// The flow label (IPv6 only; RFC 6437 §3 lets no router change it, but middleboxes
    /// do).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flow_label: Option<FieldFact<u32>>,
}

/// A direction's capacity.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Capacity {
    /// Bits per second (IP layer for the topology, TCP goodput for a transfer).
    pub bps: f64,
    /// How: "topology" (the least link rate on the lab's path) or "tcp 1s" (a bulk TCP
    /// transfer of that length, the receiver's goodput, as iperf3).
    pub how: String,
}

/// The initial TTL / hop limit a packet seen with `seen` most likely left with: the least
/// of 32, 64, 128 and 255 not below it.
pub fn inferred_initial(seen: u8) -> u8 {
    [32u8, 64, 128]
        .into_iter()
        .find(|&t| t >= seen)
        .unwrap_or(255)
}

/// The most common known value of a histogram (the smallest on a tie).
fn mode<V: Copy + Ord>(seen: &BTreeMap<V, u64>) -> Option<V> {
    let best = seen.values().copied().max()?;
    seen.iter().find(|(_, &n)| n == best).map(|(&v, _)| v)
}

/// Hops from the TTL / hop limit sent (`None`: infer it) and the received histogram.
pub fn hops(sent: Option<u8>, seen: &Marking) -> Fact<Hops> {
    let Some(seen_ttl) = mode(&seen.hop_limit_seen) else {
        return Fact::not("the receiver read no TTL / hop limit");
    };
    let (sent, sent_inferred) = match sent {
        Some(s) => (s, false),
        None => (inferred_initial(seen_ttl), true),
    };
    match sent.checked_sub(seen_ttl) {
        Some(hops) => Fact::Measured(Hops {
            sent,
            sent_inferred,
            seen: seen_ttl,
            hops,
        }),
        None => Fact::not(format!(
            "arrived with TTL {seen_ttl}, above the {sent} sent: rewritten on the way"
        )),
    }
}

/// The verdict on one field: `ce` is the ECN CE codepoint's value (`None` for other
/// fields).
fn verdict<V: Copy + Ord + Default>(
    sent: V,
    seen: &BTreeMap<V, u64>,
    ce: Option<V>,
) -> MarkVerdict {
    let changed: Vec<V> = seen.keys().copied().filter(|&v| v != sent).collect();
    if seen.is_empty() {
        MarkVerdict::Unknown
    } else if changed.is_empty() {
        MarkVerdict::Intact
    } else if ce.is_some() && changed.iter().all(|&v| Some(v) == ce) {
        MarkVerdict::Ce
    } else if changed.iter().all(|&v| v == V::default()) {
        MarkVerdict::Bleached
    } else {
        MarkVerdict::Remarked
    }
}

/// The marking fact of packets sent with `tos` (the DS byte) and `flow_label` (IPv6),
/// from the receiver's histograms.
pub fn marking(tos: u8, flow_label: Option<u32>, seen: &Marking) -> Fact<MarkingFact> {
    if seen.tos_seen.is_empty() {
        return Fact::not("the receiver read no DS field");
    }
    let field = |sent: u8, seen: &BTreeMap<u8, u64>, ce| FieldFact {
        sent,
        seen: seen.clone(),
        verdict: verdict(sent, seen, ce),
    };
    Fact::Measured(MarkingFact {
        dscp: field(tos >> 2, &seen.dscp_seen, None),
        ecn: field(tos & 0b11, &seen.ecn_seen, Some(3)),
        flow_label: flow_label.map(|sent| FieldFact {
            sent,
            seen: seen.flow_label_seen.clone(),
            verdict: verdict(sent, &seen.flow_label_seen, None),
        }),
    })
}

/// NAT from our control socket's address and the one the far end saw (`None`: the far
/// end did not say: an older dualperf).
pub fn nat(ours: SocketAddr, seen: Option<SocketAddr>) -> Fact<Nat> {
    let Some(seen) = seen else {
        return Fact::not("the far end did not report the address it saw (an older dualperf)");
    };
    let verdict = match (ours.ip() == seen.ip(), ours.port() == seen.port()) {
        (true, true) => NatVerdict::None,
        (true, false) => NatVerdict::Port,
        (false, true) => NatVerdict::Address,
        (false, false) => NatVerdict::AddressAndPort,
    };
    Fact::Measured(Nat {
        ours,
        seen,
        verdict,
    })
}

/// Hops and marking of one direction from a probe flow's outcome in a `send` report
/// (the far end's received summary, and the spec it was sent with). A STAMP flow's
/// `received` carries the TTL the reflector saw (RFC 8762 §4.3 Ses-Sender TTL) and,
/// with the Class of Service TLV (RFC 8972 §4.4), the DSCP and ECN it received.
pub fn probe_direction(flow: &FlowOutcome) -> (Fact<Hops>, Fact<MarkingFact>) {
    let Some(rx) = &flow.received else {
        let why = "the far end reported no packet of the probe flow";
        return (Fact::not(why), Fact::not(why));
    };
    if rx.packets == 0 {
        let why = "none of the probe flow's packets arrived";
        return (Fact::not(why), Fact::not(why));
    }
    let spec = &flow.spec.marking;
    let hops = hops(spec.ttl, &rx.marking);
    let marking = match (&flow.stamp, spec.tos()) {
        (Some(s), _) if s.cos.as_ref().is_none_or(|c| c.replies == 0) => {
            Fact::not("the STAMP reflector did not return the Class of Service TLV (RFC 8972 §4.4)")
        }
        (_, tos) => marking(tos.unwrap_or(0), spec.flow_label, &rx.marking),
    };
    (hops, marking)
}

/// Hops of the reverse direction of a STAMP flow: the replies' TTL as received here,
/// against the reflector's initial TTL, inferred (RFC 8762 does not carry it).
pub fn stamp_reverse_hops(flow: &FlowOutcome) -> Fact<Hops> {
    match flow.stamp.as_ref().and_then(|s| s.reverse.as_ref()) {
        Some(rev) if rev.packets > 0 => hops(None, &rev.marking),
        _ => Fact::not("no STAMP reply arrived"),
    }
}

/// DPLPMTUD's search (RFC 8899 §5.3): a first round of probe sizes (IP packet bytes)
/// from the family's minimum to the largest the local route allows, then a round that
/// splits the gap between the largest size that crossed and the least that did not.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ladder {
    family: Family,
    /// Sizes probed so far, and whether the far end received any probe of each.
    tried: BTreeMap<u32, bool>,
    max: u32,
}

/// The sizes of the first round, below the route's MTU: the common MTUs of tunnels and
/// links (IPv6 minimum 1280, 1400-1480 for tunnels, 1492 PPPoE, 1500 Ethernet, 9000
/// jumbo, 65535).
const RUNGS: [u32; 12] = [
    576, 1280, 1400, 1420, 1440, 1460, 1480, 1492, 1500, 4000, 9000, 65535,
];

impl Ladder {
    /// A search for a `family` path whose first hop's MTU is `route_mtu`.
    pub fn new(family: Family, route_mtu: u32) -> Self {
        Self {
            family,
            tried: BTreeMap::new(),
            max: route_mtu.clamp(family.min_mtu(), family.max_packet()),
        }
    }

    /// The first round's IP sizes, rising: every rung in the family's range below the
    /// route's MTU, and the route's MTU.
    pub fn first_round(&self) -> Vec<u32> {
        let mut sizes: Vec<u32> = RUNGS
            .into_iter()
            .filter(|&s| s >= self.family.min_mtu() && s < self.max)
            .collect();
        sizes.push(self.max);
        sizes
    }

    /// Records that probes of `ip_bytes` crossed (the far end received at least one) or
    /// not.
    pub fn record(&mut self, ip_bytes: u32, crossed: bool) {
        self.tried.insert(ip_bytes, crossed);
    }

    /// The largest size that crossed (the PLPMTU, RFC 8899 §2), and the least larger
    /// size that did not.
    pub fn bounds(&self) -> (Option<u32>, Option<u32>) {
        let confirmed = self.tried.iter().filter(|(_, &c)| c).map(|(&s, _)| s).max();
        let lost = self
            .tried
            .iter()
            .filter(|(&s, &c)| !c && confirmed.is_none_or(|k| s > k))
            .map(|(&s, _)| s)
            .min();
        (confirmed, lost)
    }

    /// The next round's sizes: up to `n` sizes evenly inside the gap between the largest
    /// size that crossed and the least that did not (none when they are adjacent, every
    /// size crossed or none did).
    pub fn refine(&self, n: u32) -> Vec<u32> {
        let (Some(lo), Some(hi)) = self.bounds() else {
            return Vec::new();
        };
        let gap = hi - lo;
        let steps = n.min(gap - 1);
        (1..=steps).map(|i| lo + gap * i / (steps + 1)).collect()
    }

    /// The fact: the largest size that crossed, with the kernel's cached PMTU when it
    /// differs (RFC 1191 / RFC 8201).
    pub fn fact(&self, kernel: Option<u32>) -> Fact<Pmtu> {
        let (Some(bytes), smallest_lost) = self.bounds() else {
            return Fact::not("no DPLPMTUD probe crossed, not even the smallest");
        };
        let kernel_bytes = kernel.filter(|&k| k != bytes);
        // The kernel would send a size that was lost: no ICMP taught it the smaller MTU.
        let note = match (kernel_bytes, smallest_lost) {
            (Some(k), Some(lost)) if k >= lost => Some(
                "the kernel believes a larger MTU than crossed: ICMP filtered or a black hole"
                    .to_string(),
            ),
            _ => None,
        };
        Fact::Measured(Pmtu {
            bytes,
            method: PmtuMethod::Dplpmtud,
            smallest_lost,
            kernel_bytes,
            note,
        })
    }
}

/// The UDP payload bytes that make an IP packet of `ip_bytes` in `family`.
pub fn payload_for(family: Family, ip_bytes: u32) -> u32 {
    ip_bytes.saturating_sub(family.udp_overhead())
}

/// The TTL / hop limit, DSCP (AF41, RFC 2597), ECN (ECT(0), RFC 3168) and IPv6 flow label
/// the probe flow is sent with.
pub const PROBE_TTL: u8 = 64;
/// See [`PROBE_TTL`].
pub const PROBE_DSCP: u8 = 34;
/// See [`PROBE_TTL`].
pub const PROBE_FLOW_LABEL: u32 = 0x2dd41;
/// Packets of the probe flow.
pub const PROBE_PACKETS: u64 = 20;
/// Packets of each DPLPMTUD probe size: a size crossed when the far end received any.
pub const LADDER_PACKETS: u64 = 3;
/// Sizes of DPLPMTUD's refinement round.
pub const REFINE_SIZES: u32 = 8;

/// How the facts against `far_end` are measured, one sentence each ([`PathFacts::notes`]).
pub fn method_notes(far_end: FarEnd) -> Vec<String> {
    if far_end == FarEnd::Stamp {
        return vec![format!(
            "hops and marking: one STAMP session of {PROBE_PACKETS} × 64 B test packets per \
             family, sent with TTL {PROBE_TTL}, DSCP AF41 and ECT(0) (no flow label: no STAMP \
             TLV returns it); forward hops from the reflector's Ses-Sender TTL (RFC 8762 §4.3), \
             DSCP and ECN from its Class of Service TLV (RFC 8972 §4.4)"
        )];
    }
    let mut notes = vec![format!(
        "hops and marking: one UDP flow of {PROBE_PACKETS} × 64 B per family and direction, \
         sent with TTL {PROBE_TTL}, DSCP AF41, ECT(0) and on IPv6 flow label {PROBE_FLOW_LABEL:#x}"
    )];
    if far_end != FarEnd::Stamp {
        notes.push(format!(
            "path MTU: DPLPMTUD (RFC 8899 §4, RFC 4821), {LADDER_PACKETS} UDP datagrams with \
             Don't Fragment per IP size, a size confirmed when the far end received one, then \
             {REFINE_SIZES} sizes in the gap; the kernel's PMTUD cache (RFC 1191, RFC 8201) \
             read with IP_MTU / IPV6_MTU"
        ));
    }
    notes
}

/// The probe flow of one family and direction, whose received TTL / hop limit and
/// marking give [`hops`] and [`marking`]: UDP, [`PROBE_PACKETS`] × 64 bytes at 100
/// packets/s, one-way meter, TTL 64, DSCP AF41, ECT(0), and on IPv6 flow label
/// [`PROBE_FLOW_LABEL`].
pub fn probe_flow(family: Family) -> traffic::FlowSpec {
    use wire::ds::{Dscp, Ecn};
    traffic::FlowSpec {
        rate: traffic::Rate::MilliPps(100_000),
        size_bytes: 64,
        stop: traffic::StopSpec {
            count: Some(PROBE_PACKETS),
            duration: None,
            bytes: None,
        },
        marking: traffic::MarkingSpec {
            dscp: Dscp::new(PROBE_DSCP),
            ecn: Some(Ecn::Ect0),
            ttl: Some(PROBE_TTL),
            flow_label: (family == Family::Ipv6).then_some(PROBE_FLOW_LABEL),
        },
        label: "path probe".into(),
        ..traffic::FlowSpec::default()
    }
}

/// DPLPMTUD's probe flows, one per IP size: UDP with Don't Fragment, [`LADDER_PACKETS`]
/// packets each at 100 packets/s, the payload that makes a packet of that size.
pub fn ladder_flows(family: Family, ip_sizes: &[u32]) -> Vec<traffic::FlowSpec> {
    ip_sizes
        .iter()
        .map(|&ip| traffic::FlowSpec {
            rate: traffic::Rate::MilliPps(100_000),
            size_bytes: payload_for(family, ip),
            stop: traffic::StopSpec {
                count: Some(LADDER_PACKETS),
                duration: None,
                bytes: None,
            },
            dont_fragment: true,
            label: format!("pmtu {ip}"),
            ..traffic::FlowSpec::default()
        })
        .collect()
}

/// A bulk TCP flow of `duration`, whose goodput at the far end is the direction's
/// capacity (as iperf3 measures it).
pub fn capacity_flow(duration: std::time::Duration) -> traffic::FlowSpec {
    traffic::FlowSpec {
        protocol: wire::control::Protocol::Tcp,
        size_bytes: 128 * 1024,
        stop: traffic::StopSpec::after(wire::time::Duration::from_nanos(
            u64::try_from(duration.as_nanos()).unwrap_or(u64::MAX),
        )),
        bulk: true,
        unpaced: true,
        label: "capacity".into(),
        ..traffic::FlowSpec::default()
    }
}

impl Ladder {
    /// Records a round: `flows` are the outcomes of [`ladder_flows`]`(sizes)`, in order;
    /// a size crossed when the far end received at least one of its packets.
    pub fn record_round(&mut self, sizes: &[u32], flows: &[FlowOutcome]) {
        for (&ip, f) in sizes.iter().zip(flows) {
            let got = f.received.as_ref().map_or(0, |r| r.packets);
            self.record(ip, got > 0);
        }
    }
}

/// The capacity of a direction from a [`capacity_flow`]'s outcome: the far end's goodput.
pub fn capacity(flow: &FlowOutcome, how: &str) -> Fact<Capacity> {
    match flow.received.as_ref().and_then(|r| r.bitrate_bps) {
        Some(bps) if bps > 0.0 => Fact::Measured(Capacity {
            bps,
            how: how.into(),
        }),
        _ => Fact::not("the capacity transfer delivered nothing"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seen(tos: &[(u8, u64)], ttl: &[(u8, u64)], label: &[(u32, u64)]) -> Marking {
        let mut m = Marking::default();
        for &(t, n) in tos {
            m.tos_seen.insert(t, n);
            *m.dscp_seen.entry(t >> 2).or_insert(0) += n;
            *m.ecn_seen.entry(t & 3).or_insert(0) += n;
        }
        m.hop_limit_seen = ttl.iter().copied().collect();
        m.flow_label_seen = label.iter().copied().collect();
        m
    }

    #[test]
    fn hops_are_sent_minus_the_most_common_seen_and_inferred_when_not_sent() {
        let m = seen(&[], &[(62, 18), (61, 2)], &[]);
        let h = hops(Some(64), &m);
        assert_eq!(
            h,
            Fact::Measured(Hops {
                sent: 64,
                sent_inferred: false,
                seen: 62,
                hops: 2
            })
        );
        let h = hops(None, &seen(&[], &[(249, 5)], &[]));
        assert_eq!(
            h,
            Fact::Measured(Hops {
                sent: 255,
                sent_inferred: true,
                seen: 249,
                hops: 6
            })
        );
        assert_eq!(inferred_initial(64), 64);
        assert_eq!(inferred_initial(65), 128);
        assert_eq!(inferred_initial(30), 32);
        assert!(hops(Some(10), &seen(&[], &[(12, 1)], &[]))
            .measured()
            .is_none());
        assert!(hops(Some(64), &Marking::default()).measured().is_none());
    }

    #[test]
    fn each_marking_verdict() {
        // AF41 (34) + ECT(0): DS byte 0x8a.
        let tos = (34 << 2) | 2;
        let intact = marking(
            tos,
            Some(0x2dd41),
            &seen(&[(tos, 20)], &[], &[(0x2dd41, 20)]),
        );
        let m = intact.measured().unwrap();
        assert_eq!(
            (
                m.dscp.verdict,
                m.ecn.verdict,
                m.flow_label.as_ref().unwrap().verdict
            ),
            (
                MarkVerdict::Intact,
                MarkVerdict::Intact,
                MarkVerdict::Intact
            )
        );
        assert_eq!((m.dscp.sent, m.ecn.sent), (34, 2));
        assert_eq!(m.dscp.seen, BTreeMap::from([(34, 20)]));
        // Bleached DSCP, CE on 3 packets, flow label rewritten.
        let f = marking(
            tos,
            Some(0x2dd41),
            &seen(&[(2, 17), (3, 3)], &[], &[(0x12345, 20)]),
        );
        let m = f.measured().unwrap();
        assert_eq!(
            (
                m.dscp.verdict,
                m.ecn.verdict,
                m.flow_label.as_ref().unwrap().verdict
            ),
            (
                MarkVerdict::Bleached,
                MarkVerdict::Ce,
                MarkVerdict::Remarked
            )
        );
        // DSCP re-marked to CS1, ECN bleached to not-ECT, flow label zeroed.
        let f = marking(tos, Some(0x2dd41), &seen(&[(8 << 2, 20)], &[], &[(0, 20)]));
        let m = f.measured().unwrap();
        assert_eq!(
            (
                m.dscp.verdict,
                m.ecn.verdict,
                m.flow_label.as_ref().unwrap().verdict
            ),
            (
                MarkVerdict::Remarked,
                MarkVerdict::Bleached,
                MarkVerdict::Bleached
            )
        );
        // IPv4: no flow label; a label histogram the receiver could not read.
        let f = marking(tos, None, &seen(&[(tos, 1)], &[], &[]));
        assert_eq!(f.measured().unwrap().flow_label, None);
        let f = marking(tos, Some(1), &seen(&[(tos, 1)], &[], &[]));
        assert_eq!(
            f.measured().unwrap().flow_label.as_ref().unwrap().verdict,
            MarkVerdict::Unknown
        );
        assert!(marking(tos, None, &Marking::default()).measured().is_none());
    }

    #[test]
    fn nat_verdicts_compare_ours_with_what_the_far_end_saw() {
        let a = |s: &str| s.parse::<SocketAddr>().unwrap();
        let v = |o, s| nat(a(o), Some(a(s))).measured().unwrap().verdict;
        assert_eq!(v("198.18.1.2:4000", "198.18.1.2:4000"), NatVerdict::None);
        assert_eq!(v("198.18.1.2:4000", "198.18.1.2:5000"), NatVerdict::Port);
        assert_eq!(v("198.18.1.2:4000", "198.18.2.1:4000"), NatVerdict::Address);
        assert_eq!(
            v("198.18.1.2:4000", "198.18.2.1:61034"),
            NatVerdict::AddressAndPort
        );
        assert!(nat(a("[2001:2::1]:1"), None).measured().is_none());
    }

    #[test]
    fn the_ladder_probes_the_common_mtus_then_splits_the_gap() {
        let mut l = Ladder::new(Family::Ipv4, 1500);
        assert_eq!(
            l.first_round(),
            [576, 1280, 1400, 1420, 1440, 1460, 1480, 1492, 1500]
        );
        assert_eq!(
            Ladder::new(Family::Ipv6, 65536).first_round(),
            [1280, 1400, 1420, 1440, 1460, 1480, 1492, 1500, 4000, 9000, 65535, 65536]
        );
        assert_eq!(
            Ladder::new(Family::Ipv4, 65536).first_round().last(),
            Some(&65535)
        );
        assert_eq!(
            Ladder::new(Family::Ipv6, 70000).first_round().last(),
            Some(&65555)
        );
        assert_eq!(Ladder::new(Family::Ipv6, 1280).first_round(), [1280]);
        for s in [576, 1280, 1400, 1420] {
            l.record(s, true);
        }
        for s in [1440, 1460, 1480, 1492, 1500] {
            l.record(s, false);
        }
        assert_eq!(l.bounds(), (Some(1420), Some(1440)));
        assert_eq!(
            l.refine(8),
            [1422, 1424, 1426, 1428, 1431, 1433, 1435, 1437]
        );
        for s in [1422, 1424, 1426, 1428] {
            l.record(s, true);
        }
        for s in [1431, 1433, 1435, 1437] {
            l.record(s, false);
        }
        assert_eq!(l.bounds(), (Some(1428), Some(1431)));
        assert_eq!(l.refine(8), [1429, 1430]);
        let Fact::Measured(p) = l.fact(Some(1500)) else {
            panic!()
        };
        assert_eq!(
            p,
            Pmtu {
                bytes: 1428,
                method: PmtuMethod::Dplpmtud,
                smallest_lost: Some(1431),
                kernel_bytes: Some(1500),
                note: Some(
                    "the kernel believes a larger MTU than crossed: ICMP filtered or a black hole"
                        .into()
                ),
            }
        );
        // The kernel agreeing is not repeated.
        let Fact::Measured(p) = l.fact(Some(1428)) else {
            panic!()
        };
        assert_eq!((p.kernel_bytes, p.note), (None, None));
        // A kernel between the two sizes is no black hole: it is said, not explained.
        let Fact::Measured(p) = l.fact(Some(1430)) else {
            panic!()
        };
        assert_eq!((p.kernel_bytes, p.note), (Some(1430), None));
    }

    #[test]
    fn a_ladder_where_all_or_nothing_crossed_has_nothing_to_refine() {
        let mut all = Ladder::new(Family::Ipv6, 1500);
        for s in all.first_round() {
            all.record(s, true);
        }
        assert_eq!((all.bounds(), all.refine(8)), ((Some(1500), None), vec![]));
        let mut none = Ladder::new(Family::Ipv6, 1500);
        none.record(1280, false);
        assert_eq!(none.refine(8), Vec::<u32>::new());
        assert!(none.fact(None).measured().is_none());
        assert_eq!(payload_for(Family::Ipv6, 1500), 1452);
        assert_eq!(payload_for(Family::Ipv4, 1500), 1472);
    }

    #[test]
    fn path_facts_round_trip_through_json() {
        let facts = PathFacts {
            format_version: PATH_FORMAT_VERSION,
            host: "receiver".into(),
            far_end: FarEnd::Agent,
            notes: vec!["probes: UDP 20 × 64 B".into()],
            families: vec![FamilyPath {
                family: Family::Ipv4,
                local: Some("198.18.1.2:40112".parse().unwrap()),
                remote: "198.18.4.2:5201".parse().unwrap(),
                nat: nat(
                    "198.18.1.2:40112".parse().unwrap(),
                    Some("198.18.2.1:61034".parse().unwrap()),
                ),
                forward: Direction {
                    hops: hops(Some(64), &seen(&[], &[(62, 20)], &[])),
                    pmtu: Ladder::new(Family::Ipv4, 1500).fact(None),
                    marking: marking(0x8a, None, &seen(&[(0x8a, 20)], &[], &[])),
                    capacity: Fact::Measured(Capacity {
                        bps: 1e7,
                        how: "topology".into(),
                    }),
                },
                reverse: Direction::not_measured("the far end is dualperf recv"),
                clock: Fact::Measured(OffsetEstimate::same_clock()),
            }],
        };
        let json = serde_json::to_string(&facts).unwrap();
        assert!(json.contains(r#""nat":{"measured":{"ours":"198.18.1.2:40112","seen":"198.18.2.1:61034","verdict":"address_and_port"}}"#), "{json}");
        assert!(
            json.contains(r#""reverse":{"hops":{"not_measured":"the far end is dualperf recv"}"#),
            "{json}"
        );
        let back: PathFacts = serde_json::from_str(&json).unwrap();
        assert_eq!(back, facts);
    }

    fn outcome(
        spec: traffic::FlowSpec,
        received: Option<(u64, Marking, Option<f64>)>,
    ) -> FlowOutcome {
        let sent = crate::send::SenderFlow::empty();
        let mut o = FlowOutcome::assemble(0, &spec, sent, None, None, false, false);
        o.received = received.map(|(packets, marking, bitrate_bps)| meter::FlowSummary {
            packets,
            marking,
            bitrate_bps,
            ..meter::FlowMeter::new(0).summary(None)
        });
        o
    }

    #[test]
    fn probe_flows_and_rounds_read_into_facts() {
        assert!(method_notes(FarEnd::Stamp)[0].contains("(no flow label: no STAMP TLV returns it)"));
        assert_eq!(
            method_notes(FarEnd::Agent)[1],
            "path MTU: DPLPMTUD (RFC 8899 §4, RFC 4821), 3 UDP datagrams with Don't Fragment \
             per IP size, a size confirmed when the far end received one, then 8 sizes in the \
             gap; the kernel's PMTUD cache (RFC 1191, RFC 8201) read with IP_MTU / IPV6_MTU"
        );
        let p = probe_flow(Family::Ipv6);
        assert_eq!(p.marking.tos(), Some(0x8a));
        assert_eq!(
            (p.marking.ttl, p.marking.flow_label),
            (Some(64), Some(0x2dd41))
        );
        assert_eq!((p.size_bytes, p.stop.count), (64, Some(20)));
        assert_eq!(probe_flow(Family::Ipv4).marking.flow_label, None);
        let sizes = [1280, 1400, 1500];
        let flows = ladder_flows(Family::Ipv6, &sizes);
        let payloads: Vec<u32> = flows.iter().map(|f| f.size_bytes).collect();
        assert_eq!(payloads, [1232, 1352, 1452]);
        assert!(flows
            .iter()
            .all(|f| f.dont_fragment && f.stop.count == Some(3)));
        // 1280 and 1400 crossed (one of three is enough), 1500 did not.
        let got = |n| Some((n, Marking::default(), None));
        let outcomes: Vec<FlowOutcome> = flows
            .into_iter()
            .zip([got(3), got(1), got(0)])
            .map(|(f, r)| outcome(f, r))
            .collect();
        let mut l = Ladder::new(Family::Ipv6, 1500);
        l.record_round(&sizes, &outcomes);
        assert_eq!(l.bounds(), (Some(1400), Some(1500)));
        // The probe flow: two routers, AF41 bleached to 0, ECT(0) kept, label kept.
        let seen6 = seen(&[(2, 20)], &[(62, 20)], &[(0x2dd41, 20)]);
        let (h, m) = probe_direction(&outcome(probe_flow(Family::Ipv6), Some((20, seen6, None))));
        assert_eq!(h.measured().unwrap().hops, 2);
        let m = m.measured().unwrap().clone();
        assert_eq!(
            (m.dscp.verdict, m.ecn.verdict, m.flow_label.unwrap().verdict),
            (
                MarkVerdict::Bleached,
                MarkVerdict::Intact,
                MarkVerdict::Intact
            )
        );
        let (h, _) = probe_direction(&outcome(probe_flow(Family::Ipv4), got(0)));
        assert_eq!(h, Fact::not("none of the probe flow's packets arrived"));
        let cap = outcome(
            capacity_flow(std::time::Duration::from_secs(1)),
            Some((9, Marking::default(), Some(9.4e8))),
        );
        assert_eq!(
            capacity(&cap, "tcp 1s"),
            Fact::Measured(Capacity {
                bps: 9.4e8,
                how: "tcp 1s".into()
            })
        );
    }
}
