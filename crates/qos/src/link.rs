//! A link: a tail-drop queue, a serializer at the link's rate, a wire that may lose the
//! frame, and a propagation delay with jitter (netem's job, done here because this
//! kernel has no netem).
//!
//! ```text
//!  enqueue ─► [ queue: limit packets / bytes ] ─► serializer ─► loss? ─► delay ± jitter ─► dequeue
//!                 tail drop                        rate_bps        Bernoulli      uniform
//!                                                                  Gilbert–Elliott
//!                                            (+ v4 / v6: the family's own loss? and delay)
//! ```
//!
//! **Serialization.** A frame of `L` bytes occupies the link for
//! `(L + overhead_bytes) · 8 / rate_bps` seconds, rounded up to the nanosecond, and
//! starts when the previous one has finished (or when it arrives, if the link is
//! idle): start(i) = max(arrival(i), finish(i−1)), finish(i) = start(i) + tx(i). `L`
//! is the Ethernet frame as `AF_PACKET` sees it: 14 bytes of header plus the payload,
//! without preamble, SFD, FCS or inter-frame gap. With the default
//! `overhead_bytes = 0` a 1500-byte frame takes exactly 1.2 ms at 10 Mbit/s; set
//! `overhead_bytes = 24` to count the 7 + 1 + 4 + 12 bytes a real Ethernet wire adds.
//! A rate of 0 means no serialization (an infinitely fast link).
//!
//! **Queue.** Frames wait in a FIFO until the serializer takes them. A frame that would
//! exceed `limit_packets` waiting frames, or `limit_bytes` waiting bytes, is dropped on
//! arrival (tail drop). The queueing delay recorded per frame is start − arrival.
//!
//! **Loss.** Decided when a frame has been serialized, so a lost frame has used the link
//! as on a real wire. Bernoulli: each frame is lost with probability `p`. Gilbert–Elliott
//! (netem's `loss gemodel p r 1-h 1-k`): a two-state Markov chain, good → bad with
//! probability `p` and bad → good with `r`, evaluated once per frame before the loss
//! draw; a frame is lost with `loss_good` (1 − k) in the good state and `loss_bad`
//! (1 − h) in the bad one. The stationary loss rate is
//! `(r · loss_good + p · loss_bad) / (p + r)`.
//!
//! **Delay.** Each frame arrives `delay ± jitter` after its last bit left, the jitter
//! drawn uniformly from [−jitter, +jitter] (netem's default without a distribution
//! table) and clamped so that delay never goes below 0. A link does not reorder:
//! a frame never arrives before the one sent ahead of it (netem, by contrast,
//! reorders when the jitter exceeds the gap between packets). So when the jitter
//! exceeds the gap between frames, a frame drawn early waits for the one ahead, and
//! delays lean toward `delay + jitter` (a running maximum); the configured statistics
//! hold only for frames spaced more than twice the jitter apart.
//!
//! **Per family.** `v4` and `v6` add an impairment to one family's frames only (by
//! the frame's ethertype, 0x0800 or 0x86DD, past one VLAN tag): after serialization
//! such a frame takes a second loss draw, from a ChaCha stream of that family's own
//! (the link's seed, stream = the ethertype), made for every serialized frame of the
//! family and no other, so which IPv4 frames are lost does not depend on the IPv6
//! traffic beside them; and it arrives the family's `delay` later than the link alone
//! would deliver it. Each family then travels in a lane of its own, in order within
//! the lane, and [`Link::dequeue`] takes the earliest arrival at a lane's head: an
//! IPv4 frame may overtake an IPv6 one delayed more, as on two paths.
//!
//! The queue limit bounds frames *waiting*; frames in propagation are not limited
//! (at most rate × delay of them, as on a real wire).

use std::collections::VecDeque;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};
use wire::time::{Duration, Instant};

use crate::hist::{Histogram, Summary};
use crate::{DropReason, Verdict};

/// Random loss on the wire.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case", tag = "model")]
pub enum LossModel {
    /// Nothing is lost.
    None,
    /// Each frame lost with probability `p`.
    Bernoulli {
        /// Loss probability.
        p: f64,
    },
    /// Two-state Markov chain (Gilbert–Elliott).
    GilbertElliott {
        /// P(good → bad) per frame.
        p: f64,
        /// P(bad → good) per frame.
        r: f64,
        /// Loss probability in the good state (netem's 1 − k).
        loss_good: f64,
        /// Loss probability in the bad state (netem's 1 − h).
        loss_bad: f64,
    },
}

impl LossModel {
    /// Check that every probability is one (0 to 1).
    pub fn validate(&self) -> Result<(), LinkError> {
        let prob = |name: &'static str, value: f64| {
            if (0.0..=1.0).contains(&value) {
                Ok(())
            } else {
                Err(LinkError::Probability { name, value })
            }
        };
        match *self {
            Self::None => Ok(()),
            Self::Bernoulli { p } => prob("p", p),
            Self::GilbertElliott {
                p,
                r,
                loss_good,
                loss_bad,
            } => {
                prob("p", p)?;
                prob("r", r)?;
                prob("loss_good", loss_good)?;
                prob("loss_bad", loss_bad)
            }
        }
    }

    /// The long-run share of frames lost.
    pub fn mean_loss(&self) -> f64 {
        match *self {
            Self::None => 0.0,
            Self::Bernoulli { p } => p,
            Self::GilbertElliott {
                p,
                r,
                loss_good,
                loss_bad,
            } => {
                if p + r == 0.0 {
                    loss_good // the chain never leaves the good state it starts in
                } else {
                    (r * loss_good + p * loss_bad) / (p + r)
                }
            }
        }
    }
}

