//! Garbage on the data and control paths is counted and ignored, and a well-formed flow started afterwards is measured completely.

use std::io::Write;
use std::net::{SocketAddr, UdpSocket};
use std::time::Duration;

use crate::support::{counters, probe, spawn_send, u, Control, Prng, Receiver};

/// Spacing between garbage datagrams, so a busy receiver's socket buffer never
/// overflows and every datagram is counted. Only pacing, never asserted.
fn pace() {
    std::thread::sleep(Duration::from_millis(1));
}

/// Sends datagrams alternately from 127.0.0.1 and ::1 to the dual-stack receiver.
struct Spray {
    v4: UdpSocket,
    v6: UdpSocket,
    to_v4: SocketAddr,
    to_v6: SocketAddr,
    sent: u64,
}

impl Spray {
    fn new(rx: &Receiver) -> Self {
        Self {
            v4: UdpSocket::bind("127.0.0.1:0").expect("bind 127.0.0.1"),
            v6: UdpSocket::bind("[::1]:0").expect("bind ::1"),
            to_v4: rx.addr_v4(),
            to_v6: rx.addr_v6(),
            sent: 0,
        }
    }

    fn send(&mut self, datagram: &[u8]) {
        let n = if self.sent % 2 == 0 {
            self.v4.send_to(datagram, self.to_v4)
        } else {
            self.v6.send_to(datagram, self.to_v6)
        }
        .expect("send a datagram");
        assert_eq!(n, datagram.len());
        self.sent += 1;
        pace();
    }
}

/// Open a control connection, write `bytes`, and expect the receiver to hang up
/// (after an optional error reply, returned).
fn hostile_connection(rx: &Receiver, bytes: &[u8], expect_reply: bool) -> Option<String> {
    let mut c = Control::connect(rx.addr_v4());
    c.stream.write_all(bytes).expect("write");
    let reply = expect_reply.then(|| {
        let m = c.recv();
        assert_eq!(m["type"], "error", "{m}");
        m["message"].as_str().expect("message").to_owned()
    });
    assert!(
        c.wait_closed_by_peer(),
        "the receiver should drop the connection"
    );
    reply
}

fn framed(body: &[u8]) -> Vec<u8> {
    let mut f = u32::try_from(body.len()).unwrap().to_be_bytes().to_vec();
    f.extend_from_slice(body);
    f
}

#[test]
fn garbage_is_counted_and_ignored_and_a_later_flow_is_measured_completely() {
    let rx = Receiver::start(&["--json", "--sessions", "1", "--handshake-timeout", "1s"]);
    let mut spray = Spray::new(&rx);
    let mut malformed = 0u64;

    // Random datagrams of 0..=1500 bytes from a seeded generator; a first byte of 0xD6
    // (the probe magic) is changed so none is a probe by chance.
    let mut rng = Prng::new(0xD0A1_5EED);
    for _ in 0..64 {
        let len = rng.below(1501) as usize;
        let mut d = rng.bytes(len);
        if let Some(b @ 0xD6) = d.first_mut() {
            *b = 0;
        }
        spray.send(&d);
        malformed += 1;
    }
    // Truncated probes: a valid 16-byte header cut to 8 bytes, and other cuts.
    let header = probe(7, 0, 0, 16);
    assert_eq!(&header[..2], &[0xD6, 0x10]);
    for cut in [8, 0, 1, 15] {
        spray.send(&header[..cut]);
        malformed += 1;
    }
    // Header errors on full-size probes.
    let mut wrong_magic = probe(7, 0, 0, 64);
    wrong_magic[0] = 0xD5;
    let mut wrong_version = probe(7, 0, 0, 64);
    wrong_version[1] = 0x20;
    let unknown_flags = probe(7, 0, 0x4, 64);
    // An echo is never accepted as a probe, and EXT needs 32 bytes.
    let echo = probe(7, 0, 0x1, 64);
    let short_ext = probe(7, 0, 0x2 | 0x1, 16);
    for d in [wrong_magic, wrong_version, unknown_flags, echo, short_ext] {
        spray.send(&d);
        malformed += 1;
    }
    // Well-formed probes of a flow nobody registered (ids are handed out from 1).
    let unknown = 5u64;
    for seq in 0..unknown {
        spray.send(&probe(0xBEEF, seq as u32, 0, 64));
    }

    // Control-path garbage; each connection is dropped and counted.
    hostile_connection(&rx, &[0xFF, 0xFF, 0xFF, 0xFF], false);
    hostile_connection(&rx, &framed(b"{not json"), false);
    let refused = hostile_connection(&rx, &framed(br#"{"type":"finish","flows":[]}"#), true);
    assert_eq!(refused.as_deref(), Some("expected hello or attach"));
    let refused = hostile_connection(
        &rx,
        &framed(br#"{"type":"attach","flow":4242,"token":1}"#),
        true,
    );
    assert_eq!(refused.as_deref(), Some("unknown flow or bad token"));
    let refused = hostile_connection(&rx, &framed(br#"{"type":"hello","version":99}"#), true);
    assert!(
        refused
            .as_deref()
            .is_some_and(|m| m.contains("protocol version 99")),
        "{refused:?}"
    );
    let hostile = 5;

    // A stalled connection, held open while a good flow runs: 300 packets at 150 pkt/s
    // take 2 s, twice the handshake timeout.
    let mut stall = Control::connect(rx.addr_v6());
    let mut good = spawn_send(
        "127.0.0.1",
        rx.port,
        &[
            "--udp", "--rate", "150pps", "--size", "64", "--count", "300", "--json",
        ],
    );
    assert!(
        stall.wait_closed_by_peer(),
        "the receiver should drop the stalled connection"
    );
    assert!(
        good.is_running(),
        "the stall should time out while the good flow is still running"
    );

    let out = good.finish();
    out.assert_success();
    let flow = &out.json()["flows"][0];
    assert_eq!(u(flow, "/sent/packets"), 300);
    assert_eq!(u(flow, "/received/packets"), 300);
    assert_eq!(u(flow, "/received/loss/lost"), 0);
    assert_eq!(u(flow, "/received/loss/duplicates"), 0);
    assert_eq!(u(flow, "/malformed_at_receiver"), 0);

    let recv = rx.finish();
    recv.finished.assert_success();
    assert_eq!(recv.flows.len(), 1, "only the good flow is reported");
    assert_eq!(u(&recv.flows[0], "/summary/packets"), 300);
    let c = &recv.counters;
    // Today a handshake timeout is also counted as a bad connection; whether it should
    // be is checked in `handshake::refused_handshakes_are_not_also_counted_as_bad_connections`.
    let bad = u(c, "/bad_connections");
    assert!(
        bad == hostile || bad == hostile + 1,
        "bad_connections: {bad}, expected {hostile} hostile connections (+1 if the stall also counts)"
    );
    let mut got = counters(c);
    got[4].1 = hostile; // bad_connections checked above
    assert_eq!(
        got,
        [
            ("datagrams", malformed + unknown + 300),
            ("malformed_datagrams", malformed),
            ("unknown_flow", unknown),
            ("wrong_source", 0),
            ("bad_connections", hostile),
            ("auth_failures", 0),
            ("handshake_timeouts", 1),
        ]
    );
}
