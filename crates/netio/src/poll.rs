//! Readiness of several descriptors at once, for event loops over
//! non-blocking sockets such as [`PacketSocket`](crate::packet::PacketSocket), and
//! [`BusyPoll`] and [`RecvPoll`], the policies that decide when a loop polls instead of
//! sleeping.

use std::io;
use std::os::fd::RawFd;

use crate::sys::cvt;

/// Waits with `ppoll(2)` until at least one of `fds` is readable or the
/// timeout passes, and returns one flag per descriptor, in order.
///
/// - `timeout_ns`: `None` waits forever, `Some(0)` only checks. The timeout is
///   passed in nanoseconds (a `timespec`), so an event loop wakes for a link's
///   next event to within the kernel's timer slack, not to the millisecond
///   `poll(2)` would round to.
/// - A flag is `true` when the kernel reported `POLLIN`, or `POLLERR` /
///   `POLLHUP`: a read will not block and reports the condition. (A
///   [`PacketSocket`](crate::packet::PacketSocket) reads its ring without a
///   syscall, so after a readable flag with nothing to receive check
///   [`PacketSocket::take_error`](crate::packet::PacketSocket::take_error).)
/// - All `false`: the timeout passed, or a signal interrupted the wait
///   (`EINTR` is not an error; callers loop and check their stop flag).
/// - A descriptor that is not open (`POLLNVAL`) is an `EBADF` error.
///   Negative descriptors are ignored by `poll(2)` and report `false`.
pub fn poll_readable(fds: &[RawFd], timeout_ns: Option<u64>) -> io::Result<Vec<bool>> {
    let interest: Vec<(RawFd, Interest)> = fds.iter().map(|&fd| (fd, Interest::Read)).collect();
    Ok(poll_ready(&interest, timeout_ns)?
        .into_iter()
        .map(|r| r.readable)
        .collect())
}

/// What a caller of [`poll_ready`] waits for on one descriptor.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Interest {
    /// Data to read (`POLLIN`).
    Read,
    /// Room to write (`POLLOUT`).
    Write,
    /// Either.
    ReadWrite,
}

/// What [`poll_ready`] found on one descriptor. `POLLERR` and `POLLHUP` set both
/// flags: the next read or write will not block and reports the condition.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Ready {
    /// A read will not block.
    pub readable: bool,
    /// A write will not block.
    pub writable: bool,
}

/// Waits with `ppoll(2)` until one of `fds` is ready as asked, or the timeout passes;
/// one [`Ready`] per descriptor, in order. Timeouts, `EINTR` and bad descriptors as
/// in [`poll_readable`].
pub fn poll_ready(fds: &[(RawFd, Interest)], timeout_ns: Option<u64>) -> io::Result<Vec<Ready>> {
    let mut pfds: Vec<libc::pollfd> = fds
        .iter()
        .map(|&(fd, interest)| libc::pollfd {
            fd,
            events: match interest {
                Interest::Read => libc::POLLIN,
                Interest::Write => libc::POLLOUT,
                Interest::ReadWrite => libc::POLLIN | libc::POLLOUT,
            },
            revents: 0,
        })
        .collect();
    let ts = timeout_ns.map(|ns| libc::timespec {
        tv_sec: libc::time_t::try_from(ns / 1_000_000_000).unwrap_or(libc::time_t::MAX),
        tv_nsec: (ns % 1_000_000_000) as libc::c_long,
    });
    let ts_ptr = ts
        .as_ref()
        .map_or(std::ptr::null(), |t| t as *const libc::timespec);
    // SAFETY: `pfds` is a valid, writable array of `pfds.len()` pollfd structs
    // that outlives the call; `ts_ptr` is null or points to a timespec that
    // outlives the call; a null signal mask leaves the mask unchanged.
    let ret = unsafe {
        libc::ppoll(
            pfds.as_mut_ptr(),
            pfds.len() as libc::nfds_t,
            ts_ptr,
            std::ptr::null(),
        )
    };
    match cvt(ret) {
        Ok(_) => {}
        Err(e) if e.kind() == io::ErrorKind::Interrupted => {
            return Ok(vec![Ready::default(); fds.len()])
        }
        Err(e) => return Err(e),
    }
    if pfds.iter().any(|p| p.revents & libc::POLLNVAL != 0) {
        return Err(io::Error::from_raw_os_error(libc::EBADF));
    }
    let failed = libc::POLLERR | libc::POLLHUP;
    Ok(pfds
        .iter()
        .map(|p| Ready {
            readable: p.revents & (libc::POLLIN | failed) != 0,
            writable: p.revents & (libc::POLLOUT | failed) != 0,
        })
        .collect())
}

