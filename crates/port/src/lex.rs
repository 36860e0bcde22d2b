//! A tokenizer just good enough to tell code from comments and string literals.
//!
//! The scanner's rules look at identifiers, numbers and a few punctuation marks of
//! *code*; a mention of `gethostbyname` in a comment or an error message is not a use
//! of it. So each language's comment and literal syntax is followed exactly — C and
//! C++ (line continuations, `R"delim(…)delim"` raw strings, encoding prefixes, digit
//! separators), Python (`#`, prefixes, triple quotes), Go (backquoted raw strings) and
//! Java (text blocks) — and everything else is cut coarsely into identifiers, numbers
//! and single punctuation characters. Nothing here is a parser: preprocessor
//! conditionals are not evaluated and templates are not understood.
//!
//! Never panics, on any input: unterminated comments and literals end at the end of the
//! file (strings that the language does not let span lines end at the line's end).

use serde::Serialize;

/// A source language, told by the file's extension.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, schemars::JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum Lang {
    C,
    Cpp,
    Python,
    Go,
    Java,
}

impl Lang {
    pub const ALL: [Lang; 5] = [Lang::C, Lang::Cpp, Lang::Python, Lang::Go, Lang::Java];

    /// The language of a file name, by extension (`.h` counts as C; C++ headers such as
    /// `.hpp` as C++).
    pub fn from_path(path: &std::path::Path) -> Option<Lang> {
        let ext = path.extension()?.to_str()?;
        Some(match ext {
            "c" | "h" => Lang::C,
            "cc" | "cpp" | "cxx" | "c++" | "C" | "hh" | "hpp" | "hxx" | "h++" | "H" | "ipp"
            | "inl" | "tcc" => Lang::Cpp,
            "py" | "pyw" | "pyi" => Lang::Python,
            "go" => Lang::Go,
            "java" => Lang::Java,
            _ => return None,
        })
    }

    /// The name used on the command line and in reports.
    pub fn name(self) -> &'static str {
        match self {
            Lang::C => "c",
            Lang::Cpp => "cpp",
            Lang::Python => "python",
            Lang::Go => "go",
            Lang::Java => "java",
        }
    }

    pub fn from_name(name: &str) -> Option<Lang> {
        Lang::ALL
            .into_iter()
            .find(|l| l.name() == name || (*l == Lang::Cpp && matches!(name, "c++" | "cxx")))
    }

    fn c_family(self) -> bool {
        matches!(self, Lang::C | Lang::Cpp)
    }
}

/// What a token is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Ident,
    Number,
    /// A string literal; the token's text is what lies between its quotes, unescaped
    /// characters and escapes alike.
    Str,
    /// A character literal (C, C++, Go runes, Java), text between the quotes.
    Char,
    /// One punctuation character.
    Punct,
}

/// A token of code: its kind, its text, and the byte offset where it starts (for
/// a string, the offset of its opening quote or prefix).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Token<'a> {
    pub kind: Kind,
    pub text: &'a str,
    pub offset: usize,
    /// The byte offset just past the token (past the closing quote of a literal).
    pub end: usize,
}

impl Token<'_> {
    pub fn is_punct(&self, c: char) -> bool {
        self.kind == Kind::Punct && self.text.len() == c.len_utf8() && self.text.starts_with(c)
    }

    pub fn is_ident(&self, name: &str) -> bool {
        self.kind == Kind::Ident && self.text == name
    }
}

/// Cuts `src` into tokens of code, dropping whitespace and comments.
pub fn tokenize(src: &str, lang: Lang) -> Vec<Token<'_>> {
    let mut lx = Lexer {
        src,
        b: src.as_bytes(),
        i: 0,
        lang,
        out: Vec::new(),
    };
    lx.run();
    lx.out
}

struct Lexer<'a> {
    src: &'a str,
    b: &'a [u8],
    i: usize,
    lang: Lang,
    out: Vec<Token<'a>>,
}

impl<'a> Lexer<'a> {
    fn peek(&self, k: usize) -> u8 {
        self.b.get(self.i + k).copied().unwrap_or(0)
    }

    fn push(&mut self, kind: Kind, start: usize, text_start: usize, text_end: usize) {
        let text = self.src.get(text_start..text_end).unwrap_or("");
        self.out.push(Token {
            kind,
            text,
            offset: start,
            end: self.i,
        });
    }

