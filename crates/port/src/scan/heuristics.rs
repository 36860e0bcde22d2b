//! The heuristic matchers: what they accept is stated on each function. They look at
//! a few tokens around a candidate and at what the file as a whole says (its
//! address-holding integers, whether it is IPv4 socket code), never further.

use std::collections::HashSet;

use super::Cx;
use crate::lex::{Kind, Lang, Token};

/// Does `name` contain `w`, ignoring ASCII case? (No allocation: this runs for every
/// identifier of every file.)
pub(super) fn contains_ci(name: &str, w: &[u8]) -> bool {
    name.as_bytes()
        .windows(w.len())
        .any(|x| x.eq_ignore_ascii_case(w))
}

/// True if `s` holds a dotted quad `a.b.c.d` (each 0–255, at most 3 digits) that is not
/// part of a longer dotted number or a word: "127.0.0.1", "10.0.0.0/8" and
/// "host 192.0.2.7:80" count; "1.2.3.4.5", "v1.2.3.4" and "1.2.3" do not.
pub fn contains_dotted_quad(s: &str) -> bool {
    let b = s.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if b[i].is_ascii_digit()
            && (i == 0
                || !(b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'.' || b[i - 1] == b'_'))
        {
            if let Some(end) = dotted_quad_at(b, i) {
                let after_ok = match b.get(end) {
                    None => true,
                    Some(&c) if c.is_ascii_alphanumeric() || c == b'_' => false,
                    Some(b'.') => !b.get(end + 1).is_some_and(u8::is_ascii_digit),
                    Some(_) => true,
                };
                if after_ok {
                    return true;
                }
            }
        }
        i += 1;
    }
    false
}

pub(super) fn dotted_quad_at(b: &[u8], mut i: usize) -> Option<usize> {
    for part in 0..4 {
        let start = i;
        let mut v: u32 = 0;
        while i < b.len() && b[i].is_ascii_digit() && i - start < 4 {
            v = v * 10 + u32::from(b[i] - b'0');
            i += 1;
        }
        let len = i - start;
        if len == 0 || len > 3 || v > 255 {
            return None;
        }
        if part < 3 {
            if b.get(i) != Some(&b'.') {
                return None;
            }
            i += 1;
        }
    }
    Some(i)
}

