//! Arbitrary bytes as RSVP messages (RFC 2205, with the IntServ objects of RFC 2210):
//! parsing never panics, and whatever parses emits and parses back to itself, with the
//! same bytes when emitted again.
//!
//! The bytes are parsed as they come and once more with the checksum field zeroed (no
//! checksum sent), so the fuzzer reaches the objects without having to find checksums.
#![no_main]
use libfuzzer_sys::fuzz_target;
use wire::rsvp::Message;

fn round_trip(data: &[u8]) {
    let Ok(m) = Message::parse(data) else {
        return;
    };
    let bytes = m.to_bytes();
    assert_eq!(bytes.len(), m.buffer_len());
    assert!(bytes.len() <= data.len(), "emit grew the message");
    let again = Message::parse(&bytes).expect("what parsed emits a message that parses");
    assert_eq!(again, m);
    assert_eq!(again.to_bytes(), bytes);
}

fuzz_target!(|data: &[u8]| {
    if let Err(e) = Message::parse(data) {
        let _ = e.error_code();
    }
    round_trip(data);
    if data.len() >= 4 {
        let mut unchecked = data.to_vec();
        unchecked[2..4].fill(0);
        round_trip(&unchecked);
    }
});
