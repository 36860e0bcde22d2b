//! `-Z/--zerocopy` (iperf3's `-Z`): a TCP flow's messages sent with `MSG_ZEROCOPY` from a
//! small pool of buffers (Linux's Documentation/networking/msg_zerocopy.rst).
//!
//! With `MSG_ZEROCOPY` the kernel sends from our pages after `send` returns, so a
//! buffer may be written again only once the kernel has reported done every send that
//! read it (the completions on the socket's error queue, ranges of send numbers). The
//! plain TCP sender rewrites one buffer per batch (a frame prefix, a probe stamped with
//! the send time, the payload); here each batch is written into a buffer of the pool,
//! and a batch's buffer goes back to the pool when its sends are all complete.
//!
//! - The pool holds at most [`POOL_BYTES`] (4 to 256 buffers). When every buffer still
//!   waits for a completion, the batch is written into a spare buffer and sent with a
//!   plain copying `send`; so is a send the kernel refuses for too many unread
//!   completions (`ENOBUFS`) after they were read. Both are counted (`fallback_sends`):
//!   nothing waits, nothing grows.
//! - Completions are read before every write of a flow with buffers in flight, so the
//!   error queue (which polls as `POLLERR`) never keeps a parked flow awake.
//! - At the flow's end the last completions are waited for up to [`DRAIN_NS`]; a buffer
//!   whose completion never came (the peer vanished) is leaked, not freed, as the kernel
//!   may still read it.

use std::collections::VecDeque;
use std::io::{self, Write};
use std::net::TcpStream;

use results::send::ZeroCopyStats;

/// Most bytes the pool's buffers hold together.
const POOL_BYTES: usize = 32 << 20;
const MIN_BUFFERS: usize = 4;
const MAX_BUFFERS: usize = 256;
/// How long the end of a flow waits for its last completions.
const DRAIN_NS: u64 = 2_000_000_000;

/// A batch's buffer, sent and waiting for the completions of sends `first..=last`.
struct InFlight {
    buf: Vec<u8>,
    first: u64,
    last: u64,
    /// Sends of the range not reported done yet.
    left: u64,
}

/// The buffers of one flow, and its counts.
pub(super) struct ZeroCopyPool {
    free: Vec<Vec<u8>>,
    in_flight: VecDeque<InFlight>,
    /// Pool buffers made so far, and the most there may be.
    buffers: usize,
    max_buffers: usize,
    /// The buffer of batches sent with a copy: never sent with `MSG_ZEROCOPY`.
    spare: Option<Vec<u8>>,
    /// The batch being written is in a pool buffer (else in the spare).
    batch_zc: bool,
    /// The number of the batch's first zero-copy send, once it made one, and how many
    /// of the batch's sends were reported done before it was retired.
    batch_first: Option<u64>,
    batch_done: u64,
    /// The number of the next zero-copy send (the kernel counts the low 32 bits).
    next: u64,
    done: Vec<netio::tcp::ZeroCopyDone>,
    stats: ZeroCopyStats,
}

impl ZeroCopyPool {
    /// A pool for batches of up to `batch_bytes`.
    pub(super) fn new(batch_bytes: usize) -> Self {
        Self {
            free: Vec::new(),
            in_flight: VecDeque::new(),
            buffers: 0,
            max_buffers: (POOL_BYTES / batch_bytes.max(1)).clamp(MIN_BUFFERS, MAX_BUFFERS),
            spare: None,
            batch_zc: false,
            batch_first: None,
            batch_done: 0,
            next: 0,
            done: Vec::new(),
            stats: ZeroCopyStats::default(),
        }
    }

    /// A buffer for the next batch: a free one of the pool (reading completions first
    /// if none is), a new one while the pool may grow, else the spare.
    pub(super) fn take(&mut self, stream: &TcpStream) -> Vec<u8> {
        if self.free.is_empty() {
            self.reap(stream);
        }
        self.batch_zc = true;
        self.batch_first = None;
        self.batch_done = 0;
        if let Some(buf) = self.free.pop() {
            return buf;
        }
        if self.buffers < self.max_buffers {
            self.buffers += 1;
            return Vec::new();
        }
        self.batch_zc = false;
        self.spare.take().unwrap_or_default()
    }

    /// The last batch's buffer, done with: back to the pool, or kept until the sends
    /// that read it are complete.
    pub(super) fn retire(&mut self, buf: Vec<u8>) {
        match self.batch_first.take() {
            Some(first) if self.next - first == self.batch_done => self.free.push(buf),
            Some(first) => self.in_flight.push_back(InFlight {
                buf,
                first,
                last: self.next - 1,
                left: self.next - first - self.batch_done,
            }),
            None if self.batch_zc => self.free.push(buf),
            None => self.spare = Some(buf),
        }
        self.batch_zc = false;
    }

