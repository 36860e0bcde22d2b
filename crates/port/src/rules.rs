//! The rules, as data: one table, one row per IPv4-only construct.
//!
//! Each row says what to look for ([`Matcher`]), in which languages, what makes a
//! match moot (an IPv6 counterpart in the same scope, `unless`: see below), why the
//! construct breaks on IPv6, what replaces it, and which of the eight criteria of Bouras et al. (H.323 study)
//! for a ported application it bears on. `example_bad` is flagged and `example_good`
//! is not (both C-family unless the rule is for other languages only); the tests at
//! the bottom of `scan/mod.rs` check every row with them, and with more per language.
//!
//! Sources for the replacements: RFC 3493 (basic socket interface extensions for
//! IPv6: getaddrinfo, getnameinfo, inet_pton/ntop, sockaddr_storage, in6addr_any,
//! IPV6_V6ONLY, IPV6_JOIN_GROUP…), RFC 3542 (advanced API: IPV6_TCLASS,
//! IPV6_UNICAST_HOPS), RFC 3678 (protocol-independent multicast: MCAST_JOIN_GROUP),
//! RFC 3986 §3.2.2 (bracketed IPv6 literals in URLs and host:port), RFC 4038
//! (application aspects of IPv6 transition), and the languages' own libraries.
//!
//! # Counterparts excuse by scope, not by file
//!
//! A rule's `unless` identifiers (`sockaddr_in6`, `AF_INET6`, `getaddrinfo`…) show that
//! the IPv6 side of a construct is handled, but only where they actually cover it:
//! - in the same **function** (or other top-level block: a struct or union with both
//!   `sockaddr_in` and `sockaddr_in6` members, a `#define` testing both families), or
//! - in the same **dispatch**: the innermost `if`/`else` chain around the construct
//!   (any branch or condition of it), or an enclosing `switch` with a `case` for the
//!   counterpart (`case AF_INET:` beside `case AF_INET6:`).
//!
//! A mention at file level (a global, a prototype, an `#ifdef AF_INET6`) excuses
//! nothing, and neither does one in another function. Why: porting is done function by
//! function, and a partly ported file is exactly the case where one function speaks
//! IPv6 and the others do not yet; file-wide suppression silenced all of them.
//!
//! Three constructs are decided per construct even inside a function that handles both
//! families, because the other family's code beside them does not repair them:
//! - a `struct sockaddr_in` *variable* that `recvfrom`/`accept`/`getpeername`/
//!   `getsockname` fill: the kernel writes an IPv6 peer into it too, and it is 12 bytes
//!   short (the storage must be `sockaddr_storage`);
//! - `ai_family = AF_INET` in getaddrinfo hints: it asks for IPv4 answers only;
//! - an IPv4 view of an address (a cast to `struct sockaddr_in *`, an `s_addr` compared
//!   as an integer): a `sockaddr_storage` beside it is the right buffer read the wrong
//!   way.
//!
//! These are excused by the dispatch rule only (`if (v6) hints.ai_family = AF_INET6;
//! else hints.ai_family = AF_INET;`); a function that keeps one buffer per family and
//! has the kernel fill each (`if (inet6) accept(s, &sin6, …); else accept(s, &sin, …);`)
//! is such a dispatch.
//!
//! IPv4-only calls (`inet_ntoa`, `inet_addr`, `inet_aton`, `gethostbyname`,
//! `gethostbyaddr`) and rules with no `unless` (colon splits, ICMP-only checks…) are
//! excused only as the IPv4 side of a **family dispatch**: an `if` chain or `switch`
//! whose *other* branch names IPv6 (`AF_INET6`, `sockaddr_in6`, `in6_addr`,
//! `ip6_hdr`, …), `#ifdef`s between its branches included. The same call elsewhere in
//! a function that speaks IPv6 (a debug print left outside the branches) is still
//! reported: it runs whatever the family.

use serde::Serialize;

use crate::lex::Lang;

/// How serious a finding is; SARIF's `level`.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, schemars::JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// Worth a look: may be fine (a family check, a single-answer lookup).
    Note,
    /// IPv4-specific code that needs an IPv6 path beside it or instead of it.
    Warning,
    /// Cannot work over IPv6 at all: an IPv4-only API.
    Error,
}

impl Severity {
    pub fn name(self) -> &'static str {
        match self {
            Severity::Note => "note",
            Severity::Warning => "warning",
            Severity::Error => "error",
        }
    }

    pub fn from_name(s: &str) -> Option<Severity> {
        [Severity::Note, Severity::Warning, Severity::Error]
            .into_iter()
            .find(|v| v.name() == s)
    }
}

