//! The router's configuration: what `dualperf route --config FILE` reads (TOML) and
//! `dualperf lab up` writes for each router, for a router on a lab's veths or on real
//! interfaces. Each interface's egress emulates a link ([`Emulation`]) whose random
//! loss is [`qos::link::LossModel`] itself.
//!
//! ```toml
//! seed = 2
//!
//! [[interface]]
//! name = "to-sender"
//! ipv4 = "198.18.1.2/24"
//! ipv6 = "2001:2:0:1::2/64"
//! mtu = 1500
//! mac = "02:64:70:00:01:02"      # optional: the MAC the router answers to
//!
//! [interface.emulation]
//! rate_bps = 0
//! delay_ns = 2000000
//! jitter_ns = 1000000
//! limit_packets = 1000
//!
//! [interface.emulation.loss]
//! model = "bernoulli"            # none, bernoulli or gilbert_elliott
//! p = 0.01
//!
//! [[route]]
//! prefix = "198.18.3.0/24"
//! via = "198.18.2.2"
//! interface = "to-r2"
//!
//! [[neighbor]]
//! interface = "to-sender"
//! ip = "198.18.1.1"
//! mac = "02:64:70:00:01:01"
//! ```

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use qos::link::{FamilyImpair, LinkParams};
use serde::{Deserialize, Serialize};
use wire::ethernet;
use wire::time::Duration;

use crate::forward::{Interface, Route};

/// A link's random loss: the config's loss *is* the link model's (`model = "none"`,
/// `"bernoulli"` with `p`, or `"gilbert_elliott"` with `p`, `r`, `loss_good`,
/// `loss_bad`; probabilities 0–1).
pub use qos::link::LossModel;

/// What a router's egress onto a link emulates.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Emulation {
    /// bit/s; 0 = no limit.
    pub rate_bps: u64,
    /// One-way propagation delay, ns.
    pub delay_ns: u64,
    /// Uniform jitter half-width, ns.
    pub jitter_ns: u64,
    /// Random loss.
    #[serde(deserialize_with = "strict_loss")]
    #[schemars(with = "LossModel")]
    pub loss: LossModel,
    /// Queue limit, packets.
    pub limit_packets: u32,
    /// Queue limit, bytes.
    pub limit_bytes: Option<u64>,
    /// What IPv4 packets suffer beyond the above (none when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ipv4: Option<FamilyEmulation>,
    /// What IPv6 packets suffer beyond the above (none when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ipv6: Option<FamilyEmulation>,
}

/// One family's impairment on top of the link's own ([`qos::link::FamilyImpair`]):
/// `[interface.emulation.ipv6]` with `delay_ns = 2000000`, and a loss table
/// `[interface.emulation.ipv6.loss]` as the link's.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FamilyEmulation {
    /// Extra one-way delay, ns.
    #[serde(default)]
    pub delay_ns: u64,
    /// Extra random loss.
    #[serde(default = "no_loss", deserialize_with = "strict_loss")]
    #[schemars(with = "LossModel")]
    pub loss: LossModel,
}

fn no_loss() -> LossModel {
    LossModel::None
}

impl FamilyEmulation {
    fn impair(&self) -> FamilyImpair {
        FamilyImpair {
            delay: Duration::from_nanos(self.delay_ns),
            loss: self.loss,
        }
    }
}

/// [`LossModel`] as a file writes it, where a key the model does not take (`q` for
/// `p`, or `p` with `model = "none"`) is a mistake naming the key: the model itself
/// lives in `qos`, whose serde reading ignores unknown keys.
#[derive(Deserialize)]
#[serde(rename_all = "snake_case", tag = "model", deny_unknown_fields)]
enum LossFile {
    None {},
    Bernoulli {
        p: f64,
    },
    GilbertElliott {
        p: f64,
        r: f64,
        loss_good: f64,
        loss_bad: f64,
    },
}

