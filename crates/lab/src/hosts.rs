//! Plans across real hosts: `target = "hosts"` and a `[hosts]` table of hosts that run
//! `dualperf agent` (a receiver that, on an authenticated request, also sends flows to a
//! destination the controller names). The runner starts nothing on the hosts: for each
//! flow it runs `dualperf send --from AGENT DEST` here, on the controller.
//!
//! ```toml
//! target = "hosts"
//!
//! [hosts.sender]
//! agent = "198.18.1.2"             # reaches the agent in runs of both families, or:
//! # agent4 = "198.18.1.2"          # the host's IPv4 address (its agent, and where
//! # agent6 = "2001:2:0:1::2"       #   flows of that family to it go)
//! port = 4646                      # the agent's port (default 4646)
//! key_file = "keys/sender.key"     # its key, from a file (relative to the plan), or
//! # key_env = "DUALPERF_KEY_SENDER"  # from an environment variable; neither: no key
//!
//! [hosts.receiver]
//! agent4 = "198.18.4.2"
//! agent6 = "2001:2:0:4::2"
//! # name = "receiver.example"     # or by name: its A and AAAA records, looked up when
//! #                                #   the plan starts (and recorded in the run directory)
//!
//! [[points]]
//! label = "reverse"
//! from = "receiver"                # the measured flow's sender (default "sender")
//! to = "sender"                    # and its receiver (default "receiver")
//! background = [{ from = "bg-a", to = "receiver", udp = true, rate = "5mbit" }]
//! ```
//!
//! Rules:
//! - `target = "hosts"` needs `[hosts]` with at least `sender` and `receiver`; `[hosts]`
//!   with another target is a mistake, and so are `from`/`to` on a point (or in
//!   `[flow]`, where they apply to every point).
//! - Host names are letters, digits, `.`, `_` and `-` (they name the run directory's
//!   `hosts/NAME/`).
//! - `name` is the host's DNS name (or a hosts-file name): `dualperf run` looks it up
//!   when it starts and uses its A record in IPv4 runs and its AAAA record in IPv6 runs
//!   ([`resolve_names`]), keeping both in `hosts/NAME/addresses.json`; a name missing a
//!   family stops the plan naming the record, and a resume whose lookup gives other
//!   addresses is refused naming both. `name` excludes `agent`, `agent4` and `agent6`.
//! - `agent` is one IP address (not a name) that reaches the agent in runs of both
//!   families; flows to the host go to it only in runs of its family. `agent4`/`agent6`
//!   give the host's address of one family, used for both; `agent` and the per-family
//!   keys exclude each other. Every host needs an address to reach its agent in runs
//!   of each family the plan measures (the `ip` factor), and every host flows go to
//!   needs an address of each such family: a plan without them does not parse.
//! - Background flows keep their meaning in the lab: no `from` (or `from = "bg-a"`)
//!   runs from host `bg-a` to host `bg-b`; `from = "sender"` runs from the point's own
//!   sender to its receiver; any other declared host may be named in `from` (its `to`
//!   defaulting to `bg-b`, as in the lab) and in `to` (which also overrides the
//!   receiver of `from = "sender"`).
//! - Keys are never written to the run directory: `dualperf run` reads them when it
//!   starts ([`read_keys`]) and hands them to its children in environment variables
//!   ([`Invocation`]).

use std::collections::{BTreeMap, BTreeSet};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::path::{Path, PathBuf};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use toml::Spanned;

use crate::plan::point::{file_safe, key_line, send_argv, Background, PlanError, Point};

/// The agent's port when a host does not name one (`dualperf recv`'s and `agent`'s).
pub const DEFAULT_AGENT_PORT: u16 = 4646;
/// The host a point's measured flow comes from by default.
pub const SENDER: &str = "sender";
/// The host a point's measured flow goes to by default.
pub const RECEIVER: &str = "receiver";
/// Where background flows come from by default (as in the lab).
pub const BG_FROM: &str = "bg-a";
/// Where background flows from a host other than the point's sender go by default.
pub const BG_TO: &str = "bg-b";
/// The environment variable a `send --from` child reads the sending agent's key from.
pub const AGENT_KEY_ENV: &str = "DUALPERF_AGENT_KEY";
/// The environment variable a child reads the receiving end's key from.
pub const KEY_ENV: &str = "DUALPERF_KEY";
/// Longest host name.
const MAX_NAME: usize = 64;

/// One host of a plan, as `[hosts.NAME]` declares it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Host {
    /// `name`: the host's name, looked up per family when the plan starts
    /// ([`resolve_names`] fills `agent4` and `agent6` from it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// `agent`: the agent's address in runs of both families (flows to the host go to
    /// it in runs of its own family).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<IpAddr>,
    /// `agent4`: the host's IPv4 address, for its agent and for flows to it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent4: Option<Ipv4Addr>,
    /// `agent6`: the host's IPv6 address, for its agent and for flows to it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent6: Option<Ipv6Addr>,
    /// The agent's port (TCP control, UDP and TCP data).
    pub port: u16,
    /// Where its key comes from; `None`: the agent wants none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<KeySource>,
}

/// Where a host's key comes from (never the key itself).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum KeySource {
    /// `key_file`: a file, relative to the plan's directory.
    File(String),
    /// `key_env`: an environment variable of `dualperf run`.
    Env(String),
}

impl Host {
    /// Where its agent is reached in runs of `family` (4 or 6).
    pub fn agent_addr(&self, family: u8) -> Option<SocketAddr> {
        let ip = match family {
            4 => self.agent4.map(IpAddr::V4),
            _ => self.agent6.map(IpAddr::V6),
        };
        ip.or(self.agent).map(|ip| SocketAddr::new(ip, self.port))
    }

