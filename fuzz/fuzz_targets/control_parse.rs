//! Arbitrary bytes as a control stream: the frame decoder and the message parser never
//! panic, never buffer past the limit, and every parsed message re-encodes and re-parses
//! to itself.
#![no_main]
use libfuzzer_sys::fuzz_target;
use wire::control::{self, MAX_MSG_LEN};
use wire::frame::FrameDecoder;

fuzz_target!(|data: &[u8]| {
    let mut decoder = FrameDecoder::new(MAX_MSG_LEN);
    // Feed in uneven chunks, as reads from a socket would arrive.
    for chunk in data.chunks(7) {
        decoder.handle_bytes(chunk);
        loop {
            match decoder.poll_frame() {
                Ok(Some(body)) => {
                    assert!(body.len() <= MAX_MSG_LEN);
                    if let Ok(msg) = control::parse(body) {
                        let framed = control::encode(&msg);
                        let again = control::parse(&framed[4..]).expect("re-parse");
                        assert_eq!(again, msg);
                    }
                }
                Ok(None) => break,
                Err(_) => return,
            }
        }
    }
});
