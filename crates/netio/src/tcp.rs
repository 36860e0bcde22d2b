//! TCP helpers over `std::net::TcpStream` / `TcpListener`: marked connects,
//! dual-stack listeners, the header fields of received segments, and the
//! connection's state as `TCP_INFO` reports it ([`tcp_info`]).
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
    connect_from(dst, None, marking, nodelay, congestion, timeout)
}

/// [`connect`] from source port `src_port` (iperf3's `--cport`), when given: the
/// socket is bound to it, on the unspecified address of its family, before `connect`.
/// `SO_REUSEADDR` is set first, so a port whose last connection to the same peer
/// lingers in `TIME_WAIT` can be bound again, as the last run's was; a port that
/// another socket holds fails with `AddrInUse` (bound, listening) or, for the same
/// peer, `AddrNotAvailable` (the 4-tuple is taken), both naming the port.
pub fn connect_from(
    dst: SocketAddr,
    src_port: Option<u16>,
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
    if let Some(port) = src_port {
        bind_port(&fd, family, port)?;
    }
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
    connect_timeout(&fd, &SockAddr::new(dst, flowinfo), timeout).map_err(|e| match src_port {
        Some(port) if e.kind() == io::ErrorKind::AddrNotAvailable => io::Error::new(
            e.kind(),
            format!("source port {port} to {dst} is taken by another connection: {e}"),
        ),
        _ => e,
    })?;
    Ok(TcpStream::from(fd))
}