    /// Where flows of `family` to it go.
    pub fn dest(&self, family: u8) -> Option<IpAddr> {
        match family {
            4 => self
                .agent4
                .map(IpAddr::V4)
                .or(self.agent.filter(IpAddr::is_ipv4)),
            _ => self
                .agent6
                .map(IpAddr::V6)
                .or(self.agent.filter(IpAddr::is_ipv6)),
        }
    }

    /// How `--dry-run` shows it: addresses, port and where the key comes from.
    pub fn describe(&self) -> String {
        let mut parts = Vec::new();
        if let Some(n) = &self.name {
            parts.push(format!("name {n} (looked up when the plan starts)"));
        }
        if let Some(a) = self.agent {
            parts.push(format!("agent {a} (both families)"));
        }
        if let Some(a) = self.agent4 {
            parts.push(format!("IPv4 {a}"));
        }
        if let Some(a) = self.agent6 {
            parts.push(format!("IPv6 {a}"));
        }
        parts.push(format!("port {}", self.port));
        parts.push(match &self.key {
            None => "no key".into(),
            Some(KeySource::File(f)) => format!("key from {f}"),
            Some(KeySource::Env(v)) => format!("key from ${v}"),
        });
        parts.join(", ")
    }
}

/// A host's key, read when the plan starts. Its `Debug` does not show it.
#[derive(Clone, PartialEq, Eq)]
pub struct Key(String);

impl Key {
    /// A key.
    pub fn new(key: impl Into<String>) -> Self {
        Self(key.into())
    }

    /// The secret itself, for a child's environment.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for Key {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Key(…)")
    }
}

/// A host's key that cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum KeyError {
    /// Its `key_file` does not read.
    #[error("host {host}: key_file {}: {source}", .path.display())]
    File {
        /// The host.
        host: String,
        /// The file, resolved against the plan's directory.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// Its `key_env` variable is not set, or not text.
    #[error("host {host}: key_env: the environment variable {var} is not set")]
    Env {
        /// The host.
        host: String,
        /// The variable.
        var: String,
    },
    /// The key is empty.
    #[error("host {host}: its key ({what}) is empty")]
    Empty {
        /// The host.
        host: String,
        /// Where it came from.
        what: String,
    },
}

/// Every host's key: `key_file` read relative to `plan_dir` (one trailing line ending
/// left out), `key_env` through `env` (the process environment in `dualperf run`).
/// Hosts without a key have no entry.
pub fn read_keys(
    hosts: &BTreeMap<String, Host>,
    plan_dir: &Path,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<BTreeMap<String, Key>, KeyError> {
    let mut out = BTreeMap::new();
    for (name, host) in hosts {
        let (key, what) = match &host.key {
            None => continue,
            Some(KeySource::File(file)) => {
                let path = plan_dir.join(file);
                let text = std::fs::read_to_string(&path).map_err(|source| KeyError::File {
                    host: name.clone(),
                    path: path.clone(),
                    source,
                })?;
                let key = text
                    .strip_suffix('\n')
                    .map(|k| k.strip_suffix('\r').unwrap_or(k))
                    .unwrap_or(&text)
                    .to_owned();
                (key, format!("key_file {}", path.display()))
            }
            Some(KeySource::Env(var)) => {
                let key = env(var).ok_or_else(|| KeyError::Env {
                    host: name.clone(),
                    var: var.clone(),
                })?;
                (key, format!("key_env {var}"))
            }
        };
        if key.is_empty() {
            return Err(KeyError::Empty {
                host: name.clone(),
                what,
            });
        }
        out.insert(name.clone(), Key(key));
    }
    Ok(out)
}

/// A child process: its arguments after `dualperf`, and the environment variables it
/// gets (`Some`) or must not inherit (`None`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Invocation {
    /// The arguments (recorded in run records: never a key).
    pub argv: Vec<String>,
    /// Variables set (`Some`) or removed (`None`) for the child.
    pub env: Vec<(&'static str, Option<Key>)>,
}

impl Invocation {
    /// Set and remove its variables on `cmd`.
    pub fn apply_env(&self, cmd: &mut std::process::Command) {
        for (var, value) in &self.env {
            match value {
                Some(k) => cmd.env(var, k.expose()),
                None => cmd.env_remove(var),
            };
        }
    }
}

/// The hosts of a plan and their keys: what the runner needs to drive their agents.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Hosts {
    /// The plan's hosts.
    pub hosts: BTreeMap<String, Host>,
    /// Their keys (hosts without one have none).
    pub keys: BTreeMap<String, Key>,
}

/// Why a host cannot take part in a run (a plan that parsed always can).
fn no_address(host: &str, family: u8) -> String {
    format!("host {host} has no IPv{family} address")
}

impl Hosts {
    /// The hosts and their keys.
    pub fn new(hosts: BTreeMap<String, Host>, keys: BTreeMap<String, Key>) -> Self {
        Self { hosts, keys }
    }

    fn host(&self, name: &str) -> Result<&Host, String> {
        self.hosts
            .get(name)
            .ok_or_else(|| format!("no host named {name}"))
    }

    /// The sending host's agent and the receiving host's address and port in runs of
    /// `family`.
    pub fn ends(
        &self,
        from: &str,
        to: &str,
        family: u8,
    ) -> Result<(SocketAddr, SocketAddr), String> {
        let sender = self.host(from)?;
        let receiver = self.host(to)?;
        let agent = sender
            .agent_addr(family)
            .ok_or_else(|| no_address(from, family))?;
        let dest = receiver
            .dest(family)
            .ok_or_else(|| no_address(to, family))?;
        Ok((agent, SocketAddr::new(dest, receiver.port)))
    }

