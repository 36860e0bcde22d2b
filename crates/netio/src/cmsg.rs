//! Ancillary data (`cmsg(3)`): encoding the per-packet marking we send and
//! decoding the per-packet metadata the kernel hands back.
//!
//! The same decoder serves `recvmsg`/`recvmmsg` and the TCP `IP_PKTOPTIONS` /
//! `IPV6_2292PKTOPTIONS` getsockopts, which return a cmsg sequence too.

use std::mem::size_of;
use std::net::{Ipv4Addr, Ipv6Addr};
use std::ptr;

/// Bytes of control buffer per datagram. Receive metadata needs at most
/// timestamp (32) + TOS (24) + TTL (24) + TCLASS (24) + HOPLIMIT (24) +
/// FLOWINFO (24) + `IP_PKTINFO` (32) + `IPV6_PKTINFO` (40) = 224 bytes on
/// 64-bit Linux, and no packet gets all of them (an IPv4 packet on a
/// dual-stack socket: 32 + 24 + 24 + 32 + 40 = 152; IPv6: 144); the rest is
/// headroom for options enabled by others on a shared fd. On send: TOS, TTL
/// and one pktinfo, at most 88.
pub(crate) const SPACE: usize = 256;

/// A control-message buffer aligned like `cmsghdr`.
#[derive(Clone, Copy)]
#[repr(C, align(8))]
pub(crate) struct Buf(pub(crate) [u8; SPACE]);

// `cmsghdr` starts with a `size_t`; the buffer must be at least that aligned.
const _: () = assert!(align_of::<Buf>() >= align_of::<libc::cmsghdr>());

impl Buf {
    pub(crate) const fn new() -> Self {
        Self([0; SPACE])
    }
}

/// One control message we understand.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Cmsg {
    /// `IP_TOS`: the IPv4 DS byte.
    Tos(u8),
    /// `IP_TTL`.
    Ttl(u8),
    /// `IPV6_TCLASS`.
    TrafficClass(u8),
    /// `IPV6_HOPLIMIT`.
    HopLimit(u8),
    /// `IPV6_FLOWINFO`: traffic class and flow label, host order
    /// (`0x0TTLLLLL`).
    FlowInfo(u32),
    /// `SCM_TIMESTAMPNS`: `CLOCK_REALTIME` in ns since the epoch.
    TimestampNs(u64),
    /// `IP_PKTINFO` on receive. `addr` is `ipi_addr`, the destination address
    /// in the packet's IP header. `spec_dst` is `ipi_spec_dst`, the address the
    /// kernel's routing would use as the source of a reply
    /// (`fib_compute_spec_dst`): the same for unicast to a local address, but
    /// an interface address for broadcast and multicast, so it is not the
    /// destination.
    PktInfoV4 {
        /// `ipi_spec_dst`.
        spec_dst: Ipv4Addr,
        /// `ipi_addr`: the header's destination.
        addr: Ipv4Addr,
    },
    /// `IPV6_PKTINFO` on receive: `ipi6_addr`, the header's destination
    /// (v4-mapped for an IPv4 packet on a dual-stack socket).
    PktInfoV6(Ipv6Addr),
    /// `UDP_GRO` on receive (`SOL_UDP`, an `int`): the buffer holds several
    /// datagrams coalesced by the kernel (Linux 5.0), each this many bytes but
    /// the last, which may be shorter.
    GroSize(u16),
}

/// One control message to send.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Out {
    /// An `int`-valued message (`IP_TOS`, `IP_TTL`, `IPV6_TCLASS`,
    /// `IPV6_HOPLIMIT` all take an `int` on send): level, type, value.
    Int(libc::c_int, libc::c_int, libc::c_int),
    /// `IP_PKTINFO` choosing the source address: `ipi_spec_dst` is what the
    /// kernel uses as the source on send (`ipi_addr` is ignored there);
    /// `ipi_ifindex` 0 leaves the interface to routing.
    SrcV4(Ipv4Addr),
    /// `IPV6_PKTINFO` choosing the source address (`ipi6_addr`), interface
    /// left to routing (`ipi6_ifindex` 0).
    SrcV6(Ipv6Addr),
    /// `UDP_SEGMENT` (`SOL_UDP`, a `u16`): the message's payload is several
    /// datagrams of this many bytes each, the last maybe shorter (UDP GSO).
    GsoSize(u16),
    /// `IP_RETOPTS` (`SOL_IP`): the IPv4 header options of this one datagram,
    /// as on the wire (a multiple of 4 bytes; the kernel pads with End).
    Ipv4Options([u8; 4]),
    /// `IPV6_HOPOPTS` (`SOL_IPV6`): a whole Hop-by-Hop Options header of 8
    /// bytes for this one datagram; the kernel fills in its Next Header byte.
    /// Needs `CAP_NET_RAW`.
    HopByHop([u8; 8]),
}

