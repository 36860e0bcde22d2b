//! Going on with a run: the settings a run directory was started with, the command
//! that resumes it, and where run directories go by default.

use std::path::{Path, PathBuf};

use crate::plan::Overrides;
use crate::store::Resolved;

/// Where run directories go when `--dir` is not given (`results/NAME-UNIXTIME`), and
/// where `--resume` without `--dir` looks for one.
pub const DEFAULT_PARENT: &str = "results";

/// What a run measures beside its plan: `--quick`, `--repetitions`, `--duration`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Settings {
    /// `--quick`: the plan's `[quick]` table applied.
    pub quick: bool,
    /// `--repetitions`, `--duration`.
    pub overrides: Overrides,
}

/// A resume given settings other than those its run directory was started with.
#[derive(Debug, thiserror::Error)]
#[error("{} was started with {}: a resume goes on with the same (give them or leave them out)", dir.display(), started_words(started))]
pub struct OtherSettings {
    /// The run directory.
    pub dir: PathBuf,
    /// What it was started with.
    pub started: Settings,
}

/// The settings `started` in words: its flags, or the plan's own values.
fn started_words(started: &Settings) -> String {
    let flags = settings_flags(started);
    if flags.is_empty() {
        "the plan's own repetitions and duration, without --quick".to_owned()
    } else {
        flags.join(" ")
    }
}

/// A new run directory of plan `name`: `results/NAME-UNIXTIME`.
pub fn default_dir(name: &str) -> PathBuf {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    // The name comes from the plan: only safe characters reach the path.
    let name = crate::plan::file_safe(name);
    PathBuf::from(DEFAULT_PARENT).join(format!("{name}-{now}"))
}

/// The settings a resume of `dir` goes on with: those it was started with (its
/// `resolved.json`), which a resume need not repeat; one given otherwise is refused. A
/// directory without `resolved.json` takes what is given.
pub fn resumed_settings(dir: &Path, given: Settings) -> Result<Settings, OtherSettings> {
    let Some(Ok((before, _))) = std::fs::read(dir.join("resolved.json"))
        .ok()
        .map(|b| Resolved::parse(&b))
    else {
        return Ok(given);
    };
    let started = Settings {
        quick: before.quick,
        overrides: before.overrides,
    };
    let o = (given.overrides, started.overrides);
    let differs = (given.quick && !started.quick)
        || o.0.repetitions.is_some_and(|r| Some(r) != o.1.repetitions)
        || o.0.duration.is_some_and(|d| Some(d) != o.1.duration);
    if differs {
        return Err(OtherSettings {
            dir: dir.to_owned(),
            started,
        });
    }
    Ok(started)
}

/// `--quick --repetitions N --duration D`, as far as they are set.
pub fn settings_flags(s: &Settings) -> Vec<String> {
    let mut flags = Vec::new();
    if s.quick {
        flags.push("--quick".to_owned());
    }
    if let Some(r) = s.overrides.repetitions {
        flags.extend(["--repetitions".to_owned(), r.to_string()]);
    }
    if let Some(d) = s.overrides.duration {
        flags.extend(["--duration".to_owned(), duration_arg(d)]);
    }
    flags
}

/// A duration as `--duration` reads it, exactly: `10s`, `500ms`, `250us`, `7ns`.
pub fn duration_arg(d: wire::time::Duration) -> String {
    let ns = d.as_nanos();
    match ns {
        _ if ns % 1_000_000_000 == 0 => format!("{}s", ns / 1_000_000_000),
        _ if ns % 1_000_000 == 0 => format!("{}ms", ns / 1_000_000),
        _ if ns % 1_000 == 0 => format!("{}us", ns / 1_000),
        _ => format!("{ns}ns"),
    }
}

/// The command that goes on with a run: `dualperf run PLAN --dir DIR --resume`, with
/// the settings it was started with and its `--index`, each word quoted for a shell
/// when it needs it.
pub fn command(plan: &Path, dir: &Path, settings: &Settings, index: Option<&Path>) -> String {
    let mut words = vec![
        "dualperf".to_owned(),
        "run".to_owned(),
        plan.display().to_string(),
        "--dir".to_owned(),
        dir.display().to_string(),
        "--resume".to_owned(),
    ];
    words.extend(settings_flags(settings));
    if let Some(i) = index {
        words.extend(["--index".to_owned(), i.display().to_string()]);
    }
    words
        .iter()
        .map(|w| shell_word(w))
        .collect::<Vec<_>>()
        .join(" ")
}