/// What a rule looks for in a file's tokens of code (comments and string contents are
/// never taken for code).
#[derive(Clone, Copy, Debug)]
pub enum Matcher {
    /// Any of these identifiers.
    Ident(&'static [&'static str]),
    /// A dotted-quad IPv4 address inside a string literal, or `0x7f000001` as a number.
    Ipv4Literal,
    /// A character array sized for a dotted quad (15, 16 or `INET_ADDRSTRLEN`; 4 bytes
    /// of `unsigned char`) whose name says it holds an address, and `INET_ADDRSTRLEN`;
    /// any text buffer smaller than `INET6_ADDRSTRLEN` (46) that is named for an IP
    /// address or that `inet_ntoa`/`inet_ntop` output is copied into, and one smaller
    /// than 54 (`"[v6]:port"`) that a host:port format fills.
    AddrBuffer,
    /// An address kept in an integer: `u_long peer_addr;`, `uint32_t ip = …`.
    AddrInteger,
    /// `ntohl`/`htonl` applied to an address (`s_addr`, or a variable named for one).
    ByteOrderOnAddress,
    /// An address masked or shifted as a 32-bit integer, a netmask built from
    /// `0xffffffff`, octets shifted into place, a prefix length capped at 32.
    AddrArithmetic,
    /// A format reading or printing four integers joined by dots (`"%d.%d.%d.%d"`).
    DottedQuadFormat,
    /// A byte-sized variable declared for `IP_MULTICAST_TTL`/`IP_MULTICAST_LOOP`.
    MulticastByteValue,
    /// A host:port string split at a colon (`strchr(s, ':')`, `s.split(":")`, …).
    ColonSplit,
    /// A host:port string put together with a bare colon (`"%s:%d"`, `host + ":" + port`).
    ColonFormat,
    /// `sizeof(struct sockaddr)` (also through `#define SA struct sockaddr`, a typedef
    /// or a macro for the whole `sizeof`), and `struct sockaddr NAME` storage that
    /// `accept`/`recvfrom`/`getpeername`/`getsockname` fill.
    SockaddrSize,
    /// `isdigit(host[0])`, `isdigit(*host)`, `atoi(host)`, `strspn(host, "0123456789.")`
    /// where the same function hands `host` to `inet_addr`/`inet_aton`/`inet_network`.
    NumericHostTest,
    /// The first answer of a lookup only: `h_addr`, `h_addr_list[0]`, and `ai_addr` in a
    /// function that calls `getaddrinfo` and never follows `ai_next`.
    FirstAnswer,
    /// A string literal equal to one of these.
    StrEquals(&'static [&'static str]),
    /// A string literal containing one of these.
    StrContains(&'static [&'static str]),
}

/// One row of the table.
#[derive(Debug)]
pub struct Rule {
    /// Stable id, used in reports, SARIF `ruleId` and `--rule`.
    pub id: &'static str,
    /// One line: what was found.
    pub title: &'static str,
    pub severity: Severity,
    pub langs: &'static [Lang],
    pub matcher: Matcher,
    /// Identifiers whose presence in the same scope (function or dispatch: see the
    /// module documentation) shows the IPv6 side is handled too, so the IPv4 construct
    /// is one half of dual-stack code.
    pub unless: &'static [&'static str],
    /// Why it breaks on IPv6.
    pub why: &'static str,
    /// The replacement.
    pub fix: &'static str,
    /// Which of the eight criteria of Bouras et al. (H.323 study) it bears on (1-based).
    pub criterion: u8,
    pub example_bad: &'static str,
    pub example_good: &'static str,
}

const C: &[Lang] = &[Lang::C, Lang::Cpp];
const C_PY: &[Lang] = &[Lang::C, Lang::Cpp, Lang::Python];
const ALL: &[Lang] = &[Lang::C, Lang::Cpp, Lang::Python, Lang::Go, Lang::Java];

