//! The QoS file's RSVP keys: whether the router takes part in RSVP (RFC 2205), with
//! which timers, how much of each interface reservations may take, and which tables
//! RSVP fills.
//!
//! ```toml
//! [rsvp]                        # present: the router intercepts RSVP
//! refresh = "30s"               # R, the refresh period (default 30 s; e.g. "200ms")
//! keep = 3                      # K, refreshes that may be lost in a row (default 3)
//!
//! [[policy_map.reservation]]
//! name = "rsvp"
//! key = "flow-label"
//! signalled = true              # filled by RSVP Resv messages, not by first packets
//!
//! [[service_policy]]
//! interface = "to-r2"
//! output = "intserv"
//! rsvp_bandwidth = "7mbit"      # or "70%" of the link: what reservations may take here
//! ```
//!
//! `rsvp_bandwidth` is IOS's `ip rsvp bandwidth`: the admission budget of the interface.
//! It needs a `signalled` table in the interface's policy and may not exceed the link's
//! rate, nor the bandwidth of the classes that serve the signalled tables (when those
//! are given as fixed rates or percentages). A `signalled` table takes no `admit`.

use toml::Spanned;
use wire::time::Duration;

use super::file::{err, parse_amount, Amount, Bandwidth, File, ReservationFile, RsvpFile};
use super::{line_at, PolicySpec, QosConfig, QosError};
use qos::classify::Cond;

/// R when `[rsvp]` does not set it: 30 s (RFC 2205 §3.7).
pub const DEFAULT_REFRESH: Duration = Duration::from_secs(30);
/// K when `[rsvp]` does not set it: 3 (RFC 2205 §3.7).
pub const DEFAULT_KEEP: u32 = 3;
/// The largest K taken.
pub const MAX_KEEP: u32 = 100;

/// The `[rsvp]` table: the router's RSVP timers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RsvpParams {
    /// R, the refresh period: a whole number of milliseconds (TIME_VALUES carries
    /// milliseconds), 1 ms to 2³² − 1 ms.
    pub refresh: Duration,
    /// K: state lives (K + 0.5) · 1.5 · R without a refresh (RFC 2205 §3.7), 1 to
    /// [`MAX_KEEP`].
    pub keep: u32,
}

impl Default for RsvpParams {
    fn default() -> Self {
        Self {
            refresh: DEFAULT_REFRESH,
            keep: DEFAULT_KEEP,
        }
    }
}

/// The RSVP part of a checked QoS file.
#[derive(Clone, Debug, Default, PartialEq)]
pub(super) struct RsvpConfig {
    params: Option<RsvpParams>,
    /// `rsvp_bandwidth` per interface, with its service policy's line.
    bandwidth: Vec<(String, Amount, Option<usize>)>,
}

/// A reservation table's `signalled`, refused together with `admit`.
pub(super) fn signalled(rf: &ReservationFile, line: Option<usize>) -> Result<bool, QosError> {
    if rf.signalled && rf.admit.is_some() {
        return Err(err(
            line,
            format!(
                "reservation '{}': signalled or admit, not both (RSVP fills a signalled table, first packets never do)",
                rf.name
            ),
        ));
    }
    Ok(rf.signalled)
}

/// `[rsvp]` and the service policies' `rsvp_bandwidth`, checked against the policies.
pub(super) fn parse(
    text: &str,
    file: &File,
    policies: &std::collections::BTreeMap<String, PolicySpec>,
) -> Result<RsvpConfig, QosError> {
    let params = file.rsvp.as_ref().map(|r| params(text, r)).transpose()?;
    if params.is_none() {
        let tables = file
            .policy_map
            .iter()
            .flat_map(|p| &p.get_ref().reservation);
        if let Some(r) = tables.into_iter().find(|r| r.get_ref().signalled) {
            return Err(err(
                line_at(text, r.span().start),
                format!(
                    "reservation '{}' is signalled, but the file has no [rsvp] table: nothing would fill it",
                    r.get_ref().name
                ),
            ));
        }
    }
    let mut bandwidth = Vec::new();
    for s in &file.service_policy {
        let sf = s.get_ref();
        let Some(b) = &sf.rsvp_bandwidth else {
            continue;
        };
        let line = line_at(text, s.span().start);
        let at = |m: String| err(line, format!("service_policy on {}: {m}", sf.interface));
        let amount = parse_amount(b).ok_or_else(|| {
            at(format!(
                "rsvp_bandwidth '{b}': a bit rate (7mbit) or a percentage of the link (70%)"
            ))
        })?;
        if params.is_none() {
            return Err(at(
                "rsvp_bandwidth needs an [rsvp] table (the router takes no RSVP without one)"
                    .into(),
            ));
        }
        let signalled = policies
            .get(&sf.output)
            .is_some_and(|p| p.reservations.iter().any(|r| r.signalled));
        if !signalled {
            return Err(at(format!(
                "rsvp_bandwidth, but policy_map '{}' has no signalled reservation table for RSVP to fill",
                sf.output
            )));
        }
        bandwidth.push((sf.interface.clone(), amount, line));
    }
    Ok(RsvpConfig { params, bandwidth })
}