    /// `dualperf send --from AGENT:PORT DEST --port PORT ARGS --duration Dns --json
    /// [--announce-start] --connect-timeout 30s`, with the sending host's key in
    /// `DUALPERF_AGENT_KEY` and the receiving host's in `DUALPERF_KEY` (each removed
    /// when the host has none).
    pub fn send(
        &self,
        from: &str,
        to: &str,
        family: u8,
        args: Vec<String>,
        duration_ns: u64,
        announce: bool,
    ) -> Result<Invocation, String> {
        let (agent, dest) = self.ends(from, to, family)?;
        Ok(Invocation {
            argv: send_argv(
                Some(agent.to_string()),
                dest.ip().to_string(),
                dest.port(),
                args,
                duration_ns,
                announce,
            ),
            env: vec![
                (AGENT_KEY_ENV, self.keys.get(from).cloned()),
                (KEY_ENV, self.keys.get(to).cloned()),
            ],
        })
    }

    /// `dualperf clock --peer AGENT:PORT --json` for `host`'s agent in runs of
    /// `family`, with its key in `DUALPERF_KEY`.
    pub fn clock(&self, host: &str, family: u8) -> Result<(SocketAddr, Invocation), String> {
        let agent = self
            .host(host)?
            .agent_addr(family)
            .ok_or_else(|| no_address(host, family))?;
        Ok((
            agent,
            Invocation {
                argv: vec![
                    "clock".into(),
                    "--peer".into(),
                    agent.to_string(),
                    "--json".into(),
                ],
                env: vec![
                    (KEY_ENV, self.keys.get(host).cloned()),
                    (AGENT_KEY_ENV, None),
                ],
            },
        ))
    }
}

/// `[hosts.NAME]` as written.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct HostFile {
    #[serde(default)]
    name: Option<Spanned<String>>,
    #[serde(default)]
    agent: Option<Spanned<String>>,
    #[serde(default)]
    agent4: Option<Spanned<String>>,
    #[serde(default)]
    agent6: Option<Spanned<String>>,
    #[serde(default)]
    port: Option<Spanned<u16>>,
    #[serde(default)]
    key_file: Option<Spanned<String>>,
    #[serde(default)]
    key_env: Option<Spanned<String>>,
}

/// The hosts a plan declares, with the line of each.
pub(crate) struct Declared {
    pub(crate) hosts: BTreeMap<String, Host>,
    lines: BTreeMap<String, Option<usize>>,
}

fn line_of(text: &str, offset: usize) -> Option<usize> {
    Some(wire::span::line_at(text, offset))
}

/// Read `[hosts]`: `None` for a plan of another target (which must have none).
pub(crate) fn parse_hosts(
    text: &str,
    file: Option<&BTreeMap<String, Spanned<HostFile>>>,
    hosts_target: bool,
    target_line: Option<usize>,
) -> Result<Option<Declared>, PlanError> {
    let first_line = file
        .and_then(|f| f.values().map(|h| h.span().start).min())
        .and_then(|o| line_of(text, o));
    if !hosts_target {
        return match file {
            None => Ok(None),
            Some(_) => Err(PlanError::at(
                first_line,
                "[hosts] needs target = \"hosts\" (the plan's flows then run between the hosts' agents)",
            )),
        };
    }
    let empty = BTreeMap::new();
    let file = file.unwrap_or(&empty);
    let mut declared = Declared {
        hosts: BTreeMap::new(),
        lines: BTreeMap::new(),
    };
    for (name, spanned) in file {
        let line = line_of(text, spanned.span().start);
        if name.is_empty() || name.len() > MAX_NAME || file_safe(name) != *name {
            return Err(PlanError::at(
                line,
                format!("host name '{name}': letters, digits, '.', '_' and '-' only (it names a directory), at most {MAX_NAME}"),
            ));
        }
        let host = parse_host(text, name, spanned.get_ref(), line)?;
        declared.hosts.insert(name.clone(), host);
        declared.lines.insert(name.clone(), line);
    }
    for needed in [SENDER, RECEIVER] {
        if !declared.hosts.contains_key(needed) {
            return Err(PlanError::at(
                first_line.or(target_line),
                format!("target = \"hosts\" needs [hosts.{SENDER}] and [hosts.{RECEIVER}]: [hosts.{needed}] is missing"),
            ));
        }
    }
    Ok(Some(declared))
}

fn parse_host(
    text: &str,
    name: &str,
    h: &HostFile,
    line: Option<usize>,
) -> Result<Host, PlanError> {
    let at = |s: &Spanned<String>| line_of(text, s.span().start);
    let agent = match &h.agent {
        None => None,
        Some(a) => Some(a.get_ref().parse::<IpAddr>().map_err(|_| {
            PlanError::at(
                at(a),
                format!("host {name}: agent '{}' is not an IPv4 or IPv6 address (names are not resolved)", a.get_ref()),
            )
        })?),
    };
    let agent4 = match &h.agent4 {
        None => None,
        Some(a) => Some(a.get_ref().parse::<Ipv4Addr>().map_err(|_| {
            PlanError::at(
                at(a),
                format!(
                    "host {name}: agent4 '{}' is not an IPv4 address",
                    a.get_ref()
                ),
            )
        })?),
    };
    let agent6 = match &h.agent6 {
        None => None,
        Some(a) => Some(a.get_ref().parse::<Ipv6Addr>().map_err(|_| {
            PlanError::at(
                at(a),
                format!(
                    "host {name}: agent6 '{}' is not an IPv6 address (no brackets, no zone)",
                    a.get_ref()
                ),
            )
        })?),
    };
    if let (Some(a), true) = (&h.agent, agent4.is_some() || agent6.is_some()) {
        return Err(PlanError::at(
            at(a),
            format!("host {name}: agent gives the address for both families: give it, or agent4/agent6, not both"),
        ));
    }
    let dns = match &h.name {
        Some(n) if agent.is_some() || agent4.is_some() || agent6.is_some() => {
            return Err(PlanError::at(
                at(n),
                format!("host {name}: name gives both addresses when the plan starts: give it, or agent/agent4/agent6, not both"),
            ))
        }
        Some(n) if n.get_ref().trim().is_empty() || n.get_ref().contains(char::is_whitespace) => {
            return Err(PlanError::at(
                at(n),
                format!("host {name}: name '{}' is not a host name", n.get_ref()),
            ))
        }
        Some(n) => Some(n.get_ref().clone()),
        None => None,
    };
    if agent.is_none() && agent4.is_none() && agent6.is_none() && dns.is_none() {
        return Err(PlanError::at(
            line,
            format!("host {name}: no address: give agent = \"ADDR\", or agent4 and/or agent6, or name = \"HOST\""),
        ));
    }
    let port = match &h.port {
        None => DEFAULT_AGENT_PORT,
        Some(p) if *p.get_ref() == 0 => {
            return Err(PlanError::at(
                line_of(text, p.span().start),
                format!("host {name}: port 0: the agent's port (default {DEFAULT_AGENT_PORT})"),
            ))
        }
        Some(p) => *p.get_ref(),
    };
    let key = key_source(
        text,
        h.key_file.as_ref(),
        h.key_env.as_ref(),
        &format!("host {name}"),
    )?;
    Ok(Host {
        name: dns,
        agent,
        agent4,
        agent6,
        port,
        key,
    })
}

