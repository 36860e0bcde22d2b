//! Seeded, reproducible probability distributions for inter-departure times (IDT) and
//! payload sizes, plus on/off (burst) processes.
//!
//! # Units
//!
//! A [`Dist`] is unit-free: it yields plain `f64` values and the caller decides whether
//! they are milliseconds, seconds or bytes. The D-ITG translations
//! ([`from_ditg_idt`], [`from_ditg_size`], [`from_ditg_onoff_period`]) produce values in
//! D-ITG's units: **milliseconds** for IDT and on/off periods, **bytes** for sizes. D-ITG
//! truncates sizes to integers and clamps them to `[16, 64000]`; that is left to the
//! caller, as is clamping negative draws (normal, Cauchy, Student-t) for IDTs.
//!
//! # Randomness and reproducibility
//!
//! Every [`Sampler`] owns a [`ChaCha8Rng`] seeded with `ChaCha8Rng::seed_from_u64(seed)`
//! (rand_chacha 0.3; the ChaCha stream is specified and portable). Given the same
//! [`Dist`], seed and crate versions (`rand` 0.8, `rand_distr` 0.4, pinned by
//! `Cargo.lock`), the sequence of values is identical on every platform. `rand_distr`
//! only promises value stability within a minor version, so record the seed together
//! with the tool version.
//!
//! # Algorithms
//!
//! | Kind | Algorithm |
//! |---|---|
//! | constant | the value |
//! | uniform | `min + (max−min)·U`, `U` in `[0, 1)` with 53 random bits |
//! | exponential | `mean · Exp1`, Ziggurat (`rand_distr::Exp1`) |
//! | normal | `mean + stddev · N(0,1)`, Ziggurat (`rand_distr::StandardNormal`) |
//! | Poisson | `rand_distr::Poisson`: multiplication of uniforms for mean < 12, otherwise the rejection method of Numerical Recipes (Lorentzian comparison) |
//! | inverse Poisson | `numerator / K`, `K` Poisson conditioned on `K ≥ 1` (redraw for mean ≥ 1, inversion of the zero-truncated pmf for mean < 1) |
//! | Pareto | inversion, `scale · U^(−1/shape)` (`rand_distr::Pareto`) |
//! | Cauchy | inversion, `location + scale · tan(π·U)` (`rand_distr::Cauchy`) |
//! | gamma | Marsaglia–Tsang (shape ≥ 1; boosted by `U^(1/shape)` below 1) (`rand_distr::Gamma`) |
//! | Weibull | inversion, `scale · (−ln U)^(1/shape)` (`rand_distr::Weibull`) |
//! | Student-t | `location + scale · Z/√(χ²_ν/ν)` (`rand_distr::StudentT`) |
//! | mixture | pick a part with probability weight/Σweights, then sample it |
//! | empirical | cycle through the values in order (D-ITG `-Ft`/`-Fs`), or pick uniformly |
//!
//! # Text spelling
//!
//! [`Dist`] implements [`FromStr`] and [`fmt::Display`] with `kind:arg,arg,...`:
//!
//! | Spelling | Meaning |
//! |---|---|
//! | `const:V` | always `V` |
//! | `uniform:MIN,MAX` | uniform on `[MIN, MAX)` |
//! | `exp:MEAN` | exponential with that **mean** (not rate) |
//! | `normal:MEAN,STDDEV` | Gaussian |
//! | `poisson:MEAN` | Poisson count |
//! | `invpoisson:NUM,MEAN` | `NUM / Poisson(MEAN)` (D-ITG `-O` IDT) |
//! | `pareto:SHAPE,XMIN` | Pareto with tail index `SHAPE` and minimum `XMIN` |
//! | `cauchy:LOCATION,SCALE` | Cauchy (median `LOCATION`, half-width `SCALE`) |
//! | `gamma:SHAPE,SCALE` | gamma, mean `SHAPE·SCALE` |
//! | `weibull:SHAPE,SCALE` | Weibull, CDF `1 − exp(−(x/SCALE)^SHAPE)` |
//! | `t:LOCATION,SCALE,DOF` | location-scale Student-t |
//! | `mix:W*SPEC+W*SPEC...` | mixture (weights need not sum to 1; no nested `mix`) |
//! | `values:V,V,...` | empirical, cycled in order |
//! | `choice:V,V,...` | empirical, picked uniformly at random |
//! | `file:PATH` | rejected with [`DistError::NeedsFile`]: the caller reads the file and calls [`Dist::empirical_from_text`] |

