//! `dualperf compare HOST`: the battery from here to a far end over both of its
//! addresses, through the same pipeline as loopback (`target = "peer"`,
//! [`lab::plan::peer`]). Here: the far end's addresses (a name's A and AAAA records, or
//! `--v4/--v6`), its key, what answers there (probed before anything runs), what the
//! battery becomes for it, and what is said about it around the verdicts.

use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr};
use std::path::Path;
use std::time::Duration as StdDuration;

use anyhow::{Context, Result};
use dualstack::pair::Pair;
use lab::hosts::KeySource;
use lab::plan::peer::{FarEnd, Peer};
use lab::plan::select::Selection;
use wire::control::Msg;

use crate::usage;

/// What `compare` was told about the far end.
pub(crate) struct Given<'a> {
    /// HOST: a name or an address.
    pub(crate) host: Option<&'a str>,
    /// `--v4`, `--v6`.
    pub(crate) v4: Option<Ipv4Addr>,
    pub(crate) v6: Option<Ipv6Addr>,
    /// `--port`.
    pub(crate) port: Option<u16>,
    /// `--key-file`.
    pub(crate) key_file: Option<&'a Path>,
    /// `--stamp`.
    pub(crate) stamp: bool,
    /// `--dry-run`: nothing is asked of the far end (an agent is assumed).
    pub(crate) dry_run: bool,
}

/// The far end, resolved and probed: as the plan gives it, and its key.
pub(crate) struct Far {
    /// Its name (HOST, or the addresses), addresses, port, what answers there and where
    /// its key comes from (never the key).
    pub(crate) peer: Peer,
    /// The key itself, for the path's facts (never written).
    key: Option<String>,
}

/// The variable a far end's key is read from, as `send` reads it.
const KEY_ENV: &str = "DUALPERF_KEY";
/// How long the probe waits to connect.
const PROBE_TIMEOUT: StdDuration = StdDuration::from_secs(5);

/// The far end of `compare HOST` (`None`: no HOST, loopback or `--lab`), its addresses
/// resolved and what answers there probed over both families. Every mistake is a usage
/// error of one line.
pub(crate) fn far_end(g: &Given<'_>) -> Result<Option<Far>> {
    let Some(name) = g
        .host
        .map(str::to_owned)
        .or_else(|| g.v4.zip(g.v6).map(|(a, b)| format!("{a} and {b}")))
    else {
        if g.port.is_some() || g.key_file.is_some() || g.stamp {
            usage!("--port, --key-file and --stamp say how to reach a far end: give HOST (or --v4 ADDR --v6 ADDR)");
        }
        return Ok(None);
    };
    let pair = match (g.v4, g.v6, g.host) {
        (Some(v4), Some(v6), _) => Pair { v4, v6 },
        (_, _, Some(host)) => {
            match crate::names::pair(host, "compare needs both (or give --v4 ADDR --v6 ADDR)") {
                Ok(p) => p,
                Err(e) => usage!("{e}"),
            }
        }
        _ => usage!("give HOST, or both --v4 ADDR and --v6 ADDR"),
    };
    let port = g.port.unwrap_or(if g.stamp {
        wire::stamp::DEFAULT_PORT
    } else {
        crate::control::DEFAULT_PORT
    });
    if port == 0 {
        usage!("--port 0: the far end's port");
    }
    let (key, key_source) = match g.key_file {
        Some(f) => {
            let text = crate::args::read_input(f, "the key")?;
            let abs = std::path::absolute(f).unwrap_or_else(|_| f.to_owned());
            let key = text.trim_end_matches(['\n', '\r']).to_owned();
            (Some(key), Some(KeySource::File(abs.display().to_string())))
        }
        None => match std::env::var(KEY_ENV) {
            Ok(k) if !k.is_empty() => (Some(k), Some(KeySource::Env(KEY_ENV.to_owned()))),
            _ => (None, None),
        },
    };
    let kind = if g.stamp {
        FarEnd::Stamp
    } else if g.dry_run {
        FarEnd::Agent
    } else {
        probe_both(&name, pair, port, key.as_deref())?
    };
    Ok(Some(Far {
        peer: Peer {
            name: Some(name),
            v4: pair.v4,
            v6: pair.v6,
            port,
            key: key_source,
            far_end: kind,
        },
        key,
    }))
}

