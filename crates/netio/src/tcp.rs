//! TCP helpers over `std::net::TcpStream` / `TcpListener`: marked connects,
//! dual-stack listeners, and the header fields of received segments.
//!
//! # What Linux reports about received TCP segments
//! TCP has no per-segment `recvmsg` metadata; the kernel keeps a copy of some
//! header fields per socket, read back with `getsockopt(IP_PKTOPTIONS)` or
//! `getsockopt(IPV6_2292PKTOPTIONS)` as a cmsg sequence. Found on Linux 6.x
//! over loopback (`tests/tests.rs` asserts all of this):
//!
//! | | IPv6 | IPv4, and v4-mapped on a dual-stack socket |
//! |---|---|---|
//! | DS byte / traffic class | last in-order segment | once, from the packet that completed the handshake |
//! | TTL / hop limit | last in-order segment | once, same packet |
//! | flow label | last in-order segment | — |
//! | on the connecting side | same as accepted | meaningless: TOS 0, TTL 1 (the multicast TTL) |
//!
//! - **IPv6** (`IPV6_RECVTCLASS`, `IPV6_RECVHOPLIMIT`, `IPV6_FLOWINFO`): the
//!   kernel refreshes traffic class, hop limit and flow label from every
//!   in-order segment (data or pure ACK) once the options are on, on accepted
//!   and connecting sockets alike. Values change when the peer re-marks.
//!   Enabling the options on the listener ([`enable_recv_meta_listener`])
//!   makes accepted sockets inherit them and start with the handshake's values.
//! - **IPv4** (`IP_RECVTOS`, `IP_RECVTTL`): `inet->rcv_tos` and
//!   `inet->mc_ttl` are written once, in `tcp_v4_syn_recv_sock`, from the
//!   segment that turns the request into an accepted socket (the client's
//!   handshake ACK); later re-marking by the peer is not seen. A socket that called `connect` never gets them: it
//!   reports TOS 0 and TTL 1 (its multicast TTL). [`TcpRecvMeta::handshake_only`]
//!   is set for this family. Per-segment IPv4 values need a packet capture.
//! - **v4-mapped** peers of a dual-stack `AF_INET6` socket are handled by the
//!   IPv4 code, so they behave like IPv4 (`IP_PKTOPTIONS` works on the
//!   `AF_INET6` socket).
//! - **ECN bits**: TCP owns them. A `tos` of `0xB9` goes out as `0xB8` when
//!   ECN was not negotiated (the default `net.ipv4.tcp_ecn=2` only answers
//!   ECN requests), on both families.
//! - **Flow label of the accepting side**: fixed at `connect` in Linux, so an
//!   accepted socket sends the automatic, hash-derived label
//!   (`net.ipv6.auto_flowlabels=1`) and [`set_marking`] cannot change it.
//! - **Echo marking**: [`set_marking`] on the accepted socket sets the DS byte
//!   and TTL of everything it sends from then on. (The host-wide sysctl
//!   `net.ipv4.tcp_reflect_tos` would instead copy the SYN's DSCP to every
//!   accepted socket; we leave it alone.)

use std::io;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::fd::{AsRawFd, OwnedFd};
use std::time::Duration;

use crate::clock;
use crate::cmsg::{self, Cmsg};
use crate::marking::{self, Marking, MarkingError};
use crate::sys::{self, cvt, Family, SockAddr};

/// Header fields of the most recently received segment, as far as Linux
/// keeps them (see the module docs for what each family provides).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TcpRecvMeta {
    /// DS byte / traffic class.
    pub tos: Option<u8>,
    /// TTL / hop limit.
    pub hop_limit: Option<u8>,
    /// IPv6 flow label.
    pub flow_label: Option<u32>,
    /// The values are the handshake's, not the last segment's (IPv4 and
    /// v4-mapped; and there only meaningful on an accepted socket).
    pub handshake_only: bool,
}

