//! Statistics across repetitions: the mean of a metric over repeated runs
//! with its Student-t confidence interval, and Welch's t-test of IPv6 against
//! IPv4.
//!
//! Each repetition contributes **one value** of a metric (one run's mean
//! delay, its loss percentage, its goodput…), so a [`Sample`] describes the
//! spread *between runs*, and its confidence interval is for the mean of
//! repetitions, not for single packets. The caller's metric carries the unit;
//! the fields here are unit-neutral.
//!
//! # Figures
//!
//! For values `x₁ … xₙ` ([`Sample`]):
//! - `mean = Σxᵢ / n`;
//! - `sd = sqrt(Σ(xᵢ − mean)² / (n − 1))`, the sample (Bessel-corrected)
//!   standard deviation;
//! - `se = sd / √n`, the standard error of the mean;
//! - `ci_low, ci_high = mean ∓ t(1 − (1 − level)/2; n − 1) · se`, the
//!   two-sided confidence interval for the mean with Student's t quantile at
//!   `n − 1` degrees of freedom. It assumes the run values are independent
//!   and roughly normal; with few runs it is wide, as it should be.
//!
//! `sd`, `se` and the interval are `None` (serialised as `null`) when `n < 2`.
//!
//! For a metric that cannot be negative (a rate, a round-trip time, a jitter, a
//! loss percentage), [`Sample::bootstrap`] gives instead the **percentile
//! bootstrap** interval of the mean (Efron & Tibshirani, *An Introduction to
//! the Bootstrap*, 1993, §13.3): the `(1 − level)/2` and `1 − (1 − level)/2`
//! quantiles (Hyndman & Fan type 7) of the means of [`BOOTSTRAP_RESAMPLES`]
//! resamples drawn with replacement. Every resample's mean lies between the
//! smallest and the largest run value, so the interval never leaves the
//! metric's range: a Student-t interval around a mean pulled up by one slow
//! run can reach below zero. The resamples come from a generator seeded with
//! the values themselves, so the same runs always give the same interval. With
//! few runs the percentile interval is narrower than it should be (it covers
//! less than `level`); [`Sample::interval`] says which one a sample carries.
//!
//! Beside the mean, [`Median`] gives the **median** of the run values with the
//! percentile bootstrap interval of the median (the same resampling, the statistic
//! being the median), and [`compare_medians`] the difference of two medians with its
//! two-sample bootstrap interval (Efron & Tibshirani 1993, §16.2): a centre one slow
//! run cannot move, for skewed figures such as delays.
//!
//! For a baseline `a` (IPv4) and a candidate `b` (IPv6) ([`compare`], Welch
//! 1947; NIST/SEMATECH e-Handbook of Statistical Methods §1.3.5.3):
//! - `diff = mean_b − mean_a` and `rel_diff_pct = diff / mean_a · 100`;
//! - `t = diff / sqrt(sd_a²/n_a + sd_b²/n_b)`;
//! - `df = (v_a + v_b)² / (v_a²/(n_a − 1) + v_b²/(n_b − 1))` with
//!   `v = sd²/n` (Welch–Satterthwaite);
//! - `p = P(|T_df| ≥ |t|)`, two-sided;
//! - the [`Verdict`]: significant when `p < alpha`. A difference that is not
//!   significant is reported as [`Verdict::NotSignificant`], whatever its
//!   size: it is not evidence that IPv6 and IPv4 differ.
//!
//! # Numerics
//!
//! Student's t distribution needs no statistics crate: its tail is a
//! regularized incomplete beta function (Abramowitz & Stegun 26.7.1 with
//! 26.5.27), evaluated by its continued fraction (A&S 26.5.8, in the
//! contracted form of DiDonato & Morris that stays accurate for large
//! degrees of freedom) with the modified Lentz method (Numerical Recipes,
//! 3rd ed., §5.2 and §6.4); `ln Γ` comes from Lanczos' approximation, and
//! Stirling's series where a difference of two large `ln Γ` would cancel.
//! Quantiles are found by bisection to full `f64` precision. Nothing here
//! returns NaN: undefined figures are `None`.

use serde::{Deserialize, Serialize};

use crate::stats::Stats;

/// The usual confidence level of [`Sample`] intervals: 95 %.
pub const DEFAULT_LEVEL: f64 = 0.95;

/// The usual significance level of [`compare`]: 5 %.
pub const DEFAULT_ALPHA: f64 = 0.05;

/// Resamples of [`Sample::bootstrap`].
pub const BOOTSTRAP_RESAMPLES: usize = 10_000;

/// The fewest runs a side for [`compare_medians`] to give a verdict. Below it the
/// bootstrap of a median takes only a handful of distinct values (3 runs: the median
/// of a resample is one of the 3), and the percentile interval covers far less often
/// than its level says (Efron & Tibshirani 1993, §13.3 and §14: percentile intervals
/// undercover in small samples); the interval is still shown, the verdict is
/// `Undefined`.
pub const MEDIAN_VERDICT_MIN_RUNS: usize = 5;

/// How a [`Sample`]'s confidence interval was computed.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum Interval {
    /// `mean ∓ t · se`, Student's t at `n − 1` degrees of freedom.
    #[default]
    StudentT,
    /// Quantiles of resampled means (Efron & Tibshirani 1993, §13.3); never outside
    /// the run values' range.
    PercentileBootstrap,
}

/// Summary of one metric over `n` repetitions (one value per run).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Sample {
    /// Number of repetitions.
    pub n: u64,
    /// Mean of the run values.
    pub mean: f64,
    /// Sample standard deviation, `sqrt(Σ(x − mean)² / (n − 1))`; `None` when
    /// `n < 2`.
    pub sd: Option<f64>,
    /// Standard error of the mean, `sd / √n`; `None` when `n < 2`.
    pub se: Option<f64>,
    /// Lower end of the two-sided Student-t confidence interval for the
    /// mean; `None` when `n < 2`.
    pub ci_low: Option<f64>,
    /// Upper end of that interval; `None` when `n < 2`.
    pub ci_high: Option<f64>,
    /// Confidence level of the interval as a fraction (0.95 for 95 %).
    pub level: f64,
    /// How the interval was computed.
    #[serde(default)]
    pub interval: Interval,
}

impl Sample {
    /// Summary of the run values with a `level` confidence interval (e.g.
    /// [`DEFAULT_LEVEL`]); `None` when `values` is empty, a value or the
    /// mean is not finite, or `level` is not strictly between 0 and 1.
    pub fn new(values: &[f64], level: f64) -> Option<Self> {
        let stats = Stats::from_f64(values)?;
        Self::from_summary(stats.count, stats.mean, stats.stddev_sample, level)
    }

    /// Summary from already known moments: `n` runs, their `mean` and sample
    /// standard deviation `sd` (ignored when `n < 2`). `None` when `n == 0`,
    /// `mean` is not finite, `sd` is missing, negative or not finite while
    /// `n ≥ 2`, or `level` is not strictly between 0 and 1.
    pub fn from_summary(n: u64, mean: f64, sd: Option<f64>, level: f64) -> Option<Self> {
        if n == 0 || !mean.is_finite() || !(level > 0.0 && level < 1.0) {
            return None;
        }
        if n < 2 {
            return Some(Self {
                n,
                mean,
                sd: None,
                se: None,
                ci_low: None,
                ci_high: None,
                level,
                interval: Interval::StudentT,
            });
        }
        let sd = sd.filter(|sd| sd.is_finite() && *sd >= 0.0)?;
        let se = sd / (n as f64).sqrt();
        // The upper-tail probability (1 − level)/2 is passed as such, not as
        // 1 − (1 − level)/2, so levels close to 1 lose no precision. Both
        // ends or neither: a one-sided interval would misread.
        let ci = t_upper_quantile((1.0 - level) / 2.0, (n - 1) as f64)
            .and_then(|q| Some((finite(mean - q * se)?, finite(mean + q * se)?)));
        Some(Self {
            n,
            mean,
            sd: Some(sd),
            se: Some(se),
            ci_low: ci.map(|(low, _)| low),
            ci_high: ci.map(|(_, high)| high),
            level,
            interval: Interval::StudentT,
        })
    }

