//! Findings as text, JSON and SARIF 2.1.0.
//!
//! SARIF (OASIS Static Analysis Results Interchange Format 2.1.0) is what code-scanning
//! dashboards read: one run, the tool's rules with their descriptions and help, and a
//! result per finding with a physical location (relative URI, 1-based line and column,
//! the line as snippet). Columns count Unicode code points, which the run declares
//! (`columnKind`, §3.14.17). A test validates the output against the published schema.
//!
//! There is one finding per line ([`crate::scan::scan_source`]); the other rules that
//! matched on that line are listed with it: `also` in JSON, `properties.also` in SARIF,
//! an `= also:` line in text.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde::Serialize;
use serde_json::{json, Value};

use crate::lex::Lang;
use crate::rules::{rule, Severity, RULES};
use crate::walk::{Scan, Skipped};

/// The project's repository, as the workspace's `Cargo.toml` states it (`repository`),
/// so that it is set in one place.
pub const REPOSITORY: &str = env!("CARGO_PKG_REPOSITORY");

/// SARIF's `informationUri` (SARIF 2.1.0 §3.19.17, an absolute URI; optional): the
/// repository, when it is a real address. A placeholder (an `.invalid` host, RFC 2606
/// §2) is left out rather than shown to a dashboard as a link.
pub fn information_uri() -> Option<&'static str> {
    real_address(REPOSITORY)
}

/// `url` if it is an `https://` address whose host is not a placeholder.
fn real_address(url: &str) -> Option<&str> {
    let host = url
        .strip_prefix("https://")
        .and_then(|r| r.split(['/', ':']).next())
        .unwrap_or("");
    let placeholder = host.is_empty()
        || host == "invalid"
        || host.ends_with(".invalid")
        || host.ends_with(".example")
        || matches!(host, "example.com" | "example.org" | "example.net");
    (!placeholder).then_some(url)
}

/// The tool's name and version, as reports show them.
#[derive(Clone, Copy, Debug)]
pub struct Tool<'a> {
    pub name: &'a str,
    pub version: &'a str,
}

/// Counts per rule id, in table order, for rules with findings.
pub fn counts_by_rule(scan: &Scan) -> Vec<(&'static str, usize)> {
    let mut counts: BTreeMap<usize, usize> = BTreeMap::new();
    for (_, f) in scan.findings() {
        if let Some(i) = RULES.iter().position(|r| r.id == f.rule) {
            *counts.entry(i).or_default() += 1;
        }
    }
    counts.into_iter().map(|(i, n)| (RULES[i].id, n)).collect()
}

/// Compiler-style text: `path:line:col: severity[rule]: title`, the source line, and the
/// replacement; then skipped files and a summary. `explain` adds each rule's "why".
pub fn text(scan: &Scan, explain: bool) -> String {
    let mut out = String::new();
    for (file, f) in scan.findings() {
        let Some(r) = rule(f.rule) else { continue };
        let _ = writeln!(
            out,
            "{}:{}:{}: {}[{}]: {}",
            file.path,
            f.line,
            f.column,
            f.severity.name(),
            f.rule,
            r.title
        );
        let _ = writeln!(out, "    | {}", f.snippet.trim_end());
        if !f.also.is_empty() {
            let _ = writeln!(out, "    = also: {}", f.also.join(", "));
        }
        if explain {
            let _ = writeln!(out, "    = why: {}", r.why);
        }
        let _ = writeln!(out, "    = fix: {}", r.fix);
    }
    for s in &scan.skipped {
        let _ = writeln!(out, "skipped {}: {}", s.path, s.reason);
    }
    let (e, w, n) = severity_counts(scan);
    let _ = writeln!(
        out,
        "{} finding{} ({e} error, {w} warning, {n} note) in {} of {} files scanned ({} bytes){}",
        e + w + n,
        if e + w + n == 1 { "" } else { "s" },
        scan.files.len(),
        scan.files_scanned,
        scan.bytes_scanned,
        if scan.skipped.is_empty() {
            String::new()
        } else {
            format!(", {} skipped", scan.skipped.len())
        }
    );
    if e + w + n > 0 {
        let by: Vec<String> = counts_by_rule(scan)
            .into_iter()
            .map(|(id, n)| format!("{id} {n}"))
            .collect();
        let _ = writeln!(out, "by rule: {}", by.join(", "));
    }
    out
}