use std::f64::consts::PI;
use std::fmt;
use std::str::FromStr;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rand_distr::Distribution;
use serde::{Deserialize, Serialize};

mod onoff;
mod sampler;
mod special;
#[cfg(test)]
mod tests;
mod text;

pub use onoff::{OnOff, OnOffProcess, Period};
pub(crate) use sampler::splitmix64;
pub use sampler::Sampler;
pub use text::{from_ditg_idt, from_ditg_onoff_period, from_ditg_size};

use special::*;
use text::parse_num;

/// Errors from building, validating or parsing a distribution.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum DistError {
    /// A parameter is out of its domain.
    #[error("{kind}: parameter `{param}` must be {must}, got {value}")]
    InvalidParam {
        /// Distribution kind.
        kind: &'static str,
        /// Parameter name.
        param: &'static str,
        /// The requirement, in words.
        must: &'static str,
        /// The offending value.
        value: f64,
    },
    /// An empirical distribution without values.
    #[error("empirical distribution needs at least one value")]
    EmptyEmpirical,
    /// A mixture without parts, or whose weights are all zero.
    #[error("mixture needs at least one part with positive weight")]
    EmptyMixture,
    /// An unknown kind in the text spelling.
    #[error("unknown distribution kind `{0}`")]
    UnknownKind(String),
    /// Wrong number of parameters.
    #[error("{kind}: expected {expected} parameter(s), got {got}")]
    Arity {
        /// Distribution kind or D-ITG flag.
        kind: String,
        /// Expected count.
        expected: usize,
        /// Given count.
        got: usize,
    },
    /// A number that does not parse.
    #[error("cannot parse number `{0}`")]
    Number(String),
    /// Malformed text spelling.
    #[error("malformed distribution spec `{0}`")]
    Syntax(String),
    /// `file:PATH` needs I/O, which this crate does not do.
    #[error("`file:{0}`: read the file and pass its text to Dist::empirical_from_text")]
    NeedsFile(String),
    /// A D-ITG flag that is not a distribution flag.
    #[error("unknown D-ITG distribution flag `-{0}`")]
    UnknownDitgFlag(char),
    /// An on/off process whose on and off periods are both always zero.
    #[error("on/off process: on and off periods cannot both be always zero")]
    DegenerateOnOff,
    /// An on/off process gating a flow whose on periods are always zero: it would never
    /// send.
    #[error("on/off process: the on periods are always zero, so nothing would be sent")]
    NeverOn,
}

/// How an empirical distribution yields its values.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum EmpiricalOrder {
    /// In file order, wrapping around at the end (D-ITG `-Ft`/`-Fs`).
    #[default]
    Cycle,
    /// Uniformly at random, with replacement.
    Random,
}

/// A probability distribution over `f64` values. See the module documentation for
/// units, algorithms and the text spelling.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Dist {
    /// Always `value`.
    Constant {
        /// The value.
        value: f64,
    },
    /// Uniform on `[min, max)`; `min == max` is a constant.
    Uniform {
        /// Lower bound (inclusive).
        min: f64,
        /// Upper bound (exclusive), `>= min`.
        max: f64,
    },
    /// Exponential with the given mean (`1/rate`), `> 0`.
    Exponential {
        /// Mean, `> 0`.
        mean: f64,
    },
    /// Gaussian.
    Normal {
        /// Mean.
        mean: f64,
        /// Standard deviation, `>= 0`.
        stddev: f64,
    },
    /// Poisson count (values are non-negative integers).
    Poisson {
        /// Mean (= variance), `> 0`.
        mean: f64,
    },
    /// `numerator / K` with `K ~ Poisson(mean)` conditioned on `K >= 1`: D-ITG's `-O m`
    /// IDT is `1000 / Poisson(m)` ms. D-ITG would divide by zero when `K = 0`; here such
    /// draws are excluded.
    InversePoisson {
        /// Numerator, `> 0` (1000 for D-ITG).
        numerator: f64,
        /// Mean of the Poisson count, `> 0`.
        mean: f64,
    },
    /// Pareto (type I): CDF `1 − (scale/x)^shape` for `x >= scale`.
    Pareto {
        /// Tail index α, `> 0`. Mean finite for α > 1, variance for α > 2.
        shape: f64,
        /// Minimum value `x_min`, `> 0`.
        scale: f64,
    },
    /// Cauchy: CDF `1/2 + atan((x − location)/scale)/π`. No mean or variance.
    Cauchy {
        /// Median.
        location: f64,
        /// Half width at half maximum, `> 0`.
        scale: f64,
    },
    /// Gamma with density ∝ `x^(shape−1) e^(−x/scale)`; mean `shape·scale`.
    Gamma {
        /// Shape k, `> 0`.
        shape: f64,
        /// Scale θ, `> 0`.
        scale: f64,
    },
    /// Weibull: CDF `1 − exp(−(x/scale)^shape)`.
    Weibull {
        /// Shape k, `> 0`.
        shape: f64,
        /// Scale λ, `> 0`.
        scale: f64,
    },
    /// Location-scale Student-t: `location + scale·T_dof`. Mean (= location) for
    /// dof > 1, variance `scale²·dof/(dof−2)` for dof > 2.
    StudentT {
        /// Location (median).
        location: f64,
        /// Scale, `> 0`.
        scale: f64,
        /// Degrees of freedom ν, `> 0` (need not be an integer).
        dof: f64,
    },
    /// Mixture: part `i` is chosen with probability `weight_i / Σ weight`.
    Mixture {
        /// `(weight >= 0, distribution)` pairs; at least one weight `> 0`.
        parts: Vec<(f64, Dist)>,
    },
    /// Values given explicitly (e.g. read from a file by the caller).
    Empirical {
        /// The values, at least one, all finite.
        values: Vec<f64>,
        /// Cycle in order (default) or pick at random.
        #[serde(default)]
        order: EmpiricalOrder,
    },
}