/// A link's configuration.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct LinkParams {
    /// Serialization rate, bit/s; 0 = no serialization delay.
    pub rate_bps: u64,
    /// Bytes counted per frame beyond what `AF_PACKET` sees (24 for preamble, SFD, FCS
    /// and inter-frame gap).
    pub overhead_bytes: u32,
    /// Propagation delay.
    #[serde(rename = "delay_ns")]
    pub delay: Duration,
    /// Half-width of the uniform jitter around `delay`.
    #[serde(rename = "jitter_ns")]
    pub jitter: Duration,
    /// Random loss on the wire.
    pub loss: LossModel,
    /// Most frames waiting; `None` = no limit.
    pub limit_packets: Option<u32>,
    /// Most bytes waiting; `None` = no limit.
    pub limit_bytes: Option<u64>,
    /// What IPv4 frames (ethertype 0x0800) suffer beyond the above.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub v4: Option<FamilyImpair>,
    /// What IPv6 frames (ethertype 0x86DD) suffer beyond the above.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub v6: Option<FamilyImpair>,
}

/// One family's impairment on top of a link's own: frames of that family, once
/// serialized and past the link's own loss, take a second loss draw (from a random
/// stream of their own) and arrive `delay` later.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct FamilyImpair {
    /// Extra propagation delay.
    #[serde(rename = "delay_ns", default)]
    pub delay: Duration,
    /// Extra random loss.
    #[serde(default = "no_loss")]
    pub loss: LossModel,
}

fn no_loss() -> LossModel {
    LossModel::None
}

impl Default for LinkParams {
    /// An unlimited link: no rate, no delay, no loss, a queue of 1000 frames (as Linux's
    /// default `txqueuelen`).
    fn default() -> Self {
        Self {
            rate_bps: 0,
            overhead_bytes: 0,
            delay: Duration::ZERO,
            jitter: Duration::ZERO,
            loss: LossModel::None,
            limit_packets: Some(1000),
            limit_bytes: None,
            v4: None,
            v6: None,
        }
    }
}

/// A link configuration that cannot be used.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum LinkError {
    /// A probability outside [0, 1].
    #[error("loss: {name} = {value} is not a probability (0 to 1)")]
    Probability {
        /// Which one.
        name: &'static str,
        /// Its value.
        value: f64,
    },
    /// A queue limit of 0 would drop everything.
    #[error("a queue limit of 0 drops every frame")]
    ZeroLimit,
    /// Delay or jitter beyond a minute: surely a unit mistake.
    #[error("delay and jitter must be at most 60 s")]
    TooLong,
}

impl LinkParams {
    /// Check the configuration.
    pub fn validate(&self) -> Result<(), LinkError> {
        self.loss.validate()?;
        if self.limit_packets == Some(0) || self.limit_bytes == Some(0) {
            return Err(LinkError::ZeroLimit);
        }
        let minute = Duration::from_secs(60);
        if self.delay > minute || self.jitter > minute {
            return Err(LinkError::TooLong);
        }
        for f in self.v4.iter().chain(&self.v6) {
            f.loss.validate()?;
            if f.delay > minute {
                return Err(LinkError::TooLong);
            }
        }
        Ok(())
    }

    /// Time on the link of a frame of `len` bytes.
    pub fn tx_time(&self, len: usize) -> Duration {
        if self.rate_bps == 0 {
            return Duration::ZERO;
        }
        let bits = (len as u128 + u128::from(self.overhead_bytes)) * 8;
        let ns = (bits * 1_000_000_000).div_ceil(u128::from(self.rate_bps));
        Duration::from_nanos(u64::try_from(ns).unwrap_or(u64::MAX))
    }
}

/// A link's counters.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct LinkStats {
    /// Frames offered to `enqueue`.
    pub offered_packets: u64,
    /// Their bytes.
    pub offered_bytes: u64,
    /// Frames handed out by `dequeue`.
    pub sent_packets: u64,
    /// Their bytes.
    pub sent_bytes: u64,
    /// Tail drops: the packet limit.
    pub dropped_queue_packets: u64,
    /// Tail drops: the byte limit.
    pub dropped_queue_bytes: u64,
    /// Lost on the wire.
    pub dropped_random_loss: u64,
    /// Most frames ever waiting.
    pub max_backlog_packets: u64,
    /// Queueing delay (start of serialization − arrival) percentiles.
    pub queue_delay: Summary,
}

impl LinkStats {
    /// Drops by reason.
    pub fn dropped(&self, reason: DropReason) -> u64 {
        match reason {
            DropReason::QueueLimitPackets => self.dropped_queue_packets,
            DropReason::QueueLimitBytes => self.dropped_queue_bytes,
            DropReason::RandomLoss => self.dropped_random_loss,
            DropReason::Policed | DropReason::WredEarly | DropReason::WredForced => 0,
        }
    }
}

struct Waiting {
    frame: Vec<u8>,
    arrival: Instant,
}

