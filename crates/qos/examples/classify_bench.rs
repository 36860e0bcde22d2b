//! Nanoseconds per packet of reservation lookup at 1 to 10,000 reserved flows, keyed by
//! the IPv4 5-tuple, the IPv6 5-tuple (without and with a Hop-by-Hop and a Destination
//! Options header before UDP) and the IPv6 flow-label 3-tuple: the modern counterpart of
//! the WebAudio thesis's measured 1 : 1.4 : 4 (flow label : IPv4 : IPv6). The last column
//! is the flow-label lookup of signalled reservations, each flow metered by its own token
//! bucket as `Policy::reserve` installs them. Run by `bench/classify.sh`; a benchmark, not
//! a test: it prints, it asserts nothing.

use std::hint::black_box;
use std::net::{Ipv4Addr, Ipv6Addr};
use std::time::Instant;

use qos::classify::{flow_key, Admission, KeyKind, Reservations};
use wire::{ipv4, ipv6};

fn v4(i: u32) -> Vec<u8> {
    let mut p = vec![0u8; 20 + 8 + 64];
    ipv4::Repr {
        src_addr: Ipv4Addr::from(u32::from(Ipv4Addr::new(198, 18, 0, 0)) + (i >> 16)),
        dst_addr: Ipv4Addr::new(198, 19, 0, 1),
        protocol: ipv4::PROTO_UDP,
        payload_len: 72,
        ttl: 64,
        dscp: 46,
        ecn: 0,
        ident: 0,
        dont_frag: true,
    }
    .emit(&mut ipv4::Packet::new_unchecked(&mut p[..]));
    p[20..22].copy_from_slice(&((i & 0xffff) as u16).to_be_bytes());
    p[22..24].copy_from_slice(&5004u16.to_be_bytes());
    p
}

fn v6(i: u32, ext: bool, label: u32) -> Vec<u8> {
    let ext_len = if ext { 16 } else { 0 };
    let mut p = vec![0u8; 40 + ext_len + 8 + 64];
    ipv6::Repr {
        src_addr: Ipv6Addr::new(0x2001, 2, 0, 1, 0, 0, (i >> 16) as u16, i as u16),
        dst_addr: Ipv6Addr::new(0x2001, 2, 0, 4, 0, 0, 0, 2),
        next_header: if ext { 0 } else { 17 },
        payload_len: ext_len + 72,
        hop_limit: 64,
        traffic_class: 0xB8,
        flow_label: label,
    }
    .emit(&mut ipv6::Packet::new_unchecked(&mut p[..]));
    if ext {
        p[40] = 60; // Hop-by-Hop (8 B) → Destination Options (8 B) → UDP
        p[48] = 17;
    }
    p[40 + ext_len..42 + ext_len].copy_from_slice(&((i & 0xffff) as u16).to_be_bytes());
    p[42 + ext_len..44 + ext_len].copy_from_slice(&5004u16.to_be_bytes());
    p
}

/// Makes flow `i`'s packet.
type Maker = Box<dyn Fn(u32) -> Vec<u8>>;

/// ns per lookup over `packets`, repeated to at least 2 M lookups, best of 5.
fn measure(table: &Reservations, packets: &[Vec<u8>]) -> f64 {
    let reps = (2_000_000 / packets.len()).max(1);
    let mut best = f64::INFINITY;
    for _ in 0..5 {
        let t = Instant::now();
        let mut hits = 0usize;
        for _ in 0..reps {
            for p in packets {
                hits += usize::from(table.lookup(black_box(p)).is_some());
            }
        }
        black_box(hits);
        best = best.min(t.elapsed().as_nanos() as f64 / (reps * packets.len()) as f64);
    }
    best
}

/// ns per lookup of signalled flows (each with a token bucket it never runs out of), time
/// advancing 1 µs per packet; repeated and best of 5 as [`measure`].
fn measure_metered(table: &mut Reservations, packets: &[Vec<u8>]) -> f64 {
    let reps = (2_000_000 / packets.len()).max(1);
    let mut best = f64::INFINITY;
    let mut now = 0u64;
    for _ in 0..5 {
        let t = Instant::now();
        let mut hits = 0usize;
        for _ in 0..reps {
            for p in packets {
                now += 1_000;
                let at = wire::time::Instant::from_nanos(now);
                let a = table.lookup_or_admit(black_box(p), at, 0, 0, || false);
                hits += usize::from(a == Admission::Hit);
            }
        }
        black_box(hits);
        best = best.min(t.elapsed().as_nanos() as f64 / (reps * packets.len()) as f64);
    }
    best
}

fn main() {
    println!("flows  ipv4_5tuple_ns  ipv6_5tuple_ns  ipv6_5tuple_ext_ns  ipv6_label_ns  ratio(label:v4:v6:v6ext)  ipv6_label_metered_ns");
    for n in [1u32, 10, 100, 1_000, 10_000] {
        let cases: [(KeyKind, Maker); 4] = [
            (KeyKind::FiveTuple, Box::new(v4)),
            (KeyKind::FiveTuple, Box::new(|i| v6(i, false, 0))),
            (KeyKind::FiveTuple, Box::new(|i| v6(i, true, 0))),
            (KeyKind::FlowLabel, Box::new(|i| v6(i, false, i + 1))),
        ];
        let mut ns = Vec::new();
        for (kind, make) in &cases {
            let packets: Vec<Vec<u8>> = (0..n).map(make).collect();
            let mut table = Reservations::new(*kind);
            for p in &packets {
                table.insert(flow_key(*kind, p).expect("a key"), 1);
            }
            ns.push(measure(&table, &packets));
        }
        let packets: Vec<Vec<u8>> = (0..n).map(|i| v6(i, false, i + 1)).collect();
        let mut metered = Reservations::new(KeyKind::FlowLabel);
        for p in &packets {
            let key = flow_key(KeyKind::FlowLabel, p).expect("a key");
            // 1 Gbit/s, 1 MB: every packet is within its flow's bucket.
            metered.reserve(key, 1, 1_000_000_000, 1_000_000, wire::time::Instant::ZERO);
        }
        let metered_ns = measure_metered(&mut metered, &packets);
        println!(
            "{n:>5}  {:>14.1}  {:>14.1}  {:>18.1}  {:>13.1}  1 : {:.2} : {:.2} : {:.2}  {metered_ns:>21.1}",
            ns[0],
            ns[1],
            ns[2],
            ns[3],
            ns[0] / ns[3],
            ns[1] / ns[3],
            ns[2] / ns[3]
        );
    }
}
