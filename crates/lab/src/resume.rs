//! Going on with a run: the settings a run directory was started with, the command
//! that resumes it, and where run directories go by default.

use std::path::{Path, PathBuf};

use crate::plan::Overrides;
use crate::store::{Resolved, Unfinished};

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

/// Where a run goes and what it measures beside its plan.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Placed {
    /// The run directory.
    pub dir: PathBuf,
    /// The settings: for a resume, those it was started with.
    pub settings: Settings,
    /// For a resume, the unfinished run `--resume` without `--dir` found (`Some(None)`:
    /// `--dir` named the directory); `None` for a new run.
    pub resumed: Option<Option<Unfinished>>,
}

/// Why a run cannot go where it was asked to.
#[derive(Debug, thiserror::Error)]
pub enum PlaceError {
    /// `--resume` without `--dir`, and nothing to resume.
    #[error("--resume without --dir: no unfinished run of plan '{plan}' in {DEFAULT_PARENT}/ (a run started with --dir DIR goes on with --dir DIR --resume)")]
    NothingToResume {
        /// The plan's name.
        plan: String,
    },
    /// A resume given other settings than its run was started with.
    #[error(transparent)]
    OtherSettings(#[from] OtherSettings),
}

/// Where a run of plan `plan` goes with `--dir` `dir` (or none) and `--resume` (or not),
/// and its settings (`given`, or for a resume those it was started with): a resume
/// without `dir` goes on with the newest unfinished run of the plan in
/// [`DEFAULT_PARENT`]; a new run without `dir` gets a new [`default_dir`].
pub fn place(
    plan: &str,
    dir: Option<&Path>,
    resume: bool,
    given: Settings,
) -> Result<Placed, PlaceError> {
    if !resume {
        let dir = dir.map_or_else(|| default_dir(plan), Path::to_owned);
        return Ok(Placed {
            dir,
            settings: given,
            resumed: None,
        });
    }
    let (dir, found) = match dir {
        Some(d) => (d.to_owned(), None),
        None => match crate::store::latest_unfinished(Path::new(DEFAULT_PARENT), plan) {
            Some(u) => (u.dir.clone(), Some(u)),
            None => {
                return Err(PlaceError::NothingToResume {
                    plan: plan.to_owned(),
                })
            }
        },
    };
    let settings = resumed_settings(&dir, given)?;
    Ok(Placed {
        dir,
        settings,
        resumed: Some(found),
    })
}

/// A resume of a run directory under another plan than it was started with.
#[derive(Debug, thiserror::Error)]
#[error("{} was started with another plan: resume it with the same one", dir.display())]
pub struct OtherPlan {
    /// The run directory.
    pub dir: PathBuf,
}

/// Whether a resume of `dir` measures what it was started to (its `resolved.json`
/// against `resolved`): resuming under another plan would mix two experiments in one
/// directory, and a `resolved.json` that no longer reads counts as another plan. A
/// directory without one takes any.
pub fn same_plan(dir: &Path, resolved: &Resolved) -> Result<(), OtherPlan> {
    let before = std::fs::read(dir.join("resolved.json"))
        .ok()
        .map(|b| Resolved::parse(&b).map(|(r, _)| r));
    if before.is_some_and(|b| !b.is_ok_and(|b| b.same_measurement(resolved))) {
        return Err(OtherPlan {
            dir: dir.to_owned(),
        });
    }
    Ok(())
}

/// A length `--duration` takes that is not one.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("'{0}' is not a length above 0 (e.g. 10s, 500ms, 2min)")]
pub struct NotALength(pub String);

/// `--duration`: a length above 0 (`10s`, `500ms`, `2min`); what [`duration_arg`]
/// writes reads back exactly.
pub fn parse_duration_arg(s: &str) -> Result<wire::time::Duration, NotALength> {
    traffic::units::parse_duration(s)
        .ok()
        .filter(|d| *d > wire::time::Duration::ZERO)
        .ok_or_else(|| NotALength(s.to_owned()))
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
        // A duration is written in the largest unit that holds it exactly, and reads
        // back exactly with `--duration`'s parser.
        for (ns, text) in [
            (10_000_000_000, "10s"),
            (2_500_000_000, "2500ms"),
            (250_000, "250us"),
            (7, "7ns"),
        ] {
            let d = wire::time::Duration::from_nanos(ns);
            assert_eq!(duration_arg(d), text);
            assert_eq!(parse_duration_arg(text), Ok(d));
        }
        assert_eq!(
            parse_duration_arg("0s").unwrap_err().to_string(),
            "'0s' is not a length above 0 (e.g. 10s, 500ms, 2min)"
        );
        assert_eq!(
            parse_duration_arg("soon"),
            Err(NotALength("soon".to_owned()))
        );
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

    #[test]
    fn a_run_goes_to_its_dir_a_new_one_or_the_run_it_resumes() {
        let given = Settings {
            quick: true,
            overrides: Overrides::default(),
        };
        let at = place("p", Some(Path::new("/r/p-1")), false, given).unwrap();
        assert_eq!(
            at,
            Placed {
                dir: "/r/p-1".into(),
                settings: given,
                resumed: None,
            }
        );
        let new = place("my plan", None, false, given).unwrap();
        let name = new
            .dir
            .strip_prefix(DEFAULT_PARENT)
            .unwrap()
            .to_str()
            .unwrap();
        assert!(name.starts_with("my_plan-"), "{name}");
        assert!(name["my_plan-".len()..].parse::<u64>().is_ok(), "{name}");
        // A resume of a named directory without resolved.json: what is given.
        let named = place("p", Some(Path::new("/nonexistent/p-1")), true, given).unwrap();
        assert_eq!(named.resumed, Some(None));
        assert_eq!(named.settings, given);
        let e = place("no-such-plan-anywhere", None, true, given).unwrap_err();
        assert_eq!(
            e.to_string(),
            "--resume without --dir: no unfinished run of plan 'no-such-plan-anywhere' in \
             results/ (a run started with --dir DIR goes on with --dir DIR --resume)"
        );
    }

    #[test]
    fn a_resume_under_another_plan_is_refused() {
        let dir = std::env::temp_dir().join(format!("dualperf-same-plan-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let resolved = |name: &str| {
            let text =
                format!("version = 1\nname = \"{name}\"\nduration = \"1s\"\n[flow]\nudp = true\n");
            Resolved::new(&Plan::parse(&text, false).unwrap(), false)
        };
        // Nothing recorded yet: any plan.
        let empty = same_plan(&dir, &resolved("a")).map_err(|e| e.to_string());
        std::fs::write(
            dir.join("resolved.json"),
            serde_json::to_vec(&resolved("a")).unwrap(),
        )
        .unwrap();
        let same = same_plan(&dir, &resolved("a")).map_err(|e| e.to_string());
        let other = same_plan(&dir, &resolved("b")).map_err(|e| e.to_string());
        std::fs::write(dir.join("resolved.json"), b"{").unwrap();
        let unreadable = same_plan(&dir, &resolved("a")).map_err(|e| e.to_string());
        let _ = std::fs::remove_dir_all(&dir);
        assert_eq!(empty, Ok(()));
        assert_eq!(same, Ok(()));
        let refused = format!(
            "{} was started with another plan: resume it with the same one",
            dir.display()
        );
        assert_eq!(other, Err(refused.clone()));
        assert_eq!(unreadable, Err(refused));
    }
}
