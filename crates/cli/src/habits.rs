//! iperf3's habits on dualperf's command line. When clap refuses a command line that
//! holds iperf3's spellings (`dualperf -c HOST`, `-s`, `server`, `send -N`, `-S 0xb8`,
//! `recv -D`), its error gets a tip for each in dualperf's words and the whole command
//! rewritten; a command line clap takes is never looked at, and clap's own suggestions
//! (`sned` → `send`) stay.

use clap::error::{ContextKind, ContextValue, Error};

/// A command line rewritten from iperf3's spellings into dualperf's.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Rewrite {
    /// One line per spelling changed: "iperf3's `-N` is `--nodelay`".
    pub(crate) notes: Vec<String>,
    /// The command line in dualperf's words, without the program's name.
    pub(crate) args: Vec<String>,
    /// Whether the rewrite picked the subcommand for one of iperf3's modes (`-s`,
    /// `client`): clap's guess at a similar subcommand is then beside the point.
    pub(crate) picked_mode: bool,
}

/// What becomes of one of iperf3's options.
#[derive(Clone, Copy)]
enum Fix {
    /// dualperf's spelling (its value, if any, follows).
    Is(&'static str),
    /// Left out, with why (`{cmd}` stands for the subcommand).
    Drop(&'static str),
    /// `send -c HOST`: HOST stays, as the destination.
    Client,
    /// `-S TOS`: the TOS byte as `--dscp` (and `--ecn` for its two low bits).
    Tos,
    /// `-n 10M`: bytes with a unit are `--bytes` (a bare number is our `--count`).
    BytesWithUnit,
}

/// One of iperf3's options: its spellings, whether it takes a value, what it becomes.
struct Habit(&'static [&'static str], bool, Fix);

const UNITS: Fix = Fix::Drop("dualperf picks each figure's unit itself (`--json` has them exact)");
const LOGFILE: Fix = Fix::Drop("results go to stdout: redirect them (`> FILE`)");

/// iperf3's client options that `send` spells otherwise (what it already takes, `-u`,
/// `-b`, `-t`, `-l`, `-P`, `-R`, `-w`, `-O`, `-Z`, `-J`, `-i`, is not here).
const SEND: &[Habit] = &[
    Habit(&["-c", "--client"], true, Fix::Client),
    Habit(&["-N", "--no-delay"], false, Fix::Is("--nodelay")),
    Habit(&["-C"], true, Fix::Is("--congestion")),
    Habit(&["-S", "--tos"], true, Fix::Tos),
    Habit(&["-L", "--flowlabel"], true, Fix::Is("--flow-label")),
    Habit(&["-k", "--blockcount"], true, Fix::Is("--count")),
    Habit(&["-n"], true, Fix::BytesWithUnit),
    Habit(&["-T", "--title"], true, Fix::Is("--label")),
    Habit(&["-f", "--format"], true, UNITS),
    Habit(
        &["-V", "--verbose"],
        false,
        Fix::Drop("`--wide` shows every column, `--json` every figure"),
    ),
    Habit(&["--logfile"], true, LOGFILE),
    Habit(
        &["--get-server-output"],
        false,
        Fix::Drop("send's report holds the receiver's figures already"),
    ),
];

/// iperf3's server options that `recv` (and `agent`) spell otherwise.
const RECV: &[Habit] = &[
    Habit(
        &["-s", "--server"],
        false,
        Fix::Drop("`{cmd}` is already the server"),
    ),
    Habit(
        &["-D", "--daemon"],
        false,
        Fix::Drop(
            "dualperf has no daemon mode: start it in the background (`dualperf {cmd} &`), or \
             run `dualperf agent` under systemd (dist/dualperf-agent.service)",
        ),
    ),
    Habit(&["-1", "--one-off"], false, Fix::Is("--sessions 1")),
    Habit(&["-B"], true, Fix::Is("--bind")),
    Habit(&["-J"], false, Fix::Is("--json")),
    Habit(
        &["-i", "--interval"],
        true,
        Fix::Drop("the sender asks for intervals (`dualperf send HOST -i 1`)"),
    ),
    Habit(
        &["-u", "--udp"],
        false,
        Fix::Drop("`{cmd}` takes UDP and TCP on one port"),
    ),
    Habit(&["-f", "--format"], true, UNITS),
    Habit(
        &["-V", "--verbose"],
        false,
        Fix::Drop("`--json` has every figure"),
    ),
    Habit(&["--logfile"], true, LOGFILE),
];

/// `args` (without the program's name) in dualperf's words, if they hold any of
/// iperf3's spellings: its modes (`-c HOST`, `-s`, `client`, `server`) and the options
/// of [`SEND`] and [`RECV`].
pub(crate) fn rewrite(args: &[String]) -> Option<Rewrite> {
    let mut notes = Vec::new();
    let mut out: Vec<String> = Vec::new();
    let globals = args
        .iter()
        .take_while(|a| matches!(a.as_str(), "-q" | "--quiet"))
        .count();
    out.extend(args[..globals].iter().cloned());
    let rest = &args[globals..];
    let first = rest.first().map(String::as_str)?;
    let (cmd, tail, picked_mode): (&str, Vec<String>, bool) = match first {
        "send" | "recv" | "agent" => (first, rest[1..].to_vec(), false),
        "server" => {
            notes.push("iperf3's server is `dualperf recv`".to_owned());
            ("recv", rest[1..].to_vec(), true)
        }
        "client" => {
            notes.push("iperf3's client is `dualperf send`".to_owned());
            ("send", rest[1..].to_vec(), true)
        }
        f if f.starts_with('-') => {
            // iperf3's mode flags come anywhere among its options.
            if let Some((at, taken, host)) = client_flag(rest) {
                notes.push("iperf3's `-c HOST` is `dualperf send HOST`".to_owned());
                let mut tail = vec![host];
                tail.extend(rest[..at].iter().cloned());
                tail.extend(rest[at + taken..].iter().cloned());
                ("send", tail, true)
            } else if let Some(at) = rest.iter().position(|a| a == "-s" || a == "--server") {
                notes.push("iperf3's `-s` is `dualperf recv`".to_owned());
                let mut tail = rest[..at].to_vec();
                tail.extend(rest[at + 1..].iter().cloned());
                ("recv", tail, true)
            } else {
                return None;
            }
        }
        _ => return None,
    };
    out.push(cmd.to_owned());
    let table = if cmd == "send" { SEND } else { RECV };
    translate(cmd, table, &tail, &mut out, &mut notes);
    (!notes.is_empty()).then_some(Rewrite {
        notes,
        args: out,
        picked_mode,
    })
}

/// Where `-c HOST` (`--client HOST`, `--client=HOST`, `-cHOST`) is among `args`: its
/// index, how many arguments it takes, and HOST.
fn client_flag(args: &[String]) -> Option<(usize, usize, String)> {
    args.iter().enumerate().find_map(|(i, a)| match a.as_str() {
        "-c" | "--client" => args.get(i + 1).map(|h| (i, 2, h.clone())),
        _ => a
            .strip_prefix("--client=")
            .or_else(|| a.strip_prefix("-c").filter(|h| !h.is_empty()))
            .map(|h| (i, 1, h.to_owned())),
    })
}

/// `tail`, the arguments after subcommand `cmd`, onto `out`, each of `table`'s
/// spellings in dualperf's words with a note on it.
fn translate(
    cmd: &str,
    table: &[Habit],
    tail: &[String],
    out: &mut Vec<String>,
    notes: &mut Vec<String>,
) {
    let mut i = 0;
    while i < tail.len() {
        let arg = &tail[i];
        i += 1;
        if arg == "--" {
            out.extend(tail[i - 1..].iter().cloned());
            return;
        }
        let Some((habit, attached)) = find(table, arg) else {
            out.push(arg.clone());
            continue;
        };
        let Habit(names, takes_value, fix) = *habit;
        let value = match (takes_value, attached) {
            (true, Some(v)) => Some(v),
            (true, None) => {
                i += 1;
                tail.get(i - 1).cloned()
            }
            (false, _) => None,
        };
        let spelled = match &value {
            Some(v) => format!("{} {v}", names[0]),
            None => names[0].to_owned(),
        };
        let words = |s: &str| s.split(' ').map(str::to_owned).collect::<Vec<_>>();
        match (fix, value) {
            (Fix::Is(ours), value) => {
                out.extend(words(ours));
                out.extend(value.clone());
                let with = value.map_or_else(String::new, |v| format!(" {v}"));
                notes.push(format!("iperf3's `{spelled}` is `{ours}{with}`"));
            }
            (Fix::Drop(why), _) => {
                notes.push(format!("drop `{spelled}`: {}", why.replace("{cmd}", cmd)));
            }
            (Fix::Client, Some(host)) => {
                notes.push(format!(
                    "`send` is iperf3's client already: `dualperf send {host}`"
                ));
                out.push(host);
            }
            (Fix::Tos, Some(tos)) => {
                let ours = tos_words(&tos);
                notes.push(format!(
                    "iperf3's `-S {tos}` (the TOS byte) is `{}` (DSCP is its upper six bits, ECN its lower two)",
                    ours.join(" ")
                ));
                out.extend(ours);
            }
            (Fix::BytesWithUnit, Some(n)) if n.parse::<u64>().is_err() => {
                notes.push(format!(
                    "`-n` counts packets here (`--count`): iperf3's `-n {n}` is `--bytes {n}`"
                ));
                out.extend(["--bytes".to_owned(), n]);
            }
            // A bare count, or a flag missing its value: as it was.
            (_, value) => {
                out.push(arg.clone());
                out.extend(value);
            }
        }
    }
}

/// The habit `arg` spells, with a value attached to it (`--tos=0xb8`, `-Ccubic`).
fn find<'t>(table: &'t [Habit], arg: &str) -> Option<(&'t Habit, Option<String>)> {
    table.iter().find_map(|h| {
        h.0.iter().find_map(|name| {
            if arg == *name {
                return Some((h, None));
            }
            if !h.1 {
                return None;
            }
            let rest = arg.strip_prefix(name)?;
            let value = if name.starts_with("--") {
                rest.strip_prefix('=')?
            } else {
                rest
            };
            (!value.is_empty()).then(|| (h, Some(value.to_owned())))
        })
    })
}