    fn run(&mut self) {
        while self.i < self.b.len() {
            let c = self.b[self.i];
            match c {
                b' ' | b'\t' | b'\r' | b'\n' | 0x0b | 0x0c => self.i += 1,
                b'\\' if self.lang.c_family() || self.lang == Lang::Python => self.i += 1,
                b'/' if self.peek(1) == b'/' && self.lang != Lang::Python => self.line_comment(),
                b'/' if self.peek(1) == b'*' && self.lang != Lang::Python => self.block_comment(),
                b'#' if self.lang == Lang::Python => self.line_comment(),
                b'"' | b'\'' | b'`' => {
                    if !self.string(self.i, self.i) {
                        self.punct();
                    }
                }
                b'0'..=b'9' => self.number(),
                b'.' if self.peek(1).is_ascii_digit() => self.number(),
                _ if c == b'_' || c == b'$' || c.is_ascii_alphabetic() => self.ident_or_prefixed(),
                _ if c >= 0x80 => self.non_ascii(),
                _ => self.punct(),
            }
        }
    }

    fn punct(&mut self) {
        let start = self.i;
        self.i += 1;
        self.push(Kind::Punct, start, start, self.i);
    }

    /// Non-ASCII characters outside literals: part of an identifier if letters (Java,
    /// Go and Python allow them), skipped otherwise; never split inside a character.
    fn non_ascii(&mut self) {
        let start = self.i;
        let ch = self.src.get(start..).and_then(|s| s.chars().next());
        let len = ch.map_or(1, char::len_utf8);
        if ch.is_some_and(char::is_alphabetic) {
            self.ident_or_prefixed();
        } else {
            self.i = (start + len).min(self.b.len());
        }
    }

    fn line_comment(&mut self) {
        while self.i < self.b.len() {
            match self.b[self.i] {
                // C and C++ continue a `//` comment over a backslash-newline.
                b'\\' if self.lang.c_family() && self.peek(1) == b'\n' => self.i += 2,
                b'\\' if self.lang.c_family() && self.peek(1) == b'\r' && self.peek(2) == b'\n' => {
                    self.i += 3
                }
                b'\n' => return,
                _ => self.i += 1,
            }
        }
    }

    fn block_comment(&mut self) {
        self.i += 2;
        while self.i < self.b.len() {
            if self.b[self.i] == b'*' && self.peek(1) == b'/' {
                self.i += 2;
                return;
            }
            self.i += 1;
        }
    }

    fn number(&mut self) {
        let start = self.i;
        while self.i < self.b.len() {
            let c = self.b[self.i];
            let prev = if self.i > start {
                self.b[self.i - 1]
            } else {
                0
            };
            let ok = c.is_ascii_alphanumeric()
                || c == b'_'
                || c == b'.'
                || ((c == b'+' || c == b'-') && matches!(prev, b'e' | b'E' | b'p' | b'P'))
                // C++14 digit separators: 1'000'000.
                || (c == b'\'' && self.lang == Lang::Cpp && self.peek(1).is_ascii_alphanumeric());
            if !ok {
                break;
            }
            self.i += 1;
        }
        self.push(Kind::Number, start, start, self.i);
    }

    fn ident_or_prefixed(&mut self) {
        let start = self.i;
        while self.i < self.b.len() {
            let c = self.b[self.i];
            if c == b'_' || c == b'$' || c.is_ascii_alphanumeric() {
                self.i += 1;
            } else if c >= 0x80 {
                let ch = self.src.get(self.i..).and_then(|s| s.chars().next());
                match ch {
                    Some(ch) if ch.is_alphanumeric() => self.i += ch.len_utf8(),
                    _ => break,
                }
            } else {
                break;
            }
        }
        let word = self.src.get(start..self.i).unwrap_or("");
        // A literal's prefix: L"…", u8"…", R"(…)", b'…', rb"""…""", f"…".
        let next = self.peek(0);
        if (next == b'"' || next == b'\'') && self.is_literal_prefix(word) {
            let at = self.i;
            if self.string(start, at) {
                return;
            }
        }
        self.push(Kind::Ident, start, start, self.i);
    }

    fn is_literal_prefix(&self, w: &str) -> bool {
        match self.lang {
            Lang::C | Lang::Cpp => {
                matches!(w, "L" | "u" | "U" | "u8" | "R" | "LR" | "uR" | "UR" | "u8R")
            }
            Lang::Python => w.len() <= 2 && w.chars().all(|c| "rRbBuUfF".contains(c)),
            Lang::Go | Lang::Java => false,
        }
    }