/// Binds `fd` to `port` on the unspecified address of `family`, with `SO_REUSEADDR`.
fn bind_port(fd: &OwnedFd, family: Family, port: u16) -> io::Result<()> {
    sys::setsockopt_int(fd, libc::SOL_SOCKET, libc::SO_REUSEADDR, 1)?;
    let any: std::net::IpAddr = match family {
        Family::V4 => std::net::Ipv4Addr::UNSPECIFIED.into(),
        Family::V6 => std::net::Ipv6Addr::UNSPECIFIED.into(),
    };
    let sa = SockAddr::new(SocketAddr::new(any, port), 0);
    // SAFETY: `sa` holds a valid sockaddr of the stated length.
    cvt(unsafe { libc::bind(fd.as_raw_fd(), sa.as_ptr(), sa.len()) })
        .map(drop)
        .map_err(|e| io::Error::new(e.kind(), format!("bind to source port {port}: {e}")))
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

/// Sets the send buffer (`SO_SNDBUFFORCE`, or `SO_SNDBUF` without CAP_NET_ADMIN; the
/// kernel doubles the value). This also ends the kernel's autotuning of the send buffer.
pub fn set_send_buffer(stream: &TcpStream, bytes: usize) -> io::Result<()> {
    sys::set_buffer_size(stream, libc::SO_SNDBUFFORCE, libc::SO_SNDBUF, bytes)
}

/// Caps the connection's pacing rate (`SO_MAX_PACING_RATE`, bytes per second of
/// segments with their headers). Since Linux 4.13 TCP paces by itself when no fq qdisc
/// does (`tcp_internal_pacing`), and setting the cap turns that pacing on.
pub fn set_max_pacing_rate(stream: &TcpStream, bytes_per_s: u64) -> io::Result<()> {
    sys::setsockopt(
        stream,
        libc::SOL_SOCKET,
        libc::SO_MAX_PACING_RATE,
        &bytes_per_s,
    )
}

/// Sets the least a read waits for (`SO_RCVLOWAT`; a read still returns less at the
/// end of the stream or at its timeout). Linux caps it at half the receive buffer.
pub fn set_recv_lowat(stream: &TcpStream, bytes: usize) -> io::Result<()> {
    let bytes = i32::try_from(bytes).unwrap_or(i32::MAX);
    sys::setsockopt_int(stream, libc::SOL_SOCKET, libc::SO_RCVLOWAT, bytes)
}

/// The send buffer the kernel granted (`SO_SNDBUF`, doubled as it keeps it).
pub fn send_buffer(stream: &TcpStream) -> io::Result<usize> {
    sys::getsockopt_int(stream, libc::SOL_SOCKET, libc::SO_SNDBUF).map(|v| v.max(0) as usize)
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
            Cmsg::TimestampNs(_)
            | Cmsg::PktInfoV4 { .. }
            | Cmsg::PktInfoV6(_)
            | Cmsg::GroSize(_) => {}
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

/// What the kernel reports about a TCP connection (`getsockopt(IPPROTO_TCP,
/// TCP_INFO)`): the fields of Linux `struct tcp_info`
/// (include/uapi/linux/tcp.h) a sender's report uses, with the kernel's units
/// in their names. Read at explicit byte offsets, as glibc's and the `libc`
/// crate's `tcp_info` stop before the newer fields; the struct only grows at
/// its end, so a field the kernel did not return (an older kernel, which
/// returns a shorter struct) is `None`. The fields up to `tcpi_total_retrans`
/// (104 bytes, Linux 2.6) are always there.
///
/// Sentinels are passed on as the kernel gives them (see each field).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TcpInfo {
    /// `tcpi_state` @0: the `TCP_*` state (1 = ESTABLISHED).
    pub state: u8,
    /// `tcpi_snd_mss` @16: the current sending MSS, bytes (what a segment of
    /// `snd_cwnd_segments` counts).
    pub snd_mss_bytes: u32,
    /// `tcpi_retrans` @36: segments retransmitted and not yet acknowledged
    /// (now in flight), not a running count.
    pub retrans_segments: u32,
    /// `tcpi_pmtu` @60: the path MTU, bytes.
    pub pmtu_bytes: u32,
    /// `tcpi_rtt` @68: the smoothed RTT (RFC 6298's SRTT, `srtt_us >> 3`), µs;
    /// 0 before the first RTT sample.
    pub srtt_us: u32,
    /// `tcpi_rttvar` @72: the RTT's mean deviation (`mdev_us >> 2`, RFC
    /// 6298's RTTVAR), µs.
    pub rttvar_us: u32,
    /// `tcpi_snd_ssthresh` @76: slow-start threshold, segments
    /// (`TCP_INFINITE_SSTHRESH`, 0x7fffffff, while slow start has not ended).
    pub snd_ssthresh_segments: u32,
    /// `tcpi_snd_cwnd` @80: the congestion window, segments.
    pub snd_cwnd_segments: u32,
    /// `tcpi_total_retrans` @100: segments retransmitted over the
    /// connection's life (`tp->total_retrans`; iperf3's Retr is its change).
    pub total_retrans_segments: u32,
    /// `tcpi_pacing_rate` @104 (Linux 3.15): the pacing rate, bytes/s;
    /// `u64::MAX` while unlimited.
    pub pacing_rate_bytes_per_s: Option<u64>,
    /// `tcpi_max_pacing_rate` @112 (Linux 3.15): `SO_MAX_PACING_RATE`,
    /// bytes/s; `u64::MAX` when not set.
    pub max_pacing_rate_bytes_per_s: Option<u64>,
    /// `tcpi_bytes_acked` @120 (Linux 4.1): bytes acknowledged (RFC 4898
    /// tcpEStatsAppHCThruOctetsAcked).
    pub bytes_acked: Option<u64>,
    /// `tcpi_min_rtt` @148 (Linux 4.6): the least RTT seen over a window
    /// (`tcp_min_rtt`), µs; `u32::MAX` before any sample.
    pub min_rtt_us: Option<u32>,
    /// `tcpi_delivery_rate` @160 (Linux 4.9): the most recent delivery rate
    /// sample (data acknowledged per interval, as BBR estimates bandwidth),
    /// bytes/s; 0 before any sample.
    pub delivery_rate_bytes_per_s: Option<u64>,
    /// `tcpi_delivery_rate_app_limited`, bit 0 of byte 7 (Linux 4.9): the
    /// sender ran out of data in the delivery rate's sample, so the rate is
    /// a lower bound of what the path delivers.
    pub delivery_rate_app_limited: Option<bool>,
    /// `tcpi_bytes_sent` @200 (Linux 4.19): bytes transmitted, retransmissions
    /// included (RFC 4898 tcpEStatsPerfHCDataOctetsOut).
    pub bytes_sent: Option<u64>,
    /// `tcpi_bytes_retrans` @208 (Linux 4.19): bytes retransmitted (RFC 4898
    /// tcpEStatsPerfOctetsRetrans).
    pub bytes_retrans: Option<u64>,
    /// `tcpi_snd_wnd` @228 (Linux 5.4): the peer's advertised receive window,
    /// bytes.
    pub snd_wnd_bytes: Option<u32>,
}

/// Why a `TCP_INFO` buffer does not read as a [`TcpInfo`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TcpInfoError {
    /// Shorter than the fields every Linux since 2.6 returns.
    #[error("TCP_INFO returned {len} bytes, fewer than the {TCP_INFO_MIN_LEN} of Linux 2.6's struct tcp_info")]
    Short {
        /// Bytes returned.
        len: usize,
    },
}

