//! A light structural pass over a file's tokens: preprocessor directives, type and
//! constant aliases, scopes (functions and other top-level blocks) and family
//! dispatches (`if`/`else` chains and `switch` statements).
//!
//! Nothing here is a parser. It is what scoped suppression and alias following need:
//! - **Directives** (C, C++): a `#` first on its line starts one, up to the end of the
//!   line (backslash-newlines continue it). In `#define NAME …` the name is a
//!   definition, not a use, and the body is code (it is flagged where it is written);
//!   every other directive (`#if`, `#ifdef`, `#include`, `#error`, `#pragma`, …) holds no
//!   uses at all.
//! - **Aliases**: object-like `#define NAME [struct] X` and `typedef [struct] X NAME;`
//!   where X is something the rules look for (`IA` → `in_addr`, `SAI` → `sockaddr_in`,
//!   `SA` → `sockaddr`), and `#define NAME sizeof(struct sockaddr)` (or `sizeof(SA)`).
//!   Uses of NAME are then matched as uses of X.
//! - **Conditional blocks** are all scanned; for brace matching, each `#else`/`#elif`
//!   branch starts from the nesting the `#if` had, and after `#endif` the nesting is the
//!   first branch's (so `#ifdef A` `f(int a) {` `#else` `f(void) {` `#endif` opens one
//!   block, not two).
//! - **Units**: a top-level brace block together with the tokens before it since the
//!   last top-level `;`, `}` or directive (a function with its parameters, a struct or
//!   union with its tag), and each top-level directive. `namespace`, `extern "C"` and
//!   C++/Java `class` bodies are see-through: what is inside them is top level. Python
//!   has no braces: each statement that starts a line at indentation 0 starts a unit
//!   (so a `def` or `class` is one, with its body). Tokens in no unit are file level.
//! - **Dispatches**: `switch (…) {…}` and whole `if (…) … else if (…) … else …` chains
//!   (braced or not), each a token range; each token knows the innermost one around it.

use std::collections::{HashMap, HashSet};

use crate::lex::{Kind, Lang, Token};

/// "No such index".
pub(super) const NONE: u32 = u32::MAX;

/// The alias target of `#define NAME sizeof(struct sockaddr)`.
pub(super) const SOCKADDR_SIZE: &str = "sizeof(struct sockaddr)";

/// What a token is, as far as the preprocessor goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Dir {
    /// Ordinary code.
    Code,
    /// The body of a `#define`: code, written where it is defined.
    DefineBody,
    /// The name a `#define` or `typedef` defines: not a use.
    Defined,
    /// Any other directive (`#if`, `#ifdef`, `#include`, `#error`, …): holds no use.
    Other,
}

/// A `switch` statement or an `if`/`else` chain, as a token range.
#[derive(Clone, Copy, Debug)]
pub(super) struct Dispatch {
    pub start: usize,
    pub end: usize,
    pub parent: u32,
    pub switch: bool,
}

/// What the structural pass found in one file.
pub(super) struct Structure<'a> {
    /// Per token.
    pub dir: Vec<Dir>,
    /// Per token: its unit, or [`NONE`] at file level.
    pub unit: Vec<u32>,
    /// Token ranges `[start, end)` of the units.
    pub units: Vec<(usize, usize)>,
    /// Per token: the innermost dispatch around it, or [`NONE`].
    pub dispatch: Vec<u32>,
    pub dispatches: Vec<Dispatch>,
    /// Per token: the index of the matching `)` or `}` for a `(` or `{` of code.
    pub close: Vec<u32>,
    /// Alias name → what it stands for (an identifier, or [`SOCKADDR_SIZE`]).
    pub aliases: HashMap<&'a str, &'a str>,
    /// Per token: in the branch a build without IPv6 compiles (`#else` of `#ifdef
    /// HAVE_IPV6`, the body of `#ifndef INET6`), where the IPv6 build has the other side.
    pub without_ipv6: Vec<bool>,
}