fn severity_counts(scan: &Scan) -> (usize, usize, usize) {
    let mut c = (0, 0, 0);
    for (_, f) in scan.findings() {
        match f.severity {
            Severity::Error => c.0 += 1,
            Severity::Warning => c.1 += 1,
            Severity::Note => c.2 += 1,
        }
    }
    c
}

/// `portcheck --json`: dualperf's own report of a scan.
#[derive(Debug, Serialize, schemars::JsonSchema)]
pub struct FindingsDoc<'a> {
    /// The tool's name (`dualperf portcheck`).
    pub tool: &'a str,
    /// Its version.
    pub version: &'a str,
    /// Source files read.
    pub files_scanned: u64,
    /// Their size in bytes.
    pub bytes_scanned: u64,
    /// How many findings there are (one per line at most).
    pub finding_count: usize,
    /// Findings per rule id, for the rules with any.
    pub counts_by_rule: BTreeMap<&'static str, usize>,
    /// Every finding, by path then position.
    pub findings: Vec<FindingRow<'a>>,
    /// The files that were not scanned, and why.
    pub skipped: &'a [Skipped],
}

/// One finding of `portcheck --json`, with its rule's title, why and fix.
#[derive(Debug, Serialize, schemars::JsonSchema)]
pub struct FindingRow<'a> {
    /// The file, as walked, with `/` separators.
    pub path: &'a str,
    pub lang: Lang,
    /// 1-based line and column (Unicode code points) where the match starts.
    pub line: usize,
    pub column: usize,
    /// 1-based column just past the match.
    pub end_column: usize,
    /// The rule's id.
    pub rule: &'static str,
    pub severity: Severity,
    /// The rule's title, why it matters, and what to use instead.
    pub title: &'static str,
    pub why: &'static str,
    pub fix: &'static str,
    /// The criterion (1 to 8, Bouras et al.) the rule bears on.
    pub criterion: u8,
    /// The matched text.
    pub matched: &'a str,
    /// The whole source line.
    pub snippet: &'a str,
    /// The other rules that matched on the same line, in table order.
    pub also: &'a [&'static str],
}

/// dualperf's own JSON ([`FindingsDoc`]) as a value (keys sorted): every finding with
/// its rule's title, why and fix, per-rule counts, and the skipped files.
pub fn json(scan: &Scan, tool: Tool<'_>) -> Value {
    let findings: Vec<FindingRow<'_>> = scan
        .findings()
        .filter_map(|(file, f)| {
            let r = rule(f.rule)?;
            Some(FindingRow {
                path: &file.path,
                lang: file.lang,
                line: f.line,
                column: f.column,
                end_column: f.end_column,
                rule: f.rule,
                severity: f.severity,
                title: r.title,
                why: r.why,
                fix: r.fix,
                criterion: r.criterion,
                matched: &f.matched,
                snippet: &f.snippet,
                also: &f.also,
            })
        })
        .collect();
    let doc = FindingsDoc {
        tool: tool.name,
        version: tool.version,
        files_scanned: scan.files_scanned,
        bytes_scanned: scan.bytes_scanned,
        finding_count: findings.len(),
        counts_by_rule: counts_by_rule(scan).into_iter().collect(),
        findings,
        skipped: &scan.skipped,
    };
    serde_json::to_value(doc).expect("a findings document serialises")
}