impl From<TcpInfoError> for io::Error {
    fn from(e: TcpInfoError) -> Self {
        Self::new(io::ErrorKind::InvalidData, e)
    }
}

/// Bytes of `struct tcp_info` up to and including `tcpi_total_retrans`.
pub const TCP_INFO_MIN_LEN: usize = 104;

/// Bytes of `struct tcp_info` this crate reads: up to and including
/// `tcpi_snd_wnd` (Linux 5.4). Newer kernels return more; the rest is not read.
pub const TCP_INFO_READ_LEN: usize = 232;

impl TcpInfo {
    /// Reads the kernel's `struct tcp_info` (native byte order) from the
    /// first `buf.len()` bytes `getsockopt` returned. Never panics: fields
    /// past the end are `None`; a buffer shorter than [`TCP_INFO_MIN_LEN`] is
    /// [`TcpInfoError::Short`].
    pub fn parse(buf: &[u8]) -> Result<Self, TcpInfoError> {
        if buf.len() < TCP_INFO_MIN_LEN {
            return Err(TcpInfoError::Short { len: buf.len() });
        }
        let u32_at = |at: usize| -> Option<u32> {
            let b = buf.get(at..at + 4)?;
            Some(u32::from_ne_bytes([b[0], b[1], b[2], b[3]]))
        };
        let u64_at = |at: usize| -> Option<u64> {
            let b = buf.get(at..at + 8)?;
            let mut a = [0u8; 8];
            a.copy_from_slice(b);
            Some(u64::from_ne_bytes(a))
        };
        // Within TCP_INFO_MIN_LEN, checked above.
        let base = |at: usize| u32_at(at).unwrap_or(0);
        let delivery_rate = u64_at(160);
        Ok(Self {
            state: buf[0],
            snd_mss_bytes: base(16),
            retrans_segments: base(36),
            pmtu_bytes: base(60),
            srtt_us: base(68),
            rttvar_us: base(72),
            snd_ssthresh_segments: base(76),
            snd_cwnd_segments: base(80),
            total_retrans_segments: base(100),
            pacing_rate_bytes_per_s: u64_at(104),
            max_pacing_rate_bytes_per_s: u64_at(112),
            bytes_acked: u64_at(120),
            min_rtt_us: u32_at(148),
            delivery_rate_bytes_per_s: delivery_rate,
            // The bit is in the struct's head, but only kernels that report the
            // delivery rate (4.9) define it.
            delivery_rate_app_limited: delivery_rate.map(|_| buf[7] & 1 == 1),
            bytes_sent: u64_at(200),
            bytes_retrans: u64_at(208),
            snd_wnd_bytes: u32_at(228),
        })
    }

