//! One trial on the tester's ports: arm the receivers (counters zeroed, the ramp's
//! frames set apart by sequence number), start every flow's generator at the same
//! instant (both directions at once when bidirectional), wait until they are done and
//! the per-frame timeout has passed, then read the counters: traffic has stopped, so no
//! frame in flight is counted as lost (TRex PR 1212's phantom loss).

use std::time::Duration;

use anyhow::Result;
use bmwg::{TrialKind, TrialOutcome, TrialSpec};
use netio::clock::mono_ns;
use netio::xdp::{tag_slots, RxConfig, Schedule, Segment, TxConfig, MAX_SEGMENTS};

use super::port::PortWorker;
use super::Timing;

/// A generator whose worst frame left later than this behind its slot, or later than
/// 2 % of the trial's span ([`late_limit`]), did not offer the trial's rate. A generator
/// that cannot keep up falls behind steadily (2 % short over a trial is 2 % of its span
/// at the end); a busy host's scheduling hiccups (2–7 ms measured with both ports
/// sending on a 2-CPU VM while builds ran) stay below the limit on longer trials.
pub(crate) const LATE_NS: u64 = 2_000_000;

/// The lateness a trial of `span_ns` tolerates: [`LATE_NS`] or 2 % of the span.
pub(crate) fn late_limit(span_ns: u64) -> u64 {
    LATE_NS.max(span_ns / 50)
}

/// How far past the late limit a generator may run before it is stopped: one that is
/// further behind has fallen behind for good (the trial is tester-late either way), and
/// running it on only costs time.
const OVERRUN_NS: u64 = 20_000_000;

/// How long after calling the generators their first frame is due: a live-frames run
/// costs about 25 ms before its first frame (netio::xdp's page pool set-up).
const START_DELAY_NS: u64 = 60_000_000;

/// One direction of a trial: port `tx` sends `frame` as stream `stream`, port `rx`
/// counts it.
#[derive(Clone, Debug)]
pub(crate) struct Flow {
    pub tx: usize,
    pub rx: usize,
    /// The generator's key on port `tx` (one per template).
    pub key: u64,
    pub frame: TxConfig,
}

/// What a trial counted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Counted {
    /// Summed over the flows.
    pub outcome: TrialOutcome,
    /// Per flow, with tags: slot `k` is frame `k · tag_every` of the trial's delay.
    pub tagged: Vec<Vec<Option<u64>>>,
    /// Frames reordered, over the flows.
    pub reordered: u64,
    /// The worst lateness of a frame against its slot, over the flows.
    pub max_lateness_ns: u64,
    /// Some generator was stopped at the deadline, its schedule unfinished: it fell
    /// behind for good, not for a moment.
    pub cut_short: bool,
}

/// Loads every flow's generator (a BPF program each) before the first trial, so no
/// trial's schedule waits for the verifier.
pub(crate) fn prepare(ports: &[PortWorker; 2], flows: &[Flow]) -> Result<()> {
    for f in flows {
        let (key, frame) = (f.key, f.frame.clone());
        ports[f.tx].call(move |s| s.generator(key, &frame).map(|_| ()))?;
    }
    Ok(())
}

/// The segments of a trial: the ramp (none before a back-to-back burst, RFC 9004 §3.3
/// sends it after idle time), then the trial's frames; and how many frames the ramp
/// has.
pub(crate) fn schedule(spec: &TrialSpec, t: &Timing) -> (Vec<Segment>, u32) {
    let ramp = match spec.kind {
        TrialKind::BackToBack { .. } => Vec::new(),
        _ => bmwg::ramp(
            spec.rate_fps,
            t.ramp_ns,
            t.ramp_steps.min(MAX_SEGMENTS as u32 - 1),
        ),
    };
    let first_seq: u32 = ramp.iter().map(|&(n, _)| n).sum();
    let mut segs: Vec<Segment> = ramp
        .into_iter()
        .map(|(frames, interval_ps)| Segment {
            frames,
            interval_ps,
        })
        .collect();
    let frames = spec.frames().min(u64::from(u32::MAX - first_seq)) as u32;
    segs.push(Segment {
        frames,
        interval_ps: (1e12 / spec.rate_fps.max(1) as f64).round().max(1.0) as u64,
    });
    (segs, first_seq)
}

