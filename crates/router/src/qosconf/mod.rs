//! QoS configuration files: Cisco MQC's class-map, policy-map and service-policy in
//! TOML, validated with line-numbered errors and compiled into [`qos::policy`] params
//! for `dualperf route --qos FILE` (and a lab router's `qos = "FILE"`).
//!
//! ```toml
//! version = 1
//!
//! [[class_map]]                 # class-map match-all realtime
//! name = "realtime"
//! match = "all"                 # or "any"; every key below is one condition
//! dscp = ["ef"]                 # names (ef, af41, cs1, default) or 0-63
//! protocol = "udp"              # udp, tcp, icmp, icmpv6, or a number
//! src = "198.18.1.0/24"         # source prefix (IPv4 or IPv6)
//! dst = "2001:2:0:4::/64"
//! src_port = 5004               # or "5000-5010"
//! dst_port = "5000-5010"
//! ecn = 0                       # 0-3
//! flow_label = 0x12345          # IPv6 only
//! length = "0-200"              # IP length, bytes
//!
//! [[policy_map]]
//! name = "bouras"
//! tx_ring = 2                   # the interface's tx-ring, packets (default 2)
//! max_reserved = "75%"          # of the link (IOS's max-reserved-bandwidth, default 75%)
//! scheduler = "drr"             # drr (default), wfq, mdrr-strict or mdrr-alternate
//!
//! [[policy_map.class]]          # in match order (first match wins)
//! name = "realtime"             # a class_map, or "class-default" (always last)
//! priority = "20%"              # or "2mbit"; burst = 200 ms of it unless `burst` (bytes)
//! set_dscp = "ef"
//!
//! [[policy_map.class]]
//! name = "class-default"
//! queue_limit = 75              # packets (default 64)
//! bandwidth = "55%"             # or "5500kbit", or bandwidth_remaining = "100%"
//! police = { cir = "8mbit", bc = 50000, be = 0, conform = "transmit", exceed = "drop" }
//! random_detect = { weight = 9, min = 30, max = 50, denominator = 10, count_rule = "bernoulli" }
//! fair_queue = true             # conversations served fairly inside the class (drr only)
//! # per DSCP: random_detect.dscp = [{ dscp = "af11", min = 32, max = 40, denominator = 10 }]
//!
//! [[service_policy]]
//! interface = "to-r2"
//! output = "bouras"
//! ```
//!
//! Per-flow reservations (the WebAudio thesis's RSVP classification), declared in a policy and
//! asked about by a class map:
//!
//! ```toml
//! [[class_map]]
//! name = "audio"                # the flows to reserve (their first packet admits them)
//! src = "2001:2:0:1::/64"
//! [[class_map]]
//! name = "reserved"
//! reservation = "rsvp"          # true for packets of flows table "rsvp" holds
//!
//! [[policy_map.reservation]]
//! name = "rsvp"
//! key = "flow-label"            # or "5-tuple"; IPv4 falls back to its 5-tuple
//! max_flows = 1000
//! admit = "audio"
//! ```
//!
//! Rules, as IOS 12.2T (pre-HQF) has them (reference: shared/reference/qos.md §1):
//! - one policy's `bandwidth` classes use one form (kbit/s, percent, or remaining
//!   percent); priority + fixed bandwidths may not exceed `max_reserved` of the link;
//! - class-default without `bandwidth` gets the unreserved remainder as its weight
//!   (qos.md §7.6), under "remaining" the remainder of 100 %;
//! - shares are DRR quanta proportional to the bandwidths (pre-HQF proportional sharing of
//!   excess, qos.md §5.4); the smallest share's quantum is 1500 bytes;
//! - `police` with `be = 0` is two-colour: violate takes exceed's action unless set;
//!   `bc` defaults to CIR/32 bytes (250 ms; at least 1500), IOS's default;
//! - `random_detect`: weight n is 1-16 (default 9), denominator defaults to 10,
//!   count_rule is bernoulli (default), dpdk or floyd-jacobson (qos.md §7.1), and the
//!   average decays over idle time as Floyd–Jacobson's (1−2⁻ⁿ)^m with m = idle time over
//!   a 1538-byte frame's time on the link (qos.md §7.4): a full Ethernet frame on the
//!   wire, 1518 bytes (1500 of IP, 14 of header, 4 of FCS) + 8 of preamble and SFD +
//!   12 of inter-frame gap.
//!
//! Signalled reservations: `[rsvp]`, `signalled = true` tables and `rsvp_bandwidth` on a
//! service policy make the router take part in RSVP (module `rsvp`, [`QosConfig::rsvp`],
//! [`QosConfig::rsvp_bandwidth_bps`]).

