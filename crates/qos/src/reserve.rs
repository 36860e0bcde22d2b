//! A policy's per-flow reservation tables (the WebAudio thesis's RSVP classification):
//! flows keyed by the 5-tuple or the IPv6 flow-label 3-tuple ([`crate::classify`]), held
//! either because their first packet matched the table's `admit` class map (a stand-in
//! for signalling) or because the router's RSVP engine installed them
//! ([`crate::policy::Policy::reserve`], RFC 2205 §1 "traffic control") with the token
//! bucket of their flowspec. A signalled flow's packets beyond that bucket are served as
//! if it held no reservation (RFC 2211: nonconformant traffic is forwarded best effort)
//! and counted as `excess`.

use serde::{Deserialize, Serialize};
use wire::time::Instant;

use crate::classify::{Admission, ClassMap, FlowKey, KeyKind, Reservations};

/// A per-flow reservation table of a policy: flows are keyed by the 5-tuple or the IPv6
/// flow-label 3-tuple. A `signalled` table holds what [`Policy::reserve`] installs, each
/// flow with its token bucket; any other table reserves a flow whose first packet
/// matches `admit` (a stand-in for its RSVP signalling). Either holds up to `max_flows`.
/// A class map selects reserved flows with [`crate::classify::Cond::Reserved`].
///
/// [`Policy::reserve`]: crate::policy::Policy::reserve
#[derive(Clone, Debug, PartialEq, Serialize, schemars::JsonSchema)]
pub struct ReservationParams {
    /// The table's name.
    pub name: String,
    /// Its key.
    #[serde(serialize_with = "key_name")]
    #[schemars(with = "String")]
    pub key: KeyKind,
    /// Most flows it holds.
    pub max_flows: usize,
    /// Which new flows it admits by their first packet; `None`: none. Must be `None` in a
    /// signalled table.
    #[serde(skip)]
    pub admit: Option<ClassMap>,
    /// Whether the router's RSVP engine fills it ([`Policy::reserve`],
    /// [`Policy::release`]) rather than first packets.
    ///
    /// [`Policy::reserve`]: crate::policy::Policy::reserve
    /// [`Policy::release`]: crate::policy::Policy::release
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub signalled: bool,
}

fn key_name<S: serde::Serializer>(k: &KeyKind, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(match k {
        KeyKind::FiveTuple => "5-tuple",
        KeyKind::FlowLabel => "flow-label",
    })
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// A reservation table's counters. `installed`, `removed` and `excess` are absent when
/// 0, as in documents written before tables were signalled.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ReservationStats {
    /// Its name.
    pub name: String,
    /// Flows it holds.
    pub flows: u64,
    /// IP packets looked up.
    pub lookups: u64,
    /// Packets of reserved flows served as reserved (including an admitted flow's first).
    pub hits: u64,
    /// Flows admitted by their first packet.
    pub admitted: u64,
    /// Flows refused because the table was full (first packets and installs).
    pub refused_full: u64,
    /// Packets without a key of the table's kind (no ports, a zero flow label).
    pub no_key: u64,
    /// Flows installed by the RSVP engine (new keys; a changed flowspec of a held flow
    /// is not counted again).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub installed: u64,
    /// Flows removed by the RSVP engine.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub removed: u64,
    /// Packets of reserved flows beyond their flow's token bucket, served as if the
    /// flow held no reservation.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub excess: u64,
}

impl ReservationStats {
    fn count(&mut self, a: Admission) {
        self.lookups += 1;
        match a {
            Admission::NoKey => self.no_key += 1,
            Admission::Hit => self.hits += 1,
            Admission::Excess => self.excess += 1,
            Admission::Admitted => {
                self.hits += 1;
                self.admitted += 1;
            }
            Admission::Full => self.refused_full += 1,
            Admission::Miss => {}
        }
    }
}

/// Why [`Policy::reserve`] installed nothing.
///
/// [`Policy::reserve`]: crate::policy::Policy::reserve
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ReserveError {
    /// The table holds `max_flows` flows already.
    #[error("the reservation table holds its max_flows")]
    Full,
    /// The policy has no table of that index.
    #[error("the policy has no reservation table {0}")]
    NoTable(usize),
    /// The table admits flows by their first packet, not by signalling.
    #[error("reservation table '{0}' is not signalled")]
    NotSignalled(String),
    /// The key is not of the table's kind (an IPv6 5-tuple in a flow-label table, a
    /// flow label in a 5-tuple table): no packet would find it.
    #[error("reservation table '{table}' cannot hold {key:?}: its key is another kind")]
    WrongKey {
        /// The table's name.
        table: String,
        /// The key refused.
        key: FlowKey,
    },
}