    /// Lexes a literal whose prefix starts at `start` and whose quote is at `q`.
    /// Returns false (consuming nothing) if the quote does not start a literal here.
    fn string(&mut self, start: usize, q: usize) -> bool {
        let quote = self.b[q];
        let prefix = self.src.get(start..q).unwrap_or("");
        self.i = q;
        match (self.lang, quote) {
            (Lang::C | Lang::Cpp, b'"') if prefix.ends_with('R') => self.cpp_raw(start),
            (Lang::C | Lang::Cpp | Lang::Java, b'\'') | (Lang::Go, b'\'') => {
                self.quoted(start, b'\'', false, Kind::Char)
            }
            (Lang::Java, b'"') if self.peek(1) == b'"' && self.peek(2) == b'"' => {
                self.triple(start, b'"')
            }
            (_, b'"') => self.quoted(start, b'"', self.lang == Lang::Python, Kind::Str),
            (Lang::Python, b'\'') => self.quoted(start, b'\'', true, Kind::Str),
            (Lang::Go, b'`') => {
                // Raw string: no escapes, may span lines.
                let open = self.i + 1;
                let close = self.b[open..].iter().position(|&c| c == b'`');
                let text_end = close.map_or(self.b.len(), |p| open + p);
                self.i = close.map_or(self.b.len(), |p| open + p + 1);
                self.push(Kind::Str, start, open, text_end);
            }
            _ => {
                self.i = start;
                return false;
            }
        }
        true
    }

    /// `"…"` or `'…'` with backslash escapes; Python's triple quotes are handed on.
    fn quoted(&mut self, start: usize, quote: u8, python: bool, kind: Kind) {
        if python && self.peek(1) == quote && self.peek(2) == quote {
            self.triple(start, quote);
            return;
        }
        let open = self.i + 1;
        self.i = open;
        while self.i < self.b.len() {
            match self.b[self.i] {
                b'\\' => {
                    // An escaped newline continues a C string; anything escaped is skipped.
                    self.i += if self.peek(1) == b'\r' && self.peek(2) == b'\n' {
                        3
                    } else {
                        2
                    };
                }
                c if c == quote => {
                    let text_end = self.i;
                    self.i += 1;
                    self.push(kind, start, open, text_end);
                    return;
                }
                b'\n' => break,
                _ => self.i += 1,
            }
        }
        // Unterminated: the literal ends at the line's end (or the file's).
        self.i = self.i.min(self.b.len());
        let text_end = self.i;
        self.push(kind, start, open, text_end);
    }

    /// Python's `'''…'''`/`"""…"""` and Java's text blocks: span lines, escapes honoured.
    fn triple(&mut self, start: usize, quote: u8) {
        let open = self.i + 3;
        self.i = open;
        while self.i < self.b.len() {
            match self.b[self.i] {
                b'\\' => self.i += 2,
                c if c == quote && self.peek(1) == quote && self.peek(2) == quote => {
                    let text_end = self.i;
                    self.i += 3;
                    self.push(Kind::Str, start, open, text_end);
                    return;
                }
                _ => self.i += 1,
            }
        }
        self.i = self.b.len();
        self.push(Kind::Str, start, open, self.b.len());
    }

    /// C++11 raw string `R"delim( … )delim"`: no escapes, may span lines.
    fn cpp_raw(&mut self, start: usize) {
        let q = self.i;
        let rest = &self.b[q + 1..];
        let Some(paren) = rest.iter().take(17).position(|&c| c == b'(') else {
            // Not a valid raw string opening: lex as an ordinary string.
            self.quoted(start, b'"', false, Kind::Str);
            return;
        };
        let delim = &rest[..paren];
        let open = q + 1 + paren + 1;
        let mut j = open;
        while j < self.b.len() {
            if self.b[j] == b')'
                && self.b[j + 1..].starts_with(delim)
                && self.b.get(j + 1 + delim.len()) == Some(&b'"')
            {
                self.i = j + 1 + delim.len() + 1;
                self.push(Kind::Str, start, open, j);
                return;
            }
            j += 1;
        }
        self.i = self.b.len();
        self.push(Kind::Str, start, open, self.b.len());
    }
}

/// Line starts of a text, to turn byte offsets into 1-based lines and columns.
#[derive(Debug)]
pub struct LineIndex {
    starts: Vec<usize>,
}

impl LineIndex {
    pub fn new(src: &str) -> LineIndex {
        let mut starts = vec![0];
        starts.extend(
            src.bytes()
                .enumerate()
                .filter(|&(_, c)| c == b'\n')
                .map(|(i, _)| i + 1),
        );
        LineIndex { starts }
    }

