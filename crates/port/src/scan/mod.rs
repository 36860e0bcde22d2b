//! Matching the rule table against one file's tokens.
//!
//! [`scan_source`] tokenizes a file ([`crate::lex`]), collects the identifiers its code
//! uses (for the rules' `unless` lists), runs every rule for the file's language and
//! returns findings sorted by position. The heuristic matchers (address-sized buffers,
//! addresses in integers, colon splitting and formatting) look at a few tokens around
//! a candidate; what they accept is stated on each function, and the fixture under
//! `tests/fixtures/legacy` measures how well that works on a realistic program.

use std::collections::HashSet;

use serde::Serialize;

mod heuristics;

use heuristics::{
    addr_arithmetic, addr_buffers, addr_integers, address_integers, byteorder_on_address,
    colon_formats, colon_splits, has_dotted_quad_format, is_loopback_number, multicast_byte_values,
    names_an_oid,
};
pub use heuristics::{contains_dotted_quad, names_an_address};

use crate::lex::{tokenize, Kind, Lang, LineIndex, Token};
use crate::rules::{Matcher, Rule, Severity, RULES};

/// One IPv4-dependent site.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Finding {
    /// The rule's id.
    pub rule: &'static str,
    pub severity: Severity,
    /// 1-based line and column (Unicode code points) where the match starts.
    pub line: usize,
    pub column: usize,
    /// 1-based column just past the match on the same line (its last line if it spans).
    pub end_column: usize,
    /// The matched text (for a string literal, the literal with its quotes).
    pub matched: String,
    /// The whole source line, for context.
    pub snippet: String,
}

/// Scans one file's text, written in `lang`, with the rules `enabled` (by index in
/// [`RULES`]; `None` means all).
pub fn scan_source(src: &str, lang: Lang, enabled: Option<&[bool]>) -> Vec<Finding> {
    let toks = tokenize(src, lang);
    let idents = code_idents(&toks);
    let lines = LineIndex::new(src);
    let ipv4_file = ["s_addr", "in_addr", "sockaddr_in", "in_addr_t"]
        .iter()
        .any(|w| idents.contains(w));
    let cx = Cx {
        taint: address_integers(&toks, ipv4_file),
        toks,
        lang,
        ipv4_file,
    };
    // Identifier rules in one pass over the tokens, whatever their number.
    let by_ident = ident_rules();
    let mut ident_hits: Vec<Vec<(usize, usize)>> = vec![Vec::new(); RULES.len()];
    for t in cx.toks.iter().filter(|t| t.kind == Kind::Ident) {
        if let Some(rules) = by_ident.get(t.text) {
            for &r in rules {
                ident_hits[r].push((t.offset, t.end));
            }
        }
    }
    let mut out = Vec::new();
    for (i, rule) in RULES.iter().enumerate() {
        if !rule.langs.contains(&lang)
            || enabled.is_some_and(|e| !e.get(i).copied().unwrap_or(false))
        {
            continue;
        }
        if rule.unless.iter().any(|u| idents.contains(u)) {
            continue;
        }
        for (start, end) in matches(rule, &cx, &mut ident_hits[i]) {
            out.push(finding(rule, src, &lines, start, end));
        }
    }
    out.sort_by(|a, b| (a.line, a.column, a.rule).cmp(&(b.line, b.column, b.rule)));
    out.dedup_by(|a, b| a.line == b.line && a.column == b.column && a.rule == b.rule);
    out
}

/// The identifiers a file's code uses.
fn code_idents<'a>(toks: &[Token<'a>]) -> HashSet<&'a str> {
    toks.iter()
        .filter(|t| t.kind == Kind::Ident)
        .map(|t| t.text)
        .collect()
}

/// The [`crate::rules::EVIDENCE`] identifiers a file's code uses.
pub fn evidence(src: &str, lang: Lang) -> Vec<&'static str> {
    let toks = tokenize(src, lang);
    let idents = code_idents(&toks);
    let mut out: Vec<&'static str> = crate::rules::EVIDENCE
        .iter()
        .flat_map(|(_, names)| names.iter().copied())
        .filter(|n| idents.contains(n))
        .collect();
    out.sort_unstable();
    out.dedup();
    out
}