/// Where `who`'s key comes from: `key_file` or `key_env` (at most one), or nowhere; a
/// file that names nothing or a variable name no environment can hold is refused with
/// its line. `[hosts.NAME]` and `[peer]` take their keys alike.
pub(crate) fn key_source(
    text: &str,
    key_file: Option<&Spanned<String>>,
    key_env: Option<&Spanned<String>>,
    who: &str,
) -> Result<Option<KeySource>, PlanError> {
    let at = |s: &Spanned<String>| line_of(text, s.span().start);
    match (key_file, key_env) {
        (Some(_), Some(e)) => Err(PlanError::at(
            at(e),
            format!("{who}: key_file or key_env, not both"),
        )),
        (Some(f), None) if f.get_ref().trim().is_empty() => Err(PlanError::at(
            at(f),
            format!("{who}: key_file names no file"),
        )),
        (Some(f), None) => Ok(Some(KeySource::File(f.get_ref().clone()))),
        (None, Some(e)) => {
            let var = e.get_ref();
            if var.is_empty() || var.contains(['=', '\0']) {
                return Err(PlanError::at(
                    at(e),
                    format!("{who}: key_env '{var}' is not an environment variable's name"),
                ));
            }
            Ok(Some(KeySource::Env(var.clone())))
        }
        (None, None) => Ok(None),
    }
}

/// A point's (or `[flow]`'s) `from` and `to`: declared hosts in a hosts plan, a
/// mistake in any other.
pub(crate) fn point_ends(
    text: &str,
    table: &Spanned<toml::Table>,
    declared: Option<&Declared>,
) -> Result<(Option<String>, Option<String>), PlanError> {
    let mut out = [None, None];
    for (i, key) in ["from", "to"].into_iter().enumerate() {
        let Some(value) = table.get_ref().get(key) else {
            continue;
        };
        let line = key_line(text, table.span(), key);
        let Some(declared) = declared else {
            return Err(PlanError::at(
                line,
                format!("{key} names a host: only with target = \"hosts\" and its [hosts]"),
            ));
        };
        out[i] = Some(declared.host_name(value, key, line)?);
    }
    let [from, to] = out;
    Ok((from, to))
}

impl Declared {
    fn host_name(
        &self,
        value: &toml::Value,
        key: &str,
        line: Option<usize>,
    ) -> Result<String, PlanError> {
        let name = value.as_str().ok_or_else(|| {
            PlanError::at(
                line,
                format!("{key}: the name of a host, e.g. {key} = \"{SENDER}\""),
            )
        })?;
        if !self.hosts.contains_key(name) {
            return Err(PlanError::at(
                line,
                format!(
                    "{key} = \"{name}\": no such host; the plan declares {}",
                    self.hosts.keys().cloned().collect::<Vec<_>>().join(", ")
                ),
            ));
        }
        Ok(name.to_owned())
    }
}

/// What a background flow's `from` and `to` say: whether it runs from the point's
/// sender, and the hosts named. Without hosts, `from` is `"bg-a"` or `"sender"` and
/// `to` is a mistake; in a hosts plan, the hosts a flow from anywhere but the point's
/// sender defaults to (`bg-a`, `bg-b`) must be declared.
pub(crate) fn background_ends(
    from: Option<&toml::Value>,
    to: Option<&toml::Value>,
    line: Option<usize>,
    declared: Option<&Declared>,
) -> Result<(bool, Option<String>, Option<String>), PlanError> {
    let from_sender = from.and_then(toml::Value::as_str) == Some(SENDER);
    let Some(declared) = declared else {
        if to.is_some() {
            return Err(PlanError::at(
                line,
                "background to names a host: only with target = \"hosts\"",
            ));
        }
        return match from.map(toml::Value::as_str) {
            None | Some(Some(SENDER | BG_FROM)) => Ok((from_sender, None, None)),
            Some(_) => Err(PlanError::at(
                line,
                "background from: \"bg-a\" (the default) or \"sender\"",
            )),
        };
    };
    let from = match from {
        Some(_) if from_sender => None,
        Some(v) => Some(declared.host_name(v, "background from", line)?),
        None => None,
    };
    let to = match to {
        Some(v) => Some(declared.host_name(v, "background to", line)?),
        None => None,
    };
    if !from_sender {
        for (given, default, key) in [(&from, BG_FROM, "from"), (&to, BG_TO, "to")] {
            if given.is_none() && !declared.hosts.contains_key(default) {
                return Err(PlanError::at(
                    line,
                    format!("background {key}: by default host {default}, which the plan does not declare: declare [hosts.{default}], or name a host ({key} = \"HOST\"; from = \"{SENDER}\" runs beside the measured flow)"),
                ));
            }
        }
    }
    Ok((from_sender, from, to))
}