    /// The congestion window in bytes, `snd_cwnd × snd_mss`: iperf3's Cwnd
    /// (`get_snd_cwnd` in its src/tcp_info.c).
    pub fn cwnd_bytes(&self) -> u64 {
        u64::from(self.snd_cwnd_segments) * u64::from(self.snd_mss_bytes)
    }
}

/// The connection's [`TcpInfo`] (`getsockopt(IPPROTO_TCP, TCP_INFO)`). Works
/// in every state, also after `shutdown` and on a `dup` of the socket.
pub fn tcp_info(stream: &impl AsRawFd) -> io::Result<TcpInfo> {
    let mut buf = [0u8; TCP_INFO_READ_LEN];
    let len = sys::getsockopt_bytes(stream, libc::IPPROTO_TCP, libc::TCP_INFO, &mut buf)?;
    Ok(TcpInfo::parse(&buf[..len])?)
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

/// `SO_ZEROCOPY` (include/uapi/asm-generic/socket.h, Linux 4.14; the value of every
/// architecture but alpha, mips, parisc and sparc, which dualperf does not build for).
const SO_ZEROCOPY: libc::c_int = 60;
/// `SO_EE_ORIGIN_ZEROCOPY` (include/uapi/linux/errqueue.h).
const SO_EE_ORIGIN_ZEROCOPY: u8 = 5;
/// `SO_EE_CODE_ZEROCOPY_COPIED` (include/uapi/linux/errqueue.h): the kernel copied the
/// data after all (a device without scatter-gather, or loopback, where the receiver's
/// socket gets the pages).
const SO_EE_CODE_ZEROCOPY_COPIED: u8 = 1;

/// Allows `MSG_ZEROCOPY` sends on the socket (`SO_ZEROCOPY`,
/// Documentation/networking/msg_zerocopy.rst). Fails on kernels before 4.14.
pub fn enable_zerocopy(stream: &TcpStream) -> io::Result<()> {
    sys::setsockopt_int(stream, libc::SOL_SOCKET, SO_ZEROCOPY, 1)
}

/// Sends `buf` with `MSG_ZEROCOPY` (non-blocking): the kernel sends from the caller's
/// pages instead of copying them, so they must not be rewritten until the kernel
/// reports the send done ([`zerocopy_completions`]). Each call that returns `Ok`
/// (however many bytes it took) is one send, numbered from 0 on the socket; `ENOBUFS`
/// says too many completions are unread (`optmem_max`), and a send may then be retried
/// once they are read, or made without the flag.
pub fn send_zerocopy(stream: &TcpStream, buf: &[u8]) -> io::Result<usize> {
    let flags = libc::MSG_ZEROCOPY | libc::MSG_DONTWAIT | libc::MSG_NOSIGNAL;
    // SAFETY: `buf` is valid for reads of `buf.len()` bytes for the call. With
    // MSG_ZEROCOPY the kernel pins the pages and reads them later too; that is sound
    // (pinned pages stay mapped whatever the caller does) and only makes rewriting them
    // early change the data sent, which the caller's contract above rules out.
    let n = unsafe { libc::send(stream.as_raw_fd(), buf.as_ptr().cast(), buf.len(), flags) };
    sys::cvt_size(n)
}

/// Whether a [`send_zerocopy`] failed for want of room for more unread completions
/// (`ENOBUFS`: the socket's `optmem_max` is used up): read them, or send with a copy.
pub fn is_zerocopy_backlog(e: &io::Error) -> bool {
    e.raw_os_error() == Some(libc::ENOBUFS)
}

/// Sends the kernel reported done: `first..=last` (send numbers as [`send_zerocopy`]
/// counts them, wrapping at 2^32), and whether it copied them after all.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ZeroCopyDone {
    /// The first send of the range.
    pub first: u32,
    /// The last send of the range (inclusive).
    pub last: u32,
    /// `SO_EE_CODE_ZEROCOPY_COPIED`: the kernel copied the data anyway.
    pub copied: bool,
}