    /// [`Sample::new`] with the percentile bootstrap interval of the mean instead
    /// of Student's (module docs): for metrics that cannot be negative.
    pub fn bootstrap(values: &[f64], level: f64) -> Option<Self> {
        let mut s = Self::new(values, level)?;
        s.interval = Interval::PercentileBootstrap;
        if s.n < 2 {
            return Some(s);
        }
        let mean = |resample: &mut [f64]| resample.iter().sum::<f64>() / resample.len() as f64;
        match percentile_bootstrap(values, level, mean) {
            Some((low, high)) => (s.ci_low, s.ci_high) = (Some(low), Some(high)),
            None => (s.ci_low, s.ci_high) = (None, None),
        }
        Some(s)
    }
}

/// The percentile bootstrap interval of `statistic` over `values` (Efron & Tibshirani,
/// *An Introduction to the Bootstrap*, 1993, §13.3): the `(1 − level)/2` and
/// `1 − (1 − level)/2` quantiles (Hyndman & Fan type 7) of the statistic of
/// [`BOOTSTRAP_RESAMPLES`] resamples drawn with replacement. The generator is seeded
/// with the values, so the same runs always give the same interval. `None` with fewer
/// than two values or an end that is not finite. `statistic` gets each resample in the
/// order it was drawn and may reorder it.
fn percentile_bootstrap(
    values: &[f64],
    level: f64,
    statistic: impl Fn(&mut [f64]) -> f64,
) -> Option<(f64, f64)> {
    let n = values.len();
    if n < 2 || !(level > 0.0 && level < 1.0) {
        return None;
    }
    // Seeded by the values, so a report is the same each time it is made.
    let mut state = values
        .iter()
        .fold(0x5eed_u64, |acc, v| splitmix64(&mut (acc ^ v.to_bits())));
    let mut resample = vec![0.0; n];
    let mut stats: Vec<f64> = (0..BOOTSTRAP_RESAMPLES)
        .map(|_| {
            for slot in resample.iter_mut() {
                *slot = values[(splitmix64(&mut state) % n as u64) as usize];
            }
            statistic(&mut resample)
        })
        .collect();
    stats.sort_by(f64::total_cmp);
    let tail = (1.0 - level) / 2.0;
    let low = crate::stats::quantile_linear(&stats, tail).and_then(finite)?;
    let high = crate::stats::quantile_linear(&stats, 1.0 - tail).and_then(finite)?;
    Some((low, high))
}

/// The median of values (Hyndman & Fan type 7 at ½: the middle value, or the mean of
/// the two middle ones); sorts them. `None` when empty.
pub(crate) fn median_of(values: &mut [f64]) -> Option<f64> {
    values.sort_by(f64::total_cmp);
    crate::stats::quantile_linear(values, 0.5)
}

/// The median of a metric over `n` repetitions (one value per run) and its percentile
/// bootstrap interval (Efron & Tibshirani 1993, §13.3, the statistic being the median):
/// the centre a report compares beside the mean when one slow run should not move it.
///
/// The median of a resample is one of the run values (or the mean of two, for an even
/// `n`), so the interval is coarse with few runs: with three runs it reaches nearly from
/// the smallest to the largest. It never leaves the runs' range.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Median {
    /// Number of repetitions.
    pub n: u64,
    /// Median of the run values.
    pub median: f64,
    /// Lower end of the percentile bootstrap interval of the median; `None` when
    /// `n < 2`.
    pub ci_low: Option<f64>,
    /// Upper end of that interval; `None` when `n < 2`.
    pub ci_high: Option<f64>,
    /// Confidence level of the interval as a fraction (0.95 for 95 %).
    pub level: f64,
}

impl Median {
    /// The median of the run values with its `level` bootstrap interval; `None` when
    /// `values` is empty, a value is not finite or `level` is not strictly between 0
    /// and 1.
    pub fn bootstrap(values: &[f64], level: f64) -> Option<Self> {
        if values.is_empty()
            || values.iter().any(|v| !v.is_finite())
            || !(level > 0.0 && level < 1.0)
        {
            return None;
        }
        let median = median_of(&mut values.to_vec())?;
        let ci = percentile_bootstrap(values, level, |r| median_of(r).unwrap_or(f64::NAN));
        Some(Self {
            n: values.len() as u64,
            median,
            ci_low: ci.map(|c| c.0),
            ci_high: ci.map(|c| c.1),
            level,
        })
    }
}

/// IPv6's (`b`) median against IPv4's (`a`): their difference and its percentile
/// bootstrap interval, each side resampled on its own (the two-sample bootstrap of
/// Efron & Tibshirani 1993, §16.2, with the percentile interval of §13.3).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct MedianComparison {
    /// `median_b − median_a`, in the metric's unit.
    pub diff: f64,
    /// `(median_b − median_a) / median_a · 100`; `None` when `median_a == 0`.
    pub rel_diff_pct: Option<f64>,
    /// Lower end of the bootstrap interval of the difference; `None` with fewer than
    /// two runs on a side.
    pub ci_low: Option<f64>,
    /// Upper end of that interval.
    pub ci_high: Option<f64>,
    /// Confidence level of the interval (0.95 for 95 %).
    pub level: f64,
    /// `Significant` when the interval leaves out 0 (a test at `1 − level` by the
    /// duality of tests and intervals), `NotSignificant` when it holds 0, `Undefined`
    /// with fewer than two runs on a side or when every resample gives the same
    /// non-zero difference (both sides constant: nothing to test against).
    pub verdict: Verdict,
}

/// Compares the median of `b` (IPv6's runs) with that of `a` (IPv4's) at confidence
/// `level` ([`MedianComparison`]); `None` when a side is empty, a value is not finite
/// or `level` is not strictly between 0 and 1.
pub fn compare_medians(a: &[f64], b: &[f64], level: f64) -> Option<MedianComparison> {
    let (ma, mb) = (Median::bootstrap(a, level)?, Median::bootstrap(b, level)?);
    let diff = finite(mb.median - ma.median)?;
    let rel_diff_pct = if ma.median == 0.0 {
        None
    } else {
        finite(diff / ma.median * 100.0)
    };
    // One sequence of draws over both sides: resample a, then b, from a generator
    // seeded by both, so the same runs always give the same interval.
    let ci = (a.len() >= 2 && b.len() >= 2)
        .then(|| {
            let joined: Vec<f64> = a.iter().chain(b).copied().collect();
            let mut state = joined
                .iter()
                .fold(0xd1ff_u64, |acc, v| splitmix64(&mut (acc ^ v.to_bits())));
            let mut draw = |side: &[f64]| -> f64 {
                let mut r: Vec<f64> = (0..side.len())
                    .map(|_| side[(splitmix64(&mut state) % side.len() as u64) as usize])
                    .collect();
                median_of(&mut r).unwrap_or(f64::NAN)
            };
            let mut diffs: Vec<f64> = (0..BOOTSTRAP_RESAMPLES)
                .map(|_| {
                    let da = draw(a);
                    draw(b) - da
                })
                .collect();
            diffs.sort_by(f64::total_cmp);
            let tail = (1.0 - level) / 2.0;
            let low = crate::stats::quantile_linear(&diffs, tail).and_then(finite)?;
            let high = crate::stats::quantile_linear(&diffs, 1.0 - tail).and_then(finite)?;
            Some((low, high))
        })
        .flatten();
    let verdict = match ci {
        None => Verdict::Undefined,
        Some(_) if a.len().min(b.len()) < MEDIAN_VERDICT_MIN_RUNS => Verdict::Undefined,
        Some((l, h)) if l == h && l != 0.0 => Verdict::Undefined,
        Some((l, h)) if l > 0.0 || h < 0.0 => Verdict::Significant,
        Some(_) => Verdict::NotSignificant,
    };
    Some(MedianComparison {
        diff,
        rel_diff_pct,
        ci_low: ci.map(|c| c.0),
        ci_high: ci.map(|c| c.1),
        level,
        verdict,
    })
}

