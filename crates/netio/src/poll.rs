//! Readiness of several descriptors at once, for event loops over
//! non-blocking sockets such as [`PacketSocket`](crate::packet::PacketSocket).

use std::io;
use std::os::fd::RawFd;

use crate::sys::cvt;

/// Waits with `poll(2)` until at least one of `fds` is readable or the
/// timeout passes, and returns one flag per descriptor, in order.
///
/// - `timeout_ns`: `None` waits forever, `Some(0)` only checks. Nanoseconds
///   are rounded *up* to poll's milliseconds (so a wait never ends early;
///   1 ns waits 1 ms) and capped at `c_int::MAX` ms.
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
    let mut pfds: Vec<libc::pollfd> = fds
        .iter()
        .map(|&fd| libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        })
        .collect();
    let timeout_ms = match timeout_ns {
        None => -1,
        Some(ns) => libc::c_int::try_from(ns.div_ceil(1_000_000)).unwrap_or(libc::c_int::MAX),
    };
    // SAFETY: `pfds` is a valid, writable array of `pfds.len()` pollfd structs
    // that outlives the call.
    let ret = unsafe { libc::poll(pfds.as_mut_ptr(), pfds.len() as libc::nfds_t, timeout_ms) };
    match cvt(ret) {
        Ok(_) => {}
        Err(e) if e.kind() == io::ErrorKind::Interrupted => return Ok(vec![false; fds.len()]),
        Err(e) => return Err(e),
    }
    if pfds.iter().any(|p| p.revents & libc::POLLNVAL != 0) {
        return Err(io::Error::from_raw_os_error(libc::EBADF));
    }
    Ok(pfds
        .iter()
        .map(|p| p.revents & (libc::POLLIN | libc::POLLERR | libc::POLLHUP) != 0)
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::UdpSocket;
    use std::os::fd::AsRawFd;

    #[test]
    fn reports_only_the_readable_socket() {
        let a = UdpSocket::bind("127.0.0.1:0".parse().unwrap(), false).unwrap();
        let b = UdpSocket::bind("127.0.0.1:0".parse().unwrap(), false).unwrap();
        let fds = [a.as_raw_fd(), b.as_raw_fd()];
        assert_eq!(poll_readable(&fds, Some(0)).unwrap(), vec![false, false]);
        // 1 ns rounds up to 1 ms: a real (tiny) wait, still nothing.
        assert_eq!(poll_readable(&fds, Some(1)).unwrap(), vec![false, false]);
        a.connect(b.local_addr().unwrap()).unwrap();
        a.send(b"x").unwrap();
        assert_eq!(
            poll_readable(&fds, Some(2_000_000_000)).unwrap(),
            vec![false, true]
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
