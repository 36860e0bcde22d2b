//! [`Sampler`]: a seeded, reproducible sampler for a [`Dist`].

use super::*;

/// SplitMix64 finaliser, used to derive independent sub-seeds from one seed.
pub(crate) fn splitmix64(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// A validated [`Dist`] plus its random state (ChaCha8 seeded with `seed`) and the
/// cycling cursors of its empirical parts.
#[derive(Debug, Clone)]
pub struct Sampler {
    dist: Dist,
    seed: u64,
    rng: ChaCha8Rng,
    cursors: Vec<usize>,
}

impl Sampler {
    /// Validate `dist` and seed the generator with `ChaCha8Rng::seed_from_u64(seed)`.
    pub fn new(dist: Dist, seed: u64) -> Result<Self, DistError> {
        dist.validate()?;
        let cursors = vec![0; dist.empirical_count()];
        Ok(Sampler {
            dist,
            seed,
            rng: ChaCha8Rng::seed_from_u64(seed),
            cursors,
        })
    }

    /// The distribution.
    pub fn dist(&self) -> &Dist {
        &self.dist
    }

    /// The seed this sampler was created with.
    pub fn seed(&self) -> u64 {
        self.seed
    }

    /// Restart the sequence from the beginning.
    pub fn reset(&mut self) {
        self.rng = ChaCha8Rng::seed_from_u64(self.seed);
        self.cursors.iter_mut().for_each(|c| *c = 0);
    }

    /// Draw the next value.
    pub fn sample(&mut self) -> f64 {
        sample_from(&self.dist, &mut self.rng, &mut self.cursors, 0)
    }
}

fn sample_from(d: &Dist, rng: &mut ChaCha8Rng, cursors: &mut [usize], base: usize) -> f64 {
    // Parameters were validated in Sampler::new, so the rand_distr constructors succeed;
    // NaN is returned rather than panicking should that ever not hold.
    match d {
        Dist::Constant { value } => *value,
        Dist::Uniform { min, max } => min + (max - min) * rng.gen::<f64>(),
        Dist::Exponential { mean } => {
            let e: f64 = rand_distr::Exp1.sample(rng);
            mean * e
        }
        Dist::Normal { mean, stddev } => {
            let z: f64 = rand_distr::StandardNormal.sample(rng);
            mean + stddev * z
        }
        Dist::Poisson { mean } => {
            rand_distr::Poisson::new(*mean).map_or(f64::NAN, |p| p.sample(rng))
        }
        Dist::InversePoisson { numerator, mean } => numerator / truncated_poisson(*mean, rng),
        Dist::Pareto { shape, scale } => {
            rand_distr::Pareto::new(*scale, *shape).map_or(f64::NAN, |p| p.sample(rng))
        }
        Dist::Cauchy { location, scale } => {
            rand_distr::Cauchy::new(*location, *scale).map_or(f64::NAN, |p| p.sample(rng))
        }
        Dist::Gamma { shape, scale } => {
            rand_distr::Gamma::new(*shape, *scale).map_or(f64::NAN, |p| p.sample(rng))
        }
        Dist::Weibull { shape, scale } => {
            rand_distr::Weibull::new(*scale, *shape).map_or(f64::NAN, |p| p.sample(rng))
        }
        Dist::StudentT {
            location,
            scale,
            dof,
        } => {
            let t = rand_distr::StudentT::new(*dof).map_or(f64::NAN, |p| p.sample(rng));
            location + scale * t
        }
        Dist::Mixture { parts } => {
            let total: f64 = parts.iter().map(|(w, _)| w).sum();
            let mut u = rng.gen::<f64>() * total;
            let mut pick = None;
            for (i, (w, _)) in parts.iter().enumerate() {
                if *w > 0.0 {
                    pick = Some(i);
                    if u < *w {
                        break;
                    }
                    u -= w;
                }
            }
            let Some(i) = pick else { return f64::NAN };
            let off: usize = parts[..i].iter().map(|(_, p)| p.empirical_count()).sum();
            sample_from(&parts[i].1, rng, cursors, base + off)
        }
        Dist::Empirical { values, order } => match order {
            EmpiricalOrder::Cycle => {
                let c = &mut cursors[base];
                let v = values[*c % values.len()];
                *c = (*c + 1) % values.len();
                v
            }
            EmpiricalOrder::Random => values[rng.gen_range(0..values.len())],
        },
    }
}

/// Poisson count conditioned on `>= 1`.
fn truncated_poisson(mean: f64, rng: &mut ChaCha8Rng) -> f64 {
    if mean >= 1.0 {
        let Ok(p) = rand_distr::Poisson::new(mean) else {
            return f64::NAN;
        };
        loop {
            let k: f64 = p.sample(rng);
            if k >= 1.0 {
                return k;
            }
        }
    }
    // Inversion of the zero-truncated pmf p(j) = e^−λ λ^j / j! / (1 − e^−λ).
    let norm = -(-mean).exp_m1();
    let target = rng.gen::<f64>() * norm;
    let mut p = mean * (-mean).exp();
    let mut acc = 0.0;
    let mut j = 1.0;
    loop {
        acc += p;
        if target < acc || p < 1e-300 {
            return j;
        }
        j += 1.0;
        p *= mean / j;
    }
}
