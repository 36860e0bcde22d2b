//! Destination address selection: RFC 6724 §6, with the policy table of §2.1 and the
//! scopes of §3, plus `/etc/gai.conf` as glibc's `getaddrinfo` reads it.
//!
//! Given the destinations a name resolved to, each with the source address the kernel
//! would pick for it, [`sort_destinations`] orders them the way a conforming
//! `getaddrinfo` does, and [`compare`] says which rule decided between two of them.
//!
//! Attributes come from a [`PolicyTable`]: `precedence` and `label` by longest-prefix
//! match over IPv6 prefixes, IPv4 addresses being looked up as IPv4-mapped
//! `::ffff:a.b.c.d` (§2.1, §6), and a scope per §3.1 (IPv6) and §3.2 (IPv4).
//!
//! Rules implemented: 1 (avoid unusable destinations), 2 (matching scope), 5 (matching
//! label), 6 (higher precedence), 8 (smaller scope), 9 (longest matching prefix), 10
//! (keep the order). Rules 3 (avoid deprecated source addresses), 4 (prefer home
//! addresses) and 7 (prefer native transport) need kernel knowledge a [`Candidate`]
//! does not carry (address flags, Mobile IPv6 state, whether an interface is a tunnel),
//! so they are skipped, as most resolver libraries skip them.
//!
//! Two tables are provided. [`PolicyTable::rfc6724`] is the table of RFC 6724 §2.1;
//! [`PolicyTable::glibc_default`] is what glibc uses when `/etc/gai.conf` is absent,
//! which is still RFC 3484's table (with ULA, site-local and Teredo labels added). They
//! disagree about ULA, 6to4 and Teredo destinations against IPv4; the tests show how.
//! (draft-ietf-6man-rfc6724-update would raise ULA above IPv4; not implemented.)

use std::cmp::Ordering;
use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// One row of an RFC 6724 §2.1 policy table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct PolicyEntry {
    /// The prefix (bits beyond `len` are ignored).
    pub prefix: Ipv6Addr,
    /// The prefix length, 0-128.
    pub len: u8,
    /// Precedence: higher sorts first (rule 6).
    pub precedence: u32,
    /// Label: a source and destination with equal labels are preferred (rule 5).
    pub label: u32,
}

/// One prefix → value row of a single-valued table (labels, precedences, IPv4 scopes),
/// the form `gai.conf` edits. IPv4 prefixes are IPv4-mapped: 169.254.0.0/16 is
/// `::ffff:169.254.0.0/112`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct PrefixValue {
    /// The prefix.
    pub prefix: Ipv6Addr,
    /// The prefix length, 0-128.
    pub len: u8,
    /// The value.
    pub value: u32,
}

/// An address scope: the 4-bit values of RFC 4291 §2.7, which RFC 6724 §3.1 uses for
/// unicast addresses too. Smaller is narrower.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
pub struct Scope(pub u8);

impl Scope {
    /// 0x1.
    pub const INTERFACE_LOCAL: Scope = Scope(0x1);
    /// 0x2: fe80::/10, ::1 (RFC 4007 §4), 127.0.0.0/8 and 169.254.0.0/16 (RFC 6724 §3.2).
    pub const LINK_LOCAL: Scope = Scope(0x2);
    /// 0x4.
    pub const ADMIN_LOCAL: Scope = Scope(0x4);
    /// 0x5: fec0::/10 (deprecated by RFC 3879, still classified by RFC 6724 §3.1).
    pub const SITE_LOCAL: Scope = Scope(0x5);
    /// 0x8.
    pub const ORGANIZATION_LOCAL: Scope = Scope(0x8);
    /// 0xe: everything else, including ULAs (RFC 4193 §3.3) and private IPv4 (RFC 6724 §3.2).
    pub const GLOBAL: Scope = Scope(0xe);
}

impl fmt::Display for Scope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = match *self {
            Scope::INTERFACE_LOCAL => "interface-local",
            Scope::LINK_LOCAL => "link-local",
            Scope::ADMIN_LOCAL => "admin-local",
            Scope::SITE_LOCAL => "site-local",
            Scope::ORGANIZATION_LOCAL => "organization-local",
            Scope::GLOBAL => "global",
            _ => "scope",
        };
        write!(f, "{name}({:#x})", self.0)
    }
}

/// `::ffff:0:0`, the IPv4-mapped prefix (RFC 4291 §2.5.5.2), as bits.
const MAPPED: u128 = 0xffff_0000_0000;

/// The RFC 6724 §2.1 default policy table.
pub const RFC6724_POLICY: [PolicyEntry; 9] = [
    row(1, 128, 50, 0),            // ::1/128, loopback
    row(0, 0, 40, 1),              // ::/0, everything else
    row(MAPPED, 96, 35, 4),        // ::ffff:0:0/96, IPv4
    row(0x2002 << 112, 16, 30, 2), // 2002::/16, 6to4
    row(0x2001 << 112, 32, 5, 5),  // 2001::/32, Teredo
    row(0xfc00 << 112, 7, 3, 13),  // fc00::/7, ULA
    row(0, 96, 1, 3),              // ::/96, IPv4-compatible (deprecated)
    row(0xfec0 << 112, 10, 1, 11), // fec0::/10, site-local (deprecated)
    row(0x3ffe << 112, 16, 1, 12), // 3ffe::/16, 6bone (returned)
];

/// glibc's defaults when `/etc/gai.conf` is absent, as the commented-out defaults in
/// Debian's `/etc/gai.conf` list them and `sysdeps/posix/getaddrinfo.c` holds them in
/// `default_labels` and `default_precedence`.
///
/// - Labels: RFC 3484 §2.1's five (::1/128 0, ::/0 1, 2002::/16 2, ::/96 3,
///   ::ffff:0:0/96 4) plus glibc's fec0::/10 5, fc00::/7 6 and Teredo 2001::/32 7, added
///   so that site-local/ULA IPv6 is not preferred over NATed IPv4 (the reason given in
///   gai.conf's comment).
/// - Precedences: RFC 3484 §2.1's five (::1/128 50, ::/0 40, 2002::/16 30, ::/96 20,
///   ::ffff:0:0/96 10). glibc has no precedence row for fec0::/10, fc00::/7 or
///   2001::/32, so those take ::/0's 40, which is what the rows below say.
pub const GLIBC_DEFAULT_POLICY: [PolicyEntry; 8] = [
    row(1, 128, 50, 0),            // ::1/128
    row(0x2002 << 112, 16, 30, 2), // 2002::/16
    row(0, 96, 20, 3),             // ::/96
    row(MAPPED, 96, 10, 4),        // ::ffff:0:0/96
    row(0xfec0 << 112, 10, 40, 5), // fec0::/10 (label only in glibc)
    row(0xfc00 << 112, 7, 40, 6),  // fc00::/7 (label only in glibc)
    row(0x2001 << 112, 32, 40, 7), // 2001::/32 (label only in glibc)
    row(0, 0, 40, 1),              // ::/0
];