/// The rules. Order is the order of `--list-rules` and of SARIF's `rules` array.
pub static RULES: &[Rule] = &[
    Rule {
        id: "gethostbyname",
        title: "gethostbyname() resolves IPv4 addresses only",
        severity: Severity::Error,
        langs: C_PY,
        matcher: Matcher::Ident(&["gethostbyname", "gethostbyname_r", "gethostbyname2", "gethostbyname2_r", "gethostbyname_ex"]),
        unless: &[],
        why: "returns A records only (gethostbyname2 one family at a time) in a struct hostent, is not thread-safe, and is obsolete since RFC 3493; a host reachable only over IPv6 cannot be resolved",
        fix: "getaddrinfo() with ai_family = AF_UNSPEC and ai_socktype set, then try each returned address in order (RFC 3493 §6.1; Python: socket.getaddrinfo or socket.create_connection)",
        criterion: 3,
        example_bad: "struct hostent *h = gethostbyname(name);",
        example_good: "int e = getaddrinfo(name, port, &hints, &res); /* gethostbyname was here */",
    },
    Rule {
        id: "gethostbyaddr",
        title: "gethostbyaddr() looks up IPv4 addresses",
        severity: Severity::Error,
        langs: C,
        matcher: Matcher::Ident(&["gethostbyaddr", "gethostbyaddr_r"]),
        unless: &[],
        why: "takes a raw address of a given length and family through struct hostent; code written for it passes 4-byte in_addr values, and it is obsolete since RFC 3493",
        fix: "getnameinfo() on the sockaddr as received (sockaddr_storage), with NI_NAMEREQD or NI_NUMERICHOST (RFC 3493 §6.2)",
        criterion: 3,
        example_bad: "hp = gethostbyaddr((char *)&sin.sin_addr, 4, AF_INET);",
        example_good: "getnameinfo((struct sockaddr *)&ss, len, host, sizeof host, NULL, 0, 0);",
    },
    Rule {
        id: "first_address_only",
        title: "only the first address of a lookup is used",
        severity: Severity::Warning,
        langs: C,
        matcher: Matcher::FirstAnswer,
        unless: &[],
        why: "h_addr (h_addr_list[0]) takes the first answer of an IPv4-only lookup and drops the rest; after the port to getaddrinfo, each answer must be tried in turn, as the first may be of a family or on a path that does not work here (RFC 6724, RFC 8305)",
        fix: "walk every answer: for (ai = res; ai; ai = ai->ai_next) try socket() and connect(), stopping at the first that works (or race them, RFC 8305)",
        criterion: 7,
        example_bad: "memcpy(&sin.sin_addr, hp->h_addr_list[0], 4);",
        example_good: "for (ai = res; ai; ai = ai->ai_next) if (connect(s, ai->ai_addr, ai->ai_addrlen) == 0) break;",
    },
    Rule {
        id: "hostent",
        title: "struct hostent holds one family and h_addr is only the first address",
        severity: Severity::Warning,
        langs: C,
        matcher: Matcher::Ident(&["hostent", "h_addr", "h_addr_list", "h_length"]),
        unless: &[],
        why: "hostent comes from gethostbyname/gethostbyaddr: one address family per answer, and code that copies h_addr uses only the first address, with a length that is 4 for IPv4",
        fix: "struct addrinfo from getaddrinfo(), walking ai_next and copying ai_addrlen bytes of ai_addr",
        criterion: 7,
        example_bad: "memcpy(&sin.sin_addr, hp->h_addr, hp->h_length);",
        example_good: "memcpy(&ss, ai->ai_addr, ai->ai_addrlen);",
    },
    Rule {
        id: "inet_addr",
        title: "inet_addr() parses dotted-quad IPv4 text only",
        severity: Severity::Error,
        langs: C,
        matcher: Matcher::Ident(&["inet_addr", "INADDR_NONE"]),
        unless: &[],
        why: "returns a 32-bit in_addr_t and INADDR_NONE (which is also 255.255.255.255) on error; an IPv6 literal cannot be represented",
        fix: "inet_pton(AF_INET6, …) and inet_pton(AF_INET, …), or getaddrinfo() with AI_NUMERICHOST for either family (RFC 3493 §6.3)",
        criterion: 1,
        example_bad: "sin.sin_addr.s_addr = inet_addr(host);",
        example_good: "if (inet_pton(AF_INET6, host, &a6) == 1) { puts(\"inet_addr\"); }",
    },
    Rule {
        id: "inet_aton",
        title: "inet_aton() parses IPv4 text only",
        severity: Severity::Error,
        langs: C_PY,
        matcher: Matcher::Ident(&["inet_aton"]),
        unless: &[],
        why: "fills a struct in_addr; it accepts odd IPv4 forms (\"10.1\", octal) and no IPv6 literal",
        fix: "inet_pton() with the family you need, or getaddrinfo() with AI_NUMERICHOST (Python: socket.inet_pton or the ipaddress module)",
        criterion: 1,
        example_bad: "if (!inet_aton(text, &in)) return -1;",
        example_good: "if (inet_pton(AF_INET6, text, &in6) != 1) return -1;",
    },
    Rule {
        id: "numeric_host_test",
        title: "a host tested for digits to choose an IPv4 parser",
        severity: Severity::Warning,
        langs: C,
        matcher: Matcher::NumericHostTest,
        unless: &[],
        why: "isdigit(host[0]) or atoi(host) > 0 decides that a host is a dotted quad and hands it to inet_addr/inet_aton; an IPv6 literal (\"2001:db8::1\") passes the test and is mangled, or (\"::1\", \"fe80::1\") fails it and is sent to the name resolver",
        fix: "drop the test: getaddrinfo() parses numeric addresses of both families itself (AI_NUMERICHOST to accept only them), or try inet_pton(AF_INET6, …) then inet_pton(AF_INET, …)",
        criterion: 1,
        example_bad: "if (isdigit(host[0])) a.s_addr = inet_addr(host);",
        example_good: "if (isdigit(opt[0])) n = atoi(opt); e = getaddrinfo(host, NULL, &hints, &res);",
    },
    Rule {
        id: "inet_ntoa",
        title: "inet_ntoa() prints IPv4 addresses only",
        severity: Severity::Error,
        langs: C_PY,
        matcher: Matcher::Ident(&["inet_ntoa", "inet_ntoa_r"]),
        unless: &[],
        why: "takes a struct in_addr and returns a static 16-byte buffer: no IPv6, and not thread-safe",
        fix: "inet_ntop(family, …) into a buffer of INET6_ADDRSTRLEN, or getnameinfo(…, NI_NUMERICHOST) on the sockaddr (RFC 3493 §6.3; Python: socket.inet_ntop)",
        criterion: 1,
        example_bad: "printf(\"from %s\\n\", inet_ntoa(sin.sin_addr));",
        example_good: "inet_ntop(ss.ss_family, addr, buf, INET6_ADDRSTRLEN);",
    },
    Rule {
        id: "classful",
        title: "classful IPv4 address arithmetic",
        severity: Severity::Warning,
        langs: C,
        matcher: Matcher::Ident(&[
            "inet_network", "inet_makeaddr", "inet_lnaof", "inet_netof", "IN_CLASSA", "IN_CLASSB",
            "IN_CLASSC", "IN_CLASSD", "IN_CLASSA_NET", "IN_CLASSB_NET", "IN_CLASSC_NET",
            "IN_CLASSA_NSHIFT", "IN_CLASSB_NSHIFT", "IN_CLASSC_NSHIFT", "IN_MULTICAST",
            "IN_EXPERIMENTAL", "IN_BADCLASS", "IN_LOOPBACKNET",
        ]),
        unless: &[],
        why: "class A/B/C networks are an IPv4 notion (gone since CIDR, RFC 4632); IPv6 has prefixes and scopes, not classes",
        fix: "prefix lengths; for IPv6 the IN6_IS_ADDR_MULTICAST/LOOPBACK/LINKLOCAL macros (RFC 3493 §6.4) and a per-byte prefix mask",
        criterion: 1,
        example_bad: "if (IN_CLASSC(ntohl(a))) mask = IN_CLASSC_NET;",
        example_good: "if (IN6_IS_ADDR_MULTICAST(&a6)) join = 1; /* IN_CLASSD */",
    },
    Rule {
        id: "sockaddr_in",
        title: "struct sockaddr_in with no IPv6 counterpart in the same function",
        severity: Severity::Warning,
        langs: C,
        matcher: Matcher::Ident(&["sockaddr_in", "sin_addr", "sin_port", "sin_family", "sin_zero", "s_addr"]),
        unless: &["sockaddr_in6", "sockaddr_storage", "addrinfo", "AF_INET6", "PF_INET6", "sin6_addr"],
        why: "a sockaddr_in holds an IPv4 address and port only; storing peers in it, or sizing buffers with sizeof(struct sockaddr_in), truncates IPv6 peers",
        fix: "struct sockaddr_storage for any peer address, with the length returned by accept/recvfrom/getaddrinfo; sockaddr_in6 where the family is known (RFC 3493 §3.10)",
        criterion: 1,
        example_bad: "struct sockaddr_in srv; srv.sin_port = htons(port);",
        example_good: "struct sockaddr_storage peer; socklen_t len = sizeof peer; /* was sockaddr_in */",
    },
    Rule {
        id: "in_addr",
        title: "struct in_addr / in_addr_t with no in6_addr in the same function",
        severity: Severity::Warning,
        langs: C,
        matcher: Matcher::Ident(&["in_addr", "in_addr_t"]),
        unless: &["in6_addr", "sockaddr_storage", "addrinfo", "AF_INET6", "PF_INET6", "sin6_addr"],
        why: "a 32-bit IPv4 address; an IPv6 address is 128 bits",
        fix: "struct in6_addr (or keep the whole sockaddr_storage), compared with IN6_ARE_ADDR_EQUAL or memcmp",
        criterion: 1,
        example_bad: "struct in_addr peer;",
        example_good: "struct in6_addr peer; /* struct in_addr */",
    },
    Rule {
        id: "sockaddr_size",
        title: "sizeof(struct sockaddr) as an address length, or struct sockaddr as storage",
        severity: Severity::Warning,
        langs: C,
        matcher: Matcher::SockaddrSize,
        unless: &[],
        why: "struct sockaddr is 16 bytes: room for a sockaddr_in, not for a sockaddr_in6 (28 bytes). As the length given to bind/connect/accept/getsockname/recvfrom or to an allocator, or as the storage accept/recvfrom fill, it makes the kernel refuse an IPv6 address or silently truncate it",
        fix: "struct sockaddr_storage for storage, with socklen_t len = sizeof(struct sockaddr_storage) before accept/recvfrom; ai_addrlen (from getaddrinfo) or the length returned with the address for bind/connect (RFC 3493 §3.10)",
        criterion: 1,
        example_bad: "socklen_t len = sizeof(struct sockaddr); c = accept(s, &peer, &len);",
        example_good: "socklen_t len = sizeof(struct sockaddr_storage); n = sizeof(struct sockaddr *);",
    },
    Rule {
        id: "af_inet",
        title: "AF_INET/PF_INET only: no IPv6 family in the same function or dispatch",
        severity: Severity::Warning,
        langs: C_PY,
        matcher: Matcher::Ident(&["AF_INET", "PF_INET"]),
        unless: &["AF_INET6", "PF_INET6", "AF_UNSPEC", "PF_UNSPEC"],
        why: "sockets, lookups and checks fixed to the IPv4 family never carry IPv6",
        fix: "take the family from getaddrinfo's result (ai_family) with hints AF_UNSPEC; a listener can be one AF_INET6 socket with IPV6_V6ONLY = 0, or one socket per family (RFC 3493 §5.3)",
        criterion: 4,
        example_bad: "s = socket(AF_INET, SOCK_STREAM, 0);",
        example_good: "s = socket(ai->ai_family, ai->ai_socktype, ai->ai_protocol); /* AF_INET */",
    },
    Rule {
        id: "inaddr_any",
        title: "INADDR_ANY binds IPv4 only",
        severity: Severity::Warning,
        langs: C_PY,
        matcher: Matcher::Ident(&["INADDR_ANY"]),
        unless: &["in6addr_any", "IN6ADDR_ANY_INIT", "AI_PASSIVE"],
        why: "a listener bound to 0.0.0.0 accepts no IPv6 connection",
        fix: "bind an AF_INET6 socket to in6addr_any with IPV6_V6ONLY = 0 (both families), or getaddrinfo(NULL, port) with AI_PASSIVE and bind each result (RFC 3493 §3.8)",
        criterion: 6,
        example_bad: "sin.sin_addr.s_addr = htonl(INADDR_ANY);",
        example_good: "sin6.sin6_addr = in6addr_any;",
    },
    Rule {
        id: "inaddr_loopback",
        title: "INADDR_LOOPBACK is the IPv4 loopback only",
        severity: Severity::Warning,
        langs: C_PY,
        matcher: Matcher::Ident(&["INADDR_LOOPBACK"]),
        unless: &["in6addr_loopback", "IN6ADDR_LOOPBACK_INIT"],
        why: "127.0.0.1 is unreachable to IPv6-only peers and listeners",
        fix: "in6addr_loopback (::1), or getaddrinfo(\"localhost\") and try every answer",
        criterion: 1,
        example_bad: "sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);",
        example_good: "sin6.sin6_addr = in6addr_loopback;",
    },
    Rule {
        id: "broadcast",
        title: "IPv4 broadcast: IPv6 has none",
        severity: Severity::Warning,
        langs: C_PY,
        matcher: Matcher::Ident(&["INADDR_BROADCAST", "SO_BROADCAST"]),
        unless: &[],
        why: "IPv6 removed broadcast (RFC 4291 §2); discovery by broadcast finds nothing over IPv6",
        fix: "multicast: a link-local group such as ff02::1 (all nodes) or an application group, joined with IPV6_JOIN_GROUP or MCAST_JOIN_GROUP",
        criterion: 8,
        example_bad: "setsockopt(s, SOL_SOCKET, SO_BROADCAST, &on, sizeof on);",
        example_good: "setsockopt(s, IPPROTO_IPV6, IPV6_MULTICAST_HOPS, &hops, sizeof hops);",
    },
    Rule {
        id: "ipv4_literal",
        title: "hard-coded IPv4 address",
        severity: Severity::Warning,
        langs: ALL,
        matcher: Matcher::Ipv4Literal,
        unless: &[],
        why: "a fixed IPv4 address pins the program to IPv4 (and to one network)",
        fix: "a host name resolved with getaddrinfo, or configuration that takes either family; for loopback, \"localhost\" or both 127.0.0.1 and ::1",
        criterion: 3,
        example_bad: "#define SERVER \"127.0.0.1\"",
        example_good: "#define SERVER \"localhost\" /* was 127.0.0.1 */ const char *v = \"1.2.3\";",
    },
    Rule {
        id: "addr_buffer",
        title: "buffer sized for a dotted-quad IPv4 address",
        severity: Severity::Warning,
        langs: C,
        matcher: Matcher::AddrBuffer,
        unless: &["INET6_ADDRSTRLEN", "NI_MAXHOST"],
        why: "16 bytes (INET_ADDRSTRLEN) hold \"255.255.255.255\"; IPv6 text needs up to 46 (INET6_ADDRSTRLEN), with a zone more, and \"[v6]:port\" up to 54; any smaller text buffer for an address (char ip[32], char addrs[8][24]) truncates it; 4 bytes hold only an IPv4 address",
        fix: "char buf[INET6_ADDRSTRLEN] (or NI_MAXHOST for getnameinfo), INET6_ADDRSTRLEN + 8 for \"[address]:port\", and struct in6_addr / sockaddr_storage for binary addresses",
        criterion: 1,
        example_bad: "char ipstr[16];",
        example_good: "char ipstr[INET6_ADDRSTRLEN]; char nick[16];",
    },
    Rule {
        id: "addr_integer",
        title: "an address kept in an integer",
        severity: Severity::Warning,
        langs: C,
        matcher: Matcher::AddrInteger,
        unless: &[],
        why: "an IPv6 address is 128 bits; no C integer type holds it, so comparisons, hashing and masking done on u_long/uint32_t addresses cannot be ported as they are",
        fix: "struct in6_addr or sockaddr_storage, compared with memcmp/IN6_ARE_ADDR_EQUAL and masked byte by byte",
        criterion: 1,
        example_bad: "struct sockaddr_in sin; u_long peer_addr = sin.sin_addr.s_addr;",
        example_good: "struct sockaddr_in sin; u_long byte_count; int addr_type; unsigned int addr_flags;",
    },
    Rule {
        id: "byteorder_address",
        title: "ntohl()/htonl() applied to an IPv4 address",
        severity: Severity::Warning,
        langs: C,
        matcher: Matcher::ByteOrderOnAddress,
        unless: &[],
        why: "treats the address as one 32-bit number (to compare, mask or print it); an IPv6 address is 16 bytes in network order",
        fix: "keep addresses in network order as bytes: memcmp, IN6_ARE_ADDR_EQUAL, a per-byte prefix mask",
        criterion: 1,
        example_bad: "if ((ntohl(sin.sin_addr.s_addr) & mask) == net) ok = 1;",
        example_good: "hdr.len = htonl(len); /* ntohl(addr) no more */",
    },
    Rule {
        id: "addr_arithmetic",
        title: "IPv4 address arithmetic on 32-bit integers",
        severity: Severity::Warning,
        langs: C,
        matcher: Matcher::AddrArithmetic,
        unless: &[],
        why: "masking an address held in an integer, building a netmask from 0xffffffff, shifting octets into place or capping a prefix length at 32 all assume 32-bit addresses; IPv6 prefixes go to 128 bits",
        fix: "a prefix comparison over the address bytes (a per-byte mask of the prefix length, up to 128), on in6_addr or sockaddr_storage",
        criterion: 1,
        example_bad: "if ((ntohl(sin.sin_addr.s_addr) & mask) == net) ok = 1; m = 0xffffffffUL << (32 - bits);",
        example_good: "flags = opts & MASK; n = count << 2; if (len > 32) return;",
    },
    Rule {
        id: "dotted_quad_format",
        title: "IPv4 address read or printed octet by octet",
        severity: Severity::Warning,
        langs: C_PY,
        matcher: Matcher::DottedQuadFormat,
        unless: &[],
        why: "a \"%d.%d.%d.%d\" format reads or writes exactly four decimal octets; IPv6 text is hexadecimal groups separated by colons (RFC 4291 §2.2, RFC 5952)",
        fix: "inet_pton/inet_ntop (or getaddrinfo/getnameinfo with NI_NUMERICHOST) for either family; a prefix as address/len with len up to 128",
        criterion: 1,
        example_bad: "n = sscanf(line, \"%d.%d.%d.%d/%d\", &a, &b, &c, &d, &bits);",
        example_good: "n = sscanf(line, \"%d.%d.%d\", &major, &minor, &patch);",
    },
    Rule {
        id: "ip_tos",
        title: "IP_TOS set without IPV6_TCLASS",
        severity: Severity::Warning,
        langs: C_PY,
        matcher: Matcher::Ident(&["IP_TOS"]),
        unless: &["IPV6_TCLASS"],
        why: "IP_TOS marks IPv4 packets only; on an IPv6 socket the traffic class (DSCP, ECN) stays 0",
        fix: "setsockopt(IPPROTO_IPV6, IPV6_TCLASS) on AF_INET6 sockets (RFC 3542 §6.5); on a dual-stack socket set both",
        criterion: 2,
        example_bad: "setsockopt(s, IPPROTO_IP, IP_TOS, &tos, sizeof tos);",
        example_good: "setsockopt(s, IPPROTO_IPV6, IPV6_TCLASS, &tc, sizeof tc); /* IP_TOS */",
    },
    Rule {
        id: "ip_ttl",
        title: "IP_TTL set without IPV6_UNICAST_HOPS",
        severity: Severity::Warning,
        langs: C_PY,
        matcher: Matcher::Ident(&["IP_TTL"]),
        unless: &["IPV6_UNICAST_HOPS"],
        why: "IP_TTL sets the IPv4 TTL only; IPv6 packets keep the default hop limit",
        fix: "setsockopt(IPPROTO_IPV6, IPV6_UNICAST_HOPS) (RFC 3493 §5.1)",
        criterion: 1,
        example_bad: "setsockopt(s, IPPROTO_IP, IP_TTL, &ttl, sizeof ttl);",
        example_good: "setsockopt(s, IPPROTO_IPV6, IPV6_UNICAST_HOPS, &h, sizeof h);",
    },
    Rule {
        id: "ip_multicast",
        title: "IPv4 multicast options without their IPv6 twins",
        severity: Severity::Warning,
        langs: C_PY,
        matcher: Matcher::Ident(&[
            "IP_MULTICAST_IF", "IP_MULTICAST_TTL", "IP_MULTICAST_LOOP", "IP_ADD_MEMBERSHIP",
            "IP_DROP_MEMBERSHIP", "ip_mreq", "ip_mreqn", "IP_ADD_SOURCE_MEMBERSHIP",
            "IP_DROP_SOURCE_MEMBERSHIP", "ip_mreq_source",
        ]),
        unless: &["IPV6_JOIN_GROUP", "IPV6_ADD_MEMBERSHIP", "IPV6_MULTICAST_HOPS", "MCAST_JOIN_GROUP", "ipv6_mreq", "group_req"],
        why: "IPv4 multicast groups, TTL, loopback and interface options have separate IPv6 options; IPv6 also scopes groups (ff02:: link, ff05:: site)",
        fix: "IPV6_JOIN_GROUP/IPV6_LEAVE_GROUP with struct ipv6_mreq, IPV6_MULTICAST_HOPS/LOOP/IF (RFC 3493 §5.2), or the protocol-independent MCAST_JOIN_GROUP with struct group_req (RFC 3678 §5.1)",
        criterion: 8,
        example_bad: "struct ip_mreq mreq; setsockopt(s, IPPROTO_IP, IP_ADD_MEMBERSHIP, &mreq, sizeof mreq);",
        example_good: "struct group_req g; setsockopt(s, IPPROTO_IPV6, MCAST_JOIN_GROUP, &g, sizeof g);",
    },
    Rule {
        id: "ipv4_ioctl",
        title: "IPv4-only interface ioctl",
        severity: Severity::Warning,
        langs: C,
        matcher: Matcher::Ident(&[
            "SIOCGIFCONF", "SIOCGIFADDR", "SIOCSIFADDR", "SIOCGIFDSTADDR", "SIOCSIFDSTADDR",
            "SIOCGIFBRDADDR", "SIOCSIFBRDADDR", "SIOCGIFNETMASK", "SIOCSIFNETMASK",
        ]),
        unless: &["getifaddrs", "in6_ifreq", "SIOCGIFADDR_IN6"],
        why: "the ifreq address ioctls carry a struct sockaddr (16 bytes) and on Linux answer for IPv4 only: SIOCGIFCONF lists only the interfaces' IPv4 addresses, and IPv6 has no broadcast address (SIOCGIFBRDADDR) at all",
        fix: "getifaddrs(3), which lists every address of every family with its netmask and, for IPv4, broadcast or point-to-point peer; multicast to ff02::1 where the code broadcast",
        criterion: 1,
        example_bad: "if (ioctl(s, SIOCGIFCONF, (char *)&ifc) < 0) return -1;",
        example_good: "struct ifaddrs *ifa; if (getifaddrs(&ifa) == 0) { /* every family */ }",
    },
    Rule {
        id: "ipv4_sockopt",
        title: "IPv4-only IP-level socket option",
        severity: Severity::Warning,
        langs: C_PY,
        matcher: Matcher::Ident(&[
            "IP_OPTIONS", "IP_HDRINCL", "IP_RECVOPTS", "IP_RETOPTS", "IP_RECVRETOPTS",
            "IP_RECVDSTADDR", "IP_SENDSRCADDR", "IP_PKTINFO", "IP_RECVIF", "IP_MTU_DISCOVER",
            "IP_MTU", "IP_RECVERR", "IP_RECVTTL", "IP_RECVTOS", "IP_MINTTL", "IPOPT_LSRR",
            "IPOPT_SSRR", "IPOPT_RR", "IPOPT_TS", "in_pktinfo",
        ]),
        unless: &[
            "IPV6_PKTINFO", "IPV6_RECVPKTINFO", "IPV6_MTU_DISCOVER", "IPV6_MTU", "IPV6_RECVERR",
            "IPV6_HOPLIMIT", "IPV6_RECVHOPLIMIT", "IPV6_RTHDR", "IPV6_HOPOPTS", "IPV6_DSTOPTS",
            "IPV6_RECVTCLASS", "IPV6_MINHOPCOUNT", "in6_pktinfo",
        ],
        why: "IPPROTO_IP options act on IPv4 packets only: IP options and loose/strict source routing (IPOPT_LSRR/SSRR) do not exist in IPv6, and IP_PKTINFO, IP_RECVDSTADDR, IP_MTU_DISCOVER, IP_RECVERR and IP_RECVTTL have IPv6 twins that an AF_INET6 socket needs instead",
        fix: "IPV6_RECVPKTINFO/IPV6_PKTINFO with struct in6_pktinfo, IPV6_MTU_DISCOVER, IPV6_RECVERR, IPV6_RECVHOPLIMIT (RFC 3542); extension headers (IPV6_HOPOPTS, IPV6_DSTOPTS) for IP options and a routing header (IPV6_RTHDR, RFC 3542 §7) for source routing",
        criterion: 1,
        example_bad: "setsockopt(s, IPPROTO_IP, IP_OPTIONS, opts, optlen);",
        example_good: "setsockopt(s, IPPROTO_IPV6, IPV6_RECVPKTINFO, &on, sizeof on); /* IP_PKTINFO */",
    },
    Rule {
        id: "multicast_byte_value",
        title: "multicast TTL/loop value declared as a byte",
        severity: Severity::Warning,
        langs: C,
        matcher: Matcher::MulticastByteValue,
        unless: &["IPV6_MULTICAST_HOPS", "IPV6_MULTICAST_LOOP"],
        why: "IP_MULTICAST_TTL and IP_MULTICAST_LOOP take an unsigned char; their IPv6 twins IPV6_MULTICAST_HOPS and IPV6_MULTICAST_LOOP take an int (RFC 3493 §5.2), and Linux rejects a 1-byte value for them",
        fix: "declare the value as int and pass sizeof(int) with IPV6_MULTICAST_HOPS / IPV6_MULTICAST_LOOP",
        criterion: 8,
        example_bad: "u_char ttl = 8; setsockopt(s, IPPROTO_IP, IP_MULTICAST_TTL, &ttl, sizeof ttl);",
        example_good: "u_char flags = 8; setsockopt(s, IPPROTO_IP, IP_OPTIONS, &flags, 1);",
    },
    Rule {
        id: "icmp_only",
        title: "ICMP without ICMPv6",
        severity: Severity::Warning,
        langs: C_PY,
        matcher: Matcher::Ident(&["IPPROTO_ICMP", "ICMP_ECHO", "ICMP_ECHOREPLY"]),
        unless: &["IPPROTO_ICMPV6", "ICMP6_ECHO_REQUEST"],
        why: "IPv6 uses ICMPv6 (RFC 4443): other types, a checksum over a pseudo-header, and a different protocol number",
        fix: "IPPROTO_ICMPV6 sockets with ICMP6_ECHO_REQUEST/REPLY and ICMP6_FILTER",
        criterion: 1,
        example_bad: "s = socket(AF_INET6, SOCK_RAW, IPPROTO_ICMP);",
        example_good: "s = socket(AF_INET6, SOCK_RAW, IPPROTO_ICMPV6);",
    },
    Rule {
        id: "rcmd",
        title: "IPv4-only BSD r-command helpers",
        severity: Severity::Error,
        langs: C,
        matcher: Matcher::Ident(&["rcmd", "rresvport", "ruserok", "iruserok"]),
        unless: &[],
        why: "these take and return IPv4 addresses and sockets only",
        fix: "rcmd_af, rresvport_af and iruserok_sa, which take a family or a sockaddr (RFC 3493's companion extensions in BSD/glibc)",
        criterion: 1,
        example_bad: "s = rresvport(&port);",
        example_good: "s = rresvport_af(&port, AF_INET6);",
    },
    Rule {
        id: "getaddrinfo_first_only",
        title: "getaddrinfo() answers used without walking ai_next",
        severity: Severity::Note,
        langs: C,
        matcher: Matcher::Ident(&["getaddrinfo"]),
        unless: &["ai_next"],
        why: "a dual-stacked name has several answers (AAAA and A); trying only the first fails whenever that one is unreachable, which Happy Eyeballs exists to avoid (RFC 8305)",
        fix: "loop over res, res->ai_next … until a connect succeeds, or race them (RFC 8305 §5)",
        criterion: 7,
        example_bad: "getaddrinfo(h, p, &hints, &res); connect(s, res->ai_addr, res->ai_addrlen);",
        example_good: "int f(void) { getaddrinfo(h, p, &hints, &res); for (ai = res; ai; ai = ai->ai_next) {} }",
    },
    Rule {
        id: "colon_split",
        title: "host:port split at a colon",
        severity: Severity::Warning,
        langs: ALL,
        matcher: Matcher::ColonSplit,
        unless: &[],
        why: "an IPv6 literal is full of colons: \"::1\" and \"[2001:db8::1]:80\" split into nonsense; RFC 3986 §3.2.2 (after RFC 2732) puts IPv6 literals in brackets for exactly this reason",
        fix: "parse \"[v6]:port\" first (the port follows the ']'), else split at the last colon only if there is a single colon; or take host and port as separate arguments (Go: net.SplitHostPort, Python: urllib.parse, Java: java.net.URI)",
        criterion: 5,
        example_bad: "p = strchr(host, ':');",
        example_good: "p = strchr(arg, '@'); q = strchr(msg, ' '); /* strchr(arg, ':') */",
    },
    Rule {
        id: "colon_format",
        title: "host:port put together with a bare colon",
        severity: Severity::Warning,
        langs: ALL,
        matcher: Matcher::ColonFormat,
        unless: &[],
        why: "\"2001:db8::1:80\" is an address, not an address and a port; IPv6 literals must be bracketed when a port follows (RFC 3986 §3.2.2)",
        fix: "write \"[%s]:%d\" when the address is IPv6 (or always use getnameinfo's host with brackets for AF_INET6); Go: net.JoinHostPort, Python: f\"[{host}]:{port}\" for IPv6",
        criterion: 5,
        example_bad: "sprintf(buf, \"%s:%d\", host, port);",
        example_good: "fprintf(stderr, \"%s:%d: error\\n\", __FILE__, __LINE__);",
    },
    Rule {
        id: "ipv4_network_name",
        title: "network name pinned to IPv4 (\"tcp4\", \"udp4\", \"ip4\")",
        severity: Severity::Warning,
        langs: &[Lang::Go],
        matcher: Matcher::StrEquals(&["tcp4", "udp4", "ip4"]),
        unless: &[],
        why: "Go's net package dials and listens on IPv4 only with these network names",
        fix: "\"tcp\", \"udp\", \"ip\": both families, with RFC 6724 ordering and Happy Eyeballs in net.Dialer",
        criterion: 4,
        example_bad: "l, err := net.Listen(\"tcp4\", \":8080\")",
        example_good: "l, err := net.Listen(\"tcp\", \":8080\") // tcp4",
    },
    Rule {
        id: "ipv4_type",
        title: "IPv4-only address type",
        severity: Severity::Note,
        langs: &[Lang::Python, Lang::Go, Lang::Java],
        matcher: Matcher::Ident(&["IPv4Address", "IPv4Network", "IPv4Interface", "Inet4Address", "IPv4len", "To4"]),
        unless: &[],
        why: "the value is narrowed to IPv4 (Python's ipaddress.IPv4*, Java's Inet4Address, Go's To4/IPv4len); right for a family check, wrong where any address must fit",
        fix: "the family-agnostic type: ipaddress.ip_address/ip_network, java.net.InetAddress, net.IP/netip.Addr",
        criterion: 1,
        example_bad: "a = ipaddress.IPv4Address(text)",
        example_good: "a = ipaddress.ip_address(text)  # IPv4Address",
    },
    Rule {
        id: "prefer_ipv4_stack",
        title: "java.net.preferIPv4Stack",
        severity: Severity::Warning,
        langs: &[Lang::Java],
        matcher: Matcher::StrContains(&["java.net.preferIPv4Stack"]),
        unless: &[],
        why: "turns the JVM's IPv6 support off: no IPv6 socket can be opened",
        fix: "remove it; java.net.preferIPv6Addresses chooses the order instead",
        criterion: 4,
        example_bad: "System.setProperty(\"java.net.preferIPv4Stack\", \"true\");",
        example_good: "System.setProperty(\"java.net.preferIPv6Addresses\", \"true\");",
    },
];

