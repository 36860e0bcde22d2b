//! Arbitrary bytes as a framed TCP data stream, fed in pieces whose sizes come from the
//! input: the scanner never panics and sees exactly the frames the full decoder sees
//! (same lengths, same heads), and both refuse the same oversized length.
#![no_main]
use libfuzzer_sys::fuzz_target;
use wire::frame::{FrameDecoder, FrameScanner};

const MAX: usize = 1024;
const KEEP: usize = 16;

fuzz_target!(|data: &[u8]| {
    let Some((&step, stream)) = data.split_first() else {
        return;
    };
    let step = usize::from(step).max(1);
    let mut decoder = FrameDecoder::new(MAX);
    let mut scanner = FrameScanner::new(MAX, KEEP);
    let (mut full, mut scanned) = (Vec::new(), Vec::new());
    let (mut decoder_err, mut scanner_err) = (false, false);
    for chunk in stream.chunks(step) {
        if !decoder_err {
            decoder.handle_bytes(chunk);
            loop {
                match decoder.poll_frame() {
                    Ok(Some(body)) => full.push((body.len(), body[..body.len().min(KEEP)].to_vec())),
                    Ok(None) => break,
                    Err(_) => {
                        decoder_err = true;
                        break;
                    }
                }
            }
        }
        let mut rest = chunk;
        while !scanner_err && !rest.is_empty() {
            match scanner.handle_bytes(rest) {
                Ok(used) => rest = &rest[used..],
                Err(_) => scanner_err = true,
            }
            if let Some(f) = scanner.poll_frame() {
                scanned.push((f.len, f.head.to_vec()));
            }
        }
    }
    assert_eq!(full, scanned);
    assert_eq!(decoder_err, scanner_err);
});