/// ASN.1 object identifiers look like dotted quads ("2.5.29.17"): a literal whose
/// name, within the three tokens before it, says OID is one.
pub(super) fn names_an_oid(toks: &[Token<'_>], i: usize) -> bool {
    toks[i.saturating_sub(3)..i].iter().any(|t| {
        t.kind == Kind::Ident
            && t.text
                .as_bytes()
                .windows(3)
                .any(|w| w.eq_ignore_ascii_case(b"oid"))
    })
}

/// `0x7f000001` (INADDR_LOOPBACK spelt as a number), with any integer suffix.
pub(super) fn is_loopback_number(text: &str) -> bool {
    let t = text.trim_end_matches(['u', 'U', 'l', 'L']);
    t.eq_ignore_ascii_case("0x7f000001")
}

/// Does an identifier name an address? Lower-cased, it contains `addr`, `peer`,
/// `dotted`, `quad` or `ipv4`, or one of its words (split at `_` and lower→upper case
/// changes) is `ip`, `ips`, `ipbuf`, `ipstr` or `iptxt`, or ends in `ip` after one of
/// src/dst/my/client/server/remote/local/peer/from/host/bind/listen.
pub fn names_an_address(name: &str) -> bool {
    name.as_bytes()
        .windows(4)
        .any(|w| w.eq_ignore_ascii_case(b"peer"))
        || names_an_address_strictly(name)
}

/// [`names_an_address`] without `peer`, for integers and functions: an `int peer` or
/// `drop_peer(int i)` is far more often an index than an address.
pub(super) fn names_an_address_strictly(name: &str) -> bool {
    let has = |w: &[u8]| contains_ci(name, w);
    has(b"addr") || has(b"dotted") || has(b"quad") || names_ip(name)
}

/// The name says IP, not just "address": it contains `ipv4`, `inaddr` or `ipaddr`, or
/// one of its words is `ip`, `ips`, `ipbuf`, `ipstr`, `iptxt`, or ends in `ip` after
/// src/dst/my/client/server/remote/local/peer/from/to/host/bind/listen/cli.
pub(super) fn names_ip(name: &str) -> bool {
    let has = |w: &[u8]| contains_ci(name, w);
    if !has(b"ip") && !has(b"inaddr") {
        return false;
    }
    if has(b"ipv4") || has(b"inaddr") || has(b"ipaddr") {
        return true;
    }
    words(name).iter().any(|w| {
        matches!(w.as_str(), "ip" | "ips" | "ipbuf" | "ipstr" | "iptxt")
            || w.strip_suffix("ip").is_some_and(|p| {
                matches!(
                    p,
                    "src"
                        | "dst"
                        | "my"
                        | "client"
                        | "server"
                        | "srv"
                        | "remote"
                        | "local"
                        | "peer"
                        | "from"
                        | "to"
                        | "host"
                        | "bind"
                        | "listen"
                        | "cli"
                )
            })
    })
}

pub(super) fn words(name: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut prev_lower = false;
    for c in name.chars() {
        // Digits stay in their word: `ip6s` is not `ip`.
        if c == '_' {
            if !cur.is_empty() {
                out.push(std::mem::take(&mut cur));
            }
            prev_lower = false;
            continue;
        }
        if c.is_ascii_uppercase() && prev_lower && !cur.is_empty() {
            out.push(std::mem::take(&mut cur));
        }
        prev_lower = c.is_ascii_lowercase();
        cur.push(c.to_ascii_lowercase());
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

/// `char NAME[15|16|INET_ADDRSTRLEN]` (also `unsigned char`, `u_char`, `uint8_t`…),
/// `u_char NAME[4]` and the like, where NAME names an address; a `char` array of fewer
/// than 54 bytes (`"[v6]:port"`) that `sprintf` fills with an address and port; a `char`
/// array of fewer than 46 bytes (`INET6_ADDRSTRLEN`) that `inet_ntoa`/`inet_ntop` output
/// is copied into, or whose name says IP (or, in IPv4 socket code, address); for
/// `char NAME[M][N]` the string size N counts. Also `INET_ADDRSTRLEN` wherever it is
/// used, and a printf column 15 or 16 wide (`%-15s`) for an argument named for an
/// address.
pub(super) fn addr_buffers(cx: &Cx<'_>) -> Vec<(usize, usize)> {
    let toks = &cx.toks[..];
    let mut out = Vec::new();
    let formatted = address_port_buffers(toks);
    let printed = printed_address_buffers(toks);
    for (i, t) in toks.iter().enumerate() {
        // A printf column as wide as a dotted quad for an address argument.
        if t.kind == Kind::Str
            && ["%-15s", "%15s", "%-16s", "%16s"]
                .iter()
                .any(|w| t.text.contains(w))
        {
            let args = toks[i + 1..]
                .iter()
                .take_while(|a| !a.is_punct(';'))
                .take(30);
            if args
                .into_iter()
                .any(|a| a.kind == Kind::Ident && names_an_address(a.text))
            {
                out.push((t.offset, t.end));
            }
            continue;
        }
        if t.is_ident("INET_ADDRSTRLEN") {
            out.push((t.offset, t.end));
            continue;
        }
        if t.kind != Kind::Ident || !toks.get(i + 1).is_some_and(|p| p.is_punct('[')) {
            continue;
        }
        let named = names_an_address(t.text);
        let (is_formatted, is_printed) = (formatted.contains(t.text), printed.contains(t.text));
        let strictly = names_ip(t.text)
            || (cx.ipv4_file && names_an_address_strictly(t.text) && !is_a_length(t.text));
        if !(named || is_formatted || is_printed || strictly) {
            continue;
        }
        // NAME [ N ] ( [ N ] )*: the last size is the string's.
        let mut k = i + 1;
        let mut size = None;
        let mut close = None;
        while let (Some(open), Some(n), Some(c)) = (toks.get(k), toks.get(k + 1), toks.get(k + 2)) {
            if !open.is_punct('[') || !c.is_punct(']') || k > i + 9 {
                break;
            }
            size = Some(n);
            close = Some(c);
            k += 3;
        }
        let (Some(size), Some(close)) = (size, close) else {
            continue;
        };
        // The type: the three tokens before NAME, and the first three of its
        // declaration (`char host[64], ip[32];`).
        let lo = i.saturating_sub(40);
        let head = toks[lo..i]
            .iter()
            .rposition(|t| matches!(t.text, ";" | "{" | "}" | "(" | ")"))
            .map_or(lo, |p| lo + p + 1);
        let before: Vec<&str> = toks[i.saturating_sub(3)..i]
            .iter()
            .chain(toks[head..i].iter().take(3))
            .map(|t| t.text)
            .collect();
        let chars = before.iter().any(|w| {
            matches!(
                *w,
                "char" | "u_char" | "uchar" | "uint8_t" | "u_int8_t" | "BYTE" | "byte"
            )
        });
        let bytes = before.iter().any(|w| {
            matches!(
                *w,
                "u_char" | "uchar" | "uint8_t" | "u_int8_t" | "BYTE" | "byte"
            )
        }) || (before.contains(&"unsigned") && before.contains(&"char"));
        let text_ok = before.contains(&"char") && !bytes;
        let n = size.text.parse::<u32>().ok();
        let sized = match size.text {
            "15" | "16" => chars && (named || is_formatted || is_printed || strictly),
            // Four bytes named for an address: an IPv4 address in binary (`u_char
            // ip[4]`, `char serv_addr[4]`).
            "4" => chars && (named || strictly),
            _ => match n {
                Some(n) if (17..54).contains(&n) && is_formatted && chars => true,
                Some(n) if (17..46).contains(&n) => text_ok && (is_printed || strictly),
                _ => false,
            },
        };
        if sized {
            out.push((t.offset, close.end));
        }
    }
    out
}

/// Buffers that IPv4 or IPv6 address text is written into: the third argument of
/// `inet_ntop`, and the first of `strcpy`/`strncpy`/`strlcpy`/`strcat`/`sprintf`/
/// `snprintf` when their arguments call `inet_ntoa` or `inet_ntop`.
fn printed_address_buffers<'a>(toks: &[Token<'a>]) -> HashSet<&'a str> {
    let mut out = HashSet::new();
    for i in 0..toks.len() {
        if let Some(close) = call(toks, i, &["inet_ntop"]) {
            let third = toks[i + 2..close]
                .split(|a| a.is_punct(','))
                .nth(2)
                .and_then(|arg| arg.iter().find(|a| a.kind == Kind::Ident));
            if let Some(b) = third {
                out.insert(b.text);
            }
            continue;
        }
        let Some(close) = call(
            toks,
            i,
            &[
                "strcpy", "strncpy", "strlcpy", "strcat", "strlcat", "sprintf", "snprintf",
            ],
        ) else {
            continue;
        };
        let args = &toks[i + 2..close];
        if args
            .iter()
            .any(|a| a.is_ident("inet_ntoa") || a.is_ident("inet_ntop"))
        {
            if let Some(b) = args.first().filter(|b| b.kind == Kind::Ident) {
                out.insert(b.text);
            }
        }
    }
    out
}