fn strict_loss<'de, D: serde::Deserializer<'de>>(d: D) -> Result<LossModel, D::Error> {
    Ok(match LossFile::deserialize(d)? {
        LossFile::None {} => LossModel::None,
        LossFile::Bernoulli { p } => LossModel::Bernoulli { p },
        LossFile::GilbertElliott {
            p,
            r,
            loss_good,
            loss_bad,
        } => LossModel::GilbertElliott {
            p,
            r,
            loss_good,
            loss_bad,
        },
    })
}

/// One interface of a router, as `dualperf route --config` reads it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RouterInterface {
    /// Kernel interface name in the router's namespace.
    pub name: String,
    /// The router's IPv4 address on it, with the prefix length.
    pub ipv4: String,
    /// The router's IPv6 address on it, with the prefix length.
    pub ipv6: String,
    /// IP MTU: larger packets get ICMP "fragmentation needed" / "packet too big".
    pub mtu: u32,
    /// IPv6's MTU when it differs from `mtu` (which then holds for IPv4 only): larger
    /// IPv6 packets get "packet too big" with this MTU (RFC 4443, RFC 8201).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mtu6: Option<u32>,
    /// What the router emulates when it sends on this interface.
    pub emulation: Emulation,
    /// The router's MAC on it, when not the interface's own: a lab gives the kernel's
    /// side of a router's veth another MAC (`lab::topology::kernel_mac`), so frames for
    /// the router reach the namespace's kernel as for another host and are dropped at
    /// its first look, instead of being routed, refused and counted as errors.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mac: Option<String>,
}

/// A router's route.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RouterRoute {
    /// `198.18.4.0/24` or `2001:2:0:4::/64`.
    pub prefix: String,
    /// Next hop.
    pub via: String,
    /// Egress interface name.
    pub interface: String,
}

/// A router's static neighbour.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RouterNeighbor {
    /// Interface name.
    pub interface: String,
    /// Address.
    pub ip: String,
    /// MAC.
    pub mac: String,
}

/// A `dualperf route` configuration file (TOML), written by `lab up` for each router
/// and readable and writable by hand for a router on real interfaces.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RouterConfig {
    /// Seed of the links' random loss and jitter.
    #[serde(default)]
    pub seed: u64,
    /// Interfaces.
    #[serde(rename = "interface")]
    pub interfaces: Vec<RouterInterface>,
    /// Routes beyond the interfaces' own subnets.
    #[serde(default, rename = "route")]
    pub routes: Vec<RouterRoute>,
    /// Static neighbours.
    #[serde(default, rename = "neighbor")]
    pub neighbors: Vec<RouterNeighbor>,
}

/// A configuration that cannot be used: what is wrong, naming the interface, route or
/// neighbour.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ConfigError(pub String);

/// A checked configuration: what the forwarder and the egress links are built from,
/// per interface in file order.
#[derive(Clone, Debug, PartialEq)]
pub struct CheckedConfig {
    /// Interface names.
    pub names: Vec<String>,
    /// The router's IPv4 address and prefix length on each.
    pub ipv4: Vec<(Ipv4Addr, u8)>,
    /// The router's IPv6 address and prefix length on each.
    pub ipv6: Vec<(Ipv6Addr, u8)>,
    /// IP MTU of each (IPv4's, and IPv6's unless `mtu6` says otherwise).
    pub mtu: Vec<u32>,
    /// IPv6's own MTU on each, when set.
    pub mtu6: Vec<Option<u32>>,
    /// The MAC the router answers to on each, when not the interface's own.
    pub macs: Vec<Option<ethernet::Address>>,
    /// Each egress link, validated.
    pub links: Vec<LinkParams>,
    /// Routes beyond the interfaces' subnets.
    pub routes: Vec<Route>,
    /// Static neighbours: interface, address, MAC.
    pub neighbors: Vec<(usize, IpAddr, ethernet::Address)>,
    /// Seed of the links' random loss and jitter.
    pub seed: u64,
}

