use super::*;

const SEED: u64 = 0x5eed_d1a1;

fn draw(d: &Dist, n: usize, seed: u64) -> Vec<f64> {
    let mut s = Sampler::new(d.clone(), seed).unwrap();
    (0..n).map(|_| s.sample()).collect()
}

/// Kolmogorov–Smirnov statistic; handles ties and step CDFs by comparing both
/// one-sided limits at each distinct sample value.
fn ks_stat(xs: &[f64], d: &Dist) -> f64 {
    let mut s = xs.to_vec();
    s.sort_by(f64::total_cmp);
    let n = s.len() as f64;
    let mut dmax: f64 = 0.0;
    let mut i = 0;
    while i < s.len() {
        let x = s[i];
        let mut j = i;
        while j + 1 < s.len() && s[j + 1] == x {
            j += 1;
        }
        let f = d.cdf(x).unwrap();
        let left = d.cdf(x - x.abs() * 1e-12 - 1e-300).unwrap();
        dmax = dmax
            .max(((j + 1) as f64 / n - f).abs())
            .max((i as f64 / n - left).abs());
        i = j + 1;
    }
    dmax
}

/// Fourth central moment from raw moments.
fn mu4(d: &Dist) -> Option<f64> {
    let m1 = d.raw_moment(1)?;
    let m2 = d.raw_moment(2)?;
    let m3 = d.raw_moment(3)?;
    let m4 = d.raw_moment(4)?;
    Some(m4 - 4.0 * m1 * m3 + 6.0 * m1 * m1 * m2 - 3.0 * m1.powi(4))
}

/// Mean within 5·σ/√N; variance within 5·√((μ4−σ⁴)/N) when μ4 exists (otherwise only
/// the mean is checked); KS distance below 1.63/√N (α ≈ 0.01).
fn check(d: Dist, n: usize) {
    let xs = draw(&d, n, SEED);
    let nf = n as f64;
    let mean = xs.iter().sum::<f64>() / nf;
    let var = xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (nf - 1.0);
    if let (Some(mu), Some(sig2)) = (d.mean(), d.variance()) {
        let tol = 5.0 * (sig2 / nf).sqrt() + 1e-9 * mu.abs().max(1.0);
        assert!((mean - mu).abs() <= tol, "{d}: mean {mean} vs {mu} ± {tol}");
        if let Some(m4) = mu4(&d) {
            let tol = 5.0 * ((m4 - sig2 * sig2).max(0.0) / nf).sqrt() + 1e-9 * sig2.max(1.0);
            assert!(
                (var - sig2).abs() <= tol,
                "{d}: var {var} vs {sig2} ± {tol}"
            );
        }
    }
    let dn = ks_stat(&xs, &d);
    let crit = 1.63 / nf.sqrt();
    assert!(dn < crit, "{d}: KS D={dn} >= {crit}");
}

#[test]
fn constant() {
    check(Dist::Constant { value: 10.0 }, 1000);
}

#[test]
fn uniform() {
    check(Dist::Uniform { min: 1.0, max: 5.0 }, 50_000);
}

#[test]
fn exponential() {
    check(Dist::Exponential { mean: 10.0 }, 50_000);
}

#[test]
fn normal() {
    check(
        Dist::Normal {
            mean: 100.0,
            stddev: 15.0,
        },
        50_000,
    );
}

#[test]
fn poisson_small_and_large_mean() {
    check(Dist::Poisson { mean: 5.0 }, 50_000);
    check(Dist::Poisson { mean: 0.3 }, 50_000);
    check(Dist::Poisson { mean: 40.0 }, 50_000);
}

#[test]
fn inverse_poisson() {
    check(
        Dist::InversePoisson {
            numerator: 1000.0,
            mean: 5.0,
        },
        50_000,
    );
    check(
        Dist::InversePoisson {
            numerator: 1000.0,
            mean: 0.5,
        },
        50_000,
    );
}

#[test]
fn pareto_finite_and_heavy_tail() {
    check(
        Dist::Pareto {
            shape: 5.0,
            scale: 10.0,
        },
        50_000,
    );
    // Infinite variance: KS only (mean not checked without a variance).
    check(
        Dist::Pareto {
            shape: 1.5,
            scale: 10.0,
        },
        50_000,
    );
}

