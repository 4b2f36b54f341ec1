//! What an HTTP/2 stream would allocate for itself, kept per thread for the next stream: request
//! heads, the memory small DATA frames are copied into, and response field values that repeat.
//!
//! A stream is a task of its own, so nothing lives per connection on the stream's side; and
//! stream tasks of one connection run on any worker thread. Per-thread stores need no lock and
//! follow the tasks: a stream takes from the store of the thread it runs on, and gives back
//! there when it ends.
//!
//! - **Request heads** ([`take_head`], [`give_head`]): a head's buffers keep their capacity, so
//!   a stream's head is filled without allocating once heads of that size have been seen.
//! - **Small DATA payloads** ([`copy_small`]): h2 queues a frame's `Bytes` until the connection
//!   task writes it, so a handler's `&[u8]` is copied. Small ones are copied into one per-thread
//!   `BytesMut` and split off as `Bytes` that share it; when every piece has been written and
//!   dropped, `reserve` takes the whole buffer back from its start, so the copies allocate only
//!   while earlier pieces are still queued.
//! - **Field values** ([`value`]): `http::HeaderValue::from_bytes` copies into a new `Bytes`
//!   (an allocation per field per response). The last [`VALUES`] values sent on this thread are
//!   kept with their names; a response that repeats one (the same `content-type`, `server`,
//!   `content-length`) gets a clone, a reference count; a new one is copied into a small
//!   per-thread arena of values and shared from there. `date` is kept apart, refreshed once a
//!   second.
//!
//! Invariants: a head given back is reused only after [`crate::Request`]'s own reset (its
//! request line is set afresh); at most [`HEADS`] heads and [`VALUES`] values per thread, and
//! the arena is at most [`ARENA`] bytes (a piece larger than [`SMALL`] is not copied here); kept
//! values hold at most [`VALUES`] chunks of [`VALUE_ARENA`] bytes; so what a thread keeps is
//! bounded.

use crate::Request;
use bytes::{Bytes, BytesMut};
use http::{HeaderName, HeaderValue};
use std::cell::RefCell;

/// Request heads kept per thread: streams in progress on one thread at once, commonly.
const HEADS: usize = 32;

/// Field values kept per thread.
const VALUES: usize = 16;

/// A value longer than this is not kept (a cookie, a token: unlikely to repeat).
const MAX_VALUE: usize = 128;

/// Payloads up to this size are copied into the per-thread arena.
pub(crate) const SMALL: usize = 4096;

/// The arena's size: many small payloads per allocation.
const ARENA: usize = 64 * 1024;

/// The field values' own arena: a kept value holds its chunk, so chunks are small (at most
/// [`VALUES`] of them are held by kept values).
const VALUE_ARENA: usize = 4096;

#[derive(Default)]
struct Store {
    heads: Vec<Request>,
    arena: BytesMut,
    value_arena: BytesMut,
    /// (name, value), most recently added last; replaced round robin.
    values: Vec<(HeaderName, HeaderValue)>,
    next_value: usize,
    /// The second `date` was formatted for, and its value.
    date: Option<(u64, HeaderValue)>,
}

thread_local! {
    static STORE: RefCell<Store> = RefCell::new(Store::default());
}

/// A request head for a new stream: a kept one, or a new one.
pub(crate) fn take_head() -> Request {
    STORE
        .try_with(|s| s.borrow_mut().heads.pop())
        .ok()
        .flatten()
        .unwrap_or_default()
}

/// Keeps `head` for the next stream on this thread (dropped when the thread keeps enough).
pub(crate) fn give_head(head: Request) {
    let _ = STORE.try_with(|s| {
        let mut s = s.borrow_mut();
        if s.heads.len() < HEADS {
            s.heads.push(head);
        }
    });
}

/// `data` (at most [`SMALL`] bytes) as `Bytes` for h2's send queue.
pub(crate) fn copy_small(data: &[u8]) -> Bytes {
    debug_assert!(data.len() <= SMALL);
    STORE
        .try_with(|s| {
            let arena = &mut s.borrow_mut().arena;
            if arena.capacity() - arena.len() < data.len() {
                // Takes the buffer back when every earlier piece is gone; ALLOCATION otherwise
                // (a new arena, while the old one lives on in the queued pieces).
                arena.reserve(ARENA);
            }
            // COPY: the handler's bytes must outlive its call (h2 writes them later).
            arena.extend_from_slice(data);
            arena.split().freeze()
        })
        // The thread is going away: a plain copy.
        .unwrap_or_else(|_| Bytes::copy_from_slice(data))
}