fn prefix<A: std::str::FromStr>(s: &str) -> Option<(A, u8)> {
    let (a, len) = s.split_once('/')?;
    Some((a.parse().ok()?, len.parse().ok()?))
}

/// Whether `ip` is in the benchmarking ranges (198.18.0.0/15, RFC 2544; 2001:2::/48,
/// RFC 5180): the router takes no other address, so a mistaken configuration on a real
/// network cannot answer ARP or NDP for someone else's.
pub fn benchmark_range(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(a) => u32::from(a) & 0xfffe_0000 == u32::from(Ipv4Addr::new(198, 18, 0, 0)),
        IpAddr::V6(a) => {
            let s = a.segments();
            s[0] == 0x2001 && s[1] == 0x0002 && s[2] == 0
        }
    }
}

impl RouterConfig {
    /// Check the configuration: addresses and prefixes that parse and lie in the
    /// benchmarking ranges, MACs, usable link emulation, routes and neighbours on
    /// interfaces that exist.
    pub fn check(&self) -> Result<CheckedConfig, ConfigError> {
        check(self).map_err(ConfigError)
    }
}

impl CheckedConfig {
    /// A configuration file's text (TOML), read and checked.
    pub fn from_toml(text: &str) -> Result<Self, ConfigError> {
        let file: RouterConfig =
            toml::from_str(text).map_err(|e| ConfigError(e.message().to_owned()))?;
        file.check()
    }

    /// This configuration for the `n`th build of the egress links: 0 at start, then
    /// one more at each reload. Build 0 keeps the seed as written; each later one mixes
    /// `n` into it, so a reload draws its losses and jitter afresh instead of replaying
    /// the very same ones. A lab reloads its routers before every run, and repetitions
    /// that all lost the same packets would look exact where they are not.
    pub fn generation(&self, n: u64) -> Self {
        let mut c = self.clone();
        c.seed ^= n.wrapping_mul(0x9e37_79b9_7f4a_7c15);
        c
    }

    /// Interface `i` as the forwarder takes it, answering to `mac` (its configured MAC,
    /// else the interface's own). `kernel_mtu`, the interface's MTU where the kernel
    /// tells it, must hold the configured MTU: the kernel would refuse larger frames.
    pub fn interface(
        &self,
        i: usize,
        mac: ethernet::Address,
        kernel_mtu: Option<u32>,
    ) -> Result<Interface, ConfigError> {
        let (name, mtu6) = (&self.names[i], self.mtu6[i]);
        let mtu = self.mtu[i].max(mtu6.unwrap_or(0));
        if let Some(kernel_mtu) = kernel_mtu.filter(|&k| k < mtu) {
            return Err(ConfigError(format!(
                "{name}: the configured MTU {mtu} is above the interface's {kernel_mtu}: the kernel would refuse the larger frames"
            )));
        }
        Ok(Interface {
            name: name.clone(),
            mac,
            ipv4: Some(self.ipv4[i]),
            ipv6: Some(self.ipv6[i]),
            mtu: self.mtu[i],
            mtu6,
        })
    }
}

