//! The request head, protocol-neutral: method, target, version, header fields and body framing,
//! stored in one reused byte buffer.
//!
//! HTTP/1.1's parser fills it from the bytes received (`parse.rs`); other protocols (HTTP/2)
//! build it from fields already decoded and validated ([`RequestHead::set_request_line`],
//! [`RequestHead::push_header`], [`RequestHead::set_framing`]): nothing is re-encoded as
//! HTTP/1.1 text, and a body of unknown length is [`Framing::Unknown`], not chunked.
//! [`RequestHead::expect_continue`] means the same for both; [`RequestHead::keep_alive`] is
//! HTTP/1.x's connection rule (always `true` for a built head: an HTTP/2 stream does not own its
//! connection).
//!
//! A connection owns one `RequestHead` for its whole life. Each request overwrites it: the head's
//! bytes are copied into `raw` (a few hundred bytes, once, so that the read buffer can move on to
//! the body and to pipelined requests) and every name, value and the target are byte ranges into
//! `raw`. After the first few requests `raw` and `headers` have the capacity they need, and filling
//! the head allocates nothing.
//!
//! The target is also kept apart, as a reused `String` (a copy of a few bytes per request): it is
//! read several times per request (routing, the metrics' path check, the log) and a `&str` taken
//! from `raw` would check its UTF-8 again on every read, which cost more than the copy; this crate
//! has no `unsafe` to skip that check.
//!
//! Invariants: every range lies inside `raw`; names are RFC 9110 tokens (ASCII); values contain
//! no CR, LF or NUL; `target` is visible ASCII.
use crate::framing::Framing;
use http::{Method, Version};
use std::ops::Range;

/// A byte range into [`RequestHead`]'s buffer. `u32` keeps a header entry at 16 bytes; heads are
/// bounded far below 4 GiB by [`crate::Limits::max_head`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Span {
    start: u32,
    end: u32,
}

impl Span {
    pub(crate) fn new(range: Range<usize>) -> Self {
        Self {
            start: range.start as u32,
            end: range.end as u32,
        }
    }

    fn range(self) -> Range<usize> {
        self.start as usize..self.end as usize
    }
}

#[derive(Clone, Copy, Debug)]
struct HeaderSpan {
    name: Span,
    value: Span,
}

/// A parsed request head, reused from request to request on a connection.
#[derive(Debug)]
pub struct RequestHead {
    raw: Vec<u8>,
    method: Method,
    version: Version,
    /// The request target (see the module doc for why it is not a span of `raw`).
    target: String,
    headers: Vec<HeaderSpan>,
    pub(crate) framing: Framing,
    pub(crate) keep_alive: bool,
    pub(crate) expect_continue: bool,
}

impl Default for RequestHead {
    fn default() -> Self {
        Self::new()
    }
}

impl RequestHead {
    /// An empty head (`GET` with no target), ready to be filled by the parser.
    pub fn new() -> Self {
        Self {
            raw: Vec::new(),
            method: Method::GET,
            version: Version::HTTP_11,
            target: String::new(),
            headers: Vec::new(),
            framing: Framing::Length(0),
            keep_alive: true,
            expect_continue: false,
        }
    }

    /// Empties the head, keeping its buffers' capacity.
    pub fn clear(&mut self) {
        self.raw.clear();
        self.headers.clear();
        self.method = Method::GET;
        self.version = Version::HTTP_11;
        self.target.clear();
        self.framing = Framing::Length(0);
        self.keep_alive = true;
        self.expect_continue = false;
    }

    /// The request method.
    pub fn method(&self) -> &Method {
        &self.method
    }

    /// The protocol version of the request.
    pub fn version(&self) -> Version {
        self.version
    }

    /// The request target exactly as sent: `/path?query` (origin form), an absolute URI, an
    /// authority (`CONNECT`) or `*` (`OPTIONS`).
    pub fn target(&self) -> &str {
        &self.target
    }

