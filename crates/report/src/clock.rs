//! Clocks across hosts. A one-way delay between two hosts is the receiver's clock at
//! arrival minus the sender's at departure: it carries the offset between the two clocks
//! (`send --json`'s `clock`: receiver − sender, estimated within `± bound_ns`). On one
//! host (`same_clock`) the offset is exactly 0; across hosts the report shows each run's
//! offset and bound, and says when the bound exceeds the delay variation the run
//! measured: then a mean one-way delay, or a difference between IPv4 and IPv6 ones, may
//! be the clocks' as much as the path's, and round trips (`--meter rtt`, one clock) are
//! the safer comparison. Delay variation (jitter, PDV) does not depend on the offset.

use std::collections::BTreeSet;

use lab::store::RunRecord;
use meter::clock::OffsetEstimate;
use meter::FlowSummary;
use results::metric;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::tables::Table;

/// One flow of a run whose ends read different clocks.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RunClock {
    /// The run's id.
    pub run: String,
    /// Its point.
    pub point: String,
    /// 4 or 6.
    pub family: u8,
    /// 0: the measured flow; N: the point's Nth background flow.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub flow: u8,
    /// The receiver's clock minus the sender's, ns: each one-way delay of the flow is
    /// its true delay plus this.
    pub offset_ns: i64,
    /// The offset is known within `± bound_ns`.
    pub bound_ns: u64,
    /// The delay variation the flow measured, ns: the 99th percentile of RFC 5481's
    /// PDV (§4.2, each delay minus the least), else the delays' max − min; `None`
    /// without one-way delays.
    pub variation_ns: Option<u64>,
    /// The flow was metered round trip (`--meter rtt`): its `delay` is the round trip,
    /// read on the sender's clock alone.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub round_trip: bool,
}

fn is_zero(v: &u8) -> bool {
    *v == 0
}

impl RunClock {
    /// Whether its clock's uncertainty exceeds the variation its one-way delays show.
    pub fn exceeds_variation(&self) -> bool {
        self.variation_ns.is_some_and(|v| self.bound_ns > v)
    }
}

/// The delay variation of a flow's one-way delays: RFC 5481 §4.2's PDV (D_i − D_min) at
/// the 99th percentile, the spread that holds nearly every packet whatever the clocks'
/// offset (which cancels in D_i − D_min); the max − min of the delays where the
/// percentile is missing.
fn variation(received: &FlowSummary) -> Option<u64> {
    received.jitter.pdv_p99_ns.or_else(|| {
        received
            .delay
            .map(|d| u64::try_from(d.max_ns.saturating_sub(d.min_ns)).unwrap_or(0))
    })
}

/// Every flow of every run whose ends read different clocks (`clock.same_clock` false),
/// in run order.
pub fn run_clocks(records: &[RunRecord]) -> Vec<RunClock> {
    let mut out = Vec::new();
    for r in records {
        let reports = std::iter::once(r.report.as_ref())
            .chain(r.background.iter().map(lab::store::Background::report));
        for (flow, report) in reports.enumerate() {
            let Some(report) = report else { continue };
            let Some(
                clock @ OffsetEstimate {
                    same_clock: false, ..
                },
            ) = report.clock
            else {
                continue;
            };
            let first = report.flows.first();
            out.push(RunClock {
                run: r.run.id.clone(),
                point: r.point.clone(),
                family: r.run.family,
                flow: u8::try_from(flow).unwrap_or(u8::MAX),
                offset_ns: clock.offset_ns,
                bound_ns: clock.bound_ns,
                variation_ns: first.and_then(|f| f.received.as_ref()).and_then(variation),
                // Only a round-trip flow has the sender's summary of echoes, which its
                // `delay` is read from.
                round_trip: first.is_some_and(|f| f.rtt.is_some()),
            });
        }
    }
    out
}

fn ms(ns: f64) -> String {
    let v = ns / 1e6;
    if v.abs() >= 10.0 {
        format!("{v:.1}")
    } else if v.abs() >= 0.1 {
        format!("{v:.2}")
    } else {
        format!("{v:.3}")
    }
}

