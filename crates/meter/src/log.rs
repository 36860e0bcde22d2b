//! The binary per-packet log: written by `dualperf recv --log FILE` (and by
//! the sender for round-trip echoes and its transmit schedule), read by
//! `dualperf decode FILE`.
//!
//! All integers are little-endian. A file is a header followed by entries.
//!
//! Header (12 bytes + metadata):
//!
//! ```text
//!  offset  size  field
//!  0       6     magic  b"DPLOG\0"
//!  6       2     format version (u16) = 3 (versions 1 and 2 are read too)
//!  8       4     metadata length N (u32), at most 1 MiB
//!  12      N     metadata: UTF-8 JSON chosen by the writer (run config, host…)
//! ```
//!
//! Entries, each a one-byte tag then a body:
//!
//! ```text
//!  tag 0x01  FlowInfo   4 + 4 + L bytes
//!            0  flow u32 | 4  L u32 (at most 64 KiB) | 8  L bytes UTF-8 JSON
//!            (protocol, IP version, meter, marking, peer…; chosen by the writer)
//!  tag 0x02  Rx         39 bytes (RxRecord)
//!            0  flow u32 | 4  seq u64 | 12  size_bytes u32 | 16  tx_ns u64
//!            24 rx_ns u64 | 32  flags u8 | 33  tos u8 | 34  hop_limit u8
//!            35 flow_label u32
//!            flags: bit 0 tos present, bit 1 hop_limit present,
//!                   bit 2 flow_label present, bit 3 kernel_ts; others must be 0
//!            (an absent field is written as 0 and ignored on reading)
//!  tag 0x03  Tx         32 bytes (TxRecord)
//!            0  flow u32 | 4  seq u64 | 12  size_bytes u32
//!            16 scheduled_ns u64 | 24  actual_ns u64
//!  tag 0x04  RxRtp      43 bytes (an RxRecord with an RTP timestamp; version 2)
//!            0  the 39 bytes of an Rx body | 39  rtp_ts u32
//!  tag 0x05  FlowEnd    4 + 4 + L bytes, laid out as FlowInfo (version 3)
//!            what is known once the flow ended (JSON chosen by the writer: packets
//!            the sender sent, records that could not be logged…)
//! ```
//!
//! Version 3 logs are written as the packets arrive: a flow's FlowInfo first, then its
//! records interleaved with other flows' in arrival order, then its FlowEnd. A flow
//! whose FlowEnd is missing was cut off (the writer was killed, the file truncated):
//! its records end where the log ends, and nothing after them is known. Versions 1
//! and 2 wrote each flow whole (FlowInfo with the sent count, then the records) when
//! it ended.
//!
//! Version 2 added the RxRtp entry: a received packet that carried an RTP header is
//! written with its RTP timestamp (RFC 3550 §5.1), so the RTP interarrival jitter can be
//! computed from the log. Version 1 logs have no RxRtp entries and read as before, with
//! no RTP timestamps.
//!
//! The input is untrusted: no function here panics on any byte sequence, and
//! no length field is trusted before it is checked against its limit. A file
//! whose last entry was cut short (the writer crashed mid-entry) reads cleanly
//! up to the last whole entry and reports the leftover byte count
//! ([`LogReader::truncated_tail_bytes`]); everything else malformed is a
//! [`LogError`]. New entry kinds need a new format version: there is no
//! per-entry length, so an unknown tag cannot be skipped.

use std::collections::BTreeMap;
use std::io::{self, BufReader, BufWriter, Read, Write};

use thiserror::Error;

use crate::record::{RxRecord, TxRecord};

/// Magic bytes opening every log.
pub const MAGIC: [u8; 6] = *b"DPLOG\0";
/// The format version this build writes (and the newest it reads).
pub const FORMAT_VERSION: u16 = 3;
/// The oldest format version this build reads.
pub const OLDEST_FORMAT_VERSION: u16 = 1;
/// Largest metadata blob (1 MiB).
pub const MAX_META_BYTES: u32 = 1 << 20;
/// Largest FlowInfo JSON (64 KiB).
pub const MAX_FLOW_INFO_BYTES: u32 = 1 << 16;

const HEADER_FIXED_BYTES: usize = 12;
const TAG_FLOW_INFO: u8 = 0x01;
const TAG_RX: u8 = 0x02;
const TAG_TX: u8 = 0x03;
const TAG_RX_RTP: u8 = 0x04;
const TAG_FLOW_END: u8 = 0x05;
const FLOW_INFO_FIXED_BYTES: usize = 8;
const RX_BYTES: usize = 39;
const TX_BYTES: usize = 32;
const RX_RTP_BYTES: usize = RX_BYTES + 4;
const FLAG_TOS: u8 = 1 << 0;
const FLAG_HOP_LIMIT: u8 = 1 << 1;
const FLAG_FLOW_LABEL: u8 = 1 << 2;
const FLAG_KERNEL_TS: u8 = 1 << 3;
const KNOWN_FLAGS: u8 = FLAG_TOS | FLAG_HOP_LIMIT | FLAG_FLOW_LABEL | FLAG_KERNEL_TS;

