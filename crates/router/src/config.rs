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

use serde::{Deserialize, Serialize};

/// A link's random loss: the config's loss *is* the link model's (`model = "none"`,
/// `"bernoulli"` with `p`, or `"gilbert_elliott"` with `p`, `r`, `loss_good`,
/// `loss_bad`; probabilities 0–1).
pub use qos::link::LossModel;

/// What a router's egress onto a link emulates.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Emulation {
    /// bit/s; 0 = no limit.
    pub rate_bps: u64,
    /// One-way propagation delay, ns.
    pub delay_ns: u64,
    /// Uniform jitter half-width, ns.
    pub jitter_ns: u64,
    /// Random loss.
    pub loss: LossModel,
    /// Queue limit, packets.
    pub limit_packets: u32,
    /// Queue limit, bytes.
    pub limit_bytes: Option<u64>,
}

/// One interface of a router, as `dualperf route --config` reads it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
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
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
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
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
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
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
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
    fn unknown_keys_are_refused() {
        let bad = ROUTER.replace("seed = 2", "seed = 2\nspeed = 3");
        assert!(toml::from_str::<RouterConfig>(&bad).is_err());
    }
}
