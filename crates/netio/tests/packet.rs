//! `AF_PACKET` rings over a veth pair, in network namespaces the tests create
//! themselves (`dpt-pkt-<pid>[-tag]`) and delete again, even when they fail.
//! The host's own interfaces are never touched.
//!
//! These tests need root (`CAP_NET_ADMIN`, `CAP_SYS_ADMIN`, `CAP_NET_RAW`).
//! Without it they print "skipped: needs root" and pass, except under
//! `CI=true`, where a missing capability is a failure.

#![cfg(target_os = "linux")]

mod support;

use support::{privileged, run, Netns};

use std::io;
use std::panic::{self, AssertUnwindSafe};
use std::thread;
use std::time::{Duration, Instant};

use netio::packet::{PacketSocket, RingConfig, RxInfo};
use netio::poll;

/// IEEE 802 local experimental ethertype 1.
const ETHERTYPE: u16 = 0x88b5;
/// `PACKET_HOST` / `PACKET_OTHERHOST`.
const PACKET_HOST: u8 = 0;
const PACKET_OTHERHOST: u8 = 3;
/// Safety net against hangs only; nothing asserts on time.
const GIVE_UP: Duration = Duration::from_secs(20);

/// The test's namespace, `dpt-pkt-<pid>[-tag]`, with what these tests add.
trait PacketNs: Sized {
    fn with_veth(self) -> Self;
    fn mac(&self, dev: &str) -> [u8; 6];
}

fn test_ns(tag: &str) -> Netns {
    Netns::create(format!("dpt-pkt-{}{tag}", std::process::id()))
}

impl PacketNs for Netns {
    /// The veth pair `dpta` / `dptb`, both up.
    fn with_veth(self) -> Self {
        self.ip(&[
            "link", "add", "dpta", "type", "veth", "peer", "name", "dptb",
        ]);
        self.ip(&["link", "set", "dpta", "up"]);
        self.ip(&["link", "set", "dptb", "up"]);
        self
    }

    /// The MAC address of `dev` as `ip link show` prints it.
    fn mac(&self, dev: &str) -> [u8; 6] {
        let text = self.ip(&["link", "show", dev]);
        let hex = text
            .split_whitespace()
            .skip_while(|w| *w != "link/ether")
            .nth(1)
            .unwrap_or_else(|| panic!("no link/ether in {text:?}"));
        let bytes: Vec<u8> = hex
            .split(':')
            .map(|b| u8::from_str_radix(b, 16).unwrap())
            .collect();
        bytes.try_into().unwrap()
    }
}

fn netns_listed(name: &str) -> bool {
    run(&["netns", "list"])
        .lines()
        .any(|l| l.split_whitespace().next() == Some(name))
}

/// A frame from `src` to `dst` with our ethertype, `len` bytes long,
/// carrying `seq` and a pattern derived from it.
fn frame(dst: [u8; 6], src: [u8; 6], seq: u32, len: usize) -> Vec<u8> {
    let mut f = Vec::with_capacity(len);
    f.extend_from_slice(&dst);
    f.extend_from_slice(&src);
    f.extend_from_slice(&ETHERTYPE.to_be_bytes());
    f.extend_from_slice(&seq.to_be_bytes());
    f.extend((f.len()..len).map(|i| (i as u32).wrapping_mul(31).wrapping_add(seq) as u8));
    f
}

fn is_ours(f: &[u8]) -> bool {
    f.len() >= 14 && f[12..14] == ETHERTYPE.to_be_bytes()
}

/// Receives our frames on `rx` until `n` have come (or panics after
/// [`GIVE_UP`]), ignoring the kernel's own chatter (IPv6 ND, MLD).
fn recv_ours(rx: &mut PacketSocket, n: usize) -> Vec<(Vec<u8>, RxInfo)> {
    let start = Instant::now();
    let mut got = Vec::new();
    while got.len() < n {
        assert!(
            start.elapsed() < GIVE_UP,
            "only {} of {n} frames came",
            got.len()
        );
        poll::poll_readable(&[rx.fd()], Some(10_000_000)).unwrap();
        rx.recv_batch(64, |f, info| {
            if is_ours(f) {
                got.push((f.to_vec(), info));
            }
        })
        .unwrap();
    }
    got
}

