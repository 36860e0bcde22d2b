//! The statistics of every (point, metric): mean and confidence interval over
//! repetitions for IPv4 and IPv6, and Welch's t-test between them.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use lab::store::RunRecord;
use lab::tables::Column;
use meter::repeat::{
    compare, compare_medians, Comparison, Median, MedianComparison, Sample, DEFAULT_ALPHA,
    DEFAULT_LEVEL,
};
use results::metric::{self, Metric};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::load::Runs;

/// One point's metric over both families, in the stored unit.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Row {
    /// The point's id.
    pub point: String,
    /// The point's factors, from the resolved plan.
    pub factors: BTreeMap<String, String>,
    /// What the figures are of.
    pub metric: Metric,
    /// 0: the measured flow; N: the point's Nth background flow.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub flow: u8,
    /// The lab router a router's figure is of.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub router: Option<String>,
    /// The stored unit (`bit/s`, `ns`, `%`).
    pub unit: String,
    /// Over the IPv4 runs.
    pub ipv4: Option<Sample>,
    /// Over the IPv6 runs.
    pub ipv6: Option<Sample>,
    /// Welch's t-test of IPv6 against IPv4.
    pub ipv6_vs_ipv4: Option<Comparison>,
    /// For a delay (`rtt`, `owd`, `delay`): each run's median delay, compared by the
    /// median over repetitions ([`Medians`]). Absent for other metrics and for runs
    /// whose reports have no median.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub median: Option<Medians>,
}

/// A delay's robust figures: each run's median delay (the `p50_ns` of its report, from
/// the meter's histogram within 1/128), and over the repetitions their median with its
/// percentile bootstrap interval (Efron & Tibshirani 1993, §13.3) per family, and the
/// difference of the two medians with its two-sample bootstrap interval (ibid. §16.2).
/// Neither a slow tail within a run nor one slow run moves them, where both move a
/// mean.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Medians {
    /// Over the IPv4 runs' median delays, ns.
    pub ipv4: Option<Median>,
    /// Over the IPv6 runs' median delays, ns.
    pub ipv6: Option<Median>,
    /// IPv6's median against IPv4's.
    pub ipv6_vs_ipv4: Option<MedianComparison>,
}

/// A run's median delay of a column's flow (`p50_ns`), for the delays; `None` for other
/// metrics, a router's figure, or a report without the median. The same flow as
/// [`Column::of`] reads the mean of.
fn median_delay(c: &Column, record: &RunRecord) -> Option<f64> {
    if c.router.is_some() || !c.metric.covers(&metric::DELAY) {
        return None;
    }
    let report = match c.flow {
        0 => record.report.as_ref()?,
        n => record.background.get(usize::from(n) - 1)?.report()?,
    };
    let flow = report.flows.first()?;
    let summary = if c.metric == metric::RTT {
        flow.rtt.as_ref()
    } else if c.metric == metric::OWD {
        flow.received.as_ref()
    } else {
        // Echoes are summarised only for a flow metered round trip (as `RunCdf`).
        flow.rtt.as_ref().or(flow.received.as_ref())
    };
    summary?.delay.as_ref()?.p50_ns.map(|v| v as f64)
}

/// Whether a column's figures at `point` cannot be negative, so their interval must not
/// be either: every metric but a one-way delay, and a `delay` whose runs all metered
/// their flow round trip (a round trip is never below zero; Student's t over a few
/// runs with one slow one reaches below it).
fn non_negative(c: &Column, records: &[RunRecord], point: &str) -> bool {
    if c.metric.non_negative {
        return true;
    }
    if c.metric != metric::DELAY || c.router.is_some() {
        return false;
    }
    let mut runs = records
        .iter()
        .filter(|r| r.point == point)
        .filter_map(|r| match c.flow {
            0 => r.report.as_ref(),
            n => r.background.get(usize::from(n) - 1)?.report(),
        })
        .filter_map(|report| report.flows.first())
        .peekable();
    // A flow metered round trip has the sender's summary of its echoes (as [`RunCdf`]).
    runs.peek().is_some() && runs.all(|f| f.rtt.is_some())
}