/// Why a log could not be written or read.
#[derive(Debug, Error)]
pub enum LogError {
    /// The underlying reader or writer failed.
    #[error("log I/O failed: {0}")]
    Io(#[from] io::Error),
    /// The file does not start with [`MAGIC`].
    #[error("not a dualperf packet log (bad magic bytes)")]
    BadMagic,
    /// The file has a format version this build cannot read.
    #[error(
        "unsupported packet log format version {found} (this build reads versions 1 to {supported})"
    )]
    UnsupportedVersion {
        /// Version found in the header.
        found: u16,
        /// Newest version this build reads.
        supported: u16,
    },
    /// The file ends inside its header.
    #[error("packet log ends inside its header")]
    TruncatedHeader,
    /// The metadata length exceeds [`MAX_META_BYTES`].
    #[error("packet log metadata of {len} bytes exceeds the limit of {max} bytes")]
    MetaTooLarge {
        /// Length found or requested.
        len: u64,
        /// The limit.
        max: u32,
    },
    /// A FlowInfo JSON length exceeds [`MAX_FLOW_INFO_BYTES`].
    #[error("flow info of {len} bytes exceeds the limit of {max} bytes")]
    FlowInfoTooLarge {
        /// Length found or requested.
        len: u64,
        /// The limit.
        max: u32,
    },
    /// Metadata or FlowInfo text is not UTF-8.
    #[error("{what} is not valid UTF-8")]
    InvalidUtf8 {
        /// Which text.
        what: &'static str,
    },
    /// An entry starts with an unknown tag.
    #[error("unknown entry tag {tag:#04x} at byte {offset}")]
    UnknownTag {
        /// The tag byte.
        tag: u8,
        /// Its offset (from the file start for [`LogReader`], from the slice
        /// start for [`parse_entry`]).
        offset: u64,
    },
    /// An Rx entry has flag bits this version does not define.
    #[error("undefined flag bits {flags:#04x} in Rx entry at byte {offset}")]
    InvalidFlags {
        /// The flags byte.
        flags: u8,
        /// The entry's offset, as for `UnknownTag`.
        offset: u64,
    },
    /// [`parse_entry`] was given a slice ending inside an entry.
    #[error("entry truncated: {needed} more bytes needed")]
    Truncated {
        /// Bytes missing for the entry (at least; a FlowInfo may need more
        /// once its length is known).
        needed: usize,
    },
}

/// The decoded header.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Header {
    /// Format version.
    pub version: u16,
    /// The writer's metadata JSON, verbatim.
    pub meta_json: String,
}

/// One decoded entry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Entry {
    /// Describes a flow (JSON chosen by the writer), normally before its
    /// records.
    FlowInfo {
        /// The flow id.
        flow: u32,
        /// UTF-8 JSON text.
        json: String,
    },
    /// A received packet.
    Rx(RxRecord),
    /// A sent packet.
    Tx(TxRecord),
    /// What is known about a flow once it ended (JSON chosen by the writer); version 3.
    FlowEnd {
        /// The flow id.
        flow: u32,
        /// UTF-8 JSON text.
        json: String,
    },
}

/// Buffered writer of a packet log.
///
/// Entries reach the underlying writer in blocks; call [`LogWriter::flush`]
/// (e.g. once per report interval) or [`LogWriter::into_inner`] to push them
/// and see any error: dropping the writer flushes but discards errors.
#[derive(Debug)]
pub struct LogWriter<W: Write> {
    out: BufWriter<W>,
    scratch: Vec<u8>,
}

impl<W: Write> LogWriter<W> {
    /// Starts a log on `w` by writing the header with `meta_json`.
    pub fn new(w: W, meta_json: &str) -> Result<Self, LogError> {
        let mut writer = Self {
            out: BufWriter::new(w),
            scratch: Vec::with_capacity(64),
        };
        encode_header(meta_json, &mut writer.scratch)?;
        writer.out.write_all(&writer.scratch)?;
        Ok(writer)
    }

    /// Appends a FlowInfo entry.
    pub fn write_flow(&mut self, flow: u32, json: &str) -> Result<(), LogError> {
        self.scratch.clear();
        encode_flow_info(flow, json, &mut self.scratch)?;
        Ok(self.out.write_all(&self.scratch)?)
    }

    /// Appends a FlowEnd entry.
    pub fn write_flow_end(&mut self, flow: u32, json: &str) -> Result<(), LogError> {
        self.scratch.clear();
        encode_flow_info_tagged(TAG_FLOW_END, flow, json, &mut self.scratch)?;
        Ok(self.out.write_all(&self.scratch)?)
    }

    /// Appends an Rx entry.
    pub fn write_rx(&mut self, record: &RxRecord) -> Result<(), LogError> {
        self.scratch.clear();
        encode_rx(record, &mut self.scratch);
        Ok(self.out.write_all(&self.scratch)?)
    }

    /// Appends a Tx entry.
    pub fn write_tx(&mut self, record: &TxRecord) -> Result<(), LogError> {
        self.scratch.clear();
        encode_tx(record, &mut self.scratch);
        Ok(self.out.write_all(&self.scratch)?)
    }

    /// Appends any entry.
    pub fn write_entry(&mut self, entry: &Entry) -> Result<(), LogError> {
        self.scratch.clear();
        encode_entry(entry, &mut self.scratch)?;
        Ok(self.out.write_all(&self.scratch)?)
    }

    /// Pushes buffered entries to the underlying writer and flushes it.
    pub fn flush(&mut self) -> Result<(), LogError> {
        Ok(self.out.flush()?)
    }

    /// Flushes and returns the underlying writer.
    pub fn into_inner(self) -> Result<W, LogError> {
        self.out
            .into_inner()
            .map_err(|e| LogError::Io(e.into_error()))
    }
}

/// Streaming reader of a packet log.
#[derive(Debug)]
pub struct LogReader<R: Read> {
    input: BufReader<R>,
    header: Header,
    offset: u64,
    truncated_tail_bytes: u64,
    done: bool,
}

