//! dualperf's reports, from run directories to what a reader sees: statistics across
//! repetitions, IPv4 against IPv6 per point and metric, in the tables the plan declares,
//! as text, Markdown, CSV, JSON, HTML and SVG or PNG plots. It never measures, and it
//! writes no file: `dualperf report` does.
//!
//! Following a value from a run file to a plot:
//!
//! - [`load`](mod@load): run directories → finished runs, the points' order and factors, the
//!   declared tables;
//! - [`stats`]: runs → mean and confidence interval per family, Welch's t-test, per point
//!   and metric ([`Results`]);
//! - [`tables`]: the declared tables over the points they hold, and tables for what they
//!   leave out;
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
        Self {
            results,
            tables,
            clocks,
            provenance: runs.provenance.clone(),
        }
    }

    /// The tables as aligned text, or as Markdown.
    pub fn text(&self, markdown: bool) -> String {
        render::text(&self.tables, &self.results, markdown)
    }

    /// One CSV row per table row and metric, in the table's unit.
    pub fn csv(&self) -> String {
        render::csv(&self.tables, &self.results)
    }

    /// Every plot, as SVG.
    pub fn plots(&self) -> Vec<Plot> {
        charts::plots(&self.tables, &self.results, &self.provenance.short_line())
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
