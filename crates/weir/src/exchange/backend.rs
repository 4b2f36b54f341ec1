//! [`Backend`]: the narrow interface between [`Exchange`](crate::Exchange) and a protocol
//! driver. Each driver implements it once (`h1::Conn`, `h2::H2Stream`); every `Exchange` method
//! is one call on it.
//!
//! What the interface carries is the I/O: reading body bytes (into a buffer, as a chunk, to a
//! file, waiting), writing a head, body bytes, a file, an informational response. What it does
//! not carry are the rules: the body's limits, continue latch, broken state and counters are a
//! [`BodyPolicy`] and the response's state is a [`ResponseLifecycle`], both shared by the
//! drivers and reached through `body_policy` and `response`.
//!
//! The trait is used with static dispatch only (`Exchange` holds an enum of the two drivers),
//! so its `async fn`s cost no boxing and no virtual call.

use super::body::BodyPolicy;
use super::extra_headers::ExtraHeaders;
use super::lifecycle::ResponseLifecycle;
use crate::transport::PeerAddr;
use crate::{Error, Request};
use bytes::Bytes;
use http::StatusCode;
use std::fs::File;

/// One protocol's side of an exchange. The documentation of each operation, as a handler
/// sees it, is on the `Exchange` method of the same name.
pub(crate) trait Backend {
    /// The request head.
    fn request(&self) -> &Request;
    fn peer_addr(&self) -> PeerAddr;
    /// The request's `:scheme` (HTTP/2); HTTP/1.1 has none apart from an absolute-form target.
    fn scheme(&self) -> Option<&http::uri::Scheme> {
        None
    }
    fn body_policy(&self) -> &BodyPolicy;
    fn body_policy_mut(&mut self) -> &mut BodyPolicy;
    fn response(&self) -> &ResponseLifecycle;
    /// The fields of `Exchange::add_response_header`, for this exchange only.
    fn extra_headers_mut(&mut self) -> &mut ExtraHeaders;

    // ---- request body ----
    async fn read_body(&mut self, buf: &mut [u8]) -> Result<usize, Error>;
    async fn wait_body(&mut self) -> Result<bool, Error>;
    fn try_read_body(&mut self, buf: &mut [u8]) -> Option<Result<usize, Error>>;
    async fn read_body_chunk(&mut self) -> Result<Option<Bytes>, Error>;
    async fn body_to_file(&mut self, file: &mut File, limit: u64) -> Result<u64, Error>;
    /// Sets the pause threshold (the policy's, and whatever the protocol derives from it).
    fn set_pause_threshold(&mut self, bytes: usize);
    /// The read-ahead in force (HTTP/2: at most the stream window).
    fn pause_threshold(&self) -> usize;
    fn is_body_complete(&self) -> bool;
    /// Body bytes a read would get without waiting, as far as the protocol knows.
    fn body_at_hand(&self) -> u64;
    /// The open file the client passed with this request (HTTP/1.1 on a Unix socket only).
    fn take_passed_fd(&mut self) -> Option<std::os::fd::OwnedFd> {
        None
    }

