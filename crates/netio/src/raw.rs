//! A raw IP socket for RSVP: IP protocol 46 (RFC 2205 §1.1 and Appendix C:
//! RSVP messages travel as raw IP datagrams of their own protocol number),
//! for the host side of RSVP. Routers intercept RSVP on their `AF_PACKET`
//! rings instead, so nothing here asks for `IP_ROUTER_ALERT` /
//! `IPV6_ROUTER_ALERT`: a host only receives RSVP addressed to it.
//!
//! - **Open**: `socket(AF_INET | AF_INET6, SOCK_RAW | SOCK_NONBLOCK |
//!   SOCK_CLOEXEC, IPPROTO_RSVP)`. Needs `CAP_NET_RAW`; without it
//!   [`RawRsvpSocket::open`] fails with `PermissionDenied` and a message that
//!   says so.
//! - **Send**: the kernel builds the IP header. Everything per datagram
//!   travels as control messages of one `sendmsg`, so concurrent sends never
//!   see each other's settings: TTL (`IP_TTL`) / hop limit (`IPV6_HOPLIMIT`),
//!   the source address (`IP_PKTINFO`'s `ipi_spec_dst` / `IPV6_PKTINFO`'s
//!   `ipi6_addr`), and the Router Alert that RFC 2205 §3.1.3 asks of Path,
//!   PathTear and ResvConf: on IPv4 the header option of RFC 2113 §2.1
//!   (type 148, length 4, value 0) as `IP_RETOPTS` (the per-datagram form of
//!   the `IP_OPTIONS` socket option), on IPv6 a Hop-by-Hop Options header
//!   with the option of RFC 2711 §2.1 (type 5, length 2, value 1 = "RSVP") as
//!   `IPV6_HOPOPTS` (which Linux lets only `CAP_NET_RAW` send).
//! - **Receive**: IPv4 raw sockets hand over the whole IP header, IPv6 ones
//!   only the payload. [`RawDatagram`] evens that out: addresses, TTL / hop
//!   limit, the arrival interface (`IP_PKTINFO` / `IPV6_RECVPKTINFO`), the
//!   Router Alert value if the packet had one (from the IPv4 options, or the
//!   Hop-by-Hop header `IPV6_RECVHOPOPTS` delivers), and byte ranges of
//!   `buf`: `payload` (the RSVP message) and, on IPv4, `header`.
//!
//! On loopback every raw RSVP socket of the namespace receives every RSVP
//! datagram, the sender's own socket included: callers filter by address.

use std::io;
use std::mem::zeroed;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::ops::Range;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd, RawFd};

use crate::cmsg::{self, Cmsg};
use crate::sys::{self, cvt_size, Family, SockAddr};

/// The IP protocol number of RSVP (`IPPROTO_RSVP`).
pub const PROTOCOL: u8 = 46;

/// The IPv4 Router Alert option, RFC 2113 §2.1: type 148 (copied, class 0,
/// number 20), length 4, value 0 ("router shall examine packet").
pub const ROUTER_ALERT_V4: [u8; 4] = [0x94, 0x04, 0x00, 0x00];

/// The Hop-by-Hop Options header sent with an IPv6 Router Alert, RFC 2711
/// §2.1: Next Header (filled in by the kernel), Hdr Ext Len 0 (8 bytes), the
/// Router Alert option (type 5, length 2, value 1 = "datagram contains an
/// RSVP message", at offset 2 as its 2n+0 alignment asks) and a PadN of no
/// data bytes to end on 8 bytes (RFC 8200 §4.2).
pub const HOP_BY_HOP_RSVP: [u8; 8] = [0, 0, 5, 2, 0, 1, 1, 0];

/// IPv4 option type of Router Alert (RFC 2113).
const IPOPT_RA: u8 = 148;
/// IPv6 Hop-by-Hop option type of Router Alert (RFC 2711).
const IPV6_OPT_RA: u8 = 5;