impl<R: Read> LogReader<R> {
    /// Reads and checks the header of the log on `r`.
    pub fn open(r: R) -> Result<Self, LogError> {
        let mut input = BufReader::new(r);
        let mut fixed = [0u8; HEADER_FIXED_BYTES];
        let got = read_up_to(&mut input, &mut fixed)?;
        if got < fixed.len() {
            return Err(short_header_error(&fixed[..got]));
        }
        let (version, meta_len) = check_header_fixed(&fixed)?;
        let mut meta = vec![0u8; meta_len];
        if read_up_to(&mut input, &mut meta)? < meta_len {
            return Err(LogError::TruncatedHeader);
        }
        let meta_json = String::from_utf8(meta).map_err(|_| LogError::InvalidUtf8 {
            what: "log metadata",
        })?;
        Ok(Self {
            input,
            header: Header { version, meta_json },
            offset: (HEADER_FIXED_BYTES + meta_len) as u64,
            truncated_tail_bytes: 0,
            done: false,
        })
    }

    /// The header read by [`LogReader::open`].
    pub fn header(&self) -> &Header {
        &self.header
    }

    /// The writer's metadata JSON.
    pub fn meta_json(&self) -> &str {
        &self.header.meta_json
    }

    /// Reads the next entry; `Ok(None)` at the end of the log, including
    /// after a cut-short final entry (see [`LogReader::truncated_tail_bytes`])
    /// and after an error.
    pub fn next_entry(&mut self) -> Result<Option<Entry>, LogError> {
        if self.done {
            return Ok(None);
        }
        match self.read_entry() {
            Ok(Some(entry)) => Ok(Some(entry)),
            other => {
                self.done = true;
                other
            }
        }
    }

    /// Bytes of a cut-short final entry that were ignored (0 for a log that
    /// ends cleanly on an entry boundary).
    pub fn truncated_tail_bytes(&self) -> u64 {
        self.truncated_tail_bytes
    }

    /// Byte offset of the next entry from the start of the file.
    pub fn offset(&self) -> u64 {
        self.offset
    }

    fn read_entry(&mut self) -> Result<Option<Entry>, LogError> {
        let entry_offset = self.offset;
        let mut tag = [0u8; 1];
        if read_up_to(&mut self.input, &mut tag)? == 0 {
            return Ok(None);
        }
        let fixed_len = fixed_body_len(tag[0])
            .filter(|_| tag[0] != TAG_RX_RTP || self.header.version >= 2)
            .filter(|_| tag[0] != TAG_FLOW_END || self.header.version >= 3)
            .ok_or(LogError::UnknownTag {
                tag: tag[0],
                offset: entry_offset,
            })?;
        let mut body = vec![0u8; fixed_len];
        let got = read_up_to(&mut self.input, &mut body)?;
        if got < fixed_len {
            return Ok(self.truncated(1 + got));
        }
        if tag[0] == TAG_FLOW_INFO || tag[0] == TAG_FLOW_END {
            let json_len = flow_info_len(&body)?;
            body.resize(fixed_len + json_len, 0);
            let got = read_up_to(&mut self.input, &mut body[fixed_len..])?;
            if got < json_len {
                return Ok(self.truncated(1 + fixed_len + got));
            }
        }
        let (entry, _) = decode_body(tag[0], &body, entry_offset)?;
        self.offset += 1 + body.len() as u64;
        Ok(Some(entry))
    }

    fn truncated(&mut self, bytes: usize) -> Option<Entry> {
        self.truncated_tail_bytes = bytes as u64;
        None
    }
}

impl<R: Read> Iterator for LogReader<R> {
    type Item = Result<Entry, LogError>;

    fn next(&mut self) -> Option<Self::Item> {
        self.next_entry().transpose()
    }
}

/// A whole log in memory, sorted by entry kind (order within a kind kept).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LogContents {
    /// The writer's metadata JSON.
    pub meta_json: String,
    /// FlowInfo JSON per flow id (a later entry for the same id replaces an
    /// earlier one).
    pub flows: BTreeMap<u32, String>,
    /// Rx records in file (= arrival) order.
    pub rx: Vec<RxRecord>,
    /// Tx records in file (= send) order.
    pub tx: Vec<TxRecord>,
    /// FlowEnd JSON per flow id (version 3).
    pub flow_ends: BTreeMap<u32, String>,
    /// See [`LogReader::truncated_tail_bytes`].
    pub truncated_tail_bytes: u64,
}

/// Reads a whole log from `r`.
pub fn read_log(r: impl Read) -> Result<LogContents, LogError> {
    let mut reader = LogReader::open(r)?;
    let mut contents = LogContents::default();
    while let Some(entry) = reader.next_entry()? {
        match entry {
            Entry::FlowInfo { flow, json } => {
                contents.flows.insert(flow, json);
            }
            Entry::Rx(r) => contents.rx.push(r),
            Entry::Tx(t) => contents.tx.push(t),
            Entry::FlowEnd { flow, json } => {
                contents.flow_ends.insert(flow, json);
            }
        }
    }
    contents.truncated_tail_bytes = reader.truncated_tail_bytes();
    contents.meta_json = reader.header.meta_json;
    Ok(contents)
}

/// Encodes a header with `meta_json` onto `out`.
pub fn encode_header(meta_json: &str, out: &mut Vec<u8>) -> Result<(), LogError> {
    let len = checked_len(meta_json.len(), MAX_META_BYTES).ok_or(LogError::MetaTooLarge {
        len: meta_json.len() as u64,
        max: MAX_META_BYTES,
    })?;
    out.extend_from_slice(&MAGIC);
    out.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
    out.extend_from_slice(&len.to_le_bytes());
    out.extend_from_slice(meta_json.as_bytes());
    Ok(())
}

