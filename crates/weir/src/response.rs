//! [`Response`]: the response builder, and [`BodyWriter`] for streamed bodies.
//!
//! Headers are encoded into the connection's write buffer as they are added (no header map, no
//! allocation). Framing headers (`Content-Length`, `Transfer-Encoding`) are weir's: they are
//! derived from what the handler sends, so they can never disagree with the body.

use crate::error::Misuse;
use crate::exchange::backend::HeadFlags;
use crate::{Error, Exchange};
use http::StatusCode;
use std::fmt::Display;
use std::fs::File;
use std::io::Write;

/// A response being built. Finish it with [`Response::body`], [`Response::empty`],
/// [`Response::stream`] or [`Response::file`]; dropping it sends nothing.
#[must_use = "a response is sent only by body(), empty(), stream() or file()"]
pub struct Response<'x, 'c> {
    exchange: Option<&'x mut Exchange<'c>>,
    status: StatusCode,
    /// Where the head starts in the write buffer; `None` if it could not be started.
    mark: Option<usize>,
    flags: HeadFlags,
    error: Option<Error>,
}

impl<'x, 'c> Response<'x, 'c> {
    pub(crate) fn new(exchange: &'x mut Exchange<'c>, status: StatusCode) -> Self {
        let (mark, error) = match exchange.start_head(status) {
            Ok(mark) => (Some(mark), None),
            Err(e) => (None, Some(e)),
        };
        let mut flags = HeadFlags::default();
        let error = match error {
            None => exchange.push_extra_headers(&mut flags).err(),
            some => some,
        };
        Self {
            exchange: Some(exchange),
            status,
            mark,
            flags,
            error,
        }
    }

    /// Adds a header. Names must be tokens and values free of control characters; an invalid
    /// one makes the send fail (nothing is sent). `Content-Length` and `Transfer-Encoding` are
    /// refused: weir sets them. `Connection: close` is honoured.
    pub fn header(mut self, name: impl AsRef<[u8]>, value: impl AsRef<[u8]>) -> Self {
        if self.error.is_none() {
            if let Some(ex) = self.exchange.as_deref_mut() {
                if let Err(e) = ex.push_header(name.as_ref(), value.as_ref(), &mut self.flags) {
                    self.error = Some(e);
                }
            }
        }
        self
    }

    /// [`Response::header`] for a field of `http`'s types (the tower path): their constructors
    /// made the checks `header` makes, so the driver need not repeat them. The caller leaves
    /// out `content-length` and `transfer-encoding` (weir's own).
    #[cfg(feature = "tower")]
    pub(crate) fn valid_header(
        mut self,
        name: &http::HeaderName,
        value: &http::HeaderValue,
    ) -> Self {
        debug_assert!(
            name != http::header::CONTENT_LENGTH && name != http::header::TRANSFER_ENCODING
        );
        if self.error.is_none() {
            if let Some(ex) = self.exchange.as_deref_mut() {
                if let Err(e) = ex.push_valid_header(name, value, &mut self.flags) {
                    self.error = Some(e);
                }
            }
        }
        self
    }

    /// Adds a header whose value is formatted from `value` (a number, a date...), without
    /// allocating.
    pub fn header_display(self, name: impl AsRef<[u8]>, value: impl Display) -> Self {
        let mut buf = [0u8; 256];
        let mut cursor = std::io::Cursor::new(&mut buf[..]);
        if write!(cursor, "{value}").is_err() {
            let mut this = self;
            this.error = Some(Error::invalid_response(Misuse::HeaderTooLong));
            return this;
        }
        let len = cursor.position() as usize;
        self.header(name, &buf[..len])
    }

    /// Sends the response with `body` (`Content-Length` framing).
    pub async fn body(mut self, body: impl AsRef<[u8]>) -> Result<(), Error> {
        let body = body.as_ref();
        let ex = self.begin(Some(body.len() as u64))?;
        ex.write_body(body).await?;
        ex.finish_body(None)
    }

    /// Sends the response with an empty body (for example `204 No Content`).
    pub async fn empty(self) -> Result<(), Error> {
        self.body([]).await
    }

    /// Sends the head and returns a writer for a streamed body: `Content-Length` framing if
    /// `len` is given, else chunked (or, for an HTTP/1.0 client, delimited by closing the
    /// connection).
    pub async fn stream(mut self, len: Option<u64>) -> Result<BodyWriter<'x, 'c>, Error> {
        let ex = self.begin(len)?;
        Ok(BodyWriter { exchange: ex })
    }

