//! A network device's offloads, read and turned off through the kernel's ethtool
//! interface, as `ethtool -K IF tso off gso off gro off tx off rx off` does, without the
//! `ethtool` program: the `SIOCETHTOOL` ioctl with the per-feature commands of
//! `linux/ethtool.h` (`ETHTOOL_GTSO`/`ETHTOOL_STSO` and their kin, each carrying a
//! `struct ethtool_value`).
//!
//! The lab turns these off on every veth so that a router reading frames from an
//! `AF_PACKET` ring sees wire-sized frames with full checksums.
//!
//! # Kernel behaviour this relies on (`net/ethtool/ioctl.c`)
//! - A set command changes the device's *wanted* features; the kernel then resolves
//!   dependencies (`netdev_fix_features`: no TSO without TX checksum offload), so what
//!   is in force is read back, not assumed.
//! - A set on a feature the device cannot change is `EOPNOTSUPP` ([`EthtoolError::Unsupported`]):
//!   `lo`'s checksum offloads, for one.
//! - Reading needs no privilege; setting needs `CAP_NET_ADMIN` in the device's network
//!   namespace (`EPERM`, [`EthtoolError::NotPermitted`]).
//! - The device is looked up by name in the network namespace of the socket the ioctl
//!   goes through; each call makes its socket, so that is the calling thread's
//!   namespace (see [`netns::enter`](crate::netns::enter)).
//!
//! # Why not a crate, and why not `ETHTOOL_SFEATURES`
//! rust-netlink's `ethtool` crate (0.2) speaks the ethtool generic-netlink family, but
//! its feature handle only reads (`EthtoolFeatureHandle::get`, no set), and it brings
//! an async runtime (tokio or async-std) and the netlink-proto stack for what is here
//! one ioctl per offload. `ETHTOOL_SFEATURES` addresses features by bit number, which
//! differs between kernels and must first be looked up by name (`ETH_SS_FEATURES`
//! strings); each legacy command names one group of features (every TSO variant, every
//! TX checksum kind) by a number fixed since Linux 2.6, and kernels still serve them by
//! mapping them onto the same feature bits (`ethtool_get_feature_mask`).

use std::fmt;
use std::io;
use std::mem::zeroed;
use std::os::fd::{AsRawFd, OwnedFd};

use crate::sys::{cvt, socket, Family};

/// One offload, as `ethtool -K` names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Offload {
    /// TCP segmentation offload, every variant (`tso`).
    Tso,
    /// Generic segmentation offload (`gso`).
    Gso,
    /// Generic receive offload (`gro`).
    Gro,
    /// TX checksum offload, every kind (`tx`).
    TxChecksum,
    /// RX checksum offload (`rx`).
    RxChecksum,
}

impl Offload {
    /// The five the lab turns off, in that order.
    pub const ALL: [Self; 5] = [
        Self::Tso,
        Self::Gso,
        Self::Gro,
        Self::TxChecksum,
        Self::RxChecksum,
    ];

    /// The keyword `ethtool -K` takes for it.
    pub fn keyword(self) -> &'static str {
        match self {
            Self::Tso => "tso",
            Self::Gso => "gso",
            Self::Gro => "gro",
            Self::TxChecksum => "tx",
            Self::RxChecksum => "rx",
        }
    }

    /// Its get and set commands (`linux/ethtool.h`).
    fn commands(self) -> (u32, u32) {
        match self {
            Self::Tso => (ETHTOOL_GTSO, ETHTOOL_STSO),
            Self::Gso => (ETHTOOL_GGSO, ETHTOOL_SGSO),
            Self::Gro => (ETHTOOL_GGRO, ETHTOOL_SGRO),
            Self::TxChecksum => (ETHTOOL_GTXCSUM, ETHTOOL_STXCSUM),
            Self::RxChecksum => (ETHTOOL_GRXCSUM, ETHTOOL_SRXCSUM),
        }
    }
}

impl fmt::Display for Offload {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Tso => "TSO",
            Self::Gso => "GSO",
            Self::Gro => "GRO",
            Self::TxChecksum => "TX checksum offload",
            Self::RxChecksum => "RX checksum offload",
        })
    }
}

/// Which of the five offloads are in force on a device.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Offloads {
    /// [`Offload::Tso`].
    pub tso: bool,
    /// [`Offload::Gso`].
    pub gso: bool,
    /// [`Offload::Gro`].
    pub gro: bool,
    /// [`Offload::TxChecksum`].
    pub tx_checksum: bool,
    /// [`Offload::RxChecksum`].
    pub rx_checksum: bool,
}