/// One RSVP datagram as [`RawRsvpSocket::recv`] found it; the ranges index
/// the buffer it was given.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RawDatagram {
    /// The IP header's source address.
    pub src: IpAddr,
    /// The IP header's destination address (one of ours).
    pub dst: IpAddr,
    /// TTL (IPv4) or hop limit (IPv6) the datagram arrived with; 0 when the
    /// kernel did not say (IPv6 without its `IPV6_HOPLIMIT` message).
    pub ttl: u8,
    /// The interface it arrived on (`ipi_ifindex` / `ipi6_ifindex`); 0 when
    /// the kernel did not say.
    pub ifindex: u32,
    /// The RSVP message: on IPv4 the bytes after the IP header, on IPv6 all
    /// of what was read.
    pub payload: Range<usize>,
    /// IPv4: the IP header with its options (`0..IHL·4`); IPv6: empty
    /// (`0..0`), the kernel keeps the IPv6 header.
    pub header: Range<usize>,
    /// The Router Alert value the datagram carried (IPv4 option 148: 0;
    /// IPv6 Hop-by-Hop option 5: 1 for RSVP), `None` without one. A
    /// Hop-by-Hop header too long for the control buffer (over ~170 bytes) is
    /// not seen.
    pub router_alert: Option<u16>,
    /// The datagram was longer than the buffer: `payload` ends at the
    /// buffer's end and the message is incomplete (drop it).
    pub truncated: bool,
}

/// A raw IP socket of protocol 46 (RSVP), one address family, non-blocking.
/// Wait for it with [`crate::poll`] on [`Self::as_raw_fd`]. `Send + Sync`:
/// one thread may receive while another sends.
#[derive(Debug)]
pub struct RawRsvpSocket {
    fd: OwnedFd,
    family: Family,
}

impl RawRsvpSocket {
    /// Opens a raw RSVP socket for IPv6 (`v6`) or IPv4, non-blocking, with
    /// the receive metadata [`RawDatagram`] reports switched on (`IP_PKTINFO`;
    /// `IPV6_RECVPKTINFO`, `IPV6_RECVHOPLIMIT`, `IPV6_RECVHOPOPTS`).
    ///
    /// Without `CAP_NET_RAW` the kernel refuses (`EPERM`): the error is then
    /// `PermissionDenied` and says that it needs root or `CAP_NET_RAW`
    /// (the errno itself is not kept).
    pub fn open(v6: bool) -> io::Result<Self> {
        let family = if v6 { Family::V6 } else { Family::V4 };
        let fd = sys::socket_protocol(
            family,
            libc::SOCK_RAW | libc::SOCK_NONBLOCK,
            libc::IPPROTO_RSVP,
        )
        .map_err(needs_cap_net_raw)?;
        let on = |level, name| sys::setsockopt_int(&fd, level, name, 1);
        match family {
            Family::V4 => on(libc::IPPROTO_IP, libc::IP_PKTINFO)?,
            Family::V6 => {
                on(libc::IPPROTO_IPV6, libc::IPV6_RECVPKTINFO)?;
                on(libc::IPPROTO_IPV6, libc::IPV6_RECVHOPLIMIT)?;
                on(libc::IPPROTO_IPV6, libc::IPV6_RECVHOPOPTS)?;
            }
        }
        Ok(Self { fd, family })
    }

    /// Whether this is an `AF_INET6` socket.
    pub fn is_v6(&self) -> bool {
        self.family == Family::V6
    }