/// iperf3's `-S` value (decimal, `0x` hex or `0` octal, as iperf3 reads it) as `--dscp`
/// and, for nonzero low bits, `--ecn`; a value that does not read goes to `--dscp` as is.
fn tos_words(tos: &str) -> Vec<String> {
    let parsed = if let Some(hex) = tos.strip_prefix("0x").or_else(|| tos.strip_prefix("0X")) {
        u8::from_str_radix(hex, 16).ok()
    } else if tos.len() > 1 && tos.starts_with('0') {
        u8::from_str_radix(&tos[1..], 8).ok()
    } else {
        tos.parse::<u8>().ok()
    };
    let Some(byte) = parsed else {
        return vec!["--dscp".into(), tos.into()];
    };
    let mut words = vec!["--dscp".to_owned(), (byte >> 2).to_string()];
    // RFC 3168's codepoints: 01 ECT(1), 10 ECT(0), 11 CE.
    let ecn = ["", "ect1", "ect0", "ce"][usize::from(byte & 3)];
    if !ecn.is_empty() {
        words.extend(["--ecn".to_owned(), ecn.to_owned()]);
    }
    words
}

/// `args` as one would type them in a POSIX shell.
fn shell_line(args: &[String]) -> String {
    let word = |a: &String| {
        let plain = !a.is_empty()
            && a.chars()
                .all(|c| c.is_ascii_alphanumeric() || "-_./:=,@%+[]".contains(c));
        if plain {
            a.clone()
        } else {
            format!("'{}'", a.replace('\'', r"'\''"))
        }
    };
    std::iter::once("dualperf".to_owned())
        .chain(args.iter().map(word))
        .collect::<Vec<_>>()
        .join(" ")
}

