//! What the tshark tests share: a temporary directory, a classic pcap writer and tshark
//! itself (skipped with a message when it is missing, except under CI=true).

// Each test binary compiles this module and uses only part of it.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;

/// pcap linktype of Ethernet frames.
pub const LINKTYPE_ETHERNET: u32 = 1;
/// pcap linktype of raw IP packets.
pub const LINKTYPE_RAW: u32 = 101;

/// A directory under the system temp dir, removed on drop.
pub struct TempDir(pub PathBuf);

impl TempDir {
    pub fn new(tag: &str) -> Self {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        let dir = std::env::temp_dir().join(format!("{tag}-{}-{nanos}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        Self(dir)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A classic pcap file (microsecond stamps, one second apart) of `packets`.
pub fn pcap(linktype: u32, packets: &[Vec<u8>]) -> Vec<u8> {
    let mut f = Vec::new();
    f.extend_from_slice(&0xa1b2_c3d4u32.to_le_bytes());
    f.extend_from_slice(&2u16.to_le_bytes());
    f.extend_from_slice(&4u16.to_le_bytes());
    f.extend_from_slice(&[0; 8]);
    f.extend_from_slice(&65_535u32.to_le_bytes());
    f.extend_from_slice(&linktype.to_le_bytes());
    for (i, p) in packets.iter().enumerate() {
        f.extend_from_slice(&(1_700_000_000 + i as u32).to_le_bytes());
        f.extend_from_slice(&0u32.to_le_bytes());
        f.extend_from_slice(&(p.len() as u32).to_le_bytes());
        f.extend_from_slice(&(p.len() as u32).to_le_bytes());
        f.extend_from_slice(p);
    }
    f
}

/// Whether tshark runs; its absence fails the test under CI=true.
pub fn tshark_available() -> bool {
    let found = Command::new("tshark")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !found {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "tshark is missing under CI=true"
        );
        eprintln!("skipped: tshark is not installed");
    }
    found
}

/// `tshark -r FILE ARGS…`'s standard output; a failing tshark fails the test.
pub fn run_tshark(file: &Path, args: &[&str]) -> String {
    let out = Command::new("tshark")
        .arg("-r")
        .arg(file)
        .args(args)
        .output()
        .expect("tshark runs");
    assert!(
        out.status.success(),
        "tshark: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}
