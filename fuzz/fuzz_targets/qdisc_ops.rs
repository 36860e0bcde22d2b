//! Arbitrary bytes through the classifier, and arbitrary enqueue / dequeue /
//! advance-time sequences through LLQ + CBWFQ over a link and through the shaper: nothing panics, and every packet is accounted for
//! (sent + dropped + still held = offered). The same bytes as reserve / release /
//! enqueue / advance-time operations on a policy with signalled reservation tables: the
//! tables' counters agree with what was installed and removed, and every frame is
//! classified, sent or dropped.
#![no_main]
use libfuzzer_sys::fuzz_target;
use qos::cbwfq::{Cbwfq, Class, Priority, Scheduler, Share};
use qos::classify::{ClassMap, Cond, FlowKey, KeyKind};
use qos::link::{Link, LinkParams};
use qos::policy::{ClassParams, Policy, PolicyParams, Queueing, ReservationParams, ReserveError};
use qos::tbf::{Tbf, TbfParams};
use qos::{Qdisc, Verdict};
use std::net::{Ipv4Addr, Ipv6Addr};
use wire::time::Instant;

const SRC6: Ipv6Addr = Ipv6Addr::new(0x2001, 2, 0, 1, 0, 0, 0, 2);
const DST6: Ipv6Addr = Ipv6Addr::new(0x2001, 2, 0, 4, 0, 0, 0, 2);
const SRC4: Ipv4Addr = Ipv4Addr::new(198, 18, 1, 2);
const DST4: Ipv4Addr = Ipv4Addr::new(198, 18, 4, 2);

/// A policy with a signalled flow-label table (4 flows at most) and a signalled 5-tuple
/// table: class `reserved` takes what either holds, the rest is class-default.
fn signalled_policy() -> Policy {
    let link = Link::new(
        LinkParams {
            rate_bps: 10_000_000,
            limit_packets: Some(2),
            ..LinkParams::default()
        },
        1,
    )
    .expect("valid link");
    let class = |name: &str, map: Option<ClassMap>| ClassParams {
        name: name.into(),
        map,
        set_dscp: None,
        police: None,
        queueing: Queueing::Bandwidth(Share { weight: 10, limit_packets: 8 }),
        wred: None,
        fair_queue: false,
    };
    let table = |name: &str, key| ReservationParams {
        name: name.into(),
        key,
        max_flows: 4,
        admit: None,
        signalled: true,
    };
    let reserved = ClassMap {
        name: "reserved".into(),
        all: false,
        conds: vec![Cond::Reserved(0), Cond::Reserved(1)],
    };
    Policy::new(
        PolicyParams {
            name: "rsvp".into(),
            classes: vec![class("reserved", Some(reserved)), class("class-default", None)],
            scheduler: Scheduler::Drr,
            reservations: vec![
                table("label", KeyKind::FlowLabel),
                table("five", KeyKind::FiveTuple),
            ],
        },
        link,
        1,
        Instant::ZERO,
    )
    .expect("valid policy")
}

/// Flow `n` (0..8): IPv6 with flow label n + 1 (its 5-tuple from port n) for even `v`,
/// IPv4 from port n for odd.
fn key(n: u8, v: u8) -> FlowKey {
    let n = n % 8;
    match v % 3 {
        0 => FlowKey::for_label(SRC6, DST6, u32::from(n) + 1),
        1 => FlowKey::for_5tuple(SRC4.into(), u16::from(n), DST4.into(), 17, 5004),
        _ => FlowKey::for_5tuple(SRC6.into(), u16::from(n), DST6.into(), 17, 5004),
    }
    .expect("a key packets have")
}

