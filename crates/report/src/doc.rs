//! The `dualperf report --json` document.

use meter::repeat::{DEFAULT_ALPHA, DEFAULT_LEVEL};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::clock::RunClock;
use crate::missing::Completeness;
use crate::stats::Row;
use crate::tables::Table;

/// Version of the [`ReportDoc`] format.
pub const FORMAT_VERSION: u32 = 2;

/// `dualperf report --json`: every figure, in the stored units (bit/s, ns, %), and the
/// tables.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ReportDoc {
    /// [`FORMAT_VERSION`].
    pub format_version: u32,
    /// How many runs the figures are over.
    pub runs: usize,
    /// Confidence level of the intervals.
    pub level: f64,
    /// Significance level of the t-tests.
    pub alpha: f64,
    /// Every (point, metric) with figures, in plan order.
    pub rows: Vec<Row>,
    /// The tables, declared first.
    pub tables: Vec<Table>,
    /// Runs across hosts: each flow's clock offset (receiver − sender) and its bound,
    /// beside the delay variation it measured.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub clocks: Vec<RunClock>,
    /// A partial report: the runs its plans list against those with a result, per
    /// point, and every missing run. Absent when every planned run has a result.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub partial: Option<Completeness>,
    /// The verdict layer's page ([`crate::verdicts`]): IPv6 against IPv4 per point and
    /// metric of the plan's tables, paired (with verdicts) when the runs are pairs,
    /// pooled otherwise; what `dualperf compare --json` prints.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verdicts: Option<results::compare::CompareReport>,
    /// The path's facts per family (the run directory's `path.json`, written by `compare
    /// HOST` and `compare --lab`): addresses, NAT, hops, path MTU, marking, capacity,
    /// clock. Absent without the file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<results::path::PathFacts>,
}

impl ReportDoc {
    /// The document of these rows and tables, at the default levels.
    pub fn new(runs: usize, rows: Vec<Row>, tables: Vec<Table>) -> Self {
        Self {
            format_version: FORMAT_VERSION,
            runs,
            level: DEFAULT_LEVEL,
            alpha: DEFAULT_ALPHA,
            rows,
            tables,
            clocks: Vec::new(),
            partial: None,
            verdicts: None,
            path: None,
        }
    }
}

/// The JSON Schema of [`ReportDoc`].
pub fn schema() -> schemars::Schema {
    schemars::schema_for!(ReportDoc)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_schema_names_every_key_of_the_document() {
        let schema = serde_json::to_string(&schema()).unwrap();
        for key in [
            "format_version",
            "runs",
            "level",
            "alpha",
            "rows",
            "tables",
            "ipv6_vs_ipv4",
            "label_heading",
            "rel_diff_pct",
        ] {
            assert!(schema.contains(&format!("\"{key}\"")), "{key}: {schema}");
        }
    }

    #[test]
    fn a_document_reads_back_as_it_was_written() {
        let doc = ReportDoc::new(0, Vec::new(), Vec::new());
        let value = serde_json::to_value(&doc).unwrap();
        let keys: Vec<&String> = value.as_object().unwrap().keys().collect();
        assert_eq!(
            keys,
            ["alpha", "format_version", "level", "rows", "runs", "tables"]
        );
        assert_eq!(value["format_version"], 2);
        assert_eq!(serde_json::from_value::<ReportDoc>(value).unwrap(), doc);
    }
}
