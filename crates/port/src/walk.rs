//! Scanning files and trees: in parallel, honouring `.gitignore`, `.ignore` and hidden
//! files the way ripgrep does (the `ignore` crate), and deterministic in its output.
//!
//! A path given explicitly is scanned even if an ignore file would skip it. Files with
//! no known extension are skipped silently inside directories, and reported when named
//! explicitly. Unreadable files and files over [`Options::max_file_bytes`] are listed in
//! [`Scan::skipped`] with the reason: nothing is dropped without saying so.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use serde::Serialize;

use crate::lex::Lang;
use crate::rules::{Severity, RULES};
use crate::scan::{scan_source, Finding};

/// How to walk.
#[derive(Clone, Debug)]
pub struct Options {
    /// Honour `.gitignore`, `.ignore`, `.git/info/exclude` and global git excludes.
    pub ignore_files: bool,
    /// Also enter hidden files and directories.
    pub hidden: bool,
    /// Follow symbolic links.
    pub follow_links: bool,
    /// Languages to scan (`None`: all).
    pub langs: Option<Vec<Lang>>,
    /// Rules enabled, by index in [`crate::rules::RULES`] (`None`: all).
    pub rules: Option<Vec<bool>>,
    /// Worker threads (0: one per core).
    pub threads: usize,
    /// Larger files are skipped (and reported as skipped).
    pub max_file_bytes: u64,
    /// Also count the IPv6 evidence identifiers ([`crate::rules::EVIDENCE`]).
    pub evidence: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            ignore_files: true,
            hidden: false,
            follow_links: false,
            langs: None,
            rules: None,
            threads: 0,
            max_file_bytes: 16 << 20,
            evidence: false,
        }
    }
}

/// A language or rule named for a scan that is not one.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SelectError {
    /// Not a language the scanner reads.
    #[error("--lang {0:?}: not one of c, cpp, python, go, java")]
    Lang(String),
    /// Not a rule's id.
    #[error("no rule {0:?}: `dualperf portcheck --list-rules` lists them")]
    Rule(String),
}

impl Options {
    /// These options scanning only the languages named in `langs` (all when empty), and
    /// only the rules whose ids are in `only` (all when empty) that are not in
    /// `except`. Every name is checked.
    pub fn select(
        mut self,
        langs: &[String],
        only: &[String],
        except: &[String],
    ) -> Result<Self, SelectError> {
        let langs = langs
            .iter()
            .map(|l| Lang::from_name(l).ok_or_else(|| SelectError::Lang(l.clone())))
            .collect::<Result<Vec<_>, _>>()?;
        if let Some(id) = only
            .iter()
            .chain(except)
            .find(|id| crate::rules::rule(id).is_none())
        {
            return Err(SelectError::Rule(id.clone()));
        }
        self.langs = (!langs.is_empty()).then_some(langs);
        self.rules = (!only.is_empty() || !except.is_empty()).then(|| {
            RULES
                .iter()
                .map(|r| {
                    (only.is_empty() || only.iter().any(|x| x == r.id))
                        && !except.iter().any(|x| x == r.id)
                })
                .collect()
        });
        Ok(self)
    }
}

/// One scanned file's findings.
#[derive(Clone, Debug, Serialize)]
pub struct FileFindings {
    /// The path as walked (relative if the root was), with `/` separators.
    pub path: String,
    pub lang: Lang,
    pub findings: Vec<Finding>,
}

/// A file that was not scanned, and why.
#[derive(Clone, Debug, Serialize, schemars::JsonSchema)]
pub struct Skipped {
    pub path: String,
    pub reason: String,
}

/// The result of a walk, sorted by path.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Scan {
    pub files_scanned: u64,
    pub bytes_scanned: u64,
    /// Files with at least one finding, sorted by path.
    pub files: Vec<FileFindings>,
    pub skipped: Vec<Skipped>,
    /// With [`Options::evidence`]: each evidence identifier and how many files use it.
    pub evidence: std::collections::BTreeMap<&'static str, u64>,
}

impl Scan {
    pub fn findings(&self) -> impl Iterator<Item = (&FileFindings, &Finding)> {
        self.files
            .iter()
            .flat_map(|f| f.findings.iter().map(move |x| (f, x)))
    }

    pub fn finding_count(&self) -> usize {
        self.files.iter().map(|f| f.findings.len()).sum()
    }

    /// Keeps only the findings at or above `min`, and only the files left with one.
    pub fn retain_at_least(&mut self, min: Severity) {
        for f in &mut self.files {
            f.findings.retain(|x| x.severity >= min);
        }
        self.files.retain(|f| !f.findings.is_empty());
    }

    /// Whether the scan fails (`portcheck` exits 1): a finding at or above `fail_on`,
    /// or a file that could not be read (one skipped for its extension is not).
    pub fn fails(&self, fail_on: Option<Severity>) -> bool {
        fail_on.is_some_and(|level| self.findings().any(|(_, f)| f.severity >= level))
            || !self.skipped.iter().all(|s| s.reason.contains("extension"))
    }
}

