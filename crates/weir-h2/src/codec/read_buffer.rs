//! weir patch (WEIR-PATCHES.md, "frame buffers"): the buffers received frames are read into are
//! reused, instead of one allocated per frame.
//!
//! Each frame is split off the read buffer and handed on without a copy: a DATA payload stays a
//! slice of that buffer until the application has consumed it. Upstream read through
//! tokio-util's `FramedRead` and `LengthDelimitedCodec`, whose buffer, shared with the frames
//! split off it, cannot grow in place: every frame that did not fit the rest of it was read into
//! a new allocation about the size of a frame, freed when the last frame in it was dropped. With
//! glibc's default thresholds each free gave the pages back to the kernel and the next
//! allocation faulted them in again (docs/ARCHITECTURE.md of weir, "weir-h2").
//!
//! Here a buffer that cannot take the next frame is parked in a process-wide pool and the
//! oldest parked buffer whose frames have all been dropped is taken instead
//! (`BytesMut::try_reclaim` succeeds only on the last handle to an allocation, so a buffer is
//! never written while a frame still points into it). A buffer is allocated only when every
//! parked one is still in use or too small. The pool holds at most [`POOL_BYTES`], whatever the
//! number of connections; beyond that the oldest parked buffer is let go, to be freed when its
//! frames are, as upstream.

use bytes::BytesMut;
use std::io;
use std::pin::Pin;
use std::sync::Mutex;
use std::task::{Context, Poll};
use tokio::io::AsyncRead;

/// Frame header length (RFC 9113 §4.1).
const HEADER_LEN: usize = 9;

/// The smallest buffer allocated: one frame of the default maximum size (RFC 9113 §4.2) with
/// its header, so an idle connection holds no more than upstream's.
const MIN_BUFFER_LEN: usize = 16_384 + HEADER_LEN;

/// The most read at once beyond the frame being completed: upstream's initial buffer. Frames
/// are cut from what was read, so this bounds how many small frames one read hands on (weir's
/// frame meter judges a control-frame flood read by read).
const READ_AHEAD: usize = 8 * 1024;

/// Bytes of buffers the process keeps parked for reuse: a few frames of the largest size weir
/// advertises for each connection that streams at once, a bound however many are idle.
pub(crate) const POOL_BYTES: usize = 8 << 20;

/// A frame whose length field exceeds the maximum frame size we advertised.
#[derive(Debug)]
pub(super) struct FrameTooLarge;

impl std::fmt::Display for FrameTooLarge {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("frame size too big")
    }
}

impl std::error::Error for FrameTooLarge {}

/// A buffer and the size of its allocation (a shared `BytesMut` reports only what is left).
#[derive(Debug)]
struct SizedBuffer {
    buf: BytesMut,
    size: usize,
}

/// Parked buffers, oldest first, and the sum of their sizes.
struct Pool {
    parked: Vec<SizedBuffer>,
    bytes: usize,
}

static POOL: Mutex<Pool> = Mutex::new(Pool {
    parked: Vec::new(),
    bytes: 0,
});

fn pool() -> std::sync::MutexGuard<'static, Pool> {
    // The pool's state is valid after any panic (a `Vec` and a sum updated together).
    POOL.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl Pool {
    /// The oldest parked buffer of at least `len` bytes that no frame points into, emptied.
    fn take(&mut self, len: usize) -> Option<SizedBuffer> {
        let index = self
            .parked
            .iter_mut()
            .position(|p| p.size >= len && p.buf.try_reclaim(p.size))?;
        let taken = self.parked.remove(index);
        self.bytes -= taken.size;
        Some(taken)
    }

    fn park(&mut self, mut parked: SizedBuffer) {
        parked.buf.clear();
        self.bytes += parked.size;
        self.parked.push(parked);
        while self.bytes > POOL_BYTES {
            let oldest = self.parked.remove(0);
            self.bytes -= oldest.size;
        }
    }
}

/// The read side of one connection: bytes read from it, cut into whole frames.
#[derive(Debug)]
pub(super) struct ReadBuffer {
    current: SizedBuffer,
    eof: bool,
}

impl ReadBuffer {
    pub(super) fn new() -> Self {
        ReadBuffer {
            current: SizedBuffer {
                buf: BytesMut::new(),
                size: 0,
            },
            eof: false,
        }
    }

    /// The next whole frame, header included; `None` at the end of the stream.
    pub(super) fn poll_frame<T: AsyncRead + Unpin>(
        &mut self,
        io: &mut T,
        cx: &mut Context<'_>,
        max_frame_size: usize,
    ) -> Poll<Option<io::Result<BytesMut>>> {
        loop {
            let buf = &self.current.buf;
            let needed = if buf.len() >= HEADER_LEN {
                let len =
                    (usize::from(buf[0]) << 16) | (usize::from(buf[1]) << 8) | usize::from(buf[2]);
                if len > max_frame_size {
                    return Poll::Ready(Some(Err(io::Error::new(
                        io::ErrorKind::InvalidData,
                        FrameTooLarge,
                    ))));
                }
                let total = HEADER_LEN + len;
                if buf.len() >= total {
                    return Poll::Ready(Some(Ok(self.current.buf.split_to(total))));
                }
                total
            } else {
                HEADER_LEN
            };
            if self.eof {
                return Poll::Ready(None);
            }
            self.make_room(needed);
            let limit = (needed - self.current.buf.len()).max(READ_AHEAD);
            let mut into = bytes::BufMut::limit(&mut self.current.buf, limit);
            let n = ready!(tokio_util::io::poll_read_buf(
                Pin::new(&mut *io),
                cx,
                &mut into
            ))?;
            if n == 0 {
                self.eof = true;
                if !self.current.buf.is_empty() {
                    return Poll::Ready(Some(Err(io::Error::new(
                        io::ErrorKind::Other,
                        "bytes remaining on stream",
                    ))));
                }
                return Poll::Ready(None);
            }
        }
    }

    /// Makes the current buffer able to hold `needed` bytes from its start.
    fn make_room(&mut self, needed: usize) {
        let current = &mut self.current;
        if current.buf.capacity() >= needed {
            return;
        }
        // In place, when no frame points into the buffer any more: the whole allocation.
        if current.size >= needed && current.buf.try_reclaim(current.size - current.buf.len()) {
            return;
        }
        let len = needed.max(MIN_BUFFER_LEN);
        let mut next = pool().take(len).unwrap_or_else(|| {
            // ALLOCATION: every parked buffer is still in use (or none is large enough).
            let buf = BytesMut::with_capacity(len);
            let size = buf.capacity();
            SizedBuffer { buf, size }
        });
        // COPY: the start of the next frame, less than a frame (upstream copied it as well).
        next.buf.extend_from_slice(&current.buf);
        let full = std::mem::replace(current, next);
        if full.size > 0 {
            pool().park(full);
        }
    }
}

impl Drop for ReadBuffer {
    fn drop(&mut self) {
        if self.current.size > 0 {
            let current = std::mem::replace(
                &mut self.current,
                SizedBuffer {
                    buf: BytesMut::new(),
                    size: 0,
                },
            );
            pool().park(current);
        }
    }
}