/// Identifiers whose use shows the IPv6 side of a criterion is handled: for
/// `portcheck --criteria`, as evidence beside the findings.
pub const EVIDENCE: &[(u8, &[&str])] = &[
    (
        1,
        &[
            "AF_INET6",
            "PF_INET6",
            "sockaddr_in6",
            "in6_addr",
            "inet_pton",
            "inet_ntop",
            "getaddrinfo",
            "getnameinfo",
            "sockaddr_storage",
            "create_connection",
            "JoinHostPort",
        ],
    ),
    (
        2,
        &[
            "IPV6_FLOWINFO_SEND",
            "IPV6_FLOWLABEL_MGR",
            "IPV6_FLOWINFO",
            "sin6_flowinfo",
            "IPV6_TCLASS",
            "IPV6_RECVTCLASS",
            "in6_flowlabel_req",
        ],
    ),
    (
        4,
        &[
            "AF_UNSPEC",
            "PF_UNSPEC",
            "IPV6_V6ONLY",
            "has_dualstack_ipv6",
            "create_server",
        ],
    ),
    (
        5,
        &["SplitHostPort", "JoinHostPort", "urlsplit", "urlparse"],
    ),
    (
        6,
        &[
            "IPV6_V6ONLY",
            "IN6_IS_ADDR_V4MAPPED",
            "AI_V4MAPPED",
            "AI_ADDRCONFIG",
        ],
    ),
    (7, &["ai_next", "getaddrinfo"]),
    (
        8,
        &[
            "IPV6_JOIN_GROUP",
            "IPV6_ADD_MEMBERSHIP",
            "IPV6_MULTICAST_HOPS",
            "IPV6_MULTICAST_IF",
            "MCAST_JOIN_GROUP",
            "ipv6_mreq",
            "group_req",
        ],
    ),
];