impl ZeroCopyDone {
    /// Sends in the range.
    pub fn sends(&self) -> u64 {
        u64::from(self.last.wrapping_sub(self.first)) + 1
    }
}

/// Reads every zero-copy completion waiting on the socket's error queue
/// (`recvmsg(MSG_ERRQUEUE)`, a `sock_extended_err` with origin
/// `SO_EE_ORIGIN_ZEROCOPY`, its range in `ee_info..=ee_data`) into `out`, without
/// waiting; how many it read. Other error-queue messages are skipped. A socket with
/// completions waiting polls as `POLLERR`.
pub fn zerocopy_completions(stream: &TcpStream, out: &mut Vec<ZeroCopyDone>) -> io::Result<usize> {
    let before = out.len();
    loop {
        // Room for a cmsg holding sock_extended_err and the offender's sockaddr_in6.
        let mut control = [0u64; 16];
        let mut hdr: libc::msghdr = zeroed_msghdr();
        hdr.msg_control = control.as_mut_ptr().cast();
        hdr.msg_controllen = size_of_val(&control) as _;
        let flags = libc::MSG_ERRQUEUE | libc::MSG_DONTWAIT;
        // SAFETY: `hdr` describes no data buffer and a control buffer valid for writes
        // of its stated length, which outlives the call.
        let ret = unsafe { libc::recvmsg(stream.as_raw_fd(), &mut hdr, flags) };
        match sys::cvt_size(ret) {
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        }
        // SAFETY: `hdr` was filled by the kernel: its control pointer and length
        // describe the cmsgs it wrote into `control`.
        let mut cmsg = unsafe { libc::CMSG_FIRSTHDR(&hdr) };
        while !cmsg.is_null() {
            // SAFETY: a non-null pointer from CMSG_FIRSTHDR/CMSG_NXTHDR points at a
            // complete cmsghdr inside `control`.
            let c = unsafe { &*cmsg };
            let is_recverr = (c.cmsg_level == libc::SOL_IP && c.cmsg_type == libc::IP_RECVERR)
                || (c.cmsg_level == libc::SOL_IPV6 && c.cmsg_type == libc::IPV6_RECVERR);
            // SAFETY: CMSG_LEN is arithmetic.
            let header = unsafe { libc::CMSG_LEN(0) } as usize;
            #[allow(clippy::unnecessary_cast)]
            let len = (c.cmsg_len as usize).saturating_sub(header);
            if is_recverr && len >= size_of::<libc::sock_extended_err>() {
                // SAFETY: CMSG_DATA points inside `control` at `len` bytes the kernel
                // wrote, enough for a sock_extended_err; it may be unaligned.
                let ee = unsafe {
                    std::ptr::read_unaligned(libc::CMSG_DATA(c).cast::<libc::sock_extended_err>())
                };
                if ee.ee_errno == 0 && ee.ee_origin == SO_EE_ORIGIN_ZEROCOPY {
                    out.push(ZeroCopyDone {
                        first: ee.ee_info,
                        last: ee.ee_data,
                        copied: ee.ee_code & SO_EE_CODE_ZEROCOPY_COPIED != 0,
                    });
                }
            }
            // SAFETY: same buffer; CMSG_NXTHDR returns null past msg_controllen.
            cmsg = unsafe { libc::CMSG_NXTHDR(&hdr, cmsg) };
        }
    }
    Ok(out.len() - before)
}