/// An Ethernet frame of flow `n`, as [`key`] names it, with `len` bytes of UDP payload.
fn frame(n: u8, v: u8, len: usize) -> Vec<u8> {
    let n = n % 8;
    let v6 = v % 3 != 1;
    let ip_len = if v6 { 40 } else { 20 } + 8 + len;
    let mut f = vec![0u8; 14 + ip_len];
    f[12..14].copy_from_slice(if v6 { &[0x86, 0xdd] } else { &[8, 0] });
    let ip = &mut f[14..];
    let udp = if v6 {
        wire::ipv6::Repr {
            src_addr: SRC6,
            dst_addr: DST6,
            next_header: 17,
            payload_len: ip_len - 40,
            hop_limit: 64,
            traffic_class: 0,
            flow_label: if v % 3 == 0 { u32::from(n) + 1 } else { 0 },
        }
        .emit(&mut wire::ipv6::Packet::new_unchecked(&mut ip[..]));
        40
    } else {
        wire::ipv4::Repr {
            src_addr: SRC4,
            dst_addr: DST4,
            protocol: wire::ipv4::PROTO_UDP,
            payload_len: ip_len - 20,
            ttl: 64,
            dscp: 0,
            ecn: 0,
            ident: 1,
            dont_frag: false,
        }
        .emit(&mut wire::ipv4::Packet::new_unchecked(&mut ip[..]));
        20
    };
    ip[udp..udp + 2].copy_from_slice(&u16::from(n).to_be_bytes());
    ip[udp + 2..udp + 4].copy_from_slice(&5004u16.to_be_bytes());
    f
}

/// Reserve, release, offer and advance time on [`signalled_policy`] as `data` says.
fn reservation_ops(data: &[u8]) {
    let mut p = signalled_policy();
    let (mut now, mut offered, mut out, mut dropped) = (0u64, 0u64, 0u64, 0u64);
    let mut installed = [std::collections::HashSet::new(), std::collections::HashSet::new()];
    for op in data.chunks(4) {
        let [kind, a, b, c] =
            [op[0], *op.get(1).unwrap_or(&0), *op.get(2).unwrap_or(&0), *op.get(3).unwrap_or(&0)];
        let t = Instant::from_nanos(now);
        match kind % 4 {
            0 => {
                let k = key(a, b);
                let table = usize::from(c % 3);
                let got = p.reserve(table, k, u64::from(b) * 8_000, u64::from(c) * 10, t);
                match got {
                    Ok(()) => {
                        installed[table].insert(k);
                    }
                    Err(ReserveError::Full) => assert_eq!(installed[table].len(), 4),
                    Err(ReserveError::WrongKey { .. }) => {
                        assert!(!k.fits([KeyKind::FlowLabel, KeyKind::FiveTuple][table]))
                    }
                    Err(e) => assert!(table == 2 && e == ReserveError::NoTable(2), "{e}"),
                }
            }
            1 => {
                let k = key(a, b);
                let table = usize::from(c % 3);
                assert_eq!(
                    p.release(table, &k),
                    installed.get_mut(table).is_some_and(|s| s.remove(&k))
                );
            }
            2 => {
                offered += 1;
                if p.enqueue(frame(a, b, usize::from(c) * 4), t) != Verdict::Queued {
                    dropped += 1;
                }
            }
            _ => now += u64::from(a) * 1000 + u64::from(b) * 1_000_000,
        }
        while p.dequeue(Instant::from_nanos(now)).is_some() {
            out += 1;
        }
    }
    while let Some(t) = p.poll_timeout() {
        now = now.max(t.as_nanos());
        while p.dequeue(Instant::from_nanos(now)).is_some() {
            out += 1;
        }
    }
    assert_eq!(offered, out + dropped, "every frame sent or dropped");
    let classified: u64 = p.stats().iter().map(|c| c.offered_packets).sum();
    assert_eq!(classified, offered);
    for (s, held) in p.reservation_stats().iter().zip(&installed) {
        assert_eq!(s.flows, held.len() as u64);
        assert_eq!(s.flows, s.installed - s.removed);
        assert_eq!(s.lookups, offered);
        assert!(s.hits + s.excess + s.no_key <= s.lookups);
        assert_eq!(s.admitted, 0, "a signalled table admits no first packet");
    }
}