/// One reservation table of a policy with its counters.
pub(crate) struct Table {
    params: ReservationParams,
    table: Reservations,
    stats: ReservationStats,
}

impl Table {
    pub(crate) fn new(params: ReservationParams) -> Self {
        Self {
            table: Reservations::new(params.key),
            stats: ReservationStats {
                name: params.name.clone(),
                ..ReservationStats::default()
            },
            params,
        }
    }

    pub(crate) fn params(&self) -> &ReservationParams {
        &self.params
    }

    /// Whether the IP packet `ip`, arriving at `now`, is served as reserved by this
    /// table: its flow is held (or admitted now, when `admits` says the table's `admit`
    /// class map matches it) and the packet is within the flow's token bucket.
    pub(crate) fn holds(
        &mut self,
        ip: &[u8],
        now: Instant,
        admits: impl FnOnce(&ClassMap) -> bool,
    ) -> bool {
        let admit = &self.params.admit;
        let found = self
            .table
            .lookup_or_admit(ip, now, 0, self.params.max_flows, || {
                admit.as_ref().is_some_and(admits)
            });
        self.stats.count(found);
        matches!(found, Admission::Hit | Admission::Admitted)
    }

    /// Install `key` with a token bucket of `rate_bps` and `burst_bytes`, or change the
    /// bucket of a held key.
    pub(crate) fn reserve(
        &mut self,
        key: FlowKey,
        rate_bps: u64,
        burst_bytes: u64,
        now: Instant,
    ) -> Result<(), ReserveError> {
        if !self.params.signalled {
            return Err(ReserveError::NotSignalled(self.params.name.clone()));
        }
        if !key.fits(self.params.key) {
            return Err(ReserveError::WrongKey {
                table: self.params.name.clone(),
                key,
            });
        }
        if !self.table.contains(&key) && self.table.len() >= self.params.max_flows {
            self.stats.refused_full += 1;
            return Err(ReserveError::Full);
        }
        if self.table.reserve(key, 0, rate_bps, burst_bytes, now) {
            self.stats.installed += 1;
        }
        Ok(())
    }

    /// Remove `key`; whether it was held.
    pub(crate) fn release(&mut self, key: &FlowKey) -> bool {
        let held = self.table.remove(key).is_some();
        self.stats.removed += u64::from(held);
        held
    }