    /// Write some of the batch's `bytes`: with `MSG_ZEROCOPY` from a pool buffer, else
    /// (the spare, or too many unread completions) with a copy. Non-blocking.
    pub(super) fn write(&mut self, stream: &TcpStream, bytes: &[u8]) -> io::Result<usize> {
        // Completions waiting poll as POLLERR: read them, so a parked flow sleeps.
        if self.stats.sends > self.stats.completions {
            self.reap(stream);
        }
        if self.batch_zc {
            let mut sent = netio::tcp::send_zerocopy(stream, bytes);
            if sent.as_ref().is_err_and(netio::tcp::is_zerocopy_backlog) {
                self.reap(stream);
                sent = netio::tcp::send_zerocopy(stream, bytes);
            }
            match sent {
                Ok(n) => {
                    self.batch_first.get_or_insert(self.next);
                    self.next += 1;
                    self.stats.sends += 1;
                    return Ok(n);
                }
                Err(e) if netio::tcp::is_zerocopy_backlog(&e) => {}
                Err(e) => return Err(e),
            }
        }
        let n = (&*stream).write(bytes)?;
        self.stats.fallback_sends += 1;
        Ok(n)
    }

    /// Read the completions waiting; buffers whose sends are all done go back to the
    /// pool.
    fn reap(&mut self, stream: &TcpStream) {
        self.done.clear();
        if netio::tcp::zerocopy_completions(stream, &mut self.done).is_err() {
            return;
        }
        for d in &self.done {
            let sends = d.sends();
            self.stats.completions += sends;
            if d.copied {
                self.stats.copied += sends;
            }
            // The kernel's 32-bit numbers, below `next`, as ours.
            let full = |n: u32| self.next - u64::from((self.next as u32).wrapping_sub(n));
            let (lo, hi) = (full(d.first), full(d.last));
            let overlap = |first: u64, last: u64| {
                let (a, b) = (lo.max(first), hi.min(last));
                if a <= b {
                    b - a + 1
                } else {
                    0
                }
            };
            for f in &mut self.in_flight {
                f.left = f.left.saturating_sub(overlap(f.first, f.last));
            }
            // Sends of the batch being written (not retired yet).
            if let Some(first) = self.batch_first {
                self.batch_done += overlap(first, self.next - 1);
            }
        }
        let mut i = 0;
        while i < self.in_flight.len() {
            if self.in_flight[i].left == 0 {
                if let Some(f) = self.in_flight.remove(i) {
                    self.free.push(f.buf);
                }
            } else {
                i += 1;
            }
        }
    }

    /// The flow is over (`buf` its last batch's buffer): wait for the last completions,
    /// then the counts.
    pub(super) fn finish(&mut self, stream: &TcpStream, buf: Vec<u8>) -> ZeroCopyStats {
        self.retire(buf);
        let deadline = netio::clock::mono_ns() + DRAIN_NS;
        loop {
            self.reap(stream);
            if self.in_flight.is_empty() || netio::clock::mono_ns() >= deadline {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        // Still in flight: the kernel may read them yet, so they are never freed.
        for f in self.in_flight.drain(..) {
            std::mem::forget(f.buf);
        }
        ZeroCopyStats {
            pool_buffers: self.buffers as u64,
            ..self.stats
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    #[test]
    fn buffers_are_recycled_only_after_their_completions() {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let stream = TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (mut peer, _) = l.accept().unwrap();
        netio::tcp::enable_zerocopy(&stream).unwrap();
        stream.set_nonblocking(true).unwrap();
        let reader = std::thread::spawn(move || {
            let mut all = Vec::new();
            peer.read_to_end(&mut all).unwrap();
            all
        });
        // A pool of 4 buffers (the least): batches as large as the pool's bytes.
        let mut pool = ZeroCopyPool::new(POOL_BYTES);
        let mut buf = Vec::new();
        let mut sent = Vec::new();
        for batch in 0..12u8 {
            if batch > 0 {
                pool.retire(std::mem::take(&mut buf));
            }
            buf = pool.take(&stream);
            // Every batch is written whole, its bytes its number.
            buf.clear();
            buf.resize(64 * 1024, batch);
            let mut at = 0;
            while at < buf.len() {
                match pool.write(&stream, &buf[at..]) {
                    Ok(n) => at += n,
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                        std::thread::sleep(std::time::Duration::from_millis(1));
                    }
                    Err(e) => panic!("{e}"),
                }
            }
            sent.extend_from_slice(&buf);
        }
        let stats = pool.finish(&stream, buf);
        stream.shutdown(std::net::Shutdown::Write).unwrap();
        // The bytes arrived as written: no buffer was rewritten under the kernel.
        assert!(reader.join().unwrap() == sent);
        assert!(stats.pool_buffers <= 4, "{stats:?}");
        assert!(stats.sends + stats.fallback_sends >= 12, "{stats:?}");
        assert_eq!(stats.completions, stats.sends, "{stats:?}");
        assert!(
            stats.sends > 0 && stats.copied == stats.completions,
            "{stats:?}"
        );
    }
}
