//! A send schedule with absolute deadlines.
//!
//! Packet `k` is due at `start + k·T` where `T` is the exact inter-departure time as a
//! fraction of nanoseconds, so rounding never accumulates into drift (the sender sleeps
//! until a deadline, not for an interval). A sender that wakes late finds several packets
//! due at once and sends them together: that is how batching arises at high rates, while
//! each packet keeps its own scheduled time for the schedule-error metric.
//!
//! `--duration` bounds the run in time as well as in packets: a sender that falls behind
//! (asked for more than the host can send) stops at `start + duration + grace`, where the
//! grace is 1 % of the duration but at least [`MIN_GRACE`]; the packets it never sent
//! show as a shortfall against the requested count. The grace keeps a sender that is only
//! a little late from losing its last packets.
//!
//! Three shapes sit on the same deadlines:
//! - **on/off gating** ([`FlowSpec::on_off_ms`]: talk spurts, bursts): deadlines that
//!   fall in an OFF period (a silence) are skipped, as a codec with silence suppression
//!   does; sequence numbers stay contiguous (a silence is not loss) and the first packet
//!   of each ON period (spurt) is marked;
//! - **video frames** ([`FlowSpec::video`]): each deadline is a frame, cut into packets
//!   that are all due at the frame's deadline, the last one marked;
//! - **unpaced** ([`FlowSpec::unpaced`], bulk transfer): every packet is due when asked
//!   for, and the run ends exactly at `start + duration`.
//!
//! Following quinn's vocabulary: [`Schedule::poll_transmit`] hands out the next due
//! packet, [`Schedule::poll_timeout`] says when to wake.

use wire::time::{Duration, Instant};

use crate::distribution::{Dist, DistError, OnOffProcess, Sampler};
use crate::flow::{FlowSpec, StopSpec, VideoSpec};

/// Mixed into the seed of the size stream, so gaps and sizes are independent.
const SIZE_STREAM: u64 = 0x5151_5151_5151_5151;
/// Mixed into the seed of the on/off process.
const TALK_STREAM: u64 = 0x7A1C_7A1C_7A1C_7A1C;
/// Mixed into the seed of the DAR(1) coin of video frame sizes.
const COIN_STREAM: u64 = 0xC011_C011_C011_C011;

/// OFF periods crossed in one search for a deadline inside an ON period.
const MAX_SKIPPED_PERIODS: u32 = 1_000_000;

/// The least time a late sender may run past `--duration` to send what is due.
pub const MIN_GRACE: Duration = Duration::from_millis(10);

/// A packet the schedule wants sent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Transmit {
    /// Sequence number, from 0.
    pub seq: u64,
    /// When it was due.
    pub scheduled: Instant,
    /// Payload bytes.
    pub size_bytes: u32,
    /// The RTP marker bit: the first packet of a talk spurt (and of the flow), or the
    /// last packet of a video frame.
    pub marker: bool,
}

/// Video frames being cut into packets.
#[derive(Clone, Debug)]
struct Frames {
    sizes: Sampler,
    coin: Sampler,
    correlation: f64,
    chunk: u64,
    header: u32,
    last_size: Option<f64>,
    /// Coded bytes of the current frame not yet handed out (0: the next deadline opens
    /// a new frame).
    remaining: u64,
}

impl Frames {
    fn new(v: &VideoSpec, seed: u64) -> Result<Self, DistError> {
        if !(0.0..=1.0).contains(&v.correlation) {
            return Err(DistError::InvalidParam {
                kind: "video",
                param: "correlation",
                must: "be within 0 and 1",
                value: v.correlation,
            });
        }
        Ok(Self {
            sizes: Sampler::new(v.frame_bytes.clone(), seed ^ SIZE_STREAM)?,
            coin: Sampler::new(Dist::Uniform { min: 0.0, max: 1.0 }, seed ^ COIN_STREAM)?,
            correlation: v.correlation,
            chunk: u64::from(v.max_chunk_bytes.max(1)),
            header: v.header_bytes,
            last_size: None,
            remaining: 0,
        })
    }

    /// The coded size of a new frame: DAR(1), the previous size again with probability
    /// `correlation`, else a fresh draw; truncated to whole bytes, at least 1.
    fn draw(&mut self) -> u64 {
        let size = match self.last_size {
            Some(prev) if self.coin.sample() < self.correlation => prev,
            _ => self.sizes.sample(),
        };
        self.last_size = Some(size);
        // `max` maps NaN to 1.
        size.max(1.0).clamp(1.0, 1e12) as u64
    }
}

