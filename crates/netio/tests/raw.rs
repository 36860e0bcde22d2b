//! Raw RSVP sockets (IP protocol 46) on loopback: what the kernel puts on the
//! wire for each `send` and what `recv` reports. Only 127.0.0.1, 127.0.0.2 and
//! ::1 are used; nothing is created.
//!
//! These tests need root (`CAP_NET_RAW`). Without it they print "skipped:
//! needs root" and pass, except under `CI=true`, where a missing capability
//! is a failure.
//!
//! Every raw RSVP socket of the namespace sees every RSVP datagram on
//! loopback (other tests' too), so receivers skip datagrams whose payload is
//! not the one they wait for.

#![cfg(target_os = "linux")]

mod support;

use support::privileged;

use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::time::{Duration, Instant};

use netio::poll;
use netio::raw::{RawDatagram, RawRsvpSocket, ROUTER_ALERT_V4};

/// Safety net against hangs only; nothing asserts on time.
const GIVE_UP: Duration = Duration::from_secs(20);
const LO4: IpAddr = IpAddr::V4(Ipv4Addr::LOCALHOST);
const LO6: IpAddr = IpAddr::V6(Ipv6Addr::LOCALHOST);
/// `lo`'s interface index in every namespace.
const LO_IFINDEX: u32 = 1;

/// A payload no other test or test run sends.
fn payload(tag: &str) -> Vec<u8> {
    format!("dpt-raw {} {tag}", std::process::id()).into_bytes()
}

/// Waits for the datagram carrying `want`, skipping others; returns it and
/// the buffer it was read into.
fn recv_matching(rx: &RawRsvpSocket, want: &[u8]) -> (RawDatagram, Vec<u8>) {
    let deadline = Instant::now() + GIVE_UP;
    let mut buf = vec![0u8; 2048];
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        assert!(!left.is_zero(), "no datagram carrying {want:?}");
        poll::poll_readable(&[rx.as_raw_fd()], Some(left.as_nanos() as u64)).unwrap();
        while let Some(got) = rx.recv(&mut buf).unwrap() {
            if buf[got.payload.clone()] == *want {
                return (got, buf);
            }
        }
    }
}

/// Sends `tag`'s payload from `tx` to `dst` and checks what `rx` got.
fn round_trip(
    tag: &str,
    dst: IpAddr,
    src: Option<IpAddr>,
    ttl: u8,
    router_alert: bool,
) -> (RawDatagram, Vec<u8>) {
    let v6 = dst.is_ipv6();
    let rx = RawRsvpSocket::open(v6).unwrap();
    let tx = RawRsvpSocket::open(v6).unwrap();
    let want = payload(tag);
    tx.send(dst, src, ttl, router_alert, &want).unwrap();
    let (got, buf) = recv_matching(&rx, &want);
    assert_eq!(got.src, src.unwrap_or(dst), "{tag}");
    assert_eq!(got.dst, dst, "{tag}");
    assert_eq!(got.ttl, ttl, "{tag}");
    assert_eq!(got.ifindex, LO_IFINDEX, "{tag}");
    assert!(!got.truncated, "{tag}");
    (got, buf)
}

#[test]
fn ipv4_without_router_alert_has_a_plain_header() {
    if !privileged("CAP_NET_RAW") {
        return;
    }
    let (got, buf) = round_trip("v4 plain", LO4, None, 7, false);
    assert_eq!(got.header, 0..20);
    assert_eq!(got.payload.start, 20);
    let header = &buf[got.header.clone()];
    assert_eq!(header[0], 0x45, "version 4, IHL 5");
    assert_eq!(header[9], 46, "protocol RSVP");
    assert_eq!(got.router_alert, None);
}

#[test]
fn ipv4_router_alert_is_an_ip_option_and_the_source_is_ours() {
    if !privileged("CAP_NET_RAW") {
        return;
    }
    let src = Some(IpAddr::V4(Ipv4Addr::new(127, 0, 0, 2)));
    let (got, buf) = round_trip("v4 alert", LO4, src, 200, true);
    assert_eq!(got.header, 0..24);
    assert_eq!(got.payload.start, 24);
    let header = &buf[got.header.clone()];
    assert_eq!(header[0], 0x46, "version 4, IHL 6");
    assert_eq!(
        header[20..24],
        ROUTER_ALERT_V4,
        "option 148, length 4, value 0"
    );
    assert_eq!(got.router_alert, Some(0));
}

#[test]
fn ipv4_alert_on_one_send_does_not_stick_to_the_next() {
    if !privileged("CAP_NET_RAW") {
        return;
    }
    let rx = RawRsvpSocket::open(false).unwrap();
    let tx = RawRsvpSocket::open(false).unwrap();
    let (first, second) = (payload("v4 first"), payload("v4 second"));
    tx.send(LO4, None, 1, true, &first).unwrap();
    tx.send(LO4, None, 1, false, &second).unwrap();
    assert_eq!(recv_matching(&rx, &first).0.router_alert, Some(0));
    let (got, _) = recv_matching(&rx, &second);
    assert_eq!((got.router_alert, got.header), (None, 0..20));
}

