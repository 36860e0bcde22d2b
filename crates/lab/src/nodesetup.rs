//! What the hidden `dualperf lab node-setup` may write: [`netlab`](crate::netlab) runs it
//! in each node's namespace with `--sysctl KEY=VALUE` arguments, and each is checked
//! here, before anything is written, to name a file under `/proc/sys/net`: those belong
//! to the network namespace, while any other key would change the whole host.

use std::path::PathBuf;

use thiserror::Error;

/// Why a `--sysctl` argument is refused.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum SysctlError {
    /// No `=`.
    #[error("not KEY=VALUE")]
    NotKeyValue,
    /// The key lies outside `net`.
    #[error("{0:?} is not a key under net")]
    NotUnderNet(String),
    /// An empty part, `.` or `..` in the key.
    #[error("{0:?} is not a sysctl key")]
    NotAKey(String),
    /// Nothing to write, or more than one line.
    #[error("the value is empty or holds a newline")]
    BadValue,
}

/// One sysctl to write.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SysctlWrite {
    /// The file under `/proc/sys`.
    pub path: PathBuf,
    /// What to write in it.
    pub value: String,
    /// The key as it was given.
    pub key: String,
}

/// `KEY=VALUE` as sysctl(8) takes it → the file under /proc/sys, the value, the key. A
/// key with a `/` is a path (so names with dots work, as in sysctl(8)); otherwise dots
/// separate its parts. Only keys under `net` are taken.
pub fn sysctl_write(arg: &str) -> Result<SysctlWrite, SysctlError> {
    let (key, value) = arg.split_once('=').ok_or(SysctlError::NotKeyValue)?;
    let (key, value) = (key.trim(), value.trim());
    let parts: Vec<&str> = if key.contains('/') {
        key.split('/').collect()
    } else {
        key.split('.').collect()
    };
    if parts.first() != Some(&"net") || parts.len() < 2 {
        return Err(SysctlError::NotUnderNet(key.to_owned()));
    }
    if parts
        .iter()
        .any(|p| p.is_empty() || *p == "." || *p == "..")
    {
        return Err(SysctlError::NotAKey(key.to_owned()));
    }
    if value.is_empty() || value.contains('\n') {
        return Err(SysctlError::BadValue);
    }
    let path = parts
        .iter()
        .fold(PathBuf::from("/proc/sys"), |p, part| p.join(part));
    Ok(SysctlWrite {
        path,
        value: value.to_owned(),
        key: key.to_owned(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sysctl_keys_become_paths_under_proc_sys_net() {
        let w = sysctl_write("net.ipv6.conf.to-r1.accept_dad=0").unwrap();
        assert_eq!(
            w.path,
            PathBuf::from("/proc/sys/net/ipv6/conf/to-r1/accept_dad")
        );
        assert_eq!(
            (w.value.as_str(), w.key.as_str()),
            ("0", "net.ipv6.conf.to-r1.accept_dad")
        );
        // sysctl(8): a key with a slash is a path, so an interface name may hold dots.
        let w = sysctl_write("net/ipv6/conf/eth0.7/disable_ipv6 = 1").unwrap();
        assert_eq!(
            w.path,
            PathBuf::from("/proc/sys/net/ipv6/conf/eth0.7/disable_ipv6")
        );
    }

    #[test]
    fn sysctls_outside_net_or_climbing_out_are_refused() {
        for (bad, why) in [
            ("kernel.panic=1", "\"kernel.panic\" is not a key under net"),
            (
                "vm/swappiness=1",
                "\"vm/swappiness\" is not a key under net",
            ),
            ("net=1", "\"net\" is not a key under net"),
            (
                "net/../kernel/panic=1",
                "\"net/../kernel/panic\" is not a sysctl key",
            ),
            (
                "net..ipv4.ip_forward=0",
                "\"net..ipv4.ip_forward\" is not a sysctl key",
            ),
            (
                "/net/ipv4/ip_forward=0",
                "\"/net/ipv4/ip_forward\" is not a key under net",
            ),
            ("net.ipv4.ip_forward", "not KEY=VALUE"),
            (
                "net.ipv4.ip_forward=",
                "the value is empty or holds a newline",
            ),
        ] {
            assert_eq!(
                sysctl_write(bad).map_err(|e| e.to_string()),
                Err(why.to_owned()),
                "{bad}"
            );
        }
    }
}
