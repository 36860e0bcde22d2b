//! The router's second thread: everything that may block (the stats file, pcap
//! captures, log lines) is written here, never on the forwarding thread.
//!
//! Stats snapshots go through a one-document slot: the newest replaces one the writer
//! has not taken yet (counted as superseded), and the forwarding thread only ever
//! `try_lock`s it, keeping the snapshot for its next turn if the writer holds the lock
//! for its moment. Capture frames and log lines go through a bounded channel with
//! `try_send`; what finds it full is counted and dropped. A stuck disk costs records,
//! never frames.

use std::io::Write;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError, SyncSender};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use anyhow::{Context, Result};
use router::stats::{RouterStats, WriterStats};

use super::pcap::PcapWriter;

/// Messages in flight at most: about 50 ms of capture at 150,000 frames/s.
const CAPACITY: usize = 8192;

enum Msg {
    /// A snapshot is in the slot.
    Wake,
    Pcap {
        iface: usize,
        wall_ns: u64,
        frame: Vec<u8>,
    },
    Log(String),
}

/// What the writer thread reports back, read by the forwarding thread for the stats.
#[derive(Debug, Default)]
struct Shared {
    /// The newest snapshot the writer has not taken yet.
    slot: Mutex<Option<RouterStats>>,
    stats_writes: AtomicU64,
    stats_write_failures: AtomicU64,
    max_stats_write_ns: AtomicU64,
}

/// The forwarding thread's handle on the writer thread.
pub(super) struct Aux {
    tx: Option<SyncSender<Msg>>,
    /// A snapshot the channel had no room for: sent first on the next try.
    waiting: Option<RouterStats>,
    shared: Arc<Shared>,
    superseded: u64,
    pcap_dropped: u64,
    log_dropped: u64,
    capture: bool,
    handle: Option<JoinHandle<Result<()>>>,
}

/// Where the writer thread writes.
pub(super) struct Sinks {
    /// The stats file, replaced whole (write then rename) on each snapshot.
    pub(super) stats: Option<PathBuf>,
    /// One capture per interface, in interface order (empty: no capture).
    pub(super) pcaps: Vec<PcapWriter<std::io::BufWriter<std::fs::File>>>,
    /// A pause before each stats write, standing in for a slow disk (tests only).
    pub(super) stats_delay: std::time::Duration,
    /// The forwarding thread's CPU (`--cpu`): the writer keeps off it where there is
    /// another.
    pub(super) avoid_cpu: Option<usize>,
}

impl Aux {
    /// Start the writer thread.
    pub(super) fn start(sinks: Sinks) -> Result<Self> {
        let (tx, rx) = mpsc::sync_channel::<Msg>(CAPACITY);
        let shared = Arc::new(Shared::default());
        let capture = !sinks.pcaps.is_empty();
        let sh = shared.clone();
        let handle = std::thread::Builder::new()
            .name("route-writer".into())
            .spawn(move || writer(rx, sinks, &sh))
            .context("cannot start the router's writer thread")?;
        Ok(Self {
            tx: Some(tx),
            waiting: None,
            shared,
            superseded: 0,
            pcap_dropped: 0,
            log_dropped: 0,
            capture,
            handle: Some(handle),
        })
    }

    /// Whether frames are captured.
    pub(super) fn capturing(&self) -> bool {
        self.capture
    }

    /// Hand a stats snapshot over; a newer one replaces one still waiting.
    pub(super) fn stats(&mut self, doc: RouterStats) {
        if self.waiting.replace(doc).is_some() {
            self.superseded += 1;
        }
        self.retry();
    }

    /// Try again to hand over a snapshot: into the slot, unless the writer holds it
    /// this instant.
    pub(super) fn retry(&mut self) {
        if self.waiting.is_none() {
            return;
        }
        let Ok(mut slot) = self.shared.slot.try_lock() else {
            return;
        };
        if let Some(doc) = self.waiting.take() {
            if slot.replace(doc).is_some() {
                self.superseded += 1;
            }
        }
        drop(slot);
        if let Some(tx) = &self.tx {
            // A full channel is no matter: the writer looks at the slot every 50 ms.
            let _ = tx.try_send(Msg::Wake);
        }
    }

    /// Capture `frame` on interface `iface` at `wall_ns` (copied).
    pub(super) fn pcap(&mut self, iface: usize, wall_ns: u64, frame: &[u8]) {
        let Some(tx) = &self.tx else { return };
        let msg = Msg::Pcap {
            iface,
            wall_ns,
            frame: frame.to_vec(),
        };
        if tx.try_send(msg).is_err() {
            self.pcap_dropped += 1;
        }
    }