fn check(file: &RouterConfig) -> Result<CheckedConfig, String> {
    let mut c = CheckedConfig {
        names: Vec::new(),
        ipv4: Vec::new(),
        ipv6: Vec::new(),
        mtu: Vec::new(),
        mtu6: Vec::new(),
        macs: Vec::new(),
        links: Vec::new(),
        routes: Vec::new(),
        neighbors: Vec::new(),
        seed: file.seed,
    };
    if file.interfaces.is_empty() {
        return Err("no [[interface]]".into());
    }
    for f in &file.interfaces {
        c.names.push(f.name.clone());
        c.ipv4.push(
            prefix(&f.ipv4).ok_or_else(|| {
                format!("interface {}: ipv4 '{}' is not ADDR/LEN", f.name, f.ipv4)
            })?,
        );
        c.ipv6.push(
            prefix(&f.ipv6).ok_or_else(|| {
                format!("interface {}: ipv6 '{}' is not ADDR/LEN", f.name, f.ipv6)
            })?,
        );
        for ip in [
            IpAddr::from(c.ipv4[c.ipv4.len() - 1].0),
            IpAddr::from(c.ipv6[c.ipv6.len() - 1].0),
        ] {
            if !benchmark_range(ip) {
                return Err(format!(
                    "interface {}: {ip} is outside 198.18.0.0/15 and 2001:2::/48, the only ranges dualperf route takes",
                    f.name
                ));
            }
        }
        c.mtu.push(f.mtu);
        if let Some(m) = f.mtu6.filter(|m| !(1280..=65535).contains(m)) {
            return Err(format!(
                "interface {}: mtu6 {m}: 1280 (IPv6's minimum) to 65535",
                f.name
            ));
        }
        c.mtu6.push(f.mtu6);
        c.macs.push(match &f.mac {
            None => None,
            Some(m) => Some(
                m.parse()
                    .map_err(|_| format!("interface {}: mac '{m}' is not a MAC address", f.name))?,
            ),
        });
        let e = &f.emulation;
        let params = LinkParams {
            rate_bps: e.rate_bps,
            overhead_bytes: 0,
            delay: Duration::from_nanos(e.delay_ns),
            jitter: Duration::from_nanos(e.jitter_ns),
            loss: e.loss,
            limit_packets: Some(e.limit_packets),
            limit_bytes: e.limit_bytes,
            v4: e.ipv4.as_ref().map(FamilyEmulation::impair),
            v6: e.ipv6.as_ref().map(FamilyEmulation::impair),
        };
        params
            .validate()
            .map_err(|e| format!("interface {}: {e}", f.name))?;
        c.links.push(params);
    }
    let iface = |name: &str| {
        c.names
            .iter()
            .position(|n| n == name)
            .ok_or_else(|| format!("no interface '{name}'"))
    };
    for r in &file.routes {
        let (p, len) = prefix::<IpAddr>(&r.prefix)
            .ok_or_else(|| format!("route prefix '{}' is not ADDR/LEN", r.prefix))?;
        let via: IpAddr = r
            .via
            .parse()
            .map_err(|_| format!("route via '{}' is not an address", r.via))?;
        let i = iface(&r.interface)?;
        if !benchmark_range(p) || !benchmark_range(via) {
            return Err(format!(
                "route {} via {via}: outside 198.18.0.0/15 and 2001:2::/48",
                r.prefix
            ));
        }
        c.routes.push(Route {
            prefix: p,
            len,
            via: Some(via),
            iface: i,
        });
    }
    for n in &file.neighbors {
        let ip: IpAddr =
            n.ip.parse()
                .map_err(|_| format!("neighbor ip '{}' is not an address", n.ip))?;
        let mac: ethernet::Address = n
            .mac
            .parse()
            .map_err(|_| format!("neighbor mac '{}' is not a MAC address", n.mac))?;
        let i = iface(&n.interface)?;
        if !benchmark_range(ip) {
            return Err(format!(
                "neighbor {ip}: outside 198.18.0.0/15 and 2001:2::/48"
            ));
        }
        c.neighbors.push((i, ip, mac));
    }
    Ok(c)
}

#[cfg(test)]
mod tests {
    use super::*;