/// Buffers that `sprintf`/`snprintf` fill with an IPv4 address and port: the first
/// argument of a call whose format is a host:port pair and whose arguments mention
/// `inet_ntoa` or an address.
pub(super) fn address_port_buffers<'a>(toks: &[Token<'a>]) -> HashSet<&'a str> {
    let mut out = HashSet::new();
    for i in 0..toks.len() {
        let Some(close) = call(toks, i, &["sprintf", "snprintf"]) else {
            continue;
        };
        let args = &toks[i + 2..close];
        let pair = args
            .iter()
            .any(|a| a.kind == Kind::Str && has_printf_colon_pair(a.text));
        let v4 = args
            .iter()
            .any(|a| a.kind == Kind::Ident && (a.text == "inet_ntoa" || names_an_address(a.text)));
        if let (true, true, Some(buf)) = (pair, v4, args.first()) {
            if buf.kind == Kind::Ident {
                out.insert(buf.text);
            }
        }
    }
    out
}

/// Byte-sized variables given to `setsockopt` as the value of `IP_MULTICAST_TTL` or
/// `IP_MULTICAST_LOOP` (`u_char ttl; setsockopt(…, IP_MULTICAST_TTL, &ttl, 1)`): their
/// declarations, where `TYPE` is `u_char`, `unsigned char`, `uchar`, `uint8_t` or
/// `u_int8_t` and the name is followed by `=`, `,` or `;`.
pub(super) fn multicast_byte_values(toks: &[Token<'_>]) -> Vec<(usize, usize)> {
    let mut names = HashSet::new();
    for i in 0..toks.len() {
        let Some(close) = call(toks, i, &["setsockopt"]) else {
            continue;
        };
        let args = &toks[i + 2..close];
        if !args
            .iter()
            .any(|a| a.is_ident("IP_MULTICAST_TTL") || a.is_ident("IP_MULTICAST_LOOP"))
        {
            continue;
        }
        for w in args.windows(2) {
            if w[0].is_punct('&') && w[1].kind == Kind::Ident {
                names.insert(w[1].text);
            }
        }
    }
    let mut out = Vec::new();
    let mut byte_decl = false;
    for (i, t) in toks.iter().enumerate() {
        if t.is_punct(';') || t.is_punct('{') || t.is_punct('}') || t.is_punct('(') {
            byte_decl = false;
        }
        if matches!(t.text, "u_char" | "uchar" | "uint8_t" | "u_int8_t")
            || (t.text == "char" && i > 0 && toks[i - 1].text == "unsigned")
        {
            byte_decl = true;
            continue;
        }
        if byte_decl
            && t.kind == Kind::Ident
            && names.contains(t.text)
            && toks
                .get(i + 1)
                .is_some_and(|n| n.is_punct('=') || n.is_punct(',') || n.is_punct(';'))
            && !toks[i - 1].is_punct('&')
        {
            out.push((t.offset, t.end));
        }
    }
    out
}

/// Integer types of 32 bits or more (the unsigned ones, `long` and `int`).
pub(super) fn is_int_type(t: &str) -> bool {
    UNSIGNED_TYPES.contains(&t) || matches!(t, "long" | "int")
}

/// Does a function's name say it deals with addresses or networks?
pub(super) fn names_a_network_function(name: &str) -> bool {
    let has = |w: &[u8]| contains_ci(name, w);
    names_ip(name)
        || [
            &b"subnet"[..],
            b"loopback",
            b"netmask",
            b"broadcast",
            b"multicast",
            b"inaddr",
            b"ipaddr",
        ]
        .iter()
        .any(|w| has(w))
}

/// A length, size or count is not an address even if named for one (`addrlen`).
/// So is `naddrs`/`num_addrs` (a count by the usual C naming).
pub(super) fn is_a_length(name: &str) -> bool {
    let l = name.to_ascii_lowercase();
    l.ends_with("len")
        || l.ends_with("length")
        || l.ends_with("size")
        || l.contains("count")
        || l.contains("num")
        || (l.len() > 2 && l.starts_with('n') && l.ends_with('s'))
}

/// Unsigned integer types of 32 bits or more: what legacy code keeps addresses in.
pub(super) const UNSIGNED_TYPES: &[&str] = &[
    "u_long",
    "ulong",
    "u_int32_t",
    "uint32_t",
    "u_int",
    "DWORD",
    "ULONG",
];

/// Is the type ending at token `i` an unsigned integer of 32 bits or more
/// (`u_long`, `uint32_t`, `unsigned long`, `unsigned int`, `unsigned`)?
pub(super) fn unsigned_type_at(toks: &[Token<'_>], i: usize) -> bool {
    let t = toks[i].text;
    UNSIGNED_TYPES.contains(&t)
        || (matches!(t, "long" | "int") && i > 0 && toks[i - 1].text == "unsigned")
}

/// Names that say what else an integer is: flags, a family, a type, a port, an
/// offset, an index (`int addr_type`, `unsigned int flags`, `uint32_t Offset`).
pub(super) fn names_something_else(name: &str) -> bool {
    let has = |w: &[u8]| contains_ci(name, w);
    is_a_length(name)
        || [
            &b"flag"[..],
            b"family",
            b"type",
            b"port",
            b"proto",
            b"offset",
            b"index",
            b"idx",
            b"section",
            b"mode",
            b"opt",
            // Booleans and choices about a family, not addresses (`has_ipv4`,
            // `skip_ipv6`, `use_v6`, `ip_version`).
            b"v6",
            b"has",
            b"skip",
            b"use",
            b"want",
            b"only",
            b"ver",
        ]
        .iter()
        .any(|w| has(w))
        || name.to_ascii_lowercase().starts_with("nr")
}

/// Integer variables of a file that hold IPv4 addresses, by name (file-wide, no
/// scopes): those assigned or initialised from an expression that mentions `s_addr`,
/// `inet_addr`, `inet_network`, `h_addr` or an `INADDR_` constant, and the unsigned
/// 32-bit parameters (not flags, lengths, offsets…) of functions whose names say they
/// handle networks (`same_subnet(u_long a, u_long b)`), or addresses in a file that
/// uses `sockaddr_in`/`in_addr` (elsewhere "addr" is as likely a memory address).
pub(super) fn address_integers<'a>(toks: &[Token<'a>], ipv4_file: bool) -> HashSet<&'a str> {
    let mut taint = HashSet::new();
    for (i, t) in toks.iter().enumerate() {
        let next_is = |c: char| toks.get(i + 1).is_some_and(|e| e.is_punct(c));
        if t.kind != Kind::Ident || !(next_is('=') || next_is('(')) || is_a_length(t.text) {
            continue;
        }
        // X = … ; where … mentions an IPv4 address source.
        if toks.get(i + 1).is_some_and(|e| e.is_punct('='))
            && !toks.get(i + 2).is_some_and(|e| e.is_punct('='))
        {
            let rhs = toks[i + 2..]
                .iter()
                .take(40)
                .take_while(|x| !x.is_punct(';') && !x.is_punct(','));
            let source = rhs.into_iter().any(|x| {
                x.kind == Kind::Ident
                    && (matches!(x.text, "s_addr" | "inet_addr" | "inet_network" | "h_addr")
                        || x.text.starts_with("INADDR_"))
            });
            let integer = i > 0 && is_int_type(toks[i - 1].text);
            let plain = i == 0 || !matches!(toks[i - 1].text, "." | ">");
            if source && (integer || plain) {
                taint.insert(t.text);
            }
        }
        // f(TYPE a, TYPE b) with f named for networks (or for addresses, in IPv4 socket
        // code): its unsigned 32-bit parameters.
        let network =
            names_a_network_function(t.text) || (ipv4_file && names_an_address_strictly(t.text));
        if network && toks.get(i + 1).is_some_and(|p| p.is_punct('(')) {
            if let Some(close) = matching_paren(toks, i + 1) {
                for j in i + 2..close.saturating_sub(1) {
                    let name = &toks[j + 1];
                    if unsigned_type_at(toks, j)
                        && name.kind == Kind::Ident
                        && !is_int_type(name.text)
                        && !names_something_else(name.text)
                    {
                        taint.insert(name.text);
                    }
                }
            }
        }
    }
    taint
}

