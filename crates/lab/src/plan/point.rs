//! A plan's points and the flows beside them: their `dualperf send` options, the
//! command lines that run them, and the error and line lookup every part of a plan's
//! parser shares (the plan here, its `[hosts]` in `crate::hosts`).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// Keys of `[flow]` and `[[points]]` that are the plan's, not `dualperf send` options
/// (every other key is one): the flows beside the measured one, the routers' QoS
/// files, what a point stands for, and its hosts (docs/plans.md names each).
pub const FLOW_TABLE_KEYS: [&str; 5] = ["background", "qos", "factors", "from", "to"];
/// Keys a `[[points]]` entry has beside [`FLOW_TABLE_KEYS`]: its name (also the flow's
/// `--label`) and its report table.
pub const POINT_KEYS: [&str; 2] = ["label", "group"];
/// Keys of a background flow that are not `send` options: its name in reports, its
/// copies, and its hosts.
pub const BACKGROUND_KEYS: [&str; 4] = ["label", "count", "from", "to"];

/// A plan that cannot be used, with the line it comes from when known.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}{message}", line.map_or(String::new(), |l| format!("line {l}: ")))]
pub struct PlanError {
    /// 1-based line in the plan file.
    pub line: Option<usize>,
    /// What is wrong.
    pub message: String,
}

impl PlanError {
    pub(crate) fn at(line: Option<usize>, message: impl Into<String>) -> Self {
        Self {
            line,
            message: message.into(),
        }
    }
}

/// One option of a point, and where the plan sets it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Setting {
    /// The option, as `dualperf send` spells it without dashes (`size`, `voip_header`).
    pub key: String,
    /// Its value as text; `None` for a flag without a value (`udp = true`).
    pub value: Option<String>,
    /// 1-based line in the plan.
    pub line: Option<usize>,
}

/// One combination of options, measured over each family in every repetition.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Point {
    /// Stable id: the swept values, or the extra point's label.
    pub id: String,
    /// For tables: the swept values (`size=64`) or the label.
    pub factors: BTreeMap<String, String>,
    /// The flow's options, base flow first, then the swept or extra values.
    pub settings: Vec<Setting>,
    /// Flows that run beside the measured one (`background = [{ … }, …]`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub background: Vec<Background>,
    /// QoS file per router node during this point's runs (`qos = { r1 = "FILE" }`,
    /// relative to the plan; `"none"`: no policy); routers not named keep the
    /// topology's.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub qos: BTreeMap<String, String>,
    /// `target = "hosts"`: the host the measured flow comes from (`from`, default
    /// `sender`); absent for other targets.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from: Option<String>,
    /// `target = "hosts"`: the host it goes to (`to`, default `receiver`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub to: Option<String>,
}

/// A flow beside the measured one: from the lab's `bg-a` node to its `bg-b` (or on
/// loopback to a receiver of its own), started the plan's `background_lead` before the
/// measured flow and stopped after it; measured too (`bg1.loss` in a table).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Background {
    /// Its name in reports (`label`, default `bg1`, `bg2`, …).
    pub label: String,
    /// `from = "sender"`: it runs from the measured flow's sender to its receiver (a
    /// second foreground flow, as the lab's routers classify it) instead of from `bg-a`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub from_sender: bool,
    /// `target = "hosts"`: the host it comes from (for `from = "sender"` the point's
    /// sender; by default `bg-a`); absent for other targets.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from: Option<String>,
    /// `target = "hosts"`: the host it goes to (for `from = "sender"` the point's
    /// receiver; by default `bg-b`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub to: Option<String>,
    /// Its `dualperf send` options.
    pub settings: Vec<Setting>,
}

impl Background {
    /// The options as `dualperf send` arguments.
    pub fn args(&self) -> Vec<String> {
        args_of(&self.settings)
    }

    /// The options one by one, each with its line.
    pub fn options(&self) -> Vec<SendOption> {
        options_of(&self.settings)
    }
}

impl Point {
    /// The options as `dualperf send` arguments. `protocol = "tcp"` is `--tcp` and
    /// replaces any `udp`/`tcp` option of the base flow.
    pub fn args(&self) -> Vec<String> {
        args_of(&self.settings)
    }

    /// The options one by one, each with its line, as [`Point::args`] gives them.
    pub fn options(&self) -> Vec<SendOption> {
        options_of(&self.settings)
    }
}

/// One `dualperf send` option of a flow and the plan line it comes from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SendOption {
    /// Its name as `send` spells it without the dashes (`size-dist`; `protocol = "tcp"`
    /// is `tcp`).
    pub name: String,
    /// Its value; `None` for a flag.
    pub value: Option<String>,
    /// 1-based line in the plan.
    pub line: Option<usize>,
}

