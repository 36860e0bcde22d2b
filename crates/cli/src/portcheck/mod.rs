//! `dualperf portcheck`: scan sources for IPv4-only constructs (`port::scan`, the rule
//! table in `port::rules`), print them as text, JSON or SARIF; with `--criteria`, seed
//! 000's eight criteria for an application ported to IPv6, checked from the sources
//! and from a running program (`criteria.rs`).

mod criteria;

use std::path::PathBuf;

use anyhow::{Context, Result};
use port::report::{self, Tool};
use port::rules::Severity;
use port::walk::{scan_paths, Options};

use crate::usage;

/// Scan C, C++, Python, Go and Java sources for IPv4-only networking code and say what
/// replaces it.
///
/// Like Microsoft's Checkv4 or Sun's Socket Scrubber (step 2 of Bouras et al.'s porting method, H.323 study), but
/// today's: comments and string literals are told apart from code, each finding gives
/// file:line:column, the rule, a severity, why the construct breaks on IPv6 and the
/// replacement (getaddrinfo, inet_pton/inet_ntop, sockaddr_storage, IPV6_TCLASS, …).
/// Directories are walked in parallel and `.gitignore`/`.ignore` files are honoured,
/// as ripgrep does. `--list-rules` prints the rule table.
///
/// Exit status: 0 when nothing at or above `--fail-on` was found, 1 when something was
/// (or a file could not be read), 2 for a usage error.
#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:
  dualperf portcheck src/                      # text, compiler-style, with replacements
  dualperf portcheck --explain server.c        # …and why each construct breaks on IPv6
  dualperf portcheck --format sarif -o portcheck.sarif .   # for code-scanning dashboards
  dualperf portcheck --json --lang c,cpp --rule gethostbyname,inet_ntoa .
  dualperf portcheck --list-rules
  dualperf portcheck --criteria src/ -- ./myserver --port 7000   # Bouras et al.'s checklist

What is reported and what is excused (same function, family branch, build without IPv6),
the output formats, and how accurate it is on real code: docs/portcheck.md.")]
pub(crate) struct PortcheckArgs {
    /// Files and directories to scan (default: the current directory). A file named
    /// here is scanned even if an ignore file lists it.
    #[arg(value_name = "PATH")]
    paths: Vec<PathBuf>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Text)]
    format: Format,
    /// Same as --format json.
    #[arg(long, conflicts_with = "format")]
    json: bool,
    /// Write the report to FILE instead of stdout.
    #[arg(short, long, value_name = "FILE")]
    output: Option<PathBuf>,
    /// Text: also say why each construct breaks on IPv6.
    #[arg(long)]
    explain: bool,
    /// Only these rules (ids from --list-rules), comma-separated.
    #[arg(long, value_delimiter = ',', value_name = "ID")]
    rule: Vec<String>,
    /// Not these rules, comma-separated.
    #[arg(long, value_delimiter = ',', value_name = "ID")]
    exclude_rule: Vec<String>,
    /// Only these languages: c, cpp, python, go, java (comma-separated).
    #[arg(long, value_delimiter = ',', value_name = "LANG")]
    lang: Vec<String>,
    /// Report only findings at or above this severity.
    #[arg(long, value_parser = severity, default_value = "note", value_name = "LEVEL")]
    min_severity: Severity,
    /// Exit 1 if a finding at or above this level is reported: note, warning, error, or
    /// none (always exit 0 once the scan ran).
    #[arg(long, default_value = "error", value_name = "LEVEL")]
    fail_on: String,
    /// Do not honour .gitignore, .ignore and git's exclude files.
    #[arg(long)]
    no_ignore: bool,
    /// Also scan hidden files and directories.
    #[arg(long)]
    hidden: bool,
    /// Follow symbolic links.
    #[arg(long, short = 'L')]
    follow: bool,
    /// Worker threads (default: one per core).
    #[arg(long, default_value_t = 0, value_name = "N")]
    threads: usize,
    /// Skip files larger than this many bytes (they are listed as skipped).
    #[arg(long, default_value_t = 16 << 20, value_name = "BYTES")]
    max_filesize: u64,
    /// Print the rule table (id, severity, languages, criterion, title, replacement).
    #[arg(long)]
    list_rules: bool,
    /// Print Bouras et al.'s eight criteria (H.323 study) for an application ported to IPv6 as a
    /// checklist: from the sources in PATH (if any) and from a program under test,
    /// given after `--` (started, inspected, stopped) or with --pid.
    #[arg(long)]
    criteria: bool,
    /// With --criteria: inspect this running process instead of starting one.
    #[arg(long, requires = "criteria", value_name = "PID")]
    pid: Option<u32>,
    /// With --criteria: how long the program under test runs before it is inspected.
    #[arg(long, requires = "criteria", default_value = "1s", value_parser = crate::args::std_duration, value_name = "DURATION")]
    settle: std::time::Duration,
    /// With --criteria: the program under test and its arguments (after `--`).
    #[arg(last = true, value_name = "CMD")]
    command: Vec<String>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
