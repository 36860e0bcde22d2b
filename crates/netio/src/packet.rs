//! Raw Ethernet frames on one interface through an `AF_PACKET` socket with
//! `TPACKET_V2` memory-mapped RX and TX rings (`packet(7)`,
//! `Documentation/networking/packet_mmap.rst`).
//!
//! One mapping holds both rings, RX first, then TX, as the kernel lays them
//! out. Each ring is an array of fixed-size slots ("frames"); a slot starts
//! with a `tpacket2_hdr` whose `tp_status` says who owns it:
//!
//! - **RX**: the kernel fills a `TP_STATUS_KERNEL` slot and flips it to
//!   `TP_STATUS_USER`; [`PacketSocket::recv_batch`] reads it and hands it back.
//!   The kernel fills slots strictly in ring order and drops frames (counted
//!   in [`PacketStats::drops`]) while the next slot is still ours.
//! - **TX**: [`PacketSocket::send`] fills a `TP_STATUS_AVAILABLE` slot and marks
//!   it `TP_STATUS_SEND_REQUEST`; [`PacketSocket::flush`] makes the kernel
//!   transmit the marked slots in ring order; each slot becomes available
//!   again once the device has taken its frame.
//!
//! Memory ordering: the status word is read with an acquire fence before the
//! rest of a slot is touched, and written after a release fence once we are
//! done with it, matching the kernel's `smp_wmb`/`smp_rmb` around
//! `tp_status`.
//!
//! Everything runs in the caller's thread with no syscall per frame: RX costs
//! nothing but the wake-up ([`crate::poll::poll_readable`] on
//! [`PacketSocket::fd`]), TX one `send(2)` per [`PacketSocket::flush`].

use std::ffi::CString;
use std::io;
use std::mem::{size_of, zeroed};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};
use std::ptr::{self, NonNull};
use std::sync::atomic::{fence, AtomicU32, Ordering};

use crate::sys::{self, cvt, cvt_size};

/// Length of an Ethernet header (destination, source, ethertype).
const ETH_HLEN: usize = 14;
/// `TPACKET_ALIGNMENT`.
const ALIGN: usize = 16;
/// `TPACKET_ALIGN(sizeof(struct tpacket2_hdr))`: where the `sockaddr_ll`
/// follows the header in an RX slot, and where frame data starts in a TX
/// slot (`tp_hdrlen - sizeof(sockaddr_ll)` in `tpacket_parse_header`, as we
/// do not use `PACKET_TX_HAS_OFF`).
const HDR_ALIGNED: usize = size_of::<libc::tpacket2_hdr>().next_multiple_of(ALIGN);
/// Where a TX slot's frame data starts.
const TX_DATA_OFF: usize = HDR_ALIGNED;
/// Where an RX slot's Ethernet header starts for a `SOCK_RAW` socket:
/// `tpacket_rcv` puts the network header at
/// `TPACKET_ALIGN(TPACKET2_HDRLEN + max(maclen, 16))` and the MAC header
/// `maclen` bytes before it.
const RX_MAC_OFF: usize = (libc::TPACKET2_HDRLEN + 16).next_multiple_of(ALIGN) - ETH_HLEN;
/// Timestamp flags the kernel may add to a TX slot's status when it hands
/// the slot back (only with `PACKET_TIMESTAMP`, which we do not set).
const TX_TS_MASK: u32 =
    libc::TP_STATUS_TS_SOFTWARE | libc::TP_STATUS_TS_SYS_HARDWARE | libc::TP_STATUS_TS_RAW_HARDWARE;

/// Sizes of the rings of a [`PacketSocket`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RingConfig {
    /// Bytes per slot, both rings; a multiple of 16. It must hold an
    /// Ethernet frame of the interface MTU (MTU + 14 bytes) after the RX
    /// slot's header space (66 bytes: `tpacket2_hdr`, `sockaddr_ll` and
    /// alignment), so 2048 allows an MTU up to 1968. A TX slot holds frames
    /// of up to `frame_size - 32` bytes ([`PacketSocket::max_frame_len`]).
    /// Default 2048.
    pub frame_size: u32,
    /// Slots in the RX ring (default 512). Rounded up so that whole slots
    /// fill whole ring blocks (blocks are `frame_size` rounded up to the page
    /// size; with 2048-byte slots and 4 KiB pages, to an even number).
    pub rx_frames: u32,
    /// Slots in the TX ring (default 512), rounded up like `rx_frames`.
    pub tx_frames: u32,
    /// Put the interface in promiscuous mode for as long as the socket lives
    /// (`PACKET_ADD_MEMBERSHIP`, `PACKET_MR_PROMISC`; the kernel counts
    /// these, so other users are unaffected and it ends with the socket).
    /// Default true.
    pub promiscuous: bool,
}