/// Opens a TCP connection with `marking` applied *before* `connect`, so the
/// SYN already carries it: `IP_TOS`/`IPV6_TCLASS`, `IP_TTL`/
/// `IPV6_UNICAST_HOPS`, and a flow label (lease, `IPV6_FLOWINFO_SEND`, label in
/// `sin6_flowinfo`). Optionally `TCP_NODELAY` and a congestion control
/// algorithm (`TCP_CONGESTION`, e.g. `"cubic"`, `"reno"`, `"bbr"`; it must be
/// loaded and, for unprivileged users, listed in
/// `net.ipv4.tcp_allowed_congestion_control`).
///
/// A v4-mapped `dst` is connected over an IPv4 socket. `timeout` bounds the
/// handshake (`TimedOut`); the returned stream is blocking.
pub fn connect(
    dst: SocketAddr,
    marking: &Marking,
    nodelay: bool,
    congestion: Option<&str>,
    timeout: Duration,
) -> io::Result<TcpStream> {
    let ipv4_path = sys::is_ipv4_path(&dst);
    let family = if ipv4_path { Family::V4 } else { Family::V6 };
    let dst = sys::for_family(family, dst)?;
    marking.check(ipv4_path)?;
    let fd = sys::socket(family, libc::SOCK_STREAM)?;
    marking::apply_tos_ttl(&fd, ipv4_path, marking)?;
    let flowinfo = match (dst, marking.flow_label) {
        (SocketAddr::V6(a), Some(label)) => {
            marking::prepare_flow_label(&fd, family, *a.ip(), label)?
        }
        _ => 0,
    };
    if nodelay {
        sys::setsockopt_int(&fd, libc::IPPROTO_TCP, libc::TCP_NODELAY, 1)?;
    }
    if let Some(name) = congestion {
        set_congestion(&fd, name)?;
    }
    connect_timeout(&fd, &SockAddr::new(dst, flowinfo), timeout)?;
    Ok(TcpStream::from(fd))
}

/// A listener with `SO_REUSEADDR` on `addr`. For IPv6, `IPV6_V6ONLY` is set
/// to `!dual_stack`; `[::]:port` with `dual_stack` accepts IPv4 too (peers
/// appear as v4-mapped addresses).
pub fn listen(addr: SocketAddr, dual_stack: bool) -> io::Result<TcpListener> {
    listen_with_backlog(addr, dual_stack, 1024)
}

/// [`listen`] with an explicit accept backlog. With `backlog` 0 Linux queues one
/// connection; once it sits unaccepted, further SYNs are dropped and their
/// `connect` hangs in SYN retransmission: a stalled server, on loopback, for
/// testing fallback (`dualperf interop`'s Happy Eyeballs).
pub fn listen_with_backlog(
    addr: SocketAddr,
    dual_stack: bool,
    backlog: i32,
) -> io::Result<TcpListener> {
    let family = Family::of(&addr);
    let fd = sys::socket(family, libc::SOCK_STREAM)?;
    sys::setsockopt_int(&fd, libc::SOL_SOCKET, libc::SO_REUSEADDR, 1)?;
    if family == Family::V6 {
        let v6only = libc::c_int::from(!dual_stack);
        sys::setsockopt_int(&fd, libc::IPPROTO_IPV6, libc::IPV6_V6ONLY, v6only)?;
    }
    let sa = SockAddr::new(addr, 0);
    // SAFETY: `sa` holds a valid sockaddr of the stated length.
    cvt(unsafe { libc::bind(fd.as_raw_fd(), sa.as_ptr(), sa.len()) })?;
    // SAFETY: listen(2) takes no pointers.
    cvt(unsafe { libc::listen(fd.as_raw_fd(), backlog) })?;
    Ok(TcpListener::from(fd))
}

/// Marking on an established (typically accepted) socket, for echoes on
/// round-trip flows: DS byte and TTL / hop limit of the path family (IPv4 for
/// a v4-mapped peer on an `AF_INET6` socket).
///
/// Linux fixes a TCP socket's flow label at `connect` (or takes the peer's
/// with `IPV6_FL_F_REFLECT`, which needs `net.ipv6.flowlabel_consistency=0`),
/// so a non-zero `flow_label` is refused with
/// [`MarkingError::FlowLabelAfterConnect`] before anything is changed.
/// `Some(0)` switches automatic labels off, which does apply at once.
///
/// For TCP the kernel keeps the ECN bits of the DS byte to itself: they follow
/// ECN negotiation, not `tos`.
pub fn set_marking(stream: &TcpStream, marking: &Marking) -> io::Result<()> {
    let ipv4_path = peer_is_ipv4(stream)?;
    marking.check(ipv4_path)?;
    match marking.flow_label {
        Some(0) | None => {}
        Some(_) => return Err(MarkingError::FlowLabelAfterConnect.into()),
    }
    marking::apply_tos_ttl(stream, ipv4_path, marking)?;
    if marking.flow_label == Some(0) {
        sys::setsockopt_int(stream, libc::IPPROTO_IPV6, libc::IPV6_AUTOFLOWLABEL, 0)?;
    }
    Ok(())
}

/// Enables what [`last_recv_meta`] reads: `IP_RECVTOS` and `IP_RECVTTL`
/// (IPv4, and v4-mapped peers of an `AF_INET6` socket), and on an `AF_INET6`
/// socket also `IPV6_RECVTCLASS`, `IPV6_RECVHOPLIMIT` and `IPV6_FLOWINFO`.
///
/// The price on IPv6: the kernel keeps a clone of the last segment received
/// (`np->pktoptions`, what `IPV6_2292PKTOPTIONS` returns), charged to the
/// receive buffer until the next segment replaces it. On loopback a segment
/// carries up to 64 KB, so the clone can hold most of the default 128 KiB
/// buffer; when what is left is under one MSS the receiver advertises a zero
/// window (its silly-window avoidance), no segment comes to replace the clone,
/// and the connection stalls for good. A stream that receives bulk data with
/// this enabled needs a larger buffer: [`set_recv_buffer`].
pub fn enable_recv_meta(stream: &TcpStream) -> io::Result<()> {
    enable_on(stream)
}

