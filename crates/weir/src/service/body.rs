//! [`Body`]: the request body a tower service gets, as an `http_body::Body`, a `Stream` of
//! `Bytes` and a tokio `AsyncRead`.
//!
//! Every view reads through the exchange's `read_body_chunk` (via the [`Link`]): a data frame
//! is a `Bytes` that shares the connection's read buffer (HTTP/1.1) or is h2's DATA frame
//! (HTTP/2), so taking a frame neither copies nor allocates. The socket is read only when the
//! body is polled and nothing is buffered, at most the pause threshold ahead, so a service that
//! stops polling stops the server reading, exactly as a native handler does.
//!
//! Where an allocation remains: over HTTP/1.1 a frame shares the connection's read buffer, so a
//! frame the application keeps (instead of dropping it once used) keeps that part of the buffer
//! alive, and the connection's next read grows a fresh buffer: one allocation per buffer
//! refill, not per frame, and none for an application that drops its frames. Over HTTP/2 a
//! frame is h2's DATA payload, handed over as it is.
//!
//! The `AsyncRead` view copies each frame into the caller's `ReadBuf` (the one user-space copy
//! that interface implies); [`ExchangeHandle::read_into`](super::ExchangeHandle::read_into)
//! reads straight from the socket into a caller's buffer instead.

use super::ExchangeHandle;
use super::link::{Answer, Link, Order};
use crate::Error;
use bytes::{Buf, Bytes};
use http::HeaderMap;
use http_body::{Frame, SizeHint};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, ready};

/// A request body served by weir to a tower service (`http::Request<weir::Body>`).
///
/// It is an [`http_body::Body`] (frames of `Bytes`, trailers at the end), a
/// [`futures_core::Stream`] of `Result<Bytes, weir::Error>` and a [`tokio::io::AsyncRead`], so
/// axum extractors, `tokio::io::copy`, decompression and hashing crates take it as it is. For
/// weir's direct paths (straight into a buffer, to a file with `splice`, per-request limits),
/// use [`Body::handle`] or the [`ExchangeHandle`] in the request's extensions.
///
/// The body is readable while the service runs, while its response streams, and after the
/// response too: a service may move it to a task of its own and answer at once (`202
/// Accepted`); the connection (HTTP/1.1) or stream (HTTP/2) then serves its reads until it is
/// dropped or complete. A body kept and never read holds that connection until it is dropped.
pub struct Body {
    link: Arc<Link>,
    /// An order of this body is in the link.
    placed: bool,
    /// Body bytes still to come, when the request declared its length.
    remaining: Option<u64>,
    /// Trailer fields received with the end of the body, handed out as the last frame.
    trailers: Option<HeaderMap>,
    /// The rest of a frame partly taken by `poll_read`.
    partial: Bytes,
    done: bool,
}

impl Body {
    pub(crate) fn new(link: Arc<Link>, declared_length: Option<u64>) -> Self {
        Self {
            link,
            placed: false,
            remaining: declared_length,
            trailers: None,
            partial: Bytes::new(),
            done: declared_length == Some(0),
        }
    }

    /// The handle on this body's exchange: weir's direct paths (read into a buffer, to a file,
    /// limits, 1xx). The same handle is in the request's extensions; it works in the service
    /// of this request, on its task (see [`ExchangeHandle`]), where the body works anywhere.
    pub fn handle(&self) -> ExchangeHandle {
        ExchangeHandle::new()
    }

    /// The next piece of payload; `None` at the end (trailers, if any, then wait in
    /// `self.trailers`).
    fn poll_chunk(&mut self, cx: &mut Context<'_>) -> Poll<Option<Result<Bytes, Error>>> {
        if !self.partial.is_empty() {
            return Poll::Ready(Some(Ok(std::mem::take(&mut self.partial))));
        }
        if self.done {
            return Poll::Ready(None);
        }
        let mut order = Some(Order::Chunk);
        let answer = ready!(self.link.poll_call(&mut self.placed, &mut order, cx));
        Poll::Ready(match answer {
            Answer::Chunk(Ok(Some(bytes))) => {
                if let Some(left) = &mut self.remaining {
                    *left = left.saturating_sub(bytes.len() as u64);
                }
                Some(Ok(bytes))
            }
            Answer::Chunk(Err(e)) => {
                self.done = true;
                Some(Err(e))
            }
            Answer::End(trailers) => {
                self.done = true;
                self.remaining = Some(0);
                self.trailers = trailers;
                None
            }
            // Only chunk orders are placed by a body, and a chunk order is answered with a
            // chunk or the end.
            Answer::Chunk(Ok(None))
            | Answer::ReadInto(..)
            | Answer::ToFile(_)
            | Answer::Informational(_) => {
                self.done = true;
                None
            }
        })
    }
}

impl Drop for Body {
    fn drop(&mut self) {
        if self.placed {
            self.link.abandon();
        }
        self.link.body_dropped();
    }
}

impl std::fmt::Debug for Body {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("weir::Body")
            .field("remaining", &self.remaining)
            .field("done", &self.done)
            .finish()
    }
}

impl http_body::Body for Body {
    type Data = Bytes;
    type Error = Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Error>>> {
        let this = self.get_mut();
        match ready!(this.poll_chunk(cx)) {
            Some(Ok(bytes)) => Poll::Ready(Some(Ok(Frame::data(bytes)))),
            Some(Err(e)) => Poll::Ready(Some(Err(e))),
            None => Poll::Ready(this.trailers.take().map(|t| Ok(Frame::trailers(t)))),
        }
    }

    fn is_end_stream(&self) -> bool {
        self.done && self.partial.is_empty() && self.trailers.is_none()
    }

    fn size_hint(&self) -> SizeHint {
        match self.remaining {
            Some(n) => SizeHint::with_exact(n + self.partial.len() as u64),
            None => SizeHint::new(),
        }
    }
}

impl futures_core::Stream for Body {
    type Item = Result<Bytes, Error>;

    /// The payload, piece by piece (trailers are not part of the stream; they stay readable
    /// through `http_body::Body` after the last piece).
    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        self.get_mut().poll_chunk(cx)
    }
}

impl tokio::io::AsyncRead for Body {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let this = self.get_mut();
        if buf.remaining() == 0 {
            return Poll::Ready(Ok(()));
        }
        match ready!(this.poll_chunk(cx)) {
            Some(Ok(mut bytes)) => {
                let n = bytes.len().min(buf.remaining());
                // COPY: AsyncRead hands bytes over in the caller's buffer.
                buf.put_slice(&bytes[..n]);
                bytes.advance(n);
                this.partial = bytes;
                Poll::Ready(Ok(()))
            }
            Some(Err(e)) => Poll::Ready(Err(std::io::Error::other(e))),
            None => Poll::Ready(Ok(())),
        }
    }
}
