//! Length-prefixed framing, for message boundaries on TCP (data and control alike).
//!
//! ```text
//! +--------+--------+--------+--------+------------------------------+
//! |   length of the body, u32 big-endian   |  body (length bytes)   |
//! +--------+--------+--------+--------+------------------------------+
//! ```
//!
//! A TCP data message of `--size N` bytes travels as 4 + N bytes on the stream: the body
//! is the probe header and padding, exactly as a UDP payload of N bytes would be. D-ITG
//! likewise adds a 4-byte size field to TCP payloads (`reference/peer-tools.md` §3).
//!
//! [`FrameDecoder`] is sans-IO: feed it bytes with [`FrameDecoder::handle_bytes`], take
//! whole bodies with [`FrameDecoder::poll_frame`]. A length above the decoder's maximum is
//! an error, so a peer cannot make us buffer without bound.
//!
//! [`FrameScanner`] walks the same stream without keeping the bodies: it keeps the first
//! few bytes of each (the probe) and counts the rest, so a receiver of bulk TCP data that
//! needs only the probe copies nothing else.

use crate::{Error, Result};

/// Bytes of the length prefix.
pub const PREFIX_LEN: usize = 4;

/// Largest TCP data message body a receiver accepts (and a sender may ask for).
pub const MAX_DATA_LEN: usize = 4 << 20;

/// Write the prefix for a body of `len` bytes into `out[..4]`.
pub fn emit_prefix(len: usize, out: &mut [u8]) -> Result<()> {
    let value = u32::try_from(len).map_err(|_| Error::TooLong {
        len,
        max: u32::MAX as usize,
    })?;
    let have = out.len();
    let dst = out.get_mut(..PREFIX_LEN).ok_or(Error::Truncated {
        need: PREFIX_LEN,
        have,
    })?;
    dst.copy_from_slice(&value.to_be_bytes());
    Ok(())
}

/// A body with its prefix, ready to write.
pub fn encode(body: &[u8]) -> Result<Vec<u8>> {
    let mut out = vec![0u8; PREFIX_LEN + body.len()];
    emit_prefix(body.len(), &mut out)?;
    out[PREFIX_LEN..].copy_from_slice(body);
    Ok(out)
}

/// Reassembles framed bodies from a byte stream.
#[derive(Debug)]
pub struct FrameDecoder {
    buf: Vec<u8>,
    start: usize,
    max_len: usize,
}

impl FrameDecoder {
    /// A decoder that refuses bodies longer than `max_len`.
    pub fn new(max_len: usize) -> Self {
        Self {
            buf: Vec::new(),
            start: 0,
            max_len,
        }
    }

    /// Change the largest body accepted from now on (a connection that starts with a
    /// small control message and continues as a data stream).
    pub fn set_max_len(&mut self, max_len: usize) {
        self.max_len = max_len;
    }

    /// Append bytes read from the stream.
    pub fn handle_bytes(&mut self, data: &[u8]) {
        if self.start > 0 && self.start == self.buf.len() {
            self.buf.clear();
            self.start = 0;
        } else if self.start > 64 * 1024 && self.start * 2 > self.buf.len() {
            self.buf.drain(..self.start);
            self.start = 0;
        }
        self.buf.extend_from_slice(data);
    }

    /// The next whole body, if one has arrived. An oversized length is an error, after
    /// which the stream cannot be resynchronised and should be closed.
    pub fn poll_frame(&mut self) -> Result<Option<&[u8]>> {
        let pending = &self.buf[self.start..];
        let Some(prefix) = pending.get(..PREFIX_LEN) else {
            return Ok(None);
        };
        let len = u32::from_be_bytes([prefix[0], prefix[1], prefix[2], prefix[3]]) as usize;
        if len > self.max_len {
            return Err(Error::TooLong {
                len,
                max: self.max_len,
            });
        }
        if pending.len() < PREFIX_LEN + len {
            return Ok(None);
        }
        let body_start = self.start + PREFIX_LEN;
        self.start = body_start + len;
        Ok(Some(&self.buf[body_start..body_start + len]))
    }

    /// Bytes received but not yet returned as a body.
    pub fn buffered(&self) -> usize {
        self.buf.len() - self.start
    }

    /// Take the bytes received but not yet returned as a body (to go on with another
    /// decoder over the same stream).
    pub fn take_buffered(&mut self) -> Vec<u8> {
        let rest = self.buf.split_off(self.start);
        self.buf.clear();
        self.start = 0;
        rest
    }
}

/// A frame seen by a [`FrameScanner`]: its body length and the body's first bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ScannedFrame<'a> {
    /// Length of the whole body.
    pub len: usize,
    /// The first `min(len, keep)` bytes of the body.
    pub head: &'a [u8],
}

/// Walks a framed stream keeping only the head of each body (see the module docs).
///
/// Feed it with [`FrameScanner::handle_bytes`], which consumes bytes up to the end of at
/// most one frame and says how many it took; then take that frame with
/// [`FrameScanner::poll_frame`] before feeding it more.
#[derive(Debug)]
pub struct FrameScanner {
    max_len: usize,
    keep: usize,
    prefix: [u8; PREFIX_LEN],
    prefix_have: usize,
    /// Length of the body being read, once its prefix is whole.
    body_len: Option<usize>,
    body_seen: usize,
    head: Vec<u8>,
    /// A whole frame waiting for `poll_frame`: its body length.
    ready: Option<usize>,
}

impl FrameScanner {
    /// A scanner that refuses bodies longer than `max_len` and keeps `keep` bytes of each.
    pub fn new(max_len: usize, keep: usize) -> Self {
        Self {
            max_len,
            keep,
            prefix: [0; PREFIX_LEN],
            prefix_have: 0,
            body_len: None,
            body_seen: 0,
            head: Vec::with_capacity(keep),
            ready: None,
        }
    }