/// A link; see the module doc for the model.
///
/// Method contract (quinn's style): feed frames with [`Link::enqueue`]; take every frame
/// that has arrived at the far end with [`Link::dequeue`] until it returns `None`; then
/// sleep until [`Link::poll_timeout`] or the next frame to enqueue, whichever is
/// first. Results depend only on the times handed in, not on how often the link is
/// polled; `now` must not go backwards.
pub struct Link {
    params: LinkParams,
    queue: VecDeque<Waiting>,
    queued_bytes: u64,
    /// When the serializer is free again.
    busy_until: Instant,
    /// Serialized and not lost, each lane in arrival order at the far end: lane 0 for
    /// frames of a family without an impairment of its own, 1 for IPv4's and 2 for
    /// IPv6's when they have one. Each holds (arrival, order put in flight, frame).
    lanes: [VecDeque<(Instant, u64, Vec<u8>)>; 3],
    /// Frames put in flight so far (ties between lanes go to the one sent first).
    sent_order: u64,
    /// Arrival time of the last frame put in flight, before any family's extra delay
    /// (no reordering within a lane).
    last_arrival: Instant,
    bad_state: bool,
    rng: ChaCha8Rng,
    /// IPv4's and IPv6's own impairments.
    overlays: [Option<Overlay>; 2],
    stats: LinkStats,
    queue_delay: Histogram,
}

/// One family's impairment as it runs: its own random stream and loss state, so the
/// draws for one family's frames depend only on that family's frames.
struct Overlay {
    impair: FamilyImpair,
    bad_state: bool,
    rng: ChaCha8Rng,
}

impl Overlay {
    /// `impair` for the family whose ethertype is `ethertype`, seeded from the link's
    /// `seed` on a ChaCha stream of the family's own.
    fn new(impair: FamilyImpair, seed: u64, ethertype: u16) -> Self {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        rng.set_stream(u64::from(ethertype));
        Self {
            impair,
            bad_state: false,
            rng,
        }
    }
}

/// IPv4 = 0, IPv6 = 1 (the index of [`Link`]'s overlays), from an Ethernet frame's
/// ethertype, looking past one 802.1Q or 802.1ad tag; `None` for anything else.
pub fn frame_family(frame: &[u8]) -> Option<usize> {
    let ethertype = |at: usize| {
        frame
            .get(at..at + 2)
            .map(|b| u16::from_be_bytes([b[0], b[1]]))
    };
    let mut t = ethertype(12)?;
    if t == 0x8100 || t == 0x88a8 {
        t = ethertype(16)?;
    }
    match t {
        0x0800 => Some(0),
        0x86dd => Some(1),
        _ => None,
    }
}

impl Link {
    /// A link with `params`, its randomness seeded with `seed`.
    pub fn new(params: LinkParams, seed: u64) -> Result<Self, LinkError> {
        params.validate()?;
        let overlays = [
            params.v4.map(|f| Overlay::new(f, seed, 0x0800)),
            params.v6.map(|f| Overlay::new(f, seed, 0x86dd)),
        ];
        Ok(Self {
            params,
            queue: VecDeque::new(),
            queued_bytes: 0,
            busy_until: Instant::ZERO,
            lanes: Default::default(),
            sent_order: 0,
            last_arrival: Instant::ZERO,
            bad_state: false,
            rng: ChaCha8Rng::seed_from_u64(seed),
            overlays,
            stats: LinkStats::default(),
            queue_delay: Histogram::default(),
        })
    }

    /// The configuration.
    pub fn params(&self) -> &LinkParams {
        &self.params
    }

    /// Offer a frame at `now`.
    pub fn enqueue(&mut self, frame: Vec<u8>, now: Instant) -> Verdict {
        self.advance(now);
        self.stats.offered_packets += 1;
        self.stats.offered_bytes += frame.len() as u64;
        if self
            .params
            .limit_packets
            .is_some_and(|l| self.queue.len() as u64 >= u64::from(l))
        {
            self.stats.dropped_queue_packets += 1;
            return Verdict::Dropped(DropReason::QueueLimitPackets);
        }
        if self
            .params
            .limit_bytes
            .is_some_and(|l| self.queued_bytes + frame.len() as u64 > l)
        {
            self.stats.dropped_queue_bytes += 1;
            return Verdict::Dropped(DropReason::QueueLimitBytes);
        }
        self.queued_bytes += frame.len() as u64;
        self.queue.push_back(Waiting {
            frame,
            arrival: now,
        });
        self.stats.max_backlog_packets =
            self.stats.max_backlog_packets.max(self.queue.len() as u64);
        // An idle link starts sending at once.
        self.advance(now);
        Verdict::Queued
    }

    /// The next frame that has reached the far end by `now`.
    pub fn dequeue(&mut self, now: Instant) -> Option<Vec<u8>> {
        self.advance(now);
        let lane = self.next_lane().filter(|&(at, _)| at <= now)?.1;
        if let Some((_, _, frame)) = self.lanes[lane].pop_front() {
            self.stats.sent_packets += 1;
            self.stats.sent_bytes += frame.len() as u64;
            return Some(frame);
        }
        None
    }

    /// Offer a frame of `len` bytes that would cross the link at once and unchanged:
    /// a link with no rate, delay, jitter or loss, nothing queued or in flight, and room
    /// for the frame. Then it is counted exactly as [`Link::enqueue`] followed by
    /// [`Link::dequeue`] at `now` would count it, and `true` says the caller sends it
    /// straight on (a router copies it from its RX slot into a TX slot, never into a
    /// buffer of ours). `false` changes nothing: enqueue the frame instead.
    pub fn pass(&mut self, len: usize, now: Instant) -> bool {
        let p = &self.params;
        let transparent = p.rate_bps == 0
            && p.delay == Duration::ZERO
            && p.jitter == Duration::ZERO
            && p.loss == LossModel::None
            && p.v4.is_none()
            && p.v6.is_none();
        if !transparent
            || !self.queue.is_empty()
            || self.in_flight_packets() > 0
            || p.limit_bytes.is_some_and(|l| len as u64 > l)
            || self.busy_until > now
            || self.last_arrival > now
        {
            return false;
        }
        let bytes = len as u64;
        self.stats.offered_packets += 1;
        self.stats.offered_bytes += bytes;
        self.stats.max_backlog_packets = self.stats.max_backlog_packets.max(1);
        self.queue_delay.record(0);
        self.busy_until = now;
        self.last_arrival = now;
        self.stats.sent_packets += 1;
        self.stats.sent_bytes += bytes;
        true
    }

