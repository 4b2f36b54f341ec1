//! Writing an HTTP/2 response: head as a HEADERS frame, body as DATA frames under the client's
//! flow-control window.
//!
//! The head is collected in a header map (h2 encodes it with HPACK) and sent when the handler
//! starts the body. Body bytes are sent as capacity is granted: the writer asks h2 for
//! capacity, waits until the client's window and h2's send buffer allow, then hands over a
//! piece. The wait is bounded by the minimum response data rate; a client that never opens its
//! window gets its stream reset instead of holding the handler forever.
//!
//! COPY: h2 queues DATA frames until the connection task writes them, so each piece is copied
//! into an owned buffer: a small one into the thread's arena (`reuse::copy_small`, no
//! allocation per response), a larger one into one `BytesMut` reused for the stream's life
//! (once h2 has written a piece and dropped it, the space is reclaimed). Field values the
//! thread sent recently (`date`, `server`, a repeated `content-type` or `content-length`) are
//! shared, not copied (`reuse::value`).

use super::error::stream_error;
use crate::Error;
use crate::error::Misuse;
use crate::exchange::Shared;
use crate::exchange::backend::HeadFlags;
use crate::exchange::lifecycle::{FileSend, Finish, ResponseLifecycle, Write};
use bytes::{Bytes, BytesMut};
use h2::server::SendResponse;
use h2::{Reason, SendStream};
use http::{HeaderMap, HeaderName, HeaderValue, Method, StatusCode};
use std::fs::File;
use std::future::poll_fn;
use std::task::Poll;
use std::time::Duration;
use tokio::time::Instant;

/// Most bytes asked of h2's flow control at once: h2 grants at most its send buffer size
/// anyway, and a bounded request keeps one stream from claiming the whole connection window.
const MAX_PIECE: usize = 1024 * 1024;

/// The response half of an HTTP/2 stream.
pub(crate) struct ResponseOut {
    respond: SendResponse<Bytes>,
    send: Option<SendStream<Bytes>>,
    state: ResponseLifecycle,
    headers: HeaderMap,
    is_head: bool,
    scratch: BytesMut,
}

impl ResponseOut {
    pub(crate) fn new(respond: SendResponse<Bytes>, method: &Method) -> Self {
        Self {
            respond,
            send: None,
            state: ResponseLifecycle::default(),
            headers: HeaderMap::new(),
            is_head: method == Method::HEAD,
            scratch: BytesMut::new(),
        }
    }

    pub(crate) fn lifecycle(&self) -> &ResponseLifecycle {
        &self.state
    }

    pub(crate) fn is_started(&self) -> bool {
        self.state.is_started()
    }

    pub(crate) fn is_complete(&self) -> bool {
        self.state.is_complete()
    }

    pub(crate) fn start_head(&mut self, status: StatusCode) -> Result<(), Error> {
        self.state
            .start_head(status)
            .map_err(Error::invalid_response)?;
        self.headers.clear();
        Ok(())
    }

    pub(crate) fn push_header(
        &mut self,
        name: &[u8],
        value: &[u8],
        flags: &mut HeadFlags,
    ) -> Result<(), ()> {
        // Same rules as HTTP/1.1: a token name, no control characters in the value, and no
        // framing headers (weir sets content-length itself).
        let name = HeaderName::from_bytes(name).map_err(drop)?;
        if name == http::header::CONTENT_LENGTH || name == http::header::TRANSFER_ENCODING {
            return Err(());
        }
        if is_connection_specific(&name) {
            // Meaningless in HTTP/2 (RFC 9113 §8.2.2): dropped, like a handler's
            // `Connection: close` (a stream cannot close its connection).
            return Ok(());
        }
        flags.date |= name == http::header::DATE;
        flags.server |= name == http::header::SERVER;
        // A value this thread sent recently is shared, not copied (`reuse::value`).
        let value = super::reuse::value(&name, value).ok_or(())?;
        // ALLOC: h2 sends a header map; its entries are allocated per response.
        self.headers.append(name, value);
        Ok(())
    }

    pub(crate) fn abort_head(&mut self) {
        if self.state.abort_head() {
            self.headers.clear();
        }
    }