/// SplitMix64 (Steele, Lea & Flood 2014): the bootstrap's resampling.
pub(crate) fn splitmix64(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Outcome of [`compare`] at its significance level.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// `p < alpha`: the means differ beyond what run-to-run spread explains.
    Significant,
    /// `p ≥ alpha`: the data do not show a difference. This is reported as
    /// such, however large `rel_diff_pct` is; it is not a finding that the
    /// two stacks differ (nor proof that they are equal).
    NotSignificant,
    /// The test cannot be computed: fewer than two runs on a side, or both
    /// sides constant with different means (see [`compare`]).
    Undefined,
}

/// IPv6 (`b`) against IPv4 (`a`) for one metric: difference of the means and
/// Welch's unequal-variances t-test.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Comparison {
    /// `mean_b − mean_a`, in the metric's unit.
    pub diff: f64,
    /// `(mean_b − mean_a) / mean_a · 100`; `None` when `mean_a == 0`. The
    /// denominator is signed, as the formula says: for a metric that can be
    /// negative, read `diff` for the direction.
    pub rel_diff_pct: Option<f64>,
    /// Welch's t statistic, `diff / sqrt(sd_a²/n_a + sd_b²/n_b)`; positive
    /// when `b` has the larger mean.
    pub t: Option<f64>,
    /// Welch–Satterthwaite degrees of freedom.
    pub df: Option<f64>,
    /// Two-sided p-value, `P(|T_df| ≥ |t|)`.
    pub p: Option<f64>,
    /// Significance level the verdict was taken at.
    pub alpha: f64,
    /// `Significant` when `p < alpha`, else `NotSignificant`; `Undefined`
    /// when `p` is.
    pub verdict: Verdict,
    /// Hedges' g, the difference in pooled standard deviations with the small-sample
    /// correction (Hedges & Olkin, *Statistical Methods for Meta-Analysis*, 1985,
    /// §5.A): `J · diff / s_p`, `s_p² = ((n_a − 1) sd_a² + (n_b − 1) sd_b²) / (n_a +
    /// n_b − 2)`, `J = 1 − 3 / (4 (n_a + n_b) − 9)`. How large a difference is, beside
    /// `p`, which says only whether the runs show one; `None` with fewer than two runs
    /// on a side or no spread at all.
    #[serde(default)]
    pub effect_size_g: Option<f64>,
}

/// Compares candidate `b` (IPv6) with baseline `a` (IPv4) at significance
/// level `alpha` (e.g. [`DEFAULT_ALPHA`]) by Welch's t-test.
///
/// Edge cases: with fewer than two runs on either side, `t`, `df` and `p` are
/// `None` and the verdict is [`Verdict::Undefined`]. When both sides are
/// constant (both `sd == 0`) the statistic is `0/0`: if the means are equal
/// too, there is no difference to explain, so `t = 0`, `p = 1` and the
/// verdict is [`Verdict::NotSignificant`] (the limit of every sample pair
/// with equal means), but `df` stays `None`; if the means differ, the test
/// is [`Verdict::Undefined`] and only `diff` speaks.
///
/// Returns `None` when `alpha` is not strictly between 0 and 1, a side has
/// no runs, or a mean or the difference is not finite.
pub fn compare(a: &Sample, b: &Sample, alpha: f64) -> Option<Comparison> {
    if !(alpha > 0.0 && alpha < 1.0) || a.n == 0 || b.n == 0 {
        return None;
    }
    let diff = finite(b.mean - a.mean)?;
    let rel_diff_pct = if a.mean == 0.0 {
        None
    } else {
        finite(diff / a.mean * 100.0)
    };
    let (t, df, p) = match welch(a, b, diff) {
        Some((t, df, p)) => (Some(t), df, Some(p)),
        None => (None, None, None),
    };
    let verdict = match p {
        Some(p) if p < alpha => Verdict::Significant,
        Some(_) => Verdict::NotSignificant,
        None => Verdict::Undefined,
    };
    Some(Comparison {
        diff,
        rel_diff_pct,
        t,
        df,
        p,
        alpha,
        verdict,
        effect_size_g: hedges_g(a, b, diff),
    })
}

/// Hedges' g of `b` against `a` ([`Comparison::effect_size_g`]).
fn hedges_g(a: &Sample, b: &Sample, diff: f64) -> Option<f64> {
    let (sd_a, sd_b) = (a.sd?, b.sd?);
    if a.n < 2 || b.n < 2 {
        return None;
    }
    let (na, nb) = (a.n as f64, b.n as f64);
    let pooled = (((na - 1.0) * sd_a * sd_a + (nb - 1.0) * sd_b * sd_b) / (na + nb - 2.0)).sqrt();
    if pooled.is_nan() || pooled <= 0.0 {
        return None;
    }
    let j = 1.0 - 3.0 / (4.0 * (na + nb) - 9.0);
    finite(j * diff / pooled)
}

/// Welch's `(t, df, p)`; `df` is `None` only for two equal constants.
fn welch(a: &Sample, b: &Sample, diff: f64) -> Option<(f64, Option<f64>, f64)> {
    let side = |s: &Sample| {
        let sd = s.sd.filter(|sd| s.n >= 2 && sd.is_finite() && *sd >= 0.0)?;
        Some((sd / (s.n as f64).sqrt(), (s.n - 1) as f64))
    };
    let ((se_a, df_a), (se_b, df_b)) = (side(a)?, side(b)?);
    // hypot: sd²/n would overflow for sd > 1e154.
    let se = se_a.hypot(se_b);
    if se == 0.0 {
        return (diff == 0.0).then_some((0.0, None, 1.0));
    }
    // Welch–Satterthwaite in terms of the share w = v_a / (v_a + v_b): the
    // textbook formula divided through by (v_a + v_b)², free of overflow and
    // of 0/0 when one side is constant.
    let w = (se_a / se) * (se_a / se);
    let df = 1.0 / (w * w / df_a + (1.0 - w) * (1.0 - w) / df_b);
    let t = finite(diff / se)?;
    Some((t, Some(df), t_two_sided_p(t, df)?))
}

/// Student's t cumulative distribution `P(T ≤ t)` with `df` degrees of
/// freedom (any real `df > 0`); `None` when `t` is NaN or `df` is not a
/// positive number.
pub fn t_cdf(t: f64, df: f64) -> Option<f64> {
    if t.is_nan() {
        return None;
    }
    let upper = t_upper_tail(t.abs(), df)?;
    Some(if t < 0.0 { upper } else { 1.0 - upper })
}

/// Student's t quantile: the `t` with `P(T ≤ t) = p`; `None` unless
/// `0 < p < 1` and `df > 0`.
pub fn t_quantile(p: f64, df: f64) -> Option<f64> {
    if !(p > 0.0 && p < 1.0) {
        return None;
    }
    if p > 0.5 {
        // Exact for p ≥ 0.5 (Sterbenz).
        t_upper_quantile(1.0 - p, df)
    } else {
        t_upper_quantile(p, df).map(|t| -t)
    }
}

