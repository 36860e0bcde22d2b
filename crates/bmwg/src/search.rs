//! Throughput (RFC 2544 §26.1): the NDR, the highest load with no frame lost, and the
//! PDR, the highest load losing at most a ratio (0.5 %), found in one search that
//! follows draft-ietf-bmwg-mlrsearch (MLRsearch, FD.io CSIT).
//!
//! # The search
//!
//! A trial at load L of duration d is, for a goal loss ratio g, an *upper bound* if it
//! lost more than g (late frames count as lost, [`TrialOutcome::loss_ratio`]) and a
//! *lower bound* otherwise. As in MLRsearch, the *relevant upper bound* of a goal is the
//! smallest load classified as an upper bound, and the *relevant lower bound* the largest
//! load below it classified as a lower bound. A load is classified by its trial of the
//! longest duration (the latest of those); that classification is *current* in a phase
//! when that duration is at least the phase's.
//!
//! The search runs in phases k = 0..=K whose durations rise geometrically from
//! `initial_duration_ns` to `final_duration_ns` (each step at most ×4, rounded to ms)
//! and whose width goals halve down to `precision` (w_k = precision · 2^(K−k)), as
//! MLRsearch's intermediate phases do. In each phase, for the NDR goal and then the PDR
//! goal, the next trial is:
//!
//! 1. with no upper bound: the highest load (`max_fps`), unless it is already a current
//!    lower bound (the goal is then done, *capped*: the device did not lose at the
//!    highest load the tester offers, a lower bound);
//! 2. a relevant upper bound that is not current: re-measured at the phase's duration;
//! 3. no lower bound below it: a load below it (MLRsearch's external search): the smaller
//!    of the rate the device forwarded at the upper bound, L·(1 − loss), and
//!    L·(1 − w·2^e), where e counts this phase's earlier downward steps of the goal;
//! 4. a relevant lower bound that is not current: re-measured;
//! 5. both current and (U − L)/U > w: a load between them, U·(1 − w) when that alone ends
//!    the goal (width ≤ 2w − w²), else the middle; otherwise the goal is done for this
//!    phase.
//!
//! When both goals are done the next phase starts; after the final phase the NDR and
//! PDR are the relevant lower bounds, measured at the final duration.
//!
//! Where it differs from MLRsearch: every relevant bound is re-measured at each longer
//! duration, upper bounds too (MLRsearch trusts a short trial's loss at longer
//! durations), so a spurious loss in a short trial costs a trial, not the result; there is
//! no goal exceed ratio or per-load duration sum (one trial per load and duration decides);
//! and no upward external search: above a lower bound the search bisects towards the
//! next upper bound or the highest load.
//!
//! # The tester's ceiling
//!
//! A trial whose generator fell behind ([`TrialOutcome::tester_late`]) was not offered at
//! its rate: it classifies nothing. The tester's ceiling then lies between the highest
//! load it did offer below that rate and the lowest rate it fell behind at, and the search
//! bisects it as it bisects a goal: the highest load becomes the midpoint (that rate less
//! w·2^n while no lower load was offered; n: the consecutive late trials), and a lossless
//! trial at the highest load raises it halfway to the lowest late rate, until the two are
//! within the phase's width goal. Trials above the highest load are set aside, and the
//! result says [`SearchResult::tester_limited`]: a figure equal to the ceiling is a lower
//! bound of the device's. (Stepping only downwards, as first written, left a device's NDR
//! at 0.8 Mpps where the tester offered 1.6 Mpps on time, through a kernel device.)

use crate::{ConfigError, TrialKind, TrialOutcome, TrialSpec};

/// What a [`Search`] looks for.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SearchConfig {
    /// The lowest load tried; a goal lost even there reports 0.
    pub min_fps: u64,
    /// The highest load: line rate, or the tester's ceiling.
    pub max_fps: u64,
    /// The PDR's goal loss ratio (0.005: 0.5 %).
    pub pdr_ratio: f64,
    /// The first phase's trial duration (1 s).
    pub initial_duration_ns: u64,
    /// The final phase's trial duration (60 s; dualperf's --quick: 10 s).
    pub final_duration_ns: u64,
    /// The final width goal: (upper − lower) / upper (0.005).
    pub precision: f64,
    /// The most trials; a search that needs more ends not converged.
    pub max_trials: u32,
}