fn finding(rule: &'static Rule, src: &str, lines: &LineIndex, start: usize, end: usize) -> Finding {
    let (line, column) = lines.line_col(src, start);
    let matched = src.get(start..end).unwrap_or("");
    let end_column = match matched.find('\n') {
        // A match over several lines ends, for display, at the end of its first.
        Some(_) => lines.line_text(src, line).chars().count() + 1,
        None => column + matched.chars().count(),
    };
    Finding {
        rule: rule.id,
        severity: rule.severity,
        line,
        column,
        end_column: end_column.max(column + 1),
        matched: matched.chars().take(120).collect(),
        snippet: lines.line_text(src, line).chars().take(300).collect(),
    }
}

/// Identifier → the [`Matcher::Ident`] rules (by index) that look for it.
fn ident_rules() -> &'static std::collections::HashMap<&'static str, Vec<usize>> {
    static MAP: std::sync::OnceLock<std::collections::HashMap<&'static str, Vec<usize>>> =
        std::sync::OnceLock::new();
    MAP.get_or_init(|| {
        let mut m: std::collections::HashMap<&'static str, Vec<usize>> =
            std::collections::HashMap::new();
        for (i, r) in RULES.iter().enumerate() {
            if let Matcher::Ident(names) = r.matcher {
                for n in names {
                    m.entry(*n).or_default().push(i);
                }
            }
        }
        m
    })
}

/// What the matchers know of a file.
struct Cx<'a> {
    toks: Vec<Token<'a>>,
    lang: Lang,
    /// Integer variables that hold IPv4 addresses (see [`address_integers`]).
    taint: HashSet<&'a str>,
    /// The file uses `s_addr`, `in_addr` or `sockaddr_in`: a `u_long mask` here is
    /// an IPv4 netmask.
    ipv4_file: bool,
}

