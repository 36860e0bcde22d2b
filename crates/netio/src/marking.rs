//! What a sender puts in the IP header — DS byte, TTL / hop limit, IPv6 flow
//! label — and how it gets onto a socket.

use std::io;
use std::net::Ipv6Addr;
use std::os::fd::AsRawFd;

use crate::sys::{self, Family};

/// Marking applied to sent packets.
///
/// `tos` is the whole DS byte (`DSCP << 2 | ECN`); for IPv6 it is the traffic
/// class. `ttl` is the IPv4 TTL or the IPv6 unicast hop limit. `flow_label`
/// is IPv6 only (20 bits); giving one for an IPv4 destination is an error
/// ([`MarkingError::FlowLabelOnIpv4`]), see [`Marking::without_flow_label`].
///
/// `None` leaves the kernel default in place.
///
/// # Flow labels on Linux
/// A socket may only send an explicit flow label it holds a *lease* on
/// (`IPV6_FLOWLABEL_MGR`, `linux/in6.h` `struct in6_flowlabel_req`), and only
/// after `IPV6_FLOWINFO_SEND` is on; the label then travels in `sin6_flowinfo`
/// of `connect` (connected sockets, TCP) or of each `sendmsg` (unconnected UDP).
/// Leases are global per network namespace. We take them with
/// `IPV6_FL_S_ANY` sharing, so several sockets and processes (a sender and the
/// receiver echoing the same flow, parallel TCP connections of one flow) can
/// hold the same label at once; a lease outlives its last socket by the
/// kernel's minimum linger of 6 s. A label someone else leased with a stricter
/// sharing mode gives `EPERM`. Per the kernel source (not exercised by our
/// tests), with `net.ipv6.flowlabel_state_ranges=1` labels with bit 19 set
/// (`0x80000..`) are reserved for stateless use and give `EINVAL`.
///
/// Without an explicit label, `net.ipv6.auto_flowlabels` (default 1) makes the
/// kernel put a hash-derived label on every IPv6 packet. `flow_label: Some(0)`
/// therefore switches the socket's automatic labels off
/// (`IPV6_AUTOFLOWLABEL=0`) so the wire really carries 0 — except with
/// `auto_flowlabels=2` (forced), which overrides the socket.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Marking {
    /// DS byte / traffic class: `DSCP << 2 | ECN`.
    pub tos: Option<u8>,
    /// IPv4 TTL or IPv6 unicast hop limit.
    pub ttl: Option<u8>,
    /// IPv6 flow label (20 bits). `Some(0)` turns automatic labels off.
    pub flow_label: Option<u32>,
}

/// Why a [`Marking`] cannot be applied. Returned inside an [`io::Error`]
/// (kind `InvalidInput` or `Unsupported`); get it back with
/// `err.get_ref().and_then(|e| e.downcast_ref::<MarkingError>())`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum MarkingError {
    /// The label has bits above the low 20.
    #[error("flow label {0:#x} does not fit in 20 bits")]
    FlowLabelTooLarge(u32),
    /// IPv4 has no flow label.
    #[error("a flow label was requested for an IPv4 destination")]
    FlowLabelOnIpv4,
    /// Linux fixes a TCP socket's flow label at `connect`; an accepted or
    /// already connected socket cannot take a new non-zero one.
    #[error("the flow label of an established TCP connection cannot be set")]
    FlowLabelAfterConnect,
}

impl From<MarkingError> for io::Error {
    fn from(e: MarkingError) -> Self {
        let kind = match e {
            MarkingError::FlowLabelAfterConnect => io::ErrorKind::Unsupported,
            MarkingError::FlowLabelTooLarge(_) | MarkingError::FlowLabelOnIpv4 => {
                io::ErrorKind::InvalidInput
            }
        };
        Self::new(kind, e)
    }
}

/// Largest IPv6 flow label.
pub const FLOW_LABEL_MAX: u32 = 0x000f_ffff;

impl Marking {
    /// The same marking without a flow label, for the IPv4 run of a flow.
    pub fn without_flow_label(self) -> Self {
        Self {
            flow_label: None,
            ..self
        }
    }

    /// Checks the marking against the path family.
    pub(crate) fn check(&self, ipv4_path: bool) -> Result<(), MarkingError> {
        match self.flow_label {
            Some(label) if label > FLOW_LABEL_MAX => Err(MarkingError::FlowLabelTooLarge(label)),
            Some(_) if ipv4_path => Err(MarkingError::FlowLabelOnIpv4),
            _ => Ok(()),
        }
    }
}

/// Sets the socket-wide DS byte and TTL / hop limit for packets that travel
/// as IPv4 (`ipv4_path`, also on an `AF_INET6` socket talking to a v4-mapped
/// peer) or as IPv6.
pub(crate) fn apply_tos_ttl(
    fd: &impl AsRawFd,
    ipv4_path: bool,
    marking: &Marking,
) -> io::Result<()> {
    let (level, tos_opt, ttl_opt) = if ipv4_path {
        (libc::IPPROTO_IP, libc::IP_TOS, libc::IP_TTL)
    } else {
        (
            libc::IPPROTO_IPV6,
            libc::IPV6_TCLASS,
            libc::IPV6_UNICAST_HOPS,
        )
    };
    if let Some(tos) = marking.tos {
        sys::setsockopt_int(fd, level, tos_opt, tos.into())?;
    }
    if let Some(ttl) = marking.ttl {
        sys::setsockopt_int(fd, level, ttl_opt, ttl.into())?;
    }
    Ok(())
}

