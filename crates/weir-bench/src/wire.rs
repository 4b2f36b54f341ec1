//! Minimal HTTP/1.1 framing, for the raw servers and the load generator: where a head ends and
//! how long the body after it is. Nothing else is parsed.
//!
//! These functions are deliberately not an HTTP implementation. The raw responder uses them to
//! find request boundaries, which is all the seed's "raw server" does; the client uses them to
//! find response boundaries. They never allocate.

use memchr::memmem;
use std::sync::LazyLock;

static HEAD_END: LazyLock<memmem::Finder<'static>> =
    LazyLock::new(|| memmem::Finder::new(b"\r\n\r\n"));

/// Length of the head at the start of `buf` (through its blank line), if it is complete.
pub fn head_len(buf: &[u8]) -> Option<usize> {
    HEAD_END.find(buf).map(|i| i + 4)
}

/// The value of the first header named `name` (lowercase ASCII) in `head`, matched
/// case-insensitively at the start of a line, with surrounding whitespace trimmed.
pub fn header<'h>(head: &'h [u8], name: &[u8]) -> Option<&'h [u8]> {
    let mut rest = head;
    // Skip the start line, then look at each header line.
    while let Some(nl) = memchr::memchr(b'\n', rest) {
        rest = &rest[nl + 1..];
        if rest.len() > name.len()
            && rest[name.len()] == b':'
            && rest[..name.len()].eq_ignore_ascii_case(name)
        {
            let value = &rest[name.len() + 1..];
            let end = memchr::memchr(b'\r', value).unwrap_or(value.len());
            return Some(value[..end].trim_ascii());
        }
    }
    None
}

/// `Content-Length` of `head`, if present and a number.
pub fn content_length(head: &[u8]) -> Option<u64> {
    std::str::from_utf8(header(head, b"content-length")?)
        .ok()?
        .parse()
        .ok()
}

/// Whether `head` declares `Transfer-Encoding: chunked`.
pub fn is_chunked(head: &[u8]) -> bool {
    header(head, b"transfer-encoding").is_some_and(|v| v.eq_ignore_ascii_case(b"chunked"))
}

/// Length of the chunked body at the start of `buf`, through its last chunk and (empty or not)
/// trailer section, if it is complete. `Err(())` if the framing is malformed.
pub fn chunked_len(buf: &[u8]) -> Result<Option<usize>, ()> {
    let mut pos = 0;
    loop {
        let Some(nl) = memchr::memchr(b'\n', &buf[pos..]) else {
            return Ok(None);
        };
        let line = &buf[pos..pos + nl];
        let digits = line
            .split(|&b| b == b';' || b == b'\r')
            .next()
            .unwrap_or(b"");
        let size = std::str::from_utf8(digits.trim_ascii())
            .ok()
            .and_then(|s| usize::from_str_radix(s, 16).ok())
            .ok_or(())?;
        pos += nl + 1;
        if size == 0 {
            // Trailers, then the blank line.
            return Ok(if buf[pos..].starts_with(b"\r\n") {
                Some(pos + 2)
            } else {
                head_len(&buf[pos..]).map(|n| pos + n)
            });
        }
        if buf.len() < pos + size + 2 {
            return Ok(None);
        }
        pos += size + 2;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_heads_and_lengths() {
        let req = b"POST /upload HTTP/1.1\r\nHost: x\r\nContent-length:  42 \r\n\r\nbody";
        let n = head_len(req).unwrap();
        assert_eq!(&req[n..], b"body");
        assert_eq!(content_length(&req[..n]), Some(42));
        assert!(!is_chunked(&req[..n]));
        assert_eq!(head_len(b"GET / HTTP/1.1\r\n"), None);
    }

    #[test]
    fn walks_chunked_bodies() {
        assert_eq!(chunked_len(b"5\r\nhello\r\n0\r\n\r\nNEXT"), Ok(Some(15)));
        assert_eq!(
            chunked_len(b"5;x=y\r\nhello\r\n0\r\nT: v\r\n\r\n"),
            Ok(Some(25))
        );
        assert_eq!(chunked_len(b"5\r\nhel"), Ok(None));
        assert_eq!(chunked_len(b"zz\r\n"), Err(()));
    }
}