impl Out {
    fn payload_len(&self) -> usize {
        match self {
            Self::Int(..) => size_of::<libc::c_int>(),
            Self::SrcV4(_) => size_of::<libc::in_pktinfo>(),
            Self::SrcV6(_) => size_of::<libc::in6_pktinfo>(),
            Self::GsoSize(_) => size_of::<u16>(),
            Self::Ipv4Options(b) => b.len(),
            Self::HopByHop(b) => b.len(),
        }
    }
}

/// `CMSG_SPACE(len)`.
fn space(len: usize) -> usize {
    // SAFETY: CMSG_SPACE is pure arithmetic.
    unsafe { libc::CMSG_SPACE(len as libc::c_uint) as usize }
}

/// Writes `items` into `buf` and points `hdr` at them. With no items, `hdr`
/// gets no control buffer at all.
pub(crate) fn encode(hdr: &mut libc::msghdr, buf: &mut Buf, items: &[Out]) {
    let total: usize = items.iter().map(|i| space(i.payload_len())).sum();
    assert!(total <= SPACE, "too many control messages for the buffer");
    if items.is_empty() {
        hdr.msg_control = ptr::null_mut();
        hdr.msg_controllen = 0;
        return;
    }
    buf.0[..total].fill(0);
    hdr.msg_control = buf.0.as_mut_ptr().cast();
    hdr.msg_controllen = total as _;
    // SAFETY: `hdr` points at `buf`, which is aligned for cmsghdr and holds `total`
    // bytes, exactly room for every item's CMSG_SPACE. CMSG_FIRSTHDR and CMSG_NXTHDR
    // stay within msg_controllen, and each header is fully written (cmsg_len first,
    // which CMSG_NXTHDR reads) before we step past it. Payloads are written with
    // write_unaligned at CMSG_DATA, within the item's CMSG_LEN.
    unsafe {
        let mut cmsg = libc::CMSG_FIRSTHDR(hdr);
        for item in items {
            debug_assert!(!cmsg.is_null());
            (*cmsg).cmsg_len = libc::CMSG_LEN(item.payload_len() as libc::c_uint) as _;
            let data = libc::CMSG_DATA(cmsg);
            let (level, ty) = match *item {
                Out::Int(level, ty, value) => {
                    ptr::write_unaligned(data.cast::<libc::c_int>(), value);
                    (level, ty)
                }
                Out::SrcV4(ip) => {
                    let info = libc::in_pktinfo {
                        ipi_ifindex: 0,
                        ipi_spec_dst: libc::in_addr {
                            s_addr: u32::from_ne_bytes(ip.octets()),
                        },
                        ipi_addr: libc::in_addr { s_addr: 0 },
                    };
                    ptr::write_unaligned(data.cast::<libc::in_pktinfo>(), info);
                    (libc::IPPROTO_IP, libc::IP_PKTINFO)
                }
                Out::SrcV6(ip) => {
                    let info = libc::in6_pktinfo {
                        ipi6_addr: libc::in6_addr {
                            s6_addr: ip.octets(),
                        },
                        ipi6_ifindex: 0,
                    };
                    ptr::write_unaligned(data.cast::<libc::in6_pktinfo>(), info);
                    (libc::IPPROTO_IPV6, libc::IPV6_PKTINFO)
                }
                Out::GsoSize(size) => {
                    ptr::write_unaligned(data.cast::<u16>(), size);
                    (libc::SOL_UDP, libc::UDP_SEGMENT)
                }
                Out::Ipv4Options(bytes) => {
                    ptr::write_unaligned(data.cast::<[u8; 4]>(), bytes);
                    (libc::IPPROTO_IP, libc::IP_RETOPTS)
                }
                Out::HopByHop(bytes) => {
                    ptr::write_unaligned(data.cast::<[u8; 8]>(), bytes);
                    (libc::IPPROTO_IPV6, libc::IPV6_HOPOPTS)
                }
            };
            (*cmsg).cmsg_level = level;
            (*cmsg).cmsg_type = ty;
            cmsg = libc::CMSG_NXTHDR(hdr, cmsg);
        }
    }
}

