//! The one error type a handler sees: small, opaque, and asked with predicates.
//!
//! An upload handler must tell a client that went away (`is_disconnect`) from a body that was too
//! large (`is_too_large`), a client that was too slow (`is_timeout`) and a malformed body
//! (`is_protocol`). When a handler returns an error before responding, the connection answers
//! with [`Error::status`].
//!
//! An application's own error (a tower service's, a response body's) is carried as
//! [`Error::user`]: boxed inside the `io::Error` slot. [`Error::side`] says who failed: the
//! client or the server side.
//!
//! An `Error` is one pointer to its parts (ALLOCATION: one per error, on error paths only), so
//! that `Result<(), Error>`, which every handler and body call returns through several `async`
//! layers, is one word. Unboxed it was a 16-byte enum whose moves, copied as overlapping 4-byte
//! pieces, stalled store forwarding at every layer (docs/BENCHMARKS.md).

use http::StatusCode;
use std::fmt;
use std::io;
use weir_proto::ProtoError;

/// An error from reading a request or writing a response, or one a handler raises.
pub struct Error(Box<Parts>);

/// What an [`Error`] holds.
struct Parts {
    kind: Kind,
    io: Option<io::Error>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    /// The client closed or reset the connection before the exchange was complete.
    Disconnect,
    /// The body is larger than the request's maximum body size.
    TooLarge,
    /// The client was too slow: head timeout, or body/response data rate below the minimum.
    Timeout,
    /// The body's framing is malformed.
    Protocol(ProtoError),
    /// The handler built an invalid response (bad header, wrong body length, responded twice).
    InvalidResponse(Misuse),
    /// A handler asked for this status to be sent.
    Status(StatusCode),
    /// Any other I/O error (for example writing an upload to disk).
    Io,
    /// An application's own error, in the `io` slot as `io::Error::other`.
    User,
}

/// What was malformed in a request: its description ([`ProtocolError::as_str`], also its
/// `Display`) and the status that answers it ([`ProtocolError::status`]). Every such error
/// ends the connection over HTTP/1.1, since the byte stream no longer delimits the next
/// request; over HTTP/2 it ends the stream.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct ProtocolError(ProtoError);

impl ProtocolError {
    /// The status code that answers this error (400, or 413/414/431/417/501/505 where a more
    /// precise one applies).
    pub fn status(self) -> StatusCode {
        self.0.status()
    }

    /// A short, stable description, also the body of the error response.
    pub fn as_str(self) -> &'static str {
        self.0.as_str()
    }
}

impl fmt::Debug for ProtocolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("ProtocolError").field(&self.0).finish()
    }
}

impl fmt::Display for ProtocolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::error::Error for ProtocolError {}

/// Which side of an exchange failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Side {
    /// The client: it went away, was too slow, sent too much or malformed framing.
    Client,
    /// The server: the handler or application (its own error, an invalid response, a failed
    /// file or other I/O of its own).
    Server,
}

impl Error {
    fn new(kind: Kind, io: Option<io::Error>) -> Self {
        Self(Box::new(Parts { kind, io }))
    }

    pub(crate) fn disconnect(io: Option<io::Error>) -> Self {
        Self::new(Kind::Disconnect, io)
    }

    pub(crate) fn too_large() -> Self {
        Self::new(Kind::TooLarge, None)
    }

    pub(crate) fn timeout() -> Self {
        Self::new(Kind::Timeout, None)
    }

    pub(crate) fn protocol(e: ProtoError) -> Self {
        Self::new(Kind::Protocol(e), None)
    }

    pub(crate) fn invalid_response(what: Misuse) -> Self {
        Self::new(Kind::InvalidResponse(what), None)
    }

    /// An error that makes the server answer `status` if the handler has not responded yet.
    pub fn status(status: StatusCode) -> Self {
        Self::new(Kind::Status(status), None)
    }

