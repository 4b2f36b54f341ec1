//! Everything that can be wrong with a request, mapped to the status code that answers it.
//!
//! Every variant is a framing or syntax problem detected before the handler could make sense of
//! the bytes, so every one of them ends the connection: after a malformed message the byte stream
//! can no longer be trusted to delimit the next request (RFC 9112 §6.3, §11.2).

use http::StatusCode;
use std::fmt;

/// A request the protocol core refuses. [`ProtoError::status`] gives the answer to send.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ProtoError {
    /// The request line is longer than `Limits::max_request_line` (414).
    RequestLineTooLong,
    /// The request head is larger than `Limits::max_head` (431).
    HeadTooLarge,
    /// More header fields than `Limits::max_headers` (431).
    TooManyHeaders,
    /// A line in the head or in chunk framing ends with a bare LF or contains a bare CR
    /// (RFC 9112 §2.2: weir does not accept bare line endings) (400).
    BareLineEnding,
    /// The request line is not `method SP request-target SP HTTP-version` (400).
    InvalidRequestLine,
    /// The request target is not in a form the method allows (RFC 9112 §3.2) (400).
    InvalidTarget,
    /// The version is a well-formed HTTP version that is not 1.0 or 1.1 (505).
    UnsupportedVersion,
    /// The request line's version is not `HTTP/…` in any case (`INVALID CONNECTION PREFACE`):
    /// no HTTP/1 client sends that. On a cleartext port that also takes HTTP/2 by prior
    /// knowledge it is an invalid connection preface, a connection error (RFC 9113 §3.4), so it
    /// is not answered ([`ProtoError::is_answered`]); RFC 9112 §3 asks for 400 with a SHOULD.
    NotHttp,
    /// A header name is not a token, or there is whitespace before the colon (RFC 9112 §5.1) (400).
    InvalidHeaderName,
    /// A header value contains a control character such as NUL or CR (RFC 9110 §5.5) (400).
    InvalidHeaderValue,
    /// An HTTP/1.1 request without exactly one `Host`, or with an invalid one (RFC 9112 §3.2) (400).
    InvalidHost,
    /// `Content-Length` is not a plain decimal number, is a list, repeats, or overflows (400).
    InvalidContentLength,
    /// Both `Content-Length` and `Transfer-Encoding` (RFC 9112 §6.3 rule 3) (400).
    ContentLengthWithTransferEncoding,
    /// `chunked` is not the final transfer coding (or is missing: `Transfer-Encoding: gzip`), or
    /// is applied twice: the body length cannot be determined (RFC 9112 §6.3 ¶4) (400).
    ChunkedNotFinal,
    /// A transfer coding weir does not implement, before a final `chunked` (RFC 9112 §6.1)
    /// (501).
    UnknownTransferCoding,
    /// `Transfer-Encoding` in an HTTP/1.0 request: faulty framing (RFC 9112 §6.1) (400).
    TransferEncodingInHttp10,
    /// An `Expect` value other than `100-continue` (RFC 9110 §10.1.1) (417).
    UnsupportedExpectation,
    /// A chunk size that is not hex digits, or too large for 64 bits (RFC 9112 §7.1) (400).
    InvalidChunkSize,
    /// A malformed chunk extension (RFC 9112 §7.1.1) (400).
    InvalidChunkExtension,
    /// More chunk extension bytes than `Limits::max_chunk_extensions` (400).
    ChunkExtensionsTooLarge,
    /// Chunk data not followed by CRLF: the chunk was longer than its size said (400).
    InvalidChunkTerminator,
    /// A malformed trailer field line (RFC 9112 §7.1.2) (400).
    InvalidTrailer,
    /// A trailer field that would change framing or routing (`Content-Length`,
    /// `Transfer-Encoding`, `Host`, ...; RFC 9110 §6.5.1) (400).
    ForbiddenTrailer,
    /// A trailer section larger than `Limits::max_trailers` (431).
    TrailersTooLarge,
}

impl ProtoError {
    /// The status code that answers this error.
    pub fn status(self) -> StatusCode {
        use ProtoError::*;
        match self {
            RequestLineTooLong => StatusCode::URI_TOO_LONG,
            HeadTooLarge | TooManyHeaders | TrailersTooLarge => {
                StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE
            }
            UnsupportedVersion => StatusCode::HTTP_VERSION_NOT_SUPPORTED,
            UnknownTransferCoding => StatusCode::NOT_IMPLEMENTED,
            UnsupportedExpectation => StatusCode::EXPECTATION_FAILED,
            BareLineEnding
            | InvalidRequestLine
            | NotHttp
            | InvalidTarget
            | InvalidHeaderName
            | InvalidHeaderValue
            | InvalidHost
            | InvalidContentLength
            | ContentLengthWithTransferEncoding
            | ChunkedNotFinal
            | TransferEncodingInHttp10
            | InvalidChunkSize
            | InvalidChunkExtension
            | ChunkExtensionsTooLarge
            | InvalidChunkTerminator
            | InvalidTrailer
            | ForbiddenTrailer => StatusCode::BAD_REQUEST,
        }
    }

    /// Whether the error is answered with [`ProtoError::status`] before the connection closes:
    /// all are but [`ProtoError::NotHttp`], which is closed without a word.
    pub fn is_answered(self) -> bool {
        self != ProtoError::NotHttp
    }

    /// A short, stable description, also used as the body of the error response.
    pub fn as_str(self) -> &'static str {
        use ProtoError::*;
        match self {
            RequestLineTooLong => "request line too long",
            HeadTooLarge => "request head too large",
            TooManyHeaders => "too many header fields",
            BareLineEnding => "bare CR or LF in line ending",
            InvalidRequestLine => "invalid request line",
            NotHttp => "not an HTTP/1 request",
            InvalidTarget => "invalid request target",
            UnsupportedVersion => "HTTP version not supported",
            InvalidHeaderName => "invalid header name",
            InvalidHeaderValue => "invalid header value",
            InvalidHost => "missing, repeated or invalid Host",
            InvalidContentLength => "invalid Content-Length",
            ContentLengthWithTransferEncoding => "Content-Length with Transfer-Encoding",
            ChunkedNotFinal => "chunked is not the final transfer coding, or is repeated",
            UnknownTransferCoding => "unsupported transfer coding",
            TransferEncodingInHttp10 => "Transfer-Encoding in an HTTP/1.0 request",
            UnsupportedExpectation => "unsupported expectation",
            InvalidChunkSize => "invalid chunk size",
            InvalidChunkExtension => "invalid chunk extension",
            ChunkExtensionsTooLarge => "chunk extensions too large",
            InvalidChunkTerminator => "chunk data longer than its size",
            InvalidTrailer => "invalid trailer field",
            ForbiddenTrailer => "framing field in trailers",
            TrailersTooLarge => "trailer section too large",
        }
    }
}

impl fmt::Display for ProtoError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::error::Error for ProtoError {}
