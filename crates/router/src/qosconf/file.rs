//! The QoS file as TOML reads it (serde), and the checked parsers of its values: class
//! maps, policers and WRED profiles. See the parent module for the format.

use std::net::IpAddr;

use qos::classify::{ClassMap, Cond};
use qos::police::{Action, Actions};
use qos::policy::PoliceParams;
use qos::tcm::{SrTcmParams, TrTcmParams};
use qos::wred::{CountRule, Profile, WredParams};
use serde::Deserialize;
use toml::Spanned;
use traffic::units::Rate;
use wire::ds::Dscp;

use super::QosError;

/// The placeholder of a class map's `reservation` until a policy names its table.
pub(super) const UNRESOLVED: u8 = u8::MAX;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct File {
    pub(super) version: Spanned<u32>,
    #[serde(default)]
    pub(super) description: String,
    #[serde(default)]
    pub(super) class_map: Vec<Spanned<ClassMapFile>>,
    #[serde(default)]
    pub(super) policy_map: Vec<Spanned<PolicyFile>>,
    #[serde(default)]
    pub(super) service_policy: Vec<Spanned<ServiceFile>>,
    #[serde(default)]
    pub(super) rsvp: Option<Spanned<RsvpFile>>,
}

/// The `[rsvp]` table as written; `qosconf::rsvp` checks it.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RsvpFile {
    #[serde(default)]
    pub(super) refresh: Option<String>,
    #[serde(default)]
    pub(super) keep: Option<u32>,
}

#[derive(Deserialize, Clone, Debug)]
#[serde(untagged)]
pub(super) enum Scalar {
    Int(i64),
    Str(String),
}

impl std::fmt::Display for Scalar {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Int(i) => write!(f, "{i}"),
            Self::Str(s) => write!(f, "{s}"),
        }
    }
}

#[derive(Deserialize, Clone, Debug)]
#[serde(untagged)]
pub(super) enum OneOrMany {
    One(String),
    Many(Vec<String>),
}

