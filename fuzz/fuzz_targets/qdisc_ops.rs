//! Arbitrary bytes through the classifier, and arbitrary enqueue / dequeue /
//! advance-time sequences through LLQ + CBWFQ over a link and through the shaper: nothing panics, and every packet is accounted for
//! (sent + dropped + still held = offered).
#![no_main]
use libfuzzer_sys::fuzz_target;
use qos::cbwfq::{Cbwfq, Class, Priority, Share};
use qos::link::{Link, LinkParams};
use qos::tbf::{Tbf, TbfParams};
use qos::{Qdisc, Verdict};
use wire::time::Instant;

fuzz_target!(|data: &[u8]| {
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
