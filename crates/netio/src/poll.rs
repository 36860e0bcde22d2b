//! Readiness of several descriptors at once, for event loops over
//! non-blocking sockets such as [`PacketSocket`](crate::packet::PacketSocket).

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
    let mut pfds: Vec<libc::pollfd> = fds
        .iter()
        .map(|&fd| libc::pollfd {
            fd,
            events: libc::POLLIN,
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
