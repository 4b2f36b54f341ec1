//! [`ExchangeHandle`]: weir's direct paths from inside a tower service (an axum handler takes
//! it with `Extension<weir::ExchangeHandle>`).
//!
//! Each method is an order carried out by the adapter on the request's exchange (see `link`):
//! the same call a native [`Handler`](crate::Handler) makes, so reading into a caller's buffer
//! goes straight from the socket when nothing is buffered, and a body written to a file moves
//! with `splice` on Linux over TCP and Unix sockets.

use super::link::{Answer, Link, Order, ended};
use crate::Error;
use crate::transport::PeerAddr;
use http::{HeaderMap, StatusCode};
use std::fs::File;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

/// A handle on the exchange behind a request served through [`ServiceHandler`], found in the
/// request's extensions (and from [`Body::handle`](super::Body::handle)).
///
/// Reads through it and through the request's [`Body`](super::Body) share one stream: bytes
/// taken by one are not seen by the other. Its futures may be dropped: bytes already read for
/// a dropped read are kept for the next one. It is usable until the response is complete.
///
/// [`ServiceHandler`]: super::ServiceHandler
///
/// It also carries the client's address ([`ExchangeHandle::peer_addr`]): one extension for
/// both, since each extension a request carries is an allocation.
#[derive(Clone)]
pub struct ExchangeHandle {
    link: Arc<Link>,
    peer: PeerAddr,
}

impl std::fmt::Debug for ExchangeHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("weir::ExchangeHandle")
    }
}

impl ExchangeHandle {
    pub(crate) fn new(link: Arc<Link>, peer: PeerAddr) -> Self {
        Self { link, peer }
    }

    /// The client's address ([`Exchange::peer_addr`](crate::Exchange::peer_addr)).
    pub fn peer_addr(&self) -> PeerAddr {
        self.peer
    }

    /// Reads body payload into `buf[..]` (its length: initialized memory the caller reuses,
    /// as with `std::io::Read`); returns how many bytes were read, `Ok(0)` once the body is
    /// complete. When nothing is buffered and `buf` is at least
    /// [`Config::read_buffer_size`](crate::Config::read_buffer_size), the socket is read
    /// straight into it ([`Exchange::read_body`](crate::Exchange::read_body)). The vector is
    /// lent to the exchange for the read and given back (no allocation); if the future is
    /// dropped mid-read, `buf` is left empty.
    pub async fn read_into(&self, buf: &mut Vec<u8>) -> Result<usize, Error> {
        match self.call(Order::ReadInto(std::mem::take(buf))).await {
            Answer::ReadInto(back, result) => {
                *buf = back;
                result
            }
            _ => Err(ended()),
        }
    }

    /// Writes the rest of the body to `file` at its current position; returns the payload
    /// bytes written ([`Exchange::body_to_file`](crate::Exchange::body_to_file): `splice` on
    /// Linux over TCP and Unix sockets). The exchange writes through a duplicate of the file
    /// descriptor (one `dup` per call), which shares `file`'s position.
    pub async fn to_file(&self, file: &mut File) -> Result<u64, Error> {
        self.to_file_at_most(file, u64::MAX).await
    }

    /// As [`ExchangeHandle::to_file`], but stops after `limit` bytes; fewer only at the end of
    /// the body.
    pub async fn to_file_at_most(&self, file: &mut File, limit: u64) -> Result<u64, Error> {
        let dup = file.try_clone()?;
        match self.call(Order::ToFile(dup, limit)).await {
            Answer::ToFile(result) => result,
            _ => Err(ended()),
        }
    }

    /// Changes the maximum body size for this request; `None` removes the limit
    /// ([`Exchange::set_max_body_size`](crate::Exchange::set_max_body_size)). Applied before
    /// the next body read.
    pub fn set_max_body_size(&self, max: Option<u64>) {
        self.link.set_max_body_size(max);
    }

    /// Changes the pause threshold for this request
    /// ([`Exchange::set_pause_threshold`](crate::Exchange::set_pause_threshold)). Applied
    /// before the next body read.
    pub fn set_pause_threshold(&self, bytes: usize) {
        self.link.set_pause_threshold(bytes);
    }

    /// Sends an informational (1xx) response now, such as `103 Early Hints` or `104 Upload
    /// Resumption Supported`, before the service's response
    /// ([`Exchange::send_informational`](crate::Exchange::send_informational)).
    pub async fn send_informational(
        &self,
        status: StatusCode,
        headers: HeaderMap,
    ) -> Result<(), Error> {
        match self.call(Order::Informational(status, headers)).await {
            Answer::Informational(result) => result,
            _ => Err(ended()),
        }
    }

    fn call(&self, order: Order) -> Call<'_> {
        Call {
            link: &self.link,
            order: Some(order),
            placed: false,
        }
    }
}

/// One order, from placing it to its answer.
struct Call<'a> {
    link: &'a Link,
    order: Option<Order>,
    placed: bool,
}

impl Future for Call<'_> {
    type Output = Answer;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Answer> {
        let this = self.get_mut();
        this.link.poll_call(&mut this.placed, &mut this.order, cx)
    }
}

impl Drop for Call<'_> {
    fn drop(&mut self) {
        if self.placed {
            self.link.abandon();
        }
    }
}
