//! The RSVP object header and the object walk (RFC 2205 §3.1.2, §3.10).
//!
//! ```text
//!  0                   1                   2                   3
//! +-------------+-------------+-------------+-------------+
//! |       Length (bytes)      |  Class-Num  |   C-Type    |
//! +-------------+-------------+-------------+-------------+
//! //                  (Object contents)                   //
//! ```
//!
//! Length counts the header, is at least 4 and a multiple of 4. A Class-Num this build
//! does not know is handled by its two top bits (RFC 2205 §3.10): `0b0xxxxxxx` refuses
//! the message ([`ParseError::UnknownClass`], answered with error code 13),
//! `0b10xxxxxx` is ignored and not forwarded, `0b11xxxxxx` is kept ([`Opaque`]) and
//! forwarded unchanged.

use super::ParseError;

/// Length of an object header.
pub const OBJECT_HEADER_LEN: usize = 4;

/// Class-Nums (RFC 2205 Appendix A).
pub mod class {
    /// NULL: ignored wherever it appears.
    pub const NULL: u8 = 0;
    /// SESSION.
    pub const SESSION: u8 = 1;
    /// RSVP_HOP.
    pub const RSVP_HOP: u8 = 3;
    /// INTEGRITY (RFC 2747).
    pub const INTEGRITY: u8 = 4;
    /// TIME_VALUES.
    pub const TIME_VALUES: u8 = 5;
    /// ERROR_SPEC.
    pub const ERROR_SPEC: u8 = 6;
    /// SCOPE.
    pub const SCOPE: u8 = 7;
    /// STYLE.
    pub const STYLE: u8 = 8;
    /// FLOWSPEC.
    pub const FLOWSPEC: u8 = 9;
    /// FILTER_SPEC.
    pub const FILTER_SPEC: u8 = 10;
    /// SENDER_TEMPLATE.
    pub const SENDER_TEMPLATE: u8 = 11;
    /// SENDER_TSPEC.
    pub const SENDER_TSPEC: u8 = 12;
    /// ADSPEC.
    pub const ADSPEC: u8 = 13;
    /// POLICY_DATA.
    pub const POLICY_DATA: u8 = 14;
    /// RESV_CONFIRM.
    pub const RESV_CONFIRM: u8 = 15;
}

/// An object kept as bytes: ADSPEC, POLICY_DATA, and unknown classes `0b11xxxxxx` that
/// RFC 2205 §3.10 says to forward.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Opaque {
    /// Class-Num.
    pub class: u8,
    /// C-Type.
    pub ctype: u8,
    /// The contents after the object header (emit pads them with zeros to a multiple
    /// of 4; parsed bodies always are one).
    pub body: Vec<u8>,
}

impl Opaque {
    /// The object's length on the wire, header included.
    pub fn buffer_len(&self) -> usize {
        OBJECT_HEADER_LEN + self.body.len().next_multiple_of(4)
    }
}

/// What to do with an object of a class, by RFC 2205 §3.10.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Disposition {
    /// A class this build reads.
    Known,
    /// Known but skipped: NULL, INTEGRITY, SCOPE.
    Skip,
    /// Unknown, `0b0xxxxxxx`: refuse the message (code 13).
    Reject,
    /// Unknown, `0b10xxxxxx`: ignore, do not forward.
    Ignore,
    /// Unknown, `0b11xxxxxx`: keep and forward unchanged.
    Forward,
}

/// How a Class-Num is handled.
pub fn disposition(class: u8) -> Disposition {
    match class {
        class::NULL | class::INTEGRITY | class::SCOPE => Disposition::Skip,
        class::SESSION | class::RSVP_HOP | class::TIME_VALUES | class::ERROR_SPEC => {
            Disposition::Known
        }
        class::STYLE..=class::RESV_CONFIRM => Disposition::Known,
        c if c & 0x80 == 0 => Disposition::Reject,
        c if c & 0x40 == 0 => Disposition::Ignore,
        _ => Disposition::Forward,
    }
}

/// One object: its header fields and its contents, borrowed from the message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Object<'a> {
    /// Class-Num.
    pub class: u8,
    /// C-Type.
    pub ctype: u8,
    /// Contents after the header.
    pub body: &'a [u8],
}

impl Object<'_> {
    /// The object as owned bytes.
    pub fn to_opaque(&self) -> Opaque {
        Opaque {
            class: self.class,
            ctype: self.ctype,
            body: self.body.to_vec(),
        }
    }
}

/// Walk the objects of a message body (the octets after the common header). Yields an
/// error and then stops when an object's length is bad or runs past the end.
pub fn objects(data: &[u8]) -> Objects<'_> {
    Objects {
        data,
        failed: false,
    }
}

/// The iterator of [`objects`].
#[derive(Debug, Clone)]
pub struct Objects<'a> {
    data: &'a [u8],
    failed: bool,
}

impl<'a> Iterator for Objects<'a> {
    type Item = Result<Object<'a>, ParseError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.data.is_empty() || self.failed {
            return None;
        }
        let result = self.step();
        self.failed = result.is_err();
        Some(result)
    }
}

