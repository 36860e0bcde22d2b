//! Arbitrary bytes as a punch: parsing never panics, and whatever parses re-emits to the
//! same bytes.
#![no_main]
use libfuzzer_sys::fuzz_target;
use wire::punch::{Packet, Repr};

fuzz_target!(|data: &[u8]| {
    let Ok(packet) = Packet::new_checked(data) else {
        return;
    };
    let Ok(repr) = Repr::parse(&packet) else {
        return;
    };
    assert_eq!(&repr.to_bytes()[..], data);
});
