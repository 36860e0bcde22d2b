//! The path block: the path's facts per family (`DIR/path.json`,
//! [`results::path::PathFacts`]) under the verdicts, as text and as an HTML table. Each
//! fact names its definition in the block's last lines, so a reader can look it up.

use std::fmt::Write;
use std::path::Path;

use results::human;
use results::path::{
    Direction, Fact, FamilyPath, FarEnd, FieldFact, MarkVerdict, NatVerdict, PathFacts, PmtuMethod,
};
use results::text_table::Table;

/// Where each fact is defined, as the block's last lines say.
pub const SOURCES: &[&str] = &[
    "hops: TTL and hop limit sent minus seen (RFC 791 §3.2, RFC 8200 §3)",
    "path MTU: DPLPMTUD (RFC 8899 §4, RFC 4821); the kernel's from ICMP (RFC 1191, RFC 8201)",
    "DSCP RFC 2474 §3, ECN RFC 3168 §5, flow label RFC 6437 §3; NAT RFC 2663 §4.1",
    "clock offset: NTP's on-wire method (RFC 5905 §8); capacity: TCP goodput, as iperf3",
];

/// The facts of a run directory's `path.json`: `Ok(None)` without the file, `Err` with
/// why when it does not read.
pub fn read(dir: &Path) -> Result<Option<PathFacts>, String> {
    let file = dir.join("path.json");
    match std::fs::read(&file) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(format!("{}: {e}", file.display())),
        Ok(bytes) => serde_json::from_slice(&bytes)
            .map(Some)
            .map_err(|e| format!("{}: does not read ({e})", file.display())),
    }
}

/// Numbers "not measured" reasons as footnotes, each reason once.
#[derive(Default)]
struct Notes(Vec<String>);

impl Notes {
    fn cell<T>(&mut self, fact: &Fact<T>, show: impl Fn(&T) -> String) -> String {
        match fact {
            Fact::Measured(t) => show(t),
            Fact::NotMeasured(why) => {
                let k = match self.0.iter().position(|w| w == why) {
                    Some(k) => k,
                    None => {
                        self.0.push(why.clone());
                        self.0.len() - 1
                    }
                };
                format!("not measured [{}]", k + 1)
            }
        }
    }
}

fn far_end(f: FarEnd) -> &'static str {
    match f {
        FarEnd::Agent => "dualperf agent, both directions",
        FarEnd::Recv => "dualperf recv, forward only",
        FarEnd::Stamp => "a STAMP reflector",
        FarEnd::Topology => "the lab's topology",
    }
}

fn ecn_name(v: u8) -> String {
    match v {
        0 => "not-ECT".into(),
        1 => "ECT(1)".into(),
        2 => "ECT(0)".into(),
        3 => "CE".into(),
        v => v.to_string(),
    }
}

/// `intact 34`, `bleached 34→0`, `remarked 34→8/10`.
fn field<V: Ord + Copy>(f: &FieldFact<V>, show: impl Fn(V) -> String) -> String {
    let seen = || {
        f.seen
            .keys()
            .map(|&v| show(v))
            .collect::<Vec<_>>()
            .join("/")
    };
    match f.verdict {
        MarkVerdict::Intact => format!("intact {}", show(f.sent)),
        MarkVerdict::Unknown => "not read".into(),
        MarkVerdict::Remarked => format!("remarked {}→{}", show(f.sent), seen()),
        MarkVerdict::Bleached => format!("bleached {}→{}", show(f.sent), seen()),
        MarkVerdict::Ce => format!("CE on {} of {}", ce_count(f), total(f)),
    }
}

fn ce_count<V: Ord + Copy>(f: &FieldFact<V>) -> u64 {
    f.seen
        .iter()
        .filter(|(&v, _)| v != f.sent)
        .map(|(_, &n)| n)
        .sum()
}

fn total<V: Ord>(f: &FieldFact<V>) -> u64 {
    f.seen.values().sum()
}

fn pmtu_method(m: PmtuMethod) -> &'static str {
    match m {
        PmtuMethod::Dplpmtud => "DPLPMTUD",
        PmtuMethod::Kernel => "kernel",
        PmtuMethod::Topology => "topology",
        PmtuMethod::RoundTrip => "round trip",
    }
}

