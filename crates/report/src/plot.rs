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

/// Round numbers for an axis from `lo` to `hi`: about five ticks at 1, 2 or 5 × 10^k.
fn ticks(lo: f64, hi: f64) -> Vec<f64> {
    let span = (hi - lo).abs().max(f64::MIN_POSITIVE);
    let raw = span / 5.0;
    let mag = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 5.0, 10.0]
        .iter()
        .map(|m| m * mag)
        .find(|s| span / s <= 6.0)
        .unwrap_or(10.0 * mag);
    let first = (lo / step).ceil() * step;
    (0..=20)
        .map(|i| first + step * f64::from(i))
        .take_while(|t| *t <= hi + step * 1e-9)
        .collect()
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

/// The y range of the values and their intervals, from 0 when all are positive.
fn y_range(values: impl Iterator<Item = Estimate>) -> (f64, f64) {
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
        return (0.0, 1.0);
    }
    let lo = if lo >= 0.0 { 0.0 } else { lo };
    let hi = if hi <= lo {
        lo + 1.0
    } else {
        hi + (hi - lo) * 0.05
    };
    (lo, hi)
}

fn frame(out: &mut String, title: &str, x_label: &str, y_label: &str, y: (f64, f64)) {
    let _ = write!(
        out,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" viewBox="0 0 {W} {H}" font-family="sans-serif" font-size="12" role="img"><title>{t}</title><rect width="{W}" height="{H}" fill="white"/><text x="{cx}" y="24" text-anchor="middle" font-size="15" font-weight="bold">{t}</text><text x="{cx}" y="{xl}" text-anchor="middle">{x}</text><text transform="translate(18 {cy}) rotate(-90)" text-anchor="middle">{yl}</text>"#,
        t = esc(title),
        cx = LEFT + (W - LEFT - RIGHT) / 2.0,
        xl = H - 14.0,
        x = esc(x_label),
        cy = TOP + (H - TOP - BOTTOM) / 2.0,
        yl = esc(y_label),
    );
    for t in ticks(y.0, y.1) {
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

/// A line chart: each line's points joined, its confidence interval a shaded band.
pub fn line_chart(title: &str, x_label: &str, y_label: &str, lines: &[Line]) -> String {
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
    let y = y_range(lines.iter().flat_map(|l| l.points.iter().map(|p| p.1)));
    let px = |x: f64| LEFT + (fwd(x) - a) / (b - a) * (W - LEFT - RIGHT);
    let mut out = String::new();
    let x_label = if log {
        format!("{x_label} (log scale)")
    } else {
        x_label.to_owned()
    };
    frame(&mut out, title, &x_label, y_label, y);
    let x_ticks = if log {
        let (first, last) = (x_lo.log2().ceil() as i32, x_hi.log2().floor() as i32);
        let step = ((last - first) / 8 + 1).max(1);
        (first..=last)
            .step_by(step as usize)
            .map(|k| 2f64.powi(k))
            .collect()
    } else {
        ticks(a, b)
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
    let y = y_range(all.map(|v| Estimate {
        value: v,
        interval: None,
    }));
    let mut out = String::new();
    frame(&mut out, title, x_label, y_label, y);
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
/// joined, in its family's colour (the second family dashed), `names` the legend.
pub fn series_chart(
    title: &str,
    x_label: &str,
    y_label: &str,
    names: &[&str],
    series: &[Series],
) -> String {
    let points = || series.iter().flat_map(|s| s.points.iter());
    let x_hi = points().map(|p| p.0).fold(0.0_f64, f64::max);
    let x_hi = if x_hi > 0.0 { x_hi } else { 1.0 };
    let y = y_range(points().map(|p| Estimate {
        value: p.1,
        interval: None,
    }));
    let mut out = String::new();
    frame(&mut out, title, x_label, y_label, y);
    let px = |x: f64| LEFT + x / x_hi * (W - LEFT - RIGHT);
    for t in ticks(0.0, x_hi) {
        let _ = write!(
            out,
            r#"<text x="{:.1}" y="{}" text-anchor="middle">{}</text>"#,
            px(t),
            H - BOTTOM + 18.0,
            label(t)
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

/// A bar chart: for each category a group of bars, one per series, with error bars.
pub fn bar_chart(title: &str, y_label: &str, categories: &[String], series: &[Bars]) -> String {
    let y = y_range(
        series
            .iter()
            .flat_map(|s| s.values.iter().flatten().copied()),
    );
    let mut out = String::new();
    frame(&mut out, title, "", y_label, y);
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
        assert!(!line_chart("l", "x", "y", &[]).contains("log scale"));
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
        let svg = line_chart("UDP – Throughput", "payload (bytes)", "Mbit/s", &lines);
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
        let svg = bar_chart("VoIP – Throughput", "kbit/s", &cats, &series);
        // Three bars, two error bars (legend swatches are rects too).
        assert_eq!(svg.matches("<rect").count(), 1 + 3 + 2);
        assert_eq!(svg.matches("stroke=\"#222\"").count(), 2);
        assert!(!svg.contains("NaN"));
        // No data at all still draws a frame.
        assert!(bar_chart("empty", "x", &[], &[]).contains("empty"));
        assert!(line_chart("empty", "x", "y", &[]).contains("empty"));
    }
}
