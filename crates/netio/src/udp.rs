//! Dual-stack UDP with marking on send and per-packet metadata on receive.

use std::collections::HashSet;
use std::io;
use std::mem::{zeroed, MaybeUninit};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, SocketAddrV4};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::Duration;

use crate::cmsg::{self, Cmsg};
use crate::marking::{self, Marking};
use crate::sys::{self, cvt, cvt_size, Family, SockAddr};

/// Most datagrams one [`UdpSocket::send_batch`] or [`UdpSocket::recv_batch`]
/// call handles; larger slices are served in part (the call returns the count).
pub const MAX_BATCH: usize = 64;

/// Metadata of one received datagram.
#[derive(Clone, Copy, Debug)]
pub struct RecvMeta {
    /// Length of the datagram as sent; larger than what was stored when
    /// `truncated`.
    pub len: usize,
    /// Sender; v4-mapped addresses are returned as plain IPv4.
    pub src: SocketAddr,
    /// The datagram's destination address as it was in the IP header: the
    /// local address the peer targeted, which on an unspecified (`[::]`,
    /// `0.0.0.0`) socket is not otherwise known. From `IP_PKTINFO`'s
    /// `ipi_addr` (not `ipi_spec_dst`, which is the kernel's preferred reply
    /// source and differs for broadcast and multicast) for IPv4, and
    /// `IPV6_PKTINFO`'s `ipi6_addr` for IPv6; v4-mapped addresses are returned
    /// as plain IPv4. Pass it to [`UdpSocket::send_to_marked_from`] so a reply
    /// leaves from the address the peer sent to. `None` when not enabled.
    pub dst_ip: Option<IpAddr>,
    /// DS byte (`IP_TOS`) or IPv6 traffic class.
    pub tos: Option<u8>,
    /// IPv4 TTL or IPv6 hop limit as received.
    pub hop_limit: Option<u8>,
    /// IPv6 flow label; `None` for IPv4 packets or when not enabled.
    pub flow_label: Option<u32>,
    /// Kernel receive time (`SO_TIMESTAMPNS`, `CLOCK_REALTIME` ns), plus the test
    /// offset of [`crate::clock::set_wall_offset_ns`].
    pub kernel_ts_ns: Option<u64>,
    /// The datagram did not fit the buffer (`MSG_TRUNC`).
    pub truncated: bool,
    /// With [`UdpSocket::enable_gro`]: the buffer holds datagrams the kernel
    /// coalesced (UDP GRO), each this many bytes but the last; split it with
    /// [`gro_segments`]. They arrived together: the metadata (and the one
    /// timestamp) is the first one's, and the kernel coalesces only datagrams of
    /// one flow with the same header fields. `None` for a single datagram.
    pub gro_size: Option<u16>,
}

/// The datagrams of a received buffer: `data` itself (even empty: a datagram
/// may have no payload), or with `gro_size` its coalesced datagrams, each
/// `gro_size` bytes but the last.
pub fn gro_segments(data: &[u8], gro_size: Option<u16>) -> GroSegments<'_> {
    GroSegments {
        rest: Some(data),
        size: gro_size.map_or(usize::MAX, |s| usize::from(s).max(1)),
    }
}

/// The iterator of [`gro_segments`].
#[derive(Clone, Debug)]
pub struct GroSegments<'a> {
    rest: Option<&'a [u8]>,
    size: usize,
}

impl<'a> Iterator for GroSegments<'a> {
    type Item = &'a [u8];

    fn next(&mut self) -> Option<&'a [u8]> {
        let rest = self.rest?;
        if rest.len() <= self.size {
            self.rest = None;
            return Some(rest);
        }
        let (first, after) = rest.split_at(self.size);
        self.rest = Some(after);
        Some(first)
    }
}

impl Default for RecvMeta {
    fn default() -> Self {
        Self {
            len: 0,
            src: SocketAddr::V4(SocketAddrV4::new(Ipv4Addr::UNSPECIFIED, 0)),
            dst_ip: None,
            tos: None,
            hop_limit: None,
            flow_label: None,
            kernel_ts_ns: None,
            truncated: false,
            gro_size: None,
        }
    }
}

/// A UDP socket (owns its fd). `Send + Sync`: one thread may receive while
/// another sends.
#[derive(Debug)]
pub struct UdpSocket {
    fd: OwnedFd,
    family: Family,
    /// Flow labels this socket holds a lease on (for [`Self::send_to_marked`]).
    leases: Mutex<HashSet<u32>>,
    /// `IPV6_FLOWINFO` receive is on: an IPv6 datagram without the cmsg had
    /// label and traffic class 0 (the kernel omits an all-zero flowinfo).
    recv_flowinfo: AtomicBool,
    /// Connected to a loopback address: batches may go as UDP GSO sends.
    peer_loopback: AtomicBool,
    /// UDP GSO failed once on this socket (an old kernel): never tried again.
    gso_off: AtomicBool,
}

impl UdpSocket {
    /// Binds a UDP socket. For IPv6, `IPV6_V6ONLY` is set to `!dual_stack`
    /// explicitly (not left to `net.ipv6.bindv6only`): with `dual_stack` an
    /// unspecified `[::]` socket also receives IPv4, as v4-mapped addresses.
    pub fn bind(addr: SocketAddr, dual_stack: bool) -> io::Result<Self> {
        Self::bind_with(addr, dual_stack, false)
    }

