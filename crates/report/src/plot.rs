//! Plots as standalone SVG, drawn here without a plotting library or fonts to embed:
//! line charts of a metric against a numeric factor with confidence bands, bar charts
//! per point with error bars, box plots of the runs per point, and time series of each
//! run's intervals. Every plot has a title, labelled axes with units,
//! and a legend; the SVG references nothing outside itself.

use std::fmt::Write;

/// One value with its confidence interval.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Estimate {
    /// The mean.
    pub value: f64,
    /// Lower and upper ends of its interval, when there is one.
    pub interval: Option<(f64, f64)>,
}

/// A line: its name in the legend, and (x, estimate) points in x order.
#[derive(Clone, Debug, PartialEq)]
pub struct Line {
    /// Legend entry.
    pub name: String,
    /// The points.
    pub points: Vec<(f64, Estimate)>,
}

/// Bars: one series per family, one value per category.
#[derive(Clone, Debug, PartialEq)]
pub struct Bars {
    /// Legend entry.
    pub name: String,
    /// One value per category; `None` where there is none.
    pub values: Vec<Option<Estimate>>,
}

/// Boxes: one series per family, each category's run values.
#[derive(Clone, Debug, PartialEq)]
pub struct Boxes {
    /// Legend entry.
    pub name: String,
    /// One list of run values per category (empty: none).
    pub values: Vec<Vec<f64>>,
}

/// One run's time series, drawn in its family's colour.
#[derive(Clone, Debug, PartialEq)]
pub struct Series {
    /// Index into the legend (0: IPv4, 1: IPv6).
    pub family: usize,
    /// (time, value) points in time order.
    pub points: Vec<(f64, f64)>,
}

const W: f64 = 720.0;
const H: f64 = 420.0;
const LEFT: f64 = 80.0;
const RIGHT: f64 = 24.0;
const TOP: f64 = 60.0;
const BOTTOM: f64 = 72.0;
/// IPv4 blue and IPv6 orange, then more (Okabe–Ito, readable by colour-blind readers).
const COLOURS: [&str; 4] = ["#0072B2", "#E69F00", "#009E73", "#CC79A7"];

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// The round step of an axis over `span`: 1, 2 or 5 × 10^k, at most six steps.
fn step(span: f64) -> f64 {
    let span = span.abs().max(f64::MIN_POSITIVE);
    let mag = 10f64.powf((span / 5.0).log10().floor());
    [1.0, 2.0, 5.0, 10.0]
        .iter()
        .map(|m| m * mag)
        .find(|s| span / s <= 6.0)
        .unwrap_or(10.0 * mag)
}

/// Round numbers for an axis from `lo` to `hi`: about five ticks at 1, 2 or 5 × 10^k.
fn ticks(lo: f64, hi: f64) -> Vec<f64> {
    let step = step(hi - lo);
    let first = (lo / step).ceil() * step;
    (0..=20)
        .map(|i| first + step * f64::from(i))
        .take_while(|t| *t <= hi + step * 1e-9)
        .collect()
}

/// A value axis: its ends and its ticks, the first tick at `lo` and the last at `hi`.
#[derive(Clone, Debug, PartialEq)]
pub struct Axis {
    /// The bottom of the axis, a tick.
    pub lo: f64,
    /// The top of the axis, a tick.
    pub hi: f64,
    /// Round numbers from `lo` to `hi`.
    pub ticks: Vec<f64>,
}

/// The axis of data from `lo` to `hi`: its ends widened to the round steps around them
/// (1, 2 or 5 × 10^k), so the first tick is at or below the smallest value and the last
/// at or above the largest, whatever the data (a bar at 74 on an axis that stops at 60
/// would read as off the chart).
pub fn nice_axis(lo: f64, hi: f64) -> Axis {
    let (lo, hi) = if lo.is_finite() && hi.is_finite() && hi > lo {
        (lo, hi)
    } else if lo.is_finite() {
        (lo, lo + 1.0)
    } else {
        (0.0, 1.0)
    };
    let step = step(hi - lo);
    // Integer multiples of the step, checked against the data so that rounding in
    // the division never leaves a value outside.
    let mut k0 = (lo / step).floor();
    if (k0 + 1.0) * step <= lo {
        k0 += 1.0;
    }
    while k0 * step > lo {
        k0 -= 1.0;
    }
    let mut k1 = (hi / step).ceil();
    if (k1 - 1.0) * step >= hi {
        k1 -= 1.0;
    }
    while k1 * step < hi {
        k1 += 1.0;
    }
    let ticks: Vec<f64> = (0..=((k1 - k0) as i64).clamp(1, 40))
        .map(|i| (k0 + i as f64) * step)
        .collect();
    Axis {
        lo: k0 * step,
        hi: ticks.last().copied().unwrap_or(k1 * step),
        ticks,
    }
}