    const ROUTER: &str = r#"seed = 2

[[interface]]
name = "to-sender"
ipv4 = "198.18.1.2/24"
ipv6 = "2001:2:0:1::2/64"
mtu = 1500
mac = "02:64:70:00:01:02"

[interface.emulation]
rate_bps = 0
delay_ns = 2000000
jitter_ns = 1000000
limit_packets = 1000

[interface.emulation.loss]
model = "bernoulli"
p = 0.01

[[interface]]
name = "to-r2"
ipv4 = "198.18.2.1/24"
ipv6 = "2001:2:0:2::1/64"
mtu = 1500

[interface.emulation]
rate_bps = 10000000
delay_ns = 0
jitter_ns = 0
limit_packets = 100
limit_bytes = 150000

[interface.emulation.loss]
model = "gilbert_elliott"
p = 0.01
r = 0.25
loss_good = 0.0
loss_bad = 1.0

[[route]]
prefix = "198.18.3.0/24"
via = "198.18.2.2"
interface = "to-r2"

[[neighbor]]
interface = "to-sender"
ip = "198.18.1.1"
mac = "02:64:70:00:01:01"
"#;

    #[test]
    fn the_file_lab_up_writes_reads_and_writes_back_byte_for_byte() {
        let c: RouterConfig = toml::from_str(ROUTER).unwrap();
        assert_eq!(
            c.interfaces[0].emulation.loss,
            LossModel::Bernoulli { p: 0.01 }
        );
        assert_eq!(
            c.interfaces[1].emulation.loss,
            LossModel::GilbertElliott {
                p: 0.01,
                r: 0.25,
                loss_good: 0.0,
                loss_bad: 1.0
            }
        );
        assert_eq!(c.interfaces[1].mac, None);
        assert_eq!(toml::to_string(&c).unwrap(), ROUTER);
        // As JSON (a lab's state and a run's record keep router configurations so).
        let json = serde_json::to_value(&c.interfaces[0].emulation).unwrap();
        assert_eq!(
            json,
            serde_json::json!({
                "rate_bps": 0, "delay_ns": 2_000_000, "jitter_ns": 1_000_000,
                "loss": {"model": "bernoulli", "p": 0.01},
                "limit_packets": 1000, "limit_bytes": null,
            })
        );
        let none = serde_json::json!({"model": "none"});
        assert_eq!(serde_json::to_value(LossModel::None).unwrap(), none);
        assert_eq!(
            serde_json::from_value::<LossModel>(none).unwrap(),
            LossModel::None
        );
        let back: RouterConfig = serde_json::from_value(serde_json::to_value(&c).unwrap()).unwrap();
        assert_eq!(back, c);
    }