impl Offloads {
    /// Whether `offload` is on.
    pub fn is_on(&self, offload: Offload) -> bool {
        match offload {
            Offload::Tso => self.tso,
            Offload::Gso => self.gso,
            Offload::Gro => self.gro,
            Offload::TxChecksum => self.tx_checksum,
            Offload::RxChecksum => self.rx_checksum,
        }
    }

    /// The offloads that are on, in [`Offload::ALL`]'s order.
    pub fn on(&self) -> Vec<Offload> {
        Offload::ALL
            .into_iter()
            .filter(|o| self.is_on(*o))
            .collect()
    }

    fn set(&mut self, offload: Offload, on: bool) {
        *match offload {
            Offload::Tso => &mut self.tso,
            Offload::Gso => &mut self.gso,
            Offload::Gro => &mut self.gro,
            Offload::TxChecksum => &mut self.tx_checksum,
            Offload::RxChecksum => &mut self.rx_checksum,
        } = on;
    }
}

/// Why reading or changing an offload failed. Converts into an [`io::Error`] of the
/// matching kind, as [`MarkingError`](crate::MarkingError) does.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EthtoolError {
    /// Not a name Linux gives an interface (`dev_valid_name`): empty, `.` or `..`,
    /// longer than 15 bytes, or holding `/`, `:`, whitespace or NUL. Refused before
    /// any syscall.
    #[error("{0:?} is not an interface name (1 to 15 bytes, no '/', ':', whitespace or NUL)")]
    BadName(String),
    /// No interface of that name in the calling thread's network namespace (`ENODEV`).
    #[error("no interface {0} in this network namespace")]
    NoSuchInterface(String),
    /// Changing an offload needs `CAP_NET_ADMIN` in the interface's namespace (`EPERM`).
    #[error("{ifname}: turning {offload} {} needs CAP_NET_ADMIN (run as root)", on_off(*.on))]
    NotPermitted {
        /// The interface.
        ifname: String,
        /// The offload.
        offload: Offload,
        /// The state asked for.
        on: bool,
    },
    /// The device cannot change this offload (`EOPNOTSUPP`).
    #[error("{ifname}: the device cannot turn {offload} {}", on_off(*.on))]
    Unsupported {
        /// The interface.
        ifname: String,
        /// The offload.
        offload: Offload,
        /// The state asked for.
        on: bool,
    },
    /// The kernel took the request, but the offload is still on: the driver or a
    /// feature it depends on keeps it.
    #[error("{ifname}: {offload} is still on after turning it off")]
    StillOn {
        /// The interface.
        ifname: String,
        /// The offload.
        offload: Offload,
    },
    /// Any other failure of the socket or the ioctl, with the kernel's errno.
    #[error("{ifname}: {action} {offload}: {source}")]
    Io {
        /// The interface.
        ifname: String,
        /// `"reading"` or `"changing"`.
        action: &'static str,
        /// The offload.
        offload: Offload,
        /// The error.
        source: io::Error,
    },
}

impl From<EthtoolError> for io::Error {
    fn from(e: EthtoolError) -> Self {
        let kind = match &e {
            EthtoolError::BadName(_) => io::ErrorKind::InvalidInput,
            EthtoolError::NoSuchInterface(_) => io::ErrorKind::NotFound,
            EthtoolError::NotPermitted { .. } => io::ErrorKind::PermissionDenied,
            EthtoolError::Unsupported { .. } => io::ErrorKind::Unsupported,
            EthtoolError::StillOn { .. } => io::ErrorKind::Other,
            EthtoolError::Io { source, .. } => source.kind(),
        };
        Self::new(kind, e)
    }
}

fn on_off(on: bool) -> &'static str {
    if on {
        "on"
    } else {
        "off"
    }
}

/// Whether `offload` is on for `ifname`. Needs no privilege.
pub fn offload(ifname: &str, offload: Offload) -> Result<bool, EthtoolError> {
    Device::open(ifname)?.get(offload)
}

/// The five offloads of `ifname`. Needs no privilege.
pub fn offloads(ifname: &str) -> Result<Offloads, EthtoolError> {
    let dev = Device::open(ifname)?;
    let mut all = Offloads::default();
    for o in Offload::ALL {
        all.set(o, dev.get(o)?);
    }
    Ok(all)
}