fn label(v: f64) -> String {
    if v == 0.0 {
        return "0".into();
    }
    let a = v.abs();
    if !(1e-3..1e4).contains(&a) {
        format!("{v:.2e}")
    } else if v.fract().abs() < 1e-9 {
        format!("{v:.0}")
    } else {
        let s = format!("{v:.3}");
        s.trim_end_matches('0').trim_end_matches('.').to_owned()
    }
}

/// The y axis of the values and their intervals, from 0 when all are positive, with
/// `headroom` (a share of the span) above the largest for what is drawn over it.
fn y_range(values: impl Iterator<Item = Estimate>, headroom: f64) -> Axis {
    let (mut lo, mut hi) = (f64::INFINITY, f64::NEG_INFINITY);
    for e in values {
        let (a, b) = e.interval.unwrap_or((e.value, e.value));
        for v in [e.value, a, b] {
            if v.is_finite() {
                lo = lo.min(v);
                hi = hi.max(v);
            }
        }
    }
    if !lo.is_finite() {
        return nice_axis(0.0, 1.0);
    }
    let lo = if lo >= 0.0 { 0.0 } else { lo };
    let hi = if hi <= lo {
        lo + 1.0
    } else {
        hi + (hi - lo) * headroom
    };
    nice_axis(lo, hi)
}

fn frame(out: &mut String, title: &str, x_label: &str, y_label: &str, axis: &Axis) {
    let y = (axis.lo, axis.hi);
    let _ = write!(
        out,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" viewBox="0 0 {W} {H}" font-family="sans-serif" font-size="12" role="img"><title>{t}</title><rect width="{W}" height="{H}" fill="white"/><text x="{cx}" y="24" text-anchor="middle" font-size="15" font-weight="bold">{t}</text><text x="{cx}" y="{xl}" text-anchor="middle">{x}</text><text transform="translate(18 {cy}) rotate(-90)" text-anchor="middle">{yl}</text>"#,
        t = esc(title),
        cx = LEFT + (W - LEFT - RIGHT) / 2.0,
        xl = H - 24.0,
        x = esc(x_label),
        cy = TOP + (H - TOP - BOTTOM) / 2.0,
        yl = esc(y_label),
    );
    for &t in &axis.ticks {
        let py = py(t, y);
        let _ = write!(
            out,
            r##"<line x1="{LEFT}" x2="{x2}" y1="{py:.1}" y2="{py:.1}" stroke="#ddd"/><text x="{lx}" y="{ty:.1}" text-anchor="end">{v}</text>"##,
            x2 = W - RIGHT,
            lx = LEFT - 6.0,
            ty = py + 4.0,
            v = label(t)
        );
    }
    let _ = write!(
        out,
        r##"<line x1="{LEFT}" x2="{LEFT}" y1="{TOP}" y2="{b}" stroke="#333"/><line x1="{LEFT}" x2="{r}" y1="{b}" y2="{b}" stroke="#333"/>"##,
        b = H - BOTTOM,
        r = W - RIGHT
    );
}

fn py(v: f64, y: (f64, f64)) -> f64 {
    H - BOTTOM - (v - y.0) / (y.1 - y.0) * (H - TOP - BOTTOM)
}

/// The legend, in the margin above the plot, right-aligned, so it never hides data.
fn legend(out: &mut String, names: &[&str]) {
    // About 7 px a character at 12 px sans-serif, a swatch and a gap.
    let width = |n: &str| 20.0 + 7.0 * n.chars().count() as f64 + 16.0;
    let mut x = W - RIGHT - names.iter().map(|n| width(n)).sum::<f64>();
    let y = TOP - 18.0;
    for (i, name) in names.iter().enumerate() {
        let _ = write!(
            out,
            r#"<rect x="{x:.1}" y="{y}" width="14" height="10" fill="{c}"/><text x="{tx:.1}" y="{ty}">{n}</text>"#,
            c = COLOURS[i % COLOURS.len()],
            tx = x + 20.0,
            ty = y + 9.0,
            n = esc(name)
        );
        x += width(name);
    }
}

/// What a plot of IPv4 against IPv6 marks over its points: a significance mark (`*`,
/// `**`) per x value or category, and the note that says what the marks mean.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Marks {
    /// (x value or category index, mark): drawn above the highest end there.
    pub at: Vec<(f64, &'static str)>,
    /// What the marks mean, under the plot; `None`: no marks, no note.
    pub note: Option<String>,
}

impl Marks {
    /// Headroom above the data for the marks: a mark is about 14 px high.
    fn headroom(&self) -> f64 {
        if !self.at.is_empty() {
            0.12
        } else {
            0.05
        }
    }

    /// The marks' note, small and grey at the bottom left, under the axis.
    fn draw_note(&self, out: &mut String) {
        if let Some(note) = &self.note {
            let _ = write!(
                out,
                r##"<text x="8" y="{}" font-size="10" fill="#555">{}</text>"##,
                H - 4.0,
                esc(note)
            );
        }
    }
}