/// Two-sided p-value `P(|T| ≥ |t|) = I_x(df/2, 1/2)`, `x = df/(df + t²)`
/// (A&S 26.7.1 and 26.5.27).
pub(crate) fn t_two_sided_p(t: f64, df: f64) -> Option<f64> {
    t_upper_tail(t.abs(), df).map(|q| (2.0 * q).min(1.0))
}

/// Upper tail `P(T ≥ t)` for `t ≥ 0`: half the two-sided probability.
fn t_upper_tail(t: f64, df: f64) -> Option<f64> {
    if !df.is_finite() || df <= 0.0 {
        return None;
    }
    // x = df/(df + t²) and y = 1 − x = t²/(df + t²), each computed without
    // subtracting from 1: with large df, x is within 1e-10 of 1 and y carries
    // all the information.
    let (x, y) = if t * t <= df {
        let s = t * t / df;
        (1.0 / (1.0 + s), s / (1.0 + s))
    } else {
        let r = df / (t * t);
        (r / (1.0 + r), 1.0 / (1.0 + r))
    };
    reg_inc_beta(df / 2.0, 0.5, x, y).map(|i| i / 2.0)
}

/// The `t ≥ 0` with `P(T ≥ t) = q`, for `0 < q ≤ 1/2`, by bisection on the
/// upper tail (a decreasing function of `t`) until the bracket cannot shrink.
pub(crate) fn t_upper_quantile(q: f64, df: f64) -> Option<f64> {
    if !(q > 0.0 && q <= 0.5) {
        return None;
    }
    if q == 0.5 {
        return Some(0.0);
    }
    // Bracket: the tail is 1/2 at 0; double `hi` until the tail drops to q.
    let (mut lo, mut hi) = (0.0_f64, 1.0_f64);
    while t_upper_tail(hi, df)? > q {
        lo = hi;
        hi *= 2.0;
        if hi.is_infinite() {
            return None;
        }
    }
    loop {
        let mid = lo + (hi - lo) / 2.0;
        if mid <= lo || mid >= hi {
            return Some(if q - t_upper_tail(hi, df)? < t_upper_tail(lo, df)? - q {
                hi
            } else {
                lo
            });
        }
        if t_upper_tail(mid, df)? > q {
            lo = mid;
        } else {
            hi = mid;
        }
    }
}

/// Regularized incomplete beta function `I_x(a, b)`, given `x` and
/// `y = 1 − x` separately so that neither loses precision near 1.
///
/// `I_x(a,b) = x^a y^b / B(a,b) / F(a, b, x, y)` with the continued fraction
/// `F` of [`beta_cf`], using the symmetry `I_x(a,b) = 1 − I_y(b,a)` where
/// `F` converges slowly, i.e. for `x ≥ (a+1)/(a+b+2)` (Numerical Recipes,
/// 3rd ed., §6.4). The test is made on `y`: for df = 10¹⁸, `x` rounds to 1.
fn reg_inc_beta(a: f64, b: f64, x: f64, y: f64) -> Option<f64> {
    if x <= 0.0 {
        return Some(0.0);
    }
    if y <= 0.0 {
        return Some(1.0);
    }
    let ln = |v: f64, one_minus_v: f64| {
        if v < 0.5 {
            v.ln()
        } else {
            (-one_minus_v).ln_1p()
        }
    };
    let front = (a * ln(x, y) + b * ln(y, x) - ln_beta(a, b)).exp();
    let value = if y > (b + 1.0) / (a + b + 2.0) {
        front / beta_cf(a, b, x, y)?
    } else {
        1.0 - front / beta_cf(b, a, y, x)?
    };
    Some(value.clamp(0.0, 1.0))
}

/// The continued fraction `F = β₀ + α₁/(β₁ + α₂/(β₂ + …))` of `I_x(a, b)`,
/// evaluated by the modified Lentz method (NR §5.2); `None` if it does not
/// converge.
///
/// This is A&S 26.5.8 (the fraction of NR §6.4) contracted to its even part
/// and written with `y = 1 − x` where the textbook form has `1 − (a+b)x/…`,
/// as in DiDonato & Morris (ACM TOMS 18, 1992, BFRAC) and Boost.Math's
/// `ibeta_fraction2`. With m = 0, 1, 2, …:
/// - `α_m = m(a+m−1)(a+b+m−1)(b−m)x² / (a+2m−1)²` (`α₀` unused),
/// - `β_m = m + m(b−m)x/(a+2m−1) + (a+m)(ay − bx + 1 + m(2−x))/(a+2m+1)`.
///
/// The textbook form cancels catastrophically when `x` is near 1 and `a` is
/// large (a relative error of ~`a·ε`: 1e-6 in the t tail at df = 10¹⁰);
/// this one kept the t tail within 1e-13 (relative) of an 80-digit
/// evaluation for df from 0.5 to 10³⁰ and |t| up to 10⁶.
fn beta_cf(a: f64, b: f64, x: f64, y: f64) -> Option<f64> {
    // Lentz's guard against a zero denominator, and the convergence bound.
    const TINY: f64 = 1e-300;
    const EPS: f64 = 1e-16;
    const MAX_ITER: u32 = 10_000;
    let guard = |v: f64| if v.abs() < TINY { TINY } else { v };
    let mut f = guard(a * (a * y - b * x + 1.0) / (a + 1.0));
    let (mut c, mut d) = (f, 0.0);
    for m in 1..=MAX_ITER {
        let m = f64::from(m);
        let k = a + 2.0 * m - 1.0;
        // Grouped so that no intermediate overflows when a or b is ~1e300.
        let alpha = (m * (a + m - 1.0) / k) * ((a + b + m - 1.0) * x / k) * ((b - m) * x);
        let beta = m
            + m * ((b - m) * x) / k
            + (a + m) * (a * y - b * x + 1.0 + m * (2.0 - x)) / (a + 2.0 * m + 1.0);
        d = 1.0 / guard(beta + alpha * d);
        c = guard(beta + alpha / c);
        let delta = c * d;
        f *= delta;
        if (delta - 1.0).abs() < EPS {
            return Some(f);
        }
    }
    None
}

/// `ln B(a, b) = ln Γ(a) + ln Γ(b) − ln Γ(a+b)` for `a, b > 0`.
///
/// When the larger argument `h` is big, `ln Γ(h) − ln Γ(h+l)` cancels
/// catastrophically (for a t with df = 10¹⁰ both terms are ~10¹¹), so it is
/// taken from Stirling's series instead (A&S 6.1.40):
/// `ln Γ(h) − ln Γ(h+l) = −(h − ½) ln(1 + l/h) − l ln(h+l) + l + δ(h) − δ(h+l)`.
fn ln_beta(a: f64, b: f64) -> f64 {
    let (l, h) = if a < b { (a, b) } else { (b, a) };
    if h < STIRLING_FROM {
        return ln_gamma(a) + ln_gamma(b) - ln_gamma(a + b);
    }
    ln_gamma(l) - (h - 0.5) * (l / h).ln_1p() - l * (h + l).ln() + l + stirling_delta(h)
        - stirling_delta(h + l)
}

/// Where [`stirling_delta`]'s seven terms are accurate to ~1e-15.
const STIRLING_FROM: f64 = 10.0;