    /// [`Self::bind`] with `SO_REUSEPORT` set before the bind: every socket of
    /// the process's user bound so to the same address and port joins one
    /// group, and the kernel hands each datagram to one of them by a hash of
    /// its 4-tuple (so all datagrams from one peer socket go to the same
    /// member while the group does not change). One socket per receiving
    /// thread spreads the work over cores. A socket bound without the option
    /// (by [`Self::bind`]) still refuses the port to the group, and the group
    /// to it (`EADDRINUSE`).
    pub fn bind_reuseport(addr: SocketAddr, dual_stack: bool) -> io::Result<Self> {
        Self::bind_with(addr, dual_stack, true)
    }

    fn bind_with(addr: SocketAddr, dual_stack: bool, reuse_port: bool) -> io::Result<Self> {
        let family = Family::of(&addr);
        let fd = sys::socket(family, libc::SOCK_DGRAM)?;
        if family == Family::V6 {
            let v6only = libc::c_int::from(!dual_stack);
            sys::setsockopt_int(&fd, libc::IPPROTO_IPV6, libc::IPV6_V6ONLY, v6only)?;
        }
        if reuse_port {
            sys::setsockopt_int(&fd, libc::SOL_SOCKET, libc::SO_REUSEPORT, 1)?;
        }
        let sa = SockAddr::new(addr, 0);
        // SAFETY: `sa` holds a valid sockaddr of the stated length.
        cvt(unsafe { libc::bind(fd.as_raw_fd(), sa.as_ptr(), sa.len()) })?;
        Ok(Self {
            fd,
            family,
            leases: Mutex::new(HashSet::new()),
            recv_flowinfo: AtomicBool::new(false),
            peer_loopback: AtomicBool::new(false),
            gso_off: AtomicBool::new(false),
        })
    }

    /// Connects without marking. A plain IPv4 `dst` on an IPv6 socket is
    /// mapped.
    pub fn connect(&self, dst: SocketAddr) -> io::Result<()> {
        self.connect_marked(dst, &Marking::default())
    }

    /// Applies `marking` socket-wide and connects to `dst`, in the order Linux
    /// needs: `IP_TOS`/`IP_TTL` (IPv4 and v4-mapped destinations) or
    /// `IPV6_TCLASS`/`IPV6_UNICAST_HOPS`; for a flow label the lease and
    /// `IPV6_FLOWINFO_SEND` first, then `connect` with the label in
    /// `sin6_flowinfo`. Everything later sent on the socket carries the marking.
    pub fn connect_marked(&self, dst: SocketAddr, marking: &Marking) -> io::Result<()> {
        let dst = sys::for_family(self.family, dst)?;
        let ipv4_path = sys::is_ipv4_path(&dst);
        marking.check(ipv4_path)?;
        marking::apply_tos_ttl(&self.fd, ipv4_path, marking)?;
        let flowinfo = match (dst, marking.flow_label) {
            (SocketAddr::V6(a), Some(label)) => self.ensure_flow_label(*a.ip(), label)?,
            _ => 0,
        };
        let sa = SockAddr::new(dst, flowinfo);
        // SAFETY: `sa` holds a valid sockaddr of the stated length.
        cvt(unsafe { libc::connect(self.fd.as_raw_fd(), sa.as_ptr(), sa.len()) })?;
        self.peer_loopback
            .store(dst.ip().to_canonical().is_loopback(), Ordering::Relaxed);
        Ok(())
    }

    /// Asks the kernel for per-packet receive metadata: `SO_TIMESTAMPNS`,
    /// `IP_RECVTOS`, `IP_RECVTTL`, `IP_PKTINFO`, and on IPv6 sockets also
    /// `IPV6_RECVPKTINFO`, `IPV6_RECVTCLASS`, `IPV6_RECVHOPLIMIT` and
    /// `IPV6_FLOWINFO`. On an `AF_INET6` socket the `IP_` options are set too,
    /// so v4-mapped packets on a dual-stack socket also carry TOS, TTL and
    /// their destination address.
    pub fn enable_recv_meta(&self) -> io::Result<()> {
        let on = |level, name| sys::setsockopt_int(&self.fd, level, name, 1);
        on(libc::SOL_SOCKET, libc::SO_TIMESTAMPNS)?;
        on(libc::IPPROTO_IP, libc::IP_RECVTOS)?;
        on(libc::IPPROTO_IP, libc::IP_RECVTTL)?;
        on(libc::IPPROTO_IP, libc::IP_PKTINFO)?;
        if self.family == Family::V6 {
            on(libc::IPPROTO_IPV6, libc::IPV6_RECVPKTINFO)?;
            on(libc::IPPROTO_IPV6, libc::IPV6_RECVTCLASS)?;
            on(libc::IPPROTO_IPV6, libc::IPV6_RECVHOPLIMIT)?;
            on(libc::IPPROTO_IPV6, libc::IPV6_FLOWINFO)?;
            self.recv_flowinfo.store(true, Ordering::Relaxed);
        }
        Ok(())
    }

    /// Asks the kernel to hand over datagrams of one flow that arrive together
    /// as one buffer (`UDP_GRO`, Linux 5.0), split by [`RecvMeta::gro_size`]
    /// (see [`gro_segments`]): one receive for many datagrams. Buffers must then
    /// hold 64 KiB. `Ok(false)` where the kernel has no UDP GRO.
    pub fn enable_gro(&self) -> io::Result<bool> {
        match sys::setsockopt_int(&self.fd, libc::SOL_UDP, libc::UDP_GRO, 1) {
            Ok(()) => Ok(true),
            Err(e) if matches!(e.raw_os_error(), Some(libc::ENOPROTOOPT | libc::EINVAL)) => {
                Ok(false)
            }
            Err(e) => Err(e),
        }
    }