/// Sends `frames` through `tx`, flushing (and retrying) whenever the ring is
/// full.
fn send_all(tx: &mut PacketSocket, frames: &[Vec<u8>]) {
    let start = Instant::now();
    for f in frames {
        while !tx.send(f).unwrap() {
            assert!(start.elapsed() < GIVE_UP, "TX ring never drained");
            tx.flush().unwrap();
            thread::yield_now();
        }
    }
    tx.flush().unwrap();
}

/// Counts our frames waiting on `sock` without blocking.
fn drain_ours(sock: &mut PacketSocket) -> usize {
    let mut n = 0;
    sock.recv_batch(usize::MAX, |f, _| n += usize::from(is_ours(f)))
        .unwrap();
    n
}

#[test]
fn veth_frames_arrive_once_in_order_and_intact() {
    if !privileged("CAP_NET_ADMIN, CAP_SYS_ADMIN, CAP_NET_RAW") {
        return;
    }
    let ns = test_ns("").with_veth();
    let (mac_a, mac_b) = (ns.mac("dpta"), ns.mac("dptb"));
    ns.run_inside(move || {
        let cfg = RingConfig::default();
        let mut a = PacketSocket::open("dpta", &cfg).unwrap();
        let mut b = PacketSocket::open("dptb", &cfg).unwrap();
        // A second socket on the sending side: it would see A's frames as
        // PACKET_OUTGOING (a socket never sees its own).
        let mut a_watch = PacketSocket::open("dpta", &cfg).unwrap();
        assert_eq!(a.mac().unwrap(), mac_a);
        assert_eq!(b.mac().unwrap(), mac_b);
        assert_eq!(a.mtu().unwrap(), 1500);
        assert_eq!(b.mtu().unwrap(), 1500);
        assert_ne!(a.ifindex(), b.ifindex());
        assert_eq!(a.ring_frames(), (512, 512));
        eprintln!("PACKET_IGNORE_OUTGOING taken: {}", a.ignores_outgoing());

        const N: usize = 1000;
        let frames: Vec<Vec<u8>> = (0..N)
            .map(|i| frame(mac_b, mac_a, i as u32, 60 + (i * 397) % (1514 - 60 + 1)))
            .collect();
        assert!(frames.iter().any(|f| f.len() == 60));
        assert!(frames.iter().any(|f| f.len() > 1500));

        // Keep at most half of B's ring in flight, so B never drops.
        const WINDOW: usize = 256;
        let start = Instant::now();
        let mut sent = 0;
        let mut got: Vec<(Vec<u8>, RxInfo)> = Vec::new();
        let mut full = 0;
        while got.len() < N {
            assert!(
                start.elapsed() < GIVE_UP,
                "only {} of {N} frames came",
                got.len()
            );
            while sent < N && sent - got.len() < WINDOW {
                if !a.send(&frames[sent]).unwrap() {
                    full += 1;
                    break;
                }
                sent += 1;
            }
            a.flush().unwrap();
            poll::poll_readable(&[b.fd()], Some(10_000_000)).unwrap();
            b.recv_batch(64, |f, info| {
                if is_ours(f) {
                    got.push((f.to_vec(), info));
                }
            })
            .unwrap();
        }
        eprintln!("TX ring full {full} times");

        for (i, (f, info)) in got.iter().enumerate() {
            assert_eq!(f, &frames[i], "frame {i} differs (len {})", f.len());
            assert!(!info.truncated, "frame {i} truncated");
            assert_eq!(info.pkt_type, PACKET_HOST);
            assert!(info.timestamp_ns > 0);
            assert!(!info.losing);
        }
        assert!(
            got.windows(2)
                .all(|w| w[0].1.timestamp_ns <= w[1].1.timestamp_ns),
            "timestamps go backwards"
        );
        // Nothing more, nothing twice.
        thread::sleep(Duration::from_millis(20));
        assert_eq!(drain_ours(&mut b), 0, "extra frames on B");
        // Neither the sender nor another socket on its interface sees them.
        assert_eq!(drain_ours(&mut a), 0, "A received its own frames");
        assert_eq!(drain_ours(&mut a_watch), 0, "outgoing frames returned");
        let stats = b.stats().unwrap();
        assert_eq!(stats.drops, 0);
        assert!(stats.packets >= N as u64, "{stats:?}");
        // Read resets the counters.
        assert_eq!(b.stats().unwrap().packets, 0);
        assert_eq!(a.tx_wrong_format(), 0);
    });
}