    /// A line for the log (stderr).
    pub(super) fn log(&mut self, line: String) {
        let Some(tx) = &self.tx else { return };
        if tx.try_send(Msg::Log(line)).is_err() {
            self.log_dropped += 1;
        }
    }

    /// The hand-over's counters as of now.
    pub(super) fn writer_stats(&self) -> WriterStats {
        WriterStats {
            stats_writes: self.shared.stats_writes.load(Ordering::Relaxed),
            stats_write_failures: self.shared.stats_write_failures.load(Ordering::Relaxed),
            max_stats_write_ns: self.shared.max_stats_write_ns.load(Ordering::Relaxed),
            stats_superseded: self.superseded,
            pcap_dropped: self.pcap_dropped,
            log_dropped: self.log_dropped,
        }
    }

    /// Hand over the last snapshot (waiting for the slot: forwarding has stopped),
    /// then let the writer finish: it writes it, flushes the captures, and is joined.
    pub(super) fn finish(mut self, doc: RouterStats) -> Result<()> {
        self.waiting = None;
        *self.shared.slot.lock().unwrap_or_else(|e| e.into_inner()) = Some(doc);
        drop(self.tx.take());
        match self.handle.take().map(JoinHandle::join) {
            Some(Ok(r)) => r,
            Some(Err(_)) => anyhow::bail!("the router's writer thread panicked"),
            None => Ok(()),
        }
    }
}

fn writer(rx: mpsc::Receiver<Msg>, mut sinks: Sinks, shared: &Shared) -> Result<()> {
    if let (Some(cpu), Ok(all)) = (sinks.avoid_cpu, netio::cpu::allowed_cpus()) {
        let others: Vec<usize> = all.into_iter().filter(|&c| c != cpu).collect();
        if !others.is_empty() {
            let _ = netio::cpu::set_current_thread_cpus(&others);
        }
    }
    let mut pcap_error = None;
    loop {
        let last = match rx.recv_timeout(std::time::Duration::from_millis(50)) {
            Ok(Msg::Pcap {
                iface,
                wall_ns,
                frame,
            }) => {
                if let Some(p) = sinks.pcaps.get_mut(iface) {
                    if let Err(e) = p.write(wall_ns, &frame) {
                        pcap_error.get_or_insert(e);
                    }
                }
                false
            }
            Ok(Msg::Log(line)) => {
                let _ = writeln!(std::io::stderr(), "{line}");
                false
            }
            Ok(Msg::Wake) | Err(RecvTimeoutError::Timeout) => false,
            Err(RecvTimeoutError::Disconnected) => true,
        };
        let doc = shared.slot.lock().unwrap_or_else(|e| e.into_inner()).take();
        if let Some(doc) = doc {
            write_stats(&sinks, shared, &doc);
        }
        if last {
            break;
        }
    }
    for p in &mut sinks.pcaps {
        p.flush().context("cannot flush a capture")?;
    }
    match pcap_error {
        Some(e) => Err(e).context("cannot write a capture"),
        None => Ok(()),
    }
}

/// Replace the stats file (if there is one) with `doc`, whole: written beside it, then
/// renamed over it.
fn write_stats(sinks: &Sinks, shared: &Shared, doc: &RouterStats) {
    let Some(path) = &sinks.stats else { return };
    let t0 = std::time::Instant::now();
    if !sinks.stats_delay.is_zero() {
        std::thread::sleep(sinks.stats_delay);
    }
    let tmp = path.with_extension("json.tmp");
    let ok = crate::out::sorted_json(doc)
        .and_then(|v| serde_json::to_vec_pretty(&v))
        .map_err(std::io::Error::other)
        .and_then(|bytes| std::fs::write(&tmp, bytes))
        .and_then(|()| std::fs::rename(&tmp, path));
    let took = u64::try_from(t0.elapsed().as_nanos()).unwrap_or(u64::MAX);
    shared.max_stats_write_ns.fetch_max(took, Ordering::Relaxed);
    match ok {
        Ok(()) => {
            shared.stats_writes.fetch_add(1, Ordering::Relaxed);
        }
        Err(e) => {
            shared.stats_write_failures.fetch_add(1, Ordering::Relaxed);
            eprintln!(
                "dualperf route: warning: cannot write {}: {e}",
                path.display()
            );
        }
    }
}