    /// Sends `payload` (an RSVP message) to `dst` as one IP datagram of
    /// protocol 46 with TTL / hop limit `ttl`, from `src` (a local address;
    /// `None` or unspecified: the kernel's choice) and, with
    /// `router_alert`, the Router Alert option ([`ROUTER_ALERT_V4`] or a
    /// [`HOP_BY_HOP_RSVP`] header). See the module docs for how.
    ///
    /// `InvalidInput`: `dst` or `src` of the other family than the socket
    /// (v4-mapped IPv6 counts as IPv4), or a `ttl` of 0. Kernel errors keep
    /// their errno; a full send buffer is `WouldBlock` (the socket is
    /// non-blocking). Link-local IPv6 destinations need an interface the
    /// call cannot name: the kernel refuses them.
    pub fn send(
        &self,
        dst: IpAddr,
        src: Option<IpAddr>,
        ttl: u8,
        router_alert: bool,
        payload: &[u8],
    ) -> io::Result<()> {
        if ttl == 0 {
            return Err(invalid("a TTL of 0 never leaves the host".into()));
        }
        let dst = dst.to_canonical();
        let src = src
            .map(|ip| ip.to_canonical())
            .filter(|ip| !ip.is_unspecified());
        let mut items = [cmsg::Out::Int(0, 0, 0); 3];
        let mut count = 0;
        let mut push = |item| {
            items[count] = item;
            count += 1;
        };
        match (self.family, dst, src) {
            (Family::V4, IpAddr::V4(_), None | Some(IpAddr::V4(_))) => {
                push(cmsg::Out::Int(libc::IPPROTO_IP, libc::IP_TTL, ttl.into()));
                if router_alert {
                    push(cmsg::Out::Ipv4Options(ROUTER_ALERT_V4));
                }
                if let Some(IpAddr::V4(ip)) = src {
                    push(cmsg::Out::SrcV4(ip));
                }
            }
            (Family::V6, IpAddr::V6(_), None | Some(IpAddr::V6(_))) => {
                let hops = libc::IPV6_HOPLIMIT;
                push(cmsg::Out::Int(libc::IPPROTO_IPV6, hops, ttl.into()));
                if router_alert {
                    push(cmsg::Out::HopByHop(HOP_BY_HOP_RSVP));
                }
                if let Some(IpAddr::V6(ip)) = src {
                    push(cmsg::Out::SrcV6(ip));
                }
            }
            _ => {
                let family = if self.is_v6() { "IPv6" } else { "IPv4" };
                let src = src.map_or(String::new(), |s| format!(" from {s}"));
                return Err(invalid(format!(
                    "RSVP to {dst}{src} on an {family} raw socket"
                )));
            }
        }
        // The port of a raw socket's address must be 0 (or, on IPv6, the protocol).
        let mut name = SockAddr::new(SocketAddr::new(dst, 0), 0);
        let mut iov = libc::iovec {
            iov_base: payload.as_ptr().cast_mut().cast(),
            iov_len: payload.len(),
        };
        // SAFETY: msghdr is plain old data; all-zero is valid.
        let mut hdr: libc::msghdr = unsafe { zeroed() };
        hdr.msg_name = name.as_mut_ptr().cast();
        hdr.msg_namelen = name.len();
        hdr.msg_iov = &mut iov;
        hdr.msg_iovlen = 1;
        let mut control = cmsg::Buf::new();
        cmsg::encode(&mut hdr, &mut control, &items[..count]);
        let sent = loop {
            // SAFETY: `hdr` points at `name`, `iov` (a readable view of `payload`; the
            // kernel does not write through it) and `control`, all alive for the call.
            let ret = unsafe { libc::sendmsg(self.fd.as_raw_fd(), &hdr, 0) };
            match cvt_size(ret) {
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                other => break other?,
            }
        };
        if sent != payload.len() {
            return Err(io::Error::new(
                io::ErrorKind::WriteZero,
                format!("sent {sent} of {} bytes", payload.len()),
            ));
        }
        Ok(())
    }