    /// The target's bytes (ASCII, as [`RequestHead::target`]), without the UTF-8 check a `&str`
    /// costs: for callers that hand the bytes on (the tower path's `http::Uri`).
    pub fn target_bytes(&self) -> &[u8] {
        self.target.as_bytes()
    }

    /// The path of the target, without the query, still percent-encoded. For an absolute-form
    /// target it is the path part of the URI (`/` when the URI has none).
    pub fn path(&self) -> &str {
        let target = self.target();
        // Origin form (almost every request): the path is everything before `?`.
        if target.starts_with('/') {
            return match memchr::memchr(b'?', target.as_bytes()) {
                Some(q) => &target[..q],
                None => target,
            };
        }
        let path_and_query = match target.find("://") {
            Some(scheme_end) => {
                let rest = &target[scheme_end + 3..];
                match rest.find(['/', '?']) {
                    Some(i) => &rest[i..],
                    None => "/",
                }
            }
            None => target,
        };
        let path = path_and_query.split('?').next().unwrap_or("");
        if path.is_empty() { "/" } else { path }
    }

    /// The query string after `?`, if there is one.
    pub fn query(&self) -> Option<&str> {
        self.target().split_once('?').map(|(_, query)| query)
    }

    /// The first value of header `name` (case-insensitive), as raw bytes.
    pub fn header(&self, name: &str) -> Option<&[u8]> {
        self.headers
            .iter()
            .find(|h| self.raw[h.name.range()].eq_ignore_ascii_case(name.as_bytes()))
            .map(|h| &self.raw[h.value.range()])
    }

    /// The first value of header `name` (case-insensitive), if it is valid UTF-8.
    pub fn header_str(&self, name: &str) -> Option<&str> {
        self.header(name).and_then(|v| std::str::from_utf8(v).ok())
    }

    /// Every header field in the order received, names as sent (not lowercased).
    pub fn headers(&self) -> impl Iterator<Item = (&str, &[u8])> + '_ {
        self.headers
            .iter()
            .map(|h| (self.str_at(h.name), &self.raw[h.value.range()]))
    }

    /// Every header field in the order received, as bytes: [`RequestHead::headers`] without
    /// the UTF-8 check of each name (names are tokens, checked when parsed or built).
    pub fn header_bytes(&self) -> impl Iterator<Item = (&[u8], &[u8])> + '_ {
        self.headers
            .iter()
            .map(|h| (&self.raw[h.name.range()], &self.raw[h.value.range()]))
    }

    /// Every value of header `name` (case-insensitive), in order.
    pub fn header_all<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a [u8]> + 'a {
        self.headers
            .iter()
            .filter(move |h| self.raw[h.name.range()].eq_ignore_ascii_case(name.as_bytes()))
            .map(|h| &self.raw[h.value.range()])
    }

    /// How many header fields the request has.
    pub fn header_count(&self) -> usize {
        self.headers.len()
    }

    /// How the body is delimited.
    pub fn framing(&self) -> Framing {
        self.framing
    }

    /// The declared body length, if the body is delimited by `Content-Length`.
    pub fn content_length(&self) -> Option<u64> {
        match self.framing {
            Framing::Length(n) => Some(n),
            Framing::Chunked | Framing::Unknown => None,
        }
    }

    /// Whether the request allows the connection to stay open after the response
    /// (HTTP/1.1 without `Connection: close`, or HTTP/1.0 with `Connection: keep-alive`).
    pub fn keep_alive(&self) -> bool {
        self.keep_alive
    }

    /// Whether the client sent `Expect: 100-continue` (ignored for HTTP/1.0, as RFC 9110
    /// §10.1.1 requires), whatever the protocol.
    pub fn expect_continue(&self) -> bool {
        self.expect_continue
    }

    fn str_at(&self, span: Span) -> &str {
        // Names and targets were checked to be ASCII when parsed (or built), so this cannot fail;
        // an empty string is the harmless answer if that invariant were ever broken.
        std::str::from_utf8(&self.raw[span.range()]).unwrap_or("")
    }

    // ---- filling (parser and protocol adapters) ----

    /// Starts a new head from `raw` bytes (for HTTP/1.1: the whole head as received).
    pub(crate) fn reset_from(&mut self, raw: &[u8]) {
        self.clear();
        self.raw.extend_from_slice(raw);
    }

    pub(crate) fn set_line(&mut self, method: Method, target: &str, version: Version) {
        self.method = method;
        // COPY: the target's few bytes, once per request (module doc).
        self.target.clear();
        self.target.push_str(target);
        self.version = version;
    }

    pub(crate) fn push_header_span(&mut self, name: Span, value: Span) {
        self.headers.push(HeaderSpan { name, value });
    }

    /// Fills the head from already-validated parts, for protocols other than HTTP/1.1 (the
    /// HTTP/2 adapter): the head's buffer is reused, nothing is parsed.
    pub fn set_request_line(&mut self, method: Method, target: &str, version: Version) {
        self.clear();
        self.method = method;
        self.version = version;
        self.target.push_str(target);
    }

    /// Appends a header field after [`RequestHead::set_request_line`]. Names must be tokens and
    /// values free of CR, LF and NUL (the HTTP/2 layer checks this before calling). An
    /// `Expect: 100-continue` sets [`RequestHead::expect_continue`], as the parser does.
    pub fn push_header(&mut self, name: &str, value: &[u8]) {
        if name.eq_ignore_ascii_case("expect") && is_100_continue(value) {
            self.expect_continue = true;
        }
        let name_start = self.raw.len();
        self.raw.extend_from_slice(name.as_bytes());
        let value_start = self.raw.len();
        self.raw.extend_from_slice(value);
        self.headers.push(HeaderSpan {
            name: Span::new(name_start..value_start),
            value: Span::new(value_start..self.raw.len()),
        });
    }

    /// Sets the body framing of a head built with [`RequestHead::set_request_line`].
    pub fn set_framing(&mut self, framing: Framing) {
        self.framing = framing;
    }
}

