//! Host, host:port and URL authority strings, with IPv6 literals done right.
//!
//! The rules, and where they come from:
//!
//! - RFC 3986 §3.2.2 (which obsoletes RFC 2732): an IP literal in an authority is
//!   `"[" ( IPv6address / IPvFuture ) "]"`. Brackets hold IPv6 (or IPvFuture) only; an
//!   IPv4 address or a name is written bare. Brackets are what let a port follow an
//!   IPv6 address, whose own text is full of colons.
//! - RFC 6874 §2: a zone id follows the address inside the brackets, and in a URI its
//!   `%` separator is itself percent-encoded: `[fe80::1%25eth0]`.
//! - RFC 5952: the text form of an IPv6 address (lowercase, longest run of zero fields
//!   compressed, a single zero field never compressed, IPv4-mapped addresses as
//!   `::ffff:a.b.c.d`). `std`'s `Ipv6Addr` formatter follows those rules; the tests pin it.
//!
//! [`parse_host_port`] accepts what people type on a command line:
//!
//! | input                 | host                        | port   |
//! |-----------------------|-----------------------------|--------|
//! | `[2001:db8::1]:80`    | V6 2001:db8::1              | 80     |
//! | `[2001:db8::1]`       | V6 2001:db8::1              | none   |
//! | `[fe80::1%eth0]:80`   | V6 fe80::1, zone `eth0`     | 80     |
//! | `[fe80::1%25eth0]:80` | the same (RFC 6874 form)    | 80     |
//! | `198.18.0.1:80`       | V4                          | 80     |
//! | `198.18.0.1`          | V4                          | none   |
//! | `name:80`, `name`     | Name                        | 80/none|
//! | `2001:db8::1`, `::1`  | V6 (unbracketed, no port)   | none   |
//!
//! The last row is a trap, and the reason RFC 3986 insists on brackets: `::1:80` is not
//! "::1, port 80" but the *address* `::1:80` (that is `::0.1.0.128`) with no port, and
//! `2001:db8::1:8080` is an address too. Any unbracketed text with two or more colons
//! is read as one IPv6 address or rejected; it never yields a port.
//!
//! [`naive_split`] shows what legacy code does instead (split at the first `:`), so that
//! `dualperf interop` can show how it breaks.
//!
//! Nothing here resolves names or touches sockets: callers pass text in and get values out.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::str::FromStr;

/// The host part of a host:port string or URL authority.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Host {
    /// An IPv4 address in dotted-decimal form (RFC 3986 §3.2.2 `IPv4address`).
    V4(Ipv4Addr),
    /// An IPv6 address, with an optional zone id (RFC 6874), stored decoded (`eth0`, not
    /// `25eth0`).
    V6 {
        /// The address.
        addr: Ipv6Addr,
        /// The zone (interface name or index), if any.
        zone: Option<String>,
    },
    /// A host name, as written (not lowercased, not resolved).
    Name(String),
}

impl Host {
    /// The IP address, if the host is a literal.
    pub fn ip(&self) -> Option<IpAddr> {
        match self {
            Host::V4(a) => Some(IpAddr::V4(*a)),
            Host::V6 { addr, .. } => Some(IpAddr::V6(*addr)),
            Host::Name(_) => None,
        }
    }
}

/// Bare text: `198.18.0.1`, `2001:db8::1`, `fe80::1%eth0`, `name`. IPv6 is *not*
/// bracketed here; this is the form `inet_pton`-style parsers and `ping` accept.
impl fmt::Display for Host {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Host::V4(a) => write!(f, "{a}"),
            Host::V6 { addr, zone: None } => write!(f, "{addr}"),
            Host::V6 {
                addr,
                zone: Some(z),
            } => write!(f, "{addr}%{z}"),
            Host::Name(n) => f.write_str(n),
        }
    }
}

/// A host with an optional port.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct HostPort {
    /// The host.
    pub host: Host,
    /// The port; `None` when the text had none.
    pub port: Option<u16>,
}

impl HostPort {
    /// The RFC 3986 §3.2 authority form: IPv6 is always bracketed and a zone's `%` is
    /// written `%25`, with the zone itself percent-encoded (RFC 6874 §2), e.g.
    /// `[fe80::1%25eth0]:80`. IPv4 and names are as in `Display`.
    pub fn to_url_authority(&self) -> String {
        let mut out = match &self.host {
            Host::V6 { addr, zone } => {
                let mut s = format!("[{addr}");
                if let Some(z) = zone {
                    s.push_str("%25");
                    s.push_str(&pct_encode_zone(z));
                }
                s.push(']');
                s
            }
            other => other.to_string(),
        };
        if let Some(p) = self.port {
            out.push(':');
            out.push_str(&p.to_string());
        }
        out
    }
}

