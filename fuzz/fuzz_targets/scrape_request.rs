//! Arbitrary bytes as a scraper's HTTP request head: parsing never panics, and what
//! parses names a path that starts with `/` and a method of letters.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(req) = wire::scrape::parse(data) {
        assert!(req.path.starts_with('/'));
        assert!(req.method.bytes().all(|b| b.is_ascii_alphabetic()));
    }
});