/// In a hosts plan, name every end: the point's (default `sender` → `receiver`), and
/// each background flow's (`from = "sender"`: the point's ends; otherwise `bg-a` →
/// `bg-b` unless named).
pub(crate) fn resolve(point: &mut Point) {
    let from = point.from.get_or_insert_with(|| SENDER.to_owned()).clone();
    let to = point.to.get_or_insert_with(|| RECEIVER.to_owned()).clone();
    for b in &mut point.background {
        let (f, t) = if b.from_sender {
            (from.clone(), to.clone())
        } else {
            (BG_FROM.to_owned(), BG_TO.to_owned())
        };
        if b.from_sender || b.from.is_none() {
            b.from = Some(f);
        }
        b.to.get_or_insert(t);
    }
}

/// Every host has an address to reach its agent in runs of each family, and every host
/// a flow goes to an address of each family to send to.
pub(crate) fn check_families(
    declared: &Declared,
    points: &[Point],
    families: &[u8],
) -> Result<(), PlanError> {
    let receivers: BTreeSet<&str> = points
        .iter()
        .flat_map(|p| {
            p.to.iter().chain(
                p.background
                    .iter()
                    .filter_map(|b: &Background| b.to.as_ref()),
            )
        })
        .map(String::as_str)
        .collect();
    for (name, host) in &declared.hosts {
        // A name gives both families (its lookup is checked when the plan starts).
        if host.name.is_some() {
            continue;
        }
        let line = declared.lines.get(name).copied().flatten();
        for &family in families {
            if host.agent_addr(family).is_none() {
                return Err(PlanError::at(
                    line,
                    format!("host {name} has no IPv{family} address, and the plan measures IPv{family}: give agent{family} (or agent)"),
                ));
            }
            if receivers.contains(name.as_str()) && host.dest(family).is_none() {
                return Err(PlanError::at(
                    line,
                    format!("host {name} receives flows, and the plan measures IPv{family}, but it has no IPv{family} address to send to: give agent{family}"),
                ));
            }
        }
    }
    Ok(())
}

/// A name's lookup: its IPv4 and IPv6 address, or one line saying why not.
pub type Lookup = dyn Fn(&str) -> Result<(Ipv4Addr, Ipv6Addr), String>;

/// A host's name and the addresses its lookup gave when the plan started
/// (`hosts/HOST/addresses.json`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Named {
    /// The host in the plan (`[hosts.HOST]`).
    pub host: String,
    /// Its `name`.
    pub name: String,
    /// Its A record.
    pub v4: Ipv4Addr,
    /// Its AAAA record.
    pub v6: Ipv6Addr,
}

impl Named {
    /// Where it is kept in a run directory.
    pub fn file(&self) -> String {
        format!("hosts/{}/addresses.json", file_safe(&self.host))
    }

    /// `self` (looked up now) against `before` (the run directory's, from the start):
    /// a resume measures the same addresses, or says why it cannot.
    pub fn same_as(&self, before: &Named) -> Result<(), String> {
        if (self.v4, self.v6) == (before.v4, before.v6) {
            return Ok(());
        }
        Err(format!(
            "host {}: {} was {} and {} when the run started, and is {} and {} now: a resume measures the addresses it started with (start another run directory for the new ones)",
            self.host, self.name, before.v4, before.v6, self.v4, self.v6
        ))
    }
}