/// Scans every source file under `paths`.
pub fn scan_paths(paths: &[PathBuf], opts: &Options) -> Scan {
    let shared = Mutex::new(Scan::default());
    let mut roots = paths.iter();
    let Some(first) = roots.next() else {
        return Scan::default();
    };
    let mut b = ignore::WalkBuilder::new(first);
    for p in roots {
        b.add(p);
    }
    b.standard_filters(opts.ignore_files)
        .hidden(!opts.hidden)
        .follow_links(opts.follow_links)
        .threads(opts.threads)
        // `.ignore` and `.gitignore` are honoured even outside a git repository, as
        // ripgrep does.
        .require_git(false);
    b.build_parallel().run(|| {
        let shared = &shared;
        Box::new(move |entry| {
            match entry {
                Ok(e) => {
                    let explicit = e.depth() == 0;
                    if e.file_type().is_some_and(|t| t.is_file()) {
                        visit(e.path(), explicit, opts, shared);
                    }
                }
                Err(err) => {
                    let mut s = shared.lock().unwrap_or_else(|p| p.into_inner());
                    s.skipped.push(Skipped {
                        path: error_path(&err),
                        reason: err.to_string(),
                    });
                }
            }
            ignore::WalkState::Continue
        })
    });
    let mut scan = shared.into_inner().unwrap_or_else(|p| p.into_inner());
    scan.files.sort_by(|a, b| a.path.cmp(&b.path));
    scan.skipped.sort_by(|a, b| a.path.cmp(&b.path));
    scan
}

fn error_path(err: &ignore::Error) -> String {
    match err {
        ignore::Error::WithPath { path, .. } => display(path),
        ignore::Error::WithDepth { err, .. } | ignore::Error::WithLineNumber { err, .. } => {
            error_path(err)
        }
        _ => String::new(),
    }
}

fn display(p: &Path) -> String {
    let s = p.to_string_lossy();
    let s = s.strip_prefix("./").unwrap_or(&s);
    if std::path::MAIN_SEPARATOR == '/' {
        s.to_string()
    } else {
        s.replace(std::path::MAIN_SEPARATOR, "/")
    }
}