    /// Sets `SO_RCVTIMEO`: a blocking [`Self::recv_batch`] returns `Ok(0)`
    /// after `d` without data. `None` blocks forever.
    pub fn set_read_timeout(&self, d: Option<Duration>) -> io::Result<()> {
        sys::set_timeout(&self.fd, libc::SO_RCVTIMEO, d)
    }

    /// Toggles `O_NONBLOCK`.
    pub fn set_nonblocking(&self, nonblocking: bool) -> io::Result<()> {
        sys::set_nonblocking(&self.fd, nonblocking)
    }

    /// Sets `SO_SNDBUF`/`SO_RCVBUF`, using the `*FORCE` variants (not capped
    /// by `net.core.[wr]mem_max`) when the process may, and the plain ones
    /// otherwise. The kernel doubles the value for bookkeeping; see
    /// [`Self::buffer_sizes`].
    pub fn set_buffer_sizes(&self, send: Option<usize>, recv: Option<usize>) -> io::Result<()> {
        if let Some(bytes) = send {
            sys::set_buffer_size(&self.fd, libc::SO_SNDBUFFORCE, libc::SO_SNDBUF, bytes)?;
        }
        if let Some(bytes) = recv {
            sys::set_buffer_size(&self.fd, libc::SO_RCVBUFFORCE, libc::SO_RCVBUF, bytes)?;
        }
        Ok(())
    }

    /// The most datagrams of `payload` bytes one UDP GSO message of
    /// [`Self::send_batch`] carries (1 where they cannot be coalesced: GSO is off, the
    /// peer is not on loopback, or the datagram is too large to be a segment). A batch
    /// of a multiple of it goes as whole runs: 46 datagrams of 1,400 bytes fill a
    /// message, and a batch of 64 would go as a run of 46 and one of 18.
    pub fn gso_run_len(&self, payload: usize) -> usize {
        let coalesces = !self.gso_off.load(Ordering::Relaxed)
            && self.peer_loopback.load(Ordering::Relaxed)
            && (1..=GSO_MAX_SEGMENT).contains(&payload);
        if coalesces {
            (GSO_MAX_BYTES / payload).min(GSO_MAX_SEGMENTS)
        } else {
            1
        }
    }

    /// Sends every datagram of [`Self::send_batch`] on its own (no UDP GSO).
    pub fn disable_gso(&self) {
        self.gso_off.store(true, Ordering::Relaxed);
    }

    /// Sends one datagram on a connected socket. Unlike [`Self::send_batch`],
    /// a full buffer is an error (`WouldBlock` when non-blocking), as in std.
    pub fn send(&self, buf: &[u8]) -> io::Result<usize> {
        loop {
            // SAFETY: `buf` is valid for reads of `buf.len()` bytes.
            let ret = unsafe { libc::send(self.fd.as_raw_fd(), buf.as_ptr().cast(), buf.len(), 0) };
            match cvt_size(ret) {
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                other => return other,
            }
        }
    }

    /// `sendmmsg` on a connected socket: sends up to [`MAX_BATCH`] datagrams
    /// and returns how many the kernel took (maybe fewer; the caller retries
    /// the rest). `Ok(0)` for a non-empty `bufs` means "nothing taken, try
    /// again later" (`EAGAIN` on a non-blocking socket, `ENOBUFS`). Other
    /// errors (e.g. `ECONNREFUSED` after an ICMP port unreachable) are returned.
    ///
    /// To a loopback peer, runs of datagrams of one length (the last of a run
    /// may be shorter) go as one UDP GSO message each (`UDP_SEGMENT`): the
    /// stack is crossed once per run and the receiving socket gets the same
    /// datagrams, each with its own metadata. Only on loopback, where no device
    /// or packet socket sees the unsegmented packet; elsewhere that would depend
    /// on the device's offloads. A kernel or path that refuses GSO turns it off
    /// for the socket, and the batch goes datagram by datagram.
    pub fn send_batch(&self, bufs: &[&[u8]]) -> io::Result<usize> {
        let loopback = self.peer_loopback.load(Ordering::Relaxed);
        self.send_messages(bufs, None, &|_, _| loopback)
    }

    /// Unconnected send with per-packet marking, for echoing to one peer with
    /// that flow's marking from a shared (dual-stack) socket. The kernel
    /// chooses the source address; same as [`Self::send_to_marked_from`] with
    /// `None`.
    ///
    /// DS byte and TTL / hop limit travel as control messages (`IP_TOS`/`IP_TTL`
    /// for IPv4 and v4-mapped destinations, `IPV6_TCLASS`/`IPV6_HOPLIMIT` for
    /// IPv6). A non-zero flow label is leased once per label and socket (the
    /// kernel's lease is per socket and label, not per destination), then sent
    /// in `sin6_flowinfo` with `IPV6_FLOWINFO_SEND` on. `flow_label: Some(0)`
    /// turns the socket's automatic labels off for good (it is a socket-wide
    /// switch). A plain IPv4 `dst` on an IPv6 socket is mapped.
    pub fn send_to_marked(
        &self,
        buf: &[u8],
        dst: SocketAddr,
        marking: &Marking,
    ) -> io::Result<usize> {
        self.send_to_marked_from(buf, dst, None, marking)
    }

