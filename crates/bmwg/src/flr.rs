//! The frame loss rate curve (RFC 2544 §26.3): trials at 100 % of the highest rate, then
//! 90 %, 80 %, … in steps of 10 %, until two successive trials lose no frame (or the
//! 10 % trial has run). Each point is the loss ratio at that load; RFC 2544 reports it
//! as a percentage, `(input − output) × 100 / input`.

use crate::{TrialKind, TrialOutcome, TrialSpec};

/// One point of the curve.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FlrPoint {
    /// The load, percent of the highest rate: 100, 90, …, 10.
    pub percent: u32,
    /// The load, frames per second.
    pub rate_fps: u64,
    /// Frames lost (late included) over frames offered.
    pub loss_ratio: f64,
    /// The generator fell behind: this load was not offered as asked.
    pub tester_late: bool,
}

/// RFC 2544 §26.3, quinn style: [`Self::poll_trial`], [`Self::handle_outcome`],
/// [`Self::poll_result`].
#[derive(Debug, Clone)]
pub struct Flr {
    max_fps: u64,
    duration_ns: u64,
    points: Vec<FlrPoint>,
    done: bool,
}

impl Flr {
    /// The curve from `max_fps` down, each trial `duration_ns` long.
    pub fn new(max_fps: u64, duration_ns: u64) -> Self {
        Self {
            max_fps,
            duration_ns,
            points: Vec::new(),
            done: max_fps == 0,
        }
    }

    fn next_percent(&self) -> u32 {
        100 - 10 * self.points.len() as u32
    }

    /// The next trial, `None` once the curve is done. Until its outcome is handled the
    /// same trial is returned.
    pub fn poll_trial(&mut self) -> Option<TrialSpec> {
        if self.done {
            return None;
        }
        Some(TrialSpec {
            rate_fps: rate_at(self.max_fps, self.next_percent()),
            duration_ns: self.duration_ns,
            kind: TrialKind::Flr,
        })
    }

    /// The outcome of the trial [`Self::poll_trial`] returned.
    pub fn handle_outcome(&mut self, spec: &TrialSpec, o: &TrialOutcome) {
        if self.done {
            return;
        }
        let percent = self.next_percent();
        debug_assert_eq!(spec.rate_fps, rate_at(self.max_fps, percent));
        self.points.push(FlrPoint {
            percent,
            rate_fps: spec.rate_fps,
            loss_ratio: o.loss_ratio(),
            tester_late: o.tester_late,
        });
        // Two successive loads without loss (a load the tester did not offer proves
        // nothing), or the lowest step: done.
        let clean = |p: &FlrPoint| p.loss_ratio == 0.0 && !p.tester_late;
        let n = self.points.len();
        self.done =
            percent == 10 || (n >= 2 && clean(&self.points[n - 1]) && clean(&self.points[n - 2]));
    }

    /// Every point so far, once the curve is done.
    pub fn poll_result(&self) -> Option<Vec<FlrPoint>> {
        self.done.then(|| self.points.clone())
    }
}

fn rate_at(max_fps: u64, percent: u32) -> u64 {
    (max_fps * u64::from(percent)).div_ceil(100).max(1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::NS_PER_S;

    /// A device that forwards at most `cap` frames per second, in virtual time.
    fn device(cap: u64) -> impl Fn(&TrialSpec) -> TrialOutcome {
        move |s| {
            let offered = s.frames();
            let forwarded = cap * s.duration_ns / NS_PER_S;
            TrialOutcome {
                offered,
                received: offered.min(forwarded),
                ..TrialOutcome::default()
            }
        }
    }

    fn run(flr: &mut Flr, dut: impl Fn(&TrialSpec) -> TrialOutcome) -> Vec<FlrPoint> {
        while let Some(s) = flr.poll_trial() {
            assert_eq!(flr.poll_trial(), Some(s), "the same trial until handled");
            flr.handle_outcome(&s, &dut(&s));
        }
        flr.poll_result().unwrap()
    }

    #[test]
    fn steps_down_by_ten_percent_until_two_clean_loads() {
        let mut flr = Flr::new(1_000_000, 2 * NS_PER_S);
        assert_eq!(flr.poll_result(), None);
        let points = run(&mut flr, device(812_345));
        let got: Vec<(u32, u64, f64)> = points
            .iter()
            .map(|p| (p.percent, p.rate_fps, p.loss_ratio))
            .collect();
        assert_eq!(
            got,
            [
                (100, 1_000_000, 375_310.0 / 2_000_000.0),
                (90, 900_000, 175_310.0 / 1_800_000.0),
                (80, 800_000, 0.0),
                (70, 700_000, 0.0),
            ]
        );
        assert_eq!(flr.poll_trial(), None);
    }

    #[test]
    fn a_device_that_always_loses_ends_at_ten_percent_and_tester_late_is_not_clean() {
        let lossy = |s: &TrialSpec| TrialOutcome {
            offered: s.frames(),
            received: s.frames() - 1,
            ..TrialOutcome::default()
        };
        let points = run(&mut Flr::new(1000, NS_PER_S), lossy);
        assert_eq!(points.len(), 10);
        assert_eq!(points[9].percent, 10);
        assert_eq!(points[9].rate_fps, 100);
        assert_eq!(points[9].loss_ratio, 0.01);
        // The tester could not offer 100 %: that load proves nothing, so 90 % and 80 %
        // clean end it, not 100 % and 90 %.
        let late_at_top = |s: &TrialSpec| TrialOutcome {
            offered: s.frames(),
            received: s.frames(),
            tester_late: s.rate_fps == 1000,
            ..TrialOutcome::default()
        };
        let points = run(&mut Flr::new(1000, NS_PER_S), late_at_top);
        let got: Vec<(u32, bool)> = points.iter().map(|p| (p.percent, p.tester_late)).collect();
        assert_eq!(got, [(100, true), (90, false), (80, false)]);
    }
}