/// A significance mark centred at `cx` just above `top` (px).
fn mark(out: &mut String, cx: f64, top: f64, text: &str) {
    let _ = write!(
        out,
        r##"<text x="{cx:.1}" y="{:.1}" text-anchor="middle" font-size="14" font-weight="bold" fill="#222">{}</text>"##,
        top - 6.0,
        esc(text)
    );
}

/// A line chart: each line's points joined, its confidence interval a shaded band, and
/// `marks` above the x values they name.
pub fn line_chart(
    title: &str,
    x_label: &str,
    y_label: &str,
    lines: &[Line],
    marks: &Marks,
) -> String {
    let xs = lines.iter().flat_map(|l| l.points.iter().map(|p| p.0));
    let (x_lo, x_hi) = xs.fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), x| {
        (a.min(x), b.max(x))
    });
    let (x_lo, x_hi) = if x_lo.is_finite() && x_hi > x_lo {
        (x_lo, x_hi)
    } else {
        (0.0, 1.0)
    };
    // Sizes from 32 B to 64 KB on a linear axis would crowd most points into a corner:
    // beyond a ratio of 100 the axis is log2, with ticks at powers of 2.
    let log = x_lo > 0.0 && x_hi / x_lo > 100.0;
    let fwd = |x: f64| if log { x.log2() } else { x };
    let (a, b) = (fwd(x_lo), fwd(x_hi));
    // A little room on both sides, so the end points do not sit on the axes.
    let pad = (b - a) * 0.03;
    let (a, b) = (a - pad, b + pad);
    let axis = y_range(
        lines.iter().flat_map(|l| l.points.iter().map(|p| p.1)),
        marks.headroom(),
    );
    let y = (axis.lo, axis.hi);
    let px = |x: f64| LEFT + (fwd(x) - a) / (b - a) * (W - LEFT - RIGHT);
    let mut out = String::new();
    let x_label = if log {
        format!("{x_label} (log scale)")
    } else {
        x_label.to_owned()
    };
    frame(&mut out, title, &x_label, y_label, &axis);
    let x_ticks = if log {
        let (first, last) = (x_lo.log2().ceil() as i32, x_hi.log2().floor() as i32);
        let step = ((last - first) / 8 + 1).max(1);
        (first..=last)
            .step_by(step as usize)
            .map(|k| 2f64.powi(k))
            .collect()
    } else {
        // A few measured values (four sizes) are labelled themselves, the first
        // included; more get round numbers.
        let mut xs: Vec<f64> = lines
            .iter()
            .flat_map(|l| l.points.iter().map(|p| p.0))
            .collect();
        xs.sort_by(f64::total_cmp);
        xs.dedup();
        if (2..=8).contains(&xs.len()) {
            xs
        } else {
            ticks(a, b)
        }
    };
    for t in x_ticks {
        let _ = write!(
            out,
            r#"<text x="{:.1}" y="{}" text-anchor="middle">{}</text>"#,
            px(t),
            H - BOTTOM + 18.0,
            // Powers of 2 in full: 32768, not 3.28e4.
            if log { format!("{t:.0}") } else { label(t) }
        );
    }
    for (i, line) in lines.iter().enumerate() {
        let c = COLOURS[i % COLOURS.len()];
        let band: Vec<(f64, f64, f64)> = line
            .points
            .iter()
            .filter_map(|(x, e)| e.interval.map(|(a, b)| (*x, a, b)))
            .collect();
        if band.len() >= 2 {
            let mut d = String::new();
            for (x, _, hi) in &band {
                let _ = write!(d, "{:.1},{:.1} ", px(*x), py(*hi, y));
            }
            for (x, lo, _) in band.iter().rev() {
                let _ = write!(d, "{:.1},{:.1} ", px(*x), py(*lo, y));
            }
            let _ = write!(
                out,
                r#"<polygon points="{d}" fill="{c}" fill-opacity="0.2"/>"#
            );
        }
        let pts: String = line
            .points
            .iter()
            .map(|(x, e)| format!("{:.1},{:.1} ", px(*x), py(e.value, y)))
            .collect();
        // Lines after the first are dashed, with hollow square markers, so a line that
        // coincides with the first still shows.
        let dash = if i > 0 {
            r#" stroke-dasharray="7 5""#
        } else {
            ""
        };
        let _ = write!(
            out,
            r#"<polyline points="{pts}" fill="none" stroke="{c}" stroke-width="2"{dash}/>"#
        );
        for (x, e) in &line.points {
            let (cx, cy) = (px(*x), py(e.value, y));
            let _ = if i > 0 {
                write!(
                    out,
                    r#"<rect x="{:.1}" y="{:.1}" width="9" height="9" fill="none" stroke="{c}" stroke-width="2"/>"#,
                    cx - 4.5,
                    cy - 4.5
                )
            } else {
                write!(
                    out,
                    r#"<circle cx="{cx:.1}" cy="{cy:.1}" r="3.5" fill="{c}"/>"#
                )
            };
        }
    }
    for (x, text) in &marks.at {
        let top = lines
            .iter()
            .flat_map(|l| l.points.iter().filter(|p| p.0 == *x))
            .map(|(_, e)| {
                e.interval
                    .map_or(e.value, |(lo, hi)| e.value.max(lo).max(hi))
            })
            .fold(f64::NEG_INFINITY, f64::max);
        if top.is_finite() {
            mark(&mut out, px(*x), py(top, y), text);
        }
    }
    marks.draw_note(&mut out);
    legend(
        &mut out,
        &lines.iter().map(|l| l.name.as_str()).collect::<Vec<_>>(),
    );
    out.push_str("</svg>");
    out
}