/// Every named host's `agent4` and `agent6` from `lookup` of its name (one address a
/// family, or one line saying which record is missing: `dualstack::pair`), and what
/// each name gave.
pub fn resolve_names(
    hosts: &mut BTreeMap<String, Host>,
    lookup: &Lookup,
) -> Result<Vec<Named>, String> {
    let mut out = Vec::new();
    for (host, h) in hosts.iter_mut() {
        let Some(name) = &h.name else { continue };
        let (v4, v6) = lookup(name).map_err(|e| format!("host {host}: {e}"))?;
        h.agent4 = Some(v4);
        h.agent6 = Some(v6);
        out.push(Named {
            host: host.clone(),
            name: name.clone(),
            v4,
            v6,
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::Plan;

    const PLAN: &str = r#"version = 1
name = "across"
duration = "2s"
target = "hosts"

[flow]
udp = true
rate = "100pps"

[factors]
size = [64, 512]

[[points]]
label = "back"
from = "receiver"
to = "bg-a"
background = [{ from = "sender", udp = true }, { tcp = true, bulk = true }, { from = "bg-b", to = "receiver", udp = true }]

[hosts.sender]
agent = "198.18.1.2"
key_file = "keys/sender.key"

[hosts.receiver]
agent4 = "198.18.4.2"
agent6 = "2001:2:0:4::2"
port = 5000
key_env = "RECEIVER_KEY"

[hosts.bg-a]
agent4 = "198.18.2.2"
agent6 = "2001:2:0:2::2"

[hosts.bg-b]
agent4 = "198.18.3.2"
agent6 = "2001:2:0:3::2"
"#;

    #[test]
    fn a_hosts_plan_names_each_flows_ends() {
        let p = Plan::parse(PLAN, false).unwrap();
        assert_eq!(p.target, crate::plan::Target::Hosts);
        assert_eq!(
            p.hosts.keys().map(String::as_str).collect::<Vec<_>>(),
            ["bg-a", "bg-b", "receiver", "sender"]
        );
        let sender = &p.hosts["sender"];
        assert_eq!(sender.agent, Some("198.18.1.2".parse().unwrap()));
        assert_eq!(sender.port, DEFAULT_AGENT_PORT);
        assert_eq!(sender.key, Some(KeySource::File("keys/sender.key".into())));
        let receiver = &p.hosts["receiver"];
        assert_eq!(receiver.port, 5000);
        assert_eq!(receiver.key, Some(KeySource::Env("RECEIVER_KEY".into())));
        // The sweep's points run sender → receiver, the extra point as it says.
        let swept = &p.points[0];
        assert_eq!(
            (swept.from.as_deref(), swept.to.as_deref()),
            (Some("sender"), Some("receiver"))
        );
        assert_eq!(swept.args(), ["--udp", "--rate", "100pps", "--size", "64"]);
        let back = &p.points[2];
        assert_eq!(
            (back.from.as_deref(), back.to.as_deref()),
            (Some("receiver"), Some("bg-a"))
        );
        assert!(!back.args().iter().any(|a| a == "--from" || a == "--to"));
        let ends: Vec<(bool, Option<&str>, Option<&str>)> = back
            .background
            .iter()
            .map(|b| (b.from_sender, b.from.as_deref(), b.to.as_deref()))
            .collect();
        assert_eq!(
            ends,
            [
                (true, Some("receiver"), Some("bg-a")),
                (false, Some("bg-a"), Some("bg-b")),
                (false, Some("bg-b"), Some("receiver")),
            ]
        );
        assert_eq!(back.background[2].args(), ["--udp"]);
        // Resolved plans read back as they were written (resume compares them), with
        // where each key comes from but never a key.
        let json = serde_json::to_string(&p).unwrap();
        assert!(json.contains(r#""key":{"env":"RECEIVER_KEY"}"#), "{json}");
        assert_eq!(serde_json::from_str::<Plan>(&json).unwrap(), p);
    }

    #[test]
    fn addresses_follow_the_run_s_family() {
        let p = Plan::parse(PLAN, false).unwrap();
        let sender = &p.hosts["sender"];
        // One address reaches the agent in both families; flows go to it in its own.
        assert_eq!(sender.agent_addr(6).unwrap().to_string(), "198.18.1.2:4646");
        assert_eq!(sender.dest(4), Some("198.18.1.2".parse().unwrap()));
        assert_eq!(sender.dest(6), None);
        let receiver = &p.hosts["receiver"];
        assert_eq!(
            receiver.agent_addr(6).unwrap().to_string(),
            "[2001:2:0:4::2]:5000"
        );
        assert_eq!(
            receiver.agent_addr(4).unwrap().to_string(),
            "198.18.4.2:5000"
        );
        assert_eq!(
            receiver.describe(),
            "IPv4 198.18.4.2, IPv6 2001:2:0:4::2, port 5000, key from $RECEIVER_KEY"
        );
        assert_eq!(
            sender.describe(),
            "agent 198.18.1.2 (both families), port 4646, key from keys/sender.key"
        );
    }

    #[test]
    fn the_send_and_clock_commands_carry_addresses_in_argv_and_keys_in_the_environment() {
        let p = Plan::parse(PLAN, false).unwrap();
        let keys = BTreeMap::from([("receiver".to_owned(), Key::new("r-secret"))]);
        let hosts = Hosts::new(p.hosts.clone(), keys);
        let fg = hosts
            .send(
                "sender",
                "receiver",
                6,
                vec!["--udp".into()],
                2_000_000_000,
                false,
            )
            .unwrap();
        assert_eq!(
            fg.argv,
            [
                "send",
                "--from",
                "198.18.1.2:4646",
                "2001:2:0:4::2",
                "--port",
                "5000",
                "--udp",
                "--duration",
                "2000000000ns",
                "--json",
                "--connect-timeout",
                "30s"
            ]
        );
        assert_eq!(
            fg.env,
            [(AGENT_KEY_ENV, None), (KEY_ENV, Some(Key::new("r-secret")))]
        );
        assert!(!format!("{fg:?}").contains("r-secret"), "Debug hides keys");
        let bg = hosts
            .send("receiver", "sender", 4, vec!["--tcp".into()], 5, true)
            .unwrap();
        assert_eq!(
            bg.argv,
            [
                "send",
                "--from",
                "198.18.4.2:5000",
                "198.18.1.2",
                "--port",
                "4646",
                "--tcp",
                "--duration",
                "5ns",
                "--json",
                "--announce-start",
                "--connect-timeout",
                "30s"
            ]
        );
        assert_eq!(
            bg.env,
            [(AGENT_KEY_ENV, Some(Key::new("r-secret"))), (KEY_ENV, None)]
        );
        // IPv6 agents are written in brackets, destinations bare (`--port` apart).
        let fg6 = hosts
            .send("receiver", "bg-a", 6, Vec::new(), 1, false)
            .unwrap();
        assert_eq!(
            fg6.argv[1..6],
            [
                "--from",
                "[2001:2:0:4::2]:5000",
                "2001:2:0:2::2",
                "--port",
                "4646"
            ]
        );
        // The sender has no IPv6 address to send to; nobody is called moon.
        let e = hosts
            .send("receiver", "sender", 6, Vec::new(), 1, false)
            .unwrap_err();
        assert_eq!(e, "host sender has no IPv6 address");
        assert!(hosts
            .send("moon", "sender", 4, Vec::new(), 1, false)
            .is_err());
        let (agent, clock) = hosts.clock("receiver", 6).unwrap();
        assert_eq!(agent.to_string(), "[2001:2:0:4::2]:5000");
        assert_eq!(
            clock.argv,
            ["clock", "--peer", "[2001:2:0:4::2]:5000", "--json"]
        );
        assert_eq!(
            clock.env,
            [(KEY_ENV, Some(Key::new("r-secret"))), (AGENT_KEY_ENV, None)]
        );
        let (_, clock) = hosts.clock("sender", 4).unwrap();
        assert_eq!(clock.env[0], (KEY_ENV, None));
        // The environment reaches the child: set, or removed.
        let mut cmd = std::process::Command::new("true");
        cmd.env(AGENT_KEY_ENV, "stale");
        fg.apply_env(&mut cmd);
        let envs: Vec<(String, Option<String>)> = cmd
            .get_envs()
            .map(|(k, v)| {
                (
                    k.to_string_lossy().into_owned(),
                    v.map(|v| v.to_string_lossy().into_owned()),
                )
            })
            .collect();
        assert_eq!(
            envs,
            [
                (AGENT_KEY_ENV.to_owned(), None),
                (KEY_ENV.to_owned(), Some("r-secret".to_owned()))
            ]
        );
    }

    #[test]
    fn keys_come_from_files_beside_the_plan_or_the_environment() {
        let dir = std::env::temp_dir().join(format!("dualperf-keys-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("keys")).unwrap();
        std::fs::write(dir.join("keys/sender.key"), "s3cret\r\n").unwrap();
        let p = Plan::parse(PLAN, false).unwrap();
        let env = |v: &str| (v == "RECEIVER_KEY").then(|| "r-key".to_owned());
        let keys = read_keys(&p.hosts, &dir, &env).unwrap();
        assert_eq!(keys.len(), 2, "hosts without a key have none");
        assert_eq!(keys["sender"].expose(), "s3cret");
        assert_eq!(keys["receiver"].expose(), "r-key");
        let e = read_keys(&p.hosts, &dir, &|_| None).unwrap_err();
        assert_eq!(
            e.to_string(),
            "host receiver: key_env: the environment variable RECEIVER_KEY is not set"
        );
        let e = read_keys(&p.hosts, &dir.join("elsewhere"), &env).unwrap_err();
        let text = e.to_string();
        assert!(
            text.starts_with("host sender: key_file ")
                && text.contains("elsewhere/keys/sender.key"),
            "{e}"
        );
        std::fs::write(dir.join("keys/sender.key"), "\n").unwrap();
        let e = read_keys(&p.hosts, &dir, &env).unwrap_err();
        assert!(e.to_string().contains("is empty"), "{e}");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn hosts_mistakes_name_their_line() {
        for (from, to, marker, want) in [
            // [hosts] without the target: the first host's line.
            (
                "target = \"hosts\"\n",
                "",
                "[hosts.sender]",
                "[hosts] needs target = \"hosts\"",
            ),
            (
                "target = \"hosts\"\n",
                "target = \"loopback\"\n",
                "[hosts.sender]",
                "[hosts] needs target",
            ),
            (
                "[hosts.receiver]",
                "[hosts.other]",
                "[hosts.sender]",
                "[hosts.receiver] is missing",
            ),
            (
                "[hosts.bg-b]",
                "[hosts.\"b b\"]",
                "[hosts.\"b b\"]",
                "host name 'b b'",
            ),
            (
                "agent = \"198.18.1.2\"",
                "agent = \"sender.example\"",
                "sender.example",
                "names are not resolved",
            ),
            (
                "agent4 = \"198.18.4.2\"",
                "agent4 = \"2001:2::1\"",
                "2001:2::1",
                "not an IPv4 address",
            ),
            (
                "agent6 = \"2001:2:0:4::2\"",
                "agent6 = \"[2001:2:0:4::2]\"",
                "[2001:2:0:4::2]",
                "no brackets",
            ),
            ("port = 5000", "port = 0", "port = 0", "port 0"),
            ("port = 5000", "port = 70000", "port = 70000", "u16"),
            ("port = 5000", "colour = 1", "colour", "unknown field `colour`"),
            (
                "key_env = \"RECEIVER_KEY\"",
                "key_file = \"k\"\nkey_env = \"RECEIVER_KEY\"",
                "key_env",
                "key_file or key_env, not both",
            ),
            (
                "key_env = \"RECEIVER_KEY\"",
                "key_env = \"A=B\"",
                "A=B",
                "not an environment variable",
            ),
            (
                "key_file = \"keys/sender.key\"",
                "key_file = \" \"",
                "key_file",
                "names no file",
            ),
            (
                "agent = \"198.18.1.2\"",
                "agent = \"198.18.1.2\"\nagent6 = \"2001:2::9\"",
                "agent = ",
                "not both",
            ),
            (
                "agent = \"198.18.1.2\"",
                "port = 1",
                "[hosts.sender]",
                "host sender: no address",
            ),
            (
                "from = \"receiver\"",
                "from = \"moon\"",
                "moon",
                "from = \"moon\": no such host; the plan declares bg-a, bg-b, receiver, sender",
            ),
            ("to = \"bg-a\"", "to = 3", "to = 3", "the name of a host"),
            (
                "size = [64, 512]",
                "size = [64, 512]\nfrom = [\"sender\", \"bg-a\"]",
                "from = [",
                "from is not a factor",
            ),
            (
                "to = \"receiver\", udp",
                "to = \"moon\", udp",
                "background",
                "background to = \"moon\": no such host",
            ),
            (
                "{ from = \"sender\", udp",
                "{ from = 7, udp",
                "background",
                "background from: the name of a host",
            ),
            // IPv6 runs would send to the sender, which has only an IPv4 address.
            (
                "to = \"bg-a\"",
                "to = \"sender\"",
                "[hosts.sender]",
                "host sender receives flows, and the plan measures IPv6, but it has no IPv6 address",
            ),
            (
                "agent6 = \"2001:2:0:2::2\"\n",
                "",
                "[hosts.bg-a]",
                "host bg-a has no IPv6 address, and the plan measures IPv6",
            ),
        ] {
            assert!(PLAN.contains(from), "{from}");
            let text = PLAN.replacen(from, to, 1);
            let line = text.lines().position(|l| l.contains(marker)).unwrap() + 1;
            let e = Plan::parse(&text, false).unwrap_err();
            assert!(e.to_string().contains(want), "{want}: {e}");
            assert_eq!(e.line, Some(line), "{want}: {e}");
        }
        // Measuring IPv4 only, the sender may receive.
        let v4 = PLAN
            .replace("to = \"bg-a\"", "to = \"sender\"")
            .replace("size = [64, 512]", "size = [64, 512]\nip = [4]");
        assert!(Plan::parse(&v4, false).is_ok());
    }

    #[test]
    fn from_and_to_need_a_hosts_plan_and_background_defaults_need_their_hosts() {
        let plain = "version = 1\nname = \"x\"\nduration = \"1s\"\n\n[flow]\nudp = true\n";
        for (extra, want) in [
            (
                "from = \"sender\"\n",
                "from names a host: only with target = \"hosts\"",
            ),
            ("to = \"receiver\"\n", "to names a host"),
            (
                "background = [{ to = \"bg-b\" }]\n",
                "background to names a host",
            ),
            (
                "background = [{ from = \"r1\" }]\n",
                "\"bg-a\" (the default) or \"sender\"",
            ),
        ] {
            let e = Plan::parse(&format!("{plain}{extra}"), false).unwrap_err();
            assert!(e.to_string().contains(want), "{extra}: {e}");
            assert_eq!(e.line, Some(7), "{extra}: {e}");
        }
        // A lab plan's background keeps its meaning and serialises as before.
        let lab = Plan::parse(
            &format!("{plain}background = [{{ from = \"sender\" }}, {{ from = \"bg-a\" }}]\n"),
            false,
        )
        .unwrap();
        let json = serde_json::to_value(&lab).unwrap();
        assert!(json.get("hosts").is_none());
        assert!(json["points"][0].get("from").is_none());
        assert_eq!(json["points"][0]["background"][0]["from_sender"], true);
        assert!(json["points"][0]["background"][0].get("from").is_none());
        assert!(json["points"][0]["background"][1]
            .get("from_sender")
            .is_none());
        // Without bg-a, a background flow must say where it comes from.
        let text = PLAN.replace(
            "[hosts.bg-a]\nagent4 = \"198.18.2.2\"\nagent6 = \"2001:2:0:2::2\"\n",
            "",
        );
        let text = text.replace("to = \"bg-a\"", "to = \"bg-b\"");
        let e = Plan::parse(&text, false).unwrap_err();
        assert!(e.to_string().contains("by default host bg-a"), "{e}");
        let bg_line = text
            .lines()
            .position(|l| l.starts_with("background"))
            .unwrap()
            + 1;
        assert_eq!(e.line, Some(bg_line));
        // Naming a host instead is fine, its `to` still defaulting to bg-b.
        let ok = text.replace(
            "{ tcp = true, bulk = true }",
            "{ from = \"receiver\", tcp = true, bulk = true }",
        );
        let p = Plan::parse(&ok, false).unwrap();
        let b = &p.points[2].background[1];
        assert_eq!(
            (b.from.as_deref(), b.to.as_deref()),
            (Some("receiver"), Some("bg-b"))
        );
        // [flow] may set the ends of every point; a point's own win.
        let flipped = PLAN.replace(
            "rate = \"100pps\"\n",
            "rate = \"100pps\"\nfrom = \"bg-a\"\nto = \"bg-b\"\n",
        );
        let p = Plan::parse(&flipped, false).unwrap();
        assert_eq!(
            (p.points[0].from.as_deref(), p.points[0].to.as_deref()),
            (Some("bg-a"), Some("bg-b"))
        );
        assert_eq!(
            (p.points[2].from.as_deref(), p.points[2].to.as_deref()),
            (Some("receiver"), Some("bg-a"))
        );
        // The point's own sender: the background runs beside it.
        assert_eq!(p.points[0].background.len(), 0);
        let b = &p.points[2].background[0];
        assert_eq!(
            (b.from.as_deref(), b.to.as_deref()),
            (Some("receiver"), Some("bg-a"))
        );
    }

    #[test]
    fn a_named_host_resolves_per_family_and_a_missing_aaaa_is_named() {
        let named = PLAN.replace(
            "agent4 = \"198.18.4.2\"\nagent6 = \"2001:2:0:4::2\"\nport = 5000",
            "name = \"r.example\"\nport = 5000",
        );
        let p = Plan::parse(&named, false).unwrap();
        let mut hosts = p.hosts.clone();
        assert_eq!(hosts["receiver"].name.as_deref(), Some("r.example"));
        assert_eq!(hosts["receiver"].dest(4), None, "not looked up yet");
        let lookup = |n: &str| match n {
            "r.example" => Ok((
                "198.18.4.2".parse().unwrap(),
                "2001:2:0:4::2".parse().unwrap(),
            )),
            other => Err(format!(
                "{other} has an A record (198.18.4.9) but no AAAA record"
            )),
        };
        let got = resolve_names(&mut hosts, &lookup).unwrap();
        let want = Named {
            host: "receiver".into(),
            name: "r.example".into(),
            v4: "198.18.4.2".parse().unwrap(),
            v6: "2001:2:0:4::2".parse().unwrap(),
        };
        assert_eq!(got, std::slice::from_ref(&want));
        assert_eq!(want.file(), "hosts/receiver/addresses.json");
        assert_eq!(
            Hosts::new(hosts, BTreeMap::new())
                .ends("sender", "receiver", 6)
                .unwrap()
                .1
                .to_string(),
            "[2001:2:0:4::2]:5000"
        );
        // A missing family stops the plan naming the record.
        let mut other = p.hosts.clone();
        other.get_mut("receiver").unwrap().name = Some("only4".into());
        assert_eq!(
            resolve_names(&mut other, &lookup).unwrap_err(),
            "host receiver: only4 has an A record (198.18.4.9) but no AAAA record"
        );
        // A resume that looks it up differently is refused naming both.
        let moved = Named {
            v6: "2001:2:0:4::9".parse().unwrap(),
            ..want.clone()
        };
        assert_eq!(want.same_as(&want), Ok(()));
        assert_eq!(
            moved.same_as(&want).unwrap_err(),
            "host receiver: r.example was 198.18.4.2 and 2001:2:0:4::2 when the run started, and is 198.18.4.2 and 2001:2:0:4::9 now: a resume measures the addresses it started with (start another run directory for the new ones)"
        );
        // A name and an address: one or the other.
        let both = PLAN.replace("port = 5000", "name = \"r.example\"\nport = 5000");
        let e = Plan::parse(&both, false).unwrap_err();
        assert_eq!(e.line, Some(26));
        assert!(e.message.contains("not both"), "{e}");
    }
}
