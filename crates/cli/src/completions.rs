//! `dualperf completions` and `dualperf man`: shell completion scripts (clap_complete) and
//! man pages (clap_mangen), generated from the same clap definitions that parse the
//! command line, so they cannot drift from it.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use clap::CommandFactory;

/// Print a shell completion script.
///
/// The script completes subcommands, flags and their fixed values. Load it in the
/// current shell, or write it where the shell looks for completions.
#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:
  dualperf completions bash > /etc/bash_completion.d/dualperf
  dualperf completions zsh > ~/.zfunc/_dualperf      # with fpath+=~/.zfunc in ~/.zshrc
  dualperf completions fish > ~/.config/fish/completions/dualperf.fish")]
pub(crate) struct CompletionsArgs {
    /// The shell.
    #[arg(value_enum, value_name = "SHELL")]
    shell: clap_complete::Shell,
}

/// Print the man page, or write one per subcommand.
///
/// Without --dir, prints the roff source of dualperf(1). With --dir, writes dualperf.1
/// and a page per subcommand (dualperf-send.1, dualperf-lab-up.1, …) into DIR, creating
/// it, and lists the files written on stderr.
#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:
  dualperf man | man -l -
  dualperf man --dir /usr/local/share/man/man1")]
pub(crate) struct ManArgs {
    /// Write every page into this directory as NAME.1.
    #[arg(long, value_name = "DIR")]
    dir: Option<PathBuf>,
}

pub(crate) fn run(args: CompletionsArgs) -> Result<()> {
    crate::out::print(completion_script(args.shell))
}

pub(crate) fn man(args: ManArgs) -> Result<()> {
    match &args.dir {
        None => crate::out::print(man_page()?),
        Some(dir) => {
            for path in write_man_pages(dir)? {
                eprintln!("{}", path.display());
            }
            Ok(())
        }
    }
}

/// The completion script for `shell`.
fn completion_script(shell: clap_complete::Shell) -> String {
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut crate::Cli::command(), "dualperf", &mut script);
    String::from_utf8_lossy(&script).into_owned()
}

/// The command as the man pages describe it: no `help` subcommand (it has no page).
fn man_command() -> clap::Command {
    let mut cmd = crate::Cli::command().disable_help_subcommand(true);
    cmd.build();
    cmd
}

/// The page of `cmd`, its footer naming dualperf's version (a subcommand has none).
fn page(cmd: clap::Command) -> clap_mangen::Man {
    clap_mangen::Man::new(cmd).source(concat!("dualperf ", env!("CARGO_PKG_VERSION")))
}

/// The roff source of dualperf(1).
fn man_page() -> Result<String> {
    let mut page_text = Vec::new();
    page(man_command()).render(&mut page_text)?;
    Ok(String::from_utf8(page_text)?)
}

/// Write dualperf.1 and a page per (nested) subcommand into `dir`, creating it; the
/// paths written, dualperf.1 first. As `clap_mangen::generate_to`, which does not say
/// what it wrote.
fn write_man_pages(dir: &Path) -> Result<Vec<PathBuf>> {
    fn write(cmd: clap::Command, dir: &Path, written: &mut Vec<PathBuf>) -> Result<()> {
        let subcommands: Vec<clap::Command> = cmd
            .get_subcommands()
            .filter(|s| !s.is_hide_set())
            .cloned()
            .collect();
        let path = page(cmd)
            .generate_to(dir)
            .with_context(|| format!("cannot write a man page into {}", dir.display()))?;
        written.push(path);
        for sub in subcommands {
            write(sub, dir, written)?;
        }
        Ok(())
    }
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let mut written = Vec::new();
    write(man_command(), dir, &mut written)?;
    Ok(written)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn completions_bash_script_knows_subcommands_and_flags() {
        let script = completion_script(clap_complete::Shell::Bash);
        assert!(script.contains("send"), "{script}");
        assert!(script.contains("--rate"), "{script}");
        assert!(script.contains("completions"), "{script}");
    }

    #[test]
    fn completions_for_every_shell_are_not_empty() {
        use clap::ValueEnum;
        for shell in clap_complete::Shell::value_variants() {
            assert!(completion_script(*shell).contains("dualperf"), "{shell:?}");
        }
    }

    #[test]
    fn completions_man_page_is_roff_listing_subcommands() {
        let page = man_page().unwrap();
        assert!(
            page.lines().any(|l| l.starts_with(".TH dualperf 1 ")),
            "{page}"
        );
        assert!(page.contains("dualperf\\-send(1)"), "{page}");
        assert!(!page.contains("dualperf\\-help(1)"), "{page}");
    }

    #[test]
    fn completions_man_dir_writes_a_page_per_subcommand() {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos();
        let dir = std::env::temp_dir().join(format!("dualperf-man-{}-{nanos}", std::process::id()));
        let dir = dir.join("man1"); // created with its parent
        let written = write_man_pages(&dir);
        let files: Vec<String> = std::fs::read_dir(&dir)
            .map(|d| {
                d.filter_map(|e| Some(e.ok()?.file_name().to_string_lossy().into_owned()))
                    .collect()
            })
            .unwrap_or_default();
        let send = std::fs::read_to_string(dir.join("dualperf-send.1")).unwrap_or_default();
        let _ = std::fs::remove_dir_all(dir.parent().unwrap());
        let written = written.unwrap();
        assert_eq!(written[0].file_name().unwrap(), "dualperf.1");
        assert_eq!(written.len(), files.len(), "{written:?} {files:?}");
        for name in [
            "dualperf.1",
            "dualperf-send.1",
            "dualperf-lab-up.1",
            "dualperf-man.1",
        ] {
            assert!(files.iter().any(|f| f == name), "no {name} in {files:?}");
        }
        assert!(!files.iter().any(|f| f.contains("help")), "{files:?}");
        assert!(
            send.contains(concat!(
                ".TH dualperf-send 1  \"dualperf ",
                env!("CARGO_PKG_VERSION"),
                "\""
            )),
            "{send}"
        );
        assert!(send.contains("\\-\\-rate"), "{send}");
    }
}