    #[test]
    fn per_family_impairments_and_mtu6_read_check_and_write_back() {
        let text = ROUTER
            .replacen("mtu = 1500\n\n", "mtu = 1500\nmtu6 = 1400\n\n", 1)
            .replacen(
                "loss_bad = 1.0\n",
                "loss_bad = 1.0\n\n[interface.emulation.ipv4]\ndelay_ns = 0\n\n[interface.emulation.ipv4.loss]\nmodel = \"bernoulli\"\np = 0.01\n\n[interface.emulation.ipv6]\ndelay_ns = 2000000\n\n[interface.emulation.ipv6.loss]\nmodel = \"none\"\n",
                1,
            );
        let c: RouterConfig = toml::from_str(&text).unwrap();
        assert_eq!(c.interfaces[1].mtu6, Some(1400));
        assert_eq!(c.interfaces[0].mtu6, None);
        let e = &c.interfaces[1].emulation;
        assert_eq!(
            (
                e.ipv4.as_ref().unwrap().loss,
                e.ipv6.as_ref().unwrap().delay_ns
            ),
            (LossModel::Bernoulli { p: 0.01 }, 2_000_000)
        );
        assert_eq!(toml::to_string(&c).unwrap(), text);
        let k = c.check().unwrap();
        assert_eq!(k.mtu6, [None, Some(1400)]);
        assert_eq!(
            k.links[1].v6,
            Some(FamilyImpair {
                delay: Duration::from_millis(2),
                loss: LossModel::None
            })
        );
        assert_eq!(
            k.links[1].v4.unwrap().loss,
            LossModel::Bernoulli { p: 0.01 }
        );
        assert_eq!((k.links[0].v4, k.links[0].v6), (None, None));
        let mac = ethernet::Address([2, 0x64, 0x70, 0, 2, 1]);
        let f = k.interface(1, mac, Some(1500)).unwrap();
        assert_eq!((f.mtu, f.mtu6, f.ipv6_mtu()), (1500, Some(1400), 1400));
        // A key of its own may be left out; an unknown one is named; a bad one refused.
        let short = "[interface.emulation.ipv6]\ndelay_ns = 5\n";
        let f: FamilyEmulation = toml::from_str(&short[27..]).unwrap();
        assert_eq!((f.delay_ns, f.loss), (5, LossModel::None));
        let e = toml::from_str::<FamilyEmulation>("delay = 5\n").unwrap_err();
        assert!(e.message().contains("unknown field `delay`"), "{e}");
        let small = text.replace("mtu6 = 1400", "mtu6 = 1000");
        let e = CheckedConfig::from_toml(&small).unwrap_err();
        assert_eq!(
            e.to_string(),
            "interface to-r2: mtu6 1000: 1280 (IPv6's minimum) to 65535"
        );
        let sure = text.replace(
            "p = 0.01\n\n[interface.emulation.ipv6]",
            "p = 1.5\n\n[interface.emulation.ipv6]",
        );
        let e = CheckedConfig::from_toml(&sure).unwrap_err();
        assert_eq!(
            e.to_string(),
            "interface to-r2: loss: p = 1.5 is not a probability (0 to 1)"
        );
        // IPv6's larger MTU must fit the kernel's too.
        let big = text.replace("mtu6 = 1400", "mtu6 = 9000");
        let e = CheckedConfig::from_toml(&big)
            .unwrap()
            .interface(1, mac, Some(1500))
            .unwrap_err();
        assert!(
            e.to_string().starts_with("to-r2: the configured MTU 9000"),
            "{e}"
        );
    }

    #[test]
    fn each_build_after_the_first_draws_afresh_and_the_same_build_replays() {
        let k = CheckedConfig::from_toml(ROUTER).unwrap();
        assert_eq!(k.generation(0), k);
        assert_eq!(k.generation(1).seed, 2 ^ 0x9e37_79b9_7f4a_7c15);
        assert_eq!(k.generation(1), k.generation(1));
        assert_ne!(k.generation(1).seed, k.generation(2).seed);
        assert_eq!(k.generation(2).links, k.links);
    }

    #[test]
    fn unknown_keys_are_refused() {
        let bad = ROUTER.replace("seed = 2", "seed = 2\nspeed = 3");
        assert!(toml::from_str::<RouterConfig>(&bad).is_err());
    }

    #[test]
    fn unknown_keys_of_the_emulation_and_its_loss_are_refused_by_name() {
        for (from, to, key) in [
            (
                "delay_ns = 2000000",
                "delay_ns = 2000000\ndelay_ms = 2",
                "delay_ms",
            ),
            (
                "limit_packets = 100\n",
                "limit_packets = 100\nlimit = 5\n",
                "limit",
            ),
            (
                "p = 0.01\n\n[[interface]]",
                "p = 0.01\nq = 0.5\n\n[[interface]]",
                "q",
            ),
            (
                "loss_bad = 1.0",
                "loss_bad = 1.0\nloss_ugly = 0.5",
                "loss_ugly",
            ),
            (
                "model = \"bernoulli\"\np = 0.01",
                "model = \"none\"\np = 0.01",
                "p",
            ),
        ] {
            let text = ROUTER.replacen(from, to, 1);
            assert_ne!(text, ROUTER, "{from}");
            let e = toml::from_str::<RouterConfig>(&text).unwrap_err();
            assert!(
                e.message().contains(&format!("unknown field `{key}`")),
                "{to}: {e}"
            );
        }
        let none = ROUTER.replace("model = \"bernoulli\"\np = 0.01", "model = \"none\"");
        let c: RouterConfig = toml::from_str(&none).unwrap();
        assert_eq!(c.interfaces[0].emulation.loss, LossModel::None);
    }

