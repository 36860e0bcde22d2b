//! What sends on each of a router's interfaces: its emulated link alone, or a service
//! policy (the QoS file's, [`crate::qosconf`]) in front of it, built from a checked
//! configuration ([`CheckedConfig`]) at start and again at each reload of the QoS file.

use qos::link::{Link, LinkError, LinkParams};
use qos::policy::{Policy, PolicyError};
use wire::time::Instant;

use crate::config::CheckedConfig;
use crate::qosconf::{QosConfig, QosError};
use crate::stats::PolicyStats;

/// What sends on one interface: the emulated link alone, or a service policy in front
/// of it.
pub enum Egress {
    /// The link alone.
    Link(Box<Link>),
    /// A service policy in front of the link.
    Policy(Box<Policy>),
}

/// A QoS file as the driver read it: its name (for errors) and its text.
#[derive(Clone, Copy, Debug)]
pub struct QosFile<'a> {
    /// Its path as the user gave it, displayed.
    pub name: &'a str,
    /// Its contents.
    pub text: &'a str,
}

/// Egresses that cannot be built: the QoS file or a link is unusable. Each text names
/// the file or the interface.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum EgressError {
    /// The QoS file does not read, or one of its policies does not fit its link.
    #[error("{file}: {source}")]
    Qos {
        /// The QoS file.
        file: String,
        /// Why.
        source: QosError,
    },
    /// A service policy names an interface the router does not have.
    #[error("{file}: line {line}: service_policy on '{iface}': the router has no such interface ({names})")]
    NoSuchInterface {
        /// The QoS file.
        file: String,
        /// The service policy's line (0: unknown).
        line: usize,
        /// The interface it names.
        iface: String,
        /// The router's interfaces, comma-separated.
        names: String,
    },
    /// An interface's link cannot be built.
    #[error("{iface}: {source}")]
    Link {
        /// The interface.
        iface: String,
        /// Why.
        source: LinkError,
    },
    /// A policy cannot be built on its link.
    #[error("{file}: {source}")]
    Policy {
        /// The QoS file.
        file: String,
        /// Why.
        source: PolicyError,
    },
}

impl Egress {
    /// Each interface's egress, in configuration order: its link, behind the service
    /// policy the QoS file (if any) attaches to it, whose tx-ring replaces the link's
    /// queue limit. Interface `i`'s randomness is seeded from the configuration's seed
    /// and `i`; policies start at `now`.
    pub fn build(
        cfg: &CheckedConfig,
        qos: Option<QosFile<'_>>,
        now: Instant,
    ) -> Result<Vec<Self>, EgressError> {
        let qos = match qos {
            None => None,
            Some(f) => Some((read(cfg, f)?, f.name)),
        };
        Self::build_from(cfg, qos.as_ref().map(|(q, name)| (q, *name)), now)
    }

    /// [`Egress::build`] with the QoS file already read ([`read`]): the file and its name.
    pub(crate) fn build_from(
        cfg: &CheckedConfig,
        qos: Option<(&QosConfig, &str)>,
        now: Instant,
    ) -> Result<Vec<Self>, EgressError> {
        let mut links = Vec::new();
        for (i, p) in cfg.links.iter().enumerate() {
            let name = &cfg.names[i];
            let seed = cfg.seed.wrapping_mul(1000).wrapping_add(i as u64);
            let link_error = |source| EgressError::Link {
                iface: name.clone(),
                source,
            };
            let policy = match &qos {
                None => None,
                Some((q, file)) => q
                    .params_for(name, p.rate_bps)
                    .map_err(|source| EgressError::Qos {
                        file: (*file).to_owned(),
                        source,
                    })?
                    .map(|x| (x, q.policy_of(name).map_or(2, |s| s.tx_ring), file)),
            };
            links.push(match policy {
                None => Self::Link(Box::new(Link::new(p.clone(), seed).map_err(link_error)?)),
                Some((params, tx_ring, file)) => {
                    let ring = LinkParams {
                        limit_packets: Some(tx_ring),
                        limit_bytes: None,
                        ..p.clone()
                    };
                    let link = Link::new(ring, seed).map_err(link_error)?;
                    let pol = Policy::new(params, link, seed, now).map_err(|source| {
                        EgressError::Policy {
                            file: (*file).to_owned(),
                            source,
                        }
                    })?;
                    Self::Policy(Box::new(pol))
                }
            });
        }
        Ok(links)
    }