/// A SARIF 2.1.0 log with one run.
pub fn sarif(scan: &Scan, tool: Tool<'_>) -> Value {
    let rules: Vec<Value> = RULES
        .iter()
        .map(|r| {
            json!({
                "id": r.id,
                "name": camel(r.id),
                "shortDescription": { "text": r.title },
                "fullDescription": { "text": r.why },
                "help": {
                    "text": format!("{}\n\nReplacement: {}\n\nExample flagged: {}\nIPv6-ready: {}", r.why, r.fix, r.example_bad, r.example_good),
                },
                "defaultConfiguration": { "level": r.severity.name() },
                "properties": {
                    "tags": ["ipv6", "portability", format!("criterion-{}", r.criterion)],
                    "languages": r.langs.iter().map(|l| l.name()).collect::<Vec<_>>(),
                },
            })
        })
        .collect();
    let results: Vec<Value> = scan
        .findings()
        .filter_map(|(file, f)| {
            let index = RULES.iter().position(|r| r.id == f.rule)?;
            let r = &RULES[index];
            Some(json!({
                "ruleId": f.rule,
                "ruleIndex": index,
                "level": f.severity.name(),
                "message": { "text": format!("{}: {}. Use {}", r.title, r.why, r.fix) },
                "properties": { "also": f.also },
                "locations": [{
                    "physicalLocation": {
                        "artifactLocation": { "uri": uri(&file.path) },
                        "region": {
                            "startLine": f.line,
                            "startColumn": f.column,
                            "endColumn": f.end_column,
                            "snippet": { "text": f.snippet },
                        },
                    },
                }],
            }))
        })
        .collect();
    let notifications: Vec<Value> = scan
        .skipped
        .iter()
        .map(|s| {
            json!({
                "level": "note",
                "message": { "text": format!("skipped {}: {}", s.path, s.reason) },
            })
        })
        .collect();
    let mut driver = json!({
        "name": tool.name,
        "semanticVersion": tool.version,
        "rules": rules,
    });
    if let Some(uri) = information_uri() {
        driver["informationUri"] = json!(uri);
    }
    json!({
        "$schema": "https://raw.githubusercontent.com/oasis-tcs/sarif-spec/master/Schemata/sarif-schema-2.1.0.json",
        "version": "2.1.0",
        "runs": [{
            "tool": {
                "driver": driver,
            },
            "columnKind": "unicodeCodePoints",
            "invocations": [{
                "executionSuccessful": true,
                "toolExecutionNotifications": notifications,
            }],
            "results": results,
        }],
    })
}

/// `colon_split` → `ColonSplit` (SARIF's `name` is a Pascal-case identifier by custom).
fn camel(id: &str) -> String {
    id.split('_')
        .map(|w| {
            let mut c = w.chars();
            c.next()
                .map(|f| f.to_ascii_uppercase().to_string() + c.as_str())
                .unwrap_or_default()
        })
        .collect()
}

/// A relative path as a URI reference (RFC 3986): unreserved characters, `/` and
/// sub-delimiters pass, everything else is percent-encoded byte by byte.
pub fn uri(path: &str) -> String {
    let mut out = String::with_capacity(path.len());
    for &b in path.as_bytes() {
        if b.is_ascii_alphanumeric() || b"-._~/!$&'()*+,;=@".contains(&b) {
            out.push(b as char);
        } else {
            let _ = write!(out, "%{b:02X}");
        }
    }
    out
}

/// One rule of `portcheck --list-rules --json`.
#[derive(Debug, Serialize, schemars::JsonSchema)]
pub struct RuleRow {
    /// The rule's id (what `--rule` takes).
    pub id: &'static str,
    pub title: &'static str,
    pub severity: Severity,
    /// The languages it looks at.
    pub languages: &'static [Lang],
    /// The criterion (1 to 8, Bouras et al.) it bears on.
    pub criterion: u8,
    /// Why it matters, and what to use instead.
    pub why: &'static str,
    pub fix: &'static str,
    /// A line it flags, and its IPv6-ready form, which it does not.
    pub example_flagged: &'static str,
    pub example_not_flagged: &'static str,
}

/// `portcheck --list-rules --json` ([`RuleRow`]s) as a value (keys sorted): every rule
/// with its examples.
pub fn rules_json() -> Value {
    let rows: Vec<RuleRow> = RULES
        .iter()
        .map(|r| RuleRow {
            id: r.id,
            title: r.title,
            severity: r.severity,
            languages: r.langs,
            criterion: r.criterion,
            why: r.why,
            fix: r.fix,
            example_flagged: r.example_bad,
            example_not_flagged: r.example_good,
        })
        .collect();
    serde_json::to_value(rows).expect("the rules serialise")
}

