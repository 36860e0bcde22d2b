//! A link's per-family keys: `ipv4 = { delay = "2ms", loss = "1%" }` and
//! `ipv6 = { delay = "2ms", loss = "1%", mtu = 1400 }`. Each adds to the link's own
//! emulation for frames of that family only, and `ipv6.mtu` lowers IPv6's MTU below the
//! link's. Like all emulation they act where a router sends onto the link, so a link
//! with no router end refuses them. They go into the router's configuration as
//! `emulation.ipv4`/`ipv6` and `mtu6` ([`router::config`]).

use router::config::{FamilyEmulation, LossModel};
use serde::Deserialize;
use traffic::units::parse_duration;
use wire::time::Duration;

/// One family's keys, as the topology file writes them.
#[derive(Deserialize, Debug, Default)]
#[serde(deny_unknown_fields)]
pub(crate) struct FamilyFile {
    #[serde(default)]
    delay: Option<String>,
    #[serde(default)]
    loss: Option<String>,
    #[serde(default)]
    mtu: Option<u32>,
}

/// A link's per-family keys, resolved.
#[derive(Debug, Default, PartialEq)]
pub(crate) struct Families {
    /// What IPv4 frames suffer beyond the link's own emulation.
    pub ipv4: Option<FamilyEmulation>,
    /// What IPv6 frames suffer beyond it.
    pub ipv6: Option<FamilyEmulation>,
    /// IPv6's MTU, when `ipv6.mtu` lowers it.
    pub mtu6: Option<u32>,
}

/// The keys `ipv4` and `ipv6` of a link whose MTU is `mtu`; `routed` says whether a
/// router is at either end (without one, nothing would apply them).
pub(crate) fn resolve(
    ipv4: Option<&FamilyFile>,
    ipv6: Option<&FamilyFile>,
    mtu: u32,
    routed: bool,
) -> Result<Families, String> {
    if !routed && (ipv4.is_some() || ipv6.is_some()) {
        let key = if ipv4.is_some() { "ipv4" } else { "ipv6" };
        return Err(format!(
            "{key}: per-family keys act where a router sends onto the link, and neither end of this link is a router"
        ));
    }
    if let Some(m) = ipv4.and_then(|f| f.mtu) {
        return Err(format!(
            "ipv4 mtu {m}: the link's mtu is IPv4's; only ipv6 takes an mtu of its own"
        ));
    }
    let mtu6 = match ipv6.and_then(|f| f.mtu) {
        Some(m) if !(1280..=mtu).contains(&m) => {
            return Err(format!(
                "ipv6 mtu {m}: 1280 (IPv6's minimum) to the link's mtu {mtu}"
            ))
        }
        m => m,
    };
    Ok(Families {
        ipv4: ipv4.map(|f| family("ipv4", f)).transpose()?.flatten(),
        ipv6: ipv6.map(|f| family("ipv6", f)).transpose()?.flatten(),
        mtu6,
    })
}

/// Family `key`'s delay and loss (`None` when it sets neither).
fn family(key: &str, f: &FamilyFile) -> Result<Option<FamilyEmulation>, String> {
    if f.delay.is_none() && f.loss.is_none() {
        return Ok(None);
    }
    let delay_ns = match &f.delay {
        None => 0,
        Some(s) => parse_duration(s)
            .ok()
            .filter(|d| *d <= Duration::from_secs(60))
            .map(Duration::as_nanos)
            .ok_or_else(|| format!("{key} delay '{s}': e.g. 2ms, at most 60s"))?,
    };
    let loss = match &f.loss {
        None => LossModel::None,
        Some(s) => parse_loss(s).ok_or_else(|| {
            format!("{key} loss '{s}': a percentage (1%) or ge:P,R,LOSS_GOOD,LOSS_BAD in %")
        })?,
    };
    Ok(Some(FamilyEmulation { delay_ns, loss }))
}

/// A percentage such as `1%` or `0.5%` as a probability.
fn percent(s: &str) -> Option<f64> {
    let v: f64 = s.trim().strip_suffix('%')?.trim().parse().ok()?;
    (0.0..=100.0).contains(&v).then_some(v / 100.0)
}

/// A loss key's value (a link's or a family's): a percentage (`1%`: Bernoulli), or
/// `ge:p,r,loss_good,loss_bad` in % (Gilbert–Elliott).
pub(crate) fn parse_loss(s: &str) -> Option<LossModel> {
    if let Some(rest) = s.strip_prefix("ge:") {
        let v: Vec<f64> = rest
            .split(',')
            .map(|p| percent(&format!("{}%", p.trim().trim_end_matches('%'))))
            .collect::<Option<_>>()?;
        let [p, r, loss_good, loss_bad] = v.as_slice() else {
            return None;
        };
        return Some(LossModel::GilbertElliott {
            p: *p,
            r: *r,
            loss_good: *loss_good,
            loss_bad: *loss_bad,
        });
    }
    let p = percent(s)?;
    Some(if p == 0.0 {
        LossModel::None
    } else {
        LossModel::Bernoulli { p }
    })
}