impl<'a> Structure<'a> {
    /// The unit of token `i`, as a range, if it is in one.
    pub fn unit_range(&self, i: usize) -> Option<(usize, usize)> {
        let u = *self.unit.get(i)?;
        (u != NONE).then(|| self.units[u as usize])
    }

    /// What an identifier stands for: itself, or what the alias means.
    pub fn resolve(&self, text: &'a str) -> &'a str {
        if self.aliases.is_empty() {
            return text;
        }
        self.aliases.get(text).copied().unwrap_or(text)
    }

    /// Is token `i` a use (code, or a `#define` body)?
    pub fn is_use(&self, i: usize) -> bool {
        matches!(self.dir.get(i), Some(Dir::Code | Dir::DefineBody))
    }

    /// Is token `i` code (not part of a directive)?
    pub fn is_code(&self, i: usize) -> bool {
        self.dir.get(i) == Some(&Dir::Code)
    }

    /// The matching close of the bracket at `i`, if it has one.
    pub fn close_of(&self, i: usize) -> Option<usize> {
        self.close
            .get(i)
            .filter(|&&c| c != NONE)
            .map(|&c| c as usize)
    }
}

/// Runs the pass. `aliasable` says which identifiers an alias may stand for.
pub(super) fn analyse<'a>(
    src: &'a str,
    toks: &[Token<'a>],
    lang: Lang,
    aliasable: &dyn Fn(&str) -> bool,
) -> Structure<'a> {
    let n = toks.len();
    let mut st = Structure {
        dir: vec![Dir::Code; n],
        unit: vec![NONE; n],
        units: Vec::new(),
        dispatch: vec![NONE; n],
        dispatches: Vec::new(),
        close: vec![NONE; n],
        aliases: HashMap::new(),
        without_ipv6: vec![false; n],
    };
    let mut conds = Vec::new();
    if matches!(lang, Lang::C | Lang::Cpp) {
        directives(src, toks, &mut st, &mut conds, aliasable);
        typedefs(toks, &mut st, aliasable);
    }
    if lang == Lang::Python {
        python_units(src, toks, &mut st);
    } else {
        blocks(toks, lang, &mut st, &conds);
        mark_without_ipv6(&mut st, &conds);
        dispatches(toks, &mut st);
    }
    st
}

/// A conditional directive, for brace matching: at token index. An `#if` says whether
/// its condition is about IPv6 support: `Some(true)` when its first branch is the IPv6
/// build's (`#ifdef HAVE_IPV6`, `#if defined(INET6)`), `Some(false)` when it is the
/// build without (`#ifndef INET6`, `#if !defined(USE_IPV6)`).
#[derive(Clone, Copy, Debug)]
enum Cond {
    If(Option<bool>),
    Else,
    Endif,
}

