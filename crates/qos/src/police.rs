//! Policing (MQC's `police`): a meter colours each packet (srTCM or trTCM, colour-blind)
//! and the colour's action is applied: transmit, drop, or set the DSCP and transmit
//! (`conform-action`, `exceed-action`, `violate-action`). Green is conform, yellow
//! exceed, red violate. The meter counts the IP packet's bytes (RFC 2697/2698).

use serde::{Deserialize, Serialize};
use wire::time::Instant;

use crate::mark::{set_dscp_v4, set_dscp_v6};
use crate::tcm::{Colour, SrTcm, TrTcm};

/// What to do with a packet of one colour.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Action {
    /// Send it on.
    Transmit,
    /// Drop it.
    Drop,
    /// Set its DSCP (keeping ECN), then send it on.
    SetDscp(u8),
}

/// The meter of a policer.
#[derive(Clone, Debug)]
pub enum Meter {
    /// Single rate (RFC 2697).
    Single(SrTcm),
    /// Two rates (RFC 2698).
    Two(TrTcm),
}

/// Actions per colour.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct Actions {
    /// Green.
    pub conform: Action,
    /// Yellow.
    pub exceed: Action,
    /// Red.
    pub violate: Action,
}

/// A policer's counters.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct PoliceStats {
    /// Packets transmitted unchanged.
    pub transmitted: u64,
    /// Packets remarked and transmitted.
    pub remarked: u64,
    /// Packets dropped.
    pub dropped: u64,
}

/// A policer.
#[derive(Clone, Debug)]
pub struct Policer {
    meter: Meter,
    actions: Actions,
    stats: PoliceStats,
}

impl Policer {
    /// A policer from its meter and actions.
    pub fn new(meter: Meter, actions: Actions) -> Self {
        Self {
            meter,
            actions,
            stats: PoliceStats::default(),
        }
    }

    /// Police `packet` (an IP packet, header first) arriving at `now`: `None` when it is
    /// dropped, else the colour it got (after any remarking in place).
    pub fn police(&mut self, packet: &mut [u8], now: Instant) -> Option<Colour> {
        let len = packet.len();
        let colour = match &mut self.meter {
            Meter::Single(m) => m.mark(len, now, None),
            Meter::Two(m) => m.mark(len, now, None),
        };
        let action = match colour {
            Colour::Green => self.actions.conform,
            Colour::Yellow => self.actions.exceed,
            Colour::Red => self.actions.violate,
        };
        match action {
            Action::Transmit => {
                self.stats.transmitted += 1;
                Some(colour)
            }
            Action::Drop => {
                self.stats.dropped += 1;
                None
            }
            Action::SetDscp(d) => {
                let ok = match packet.first().map(|b| b >> 4) {
                    Some(4) => set_dscp_v4(packet, d),
                    Some(6) => set_dscp_v6(packet, d),
                    _ => false,
                };
                if ok {
                    self.stats.remarked += 1;
                } else {
                    self.stats.transmitted += 1;
                }
                Some(colour)
            }
        }
    }

    /// Counters.
    pub fn stats(&self) -> &PoliceStats {
        &self.stats
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tcm::TrTcmParams;
    use std::net::Ipv4Addr;
    use wire::ipv4;

    fn packet(dscp: u8) -> Vec<u8> {
        let mut p = vec![0u8; 1000];
        ipv4::Repr {
            src_addr: Ipv4Addr::new(198, 18, 1, 1),
            dst_addr: Ipv4Addr::new(198, 18, 4, 2),
            protocol: ipv4::PROTO_UDP,
            payload_len: 980,
            ttl: 64,
            dscp,
            ecn: 1,
            ident: 0,
            dont_frag: true,
        }
        .emit(&mut ipv4::Packet::new_unchecked(&mut p[..]));
        p
    }

    /// trTCM of qos.md §6.3 with AF41 conform, AF42 exceed (remark), drop violate:
    /// 1259 sent as AF41, 625 remarked to AF42, 616 dropped.
    #[test]
    fn actions_follow_the_colours() {
        let meter = TrTcm::new(
            TrTcmParams {
                cir_bps: 1_000_000,
                cbs_bytes: 10_000,
                pir_bps: 1_500_000,
                pbs_bytes: 10_000,
            },
            Instant::ZERO,
        );
        let mut p = Policer::new(
            Meter::Two(meter),
            Actions {
                conform: Action::Transmit,
                exceed: Action::SetDscp(36),
                violate: Action::Drop,
            },
        );
        let mut dscps = [0u64; 64];
        for i in 0..2500u64 {
            let mut pkt = packet(34);
            if p.police(&mut pkt, Instant::from_nanos(i * 4_000_000))
                .is_some()
            {
                let q = ipv4::Packet::new_checked(&pkt[..]).unwrap();
                assert!(q.verify_checksum());
                assert_eq!(q.ecn(), 1, "ECN kept");
                dscps[usize::from(q.dscp())] += 1;
            }
        }
        assert_eq!((dscps[34], dscps[36]), (1259, 625));
        assert_eq!(
            p.stats(),
            &PoliceStats {
                transmitted: 1259,
                remarked: 625,
                dropped: 616
            }
        );
    }
}
