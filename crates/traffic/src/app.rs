//! Application traffic models of D-ITG (`Telnet`, `DNS`, `Quake3`, `CSa`, `CSi`), with
//! D-ITG's parameters (D-ITG 2.8.1 `src/ITGSend/traffic.cpp`, tabulated in
//! `reference/peer-tools.md` §3.3). Inter-departure times are in milliseconds, sizes in
//! payload bytes, as in D-ITG.
//!
//! | model | transport | inter-departure time (ms) | payload (bytes) | source of the fit |
//! |---|---|---|---|---|
//! | Telnet | TCP | 1.1 · Pareto(α = 0.95, x_min = 1) | 21 + K, K ∈ 0..14 with D-ITG's weights | D-ITG |
//! | DNS | UDP or TCP | constant 1000/0.56 | 100 + 220·U | D-ITG |
//! | Quake 3 | UDP | 0.6·Exp(mean 4.29) + 0.4·Const(10.75) | Normal(64.151757, 3.2035755) | Lang, Branch, Armitage, ACE 2004 |
//! | Counter-Strike active | UDP | Student-t(μ 41.6994, σ 0.104821, ν 0.704073) | 0.3732·N(34.8352, 4.3915) + 0.6268·N(49.4904, 3.6186) | Dainotti, Botta, Pescapé, Ventre, CoNEXT 2006 |
//! | Counter-Strike idle | UDP | Student-t(μ 41.6858, σ 0.0694393, ν 1.08341) | {27: .8312, 28: .0018, 29: .0453, 30: .0195, 31: .0879, 32: .0024, 33: .0106, 35: .0013} | same |
//!
//! Two quirks carry over: the Counter-Strike gaps have no finite mean (ν < 1 for the
//! active model), and a negative draw sends at once. D-ITG's Telnet sizes include its
//! 20-byte TCP metadata; ours are the same payload sizes, which also hold our probe.

use core::fmt;
use core::str::FromStr;

use serde::{Deserialize, Serialize};
use wire::control::Protocol;

use crate::distribution::Dist;

/// An application model.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum App {
    /// Interactive Telnet (TCP).
    Telnet,
    /// DNS queries (UDP by default; TCP possible).
    Dns,
    /// Quake 3 client traffic.
    Quake3,
    /// Counter-Strike, an active player.
    Csa,
    /// Counter-Strike, an idle player.
    Csi,
}

/// What an application model sends.
#[derive(Clone, Debug, PartialEq)]
pub struct AppModel {
    /// The transport D-ITG uses for it.
    pub protocol: Protocol,
    /// Inter-departure times, milliseconds.
    pub idt_ms: Dist,
    /// Payload sizes, bytes.
    pub size: Dist,
}

fn discrete(values: &[(f64, f64)]) -> Dist {
    Dist::Mixture {
        parts: values
            .iter()
            .map(|&(weight, value)| (weight, Dist::Constant { value }))
            .collect(),
    }
}

fn normal(mean: f64, stddev: f64) -> Dist {
    Dist::Normal { mean, stddev }
}

impl App {
    /// Every model.
    pub const ALL: [Self; 5] = [Self::Telnet, Self::Dns, Self::Quake3, Self::Csa, Self::Csi];