/// `svg` (a plot of this module) with `text` in small grey letters under its title:
/// what was run where and when, so a plot file read alone still says so.
pub fn with_subtitle(svg: &str, text: &str) -> String {
    let Some(end) = svg.rfind("</svg>") else {
        return svg.to_owned();
    };
    // Left of the legend (top right): about 80 characters fit at this size.
    let mut line: String = text.chars().take(80).collect();
    if line.len() < text.len() {
        line.push('…');
    }
    format!(
        r##"{}<text x="{LEFT}" y="{y}" font-size="10" fill="#555">{}</text></svg>"##,
        &svg[..end],
        esc(&line),
        y = TOP - 9.0,
    )
}

/// `text` in lines of at most `width` characters, broken between words (a word longer
/// than a line is cut), at most three lines, the last ending in "…" if text remains.
fn wrap(text: &str, width: usize) -> Vec<String> {
    let mut lines: Vec<String> = Vec::new();
    let mut current = String::new();
    for word in text.split_whitespace() {
        let mut word: String = word.to_owned();
        loop {
            let len = current.chars().count();
            let wlen = word.chars().count();
            if len == 0 && wlen <= width {
                current = word;
                break;
            }
            if len > 0 && len + 1 + wlen <= width {
                current.push(' ');
                current.push_str(&word);
                break;
            }
            if len > 0 {
                lines.push(std::mem::take(&mut current));
                continue;
            }
            // A word longer than a line.
            let head: String = word.chars().take(width).collect();
            word = word.chars().skip(width).collect();
            lines.push(head);
        }
    }
    if !current.is_empty() {
        lines.push(current);
    }
    if lines.len() > 3 {
        lines.truncate(3);
        let last = &mut lines[2];
        let keep = width.saturating_sub(1).min(last.chars().count());
        *last = last.chars().take(keep).collect::<String>() + "…";
    }
    lines
}

/// A category's name under the x axis at `cx`, wrapped to the group's width.
fn category_label(out: &mut String, cat: &str, cx: f64, group: f64) {
    let _ = write!(
        out,
        r#"<text x="{cx:.1}" y="{}" text-anchor="middle" font-size="11">"#,
        H - BOTTOM + 16.0,
    );
    // Long labels are wrapped to the group's width (about 6.5 px a character).
    let chars = ((group * 0.95) / 6.5).floor().max(4.0) as usize;
    for (li, line) in wrap(cat, chars).iter().enumerate() {
        let _ = write!(
            out,
            r#"<tspan x="{cx:.1}" dy="{}">{}</tspan>"#,
            if li == 0 { 0 } else { 13 },
            esc(line)
        );
    }
    out.push_str("</text>");
}

/// A box plot: for each category one box per series over its run values, from the
/// first to the third quartile (Hyndman & Fan type 7) with the median across, whiskers
/// to the smallest and largest run, and every run as a dot, so a handful of runs is
/// shown as what it is.
pub fn box_chart(
    title: &str,
    x_label: &str,
    y_label: &str,
    categories: &[String],
    series: &[Boxes],
) -> String {
    let all = series
        .iter()
        .flat_map(|s| s.values.iter().flatten().copied());
    let axis = y_range(
        all.map(|v| Estimate {
            value: v,
            interval: None,
        }),
        0.05,
    );
    let y = (axis.lo, axis.hi);
    let mut out = String::new();
    frame(&mut out, title, x_label, y_label, &axis);
    let n = categories.len().max(1) as f64;
    let group = (W - LEFT - RIGHT) / n;
    let slot = (group * 0.8) / series.len().max(1) as f64;
    for (ci, cat) in categories.iter().enumerate() {
        let gx = LEFT + group * ci as f64 + group * 0.1;
        category_label(&mut out, cat, gx + group * 0.4, group);
        for (si, s) in series.iter().enumerate() {
            let Some(values) = s.values.get(ci).filter(|v| !v.is_empty()) else {
                continue;
            };
            let mut v: Vec<f64> = values.iter().copied().filter(|x| x.is_finite()).collect();
            if v.is_empty() {
                continue;
            }
            v.sort_by(f64::total_cmp);
            let q = |p: f64| meter::stats::quantile_linear(&v, p).unwrap_or(v[0]);
            let c = COLOURS[si % COLOURS.len()];
            let (x0, w) = (gx + slot * si as f64 + slot * 0.1, slot * 0.7);
            let mx = x0 + w / 2.0;
            let (q1, med, q3) = (py(q(0.25), y), py(q(0.5), y), py(q(0.75), y));
            let _ = write!(
                out,
                r#"<line x1="{mx:.1}" x2="{mx:.1}" y1="{:.1}" y2="{q1:.1}" stroke="{c}"/><line x1="{mx:.1}" x2="{mx:.1}" y1="{q3:.1}" y2="{:.1}" stroke="{c}"/><rect x="{x0:.1}" y="{q3:.1}" width="{w:.1}" height="{:.1}" fill="{c}" fill-opacity="0.25" stroke="{c}" stroke-width="1.5"/><line x1="{x0:.1}" x2="{:.1}" y1="{med:.1}" y2="{med:.1}" stroke="{c}" stroke-width="2.5"/>"#,
                py(v[0], y),
                py(v[v.len() - 1], y),
                (q1 - q3).max(1.0),
                x0 + w,
            );
            for (i, x) in v.iter().enumerate() {
                // Spread the dots a little, so equal runs do not hide each other.
                let dx = (i as f64 / v.len().max(2) as f64 - 0.5) * w * 0.6;
                let _ = write!(
                    out,
                    r#"<circle cx="{:.1}" cy="{:.1}" r="2.5" fill="{c}" stroke="white" stroke-width="0.5"/>"#,
                    mx + dx,
                    py(*x, y)
                );
            }
        }
    }
    legend(
        &mut out,
        &series.iter().map(|s| s.name.as_str()).collect::<Vec<_>>(),
    );
    out.push_str("</svg>");
    out
}

