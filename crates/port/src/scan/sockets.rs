//! Matchers that need the structural pass (`structure.rs`): lengths and storage of
//! `struct sockaddr`, numeric-address tests before an IPv4 parser, first-answer use of
//! a lookup, and the `"0.0.0.0"` handed to a port lookup.

use std::collections::HashSet;

use super::structure::{call_args, SOCKADDR_SIZE};
use super::Cx;
use crate::lex::{Kind, Token};

/// `sizeof(struct sockaddr)`, `sizeof(SA)` (an alias of `struct sockaddr`) and uses of a
/// macro for either; `struct sockaddr NAME` declared where `accept`/`recvfrom`/
/// `getpeername`/`getsockname` fill NAME. Not `sizeof(struct sockaddr *)`.
pub(super) fn sockaddr_sizes(cx: &Cx<'_>) -> Vec<(usize, usize)> {
    let (toks, st) = (&cx.toks[..], &cx.st);
    let mut out = Vec::new();
    for (i, t) in toks.iter().enumerate() {
        if t.kind != Kind::Ident || !st.is_use(i) {
            continue;
        }
        if t.text == "sizeof" && toks.get(i + 1).is_some_and(|p| p.is_punct('(')) {
            let mut k = i + 2;
            if toks.get(k).is_some_and(|s| s.is_ident("struct")) {
                k += 1;
            }
            let (Some(x), Some(close)) = (toks.get(k), toks.get(k + 1)) else {
                continue;
            };
            if x.kind == Kind::Ident && st.resolve(x.text) == "sockaddr" && close.is_punct(')') {
                out.push((t.offset, close.end));
                continue;
            }
            // `sizeof(ifr->ifr_addr)`: an ifreq's address members are struct sockaddr.
            if let Some(c) = st.close_of(i + 1) {
                let member = c >= 3
                    && matches!(
                        toks[c - 1].text,
                        "ifr_addr" | "ifr_dstaddr" | "ifr_broadaddr" | "ifr_netmask"
                    )
                    && (toks[c - 2].is_punct('.') || toks[c - 2].is_punct('>'));
                if member {
                    out.push((t.offset, toks[c].end));
                }
            }
            continue;
        }
        let word = st.resolve(t.text);
        if word == SOCKADDR_SIZE && t.text != word {
            out.push((t.offset, t.end));
            continue;
        }
        if word == "sockaddr" {
            let (Some(name), Some(next)) = (toks.get(i + 1), toks.get(i + 2)) else {
                continue;
            };
            if name.kind == Kind::Ident
                && matches!(next.text, ";" | "," | "=" | "[")
                && cx.kernel_filled.contains(&(st.unit[i], name.text))
            {
                out.push((t.offset, name.end));
            }
        }
    }
    out
}

/// `isdigit(X[0])`, `isdigit(*X)`, `isdigit((unsigned char)X[0])`, `atoi(X)`,
/// `atol(X)`, `strspn(X, "0123456789.")`, where the same unit (function) passes X to
/// `inet_addr`, `inet_aton` or `inet_network`.
pub(super) fn numeric_host_tests(cx: &Cx<'_>) -> Vec<(usize, usize)> {
    let (toks, st) = (&cx.toks[..], &cx.st);
    let parsed: HashSet<(u32, &str)> =
        call_args(toks, st, &["inet_addr", "inet_aton", "inet_network"]);
    if parsed.is_empty() {
        return Vec::new();
    }
    let mut out = Vec::new();
    for (i, t) in toks.iter().enumerate() {
        if t.kind != Kind::Ident
            || !matches!(t.text, "isdigit" | "atoi" | "atol" | "strspn")
            || !toks.get(i + 1).is_some_and(|p| p.is_punct('('))
        {
            continue;
        }
        let close = st.close[i + 1];
        if close == super::structure::NONE {
            continue;
        }
        let args = &toks[i + 2..close as usize];
        let Some(x) = args.iter().find(|a| {
            a.kind == Kind::Ident
                && !matches!(a.text, "unsigned" | "char" | "int" | "const" | "u_char")
        }) else {
            continue;
        };
        if t.text == "strspn"
            && !args
                .iter()
                .any(|a| a.kind == Kind::Str && a.text.starts_with("0123456789"))
        {
            continue;
        }
        // atoi()/atol() are tests only when compared or used as a condition
        // (`atoi(host) > 0`, `if (atoi(host))`), not `port = atoi(arg)`.
        let close_at = close as usize;
        let compared = toks.get(close_at + 1).is_some_and(|n| {
            matches!(n.text, ">" | "<" | "&" | "|" | "?")
                || (matches!(n.text, "!" | "=")
                    && toks.get(close_at + 2).is_some_and(|e| e.is_punct('=')))
        }) || (i >= 2 && toks[i - 1].is_punct('(') && toks[i - 2].is_ident("if"))
            || (i >= 1 && matches!(toks[i - 1].text, "!" | "&" | "|"));
        if matches!(t.text, "atoi" | "atol") && !compared {
            continue;
        }
        if parsed.contains(&(st.unit[i], x.text)) {
            out.push((t.offset, toks[close as usize].end));
        }
    }
    out
}