    /// The model's transport, gaps and sizes.
    pub fn model(self) -> AppModel {
        match self {
            Self::Telnet => AppModel {
                protocol: Protocol::Tcp,
                idt_ms: Dist::Pareto {
                    shape: 0.95,
                    scale: 1.1,
                },
                size: discrete(&[
                    (0.65, 21.0),
                    (0.13, 22.0),
                    (0.07, 23.0),
                    (0.05, 24.0),
                    (0.03, 25.0),
                    (0.01, 26.0),
                    (0.01, 27.0),
                    (0.01, 28.0),
                    (0.01, 29.0),
                    (0.005, 30.0),
                    (0.005, 31.0),
                    (0.005, 32.0),
                    (0.005, 33.0),
                    (0.005, 34.0),
                    (0.005, 35.0),
                ]),
            },
            Self::Dns => AppModel {
                protocol: Protocol::Udp,
                idt_ms: Dist::Constant {
                    value: 1000.0 / 0.56,
                },
                size: Dist::Uniform {
                    min: 100.0,
                    max: 320.0,
                },
            },
            Self::Quake3 => AppModel {
                protocol: Protocol::Udp,
                idt_ms: Dist::Mixture {
                    parts: vec![
                        (0.6, Dist::Exponential { mean: 4.29 }),
                        (0.4, Dist::Constant { value: 10.75 }),
                    ],
                },
                size: normal(64.151757, 3.2035755),
            },
            Self::Csa => AppModel {
                protocol: Protocol::Udp,
                idt_ms: Dist::StudentT {
                    location: 41.6994,
                    scale: 0.104821,
                    dof: 0.704073,
                },
                size: Dist::Mixture {
                    parts: vec![
                        (0.3732, normal(34.8352, 4.3915)),
                        (0.6268, normal(49.4904, 3.6186)),
                    ],
                },
            },
            Self::Csi => AppModel {
                protocol: Protocol::Udp,
                idt_ms: Dist::StudentT {
                    location: 41.6858,
                    scale: 0.0694393,
                    dof: 1.08341,
                },
                size: discrete(&[
                    (0.8312, 27.0),
                    (0.0018, 28.0),
                    (0.0453, 29.0),
                    (0.0195, 30.0),
                    (0.0879, 31.0),
                    (0.0024, 32.0),
                    (0.0106, 33.0),
                    (0.0013, 35.0),
                ]),
            },
        }
    }
}

impl fmt::Display for App {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Telnet => "telnet",
            Self::Dns => "dns",
            Self::Quake3 => "quake3",
            Self::Csa => "csa",
            Self::Csi => "csi",
        })
    }
}

/// An unknown application name.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown application '{0}': use telnet, dns, quake3, csa or csi")]
pub struct UnknownApp(String);

impl FromStr for App {
    type Err = UnknownApp;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let t = s.trim().to_ascii_lowercase();
        Self::ALL
            .into_iter()
            .find(|a| a.to_string() == t)
            .ok_or_else(|| UnknownApp(s.to_owned()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-9 * b.abs().max(1.0)
    }

    #[test]
    fn every_model_is_valid() {
        for app in App::ALL {
            let m = app.model();
            m.idt_ms
                .validate()
                .unwrap_or_else(|e| panic!("{app} idt: {e}"));
            m.size
                .validate()
                .unwrap_or_else(|e| panic!("{app} size: {e}"));
        }
    }

    #[test]
    fn analytic_rates_and_sizes_match_ditg() {
        // Quake 3: mean gap 0.6·4.29 + 0.4·10.75 = 6.874 ms (≈145.5 pkt/s).
        assert!(close(App::Quake3.model().idt_ms.mean().unwrap(), 6.874));
        // DNS: 0.56 queries per second, sizes 100..320 (mean 210).
        assert!(close(
            1000.0 / App::Dns.model().idt_ms.mean().unwrap(),
            0.56
        ));
        assert!(close(App::Dns.model().size.mean().unwrap(), 210.0));
        // Counter-Strike idle: mean payload Σ v·p.
        let csi = 27.0 * 0.8312
            + 28.0 * 0.0018
            + 29.0 * 0.0453
            + 30.0 * 0.0195
            + 31.0 * 0.0879
            + 32.0 * 0.0024
            + 33.0 * 0.0106
            + 35.0 * 0.0013;
        assert!(close(App::Csi.model().size.mean().unwrap(), csi));
        // Counter-Strike active: ν < 1, so the gap has no mean; Telnet: α < 1, likewise.
        assert_eq!(App::Csa.model().idt_ms.mean(), None);
        assert_eq!(App::Telnet.model().idt_ms.mean(), None);
        assert_eq!(App::Telnet.model().protocol, Protocol::Tcp);
    }

    #[test]
    fn names_parse() {
        assert_eq!("Quake3".parse::<App>().unwrap(), App::Quake3);
        assert_eq!("csi".parse::<App>().unwrap(), App::Csi);
        assert!("doom".parse::<App>().is_err());
    }
}