/// Each run's series (its throughput over time, its delay distribution): its points
/// joined, in its family's colour (the second family dashed), `names` the legend. With
/// `log_x`, x is drawn on a log10 axis from the decade below the smallest positive x to
/// the decade above the largest (ticks at 1, 2, 5 × 10^k over up to three decades, at
/// 10^k beyond), labelled "(log scale)"; x ≤ 0 then sits at the axis' left end.
pub fn series_chart(
    title: &str,
    x_label: &str,
    y_label: &str,
    names: &[&str],
    series: &[Series],
    log_x: bool,
) -> String {
    let points = || series.iter().flat_map(|s| s.points.iter());
    let axis = y_range(
        points().map(|p| Estimate {
            value: p.1,
            interval: None,
        }),
        0.0,
    );
    let y = (axis.lo, axis.hi);
    let (x_ticks, fwd_lo, fwd_hi, log) = if log_x {
        let pos = || points().map(|p| p.0).filter(|x| *x > 0.0 && x.is_finite());
        let lo = pos().fold(f64::INFINITY, f64::min);
        let hi = pos().fold(0.0_f64, f64::max);
        if lo.is_finite() && hi > lo {
            let (a, b) = (lo.log10().floor() as i32, hi.log10().ceil() as i32);
            let b = b.max(a + 1);
            let per_decade: &[f64] = if b - a <= 3 { &[1.0, 2.0, 5.0] } else { &[1.0] };
            let mut t: Vec<f64> = (a..b)
                .flat_map(|k| per_decade.iter().map(move |m| m * 10f64.powi(k)))
                .collect();
            t.push(10f64.powi(b));
            (t, f64::from(a), f64::from(b), true)
        } else {
            let a = nice_axis(0.0, hi.max(1.0));
            (a.ticks, a.lo, a.hi, false)
        }
    } else {
        let hi = points().map(|p| p.0).fold(0.0_f64, f64::max);
        let a = nice_axis(0.0, if hi > 0.0 { hi } else { 1.0 });
        (a.ticks, a.lo, a.hi, false)
    };
    let fwd = |x: f64| {
        if log {
            x.max(10f64.powf(fwd_lo)).log10()
        } else {
            x
        }
    };
    let x_label = if log {
        format!("{x_label} (log scale)")
    } else {
        x_label.to_owned()
    };
    let mut out = String::new();
    frame(&mut out, title, &x_label, y_label, &axis);
    let px = |x: f64| LEFT + (fwd(x) - fwd_lo) / (fwd_hi - fwd_lo) * (W - LEFT - RIGHT);
    for t in x_ticks {
        let text = if log && t >= 1.0 {
            format!("{t:.0}")
        } else {
            label(t)
        };
        let _ = write!(
            out,
            r#"<text x="{:.1}" y="{}" text-anchor="middle">{text}</text>"#,
            px(t),
            H - BOTTOM + 18.0,
        );
    }
    for s in series {
        let c = COLOURS[s.family % COLOURS.len()];
        let dash = if s.family > 0 {
            r#" stroke-dasharray="7 5""#
        } else {
            ""
        };
        let pts: String = s
            .points
            .iter()
            .map(|(x, v)| format!("{:.1},{:.1} ", px(*x), py(*v, y)))
            .collect();
        let _ = write!(
            out,
            r#"<polyline points="{pts}" fill="none" stroke="{c}" stroke-width="1.5" stroke-opacity="0.8"{dash}/>"#
        );
    }
    legend(&mut out, names);
    out.push_str("</svg>");
    out
}

