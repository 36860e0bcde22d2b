//! Arbitrary bytes as a per-packet log: the reader never panics, whether driven entry by
//! entry from a slice or through the streaming reader.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = meter::log::read_log(data);
    let mut rest = data;
    while let Ok((_, used)) = meter::log::parse_entry(rest) {
        if used == 0 || used > rest.len() {
            break;
        }
        rest = &rest[used..];
    }
});
