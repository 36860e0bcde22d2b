//! Thin, checked wrappers over the socket syscalls the rest of the crate uses:
//! socket creation, `setsockopt`/`getsockopt` for `int` options, and the
//! conversion between [`SocketAddr`] and `sockaddr_storage`.
//!
//! Nothing here knows about marking or metadata; it only turns C return
//! conventions into `io::Result`.

use std::io;
use std::mem::{size_of, zeroed};
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr, SocketAddrV4, SocketAddrV6};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

/// Address family of a socket (its `socket(2)` domain).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Family {
    /// `AF_INET`.
    V4,
    /// `AF_INET6` (which may also carry IPv4 as v4-mapped addresses).
    V6,
}

impl Family {
    pub(crate) fn of(addr: &SocketAddr) -> Self {
        match addr {
            SocketAddr::V4(_) => Self::V4,
            SocketAddr::V6(_) => Self::V6,
        }
    }

    fn domain(self) -> libc::c_int {
        match self {
            Self::V4 => libc::AF_INET,
            Self::V6 => libc::AF_INET6,
        }
    }
}

/// Turns a `-1`-on-error return into `io::Result`.
pub(crate) fn cvt(ret: libc::c_int) -> io::Result<libc::c_int> {
    if ret == -1 {
        Err(io::Error::last_os_error())
    } else {
        Ok(ret)
    }
}

/// Like [`cvt`] for syscalls returning `ssize_t`.
pub(crate) fn cvt_size(ret: libc::ssize_t) -> io::Result<usize> {
    if ret < 0 {
        Err(io::Error::last_os_error())
    } else {
        // Non-negative `ssize_t` always fits `usize`.
        Ok(ret as usize)
    }
}

/// `socket(family, ty | SOCK_CLOEXEC, 0)`, owned.
pub(crate) fn socket(family: Family, ty: libc::c_int) -> io::Result<OwnedFd> {
    socket_protocol(family, ty, 0)
}

/// `socket(family, ty | SOCK_CLOEXEC, protocol)`, owned: for raw IP sockets,
/// whose protocol is the IP protocol number they send and receive.
pub(crate) fn socket_protocol(
    family: Family,
    ty: libc::c_int,
    protocol: libc::c_int,
) -> io::Result<OwnedFd> {
    // SAFETY: socket(2) takes no pointers; the result is checked below.
    let fd = cvt(unsafe { libc::socket(family.domain(), ty | libc::SOCK_CLOEXEC, protocol) })?;
    // SAFETY: `fd` was just returned by socket(2), is valid and owned by nobody else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// `setsockopt` with an arbitrary plain-old-data value.
pub(crate) fn setsockopt<T: Copy>(
    fd: &impl AsRawFd,
    level: libc::c_int,
    name: libc::c_int,
    value: &T,
) -> io::Result<()> {
    // SAFETY: `value` is a valid, initialised `T` for the duration of the call and the
    // length passed is exactly its size; the kernel only reads from it.
    cvt(unsafe {
        libc::setsockopt(
            fd.as_raw_fd(),
            level,
            name,
            (value as *const T).cast(),
            size_of::<T>() as libc::socklen_t,
        )
    })?;
    Ok(())
}

/// `setsockopt` with an `int` value (the common case).
pub(crate) fn setsockopt_int(
    fd: &impl AsRawFd,
    level: libc::c_int,
    name: libc::c_int,
    value: libc::c_int,
) -> io::Result<()> {
    setsockopt(fd, level, name, &value)
}

/// `getsockopt` for an `int` option.
pub(crate) fn getsockopt_int(
    fd: &impl AsRawFd,
    level: libc::c_int,
    name: libc::c_int,
) -> io::Result<libc::c_int> {
    let mut value: libc::c_int = 0;
    let mut len = size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: `value` and `len` are valid for writes and `len` holds the size of `value`.
    cvt(unsafe {
        libc::getsockopt(
            fd.as_raw_fd(),
            level,
            name,
            (&mut value as *mut libc::c_int).cast(),
            &mut len,
        )
    })?;
    Ok(value)
}

/// `getsockopt` into a byte buffer; returns how many bytes the kernel wrote.
pub(crate) fn getsockopt_bytes(
    fd: &impl AsRawFd,
    level: libc::c_int,
    name: libc::c_int,
    buf: &mut [u8],
) -> io::Result<usize> {
    let mut len = libc::socklen_t::try_from(buf.len()).unwrap_or(libc::socklen_t::MAX);
    // SAFETY: `buf` is valid for writes of `len` bytes (len <= buf.len()) and `len` is a
    // valid, initialised socklen_t the kernel updates.
    cvt(unsafe {
        libc::getsockopt(
            fd.as_raw_fd(),
            level,
            name,
            buf.as_mut_ptr().cast(),
            &mut len,
        )
    })?;
    Ok((len as usize).min(buf.len()))
}

/// Toggles `O_NONBLOCK`.
pub(crate) fn set_nonblocking(fd: &impl AsRawFd, nonblocking: bool) -> io::Result<()> {
    // SAFETY: fcntl(F_GETFL) takes no pointers.
    let flags = cvt(unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_GETFL) })?;
    let flags = if nonblocking {
        flags | libc::O_NONBLOCK
    } else {
        flags & !libc::O_NONBLOCK
    };
    // SAFETY: fcntl(F_SETFL) takes an int argument, no pointers.
    cvt(unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_SETFL, flags) })?;
    Ok(())
}