/// Iterates over the control messages of a received `msghdr`, yielding the
/// ones we understand.
pub(crate) struct Decoder<'a> {
    messages: Messages<'a>,
}

impl<'a> Decoder<'a> {
    /// `hdr.msg_control`/`msg_controllen` must describe an initialised,
    /// `cmsghdr`-aligned buffer filled by the kernel, valid for `'a`.
    pub(crate) fn new(hdr: &'a libc::msghdr) -> Self {
        Self {
            messages: Messages::new(hdr),
        }
    }
}

impl Iterator for Decoder<'_> {
    type Item = Cmsg;

    fn next(&mut self) -> Option<Cmsg> {
        self.messages.by_ref().find_map(|m| parse(&m))
    }
}

/// One control message as the kernel wrote it: level, type and payload.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Message<'a> {
    /// `cmsg_level`.
    pub(crate) level: libc::c_int,
    /// `cmsg_type`.
    pub(crate) ty: libc::c_int,
    /// The `cmsg_len - CMSG_LEN(0)` bytes at `CMSG_DATA`.
    pub(crate) data: &'a [u8],
}

/// Iterates over every control message of a received `msghdr`, undecoded:
/// for the few (`IPV6_HOPOPTS`, pktinfo's interface index) only the raw IP
/// socket reads.
pub(crate) struct Messages<'a> {
    hdr: &'a libc::msghdr,
    cmsg: *const libc::cmsghdr,
}

impl<'a> Messages<'a> {
    /// As [`Decoder::new`].
    pub(crate) fn new(hdr: &'a libc::msghdr) -> Self {
        // SAFETY: CMSG_FIRSTHDR only inspects msg_control/msg_controllen and returns
        // null when the buffer cannot hold a header.
        let cmsg = unsafe { libc::CMSG_FIRSTHDR(hdr) };
        Self { hdr, cmsg }
    }
}

impl<'a> Iterator for Messages<'a> {
    type Item = Message<'a>;

    fn next(&mut self) -> Option<Message<'a>> {
        loop {
            if self.cmsg.is_null() {
                return None;
            }
            // SAFETY: a non-null pointer from CMSG_FIRSTHDR/CMSG_NXTHDR points at a
            // complete cmsghdr inside the kernel-filled control buffer, which lives
            // for 'a (the borrow of `hdr`).
            let cmsg: &'a libc::cmsghdr = unsafe { &*self.cmsg };
            // SAFETY: same buffer; CMSG_NXTHDR returns null past msg_controllen.
            self.cmsg = unsafe { libc::CMSG_NXTHDR(self.hdr, self.cmsg) };
            // SAFETY: CMSG_LEN is pure arithmetic.
            let header = unsafe { libc::CMSG_LEN(0) } as usize;
            // cmsg_len is size_t on glibc but socklen_t on musl.
            #[allow(clippy::unnecessary_cast)]
            let Some(len) = (cmsg.cmsg_len as usize).checked_sub(header) else {
                continue;
            };
            // SAFETY: CMSG_DATA of a valid header points just past it, inside the
            // buffer; the kernel-written cmsg_len says `len` bytes are there.
            let data = unsafe { std::slice::from_raw_parts(libc::CMSG_DATA(cmsg), len) };
            return Some(Message {
                level: cmsg.cmsg_level,
                ty: cmsg.cmsg_type,
                data,
            });
        }
    }
}

/// Decodes one control message; `None` for anything we don't know or whose
/// payload has an unexpected size.
pub(crate) fn parse(m: &Message<'_>) -> Option<Cmsg> {
    let data = m.data;
    Some(match (m.level, m.ty) {
        (libc::SOL_SOCKET, libc::SCM_TIMESTAMPNS) => Cmsg::TimestampNs(timespec_ns(data)?),
        (libc::IPPROTO_IP, libc::IP_TOS) => Cmsg::Tos(small_int(data)?),
        (libc::IPPROTO_IP, libc::IP_TTL) => Cmsg::Ttl(small_int(data)?),
        (libc::IPPROTO_IPV6, libc::IPV6_TCLASS) => Cmsg::TrafficClass(small_int(data)?),
        (libc::IPPROTO_IPV6, libc::IPV6_HOPLIMIT) => Cmsg::HopLimit(small_int(data)?),
        (libc::IPPROTO_IPV6, libc::IPV6_FLOWINFO) => {
            let bytes: [u8; 4] = data.get(..4)?.try_into().ok()?;
            // The kernel puts the header's flowinfo word there, in network order.
            Cmsg::FlowInfo(u32::from_be_bytes(bytes) & FLOWINFO_MASK)
        }
        (libc::IPPROTO_IP, libc::IP_PKTINFO) => {
            let info = pktinfo_v4(data)?;
            Cmsg::PktInfoV4 {
                spec_dst: Ipv4Addr::from(info.ipi_spec_dst.s_addr.to_ne_bytes()),
                addr: Ipv4Addr::from(info.ipi_addr.s_addr.to_ne_bytes()),
            }
        }
        (libc::IPPROTO_IPV6, libc::IPV6_PKTINFO) => {
            Cmsg::PktInfoV6(Ipv6Addr::from(pktinfo_v6(data)?.ipi6_addr.s6_addr))
        }
        (libc::SOL_UDP, libc::UDP_GRO) => {
            let bytes: [u8; 4] = data.get(..4)?.try_into().ok()?;
            Cmsg::GroSize(
                u16::try_from(i32::from_ne_bytes(bytes))
                    .ok()
                    .filter(|&s| s > 0)?,
            )
        }
        _ => return None,
    })
}

