//! `--metrics ADDR:PORT`: the receiver's figures for Prometheus, at `/metrics`.
//!
//! A scrape reads what the receive path already keeps: the counters (atomics) and each
//! open flow's meter, under its shard's lock, taken once per shard as a control session
//! takes it; the UDP threads do no work for metrics. A finished flow's final figures
//! (the run's own: its loss uses the sender's count) are kept for the next scrapes, the
//! newest `--metrics-flows` of them. Names and cardinality: `results::prom`.

use std::collections::VecDeque;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::{Context, Result};
use meter::FlowSummary;
use results::prom::{self, Family, FamilyTotals, FlowSample, HistogramSample, BUCKETS_NS};
use results::recv::FlowState;

use super::shard::Flow;
use super::Shared;

/// How long a scraper has to send its request.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(5);

/// Finished flows' final figures for the next scrapes, and every finished flow's
/// totals by family.
#[derive(Default)]
pub(crate) struct Kept {
    /// Flows with series of their own; 0 while metrics are off (nothing is kept).
    max_flows: AtomicUsize,
    inner: Mutex<KeptInner>,
}

#[derive(Default)]
struct KeptInner {
    /// Newest last.
    flows: VecDeque<FlowSample>,
    /// IPv4's, then IPv6's: flows finished, their packets and bytes.
    finished: [FamilyTotals; 2],
}

impl Kept {
    /// Keep what finished flows measured, with series for at most `max_flows` flows.
    pub(crate) fn enable(&self, max_flows: usize) {
        self.max_flows.store(max_flows.max(1), Ordering::Relaxed);
    }

    /// A flow finished with `summary` (the report's, with the sender's count).
    pub(crate) fn handle_finished(&self, flow: &Flow, state: &FlowState, summary: &FlowSummary) {
        let max = self.max_flows.load(Ordering::Relaxed);
        if max == 0 {
            return;
        }
        let sample = flow_sample(flow, state, summary, true);
        let mut kept = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        let totals = &mut kept.finished[family_index(sample.family)];
        totals.flows_finished += 1;
        totals.packets += sample.packets;
        totals.bytes += sample.bytes;
        kept.flows.push_back(sample);
        while kept.flows.len() > max {
            kept.flows.pop_front();
        }
    }
}

fn family_index(f: Family) -> usize {
    match f {
        Family::Ipv4 => 0,
        Family::Ipv6 => 1,
    }
}

/// One flow's figures from its state and `summary`.
fn flow_sample(
    flow: &Flow,
    state: &FlowState,
    summary: &FlowSummary,
    finished: bool,
) -> FlowSample {
    let meter = &state.meter;
    let delay = meter.delay_histogram();
    let ipdv = meter.ipdv_abs_histogram();
    let ipdv_sum_ns = summary
        .jitter
        .ipdv
        .map_or(0, |i| (i.mean_abs_ns * i.pairs as f64).round() as i128);
    FlowSample {
        family: Family::of(flow.peer_ip),
        session: flow.session,
        flow: flow.id,
        label: flow.announce.label.clone(),
        finished,
        packets: summary.packets,
        bytes: summary.bytes,
        expected: summary.loss.expected,
        lost: summary.loss.lost,
        duplicates: summary.loss.duplicates,
        reordered: summary.loss.reordered,
        delay: HistogramSample {
            cumulative: delay.cumulative_counts(&BUCKETS_NS),
            count: delay.count(),
            sum_ns: meter.delay_sum_ns(),
        },
        ipdv_abs: HistogramSample {
            cumulative: ipdv.cumulative_counts(&BUCKETS_NS),
            count: ipdv.count(),
            sum_ns: ipdv_sum_ns,
        },
        rfc3550_jitter_ns: summary.jitter.rfc3550_ns,
    }
}

