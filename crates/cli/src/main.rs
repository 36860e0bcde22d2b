//! `dualperf`: a dual-stack IPv4/IPv6 network performance lab.
//!
//! The binary is thin glue in ripgrep's shape: clap parses flags into plain `*Args`,
//! each command turns them into a validated config before any socket opens, and a
//! driver binds the sans-IO cores (`traffic`, `meter`, `wire`) to the kernel (`netio`).
//! `main` maps errors to exit codes: 0 success, 1 runtime failure, 2 usage error.
#![forbid(unsafe_code)]

mod agent;
mod args;
mod campaign;
mod clock;
mod compare;
mod compare_host;
mod completions;
mod control;
mod decode;
mod doctor;
mod export;
mod facts;
mod habits;
mod hostinfo;
mod inproc;
mod interop;
mod interrupt;
mod labcmd;
mod logsink;
mod names;
mod out;
mod overhead;
mod portcheck;
mod recv;
mod report;
mod rfc2544;
mod route;
mod rsvp_host;
mod run;
mod schema;
mod send;
mod stamp;

use clap::{Parser, Subcommand};
// Figures for people (`crate::human::duration` …) live with the documents they render.
use results::human;

/// Measure and compare IPv4 and IPv6: throughput, one-way delay, round-trip time,
/// jitter and loss, with realistic, marked traffic.
///
/// Start a receiver with `dualperf recv`, then send to it with `dualperf send HOST`;
/// `dualperf agent` on a host also sends on request (`send --reverse`, `--bidir`, `--from`).
/// `dualperf compare` runs a standard IPv4-vs-IPv6 battery on loopback by itself.
#[derive(Debug, Parser)]
#[command(
    name = "dualperf",
    version,
    about,
    long_about,
    max_term_width = 100,
    after_help = "Exit status: 0 success (also when stdout is closed early), 1 a measurement failed \
                  (what was measured is still printed), 2 something for you to fix: the command \
                  line, or an input file (plan, topology, flow file, config, log) that cannot be \
                  read or is invalid. Results go to stdout; notes and progress to stderr \
                  (--quiet silences them), in colour only on a terminal and never under \
                  NO_COLOR."
)]
struct Cli {
    /// Print no notes or progress on stderr, only results, warnings and errors.
    #[arg(short, long, global = true)]
    quiet: bool,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    Send(Box<send::SendArgs>),
    Recv(recv::RecvArgs),
    Agent(Box<agent::AgentArgs>),
    Decode(decode::DecodeArgs),
    Compare(compare::CompareArgs),
    Overhead(overhead::OverheadArgs),
    Run(run::RunArgs),
    Report(report::ReportArgs),
    Export(export::ExportArgs),
    Campaign(campaign::CampaignArgs),
    Route(route::RouteArgs),
    Rfc2544(rfc2544::Rfc2544Args),
    Lab(labcmd::LabArgs),
    Clock(clock::ClockArgs),
    Doctor(doctor::DoctorArgs),
    Portcheck(portcheck::PortcheckArgs),
    Interop(interop::InteropArgs),
    Schema(schema::SchemaArgs),
    #[command(hide = true)]
    PathFacts(facts::FactsArgs),
    Completions(completions::CompletionsArgs),
    Man(completions::ManArgs),
}

fn main() {
    let cli = parse();
    out::set_quiet(cli.quiet);
    // A socket per TCP flow: thousands of flows need more descriptors than the usual
    // soft limit of 1,024. Failing to raise it only matters once that many are open.
    let _ = netio::rlimit::raise_nofile();
    let result = match cli.command {
        Command::Send(args) => send::run(*args),
        Command::Recv(args) => recv::run(args),
        Command::Agent(args) => agent::run(*args),
        Command::Decode(args) => decode::run(args),
        Command::Compare(args) => compare::run(args),
        Command::Overhead(args) => overhead::run(args),
        Command::Run(args) => run::run(args),
        Command::Report(args) => report::run(args),
        Command::Export(args) => export::run(args),
        Command::Campaign(args) => campaign::run(args),
        Command::Route(args) => route::run(args),
        Command::Rfc2544(args) => rfc2544::run(args),
        Command::Lab(args) => labcmd::run(args),
        Command::Clock(args) => clock::run(args),
        Command::Doctor(args) => doctor::run(args),
        Command::Portcheck(args) => portcheck::run(args),
        Command::Interop(args) => interop::run(args),
        Command::Schema(args) => schema::run(args),
        Command::PathFacts(args) => facts::run(args),
        Command::Completions(args) => completions::run(args),
        Command::Man(args) => completions::man(args),
    };
    if let Err(err) = result {
        if err.is::<out::StdoutClosed>() {
            std::process::exit(0);
        }
        eprintln!("dualperf: error: {err:#}");
        let code = if err.downcast_ref::<UsageError>().is_some() {
            2
        } else {
            1
        };
        std::process::exit(code);
    }
}

/// The command line, or clap's error (exit code 2) with a tip for each of iperf3's
/// spellings in it, in dualperf's words (`habits.rs`).
fn parse() -> Cli {
    Cli::try_parse().unwrap_or_else(|mut err| {
        if err.use_stderr() {
            let args: Vec<String> = std::env::args_os()
                .skip(1)
                .map(|a| a.to_string_lossy().into_owned())
                .collect();
            habits::explain(&mut err, &args);
        }
        err.exit()
    })
}

/// `argv` as the command line would be read (to check options before they are used).
fn parse_from(argv: impl IntoIterator<Item = String>) -> Result<Cli, clap::Error> {
    Cli::try_parse_from(argv)
}

/// An error in what the user asked for (exit code 2), as opposed to a runtime failure.
#[derive(Debug)]
struct UsageError(String);

impl std::fmt::Display for UsageError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for UsageError {}

/// Return a usage error.
macro_rules! usage {
    ($($t:tt)*) => {
        return Err(anyhow::Error::new($crate::UsageError(format!($($t)*))))
    };
}
pub(crate) use usage;