impl SearchConfig {
    /// Whether the search can run with it.
    pub fn check(&self) -> Result<(), ConfigError> {
        if self.min_fps == 0 || self.min_fps > self.max_fps {
            return Err(ConfigError::Rates {
                min_fps: self.min_fps,
                max_fps: self.max_fps,
            });
        }
        if self.initial_duration_ns < 1_000_000 || self.initial_duration_ns > self.final_duration_ns
        {
            return Err(ConfigError::Durations {
                initial_ns: self.initial_duration_ns,
                final_ns: self.final_duration_ns,
            });
        }
        for (what, value) in [("pdr ratio", self.pdr_ratio), ("precision", self.precision)] {
            if !(0.0..1.0).contains(&value) {
                return Err(ConfigError::Ratio { what, value });
            }
        }
        if self.max_trials == 0 {
            return Err(ConfigError::Zero { what: "max trials" });
        }
        Ok(())
    }

    /// Each phase's trial duration, ns: geometric from the initial to the final duration,
    /// each step at most ×4, rounded to the millisecond; the last is the final duration.
    pub fn durations(&self) -> Vec<u64> {
        let first = self.initial_duration_ns.max(1) as f64;
        let last = self.final_duration_ns.max(self.initial_duration_ns);
        let ratio = last as f64 / first;
        let steps = if ratio <= 1.0 {
            0
        } else {
            (ratio.ln() / 4f64.ln()).ceil() as u32
        };
        let mut d: Vec<u64> = (0..steps)
            .map(|k| {
                let ns = first * ratio.powf(f64::from(k) / f64::from(steps));
                ((ns / 1e6).round() * 1e6) as u64
            })
            .collect();
        d.push(last);
        d
    }
}

/// What the search found.
#[derive(Debug, Clone, PartialEq)]
pub struct SearchResult {
    /// The NDR, frames per second: the relevant lower bound of loss 0 (0 if even
    /// `min_fps` lost frames).
    pub ndr_fps: u64,
    /// The PDR: the relevant lower bound of loss ≤ `pdr_ratio`.
    pub pdr_fps: u64,
    /// The NDR's relevant upper bound, if any: the NDR lies in [ndr, upper).
    pub ndr_upper_fps: Option<u64>,
    /// The PDR's relevant upper bound, if any.
    pub pdr_upper_fps: Option<u64>,
    /// Every trial in order, with its outcome.
    pub trials: Vec<(TrialSpec, TrialOutcome)>,
    /// The NDR is the highest load (no upper bound): the device did at least that.
    pub capped: bool,
    /// The PDR is the highest load.
    pub pdr_capped: bool,
    /// The highest load after the tester's ceiling lowered it (else `max_fps`).
    pub ceiling_fps: u64,
    /// The tester could not offer `max_fps` (some trial was tester-late).
    pub tester_limited: bool,
    /// Both goals reached their width at the final duration; `false` when `max_trials`
    /// ran out first (the bounds are then those reached).
    pub converged: bool,
}

/// The two goals: NDR (loss 0), PDR.
const GOALS: usize = 2;

/// An MLRsearch-like NDR and PDR search, quinn style: [`Self::poll_trial`],
/// [`Self::handle_outcome`], [`Self::poll_result`]. Deterministic: the same outcomes
/// give the same trials.
#[derive(Debug, Clone)]
pub struct Search {
    cfg: SearchConfig,
    durations: Vec<u64>,
    phase: usize,
    /// The highest load, lowered by tester-late trials.
    max: u64,
    /// Consecutive tester-late trials.
    late_run: u32,
    /// The lowest rate the tester fell behind at.
    late_fps: Option<u64>,
    /// This phase's downward external steps, per goal.
    expand: [u32; GOALS],
    trials: Vec<(TrialSpec, TrialOutcome)>,
    pending: Option<TrialSpec>,
    /// Every phase done, or the tester cannot offer even `min_fps`.
    done: bool,
    converged: bool,
}