#[test]
fn send_checks_size_and_reports_a_full_ring() {
    if !privileged("CAP_NET_ADMIN, CAP_SYS_ADMIN, CAP_NET_RAW") {
        return;
    }
    let ns = test_ns("-full").with_veth();
    let (mac_a, mac_b) = (ns.mac("dpta"), ns.mac("dptb"));
    ns.run_inside(move || {
        let cfg = RingConfig {
            tx_frames: 8,
            ..RingConfig::default()
        };
        let mut a = PacketSocket::open("dpta", &cfg).unwrap();
        let mut b = PacketSocket::open("dptb", &RingConfig::default()).unwrap();
        assert_eq!(a.ring_frames().1, 8);
        assert_eq!(a.max_frame_len(), 2048 - 32);

        let too_long = vec![0u8; a.max_frame_len() + 1];
        let err = a.send(&too_long).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::InvalidInput);
        let err = a.send(&[0u8; 13]).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::InvalidInput);

        let frames: Vec<Vec<u8>> = (0..9).map(|i| frame(mac_b, mac_a, i, 100)).collect();
        for f in &frames[..8] {
            assert!(a.send(f).unwrap());
        }
        assert!(!a.send(&frames[8]).unwrap(), "9th send into 8 slots");
        // After a flush the slots come back and the 9th goes too.
        send_all(&mut a, &frames[8..]);
        let got = recv_ours(&mut b, 9);
        let got: Vec<Vec<u8>> = got.into_iter().map(|(f, _)| f).collect();
        assert_eq!(got, frames);
    });
}

#[test]
fn frame_over_mtu_is_dropped_and_the_rest_still_goes() {
    if !privileged("CAP_NET_ADMIN, CAP_SYS_ADMIN, CAP_NET_RAW") {
        return;
    }
    let ns = test_ns("-wrong").with_veth();
    let (mac_a, mac_b) = (ns.mac("dpta"), ns.mac("dptb"));
    ns.run_inside(move || {
        let cfg = RingConfig {
            tx_frames: 8,
            ..RingConfig::default()
        };
        let mut a = PacketSocket::open("dpta", &cfg).unwrap();
        let mut b = PacketSocket::open("dptb", &cfg).unwrap();
        let good: Vec<Vec<u8>> = (0..5).map(|i| frame(mac_b, mac_a, i, 200)).collect();
        // Fits the slot (<= 2016) but not the MTU (1500 + 14 + 4 VLAN).
        let big = frame(mac_b, mac_a, 99, 1600);
        assert!(a.send(&good[0]).unwrap());
        assert!(a.send(&big).unwrap());
        for f in &good[1..] {
            assert!(a.send(f).unwrap());
        }
        a.flush().unwrap();
        assert_eq!(a.tx_wrong_format(), 1);
        let got: Vec<Vec<u8>> = recv_ours(&mut b, 5).into_iter().map(|(f, _)| f).collect();
        assert_eq!(got, good);
        // The ring keeps working across its wrap-around.
        let more: Vec<Vec<u8>> = (10..30).map(|i| frame(mac_b, mac_a, i, 300)).collect();
        send_all(&mut a, &more);
        let got: Vec<Vec<u8>> = recv_ours(&mut b, 20).into_iter().map(|(f, _)| f).collect();
        assert_eq!(got, more);
        assert_eq!(a.tx_wrong_format(), 1);
    });
}

