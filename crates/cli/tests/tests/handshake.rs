//! `--handshake-timeout` bounds the whole handshake, and each refused connection is counted once, under its own reason.

use std::io::Write;
use std::time::Duration;

use serde_json::json;

use crate::support::{counters, send, u, Control, Receiver};

#[test]
fn a_connection_that_never_speaks_is_dropped_and_counted_as_a_handshake_timeout() {
    let rx = Receiver::start(&["--json", "--handshake-timeout", "1s"]);
    let mut stall = Control::connect(rx.addr_v4());
    assert!(stall.wait_closed_by_peer());
    let recv = rx.interrupt_and_finish();
    recv.finished.assert_success();
    assert_eq!(u(&recv.counters, "/handshake_timeouts"), 1);
}

/// KNOWN BUG (recv/conn.rs): only a stall before the *first* message counts as a
/// handshake timeout; a sender that says hello and then stalls before authenticating
/// is dropped as a plain bad connection. The option's help says it is the time "to
/// say who it is and authenticate".
#[test]
fn a_connection_that_stalls_after_hello_is_counted_as_a_handshake_timeout() {
    let rx = Receiver::start(&["--json", "--handshake-timeout", "1s"]);
    let mut c = Control::connect(rx.addr_v6());
    c.send(&json!({"type": "hello", "version": 1}));
    assert_eq!(c.recv()["type"], "challenge");
    // ... and no auth.
    assert!(c.wait_closed_by_peer());
    let recv = rx.interrupt_and_finish();
    recv.finished.assert_success();
    assert_eq!(
        u(&recv.counters, "/handshake_timeouts"),
        1,
        "{}",
        recv.counters
    );
}