/// The rule with this id.
pub fn rule(id: &str) -> Option<&'static Rule> {
    RULES.iter().find(|r| r.id == id)
}

/// The H.323 study's (Bouras et al.) eight criteria for judging an application ported to IPv6, in its words
/// (shortened), numbered as there.
pub const CRITERIA: [(&str, &str); 8] = [
    (
        "Ability to work with IPv6",
        "the application works seamlessly over IPv6",
    ),
    (
        "IPv6 features involved",
        "it uses IPv6's own features, e.g. the flow label",
    ),
    (
        "No dependency on IPv4 aspects",
        "e.g. no IPv4-only DNS or LDAP",
    ),
    (
        "IPv4-IPv6 simultaneous support",
        "a single version (binary) serves both",
    ),
    (
        "RFC compatibility",
        "e.g. RFC 2732 (now RFC 3986) literal addresses in URLs",
    ),
    ("Dual-stack safe", "it operates on a dual-stack system"),
    (
        "Multiple DNS answers",
        "it handles each address the resolver returns",
    ),
    (
        "Multicast, anycast",
        "it uses IPv6 multicast where it used IPv4 multicast",
    ),
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_unique_and_every_row_is_complete() {
        let mut ids: Vec<_> = RULES.iter().map(|r| r.id).collect();
        ids.sort_unstable();
        ids.dedup();
        assert_eq!(ids.len(), RULES.len());
        for r in RULES {
            assert!(
                !r.langs.is_empty() && !r.why.is_empty() && !r.fix.is_empty(),
                "{}",
                r.id
            );
            assert!((1..=8).contains(&r.criterion), "{}", r.id);
            assert!(r
                .id
                .chars()
                .all(|c| c.is_ascii_lowercase() || c == '_' || c.is_ascii_digit()));
        }
    }
}