/// A load and its classification.
type Bound = Option<(u64, Class)>;

/// A load's classification for one goal.
#[derive(Debug, Clone, Copy)]
struct Class {
    upper: bool,
    current: bool,
    loss: f64,
}

impl Search {
    /// A search as `cfg` says (see [`SearchConfig::check`]: nonsense is clamped here,
    /// not refused).
    pub fn new(cfg: SearchConfig) -> Self {
        let min_fps = cfg.min_fps.max(1);
        let cfg = SearchConfig {
            min_fps,
            max_fps: cfg.max_fps.max(min_fps),
            max_trials: cfg.max_trials.max(1),
            ..cfg
        };
        Self {
            durations: cfg.durations(),
            phase: 0,
            max: cfg.max_fps,
            late_run: 0,
            late_fps: None,
            expand: [0; GOALS],
            trials: Vec::new(),
            pending: None,
            done: false,
            converged: false,
            cfg,
        }
    }

    fn goal_ratio(&self, goal: usize) -> f64 {
        if goal == 0 {
            0.0
        } else {
            self.cfg.pdr_ratio
        }
    }

    fn width_goal(&self) -> f64 {
        let left = (self.durations.len() - 1 - self.phase) as i32;
        self.cfg.precision * 2f64.powi(left)
    }

    /// How `load` is classified for goal `goal`, from its longest (then latest) trial
    /// that the tester offered.
    fn class(&self, load: u64, goal: usize) -> Option<Class> {
        let d = self.durations[self.phase];
        let mut best: Option<&(TrialSpec, TrialOutcome)> = None;
        for t in self
            .trials
            .iter()
            .filter(|(s, o)| s.rate_fps == load && !o.tester_late)
        {
            if best.is_none_or(|b| t.0.duration_ns >= b.0.duration_ns) {
                best = Some(t);
            }
        }
        best.map(|(s, o)| Class {
            upper: o.loss_ratio() > self.goal_ratio(goal),
            current: s.duration_ns >= d,
            loss: o.loss_ratio(),
        })
    }

    /// The relevant lower and upper bounds of `goal`: (load, class).
    fn bounds(&self, goal: usize) -> (Bound, Bound) {
        let mut loads: Vec<u64> = self
            .trials
            .iter()
            .filter(|(s, o)| !o.tester_late && s.rate_fps <= self.max)
            .map(|(s, _)| s.rate_fps)
            .collect();
        loads.sort_unstable();
        loads.dedup();
        let classes: Vec<(u64, Class)> = loads
            .iter()
            .filter_map(|&l| self.class(l, goal).map(|c| (l, c)))
            .collect();
        let up = classes.iter().find(|(_, c)| c.upper).copied();
        let lo = classes
            .iter()
            .rev()
            .find(|(l, c)| !c.upper && up.is_none_or(|(u, _)| *l < u))
            .copied();
        (lo, up)
    }

    /// The load goal `goal` wants measured next in this phase, `None` if it is done.
    fn next_load(&self, goal: usize) -> Option<u64> {
        let w = self.width_goal();
        let min = self.cfg.min_fps;
        match self.bounds(goal) {
            (lo, None) => match lo {
                Some((l, c)) if l == self.max && c.current => None,
                _ => Some(self.max),
            },
            (_, Some((u, c))) if !c.current => Some(u),
            (None, Some((u, c))) => {
                if u <= min {
                    return None;
                }
                let step = w * 2f64.powi(self.expand[goal] as i32);
                let forwarded = u as f64 * (1.0 - c.loss);
                let next = forwarded.min(u as f64 * (1.0 - step)).floor() as u64;
                Some(next.clamp(min, u - 1))
            }
            (Some((l, c)), Some(_)) if !c.current => Some(l),
            (Some((l, _)), Some((u, _))) => {
                let width = (u - l) as f64 / u as f64;
                if width <= w || u - l <= 1 {
                    return None;
                }
                let next = if width <= 2.0 * w - w * w {
                    (u as f64 * (1.0 - w)).ceil() as u64
                } else {
                    l + (u - l) / 2
                };
                Some(next.clamp(l + 1, u - 1))
            }
        }
    }