/// `portcheck --list-rules`: every rule with its fix, then the criteria.
pub fn rules_text() -> String {
    let mut out = String::new();
    for r in RULES {
        let langs: Vec<&str> = r.langs.iter().map(|l| l.name()).collect();
        out += &format!(
            "{:<22} {:<7} {:<22} criterion {}  {}\n{:<22} fix: {}\n\n",
            r.id,
            r.severity.name(),
            langs.join(","),
            r.criterion,
            r.title,
            "",
            r.fix
        );
    }
    out += &format!(
        "{} rules. Criteria (Bouras et al., H.323 study):\n",
        RULES.len()
    );
    for (i, (name, what)) in crate::rules::CRITERIA.iter().enumerate() {
        out += &format!("  {}. {name}: {what}\n", i + 1);
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn information_uri_is_a_real_address_or_nothing() {
        assert_eq!(
            real_address("https://github.com/o/dualperf"),
            Some("https://github.com/o/dualperf")
        );
        for placeholder in [
            "https://example.invalid/dualperf",
            "https://example.com/x",
            "http://github.com/o/d",
            "",
        ] {
            assert_eq!(real_address(placeholder), None, "{placeholder}");
        }
    }

    use super::*;
    use crate::lex::Lang;
    use crate::scan::scan_source;
    use crate::walk::{FileFindings, Skipped};

    const TOOL: Tool<'static> = Tool {
        name: "dualperf",
        version: "0.1.0",
    };

    fn sample() -> Scan {
        let src = "s = socket(AF_INET, SOCK_STREAM, 0);\nh = gethostbyname(n);\n";
        Scan {
            files_scanned: 2,
            bytes_scanned: src.len() as u64,
            files: vec![FileFindings {
                path: "src/my file.c".into(),
                lang: Lang::C,
                findings: scan_source(src, Lang::C, None),
            }],
            skipped: vec![Skipped {
                path: "big.c".into(),
                reason: "too big".into(),
            }],
            evidence: Default::default(),
        }
    }

    #[test]
    fn text_is_compiler_style() {
        let t = text(&sample(), false);
        assert!(
            t.starts_with("src/my file.c:1:12: warning[af_inet]: AF_INET/PF_INET only"),
            "{t}"
        );
        assert!(t.contains("src/my file.c:2:5: error[gethostbyname]"), "{t}");
        assert!(
            t.contains("    | h = gethostbyname(n);\n    = fix: getaddrinfo()"),
            "{t}"
        );
        assert!(t.contains("skipped big.c: too big"));
        assert!(
            t.contains("2 findings (1 error, 1 warning, 0 note) in 1 of 2 files scanned"),
            "{t}"
        );
        assert!(t.contains("by rule: gethostbyname 1, af_inet 1"), "{t}");
    }

    #[test]
    fn json_and_sarif_carry_every_finding() {
        let s = sample();
        let j = json(&s, TOOL);
        assert_eq!(j["finding_count"], 2);
        assert_eq!(j["findings"][1]["rule"], "gethostbyname");
        assert_eq!(j["findings"][1]["line"], 2);
        assert_eq!(j["counts_by_rule"]["af_inet"], 1);
        let v = sarif(&s, TOOL);
        let results = v["runs"][0]["results"].as_array().unwrap();
        assert_eq!(results.len(), 2);
        let loc = &results[0]["locations"][0]["physicalLocation"];
        assert_eq!(loc["artifactLocation"]["uri"], "src/my%20file.c");
        assert_eq!(loc["region"]["startLine"], 1);
        let idx = results[1]["ruleIndex"].as_u64().unwrap() as usize;
        assert_eq!(
            v["runs"][0]["tool"]["driver"]["rules"][idx]["id"],
            "gethostbyname"
        );
        assert_eq!(
            v["runs"][0]["tool"]["driver"]["rules"][idx]["name"],
            "Gethostbyname"
        );
    }

    #[test]
    fn uris_are_percent_encoded() {
        assert_eq!(uri("a b/ç%.c"), "a%20b/%C3%A7%25.c");
    }
}
