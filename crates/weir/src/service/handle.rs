//! [`ExchangeHandle`]: weir's direct paths from inside a tower service (an axum handler takes
//! it with `Extension<weir::ExchangeHandle>`).
//!
//! Each method is an order carried out by the adapter on the request's exchange (see `link`):
//! the same call a native [`Handler`](crate::Handler) makes, so reading into a caller's buffer
//! goes straight from the socket when nothing is buffered, and a body written to a file moves
//! with `splice` on Linux over TCP and Unix sockets.
//!
//! **Zero-sized.** `http::Extensions` boxes every value it holds, and a box of a zero-sized
//! type does not allocate, so the handle carries nothing: it finds its request through the
//! thread's *current exchange*, which the adapter sets ([`within`]) only while it runs the
//! service for a request (`poll_ready`, `call`, polling the service's future and the response
//! body, all on the request's task) and restores when that returns, unwinding included.
//! Invariants: the current exchange is set on this thread only while the adapter runs the
//! service for it, as a pointer to the adapter's [`Current`] (which holds a reference count of
//! the link and outlives every [`within`] that lends it); a handle used anywhere else (a task
//! it was moved to, after the response) finds no current exchange and its methods fail with
//! [`not_within`]'s error; a read placed in one link is never collected from or abandoned in
//! another (`Call` remembers which link it placed in).

use super::link::{Answer, Link, Order};
use crate::Error;
use crate::transport::PeerAddr;
use http::{HeaderMap, StatusCode};
use std::cell::Cell;
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
/// a dropped read are kept for the next one.
///
/// [`ServiceHandler`]: super::ServiceHandler
///
/// **Where it works**: in the service (its `call`, its future, the response body), on the
/// request's task, until the response is complete: the handle is zero-sized (so the request's
/// extensions do not allocate for it) and names *the request weir is serving on this task*.
/// Moved to another task, or used after the response, its reads fail with an error saying so,
/// its setters do nothing and [`ExchangeHandle::peer_addr`] panics; read the moved request's
/// [`Body`](super::Body) there instead, which works from any task.
///
/// It also carries the client's address ([`ExchangeHandle::peer_addr`]).
#[derive(Clone, Copy, Default)]
pub struct ExchangeHandle {
    _private: (),
}

impl std::fmt::Debug for ExchangeHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("weir::ExchangeHandle")
    }
}

impl ExchangeHandle {
    pub(crate) const fn new() -> Self {
        Self { _private: () }
    }

    /// The client's address ([`Exchange::peer_addr`](crate::Exchange::peer_addr)).
    ///
    /// # Panics
    ///
    /// Outside the service of its request (see the type's docs): there is no client then.
    pub fn peer_addr(&self) -> PeerAddr {
        with_current(|_, peer| peer).unwrap_or_else(|| panic!("{}", NOT_WITHIN))
    }