/// The exposition of `shared` now.
pub(crate) fn exposition(shared: &Shared) -> String {
    let max = shared.kept.max_flows.load(Ordering::Relaxed).max(1);
    let mut families = [FamilyTotals::default(); 2];
    let mut flows = Vec::new();
    // Open flows first, in id order within each shard; the cheap counters of the rest.
    shared.flows.visit_open(|flow, state| {
        let t = &mut families[family_index(Family::of(flow.peer_ip))];
        t.flows_active += 1;
        let Some(state) = state else {
            return;
        };
        if flows.len() < max {
            flows.push(flow_sample(flow, state, &state.summary(None), false));
        } else {
            t.flows_unexported += 1;
            t.packets += state.meter.packets();
            t.bytes += state.meter.bytes();
        }
    });
    for f in &flows {
        families[family_index(f.family)].packets += f.packets;
        families[family_index(f.family)].bytes += f.bytes;
    }
    {
        let kept = shared.kept.inner.lock().unwrap_or_else(|e| e.into_inner());
        for (t, done) in families.iter_mut().zip(&kept.finished) {
            t.flows_finished = done.flows_finished;
            t.packets += done.packets;
            t.bytes += done.bytes;
        }
        // The newest finished flows in the places open ones left.
        let room = max.saturating_sub(flows.len());
        let shown = kept.flows.len().min(room);
        for f in kept.flows.iter().take(kept.flows.len() - shown) {
            families[family_index(f.family)].flows_unexported += 1;
        }
        flows.extend(kept.flows.iter().skip(kept.flows.len() - shown).cloned());
    }
    let receiver = prom::ReceiverSample {
        counters: shared.counters.snapshot(),
        sessions_active: shared.active_sessions.load(Ordering::Relaxed),
        sessions_finished: shared.sessions_done.load(Ordering::Relaxed),
        families,
    };
    prom::render(&receiver, &flows)
}

/// Serve `/metrics` on `addr` until `stop`: one scrape at a time, on its own thread.
pub(crate) fn serve(
    addr: SocketAddr,
    shared: Arc<Shared>,
    stop: Arc<AtomicBool>,
) -> Result<(SocketAddr, std::thread::JoinHandle<()>)> {
    let listener =
        TcpListener::bind(addr).with_context(|| format!("cannot listen for metrics on {addr}"))?;
    listener.set_nonblocking(true)?;
    let local = listener.local_addr()?;
    let thread = std::thread::Builder::new()
        .name("metrics".into())
        .spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                match listener.accept() {
                    Ok((conn, _)) => {
                        if let Err(e) = answer(conn, &shared) {
                            eprintln!("dualperf: metrics: {e:#}");
                        }
                    }
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                        std::thread::sleep(Duration::from_millis(20));
                    }
                    Err(e) => {
                        eprintln!("dualperf: metrics: accept: {e}");
                        std::thread::sleep(Duration::from_millis(100));
                    }
                }
            }
        })?;
    Ok((local, thread))
}

/// Read one request and answer it: `GET /metrics` (or `HEAD`) the exposition, anything
/// else an error status; the connection closes after.
fn answer(mut conn: TcpStream, shared: &Shared) -> Result<()> {
    conn.set_nonblocking(false)?;
    conn.set_read_timeout(Some(REQUEST_TIMEOUT))?;
    conn.set_write_timeout(Some(REQUEST_TIMEOUT))?;
    let mut buf = Vec::with_capacity(512);
    let mut chunk = [0u8; 1024];
    let request = loop {
        let n = conn.read(&mut chunk).context("reading the request")?;
        if n == 0 {
            return Ok(());
        }
        buf.extend_from_slice(&chunk[..n]);
        match wire::scrape::parse(&buf) {
            Err(wire::scrape::Error::Incomplete) => continue,
            other => break other,
        }
    };
    let (status, body) = match request {
        Ok(r) if r.path == "/metrics" && (r.method == "GET" || r.method == "HEAD") => {
            let body = exposition(shared);
            let head = r.method == "HEAD";
            return respond(&mut conn, "200 OK", prom::CONTENT_TYPE, &body, head);
        }
        Ok(r) if r.method != "GET" && r.method != "HEAD" => {
            ("405 Method Not Allowed", "only GET /metrics\n".to_string())
        }
        Ok(_) => ("404 Not Found", "metrics are at /metrics\n".to_string()),
        Err(e) => ("400 Bad Request", format!("{e}\n")),
    };
    respond(&mut conn, status, "text/plain; charset=utf-8", &body, false)
}

fn respond(conn: &mut TcpStream, status: &str, kind: &str, body: &str, head: bool) -> Result<()> {
    let mut out = format!(
        "HTTP/1.1 {status}\r\nContent-Type: {kind}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    )
    .into_bytes();
    if !head {
        out.extend_from_slice(body.as_bytes());
    }
    conn.write_all(&out).context("writing the answer")
}