/// `h_addr` (which is `h_addr_list[0]`) and `h_addr_list[0]`: the first answer of an
/// IPv4-only lookup.
pub(super) fn first_answers(cx: &Cx<'_>) -> Vec<(usize, usize)> {
    let (toks, st) = (&cx.toks[..], &cx.st);
    let mut out = Vec::new();
    for (i, t) in toks.iter().enumerate() {
        if t.kind != Kind::Ident || !st.is_use(i) {
            continue;
        }
        match st.resolve(t.text) {
            "h_addr" => out.push((t.offset, t.end)),
            "h_addr_list" => {
                let first = toks.get(i + 1).is_some_and(|b| b.is_punct('['))
                    && toks.get(i + 2).is_some_and(|n| n.text == "0")
                    && toks.get(i + 3).is_some_and(|b| b.is_punct(']'));
                if first {
                    out.push((t.offset, toks[i + 3].end));
                }
            }
            // getaddrinfo's first answer is not flagged here: it may be IPv6 as well as
            // IPv4, so the code works over IPv6; trying each answer is a robustness
            // matter (RFC 6724, RFC 8305), the `getaddrinfo_first_only` note's.
            _ => {}
        }
    }
    out
}

/// Is the string at `i` an all-zero address handed to a port or service lookup
/// (`lookup_port("0.0.0.0", "http")`): the wildcard as a placeholder, not an address.
pub(super) fn wildcard_to_port_lookup(toks: &[Token<'_>], i: usize) -> bool {
    if toks[i].text != "0.0.0.0" {
        return false;
    }
    callee_of(toks, i, 24).is_some_and(|callee| {
        let l = callee.to_ascii_lowercase();
        l.contains("port") || l.contains("serv")
    })
}

/// The function a token is an argument of: the identifier before the nearest unclosed
/// `(` to its left, looking back at most `reach` tokens and not past a statement or
/// block boundary.
pub(super) fn callee_of<'a>(toks: &[Token<'a>], i: usize, reach: usize) -> Option<&'a str> {
    let mut depth = 0u32;
    for j in (i.saturating_sub(reach)..i).rev() {
        let t = &toks[j];
        if t.is_punct(')') {
            depth += 1;
        } else if t.is_punct('(') {
            if depth == 0 {
                let callee = &toks[j.checked_sub(1)?];
                return (callee.kind == Kind::Ident).then_some(callee.text);
            }
            depth -= 1;
        } else if t.is_punct(';') || t.is_punct('{') || t.is_punct('}') {
            return None;
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use crate::lex::Lang;
    use crate::scan::{scan_matches, scan_source};

    /// (line, rule) of every match of `id`.
    fn hits(src: &str, id: &str) -> Vec<usize> {
        scan_matches(src, Lang::C, None)
            .into_iter()
            .filter(|f| f.rule == id)
            .map(|f| f.line)
            .collect()
    }

    #[test]
    fn sizeof_struct_sockaddr_and_macros_for_it() {
        let src = "\
#define SA struct sockaddr
#define SALEN sizeof(struct sockaddr)
typedef struct sockaddr SOCKADDR;
void f(int s, struct sockaddr_in *a)
{
\tstruct sockaddr peer;
\tsocklen_t n = sizeof(SA);
\tbind(s, (SA *)a, SALEN);
\tc = accept(s, &peer, &n);
\tp = malloc(sizeof(SOCKADDR));
\tq = malloc(sizeof(struct sockaddr *));
\tr = sizeof(struct sockaddr_storage);
\tstruct sockaddr *sa = res->ai_addr;
}
";
        assert_eq!(hits(src, "sockaddr_size"), [2, 6, 7, 8, 10]);
    }

    #[test]
    fn text_buffers_too_small_for_ipv6() {
        let src = "\
struct sockaddr_in sin;
void f(void)
{
\tchar addrs[8][24];
\tchar ip[32];
\tchar buf[40];
\tchar host[64], name[32], ip6[46], hp[48];
\tstrcpy(buf, inet_ntoa(sin.sin_addr));
\tsnprintf(hp, sizeof hp, \"%s:%d\", inet_ntoa(sin.sin_addr), port);
}
";
        assert_eq!(hits(src, "addr_buffer"), [4, 5, 6, 7]);
        let f = scan_matches(src, Lang::C, None);
        let on7: Vec<_> = f
            .iter()
            .filter(|x| x.line == 7 && x.rule == "addr_buffer")
            .map(|x| x.matched.as_str())
            .collect();
        assert_eq!(on7, ["hp[48]"]);
    }

    #[test]
    fn numeric_tests_before_an_ipv4_parser() {
        let src = "\
in_addr_t resolve(const char *host, const char *opt)
{
\tif (isdigit((unsigned char)host[0]))
\t\treturn inet_addr(host);
\tif (atoi(host) > 0)
\t\treturn inet_addr(host);
\tport = atoi(opt);
\tif (isdigit(flag[0]))
\t\tverbose = 1;
\tif (strspn(host, \"0123456789.\") == strlen(host))
\t\treturn inet_addr(host);
\tinet_aton(opt, &a);
\treturn 0;
}
";
        assert_eq!(hits(src, "numeric_host_test"), [3, 5, 10]);
    }

    #[test]
    fn ipv4_only_socket_options() {
        let src = "\
void f(int s)
{
\tsetsockopt(s, IPPROTO_IP, IP_OPTIONS, lsrr, n);
\tlsrr[0] = IPOPT_LSRR;
#ifdef IP_PKTINFO
\tx();
#endif
}
void g(int s)
{
\tsetsockopt(s, IPPROTO_IP, IP_PKTINFO, &on, sizeof on);
\tsetsockopt(s, IPPROTO_IPV6, IPV6_RECVPKTINFO, &on, sizeof on);
}
";
        assert_eq!(hits(src, "ipv4_sockopt"), [3, 4]);
    }

    #[test]
    fn first_answer_of_a_lookup() {
        let src = "\
void f(struct hostent *hp, struct sockaddr_in *sin)
{
\tmemcpy(&sin->sin_addr, hp->h_addr_list[0], hp->h_length);
\tmemcpy(&sin->sin_addr, hp->h_addr, hp->h_length);
\tfor (i = 0; hp->h_addr_list[i]; i++)
\t\ttry(hp->h_addr_list[i]);
}
int g(const char *h)
{
\tgetaddrinfo(h, \"80\", &hints, &res);
\treturn connect(s, res->ai_addr, res->ai_addrlen);
}
int k(const char *h)
{
\tgetaddrinfo(h, \"80\", &hints, &res);
\tfor (ai = res; ai; ai = ai->ai_next)
\t\tif (connect(s, ai->ai_addr, ai->ai_addrlen) == 0) return 0;
}
";
        // getaddrinfo's first answer (line 11) may be IPv6: the note rule's, not this.
        assert_eq!(hits(src, "first_address_only"), [3, 4]);
        // One finding per line: the line's other rules ride along.
        let f = scan_source(src, Lang::C, None);
        let l3 = f.iter().find(|x| x.line == 3).unwrap();
        assert_eq!(l3.rule, "first_address_only");
        assert!(l3.also.contains(&"hostent"), "{l3:?}");
    }
}
