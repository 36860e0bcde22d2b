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
use lab::plan::peer::FarEnd;
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

/// The far end, resolved and probed.
pub(crate) struct Far {
    /// How it was named (HOST, or the addresses).
    pub(crate) name: String,
    pub(crate) pair: Pair,
    pub(crate) port: u16,
    pub(crate) kind: FarEnd,
    /// Where its key comes from, as the saved plan says it (never the key).
    key_source: Option<(&'static str, String)>,
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
            (Some(key), Some(("key_file", abs.display().to_string())))
        }
        None => match std::env::var(KEY_ENV) {
            Ok(k) if !k.is_empty() => (Some(k), Some(("key_env", KEY_ENV.to_owned()))),
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
        name,
        pair,
        port,
        kind,
        key_source,
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

/// Whether `dualperf agent` or `dualperf recv` answers at `addr`: after the handshake, a
/// request to send that neither can serve (its flows do not read), which an agent
/// refuses as an agent and a receiver as one that never sends. Nothing is sent.
fn probe(addr: SocketAddr, key: Option<&str>) -> Result<FarEnd> {
    let mut ctrl = netio::tcp::connect(addr, &netio::Marking::default(), true, None, PROBE_TIMEOUT)
        .context("nothing answers")?;
    ctrl.set_read_timeout(Some(PROBE_TIMEOUT))?;
    let mut reader = crate::control::MsgReader::new();
    crate::control::handshake(&mut ctrl, &mut reader, key.map(str::as_bytes), "far end")?;
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

/// What the quick battery keeps toward a far end (the directions double the runs, and
/// a reverse run costs about 0.35 s more): 150 ms runs, three sizes (unless --sizes
/// gives them), no game models, so `--quick` stays within 90 s of the dry run's
/// estimate.
pub(crate) const QUICK_DURATION: &str = "150ms";
/// The quick battery's sizes toward a far end.
pub(crate) const QUICK_SIZES: [i64; 3] = [64, 512, 1472];

impl Far {
    /// The far end's place in the battery: `target = "peer"` with its literals, both
    /// directions for an agent (tables split by direction), STAMP flows (UDP, at most
    /// 1000 pkt/s, the delay and loss tables) to a reflector; `--quick` shorter still.
    pub(crate) fn select(&self, s: &mut Selection, quick: bool) {
        let mut peer = toml::Table::new();
        peer.insert("name".into(), self.name.clone().into());
        peer.insert("v4".into(), self.pair.v4.to_string().into());
        peer.insert("v6".into(), self.pair.v6.to_string().into());
        peer.insert("port".into(), i64::from(self.port).into());
        peer.insert("far_end".into(), self.kind.name().into());
        if let Some((key, value)) = &self.key_source {
            peer.insert((*key).into(), value.clone().into());
        }
        s.target = Some("peer".into());
        s.set.push(("peer".into(), toml::Value::Table(peer)));
        if quick {
            s.set.push(("quick.duration".into(), QUICK_DURATION.into()));
            s.leave_out_groups.push("Games".into());
            if !s.factors.iter().any(|(k, _)| k == "size") {
                let sizes = QUICK_SIZES.map(toml::Value::Integer).to_vec();
                s.factors.push(("size".into(), toml::Value::Array(sizes)));
            }
        }
        match self.kind {
            FarEnd::Agent => {
                let values = vec!["forward".into(), "reverse".into()];
                s.factors
                    .push(("direction".into(), toml::Value::Array(values)));
                s.tables_by = Some((
                    "direction".into(),
                    vec![
                        ("forward".into(), format!("here → {}", self.name)),
                        ("reverse".into(), format!("{} → here", self.name)),
                    ],
                ));
            }
            FarEnd::Recv => {}
            FarEnd::Stamp => {
                s.leave_out_groups.push("Games".into());
                s.factors.retain(|(k, _)| k != "protocol" && k != "rate");
                let udp = toml::Value::Array(vec!["udp".into()]);
                s.factors.push(("protocol".into(), udp));
                let rate = toml::Value::Array(vec!["1000pps".into()]);
                s.factors.push(("rate".into(), rate));
                let tables = [
                    ("Round-trip time, median", "rtt_median:µs"),
                    ("One-way delay", "owd:µs"),
                    ("Jitter", "jitter:µs"),
                    ("Loss", "loss:%"),
                ]
                .map(|(title, metric)| {
                    let mut t = toml::Table::new();
                    t.insert("title".into(), title.into());
                    t.insert("metrics".into(), toml::Value::Array(vec![metric.into()]));
                    toml::Value::Table(t)
                });
                s.set
                    .push(("tables".into(), toml::Value::Array(tables.to_vec())));
            }
        }
    }

    /// The line said before the battery: where it goes and what answers there.
    pub(crate) fn heading(&self) -> String {
        let what = match self.kind {
            FarEnd::Agent => "dualperf agent: both directions",
            FarEnd::Recv => "dualperf recv: forward only (here → there); run `dualperf agent` there for the reverse direction too",
            FarEnd::Stamp => "a STAMP Session-Reflector (RFC 8762): the round trip and each direction's one-way delay and loss, with nothing of ours there",
        };
        format!(
            "dualperf compare: {} at {} and {}, port {}: {what}",
            self.name, self.pair.v4, self.pair.v6, self.port
        )
    }

    /// What is said under the verdicts about the far end.
    pub(crate) fn footer(&self) -> Option<String> {
        match self.kind {
            FarEnd::Recv => Some(format!(
                "Forward only: {} runs `dualperf recv`, which never sends; `dualperf agent` there measures the reverse direction too.",
                self.name
            )),
            FarEnd::Stamp => Some("One-way delays are not corrected for the two clocks' offset; their IPv6 − IPv4 difference is, as long as the offset holds still over the battery.".into()),
            FarEnd::Agent => None,
        }
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
        if far.kind == FarEnd::Stamp { "" } else { ", capacity" }
    );
    let target = crate::facts::Target {
        host: far.name.clone(),
        far_end: match far.kind {
            FarEnd::Agent => results::path::FarEnd::Agent,
            FarEnd::Recv => results::path::FarEnd::Recv,
            FarEnd::Stamp => results::path::FarEnd::Stamp,
        },
        addrs: [4, 6]
            .map(|f| SocketAddr::new(far.pair.of(f), far.port))
            .to_vec(),
        key: far.key.clone().map(String::into_bytes),
        capacity: (far.kind != FarEnd::Stamp).then(|| capacity_time(quick)),
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
        name: far.name.clone(),
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
        Err(e) => usage!("the battery fitted to the path to {}: {e}", far.name),
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

/// The time a battery takes when its runs are measured by `compare`'s executor (in this
/// process, but a peer plan's STAMP runs as processes), with a far end's path facts
/// first (its capacity over each family and direction, and about 3 s of probes;
/// about 1 s of STAMP probes): for `--dry-run`.
pub(crate) fn estimate(plan: &lab::plan::Plan, quick: bool) -> StdDuration {
    let runs = StdDuration::from_nanos(lab::plan::peer::estimated_in_process(plan).as_nanos());
    let cap = capacity_time(quick);
    let facts = match plan.peer.as_ref().map(|p| p.far_end) {
        None => StdDuration::ZERO,
        Some(FarEnd::Agent) => 4 * cap + StdDuration::from_secs(3),
        Some(FarEnd::Recv) => 2 * cap + StdDuration::from_secs(2),
        Some(FarEnd::Stamp) => StdDuration::from_secs(1),
    };
    runs + facts
}
