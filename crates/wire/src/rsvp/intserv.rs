//! The Integrated Services data objects RSVP carries (RFC 2210 §3): SENDER_TSPEC
//! (class 12) and FLOWSPEC (class 9), both C-Type 2.
//!
//! ```text
//! SENDER_TSPEC (RFC 2210 §3.1)             FLOWSPEC, Controlled-Load (RFC 2210 §3.3, RFC 2211)
//! | 0 | reserved        |      7      |    | 0 | reserved        |      7      |
//! | 1 |0| reserved      |      6      |    | 5 |0| reserved      |      6      |
//! | 127 | 0             |      5      |    | 127 | 0             |      5      |
//! | Token Bucket Rate [r] (float)     |    | r | b | p (floats) | m | M (u32) |
//! | Token Bucket Size [b] (float)     |
//! | Peak Data Rate [p] (float)        |    FLOWSPEC, Guaranteed (RFC 2210 §3.3, RFC 2212)
//! | Minimum Policed Unit [m] (u32)    |    | 0 | reserved | 10 |  | 2 |0| reserved | 9 |
//! | Maximum Packet Size [M] (u32)     |    | 127 | 0 | 5 | r b p m M
//!                                          | 130 | 0 | 2 | Rate [R] (float) | Slack Term [S] (u32) |
//! ```
//!
//! Lengths in the headers count 32-bit words, not including the header word. Parse walks
//! the parameters and skips those it does not know; a missing token bucket (or Rspec for
//! Guaranteed), a length that disagrees with the object, a version other than 0, or a
//! NaN or negative number is [`ParseError::BadObject`]. A FLOWSPEC service other than 2
//! and 5 is [`ParseError::UnsupportedService`] (error code 21, value 2).

use super::object::class;
use super::ParseError;

/// Service number of the general parameters / sender Tspec.
pub const SERVICE_GENERAL: u8 = 1;
/// Service number of Guaranteed (RFC 2212).
pub const SERVICE_GUARANTEED: u8 = 2;
/// Service number of Controlled-Load (RFC 2211).
pub const SERVICE_CONTROLLED_LOAD: u8 = 5;
/// Parameter id of the token bucket Tspec.
pub const PARAM_TOKEN_BUCKET: u8 = 127;
/// Parameter id of the Guaranteed Rspec.
pub const PARAM_RSPEC: u8 = 130;
/// The C-Type of SENDER_TSPEC and FLOWSPEC.
pub const CTYPE: u8 = 2;

/// RFC 2210 token bucket parameter (param 127). Units in names; floats as on the wire
/// (IEEE single).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TokenBucket {
    /// r: token bucket rate, bytes per second.
    pub rate_bytes_per_s: f32,
    /// b: token bucket depth, bytes.
    pub depth_bytes: f32,
    /// p: peak rate, bytes per second; may be +inf (no peak).
    pub peak_bytes_per_s: f32,
    /// m: minimum policed unit, bytes.
    pub min_policed_bytes: u32,
    /// M: maximum packet size, bytes.
    pub max_packet_bytes: u32,
}

/// FLOWSPEC service: Controlled-Load (RFC 2211, service 5) or Guaranteed (RFC 2212,
/// service 2, Rspec param 130).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Service {
    /// Controlled-Load: the Tspec only.
    ControlledLoad,
    /// Guaranteed: the Tspec and the Rspec.
    Guaranteed {
        /// R: the reserved rate, bytes per second (≥ r).
        rate_bytes_per_s: f32,
        /// S: the slack term, microseconds.
        slack_us: u32,
    },
}

/// FLOWSPEC (class 9, C-Type 2): a service and its Tspec.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FlowSpec {
    /// Which service and its service-specific parameters.
    pub service: Service,
    /// The traffic the reservation is for.
    pub tspec: TokenBucket,
}

const TOKEN_BUCKET_WORDS: usize = 5;
const RSPEC_WORDS: usize = 2;