    /// [`Self::send_to_marked`] from a chosen source address: pass the
    /// [`RecvMeta::dst_ip`] of the datagram being answered, so the reply
    /// leaves from the address the peer targeted (a connected peer socket
    /// drops datagrams from any other address, and on a host with several
    /// addresses the kernel's own choice may differ).
    ///
    /// The source travels as one more control message next to the marking:
    /// `IP_PKTINFO` (`SOL_IP`, source in `ipi_spec_dst`; `ipi_addr` is
    /// ignored on send) for IPv4 and v4-mapped destinations, also on an IPv6
    /// socket, and `IPV6_PKTINFO` (`ipi6_addr`) for IPv6 ones; the interface
    /// index is left 0 (routing decides). `src_ip` may be v4-mapped. `None`
    /// or an unspecified address (`0.0.0.0`, `::`) lets the kernel choose. An
    /// `src_ip` of the other family than the path to `dst` is `InvalidInput`;
    /// one that is not a local address is refused by the kernel (`EINVAL` per
    /// its source; not exercised by our loopback-only tests). All of 127/8 is
    /// local, so 127.0.0.2 works without setup.
    pub fn send_to_marked_from(
        &self,
        buf: &[u8],
        dst: SocketAddr,
        src_ip: Option<IpAddr>,
        marking: &Marking,
    ) -> io::Result<usize> {
        let mut out = self.addressed(dst, src_ip, marking)?;
        let mut iov = libc::iovec {
            iov_base: buf.as_ptr().cast_mut().cast(),
            iov_len: buf.len(),
        };
        // SAFETY: msghdr is plain old data; all-zero is valid.
        let mut hdr: libc::msghdr = unsafe { zeroed() };
        hdr.msg_iov = &mut iov;
        hdr.msg_iovlen = 1;
        let items = out.point(&mut hdr);
        let mut control = cmsg::Buf::new();
        cmsg::encode(&mut hdr, &mut control, items.as_slice());
        loop {
            // SAFETY: `hdr` points at `out`'s name, `iov` (a readable view of `buf`; the
            // kernel does not write through it) and `control`, all alive for the call.
            let ret = unsafe { libc::sendmsg(self.fd.as_raw_fd(), &hdr, 0) };
            match cvt_size(ret) {
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                other => return other,
            }
        }
    }