/// How long a receive loop keeps polling after the last packet before it sleeps,
/// adapted to the traffic. A sleep that a packet ended after `t` (shorter than the
/// most, `max_ns`) sets the window to 2t, so the next gap of that length is polled
/// through instead of paying a wake-up; a longer sleep, or one that ran out, sets it
/// back to the least, `least_ns`. Steady traffic with gaps up to `max_ns` is taken
/// without wake-ups (keeping one CPU busy), sparse traffic costs one wake-up per
/// packet and no CPU between. `max_ns = 0` never polls.
/// `dualperf route` uses it for its RX rings; receivers of sockets use [`RecvPoll`].
///
/// Pure policy: it reads no clock. The loop tells it how long each sleep lasted.
#[derive(Debug, Clone)]
pub struct BusyPoll {
    least_ns: u64,
    max_ns: u64,
    window_ns: u64,
}

impl BusyPoll {
    /// A window that starts at `least_ns` (capped at `max_ns`) and never exceeds
    /// `max_ns`.
    pub fn new(least_ns: u64, max_ns: u64) -> Self {
        let least_ns = least_ns.min(max_ns);
        Self {
            least_ns,
            max_ns,
            window_ns: least_ns,
        }
    }

    /// Poll on while the last packet came less than this long ago.
    pub fn window_ns(&self) -> u64 {
        self.window_ns
    }

    /// A sleep of `slept_ns` ended: by a packet (`readable`) or by its timeout (a
    /// timer, the idle timeout).
    pub fn after_sleep(&mut self, slept_ns: u64, readable: bool) {
        self.window_ns = if readable && slept_ns < self.max_ns {
            slept_ns.saturating_mul(2).clamp(self.least_ns, self.max_ns)
        } else if readable || slept_ns >= self.max_ns {
            self.least_ns
        } else {
            self.window_ns
        };
    }
}

/// How a socket receive loop waits for its next batch: in the kernel, or by polling.
///
/// On loopback (and a veth) the kernel delivers a datagram on the sending CPU, which
/// also pays for waking a reader asleep in `recvmmsg`: at a few hundred thousand
/// datagrams a second that wake-up is most of the sender's cost, and it limits the
/// rate and timing of the flow being measured. A reader that polls (a non-blocking
/// read, then a short nap or a spin) needs no wake-up from the sender.
///
/// The policy polls while the traffic is dense: the last batch's datagrams came less
/// than `max_gap_ns` apart on average (time since the batch before, over its count),
/// and something arrived within the last [`RecvPoll::HORIZON_NS`]. Otherwise the loop
/// sleeps in the kernel. `max_gap_ns = 0` never polls.
///
/// Pure policy: the loop passes the time in.
#[derive(Debug, Clone)]
pub struct RecvPoll {
    max_gap_ns: u64,
    dense: bool,
    last_rx_ns: Option<u64>,
}

/// What [`RecvPoll::wait`] says to do next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wait {
    /// Sleep in the kernel until a datagram comes.
    Block,
    /// Read without waiting; if nothing is there, nap or spin, then ask again.
    Poll,
}

impl RecvPoll {
    /// Silence after which a polling loop goes back to sleeping in the kernel.
    pub const HORIZON_NS: u64 = 1_000_000;

    /// A policy that polls while datagrams come less than `max_gap_ns` apart.
    pub fn new(max_gap_ns: u64) -> Self {
        Self {
            max_gap_ns,
            dense: false,
            last_rx_ns: None,
        }
    }

    /// How to wait at `now_ns`.
    pub fn wait(&self, now_ns: u64) -> Wait {
        match self.last_rx_ns {
            Some(t) if self.dense && now_ns.saturating_sub(t) < Self::HORIZON_NS => Wait::Poll,
            _ => Wait::Block,
        }
    }