fn params(text: &str, r: &Spanned<RsvpFile>) -> Result<RsvpParams, QosError> {
    let line = line_at(text, r.span().start);
    let rf = r.get_ref();
    let refresh = match &rf.refresh {
        None => DEFAULT_REFRESH,
        Some(s) => {
            let d = traffic::units::parse_duration(s).ok();
            let ns = d.map_or(0, |d| d.as_nanos());
            let ms = ns / 1_000_000;
            if ns % 1_000_000 != 0 || ms == 0 || ms > u64::from(u32::MAX) {
                return Err(err(
                    line,
                    format!("[rsvp] refresh '{s}': a whole number of milliseconds from 1ms to 4294967295ms, e.g. 30s or 200ms"),
                ));
            }
            Duration::from_millis(ms)
        }
    };
    let keep = rf.keep.unwrap_or(DEFAULT_KEEP);
    if !(1..=MAX_KEEP).contains(&keep) {
        return Err(err(
            line,
            format!("[rsvp] keep {keep}: 1 to {MAX_KEEP} refreshes"),
        ));
    }
    Ok(RsvpParams { refresh, keep })
}

impl PolicySpec {
    /// The bandwidth, in bit/s on a link of `link_bps`, of the classes that match on a
    /// signalled table (priority or fixed bandwidth); `None` when one of them has none or
    /// only a remaining percentage.
    fn signalled_classes_bps(&self, link_bps: u64) -> Option<u64> {
        let mut sum = 0u64;
        let mut any = false;
        for c in &self.classes {
            let Some(map) = &c.map else { continue };
            let serves = map.conds.iter().any(|cond| {
                matches!(cond, Cond::Reserved(i)
                    if self.reservations.get(usize::from(*i)).is_some_and(|r| r.signalled))
            });
            if !serves {
                continue;
            }
            any = true;
            let ((Some((amount, _)), _) | (None, Some(Bandwidth::Fixed(amount)))) =
                (c.priority, c.bandwidth)
            else {
                return None;
            };
            sum += match amount {
                Amount::Bps(b) => b,
                Amount::Percent(p) if link_bps > 0 => (link_bps as f64 * p / 100.0).round() as u64,
                Amount::Percent(_) => return None,
            };
        }
        any.then_some(sum)
    }
}

impl QosConfig {
    /// The `[rsvp]` table: `Some` when the router takes part in RSVP.
    pub fn rsvp(&self) -> Option<RsvpParams> {
        self.rsvp.params
    }