impl Default for RingConfig {
    fn default() -> Self {
        Self {
            frame_size: 2048,
            rx_frames: 512,
            tx_frames: 512,
            promiscuous: true,
        }
    }
}

/// What the kernel reports about one received frame.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RxInfo {
    /// Kernel receive time, `tp_sec * 1e9 + tp_nsec`: `CLOCK_REALTIME` ns
    /// since the epoch as the kernel stamped the frame (software timestamp), plus
    /// the test offset of [`crate::clock::set_wall_offset_ns`].
    pub timestamp_ns: u64,
    /// Only part of the frame was stored (`tp_len > tp_snaplen`, or
    /// `TP_STATUS_COPY`): the slot was too small. **Drop such a frame**; the
    /// bytes handed over are a prefix only.
    pub truncated: bool,
    /// `sll_pkttype`: `PACKET_HOST` (0, to our MAC), `PACKET_BROADCAST` (1),
    /// `PACKET_MULTICAST` (2) or `PACKET_OTHERHOST` (3, for another MAC; seen
    /// in promiscuous mode). `PACKET_OUTGOING` (4) never comes out.
    pub pkt_type: u8,
    /// `TP_STATUS_LOSING`: the kernel dropped frames (ring full) since the
    /// previous frame was stored; see [`PacketSocket::stats`].
    pub losing: bool,
}

/// Counters of a [`PacketSocket`] (`PACKET_STATISTICS`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PacketStats {
    /// Frames that reached the socket (`tp_packets`), dropped ones included.
    pub packets: u64,
    /// Frames dropped because the RX ring (or receive buffer) was full
    /// (`tp_drops`).
    pub drops: u64,
}

/// Geometry of one ring inside the mapping.
#[derive(Clone, Copy, Debug)]
struct Ring {
    /// Offset of the ring from the start of the mapping.
    offset: usize,
    block_size: usize,
    frame_size: usize,
    frames_per_block: usize,
    frames: usize,
}

impl Ring {
    fn new(offset: usize, frame_size: usize, frames: u32, page: usize) -> io::Result<Self> {
        if frames == 0 {
            return Err(invalid("a ring needs at least one frame"));
        }
        let block_size = frame_size.next_multiple_of(page);
        let frames_per_block = block_size / frame_size;
        let frames = (frames as usize).next_multiple_of(frames_per_block);
        if (frames / frames_per_block)
            .checked_mul(block_size)
            .and_then(|len| len.checked_add(offset))
            .is_none()
        {
            return Err(invalid("ring too large"));
        }
        Ok(Self {
            offset,
            block_size,
            frame_size,
            frames_per_block,
            frames,
        })
    }

    fn blocks(&self) -> usize {
        self.frames / self.frames_per_block
    }

    fn len(&self) -> usize {
        self.blocks() * self.block_size
    }

    /// The `tpacket_req` describing this ring to the kernel.
    fn req(&self) -> io::Result<libc::tpacket_req> {
        let too_big = |_| invalid("ring too large");
        Ok(libc::tpacket_req {
            tp_block_size: u32::try_from(self.block_size).map_err(too_big)?,
            tp_block_nr: u32::try_from(self.blocks()).map_err(too_big)?,
            tp_frame_size: u32::try_from(self.frame_size).map_err(too_big)?,
            tp_frame_nr: u32::try_from(self.frames).map_err(too_big)?,
        })
    }

    /// Offset of slot `i` from the start of the mapping (slots never straddle
    /// blocks, so with a block larger than the slots there is a gap at each
    /// block's end).
    fn slot(&self, i: usize) -> usize {
        self.offset
            + (i / self.frames_per_block) * self.block_size
            + (i % self.frames_per_block) * self.frame_size
    }
}

/// The shared mapping of both rings; unmapped on drop.
#[derive(Debug)]
struct Mapping {
    base: NonNull<u8>,
    len: usize,
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: `base`/`len` are exactly what mmap returned, and nothing
        // borrows the mapping any more (borrows are tied to `&mut PacketSocket`).
        unsafe { libc::munmap(self.base.as_ptr().cast(), self.len) };
    }
}

