//! Arbitrary bytes as a probe: parsing never panics, and whatever parses re-emits to the
//! same header bytes.
#![no_main]
use libfuzzer_sys::fuzz_target;
use wire::probe::{Packet, Repr};

fuzz_target!(|data: &[u8]| {
    let Ok(packet) = Packet::new_checked(data) else {
        return;
    };
    let Ok(repr) = Repr::parse(&packet) else {
        return;
    };
    let mut out = vec![0u8; repr.buffer_len()];
    repr.emit(&mut out).expect("buffer_len is enough");
    assert_eq!(&out[..], &data[..repr.buffer_len()]);
});
