//! How to benchmark a device (RFC 2544, RFC 5180, RFC 8219, RFC 9004,
//! draft-ietf-bmwg-mlrsearch): which trial to run next and what the trials add up to.
//!
//! This crate is sans-IO like quinn-proto: it never sends a frame, never reads a clock
//! and never sleeps. A driver asks a method for its next trial with `poll_trial`, runs
//! it (the cli: one XDP generator call per trial), hands the counts back with
//! `handle_outcome`, and reads `poll_result` when the method is done. The same method
//! runs in the tests against a closure standing in for the device, in virtual time.
//!
//! - [`search`]: throughput, NDR (no loss) and PDR (loss ≤ a ratio) in one MLRsearch-like
//!   search (RFC 2544 §26.1, draft-ietf-bmwg-mlrsearch).
//! - [`flr`]: the frame loss rate curve (RFC 2544 §26.3).
//! - [`b2b`]: back-to-back frames and the DUT's implied buffer time (RFC 9004).
//! - [`latency`]: typical and worst-case latency, PDV and IPDV over the tagged frames of a
//!   trial (RFC 8219 §7.2, §7.3).
//! - Here: a trial, its outcome, how many frames to tag ([`tag_every`]) and the rate
//!   ramp before a trial ([`ramp`]).
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod b2b;
pub mod flr;
pub mod latency;
pub mod search;

pub use b2b::{BackToBack, BackToBackConfig, BackToBackResult};
pub use flr::{Flr, FlrPoint};
pub use latency::{latency_stats, LatencyStats, MIN_TAGGED};
pub use search::{Search, SearchConfig, SearchResult};

/// One nanosecond in a second.
pub const NS_PER_S: u64 = 1_000_000_000;

/// A configuration a method cannot run with.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ConfigError {
    /// A rate that must be positive is 0, or the lowest rate is above the highest.
    #[error("rates: min {min_fps} fps must be at least 1 and at most max {max_fps} fps")]
    Rates {
        /// The lowest rate.
        min_fps: u64,
        /// The highest rate.
        max_fps: u64,
    },
    /// A duration that must be positive is 0, or the first is longer than the last.
    #[error(
        "durations: initial {initial_ns} ns must be at least 1 ms and at most final {final_ns} ns"
    )]
    Durations {
        /// The first (shortest) trial duration.
        initial_ns: u64,
        /// The final trial duration.
        final_ns: u64,
    },
    /// A ratio outside `[0, 1)`.
    #[error("{what} {value} is not a ratio in [0, 1)")]
    Ratio {
        /// Which ratio.
        what: &'static str,
        /// Its value.
        value: f64,
    },
    /// A count that must be positive is 0.
    #[error("{what} must be at least 1")]
    Zero {
        /// Which count.
        what: &'static str,
    },
}

/// One trial: frames at one rate for one duration (after the ramp, which is not counted).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TrialSpec {
    /// The offered load, frames per second.
    pub rate_fps: u64,
    /// How long the counted frames are sent, ns. A back-to-back burst lasts
    /// `burst / rate_fps`.
    pub duration_ns: u64,
    /// What the trial is for.
    pub kind: TrialKind,
}

impl TrialSpec {
    /// The frames the trial should offer: `rate × duration`, rounded (at least 1); a
    /// back-to-back trial offers its burst.
    pub fn frames(&self) -> u64 {
        match self.kind {
            TrialKind::BackToBack { burst } => burst,
            _ => frames_at(self.rate_fps, self.duration_ns),
        }
    }
}

/// Frames at `rate_fps` for `duration_ns`, rounded to the nearest, at least 1.
pub fn frames_at(rate_fps: u64, duration_ns: u64) -> u64 {
    let f = (rate_fps as u128 * duration_ns as u128 + NS_PER_S as u128 / 2) / NS_PER_S as u128;
    (f as u64).max(1)
}

/// What a trial is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TrialKind {
    /// A throughput search trial shorter than the final duration.
    Search,
    /// A throughput search trial at the final duration.
    Final,
    /// A latency trial (RFC 8219 §7.2: at the throughput rate, with tagged frames).
    Latency,
    /// A frame loss rate trial (RFC 2544 §26.3).
    Flr,
    /// A back-to-back burst of `burst` frames at the highest rate (RFC 9004).
    BackToBack {
        /// Frames in the burst.
        burst: u64,
    },
}

/// What a trial did, as the tester counted it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TrialOutcome {
    /// Frames the tester sent in the trial (the ramp excluded).
    pub offered: u64,
    /// Frames received in time (within the per-frame timeout).
    pub received: u64,
    /// Frames received after their timeout: counted as lost by [`Self::loss_ratio`].
    pub late: u64,
    /// The generator fell behind its schedule: the trial's rate was not offered, so the
    /// trial says nothing about the device (the rate is above the tester's ceiling).
    pub tester_late: bool,
    /// When the generator fell behind: the rate it did sustain, the trial's frames it
    /// sent (the ramp's left out) over the time from the trial's first slot to its last
    /// frame (`None` on time, or unknown). A generator running flat out tells the search
    /// where its ceiling is in one trial.
    pub achieved_fps: Option<u64>,
}