/// The canonical host:port form. With a port, IPv6 is bracketed and the zone separator
/// is a plain `%`: `[2001:db8::1]:80`, `[fe80::1%eth0]:80`, `198.18.0.1:80`, `name:80`.
/// Without a port the host is printed bare, as [`Host`]'s `Display` does: `2001:db8::1`
/// (which [`parse_host_port`] reads back as an address without a port). Use
/// [`HostPort::to_url_authority`] when the text goes into a URL.
///
/// Round trips through [`parse_host_port`], except for a zone whose name itself begins
/// with `25` followed by a non-digit, which reads back as the RFC 6874 encoded form.
impl fmt::Display for HostPort {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (&self.host, self.port) {
            (Host::V6 { .. }, Some(p)) => write!(f, "[{}]:{p}", self.host),
            (h, Some(p)) => write!(f, "{h}:{p}"),
            (h, None) => write!(f, "{h}"),
        }
    }
}

impl FromStr for HostPort {
    type Err = HostPortError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        parse_host_port(s)
    }
}

/// A URL of the form `scheme://[userinfo@]host[:port][/path?query#fragment]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Url {
    /// The scheme, lowercased (RFC 3986 §3.1: schemes are case-insensitive and the
    /// canonical form is lowercase).
    pub scheme: String,
    /// The userinfo before `@`, as written (not percent-decoded).
    pub userinfo: Option<String>,
    /// The host and port of the authority.
    pub host_port: HostPort,
    /// Everything from the first `/`, `?` or `#` after the authority, as written (not
    /// validated); empty when there is none.
    pub path_and_rest: String,
}

impl fmt::Display for Url {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}://", self.scheme)?;
        if let Some(u) = &self.userinfo {
            write!(f, "{u}@")?;
        }
        write!(
            f,
            "{}{}",
            self.host_port.to_url_authority(),
            self.path_and_rest
        )
    }
}

impl FromStr for Url {
    type Err = HostPortError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        parse_url(s)
    }
}