/// KNOWN BUG (recv/conn.rs `handle_connection`): the handshake timeout is a per-read
/// idle timeout (`set_read_timeout`), not a deadline, so a peer dripping one byte at a
/// time holds a connection thread for as long as it likes (slowloris). Here a 32-byte
/// hello dripped over ~3.2 s (3× the 1 s timeout, 100 ms between bytes) is still
/// answered with a challenge. Dripping slower only makes the cut-off more certain.
#[test]
fn a_hello_dripped_byte_by_byte_is_cut_off_at_the_handshake_timeout() {
    let rx = Receiver::start(&["--json", "--handshake-timeout", "1s"]);
    let mut c = Control::connect(rx.addr_v4());
    let body = br#"{"type":"hello","version":1}"#;
    let mut hello = u32::try_from(body.len()).unwrap().to_be_bytes().to_vec();
    hello.extend_from_slice(body);
    assert_eq!(hello.len(), 32);
    let mut write_failed = false;
    for b in &hello {
        if c.stream.write_all(&[*b]).is_err() {
            write_failed = true;
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let closed = write_failed || c.wait_closed_by_peer();
    let recv = rx.interrupt_and_finish();
    assert!(
        closed,
        "the receiver answered a handshake that took 3× --handshake-timeout"
    );
    assert_eq!(u(&recv.counters, "/handshake_timeouts"), 1);
}

/// LIKELY BUG (recv/conn.rs `accept_loop`): every connection that ends in an error is
/// counted in `bad_connections`, so a failed authentication or a handshake timeout is
/// counted twice (`2 bad connections, 1 failed authentication, 1 handshake timeout` for
/// two refused connections). The counters are printed as a breakdown of what was
/// dropped, so each refused connection should be counted once, under its own reason.
#[test]
fn refused_handshakes_are_not_also_counted_as_bad_connections() {
    let rx = Receiver::start(&["--json", "--key", "k", "--handshake-timeout", "1s"]);
    let wrong = send(
        "127.0.0.1",
        rx.port,
        &["--key", "not-k", "--count", "1", "--json"],
    );
    assert_eq!(wrong.code(), Some(1), "{}", wrong.stderr);
    let mut stall = Control::connect(rx.addr_v4());
    assert!(stall.wait_closed_by_peer());
    let recv = rx.interrupt_and_finish();
    recv.finished.assert_success();
    assert_eq!(
        counters(&recv.counters),
        [
            ("datagrams", 0),
            ("malformed_datagrams", 0),
            ("unknown_flow", 0),
            ("wrong_source", 0),
            ("bad_connections", 0),
            ("auth_failures", 1),
            ("handshake_timeouts", 1),
        ]
    );
}

/// A TCP listener on 127.0.0.1 that is not dualperf: to each connection it answers
/// `reply` once the client has said something (nothing, and closes at once, when `reply`
/// is `None`), then waits for the client to close. Dropping it stops its thread.
struct Stranger {
    port: u16,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Stranger {
    fn start(reply: Option<&[u8]>) -> Self {
        use std::io::Read;
        use std::sync::atomic::Ordering;
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let flag = stop.clone();
        let reply = reply.map(<[u8]>::to_vec);
        let thread = std::thread::spawn(move || {
            for conn in listener.incoming() {
                if flag.load(Ordering::SeqCst) {
                    return;
                }
                let (Ok(mut conn), Some(reply)) = (conn, reply.as_deref()) else {
                    continue;
                };
                conn.set_read_timeout(Some(crate::support::HANG_GUARD))
                    .unwrap();
                let mut buf = [0u8; 4096];
                if matches!(conn.read(&mut buf), Ok(n) if n > 0) {
                    let _ = conn.write_all(reply);
                    let _ = conn.shutdown(std::net::Shutdown::Write);
                    // Read to the client's close, so ours sends no reset.
                    while matches!(conn.read(&mut buf), Ok(n) if n > 0) {}
                }
            }
        });
        Self {
            port,
            stop,
            thread: Some(thread),
        }
    }
}

impl Drop for Stranger {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::SeqCst);
        let _ = std::net::TcpStream::connect(("127.0.0.1", self.port));
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// `dualperf ARGS`, which must fail (exit 1) saying `want`, and never a frame length.
fn fails_saying(args: &[String], want: &str) {
    let out = crate::support::run(args);
    assert_eq!(out.code(), Some(1), "{args:?}: {}", out.stderr);
    assert!(
        out.stderr.contains(want) && !out.stderr.contains("exceeds"),
        "{args:?}: wanted {want:?} in\n{}",
        out.stderr
    );
}

fn argv(args: &[&str]) -> Vec<String> {
    args.iter().map(|a| (*a).to_owned()).collect()
}

#[test]
fn a_send_to_an_http_server_says_it_looks_like_http_not_a_frame_length() {
    let http = Stranger::start(Some(b"HTTP/1.0 400 Bad Request\r\n\r\n"));
    let port = http.port.to_string();
    let question =
        "answered with what looks like HTTP: is `dualperf recv` or `agent` listening there?";
    for proto in ["--udp", "--tcp"] {
        let out = send("127.0.0.1", http.port, &[proto]);
        assert_eq!(out.code(), Some(1), "{proto}: {}", out.stderr);
        assert!(
            out.stderr
                .contains(&format!("the receiver at 127.0.0.1:{port} {question}"))
                && out
                    .stderr
                    .contains(r#"It sent "HTTP/1.0 400 Bad Request\r\n\r\n""#)
                && !out.stderr.contains("exceeds"),
            "{proto}: {}",
            out.stderr
        );
    }
    // Every client of the control channel: the agent's askers and the clock's.
    let agent = "answered with what looks like HTTP: is `dualperf agent` listening there?";
    fails_saying(
        &argv(&["send", "127.0.0.1", "-p", &port, "--reverse", "-t", "1s"]),
        agent,
    );
    fails_saying(
        &argv(&["send", "127.0.0.1", "-p", &port, "--bidir", "-t", "1s"]),
        agent,
    );
    let from = format!("127.0.0.1:{port}");
    fails_saying(
        &argv(&["send", "--from", &from, "127.0.0.1", "-t", "1s"]),
        agent,
    );
    fails_saying(
        &argv(&["clock", "--peer", &from]),
        &format!("the peer at {from} {question}"),
    );
}

#[test]
fn a_peer_that_closes_at_once_or_sends_junk_is_said_not_to_be_dualperf() {
    let closer = Stranger::start(None);
    let out = send("127.0.0.1", closer.port, &[]);
    assert_eq!(out.code(), Some(1), "{}", out.stderr);
    assert!(
        out.stderr.contains(&format!(
            "the receiver at 127.0.0.1:{} closed the connection without answering: is `dualperf recv` or `agent` listening there?",
            closer.port
        )),
        "{}",
        out.stderr
    );
    // A length within the limit and a body that is not JSON, then the close; and a
    // length far beyond it.
    for junk in [
        &b"\x00\x00\x10\x00\xde\xad\xbe\xef"[..],
        &b"\xde\xad\xbe\xef\x00"[..],
    ] {
        let stranger = Stranger::start(Some(junk));
        let out = send("127.0.0.1", stranger.port, &["--tcp"]);
        assert_eq!(out.code(), Some(1), "{}", out.stderr);
        assert!(
            out.stderr.contains("answered with bytes that are not dualperf's control protocol: is `dualperf recv` or `agent` listening there? It sent \"")
                && out.stderr.contains(r"\xde\xad\xbe\xef")
                && !out.stderr.contains("exceeds"),
            "{}",
            out.stderr
        );
    }
}