    /// Consume bytes of `data` up to the end of the next whole frame; returns how many
    /// were consumed (all of them if no frame ends in `data`, none while a frame waits
    /// for [`Self::poll_frame`]). An oversized length is an error, after which the
    /// stream cannot be resynchronised.
    pub fn handle_bytes(&mut self, data: &[u8]) -> Result<usize> {
        if self.ready.is_some() {
            return Ok(0);
        }
        let mut used = 0;
        while used < data.len() {
            let rest = &data[used..];
            match self.body_len {
                None => {
                    let take = (PREFIX_LEN - self.prefix_have).min(rest.len());
                    self.prefix[self.prefix_have..self.prefix_have + take]
                        .copy_from_slice(&rest[..take]);
                    self.prefix_have += take;
                    used += take;
                    if self.prefix_have < PREFIX_LEN {
                        continue;
                    }
                    let len = u32::from_be_bytes(self.prefix) as usize;
                    if len > self.max_len {
                        return Err(Error::TooLong {
                            len,
                            max: self.max_len,
                        });
                    }
                    self.body_len = Some(len);
                    self.body_seen = 0;
                    self.head.clear();
                    if len == 0 {
                        self.end_frame(0);
                        return Ok(used);
                    }
                }
                Some(len) => {
                    let take = (len - self.body_seen).min(rest.len());
                    let want = self.keep.min(len).saturating_sub(self.body_seen).min(take);
                    self.head.extend_from_slice(&rest[..want]);
                    self.body_seen += take;
                    used += take;
                    if self.body_seen == len {
                        self.end_frame(len);
                        return Ok(used);
                    }
                }
            }
        }
        Ok(used)
    }

    fn end_frame(&mut self, len: usize) {
        self.ready = Some(len);
        self.prefix_have = 0;
        self.body_len = None;
    }

    /// The frame that [`Self::handle_bytes`] completed, if any.
    pub fn poll_frame(&mut self) -> Option<ScannedFrame<'_>> {
        let len = self.ready.take()?;
        Some(ScannedFrame {
            len,
            head: &self.head,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reassembles_bodies_split_across_reads() {
        let mut stream = encode(b"hello").unwrap();
        stream.extend(encode(b"").unwrap());
        stream.extend(encode(&[7u8; 300]).unwrap());
        let mut d = FrameDecoder::new(1024);
        let mut bodies = Vec::new();
        for chunk in stream.chunks(3) {
            d.handle_bytes(chunk);
            while let Some(b) = d.poll_frame().unwrap() {
                bodies.push(b.to_vec());
            }
        }
        assert_eq!(bodies.len(), 3);
        assert_eq!(bodies[0], b"hello");
        assert!(bodies[1].is_empty());
        assert_eq!(bodies[2], vec![7u8; 300]);
        assert_eq!(d.buffered(), 0);
    }

    /// Every frame the scanner sees, as (length, head), feeding `chunk` bytes at a time.
    fn scan(stream: &[u8], chunk: usize, keep: usize) -> Result<Vec<(usize, Vec<u8>)>> {
        let mut s = FrameScanner::new(1024, keep);
        let mut out = Vec::new();
        for mut part in stream.chunks(chunk) {
            while !part.is_empty() {
                let used = s.handle_bytes(part)?;
                part = &part[used..];
                if let Some(f) = s.poll_frame() {
                    out.push((f.len, f.head.to_vec()));
                }
            }
        }
        Ok(out)
    }

    #[test]
    fn the_scanner_sees_the_decoders_frames_keeping_only_their_heads() {
        let mut stream = encode(b"hello").unwrap();
        stream.extend(encode(b"").unwrap());
        stream.extend(encode(&[7u8; 300]).unwrap());
        stream.extend(encode(b"abc").unwrap());
        for chunk in [1, 2, 3, 5, 64, 1000] {
            let frames = scan(&stream, chunk, 4).unwrap();
            assert_eq!(
                frames,
                vec![
                    (5, b"hell".to_vec()),
                    (0, vec![]),
                    (300, vec![7; 4]),
                    (3, b"abc".to_vec())
                ],
                "chunks of {chunk}"
            );
        }
        // A frame waiting to be polled holds the rest of the input back.
        let mut s = FrameScanner::new(1024, 4);
        assert_eq!(s.handle_bytes(&stream).unwrap(), 9);
        assert_eq!(s.handle_bytes(&stream[9..]).unwrap(), 0);
        assert_eq!(s.poll_frame().map(|f| f.len), Some(5));
        assert_eq!(s.poll_frame(), None);
        let mut big = encode(&[1u8; 2000]).unwrap();
        big.extend(encode(b"x").unwrap());
        assert!(scan(&big, 7, 16).is_err());
    }

    #[test]
    fn take_buffered_hands_over_the_unread_rest() {
        let mut d = FrameDecoder::new(1024);
        let mut stream = encode(b"attach").unwrap();
        stream.extend(encode(b"data").unwrap());
        d.handle_bytes(&stream[..13]);
        assert_eq!(d.poll_frame().unwrap(), Some(&b"attach"[..]));
        assert_eq!(d.take_buffered(), stream[10..13].to_vec());
        assert_eq!(d.buffered(), 0);
    }

    #[test]
    fn refuses_an_oversized_length() {
        let mut d = FrameDecoder::new(16);
        d.handle_bytes(&[0xff, 0xff, 0xff, 0xff, 1, 2]);
        assert_eq!(
            d.poll_frame().unwrap_err(),
            Error::TooLong {
                len: u32::MAX as usize,
                max: 16
            }
        );
    }
}
