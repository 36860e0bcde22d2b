//! The methods of `bmwg` bound to the tester's ports: each test runs one method per job
//! (a path at a frame size), interleaved trial by trial (IPv4 trial, IPv6 trial, NAT64
//! trial, …), and fills the job's entry of the document. The self-test and a lab's
//! device share it; only their ports and flows differ.

use std::net::IpAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result};
use bmwg::{BackToBack, BackToBackConfig, Flr, Search, SearchConfig, TrialOutcome, TrialSpec};
use netio::xdp::TxConfig;
use results::bmwg as doc;
use results::bmwg::{Direction, PathKind, PathResult, Rfc2544Doc};

use super::port::PortWorker;
use super::trial::{self, Flow};
use super::{path_name, Config, Timing};

/// The run was interrupted (Ctrl-C): what was measured is kept.
#[derive(Debug)]
pub(crate) struct Interrupted;

impl std::fmt::Display for Interrupted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("interrupted")
    }
}

impl std::error::Error for Interrupted {}

/// How many times a trial the tester fell behind in is run again.
pub(crate) const LATE_RETRIES: u32 = 2;

/// One path at one frame size: its flows and the highest rate to try.
#[derive(Clone, Debug)]
pub(crate) struct Job {
    pub path: PathKind,
    /// Frame size with FCS as it enters the device (port a's frames).
    pub size: usize,
    pub flows: Vec<Flow>,
    /// The tester's ceiling (or `--max-rate` in the self-test).
    pub max_fps: u64,
    /// Its entry in the document's `paths`.
    pub entry: usize,
}

/// Where frames go: one tester port's side.
#[derive(Clone, Copy, Debug)]
pub(crate) struct End {
    pub mac: [u8; 6],
    /// Where frames from this port are sent: the device's MAC (or the other port's).
    pub next_mac: [u8; 6],
}

/// A frame template for one direction.
pub(crate) fn template(
    from: End,
    src: IpAddr,
    dst: IpAddr,
    size: usize,
    stream: u8,
    rfc4814: bool,
) -> Result<TxConfig> {
    let f = wire::testframe::build(&wire::testframe::FrameSpec {
        src_mac: from.mac,
        dst_mac: from.next_mac,
        src,
        dst,
        src_port: 1024,
        dst_port: 1025,
        frame_size: size,
        stream,
        dscp: 0,
        hop_limit: 64,
    })
    .with_context(|| format!("a {size}-byte test frame from {src} to {dst}"))?;
    Ok(TxConfig {
        frame: f.bytes,
        l4_offset: f.l4_offset,
        tag_offset: f.tag_offset,
        stream,
        v6: src.is_ipv6(),
        rfc4814_ports: rfc4814,
    })
}

/// A generator key unique per (path, size, stream) on a port.
pub(crate) fn key(path: PathKind, size: usize, stream: u8) -> u64 {
    ((size as u64) << 16) | ((path as u64) << 8) | u64::from(stream)
}

/// The tester's two ports, the document being filled, and where it is written.
pub(crate) struct Bench<'a> {
    pub cfg: &'a Config,
    pub ports: [PortWorker; 2],
    pub doc: Rfc2544Doc,
    /// Called after each completed test (writes the run directory).
    pub save: &'a dyn Fn(&Rfc2544Doc) -> Result<()>,
    pub stop: Arc<AtomicBool>,
    /// What to call the trials in progress notes (`self-test`, the lab).
    pub who: String,
    /// The tester alone: its searches find its own ceiling.
    pub self_test: bool,
}

/// A method asked for trials one at a time.
trait Method {
    fn poll(&mut self) -> Option<TrialSpec>;
    fn handle(&mut self, spec: &TrialSpec, o: &TrialOutcome);
}

impl Method for Search {
    fn poll(&mut self) -> Option<TrialSpec> {
        self.poll_trial()
    }
    fn handle(&mut self, spec: &TrialSpec, o: &TrialOutcome) {
        self.handle_outcome(spec, o)
    }
}

