//! Request head parsing: line endings and limits checked by hand, syntax by `httparse`, then the
//! head copied into the pooled [`RequestHead`] and its framing decided.
//!
//! The parser is incremental: it remembers how far it has scanned, so feeding a head one byte at
//! a time costs O(n), not O(n²). Before `httparse` sees the bytes, the scan rejects what it would
//! let through: bare LF line endings (httparse accepts them, RFC 9112 §2.2 only allows it) and
//! bare CR. The scan also enforces the request-line and head limits as soon as they are crossed,
//! without waiting for the end of the head.

use crate::error::ProtoError;
use crate::framing::{FramingFields, trim_ows};
use crate::limits::Limits;
use crate::request::{RequestHead, Span};
use http::{Method, Version};
use std::mem::MaybeUninit;

/// Incremental request head parser. One per connection; call [`HeadParser::reset`] after each
/// head (the connection driver does it by creating the state afresh; it is two words).
#[derive(Debug, Default)]
pub struct HeadParser {
    /// Bytes of the buffer already scanned for line endings.
    scanned: usize,
    /// End of the request line (index of its LF), once seen.
    line_end: Option<usize>,
}

impl HeadParser {
    /// A parser at the start of a head.
    pub fn new() -> Self {
        Self::default()
    }

    /// Forgets the scan position: the next call starts a new head.
    pub fn reset(&mut self) {
        *self = Self::default();
    }

    /// Parses the head at the start of `buf`.
    ///
    /// `Ok(Some(n))`: `head` holds the request and the head (with any empty lines before it)
    /// took the first `n` bytes of `buf`; the body, if any, starts at `n`.
    /// `Ok(None)`: the head is incomplete; call again with the same bytes and more appended.
    /// `Err`: the request is malformed or over a limit; answer `err.status()` and close.
    pub fn parse(
        &mut self,
        buf: &[u8],
        limits: &Limits,
        head: &mut RequestHead,
    ) -> Result<Option<usize>, ProtoError> {
        // RFC 9112 §2.2: ignore empty lines before the request line. They count toward the head
        // limit, so a stream of CRLFs cannot keep the connection busy forever.
        let mut start = 0;
        while buf.len() >= start + 2 && buf[start] == b'\r' && buf[start + 1] == b'\n' {
            start += 2;
        }
        if start > limits.max_head {
            return Err(ProtoError::HeadTooLarge);
        }
        let Some(end) = self.scan(buf, start, limits)? else {
            return Ok(None);
        };
        self.reset();
        parse_complete_head(&buf[start..end], limits, head)?;
        Ok(Some(end))
    }

    /// Scans for the end of the head (`CRLF CRLF`), checking every line ending on the way.
    /// Returns the index just past the head.
    fn scan(
        &mut self,
        buf: &[u8],
        start: usize,
        limits: &Limits,
    ) -> Result<Option<usize>, ProtoError> {
        let from = self.scanned.max(start);
        // Limits are checked at the byte that crosses them, in the same pass as the line
        // endings, so the first violation in byte order decides the error, however the bytes
        // were split into reads (found by fuzzing: a bare CR past the request-line limit was a
        // 400 when it arrived in the same read, a 414 when it came later).
        let head_end = buf.len().min(start.saturating_add(limits.max_head));
        // Only CR and LF need a decision; `memchr2` jumps between them (SIMD), which shrank
        // this function's share of a pipelined plaintext profile compared with a byte loop.
        let mut i = from;
        while i < head_end {
            let next = memchr::memchr2(b'\r', b'\n', &buf[i..head_end]).map(|k| i + k);
            if self.line_end.is_none() {
                // Every byte up to (and including) the next line ending is still in the
                // request line: the first one at or past the limit decides.
                let last = next.unwrap_or(head_end - 1);
                if last - start >= limits.max_request_line {
                    return Err(ProtoError::RequestLineTooLong);
                }
            }
            let Some(mut at) = next else {
                break;
            };
            // A CR followed by its LF (every valid line ending) is taken as one stop, so a
            // head costs one search per line, not two. The LF is judged exactly as if the
            // next search had found it: its own request-line limit check, and only if it
            // lies before the head limit (else the next turn finds nothing and the head is
            // too large, as before).
            if buf[at] == b'\r' && at + 1 < head_end && buf[at + 1] == b'\n' {
                at += 1;
                if self.line_end.is_none() && at - start >= limits.max_request_line {
                    return Err(ProtoError::RequestLineTooLong);
                }
            }
            match buf[at] {
                b'\n' => {
                    if at == start || buf[at - 1] != b'\r' {
                        return Err(ProtoError::BareLineEnding);
                    }
                    if self.line_end.is_none() {
                        self.line_end = Some(at);
                    } else if at >= start + 3 && buf[at - 3..=at] == *b"\r\n\r\n" {
                        return Ok(Some(at + 1));
                    }
                }
                _ if at + 1 < buf.len() && buf[at + 1] != b'\n' => {
                    return Err(ProtoError::BareLineEnding);
                }
                _ => {}
            }
            i = at + 1;
        }
        if buf.len() > head_end {
            return Err(ProtoError::HeadTooLarge);
        }
        // A trailing CR is judged once its successor is known: rescan it next time.
        self.scanned = if buf.last() == Some(&b'\r') {
            buf.len() - 1
        } else {
            buf.len()
        };
        Ok(None)
    }
}