/// Sets `SO_RCVTIMEO` or `SO_SNDTIMEO`; `None` (or zero) means block forever.
pub(crate) fn set_timeout(
    fd: &impl AsRawFd,
    name: libc::c_int,
    timeout: Option<std::time::Duration>,
) -> io::Result<()> {
    let tv = match timeout {
        // A zero timeval means "no timeout" to the kernel; round tiny values up to 1 µs.
        Some(d) => libc::timeval {
            tv_sec: libc::time_t::try_from(d.as_secs()).unwrap_or(libc::time_t::MAX),
            tv_usec: match d.subsec_micros() {
                0 if d.as_secs() == 0 => 1,
                us => us as libc::suseconds_t,
            },
        },
        None => libc::timeval {
            tv_sec: 0,
            tv_usec: 0,
        },
    };
    setsockopt(fd, libc::SOL_SOCKET, name, &tv)
}

/// Sets a socket buffer size, trying the privileged `*FORCE` variant first (it
/// ignores `net.core.[rw]mem_max`) and falling back to the plain option when the
/// process lacks `CAP_NET_ADMIN`.
pub(crate) fn set_buffer_size(
    fd: &impl AsRawFd,
    force: libc::c_int,
    plain: libc::c_int,
    bytes: usize,
) -> io::Result<()> {
    let value = libc::c_int::try_from(bytes).unwrap_or(libc::c_int::MAX);
    match setsockopt_int(fd, libc::SOL_SOCKET, force, value) {
        Err(e) if e.raw_os_error() == Some(libc::EPERM) => {
            setsockopt_int(fd, libc::SOL_SOCKET, plain, value)
        }
        other => other,
    }
}

/// A socket address in the kernel's layout.
#[derive(Clone, Copy)]
pub(crate) struct SockAddr {
    storage: libc::sockaddr_storage,
    len: libc::socklen_t,
}

impl SockAddr {
    /// An empty address buffer for the kernel to fill (recvmsg, getsockname).
    pub(crate) fn empty() -> Self {
        Self {
            // SAFETY: sockaddr_storage is plain old data; all-zero is a valid value.
            storage: unsafe { zeroed() },
            len: size_of::<libc::sockaddr_storage>() as libc::socklen_t,
        }
    }

    /// Converts `addr`. `flowinfo` (host order, label and traffic class bits) is
    /// stored in `sin6_flowinfo` for IPv6 and ignored for IPv4.
    pub(crate) fn new(addr: SocketAddr, flowinfo: u32) -> Self {
        let mut out = Self::empty();
        match addr {
            SocketAddr::V4(a) => {
                let sin = libc::sockaddr_in {
                    sin_family: libc::AF_INET as libc::sa_family_t,
                    sin_port: a.port().to_be(),
                    sin_addr: libc::in_addr {
                        s_addr: u32::from_ne_bytes(a.ip().octets()),
                    },
                    sin_zero: [0; 8],
                };
                // SAFETY: sockaddr_storage is larger than and suitably aligned for
                // sockaddr_in; we write one whole, valid value into it.
                unsafe {
                    std::ptr::write(
                        (&mut out.storage as *mut libc::sockaddr_storage).cast(),
                        sin,
                    )
                };
                out.len = size_of::<libc::sockaddr_in>() as libc::socklen_t;
            }
            SocketAddr::V6(a) => {
                let sin6 = libc::sockaddr_in6 {
                    sin6_family: libc::AF_INET6 as libc::sa_family_t,
                    sin6_port: a.port().to_be(),
                    sin6_flowinfo: flowinfo.to_be(),
                    sin6_addr: libc::in6_addr {
                        s6_addr: a.ip().octets(),
                    },
                    sin6_scope_id: a.scope_id(),
                };
                // SAFETY: as above, for sockaddr_in6.
                unsafe {
                    std::ptr::write(
                        (&mut out.storage as *mut libc::sockaddr_storage).cast(),
                        sin6,
                    )
                };
                out.len = size_of::<libc::sockaddr_in6>() as libc::socklen_t;
            }
        }
        out
    }

    pub(crate) fn as_ptr(&self) -> *const libc::sockaddr {
        (&self.storage as *const libc::sockaddr_storage).cast()
    }

    pub(crate) fn as_mut_ptr(&mut self) -> *mut libc::sockaddr {
        (&mut self.storage as *mut libc::sockaddr_storage).cast()
    }

    pub(crate) fn len(&self) -> libc::socklen_t {
        self.len
    }

    pub(crate) fn len_mut(&mut self) -> &mut libc::socklen_t {
        &mut self.len
    }