/// Everything `report` read: the statistics of every (point, metric).
#[derive(Clone, Debug)]
pub struct Results {
    /// In plan order, point by point.
    pub rows: Vec<Row>,
    index: HashMap<(String, Metric, u8, Option<String>), usize>,
    /// How many runs the figures are over.
    pub runs: usize,
    /// How many background flows the runs have at most (up to the plan's limit).
    pub flows: u8,
    /// Each row's run values, IPv4 then IPv6, in the stored unit (for box plots).
    values: Vec<[Vec<f64>; 2]>,
    /// Each run's interval series of its measured flow, in point order.
    pub series: Vec<RunSeries>,
    /// Each run's delay distribution of its measured flow (`send --cdf`), in point order.
    pub cdfs: Vec<RunCdf>,
    /// The metrics the rows are of: the runs' vocabulary.
    metrics: Vec<Metric>,
}

/// One run's delay distribution: its measured flow's `delay_cdf_ns`.
#[derive(Clone, Debug, PartialEq)]
pub struct RunCdf {
    /// The point's id.
    pub point: String,
    /// 4 or 6.
    pub family: u8,
    /// The round trip (a flow metered round trip), else the one-way delay.
    pub round_trip: bool,
    /// The smallest delay, then its percentiles 1 to 100, ns.
    pub delay_ns: Vec<i64>,
}

/// One run's receiver-side interval series (`--interval`): the measured flow's
/// throughput in each window.
#[derive(Clone, Debug, PartialEq)]
pub struct RunSeries {
    /// The point's id.
    pub point: String,
    /// 4 or 6.
    pub family: u8,
    /// (seconds since the run's first window began, bit/s) at each window's end.
    pub throughput: Vec<(f64, f64)>,
}

impl Results {
    /// The figures of a point in a column, if it has any.
    pub fn row(&self, point: &str, c: &Column) -> Option<&Row> {
        self.index
            .get(&(point.to_owned(), c.metric, c.flow, c.router.clone()))
            .map(|i| &self.rows[*i])
    }

    /// A row's run values, IPv4 and IPv6, in the stored unit.
    pub fn run_values(&self, point: &str, c: &Column) -> Option<(&[f64], &[f64])> {
        let i = *self
            .index
            .get(&(point.to_owned(), c.metric, c.flow, c.router.clone()))?;
        let [a, b] = &self.values[i];
        Some((a, b))
    }

