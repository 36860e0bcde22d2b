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
//! - [`verdicts`]: the verdict layer: IPv6 against IPv4 per point and metric of the
//!   plan's tables, paired where the runs are pairs (medians, a false discovery rate
//!   over the page), pooled otherwise; what `dualperf compare` prints;
//! - [`verdicts_path`]: the points the path leaves uncompared (fragmenting,
//!   oversubscribed), and what the summary says of them;
//! - [`html`]: one self-contained page with every table and plot;
//! - [`rfc2544`](mod@rfc2544): a `dualperf rfc2544` run directory (`rfc2544.json`): throughput,
//!   latency, frame loss and back-to-back tables with the tester's ceiling, and their plots.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod charts;
pub mod clock;
pub mod doc;
mod error;
pub mod html;
pub mod load;
pub mod missing;
pub mod path;
pub mod plot;
pub mod png;
pub mod render;
pub mod rfc2544;
pub mod stats;
pub mod tables;
/// Plain aligned text tables, shared with the binary's renderers (`results::text_table`).
pub use results::text_table;
pub mod units;
pub mod verdicts;
pub mod verdicts_path;

use std::path::PathBuf;

pub use charts::{Plot, Plots};
pub use doc::{schema, ReportDoc};
pub use error::Error;
pub use load::{load, load_with, Runs};
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
    /// The planned runs without a result (none when whole).
    pub completeness: missing::Completeness,
    /// The verdict layer's page over the plan's tables.
    pub verdicts: results::compare::CompareReport,
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
        for t in &mut tables {
            let points: Vec<(&str, &str)> = t
                .rows
                .iter()
                .map(|r| (r.point.as_str(), r.label.as_str()))
                .collect();
            t.partial = runs.completeness.partial(&points);
        }
        let verdicts = verdicts::compare_doc(runs, &tables, None);
        Self {
            results,
            tables,
            clocks,
            provenance: runs.provenance.clone(),
            units,
            completeness: runs.completeness.clone(),
            verdicts,
        }
    }

    /// The tables as aligned text, or as Markdown.
    pub fn text(&self, markdown: bool) -> String {
        let mut out = render::text(
            &self.tables,
            &self.results,
            &self.provenance.doctor,
            &self.completeness.lines(),
            markdown,
        );
        // The verdict layer's page, as `dualperf compare` prints it.
        let page = verdicts::render(&self.verdicts);
        if markdown {
            out.push_str(&format!("\n## Verdicts\n\n```text\n{page}```\n"));
        } else {
            out.push('\n');
            out.push_str(&page);
        }
        // The path's facts under the verdicts, when the directory has them.
        if let Some(facts) = &self.provenance.path_facts {
            let block = path::text(facts);
            if markdown {
                out.push_str(&format!("\n## Path\n\n```text\n{block}```\n"));
            } else {
                out.push('\n');
                out.push_str(&block);
            }
        }
        out
    }

    /// One CSV row per table row and metric, in the table's unit.
    pub fn csv(&self) -> String {
        render::csv(&self.tables, &self.results)
    }

    /// Every plot, as SVG, and those with nothing to show (said in words instead).
    pub fn plots(&self) -> Plots {
        charts::plots(
            &self.tables,
            &self.results,
            &self.units,
            &self.provenance.short_line(),
        )
    }

    /// One HTML page of every table and these plots, naming the run directories.
    pub fn html(&self, dirs: &[PathBuf], plots: &Plots) -> String {
        html::html(
            dirs,
            &self.tables,
            &self.results,
            plots,
            &self.provenance,
            &self.completeness.lines(),
        )
    }

    /// The `--json` document.
    pub fn into_doc(self) -> ReportDoc {
        let mut doc = ReportDoc::new(self.results.runs, self.results.rows, self.tables);
        doc.clocks = self.clocks;
        doc.partial = (!self.completeness.is_whole()).then_some(self.completeness);
        doc.verdicts = Some(self.verdicts);
        doc.path = self.provenance.path_facts;
        doc
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use lab::plan::Run;
    use lab::store::RunRecord;
    use lab::tables::{Column, TableSpec};
    use results::metric::{self, Metric, Unit, Vocabulary};

    use super::*;
    use crate::charts::Place;

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
            attempts: 1,
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
        let column = |metric: Metric, unit: &str| Column {
            metric,
            unit: Unit::parse(&metric, unit).unwrap(),
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
                metrics: vec![column(metric::RTT, "ms"), column(metric::JITTER, "ms")],
                paper: BTreeMap::from([("64".to_owned(), vec![Some(0.5), None])]),
            }],
            provenance: Default::default(),
            completeness: Default::default(),
            vocabulary: Vocabulary::standard(),
        }
    }

    #[test]
    fn the_path_block_follows_the_verdicts_in_text_markdown_json_and_html() {
        let facts = path::tests::facts();
        let mut with = runs();
        with.provenance.path_facts = Some(facts.clone());
        let report = Report::new(&with);
        let block = path::text(&facts);
        let text = report.text(false);
        let page = verdicts::render(&report.verdicts);
        assert!(text.ends_with(&format!("{page}\n{block}")), "{text}");
        assert!(report
            .text(true)
            .ends_with(&format!("\n## Path\n\n```text\n{block}```\n")));
        let html = report.html(&[], &Plots::default());
        assert!(html.ends_with(&format!("{}</body></html>\n", path::html(&facts))));
        assert_eq!(report.into_doc().path, Some(facts));
        // Without path.json: no block, no key.
        let plain = Report::new(&runs());
        assert!(!plain.text(false).contains("Path to"));
        let doc = serde_json::to_value(plain.into_doc()).unwrap();
        assert!(doc.get("path").is_none());
    }

    #[test]
    fn delays_have_their_runs_medians_compared_beside_the_means() {
        let report = Report::new(&runs());
        let rtt = Column {
            metric: metric::RTT,
            unit: metric::RTT.default_unit(),
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
            metric: metric::THROUGHPUT,
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
            for c in t.metrics.iter().filter(|c| c.metric.covers(&metric::DELAY)) {
                assert_eq!(c.unit.name, "µs", "{}", t.title);
            }
        }
        assert_eq!(report.units.of(&metric::DELAY).unwrap().name, "µs");
        let text = report.text(false);
        assert!(text.contains("Round trip time (µs): IPv4"), "{text}");
        assert!(!text.contains("(ms)"), "{text}");
    }

    #[test]
    fn plots_mark_significant_differences_and_keep_their_titles_short() {
        let report = Report::new(&runs());
        let plots = report.plots().drawn;
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
        assert!(!plain.html(&[], &Plots::default()).contains("doctor"));
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
        let html = report.html(&[], &Plots::default());
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
        for p in report.plots().drawn {
            assert!(
                !p.svg.contains(">**</text>") && !p.svg.contains("Welch"),
                "{}",
                p.file
            );
        }
    }

    /// Runs of TCP and UDP at 64 and 512 B, round trip, each run's delay distribution
    /// kept (`send --cdf`); the plan's tables split the protocols (rows by size alone),
    /// throughput in two tables and the UDP round trip in a third.
    fn sweep() -> Runs {
        let mut records = Vec::new();
        let mut order = Vec::new();
        let mut factors = BTreeMap::new();
        for proto in ["tcp", "udp"] {
            for size in ["64", "512"] {
                let id = format!("protocol={proto},size={size}");
                for family in [4, 6] {
                    for i in 0..2 {
                        let mut r = record(&id, family, i, 20e3 + f64::from(i) * 1e3, 10_000);
                        let flow = &mut r.report.as_mut().unwrap().flows[0];
                        flow.delay_cdf_ns = Some((0..=100).map(|p| 10_000 + p * 100).collect());
                        records.push(r);
                    }
                }
                factors.insert(
                    id.clone(),
                    BTreeMap::from([
                        ("protocol".to_owned(), proto.to_owned()),
                        ("size".to_owned(), size.to_owned()),
                    ]),
                );
                order.push(id);
            }
        }
        let spec = |title: &str, proto: &str, metric: Metric| TableSpec {
            title: title.into(),
            select: BTreeMap::from([("protocol".to_owned(), proto.to_owned())]),
            metrics: vec![Column {
                metric,
                unit: metric.default_unit(),
                flow: 0,
                router: None,
            }],
            paper: BTreeMap::new(),
        };
        Runs {
            records,
            order,
            factors,
            specs: vec![
                spec("Table 3. TCP Throughput", "tcp", metric::THROUGHPUT),
                spec("Table 4. UDP Throughput", "udp", metric::THROUGHPUT),
                spec("Table 7. UDP Round Trip Time", "udp", metric::RTT),
            ],
            provenance: Default::default(),
            completeness: Default::default(),
            vocabulary: Vocabulary::standard(),
        }
    }

    /// Each `<svg>`'s title with the `<h2>` heading it sits under, in page order.
    fn plots_by_heading(html: &str) -> Vec<(String, String)> {
        let mut out = Vec::new();
        let mut heading = String::new();
        let mut rest = html;
        loop {
            let (h2, svg) = (rest.find("<h2>"), rest.find("<svg "));
            match (h2, svg) {
                (Some(h), s) if s.is_none_or(|s| h < s) => {
                    let text = &rest[h + 4..];
                    let end = text.find("</h2>").unwrap();
                    heading = text[..end].to_owned();
                    rest = &text[end..];
                }
                (_, Some(s)) => {
                    let text = &rest[s..];
                    let t = text.find("<title>").unwrap() + 7;
                    let end = text.find("</title>").unwrap();
                    out.push((heading.clone(), text[t..end].to_owned()));
                    rest = &text[end..];
                }
                _ => return out,
            }
        }
    }

    #[test]
    fn every_plot_follows_its_table_under_a_title_of_its_own() {
        let report = Report::new(&sweep());
        let plots = report.plots();
        let html = report.html(&[], &plots);
        let seen = plots_by_heading(&html);
        assert_eq!(seen.len(), plots.drawn.len());
        let titles: std::collections::BTreeSet<&str> =
            seen.iter().map(|(_, t)| t.as_str()).collect();
        assert_eq!(
            titles.len(),
            seen.len(),
            "titles unique on the page: {seen:#?}"
        );
        // Each point's delay distribution under the table of its delay, named by its
        // protocol and size: UDP's under Table 7, TCP's under the TCP delay table.
        let cdfs: Vec<(&str, &str)> = seen
            .iter()
            .filter(|(_, t)| t.ends_with("distribution, every run"))
            .map(|(h, t)| (h.as_str(), t.as_str()))
            .collect();
        let tcp_delay = "Also measured: TCP – Delay (µs)";
        assert_eq!(
            cdfs,
            [
                (
                    "Table 7. UDP Round Trip Time",
                    "UDP, size 64: round-trip time distribution, every run"
                ),
                (
                    "Table 7. UDP Round Trip Time",
                    "UDP, size 512: round-trip time distribution, every run"
                ),
                (
                    tcp_delay,
                    "TCP, size 64: round-trip time distribution, every run"
                ),
                (
                    tcp_delay,
                    "TCP, size 512: round-trip time distribution, every run"
                ),
            ]
        );
        // A table's own plots right after it: titled by it.
        for (heading, title) in seen.iter().filter(|(_, t)| !t.contains("distribution")) {
            assert!(
                title.starts_with(heading.as_str()),
                "{title} under {heading}"
            );
        }
        // Each table's plots follow it, before the next table's heading.
        let headings: Vec<&str> = seen.iter().map(|(h, _)| h.as_str()).collect();
        let mut sections = headings.clone();
        sections.dedup();
        let mut sorted = sections.clone();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(
            sections.len(),
            sorted.len(),
            "one run of plots per table: {headings:?}"
        );
    }

    #[test]
    fn an_all_zero_metric_is_said_in_words_not_drawn() {
        let report = Report::new(&sweep());
        let plots = report.plots();
        // No run of the sweep lost a packet: its loss tables have no plots, words instead.
        assert!(plots
            .drawn
            .iter()
            .all(|p| !p.file.ends_with("-loss") && !p.file.ends_with("-loss-runs")));
        let words: Vec<&str> = plots.not_drawn.iter().map(|n| n.why.as_str()).collect();
        assert_eq!(
            words,
            [
                "Packet loss (%): no loss in any run (0 % at every point, IPv4 and IPv6), so it is not plotted",
                "Packet loss (%): no loss in any run (0 % at every point, IPv4 and IPv6), so it is not plotted",
            ]
        );
        let html = report.html(&[], &plots);
        assert_eq!(
            html.matches("<p class=\"not-drawn\">Packet loss (%): no loss in any run")
                .count(),
            2
        );
        for n in &plots.not_drawn {
            let Place::Table(ti) = n.place else {
                panic!("{n:?}")
            };
            assert!(report.tables[ti].title.contains("Packet loss"), "{n:?}");
        }
    }

    #[test]
    fn a_round_trip_delay_keeps_its_interval_above_zero() {
        // One slow run of three: Student's t reaches below zero (mean 34 µs, half-width
        // 142 µs at 2 degrees of freedom).
        let values = [1e3, 1e3, 100e3];
        let t = meter::repeat::Sample::new(&values, meter::repeat::DEFAULT_LEVEL).unwrap();
        assert!(t.ci_low.unwrap() < -100e3, "{t:?}");
        let mut records = Vec::new();
        for family in [4, 6] {
            for (i, v) in values.iter().enumerate() {
                records.push(record("p", family, i as u32, *v, 1_000));
            }
        }
        let runs = Runs {
            records,
            order: vec!["p".into()],
            factors: BTreeMap::new(),
            specs: Vec::new(),
            provenance: Default::default(),
            completeness: Default::default(),
            vocabulary: Vocabulary::standard(),
        };
        let report = Report::new(&runs);
        // `delay` of a flow metered round trip is a round trip: never below zero.
        for metric in [metric::DELAY, metric::RTT] {
            let c = Column {
                metric,
                unit: metric.default_unit(),
                flow: 0,
                router: None,
            };
            let row = report.results.row("p", &c).unwrap();
            for s in [row.ipv4.unwrap(), row.ipv6.unwrap()] {
                assert_eq!(
                    s.interval,
                    meter::repeat::Interval::PercentileBootstrap,
                    "{metric:?}"
                );
                assert_eq!(
                    (s.ci_low, s.ci_high),
                    (Some(1e3), Some(100e3)),
                    "{metric:?}: {s:?}"
                );
            }
        }
        // The delay table's cells: [low, high] from 1 µs, not a ± reaching below zero.
        let text = report.text(false);
        let delay = text.split("Delay (µs)").nth(1).unwrap();
        let row = delay.lines().find(|l| l.starts_with("p ")).unwrap();
        assert!(
            row.contains("34.0 [1.0, 100.0]") && !row.contains('±'),
            "{text}"
        );
    }
}