/// `δ(x) = ln Γ(x) − [(x − ½) ln x − x + ½ ln 2π]` for `x ≥ 10`: the
/// asymptotic series `Σ B₂ₖ / (2k(2k−1) x^(2k−1))` (A&S 6.1.41), to `k = 7`.
fn stirling_delta(x: f64) -> f64 {
    const C: [f64; 7] = [
        1.0 / 12.0,
        -1.0 / 360.0,
        1.0 / 1260.0,
        -1.0 / 1680.0,
        1.0 / 1188.0,
        -691.0 / 360_360.0,
        1.0 / 156.0,
    ];
    let x2 = 1.0 / (x * x);
    C.iter().rev().fold(0.0, |acc, c| acc * x2 + c) / x
}

/// `ln Γ(x)` for `x > 0` by Lanczos' approximation with `g = 7`, nine
/// coefficients (relative error ~1e-15; coefficients as tabulated by Godfrey
/// and used in many libraries), and `Γ(x) = Γ(x+1)/x` below ½.
fn ln_gamma(x: f64) -> f64 {
    const G: f64 = 7.0;
    const C: [f64; 9] = [
        0.999_999_999_999_809_9,
        676.5203681218851,
        -1259.1392167224028,
        771.323_428_777_653_1,
        -176.615_029_162_140_6,
        12.507343278686905,
        -0.13857109526572012,
        9.984_369_578_019_572e-6,
        1.5056327351493116e-7,
    ];
    if x < 0.5 {
        return ln_gamma(x + 1.0) - x.ln();
    }
    let z = x - 1.0;
    let series = C[1..]
        .iter()
        .zip(1..)
        .fold(C[0], |acc, (c, i)| acc + c / (z + f64::from(i)));
    let t = z + G + 0.5;
    0.5 * (2.0 * std::f64::consts::PI).ln() + (z + 0.5) * t.ln() - t + series.ln()
}

/// `Some(v)` when `v` is finite.
pub(crate) fn finite(v: f64) -> Option<f64> {
    v.is_finite().then_some(v)
}

#[cfg(test)]
mod tests {
    //! Reference values, and where each comes from:
    //!
    //! - **Printed tables**: t quantiles to 4 decimals as in any Student-t
    //!   table (e.g. NIST/SEMATECH e-Handbook §1.3.6.7.2; A&S Table 26.10).
    //! - **Closed forms**: df = 1 is Cauchy, `P(T ≤ t) = ½ + atan(t)/π`;
    //!   df = 2 has `P(T ≤ t) = ½ + t / (2√(2 + t²))`.
    //! - **NIST**: e-Handbook §1.3.5.3, two-sample t-test worked example (car
    //!   mileage, US vs Japan, AUTO83B.DAT), from its printed summaries
    //!   (n, mean, sd); the unequal-variances result as reproduced by
    //!   Boost.Math's `example/students_t_two_samples.cpp`: T = -12.94627,
    //!   ν = 136.87499, two-sided p = 1.571e-25.
    //! - **scipy**: Python 3.11.7, scipy 1.17.1 (numpy 2.4.6), mpmath 1.4.1,
    //!   in a throwaway venv (`python3 -m venv /tmp/scipyenv &&
    //!   /tmp/scipyenv/bin/pip install scipy mpmath`). Each fixture names its
    //!   expression; all of them, to paste after
    //!   `import math, statistics, mpmath; from scipy import stats`:
    //!
    //! ```text
    //! stats.t.ppf(p, df); stats.t.cdf(t, df); stats.t.sf(t, df); stats.norm.ppf(0.975)
    //! x = [5.1, 4.9, 5.6, 5.8, 6.0, 5.5, 5.3]; n = len(x)
    //! m, s = statistics.mean(x), statistics.stdev(x); se = s / math.sqrt(n)
    //! q = stats.t.ppf(1 - (1 - level) / 2, n - 1); m - q * se, m + q * se
    //! r = stats.ttest_ind(b, a, equal_var=False); r.statistic, r.df, r.pvalue
    //! stats.ttest_ind_from_stats(30.48101, 6.10771, 79, 20.14458, 6.41470, 249,
    //!                            equal_var=False)
    //! va, vb = 6.41470**2 / 249, 6.10771**2 / 79
    //! (va + vb)**2 / (va**2 / 248 + vb**2 / 78)   # NIST df, full precision
    //! mpmath.mp.dps = 40; mpmath.log(mpmath.beta(a, b)); math.lgamma(100.5)
    //! ```
    //!
    //!   Welch fixtures pass `b` first because our t is `(mean_b − mean_a)/se`.

    use super::*;

    /// `|got − want| ≤ tol · |want|` (or `≤ tol` when `want == 0`).
    #[track_caller]
    fn close(got: f64, want: f64, tol: f64) {
        let scale = if want == 0.0 { 1.0 } else { want.abs() };
        assert!(
            (got - want).abs() <= tol * scale,
            "got {got:e}, want {want:e} (rel. tol {tol:e})"
        );
    }

    fn sample(values: &[f64]) -> Sample {
        Sample::new(values, DEFAULT_LEVEL).unwrap()
    }

    #[test]
    fn a_bootstrap_interval_stays_inside_the_runs_where_students_leaves_the_range() {
        // Four quick runs and one slow one: RTTs in µs.
        let runs = [4.0, 4.2, 3.9, 4.1, 990.0];
        let t = sample(&runs);
        assert!(
            t.ci_low.unwrap() < 0.0,
            "Student t reaches below zero: {t:?}"
        );
        let b = Sample::bootstrap(&runs, DEFAULT_LEVEL).unwrap();
        assert_eq!(b.interval, Interval::PercentileBootstrap);
        assert_eq!((b.n, b.mean, b.sd), (t.n, t.mean, t.sd));
        let (lo, hi) = (b.ci_low.unwrap(), b.ci_high.unwrap());
        assert!(
            3.9 <= lo && lo < b.mean && b.mean < hi && hi <= 990.0,
            "{b:?}"
        );
        // The same runs, the same interval.
        assert_eq!(Sample::bootstrap(&runs, DEFAULT_LEVEL), Some(b));
    }

    #[test]
    fn bootstrap_intervals_of_two_runs_and_of_constants_are_what_resampling_gives() {
        // Two runs: resampled means are a, (a+b)/2 and b with chances ¼, ½, ¼, so the
        // 2.5 % and 97.5 % quantiles of 10,000 of them are a and b.
        let b = Sample::bootstrap(&[10.0, 20.0], DEFAULT_LEVEL).unwrap();
        assert_eq!((b.ci_low, b.ci_high), (Some(10.0), Some(20.0)));
        let c = Sample::bootstrap(&[0.0; 5], DEFAULT_LEVEL).unwrap();
        assert_eq!((c.ci_low, c.ci_high), (Some(0.0), Some(0.0)));
        // One run: no interval, whatever the method.
        let one = Sample::bootstrap(&[7.0], DEFAULT_LEVEL).unwrap();
        assert_eq!((one.n, one.ci_low, one.ci_high), (1, None, None));
        assert_eq!(Sample::bootstrap(&[], DEFAULT_LEVEL), None);
    }

