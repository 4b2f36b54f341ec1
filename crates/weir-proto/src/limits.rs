//! Every limit the protocol core enforces: its default, and why that value.
//!
//! Time-based limits (head timeout, idle timeout, data rates) belong to the I/O layer, which owns
//! the clock; they are documented on `weir::Config`.

/// Size and count limits applied while parsing a request, and what it refuses beyond framing.
/// `#[non_exhaustive]`: build it from `Limits::default()`, then assign fields or chain the
/// `with_*` setters.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Limits {
    /// Longest request line (`GET /path HTTP/1.1`) in bytes, CRLF included. Default 8 KiB, the
    /// limit most servers and proxies apply, so URLs that pass them pass weir.
    /// Breach: `414 URI Too Long`.
    pub max_request_line: usize,
    /// Largest request head (request line and every header line) in bytes. Default 32 KiB:
    /// generous for cookies and tokens, small enough that idle connections cost little.
    /// Breach: `431 Request Header Fields Too Large`.
    pub max_head: usize,
    /// Most header fields in one request. Default 100; real clients send 10 to 30.
    /// Breach: `431`. Capped at [`Limits::HEADER_COUNT_CAP`].
    pub max_headers: usize,
    /// Total bytes of chunk extensions (`;name=value` after a chunk size) in one body.
    /// Default 16 KiB: nobody uses extensions, and unbounded ones let a client make the server
    /// parse forever without delivering data. Breach: `400`.
    pub max_chunk_extensions: usize,
    /// Largest trailer section of a chunked body, in bytes. Default 16 KiB.
    /// Breach: `431`.
    pub max_trailers: usize,
    /// Whether an `Expect` other than `100-continue` is refused with `417 Expectation Failed`
    /// (true, the default) or ignored (false). RFC 9110 §10.1.1 allows either; refusing tells
    /// a client early that what it expects will not happen. Amazon S3 ignores them, so an S3
    /// front end that must answer as S3 does turns this off. Not framing: ignoring one cannot
    /// change where a request ends.
    pub refuse_unknown_expectations: bool,
}

impl Limits {
    /// The hard upper bound on [`Limits::max_headers`]: the parser keeps its header slots on the
    /// stack, so the count must have a compile-time bound.
    pub const HEADER_COUNT_CAP: usize = 512;

    /// Whether an `Expect` field value is one these limits refuse with `417`: anything but
    /// `100-continue` (case-insensitive), when [`Limits::refuse_unknown_expectations`] is on.
    /// The HTTP/1.1 parser and the HTTP/2 adapter both ask it.
    pub fn refuses_expectation(&self, value: &[u8]) -> bool {
        self.refuse_unknown_expectations && !crate::request::is_100_continue(value)
    }

    /// Sets [`Limits::max_request_line`].
    #[must_use]
    pub fn with_max_request_line(mut self, bytes: usize) -> Self {
        self.max_request_line = bytes;
        self
    }

    /// Sets [`Limits::max_head`].
    #[must_use]
    pub fn with_max_head(mut self, bytes: usize) -> Self {
        self.max_head = bytes;
        self
    }

    /// Sets [`Limits::max_headers`].
    #[must_use]
    pub fn with_max_headers(mut self, count: usize) -> Self {
        self.max_headers = count;
        self
    }

    /// Sets [`Limits::max_chunk_extensions`].
    #[must_use]
    pub fn with_max_chunk_extensions(mut self, bytes: usize) -> Self {
        self.max_chunk_extensions = bytes;
        self
    }

    /// Sets [`Limits::max_trailers`].
    #[must_use]
    pub fn with_max_trailers(mut self, bytes: usize) -> Self {
        self.max_trailers = bytes;
        self
    }

    /// Sets [`Limits::refuse_unknown_expectations`].
    #[must_use]
    pub fn with_refuse_unknown_expectations(mut self, refuse: bool) -> Self {
        self.refuse_unknown_expectations = refuse;
        self
    }
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_request_line: 8 * 1024,
            max_head: 32 * 1024,
            max_headers: 100,
            max_chunk_extensions: 16 * 1024,
            max_trailers: 16 * 1024,
            refuse_unknown_expectations: true,
        }
    }
}
