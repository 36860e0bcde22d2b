//! A mesh campaign's plan (`dualperf campaign MESH.toml`): a set of agents, every ordered
//! pair, both families, chosen tests, repeated in rounds on a schedule with a random
//! slip, as perfSONAR's psconfig schedules its meshes. Sans-IO: [`Mesh::parse`] checks
//! the file (untrusted text: never panics), [`Mesh::work`] lists the runs with their
//! offsets from the campaign's start. The queue that runs them is `pgqueue`.
//!
//! ```toml
//! version = 1
//! name = "fleet"
//! rounds = 2            # how many times every pair, family and test is measured
//! interval = "1h"       # between the starts of two rounds
//! slip = "5min"         # each run starts up to this much after its round's start
//!
//! [[agent]]
//! name = "h01"
//! ipv4 = "198.18.2.1"   # either family may be missing: its runs are recorded failed
//! ipv6 = "2001:2:0:2::1"
//!
//! [[test]]
//! name = "rtt"
//! args = ["--meter", "rtt", "--rate", "100pps", "--duration", "1s"]
//!
//! [[test]]
//! name = "throughput"
//! exclusive = true      # never two on one host at once
//! args = ["--udp", "--bulk", "--duration", "2s"]
//! ```

use std::collections::BTreeSet;
use std::net::{Ipv4Addr, Ipv6Addr};

use serde::Deserialize;

/// The agents' control port when an agent names none.
pub const DEFAULT_PORT: u16 = 4646;

/// At most this many agents (a mesh of N has N·(N−1) pairs).
pub const MAX_AGENTS: usize = 2_000;

/// A campaign's plan, checked.
#[derive(Clone, Debug, PartialEq)]
pub struct Mesh {
    /// The campaign's name: its runs' key in the queue.
    pub name: String,
    /// Rounds.
    pub rounds: u32,
    /// Between the starts of two rounds, ns.
    pub interval_ns: u64,
    /// The largest random delay of a run after its round's start, ns.
    pub slip_ns: u64,
    /// The agents, by name.
    pub agents: Vec<MeshAgent>,
    /// The tests, by name.
    pub tests: Vec<MeshTest>,
}

/// One agent of the mesh.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MeshAgent {
    /// Its name (unique).
    pub name: String,
    /// Its IPv4 address, if it has one.
    pub ipv4: Option<Ipv4Addr>,
    /// Its IPv6 address, if it has one.
    pub ipv6: Option<Ipv6Addr>,
    /// Its control port.
    pub port: u16,
}

/// One test every pair runs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MeshTest {
    /// Its name (unique).
    pub name: String,
    /// A throughput test: no two exclusive tests share a host at once.
    pub exclusive: bool,
    /// `dualperf send` options of the flow (not the destination, `--from` or keys).
    pub args: Vec<String>,
}

/// One run of a campaign.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Work {
    /// Its round, from 0.
    pub round: u32,
    /// The sending agent.
    pub src: String,
    /// The receiving agent.
    pub dst: String,
    /// 4 or 6.
    pub family: u8,
    /// The test's name.
    pub test: String,
    /// Whether it is exclusive.
    pub exclusive: bool,
    /// The agents' addresses in that family, `None` where an agent has none.
    pub src_addr: Option<std::net::IpAddr>,
    /// See `src_addr`.
    pub dst_addr: Option<std::net::IpAddr>,
    /// When it may start, after the campaign's start, ns: its round's start plus its slip.
    pub offset_ns: u64,
}

impl Work {
    /// Why it cannot be run (an agent lacks the family), if it cannot.
    pub fn missing(&self) -> Option<String> {
        let v = self.family;
        match (self.src_addr, self.dst_addr) {
            (None, _) => Some(format!("{} has no IPv{v} address", self.src)),
            (_, None) => Some(format!("{} has no IPv{v} address", self.dst)),
            _ => None,
        }
    }
}

/// Why a mesh file is refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct MeshError(pub String);

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    version: u32,
    name: String,
    #[serde(default = "one")]
    rounds: u32,
    #[serde(default)]
    interval: Option<String>,
    #[serde(default)]
    slip: Option<String>,
    #[serde(default)]
    agent: Vec<AgentFile>,
    #[serde(default)]
    test: Vec<TestFile>,
}