    /// Offer `frame` at `now`; a drop is counted in the link's or the policy's stats.
    pub fn enqueue(&mut self, frame: Vec<u8>, now: Instant) {
        match self {
            Self::Link(l) => {
                let _ = l.enqueue(frame, now);
            }
            Self::Policy(p) => {
                let _ = p.enqueue(frame, now);
            }
        }
    }

    /// A frame that crosses the egress at once (see [`Link::pass`]); never with a
    /// service policy, which classifies and counts every frame.
    pub fn pass(&mut self, len: usize, now: Instant) -> bool {
        match self {
            Self::Link(l) => l.pass(len, now),
            Self::Policy(_) => false,
        }
    }

    /// The next frame due at `now`.
    pub fn dequeue(&mut self, now: Instant) -> Option<Vec<u8>> {
        match self {
            Self::Link(l) => l.dequeue(now),
            Self::Policy(p) => p.dequeue(now),
        }
    }

    /// When the egress next has something to do.
    pub fn poll_timeout(&self) -> Option<Instant> {
        match self {
            Self::Link(l) => l.poll_timeout(),
            Self::Policy(p) => p.poll_timeout(),
        }
    }

    /// The emulated link (behind the policy, if any).
    pub fn link(&self) -> &Link {
        match self {
            Self::Link(l) => l,
            Self::Policy(p) => p.link(),
        }
    }

    /// The service policy's name; `None` for a link alone.
    pub fn policy_name(&self) -> Option<&str> {
        match self {
            Self::Link(_) => None,
            Self::Policy(p) => Some(p.name()),
        }
    }

    /// The service policy's counters; `None` for a link alone.
    pub fn qos_stats(&self) -> Option<PolicyStats> {
        match self {
            Self::Link(_) => None,
            Self::Policy(p) => Some(PolicyStats {
                policy: p.name().to_owned(),
                classes: p.stats(),
                reservations: p.reservation_stats(),
            }),
        }
    }
}

impl std::fmt::Debug for Egress {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Link(l) => f.debug_tuple("Link").field(l.params()).finish(),
            Self::Policy(p) => f
                .debug_tuple("Policy")
                .field(&p.name())
                .field(p.link().params())
                .finish(),
        }
    }
}

