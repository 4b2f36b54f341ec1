//! Response encoding: the head into a reused buffer, chunk framing without touching the data.
//!
//! Nothing here allocates once the caller's buffer has grown to its working size. Status lines of
//! common codes are static; numbers are formatted on the stack. Chunk framing is a small stack
//! value ([`ChunkHeader`]) written before the data, so a large chunk goes out with `writev`
//! (header, data, CRLF) and is never copied into a buffer.

use http::{Method, StatusCode, Version};

/// How a response body is delimited on the wire.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ResponseFraming {
    /// No body may follow: `1xx`, `204`, `304`, or any response to `HEAD` (whose head still
    /// describes the body a `GET` would get).
    NoBody,
    /// `Content-Length: n`.
    Length(u64),
    /// `Transfer-Encoding: chunked` (HTTP/1.1 clients).
    Chunked,
    /// The body ends when the connection closes (a streamed response to an HTTP/1.0 client,
    /// which does not understand chunked).
    CloseDelimited,
}

impl ResponseFraming {
    /// Chooses the framing of a response. `len` is the body length when known up front.
    pub fn choose(
        request_method: &Method,
        request_version: Version,
        status: StatusCode,
        len: Option<u64>,
    ) -> Self {
        if !status_has_body(status) {
            return Self::NoBody;
        }
        match (len, request_version) {
            _ if *request_method == Method::HEAD => Self::NoBody,
            (Some(n), _) => Self::Length(n),
            (None, Version::HTTP_10) => Self::CloseDelimited,
            (None, _) => Self::Chunked,
        }
    }
}

/// Whether a response with this status may carry content (RFC 9110 §6.4.1).
pub fn status_has_body(status: StatusCode) -> bool {
    !(status.is_informational()
        || status == StatusCode::NO_CONTENT
        || status == StatusCode::NOT_MODIFIED)
}

/// A response header the handler tried to set that cannot go on the wire.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InvalidHeader {
    /// The name is not a token.
    Name,
    /// The value contains CR, LF, NUL or another control character (response splitting).
    Value,
    /// A framing header (`Content-Length`, `Transfer-Encoding`): weir sets those itself from
    /// the body the handler sends, so they can never disagree with it.
    Framing,
}

/// Writes `HTTP/1.1 <code> <reason>\r\n`. weir answers HTTP/1.0 requests with an HTTP/1.1
/// status line too, as RFC 9110 §6.2 recommends.
pub fn status_line(buf: &mut Vec<u8>, status: StatusCode) {
    let line: &[u8] = match status.as_u16() {
        200 => b"HTTP/1.1 200 OK\r\n",
        201 => b"HTTP/1.1 201 Created\r\n",
        204 => b"HTTP/1.1 204 No Content\r\n",
        206 => b"HTTP/1.1 206 Partial Content\r\n",
        304 => b"HTTP/1.1 304 Not Modified\r\n",
        400 => b"HTTP/1.1 400 Bad Request\r\n",
        404 => b"HTTP/1.1 404 Not Found\r\n",
        _ => {
            buf.extend_from_slice(b"HTTP/1.1 ");
            buf.extend_from_slice(status.as_str().as_bytes());
            buf.push(b' ');
            buf.extend_from_slice(status.canonical_reason().unwrap_or("Unknown").as_bytes());
            buf.extend_from_slice(b"\r\n");
            return;
        }
    };
    buf.extend_from_slice(line);
}

/// Writes a header line after checking the name and value.
pub fn header(buf: &mut Vec<u8>, name: &[u8], value: &[u8]) -> Result<(), InvalidHeader> {
    if !crate::chars::is_token(name) {
        return Err(InvalidHeader::Name);
    }
    if name.eq_ignore_ascii_case(b"content-length")
        || name.eq_ignore_ascii_case(b"transfer-encoding")
    {
        return Err(InvalidHeader::Framing);
    }
    if !crate::chars::is_field_value(value) {
        return Err(InvalidHeader::Value);
    }
    header_unchecked(buf, name, value);
    Ok(())
}

/// Writes a header line weir itself composed (names and values known to be valid).
pub fn header_unchecked(buf: &mut Vec<u8>, name: &[u8], value: &[u8]) {
    buf.extend_from_slice(name);
    buf.extend_from_slice(b": ");
    buf.extend_from_slice(value);
    buf.extend_from_slice(b"\r\n");
}

/// Writes the framing header for `framing` (nothing for `NoBody`/`CloseDelimited`, except the
/// length of a `HEAD` response, which the caller passes as `head_len`).
pub fn framing_header(buf: &mut Vec<u8>, framing: ResponseFraming, head_len: Option<u64>) {
    match framing {
        ResponseFraming::Length(n) => content_length(buf, n),
        ResponseFraming::Chunked => buf.extend_from_slice(b"transfer-encoding: chunked\r\n"),
        ResponseFraming::NoBody => {
            if let Some(n) = head_len {
                content_length(buf, n);
            }
        }
        ResponseFraming::CloseDelimited => {}
    }
}