    /// Wraps an application's own error (a tower service's, a body's). It answers `500` if
    /// nothing was sent yet; [`Error::side`] is [`Side::Server`]; [`Error::user_error`] and
    /// [`std::error::Error::source`] give it back.
    pub fn user(error: impl Into<Box<dyn std::error::Error + Send + Sync>>) -> Self {
        let error = error.into();
        // An error that is already weir's keeps its meaning (a disconnect stays a disconnect).
        match error.downcast::<Error>() {
            Ok(weir) => *weir,
            // ALLOCATION (error path only): io::Error boxes the user's error once more.
            Err(other) => Self::new(Kind::User, Some(io::Error::other(other))),
        }
    }

    /// The application's error wrapped by [`Error::user`].
    pub fn user_error(&self) -> Option<&(dyn std::error::Error + Send + Sync + 'static)> {
        match self.0.kind {
            Kind::User => self.0.io.as_ref().and_then(|e| e.get_ref()),
            _ => None,
        }
    }

    /// Which side failed: the client (disconnect, timeout, too large, malformed) or the server
    /// (the handler's own error, an invalid response, its I/O).
    pub fn side(&self) -> Side {
        match self.0.kind {
            Kind::Disconnect | Kind::TooLarge | Kind::Timeout | Kind::Protocol(_) => Side::Client,
            Kind::Status(s) if s.is_client_error() => Side::Client,
            Kind::Status(_) | Kind::InvalidResponse(_) | Kind::Io | Kind::User => Side::Server,
        }
    }

    /// Classifies an I/O error from the connection: resets, broken pipes and unexpected EOF are
    /// disconnects; timeouts are timeouts.
    pub(crate) fn from_conn_io(e: io::Error) -> Self {
        match e.kind() {
            io::ErrorKind::ConnectionReset
            | io::ErrorKind::ConnectionAborted
            | io::ErrorKind::BrokenPipe
            | io::ErrorKind::UnexpectedEof
            | io::ErrorKind::NotConnected => Self::disconnect(Some(e)),
            io::ErrorKind::TimedOut => Self::new(Kind::Timeout, Some(e)),
            _ => Self::new(Kind::Io, Some(e)),
        }
    }

    /// The client closed or reset the connection (mid-body, or while the response was sent).
    pub fn is_disconnect(&self) -> bool {
        self.0.kind == Kind::Disconnect
    }

    /// The request body exceeded the maximum body size (answered with 413).
    pub fn is_too_large(&self) -> bool {
        self.0.kind == Kind::TooLarge
    }

    /// The client was too slow (answered with 408 if nothing was sent yet).
    pub fn is_timeout(&self) -> bool {
        self.0.kind == Kind::Timeout
    }

    /// The request body is malformed (answered with 400, or 431 for oversized trailers).
    pub fn is_protocol(&self) -> bool {
        matches!(self.0.kind, Kind::Protocol(_))
    }

    /// The protocol error behind an [`Error::is_protocol`] error.
    pub fn protocol_error(&self) -> Option<ProtocolError> {
        self.proto_error().map(ProtocolError)
    }

    /// The protocol core's error behind an [`Error::is_protocol`] error.
    pub(crate) fn proto_error(&self) -> Option<ProtoError> {
        match self.0.kind {
            Kind::Protocol(e) => Some(e),
            _ => None,
        }
    }

    /// The underlying I/O error, if there is one.
    pub fn io_error(&self) -> Option<&io::Error> {
        self.0.io.as_ref()
    }

    /// Whether the request body can no longer be read: the connection must close after this
    /// exchange.
    pub(crate) fn breaks_body(&self) -> bool {
        matches!(
            self.0.kind,
            Kind::Disconnect | Kind::TooLarge | Kind::Timeout | Kind::Protocol(_)
        )
    }

    /// The status the server answers with when a handler returns this error before responding.
    pub fn status_code(&self) -> StatusCode {
        match self.0.kind {
            Kind::Disconnect => StatusCode::BAD_REQUEST,
            Kind::TooLarge => StatusCode::PAYLOAD_TOO_LARGE,
            Kind::Timeout => StatusCode::REQUEST_TIMEOUT,
            Kind::Protocol(e) => e.status(),
            Kind::Status(s) => s,
            Kind::InvalidResponse(_) | Kind::Io | Kind::User => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }
}

/// How a handler misused the response API.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Misuse {
    AlreadySent,
    InformationalStatus,
    NotInformational,
    BodyTooLong,
    BodyTooShort,
    NoBodyOpen,
    NoResponse,
    InvalidHeader,
    HeaderTooLong,
}

