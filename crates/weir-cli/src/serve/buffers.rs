//! A pool of upload buffers, so that an upload allocates nothing in steady state.
//!
//! A hashed upload reads the socket straight into one of these (`Exchange::read_body` reads
//! directly into a buffer this large when nothing is read ahead), then hashes and writes from it:
//! the socket → buffer read is the only user-space copy. The handler is shared by every
//! connection and weir gives it no per-connection slot, so buffers are lent per upload instead;
//! a returned buffer is reused by the next upload on any connection. The lock is taken twice per
//! upload, never per read.

use std::ops::{Deref, DerefMut};
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
    idle: Arc<Mutex<Vec<Box<[u8]>>>>,
}

impl BufferPool {
    /// Lends a buffer (allocated only if none is idle).
    pub(crate) fn take(&self) -> PooledBuffer {
        let reused = self.idle.lock().ok().and_then(|mut idle| idle.pop());
        // ALLOCATION: only when no idle buffer is left (the first uploads, or a burst).
        let buf = reused.unwrap_or_else(|| vec![0u8; UPLOAD_BUFFER].into_boxed_slice());
        PooledBuffer {
            buf: Some(buf),
            idle: self.idle.clone(),
        }
    }

    #[cfg(test)]
    fn idle(&self) -> usize {
        self.idle.lock().map(|i| i.len()).unwrap_or(0)
    }
}

/// A lent buffer; goes back to the pool on drop.
pub(crate) struct PooledBuffer {
    buf: Option<Box<[u8]>>,
    idle: Arc<Mutex<Vec<Box<[u8]>>>>,
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
        if let (Some(buf), Ok(mut idle)) = (self.buf.take(), self.idle.lock()) {
            if idle.len() < KEEP_IDLE {
                idle.push(buf);
            }
        }
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
        drop(many);
        drop(b);
        assert_eq!(pool.idle(), KEEP_IDLE);
    }
}
