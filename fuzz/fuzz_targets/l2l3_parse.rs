//! Arbitrary bytes as Ethernet, ARP, IPv4, IPv6, ICMPv4, ICMPv6 and NDP: no checked view,
//! `parse` or builder panics, whatever parses re-emits and parses back, and every ICMP
//! message built from arbitrary input parses back with valid checksums and within the
//! size limits.
#![no_main]
use std::net::{Ipv4Addr, Ipv6Addr};

use libfuzzer_sys::fuzz_target;
use wire::{arp, checksum, ethernet, icmp, ipv4, ipv6, ndp};

const ROUTER4: Ipv4Addr = Ipv4Addr::new(198, 18, 0, 1);
const ROUTER6: Ipv6Addr = Ipv6Addr::new(0x2001, 2, 0, 0, 0, 0, 0, 1);
const ROUTER_MAC: ethernet::Address = ethernet::Address([2, 0, 0, 0, 0, 1]);

fn ethernet(data: &[u8]) {
    let Ok(frame) = ethernet::Frame::new_checked(data) else {
        return;
    };
    let _ = (
        frame.dst_addr().is_multicast(),
        frame.src_addr().to_string(),
    );
    let _ = (frame.ethertype(), frame.payload().len());
    let repr = ethernet::Repr::parse(&frame).expect("checked frame parses");
    let mut out = vec![0u8; repr.buffer_len()];
    repr.emit(&mut ethernet::Frame::new_unchecked(&mut out[..]));
    assert_eq!(&out[..], &data[..ethernet::HEADER_LEN]);
}

fn arp(data: &[u8]) {
    let Ok(packet) = arp::Packet::new_checked(data) else {
        return;
    };
    let _ = (packet.hardware_type(), packet.protocol_type());
    let _ = (packet.hardware_len(), packet.protocol_len());
    let _ = (packet.operation(), packet.source_hardware_addr());
    let _ = (packet.source_protocol_addr(), packet.target_hardware_addr());
    let _ = packet.target_protocol_addr();
    let repr = arp::Repr::parse(&packet).expect("checked packet parses");
    let mut out = vec![0u8; repr.buffer_len()];
    repr.emit(&mut arp::Packet::new_unchecked(&mut out[..]));
    assert_eq!(&out[..], &data[..arp::BUFFER_LEN]);
}

fn ipv4(data: &[u8]) {
    let Ok(packet) = ipv4::Packet::new_checked(data) else {
        return;
    };
    let _ = (
        packet.version(),
        packet.header_len(),
        packet.dscp(),
        packet.ecn(),
    );
    let _ = (packet.total_len(), packet.ident(), packet.dont_frag());
    let _ = (packet.more_frags(), packet.frag_offset(), packet.ttl());
    let _ = (packet.protocol(), packet.checksum(), packet.src_addr());
    let _ = (
        packet.dst_addr(),
        packet.options().len(),
        packet.payload().len(),
    );
    let valid = packet.verify_checksum();
    let mut copy = data.to_vec();
    let mut writable = ipv4::Packet::new_checked(&mut copy[..]).expect("same bytes");
    writable.decrement_ttl();
    assert_eq!(writable.verify_checksum(), valid);
    writable.payload_mut().fill(0);
    writable.options_mut().fill(1);
    let Ok(repr) = ipv4::Repr::parse(&packet) else {
        assert!(!valid);
        return;
    };
    let mut out = vec![0u8; repr.buffer_len() + repr.payload_len];
    repr.emit(&mut ipv4::Packet::new_unchecked(&mut out[..]));
    let back = ipv4::Packet::new_checked(&out[..]).expect("emitted header is valid");
    assert_eq!(ipv4::Repr::parse(&back).expect("and parses"), repr);
}