/// An address kept in an integer:
/// - a declaration `TYPE NAME` followed by `;`, `=`, `,`, `)` or `[`, TYPE an integer
///   type of 32 bits or more (`u_long`, `unsigned long`, `uint32_t`; `in_addr_t` is
///   `in_addr`'s rule), NAME naming an address, holding one ([`address_integers`]),
///   or, in a file that uses `sockaddr_in`/`in_addr`, called `net`, `mask`,
///   `netmask`, `subnet` or `network`;
/// - a function named for addresses or networks declared with integer parameters
///   (`int same_subnet(u_long, u_long);`).
pub(super) fn addr_integers(cx: &Cx<'_>) -> Vec<(usize, usize)> {
    let toks = &cx.toks[..];
    let mut out = Vec::new();
    for (i, w) in toks.windows(3).enumerate() {
        let (ty, name, next) = (&w[0], &w[1], &w[2]);
        if ty.kind == Kind::Ident
            && name.kind == Kind::Ident
            && is_int_type(ty.text)
            && !is_int_type(name.text)
            && !is_a_length(name.text)
            && next.kind == Kind::Punct
            && matches!(next.text, ";" | "=" | "," | ")" | "[")
        {
            let l = name.text.to_ascii_lowercase();
            // `unsigned long x` counts as unsigned.
            let unsigned = unsigned_type_at(toks, i);
            let netword =
                matches!(l.as_str(), "net" | "mask" | "network") && cx.ipv4_file && unsigned;
            let netmask = l.contains("netmask") || l.contains("subnet");
            let tainted = cx.taint.contains(name.text) && unsigned;
            // "addr" alone may be a memory address: only in IPv4 socket code, or when
            // the name says IP.
            // `int o_ip = IP_DEFAULT;` where IP_DEFAULT stands for AF_INET: a family.
            let family = next.is_punct('=')
                && toks.get(i + 3).is_some_and(|v| {
                    let r = cx.st.resolve(cx.st.resolve(v.text));
                    r.starts_with("AF_") || r.starts_with("PF_") || r.contains("_V4")
                });
            let named = names_an_address_strictly(name.text)
                && (cx.ipv4_file || names_ip(name.text))
                && !names_something_else(name.text)
                && !family;
            if named || tainted || netword || netmask {
                out.push((ty.offset, name.end));
                continue;
            }
        }
        if name.kind == Kind::Ident && next.is_punct('(') && names_a_network_function(name.text) {
            let Some(close) = matching_paren(toks, i + 2) else {
                continue;
            };
            let params = &toks[i + 3..close];
            // A declaration or definition with an unsigned 32-bit parameter that is
            // not a flag or length (`same_subnet(u_long, u_long)`), not a call.
            let typed = (0..params.len()).any(|k| {
                unsigned_type_at(params, k)
                    && params
                        .get(k + 1)
                        .is_none_or(|n| n.kind != Kind::Ident || !names_something_else(n.text))
            });
            let call_like = params
                .iter()
                .any(|p| p.is_punct('.') || p.is_punct('>') || p.kind == Kind::Number);
            if typed && !call_like {
                out.push((name.offset, toks[close].end));
            }
        }
    }
    out
}

