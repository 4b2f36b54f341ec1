//! What the tower path would otherwise allocate per request, kept per thread for the next one:
//! the request's [`Link`], a header map, and a byte buffer the request's URI and header values
//! are copied into and shared from.
//!
//! An `http::Request` owns its parts, and the service keeps or drops them as it likes, so weir
//! cannot reuse the request's own. What comes back is reused instead:
//! - the link, once no body handle of the request is alive (`Arc::get_mut`), reset (a link a
//!   handle still holds is ended instead, for that handle, and left to it);
//! - the response's header map, cleared, as the next request's (hyper's server does the same):
//!   it has the capacity of a typical response's fields;
//! - the byte buffer: each request's URI and values are `Bytes` slices of it (`http` keeps a
//!   `Bytes` it is given instead of copying), and once every slice of earlier requests is
//!   dropped, `BytesMut::reserve` takes the buffer back from its start; while a slice is kept
//!   (a service that stores a header value), it allocates a new buffer instead, and the kept
//!   slice keeps the old one alive.
//!
//! Invariants: a [`Spare`] belongs to one request from [`take`] to [`give_back`]; at most
//! [`KEPT`] spares per thread (a task that moves between threads gives its spare back where it
//! ends; the bound keeps a thread from collecting them), so what a thread keeps is bounded by
//! [`KEPT`] × (a response's header map + a buffer the size of the largest head seen, itself
//! bounded by the head limits). Thread-local rather than per
//! connection, because a [`Handler`](crate::Handler) has no per-connection state, and so that
//! HTTP/2 streams (a task each) reuse them too.

use super::link::Link;
use bytes::BytesMut;
use http::HeaderMap;
use std::cell::RefCell;
use std::sync::Arc;

/// Spares kept per thread: requests in progress on one thread at once, in the common case.
const KEPT: usize = 8;

/// The smallest byte buffer allocated, so that a few requests' URIs and values share one.
const MIN_BYTES: usize = 4096;

/// The per-request parts of one request.
#[derive(Default)]
pub(crate) struct Spare {
    link: Option<Arc<Link>>,
    pub(crate) headers: HeaderMap,
    bytes: BytesMut,
}

impl Spare {
    /// The request's link (a kept one, or a new one: ALLOCATION when none was kept).
    pub(crate) fn link(&mut self) -> &Arc<Link> {
        self.link.get_or_insert_with(Arc::default)
    }

    /// The byte buffer, with room for at least `len` more bytes (ALLOCATION only when the
    /// kept buffer is too small or still shared).
    pub(crate) fn bytes(&mut self, len: usize) -> &mut BytesMut {
        if self.bytes.capacity() - self.bytes.len() < len {
            self.bytes.reserve(len.max(MIN_BYTES));
        }
        &mut self.bytes
    }
}

thread_local! {
    // Boxed on purpose: taking and giving back moves the pointer, not the spare.
    #[allow(clippy::vec_box)]
    static SPARES: RefCell<Vec<Box<Spare>>> = const { RefCell::new(Vec::new()) };
}

/// A spare for a new request: one kept on this thread, or an empty one (ALLOCATION: boxed, so
/// that taking and giving back moves a pointer, not the spare's header map and buffer).
pub(crate) fn take() -> Box<Spare> {
    SPARES
        .try_with(|spares| spares.borrow_mut().pop())
        .ok()
        .flatten()
        .unwrap_or_default()
}

/// Ends the exchange of `spare`'s link, and keeps `spare` for the next request on this thread,
/// if its link is free and the thread keeps fewer than [`KEPT`].
pub(crate) fn give_back(mut spare: Box<Spare>) {
    if let Some(link) = &mut spare.link {
        match Arc::get_mut(link) {
            // Nothing else holds the link, so no order can come: made new without ending it
            // (no lock taken).
            Some(link) => link.reset(),
            // A body handle outlives the exchange: it keeps the ended link (every order it
            // places is answered at once), the next request gets a new one.
            None => {
                link.end();
                spare.link = None;
            }
        }
    }
    // `respond` hands the response's map back cleared; clearing walks the whole index table,
    // so it is not done twice.
    if !spare.headers.is_empty() {
        spare.headers.clear();
    }
    let _ = SPARES.try_with(|spares| {
        let mut spares = spares.borrow_mut();
        if spares.len() < KEPT {
            spares.push(spare);
        }
    });
}

#[cfg(test)]
mod tests {
    use super::super::link::{Answer, Order};
    use super::*;
    use bytes::BufMut;
    use std::task::{Context, Poll, Waker};

    /// Each test runs on a thread of its own, so it starts with no spares.
    #[test]
    fn a_free_link_and_buffer_are_reused() {
        let mut spare = take();
        let link = Arc::as_ptr(spare.link());
        let bytes = spare.bytes(100);
        bytes.put_slice(b"/path?query");
        let shared = bytes.split().freeze();
        let start = shared.as_ptr();
        give_back(spare);
        drop(shared);

        let mut next = take();
        assert_eq!(Arc::as_ptr(next.link()), link);
        // The buffer's tail would do; ask for more than is left so that it is taken back from
        // its start, which needs every earlier slice dropped.
        let room = next.bytes.capacity();
        let bytes = next.bytes(room + 1);
        bytes.put_slice(b"/again");
        assert_eq!(
            bytes.as_ptr(),
            start,
            "the buffer was taken back, not reallocated"
        );
    }

    #[test]
    fn a_link_still_held_is_left_to_its_holder() {
        let mut spare = take();
        let held = Arc::clone(spare.link());
        give_back(spare);
        let mut next = take();
        assert!(
            !Arc::ptr_eq(next.link(), &held),
            "a new link for the next request"
        );
        // The old one is the holder's alone, and ended: its next read is answered at once (an
        // error: the body did not end), not left waiting for an exchange that is gone.
        assert_eq!(Arc::strong_count(&held), 1);
        let (mut placed, mut order) = (false, Some(Order::Chunk));
        let mut cx = Context::from_waker(Waker::noop());
        assert!(matches!(
            held.poll_call(&mut placed, &mut order, &mut cx),
            Poll::Ready(Answer::Chunk(Err(_)))
        ));
    }
}