fn options_of(settings: &[Setting]) -> Vec<SendOption> {
    let swept_protocol = settings.iter().any(|s| s.key == "protocol");
    let mut out = Vec::new();
    for s in settings {
        if s.value.as_deref() == Some("false")
            || swept_protocol && (s.key == "udp" || s.key == "tcp")
        {
            continue;
        }
        if s.key == "protocol" {
            out.push(SendOption {
                name: s.value.clone().unwrap_or_default(),
                value: None,
                line: s.line,
            });
            continue;
        }
        out.push(SendOption {
            name: s.key.replace('_', "-"),
            value: s.value.clone(),
            line: s.line,
        });
    }
    out
}

fn args_of(settings: &[Setting]) -> Vec<String> {
    options_of(settings)
        .into_iter()
        .flat_map(|o| std::iter::once(format!("--{}", o.name)).chain(o.value))
        .collect()
}

/// `s` as a file name: letters, digits and `. = , -` kept, µ as `u`, anything else `_`, no
/// leading dot (no hidden file, no `..`). Run ids, run directories and plot files all
/// take names from plans, which are untrusted.
pub fn file_safe(s: &str) -> String {
    let safe: String = s
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '=' | ',' | '-') {
                c
            } else if matches!(c, 'µ' | 'μ') {
                // Micro, as in µs: `us`, not `_s`.
                'u'
            } else {
                '_'
            }
        })
        .collect();
    safe.trim_start_matches('.').to_owned()
}

/// Why a `dualperf send` option may not be written in a plan's flow (`[flow]`,
/// `[[points]]`, a factor or a background flow): the runner gives every send it starts
/// this option itself, from the plan ([`send_argv`], `Plan::measured_args`), and `send`
/// refuses an option given twice, so such a plan would pass `--dry-run` and fail on
/// its first run. `None`: the option is the flow's.
pub(crate) fn runner_owned(key: &str) -> Option<String> {
    let dashed = key.replace('_', "-");
    Some(match dashed.as_str() {
        "duration" | "time" => format!(
            "{key} is the plan's, not a flow's: every run lasts the plan's top-level \
             duration (duration = \"10s\" before the first table; [quick] duration under \
             --quick), which the runner gives each send as --duration"
        ),
        "interval" => format!(
            "{key} is the plan's, not a flow's: set the top-level interval = \"1s\", which \
             the runner gives the measured flow as --interval"
        ),
        "stamp" => format!(
            "{key} is the plan's, not a flow's: a [stamp] table makes the measured flows \
             STAMP sessions"
        ),
        "cdf" => format!(
            "{key} is the runner's, not a flow's: it asks every measured flow for its \
             delay distribution"
        ),
        "port" | "json" | "announce-start" | "wait-for-go" | "connect-timeout" => format!(
            "{key} is the runner's, not a flow's: it gives every send it starts its own \
             --{dashed}"
        ),
        _ => return None,
    })
}

/// The line of `key = …` inside a table's span ([`wire::span::key_line`]).
pub(crate) fn key_line(text: &str, span: std::ops::Range<usize>, key: &str) -> Option<usize> {
    Some(wire::span::key_line(text, span, key))
}

/// `send [--from AGENT] DEST --port PORT ARGS --duration Dns --json [--announce-start]
/// --connect-timeout 30s`: every sender the runner starts (`announce` for background
/// flows, whose start the measured flow waits for). The runner adds `--wait-for-go`
/// when it starts one, not here: the run's record keeps this command.
pub(crate) fn send_argv(
    from: Option<String>,
    dest: String,
    port: u16,
    args: Vec<String>,
    duration_ns: u64,
    announce: bool,
) -> Vec<String> {
    let mut argv = vec!["send".to_owned()];
    if let Some(agent) = from {
        argv.extend(["--from".to_owned(), agent]);
    }
    argv.extend([dest, "--port".into(), port.to_string()]);
    argv.extend(args);
    argv.extend([
        "--duration".into(),
        format!("{duration_ns}ns"),
        "--json".into(),
    ]);
    if announce {
        argv.push("--announce-start".into());
    }
    argv.extend(["--connect-timeout".into(), CONNECT_TIMEOUT.into()]);
    argv
}

/// How long a sender may take to connect and set up its session. In a lab its control
/// connection may cross a link that background flows saturate, where lost SYNs and
/// segments wait out TCP's retransmission timeouts (1 s, 3 s, 7 s…): the receivers get
/// the same 30 s for their handshake.
const CONNECT_TIMEOUT: &str = "30s";