    /// The statistics of every point and column the runs have figures for: the
    /// measured flow, then each background flow any run has, then each lab router;
    /// each in every metric of the runs' vocabulary.
    pub fn new(runs: &Runs) -> Self {
        let Runs {
            records,
            order,
            factors,
            vocabulary,
            ..
        } = runs;
        let mut rows = Vec::new();
        let mut run_values = Vec::new();
        let mut index = HashMap::new();
        let flows = records
            .iter()
            .map(|r| r.background.len())
            .max()
            .unwrap_or(0)
            .min(lab::plan::MAX_BACKGROUND) as u8;
        let routers: BTreeSet<&String> = records.iter().flat_map(|r| r.routers.keys()).collect();
        let (of_routers, of_flows): (Vec<Metric>, Vec<Metric>) = vocabulary
            .metrics()
            .iter()
            .partition(|m| m.router_figure().is_some());
        let mut columns: Vec<Column> = (0..=flows)
            .flat_map(|flow| {
                of_flows.iter().map(move |m| Column {
                    metric: *m,
                    unit: m.default_unit(),
                    flow,
                    router: None,
                })
            })
            .collect();
        for r in &routers {
            for metric in &of_routers {
                columns.push(Column {
                    metric: *metric,
                    unit: metric.default_unit(),
                    flow: 0,
                    router: Some((*r).clone()),
                });
            }
        }
        for point in order {
            for column in &columns {
                let values = |family: u8| -> Vec<f64> {
                    records
                        .iter()
                        .filter(|r| &r.point == point && r.run.family == family)
                        .filter_map(|r| column.of(r))
                        .collect()
                };
                // An interval inside the metric's range where it has one (meter::repeat).
                let in_range = non_negative(column, records, point);
                let sample = |values: Vec<f64>| {
                    if in_range {
                        Sample::bootstrap(&values, DEFAULT_LEVEL)
                    } else {
                        Sample::new(&values, DEFAULT_LEVEL)
                    }
                };
                let (v4, v6) = (values(4), values(6));
                let ipv4 = sample(v4.clone());
                let ipv6 = sample(v6.clone());
                if ipv4.is_none() && ipv6.is_none() {
                    continue;
                }
                let cmp = ipv4
                    .as_ref()
                    .zip(ipv6.as_ref())
                    .and_then(|(a, b)| compare(a, b, DEFAULT_ALPHA));
                index.insert(
                    (
                        point.clone(),
                        column.metric,
                        column.flow,
                        column.router.clone(),
                    ),
                    rows.len(),
                );
                let medians = |family: u8| -> Vec<f64> {
                    records
                        .iter()
                        .filter(|r| &r.point == point && r.run.family == family)
                        .filter_map(|r| median_delay(column, r))
                        .collect()
                };
                let (m4, m6) = (medians(4), medians(6));
                let median = (!m4.is_empty() || !m6.is_empty()).then(|| Medians {
                    ipv4: Median::bootstrap(&m4, DEFAULT_LEVEL),
                    ipv6: Median::bootstrap(&m6, DEFAULT_LEVEL),
                    ipv6_vs_ipv4: compare_medians(&m4, &m6, DEFAULT_LEVEL),
                });
                run_values.push([v4, v6]);
                rows.push(Row {
                    point: point.clone(),
                    factors: factors.get(point).cloned().unwrap_or_default(),
                    metric: column.metric,
                    flow: column.flow,
                    router: column.router.clone(),
                    unit: column.metric.base_unit().to_owned(),
                    ipv4,
                    ipv6,
                    ipv6_vs_ipv4: cmp,
                    median,
                });
            }
        }
        let (series, cdfs) = (series(order, records), cdfs(order, records));
        Self {
            rows,
            index,
            runs: records.len(),
            flows,
            values: run_values,
            series,
            cdfs,
            metrics: vocabulary.metrics().to_vec(),
        }
    }

    /// Whether a point has figures of a flow (the measured flow always counts).
    pub fn has(&self, p: &str, flow: u8) -> bool {
        flow == 0
            || self.metrics.iter().any(|m| {
                self.row(
                    p,
                    &Column {
                        metric: *m,
                        unit: m.default_unit(),
                        flow,
                        router: None,
                    },
                )
                .is_some()
            })
    }
}

fn is_zero(v: &u8) -> bool {
    *v == 0
}

/// Each run's throughput over time (`send --interval`), in plan order.
fn series(order: &[String], records: &[RunRecord]) -> Vec<RunSeries> {
    order
        .iter()
        .flat_map(|point| records.iter().filter(move |r| &r.point == point))
        .filter_map(|r| {
            let intervals = r.report.as_ref()?.flows.first()?.intervals.as_ref()?;
            let start = intervals.first()?.start_ns;
            let throughput = intervals
                .iter()
                .filter_map(|i| {
                    let t = i.end_ns.saturating_sub(start) as f64 / 1e9;
                    i.bitrate_bps.map(|b| (t, b))
                })
                .collect::<Vec<_>>();
            (!throughput.is_empty()).then(|| RunSeries {
                point: r.point.clone(),
                family: r.run.family,
                throughput,
            })
        })
        .collect()
}

/// Each run's delay distribution (`send --cdf`, 101 points), in plan order.
fn cdfs(order: &[String], records: &[RunRecord]) -> Vec<RunCdf> {
    order
        .iter()
        .flat_map(|point| records.iter().filter(move |r| &r.point == point))
        .filter_map(|r| {
            let flow = r.report.as_ref()?.flows.first()?;
            let delay_ns = flow.delay_cdf_ns.clone().filter(|c| c.len() == 101)?;
            Some(RunCdf {
                point: r.point.clone(),
                family: r.run.family,
                round_trip: flow.rtt.is_some(),
                delay_ns,
            })
        })
        .collect()
}