impl TrialOutcome {
    /// `(offered − received) / offered`, where `received` counts only the frames that
    /// arrived within the per-frame timeout: a late frame is a lost frame. Lencse and
    /// Shima (2020) show that RFC 8219's rule (count every frame that arrives before
    /// the end of the trial plus a timeout) lets a device buffer its way through a
    /// throughput test; a per-frame timeout does not. No frame offered is a loss of 1.
    pub fn loss_ratio(&self) -> f64 {
        if self.offered == 0 {
            return 1.0;
        }
        self.lost() as f64 / self.offered as f64
    }

    /// Frames not received in time: `offered − received` (0 if more arrived).
    pub fn lost(&self) -> u64 {
        self.offered.saturating_sub(self.received)
    }
}

/// How many frames apart the tagged (timestamped for latency) frames are: the largest
/// power of two `k` such that tagging frames `0, k, 2k, …` of a trial of
/// `rate_fps × duration_ns` frames tags at least `want` of them (1 if the trial has
/// fewer than `want` frames). RFC 8219 §7.2 asks for at least 500 tagged frames; a power
/// of two lets the XDP program test `seq & (k − 1) == 0`.
pub fn tag_every(rate_fps: u64, duration_ns: u64, want: u64) -> u32 {
    let frames = frames_at(rate_fps, duration_ns);
    let want = want.max(1);
    let mut k: u64 = 1;
    // Frames 0, k, 2k, … below `frames`: ceil(frames / k) of them.
    while k < 1 << 31 && k * 2 <= frames && frames.div_ceil(k * 2) >= want {
        k *= 2;
    }
    k as u32
}

/// The ramp before a trial at `target_fps`: `steps` segments of `ramp_ns / steps` each
/// whose rates rise linearly from 10 % of the target (10 %, 10 + 90/steps %, …, the last
/// below 100 %), so the trial that follows at 100 % is the next step up, not a jump from
/// idle. TRex (PR 1212) found devices drop frames when a stream jumps from nothing to
/// its rate; the frames of the ramp are not counted (netio's `RxConfig::first_seq`).
/// Each segment is `(frames, interval_ps)`; a segment of no frames is left out. netio's
/// `Schedule` holds at most 16 segments, the trial's included: at most 15 steps.
pub fn ramp(target_fps: u64, ramp_ns: u64, steps: u32) -> Vec<(u32, u64)> {
    if target_fps == 0 || ramp_ns == 0 || steps == 0 {
        return Vec::new();
    }
    let step_ns = ramp_ns / u64::from(steps);
    (0..steps)
        .filter_map(|i| {
            let percent = 10.0 + 90.0 * f64::from(i) / f64::from(steps);
            let rate = (target_fps as f64 * percent / 100.0).round().max(1.0) as u64;
            let frames = frames_at(rate, step_ns).min(u64::from(u32::MAX)) as u32;
            let interval_ps = (1e12 / rate as f64).round() as u64;
            (frames > 0).then_some((frames, interval_ps))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn late_frames_count_as_lost() {
        let o = TrialOutcome {
            offered: 1000,
            received: 990,
            late: 6,
            ..TrialOutcome::default()
        };
        assert_eq!(o.lost(), 10);
        assert_eq!(o.loss_ratio(), 0.01);
        let none = TrialOutcome::default();
        assert_eq!(none.loss_ratio(), 1.0);
        let dup = TrialOutcome {
            offered: 10,
            received: 12,
            ..none
        };
        assert_eq!(dup.loss_ratio(), 0.0);
    }

    #[test]
    fn tag_every_is_the_largest_power_of_two_that_keeps_enough_tags() {
        // 812,345 fps for 10 s: 8,123,450 frames; 8,123,450 / 16384 → 496 (too few),
        // / 8192 → 992.
        assert_eq!(tag_every(812_345, 10 * NS_PER_S, 500), 8192);
        assert_eq!(frames_at(812_345, 10 * NS_PER_S).div_ceil(8192), 992);
        // Exactly 1000 frames, want 500: k = 2 gives 500.
        assert_eq!(tag_every(1000, NS_PER_S, 500), 2);
        // Too few frames: tag them all.
        assert_eq!(tag_every(100, NS_PER_S, 500), 1);
        assert_eq!(tag_every(1000, NS_PER_S, 0), 512);
    }

    #[test]
    fn ramp_rises_linearly_from_ten_percent_below_the_target() {
        let r = ramp(1_000_000, 100_000_000, 10);
        assert_eq!(r.len(), 10);
        let rates: Vec<u64> = r
            .iter()
            .map(|&(_, ps)| (1e12 / ps as f64).round() as u64)
            .collect();
        assert_eq!(
            rates,
            [
                100_000, 190_000, 280_000, 370_000, 460_000, 550_000, 640_000, 730_000, 820_000,
                910_000
            ]
        );
        // 10 ms per step.
        assert_eq!(r[0], (1000, 10_000_000));
        assert_eq!(r[9], (9100, 1_098_901));
        assert!(ramp(1_000_000, 0, 4).is_empty());
        assert!(ramp(1_000_000, 1_000, 0).is_empty());
    }

    #[test]
    fn a_trial_offers_rate_times_duration_or_its_burst() {
        let s = TrialSpec {
            rate_fps: 812_345,
            duration_ns: 1_500_000_000,
            kind: TrialKind::Search,
        };
        assert_eq!(s.frames(), 1_218_518);
        let b = TrialSpec {
            kind: TrialKind::BackToBack { burst: 77 },
            ..s
        };
        assert_eq!(b.frames(), 77);
    }
}
