//! dualperf's reports, from run directories to what a reader sees: statistics across
//! repetitions, IPv4 against IPv6 per point and metric, in the tables the plan declares,
//! as text, Markdown, CSV, JSON, HTML and SVG or PNG plots. It never measures, and it
//! writes no file: `dualperf report` does.
//!
//! Following a value from a run file to a plot:
//!
//! - [`load`](mod@load): run directories → finished runs, the points' order and factors, the
//!   declared tables, and the host checks (`doctor.json`) that were not ok;
//! - [`stats`]: runs → mean and confidence interval per family, Welch's t-test, per point
//!   and metric ([`Results`]);
//! - [`tables`]: the declared tables over the points they hold, and tables for what they
//!   leave out;
//! - [`units`]: one unit per metric on a page, chosen from the data's magnitude, and
//!   numbers with three significant digits;
//! - [`render`]: the tables as aligned text, Markdown and CSV;
//! - [`clock`]: the clocks of runs across hosts, and a note under each table whose
//!   one-way delays they make uncertain;
//! - [`doc`]: the `--json` document ([`ReportDoc`]) and its JSON Schema;
//! - [`charts`]: one plot per table and metric, drawn by [`plot`] as SVG and by [`png`]
//!   as PNG;
//! - [`html`]: one self-contained page with every table and plot.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod charts;
pub mod clock;
pub mod doc;
mod error;
pub mod html;
pub mod load;
pub mod plot;
pub mod png;
pub mod render;
pub mod stats;
pub mod tables;
pub mod text_table;
pub mod units;

use std::path::PathBuf;

pub use charts::Plot;
pub use doc::{schema, ReportDoc};
pub use error::Error;
pub use load::{load, Runs};
pub use stats::{Results, Row};
pub use tables::{Table, TableRow};

/// A report: the statistics of every point and metric, and the tables that show them.
#[derive(Clone, Debug)]
pub struct Report {
    /// The statistics.
    pub results: Results,
    /// The tables, declared first.
    pub tables: Vec<Table>,
    /// The clock of every flow whose ends read different clocks (runs across hosts).
    pub clocks: Vec<clock::RunClock>,
    /// What was run, where and when.
    pub provenance: load::Provenance,
    /// The unit of each metric on every page of the report (tables and plots alike).
    pub units: units::PageUnits,
}

impl Report {
    /// The report of pooled runs.
    pub fn new(runs: &Runs) -> Self {
        let results = Results::new(runs);
        let mut tables = tables::tables(
            &runs.specs,
            &runs.order,
            &runs.factors,
            results.flows,
            &|p, flow| results.has(p, flow),
        );
        let clocks = clock::run_clocks(&runs.records);
        clock::annotate(&mut tables, &clocks);
        let units = units::harmonise(&mut tables, &results);
        Self {
            results,
            tables,
            clocks,
            provenance: runs.provenance.clone(),
            units,
        }
    }

    /// The tables as aligned text, or as Markdown.
    pub fn text(&self, markdown: bool) -> String {
        render::text(
            &self.tables,
            &self.results,
            &self.provenance.doctor,
            markdown,
        )
    }

    /// One CSV row per table row and metric, in the table's unit.
    pub fn csv(&self) -> String {
        render::csv(&self.tables, &self.results)
    }

    /// Every plot, as SVG.
    pub fn plots(&self) -> Vec<Plot> {
        charts::plots(
            &self.tables,
            &self.results,
            &self.units,
            &self.provenance.short_line(),
        )
    }

    /// One HTML page of every table and these plots, naming the run directories.
    pub fn html(&self, dirs: &[PathBuf], plots: &[Plot]) -> String {
        html::html(dirs, &self.tables, &self.results, plots, &self.provenance)
    }

