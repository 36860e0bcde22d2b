//! `dualperf report`: statistics across repetitions from run directories, IPv4 against
//! IPv6 per point and metric, in the tables the plan declares. It never measures.
//! The report crate reads the directories and renders; this reads the arguments and
//! writes the files and stdout.

use std::path::PathBuf;

use anyhow::{Context, Result};

use crate::usage;

/// Tables of a plan's results: for every point and metric, the mean over repetitions
/// with its 95 % confidence interval (Student t) for IPv4 and IPv6, the relative
/// difference, and Welch's t-test; a difference the data do not support is labelled
/// "not significant", whatever its size.
///
/// The tables are those the plan declares ([[tables]]: title, points, metrics and units,
/// e.g. "Table 3. IPv4 and IPv6 TCP Throughput" in Mbit/s by payload size); points no
/// table holds get one table per metric and group. Metrics per run: throughput (the
/// receiver's payload bit rate), rtt or one-way delay (mean), jitter (D-ITG's mean |ΔD|)
/// and loss %.
///
/// What it reads, the run directory, and what it writes: docs/output.md. The plan's
/// tables, metrics and units ([[tables]]): docs/plans.md.
#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:
  dualperf report results/sharma2013-1795360000
  dualperf report results/a results/b --markdown > tables.md
  dualperf report results/a --csv > tables.csv
  dualperf report results/a --html report.html --png plots/ --svg plots/")]
pub(crate) struct ReportArgs {
    /// Run directories written by `dualperf run` (repetitions of the same plan pool).
    #[arg(required = true)]
    dirs: Vec<PathBuf>,
    /// Markdown tables.
    #[arg(long, conflicts_with_all = ["csv", "json"])]
    markdown: bool,
    /// CSV: one row per table row and metric, in the table's unit.
    #[arg(long, conflicts_with = "json")]
    csv: bool,
    /// JSON with every figure, in the stored units (bit/s, ns, %), and the tables.
    #[arg(long)]
    json: bool,
    /// Also write one self-contained HTML page with every table and plot (inline SVG,
    /// no network requests) to this file.
    #[arg(long, value_name = "FILE")]
    html: Option<PathBuf>,
    /// Also write every plot as an SVG file into this directory.
    #[arg(long, value_name = "DIR")]
    svg: Option<PathBuf>,
    /// Also write every plot as a PNG file (1440×840) into this directory.
    #[arg(long, value_name = "DIR")]
    png: Option<PathBuf>,
}

pub(crate) fn run(args: ReportArgs) -> Result<()> {
    let mut warnings = Vec::new();
    let runs = report::load(&args.dirs, &mut warnings);
    for w in &warnings {
        eprintln!("dualperf report: warning: {w}");
    }
    let runs = match runs {
        Ok(runs) => runs,
        Err(e) if e.is_usage() => usage!("{e}"),
        Err(e) => return Err(e.into()),
    };
    let report = report::Report::new(&runs);

    let plots = if args.html.is_some() || args.svg.is_some() || args.png.is_some() {
        report.plots()
    } else {
        Vec::new()
    };
    if let Some(dir) = &args.svg {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
        for p in &plots {
            let path = dir.join(format!("{}.svg", p.file));
            std::fs::write(&path, &p.svg)
                .with_context(|| format!("cannot write {}", path.display()))?;
        }
    }
    if let Some(dir) = &args.png {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
        let fonts = report::png::Fonts::system()?;
        for p in &plots {
            let path = dir.join(format!("{}.png", p.file));
            let png = fonts
                .render(&p.svg)
                .with_context(|| format!("cannot draw {}", path.display()))?;
            std::fs::write(&path, png)
                .with_context(|| format!("cannot write {}", path.display()))?;
        }
    }
    if let Some(path) = &args.html {
        let page = report.html(&args.dirs, &plots);
        std::fs::write(path, page).with_context(|| format!("cannot write {}", path.display()))?;
    }
    if args.json {
        return crate::out::print_json(&crate::out::sorted_json(&report.into_doc())?);
    }
    if args.csv {
        return crate::out::print(report.csv());
    }
    crate::out::print(report.text(args.markdown))
}
