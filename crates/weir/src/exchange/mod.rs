//! [`Exchange`]: one request and its response, as the handler sees them; and below it the
//! exchange core that both protocol drivers share.
//!
//! - `backend`: [`Backend`](backend::Backend), the narrow interface a driver implements (read
//!   into, read a chunk, to a file, wait, write a head, body bytes, a file, 1xx);
//! - `body`: [`BodyPolicy`](body::BodyPolicy), the request body's rules (limits, pause
//!   threshold, `100 Continue`, broken state, data-rate accounting), free of I/O;
//! - `lifecycle`: [`ResponseLifecycle`](lifecycle::ResponseLifecycle), the response's state
//!   machine (head once, declared length, no body, files, a body left open), free of I/O;
//! - `shared`: [`Shared`], what every connection of a server shares (config, counters,
//!   shutdown flag).
//!
//! An exchange borrows the protocol's state: for HTTP/1.1 the connection's pooled state
//! (request head, buffers, body decoder, response state), for HTTP/2 the stream's. Creating one
//! costs nothing, and it holds an enum of two references: each method is one call on the
//! driver's `Backend`, dispatched by `match` (static, no boxing, no virtual call), so the
//! HTTP/1.1 path costs what it did when the methods were called directly. HTTP/1.1 body reads
//! go to the socket from inside the handler's own calls; HTTP/2 body reads take frames that the
//! connection's task has received, under the stream's flow-control window.
//!
//! The one import here that runs upward, knowingly: `Exchange` names both drivers (the two
//! variants of its enum), because it holds a reference to one of them and static dispatch
//! needs the type. The submodules, which the drivers use, name neither driver.

/// The least body left to write that [`Exchange::body_to_file`] reserves in the file first:
/// below it, the two system calls cost more than the filesystem work they save.
const PREALLOCATE_MIN: u64 = 1 << 20;

pub(crate) mod backend;
pub(crate) mod body;
pub(crate) mod extra_headers;
pub(crate) mod lifecycle;
mod shared;

use backend::HeadFlags;
pub(crate) use shared::Shared;

#[cfg(doc)]
use crate::Config;
use crate::h1::Conn;
#[cfg(feature = "http2")]
use crate::h2::H2Stream;
use crate::response::Response;
use crate::stats::BodyStats;
use crate::transport::PeerAddr;
use crate::{Error, Request};
use bytes::Bytes;
use http::StatusCode;
use std::fs::File;

/// A request being handled, and the means to answer it, over HTTP/1.1 or HTTP/2 alike.
pub struct Exchange<'c> {
    driver: Driver<'c>,
}

