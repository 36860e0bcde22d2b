//! Fitting a battery to its path, so that what it compares is IPv4 against IPv6 and not
//! fragmentation or a bottleneck's queue (docs/compare.md, "A battery that fits the
//! path"). Sans-IO: the path comes in as [`PathLimits`] (from a lab's topology or from
//! the measured `path.json`), the battery as its parsed [`Plan`], and out come the
//! factors to set ([`crate::plan::select::Selection::factors`]) and notes for the user.
//!
//! - **Sizes.** The largest UDP payload that crosses both families unfragmented is
//!   `min(MTU₄ − 28, MTU₆ − 48)` (IPv4 20 + UDP 8, RFC 791 and 768; IPv6 40 + UDP 8,
//!   RFC 8200 §3): 1452 bytes on a 1500-byte path, where 1472 fits IPv4 but fragments
//!   over IPv6. Larger sizes of the sweep become it (once). Sizes the user gave are
//!   kept, and a note names each that fragments and over which family. A TCP
//!   message's size is the application's write; the kernel cuts it into segments of
//!   the path's MSS, so TCP never fragments.
//! - **Rates.** The size tests share one rate: each of its values whose largest test
//!   would offer more than `share` of the path's capacity over IPv6 (the family with the
//!   larger headers) becomes the one packet rate that keeps that test at `share`, never
//!   a higher one. A test's offered rate counts every IP packet of a message (a TCP
//!   message of more than one MSS is several segments, each with 20 + 12 bytes of TCP
//!   header and timestamps) and the link's own bytes per packet when known (a lab's
//!   routers count 14 bytes of Ethernet header). The VoIP and game models keep their own
//!   rates; a note names one that offers more than the share. A rate the user gave is
//!   kept, with a note when it offers more.
//! - **TCP bulk** fills the path by design: its throughput then compares each family's
//!   goodput at capacity, where IPv6's 20 more bytes of header per segment leave it
//!   [`bulk_tcp_expectation`] lower (1.4 % on a 1500-byte path): a real effect of the
//!   headers, which the verdicts compare and the summary names.
//!
//! What the verdict layer leaves uncompared ([`caveats`], `results::compare::Caveat`)
//! uses the same arithmetic: a point whose packets exceed a family's path MTU, or whose
//! offered rate exceeds [`OVERSUBSCRIBED`] of the capacity.

use serde::{Deserialize, Serialize};
use wire::control::Protocol;

use results::compare::{Caveat, OVERSUBSCRIBED};
use results::path::{Family, PathFacts};
use traffic::{FlowSpec, Rate};

use crate::plan::{Plan, Point};

/// The share of the path's capacity the size tests are fitted to by default.
pub const DEFAULT_SHARE: f64 = 0.5;
/// The format of [`FitDoc`] (`DIR/fit.json`).
pub const FIT_FORMAT_VERSION: u32 = 1;

/// Bytes of TCP header a Linux segment carries: 20, and 12 of the timestamps option
/// (RFC 7323 §3, on by default).
const TCP_SEGMENT_HEADER: u32 = 20 + 12;
/// Bytes before each TCP message's body on the stream (`wire::frame`'s length prefix).
const TCP_MESSAGE_PREFIX: u32 = wire::frame::PREFIX_LEN as u32;

/// What fitting knows of the path.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct PathLimits {
    /// IPv4's path MTU, bytes of IP packet; `None` when not known.
    pub mtu4: Option<u32>,
    /// IPv6's path MTU.
    pub mtu6: Option<u32>,
    /// The path's capacity, bit/s, as its links count it; `None` when not known.
    pub capacity_bps: Option<u64>,
    /// Bytes the capacity counts per IP packet beyond the packet: 14 on a lab's
    /// emulated link (its routers count Ethernet frames as `AF_PACKET` sees them), 0
    /// when the capacity is a measured goodput.
    pub link_bytes: u32,
}