/// The schedule of one flow: constant rate, or gaps and sizes drawn from distributions.
#[derive(Clone, Debug)]
pub struct Schedule {
    /// Inter-departure times (ms) when they are random.
    gaps: Option<Sampler>,
    /// Payload sizes (bytes) when they are random, and the sizes allowed.
    sizes: Option<(Sampler, u32, u32)>,
    start: Instant,
    interval: (u128, u128),
    size_bytes: u32,
    stop: StopSpec,
    next_seq: u64,
    /// Deadline of `next_seq`, kept incrementally: `start + ⌊next_seq·num/den⌋`.
    next_deadline: Instant,
    /// `next_seq·num mod den`, the fractional nanoseconds not yet in `next_deadline`.
    remainder: u128,
    /// `⌊num/den⌋` and `num mod den`, computed once.
    step_ns: u64,
    step_remainder: u128,
    bytes: u64,
    stopped: bool,
    /// Index of the deadline in `next_deadline` (equal to `next_seq` unless talk spurts
    /// skip deadlines or video frames put several packets on one).
    slot: u64,
    unpaced: bool,
    talk: Option<OnOffProcess>,
    /// The next packet opens a talk spurt.
    spurt_start: bool,
    frames: Option<Frames>,
    /// Smallest and largest payload.
    min_size: u32,
    max_size: u32,
}

impl Schedule {
    /// A schedule for `spec` whose first packet is due at `origin + spec.start_offset`;
    /// fails if a distribution's parameters are invalid.
    ///
    /// Random gaps and sizes use two independent streams derived from `spec.seed`.
    pub fn new(spec: &FlowSpec, origin: Instant) -> Result<Self, DistError> {
        let start = origin + spec.start_offset;
        let (num, den) = spec.rate.interval_ns(spec.size_bytes);
        let gaps = spec
            .idt_ms
            .as_ref()
            .map(|d| Sampler::new(d.clone(), spec.seed))
            .transpose()?;
        let min = wire::probe::HEADER_LEN as u32
            + if spec.rtp.is_some() {
                wire::rtp::HEADER_LEN as u32
            } else {
                0
            };
        let max = match spec.protocol {
            wire::control::Protocol::Udp => 65_507,
            wire::control::Protocol::Tcp => wire::frame::MAX_DATA_LEN as u32,
        };
        let sizes = spec
            .size_dist
            .as_ref()
            .map(|d| Sampler::new(d.clone(), spec.seed ^ SIZE_STREAM).map(|s| (s, min, max)))
            .transpose()?;
        if spec
            .on_off_ms
            .as_ref()
            .is_some_and(|t| !t.on.can_be_positive())
        {
            return Err(DistError::NeverOn);
        }
        let talk = spec
            .on_off_ms
            .as_ref()
            .map(|t| OnOffProcess::with_unit(t.clone(), spec.seed ^ TALK_STREAM, 1e6))
            .transpose()?;
        let frames = spec
            .video
            .as_ref()
            .map(|v| Frames::new(v, spec.seed))
            .transpose()?;
        let mut sched = Self {
            gaps,
            sizes,
            start,
            interval: (num, den),
            step_ns: u64::try_from(num / den).unwrap_or(u64::MAX),
            step_remainder: num % den,
            size_bytes: spec.size_bytes,
            stop: spec.stop,
            next_seq: 0,
            next_deadline: start,
            remainder: 0,
            bytes: 0,
            stopped: false,
            slot: 0,
            unpaced: spec.unpaced,
            talk,
            spurt_start: true,
            frames,
            min_size: min,
            max_size: max,
        };
        sched.skip_silence();
        Ok(sched)
    }

    /// When packet `seq` of a constant-rate flow is due (a flow with random gaps, talk
    /// spurts or video frames knows only its next deadline).
    pub fn deadline(&self, seq: u64) -> Instant {
        let (num, den) = self.interval;
        let offset = u128::from(seq) * num / den;
        self.start + Duration::from_nanos(u64::try_from(offset).unwrap_or(u64::MAX))
    }