enum Format {
    Text,
    Json,
    Sarif,
}

fn severity(s: &str) -> Result<Severity, String> {
    Severity::from_name(s).ok_or_else(|| format!("{s:?} is not a severity: note, warning or error"))
}

pub(crate) const TOOL: Tool<'static> = Tool {
    name: "dualperf",
    version: env!("CARGO_PKG_VERSION"),
};

/// The walk options the arguments ask for, validated.
fn options(args: &PortcheckArgs) -> Result<Options> {
    let opts = Options {
        ignore_files: !args.no_ignore,
        hidden: args.hidden,
        follow_links: args.follow,
        langs: None,
        rules: None,
        threads: args.threads,
        max_file_bytes: args.max_filesize,
        evidence: args.criteria,
    };
    match opts.select(&args.lang, &args.rule, &args.exclude_rule) {
        Ok(o) => Ok(o),
        Err(e) => usage!("{e}"),
    }
}

pub(crate) fn run(args: PortcheckArgs) -> Result<()> {
    if args.list_rules {
        return list_rules(args.json || args.format == Format::Json);
    }
    let fail_on = match args.fail_on.as_str() {
        "none" => None,
        s => match Severity::from_name(s) {
            Some(v) => Some(v),
            None => usage!("--fail-on {s:?}: one of none, note, warning, error"),
        },
    };
    let opts = options(&args)?;
    if args.criteria {
        return criteria::run(&args, &opts);
    }
    if !args.command.is_empty() || args.pid.is_some() {
        usage!("a program under test (after `--`) is for --criteria");
    }
    for p in &args.paths {
        if !p.exists() {
            usage!("{}: no such file or directory", p.display());
        }
    }
    let paths = if args.paths.is_empty() {
        vec![PathBuf::from(".")]
    } else {
        args.paths.clone()
    };
    let mut scan = scan_paths(&paths, &opts);
    scan.retain_at_least(args.min_severity);
    let format = if args.json { Format::Json } else { args.format };
    let text = match format {
        Format::Text => report::text(&scan, args.explain),
        Format::Json => serde_json::to_string_pretty(&report::json(&scan, TOOL))? + "\n",
        Format::Sarif => serde_json::to_string_pretty(&report::sarif(&scan, TOOL))? + "\n",
    };
    match &args.output {
        Some(path) => {
            std::fs::write(path, text).with_context(|| format!("writing {}", path.display()))?;
            crate::out::note!(
                "dualperf portcheck: wrote {} ({} findings)",
                path.display(),
                scan.findings().count()
            );
        }
        None => crate::out::print(text)?,
    }
    if scan.fails(fail_on) {
        std::process::exit(1);
    }
    Ok(())
}

fn list_rules(json: bool) -> Result<()> {
    if json {
        return crate::out::print_json(&report::rules_json());
    }
    crate::out::print(report::rules_text())
}