/// Byte ranges the rule matches. An identifier rule's were found in `scan_source`'s one
/// pass over the identifiers (`ident_hits`, this rule's share of it).
fn matches(rule: &Rule, cx: &Cx<'_>, ident_hits: &mut Vec<(usize, usize)>) -> Vec<(usize, usize)> {
    let (toks, lang) = (&cx.toks[..], cx.lang);
    let span = |t: &Token<'_>| (t.offset, t.end);
    match rule.matcher {
        Matcher::Ident(_) => std::mem::take(ident_hits),
        Matcher::StrEquals(values) => toks
            .iter()
            .filter(|t| t.kind == Kind::Str && values.contains(&t.text))
            .map(span)
            .collect(),
        Matcher::StrContains(values) => toks
            .iter()
            .filter(|t| t.kind == Kind::Str && values.iter().any(|v| t.text.contains(v)))
            .map(span)
            .collect(),
        Matcher::Ipv4Literal => toks
            .iter()
            .enumerate()
            .filter(|&(i, t)| match t.kind {
                Kind::Str => contains_dotted_quad(t.text) && !names_an_oid(toks, i),
                Kind::Number => is_loopback_number(t.text),
                _ => false,
            })
            .map(|(_, t)| span(t))
            .collect(),
        Matcher::AddrBuffer => addr_buffers(toks),
        Matcher::AddrInteger => addr_integers(cx),
        Matcher::ByteOrderOnAddress => byteorder_on_address(cx),
        Matcher::AddrArithmetic => addr_arithmetic(cx),
        Matcher::MulticastByteValue => multicast_byte_values(toks),
        Matcher::DottedQuadFormat => toks
            .iter()
            .filter(|t| t.kind == Kind::Str && has_dotted_quad_format(t.text))
            .map(span)
            .collect(),
        Matcher::ColonSplit => colon_splits(toks, lang),
        Matcher::ColonFormat => colon_formats(toks, lang),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::rule;

    fn ids(src: &str, lang: Lang) -> Vec<&'static str> {
        scan_source(src, lang, None)
            .into_iter()
            .map(|f| f.rule)
            .collect()
    }

    fn flags(src: &str, lang: Lang, id: &str) -> bool {
        assert!(rule(id).is_some(), "no rule {id}");
        ids(src, lang).contains(&id)
    }

    /// Every rule: its own bad example is flagged, its good example is not, and the bad
    /// example put in a comment or in a string literal is not flagged either.
    #[test]
    fn every_rule_flags_its_bad_example_and_not_its_good_one() {
        for r in RULES {
            let lang = r.langs[0];
            assert!(
                flags(r.example_bad, lang, r.id),
                "{}: bad example not flagged",
                r.id
            );
            assert!(
                !flags(r.example_good, lang, r.id),
                "{}: good example flagged: {:?}",
                r.id,
                scan_source(r.example_good, lang, None)
            );
            let commented = match lang {
                Lang::Python => format!("# {}\n", r.example_bad),
                _ => format!("/* {} */\n// {}\n", r.example_bad, r.example_bad),
            };
            assert!(
                !flags(&commented, lang, r.id),
                "{}: flagged inside a comment",
                r.id
            );
            if !matches!(
                r.matcher,
                Matcher::Ipv4Literal
                    | Matcher::StrEquals(_)
                    | Matcher::StrContains(_)
                    | Matcher::ColonFormat
                    | Matcher::DottedQuadFormat
            ) {
                let quoted = format!("msg = \"{}\";", r.example_bad.replace(['"', '\\'], "'"));
                assert!(
                    !flags(&quoted, lang, r.id),
                    "{}: flagged inside a string: {quoted}",
                    r.id
                );
            }
        }
    }

    #[test]
    fn findings_carry_position_and_context() {
        let src = "int main() {\n\tstruct hostent *h = gethostbyname(\"x\");\n}\n";
        let f = scan_source(src, Lang::C, None);
        let g = f.iter().find(|f| f.rule == "gethostbyname").unwrap();
        assert_eq!((g.line, g.column, g.end_column), (2, 22, 35));
        assert_eq!(g.matched, "gethostbyname");
        assert_eq!(g.snippet, "\tstruct hostent *h = gethostbyname(\"x\");");
        assert_eq!(ids(src, Lang::C), ["hostent", "gethostbyname"]);
    }

    #[test]
    fn counterparts_in_the_same_file_make_a_construct_dual_stack() {
        assert!(flags(
            "s = socket(AF_INET, SOCK_DGRAM, 0);",
            Lang::C,
            "af_inet"
        ));
        assert!(!flags(
            "s = socket(AF_INET, SOCK_DGRAM, 0); t = socket(AF_INET6, SOCK_DGRAM, 0);",
            Lang::C,
            "af_inet"
        ));
        assert!(flags(
            "setsockopt(s, IPPROTO_IP, IP_MULTICAST_TTL, &t, 1);",
            Lang::C,
            "ip_multicast"
        ));
        assert!(!flags("setsockopt(s, IPPROTO_IP, IP_MULTICAST_TTL, &t, 1); setsockopt(s, IPPROTO_IPV6, IPV6_MULTICAST_HOPS, &h, 4);", Lang::C, "ip_multicast"));
        assert!(!flags(
            "struct sockaddr_storage ss; struct sockaddr_in *sin = (void *)&ss;",
            Lang::C,
            "sockaddr_in"
        ));
    }

    /// (source, rule, flagged?) per language: a positive and a negative case each.
    #[test]
    fn rules_in_python_go_java_and_cpp() {
        let cases: &[(Lang, &str, &str, bool)] = &[
            (
                Lang::Python,
                "ip = socket.gethostbyname(h)",
                "gethostbyname",
                true,
            ),
            (
                Lang::Python,
                "infos = socket.getaddrinfo(h, p)  # not gethostbyname",
                "gethostbyname",
                false,
            ),
            (Lang::Python, "b = socket.inet_aton(s)", "inet_aton", true),
            (
                Lang::Python,
                "b = socket.inet_pton(socket.AF_INET6, s)",
                "inet_aton",
                false,
            ),
            (
                Lang::Python,
                "s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)",
                "af_inet",
                true,
            ),
            (
                Lang::Python,
                "s = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)",
                "af_inet",
                false,
            ),
            (
                Lang::Python,
                "host, port = arg.split(':')",
                "colon_split",
                true,
            ),
            (
                Lang::Python,
                "host, _, port = arg.rpartition(\":\")",
                "colon_split",
                true,
            ),
            (Lang::Python, "k, v = line.split('=')", "colon_split", false),
            (
                Lang::Python,
                "url = f\"http://{host}:{port}/\"",
                "colon_format",
                true,
            ),
            (
                Lang::Python,
                "addr = \"%s:%d\" % (host, port)",
                "colon_format",
                true,
            ),
            (
                Lang::Python,
                "msg = \"%s:%d\" % (name, count)",
                "colon_format",
                false,
            ),
            (Lang::Python, "DEFAULT = '192.0.2.1'", "ipv4_literal", true),
            (
                Lang::Python,
                "VERSION = '1.2.3'  # 192.0.2.1",
                "ipv4_literal",
                false,
            ),
            (
                Lang::Python,
                "s.setsockopt(socket.IPPROTO_IP, socket.IP_TOS, 0xb8)",
                "ip_tos",
                true,
            ),
            (
                Lang::Python,
                "s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_TCLASS, 0xb8)",
                "ip_tos",
                false,
            ),
            (
                Lang::Python,
                "a = ipaddress.IPv4Address(t)",
                "ipv4_type",
                true,
            ),
            (
                Lang::Python,
                "a = ipaddress.ip_address(t)",
                "ipv4_type",
                false,
            ),
            (
                Lang::Go,
                "c, err := net.Dial(\"udp4\", addr)",
                "ipv4_network_name",
                true,
            ),
            (
                Lang::Go,
                "c, err := net.Dial(\"udp\", addr) // udp4",
                "ipv4_network_name",
                false,
            ),
            (
                Lang::Go,
                "parts := strings.Split(hp, \":\")",
                "colon_split",
                true,
            ),
            (
                Lang::Go,
                "host, port, err := net.SplitHostPort(hp)",
                "colon_split",
                false,
            ),
            (
                Lang::Go,
                "addr := host + \":\" + port",
                "colon_format",
                true,
            ),
            (
                Lang::Go,
                "addr := net.JoinHostPort(host, port)",
                "colon_format",
                false,
            ),
            (Lang::Go, "if ip.To4() == nil { return }", "ipv4_type", true),
            (Lang::Go, "const def = `10.0.0.1`", "ipv4_literal", true),
            (
                Lang::Go,
                "const v = `1.2.3` // 10.0.0.1",
                "ipv4_literal",
                false,
            ),
            (
                Lang::Java,
                "String[] p = hostPort.split(\":\");",
                "colon_split",
                true,
            ),
            (
                Lang::Java,
                "String[] p = line.split(\",\");",
                "colon_split",
                false,
            ),
            (
                Lang::Java,
                "String s = host + \":\" + port;",
                "colon_format",
                true,
            ),
            (
                Lang::Java,
                "String s = name + \":\" + count;",
                "colon_format",
                false,
            ),
            (
                Lang::Java,
                "Inet4Address a = (Inet4Address) addr;",
                "ipv4_type",
                true,
            ),
            (
                Lang::Java,
                "InetAddress a = addr; // Inet4Address",
                "ipv4_type",
                false,
            ),
            (
                Lang::Java,
                "System.setProperty(\"java.net.preferIPv4Stack\", \"true\");",
                "prefer_ipv4_stack",
                true,
            ),
            (Lang::Cpp, "auto c = hp.find(':');", "colon_split", true),
            (Lang::Cpp, "auto c = hp.find('/');", "colon_split", false),
            (
                Lang::Cpp,
                "os << host << \":\" << port;",
                "colon_format",
                true,
            ),
            (
                Lang::Cpp,
                "auto s = R\"(127.0.0.1)\";",
                "ipv4_literal",
                true,
            ),
        ];
        for &(lang, src, id, want) in cases {
            assert_eq!(flags(src, lang, id), want, "{lang:?} {id}: {src}");
        }
    }

    #[test]
    fn dotted_quads() {
        for yes in [
            "127.0.0.1",
            "x 10.0.0.0/8",
            "255.255.255.255",
            "0.0.0.0",
            "a=192.0.2.7:80",
            "1.2.3.4.",
        ] {
            assert!(contains_dotted_quad(yes), "{yes}");
        }
        for no in [
            "1.2.3",
            "1.2.3.4.5",
            "v1.2.3.4",
            "256.1.1.1",
            "1234.1.1.1",
            "1.2.3.4a",
            "3.14",
        ] {
            assert!(!contains_dotted_quad(no), "{no}");
        }
        assert!(flags("x = 0x7f000001UL;", Lang::C, "ipv4_literal"));
        assert!(!flags(
            "#define GNUTLS_OID_X520_NAME \"2.5.4.41\"",
            Lang::C,
            "ipv4_literal"
        ));
    }

    #[test]
    fn address_buffers_and_integers() {
        assert!(flags(
            "char peer_addr[INET_ADDRSTRLEN];",
            Lang::C,
            "addr_buffer"
        ));
        assert!(flags("static char ipbuf[16];", Lang::C, "addr_buffer"));
        assert!(flags("unsigned char ip[4];", Lang::C, "addr_buffer"));
        assert!(!flags(
            "char nick[16]; char ip6[46]; int ips[16];",
            Lang::C,
            "addr_buffer"
        ));
        assert!(!flags(
            "struct in_addr a; uint32_t ip6s; uint32_t ip4s;",
            Lang::C,
            "addr_integer"
        ));
        assert!(!flags(
            "char zip[16]; char tip[15];",
            Lang::C,
            "addr_buffer"
        ));
        assert!(flags(
            "struct peer { u_long addr; }; struct in_addr a;",
            Lang::C,
            "addr_integer"
        ));
        // Outside IPv4 socket code "addr" may be a memory address; "ip" may not.
        assert!(!flags(
            "struct peer { u_long addr; uint32_t VirtualAddress; };",
            Lang::C,
            "addr_integer"
        ));
        assert!(!flags(
            "void f(struct sockaddr_in *s, int addr_type, unsigned int flags);",
            Lang::C,
            "addr_integer"
        ));
        assert!(flags("uint32_t srcip = 0;", Lang::C, "addr_integer"));
        assert!(flags("unsigned long netmask;", Lang::C, "addr_integer"));
        assert!(!flags(
            "int addrlen; u_long count; int addr_len;",
            Lang::C,
            "addr_integer"
        ));
    }

    #[test]
    fn integers_holding_addresses_are_followed_by_name() {
        let src = "int f(void) { u_long a; u_long n; a = inet_addr(h); n = 5; return a & n; }";
        let f = scan_source(src, Lang::C, None);
        let at = |id: &str| {
            f.iter()
                .filter(|x| x.rule == id)
                .map(|x| x.matched.as_str())
                .collect::<Vec<_>>()
        };
        assert_eq!(at("addr_integer"), ["u_long a"]);
        assert_eq!(at("addr_arithmetic"), ["a"]);
        let src = "int same_subnet(u_long, u_long);\nint same_subnet(u_long a, u_long b) { u_long mask; a = ntohl(a); return (a & mask) == (b & mask); }\nstruct sockaddr_in s;";
        let f = scan_source(src, Lang::C, None);
        let lines = |id: &str| {
            f.iter()
                .filter(|x| x.rule == id)
                .map(|x| (x.line, x.matched.clone()))
                .collect::<Vec<_>>()
        };
        assert_eq!(
            lines("addr_integer")[..2],
            [
                (1, "same_subnet(u_long, u_long)".to_string()),
                (2, "same_subnet(u_long a, u_long b)".to_string())
            ]
        );
        assert!(lines("addr_integer").contains(&(2, "u_long mask".to_string())));
        assert_eq!(lines("byteorder_address"), [(2, "ntohl(a)".to_string())]);
        assert_eq!(lines("addr_arithmetic").len(), 2);
        // Calls are not declarations; a mask outside IPv4 code is just a mask.
        assert!(!flags(
            "if (same_subnet(x.sin_addr.s_addr, y)) ok();",
            Lang::C,
            "addr_integer"
        ));
        assert!(!flags("u_long mask = 7;", Lang::C, "addr_integer"));
        assert!(flags(
            "if (bits < 0 || bits > 32) return;",
            Lang::C,
            "addr_arithmetic"
        ));
        assert!(flags(
            "struct in_addr i; u_long net; net = ((u_long)a << 24) | (b << 16) | (c << 8) | d;",
            Lang::C,
            "addr_arithmetic"
        ));
        assert!(flags(
            "ipaddr = (a << 24) | (b << 16) | (c << 8) | d;",
            Lang::C,
            "addr_arithmetic"
        ));
        assert!(!flags(
            "rgba = (r << 24) | (g << 16) | (b << 8) | a;",
            Lang::C,
            "addr_arithmetic"
        ));
        assert!(!flags(
            "x = y << 2; z = w >> 24 > 3;",
            Lang::C,
            "addr_arithmetic"
        ));
    }

    #[test]
    fn small_address_port_buffers_and_byte_sized_multicast_values() {
        let f = "char *f(struct sockaddr_in *s) { static char buf[22]; char out[64];\n sprintf(buf, \"%s:%d\", inet_ntoa(s->sin_addr), 1); sprintf(out, \"%s:%d\", host, port); }";
        let hits: Vec<_> = scan_source(f, Lang::C, None)
            .into_iter()
            .filter(|x| x.rule == "addr_buffer")
            .map(|x| x.matched)
            .collect();
        assert_eq!(hits, ["buf[22]"]);
        let m = "u_char ttl = 1, loop = 0; u_char other;\nsetsockopt(s, IPPROTO_IP, IP_MULTICAST_TTL, &ttl, sizeof ttl);\nsetsockopt(s, IPPROTO_IP, IP_MULTICAST_LOOP, (char *)&loop, 1);";
        let hits: Vec<_> = scan_source(m, Lang::C, None)
            .into_iter()
            .filter(|x| x.rule == "multicast_byte_value")
            .map(|x| (x.line, x.matched))
            .collect();
        assert_eq!(hits, [(1, "ttl".to_string()), (1, "loop".to_string())]);
    }

    #[test]
    fn byte_order_on_addresses_only() {
        assert!(flags(
            "a = ntohl(sin.sin_addr.s_addr);",
            Lang::C,
            "byteorder_address"
        ));
        assert!(flags(
            "if ((ntohl(peer) & netmask) == net)",
            Lang::C,
            "byteorder_address"
        ));
        assert!(!flags(
            "sin.sin_addr.s_addr = htonl(INADDR_ANY);",
            Lang::C,
            "byteorder_address"
        ));
        assert!(!flags(
            "h.len = htonl(len); n = ntohl(hdr.seq);",
            Lang::C,
            "byteorder_address"
        ));
    }

    #[test]
    fn colon_splits_and_formats_in_c() {
        assert!(flags(
            "if ((p = strrchr(arg, ':')) != NULL)",
            Lang::C,
            "colon_split"
        ));
        assert!(flags("host = strtok(arg, \":\");", Lang::C, "colon_split"));
        assert!(flags(
            "sscanf(arg, \"%[^:]:%d\", host, &port);",
            Lang::C,
            "colon_split"
        ));
        assert!(!flags(
            "tok = strtok(line, \" \\t\");",
            Lang::C,
            "colon_split"
        ));
        assert!(flags(
            "snprintf(b, sizeof b, \"%s:%u\", inet_ntoa(a), port);",
            Lang::C,
            "colon_format"
        ));
        assert!(flags(
            "printf(\"connected to %.*s:%hu\\n\", n, host, port);",
            Lang::C,
            "colon_format"
        ));
        assert!(!flags(
            "printf(\"%s: %d bytes\\n\", host, n);",
            Lang::C,
            "colon_format"
        ));
        assert!(!flags(
            "fprintf(stderr, \"%s:%d\", file, line);",
            Lang::C,
            "colon_format"
        ));
    }

    #[test]
    fn only_enabled_rules_run() {
        let mut on = vec![false; RULES.len()];
        on[RULES.iter().position(|r| r.id == "inet_ntoa").unwrap()] = true;
        assert_eq!(
            scan_source("gethostbyname(x); inet_ntoa(a);", Lang::C, Some(&on)).len(),
            1
        );
    }

    #[test]
    fn names_that_say_address() {
        for yes in [
            "addr",
            "peerAddr",
            "srcip",
            "ip",
            "ip_str",
            "clientIp",
            "dotted",
            "in_addr_buf",
        ] {
            assert!(names_an_address(yes), "{yes}");
        }
        for no in [
            "zip", "skip", "tip", "strip", "nick", "ship", "pipe", "recipe",
        ] {
            assert!(!names_an_address(no), "{no}");
        }
    }
}