    /// Sends the head: `content-length` when the length is known, `date`, `server`. The head
    /// ends the stream when no body follows (HEAD, 204, 304, or a length of 0).
    pub(crate) fn finish_head(
        &mut self,
        status: StatusCode,
        len: Option<u64>,
        flags: HeadFlags,
        server: &Option<String>,
    ) -> Result<(), Error> {
        if self.state.is_started() {
            return Err(Error::invalid_response(Misuse::AlreadySent));
        }
        let no_body = self.is_head || !weir_proto::encode::status_has_body(status);
        let mut headers = std::mem::take(&mut self.headers);
        if let Some(len) = len {
            if weir_proto::encode::status_has_body(status) {
                let mut digits = [0u8; 20];
                let digits = decimal(len, &mut digits);
                if let Some(v) = super::reuse::value(&http::header::CONTENT_LENGTH, digits) {
                    headers.insert(http::header::CONTENT_LENGTH, v);
                }
            }
        }
        if !flags.date {
            let date = super::reuse::date(crate::clock::unix_seconds());
            headers.insert(http::header::DATE, date);
        }
        if let (false, Some(server)) = (flags.server, server) {
            if let Some(v) = super::reuse::value(&http::header::SERVER, server.as_bytes()) {
                headers.insert(http::header::SERVER, v);
            }
        }
        let mut response = http::Response::new(());
        *response.status_mut() = status;
        *response.headers_mut() = headers;
        let end = no_body || len == Some(0);
        match self.respond.send_response(response, end) {
            Ok(send) => {
                self.send = Some(send);
                // Without a body, nothing more goes on the wire and later writes are dropped.
                self.state.head_sent(no_body, len);
                if end && !no_body {
                    self.state.complete();
                }
                Ok(())
            }
            Err(e) => {
                self.state.fail();
                Err(stream_error(e))
            }
        }
    }

    /// Writes body bytes; the last bytes of a declared length end the stream with them.
    pub(crate) async fn write_body(&mut self, data: &[u8], shared: &Shared) -> Result<(), Error> {
        let end = match self.state.before_write(data.len() as u64) {
            Ok(Write::Drop) => return Ok(()),
            Ok(Write::Send { last }) => last,
            Err(misuse) => return Err(self.refuse(misuse)),
        };
        if data.is_empty() && !end {
            return Ok(());
        }
        self.send_pieces(data, end, shared).await?;
        if end {
            self.state.complete();
        }
        Ok(())
    }

    /// Sends `data` in pieces as flow control allows; `end` ends the stream with the last one.
    async fn send_pieces(
        &mut self,
        mut data: &[u8],
        end: bool,
        shared: &Shared,
    ) -> Result<(), Error> {
        loop {
            let cap = if data.is_empty() {
                0
            } else {
                self.capacity(data.len(), shared).await?
            };
            let n = cap.min(data.len());
            let piece = if n <= super::reuse::SMALL {
                // COPY: into the thread's arena of small payloads (`reuse::copy_small`).
                super::reuse::copy_small(&data[..n])
            } else {
                // COPY: into the stream's reusable send buffer (see the module doc).
                self.scratch.reserve(n);
                self.scratch.extend_from_slice(&data[..n]);
                self.scratch.split().freeze()
            };
            data = &data[n..];
            let last = end && data.is_empty();
            let Some(send) = self.send.as_mut() else {
                return Err(Error::invalid_response(Misuse::NoBodyOpen));
            };
            if let Err(e) = send.send_data(piece, last) {
                self.state.fail();
                return Err(stream_error(e));
            }
            if data.is_empty() {
                return Ok(());
            }
        }
    }

    /// Waits until h2 grants send capacity for up to `want` bytes, under the response rate.
    async fn capacity(&mut self, want: usize, shared: &Shared) -> Result<usize, Error> {
        // The wait is for one piece at most: its deadline is that piece's time at the minimum
        // rate, not the whole write's (a 64 MiB body at 1 MiB/s waited 64 s on a window that
        // never opened).
        let deadline = write_deadline(shared, want.min(MAX_PIECE));
        let Some(send) = self.send.as_mut() else {
            return Err(Error::invalid_response(Misuse::NoBodyOpen));
        };
        send.reserve_capacity(want.min(MAX_PIECE));
        let wait = poll_fn(|cx| {
            loop {
                let cap = send.capacity();
                if cap > 0 {
                    return Poll::Ready(Ok(cap));
                }
                match send.poll_capacity(cx) {
                    Poll::Ready(Some(Ok(_))) => {}
                    Poll::Ready(Some(Err(e))) => return Poll::Ready(Err(stream_error(e))),
                    Poll::Ready(None) => return Poll::Ready(Err(Error::disconnect(None))),
                    Poll::Pending => return Poll::Pending,
                }
            }
        });
        let out = match deadline {
            None => Some(wait.await),
            Some(d) => tokio::time::timeout_at(d, wait).await.ok(),
        };
        match out {
            Some(Ok(cap)) => Ok(cap),
            Some(Err(e)) => {
                self.state.fail();
                Err(e)
            }
            None => {
                self.fail(Reason::CANCEL);
                Err(Error::timeout())
            }
        }
    }

    /// Ends the body; a declared length must have been sent in full (if not, the stream is
    /// reset, so the client sees the response is incomplete).
    pub(crate) fn finish_body(&mut self, trailers: Option<&http::HeaderMap>) -> Result<(), Error> {
        match self.state.before_finish() {
            Ok(Finish::End { no_body }) => {
                if !no_body {
                    if let Some(send) = self.send.as_mut() {
                        match trailers {
                            Some(fields) => {
                                // ALLOCATION (trailers only): h2 takes the fields by value.
                                let mut kept = http::HeaderMap::with_capacity(fields.len());
                                for (name, value) in fields {
                                    if crate::exchange::backend::allowed_in_trailers(name) {
                                        kept.append(name.clone(), value.clone());
                                    }
                                }
                                send.send_trailers(kept).map_err(stream_error)?;
                            }
                            None => send.send_data(Bytes::new(), true).map_err(stream_error)?,
                        }
                    }
                }
                self.state.complete();
                Ok(())
            }
            Ok(Finish::Done) => Ok(()),
            Err(misuse) => Err(self.refuse(misuse)),
        }
    }

