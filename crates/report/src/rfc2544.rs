//! The report of a `dualperf rfc2544` run directory (one holding `rfc2544.json`): the
//! device's benchmarks in RFC 2544's shape, as text, Markdown, HTML and SVG/PNG plots.
//!
//! - Throughput (RFC 2544 §26.1, RFC 5180 §7, RFC 8219 §7.1): NDR and PDR per frame size
//!   and path, in frames/s and Mbit/s (frames with their FCS, RFC 2544 §9); "≥" marks a
//!   figure at the highest load the tester offered (its ceiling or the line rate): the
//!   device did at least that.
//! - Latency (RFC 8219 §7.2, §7.3): median (Typical), 99.9th percentile (Worst Case), PDV
//!   and IPDV over the tagged frames.
//! - Frame loss rate (RFC 2544 §26.3): loss at 100 %, 90 %, … of the highest rate.
//! - Back-to-back frames (RFC 9004): the mean longest lossless burst and the buffer time.
//!
//! The tester's ceiling is said at the top of every page and on every plot: a reader
//! must know what the tester could offer before reading what the device did.

use std::fmt::Write;
use std::path::{Path, PathBuf};

use results::bmwg::{Direction, PathKind, PathResult, Rfc2544Doc, RFC2544_SCHEMA};

use crate::charts::{NotDrawn, Place, Plot, Plots};
use crate::plot;
use crate::text_table;

/// The file that makes a directory an rfc2544 run directory.
pub const FILE: &str = "rfc2544.json";

/// Why an rfc2544 run directory could not be reported.
#[derive(Debug, thiserror::Error)]
pub enum Rfc2544Error {
    /// `rfc2544.json` could not be read.
    #[error("cannot read {}: {source}", .path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// `rfc2544.json` is not the document.
    #[error("{} is not a dualperf.rfc2544/1 document: {source}", .path.display())]
    Parse {
        /// The file.
        path: PathBuf,
        /// Why.
        source: serde_json::Error,
    },
    /// The document is another version.
    #[error("{} is {found}, not {RFC2544_SCHEMA}: read it with the dualperf that wrote it", .path.display())]
    Schema {
        /// The file.
        path: PathBuf,
        /// Its `schema`.
        found: String,
    },
}

/// Whether `dir` is an rfc2544 run directory (it holds `rfc2544.json`).
pub fn is_rfc2544_dir(dir: &Path) -> bool {
    dir.join(FILE).is_file()
}

/// Reads `DIR/rfc2544.json`.
pub fn load(dir: &Path) -> Result<Rfc2544Doc, Rfc2544Error> {
    let path = dir.join(FILE);
    let text = std::fs::read_to_string(&path).map_err(|source| Rfc2544Error::Read {
        path: path.clone(),
        source,
    })?;
    let doc: Rfc2544Doc = serde_json::from_str(&text).map_err(|source| Rfc2544Error::Parse {
        path: path.clone(),
        source,
    })?;
    if doc.schema != RFC2544_SCHEMA {
        return Err(Rfc2544Error::Schema {
            path,
            found: doc.schema,
        });
    }
    Ok(doc)
}

/// One table of the page: a title, what it means, its header and rows.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Tab {
    /// Its title.
    pub title: String,
    /// What its figures mean, one sentence.
    pub caption: String,
    /// Column headings.
    pub header: Vec<String>,
    /// Rows of cells.
    pub rows: Vec<Vec<String>>,
}

impl Tab {
    fn new(title: &str, caption: String, header: &[&str]) -> Self {
        Self {
            title: title.to_owned(),
            caption,
            header: header.iter().map(|h| (*h).to_owned()).collect(),
            rows: Vec::new(),
        }
    }

    /// The table as aligned text.
    fn text(&self) -> String {
        let header: Vec<&str> = self.header.iter().map(String::as_str).collect();
        let mut t = text_table::Table::new(&header);
        for r in &self.rows {
            t.row(r.clone());
        }
        t.render()
    }