/// What answers at `port` over both families: an agent or a receiver, the same over
/// both (one that answers over one family only is named).
fn probe_both(name: &str, pair: Pair, port: u16, key: Option<&str>) -> Result<FarEnd> {
    let mut kinds = Vec::new();
    for family in [4, 6] {
        let addr = SocketAddr::new(pair.of(family), port);
        match probe(addr, key) {
            Ok(k) => kinds.push(k),
            Err(e) => usage!(
                "{name} over IPv{family} ({addr}): {e:#}; compare needs `dualperf agent` (or `dualperf recv`, or with --stamp a STAMP reflector) reachable over both families"
            ),
        }
    }
    if kinds[0] != kinds[1] {
        usage!(
            "{name}: IPv4 reaches a dualperf {} but IPv6 a dualperf {}: compare needs the same far end over both",
            kinds[0].name(),
            kinds[1].name()
        );
    }
    Ok(kinds[0])
}

/// Whether `dualperf agent` or `dualperf recv` answers at `addr`: an agent says "send"
/// among the features of its Welcome. One that predates features is told apart by a
/// request to send that neither can serve (its flows do not read), which an agent
/// refuses as an agent and a receiver as one that never sends. Nothing is sent.
fn probe(addr: SocketAddr, key: Option<&str>) -> Result<FarEnd> {
    let mut ctrl = netio::tcp::connect(addr, &netio::Marking::default(), true, None, PROBE_TIMEOUT)
        .context("nothing answers")?;
    ctrl.set_read_timeout(Some(PROBE_TIMEOUT))?;
    let mut reader = crate::control::MsgReader::new();
    let welcomed =
        crate::control::handshake(&mut ctrl, &mut reader, key.map(str::as_bytes), "far end")?;
    if welcomed.has("send") {
        return Ok(FarEnd::Agent);
    }
    // Every other key of the request at its default: what any version reads.
    let request: Msg = serde_json::from_value(serde_json::json!({
        "type": "send_request", "dest": null, "port": 0, "flows": "probe"
    }))?;
    crate::control::write_msg(&mut ctrl, &request)?;
    match reader.read(&mut ctrl)? {
        Msg::Error { message } if message.contains("never sends") => Ok(FarEnd::Recv),
        Msg::Error { message } if message.starts_with("agent refused") => Ok(FarEnd::Agent),
        other => anyhow::bail!("not a dualperf agent or receiver (it answered {other:?})"),
    }
}

/// The far end's path facts (`path.json`) and the battery fitted to them (`fit.json`).
pub(crate) struct HostFit {
    /// The facts.
    pub(crate) facts: results::path::PathFacts,
    /// What fitting made of the battery.
    doc: lab::plan::fit::FitDoc,
    /// The far end's name.
    name: String,
}

/// How long each family's capacity is measured in each direction: 1 s under
/// `--quick`, 2 s otherwise.
fn capacity_time(quick: bool) -> StdDuration {
    StdDuration::from_secs(if quick { 1 } else { 2 })
}