/// Encodes one entry onto `out`.
pub fn encode_entry(entry: &Entry, out: &mut Vec<u8>) -> Result<(), LogError> {
    match entry {
        Entry::FlowInfo { flow, json } => encode_flow_info(*flow, json, out)?,
        Entry::Rx(r) => encode_rx(r, out),
        Entry::Tx(t) => encode_tx(t, out),
        Entry::FlowEnd { flow, json } => encode_flow_info_tagged(TAG_FLOW_END, *flow, json, out)?,
    }
    Ok(())
}

/// Decodes the header at the start of `bytes`; returns it and its length.
pub fn parse_header(bytes: &[u8]) -> Result<(Header, usize), LogError> {
    let Some((fixed, rest)) = bytes.split_first_chunk::<HEADER_FIXED_BYTES>() else {
        return Err(short_header_error(bytes));
    };
    let (version, meta_len) = check_header_fixed(fixed)?;
    let meta = rest.get(..meta_len).ok_or(LogError::TruncatedHeader)?;
    let meta_json = std::str::from_utf8(meta)
        .map_err(|_| LogError::InvalidUtf8 {
            what: "log metadata",
        })?
        .to_owned();
    let header = Header { version, meta_json };
    Ok((header, HEADER_FIXED_BYTES + meta_len))
}

/// Decodes the entry at the start of `bytes`; returns it and its encoded
/// length. A slice ending inside the entry gives [`LogError::Truncated`].
pub fn parse_entry(bytes: &[u8]) -> Result<(Entry, usize), LogError> {
    let (&tag, body) = bytes
        .split_first()
        .ok_or(LogError::Truncated { needed: 1 })?;
    let fixed_len = fixed_body_len(tag).ok_or(LogError::UnknownTag { tag, offset: 0 })?;
    let short = |want: usize| LogError::Truncated {
        needed: want.saturating_sub(body.len()),
    };
    let fixed = body.get(..fixed_len).ok_or_else(|| short(fixed_len))?;
    let body_len = if tag == TAG_FLOW_INFO || tag == TAG_FLOW_END {
        fixed_len + flow_info_len(fixed)?
    } else {
        fixed_len
    };
    let body = body.get(..body_len).ok_or_else(|| short(body_len))?;
    let (entry, len) = decode_body(tag, body, 0)?;
    Ok((entry, 1 + len))
}

/// The error for input shorter than the fixed header: a short file that is
/// not even a log prefix is named as such.
fn short_header_error(bytes: &[u8]) -> LogError {
    let n = bytes.len().min(MAGIC.len());
    if bytes[..n] == MAGIC[..n] {
        LogError::TruncatedHeader
    } else {
        LogError::BadMagic
    }
}

/// Checks magic and version of the fixed header; returns the version and the metadata
/// length.
fn check_header_fixed(fixed: &[u8; HEADER_FIXED_BYTES]) -> Result<(u16, usize), LogError> {
    let mut c = Cursor(fixed);
    if c.array::<6>() != Some(MAGIC) {
        return Err(LogError::BadMagic);
    }
    let version = c.u16().ok_or(LogError::TruncatedHeader)?;
    if !(OLDEST_FORMAT_VERSION..=FORMAT_VERSION).contains(&version) {
        return Err(LogError::UnsupportedVersion {
            found: version,
            supported: FORMAT_VERSION,
        });
    }
    let len = c.u32().ok_or(LogError::TruncatedHeader)?;
    if len > MAX_META_BYTES {
        return Err(LogError::MetaTooLarge {
            len: u64::from(len),
            max: MAX_META_BYTES,
        });
    }
    Ok((version, len as usize))
}

/// Length of the fixed part of an entry body with `tag`; `None` if unknown.
fn fixed_body_len(tag: u8) -> Option<usize> {
    match tag {
        TAG_FLOW_INFO => Some(FLOW_INFO_FIXED_BYTES),
        TAG_RX => Some(RX_BYTES),
        TAG_TX => Some(TX_BYTES),
        TAG_RX_RTP => Some(RX_RTP_BYTES),
        TAG_FLOW_END => Some(FLOW_INFO_FIXED_BYTES),
        _ => None,
    }
}

/// The checked JSON length from a FlowInfo fixed part (flow, length).
fn flow_info_len(fixed: &[u8]) -> Result<usize, LogError> {
    let mut c = Cursor(fixed);
    let len = c
        .u32()
        .and_then(|_| c.u32())
        .ok_or(LogError::Truncated { needed: 8 })?;
    if len > MAX_FLOW_INFO_BYTES {
        return Err(LogError::FlowInfoTooLarge {
            len: u64::from(len),
            max: MAX_FLOW_INFO_BYTES,
        });
    }
    Ok(len as usize)
}

/// Decodes a complete entry body; returns the entry and the body length.
fn decode_body(tag: u8, body: &[u8], offset: u64) -> Result<(Entry, usize), LogError> {
    let mut c = Cursor(body);
    let truncated = || LogError::Truncated { needed: 1 };
    let entry = match tag {
        TAG_FLOW_INFO | TAG_FLOW_END => {
            let flow = c.u32().ok_or_else(truncated)?;
            let len = c.u32().ok_or_else(truncated)? as usize;
            let text = c.take(len).ok_or_else(truncated)?;
            let json = std::str::from_utf8(text)
                .map_err(|_| LogError::InvalidUtf8 { what: "flow info" })?
                .to_owned();
            if tag == TAG_FLOW_END {
                Entry::FlowEnd { flow, json }
            } else {
                Entry::FlowInfo { flow, json }
            }
        }
        TAG_RX => Entry::Rx(decode_rx(&mut c, offset)?),
        TAG_RX_RTP => {
            let record = decode_rx(&mut c, offset)?;
            let rtp_ts = c.u32().ok_or_else(truncated)?;
            Entry::Rx(RxRecord {
                rtp_ts: Some(rtp_ts),
                ..record
            })
        }
        TAG_TX => Entry::Tx(decode_tx(&mut c).ok_or_else(truncated)?),
        _ => return Err(LogError::UnknownTag { tag, offset }),
    };
    Ok((entry, body.len() - c.0.len()))
}