    /// The next packet if it is due at `now`; `None` if none is due yet or the flow ended.
    pub fn poll_transmit(&mut self, now: Instant) -> Option<Transmit> {
        if self.is_finished() {
            return None;
        }
        // An unpaced flow has no schedule to fall behind: it ends on time.
        if self.end().is_some_and(|end| now >= end) {
            // Time is up: what was not sent by now is the sender's shortfall.
            self.stopped = true;
            return None;
        }
        let scheduled = if self.unpaced {
            self.start.max(now)
        } else {
            self.next_deadline
        };
        if scheduled > now {
            return None;
        }
        let (size_bytes, marker, frame_done) = match self.frames.as_mut() {
            Some(f) => {
                if f.remaining == 0 {
                    f.remaining = f.draw();
                }
                let chunk = f.remaining.min(f.chunk);
                f.remaining -= chunk;
                let size = (u64::from(f.header) + chunk)
                    .clamp(u64::from(self.min_size), u64::from(self.max_size));
                (size as u32, f.remaining == 0, f.remaining == 0)
            }
            None => {
                let size = match self.sizes.as_mut() {
                    // D-ITG truncates a drawn size to an integer and clamps it.
                    Some((sampler, min, max)) => {
                        (sampler.sample().max(0.0) as u32).clamp(*min, *max)
                    }
                    None => self.size_bytes,
                };
                (size, std::mem::take(&mut self.spurt_start), true)
            }
        };
        let tx = Transmit {
            seq: self.next_seq,
            scheduled,
            size_bytes,
            marker,
        };
        self.next_seq += 1;
        if frame_done && !self.unpaced {
            self.advance();
        }
        self.bytes += u64::from(size_bytes);
        Some(tx)
    }

    /// The next packet if it is due at `now` (as [`Self::poll_transmit`]), and how many
    /// in all, up to `most`, that many calls would hand out at once: an unpaced flow of
    /// one size (no distributions, talk spurts or video) has all of them due now, alike
    /// but for their sequence numbers, until its packet or byte count runs out; any
    /// other flow, one.
    pub fn poll_transmits(&mut self, now: Instant, most: u32) -> Option<(Transmit, u32)> {
        let first = self.poll_transmit(now)?;
        let alike = self.unpaced && self.sizes.is_none() && self.frames.is_none();
        if !alike || self.talk.is_some() || most <= 1 {
            return Some((first, 1));
        }
        let mut more = u64::from(most - 1);
        if let Some(count) = self.stop.count {
            more = more.min(count.saturating_sub(self.next_seq));
        }
        if let (Some(bytes), size) = (self.stop.bytes, u64::from(self.size_bytes)) {
            // A packet goes out while fewer than `bytes` went before it.
            if size > 0 {
                more = more.min(bytes.saturating_sub(self.bytes).div_ceil(size));
            }
        }
        self.next_seq += more;
        self.bytes += more * u64::from(self.size_bytes);
        // Lossless: more < most.
        Some((first, 1 + more as u32))
    }

    /// Move to the next packet without a division per packet (this runs at several
    /// hundred thousand packets per second): add ⌊num/den⌋ and carry the remainder.
    fn advance(&mut self) {
        self.step();
        self.skip_silence();
    }

    /// Move `next_deadline` to the next slot.
    fn step(&mut self) {
        self.slot += 1;
        if let Some(gaps) = self.gaps.as_mut() {
            // Milliseconds to nanoseconds; a negative draw sends the next packet at once,
            // an absurd one is capped at an hour.
            let ns = (gaps.sample().max(0.0) * 1e6).min(3.6e12);
            self.next_deadline += Duration::from_nanos(ns as u64);
            return;
        }
        let den = self.interval.1;
        self.remainder += self.step_remainder;
        let mut step = self.step_ns;
        if self.remainder >= den {
            self.remainder -= den;
            step = step.saturating_add(1);
        }
        self.next_deadline += Duration::from_nanos(step);
    }

    /// With on/off gating: move past deadlines that fall in an OFF period, and mark the
    /// first packet after one. A constant-rate flow keeps its grid (a codec's frames stay
    /// on the media clock) and resumes at the first deadline of the grid in the next ON
    /// period; a flow with random gaps resumes with a packet at the start of the ON
    /// period, then draws gaps afresh, as D-ITG restarts its inter-departure time at each
    /// ON start. Each OFF period is crossed in one step, whatever its length.
    fn skip_silence(&mut self) {
        if self.talk.is_none() {
            return;
        }
        let end = self.stop.duration.map(|d| self.start + d);
        // ON periods too short to hold a deadline are skipped one by one; a process that
        // never holds one for this long is as good as silent.
        for _ in 0..MAX_SKIPPED_PERIODS {
            if end.is_some_and(|e| self.next_deadline >= e) {
                return;
            }
            let t = self
                .next_deadline
                .saturating_duration_since(self.start)
                .as_nanos();
            let Some(period) = self.talk.as_mut().map(|talk| talk.period_at(t)) else {
                return;
            };
            if period.on {
                return;
            }
            if period.end_ns == u64::MAX {
                // A silence that never ends.
                self.stopped = true;
                return;
            }
            self.spurt_start = true;
            if !self.resume_at(period.end_ns) {
                self.stopped = true;
                return;
            }
        }
        self.stopped = true;
    }

