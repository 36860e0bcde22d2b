//! The report's plots, IPv4 against IPv6: per table and metric a chart of the means
//! with their intervals and a box plot of the runs; per point, when the runs kept
//! interval series (`--interval`), its runs' throughput over time.

use lab::tables::Column;
use meter::repeat::Sample;
use results::metric::{self, Metric};

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
    let named = squash(&t.title).contains(&squash(c.metric.title))
        || (c.metric == metric::RTT && t.title.contains("RTT"));
    if t.metrics.len() == 1
        || named
            && t.metrics
                .iter()
                .filter(|m| squash(&t.title).contains(&squash(m.metric.title)))
                .count()
                == 1
    {
        t.title.clone()
    } else {
        format!("{} – {}", t.title, c.metric.title)
    }
}

/// Where a plot sits on the HTML page.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Place {
    /// Right after this table (its index): the table's own plots, and a point's plots
    /// under the first table that shows the point and their metric (its delay
    /// distribution under a delay's table, its throughput over time under a
    /// throughput's).
    Table(usize),
    /// In a section of its own naming the point (its name): a point's plot whose
    /// metric no table of the point shows.
    Point(String),
}

/// A plot and the file name it is saved under.
pub struct Plot {
    /// Its file name without extension, numbered (`01-Table_3-throughput`).
    pub file: String,
    /// Its title, unique among a report's plots (a point's plots name the point).
    pub title: String,
    /// The SVG document.
    pub svg: String,
    /// Where it sits on the page.
    pub place: Place,
}

/// A plot that is not drawn, and why in words (an all-zero series: "no loss in any
/// run"), said where it would have been.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NotDrawn {
    /// The title it would have had.
    pub title: String,
    /// Why, in words.
    pub why: String,
    /// Where it would have sat.
    pub place: Place,
}

/// A report's plots: those drawn, in page order, and those said in words instead.
#[derive(Default)]
pub struct Plots {
    /// The plots drawn.
    pub drawn: Vec<Plot>,
    /// The plots with nothing to show.
    pub not_drawn: Vec<NotDrawn>,
}

impl Plots {
    /// Adds a plot, numbered, so two names alike never overwrite each other; its title
    /// is made unique by [`Plots::title`] before it is drawn.
    fn push(&mut self, name: &str, title: String, svg: String, place: Place) {
        let file = format!("{:02}-{name}", self.drawn.len() + 1);
        self.drawn.push(Plot {
            file,
            title,
            svg,
            place,
        });
    }

    /// `title`, or `title (2)`, `(3)`… when a plot already has it: every plot's title
    /// is unique on the page.
    fn title(&self, title: String) -> String {
        let taken = |t: &str| {
            self.drawn.iter().any(|p| p.title == t) || self.not_drawn.iter().any(|n| n.title == t)
        };
        if !taken(&title) {
            return title;
        }
        (2..)
            .map(|i| format!("{title} ({i})"))
            .find(|t| !taken(t))
            .unwrap_or(title)
    }
}

fn estimate(s: Option<&Sample>, scale: f64) -> Option<plot::Estimate> {
    s.map(|s| plot::Estimate {
        value: s.mean / scale,
        interval: s.ci_low.zip(s.ci_high).map(|(a, b)| (a / scale, b / scale)),
    })
}

/// Why a metric's plots have nothing to draw: no run measured it, or every run
/// measured 0 (said in words, not drawn empty); `None` when they have something.
fn nothing_to_draw(t: &Table, results: &Results, c: &Column) -> Option<String> {
    let values: Vec<f64> = t
        .rows
        .iter()
        .filter_map(|r| results.run_values(&r.point, c))
        .flat_map(|(a, b)| a.iter().chain(b).copied())
        .collect();
    if values.is_empty() {
        return Some(format!(
            "{}: no run measured it, so there is nothing to plot",
            c.heading()
        ));
    }
    if values.iter().any(|v| *v != 0.0) {
        return None;
    }
    let what = if c.metric == metric::LOSS {
        "no loss in any run".to_owned()
    } else {
        format!("{} 0 in every run", c.metric.title.to_lowercase())
    };
    Some(format!(
        "{}: {what} (0 {} at every point, IPv4 and IPv6), so it is not plotted",
        c.heading(),
        c.unit
    ))
}

/// A point's name for a plot's title and a section's heading: its label, else its
/// factors (`UDP, size 64`), else its id.
pub fn point_name(results: &Results, point: &str) -> String {
    let Some(factors) = results
        .rows
        .iter()
        .find(|r| r.point == point)
        .map(|r| &r.factors)
    else {
        return point.to_owned();
    };
    if let Some(label) = factors.get("point") {
        return label.clone();
    }
    let mut parts: Vec<String> = factors
        .iter()
        .filter(|(k, _)| k.as_str() != "group")
        .map(|(k, v)| match k.as_str() {
            "protocol" => v.to_uppercase(),
            _ => format!("{} {v}", k.replace('_', " ")),
        })
        .collect();
    // The protocol first: "UDP, size 64".
    parts.sort_by_key(|p| !p.chars().all(|c| c.is_ascii_uppercase()));
    if parts.is_empty() {
        point.to_owned()
    } else {
        parts.join(", ")
    }
}

/// Where a point's plot of `metric` goes: the first table that holds the point and
/// shows the metric of its measured flow, else a section of the point's own.
fn home(tables: &[Table], point: &str, shows: impl Fn(&Metric) -> bool) -> Place {
    tables
        .iter()
        .position(|t| {
            t.rows.iter().any(|r| r.point == point)
                && t.metrics
                    .iter()
                    .any(|c| c.flow == 0 && c.router.is_none() && shows(&c.metric))
        })
        .map_or_else(|| Place::Point(point.to_owned()), Place::Table)
}