impl Method for Flr {
    fn poll(&mut self) -> Option<TrialSpec> {
        self.poll_trial()
    }
    fn handle(&mut self, spec: &TrialSpec, o: &TrialOutcome) {
        self.handle_outcome(spec, o)
    }
}

impl Method for BackToBack {
    fn poll(&mut self) -> Option<TrialSpec> {
        self.poll_trial()
    }
    fn handle(&mut self, spec: &TrialSpec, o: &TrialOutcome) {
        self.handle_outcome(spec, o)
    }
}

fn trial_doc(s: &TrialSpec, o: &TrialOutcome) -> doc::Trial {
    doc::Trial {
        rate_fps: s.rate_fps,
        duration_ns: s.duration_ns,
        offered: o.offered,
        received: o.received,
        late: o.late,
        loss_ratio: o.loss_ratio(),
        tester_late: o.tester_late,
    }
}

/// A new entry for `path` at `size` in `d`; its index.
pub(crate) fn add_entry(d: &mut Rfc2544Doc, path: PathKind, size: usize, bidi: bool) -> usize {
    d.paths.push(PathResult {
        path,
        frame_size: size as u64,
        direction: if bidi {
            Direction::Both
        } else {
            Direction::AToB
        },
        throughput: None,
        latency: None,
        flr: Vec::new(),
        back_to_back: None,
    });
    d.paths.len() - 1
}