/// The `in_pktinfo` of an `IP_PKTINFO` payload; `None` when it is too short.
pub(crate) fn pktinfo_v4(data: &[u8]) -> Option<libc::in_pktinfo> {
    if data.len() < size_of::<libc::in_pktinfo>() {
        return None;
    }
    // SAFETY: `data` holds at least one in_pktinfo; read_unaligned has no
    // alignment needs and every bit pattern is a valid in_pktinfo.
    Some(unsafe { ptr::read_unaligned(data.as_ptr().cast()) })
}

/// The `in6_pktinfo` of an `IPV6_PKTINFO` payload; `None` when it is too short.
pub(crate) fn pktinfo_v6(data: &[u8]) -> Option<libc::in6_pktinfo> {
    if data.len() < size_of::<libc::in6_pktinfo>() {
        return None;
    }
    // SAFETY: as in pktinfo_v4, for in6_pktinfo.
    Some(unsafe { ptr::read_unaligned(data.as_ptr().cast()) })
}

/// Traffic class and flow label bits of the first IPv6 header word.
pub(crate) const FLOWINFO_MASK: u32 = 0x0fff_ffff;

/// Reads a value the kernel delivers either as one byte (`IP_TOS` on
/// `recvmsg`) or as a native `int` (everything else, and `IP_TOS` in
/// `IP_PKTOPTIONS`).
fn small_int(data: &[u8]) -> Option<u8> {
    match data.len() {
        1 => Some(data[0]),
        n if n >= size_of::<libc::c_int>() => {
            let bytes: [u8; 4] = data[..4].try_into().ok()?;
            u8::try_from(libc::c_int::from_ne_bytes(bytes)).ok()
        }
        _ => None,
    }
}