fn visit(path: &Path, explicit: bool, opts: &Options, shared: &Mutex<Scan>) {
    let skip = |reason: String| {
        let mut s = shared.lock().unwrap_or_else(|p| p.into_inner());
        s.skipped.push(Skipped {
            path: display(path),
            reason,
        });
    };
    let Some(lang) = Lang::from_path(path) else {
        if explicit {
            skip("not a C, C++, Python, Go or Java file (by its extension)".into());
        }
        return;
    };
    if opts.langs.as_ref().is_some_and(|l| !l.contains(&lang)) {
        return;
    }
    let size = std::fs::metadata(path).map(|m| m.len()).unwrap_or(0);
    if size > opts.max_file_bytes {
        skip(format!(
            "{size} bytes, over the {} byte limit",
            opts.max_file_bytes
        ));
        return;
    }
    let bytes = match std::fs::read(path) {
        Ok(b) => b,
        Err(e) => return skip(e.to_string()),
    };
    // Non-UTF-8 bytes (Latin-1 comments in old code) become U+FFFD; columns count them
    // as one character each.
    let text = String::from_utf8_lossy(&bytes);
    let findings = scan_source(&text, lang, opts.rules.as_deref());
    let evidence = if opts.evidence {
        crate::scan::evidence(&text, lang)
    } else {
        Vec::new()
    };
    let mut s = shared.lock().unwrap_or_else(|p| p.into_inner());
    for e in evidence {
        *s.evidence.entry(e).or_default() += 1;
    }
    s.files_scanned += 1;
    s.bytes_scanned += bytes.len() as u64;
    if !findings.is_empty() {
        s.files.push(FileFindings {
            path: display(path),
            lang,
            findings,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("port-walk-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(d.join("src/vendor")).unwrap();
        std::fs::create_dir_all(d.join(".hidden")).unwrap();
        std::fs::write(d.join(".gitignore"), "vendor/\n").unwrap();
        std::fs::write(d.join("src/a.c"), "x = inet_addr(s);\n").unwrap();
        std::fs::write(d.join("src/b.py"), "ip = socket.gethostbyname(h)\n").unwrap();
        std::fs::write(d.join("src/clean.c"), "int x;\n").unwrap();
        std::fs::write(d.join("src/notes.txt"), "inet_addr\n").unwrap();
        std::fs::write(d.join("src/vendor/v.c"), "inet_ntoa(a);\n").unwrap();
        std::fs::write(d.join(".hidden/h.c"), "inet_ntoa(a);\n").unwrap();
        d
    }

    #[test]
    fn walks_honour_gitignore_and_hidden_and_sort_by_path() {
        let d = tree("ign");
        let s = scan_paths(std::slice::from_ref(&d), &Options::default());
        let paths: Vec<_> = s
            .files
            .iter()
            .map(|f| f.path.rsplit('/').next().unwrap().to_string())
            .collect();
        assert_eq!(paths, ["a.c", "b.py"]);
        assert_eq!(s.files_scanned, 3);
        assert!(s.skipped.is_empty(), "{:?}", s.skipped);

        let all = Options {
            ignore_files: false,
            hidden: true,
            ..Options::default()
        };
        let s = scan_paths(std::slice::from_ref(&d), &all);
        assert_eq!(s.files.len(), 4);
        assert_eq!(s.finding_count(), 4);

        let only_py = Options {
            langs: Some(vec![Lang::Python]),
            ..Options::default()
        };
        assert_eq!(
            scan_paths(std::slice::from_ref(&d), &only_py).files_scanned,
            1
        );
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn explicit_files_are_scanned_or_reported() {
        let d = tree("explicit");
        let s = scan_paths(
            &[
                d.join("src/vendor/v.c"),
                d.join("src/notes.txt"),
                d.join("missing.c"),
            ],
            &Options::default(),
        );
        assert_eq!(
            s.files.len(),
            1,
            "an explicitly named ignored file is scanned"
        );
        assert_eq!(s.skipped.len(), 2, "{:?}", s.skipped);
        let big = Options {
            max_file_bytes: 4,
            ..Options::default()
        };
        let s = scan_paths(&[d.join("src/a.c")], &big);
        assert_eq!((s.files_scanned, s.skipped.len()), (0, 1));
        std::fs::remove_dir_all(&d).unwrap();
    }

    fn names(x: &[&str]) -> Vec<String> {
        x.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn a_selection_checks_every_name_and_keeps_what_it_names() {
        let select = |l: &[&str], only: &[&str], except: &[&str]| {
            Options::default().select(&names(l), &names(only), &names(except))
        };
        let all = select(&[], &[], &[]).unwrap();
        assert_eq!((all.langs, all.rules), (None, None));
        let some = select(&["c", "python"], &["inet_addr"], &[]).unwrap();
        assert_eq!(some.langs, Some(vec![Lang::C, Lang::Python]));
        let on: Vec<&str> = RULES
            .iter()
            .zip(some.rules.unwrap())
            .filter_map(|(r, on)| on.then_some(r.id))
            .collect();
        assert_eq!(on, ["inet_addr"]);
        let but = select(&[], &[], &["inet_addr", "inet_ntoa"]).unwrap();
        let off: Vec<&str> = RULES
            .iter()
            .zip(but.rules.unwrap())
            .filter_map(|(r, on)| (!on).then_some(r.id))
            .collect();
        assert_eq!(off, ["inet_addr", "inet_ntoa"]);
        let e = select(&["c", "cobol"], &["nope"], &[]).unwrap_err();
        assert_eq!(
            e.to_string(),
            "--lang \"cobol\": not one of c, cpp, python, go, java"
        );
        let e = select(&["c++"], &["inet_addr"], &["nope"]).unwrap_err();
        assert_eq!(
            e.to_string(),
            "no rule \"nope\": `dualperf portcheck --list-rules` lists them"
        );
    }

    fn finding(rule: &'static str, severity: Severity) -> Finding {
        Finding {
            rule,
            severity,
            line: 1,
            column: 1,
            end_column: 2,
            matched: String::new(),
            snippet: String::new(),
            also: Vec::new(),
        }
    }

    #[test]
    fn a_scan_keeps_what_is_severe_enough_and_fails_on_its_level_or_an_unread_file() {
        let file = |path: &str, findings| FileFindings {
            path: path.into(),
            lang: Lang::C,
            findings,
        };
        let mut scan = Scan {
            files: vec![
                file(
                    "a.c",
                    vec![
                        finding("inet_addr", Severity::Error),
                        finding("first_address_only", Severity::Warning),
                    ],
                ),
                file(
                    "b.c",
                    vec![finding("first_address_only", Severity::Warning)],
                ),
            ],
            skipped: vec![Skipped {
                path: "n.txt".into(),
                reason: "not a C, C++, Python, Go or Java file (by its extension)".into(),
            }],
            ..Scan::default()
        };
        assert!(scan.fails(Some(Severity::Warning)));
        assert!(!scan.fails(None));
        scan.retain_at_least(Severity::Error);
        let left: Vec<_> = scan
            .findings()
            .map(|(f, x)| (f.path.as_str(), x.rule))
            .collect();
        assert_eq!(left, [("a.c", "inet_addr")]);
        assert!(scan.fails(Some(Severity::Error)));
        scan.retain_at_least(Severity::Error);
        scan.files[0].findings[0].severity = Severity::Warning;
        assert!(!scan.fails(Some(Severity::Error)));
        // A file that could not be read fails the scan at any level.
        scan.skipped.push(Skipped {
            path: "locked.c".into(),
            reason: "Permission denied (os error 13)".into(),
        });
        assert!(scan.fails(None));
    }
}