#[test]
fn cauchy_ks_only() {
    let d = Dist::Cauchy {
        location: 0.0,
        scale: 1.0,
    };
    assert_eq!(d.mean(), None);
    assert_eq!(d.variance(), None);
    check(d, 50_000);
}

#[test]
fn gamma() {
    check(
        Dist::Gamma {
            shape: 2.0,
            scale: 3.0,
        },
        50_000,
    );
    check(
        Dist::Gamma {
            shape: 0.5,
            scale: 2.0,
        },
        50_000,
    );
}

#[test]
fn weibull() {
    check(
        Dist::Weibull {
            shape: 1.5,
            scale: 2.0,
        },
        50_000,
    );
    check(
        Dist::Weibull {
            shape: 0.7,
            scale: 1.0,
        },
        50_000,
    );
}

#[test]
fn student_t() {
    check(
        Dist::StudentT {
            location: 5.0,
            scale: 2.0,
            dof: 8.0,
        },
        50_000,
    );
    // D-ITG-derived fit with dof < 1: no mean, KS only.
    let heavy = Dist::StudentT {
        location: 41.7,
        scale: 0.1,
        dof: 0.7,
    };
    assert_eq!(heavy.mean(), None);
    check(heavy, 50_000);
}

#[test]
fn mixture() {
    let d: Dist = "mix:0.6*exp:4.29+0.4*const:10.75".parse().unwrap();
    let mu = 0.6 * 4.29 + 0.4 * 10.75;
    assert!((d.mean().unwrap() - mu).abs() < 1e-12);
    let var = 0.6 * (4.29f64.powi(2) + 4.29f64.powi(2)) + 0.4 * 10.75f64.powi(2) - mu * mu;
    assert!((d.variance().unwrap() - var).abs() < 1e-9);
    check(d, 50_000);
    check(
        Dist::Mixture {
            parts: vec![
                (
                    1.0,
                    Dist::Normal {
                        mean: 0.0,
                        stddev: 1.0,
                    },
                ),
                (
                    3.0,
                    Dist::Gamma {
                        shape: 3.0,
                        scale: 2.0,
                    },
                ),
            ],
        },
        50_000,
    );
}

#[test]
fn empirical_random() {
    check(
        Dist::Empirical {
            values: vec![1.0, 2.0, 2.0, 7.0],
            order: EmpiricalOrder::Random,
        },
        20_000,
    );
}

#[test]
fn empirical_cycles_in_order() {
    let d = Dist::empirical_from_text("3 1\n4, 1 # comment\n5\n").unwrap();
    let xs = draw(&d, 11, SEED);
    assert_eq!(xs, [3., 1., 4., 1., 5., 3., 1., 4., 1., 5., 3.]);
    assert_eq!(d.mean(), Some(14.0 / 5.0));
    assert!(Dist::empirical_from_text(" # nothing\n").is_err());
    assert_eq!(
        Dist::empirical_from_text("1 x"),
        Err(DistError::Number("x".into()))
    );
}

#[test]
fn empirical_cursors_are_per_part() {
    let d: Dist = "mix:1*values:1,2,3+1*values:10,20".parse().unwrap();
    let xs = draw(&d, 200, SEED);
    let small: Vec<f64> = xs.iter().copied().filter(|x| *x < 10.0).collect();
    let big: Vec<f64> = xs.iter().copied().filter(|x| *x >= 10.0).collect();
    for (i, x) in small.iter().enumerate() {
        assert_eq!(*x, [1.0, 2.0, 3.0][i % 3]);
    }
    for (i, x) in big.iter().enumerate() {
        assert_eq!(*x, [10.0, 20.0][i % 2]);
    }
}

#[test]
fn reproducible() {
    let d: Dist = "mix:0.5*gamma:2,3+0.5*t:0,1,3".parse().unwrap();
    assert_eq!(draw(&d, 1000, 42), draw(&d, 1000, 42));
    assert_ne!(draw(&d, 1000, 42), draw(&d, 1000, 43));
    let mut s = Sampler::new(d.clone(), 42).unwrap();
    let first: Vec<f64> = (0..10).map(|_| s.sample()).collect();
    s.reset();
    let again: Vec<f64> = (0..10).map(|_| s.sample()).collect();
    assert_eq!(first, again);
    assert_eq!(s.seed(), 42);
    assert_eq!(s.dist(), &d);
}

