//! Path MTU on a UDP socket: send with Don't Fragment at any size, and read the kernel's
//! path MTU for the connected peer.
//!
//! - [`set_dont_fragment`]: IPv4 `IP_MTU_DISCOVER = IP_PMTUDISC_PROBE` (DF set, the
//!   cached path MTU ignored); IPv6 `IPV6_MTU_DISCOVER = IPV6_PMTUDISC_PROBE` and
//!   `IPV6_DONTFRAG = 1` (RFC 3542 §11.2: never fragment at the source). A datagram larger
//!   than the route's MTU then fails with `EMSGSIZE` ([`is_too_big`]) instead of going out
//!   in fragments, and one that fits goes out at its size even when ICMP lowered the cached
//!   path MTU: the probes of DPLPMTUD (RFC 8899 §4.4, RFC 4821).
//! - [`path_mtu`]: `getsockopt(IP_MTU / IPV6_MTU)` on a connected socket: the route's MTU
//!   lowered by what classic PMTUD learnt from ICMP (RFC 1191, RFC 8201).
//!
//! Both take any socket's fd (`AsFd`), so they serve [`crate::UdpSocket`] and std's.

use std::io;
use std::os::fd::AsFd;

use crate::sys;

/// The socket's family: `AF_INET` or `AF_INET6` (`SO_DOMAIN`).
fn domain(fd: &impl AsFd) -> io::Result<libc::c_int> {
    sys::getsockopt_int(&fd.as_fd(), libc::SOL_SOCKET, libc::SO_DOMAIN)
}

/// Sends with Don't Fragment at every size, ignoring the cached path MTU (see the module
/// doc). On an IPv6 socket the IPv4 option is set too, for v4-mapped peers of a
/// dual-stack socket, where the kernel allows it.
pub fn set_dont_fragment(fd: impl AsFd) -> io::Result<()> {
    let fd = fd.as_fd();
    if domain(&fd)? == libc::AF_INET6 {
        sys::setsockopt_int(
            &fd,
            libc::IPPROTO_IPV6,
            libc::IPV6_MTU_DISCOVER,
            libc::IPV6_PMTUDISC_PROBE,
        )?;
        sys::setsockopt_int(&fd, libc::IPPROTO_IPV6, libc::IPV6_DONTFRAG, 1)?;
        // v4-mapped traffic follows the IPv4 option; a kernel that refuses it on an
        // IPv6 socket leaves IPv4 peers as they were.
        let _ = sys::setsockopt_int(
            &fd,
            libc::IPPROTO_IP,
            libc::IP_MTU_DISCOVER,
            libc::IP_PMTUDISC_PROBE,
        );
        Ok(())
    } else {
        sys::setsockopt_int(
            &fd,
            libc::IPPROTO_IP,
            libc::IP_MTU_DISCOVER,
            libc::IP_PMTUDISC_PROBE,
        )
    }
}

/// The kernel's path MTU towards a connected socket's peer, in bytes of IP packet
/// (`IP_MTU` / `IPV6_MTU`; `ENOTCONN` on an unconnected socket). On a dual-stack IPv6
/// socket connected to a v4-mapped peer, the IPv4 value.
pub fn path_mtu(fd: impl AsFd) -> io::Result<u32> {
    let fd = fd.as_fd();
    let v = if domain(&fd)? == libc::AF_INET6 {
        match sys::getsockopt_int(&fd, libc::IPPROTO_IPV6, libc::IPV6_MTU) {
            Ok(v) => v,
            Err(_) => sys::getsockopt_int(&fd, libc::IPPROTO_IP, libc::IP_MTU)?,
        }
    } else {
        sys::getsockopt_int(&fd, libc::IPPROTO_IP, libc::IP_MTU)?
    };
    Ok(v.max(0) as u32)
}

/// Whether a send failed because the datagram is larger than the path MTU allows with
/// Don't Fragment (`EMSGSIZE`).
pub fn is_too_big(e: &io::Error) -> bool {
    e.raw_os_error() == Some(libc::EMSGSIZE)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::UdpSocket;

    fn connected(dst: &str) -> UdpSocket {
        let dst: std::net::SocketAddr = dst.parse().unwrap();
        let any = if dst.is_ipv4() { "0.0.0.0:0" } else { "[::]:0" };
        let s = UdpSocket::bind(any.parse().unwrap(), false).unwrap();
        s.connect(dst).unwrap();
        s
    }

    #[test]
    fn path_mtu_of_a_connected_loopback_socket_is_65535_over_ipv4_and_65536_over_ipv6() {
        // The port needs no listener: connect only picks the route. Loopback's MTU is
        // 65,536; IPv4 caps it at its largest packet, 65,535 (IP_MAX_MTU).
        assert_eq!(path_mtu(connected("127.0.0.1:9")).unwrap(), 65535);
        assert_eq!(path_mtu(connected("[::1]:9")).unwrap(), 65536);
        let unconnected = UdpSocket::bind("127.0.0.1:0".parse().unwrap(), false).unwrap();
        assert_eq!(
            path_mtu(&unconnected).unwrap_err().raw_os_error(),
            Some(libc::ENOTCONN)
        );
    }

    #[test]
    fn dont_fragment_above_the_route_mtu_is_emsgsize_not_an_error() {
        // An IPv6 datagram of 65,500 payload bytes is a 65,548-byte packet, above
        // loopback's 65,536: fragmented without DF, refused with it.
        let rx = UdpSocket::bind("[::1]:0".parse().unwrap(), false).unwrap();
        let dst = rx.local_addr().unwrap().to_string();
        let big = vec![0u8; 65_500];
        let plain = connected(&dst);
        assert_eq!(plain.send(&big).unwrap(), 65_500);
        let df = connected(&dst);
        set_dont_fragment(&df).unwrap();
        let e = df.send(&big).unwrap_err();
        assert!(is_too_big(&e), "{e}");
        // What fits the route still goes.
        assert_eq!(df.send(&big[..65_000]).unwrap(), 65_000);
        assert!(!is_too_big(&io::Error::from_raw_os_error(libc::EAGAIN)));
        // IPv4 sockets take the option too.
        set_dont_fragment(connected("127.0.0.1:9")).unwrap();
    }
}