/// Put the iperf3 spellings of the refused command line `args` into clap's `err` as
/// tips, replacing clap's tip on them (`to pass '-N' as a value, use '-- -N'`) and, when
/// the rewrite picked the mode, its guess at a similar subcommand (`client` → `agent`).
pub(crate) fn explain(err: &mut Error, args: &[String]) {
    let Some(rewrite) = rewrite(args) else {
        return;
    };
    let mut tips: Vec<clap::builder::StyledStr> =
        rewrite.notes.into_iter().map(Into::into).collect();
    tips.push(format!("try `{}`", shell_line(&rewrite.args)).into());
    err.remove(ContextKind::Suggested);
    if rewrite.picked_mode {
        err.remove(ContextKind::SuggestedSubcommand);
    }
    err.insert(ContextKind::Suggested, ContextValue::StyledStrs(tips));
}

#[cfg(test)]
mod tests {
    use super::*;

    fn argv(line: &str) -> Vec<String> {
        line.split_whitespace().map(str::to_owned).collect()
    }

    /// The rewritten command line and the notes of `line`.
    fn rewritten(line: &str) -> (String, Vec<String>) {
        let r = rewrite(&argv(line)).unwrap_or_else(|| panic!("no rewrite of {line}"));
        (shell_line(&r.args), r.notes)
    }