#[test]
fn cdf_reference_values() {
    let close = |a: f64, b: f64| assert!((a - b).abs() < 1e-10, "{a} vs {b}");
    let n01 = Dist::Normal {
        mean: 0.0,
        stddev: 1.0,
    };
    close(n01.cdf(1.0).unwrap(), 0.841_344_746_068_542_9);
    close(n01.cdf(-1.96).unwrap(), 0.024_997_895_148_220_435);
    close(n01.cdf(0.0).unwrap(), 0.5);
    let g = Dist::Gamma {
        shape: 2.0,
        scale: 1.0,
    };
    close(g.cdf(1.0).unwrap(), 1.0 - 2.0 / std::f64::consts::E);
    close(g.cdf(5.0).unwrap(), 1.0 - 6.0 * (-5.0f64).exp());
    // Student-t with 2 dof: F(t) = 1/2 + t / (2 √(2 + t²)); with 1 dof it is Cauchy.
    let t2 = Dist::StudentT {
        location: 0.0,
        scale: 1.0,
        dof: 2.0,
    };
    for t in [-3.0, -0.5, 0.0, 0.7, 4.0] {
        close(t2.cdf(t).unwrap(), 0.5 + t / (2.0 * (2.0 + t * t).sqrt()));
    }
    let t1 = Dist::StudentT {
        location: 1.0,
        scale: 2.0,
        dof: 1.0,
    };
    let c = Dist::Cauchy {
        location: 1.0,
        scale: 2.0,
    };
    for x in [-10.0, 0.0, 1.0, 3.0, 50.0] {
        close(t1.cdf(x).unwrap(), c.cdf(x).unwrap());
    }
    let p = Dist::Poisson { mean: 3.5 };
    let mut acc = 0.0;
    let mut pk = (-3.5f64).exp();
    for k in 0..20 {
        acc += pk;
        close(p.cdf(f64::from(k)).unwrap(), acc);
        close(p.cdf(f64::from(k) + 0.5).unwrap(), acc);
        pk *= 3.5 / f64::from(k + 1);
    }
    close(
        Dist::Weibull {
            shape: 1.0,
            scale: 2.0,
        }
        .cdf(2.0)
        .unwrap(),
        1.0 - (-1.0f64).exp(),
    );
    assert_eq!(n01.cdf(f64::NAN), None);
    // Weibull mean with shape 1 is the scale; Γ(5) = 24.
    close(
        Dist::Weibull {
            shape: 1.0,
            scale: 2.0,
        }
        .mean()
        .unwrap(),
        2.0,
    );
    close(gamma_fn(5.0), 24.0);
}

#[test]
fn undefined_moments() {
    let p = |shape| Dist::Pareto { shape, scale: 1.0 };
    assert_eq!(p(1.0).mean(), None);
    assert_eq!(p(2.0).variance(), None);
    assert_eq!(p(3.0).mean(), Some(1.5));
    let t = |dof| Dist::StudentT {
        location: 2.0,
        scale: 1.0,
        dof,
    };
    assert_eq!(t(1.0).mean(), None);
    assert_eq!(t(1.5).mean(), Some(2.0));
    assert_eq!(t(2.0).variance(), None);
    assert_eq!(t(4.0).variance(), Some(2.0));
    let m = Dist::Mixture {
        parts: vec![(1.0, p(1.0)), (1.0, Dist::Constant { value: 1.0 })],
    };
    assert_eq!(m.mean(), None);
}

#[test]
fn validation() {
    let bad = [
        Dist::Uniform { min: 5.0, max: 1.0 },
        Dist::Exponential { mean: 0.0 },
        Dist::Normal {
            mean: 0.0,
            stddev: -1.0,
        },
        Dist::Poisson { mean: -1.0 },
        Dist::Pareto {
            shape: 0.0,
            scale: 1.0,
        },
        Dist::Cauchy {
            location: f64::NAN,
            scale: 1.0,
        },
        Dist::Gamma {
            shape: 1.0,
            scale: f64::INFINITY,
        },
        Dist::Weibull {
            shape: 1.0,
            scale: -2.0,
        },
        Dist::StudentT {
            location: 0.0,
            scale: 1.0,
            dof: 0.0,
        },
        Dist::Mixture { parts: vec![] },
        Dist::Mixture {
            parts: vec![(0.0, Dist::Constant { value: 1.0 })],
        },
        Dist::Mixture {
            parts: vec![(-1.0, Dist::Constant { value: 1.0 })],
        },
        Dist::Empirical {
            values: vec![],
            order: EmpiricalOrder::Cycle,
        },
    ];
    for d in bad {
        assert!(d.validate().is_err(), "{d:?} accepted");
        assert!(Sampler::new(d, 1).is_err());
    }
    assert_eq!(
        Dist::Exponential { mean: 0.0 }.validate(),
        Err(DistError::InvalidParam {
            kind: "exp",
            param: "mean",
            must: "finite and > 0",
            value: 0.0
        })
    );
    assert!(Dist::Uniform { min: 2.0, max: 2.0 }.validate().is_ok());
}