    /// Takes one datagram into `buf`; `Ok(None)` when none is waiting
    /// (`EAGAIN`) or a signal interrupted the read. IPv4 datagrams are read
    /// with their IP header (see [`RawDatagram::header`]); a header that does
    /// not parse (only a `buf` shorter than it) is `InvalidData`.
    pub fn recv(&self, buf: &mut [u8]) -> io::Result<Option<RawDatagram>> {
        let mut name = SockAddr::empty();
        let mut iov = libc::iovec {
            iov_base: buf.as_mut_ptr().cast(),
            iov_len: buf.len(),
        };
        let mut control = cmsg::Buf::new();
        // SAFETY: msghdr is plain old data; all-zero is valid.
        let mut hdr: libc::msghdr = unsafe { zeroed() };
        hdr.msg_name = name.as_mut_ptr().cast();
        hdr.msg_namelen = name.len();
        hdr.msg_iov = &mut iov;
        hdr.msg_iovlen = 1;
        hdr.msg_control = control.0.as_mut_ptr().cast();
        hdr.msg_controllen = cmsg::SPACE as _;
        // SAFETY: `hdr` points at `name` (a sockaddr_storage and its length), `iov`
        // (covering `buf`, writable) and `control` (cmsg-aligned, SPACE bytes), all
        // alive and not otherwise borrowed during the call.
        let ret = unsafe { libc::recvmsg(self.fd.as_raw_fd(), &mut hdr, libc::MSG_TRUNC) };
        // With MSG_TRUNC a raw socket returns the datagram's real length.
        let len = match cvt_size(ret) {
            Ok(len) => len,
            Err(e) if matches!(e.raw_os_error(), Some(libc::EAGAIN | libc::EINTR)) => {
                return Ok(None)
            }
            Err(e) => return Err(e),
        };
        *name.len_mut() = hdr.msg_namelen;
        let stored = len.min(buf.len());
        let mut meta = Meta::default();
        for m in cmsg::Messages::new(&hdr) {
            meta.take(&m);
        }
        let truncated = len > buf.len() || hdr.msg_flags & libc::MSG_TRUNC != 0;
        let got = match self.family {
            Family::V4 => ipv4_datagram(&buf[..stored], &meta),
            Family::V6 => name.to_std().map(|src| RawDatagram {
                src: src.ip(),
                dst: meta.dst.unwrap_or(IpAddr::V6(Ipv6Addr::UNSPECIFIED)),
                ttl: meta.hop_limit.unwrap_or(0),
                ifindex: meta.ifindex,
                payload: 0..stored,
                header: 0..0,
                router_alert: meta.hop_by_hop_alert,
                truncated: false,
            }),
        };
        let mut got = got.ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::InvalidData,
                format!("raw RSVP datagram of {len} bytes without a readable IP header"),
            )
        })?;
        got.truncated = truncated;
        Ok(Some(got))
    }

    /// The socket's descriptor, for [`crate::poll`].
    pub fn as_raw_fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }
}

impl AsFd for RawRsvpSocket {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }
}

impl AsRawFd for RawRsvpSocket {
    fn as_raw_fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }
}

/// What the control messages of one received datagram said.
#[derive(Default)]
struct Meta {
    dst: Option<IpAddr>,
    ifindex: u32,
    hop_limit: Option<u8>,
    hop_by_hop_alert: Option<u16>,
}

impl Meta {
    fn take(&mut self, m: &cmsg::Message<'_>) {
        match (m.level, m.ty) {
            (libc::IPPROTO_IP, libc::IP_PKTINFO) => {
                if let Some(info) = cmsg::pktinfo_v4(m.data) {
                    self.ifindex = u32::try_from(info.ipi_ifindex).unwrap_or(0);
                    let addr = Ipv4Addr::from(info.ipi_addr.s_addr.to_ne_bytes());
                    self.dst = Some(IpAddr::V4(addr));
                }
            }
            (libc::IPPROTO_IPV6, libc::IPV6_PKTINFO) => {
                if let Some(info) = cmsg::pktinfo_v6(m.data) {
                    self.ifindex = info.ipi6_ifindex;
                    let addr = Ipv6Addr::from(info.ipi6_addr.s6_addr);
                    self.dst = Some(IpAddr::V6(addr));
                }
            }
            (libc::IPPROTO_IPV6, libc::IPV6_HOPOPTS) => {
                self.hop_by_hop_alert = ipv6_router_alert(m.data);
            }
            _ => {
                if let Some(Cmsg::HopLimit(v)) = cmsg::parse(m) {
                    self.hop_limit = Some(v);
                }
            }
        }
    }
}