/// The protocol driver behind an exchange.
enum Driver<'c> {
    H1(&'c mut Conn),
    #[cfg(feature = "http2")]
    H2(&'c mut H2Stream),
}

/// Calls a [`backend::Backend`] method on the exchange's driver, whichever protocol it is:
/// `on_backend!(self.method(args))`, `on_backend!(&self.method(args))` for `&self` methods,
/// `on_backend!(self.method(args).await)` for `async` ones. The call names the trait
/// (the drivers' inherent methods of the same names are their implementations), and is
/// monomorphised for each driver.
macro_rules! on_backend {
    ($self:ident . $method:ident ( $($arg:expr),* ) .await) => {
        match &mut $self.driver {
            Driver::H1(b) => backend::Backend::$method(&mut **b, $($arg),*).await,
            #[cfg(feature = "http2")]
            Driver::H2(b) => backend::Backend::$method(&mut **b, $($arg),*).await,
        }
    };
    ($self:ident . $method:ident ( $($arg:expr),* )) => {
        match &mut $self.driver {
            Driver::H1(b) => backend::Backend::$method(&mut **b, $($arg),*),
            #[cfg(feature = "http2")]
            Driver::H2(b) => backend::Backend::$method(&mut **b, $($arg),*),
        }
    };
    (& $self:ident . $method:ident ( $($arg:expr),* )) => {
        match &$self.driver {
            Driver::H1(b) => backend::Backend::$method(&**b, $($arg),*),
            #[cfg(feature = "http2")]
            Driver::H2(b) => backend::Backend::$method(&**b, $($arg),*),
        }
    };
}

impl<'c> Exchange<'c> {
    pub(crate) fn h1(conn: &'c mut Conn) -> Self {
        Self {
            driver: Driver::H1(conn),
        }
    }

    #[cfg(feature = "http2")]
    pub(crate) fn h2(stream: &'c mut H2Stream) -> Self {
        Self {
            driver: Driver::H2(stream),
        }
    }

    /// The request head: method, target, version, headers. Over HTTP/2 the version is
    /// `HTTP/2.0`, the target is `:path`, `:authority` is also given as `host` (unless the
    /// client sent one), and a body without `content-length` reports
    /// [`Framing::Unknown`](crate::Framing::Unknown) (its length is known when the stream
    /// ends); over HTTP/1.1 the framing is `Content-Length` or chunked.
    pub fn request(&self) -> &Request {
        on_backend!(&self.request())
    }

    /// The client's address.
    pub fn peer_addr(&self) -> PeerAddr {
        on_backend!(&self.peer_addr())
    }

    /// The connection, for a handler that takes it over (an upgrade served by hyper,
    /// `service::upgrade`): HTTP/1.1 only, before any response. The server writes nothing more
    /// and drops the connection after the exchange.
    #[cfg(feature = "upgrades")]
    pub(crate) fn hand_over(&mut self) -> Option<crate::h1::HandOver<'_>> {
        match &mut self.driver {
            Driver::H1(conn) => conn.hand_over(),
            #[cfg(feature = "http2")]
            Driver::H2(_) => None,
        }
    }

    /// The request's `:scheme` over HTTP/2 (the tower adapter's absolute URI); `None` over
    /// HTTP/1.1.
    #[cfg_attr(not(feature = "tower"), allow(dead_code))]
    pub(crate) fn scheme(&self) -> Option<&http::uri::Scheme> {
        on_backend!(&self.scheme())
    }

    // ---- request body ----

    /// Reads body payload into `buf`, returning how many bytes were read; `Ok(0)` once the body
    /// is complete. When nothing is buffered and `buf` is at least
    /// [`Config::read_buffer_size`], the socket is read straight into `buf` (no copy); the
    /// read may then fill up to the whole of `buf`.
    ///
    /// The first read sends `100 Continue` if the client asked for it. Errors: the body is
    /// larger than the maximum body size ([`Error::is_too_large`]), the client went away
    /// ([`Error::is_disconnect`]; never a clean end of body), was too slow
    /// ([`Error::is_timeout`]) or sent malformed framing ([`Error::is_protocol`]).
    pub async fn read_body(&mut self, buf: &mut [u8]) -> Result<usize, Error> {
        on_backend!(self.read_body(buf).await)
    }

    /// Waits until body payload can be read without waiting, and reads none of it: `Ok(true)`
    /// then, `Ok(false)` once the body is complete. For handlers that read into large buffers
    /// lent from a pool: take one only when there is something to put in it, and give it back
    /// when [`Exchange::try_read_body`] says a read would wait, so that a client sending slowly
    /// holds no buffer while it is silent.
    ///
    /// Sends `100 Continue` if the client asked for it, and waits under the minimum data rate
    /// like a read. Over HTTP/1.1 on TCP and Unix sockets nothing is read while waiting; over
    /// TLS, or within a chunk's framing, at most [`Config::read_buffer_size`] bytes are read
    /// into the connection's buffer. Over HTTP/2 the next DATA frame is taken from h2 (it stays
    /// where it is). `Ok(true)` may be spurious: a read that follows may still find nothing.
    pub async fn wait_body(&mut self) -> Result<bool, Error> {
        on_backend!(self.wait_body().await)
    }

    /// [`Exchange::read_body`] without waiting: `None` when the read would have to wait for
    /// the client (and before the first [`Exchange::wait_body`] or read when a
    /// `100 Continue` is owed over HTTP/1.1). Reads the same way as `read_body`: straight from
    /// the socket into `buf` when it is large and nothing is buffered.
    pub fn try_read_body(&mut self, buf: &mut [u8]) -> Option<Result<usize, Error>> {
        on_backend!(self.try_read_body(buf))
    }

    /// Reads the next piece of body payload without copying it: the returned `Bytes` share the
    /// connection's read buffer. A piece is at most the pause threshold. `Ok(None)` once the
    /// body is complete.
    pub async fn read_body_chunk(&mut self) -> Result<Option<Bytes>, Error> {
        on_backend!(self.read_body_chunk().await)
    }

    /// Writes the rest of the body to `file` at its current position; returns the payload
    /// bytes written. On Linux over TCP or Unix sockets, bytes not already buffered move from
    /// the socket to the file with `splice`, never entering user space. File errors come back
    /// as I/O errors (not disconnects), so a full disk can be answered with `507`.
    ///
    /// When the request declared its length and at least 1 MiB of it is to come, that much of
    /// the file is reserved first on Linux (`fallocate`, keeping the file's size): a disk that
    /// cannot hold the body fails here, before any of it is read, and the writes that follow
    /// cost the filesystem less. Blocks reserved past the end by a body that then failed are
    /// released when the file is truncated or removed.
    pub async fn body_to_file(&mut self, file: &mut File) -> Result<u64, Error> {
        self.body_to_file_at_most(file, u64::MAX).await
    }

    /// As [`Exchange::body_to_file`], but stops after `limit` payload bytes; returns the bytes
    /// written, fewer than `limit` only at the end of the body (`Ok(0)` once it is complete).
    /// For callers that act between pieces: report progress, account a quota, or start
    /// writeback of what is written while the rest arrives.
    pub async fn body_to_file_at_most(
        &mut self,
        file: &mut File,
        limit: u64,
    ) -> Result<u64, Error> {
        if let Some(left) = on_backend!(&self.body_policy()).declared_remaining() {
            let planned = left.min(limit);
            if planned >= PREALLOCATE_MIN {
                crate::zero_copy::preallocate(file, planned)?;
            }
        }
        on_backend!(self.body_to_file(file, limit).await)
    }

    /// Reads the whole remaining body into `out` (bounded by the maximum body size).
    pub async fn read_body_to_end(&mut self, out: &mut Vec<u8>) -> Result<usize, Error> {
        let mut total = 0;
        while let Some(chunk) = self.read_body_chunk().await? {
            // COPY: the caller asked for one contiguous buffer.
            out.extend_from_slice(&chunk);
            total += chunk.len();
        }
        Ok(total)
    }

    /// Changes the maximum body size for this request (before or while reading it); `None`
    /// removes the limit. Like ASP.NET's `IHttpMaxRequestBodySizeFeature`.
    pub fn set_max_body_size(&mut self, max: Option<u64>) {
        on_backend!(self.body_policy_mut()).max_size = max;
    }

    /// The maximum body size in force for this request.
    pub fn max_body_size(&self) -> Option<u64> {
        on_backend!(&self.body_policy()).max_size
    }

    /// Changes the pause threshold for this request: how many body bytes the server may read
    /// ahead of the handler (at least [`Config::MIN_PAUSE_THRESHOLD`]).
    pub fn set_pause_threshold(&mut self, bytes: usize) {
        on_backend!(self.set_pause_threshold(bytes));
    }

    /// The pause threshold in force for this request.
    pub fn pause_threshold(&self) -> usize {
        on_backend!(&self.pause_threshold())
    }

    /// The open file the client passed (`SCM_RIGHTS`) with this request's bytes, once: only
    /// over HTTP/1.1 on a Unix socket of a server with [`Config::accept_passed_fds`], on
    /// Linux; `None` otherwise. The descriptor is what the client sent, unchecked: a handler
    /// must check what it is (`fstat`: a regular file; its access mode: readable) before using
    /// it. One not taken is closed when the exchange ends. A client must send it with the
    /// request's head and not pipeline that request behind another (a descriptor read while
    /// an earlier exchange runs is closed with that exchange).
    pub fn take_passed_fd(&mut self) -> Option<std::os::fd::OwnedFd> {
        on_backend!(self.take_passed_fd())
    }

    /// Body bytes a read would get now, without waiting for the client: those the server
    /// holds plus, over HTTP/1.1 on Linux TCP, those queued in the socket (`FIONREAD`, which
    /// may count the start of a request pipelined after this body's end). A lower bound where
    /// the socket cannot be asked: TLS counts only the bytes decrypted, HTTP/2 only the frame
    /// at hand. A handler that takes several bodies at once can tell from it which of them the
    /// network holds back (little at hand between reads) and which the server does (a full
    /// socket): `weir serve` lets the first part of a multipart upload go first only then.
    pub fn body_at_hand(&self) -> u64 {
        on_backend!(&self.body_at_hand())
    }

    /// Whether the whole body has been read.
    pub fn is_body_complete(&self) -> bool {
        on_backend!(&self.is_body_complete())
    }

    /// The request's trailer fields, once the body is complete ([`Exchange::is_body_complete`]):
    /// the trailer section of a chunked HTTP/1.1 body, or the HEADERS frame that ends an HTTP/2
    /// request. `None` before then and when the client sent none. Over HTTP/1.1 the section is
    /// bounded by [`Limits::max_trailers`](crate::Limits::max_trailers) and fields that
    /// would change framing, routing or authentication are refused (400) while it is read.
    ///
    /// A field sent as a trailer is not a header: a handler that acts on one (a checksum of the
    /// body, say) reads it here, after the last body read.
    pub fn trailers(&self) -> Option<&http::HeaderMap> {
        on_backend!(&self.body_policy()).trailers.as_ref()
    }

    /// Counters of this request's body: bytes received, copied, read directly, spliced, and the
    /// peak read ahead of the handler.
    pub fn body_stats(&self) -> BodyStats {
        on_backend!(&self.body_policy()).stats
    }

    // ---- response ----

    /// Starts the response with `status`. Add headers, then send a body, a stream or a file:
    ///
    /// ```no_run
    /// # async fn f(ex: &mut weir::Exchange<'_>) -> Result<(), weir::Error> {
    /// ex.respond(http::StatusCode::OK)
    ///     .header("content-type", "text/plain")
    ///     .body("hello")
    ///     .await
    /// # }
    /// ```
    pub fn respond(&mut self, status: StatusCode) -> Response<'_, 'c> {
        Response::new(self, status)
    }

    /// Sends an informational (1xx) response now, such as `103 Early Hints`. Not sent to
    /// HTTP/1.0 clients (they do not understand them). A `100 Continue` sent this way counts as
    /// the answer to `Expect: 100-continue`.
    pub async fn send_informational(
        &mut self,
        status: StatusCode,
        headers: &[(&str, &[u8])],
    ) -> Result<(), Error> {
        on_backend!(self.send_informational(status, headers).await)
    }

    /// Adds a header field to the response of this exchange, whichever code sends it (a
    /// handler's routes, its error answers): for fields decided once per request, such as
    /// CORS's `Access-Control-Allow-Origin`. Added before a response starts, it goes into that
    /// response's head, after the status line and before the fields the response adds itself;
    /// an invalid name or value makes that response fail, as with [`Response::header`]. Not
    /// for `Content-Length`, `Transfer-Encoding`, `Connection`, `Date` or `Server`; not sent
    /// on informational (1xx) responses, nor on the plain-text answer weir writes when a
    /// handler fails without responding.
    pub fn add_response_header(&mut self, name: impl AsRef<[u8]>, value: impl AsRef<[u8]>) {
        on_backend!(self.extra_headers_mut()).add(name.as_ref(), value.as_ref());
    }

    /// Whether a response has been started.
    pub fn is_responded(&self) -> bool {
        on_backend!(&self.response()).is_started()
    }

    /// The status of the final response started by the handler (for access logs and metrics);
    /// `None` before one. An answer the server writes after the handler returned an error is
    /// not the handler's: its status is [`Error::status_code`].
    pub fn response_status(&self) -> Option<StatusCode> {
        on_backend!(&self.response()).status()
    }

    /// Response body bytes handed to the connection so far (written and sent from files; not
    /// the head, nor bytes of a response that has no body, such as an answer to `HEAD`).
    pub fn response_body_bytes(&self) -> u64 {
        on_backend!(&self.response()).body_bytes()
    }

    // ---- response plumbing for `Response` and `BodyWriter` ----

    /// Starts a response head; returns a mark for `abort_head` (HTTP/1.1: where it starts).
    pub(crate) fn start_head(&mut self, status: StatusCode) -> Result<usize, Error> {
        on_backend!(self.start_head(status))
    }

    pub(crate) fn push_header(
        &mut self,
        name: &[u8],
        value: &[u8],
        flags: &mut HeadFlags,
    ) -> Result<(), Error> {
        on_backend!(self.push_header(name, value, flags))
    }

    /// [`Backend::push_valid_header`]: a field from `http`'s types, checked when they were made.
    #[cfg(feature = "tower")]
    pub(crate) fn push_valid_header(
        &mut self,
        name: &http::HeaderName,
        value: &http::HeaderValue,
        flags: &mut HeadFlags,
    ) -> Result<(), Error> {
        on_backend!(self.push_valid_header(name.as_str().as_bytes(), value.as_bytes(), flags))
    }

    /// Pushes the fields of [`Exchange::add_response_header`] into the head being built.
    pub(crate) fn push_extra_headers(&mut self, flags: &mut HeadFlags) -> Result<(), Error> {
        if on_backend!(self.extra_headers_mut()).is_empty() {
            return Ok(());
        }
        // Taken out while the head borrows the backend, then put back (its capacity kept).
        let extra = std::mem::take(on_backend!(self.extra_headers_mut()));
        let result = extra
            .iter()
            .try_for_each(|(name, value)| self.push_header(name, value, flags));
        *on_backend!(self.extra_headers_mut()) = extra;
        result
    }

    pub(crate) fn abort_head(&mut self, mark: usize) {
        on_backend!(self.abort_head(mark));
    }

    /// Completes the head (HTTP/1.1: into the write buffer; HTTP/2: sends HEADERS).
    pub(crate) fn finish_head(
        &mut self,
        status: StatusCode,
        len: Option<u64>,
        flags: HeadFlags,
    ) -> Result<(), Error> {
        on_backend!(self.finish_head(status, len, flags))
    }

    pub(crate) async fn write_body(&mut self, data: &[u8]) -> Result<(), Error> {
        on_backend!(self.write_body(data).await)
    }

    pub(crate) fn finish_body(&mut self, trailers: Option<&http::HeaderMap>) -> Result<(), Error> {
        on_backend!(self.finish_body(trailers))
    }

    pub(crate) async fn flush_response(&mut self) -> Result<(), Error> {
        on_backend!(self.flush_response().await)
    }

    pub(crate) async fn send_file(
        &mut self,
        file: &File,
        offset: u64,
        len: u64,
    ) -> Result<(), Error> {
        on_backend!(self.send_file(file, offset, len).await)
    }

    pub(crate) async fn send_file_in_body(
        &mut self,
        file: &File,
        offset: u64,
        len: u64,
    ) -> Result<(), Error> {
        on_backend!(self.send_file_in_body(file, offset, len).await)
    }

    pub(crate) async fn forward_body(
        &mut self,
        src: &tokio::net::TcpStream,
        len: u64,
        src_timeout: std::time::Duration,
    ) -> Result<(), Error> {
        on_backend!(self.forward_body(src, len, src_timeout).await)
    }
}
