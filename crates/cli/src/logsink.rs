//! The per-packet log's writer thread. Socket loops encode records into chunks and hand
//! them over; one thread writes them to the file. A socket loop never waits for the
//! disk: when more than [`MAX_QUEUED_BYTES`] are already waiting (the disk cannot keep
//! up) or the file can no longer be written, the chunk is dropped and its records are
//! counted, per flow, as not logged, which the flow's report and its FlowEnd entry say.
//! Flow entries (FlowInfo, FlowEnd) are small and never dropped.
//!
//! The thread flushes its buffer at least every 100 ms (and the header at once), so a
//! receiver killed outright loses at most the last 100 ms and what was queued: `decode`
//! reads the log up to where it ends (see `meter::log` on logs cut short).

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use anyhow::{anyhow, Context, Result};
use meter::log::{encode_entry, encode_header, Entry};

/// Bytes that may wait for the writer before chunks are dropped (16 MiB: 400,000
/// records, over a second at 300,000 pkt/s).
pub(crate) const MAX_QUEUED_BYTES: usize = 16 << 20;

/// A chunk hands over after this many bytes even within one receive batch.
const CHUNK_BYTES: usize = 64 << 10;

/// The longest a record waits in the writer's buffer.
const FLUSH_EVERY: Duration = Duration::from_millis(100);

/// Buffers kept for reuse, so a steady run allocates none.
const POOL_LEN: usize = 64;

enum Msg {
    Data(Vec<u8>),
    Close,
}

struct Shared {
    queued_bytes: AtomicUsize,
    failed: AtomicBool,
    pool: Mutex<Vec<Vec<u8>>>,
}

/// The open log: its writer thread and the way to stop it.
pub(crate) struct LogSink {
    path: PathBuf,
    producer: LogProducer,
    thread: Mutex<Option<JoinHandle<std::io::Result<()>>>>,
}

/// A handle that socket loops and control threads use to hand entries over.
#[derive(Clone)]
pub(crate) struct LogProducer {
    tx: Sender<Msg>,
    shared: Arc<Shared>,
}

/// Encoded entries on their way to the writer, with how many records of each flow (by
/// the caller's id) they hold.
pub(crate) struct Chunk {
    buf: Vec<u8>,
    counts: Vec<(u32, u64)>,
}

impl LogSink {
    /// Creates the log at `path`, writes its header with `meta_json` and starts the
    /// writer thread.
    pub(crate) fn create(path: &Path, meta_json: &str) -> Result<Self> {
        let file =
            File::create(path).with_context(|| format!("cannot create log {}", path.display()))?;
        let mut out = BufWriter::with_capacity(256 << 10, file);
        let mut header = Vec::new();
        encode_header(meta_json, &mut header)?;
        out.write_all(&header)
            .and_then(|()| out.flush())
            .with_context(|| format!("cannot write log {}", path.display()))?;
        let (tx, rx) = mpsc::channel();
        let shared = Arc::new(Shared {
            queued_bytes: AtomicUsize::new(0),
            failed: AtomicBool::new(false),
            pool: Mutex::new(Vec::new()),
        });
        let writer_shared = shared.clone();
        let thread = std::thread::Builder::new()
            .name("log-writer".into())
            .spawn(move || write_loop(out, &rx, &writer_shared))?;
        Ok(Self {
            path: path.to_owned(),
            producer: LogProducer { tx, shared },
            thread: Mutex::new(Some(thread)),
        })
    }

    /// A handle for another thread.
    pub(crate) fn producer(&self) -> LogProducer {
        self.producer.clone()
    }

    /// Writes a flow entry (never dropped).
    pub(crate) fn write_entry(&self, entry: &Entry) -> Result<()> {
        self.producer.write_entry(entry)
    }

    /// Writes everything handed over, flushes and stops the writer; later chunks count as
    /// not logged. Reports a write failure, if there was one.
    pub(crate) fn finish(&self) -> Result<()> {
        let thread = self.thread.lock().unwrap_or_else(|e| e.into_inner()).take();
        let Some(thread) = thread else {
            return Ok(());
        };
        let _ = self.producer.tx.send(Msg::Close);
        thread
            .join()
            .map_err(|_| anyhow!("the log writer panicked"))?
            .with_context(|| format!("writing log {}", self.path.display()))
    }
}

