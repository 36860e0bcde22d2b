//! `dualperf schema`: the JSON Schema of every document dualperf writes, generated from
//! the types that write and read them.

use std::path::PathBuf;

use anyhow::{Context, Result};

use crate::usage;

/// Print the JSON Schema (draft 2020-12) of an output document, or write them all.
///
/// The schemas are generated from the same types that write each document and read it
/// back, so they cannot drift from the output. `docs/schemas/` holds the same files, and
/// `docs/output.md` describes every field.
#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:
  dualperf schema                      # list the documents
  dualperf schema send                 # the schema of `dualperf send --json`
  dualperf schema --dir docs/schemas   # every schema, as NAME.schema.json")]
pub(crate) struct SchemaArgs {
    /// The document: send, send-bidir, recv, decode, log-meta, log-flow, compare, path, run,
    /// run-dry-run, run-record, resolved, host, peer-clock, router-stats, report, export,
    /// lab-up, lab-status, overhead, overhead-codecs, doctor, portcheck, portcheck-rules,
    /// portcheck-criteria, interop, rfc2544.
    #[arg(value_name = "DOCUMENT", conflicts_with = "dir")]
    document: Option<String>,
    /// Write every schema into this directory as NAME.schema.json.
    #[arg(long, value_name = "DIR")]
    dir: Option<PathBuf>,
}

/// A document: its name, what writes it, and its schema.
struct Doc {
    name: &'static str,
    what: &'static str,
    schema: fn() -> schemars::Schema,
}