/// `w` as one word for a POSIX shell: as it is when it holds only safe characters,
/// else in single quotes.
pub fn shell_word(w: &str) -> String {
    let safe = |c: char| c.is_ascii_alphanumeric() || "_-./=,:@%+".contains(c);
    if !w.is_empty() && w.chars().all(safe) {
        w.to_owned()
    } else {
        format!("'{}'", w.replace('\'', "'\\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::Plan;

    #[test]
    fn the_resume_command_repeats_what_the_run_was_started_with_as_shell_words() {
        let plain = Settings {
            quick: false,
            overrides: Overrides::default(),
        };
        assert_eq!(
            command(
                Path::new("plans/tiny.toml"),
                Path::new("results/tiny-17"),
                &plain,
                None
            ),
            "dualperf run plans/tiny.toml --dir results/tiny-17 --resume"
        );
        let all = Settings {
            quick: true,
            overrides: Overrides {
                repetitions: Some(5),
                duration: Some(wire::time::Duration::from_millis(2500)),
            },
        };
        assert_eq!(
            command(
                Path::new("my plans/it's.toml"),
                Path::new("/r/x"),
                &all,
                Some(Path::new("i.sqlite"))
            ),
            "dualperf run 'my plans/it'\\''s.toml' --dir /r/x --resume --quick --repetitions 5 --duration 2500ms --index i.sqlite"
        );
        // A duration is written in the largest unit that holds it exactly (the cli's
        // test reads each back with `--duration`'s parser).
        for (ns, text) in [
            (10_000_000_000, "10s"),
            (2_500_000_000, "2500ms"),
            (250_000, "250us"),
            (7, "7ns"),
        ] {
            assert_eq!(duration_arg(wire::time::Duration::from_nanos(ns)), text);
        }
    }

    #[test]
    fn a_resume_goes_on_with_the_settings_it_was_started_with() {
        let dir =
            std::env::temp_dir().join(format!("dualperf-run-settings-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let none = Settings {
            quick: false,
            overrides: Overrides::default(),
        };
        // No resolved.json yet: what is given.
        assert_eq!(resumed_settings(&dir, none).unwrap(), none);
        let text = "version = 1\nname = \"x\"\nduration = \"1s\"\n[flow]\nudp = true\n[quick]\nduration = \"100ms\"\n";
        let started = Settings {
            quick: true,
            overrides: Overrides {
                repetitions: Some(3),
                duration: None,
            },
        };
        let mut plan = Plan::parse(text, true).unwrap();
        plan.override_with(&started.overrides).unwrap();
        let resolved = Resolved::new(&plan, true).with_overrides(started.overrides);
        std::fs::write(
            dir.join("resolved.json"),
            serde_json::to_vec(&resolved).unwrap(),
        )
        .unwrap();
        // Nothing given, or the same given: the recorded ones.
        assert_eq!(resumed_settings(&dir, none).unwrap(), started);
        assert_eq!(resumed_settings(&dir, started).unwrap(), started);
        // Others are refused, naming what it was started with.
        for other in [
            Overrides {
                repetitions: Some(4),
                duration: None,
            },
            Overrides {
                repetitions: None,
                duration: Some(wire::time::Duration::from_secs(1)),
            },
        ] {
            let e = resumed_settings(
                &dir,
                Settings {
                    quick: false,
                    overrides: other,
                },
            )
            .unwrap_err();
            assert_eq!(
                e.to_string(),
                format!(
                    "{} was started with --quick --repetitions 3: a resume goes on with the same (give them or leave them out)",
                    dir.display()
                )
            );
        }
        let _ = std::fs::remove_dir_all(&dir);
        // Started with the plan's own values: said in words.
        let e = OtherSettings {
            dir: "r".into(),
            started: none,
        };
        assert_eq!(
            e.to_string(),
            "r was started with the plan's own repetitions and duration, without --quick: a resume goes on with the same (give them or leave them out)"
        );
    }
}