fn one() -> u32 {
    1
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct AgentFile {
    name: String,
    #[serde(default)]
    ipv4: Option<Ipv4Addr>,
    #[serde(default)]
    ipv6: Option<Ipv6Addr>,
    #[serde(default)]
    port: Option<u16>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TestFile {
    name: String,
    #[serde(default)]
    exclusive: bool,
    args: Vec<String>,
}

/// Options a test's `args` may not hold: the campaign sets them.
const SET_BY_CAMPAIGN: [&str; 6] = ["--from", "--key", "--agent-key", "--json", "-J", "--port"];

impl Mesh {
    /// Parse and check a mesh file.
    pub fn parse(text: &str) -> Result<Self, MeshError> {
        let file: File = toml::from_str(text).map_err(|e| MeshError(e.message().to_owned()))?;
        let bad = |m: String| Err(MeshError(m));
        if file.version != 1 {
            return bad(format!("version {} is not 1", file.version));
        }
        let name_ok = |n: &str| {
            !n.is_empty()
                && n.len() <= 64
                && n.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(&b))
        };
        if !name_ok(&file.name) {
            return bad(format!(
                "name {:?}: 1 to 64 letters, digits, '-', '_' or '.'",
                file.name
            ));
        }
        if file.rounds == 0 || file.rounds > 100_000 {
            return bad(format!("rounds = {}: 1 to 100000", file.rounds));
        }
        let length = |key: &str, v: &Option<String>| -> Result<u64, MeshError> {
            match v {
                None => Ok(0),
                Some(s) => traffic::units::parse_duration(s)
                    .map(|d| d.as_nanos())
                    .map_err(|_| {
                        MeshError(format!("{key} = {s:?} is not a length (10s, 5min, 1h)"))
                    }),
            }
        };
        let interval_ns = length("interval", &file.interval)?;
        let slip_ns = length("slip", &file.slip)?;
        if file.rounds > 1 && interval_ns == 0 {
            return bad("more than one round needs an interval".into());
        }
        if file.agent.len() < 2 || file.agent.len() > MAX_AGENTS {
            return bad(format!(
                "{} agents: a mesh needs 2 to {MAX_AGENTS}",
                file.agent.len()
            ));
        }
        let mut names = BTreeSet::new();
        let mut agents = Vec::new();
        for a in file.agent {
            if !name_ok(&a.name) || !names.insert(a.name.clone()) {
                return bad(format!(
                    "agent name {:?} is empty, not a name, or used twice",
                    a.name
                ));
            }
            if a.ipv4.is_none() && a.ipv6.is_none() {
                return bad(format!("agent {} has neither ipv4 nor ipv6", a.name));
            }
            agents.push(MeshAgent {
                name: a.name,
                ipv4: a.ipv4,
                ipv6: a.ipv6,
                port: a.port.unwrap_or(DEFAULT_PORT),
            });
        }
        if file.test.is_empty() {
            return bad("no [[test]]".into());
        }
        let mut tests = Vec::new();
        let mut test_names = BTreeSet::new();
        for t in file.test {
            if !name_ok(&t.name) || !test_names.insert(t.name.clone()) {
                return bad(format!(
                    "test name {:?} is empty, not a name, or used twice",
                    t.name
                ));
            }
            if let Some(a) = t.args.iter().find(|a| {
                SET_BY_CAMPAIGN
                    .iter()
                    .any(|s| a.as_str() == *s || a.starts_with(&format!("{s}=")))
            }) {
                return bad(format!("test {}: {a} is the campaign's to set", t.name));
            }
            tests.push(MeshTest {
                name: t.name,
                exclusive: t.exclusive,
                args: t.args,
            });
        }
        Ok(Self {
            name: file.name,
            rounds: file.rounds,
            interval_ns,
            slip_ns,
            agents,
            tests,
        })
    }

    /// Every run: each round, ordered pair, family (4, then 6) and test, with its offset
    /// (the round's start and a slip drawn from the run's key: the same file gives the
    /// same schedule, to every controller).
    pub fn work(&self) -> Vec<Work> {
        let mut out = Vec::new();
        for round in 0..self.rounds {
            for src in &self.agents {
                for dst in self.agents.iter().filter(|d| d.name != src.name) {
                    for family in [4u8, 6] {
                        let addr = |a: &MeshAgent| -> Option<std::net::IpAddr> {
                            if family == 4 {
                                a.ipv4.map(Into::into)
                            } else {
                                a.ipv6.map(Into::into)
                            }
                        };
                        for test in &self.tests {
                            let key = format!(
                                "{}/{round}/{}/{}/{family}/{}",
                                self.name, src.name, dst.name, test.name
                            );
                            let slip = if self.slip_ns == 0 {
                                0
                            } else {
                                fnv1a(key.as_bytes()) % self.slip_ns
                            };
                            out.push(Work {
                                round,
                                src: src.name.clone(),
                                dst: dst.name.clone(),
                                family,
                                test: test.name.clone(),
                                exclusive: test.exclusive,
                                src_addr: addr(src),
                                dst_addr: addr(dst),
                                offset_ns: u64::from(round)
                                    .saturating_mul(self.interval_ns)
                                    .saturating_add(slip),
                            });
                        }
                    }
                }
            }
        }
        out
    }

    /// An agent by name.
    pub fn agent(&self, name: &str) -> Option<&MeshAgent> {
        self.agents.iter().find(|a| a.name == name)
    }

    /// A test by name.
    pub fn test(&self, name: &str) -> Option<&MeshTest> {
        self.tests.iter().find(|t| t.name == name)
    }
}

/// FNV-1a, 64 bits: a run's slip from its key.
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const MESH: &str = r#"version = 1
name = "m"
rounds = 2
interval = "10s"
slip = "2s"

[[agent]]
name = "a"
ipv4 = "198.18.2.1"
ipv6 = "2001:2:0:2::1"

[[agent]]
name = "b"
ipv4 = "198.18.3.1"
ipv6 = "2001:2:0:3::1"

[[agent]]
name = "c"
ipv4 = "198.18.4.1"

[[test]]
name = "rtt"
args = ["--meter", "rtt"]

[[test]]
name = "tput"
exclusive = true
args = ["--udp", "--bulk"]
"#;

    #[test]
    fn every_round_pair_family_and_test_is_one_run_with_a_slip_below_the_slip() {
        let mesh = Mesh::parse(MESH).unwrap();
        let work = mesh.work();
        // 2 rounds × 6 ordered pairs × 2 families × 2 tests.
        assert_eq!(work.len(), 48);
        let keys: BTreeSet<_> = work
            .iter()
            .map(|w| (w.round, &w.src, &w.dst, w.family, &w.test))
            .collect();
        assert_eq!(keys.len(), 48);
        for w in &work {
            let start = u64::from(w.round) * 10_000_000_000;
            assert!(
                (start..start + 2_000_000_000).contains(&w.offset_ns),
                "{w:?}"
            );
            assert_eq!(w.exclusive, w.test == "tput");
        }
        // The same file, the same schedule; the slips differ between runs.
        assert_eq!(Mesh::parse(MESH).unwrap().work(), work);
        let slips: BTreeSet<_> = work.iter().map(|w| w.offset_ns).collect();
        assert!(slips.len() > 40, "{slips:?}");
    }

    #[test]
    fn a_family_an_agent_lacks_makes_runs_that_say_so() {
        let work = Mesh::parse(MESH).unwrap().work();
        let to_c6: Vec<_> = work
            .iter()
            .filter(|w| w.dst == "c" && w.family == 6)
            .collect();
        assert_eq!(to_c6.len(), 8);
        for w in to_c6 {
            assert_eq!(w.missing().as_deref(), Some("c has no IPv6 address"));
        }
        let a_b4 = work
            .iter()
            .find(|w| w.src == "a" && w.dst == "b" && w.family == 4);
        assert_eq!(a_b4.unwrap().missing(), None);
    }

    #[test]
    fn bad_files_get_a_clear_error() {
        for (edit, want) in [
            (("version = 1", "version = 2"), "version 2 is not 1"),
            (("rounds = 2", "rounds = 0"), "rounds = 0"),
            (
                ("interval = \"10s\"", "interval = \"soon\""),
                "is not a length",
            ),
            (
                ("name = \"c\"\nipv4 = \"198.18.4.1\"", "name = \"c\""),
                "neither ipv4 nor ipv6",
            ),
            (("name = \"b\"", "name = \"a\""), "used twice"),
            (
                ("[\"--meter\", \"rtt\"]", "[\"--from\", \"x\"]"),
                "--from is the campaign's",
            ),
            (
                ("ipv4 = \"198.18.2.1\"", "ipv4 = \"300.1.1.1\""),
                "invalid IPv4",
            ),
            (("slip = \"2s\"", "slop = \"2s\""), "unknown field"),
        ] {
            let text = MESH.replacen(edit.0, edit.1, 1);
            let e = Mesh::parse(&text).unwrap_err();
            assert!(e.0.contains(want), "{edit:?}: {e}");
        }
    }
}