impl PathLimits {
    /// The limits `path.json` gives: each family's path MTU and the capacity, the least
    /// of both directions measured (a fact not measured is not known).
    pub fn from_facts(facts: &PathFacts) -> Self {
        let least = |xs: Vec<u64>| xs.into_iter().min();
        let mtu = |family: Family| {
            let f = facts.families.iter().find(|f| f.family == family)?;
            let dirs = [&f.forward, &f.reverse];
            least(
                dirs.iter()
                    .filter_map(|d| d.pmtu.measured().map(|p| u64::from(p.bytes)))
                    .collect(),
            )
            .map(|b| b as u32)
        };
        let capacities: Vec<&results::path::Capacity> = facts
            .families
            .iter()
            .flat_map(|f| [&f.forward, &f.reverse])
            .filter_map(|d| d.capacity.measured())
            .collect();
        let topology = !capacities.is_empty() && capacities.iter().all(|c| c.how == "topology");
        Self {
            mtu4: mtu(Family::Ipv4),
            mtu6: mtu(Family::Ipv6),
            capacity_bps: least(capacities.iter().map(|c| c.bps as u64).collect()),
            link_bytes: if topology {
                wire::overhead::ETHERNET_HEADER
            } else {
                0
            },
        }
    }

    /// A family's path MTU.
    pub fn mtu(&self, family: u8) -> Option<u32> {
        if family == 6 {
            self.mtu6
        } else {
            self.mtu4
        }
    }

    /// The largest UDP payload that crosses both families unfragmented,
    /// `min(MTU₄ − 28, MTU₆ − 48)`; `None` unless both MTUs are known.
    pub fn max_udp_payload(&self) -> Option<u32> {
        Some((self.mtu4?.saturating_sub(28)).min(self.mtu6?.saturating_sub(48)))
    }

    /// The IP packet a UDP payload of `size` bytes needs over `family` when it exceeds
    /// the family's path MTU (it fragments), with that MTU.
    pub fn fragments(&self, family: u8, size: u32) -> Option<(u64, u32)> {
        let mtu = self.mtu(family)?;
        let ip = u64::from(size) + u64::from(udp_headers(family));
        (ip > u64::from(mtu)).then_some((ip, mtu))
    }

    /// Bytes one message of `size` takes on the path over `family`, as its capacity
    /// counts them: every IP packet (fragments of a UDP datagram, segments of a TCP
    /// message of `size` + 4 bytes at the path's MSS with timestamps) and the link's
    /// bytes for each. `None` when the family's MTU is not known.
    pub fn message_bytes(&self, protocol: Protocol, family: u8, size: u32) -> Option<u64> {
        let mtu = self.mtu(family)?;
        let ip_header = if family == 6 { 40 } else { 20 };
        let (packets, ip_bytes) = match protocol {
            Protocol::Udp => {
                let ip = if family == 6 {
                    wire::overhead::Ip::V6
                } else {
                    wire::overhead::Ip::V4
                };
                let c =
                    wire::overhead::carry(ip, wire::overhead::Transport::Udp, size, mtu).ok()?;
                (c.packets, c.ip_bytes)
            }
            Protocol::Tcp => {
                let body = u64::from(size) + u64::from(TCP_MESSAGE_PREFIX);
                let mss = u64::from(mtu.checked_sub(ip_header + TCP_SEGMENT_HEADER)?).max(1);
                let segments = body.div_ceil(mss).max(1);
                (
                    segments,
                    body + segments * u64::from(ip_header + TCP_SEGMENT_HEADER),
                )
            }
        };
        Some(ip_bytes + packets * u64::from(self.link_bytes))
    }

    /// The rate a flow of `spec` offers over `family`, bit/s as the capacity counts
    /// them: its mean packet rate (`copies` of it) times [`PathLimits::message_bytes`]
    /// of its mean size;
    /// `None` for an unpaced flow, or when the MTU is not known.
    pub fn offered_bps(&self, spec: &FlowSpec, copies: u32, family: u8) -> Option<f64> {
        let pps = spec.mean_pps()?;
        let bytes = self.message_bytes(spec.protocol, family, mean_size(spec))?;
        Some(pps * f64::from(copies) * bytes as f64 * 8.0)
    }
}

/// A flow's mean payload: its size distribution's mean (a game model's), rounded, or
/// its constant size.
pub fn mean_size(spec: &FlowSpec) -> u32 {
    spec.size_dist
        .as_ref()
        .and_then(traffic::distribution::Dist::mean)
        .filter(|m| m.is_finite() && *m > 0.0)
        .map_or(spec.size_bytes, |m| m.round() as u32)
}

/// IP and UDP header bytes: 28 over IPv4, 48 over IPv6.
fn udp_headers(family: u8) -> u32 {
    if family == 6 {
        48
    } else {
        28
    }
}