#[test]
fn text_spelling() {
    let cases: [(&str, Dist); 13] = [
        ("const:10", Dist::Constant { value: 10.0 }),
        ("uniform:1,5", Dist::Uniform { min: 1.0, max: 5.0 }),
        ("exp:10", Dist::Exponential { mean: 10.0 }),
        (
            "normal:100,15",
            Dist::Normal {
                mean: 100.0,
                stddev: 15.0,
            },
        ),
        ("poisson:5", Dist::Poisson { mean: 5.0 }),
        (
            "invpoisson:1000,5",
            Dist::InversePoisson {
                numerator: 1000.0,
                mean: 5.0,
            },
        ),
        (
            "pareto:1.5,10",
            Dist::Pareto {
                shape: 1.5,
                scale: 10.0,
            },
        ),
        (
            "cauchy:0,1",
            Dist::Cauchy {
                location: 0.0,
                scale: 1.0,
            },
        ),
        (
            "gamma:2,3",
            Dist::Gamma {
                shape: 2.0,
                scale: 3.0,
            },
        ),
        (
            "weibull:1.5,2",
            Dist::Weibull {
                shape: 1.5,
                scale: 2.0,
            },
        ),
        (
            "t:41.7,0.1,0.7",
            Dist::StudentT {
                location: 41.7,
                scale: 0.1,
                dof: 0.7,
            },
        ),
        (
            "values:1,2,3",
            Dist::Empirical {
                values: vec![1.0, 2.0, 3.0],
                order: EmpiricalOrder::Cycle,
            },
        ),
        (
            "mix:0.6*exp:4.29+0.4*const:1e+1",
            Dist::Mixture {
                parts: vec![
                    (0.6, Dist::Exponential { mean: 4.29 }),
                    (0.4, Dist::Constant { value: 10.0 }),
                ],
            },
        ),
    ];
    for (text, want) in cases {
        let got: Dist = text.parse().unwrap();
        assert_eq!(got, want, "{text}");
        let again: Dist = got.to_string().parse().unwrap();
        assert_eq!(again, want, "display round trip of {text}");
    }
    assert_eq!(
        " Gauss : 1 , 2 ".parse::<Dist>(),
        Ok(Dist::Normal {
            mean: 1.0,
            stddev: 2.0
        })
    );
    assert_eq!(
        "file:/tmp/x.txt".parse::<Dist>(),
        Err(DistError::NeedsFile("/tmp/x.txt".into()))
    );
    assert_eq!(
        "zipf:1".parse::<Dist>(),
        Err(DistError::UnknownKind("zipf".into()))
    );
    assert!(matches!(
        "exp:1,2".parse::<Dist>(),
        Err(DistError::Arity { .. })
    ));
    assert!(matches!("exp".parse::<Dist>(), Err(DistError::Syntax(_))));
    assert!(matches!(
        "exp:-1".parse::<Dist>(),
        Err(DistError::InvalidParam { .. })
    ));
    assert!(matches!(
        "mix:1*mix:1*const:1".parse::<Dist>(),
        Err(DistError::Syntax(_))
    ));
    assert!(matches!(
        "mix:exp:1".parse::<Dist>(),
        Err(DistError::Syntax(_))
    ));
}