    /// The table in Markdown.
    fn markdown(&self) -> String {
        let line = |cells: &[String]| format!("| {} |\n", cells.join(" | "));
        let mut out = line(&self.header);
        out.push_str(&line(&vec!["---".to_owned(); self.header.len()]));
        for r in &self.rows {
            out.push_str(&line(r));
        }
        out
    }

    /// The table in HTML.
    fn html(&self) -> String {
        let mut out = format!("<table><caption>{}</caption><tr>", esc(&self.caption));
        for h in &self.header {
            let _ = write!(out, "<th>{}</th>", esc(h));
        }
        out.push_str("</tr>");
        for r in &self.rows {
            out.push_str("<tr>");
            for c in r {
                let _ = write!(out, "<td>{}</td>", esc(c));
            }
            out.push_str("</tr>");
        }
        out.push_str("</table>");
        out
    }
}

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// A path's name: IPv4, IPv6, NAT64, NAT46.
pub fn path_name(p: PathKind) -> &'static str {
    match p {
        PathKind::Ipv4 => "IPv4",
        PathKind::Ipv6 => "IPv6",
        PathKind::Nat64 => "NAT64",
        PathKind::Nat46 => "NAT46",
    }
}

fn direction_name(d: Direction) -> &'static str {
    match d {
        Direction::AToB => "a→b",
        Direction::BToA => "b→a",
        Direction::Both => "both",
    }
}