fn ipv6(data: &[u8]) {
    let Ok(packet) = ipv6::Packet::new_checked(data) else {
        return;
    };
    let _ = (
        packet.version(),
        packet.traffic_class(),
        packet.dscp(),
        packet.ecn(),
    );
    let _ = (
        packet.flow_label(),
        packet.payload_len(),
        packet.next_header(),
    );
    let _ = (packet.hop_limit(), packet.src_addr(), packet.dst_addr());
    let _ = (
        packet.payload().len(),
        ipv6::solicited_node(&packet.src_addr()),
    );
    let mut copy = data.to_vec();
    let mut writable = ipv6::Packet::new_checked(&mut copy[..]).expect("same bytes");
    writable.decrement_hop_limit();
    writable.payload_mut().fill(0);
    let repr = ipv6::Repr::parse(&packet).expect("checked packet parses");
    let mut out = vec![0u8; repr.buffer_len() + repr.payload_len];
    repr.emit(&mut ipv6::Packet::new_unchecked(&mut out[..]));
    let back = ipv6::Packet::new_checked(&out[..]).expect("emitted header is valid");
    assert_eq!(ipv6::Repr::parse(&back).expect("and parses"), repr);
}

fn icmp_views(data: &[u8]) {
    if let Ok(p) = icmp::v4::Packet::new_checked(data) {
        let _ = (p.msg_type(), p.code(), p.checksum(), p.rest_of_header());
        let _ = (
            p.echo_ident(),
            p.echo_seq(),
            p.next_hop_mtu(),
            p.data().len(),
        );
        let _ = p.verify_checksum();
    }
    if let Ok(p) = icmp::v6::Packet::new_checked(data) {
        let _ = (p.msg_type(), p.code(), p.checksum(), p.rest_of_header());
        let _ = (p.echo_ident(), p.echo_seq(), p.mtu(), p.data().len());
        let _ = p.verify_checksum(&ROUTER6, &Ipv6Addr::UNSPECIFIED);
    }
}

/// A built ICMPv4 packet: valid IPv4 with a valid header checksum and ICMP checksum.
fn check_v4(out: &[u8], max: Option<usize>, msg_type: u8) {
    if let Some(max) = max {
        assert!(out.len() <= max);
    }
    let ip = ipv4::Packet::new_checked(out).expect("built IPv4 is valid");
    assert_eq!(ip.packet().len(), out.len());
    let repr = ipv4::Repr::parse(&ip).expect("built IPv4 checksum is valid");
    assert_eq!(repr.protocol, ipv4::PROTO_ICMP);
    let msg = icmp::v4::Packet::new_checked(ip.payload()).expect("built ICMP is valid");
    assert!(msg.verify_checksum());
    assert_eq!(msg.msg_type(), msg_type);
}

/// A built ICMPv6 packet: valid IPv6 with a valid ICMPv6 checksum.
fn check_v6(out: &[u8], max: Option<usize>, msg_type: u8) {
    if let Some(max) = max {
        assert!(out.len() <= max);
    }
    let ip = ipv6::Packet::new_checked(out).expect("built IPv6 is valid");
    assert_eq!(ip.packet().len(), out.len());
    assert_eq!(ip.next_header(), ipv6::NEXT_ICMPV6);
    let msg = icmp::v6::Packet::new_checked(ip.payload()).expect("built ICMPv6 is valid");
    assert!(msg.verify_checksum(&ip.src_addr(), &ip.dst_addr()));
    assert_eq!(msg.msg_type(), msg_type);
}