    #[test]
    fn medians_and_their_bootstrap_intervals_are_what_resampling_gives() {
        let m = Median::bootstrap(&[4.0, 4.2, 3.9, 4.1, 990.0], DEFAULT_LEVEL).unwrap();
        assert_eq!((m.n, m.median), (5, 4.1), "one slow run does not move it");
        let (lo, hi) = (m.ci_low.unwrap(), m.ci_high.unwrap());
        assert!(
            (3.9..=4.1).contains(&lo) && (4.1..=990.0).contains(&hi),
            "{m:?}"
        );
        // Two runs: resampled medians a, (a+b)/2, b with chances ¼, ½, ¼.
        let two = Median::bootstrap(&[10.0, 20.0], DEFAULT_LEVEL).unwrap();
        assert_eq!(
            (two.median, two.ci_low, two.ci_high),
            (15.0, Some(10.0), Some(20.0))
        );
        assert_eq!(
            Median::bootstrap(&[1.0, 4.0, 2.0, 3.0], DEFAULT_LEVEL)
                .unwrap()
                .median,
            2.5
        );
        let c = Median::bootstrap(&[3.0; 4], DEFAULT_LEVEL).unwrap();
        assert_eq!((c.ci_low, c.ci_high), (Some(3.0), Some(3.0)));
        let one = Median::bootstrap(&[7.0], DEFAULT_LEVEL).unwrap();
        assert_eq!(
            (one.n, one.median, one.ci_low, one.ci_high),
            (1, 7.0, None, None)
        );
        assert_eq!(Median::bootstrap(&[], DEFAULT_LEVEL), None);
        assert_eq!(Median::bootstrap(&[1.0, f64::NAN], DEFAULT_LEVEL), None);
        // The same runs, the same interval.
        assert_eq!(
            Median::bootstrap(&[4.0, 4.2, 3.9, 4.1, 990.0], DEFAULT_LEVEL),
            Some(m)
        );
    }

    #[test]
    fn medians_compare_by_the_bootstrap_interval_of_their_difference() {
        let a = [10.0, 11.0, 10.5, 10.2, 10.8, 10.1, 10.4];
        let b = [20.0, 21.0, 20.5, 20.2, 20.8, 20.1, 20.4];
        let c = compare_medians(&a, &b, DEFAULT_LEVEL).unwrap();
        close(c.diff, 10.0, 1e-12);
        close(c.rel_diff_pct.unwrap(), 10.0 / 10.4 * 100.0, 1e-12);
        assert_eq!(c.verdict, Verdict::Significant);
        let (lo, hi) = (c.ci_low.unwrap(), c.ci_high.unwrap());
        assert!(
            (9.0..=10.0).contains(&lo) && (10.0..=11.0).contains(&hi),
            "{c:?}"
        );
        // The same runs on both sides hold 0.
        let same = compare_medians(&a, &a, DEFAULT_LEVEL).unwrap();
        assert_eq!((same.diff, same.verdict), (0.0, Verdict::NotSignificant));
        assert!(same.ci_low.unwrap() < 0.0 && same.ci_high.unwrap() > 0.0);
        // One run on a side: no interval, no verdict.
        let one = compare_medians(&[10.0], &b, DEFAULT_LEVEL).unwrap();
        assert_eq!((one.ci_low, one.verdict), (None, Verdict::Undefined));
        close(one.diff, 10.4, 1e-12);
        // Two different constants: nothing to test against; two equal ones: no difference.
        let k = compare_medians(&[1.0; 5], &[2.0; 5], DEFAULT_LEVEL).unwrap();
        assert_eq!(k.verdict, Verdict::Undefined);
        let e = compare_medians(&[1.0; 5], &[1.0; 5], DEFAULT_LEVEL).unwrap();
        assert_eq!(e.verdict, Verdict::NotSignificant);
        // Fewer than 5 runs a side: an interval, but no verdict, however clear.
        let few = compare_medians(&a[..4], &b[..4], DEFAULT_LEVEL).unwrap();
        assert!(few.ci_low.unwrap() > 0.0, "{few:?}");
        assert_eq!(few.verdict, Verdict::Undefined);
        assert_eq!(compare_medians(&[], &b, DEFAULT_LEVEL), None);
        assert_eq!(
            compare_medians(&[0.0, 0.0], &[1.0, 1.0], DEFAULT_LEVEL)
                .unwrap()
                .rel_diff_pct,
            None
        );
    }

    #[test]
    fn hedges_g_is_the_corrected_difference_in_pooled_standard_deviations() {
        // Both sd 1, diff 1: d = 1, J = 1 − 3/(4·6 − 9) = 0.8.
        let c = compare(&sample(&[1.0, 2.0, 3.0]), &sample(&[2.0, 3.0, 4.0]), 0.05).unwrap();
        close(c.effect_size_g.unwrap(), 0.8, 1e-12);
        // sd 1 and 3 over 3 and 5 runs: s_p² = (2·1 + 4·9)/6, J = 1 − 3/23.
        let a = sample(&[1.0, 2.0, 3.0]);
        let b = sample(&[2.0, 8.0, 5.0, 8.0, 2.0]);
        close(b.sd.unwrap(), 3.0, 1e-12);
        let g = compare(&a, &b, 0.05).unwrap().effect_size_g.unwrap();
        close(g, (1.0 - 3.0 / 23.0) * 3.0 / (38.0f64 / 6.0).sqrt(), 1e-12);
        // No spread, or one run: no effect size.
        assert_eq!(
            compare(&sample(&[1.0, 1.0]), &sample(&[2.0, 2.0]), 0.05)
                .unwrap()
                .effect_size_g,
            None
        );
        assert_eq!(
            compare(&sample(&[1.0]), &sample(&[2.0, 3.0]), 0.05)
                .unwrap()
                .effect_size_g,
            None
        );
    }

    #[test]
    fn t_quantiles_match_printed_tables() {
        for (df, table) in [
            (1.0, 12.7062),
            (2.0, 4.3027),
            (5.0, 2.5706),
            (10.0, 2.2281),
            (14.0, 2.1448),
            (30.0, 2.0423),
            (120.0, 1.9799),
        ] {
            let q = t_quantile(0.975, df).unwrap();
            assert!((q - table).abs() < 0.5e-4, "df {df}: {q} vs {table}");
        }
        // Large df: the normal quantile z(0.975) = 1.95996.
        let q = t_quantile(0.975, 1e12).unwrap();
        assert!((q - 1.95996).abs() < 0.5e-5, "{q}");
    }

    #[test]
    fn t_quantiles_match_scipy_to_full_precision() {
        // stats.t.ppf(p, df); the last is stats.norm.ppf(0.975).
        for (p, df, want) in [
            (0.975, 1.0, 12.706204736174694),
            (0.975, 2.0, 4.302652729749462),
            (0.975, 5.0, 2.5705818356363146),
            (0.975, 10.0, 2.228138851986274),
            (0.975, 14.0, 2.144786687917804),
            (0.975, 30.0, 2.0422724563012378),
            (0.975, 120.0, 1.9799304050824402),
            (0.975, 1e6, 1.959966356814107),
            (0.975, 1e10, 1.959963984777281),
            (0.995, 4.0, 4.604094871349992),
            (0.05, 12.0, -1.7822875556493194),
            (0.9, 2.5, 1.7302509288071766),
            (0.975, 1e300, 1.959963984540054),
        ] {
            close(t_quantile(p, df).unwrap(), want, 1e-12);
        }
    }

    #[test]
    fn t_cdf_matches_closed_forms_and_references() {
        // Tables: P(T ≤ 2.0 | df = 5) = 0.94903.
        assert!((t_cdf(2.0, 5.0).unwrap() - 0.94903).abs() < 0.5e-5);
        // Cauchy: ½ + atan(1)/π = 0.75.
        close(t_cdf(1.0, 1.0).unwrap(), 0.75, 1e-15);
        close(t_cdf(-1.0, 1.0).unwrap(), 0.25, 1e-15);
        // df = 2: ½ + t/(2√(2+t²)).
        for t in [0.3, 1.0, 4.5] {
            close(
                t_cdf(t, 2.0).unwrap(),
                0.5 + t / (2.0 * (2.0 + t * t).sqrt()),
                1e-14,
            );
        }
        // stats.t.cdf(t, df) (mpmath's exact betainc agrees to 17 digits).
        close(t_cdf(2.0, 5.0).unwrap(), 0.9490302605850708, 1e-14);
        close(t_cdf(-3.0, 2.5).unwrap(), 0.036288047774515914, 1e-13);
        close(t_cdf(0.5, 7.3).unwrap(), 0.6841032365977792, 1e-14);
        // Far tails keep relative precision: stats.t.sf(t, df).
        close(t_cdf(-40.0, 30.0).unwrap(), 6.863022597203209e-28, 1e-12);
        close(t_cdf(-10.0, 3.0).unwrap(), 0.0010641995292070751, 1e-13);
        assert_eq!(t_cdf(0.0, 7.0), Some(0.5));
        assert_eq!(t_cdf(f64::INFINITY, 7.0), Some(1.0));
        assert_eq!(t_cdf(f64::NEG_INFINITY, 7.0), Some(0.0));
    }