    /// Reads body payload into `buf[..]` (its length: initialized memory the caller reuses,
    /// as with `std::io::Read`); returns how many bytes were read, `Ok(0)` once the body is
    /// complete. When nothing is buffered and `buf` is at least
    /// [`Config::read_buffer_size`](crate::Config::read_buffer_size), the socket is read
    /// straight into it ([`Exchange::read_body`](crate::Exchange::read_body)). The vector is
    /// lent to the exchange for the read and given back (no allocation); if the future is
    /// dropped mid-read, `buf` is left empty.
    pub async fn read_into(&self, buf: &mut Vec<u8>) -> Result<usize, Error> {
        if !is_within() {
            return Err(not_within());
        }
        match self.call(Order::ReadInto(std::mem::take(buf))).await? {
            Answer::ReadInto(back, result) => {
                *buf = back;
                result
            }
            _ => Err(super::link::ended()),
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
        if !is_within() {
            return Err(not_within());
        }
        let dup = file.try_clone()?;
        match self.call(Order::ToFile(dup, limit)).await? {
            Answer::ToFile(result) => result,
            _ => Err(super::link::ended()),
        }
    }

    /// Changes the maximum body size for this request; `None` removes the limit
    /// ([`Exchange::set_max_body_size`](crate::Exchange::set_max_body_size)). Applied before
    /// the next body read. Does nothing outside the service of its request.
    pub fn set_max_body_size(&self, max: Option<u64>) {
        with_current(|link, _| link.set_max_body_size(max));
    }

    /// Changes the pause threshold for this request
    /// ([`Exchange::set_pause_threshold`](crate::Exchange::set_pause_threshold)). Applied
    /// before the next body read. Does nothing outside the service of its request.
    pub fn set_pause_threshold(&self, bytes: usize) {
        with_current(|link, _| link.set_pause_threshold(bytes));
    }

    /// Sends an informational (1xx) response now, such as `103 Early Hints` or `104 Upload
    /// Resumption Supported`, before the service's response
    /// ([`Exchange::send_informational`](crate::Exchange::send_informational)).
    pub async fn send_informational(
        &self,
        status: StatusCode,
        headers: HeaderMap,
    ) -> Result<(), Error> {
        match self.call(Order::Informational(status, headers)).await? {
            Answer::Informational(result) => result,
            _ => Err(super::link::ended()),
        }
    }

    fn call(&self, order: Order) -> Call {
        Call {
            order: Some(order),
            placed: false,
            link: 0,
        }
    }
}

/// One order, from placing it to its answer, each poll on the current exchange's link.
struct Call {
    order: Option<Order>,
    placed: bool,
    /// The address of the link the order was placed in (`placed`), so that its answer is
    /// collected only there: an address, not a pointer, because nothing is reached through it.
    link: usize,
}

impl Future for Call {
    type Output = Result<Answer, Error>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        with_current(|link, _| {
            let at = std::ptr::from_ref(link) as usize;
            if this.placed && this.link != at {
                return Poll::Ready(Err(not_within()));
            }
            this.link = at;
            link.poll_call(&mut this.placed, &mut this.order, cx)
                .map(Ok)
        })
        .unwrap_or(Poll::Ready(Err(not_within())))
    }
}

impl Drop for Call {
    fn drop(&mut self) {
        if self.placed {
            // Outside the request's service (the service's future dropped by the connection
            // going away), the adapter ends the link itself, which answers the order.
            with_current(|link, _| {
                if std::ptr::from_ref(link) as usize == self.link {
                    link.abandon();
                }
            });
        }
    }
}

/// The exchange the adapter is serving on this thread: its link and the client's address.
/// The adapter owns it for the whole request (in its future, which is pinned), and lends it to
/// the thread by [`within`] while it runs the service.
pub(crate) struct Current {
    pub(crate) link: Arc<Link>,
    peer: PeerAddr,
}

impl Current {
    /// The current exchange of a request: `link` (the request's reference count) and `peer`.
    pub(crate) fn new(link: Arc<Link>, peer: PeerAddr) -> Self {
        Self { link, peer }
    }
}

thread_local! {
    /// The [`Current`] lent by the innermost [`within`] running on this thread; null outside.
    /// A plain pointer: no destructor, so an access is one thread-local load, with no
    /// registration check, no reference count and no move of the value (this runs on every
    /// poll of the service's future and of the response body).
    static CURRENT: Cell<*const Current> = const { Cell::new(std::ptr::null()) };
}

/// Runs `f` with `entered` as this thread's current exchange, then restores the previous one
/// (also when `f` unwinds), so that [`ExchangeHandle`]s used inside `f` reach its link.
pub(crate) fn within<R>(entered: &Current, f: impl FnOnce() -> R) -> R {
    /// Puts the previous pointer back when `within` ends, by return or by unwinding.
    struct Restore(*const Current);
    impl Drop for Restore {
        fn drop(&mut self) {
            CURRENT.set(self.0);
        }
    }
    let _restore = Restore(CURRENT.replace(entered));
    f()
}

