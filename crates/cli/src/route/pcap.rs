//! Classic pcap files (the format tcpdump and tshark read): a global header, then one
//! record per frame. Nanosecond timestamps (magic `0xa1b23c4d`), link type 1
//! (Ethernet), written little-endian. Reference: the "PCAP Capture File Format"
//! Internet-Draft (draft-ietf-opsawg-pcap), §4 and §5.

use std::io::{self, Write};

/// Magic number of a pcap file with nanosecond timestamps.
const MAGIC_NS: u32 = 0xa1b2_3c4d;
/// LINKTYPE_ETHERNET.
const LINKTYPE_ETHERNET: u32 = 1;
/// Bytes kept of each frame.
pub(crate) const SNAPLEN: u32 = 65_535;

/// The capture file of interface `iface`: `IFACE.pcap`, the name made safe as a file
/// name (letters, digits and `. = , -` kept, anything else `_`, no leading dot), as
/// run directories name their files.
pub(crate) fn file_name(iface: &str) -> String {
    let safe: String = iface
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '=' | ',' | '-') {
                c
            } else {
                '_'
            }
        })
        .collect();
    format!("{}.pcap", safe.trim_start_matches('.'))
}

/// A pcap writer over any byte sink.
pub(crate) struct PcapWriter<W: Write> {
    out: W,
}

impl<W: Write> PcapWriter<W> {
    /// Write the global header.
    pub(crate) fn new(mut out: W) -> io::Result<Self> {
        let mut h = Vec::with_capacity(24);
        h.extend_from_slice(&MAGIC_NS.to_le_bytes());
        h.extend_from_slice(&2u16.to_le_bytes()); // major
        h.extend_from_slice(&4u16.to_le_bytes()); // minor
        h.extend_from_slice(&0u32.to_le_bytes()); // reserved (thiszone)
        h.extend_from_slice(&0u32.to_le_bytes()); // reserved (sigfigs)
        h.extend_from_slice(&SNAPLEN.to_le_bytes());
        h.extend_from_slice(&LINKTYPE_ETHERNET.to_le_bytes());
        out.write_all(&h)?;
        Ok(Self { out })
    }

    /// One frame seen at `wall_ns` (ns since the Unix epoch).
    pub(crate) fn write(&mut self, wall_ns: u64, frame: &[u8]) -> io::Result<()> {
        let kept = frame.len().min(SNAPLEN as usize);
        let mut h = [0u8; 16];
        h[0..4].copy_from_slice(&((wall_ns / 1_000_000_000) as u32).to_le_bytes());
        h[4..8].copy_from_slice(&((wall_ns % 1_000_000_000) as u32).to_le_bytes());
        h[8..12].copy_from_slice(&(kept as u32).to_le_bytes());
        h[12..16].copy_from_slice(&(frame.len() as u32).to_le_bytes());
        self.out.write_all(&h)?;
        self.out.write_all(&frame[..kept])
    }

    /// Flush the sink.
    pub(crate) fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers_are_laid_out_as_the_format_says() {
        let mut w = PcapWriter::new(Vec::new()).unwrap();
        w.write(1_700_000_000_123_456_789, &[0xAB; 60]).unwrap();
        let b = w.out;
        assert_eq!(b.len(), 24 + 16 + 60);
        assert_eq!(&b[0..4], &[0x4d, 0x3c, 0xb2, 0xa1]);
        assert_eq!(&b[4..8], &[2, 0, 4, 0]);
        assert_eq!(u32::from_le_bytes(b[20..24].try_into().unwrap()), 1);
        assert_eq!(
            u32::from_le_bytes(b[24..28].try_into().unwrap()),
            1_700_000_000
        );
        assert_eq!(
            u32::from_le_bytes(b[28..32].try_into().unwrap()),
            123_456_789
        );
        assert_eq!(u32::from_le_bytes(b[32..36].try_into().unwrap()), 60);
        assert_eq!(u32::from_le_bytes(b[36..40].try_into().unwrap()), 60);
    }

    #[test]
    fn capture_files_are_named_after_safe_interface_names() {
        assert_eq!(file_name("to-r2"), "to-r2.pcap");
        assert_eq!(file_name("../eth 0"), "_eth_0.pcap");
        assert_eq!(file_name(".hidden"), "hidden.pcap");
    }
}