/// A bar chart: for each category a group of bars, one per series, with error bars,
/// and `marks` above the categories they name (by index).
pub fn bar_chart(
    title: &str,
    y_label: &str,
    categories: &[String],
    series: &[Bars],
    marks: &Marks,
) -> String {
    let axis = y_range(
        series
            .iter()
            .flat_map(|s| s.values.iter().flatten().copied()),
        marks.headroom(),
    );
    let y = (axis.lo, axis.hi);
    let mut out = String::new();
    frame(&mut out, title, "", y_label, &axis);
    let n = categories.len().max(1) as f64;
    let group = (W - LEFT - RIGHT) / n;
    let bar = (group * 0.8) / series.len().max(1) as f64;
    for (ci, cat) in categories.iter().enumerate() {
        let gx = LEFT + group * ci as f64 + group * 0.1;
        category_label(&mut out, cat, gx + group * 0.4, group);
        for (si, s) in series.iter().enumerate() {
            let Some(Some(e)) = s.values.get(ci) else {
                continue;
            };
            let c = COLOURS[si % COLOURS.len()];
            let x = gx + bar * si as f64;
            let (top, base) = (py(e.value.max(y.0), y), py(y.0.max(0.0).min(y.1), y));
            // A zero is drawn as a sliver on the axis, so it reads as 0, not as missing.
            let height = (base - top).abs().max(1.5);
            let _ = write!(
                out,
                r#"<rect x="{x:.1}" y="{:.1}" width="{:.1}" height="{height:.1}" fill="{c}"/>"#,
                if top <= base { base - height } else { base },
                bar * 0.9,
            );
            if let Some((a, b)) = e.interval {
                let mx = x + bar * 0.45;
                let _ = write!(
                    out,
                    r##"<line x1="{mx:.1}" x2="{mx:.1}" y1="{:.1}" y2="{:.1}" stroke="#222"/>"##,
                    py(a, y),
                    py(b, y)
                );
            }
        }
    }
    for (ci, text) in &marks.at {
        let Some(cat) = (*ci >= 0.0).then_some(*ci as usize) else {
            continue;
        };
        let top = series
            .iter()
            .filter_map(|s| s.values.get(cat).copied().flatten())
            .map(|e| {
                e.interval
                    .map_or(e.value, |(lo, hi)| e.value.max(lo).max(hi))
            })
            .fold(f64::NEG_INFINITY, f64::max);
        if top.is_finite() && cat < categories.len() {
            let cx = LEFT + group * cat as f64 + group * 0.5;
            mark(&mut out, cx, py(top.max(y.0), y), text);
        }
    }
    marks.draw_note(&mut out);
    legend(
        &mut out,
        &series.iter().map(|s| s.name.as_str()).collect::<Vec<_>>(),
    );
    out.push_str("</svg>");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn est(value: f64, half: f64) -> Estimate {
        Estimate {
            value,
            interval: Some((value - half, value + half)),
        }
    }

    #[test]
    fn long_labels_wrap_between_words_in_at_most_three_lines() {
        assert_eq!(
            wrap("UDP 64 B at 10000 pkt/s", 12),
            ["UDP 64 B at", "10000 pkt/s"]
        );
        assert_eq!(wrap("G.711.1", 12), ["G.711.1"]);
        assert_eq!(wrap("abcdefghij", 4), ["abcd", "efgh", "ij"]);
        assert_eq!(wrap("a b c d e f g h", 3), ["a b", "c d", "e …"]);
        assert!(wrap("", 5).is_empty());
    }

    #[test]
    fn a_wide_size_range_is_drawn_on_a_log2_axis() {
        let points = [32.0, 1024.0, 65496.0].map(|x| (x, est(1.0, 0.1))).to_vec();
        let svg = line_chart(
            "sizes",
            "Payload size (bytes)",
            "Mbit/s",
            &[Line {
                name: "IPv4".into(),
                points,
            }],
            &Marks::default(),
        );
        assert!(svg.contains("Payload size (bytes) (log scale)"));
        for tick in [">32<", ">128<", ">512<", ">2048<", ">8192<", ">32768<"] {
            assert!(svg.contains(tick), "{tick}");
        }
        // 1024 sits at log2 = 10 on the axis.
        let cx: Vec<f64> = svg
            .match_indices("<circle cx=\"")
            .map(|(i, m)| {
                let rest = &svg[i + m.len()..];
                rest[..rest.find('"').unwrap()].parse().unwrap()
            })
            .collect();
        let want = {
            let (a, b) = (32f64.log2(), 65496f64.log2());
            let pad = (b - a) * 0.03;
            LEFT + (10.0 - (a - pad)) / (b - a + 2.0 * pad) * (W - LEFT - RIGHT)
        };
        assert!((cx[1] - want).abs() < 0.1, "{cx:?} {want}");
        assert!(!line_chart("l", "x", "y", &[], &Marks::default()).contains("log scale"));
    }

    #[test]
    fn ticks_are_round_and_cover_the_range() {
        assert_eq!(ticks(0.0, 10.0), [0.0, 2.0, 4.0, 6.0, 8.0, 10.0]);
        assert_eq!(ticks(0.0, 1536.0), [0.0, 500.0, 1000.0, 1500.0]);
        assert_eq!(label(1500.0), "1500");
        assert_eq!(label(0.25), "0.25");
        assert_eq!(label(25_000.0), "2.50e4");
    }

    #[test]
    fn a_line_chart_has_its_title_axes_legend_bands_and_nothing_external() {
        let lines = [
            Line {
                name: "IPv4".into(),
                points: vec![(64.0, est(15.0, 0.5)), (1536.0, est(368.0, 2.0))],
            },
            Line {
                name: "IPv6 <&>".into(),
                points: vec![(64.0, est(15.1, 0.5)), (1536.0, est(367.0, 2.0))],
            },
        ];
        let svg = line_chart(
            "UDP – Throughput",
            "payload (bytes)",
            "Mbit/s",
            &lines,
            &Marks::default(),
        );
        assert!(svg.starts_with("<svg xmlns=\"http://www.w3.org/2000/svg\""));
        assert!(svg.ends_with("</svg>"));
        for want in [
            "UDP – Throughput",
            "payload (bytes)",
            "Mbit/s",
            "IPv4",
            "IPv6 &lt;&amp;&gt;",
            "<polygon",
            "<polyline",
        ] {
            assert!(svg.contains(want), "{want}");
        }
        assert_eq!(svg.matches("<polygon").count(), 2);
        // IPv4's points as dots, IPv6's as hollow squares on a dashed line.
        assert_eq!(svg.matches("<circle").count(), 2);
        assert_eq!(
            svg.matches(r##"height="9" fill="none" stroke="#E69F00""##)
                .count(),
            2
        );
        assert_eq!(svg.matches("stroke-dasharray").count(), 1);
        // The only URL is the SVG namespace: nothing is fetched.
        assert_eq!(svg.matches("http").count(), 1);
        assert!(!svg.contains("NaN"));
    }

    #[test]
    fn a_bar_chart_skips_missing_values_and_draws_error_bars() {
        let cats = vec!["G.711.1".to_owned(), "DNS".to_owned()];
        let series = [
            Bars {
                name: "IPv4".into(),
                values: vec![Some(est(73.6, 0.1)), None],
            },
            Bars {
                name: "IPv6".into(),
                values: vec![
                    Some(est(73.6, 0.1)),
                    Some(Estimate {
                        value: 0.9,
                        interval: None,
                    }),
                ],
            },
        ];
        let svg = bar_chart(
            "VoIP – Throughput",
            "kbit/s",
            &cats,
            &series,
            &Marks::default(),
        );
        // Three bars, two error bars (legend swatches are rects too).
        assert_eq!(svg.matches("<rect").count(), 1 + 3 + 2);
        assert_eq!(svg.matches("stroke=\"#222\"").count(), 2);
        assert!(!svg.contains("NaN"));
        // No data at all still draws a frame.
        assert!(bar_chart("empty", "x", &[], &[], &Marks::default()).contains("empty"));
        assert!(line_chart("empty", "x", "y", &[], &Marks::default()).contains("empty"));
    }

    /// The y tick labels of a plot, bottom to top.
    fn y_ticks(svg: &str) -> Vec<f64> {
        svg.split(r#"text-anchor="end">"#)
            .skip(1)
            .filter_map(|t| t.split('<').next()?.parse().ok())
            .collect()
    }

    #[test]
    fn the_axis_ends_on_a_tick_at_or_above_the_largest_value() {
        for (lo, hi) in [
            (0.0, 74.0),
            (0.0, 61.0),
            (0.0, 5.95),
            (-0.5, 5.9),
            (0.0, 0.0123),
            (0.0, 1536.0),
            (0.0, 1e9 + 1.0),
            (3.3, 3.31),
            (0.0, 0.30000000000000004),
            (-7.2, -0.4),
        ] {
            let a = nice_axis(lo, hi);
            assert!(a.hi >= hi && a.lo <= lo, "{lo}..{hi}: {a:?}");
            assert_eq!(a.ticks.first(), Some(&a.lo), "{lo}..{hi}");
            assert_eq!(a.ticks.last(), Some(&a.hi), "{lo}..{hi}");
            assert!((3..=8).contains(&a.ticks.len()), "{lo}..{hi}: {a:?}");
        }
        assert_eq!(nice_axis(0.0, 74.0).ticks, [0.0, 20.0, 40.0, 60.0, 80.0]);
        assert_eq!(nice_axis(0.0, 10.0).ticks, [0.0, 2.0, 4.0, 6.0, 8.0, 10.0]);
        assert_eq!(nice_axis(5.0, 5.0).hi, 6.0, "a constant gets a unit span");
        // The VoIP bars of 74 kbit/s with their error bars: the axis reads to 80.
        let bars = [Bars {
            name: "IPv4".into(),
            values: vec![Some(est(74.0, 0.4)), Some(est(9.0, 0.1))],
        }];
        let svg = bar_chart(
            "b",
            "kbit/s",
            &["a".into(), "b".into()],
            &bars,
            &Marks::default(),
        );
        assert_eq!(y_ticks(&svg), [0.0, 20.0, 40.0, 60.0, 80.0]);
        // A box plot's whisker to the slowest run is on the axis too.
        let boxes = [Boxes {
            name: "IPv4".into(),
            values: vec![vec![10.0, 11.0, 61.0]],
        }];
        let svg = box_chart("b", "x", "µs", &["a".into()], &boxes);
        assert!(
            *y_ticks(&svg).last().unwrap() >= 61.0,
            "{:?}",
            y_ticks(&svg)
        );
    }

    #[test]
    fn significance_marks_sit_over_their_points_with_a_note() {
        let marks = Marks {
            at: vec![(64.0, "**"), (1536.0, "*")],
            note: Some("* p < 0.05".into()),
        };
        let lines = [
            Line {
                name: "IPv4".into(),
                points: vec![
                    (64.0, est(10.0, 1.0)),
                    (512.0, est(12.0, 1.0)),
                    (1536.0, est(20.0, 1.0)),
                ],
            },
            Line {
                name: "IPv6".into(),
                points: vec![
                    (64.0, est(14.0, 1.0)),
                    (512.0, est(12.0, 1.0)),
                    (1536.0, est(25.0, 1.0)),
                ],
            },
        ];
        let svg = line_chart("t", "x", "y", &lines, &marks);
        assert_eq!(
            svg.matches(r##"font-weight="bold" fill="#222">**<"##)
                .count(),
            1
        );
        assert_eq!(
            svg.matches(r##"font-weight="bold" fill="#222">*<"##)
                .count(),
            1
        );
        assert_eq!(svg.matches(">* p &lt; 0.05</text>").count(), 1);
        // The ** above the higher end at 64 (IPv6's 15), inside the plot.
        let at = svg.find(">**<").unwrap();
        let tag = &svg[svg[..at].rfind("<text").unwrap()..at];
        let y: f64 = tag
            .split("y=\"")
            .nth(1)
            .unwrap()
            .split('"')
            .next()
            .unwrap()
            .parse()
            .unwrap();
        let axis = y_range(
            lines.iter().flat_map(|l| l.points.iter().map(|p| p.1)),
            0.12,
        );
        assert!(
            (y - (py(15.0, (axis.lo, axis.hi)) - 6.0)).abs() < 0.11,
            "{y}"
        );
        assert!(y > TOP - 4.0, "the mark is inside the plot: {y}");
        // Bars are marked by category; no marks, no note.
        let bars = [Bars {
            name: "IPv4".into(),
            values: vec![Some(est(74.0, 0.4)), Some(est(9.0, 0.1))],
        }];
        let marked = Marks {
            at: vec![(1.0, "*")],
            note: Some("note".into()),
        };
        let svg = bar_chart("b", "kbit/s", &["a".into(), "b".into()], &bars, &marked);
        assert_eq!(svg.matches(">*</text>").count(), 1);
        let plain = bar_chart(
            "b",
            "kbit/s",
            &["a".into(), "b".into()],
            &bars,
            &Marks::default(),
        );
        assert!(!plain.contains(">*</text>") && !plain.contains(">note<"));
    }

    #[test]
    fn a_delay_distribution_over_decades_is_drawn_on_a_log_axis() {
        let cdf = Series {
            family: 0,
            points: vec![(2.0, 0.0), (20.0, 0.5), (3000.0, 1.0)],
        };
        let svg = series_chart(
            "cdf",
            "Round-trip time (µs)",
            "Share",
            &["IPv4"],
            std::slice::from_ref(&cdf),
            true,
        );
        assert!(svg.contains("Round-trip time (µs) (log scale)"));
        // Four decades, 1 µs to 10 ms: a tick at each power of ten.
        for tick in [">1<", ">10<", ">100<", ">1000<", ">10000<"] {
            assert!(svg.contains(tick), "{tick}");
        }
        // 20 µs sits at 1.301 of the four decades from 1.
        let pts = svg.split("points=\"").nth(1).unwrap();
        let x: f64 = pts
            .split_whitespace()
            .nth(1)
            .unwrap()
            .split(',')
            .next()
            .unwrap()
            .parse()
            .unwrap();
        let want = LEFT + 20f64.log10() / 4.0 * (W - LEFT - RIGHT);
        assert!((x - want).abs() < 0.11, "{x} {want}");
        let linear = series_chart(
            "cdf",
            "Round-trip time (µs)",
            "Share",
            &["IPv4"],
            &[cdf],
            false,
        );
        assert!(!linear.contains("log scale"));
        // The share axis ends at 1, not beyond.
        assert_eq!(y_ticks(&linear).last(), Some(&1.0));
    }
}