mod file;
mod rsvp;

pub use self::rsvp::{RsvpParams, DEFAULT_KEEP, DEFAULT_REFRESH, MAX_KEEP};

use file::{
    class_map, err, parse_amount, parse_dscp, police, wred, Amount, Bandwidth, File,
    PolicyClassFile, PolicyFile,
};

use std::collections::BTreeMap;

use qos::cbwfq::{Priority, Scheduler, Share};
use qos::classify::{ClassMap, Cond, KeyKind};
use qos::policy::{ClassParams, PoliceParams, PolicyParams, Queueing, ReservationParams};
use qos::wred::WredParams;

/// The QoS file format this build reads.
pub const QOS_VERSION: u32 = 1;
/// Most classes in one policy (IOS: 64).
pub const MAX_CLASSES: usize = 64;

/// A QoS file that cannot be used, with its line when known.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}{message}", line.map_or(String::new(), |l| format!("line {l}: ")))]
pub struct QosError {
    /// 1-based line.
    pub line: Option<usize>,
    /// What is wrong.
    pub message: String,
}

/// One class of a policy, before the link's rate is known.
#[derive(Clone, Debug, PartialEq)]
struct ClassSpec {
    line: Option<usize>,
    name: String,
    map: Option<ClassMap>,
    priority: Option<(Amount, Option<u64>)>,
    bandwidth: Option<Bandwidth>,
    queue_limit: u32,
    set_dscp: Option<u8>,
    police: Option<PoliceParams>,
    wred: Option<WredParams>,
    fair_queue: bool,
}

/// A validated policy-map; [`QosConfig::params_for`] resolves it against a link.
#[derive(Clone, Debug, PartialEq)]
pub struct PolicySpec {
    line: Option<usize>,
    /// Its name.
    pub name: String,
    /// The tx-ring depth, packets.
    pub tx_ring: u32,
    max_reserved_percent: f64,
    scheduler: Scheduler,
    reservations: Vec<ReservationParams>,
    classes: Vec<ClassSpec>,
}

/// A validated QoS file.
#[derive(Clone, Debug, PartialEq)]
pub struct QosConfig {
    /// What it is.
    pub description: String,
    /// Policy-maps by name.
    pub policies: BTreeMap<String, PolicySpec>,
    /// `service-policy output`: interface → policy-map, with the line.
    pub service: Vec<(String, String, Option<usize>)>,
    /// `[rsvp]` and the interfaces' `rsvp_bandwidth`.
    rsvp: rsvp::RsvpConfig,
}

impl QosConfig {
    /// Parse and validate a QoS file: its class maps, then each policy map, then the
    /// service policies that attach them.
    pub fn parse(text: &str) -> Result<Self, QosError> {
        let file: File = toml::from_str(text).map_err(|e| {
            err(
                e.span().and_then(|s| line_at(text, s.start)),
                e.message().trim().to_owned(),
            )
        })?;
        if *file.version.get_ref() != QOS_VERSION {
            return Err(err(
                line_at(text, file.version.span().start),
                format!(
                    "QoS format version {} is not {QOS_VERSION}",
                    file.version.get_ref()
                ),
            ));
        }
        let maps = ClassMaps::parse(text, &file)?;
        let mut policies = BTreeMap::new();
        for p in &file.policy_map {
            let pline = line_at(text, p.span().start);
            let pf = p.get_ref();
            if policies.contains_key(&pf.name) {
                return Err(err(
                    pline,
                    format!("policy_map '{}' is declared twice", pf.name),
                ));
            }
            policies.insert(pf.name.clone(), policy(text, pline, pf, &maps)?);
        }
        let service = service(text, &file, &policies)?;
        let rsvp = rsvp::parse(text, &file, &policies)?;
        Ok(Self {
            description: file.description,
            policies,
            service,
            rsvp,
        })
    }

    /// The policy-map attached to `interface`, if any.
    pub fn policy_of(&self, interface: &str) -> Option<&PolicySpec> {
        self.service
            .iter()
            .find(|(i, _, _)| i == interface)
            .and_then(|(_, p, _)| self.policies.get(p))
    }

    /// The line of `interface`'s service-policy.
    pub fn service_line(&self, interface: &str) -> Option<usize> {
        self.service
            .iter()
            .find(|(i, _, _)| i == interface)
            .and_then(|(_, _, l)| *l)
    }