/// A whole number with thousands separated by commas: `7,500,000`.
pub fn grouped(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

fn mbps(bps: u64) -> String {
    format!("{:.1}", bps as f64 / 1e6)
}

fn us(ns: Option<u64>) -> String {
    ns.map_or("–".to_owned(), |n| format!("{:.2}", n as f64 / 1e3))
}

fn pct(ratio: f64) -> String {
    format!("{:.3}", ratio * 100.0)
}

fn duration(ns: u64) -> String {
    if ns % 1_000_000_000 == 0 {
        format!("{} s", ns / 1_000_000_000)
    } else if ns % 1_000_000 == 0 {
        format!("{} ms", ns / 1_000_000)
    } else {
        format!("{} µs", ns / 1_000)
    }
}

/// The first columns of every table: size, path, direction.
fn key(p: &PathResult) -> Vec<String> {
    vec![
        p.frame_size.to_string(),
        path_name(p.path).to_owned(),
        direction_name(p.direction).to_owned(),
    ]
}

/// What ran, where, and how: the lines that open every page.
pub fn heading(doc: &Rfc2544Doc) -> Vec<String> {
    let device = match &doc.device.lab {
        Some(lab) => format!(
            "device {} ({}) in lab {lab}",
            doc.device.name,
            serde_json::to_value(doc.device.kind)
                .ok()
                .and_then(|v| v.as_str().map(str::to_owned))
                .unwrap_or_default()
        ),
        None => "no device: the tester's ports back to back (self-test)".to_owned(),
    };
    let s = &doc.settings;
    vec![
        format!(
            "dualperf rfc2544: {device}; tester {} on {}",
            doc.tester.method, doc.tester.cpu
        ),
        format!(
            "Settings: final trials {}{}, PDR loss ≤ {} %, timeout {}, {}, {}, ramp {}, {} back-to-back searches",
            duration(s.final_duration_ns),
            if s.quick { " (--quick)" } else { "" },
            s.pdr_ratio * 100.0,
            duration(s.timeout_ns),
            if s.bidirectional { "both directions at once" } else { "one direction" },
            if s.rfc4814_ports { "RFC 4814 ports" } else { "fixed ports" },
            duration(s.ramp_ns),
            s.b2b_repeats
        ),
        ceiling_line(doc),
    ]
}

/// The tester's ceiling in one line: `Tester ceiling (back to back, frames/s): 64 B IPv4 7,500,000 (1 core), …`.
pub fn ceiling_line(doc: &Rfc2544Doc) -> String {
    if doc.tester.ceiling.is_empty() {
        return "Tester ceiling: not measured".to_owned();
    }
    let parts: Vec<String> = doc
        .tester
        .ceiling
        .iter()
        .map(|c| {
            format!(
                "{} B {} {} ({} core{})",
                c.frame_size,
                if c.v6 { "IPv6" } else { "IPv4" },
                grouped(c.fps),
                c.cores,
                if c.cores == 1 { "" } else { "s" }
            )
        })
        .collect();
    format!(
        "Tester ceiling (back to back, frames/s): {}",
        parts.join(", ")
    )
}

/// The tester's ceiling short enough to sit left of a plot's legend:
/// `ceiling Mframes/s: 64 B 4.70, 84 B v6 4.20`.
fn ceiling_short(doc: &Rfc2544Doc) -> String {
    let parts: Vec<String> = doc
        .tester
        .ceiling
        .iter()
        .map(|c| {
            format!(
                "{} B{} {:.2}",
                c.frame_size,
                if c.v6 { " v6" } else { "" },
                c.fps as f64 / 1e6
            )
        })
        .collect();
    if parts.is_empty() {
        return "tester ceiling not measured".to_owned();
    }
    format!("ceiling Mframes/s: {}", parts.join(", "))
}

/// The page's tables, in order: throughput, latency, frame loss rate, back-to-back
/// (a table no path has figures for is left out).
pub fn tables(doc: &Rfc2544Doc) -> Vec<Tab> {
    let pdr = doc.settings.pdr_ratio * 100.0;
    let mut thr = Tab::new(
        "Throughput",
        format!(
            "RFC 2544 §26.1: NDR loses no frame, PDR at most {pdr} %; frames/s and Mbit/s of frames \
             with FCS; \"≥\": the highest load offered, the device did at least that."
        ),
        &[
            "size B", "path", "dir", "NDR frames/s", "NDR Mbit/s", "PDR frames/s", "PDR Mbit/s",
            "search",
        ],
    );
    let mut lat = Tab::new(
        "Latency",
        "RFC 8219 §7.2–7.3 over tagged frames at the throughput, µs: median (Typical), \
         p99.9 (Worst Case), PDV (p99.9 − min), IPDV (p99.9 of |ΔD|)."
            .to_owned(),
        &[
            "size B",
            "path",
            "dir",
            "load frames/s",
            "samples",
            "median",
            "p99.9",
            "PDV",
            "IPDV",
        ],
    );
    let mut flr = Tab::new(
        "Frame loss rate",
        "RFC 2544 §26.3: loss at each share of the highest rate, late frames counted lost."
            .to_owned(),
        &["size B", "path", "dir", "load %", "frames/s", "loss %"],
    );
    let mut b2b = Tab::new(
        "Back-to-back frames",
        "RFC 9004: the mean longest lossless burst at the burst rate, and the DUT buffer time \
         it implies (§3.5), µs; \"≥\": a burst as long as any tried."
            .to_owned(),
        &[
            "size B",
            "path",
            "dir",
            "rate frames/s",
            "frames (mean)",
            "searches",
            "implied µs",
            "corrected µs",
        ],
    );
    // Rows by path, then frame size (the run interleaves paths, so its order is not).
    let mut paths: Vec<&PathResult> = doc.paths.iter().collect();
    paths.sort_by_key(|p| (path_name(p.path), p.frame_size));
    for p in paths {
        if let Some(t) = &p.throughput {
            let at_least = if t.lower_bound { "≥ " } else { "" };
            let mut r = key(p);
            r.extend([
                format!("{at_least}{}", grouped(t.ndr_fps)),
                format!("{at_least}{}", mbps(t.ndr_bps)),
                format!("{at_least}{}", grouped(t.pdr_fps)),
                format!("{at_least}{}", mbps(t.pdr_bps)),
                format!(
                    "{} trials{}",
                    t.trials.len(),
                    if t.converged { "" } else { ", not converged" }
                ),
            ]);
            thr.rows.push(r);
        }
        if let Some(l) = &p.latency {
            let mut r = key(p);
            r.extend([
                grouped(l.rate_fps),
                format!(
                    "{}{}",
                    grouped(l.samples),
                    if l.too_few { " (< 500)" } else { "" }
                ),
                us(l.median_ns),
                us(l.p99_9_ns),
                us(l.pdv_ns),
                us(l.ipdv_p99_9_ns.map(|v| v.unsigned_abs())),
            ]);
            lat.rows.push(r);
        }
        for f in &p.flr {
            let mut r = key(p);
            r.extend([
                f.percent.to_string(),
                grouped(f.rate_fps),
                if f.tester_late {
                    "tester late".to_owned()
                } else {
                    pct(f.loss_ratio)
                },
            ]);
            flr.rows.push(r);
        }
        if let Some(b) = &p.back_to_back {
            let at_least = if b.lower_bound { "≥ " } else { "" };
            let mut r = key(p);
            r.extend([
                grouped(b.rate_fps),
                format!("{at_least}{:.1}", b.frames_mean),
                b.bursts.len().to_string(),
                format!("{at_least}{:.2}", b.implied_buffer_time_ns / 1e3),
                b.buffer_time_ns
                    .map_or("–".to_owned(), |ns| format!("{at_least}{:.2}", ns / 1e3)),
            ]);
            b2b.rows.push(r);
        }
    }
    [thr, lat, flr, b2b]
        .into_iter()
        .filter(|t| !t.rows.is_empty())
        .collect()
}

/// The page as aligned text, or Markdown.
pub fn text(doc: &Rfc2544Doc, markdown: bool) -> String {
    let mut out = String::new();
    if markdown {
        let _ = writeln!(out, "# dualperf rfc2544\n");
        for l in heading(doc) {
            let _ = writeln!(out, "{l}  ");
        }
    } else {
        for l in heading(doc) {
            let _ = writeln!(out, "{l}");
        }
    }
    let tabs = tables(doc);
    if tabs.is_empty() {
        let _ = writeln!(out, "\nNo benchmark figures in this run.");
    }
    for t in &tabs {
        if markdown {
            let _ = write!(out, "\n## {}\n\n{}\n\n{}", t.title, t.caption, t.markdown());
        } else {
            let _ = write!(out, "\n{}. {}\n{}", t.title, t.caption, t.text());
        }
    }
    if !doc.notes.is_empty() {
        out.push_str(if markdown {
            "\n## Notes\n\n"
        } else {
            "\nNotes:\n"
        });
        for n in &doc.notes {
            let _ = writeln!(out, "- {n}");
        }
    }
    out
}

/// The plots: NDR against frame size per path (with the tester's ceiling per family),
/// and the frame loss rate curve per frame size.
pub fn plots(doc: &Rfc2544Doc) -> Plots {
    let mut plots = Plots::default();
    let subtitle = ceiling_short(doc);
    let mut lines: Vec<plot::Line> = Vec::new();
    let add = |lines: &mut Vec<plot::Line>, name: String, x: f64, y: f64| {
        let e = plot::Estimate {
            value: y,
            interval: None,
        };
        match lines.iter_mut().find(|l| l.name == name) {
            Some(l) => l.points.push((x, e)),
            None => lines.push(plot::Line {
                name,
                points: vec![(x, e)],
            }),
        }
    };
    for p in &doc.paths {
        if let Some(t) = &p.throughput {
            let name = format!("{} {}", path_name(p.path), direction_name(p.direction));
            add(
                &mut lines,
                name,
                p.frame_size as f64,
                t.ndr_fps as f64 / 1e6,
            );
        }
    }
    let has_device = !lines.is_empty();
    for c in &doc.tester.ceiling {
        let name = format!("ceiling {}", if c.v6 { "IPv6" } else { "IPv4" });
        add(&mut lines, name, c.frame_size as f64, c.fps as f64 / 1e6);
    }
    for l in &mut lines {
        l.points.sort_by(|a, b| a.0.total_cmp(&b.0));
    }
    let title = "Throughput (NDR) by frame size".to_owned();
    if has_device {
        let svg = plot::line_chart(
            &title,
            "frame size (bytes, FCS included)",
            "NDR (Mframes/s)",
            &lines,
            &plot::Marks::default(),
        );
        plots.drawn.push(Plot {
            file: "01-rfc2544-throughput".to_owned(),
            title,
            svg: plot::with_subtitle(&svg, &subtitle),
            place: Place::Table(0),
        });
    } else {
        plots.not_drawn.push(NotDrawn {
            title,
            why: "no throughput was measured".to_owned(),
            place: Place::Table(0),
        });
    }
    let mut sizes: Vec<u64> = doc
        .paths
        .iter()
        .filter(|p| !p.flr.is_empty())
        .map(|p| p.frame_size)
        .collect();
    sizes.sort_unstable();
    sizes.dedup();
    for size in sizes {
        let lines: Vec<plot::Line> = doc
            .paths
            .iter()
            .filter(|p| p.frame_size == size && !p.flr.is_empty())
            .map(|p| plot::Line {
                name: format!("{} {}", path_name(p.path), direction_name(p.direction)),
                points: p
                    .flr
                    .iter()
                    .filter(|f| !f.tester_late)
                    .map(|f| {
                        (
                            f64::from(f.percent),
                            plot::Estimate {
                                value: f.loss_ratio * 100.0,
                                interval: None,
                            },
                        )
                    })
                    .rev()
                    .collect(),
            })
            .collect();
        let title = format!("Frame loss rate, {size}-byte frames");
        let svg = plot::line_chart(
            &title,
            "load (% of the highest rate)",
            "frames lost (%)",
            &lines,
            &plot::Marks::default(),
        );
        plots.drawn.push(Plot {
            file: format!("{:02}-rfc2544-flr-{size}", plots.drawn.len() + 1),
            title,
            svg: plot::with_subtitle(&svg, &subtitle),
            place: Place::Table(2),
        });
    }
    plots
}

/// One self-contained HTML page: the heading (the tester's ceiling first thing), every
/// table with its plots, the notes.
pub fn html(dir: &Path, doc: &Rfc2544Doc, plots: &Plots) -> String {
    let title = format!("dualperf rfc2544: {}", dir.display());
    let mut out = format!(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{}</title>\
         <style>body{{font-family:sans-serif;max-width:96em;margin:2em auto;padding:0 1em}}\
         table{{border-collapse:collapse;margin:1em 0}}td,th{{border:1px solid #ccc;padding:.2em .6em;text-align:right}}\
         caption{{text-align:left;color:#444;padding:.3em 0}}.meta{{color:#444}}\
         .ceiling{{border-left:4px solid #E69F00;padding:.4em .8em;background:#fff8e6}}\
         .plots{{display:grid;grid-template-columns:repeat(auto-fit,minmax(36em,1fr));gap:1em}}.plots svg{{width:100%;height:auto}}\
         </style></head><body>\n<h1>{}</h1>\n",
        esc(&title),
        esc(&title)
    );
    let head = heading(doc);
    for l in &head[..head.len() - 1] {
        let _ = writeln!(out, "<p class=\"meta\">{}</p>", esc(l));
    }
    let _ = writeln!(out, "<p class=\"ceiling\">{}</p>", esc(&ceiling_line(doc)));
    let tabs = tables(doc);
    // Plots are placed by table kind: 0 throughput, 2 frame loss rate.
    let kind = |t: &Tab| match t.title.as_str() {
        "Throughput" => 0,
        "Latency" => 1,
        "Frame loss rate" => 2,
        _ => 3,
    };
    for t in &tabs {
        let _ = writeln!(out, "<h2>{}</h2>\n{}", esc(&t.title), t.html());
        let mine: Vec<&Plot> = plots
            .drawn
            .iter()
            .filter(|p| p.place == Place::Table(kind(t)))
            .collect();
        if !mine.is_empty() {
            out.push_str("<div class=\"plots\">");
            for p in mine {
                let _ = write!(out, "<figure>{}</figure>", p.svg);
            }
            out.push_str("</div>\n");
        }
        for n in plots
            .not_drawn
            .iter()
            .filter(|n| n.place == Place::Table(kind(t)))
        {
            let _ = writeln!(out, "<p>{}: {}</p>", esc(&n.title), esc(&n.why));
        }
    }
    if !doc.notes.is_empty() {
        out.push_str("<h2>Notes</h2><ul>");
        for n in &doc.notes {
            let _ = write!(out, "<li>{}</li>", esc(n));
        }
        out.push_str("</ul>\n");
    }
    out.push_str("</body></html>\n");
    out
}

#[cfg(test)]
mod tests {
    use results::bmwg::*;

    use super::*;

    fn trial(rate_fps: u64, offered: u64, received: u64) -> Trial {
        Trial {
            rate_fps,
            duration_ns: 10_000_000_000,
            offered,
            received,
            late: 0,
            loss_ratio: (offered - received) as f64 / offered as f64,
            tester_late: false,
        }
    }

    fn throughput(ndr: u64, pdr: u64, size: u64, lower_bound: bool) -> Throughput {
        Throughput {
            ndr_fps: ndr,
            pdr_fps: pdr,
            ndr_bps: frame_bps(size, ndr),
            pdr_bps: frame_bps(size, pdr),
            ndr_upper_fps: None,
            pdr_upper_fps: None,
            lower_bound,
            converged: !lower_bound,
            trials: vec![
                trial(ndr, ndr * 10, ndr * 10),
                trial(pdr, pdr * 10, pdr * 10),
            ],
        }
    }

    /// A tayga run: 64-byte IPv4 at the tester's ceiling, 84-byte NAT64 below it with
    /// latency, loss curve and back-to-back.
    fn doc() -> Rfc2544Doc {
        Rfc2544Doc {
            schema: RFC2544_SCHEMA.into(),
            device: Device {
                name: "dut".into(),
                kind: DeviceKind::Tayga,
                lab: Some("dut-tayga".into()),
            },
            tester: Tester {
                method: "xdp-live-frames".into(),
                ceiling: vec![
                    Ceiling {
                        frame_size: 64,
                        v6: false,
                        fps: 4_700_000,
                        cores: 1,
                    },
                    Ceiling {
                        frame_size: 84,
                        v6: true,
                        fps: 4_200_000,
                        cores: 1,
                    },
                ],
                cpu: "virtual".into(),
            },
            settings: Settings {
                quick: true,
                initial_duration_ns: 1_000_000_000,
                final_duration_ns: 10_000_000_000,
                pdr_ratio: 0.005,
                precision: 0.005,
                timeout_ns: 2_000_000,
                bidirectional: false,
                rfc4814_ports: true,
                ramp_ns: 100_000_000,
                b2b_repeats: 5,
            },
            paths: vec![
                PathResult {
                    path: PathKind::Ipv4,
                    frame_size: 64,
                    direction: Direction::AToB,
                    throughput: Some(throughput(4_700_000, 4_700_000, 64, true)),
                    latency: None,
                    flr: Vec::new(),
                    back_to_back: None,
                },
                PathResult {
                    path: PathKind::Nat64,
                    frame_size: 84,
                    direction: Direction::AToB,
                    throughput: Some(throughput(812_345, 814_990, 84, false)),
                    latency: Some(Latency {
                        rate_fps: 812_345,
                        samples: 12_690,
                        lost: 0,
                        min_ns: Some(8_100),
                        median_ns: Some(12_345),
                        p99_9_ns: Some(98_765),
                        max_ns: Some(120_000),
                        pdv_ns: Some(90_665),
                        ipdv_p99_9_ns: Some(45_000),
                        too_few: false,
                    }),
                    flr: vec![
                        FlrPoint {
                            percent: 100,
                            rate_fps: 1_000_000,
                            loss_ratio: 0.187655,
                            tester_late: false,
                        },
                        FlrPoint {
                            percent: 90,
                            rate_fps: 900_000,
                            loss_ratio: 0.097,
                            tester_late: false,
                        },
                        FlrPoint {
                            percent: 80,
                            rate_fps: 800_000,
                            loss_ratio: 0.0,
                            tester_late: false,
                        },
                    ],
                    back_to_back: Some(BackToBack {
                        rate_fps: 4_200_000,
                        frames_mean: 1234.4,
                        bursts: vec![1200, 1250, 1253],
                        implied_buffer_time_ns: 293_904.8,
                        buffer_time_ns: Some(237_000.0),
                        lower_bound: false,
                        trials: Vec::new(),
                    }),
                },
            ],
            notes: vec!["64-byte IPv4 reached the tester's ceiling: a lower bound.".into()],
        }
    }

    #[test]
    fn the_text_page_opens_with_the_ceiling_and_marks_lower_bounds() {
        let expected = "\
dualperf rfc2544: device dut (tayga) in lab dut-tayga; tester xdp-live-frames on virtual
Settings: final trials 10 s (--quick), PDR loss ≤ 0.5 %, timeout 2 ms, one direction, RFC 4814 ports, ramp 100 ms, 5 back-to-back searches
Tester ceiling (back to back, frames/s): 64 B IPv4 4,700,000 (1 core), 84 B IPv6 4,200,000 (1 core)

Throughput. RFC 2544 §26.1: NDR loses no frame, PDR at most 0.5 %; frames/s and Mbit/s of frames with FCS; \"≥\": the highest load offered, the device did at least that.
size B   path  dir  NDR frames/s  NDR Mbit/s  PDR frames/s  PDR Mbit/s                   search
-----------------------------------------------------------------------------------------------
64       IPv4  a→b   ≥ 4,700,000    ≥ 2406.4   ≥ 4,700,000    ≥ 2406.4  2 trials, not converged
84      NAT64  a→b       812,345       545.9       814,990       547.7                 2 trials

Latency. RFC 8219 §7.2–7.3 over tagged frames at the throughput, µs: median (Typical), p99.9 (Worst Case), PDV (p99.9 − min), IPDV (p99.9 of |ΔD|).
size B   path  dir  load frames/s  samples  median  p99.9    PDV   IPDV
-----------------------------------------------------------------------
84      NAT64  a→b        812,345   12,690   12.35  98.77  90.67  45.00

Frame loss rate. RFC 2544 §26.3: loss at each share of the highest rate, late frames counted lost.
size B   path  dir  load %   frames/s  loss %
---------------------------------------------
84      NAT64  a→b     100  1,000,000  18.765
84      NAT64  a→b      90    900,000   9.700
84      NAT64  a→b      80    800,000   0.000

Back-to-back frames. RFC 9004: the mean longest lossless burst at the burst rate, and the DUT buffer time it implies (§3.5), µs; \"≥\": a burst as long as any tried.
size B   path  dir  rate frames/s  frames (mean)  searches  implied µs  corrected µs
------------------------------------------------------------------------------------
84      NAT64  a→b      4,200,000         1234.4         3      293.90        237.00

Notes:
- 64-byte IPv4 reached the tester's ceiling: a lower bound.
";
        assert_eq!(text(&doc(), false), expected);
    }

    #[test]
    fn markdown_has_a_section_per_table() {
        let md = text(&doc(), true);
        assert!(md.starts_with("# dualperf rfc2544\n\n"));
        assert_eq!(md.matches("\n## ").count(), 5, "{md}");
        assert!(md.contains(
            "| 64 | IPv4 | a→b | ≥ 4,700,000 | ≥ 2406.4 | ≥ 4,700,000 | ≥ 2406.4 | 2 trials, not converged |\n"
        ));
    }

    #[test]
    fn a_table_without_figures_is_left_out() {
        let mut d = doc();
        d.paths.truncate(1);
        let titles: Vec<String> = tables(&d).into_iter().map(|t| t.title).collect();
        assert_eq!(titles, ["Throughput"]);
        d.paths.clear();
        d.tester.ceiling.clear();
        let t = text(&d, false);
        assert!(t.contains("Tester ceiling: not measured\n\nNo benchmark figures in this run.\n"));
    }

    #[test]
    fn plots_are_ndr_by_size_and_one_loss_curve_per_size_each_naming_the_ceiling() {
        let p = plots(&doc());
        let titles: Vec<&str> = p.drawn.iter().map(|p| p.title.as_str()).collect();
        assert_eq!(
            titles,
            [
                "Throughput (NDR) by frame size",
                "Frame loss rate, 84-byte frames"
            ]
        );
        assert_eq!(p.drawn[1].file, "02-rfc2544-flr-84");
        for plot in &p.drawn {
            assert!(
                plot.svg
                    .contains("ceiling Mframes/s: 64 B 4.70, 84 B v6 4.20"),
                "{}",
                plot.title
            );
        }
        // Legend: the two paths and the two ceilings.
        for name in ["IPv4 a→b", "NAT64 a→b", "ceiling IPv4", "ceiling IPv6"] {
            assert!(p.drawn[0].svg.contains(name), "{name}");
        }
        let mut d = doc();
        d.paths.clear();
        let p = plots(&d);
        assert!(p.drawn.is_empty());
        assert_eq!(p.not_drawn[0].why, "no throughput was measured");
    }

    #[test]
    fn one_loss_curve_per_size_whatever_the_order_the_paths_ran_in() {
        let mut d = doc();
        let nat64 = d.paths[1].clone();
        d.paths[0].flr = nat64.flr.clone();
        d.paths.push(PathResult {
            path: PathKind::Ipv6,
            ..nat64
        });
        // Sizes 64, 84, 84 then 84, 64, 84: two curves either way.
        for _ in 0..2 {
            let titles: Vec<String> = plots(&d).drawn.into_iter().map(|p| p.title).collect();
            assert_eq!(
                titles[1..],
                [
                    "Frame loss rate, 64-byte frames",
                    "Frame loss rate, 84-byte frames"
                ]
            );
            d.paths.swap(0, 1);
        }
    }

    #[test]
    fn the_html_page_states_the_ceiling_and_holds_tables_and_plots() {
        let d = doc();
        let page = html(Path::new("runs/x"), &d, &plots(&d));
        assert_eq!(
            page.matches(
                "<p class=\"ceiling\">Tester ceiling (back to back, frames/s): 64 B IPv4 4,700,000"
            )
            .count(),
            1
        );
        assert_eq!(page.matches("<table>").count(), 4);
        assert_eq!(page.matches("<svg").count(), 2);
        assert!(page.contains("<td>≥ 4,700,000</td>"));
        assert!(page.ends_with("</body></html>\n"));
    }

    #[test]
    fn load_reads_the_document_and_refuses_another_version() {
        let dir = std::env::temp_dir().join(format!("dp-report-rfc2544-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        assert!(!is_rfc2544_dir(&dir));
        let mut d = doc();
        std::fs::write(dir.join(FILE), serde_json::to_string(&d).unwrap()).unwrap();
        assert!(is_rfc2544_dir(&dir));
        assert_eq!(load(&dir).unwrap(), d);
        d.schema = "dualperf.rfc2544/9".into();
        std::fs::write(dir.join(FILE), serde_json::to_string(&d).unwrap()).unwrap();
        let e = load(&dir).unwrap_err().to_string();
        std::fs::remove_dir_all(&dir).unwrap();
        assert!(e.ends_with("is dualperf.rfc2544/9, not dualperf.rfc2544/1: read it with the dualperf that wrote it"), "{e}");
    }

    #[test]
    fn numbers_group_by_thousands() {
        assert_eq!(
            [0, 999, 1_000, 812_345, 4_700_000].map(grouped),
            ["0", "999", "1,000", "812,345", "4,700,000"]
        );
    }
}