/// IPv4 scopes per RFC 6724 §3.2: auto-configuration addresses (169.254/16) and loopback
/// (127/8) are link-local, all others (RFC 1918 private ones included) global. glibc's
/// defaults are the same (`scopev4` in gai.conf's comments), and so is their form.
pub const DEFAULT_SCOPES_V4: [PrefixValue; 3] = [
    pv(MAPPED | 0xa9fe_0000, 112, 2), // ::ffff:169.254.0.0/112
    pv(MAPPED | 0x7f00_0000, 104, 2), // ::ffff:127.0.0.0/104
    pv(MAPPED, 96, 0xe),              // ::ffff:0.0.0.0/96
];

const fn row(prefix: u128, len: u8, precedence: u32, label: u32) -> PolicyEntry {
    PolicyEntry {
        prefix: Ipv6Addr::from_bits(prefix),
        len,
        precedence,
        label,
    }
}

const fn pv(prefix: u128, len: u8, value: u32) -> PrefixValue {
    PrefixValue {
        prefix: Ipv6Addr::from_bits(prefix),
        len,
        value,
    }
}

/// A policy table: labels, precedences and IPv4 scopes, each a longest-prefix-match list.
///
/// Labels and precedences are kept as separate lists because `gai.conf` replaces them
/// separately (see [`parse_gai_conf`]). An address matching no row gets label
/// `u32::MAX`, precedence 0 and (IPv4) global scope; every built-in table has a `/0`
/// row, so that only happens with hand-made tables.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PolicyTable {
    labels: Vec<PrefixValue>,
    precedences: Vec<PrefixValue>,
    scopes_v4: Vec<PrefixValue>,
}

impl PolicyTable {
    /// RFC 6724 §2.1's table with §3.2's IPv4 scopes.
    pub fn rfc6724() -> Self {
        Self::from_entries(&RFC6724_POLICY)
    }

    /// glibc's built-in table (see [`GLIBC_DEFAULT_POLICY`]) with its default IPv4 scopes.
    pub fn glibc_default() -> Self {
        Self::from_entries(&GLIBC_DEFAULT_POLICY)
    }

    /// A table from RFC 6724-style rows, with the default IPv4 scopes.
    pub fn from_entries(entries: &[PolicyEntry]) -> Self {
        let mut table = PolicyTable {
            labels: Vec::new(),
            precedences: Vec::new(),
            scopes_v4: DEFAULT_SCOPES_V4.to_vec(),
        };
        for e in entries {
            upsert(&mut table.labels, e.prefix, e.len, e.label);
            upsert(&mut table.precedences, e.prefix, e.len, e.precedence);
        }
        table
    }

    /// The label rows.
    pub fn labels(&self) -> &[PrefixValue] {
        &self.labels
    }

    /// The precedence rows.
    pub fn precedences(&self) -> &[PrefixValue] {
        &self.precedences
    }

    /// The IPv4 scope rows, with IPv4-mapped prefixes.
    pub fn scopes_v4(&self) -> &[PrefixValue] {
        &self.scopes_v4
    }

    /// Label(A), by longest matching prefix; IPv4 as IPv4-mapped (RFC 6724 §2.1).
    pub fn label(&self, addr: IpAddr) -> u32 {
        lookup(&self.labels, addr).unwrap_or(u32::MAX)
    }

    /// Precedence(A), by longest matching prefix; IPv4 as IPv4-mapped (RFC 6724 §2.1).
    pub fn precedence(&self, addr: IpAddr) -> u32 {
        lookup(&self.precedences, addr).unwrap_or(0)
    }

    /// Scope(A): RFC 6724 §3.1 for IPv6, this table's IPv4 scope rows (§3.2 by default)
    /// for IPv4 and IPv4-mapped addresses.
    pub fn scope(&self, addr: IpAddr) -> Scope {
        scope_in(&self.scopes_v4, addr)
    }
}

/// Scope(A) with the default IPv4 scopes: RFC 6724 §3.1 for IPv6 (multicast scope field;
/// ::1 and fe80::/10 link-local; fec0::/10 site-local; the rest, ULAs included, global),
/// §3.2 for IPv4 (127/8 and 169.254/16 link-local, the rest global).
pub fn scope(addr: IpAddr) -> Scope {
    scope_in(&DEFAULT_SCOPES_V4, addr)
}

/// The number of leading bits `a` and `b` share (RFC 6724 §2.2 without the cap at the
/// source's prefix length; [`compare`] applies that). Addresses of different families
/// share 0 bits; an IPv4-mapped IPv6 address counts as IPv4.
pub fn common_prefix_len(a: IpAddr, b: IpAddr) -> u8 {
    let bits = match (canonical(a), canonical(b)) {
        (IpAddr::V4(x), IpAddr::V4(y)) => (u32::from(x) ^ u32::from(y)).leading_zeros(),
        (IpAddr::V6(x), IpAddr::V6(y)) => (u128::from(x) ^ u128::from(y)).leading_zeros(),
        _ => 0,
    };
    u8::try_from(bits).unwrap_or(u8::MAX)
}

/// The prefix length assumed for an IPv6 source in rule 9. RFC 6724 §2.2 caps
/// CommonPrefixLen at "the length of S's prefix (i.e., the portion of the address not
/// including the interface ID)", e.g. CommonPrefixLen(fe80::1, fe80::2) = 64; a
/// [`Candidate`] does not carry the on-link prefix, so the usual 64-bit interface ID
/// (RFC 4291 §2.5.1) is assumed.
pub const SOURCE_PREFIX_LEN_V6: u8 = 64;

/// A destination and the source address the kernel would use to reach it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Candidate {
    /// The destination.
    pub dst: IpAddr,
    /// Source(D); `None` when there is none (no route), which rule 1 sorts last.
    pub src: Option<IpAddr>,
}