    /// [`Self::send_to_marked_from`] for up to [`MAX_BATCH`] datagrams in one
    /// `sendmmsg`, each with its own destination, source and marking: a reflector's
    /// answers to one received batch. Returns how many the kernel took, from the
    /// first; the caller decides about the rest. A datagram that cannot be addressed
    /// (a marking or source the path refuses) ends the batch before it: the error
    /// when it is the first, otherwise the count of those before it. `Ok(0)` for a
    /// non-empty batch means "nothing taken, try again later" (`EAGAIN`, `ENOBUFS`).
    pub fn send_batch_to(&self, batch: &[Datagram<'_>]) -> io::Result<usize> {
        let n = batch.len().min(MAX_BATCH);
        let mut names = [Addressed::empty(); MAX_BATCH];
        let mut ready = 0;
        for (i, d) in batch[..n].iter().enumerate() {
            match self.addressed(d.dst, d.src_ip, &d.marking) {
                Ok(a) => names[i] = a,
                Err(e) if i == 0 => return Err(e),
                Err(_) => break,
            }
            ready = i + 1;
        }
        let mut bufs: [&[u8]; MAX_BATCH] = [&[]; MAX_BATCH];
        for (slot, d) in bufs.iter_mut().zip(&batch[..ready]) {
            *slot = d.buf;
        }
        let same = |i: usize, j: usize| {
            let (a, b) = (&batch[i], &batch[j]);
            a.dst == b.dst && a.src_ip == b.src_ip && a.marking == b.marking
        };
        let joinable =
            |i: usize, j: usize| batch[i].dst.ip().to_canonical().is_loopback() && same(i, j);
        self.send_messages(&bufs[..ready], Some(&mut names[..ready]), &joinable)
    }

    /// One `sendmmsg` of up to [`MAX_BATCH`] datagrams, each with its name and
    /// control messages from `names` (none: a connected socket). Datagram `j`
    /// joins the UDP GSO run that datagram `i` starts when `joinable(i, j)`, it is
    /// no longer than `i` and the run stays within the kernel's bounds. Returns the
    /// datagrams the kernel took; `Ok(0)` for `EAGAIN`/`ENOBUFS`.
    fn send_messages(
        &self,
        bufs: &[&[u8]],
        mut names: Option<&mut [Addressed]>,
        joinable: &dyn Fn(usize, usize) -> bool,
    ) -> io::Result<usize> {
        let n = bufs.len().min(MAX_BATCH);
        if n == 0 {
            return Ok(0);
        }
        let gso = !self.gso_off.load(Ordering::Relaxed);
        // SAFETY: iovec is plain old data; all-zero is valid (null pointers).
        let mut iovs: [libc::iovec; MAX_BATCH] = unsafe { zeroed() };
        // Headers and control buffers are set up for the messages used only: with GSO a
        // batch is one or two messages, and clearing all 64 (20 KiB) cost a bulk
        // sender 3 % of its time.
        let mut msgs = [const { MaybeUninit::<libc::mmsghdr>::uninit() }; MAX_BATCH];
        let mut controls = [const { MaybeUninit::<cmsg::Buf>::uninit() }; MAX_BATCH];
        // Datagrams in each message.
        let mut counts = [0usize; MAX_BATCH];
        for (iov, buf) in iovs.iter_mut().zip(&bufs[..n]) {
            *iov = libc::iovec {
                // The kernel only reads through this pointer (sendmmsg).
                iov_base: buf.as_ptr().cast_mut().cast(),
                iov_len: buf.len(),
            };
        }
        let (mut m, mut i) = (0, 0);
        while i < n {
            let len = bufs[i].len();
            let mut j = i + 1;
            if gso && (1..=GSO_MAX_SEGMENT).contains(&len) {
                while j < n
                    && j - i < GSO_MAX_SEGMENTS
                    && (j - i + 1) * len <= GSO_MAX_BYTES
                    && bufs[j].len() <= len
                    && !bufs[j].is_empty()
                    && joinable(i, j)
                {
                    j += 1;
                    if bufs[j - 1].len() < len {
                        break;
                    }
                }
            }
            // A run whose datagrams lie end to end in memory is one iovec: the kernel
            // then copies it in one piece. Measured on loopback, one flow of 1400-byte
            // datagrams: the sender's copy took 37 % of its time instead of 53 %, and
            // 35-40 Gbit/s arrived instead of 26-30.
            let contiguous = (i + 1..j)
                .all(|k| bufs[k].as_ptr() == bufs[k - 1].as_ptr().wrapping_add(bufs[k - 1].len()));
            if j - i > 1 && contiguous {
                iovs[i].iov_len = bufs[i..j].iter().map(|b| b.len()).sum();
            }
            // SAFETY: mmsghdr is plain old data; all-zero is valid (null pointers).
            let hdr = &mut msgs[m].write(unsafe { zeroed() }).msg_hdr;
            hdr.msg_iov = &mut iovs[i];
            hdr.msg_iovlen = if contiguous { 1 } else { j - i };
            let mut items = match names.as_deref_mut() {
                Some(names) => names[i].point(hdr),
                None => Items::default(),
            };
            if j - i > 1 {
                // `len` is at most GSO_MAX_SEGMENT, so it fits.
                items.push(cmsg::Out::GsoSize(len as u16));
            }
            cmsg::encode(hdr, controls[m].write(cmsg::Buf::new()), items.as_slice());
            counts[m] = j - i;
            m += 1;
            i = j;
        }
        loop {
            // SAFETY: `msgs[..m]` are initialised (written above), each pointing at a run
            // of iovecs describing live, readable buffers borrowed from `bufs`, at their
            // own name in `names` (or none) and their own control buffer, all alive and
            // not moved during the call. MaybeUninit<T> has T's layout.
            let ret =
                unsafe { libc::sendmmsg(self.fd.as_raw_fd(), msgs.as_mut_ptr().cast(), m as _, 0) };
            match cvt(ret) {
                Ok(sent) => return Ok(counts[..sent as usize].iter().sum()),
                Err(e) => match e.raw_os_error() {
                    Some(libc::EINTR) => continue,
                    Some(libc::EAGAIN | libc::ENOBUFS) => return Ok(0),
                    // A kernel or path without UDP GSO (EIO: no checksum offload): send
                    // datagram by datagram from now on.
                    Some(libc::EIO | libc::EINVAL | libc::ENOPROTOOPT | libc::EOPNOTSUPP)
                        if counts[0] > 1 =>
                    {
                        self.gso_off.store(true, Ordering::Relaxed);
                        return self.send_messages(bufs, names, joinable);
                    }
                    _ => return Err(e),
                },
            }
        }
    }

    /// The kernel's name and control messages for a datagram to `dst` from `src_ip`
    /// with `marking` (see [`Self::send_to_marked_from`]).
    fn addressed(
        &self,
        dst: SocketAddr,
        src_ip: Option<IpAddr>,
        marking: &Marking,
    ) -> io::Result<Addressed> {
        let dst = sys::for_family(self.family, dst)?;
        let ipv4_path = sys::is_ipv4_path(&dst);
        marking.check(ipv4_path)?;
        let (level, tos_type, ttl_type) = if ipv4_path {
            (libc::IPPROTO_IP, libc::IP_TOS, libc::IP_TTL)
        } else {
            (libc::IPPROTO_IPV6, libc::IPV6_TCLASS, libc::IPV6_HOPLIMIT)
        };
        let mut out = Addressed::empty();
        if let Some(tos) = marking.tos {
            out.items.push(cmsg::Out::Int(level, tos_type, tos.into()));
        }
        if let Some(ttl) = marking.ttl {
            out.items.push(cmsg::Out::Int(level, ttl_type, ttl.into()));
        }
        if let Some(src) = source_cmsg(src_ip, ipv4_path, &dst)? {
            out.items.push(src);
        }
        let flowinfo = match (dst, marking.flow_label) {
            (SocketAddr::V6(a), Some(label)) => self.ensure_flow_label(*a.ip(), label)?,
            _ => 0,
        };
        out.name = SockAddr::new(dst, flowinfo);
        Ok(out)
    }

    /// `recvmmsg` into the caller's buffers: waits (honouring
    /// [`Self::set_read_timeout`]) for at least one datagram, then takes
    /// whatever else is queued, up to `min(bufs.len(), metas.len(),`
    /// [`MAX_BATCH`]`)`. Returns the count, filling `metas[..count]`.
    ///
    /// Each buffer receives up to its *capacity*; on return `bufs[i].len()` is
    /// the number of bytes stored (so `vec![0; 2048]` and
    /// `Vec::with_capacity(2048)` both work). `metas[i].len` is the datagram's
    /// full length, larger when `truncated`.
    ///
    /// `Ok(0)` means nothing arrived: the read timeout expired, the socket is
    /// non-blocking and empty, or a signal interrupted the wait. Callers loop
    /// and check their stop flag.
    pub fn recv_batch(&self, bufs: &mut [Vec<u8>], metas: &mut [RecvMeta]) -> io::Result<usize> {
        self.recv_batch_with(bufs, metas, libc::MSG_WAITFORONE)
    }

    /// [`Self::recv_batch`] without waiting: `Ok(0)` at once when nothing is queued.
    pub fn try_recv_batch(
        &self,
        bufs: &mut [Vec<u8>],
        metas: &mut [RecvMeta],
    ) -> io::Result<usize> {
        self.recv_batch_with(bufs, metas, libc::MSG_DONTWAIT)
    }

    /// [`Self::recv_batch`] or [`Self::try_recv_batch`], as `poll` says
    /// ([`RecvPoll`](crate::poll::RecvPoll): in the kernel while datagrams are sparse,
    /// polling while they are dense, so a loopback sender pays no wake-up). A poll that
    /// finds nothing naps `nap` (zero: returns at once, for a loop that spins) and
    /// returns `Ok(0)`; callers loop and check their stop flag. Set a timer slack of
    /// 1 ns on the thread, or the naps stretch to the kernel's default 50 µs.
    pub fn recv_batch_polled(
        &self,
        poll: &mut crate::poll::RecvPoll,
        nap: Duration,
        bufs: &mut [Vec<u8>],
        metas: &mut [RecvMeta],
    ) -> io::Result<usize> {
        let polling = poll.wait(crate::clock::mono_ns()) == crate::poll::Wait::Poll;
        let n = if polling {
            self.try_recv_batch(bufs, metas)?
        } else {
            self.recv_batch(bufs, metas)?
        };
        if n > 0 {
            poll.handle_batch(crate::clock::mono_ns(), n as u64);
        } else if polling && !nap.is_zero() {
            std::thread::sleep(nap);
        }
        Ok(n)
    }

    fn recv_batch_with(
        &self,
        bufs: &mut [Vec<u8>],
        metas: &mut [RecvMeta],
        wait_flag: libc::c_int,
    ) -> io::Result<usize> {
        let n = bufs.len().min(metas.len()).min(MAX_BATCH);
        if n == 0 {
            return Ok(0);
        }
        // SAFETY: iovec is plain old data; all-zero is valid.
        let mut iovs: [libc::iovec; MAX_BATCH] = unsafe { zeroed() };
        // Only the `n` entries asked for are set up (a GRO read asks for 8, and clearing
        // all 64 headers, names and control buffers was 30 KiB a call).
        let mut msgs = [const { MaybeUninit::<libc::mmsghdr>::uninit() }; MAX_BATCH];
        let mut names = [const { MaybeUninit::<SockAddr>::uninit() }; MAX_BATCH];
        // The kernel writes the control messages; only what it wrote is read.
        let mut controls = [const { MaybeUninit::<cmsg::Buf>::uninit() }; MAX_BATCH];
        for i in 0..n {
            names[i].write(SockAddr::empty());
            // SAFETY: mmsghdr is plain old data; all-zero is valid (null pointers).
            msgs[i].write(unsafe { zeroed() });
        }
        // SAFETY: the first `n` entries were written above; MaybeUninit<T> has T's layout.
        let msgs: &mut [libc::mmsghdr] =
            unsafe { std::slice::from_raw_parts_mut(msgs.as_mut_ptr().cast(), n) };
        // SAFETY: as above.
        let names: &mut [SockAddr] =
            unsafe { std::slice::from_raw_parts_mut(names.as_mut_ptr().cast(), n) };
        for i in 0..n {
            iovs[i] = libc::iovec {
                iov_base: bufs[i].as_mut_ptr().cast(),
                iov_len: bufs[i].capacity(),
            };
            let hdr = &mut msgs[i].msg_hdr;
            hdr.msg_iov = &mut iovs[i];
            hdr.msg_iovlen = 1;
            hdr.msg_name = names[i].as_mut_ptr().cast();
            hdr.msg_namelen = names[i].len();
            hdr.msg_control = controls[i].as_mut_ptr().cast();
            hdr.msg_controllen = cmsg::SPACE as _;
        }
        // MSG_WAITFORONE: block only for the first datagram. MSG_TRUNC: report the real
        // datagram length in msg_len even when it did not fit.
        let flags = wait_flag | libc::MSG_TRUNC;
        // SAFETY: every msgs[i] (i < n) points at its own iovec covering the whole
        // allocation of bufs[i] (writable, `capacity` bytes), a sockaddr_storage-sized
        // name buffer and a cmsg-aligned control buffer of SPACE bytes, all alive and
        // not otherwise borrowed during the call. A null timeout is allowed.
        let ret = unsafe {
            libc::recvmmsg(
                self.fd.as_raw_fd(),
                msgs.as_mut_ptr(),
                n as _,
                flags as _,
                std::ptr::null_mut(),
            )
        };
        let count = match cvt(ret) {
            Ok(count) => count as usize,
            Err(e) => {
                return match e.raw_os_error() {
                    Some(libc::EAGAIN | libc::EINTR) => Ok(0),
                    _ => Err(e),
                }
            }
        };
        let recv_flowinfo = self.recv_flowinfo.load(Ordering::Relaxed);
        for i in 0..count {
            let hdr = &msgs[i].msg_hdr;
            let len = msgs[i].msg_len as usize;
            let stored = len.min(bufs[i].capacity());
            // SAFETY: the kernel wrote `stored` bytes (the datagram, cut to the iovec
            // length) at the start of bufs[i]'s allocation, so they are initialised.
            unsafe { bufs[i].set_len(stored) };
            *names[i].len_mut() = hdr.msg_namelen;
            let mut meta = RecvMeta {
                len,
                src: names[i].to_std().unwrap_or(RecvMeta::default().src),
                truncated: hdr.msg_flags & libc::MSG_TRUNC != 0,
                ..RecvMeta::default()
            };
            let mut flowinfo = None;
            for item in cmsg::Decoder::new(hdr) {
                match item {
                    Cmsg::Tos(v) | Cmsg::TrafficClass(v) => meta.tos = Some(v),
                    Cmsg::Ttl(v) | Cmsg::HopLimit(v) => meta.hop_limit = Some(v),
                    Cmsg::FlowInfo(v) => flowinfo = Some(v),
                    // Carries the test offset, like every wall stamp.
                    Cmsg::TimestampNs(ns) => {
                        meta.kernel_ts_ns = Some(crate::clock::shift_wall(ns));
                    }
                    // An IPv4 packet on a dual-stack socket brings both, with the
                    // same address (IPV6_PKTINFO v4-mapped).
                    Cmsg::PktInfoV4 { addr, .. } => meta.dst_ip = Some(IpAddr::V4(addr)),
                    Cmsg::PktInfoV6(addr) => {
                        meta.dst_ip = Some(IpAddr::V6(addr).to_canonical());
                    }
                    // Only a buffer holding more than one datagram is coalesced.
                    Cmsg::GroSize(size) => {
                        meta.gro_size = (len > usize::from(size)).then_some(size);
                    }
                }
            }
            if meta.src.is_ipv6() && recv_flowinfo {
                // The kernel sends no IPV6_FLOWINFO cmsg when the whole field is 0.
                let flowinfo = flowinfo.unwrap_or(0);
                meta.flow_label = Some(flowinfo & marking::FLOW_LABEL_MAX);
                meta.tos = meta.tos.or(Some((flowinfo >> 20) as u8));
            }
            metas[i] = meta;
        }
        Ok(count)
    }

    /// The bound address (v4-mapped shown as IPv4).
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        sys::local_addr(&self.fd)
    }