fn directives<'a>(
    src: &'a str,
    toks: &[Token<'a>],
    st: &mut Structure<'a>,
    conds: &mut Vec<(usize, Cond)>,
    aliasable: &dyn Fn(&str) -> bool,
) {
    let b = src.as_bytes();
    let mut i = 0;
    while i < toks.len() {
        let t = &toks[i];
        if !t.is_punct('#') || !first_on_line(b, t.offset) {
            i += 1;
            continue;
        }
        let end = directive_end(b, t.offset);
        let mut j = i + 1;
        while j < toks.len() && toks[j].offset < end {
            j += 1;
        }
        // Tokens i..j are the directive.
        let name = toks.get(i + 1).filter(|_| i + 1 < j).map_or("", |t| t.text);
        match name {
            "define" => {
                for d in &mut st.dir[i..j] {
                    *d = Dir::DefineBody;
                }
                st.dir[i] = Dir::Other;
                st.dir[i + 1] = Dir::Other;
                if i + 2 < j && toks[i + 2].kind == Kind::Ident {
                    st.dir[i + 2] = Dir::Defined;
                    let object_like = !(i + 3 < j
                        && toks[i + 3].is_punct('(')
                        && toks[i + 3].offset == toks[i + 2].end);
                    if object_like {
                        if let Some(target) = alias_target(&toks[i + 3..j], st, aliasable) {
                            st.aliases.insert(toks[i + 2].text, target);
                        }
                    }
                }
            }
            _ => {
                for d in &mut st.dir[i..j] {
                    *d = Dir::Other;
                }
                match name {
                    "if" | "ifdef" | "ifndef" => {
                        let about_ipv6 = toks[i + 2..j].iter().any(|t| {
                            let w = t.text.to_ascii_lowercase();
                            t.kind == Kind::Ident && (w.contains("ipv6") || w.contains("inet6"))
                        });
                        let negated = name == "ifndef"
                            || toks[i + 2..j].first().is_some_and(|t| t.is_punct('!'));
                        conds.push((i, Cond::If(about_ipv6.then_some(!negated))));
                    }
                    "else" | "elif" | "elifdef" | "elifndef" => conds.push((i, Cond::Else)),
                    "endif" => conds.push((i, Cond::Endif)),
                    _ => {}
                }
            }
        }
        i = j.max(i + 1);
    }
}

/// Is the byte at `at` the first non-blank of its line?
fn first_on_line(b: &[u8], at: usize) -> bool {
    b[..at]
        .iter()
        .rev()
        .take_while(|&&c| c != b'\n')
        .all(|&c| c == b' ' || c == b'\t' || c == b'\r' || c == 0x0c)
}

/// Where the directive starting at `at` ends: the first newline not escaped by a
/// backslash.
fn directive_end(b: &[u8], at: usize) -> usize {
    let mut k = at;
    while k < b.len() {
        if b[k] == b'\n' {
            let mut p = k;
            if p > 0 && b[p - 1] == b'\r' {
                p -= 1;
            }
            if p == 0 || b[p - 1] != b'\\' {
                return k;
            }
        }
        k += 1;
    }
    b.len()
}

/// What a `#define` body or a typedef's type stands for: `[struct] X`, `(X)`,
/// `sizeof([struct] X)` with X a sockaddr.
fn alias_target<'a>(
    body: &[Token<'a>],
    st: &Structure<'a>,
    aliasable: &dyn Fn(&str) -> bool,
) -> Option<&'a str> {
    let words: Vec<&Token<'a>> = body
        .iter()
        .filter(|t| !(t.is_punct('(') || t.is_punct(')') || t.is_ident("struct")))
        .collect();
    match words.as_slice() {
        [x] if x.kind == Kind::Ident => {
            let target = st.resolve(x.text);
            (aliasable(target) || target == "sockaddr" || target == SOCKADDR_SIZE).then_some(target)
        }
        [s, x] if s.is_ident("sizeof") && st.resolve(x.text) == "sockaddr" => Some(SOCKADDR_SIZE),
        _ => None,
    }
}

/// `typedef [struct] X NAME[, *NAME2];` with X aliasable.
fn typedefs<'a>(toks: &[Token<'a>], st: &mut Structure<'a>, aliasable: &dyn Fn(&str) -> bool) {
    for i in 0..toks.len() {
        if !toks[i].is_ident("typedef") || st.dir[i] != Dir::Code {
            continue;
        }
        let Some(semi) = toks[i + 1..]
            .iter()
            .take(16)
            .position(|t| t.is_punct(';') || t.is_punct('{'))
            .map(|p| i + 1 + p)
        else {
            continue;
        };
        if !toks[semi].is_punct(';') {
            continue;
        }
        let mut k = i + 1;
        if toks[k].is_ident("struct") {
            k += 1;
        }
        if toks[k].kind != Kind::Ident {
            continue;
        }
        let target = st.resolve(toks[k].text);
        if !(aliasable(target) || target == "sockaddr") {
            continue;
        }
        for j in k + 1..semi {
            let t = &toks[j];
            if t.kind == Kind::Ident && (toks[j + 1].is_punct(';') || toks[j + 1].is_punct(',')) {
                st.aliases.insert(t.text, target);
                st.dir[j] = Dir::Defined;
            }
        }
    }
}

