//! The per-packet log's writer thread. Socket loops encode records into chunks and hand
//! them over; one thread writes them to the file. A socket loop never waits for the
//! disk: when more than [`MAX_QUEUED_BYTES`] are already waiting (the disk cannot keep
//! up) or the file can no longer be written, the chunk is dropped and its records are
//! counted, per flow, as not logged, which the flow's report and its FlowEnd entry say.
//! Flow entries (FlowInfo, FlowEnd) are small and never dropped.
//!
//! Socket loops hand records over when a chunk is full or has held records for 50 ms
//! ([`HOLD_NS`]), and the thread flushes its buffer at least every 100 ms (and the
//! header at once), so a receiver killed outright loses at most the last 150 ms and
//! what was queued: `decode`
//! reads the log up to where it ends (see `meter::log` on logs cut short).
//!
//! A log whose name ends in `.zst` is written as one zstd stream (RFC 8878), compressed
//! on the writer thread, so the socket loops do the same work either way. Each flush
//! ends a zstd block, so a compressed log killed outright also reads up to its last
//! flush. [`open_log`] reads either kind, telling them apart by their first bytes.

use std::fs::File;
use std::io::{self, BufRead, BufReader, BufWriter, Read, Write};
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

/// The longest a socket loop holds records before handing them over
/// ([`LogProducer::submit_if_due`]). Handing over per batch woke the writer thread up to
/// 300,000 times a second at high rates (small batches), costing the socket loops their
/// CPU; a 64 KiB chunk or 50 ms, whichever comes first, wakes it at most a few hundred
/// times a second.
pub(crate) const HOLD_NS: u64 = 50_000_000;

/// The longest a record waits in the writer's buffer.
const FLUSH_EVERY: Duration = Duration::from_millis(100);

/// Buffers kept for reuse, so a steady run allocates none.
const POOL_LEN: usize = 64;

/// zstd's level for logs: its fastest regular level, which still shrinks a receiver's
/// records about fourfold, at well under a tenth of a core at 500,000 records/s.
const ZSTD_LEVEL: i32 = 1;

/// The first four bytes of a zstd frame (RFC 8878 §3.1.1).
const ZSTD_MAGIC: [u8; 4] = [0x28, 0xb5, 0x2f, 0xfd];

/// True when a log at `path` is written compressed: its name ends in `.zst`.
pub(crate) fn compressed_name(path: &Path) -> bool {
    path.extension().is_some_and(|e| e == "zst")
}

/// Where the writer thread writes: the file itself, or a zstd stream into it.
enum Out {
    Plain(BufWriter<File>),
    Zstd(zstd::stream::write::Encoder<'static, BufWriter<File>>),
}

impl Out {
    fn create(path: &Path) -> io::Result<Self> {
        let file = BufWriter::with_capacity(256 << 10, File::create(path)?);
        Ok(if compressed_name(path) {
            Self::Zstd(zstd::stream::write::Encoder::new(file, ZSTD_LEVEL)?)
        } else {
            Self::Plain(file)
        })
    }

    /// Writes what is buffered and, for zstd, the end of the stream.
    fn finish(self) -> io::Result<()> {
        match self {
            Self::Plain(mut w) => w.flush(),
            Self::Zstd(e) => e.finish()?.flush(),
        }
    }
}

impl Write for Out {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Self::Plain(w) => w.write(buf),
            Self::Zstd(e) => e.write(buf),
        }
    }

    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        match self {
            Self::Plain(w) => w.write_all(buf),
            Self::Zstd(e) => e.write_all(buf),
        }
    }

    /// For zstd, ends the current block, so everything written so far can be read.
    fn flush(&mut self) -> io::Result<()> {
        match self {
            Self::Plain(w) => w.flush(),
            Self::Zstd(e) => e.flush(),
        }
    }
}

/// How a log read with [`open_log`] was stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Compression {
    None,
    Zstd,
}

/// Opens a log for reading, compressed (zstd) or not, told apart by its first bytes. A
/// zstd stream that ends early (a writer killed outright, a file cut short) reads as
/// ending where its last whole block ends: the log reader then finds the cut.
/// The third value holds, once reading has ended, why a zstd stream ended early (its
/// decoder's error), if it did.
pub(crate) fn open_log(
    input: Box<dyn Read>,
) -> io::Result<(Box<dyn Read>, Compression, StreamEnd)> {
    let mut input = BufReader::with_capacity(1 << 20, input);
    let end = StreamEnd::default();
    if input.fill_buf()?.starts_with(&ZSTD_MAGIC) {
        let decoder = zstd::stream::read::Decoder::with_buffer(input)?;
        let reader = CutAtEnd {
            inner: decoder,
            end: end.clone(),
        };
        Ok((Box::new(reader), Compression::Zstd, end))
    } else {
        Ok((Box::new(input), Compression::None, end))
    }
}