#[test]
fn serde_round_trip() {
    let d: Dist = "mix:0.6*exp:4.29+0.4*choice:1,2".parse().unwrap();
    let json = serde_json::to_string(&d).unwrap();
    assert!(json.contains("\"kind\":\"mixture\""), "{json}");
    assert_eq!(serde_json::from_str::<Dist>(&json).unwrap(), d);
    let e: Dist = serde_json::from_str(r#"{"kind":"empirical","values":[1,2]}"#).unwrap();
    assert_eq!(
        e,
        Dist::Empirical {
            values: vec![1.0, 2.0],
            order: EmpiricalOrder::Cycle
        }
    );
    let w: Dist = serde_json::from_str(r#"{"kind":"weibull","shape":1.5,"scale":2}"#).unwrap();
    assert_eq!(
        w,
        Dist::Weibull {
            shape: 1.5,
            scale: 2.0
        }
    );
}

#[test]
fn ditg_idt_translation() {
    let t = |f, a: &[f64]| from_ditg_idt(f, a).unwrap();
    assert_eq!(t('C', &[100.0]), Dist::Constant { value: 10.0 });
    assert_eq!(
        t('U', &[10.0, 100.0]),
        Dist::Uniform {
            min: 10.0,
            max: 100.0
        }
    );
    assert_eq!(t('E', &[50.0]), Dist::Exponential { mean: 20.0 });
    assert_eq!(
        t('N', &[20.0, 3.0]),
        Dist::Normal {
            mean: 20.0,
            stddev: 3.0
        }
    );
    assert_eq!(
        t('O', &[5.0]),
        Dist::InversePoisson {
            numerator: 1000.0,
            mean: 5.0
        }
    );
    assert_eq!(
        t('V', &[1.5, 10.0]),
        Dist::Pareto {
            shape: 1.5,
            scale: 10.0
        }
    );
    assert_eq!(
        t('Y', &[3.0, 0.5]),
        Dist::Cauchy {
            location: 3.0,
            scale: 0.5
        }
    );
    assert_eq!(
        t('G', &[2.0, 4.0]),
        Dist::Gamma {
            shape: 2.0,
            scale: 4.0
        }
    );
    // D-ITG passes (scale, shape) to newran despite its help text.
    assert_eq!(
        t('W', &[10.0, 1.5]),
        Dist::Weibull {
            shape: 1.5,
            scale: 10.0
        }
    );
    assert_eq!(
        from_ditg_idt('Q', &[1.0]),
        Err(DistError::UnknownDitgFlag('Q'))
    );
    assert_eq!(
        from_ditg_idt('c', &[1.0]),
        Err(DistError::UnknownDitgFlag('c'))
    );
    assert!(matches!(
        from_ditg_idt('C', &[0.0]),
        Err(DistError::InvalidParam { .. })
    ));
    assert!(matches!(
        from_ditg_idt('U', &[1.0]),
        Err(DistError::Arity { .. })
    ));
    assert!(from_ditg_idt('U', &[100.0, 10.0]).is_err());
}

#[test]
fn ditg_size_translation() {
    let t = |f, a: &[f64]| from_ditg_size(f, a).unwrap();
    assert_eq!(t('c', &[512.0]), Dist::Constant { value: 512.0 });
    assert_eq!(
        t('u', &[100.0, 500.0]),
        Dist::Uniform {
            min: 100.0,
            max: 500.0
        }
    );
    assert_eq!(t('e', &[300.0]), Dist::Exponential { mean: 300.0 });
    assert_eq!(
        t('n', &[500.0, 50.0]),
        Dist::Normal {
            mean: 500.0,
            stddev: 50.0
        }
    );
    assert_eq!(t('o', &[400.0]), Dist::Poisson { mean: 400.0 });
    assert_eq!(
        t('v', &[1.2, 100.0]),
        Dist::Pareto {
            shape: 1.2,
            scale: 100.0
        }
    );
    assert_eq!(
        t('y', &[500.0, 20.0]),
        Dist::Cauchy {
            location: 500.0,
            scale: 20.0
        }
    );
    assert_eq!(
        t('g', &[2.0, 100.0]),
        Dist::Gamma {
            shape: 2.0,
            scale: 100.0
        }
    );
    assert_eq!(
        t('w', &[400.0, 2.0]),
        Dist::Weibull {
            shape: 2.0,
            scale: 400.0
        }
    );
    assert_eq!(
        from_ditg_size('C', &[1.0]),
        Err(DistError::UnknownDitgFlag('C'))
    );
    assert!(matches!(
        from_ditg_size('n', &[1.0]),
        Err(DistError::Arity { .. })
    ));
    // On/off periods use raw values with the upper-case letters.
    assert_eq!(
        from_ditg_onoff_period('C', &[1000.0]),
        Ok(Dist::Constant { value: 1000.0 })
    );
    assert_eq!(
        from_ditg_onoff_period('W', &[10.0, 2.0]),
        Ok(Dist::Weibull {
            shape: 2.0,
            scale: 10.0
        })
    );
    assert_eq!(
        from_ditg_onoff_period('c', &[1.0]),
        Err(DistError::UnknownDitgFlag('c'))
    );
}

#[test]
fn onoff_duty_cycle() {
    let spec = OnOff {
        on: Dist::Exponential { mean: 0.2 },
        off: Dist::Uniform { min: 0.1, max: 0.5 },
    };
    let r = spec.duty_cycle().unwrap();
    assert!((r - 0.4).abs() < 1e-12);
    let mut p = OnOffProcess::new(spec.clone(), SEED).unwrap();
    let cycles = 20_000;
    let mut on_ns = 0u64;
    let mut period = p.current();
    assert!(period.on && period.start_ns == 0);
    for _ in 0..2 * cycles {
        if period.on {
            on_ns += period.end_ns - period.start_ns;
        }
        let next = p.advance();
        assert_eq!(next.start_ns, period.end_ns);
        assert_ne!(next.on, period.on);
        period = next;
    }
    let total = period.start_ns as f64;
    let frac = on_ns as f64 / total;
    // Delta method: Var(R) ≈ ((1−r)² Var(on) + r² Var(off)) / (N (E[on]+E[off])²).
    let (von, voff) = (spec.on.variance().unwrap(), spec.off.variance().unwrap());
    let cyc = spec.on.mean().unwrap() + spec.off.mean().unwrap();
    let sd = (((1.0 - r).powi(2) * von + r * r * voff) / cycles as f64).sqrt() / cyc;
    assert!(
        (frac - r).abs() < 5.0 * sd,
        "duty {frac} vs {r} ± {}",
        5.0 * sd
    );

    // Time-sampled view through is_on agrees on a fine grid.
    let mut q = OnOffProcess::new(spec, SEED).unwrap();
    let step = 5_000_000u64; // 5 ms
    let points = 400_000u64; // 2000 s ≈ 4000 cycles
    let on_points = (0..points).filter(|i| q.is_on(i * step)).count();
    let frac = on_points as f64 / points as f64;
    let sd4000 = sd * (cycles as f64 / 4000.0).sqrt();
    assert!((frac - r).abs() < 5.0 * sd4000 + 0.01, "grid duty {frac}");
}

#[test]
fn onoff_queries_and_rewind() {
    let spec = OnOff {
        on: Dist::Constant { value: 2.0 },
        off: Dist::Constant { value: 3.0 },
    };
    let mut p = OnOffProcess::with_unit(spec.clone(), 7, 1e6).unwrap(); // ms
    assert!(p.is_on(0));
    assert_eq!(p.next_transition(), 2_000_000);
    assert!(!p.is_on(2_000_000));
    assert!(!p.is_on(4_999_999));
    assert!(p.is_on(5_000_000));
    assert!(p.is_on(1_000_000)); // rewinds
    assert_eq!(
        p.period_at(12_000_000),
        Period {
            on: false,
            start_ns: 12_000_000,
            end_ns: 15_000_000
        }
    );
    // Random periods replay identically after a rewind.
    let spec = OnOff {
        on: Dist::Exponential { mean: 1.0 },
        off: Dist::Gamma {
            shape: 2.0,
            scale: 1.0,
        },
    };
    let mut a = OnOffProcess::new(spec.clone(), 9).unwrap();
    let fwd: Vec<Period> = (0..50).map(|i| a.period_at(i * 250_000_000)).collect();
    let back: Vec<Period> = (0..50)
        .rev()
        .map(|i| a.period_at(i * 250_000_000))
        .collect();
    assert_eq!(fwd, back.into_iter().rev().collect::<Vec<_>>());
    let zero = OnOff {
        on: Dist::Constant { value: 0.0 },
        off: Dist::Uniform {
            min: -1.0,
            max: 0.0,
        },
    };
    assert_eq!(
        OnOffProcess::new(zero, 1).err(),
        Some(DistError::DegenerateOnOff)
    );
    assert!(OnOffProcess::with_unit(spec, 1, 0.0).is_err());
}
