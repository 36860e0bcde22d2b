//! The RFC 2544 tester's XDP programs over a veth pair between two network
//! namespaces the tests create themselves (`dpt-xdp-<pid>-…`, deleted again
//! even when a test fails). Counts are asserted exactly; no rate or time is.
//!
//! These tests need root (`CAP_BPF`, `CAP_NET_ADMIN`, `CAP_SYS_ADMIN`).
//! Without it they print "skipped: needs root" and pass, except under
//! `CI=true`, where a missing capability is a failure.

#![cfg(target_os = "linux")]

mod support;

use support::{privileged, Netns};

use std::thread;
use std::time::{Duration, Instant};

use netio::clock::mono_ns;
use netio::xdp::{
    self, PortConfig, RxConfig, RxStats, Schedule, Segment, TesterPort, TxConfig, TxStats,
};
use netio::{RecvMeta, UdpSocket};

/// Two namespaces `…-TESTx`, `…-TESTy` joined by veth `xa` (in `x`) — `xb` (in `y`), up, with
/// 198.18.0.1/24 and 198.18.0.2/24.
fn pair(test: &str) -> (Netns, Netns) {
    let x = Netns::create(format!("dpt-xdp-{}-{test}x", std::process::id()));
    let y = Netns::create(format!("dpt-xdp-{}-{test}y", std::process::id()));
    x.ip(&[
        "link", "add", "xa", "type", "veth", "peer", "name", "xb", "netns", &y.name,
    ]);
    x.ip(&["addr", "add", "198.18.0.1/24", "dev", "xa"]);
    y.ip(&["addr", "add", "198.18.0.2/24", "dev", "xb"]);
    x.ip(&["link", "set", "xa", "up"]);
    y.ip(&["link", "set", "xb", "up"]);
    (x, y)
}

/// RFC 1071 ones'-complement sum of `data` (odd tail padded), plus `init`.
fn sum16(data: &[u8], mut s: u32) -> u32 {
    for c in data.chunks(2) {
        s += u32::from(u16::from_be_bytes([c[0], *c.get(1).unwrap_or(&0)]));
    }
    while s > 0xffff {
        s = (s & 0xffff) + (s >> 16);
    }
    s
}

const TAG: [u8; 2] = [0x25, 0x44];

/// A 60-byte IPv4 UDP test frame (64 with FCS): tag of `stream`, seq,
/// tx_ns, adjust 0, valid header checksum, UDP checksum valid or 0.
fn frame_v4(dst: [u8; 6], src: [u8; 6], stream: u8, udp_csum: bool) -> TxConfig {
    let mut f = Vec::new();
    f.extend_from_slice(&dst);
    f.extend_from_slice(&src);
    f.extend_from_slice(&[0x08, 0x00]);
    let ip = [
        0x45, 0, 0, 46, 0, 0, 0x40, 0, 64, 17, 0, 0, 198, 18, 0, 1, 198, 18, 0, 2,
    ];
    f.extend_from_slice(&ip);
    let c = !(sum16(&f[14..34], 0) as u16);
    f[24..26].copy_from_slice(&c.to_be_bytes());
    f.extend_from_slice(&[0x04, 0x00, 0x04, 0x01, 0, 26, 0, 0]); // 1024 → 1025
    f.extend_from_slice(&TAG);
    f.extend_from_slice(&[stream, 0]);
    f.extend_from_slice(&[0; 14]);
    if udp_csum {
        let pseudo = sum16(&f[26..34], 17 + 26);
        let c = !(sum16(&f[34..], pseudo) as u16);
        f[40..42].copy_from_slice(&c.to_be_bytes());
    }
    assert_eq!(f.len(), 60);
    TxConfig {
        frame: f,
        l4_offset: 34,
        tag_offset: 42,
        stream,
        v6: false,
        rfc4814_ports: false,
    }
}

/// An 80-byte IPv6 UDP test frame (84 with FCS, RFC 8219 §5.1),
/// 2001:2::1 → 2001:2::2.
fn frame_v6(dst: [u8; 6], src: [u8; 6], stream: u8, rfc4814: bool) -> TxConfig {
    let mut f = Vec::new();
    f.extend_from_slice(&dst);
    f.extend_from_slice(&src);
    f.extend_from_slice(&[0x86, 0xdd]);
    f.extend_from_slice(&[0x60, 0, 0, 0, 0, 26, 17, 64]);
    let mut a = [0u8; 16];
    a[..4].copy_from_slice(&[0x20, 0x01, 0, 2]);
    a[15] = 1;
    f.extend_from_slice(&a);
    a[15] = 2;
    f.extend_from_slice(&a);
    f.extend_from_slice(&[0x04, 0x00, 0x04, 0x01, 0, 26, 0, 0]);
    f.extend_from_slice(&TAG);
    f.extend_from_slice(&[stream, 0]);
    f.extend_from_slice(&[0; 14]);
    let pseudo = sum16(&f[22..54], 17 + 26);
    let c = !(sum16(&f[54..], pseudo) as u16);
    f[60..62].copy_from_slice(&c.to_be_bytes());
    assert_eq!(f.len(), 80);
    TxConfig {
        frame: f,
        l4_offset: 54,
        tag_offset: 62,
        stream,
        v6: true,
        rfc4814_ports: rfc4814,
    }
}