#[test]
fn frames_for_other_macs_arrive_as_otherhost() {
    if !privileged("CAP_NET_ADMIN, CAP_SYS_ADMIN, CAP_NET_RAW") {
        return;
    }
    let ns = test_ns("-other").with_veth();
    let mac_a = ns.mac("dpta");
    ns.run_inside(move || {
        let elsewhere = [0x02, 0, 0, 0, 0, 0x99];
        for promiscuous in [false, true] {
            let cfg = RingConfig {
                promiscuous,
                ..RingConfig::default()
            };
            let mut a = PacketSocket::open("dpta", &cfg).unwrap();
            let mut b = PacketSocket::open("dptb", &cfg).unwrap();
            let f = frame(elsewhere, mac_a, 7, 64);
            send_all(&mut a, std::slice::from_ref(&f));
            let got = recv_ours(&mut b, 1);
            assert_eq!(got[0].0, f, "promiscuous {promiscuous}");
            assert_eq!(got[0].1.pkt_type, PACKET_OTHERHOST);
        }
    });
}

#[test]
fn guard_removes_the_namespace_even_on_panic() {
    if !privileged("CAP_NET_ADMIN, CAP_SYS_ADMIN, CAP_NET_RAW") {
        return;
    }
    let name = format!("dpt-pkt-{}-panic", std::process::id());
    let result = panic::catch_unwind(AssertUnwindSafe(|| {
        let ns = test_ns("-panic").with_veth();
        assert_eq!(ns.name, name);
        assert!(netns_listed(&ns.name));
        panic!("deliberate failure inside the test body");
    }));
    assert!(result.is_err());
    assert!(!netns_listed(&name), "namespace {name} left behind");
}

#[test]
fn a_frame_rewritten_in_its_rx_slot_goes_out_as_rewritten() {
    if !privileged("CAP_NET_ADMIN, CAP_SYS_ADMIN, CAP_NET_RAW") {
        return;
    }
    let ns = test_ns("inplace").with_veth();
    let (mac_a, mac_b) = (ns.mac("dpta"), ns.mac("dptb"));
    ns.run_inside(move || {
        let cfg = RingConfig::default();
        let mut a = PacketSocket::open("dpta", &cfg).unwrap();
        let mut b = PacketSocket::open("dptb", &cfg).unwrap();
        // Let the kernel's own chatter (ND, MLD) pass before we look.
        thread::sleep(Duration::from_millis(200));
        drain_ours(&mut b);
        drain_ours(&mut a);
        send_all(&mut a, &[frame(mac_b, mac_a, 7, 200)]);
        let start = Instant::now();
        while !b.rx_pending() {
            assert!(
                start.elapsed() < GIVE_UP,
                "rx_pending never said a frame waits"
            );
            thread::yield_now();
        }
        // B turns the frame around where it lies: new addresses, a byte changed, then
        // straight from its RX slot into its TX slot.
        let mut turned = None;
        let start = Instant::now();
        while turned.is_none() {
            assert!(start.elapsed() < GIVE_UP, "the frame never came");
            b.recv_batch_mut(64, |f, _| {
                if is_ours(f) {
                    f[..6].copy_from_slice(&mac_a);
                    f[6..12].copy_from_slice(&mac_b);
                    f[20] ^= 0xff;
                    turned = Some(f.to_vec());
                    // The sending ring is another socket's, as in a router.
                }
            })
            .unwrap();
        }
        let turned = turned.unwrap();
        send_all(&mut b, std::slice::from_ref(&turned));
        let back = recv_ours(&mut a, 1);
        assert_eq!(back[0].0, turned);
        assert_eq!(back[0].1.pkt_type, PACKET_HOST);
        let mut want = frame(mac_b, mac_a, 7, 200);
        want[..6].copy_from_slice(&mac_a);
        want[6..12].copy_from_slice(&mac_b);
        want[20] ^= 0xff;
        assert_eq!(back[0].0, want);
    });
}
