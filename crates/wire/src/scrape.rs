//! The HTTP/1.x request a metrics scraper sends (RFC 9112 §3): its request line, read
//! from the bytes up to the blank line that ends the head. Only what a `/metrics`
//! endpoint needs: the method and the path; headers are skipped, a body never read.

use thiserror::Error;

/// The longest head a scraper's request may have: Prometheus sends about 300 bytes.
pub const MAX_HEAD_LEN: usize = 8192;

/// A request's line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Request<'a> {
    /// `GET`, `HEAD`, …
    pub method: &'a str,
    /// The request target's path, its query left out.
    pub path: &'a str,
}

/// Why bytes are not a request yet, or never will be.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Error)]
pub enum Error {
    /// The head has not ended yet: read more.
    #[error("the request's head has not ended")]
    Incomplete,
    /// Longer than [`MAX_HEAD_LEN`] without ending.
    #[error("the request's head is longer than {MAX_HEAD_LEN} bytes")]
    TooLong,
    /// Not `METHOD SP TARGET SP HTTP/1.x`.
    #[error("not an HTTP/1 request line")]
    Malformed,
}

/// The request whose head `buf` starts with (ended by an empty line, `\r\n` or bare
/// `\n` line ends as RFC 9112 §2.2 allows).
pub fn parse(buf: &[u8]) -> Result<Request<'_>, Error> {
    let head_end =
        (0..buf.len()).find(|&i| buf[i..].starts_with(b"\n\r\n") || buf[i..].starts_with(b"\n\n"));
    if head_end.is_none() {
        return Err(if buf.len() > MAX_HEAD_LEN {
            Error::TooLong
        } else {
            Error::Incomplete
        });
    }
    let line_end = buf
        .iter()
        .position(|&b| b == b'\n')
        .ok_or(Error::Malformed)?;
    let line = std::str::from_utf8(&buf[..line_end]).map_err(|_| Error::Malformed)?;
    let line = line.strip_suffix('\r').unwrap_or(line);
    let mut parts = line.split(' ');
    let (Some(method), Some(target), Some(version), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(Error::Malformed);
    };
    let token = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_alphabetic());
    if !token(method) || !target.starts_with('/') || !version.starts_with("HTTP/1.") {
        return Err(Error::Malformed);
    }
    let path = target.split('?').next().unwrap_or(target);
    Ok(Request { method, path })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_prometheus_scrape_is_a_get_of_its_path() {
        let req =
            b"GET /metrics?x=1 HTTP/1.1\r\nHost: [2001:2::1]:9464\r\nAccept: text/plain\r\n\r\n";
        assert_eq!(
            parse(req),
            Ok(Request {
                method: "GET",
                path: "/metrics"
            })
        );
        assert_eq!(parse(b"HEAD / HTTP/1.0\n\n").unwrap().method, "HEAD");
    }

    #[test]
    fn heads_that_have_not_ended_or_are_not_requests_say_so() {
        assert_eq!(
            parse(b"GET /metrics HTTP/1.1\r\nHost: x\r\n"),
            Err(Error::Incomplete)
        );
        assert_eq!(parse(&[b'a'; MAX_HEAD_LEN + 1]), Err(Error::TooLong));
        for bad in [
            &b"GET /metrics\r\n\r\n"[..],
            b"GET metrics HTTP/1.1\r\n\r\n",
            b"G\xffT / HTTP/1.1\r\n\r\n",
            b"GET / HTTP/2\r\n\r\n",
            b"GET  / HTTP/1.1\r\n\r\n",
            b"\n\n",
        ] {
            assert_eq!(parse(bad), Err(Error::Malformed), "{bad:?}");
        }
    }
}