/// An `AF_PACKET`/`SOCK_RAW` socket for protocol `ETH_P_ALL`, bound to one
/// interface, with `TPACKET_V2` RX and TX rings mapped into memory. Frames
/// are whole Ethernet frames (header included, no FCS). The descriptor is
/// non-blocking.
///
/// Frames this host sends on the interface (`PACKET_OUTGOING`, including
/// those of other sockets and of the kernel's own stack) are never returned
/// by [`Self::recv_batch`].
///
/// Create it in the network namespace of the interface (see
/// [`crate::netns::enter`]); it stays there wherever it is used. Needs
/// `CAP_NET_RAW`. `Send + Sync`: the rings are only touched through
/// `&mut self`.
#[derive(Debug)]
pub struct PacketSocket {
    // Dropped before `fd`: unmap, then close.
    map: Mapping,
    fd: OwnedFd,
    ifindex: u32,
    ifname: [libc::c_char; libc::IFNAMSIZ],
    rx: Ring,
    tx: Ring,
    /// Next RX slot to look at (the kernel fills them in the same order).
    rx_next: usize,
    /// Next TX slot to fill.
    tx_next: usize,
    tx_wrong_format: u64,
    ignores_outgoing: bool,
}

// SAFETY: the raw pointer in `map` is to a process-wide shared mapping owned
// by this value; nothing about it is tied to the creating thread.
unsafe impl Send for PacketSocket {}
// SAFETY: methods taking `&self` make syscalls on the descriptor, or
// (`rx_pending`) one atomic load of a slot's status word; every other access to
// the ring memory needs `&mut self`.
unsafe impl Sync for PacketSocket {}

impl PacketSocket {
    /// Opens the socket on interface `ifname` (looked up in the calling
    /// thread's network namespace with `if_nametoindex`):
    /// `socket(AF_PACKET, SOCK_RAW | SOCK_NONBLOCK, 0)`, `PACKET_VERSION =
    /// TPACKET_V2`, `PACKET_RX_RING` then `PACKET_TX_RING`, one `mmap` for
    /// both, then `bind` to `ETH_P_ALL` on the interface (so nothing arrives
    /// before the rings exist), the promiscuous membership if asked, and
    /// `PACKET_IGNORE_OUTGOING` where the kernel has it (Linux 4.20+; see
    /// [`Self::ignores_outgoing`]).
    ///
    /// Errors: `InvalidInput` for a bad `ifname` or `cfg` (including a
    /// `frame_size` too small for the interface's MTU), `NotFound` for an
    /// unknown interface, `PermissionDenied` without `CAP_NET_RAW`.
    pub fn open(ifname: &str, cfg: &RingConfig) -> io::Result<Self> {
        let c_name = CString::new(ifname)
            .ok()
            .filter(|n| !ifname.is_empty() && n.as_bytes_with_nul().len() <= libc::IFNAMSIZ)
            .ok_or_else(|| invalid(format!("invalid interface name {ifname:?}")))?;
        let mut name = [0 as libc::c_char; libc::IFNAMSIZ];
        for (dst, &src) in name.iter_mut().zip(c_name.as_bytes()) {
            *dst = src as libc::c_char;
        }
        let frame_size = cfg.frame_size as usize;
        if frame_size % ALIGN != 0 || frame_size < RX_MAC_OFF + ETH_HLEN {
            return Err(invalid(format!(
                "frame_size {frame_size} must be a multiple of {ALIGN} and at least {}",
                RX_MAC_OFF + ETH_HLEN
            )));
        }
        // SAFETY: `c_name` is a valid NUL-terminated string for the call.
        let ifindex = unsafe { libc::if_nametoindex(c_name.as_ptr()) };
        if ifindex == 0 {
            let e = io::Error::last_os_error();
            let kind = match e.raw_os_error() {
                Some(libc::ENODEV) => io::ErrorKind::NotFound,
                _ => e.kind(),
            };
            return Err(io::Error::new(kind, format!("interface {ifname}: {e}")));
        }
        // SAFETY: socket(2) takes no pointers; the result is checked below.
        let fd = cvt(unsafe {
            libc::socket(
                libc::AF_PACKET,
                libc::SOCK_RAW | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC,
                0,
            )
        })?;
        // SAFETY: `fd` was just returned by socket(2), is valid and owned by nobody else.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };

        let mtu = ifreq_ioctl(&fd, &name, libc::SIOCGIFMTU)?;
        // SAFETY: SIOCGIFMTU filled the `ifru_mtu` member of the union.
        let mtu = usize::try_from(unsafe { mtu.ifr_ifru.ifru_mtu }).unwrap_or(0);
        if RX_MAC_OFF + ETH_HLEN + mtu > frame_size {
            return Err(invalid(format!(
                "frame_size {frame_size} cannot hold a frame of {ifname}'s MTU {mtu} \
                 (needs {})",
                (RX_MAC_OFF + ETH_HLEN + mtu).next_multiple_of(ALIGN)
            )));
        }

        // SAFETY: sysconf takes no pointers.
        let page = usize::try_from(unsafe { libc::sysconf(libc::_SC_PAGESIZE) })
            .ok()
            .filter(|&p| p > 0)
            .unwrap_or(4096);
        let rx = Ring::new(0, frame_size, cfg.rx_frames, page)?;
        let tx = Ring::new(rx.len(), frame_size, cfg.tx_frames, page)?;
        let len = rx
            .len()
            .checked_add(tx.len())
            .ok_or_else(|| invalid("rings too large"))?;

        let version = libc::tpacket_versions::TPACKET_V2 as libc::c_int;
        sys::setsockopt_int(&fd, libc::SOL_PACKET, libc::PACKET_VERSION, version)?;
        sys::setsockopt(&fd, libc::SOL_PACKET, libc::PACKET_RX_RING, &rx.req()?)?;
        sys::setsockopt(&fd, libc::SOL_PACKET, libc::PACKET_TX_RING, &tx.req()?)?;
        // SAFETY: a fresh shared mapping of the socket's rings (no address
        // hint); the result is checked against MAP_FAILED.
        let base = unsafe {
            libc::mmap(
                ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                fd.as_raw_fd(),
                0,
            )
        };
        if base == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        let base = NonNull::new(base.cast::<u8>()).ok_or_else(|| invalid("mmap returned null"))?;
        let map = Mapping { base, len };

        // SAFETY: sockaddr_ll is plain old data; all-zero is valid.
        let mut sll: libc::sockaddr_ll = unsafe { zeroed() };
        sll.sll_family = libc::AF_PACKET as libc::c_ushort;
        sll.sll_protocol = (libc::ETH_P_ALL as u16).to_be();
        sll.sll_ifindex = ifindex as libc::c_int;
        // SAFETY: `sll` is a valid sockaddr_ll and the length passed is its size.
        cvt(unsafe {
            libc::bind(
                fd.as_raw_fd(),
                (&sll as *const libc::sockaddr_ll).cast(),
                size_of::<libc::sockaddr_ll>() as libc::socklen_t,
            )
        })?;
        if cfg.promiscuous {
            let mreq = libc::packet_mreq {
                mr_ifindex: ifindex as libc::c_int,
                mr_type: libc::PACKET_MR_PROMISC as libc::c_ushort,
                mr_alen: 0,
                mr_address: [0; 8],
            };
            sys::setsockopt(&fd, libc::SOL_PACKET, libc::PACKET_ADD_MEMBERSHIP, &mreq)?;
        }
        let ignores_outgoing =
            match sys::setsockopt_int(&fd, libc::SOL_PACKET, libc::PACKET_IGNORE_OUTGOING, 1) {
                Ok(()) => true,
                Err(e) if e.raw_os_error() == Some(libc::ENOPROTOOPT) => false,
                Err(e) => return Err(e),
            };
        Ok(Self {
            map,
            fd,
            ifindex,
            ifname: name,
            rx,
            tx,
            rx_next: 0,
            tx_next: 0,
            tx_wrong_format: 0,
            ignores_outgoing,
        })
    }