/// The RFC 6724 §6 rule that decided a comparison.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
pub enum Rule {
    /// Rule 1: avoid unusable destinations.
    AvoidUnusable,
    /// Rule 2: prefer matching scope.
    MatchingScope,
    /// Rule 5: prefer matching label.
    MatchingLabel,
    /// Rule 6: prefer higher precedence.
    HigherPrecedence,
    /// Rule 8: prefer smaller scope.
    SmallerScope,
    /// Rule 9: use longest matching prefix.
    LongestMatchingPrefix,
    /// Rule 10: otherwise, leave the order unchanged.
    OriginalOrder,
}

impl Rule {
    /// The rule's number in RFC 6724 §6 and a short description.
    pub fn describe(self) -> (u8, &'static str) {
        match self {
            Rule::AvoidUnusable => (1, "avoid unusable destinations"),
            Rule::MatchingScope => (2, "matching scope"),
            Rule::MatchingLabel => (5, "matching label"),
            Rule::HigherPrecedence => (6, "higher precedence"),
            Rule::SmallerScope => (8, "smaller scope"),
            Rule::LongestMatchingPrefix => (9, "longest matching prefix"),
            Rule::OriginalOrder => (10, "original order"),
        }
    }
}

/// `rule 6: higher precedence`.
impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (number, what) = self.describe();
        write!(f, "rule {number}: {what}")
    }
}

/// Compare two candidates per RFC 6724 §6: `Less` means `a` goes first. Returns the rule
/// that decided; `(Equal, OriginalOrder)` when none did (rule 10).
///
/// - Rules 2, 5 and 9 need both sources; when either is missing (rule 1 did not decide
///   because both are missing) they are skipped.
/// - Rules 3, 4 and 7 are skipped (see the module documentation).
/// - Rule 9 applies to IPv6 pairs only, with CommonPrefixLen capped at
///   [`SOURCE_PREFIX_LEN_V6`]. RFC 6724 §6 applies it to IPv4 pairs as well, but without
///   the source's subnet mask the IPv4 comparison only measures how numerically close
///   two unrelated addresses are (a 10.x source "prefers" 11.x servers). glibc counts
///   IPv4 common bits only when the destination is on the source's subnet (an on-link
///   peer), and Go, c-ares, Android's bionic and the BSDs skip IPv4 outright; we skip it
///   too, which matches glibc for every off-link destination.
pub fn compare(a: &Candidate, b: &Candidate, table: &PolicyTable) -> (Ordering, Rule) {
    let (da, db) = (canonical(a.dst), canonical(b.dst));
    let (sa, sb) = (a.src.map(canonical), b.src.map(canonical));

    // Rule 1: avoid unusable destinations. "If DB is known to be unreachable or if
    // Source(DB) is undefined, then prefer DA."
    if let Some(o) = prefer(sa.is_some(), sb.is_some()) {
        return (o, Rule::AvoidUnusable);
    }
    let (scope_da, scope_db) = (table.scope(da), table.scope(db));

    if let (Some(sa), Some(sb)) = (sa, sb) {
        // Rule 2: prefer matching scope. "If Scope(DA) = Scope(Source(DA)) and
        // Scope(DB) <> Scope(Source(DB)), then prefer DA."
        let match_a = scope_da == table.scope(sa);
        let match_b = scope_db == table.scope(sb);
        if let Some(o) = prefer(match_a, match_b) {
            return (o, Rule::MatchingScope);
        }
        // Rule 3 (avoid deprecated addresses) and rule 4 (prefer home addresses) need
        // address flags we do not have: skipped.

        // Rule 5: prefer matching label. "If Label(Source(DA)) = Label(DA) and
        // Label(Source(DB)) <> Label(DB), then prefer DA."
        let match_a = table.label(sa) == table.label(da);
        let match_b = table.label(sb) == table.label(db);
        if let Some(o) = prefer(match_a, match_b) {
            return (o, Rule::MatchingLabel);
        }
    }

    // Rule 6: prefer higher precedence. "If Precedence(DA) > Precedence(DB), then
    // prefer DA."
    let order = table.precedence(db).cmp(&table.precedence(da));
    if order != Ordering::Equal {
        return (order, Rule::HigherPrecedence);
    }

    // Rule 7 (prefer native transport) needs to know which interfaces are tunnels:
    // skipped.

    // Rule 8: prefer smaller scope. "If Scope(DA) < Scope(DB), then prefer DA."
    let order = scope_da.cmp(&scope_db);
    if order != Ordering::Equal {
        return (order, Rule::SmallerScope);
    }

    // Rule 9: use longest matching prefix, "when DA and DB belong to the same address
    // family"; IPv6 only, capped at the source's prefix length (see above).
    if let (Some(sa @ IpAddr::V6(_)), Some(sb @ IpAddr::V6(_)), IpAddr::V6(_), IpAddr::V6(_)) =
        (sa, sb, da, db)
    {
        let len_a = common_prefix_len(sa, da).min(SOURCE_PREFIX_LEN_V6);
        let len_b = common_prefix_len(sb, db).min(SOURCE_PREFIX_LEN_V6);
        let order = len_b.cmp(&len_a);
        if order != Ordering::Equal {
            return (order, Rule::LongestMatchingPrefix);
        }
    }

    // Rule 10: otherwise, leave the order unchanged.
    (Ordering::Equal, Rule::OriginalOrder)
}

/// Sort candidates per RFC 6724 §6, stably (rule 10 keeps the resolver's order among
/// equals).
///
/// The pairwise rules are not guaranteed to form a total order (rule 2 can disagree with
/// rule 6 around a third candidate), and `slice::sort_by` may panic on a comparator that
/// is not a total order. So this is a plain insertion sort: quadratic, which is fine for
/// the handful of addresses a name resolves to, and total on any input.
pub fn sort_destinations(c: &mut [Candidate], table: &PolicyTable) {
    for i in 1..c.len() {
        let mut j = i;
        while j > 0 {
            let (Some(prev), Some(cur)) = (c.get(j - 1), c.get(j)) else {
                break;
            };
            if compare(prev, cur, table).0 != Ordering::Greater {
                break;
            }
            c.swap(j - 1, j);
            j -= 1;
        }
    }
}

/// `Less` if only `a` holds, `Greater` if only `b` does, `None` if the rule is silent.
fn prefer(a: bool, b: bool) -> Option<Ordering> {
    match (a, b) {
        (true, false) => Some(Ordering::Less),
        (false, true) => Some(Ordering::Greater),
        _ => None,
    }
}