fn finite(kind: &'static str, param: &'static str, v: f64) -> Result<(), DistError> {
    if v.is_finite() {
        Ok(())
    } else {
        Err(DistError::InvalidParam {
            kind,
            param,
            must: "finite",
            value: v,
        })
    }
}

fn positive(kind: &'static str, param: &'static str, v: f64) -> Result<(), DistError> {
    if v.is_finite() && v > 0.0 {
        Ok(())
    } else {
        Err(DistError::InvalidParam {
            kind,
            param,
            must: "finite and > 0",
            value: v,
        })
    }
}

fn non_negative(kind: &'static str, param: &'static str, v: f64) -> Result<(), DistError> {
    if v.is_finite() && v >= 0.0 {
        Ok(())
    } else {
        Err(DistError::InvalidParam {
            kind,
            param,
            must: "finite and >= 0",
            value: v,
        })
    }
}

impl Dist {
    /// Short kind name, as used in the text spelling.
    pub fn kind_name(&self) -> &'static str {
        match self {
            Dist::Constant { .. } => "const",
            Dist::Uniform { .. } => "uniform",
            Dist::Exponential { .. } => "exp",
            Dist::Normal { .. } => "normal",
            Dist::Poisson { .. } => "poisson",
            Dist::InversePoisson { .. } => "invpoisson",
            Dist::Pareto { .. } => "pareto",
            Dist::Cauchy { .. } => "cauchy",
            Dist::Gamma { .. } => "gamma",
            Dist::Weibull { .. } => "weibull",
            Dist::StudentT { .. } => "t",
            Dist::Mixture { .. } => "mix",
            Dist::Empirical {
                order: EmpiricalOrder::Cycle,
                ..
            } => "values",
            Dist::Empirical {
                order: EmpiricalOrder::Random,
                ..
            } => "choice",
        }
    }

    /// Check every parameter's domain (see each variant's documentation).
    pub fn validate(&self) -> Result<(), DistError> {
        let k = self.kind_name();
        match self {
            Dist::Constant { value } => finite(k, "value", *value),
            Dist::Uniform { min, max } => {
                finite(k, "min", *min)?;
                finite(k, "max", *max)?;
                if max < min {
                    return Err(DistError::InvalidParam {
                        kind: k,
                        param: "max",
                        must: ">= min",
                        value: *max,
                    });
                }
                Ok(())
            }
            Dist::Exponential { mean } | Dist::Poisson { mean } => positive(k, "mean", *mean),
            Dist::Normal { mean, stddev } => {
                finite(k, "mean", *mean)?;
                non_negative(k, "stddev", *stddev)
            }
            Dist::InversePoisson { numerator, mean } => {
                positive(k, "numerator", *numerator)?;
                positive(k, "mean", *mean)
            }
            Dist::Pareto { shape, scale }
            | Dist::Gamma { shape, scale }
            | Dist::Weibull { shape, scale } => {
                positive(k, "shape", *shape)?;
                positive(k, "scale", *scale)
            }
            Dist::Cauchy { location, scale } => {
                finite(k, "location", *location)?;
                positive(k, "scale", *scale)
            }
            Dist::StudentT {
                location,
                scale,
                dof,
            } => {
                finite(k, "location", *location)?;
                positive(k, "scale", *scale)?;
                positive(k, "dof", *dof)
            }
            Dist::Mixture { parts } => {
                let mut total = 0.0;
                for (w, d) in parts {
                    non_negative(k, "weight", *w)?;
                    total += w;
                    d.validate()?;
                }
                if total > 0.0 && total.is_finite() {
                    Ok(())
                } else {
                    Err(DistError::EmptyMixture)
                }
            }
            Dist::Empirical { values, .. } => {
                if values.is_empty() {
                    return Err(DistError::EmptyEmpirical);
                }
                values.iter().try_for_each(|v| finite(k, "value", *v))
            }
        }
    }

    /// Parse an empirical distribution (cycled in order) from text: numbers separated
    /// by whitespace, commas or semicolons; `#` starts a comment to the end of the line.
    pub fn empirical_from_text(text: &str) -> Result<Dist, DistError> {
        let mut values = Vec::new();
        for line in text.lines() {
            let line = line.split('#').next().unwrap_or("");
            for tok in line
                .split(|c: char| c.is_whitespace() || c == ',' || c == ';')
                .filter(|t| !t.is_empty())
            {
                values.push(parse_num(tok)?);
            }
        }
        let d = Dist::Empirical {
            values,
            order: EmpiricalOrder::Cycle,
        };
        d.validate()?;
        Ok(d)
    }

    /// Mean, or `None` where it is undefined (Cauchy; Pareto shape ≤ 1; Student-t dof ≤ 1;
    /// a mixture with such a part).
    pub fn mean(&self) -> Option<f64> {
        match self {
            Dist::Constant { value } => Some(*value),
            Dist::Uniform { min, max } => Some(0.5 * (min + max)),
            Dist::Exponential { mean } | Dist::Poisson { mean } => Some(*mean),
            Dist::Normal { mean, .. } => Some(*mean),
            Dist::Mixture { parts } => {
                let (mut total, mut acc) = (0.0, 0.0);
                for (w, d) in parts.iter().filter(|(w, _)| *w > 0.0) {
                    total += w;
                    acc += w * d.mean()?;
                }
                Some(acc / total)
            }
            Dist::Empirical { values, .. } => {
                Some(values.iter().sum::<f64>() / values.len() as f64)
            }
            Dist::InversePoisson { .. } => self.raw_moment(1),
            Dist::StudentT { location, dof, .. } => (*dof > 1.0).then_some(*location),
            _ => self.raw_moment(1),
        }
    }

    /// Variance, or `None` where it is undefined or infinite (Cauchy; Pareto shape ≤ 2;
    /// Student-t dof ≤ 2; a mixture with such a part).
    pub fn variance(&self) -> Option<f64> {
        match self {
            Dist::Constant { .. } => Some(0.0),
            Dist::Uniform { min, max } => Some((max - min).powi(2) / 12.0),
            Dist::Exponential { mean } => Some(mean * mean),
            Dist::Normal { stddev, .. } => Some(stddev * stddev),
            Dist::Poisson { mean } => Some(*mean),
            Dist::Pareto { shape, scale } => (*shape > 2.0)
                .then(|| scale * scale * shape / ((shape - 1.0).powi(2) * (shape - 2.0))),
            Dist::Cauchy { .. } => None,
            Dist::Gamma { shape, scale } => Some(shape * scale * scale),
            Dist::Weibull { shape, scale } => {
                let g1 = gamma_fn(1.0 + 1.0 / shape);
                let g2 = gamma_fn(1.0 + 2.0 / shape);
                Some(scale * scale * (g2 - g1 * g1))
            }
            Dist::StudentT { scale, dof, .. } => {
                (*dof > 2.0).then(|| scale * scale * dof / (dof - 2.0))
            }
            Dist::InversePoisson { numerator, mean } => {
                let m = self.mean()?;
                Some(inverse_poisson_series(*numerator, *mean, |x| {
                    (x - m).powi(2)
                }))
            }
            Dist::Mixture { parts } => {
                let mu = self.mean()?;
                let (mut total, mut acc) = (0.0, 0.0);
                for (w, d) in parts.iter().filter(|(w, _)| *w > 0.0) {
                    total += w;
                    acc += w * (d.variance()? + (d.mean()? - mu).powi(2));
                }
                Some(acc / total)
            }
            Dist::Empirical { values, .. } => {
                let mu = self.mean()?;
                Some(values.iter().map(|v| (v - mu).powi(2)).sum::<f64>() / values.len() as f64)
            }
        }
    }

    /// Raw moment `E[X^k]`, or `None` where it does not exist (finite).
    pub fn raw_moment(&self, k: u32) -> Option<f64> {
        if k == 0 {
            return Some(1.0);
        }
        let kf = f64::from(k);
        let ki = k as i32;
        match self {
            Dist::Constant { value } => Some(value.powi(ki)),
            Dist::Uniform { min, max } => {
                if max == min {
                    Some(min.powi(ki))
                } else {
                    Some((max.powi(ki + 1) - min.powi(ki + 1)) / ((kf + 1.0) * (max - min)))
                }
            }
            Dist::Exponential { mean } => {
                Some((1..=k).map(f64::from).product::<f64>() * mean.powi(ki))
            }
            Dist::Normal { mean, stddev } => {
                // E[(μ+σZ)^k] = Σ_j C(k,j) μ^(k−j) σ^j E[Z^j], E[Z^j] = (j−1)!! for even j.
                let mut acc = 0.0;
                for j in (0..=k).step_by(2) {
                    let dfact: f64 = (1..j).step_by(2).map(f64::from).product();
                    acc += binom(k, j) * mean.powi((k - j) as i32) * stddev.powi(j as i32) * dfact;
                }
                Some(acc)
            }
            Dist::Poisson { mean } => {
                // Touchard polynomial: Σ_j S(k, j) λ^j with Stirling numbers of the second kind.
                Some((1..=k).map(|j| stirling2(k, j) * mean.powi(j as i32)).sum())
            }
            Dist::InversePoisson { numerator, mean } => {
                Some(inverse_poisson_series(*numerator, *mean, |x| x.powi(ki)))
            }
            Dist::Pareto { shape, scale } => {
                (*shape > kf).then(|| shape * scale.powi(ki) / (shape - kf))
            }
            Dist::Cauchy { .. } => None,
            Dist::Gamma { shape, scale } => {
                Some((0..k).map(|i| shape + f64::from(i)).product::<f64>() * scale.powi(ki))
            }
            Dist::Weibull { shape, scale } => Some(scale.powi(ki) * gamma_fn(1.0 + kf / shape)),
            Dist::StudentT {
                location,
                scale,
                dof,
            } => {
                if *dof <= kf {
                    return None;
                }
                let mut acc = 0.0;
                for j in (0..=k).step_by(2) {
                    // E[T^j] = ν^(j/2) Π_{i=1..j/2} (2i−1)/(ν−2i)
                    let tj: f64 = (1..=j / 2)
                        .map(|i| {
                            let i = f64::from(i);
                            dof * (2.0 * i - 1.0) / (dof - 2.0 * i)
                        })
                        .product();
                    acc += binom(k, j) * location.powi((k - j) as i32) * scale.powi(j as i32) * tj;
                }
                Some(acc)
            }
            Dist::Mixture { parts } => {
                let (mut total, mut acc) = (0.0, 0.0);
                for (w, d) in parts.iter().filter(|(w, _)| *w > 0.0) {
                    total += w;
                    acc += w * d.raw_moment(k)?;
                }
                Some(acc / total)
            }
            Dist::Empirical { values, .. } => {
                Some(values.iter().map(|v| v.powi(ki)).sum::<f64>() / values.len() as f64)
            }
        }
    }

    /// Cumulative distribution function `P(X <= x)`; `None` only for a NaN `x`.
    /// For Poisson, inverse-Poisson, constant and empirical it is a right-continuous step
    /// function.
    pub fn cdf(&self, x: f64) -> Option<f64> {
        if x.is_nan() {
            return None;
        }
        let step = |v: f64| if x >= v { 1.0 } else { 0.0 };
        Some(match self {
            Dist::Constant { value } => step(*value),
            Dist::Uniform { min, max } => {
                if max == min {
                    step(*min)
                } else {
                    ((x - min) / (max - min)).clamp(0.0, 1.0)
                }
            }
            Dist::Exponential { mean } => {
                if x <= 0.0 {
                    0.0
                } else {
                    -(-x / mean).exp_m1()
                }
            }
            Dist::Normal { mean, stddev } => {
                if *stddev == 0.0 {
                    step(*mean)
                } else {
                    normal_cdf((x - mean) / stddev)
                }
            }
            Dist::Poisson { mean } => {
                if x < 0.0 {
                    0.0
                } else {
                    // P(K <= k) = Q(k + 1, λ)
                    gamma_q(x.floor() + 1.0, *mean)
                }
            }
            Dist::InversePoisson { numerator, mean } => {
                if x <= 0.0 {
                    0.0
                } else {
                    // P(n/K <= x | K >= 1) = P(K >= ceil(n/x)) / P(K >= 1), P(K >= j) = P(j, λ)
                    let j = (numerator / x).ceil().max(1.0);
                    (gamma_p(j, *mean) / -(-mean).exp_m1()).min(1.0)
                }
            }
            Dist::Pareto { shape, scale } => {
                if x < *scale {
                    0.0
                } else {
                    1.0 - (scale / x).powf(*shape)
                }
            }
            Dist::Cauchy { location, scale } => 0.5 + ((x - location) / scale).atan() / PI,
            Dist::Gamma { shape, scale } => {
                if x <= 0.0 {
                    0.0
                } else {
                    gamma_p(*shape, x / scale)
                }
            }
            Dist::Weibull { shape, scale } => {
                if x <= 0.0 {
                    0.0
                } else {
                    -(-(x / scale).powf(*shape)).exp_m1()
                }
            }
            Dist::StudentT {
                location,
                scale,
                dof,
            } => student_t_cdf((x - location) / scale, *dof),
            Dist::Mixture { parts } => {
                let (mut total, mut acc) = (0.0, 0.0);
                for (w, d) in parts.iter().filter(|(w, _)| *w > 0.0) {
                    total += w;
                    acc += w * d.cdf(x)?;
                }
                acc / total
            }
            Dist::Empirical { values, .. } => {
                values.iter().filter(|v| **v <= x).count() as f64 / values.len() as f64
            }
        })
    }

    /// Number of empirical nodes (each needs its own cycling cursor).
    fn empirical_count(&self) -> usize {
        match self {
            Dist::Empirical { .. } => 1,
            Dist::Mixture { parts } => parts.iter().map(|(_, d)| d.empirical_count()).sum(),
            _ => 0,
        }
    }

    /// Whether a draw can be `> 0` (used to reject on/off processes that never advance).
    pub fn can_be_positive(&self) -> bool {
        match self {
            Dist::Constant { value } => *value > 0.0,
            Dist::Uniform { max, .. } => *max > 0.0,
            Dist::Normal { mean, stddev } => *stddev > 0.0 || *mean > 0.0,
            Dist::Mixture { parts } => parts.iter().any(|(w, d)| *w > 0.0 && d.can_be_positive()),
            Dist::Empirical { values, .. } => values.iter().any(|v| *v > 0.0),
            _ => true,
        }
    }
}