/// Why a compressed stream ended before its end: set by the reader [`open_log`] returns.
#[derive(Clone, Default)]
pub(crate) struct StreamEnd(Arc<Mutex<Option<String>>>);

impl StreamEnd {
    /// The decoder's error that ended the stream, if one did.
    pub(crate) fn error(&self) -> Option<String> {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
}

/// Reads a zstd stream, ending it (rather than failing) where the stream is cut off or
/// damaged: what came before is the log's, and the error is kept in `end`.
struct CutAtEnd<R> {
    inner: R,
    end: StreamEnd,
}

impl<R: Read> Read for CutAtEnd<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let mut end = self.end.0.lock().unwrap_or_else(|e| e.into_inner());
        if end.is_some() {
            return Ok(0);
        }
        match self.inner.read(buf) {
            Err(e) if e.kind() != io::ErrorKind::Interrupted => {
                *end = Some(format!("the zstd stream ends early: {e}"));
                Ok(0)
            }
            other => other,
        }
    }
}

enum Msg {
    Data(Vec<u8>),
    Close,
}

struct Shared {
    queued_bytes: AtomicUsize,
    /// Records handed to the writer.
    records: std::sync::atomic::AtomicU64,
    failed: AtomicBool,
    pool: Mutex<Vec<Vec<u8>>>,
}

/// The open log: its writer thread and the way to stop it.
pub(crate) struct LogSink {
    path: PathBuf,
    producer: LogProducer,
    thread: Mutex<Option<JoinHandle<io::Result<()>>>>,
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
    /// When [`LogProducer::submit_if_due`] first saw it holding records.
    held_since_ns: Option<u64>,
}