    /// Move `next_deadline` to the first slot at or after `start + offset_ns`; false if
    /// that cannot be represented.
    fn resume_at(&mut self, offset_ns: u64) -> bool {
        if self.gaps.is_some() {
            self.slot += 1;
            self.next_deadline = self.start + Duration::from_nanos(offset_ns);
            return true;
        }
        // Slot k is due at start + ⌊k·num/den⌋, which is ≥ start + r exactly when
        // k·num/den ≥ r: the first such k is ⌈r·den/num⌉.
        let (num, den) = self.interval;
        let Some(k) = u128::from(offset_ns)
            .checked_mul(den)
            .map(|x| x.div_ceil(num.max(1)))
        else {
            return false;
        };
        let Some(at) = k.checked_mul(num) else {
            return false;
        };
        let (Ok(slot), Ok(offset)) = (u64::try_from(k), u64::try_from(at / den)) else {
            return false;
        };
        self.slot = slot.max(self.slot + 1);
        self.remainder = at % den;
        self.next_deadline = self.start + Duration::from_nanos(offset);
        true
    }

    /// When the next packet is due; `None` once the flow has ended. A soft deadline:
    /// calling [`Self::poll_transmit`] earlier is harmless, later delays packets. An
    /// unpaced flow is always due (this is its start): it ends when the count or bytes
    /// run out, or when `poll_transmit` is called at or after `start + duration`, so a
    /// caller must let time advance.
    pub fn poll_timeout(&self) -> Option<Instant> {
        (!self.is_finished()).then_some(self.next_deadline)
    }

    /// When `batch` packets will be due: the deadline of the batch's last packet, or of
    /// the flow's last packet if fewer remain; `None` once the flow has ended. A sender at
    /// a high rate wakes at this instead of at every deadline, trading at most one batch's
    /// worth of schedule error for far fewer wake-ups (each one costs a syscall and a
    /// context switch, several µs of CPU).
    pub fn poll_timeout_batch(&self, batch: u64) -> Option<Instant> {
        if self.is_finished() {
            return None;
        }
        if self.unpaced {
            return Some(self.start);
        }
        if self.gaps.is_some() || self.talk.is_some() || self.frames.is_some() {
            return Some(self.next_deadline);
        }
        // Here every deadline carries one packet: slot and sequence number agree.
        let mut last = self.next_seq + batch.max(1) - 1;
        if let Some(c) = self.stop.count {
            last = last.min(c.saturating_sub(1));
        }
        if let Some(b) = self.stop.bytes {
            let n = b.div_ceil(u64::from(self.size_bytes.max(1)));
            last = last.min(n.saturating_sub(1));
        }
        let mut at = self.deadline(last.max(self.next_seq));
        if let Some(d) = self.stop.duration {
            let end = self.start + d;
            if at >= end {
                at = self
                    .next_deadline
                    .max(Instant::from_nanos(end.as_nanos() - 1));
            }
        }
        Some(at)
    }

    /// Stop early (interrupted by the user).
    pub fn handle_stop(&mut self) {
        self.stopped = true;
    }

    /// Whether the flow sends as fast as it may (no deadlines).
    pub fn is_unpaced(&self) -> bool {
        self.unpaced
    }

    /// Whether every packet has been handed out.
    pub fn is_finished(&self) -> bool {
        if self.stopped {
            return true;
        }
        if self.stop.count.is_some_and(|c| self.next_seq >= c) {
            return true;
        }
        if self.stop.bytes.is_some_and(|b| self.bytes >= b) {
            return true;
        }
        if let Some(d) = self.stop.duration {
            // A video frame that has begun is sent whole.
            let mid_frame = self.frames.as_ref().is_some_and(|f| f.remaining > 0);
            if !self.unpaced && !mid_frame && self.next_deadline >= self.start + d {
                return true;
            }
        }
        false
    }

    /// Packets handed out so far.
    pub fn packets(&self) -> u64 {
        self.next_seq
    }

    /// Payload bytes handed out so far.
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// Move every deadline `by` later: the same schedule as one made with an origin `by`
    /// later. A sender sets thousands of flows up first and starts them all at once, at
    /// an origin it fixes only when they are ready.
    pub fn delay(&mut self, by: Duration) {
        self.start += by;
        self.next_deadline += by;
    }

    /// When the first packet is due.
    pub fn start(&self) -> Instant {
        self.start
    }

