//! The report's plots, IPv4 against IPv6: per table and metric a chart of the means
//! with their intervals and a box plot of the runs; per point, when the runs kept
//! interval series (`--interval`), its runs' throughput over time.

use lab::tables::{Column, MetricKind};
use meter::repeat::Sample;

use crate::plot;
use crate::stats::Results;
use crate::tables::Table;
use crate::units::PageUnits;

/// What a plot's significance marks mean, under it.
pub const MARKS_NOTE: &str =
    "* p < 0.05, ** p < 0.01: IPv6 vs IPv4 by Welch's t-test (2 or more runs a side); unmarked: not significant";

/// The mark of a difference: `**` at p < 0.01, `*` at p < 0.05 (Welch's t-test, the
/// conventional levels), none otherwise or with fewer than two runs on a side, where
/// there is no test.
pub fn stars(ipv4: Option<&Sample>, ipv6: Option<&Sample>, p: Option<f64>) -> Option<&'static str> {
    let (a, b) = (ipv4?, ipv6?);
    if a.n < 2 || b.n < 2 {
        return None;
    }
    match p? {
        p if p < 0.01 => Some("**"),
        p if p < 0.05 => Some("*"),
        _ => None,
    }
}

/// The significance marks of a table's column, by row (the row's x value, or its
/// index), and the note when some row has a test to mark.
fn marks(t: &Table, results: &Results, c: &Column, xs: Option<&[f64]>) -> plot::Marks {
    let mut out = plot::Marks::default();
    for (i, r) in t.rows.iter().enumerate() {
        let Some(row) = results.row(&r.point, c) else {
            continue;
        };
        let tested = row
            .ipv4
            .zip(row.ipv6)
            .is_some_and(|(a, b)| a.n >= 2 && b.n >= 2)
            && row.ipv6_vs_ipv4.is_some_and(|c| c.p.is_some());
        if tested {
            out.note = Some(MARKS_NOTE.to_owned());
        }
        let p = row.ipv6_vs_ipv4.and_then(|c| c.p);
        if let Some(m) = stars(row.ipv4.as_ref(), row.ipv6.as_ref(), p) {
            let at = xs.map_or(i as f64, |xs| xs[i]);
            out.at.push((at, m));
        }
    }
    out
}

/// A plot's title: the table's, and the metric's when the table has several, unless
/// the table's title names it already ("UDP Round Trip Time", not "UDP Round Trip
/// Time – Round trip time").
fn plot_title(t: &Table, c: &Column) -> String {
    let squash = |s: &str| {
        s.chars()
            .filter(|ch| ch.is_alphanumeric())
            .flat_map(char::to_lowercase)
            .collect::<String>()
    };
    let named = squash(&t.title).contains(&squash(c.metric.title()))
        || (c.metric == MetricKind::Rtt && t.title.contains("RTT"));
    if t.metrics.len() == 1
        || named
            && t.metrics
                .iter()
                .filter(|m| squash(&t.title).contains(&squash(m.metric.title())))
                .count()
                == 1
    {
        t.title.clone()
    } else {
        format!("{} – {}", t.title, c.metric.title())
    }
}

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
/// payload size) with confidence bands, else bars per row with error bars. Each carries
/// `provenance` (plan, host, date, version) under its title, and says so when its
/// points have one run: no bands, no bars, no statistics.
pub fn plots(
    tables: &[Table],
    results: &Results,
    units: &PageUnits,
    provenance: &str,
) -> Vec<Plot> {
    let mut out = Vec::new();
    let mut timed: Vec<&str> = Vec::new();
    for (ti, t) in tables.iter().enumerate() {
        for c in &t.metrics {
            let title = plot_title(t, c);
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
                        &marks(t, results, c, Some(xs)),
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
                        &marks(t, results, c, None),
                    )
                }
            };
            let one_run = t.rows.iter().all(|r| {
                [pick(&r.point, 4), pick(&r.point, 6)]
                    .into_iter()
                    .flatten()
                    .all(|s| s.n < 2)
            });
            let subtitle = if one_run {
                // First, so a long provenance cut short never hides it.
                format!("{} · {provenance}", crate::render::ONE_RUN)
            } else {
                provenance.to_owned()
            };
            let svg = plot::with_subtitle(&svg, &subtitle);
            // Numbered, so two titles alike once made safe never overwrite each other;
            // the title comes from the plan, so only safe characters reach a file name.
            // Cut to 100 characters: a long title must not make the name too long.
            let name: String = lab::plan::file_safe(&format!("{}-{}", t.title, c.metric.key()))
                .chars()
                .take(100)
                .collect();
            push(&mut out, &name, svg, ti);
            // The runs behind the means: a box per point and family.
            let cats: Vec<String> = t.rows.iter().map(|r| r.label.clone()).collect();
            let boxes = |name: &str, family: usize| plot::Boxes {
                name: name.into(),
                values: t
                    .rows
                    .iter()
                    .map(|r| {
                        results.run_values(&r.point, c).map_or(Vec::new(), |v| {
                            [v.0, v.1][family]
                                .iter()
                                .map(|x| x / c.unit.scale)
                                .collect()
                        })
                    })
                    .collect(),
            };
            let svg = plot::box_chart(
                &format!("{title}, run by run"),
                &t.label_heading,
                &c.heading(),
                &cats,
                &[boxes("IPv4", 0), boxes("IPv6", 1)],
            );
            let svg = plot::with_subtitle(&svg, &subtitle);
            push(&mut out, &format!("{name}-runs"), svg, ti);
        }
        // Each point's runs over time and its delay distributions, once, under the
        // first table that shows it.
        for r in &t.rows {
            if timed.contains(&r.point.as_str()) {
                continue;
            }
            timed.push(&r.point);
            if let Some((name, svg)) = cdf_plot(r, &t.label_heading, results, units, provenance) {
                push(&mut out, &name, svg, ti);
            }
            let runs: Vec<&crate::stats::RunSeries> = results
                .series
                .iter()
                .filter(|s| s.point == r.point)
                .collect();
            if runs.is_empty() {
                continue;
            }
            // The page's throughput unit, else one for these values.
            let unit = units.or_choose(
                MetricKind::Throughput,
                runs.iter().flat_map(|s| s.throughput.iter().map(|p| p.1)),
            );
            let series: Vec<plot::Series> = runs
                .iter()
                .map(|s| plot::Series {
                    family: usize::from(s.family == 6),
                    points: s
                        .throughput
                        .iter()
                        .map(|(x, b)| (*x, b / unit.scale))
                        .collect(),
                })
                .collect();
            let svg = plot::series_chart(
                &format!(
                    "{} {}: throughput by interval, every run",
                    t.label_heading, r.label
                ),
                "Time since the run's first window (s)",
                &format!("Throughput ({unit})"),
                &["IPv4", "IPv6"],
                &series,
                false,
            );
            let svg = plot::with_subtitle(&svg, provenance);
            let name: String =
                lab::plan::file_safe(&format!("{}-{}-over-time", t.label_heading, r.label))
                    .chars()
                    .take(100)
                    .collect();
            push(&mut out, &name, svg, ti);
        }
    }
    out
}