fuzz_target!(|data: &[u8]| {
    reservation_ops(data);
    // The same bytes as a packet through the classifier: never panics, and a packet
    // with a key finds itself in a table holding it.
    if let Some(f) = qos::classify::Fields::parse(data) {
        let maps = [qos::classify::ClassMap {
            name: "ports".into(),
            all: true,
            conds: vec![
                qos::classify::Cond::DstPort(5000, 5010),
                qos::classify::Cond::Len(0, 1500),
            ],
        }];
        let _ = qos::classify::classify(&maps, &f);
    }
    for kind in [qos::classify::KeyKind::FiveTuple, qos::classify::KeyKind::FlowLabel] {
        if let Some(key) = qos::classify::flow_key(kind, data) {
            let mut t = qos::classify::Reservations::new(kind);
            t.insert(key, 1);
            assert_eq!(t.lookup(data), Some(1));
        }
    }
    let link = Link::new(
        LinkParams {
            rate_bps: 10_000_000,
            limit_packets: Some(2),
            ..LinkParams::default()
        },
        1,
    )
    .expect("valid link");
    let prio = Priority {
        rate_bps: 2_000_000,
        burst_bytes: 50_000,
        limit_packets: 50,
    };
    let shares = [
        Share { weight: 30, limit_packets: 20 },
        Share { weight: 10, limit_packets: 10 },
    ];
    let mut q = Cbwfq::new(link, Some(prio), &shares, Instant::ZERO);
    // The second class serves its packets by conversation (`fair-queue`).
    assert!(q.set_fair_queue(1, 0));
    let mut tbf = Tbf::new(
        TbfParams { rate_bps: 800_000, burst_bytes: 3000, limit_packets: 16 },
        Instant::ZERO,
    );
    let (mut now, mut offered, mut out, mut dropped) = (0u64, 0u64, 0u64, 0u64);
    let (mut t_offered, mut t_out, mut t_dropped) = (0u64, 0u64, 0u64);
    for op in data.chunks(3) {
        let [kind, a, b] = [op[0], *op.get(1).unwrap_or(&0), *op.get(2).unwrap_or(&0)];
        let size = 20 + usize::from(a) * 6;
        match kind % 4 {
            0 => {
                let class = match b % 3 {
                    0 => Class::Priority,
                    n => Class::Bandwidth(usize::from(n - 1)),
                };
                offered += 1;
                // IPv4-looking bytes with the op's values, so conversations differ.
                let mut pkt = vec![0; size];
                pkt[0] = 0x45;
                pkt[size - 1] = a;
                pkt[1] = b;
                if q.enqueue(class, pkt, Instant::from_nanos(now)) != Verdict::Queued {
                    dropped += 1;
                }
                t_offered += 1;
                if tbf.enqueue(vec![0; size], Instant::from_nanos(now)) != Verdict::Queued {
                    t_dropped += 1;
                }
            }
            1 => now += u64::from(a) * 1000 + u64::from(b) * 1_000_000,
            2 => {
                // Jump to the next event, as a driver would.
                if let Some(t) = q.poll_timeout() {
                    now = now.max(t.as_nanos());
                }
            }
            _ => {}
        }
        while q.dequeue(Instant::from_nanos(now)).is_some() {
            out += 1;
        }
        while tbf.dequeue(Instant::from_nanos(now)).is_some() {
            t_out += 1;
        }
    }
    // Drain everything.
    while let Some(t) = q.poll_timeout() {
        now = now.max(t.as_nanos());
        while q.dequeue(Instant::from_nanos(now)).is_some() {
            out += 1;
        }
    }
    assert_eq!(offered, out + dropped, "every packet sent or dropped");
    assert_eq!(t_offered, t_out + t_dropped + tbf.backlog() as u64);
});