/// Brace and paren matching, units.
fn blocks(toks: &[Token<'_>], lang: Lang, st: &mut Structure<'_>, conds: &[(usize, Cond)]) {
    let mut parens: Vec<usize> = Vec::new();
    // Open braces: (index, see-through).
    let mut braces: Vec<(usize, bool)> = Vec::new();
    // Per open #if: the brace stack at the #if, and after its first branch.
    type Snap = Vec<(usize, bool)>;
    let mut cond_stack: Vec<(Snap, Option<Snap>)> = Vec::new();
    let mut next_cond = 0;
    // The first token of the current top-level statement.
    let mut stmt_start = 0;
    let top = |braces: &[(usize, bool)]| braces.iter().all(|b| b.1);
    let mut i = 0;
    while i < toks.len() {
        while next_cond < conds.len() && conds[next_cond].0 <= i {
            match conds[next_cond].1 {
                Cond::If(_) => cond_stack.push((braces.clone(), None)),
                Cond::Else => {
                    if let Some((at_if, first)) = cond_stack.last_mut() {
                        if first.is_none() {
                            *first = Some(braces.clone());
                        }
                        braces = at_if.clone();
                    }
                }
                Cond::Endif => {
                    if let Some((_, Some(first))) = cond_stack.pop() {
                        braces = first;
                    }
                }
            }
            next_cond += 1;
        }
        if st.dir[i] != Dir::Code {
            // A directive (or a typedef's name): a `#define` at top level is a unit.
            let mut j = i + 1;
            while j < toks.len() && st.dir[j] != Dir::Code && !toks[j].is_punct('#') {
                j += 1;
            }
            if top(&braces) && st.dir[i..j].contains(&Dir::DefineBody) {
                push_unit(st, i, j);
                stmt_start = j;
            }
            i = j;
            continue;
        }
        let t = &toks[i];
        if t.kind == Kind::Punct {
            match t.text {
                "(" => parens.push(i),
                ")" => {
                    if let Some(o) = parens.pop() {
                        st.close[o] = i as u32;
                    }
                }
                "{" => {
                    let see_through = top(&braces) && see_through(toks, stmt_start, i, lang);
                    braces.push((i, see_through));
                    if see_through {
                        stmt_start = i + 1;
                    }
                }
                "}" => {
                    if let Some((o, through)) = braces.pop() {
                        st.close[o] = i as u32;
                        if top(&braces) {
                            if !through {
                                push_unit(st, stmt_start.min(o), i + 1);
                            }
                            stmt_start = i + 1;
                        }
                    }
                }
                ";" if top(&braces) => stmt_start = i + 1,
                _ => {}
            }
        }
        i += 1;
    }
}

fn push_unit(st: &mut Structure<'_>, start: usize, end: usize) {
    let id = st.units.len() as u32;
    st.units.push((start, end));
    for u in &mut st.unit[start..end] {
        *u = id;
    }
}

/// Is the block opened at `open` a namespace, `extern "C"` or class body?
fn see_through(toks: &[Token<'_>], start: usize, open: usize, lang: Lang) -> bool {
    let head = &toks[start.max(open.saturating_sub(16))..open];
    let has = |w: &str| head.iter().any(|t| t.is_ident(w));
    let paren = head.iter().any(|t| t.is_punct('('));
    has("namespace")
        || (has("extern") && head.iter().any(|t| t.kind == Kind::Str))
        || (matches!(lang, Lang::Cpp | Lang::Java)
            && !paren
            && (has("class") || has("interface") || (lang == Lang::Java && has("enum"))))
}

/// Python: a unit per statement starting a line at indentation 0 (outside brackets).
fn python_units(src: &str, toks: &[Token<'_>], st: &mut Structure<'_>) {
    let b = src.as_bytes();
    let mut depth = 0i32;
    let mut start = None;
    for (i, t) in toks.iter().enumerate() {
        let line_start = t.offset == 0 || b.get(t.offset - 1) == Some(&b'\n');
        let new_line = i == 0 || b[toks[i - 1].end.min(t.offset)..t.offset].contains(&b'\n');
        if depth <= 0 && line_start && new_line {
            if let Some(s) = start {
                push_unit(st, s, i);
            }
            start = Some(i);
            depth = 0;
        }
        if t.kind == Kind::Punct {
            match t.text {
                "(" | "[" | "{" => depth += 1,
                ")" | "]" | "}" => depth -= 1,
                _ => {}
            }
        }
    }
    if let Some(s) = start {
        push_unit(st, s, toks.len());
    }
}

/// Marks the tokens of the branches a build without IPv6 compiles ([`Structure::
/// without_ipv6`]): from an IPv6 `#if`'s `#else` to its `#endif`, or from a negated
/// one's `#if` to its `#else` (or `#endif`).
fn mark_without_ipv6(st: &mut Structure<'_>, conds: &[(usize, Cond)]) {
    // Open conditionals: (kind, where the IPv6-less branch started, if it is open).
    let mut open: Vec<(Option<bool>, Option<usize>)> = Vec::new();
    let n = st.without_ipv6.len();
    let mut mark = |from: usize, to: usize| {
        for m in &mut st.without_ipv6[from.min(n)..to.min(n)] {
            *m = true;
        }
    };
    for &(i, c) in conds {
        match c {
            Cond::If(kind) => open.push((kind, (kind == Some(false)).then_some(i))),
            Cond::Else => {
                if let Some((kind, start)) = open.last_mut() {
                    if let Some(s) = start.take() {
                        mark(s, i);
                    } else if *kind == Some(true) {
                        *start = Some(i);
                    }
                    // An `#elif` after the IPv6-less branch is another build: stop there.
                    *kind = None;
                }
            }
            Cond::Endif => {
                if let Some((_, Some(s))) = open.pop() {
                    mark(s, i);
                }
            }
        }
    }
}

/// `switch` statements and `if` chains.
fn dispatches(toks: &[Token<'_>], st: &mut Structure<'_>) {
    let mut found: Vec<(usize, usize, bool)> = Vec::new();
    for i in 0..toks.len() {
        if st.dir[i] != Dir::Code || toks[i].kind != Kind::Ident {
            continue;
        }
        match toks[i].text {
            "switch" => {
                let Some(c) = after_parens(toks, st, i + 1) else {
                    continue;
                };
                if toks.get(c).is_some_and(|t| t.is_punct('{')) && st.close[c] != NONE {
                    found.push((i, st.close[c] as usize + 1, true));
                }
            }
            "if" if !(i > 0 && toks[i - 1].is_ident("else")) => {
                let end = chain_end(toks, st, i, 0);
                if end > i + 1 {
                    found.push((i, end, false));
                }
            }
            _ => {}
        }
    }
    // Innermost dispatch per token: starts ascend; a stack of open ones.
    let mut stack: Vec<u32> = Vec::new();
    let mut next = 0;
    for k in 0..toks.len() {
        while stack
            .last()
            .is_some_and(|&d| st.dispatches[d as usize].end <= k)
        {
            stack.pop();
        }
        while next < found.len() && found[next].0 == k {
            let (start, end, switch) = found[next];
            let id = st.dispatches.len() as u32;
            st.dispatches.push(Dispatch {
                start,
                end,
                parent: stack.last().copied().unwrap_or(NONE),
                switch,
            });
            stack.push(id);
            next += 1;
        }
        st.dispatch[k] = stack.last().copied().unwrap_or(NONE);
    }
}

/// The index just past `( … )` starting at `open`, if a `(` is there.
fn after_parens(toks: &[Token<'_>], st: &Structure<'_>, open: usize) -> Option<usize> {
    if !toks.get(open)?.is_punct('(') || st.close[open] == NONE {
        return None;
    }
    Some(st.close[open] as usize + 1)
}

/// The end of the `if` chain starting at `i` (exclusive).
fn chain_end(toks: &[Token<'_>], st: &Structure<'_>, i: usize, nest: u32) -> usize {
    let Some(mut j) = after_parens(toks, st, i + 1) else {
        return i + 1;
    };
    j = skip_directives(st, stmt_end(toks, st, j, nest));
    while toks.get(j).is_some_and(|t| t.is_ident("else")) {
        // `} else` `#endif` `{ … }`: a branch kept by one configuration only
        // (`#ifdef HAVE_INET6` around the IPv6 one) is still one chain.
        j = skip_directives(st, j + 1);
        if toks.get(j).is_some_and(|t| t.is_ident("if")) {
            match after_parens(toks, st, j + 1) {
                Some(k) => j = stmt_end(toks, st, k, nest),
                None => return j,
            }
        } else {
            j = stmt_end(toks, st, j, nest);
        }
        j = skip_directives(st, j);
    }
    j
}

/// The first token from `j` that is not part of a preprocessor directive.
fn skip_directives(st: &Structure<'_>, mut j: usize) -> usize {
    while st.dir.get(j).is_some_and(|d| *d != Dir::Code) {
        j += 1;
    }
    j
}

/// The end (exclusive) of the statement starting at `j`.
fn stmt_end(toks: &[Token<'_>], st: &Structure<'_>, j: usize, nest: u32) -> usize {
    let Some(t) = toks.get(j) else { return j };
    if t.is_punct('{') {
        return if st.close[j] == NONE {
            j + 1
        } else {
            st.close[j] as usize + 1
        };
    }
    if t.is_ident("if") && nest < 8 {
        return chain_end(toks, st, j, nest + 1);
    }
    let mut k = j;
    let limit = (j + 2000).min(toks.len());
    while k < limit {
        let t = &toks[k];
        if st.dir[k] != Dir::Code {
            k += 1;
            continue;
        }
        if (t.is_punct('(') || t.is_punct('{')) && st.close[k] != NONE {
            let brace = t.is_punct('{');
            k = st.close[k] as usize + 1;
            if brace
                && !toks
                    .get(k)
                    .is_some_and(|n| n.is_ident("while") || n.kind == Kind::Punct)
            {
                return k;
            }
            continue;
        }
        if t.is_punct(';') {
            return k + 1;
        }
        if t.is_punct('}') {
            return k;
        }
        k += 1;
    }
    k
}

/// The identifiers passed (anywhere in the arguments) to calls of `names`, per unit.
pub(super) fn call_args<'a>(
    toks: &[Token<'a>],
    st: &Structure<'a>,
    names: &[&str],
) -> HashSet<(u32, &'a str)> {
    let mut out = HashSet::new();
    for i in 0..toks.len() {
        let t = &toks[i];
        if t.kind != Kind::Ident || !names.contains(&st.resolve(t.text)) {
            continue;
        }
        let Some(end) = after_parens(toks, st, i + 1) else {
            continue;
        };
        for a in &toks[i + 2..end - 1] {
            if a.kind == Kind::Ident {
                out.insert((st.unit[i], a.text));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lex::tokenize;

    fn st(src: &str) -> (Vec<Token<'_>>, Structure<'_>) {
        let toks = tokenize(src, Lang::C);
        let s = analyse(src, &toks, Lang::C, &|w| {
            matches!(w, "sockaddr_in" | "in_addr" | "AF_INET")
        });
        (toks, s)
    }

    fn at(toks: &[Token<'_>], text: &str, nth: usize) -> usize {
        toks.iter()
            .enumerate()
            .filter(|(_, t)| t.text == text)
            .nth(nth)
            .unwrap()
            .0
    }

    #[test]
    fn units_are_top_level_blocks_with_their_heads() {
        let src = "int g;\nint f(int a) { if (a) { x(); } }\nstruct s { int b; };\nextern \"C\" { int h(void) { return 1; } }\n#define X 1\n";
        let (toks, s) = st(src);
        assert_eq!(s.unit[at(&toks, "g", 0)], NONE);
        let f = s.unit[at(&toks, "a", 0)];
        assert_ne!(f, NONE);
        assert_eq!(s.unit[at(&toks, "x", 0)], f);
        assert_ne!(s.unit[at(&toks, "b", 0)], f);
        assert_ne!(s.unit[at(&toks, "return", 0)], NONE);
        assert_eq!(s.unit[at(&toks, "extern", 0)], NONE);
        assert_ne!(s.unit[at(&toks, "X", 0)], NONE);
    }

    #[test]
    fn conditional_branches_do_not_unbalance_braces() {
        let src = "#ifdef A\nint f(int a) {\n#else\nint f(void) {\n#endif\n  y();\n}\nint z;\n";
        let (toks, s) = st(src);
        assert_eq!(s.unit[at(&toks, "y", 0)], s.unit[at(&toks, "a", 0)]);
        assert_eq!(s.unit[at(&toks, "z", 0)], NONE);
        assert_eq!(s.dir[at(&toks, "A", 0)], Dir::Other);
    }

    #[test]
    fn aliases_from_defines_and_typedefs() {
        let src = "#define IA struct in_addr\n#define SA struct sockaddr\n#define SALEN sizeof(SA)\ntypedef struct sockaddr_in SAI, *PSAI;\n#define F(x) AF_INET\n#define N 16\n";
        let (toks, s) = st(src);
        assert_eq!(s.resolve("IA"), "in_addr");
        assert_eq!(s.resolve("SA"), "sockaddr");
        assert_eq!(s.resolve("SALEN"), SOCKADDR_SIZE);
        assert_eq!(s.resolve("SAI"), "sockaddr_in");
        assert_eq!(s.resolve("PSAI"), "sockaddr_in");
        assert_eq!(s.resolve("F"), "F");
        assert_eq!(s.resolve("N"), "N");
        assert_eq!(s.dir[at(&toks, "IA", 0)], Dir::Defined);
        assert_eq!(s.dir[at(&toks, "in_addr", 0)], Dir::DefineBody);
    }

    #[test]
    fn dispatches_cover_whole_chains_and_switches() {
        let src = "void f(int fam) {\n if (fam == 4) a(); else if (fam == 6) { b(); } else c();\n d();\n switch (fam) { case 1: e(); }\n}\n";
        let (toks, s) = st(src);
        let chain = s.dispatch[at(&toks, "a", 0)];
        assert_ne!(chain, NONE);
        assert_eq!(s.dispatch[at(&toks, "b", 0)], chain);
        assert_eq!(s.dispatch[at(&toks, "c", 0)], chain);
        assert_eq!(s.dispatch[at(&toks, "d", 0)], NONE);
        let sw = s.dispatch[at(&toks, "e", 0)];
        assert!(sw != NONE && s.dispatches[sw as usize].switch);
    }

    #[test]
    fn broken_code_neither_panics_nor_loops() {
        for src in [
            "#if\n{\n#else\n}\n#endif\n}}}{{{ if ( else switch ( { case",
            "#endif\n#else\n}\nif (a) else else if",
            "typedef struct",
            "typedef struct sockaddr_in",
            "#define",
            "#define SA",
            "if (x) if (y) if (z) ; else",
            "switch (x) {",
            "\\\n#\\\ndefine X struct in_addr\nX a;",
        ] {
            for lang in Lang::ALL {
                let toks = tokenize(src, lang);
                let _ = analyse(src, &toks, lang, &|_| true);
                let _ = crate::scan::scan_source(src, lang, None);
            }
        }
    }
}