fn builders(data: &[u8]) {
    if let Some(out) = icmp::v4_time_exceeded(ROUTER4, data) {
        check_v4(
            &out,
            Some(icmp::v4::MAX_ERROR_LEN),
            icmp::v4::TYPE_TIME_EXCEEDED,
        );
        // Never an error about an error.
        assert_eq!(icmp::v4_time_exceeded(ROUTER4, &out), None);
    }
    if let Some(out) = icmp::v4_frag_needed(ROUTER4, 1280, data) {
        check_v4(
            &out,
            Some(icmp::v4::MAX_ERROR_LEN),
            icmp::v4::TYPE_DEST_UNREACHABLE,
        );
    }
    if let Some(out) = icmp::v4_echo_reply(data) {
        check_v4(&out, None, icmp::v4::TYPE_ECHO_REPLY);
        assert_eq!(icmp::v4_echo_reply(&out), None);
    }
    if let Some(out) = icmp::v6_time_exceeded(ROUTER6, data) {
        check_v6(
            &out,
            Some(icmp::v6::MAX_ERROR_LEN),
            icmp::v6::TYPE_TIME_EXCEEDED,
        );
        assert_eq!(icmp::v6_time_exceeded(ROUTER6, &out), None);
    }
    if let Some(out) = icmp::v6_packet_too_big(ROUTER6, 1280, data) {
        check_v6(
            &out,
            Some(icmp::v6::MAX_ERROR_LEN),
            icmp::v6::TYPE_PACKET_TOO_BIG,
        );
        assert_eq!(icmp::v6_packet_too_big(ROUTER6, 1280, &out), None);
    }
    if let Some(out) = icmp::v6_echo_reply(data) {
        check_v6(&out, None, icmp::v6::TYPE_ECHO_REPLY);
        assert_eq!(icmp::v6_echo_reply(&out), None);
    }
    if let Ok(ns) = ndp::parse_ns(data) {
        assert!(!ns.target.is_multicast());
        let ip = ipv6::Packet::new_checked(data).expect("NS is valid IPv6");
        let src = ip.src_addr();
        let (dst, solicited) = if src.is_unspecified() {
            (Ipv6Addr::new(0xff02, 0, 0, 0, 0, 0, 0, 1), false)
        } else {
            (src, true)
        };
        let na = ndp::neighbor_advert(ns.target, ROUTER_MAC, dst, ns.target, solicited);
        check_v6(&na, None, icmp::v6::TYPE_NEIGHBOR_ADVERT);
    }
}

/// The input with its IPv4 header, ICMPv4 and ICMPv6 checksums made valid, so the
/// builders' checksum-gated paths are reached without seeds.
fn with_valid_checksums(data: &[u8]) -> Option<Vec<u8>> {
    let mut copy = data.to_vec();
    if let Ok(mut ip) = ipv4::Packet::new_checked(&mut copy[..]) {
        ip.fill_checksum();
        if ip.protocol() == ipv4::PROTO_ICMP {
            if let Ok(mut msg) = icmp::v4::Packet::new_checked(ip.payload_mut()) {
                msg.fill_checksum();
            }
        }
        return Some(copy);
    }
    let mut ip = ipv6::Packet::new_checked(&mut copy[..]).ok()?;
    let (src, dst) = (ip.src_addr(), ip.dst_addr());
    if ip.next_header() == ipv6::NEXT_ICMPV6 {
        if let Ok(mut msg) = icmp::v6::Packet::new_checked(ip.payload_mut()) {
            msg.fill_checksum(&src, &dst);
        }
    }
    Some(copy)
}

fuzz_target!(|data: &[u8]| {
    let _ = checksum::internet(data);
    if let Ok(text) = std::str::from_utf8(data) {
        if let Ok(addr) = text.parse::<ethernet::Address>() {
            assert_eq!(addr.to_string().parse::<ethernet::Address>(), Ok(addr));
        }
    }
    ethernet(data);
    arp(data);
    ipv4(data);
    ipv6(data);
    icmp_views(data);
    builders(data);
    // The same bytes behind an Ethernet header, as a router receives them.
    if let Ok(frame) = ethernet::Frame::new_checked(data) {
        let payload = frame.payload();
        arp(payload);
        ipv4(payload);
        ipv6(payload);
        builders(payload);
    }
    if let Some(fixed) = with_valid_checksums(data) {
        ipv4(&fixed);
        builders(&fixed);
    }
});
