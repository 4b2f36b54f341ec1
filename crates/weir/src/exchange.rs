//! [`Exchange`]: one request and its response, as the handler sees them.
//!
//! An exchange borrows the connection's pooled state (request head, buffers, body decoder,
//! response state), so creating one per request costs nothing. Body reads go to the socket
//! from inside the handler's own calls: there is no background reader.

use crate::h1::Conn;
use crate::response::Response;
use crate::stats::BodyStats;
use crate::transport::PeerAddr;
use crate::{Config, Error, Request};
use bytes::Bytes;
use http::StatusCode;
use std::fs::File;

/// A request being handled, and the means to answer it.
pub struct Exchange<'c> {
    pub(crate) conn: &'c mut Conn,
}

impl<'c> Exchange<'c> {
    pub(crate) fn h1(conn: &'c mut Conn) -> Self {
        Self { conn }
    }

    /// The request head: method, target, version, headers.
    pub fn request(&self) -> &Request {
        &self.conn.head
    }

    /// The client's address.
    pub fn peer_addr(&self) -> PeerAddr {
        self.conn.io.stream.peer_addr()
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
        self.conn.read_body(buf).await
    }

    /// Reads the next piece of body payload without copying it: the returned `Bytes` share the
    /// connection's read buffer. A piece is at most the pause threshold. `Ok(None)` once the
    /// body is complete.
    pub async fn read_body_chunk(&mut self) -> Result<Option<Bytes>, Error> {
        self.conn.read_body_chunk().await
    }

    /// Writes the rest of the body to `file` at its current position; returns the payload
    /// bytes written. On Linux over TCP or Unix sockets, bytes not already buffered move from
    /// the socket to the file with `splice`, never entering user space. File errors come back
    /// as I/O errors (not disconnects), so a full disk can be answered with `507`.
    pub async fn body_to_file(&mut self, file: &mut File) -> Result<u64, Error> {
        self.conn.body_to_file(file).await
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
        self.conn.body.max_size = max;
    }

    /// The maximum body size in force for this request.
    pub fn max_body_size(&self) -> Option<u64> {
        self.conn.body.max_size
    }

    /// Changes the pause threshold for this request: how many body bytes the server may read
    /// ahead of the handler (at least [`Config::MIN_PAUSE_THRESHOLD`]).
    pub fn set_pause_threshold(&mut self, bytes: usize) {
        self.conn.body.pause_threshold = bytes.max(Config::MIN_PAUSE_THRESHOLD);
    }

    /// The pause threshold in force for this request.
    pub fn pause_threshold(&self) -> usize {
        self.conn.body.pause_threshold
    }

    /// Whether the whole body has been read.
    pub fn is_body_complete(&self) -> bool {
        self.conn.body.decoder.is_done()
    }

    /// Counters of this request's body: bytes received, copied, read directly, spliced, and the
    /// peak read ahead of the handler.
    pub fn body_stats(&self) -> BodyStats {
        self.conn.body.stats
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
        self.conn.send_informational(status, headers).await
    }

    /// Whether a response has been started.
    pub fn is_responded(&self) -> bool {
        self.conn.resp.is_started()
    }
}