/// Turn `offload` on or off for `ifname` (what is in force afterwards may differ: see
/// the module docs). Needs `CAP_NET_ADMIN`.
pub fn set_offload(ifname: &str, offload: Offload, on: bool) -> Result<(), EthtoolError> {
    Device::open(ifname)?.set(offload, on)
}

/// Turn TSO, GSO, GRO and TX and RX checksum offload off for `ifname`, as `ethtool -K
/// IF tso off gso off gro off tx off rx off`, then read them back: `Ok` means all five
/// are off. Only offloads that are on are changed, so on a device that has them all off
/// already this needs no privilege. Unlike `ethtool -K`, which exits 0 when the kernel
/// keeps a feature on, an offload left on is an error ([`EthtoolError::StillOn`] or
/// [`EthtoolError::Unsupported`]).
pub fn disable_offloads(ifname: &str) -> Result<(), EthtoolError> {
    let dev = Device::open(ifname)?;
    for o in Offload::ALL {
        if dev.get(o)? {
            dev.set(o, false)?;
        }
    }
    // Read back after all five: turning TX checksums off also takes TSO away, and a
    // driver may refuse quietly.
    for o in Offload::ALL {
        if dev.get(o)? {
            return Err(EthtoolError::StillOn {
                ifname: ifname.to_owned(),
                offload: o,
            });
        }
    }
    Ok(())
}

// linux/ethtool.h: the per-feature commands, each with a `struct ethtool_value`.
const ETHTOOL_GRXCSUM: u32 = 0x14;
const ETHTOOL_SRXCSUM: u32 = 0x15;
const ETHTOOL_GTXCSUM: u32 = 0x16;
const ETHTOOL_STXCSUM: u32 = 0x17;
const ETHTOOL_GTSO: u32 = 0x1e;
const ETHTOOL_STSO: u32 = 0x1f;
const ETHTOOL_GGSO: u32 = 0x23;
const ETHTOOL_SGSO: u32 = 0x24;
const ETHTOOL_GGRO: u32 = 0x2b;
const ETHTOOL_SGRO: u32 = 0x2c;

/// `struct ethtool_value` (`linux/ethtool.h`): a command and one 32-bit value.
#[repr(C)]
struct EthtoolValue {
    cmd: u32,
    data: u32,
}

/// An interface name checked and laid out for `ifreq`, and the socket its ioctls go
/// through (made in the calling thread's namespace).
struct Device {
    ifname: String,
    name: [libc::c_char; libc::IFNAMSIZ],
    fd: OwnedFd,
}

impl Device {
    fn open(ifname: &str) -> Result<Self, EthtoolError> {
        let name = ifreq_name(ifname).ok_or_else(|| EthtoolError::BadName(ifname.to_owned()))?;
        // Any socket reaches the device ioctls; AF_INET is what ethtool(8) uses and is
        // in every namespace (IPv6 may be disabled, IPv4 cannot).
        let fd = socket(Family::V4, libc::SOCK_DGRAM).map_err(|source| EthtoolError::Io {
            ifname: ifname.to_owned(),
            action: "reading",
            offload: Offload::Tso,
            source,
        })?;
        Ok(Self {
            ifname: ifname.to_owned(),
            name,
            fd,
        })
    }

    fn get(&self, offload: Offload) -> Result<bool, EthtoolError> {
        let (get, _) = offload.commands();
        self.ioctl(get, 0)
            .map(|data| data != 0)
            .map_err(|e| self.error(e, offload, None))
    }

    fn set(&self, offload: Offload, on: bool) -> Result<(), EthtoolError> {
        let (_, set) = offload.commands();
        self.ioctl(set, u32::from(on))
            .map(drop)
            .map_err(|e| self.error(e, offload, Some(on)))
    }

    /// `ioctl(SIOCETHTOOL)` with one `ethtool_value`; the value the kernel left in it.
    fn ioctl(&self, cmd: u32, data: u32) -> io::Result<u32> {
        let mut value = EthtoolValue { cmd, data };
        // SAFETY: ifreq is plain old data; all-zero is valid.
        let mut ifr: libc::ifreq = unsafe { zeroed() };
        ifr.ifr_name = self.name;
        ifr.ifr_ifru.ifru_data = (&mut value as *mut EthtoolValue).cast();
        // SAFETY: `ifr` is a valid ifreq with a NUL-terminated name whose data pointer
        // points at `value`, a live, writable `struct ethtool_value` for the whole call:
        // the legacy get/set feature commands read and write exactly that struct.
        cvt(unsafe { libc::ioctl(self.fd.as_raw_fd(), libc::SIOCETHTOOL as _, &mut ifr) })?;
        Ok(value.data)
    }