/// Why a point of the battery is not compared, from its flow and the path: it fragments
/// over a family (UDP only), or it offers more than [`OVERSUBSCRIBED`] of the capacity
/// over a family (not a TCP bulk flow, which fills the path by design).
pub fn caveats(spec: &FlowSpec, copies: u32, path: &PathLimits) -> Vec<Caveat> {
    let mut out = Vec::new();
    if spec.protocol == Protocol::Udp {
        for family in [4, 6] {
            if let Some((ip_bytes, mtu)) = path.fragments(family, mean_size(spec)) {
                out.push(Caveat::Fragments {
                    family,
                    ip_bytes,
                    mtu,
                });
            }
        }
    }
    if let (Some(cap), false) = (path.capacity_bps, fills_the_path(spec)) {
        for family in [4, 6] {
            let Some(offered) = path.offered_bps(spec, copies, family) else {
                continue;
            };
            if offered > OVERSUBSCRIBED * cap as f64 {
                out.push(Caveat::Oversubscribed {
                    family,
                    offered_bps: offered.round() as u64,
                    capacity_bps: cap,
                });
            }
        }
    }
    out
}

/// Whether a flow fills the path by design: TCP bulk (its congestion control finds the
/// capacity), which the verdicts compare as goodput at capacity.
pub fn fills_the_path(spec: &FlowSpec) -> bool {
    spec.protocol == Protocol::Tcp && (spec.bulk || spec.unpaced)
}

/// How much lower IPv6's TCP goodput is expected than IPv4's on a full path, %: the
/// payload of a full segment over the bytes it takes, `(MTU₆ − 72)/(MTU₆ + L)` against
/// `(MTU₄ − 52)/(MTU₄ + L)` (headers with timestamps, `L` the link's bytes); −1.38 % on a
/// 1500-byte path. `None` unless both MTUs are known.
pub fn bulk_tcp_expectation(path: &PathLimits) -> Option<f64> {
    let share = |mtu: u32, header: u32| {
        f64::from(mtu.saturating_sub(header + TCP_SEGMENT_HEADER))
            / f64::from(mtu + path.link_bytes)
    };
    let (v4, v6) = (share(path.mtu4?, 20), share(path.mtu6?, 40));
    Some((v6 / v4 - 1.0) * 100.0)
}

/// What the user gave on the command line, which fitting keeps as given.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Given {
    /// `--sizes`.
    pub sizes: bool,
    /// `--rate`.
    pub rate: bool,
}

/// What a note is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum NoteKind {
    /// A size of the sweep became the largest that fits both families.
    SizeFitted,
    /// A size kept as given fragments over a family.
    SizeFragments,
    /// A rate of the sweep became the one that keeps its largest test at the share.
    RateFitted,
    /// A rate kept as given, or a model's own rate, offers more than the share.
    AboveShare,
    /// A flow that fills the path by design (bulk).
    FillsPath,
    /// Something fitting could not change, or does not know.
    NotFitted,
}

/// A note for the user: what fitting changed, or what it left and why.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct FitNote {
    /// What it is about.
    pub kind: NoteKind,
    /// One sentence.
    pub text: String,
}

/// A fitting error.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum FitError {
    /// The share is not a part of the capacity.
    #[error("a load share of {0} is not above 0 % and at most 100 %")]
    Share(f64),
}

/// What fitting makes of a battery.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Fitted {
    /// The factors to set (`size`, `rate`), as [`crate::plan::select::Selection`]
    /// takes them; empty when the battery fits as it is.
    pub factors: Vec<(String, toml::Value)>,
    /// What changed and what did not, in order.
    pub notes: Vec<FitNote>,
}

/// `DIR/fit.json`: how `compare` fitted its battery to the path.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct FitDoc {
    /// [`FIT_FORMAT_VERSION`].
    pub format_version: u32,
    /// Whether the battery ran fitted (`false` with `--no-fit`: the notes then say what
    /// does not fit).
    pub applied: bool,
    /// The share of the capacity the size tests were fitted to.
    pub share: f64,
    /// The path as fitting saw it.
    pub path: PathLimits,
    /// The factors set, each with its values as the plan writes them.
    pub factors: Vec<(String, Vec<String>)>,
    /// The notes, in order.
    pub notes: Vec<FitNote>,
}