/// The rows of the direction table: one per fact, a cell per family and direction.
fn direction_rows(dirs: &[(&FamilyPath, &Direction)], notes: &mut Notes) -> Vec<Vec<String>> {
    type Cell<'a> = &'a dyn Fn(&Direction, &FamilyPath, &mut Notes) -> String;
    let hops: Cell<'_> = &|d, _, n| {
        n.cell(&d.hops, |h| {
            let sent = if h.sent_inferred {
                format!("~{}", h.sent)
            } else {
                h.sent.to_string()
            };
            format!("{} ({sent}→{})", h.hops, h.seen)
        })
    };
    let pmtu: Cell<'_> = &|d, _, n| {
        n.cell(&d.pmtu, |p| match p.smallest_lost {
            Some(lost) if lost > p.bytes + 1 => {
                format!("{}-{} B {}", p.bytes, lost - 1, pmtu_method(p.method))
            }
            _ => format!("{} B {}", p.bytes, pmtu_method(p.method)),
        })
    };
    let kernel: Cell<'_> = &|d, _, n| {
        n.cell(&d.pmtu, |p| match p.kernel_bytes {
            Some(k) => format!("{k} B"),
            None if p.method == PmtuMethod::Dplpmtud => "the same".into(),
            None => "-".into(),
        })
    };
    let dscp: Cell<'_> = &|d, _, n| n.cell(&d.marking, |m| field(&m.dscp, |v| v.to_string()));
    let ecn: Cell<'_> = &|d, _, n| n.cell(&d.marking, |m| field(&m.ecn, ecn_name));
    let label: Cell<'_> = &|d, f, n| match (&d.marking, f.family) {
        (_, results::path::Family::Ipv4) => "-".into(),
        (m, _) => n.cell(m, |m| {
            m.flow_label
                .as_ref()
                .map_or_else(|| "not sent".into(), |l| field(l, |v| format!("{v:#x}")))
        }),
    };
    let capacity: Cell<'_> = &|d, _, n| {
        n.cell(&d.capacity, |c| {
            format!("{} ({})", human::bitrate(c.bps), c.how)
        })
    };
    let rows: [(&str, Cell<'_>); 7] = [
        ("hops (sent→seen)", hops),
        ("path MTU", pmtu),
        ("kernel's PMTU", kernel),
        ("DSCP", dscp),
        ("ECN", ecn),
        ("flow label", label),
        ("capacity", capacity),
    ];
    rows.iter()
        .map(|(name, cell)| {
            let mut r = vec![(*name).to_string()];
            r.extend(dirs.iter().map(|(f, d)| cell(d, f, notes)));
            r
        })
        .collect()
}

/// The block's content, which [`text`] and [`html`] lay out.
struct Block {
    title: String,
    families: Vec<Vec<String>>,
    directions: Vec<Vec<String>>,
    lines: Vec<String>,
}

const FAMILY_HEADER: [&str; 4] = [
    "family",
    "addresses (ours → far end)",
    "NAT",
    "clock offset",
];

fn block(p: &PathFacts) -> Block {
    let mut notes = Notes::default();
    let mut families = Vec::new();
    for f in &p.families {
        let local = f.local.map_or_else(|| "?".into(), |a| a.to_string());
        let nat = notes.cell(&f.nat, |n| match n.verdict {
            NatVerdict::None => "none".into(),
            NatVerdict::Port => format!("port: seen as {}", n.seen),
            NatVerdict::Address => format!("address: seen as {}", n.seen),
            NatVerdict::AddressAndPort => format!("address and port: seen as {}", n.seen),
        });
        let clock = notes.cell(&f.clock, |c| match c.same_clock {
            true => "one clock".into(),
            false => format!(
                "{} ± {}",
                human::duration(c.offset_ns as f64),
                human::duration(c.bound_ns as f64)
            ),
        });
        families.push(vec![
            f.family.name().into(),
            format!("{local} → {}", f.remote),
            nat,
            clock,
        ]);
    }
    let mut header = vec![String::new()];
    let mut dirs = Vec::new();
    for f in &p.families {
        for (arrow, d) in [("→", &f.forward), ("←", &f.reverse)] {
            header.push(format!("{} {arrow}", f.family.name()));
            dirs.push((f, d));
        }
    }
    let mut directions = vec![header];
    directions.extend(direction_rows(&dirs, &mut notes));
    let mut lines = Vec::new();
    for (i, (f, d)) in dirs.iter().enumerate() {
        if let Some(note) = d.pmtu.measured().and_then(|p| p.note.as_ref()) {
            let arrow = if i % 2 == 0 { "→" } else { "←" };
            lines.push(format!("{} {arrow} path MTU: {note}", f.family.name()));
        }
    }
    for (k, why) in notes.0.iter().enumerate() {
        lines.push(format!("[{}] {why}", k + 1));
    }
    lines.extend(p.notes.iter().map(|n| format!("Method: {n}.")));
    lines.extend(SOURCES.iter().map(|s| format!("Source: {s}.")));
    Block {
        title: format!("Path to {} ({})", p.host, far_end(p.far_end)),
        families,
        directions,
        lines,
    }
}

