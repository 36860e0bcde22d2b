//! Back-to-back frames (RFC 2544 §26.4 as updated by RFC 9004): the longest burst of
//! frames at the highest rate (minimum gaps) that the device forwards without losing
//! one, and the buffer time it implies.
//!
//! RFC 9004 §3.3: each trial sends one burst after idle time and counts the frames
//! forwarded; a burst with no loss is followed by a longer one, a burst with loss by a
//! shorter one (a binary search on the burst length), and the longest lossless burst is
//! that search's value. The upper search limit is a burst of at least 2 s. The trial
//! also waits for the device to drain (at least 2 s, [`DRAIN_NS`]): that wait is the
//! driver's, after the burst this crate sizes. RFC 9004 §3.4: the test is repeated
//! (RFC 2544 said at least 50 times; the count is now a reported variable), each
//! repetition an independent search, and the benchmark is the mean of their values.
//!
//! RFC 9004 §3.5 then expresses the mean burst as time, the Implied DUT Buffer Time
//! = mean / max theoretical frame rate, and corrects it for the frames the device
//! forwards while the burst arrives (a device that forwards at its throughput T drains
//! while it buffers):
//!
//! ```text
//! Corrected DUT Buffer Time = (1 / R) · (mean − (T / R) · mean)
//! ```
//!
//! with R the max theoretical frame rate (here the burst rate, the tester's line rate)
//! and T the measured throughput (RFC 2544), both in frames per second.

use crate::{frames_at, ConfigError, TrialKind, TrialOutcome, TrialSpec, NS_PER_S};

/// How long the driver waits after a burst for the device to drain (RFC 9004 §3.3: at
/// least 2 s, not overlapping the burst's reception).
pub const DRAIN_NS: u64 = 2 * NS_PER_S;

/// What [`BackToBack`] runs.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BackToBackConfig {
    /// The burst rate: line rate, or the tester's ceiling; R in the buffer time.
    pub rate_fps: u64,
    /// The longest burst tried, ns of frames at `rate_fps` (RFC 9004 §3.3: at least 2 s).
    pub max_burst_ns: u64,
    /// Independent searches (RFC 2544: at least 50; dualperf's --quick: 5).
    pub repeats: u32,
    /// A search ends when its bracket is within this fraction of its upper end (or one
    /// frame).
    pub precision: f64,
    /// The measured throughput, T in the corrected buffer time; `None` leaves the
    /// corrected time out.
    pub throughput_fps: Option<u64>,
}

impl BackToBackConfig {
    /// RFC 9004's defaults at `rate_fps`: bursts up to 2 s, 50 searches, 0.5 %.
    pub fn new(rate_fps: u64) -> Self {
        Self {
            rate_fps,
            max_burst_ns: 2 * NS_PER_S,
            repeats: 50,
            precision: 0.005,
            throughput_fps: None,
        }
    }

    /// Whether the method can run with it.
    pub fn check(&self) -> Result<(), ConfigError> {
        if self.rate_fps == 0 {
            return Err(ConfigError::Rates {
                min_fps: 1,
                max_fps: 0,
            });
        }
        if self.repeats == 0 {
            return Err(ConfigError::Zero { what: "repeats" });
        }
        if self.max_burst_ns == 0 {
            return Err(ConfigError::Zero { what: "max burst" });
        }
        if !(0.0..1.0).contains(&self.precision) {
            return Err(ConfigError::Ratio {
                what: "precision",
                value: self.precision,
            });
        }
        Ok(())
    }
}

/// What the back-to-back test found.
#[derive(Debug, Clone, PartialEq)]
pub struct BackToBackResult {
    /// Each search's longest lossless burst, frames.
    pub bursts: Vec<u64>,
    /// Their mean: the Back-to-Back Frame benchmark.
    pub frames_mean: f64,
    /// Every trial with its outcome.
    pub trials: Vec<(TrialSpec, TrialOutcome)>,
    /// Implied DUT Buffer Time: `frames_mean / rate_fps`, ns (RFC 9004 §3.5).
    pub implied_buffer_time_ns: f64,
    /// Corrected DUT Buffer Time (RFC 9004 §3.5), ns; `None` without a throughput.
    pub buffer_time_ns: Option<f64>,
    /// Some search's longest burst is the upper limit: the device buffers (or forwards)
    /// at least that much; the figures are lower bounds.
    pub capped: bool,
    /// Trials where the generator fell behind (the burst was not back to back): counted
    /// as failed bursts, so the figures may be low.
    pub tester_late: u32,
}