    #[test]
    fn t_quantile_inverts_t_cdf() {
        for df in [0.7, 1.0, 3.3, 29.0, 1e4] {
            for p in [1e-9, 0.01, 0.3, 0.5, 0.8, 0.999] {
                let t = t_quantile(p, df).unwrap();
                close(t_cdf(t, df).unwrap(), p, 1e-12);
            }
        }
    }

    #[test]
    fn t_functions_reject_bad_parameters() {
        assert_eq!(t_quantile(0.0, 5.0), None);
        assert_eq!(t_quantile(1.0, 5.0), None);
        assert_eq!(t_quantile(f64::NAN, 5.0), None);
        assert_eq!(t_quantile(0.9, 0.0), None);
        assert_eq!(t_quantile(0.9, -1.0), None);
        assert_eq!(t_quantile(0.9, f64::INFINITY), None);
        assert_eq!(t_cdf(1.0, f64::NAN), None);
        assert_eq!(t_cdf(f64::NAN, 3.0), None);
    }

    #[test]
    fn ln_gamma_and_ln_beta_match_exact_values() {
        let pi = std::f64::consts::PI;
        close(ln_gamma(0.5), 0.5 * pi.ln(), 1e-14);
        close(ln_gamma(1.0), 0.0, 1e-14);
        close(ln_gamma(3.5), (15.0 * pi.sqrt() / 8.0).ln(), 1e-14);
        close(ln_gamma(10.0), 362_880.0f64.ln(), 1e-14);
        close(ln_gamma(100.5), 361.4355404677776, 1e-14); // math.lgamma(100.5)
                                                          // mpmath.log(mpmath.beta(a, b)) at 40 digits; both sides of the
                                                          // switch to Stirling's series at 10.
        for (a, b, want) in [
            (9.5, 0.5, -0.540_129_116_359_501),
            (10.0, 0.5, -0.566_432_796_397_593_9),
            (68.5, 0.5, -1.539_227_128_394_285_6),
            (5e9, 0.5, -10.593_986_931_740_556),
            (20.0, 30.0, -33.968_820_791_977_383),
        ] {
            close(ln_beta(a, b), want, 1e-13);
        }
    }

    #[test]
    fn sample_ci_matches_python_reference() {
        // statistics.mean/stdev and scipy t.ppf, see the module comment.
        let x = [5.1, 4.9, 5.6, 5.8, 6.0, 5.5, 5.3];
        let s = sample(&x);
        assert_eq!(s.n, 7);
        assert_eq!(s.level, 0.95);
        close(s.mean, 5.457142857142857, 1e-15);
        close(s.sd.unwrap(), 0.3866830866792721, 1e-14);
        close(s.se.unwrap(), 0.1461524690783124, 1e-14);
        close(s.ci_low.unwrap(), 5.099520648481034, 1e-13);
        close(s.ci_high.unwrap(), 5.81476506580468, 1e-13);
        let s99 = Sample::new(&x, 0.99).unwrap();
        close(s99.ci_low.unwrap(), 4.9152930978961145, 1e-13);
        close(s99.ci_high.unwrap(), 5.9989926163896, 1e-13);
    }

    #[test]
    fn one_run_has_a_mean_and_nothing_else() {
        let s = sample(&[42.0]);
        assert_eq!((s.n, s.mean), (1, 42.0));
        assert_eq!((s.sd, s.se, s.ci_low, s.ci_high), (None, None, None, None));
        let json = serde_json::to_string(&s).unwrap();
        assert_eq!(
            json,
            r#"{"n":1,"mean":42.0,"sd":null,"se":null,"ci_low":null,"ci_high":null,"level":0.95,"interval":"student_t"}"#
        );
        assert_eq!(serde_json::from_str::<Sample>(&json).unwrap(), s);
    }

    #[test]
    fn constant_runs_have_a_zero_width_interval() {
        let s = sample(&[3.0, 3.0, 3.0]);
        assert_eq!((s.sd, s.se), (Some(0.0), Some(0.0)));
        assert_eq!((s.ci_low, s.ci_high), (Some(3.0), Some(3.0)));
    }

    #[test]
    fn huge_n_gives_the_normal_interval() {
        // 10¹² runs of sd 1: half-width z(0.975)/10⁶ (norm.ppf(0.975)).
        let s = Sample::from_summary(1_000_000_000_000, 0.0, Some(1.0), 0.95).unwrap();
        close(s.ci_high.unwrap(), 1.959963984540054e-6, 1e-9);
        close(s.ci_low.unwrap(), -1.959963984540054e-6, 1e-9);
    }

    #[test]
    fn bad_input_gives_no_sample() {
        assert_eq!(Sample::new(&[], 0.95), None);
        assert_eq!(Sample::new(&[1.0, f64::NAN], 0.95), None);
        assert_eq!(Sample::new(&[1.0, f64::INFINITY], 0.95), None);
        for level in [0.0, 1.0, -0.5, 95.0, f64::NAN] {
            assert_eq!(Sample::new(&[1.0, 2.0], level), None, "{level}");
        }
        assert_eq!(Sample::from_summary(0, 1.0, Some(1.0), 0.95), None);
        assert_eq!(Sample::from_summary(3, 1.0, None, 0.95), None);
        assert_eq!(Sample::from_summary(3, 1.0, Some(-1.0), 0.95), None);
        assert_eq!(Sample::from_summary(3, f64::NAN, Some(1.0), 0.95), None);
        // The mean of finite values can still overflow.
        assert_eq!(Sample::new(&[f64::MAX, f64::MAX], 0.95), None);
    }

    #[test]
    fn welch_matches_nist_worked_example() {
        // US cars (a) against Japanese cars (b), from the printed summaries.
        let us = Sample::from_summary(249, 20.14458, Some(6.41470), 0.95).unwrap();
        let japan = Sample::from_summary(79, 30.48101, Some(6.10771), 0.95).unwrap();
        let c = compare(&us, &japan, DEFAULT_ALPHA).unwrap();
        // NIST prints T = (mean_us − mean_japan)/se = -12.94627.
        assert!((c.t.unwrap() - 12.94627).abs() < 0.5e-5, "{:?}", c.t);
        assert!((c.df.unwrap() - 136.87499).abs() < 0.5e-5, "{:?}", c.df);
        assert!((c.p.unwrap() - 1.571e-25).abs() < 0.0005e-25, "{:?}", c.p);
        // scipy.stats.ttest_ind_from_stats(30.48101, 6.10771, 79, 20.14458,
        // 6.41470, 249, equal_var=False); df from the Welch formula in Python.
        close(c.t.unwrap(), 12.946267565658848, 1e-12);
        close(c.df.unwrap(), 136.8749900936937, 1e-12);
        close(c.p.unwrap(), 1.5709046154648375e-25, 1e-10);
        assert_eq!(c.verdict, Verdict::Significant);
        close(c.diff, 10.33643, 1e-12);
        close(c.rel_diff_pct.unwrap(), 10.33643 / 20.14458 * 100.0, 1e-12);
    }