/// Whether the UDP checksum of a frame built above verifies (0 = none, v4).
fn udp_checksum_ok(f: &[u8], v6: bool) -> bool {
    let (pseudo, l4) = if v6 {
        (sum16(&f[22..54], 17 + 26), 54)
    } else {
        if f[40..42] == [0, 0] {
            return true;
        }
        (sum16(&f[26..34], 17 + 26), 34)
    };
    sum16(&f[l4..], pseudo) == 0xffff
}

fn be32(b: &[u8]) -> u32 {
    u32::from_be_bytes(b[..4].try_into().unwrap())
}

fn be64(b: &[u8]) -> u64 {
    u64::from_be_bytes(b[..8].try_into().unwrap())
}

#[test]
fn generated_frames_carry_seq_and_time_with_valid_checksums() {
    if !privileged("CAP_BPF, CAP_NET_ADMIN") {
        return;
    }
    let (x, _y) = pair("p");
    x.run_inside(|| {
        let port = TesterPort::open("xa", &PortConfig { max_tags: 16 }).unwrap();
        let mac = port.mac().unwrap();
        // Starting in the past: every frame is due at once.
        let sched = Schedule {
            start_ns: 1,
            segments: vec![
                Segment {
                    frames: 3,
                    interval_ps: 1_000,
                },
                Segment {
                    frames: 0,
                    interval_ps: 5,
                },
                Segment {
                    frames: 5,
                    interval_ps: 1_000,
                },
            ],
        };
        let cases = [
            frame_v4([2; 6], mac, 9, true),
            frame_v4([2; 6], mac, 9, false),
            frame_v6([2; 6], mac, 3, false),
            frame_v6([2; 6], mac, 3, true),
            TxConfig {
                rfc4814_ports: true,
                ..frame_v4([2; 6], mac, 9, true)
            },
        ];
        for tx in cases {
            let before = mono_ns();
            let mut gen = port.generator(&tx).unwrap();
            let frames = gen.preview(&sched, 100).unwrap();
            assert_eq!(frames.len(), 8, "the schedule's 8 frames");
            let mut ports = std::collections::HashSet::new();
            for (i, f) in frames.iter().enumerate() {
                let what = format!("frame {i} of {:?}", &tx.frame[12..14]);
                let t = tx.tag_offset;
                assert_eq!(f.len(), tx.frame.len(), "{what}");
                assert_eq!(be32(&f[t + 6..]), i as u32, "seq of {what}");
                let ts = be64(&f[t + 10..]);
                assert!(ts >= before && ts <= mono_ns(), "tx_ns {ts} of {what}");
                assert!(udp_checksum_ok(f, tx.v6), "checksum of {what}: {f:02x?}");
                // Everything but ports, adjust, seq and tx_ns is the template.
                let l4 = tx.l4_offset;
                assert_eq!(f[..l4], tx.frame[..l4], "{what}");
                assert_eq!(f[l4 + 4..t + 4], tx.frame[l4 + 4..t + 4], "{what}");
                let (sp, dp) = (
                    u16::from_be_bytes([f[l4], f[l4 + 1]]),
                    u16::from_be_bytes([f[l4 + 2], f[l4 + 3]]),
                );
                if tx.rfc4814_ports {
                    assert!(sp >= 1024 && (1..=49151).contains(&dp), "{sp} {dp}");
                    ports.insert((sp, dp));
                } else {
                    assert_eq!((sp, dp), (1024, 1025), "{what}");
                }
                if tx.frame[40..42] == [0, 0] && !tx.v6 {
                    assert_eq!(f[40..42], [0, 0], "no checksum stays none");
                }
            }
            if tx.rfc4814_ports {
                assert!(ports.len() > 4, "random ports vary: {ports:?}");
            }
        }
    });
}