/// RFC 9004's repeated binary search on the burst length, quinn style.
#[derive(Debug, Clone)]
pub struct BackToBack {
    cfg: BackToBackConfig,
    max_burst: u64,
    /// The current search: longest lossless burst known, shortest lossy (or untried
    /// limit + 1).
    lo: u64,
    hi: u64,
    bursts: Vec<u64>,
    trials: Vec<(TrialSpec, TrialOutcome)>,
    tester_late: u32,
}

impl BackToBack {
    /// A test as `cfg` says (see [`BackToBackConfig::check`]; a zero count is taken as 1).
    pub fn new(cfg: BackToBackConfig) -> Self {
        let cfg = BackToBackConfig {
            repeats: cfg.repeats.max(1),
            rate_fps: cfg.rate_fps.max(1),
            ..cfg
        };
        let max_burst = frames_at(cfg.rate_fps, cfg.max_burst_ns);
        Self {
            cfg,
            max_burst,
            lo: 0,
            hi: max_burst + 1,
            bursts: Vec::new(),
            trials: Vec::new(),
            tester_late: 0,
        }
    }

    fn done(&self) -> bool {
        self.bursts.len() as u32 >= self.cfg.repeats
    }

    /// The burst the current search tries next: the limit first, then the middle of the
    /// bracket.
    fn next_burst(&self) -> u64 {
        if self.hi > self.max_burst {
            self.max_burst
        } else {
            self.lo + (self.hi - self.lo) / 2
        }
    }

    /// The next trial, `None` once every search is done.
    pub fn poll_trial(&mut self) -> Option<TrialSpec> {
        if self.done() {
            return None;
        }
        let burst = self.next_burst();
        Some(TrialSpec {
            rate_fps: self.cfg.rate_fps,
            duration_ns: (burst as u128 * NS_PER_S as u128).div_ceil(self.cfg.rate_fps as u128)
                as u64,
            kind: TrialKind::BackToBack { burst },
        })
    }

    /// The outcome of the trial [`Self::poll_trial`] returned.
    pub fn handle_outcome(&mut self, spec: &TrialSpec, o: &TrialOutcome) {
        let TrialKind::BackToBack { burst } = spec.kind else {
            return;
        };
        if self.done() {
            return;
        }
        self.trials.push((*spec, *o));
        self.tester_late += u32::from(o.tester_late);
        if o.lost() == 0 && !o.tester_late && o.offered >= burst {
            self.lo = burst;
            if burst == self.max_burst {
                self.hi = self.max_burst;
            }
        } else {
            self.hi = burst;
        }
        let width = self.hi - self.lo;
        if width <= 1 || (width as f64) <= self.cfg.precision * self.hi as f64 {
            self.bursts.push(self.lo);
            self.lo = 0;
            self.hi = self.max_burst + 1;
        }
    }