    /// The 1-based line of a byte offset.
    pub fn line(&self, offset: usize) -> usize {
        self.starts.partition_point(|&s| s <= offset).max(1)
    }

    /// 1-based line and column; the column counts Unicode code points (SARIF's
    /// `unicodeCodePoints` column kind), so a tab is one column.
    pub fn line_col(&self, src: &str, offset: usize) -> (usize, usize) {
        let line = self.line(offset);
        let start = self.starts[line - 1];
        let col = src
            .get(start..offset.min(src.len()))
            .map_or(offset - start, |s| s.chars().count());
        (line, col + 1)
    }

    /// The text of a 1-based line, without its line ending.
    pub fn line_text<'s>(&self, src: &'s str, line: usize) -> &'s str {
        let Some(&start) = self.starts.get(line.wrapping_sub(1)) else {
            return "";
        };
        let end = self.starts.get(line).map_or(src.len(), |&e| e);
        src.get(start..end)
            .unwrap_or("")
            .trim_end_matches(['\n', '\r'])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(src: &str, lang: Lang) -> Vec<(Kind, &str)> {
        tokenize(src, lang)
            .into_iter()
            .map(|t| (t.kind, t.text))
            .collect()
    }

    fn idents(src: &str, lang: Lang) -> Vec<&str> {
        tokenize(src, lang)
            .into_iter()
            .filter(|t| t.kind == Kind::Ident)
            .map(|t| t.text)
            .collect()
    }

    #[test]
    fn c_comments_and_strings_hide_their_words() {
        let src = "int a; /* gethostbyname */ // inet_addr \\\n still_comment\nx = \"inet_ntoa \\\" q\"; y = 'a';";
        assert_eq!(idents(src, Lang::C), ["int", "a", "x", "y"]);
        let strs: Vec<_> = tokenize(src, Lang::C)
            .into_iter()
            .filter(|t| t.kind == Kind::Str)
            .map(|t| t.text)
            .collect();
        assert_eq!(strs, ["inet_ntoa \\\" q"]);
    }

    #[test]
    fn cpp_raw_strings_prefixes_and_digit_separators() {
        let src = r#"auto s = R"x(gethostbyname )" inet_addr)x"; auto w = L"AF_INET"; int n = 1'000'000; char c = u8'a';"#;
        assert_eq!(
            idents(src, Lang::Cpp),
            ["auto", "s", "auto", "w", "int", "n", "char", "c"]
        );
        let k = kinds(src, Lang::Cpp);
        assert!(k.contains(&(Kind::Str, "gethostbyname )\" inet_addr")));
        assert!(k.contains(&(Kind::Number, "1'000'000")));
    }

    #[test]
    fn python_comments_prefixes_and_triple_quotes() {
        let src = "# socket.gethostbyname\ns = '''inet_aton\n''' + rb\"AF_INET\" + f'{host}:{port}'\nsocket.AF_INET6";
        assert_eq!(idents(src, Lang::Python), ["s", "socket", "AF_INET6"]);
        let k = kinds(src, Lang::Python);
        assert!(k.contains(&(Kind::Str, "inet_aton\n")));
        assert!(k.contains(&(Kind::Str, "{host}:{port}")));
    }

    #[test]
    fn go_raw_strings_and_java_text_blocks() {
        assert_eq!(
            idents("x := `tcp4\nnet.ParseIP` // To4\ny", Lang::Go),
            ["x", "y"]
        );
        assert_eq!(
            idents(
                "String s = \"\"\"\n Inet4Address \"\"\"; char c = ':';",
                Lang::Java
            ),
            ["String", "s", "char", "c"]
        );
    }

    #[test]
    fn unterminated_things_end_without_panicking() {
        for lang in Lang::ALL {
            for src in [
                "\"abc", "/* abc", "R\"x(abc", "'''abc", "`abc", "'", "\\", "é\"", "0x", "\"\\",
            ] {
                let _ = tokenize(src, lang);
            }
        }
        // A C string does not run past its line.
        assert_eq!(idents("\"abc\nint x;", Lang::C), ["int", "x"]);
    }

    #[test]
    fn line_index_counts_code_points() {
        let src = "ab\n\tçd x\n";
        let ix = LineIndex::new(src);
        let x = src.find('x').unwrap();
        assert_eq!(ix.line_col(src, x), (2, 5));
        assert_eq!(ix.line_text(src, 2), "\tçd x");
        assert_eq!(ix.line_col(src, 0), (1, 1));
    }
}