/// An IPv4-mapped IPv6 address is the IPv4 address it carries (RFC 6724 §3.2 treats them
/// alike); anything else is unchanged.
fn canonical(addr: IpAddr) -> IpAddr {
    match addr {
        IpAddr::V6(a) => a.to_ipv4_mapped().map_or(addr, IpAddr::V4),
        v4 => v4,
    }
}

fn mask(len: u8) -> u128 {
    u128::MAX
        .checked_shl(128 - u32::from(len.min(128)))
        .unwrap_or(0)
}

/// The value of the longest row containing `addr`.
fn lookup(rows: &[PrefixValue], addr: IpAddr) -> Option<u32> {
    // IPv4 is looked up as ::ffff:a.b.c.d (RFC 6724 §2.1, §6).
    let bits = match addr {
        IpAddr::V4(a) => u128::from(a.to_ipv6_mapped()),
        IpAddr::V6(a) => u128::from(a),
    };
    rows.iter()
        .filter(|r| (bits ^ u128::from(r.prefix)) & mask(r.len) == 0)
        .max_by_key(|r| r.len)
        .map(|r| r.value)
}

/// Replace the row with the same (masked) prefix and length, or append.
fn upsert(rows: &mut Vec<PrefixValue>, prefix: Ipv6Addr, len: u8, value: u32) {
    let len = len.min(128);
    let prefix = Ipv6Addr::from(u128::from(prefix) & mask(len));
    match rows.iter_mut().find(|r| r.prefix == prefix && r.len == len) {
        Some(r) => r.value = value,
        None => rows.push(PrefixValue { prefix, len, value }),
    }
}

/// RFC 6724 §3.1 for IPv6; §3.2 via the IPv4 scope rows for IPv4 and IPv4-mapped.
fn scope_in(scopes_v4: &[PrefixValue], addr: IpAddr) -> Scope {
    let v6 = match canonical(addr) {
        IpAddr::V4(a) => {
            return lookup(scopes_v4, IpAddr::V4(a))
                .map_or(Scope::GLOBAL, |v| Scope(u8::try_from(v).unwrap_or(u8::MAX)))
        }
        IpAddr::V6(a) => a,
    };
    let [b0, b1, ..] = v6.octets();
    if b0 == 0xff {
        // Multicast: the 4-bit scope field (RFC 4291 §2.7).
        Scope(b1 & 0x0f)
    } else if v6 == Ipv6Addr::LOCALHOST || (b0 == 0xfe && b1 & 0xc0 == 0x80) {
        // ::1 is treated as link-local (RFC 4007 §4); fe80::/10.
        Scope::LINK_LOCAL
    } else if b0 == 0xfe && b1 & 0xc0 == 0xc0 {
        Scope::SITE_LOCAL // fec0::/10
    } else {
        Scope::GLOBAL
    }
}

/// `/etc/gai.conf` as read by [`parse_gai_conf`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GaiConf {
    /// The resulting table.
    pub table: PolicyTable,
    /// `reload yes|no` (default no).
    pub reload: bool,
    /// Whether `label` lines replaced the base's label table.
    pub labels_replaced: bool,
    /// Whether `precedence` lines replaced the base's precedence table.
    pub precedences_replaced: bool,
    /// Whether `scopev4` lines replaced the base's IPv4 scope table.
    pub scopes_replaced: bool,
    /// Lines glibc would ignore that we did too (unknown keywords).
    pub warnings: Vec<GaiConfWarning>,
}

/// A line [`parse_gai_conf`] ignored, as glibc would.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GaiConfWarning {
    /// 1-based line number.
    pub line: usize,
    /// What was ignored and why.
    pub message: String,
}

impl fmt::Display for GaiConfWarning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {}: {}", self.line, self.message)
    }
}

/// A malformed `gai.conf` line.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("gai.conf line {line}: {kind}")]
pub struct GaiConfError {
    /// 1-based line number.
    pub line: usize,
    /// What is wrong.
    pub kind: GaiConfErrorKind,
}

/// What is wrong with a `gai.conf` line.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GaiConfErrorKind {
    /// Too few fields.
    #[error("'{0}' needs {1}")]
    MissingField(String, &'static str),
    /// More fields than the keyword takes.
    #[error("unexpected '{0}' after the last field")]
    TrailingField(String),
    /// The prefix's address part is not an IPv6 address.
    #[error("'{0}' is not an IPv6 prefix (write IPv4 as ::ffff:a.b.c.d/len, len 96-128)")]
    BadPrefix(String),
    /// The `scopev4` prefix is neither IPv4 nor IPv4-mapped.
    #[error("'{0}' is not an IPv4 or ::ffff:a.b.c.d prefix")]
    BadScopePrefix(String),
    /// The prefix length is not a number in range.
    #[error("prefix length '{0}' is not a number {1}-{2}")]
    BadPrefixLen(String, u8, u8),
    /// The value is not a non-negative 32-bit decimal number.
    #[error("value '{0}' is not a decimal number 0-4294967295")]
    BadValue(String),
    /// The scope is not a 4-bit number.
    #[error("scope '{0}' is not a number 0-15 (RFC 4291 §2.7)")]
    BadScope(String),
    /// `reload` takes `yes` or `no`.
    #[error("reload takes 'yes' or 'no', not '{0}'")]
    BadReload(String),
}