const DOCS: &[Doc] = &[
    Doc {
        name: "send",
        what: "dualperf send --json",
        schema: || schemars::schema_for!(results::send::SendReport),
    },
    Doc {
        name: "send-bidir",
        what: "dualperf send --bidir --json",
        schema: || schemars::schema_for!(results::send::BidirReport),
    },
    Doc {
        name: "recv",
        what: "each line of dualperf recv --json (and dualperf agent --json)",
        schema: || schemars::schema_for!(results::recv::RecvLine),
    },
    Doc {
        name: "decode",
        what: "dualperf decode LOG --json",
        schema: || schemars::schema_for!(results::decode::DecodeDoc),
    },
    Doc {
        name: "log-meta",
        what: "a per-packet log's metadata (recv/send --log): decode --json's meta",
        schema: || schemars::schema_for!(results::log::LogMeta),
    },
    Doc {
        name: "log-flow",
        what: "a per-packet log's flow entries, its start and end: decode --json's flow_info",
        schema: || schemars::schema_for!(results::log::LogFlow),
    },
    Doc {
        name: "compare",
        what: "dualperf compare --json",
        schema: || schemars::schema_for!(results::compare::CompareReport),
    },
    Doc {
        name: "path",
        what: "a run directory's path.json (dualperf compare HOST): the path's facts per family",
        schema: || schemars::schema_for!(results::path::PathFacts),
    },
    Doc {
        name: "run",
        what: "dualperf run PLAN --json: the counts of a plan's run, its directory and index",
        schema: || schemars::schema_for!(lab::rundoc::RunSummary),
    },
    Doc {
        name: "run-dry-run",
        what: "dualperf run PLAN --dry-run --json: every run and what it would run",
        schema: || schemars::schema_for!(lab::rundoc::DryRun),
    },
    Doc {
        name: "run-record",
        what: "a run directory's runs/ID.json (dualperf run)",
        schema: || schemars::schema_for!(lab::store::RunRecord),
    },
    Doc {
        name: "resolved",
        what: "a run directory's resolved.json: the plan as dualperf run expanded it",
        schema: || schemars::schema_for!(lab::store::Resolved),
    },
    Doc {
        name: "host",
        what: "a run directory's host.json: where the plan ran",
        schema: || schemars::schema_for!(lab::store::HostInfo),
    },
    Doc {
        name: "peer-clock",
        what:
            "dualperf clock --peer --json, kept per host as a run directory's hosts/NAME/host.json",
        schema: || schemars::schema_for!(results::clock::PeerClockDoc),
    },
    Doc {
        name: "router-stats",
        what: "dualperf route --stats FILE (also in lab status --json and lab run records)",
        schema: || schemars::schema_for!(router::stats::RouterStats),
    },
    Doc {
        name: "report",
        what: "dualperf report DIR --json",
        schema: report::schema,
    },
    Doc {
        name: "export",
        what: "dualperf export --json: the indexed runs, one object a run (not with --sql)",
        schema: || schemars::schema_for!(Vec<lab::index::ExportRow>),
    },
    Doc {
        name: "lab-up",
        what: "dualperf lab up --json: the lab it built, its namespaces and routers",
        schema: || schemars::schema_for!(lab::netlab::LabState),
    },
    Doc {
        name: "lab-status",
        what: "dualperf lab status --json: the lab, each router with fresh counters",
        schema: || schemars::schema_for!(lab::status::LabStatus),
    },
    Doc {
        name: "overhead",
        what: "dualperf overhead --json: a payload's headers, packets and bytes on a link",
        schema: || schemars::schema_for!(traffic::overhead_table::CarriageDoc),
    },
    Doc {
        name: "overhead-codecs",
        what: "dualperf overhead --codecs --json: D-ITG's VoIP codecs' bandwidth",
        schema: || schemars::schema_for!(traffic::overhead_table::CodecDoc),
    },
    Doc {
        name: "doctor",
        what: "dualperf doctor --json, kept by dualperf run as a run directory's doctor.json",
        schema: || schemars::schema_for!(results::doctor::DoctorDoc),
    },
    Doc {
        name: "portcheck",
        what: "dualperf portcheck --json: the scan's findings (--format sarif is SARIF 2.1.0)",
        schema: || schemars::schema_for!(port::report::FindingsDoc<'static>),
    },
    Doc {
        name: "portcheck-rules",
        what: "dualperf portcheck --list-rules --json: every rule with its examples",
        schema: || schemars::schema_for!(Vec<port::report::RuleRow>),
    },
    Doc {
        name: "portcheck-criteria",
        what: "dualperf portcheck --criteria --json: the eight criteria, judged",
        schema: || schemars::schema_for!(port::criteria::CriteriaDoc<'static>),
    },
    Doc {
        name: "interop",
        what: "dualperf interop --json: the dual-stack matrix, literals, selection, eyeballs",
        schema: || schemars::schema_for!(dualstack::interop::Report),
    },
    Doc {
        name: "rfc2544",
        what: "dualperf rfc2544 --json, kept as a run directory's rfc2544.json",
        schema: || schemars::schema_for!(results::bmwg::Rfc2544Doc),
    },
];

pub(crate) fn run(args: SchemaArgs) -> Result<()> {
    if let Some(dir) = &args.dir {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
        for d in DOCS {
            let path = dir.join(format!("{}.schema.json", d.name));
            std::fs::write(&path, pretty(d)?)
                .with_context(|| format!("cannot write {}", path.display()))?;
        }
        crate::out::note!(
            "dualperf schema: wrote {} schemas into {} (NAME.schema.json: {})",
            DOCS.len(),
            dir.display(),
            DOCS.iter().map(|d| d.name).collect::<Vec<_>>().join(", ")
        );
        return Ok(());
    }
    match &args.document {
        None => {
            let mut s = String::from("Documents (dualperf schema NAME prints one):\n");
            let width = DOCS.iter().map(|d| d.name.len()).max().unwrap_or(0) + 2;
            for d in DOCS {
                s.push_str(&format!("  {:<width$}{}\n", d.name, d.what));
            }
            crate::out::print(s)
        }
        Some(name) => match DOCS.iter().find(|d| d.name == name) {
            Some(d) => crate::out::print(pretty(d)?),
            None => usage!(
                "no document '{name}'; the documents are {}",
                DOCS.iter().map(|d| d.name).collect::<Vec<_>>().join(", ")
            ),
        },
    }
}

fn pretty(d: &Doc) -> Result<String> {
    let mut schema = (d.schema)();
    schema.insert(
        "title".into(),
        format!("dualperf {}: {}", d.name, d.what).into(),
    );
    Ok(serde_json::to_string_pretty(&schema)? + "\n")
}