    /// Resolve `interface`'s policy against its link's rate (bit/s, 0 = unlimited), its
    /// `rsvp_bandwidth` checked too ([`Self::rsvp_bandwidth_bps`]).
    pub fn params_for(
        &self,
        interface: &str,
        link_bps: u64,
    ) -> Result<Option<PolicyParams>, QosError> {
        let Some(p) = self.policy_of(interface) else {
            return Ok(None);
        };
        let line = self.service_line(interface);
        let params = p.resolve(link_bps).map_err(|m| {
            err(
                line,
                format!(
                    "service_policy on {interface}: policy_map '{}' (line {}): {m}",
                    p.name,
                    p.line.unwrap_or(0)
                ),
            )
        })?;
        self.rsvp_bandwidth_bps(interface, link_bps)?;
        Ok(Some(params))
    }
}

/// The 1-based line of byte `offset` of a QoS file ([`wire::span::line_at`]).
fn line_at(text: &str, offset: usize) -> Option<usize> {
    Some(wire::span::line_at(text, offset))
}

/// The file's class maps by name, with the reservation table each asks about.
struct ClassMaps {
    maps: BTreeMap<String, ClassMap>,
    /// Class map → the reservation table it asks about, by name.
    wants_table: BTreeMap<String, String>,
}

impl ClassMaps {
    fn parse(text: &str, file: &File) -> Result<Self, QosError> {
        let mut maps: BTreeMap<String, ClassMap> = BTreeMap::new();
        let mut wants_table: BTreeMap<String, String> = BTreeMap::new();
        for m in &file.class_map {
            let line = line_at(text, m.span().start);
            let c = m.get_ref();
            if c.name == "class-default" || c.name.is_empty() {
                return Err(err(
                    line,
                    format!("class_map name '{}' is reserved", c.name),
                ));
            }
            if maps.contains_key(&c.name) {
                return Err(err(
                    line,
                    format!("class_map '{}' is declared twice", c.name),
                ));
            }
            maps.insert(c.name.clone(), class_map(c, line)?);
            if let Some(r) = &c.reservation {
                wants_table.insert(c.name.clone(), r.clone());
            }
        }
        Ok(Self { maps, wants_table })
    }
}

/// One `[[policy_map]]`: its settings, reservation tables and classes, checked together.
fn policy(
    text: &str,
    pline: Option<usize>,
    pf: &PolicyFile,
    maps: &ClassMaps,
) -> Result<PolicySpec, QosError> {
    let tx_ring = pf.tx_ring.unwrap_or(2);
    if !(1..=4096).contains(&tx_ring) {
        return Err(err(pline, "tx_ring: 1 to 4096 packets"));
    }
    let max_reserved_percent = match &pf.max_reserved {
        None => 75.0,
        Some(s) => match parse_amount(s) {
            Some(Amount::Percent(p)) => p,
            _ => {
                return Err(err(
                    pline,
                    format!("max_reserved '{s}': a percentage, e.g. 75%"),
                ))
            }
        },
    };
    let scheduler = match pf.scheduler.as_deref() {
        None | Some("drr") => Scheduler::Drr,
        Some("wfq") => Scheduler::Wfq,
        Some("mdrr-strict") => Scheduler::MdrrStrict,
        Some("mdrr-alternate") => Scheduler::MdrrAlternate,
        Some(o) => {
            return Err(err(
                pline,
                format!("scheduler '{o}': drr, wfq, mdrr-strict or mdrr-alternate"),
            ))
        }
    };
    if pf.class.len() > MAX_CLASSES {
        return Err(err(pline, format!("at most {MAX_CLASSES} classes")));
    }
    let reservations = reservations(text, pf, maps)?;
    let mut classes: Vec<ClassSpec> = Vec::new();
    for c in &pf.class {
        let line = line_at(text, c.span().start);
        let cf = c.get_ref();
        if classes.iter().any(|x| x.name == cf.name) {
            return Err(err(line, format!("class '{}' appears twice", cf.name)));
        }
        let map = class_map_of(line, cf, pf, maps, &reservations)?;
        classes.push(class(line, cf, map, scheduler)?);
    }
    check_classes(pline, pf, &mut classes)?;
    Ok(PolicySpec {
        line: pline,
        name: pf.name.clone(),
        tx_ring,
        max_reserved_percent,
        scheduler,
        reservations,
        classes,
    })
}