    /// The time from which nothing more is sent, if the flow has a duration: its start
    /// plus the duration, plus the grace a late paced sender gets (none if unpaced).
    pub fn end(&self) -> Option<Instant> {
        let d = self.stop.duration?;
        let grace = if self.unpaced {
            Duration::ZERO
        } else {
            Duration::from_nanos((d.as_nanos() / 100).max(MIN_GRACE.as_nanos()))
        };
        Some(self.start + d + grace)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::units::Rate;
    use wire::control::{Meter, Protocol};

    fn spec(rate: Rate, size: u32, stop: StopSpec) -> FlowSpec {
        FlowSpec {
            protocol: Protocol::Udp,
            meter: Meter::Owd,
            rate,
            size_bytes: size,
            stop,
            start_offset: Duration::from_millis(5),
            ..FlowSpec::default()
        }
    }

    #[test]
    fn thirty_thousand_pps_for_one_second_is_exactly_thirty_thousand_packets() {
        let s = spec(
            Rate::MilliPps(30_000_000),
            64,
            StopSpec {
                duration: Some(Duration::from_secs(1)),
                ..Default::default()
            },
        );
        let mut sched = Schedule::new(&s, Instant::from_nanos(1_000)).unwrap();
        // A sender that always wakes 100 µs late still gets every packet, at its own deadline.
        let mut now = Instant::ZERO;
        let mut sent = Vec::new();
        while let Some(t) = sched.poll_timeout() {
            now = t + Duration::from_micros(100);
            while let Some(tx) = sched.poll_transmit(now) {
                sent.push(tx);
            }
        }
        assert_eq!(sent.len(), 30_000);
        assert_eq!(sent[0].scheduled.as_nanos(), 5_001_000);
        // 1e9/30000 = 33333.33… ns: deadlines do not drift.
        assert_eq!(sent[3].scheduled.as_nanos(), 5_001_000 + 100_000);
        assert_eq!(sent[29_999].scheduled.as_nanos(), 5_001_000 + 999_966_666);
        assert!(sent.windows(2).all(|w| w[1].seq == w[0].seq + 1));
        assert!(now >= sent[29_999].scheduled);
        assert_eq!(sched.poll_transmit(now + Duration::from_secs(9)), None);
    }

    #[test]
    fn a_sender_that_falls_behind_stops_at_the_duration_plus_grace() {
        let s = spec(
            Rate::MilliPps(1_000_000_000),
            64,
            StopSpec {
                duration: Some(Duration::from_secs(1)),
                ..Default::default()
            },
        );
        let mut sched = Schedule::new(&s, Instant::ZERO).unwrap();
        // A sender that can only send one packet every 10 µs (100k pkt/s of the 1M asked).
        let mut now = Instant::from_nanos(5_000_000);
        while sched.poll_transmit(now).is_some() {
            now += Duration::from_micros(10);
        }
        // Grace is 10 ms (1 % of 1 s): it ran from 5 ms to 1015 ms.
        assert_eq!(sched.packets(), 101_000);
        assert_eq!(sched.poll_timeout(), None);
    }

    #[test]
    fn batch_timeout_waits_for_a_batch_but_not_past_the_end() {
        let s = spec(
            Rate::MilliPps(1_000_000_000),
            64,
            StopSpec {
                count: Some(10),
                ..Default::default()
            },
        );
        let mut sched = Schedule::new(&s, Instant::ZERO).unwrap();
        // 1 µs apart from 5 ms: a batch of 4 is due at the 4th deadline.
        assert_eq!(
            sched.poll_timeout_batch(4),
            Some(Instant::from_nanos(5_003_000))
        );
        assert_eq!(sched.poll_timeout_batch(1), sched.poll_timeout());
        let now = Instant::from_nanos(5_007_000);
        assert_eq!(std::iter::from_fn(|| sched.poll_transmit(now)).count(), 8);
        // Two packets remain: wake for them, not for a batch of four.
        assert_eq!(
            sched.poll_timeout_batch(4),
            Some(Instant::from_nanos(5_009_000))
        );
        let d = spec(
            Rate::MilliPps(1_000_000),
            64,
            StopSpec {
                duration: Some(Duration::from_millis(10)),
                ..Default::default()
            },
        );
        let d = Schedule::new(&d, Instant::ZERO).unwrap();
        // A batch past the end of the run wakes just before the end.
        assert_eq!(
            d.poll_timeout_batch(64),
            Some(Instant::from_nanos(14_999_999))
        );
    }

    #[test]
    fn incremental_deadlines_equal_the_closed_form() {
        for rate in [
            Rate::MilliPps(30_000_000),
            Rate::MilliPps(560),
            Rate::Bps(73_600),
            Rate::MilliPps(7_000_001),
        ] {
            let s = spec(
                rate,
                92,
                StopSpec {
                    count: Some(100_000),
                    ..Default::default()
                },
            );
            let mut sched = Schedule::new(&s, Instant::from_nanos(17)).unwrap();
            let far = Instant::from_nanos(u64::MAX / 2);
            while let Some(tx) = sched.poll_transmit(far) {
                assert_eq!(
                    tx.scheduled,
                    sched.deadline(tx.seq),
                    "{rate} seq {}",
                    tx.seq
                );
            }
            assert_eq!(sched.packets(), 100_000);
        }
    }

    /// An on-time sender: wake at each deadline, take what is due.
    fn drain(sched: &mut Schedule) -> Vec<Transmit> {
        std::iter::from_fn(|| sched.poll_timeout().and_then(|t| sched.poll_transmit(t))).collect()
    }

    #[test]
    fn random_gaps_average_to_the_mean_and_replay_with_the_seed() {
        // Quake 3's D-ITG IDT model: 0.6·Exp(mean 4.29 ms) + 0.4·Const(10.75 ms), mean
        // 6.874 ms ≈ 145.5 pkt/s (reference/peer-tools.md §3.3).
        let mut s = spec(
            Rate::MilliPps(1_000_000),
            64,
            StopSpec {
                count: Some(20_000),
                ..Default::default()
            },
        );
        s.idt_ms = Some("mix:0.6*exp:4.29+0.4*const:10.75".parse().unwrap());
        s.seed = 7;
        let a = drain(&mut Schedule::new(&s, Instant::ZERO).unwrap());
        assert_eq!(a.len(), 20_000);
        let span_ms = (a[19_999].scheduled - a[0].scheduled).as_nanos() as f64 / 1e6;
        let mean_ms = span_ms / 19_999.0;
        // σ of one gap ≈ 4.1 ms: 5σ/√N ≈ 0.15 ms.
        assert!((mean_ms - 6.874).abs() < 0.15, "mean gap {mean_ms} ms");
        assert!(a.windows(2).all(|w| w[1].scheduled >= w[0].scheduled));
        let b = drain(&mut Schedule::new(&s, Instant::ZERO).unwrap());
        assert_eq!(a, b, "same seed, same schedule");
        // Made at one origin and delayed to another: the schedule made there.
        let later = Instant::from_nanos(3_000_000_017);
        let mut delayed = Schedule::new(&s, Instant::ZERO).unwrap();
        delayed.delay(later - Instant::ZERO);
        assert_eq!(
            drain(&mut delayed),
            drain(&mut Schedule::new(&s, later).unwrap())
        );
        s.seed = 8;
        let c = drain(&mut Schedule::new(&s, Instant::ZERO).unwrap());
        assert_ne!(a, c);
    }

    #[test]
    fn random_sizes_are_truncated_and_clamped_and_count_toward_the_byte_limit() {
        let mut s = spec(
            Rate::MilliPps(1_000_000),
            64,
            StopSpec {
                bytes: Some(1_000_000),
                ..Default::default()
            },
        );
        // DNS in D-ITG: 100 + 220·U bytes; and a normal that often falls below 16.
        s.size_dist = Some("uniform:100,320".parse().unwrap());
        let sent = drain(&mut Schedule::new(&s, Instant::ZERO).unwrap());
        assert!(sent.iter().all(|t| (100..320).contains(&t.size_bytes)));
        let total: u64 = sent.iter().map(|t| u64::from(t.size_bytes)).sum();
        assert!(
            total >= 1_000_000 && total - u64::from(sent.last().unwrap().size_bytes) < 1_000_000
        );
        s.size_dist = Some("normal:10,30".parse().unwrap());
        s.stop = StopSpec {
            count: Some(1000),
            ..Default::default()
        };
        let small = drain(&mut Schedule::new(&s, Instant::ZERO).unwrap());
        assert!(
            small.iter().all(|t| t.size_bytes >= 16),
            "the probe must fit"
        );
        assert!(small.iter().any(|t| t.size_bytes == 16));
    }

    #[test]
    fn invalid_distributions_are_refused() {
        let mut s = spec(
            Rate::MilliPps(1_000_000),
            64,
            StopSpec {
                count: Some(1),
                ..Default::default()
            },
        );
        s.idt_ms = Some(Dist::Exponential { mean: -1.0 });
        assert!(Schedule::new(&s, Instant::ZERO).is_err());
    }

    #[test]
    fn stops_at_count_or_bytes_whichever_first() {
        let mut by_count = Schedule::new(
            &spec(
                Rate::MilliPps(1_000_000),
                100,
                StopSpec {
                    count: Some(3),
                    bytes: Some(10_000),
                    ..Default::default()
                },
            ),
            Instant::ZERO,
        )
        .unwrap();
        let far = Instant::from_nanos(u64::MAX / 2);
        let n = std::iter::from_fn(|| by_count.poll_transmit(far)).count();
        assert_eq!(n, 3);
        let mut by_bytes = Schedule::new(
            &spec(
                Rate::MilliPps(1_000_000),
                100,
                StopSpec {
                    count: Some(30),
                    bytes: Some(250),
                    ..Default::default()
                },
            ),
            Instant::ZERO,
        )
        .unwrap();
        let n = std::iter::from_fn(|| by_bytes.poll_transmit(far)).count();
        assert_eq!(n, 3);
        assert_eq!(by_bytes.bytes(), 300);
        assert_eq!(by_bytes.poll_timeout(), None);
    }

    #[test]
    fn bit_rate_sets_the_interval_from_the_size() {
        // G.711 over RTP: 64 kbit/s of 160-byte payloads = 50 pkt/s, 20 ms apart.
        let s = spec(
            Rate::Bps(64_000),
            160,
            StopSpec {
                duration: Some(Duration::from_secs(1)),
                ..Default::default()
            },
        );
        let mut sched = Schedule::new(&s, Instant::ZERO).unwrap();
        // An on-time sender: wake at each deadline.
        let all: Vec<_> =
            std::iter::from_fn(|| sched.poll_timeout().and_then(|t| sched.poll_transmit(t)))
                .collect();
        assert_eq!(all.len(), 50);
        assert_eq!(
            all[1].scheduled.as_nanos() - all[0].scheduled.as_nanos(),
            20_000_000
        );
    }

    #[test]
    fn nothing_is_due_before_the_start_offset_and_stop_ends_it() {
        let s = spec(
            Rate::MilliPps(1_000_000),
            64,
            StopSpec {
                count: Some(10),
                ..Default::default()
            },
        );
        let mut sched = Schedule::new(&s, Instant::ZERO).unwrap();
        assert_eq!(sched.poll_transmit(Instant::from_nanos(4_999_999)), None);
        assert_eq!(sched.poll_timeout(), Some(Instant::from_nanos(5_000_000)));
        assert!(sched
            .poll_transmit(Instant::from_nanos(5_000_000))
            .is_some());
        sched.handle_stop();
        assert_eq!(sched.poll_timeout(), None);
        assert_eq!(sched.packets(), 1);
    }

    #[test]
    fn talk_spurts_send_only_during_spurts_with_contiguous_sequence_numbers() {
        // G.711 at 50 pkt/s for 1000 s with P.59's exponential spurts (1.004 s) and
        // pauses (1.587 s): 38.75 % of the 50 000 deadlines carry a packet.
        let mut s = spec(
            Rate::MilliPps(50_000),
            172,
            StopSpec {
                duration: Some(Duration::from_secs(1000)),
                ..Default::default()
            },
        );
        s.on_off_ms = Some(crate::voip::talk_spurts(1.004, 1.587));
        s.seed = 3;
        let sent = drain(&mut Schedule::new(&s, Instant::ZERO).unwrap());
        assert!(sent.iter().enumerate().all(|(i, t)| t.seq == i as u64));
        // Deadlines stay on the 20 ms grid from the start offset.
        assert!(sent
            .iter()
            .all(|t| (t.scheduled.as_nanos() - 5_000_000) % 20_000_000 == 0));
        let duty = sent.len() as f64 / 50_000.0;
        // ~386 on/off cycles of CV ≈ 0.75 each: σ(duty) ≈ 0.015, so 4σ is 0.06.
        assert!((duty - 0.3875).abs() < 0.06, "activity {duty}");
        // A spurt starts after every gap longer than one packet interval, and nowhere else.
        let spurts = sent.iter().filter(|t| t.marker).count();
        let gaps = sent
            .windows(2)
            .filter(|w| w[1].scheduled - w[0].scheduled > Duration::from_millis(20))
            .count();
        assert!(sent[0].marker);
        assert_eq!(spurts, gaps + 1);
        // ~386 spurts in 1000 s (one per 2.591 s in the mean), within 5σ (σ ≈ 16).
        assert!((spurts as f64 - 386.0).abs() < 80.0, "{spurts} spurts");
        // Replayable from the seed.
        assert_eq!(sent, drain(&mut Schedule::new(&s, Instant::ZERO).unwrap()));
        assert!(sent.len() as f64 / 1000.0 - s.mean_pps().unwrap() < 3.0);
        // Delayed, the same spurts at the later deadlines.
        let by = Duration::from_nanos(7_000_000_003);
        let mut delayed = Schedule::new(&s, Instant::ZERO).unwrap();
        delayed.delay(by);
        let shifted: Vec<_> = sent
            .iter()
            .map(|t| Transmit {
                scheduled: t.scheduled + by,
                ..*t
            })
            .collect();
        assert_eq!(drain(&mut delayed), shifted);
    }

    #[test]
    fn an_unpaced_flow_is_always_due_and_ends_exactly_at_its_duration() {
        let mut s = spec(
            Rate::MilliPps(1_000),
            131_072,
            StopSpec {
                duration: Some(Duration::from_secs(2)),
                ..Default::default()
            },
        );
        s.unpaced = true;
        let mut sched = Schedule::new(&s, Instant::ZERO).unwrap();
        assert_eq!(sched.poll_transmit(Instant::from_nanos(4_999_999)), None);
        assert_eq!(sched.poll_timeout(), Some(Instant::from_nanos(5_000_000)));
        // A writer that gets 1000 messages through every millisecond.
        let mut now = Instant::from_nanos(5_000_000);
        let mut n = 0u64;
        while !sched.is_finished() {
            for _ in 0..1000 {
                match sched.poll_transmit(now) {
                    Some(t) => {
                        assert_eq!(t.scheduled, now);
                        n += 1;
                    }
                    None => break,
                }
            }
            now += Duration::from_millis(1);
        }
        // 2000 ms of writing, no grace.
        assert_eq!(n, 2_000_000);
        assert_eq!(sched.bytes(), 2_000_000 * 131_072);
        assert_eq!(sched.poll_timeout(), None);
    }

    #[test]
    fn on_off_gating_terminates_for_degenerate_processes() {
        use crate::distribution::{Dist, OnOff};
        let mut s = spec(
            Rate::MilliPps(1_000_000),
            64,
            StopSpec {
                count: Some(10),
                ..Default::default()
            },
        );
        // ON periods always zero: refused, not an endless search.
        s.on_off_ms = Some(OnOff {
            on: Dist::Constant { value: 0.0 },
            off: Dist::Constant { value: 1000.0 },
        });
        assert_eq!(
            Schedule::new(&s, Instant::ZERO).unwrap_err(),
            DistError::NeverOn
        );
        // Zero gaps with long silences: each silence is crossed in one step.
        s.idt_ms = Some(Dist::Constant { value: 0.0 });
        s.on_off_ms = Some(OnOff {
            on: Dist::Constant { value: 1.0 },
            off: Dist::Constant { value: 3_600_000.0 },
        });
        let sent = drain(&mut Schedule::new(&s, Instant::ZERO).unwrap());
        assert_eq!(sent.len(), 10);
        // All ten in the first 1 ms ON period (zero gaps), marked once.
        assert!(sent
            .iter()
            .all(|t| t.scheduled == Instant::from_nanos(5_000_000)));
        assert_eq!(sent.iter().filter(|t| t.marker).count(), 1);
        // A constant grid resumes on the grid: 1000 pkt/s, ON 2.5 ms, OFF 1 h, twice.
        s.idt_ms = None;
        s.stop.count = Some(6);
        s.on_off_ms = Some(OnOff {
            on: Dist::Constant { value: 2.5 },
            off: Dist::Constant { value: 3_600_000.0 },
        });
        let sent = drain(&mut Schedule::new(&s, Instant::ZERO).unwrap());
        let at: Vec<u64> = sent
            .iter()
            .map(|t| t.scheduled.as_nanos() - 5_000_000)
            .collect();
        // ON [0, 2.5 ms) holds 0, 1 and 2 ms; the next ON, [3600.0025 s, 3600.005 s),
        // holds the grid points 3600.003 and 3600.004 s; the third starts on one.
        assert_eq!(
            at,
            [
                0,
                1_000_000,
                2_000_000,
                3_600_003_000_000,
                3_600_004_000_000,
                7_200_005_000_000
            ]
        );
        assert_eq!(
            sent.iter().map(|t| t.seq).collect::<Vec<_>>(),
            [0, 1, 2, 3, 4, 5]
        );
        assert_eq!(sent.iter().filter(|t| t.marker).count(), 3);
    }
}