    /// A batch of `count` datagrams (at least one) was read at `now_ns`.
    pub fn handle_batch(&mut self, now_ns: u64, count: u64) {
        if let Some(prev) = self.last_rx_ns {
            let mean_gap_ns = now_ns.saturating_sub(prev) / count.max(1);
            self.dense = mean_gap_ns < self.max_gap_ns;
        }
        self.last_rx_ns = Some(now_ns);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::UdpSocket;
    use std::os::fd::AsRawFd;

    #[test]
    fn the_busy_poll_window_follows_the_gaps_it_sleeps_through() {
        let mut b = BusyPoll::new(50_000, 2_000_000);
        assert_eq!(b.window_ns(), 50_000);
        // Frames every millisecond: the first sleep lasts ~0.95 ms, then the loop polls
        // through gaps up to 1.9 ms.
        b.after_sleep(950_000, true);
        assert_eq!(b.window_ns(), 1_900_000);
        // A short sleep narrows it, never below the least.
        b.after_sleep(10_000, true);
        assert_eq!(b.window_ns(), 50_000);
        b.after_sleep(700_000, true);
        assert_eq!(b.window_ns(), 1_400_000);
        // A timer's wake-up says nothing about the traffic.
        b.after_sleep(300_000, false);
        assert_eq!(b.window_ns(), 1_400_000);
        // Sparse traffic: a gap beyond the most, or the idle timeout.
        b.after_sleep(1_500_000, true);
        assert_eq!(b.window_ns(), 2_000_000);
        b.after_sleep(2_000_000, true);
        assert_eq!(b.window_ns(), 50_000);
        b.after_sleep(700_000, true);
        b.after_sleep(100_000_000, false);
        assert_eq!(b.window_ns(), 50_000);
    }

    #[test]
    fn a_receiver_polls_only_while_the_traffic_is_dense() {
        let mut p = RecvPoll::new(20_000);
        assert_eq!(p.wait(0), Wait::Block);
        // 300,000 pkt/s read in batches of 8 every 26.7 us: a mean gap of 3.3 us.
        let mut t = 1_000_000;
        p.handle_batch(t, 1);
        assert_eq!(
            p.wait(t),
            Wait::Block,
            "one batch says nothing about the gaps"
        );
        for _ in 0..10 {
            t += 26_667;
            p.handle_batch(t, 8);
            assert_eq!(p.wait(t + 10_000), Wait::Poll);
        }
        // The flow stops: poll on through the horizon, then sleep.
        assert_eq!(p.wait(t + RecvPoll::HORIZON_NS - 1), Wait::Poll);
        assert_eq!(p.wait(t + RecvPoll::HORIZON_NS), Wait::Block);
        // 30,000 pkt/s: one datagram per wake-up, 33 us apart: sleep each time.
        for _ in 0..10 {
            t += 33_333;
            p.handle_batch(t, 1);
            assert_eq!(p.wait(t + 1), Wait::Block);
        }
        // A burst after a pause is dense again only if its mean gap is short.
        t += 5_000_000;
        p.handle_batch(t, 64);
        assert_eq!(p.wait(t), Wait::Block, "5 ms / 64 is 78 us");
        t += 64 * 2_000;
        p.handle_batch(t, 64);
        assert_eq!(p.wait(t), Wait::Poll);
    }

    #[test]
    fn a_zero_gap_never_polls() {
        let mut p = RecvPoll::new(0);
        for t in 0..1_000 {
            p.handle_batch(t, 64);
            assert_eq!(p.wait(t), Wait::Block);
        }
    }

    #[test]
    fn a_zero_busy_poll_never_polls() {
        for least in [0, 50_000] {
            let mut b = BusyPoll::new(least, 0);
            assert_eq!(b.window_ns(), 0);
            for (slept, readable) in [(10, true), (1_000_000, true), (100_000_000, false)] {
                b.after_sleep(slept, readable);
                assert_eq!(b.window_ns(), 0);
            }
        }
    }

    #[test]
    fn reports_only_the_readable_socket() {
        let a = UdpSocket::bind("127.0.0.1:0".parse().unwrap(), false).unwrap();
        let b = UdpSocket::bind("127.0.0.1:0".parse().unwrap(), false).unwrap();
        let fds = [a.as_raw_fd(), b.as_raw_fd()];
        assert_eq!(poll_readable(&fds, Some(0)).unwrap(), vec![false, false]);
        // A 1 ns wait: still nothing.
        assert_eq!(poll_readable(&fds, Some(1)).unwrap(), vec![false, false]);
        a.connect(b.local_addr().unwrap()).unwrap();
        a.send(b"x").unwrap();
        assert_eq!(
            poll_readable(&fds, Some(2_000_000_000)).unwrap(),
            vec![false, true]
        );
    }

    #[test]
    fn ready_reports_reads_and_writes_as_asked() {
        let a = UdpSocket::bind("127.0.0.1:0".parse().unwrap(), false).unwrap();
        let b = UdpSocket::bind("127.0.0.1:0".parse().unwrap(), false).unwrap();
        let fds = [
            (a.as_raw_fd(), Interest::Write),
            (b.as_raw_fd(), Interest::ReadWrite),
        ];
        // An idle UDP socket has room to write and nothing to read.
        let w = Ready {
            readable: false,
            writable: true,
        };
        assert_eq!(poll_ready(&fds, Some(0)).unwrap(), vec![w, w]);
        a.connect(b.local_addr().unwrap()).unwrap();
        a.send(b"x").unwrap();
        let rw = Ready {
            readable: true,
            writable: true,
        };
        assert_eq!(poll_ready(&fds, Some(0)).unwrap(), vec![w, rw]);
        // Asked only to read, an idle socket waits out the timeout.
        let read_a = [(a.as_raw_fd(), Interest::Read)];
        assert_eq!(
            poll_ready(&read_a, Some(1)).unwrap(),
            vec![Ready::default()]
        );
    }

    #[test]
    fn closed_descriptor_is_ebadf() {
        // A pipe end we close ourselves, so the number is surely unused.
        let mut ends = [0 as RawFd; 2];
        // SAFETY: `ends` is a valid array of two ints for pipe(2) to fill.
        cvt(unsafe { libc::pipe(ends.as_mut_ptr()) }).unwrap();
        // SAFETY: both descriptors were just created by pipe(2) and are ours.
        unsafe {
            libc::close(ends[0]);
            libc::close(ends[1]);
        }
        let err = poll_readable(&[ends[0]], Some(0)).unwrap_err();
        assert_eq!(err.raw_os_error(), Some(libc::EBADF));
    }
}