#[cfg(test)]
mod tests {
    use crate::topology::Topology;
    use router::config::{FamilyEmulation, LossModel};

    /// host — router — host, with `keys` on link 2 (router — host) and `keys1` on link 1.
    fn with(keys1: &str, keys: &str) -> String {
        format!(
            "version = 1\nname = \"f\"\n\
             [[node]]\nname = \"a\"\nkind = \"host\"\n\
             [[node]]\nname = \"r\"\nkind = \"router\"\n\
             [[node]]\nname = \"b\"\nkind = \"host\"\n\
             [[link]]\na = \"a\"\nb = \"r\"\n{keys1}\
             [[link]]\na = \"r\"\nb = \"b\"\n{keys}"
        )
    }

    #[test]
    fn family_keys_reach_the_routers_configuration() {
        let t = Topology::parse(&with(
            "",
            "ipv4 = { loss = \"1%\" }\nipv6 = { delay = \"2ms\", mtu = 1400 }\n",
        ))
        .unwrap();
        let l = &t.links[1];
        assert_eq!(l.mtu6, Some(1400));
        assert_eq!(
            l.emulation.ipv4,
            Some(FamilyEmulation {
                delay_ns: 0,
                loss: LossModel::Bernoulli { p: 0.01 }
            })
        );
        assert_eq!(
            l.emulation.ipv6,
            Some(FamilyEmulation {
                delay_ns: 2_000_000,
                loss: LossModel::None
            })
        );
        // The link's own emulation is untouched.
        assert_eq!(
            (l.emulation.delay_ns, l.emulation.loss),
            (0, LossModel::None)
        );
        let cfg = t.router_config(t.node("r").unwrap());
        let to_b = cfg.interfaces.iter().find(|i| i.name == "to-b").unwrap();
        assert_eq!(to_b.mtu, 1500);
        assert_eq!(to_b.mtu6, Some(1400));
        assert_eq!(to_b.emulation, l.emulation);
        let to_a = cfg.interfaces.iter().find(|i| i.name == "to-a").unwrap();
        assert_eq!((to_a.mtu6, &to_a.emulation.ipv4), (None, &None));
        // As TOML and back, as `dualperf route --config` reads it.
        let text = toml::to_string(&cfg).unwrap();
        assert_eq!(
            toml::from_str::<router::config::RouterConfig>(&text).unwrap(),
            cfg
        );
        // An mtu alone sets no emulation.
        let t = Topology::parse(&with("", "ipv6 = { mtu = 1280 }\n")).unwrap();
        assert_eq!(
            (t.links[1].mtu6, &t.links[1].emulation.ipv6),
            (Some(1280), &None)
        );
    }

    #[test]
    fn bad_family_keys_are_refused_with_their_line() {
        let no_router = "version = 1\nname = \"f\"\n\
             [[node]]\nname = \"a\"\nkind = \"host\"\n\
             [[node]]\nname = \"b\"\nkind = \"host\"\n\
             [[link]]\na = \"a\"\nb = \"b\"\nipv6 = { delay = \"2ms\" }\n";
        for (text, line, want) in [
            (
                with("", "ipv6 = { delay = \"fast\" }\n"),
                15,
                "ipv6 delay 'fast': e.g. 2ms, at most 60s",
            ),
            (
                with("ipv4 = { loss = \"150%\" }\n", ""),
                12,
                "ipv4 loss '150%': a percentage (1%) or ge:P,R,LOSS_GOOD,LOSS_BAD in %",
            ),
            (
                with("", "ipv4 = { mtu = 1400 }\n"),
                15,
                "ipv4 mtu 1400: the link's mtu is IPv4's; only ipv6 takes an mtu of its own",
            ),
            (
                with("", "ipv6 = { mtu = 1200 }\n"),
                15,
                "ipv6 mtu 1200: 1280 (IPv6's minimum) to the link's mtu 1500",
            ),
            (
                with("", "mtu = 1400\nipv6 = { mtu = 1450 }\n"),
                15,
                "ipv6 mtu 1450: 1280 (IPv6's minimum) to the link's mtu 1400",
            ),
            (
                no_router.to_owned(),
                9,
                "ipv6: per-family keys act where a router sends onto the link, and neither end of this link is a router",
            ),
        ] {
            let e = Topology::parse(&text).unwrap_err();
            assert_eq!((e.line, e.message.as_str()), (Some(line), want), "{text}");
        }
        // A key the table does not have is the parser's error, on its own line.
        let e = Topology::parse(&with("", "\nipv6 = { jitter = \"1ms\" }\n")).unwrap_err();
        assert_eq!(e.line, Some(19), "{e}");
        assert!(
            e.message
                .starts_with("unknown field `jitter`, expected one of"),
            "{e}"
        );
    }
}