fn encode_flow_info(flow: u32, json: &str, out: &mut Vec<u8>) -> Result<(), LogError> {
    encode_flow_info_tagged(TAG_FLOW_INFO, flow, json, out)
}

fn encode_flow_info_tagged(
    tag: u8,
    flow: u32,
    json: &str,
    out: &mut Vec<u8>,
) -> Result<(), LogError> {
    let len = checked_len(json.len(), MAX_FLOW_INFO_BYTES).ok_or(LogError::FlowInfoTooLarge {
        len: json.len() as u64,
        max: MAX_FLOW_INFO_BYTES,
    })?;
    out.push(tag);
    out.extend_from_slice(&flow.to_le_bytes());
    out.extend_from_slice(&len.to_le_bytes());
    out.extend_from_slice(json.as_bytes());
    Ok(())
}

fn encode_rx(r: &RxRecord, out: &mut Vec<u8>) {
    let mut flags = 0;
    for (present, flag) in [
        (r.tos.is_some(), FLAG_TOS),
        (r.hop_limit.is_some(), FLAG_HOP_LIMIT),
        (r.flow_label.is_some(), FLAG_FLOW_LABEL),
        (r.kernel_ts, FLAG_KERNEL_TS),
    ] {
        if present {
            flags |= flag;
        }
    }
    out.push(if r.rtp_ts.is_some() {
        TAG_RX_RTP
    } else {
        TAG_RX
    });
    out.extend_from_slice(&r.flow.to_le_bytes());
    out.extend_from_slice(&r.seq.to_le_bytes());
    out.extend_from_slice(&r.size_bytes.to_le_bytes());
    out.extend_from_slice(&r.tx_ns.to_le_bytes());
    out.extend_from_slice(&r.rx_ns.to_le_bytes());
    out.push(flags);
    out.push(r.tos.unwrap_or(0));
    out.push(r.hop_limit.unwrap_or(0));
    out.extend_from_slice(&r.flow_label.unwrap_or(0).to_le_bytes());
    if let Some(ts) = r.rtp_ts {
        out.extend_from_slice(&ts.to_le_bytes());
    }
}

/// Decodes an Rx body; the entry at `offset` is named in a flags error.
fn decode_rx(c: &mut Cursor<'_>, offset: u64) -> Result<RxRecord, LogError> {
    let short = || LogError::Truncated { needed: 1 };
    let flow = c.u32().ok_or_else(short)?;
    let seq = c.u64().ok_or_else(short)?;
    let size_bytes = c.u32().ok_or_else(short)?;
    let tx_ns = c.u64().ok_or_else(short)?;
    let rx_ns = c.u64().ok_or_else(short)?;
    let flags = c.u8().ok_or_else(short)?;
    let tos = c.u8().ok_or_else(short)?;
    let hop_limit = c.u8().ok_or_else(short)?;
    let flow_label = c.u32().ok_or_else(short)?;
    if flags & !KNOWN_FLAGS != 0 {
        return Err(LogError::InvalidFlags { flags, offset });
    }
    Ok(RxRecord {
        flow,
        seq,
        size_bytes,
        tx_ns,
        rx_ns,
        tos: (flags & FLAG_TOS != 0).then_some(tos),
        hop_limit: (flags & FLAG_HOP_LIMIT != 0).then_some(hop_limit),
        flow_label: (flags & FLAG_FLOW_LABEL != 0).then_some(flow_label),
        kernel_ts: flags & FLAG_KERNEL_TS != 0,
        rtp_ts: None,
    })
}

fn encode_tx(t: &TxRecord, out: &mut Vec<u8>) {
    out.push(TAG_TX);
    out.extend_from_slice(&t.flow.to_le_bytes());
    out.extend_from_slice(&t.seq.to_le_bytes());
    out.extend_from_slice(&t.size_bytes.to_le_bytes());
    out.extend_from_slice(&t.scheduled_ns.to_le_bytes());
    out.extend_from_slice(&t.actual_ns.to_le_bytes());
}

fn decode_tx(c: &mut Cursor<'_>) -> Option<TxRecord> {
    Some(TxRecord {
        flow: c.u32()?,
        seq: c.u64()?,
        size_bytes: c.u32()?,
        scheduled_ns: c.u64()?,
        actual_ns: c.u64()?,
    })
}

/// `len` as a u32 if it is at most `max`.
fn checked_len(len: usize, max: u32) -> Option<u32> {
    u32::try_from(len).ok().filter(|&l| l <= max)
}

/// Fills `buf` from `r` as far as the input goes; returns the bytes read
/// (less than `buf.len()` only at end of input).
fn read_up_to(r: &mut impl Read, buf: &mut [u8]) -> io::Result<usize> {
    let mut filled = 0;
    while filled < buf.len() {
        match r.read(&mut buf[filled..]) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(filled)
}

/// Little-endian reads from a shrinking slice; `None` when too short.
struct Cursor<'a>(&'a [u8]);