    /// `interface`'s `rsvp_bandwidth` in bit/s on a link of `link_bps` (0 = unlimited):
    /// how much its reservations may take in all (`None`: not set, RSVP installs nothing
    /// there). Refused above the link's rate, above the bandwidth of the classes serving
    /// the signalled tables, or in percent of an unlimited link.
    pub fn rsvp_bandwidth_bps(
        &self,
        interface: &str,
        link_bps: u64,
    ) -> Result<Option<u64>, QosError> {
        let Some((_, amount, line)) = self.rsvp.bandwidth.iter().find(|(i, _, _)| i == interface)
        else {
            return Ok(None);
        };
        let at = |m: String| err(*line, format!("service_policy on {interface}: {m}"));
        let bps = match *amount {
            Amount::Bps(b) => b,
            Amount::Percent(p) if link_bps > 0 => (link_bps as f64 * p / 100.0).round() as u64,
            Amount::Percent(_) => {
                return Err(at(
                    "rsvp_bandwidth in percent needs a link rate (the interface has none)".into(),
                ))
            }
        };
        if link_bps > 0 && bps > link_bps {
            return Err(at(format!(
                "rsvp_bandwidth {bps} bit/s is above the link's {link_bps} bit/s"
            )));
        }
        let class_bps = self
            .policy_of(interface)
            .and_then(|p| p.signalled_classes_bps(link_bps));
        if let Some(c) = class_bps.filter(|&c| bps > c) {
            return Err(at(format!(
                "rsvp_bandwidth {bps} bit/s is above the {c} bit/s of the classes serving its signalled tables"
            )));
        }
        Ok(Some(bps))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SIGNALLED: &str = include_str!("../../../../plans/qos/seed001-rsvp-flow-label.toml");
    const TRANSIT: &str = include_str!("../../../../plans/qos/rsvp-transit.toml");

    #[test]
    fn the_rsvp_keys_are_read_with_their_defaults() {
        let q = QosConfig::parse(SIGNALLED).unwrap();
        assert_eq!(
            q.rsvp(),
            Some(RsvpParams {
                refresh: Duration::from_secs(30),
                keep: 3
            })
        );
        assert_eq!(
            q.rsvp_bandwidth_bps("to-r2", 10_000_000),
            Ok(Some(7_000_000))
        );
        assert_eq!(q.rsvp_bandwidth_bps("to-sender", 10_000_000), Ok(None));
        let p = q.params_for("to-r2", 10_000_000).unwrap().unwrap();
        assert_eq!(p.reservations.len(), 1);
        let r = &p.reservations[0];
        assert!(r.signalled && r.admit.is_none());
        assert_eq!((r.name.as_str(), r.max_flows), ("rsvp", 1000));

        let t = QosConfig::parse(TRANSIT).unwrap();
        assert_eq!(t.rsvp(), Some(RsvpParams::default()));
        assert!(t.service.is_empty() && t.policies.is_empty());

        let short = "version = 1\n[rsvp]\nrefresh = \"200ms\"\nkeep = 2\n";
        assert_eq!(
            QosConfig::parse(short).unwrap().rsvp(),
            Some(RsvpParams {
                refresh: Duration::from_millis(200),
                keep: 2
            })
        );
        // Without [rsvp] the router takes no part.
        let plain = include_str!("../../../../plans/qos/seed001-flow-label.toml");
        assert_eq!(QosConfig::parse(plain).unwrap().rsvp(), None);
    }

    #[test]
    fn rsvp_bandwidth_in_percent_follows_the_link() {
        let q = QosConfig::parse(&SIGNALLED.replace("\"7mbit\"", "\"70%\"")).unwrap();
        assert_eq!(
            q.rsvp_bandwidth_bps("to-r2", 20_000_000),
            Ok(Some(14_000_000))
        );
        let e = q.rsvp_bandwidth_bps("to-r2", 0).unwrap_err();
        assert!(e.to_string().contains("needs a link rate"), "{e}");
        // A fixed budget on an unlimited link: the classes' percentages cannot say.
        let q = QosConfig::parse(SIGNALLED).unwrap();
        assert_eq!(q.rsvp_bandwidth_bps("to-r2", 0), Ok(Some(7_000_000)));
    }

    #[test]
    fn rsvp_mistakes_are_refused_with_their_line() {
        let line_of =
            |text: &str, needle: &str| text.lines().position(|l| l.contains(needle)).unwrap() + 1;
        // (from, to, the message, the line's text: the table's or policy's first line)
        let cases = [
            (
                "signalled = true",
                "signalled = true\nadmit = \"audio\"",
                "signalled or admit, not both",
                "[[policy_map.reservation]]",
            ),
            ("[rsvp]\n", "[other]\n", "unknown field", "[other]"),
            (
                "refresh = \"30s\"",
                "refresh = \"0s\"",
                "[rsvp] refresh '0s'",
                "[rsvp]",
            ),
            (
                "refresh = \"30s\"",
                "refresh = \"1.5ms\"",
                "a whole number of milliseconds",
                "[rsvp]",
            ),
            (
                "refresh = \"30s\"",
                "refresh = \"soon\"",
                "[rsvp] refresh 'soon'",
                "[rsvp]",
            ),
            ("keep = 3", "keep = 0", "[rsvp] keep 0: 1 to 100", "[rsvp]"),
            (
                "rsvp_bandwidth = \"7mbit\"",
                "rsvp_bandwidth = \"lots\"",
                "rsvp_bandwidth 'lots'",
                "[[service_policy]]",
            ),
            (
                "signalled = true",
                "signalled = false",
                "has no signalled reservation table",
                "[[service_policy]]",
            ),
        ];
        // A class map an admit could name.
        let base = SIGNALLED.replace(
            "[[class_map]]\nname = \"reserved\"",
            "[[class_map]]\nname = \"audio\"\nprotocol = \"udp\"\n\n[[class_map]]\nname = \"reserved\"",
        );
        assert!(QosConfig::parse(&base).is_ok());
        for (from, to, want, at) in cases {
            assert!(base.contains(from), "{from}");
            let text = base.replace(from, to);
            let e = QosConfig::parse(&text).unwrap_err();
            assert!(e.to_string().contains(want), "{to}: {e}");
            assert_eq!(e.line, Some(line_of(&text, at)), "{to}: {e}");
        }
        // Without [rsvp]: a signalled table, or rsvp_bandwidth, would never be used.
        let no_rsvp = SIGNALLED.replace("[rsvp]\nrefresh = \"30s\"\nkeep = 3\n", "");
        assert_ne!(no_rsvp, SIGNALLED);
        let e = QosConfig::parse(&no_rsvp).unwrap_err();
        assert!(e.to_string().contains("no [rsvp] table"), "{e}");
        assert_eq!(
            e.line,
            Some(line_of(&no_rsvp, "[[policy_map.reservation]]"))
        );
        let plain = include_str!("../../../../plans/qos/seed001-flow-label.toml");
        let e = QosConfig::parse(&plain.replace(
            "output = \"intserv\"",
            "output = \"intserv\"\nrsvp_bandwidth = \"1mbit\"",
        ))
        .unwrap_err();
        assert!(e.to_string().contains("needs an [rsvp] table"), "{e}");
    }

    #[test]
    fn rsvp_bandwidth_above_the_link_or_its_classes_is_refused() {
        // 12 Mbit/s on a 10 Mbit/s link; 8 Mbit/s over the 70 % class (7 Mbit/s).
        for (budget, want) in [
            (
                "12mbit",
                "rsvp_bandwidth 12000000 bit/s is above the link's 10000000 bit/s",
            ),
            (
                "8mbit",
                "above the 7000000 bit/s of the classes serving its signalled tables",
            ),
        ] {
            let text = SIGNALLED.replace("\"7mbit\"", &format!("\"{budget}\""));
            let q = QosConfig::parse(&text).unwrap();
            let e = q.rsvp_bandwidth_bps("to-r2", 10_000_000).unwrap_err();
            assert!(e.to_string().contains(want), "{e}");
            assert!(e.to_string().starts_with(&format!(
                "line {}: service_policy on to-r2: ",
                text.lines()
                    .position(|l| l == "[[service_policy]]")
                    .unwrap()
                    + 1
            )));
            // The router builds its policies through params_for: refused there too.
            assert_eq!(q.params_for("to-r2", 10_000_000).unwrap_err(), e);
        }
        // 8 Mbit/s is fine on a 20 Mbit/s link (the class has 14).
        let q = QosConfig::parse(&SIGNALLED.replace("\"7mbit\"", "\"8mbit\"")).unwrap();
        assert_eq!(
            q.rsvp_bandwidth_bps("to-r2", 20_000_000),
            Ok(Some(8_000_000))
        );
        // A class with only a remaining percentage does not bound it.
        let rem = SIGNALLED
            .replace("bandwidth = \"70%\"", "bandwidth_remaining = \"70%\"")
            .replace("\"7mbit\"", "\"9mbit\"");
        let q = QosConfig::parse(&rem).unwrap();
        assert_eq!(
            q.rsvp_bandwidth_bps("to-r2", 10_000_000),
            Ok(Some(9_000_000))
        );
    }

    #[test]
    fn every_example_qos_file_parses_and_resolves_on_a_10_mbit_link() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../plans/qos");
        let mut n = 0;
        for e in std::fs::read_dir(&dir).unwrap() {
            let path = e.unwrap().path();
            if path.extension().is_none_or(|x| x != "toml") {
                continue;
            }
            let text = std::fs::read_to_string(&path).unwrap();
            let q = QosConfig::parse(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            for (iface, _, _) in &q.service {
                q.params_for(iface, 10_000_000)
                    .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
                q.rsvp_bandwidth_bps(iface, 10_000_000).unwrap();
            }
            n += 1;
        }
        assert!(n >= 7, "{n} QoS files in {}", dir.display());
    }
}