    /// The `--json` document.
    pub fn into_doc(self) -> ReportDoc {
        let mut doc = ReportDoc::new(self.results.runs, self.results.rows, self.tables);
        doc.clocks = self.clocks;
        doc
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use lab::plan::Run;
    use lab::store::RunRecord;
    use lab::tables::{Column, MetricKind, TableSpec, Unit};

    use super::*;

    /// A UDP round-trip run of point `p` whose RTT has this mean and median (ns).
    fn record(point: &str, family: u8, i: u32, mean_ns: f64, p50_ns: i64) -> RunRecord {
        let mut v: serde_json::Value =
            serde_json::from_str(include_str!("../../lab/tests/data/send-udp-rtt.json")).unwrap();
        v["flows"][0]["rtt"]["delay"]["mean_ns"] = mean_ns.into();
        v["flows"][0]["rtt"]["delay"]["p50_ns"] = p50_ns.into();
        RunRecord {
            format_version: lab::store::FORMAT_VERSION,
            run: Run {
                id: format!("{point}-{family}-{i}"),
                point: 0,
                family,
                repetition: i,
            },
            point: point.into(),
            argv: Vec::new(),
            started_unix_ns: 0,
            exit_code: 0,
            stderr: String::new(),
            report: Some(serde_json::from_value(v).unwrap()),
            background: Vec::new(),
            routers: BTreeMap::new(),
            router_stalls: BTreeMap::new(),
        }
    }

    /// Two sizes, three runs a family: at 64 B IPv6 is clearly slower (every run), at
    /// 512 B the families overlap. A declared table in ms with the paper's 0.5 ms.
    fn runs() -> Runs {
        let mut records = Vec::new();
        for (point, v4, v6) in [
            ("64", [20e3, 21e3, 22e3], [40e3, 41e3, 42e3]),
            ("512", [20e3, 30e3, 25e3], [22e3, 28e3, 24e3]),
        ] {
            for i in 0..3 {
                let i32 = i as u32;
                records.push(record(point, 4, i32, v4[i], v4[i] as i64 / 2));
                records.push(record(point, 6, i32, v6[i], v6[i] as i64 / 2));
            }
        }
        let factors = ["64", "512"]
            .map(|p| {
                (
                    p.to_owned(),
                    BTreeMap::from([("size".to_owned(), p.to_owned())]),
                )
            })
            .into_iter()
            .collect();
        let column = |metric, unit: &str| Column {
            metric,
            unit: Unit::parse(metric, unit).unwrap(),
            flow: 0,
            router: None,
        };
        Runs {
            records,
            order: vec!["64".into(), "512".into()],
            factors,
            specs: vec![TableSpec {
                title: "Table 7. UDP Round Trip Time".into(),
                select: BTreeMap::new(),
                metrics: vec![
                    column(MetricKind::Rtt, "ms"),
                    column(MetricKind::Jitter, "ms"),
                ],
                paper: BTreeMap::from([("64".to_owned(), vec![Some(0.5), None])]),
            }],
            provenance: Default::default(),
        }
    }

    #[test]
    fn delays_have_their_runs_medians_compared_beside_the_means() {
        let report = Report::new(&runs());
        let rtt = Column {
            metric: MetricKind::Rtt,
            unit: MetricKind::Rtt.default_unit(),
            flow: 0,
            router: None,
        };
        let row = report.results.row("64", &rtt).unwrap();
        let m = row.median.as_ref().expect("a delay has its medians");
        let (a, b) = (m.ipv4.unwrap(), m.ipv6.unwrap());
        assert_eq!((a.n, a.median, b.n, b.median), (3, 10_500.0, 3, 20_500.0));
        let cmp = m.ipv6_vs_ipv4.unwrap();
        assert_eq!(cmp.diff, 10_000.0);
        // Every IPv6 run above every IPv4 one, but 3 runs a side are too few for the
        // median's bootstrap to test with: its interval, no verdict.
        assert!(cmp.ci_low.unwrap() > 0.0, "{cmp:?}");
        assert_eq!(cmp.verdict, meter::repeat::Verdict::Undefined);
        // Throughput has no per-run median.
        let tput = Column {
            metric: MetricKind::Throughput,
            ..rtt.clone()
        };
        assert!(report.results.row("64", &tput).unwrap().median.is_none());
        let text = report.text(false);
        assert!(text.contains("Median IPv4"), "{text}");
        assert!(text.contains("10.50 [10.00, 11.00]"), "{text}");
        let csv = report.csv();
        assert!(csv
            .lines()
            .next()
            .unwrap()
            .ends_with(",median_rel_diff_pct,median_verdict"));
        let doc = serde_json::to_value(report.into_doc()).unwrap();
        assert_eq!(doc["rows"][1]["median"]["ipv6"]["median"], 20_500.0);
    }

    #[test]
    fn a_metric_has_one_unit_on_the_page_and_the_papers_numbers_follow() {
        let report = Report::new(&runs());
        // Loopback's 20 µs: µs everywhere, the plan's ms too; the paper's 0.5 ms is 500 µs.
        let declared = &report.tables[0];
        assert_eq!(declared.metrics[0].unit.name, "µs");
        assert_eq!(declared.paper["64"][0], Some(500.0));
        for t in &report.tables {
            for c in t
                .metrics
                .iter()
                .filter(|c| c.metric.covers(MetricKind::Delay))
            {
                assert_eq!(c.unit.name, "µs", "{}", t.title);
            }
        }
        assert_eq!(report.units.of(MetricKind::Delay).unwrap().name, "µs");
        let text = report.text(false);
        assert!(text.contains("Round trip time (µs): IPv4"), "{text}");
        assert!(!text.contains("(ms)"), "{text}");
    }

    #[test]
    fn plots_mark_significant_differences_and_keep_their_titles_short() {
        let report = Report::new(&runs());
        let plots = report.plots();
        let rtt = plots
            .iter()
            .find(|p| p.file.ends_with("-rtt"))
            .expect("the rtt plot");
        // Welch at 64 B: 20.5 vs 41 µs with sd 1: p < 0.01; at 512 B not significant.
        assert_eq!(rtt.svg.matches(">**</text>").count(), 1, "{}", rtt.svg);
        assert_eq!(rtt.svg.matches(">*</text>").count(), 0);
        assert!(rtt
            .svg
            .contains(charts::MARKS_NOTE.replace('<', "&lt;").as_str()));
        // The table's title names the round trip time: not again.
        assert!(rtt
            .svg
            .contains("<title>Table 7. UDP Round Trip Time</title>"));
        let jitter = plots.iter().find(|p| p.file.ends_with("-jitter")).unwrap();
        assert!(jitter
            .svg
            .contains("<title>Table 7. UDP Round Trip Time – Jitter</title>"));
        // Box plots and distributions have no marks.
        for p in plots.iter().filter(|p| p.file.ends_with("-runs")) {
            assert!(!p.svg.contains("Welch"), "{}", p.file);
        }
    }

    #[test]
    fn the_host_checks_not_ok_head_the_text_markdown_and_html() {
        let mut runs = runs();
        let plain = Report::new(&runs);
        assert!(!plain.text(false).contains(render::DOCTOR_HEADING));
        assert!(!plain.html(&[], &[]).contains("doctor"));
        runs.provenance.doctor = vec![
            "warn steal: 4.000 % of CPU time".into(),
            "fail af-packet: no /proc/net/packet".into(),
        ];
        let report = Report::new(&runs);
        let text = report.text(false);
        let head: Vec<&str> = text.lines().skip(2).take(3).collect();
        assert_eq!(
            head,
            [
                render::DOCTOR_HEADING,
                "  warn steal: 4.000 % of CPU time",
                "  fail af-packet: no /proc/net/packet"
            ],
            "{text}"
        );
        let md = report.text(true);
        assert!(md.contains("\n- warn steal: 4.000 % of CPU time\n"), "{md}");
        let html = report.html(&[], &[]);
        assert!(
            html.contains("<li>fail af-packet: no /proc/net/packet</li>"),
            "{html}"
        );
    }

    #[test]
    fn one_run_puts_no_marks_on_the_plots() {
        let mut runs = runs();
        runs.records.retain(|r| r.run.repetition == 0);
        let report = Report::new(&runs);
        for p in report.plots() {
            assert!(
                !p.svg.contains(">**</text>") && !p.svg.contains("Welch"),
                "{}",
                p.file
            );
        }
    }
}