/// A policy's `[[policy_map.reservation]]` tables.
fn reservations(
    text: &str,
    pf: &PolicyFile,
    maps: &ClassMaps,
) -> Result<Vec<ReservationParams>, QosError> {
    let mut reservations: Vec<ReservationParams> = Vec::new();
    for r in &pf.reservation {
        let line = line_at(text, r.span().start);
        let rf = r.get_ref();
        if reservations.iter().any(|x| x.name == rf.name) {
            return Err(err(
                line,
                format!("reservation '{}' is declared twice", rf.name),
            ));
        }
        if reservations.len() == 32 {
            return Err(err(line, "at most 32 reservation tables per policy"));
        }
        let key = match rf.key.as_str() {
            "5-tuple" => KeyKind::FiveTuple,
            "flow-label" => KeyKind::FlowLabel,
            o => {
                return Err(err(
                    line,
                    format!(
                        "reservation '{}': key '{o}': \"5-tuple\" or \"flow-label\"",
                        rf.name
                    ),
                ))
            }
        };
        let max_flows = rf.max_flows.unwrap_or(1000);
        if !(1..=1_000_000).contains(&max_flows) {
            return Err(err(
                line,
                format!("reservation '{}': max_flows 1 to 1000000", rf.name),
            ));
        }
        let admit = match &rf.admit {
            None => None,
            Some(m) => match maps.maps.get(m) {
                Some(map) if !map.conds.iter().any(|c| matches!(c, Cond::Reserved(_))) => {
                    Some(map.clone())
                }
                Some(_) => {
                    return Err(err(
                        line,
                        format!(
                            "reservation '{}': admit '{m}' may not itself ask about reservations",
                            rf.name
                        ),
                    ))
                }
                None => {
                    return Err(err(
                        line,
                        format!(
                            "reservation '{}': admit '{m}': no class_map of that name",
                            rf.name
                        ),
                    ))
                }
            },
        };
        reservations.push(ReservationParams {
            name: rf.name.clone(),
            key,
            max_flows,
            admit,
            signalled: rsvp::signalled(rf, line)?,
        });
    }
    Ok(reservations)
}

/// The class map a policy's class matches with (none: class-default), its reservation
/// table resolved to the policy's own.
fn class_map_of(
    line: Option<usize>,
    cf: &PolicyClassFile,
    pf: &PolicyFile,
    maps: &ClassMaps,
    reservations: &[ReservationParams],
) -> Result<Option<ClassMap>, QosError> {
    if cf.name == "class-default" {
        return Ok(None);
    }
    let mut m = maps.maps.get(&cf.name).cloned().ok_or_else(|| {
        err(
            line,
            format!("class '{}': no class_map of that name", cf.name),
        )
    })?;
    if let Some(table) = maps.wants_table.get(&cf.name) {
        let i = reservations.iter().position(|r| &r.name == table).ok_or_else(|| {
            err(
                line,
                format!(
                    "class '{}': its class_map asks about reservation '{table}', which policy_map '{}' does not declare",
                    cf.name, pf.name
                ),
            )
        })?;
        for c in &mut m.conds {
            if *c == Cond::Reserved(file::UNRESOLVED) {
                *c = Cond::Reserved(i as u8);
            }
        }
    }
    Ok(Some(m))
}

/// A policy's class: its rate (priority or bandwidth), then its queue.
fn class(
    line: Option<usize>,
    cf: &PolicyClassFile,
    map: Option<ClassMap>,
    scheduler: Scheduler,
) -> Result<ClassSpec, QosError> {
    let (priority, bandwidth) = class_rates(line, cf)?;
    let queue_limit = cf.queue_limit.unwrap_or(64);
    if queue_limit == 0 {
        return Err(err(
            line,
            format!("class '{}': a queue_limit of 0 drops everything", cf.name),
        ));
    }
    let set_dscp = match &cf.set_dscp {
        None => None,
        Some(d) => Some(parse_dscp(d).ok_or_else(|| {
            err(
                line,
                format!(
                    "class '{}': set_dscp '{d}': a name (ef, af41) or 0-63",
                    cf.name
                ),
            )
        })?),
    };
    let police = cf
        .police
        .as_ref()
        .map(|p| police(p, line, &cf.name))
        .transpose()?;
    let wred = cf
        .random_detect
        .as_ref()
        .map(|w| wred(w, line, &cf.name))
        .transpose()?;
    if let Some(w) = &wred {
        let top = w
            .profiles
            .iter()
            .map(|(_, p)| p.max_th)
            .chain([w.default.max_th])
            .max();
        if top.is_some_and(|t| t > queue_limit) {
            return Err(err(line, format!("class '{}': a WRED max threshold above the queue_limit {queue_limit} is never reached", cf.name)));
        }
    }
    let fair_queue = cf.fair_queue.unwrap_or(false);
    if fair_queue && (priority.is_some() || scheduler != Scheduler::Drr) {
        return Err(err(
            line,
            format!(
                "class '{}': fair_queue needs a bandwidth class (or class-default) under scheduler \"drr\"",
                cf.name
            ),
        ));
    }
    Ok(ClassSpec {
        line,
        name: cf.name.clone(),
        map,
        priority,
        bandwidth,
        queue_limit,
        set_dscp,
        police,
        wred,
        fair_queue,
    })
}