impl<'a> Cursor<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        if n > self.0.len() {
            return None;
        }
        let (head, rest) = self.0.split_at(n);
        self.0 = rest;
        Some(head)
    }

    fn array<const N: usize>(&mut self) -> Option<[u8; N]> {
        let (head, rest) = self.0.split_first_chunk::<N>()?;
        self.0 = rest;
        Some(*head)
    }

    fn u8(&mut self) -> Option<u8> {
        self.array::<1>().map(|[b]| b)
    }

    fn u16(&mut self) -> Option<u16> {
        self.array().map(u16::from_le_bytes)
    }

    fn u32(&mut self) -> Option<u32> {
        self.array().map(u32::from_le_bytes)
    }

    fn u64(&mut self) -> Option<u64> {
        self.array().map(u64::from_le_bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const META: &str = r#"{"tool":"dualperf","role":"recv"}"#;
    const FLOW: &str = r#"{"protocol":"udp","ip":6,"meter":"owd","dscp":46}"#;
    const END: &str = r#"{"sent_packets":9,"unlogged_records":0}"#;

    fn rx_full() -> RxRecord {
        RxRecord {
            flow: 7,
            seq: 0x0102_0304_0506_0708,
            size_bytes: 172,
            tx_ns: 1_700_000_000_123_456_789,
            rx_ns: 1_700_000_000_123_556_789,
            tos: Some(0xb8),
            hop_limit: Some(63),
            flow_label: Some(0xabcde),
            kernel_ts: true,
            rtp_ts: None,
        }
    }

    fn rx_bare() -> RxRecord {
        RxRecord {
            flow: 8,
            seq: 1,
            size_bytes: 64,
            tx_ns: 10,
            rx_ns: 20,
            ..RxRecord::default()
        }
    }

    fn tx_one() -> TxRecord {
        TxRecord {
            flow: 7,
            seq: 3,
            size_bytes: 172,
            scheduled_ns: 5_000,
            actual_ns: 5_042,
        }
    }

    fn sample_log() -> Vec<u8> {
        let mut w = LogWriter::new(Vec::new(), META).unwrap();
        w.write_flow(7, FLOW).unwrap();
        w.write_rx(&rx_full()).unwrap();
        w.write_rx(&rx_bare()).unwrap();
        w.write_tx(&tx_one()).unwrap();
        w.into_inner().unwrap()
    }

    fn entries() -> Vec<Entry> {
        vec![
            Entry::FlowInfo {
                flow: 7,
                json: FLOW.to_owned(),
            },
            Entry::Rx(rx_full()),
            Entry::Rx(rx_bare()),
            Entry::Tx(tx_one()),
        ]
    }

    #[test]
    fn round_trips_through_reader() {
        let bytes = sample_log();
        let mut reader = LogReader::open(bytes.as_slice()).unwrap();
        assert_eq!(reader.meta_json(), META);
        assert_eq!(reader.header().version, 3);
        let got: Vec<Entry> = reader.by_ref().map(Result::unwrap).collect();
        assert_eq!(got, entries());
        assert_eq!(reader.truncated_tail_bytes(), 0);
        assert_eq!(reader.offset(), bytes.len() as u64);
    }

    #[test]
    fn round_trips_through_slice_parser() {
        let bytes = sample_log();
        let (header, mut at) = parse_header(&bytes).unwrap();
        assert_eq!(header.meta_json, META);
        let mut got = Vec::new();
        while at < bytes.len() {
            let (entry, len) = parse_entry(&bytes[at..]).unwrap();
            got.push(entry);
            at += len;
        }
        assert_eq!(got, entries());
    }

    #[test]
    fn read_log_collects_by_kind() {
        let contents = read_log(sample_log().as_slice()).unwrap();
        assert_eq!(contents.meta_json, META);
        assert_eq!(contents.flows, BTreeMap::from([(7, FLOW.to_owned())]));
        assert_eq!(contents.rx, vec![rx_full(), rx_bare()]);
        assert_eq!(contents.tx, vec![tx_one()]);
        assert_eq!(contents.truncated_tail_bytes, 0);
    }

    #[test]
    fn encoding_matches_the_documented_layout() {
        let mut w = LogWriter::new(Vec::new(), "{}").unwrap();
        w.write_rx(&rx_full()).unwrap();
        let bytes = w.into_inner().unwrap();
        #[rustfmt::skip]
        let want: Vec<u8> = [
            &b"DPLOG\0"[..], &[3, 0], &[2, 0, 0, 0], b"{}",
            &[0x02],
            &[7, 0, 0, 0],
            &[8, 7, 6, 5, 4, 3, 2, 1],
            &[172, 0, 0, 0],
            &1_700_000_000_123_456_789u64.to_le_bytes(),
            &1_700_000_000_123_556_789u64.to_le_bytes(),
            &[0b1111, 0xb8, 63],
            &[0xde, 0xbc, 0x0a, 0x00],
        ]
        .concat();
        assert_eq!(bytes, want);
        assert_eq!(bytes.len(), HEADER_FIXED_BYTES + 2 + 1 + RX_BYTES);
    }

    #[test]
    fn truncated_tail_ends_cleanly_after_last_whole_entry() {
        let bytes = sample_log();
        let tx_len = 1 + TX_BYTES;
        // Cut the final Tx entry at every possible point.
        for cut in 1..tx_len {
            let short = &bytes[..bytes.len() - cut];
            let mut reader = LogReader::open(short).unwrap();
            let got: Vec<Entry> = reader.by_ref().map(Result::unwrap).collect();
            assert_eq!(got, entries()[..3], "cut {cut}");
            assert_eq!(reader.truncated_tail_bytes(), (tx_len - cut) as u64);
            assert!(matches!(
                parse_entry(&short[short.len() - (tx_len - cut)..]),
                Err(LogError::Truncated { needed }) if needed == cut
            ));
        }
    }

    #[test]
    fn truncated_flow_info_ends_cleanly() {
        let mut w = LogWriter::new(Vec::new(), META).unwrap();
        w.write_rx(&rx_bare()).unwrap();
        w.write_flow(9, FLOW).unwrap();
        let bytes = w.into_inner().unwrap();
        let short = &bytes[..bytes.len() - 5];
        let contents = read_log(short).unwrap();
        assert_eq!(contents.rx, vec![rx_bare()]);
        assert!(contents.flows.is_empty());
        assert_eq!(
            contents.truncated_tail_bytes,
            (1 + FLOW_INFO_FIXED_BYTES + FLOW.len() - 5) as u64
        );
    }

    #[test]
    fn wrong_magic_is_rejected() {
        let mut bytes = sample_log();
        bytes[0] = b'X';
        assert!(matches!(
            LogReader::open(bytes.as_slice()),
            Err(LogError::BadMagic)
        ));
        assert!(matches!(parse_header(&bytes), Err(LogError::BadMagic)));
        assert!(matches!(
            LogReader::open(&b"PK\x03"[..]),
            Err(LogError::BadMagic)
        ));
        assert!(matches!(
            LogReader::open(&b""[..]),
            Err(LogError::TruncatedHeader)
        ));
        assert!(matches!(
            parse_header(b"DPLOG\0\x01"),
            Err(LogError::TruncatedHeader)
        ));
    }

    #[test]
    fn other_versions_are_rejected() {
        let mut bytes = sample_log();
        bytes[6] = 4;
        assert!(matches!(
            LogReader::open(bytes.as_slice()),
            Err(LogError::UnsupportedVersion {
                found: 4,
                supported: 3
            })
        ));
        bytes[6] = 0;
        assert!(matches!(
            parse_header(&bytes),
            Err(LogError::UnsupportedVersion {
                found: 0,
                supported: 3
            })
        ));
    }

    fn rx_rtp() -> RxRecord {
        RxRecord {
            rtp_ts: Some(0xdead_beef),
            ..rx_full()
        }
    }

    #[test]
    fn rtp_timestamps_round_trip_in_their_own_entry() {
        let mut w = LogWriter::new(Vec::new(), "{}").unwrap();
        w.write_rx(&rx_rtp()).unwrap();
        w.write_rx(&rx_bare()).unwrap();
        let bytes = w.into_inner().unwrap();
        let mut plain = Vec::new();
        encode_entry(&Entry::Rx(rx_full()), &mut plain).unwrap();
        let at = HEADER_FIXED_BYTES + 2;
        // The RxRtp entry is the Rx entry under tag 0x04, followed by the timestamp.
        assert_eq!(bytes[at], 0x04);
        assert_eq!(bytes[at + 1..at + 1 + RX_BYTES], plain[1..]);
        assert_eq!(
            bytes[at + 1 + RX_BYTES..at + 1 + RX_RTP_BYTES],
            [0xef, 0xbe, 0xad, 0xde]
        );
        let got: Vec<Entry> = LogReader::open(bytes.as_slice())
            .unwrap()
            .map(Result::unwrap)
            .collect();
        assert_eq!(got, [Entry::Rx(rx_rtp()), Entry::Rx(rx_bare())]);
        assert_eq!(
            parse_entry(&bytes[at..]).unwrap(),
            (Entry::Rx(rx_rtp()), 1 + RX_RTP_BYTES)
        );
        assert!(matches!(
            parse_entry(&bytes[at..at + RX_RTP_BYTES]),
            Err(LogError::Truncated { needed: 1 })
        ));
    }

    #[test]
    fn flow_end_round_trips_and_needs_version_3() {
        let mut w = LogWriter::new(Vec::new(), META).unwrap();
        w.write_flow(7, FLOW).unwrap();
        w.write_rx(&rx_full()).unwrap();
        w.write_flow_end(7, END).unwrap();
        let bytes = w.into_inner().unwrap();
        let end = Entry::FlowEnd {
            flow: 7,
            json: END.to_owned(),
        };
        let got: Vec<Entry> = LogReader::open(bytes.as_slice())
            .unwrap()
            .map(Result::unwrap)
            .collect();
        assert_eq!(got.last(), Some(&end));
        let contents = read_log(bytes.as_slice()).unwrap();
        assert_eq!(contents.flow_ends, BTreeMap::from([(7, END.to_owned())]));
        let mut encoded = Vec::new();
        encode_entry(&end, &mut encoded).unwrap();
        assert_eq!(encoded[0], TAG_FLOW_END);
        assert_eq!(parse_entry(&encoded).unwrap(), (end, encoded.len()));
        // A version 2 log has no FlowEnd: its tag is unknown there.
        let mut v2 = bytes.clone();
        v2[6] = 2;
        let err = LogReader::open(v2.as_slice())
            .unwrap()
            .find_map(Result::err)
            .unwrap();
        assert!(matches!(err, LogError::UnknownTag { tag: 0x05, .. }));
    }

    #[test]
    fn version_1_logs_read_without_rtp_timestamps() {
        // A version 1 log is a version 2 log without RxRtp entries.
        let mut bytes = sample_log();
        bytes[6] = 1;
        let mut reader = LogReader::open(bytes.as_slice()).unwrap();
        assert_eq!(reader.header().version, 1);
        let got: Vec<Entry> = reader.by_ref().map(Result::unwrap).collect();
        assert_eq!(got, entries());
        assert!(read_log(bytes.as_slice())
            .unwrap()
            .rx
            .iter()
            .all(|r| r.rtp_ts.is_none()));
        assert_eq!(parse_header(&bytes).unwrap().0.version, 1);
        // Version 1 had no RxRtp entry: its tag is unknown there.
        let mut v1 = Vec::new();
        encode_header("", &mut v1).unwrap();
        v1[6] = 1;
        let entry_offset = v1.len() as u64;
        encode_entry(&Entry::Rx(rx_rtp()), &mut v1).unwrap();
        assert!(matches!(
            LogReader::open(v1.as_slice()).unwrap().next_entry(),
            Err(LogError::UnknownTag { tag: 0x04, offset }) if offset == entry_offset
        ));
    }

    #[test]
    fn huge_lengths_are_rejected_before_allocating() {
        let mut header = Vec::new();
        header.extend_from_slice(&MAGIC);
        header.extend_from_slice(&1u16.to_le_bytes());
        header.extend_from_slice(&u32::MAX.to_le_bytes());
        assert!(matches!(
            LogReader::open(header.as_slice()),
            Err(LogError::MetaTooLarge {
                len: 0xffff_ffff,
                max: MAX_META_BYTES
            })
        ));
        assert!(matches!(
            parse_header(&header),
            Err(LogError::MetaTooLarge { .. })
        ));

        let mut bytes = Vec::new();
        encode_header(META, &mut bytes).unwrap();
        bytes.push(TAG_FLOW_INFO);
        bytes.extend_from_slice(&1u32.to_le_bytes());
        bytes.extend_from_slice(&(MAX_FLOW_INFO_BYTES + 1).to_le_bytes());
        let mut reader = LogReader::open(bytes.as_slice()).unwrap();
        assert!(matches!(
            reader.next_entry(),
            Err(LogError::FlowInfoTooLarge { len: 65537, .. })
        ));
        // After an error the reader stays finished.
        assert!(reader.next_entry().unwrap().is_none());
    }

    #[test]
    fn writer_refuses_oversized_texts() {
        let big = "x".repeat(MAX_META_BYTES as usize + 1);
        assert!(matches!(
            LogWriter::new(Vec::new(), &big),
            Err(LogError::MetaTooLarge { .. })
        ));
        let mut w = LogWriter::new(Vec::new(), META).unwrap();
        let big = "x".repeat(MAX_FLOW_INFO_BYTES as usize + 1);
        assert!(matches!(
            w.write_flow(1, &big),
            Err(LogError::FlowInfoTooLarge { .. })
        ));
        // Exactly at the limit is fine.
        w.write_flow(1, &big[1..]).unwrap();
    }

    #[test]
    fn unknown_tag_and_flags_are_errors_with_offsets() {
        let mut bytes = Vec::new();
        encode_header("", &mut bytes).unwrap();
        let entry_offset = bytes.len() as u64;
        bytes.push(0x7f);
        let mut reader = LogReader::open(bytes.as_slice()).unwrap();
        assert!(matches!(
            reader.next_entry(),
            Err(LogError::UnknownTag { tag: 0x7f, offset }) if offset == entry_offset
        ));

        let mut entry = Vec::new();
        encode_entry(&Entry::Rx(rx_bare()), &mut entry).unwrap();
        entry[33] = 0x10;
        assert!(matches!(
            parse_entry(&entry),
            Err(LogError::InvalidFlags {
                flags: 0x10,
                offset: 0
            })
        ));
    }

    #[test]
    fn invalid_utf8_is_an_error() {
        let mut bytes = Vec::new();
        bytes.extend_from_slice(&MAGIC);
        bytes.extend_from_slice(&1u16.to_le_bytes());
        bytes.extend_from_slice(&2u32.to_le_bytes());
        bytes.extend_from_slice(&[0xff, 0xfe]);
        assert!(matches!(
            LogReader::open(bytes.as_slice()),
            Err(LogError::InvalidUtf8 { .. })
        ));
        let mut entry = vec![TAG_FLOW_INFO];
        entry.extend_from_slice(&1u32.to_le_bytes());
        entry.extend_from_slice(&1u32.to_le_bytes());
        entry.push(0xc0);
        assert!(matches!(
            parse_entry(&entry),
            Err(LogError::InvalidUtf8 { .. })
        ));
    }

    /// xorshift64*: deterministic pseudo-random bytes without a dependency.
    fn garbage(seed: u64, len: usize) -> Vec<u8> {
        let mut x = seed | 1;
        (0..len)
            .map(|_| {
                x ^= x >> 12;
                x ^= x << 25;
                x ^= x >> 27;
                (x.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 56) as u8
            })
            .collect()
    }

    #[test]
    fn garbage_never_panics() {
        let mut header = Vec::new();
        encode_header(META, &mut header).unwrap();
        for seed in 0..300u64 {
            let noise = garbage(seed, (seed as usize * 7) % 400);
            // Raw garbage as a whole file.
            let _ = read_log(noise.as_slice());
            let _ = parse_header(&noise);
            // Garbage after a valid header, through both readers; biased
            // towards valid tags so the entry decoders get exercised.
            let mut body = noise.clone();
            if let Some(first) = body.first_mut() {
                *first = 1 + *first % 3;
            }
            let mut file = header.clone();
            file.extend_from_slice(&body);
            let mut reader = LogReader::open(file.as_slice()).unwrap();
            let mut steps = 0;
            while let Ok(Some(_)) = reader.next_entry() {
                steps += 1;
                assert!(steps <= body.len());
            }
            let mut at = 0;
            while let Ok((_, len)) = parse_entry(&body[at..]) {
                assert!(len > 0);
                at += len;
            }
        }
    }
}