/// An IPv4 datagram as a raw socket reads it (header first); `None` when the
/// header is not there whole.
fn ipv4_datagram(packet: &[u8], meta: &Meta) -> Option<RawDatagram> {
    let first = *packet.first()?;
    let header_len = usize::from(first & 0x0f) * 4;
    if first >> 4 != 4 || header_len < 20 || packet.len() < header_len {
        return None;
    }
    let addr = |at: usize| -> Option<Ipv4Addr> {
        let octets: [u8; 4] = packet.get(at..at + 4)?.try_into().ok()?;
        Some(Ipv4Addr::from(octets))
    };
    Some(RawDatagram {
        src: IpAddr::V4(addr(12)?),
        dst: IpAddr::V4(addr(16)?),
        ttl: packet[8],
        ifindex: meta.ifindex,
        payload: header_len..packet.len(),
        header: 0..header_len,
        router_alert: ipv4_router_alert(&packet[20..header_len]),
        truncated: false,
    })
}

/// The value of a Router Alert option (RFC 2113 §2.1) among IPv4 header
/// options, if there is a well-formed one before End or a malformed option.
fn ipv4_router_alert(options: &[u8]) -> Option<u16> {
    let mut at = 0;
    while let Some(&ty) = options.get(at) {
        match ty {
            0 => return None, // End of Option List
            1 => at += 1,     // No Operation
            _ => {
                let len = usize::from(*options.get(at + 1)?);
                let body = options.get(at..at + len).filter(|_| len >= 2)?;
                if ty == IPOPT_RA && len == 4 {
                    return Some(u16::from_be_bytes([body[2], body[3]]));
                }
                at += len;
            }
        }
    }
    None
}

/// The value of a Router Alert option (RFC 2711 §2.1) in a whole IPv6
/// Hop-by-Hop Options header (`hbh[0]` = Next Header, `hbh[1]` = length in
/// 8-byte units beyond the first), if it holds a well-formed one.
fn ipv6_router_alert(hbh: &[u8]) -> Option<u16> {
    let end = (usize::from(*hbh.get(1)?) + 1) * 8;
    let options = hbh.get(2..end)?;
    let mut at = 0;
    while let Some(&ty) = options.get(at) {
        if ty == 0 {
            at += 1; // Pad1
            continue;
        }
        let len = usize::from(*options.get(at + 1)?);
        let data = options.get(at + 2..at + 2 + len)?;
        if ty == IPV6_OPT_RA && len == 2 {
            return Some(u16::from_be_bytes([data[0], data[1]]));
        }
        at += 2 + len;
    }
    None
}

fn invalid(msg: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, msg)
}