    /// The descriptor, for `poll` ([`crate::poll::poll_readable`]): readable
    /// when the RX ring holds a frame for us. Do not read from or write to
    /// it directly.
    pub fn fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }

    /// Index of the bound interface.
    pub fn ifindex(&self) -> u32 {
        self.ifindex
    }

    /// The interface's MAC address (`SIOCGIFHWADDR`, looked up by the name
    /// given to [`Self::open`], in the socket's namespace).
    pub fn mac(&self) -> io::Result<[u8; 6]> {
        let ifr = ifreq_ioctl(&self.fd, &self.ifname, libc::SIOCGIFHWADDR)?;
        // SAFETY: SIOCGIFHWADDR filled the `ifru_hwaddr` member of the union.
        let data = unsafe { ifr.ifr_ifru.ifru_hwaddr.sa_data };
        let mut mac = [0u8; 6];
        for (dst, &src) in mac.iter_mut().zip(&data) {
            *dst = src as u8;
        }
        Ok(mac)
    }

    /// The interface's MTU (`SIOCGIFMTU`), in bytes of IP packet: frames are
    /// up to MTU + 14 bytes (+ 4 with a VLAN tag).
    pub fn mtu(&self) -> io::Result<u32> {
        let ifr = ifreq_ioctl(&self.fd, &self.ifname, libc::SIOCGIFMTU)?;
        // SAFETY: SIOCGIFMTU filled the `ifru_mtu` member of the union.
        let mtu = unsafe { ifr.ifr_ifru.ifru_mtu };
        u32::try_from(mtu).map_err(|_| io::Error::new(io::ErrorKind::InvalidData, "negative MTU"))
    }

    /// Longest frame [`Self::send`] accepts: the TX slot minus its header
    /// (`frame_size - 32`). The kernel also refuses frames longer than the
    /// MTU + 18 (see [`Self::flush`]).
    pub fn max_frame_len(&self) -> usize {
        self.tx.frame_size - TX_DATA_OFF
    }

    /// Slots in the RX and TX rings, after rounding (see [`RingConfig`]).
    pub fn ring_frames(&self) -> (usize, usize) {
        (self.rx.frames, self.tx.frames)
    }

    /// Whether the kernel took `PACKET_IGNORE_OUTGOING`, i.e. does not even
    /// copy outgoing frames into the RX ring. Without it they are still
    /// skipped by [`Self::recv_batch`], but take ring slots.
    pub fn ignores_outgoing(&self) -> bool {
        self.ignores_outgoing
    }

    /// Walks the RX ring from where the last call stopped and calls
    /// `f(frame, info)` for each frame the kernel has stored
    /// (`TP_STATUS_USER`), up to `max` frames; returns how many were handed
    /// to `f`. `frame` is the whole Ethernet frame as received (`tp_snaplen`
    /// bytes at `tp_mac`), valid only during the call: copy what you keep
    /// (e.g. into a TX slot with [`Self::send`]). Each slot is handed back
    /// to the kernel (`TP_STATUS_KERNEL`, after a release fence) right after
    /// `f` returns.
    ///
    /// A frame with [`RxInfo::truncated`] set is incomplete and must be
    /// dropped by the caller. Outgoing frames (`PACKET_OUTGOING`) are handed
    /// back without calling `f` and are not counted. VLAN tags the driver
    /// stripped (`TP_STATUS_VLAN_VALID`) are not put back into `frame`.
    ///
    /// Never blocks: `Ok(0)` when nothing is waiting; wait with
    /// [`crate::poll::poll_readable`] on [`Self::fd`]. At most one ring's
    /// worth of slots is visited per call.
    pub fn recv_batch(
        &mut self,
        max: usize,
        mut f: impl FnMut(&[u8], RxInfo),
    ) -> io::Result<usize> {
        self.recv_batch_mut(max, |frame, info| f(frame, info))
    }

    /// [`Self::recv_batch`] with the frame writable in place: a forwarder can
    /// rewrite its headers in the RX slot and copy it once, straight into a
    /// TX slot. What `f` writes is gone when the slot goes back to the
    /// kernel.
    pub fn recv_batch_mut(
        &mut self,
        max: usize,
        mut f: impl FnMut(&mut [u8], RxInfo),
    ) -> io::Result<usize> {
        let mut handed = 0;
        let mut visited = 0;
        while handed < max && visited < self.rx.frames {
            let slot = self.rx.slot(self.rx_next);
            let hdr = self.hdr(slot);
            // SAFETY: `hdr` points at the 16-aligned header of a slot inside the
            // mapping; `tp_status` is a naturally aligned u32 shared with the kernel,
            // accessed only atomically here.
            let status = unsafe { AtomicU32::from_ptr(ptr::addr_of_mut!((*hdr).tp_status)) };
            let st = status.load(Ordering::Relaxed);
            if st & libc::TP_STATUS_USER == 0 {
                break;
            }
            // Pairs with the kernel's smp_wmb() before it set TP_STATUS_USER.
            fence(Ordering::Acquire);
            // SAFETY: the slot is ours (TP_STATUS_USER) so the kernel does not write
            // it; `hdr` is valid and aligned for a tpacket2_hdr. The status word is
            // left to the atomic above.
            let (tp_len, tp_snaplen, tp_mac, tp_sec, tp_nsec) = unsafe {
                (
                    ptr::addr_of!((*hdr).tp_len).read(),
                    ptr::addr_of!((*hdr).tp_snaplen).read(),
                    ptr::addr_of!((*hdr).tp_mac).read(),
                    ptr::addr_of!((*hdr).tp_sec).read(),
                    ptr::addr_of!((*hdr).tp_nsec).read(),
                )
            };
            // SAFETY: the sockaddr_ll follows the header at TPACKET_ALIGN(sizeof hdr)
            // inside the same slot (the slot is at least RX_MAC_OFF bytes long).
            let sll: libc::sockaddr_ll = unsafe {
                ptr::read_unaligned(self.at(slot + HDR_ALIGNED).cast::<libc::sockaddr_ll>())
            };
            if sll.sll_pkttype != libc::PACKET_OUTGOING {
                // Never trust offsets to leave the slot.
                // Nor to reach back into the header and the status word: the frame is
                // handed out writable.
                let mac_off = (tp_mac as usize).clamp(
                    HDR_ALIGNED + size_of::<libc::sockaddr_ll>(),
                    self.rx.frame_size,
                );
                let len = (tp_snaplen as usize).min(self.rx.frame_size - mac_off);
                let info = RxInfo {
                    // Carries the test offset, like every wall stamp.
                    timestamp_ns: crate::clock::shift_wall(
                        u64::from(tp_sec) * 1_000_000_000 + u64::from(tp_nsec),
                    ),
                    truncated: tp_len as usize > len || st & libc::TP_STATUS_COPY != 0,
                    pkt_type: sll.sll_pkttype,
                    losing: st & libc::TP_STATUS_LOSING != 0,
                };
                // SAFETY: `mac_off + len <= frame_size`, so the bytes lie inside this
                // slot of the mapping; the kernel neither reads nor writes the slot
                // until we hand it back below, after `f` (which cannot keep the
                // borrow) returns, and nothing else points into it meanwhile.
                let frame = unsafe { std::slice::from_raw_parts_mut(self.at(slot + mac_off), len) };
                f(frame, info);
                handed += 1;
            }
            // Everything we read from the slot happens before the kernel may reuse it.
            fence(Ordering::Release);
            status.store(libc::TP_STATUS_KERNEL, Ordering::Relaxed);
            self.rx_next = (self.rx_next + 1) % self.rx.frames;
            visited += 1;
        }
        Ok(handed)
    }

    /// Whether the next RX slot holds a frame (or an outgoing one to skip):
    /// one load of its status word, no syscall. A busy-polling loop asks this
    /// before it goes to sleep in `poll`.
    pub fn rx_pending(&self) -> bool {
        let hdr = self.hdr(self.rx.slot(self.rx_next));
        // SAFETY: as in `recv_batch_mut`: the header of a slot inside the mapping,
        // its status word only accessed atomically.
        let status = unsafe { AtomicU32::from_ptr(ptr::addr_of_mut!((*hdr).tp_status)) };
        status.load(Ordering::Relaxed) & libc::TP_STATUS_USER != 0
    }

    /// Queues `frame` (a whole Ethernet frame, header included, no FCS) in
    /// the next TX slot: copies it in, sets `tp_len` and marks the slot
    /// `TP_STATUS_SEND_REQUEST`. Nothing is sent before [`Self::flush`].
    ///
    /// `Ok(false)` when the next slot is still in use (the ring is full, or
    /// the device has not taken earlier frames yet): call [`Self::flush`] and
    /// retry later (`POLLOUT` on [`Self::fd`] says a slot is free).
    ///
    /// `InvalidInput` for a frame longer than [`Self::max_frame_len`] or
    /// shorter than an Ethernet header (14 bytes).
    pub fn send(&mut self, frame: &[u8]) -> io::Result<bool> {
        if frame.len() > self.max_frame_len() {
            return Err(invalid(format!(
                "frame of {} bytes does not fit a TX slot ({} bytes at most)",
                frame.len(),
                self.max_frame_len()
            )));
        }
        if frame.len() < ETH_HLEN {
            return Err(invalid(format!(
                "frame of {} bytes is shorter than an Ethernet header",
                frame.len()
            )));
        }
        let slot = self.tx.slot(self.tx_next);
        let status = self.tx_status(slot);
        if status.load(Ordering::Relaxed) & !TX_TS_MASK != libc::TP_STATUS_AVAILABLE {
            return Ok(false);
        }
        // The kernel is done with the slot before we overwrite it.
        fence(Ordering::Acquire);
        let hdr = self.hdr(slot);
        // SAFETY: the slot is AVAILABLE, so the kernel neither reads nor writes it;
        // the data area [TX_DATA_OFF, TX_DATA_OFF + len) lies inside the slot
        // (len <= max_frame_len) and cannot overlap `frame`, which we borrow.
        unsafe {
            ptr::copy_nonoverlapping(frame.as_ptr(), self.at(slot + TX_DATA_OFF), frame.len());
            ptr::addr_of_mut!((*hdr).tp_len).write(frame.len() as u32);
            ptr::addr_of_mut!((*hdr).tp_snaplen).write(frame.len() as u32);
        }
        // The frame and its length are visible before the kernel sees the request.
        fence(Ordering::Release);
        status.store(libc::TP_STATUS_SEND_REQUEST, Ordering::Relaxed);
        self.tx_next = (self.tx_next + 1) % self.tx.frames;
        Ok(true)
    }

    /// Has the kernel transmit the queued TX slots:
    /// `send(fd, NULL, 0, MSG_DONTWAIT)`. `EAGAIN` and `ENOBUFS` (device
    /// queue or send buffer full; the rest stays queued for the next flush)
    /// are `Ok`.
    ///
    /// A frame the kernel refuses (`TP_STATUS_WRONG_FORMAT`: longer than the
    /// MTU + 18, or malformed for the device) stops the kernel at that slot
    /// and makes its `send` fail. The slot is then reaped: the bad frame is
    /// dropped and counted in [`Self::tx_wrong_format`], the frames queued
    /// behind it move up one slot (order kept), and the kick is repeated; the
    /// flush then returns `Ok`. Other errors (e.g. `ENXIO`/`ENETDOWN` for a
    /// device that is down) are returned and the frames stay queued.
    pub fn flush(&mut self) -> io::Result<()> {
        loop {
            // SAFETY: a null buffer of length 0 is valid for send(2) on a
            // TX-ring socket: the data comes from the ring.
            let ret =
                unsafe { libc::send(self.fd.as_raw_fd(), ptr::null(), 0, libc::MSG_DONTWAIT) };
            let Err(err) = cvt_size(ret) else {
                return Ok(());
            };
            match err.raw_os_error() {
                Some(libc::EINTR) => continue,
                Some(libc::EAGAIN | libc::ENOBUFS) => return Ok(()),
                _ => {}
            }
            if !self.reap_wrong_format() {
                return Err(err);
            }
        }
    }

    /// Frames dropped since [`Self::open`] because the kernel marked their
    /// TX slot `TP_STATUS_WRONG_FORMAT` (see [`Self::flush`]).
    pub fn tx_wrong_format(&self) -> u64 {
        self.tx_wrong_format
    }

    /// `PACKET_STATISTICS`. **The kernel resets the counters on every
    /// read**, so each call returns what happened since the previous one
    /// (or since `open`); callers accumulate.
    pub fn stats(&self) -> io::Result<PacketStats> {
        let mut buf = [0u8; size_of::<libc::tpacket_stats>()];
        let len = sys::getsockopt_bytes(
            &self.fd,
            libc::SOL_PACKET,
            libc::PACKET_STATISTICS,
            &mut buf,
        )?;
        if len < buf.len() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                "short PACKET_STATISTICS",
            ));
        }
        let word = |i: usize| {
            u64::from(u32::from_ne_bytes([
                buf[i],
                buf[i + 1],
                buf[i + 2],
                buf[i + 3],
            ]))
        };
        Ok(PacketStats {
            packets: word(0),
            drops: word(4),
        })
    }

    /// Takes the socket's pending error (`SO_ERROR`), e.g. `ENETDOWN` after
    /// the interface went down: `poll` then keeps reporting the descriptor
    /// (`POLLERR`) although [`Self::recv_batch`] finds nothing.
    pub fn take_error(&self) -> io::Result<Option<io::Error>> {
        match sys::getsockopt_int(&self.fd, libc::SOL_SOCKET, libc::SO_ERROR)? {
            0 => Ok(None),
            errno => Ok(Some(io::Error::from_raw_os_error(errno))),
        }
    }

    /// Drops the `TP_STATUS_WRONG_FORMAT` slot the kernel stopped at, if any,
    /// moving the frames queued behind it up one slot so the kernel (whose
    /// TX position stays at the bad slot) finds them there. Returns whether a
    /// slot was reaped.
    fn reap_wrong_format(&mut self) -> bool {
        let n = self.tx.frames;
        let Some(bad) = (0..n).find(|&i| {
            self.tx_status(self.tx.slot(i)).load(Ordering::Relaxed) & libc::TP_STATUS_WRONG_FORMAT
                != 0
        }) else {
            return false;
        };
        fence(Ordering::Acquire);
        self.tx_wrong_format += 1;
        // The kernel stopped at `bad`, so every slot we filled after it (up to
        // `tx_next`) still holds a SEND_REQUEST it has not looked at; it touches
        // none of them outside a send(2), and we hold `&mut self`.
        let queued_after = (self.tx_next + n - bad - 1) % n;
        let mut dst = bad;
        for step in 1..=queued_after {
            let src = (bad + step) % n;
            let (src_slot, dst_slot) = (self.tx.slot(src), self.tx.slot(dst));
            debug_assert_eq!(
                self.tx_status(src_slot).load(Ordering::Relaxed),
                libc::TP_STATUS_SEND_REQUEST
            );
            let (src_hdr, dst_hdr) = (self.hdr(src_slot), self.hdr(dst_slot));
            // SAFETY: both slots are ours (WRONG_FORMAT or an unsent SEND_REQUEST,
            // which the kernel only reads during send(2)); they are distinct slots,
            // and tp_len was written by `send` so it is at most max_frame_len.
            unsafe {
                let len = ptr::addr_of!((*src_hdr).tp_len).read();
                let len = (len as usize).min(self.max_frame_len());
                ptr::copy_nonoverlapping(
                    self.at(src_slot + TX_DATA_OFF),
                    self.at(dst_slot + TX_DATA_OFF),
                    len,
                );
                ptr::addr_of_mut!((*dst_hdr).tp_len).write(len as u32);
                ptr::addr_of_mut!((*dst_hdr).tp_snaplen).write(len as u32);
            }
            fence(Ordering::Release);
            self.tx_status(dst_slot)
                .store(libc::TP_STATUS_SEND_REQUEST, Ordering::Relaxed);
            dst = src;
        }
        fence(Ordering::Release);
        self.tx_status(self.tx.slot(dst))
            .store(libc::TP_STATUS_AVAILABLE, Ordering::Relaxed);
        self.tx_next = dst;
        true
    }

    /// Pointer to byte `offset` of the mapping.
    fn at(&self, offset: usize) -> *mut u8 {
        debug_assert!(offset < self.map.len);
        // SAFETY: callers pass offsets of slots (and bytes inside them) computed by
        // `Ring::slot`, all below `map.len`, so the result stays in the mapping.
        unsafe { self.map.base.as_ptr().add(offset) }
    }

    /// The header of the slot at mapping offset `slot`.
    fn hdr(&self, slot: usize) -> *mut libc::tpacket2_hdr {
        self.at(slot).cast()
    }

    /// The status word of the TX slot at mapping offset `slot`.
    fn tx_status(&self, slot: usize) -> &AtomicU32 {
        let hdr = self.hdr(slot);
        // SAFETY: the header is 16-aligned inside the mapping, which lives as long
        // as `self`; `tp_status` is a u32 shared with the kernel and only accessed
        // atomically by us.
        unsafe { AtomicU32::from_ptr(ptr::addr_of_mut!((*hdr).tp_status)) }
    }
}