    /// When the next frame arrives at the far end or the next serialization starts;
    /// `None` when the link is empty.
    pub fn poll_timeout(&self) -> Option<Instant> {
        let arrival = self.next_lane().map(|(at, _)| at);
        let start = self.queue.front().map(|w| w.arrival.max(self.busy_until));
        match (arrival, start) {
            (Some(a), Some(s)) => Some(a.min(s)),
            (a, s) => a.or(s),
        }
    }

    /// Frames waiting to be serialized.
    pub fn backlog_packets(&self) -> usize {
        self.queue.len()
    }

    /// Frames waiting once every serialization due by `now` has started (for a
    /// scheduler that keeps the queue as a tx-ring).
    pub fn backlog_after(&mut self, now: Instant) -> usize {
        self.advance(now);
        self.queue.len()
    }

    /// Frames on the wire or in propagation.
    pub fn in_flight_packets(&self) -> usize {
        self.lanes.iter().map(VecDeque::len).sum()
    }

    /// The earliest arrival at the head of a lane, and that lane (at equal times, the
    /// frame put in flight first).
    fn next_lane(&self) -> Option<(Instant, usize)> {
        (0..self.lanes.len())
            .filter_map(|i| self.lanes[i].front().map(|(at, n, _)| (*at, *n, i)))
            .min()
            .map(|(at, _, i)| (at, i))
    }

    /// The counters, with the queueing-delay percentiles as of now.
    pub fn stats(&self) -> LinkStats {
        let mut s = self.stats.clone();
        s.queue_delay = self.queue_delay.summary();
        s
    }

    /// Serialize every waiting frame whose turn on the wire starts by `now`.
    fn advance(&mut self, now: Instant) {
        while let Some(head) = self.queue.front() {
            let start = head.arrival.max(self.busy_until);
            if start > now {
                break;
            }
            let Some(w) = self.queue.pop_front() else {
                break;
            };
            self.queued_bytes -= w.frame.len() as u64;
            self.queue_delay
                .record(start.saturating_duration_since(w.arrival).as_nanos());
            let finish = start + self.params.tx_time(w.frame.len());
            self.busy_until = finish;
            // The family's own draw comes first and for every frame of the family, so
            // its stream follows that family's frames alone.
            let overlay =
                frame_family(&w.frame).and_then(|f| Some(f).zip(self.overlays[f].as_mut()));
            let (lane, extra, family_lost) = match overlay {
                Some((f, o)) => (
                    f + 1,
                    o.impair.delay,
                    lost(o.impair.loss, &mut o.bad_state, &mut o.rng),
                ),
                None => (0, Duration::ZERO, false),
            };
            if lost(self.params.loss, &mut self.bad_state, &mut self.rng) || family_lost {
                self.stats.dropped_random_loss += 1;
                continue;
            }
            let at = (finish + self.propagation()).max(self.last_arrival);
            self.last_arrival = at;
            self.lanes[lane].push_back((at + extra, self.sent_order, w.frame));
            self.sent_order += 1;
        }
    }

    fn propagation(&mut self) -> Duration {
        let delay = self.params.delay.as_nanos() as i128;
        let jitter = self.params.jitter.as_nanos() as i128;
        if jitter == 0 {
            return self.params.delay;
        }
        let offset = self.rng.gen_range(-jitter..=jitter);
        Duration::from_nanos((delay + offset).max(0) as u64)
    }
}