impl OneOrMany {
    fn list(&self) -> Vec<&str> {
        match self {
            Self::One(s) => vec![s.as_str()],
            Self::Many(v) => v.iter().map(String::as_str).collect(),
        }
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct ClassMapFile {
    pub(super) name: String,
    #[serde(default, rename = "match")]
    pub(super) mode: Option<String>,
    #[serde(default)]
    pub(super) dscp: Option<Vec<Scalar>>,
    #[serde(default)]
    pub(super) reservation: Option<String>,
    #[serde(default)]
    pub(super) protocol: Option<Scalar>,
    #[serde(default)]
    pub(super) src: Option<OneOrMany>,
    #[serde(default)]
    pub(super) dst: Option<OneOrMany>,
    #[serde(default)]
    pub(super) src_port: Option<Scalar>,
    #[serde(default)]
    pub(super) dst_port: Option<Scalar>,
    #[serde(default)]
    pub(super) ecn: Option<u8>,
    #[serde(default)]
    pub(super) flow_label: Option<u32>,
    #[serde(default)]
    pub(super) length: Option<Scalar>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct PolicyFile {
    pub(super) name: String,
    #[serde(default)]
    pub(super) tx_ring: Option<u32>,
    #[serde(default)]
    pub(super) max_reserved: Option<String>,
    #[serde(default)]
    pub(super) scheduler: Option<String>,
    #[serde(default)]
    pub(super) reservation: Vec<Spanned<ReservationFile>>,
    #[serde(default)]
    pub(super) class: Vec<Spanned<PolicyClassFile>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct ReservationFile {
    pub(super) name: String,
    pub(super) key: String,
    #[serde(default)]
    pub(super) max_flows: Option<usize>,
    #[serde(default)]
    pub(super) admit: Option<String>,
    #[serde(default)]
    pub(super) signalled: bool,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct PolicyClassFile {
    pub(super) name: String,
    #[serde(default)]
    pub(super) priority: Option<String>,
    #[serde(default)]
    pub(super) burst: Option<u64>,
    #[serde(default)]
    pub(super) bandwidth: Option<String>,
    #[serde(default)]
    pub(super) bandwidth_remaining: Option<String>,
    #[serde(default)]
    pub(super) queue_limit: Option<u32>,
    #[serde(default)]
    pub(super) set_dscp: Option<Scalar>,
    #[serde(default)]
    pub(super) police: Option<PoliceFile>,
    #[serde(default)]
    pub(super) random_detect: Option<WredFile>,
    #[serde(default)]
    pub(super) fair_queue: Option<bool>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct PoliceFile {
    pub(super) cir: String,
    #[serde(default)]
    pub(super) bc: Option<u64>,
    #[serde(default)]
    pub(super) be: Option<u64>,
    #[serde(default)]
    pub(super) pir: Option<String>,
    #[serde(default)]
    pub(super) conform: Option<String>,
    #[serde(default)]
    pub(super) exceed: Option<String>,
    #[serde(default)]
    pub(super) violate: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct WredFile {
    #[serde(default)]
    pub(super) weight: Option<u8>,
    #[serde(default)]
    pub(super) min: Option<u32>,
    #[serde(default)]
    pub(super) max: Option<u32>,
    #[serde(default)]
    pub(super) denominator: Option<u32>,
    #[serde(default)]
    pub(super) count_rule: Option<String>,
    #[serde(default)]
    pub(super) dscp: Vec<WredDscpFile>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct WredDscpFile {
    pub(super) dscp: Scalar,
    pub(super) min: u32,
    pub(super) max: u32,
    #[serde(default)]
    pub(super) denominator: Option<u32>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct ServiceFile {
    pub(super) interface: String,
    pub(super) output: String,
    #[serde(default)]
    pub(super) rsvp_bandwidth: Option<String>,
}

/// A share of the link, before the link's rate is known.

#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) enum Amount {
    Bps(u64),
    Percent(f64),
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) enum Bandwidth {
    Fixed(Amount),
    Remaining(f64),
}

pub(super) fn err(line: Option<usize>, message: impl Into<String>) -> QosError {
    QosError {
        line,
        message: message.into(),
    }
}

pub(super) fn parse_amount(s: &str) -> Option<Amount> {
    let t = s.trim();
    if let Some(p) = t.strip_suffix('%') {
        let v: f64 = p.trim().parse().ok()?;
        return (v > 0.0 && v <= 100.0).then_some(Amount::Percent(v));
    }
    match t.parse::<Rate>() {
        Ok(Rate::Bps(b)) if b > 0 => Some(Amount::Bps(b)),
        _ => None,
    }
}

pub(super) fn parse_dscp(s: &Scalar) -> Option<u8> {
    dscp_named(&s.to_string())
}

/// A DSCP by RFC name (`ef`, `af41`, `cs1`, `be`, `df`), as IOS writes it (`default`,
/// its name for class selector 0), or as a number 0-63.
pub(super) fn dscp_named(s: &str) -> Option<u8> {
    let t = s.trim();
    if t.eq_ignore_ascii_case("default") {
        return Some(0);
    }
    t.parse::<Dscp>().ok().map(Dscp::value)
}

pub(super) fn parse_range(s: &Scalar, max: u64) -> Option<(u64, u64)> {
    let t = s.to_string();
    let (a, b) = match t.split_once('-') {
        Some((a, b)) => (a.trim().parse().ok()?, b.trim().parse().ok()?),
        None => {
            let v = t.trim().parse().ok()?;
            (v, v)
        }
    };
    (a <= b && b <= max).then_some((a, b))
}

pub(super) fn parse_prefix(s: &str) -> Option<(IpAddr, u8)> {
    let p: wire::prefix::Prefix = s.parse().ok()?;
    Some((p.addr(), p.bits()))
}

pub(super) fn parse_action(s: &str) -> Option<Action> {
    let t = s.trim();
    match t {
        "transmit" => Some(Action::Transmit),
        "drop" => Some(Action::Drop),
        _ => {
            let d = t.strip_prefix("set-dscp-transmit")?;
            dscp_named(d).map(Action::SetDscp)
        }
    }
}

pub(super) fn class_map(c: &ClassMapFile, line: Option<usize>) -> Result<ClassMap, QosError> {
    let bad = |what: &str, v: &dyn std::fmt::Display, want: &str| {
        err(
            line,
            format!("class_map '{}': {what} '{v}': {want}", c.name),
        )
    };
    let mut conds = Vec::new();
    if let Some(list) = &c.dscp {
        if list.is_empty() {
            return Err(err(
                line,
                format!("class_map '{}': dscp = [] matches nothing", c.name),
            ));
        }
        let mut set = Vec::new();
        for d in list {
            set.push(
                parse_dscp(d)
                    .ok_or_else(|| bad("dscp", d, "a name (ef, af41, cs1, default) or 0-63"))?,
            );
        }
        conds.push(Cond::Dscp(set));
    }
    if let Some(p) = &c.protocol {
        let n = match p.to_string().to_ascii_lowercase().as_str() {
            "tcp" => 6,
            "udp" => 17,
            "icmp" => 1,
            "icmpv6" | "ipv6-icmp" => 58,
            "sctp" => 132,
            other => other
                .parse::<u8>()
                .map_err(|_| bad("protocol", p, "tcp, udp, icmp, icmpv6, sctp or 0-255"))?,
        };
        conds.push(Cond::Protocol(n));
    }
    for (v, src) in [(&c.src, true), (&c.dst, false)] {
        let Some(v) = v else { continue };
        let what = if src { "src" } else { "dst" };
        let mut prefixes = Vec::new();
        for s in v.list() {
            prefixes.push(parse_prefix(s).ok_or_else(|| {
                bad(
                    what,
                    &s,
                    "ADDRESS/LENGTH, e.g. 198.18.1.0/24, or a list of them",
                )
            })?);
        }
        conds.push(match (prefixes.as_slice(), src) {
            ([], _) => return Err(bad(what, &"[]", "at least one prefix")),
            ([(a, l)], true) => Cond::Src(*a, *l),
            ([(a, l)], false) => Cond::Dst(*a, *l),
            (_, true) => Cond::SrcAny(prefixes),
            (_, false) => Cond::DstAny(prefixes),
        });
    }
    for (v, src) in [(&c.src_port, true), (&c.dst_port, false)] {
        if let Some(s) = v {
            let (a, b) = parse_range(s, 65535).ok_or_else(|| {
                bad(
                    if src { "src_port" } else { "dst_port" },
                    s,
                    "a port or FROM-TO",
                )
            })?;
            conds.push(if src {
                Cond::SrcPort(a as u16, b as u16)
            } else {
                Cond::DstPort(a as u16, b as u16)
            });
        }
    }
    if let Some(e) = c.ecn {
        if e > 3 {
            return Err(bad("ecn", &e, "0-3"));
        }
        conds.push(Cond::Ecn(e));
    }
    if let Some(l) = c.flow_label {
        if l > 0xf_ffff {
            return Err(bad("flow_label", &l, "20 bits, 0-1048575"));
        }
        conds.push(Cond::FlowLabel(l));
    }
    if let Some(s) = &c.length {
        let (a, b) = parse_range(s, 65535).ok_or_else(|| bad("length", s, "bytes or FROM-TO"))?;
        conds.push(Cond::Len(a as usize, b as usize));
    }
    if c.reservation.is_some() {
        // The table's index is the policy's: set when a policy uses the class map.
        conds.push(Cond::Reserved(UNRESOLVED));
    }
    let all = match c.mode.as_deref() {
        None | Some("all") => true,
        Some("any") => false,
        Some(m) => return Err(bad("match", &m, "\"all\" or \"any\"")),
    };
    if conds.is_empty() {
        return Err(err(
            line,
            format!(
                "class_map '{}' has no condition (class-default already matches everything)",
                c.name
            ),
        ));
    }
    Ok(ClassMap {
        name: c.name.clone(),
        all,
        conds,
    })
}

pub(super) fn police(
    p: &PoliceFile,
    line: Option<usize>,
    class: &str,
) -> Result<PoliceParams, QosError> {
    let rate = |s: &str, what: &str| match s.parse::<Rate>() {
        Ok(Rate::Bps(b)) if b > 0 => Ok(b),
        _ => Err(err(
            line,
            format!("class '{class}': police {what} '{s}': a bit rate, e.g. 2mbit"),
        )),
    };
    let action = |v: &Option<String>, default: Action, what: &str| {
        match v {
        None => Ok(default),
        Some(s) => parse_action(s).ok_or_else(|| {
            err(
                line,
                format!(
                    "class '{class}': police {what} '{s}': transmit, drop, or set-dscp-transmit DSCP"
                ),
            )
        }),
    }
    };
    let cir = rate(&p.cir, "cir")?;
    let bc = p.bc.unwrap_or((cir / 32).max(1500));
    let be = p.be.unwrap_or(0);
    if bc == 0 {
        return Err(err(
            line,
            format!("class '{class}': police bc 0 passes nothing"),
        ));
    }
    let conform = action(&p.conform, Action::Transmit, "conform")?;
    let exceed = action(&p.exceed, Action::Drop, "exceed")?;
    let violate = action(&p.violate, exceed, "violate")?;
    let actions = Actions {
        conform,
        exceed,
        violate,
    };
    Ok(match &p.pir {
        None => PoliceParams::Single(
            SrTcmParams {
                cir_bps: cir,
                cbs_bytes: bc,
                ebs_bytes: be,
            },
            actions,
        ),
        Some(pir) => {
            let pir = rate(pir, "pir")?;
            if pir < cir {
                return Err(err(line, format!("class '{class}': police pir below cir")));
            }
            PoliceParams::Two(
                TrTcmParams {
                    cir_bps: cir,
                    cbs_bytes: bc,
                    pir_bps: pir,
                    pbs_bytes: bc.max(be),
                },
                actions,
            )
        }
    })
}

pub(super) fn wred(w: &WredFile, line: Option<usize>, class: &str) -> Result<WredParams, QosError> {
    let e = |m: String| err(line, format!("class '{class}': random_detect: {m}"));
    let weight = w.weight.unwrap_or(9);
    if !(1..=16).contains(&weight) {
        return Err(e(format!("weight {weight}: 1 to 16 (average weight 2^-n)")));
    }
    let profile = |min: u32, max: u32, d: Option<u32>| {
        let p = Profile {
            min_th: min,
            max_th: max,
            denominator: d.unwrap_or(10),
        };
        if p.min_th >= p.max_th || p.denominator == 0 {
            return Err(e(format!(
                "thresholds {min}/{max}, denominator {}: need min < max and a denominator ≥ 1",
                p.denominator
            )));
        }
        Ok(p)
    };
    let default = match (w.min, w.max) {
        (Some(min), Some(max)) => profile(min, max, w.denominator)?,
        (None, None) if !w.dscp.is_empty() => Profile {
            // IOS's precedence-0 default: half of max to max (qos.md §1.4), 20/40.
            min_th: 20,
            max_th: 40,
            denominator: 10,
        },
        _ => {
            return Err(e(
                "set both min and max (packets), or per-DSCP profiles".into()
            ))
        }
    };
    let mut profiles = Vec::new();
    for d in &w.dscp {
        let v =
            parse_dscp(&d.dscp).ok_or_else(|| e(format!("dscp '{}': a name or 0-63", d.dscp)))?;
        if profiles.iter().any(|(x, _)| *x == v) {
            return Err(e(format!("dscp '{}' has two profiles", d.dscp)));
        }
        profiles.push((v, profile(d.min, d.max, d.denominator)?));
    }
    let count_rule = match w.count_rule.as_deref() {
        None | Some("bernoulli") => CountRule::Bernoulli,
        Some("dpdk") => CountRule::Dpdk,
        Some("floyd-jacobson") => CountRule::FloydJacobson,
        Some(o) => {
            return Err(e(format!(
                "count_rule '{o}': bernoulli, dpdk or floyd-jacobson"
            )))
        }
    };
    Ok(WredParams {
        weight_exp: weight,
        profiles,
        default,
        count_rule,
        idle_packet_time_ns: None,
    })
}
