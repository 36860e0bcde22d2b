//! The report as one self-contained HTML page: every table, and each table's plots as
//! inline SVG.

use std::fmt::Write;
use std::path::PathBuf;

use meter::repeat::{DEFAULT_ALPHA, DEFAULT_LEVEL};

use crate::charts::Plot;
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
    plots: &[Plot],
    provenance: &Provenance,
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
         .meta{{color:#444}}.notice{{border-left:4px solid #E69F00;padding:.4em .8em;background:#fff8e6}}\
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
        let _ = write!(
            out,
            "<h2>{}</h2>\n<table><caption>{}</caption><tr>",
            esc(&t.title),
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
        out.push_str("<div class=\"plots\">\n");
        for p in plots.iter().filter(|p| p.table == ti) {
            out.push_str(&p.svg);
            out.push('\n');
        }
        out.push_str("</div>\n");
    }
    out.push_str("</body></html>\n");
    out
}
