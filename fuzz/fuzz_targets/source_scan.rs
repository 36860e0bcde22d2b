//! Arbitrary bytes as a source file in every language portcheck reads: the tokenizer
//! and every rule run without panicking, tokens are in order and inside the text, and
//! every finding has a sane position on a line that exists.
#![no_main]
use libfuzzer_sys::fuzz_target;
use port::lex::{tokenize, Lang};
use port::scan::scan_source;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let lines = text.split('\n').count();
    for lang in Lang::ALL {
        let mut last = 0;
        for t in tokenize(&text, lang) {
            assert!(t.offset >= last && t.offset < t.end.max(t.offset + 1) && t.end <= text.len());
            last = t.offset;
        }
        for f in scan_source(&text, lang, None) {
            assert!(f.line >= 1 && f.line <= lines, "{f:?}");
            assert!(f.column >= 1 && f.end_column > f.column, "{f:?}");
        }
        let _ = port::scan::evidence(&text, lang);
    }
});