    /// The kernel's `(SO_SNDBUF, SO_RCVBUF)` in bytes (twice what was set:
    /// it counts bookkeeping overhead).
    pub fn buffer_sizes(&self) -> io::Result<(usize, usize)> {
        let get =
            |name| sys::getsockopt_int(&self.fd, libc::SOL_SOCKET, name).map(|v| v.max(0) as usize);
        Ok((get(libc::SO_SNDBUF)?, get(libc::SO_RCVBUF)?))
    }

    /// Makes `label` sendable from this socket (lease + `IPV6_FLOWINFO_SEND`,
    /// once per label) and returns the flowinfo for `sin6_flowinfo`.
    fn ensure_flow_label(&self, dst: Ipv6Addr, label: u32) -> io::Result<u32> {
        // Held across the lease so two threads do not both take it.
        let mut leases = lock(&self.leases);
        if label != 0 && leases.contains(&label) {
            return Ok(label);
        }
        let flowinfo = marking::prepare_flow_label(&self.fd, self.family, dst, label)?;
        if label != 0 {
            leases.insert(label);
        }
        Ok(flowinfo)
    }
}

impl UdpSocket {
    /// The same socket as a standard-library one, for callers that want `recv_from`
    /// as the kernel reports it: v4-mapped sources stay `::ffff:a.b.c.d` (what
    /// `dualperf interop` shows), where [`UdpSocket::recv_batch`] unmaps them.
    pub fn into_std(self) -> std::net::UdpSocket {
        std::net::UdpSocket::from(self.fd)
    }
}

