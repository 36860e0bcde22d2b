//! The hosts file of a lab's namespaces: `lab up` writes `/etc/netns/dp-LAB.NODE/hosts`
//! for every node, listing every host node by name with both addresses of its first
//! link, so a command that `ip netns exec` runs (as `dualperf lab exec` does) resolves
//! `receiver` or `sender` by name: `ip netns exec` bind-mounts the files of
//! `/etc/netns/NS/` over `/etc`'s. A thread that only `setns`es into the namespace keeps
//! the machine's `/etc/hosts`. `lab down` (and a job's guard) removes the directories.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use crate::laberror::LabError;
use crate::topology::{Kind, Topology};

/// Where `ip netns exec NS` finds the files it puts over `/etc`'s: `NETNS_ETC/NS/`.
pub const NETNS_ETC: &str = "/etc/netns";

/// The directory of namespace `ns`'s files (`/etc/netns/NS`).
pub fn dir(ns: &str) -> PathBuf {
    Path::new(NETNS_ETC).join(ns)
}

/// The hosts file of lab `t`'s namespaces: localhost, then each host node (in file
/// order) with the IPv4 and the IPv6 address of its first link.
pub fn text(t: &Topology) -> String {
    let mut out = format!(
        "# dualperf lab {}: its hosts by name (lab up wrote this file; lab down removes it)\n\
         127.0.0.1\tlocalhost\n\
         ::1\tlocalhost ip6-localhost ip6-loopback\n",
        t.name
    );
    for (i, n) in t.nodes.iter().enumerate() {
        if n.kind != Kind::Host {
            continue;
        }
        if let Some((_, mine, _)) = t.ends_of(i).next() {
            let _ = writeln!(out, "{}\t{}", mine.ipv4, n.name);
            let _ = writeln!(out, "{}\t{}", mine.ipv6, n.name);
        }
    }
    out
}

/// Writes the hosts file of every namespace of `t`.
pub(crate) fn write(t: &Topology) -> Result<(), LabError> {
    let hosts = text(t);
    for i in 0..t.nodes.len() {
        let d = dir(&t.namespace(i));
        std::fs::create_dir_all(&d).map_err(|source| LabError::Io {
            path: d.clone(),
            source,
        })?;
        let file = d.join("hosts");
        std::fs::write(&file, &hosts).map_err(|source| LabError::Io { path: file, source })?;
    }
    Ok(())
}

/// The directories of lab `name`'s namespaces under `/etc/netns` (`dp-NAME.*`: names
/// hold no dots, so no other lab's), sorted.
pub fn dirs_of(name: &str) -> Vec<PathBuf> {
    let prefix = format!("dp-{name}.");
    let mut found: Vec<PathBuf> = std::fs::read_dir(NETNS_ETC)
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with(&prefix))
        .map(|e| e.path())
        .collect();
    found.sort();
    found
}

/// Removes lab `name`'s directories under `/etc/netns` (`/etc/netns` itself stays: other
/// labs and tools use it).
pub(crate) fn remove(name: &str) -> Result<(), LabError> {
    for d in dirs_of(name) {
        match std::fs::remove_dir_all(&d) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(source) => return Err(LabError::Io { path: d, source }),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_file_lists_every_host_by_name_with_both_addresses() {
        let t =
            Topology::parse(crate::topology::builtin("topologies/two-hop.toml").unwrap()).unwrap();
        assert_eq!(
            text(&t),
            "# dualperf lab two-hop: its hosts by name (lab up wrote this file; lab down removes it)\n\
             127.0.0.1\tlocalhost\n\
             ::1\tlocalhost ip6-localhost ip6-loopback\n\
             198.18.1.1\tsender\n\
             2001:2:0:1::1\tsender\n\
             198.18.2.1\tbg-a\n\
             2001:2:0:2::1\tbg-a\n\
             198.18.4.2\treceiver\n\
             2001:2:0:4::2\treceiver\n\
             198.18.5.2\tbg-b\n\
             2001:2:0:5::2\tbg-b\n"
        );
        assert_eq!(
            dir(&t.namespace(0)),
            PathBuf::from("/etc/netns/dp-two-hop.sender")
        );
        // The NAT lab: the NAT and the router are not hosts.
        let t =
            Topology::parse(crate::topology::builtin("topologies/nat44.toml").unwrap()).unwrap();
        let hosts = text(&t);
        let names: Vec<&str> = hosts
            .lines()
            .skip(3)
            .map(|l| l.split('\t').nth(1).unwrap())
            .collect();
        assert_eq!(names, ["sender", "sender", "receiver", "receiver"]);
        assert!(text(&t).contains("198.18.3.2\treceiver\n2001:2:0:3::2\treceiver\n"));
    }
}