    /// The next trial, `None` when the search is done or out of trials. Until its outcome
    /// is handled the same trial is returned.
    pub fn poll_trial(&mut self) -> Option<TrialSpec> {
        if let Some(p) = self.pending {
            return Some(p);
        }
        while !self.done && self.trials.len() < self.cfg.max_trials as usize {
            let wanted = (0..GOALS).find_map(|g| self.next_load(g).map(|l| (g, l)));
            let Some((goal, load)) = wanted else {
                if self.phase + 1 == self.durations.len() {
                    self.done = true;
                    self.converged = true;
                } else {
                    self.phase += 1;
                    self.expand = [0; GOALS];
                }
                continue;
            };
            if matches!(self.bounds(goal), (None, Some((u, c))) if c.current && load < u) {
                self.expand[goal] += 1;
            }
            let duration_ns = self.durations[self.phase];
            let kind = if duration_ns == self.cfg.final_duration_ns {
                TrialKind::Final
            } else {
                TrialKind::Search
            };
            self.pending = Some(TrialSpec {
                rate_fps: load,
                duration_ns,
                kind,
            });
            return self.pending;
        }
        None
    }

    /// The outcome of the trial [`Self::poll_trial`] returned (any other is ignored).
    pub fn handle_outcome(&mut self, spec: &TrialSpec, o: &TrialOutcome) {
        if self.pending != Some(*spec) {
            return;
        }
        self.pending = None;
        self.trials.push((*spec, *o));
        let w = self.width_goal();
        if !o.tester_late {
            self.late_run = 0;
            // Offered and lossless at the highest load, which a late rate lowered: the
            // tester's ceiling is above it, so look halfway up.
            if let Some(late) = self.late_fps {
                let gap = late.saturating_sub(self.max);
                if spec.rate_fps == self.max
                    && o.loss_ratio() == 0.0
                    && gap as f64 > w * late as f64
                {
                    self.max += gap / 2;
                }
            }
            return;
        }
        // The tester's ceiling is below this rate: lower the highest load.
        if spec.rate_fps <= self.cfg.min_fps {
            self.done = true;
            return;
        }
        let offered = self
            .trials
            .iter()
            .filter(|(s, o)| !o.tester_late && s.rate_fps < spec.rate_fps)
            .map(|(s, _)| s.rate_fps)
            .max();
        // A generator that fell behind ran flat out: what it sustained is its ceiling,
        // give or take the width goal (a busy host's hiccup lowers it a little).
        let reached = o
            .achieved_fps
            .map(|a| ((a as f64 * (1.0 + w)).ceil() as u64).max(offered.map_or(0, |l| l + 1)));
        let late = [self.late_fps, Some(spec.rate_fps), reached]
            .into_iter()
            .flatten()
            .min()
            .unwrap_or(spec.rate_fps);
        self.late_fps = Some(late);
        let offered = offered.filter(|&l| l < late);
        let below = match (offered, o.achieved_fps) {
            (Some(l), _) if (late - l) as f64 <= w * late as f64 => l,
            (Some(l), _) => l + (late - l) / 2,
            (None, achieved) => {
                let step = w * 2f64.powi(self.late_run as i32);
                let stepped = spec.rate_fps as f64 * (1.0 - step.min(0.5));
                let near = achieved.map_or(f64::MAX, |a| a as f64 * (1.0 - w));
                stepped.min(near).floor() as u64
            }
        };
        self.late_run += 1;
        self.max = self.max.min(below.max(self.cfg.min_fps));
    }