fn f32_at(b: &[u8], at: usize) -> f32 {
    f32::from_bits(u32_at(b, at))
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_be_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

fn put_u32(b: &mut [u8], at: usize, v: u32) {
    b[at..at + 4].copy_from_slice(&v.to_be_bytes());
}

/// A word header: id (8) | flags or reserved (8) | length in words (16).
fn put_header(b: &mut [u8], at: usize, id: u8, words: usize) {
    b[at] = id;
    b[at + 1] = 0;
    b[at + 2..at + 4].copy_from_slice(&(words as u16).to_be_bytes());
}

/// A float RFC 2210 allows: not NaN, not negative.
fn number(v: f32) -> Option<f32> {
    (!v.is_nan() && v >= 0.0).then_some(v)
}

impl TokenBucket {
    fn emit_param(&self, b: &mut [u8]) {
        put_header(b, 0, PARAM_TOKEN_BUCKET, TOKEN_BUCKET_WORDS);
        put_u32(b, 4, self.rate_bytes_per_s.to_bits());
        put_u32(b, 8, self.depth_bytes.to_bits());
        put_u32(b, 12, self.peak_bytes_per_s.to_bits());
        put_u32(b, 16, self.min_policed_bytes);
        put_u32(b, 20, self.max_packet_bytes);
    }

    fn parse_param(d: &[u8]) -> Option<Self> {
        (d.len() == TOKEN_BUCKET_WORDS * 4).then_some(())?;
        Some(Self {
            rate_bytes_per_s: number(f32_at(d, 0))?,
            depth_bytes: number(f32_at(d, 4))?,
            peak_bytes_per_s: number(f32_at(d, 8))?,
            min_policed_bytes: u32_at(d, 12),
            max_packet_bytes: u32_at(d, 16),
        })
    }

    /// Body length of a SENDER_TSPEC: 32.
    pub const TSPEC_BODY_LEN: usize = 8 + 4 + TOKEN_BUCKET_WORDS * 4;

    /// Write a SENDER_TSPEC body (service 1).
    pub fn emit_tspec_body(&self, b: &mut [u8]) {
        put_header(b, 0, 0, Self::TSPEC_BODY_LEN / 4 - 1);
        put_header(b, 4, SERVICE_GENERAL, Self::TSPEC_BODY_LEN / 4 - 2);
        self.emit_param(&mut b[8..]);
    }

    /// Read a SENDER_TSPEC body.
    pub fn parse_tspec_body(ctype: u8, body: &[u8]) -> Result<Self, ParseError> {
        let c = class::SENDER_TSPEC;
        if ctype != CTYPE {
            return Err(ParseError::UnknownCType { class: c, ctype });
        }
        let (service, params) = service_params(c, body)?;
        if service != SERVICE_GENERAL {
            return Err(ParseError::BadObject { class: c });
        }
        params.bucket.ok_or(ParseError::BadObject { class: c })
    }
}

impl FlowSpec {
    /// Body length: 32 for Controlled-Load, 44 for Guaranteed.
    pub fn body_len(&self) -> usize {
        match self.service {
            Service::ControlledLoad => 8 + 4 + TOKEN_BUCKET_WORDS * 4,
            Service::Guaranteed { .. } => 8 + 4 + TOKEN_BUCKET_WORDS * 4 + 4 + RSPEC_WORDS * 4,
        }
    }

    /// The service number: 5 or 2.
    pub fn service_number(&self) -> u8 {
        match self.service {
            Service::ControlledLoad => SERVICE_CONTROLLED_LOAD,
            Service::Guaranteed { .. } => SERVICE_GUARANTEED,
        }
    }

    /// Write the body.
    pub fn emit_body(&self, b: &mut [u8]) {
        let words = self.body_len() / 4;
        put_header(b, 0, 0, words - 1);
        put_header(b, 4, self.service_number(), words - 2);
        self.tspec.emit_param(&mut b[8..]);
        if let Service::Guaranteed {
            rate_bytes_per_s,
            slack_us,
        } = self.service
        {
            let at = 8 + 4 + TOKEN_BUCKET_WORDS * 4;
            put_header(b, at, PARAM_RSPEC, RSPEC_WORDS);
            put_u32(b, at + 4, rate_bytes_per_s.to_bits());
            put_u32(b, at + 8, slack_us);
        }
    }

    /// Read a body.
    pub fn parse_body(ctype: u8, body: &[u8]) -> Result<Self, ParseError> {
        let c = class::FLOWSPEC;
        if ctype != CTYPE {
            return Err(ParseError::UnknownCType { class: c, ctype });
        }
        let (service, params) = service_params(c, body)?;
        let tspec = params.bucket.ok_or(ParseError::BadObject { class: c })?;
        let service = match service {
            SERVICE_CONTROLLED_LOAD => Service::ControlledLoad,
            SERVICE_GUARANTEED => {
                let (rate_bytes_per_s, slack_us) =
                    params.rspec.ok_or(ParseError::BadObject { class: c })?;
                Service::Guaranteed {
                    rate_bytes_per_s,
                    slack_us,
                }
            }
            other => return Err(ParseError::UnsupportedService(other)),
        };
        Ok(Self { service, tspec })
    }

    /// A zero Controlled-Load flowspec: what a ResvTear's flow descriptor stands for when
    /// it omits the FLOWSPEC (RFC 2205 §3.1.6 lets it).
    pub const fn placeholder() -> Self {
        Self {
            service: Service::ControlledLoad,
            tspec: TokenBucket {
                rate_bytes_per_s: 0.0,
                depth_bytes: 0.0,
                peak_bytes_per_s: 0.0,
                min_policed_bytes: 0,
                max_packet_bytes: 0,
            },
        }
    }
}

#[derive(Default)]
struct Params {
    bucket: Option<TokenBucket>,
    rspec: Option<(f32, u32)>,
}

/// Check the message header and the one service header of an IntServ body and read its
/// parameters.
fn service_params(c: u8, body: &[u8]) -> Result<(u8, Params), ParseError> {
    let bad = ParseError::BadObject { class: c };
    if body.len() < 8 || body[0] >> 4 != 0 {
        return Err(bad);
    }
    let overall = usize::from(u16::from_be_bytes([body[2], body[3]]));
    if (overall + 1) * 4 != body.len() {
        return Err(bad);
    }
    let service = body[4];
    let service_words = usize::from(u16::from_be_bytes([body[6], body[7]]));
    if service_words + 2 != overall + 1 {
        return Err(bad);
    }
    let mut params = Params::default();
    let mut rest = &body[8..];
    while !rest.is_empty() {
        if rest.len() < 4 {
            return Err(bad);
        }
        let id = rest[0];
        let n = usize::from(u16::from_be_bytes([rest[2], rest[3]])) * 4;
        let data = rest.get(4..4 + n).ok_or(bad)?;
        match id {
            PARAM_TOKEN_BUCKET if params.bucket.is_none() => {
                params.bucket = Some(TokenBucket::parse_param(data).ok_or(bad)?);
            }
            PARAM_RSPEC if params.rspec.is_none() => {
                if data.len() != RSPEC_WORDS * 4 {
                    return Err(bad);
                }
                params.rspec = Some((number(f32_at(data, 0)).ok_or(bad)?, u32_at(data, 4)));
            }
            PARAM_TOKEN_BUCKET | PARAM_RSPEC => return Err(bad),
            _ => {}
        }
        rest = &rest[4 + n..];
    }
    Ok((service, params))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bucket() -> TokenBucket {
        TokenBucket {
            rate_bytes_per_s: 125_000.0,
            depth_bytes: 1500.0,
            peak_bytes_per_s: f32::INFINITY,
            min_policed_bytes: 64,
            max_packet_bytes: 1500,
        }
    }

    #[test]
    fn tspec_golden_bytes() {
        let mut b = [0u8; TokenBucket::TSPEC_BODY_LEN];
        bucket().emit_tspec_body(&mut b);
        #[rustfmt::skip]
        let want = [
            0, 0, 0, 7,  1, 0, 0, 6,  127, 0, 0, 5,
            0x47, 0xf4, 0x24, 0x00, // 125000.0
            0x44, 0xbb, 0x80, 0x00, // 1500.0
            0x7f, 0x80, 0x00, 0x00, // +inf
            0, 0, 0, 64,  0, 0, 0x05, 0xdc,
        ];
        assert_eq!(b, want);
        assert_eq!(TokenBucket::parse_tspec_body(2, &b), Ok(bucket()));
        assert_eq!(
            TokenBucket::parse_tspec_body(1, &b),
            Err(ParseError::UnknownCType {
                class: 12,
                ctype: 1
            })
        );
    }

    #[test]
    fn flowspecs_round_trip_and_guaranteed_layout() {
        let cl = FlowSpec {
            service: Service::ControlledLoad,
            tspec: bucket(),
        };
        let gs = FlowSpec {
            service: Service::Guaranteed {
                rate_bytes_per_s: 250_000.0,
                slack_us: 100,
            },
            tspec: bucket(),
        };
        for f in [cl, gs] {
            let mut b = vec![0u8; f.body_len()];
            f.emit_body(&mut b);
            assert_eq!(FlowSpec::parse_body(2, &b), Ok(f));
        }
        let mut b = vec![0u8; gs.body_len()];
        gs.emit_body(&mut b);
        assert_eq!(b.len(), 44);
        assert_eq!(&b[..8], &[0, 0, 0, 10, 2, 0, 0, 9]);
        assert_eq!(&b[32..36], &[130, 0, 0, 2]);
        assert_eq!(&b[40..], &[0, 0, 0, 100]);
        let mut c = vec![0u8; cl.body_len()];
        cl.emit_body(&mut c);
        assert_eq!(&c[..8], &[0, 0, 0, 7, 5, 0, 0, 6]);
    }

    #[test]
    fn bad_intserv_bodies_refused() {
        let cl = FlowSpec {
            service: Service::ControlledLoad,
            tspec: bucket(),
        };
        let mut b = vec![0u8; cl.body_len()];
        cl.emit_body(&mut b);
        let bad = Err(ParseError::BadObject { class: 9 });
        let mut v = b.clone();
        v[0] = 0x10; // version 1
        assert_eq!(FlowSpec::parse_body(2, &v), bad);
        let mut v = b.clone();
        v[3] = 8; // overall length
        assert_eq!(FlowSpec::parse_body(2, &v), bad);
        let mut v = b.clone();
        v[12..16].copy_from_slice(&f32::NAN.to_bits().to_be_bytes());
        assert_eq!(FlowSpec::parse_body(2, &v), bad);
        let mut v = b.clone();
        v[12..16].copy_from_slice(&(-1.0f32).to_bits().to_be_bytes());
        assert_eq!(FlowSpec::parse_body(2, &v), bad);
        let mut v = b.clone();
        v[4] = 2; // Guaranteed without an Rspec
        assert_eq!(FlowSpec::parse_body(2, &v), bad);
        let mut v = b.clone();
        v[4] = 9;
        assert_eq!(
            FlowSpec::parse_body(2, &v),
            Err(ParseError::UnsupportedService(9))
        );
        assert_eq!(
            ParseError::UnsupportedService(9).error_code(),
            Some((21, 2))
        );
        let mut v = b.clone();
        v[11] = 6; // parameter runs past the end
        assert_eq!(FlowSpec::parse_body(2, &v), bad);
        // an unknown parameter is skipped
        let mut v = b.clone();
        v[3] = 8;
        v[7] = 7;
        v.extend_from_slice(&[200, 0, 0, 0]);
        assert_eq!(FlowSpec::parse_body(2, &v), Ok(cl));
        for n in 0..b.len() {
            assert!(FlowSpec::parse_body(2, &b[..n]).is_err(), "prefix {n}");
        }
    }
}