/// What is wrong with a host, host:port or URL string. Each message names the offending
/// text.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HostPortError {
    /// The input is empty.
    #[error("empty input: expected host, host:port or [IPv6]:port")]
    Empty,
    /// There is nothing before the `:`, or nothing between the brackets.
    #[error("empty host in '{0}'")]
    EmptyHost(String),
    /// A `[` has no matching `]`.
    #[error("'[' without a matching ']' in '{0}'")]
    UnclosedBracket(String),
    /// A `]` appears without a leading `[`.
    #[error("']' without a matching '[' in '{0}'")]
    UnopenedBracket(String),
    /// Something other than `:port` follows `]`.
    #[error(
        "unexpected '{junk}' after ']' in '{input}': only ':port' may follow a bracketed address"
    )]
    JunkAfterBracket {
        /// The whole input.
        input: String,
        /// The text after `]`.
        junk: String,
    },
    /// The text in brackets (or an unbracketed text with colons) is not an IPv6 address.
    #[error("'{0}' is not an IPv6 address")]
    BadIpv6(String),
    /// An IPv4 address in brackets.
    #[error("IPv4 address '{0}' in brackets: RFC 3986 §3.2.2 allows only IPv6 (or IPvFuture) inside '[ ]'; write it without brackets")]
    Ipv4InBrackets(String),
    /// An RFC 3986 §3.2.2 `IPvFuture` literal (`[v1.x]`), which no stack implements.
    #[error("IPvFuture literal '{0}' is not supported")]
    IpvFuture(String),
    /// A `%` with no zone after it.
    #[error("empty zone id after '%' in '{0}'")]
    EmptyZone(String),
    /// The zone id is malformed.
    #[error("bad zone id '{zone}': {reason}")]
    BadZone {
        /// The zone text as written.
        zone: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A `:` with no port after it (in host:port strings; a URL may have one).
    #[error("empty port after ':' in '{0}'")]
    EmptyPort(String),
    /// The port is not a plain decimal number.
    #[error("port '{0}' is not a decimal number")]
    BadPort(String),
    /// The port is larger than 65535.
    #[error("port {0} is out of range (0-65535)")]
    PortOutOfRange(String),
    /// Two or more colons outside brackets, and the text is not an IPv6 address.
    #[error("'{0}' has more than one ':' but is not an IPv6 address; an IPv6 literal with a port needs brackets, e.g. [2001:db8::1]:80 (RFC 3986 §3.2.2)")]
    TooManyColons(String),
    /// An unbracketed IPv6 address in a URL.
    #[error("unbracketed IPv6 address in URL authority '{0}': RFC 3986 §3.2.2 requires brackets, e.g. http://[2001:db8::1]:80/")]
    UnbracketedIpv6InUrl(String),
    /// A host name that breaks the (loose) RFC 1123 rules.
    #[error("bad host name '{name}': {reason}")]
    BadName {
        /// The name as written.
        name: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A name whose last label is a number: it would be read as an IPv4 address by
    /// `inet_aton` (and by WHATWG URL parsers), not looked up.
    #[error("'{0}' looks like an IPv4 address but is not a dotted quad of decimal octets; inet_aton reads shorthand, octal and hex forms (127.1 is 127.0.0.1, 010.0.0.1 is 8.0.0.1), so write all four octets in decimal")]
    NotDottedQuad(String),
    /// A URL without `scheme://`.
    #[error("'{0}' has no 'scheme://' prefix")]
    MissingScheme(String),
    /// A scheme that breaks RFC 3986 §3.1.
    #[error("bad scheme '{0}': RFC 3986 §3.1 allows a letter followed by letters, digits, '+', '-' or '.'")]
    BadScheme(String),
    /// Userinfo with characters RFC 3986 §3.2.1 does not allow.
    #[error("bad userinfo '{0}': RFC 3986 §3.2.1 allows unreserved, percent-encoded, sub-delims and ':'")]
    BadUserinfo(String),
}

/// Parse `[v6]:port`, `[v6]`, `v4:port`, `v4`, `name:port`, `name`, or an unbracketed IPv6
/// address without a port. See the module documentation for the table and the `::1:80`
/// trap.
///
/// Decisions:
/// - Port 0 is accepted: it is a valid `u16` and means "any port" to `bind`; callers that
///   connect should reject it. A port is plain decimal digits, no sign or spaces (leading
///   zeros are allowed, RFC 3986 §3.2.3 `port = *DIGIT`: `080` is 80); more than 65535 is
///   [`HostPortError::PortOutOfRange`]. `host:` is [`HostPortError::EmptyPort`].
/// - Zone ids: `%eth0` and the RFC 6874 encoded `%25eth0` are both accepted. A zone that
///   is all digits is an interface index and is taken as written, so `%25` is index 25.
/// - Names are checked loosely: ASCII letters, digits, `-` and `_` in dot-separated
///   labels of 1-63 characters, at most 253 characters, one optional trailing dot, no
///   label starting or ending with `-` (RFC 1123 §2.1, RFC 1035 §2.3.4). A name whose
///   last label is a number is [`HostPortError::NotDottedQuad`].
pub fn parse_host_port(s: &str) -> Result<HostPort, HostPortError> {
    parse_authority(s, Syntax::HostPort)
}

/// Parse `scheme://[userinfo@]host[:port][/path?query#fragment]`.
///
/// Stricter than [`parse_host_port`] where RFC 3986 is: an IPv6 host must be bracketed
/// (§3.2.2), and a zone id must use the `%25` separator (RFC 6874 §2), its text
/// percent-decoded. An empty port (`http://host:/`) is allowed and means no port
/// (RFC 3986 §3.2.3). The host may not be empty (so `file:///` is rejected: this is for
/// network URLs).
pub fn parse_url(s: &str) -> Result<Url, HostPortError> {
    let Some((scheme, rest)) = s.split_once("://") else {
        return Err(HostPortError::MissingScheme(s.to_string()));
    };
    if !is_scheme(scheme) {
        return Err(HostPortError::BadScheme(scheme.to_string()));
    }
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let (authority, path_and_rest) = rest.split_at_checked(end).unwrap_or((rest, ""));
    let (userinfo, host_port) = match authority.rsplit_once('@') {
        Some((u, hp)) => {
            if !u.chars().all(is_userinfo_char) {
                return Err(HostPortError::BadUserinfo(u.to_string()));
            }
            (Some(u.to_string()), hp)
        }
        None => (None, authority),
    };
    Ok(Url {
        scheme: scheme.to_ascii_lowercase(),
        userinfo,
        host_port: parse_authority(host_port, Syntax::Url)?,
        path_and_rest: path_and_rest.to_string(),
    })
}

/// What legacy code does: split at the FIRST `:`, like `strchr(s, ':')`, and call the
/// left side the host and the right side the port.
///
/// This is a demonstration of the bug, not a parser to use: `[::1]:80` splits into `"["`
/// and `":1]:80"`, `::1` into `""` and `":1"`, and `2001:db8::1` into `"2001"` and
/// `"db8::1"`. Only IPv4 and names survive it. `dualperf interop` prints these next to
/// [`parse_host_port`]'s answer.
pub fn naive_split(s: &str) -> (String, Option<String>) {
    match s.split_once(':') {
        Some((host, port)) => (host.to_string(), Some(port.to_string())),
        None => (s.to_string(), None),
    }
}

/// Which grammar is being parsed: a command-line host:port, or a URL authority.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Syntax {
    HostPort,
    Url,
}

