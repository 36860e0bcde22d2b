//! On/off (burst) processes.

use super::sampler::splitmix64;
use super::*;

/// On/off (burst) process: alternating ON and OFF periods whose durations are drawn from
/// `on` and `off`. Negative draws count as zero-length periods.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct OnOff {
    /// Distribution of ON period durations.
    pub on: Dist,
    /// Distribution of OFF period durations.
    pub off: Dist,
}

impl OnOff {
    /// Validate both distributions and reject a process that can never advance.
    pub fn validate(&self) -> Result<(), DistError> {
        self.on.validate()?;
        self.off.validate()?;
        if !self.on.can_be_positive() && !self.off.can_be_positive() {
            return Err(DistError::DegenerateOnOff);
        }
        Ok(())
    }

    /// Long-run fraction of time ON, `E[on]/(E[on]+E[off])`, where both means exist.
    /// (Exact when draws are non-negative.)
    pub fn duty_cycle(&self) -> Option<f64> {
        let (a, b) = (self.on.mean()?, self.off.mean()?);
        (a + b > 0.0).then(|| a / (a + b))
    }
}

/// One period of an [`OnOffProcess`]: `[start_ns, end_ns)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Period {
    /// Whether this is an ON period.
    pub on: bool,
    /// Start (inclusive), ns since the process start.
    pub start_ns: u64,
    /// End (exclusive), ns since the process start.
    pub end_ns: u64,
}

/// Sans-IO on/off process in virtual time. It starts with an ON period at `t = 0`.
/// ON durations come from a [`Sampler`] seeded with `splitmix64(seed)`, OFF durations
/// from one seeded with `splitmix64(seed ^ 0x6f66_66)`.
#[derive(Debug, Clone)]
pub struct OnOffProcess {
    ns_per_unit: f64,
    on: Sampler,
    off: Sampler,
    current: Period,
}

impl OnOffProcess {
    /// A process whose period durations are in **seconds**.
    pub fn new(spec: OnOff, seed: u64) -> Result<Self, DistError> {
        Self::with_unit(spec, seed, 1e9)
    }

    /// A process whose period durations are in units of `ns_per_unit` nanoseconds
    /// (`1e6` for D-ITG's milliseconds).
    pub fn with_unit(spec: OnOff, seed: u64, ns_per_unit: f64) -> Result<Self, DistError> {
        spec.validate()?;
        positive("on/off", "ns_per_unit", ns_per_unit)?;
        let on = Sampler::new(spec.on, splitmix64(seed))?;
        let off = Sampler::new(spec.off, splitmix64(seed ^ 0x6f_6666))?;
        let mut p = OnOffProcess {
            ns_per_unit,
            on,
            off,
            current: Period {
                on: true,
                start_ns: 0,
                end_ns: 0,
            },
        };
        p.restart();
        Ok(p)
    }

    fn duration_ns(&self, units: f64) -> u64 {
        let ns = (units * self.ns_per_unit).round();
        if ns.is_nan() || ns <= 0.0 {
            0
        } else if ns >= u64::MAX as f64 {
            u64::MAX
        } else {
            ns as u64
        }
    }

    fn restart(&mut self) {
        self.on.reset();
        self.off.reset();
        let d = self.on.sample();
        self.current = Period {
            on: true,
            start_ns: 0,
            end_ns: self.duration_ns(d),
        };
    }

    /// The current period.
    pub fn current(&self) -> Period {
        self.current
    }

    /// When the current period ends (the next ON↔OFF transition), ns.
    pub fn next_transition(&self) -> u64 {
        self.current.end_ns
    }

    /// Move to the next period and return it.
    pub fn advance(&mut self) -> Period {
        let on = !self.current.on;
        let d = if on {
            self.on.sample()
        } else {
            self.off.sample()
        };
        let start = self.current.end_ns;
        self.current = Period {
            on,
            start_ns: start,
            end_ns: start.saturating_add(self.duration_ns(d)),
        };
        self.current
    }

    /// The period containing `t_ns`. Cheap for non-decreasing `t_ns`; an earlier `t_ns`
    /// replays the process from the start (same seed, same periods).
    pub fn period_at(&mut self, t_ns: u64) -> Period {
        if t_ns < self.current.start_ns {
            self.restart();
        }
        while t_ns >= self.current.end_ns && self.current.end_ns < u64::MAX {
            self.advance();
        }
        self.current
    }

    /// Whether the process is ON at `t_ns`.
    pub fn is_on(&mut self, t_ns: u64) -> bool {
        self.period_at(t_ns).on
    }
}