    /// The typed error for errno `e` of a get (`set: None`) or set.
    fn error(&self, e: io::Error, offload: Offload, set: Option<bool>) -> EthtoolError {
        let ifname = self.ifname.clone();
        match (e.raw_os_error(), set) {
            (Some(libc::ENODEV), _) => EthtoolError::NoSuchInterface(ifname),
            (Some(libc::EPERM), Some(on)) => EthtoolError::NotPermitted {
                ifname,
                offload,
                on,
            },
            (Some(libc::EOPNOTSUPP), Some(on)) => EthtoolError::Unsupported {
                ifname,
                offload,
                on,
            },
            (_, set) => EthtoolError::Io {
                ifname,
                action: if set.is_some() { "changing" } else { "reading" },
                offload,
                source: e,
            },
        }
    }
}

/// `ifname` as `ifr_name`, if Linux could name an interface so (`dev_valid_name` in
/// `net/core/dev.c`).
fn ifreq_name(ifname: &str) -> Option<[libc::c_char; libc::IFNAMSIZ]> {
    let bytes = ifname.as_bytes();
    let bad = bytes.is_empty()
        || bytes.len() >= libc::IFNAMSIZ
        || ifname == "."
        || ifname == ".."
        || bytes
            .iter()
            .any(|b| *b == b'/' || *b == b':' || *b == 0 || b.is_ascii_whitespace());
    if bad {
        return None;
    }
    let mut name = [0 as libc::c_char; libc::IFNAMSIZ];
    for (d, s) in name.iter_mut().zip(bytes) {
        *d = *s as libc::c_char;
    }
    Some(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_names_are_refused_before_any_syscall() {
        for name in [
            "",
            ".",
            "..",
            "a/b",
            "a:1",
            "a b",
            "nul\0",
            "sixteen-bytes-xx",
        ] {
            assert!(
                matches!(disable_offloads(name), Err(EthtoolError::BadName(n)) if n == name),
                "{name:?}"
            );
        }
        assert!(ifreq_name("fifteen-bytes-x").is_some());
    }

    #[test]
    fn an_unknown_interface_is_named_in_the_error() {
        let err = offloads("dpt-nonexist").unwrap_err();
        assert!(
            matches!(&err, EthtoolError::NoSuchInterface(n) if n == "dpt-nonexist"),
            "{err:?}"
        );
        assert_eq!(
            err.to_string(),
            "no interface dpt-nonexist in this network namespace"
        );
        assert_eq!(io::Error::from(err).kind(), io::ErrorKind::NotFound);
        let err = set_offload("dpt-nonexist", Offload::Gro, false).unwrap_err();
        assert!(matches!(err, EthtoolError::NoSuchInterface(_)), "{err:?}");
    }

    #[test]
    fn loopback_offloads_read_without_privilege() {
        // lo's checksum offloads cannot be changed (it never computes a checksum) and
        // stay on in every namespace; its TSO is on unless someone turned it off.
        let lo = offloads("lo").unwrap();
        assert!(lo.tx_checksum && lo.rx_checksum, "{lo:?}");
        assert!(offload("lo", Offload::RxChecksum).unwrap());
        assert!(lo.on().contains(&Offload::TxChecksum), "{lo:?}");
    }

    /// Whether a test that changes offloads may run (root): in a network namespace of
    /// its own, made by `unshare` for one thread and gone with it, so the host's
    /// devices are never touched and nothing is left behind even on a panic.
    fn privileged() -> bool {
        // SAFETY: geteuid(2) has no preconditions and cannot fail.
        if unsafe { libc::geteuid() } == 0 {
            return true;
        }
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "this test needs root (CAP_NET_ADMIN, CAP_SYS_ADMIN) and CI=true: a missing capability is a failure"
        );
        eprintln!("skipped: needs root");
        false
    }

    /// Run `f` on a thread of its own in a fresh network namespace (only `lo`, down).
    fn in_private_netns(f: impl FnOnce() + Send + 'static) {
        std::thread::spawn(move || {
            // SAFETY: unshare(2) takes a flag and no pointers; it moves only this thread
            // into a new network namespace, which dies when the thread ends.
            cvt(unsafe { libc::unshare(libc::CLONE_NEWNET) }).expect("unshare(CLONE_NEWNET)");
            f();
        })
        .join()
        .unwrap_or_else(|p| std::panic::resume_unwind(p));
    }

    #[test]
    fn loopback_segmentation_turns_off_and_checksums_are_refused() {
        if !privileged() {
            return;
        }
        in_private_netns(|| {
            let before = offloads("lo").unwrap();
            assert!(before.tso && before.gso && before.tx_checksum, "{before:?}");
            for o in [Offload::Tso, Offload::Gso, Offload::Gro] {
                set_offload("lo", o, false).unwrap();
                assert!(!offload("lo", o).unwrap(), "{o} still on");
            }
            set_offload("lo", Offload::Gro, true).unwrap();
            assert!(offload("lo", Offload::Gro).unwrap());
            // lo cannot drop its checksum offloads: an error, not a silent success as
            // `ethtool -K lo tx off` gives.
            let err = disable_offloads("lo").unwrap_err();
            assert!(
                matches!(
                    &err,
                    EthtoolError::Unsupported {
                        offload: Offload::TxChecksum,
                        on: false,
                        ..
                    }
                ),
                "{err:?}"
            );
            assert_eq!(
                err.to_string(),
                "lo: the device cannot turn TX checksum offload off"
            );
        });
    }

    /// Drop `CAP_NET_ADMIN` from this thread's effective set (capabilities are per
    /// thread; the thread's end takes the change with it).
    fn drop_net_admin() {
        #[repr(C)]
        struct Header {
            version: u32,
            pid: i32,
        }
        #[repr(C)]
        #[derive(Clone, Copy, Default)]
        struct Data {
            effective: u32,
            permitted: u32,
            inheritable: u32,
        }
        // linux/capability.h: _LINUX_CAPABILITY_VERSION_3, two 32-bit words.
        let mut header = Header {
            version: 0x2008_0522,
            pid: 0,
        };
        let mut data = [Data::default(); 2];
        // SAFETY: capget(2) with a valid header and room for the two words version 3
        // writes.
        let r = unsafe { libc::syscall(libc::SYS_capget, &mut header, data.as_mut_ptr()) };
        assert_eq!(r, 0, "capget: {}", io::Error::last_os_error());
        // CAP_NET_ADMIN is capability 12 (linux/capability.h).
        data[0].effective &= !(1 << 12);
        // SAFETY: capset(2) reads the header and the two words; it only lowers this
        // thread's effective set.
        let r = unsafe { libc::syscall(libc::SYS_capset, &mut header, data.as_ptr()) };
        assert_eq!(r, 0, "capset: {}", io::Error::last_os_error());
    }

    #[test]
    fn changing_an_offload_without_cap_net_admin_is_not_permitted() {
        if !privileged() {
            return;
        }
        in_private_netns(|| {
            drop_net_admin();
            let err = set_offload("lo", Offload::Gso, false).unwrap_err();
            assert!(
                matches!(
                    &err,
                    EthtoolError::NotPermitted {
                        offload: Offload::Gso,
                        on: false,
                        ..
                    }
                ),
                "{err:?}"
            );
            assert_eq!(io::Error::from(err).kind(), io::ErrorKind::PermissionDenied);
            // Reading still works, and what is already off needs no privilege.
            assert!(offload("lo", Offload::Gso).unwrap());
        });
    }

    #[test]
    fn a_veth_gets_all_five_offloads_off_and_its_peer_keeps_them() {
        if !privileged() {
            return;
        }
        in_private_netns(|| {
            // `ip` runs in this thread's namespace (a child inherits the thread's).
            let out = std::process::Command::new("ip")
                .args([
                    "link", "add", "dpe-a", "type", "veth", "peer", "name", "dpe-b",
                ])
                .output()
                .expect("ip (iproute2)");
            assert!(
                out.status.success(),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
            // A veth starts with GRO off; on first, so that turning it off is tested.
            set_offload("dpe-a", Offload::Gro, true).unwrap();
            let before = offloads("dpe-a").unwrap();
            assert_eq!(before.on(), Offload::ALL, "{before:?}");
            disable_offloads("dpe-a").unwrap();
            assert_eq!(offloads("dpe-a").unwrap(), Offloads::default());
            // Idempotent, and the other end is its own device.
            disable_offloads("dpe-a").unwrap();
            let peer = offloads("dpe-b").unwrap();
            assert!(
                peer.tso && peer.gso && peer.tx_checksum && peer.rx_checksum,
                "{peer:?}"
            );
        });
    }
}