    /// Converts back to std. v4-mapped IPv6 addresses come back as plain IPv4;
    /// `None` for an unknown family or a short length.
    pub(crate) fn to_std(self) -> Option<SocketAddr> {
        match libc::c_int::from(self.storage.ss_family) {
            libc::AF_INET if self.len as usize >= size_of::<libc::sockaddr_in>() => {
                // SAFETY: the family says the storage holds a sockaddr_in, the length
                // covers it, and sockaddr_storage is aligned for it.
                let sin: libc::sockaddr_in = unsafe { std::ptr::read(self.as_ptr().cast()) };
                let ip = Ipv4Addr::from(sin.sin_addr.s_addr.to_ne_bytes());
                Some(SocketAddr::V4(SocketAddrV4::new(
                    ip,
                    u16::from_be(sin.sin_port),
                )))
            }
            libc::AF_INET6 if self.len as usize >= size_of::<libc::sockaddr_in6>() => {
                // SAFETY: as above, for sockaddr_in6.
                let sin6: libc::sockaddr_in6 = unsafe { std::ptr::read(self.as_ptr().cast()) };
                let ip = Ipv6Addr::from(sin6.sin6_addr.s6_addr);
                let port = u16::from_be(sin6.sin6_port);
                Some(match ip.to_ipv4_mapped() {
                    Some(v4) => SocketAddr::V4(SocketAddrV4::new(v4, port)),
                    None => SocketAddr::V6(SocketAddrV6::new(
                        ip,
                        port,
                        u32::from_be(sin6.sin6_flowinfo),
                        sin6.sin6_scope_id,
                    )),
                })
            }
            _ => None,
        }
    }
}

/// `getsockname`, unmapping v4-mapped addresses.
pub(crate) fn local_addr(fd: &impl AsRawFd) -> io::Result<SocketAddr> {
    let mut addr = SockAddr::empty();
    // SAFETY: `addr` provides a sockaddr_storage-sized buffer and its length.
    cvt(unsafe { libc::getsockname(fd.as_raw_fd(), addr.as_mut_ptr(), addr.len_mut()) })?;
    addr.to_std()
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidData, "unknown address family"))
}

/// Expresses `dst` in the address family of a socket: a plain IPv4 address is
/// mapped (`::ffff:a.b.c.d`) for an IPv6 socket, and a v4-mapped address is
/// unmapped for an IPv4 socket. A real IPv6 address on an IPv4 socket is an error.
pub(crate) fn for_family(family: Family, dst: SocketAddr) -> io::Result<SocketAddr> {
    match (family, dst) {
        (Family::V6, SocketAddr::V4(a)) => Ok(SocketAddr::V6(SocketAddrV6::new(
            a.ip().to_ipv6_mapped(),
            a.port(),
            0,
            0,
        ))),
        (Family::V4, SocketAddr::V6(a)) => match a.ip().to_ipv4_mapped() {
            Some(v4) => Ok(SocketAddr::V4(SocketAddrV4::new(v4, a.port()))),
            None => Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("IPv6 destination {} on an IPv4 socket", a.ip()),
            )),
        },
        _ => Ok(dst),
    }
}

/// Whether packets to `dst` travel as IPv4 (a plain or v4-mapped address).
pub(crate) fn is_ipv4_path(dst: &SocketAddr) -> bool {
    match dst {
        SocketAddr::V4(_) => true,
        SocketAddr::V6(a) => a.ip().to_ipv4_mapped().is_some(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sockaddr_round_trips_v4_and_v6() {
        let v4: SocketAddr = "127.0.0.1:4242".parse().unwrap();
        assert_eq!(SockAddr::new(v4, 0).to_std(), Some(v4));
        let v6: SocketAddr = "[::1]:4242".parse().unwrap();
        assert_eq!(SockAddr::new(v6, 0).to_std(), Some(v6));
    }

    #[test]
    fn sockaddr_keeps_flowinfo_in_network_order() {
        let v6: SocketAddr = "[::1]:1".parse().unwrap();
        let sa = SockAddr::new(v6, 0x12345);
        // SAFETY: `sa` was built from a V6 address, so it holds a sockaddr_in6.
        let sin6: libc::sockaddr_in6 = unsafe { std::ptr::read(sa.as_ptr().cast()) };
        assert_eq!(sin6.sin6_flowinfo, 0x12345u32.to_be());
    }

    #[test]
    fn v4_mapped_unmaps_on_the_way_back() {
        let mapped: SocketAddr = "[::ffff:127.0.0.1]:9".parse().unwrap();
        let plain: SocketAddr = "127.0.0.1:9".parse().unwrap();
        assert_eq!(SockAddr::new(mapped, 0).to_std(), Some(plain));
    }

    #[test]
    fn for_family_maps_and_unmaps() {
        let plain: SocketAddr = "127.0.0.1:9".parse().unwrap();
        let mapped: SocketAddr = "[::ffff:127.0.0.1]:9".parse().unwrap();
        assert_eq!(for_family(Family::V6, plain).unwrap(), mapped);
        assert_eq!(for_family(Family::V4, mapped).unwrap(), plain);
        assert!(for_family(Family::V4, "[::1]:9".parse().unwrap()).is_err());
        assert!(is_ipv4_path(&mapped));
        assert!(!is_ipv4_path(&"[::1]:9".parse().unwrap()));
    }
}
