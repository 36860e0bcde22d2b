//! SARIF output validates against the OASIS SARIF 2.1.0 JSON schema (`tests/data`).

use std::path::Path;

use port::report::{sarif, Tool};
use port::walk::{scan_paths, Options};

/// The published schema, compiled. One pattern in it (`run.language` and
/// `toolComponent.language`: `^[a-zA-Z]{2}|^[a-zA-Z]{2}-[a-zA-Z]{2}]?$`) has an unbalanced `]`: ECMAScript, the
/// dialect JSON Schema patterns are written in, reads it as a literal `]`; Rust's regex
/// engines refuse it. That `]` is escaped before compiling, which keeps the
/// ECMAScript meaning; nothing else is touched (and dualperf never writes `language`).
fn validator() -> jsonschema::Validator {
    let text = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/sarif-schema-2.1.0.json"),
    )
    .unwrap();
    let broken = r#""^[a-zA-Z]{2}|^[a-zA-Z]{2}-[a-zA-Z]{2}]?$""#;
    assert_eq!(text.matches(broken).count(), 2);
    let text = text.replace(broken, r#""^[a-zA-Z]{2}|^[a-zA-Z]{2}-[a-zA-Z]{2}\\]?$""#);
    let schema: serde_json::Value = serde_json::from_str(&text).unwrap();
    jsonschema::draft7::new(&schema).expect("the SARIF schema compiles")
}

const TOOL: Tool<'static> = Tool {
    name: "dualperf",
    version: "0.1.0",
};

#[test]
fn sarif_for_the_legacy_fixture_validates_against_the_2_1_0_schema() {
    let v = validator();
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/legacy");
    let scan = scan_paths(&[dir], &Options::default());
    let log = sarif(&scan, TOOL);
    let errors: Vec<String> = v
        .iter_errors(&log)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect();
    assert!(errors.is_empty(), "{errors:#?}");
    let results = log["runs"][0]["results"].as_array().unwrap();
    assert_eq!(results.len(), scan.finding_count());
    assert!(results.len() > 100);
}

#[test]
fn an_empty_scan_and_skipped_files_validate_too() {
    let v = validator();
    let scan = scan_paths(
        &[Path::new("/nonexistent/dualperf-portcheck").to_path_buf()],
        &Options::default(),
    );
    assert_eq!(scan.skipped.len(), 1);
    let log = sarif(&scan, TOOL);
    assert!(v.is_valid(&log));
    assert_eq!(log["runs"][0]["results"].as_array().unwrap().len(), 0);
}

#[test]
fn the_validator_is_not_a_rubber_stamp() {
    let v = validator();
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/legacy");
    let mut log = sarif(&scan_paths(&[dir], &Options::default()), TOOL);
    log["runs"][0]["results"][0]["level"] = "fatal".into();
    assert!(!v.is_valid(&log), "an invalid level must fail validation");
    let mut log2 = log.clone();
    log2["runs"][0]["results"][0]["level"] = "error".into();
    log2["version"] = "2.0.0".into();
    assert!(!v.is_valid(&log2), "a wrong version must fail validation");
}