/// Is the `<< 24` at token `i` part of a statement that shifts octets into an address:
/// the statement also shifts by 16 and 8, and assigns to (or returns into) something
/// named for an address or, in IPv4 socket code, `net`/`mask`? Colour packing and byte
/// swapping shift by 24 too, into other names.
pub(super) fn octets_into_address(cx: &Cx<'_>, i: usize) -> bool {
    let toks = &cx.toks[..];
    // The statement around it, at most 64 tokens either side (bounded work per hit).
    let lo = i.saturating_sub(64);
    let start = toks[lo..i]
        .iter()
        .rposition(|t| t.is_punct(';') || t.is_punct('{') || t.is_punct('}'))
        .map_or(lo, |p| lo + p + 1);
    let end = toks[i..]
        .iter()
        .take(64)
        .position(|t| t.is_punct(';'))
        .map_or((i + 64).min(toks.len()), |p| i + p);
    let stmt = &toks[start..end];
    let shifted_by = |n: &str| {
        stmt.windows(3)
            .any(|w| w[0].is_punct('<') && w[1].is_punct('<') && w[2].text == n)
    };
    if !(shifted_by("16") && shifted_by("8")) {
        return false;
    }
    let Some(eq) = stmt.iter().position(|t| t.is_punct('=')) else {
        return false;
    };
    stmt[..eq].iter().any(|t| {
        t.kind == Kind::Ident
            && (names_an_address_strictly(t.text)
                || cx.taint.contains(t.text)
                || (cx.ipv4_file && matches!(t.text, "net" | "mask" | "netmask")))
    })
}