    // ---- response ----
    async fn send_informational(
        &mut self,
        status: StatusCode,
        headers: &[(&str, &[u8])],
    ) -> Result<(), Error>;
    /// Starts a head; returns a mark for `abort_head` (HTTP/1.1: where it starts in the write
    /// buffer).
    fn start_head(&mut self, status: StatusCode) -> Result<usize, Error>;
    fn push_header(
        &mut self,
        name: &[u8],
        value: &[u8],
        flags: &mut HeadFlags,
    ) -> Result<(), Error>;
    /// [`Backend::push_header`] for a field whose name is known to be a lowercase token other
    /// than `content-length` and `transfer-encoding`, and whose value a field value: an
    /// `http::HeaderName` and `http::HeaderValue` (their constructors check exactly that; weir's
    /// tower path). A driver may skip the checks; by default it makes them.
    #[cfg(feature = "tower")]
    fn push_valid_header(
        &mut self,
        name: &[u8],
        value: &[u8],
        flags: &mut HeadFlags,
    ) -> Result<(), Error> {
        self.push_header(name, value, flags)
    }
    fn abort_head(&mut self, mark: usize);
    /// Completes the head (HTTP/1.1: into the write buffer; HTTP/2: sends HEADERS).
    fn finish_head(
        &mut self,
        status: StatusCode,
        len: Option<u64>,
        flags: HeadFlags,
    ) -> Result<(), Error>;
    async fn write_body(&mut self, data: &[u8]) -> Result<(), Error>;
    /// Ends the body, with a trailer section when `trailers` is given and the framing carries
    /// one (HTTP/1.1 chunked, HTTP/2); otherwise the fields are dropped.
    fn finish_body(&mut self, trailers: Option<&http::HeaderMap>) -> Result<(), Error>;
    /// Sends what is buffered (HTTP/2 has nothing to do: h2's connection task writes queued
    /// frames as soon as it can).
    async fn flush_response(&mut self) -> Result<(), Error>;
    async fn send_file(&mut self, file: &File, offset: u64, len: u64) -> Result<(), Error>;
    /// Sends `len` bytes of `file` from `offset` as part of a body that stays open (a streamed
    /// body's middle: an archive's member). This default (HTTP/2) reads them into a buffer and
    /// writes them as body bytes; HTTP/1.1 on a plain socket sends them with `sendfile`. A file
    /// shorter than `offset + len` fails with `UnexpectedEof` (the caller's error then cuts
    /// the response).
    async fn send_file_in_body(&mut self, file: &File, offset: u64, len: u64) -> Result<(), Error> {
        use std::os::unix::fs::FileExt;
        // ALLOCATION: one buffer per call (the HTTP/2 path; h2 copies frames from it anyway).
        let mut buf = vec![0u8; usize::try_from(len).unwrap_or(usize::MAX).min(256 * 1024)];
        let mut sent = 0u64;
        while sent < len {
            let want = usize::try_from(len - sent)
                .unwrap_or(usize::MAX)
                .min(buf.len());
            // COPY: file → buffer (pread), written as body bytes.
            let n = file.read_at(&mut buf[..want], offset + sent)?;
            if n == 0 {
                return Err(Error::from(std::io::Error::from(
                    std::io::ErrorKind::UnexpectedEof,
                )));
            }
            self.write_body(&buf[..n]).await?;
            sent += n as u64;
        }
        Ok(())
    }
    /// Forwards `len` body bytes read from `src`. This default (HTTP/2) reads them into a
    /// buffer and writes them as body bytes; HTTP/1.1 on a plain socket splices them.
    async fn forward_body(
        &mut self,
        src: &tokio::net::TcpStream,
        len: u64,
        src_timeout: std::time::Duration,
    ) -> Result<(), Error> {
        // ALLOCATION: one buffer per forwarded body (the HTTP/2 path; frames are copied
        // from it by h2 anyway).
        let mut buf = vec![0u8; usize::try_from(len).unwrap_or(usize::MAX).min(256 * 1024)];
        let mut left = len;
        while left > 0 {
            let room = usize::try_from(left).unwrap_or(usize::MAX).min(buf.len());
            let read = async {
                loop {
                    src.readable().await?;
                    match src.try_read(&mut buf[..room]) {
                        Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
                        other => return other,
                    }
                }
            };
            let n = match tokio::time::timeout(src_timeout, read).await {
                Ok(Ok(0)) => {
                    return Err(Error::from(std::io::Error::from(
                        std::io::ErrorKind::UnexpectedEof,
                    )));
                }
                Ok(Ok(n)) => n,
                Ok(Err(e)) => return Err(Error::from(e)),
                Err(_) => return Err(Error::timeout()),
            };
            self.write_body(&buf[..n]).await?;
            left -= n as u64;
        }
        Ok(())
    }

    /// Answers an error with a short plain-text response (`{status} {reason}: {error}`) when
    /// the handler failed, or returned, without responding.
    async fn write_error_response(
        &mut self,
        status: StatusCode,
        error: &Error,
    ) -> Result<(), Error> {
        let reason = status.canonical_reason().unwrap_or("Error");
        let mut body = [0u8; 128];
        let len = {
            use std::io::Write;
            let mut cursor = std::io::Cursor::new(&mut body[..]);
            let _ = writeln!(cursor, "{} {reason}: {error}", status.as_u16());
            cursor.position() as usize
        };
        self.start_head(status)?;
        let mut flags = HeadFlags::default();
        let _ = self.push_header(b"content-type", b"text/plain; charset=utf-8", &mut flags);
        self.finish_head(status, Some(len as u64), flags)?;
        self.write_body(&body[..len]).await?;
        self.finish_body(None)
    }

    /// After the handler returned: ends a body it left open, which completes a body of unknown
    /// length and fails a short declared one (HTTP/1.1 then closes the connection, HTTP/2
    /// resets the stream), so the client never takes a truncated response for a whole one.
    fn complete_if_open(&mut self) {
        if self.response().left_open() {
            let _ = self.finish_body(None);
        }
    }
}

/// Whether a response field may be sent as a trailer: not framing, connection management,
/// or the fields RFC 9110 §6.5.1 keeps out of trailers because a recipient acts on them before
/// the body (content type and coding, caching, authentication).
pub(crate) fn allowed_in_trailers(name: &http::HeaderName) -> bool {
    use http::header;
    ![
        header::CONTENT_LENGTH,
        header::TRANSFER_ENCODING,
        header::CONNECTION,
        header::TRAILER,
        header::TE,
        header::UPGRADE,
        header::CONTENT_TYPE,
        header::CONTENT_ENCODING,
        header::CONTENT_RANGE,
        header::CACHE_CONTROL,
        header::EXPIRES,
        header::SET_COOKIE,
        header::WWW_AUTHENTICATE,
        header::AUTHORIZATION,
        header::HOST,
    ]
    .contains(name)
        && name.as_str() != "keep-alive"
        && name.as_str() != "proxy-connection"
}

/// Headers weir would add itself that the handler set instead.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct HeadFlags {
    pub(crate) date: bool,
    pub(crate) server: bool,
}

/// Polls `fut` once, with a waker that does nothing: its output if it is ready at once, `None`
/// if it would wait (the future is dropped). Only for futures that may be dropped while pending
/// without losing anything: body reads, whose socket reads and h2 polls take nothing unless
/// they return it, and whose timers are re-armed by the next wait.
pub(crate) fn poll_once<F: Future>(fut: F) -> Option<F::Output> {
    let mut fut = std::pin::pin!(fut);
    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    match fut.as_mut().poll(&mut cx) {
        std::task::Poll::Ready(out) => Some(out),
        std::task::Poll::Pending => None,
    }
}
