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