/// Explains a refused raw socket: the usual cause is a missing `CAP_NET_RAW`.
fn needs_cap_net_raw(e: io::Error) -> io::Error {
    if e.kind() != io::ErrorKind::PermissionDenied {
        return e;
    }
    io::Error::new(
        io::ErrorKind::PermissionDenied,
        format!("a raw IP socket for RSVP (protocol {PROTOCOL}) needs root or CAP_NET_RAW ({e})"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn router_alert_constants_parse_back() {
        assert_eq!(ipv4_router_alert(&ROUTER_ALERT_V4), Some(0));
        assert_eq!(ipv6_router_alert(&HOP_BY_HOP_RSVP), Some(1));
        // The option of RFC 2711 sits at a 2n+0 offset of the header.
        assert_eq!(HOP_BY_HOP_RSVP[2..6], [5, 2, 0, 1]);
        assert_eq!(HOP_BY_HOP_RSVP.len() % 8, 0);
    }

    #[test]
    fn ipv4_options_scan_past_nop_and_others_and_stop_at_end() {
        // NOP, a 3-byte unknown option, then Router Alert with value 7.
        assert_eq!(ipv4_router_alert(&[1, 0x88, 3, 9, 0x94, 4, 0, 7]), Some(7));
        // End of Option List before it: not seen.
        assert_eq!(ipv4_router_alert(&[0, 0x94, 4, 0, 0]), None);
        // Wrong length, length 0 (would loop), running past the end.
        assert_eq!(ipv4_router_alert(&[0x94, 3, 0, 0]), None);
        assert_eq!(ipv4_router_alert(&[0x88, 0, 0x94, 4, 0, 0]), None);
        assert_eq!(ipv4_router_alert(&[0x94, 4, 0]), None);
        assert_eq!(ipv4_router_alert(&[]), None);
    }

    #[test]
    fn ipv6_hop_by_hop_scans_padding_and_other_options() {
        // Pad1, an unknown option of 1 byte, then Router Alert whose value
        // would run past the 8-byte header.
        let hbh = [58, 0, 0, 0x1e, 1, 0xaa, 5, 2, 0, 0];
        assert_eq!(ipv6_router_alert(&hbh), None);
        // The same in a 16-byte header: Router Alert value 0 (MLD).
        let hbh = [58, 1, 0, 0x1e, 1, 0xaa, 5, 2, 0, 0, 1, 4, 0, 0, 0, 0];
        assert_eq!(ipv6_router_alert(&hbh), Some(0));
        // Only PadN: no alert; header shorter than its length: none.
        assert_eq!(ipv6_router_alert(&[6, 0, 1, 4, 0, 0, 0, 0]), None);
        assert_eq!(ipv6_router_alert(&HOP_BY_HOP_RSVP[..7]), None);
    }

    #[test]
    fn ipv4_datagram_splits_header_and_payload() {
        let mut packet = vec![
            0x46, 0, 0, 30, 0, 0, 0, 0, 9, PROTOCOL, 0, 0, 198, 18, 0, 1, 198, 18, 0, 2,
        ];
        packet.extend_from_slice(&ROUTER_ALERT_V4);
        packet.extend_from_slice(b"rsvp!!");
        let meta = Meta {
            ifindex: 3,
            ..Meta::default()
        };
        let got = ipv4_datagram(&packet, &meta).unwrap();
        assert_eq!(
            got,
            RawDatagram {
                src: IpAddr::V4(Ipv4Addr::new(198, 18, 0, 1)),
                dst: IpAddr::V4(Ipv4Addr::new(198, 18, 0, 2)),
                ttl: 9,
                ifindex: 3,
                payload: 24..30,
                header: 0..24,
                router_alert: Some(0),
                truncated: false,
            }
        );
        assert_eq!(&packet[got.payload], b"rsvp!!");
        // Cut inside the options, IHL under 5, not version 4: no datagram.
        assert_eq!(ipv4_datagram(&packet[..22], &meta), None);
        packet[0] = 0x44;
        assert_eq!(ipv4_datagram(&packet, &meta), None);
        packet[0] = 0x65;
        assert_eq!(ipv4_datagram(&packet, &meta), None);
    }

    #[test]
    fn permission_errors_say_what_is_needed_and_others_pass_unchanged() {
        let e = needs_cap_net_raw(io::Error::from_raw_os_error(libc::EPERM));
        assert_eq!(e.kind(), io::ErrorKind::PermissionDenied);
        assert!(e.to_string().contains("needs root or CAP_NET_RAW"), "{e}");
        let e = needs_cap_net_raw(io::Error::from_raw_os_error(libc::EAFNOSUPPORT));
        assert_eq!(e.raw_os_error(), Some(libc::EAFNOSUPPORT));
    }
}