    /// The handler misused the response API: a wrong body length resets the stream (the
    /// client must not take the response for complete); other misuses only report.
    fn refuse(&mut self, misuse: Misuse) -> Error {
        if matches!(misuse, Misuse::BodyTooLong | Misuse::BodyTooShort) {
            self.fail(Reason::INTERNAL_ERROR);
        }
        Error::invalid_response(misuse)
    }

    /// Sends `len` bytes of `file` from `offset` as the body, read in pieces into the send
    /// buffer (no `sendfile`: h2 frames the bytes in user space).
    pub(crate) async fn send_file(
        &mut self,
        file: &File,
        offset: u64,
        len: u64,
        shared: &Shared,
    ) -> Result<(), Error> {
        use std::os::unix::fs::FileExt;
        match self.state.before_file(len) {
            Ok(FileSend::Skip) => return Ok(()),
            Ok(FileSend::Send) => {}
            Err(misuse) => return Err(Error::invalid_response(misuse)),
        }
        let mut sent = 0u64;
        while sent < len {
            let want = (len - sent).min(MAX_PIECE as u64) as usize;
            let cap = self.capacity(want, shared).await?;
            let n = cap.min(want);
            self.scratch.reserve(n);
            self.scratch.resize(n, 0);
            // COPY: file → the stream's send buffer (pread); h2 writes it from there.
            let got = match file.read_at(&mut self.scratch, offset + sent) {
                Ok(got) => got,
                Err(e) => {
                    self.scratch.clear();
                    self.fail(Reason::INTERNAL_ERROR);
                    return Err(Error::from(e));
                }
            };
            if got == 0 {
                self.scratch.clear();
                self.fail(Reason::INTERNAL_ERROR);
                return Err(Error::from(std::io::Error::from(
                    std::io::ErrorKind::UnexpectedEof,
                )));
            }
            self.scratch.truncate(got);
            let piece = self.scratch.split().freeze();
            sent += got as u64;
            let last = sent == len;
            let Some(send) = self.send.as_mut() else {
                return Err(Error::invalid_response(Misuse::NoBodyOpen));
            };
            if let Err(e) = send.send_data(piece, last) {
                self.state.fail();
                return Err(stream_error(e));
            }
            self.state.sent(got as u64);
        }
        self.state.complete();
        Ok(())
    }

    /// Sends a 1xx response now.
    pub(crate) fn send_informational(
        &mut self,
        status: StatusCode,
        headers: &[(&str, &[u8])],
    ) -> Result<(), Error> {
        self.state
            .check_informational(status)
            .map_err(Error::invalid_response)?;
        let mut response = http::Response::new(());
        *response.status_mut() = status;
        for (name, value) in headers {
            let name = HeaderName::from_bytes(name.as_bytes())
                .map_err(|_| Error::invalid_response(Misuse::InvalidHeader))?;
            let value = HeaderValue::from_bytes(value)
                .map_err(|_| Error::invalid_response(Misuse::InvalidHeader))?;
            if !is_connection_specific(&name) {
                response.headers_mut().append(name, value);
            }
        }
        self.respond
            .send_informational(response)
            .map_err(stream_error)
    }

    /// Resets the stream (once); the response is then failed.
    pub(crate) fn reset(&mut self, reason: Reason) {
        self.fail(reason);
    }

    fn fail(&mut self, reason: Reason) {
        if self.state.fail() {
            match self.send.as_mut() {
                Some(send) => send.send_reset(reason),
                None => self.respond.send_reset(reason),
            }
        }
    }
}

/// `n` in decimal, in `buf`.
fn decimal(mut n: u64, buf: &mut [u8; 20]) -> &[u8] {
    let mut at = buf.len();
    loop {
        at -= 1;
        buf[at] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            return &buf[at..];
        }
    }
}

/// The deadline for sending `len` bytes under the minimum response data rate.
fn write_deadline(shared: &Shared, len: usize) -> Option<Instant> {
    let rate = shared.config.min_response_rate?;
    let needed = Duration::from_secs_f64(len as f64 / rate.bytes_per_second.max(1) as f64);
    Some(Instant::now() + needed.max(rate.grace))
}

/// Whether a response header is connection-specific, which HTTP/2 forbids (RFC 9113 §8.2.2):
/// weir drops it rather than sending a malformed response.
pub(crate) fn is_connection_specific(name: &HeaderName) -> bool {
    matches!(
        name.as_str(),
        "connection" | "keep-alive" | "proxy-connection" | "transfer-encoding" | "upgrade"
    )
}