/// Calls `f` with this thread's current exchange; `None` outside [`within`].
#[allow(unsafe_code)]
fn with_current<R>(f: impl FnOnce(&Link, PeerAddr) -> R) -> Option<R> {
    let current = CURRENT.get();
    // SAFETY: a non-null pointer in `CURRENT` was put there by `within` from its `entered:
    // &Current`, a borrow that outlives the call of `f` in `within`, and `within` puts the
    // previous pointer back before it returns (its `Restore` guard, on return and on unwind).
    // So while the pointer is in `CURRENT`, this thread is inside that call and the `Current`
    // is alive and not mutably borrowed (`within` holds a shared borrow of it). The reference
    // made here does not leave this function: `f` gets it for the length of its call, which
    // cannot outlast the `within` that lent it (`f` runs synchronously on this thread).
    let current = unsafe { current.as_ref() }?;
    Some(f(&current.link, current.peer))
}

/// Whether `link` is the current exchange's: the caller runs inside `within` for it, that is
/// inside `drive`'s poll of the service, which takes an order placed now once the poll returns.
pub(crate) fn is_current(link: &Link) -> bool {
    with_current(|current, _| std::ptr::eq(current, link)).unwrap_or(false)
}

fn is_within() -> bool {
    with_current(|_, _| ()).is_some()
}

const NOT_WITHIN: &str = "weir::ExchangeHandle used outside the service of its request: it works \
    on the request's task until the response is complete (read a moved request's weir::Body \
    instead)";

/// The error of a handle used outside the service of its request.
pub(crate) fn not_within() -> Error {
    Error::from(std::io::Error::other(NOT_WITHIN))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn peer(port: u16) -> PeerAddr {
        PeerAddr::Tcp(([127, 0, 0, 1], port).into())
    }

    fn current_link() -> Option<usize> {
        with_current(|link, _| std::ptr::from_ref(link) as usize)
    }

    #[test]
    fn the_current_exchange_is_set_only_within_and_restored() {
        let (a, b) = (Arc::<Link>::default(), Arc::<Link>::default());
        let handle = ExchangeHandle::new();
        assert_eq!(current_link(), None);
        let in_a = Current::new(Arc::clone(&a), peer(1));
        let in_b = Current::new(Arc::clone(&b), peer(2));
        within(&in_a, || {
            assert_eq!(current_link(), Some(Arc::as_ptr(&a) as usize));
            assert_eq!(handle.peer_addr(), peer(1));
            // Nested (a service polled inside another's poll): the inner one, then back.
            within(&in_b, || assert_eq!(handle.peer_addr(), peer(2)));
            assert_eq!(handle.peer_addr(), peer(1));
        });
        assert_eq!(current_link(), None);
        // Restored when the service panics, too, also from a nested one.
        let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            within(&in_a, || within(&in_b, || panic!("service")))
        }));
        assert!(caught.is_err());
        assert_eq!(current_link(), None);
        // Only the owners hold the links: the thread kept no reference count.
        drop((in_a, in_b));
        assert_eq!(Arc::strong_count(&a), 1);
        assert_eq!(Arc::strong_count(&b), 1);
    }

    /// The current exchange is per thread: another thread running inside `within` at the same
    /// moment is not seen here, and sees its own.
    #[test]
    fn the_current_exchange_is_the_threads_own() {
        let a = Arc::<Link>::default();
        let in_a = Current::new(Arc::clone(&a), peer(1));
        within(&in_a, || {
            std::thread::scope(|scope| {
                scope
                    .spawn(|| {
                        assert_eq!(current_link(), None);
                        let b = Arc::<Link>::default();
                        let in_b = Current::new(Arc::clone(&b), peer(2));
                        within(&in_b, || {
                            assert_eq!(current_link(), Some(Arc::as_ptr(&b) as usize));
                        });
                    })
                    .join()
                    .unwrap();
            });
            assert_eq!(current_link(), Some(Arc::as_ptr(&a) as usize));
        });
    }

    #[test]
    fn a_handle_outside_its_request_fails_with_an_error() {
        let handle = ExchangeHandle::new();
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let mut buf = vec![7; 16];
        let error = runtime
            .block_on(handle.read_into(&mut buf))
            .expect_err("no current exchange");
        assert!(error.to_string().contains("outside the service"), "{error}");
        assert_eq!(buf, [7; 16], "the caller's buffer is left as it was");
        handle.set_max_body_size(Some(1));
        assert!(std::panic::catch_unwind(|| handle.peer_addr()).is_err());
    }
}
