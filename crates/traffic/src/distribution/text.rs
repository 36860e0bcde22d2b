//! Text spelling of [`Dist`] (`FromStr`/`Display`) and the D-ITG flag translations.

use super::*;

impl fmt::Display for Dist {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = self.kind_name();
        let join = |v: &[f64]| {
            v.iter()
                .map(|x| x.to_string())
                .collect::<Vec<_>>()
                .join(",")
        };
        match self {
            Dist::Constant { value } => write!(f, "{name}:{value}"),
            Dist::Uniform { min: a, max: b }
            | Dist::Normal { mean: a, stddev: b }
            | Dist::InversePoisson {
                numerator: a,
                mean: b,
            }
            | Dist::Pareto { shape: a, scale: b }
            | Dist::Cauchy {
                location: a,
                scale: b,
            }
            | Dist::Gamma { shape: a, scale: b }
            | Dist::Weibull { shape: a, scale: b } => write!(f, "{name}:{a},{b}"),
            Dist::Exponential { mean } | Dist::Poisson { mean } => write!(f, "{name}:{mean}"),
            Dist::StudentT {
                location,
                scale,
                dof,
            } => write!(f, "{name}:{location},{scale},{dof}"),
            Dist::Mixture { parts } => {
                write!(f, "mix:")?;
                for (i, (w, d)) in parts.iter().enumerate() {
                    if i > 0 {
                        write!(f, "+")?;
                    }
                    write!(f, "{w}*{d}")?;
                }
                Ok(())
            }
            Dist::Empirical { values, .. } => write!(f, "{name}:{}", join(values)),
        }
    }
}

pub(super) fn parse_num(s: &str) -> Result<f64, DistError> {
    s.trim()
        .parse::<f64>()
        .map_err(|_| DistError::Number(s.trim().to_owned()))
}

fn arity(kind: &str, args: &[f64], expected: usize) -> Result<(), DistError> {
    if args.len() == expected {
        Ok(())
    } else {
        Err(DistError::Arity {
            kind: kind.to_owned(),
            expected,
            got: args.len(),
        })
    }
}

/// Split a mixture body at `+` signs that are not exponent signs (`1e+3`).
fn split_terms(body: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = 0;
    let bytes = body.as_bytes();
    for (i, b) in bytes.iter().enumerate() {
        if *b == b'+' && i > 0 && !matches!(bytes[i - 1], b'e' | b'E') {
            out.push(&body[start..i]);
            start = i + 1;
        }
    }
    out.push(&body[start..]);
    out
}