/// Runs a generator of `tx` for `segments` (starting 50 ms from now) on a
/// thread in `ns` and returns what it sent.
fn send(ns: &Netns, tx: TxConfig, segments: Vec<Segment>) -> TxStats {
    send_until(ns, tx, segments, 20_000_000_000)
}

/// [`send`] with a deadline `deadline_ns` after the start.
fn send_until(ns: &Netns, tx: TxConfig, segments: Vec<Segment>, deadline_ns: u64) -> TxStats {
    ns.run_inside(move || {
        let port = TesterPort::open("xa", &PortConfig { max_tags: 16 }).unwrap();
        let mut gen = port.generator(&tx).unwrap();
        let start_ns = mono_ns() + 50_000_000;
        let sched = Schedule { start_ns, segments };
        gen.run(&sched, start_ns + deadline_ns).unwrap()
    })
}

/// Waits (up to 10 s, a safety net only) until `stream` has counted `n`
/// frames in all, then returns its counts.
fn settled(port: &TesterPort, stream: u8, n: u64) -> RxStats {
    let start = Instant::now();
    loop {
        let s = port.rx_stats(stream).unwrap();
        if s.received + s.late + s.ramp >= n || start.elapsed() > Duration::from_secs(10) {
            thread::sleep(Duration::from_millis(20));
            return port.rx_stats(stream).unwrap();
        }
        thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn every_frame_is_counted_once_by_its_stream_only() {
    if !privileged("CAP_BPF, CAP_NET_ADMIN") {
        return;
    }
    assert!(
        xdp::live_frames_supported().unwrap(),
        "kernel ≥ 5.18 has live frames"
    );
    let (x, y) = pair("c");
    let rx = y.run_inside(|| TesterPort::open("xb", &PortConfig { max_tags: 1024 }).unwrap());
    let mac_b = rx.mac().unwrap();
    let mac_a = x.run_inside(|| {
        TesterPort::open("xa", &PortConfig::default())
            .unwrap()
            .mac()
            .unwrap()
    });

    // Ramp of 1000 frames at 50 kfps, then 9000 at 100 kfps.
    rx.arm_rx(&RxConfig {
        streams: vec![1],
        first_seq: 1000,
        timeout_ns: 1_000_000_000,
        tag_every: 64,
    })
    .unwrap();
    let segments = vec![
        Segment {
            frames: 1000,
            interval_ps: 20_000_000,
        },
        Segment {
            frames: 9000,
            interval_ps: 10_000_000,
        },
    ];
    let tx = send(&x, frame_v4(mac_b, mac_a, 1, true), segments);
    assert_eq!(tx.sent, 10_000);
    let s1 = settled(&rx, 1, 10_000);
    assert_eq!(
        (s1.ramp, s1.received, s1.late, s1.reordered),
        (1000, 9000, 0, 0),
        "{s1:?}"
    );
    assert!(
        s1.min_ns > 0 && s1.min_ns <= s1.max_ns && s1.sum_ns >= s1.min_ns * 9000,
        "{s1:?}"
    );
    let tags = rx.tagged_latencies(1).unwrap();
    assert_eq!(tags.len(), 1024);
    // Seqs 1000, 1064, …, 9960: 141 tagged frames.
    assert_eq!(xdp::tag_slots(9000, 64), 141);
    assert!(
        tags[..141]
            .iter()
            .all(|t| t.is_some_and(|ns| ns >= s1.min_ns && ns <= s1.max_ns)),
        "{tags:?}"
    );
    assert!(tags[141..].iter().all(Option::is_none));

    // Armed for 7 and 2 only: stream 1 is not counted any more, stream 2 is.
    rx.arm_rx(&RxConfig {
        streams: vec![7, 2],
        first_seq: 0,
        timeout_ns: 1_000_000_000,
        tag_every: 1,
    })
    .unwrap();
    let one = send(
        &x,
        frame_v4(mac_b, mac_a, 1, true),
        vec![Segment {
            frames: 500,
            interval_ps: 10_000_000,
        }],
    );
    let two = send(
        &x,
        frame_v6(mac_b, mac_a, 2, true),
        vec![Segment {
            frames: 1000,
            interval_ps: 10_000_000,
        }],
    );
    assert_eq!((one.sent, two.sent), (500, 1000));
    let s2 = settled(&rx, 2, 1000);
    assert_eq!(
        (s2.ramp, s2.received, s2.late, s2.reordered),
        (0, 1000, 0, 0),
        "{s2:?}"
    );
    assert_eq!(rx.rx_stats(7).unwrap(), RxStats::default());
    assert_eq!(
        rx.rx_stats(1).unwrap(),
        s1,
        "a disarmed stream keeps its counts"
    );
    let tags = rx.tagged_latencies(2).unwrap();
    assert!(tags[..1000].iter().all(Option::is_some) && tags[1000..].iter().all(Option::is_none));
    assert!(
        rx.tagged_latencies(1).is_err(),
        "stream 1 lost its tag bank"
    );

    // Everything else passes: ARP and a plain UDP datagram go through the
    // receive program to the stack.
    let sock = y.run_inside(|| {
        let s = UdpSocket::bind("198.18.0.2:9".parse().unwrap(), false).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        s
    });
    x.run_inside(|| {
        let s = UdpSocket::bind("198.18.0.1:0".parse().unwrap(), false).unwrap();
        s.connect("198.18.0.2:9".parse().unwrap()).unwrap();
        s.send(b"not a test frame").unwrap();
    });
    let mut bufs = vec![vec![0u8; 64]; 1];
    let mut metas = [RecvMeta::default(); 1];
    assert_eq!(
        sock.recv_batch(&mut bufs, &mut metas).unwrap(),
        1,
        "the datagram passed"
    );
    assert_eq!(&bufs[0][..16], b"not a test frame");

    // A deadline ends a run early; what was sent arrived.
    rx.arm_rx(&RxConfig {
        streams: vec![3],
        first_seq: 0,
        timeout_ns: 1_000_000_000,
        tag_every: 1,
    })
    .unwrap();
    let long = vec![Segment {
        frames: 1_000_000,
        interval_ps: 1_000_000_000,
    }]; // 1000 s
    let cut = send_until(&x, frame_v4(mac_b, mac_a, 3, true), long, 300_000_000);
    assert!(cut.sent < 1_000_000, "{cut:?}");
    let s3 = settled(&rx, 3, cut.sent);
    assert_eq!((s3.received, s3.late, s3.ramp), (cut.sent, 0, 0), "{s3:?}");
    drop(rx);
}

/// Not a test: the tester's ceiling on this host. 60-byte IPv4 frames (64
/// with FCS) as fast as the program can send them for 2 s from one CPU,
/// counted by the receiving program; also the fixed cost of one
/// `Generator::run`. `cargo test -p netio --test xdp -- --ignored --nocapture`.
#[test]
#[ignore = "a measurement, prints the ceiling"]
fn ceiling_of_64_byte_frames_on_one_cpu() {
    if !privileged("CAP_BPF, CAP_NET_ADMIN") {
        return;
    }
    let (x, y) = pair("m");
    let rx = y.run_inside(|| TesterPort::open("xb", &PortConfig { max_tags: 16 }).unwrap());
    let mac_b = rx.mac().unwrap();
    let cfg = RxConfig {
        streams: vec![1],
        first_seq: 0,
        timeout_ns: u64::MAX,
        tag_every: 1 << 20,
    };
    rx.arm_rx(&cfg).unwrap();
    let (tx, secs, fixed_ms) = x.run_inside(move || {
        netio::cpu::pin_current_thread(0).unwrap();
        let port = TesterPort::open("xa", &PortConfig { max_tags: 16 }).unwrap();
        let mut gen = port
            .generator(&frame_v4(mac_b, port.mac().unwrap(), 1, true))
            .unwrap();
        // One frame of stream 2 (not armed, not counted): the fixed cost
        // of a call.
        let mut one_gen = port
            .generator(&frame_v4(mac_b, port.mac().unwrap(), 2, true))
            .unwrap();
        let mut fixed = Vec::new();
        for _ in 0..5 {
            let t0 = mono_ns();
            let one = vec![Segment {
                frames: 1,
                interval_ps: 1,
            }];
            one_gen
                .run(
                    &Schedule {
                        start_ns: t0,
                        segments: one,
                    },
                    t0 + 1_000_000_000,
                )
                .unwrap();
            fixed.push((mono_ns() - t0) as f64 / 1e6);
        }
        let start_ns = mono_ns() + 30_000_000;
        let sched = Schedule {
            start_ns,
            segments: vec![Segment {
                frames: u32::MAX,
                interval_ps: 1,
            }],
        };
        let tx = gen.run(&sched, start_ns + 2_000_000_000).unwrap();
        (tx, (mono_ns() - start_ns) as f64 / 1e9, fixed)
    });
    let s = settled(&rx, 1, tx.sent);
    println!(
        "sent {} received {} in {secs:.3} s: {:.2} Mpps sent, {:.2} Mpps received; \
         fixed cost of one run (ms): {fixed_ms:.1?}",
        tx.sent,
        s.received,
        tx.sent as f64 / secs / 1e6,
        s.received as f64 / secs / 1e6
    );
    assert!(s.received > 0);
}