impl Drop for LogSink {
    fn drop(&mut self) {
        let _ = self.finish();
    }
}

impl LogProducer {
    /// An empty chunk (its buffer reused when one is free).
    pub(crate) fn chunk(&self) -> Chunk {
        let buf = self
            .shared
            .pool
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .pop()
            .unwrap_or_else(|| Vec::with_capacity(CHUNK_BYTES));
        Chunk {
            buf,
            counts: Vec::new(),
        }
    }

    /// Hands a chunk's entries to the writer and empties it. When they cannot be taken
    /// (queue full, or the file failed), returns how many records of each flow were
    /// dropped instead.
    pub(crate) fn submit(&self, chunk: &mut Chunk) -> Option<Vec<(u32, u64)>> {
        if chunk.buf.is_empty() {
            return None;
        }
        let len = chunk.buf.len();
        let room = self.shared.queued_bytes.load(Ordering::Relaxed) + len <= MAX_QUEUED_BYTES;
        if !room || self.shared.failed.load(Ordering::Relaxed) {
            chunk.buf.clear();
            return Some(std::mem::take(&mut chunk.counts));
        }
        self.shared.queued_bytes.fetch_add(len, Ordering::Relaxed);
        let buf = std::mem::replace(&mut chunk.buf, self.chunk().buf);
        chunk.counts.clear();
        match self.tx.send(Msg::Data(buf)) {
            Ok(()) => None,
            Err(mpsc::SendError(Msg::Data(buf))) => {
                // The writer has stopped.
                self.shared
                    .queued_bytes
                    .fetch_sub(buf.len(), Ordering::Relaxed);
                Some(Vec::new())
            }
            Err(_) => None,
        }
    }

    /// Writes a flow entry now (never dropped for lack of room).
    pub(crate) fn write_entry(&self, entry: &Entry) -> Result<()> {
        let mut buf = Vec::new();
        encode_entry(entry, &mut buf)?;
        self.shared
            .queued_bytes
            .fetch_add(buf.len(), Ordering::Relaxed);
        self.tx
            .send(Msg::Data(buf))
            .map_err(|_| anyhow!("the log writer has stopped"))
    }
}

impl Chunk {
    /// Appends a record entry counted for flow `id`. True when the chunk is full enough
    /// to be submitted.
    pub(crate) fn push(&mut self, entry: &Entry, id: u32) -> bool {
        // Records always encode (only flow entries carry texts with limits).
        let _ = encode_entry(entry, &mut self.buf);
        match self.counts.last_mut() {
            Some((last, n)) if *last == id => *n += 1,
            _ => self.counts.push((id, 1)),
        }
        self.buf.len() >= CHUNK_BYTES
    }
}

/// The writer thread: writes chunks in the order handed over, flushes when idle.
fn write_loop(
    mut out: BufWriter<File>,
    rx: &Receiver<Msg>,
    shared: &Shared,
) -> std::io::Result<()> {
    let mut error = None;
    let mut flushed = Instant::now();
    loop {
        let msg = match rx.recv_timeout(FLUSH_EVERY) {
            Ok(msg) => Some(msg),
            Err(RecvTimeoutError::Timeout) => None,
            Err(RecvTimeoutError::Disconnected) => break,
        };
        if error.is_none() && flushed.elapsed() >= FLUSH_EVERY {
            flushed = Instant::now();
            if let Err(e) = out.flush() {
                shared.failed.store(true, Ordering::Relaxed);
                error = Some(e);
            }
        }
        let Some(msg) = msg else {
            continue;
        };
        let Msg::Data(mut buf) = msg else {
            break;
        };
        if error.is_none() {
            if let Err(e) = out.write_all(&buf) {
                shared.failed.store(true, Ordering::Relaxed);
                error = Some(e);
            }
        }
        shared.queued_bytes.fetch_sub(buf.len(), Ordering::Relaxed);
        buf.clear();
        let mut pool = shared.pool.lock().unwrap_or_else(|e| e.into_inner());
        if pool.len() < POOL_LEN && buf.capacity() <= 2 * CHUNK_BYTES {
            pool.push(buf);
        }
    }
    // Stopping: nothing more will be taken.
    shared.failed.store(true, Ordering::Relaxed);
    match error {
        Some(e) => Err(e),
        None => out.flush(),
    }
}