impl AsFd for UdpSocket {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }
}

impl AsRawFd for UdpSocket {
    fn as_raw_fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }
}

/// One datagram of [`UdpSocket::send_batch_to`]: its bytes, where it goes, the source
/// address it leaves from (`None`: the kernel chooses) and its marking.
#[derive(Clone, Copy, Debug)]
pub struct Datagram<'a> {
    /// The payload.
    pub buf: &'a [u8],
    /// The destination (a plain IPv4 one is mapped on an IPv6 socket).
    pub dst: SocketAddr,
    /// The source, as for [`UdpSocket::send_to_marked_from`].
    pub src_ip: Option<IpAddr>,
    /// DS byte, TTL or hop limit, flow label.
    pub marking: Marking,
}

/// Control messages of one message: marking, source, GSO size.
#[derive(Clone, Copy)]
struct Items {
    items: [cmsg::Out; 4],
    count: usize,
}

impl Default for Items {
    fn default() -> Self {
        Self {
            items: [cmsg::Out::Int(0, 0, 0); 4],
            count: 0,
        }
    }
}

impl Items {
    fn push(&mut self, item: cmsg::Out) {
        self.items[self.count] = item;
        self.count += 1;
    }

    fn as_slice(&self) -> &[cmsg::Out] {
        &self.items[..self.count]
    }
}

/// A datagram's name and control messages, ready for `sendmsg`/`sendmmsg`.
#[derive(Clone, Copy)]
struct Addressed {
    name: SockAddr,
    items: Items,
}

impl Addressed {
    fn empty() -> Self {
        Self {
            name: SockAddr::empty(),
            items: Items::default(),
        }
    }

    /// Point `hdr` at this name; the control messages to send with it.
    fn point(&mut self, hdr: &mut libc::msghdr) -> Items {
        hdr.msg_name = self.name.as_mut_ptr().cast();
        hdr.msg_namelen = self.name.len();
        self.items
    }
}