#[test]
fn ipv6_without_router_alert_has_no_hop_by_hop_header() {
    if !privileged("CAP_NET_RAW") {
        return;
    }
    let (got, _) = round_trip("v6 plain", LO6, None, 9, false);
    assert_eq!(got.header, 0..0, "IPv6 raw sockets read no IP header");
    assert_eq!(got.payload.start, 0);
    assert_eq!(got.router_alert, None);
}

#[test]
fn ipv6_router_alert_arrives_in_a_hop_by_hop_header() {
    if !privileged("CAP_NET_RAW") {
        return;
    }
    let (got, _) = round_trip("v6 alert", LO6, Some(LO6), 255, true);
    assert_eq!(got.payload.start, 0);
    assert_eq!(got.router_alert, Some(1), "RFC 2711 value 1: RSVP");
}

#[test]
fn wrong_family_and_zero_ttl_are_refused_before_the_kernel() {
    if !privileged("CAP_NET_RAW") {
        return;
    }
    let v4 = RawRsvpSocket::open(false).unwrap();
    let v6 = RawRsvpSocket::open(true).unwrap();
    assert!(!v4.is_v6() && v6.is_v6());
    let kind = |r: io::Result<()>| r.unwrap_err().kind();
    assert_eq!(
        kind(v4.send(LO6, None, 1, false, b"x")),
        io::ErrorKind::InvalidInput
    );
    assert_eq!(
        kind(v6.send(LO4, None, 1, false, b"x")),
        io::ErrorKind::InvalidInput
    );
    assert_eq!(
        kind(v4.send(LO4, Some(LO6), 1, false, b"x")),
        io::ErrorKind::InvalidInput
    );
    assert_eq!(
        kind(v4.send(LO4, None, 0, false, b"x")),
        io::ErrorKind::InvalidInput
    );
    // A v4-mapped destination is IPv4.
    let mapped = IpAddr::V6(Ipv4Addr::LOCALHOST.to_ipv6_mapped());
    let want = payload("v4 mapped");
    v4.send(mapped, None, 3, false, &want).unwrap();
    assert_eq!(recv_matching(&v4, &want).0.dst, LO4);
}

#[test]
fn a_short_buffer_reports_truncation() {
    if !privileged("CAP_NET_RAW") {
        return;
    }
    let rx = RawRsvpSocket::open(true).unwrap();
    let tx = RawRsvpSocket::open(true).unwrap();
    let mut want = payload("v6 long");
    want.resize(100, b'.');
    tx.send(LO6, None, 5, false, &want).unwrap();
    let deadline = Instant::now() + GIVE_UP;
    let mut buf = [0u8; 40];
    loop {
        assert!(Instant::now() < deadline, "the long datagram never came");
        poll::poll_readable(&[rx.as_raw_fd()], Some(1_000_000_000)).unwrap();
        while let Some(got) = rx.recv(&mut buf).unwrap() {
            if buf[got.payload.clone()] == want[..40] {
                assert!(got.truncated);
                assert_eq!(got.payload, 0..40);
                return;
            }
        }
    }
}

/// Linux capabilities are per thread: this thread gives up `CAP_NET_RAW`
/// from its effective set (only it; it ends right after).
fn drop_cap_net_raw_in_this_thread() {
    #[repr(C)]
    struct Header {
        version: u32,
        pid: i32,
    }
    #[repr(C)]
    #[derive(Clone, Copy, Default)]
    struct Data {
        effective: u32,
        permitted: u32,
        inheritable: u32,
    }
    const VERSION_3: u32 = 0x2008_0522;
    const CAP_NET_RAW: u32 = 13;
    let mut header = Header {
        version: VERSION_3,
        pid: 0,
    };
    let mut data = [Data::default(); 2];
    // SAFETY: capget(2) with a v3 header writes two Data structs, which `data` holds.
    let ret = unsafe { libc::syscall(libc::SYS_capget, &mut header, data.as_mut_ptr()) };
    assert_eq!(ret, 0, "capget: {}", io::Error::last_os_error());
    data[0].effective &= !(1 << CAP_NET_RAW);
    // SAFETY: capset(2) reads the header and two Data structs; pid 0 = this thread.
    let ret = unsafe { libc::syscall(libc::SYS_capset, &header, data.as_ptr()) };
    assert_eq!(ret, 0, "capset: {}", io::Error::last_os_error());
}

#[test]
fn without_cap_net_raw_open_says_what_it_needs() {
    if !privileged("CAP_NET_RAW") {
        return;
    }
    std::thread::spawn(|| {
        drop_cap_net_raw_in_this_thread();
        for v6 in [false, true] {
            let e = RawRsvpSocket::open(v6).unwrap_err();
            assert_eq!(e.kind(), io::ErrorKind::PermissionDenied, "{e}");
            assert!(e.to_string().contains("needs root or CAP_NET_RAW"), "{e}");
        }
    })
    .join()
    .unwrap();
}