impl Misuse {
    fn as_str(self) -> &'static str {
        match self {
            Self::AlreadySent => "a response was already sent",
            Self::InformationalStatus => "1xx status: use send_informational",
            Self::NotInformational => "not an informational status",
            Self::BodyTooLong => "body longer than its Content-Length",
            Self::BodyTooShort => "body shorter than its Content-Length",
            Self::NoBodyOpen => "no response body is open",
            Self::NoResponse => "handler returned without responding",
            Self::InvalidHeader => "invalid response header",
            Self::HeaderTooLong => "header value longer than 256 bytes",
        }
    }
}

impl From<io::Error> for Error {
    /// Errors from the handler's own I/O (files, other services) answer 500.
    fn from(e: io::Error) -> Self {
        Self::new(Kind::Io, Some(e))
    }
}

impl fmt::Debug for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut d = f.debug_struct("weir::Error");
        d.field("kind", &self.0.kind);
        if let Some(io) = &self.0.io {
            d.field("io", io);
        }
        d.finish()
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0.kind {
            Kind::Disconnect => f.write_str("client disconnected")?,
            Kind::TooLarge => f.write_str("request body too large")?,
            Kind::Timeout => f.write_str("client too slow")?,
            Kind::Protocol(e) => write!(f, "malformed request body: {e}")?,
            Kind::InvalidResponse(what) => write!(f, "invalid response: {}", what.as_str())?,
            Kind::Status(s) => write!(f, "responding {s}")?,
            Kind::Io => f.write_str("I/O error")?,
            Kind::User => f.write_str("application error")?,
        }
        if let Some(user) = self.user_error() {
            write!(f, ": {user}")?;
        } else if let Some(io) = &self.0.io {
            write!(f, ": {io}")?;
        }
        Ok(())
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        if let Some(user) = self.user_error() {
            return Some(user);
        }
        self.0.io.as_ref().map(|e| e as _)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_result_of_error_is_one_word() {
        // Returned from every body read and handler, through several `async` layers (module doc).
        assert_eq!(
            std::mem::size_of::<Result<(), Error>>(),
            std::mem::size_of::<usize>()
        );
    }

    #[test]
    fn predicates_and_statuses() {
        assert!(Error::too_large().is_too_large());
        assert_eq!(
            Error::too_large().status_code(),
            StatusCode::PAYLOAD_TOO_LARGE
        );
        let reset = Error::from_conn_io(io::ErrorKind::ConnectionReset.into());
        assert!(reset.is_disconnect());
        assert!(Error::timeout().is_timeout());
        let p = Error::protocol(ProtoError::InvalidChunkSize);
        assert!(p.is_protocol());
        assert_eq!(p.status_code(), StatusCode::BAD_REQUEST);
        assert_eq!(
            Error::status(StatusCode::NOT_FOUND).status_code(),
            StatusCode::NOT_FOUND
        );
        assert_eq!(
            Error::from(io::Error::other("disk")).status_code(),
            StatusCode::INTERNAL_SERVER_ERROR
        );
    }

    #[test]
    fn user_errors_are_carried_and_name_the_server_side() {
        #[derive(Debug)]
        struct Mine;
        impl fmt::Display for Mine {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("mine")
            }
        }
        impl std::error::Error for Mine {}

        let e = Error::user(Mine);
        assert_eq!(e.side(), Side::Server);
        assert_eq!(e.status_code(), StatusCode::INTERNAL_SERVER_ERROR);
        assert!(e.user_error().unwrap().is::<Mine>());
        assert!(std::error::Error::source(&e).unwrap().is::<Mine>());
        assert_eq!(e.to_string(), "application error: mine");
        // A weir error passed through a service keeps its meaning.
        let back =
            Error::user(Box::new(Error::too_large()) as Box<dyn std::error::Error + Send + Sync>);
        assert!(back.is_too_large());
        assert_eq!(back.side(), Side::Client);
        assert_eq!(Error::timeout().side(), Side::Client);
        assert!(Error::from(io::Error::other("disk")).user_error().is_none());
    }
}