/// The QoS file, parsed, whose service policies all name interfaces of the router.
pub(crate) fn read(cfg: &CheckedConfig, f: QosFile<'_>) -> Result<QosConfig, EgressError> {
    let q = QosConfig::parse(f.text).map_err(|source| EgressError::Qos {
        file: f.name.to_owned(),
        source,
    })?;
    for (iface, _, line) in &q.service {
        if !cfg.names.contains(iface) {
            return Err(EgressError::NoSuchInterface {
                file: f.name.to_owned(),
                line: line.unwrap_or(0),
                iface: iface.clone(),
                names: cfg.names.join(", "),
            });
        }
    }
    Ok(q)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::config::RouterConfig;

    /// Two interfaces: `to-sender`, a plain link, and `to-r2`, 2 ms of delay at
    /// `rate_bps` behind `limit_packets`.
    pub(crate) fn config(rate_bps: u64, limit_packets: u32) -> CheckedConfig {
        let text = format!(
            r#"
seed = 3
[[interface]]
name = "to-sender"
ipv4 = "198.18.1.2/24"
ipv6 = "2001:2:0:1::2/64"
mtu = 1500
[interface.emulation]
rate_bps = 0
delay_ns = 0
jitter_ns = 0
limit_packets = 1000
[interface.emulation.loss]
model = "none"

[[interface]]
name = "to-r2"
ipv4 = "198.18.2.1/24"
ipv6 = "2001:2:0:2::1/64"
mtu = 1500
[interface.emulation]
rate_bps = {rate_bps}
delay_ns = 2000000
jitter_ns = 0
limit_packets = {limit_packets}
[interface.emulation.loss]
model = "none"
"#
        );
        toml::from_str::<RouterConfig>(&text)
            .unwrap()
            .check()
            .unwrap()
    }

    const POLICY: &str = r#"version = 1
[[policy_map]]
name = "fifo"
tx_ring = 3

[[policy_map.class]]
name = "class-default"
queue_limit = 75

[[service_policy]]
interface = "IFACE"
output = "fifo"
"#;

    /// A QoS file with the one-class policy `fifo` (tx-ring 3) on `iface`.
    pub(crate) fn qos(iface: &str) -> String {
        POLICY.replace("IFACE", iface)
    }

    fn file(text: &str) -> Option<QosFile<'_>> {
        Some(QosFile {
            name: "r1.qos.toml",
            text,
        })
    }

    #[test]
    fn without_a_qos_file_every_egress_is_its_link_as_configured() {
        let cfg = config(10_000_000, 500);
        let e = Egress::build(&cfg, None, Instant::from_nanos(0)).unwrap();
        assert_eq!(e.len(), 2);
        assert_eq!(e[1].link().params(), &cfg.links[1]);
        assert_eq!(e[1].link().params().limit_packets, Some(500));
        assert_eq!(e[0].policy_name(), None);
        assert_eq!(e[1].qos_stats(), None);
    }

    #[test]
    fn a_service_policy_goes_in_front_of_its_link_whose_queue_is_the_tx_ring() {
        let cfg = config(10_000_000, 500);
        let text = qos("to-r2");
        let mut e = Egress::build(&cfg, file(&text), Instant::from_nanos(0)).unwrap();
        assert_eq!(e[0].policy_name(), None);
        assert_eq!(e[1].policy_name(), Some("fifo"));
        let ring = e[1].link().params();
        assert_eq!((ring.limit_packets, ring.limit_bytes), (Some(3), None));
        assert_eq!(ring.rate_bps, 10_000_000);
        let stats = e[1].qos_stats().unwrap();
        assert_eq!(stats.policy, "fifo");
        assert_eq!(stats.classes.len(), 1);
        // A policy classifies and counts every frame: none passes at once.
        assert!(!e[1].pass(100, Instant::from_nanos(0)));
        assert!(e[0].pass(100, Instant::from_nanos(0)));
    }

    #[test]
    fn a_frame_offered_to_an_egress_leaves_after_the_links_delay() {
        let cfg = config(0, 500);
        let text = qos("to-r2");
        for q in [None, file(&text)] {
            let mut e = Egress::build(&cfg, q, Instant::from_nanos(0)).unwrap();
            e[1].enqueue(vec![0; 100], Instant::from_nanos(0));
            assert_eq!(e[1].poll_timeout(), Some(Instant::from_nanos(2_000_000)));
            assert_eq!(e[1].dequeue(Instant::from_nanos(1_999_999)), None);
            assert_eq!(
                e[1].dequeue(Instant::from_nanos(2_000_000)),
                Some(vec![0; 100])
            );
            assert_eq!(e[1].poll_timeout(), None);
        }
    }

    #[test]
    fn a_service_policy_on_an_interface_the_router_lacks_is_refused_naming_them() {
        let cfg = config(0, 500);
        let text = qos("to-r9");
        let e = Egress::build(&cfg, file(&text), Instant::from_nanos(0)).unwrap_err();
        assert_eq!(
            e.to_string(),
            "r1.qos.toml: line 10: service_policy on 'to-r9': the router has no such interface (to-sender, to-r2)"
        );
    }

    #[test]
    fn a_qos_file_that_does_not_read_is_refused_naming_it() {
        let cfg = config(0, 500);
        let e = Egress::build(&cfg, file("version = 2\n"), Instant::from_nanos(0)).unwrap_err();
        let EgressError::Qos { file, source } = &e else {
            panic!("{e:?}")
        };
        assert_eq!(file, "r1.qos.toml");
        assert_eq!(e.to_string(), format!("r1.qos.toml: {source}"));
    }
}
