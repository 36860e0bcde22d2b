//! The report's plots: one chart per table and metric, IPv4 against IPv6.

use meter::repeat::Sample;

use crate::plot;
use crate::stats::Results;
use crate::tables::Table;

/// A plot and the file name it is saved under.
pub struct Plot {
    /// Its file name without extension, numbered (`01-Table_3-throughput`).
    pub file: String,
    /// The SVG document.
    pub svg: String,
    /// Index of its table.
    pub table: usize,
}

fn estimate(s: Option<&Sample>, scale: f64) -> Option<plot::Estimate> {
    s.map(|s| plot::Estimate {
        value: s.mean / scale,
        interval: s.ci_low.zip(s.ci_high).map(|(a, b)| (a / scale, b / scale)),
    })
}

/// One plot per table and metric: a line chart against the table's numeric factor (the
/// payload size) with confidence bands, else bars per row with error bars.
pub fn plots(tables: &[Table], results: &Results) -> Vec<Plot> {
    let mut out = Vec::new();
    for (ti, t) in tables.iter().enumerate() {
        for c in &t.metrics {
            let title = if t.metrics.len() == 1 {
                t.title.clone()
            } else {
                format!("{} – {}", t.title, c.metric.title())
            };
            let pick = |point: &str, family: u8| {
                results.row(point, c).and_then(|r| {
                    if family == 4 {
                        r.ipv4.as_ref()
                    } else {
                        r.ipv6.as_ref()
                    }
                })
            };
            let svg = match &t.x {
                Some(xs) => {
                    let line = |name: &str, family: u8| {
                        let mut points: Vec<(f64, plot::Estimate)> = t
                            .rows
                            .iter()
                            .zip(xs)
                            .filter_map(|(r, x)| {
                                estimate(pick(&r.point, family), c.unit.scale).map(|e| (*x, e))
                            })
                            .collect();
                        points.sort_by(|a, b| a.0.total_cmp(&b.0));
                        plot::Line {
                            name: name.into(),
                            points,
                        }
                    };
                    plot::line_chart(
                        &title,
                        &t.label_heading,
                        &c.heading(),
                        &[line("IPv4", 4), line("IPv6", 6)],
                    )
                }
                None => {
                    let cats: Vec<String> = t.rows.iter().map(|r| r.label.clone()).collect();
                    let bars = |name: &str, family: u8| plot::Bars {
                        name: name.into(),
                        values: t
                            .rows
                            .iter()
                            .map(|r| estimate(pick(&r.point, family), c.unit.scale))
                            .collect(),
                    };
                    plot::bar_chart(
                        &title,
                        &c.heading(),
                        &cats,
                        &[bars("IPv4", 4), bars("IPv6", 6)],
                    )
                }
            };
            // Numbered, so two titles alike once made safe never overwrite each other;
            // the title comes from the plan, so only safe characters reach a file name.
            // Cut to 100 characters: a long title must not make the name too long.
            let name: String = lab::plan::file_safe(&format!("{}-{}", t.title, c.metric.key()))
                .chars()
                .take(100)
                .collect();
            let file = format!("{:02}-{name}", out.len() + 1);
            out.push(Plot {
                file,
                svg,
                table: ti,
            });
        }
    }
    out
}