/// IPv4 addresses handled as 32-bit integers:
/// - an address-holding integer ([`address_integers`]) or an `s_addr` masked with
///   `&`, or shifted;
/// - `0xffffffff` shifted (a netmask from a prefix length);
/// - four octets shifted into an address (`<< 24`, see [`octets_into_address`]);
/// - a prefix length (`bits`, `prefix`, `plen`, `prefixlen`, `masklen`, `cidr`)
///   compared with 32.
pub(super) fn addr_arithmetic(cx: &Cx<'_>) -> Vec<(usize, usize)> {
    let toks = &cx.toks[..];
    let mut out = Vec::new();
    let shift = |j: usize| {
        toks.get(j)
            .is_some_and(|a| a.is_punct('<') || a.is_punct('>'))
            && toks.get(j + 1).is_some_and(|b| {
                b.text == toks[j].text && b.end == b.offset + 1 && b.offset == toks[j].end
            })
    };
    for (i, t) in toks.iter().enumerate() {
        let hit = match t.kind {
            Kind::Ident if cx.taint.contains(t.text) || t.text == "s_addr" => {
                let amp_after = toks.get(i + 1).is_some_and(|a| a.is_punct('&'))
                    && !toks
                        .get(i + 2)
                        .is_some_and(|a| a.is_punct('&') || a.is_punct('='));
                let amp_before = i >= 2
                    && toks[i - 1].is_punct('&')
                    && (toks[i - 2].kind == Kind::Ident
                        || toks[i - 2].is_punct(')')
                        || toks[i - 2].is_punct(']'))
                    && !toks[i - 2].is_punct('&');
                amp_after || amp_before || shift(i + 1)
            }
            Kind::Ident => {
                toks.get(i + 1)
                    .is_some_and(|c| c.is_punct('>') || c.is_punct('<') || c.is_punct('='))
                    && toks[i + 1..]
                        .iter()
                        .take(3)
                        .any(|n| n.kind == Kind::Number && n.text == "32")
                    && matches!(
                        t.text.to_ascii_lowercase().as_str(),
                        "bits"
                            | "prefix"
                            | "plen"
                            | "prefixlen"
                            | "prefix_len"
                            | "masklen"
                            | "mask_len"
                            | "cidr"
                    )
            }
            Kind::Number => {
                let n = t
                    .text
                    .trim_end_matches(['u', 'U', 'l', 'L'])
                    .to_ascii_lowercase();
                (n == "0xffffffff" && (shift(i + 1) || (i >= 2 && shift(i - 2))))
                    || (n == "24"
                        && i >= 2
                        && toks[i - 1].is_punct('<')
                        && toks[i - 2].is_punct('<')
                        && octets_into_address(cx, i))
            }
            _ => false,
        };
        if hit {
            out.push((t.offset, t.end));
        }
    }
    out
}