/// Most bytes one UDP GSO segment (one datagram of a run) may have here.
const GSO_MAX_SEGMENT: usize = 8_192;
/// Most datagrams in one UDP GSO message (the kernel's `UDP_MAX_SEGMENTS` is 64
/// before Linux 6.9).
const GSO_MAX_SEGMENTS: usize = 64;
/// Most payload bytes of one UDP GSO message (under the 65,507 of an IPv4 datagram).
const GSO_MAX_BYTES: usize = 65_000;

/// The control message setting the source address `src` for a datagram on
/// the IPv4 (`ipv4_path`) or IPv6 path to `dst`; `None` when the kernel is to
/// choose.
fn source_cmsg(
    src: Option<IpAddr>,
    ipv4_path: bool,
    dst: &SocketAddr,
) -> io::Result<Option<cmsg::Out>> {
    let Some(src) = src.map(|ip| ip.to_canonical()) else {
        return Ok(None);
    };
    if src.is_unspecified() {
        return Ok(None);
    }
    match (src, ipv4_path) {
        (IpAddr::V4(ip), true) => Ok(Some(cmsg::Out::SrcV4(ip))),
        (IpAddr::V6(ip), false) => Ok(Some(cmsg::Out::SrcV6(ip))),
        _ => Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("source address {src} does not match the family of destination {dst}"),
        )),
    }
}

/// Locks, ignoring poisoning: the set stays consistent whatever panicked.
fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    #[test]
    fn gro_buffers_split_into_their_datagrams_and_an_empty_datagram_is_one() {
        let lens = |data: &[u8], size| {
            gro_segments(data, size)
                .map(<[u8]>::len)
                .collect::<Vec<_>>()
        };
        assert_eq!(lens(&[], None), [0]);
        assert_eq!(lens(&[7; 100], None), [100]);
        assert_eq!(lens(&[7; 100], Some(40)), [40, 40, 20]);
        assert_eq!(lens(&[7; 80], Some(40)), [40, 40]);
        assert_eq!(lens(&[7; 3], Some(0)), [1, 1, 1]);
    }

    use super::*;

    #[test]
    fn recv_meta_default_is_empty() {
        let m = RecvMeta::default();
        assert_eq!(m.len, 0);
        assert!(m.tos.is_none() && m.flow_label.is_none() && !m.truncated);
    }

    #[test]
    fn empty_batches_do_nothing() {
        let sock = UdpSocket::bind("127.0.0.1:0".parse().unwrap(), false).unwrap();
        assert_eq!(sock.send_batch(&[]).unwrap(), 0);
        assert_eq!(sock.recv_batch(&mut [], &mut []).unwrap(), 0);
    }

    #[test]
    fn gso_runs_are_as_long_as_the_kernel_takes_and_only_to_loopback() {
        let to = |dst: &str| {
            let sock = UdpSocket::bind("0.0.0.0:0".parse().unwrap(), false).unwrap();
            // Connecting a UDP socket sends nothing.
            sock.connect(dst.parse().unwrap()).unwrap();
            sock
        };
        let lo = to("127.0.0.1:9");
        // 65,000 bytes a message, 64 datagrams at most, segments up to 8,192 bytes.
        assert_eq!(lo.gso_run_len(1400), 46);
        assert_eq!(lo.gso_run_len(1000), 64);
        assert_eq!(lo.gso_run_len(64), 64);
        assert_eq!(lo.gso_run_len(8192), 7);
        assert_eq!(lo.gso_run_len(8193), 1);
        assert_eq!(lo.gso_run_len(0), 1);
        lo.disable_gso();
        assert_eq!(lo.gso_run_len(1400), 1);
        // Not connected to a loopback peer: no GSO.
        let unconnected = UdpSocket::bind("0.0.0.0:0".parse().unwrap(), false).unwrap();
        assert_eq!(unconnected.gso_run_len(1400), 1);
    }

    #[test]
    fn nonblocking_recv_on_empty_socket_is_zero() {
        let sock = UdpSocket::bind("127.0.0.1:0".parse().unwrap(), false).unwrap();
        sock.set_nonblocking(true).unwrap();
        let mut bufs = vec![vec![0u8; 64]; 2];
        let mut metas = [RecvMeta::default(); 2];
        assert_eq!(sock.recv_batch(&mut bufs, &mut metas).unwrap(), 0);
    }

    #[test]
    fn ipv6_destination_on_ipv4_socket_is_refused() {
        let sock = UdpSocket::bind("127.0.0.1:0".parse().unwrap(), false).unwrap();
        let err = sock.connect("[::1]:9".parse().unwrap()).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::InvalidInput);
    }

    #[test]
    fn reuseport_sockets_share_a_port_a_plain_one_does_not() {
        let a = UdpSocket::bind_reuseport("127.0.0.1:0".parse().unwrap(), false).unwrap();
        let addr = a.local_addr().unwrap();
        let b = UdpSocket::bind_reuseport(addr, false).unwrap();
        assert_eq!(b.local_addr().unwrap(), addr);
        let err = UdpSocket::bind(addr, false).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::AddrInUse);
    }

    #[test]
    fn buffer_sizes_are_applied() {
        let sock = UdpSocket::bind("127.0.0.1:0".parse().unwrap(), false).unwrap();
        // Below the default net.core.[rw]mem_max, so it holds with or without FORCE.
        sock.set_buffer_sizes(Some(100_000), Some(100_000)).unwrap();
        assert_eq!(sock.buffer_sizes().unwrap(), (200_000, 200_000));
    }
}
