//! One unit per metric on a page, chosen from the data's magnitude, and numbers with
//! sensible digits: every table, plot and caption of a report gives a metric in the
//! same unit (RTT in µs everywhere, not in ms in one table and µs in the next).

use std::collections::BTreeMap;

use lab::tables::Column;
use results::metric::{Metric, Unit};

use crate::stats::Results;
use crate::tables::Table;

/// The unit for values of a metric: the largest unit in which their median magnitude
/// is at least 1 (2 µs … 3 ms with a median of 40 µs: µs), so that typical values read
/// with few leading zeros and few digits. Zeros and non-finite values do not count;
/// with none left, the metric's default unit.
pub fn choose(metric: &Metric, values: impl IntoIterator<Item = f64>) -> Unit {
    let mut mags: Vec<f64> = values
        .into_iter()
        .map(f64::abs)
        .filter(|v| v.is_finite() && *v > 0.0)
        .collect();
    if mags.is_empty() {
        return metric.default_unit();
    }
    mags.sort_by(f64::total_cmp);
    let median = meter::stats::quantile_linear(&mags, 0.5).unwrap_or(mags[0]);
    let steps = metric.units.ladder;
    let (name, scale) = steps
        .iter()
        .rev()
        .find(|(_, s)| median / s >= 1.0)
        .unwrap_or(&steps[0]);
    Unit {
        name: (*name).to_owned(),
        scale: *scale,
    }
}

/// The unit of each metric family on a page: metrics of one [`Metric::family`] share one
/// (the delays `rtt`, `owd`, `delay`; the jitters), each other metric has its own.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PageUnits {
    units: BTreeMap<&'static str, Unit>,
}

impl PageUnits {
    /// The page's unit of a metric, if a table on the page shows it.
    pub fn of(&self, m: &Metric) -> Option<&Unit> {
        self.units.get(m.family)
    }

    /// The page's unit of a metric, else one chosen from `values`.
    pub fn or_choose(&self, m: &Metric, values: impl IntoIterator<Item = f64>) -> Unit {
        self.of(m).cloned().unwrap_or_else(|| choose(m, values))
    }
}

/// Gives every column of a metric family on the page one unit, chosen ([`choose`]) from
/// the means of every row any table shows of it, declared tables included: a plan's
/// `rtt:ms` over loopback's 20 µs becomes µs, and the paper's numbers beside it are
/// converted to the same unit. The titles made up from a column's heading follow.
pub fn harmonise(tables: &mut [Table], results: &Results) -> PageUnits {
    let mut values: BTreeMap<&'static str, (Metric, Vec<f64>)> = BTreeMap::new();
    for t in tables.iter() {
        for c in &t.metrics {
            let entry = values
                .entry(c.metric.family)
                .or_insert_with(|| (c.metric, Vec::new()));
            for r in &t.rows {
                if let Some(row) = results.row(&r.point, c) {
                    entry
                        .1
                        .extend(row.ipv4.iter().chain(&row.ipv6).map(|s| s.mean));
                }
            }
        }
    }
    let units = PageUnits {
        units: values
            .into_iter()
            .map(|(k, (m, v))| (k, choose(&m, v)))
            .collect(),
    };
    for t in tables.iter_mut() {
        for i in 0..t.metrics.len() {
            let Some(unit) = units.of(&t.metrics[i].metric).cloned() else {
                continue;
            };
            let old: Column = t.metrics[i].clone();
            if old.unit == unit {
                continue;
            }
            t.metrics[i].unit = unit.clone();
            for numbers in t.paper.values_mut() {
                if let Some(Some(v)) = numbers.get_mut(i) {
                    *v *= old.unit.scale / unit.scale;
                }
            }
            if !t.declared {
                t.title = t.title.replace(&old.heading(), &t.metrics[i].heading());
            }
        }
    }
    units
}

/// Decimals that give `v` three significant digits (0 for |v| ≥ 100, at most 6).
fn sig3_decimals(v: f64) -> Option<usize> {
    let a = v.abs();
    (a > 0.0 && a.is_finite()).then(|| (2 - a.log10().floor() as i32).clamp(0, 6) as usize)
}

/// A value with three significant digits (85.1, 0.162, 14948), never in exponent form.
pub fn num(v: f64) -> String {
    let d = sig3_decimals(v).unwrap_or(0);
    format!("{v:.d$}")
}

/// A mean and its interval in one number format: three significant digits of the
/// value, or enough for two significant digits of the interval's half-width when it is
/// narrower (the GUM's rule, JCGM 100:2008 §7.2.6: the uncertainty to two digits, the
/// value to the same place), at most two digits more than the value's three and at
/// most 6 decimals. The decimals of `mean`, `low` and `high`.
pub fn decimals(mean: f64, interval: Option<(f64, f64)>) -> usize {
    let of_mean = sig3_decimals(mean);
    let of_interval = interval
        .map(|(l, h)| (h - l) / 2.0)
        .filter(|w| *w > 0.0 && w.is_finite())
        .map(|w| (1 - w.log10().floor() as i32).clamp(0, 6) as usize);
    match (of_mean, of_interval) {
        (Some(m), Some(i)) => i.clamp(m, m + 2),
        (Some(m), None) => m,
        (None, Some(i)) => i,
        (None, None) => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use results::metric;

    #[test]
    fn a_unit_is_chosen_from_the_typical_magnitude() {
        let rtt = choose(&metric::RTT, [2e3, 20e3, 40e3, 3e6]);
        assert_eq!((rtt.name.as_str(), rtt.scale), ("µs", 1e3));
        assert_eq!(choose(&metric::RTT, [1.5e6, 9e6]).name, "ms");
        assert_eq!(choose(&metric::RTT, [500.0, 800.0]).name, "ns");
        assert_eq!(choose(&metric::RTT, [2e9]).name, "s");
        assert_eq!(choose(&metric::THROUGHPUT, [74e3, 9e3]).name, "kbit/s");
        assert_eq!(choose(&metric::THROUGHPUT, [368e6, 15e6]).name, "Mbit/s");
        assert_eq!(choose(&metric::THROUGHPUT, [9.4e9]).name, "Gbit/s");
        assert_eq!(choose(&metric::THROUGHPUT, [12.0]).name, "bit/s");
        assert_eq!(choose(&metric::LOSS, [0.01, 0.0]).name, "%");
        // Nothing but zeros: the default.
        assert_eq!(choose(&metric::JITTER, [0.0, 0.0]).name, "µs");
        assert_eq!(choose(&metric::JITTER, []).name, "µs");
        // A one-way delay below zero counts by its size.
        assert_eq!(choose(&metric::OWD, [-4e6, 5e6]).name, "ms");
    }

    #[test]
    fn numbers_keep_three_significant_digits_and_their_intervals_two() {
        assert_eq!(num(85.054164), "85.1");
        assert_eq!(num(0.1623), "0.162");
        assert_eq!(num(14947.91), "14948");
        assert_eq!(num(0.0), "0");
        assert_eq!(num(0.0000012), "0.000001");
        assert_eq!(decimals(254.38, Some((45.7, 371.1))), 0);
        // A narrow interval gets the digits that show it, two beyond the value's at most.
        assert_eq!(decimals(368.72, Some((368.70, 368.73))), 2);
        assert_eq!(decimals(15.345, Some((15.312, 15.363))), 3);
        assert_eq!(decimals(5.12, Some((5.1208, 5.1210))), 4);
        assert_eq!(decimals(0.0, Some((0.0, 0.0))), 0);
        assert_eq!(decimals(0.0, Some((-12.0, 14.0))), 0);
        assert_eq!(decimals(2.5, None), 2);
    }
}