/// `ntohl(…)`/`htonl(…)` whose argument mentions `s_addr`, an address-holding integer,
/// or an identifier naming an address or netmask (`INADDR_*` constants are the `inaddr_*` rules' business).
pub(super) fn byteorder_on_address(cx: &Cx<'_>) -> Vec<(usize, usize)> {
    let toks = &cx.toks[..];
    let mut out = Vec::new();
    for (i, t) in toks.iter().enumerate() {
        let Some(close) = call(toks, i, &["ntohl", "htonl"]) else {
            continue;
        };
        let addr = toks[i + 2..close].iter().any(|a| {
            a.kind == Kind::Ident
                && !a.text.starts_with("INADDR_")
                && (a.text == "s_addr"
                    || names_an_address(a.text)
                    || cx.taint.contains(a.text)
                    || a.text.to_ascii_lowercase().contains("netmask"))
        });
        if addr {
            out.push((t.offset, toks[close].end));
        }
    }
    out
}

/// If token `i` calls one of `names` (`name(`), the index of the call's closing `)`.
pub(super) fn call(toks: &[Token<'_>], i: usize, names: &[&str]) -> Option<usize> {
    let t = toks.get(i)?;
    if t.kind != Kind::Ident || !names.contains(&t.text) || !toks.get(i + 1)?.is_punct('(') {
        return None;
    }
    matching_paren(toks, i + 1)
}

/// Index of the `)` matching the `(` at `open`, within 200 tokens.
pub(super) fn matching_paren(toks: &[Token<'_>], open: usize) -> Option<usize> {
    let mut depth = 0usize;
    for (j, t) in toks.iter().enumerate().skip(open).take(200) {
        if t.is_punct('(') {
            depth += 1;
        } else if t.is_punct(')') {
            depth = depth.saturating_sub(1);
            if depth == 0 {
                return Some(j);
            }
        }
    }
    None
}

pub(super) fn is_colon_literal(t: &Token<'_>) -> bool {
    matches!(t.kind, Kind::Str | Kind::Char) && t.text == ":"
}

/// Splitting at a colon: a call whose arguments include the literal `':'` or `":"`
/// (or, for `strtok`/`strsep`/`strpbrk`/`strcspn`, a short delimiter set containing a
/// colon), to one of C's `strchr strrchr index rindex memchr strtok strtok_r strsep
/// strpbrk strcspn`, C++'s `find rfind find_first_of find_last_of`, Python's `split
/// rsplit partition rpartition index rindex find rfind`, Go's `strings.Split SplitN
/// Index LastIndex IndexByte LastIndexByte Cut`, Java's `split indexOf lastIndexOf`;
/// and C's `sscanf` with a `%[^:]` conversion.
pub(super) fn colon_splits(toks: &[Token<'_>], lang: Lang) -> Vec<(usize, usize)> {
    let names: &[&str] = match lang {
        Lang::C => &[
            "strchr", "strrchr", "index", "rindex", "memchr", "strtok", "strtok_r", "strsep",
            "strpbrk", "strcspn",
        ],
        Lang::Cpp => &[
            "strchr",
            "strrchr",
            "index",
            "rindex",
            "memchr",
            "strtok",
            "strtok_r",
            "strsep",
            "strpbrk",
            "strcspn",
            "find",
            "rfind",
            "find_first_of",
            "find_last_of",
        ],
        Lang::Python => &[
            "split",
            "rsplit",
            "partition",
            "rpartition",
            "index",
            "rindex",
            "find",
            "rfind",
        ],
        Lang::Go => &[
            "Split",
            "SplitN",
            "Index",
            "LastIndex",
            "IndexByte",
            "LastIndexByte",
            "Cut",
        ],
        Lang::Java => &["split", "indexOf", "lastIndexOf"],
    };
    let sets = ["strtok", "strtok_r", "strsep", "strpbrk", "strcspn"];
    let mut out = Vec::new();
    for (i, t) in toks.iter().enumerate() {
        let sscanf = t.text == "sscanf" && matches!(lang, Lang::C | Lang::Cpp);
        if t.kind != Kind::Ident
            || !(sscanf || names.contains(&t.text))
            || !toks.get(i + 1).is_some_and(|p| p.is_punct('('))
        {
            continue;
        }
        let Some(close) = matching_paren(toks, i + 1) else {
            continue;
        };
        let args = &toks[i + 2..close];
        let hit = if sscanf && matches!(lang, Lang::C | Lang::Cpp) {
            args.iter()
                .any(|a| a.kind == Kind::Str && a.text.contains("%[^:]"))
        } else if names.contains(&t.text) {
            args.iter().any(|a| {
                is_colon_literal(a)
                    || (sets.contains(&t.text)
                        && a.kind == Kind::Str
                        && a.text.contains(':')
                        && a.text.chars().count() <= 6)
            })
        } else {
            false
        };
        if hit {
            out.push((t.offset, toks[close].end));
        }
    }
    out
}

/// Putting host and port together with a bare colon, when the tokens around it (eight
/// before, twelve after, and the literal itself) mention a host, address, peer, server,
/// endpoint or port, and not `__FILE__`/`__LINE__` (a "file:line" message):
/// - a string literal with a printf conversion, a colon and another conversion
///   (`"%s:%d"`, `"%s:%u"`, `"%.*s:%hu"`, `"%s:%s"`), or Python/Java-style `}:{`
///   (`"{}:{}"`, `f"{host}:{port}"`);
/// - a literal `":"` joined by `+` (Python, Go, Java, C++ strings) or `<<` (C++ streams).
pub(super) fn colon_formats(toks: &[Token<'_>], lang: Lang) -> Vec<(usize, usize)> {
    let _ = lang;
    let mut out = Vec::new();
    for (i, t) in toks.iter().enumerate() {
        if t.kind != Kind::Str {
            continue;
        }
        let format = has_printf_colon_pair(t.text) || t.text.contains("}:{");
        let joined = t.text == ":" && {
            let before = i.checked_sub(1).and_then(|j| toks.get(j));
            let after = toks.get(i + 1);
            let op = |x: Option<&Token<'_>>, plus_at: usize| {
                x.is_some_and(|x| x.is_punct('+'))
                    || (x.is_some_and(|x| x.is_punct('<'))
                        && toks.get(plus_at).is_some_and(|y| y.is_punct('<')))
            };
            op(before, i.wrapping_sub(2)) || op(after, i + 2)
        };
        if !(format || joined) {
            continue;
        }
        let lo = i.saturating_sub(8);
        let hi = (i + 13).min(toks.len());
        let window = &toks[lo..hi];
        if window
            .iter()
            .any(|w| w.is_ident("__FILE__") || w.is_ident("__LINE__"))
        {
            continue;
        }
        let hostish = |s: &str| {
            let l = s.to_ascii_lowercase();
            ["host", "port", "server", "endpoint", "remote", "dest"]
                .iter()
                .any(|w| l.contains(w))
                || names_an_address(s)
        };
        let context = window.iter().any(|w| match w.kind {
            Kind::Ident => hostish(w.text),
            Kind::Str => w.text.contains('{') && hostish(w.text),
            _ => false,
        });
        if context {
            out.push((t.offset, t.end));
        }
    }
    out
}

/// Four integer conversions joined by dots (`"%d.%d.%d.%d"`, `"%u.%u.%u.%u/%d"`,
/// `"%hhu.%hhu.%hhu.%hhu"`): an IPv4 address read or printed octet by octet.
pub(super) fn has_dotted_quad_format(s: &str) -> bool {
    const QUADS: [&str; 9] = [
        "%d.%d.%d.%d",
        "%u.%u.%u.%u",
        "%i.%i.%i.%i",
        "%hhu.%hhu.%hhu.%hhu",
        "%hu.%hu.%hu.%hu",
        "%hhd.%hhd.%hhd.%hhd",
        "%x.%x.%x.%x",
        "%3d.%3d.%3d.%3d",
        "%03d.%03d.%03d.%03d",
    ];
    s.contains("%") && QUADS.iter().any(|q| s.contains(q))
}

/// `%…s:%…[diuxs]` somewhere in a printf format.
pub(super) fn has_printf_colon_pair(s: &str) -> bool {
    let b = s.as_bytes();
    let conv_end = |mut j: usize| -> Option<usize> {
        // b[j] == '%': flags, width, precision, length, conversion.
        j += 1;
        while j < b.len() && b"-+ #0123456789.*".contains(&b[j]) {
            j += 1;
        }
        while j < b.len() && b"hlzjtqL".contains(&b[j]) {
            j += 1;
        }
        b.get(j)
            .map(|&c| (j, c))
            .filter(|&(_, c)| b"diusxX".contains(&c))
            .map(|(j, _)| j + 1)
    };
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            if b.get(i + 1) == Some(&b'%') {
                i += 2;
                continue;
            }
            if let Some(e) = conv_end(i) {
                if b[e - 1] == b's'
                    && b.get(e) == Some(&b':')
                    && b.get(e + 1) == Some(&b'%')
                    && conv_end(e + 1).is_some()
                {
                    return true;
                }
                i = e;
                continue;
            }
        }
        i += 1;
    }
    false
}