/// A class's `priority` (with its burst) or `bandwidth` / `bandwidth_remaining`.
#[allow(clippy::type_complexity)]
fn class_rates(
    line: Option<usize>,
    cf: &PolicyClassFile,
) -> Result<(Option<(Amount, Option<u64>)>, Option<Bandwidth>), QosError> {
    let amount = |s: &str, what: &str| {
        parse_amount(s).ok_or_else(|| {
            err(
                line,
                format!(
                    "class '{}': {what} '{s}': a bit rate (2mbit) or a percentage (20%)",
                    cf.name
                ),
            )
        })
    };
    let priority = match &cf.priority {
        None => None,
        Some(s) => Some((amount(s, "priority")?, cf.burst)),
    };
    if cf.burst.is_some() && priority.is_none() {
        return Err(err(
            line,
            format!("class '{}': burst is the priority's", cf.name),
        ));
    }
    let bandwidth = match (&cf.bandwidth, &cf.bandwidth_remaining) {
        (Some(_), Some(_)) => {
            return Err(err(
                line,
                format!(
                    "class '{}': bandwidth or bandwidth_remaining, not both",
                    cf.name
                ),
            ))
        }
        (Some(s), None) => Some(Bandwidth::Fixed(amount(s, "bandwidth")?)),
        (None, Some(s)) => match parse_amount(s) {
            Some(Amount::Percent(p)) => Some(Bandwidth::Remaining(p)),
            _ => {
                return Err(err(
                    line,
                    format!(
                        "class '{}': bandwidth_remaining '{s}': a percentage",
                        cf.name
                    ),
                ))
            }
        },
        (None, None) => None,
    };
    if priority.is_some() && bandwidth.is_some() {
        return Err(err(
            line,
            format!("class '{}': priority or bandwidth, not both", cf.name),
        ));
    }
    if priority.is_some() && cf.random_detect.is_some() {
        return Err(err(
            line,
            format!(
                "class '{}': random_detect does not apply to the priority queue",
                cf.name
            ),
        ));
    }
    Ok((priority, bandwidth))
}

/// A policy's classes together: class-default last (implicit if absent), one priority
/// class, one form of bandwidth, remaining percentages within 100 %.
fn check_classes(
    pline: Option<usize>,
    pf: &PolicyFile,
    classes: &mut Vec<ClassSpec>,
) -> Result<(), QosError> {
    match classes.iter().position(|c| c.map.is_none()) {
        Some(i) if i + 1 != classes.len() => {
            return Err(err(classes[i].line, "class-default must be the last class"))
        }
        Some(_) => {}
        None => classes.push(ClassSpec {
            line: pline,
            name: "class-default".into(),
            map: None,
            priority: None,
            bandwidth: None,
            queue_limit: 64,
            set_dscp: None,
            police: None,
            wred: None,
            fair_queue: false,
        }),
    }
    let prios: Vec<&ClassSpec> = classes.iter().filter(|c| c.priority.is_some()).collect();
    if prios.len() > 1 {
        return Err(err(
            prios[1].line,
            format!(
                "classes '{}' and '{}' both have priority: one priority class per policy here",
                prios[0].name, prios[1].name
            ),
        ));
    }
    let forms: Vec<u8> = classes
        .iter()
        .filter_map(|c| match c.bandwidth {
            Some(Bandwidth::Fixed(Amount::Bps(_))) => Some(0),
            Some(Bandwidth::Fixed(Amount::Percent(_))) => Some(1),
            Some(Bandwidth::Remaining(_)) => Some(2),
            None => None,
        })
        .collect();
    if forms.windows(2).any(|w| w[0] != w[1]) {
        return Err(err(pline, format!("policy_map '{}': bandwidth classes mix kbit/s, percent and remaining percent (IOS refuses that)", pf.name)));
    }
    let remaining: f64 = classes
        .iter()
        .filter_map(|c| match c.bandwidth {
            Some(Bandwidth::Remaining(p)) => Some(p),
            _ => None,
        })
        .sum();
    if remaining > 100.0 {
        return Err(err(
            pline,
            format!(
                "policy_map '{}': bandwidth_remaining adds up to {remaining}% (more than 100%)",
                pf.name
            ),
        ));
    }
    Ok(())
}

