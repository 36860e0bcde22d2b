//! Arbitrary frames through the router's forwarding decisions: nothing panics, every
//! output is a well-formed Ethernet frame for an interface that exists, and forwarded
//! IPv4 keeps a valid header checksum.
#![no_main]
use std::net::{Ipv4Addr, Ipv6Addr};

use libfuzzer_sys::fuzz_target;
use router::forward::{Forwarder, Interface, Route};
use wire::ethernet::{self, EtherType};

fn router() -> Forwarder {
    let iface = |n: u8| Interface {
        name: format!("if{n}"),
        mac: ethernet::Address([2, 0x64, 0x70, 0, n, 1]),
        ipv4: Some((Ipv4Addr::new(198, 18, n, 1), 24)),
        ipv6: Some((Ipv6Addr::new(0x2001, 2, 0, u16::from(n), 0, 0, 0, 1), 64)),
        mtu: 1500,
        mtu6: None,
    };
    let routes = vec![Route {
        prefix: Ipv4Addr::new(198, 18, 9, 0).into(),
        len: 24,
        via: Some(Ipv4Addr::new(198, 18, 2, 2).into()),
        iface: 1,
    }];
    let neighbors = vec![(
        1,
        Ipv4Addr::new(198, 18, 2, 2).into(),
        ethernet::Address([2, 0, 0, 0, 2, 2]),
    )];
    Forwarder::new(vec![iface(1), iface(2)], routes, neighbors).expect("valid config")
}

fuzz_target!(|data: &[u8]| {
    let mut r = router();
    // The first byte picks the ingress; the rest is the frame, fed twice (so learning
    // from the first pass meets the second).
    let Some((&which, frame)) = data.split_first() else {
        return;
    };
    for _ in 0..2 {
        if let Some(out) = r.handle_frame(usize::from(which % 2), frame) {
            assert!(out.iface < 2);
            let f = ethernet::Frame::new_checked(&out.frame[..]).expect("an Ethernet frame");
            if f.ethertype() == EtherType::Ipv4 {
                let ip = wire::ipv4::Packet::new_checked(f.payload()).expect("an IPv4 packet");
                assert!(ip.verify_checksum());
            }
        }
    }
});
