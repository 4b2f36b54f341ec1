//! Finding response boundaries: the status code and where the response ends. Nothing else.

use crate::wire;

/// One complete response at the start of a buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Parsed {
    /// The status code.
    pub status: u16,
    /// Length of the head.
    pub head_len: usize,
    /// Length of the whole response, head and body.
    pub len: usize,
}

/// A response the client cannot frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Malformed;

/// Parses the response at the start of `buf`: `Ok(None)` until it is complete.
/// Bodies are framed by `Content-Length` or chunked encoding; `1xx`, `204` and `304` have none.
pub fn parse(buf: &[u8]) -> Result<Option<Parsed>, Malformed> {
    let Some(head_len) = wire::head_len(buf) else {
        return Ok(None);
    };
    let head = &buf[..head_len];
    let status = head
        .get(9..12)
        .and_then(|s| std::str::from_utf8(s).ok())
        .and_then(|s| s.parse::<u16>().ok())
        .filter(|_| head.starts_with(b"HTTP/1."))
        .ok_or(Malformed)?;
    let body_len = if (100..200).contains(&status) || status == 204 || status == 304 {
        0
    } else if let Some(n) = wire::content_length(head) {
        n as usize
    } else if wire::is_chunked(head) {
        match wire::chunked_len(&buf[head_len..]) {
            Ok(Some(n)) => n,
            Ok(None) => return Ok(None),
            Err(()) => return Err(Malformed),
        }
    } else {
        return Err(Malformed); // close-delimited: not something a keep-alive client can use
    };
    let len = head_len + body_len;
    Ok((buf.len() >= len).then_some(Parsed {
        status,
        head_len,
        len,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_length_and_chunked() {
        let r = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nhiHTTP/1.1";
        assert_eq!(
            parse(r),
            Ok(Some(Parsed {
                status: 200,
                head_len: 38,
                len: 40
            }))
        );
        assert_eq!(parse(&r[..39]), Ok(None));
        let c = b"HTTP/1.1 404 Not Found\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nhi\r\n0\r\n\r\n";
        assert_eq!(parse(c).unwrap().unwrap().len, c.len());
        assert_eq!(parse(b"HTTP/1.1 200 OK\r\n\r\n"), Err(Malformed));
    }
}