/// The path's facts toward `far` (said first: they take a few seconds), then `plan`
/// (of `text`) fitted to them at [`lab::plan::fit::DEFAULT_SHARE`] of the capacity
/// (`apply` false, `--no-fit`: kept, and the notes say what does not fit): the text and
/// plan changed to match.
pub(crate) fn facts_and_fit(
    far: &Far,
    text: String,
    plan: &mut lab::plan::Plan,
    quick: bool,
    overrides: &lab::plan::Overrides,
    given: lab::plan::fit::Given,
    apply: bool,
) -> Result<(String, HostFit)> {
    use lab::plan::fit::{fit, FitDoc, PathLimits, DEFAULT_SHARE};
    crate::out::note!(
        "dualperf compare: measuring the path's facts over both families (hops, path MTU, marking, NAT, clock{}) …",
        if far.peer.far_end == FarEnd::Stamp { "" } else { ", capacity" }
    );
    let target = crate::facts::Target {
        host: far.peer.label(),
        far_end: match far.peer.far_end {
            FarEnd::Agent => results::path::FarEnd::Agent,
            FarEnd::Recv => results::path::FarEnd::Recv,
            FarEnd::Stamp => results::path::FarEnd::Stamp,
        },
        addrs: [4, 6].map(|f| far.peer.addr(f)).to_vec(),
        key: far.key.clone().map(String::into_bytes),
        capacity: (far.peer.far_end != FarEnd::Stamp).then(|| capacity_time(quick)),
    };
    let facts = crate::facts::measure(&target, &crate::interrupt::flag());
    let limits = PathLimits::from_facts(&facts);
    let kept = lab::plan::fit::Given {
        sizes: true,
        rate: true,
    };
    let fitted = match fit(
        plan,
        &limits,
        if apply { given } else { kept },
        DEFAULT_SHARE,
    ) {
        Ok(f) => f,
        Err(e) => usage!("{e}"),
    };
    let doc = FitDoc::new(&fitted, apply, DEFAULT_SHARE, limits);
    let host = HostFit {
        facts,
        doc,
        name: far.peer.label(),
    };
    if fitted.factors.is_empty() {
        return Ok((text, host));
    }
    let s = Selection {
        factors: fitted.factors,
        ..Selection::default()
    };
    let changed = s.apply(&text, None).and_then(|t| {
        let mut p = lab::plan::Plan::parse(&t, quick).map_err(|e| e.message)?;
        p.override_with(overrides).map_err(|e| e.message)?;
        *plan = p;
        Ok(t)
    });
    match changed {
        Ok(t) => Ok((t, host)),
        Err(e) => usage!(
            "the battery fitted to the path to {}: {e}",
            far.peer.label()
        ),
    }
}

impl HostFit {
    /// Writes `path.json` and `fit.json` into the run directory `dir`.
    pub(crate) fn write(&self, dir: &Path) -> Result<()> {
        std::fs::create_dir_all(dir)?;
        let pretty = |v: serde_json::Value| serde_json::to_string_pretty(&v).map(|s| s + "\n");
        std::fs::write(
            dir.join("path.json"),
            pretty(serde_json::to_value(&self.facts)?)?,
        )?;
        std::fs::write(
            dir.join("fit.json"),
            pretty(serde_json::to_value(&self.doc)?)?,
        )?;
        Ok(())
    }

    /// What is printed under the verdicts: how the battery was fitted, its notes, then
    /// the path's facts.
    pub(crate) fn text(&self) -> String {
        let p = &self.doc.path;
        let mtu = |m: Option<u32>| m.map_or("?".into(), |v| v.to_string());
        let cap = p.capacity_bps.map_or("capacity unknown".into(), |c| {
            format!("{:.3} Mbit/s", c as f64 / 1e6)
        });
        let summary = format!(
            "path MTU {} bytes over IPv4, {} over IPv6, {cap}, load share {:.0} %",
            mtu(p.mtu4),
            mtu(p.mtu6),
            self.doc.share * 100.0
        );
        let mut out = match self.doc.applied {
            true => format!(
                "\nFitted to the path to {} ({summary}; fit.json; --no-fit runs the battery as given):\n",
                self.name
            ),
            false => format!(
                "\nNot fitted (--no-fit); on the path to {} ({summary}):\n",
                self.name
            ),
        };
        if self.doc.notes.is_empty() {
            out.push_str("  the battery fits it as it is.\n");
        }
        for n in &self.doc.notes {
            out.push_str(&format!("  {}\n", n.text));
        }
        out.push('\n');
        out.push_str(&report::path::text(&self.facts));
        out
    }
}

/// The time `compare` takes over `plan` ([`lab::plan::peer::compare_estimate`]): for
/// `--dry-run`.
pub(crate) fn estimate(plan: &lab::plan::Plan, quick: bool) -> StdDuration {
    let cap = wire::time::Duration::from_nanos(capacity_time(quick).as_nanos() as u64);
    let d = lab::plan::peer::compare_estimate(plan, cap);
    StdDuration::from_nanos(d.as_nanos())
}