    #[test]
    fn welch_matches_scipy_on_raw_samples() {
        // (a, b, ttest_ind(b, a, equal_var=False) → t, df, p)
        let cases: [(&[f64], &[f64], [f64; 3]); 2] = [
            (
                &[20.1, 19.8, 20.5, 20.3, 19.9, 20.2, 20.0, 20.4],
                &[20.9, 21.4, 20.6, 21.8, 20.7, 21.1],
                [4.566296511374097, 7.181790077316407, 0.0024211613541455525],
            ),
            (
                &[9.8, 10.4, 10.1, 9.6, 10.9, 10.2, 9.9],
                &[10.3, 9.7, 10.8, 10.6, 10.0],
                [0.5897450045848016, 8.600764627133834, 0.5705269055065738],
            ),
        ];
        for (a, b, [t, df, p]) in cases {
            let c = compare(&sample(a), &sample(b), DEFAULT_ALPHA).unwrap();
            close(c.t.unwrap(), t, 1e-6);
            close(c.df.unwrap(), df, 1e-6);
            close(c.p.unwrap(), p, 1e-6);
            // Tighter than the 1e-6 the acceptance asks for.
            close(c.p.unwrap(), p, 1e-11);
        }
    }

    #[test]
    fn verdict_follows_alpha_and_labels_non_significance() {
        let v4 = sample(&[20.1, 19.8, 20.5, 20.3, 19.9, 20.2, 20.0, 20.4]);
        let v6 = sample(&[20.9, 21.4, 20.6, 21.8, 20.7, 21.1]);
        // p = 0.00242: significant at 5 %, not at 0.1 %.
        assert_eq!(
            compare(&v4, &v6, 0.05).unwrap().verdict,
            Verdict::Significant
        );
        let strict = compare(&v4, &v6, 0.001).unwrap();
        assert_eq!(strict.verdict, Verdict::NotSignificant);
        assert_eq!(strict.alpha, 0.001);
        // A 2.6 % difference with p = 0.57 is labelled not significant.
        let a = sample(&[9.8, 10.4, 10.1, 9.6, 10.9, 10.2, 9.9]);
        let b = sample(&[10.3, 9.7, 10.8, 10.6, 10.0]);
        let c = compare(&a, &b, DEFAULT_ALPHA).unwrap();
        assert!(c.rel_diff_pct.unwrap() > 1.0);
        assert_eq!(c.verdict, Verdict::NotSignificant);
        assert_eq!(
            serde_json::to_value(c.verdict).unwrap(),
            serde_json::json!("not_significant")
        );
    }

    #[test]
    fn identical_samples_give_p_one() {
        // ttest_ind([1,2,3], [1,2,3], equal_var=False): t 0, df 4, p 1.
        let s = sample(&[1.0, 2.0, 3.0]);
        let c = compare(&s, &s, DEFAULT_ALPHA).unwrap();
        assert_eq!((c.diff, c.rel_diff_pct), (0.0, Some(0.0)));
        assert_eq!((c.t, c.p), (Some(0.0), Some(1.0)));
        close(c.df.unwrap(), 4.0, 1e-15);
        assert_eq!(c.verdict, Verdict::NotSignificant);
    }

    #[test]
    fn zero_variance_on_both_sides() {
        // Equal constants: nothing to explain, p = 1, df undefined (0/0).
        let zero = sample(&[0.0, 0.0, 0.0]);
        let c = compare(&zero, &zero, DEFAULT_ALPHA).unwrap();
        assert_eq!((c.t, c.df, c.p), (Some(0.0), None, Some(1.0)));
        assert_eq!(c.rel_diff_pct, None); // mean_a = 0
        assert_eq!(c.verdict, Verdict::NotSignificant);
        // Different constants: the test is undefined, only diff speaks.
        let c = compare(&sample(&[64.0, 64.0]), &sample(&[63.0, 63.0, 63.0]), 0.05).unwrap();
        assert_eq!((c.diff, c.t, c.df, c.p), (-1.0, None, None, None));
        close(c.rel_diff_pct.unwrap(), -100.0 / 64.0, 1e-15);
        assert_eq!(c.verdict, Verdict::Undefined);
        let json = serde_json::to_string(&c).unwrap();
        assert!(json.contains(r#""t":null,"df":null,"p":null"#), "{json}");
        assert!(json.contains(r#""verdict":"undefined""#), "{json}");
        assert_eq!(serde_json::from_str::<Comparison>(&json).unwrap(), c);
    }

    #[test]
    fn zero_variance_on_one_side() {
        // ttest_ind([1,2,3,4], [1,1,1], equal_var=False): t 2.32379000772445,
        // df 3.0 (= n − 1 of the varying side), p 0.10272807885839899.
        let c = compare(
            &sample(&[1.0, 1.0, 1.0]),
            &sample(&[1.0, 2.0, 3.0, 4.0]),
            0.05,
        )
        .unwrap();
        close(c.t.unwrap(), 2.32379000772445, 1e-14);
        close(c.df.unwrap(), 3.0, 1e-15);
        close(c.p.unwrap(), 0.10272807885839899, 1e-12);
    }

    #[test]
    fn one_run_on_either_side_is_undefined() {
        let one = sample(&[5.0]);
        let many = sample(&[4.0, 5.0, 6.0]);
        for (a, b) in [(&one, &many), (&many, &one), (&one, &one)] {
            let c = compare(a, b, DEFAULT_ALPHA).unwrap();
            assert_eq!((c.t, c.df, c.p), (None, None, None));
            assert_eq!(c.verdict, Verdict::Undefined);
        }
        // The difference itself is still reported.
        let c = compare(&one, &many, DEFAULT_ALPHA).unwrap();
        assert_eq!((c.diff, c.rel_diff_pct), (0.0, Some(0.0)));
    }

    #[test]
    fn huge_df_and_extreme_scales_stay_finite() {
        // 10¹² runs a side: df ≈ 2·10¹², p from the normal limit.
        let n = 1_000_000_000_000;
        let a = Sample::from_summary(n, 0.0, Some(1.0), 0.95).unwrap();
        let b = Sample::from_summary(n, 1.959963984540054 * 2f64.sqrt() * 1e-6, Some(1.0), 0.95);
        let c = compare(&a, &b.unwrap(), DEFAULT_ALPHA).unwrap();
        close(c.df.unwrap(), 2.0 * (n - 1) as f64, 1e-12);
        close(c.t.unwrap(), 1.959963984540054, 1e-9);
        close(c.p.unwrap(), 0.05, 1e-8);
        // sd² would overflow at 1e200; the result is scale-free.
        let big = |mean, sd| Sample::from_summary(5, mean, Some(sd), 0.95).unwrap();
        let huge = compare(&big(0.0, 1e200), &big(1e200, 1e200), 0.05).unwrap();
        let unit = compare(&big(0.0, 1.0), &big(1.0, 1.0), 0.05).unwrap();
        close(huge.t.unwrap(), unit.t.unwrap(), 1e-15);
        close(huge.df.unwrap(), 8.0, 1e-15);
        close(huge.p.unwrap(), unit.p.unwrap(), 1e-14);
        // A difference that overflows has no comparison.
        assert_eq!(
            compare(&big(-f64::MAX, 1.0), &big(f64::MAX, 1.0), 0.05),
            None
        );
    }

    #[test]
    fn bad_alpha_gives_no_comparison() {
        let s = sample(&[1.0, 2.0]);
        for alpha in [0.0, 1.0, -0.1, 5.0, f64::NAN] {
            assert_eq!(compare(&s, &s, alpha), None, "{alpha}");
        }
    }
}