/// Sets the receive buffer (`SO_RCVBUFFORCE`, or `SO_RCVBUF` without
/// CAP_NET_ADMIN; the kernel doubles the value for its bookkeeping). This also
/// ends the kernel's autotuning of the buffer for this socket.
pub fn set_recv_buffer(stream: &TcpStream, bytes: usize) -> io::Result<()> {
    sys::set_buffer_size(stream, libc::SO_RCVBUFFORCE, libc::SO_RCVBUF, bytes)
}

/// The receive buffer the kernel granted (`SO_RCVBUF`, doubled as it keeps it).
pub fn recv_buffer(stream: &TcpStream) -> io::Result<usize> {
    sys::getsockopt_int(stream, libc::SOL_SOCKET, libc::SO_RCVBUF).map(|v| v.max(0) as usize)
}

/// Like [`enable_recv_meta`] on a listener: accepted sockets inherit it, and
/// for IPv6 they then also start out with the SYN's header fields.
pub fn enable_recv_meta_listener(listener: &TcpListener) -> io::Result<()> {
    enable_on(listener)
}

/// Header fields of the most recently received segment, read with
/// `getsockopt(IP_PKTOPTIONS)` (IPv4 and v4-mapped peers) or
/// `getsockopt(IPV6_2292PKTOPTIONS)` (IPv6). Fields are `None` until
/// [`enable_recv_meta`] (or [`enable_recv_meta_listener`] before `accept`).
/// See the module docs for what each family really provides.
pub fn last_recv_meta(stream: &TcpStream) -> io::Result<TcpRecvMeta> {
    let ipv4_path = peer_is_ipv4(stream)?;
    let (level, name) = if ipv4_path {
        (libc::IPPROTO_IP, libc::IP_PKTOPTIONS)
    } else {
        (libc::IPPROTO_IPV6, libc::IPV6_2292PKTOPTIONS)
    };
    let mut buf = cmsg::Buf::new();
    let len = sys::getsockopt_bytes(stream, level, name, &mut buf.0)?;
    // SAFETY: msghdr is plain old data; all-zero is valid.
    let mut hdr: libc::msghdr = unsafe { std::mem::zeroed() };
    hdr.msg_control = buf.0.as_mut_ptr().cast();
    hdr.msg_controllen = len as _;
    let mut meta = TcpRecvMeta {
        handshake_only: ipv4_path,
        ..TcpRecvMeta::default()
    };
    for item in cmsg::Decoder::new(&hdr) {
        match item {
            Cmsg::Tos(v) | Cmsg::TrafficClass(v) => meta.tos = Some(v),
            Cmsg::Ttl(v) | Cmsg::HopLimit(v) => meta.hop_limit = Some(v),
            Cmsg::FlowInfo(v) => meta.flow_label = Some(v & marking::FLOW_LABEL_MAX),
            Cmsg::TimestampNs(_) | Cmsg::PktInfoV4 { .. } | Cmsg::PktInfoV6(_) => {}
        }
    }
    if !ipv4_path && meta.tos.is_some() {
        // The kernel leaves out IPV6_FLOWINFO when the whole field is 0.
        meta.flow_label = meta.flow_label.or(Some(0));
    }
    Ok(meta)
}

/// The connection's congestion control algorithm (`TCP_CONGESTION`).
pub fn congestion(stream: &TcpStream) -> io::Result<String> {
    // TCP_CA_NAME_MAX is 16.
    let mut buf = [0u8; 16];
    let len = sys::getsockopt_bytes(stream, libc::IPPROTO_TCP, libc::TCP_CONGESTION, &mut buf)?;
    let name = buf[..len].split(|&b| b == 0).next().unwrap_or_default();
    Ok(String::from_utf8_lossy(name).into_owned())
}

fn enable_on(fd: &impl AsRawFd) -> io::Result<()> {
    let on = |level, name| sys::setsockopt_int(fd, level, name, 1);
    on(libc::IPPROTO_IP, libc::IP_RECVTOS)?;
    on(libc::IPPROTO_IP, libc::IP_RECVTTL)?;
    if socket_family(fd)? == Family::V6 {
        on(libc::IPPROTO_IPV6, libc::IPV6_RECVTCLASS)?;
        on(libc::IPPROTO_IPV6, libc::IPV6_RECVHOPLIMIT)?;
        on(libc::IPPROTO_IPV6, libc::IPV6_FLOWINFO)?;
    }
    Ok(())
}