fn timespec_ns(data: &[u8]) -> Option<u64> {
    if data.len() < size_of::<libc::timespec>() {
        return None;
    }
    // SAFETY: `data` holds at least one timespec; read_unaligned has no alignment needs.
    let ts: libc::timespec = unsafe { ptr::read_unaligned(data.as_ptr().cast()) };
    let secs = u64::try_from(ts.tv_sec).ok()?;
    let nanos = u64::try_from(ts.tv_nsec).ok()?;
    secs.checked_mul(1_000_000_000)?.checked_add(nanos)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn empty_msghdr() -> libc::msghdr {
        // SAFETY: msghdr is plain old data; all-zero (null pointers, zero lengths) is valid.
        unsafe { std::mem::zeroed() }
    }

    #[test]
    fn encoded_ints_decode_back() {
        let mut hdr = empty_msghdr();
        let mut buf = Buf::new();
        encode(
            &mut hdr,
            &mut buf,
            &[
                Out::Int(libc::IPPROTO_IPV6, libc::IPV6_TCLASS, 0xb9),
                Out::Int(libc::IPPROTO_IPV6, libc::IPV6_HOPLIMIT, 7),
                Out::Int(libc::IPPROTO_IP, libc::IP_TOS, 0x88),
            ],
        );
        let got: Vec<_> = Decoder::new(&hdr).collect();
        assert_eq!(
            got,
            [Cmsg::TrafficClass(0xb9), Cmsg::HopLimit(7), Cmsg::Tos(0x88)]
        );
    }

    #[test]
    fn encoded_pktinfo_decodes_back_between_ints() {
        let mut hdr = empty_msghdr();
        let mut buf = Buf::new();
        let v4 = Ipv4Addr::new(127, 0, 0, 2);
        let v6 = Ipv6Addr::LOCALHOST;
        let items = [
            Out::Int(libc::IPPROTO_IP, libc::IP_TOS, 0xb8),
            Out::SrcV4(v4),
            Out::Int(libc::IPPROTO_IP, libc::IP_TTL, 9),
            Out::SrcV6(v6),
        ];
        encode(&mut hdr, &mut buf, &items);
        // msg_controllen is size_t on glibc but socklen_t on musl.
        #[allow(clippy::unnecessary_cast)]
        let len = hdr.msg_controllen as usize;
        // int, in_pktinfo (12 bytes), int, in6_pktinfo (20 bytes), each padded.
        #[cfg(target_pointer_width = "64")]
        assert_eq!(len, 24 + 32 + 24 + 40);
        assert_eq!(
            len,
            items.iter().map(|i| space(i.payload_len())).sum::<usize>()
        );
        let got: Vec<_> = Decoder::new(&hdr).collect();
        assert_eq!(
            got,
            [
                Cmsg::Tos(0xb8),
                // On send only ipi_spec_dst matters; ipi_addr stays 0.
                Cmsg::PktInfoV4 {
                    spec_dst: v4,
                    addr: Ipv4Addr::UNSPECIFIED
                },
                Cmsg::Ttl(9),
                Cmsg::PktInfoV6(v6),
            ]
        );
    }

    #[test]
    fn option_bytes_encode_as_ip_retopts_and_ipv6_hopopts() {
        let mut hdr = empty_msghdr();
        let mut buf = Buf::new();
        let ra = [0x94, 4, 0, 0];
        let hbh = [0, 0, 5, 2, 0, 1, 1, 0];
        encode(
            &mut hdr,
            &mut buf,
            &[Out::Ipv4Options(ra), Out::HopByHop(hbh)],
        );
        let got: Vec<_> = Messages::new(&hdr)
            .map(|m| (m.level, m.ty, m.data.to_vec()))
            .collect();
        assert_eq!(
            got,
            [
                (libc::IPPROTO_IP, libc::IP_RETOPTS, ra.to_vec()),
                (libc::IPPROTO_IPV6, libc::IPV6_HOPOPTS, hbh.to_vec()),
            ]
        );
        // Neither is receive metadata the decoder knows.
        assert_eq!(Decoder::new(&hdr).count(), 0);
    }

    #[test]
    fn short_pktinfo_is_skipped() {
        let mut hdr = empty_msghdr();
        let mut buf = Buf::new();
        // An int-sized payload where an in_pktinfo / in6_pktinfo belongs.
        encode(
            &mut hdr,
            &mut buf,
            &[
                Out::Int(libc::IPPROTO_IP, libc::IP_PKTINFO, 1),
                Out::Int(libc::IPPROTO_IPV6, libc::IPV6_PKTINFO, 1),
                Out::Int(libc::IPPROTO_IP, libc::IP_TTL, 3),
            ],
        );
        let got: Vec<_> = Decoder::new(&hdr).collect();
        assert_eq!(got, [Cmsg::Ttl(3)]);
    }

    #[test]
    fn no_items_means_no_control_buffer() {
        let mut hdr = empty_msghdr();
        let mut buf = Buf::new();
        encode(&mut hdr, &mut buf, &[]);
        assert!(hdr.msg_control.is_null());
        assert_eq!(hdr.msg_controllen, 0);
        assert_eq!(Decoder::new(&hdr).count(), 0);
    }

    #[test]
    fn small_int_accepts_byte_and_int_payloads() {
        assert_eq!(small_int(&[0xb8]), Some(0xb8));
        assert_eq!(small_int(&0x88i32.to_ne_bytes()), Some(0x88));
        assert_eq!(small_int(&300i32.to_ne_bytes()), None);
        assert_eq!(small_int(&[1, 2]), None);
    }

    #[test]
    fn timespec_converts_to_ns() {
        let ts = libc::timespec {
            tv_sec: 3,
            tv_nsec: 5,
        };
        // SAFETY: viewing a live timespec as bytes for the duration of the call.
        let bytes = unsafe {
            std::slice::from_raw_parts(
                (&ts as *const libc::timespec).cast::<u8>(),
                size_of::<libc::timespec>(),
            )
        };
        assert_eq!(timespec_ns(bytes), Some(3_000_000_005));
        assert_eq!(timespec_ns(&bytes[..4]), None);
    }
}