impl LogSink {
    /// Creates the log at `path`, writes its header with `meta_json` and starts the
    /// writer thread.
    pub(crate) fn create(path: &Path, meta_json: &str) -> Result<Self> {
        let mut out =
            Out::create(path).with_context(|| format!("cannot create log {}", path.display()))?;
        let mut header = Vec::new();
        encode_header(meta_json, &mut header)?;
        out.write_all(&header)
            .and_then(|()| out.flush())
            .with_context(|| format!("cannot write log {}", path.display()))?;
        let (tx, rx) = mpsc::channel();
        let shared = Arc::new(Shared {
            queued_bytes: AtomicUsize::new(0),
            records: std::sync::atomic::AtomicU64::new(0),
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

impl LogSink {
    /// What the log holds, for the note naming it once it is finished:
    /// `recv.dplog (12345 records, 1.21 MiB)`.
    pub(crate) fn written(&self) -> String {
        let records = self.producer.shared.records.load(Ordering::Relaxed);
        let size = std::fs::metadata(&self.path)
            .map(|m| format!(", {}", crate::human::bytes(m.len())))
            .unwrap_or_default();
        format!("{} ({records} records{size})", self.path.display())
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
            held_since_ns: None,
        }
    }

    /// Hands the chunk over (as [`Self::submit`]) when it is full or has held records
    /// for [`HOLD_NS`]; `now_ns` is any monotonic clock the caller reads anyway.
    pub(crate) fn submit_if_due(&self, chunk: &mut Chunk, now_ns: u64) -> Option<Vec<(u32, u64)>> {
        if chunk.buf.is_empty() {
            return None;
        }
        let since = *chunk.held_since_ns.get_or_insert(now_ns);
        if chunk.buf.len() >= CHUNK_BYTES || now_ns.saturating_sub(since) >= HOLD_NS {
            self.submit(chunk)
        } else {
            None
        }
    }

    /// Hands a chunk's entries to the writer and empties it. When they cannot be taken
    /// (queue full, or the file failed), returns how many records of each flow were
    /// dropped instead.
    pub(crate) fn submit(&self, chunk: &mut Chunk) -> Option<Vec<(u32, u64)>> {
        if chunk.buf.is_empty() {
            return None;
        }
        chunk.held_since_ns = None;
        let len = chunk.buf.len();
        let room = self.shared.queued_bytes.load(Ordering::Relaxed) + len <= MAX_QUEUED_BYTES;
        if !room || self.shared.failed.load(Ordering::Relaxed) {
            chunk.buf.clear();
            return Some(std::mem::take(&mut chunk.counts));
        }
        self.shared.queued_bytes.fetch_add(len, Ordering::Relaxed);
        let buf = std::mem::replace(&mut chunk.buf, self.chunk().buf);
        let records: u64 = chunk.counts.iter().map(|(_, n)| n).sum();
        chunk.counts.clear();
        match self.tx.send(Msg::Data(buf)) {
            Ok(()) => {
                self.shared.records.fetch_add(records, Ordering::Relaxed);
                None
            }
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
    /// True when it holds no entry.
    pub(crate) fn is_empty(&self) -> bool {
        self.buf.is_empty()
    }

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
fn write_loop(mut out: Out, rx: &Receiver<Msg>, shared: &Shared) -> io::Result<()> {
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
        None => out.finish(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use meter::log::{read_log, LogContents};
    use meter::RxRecord;

    /// A file in the temp directory, removed when dropped.
    struct TempFile(PathBuf);

    impl TempFile {
        fn new(name: &str) -> Self {
            Self(
                std::env::temp_dir()
                    .join(format!("dualperf-logsink-{}-{name}", std::process::id())),
            )
        }
    }

    impl Drop for TempFile {
        fn drop(&mut self) {
            let _ = std::fs::remove_file(&self.0);
        }
    }

    fn record(seq: u64) -> RxRecord {
        RxRecord {
            flow: 1,
            seq,
            size_bytes: 64,
            tx_ns: 1_000_000 + seq * 3_333,
            rx_ns: 1_000_000 + seq * 3_333 + 4_000 + seq % 7,
            tos: Some(0xb8),
            hop_limit: Some(64),
            kernel_ts: true,
            ..RxRecord::default()
        }
    }

    /// Writes a log of `n` records of flow 1, with its info and end entries, to `path`.
    fn write_log(path: &Path, n: u64) {
        let sink = LogSink::create(path, r#"{"tool":"test"}"#).unwrap();
        sink.write_entry(&Entry::FlowInfo {
            flow: 1,
            json: "{}".into(),
        })
        .unwrap();
        let producer = sink.producer();
        let mut chunk = producer.chunk();
        for seq in 0..n {
            if chunk.push(&Entry::Rx(record(seq)), 1) {
                assert_eq!(producer.submit(&mut chunk), None);
            }
        }
        assert_eq!(producer.submit(&mut chunk), None);
        sink.write_entry(&Entry::FlowEnd {
            flow: 1,
            json: "{}".into(),
        })
        .unwrap();
        sink.finish().unwrap();
    }

    fn read(path: &Path) -> (LogContents, Compression) {
        let file = File::open(path).unwrap();
        let (input, compression, _) = open_log(Box::new(file)).unwrap();
        (read_log(input).unwrap(), compression)
    }

    #[test]
    fn a_zst_log_is_compressed_and_reads_back_the_same() {
        let plain = TempFile::new("plain.dplog");
        let zst = TempFile::new("z.dplog.zst");
        write_log(&plain.0, 100_000);
        write_log(&zst.0, 100_000);
        assert!(!compressed_name(&plain.0) && compressed_name(&zst.0));
        let bytes = std::fs::read(&zst.0).unwrap();
        assert_eq!(bytes[..4], ZSTD_MAGIC);
        let plain_len = std::fs::metadata(&plain.0).unwrap().len();
        assert!(
            (bytes.len() as u64) * 3 < plain_len,
            "{} compressed bytes of {plain_len}",
            bytes.len()
        );
        let (a, ca) = read(&plain.0);
        let (b, cb) = read(&zst.0);
        assert_eq!((ca, cb), (Compression::None, Compression::Zstd));
        assert_eq!(a.rx.len(), 100_000);
        assert_eq!(a.rx[99_999], record(99_999));
        assert_eq!(a, b);
        assert_eq!(b.flow_ends.len(), 1);
    }

    #[test]
    fn a_zst_log_cut_short_reads_up_to_the_cut() {
        let zst = TempFile::new("cut.dplog.zst");
        write_log(&zst.0, 200_000);
        let whole = std::fs::read(&zst.0).unwrap();
        for keep in [whole.len() / 2, whole.len() - 1, 200] {
            let cut = &whole[..keep];
            let (input, compression, end) =
                open_log(Box::new(io::Cursor::new(cut.to_vec()))).unwrap();
            assert_eq!(compression, Compression::Zstd);
            // No error: the records before the cut, in order, and no end entry.
            let contents = read_log(input).unwrap();
            for (i, r) in contents.rx.iter().enumerate() {
                assert_eq!(*r, record(i as u64));
            }
            // A cut inside the stream is said, not only suffered.
            assert!(end.error().is_some(), "{keep}");
            if keep < whole.len() - 1 {
                assert!(contents.rx.len() < 200_000, "{keep}: {}", contents.rx.len());
                assert!(contents.flow_ends.is_empty());
            }
        }
        // Half the compressed stream holds records.
        let (input, _, _) =
            open_log(Box::new(io::Cursor::new(whole[..whole.len() / 2].to_vec()))).unwrap();
        assert!(read_log(input).unwrap().rx.len() > 10_000);
    }
}
