//! `dualperf report`: statistics across repetitions from run directories, IPv4 against
//! IPv6 per point and metric, in the tables the plan declares. It never measures.
//! The report crate reads the directories and renders; this reads the arguments and
//! writes the files and stdout.

use std::path::{Path, PathBuf};

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
/// A `dualperf rfc2544` run directory (one holding rfc2544.json) gets RFC 2544's tables
/// instead: throughput (NDR, PDR; "≥" at the highest load offered), latency, frame loss
/// rate and back-to-back, under the tester's ceiling, with their plots (docs/rfc2544.md).
///
/// What it reads, the run directory, and what it writes: docs/output.md. The plan's
/// tables, metrics and units ([[tables]]): docs/plans.md.
#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:
  dualperf report results/sharma2013-1795360000
  dualperf report results/a results/b --markdown > tables.md
  dualperf report results/a --csv > tables.csv
  dualperf report results/a --html report.html --png plots/ --svg plots/
  dualperf report runs/rfc2544-1795360000 --html rfc2544.html --png plots/")]
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
    if args.dirs.iter().any(|d| report::rfc2544::is_rfc2544_dir(d)) {
        return rfc2544(&args);
    }
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
    // Machine-read output has no room for it: a partial report says so on stderr.
    if args.json || args.csv {
        if let Some(head) = report.completeness.lines().first() {
            eprintln!("dualperf report: warning: {head}");
        }
    }

    let plots = if args.html.is_some() || args.svg.is_some() || args.png.is_some() {
        report.plots()
    } else {
        report::Plots::default()
    };
    write_images(&args, &plots)?;
    if let Some(path) = &args.html {
        let page = report.html(&args.dirs, &plots);
        std::fs::write(path, page).with_context(|| format!("cannot write {}", path.display()))?;
        eprintln!(
            "dualperf report: wrote {} ({} plot{}{})",
            path.display(),
            plots.drawn.len(),
            if plots.drawn.len() == 1 { "" } else { "s" },
            match plots.not_drawn.len() {
                0 => String::new(),
                n => format!("; {n} with nothing to show said in words"),
            }
        );
    }
    if args.json {
        return crate::out::print_json(&crate::out::sorted_json(&report.into_doc())?);
    }
    if args.csv {
        return crate::out::print(report.csv());
    }
    crate::out::print(report.text(args.markdown))
}

/// `--svg DIR` and `--png DIR`: every file written is named; every plot not drawn is
/// said, with why.
fn write_images(args: &ReportArgs, plots: &report::Plots) -> Result<()> {
    if args.svg.is_some() || args.png.is_some() {
        for n in &plots.not_drawn {
            eprintln!("dualperf report: not drawn: {}: {}", n.title, n.why);
        }
    }
    if let Some(dir) = &args.svg {
        let written = write_plots(dir, "SVG", plots, |p| Ok(p.svg.clone().into_bytes()))?;
        eprintln!("{written}");
    }
    if let Some(dir) = &args.png {
        let fonts = report::png::Fonts::system()?;
        let written = write_plots(dir, "PNG", plots, |p| {
            fonts
                .render(&p.svg)
                .with_context(|| format!("cannot draw {}", p.file))
        })?;
        eprintln!("{written}");
    }
    Ok(())
}

/// The report of a `dualperf rfc2544` run directory (it holds rfc2544.json): the
/// throughput, latency, loss-curve and back-to-back tables under the tester's ceiling,
/// their plots, and `--json` the document itself.
fn rfc2544(args: &ReportArgs) -> Result<()> {
    let [dir] = args.dirs.as_slice() else {
        usage!("an rfc2544 run directory is reported alone: give one directory");
    };
    if args.csv {
        usage!("--csv: an rfc2544 run directory's figures are in --json");
    }
    let doc = report::rfc2544::load(dir)?;
    let plots = if args.html.is_some() || args.svg.is_some() || args.png.is_some() {
        report::rfc2544::plots(&doc)
    } else {
        report::Plots::default()
    };
    write_images(args, &plots)?;
    if let Some(path) = &args.html {
        let page = report::rfc2544::html(dir, &doc, &plots);
        std::fs::write(path, page).with_context(|| format!("cannot write {}", path.display()))?;
        eprintln!("dualperf report: wrote {}", path.display());
    }
    if args.json {
        return crate::out::print_json(&crate::out::sorted_json(&doc)?);
    }
    crate::out::print(report::rfc2544::text(&doc, args.markdown))
}

/// Writes every drawn plot into `dir` as `FILE.EXT` (`kind` SVG or PNG), and returns
/// what it wrote: a line naming the directory and count, then one per file.
fn write_plots(
    dir: &Path,
    kind: &str,
    plots: &report::Plots,
    bytes: impl Fn(&report::Plot) -> Result<Vec<u8>>,
) -> Result<String> {
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let ext = kind.to_lowercase();
    let mut names = Vec::new();
    for p in &plots.drawn {
        let path = dir.join(format!("{}.{ext}", p.file));
        std::fs::write(&path, bytes(p)?)
            .with_context(|| format!("cannot write {}", path.display()))?;
        names.push(path);
    }
    let mut out = format!(
        "dualperf report: wrote {} {kind} plot{} in {}",
        names.len(),
        if names.len() == 1 { "" } else { "s" },
        dir.display()
    );
    for n in names {
        out.push_str(&format!("\n  {}", n.display()));
    }
    Ok(out)
}