/// Parse `host[:port]` where host may be bracketed.
fn parse_authority(s: &str, syntax: Syntax) -> Result<HostPort, HostPortError> {
    if s.is_empty() {
        return Err(match syntax {
            Syntax::HostPort => HostPortError::Empty,
            Syntax::Url => HostPortError::EmptyHost(s.to_string()),
        });
    }
    if let Some(rest) = s.strip_prefix('[') {
        // RFC 3986 §3.2.2: IP-literal = "[" ( IPv6address / IPvFuture ) "]".
        let Some((inner, after)) = rest.split_once(']') else {
            return Err(HostPortError::UnclosedBracket(s.to_string()));
        };
        let host = parse_ip_literal(inner, s, syntax)?;
        let port = if after.is_empty() {
            None
        } else if let Some(p) = after.strip_prefix(':') {
            parse_port(p, s, syntax)?
        } else {
            return Err(HostPortError::JunkAfterBracket {
                input: s.to_string(),
                junk: after.to_string(),
            });
        };
        return Ok(HostPort { host, port });
    }
    if s.contains(']') {
        return Err(HostPortError::UnopenedBracket(s.to_string()));
    }
    let colons = s.matches(':').count();
    if colons >= 2 {
        // Two or more colons outside brackets can only be one IPv6 address, never an
        // address and a port: that ambiguity is why RFC 3986 §3.2.2 requires brackets.
        let as_v6 = parse_v6_text(s, s, syntax);
        return match (syntax, as_v6) {
            (Syntax::HostPort, Ok(host)) => Ok(HostPort { host, port: None }),
            (Syntax::Url, Ok(_)) => Err(HostPortError::UnbracketedIpv6InUrl(s.to_string())),
            (_, Err(HostPortError::BadIpv6(_))) => Err(HostPortError::TooManyColons(s.to_string())),
            (_, Err(e)) => Err(e),
        };
    }
    let (host_text, port) = match s.split_once(':') {
        Some((h, p)) => (h, parse_port(p, s, syntax)?),
        None => (s, None),
    };
    if host_text.is_empty() {
        return Err(HostPortError::EmptyHost(s.to_string()));
    }
    let host = match host_text.parse::<Ipv4Addr>() {
        Ok(a) => Host::V4(a),
        Err(_) => parse_name(host_text)?,
    };
    Ok(HostPort { host, port })
}

/// The text between `[` and `]`.
fn parse_ip_literal(inner: &str, input: &str, syntax: Syntax) -> Result<Host, HostPortError> {
    if inner.is_empty() {
        return Err(HostPortError::EmptyHost(input.to_string()));
    }
    if inner.starts_with(['v', 'V']) {
        // RFC 3986 §3.2.2: IPvFuture = "v" 1*HEXDIG "." 1*( unreserved / sub-delims / ":" ).
        return Err(HostPortError::IpvFuture(inner.to_string()));
    }
    match parse_v6_text(inner, input, syntax) {
        Err(HostPortError::BadIpv6(addr_text)) if addr_text.parse::<Ipv4Addr>().is_ok() => {
            Err(HostPortError::Ipv4InBrackets(addr_text))
        }
        other => other,
    }
}

/// `addr[%zone]`, the zone per RFC 6874.
fn parse_v6_text(text: &str, input: &str, syntax: Syntax) -> Result<Host, HostPortError> {
    let (addr_text, zone_text) = match text.split_once('%') {
        Some((a, z)) => (a, Some(z)),
        None => (text, None),
    };
    let addr = addr_text
        .parse::<Ipv6Addr>()
        .map_err(|_| HostPortError::BadIpv6(addr_text.to_string()))?;
    let zone = match zone_text {
        Some(z) => Some(parse_zone(z, input, syntax)?),
        None => None,
    };
    Ok(Host::V6 { addr, zone })
}

/// The zone text after `%`, decoded.
fn parse_zone(raw: &str, input: &str, syntax: Syntax) -> Result<String, HostPortError> {
    if raw.is_empty() {
        return Err(HostPortError::EmptyZone(input.to_string()));
    }
    let bad = |reason: &str| HostPortError::BadZone {
        zone: raw.to_string(),
        reason: reason.to_string(),
    };
    // RFC 6874 §2: IPv6addrz = IPv6address "%25" ZoneID, ZoneID = 1*( unreserved /
    // pct-encoded ).
    let encoded = raw.strip_prefix("25");
    let zone = match syntax {
        Syntax::Url => match encoded {
            Some("") => return Err(HostPortError::EmptyZone(input.to_string())),
            Some(rest) => pct_decode(rest).ok_or_else(|| bad("malformed percent-encoding"))?,
            None => {
                return Err(bad(
                    "in a URL the zone separator must be written %25 (RFC 6874 §2), e.g. [fe80::1%25eth0]",
                ))
            }
        },
        // Outside URLs both `%eth0` and `%25eth0` are seen; an all-digit zone is an
        // interface index and is never decoded.
        Syntax::HostPort => match encoded {
            Some(rest) if !raw.bytes().all(|b| b.is_ascii_digit()) => {
                pct_decode(rest).ok_or_else(|| bad("malformed percent-encoding"))?
            }
            _ => raw.to_string(),
        },
    };
    if let Some(c) = zone.chars().find(|c| {
        !c.is_ascii_graphic() || matches!(c, '%' | '[' | ']' | '/' | ':' | '?' | '#' | '@')
    }) {
        return Err(bad(&format!("character {c:?} is not allowed in a zone id")));
    }
    Ok(zone)
}

/// The text after `:`.
fn parse_port(p: &str, input: &str, syntax: Syntax) -> Result<Option<u16>, HostPortError> {
    if p.is_empty() {
        // RFC 3986 §3.2.3: port = *DIGIT, so a URL may carry an empty port; a
        // command-line `host:` is much more likely a mistake.
        return match syntax {
            Syntax::Url => Ok(None),
            Syntax::HostPort => Err(HostPortError::EmptyPort(input.to_string())),
        };
    }
    // Digits only: `u16::from_str` would also take a leading '+'.
    if !p.bytes().all(|b| b.is_ascii_digit()) {
        return Err(HostPortError::BadPort(p.to_string()));
    }
    match p.parse::<u16>() {
        Ok(port) => Ok(Some(port)),
        Err(_) => Err(HostPortError::PortOutOfRange(p.to_string())),
    }
}