    #[test]
    fn iperf3_modes_become_dualperfs_subcommands() {
        let (line, notes) = rewritten("-c 198.18.0.2 -u -b 10M -t 10");
        assert_eq!(line, "dualperf send 198.18.0.2 -u -b 10M -t 10");
        assert_eq!(notes, ["iperf3's `-c HOST` is `dualperf send HOST`"]);
        assert_eq!(
            rewritten("-q -u --client=h -N").0,
            "dualperf -q send h -u --nodelay"
        );
        assert_eq!(rewritten("-s -p 5201").0, "dualperf recv -p 5201");
        assert_eq!(rewritten("-p 5201 --server -D").0, "dualperf recv -p 5201");
        assert_eq!(rewritten("server -1").0, "dualperf recv --sessions 1");
        let (line, notes) = rewritten("client h -R");
        assert_eq!(line, "dualperf send h -R");
        assert_eq!(notes, ["iperf3's client is `dualperf send`"]);
        assert!(rewrite(&argv("client h")).unwrap().picked_mode);
    }

    #[test]
    fn iperf3_options_are_spelled_as_dualperf_spells_them() {
        let (line, notes) = rewritten("send h -N -C cubic -S 0xb8 -L 7 -k 100 -n 10M -T x");
        assert_eq!(
            line,
            "dualperf send h --nodelay --congestion cubic --dscp 46 --flow-label 7 --count 100 --bytes 10M --label x"
        );
        assert_eq!(notes.len(), 7, "{notes:?}");
        assert_eq!(notes[1], "iperf3's `-C cubic` is `--congestion cubic`");
        assert_eq!(
            notes[2],
            "iperf3's `-S 0xb8` (the TOS byte) is `--dscp 46` (DSCP is its upper six bits, ECN its lower two)"
        );
        // Octal and decimal TOS, ECN bits, attached values.
        assert_eq!(
            rewritten("send h --tos=0270").0,
            "dualperf send h --dscp 46"
        );
        assert_eq!(
            rewritten("send h -S 3").0,
            "dualperf send h --dscp 0 --ecn ce"
        );
        assert_eq!(
            rewritten("send h -Creno").0,
            "dualperf send h --congestion reno"
        );
        // `send -c HOST`: send is the client already.
        let (line, notes) = rewritten("send -c h -t 5");
        assert_eq!(line, "dualperf send h -t 5");
        assert_eq!(
            notes,
            ["`send` is iperf3's client already: `dualperf send h`"]
        );
        // Dropped options say why.
        let (line, notes) = rewritten("recv -s -D -i 1");
        assert_eq!(line, "dualperf recv");
        assert_eq!(notes[0], "drop `-s`: `recv` is already the server");
        assert!(notes[1].contains("no daemon mode"), "{notes:?}");
        assert!(
            notes[2].contains("the sender asks for intervals"),
            "{notes:?}"
        );
        assert_eq!(rewritten("agent -s --key k").0, "dualperf agent --key k");
    }

    #[test]
    fn command_lines_without_iperf3_spellings_are_left_to_clap() {
        for line in [
            "sned 1.2.3.4",
            "send h -n 100",
            "send h -u -b 10M -t 10 -P 4 -R",
            "recv --json",
            "send h -- -N",
            "-x",
            "",
            "report -s",
        ] {
            assert_eq!(rewrite(&argv(line)), None, "{line}");
        }
    }

    #[test]
    fn the_command_to_try_is_quoted_for_a_shell() {
        assert_eq!(
            shell_line(
                &argv("send h")
                    .into_iter()
                    .chain(["a b".into(), "it's".into()])
                    .collect::<Vec<_>>()
            ),
            r"dualperf send h 'a b' 'it'\''s'"
        );
    }
}
