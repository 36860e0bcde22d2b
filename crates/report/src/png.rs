//! Plots as PNG: the report's SVG drawn by resvg (pure Rust) at twice its size, with
//! the system's fonts, so a PNG and its SVG show the same picture.

/// Why a plot could not be drawn as PNG.
#[derive(Debug, thiserror::Error)]
pub enum PngError {
    /// The system has no font to draw text with.
    #[error(
        "no fonts found to draw the PNG plots' text (on Debian: apt-get install fonts-dejavu-core); \
         the SVG plots need none"
    )]
    NoFonts,
    /// The SVG does not read.
    #[error("reading the SVG")]
    Svg(#[source] resvg::usvg::Error),
    /// The plot's size, scaled, is not an image size.
    #[error("plot size")]
    Size,
    /// The image could not be allocated.
    #[error("allocating the image")]
    Allocate,
    /// The image could not be encoded.
    #[error("encoding the PNG")]
    Encode(#[source] png::EncodingError),
}

/// The fonts text is drawn with, loaded once for every plot.
pub struct Fonts {
    options: resvg::usvg::Options<'static>,
}

/// Sans-serif faces to draw with, best first (Debian's fonts-dejavu-core first).
const PREFERRED: [&str; 5] = [
    "DejaVu Sans",
    "Liberation Sans",
    "Noto Sans",
    "FreeSans",
    "Arial",
];

/// Pixels per SVG unit: 720×420 plots become 1440×840 PNGs.
const SCALE: f32 = 2.0;

impl Fonts {
    /// The system's fonts; an error when there is none, since a plot without its title,
    /// axes and legend would mislead.
    pub fn system() -> Result<Self, PngError> {
        let mut options = resvg::usvg::Options::default();
        let db = options.fontdb_mut();
        db.load_system_fonts();
        // The plots ask for "sans-serif", which fontdb maps to Arial unless told: use a
        // sans-serif face the system has, else any face.
        let families: Vec<String> = db
            .faces()
            .flat_map(|f| f.families.iter().map(|(name, _)| name.clone()))
            .collect();
        let Some(family) = PREFERRED
            .iter()
            .find(|p| families.iter().any(|f| f == *p))
            .map(|p| (*p).to_owned())
            .or_else(|| families.first().cloned())
        else {
            return Err(PngError::NoFonts);
        };
        db.set_sans_serif_family(family.clone());
        options.font_family = family;
        Ok(Self { options })
    }

    /// The PNG file of one SVG plot.
    pub fn render(&self, svg: &str) -> Result<Vec<u8>, PngError> {
        let tree = resvg::usvg::Tree::from_str(svg, &self.options).map_err(PngError::Svg)?;
        let size = tree
            .size()
            .to_int_size()
            .scale_by(SCALE)
            .ok_or(PngError::Size)?;
        let mut pixmap =
            resvg::tiny_skia::Pixmap::new(size.width(), size.height()).ok_or(PngError::Allocate)?;
        resvg::render(
            &tree,
            resvg::tiny_skia::Transform::from_scale(SCALE, SCALE),
            &mut pixmap.as_mut(),
        );
        pixmap.encode_png().map_err(PngError::Encode)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Decodes a PNG into (width, height, RGBA pixels).
    fn decode(png: &[u8]) -> (u32, u32, Vec<u8>) {
        let mut reader = png::Decoder::new(std::io::Cursor::new(png))
            .read_info()
            .unwrap();
        let mut buf = vec![0; reader.output_buffer_size().unwrap()];
        let info = reader.next_frame(&mut buf).unwrap();
        assert_eq!(info.color_type, png::ColorType::Rgba);
        buf.truncate(info.buffer_size());
        (info.width, info.height, buf)
    }

    /// `svg` drawn: 1440 × 840, white, a title in the top strip, an x-axis label at the
    /// bottom, the y-axis label on the left, and both families' colours.
    #[track_caller]
    fn assert_drawn(fonts: &Fonts, svg: &str) {
        assert_drawn_with(fonts, svg, true);
    }

    /// [`assert_drawn`], without the x-axis label for a plot that has none (bars:
    /// their categories label them).
    #[track_caller]
    fn assert_drawn_with(fonts: &Fonts, svg: &str, x_label: bool) {
        let (w, h, px) = decode(&fonts.render(svg).unwrap());
        assert_eq!((w, h), (1440, 840));
        let at = |x: u32, y: u32| {
            let i = ((y * w + x) * 4) as usize;
            [px[i], px[i + 1], px[i + 2]]
        };
        let count = |x0: u32, x1: u32, y0: u32, y1: u32, hit: &dyn Fn([u8; 3]) -> bool| {
            (y0..y1)
                .flat_map(|y| (x0..x1).map(move |x| (x, y)))
                .filter(|&(x, y)| hit(at(x, y)))
                .count()
        };
        let dark = |c: [u8; 3]| c.iter().all(|v| *v < 80);
        // The title is text in the top 56 px (28 SVG units) and the axis labels at the
        // bottom and the left: with no font drawn, these strips would be white.
        assert!(count(300, 1140, 0, 56, &dark) > 500, "no title drawn");
        assert!(
            !x_label || count(300, 1140, 770, 830, &dark) > 300,
            "no x-axis label drawn"
        );
        if !x_label {
            // The categories under the axis instead.
            assert!(
                count(160, 1380, 700, 780, &dark) > 300,
                "no categories drawn"
            );
        }
        assert!(count(0, 60, 200, 640, &dark) > 200, "no y-axis label drawn");
        // The axes themselves: dark lines along the plot's left and bottom edges.
        assert!(count(158, 162, 240, 700, &dark) > 400, "no y axis");
        assert!(count(200, 1380, 692, 698, &dark) > 1000, "no x axis");
        // IPv4's blue (#0072B2) and IPv6's orange (#E69F00) are there.
        let near =
            |want: [u8; 3]| move |c: [u8; 3]| c.iter().zip(want).all(|(a, b)| a.abs_diff(b) < 8);
        assert!(
            count(0, w, 0, h, &near([0x00, 0x72, 0xB2])) > 500,
            "no IPv4 blue"
        );
        assert!(
            count(0, w, 0, h, &near([0xE6, 0x9F, 0x00])) > 500,
            "no IPv6 orange"
        );
        assert_eq!(at(5, 5), [255, 255, 255], "a white background");
    }

    #[test]
    fn every_kind_of_plot_is_drawn_with_its_text_axes_and_colours() {
        // CI installs fonts-dejavu-core: without a font this fails rather than skips.
        let fonts = Fonts::system().unwrap();
        let est = |v: f64| crate::plot::Estimate {
            value: v,
            interval: Some((v - 1.0, v + 1.0)),
        };
        let lines = [
            crate::plot::Line {
                name: "IPv4".into(),
                points: vec![(64.0, est(15.0)), (1536.0, est(368.0))],
            },
            crate::plot::Line {
                name: "IPv6".into(),
                points: vec![(64.0, est(14.0)), (1536.0, est(360.0))],
            },
        ];
        let marks = crate::plot::Marks {
            at: vec![(1536.0, "*")],
            note: Some(crate::charts::MARKS_NOTE.into()),
        };
        let svg = crate::plot::line_chart(
            "Table 6. UDP",
            "Payload size (bytes)",
            "Mbit/s",
            &lines,
            &marks,
        );
        assert_drawn(&fonts, &svg);
        let boxes = |name: &str, base: f64| crate::plot::Boxes {
            name: name.into(),
            values: vec![
                vec![base, base + 2.0, base + 3.0, base + 7.0, base + 4.0],
                vec![base * 2.0, base * 2.5, base * 2.2],
            ],
        };
        let svg = crate::plot::box_chart(
            "RTT (µs), run by run",
            "Payload size (bytes)",
            "RTT (µs)",
            &["64".into(), "1400".into()],
            &[boxes("IPv4", 10.0), boxes("IPv6", 12.0)],
        );
        assert_drawn(&fonts, &svg);
        let series = |family: usize, level: f64| crate::plot::Series {
            family,
            points: (1..=20)
                .map(|i| (f64::from(i) * 0.5, level + f64::from(i % 3)))
                .collect(),
        };
        let svg = crate::plot::series_chart(
            "Payload size (bytes) 64: throughput by interval, every run",
            "Time since the run's first window (s)",
            "Throughput (Mbit/s)",
            &["IPv4", "IPv6"],
            &[
                series(0, 10.0),
                series(0, 11.0),
                series(1, 6.0),
                series(1, 7.0),
            ],
            false,
        );
        assert_drawn(&fonts, &svg);
        // A delay distribution: the share of packets against the delay.
        let cdf = |family: usize, base: f64| crate::plot::Series {
            family,
            points: (0..=100)
                .map(|p| (base + f64::from(p).powi(2) / 500.0, f64::from(p) / 100.0))
                .collect(),
        };
        let svg = crate::plot::series_chart(
            "Payload size (bytes) 64: round-trip time distribution, every run",
            "Round-trip time (µs)",
            "Share of packets (CDF)",
            &["IPv4", "IPv6"],
            &[cdf(0, 6.0), cdf(0, 6.5), cdf(1, 7.0), cdf(1, 7.2)],
            false,
        );
        assert_drawn(&fonts, &svg);
        // The same on a log axis, as delays over decades are drawn.
        let svg = crate::plot::series_chart(
            "Payload size (bytes) 64: round-trip time distribution, every run",
            "Round-trip time (µs)",
            "Share of packets (CDF)",
            &["IPv4", "IPv6"],
            &[cdf(0, 2.0), cdf(0, 2.5), cdf(1, 3.0), cdf(1, 3.2)],
            true,
        );
        assert_drawn(&fonts, &svg);
        // Bars per category with their significance marks.
        let bars = |name: &str, v: f64| crate::plot::Bars {
            name: name.into(),
            values: vec![Some(est(v)), Some(est(v / 8.0))],
        };
        let svg = crate::plot::bar_chart(
            "Table 12. VoIP",
            "Throughput (kbit/s)",
            &["G.711.1".into(), "G.723.1".into()],
            &[bars("IPv4", 74.0), bars("IPv6", 70.0)],
            &marks,
        );
        assert_drawn_with(&fonts, &svg, false);
        // The significance mark and its note (grey) are drawn.
        let (_, _, px) = decode(&fonts.render(&svg).unwrap());
        let grey = px
            .chunks(4)
            .enumerate()
            .filter(|(i, c)| i / 1440 > 810 && c[..3].iter().all(|v| (60..110).contains(v)))
            .count();
        assert!(grey > 100, "no note drawn: {grey}");
    }

    #[test]
    fn a_broken_svg_is_an_error_not_a_panic() {
        // No text to draw: no fonts needed.
        let fonts = Fonts {
            options: resvg::usvg::Options::default(),
        };
        assert!(fonts.render("<svg").is_err());
        assert!(fonts.render("").is_err());
    }
}