/// Writes `content-length: n\r\n`.
pub fn content_length(buf: &mut Vec<u8>, n: u64) {
    buf.extend_from_slice(b"content-length: ");
    write_decimal(buf, n);
    buf.extend_from_slice(b"\r\n");
}

/// Appends `n` in decimal without allocating.
pub fn write_decimal(buf: &mut Vec<u8>, mut n: u64) {
    let mut digits = [0u8; 20];
    let mut i = digits.len();
    loop {
        i -= 1;
        digits[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    buf.extend_from_slice(&digits[i..]);
}

/// Ends the head.
pub fn end_head(buf: &mut Vec<u8>) {
    buf.extend_from_slice(b"\r\n");
}

/// The size line of one chunk (`<hex>\r\n`), on the stack.
#[derive(Clone, Copy, Debug)]
pub struct ChunkHeader {
    bytes: [u8; 18],
    start: u8,
}

impl ChunkHeader {
    /// The size line for a chunk of `len` bytes (`len` > 0; a zero chunk ends the body).
    pub fn new(len: u64) -> Self {
        debug_assert!(len > 0, "a zero-size chunk is the last chunk");
        let mut bytes = [0u8; 18];
        bytes[16] = b'\r';
        bytes[17] = b'\n';
        let mut i = 16;
        let mut n = len;
        loop {
            i -= 1;
            bytes[i] = b"0123456789abcdef"[(n & 0xf) as usize];
            n >>= 4;
            if n == 0 {
                break;
            }
        }
        Self {
            bytes,
            start: i as u8,
        }
    }

    /// The bytes to write.
    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes[self.start as usize..]
    }
}

/// What follows the data of every chunk.
pub const CHUNK_END: &[u8] = b"\r\n";

/// The last chunk and an empty trailer section.
pub const LAST_CHUNK: &[u8] = b"0\r\n\r\n";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_lines() {
        let mut buf = Vec::new();
        status_line(&mut buf, StatusCode::OK);
        status_line(&mut buf, StatusCode::from_u16(103).unwrap());
        status_line(&mut buf, StatusCode::from_u16(599).unwrap());
        assert_eq!(
            buf,
            b"HTTP/1.1 200 OK\r\nHTTP/1.1 103 Early Hints\r\nHTTP/1.1 599 Unknown\r\n"
        );
    }

    #[test]
    fn headers_are_checked() {
        let mut buf = Vec::new();
        assert_eq!(header(&mut buf, b"x-a", b"ok\tvalue"), Ok(()));
        assert_eq!(header(&mut buf, b"x a", b"v"), Err(InvalidHeader::Name));
        assert_eq!(header(&mut buf, b"", b"v"), Err(InvalidHeader::Name));
        assert_eq!(
            header(&mut buf, b"x", b"a\r\nSet-Cookie: x"),
            Err(InvalidHeader::Value)
        );
        assert_eq!(header(&mut buf, b"x", b"a\0"), Err(InvalidHeader::Value));
        assert_eq!(
            header(&mut buf, b"Content-Length", b"1"),
            Err(InvalidHeader::Framing)
        );
        assert_eq!(buf, b"x-a: ok\tvalue\r\n");
    }

    #[test]
    fn decimal_and_chunk_headers() {
        let mut buf = Vec::new();
        for n in [0, 7, 10, 1234567890, u64::MAX] {
            buf.clear();
            write_decimal(&mut buf, n);
            assert_eq!(buf, n.to_string().as_bytes());
        }
        assert_eq!(ChunkHeader::new(1).as_bytes(), b"1\r\n");
        assert_eq!(ChunkHeader::new(0x1a2b).as_bytes(), b"1a2b\r\n");
        assert_eq!(
            ChunkHeader::new(u64::MAX).as_bytes(),
            b"ffffffffffffffff\r\n"
        );
    }

    #[test]
    fn framing_choice() {
        use ResponseFraming::*;
        let ok = StatusCode::OK;
        let (v10, v11) = (Version::HTTP_10, Version::HTTP_11);
        assert_eq!(
            ResponseFraming::choose(&Method::GET, v11, ok, Some(5)),
            Length(5)
        );
        assert_eq!(
            ResponseFraming::choose(&Method::GET, v11, ok, None),
            Chunked
        );
        assert_eq!(
            ResponseFraming::choose(&Method::GET, v10, ok, None),
            CloseDelimited
        );
        assert_eq!(
            ResponseFraming::choose(&Method::HEAD, v11, ok, Some(5)),
            NoBody
        );
        let no_content = StatusCode::NO_CONTENT;
        assert_eq!(
            ResponseFraming::choose(&Method::GET, v11, no_content, Some(0)),
            NoBody
        );
        let not_modified = StatusCode::NOT_MODIFIED;
        assert_eq!(
            ResponseFraming::choose(&Method::GET, v11, not_modified, None),
            NoBody
        );
    }
}