fn socket_family(fd: &impl AsRawFd) -> io::Result<Family> {
    match sys::getsockopt_int(fd, libc::SOL_SOCKET, libc::SO_DOMAIN)? {
        libc::AF_INET => Ok(Family::V4),
        libc::AF_INET6 => Ok(Family::V6),
        other => Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("not an IP socket (domain {other})"),
        )),
    }
}

/// Whether the connection runs over IPv4 (an `AF_INET` socket, or an
/// `AF_INET6` one with a v4-mapped peer).
fn peer_is_ipv4(stream: &TcpStream) -> io::Result<bool> {
    Ok(match socket_family(stream)? {
        Family::V4 => true,
        Family::V6 => sys::is_ipv4_path(&stream.peer_addr()?),
    })
}

fn set_congestion(fd: &OwnedFd, name: &str) -> io::Result<()> {
    let len = libc::socklen_t::try_from(name.len()).map_err(|_| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            "congestion control name too long",
        )
    })?;
    // SAFETY: `name` is valid for reads of `len` bytes; TCP_CONGESTION takes a
    // (not necessarily NUL-terminated) string of that length.
    cvt(unsafe {
        libc::setsockopt(
            fd.as_raw_fd(),
            libc::IPPROTO_TCP,
            libc::TCP_CONGESTION,
            name.as_ptr().cast(),
            len,
        )
    })
    .map_err(|e| io::Error::new(e.kind(), format!("TCP_CONGESTION {name:?}: {e}")))?;
    Ok(())
}

/// Non-blocking connect, `poll` for writability until `timeout`, then back to
/// blocking.
fn connect_timeout(fd: &OwnedFd, addr: &SockAddr, timeout: Duration) -> io::Result<()> {
    sys::set_nonblocking(fd, true)?;
    // SAFETY: `addr` holds a valid sockaddr of the stated length.
    let ret = unsafe { libc::connect(fd.as_raw_fd(), addr.as_ptr(), addr.len()) };
    match cvt(ret) {
        Ok(_) => {}
        Err(e) if e.raw_os_error() == Some(libc::EINPROGRESS) => wait_connected(fd, timeout)?,
        Err(e) => return Err(e),
    }
    sys::set_nonblocking(fd, false)
}

fn wait_connected(fd: &OwnedFd, timeout: Duration) -> io::Result<()> {
    let deadline =
        clock::mono_ns().saturating_add(u64::try_from(timeout.as_nanos()).unwrap_or(u64::MAX));
    loop {
        let left_ns = deadline.saturating_sub(clock::mono_ns());
        if left_ns == 0 {
            return Err(io::Error::new(
                io::ErrorKind::TimedOut,
                "TCP connect timed out",
            ));
        }
        let left_ms =
            libc::c_int::try_from(left_ns.div_ceil(1_000_000)).unwrap_or(libc::c_int::MAX);
        let mut pfd = libc::pollfd {
            fd: fd.as_raw_fd(),
            events: libc::POLLOUT,
            revents: 0,
        };
        // SAFETY: one valid pollfd.
        match cvt(unsafe { libc::poll(&mut pfd, 1, left_ms) }) {
            Ok(0) => continue,
            Ok(_) => break,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        }
    }
    match sys::getsockopt_int(fd, libc::SOL_SOCKET, libc::SO_ERROR)? {
        0 => Ok(()),
        errno => Err(io::Error::from_raw_os_error(errno)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn connect_to_closed_port_is_refused() {
        // Bind then drop a listener to find a port that is closed.
        let port = listen("127.0.0.1:0".parse().unwrap(), false)
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let dst = SocketAddr::from(([127, 0, 0, 1], port));
        let err = connect(
            dst,
            &Marking::default(),
            false,
            None,
            Duration::from_secs(2),
        )
        .unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::ConnectionRefused);
    }

    #[test]
    fn unknown_congestion_control_is_an_error() {
        let l = listen("127.0.0.1:0".parse().unwrap(), false).unwrap();
        let dst = l.local_addr().unwrap();
        let err = connect(
            dst,
            &Marking::default(),
            true,
            Some("no-such-cc"),
            Duration::from_secs(2),
        )
        .unwrap_err();
        assert!(err.to_string().contains("no-such-cc"), "{err}");
    }

    #[test]
    fn flow_label_on_established_socket_is_refused() {
        let l = listen("[::1]:0".parse().unwrap(), false).unwrap();
        let s = connect(
            l.local_addr().unwrap(),
            &Marking::default(),
            false,
            None,
            Duration::from_secs(2),
        )
        .unwrap();
        let m = Marking {
            flow_label: Some(5),
            ..Marking::default()
        };
        let err = set_marking(&s, &m).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::Unsupported);
    }
}