/// Parse `gai.conf(5)` text on top of `base` (usually [`PolicyTable::glibc_default`]).
///
/// Lines: `label <prefix>[/len] <value>`, `precedence <prefix>[/len] <value>`,
/// `scopev4 <prefix>[/len] <value>`, `reload yes|no`; `#` starts a comment anywhere.
/// Prefixes are IPv6 (IPv4 written as `::ffff:a.b.c.d/len`); a missing `/len` means a
/// host (/128). `scopev4` also takes plain IPv4 (`169.254.0.0/16`), as glibc does.
///
/// glibc semantics (`gaiconf_init` in `sysdeps/posix/getaddrinfo.c`): if any `label`
/// line is present, the whole label table is replaced by the lines given, and a
/// `::/0 → 1` row is added if no line has length 0; likewise `precedence` (`::/0 → 40`)
/// and `scopev4` (`::ffff:0.0.0.0/96`, i.e. all of IPv4, `→ global`). Tables with no lines keep `base`'s. So the
/// well-known "prefer IPv4" line `precedence ::ffff:0:0/96 100`, uncommented on its own,
/// also drops ::1's 50 and 6to4's 30 to the default 40. Of two lines for the same
/// prefix and length, the later wins (glibc leaves it to `qsort`).
///
/// Where glibc silently skips a line, we differ by kind: a malformed `label`,
/// `precedence`, `scopev4` or `reload` line is an error naming the line (glibc's silent
/// skip is how a typo in a prefix quietly changes the table), while an unknown keyword
/// becomes a warning in [`GaiConf::warnings`] so that any file glibc accepts still parses.
pub fn parse_gai_conf(text: &str, base: &PolicyTable) -> Result<GaiConf, GaiConfError> {
    let (mut labels, mut precedences, mut scopes) = (Vec::new(), Vec::new(), Vec::new());
    let mut reload = false;
    let mut warnings = Vec::new();

    for (index, raw) in text.lines().enumerate() {
        let line = index + 1;
        let err = |kind| GaiConfError { line, kind };
        let content = raw.split_once('#').map_or(raw, |(before, _)| before);
        let mut fields = content.split_whitespace();
        let Some(keyword) = fields.next() else {
            continue;
        };
        match keyword {
            "label" | "precedence" | "scopev4" => {
                let (prefix, len) = match fields.next() {
                    Some(f) if keyword == "scopev4" => parse_v4_prefix(f),
                    Some(f) => parse_v6_prefix(f),
                    None => Err(GaiConfErrorKind::MissingField(
                        keyword.into(),
                        "a prefix and a value",
                    )),
                }
                .map_err(err)?;
                let value = fields
                    .next()
                    .ok_or_else(|| GaiConfErrorKind::MissingField(keyword.into(), "a value"))
                    .and_then(|v| parse_value(v, keyword))
                    .map_err(err)?;
                let rows = match keyword {
                    "label" => &mut labels,
                    "precedence" => &mut precedences,
                    _ => &mut scopes,
                };
                upsert(rows, prefix, len, value);
            }
            "reload" => {
                reload = match fields.next() {
                    Some("yes") => true,
                    Some("no") => false,
                    other => {
                        let kind = GaiConfErrorKind::BadReload(other.unwrap_or("").into());
                        return Err(err(kind));
                    }
                };
            }
            other => {
                warnings.push(GaiConfWarning {
                    line,
                    message: format!("unknown keyword '{other}' (glibc ignores this line)"),
                });
                continue;
            }
        }
        if let Some(extra) = fields.next() {
            return Err(err(GaiConfErrorKind::TrailingField(extra.into())));
        }
    }

    // glibc's gaiconf_init: a table with lines replaces the default one, with a
    // catch-all row added when no line covers everything.
    let (labels_replaced, precedences_replaced, scopes_replaced) = (
        !labels.is_empty(),
        !precedences.is_empty(),
        !scopes.is_empty(),
    );
    let replace = |mut rows: Vec<PrefixValue>, base: &[PrefixValue], catch_all: PrefixValue| {
        if rows.is_empty() {
            return base.to_vec();
        }
        if !rows.iter().any(|r| r.len == catch_all.len) {
            rows.push(catch_all);
        }
        rows
    };
    let table = PolicyTable {
        labels: replace(labels, &base.labels, pv(0, 0, 1)),
        precedences: replace(precedences, &base.precedences, pv(0, 0, 40)),
        scopes_v4: replace(scopes, &base.scopes_v4, pv(MAPPED, 96, 0xe)),
    };
    Ok(GaiConf {
        table,
        reload,
        labels_replaced,
        precedences_replaced,
        scopes_replaced,
        warnings,
    })
}