/// A host name, checked loosely against RFC 1123 §2.1 and RFC 1035 §2.3.4.
fn parse_name(name: &str) -> Result<Host, HostPortError> {
    let bad = |reason: String| HostPortError::BadName {
        name: name.to_string(),
        reason,
    };
    // One trailing dot marks a fully qualified name and does not count.
    let body = name.strip_suffix('.').unwrap_or(name);
    if body.is_empty() {
        return Err(bad("no labels".to_string()));
    }
    if body.len() > 253 {
        return Err(bad(format!(
            "{} characters, more than 253 (RFC 1035 §2.3.4)",
            body.len()
        )));
    }
    for label in body.split('.') {
        if label.is_empty() {
            return Err(bad(
                "empty label (a leading dot or two dots in a row)".to_string()
            ));
        }
        if label.len() > 63 {
            return Err(bad(format!(
                "label '{label}' is longer than 63 characters (RFC 1035 §2.3.4)"
            )));
        }
        if let Some(c) = label.chars().find(|c| !c.is_ascii()) {
            return Err(bad(format!(
                "non-ASCII character {c:?}: convert an internationalised name to its A-label (xn--) form first"
            )));
        }
        if let Some(c) = label
            .chars()
            .find(|c| !(c.is_ascii_alphanumeric() || *c == '-' || *c == '_'))
        {
            return Err(bad(format!(
                "character {c:?} is not allowed (RFC 1123 §2.1: letters, digits and '-'; '_' is tolerated)"
            )));
        }
        if label.starts_with('-') || label.ends_with('-') {
            return Err(bad(format!(
                "label '{label}' starts or ends with '-' (RFC 1123 §2.1)"
            )));
        }
    }
    // RFC 1123 §2.1: "a valid host name can never have the dotted-decimal form #.#.#.#,
    // since at least the highest-level component label will be alphabetic". A numeric
    // last label means an IPv4 shorthand that inet_aton would accept.
    let last = body.rsplit('.').next().unwrap_or(body);
    let hex = last
        .strip_prefix("0x")
        .or_else(|| last.strip_prefix("0X"))
        .is_some_and(|h| h.bytes().all(|b| b.is_ascii_hexdigit()));
    if hex || last.bytes().all(|b| b.is_ascii_digit()) {
        return Err(HostPortError::NotDottedQuad(name.to_string()));
    }
    Ok(Host::Name(name.to_string()))
}

/// RFC 3986 §3.1: scheme = ALPHA *( ALPHA / DIGIT / "+" / "-" / "." ).
fn is_scheme(s: &str) -> bool {
    let mut chars = s.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
}

/// RFC 3986 §3.2.1: userinfo = *( unreserved / pct-encoded / sub-delims / ":" ). The
/// `%` of pct-encoded is allowed without checking the hex digits that follow.
fn is_userinfo_char(c: char) -> bool {
    is_unreserved(c)
        || matches!(
            c,
            '%' | '!' | '$' | '&' | '\'' | '(' | ')' | '*' | '+' | ',' | ';' | '=' | ':'
        )
}

/// RFC 3986 §2.3: unreserved = ALPHA / DIGIT / "-" / "." / "_" / "~".
fn is_unreserved(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '-' | '.' | '_' | '~')
}