impl FitDoc {
    /// The document of `fitted`, run (`applied`) or not, at `share` over `path`.
    pub fn new(fitted: &Fitted, applied: bool, share: f64, path: PathLimits) -> Self {
        let text = |v: &toml::Value| match v {
            toml::Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        Self {
            format_version: FIT_FORMAT_VERSION,
            applied,
            share,
            path,
            factors: fitted
                .factors
                .iter()
                .map(|(k, v)| {
                    let values = v
                        .as_array()
                        .map_or_else(Vec::new, |a| a.iter().map(text).collect());
                    (k.clone(), values)
                })
                .collect(),
            notes: fitted.notes.clone(),
        }
    }
}

/// A point's measured flow as `send` would read its options (a `file:` distribution is
/// not read: such a point is left as it is), and how many copies it runs
/// (`--parallel`, `--calls`).
pub fn spec_of(point: &Point) -> Option<(FlowSpec, u32)> {
    let mut named = traffic::options::NamedOptions::new(|_| {
        Err(std::io::Error::other("fitting reads no files"))
    });
    for o in point.options() {
        named.set(&o.name, o.value.as_deref()).ok()?;
    }
    let specs = named.finish().ok()?.to_specs("fit".into(), 0).ok()?;
    let copies = u32::try_from(specs.flows.len()).ok()?;
    specs.flows.into_iter().next().map(|s| (s, copies))
}

fn mbit(bps: f64) -> String {
    format!("{:.3} Mbit/s", bps / 1e6)
}

fn pct(share: f64) -> String {
    format!("{:.0} %", share * 100.0)
}

/// The sweep's values of factor `key`, in first-seen order.
fn factor_values(sweep: &[(&Point, FlowSpec, u32)], key: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for (p, _, _) in sweep {
        if let Some(v) = p.factors.get(key).filter(|v| !out.contains(v)) {
            out.push(v.clone());
        }
    }
    out
}

/// The battery `plan` fitted to `path` at `share` of its capacity (module docs): the
/// factors to set and the notes. `given` keeps the user's sizes and rate.
pub fn fit(plan: &Plan, path: &PathLimits, given: Given, share: f64) -> Result<Fitted, FitError> {
    if !(share > 0.0 && share <= 1.0) {
        return Err(FitError::Share(share));
    }
    let mut out = Fitted::default();
    // The sweep's points (an extra point's factors name it), and the extra ones.
    let (sweep, extra): (Vec<_>, Vec<_>) = plan
        .points
        .iter()
        .filter_map(|p| spec_of(p).map(|(s, n)| (p, s, n)))
        .partition(|(p, _, _)| !p.factors.contains_key("point"));
    let fitted_size = fit_sizes(&sweep, path, given, &mut out);
    fit_rates(&sweep, path, given, share, &fitted_size, &mut out);
    note_points(&sweep, &extra, path, share, &mut out);
    Ok(out)
}

/// The sweep's `size` factor within the largest UDP payload (unless given), into
/// `out`; returns each size's fitted value.
fn fit_sizes(
    sweep: &[(&Point, FlowSpec, u32)],
    path: &PathLimits,
    given: Given,
    out: &mut Fitted,
) -> Vec<(u32, u32)> {
    let sizes: Vec<u32> = factor_values(sweep, "size")
        .iter()
        .filter_map(|v| v.parse().ok())
        .collect();
    let udp = sweep.iter().any(|(_, s, _)| s.protocol == Protocol::Udp);
    let identity = sizes.iter().map(|&s| (s, s)).collect();
    if !udp || sizes.is_empty() {
        return identity;
    }
    let Some(max) = path.max_udp_payload() else {
        out.notes.push(FitNote {
            kind: NoteKind::NotFitted,
            text: "The path MTU is not known over both families: the sizes are as the plan gives them.".into(),
        });
        return identity;
    };
    if given.sizes {
        for &size in &sizes {
            for family in [4, 6] {
                if let Some((ip, mtu)) = path.fragments(family, size) {
                    out.notes.push(FitNote {
                        kind: NoteKind::SizeFragments,
                        text: format!(
                            "Size {size} fragments over IPv{family}: {size} + {} = {ip} > {mtu} (kept, as given; its UDP rows are not compared).",
                            udp_headers(family)
                        ),
                    });
                }
            }
        }
        return identity;
    }
    let map: Vec<(u32, u32)> = sizes.iter().map(|&s| (s, s.min(max))).collect();
    let mut values: Vec<u32> = Vec::new();
    for &(_, to) in &map {
        if !values.contains(&to) {
            values.push(to);
        }
    }
    if values != sizes {
        let (mtu4, mtu6) = (path.mtu4.unwrap_or(0), path.mtu6.unwrap_or(0));
        for &(from, to) in map.iter().filter(|(f, t)| f != t) {
            out.notes.push(FitNote {
                kind: NoteKind::SizeFitted,
                text: format!(
                    "Size {from} is {to}: the largest UDP payload that crosses both families unfragmented (IPv4 {to} + 28 ≤ {mtu4}, IPv6 {to} + 48 ≤ {mtu6}).",
                ),
            });
        }
        let array = values.iter().map(|&v| toml::Value::Integer(v.into()));
        out.factors
            .push(("size".into(), toml::Value::Array(array.collect())));
    }
    map
}

/// The sweep's `rate` factor within `share` of the capacity (unless given), into `out`.
fn fit_rates(
    sweep: &[(&Point, FlowSpec, u32)],
    path: &PathLimits,
    given: Given,
    share: f64,
    sizes: &[(u32, u32)],
    out: &mut Fitted,
) {
    let rates: Vec<Rate> = factor_values(sweep, "rate")
        .iter()
        .filter_map(|v| v.parse().ok())
        .collect();
    if rates.is_empty() {
        return;
    }
    let Some(cap) = path.capacity_bps else {
        out.notes.push(FitNote {
            kind: NoteKind::NotFitted,
            text: "The path's capacity is not known: the rates are as the plan gives them.".into(),
        });
        return;
    };
    let budget = share * cap as f64;
    // The sweep's tests as they will run: fitted size, and the bytes of one message
    // over the family that takes more.
    let tests: Vec<(Protocol, u32, u64)> = sweep
        .iter()
        .filter(|(_, s, _)| !(s.bulk || s.unpaced || s.idt_ms.is_some()))
        .filter_map(|(_, s, copies)| {
            let size = sizes
                .iter()
                .find(|(from, _)| *from == s.size_bytes)
                .map_or(s.size_bytes, |(_, to)| *to);
            let bytes = [4, 6]
                .iter()
                .filter_map(|&f| path.message_bytes(s.protocol, f, size))
                .max()?;
            Some((s.protocol, size, bytes * u64::from(*copies)))
        })
        .collect();
    // Each rate's largest offer over the tests, and the test that makes it.
    let offer = |r: Rate| {
        tests
            .iter()
            .map(|&(p, size, bytes)| (r.pps(size) * bytes as f64 * 8.0, p, size, bytes))
            .max_by(|a, b| a.0.total_cmp(&b.0))
    };
    let Some(worst) = tests.iter().map(|t| t.2).max() else {
        return;
    };
    let pps = ((budget / (8.0 * worst as f64)).floor() as u64).max(1);
    let fitted = Rate::MilliPps(pps * 1000);
    let mut values: Vec<Rate> = Vec::new();
    for &r in &rates {
        let Some((offered, p, size, bytes)) = offer(r) else {
            continue;
        };
        let over = offered > budget;
        let to = if over && !given.rate { fitted } else { r };
        if !values.contains(&to) {
            values.push(to);
        }
        let proto = if p == Protocol::Tcp { "TCP" } else { "UDP" };
        if over && given.rate {
            out.notes.push(FitNote {
                kind: NoteKind::AboveShare,
                text: format!(
                    "Rate {r} offers {} in its largest test ({proto}, size {size}, {bytes} bytes a message on the path), above {} of the path's {} (kept, as given).",
                    mbit(offered), pct(share), mbit(cap as f64)
                ),
            });
        } else if over {
            let (_, _, _, b) = offer(fitted).unwrap_or((0.0, p, size, bytes));
            out.notes.push(FitNote {
                kind: NoteKind::RateFitted,
                text: format!(
                    "Rate {r} is {fitted}: the largest test ({proto}, size {size}, {b} bytes a message on the path over IPv6) then offers {}, within {} of the path's {}; both families send the same packets.",
                    mbit(pps as f64 * b as f64 * 8.0), pct(share), mbit(cap as f64)
                ),
            });
        }
    }
    if values != rates {
        let array = values.iter().map(|r| toml::Value::String(r.to_string()));
        out.factors
            .push(("rate".into(), toml::Value::Array(array.collect())));
    }
}

/// Notes on the points fitting does not change: models above the share, bulk flows,
/// and sizes that are not a factor yet fragment.
fn note_points(
    sweep: &[(&Point, FlowSpec, u32)],
    extra: &[(&Point, FlowSpec, u32)],
    path: &PathLimits,
    share: f64,
    out: &mut Fitted,
) {
    let sized_by_factor = sweep.iter().any(|(p, _, _)| p.factors.contains_key("size"));
    let mut bulk_tcp = false;
    for (p, s, copies) in sweep.iter().chain(extra) {
        let name = p.factors.get("point").unwrap_or(&p.id);
        let is_extra = p.factors.contains_key("point");
        if s.bulk || s.unpaced {
            bulk_tcp |= s.protocol == Protocol::Tcp;
            if s.protocol == Protocol::Udp {
                out.notes.push(FitNote {
                    kind: NoteKind::FillsPath,
                    text: format!("'{name}' is UDP bulk: it offers what the path cannot carry by design, so it is not compared where it exceeds the capacity."),
                });
            }
            continue;
        }
        if s.protocol == Protocol::Udp && (is_extra || !sized_by_factor) {
            for family in [4, 6] {
                if let Some((ip, mtu)) = path.fragments(family, mean_size(s)) {
                    out.notes.push(FitNote {
                        kind: NoteKind::NotFitted,
                        text: format!(
                            "'{name}' sends {}-byte payloads, which fragment over IPv{family} ({ip} > {mtu}): not a size factor, so kept; not compared.",
                            mean_size(s)
                        ),
                    });
                }
            }
        }
        let Some(cap) = path.capacity_bps.filter(|_| is_extra) else {
            continue;
        };
        let offered = [4, 6]
            .iter()
            .filter_map(|&f| path.offered_bps(s, *copies, f))
            .fold(0.0, f64::max);
        if offered > share * cap as f64 {
            out.notes.push(FitNote {
                kind: NoteKind::AboveShare,
                text: format!(
                    "'{name}' offers {} at its own rate, above {} of the path's {} (kept: a model's rate is what it models).",
                    mbit(offered), pct(share), mbit(cap as f64)
                ),
            });
        }
    }
    if bulk_tcp {
        let expected = bulk_tcp_expectation(path).map_or(String::new(), |e| {
            format!(
                ", where IPv6's 20 more bytes of header per segment make its goodput {:.1} % lower",
                -e
            )
        });
        out.notes.push(FitNote {
            kind: NoteKind::FillsPath,
            text: format!("TCP bulk fills the path by design: its throughput compares each family's goodput at capacity{expected}: a real effect of the headers, not of the path."),
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The two-hop lab: 1500 bytes both families, 10 Mbit/s counting Ethernet headers.
    const TWO_HOP: PathLimits = PathLimits {
        mtu4: Some(1500),
        mtu6: Some(1500),
        capacity_bps: Some(10_000_000),
        link_bytes: 14,
    };

    fn battery(quick: bool) -> Plan {
        Plan::parse(include_str!("../../../../plans/compare.toml"), quick).unwrap()
    }

    fn factor(f: &Fitted, key: &str) -> Vec<String> {
        let v = f.factors.iter().find(|(k, _)| k == key).map(|(_, v)| v);
        v.and_then(toml::Value::as_array)
            .map_or_else(Vec::new, |a| {
                a.iter()
                    .map(|v| v.as_str().map_or_else(|| v.to_string(), str::to_owned))
                    .collect()
            })
    }

    #[test]
    fn message_bytes_count_every_packet_and_the_links_bytes() {
        use Protocol::{Tcp, Udp};
        // UDP: payload + 28 / + 48, + 14 of Ethernet.
        assert_eq!(TWO_HOP.message_bytes(Udp, 4, 1452), Some(1452 + 28 + 14));
        assert_eq!(TWO_HOP.message_bytes(Udp, 6, 1452), Some(1514));
        // 1472 over IPv6: two fragments, 1448 + 48 and 32 + 48 bytes of IP.
        assert_eq!(
            TWO_HOP.message_bytes(Udp, 6, 1472),
            Some(1496 + 80 + 2 * 14)
        );
        // TCP: 1456 bytes of stream in two segments (MSS 1448 / 1428 with timestamps).
        assert_eq!(
            TWO_HOP.message_bytes(Tcp, 4, 1452),
            Some(1456 + 2 * 52 + 2 * 14)
        );
        assert_eq!(TWO_HOP.message_bytes(Tcp, 6, 1452), Some(1628));
        assert_eq!(TWO_HOP.message_bytes(Tcp, 6, 64), Some(68 + 72 + 14));
        let unknown = PathLimits {
            mtu6: None,
            ..TWO_HOP
        };
        assert_eq!(unknown.message_bytes(Udp, 6, 64), None);
        assert_eq!(unknown.max_udp_payload(), None);
    }

    #[test]
    fn fit_caps_sizes_at_both_families_pmtu_and_names_user_sizes_that_fragment() {
        let plan = battery(true);
        let f = fit(&plan, &TWO_HOP, Given::default(), DEFAULT_SHARE).unwrap();
        assert_eq!(factor(&f, "size"), ["64", "512", "1024", "1452"]);
        let sized: Vec<&str> = f
            .notes
            .iter()
            .filter(|n| n.kind == NoteKind::SizeFitted)
            .map(|n| n.text.as_str())
            .collect();
        assert_eq!(
            sized,
            ["Size 1472 is 1452: the largest UDP payload that crosses both families unfragmented (IPv4 1452 + 28 ≤ 1500, IPv6 1452 + 48 ≤ 1500)."]
        );
        // IPv6 at 1400 bytes: 1352 for both; two sizes above it become one.
        let narrow = PathLimits {
            mtu6: Some(1400),
            ..TWO_HOP
        };
        let f = fit(&plan, &narrow, Given::default(), DEFAULT_SHARE).unwrap();
        assert_eq!(factor(&f, "size"), ["64", "512", "1024", "1352"]);
        // Sizes given are kept, and each that fragments is named with its family.
        let given = Given {
            sizes: true,
            rate: false,
        };
        let f = fit(&plan, &narrow, given, DEFAULT_SHARE).unwrap();
        assert_eq!(factor(&f, "size"), Vec::<String>::new());
        let fragments: Vec<&str> = f
            .notes
            .iter()
            .filter(|n| n.kind == NoteKind::SizeFragments)
            .map(|n| n.text.as_str())
            .collect();
        assert_eq!(
            fragments,
            ["Size 1472 fragments over IPv6: 1472 + 48 = 1520 > 1400 (kept, as given; its UDP rows are not compared)."]
        );
    }

    #[test]
    fn fit_scales_pps_to_the_share_counting_ipv6_headers_and_never_up() {
        // UDP alone: the largest test is 1452 bytes, 1514 a frame over IPv6:
        // 5,000,000 / (8 · 1514) = 412.8 → 412 pkt/s.
        let udp = Plan::parse(
            &include_str!("../../../../plans/compare.toml").replace(
                "protocol = [\"udp\", \"tcp\"], size",
                "protocol = [\"udp\"], size",
            ),
            true,
        )
        .unwrap();
        let f = fit(&udp, &TWO_HOP, Given::default(), DEFAULT_SHARE).unwrap();
        assert_eq!(factor(&f, "rate"), ["412pps"]);
        let fitted = f.notes.iter().find(|n| n.kind == NoteKind::RateFitted);
        assert_eq!(
            fitted.unwrap().text,
            "Rate 5000pps is 412pps: the largest test (UDP, size 1452, 1514 bytes a message on the path over IPv6) then offers 4.990 Mbit/s, within 50 % of the path's 10.000 Mbit/s; both families send the same packets."
        );
        // With TCP: a 1452-byte message is two segments, 1628 bytes over IPv6:
        // 5,000,000 / (8 · 1628) = 383.9 → 383.
        let f = fit(&battery(true), &TWO_HOP, Given::default(), DEFAULT_SHARE).unwrap();
        assert_eq!(factor(&f, "rate"), ["383pps"]);
        // At 25 %: 191.
        let f = fit(&battery(false), &TWO_HOP, Given::default(), 0.25).unwrap();
        assert_eq!(factor(&f, "rate"), ["191pps"]);
        // A rate within the share is never raised: 1 Gbit/s makes 5000pps fit as it is.
        let wide = PathLimits {
            capacity_bps: Some(1_000_000_000),
            ..TWO_HOP
        };
        let f = fit(&battery(true), &wide, Given::default(), DEFAULT_SHARE).unwrap();
        assert_eq!(factor(&f, "rate"), Vec::<String>::new());
        assert!(f.notes.iter().all(|n| n.kind != NoteKind::RateFitted));
        // A rate given is kept, with a note saying it offers too much.
        let given = Given {
            sizes: false,
            rate: true,
        };
        let f = fit(&battery(true), &TWO_HOP, given, DEFAULT_SHARE).unwrap();
        assert_eq!(factor(&f, "rate"), Vec::<String>::new());
        let above: Vec<&str> = f
            .notes
            .iter()
            .filter(|n| n.kind == NoteKind::AboveShare)
            .map(|n| n.text.as_str())
            .collect();
        assert_eq!(
            above,
            ["Rate 5000pps offers 65.120 Mbit/s in its largest test (TCP, size 1452, 1628 bytes a message on the path), above 50 % of the path's 10.000 Mbit/s (kept, as given)."]
        );
        // Unknown capacity: no rate change, one note.
        let blind = PathLimits {
            capacity_bps: None,
            ..TWO_HOP
        };
        let f = fit(&battery(true), &blind, Given::default(), DEFAULT_SHARE).unwrap();
        assert_eq!(factor(&f, "rate"), Vec::<String>::new());
        assert_eq!(f.notes.last().map(|n| n.kind), Some(NoteKind::NotFitted));
        assert_eq!(
            fit(&battery(true), &TWO_HOP, Given::default(), 0.0),
            Err(FitError::Share(0.0))
        );
    }

    #[test]
    fn models_keep_their_rates_and_bulk_tcp_is_named_with_its_header_effect() {
        // 200 kbit/s of path: G.711.1 (100 pkt/s of 92 bytes: 123.2 kbit/s with IPv6's
        // headers and Ethernet's) and Quake 3 (145.5 pkt/s of its sizes' mean) are above
        // its 50 %; G.711.2 (50 pkt/s of 172 bytes: 93.6 kbit/s) is not.
        let thin = PathLimits {
            capacity_bps: Some(200_000),
            ..TWO_HOP
        };
        let f = fit(&battery(true), &thin, Given::default(), DEFAULT_SHARE).unwrap();
        let above: Vec<&str> = f
            .notes
            .iter()
            .filter(|n| n.kind == NoteKind::AboveShare)
            .map(|n| n.text.split(" offers").next().unwrap_or(""))
            .collect();
        assert_eq!(above, ["'VoIP G.711.1'", "'Quake 3'"]);
        let bulk = Plan::parse(
            "version = 1\nname = \"b\"\nduration = \"1s\"\n[[points]]\nlabel = \"bulk\"\ntcp = true\nbulk = true\n",
            false,
        )
        .unwrap();
        let f = fit(&bulk, &TWO_HOP, Given::default(), DEFAULT_SHARE).unwrap();
        assert_eq!(f.factors, []);
        assert_eq!(
            f.notes,
            [FitNote {
                kind: NoteKind::FillsPath,
                text: "TCP bulk fills the path by design: its throughput compares each family's goodput at capacity, where IPv6's 20 more bytes of header per segment make its goodput 1.4 % lower: a real effect of the headers, not of the path.".into()
            }]
        );
        // 1428/1514 against 1448/1514.
        let e = bulk_tcp_expectation(&TWO_HOP).unwrap();
        assert!((e - (1428.0 / 1448.0 - 1.0) * 100.0).abs() < 1e-12, "{e}");
    }

    #[test]
    fn caveats_name_fragmenting_and_oversubscribed_flows_but_not_bulk_tcp() {
        let spec = |protocol, size_bytes, rate: &str| FlowSpec {
            protocol,
            size_bytes,
            rate: rate.parse().unwrap(),
            ..FlowSpec::default()
        };
        // 1472 over IPv6 fragments; at 5000 pkt/s it offers 60.56 Mbit/s over IPv4
        // (1514 bytes a frame) and 64.16 over IPv6 (two fragments, 1604 bytes).
        assert_eq!(
            caveats(&spec(Protocol::Udp, 1472, "5000pps"), 1, &TWO_HOP),
            [
                Caveat::Fragments {
                    family: 6,
                    ip_bytes: 1520,
                    mtu: 1500
                },
                Caveat::Oversubscribed {
                    family: 4,
                    offered_bps: 60_560_000,
                    capacity_bps: 10_000_000
                },
                Caveat::Oversubscribed {
                    family: 6,
                    offered_bps: 64_160_000,
                    capacity_bps: 10_000_000
                },
            ]
        );
        // 383 pkt/s of 1452 over TCP: 4.99 Mbit/s, fine.
        assert_eq!(
            caveats(&spec(Protocol::Tcp, 1452, "383pps"), 1, &TWO_HOP),
            []
        );
        // 750 pkt/s: 9.084 Mbit/s over IPv6 (> 9), 8.964 over IPv4 (≤ 9).
        assert_eq!(
            caveats(&spec(Protocol::Udp, 1452, "750pps"), 1, &TWO_HOP),
            [Caveat::Oversubscribed {
                family: 6,
                offered_bps: 9_084_000,
                capacity_bps: 10_000_000
            }]
        );
        let bulk = FlowSpec {
            bulk: true,
            unpaced: true,
            ..spec(Protocol::Tcp, 131_072, "1000pps")
        };
        assert_eq!(caveats(&bulk, 1, &TWO_HOP), []);
    }
}