impl FromStr for Dist {
    type Err = DistError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let s = s.trim();
        let (kind, body) = s
            .split_once(':')
            .ok_or_else(|| DistError::Syntax(s.to_owned()))?;
        let kind_lc = kind.trim().to_ascii_lowercase();
        if kind_lc == "file" {
            return Err(DistError::NeedsFile(body.trim().to_owned()));
        }
        if kind_lc == "mix" || kind_lc == "mixture" {
            let mut parts = Vec::new();
            for term in split_terms(body) {
                let (w, spec) = term
                    .split_once('*')
                    .ok_or_else(|| DistError::Syntax(term.trim().to_owned()))?;
                let d: Dist = spec.parse()?;
                if matches!(d, Dist::Mixture { .. }) {
                    return Err(DistError::Syntax(term.trim().to_owned()));
                }
                parts.push((parse_num(w)?, d));
            }
            let d = Dist::Mixture { parts };
            d.validate()?;
            return Ok(d);
        }
        let args = if body.trim().is_empty() {
            Vec::new()
        } else {
            body.split(',')
                .map(parse_num)
                .collect::<Result<Vec<_>, _>>()?
        };
        let a = |n: usize| arity(&kind_lc, &args, n);
        let d = match kind_lc.as_str() {
            "const" | "constant" => {
                a(1)?;
                Dist::Constant { value: args[0] }
            }
            "uniform" | "unif" => {
                a(2)?;
                Dist::Uniform {
                    min: args[0],
                    max: args[1],
                }
            }
            "exp" | "exponential" => {
                a(1)?;
                Dist::Exponential { mean: args[0] }
            }
            "normal" | "gauss" | "gaussian" => {
                a(2)?;
                Dist::Normal {
                    mean: args[0],
                    stddev: args[1],
                }
            }
            "poisson" => {
                a(1)?;
                Dist::Poisson { mean: args[0] }
            }
            "invpoisson" => {
                a(2)?;
                Dist::InversePoisson {
                    numerator: args[0],
                    mean: args[1],
                }
            }
            "pareto" => {
                a(2)?;
                Dist::Pareto {
                    shape: args[0],
                    scale: args[1],
                }
            }
            "cauchy" => {
                a(2)?;
                Dist::Cauchy {
                    location: args[0],
                    scale: args[1],
                }
            }
            "gamma" => {
                a(2)?;
                Dist::Gamma {
                    shape: args[0],
                    scale: args[1],
                }
            }
            "weibull" => {
                a(2)?;
                Dist::Weibull {
                    shape: args[0],
                    scale: args[1],
                }
            }
            "t" | "student" | "studentt" | "student-t" => {
                a(3)?;
                Dist::StudentT {
                    location: args[0],
                    scale: args[1],
                    dof: args[2],
                }
            }
            "values" | "empirical" => Dist::Empirical {
                values: args,
                order: EmpiricalOrder::Cycle,
            },
            "choice" => Dist::Empirical {
                values: args,
                order: EmpiricalOrder::Random,
            },
            _ => return Err(DistError::UnknownKind(kind.trim().to_owned())),
        };
        d.validate()?;
        Ok(d)
    }
}

fn ditg_rate(flag: char, r: f64) -> Result<f64, DistError> {
    positive("ditg rate", "rate (pkt/s)", r)
        .map(|_| 1000.0 / r)
        .map_err(|e| match e {
            DistError::InvalidParam { must, value, .. } => DistError::InvalidParam {
                kind: ditg_flag_name(flag),
                param: "rate (pkt/s)",
                must,
                value,
            },
            other => other,
        })
}

fn ditg_flag_name(flag: char) -> &'static str {
    match flag {
        'C' => "-C",
        'U' => "-U",
        'E' => "-E",
        _ => "D-ITG",
    }
}

/// Translate a D-ITG inter-departure-time flag (`ITGSend -C -U -E -N -O -V -Y -G -W`,
/// without the dash) and its numeric arguments to a [`Dist`] in **milliseconds**,
/// following D-ITG 2.8.1's code rather than its help text:
///
/// | Flag | D-ITG | Result (ms) |
/// |---|---|---|
/// | `C r` | constant rate r pkt/s | `Constant{1000/r}` |
/// | `U rmin rmax` | uniform rate | `Uniform{1000/rmax, 1000/rmin}` |
/// | `E r` | exponential, mean rate r | `Exponential{mean: 1000/r}` |
/// | `N μ σ` | normal IDT in ms (not a rate) | `Normal{μ, σ}` |
/// | `O m` | `1000 / Poisson(m)` | `InversePoisson{1000, m}` |
/// | `V α β` | `β · Pareto(α, x_min 1)` | `Pareto{shape: α, scale: β}` |
/// | `Y a b` | `b · Cauchy + a` (help says shape, scale) | `Cauchy{location: a, scale: b}` |
/// | `G k θ` | `θ · Gamma(k)` | `Gamma{shape: k, scale: θ}` |
/// | `W a b` | newran `Weibull(scale=a, shape=b)` (help says shape, scale) | `Weibull{shape: b, scale: a}` |
pub fn from_ditg_idt(flag: char, args: &[f64]) -> Result<Dist, DistError> {
    let name = format!("-{flag}");
    let d = match flag {
        'C' => {
            arity(&name, args, 1)?;
            Dist::Constant {
                value: ditg_rate(flag, args[0])?,
            }
        }
        'U' => {
            arity(&name, args, 2)?;
            Dist::Uniform {
                min: ditg_rate(flag, args[1])?,
                max: ditg_rate(flag, args[0])?,
            }
        }
        'E' => {
            arity(&name, args, 1)?;
            Dist::Exponential {
                mean: ditg_rate(flag, args[0])?,
            }
        }
        'O' => {
            arity(&name, args, 1)?;
            Dist::InversePoisson {
                numerator: 1000.0,
                mean: args[0],
            }
        }
        'N' | 'V' | 'Y' | 'G' | 'W' => return from_ditg_size(flag.to_ascii_lowercase(), args),
        _ => return Err(DistError::UnknownDitgFlag(flag)),
    };
    d.validate()?;
    Ok(d)
}