/// Prepares an `AF_INET6` socket to send `label` and returns the host-order
/// flowinfo to put in `sin6_flowinfo` of the following `connect`/`sendmsg`.
///
/// A non-zero label is leased and `IPV6_FLOWINFO_SEND` switched on; zero
/// switches the socket's automatic labels off instead.
pub(crate) fn prepare_flow_label(
    fd: &impl AsRawFd,
    family: Family,
    dst: Ipv6Addr,
    label: u32,
) -> io::Result<u32> {
    debug_assert_eq!(family, Family::V6);
    if label == 0 {
        sys::setsockopt_int(fd, libc::IPPROTO_IPV6, libc::IPV6_AUTOFLOWLABEL, 0)?;
        return Ok(0);
    }
    enable_flowinfo_send(fd)?;
    lease(fd, dst, label)?;
    Ok(label)
}

/// `IPV6_FLOWINFO_SEND`: take the flow label from `sin6_flowinfo`.
pub(crate) fn enable_flowinfo_send(fd: &impl AsRawFd) -> io::Result<()> {
    sys::setsockopt_int(fd, libc::IPPROTO_IPV6, libc::IPV6_FLOWINFO_SEND, 1)
}

/// `struct in6_flowlabel_req` from `linux/in6.h`.
#[repr(C)]
#[derive(Clone, Copy)]
struct FlowLabelReq {
    dst: libc::in6_addr,
    /// Network order.
    label: u32,
    action: u8,
    share: u8,
    flags: u16,
    expires: u16,
    linger: u16,
    pad: u32,
}

const _: () = assert!(size_of::<FlowLabelReq>() == 32);

// linux/in6.h (checked against /usr/include/linux/in6.h, kernel 6.x).
const IPV6_FL_A_GET: u8 = 0;
const IPV6_FL_F_CREATE: u16 = 1;
const IPV6_FL_S_ANY: u8 = 255;

/// Leases `label` for this socket (creating it, or joining an existing
/// shareable one). `dst` is informational for the kernel
/// (`/proc/net/ip6_flowlabel`); the lease is per socket and label.
pub(crate) fn lease(fd: &impl AsRawFd, dst: Ipv6Addr, label: u32) -> io::Result<()> {
    lease_shared(fd, dst, label, IPV6_FL_S_ANY)
}

fn lease_shared(fd: &impl AsRawFd, dst: Ipv6Addr, label: u32, share: u8) -> io::Result<()> {
    let req = FlowLabelReq {
        dst: libc::in6_addr {
            s6_addr: dst.octets(),
        },
        label: label.to_be(),
        action: IPV6_FL_A_GET,
        share,
        flags: IPV6_FL_F_CREATE,
        expires: 0,
        linger: 0,
        pad: 0,
    };
    sys::setsockopt(fd, libc::IPPROTO_IPV6, libc::IPV6_FLOWLABEL_MGR, &req).map_err(|e| {
        io::Error::new(
            e.kind(),
            format!("leasing IPv6 flow label {label:#x} (IPV6_FLOWLABEL_MGR): {e}"),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn check_rejects_wide_labels_and_labels_on_ipv4() {
        let m = Marking {
            flow_label: Some(0x10_0000),
            ..Marking::default()
        };
        assert_eq!(
            m.check(false),
            Err(MarkingError::FlowLabelTooLarge(0x10_0000))
        );
        let m = Marking {
            flow_label: Some(0x12345),
            ..Marking::default()
        };
        assert_eq!(m.check(true), Err(MarkingError::FlowLabelOnIpv4));
        assert_eq!(m.check(false), Ok(()));
        assert_eq!(m.without_flow_label().check(true), Ok(()));
    }

    fn v6_socket() -> std::os::fd::OwnedFd {
        sys::socket(Family::V6, libc::SOCK_DGRAM).unwrap()
    }

    #[test]
    fn two_sockets_can_lease_the_same_label() {
        let (a, b) = (v6_socket(), v6_socket());
        lease(&a, Ipv6Addr::LOCALHOST, 0xa1a1).unwrap();
        lease(&b, Ipv6Addr::LOCALHOST, 0xa1a1).unwrap();
    }

    #[test]
    fn exclusive_lease_elsewhere_is_refused() {
        const IPV6_FL_S_EXCL: u8 = 1;
        // An exclusive label lingers for 6 s after its socket closes and would
        // refuse a rerun, so pick a fresh one each run.
        let label = (crate::clock::mono_ns() as u32 & 0x7_ffff) | 1;
        let (a, b) = (v6_socket(), v6_socket());
        lease_shared(&a, Ipv6Addr::LOCALHOST, label, IPV6_FL_S_EXCL).unwrap();
        let err = lease(&b, Ipv6Addr::LOCALHOST, label).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::PermissionDenied, "{err}");
    }

    #[test]
    fn marking_error_survives_in_io_error() {
        let e: io::Error = MarkingError::FlowLabelAfterConnect.into();
        assert_eq!(e.kind(), io::ErrorKind::Unsupported);
        let inner = e.get_ref().and_then(|e| e.downcast_ref::<MarkingError>());
        assert_eq!(inner, Some(&MarkingError::FlowLabelAfterConnect));
    }
}