    #[test]
    fn only_benchmarking_addresses_are_taken() {
        for ok in [
            "198.18.0.1",
            "198.19.255.254",
            "2001:2::1",
            "2001:2:0:ffff::1",
        ] {
            assert!(benchmark_range(ok.parse().unwrap()), "{ok}");
        }
        for bad in [
            "198.20.0.1",
            "192.168.1.1",
            "10.0.0.1",
            "2001:2:1::1",
            "2001:db8::1",
            "::1",
        ] {
            assert!(!benchmark_range(bad.parse().unwrap()), "{bad}");
        }
    }

    #[test]
    fn a_checked_configuration_holds_what_the_forwarder_and_links_are_built_from() {
        let c: RouterConfig = toml::from_str(ROUTER).unwrap();
        let k = c.check().unwrap();
        assert_eq!(k.names, ["to-sender", "to-r2"]);
        assert_eq!(k.ipv4[1], (Ipv4Addr::new(198, 18, 2, 1), 24));
        assert_eq!(k.links[1].limit_bytes, Some(150_000));
        assert_eq!(k.links[0].jitter, Duration::from_nanos(1_000_000));
        assert_eq!((k.routes.len(), k.routes[0].iface), (1, 1));
        assert_eq!(k.neighbors[0].0, 0);
        assert!(k.macs[0].is_some() && k.macs[1].is_none());
        let outside = ROUTER.replace("198.18.1.2/24", "192.168.1.2/24");
        let e = toml::from_str::<RouterConfig>(&outside)
            .unwrap()
            .check()
            .unwrap_err();
        assert!(
            e.to_string()
                .starts_with("interface to-sender: 192.168.1.2 is outside"),
            "{e}"
        );
        let nowhere = ROUTER.replace("interface = \"to-r2\"", "interface = \"to-r9\"");
        let e = toml::from_str::<RouterConfig>(&nowhere)
            .unwrap()
            .check()
            .unwrap_err();
        assert_eq!(e.to_string(), "no interface 'to-r9'");
    }

    #[test]
    fn a_file_that_does_not_read_or_check_says_why_and_one_that_does_is_checked() {
        let k = CheckedConfig::from_toml(ROUTER).unwrap();
        assert_eq!(
            k,
            toml::from_str::<RouterConfig>(ROUTER)
                .unwrap()
                .check()
                .unwrap()
        );
        let e = CheckedConfig::from_toml("seed = 2\nspeed = 3\n").unwrap_err();
        assert_eq!(
            e.to_string(),
            "unknown field `speed`, expected one of `seed`, `interface`, `route`, `neighbor`"
        );
        let e = CheckedConfig::from_toml("seed = 2\ninterface = []\n").unwrap_err();
        assert_eq!(e.to_string(), "no [[interface]]");
    }

    #[test]
    fn an_interface_answers_to_the_mac_given_within_the_mtu_the_kernel_allows() {
        let k = CheckedConfig::from_toml(ROUTER).unwrap();
        let mac = ethernet::Address([2, 0x64, 0x70, 0, 2, 1]);
        let f = k.interface(1, mac, Some(1500)).unwrap();
        assert_eq!(
            f,
            Interface {
                name: "to-r2".into(),
                mac,
                ipv4: Some((Ipv4Addr::new(198, 18, 2, 1), 24)),
                ipv6: Some(("2001:2:0:2::1".parse().unwrap(), 64)),
                mtu: 1500,
                mtu6: None,
            }
        );
        // The kernel's MTU unknown: the configured one is taken.
        assert_eq!(k.interface(1, mac, None).unwrap(), f);
        let e = k.interface(1, mac, Some(1499)).unwrap_err();
        assert_eq!(
            e.to_string(),
            "to-r2: the configured MTU 1500 is above the interface's 1499: the kernel would refuse the larger frames"
        );
    }
}
