//! A pool of upload buffers, so that an upload allocates nothing in steady state.
//!
//! A hashed upload reads the socket straight into one of these (`Exchange::read_body` reads
//! directly into a buffer this large when nothing is read ahead), then hashes and writes from it:
//! the socket → buffer read is the only user-space copy. The handler is shared by every
//! connection and weir gives it no per-connection slot, so buffers are lent per upload instead;
//! a returned buffer is reused by the next upload on any connection. The lock is taken twice per
//! buffer lent (a pipelined upload borrows two: one is hashed while the other is filled), never
//! per read. A buffer held by a hash job comes back when the job's result is dropped, on
//! whatever thread that happens.

use std::ops::{Deref, DerefMut};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

/// Bytes per upload buffer. Large enough that one read moves what the socket holds (loopback
/// reads return up to a few hundred KiB), so reads and writes are few; 256 KiB writes measured
/// best on this kind of machine, and a read returns at most what arrived.
pub(crate) const UPLOAD_BUFFER: usize = 512 * 1024;

/// Idle buffers kept for reuse; beyond this, returned buffers are freed (a burst of concurrent
/// uploads does not pin its memory forever).
const KEEP_IDLE: usize = 16;

#[derive(Debug, Default)]
pub(crate) struct BufferPool {
    shared: Arc<Shared>,
}

#[derive(Debug, Default)]
struct Shared {
    idle: Mutex<Vec<Box<[u8]>>>,
    /// Buffers lent and not yet returned.
    lent: AtomicUsize,
}

impl BufferPool {
    /// Lends a buffer (allocated only if none is idle).
    pub(crate) fn take(&self) -> PooledBuffer {
        let reused = self.shared.idle.lock().ok().and_then(|mut idle| idle.pop());
        // ALLOCATION: only when no idle buffer is left (the first uploads, or a burst).
        let buf = reused.unwrap_or_else(|| vec![0u8; UPLOAD_BUFFER].into_boxed_slice());
        self.shared.lent.fetch_add(1, Ordering::Relaxed);
        PooledBuffer {
            buf: Some(buf),
            pool: Arc::clone(&self.shared),
        }
    }

    /// Buffers lent out now: 0 when no upload runs and no hash job holds one.
    pub(crate) fn lent(&self) -> usize {
        self.shared.lent.load(Ordering::Relaxed)
    }

    #[cfg(test)]
    fn idle(&self) -> usize {
        self.shared.idle.lock().map(|i| i.len()).unwrap_or(0)
    }
}

/// A lent buffer; goes back to the pool on drop.
pub(crate) struct PooledBuffer {
    buf: Option<Box<[u8]>>,
    pool: Arc<Shared>,
}

impl PooledBuffer {
    /// Gives the memory back to the pool now; the buffer is empty from then on (it derefs to
    /// `&[]`), and dropping it does nothing more. For a holder that must keep the value (a
    /// hash result waiting for its next bytes) but not the memory.
    pub(crate) fn release(&mut self) {
        if let Some(buf) = self.buf.take() {
            if let Ok(mut idle) = self.pool.idle.lock() {
                if idle.len() < KEEP_IDLE {
                    idle.push(buf);
                }
            }
            self.pool.lent.fetch_sub(1, Ordering::Relaxed);
        }
    }

    /// Whether [`PooledBuffer::release`] gave the memory back.
    pub(crate) fn is_released(&self) -> bool {
        self.buf.is_none()
    }
}

impl AsRef<[u8]> for PooledBuffer {
    fn as_ref(&self) -> &[u8] {
        self
    }
}

impl Deref for PooledBuffer {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        self.buf.as_deref().unwrap_or(&[])
    }
}

impl DerefMut for PooledBuffer {
    fn deref_mut(&mut self) -> &mut [u8] {
        self.buf.as_deref_mut().unwrap_or(&mut [])
    }
}

impl Drop for PooledBuffer {
    fn drop(&mut self) {
        self.release();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buffers_are_reused_and_bounded() {
        let pool = BufferPool::default();
        let mut a = pool.take();
        a[0] = 7;
        let ptr = a.as_ptr();
        drop(a);
        assert_eq!(pool.idle(), 1);
        let b = pool.take();
        assert_eq!(b.as_ptr(), ptr, "the idle buffer is lent again");
        assert_eq!(b.len(), UPLOAD_BUFFER);
        let many: Vec<_> = (0..KEEP_IDLE + 5).map(|_| pool.take()).collect();
        assert_eq!(pool.lent(), KEEP_IDLE + 6);
        drop(many);
        drop(b);
        assert_eq!(pool.idle(), KEEP_IDLE);
        assert_eq!(pool.lent(), 0);
    }

    #[test]
    fn a_released_buffer_is_back_in_the_pool_before_it_is_dropped() {
        let pool = BufferPool::default();
        let mut a = pool.take();
        assert!(!a.is_released());
        a.release();
        assert!(a.is_released());
        assert_eq!((pool.lent(), pool.idle(), a.len()), (0, 1, 0));
        a.release();
        drop(a);
        assert_eq!((pool.lent(), pool.idle()), (0, 1));
    }
}