/// Whether an `Expect` value is `100-continue` (RFC 9110 §10.1.1; case-insensitive): the one
/// expectation a server knows.
pub(crate) fn is_100_continue(value: &[u8]) -> bool {
    value.eq_ignore_ascii_case(b"100-continue")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn built_head_answers_queries() {
        let mut head = RequestHead::new();
        head.set_request_line(Method::PUT, "/files/a.txt?x=1", Version::HTTP_2);
        head.push_header("content-type", b"text/plain");
        head.push_header("x-multi", b"1");
        head.push_header("X-Multi", b"2");
        assert_eq!(head.method(), Method::PUT);
        assert_eq!(head.path(), "/files/a.txt");
        assert_eq!(head.query(), Some("x=1"));
        assert_eq!(head.header("Content-Type"), Some(&b"text/plain"[..]));
        assert_eq!(
            head.header_all("x-multi").collect::<Vec<_>>(),
            vec![&b"1"[..], &b"2"[..]]
        );
        assert_eq!(head.header_count(), 3);
        assert_eq!(head.target_bytes(), b"/files/a.txt?x=1");
        assert_eq!(
            head.header_bytes().collect::<Vec<_>>(),
            vec![
                (&b"content-type"[..], &b"text/plain"[..]),
                (&b"x-multi"[..], &b"1"[..]),
                (&b"X-Multi"[..], &b"2"[..]),
            ]
        );
        head.clear();
        assert_eq!(head.header_count(), 0);
        assert_eq!(head.target(), "");
    }

    #[test]
    fn a_built_head_expects_continue_only_for_expect_100_continue() {
        for (name, value, expected) in [
            ("expect", &b"100-continue"[..], true),
            ("Expect", b"100-Continue", true),
            ("expect", b"200-ok", false),
            ("x-expect", b"100-continue", false),
            ("content-type", b"100-continue", false),
        ] {
            let mut head = RequestHead::new();
            head.set_request_line(Method::PUT, "/", Version::HTTP_2);
            head.push_header(name, value);
            assert_eq!(head.expect_continue(), expected, "{name}: {value:?}");
        }
    }

    #[test]
    fn path_of_absolute_form() {
        let mut head = RequestHead::new();
        head.set_request_line(Method::GET, "http://example.com:80/a/b?q", Version::HTTP_11);
        assert_eq!(head.path(), "/a/b");
        head.set_request_line(Method::GET, "http://example.com", Version::HTTP_11);
        assert_eq!(head.path(), "/");
        head.set_request_line(Method::GET, "http://example.com?x", Version::HTTP_11);
        assert_eq!(head.path(), "/");
        // The path starts right after `scheme://authority`, whatever the scheme's length.
        head.set_request_line(Method::GET, "h://x/y/z?q", Version::HTTP_11);
        assert_eq!(head.path(), "/y/z");
        head.set_request_line(Method::GET, "https://x/", Version::HTTP_11);
        assert_eq!(head.path(), "/");
    }

    // ---- Rules pinned by mutation testing (issue 19); see docs/RELIABILITY.md.

    /// The query is what follows the first `?`; a target without `?` has none, and one ending
    /// in `?` has an empty one (RFC 3986 §3.4: they are different URIs).
    #[test]
    fn query_is_after_the_first_question_mark() {
        let mut head = RequestHead::new();
        head.set_request_line(Method::GET, "/a", Version::HTTP_11);
        assert_eq!(head.query(), None);
        head.set_request_line(Method::GET, "/a?", Version::HTTP_11);
        assert_eq!(head.query(), Some(""));
        head.set_request_line(Method::GET, "/a?b=c?d", Version::HTTP_11);
        assert_eq!(head.query(), Some("b=c?d"));
        assert_eq!(head.path(), "/a");
    }

    /// `header_str` gives a value only when it is UTF-8; `header` gives the bytes regardless.
    #[test]
    fn header_str_only_for_utf8_values() {
        let mut head = RequestHead::new();
        head.set_request_line(Method::GET, "/", Version::HTTP_11);
        head.push_header("x-text", "é".as_bytes());
        head.push_header("x-bytes", b"a\xffb");
        assert_eq!(head.header_str("X-Text"), Some("é"));
        assert_eq!(head.header_str("x-bytes"), None);
        assert_eq!(head.header("x-bytes"), Some(&b"a\xffb"[..]));
        assert_eq!(head.header_str("x-missing"), None);
    }

    /// `content_length` is the declared length of a `Content-Length` body (zero when there is
    /// no body) and nothing for a chunked one, as set by the parser or an adapter.
    #[test]
    fn content_length_follows_framing() {
        let mut head = RequestHead::new();
        head.set_request_line(Method::PUT, "/f", Version::HTTP_2);
        assert_eq!(head.content_length(), Some(0));
        head.set_framing(Framing::Length(42));
        assert_eq!(head.framing(), Framing::Length(42));
        assert_eq!(head.content_length(), Some(42));
        head.set_framing(Framing::Chunked);
        assert_eq!(head.framing(), Framing::Chunked);
        assert_eq!(head.content_length(), None);
        head.set_framing(Framing::Unknown);
        assert_eq!(head.framing(), Framing::Unknown);
        assert_eq!(head.content_length(), None);
        // A new request line starts a new head: the framing of the previous one is gone.
        head.set_request_line(Method::GET, "/g", Version::HTTP_2);
        assert_eq!(head.content_length(), Some(0));
        assert_eq!(head.method(), Method::GET);
        assert_eq!(head.version(), Version::HTTP_2);
    }

    /// A body of unknown length (HTTP/2 without `content-length`) has no framing: a decoder for
    /// it takes every byte as payload and ends only with the stream.
    #[test]
    fn a_body_of_unknown_length_is_all_payload() {
        use crate::body::{BodyDecoder, Decoded};
        let mut decoder = BodyDecoder::new(Framing::Unknown, &crate::Limits::default());
        assert_eq!(
            decoder.decode(b"0\r\n\r\n"),
            Ok(Decoded {
                framing: 0,
                data: 5
            })
        );
        decoder.consume(5);
        assert!(!decoder.is_done());
    }
}