    /// The result once the search is done or out of trials; `None` while it wants more.
    pub fn poll_result(&self) -> Option<SearchResult> {
        let out_of_trials = self.trials.len() >= self.cfg.max_trials as usize;
        if !self.done && !out_of_trials {
            return None;
        }
        let (ndr, ndr_up) = self.bounds(0);
        let (pdr, pdr_up) = self.bounds(1);
        Some(SearchResult {
            ndr_fps: ndr.map_or(0, |b| b.0),
            pdr_fps: pdr.map_or(0, |b| b.0),
            ndr_upper_fps: ndr_up.map(|b| b.0),
            pdr_upper_fps: pdr_up.map(|b| b.0),
            trials: self.trials.clone(),
            capped: ndr_up.is_none() && ndr.is_some(),
            pdr_capped: pdr_up.is_none() && pdr.is_some(),
            ceiling_fps: self.max,
            tester_limited: self.max < self.cfg.max_fps,
            converged: self.converged,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::NS_PER_S;

    /// A device that forwards at most `cap` frames per second, in virtual time.
    fn device(cap: u64) -> impl FnMut(&TrialSpec) -> TrialOutcome {
        move |s| {
            let offered = s.frames();
            let forwarded = crate::frames_at(cap, s.duration_ns);
            TrialOutcome {
                offered,
                received: offered.min(forwarded),
                ..TrialOutcome::default()
            }
        }
    }

    fn quick() -> SearchConfig {
        SearchConfig {
            min_fps: 10_000,
            max_fps: 1_000_000,
            pdr_ratio: 0.005,
            initial_duration_ns: NS_PER_S,
            final_duration_ns: 10 * NS_PER_S,
            precision: 0.005,
            max_trials: 100,
        }
    }

    fn run(cfg: SearchConfig, mut dut: impl FnMut(&TrialSpec) -> TrialOutcome) -> SearchResult {
        let mut s = Search::new(cfg);
        assert_eq!(s.poll_result(), None);
        while let Some(t) = s.poll_trial() {
            assert_eq!(s.poll_trial(), Some(t), "the same trial until handled");
            s.handle_outcome(&t, &dut(&t));
        }
        s.poll_result().expect("a result once no trial is left")
    }

    fn loads(r: &SearchResult) -> Vec<(u64, u64)> {
        r.trials
            .iter()
            .map(|(s, _)| (s.rate_fps, s.duration_ns / 1_000_000))
            .collect()
    }

    #[test]
    fn durations_rise_geometrically_to_the_final() {
        assert_eq!(
            quick().durations(),
            [NS_PER_S, 3_162_000_000, 10 * NS_PER_S]
        );
        let full = SearchConfig {
            final_duration_ns: 60 * NS_PER_S,
            ..quick()
        };
        assert_eq!(
            full.durations(),
            [NS_PER_S, 3_915_000_000, 15_326_000_000, 60 * NS_PER_S]
        );
        let one = SearchConfig {
            final_duration_ns: NS_PER_S,
            ..quick()
        };
        assert_eq!(one.durations(), [NS_PER_S]);
        assert_eq!(quick().check(), Ok(()));
        assert_eq!(
            SearchConfig {
                min_fps: 0,
                ..quick()
            }
            .check(),
            Err(ConfigError::Rates {
                min_fps: 0,
                max_fps: 1_000_000
            })
        );
        assert!(SearchConfig {
            pdr_ratio: 1.0,
            ..quick()
        }
        .check()
        .is_err());
        assert!(SearchConfig {
            final_duration_ns: 1,
            ..quick()
        }
        .check()
        .is_err());
    }

    #[test]
    fn a_device_lossless_below_812345_fps() {
        let r = run(quick(), device(812_345));
        assert!(r.converged);
        assert_eq!((r.ndr_fps, r.ndr_upper_fps), (812_345, Some(814_990)));
        assert_eq!((r.pdr_fps, r.pdr_upper_fps), (814_990, Some(819_085)));
        assert!(!r.capped && !r.pdr_capped && !r.tester_limited);
        assert_eq!(r.ceiling_fps, 1_000_000);
        // Phase 0 (1 s, width 2 %): the highest load, the rate it forwarded, halvings,
        // then 2 % below the upper bound; phase 1 (3.162 s, 1 %) re-measures both bounds;
        // phase 2 (10 s, 0.5 %) re-measures them and splits once more.
        assert_eq!(
            loads(&r),
            [
                (1_000_000, 1000),
                (812_345, 1000),
                (906_172, 1000),
                (859_258, 1000),
                (835_801, 1000),
                (819_085, 1000),
                (819_085, 3162),
                (812_345, 3162),
                (819_085, 10_000),
                (812_345, 10_000),
                (814_990, 10_000),
            ]
        );
        let finals = r
            .trials
            .iter()
            .filter(|(s, _)| s.kind == TrialKind::Final)
            .count();
        assert_eq!(finals, 3);
        // Both figures are lower bounds measured at the final duration.
        for fps in [r.ndr_fps, r.pdr_fps] {
            assert!(r
                .trials
                .iter()
                .any(|(s, _)| s.rate_fps == fps && s.duration_ns == 10 * NS_PER_S));
        }
    }

    #[test]
    fn one_spurious_loss_in_a_short_trial_costs_trials_not_the_result() {
        // The first trial at 812,345 fps loses one frame; every later one is clean.
        let mut clean = device(812_345);
        let mut glitched = false;
        let r = run(quick(), |s: &TrialSpec| {
            let mut o = clean(s);
            if s.rate_fps == 812_345 && !glitched {
                glitched = true;
                o.received -= 1;
            }
            o
        });
        assert!(r.converged);
        assert_eq!((r.ndr_fps, r.pdr_fps), (812_345, 814_990));
        assert_eq!(r.trials[1].1.lost(), 1);
        // Phase 0 takes 812,345 for the NDR's upper bound and steps down below it (4 %:
        // the second downward step), then narrows to 2 %; the PDR goes on as before.
        // Phase 1 re-measures that upper bound at 3.162 s, finds it clean, and the NDR's
        // bracket becomes [812,345, 819,085]: three trials more than a clean device.
        assert_eq!(
            loads(&r),
            [
                (1_000_000, 1000),
                (812_345, 1000),
                (779_851, 1000),
                (796_098, 1000),
                (796_099, 1000),
                (906_172, 1000),
                (859_258, 1000),
                (835_801, 1000),
                (819_085, 1000),
                (812_345, 3162),
                (819_085, 3162),
                (819_085, 10_000),
                (812_345, 10_000),
                (814_990, 10_000),
            ]
        );
    }

    #[test]
    fn a_late_generators_sustained_rate_takes_the_search_to_its_ceiling_at_once() {
        // The generator sustains 900,000 fps; asked more it falls behind at that rate.
        let mut dut = device(u64::MAX / NS_PER_S);
        let cfg = SearchConfig {
            max_fps: 20_000_000,
            ..quick()
        };
        let r = run(cfg, |s: &TrialSpec| TrialOutcome {
            tester_late: s.rate_fps > 900_000,
            achieved_fps: (s.rate_fps > 900_000).then_some(900_000),
            ..dut(s)
        });
        assert!(r.converged && r.capped && r.tester_limited);
        // 20,000,000 late at 900,000 → 900,000 · (1 − 2 %) = 882,000 on time → halfway
        // up to 900,000 · 1.02 = 900,000 on time; each longer phase, with half the width
        // goal, looks halfway up once more (909,000 and 904,500, late). Seven trials, two
        // of them late, where halving down from 20,000,000 takes five late ones first.
        assert_eq!(
            loads(&r),
            [
                (20_000_000, 1000),
                (882_000, 1000),
                (900_000, 1000),
                (900_000, 3162),
                (909_000, 3162),
                (900_000, 10_000),
                (904_500, 10_000),
            ]
        );
        assert_eq!((r.ndr_fps, r.ceiling_fps), (900_000, 900_000));
    }

    #[test]
    fn a_tester_that_cannot_keep_up_caps_the_search_and_says_so() {
        // The device never loses; the generator falls behind above 900,000 fps.
        let mut dut = device(u64::MAX / NS_PER_S);
        let r = run(quick(), |s: &TrialSpec| TrialOutcome {
            tester_late: s.rate_fps > 900_000,
            ..dut(s)
        });
        assert!(r.converged && r.capped && r.pdr_capped && r.tester_limited);
        // Down while nothing below was offered: 1,000,000 late → 980,000 (−2 %) late →
        // 940,800 (−4 %) late → 865,536 (−8 %) on time; then the ceiling is bisected
        // between 865,536 and 903,168... to each phase's width: 898,464 offered at the final
        // duration, 900,816 late. (Stepping only down stopped at 865,536.)
        assert_eq!(
            (r.ndr_fps, r.pdr_fps, r.ceiling_fps),
            (898_464, 898_464, 898_464)
        );
        assert_eq!(
            loads(&r),
            [
                (1_000_000, 1000),
                (980_000, 1000),
                (940_800, 1000),
                (865_536, 1000),
                (903_168, 1000),
                (884_352, 1000),
                (893_760, 1000),
                (893_760, 3162),
                (898_464, 3162),
                (898_464, 10_000),
                (900_816, 10_000),
            ]
        );
    }

    #[test]
    fn out_of_trials_reports_the_bounds_reached_not_converged() {
        let r = run(
            SearchConfig {
                max_trials: 5,
                ..quick()
            },
            device(812_345),
        );
        assert!(!r.converged);
        assert_eq!(r.trials.len(), 5);
        assert_eq!((r.ndr_fps, r.ndr_upper_fps), (812_345, Some(835_801)));
    }

    #[test]
    fn a_device_that_always_loses_a_little_has_no_ndr_but_a_pdr() {
        // 0.1 % lost at every load up to 812,345 fps, everything beyond lost as well; a
        // 60 s final duration: four phases (1, 3.915, 15.326, 60 s).
        let mut clean = device(812_345);
        let cfg = SearchConfig {
            final_duration_ns: 60 * NS_PER_S,
            ..quick()
        };
        let r = run(cfg, |s: &TrialSpec| {
            let o = clean(s);
            TrialOutcome {
                received: o.received - o.offered / 1000,
                ..o
            }
        });
        assert!(r.converged);
        // The NDR goal steps down from the forwarded rate by 8, 16, 32, 64 % and then
        // clamps at the lowest load, which loses too: no NDR, and each phase re-measures
        // that bound. The true PDR, r − 812,345 + r/1000 ≤ 0.005·r, is 815,607.
        assert_eq!((r.ndr_fps, r.ndr_upper_fps), (0, Some(10_000)));
        assert_eq!((r.pdr_fps, r.pdr_upper_fps), (811_848, Some(815_927)));
        assert_eq!(
            loads(&r),
            [
                (1_000_000, 1000),
                (811_345, 1000),
                (746_437, 1000),
                (627_007, 1000),
                (426_364, 1000),
                (153_491, 1000),
                (10_000, 1000),
                (905_672, 1000),
                (858_508, 1000),
                (824_168, 1000),
                (10_000, 3915),
                (824_168, 3915),
                (811_345, 3915),
                (10_000, 15_326),
                (824_168, 15_326),
                (811_345, 15_326),
                (815_927, 15_326),
                (10_000, 60_000),
                (815_927, 60_000),
                (811_345, 60_000),
                (811_848, 60_000),
            ]
        );
    }

    #[test]
    fn a_device_that_loses_even_at_the_lowest_load_reports_zero() {
        let r = run(quick(), |s: &TrialSpec| TrialOutcome {
            offered: s.frames(),
            received: s.frames() / 2,
            ..TrialOutcome::default()
        });
        assert!(r.converged);
        assert_eq!(
            (r.ndr_fps, r.pdr_fps, r.ndr_upper_fps),
            (0, 0, Some(10_000))
        );
        assert!(!r.capped);
    }
}