/// Parses a head known to be complete and free of bare line endings.
fn parse_complete_head(
    raw: &[u8],
    limits: &Limits,
    head: &mut RequestHead,
) -> Result<(), ProtoError> {
    let mut slots =
        [const { MaybeUninit::<httparse::Header<'_>>::uninit() }; Limits::HEADER_COUNT_CAP];
    let max_headers = limits.max_headers.min(Limits::HEADER_COUNT_CAP);
    let mut req = httparse::Request::new(&mut []);
    match req.parse_with_uninit_headers(raw, &mut slots[..max_headers]) {
        Ok(httparse::Status::Complete(_)) => {}
        // The scan found CRLF CRLF, so httparse can only stop early on a CRLF CRLF inside
        // something it does not accept as a head.
        Ok(httparse::Status::Partial) => return Err(ProtoError::InvalidRequestLine),
        Err(e) => return Err(map_httparse_error(e, raw)),
    }

    let base = raw.as_ptr() as usize;
    let span_of = |s: &[u8]| {
        let start = s.as_ptr() as usize - base;
        Span::new(start..start + s.len())
    };

    let (Some(method), Some(target), Some(minor)) = (req.method, req.path, req.version) else {
        return Err(ProtoError::InvalidRequestLine);
    };
    let method =
        Method::from_bytes(method.as_bytes()).map_err(|_| ProtoError::InvalidRequestLine)?;
    let version = if minor == 0 {
        Version::HTTP_10
    } else {
        Version::HTTP_11
    };
    check_target(&method, target)?;

    head.reset_from(raw);
    head.set_line(method, target, version);

    let mut framing = FramingFields::default();
    let mut hosts = 0u32;
    let mut close = false;
    let mut keep_alive_token = false;
    let mut expect_continue = false;
    for h in req.headers.iter() {
        let value = trim_ows(h.value);
        head.push_header_span(span_of(h.name.as_bytes()), span_of(value));
        let name = h.name.as_bytes();
        if name.eq_ignore_ascii_case(b"content-length") {
            framing.content_length(value)?;
        } else if name.eq_ignore_ascii_case(b"transfer-encoding") {
            framing.transfer_encoding(value)?;
        } else if name.eq_ignore_ascii_case(b"host") {
            hosts += 1;
            if !is_valid_host(value) {
                return Err(ProtoError::InvalidHost);
            }
        } else if name.eq_ignore_ascii_case(b"connection") {
            for token in value.split(|&b| b == b',').map(trim_ows) {
                close |= token.eq_ignore_ascii_case(b"close");
                keep_alive_token |= token.eq_ignore_ascii_case(b"keep-alive");
            }
        } else if name.eq_ignore_ascii_case(b"expect") {
            if limits.refuses_expectation(value) {
                return Err(ProtoError::UnsupportedExpectation);
            }
            expect_continue |= crate::request::is_100_continue(value);
        }
    }
    // RFC 9112 §3.2: exactly one Host in HTTP/1.1; at most one in HTTP/1.0.
    if hosts > 1 || (hosts == 0 && version == Version::HTTP_11) {
        return Err(ProtoError::InvalidHost);
    }
    head.framing = framing.decide(version)?;
    head.keep_alive = match version {
        Version::HTTP_10 => keep_alive_token && !close,
        _ => !close,
    };
    // RFC 9110 §10.1.1: a server MUST ignore 100-continue in an HTTP/1.0 request.
    head.expect_continue = expect_continue && version == Version::HTTP_11;
    Ok(())
}

fn map_httparse_error(e: httparse::Error, raw: &[u8]) -> ProtoError {
    match e {
        httparse::Error::HeaderName => ProtoError::InvalidHeaderName,
        httparse::Error::HeaderValue => ProtoError::InvalidHeaderValue,
        httparse::Error::TooManyHeaders => ProtoError::TooManyHeaders,
        httparse::Error::NewLine => ProtoError::BareLineEnding,
        httparse::Error::Version => version_error(raw),
        httparse::Error::Status | httparse::Error::Token => ProtoError::InvalidRequestLine,
    }
}

/// A syntactically valid `HTTP/x.y` that is not 1.0 or 1.1 deserves 505; a version that is not
/// `HTTP/…` in any case is not HTTP/1 at all (`NotHttp`: an invalid HTTP/2 preface on the
/// cleartext port, closed unanswered); anything else 400. Only in a well-formed line
/// (`method SP target SP version`): `GET /a b HTTP/1.1` fails in httparse as a version error
/// too, but it is a bad request line, not a version weir lacks.
fn version_error(raw: &[u8]) -> ProtoError {
    let line = raw.split(|&b| b == b'\r').next().unwrap_or(raw);
    if line.iter().filter(|&&b| b == b' ').count() != 2 {
        return ProtoError::InvalidRequestLine;
    }
    let version = line.rsplit(|&b| b == b' ').next().unwrap_or(line);
    match version {
        [b'H', b'T', b'T', b'P', b'/', major, b'.', minor]
            if major.is_ascii_digit() && minor.is_ascii_digit() =>
        {
            ProtoError::UnsupportedVersion
        }
        _ if !version
            .get(..5)
            .is_some_and(|name| name.eq_ignore_ascii_case(b"HTTP/")) =>
        {
            ProtoError::NotHttp
        }
        _ => ProtoError::InvalidRequestLine,
    }
}

/// RFC 9112 §3.2: origin-form for most methods, absolute-form for any, authority-form only for
/// CONNECT, asterisk-form only for OPTIONS.
fn check_target(method: &Method, target: &str) -> Result<(), ProtoError> {
    let ok = if target.starts_with('/') {
        *method != Method::CONNECT
    } else if target == "*" {
        *method == Method::OPTIONS
    } else if *method == Method::CONNECT {
        is_valid_host(target.as_bytes()) && target.contains(':')
    } else {
        is_absolute_uri(target)
    };
    // httparse admits bytes >= 0x80 in the target; RFC 3986 does not. A fragment is never part
    // of a request-target (RFC 9112 §3.2): `/public#/../admin` must not reach a router that
    // strips it differently from a proxy in front.
    if ok && target.is_ascii() && !target.contains('#') {
        Ok(())
    } else {
        Err(ProtoError::InvalidTarget)
    }
}

/// `scheme "://" authority path-abempty [ "?" query ]` (RFC 3986 §3) with a non-empty
/// authority: RFC 9110 §4.2.1 makes a recipient reject an `http` URI with an empty host
/// (`http:///x`), and weir serves no scheme whose URIs may lack one.
fn is_absolute_uri(target: &str) -> bool {
    let Some((scheme, rest)) = target.split_once("://") else {
        return false;
    };
    let mut scheme_bytes = scheme.bytes();
    let authority = rest.split(['/', '?']).next().unwrap_or("");
    scheme_bytes.next().is_some_and(|b| b.is_ascii_alphabetic())
        && scheme_bytes.all(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'-' | b'.'))
        && !authority.is_empty()
}

/// `Host` = uri-host [ ":" port ] (RFC 9110 §7.2): an IP-literal in brackets, or a reg-name /
/// IPv4 address, then at most one `:` and a decimal port. Empty is allowed (RFC 9112 §3.2, for
/// targets without an authority). A `Host` that fails this is a MUST-400 (RFC 9112 §3.2).
fn is_valid_host(value: &[u8]) -> bool {
    let (host, port) = if let Some(literal) = value.strip_prefix(b"[") {
        // IP-literal (RFC 3986 §3.2.2): IPv6 or IPvFuture, no brackets inside.
        let Some(close) = literal.iter().position(|&b| b == b']') else {
            return false;
        };
        let inside = &literal[..close];
        if inside.is_empty()
            || !inside
                .iter()
                .all(|&b| crate::chars::is_reg_name_byte(b) || b == b':')
        {
            return false;
        }
        (&b""[..], &literal[close + 1..])
    } else {
        // reg-name or IPv4 address up to the first `:` (which is not a reg-name byte), checked
        // in the same pass that finds it.
        let end = value
            .iter()
            .position(|&b| !crate::chars::is_reg_name_byte(b))
            .unwrap_or(value.len());
        (&b""[..], &value[end..])
    };
    let port_ok = match port {
        [] => true,
        [b':', digits @ ..] => digits.iter().all(u8::is_ascii_digit),
        _ => false,
    };
    port_ok && host.iter().all(|&b| crate::chars::is_reg_name_byte(b))
}

#[cfg(test)]
mod tests;