/// The block as text: a title line, the families' addresses, NAT and clock, the facts
/// per family and direction, the footnotes, the methods and the sources.
pub fn text(p: &PathFacts) -> String {
    let b = block(p);
    let mut out = format!(
        "{}
",
        b.title
    );
    let mut fams = Table::new(&FAMILY_HEADER);
    for r in b.families {
        fams.row(r);
    }
    out.push_str(&fams.render());
    let header: Vec<&str> = b.directions[0].iter().map(String::as_str).collect();
    let mut facts = Table::new(&header);
    for r in &b.directions[1..] {
        facts.row(r.clone());
    }
    out.push('\n');
    out.push_str(&facts.render());
    for l in b.lines {
        out.push_str(&l);
        out.push('\n');
    }
    out
}

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// The block as an HTML section: the same two tables and lines as [`text`].
pub fn html(p: &PathFacts) -> String {
    let b = block(p);
    let mut out = format!(
        "<section class=\"path\"><h2>Path</h2><p>{}</p>\n",
        esc(&b.title)
    );
    let header: Vec<String> = FAMILY_HEADER.iter().map(|h| (*h).to_string()).collect();
    for rows in [
        std::iter::once(&header)
            .chain(&b.families)
            .collect::<Vec<_>>(),
        b.directions.iter().collect(),
    ] {
        out.push_str("<table>");
        for (i, r) in rows.iter().enumerate() {
            let tag = if i == 0 { "th" } else { "td" };
            out.push_str("<tr>");
            for c in r.iter() {
                let _ = write!(out, "<{tag}>{}</{tag}>", esc(c));
            }
            out.push_str("</tr>");
        }
        out.push_str("</table>\n");
    }
    for l in &b.lines {
        let _ = writeln!(out, "<p class=\"meta\">{}</p>", esc(l));
    }
    out.push_str("</section>\n");
    out
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use meter::clock::OffsetEstimate;
    use results::path::{Capacity, Family, Hops, MarkingFact, Nat, Pmtu, PATH_FORMAT_VERSION};

    fn field<V: Ord + Copy>(sent: V, seen: &[(V, u64)], verdict: MarkVerdict) -> FieldFact<V> {
        FieldFact {
            sent,
            seen: seen.iter().copied().collect(),
            verdict,
        }
    }

    fn dir(hops: u8, pmtu: Pmtu, marking: MarkingFact, bps: f64) -> Direction {
        Direction {
            hops: Fact::Measured(Hops {
                sent: 64,
                sent_inferred: false,
                seen: 64 - hops,
                hops,
            }),
            pmtu: Fact::Measured(pmtu),
            marking: Fact::Measured(marking),
            capacity: Fact::Measured(Capacity {
                bps,
                how: "tcp 1s".into(),
            }),
        }
    }

    /// Two hops each way; IPv4 through a NAT44 that bleaches DSCP, IPv6 with a 1,400-byte
    /// tunnel the kernel does not know of and a CE mark; IPv6's reverse not measured.
    pub(crate) fn facts() -> PathFacts {
        let pmtu = |bytes, lost, kernel, note: Option<&str>| Pmtu {
            bytes,
            method: PmtuMethod::Dplpmtud,
            smallest_lost: lost,
            kernel_bytes: kernel,
            note: note.map(str::to_owned),
        };
        let intact4 = MarkingFact {
            dscp: field(34, &[(0, 20)], MarkVerdict::Bleached),
            ecn: field(2, &[(2, 20)], MarkVerdict::Intact),
            flow_label: None,
        };
        let v6 = MarkingFact {
            dscp: field(34, &[(34, 20)], MarkVerdict::Intact),
            ecn: field(2, &[(2, 17), (3, 3)], MarkVerdict::Ce),
            flow_label: Some(field(0x2dd41, &[(0x2dd41, 20)], MarkVerdict::Intact)),
        };
        PathFacts {
            format_version: PATH_FORMAT_VERSION,
            host: "receiver".into(),
            far_end: FarEnd::Agent,
            notes: vec!["probes: UDP 20 × 64 B".into()],
            families: vec![
                FamilyPath {
                    family: Family::Ipv4,
                    local: Some("198.18.1.2:40112".parse().unwrap()),
                    remote: "198.18.4.2:5201".parse().unwrap(),
                    nat: Fact::Measured(Nat {
                        ours: "198.18.1.2:40112".parse().unwrap(),
                        seen: "198.18.2.1:61034".parse().unwrap(),
                        verdict: NatVerdict::AddressAndPort,
                    }),
                    forward: dir(2, pmtu(1500, None, None, None), intact4.clone(), 9.41e6),
                    reverse: dir(2, pmtu(1500, None, None, None), intact4, 9.38e6),
                    clock: Fact::Measured(OffsetEstimate {
                        offset_ns: 120_000,
                        bound_ns: 50_000,
                        delay_min_ns: 100_000,
                        samples: 8,
                        same_clock: false,
                    }),
                },
                FamilyPath {
                    family: Family::Ipv6,
                    local: Some("[2001:2::1:2]:40114".parse().unwrap()),
                    remote: "[2001:2::4:2]:5201".parse().unwrap(),
                    nat: Fact::Measured(Nat {
                        ours: "[2001:2::1:2]:40114".parse().unwrap(),
                        seen: "[2001:2::1:2]:40114".parse().unwrap(),
                        verdict: NatVerdict::None,
                    }),
                    forward: dir(
                        2,
                        pmtu(
                            1400,
                            Some(1403),
                            Some(1500),
                            Some("ICMP filtered or a black hole"),
                        ),
                        v6,
                        9.20e6,
                    ),
                    reverse: Direction::not_measured("the agent refused"),
                    clock: Fact::not("the far end did not answer clock exchanges"),
                },
            ],
        }
    }

    #[test]
    fn path_block_renders_both_families_and_directions() {
        let text = text(&facts());
        let want = "\
Path to receiver (dualperf agent, both directions)
family                addresses (ours → far end)                                         NAT      clock offset
--------------------------------------------------------------------------------------------------------------
IPv4          198.18.1.2:40112 → 198.18.4.2:5201  address and port: seen as 198.18.2.1:61034  120 µs ± 50.0 µs
IPv6    [2001:2::1:2]:40114 → [2001:2::4:2]:5201                                        none  not measured [1]

                                IPv4 →                IPv4 ←                IPv6 →            IPv6 ←
----------------------------------------------------------------------------------------------------
hops (sent→seen)             2 (64→62)             2 (64→62)             2 (64→62)  not measured [2]
path MTU               1500 B DPLPMTUD       1500 B DPLPMTUD  1400-1402 B DPLPMTUD  not measured [2]
kernel's PMTU                 the same              the same                1500 B  not measured [2]
DSCP                     bleached 34→0         bleached 34→0             intact 34  not measured [2]
ECN                      intact ECT(0)         intact ECT(0)         CE on 3 of 20  not measured [2]
flow label                           -                     -        intact 0x2dd41  not measured [2]
capacity          9.41 Mbit/s (tcp 1s)  9.38 Mbit/s (tcp 1s)  9.20 Mbit/s (tcp 1s)  not measured [2]
IPv6 → path MTU: ICMP filtered or a black hole
[1] the far end did not answer clock exchanges
[2] the agent refused
Method: probes: UDP 20 × 64 B.
Source: hops: TTL and hop limit sent minus seen (RFC 791 §3.2, RFC 8200 §3).
Source: path MTU: DPLPMTUD (RFC 8899 §4, RFC 4821); the kernel's from ICMP (RFC 1191, RFC 8201).
Source: DSCP RFC 2474 §3, ECN RFC 3168 §5, flow label RFC 6437 §3; NAT RFC 2663 §4.1.
Source: clock offset: NTP's on-wire method (RFC 5905 §8); capacity: TCP goodput, as iperf3.
";
        assert_eq!(text, want, "\n{text}");
        let html = html(&facts());
        assert!(html.starts_with(
            "<section class=\"path\"><h2>Path</h2><p>Path to receiver (dualperf agent, both directions)</p>\n<table><tr><th>family</th>"
        ), "{html}");
        assert!(html.contains("<tr><td>ECN</td><td>intact ECT(0)</td><td>intact ECT(0)</td><td>CE on 3 of 20</td><td>not measured [2]</td></tr>"), "{html}");
        assert_eq!(html.matches("<table>").count(), 2);
    }

    #[test]
    fn a_path_json_reads_back_and_its_absence_is_none() {
        let dir = std::env::temp_dir().join(format!("dp-path-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        assert_eq!(read(&dir), Ok(None));
        std::fs::write(dir.join("path.json"), serde_json::to_vec(&facts()).unwrap()).unwrap();
        assert_eq!(read(&dir), Ok(Some(facts())));
        std::fs::write(dir.join("path.json"), b"{").unwrap();
        assert!(read(&dir).unwrap_err().contains("path.json: does not read"));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