/// Each point's delay distribution, every run (`send --cdf`): the share of packets
/// (0 to 1) against the delay, in the page's delay unit (else one chosen from the
/// medians), on a log axis when the delays span more than two decades or the slowest
/// passes ten times the median (loopback's 2 µs to 3 ms would crowd every run's body
/// against the left edge).
fn cdf_plot(
    r: &crate::tables::TableRow,
    heading: &str,
    results: &Results,
    units: &PageUnits,
    provenance: &str,
) -> Option<(String, String)> {
    let runs: Vec<&crate::stats::RunCdf> =
        results.cdfs.iter().filter(|c| c.point == r.point).collect();
    if runs.is_empty() {
        return None;
    }
    let unit = units.or_choose(
        MetricKind::Delay,
        runs.iter().map(|c| c.delay_ns[50] as f64),
    );
    let (lo, hi) = runs
        .iter()
        .flat_map(|c| c.delay_ns.iter())
        .fold((i64::MAX, i64::MIN), |(a, b), d| (a.min(*d), b.max(*d)));
    // Over two decades, or a tail past ten times the median that would squash the
    // body of the distribution against the left edge.
    let median = runs.iter().map(|c| c.delay_ns[50]).max().unwrap_or(0);
    let log = lo > 0 && (hi as f64 / lo as f64 > 100.0 || hi as f64 / median as f64 > 10.0);
    let what = if runs.iter().all(|c| c.round_trip) {
        "Round-trip time"
    } else {
        "One-way delay"
    };
    let series: Vec<plot::Series> = runs
        .iter()
        .map(|c| plot::Series {
            family: usize::from(c.family == 6),
            points: c
                .delay_ns
                .iter()
                .enumerate()
                .map(|(p, d)| (*d as f64 / unit.scale, p as f64 / 100.0))
                .collect(),
        })
        .collect();
    let svg = plot::series_chart(
        &format!(
            "{heading} {}: {} distribution, every run",
            r.label,
            what.to_lowercase()
        ),
        &format!("{what} ({unit})"),
        "Share of packets (CDF)",
        &["IPv4", "IPv6"],
        &series,
        log,
    );
    let name: String = lab::plan::file_safe(&format!("{heading}-{}-cdf", r.label))
        .chars()
        .take(100)
        .collect();
    Some((name, plot::with_subtitle(&svg, provenance)))
}

/// Adds a plot, numbered, so two names alike never overwrite each other.
fn push(out: &mut Vec<Plot>, name: &str, svg: String, table: usize) {
    let file = format!("{:02}-{name}", out.len() + 1);
    out.push(Plot { file, svg, table });
}
