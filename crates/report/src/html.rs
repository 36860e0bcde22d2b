//! The report as one self-contained HTML page: every table, and each table's plots as
//! inline SVG.

use std::fmt::Write;
use std::path::PathBuf;

use meter::repeat::{DEFAULT_ALPHA, DEFAULT_LEVEL};

use crate::charts::{Place, Plots};
use crate::load::Provenance;
use crate::render::{caption, cells, header, one_run_notice, DOCTOR_HEADING, ONE_RUN};
use crate::stats::Results;
use crate::tables::Table;

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// One page, nothing fetched: styles inline, plots as inline SVG. It opens with what
/// was run, where and when, and says plainly when points have one run.
pub fn html(
    dirs: &[PathBuf],
    tables: &[Table],
    results: &Results,
    plots: &Plots,
    provenance: &Provenance,
    partial: &[String],
) -> String {
    let title = format!(
        "dualperf report: {}",
        provenance.plan.as_deref().unwrap_or("runs")
    );
    let mut out = format!(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{}</title>\
         <style>body{{font-family:sans-serif;max-width:96em;margin:2em auto;padding:0 1em}}\
         table{{border-collapse:collapse;margin:1em 0}}td,th{{border:1px solid #ccc;padding:.2em .6em;text-align:right}}\
         td:first-child,th:first-child{{text-align:left}}.ns{{color:#777}}caption{{text-align:left;color:#444;padding:.3em 0}}\
         .meta{{color:#444}}.notice{{border-left:4px solid #E69F00;padding:.4em .8em;background:#fff8e6}}.partial{{font-weight:bold}}\
         .plots{{display:grid;grid-template-columns:repeat(auto-fit,minmax(36em,1fr));gap:1em}}.plots svg{{width:100%;height:auto}}\
         </style></head><body>\n",
        esc(&title)
    );
    let _ = writeln!(
        out,
        "<h1>{}</h1><p class=\"meta\">{}</p><p>{} runs from {}. Each cell is the mean over repetitions and its \
         {:.0} % confidence interval: [low, high] by the percentile bootstrap for metrics that cannot be negative, \
         ± half-width (Student t) for delays that may be one-way. Δ % = (IPv6 − IPv4) / IPv4; p from Welch's t-test; g is \
         Hedges' g; a difference with p ≥ {DEFAULT_ALPHA} is <em>not significant</em> (n.s.), whatever its size.</p>",
        esc(&title),
        esc(&provenance.line()),
        results.runs,
        esc(&dirs
            .iter()
            .map(|d| d.display().to_string())
            .collect::<Vec<_>>()
            .join(", ")),
        DEFAULT_LEVEL * 100.0
    );
    if let Some(notice) = one_run_notice(results) {
        let _ = writeln!(out, "<p class=\"notice\">{}</p>", esc(&notice));
    }
    // A partial run: its runs done against planned, each point short of some.
    if let Some((head, points)) = partial.split_first() {
        let _ = write!(
            out,
            "<div class=\"notice partial\"><p>{}</p><ul>",
            esc(head)
        );
        for line in points {
            let _ = write!(out, "<li>{}</li>", esc(line.trim_start()));
        }
        out.push_str("</ul></div>\n");
    }
    if !provenance.doctor.is_empty() {
        let _ = write!(
            out,
            "<div class=\"notice doctor\"><p>{}</p><ul>",
            esc(DOCTOR_HEADING)
        );
        for line in &provenance.doctor {
            let _ = write!(out, "<li>{}</li>", esc(line));
        }
        out.push_str("</ul></div>\n");
    }
    for (ti, t) in tables.iter().enumerate() {
        let _ = writeln!(out, "<h2>{}</h2>", esc(&t.title));
        if let Some(p) = &t.partial {
            let _ = writeln!(out, "<p class=\"notice partial\">{}</p>", esc(&p.note));
        }
        let _ = write!(
            out,
            "<table><caption>{}</caption><tr>",
            esc(&caption(t, results).join(" "))
        );
        for h in header(t, results) {
            let _ = write!(out, "<th>{}</th>", esc(&h));
        }
        out.push_str("</tr>\n");
        for r in &t.rows {
            let _ = write!(out, "<tr><td>{}</td>", esc(&r.label));
            for c in cells(t, results, &r.point, &r.label) {
                let class = if c.contains("not significant")
                    || c.contains("(n.s.)")
                    || c.contains(ONE_RUN)
                    || c.contains("(one run)")
                {
                    " class=\"ns\""
                } else {
                    ""
                };
                let _ = write!(out, "<td{class}>{}</td>", esc(&c));
            }
            out.push_str("</tr>\n");
        }
        out.push_str("</table>\n");
        for note in &t.notes {
            let _ = writeln!(out, "<p class=\"note\">{}</p>", esc(note));
        }
        place_plots(&mut out, plots, &Place::Table(ti));
    }
    // Plots of a point no table of it shows the metric of: a section per point.
    let mut sections: Vec<&str> = Vec::new();
    let points = plots.drawn.iter().map(|p| &p.place);
    for place in points.chain(plots.not_drawn.iter().map(|n| &n.place)) {
        if let Place::Point(p) = place {
            if !sections.contains(&p.as_str()) {
                sections.push(p);
            }
        }
    }
    for p in sections {
        let name = crate::charts::point_name(results, p);
        let _ = writeln!(out, "<h2>Point {}</h2>", esc(&name));
        place_plots(&mut out, plots, &Place::Point(p.to_owned()));
    }
    if let Some(facts) = &provenance.path_facts {
        out.push_str(&crate::path::html(facts));
    }
    out.push_str("</body></html>\n");
    out
}

/// The plots of one place on the page: first what is not drawn and why, in words, then
/// the plots.
fn place_plots(out: &mut String, plots: &Plots, place: &Place) {
    for n in plots.not_drawn.iter().filter(|n| &n.place == place) {
        let _ = writeln!(out, "<p class=\"not-drawn\">{}</p>", esc(&n.why));
    }
    out.push_str("<div class=\"plots\">\n");
    for p in plots.drawn.iter().filter(|p| &p.place == place) {
        out.push_str(&p.svg);
        out.push('\n');
    }
    out.push_str("</div>\n");
}