fn zeroed_msghdr() -> libc::msghdr {
    // SAFETY: msghdr is plain data (pointers and integers); all-zero is a valid value
    // (null pointers, zero lengths).
    unsafe { std::mem::zeroed() }
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

    /// A `struct tcp_info` of `len` bytes with known values at the offsets of
    /// include/uapi/linux/tcp.h.
    fn info_bytes(len: usize) -> Vec<u8> {
        let mut b = vec![0u8; len.max(TCP_INFO_READ_LEN)];
        b[0] = 1;
        b[7] = 1;
        let mut put32 = |at: usize, v: u32| b[at..at + 4].copy_from_slice(&v.to_ne_bytes());
        for (at, v) in [(16, 1448), (36, 2), (60, 1500), (68, 250), (72, 40)] {
            put32(at, v);
        }
        for (at, v) in [(76, 30), (80, 10), (100, 7), (148, 180), (228, 65_535)] {
            put32(at, v);
        }
        for (at, v) in [(104, 1_000_000u64), (112, u64::MAX), (120, 9_000)] {
            b[at..at + 8].copy_from_slice(&v.to_ne_bytes());
        }
        for (at, v) in [(160, 800_000u64), (200, 10_448), (208, 1_448)] {
            b[at..at + 8].copy_from_slice(&v.to_ne_bytes());
        }
        b.truncate(len);
        b
    }

    #[test]
    fn tcp_info_reads_every_field_at_its_offset() {
        let info = TcpInfo::parse(&info_bytes(TCP_INFO_READ_LEN)).unwrap();
        assert_eq!(
            info,
            TcpInfo {
                state: 1,
                snd_mss_bytes: 1448,
                retrans_segments: 2,
                pmtu_bytes: 1500,
                srtt_us: 250,
                rttvar_us: 40,
                snd_ssthresh_segments: 30,
                snd_cwnd_segments: 10,
                total_retrans_segments: 7,
                pacing_rate_bytes_per_s: Some(1_000_000),
                max_pacing_rate_bytes_per_s: Some(u64::MAX),
                bytes_acked: Some(9_000),
                min_rtt_us: Some(180),
                delivery_rate_bytes_per_s: Some(800_000),
                delivery_rate_app_limited: Some(true),
                bytes_sent: Some(10_448),
                bytes_retrans: Some(1_448),
                snd_wnd_bytes: Some(65_535),
            }
        );
        assert_eq!(info.cwnd_bytes(), 14_480);
        // A newer kernel's longer struct reads the same.
        let mut longer = info_bytes(TCP_INFO_READ_LEN);
        longer.extend([0xff; 40]);
        assert_eq!(TcpInfo::parse(&longer), Ok(info));
    }

    #[test]
    fn tcp_info_of_an_older_kernel_leaves_the_newer_fields_out() {
        // Linux 2.6's struct ends after tcpi_total_retrans.
        let old = TcpInfo::parse(&info_bytes(TCP_INFO_MIN_LEN)).unwrap();
        assert_eq!(old.total_retrans_segments, 7);
        assert_eq!(old.cwnd_bytes(), 14_480);
        assert_eq!(old.pacing_rate_bytes_per_s, None);
        assert_eq!(old.delivery_rate_app_limited, None);
        assert_eq!(old.snd_wnd_bytes, None);
        // Linux 4.9 (through tcpi_delivery_rate, 168 bytes): no bytes_sent yet.
        let v49 = TcpInfo::parse(&info_bytes(168)).unwrap();
        assert_eq!(v49.min_rtt_us, Some(180));
        assert_eq!(v49.delivery_rate_bytes_per_s, Some(800_000));
        assert_eq!(v49.bytes_retrans, None);
        // A field cut in half is missing, not misread.
        let cut = TcpInfo::parse(&info_bytes(108)).unwrap();
        assert_eq!(cut.pacing_rate_bytes_per_s, None);
    }

    #[test]
    fn tcp_info_never_panics_and_refuses_a_short_buffer() {
        for len in 0..TCP_INFO_MIN_LEN {
            assert_eq!(
                TcpInfo::parse(&info_bytes(len)),
                Err(TcpInfoError::Short { len })
            );
        }
        for len in TCP_INFO_MIN_LEN..TCP_INFO_READ_LEN + 64 {
            let b: Vec<u8> = (0..len).map(|i| i as u8).collect();
            assert!(TcpInfo::parse(&b).is_ok(), "{len} bytes");
        }
    }

    #[test]
    fn tcp_info_of_a_loopback_connection() {
        use std::io::{Read, Write};
        let l = listen("127.0.0.1:0".parse().unwrap(), false).unwrap();
        let mut s = connect(
            l.local_addr().unwrap(),
            &Marking::default(),
            true,
            None,
            Duration::from_secs(2),
        )
        .unwrap();
        let (mut peer, _) = l.accept().unwrap();
        s.write_all(&[7u8; 100_000]).unwrap();
        let mut got = vec![0u8; 100_000];
        peer.read_exact(&mut got).unwrap();
        // A dup of the socket reads the same connection.
        let info = tcp_info(&s.try_clone().unwrap()).unwrap();
        assert_eq!(info.state, 1, "ESTABLISHED");
        assert!(
            info.snd_mss_bytes > 0 && info.snd_cwnd_segments > 0,
            "{info:?}"
        );
        assert!(
            info.srtt_us > 0,
            "the handshake gave an RTT sample: {info:?}"
        );
        // Every kernel this project runs on (5.4 and later) reports these.
        assert!(info.bytes_acked.unwrap() >= 100_000, "{info:?}");
        assert!(info.bytes_sent.unwrap() >= 100_000, "{info:?}");
        assert!(info.snd_wnd_bytes.is_some(), "{info:?}");
        // Not a TCP socket: the kernel's error, not a misread.
        let udp = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        assert!(tcp_info(&udp).is_err());
    }

    #[test]
    fn zerocopy_sends_complete_through_the_error_queue_and_a_cport_is_bound() {
        use std::io::Read;
        for any in ["127.0.0.1:0", "[::1]:0"] {
            let l = listen(any.parse().unwrap(), false).unwrap();
            // A source port: one the kernel just gave out, free again.
            let port = TcpListener::bind(any).unwrap().local_addr().unwrap().port();
            let s = connect_from(
                l.local_addr().unwrap(),
                Some(port),
                &Marking::default(),
                false,
                None,
                Duration::from_secs(2),
            )
            .unwrap();
            assert_eq!(s.local_addr().unwrap().port(), port);
            let (mut peer, from) = l.accept().unwrap();
            assert_eq!(from.port(), port);
            enable_zerocopy(&s).unwrap();
            let buf = vec![7u8; 64 * 1024];
            let mut sends = 0u32;
            let mut sent = 0;
            while sends < 4 {
                match send_zerocopy(&s, &buf) {
                    Ok(n) => {
                        sends += 1;
                        sent += n;
                    }
                    Err(e) => panic!("{any}: {e}"),
                }
            }
            // The peer reads it all; the kernel then reports every send done (copied,
            // on loopback), as ranges of send numbers from 0.
            let mut got = vec![0u8; sent];
            peer.read_exact(&mut got).unwrap();
            assert!(got.iter().all(|b| *b == 7));
            let mut done = Vec::new();
            let mut completed = 0;
            for _ in 0..2_000 {
                zerocopy_completions(&s, &mut done).unwrap();
                completed = done.iter().map(ZeroCopyDone::sends).sum::<u64>();
                if completed == u64::from(sends) {
                    break;
                }
                std::thread::sleep(Duration::from_millis(1));
            }
            assert_eq!(completed, u64::from(sends), "{any}: {done:?}");
            assert_eq!(done[0].first, 0, "{done:?}");
            assert_eq!(done.last().unwrap().last, sends - 1, "{done:?}");
            assert!(done.iter().all(|d| d.copied), "loopback copies: {done:?}");
            // A port in use (a listener holds it) is refused at the bind, by its number.
            let held = l.local_addr().unwrap();
            let err = connect_from(
                held,
                Some(held.port()),
                &Marking::default(),
                false,
                None,
                Duration::from_secs(2),
            )
            .unwrap_err();
            assert_eq!(err.kind(), io::ErrorKind::AddrInUse, "{err}");
            assert!(err.to_string().contains(&held.port().to_string()), "{err}");
        }
    }
}
