//! [`Request`]: the request head a handler reads, and [`Framing`], how its body is delimited.
//!
//! weir's own types around the protocol core's head (`weir_proto::RequestHead`), so that the
//! library's public surface is weir's: the core can change its representation (one reused buffer,
//! names and values as byte ranges into it) without changing what handlers see. A `Request` is
//! the head itself, not a copy: a connection (or an HTTP/2 stream) owns one, its parser fills it,
//! and each method is a call on the head.

use http::{Method, Version};
use weir_proto::RequestHead;

/// A request head: method, target, version, header fields and body framing, protocol-neutral
/// (an HTTP/2 request is given as HTTP/1.1's would be: `:path` as the target, `:authority` as
/// `host`). Borrowed from the [`Exchange`](crate::Exchange) for the length of the request.
#[derive(Debug, Default)]
pub struct Request {
    head: RequestHead,
}

/// How the body of a request is delimited.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Framing {
    /// Exactly this many bytes follow the head (0: no body).
    Length(u64),
    /// HTTP/1.1's chunked transfer coding: chunks until the zero-size chunk, then trailers.
    Chunked,
    /// Delimited by the end of its stream, its length unknown until then: an HTTP/2 request
    /// without `content-length`. Never an HTTP/1.1 request (a request is never delimited by
    /// closing the connection).
    Unknown,
}

impl From<weir_proto::Framing> for Framing {
    fn from(framing: weir_proto::Framing) -> Self {
        match framing {
            weir_proto::Framing::Length(n) => Self::Length(n),
            weir_proto::Framing::Chunked => Self::Chunked,
            weir_proto::Framing::Unknown => Self::Unknown,
        }
    }
}

impl Request {
    /// An empty head, for a parser or the HTTP/2 driver to fill.
    pub(crate) fn new() -> Self {
        Self::default()
    }

    /// The protocol core's head (the drivers' and body decoders' view).
    pub(crate) fn head(&self) -> &RequestHead {
        &self.head
    }

    pub(crate) fn head_mut(&mut self) -> &mut RequestHead {
        &mut self.head
    }

    /// The request method.
    pub fn method(&self) -> &Method {
        self.head.method()
    }

    /// The protocol version of the request (`HTTP/2.0` over HTTP/2).
    pub fn version(&self) -> Version {
        self.head.version()
    }

    /// The request target exactly as sent: `/path?query` (origin form), an absolute URI, an
    /// authority (`CONNECT`) or `*` (`OPTIONS`). Over HTTP/2: `:path` (`:authority` for
    /// `CONNECT`).
    pub fn target(&self) -> &str {
        self.head.target()
    }

    /// The path of the target, without the query, still percent-encoded. For an absolute-form
    /// target it is the path part of the URI (`/` when the URI has none).
    pub fn path(&self) -> &str {
        self.head.path()
    }

    /// The query string after the first `?`, if there is one.
    pub fn query(&self) -> Option<&str> {
        self.head.query()
    }

    /// The first value of header `name` (case-insensitive), as raw bytes.
    pub fn header(&self, name: &str) -> Option<&[u8]> {
        self.head.header(name)
    }

    /// The first value of header `name` (case-insensitive), if it is valid UTF-8.
    pub fn header_str(&self, name: &str) -> Option<&str> {
        self.head.header_str(name)
    }

    /// Every header field in the order received, names as sent (not lowercased; lowercase
    /// over HTTP/2).
    pub fn headers(&self) -> impl Iterator<Item = (&str, &[u8])> + '_ {
        self.head.headers()
    }

    /// [`Request::target`] and [`Request::headers`] as bytes, without a UTF-8 check per call
    /// (both are ASCII): the tower path copies them into `http`'s types, which check again.
    #[cfg(feature = "tower")]
    pub(crate) fn target_bytes(&self) -> &[u8] {
        self.head.target_bytes()
    }

    #[cfg(feature = "tower")]
    pub(crate) fn header_bytes(&self) -> impl Iterator<Item = (&[u8], &[u8])> + '_ {
        self.head.header_bytes()
    }

    /// Every value of header `name` (case-insensitive), in order.
    pub fn header_all<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a [u8]> + 'a {
        self.head.header_all(name)
    }

    /// How many header fields the request has.
    pub fn header_count(&self) -> usize {
        self.head.header_count()
    }

    /// How the body is delimited.
    pub fn framing(&self) -> Framing {
        self.head.framing().into()
    }

    /// The declared body length, if the body is delimited by `Content-Length`.
    pub fn content_length(&self) -> Option<u64> {
        self.head.content_length()
    }

    /// Whether the request allows the connection to stay open after the response (HTTP/1.1
    /// without `Connection: close`, or HTTP/1.0 with `Connection: keep-alive`; always `true`
    /// over HTTP/2, where a stream does not own its connection).
    pub fn keep_alive(&self) -> bool {
        self.head.keep_alive()
    }

    /// Whether the client sent `Expect: 100-continue` (ignored for HTTP/1.0, as RFC 9110
    /// §10.1.1 requires), whatever the protocol.
    pub fn expect_continue(&self) -> bool {
        self.head.expect_continue()
    }
}