/// Notes under each table that shows one-way delays of runs across hosts: the range
/// of the clocks' offsets and their largest bound, and once, when some runs' bound
/// exceeds the delay variation they measured, how many and by how much.
pub fn annotate(tables: &mut [Table], clocks: &[RunClock]) {
    for t in tables {
        let mut seen = BTreeSet::new();
        let shown: Vec<&RunClock> = clocks
            .iter()
            .filter(|c| {
                t.rows.iter().any(|r| r.point == c.point)
                    && t.metrics.iter().any(|m| {
                        m.router.is_none()
                            && m.flow == c.flow
                            && (m.metric == metric::OWD
                                || m.metric == metric::DELAY && !c.round_trip)
                    })
            })
            .filter(|c| seen.insert((c.run.as_str(), c.flow)))
            .collect();
        if shown.is_empty() {
            continue;
        }
        let runs = |cs: &[&RunClock]| {
            cs.iter()
                .map(|c| c.run.as_str())
                .collect::<BTreeSet<_>>()
                .len()
        };
        let low = shown.iter().map(|c| c.offset_ns).min().unwrap_or(0);
        let high = shown.iter().map(|c| c.offset_ns).max().unwrap_or(0);
        let bound = shown.iter().map(|c| c.bound_ns).max().unwrap_or(0);
        let offsets = if low == high {
            format!("{} ms", ms(low as f64))
        } else {
            format!("{} to {} ms", ms(low as f64), ms(high as f64))
        };
        t.notes.push(format!(
            "Clocks: the one-way delays of {} runs across hosts include the receiver's clock minus the sender's, {offsets}, each known within ±{} ms at most.",
            runs(&shown),
            ms(bound as f64)
        ));
        let over: Vec<&RunClock> = shown
            .iter()
            .copied()
            .filter(|c| c.exceeds_variation())
            .collect();
        if !over.is_empty() {
            let bound = over.iter().map(|c| c.bound_ns).max().unwrap_or(0);
            let variation = over
                .iter()
                .filter_map(|c| c.variation_ns)
                .max()
                .unwrap_or(0);
            t.notes.push(format!(
                "Warning: one-way delays of {} runs carry a clock uncertainty of up to ±{} ms (the hosts' clocks), larger than the delay variation they measure (PDV p99 up to {} ms): compare with --meter rtt.",
                runs(&over),
                ms(bound as f64),
                ms(variation as f64)
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use lab::plan::Run;
    use lab::tables::Column;
    use std::collections::BTreeMap;

    /// A run record whose report says `clock` and whose flow's PDV p99 is `pdv_ns`.
    fn record(
        id: &str,
        point: &str,
        clock: serde_json::Value,
        pdv_ns: u64,
        rtt: bool,
    ) -> RunRecord {
        let report = |clock: &serde_json::Value| {
            let mut v: serde_json::Value =
                serde_json::from_str(include_str!("../../lab/tests/data/send-udp-owd.json"))
                    .unwrap();
            v["clock"] = clock.clone();
            v["flows"][0]["received"]["jitter"]["pdv_p99_ns"] = pdv_ns.into();
            if rtt {
                v["flows"][0]["rtt"] = v["flows"][0]["received"].clone();
            }
            serde_json::from_value(v).unwrap()
        };
        RunRecord {
            format_version: lab::store::FORMAT_VERSION,
            run: Run {
                id: id.into(),
                point: 0,
                family: 4,
                repetition: 1,
            },
            point: point.into(),
            argv: Vec::new(),
            started_unix_ns: 0,
            exit_code: 0,
            stderr: String::new(),
            report: Some(report(&clock)),
            attempts: 1,
            background: vec![lab::store::Background::Report(Box::new(report(&clock)))],
            routers: BTreeMap::new(),
            router_stalls: BTreeMap::new(),
        }
    }

    fn across(offset_ns: i64, bound_ns: u64) -> serde_json::Value {
        serde_json::json!({
            "offset_ns": offset_ns, "bound_ns": bound_ns, "delay_min_ns": 2 * bound_ns,
            "samples": 8, "same_clock": false
        })
    }

    fn table(point: &str, metric: metric::Metric, flow: u8) -> Table {
        Table {
            title: "T".into(),
            declared: true,
            metrics: vec![Column {
                metric,
                unit: metric.default_unit(),
                flow,
                router: None,
            }],
            label_heading: "Point".into(),
            rows: vec![crate::tables::TableRow {
                point: point.into(),
                label: point.into(),
            }],
            paper: BTreeMap::new(),
            notes: Vec::new(),
            partial: None,
            x: None,
        }
    }

    #[test]
    fn only_runs_across_hosts_have_a_clock_to_show() {
        let records = [
            record("a", "p", across(-1_500_000, 300_000), 100_000, false),
            record(
                "b",
                "p",
                serde_json::json!({"offset_ns": 0, "bound_ns": 0, "delay_min_ns": 0, "samples": 0, "same_clock": true}),
                100_000,
                false,
            ),
            record("c", "p", serde_json::Value::Null, 100_000, false),
        ];
        let clocks = run_clocks(&records);
        let ids: Vec<(&str, u8)> = clocks.iter().map(|c| (c.run.as_str(), c.flow)).collect();
        assert_eq!(ids, [("a", 0), ("a", 1)]);
        assert_eq!(clocks[0].offset_ns, -1_500_000);
        assert_eq!(clocks[0].variation_ns, Some(100_000));
        assert!(clocks[0].exceeds_variation());
        // Without the percentile, the delays' max − min (the recorded flow's 4286 to
        // 44746 ns).
        let mut r = records[0].clone();
        if let Some(rep) = r.report.as_mut() {
            if let Some(rx) = rep.flows[0].received.as_mut() {
                rx.jitter.pdv_p99_ns = None;
            }
        }
        assert_eq!(run_clocks(&[r])[0].variation_ns, Some(44_746 - 4_286));
    }

    #[test]
    fn a_table_of_one_way_delays_says_once_when_the_clocks_are_less_certain_than_the_delays_vary() {
        let records = [
            // Bound 2 ms over a PDV of 0.5 ms: flagged.
            record("r1", "p", across(3_000_000, 2_000_000), 500_000, false),
            record("r2", "p", across(-1_000_000, 1_500_000), 400_000, false),
            // Bound 0.1 ms under a PDV of 0.5 ms: shown, not flagged.
            record("r3", "p", across(250_000, 100_000), 500_000, false),
            // Another point's run: not in the table.
            record("r4", "q", across(9_000_000, 9_000_000), 1, false),
        ];
        let clocks = run_clocks(&records);
        let mut tables = vec![
            table("p", metric::OWD, 0),
            table("p", metric::JITTER, 0),
            table("p", metric::DELAY, 1),
        ];
        annotate(&mut tables, &clocks);
        assert_eq!(
            tables[0].notes,
            [
                "Clocks: the one-way delays of 3 runs across hosts include the receiver's clock minus the sender's, -1.00 to 3.00 ms, each known within ±2.00 ms at most.",
                "Warning: one-way delays of 2 runs carry a clock uncertainty of up to ±2.00 ms (the hosts' clocks), larger than the delay variation they measure (PDV p99 up to 0.50 ms): compare with --meter rtt."
            ]
        );
        assert!(
            tables[1].notes.is_empty(),
            "jitter does not depend on the offset"
        );
        assert_eq!(tables[2].notes.len(), 2, "a background flow's delays too");
        // Round-trip flows' delays are read on one clock; their one-way delays are not.
        let rtt = [record(
            "r1",
            "p",
            across(3_000_000, 2_000_000),
            500_000,
            true,
        )];
        let clocks = run_clocks(&rtt);
        let mut tables = vec![table("p", metric::DELAY, 0), table("p", metric::OWD, 0)];
        annotate(&mut tables, &clocks);
        assert!(tables[0].notes.is_empty());
        assert_eq!(tables[1].notes.len(), 2);
    }

    #[test]
    fn the_report_prints_the_notes_under_their_table_in_every_form() {
        let mut records = Vec::new();
        for (i, family) in [(1, 4), (2, 6), (3, 4), (4, 6)] {
            let mut r = record(
                &format!("rep00{i}-p-ipv{family}"),
                "p",
                across(3_000_000, 2_000_000),
                500_000,
                false,
            );
            r.run.family = family;
            r.background.clear();
            records.push(r);
        }
        let runs = crate::Runs {
            records,
            order: vec!["p".into()],
            factors: BTreeMap::from([("p".into(), BTreeMap::from([("point".into(), "p".into())]))]),
            specs: Vec::new(),
            provenance: Default::default(),
            completeness: Default::default(),
            vocabulary: metric::Vocabulary::standard(),
        };
        let report = crate::Report::new(&runs);
        let warning =
            "Warning: one-way delays of 4 runs carry a clock uncertainty of up to ±2.00 ms";
        let text = report.text(false);
        assert_eq!(text.matches(warning).count(), 1, "{text}");
        // Under the delay table, not the others.
        let delay = text.find("Delay (µs)").unwrap();
        let jitter = text.find("Jitter (µs)").unwrap();
        let at = text.find(warning).unwrap();
        assert!(delay < at && (at < jitter || jitter < delay), "{text}");
        assert_eq!(report.text(true).matches(warning).count(), 1);
        let html = report.html(&[], &crate::Plots::default());
        assert!(
            html.contains(&format!("<p class=\"note\">{warning}")),
            "{html}"
        );
        let doc = serde_json::to_value(report.into_doc()).unwrap();
        assert_eq!(doc["clocks"].as_array().unwrap().len(), 4);
        assert_eq!(doc["clocks"][0]["bound_ns"], 2_000_000);
        assert_eq!(doc["clocks"][0]["variation_ns"], 500_000);
        let notes: Vec<&serde_json::Value> = doc["tables"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|t| t.get("notes"))
            .collect();
        assert_eq!(notes.len(), 1);
        assert!(notes[0][1].as_str().unwrap().starts_with(warning));
    }
}