/// Percent-encode a zone for a URL: RFC 6874 §2, ZoneID = 1*( unreserved / pct-encoded ),
/// with uppercase hex digits (RFC 3986 §2.1).
fn pct_encode_zone(zone: &str) -> String {
    let mut out = String::with_capacity(zone.len());
    for b in zone.bytes() {
        if is_unreserved(char::from(b)) {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// Decode `%XX` escapes (RFC 3986 §2.1); `None` on a malformed escape or non-UTF-8 result.
fn pct_decode(s: &str) -> Option<String> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while let Some(&b) = bytes.get(i) {
        if b == b'%' {
            let hi = hex_value(*bytes.get(i + 1)?)?;
            let lo = hex_value(*bytes.get(i + 2)?)?;
            out.push(hi << 4 | lo);
            i += 3;
        } else {
            out.push(b);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

fn hex_value(b: u8) -> Option<u8> {
    char::from(b)
        .to_digit(16)
        .and_then(|d| u8::try_from(d).ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v6(s: &str) -> Host {
        Host::V6 {
            addr: s.parse().unwrap(),
            zone: None,
        }
    }

    fn v6z(s: &str, zone: &str) -> Host {
        Host::V6 {
            addr: s.parse().unwrap(),
            zone: Some(zone.to_string()),
        }
    }

    fn hp(host: Host, port: Option<u16>) -> HostPort {
        HostPort { host, port }
    }

    #[test]
    fn accepts_every_documented_form() {
        let cases = [
            ("[2001:db8::1]:80", hp(v6("2001:db8::1"), Some(80))),
            ("[2001:db8::1]", hp(v6("2001:db8::1"), None)),
            (
                "198.18.0.1:80",
                hp(Host::V4(Ipv4Addr::new(198, 18, 0, 1)), Some(80)),
            ),
            (
                "198.18.0.1",
                hp(Host::V4(Ipv4Addr::new(198, 18, 0, 1)), None),
            ),
            (
                "example.net:443",
                hp(Host::Name("example.net".into()), Some(443)),
            ),
            ("example.net", hp(Host::Name("example.net".into()), None)),
            ("localhost", hp(Host::Name("localhost".into()), None)),
            (
                "_sip._udp.example.net",
                hp(Host::Name("_sip._udp.example.net".into()), None),
            ),
            (
                "example.net.:53",
                hp(Host::Name("example.net.".into()), Some(53)),
            ),
            ("::1", hp(v6("::1"), None)),
            ("2001:db8::1", hp(v6("2001:db8::1"), None)),
            (
                "[::ffff:192.0.2.1]:80",
                hp(v6("::ffff:192.0.2.1"), Some(80)),
            ),
            ("[::]:0", hp(v6("::"), Some(0))),
            ("host:65535", hp(Host::Name("host".into()), Some(65535))),
            ("host:080", hp(Host::Name("host".into()), Some(80))),
        ];
        for (input, want) in cases {
            assert_eq!(parse_host_port(input), Ok(want), "{input}");
        }
    }

    #[test]
    fn unbracketed_colons_are_an_address_never_a_port() {
        // The trap RFC 3986 §3.2.2's brackets exist for: this is the address ::1:80,
        // i.e. ::0.1.0.128, with no port.
        let got = parse_host_port("::1:80").unwrap();
        assert_eq!(got, hp(v6("::0.1.0.128"), None));
        assert_eq!(got.to_string(), "::1:80");
        assert_eq!(
            parse_host_port("2001:db8::1:8080"),
            Ok(hp(v6("2001:db8::1:8080"), None))
        );
        assert_eq!(
            parse_host_port("fe80::1%eth0"),
            Ok(hp(v6z("fe80::1", "eth0"), None))
        );
    }

    #[test]
    fn zones_per_rfc_6874() {
        // Both the plain and the RFC 6874 §2 encoded separator.
        let want = hp(v6z("fe80::1", "eth0"), Some(80));
        assert_eq!(parse_host_port("[fe80::1%eth0]:80"), Ok(want.clone()));
        assert_eq!(parse_host_port("[fe80::1%25eth0]:80"), Ok(want.clone()));
        assert_eq!(want.to_string(), "[fe80::1%eth0]:80");
        assert_eq!(want.to_url_authority(), "[fe80::1%25eth0]:80");
        // An all-digit zone is an interface index, taken as written.
        assert_eq!(
            parse_host_port("[fe80::1%25]:80"),
            Ok(hp(v6z("fe80::1", "25"), Some(80)))
        );
        assert_eq!(
            parse_host_port("[fe80::1%2]"),
            Ok(hp(v6z("fe80::1", "2"), None))
        );
        // RFC 6874 §2's own example: fe80::a%en1 is written [fe80::a%25en1] in a URI.
        let url = parse_url("http://[fe80::a%25en1]/").unwrap();
        assert_eq!(url.host_port, hp(v6z("fe80::a", "en1"), None));
        assert_eq!(url.to_string(), "http://[fe80::a%25en1]/");
        // Zone characters outside `unreserved` are percent-encoded in a URL and decoded
        // when read back.
        let odd = hp(v6z("fe80::1", "eth0.100!x"), Some(1));
        assert_eq!(odd.to_url_authority(), "[fe80::1%25eth0.100%21x]:1");
        let back = parse_url(&format!("udp://{}", odd.to_url_authority())).unwrap();
        assert_eq!(back.host_port, odd);
    }

    #[test]
    fn every_error_kind() {
        use HostPortError as E;
        let s = |x: &str| x.to_string();
        let cases: Vec<(&str, HostPortError)> = vec![
            ("", E::Empty),
            (":80", E::EmptyHost(s(":80"))),
            ("[]:80", E::EmptyHost(s("[]:80"))),
            ("[::1", E::UnclosedBracket(s("[::1"))),
            ("::1]:80", E::UnopenedBracket(s("::1]:80"))),
            (
                "[::1]x",
                E::JunkAfterBracket {
                    input: s("[::1]x"),
                    junk: s("x"),
                },
            ),
            (
                "[::1]80",
                E::JunkAfterBracket {
                    input: s("[::1]80"),
                    junk: s("80"),
                },
            ),
            ("[zzz::1]:80", E::BadIpv6(s("zzz::1"))),
            ("[1::2::3]", E::BadIpv6(s("1::2::3"))),
            ("[192.0.2.1]:80", E::Ipv4InBrackets(s("192.0.2.1"))),
            ("[v1.fe]:80", E::IpvFuture(s("v1.fe"))),
            ("[fe80::1%]:80", E::EmptyZone(s("[fe80::1%]:80"))),
            (
                "[fe80::1%e th]:80",
                E::BadZone {
                    zone: s("e th"),
                    reason: s("character ' ' is not allowed in a zone id"),
                },
            ),
            (
                "[fe80::1%25e%zz]:80",
                E::BadZone {
                    zone: s("25e%zz"),
                    reason: s("malformed percent-encoding"),
                },
            ),
            ("host:", E::EmptyPort(s("host:"))),
            ("[::1]:", E::EmptyPort(s("[::1]:"))),
            ("host:http", E::BadPort(s("http"))),
            ("host:+80", E::BadPort(s("+80"))),
            ("host:-1", E::BadPort(s("-1"))),
            ("host:65536", E::PortOutOfRange(s("65536"))),
            (
                "host:99999999999999999999",
                E::PortOutOfRange(s("99999999999999999999")),
            ),
            ("host:80:90", E::TooManyColons(s("host:80:90"))),
            ("1.2.3.4:5:6", E::TooManyColons(s("1.2.3.4:5:6"))),
            ("127.1", E::NotDottedQuad(s("127.1"))),
            ("010.0.0.1", E::NotDottedQuad(s("010.0.0.1"))),
            ("0x7f.0.0.0x1", E::NotDottedQuad(s("0x7f.0.0.0x1"))),
            ("8080", E::NotDottedQuad(s("8080"))),
        ];
        for (input, want) in cases {
            assert_eq!(parse_host_port(input), Err(want), "{input}");
        }
    }

    #[test]
    fn name_errors_say_why() {
        let reason = |input: &str| match parse_host_port(input) {
            Err(HostPortError::BadName { reason, .. }) => reason,
            other => panic!("{input}: {other:?}"),
        };
        assert!(reason("a..b").contains("empty label"));
        assert!(reason(".a").contains("empty label"));
        assert!(reason(".").contains("no labels"));
        assert!(reason("-oProxyCommand").contains("starts or ends with '-'"));
        assert!(reason("bad host").contains("' '"));
        assert!(reason("a/b:80").contains("'/'"));
        assert!(reason("1.2.3.4%eth0").contains("'%'"));
        assert!(reason("bücher.example").contains("A-label"));
        assert!(reason(&"a".repeat(64)).contains("63"));
        let long = vec!["abcdefghi"; 26].join("."); // 26 * 10 - 1 = 259 characters
        assert!(reason(&long).contains("253"));
        let ok = vec!["abcdefghi"; 25].join(".") + ".abc"; // 253 characters
        assert_eq!(ok.len(), 253);
        assert!(parse_host_port(&ok).is_ok());
    }

    #[test]
    fn display_is_rfc_5952_canonical() {
        let cases = [
            // §4.1 leading zeros dropped, §4.3 lowercase.
            (
                "[2001:0DB8:0000:0000:0000:0000:0000:0001]:80",
                "[2001:db8::1]:80",
            ),
            // §4.2.2 a single zero field is not compressed.
            ("[2001:db8:0:1:1:1:1:1]", "2001:db8:0:1:1:1:1:1"),
            // §4.2.3 the longest run is compressed; on a tie, the first.
            ("[2001:0:0:1:0:0:0:1]", "2001:0:0:1::1"),
            ("[2001:db8:0:0:1:0:0:1]", "2001:db8::1:0:0:1"),
            // §5 IPv4-mapped addresses keep the dotted quad.
            ("[::ffff:c000:0201]:443", "[::ffff:192.0.2.1]:443"),
            ("198.18.0.1:80", "198.18.0.1:80"),
            ("name:80", "name:80"),
            ("[fe80::1%eth0]:80", "[fe80::1%eth0]:80"),
            // Without a port, IPv6 is printed bare.
            ("[2001:db8::1]", "2001:db8::1"),
            ("[fe80::1%25eth0]", "fe80::1%eth0"),
        ];
        for (input, want) in cases {
            assert_eq!(parse_host_port(input).unwrap().to_string(), want, "{input}");
        }
    }

    #[test]
    fn display_round_trips_through_parse() {
        let values = [
            hp(v6("2001:db8::1"), Some(80)),
            hp(v6("2001:db8::1"), None),
            hp(v6("::"), Some(0)),
            hp(v6("::ffff:192.0.2.1"), Some(9)),
            hp(v6z("fe80::1", "eth0"), Some(80)),
            hp(v6z("fe80::1", "eth0"), None),
            hp(v6z("fe80::1", "7"), Some(1)),
            hp(Host::V4(Ipv4Addr::new(198, 18, 0, 1)), Some(80)),
            hp(Host::V4(Ipv4Addr::UNSPECIFIED), None),
            hp(Host::Name("name".into()), Some(80)),
            hp(Host::Name("a-b.example".into()), None),
        ];
        for v in values {
            assert_eq!(parse_host_port(&v.to_string()), Ok(v.clone()), "{v}");
            let url = format!("tcp://{}/", v.to_url_authority());
            assert_eq!(parse_url(&url).map(|u| u.host_port), Ok(v.clone()), "{url}");
        }
    }

    #[test]
    fn url_authority_always_brackets_ipv6() {
        assert_eq!(
            hp(v6("2001:db8::1"), None).to_url_authority(),
            "[2001:db8::1]"
        );
        assert_eq!(
            hp(v6("2001:db8::1"), Some(8080)).to_url_authority(),
            "[2001:db8::1]:8080"
        );
        assert_eq!(
            hp(Host::V4(Ipv4Addr::LOCALHOST), Some(80)).to_url_authority(),
            "127.0.0.1:80"
        );
        assert_eq!(hp(Host::Name("h".into()), None).to_url_authority(), "h");
    }

    #[test]
    fn parses_urls() {
        let u = parse_url("HTTP://user:pw@[2001:db8::1]:8080/a/b?q=1#f").unwrap();
        assert_eq!(u.scheme, "http");
        assert_eq!(u.userinfo.as_deref(), Some("user:pw"));
        assert_eq!(u.host_port, hp(v6("2001:db8::1"), Some(8080)));
        assert_eq!(u.path_and_rest, "/a/b?q=1#f");
        assert_eq!(u.to_string(), "http://user:pw@[2001:db8::1]:8080/a/b?q=1#f");

        let u = parse_url("https://example.net").unwrap();
        assert_eq!(u.host_port, hp(Host::Name("example.net".into()), None));
        assert_eq!(u.path_and_rest, "");
        assert_eq!(u.userinfo, None);

        let u = parse_url("http://198.18.0.1:80?x").unwrap();
        assert_eq!(u.host_port.port, Some(80));
        assert_eq!(u.path_and_rest, "?x");

        // RFC 3986 §3.2.3: an empty port is allowed in a URL and means none.
        let u = parse_url("http://host:/").unwrap();
        assert_eq!(u.host_port, hp(Host::Name("host".into()), None));
        assert_eq!(
            "svc+v1.x://h#frag".parse::<Url>().unwrap().scheme,
            "svc+v1.x"
        );
    }

    #[test]
    fn url_errors() {
        use HostPortError as E;
        let s = |x: &str| x.to_string();
        let cases: Vec<(&str, HostPortError)> = vec![
            ("example.net:80", E::MissingScheme(s("example.net:80"))),
            ("1http://h/", E::BadScheme(s("1http"))),
            ("://h/", E::BadScheme(s(""))),
            ("http://a@b@h/", E::BadUserinfo(s("a@b"))),
            ("http://us er@h/", E::BadUserinfo(s("us er"))),
            ("http:///path", E::EmptyHost(s(""))),
            ("http://user@/x", E::EmptyHost(s(""))),
            ("http://2001:db8::1/", E::UnbracketedIpv6InUrl(s("2001:db8::1"))),
            ("http://::1:80/", E::UnbracketedIpv6InUrl(s("::1:80"))),
            ("http://h:1:2/", E::TooManyColons(s("h:1:2"))),
            (
                "http://[fe80::1%eth0]/",
                E::BadZone {
                    zone: s("eth0"),
                    reason: s("in a URL the zone separator must be written %25 (RFC 6874 §2), e.g. [fe80::1%25eth0]"),
                },
            ),
            ("http://[fe80::1%25]/", E::EmptyZone(s("[fe80::1%25]"))),
            ("http://[192.0.2.1]/", E::Ipv4InBrackets(s("192.0.2.1"))),
            ("http://h:70000/", E::PortOutOfRange(s("70000"))),
        ];
        for (input, want) in cases {
            assert_eq!(parse_url(input), Err(want), "{input}");
        }
    }

    #[test]
    fn naive_split_shows_the_bug() {
        let split = |s: &str| {
            let (h, p) = naive_split(s);
            (h, p)
        };
        assert_eq!(
            split("198.18.0.1:80"),
            ("198.18.0.1".into(), Some("80".into()))
        );
        assert_eq!(split("name"), ("name".into(), None));
        assert_eq!(split("[::1]:80"), ("[".into(), Some(":1]:80".into())));
        assert_eq!(split("::1"), ("".into(), Some(":1".into())));
        assert_eq!(split("2001:db8::1"), ("2001".into(), Some("db8::1".into())));
    }

    #[test]
    fn host_ip_and_from_str() {
        let v: HostPort = "[::1]:5201".parse().unwrap();
        assert_eq!(v.host.ip(), Some("::1".parse().unwrap()));
        assert_eq!(Host::Name("x".into()).ip(), None);
        assert_eq!(
            Host::V4(Ipv4Addr::LOCALHOST).ip(),
            Some(IpAddr::V4(Ipv4Addr::LOCALHOST))
        );
    }

    #[test]
    fn never_panics_on_odd_input() {
        let inputs = [
            "[",
            "]",
            "[]",
            "[[::1]]",
            "[::1]]",
            "%",
            "[%]",
            "[::1%",
            "[::1%%]",
            "[::1%25%]",
            "[::1%2%]",
            ":",
            "::",
            ":::",
            "[:]:",
            "\u{0}",
            "é:80",
            "[é]",
            "[::1%é]",
            "a:é",
            "[::1]:é",
            "1.2.3.4:",
            "http://",
            "http://[",
            "://",
            "x://é@[::1]",
            "a:b:c:d:e:f:g:h:i",
        ];
        for s in inputs {
            let _ = parse_host_port(s);
            let _ = parse_url(s);
            let _ = parse_url(&format!("http://{s}/"));
            let _ = naive_split(s);
        }
    }
}