    pub(crate) fn stats(&self) -> ReservationStats {
        ReservationStats {
            flows: self.table.len() as u64,
            ..self.stats.clone()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cbwfq::{Scheduler, Share};
    use crate::classify::Cond;
    use crate::link::{Link, LinkParams};
    use crate::policy::{ClassParams, Policy, PolicyError, PolicyParams, Queueing};
    use std::net::{Ipv4Addr, Ipv6Addr};
    use wire::{ipv4, ipv6};

    const SRC6: Ipv6Addr = Ipv6Addr::new(0x2001, 2, 0, 1, 0, 0, 0, 2);
    const DST6: Ipv6Addr = Ipv6Addr::new(0x2001, 2, 0, 4, 0, 0, 0, 2);
    const SRC4: Ipv4Addr = Ipv4Addr::new(198, 18, 1, 2);
    const DST4: Ipv4Addr = Ipv4Addr::new(198, 18, 4, 2);

    /// An Ethernet frame holding a UDP packet of `ip_len` bytes from port `sport` to
    /// 5004: IPv6 with flow label `label`, or IPv4 when `label` is `None`.
    fn frame(label: Option<u32>, sport: u16, ip_len: usize) -> Vec<u8> {
        let mut f = vec![0u8; 14 + ip_len];
        let ip = &mut f[14..];
        let udp = match label {
            Some(flow_label) => {
                ipv6::Repr {
                    src_addr: SRC6,
                    dst_addr: DST6,
                    next_header: 17,
                    payload_len: ip_len - 40,
                    hop_limit: 64,
                    traffic_class: 0,
                    flow_label,
                }
                .emit(&mut ipv6::Packet::new_unchecked(&mut ip[..]));
                40
            }
            None => {
                ipv4::Repr {
                    src_addr: SRC4,
                    dst_addr: DST4,
                    protocol: ipv4::PROTO_UDP,
                    payload_len: ip_len - 20,
                    ttl: 64,
                    dscp: 0,
                    ecn: 0,
                    ident: 1,
                    dont_frag: true,
                }
                .emit(&mut ipv4::Packet::new_unchecked(&mut ip[..]));
                20
            }
        };
        ip[udp..udp + 2].copy_from_slice(&sport.to_be_bytes());
        ip[udp + 2..udp + 4].copy_from_slice(&5004u16.to_be_bytes());
        f[12..14].copy_from_slice(if label.is_some() {
            &[0x86, 0xdd]
        } else {
            &[8, 0]
        });
        f
    }

    fn table(name: &str, key: KeyKind, max_flows: usize, signalled: bool) -> ReservationParams {
        ReservationParams {
            name: name.into(),
            key,
            max_flows,
            admit: None,
            signalled,
        }
    }

    /// Class 0 `reserved` (a flow held by any of the tables), class 1 class-default, on
    /// a 100 Mbit/s link.
    fn policy(reservations: Vec<ReservationParams>) -> Result<Policy, PolicyError> {
        let share = |weight| {
            Queueing::Bandwidth(Share {
                weight,
                limit_packets: 1000,
            })
        };
        let class = |name: &str, map: Option<ClassMap>, weight| ClassParams {
            name: name.into(),
            map,
            set_dscp: None,
            police: None,
            queueing: share(weight),
            wred: None,
            fair_queue: false,
        };
        let n = reservations.len() as u8;
        let reserved = ClassMap {
            name: "reserved".into(),
            all: false,
            conds: (0..n).map(Cond::Reserved).collect(),
        };
        let link = Link::new(
            LinkParams {
                rate_bps: 100_000_000,
                limit_packets: Some(2),
                ..LinkParams::default()
            },
            1,
        )
        .unwrap();
        Policy::new(
            PolicyParams {
                name: "intserv".into(),
                classes: vec![
                    class("reserved", Some(reserved), 70),
                    class("class-default", None, 30),
                ],
                scheduler: Scheduler::Drr,
                reservations,
            },
            link,
            1,
            Instant::ZERO,
        )
    }

    fn label_key(label: u32) -> FlowKey {
        FlowKey::for_label(SRC6, DST6, label).unwrap()
    }

    #[test]
    fn signalled_tables_are_filled_by_reserve_and_emptied_by_release() {
        let admit = ClassMap {
            name: "all".into(),
            all: true,
            conds: vec![Cond::Protocol(99)],
        };
        let mut p = policy(vec![
            ReservationParams {
                admit: Some(admit),
                ..table("first", KeyKind::FiveTuple, 10, false)
            },
            table("rsvp", KeyKind::FlowLabel, 2, true),
            table("rsvp5", KeyKind::FiveTuple, 10, true),
        ])
        .unwrap();
        assert_eq!(p.signalled_table(KeyKind::FlowLabel), Some(1));
        assert_eq!(p.signalled_table(KeyKind::FiveTuple), Some(2));
        let v4 = FlowKey::for_5tuple(SRC4.into(), 7, DST4.into(), 17, 5004).unwrap();
        let v6 = FlowKey::for_5tuple(SRC6.into(), 7, DST6.into(), 17, 5004).unwrap();
        assert_eq!(p.signalled_table_for(&v4), Some(1), "IPv4 fits either");
        assert_eq!(p.signalled_table_for(&v6), Some(2));
        assert_eq!(p.signalled_table_for(&label_key(1)), Some(1));
        assert_eq!(p.reservation_table("rsvp5"), Some(2));
        assert_eq!(p.reservation_table("none"), None);
        let t = Instant::ZERO;
        // Not reserved yet: a signalled table admits nothing by a first packet.
        assert_eq!(p.classify(&frame(Some(1), 7, 100), t), 1);
        assert_eq!(p.reserve(1, label_key(1), 8_000_000, 10_000, t), Ok(()));
        assert_eq!(p.classify(&frame(Some(1), 7, 100), t), 0);
        assert_eq!(p.classify(&frame(Some(2), 7, 100), t), 1);
        // A refresh changes nothing; a second flow fills the table; a third is refused,
        // while a held flow may still change its bucket.
        assert_eq!(p.reserve(1, label_key(1), 8_000_000, 10_000, t), Ok(()));
        assert_eq!(p.reserve(1, v4, 8_000_000, 10_000, t), Ok(()));
        assert_eq!(
            p.reserve(1, label_key(3), 8_000, 100, t),
            Err(ReserveError::Full)
        );
        assert_eq!(p.reserve(1, label_key(1), 16_000_000, 20_000, t), Ok(()));
        assert_eq!(p.classify(&frame(None, 7, 100), t), 0, "IPv4 by 5-tuple");
        // Refused: a table that is not signalled, a key of the other kind, no table.
        assert_eq!(
            p.reserve(0, v4, 8_000, 100, t),
            Err(ReserveError::NotSignalled("first".into()))
        );
        assert_eq!(
            p.reserve(1, v6, 8_000, 100, t),
            Err(ReserveError::WrongKey {
                table: "rsvp".into(),
                key: v6
            })
        );
        assert_eq!(
            p.reserve(3, v4, 8_000, 100, t),
            Err(ReserveError::NoTable(3))
        );
        // Released: the flow misses again; a second release finds nothing.
        assert!(p.release(1, &label_key(1)));
        assert!(!p.release(1, &label_key(1)));
        assert!(!p.release(7, &label_key(1)));
        assert_eq!(p.classify(&frame(Some(1), 7, 100), t), 1);
        assert_eq!(p.reserve(1, label_key(3), 8_000, 100, t), Ok(()));
        let s = &p.reservation_stats()[1];
        assert_eq!(
            (
                s.flows,
                s.installed,
                s.removed,
                s.refused_full,
                s.lookups,
                s.hits,
                s.excess
            ),
            (2, 3, 1, 1, 5, 2, 0)
        );
        assert_eq!(p.reservation_stats()[0].admitted, 0);
    }

    #[test]
    fn a_signalled_table_admitting_first_packets_is_refused() {
        let admit = ClassMap {
            name: "udp".into(),
            all: true,
            conds: vec![Cond::Protocol(17)],
        };
        let err = policy(vec![ReservationParams {
            admit: Some(admit),
            ..table("rsvp", KeyKind::FlowLabel, 10, true)
        }])
        .err();
        assert_eq!(err, Some(PolicyError::SignalledAdmits("rsvp".into())));
    }

    #[test]
    fn a_flow_at_twice_its_reserved_rate_is_reserved_up_to_its_bucket_and_the_rest_is_best_effort()
    {
        // Reserved 800 kbit/s (100,000 B/s) with a 1,000 B bucket; the flow sends 500 B
        // every 2.5 ms (1.6 Mbit/s) for 1 s: 400 packets. The bucket earns 250 B between
        // packets: the first three take its 1,000 B and the 500 B earned, then every
        // other packet finds 500 B. 3 + 198 = 201 packets (100,500 B = 1,000 B + the
        // 99,500 B earned by the last of them at 995 ms) are reserved; 199 are excess.
        let mut p = policy(vec![table("rsvp", KeyKind::FlowLabel, 10, true)]).unwrap();
        p.reserve(0, label_key(9), 800_000, 1_000, Instant::ZERO)
            .unwrap();
        for k in 0..400u64 {
            let v = p.enqueue(frame(Some(9), 7, 500), Instant::from_nanos(k * 2_500_000));
            assert_eq!(v, crate::Verdict::Queued);
            while p.dequeue(Instant::from_nanos(k * 2_500_000)).is_some() {}
        }
        let c = p.stats();
        assert_eq!((c[0].offered_packets, c[0].offered_bytes), (201, 201 * 514));
        assert_eq!((c[1].offered_packets, c[1].offered_bytes), (199, 199 * 514));
        let s = &p.reservation_stats()[0];
        assert_eq!((s.lookups, s.hits, s.excess), (400, 201, 199));
    }

    #[test]
    fn old_stats_documents_read_and_zero_signalling_counters_are_not_written() {
        let old = r#"{"name":"rsvp","flows":2,"lookups":10,"hits":8,"admitted":2,"refused_full":0,"no_key":0}"#;
        let s: ReservationStats = serde_json::from_str(old).unwrap();
        assert_eq!((s.installed, s.removed, s.excess), (0, 0, 0));
        assert_eq!(serde_json::to_string(&s).unwrap(), old);
        let s = ReservationStats {
            installed: 3,
            removed: 1,
            excess: 199,
            ..s
        };
        let v = serde_json::to_value(&s).unwrap();
        assert_eq!(
            (&v["installed"], &v["removed"], &v["excess"]),
            (&3.into(), &1.into(), &199.into())
        );
        assert_eq!(serde_json::from_value::<ReservationStats>(v).unwrap(), s);
    }
}
