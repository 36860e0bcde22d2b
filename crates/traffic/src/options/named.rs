//! Flow options set one by one by name (`size`, `voip_header`, `--rate`), as plans
//! write them: each value goes through the same parsers as `send`'s flags, and the
//! options that `send` does not take together, or only with another, are refused here
//! too, so a plan's mistake is found, and placed, before anything runs.

use std::str::FromStr;

use super::checks::{FlowOptions, OptionError};
use super::reserve::{parse_filter, parse_service, ReserveOptions};
use super::values::{
    parse_dist, parse_flow_label, parse_meter, parse_vad, parse_voip_header, ValueError,
};
use crate::units::{parse_bytes, parse_duration};

/// Every flow option `send` takes: its long name and the other long names it answers to.
/// The `reserve` ones are the whole `send`'s ([`NamedOptions::finish_reserved`]).
const NAMES: [(&str, &[&str]); 40] = [
    ("udp", &[]),
    ("tcp", &[]),
    ("rate", &[]),
    ("size", &[]),
    ("bulk", &[]),
    ("parallel", &[]),
    ("calls", &[]),
    ("congestion", &[]),
    ("window", &[]),
    ("cport", &[]),
    ("omit", &[]),
    ("zerocopy", &[]),
    ("df", &[]),
    ("voip", &["codec"]),
    ("stream", &[]),
    ("ptime", &[]),
    ("app", &[]),
    ("idt", &[]),
    ("size-dist", &[]),
    ("on", &[]),
    ("off", &[]),
    ("seed", &[]),
    ("voip-header", &[]),
    ("vad", &[]),
    ("duration", &[]),
    ("count", &[]),
    ("bytes", &[]),
    ("meter", &[]),
    ("dscp", &[]),
    ("ecn", &[]),
    ("ttl", &[]),
    ("flow-label", &[]),
    ("nodelay", &[]),
    ("start", &[]),
    ("label", &[]),
    ("reserve", &[]),
    ("reserve-refresh", &[]),
    ("reserve-burst", &[]),
    ("reserve-filter", &[]),
    ("reserve-wait", &[]),
];

/// Options that `send` refuses together (as its flags declare).
pub const CONFLICTS: [(&str, &[&str]); 9] = [
    ("udp", &["tcp"]),
    ("bulk", &["voip", "app", "stream", "idt"]),
    ("calls", &["parallel", "bulk"]),
    ("voip", &["rate", "size", "tcp"]),
    (
        "stream",
        &["rate", "size", "tcp", "voip", "app", "idt", "size-dist"],
    ),
    ("app", &["rate", "size", "voip", "idt", "size-dist"]),
    ("idt", &["rate"]),
    ("size-dist", &["size"]),
    ("on", &["vad"]),
];

/// Options that `send` takes only with another.
pub const REQUIRES: [(&str, &str); 8] = [
    ("ptime", "stream"),
    ("on", "off"),
    ("off", "on"),
    ("voip-header", "voip"),
    ("reserve-refresh", "reserve"),
    ("reserve-burst", "reserve"),
    ("reserve-filter", "reserve"),
    ("reserve-wait", "reserve"),
];

/// The name of a flow option as `send` spells it (`--size-dist`) from any spelling a
/// plan or a line may use (`size_dist`, `--size-dist`, an alias such as `codec`).
pub fn canonical(name: &str) -> Option<&'static str> {
    let bare = name.trim_start_matches('-').replace('_', "-");
    NAMES
        .iter()
        .find(|(n, aliases)| *n == bare || aliases.contains(&bare.as_str()))
        .map(|(n, _)| *n)
}

/// What reads the values of `file:PATH` distributions.
type Reader<'a> = dyn Fn(&str) -> std::io::Result<String> + 'a;

/// Flow options being set by name, then checked as a whole by [`NamedOptions::finish`].
pub struct NamedOptions<'a> {
    options: FlowOptions,
    reserve: Option<ReserveOptions>,
    given: Vec<&'static str>,
    read: Box<Reader<'a>>,
}

impl std::fmt::Debug for NamedOptions<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NamedOptions")
            .field("options", &self.options)
            .field("reserve", &self.reserve)
            .field("given", &self.given)
            .finish_non_exhaustive()
    }
}

fn parsed<T: FromStr>(v: &str) -> Result<T, ValueError>
where
    T::Err: std::fmt::Display,
{
    v.parse::<T>().map_err(|e| ValueError(e.to_string()))
}

fn number<T: FromStr + PartialOrd + std::fmt::Display + Copy>(
    v: &str,
    min: T,
    max: T,
) -> Result<T, ValueError> {
    let n: T = v
        .parse()
        .map_err(|_| ValueError(format!("invalid digit found in string '{v}'")))?;
    if n < min || n > max {
        return Err(ValueError(format!("{n} is not in {min}..={max}")));
    }
    Ok(n)
}