    /// Sends `len` bytes of `file` starting at `offset` as the body. On Linux over TCP and
    /// Unix sockets this is `sendfile`: the bytes go from the page cache to the socket without
    /// entering user space.
    pub async fn file(mut self, file: &File, offset: u64, len: u64) -> Result<(), Error> {
        let ex = self.begin(Some(len))?;
        ex.send_file(file, offset, len).await
    }

    /// Completes the head and hands back the exchange.
    fn begin(&mut self, len: Option<u64>) -> Result<&'x mut Exchange<'c>, Error> {
        let ex = self
            .exchange
            .take()
            .ok_or_else(|| Error::invalid_response(Misuse::AlreadySent))?;
        if let Some(e) = self.error.take() {
            if let Some(mark) = self.mark {
                ex.abort_head(mark);
            }
            return Err(e);
        }
        ex.finish_head(self.status, len, self.flags)?;
        Ok(ex)
    }
}

impl Drop for Response<'_, '_> {
    fn drop(&mut self) {
        // Dropped without sending: take back the partial head.
        if let (Some(ex), Some(mark)) = (self.exchange.as_deref_mut(), self.mark) {
            ex.abort_head(mark);
        }
    }
}

/// Writes a streamed response body. Call [`BodyWriter::finish`] at the end; a writer dropped
/// without it is finished by the server if the framing allows (chunked), otherwise the
/// connection is closed so the client sees a truncated response.
pub struct BodyWriter<'x, 'c> {
    exchange: &'x mut Exchange<'c>,
}

impl<'c> BodyWriter<'_, 'c> {
    /// Writes `data` as body bytes (one chunk for chunked framing). Small writes are gathered
    /// in the write buffer; large ones are written from `data` directly. A body that pauses
    /// between writes (an event stream) calls [`BodyWriter::flush`] before each pause, or what
    /// it wrote waits in the buffer until the next large write or the end.
    pub async fn write(&mut self, data: &[u8]) -> Result<(), Error> {
        self.exchange.write_body(data).await
    }

    /// Forwards the next `len` body bytes from the socket `src` (a proxied answer: an object
    /// store's body, positioned at its first byte). Over HTTP/1.1 on a plain TCP or Unix
    /// connection (Linux), with `splice` through a pipe: the bytes never enter user space; over
    /// TLS or HTTP/2, read into a buffer and written. Fails the response (HTTP/1.1 closes the
    /// connection, HTTP/2 resets the stream) if `src` ends before `len` bytes, fails, or sends
    /// nothing for `src_timeout`; the bytes read from `src` beyond `len` are left in it.
    pub async fn splice_from(
        &mut self,
        src: &tokio::net::TcpStream,
        len: u64,
        src_timeout: std::time::Duration,
    ) -> Result<(), Error> {
        self.exchange.forward_body(src, len, src_timeout).await
    }

    /// Sends `len` bytes of `file` from `offset` as the next body bytes, the body staying open
    /// (one member of an archive among others). HTTP/1.1 on a plain TCP or Unix connection
    /// (Linux): `sendfile`, as one chunk under chunked framing, the bytes never entering user
    /// space; TLS and HTTP/2: read into a buffer and written. A file shorter than
    /// `offset + len` fails the write (`UnexpectedEof`); return that error with the body
    /// open, and the client sees a cut response.
    pub async fn send_file(&mut self, file: &File, offset: u64, len: u64) -> Result<(), Error> {
        self.exchange.send_file_in_body(file, offset, len).await
    }

    /// Sends everything buffered so far.
    pub async fn flush(&mut self) -> Result<(), Error> {
        self.exchange.flush_response().await
    }

    /// Ends the body.
    pub async fn finish(self) -> Result<(), Error> {
        self.exchange.finish_body(None)
    }

    /// Ends the body with a trailer section: sent over HTTP/2 and with chunked framing over
    /// HTTP/1.1 (a body of unknown length), dropped with `Content-Length` framing (HTTP/1.1 has
    /// no place for it there). Fields that RFC 9110 §6.5.1 keeps out of trailers (framing,
    /// connection, content type and coding, caching, authentication) are left out.
    pub async fn finish_with_trailers(self, trailers: &http::HeaderMap) -> Result<(), Error> {
        self.exchange.finish_body(Some(trailers))
    }

    /// The exchange, to read the request body while streaming the response (echo, transform).
    pub fn exchange(&mut self) -> &mut Exchange<'c> {
        self.exchange
    }
}