impl<'a> Objects<'a> {
    fn step(&mut self) -> Result<Object<'a>, ParseError> {
        let d = self.data;
        if d.len() < OBJECT_HEADER_LEN {
            return Err(ParseError::BadLength);
        }
        let len = u16::from_be_bytes([d[0], d[1]]);
        let (class, ctype) = (d[2], d[3]);
        let n = usize::from(len);
        if n < OBJECT_HEADER_LEN || n % 4 != 0 {
            return Err(ParseError::BadObjectLength { class, len });
        }
        if n > d.len() {
            return Err(ParseError::Truncated);
        }
        self.data = &d[n..];
        Ok(Object {
            class,
            ctype,
            body: &d[OBJECT_HEADER_LEN..n],
        })
    }
}

/// Writes objects one after the other into a buffer (sized by the caller from the
/// objects' `buffer_len`s).
#[derive(Debug)]
pub struct Writer<'a> {
    buf: &'a mut [u8],
    pos: usize,
}

impl<'a> Writer<'a> {
    /// A writer at the start of `buf`.
    pub fn new(buf: &'a mut [u8]) -> Self {
        Self { buf, pos: 0 }
    }

    /// Octets written so far.
    pub fn len(&self) -> usize {
        self.pos
    }

    /// Whether nothing was written yet.
    pub fn is_empty(&self) -> bool {
        self.pos == 0
    }

    /// Write an object header for a body of `body_len` octets (a multiple of 4) and
    /// return the zeroed body to fill.
    ///
    /// # Panics
    /// If the buffer is too short or the object longer than 65,535 octets.
    pub fn object(&mut self, class: u8, ctype: u8, body_len: usize) -> &mut [u8] {
        let len = OBJECT_HEADER_LEN + body_len;
        let len16 = u16::try_from(len).expect("RSVP object longer than 65535 octets");
        let out = &mut self.buf[self.pos..self.pos + len];
        out[0..2].copy_from_slice(&len16.to_be_bytes());
        out[2] = class;
        out[3] = ctype;
        out[4..].fill(0);
        self.pos += len;
        &mut out[4..]
    }

    /// Write an opaque object, its body zero-padded to a multiple of 4.
    pub fn opaque(&mut self, o: &Opaque) {
        let body = self.object(o.class, o.ctype, o.body.len().next_multiple_of(4));
        body[..o.body.len()].copy_from_slice(&o.body);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn disposition_by_top_bits() {
        assert_eq!(disposition(1), Disposition::Known);
        assert_eq!(disposition(2), Disposition::Reject);
        assert_eq!(disposition(15), Disposition::Known);
        assert_eq!(disposition(16), Disposition::Reject);
        assert_eq!(disposition(0x7f), Disposition::Reject);
        assert_eq!(disposition(0x80), Disposition::Ignore);
        assert_eq!(disposition(0xbf), Disposition::Ignore);
        assert_eq!(disposition(0xc0), Disposition::Forward);
        assert_eq!(disposition(0xff), Disposition::Forward);
        for c in [0, 4, 7] {
            assert_eq!(disposition(c), Disposition::Skip);
        }
    }

    #[test]
    fn walk_objects_and_refuse_bad_lengths() {
        let data = [0, 8, 5, 1, 0, 0, 0x75, 0x30, 0, 4, 0xc1, 9];
        let got: Vec<_> = objects(&data).collect::<Result<_, _>>().unwrap();
        assert_eq!(got.len(), 2);
        assert_eq!(
            (got[0].class, got[0].ctype, got[0].body),
            (5, 1, &[0, 0, 0x75, 0x30][..])
        );
        assert_eq!(
            (got[1].class, got[1].ctype, got[1].body.len()),
            (0xc1, 9, 0)
        );

        let short = [0, 2, 5, 1];
        let r: Vec<_> = objects(&short).collect();
        assert_eq!(
            r,
            vec![Err(ParseError::BadObjectLength { class: 5, len: 2 })]
        );
        let odd = [0, 6, 5, 1, 0, 0, 0, 0];
        assert_eq!(
            objects(&odd).next(),
            Some(Err(ParseError::BadObjectLength { class: 5, len: 6 }))
        );
        let past = [0, 12, 5, 1, 0, 0, 0, 0];
        let r: Vec<_> = objects(&past).collect();
        assert_eq!(r, vec![Err(ParseError::Truncated)]);
        let tail = [0, 4, 5, 1, 0, 0];
        let r: Vec<_> = objects(&tail).collect();
        assert_eq!(r.len(), 2);
        assert_eq!(r[1], Err(ParseError::BadLength));
    }

    #[test]
    fn writer_writes_headers_and_pads_opaque() {
        let mut buf = [0xaau8; 16];
        let mut w = Writer::new(&mut buf);
        w.object(5, 1, 4).copy_from_slice(&[1, 2, 3, 4]);
        let o = Opaque {
            class: 0xc0,
            ctype: 2,
            body: vec![9, 9],
        };
        assert_eq!(o.buffer_len(), 8);
        w.opaque(&o);
        assert_eq!(w.len(), 16);
        assert_eq!(buf, [0, 8, 5, 1, 1, 2, 3, 4, 0, 8, 0xc0, 2, 9, 9, 0, 0]);
    }
}