    /// The result, once every search is done.
    pub fn poll_result(&self) -> Option<BackToBackResult> {
        if !self.done() {
            return None;
        }
        let n = self.bursts.len() as f64;
        let frames_mean = self.bursts.iter().sum::<u64>() as f64 / n;
        let r = self.cfg.rate_fps as f64;
        Some(BackToBackResult {
            bursts: self.bursts.clone(),
            frames_mean,
            trials: self.trials.clone(),
            implied_buffer_time_ns: frames_mean / r * 1e9,
            buffer_time_ns: self
                .cfg
                .throughput_fps
                .map(|t| (frames_mean - t as f64 / r * frames_mean) / r * 1e9),
            capped: self.bursts.contains(&self.max_burst),
            tester_late: self.tester_late,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A device with a buffer of `buffer` frames forwarding `fwd_fps`: a burst at
    /// `rate` loses nothing while the backlog it builds, burst · (1 − fwd/rate), fits.
    fn device(buffer: u64, fwd_fps: u64) -> impl FnMut(&TrialSpec) -> TrialOutcome {
        move |s| {
            let burst = s.frames();
            let backlog = burst - burst * fwd_fps / s.rate_fps;
            TrialOutcome {
                offered: burst,
                received: if backlog <= buffer {
                    burst
                } else {
                    burst - (backlog - buffer)
                },
                ..TrialOutcome::default()
            }
        }
    }

    fn run(
        b: &mut BackToBack,
        mut dut: impl FnMut(&TrialSpec) -> TrialOutcome,
    ) -> BackToBackResult {
        while let Some(s) = b.poll_trial() {
            b.handle_outcome(&s, &dut(&s));
        }
        b.poll_result().unwrap()
    }

    #[test]
    fn binary_search_finds_the_longest_lossless_burst_and_the_buffer_time() {
        // 1 Mfps bursts, up to 2 s (2,000,000 frames); the device forwards 800,000 fps
        // and buffers 10,000 frames: a burst of B backs up B/5, so B = 50,000 is the
        // longest without loss.
        let cfg = BackToBackConfig {
            repeats: 5,
            precision: 0.0,
            throughput_fps: Some(800_000),
            ..BackToBackConfig::new(1_000_000)
        };
        assert_eq!(cfg.check(), Ok(()));
        let mut b = BackToBack::new(cfg);
        assert_eq!(b.poll_result(), None);
        let first = b.poll_trial().unwrap();
        assert_eq!(first.kind, TrialKind::BackToBack { burst: 2_000_000 });
        assert_eq!(first.duration_ns, 2 * NS_PER_S);
        let r = run(&mut b, device(10_000, 800_000));
        assert_eq!(r.bursts, [50_000; 5]);
        assert_eq!(r.frames_mean, 50_000.0);
        // The limit, then 21 halvings from [0, 2,000,000] down to a width of 1.
        assert_eq!(r.trials.len(), 5 * 22);
        assert!(!r.capped);
        assert_eq!(r.tester_late, 0);
        // 50,000 frames at 1 Mfps: 50 ms; corrected: 50 ms · (1 − 0.8) = 10 ms, the
        // 10,000 buffered frames at R.
        assert_eq!(r.implied_buffer_time_ns, 50_000_000.0);
        assert!((r.buffer_time_ns.unwrap() - 10_000_000.0).abs() < 1e-6);
    }

    #[test]
    fn a_coarse_precision_a_capped_device_and_a_late_tester() {
        let cfg = BackToBackConfig {
            repeats: 2,
            precision: 0.01,
            ..BackToBackConfig::new(1_000_000)
        };
        // The limit and five halvings lose (2,000,000 … 62,500), then 31,250 ✓,
        // 46,875 ✓, 54,687 ✗, 50,781 ✗, 48,828 ✓, 49,804 ✓, 50,292 ✗: [49,804, 50,292]
        // is within 1 % of its top.
        let r = run(&mut BackToBack::new(cfg), device(10_000, 800_000));
        assert_eq!(r.bursts, [49_804; 2]);
        assert_eq!(r.trials.len(), 2 * 13);
        assert_eq!(r.buffer_time_ns, None);
        // A device that forwards at the burst rate never loses: the limit, capped.
        let r = run(&mut BackToBack::new(cfg), device(0, 1_000_000));
        assert_eq!(
            (r.bursts.clone(), r.capped, r.trials.len()),
            (vec![2_000_000; 2], true, 2)
        );
        // A tester that falls behind on bursts over 1,000,000 frames: those fail.
        let mut late = device(u64::MAX / 2, 0);
        let r = run(&mut BackToBack::new(cfg), |s: &TrialSpec| TrialOutcome {
            tester_late: s.frames() > 1_000_000,
            ..late(s)
        });
        assert_eq!(r.bursts, [1_000_000; 2]);
        // Per search: 2,000,000 late, 1,000,000 ✓, then 1,500,000 … 1,007,812 (seven
        // halvings towards 1,000,000) all late.
        assert_eq!(r.tester_late, 16);
        assert_eq!(
            BackToBackConfig { repeats: 0, ..cfg }.check(),
            Err(ConfigError::Zero { what: "repeats" })
        );
    }
}
