//! Network namespaces: moving a thread into a named namespace, as
//! `ip netns exec` does (for the network namespace only).
//!
//! Namespaces are created and deleted with `ip netns add` / `ip netns del`,
//! which keep a bind mount per namespace under `/var/run/netns/`.

use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;

use crate::sys::cvt;

/// Where `ip netns` keeps its namespaces.
pub const NETNS_RUN_DIR: &str = "/var/run/netns";

/// Moves the **calling thread** into the network namespace `name`
/// (`setns(open("/var/run/netns/NAME"), CLONE_NEWNET)`).
///
/// Only this thread changes namespace: the rest of the process, and threads
/// spawned earlier, stay where they were. Threads spawned afterwards by this
/// thread inherit its namespace. So callers spawn a dedicated thread, enter
/// the namespace there and create their sockets in it: a socket stays in
/// the namespace it was created in wherever it is used afterwards
/// (including `ioctl`s such as [`PacketSocket::mac`](crate::packet::PacketSocket::mac)),
/// while name lookups such as `if_nametoindex` use the thread's current one.
///
/// Other per-namespace views do not follow the thread: `/sys/class/net` shows
/// the namespace sysfs was mounted in (`ip netns exec` remounts it in a
/// private mount namespace; this function does not).
///
/// Needs `CAP_SYS_ADMIN` (`EPERM` otherwise). A `name` that is empty, `.`,
/// `..` or contains `/` or NUL is `InvalidInput`; an unknown one is
/// `NotFound`.
pub fn enter(name: &str) -> io::Result<()> {
    if name.is_empty() || name == "." || name == ".." || name.contains(['/', '\0']) {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("invalid network namespace name {name:?}"),
        ));
    }
    let path = format!("{NETNS_RUN_DIR}/{name}");
    let file = File::open(&path)
        .map_err(|e| io::Error::new(e.kind(), format!("network namespace {path}: {e}")))?;
    // SAFETY: setns(2) takes a descriptor (valid: `file` is open for the
    // whole call) and a flag, no pointers.
    cvt(unsafe { libc::setns(file.as_raw_fd(), libc::CLONE_NEWNET) })
        .map_err(|e| io::Error::new(e.kind(), format!("setns into {path}: {e}")))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_names_are_refused_before_any_syscall() {
        for name in ["", ".", "..", "a/b", "x\0y"] {
            let err = enter(name).unwrap_err();
            assert_eq!(err.kind(), io::ErrorKind::InvalidInput, "{name:?}");
        }
    }

    #[test]
    fn unknown_namespace_is_not_found() {
        let err = enter("dpt-no-such-namespace").unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::NotFound, "{err}");
    }
}