/// Translate a D-ITG packet-size flag (`ITGSend -c -u -e -n -o -v -y -g -w`, without the
/// dash) to a [`Dist`] in **bytes** (D-ITG's integer truncation and `[16, 64000]` clamp
/// are the caller's job):
///
/// | Flag | Result |
/// |---|---|
/// | `c s` | `Constant{s}` |
/// | `u a b` | `Uniform{a, b}` |
/// | `e m` | `Exponential{mean: m}` |
/// | `n μ σ` | `Normal{μ, σ}` |
/// | `o m` | `Poisson{m}` |
/// | `v α β` | `Pareto{shape: α, scale: β}` |
/// | `y a b` | `Cauchy{location: a, scale: b}` |
/// | `g k θ` | `Gamma{shape: k, scale: θ}` |
/// | `w a b` | `Weibull{shape: b, scale: a}` (same argument-order quirk as `-W`) |
pub fn from_ditg_size(flag: char, args: &[f64]) -> Result<Dist, DistError> {
    let name = format!("-{flag}");
    let d = match flag {
        'c' => {
            arity(&name, args, 1)?;
            Dist::Constant { value: args[0] }
        }
        'u' => {
            arity(&name, args, 2)?;
            Dist::Uniform {
                min: args[0],
                max: args[1],
            }
        }
        'e' => {
            arity(&name, args, 1)?;
            Dist::Exponential { mean: args[0] }
        }
        'n' => {
            arity(&name, args, 2)?;
            Dist::Normal {
                mean: args[0],
                stddev: args[1],
            }
        }
        'o' => {
            arity(&name, args, 1)?;
            Dist::Poisson { mean: args[0] }
        }
        'v' => {
            arity(&name, args, 2)?;
            Dist::Pareto {
                shape: args[0],
                scale: args[1],
            }
        }
        'y' => {
            arity(&name, args, 2)?;
            Dist::Cauchy {
                location: args[0],
                scale: args[1],
            }
        }
        'g' => {
            arity(&name, args, 2)?;
            Dist::Gamma {
                shape: args[0],
                scale: args[1],
            }
        }
        'w' => {
            arity(&name, args, 2)?;
            Dist::Weibull {
                shape: args[1],
                scale: args[0],
            }
        }
        _ => return Err(DistError::UnknownDitgFlag(flag)),
    };
    d.validate()?;
    Ok(d)
}

/// Translate one half of D-ITG's `-B D1 p... D2 p...` (on/off) to a [`Dist`] of period
/// durations in **milliseconds**. D-ITG uses the raw values here (no rate conversion), so
/// `C`, `U`, `E`, `O` mean constant, uniform, exponential-with-mean and Poisson, exactly as
/// the size flags; `W` keeps the (scale, shape) order quirk.
pub fn from_ditg_onoff_period(flag: char, args: &[f64]) -> Result<Dist, DistError> {
    if flag.is_ascii_uppercase() {
        from_ditg_size(flag.to_ascii_lowercase(), args).map_err(|e| match e {
            DistError::UnknownDitgFlag(_) => DistError::UnknownDitgFlag(flag),
            other => other,
        })
    } else {
        Err(DistError::UnknownDitgFlag(flag))
    }
}