impl AsFd for PacketSocket {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }
}

impl AsRawFd for PacketSocket {
    fn as_raw_fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }
}

/// An interface `ioctl` (`SIOCGIF*`) on `fd` for interface `name`.
fn ifreq_ioctl(
    fd: &OwnedFd,
    name: &[libc::c_char; libc::IFNAMSIZ],
    request: libc::c_ulong,
) -> io::Result<libc::ifreq> {
    // SAFETY: ifreq is plain old data; all-zero is valid.
    let mut ifr: libc::ifreq = unsafe { zeroed() };
    ifr.ifr_name = *name;
    // SAFETY: `ifr` is a valid, writable ifreq with a NUL-terminated name; the
    // SIOCGIF* requests used here read the name and write one union member.
    cvt(unsafe { libc::ioctl(fd.as_raw_fd(), request as _, &mut ifr) })?;
    Ok(ifr)
}

fn invalid(msg: impl Into<String>) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, msg.into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layout_matches_the_kernel() {
        assert_eq!(size_of::<libc::tpacket2_hdr>(), 32);
        assert_eq!(HDR_ALIGNED, 32);
        assert_eq!(libc::TPACKET2_HDRLEN, 52);
        assert_eq!(RX_MAC_OFF, 66);
    }

    #[test]
    fn rings_round_to_whole_blocks() {
        let r = Ring::new(0, 2048, 7, 4096).unwrap();
        assert_eq!((r.block_size, r.frames_per_block, r.frames), (4096, 2, 8));
        assert_eq!(r.len(), 4 * 4096);
        assert_eq!(r.slot(3), 4096 + 2048);
        let r = Ring::new(8192, 3008, 3, 4096).unwrap();
        assert_eq!((r.block_size, r.frames_per_block, r.frames), (4096, 1, 3));
        assert_eq!(r.slot(2), 8192 + 2 * 4096);
        assert!(Ring::new(0, 2048, 0, 4096).is_err());
    }

    #[test]
    fn bad_config_is_invalid_input() {
        let bad_size = RingConfig {
            frame_size: 2050,
            ..RingConfig::default()
        };
        let err = PacketSocket::open("lo", &bad_size).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::InvalidInput);
        for name in ["", "a-name-far-too-long", "nul\0"] {
            let err = PacketSocket::open(name, &RingConfig::default()).unwrap_err();
            assert_eq!(err.kind(), io::ErrorKind::InvalidInput, "{name:?}");
        }
    }

    #[test]
    fn unknown_interface_is_not_found() {
        let err = PacketSocket::open("dpt-nonexist", &RingConfig::default()).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::NotFound, "{err}");
    }
}
