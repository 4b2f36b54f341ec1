//! [`BufferPool`]: the HTTP/1.1 connections' read and write buffers, shared by a server's
//! connections, so that a connection holds buffers only while it has bytes to work on.
//!
//! A connection takes a pair (read buffer, write buffer) when its socket becomes readable and
//! gives it back when it goes idle: its read buffer drained, its write buffer flushed, and a
//! read that found nothing. An idle keep-alive connection then holds no buffer at all, and the
//! number of buffers a server owns follows the connections that are busy at once, not those
//! open.
//!
//! Invariants: a pair in the pool is empty (both lengths 0), its read buffer has at least the
//! configured read-buffer capacity and at most [`MAX_POOLED_READ`] times it, so a buffer that
//! grew for a large body is not kept; the pool keeps at most [`MAX_POOLED`] pairs (more are
//! freed: a burst of connections must not pin its peak memory for ever). A keep-alive request
//! in steady state takes and gives back the same pair, so it allocates nothing: a pair is
//! allocated only when every pooled one is in use.
//!
//! A take and a give per request that finds its connection idle (every request at depth 1):
//! each first tries the calling thread's one-pair slot ([`THREAD_PAIR`]), then the shared
//! list behind one lock for the whole server. Without the slot, both worker threads took that
//! lock twice per request, and its cache line moved between cores each time. The slot never
//! allocates on a miss: a thread whose slot is empty takes from the shared list, so pairs left
//! in another thread's slot cost one pair per thread at most, never a new allocation while
//! spares exist.

use bytes::BytesMut;
use std::cell::Cell;
use std::sync::Mutex;

thread_local! {
    /// This thread's spare pair and the read size of the pool it fits (pairs are plain
    /// buffers: any pool of that read size may take it).
    static THREAD_PAIR: Cell<Option<(usize, Pair)>> = const { Cell::new(None) };
}

/// At most this many idle pairs are kept.
pub(crate) const MAX_POOLED: usize = 256;

/// A read buffer larger than this many times the configured size is not pooled.
const MAX_POOLED_READ: usize = 4;

/// The write buffer's starting capacity: a response head and a small body.
pub(crate) const WRITE_BUFFER_SIZE: usize = 4096;

/// A connection's read and write buffers.
pub(crate) struct Pair {
    pub(crate) read: BytesMut,
    pub(crate) write: Vec<u8>,
}

/// The idle pairs of one server's HTTP/1.1 connections.
pub(crate) struct BufferPool {
    read_size: usize,
    idle: Mutex<Vec<Pair>>,
}

impl BufferPool {
    /// An empty pool of read buffers of `read_size` bytes. The list of idle pairs is reserved
    /// whole now, so that giving back never allocates.
    pub(crate) fn new(read_size: usize) -> Self {
        Self {
            read_size,
            idle: Mutex::new(Vec::with_capacity(MAX_POOLED)),
        }
    }

    /// A pair: this thread's spare, a pooled one, or (all in use) a new one.
    pub(crate) fn take(&self) -> Pair {
        // `try_with`: during thread teardown the slot is gone; the shared list still works.
        let spare = THREAD_PAIR.try_with(Cell::take).ok().flatten();
        match spare {
            Some((size, pair)) if size == self.read_size => return pair,
            // Another pool's size: left where it was.
            Some(other) => {
                let _ = THREAD_PAIR.try_with(|slot| slot.set(Some(other)));
            }
            None => {}
        }
        if let Some(pair) = self.lock().pop() {
            return pair;
        }
        // ALLOCATION: only when every pooled pair is in use (a new busy connection).
        Pair {
            read: BytesMut::with_capacity(self.read_size),
            write: Vec::with_capacity(WRITE_BUFFER_SIZE),
        }
    }

    /// Gives a pair back (emptied here); freed instead when the pool is full or the read buffer
    /// is not of the working size.
    pub(crate) fn give(&self, mut pair: Pair) {
        // A read buffer whose front was consumed (`advance`) reports only what is after it as
        // capacity; emptied, `reserve` moves its start back over the whole allocation (no
        // allocation while the buffer is not shared), so it is kept, not freed and made anew.
        pair.read.clear();
        pair.read.reserve(self.read_size);
        let cap = pair.read.capacity();
        if cap < self.read_size
            || cap > self.read_size.saturating_mul(MAX_POOLED_READ)
            || pair.write.capacity() > self.read_size.max(WRITE_BUFFER_SIZE) * MAX_POOLED_READ
        {
            return;
        }
        pair.write.clear();
        // Into this thread's slot when it is empty.
        let pair = match THREAD_PAIR.try_with(|slot| {
            let held = slot.take();
            if held.is_none() {
                slot.set(Some((self.read_size, pair)));
                None
            } else {
                slot.set(held);
                Some(pair)
            }
        }) {
            Ok(Some(pair)) => pair,
            // Kept in the slot; or the thread is ending, and the pair was freed with the closure.
            Ok(None) | Err(_) => return,
        };
        let mut idle = self.lock();
        if idle.len() < MAX_POOLED {
            idle.push(pair);
        }
    }

    /// Idle pairs held now.
    #[cfg(test)]
    pub(crate) fn idle(&self) -> usize {
        self.lock().len()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Pair>> {
        // A panic while holding the lock leaves a valid list (push and pop only).
        self.idle
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pairs_are_reused_bounded_and_only_of_the_working_size() {
        let pool = BufferPool::new(1024);
        let mut a = pool.take();
        a.read.extend_from_slice(b"left over");
        let ptr = a.read.as_ptr();
        pool.give(a);
        // The first pair given back waits in this thread's slot, not in the shared list.
        assert_eq!(pool.idle(), 0);
        let b = pool.take();
        assert_eq!(b.read.as_ptr(), ptr, "the same buffer comes back");
        assert!(b.read.is_empty() && b.write.is_empty());
        // The slot full, the next one goes to the shared list.
        let c = pool.take();
        pool.give(b);
        pool.give(c);
        assert_eq!(pool.idle(), 1);
        let (b, c) = (pool.take(), pool.take());
        assert_eq!(pool.idle(), 0);
        assert_eq!(b.read.as_ptr(), ptr, "the slot's pair is taken first");
        // A read buffer that grew for a body is freed, not kept.
        let mut big = b;
        big.read.reserve(64 * 1024);
        pool.give(big);
        pool.give(c);
        assert_eq!(pool.idle(), 0, "c went to the slot, big was freed");
        // At most MAX_POOLED are kept (one more in the slot).
        let many: Vec<Pair> = (0..MAX_POOLED + 3).map(|_| pool.take()).collect();
        for p in many {
            pool.give(p);
        }
        assert_eq!(pool.idle(), MAX_POOLED);
    }

    /// The slot serves only pools of its pair's read size; another pool neither takes that
    /// pair nor loses it.
    #[test]
    fn a_thread_slot_is_kept_for_its_read_size() {
        let small = BufferPool::new(1024);
        let large = BufferPool::new(8192);
        let a = small.take();
        let ptr = a.read.as_ptr();
        small.give(a);
        let b = large.take();
        assert_ne!(b.read.as_ptr(), ptr);
        assert!(b.read.capacity() >= 8192);
        large.give(b);
        assert_eq!(large.idle(), 1, "the slot held small's pair");
        assert_eq!(small.take().read.as_ptr(), ptr);
    }
}