impl<'a> NamedOptions<'a> {
    /// No options yet; `file:PATH` distributions are read with `read`.
    pub fn new(read: impl Fn(&str) -> std::io::Result<String> + 'a) -> Self {
        Self {
            options: FlowOptions::default(),
            reserve: None,
            given: Vec::new(),
            read: Box::new(read),
        }
    }

    /// Set option `name` (any spelling [`canonical`] knows) to `value`; a flag takes
    /// no value (or `true`).
    pub fn set(&mut self, name: &str, value: Option<&str>) -> Result<(), OptionError> {
        let Some(name) = canonical(name) else {
            let shown = format!("--{}", name.trim_start_matches('-').replace('_', "-"));
            return Err(OptionError::new(
                shown.clone(),
                format!("unexpected argument '{shown}' found"),
            ));
        };
        let option = format!("--{name}");
        if self.given.contains(&name) {
            return Err(OptionError::new(
                option.clone(),
                format!("the argument '{option}' cannot be used multiple times"),
            ));
        }
        self.given.push(name);
        if name.starts_with("reserve") {
            return self.set_reserve(name, &option, value);
        }
        let o = &mut self.options;
        let flag = match name {
            "udp" => Some(&mut o.udp),
            "tcp" => Some(&mut o.tcp),
            "bulk" => Some(&mut o.bulk),
            "nodelay" => Some(&mut o.nodelay),
            "zerocopy" => Some(&mut o.zerocopy),
            "df" => Some(&mut o.df),
            _ => None,
        };
        if let Some(flag) = flag {
            return match value {
                None | Some("true") => {
                    *flag = true;
                    Ok(())
                }
                Some(v) => Err(OptionError::new(
                    option.clone(),
                    format!("unexpected value '{v}' for '{option}' found; no more were expected"),
                )),
            };
        }
        let Some(v) = value else {
            return Err(OptionError::new(
                option.clone(),
                format!("a value is required for '{option}' but none was supplied"),
            ));
        };
        let read = &self.read;
        let dist = |v: &str| parse_dist(v, |p| read(p));
        let duration = |v: &str| parse_duration(v).map_err(|e| ValueError(e.to_string()));
        let bytes = |v: &str| parse_bytes(v).map_err(|e| ValueError(e.to_string()));
        let result = match name {
            "rate" => parsed(v).map(|r| o.rate = Some(r)),
            "size" => bytes(v).map(|b| o.size = Some(b)),
            "parallel" => number(v, 1u16, 256).map(|n| o.parallel = n),
            "calls" => number(v, 1u32, super::checks::MAX_CALLS).map(|n| o.calls = Some(n)),
            "congestion" => {
                o.congestion = Some(v.to_owned());
                Ok(())
            }
            "window" => bytes(v).map(|b| o.window = Some(b)),
            "cport" => number(v, 1u16, u16::MAX).map(|p| o.cport = Some(p)),
            "omit" => duration(v).map(|d| o.omit = Some(d)),
            "voip" => parsed(v).map(|c| o.voip = Some(c)),
            "stream" => parsed(v).map(|s| o.stream = Some(s)),
            "ptime" => duration(v).map(|d| o.ptime = Some(d)),
            "app" => parsed(v).map(|a| o.app = Some(a)),
            "idt" => dist(v).map(|d| o.idt = Some(d)),
            "size-dist" => dist(v).map(|d| o.size_dist = Some(d)),
            "on" => dist(v).map(|d| o.on = Some(d)),
            "off" => dist(v).map(|d| o.off = Some(d)),
            "seed" => parsed(v).map(|s| o.seed = Some(s)),
            "voip-header" => parse_voip_header(v).map(|h| o.voip_header = h),
            "vad" => parse_vad(v).map(|m| o.vad = Some(m)),
            "duration" => duration(v).map(|d| o.duration = Some(d)),
            "count" => parsed(v).map(|n| o.count = Some(n)),
            "bytes" => bytes(v).map(|b| o.bytes = Some(b)),
            "meter" => parse_meter(v).map(|m| o.meter = m),
            "dscp" => parsed(v).map(|d| o.dscp = Some(d)),
            "ecn" => parsed(v).map(|e| o.ecn = Some(e)),
            "ttl" => number(v, 1u8, 255).map(|t| o.ttl = Some(t)),
            "flow-label" => parse_flow_label(v).map(|l| o.flow_label = Some(l)),
            "start" => duration(v).map(|d| o.start = Some(d)),
            "label" => {
                o.label = Some(v.to_owned());
                Ok(())
            }
            _ => unreachable!("every name of NAMES is set: {name}"),
        };
        result.map_err(|e| {
            OptionError::new(
                option.clone(),
                format!("invalid value '{v}' for '{option}': {e}"),
            )
        })
    }

