//! Byte offsets in a text file → 1-based line numbers, for the TOML parsers (plans,
//! topologies, hosts files, QoS files) that name the line of an error: `toml` reports
//! where a value or table sits as a byte span of the text it parsed.

use std::ops::Range;

/// The 1-based line of byte `offset` in `text` (an offset past the end is the last line).
pub fn line_at(text: &str, offset: usize) -> usize {
    let end = floor_boundary(text, offset.min(text.len()));
    text.as_bytes()[..end]
        .iter()
        .filter(|&&b| b == b'\n')
        .count()
        + 1
}

/// The line of `key = …` inside a table's span (the table's first line if no line of the
/// span starts with `key =`).
pub fn key_line(text: &str, span: Range<usize>, key: &str) -> usize {
    let start = floor_boundary(text, span.start.min(text.len()));
    let end = floor_boundary(text, span.end.min(text.len())).max(start);
    let mut offset = start;
    for line in text[start..end].split_inclusive('\n') {
        let t = line.trim_start();
        if t.strip_prefix(key)
            .is_some_and(|rest| rest.trim_start().starts_with('='))
        {
            return line_at(text, offset);
        }
        offset += line.len();
    }
    line_at(text, start)
}

/// The largest char boundary at or before `i` (spans from `toml` always are; this keeps a
/// wrong one from panicking).
fn floor_boundary(text: &str, mut i: usize) -> usize {
    while !text.is_char_boundary(i) {
        i -= 1;
    }
    i
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: &str = "a = 1\n[t]\n  b = 2\nbb = 3\n";

    #[test]
    fn line_at_counts_newlines_before_the_offset() {
        assert_eq!(line_at(TEXT, 0), 1);
        assert_eq!(line_at(TEXT, 5), 1);
        assert_eq!(line_at(TEXT, 6), 2);
        assert_eq!(line_at(TEXT, 12), 3);
        assert_eq!(line_at(TEXT, 1000), 5);
        assert_eq!(line_at("é\nx", 1), 1);
    }

    #[test]
    fn key_line_finds_the_key_inside_the_span_only() {
        let t = TEXT.find("[t]").unwrap();
        assert_eq!(key_line(TEXT, t..TEXT.len(), "b"), 3);
        assert_eq!(key_line(TEXT, t..TEXT.len(), "bb"), 4);
        assert_eq!(key_line(TEXT, t..TEXT.len(), "a"), 2);
        assert_eq!(key_line(TEXT, 0..TEXT.len(), "a"), 1);
        assert_eq!(key_line(TEXT, t..t + 4, "b"), 2);
    }
}