/// Runs `spec` over `flows`; `tag_every` tags frames for latency (a power of two).
pub(crate) fn run(
    ports: &[PortWorker; 2],
    flows: &[Flow],
    spec: &TrialSpec,
    t: &Timing,
    tag_every: Option<u32>,
) -> Result<Counted> {
    let (segments, first_seq) = schedule(spec, t);
    let trial_frames = u64::from(segments.last().map_or(0, |s| s.frames));
    let total = u64::from(first_seq) + trial_frames;
    let span_ns: u64 = segments
        .iter()
        .map(|s| (u128::from(s.frames) * u128::from(s.interval_ps) / 1000) as u64)
        .sum();
    let every = tag_every.unwrap_or(1 << 30);
    for (p, port) in ports.iter().enumerate() {
        let rx = RxConfig {
            streams: flows
                .iter()
                .filter(|f| f.rx == p)
                .map(|f| f.frame.stream)
                .collect(),
            first_seq,
            timeout_ns: t.timeout_ns,
            tag_every: every,
        };
        port.call(move |s| s.port.arm_rx(&rx))?;
    }
    let start_ns = mono_ns() + START_DELAY_NS;
    let sched = Schedule { start_ns, segments };
    let deadline = start_ns + span_ns + late_limit(span_ns) + OVERRUN_NS;
    let pending: Vec<_> = flows
        .iter()
        .map(|f| {
            let (key, frame, sched) = (f.key, f.frame.clone(), sched.clone());
            ports[f.tx].start(move |s| s.generator(key, &frame)?.run(&sched, deadline))
        })
        .collect();
    let mut sent = Vec::with_capacity(flows.len());
    for p in pending {
        sent.push(p.wait()?);
    }
    // Every frame has left; those in flight arrive within the timeout or are late.
    std::thread::sleep(Duration::from_nanos(t.timeout_ns) + Duration::from_millis(5));
    let mut c = Counted {
        outcome: TrialOutcome::default(),
        tagged: Vec::new(),
        reordered: 0,
        max_lateness_ns: 0,
        cut_short: false,
    };
    for (f, tx) in flows.iter().zip(&sent) {
        let stream = f.frame.stream;
        let rx = ports[f.rx].call(move |s| s.port.rx_stats(stream))?;
        c.outcome.offered += tx.sent.saturating_sub(u64::from(first_seq));
        c.outcome.received += rx.received;
        c.outcome.late += rx.late;
        let late = tx.sent < total || tx.max_lateness_ns > late_limit(span_ns);
        c.outcome.tester_late |= late;
        c.cut_short |= tx.sent < total;
        if late {
            let a = sustained_fps(tx.sent, tx.max_lateness_ns, &sched.segments);
            c.outcome.achieved_fps = Some(c.outcome.achieved_fps.map_or(a, |b| b.min(a)));
        }
        c.max_lateness_ns = c.max_lateness_ns.max(tx.max_lateness_ns);
        c.reordered += rx.reordered;
        if tag_every.is_some() {
            let mut tags = ports[f.rx].call(move |s| s.port.tagged_latencies(stream))?;
            tags.truncate(tag_slots(trial_frames, every));
            c.tagged.push(tags);
        }
    }
    Ok(c)
}

/// The rate a generator that fell behind sustained: the frames it sent of the trial's
/// own segment (the last) over the time from that segment's first slot to its last
/// frame, which left `lateness_ns` after its slot (a generator that falls behind
/// steadily is latest at its last frame). The ramp is left out, as slower than the
/// trial it would lower the figure; the generator is taken to have kept up with it,
/// unless it had not finished the ramp: then the whole schedule is counted.
fn sustained_fps(sent: u64, lateness_ns: u64, segments: &[Segment]) -> u64 {
    let Some((last, before)) = segments.split_last() else {
        return 0;
    };
    let ramp: u64 = before.iter().map(|s| u64::from(s.frames)).sum();
    let (frames, slot_ps) = if sent > ramp {
        let n = (sent - ramp).min(u64::from(last.frames));
        (n, u128::from(n) * u128::from(last.interval_ps))
    } else {
        let mut left = sent;
        let mut ps: u128 = 0;
        for s in before {
            let n = left.min(u64::from(s.frames));
            ps += u128::from(n) * u128::from(s.interval_ps);
            left -= n;
        }
        (sent, ps)
    };
    let ns = slot_ps / 1000 + u128::from(lateness_ns);
    if ns == 0 {
        return 0;
    }
    (u128::from(frames) * 1_000_000_000 / ns) as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    fn timing() -> Timing {
        Timing::new(true, None, 0.005, 10_000_000)
    }

    #[test]
    fn a_trial_ramps_up_in_counted_apart_frames_and_a_burst_does_not() {
        let t = timing();
        let spec = TrialSpec {
            rate_fps: 1_000_000,
            duration_ns: 100_000_000,
            kind: TrialKind::Search,
        };
        let (segs, first) = schedule(&spec, &t);
        // 50 ms of ramp in 5 steps of 10 ms at 10, 28, 46, 64, 82 %.
        assert_eq!(segs.len(), 6);
        assert_eq!(
            segs[..5].iter().map(|s| s.frames).collect::<Vec<_>>(),
            [1000, 2800, 4600, 6400, 8200]
        );
        assert_eq!(first, 23_000);
        assert_eq!(
            segs[5],
            Segment {
                frames: 100_000,
                interval_ps: 1_000_000
            }
        );
        let burst = TrialSpec {
            kind: TrialKind::BackToBack { burst: 777 },
            ..spec
        };
        let (segs, first) = schedule(&burst, &t);
        assert_eq!(
            (segs, first),
            (
                vec![Segment {
                    frames: 777,
                    interval_ps: 1_000_000
                }],
                0
            )
        );
    }

    #[test]
    fn a_late_generators_sustained_rate_counts_the_trials_frames_over_their_time() {
        let segs = [
            Segment {
                frames: 1000,
                interval_ps: 2_000_000,
            },
            Segment {
                frames: 100_000,
                interval_ps: 1_000_000,
            },
        ];
        // Ramp done, 50,000 of the trial's frames sent, the last 50 ms late: 50,000
        // frames in 100 ms.
        assert_eq!(sustained_fps(51_000, 50_000_000, &segs), 500_000);
        // Stuck in the ramp: 500 frames in 1 ms of slots + 4 ms late.
        assert_eq!(sustained_fps(500, 4_000_000, &segs), 100_000);
        assert_eq!(sustained_fps(0, 0, &segs), 0);
        assert_eq!(sustained_fps(10, 0, &[]), 0);
    }
}