/// `[[service_policy]]`: (interface, policy, line), one output policy per interface.
#[allow(clippy::type_complexity)]
fn service(
    text: &str,
    file: &File,
    policies: &BTreeMap<String, PolicySpec>,
) -> Result<Vec<(String, String, Option<usize>)>, QosError> {
    let mut service: Vec<(String, String, Option<usize>)> = Vec::new();
    for s in &file.service_policy {
        let line = line_at(text, s.span().start);
        let sf = s.get_ref();
        if !policies.contains_key(&sf.output) {
            return Err(err(
                line,
                format!(
                    "service_policy output '{}': no policy_map of that name",
                    sf.output
                ),
            ));
        }
        if service.iter().any(|(i, _, _)| *i == sf.interface) {
            return Err(err(
                line,
                format!("interface '{}' has two output policies", sf.interface),
            ));
        }
        service.push((sf.interface.clone(), sf.output.clone(), line));
    }
    Ok(service)
}

impl PolicySpec {
    /// The policy's params on a link of `link_bps` (0 = unlimited).
    fn resolve(&self, link_bps: u64) -> Result<PolicyParams, String> {
        let bps = |a: Amount, what: &str, class: &str| -> Result<u64, String> {
            match a {
                Amount::Bps(b) => Ok(b),
                Amount::Percent(p) if link_bps > 0 => {
                    Ok((link_bps as f64 * p / 100.0).round() as u64)
                }
                Amount::Percent(_) => Err(format!(
                    "class '{class}': {what} in percent needs a link rate (the interface has none)"
                )),
            }
        };
        let mut priority_bps = 0u64;
        let mut fixed_bps = 0u64;
        let mut raw: Vec<Option<f64>> = Vec::new();
        for c in &self.classes {
            if let Some((a, _)) = c.priority {
                priority_bps = bps(a, "priority", &c.name)?;
            }
            raw.push(match c.bandwidth {
                Some(Bandwidth::Fixed(a)) => {
                    let b = bps(a, "bandwidth", &c.name)?;
                    fixed_bps += b;
                    Some(b as f64)
                }
                Some(Bandwidth::Remaining(p)) => Some(p),
                None => None,
            });
        }
        if link_bps > 0 {
            let cap = link_bps as f64 * self.max_reserved_percent / 100.0;
            if (priority_bps + fixed_bps) as f64 > cap + 0.5 {
                return Err(format!(
                    "priority {priority_bps} bit/s + bandwidth {fixed_bps} bit/s exceed max_reserved {}% of the link's {link_bps} bit/s",
                    self.max_reserved_percent
                ));
            }
        }
        let remaining_form = self
            .classes
            .iter()
            .any(|c| matches!(c.bandwidth, Some(Bandwidth::Remaining(_))));
        // Class-default without bandwidth: the unreserved remainder (qos.md §7.6).
        let default_share = if remaining_form {
            (100.0 - raw.iter().flatten().sum::<f64>()).max(1.0)
        } else if link_bps > 0 {
            (link_bps.saturating_sub(priority_bps + fixed_bps) as f64).max(link_bps as f64 / 100.0)
        } else if fixed_bps > 0 {
            fixed_bps as f64 / 3.0
        } else {
            1.0
        };
        let shares: Vec<f64> = self
            .classes
            .iter()
            .zip(&raw)
            .filter(|(c, _)| c.priority.is_none())
            .map(|(c, r)| r.unwrap_or(if c.map.is_none() { default_share } else { 1.0 }))
            .collect();
        let smallest = shares
            .iter()
            .copied()
            .fold(f64::INFINITY, f64::min)
            .max(1e-9);
        let mut out = Vec::new();
        for (c, r) in self.classes.iter().zip(&raw) {
            let queueing = match c.priority {
                Some((a, burst)) => {
                    let rate_bps = bps(a, "priority", &c.name)?;
                    Queueing::Priority(Priority {
                        rate_bps,
                        burst_bytes: burst.unwrap_or(Priority::default_burst(rate_bps)),
                        limit_packets: c.queue_limit,
                    })
                }
                None => {
                    let share = r.unwrap_or(if c.map.is_none() { default_share } else { 1.0 });
                    // Quantum = weight × 100 B: the smallest share gets 1500 B.
                    let weight = (15.0 * share / smallest).round().clamp(1.0, 1_000_000.0) as u32;
                    Queueing::Bandwidth(Share {
                        weight,
                        limit_packets: c.queue_limit,
                    })
                }
            };
            let mut wred = c.wred.clone();
            if let Some(w) = wred.as_mut() {
                w.idle_packet_time_ns = (1538u64 * 8 * 1_000_000_000).checked_div(link_bps);
            }
            out.push(ClassParams {
                name: c.name.clone(),
                map: c.map.clone(),
                set_dscp: c.set_dscp,
                police: c.police,
                queueing,
                wred,
                fair_queue: c.fair_queue,
            });
        }
        Ok(PolicyParams {
            name: self.name.clone(),
            classes: out,
            scheduler: self.scheduler,
            reservations: self.reservations.clone(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use qos::police::Action;

    pub(crate) const BOURAS: &str = include_str!("../../../../plans/qos/bouras-wred-30-50.toml");

    #[test]
    fn the_seed_policy_resolves_on_the_bottleneck() {
        let q = QosConfig::parse(BOURAS).unwrap();
        let p = q.params_for("to-r2", 10_000_000).unwrap().unwrap();
        assert_eq!(p.classes.len(), 2);
        let Queueing::Priority(pr) = p.classes[0].queueing else {
            panic!("EF is the priority class")
        };
        // priority percent 20 on 10 Mbit/s: 2 Mbit/s, burst 200 ms = 50,000 B (§1.6).
        assert_eq!((pr.rate_bps, pr.burst_bytes), (2_000_000, 50_000));
        assert_eq!(p.classes[0].set_dscp, Some(46));
        let be = &p.classes[1];
        let w = be.wred.as_ref().unwrap();
        assert_eq!(
            (
                w.weight_exp,
                w.default.min_th,
                w.default.max_th,
                w.default.denominator
            ),
            (9, 30, 50, 10)
        );
        let Queueing::Bandwidth(s) = be.queueing else {
            panic!()
        };
        assert_eq!(s.limit_packets, 75);
        assert!(q.params_for("to-r1", 10_000_000).unwrap().is_none());
    }

    fn first_error(text: &str) -> QosError {
        QosConfig::parse(text).unwrap_err()
    }

    #[test]
    fn errors_name_their_line() {
        let cases: &[(&str, usize, &str)] = &[
            ("version = 2\n", 1, "version 2"),
            ("version = 1\n[[class_map]]\nname = \"v\"\ndscp = [\"xx\"]\n", 2, "dscp 'xx'"),
            ("version = 1\n[[class_map]]\nname = \"v\"\n", 2, "no condition"),
            (
                "version = 1\n[[policy_map]]\nname = \"p\"\n[[policy_map.class]]\nname = \"nope\"\n",
                4,
                "no class_map",
            ),
            (
                "version = 1\n[[policy_map]]\nname = \"p\"\n[[policy_map.class]]\nname = \"class-default\"\nqueue_limit = 20\nrandom_detect = { min = 30, max = 50 }\n",
                4,
                "above the queue_limit",
            ),
            (
                "version = 1\n[[policy_map]]\nname = \"p\"\n[[policy_map.class]]\nname = \"class-default\"\nrandom_detect = { min = 50, max = 30 }\n",
                4,
                "need min < max",
            ),
            (
                "version = 1\n[[policy_map]]\nname = \"p\"\n[[policy_map.class]]\nname = \"class-default\"\npolice = { cir = \"fast\" }\n",
                4,
                "police cir 'fast'",
            ),
            ("version = 1\n\n[[service_policy]]\ninterface = \"x\"\noutput = \"none\"\n", 3, "no policy_map"),
            ("version = 1\nbogus = 3\n", 2, "unknown field"),
            (
                "version = 1\n[[policy_map]]\nname = \"p\"\nscheduler = \"wfq\"\n[[policy_map.class]]\nname = \"class-default\"\nfair_queue = true\n",
                5,
                "fair_queue needs",
            ),
        ];
        for (text, line, needle) in cases {
            let e = first_error(text);
            assert_eq!(e.line, Some(*line), "{text}: {e}");
            assert!(e.to_string().contains(needle), "{text}: {e}");
        }
    }

    #[test]
    fn reservations_beyond_max_reserved_are_refused() {
        let text = "version = 1\n[[class_map]]\nname = \"ef\"\ndscp = [\"ef\"]\n[[class_map]]\nname = \"af\"\ndscp = [\"af11\"]\n[[policy_map]]\nname = \"p\"\n[[policy_map.class]]\nname = \"ef\"\npriority = \"20%\"\n[[policy_map.class]]\nname = \"af\"\nbandwidth = \"60%\"\n\n[[service_policy]]\ninterface = \"eth0\"\noutput = \"p\"\n";
        let q = QosConfig::parse(text).unwrap();
        let e = q.params_for("eth0", 10_000_000).unwrap_err();
        assert_eq!(e.line, Some(17), "{e}");
        assert!(e.to_string().contains("max_reserved 75%"), "{e}");
        // Percentages need a link rate.
        let e = q.params_for("eth0", 0).unwrap_err();
        assert!(e.to_string().contains("needs a link rate"), "{e}");
        // 55 % fits: AF's weight against class-default's 25 % is 55:25.
        let ok = text.replace("60%", "55%");
        let p = QosConfig::parse(&ok)
            .unwrap()
            .params_for("eth0", 10_000_000)
            .unwrap()
            .unwrap();
        let w: Vec<u32> = p
            .classes
            .iter()
            .filter_map(|c| match c.queueing {
                Queueing::Bandwidth(s) => Some(s.weight),
                Queueing::Priority(_) => None,
            })
            .collect();
        assert_eq!(w, vec![33, 15]);
    }

    #[test]
    fn two_colour_police_gives_violate_the_exceed_action() {
        let text = "version = 1\n[[policy_map]]\nname = \"p\"\n[[policy_map.class]]\nname = \"class-default\"\npolice = { cir = \"1mbit\", exceed = \"set-dscp-transmit af11\" }\n";
        let q = QosConfig::parse(text).unwrap();
        let p = q.policies["p"].classes[0].police.unwrap();
        let PoliceParams::Single(m, a) = p else {
            panic!()
        };
        // bc = CIR/32 bytes = 31,250; be = 0.
        assert_eq!(
            (m.cir_bps, m.cbs_bytes, m.ebs_bytes),
            (1_000_000, 31_250, 0)
        );
        assert_eq!(a.violate, Action::SetDscp(10));
        assert_eq!(a.exceed, Action::SetDscp(10));
    }

    #[test]
    fn reservation_tables_are_the_policys_and_class_maps_ask_about_them() {
        for (text, key) in [
            (
                include_str!("../../../../plans/qos/seed001-flow-label.toml"),
                KeyKind::FlowLabel,
            ),
            (
                include_str!("../../../../plans/qos/seed001-5-tuple.toml"),
                KeyKind::FiveTuple,
            ),
        ] {
            let p = QosConfig::parse(text)
                .unwrap()
                .params_for("to-r2", 10_000_000)
                .unwrap()
                .unwrap();
            assert_eq!(p.reservations.len(), 1);
            let r = &p.reservations[0];
            assert_eq!((r.key, r.max_flows), (key, 1000));
            assert_eq!(r.admit.as_ref().unwrap().name, "audio");
            assert_eq!(
                p.classes[0].map.as_ref().unwrap().conds,
                vec![Cond::Reserved(0)]
            );
        }
        let base = include_str!("../../../../plans/qos/seed001-flow-label.toml");
        for (from, to, want) in [
            (
                "key = \"flow-label\"",
                "key = \"label\"",
                "\"5-tuple\" or \"flow-label\"",
            ),
            (
                "admit = \"audio\"",
                "admit = \"nope\"",
                "admit 'nope': no class_map",
            ),
            (
                "admit = \"audio\"",
                "admit = \"reserved\"",
                "may not itself ask",
            ),
            (
                "name = \"rsvp\"\nkey",
                "name = \"other\"\nkey",
                "does not declare",
            ),
            (
                "max_flows = 1000",
                "max_flows = 0",
                "max_flows 1 to 1000000",
            ),
        ] {
            let e = QosConfig::parse(&base.replace(from, to)).unwrap_err();
            assert!(e.to_string().contains(want), "{to}: {e}");
            assert!(e.line.is_some(), "{to}: {e}");
        }
    }

    #[test]
    fn default_is_the_dscp_name_the_errors_offer_for_class_selector_0() {
        let text = "version = 1\n[[class_map]]\nname = \"be\"\ndscp = [\"default\", \"Default\", 10]\n[[policy_map]]\nname = \"p\"\n[[policy_map.class]]\nname = \"be\"\nbandwidth = \"10%\"\nset_dscp = \"default\"\npolice = { cir = \"1mbit\", exceed = \"set-dscp-transmit default\" }\nrandom_detect = { dscp = [{ dscp = \"default\", min = 10, max = 20 }] }\n[[policy_map.class]]\nname = \"class-default\"\n[[service_policy]]\ninterface = \"e0\"\noutput = \"p\"\n";
        let q = QosConfig::parse(text).unwrap();
        let p = q.params_for("e0", 10_000_000).unwrap().unwrap();
        let c = &p.classes[0];
        assert_eq!(c.map.as_ref().unwrap().conds, [Cond::Dscp(vec![0, 0, 10])]);
        assert_eq!(c.set_dscp, Some(0));
        let Some(PoliceParams::Single(_, actions)) = c.police else {
            panic!("a single-rate policer: {:?}", c.police)
        };
        assert_eq!(actions.exceed, Action::SetDscp(0));
        assert_eq!(c.wred.as_ref().unwrap().profiles[0].0, 0);
        // What the error offers is what the parser takes; a wrong name is still wrong.
        let bad = text.replace("[\"default\", ", "[\"defualt\", ");
        let e = QosConfig::parse(&bad).unwrap_err();
        assert!(
            e.message
                .contains("'defualt': a name (ef, af41, cs1, default)"),
            "{e}"
        );
    }
}