/// One plot per table and metric: a line chart against the table's numeric factor (the
/// payload size) with confidence bands, else bars per row with error bars, and a box
/// plot of the runs; an all-zero metric is said in words instead. Each carries
/// `provenance` (plan, host, date, version) under its title, and says so when its
/// points have one run: no bands, no bars, no statistics. After a table's plots, the
/// plots of each point it is the home of ([`home`]): its delay distribution and its
/// throughput over time, titled with the point's name.
pub fn plots(tables: &[Table], results: &Results, units: &PageUnits, provenance: &str) -> Plots {
    let mut out = Plots::default();
    let mut points: Vec<&str> = Vec::new();
    for t in tables {
        for r in &t.rows {
            if !points.contains(&r.point.as_str()) {
                points.push(&r.point);
            }
        }
    }
    let cdf_home = |p: &str| home(tables, p, |m| m.covers(&metric::DELAY));
    let series_home = |p: &str| home(tables, p, |m| *m == metric::THROUGHPUT);
    for (ti, t) in tables.iter().enumerate() {
        for c in &t.metrics {
            table_plots(&mut out, ti, t, c, results, provenance);
        }
        for p in points
            .iter()
            .filter(|p| t.rows.iter().any(|r| r.point == **p))
        {
            if cdf_home(p) == Place::Table(ti) {
                cdf_plot(&mut out, p, results, units, provenance, Place::Table(ti));
            }
            if series_home(p) == Place::Table(ti) {
                series_plot(&mut out, p, results, units, provenance, Place::Table(ti));
            }
        }
    }
    // A point whose delay or throughput no table of it shows: a section of its own.
    for p in &points {
        if let place @ Place::Point(_) = cdf_home(p) {
            cdf_plot(&mut out, p, results, units, provenance, place);
        }
        if let place @ Place::Point(_) = series_home(p) {
            series_plot(&mut out, p, results, units, provenance, place);
        }
    }
    out
}

/// A table's plots of one metric: its means with their intervals, and its runs as
/// boxes; or, with nothing to show, why in words.
fn table_plots(
    out: &mut Plots,
    ti: usize,
    t: &Table,
    c: &Column,
    results: &Results,
    provenance: &str,
) {
    let title = out.title(plot_title(t, c));
    if let Some(why) = nothing_to_draw(t, results, c) {
        out.not_drawn.push(NotDrawn {
            title,
            why,
            place: Place::Table(ti),
        });
        return;
    }
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
    let name: String = lab::plan::file_safe(&format!("{}-{}", t.title, c.metric.key))
        .chars()
        .take(100)
        .collect();
    out.push(&name, title.clone(), svg, Place::Table(ti));
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
    let box_title = out.title(format!("{title}, run by run"));
    let svg = plot::box_chart(
        &box_title,
        &t.label_heading,
        &c.heading(),
        &cats,
        &[boxes("IPv4", 0), boxes("IPv6", 1)],
    );
    let svg = plot::with_subtitle(&svg, &subtitle);
    out.push(&format!("{name}-runs"), box_title, svg, Place::Table(ti));
}

/// A point's runs over time (`--interval`): each run's throughput by window; nothing
/// when its runs kept no series, words when every window is 0.
fn series_plot(
    out: &mut Plots,
    point: &str,
    results: &Results,
    units: &PageUnits,
    provenance: &str,
    place: Place,
) {
    let runs: Vec<&crate::stats::RunSeries> =
        results.series.iter().filter(|s| s.point == point).collect();
    if runs.is_empty() {
        return;
    }
    let name = point_name(results, point);
    let title = out.title(format!("{name}: throughput by interval, every run"));
    if runs.iter().all(|s| s.throughput.iter().all(|p| p.1 == 0.0)) {
        out.not_drawn.push(NotDrawn {
            title,
            why: format!(
                "{name}: throughput by interval: 0 in every window of every run, so it is not plotted"
            ),
            place,
        });
        return;
    }
    // The page's throughput unit, else one for these values.
    let unit = units.or_choose(
        &metric::THROUGHPUT,
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
        &title,
        "Time since the run's first window (s)",
        &format!("Throughput ({unit})"),
        &["IPv4", "IPv6"],
        &series,
        false,
    );
    let svg = plot::with_subtitle(&svg, provenance);
    let file: String = lab::plan::file_safe(&format!("{name}-over-time"))
        .chars()
        .take(100)
        .collect();
    out.push(&file, title, svg, place);
}

/// Each point's delay distribution, every run (`send --cdf`): the share of packets
/// (0 to 1) against the delay, in the page's delay unit (else one chosen from the
/// medians), on a log axis when the delays span more than two decades or the slowest
/// passes ten times the median (loopback's 2 µs to 3 ms would crowd every run's body
/// against the left edge).
fn cdf_plot(
    out: &mut Plots,
    point: &str,
    results: &Results,
    units: &PageUnits,
    provenance: &str,
    place: Place,
) {
    let runs: Vec<&crate::stats::RunCdf> =
        results.cdfs.iter().filter(|c| c.point == point).collect();
    if runs.is_empty() {
        return;
    }
    let unit = units.or_choose(&metric::DELAY, runs.iter().map(|c| c.delay_ns[50] as f64));
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
    let name = point_name(results, point);
    let title = out.title(format!(
        "{name}: {} distribution, every run",
        what.to_lowercase()
    ));
    let svg = plot::series_chart(
        &title,
        &format!("{what} ({unit})"),
        "Share of packets (CDF)",
        &["IPv4", "IPv6"],
        &series,
        log,
    );
    let file: String = lab::plan::file_safe(&format!("{name}-cdf"))
        .chars()
        .take(100)
        .collect();
    out.push(&file, title, plot::with_subtitle(&svg, provenance), place);
}