/// One loss draw of `model`, in Gilbert–Elliott's chain state `bad_state`.
fn lost(model: LossModel, bad_state: &mut bool, rng: &mut ChaCha8Rng) -> bool {
    match model {
        LossModel::None => false,
        LossModel::Bernoulli { p } => rng.gen::<f64>() < p,
        LossModel::GilbertElliott {
            p,
            r,
            loss_good,
            loss_bad,
        } => {
            let flip = if *bad_state { r } else { p };
            if rng.gen::<f64>() < flip {
                *bad_state = !*bad_state;
            }
            let loss = if *bad_state { loss_bad } else { loss_good };
            rng.gen::<f64>() < loss
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(ns: u64) -> Instant {
        Instant::from_nanos(ns)
    }

    /// Drain everything the link delivers, stepping from event to event.
    fn run(link: &mut Link) -> Vec<(u64, Vec<u8>)> {
        let mut out = Vec::new();
        while let Some(at) = link.poll_timeout() {
            while let Some(f) = link.dequeue(at) {
                out.push((at.as_nanos(), f));
            }
        }
        out
    }

    fn ten_mbit() -> LinkParams {
        LinkParams {
            rate_bps: 10_000_000,
            limit_packets: Some(1000),
            ..LinkParams::default()
        }
    }

    #[test]
    fn ten_mbit_spaces_1500_byte_frames_exactly_1_2_ms_apart() {
        let mut link = Link::new(ten_mbit(), 1).unwrap();
        // A burst of 5 frames at t = 0: the link serializes them back to back.
        for i in 0..5u8 {
            assert_eq!(link.enqueue(vec![i; 1500], t(0)), Verdict::Queued);
        }
        let out = run(&mut link);
        let times: Vec<u64> = out.iter().map(|(at, _)| *at).collect();
        assert_eq!(
            times,
            [1_200_000, 2_400_000, 3_600_000, 4_800_000, 6_000_000]
        );
        assert_eq!(out[3].1[0], 3, "in order");
        // The fourth waited 3 × 1.2 ms; the median of 0, 1.2, 2.4, 3.6, 4.8 ms is 2.4.
        let s = link.stats();
        assert_eq!(s.queue_delay.max_ns, Some(4_800_000));
        // The median, 2.4 ms, to its histogram bucket [73 · 32768, 74 · 32768).
        assert_eq!(s.queue_delay.p50_ns, Some(73 * 32768));
        assert_eq!((s.sent_packets, s.sent_bytes), (5, 7500));
        // With the Ethernet wire's 24 bytes counted, 1524 · 8 / 10 Mbit/s = 1.2192 ms.
        let wire = LinkParams {
            overhead_bytes: 24,
            ..ten_mbit()
        };
        assert_eq!(wire.tx_time(1500), Duration::from_nanos(1_219_200));
        // 64 bytes: 51.2 µs; 1 byte rounds up to the next nanosecond (800 ns exactly).
        assert_eq!(ten_mbit().tx_time(64), Duration::from_nanos(51_200));
        let odd = LinkParams {
            rate_bps: 3,
            ..ten_mbit()
        };
        assert_eq!(odd.tx_time(1), Duration::from_nanos(2_666_666_667));
    }

    #[test]
    fn an_idle_link_sends_on_arrival_and_polling_more_often_changes_nothing() {
        let params = LinkParams {
            delay: Duration::from_millis(10),
            ..ten_mbit()
        };
        // Arrivals every 2 ms: the link is idle at each, so each leaves 1.2 ms later
        // and arrives 10 ms after that.
        let mut a = Link::new(params.clone(), 1).unwrap();
        for i in 0..4 {
            a.enqueue(vec![0; 1500], t(i * 2_000_000));
        }
        let coarse: Vec<u64> = run(&mut a).into_iter().map(|(at, _)| at).collect();
        assert_eq!(coarse, [11_200_000, 13_200_000, 15_200_000, 17_200_000]);
        // Polled every 100 µs while enqueueing at the same times: same arrivals.
        let mut b = Link::new(params, 1).unwrap();
        let mut fine = Vec::new();
        for step in 0..=200u64 {
            let now = t(step * 100_000);
            if step % 20 == 0 && step < 80 {
                b.enqueue(vec![0; 1500], now);
            }
            while let Some(_f) = b.dequeue(now) {
                fine.push(now.as_nanos());
            }
        }
        assert_eq!(fine, coarse);
        assert_eq!(b.stats().queue_delay.max_ns, Some(0));
    }

    #[test]
    fn the_queue_drops_at_its_limits() {
        let mut link = Link::new(
            LinkParams {
                limit_packets: Some(3),
                ..ten_mbit()
            },
            1,
        )
        .unwrap();
        // The first frame goes straight onto the wire; three wait; the fifth is dropped.
        let verdicts: Vec<Verdict> = (0..5).map(|_| link.enqueue(vec![0; 1000], t(0))).collect();
        assert_eq!(verdicts[..4], [Verdict::Queued; 4]);
        assert_eq!(verdicts[4], Verdict::Dropped(DropReason::QueueLimitPackets));
        assert_eq!(link.backlog_packets(), 3);
        // Once the first has left (0.8 ms), there is room for one more.
        assert_eq!(link.enqueue(vec![0; 1000], t(800_000)), Verdict::Queued);
        assert_eq!(
            link.enqueue(vec![0; 1000], t(800_000)),
            Verdict::Dropped(DropReason::QueueLimitPackets)
        );
        let mut link = Link::new(
            LinkParams {
                limit_packets: None,
                limit_bytes: Some(2500),
                ..ten_mbit()
            },
            1,
        )
        .unwrap();
        link.enqueue(vec![0; 1000], t(0)); // on the wire
        link.enqueue(vec![0; 1000], t(0));
        link.enqueue(vec![0; 1000], t(0));
        assert_eq!(
            link.enqueue(vec![0; 600], t(0)),
            Verdict::Dropped(DropReason::QueueLimitBytes),
            "2000 + 600 > 2500"
        );
        assert_eq!(
            link.enqueue(vec![0; 500], t(0)),
            Verdict::Queued,
            "2000 + 500"
        );
        let s = link.stats();
        assert_eq!((s.dropped_queue_bytes, s.offered_packets), (1, 5));
        assert_eq!(run(&mut link).len(), 4);
    }

    #[test]
    fn bernoulli_loss_matches_its_probability_on_a_seeded_run() {
        let mut link = Link::new(
            LinkParams {
                loss: LossModel::Bernoulli { p: 0.1 },
                ..LinkParams::default()
            },
            7,
        )
        .unwrap();
        let n = 200_000u64;
        for i in 0..n {
            link.enqueue(vec![0; 64], t(i));
            while link.dequeue(t(i)).is_some() {}
        }
        let s = link.stats();
        assert_eq!(s.sent_packets + s.dropped_random_loss, n);
        // σ = √(n p (1 − p)) ≈ 134 frames; within 4σ.
        let lost = s.dropped_random_loss as f64;
        assert!((lost - 20_000.0).abs() < 4.0 * 134.2, "{lost}");
        // The same seed replays the same losses.
        let mut again = Link::new(link.params().clone(), 7).unwrap();
        for i in 0..n {
            again.enqueue(vec![0; 64], t(i));
            while again.dequeue(t(i)).is_some() {}
        }
        assert_eq!(again.stats().dropped_random_loss, s.dropped_random_loss);
    }

    #[test]
    fn gilbert_elliott_loss_has_its_stationary_rate_and_bursts() {
        // Simple Gilbert: every frame in the bad state is lost, none in the good one.
        // p = 0.01, r = 0.25: loss = 0.01 / 0.26 ≈ 3.85 %, mean burst 1/r = 4 frames.
        let loss = LossModel::GilbertElliott {
            p: 0.01,
            r: 0.25,
            loss_good: 0.0,
            loss_bad: 1.0,
        };
        assert!((loss.mean_loss() - 0.01 / 0.26).abs() < 1e-12);
        let mut link = Link::new(
            LinkParams {
                loss,
                ..LinkParams::default()
            },
            3,
        )
        .unwrap();
        let n = 400_000u64;
        let mut delivered = vec![false; n as usize];
        for i in 0..n {
            let mut f = vec![0; 64];
            f[..8].copy_from_slice(&i.to_be_bytes());
            link.enqueue(f, t(i));
            while let Some(f) = link.dequeue(t(i)) {
                let seq = u64::from_be_bytes(f[..8].try_into().unwrap());
                delivered[seq as usize] = true;
            }
        }
        let lost = delivered.iter().filter(|d| !**d).count() as f64;
        let rate = lost / n as f64;
        assert!((rate - 0.0385).abs() < 0.004, "{rate}");
        // Bursts: runs of consecutive losses average 1/r = 4.
        let mut bursts = 0u64;
        let mut prev = true;
        for d in &delivered {
            if !*d && prev {
                bursts += 1;
            }
            prev = *d;
        }
        let mean_burst = lost / bursts as f64;
        assert!((mean_burst - 4.0).abs() < 0.2, "{mean_burst}");
    }

    #[test]
    fn delay_and_jitter_have_their_configured_mean_and_spread() {
        let params = LinkParams {
            delay: Duration::from_millis(20),
            jitter: Duration::from_millis(5),
            ..LinkParams::default()
        };
        let mut link = Link::new(params, 11).unwrap();
        // Sent every 20 ms, so the ±5 ms jitter never meets the no-reordering clamp.
        let n = 20_000u64;
        for i in 0..n {
            let sent = i * 20_000_000;
            link.enqueue(sent.to_be_bytes().to_vec(), t(sent));
        }
        let delays: Vec<f64> = run(&mut link)
            .into_iter()
            .map(|(at, f)| (at - u64::from_be_bytes(f[..8].try_into().unwrap())) as f64)
            .collect();
        assert_eq!(delays.len() as u64, n);
        let mean = delays.iter().sum::<f64>() / n as f64;
        let sd = (delays.iter().map(|d| (d - mean).powi(2)).sum::<f64>() / (n - 1) as f64).sqrt();
        // Uniform on [15, 25] ms: mean 20 ms, sd 10/√12 = 2.887 ms.
        assert!((mean - 20e6).abs() < 0.05e6, "{mean}");
        assert!((sd - 2.8868e6).abs() < 0.05e6, "{sd}");
        assert!(delays.iter().all(|d| (15e6..=25e6).contains(d)));
    }

    #[test]
    fn a_link_never_reorders_even_when_jitter_exceeds_the_gap() {
        let mut link = Link::new(
            LinkParams {
                delay: Duration::from_millis(5),
                jitter: Duration::from_millis(5),
                ..LinkParams::default()
            },
            5,
        )
        .unwrap();
        for i in 0..1000u64 {
            link.enqueue(i.to_be_bytes().to_vec(), t(i * 100_000));
        }
        let out = run(&mut link);
        let seqs: Vec<u64> = out
            .iter()
            .map(|(_, f)| u64::from_be_bytes(f[..8].try_into().unwrap()))
            .collect();
        assert_eq!(seqs, (0..1000).collect::<Vec<_>>());
        assert!(out.windows(2).all(|w| w[0].0 <= w[1].0));
    }

    #[test]
    fn impossible_settings_are_refused() {
        let bad = |p: LinkParams| Link::new(p, 0).err().unwrap().to_string();
        assert!(bad(LinkParams {
            loss: LossModel::Bernoulli { p: 1.5 },
            ..LinkParams::default()
        })
        .contains("not a probability"));
        assert!(bad(LinkParams {
            limit_packets: Some(0),
            ..LinkParams::default()
        })
        .contains("limit of 0"));
        assert!(bad(LinkParams {
            delay: Duration::from_secs(61),
            ..LinkParams::default()
        })
        .contains("60 s"));
    }

    #[test]
    fn passing_a_frame_counts_exactly_as_enqueue_then_dequeue() {
        // Frames of varied sizes at varied times through a transparent link, half of
        // them offered with `pass` first; a byte limit below the largest frame, so
        // some cannot pass and take the queue's path (and its drop).
        let params = LinkParams {
            limit_bytes: Some(1000),
            ..LinkParams::default()
        };
        let mut a = Link::new(params.clone(), 1).unwrap();
        let mut b = Link::new(params, 1).unwrap();
        let (mut out_a, mut out_b, mut passed) = (0u64, 0u64, 0u64);
        let mut x = 7u64;
        for i in 0..2000u64 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let len = 60 + (x >> 33) as usize % 1100;
            let now = t(i * 1000 + (x >> 55));
            if i % 2 == 0 && a.pass(len, now) {
                passed += 1;
                out_a += 1;
            } else {
                let _ = a.enqueue(vec![0; len], now);
            }
            let _ = b.enqueue(vec![0; len], now);
            while a.dequeue(now).is_some() {
                out_a += 1;
            }
            while b.dequeue(now).is_some() {
                out_b += 1;
            }
        }
        assert!(passed > 500, "{passed}");
        assert_eq!(out_a, out_b);
        assert_eq!(a.stats(), b.stats());
        // A link that shapes, delays or loses never passes a frame.
        for p in [
            LinkParams {
                rate_bps: 1_000_000,
                ..LinkParams::default()
            },
            LinkParams {
                delay: Duration::from_nanos(1),
                ..LinkParams::default()
            },
            LinkParams {
                loss: LossModel::Bernoulli { p: 0.0 },
                ..LinkParams::default()
            },
            LinkParams {
                v6: Some(FamilyImpair {
                    delay: Duration::ZERO,
                    loss: LossModel::None,
                }),
                ..LinkParams::default()
            },
        ] {
            let mut l = Link::new(p, 1).unwrap();
            assert!(!l.pass(100, t(0)));
            assert_eq!(l.stats().offered_packets, 0);
        }
    }

    /// An Ethernet frame of `len` bytes with `ethertype`, its sequence number at 14..22.
    fn eth(ethertype: u16, seq: u64, len: usize) -> Vec<u8> {
        let mut f = vec![0u8; len];
        f[12..14].copy_from_slice(&ethertype.to_be_bytes());
        f[14..22].copy_from_slice(&seq.to_be_bytes());
        f
    }

    fn seq(f: &[u8]) -> u64 {
        u64::from_be_bytes(f[14..22].try_into().unwrap())
    }

    fn only(family: &str, impair: FamilyImpair, base: LinkParams) -> LinkParams {
        match family {
            "v4" => LinkParams {
                v4: Some(impair),
                ..base
            },
            _ => LinkParams {
                v6: Some(impair),
                ..base
            },
        }
    }

    #[test]
    fn a_frame_s_family_is_its_ethertype_past_one_vlan_tag() {
        assert_eq!(frame_family(&eth(0x0800, 0, 64)), Some(0));
        assert_eq!(frame_family(&eth(0x86dd, 0, 64)), Some(1));
        assert_eq!(frame_family(&eth(0x0806, 0, 64)), None, "ARP");
        let mut tagged = eth(0x8100, 0, 64);
        tagged[16..18].copy_from_slice(&0x86ddu16.to_be_bytes());
        assert_eq!(frame_family(&tagged), Some(1));
        assert_eq!(frame_family(&tagged[..17]), None, "cut in the tag");
        assert_eq!(frame_family(&[0; 13]), None);
    }

    #[test]
    fn ipv6_only_delay_delays_ipv6_frames_only_and_keeps_each_family_fifo() {
        // 10 Mbit/s, 1 ms of propagation for all, 2 ms more for IPv6: a burst of eight
        // 1000-byte frames at t = 0, IPv4 and IPv6 in turn, leaves every 0.8 ms; IPv4
        // arrives 1 ms after its last bit, IPv6 3 ms after.
        let params = only(
            "v6",
            FamilyImpair {
                delay: Duration::from_millis(2),
                loss: LossModel::None,
            },
            LinkParams {
                delay: Duration::from_millis(1),
                ..ten_mbit()
            },
        );
        let mut link = Link::new(params, 1).unwrap();
        for i in 0..8u64 {
            let ethertype = if i % 2 == 0 { 0x0800 } else { 0x86dd };
            assert_eq!(link.enqueue(eth(ethertype, i, 1000), t(0)), Verdict::Queued);
        }
        let out: Vec<(u64, u64)> = run(&mut link)
            .into_iter()
            .map(|(at, f)| (seq(&f), at))
            .collect();
        assert_eq!(
            out,
            [
                (0, 1_800_000),
                (2, 3_400_000),
                (1, 4_600_000),
                (4, 5_000_000),
                (3, 6_200_000),
                (6, 6_600_000),
                (5, 7_800_000),
                (7, 9_400_000),
            ]
        );
        // Polled every 50 µs instead of from event to event: the same arrivals.
        let mut again = Link::new(link.params().clone(), 1).unwrap();
        for i in 0..8u64 {
            let ethertype = if i % 2 == 0 { 0x0800 } else { 0x86dd };
            again.enqueue(eth(ethertype, i, 1000), t(0));
        }
        let mut fine = Vec::new();
        for step in 0..=200u64 {
            while let Some(f) = again.dequeue(t(step * 50_000)) {
                fine.push((seq(&f), step * 50_000));
            }
        }
        assert_eq!(fine, out);
        // IPv4 only: the same frames, the other way round.
        let params = only(
            "v4",
            FamilyImpair {
                delay: Duration::from_millis(2),
                loss: LossModel::None,
            },
            ten_mbit(),
        );
        let mut link = Link::new(params, 1).unwrap();
        link.enqueue(eth(0x0800, 0, 1000), t(0));
        link.enqueue(eth(0x86dd, 1, 1000), t(0));
        link.enqueue(eth(0x0806, 2, 1000), t(0));
        let out: Vec<(u64, u64)> = run(&mut link)
            .into_iter()
            .map(|(at, f)| (seq(&f), at))
            .collect();
        assert_eq!(out, [(1, 1_600_000), (2, 2_400_000), (0, 2_800_000)]);
    }

    #[test]
    fn ipv6_delay_with_jitter_keeps_each_family_in_order() {
        let params = only(
            "v6",
            FamilyImpair {
                delay: Duration::from_millis(2),
                loss: LossModel::None,
            },
            LinkParams {
                delay: Duration::from_millis(5),
                jitter: Duration::from_millis(5),
                ..LinkParams::default()
            },
        );
        let mut link = Link::new(params, 5).unwrap();
        for i in 0..1000u64 {
            let ethertype = if i % 3 == 0 { 0x86dd } else { 0x0800 };
            link.enqueue(eth(ethertype, i, 64), t(i * 100_000));
        }
        let out = run(&mut link);
        assert_eq!(out.len(), 1000);
        for family in [0x0800u16, 0x86dd] {
            let seqs: Vec<u64> = out
                .iter()
                .filter(|(_, f)| f[12..14] == family.to_be_bytes())
                .map(|(_, f)| seq(f))
                .collect();
            assert!(seqs.windows(2).all(|w| w[0] < w[1]), "{family:x}");
        }
        assert!(out.windows(2).all(|w| w[0].0 <= w[1].0));
        // Some IPv4 frame overtook an IPv6 one: the families are separate lanes.
        let order: Vec<u64> = out.iter().map(|(_, f)| seq(f)).collect();
        assert!(order.windows(2).any(|w| w[0] > w[1]));
    }

    #[test]
    fn per_family_loss_draws_do_not_depend_on_the_other_familys_traffic() {
        // 1 % IPv4 loss and 5 % IPv6 loss, no queue limit. Run A carries 20,000 IPv4
        // frames; run B the same with three IPv6 frames after each. IPv4 loses the very
        // same frames in both.
        let params = LinkParams {
            limit_packets: None,
            v4: Some(FamilyImpair {
                delay: Duration::ZERO,
                loss: LossModel::Bernoulli { p: 0.01 },
            }),
            v6: Some(FamilyImpair {
                delay: Duration::ZERO,
                loss: LossModel::Bernoulli { p: 0.05 },
            }),
            ..LinkParams::default()
        };
        let delivered = |with_v6: bool| {
            let mut link = Link::new(params.clone(), 9).unwrap();
            let (mut v4, mut v6) = (Vec::new(), 0u64);
            for i in 0..20_000u64 {
                link.enqueue(eth(0x0800, i, 64), t(i * 1000));
                if with_v6 {
                    for k in 0..3 {
                        link.enqueue(eth(0x86dd, i, 64), t(i * 1000 + k));
                    }
                }
                while let Some(f) = link.dequeue(t(i * 1000 + 3)) {
                    if f[12..14] == [0x08, 0x00] {
                        v4.push(seq(&f));
                    } else {
                        v6 += 1;
                    }
                }
            }
            (v4, v6, link.stats())
        };
        let (a, a6, sa) = delivered(false);
        let (b, b6, sb) = delivered(true);
        assert_eq!(a, b);
        // Exact for seed 9: 216 of 20,000 IPv4 frames lost (1.08 %), and 2,939 of
        // 60,000 IPv6 ones (4.90 %).
        assert_eq!((20_000 - a.len(), a6), (216, 0));
        assert_eq!(60_000 - b6, 2_939);
        assert_eq!(sa.dropped_random_loss, 216);
        assert_eq!(sb.dropped_random_loss, 216 + 2_939);
        // Without IPv6's own loss, no IPv6 frame is lost.
        let v4_only = LinkParams {
            v6: None,
            ..params.clone()
        };
        let mut link = Link::new(v4_only, 9).unwrap();
        for i in 0..2000u64 {
            link.enqueue(eth(0x86dd, i, 64), t(i));
        }
        assert_eq!(run(&mut link).len(), 2000);
    }

    #[test]
    fn per_family_impairments_are_checked_and_skipped_in_json_when_absent() {
        let bad = LinkParams {
            v4: Some(FamilyImpair {
                delay: Duration::ZERO,
                loss: LossModel::Bernoulli { p: 2.0 },
            }),
            ..LinkParams::default()
        };
        assert_eq!(
            bad.validate(),
            Err(LinkError::Probability {
                name: "p",
                value: 2.0
            })
        );
        let long = LinkParams {
            v6: Some(FamilyImpair {
                delay: Duration::from_secs(61),
                loss: LossModel::None,
            }),
            ..LinkParams::default()
        };
        assert_eq!(long.validate(), Err(LinkError::TooLong));
        let json = serde_json::to_value(LinkParams::default()).unwrap();
        assert!(
            json.get("v4").is_none() && json.get("v6").is_none(),
            "{json}"
        );
        let with = LinkParams {
            v6: Some(FamilyImpair {
                delay: Duration::from_millis(2),
                loss: LossModel::None,
            }),
            ..LinkParams::default()
        };
        let json = serde_json::to_value(&with).unwrap();
        assert_eq!(
            json["v6"],
            serde_json::json!({"delay_ns": 2_000_000, "loss": {"model": "none"}})
        );
        assert_eq!(serde_json::from_value::<LinkParams>(json).unwrap(), with);
    }
}