impl Bench<'_> {
    fn timing(&self) -> &Timing {
        &self.cfg.timing
    }

    fn check_stop(&self) -> Result<()> {
        if self.stop.load(Ordering::SeqCst) {
            return Err(anyhow::Error::new(Interrupted));
        }
        Ok(())
    }

    /// Runs `spec` on `j`'s flows; a trial the generator fell behind in is run again,
    /// up to [`LATE_RETRIES`] times: a busy host's scheduling hiccup, or a device that
    /// took the tester's CPU for a while (a userspace router spinning beside it), seldom
    /// strikes three times. Not when it fell behind for good (stopped at the deadline)
    /// at a rate the tester alone could not offer either (at or above its ceiling, or in
    /// the self-test, which has nothing else to share the CPUs with): that is so every
    /// time.
    fn trial(&self, j: &Job, spec: &TrialSpec, tags: Option<u32>) -> Result<trial::Counted> {
        let mut tries = 0;
        // The best rate the generator sustained over the tries: one descheduled for a
        // while sustains less than it can.
        let mut sustained: Option<u64> = None;
        loop {
            let mut c = trial::run(&self.ports, &j.flows, spec, self.timing(), tags)?;
            sustained = sustained.max(c.outcome.achieved_fps);
            let for_good = c.cut_short && (self.self_test || spec.rate_fps >= j.max_fps);
            if !c.outcome.tester_late || for_good || tries == LATE_RETRIES {
                if c.outcome.tester_late {
                    c.outcome.achieved_fps = sustained;
                }
                return Ok(c);
            }
            tries += 1;
            self.check_stop()?;
        }
    }

    /// Runs the methods, one trial of each in turn, until every one is done.
    fn interleave<M: Method>(&mut self, what: &str, jobs: &[Job], ms: &mut [M]) -> Result<()> {
        for j in jobs {
            trial::prepare(&self.ports, &j.flows)?;
        }
        let mut n = 0;
        loop {
            let mut any = false;
            for (j, m) in jobs.iter().zip(ms.iter_mut()) {
                self.check_stop()?;
                let Some(spec) = m.poll() else { continue };
                any = true;
                let c = self.trial(j, &spec, None)?;
                m.handle(&spec, &c.outcome);
                n += 1;
                crate::out::note!(
                    "{}: {what} {} {} B trial {n}: {} fps for {} ms, {} of {} received{}",
                    self.who,
                    path_name(j.path),
                    j.size,
                    spec.rate_fps,
                    spec.duration_ns / 1_000_000,
                    c.outcome.received,
                    c.outcome.offered,
                    if c.outcome.tester_late {
                        format!(
                            " (tester late by {} µs, sustained {} fps)",
                            c.max_lateness_ns / 1000,
                            c.outcome.achieved_fps.unwrap_or(0)
                        )
                    } else {
                        String::new()
                    }
                );
                if matches!(spec.kind, bmwg::TrialKind::BackToBack { .. }) {
                    std::thread::sleep(Duration::from_nanos(self.timing().b2b_drain_ns));
                }
            }
            if !any {
                return Ok(());
            }
        }
    }

    /// Throughput: the NDR and PDR search per job (RFC 2544 §26.1).
    pub fn throughput(&mut self, jobs: &[Job]) -> Result<()> {
        let t = *self.timing();
        let mut ms: Vec<Search> = jobs
            .iter()
            .map(|j| {
                Search::new(SearchConfig {
                    min_fps: 1000.min(j.max_fps),
                    max_fps: j.max_fps,
                    pdr_ratio: t.pdr_ratio,
                    initial_duration_ns: t.initial_ns,
                    final_duration_ns: t.final_ns,
                    precision: t.precision,
                    max_trials: t.max_trials,
                })
            })
            .collect();
        self.interleave("throughput", jobs, &mut ms)?;
        for (j, m) in jobs.iter().zip(&ms) {
            let Some(r) = m.poll_result() else { continue };
            let size = j.size as u64;
            self.doc.paths[j.entry].throughput = Some(doc::Throughput {
                ndr_fps: r.ndr_fps,
                pdr_fps: r.pdr_fps,
                ndr_bps: doc::frame_bps(size, r.ndr_fps),
                pdr_bps: doc::frame_bps(size, r.pdr_fps),
                ndr_upper_fps: r.ndr_upper_fps,
                pdr_upper_fps: r.pdr_upper_fps,
                // A device at the highest load offered (the ceiling, or where the
                // tester fell behind) did at least that; the tester itself only when
                // --max-rate stopped it.
                lower_bound: if self.self_test {
                    r.capped && !r.tester_limited
                } else {
                    r.capped || r.ndr_fps >= r.ceiling_fps.min(j.max_fps)
                },
                converged: r.converged,
                trials: r.trials.iter().map(|(s, o)| trial_doc(s, o)).collect(),
            });
        }
        (self.save)(&self.doc)
    }

    /// Latency at each job's NDR over ≥ 500 tagged frames (RFC 8219 §7.2), one trial
    /// per job; jobs without an NDR are left out.
    pub fn latency(&mut self, jobs: &[Job]) -> Result<()> {
        let t = *self.timing();
        for j in jobs {
            self.check_stop()?;
            let Some(rate) = self.doc.paths[j.entry]
                .throughput
                .as_ref()
                .map(|x| x.ndr_fps)
                .filter(|&r| r > 0)
            else {
                continue;
            };
            let spec = TrialSpec {
                rate_fps: rate,
                duration_ns: t.latency_ns,
                kind: bmwg::TrialKind::Latency,
            };
            let every = bmwg::tag_every(rate, t.latency_ns, 2 * bmwg::MIN_TAGGED);
            trial::prepare(&self.ports, &j.flows)?;
            let c = self.trial(j, &spec, Some(every))?;
            // Both directions' tagged frames together: the device's latency either way.
            let all: Vec<Option<u64>> = c.tagged.into_iter().flatten().collect();
            let s = bmwg::latency_stats(&all);
            crate::out::note!(
                "{}: latency {} {} B at {rate} fps: {} tagged frames, median {} ns",
                self.who,
                path_name(j.path),
                j.size,
                s.samples,
                s.median_ns
            );
            let some = s.samples > 0;
            self.doc.paths[j.entry].latency = Some(doc::Latency {
                rate_fps: rate,
                samples: s.samples,
                lost: s.lost,
                // With no sample a delay is undefined: null, never 0.
                min_ns: some.then_some(s.min_ns),
                median_ns: some.then_some(s.median_ns),
                p99_9_ns: some.then_some(s.p99_9_ns),
                max_ns: some.then_some(s.max_ns),
                pdv_ns: some.then_some(s.pdv_ns),
                ipdv_p99_9_ns: (s.samples >= 2).then_some(s.ipdv_p99_9_ns),
                too_few: s.too_few,
            });
        }
        (self.save)(&self.doc)
    }

    /// The highest rate `j`'s later tests offer: the tester's ceiling, or the NDR where
    /// the throughput search found the tester, not the device, to be the limit (a lower
    /// bound): through a device that shares the tester's CPUs (a lab's veths) the tester
    /// falls behind above it, and every such trial would say nothing of the device.
    fn top_fps(&self, j: &Job) -> u64 {
        self.doc.paths[j.entry]
            .throughput
            .as_ref()
            .filter(|x| x.lower_bound && x.ndr_fps > 0)
            .map_or(j.max_fps, |x| x.ndr_fps.min(j.max_fps))
    }

    /// The frame loss rate curve from [`Self::top_fps`] down (RFC 2544 §26.3).
    pub fn flr(&mut self, jobs: &[Job]) -> Result<()> {
        let t = *self.timing();
        let mut ms: Vec<Flr> = jobs
            .iter()
            .map(|j| Flr::new(self.top_fps(j), t.flr_ns))
            .collect();
        self.interleave("loss curve", jobs, &mut ms)?;
        for (j, m) in jobs.iter().zip(&ms) {
            let Some(points) = m.poll_result() else {
                continue;
            };
            self.doc.paths[j.entry].flr = points
                .iter()
                .map(|p| doc::FlrPoint {
                    percent: p.percent,
                    rate_fps: p.rate_fps,
                    loss_ratio: p.loss_ratio,
                    tester_late: p.tester_late,
                })
                .collect();
        }
        (self.save)(&self.doc)
    }

    /// Back-to-back frames at [`Self::top_fps`] (RFC 9004 §3: the highest rate the
    /// medium takes; a veth has none, so the tester's). Where that is a tester-limited
    /// NDR every burst passes, and the figure is a lower bound.
    pub fn b2b(&mut self, jobs: &[Job]) -> Result<()> {
        let t = *self.timing();
        let tops: Vec<u64> = jobs.iter().map(|j| self.top_fps(j)).collect();
        let mut ms: Vec<BackToBack> = jobs
            .iter()
            .zip(&tops)
            .map(|(j, &top)| {
                BackToBack::new(BackToBackConfig {
                    rate_fps: top,
                    max_burst_ns: t.b2b_max_burst_ns,
                    repeats: t.b2b_repeats,
                    precision: t.b2b_precision,
                    throughput_fps: self.doc.paths[j.entry]
                        .throughput
                        .as_ref()
                        .map(|x| x.ndr_fps),
                })
            })
            .collect();
        self.interleave("back-to-back", jobs, &mut ms)?;
        for ((j, m), &top) in jobs.iter().zip(&ms).zip(&tops) {
            let Some(r) = m.poll_result() else { continue };
            self.doc.paths[j.entry].back_to_back = Some(doc::BackToBack {
                rate_fps: top,
                frames_mean: r.frames_mean,
                bursts: r.bursts.clone(),
                implied_buffer_time_ns: r.implied_buffer_time_ns,
                buffer_time_ns: r.buffer_time_ns,
                lower_bound: r.capped,
                trials: r.trials.iter().map(|(s, o)| trial_doc(s, o)).collect(),
            });
        }
        (self.save)(&self.doc)
    }

    /// Every test the config asks for, over `jobs`.
    pub fn all(&mut self, jobs: &[Job]) -> Result<()> {
        let tests = self.cfg.tests;
        if tests.throughput {
            self.throughput(jobs)?;
        }
        if tests.latency {
            self.latency(jobs)?;
        }
        if tests.flr {
            self.flr(jobs)?;
        }
        if tests.b2b {
            self.b2b(jobs)?;
        }
        Ok(())
    }
}
