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