/// A decimal number made of digits only (`str::parse` would take a leading `+`).
fn parse_digits<T: std::str::FromStr>(s: &str) -> Option<T> {
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

/// The `/len` of a prefix: `None` (absent) means `default`.
fn parse_len(len: Option<&str>, range: (u8, u8), default: u8) -> Result<u8, GaiConfErrorKind> {
    let Some(text) = len else {
        return Ok(default);
    };
    let (lo, hi) = range;
    parse_digits::<u8>(text)
        .filter(|n| (lo..=hi).contains(n))
        .ok_or_else(|| GaiConfErrorKind::BadPrefixLen(text.into(), lo, hi))
}

/// `label`/`precedence`: an IPv6 prefix, `/128` when no length is given.
fn parse_v6_prefix(field: &str) -> Result<(Ipv6Addr, u8), GaiConfErrorKind> {
    let (addr, len) = field
        .split_once('/')
        .map_or((field, None), |(a, l)| (a, Some(l)));
    let prefix = addr
        .parse::<Ipv6Addr>()
        .map_err(|_| GaiConfErrorKind::BadPrefix(field.into()))?;
    Ok((prefix, parse_len(len, (0, 128), 128)?))
}

/// `scopev4`: `::ffff:a.b.c.d/96-128` or `a.b.c.d/0-32` (as glibc), returned mapped.
fn parse_v4_prefix(field: &str) -> Result<(Ipv6Addr, u8), GaiConfErrorKind> {
    let (addr, len) = field
        .split_once('/')
        .map_or((field, None), |(a, l)| (a, Some(l)));
    if let Ok(v6) = addr.parse::<Ipv6Addr>() {
        if v6.to_ipv4_mapped().is_none() {
            return Err(GaiConfErrorKind::BadScopePrefix(field.into()));
        }
        return Ok((v6, parse_len(len, (96, 128), 128)?));
    }
    let v4 = addr
        .parse::<Ipv4Addr>()
        .map_err(|_| GaiConfErrorKind::BadScopePrefix(field.into()))?;
    Ok((v4.to_ipv6_mapped(), parse_len(len, (0, 32), 32)? + 96))
}

/// A label or precedence (any `u32`), or a scope (4 bits, RFC 4291 §2.7).
fn parse_value(field: &str, keyword: &str) -> Result<u32, GaiConfErrorKind> {
    if keyword == "scopev4" {
        return parse_digits::<u32>(field)
            .filter(|&n| n <= 15)
            .ok_or_else(|| GaiConfErrorKind::BadScope(field.into()));
    }
    parse_digits(field).ok_or_else(|| GaiConfErrorKind::BadValue(field.into()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    fn cand(dst: &str, src: Option<&str>) -> Candidate {
        Candidate {
            dst: ip(dst),
            src: src.map(ip),
        }
    }

    /// Sort `list` (and its reverse) and return the destinations in order.
    fn sorted(list: &[Candidate], table: &PolicyTable) -> Vec<String> {
        let mut forward = list.to_vec();
        sort_destinations(&mut forward, table);
        let mut backward: Vec<_> = list.iter().rev().copied().collect();
        sort_destinations(&mut backward, table);
        assert_eq!(forward, backward, "order depends on input order");
        forward.iter().map(|c| c.dst.to_string()).collect()
    }

    /// RFC 6724 §10.2's examples with the source the RFC's result names for each
    /// destination. Examples 5 (rule 4, home address) and 6 (rule 3, deprecated source)
    /// exercise rules we skip.
    #[test]
    fn rfc6724_section_10_2_examples() {
        let t = PolicyTable::rfc6724();
        let cases: [(&str, [Candidate; 2], [&str; 2], Rule); 7] = [
            (
                "1: prefer matching scope",
                [
                    cand("2001:db8:1::1", Some("2001:db8:1::2")),
                    cand("198.51.100.121", Some("169.254.13.78")),
                ],
                ["2001:db8:1::1", "198.51.100.121"],
                Rule::MatchingScope,
            ),
            (
                "2: prefer matching scope",
                [
                    cand("2001:db8:1::1", Some("fe80::1")),
                    cand("198.51.100.121", Some("198.51.100.117")),
                ],
                ["198.51.100.121", "2001:db8:1::1"],
                Rule::MatchingScope,
            ),
            (
                "3: prefer higher precedence",
                [
                    cand("2001:db8:1::1", Some("2001:db8:1::2")),
                    cand("10.1.2.3", Some("10.1.2.4")),
                ],
                ["2001:db8:1::1", "10.1.2.3"],
                Rule::HigherPrecedence,
            ),
            (
                "4: prefer smaller scope",
                [
                    cand("2001:db8:1::1", Some("2001:db8:1::2")),
                    cand("fe80::1", Some("fe80::2")),
                ],
                ["fe80::1", "2001:db8:1::1"],
                Rule::SmallerScope,
            ),
            (
                "7: longest matching prefix",
                [
                    cand("2001:db8:1::1", Some("2001:db8:1::2")),
                    cand("2001:db8:3ffe::1", Some("2001:db8:3f44::2")),
                ],
                ["2001:db8:1::1", "2001:db8:3ffe::1"],
                Rule::LongestMatchingPrefix,
            ),
            (
                "8: prefer matching label",
                [
                    cand("2002:c633:6401::1", Some("2002:c633:6401::2")),
                    cand("2001:db8:1::1", Some("2002:c633:6401::2")),
                ],
                ["2002:c633:6401::1", "2001:db8:1::1"],
                Rule::MatchingLabel,
            ),
            (
                "9: prefer higher precedence",
                [
                    cand("2002:c633:6401::1", Some("2002:c633:6401::2")),
                    cand("2001:db8:1::1", Some("2001:db8:1::2")),
                ],
                ["2001:db8:1::1", "2002:c633:6401::1"],
                Rule::HigherPrecedence,
            ),
        ];
        for (name, list, want, rule) in cases {
            assert_eq!(sorted(&list, &t), want, "example {name}");
            let [a, b] = list;
            let (_, decided) = compare(&a, &b, &t);
            assert_eq!(decided, rule, "example {name}");
        }
    }

    #[test]
    fn localhost_prefers_ipv6_loopback_under_both_tables() {
        let list = [
            cand("127.0.0.1", Some("127.0.0.1")),
            cand("::1", Some("::1")),
        ];
        for t in [PolicyTable::rfc6724(), PolicyTable::glibc_default()] {
            assert_eq!(sorted(&list, &t), ["::1", "127.0.0.1"]);
            let (o, rule) = compare(&list[0], &list[1], &t);
            assert_eq!((o, rule), (Ordering::Greater, Rule::HigherPrecedence));
            assert_eq!(rule.to_string(), "rule 6: higher precedence");
        }
    }

    #[test]
    fn gai_conf_prefer_ipv4_line_flips_localhost() {
        let text = "# For sites which prefer IPv4 connections change the last line to\n\
                    precedence ::ffff:0:0/96  100\n";
        let conf = parse_gai_conf(text, &PolicyTable::glibc_default()).unwrap();
        assert!(conf.precedences_replaced && !conf.labels_replaced && !conf.scopes_replaced);
        let list = [
            cand("::1", Some("::1")),
            cand("127.0.0.1", Some("127.0.0.1")),
        ];
        assert_eq!(sorted(&list, &conf.table), ["127.0.0.1", "::1"]);
        // glibc semantics: the precedence table is now only that line plus ::/0 → 40,
        // so ::1 lost its 50; labels are untouched.
        assert_eq!(conf.table.precedence(ip("::1")), 40);
        assert_eq!(conf.table.precedence(ip("192.0.2.1")), 100);
        assert_eq!(conf.table.precedence(ip("2002::1")), 40);
        assert_eq!(conf.table.label(ip("2002::1")), 2);
        assert_eq!(
            conf.table.precedences(),
            [
                PrefixValue {
                    prefix: ip6("::ffff:0:0"),
                    len: 96,
                    value: 100
                },
                PrefixValue {
                    prefix: Ipv6Addr::UNSPECIFIED,
                    len: 0,
                    value: 40
                },
            ]
        );
    }

    fn ip6(s: &str) -> Ipv6Addr {
        s.parse().unwrap()
    }

    #[test]
    fn glibc_and_rfc6724_disagree_on_ula_6to4_and_teredo() {
        let v4 = cand("192.0.2.10", Some("192.0.2.1"));
        let ula = cand("fd00:1::10", Some("fd00:1::1"));
        let six_to_four = cand("2002:c000:204::1", Some("2002:c000:204::2"));
        let teredo = cand(
            "2001:0:4136:e378:8000:63bf:3fff:fdd2",
            Some("2001:0:4136:e378::1"),
        );
        let rfc = PolicyTable::rfc6724();
        let glibc = PolicyTable::glibc_default();
        for (other, name) in [(ula, "ULA"), (six_to_four, "6to4"), (teredo, "Teredo")] {
            let list = [other, v4];
            // RFC 6724 §2.1: IPv4 (35) beats ULA (3), 6to4 (30) and Teredo (5).
            assert_eq!(
                sorted(&list, &rfc),
                [v4.dst.to_string(), other.dst.to_string()],
                "{name} under RFC 6724"
            );
            // glibc (RFC 3484): IPv4 is 10, ULA and Teredo fall under ::/0 (40), 6to4 30.
            assert_eq!(
                sorted(&list, &glibc),
                [other.dst.to_string(), v4.dst.to_string()],
                "{name} under glibc"
            );
            assert_eq!(compare(&other, &v4, &rfc).1, Rule::HigherPrecedence);
            assert_eq!(compare(&other, &v4, &glibc).1, Rule::HigherPrecedence);
        }
        assert_eq!(rfc.label(ip("fd00::1")), 13);
        assert_eq!(glibc.label(ip("fd00::1")), 6);
        assert_eq!(rfc.label(ip("2001::1")), 5);
        assert_eq!(glibc.label(ip("2001::1")), 7);
        assert_eq!(glibc.precedence(ip("2001::1")), 40);
    }

    #[test]
    fn policy_lookup_is_longest_prefix_with_ipv4_mapped() {
        let t = PolicyTable::rfc6724();
        let rows = [
            ("::1", 50, 0),
            ("2001:db8::1", 40, 1),
            ("192.0.2.1", 35, 4),
            ("::ffff:192.0.2.1", 35, 4),
            ("2002:c000:204::1", 30, 2),
            ("2001::1", 5, 5),
            ("fc00::1", 3, 13),
            ("fdff::1", 3, 13),
            ("::192.0.2.1", 1, 3),
            ("fec0::1", 1, 11),
            ("3ffe::1", 1, 12),
        ];
        for (addr, precedence, label) in rows {
            assert_eq!(t.precedence(ip(addr)), precedence, "{addr}");
            assert_eq!(t.label(ip(addr)), label, "{addr}");
        }
        let empty = PolicyTable::from_entries(&[]);
        assert_eq!(empty.precedence(ip("::1")), 0);
        assert_eq!(empty.label(ip("::1")), u32::MAX);
    }

    #[test]
    fn scopes_per_rfc6724_section_3() {
        let rows = [
            ("::1", Scope::LINK_LOCAL),
            ("fe80::1", Scope::LINK_LOCAL),
            ("febf::1", Scope::LINK_LOCAL),
            ("fec0::1", Scope::SITE_LOCAL),
            ("fd00::1", Scope::GLOBAL),
            ("2001:db8::1", Scope::GLOBAL),
            ("ff02::1", Scope::LINK_LOCAL),
            ("ff05::2", Scope::SITE_LOCAL),
            ("ff0e::3", Scope::GLOBAL),
            ("ff01::1", Scope::INTERFACE_LOCAL),
            ("127.0.0.1", Scope::LINK_LOCAL),
            ("127.255.255.254", Scope::LINK_LOCAL),
            ("169.254.13.78", Scope::LINK_LOCAL),
            ("::ffff:169.254.1.1", Scope::LINK_LOCAL),
            ("10.1.2.3", Scope::GLOBAL),
            ("192.168.1.1", Scope::GLOBAL),
            ("198.51.100.121", Scope::GLOBAL),
        ];
        for (addr, want) in rows {
            assert_eq!(scope(ip(addr)), want, "{addr}");
            assert_eq!(PolicyTable::rfc6724().scope(ip(addr)), want, "{addr}");
        }
        assert_eq!(Scope::GLOBAL.to_string(), "global(0xe)");
        assert_eq!(Scope(3).to_string(), "scope(0x3)");
    }

    #[test]
    fn common_prefix_len_counts_shared_bits() {
        assert_eq!(common_prefix_len(ip("fe80::1"), ip("fe80::2")), 126);
        assert_eq!(
            common_prefix_len(ip("2001:db8:3ffe::1"), ip("2001:db8:3f44::2")),
            40
        );
        assert_eq!(common_prefix_len(ip("::1"), ip("::1")), 128);
        assert_eq!(common_prefix_len(ip("10.1.2.3"), ip("10.1.2.4")), 29);
        assert_eq!(common_prefix_len(ip("10.1.2.3"), ip("::ffff:10.1.2.3")), 32);
        assert_eq!(common_prefix_len(ip("10.1.2.3"), ip("2001:db8::1")), 0);
    }

    #[test]
    fn rule_1_sinks_unreachable_destinations() {
        let t = PolicyTable::rfc6724();
        let list = [
            cand("2001:db8::1", None),
            cand("192.0.2.1", Some("192.0.2.2")),
        ];
        assert_eq!(sorted(&list, &t), ["192.0.2.1", "2001:db8::1"]);
        assert_eq!(compare(&list[0], &list[1], &t).1, Rule::AvoidUnusable);
        // Both unreachable: rules needing a source are skipped, rule 6 still sorts.
        let list = [cand("192.0.2.1", None), cand("2001:db8::1", None)];
        assert_eq!(sorted(&list, &t), ["2001:db8::1", "192.0.2.1"]);
    }

    #[test]
    fn rule_9_is_ipv6_only_and_capped_at_64_bits() {
        let t = PolicyTable::rfc6724();
        // Go issue 13283: a 10/8 source says nothing about which public IPv4 server is
        // closer; the resolver's order stays.
        let list = [
            cand("54.83.193.112", Some("10.2.3.4")),
            cand("23.23.172.185", Some("10.2.3.4")),
            cand("11.0.0.1", Some("10.2.3.4")),
        ];
        let mut got = list;
        sort_destinations(&mut got, &t);
        assert_eq!(got, list);
        assert_eq!(compare(&list[0], &list[1], &t).1, Rule::OriginalOrder);
        // Same /64 as the source either way: a tie past the cap, so rule 10 decides.
        let a = cand("2001:db8:1::ffff", Some("2001:db8:1::1"));
        let b = cand("2001:db8:1::2", Some("2001:db8:1::1"));
        assert_eq!(compare(&a, &b, &t), (Ordering::Equal, Rule::OriginalOrder));
    }

    #[test]
    fn sort_is_stable_and_never_panics_on_cycles() {
        let t = PolicyTable::rfc6724();
        let list = [
            cand("2001:db8::1", Some("2001:db8::9")),
            cand("2001:db8::2", Some("2001:db8::9")),
            cand("2001:db8::3", Some("2001:db8::9")),
        ];
        let mut got = list;
        sort_destinations(&mut got, &t);
        assert_eq!(got, list);
        // Mixed, mismatched and missing sources in many shapes: must not panic.
        let addrs = [
            "::1",
            "127.0.0.1",
            "fe80::1",
            "169.254.1.1",
            "2001:db8::1",
            "2002::1",
            "fd00::1",
            "10.0.0.1",
            "ff02::1",
            "::ffff:1.2.3.4",
        ];
        let mut many = Vec::new();
        for (i, d) in addrs.iter().enumerate() {
            for (j, s) in addrs.iter().enumerate() {
                let src = (i + j) % 4 != 0;
                many.push(cand(d, src.then_some(*s)));
            }
        }
        for t in [PolicyTable::rfc6724(), PolicyTable::glibc_default()] {
            let mut v = many.clone();
            sort_destinations(&mut v, &t);
            assert_eq!(v.len(), many.len());
        }
        sort_destinations(&mut [], &t);
    }

    #[test]
    fn gai_conf_full_file() {
        let text = "\
# comment
reload  yes
label ::1/128       0   # trailing comment
label ::/0          1
label 2002::/16     2
label fc00::/7      6
precedence ::1/128  50
precedence ::/0     40
precedence ::ffff:0:0/96 100
scopev4 ::ffff:169.254.0.0/112  2
scopev4 10.0.0.0/8 5
fancy thing here
\tprecedence\t2001:db8::/32\t45\r
";
        let conf = parse_gai_conf(text, &PolicyTable::glibc_default()).unwrap();
        assert!(conf.reload);
        assert!(conf.labels_replaced && conf.precedences_replaced && conf.scopes_replaced);
        assert_eq!(
            conf.warnings,
            [GaiConfWarning {
                line: 12,
                message: "unknown keyword 'fancy' (glibc ignores this line)".into()
            }]
        );
        let t = &conf.table;
        assert_eq!(t.labels().len(), 4); // ::/0 given, none added
        assert_eq!(t.label(ip("192.0.2.1")), 1); // the ::ffff:0:0/96 label row is gone
        assert_eq!(t.precedence(ip("2001:db8::5")), 45);
        assert_eq!(t.scope(ip("10.9.9.9")), Scope::SITE_LOCAL);
        assert_eq!(t.scope(ip("169.254.1.1")), Scope::LINK_LOCAL);
        // The scope table was replaced: 127/8 is global now, as in glibc.
        assert_eq!(t.scope(ip("127.0.0.1")), Scope::GLOBAL);
        assert_eq!(t.scopes_v4().len(), 3);
        // An empty file changes nothing.
        let empty = parse_gai_conf("", &PolicyTable::rfc6724()).unwrap();
        assert_eq!(empty.table, PolicyTable::rfc6724());
        assert!(!empty.reload && empty.warnings.is_empty());
    }

    #[test]
    fn gai_conf_later_duplicate_wins_and_host_bits_are_masked() {
        let text = "label 2001:db8::1/32 9\nlabel 2001:db8::/32 8\n";
        let conf = parse_gai_conf(text, &PolicyTable::rfc6724()).unwrap();
        assert_eq!(conf.table.label(ip("2001:db8::5")), 8);
        assert_eq!(conf.table.labels().len(), 2);
        let host = parse_gai_conf("label 2001:db8::7 3", &PolicyTable::rfc6724()).unwrap();
        assert_eq!(host.table.label(ip("2001:db8::7")), 3);
        assert_eq!(host.table.label(ip("2001:db8::8")), 1);
    }

    #[test]
    fn gai_conf_errors_carry_line_numbers() {
        use GaiConfErrorKind as K;
        let base = PolicyTable::glibc_default();
        let cases = [
            (
                "label",
                1,
                K::MissingField("label".into(), "a prefix and a value"),
            ),
            (
                "\n\nlabel ::1/128",
                3,
                K::MissingField("label".into(), "a value"),
            ),
            (
                "# x\nprecedence 10.0.0.0/8 5",
                2,
                K::BadPrefix("10.0.0.0/8".into()),
            ),
            ("label zz::/8 1", 1, K::BadPrefix("zz::/8".into())),
            ("label ::/129 1", 1, K::BadPrefixLen("129".into(), 0, 128)),
            ("label ::/+8 1", 1, K::BadPrefixLen("+8".into(), 0, 128)),
            ("label ::/ 1", 1, K::BadPrefixLen("".into(), 0, 128)),
            ("precedence ::/0 -1", 1, K::BadValue("-1".into())),
            (
                "precedence ::/0 4294967296",
                1,
                K::BadValue("4294967296".into()),
            ),
            (
                "precedence ::/0 40 extra",
                1,
                K::TrailingField("extra".into()),
            ),
            (
                "scopev4 ::ffff:10.0.0.0/95 5",
                1,
                K::BadPrefixLen("95".into(), 96, 128),
            ),
            (
                "scopev4 2001:db8::/32 5",
                1,
                K::BadScopePrefix("2001:db8::/32".into()),
            ),
            (
                "scopev4 10.0.0.0/33 5",
                1,
                K::BadPrefixLen("33".into(), 0, 32),
            ),
            ("scopev4 ten/8 5", 1, K::BadScopePrefix("ten/8".into())),
            ("scopev4 10.0.0.0/8 16", 1, K::BadScope("16".into())),
            (
                "scopev4 10.0.0.0/8",
                1,
                K::MissingField("scopev4".into(), "a value"),
            ),
            ("reload maybe", 1, K::BadReload("maybe".into())),
            ("reload", 1, K::BadReload("".into())),
        ];
        for (text, line, kind) in cases {
            let want = GaiConfError { line, kind };
            assert_eq!(parse_gai_conf(text, &base), Err(want), "{text:?}");
        }
        let e = parse_gai_conf("x\nlabel ::/0 one", &base).unwrap_err();
        assert_eq!(
            e.to_string(),
            "gai.conf line 2: value 'one' is not a decimal number 0-4294967295"
        );
    }

    #[test]
    fn gai_conf_scopev4_forms_match_glibc() {
        let base = PolicyTable::glibc_default();
        let mapped = parse_gai_conf("scopev4 ::ffff:192.168.0.0/112 5", &base).unwrap();
        let plain = parse_gai_conf("scopev4 192.168.0.0/16 5", &base).unwrap();
        assert_eq!(mapped.table, plain.table);
        assert_eq!(plain.table.scope(ip("192.168.4.4")), Scope::SITE_LOCAL);
        assert_eq!(plain.table.scope(ip("8.8.8.8")), Scope::GLOBAL);
        let host = parse_gai_conf("scopev4 ::ffff:10.0.0.1 2", &base).unwrap();
        assert_eq!(host.table.scope(ip("10.0.0.1")), Scope::LINK_LOCAL);
        assert_eq!(host.table.scope(ip("10.0.0.2")), Scope::GLOBAL);
    }
}