    /// `--reserve` (`reserve`) and its companions, which apply to the whole `send`.
    fn set_reserve(
        &mut self,
        name: &str,
        option: &str,
        value: Option<&str>,
    ) -> Result<(), OptionError> {
        let Some(v) = value else {
            return Err(OptionError::new(
                option,
                format!("a value is required for '{option}' but none was supplied"),
            ));
        };
        // Placeholder until `--reserve` itself is read; `finish` requires it.
        let r = self.reserve.get_or_insert(ReserveOptions {
            service: wire::control::ReserveService::ControlledLoad,
            refresh: None,
            burst: None,
            filter: None,
            wait: None,
        });
        let result = match name {
            "reserve" => parse_service(v).map(|s| r.service = s),
            "reserve-refresh" => parse_duration(v)
                .map_err(|e| ValueError(e.to_string()))
                .map(|d| r.refresh = Some(d)),
            "reserve-burst" => parse_bytes(v)
                .map_err(|e| ValueError(e.to_string()))
                .map(|b| r.burst = Some(b)),
            "reserve-wait" => parse_duration(v)
                .map_err(|e| ValueError(e.to_string()))
                .map(|d| r.wait = Some(d)),
            _ => parse_filter(v).map(|f| r.filter = Some(f)),
        };
        result.map_err(|e| {
            OptionError::new(option, format!("invalid value '{v}' for '{option}': {e}"))
        })
    }

    /// The options, once no two of them conflict and each has what it requires; the
    /// reservation of `--reserve`, if set, is [`NamedOptions::finish_reserved`]'s.
    pub fn finish(self) -> Result<FlowOptions, OptionError> {
        self.finish_reserved().map(|(o, _)| o)
    }

    /// The options and the reservation `--reserve` asks for every flow of the `send`
    /// (checked against the flows by [`ReserveOptions::check`]).
    pub fn finish_reserved(self) -> Result<(FlowOptions, Option<ReserveOptions>), OptionError> {
        let given = |n: &str| self.given.contains(&n);
        let conflicts = CONFLICTS
            .iter()
            .flat_map(|(a, others)| others.iter().map(move |b| (*a, *b)));
        for (a, b) in conflicts {
            if given(a) && given(b) {
                // The one given later is the one that does not fit.
                let (first, later) = if self.given.iter().position(|n| *n == a)
                    < self.given.iter().position(|n| *n == b)
                {
                    (a, b)
                } else {
                    (b, a)
                };
                return Err(OptionError::new(
                    format!("--{later}"),
                    format!("the argument '--{later}' cannot be used with '--{first}'"),
                ));
            }
        }
        for (a, b) in REQUIRES {
            if given(a) && !given(b) {
                return Err(OptionError::new(
                    format!("--{a}"),
                    format!("--{a} requires --{b}"),
                ));
            }
        }
        let reserve = self.reserve.filter(|_| given("reserve"));
        Ok((self.options, reserve))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::voip::Codec;

    fn options(items: &[(&str, Option<&str>)]) -> Result<FlowOptions, OptionError> {
        let mut o = NamedOptions::new(|_| Ok("1\n2\n".into()));
        for (k, v) in items {
            o.set(k, *v)?;
        }
        o.finish()
    }

    #[test]
    fn names_and_aliases_set_the_options() {
        let o = options(&[
            ("codec", Some("g711.2")),
            ("voip_header", Some("crtp")),
            ("--dscp", Some("EF")),
            ("ttl", Some("7")),
            ("idt", Some("file:x")),
        ])
        .unwrap();
        assert_eq!(o.voip, Some(Codec::G711x2));
        assert_eq!(o.voip_header, crate::voip::VoipHeader::Crtp);
        assert_eq!(o.dscp, Some(wire::ds::Dscp::EF));
        assert_eq!(o.ttl, Some(7));
        assert_eq!(o.idt.and_then(|d| d.mean()), Some(1.5));
        assert_eq!(canonical("size_dist"), Some("size-dist"));
        assert_eq!(canonical("--codec"), Some("voip"));
        assert_eq!(canonical("P"), None);
        assert_eq!(canonical("color"), None);
    }

    #[test]
    fn mistakes_name_the_option() {
        for (items, option, text) in [
            (
                &[("color", Some("red"))][..],
                "--color",
                "unexpected argument '--color'",
            ),
            (
                &[("rate", Some("fast"))],
                "--rate",
                "invalid value 'fast' for '--rate'",
            ),
            (&[("ttl", Some("0"))], "--ttl", "0 is not in 1..=255"),
            (&[("parallel", Some("300"))], "--parallel", "not in 1..=256"),
            (&[("rate", None)], "--rate", "a value is required"),
            (
                &[("rate", Some("1pps")), ("rate", Some("2pps"))],
                "--rate",
                "multiple times",
            ),
            (
                &[("rate", Some("1pps")), ("voip", Some("g711.1"))],
                "--voip",
                "cannot be used with '--rate'",
            ),
            (&[("on", Some("exp:1"))], "--on", "--on requires --off"),
            (&[("ptime", Some("20ms"))], "--ptime", "requires --stream"),
        ] {
            let e = options(items).unwrap_err();
            assert_eq!(e.option(), option, "{e}");
            assert!(e.to_string().contains(text), "{e}");
        }
    }
}