/// `bytes` as a value of field `name`: a kept value when this thread sent the same one
/// recently, else a new one (ALLOCATION), then kept. `None` if `bytes` is not a valid value.
pub(crate) fn value(name: &HeaderName, bytes: &[u8]) -> Option<HeaderValue> {
    if bytes.len() > MAX_VALUE {
        return HeaderValue::from_bytes(bytes).ok();
    }
    STORE
        .try_with(|s| {
            let mut s = s.borrow_mut();
            if let Some((_, v)) = s
                .values
                .iter()
                .find(|(n, v)| n == name && v.as_bytes() == bytes)
            {
                return Some(v.clone());
            }
            // COPY into the values' arena, shared from there: a `HeaderValue` of its own
            // `Bytes` would be promoted (ALLOCATION) when cloned into the kept set, so a value
            // that never repeats would cost two allocations instead of one. From the arena it
            // costs none until a chunk is full.
            let arena = &mut s.value_arena;
            if arena.capacity() - arena.len() < bytes.len() {
                arena.reserve(VALUE_ARENA);
            }
            arena.extend_from_slice(bytes);
            let v = HeaderValue::from_maybe_shared(arena.split().freeze()).ok()?;
            let entry = (name.clone(), v.clone());
            if s.values.len() < VALUES {
                s.values.push(entry);
            } else {
                let at = s.next_value;
                s.values[at] = entry;
                s.next_value = (at + 1) % VALUES;
            }
            Some(v)
        })
        .unwrap_or_else(|_| HeaderValue::from_bytes(bytes).ok())
}

/// The `date` value for `second` (Unix time), formatted once a second per thread.
pub(crate) fn date(second: u64) -> HeaderValue {
    let format = || {
        let mut cache = weir_proto::date::DateCache::new();
        // An IMF-fixdate is always a valid value.
        HeaderValue::from_maybe_shared(Bytes::copy_from_slice(cache.value_at(second)))
            .unwrap_or_else(|_| HeaderValue::from_static(""))
    };
    STORE
        .try_with(|s| {
            let mut s = s.borrow_mut();
            match &s.date {
                Some((at, v)) if *at == second => v.clone(),
                _ => {
                    let v = format();
                    s.date = Some((second, v.clone()));
                    v
                }
            }
        })
        .unwrap_or_else(|_| format())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each test runs on a thread of its own, so it starts with an empty store.
    #[test]
    fn small_payloads_share_one_buffer_taken_back_when_free() {
        let a = copy_small(b"hello");
        let b = copy_small(b"world");
        assert_eq!((&a[..], &b[..]), (&b"hello"[..], &b"world"[..]));
        assert_eq!(
            a.as_ptr().wrapping_add(5),
            b.as_ptr(),
            "adjacent in one arena"
        );
        let start = a.as_ptr();
        drop((a, b));
        // Fill past the arena's end, one piece alive at a time: with every earlier piece
        // dropped, the piece that does not fit lands at the arena's start again.
        let mut back_at_start = false;
        for _ in 0..=ARENA / SMALL {
            let piece = copy_small(&[1; SMALL]);
            back_at_start |= piece.as_ptr() == start;
        }
        assert!(back_at_start, "the arena was taken back, not replaced");
    }

    #[test]
    fn repeated_values_are_clones_and_the_kept_set_is_bounded() {
        let name = http::header::CONTENT_TYPE;
        let a = value(&name, b"text/plain").unwrap();
        let b = value(&name, b"text/plain").unwrap();
        assert_eq!(
            a.as_bytes().as_ptr(),
            b.as_bytes().as_ptr(),
            "the same bytes"
        );
        // Same bytes under another name: a value of its own.
        let c = value(&http::header::SERVER, b"text/plain").unwrap();
        assert_ne!(a.as_bytes().as_ptr(), c.as_bytes().as_ptr());
        assert!(value(&name, b"bad\nvalue").is_none());
        // New values are cut from one chunk, not allocated each.
        let (x, y) = (
            value(&name, b"x-new").unwrap(),
            value(&name, b"y-new").unwrap(),
        );
        assert_eq!(x.as_bytes().as_ptr().wrapping_add(5), y.as_bytes().as_ptr());
        for i in 0..VALUES * 2 {
            value(&name, format!("v{i}").as_bytes());
        }
        assert!(STORE.with(|s| s.borrow().values.len()) <= VALUES);
        let d1 = date(1_000_000_000);
        let d2 = date(1_000_000_000);
        assert_eq!(d1.as_bytes().as_ptr(), d2.as_bytes().as_ptr());
        assert_eq!(d1.as_bytes(), b"Sun, 09 Sep 2001 01:46:40 GMT");
    }
}