/// `Σ_{j>=1} f(numerator/j) · P(K=j) / P(K>=1)` for `K ~ Poisson(mean)`.
fn inverse_poisson_series(numerator: f64, mean: f64, f: impl Fn(f64) -> f64) -> f64 {
    let last = (mean + 40.0 * mean.sqrt() + 40.0).ceil() as u64;
    let norm = -(-mean).exp_m1();
    let ln_mean = mean.ln();
    let mut acc = 0.0;
    for j in 1..=last {
        let jf = j as f64;
        let p = (jf * ln_mean - mean - ln_gamma(jf + 1.0)).exp();
        acc += f(numerator / jf) * p;
    }
    acc / norm
}

fn binom(n: u32, k: u32) -> f64 {
    (0..k).fold(1.0, |acc, i| acc * f64::from(n - i) / f64::from(i + 1))
}

fn stirling2(n: u32, k: u32) -> f64 {
    // S(n, k) = (1/k!) Σ_i (−1)^i C(k, i) (k − i)^n
    let mut acc = 0.0;
    for i in 0..=k {
        let sign = if i % 2 == 0 { 1.0 } else { -1.0 };
        acc += sign * binom(k, i) * f64::from(k - i).powi(n as i32);
    }
    acc / (1..=k).map(f64::from).product::<f64>()
}
