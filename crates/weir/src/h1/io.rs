//! A connection's buffers and timed socket operations.
//!
//! One read buffer (`BytesMut`) holds heads, read-ahead body bytes and pipelined requests; one
//! write buffer (`Vec<u8>`) holds response heads, small bodies and chunk framing until they are
//! flushed together. Both are kept for the life of the connection, so a keep-alive request
//! allocates nothing here once they have grown to their working size.
//!
//! Every socket operation takes an optional deadline and uses the connection's single timer,
//! re-armed per operation (extending a registered tokio timer is an atomic store, not a
//! re-registration), so timeouts cost no allocation either.

use crate::transport::Stream;
use bytes::{Buf, BufMut, BytesMut};
use std::future::Future;
use std::io::{self, IoSlice};
use std::pin::Pin;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::time::{Instant, Sleep};

/// The outcome of a timed read.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Read {
    /// This many bytes were read.
    Data(usize),
    /// The peer closed its side.
    Eof,
    /// The deadline passed first.
    TimedOut,
}

#[derive(Debug)]
pub(crate) struct Io {
    pub(crate) stream: Stream,
    pub(crate) rbuf: BytesMut,
    pub(crate) wbuf: Vec<u8>,
    timer: Pin<Box<Sleep>>,
    read_buffer_size: usize,
}

impl Io {
    pub(crate) fn new(stream: Stream, read_buffer_size: usize) -> Self {
        Self {
            stream,
            rbuf: BytesMut::with_capacity(read_buffer_size),
            wbuf: Vec::with_capacity(4096),
            // Far in the future until an operation sets a real deadline.
            timer: Box::pin(tokio::time::sleep_until(far_future())),
            read_buffer_size,
        }
    }

    /// Runs `fut` until `deadline`; `None` if the deadline passed first.
    pub(crate) async fn timed<F: Future>(
        timer: &mut Pin<Box<Sleep>>,
        deadline: Option<Instant>,
        fut: F,
    ) -> Option<F::Output> {
        let Some(deadline) = deadline else {
            return Some(fut.await);
        };
        timer.as_mut().reset(deadline);
        tokio::select! {
            biased;
            out = fut => Some(out),
            () = timer.as_mut() => None,
        }
    }

    pub(crate) fn stream_and_timer(&mut self) -> (&mut Stream, &mut Pin<Box<Sleep>>) {
        (&mut self.stream, &mut self.timer)
    }

    /// Reads at most `max` bytes into the read buffer, growing it if needed.
    pub(crate) async fn read_to_buf(
        &mut self,
        max: usize,
        deadline: Option<Instant>,
    ) -> io::Result<Read> {
        let max = max.max(1);
        if self.rbuf.capacity() - self.rbuf.len() < max {
            // `reserve` first tries to reuse the buffer's own space (moving unread bytes to the
            // front) and only allocates when the buffer is truly too small.
            self.rbuf.reserve(max);
        }
        let Self {
            stream,
            rbuf,
            timer,
            ..
        } = self;
        let mut limited = rbuf.limit(max);
        let read = Self::timed(timer, deadline, stream.read_buf(&mut limited)).await;
        Ok(match read {
            None => Read::TimedOut,
            Some(Ok(0)) => Read::Eof,
            Some(Ok(n)) => Read::Data(n),
            Some(Err(e)) => return Err(e),
        })
    }

    /// Reads into `dst` directly (no buffer in between).
    pub(crate) async fn read_direct(
        &mut self,
        dst: &mut [u8],
        deadline: Option<Instant>,
    ) -> io::Result<Read> {
        let Self { stream, timer, .. } = self;
        Ok(match Self::timed(timer, deadline, stream.read(dst)).await {
            None => Read::TimedOut,
            Some(Ok(0)) => Read::Eof,
            Some(Ok(n)) => Read::Data(n),
            Some(Err(e)) => return Err(e),
        })
    }

    /// Writes the write buffer, then each of `tail`, completely. Returns `Ok(false)` if the
    /// deadline passed first.
    pub(crate) async fn write_all(
        &mut self,
        tail: &[&[u8]],
        deadline: Option<Instant>,
    ) -> io::Result<bool> {
        let Self {
            stream,
            wbuf,
            timer,
            ..
        } = self;
        let written = Self::timed(timer, deadline, write_parts(stream, wbuf, tail)).await;
        match written {
            None => Ok(false),
            Some(r) => {
                r?;
                wbuf.clear();
                Ok(true)
            }
        }
    }

    /// Shrinks a read buffer that grew for a large body back to its working size, keeping any
    /// pipelined bytes. Only happens after large bodies, so the allocation is not per request.
    pub(crate) fn shrink_read_buffer(&mut self, limit: usize) {
        if self.rbuf.capacity() > limit && self.rbuf.len() <= self.read_buffer_size / 2 {
            let mut fresh = BytesMut::with_capacity(self.read_buffer_size);
            fresh.extend_from_slice(&self.rbuf);
            self.rbuf = fresh;
        }
        if self.wbuf.capacity() > limit {
            self.wbuf = Vec::with_capacity(4096);
        }
    }

    /// Shuts down the write side and discards what the client still sends for a short while,
    /// so that closing does not turn into a reset that destroys the last response before the
    /// client has read it.
    pub(crate) async fn linger_close(&mut self, linger: std::time::Duration) {
        let deadline = Instant::now() + linger;
        let Self { stream, timer, .. } = self;
        let _ = Self::timed(timer, Some(deadline), stream.shutdown()).await;
        // Bounded in bytes as well as time: a fast client could otherwise keep the task busy.
        let mut scratch = [0u8; 16 * 1024];
        let mut discarded = 0usize;
        while discarded < 64 * 1024 * 1024 {
            match Self::timed(timer, Some(deadline), stream.read(&mut scratch)).await {
                Some(Ok(n)) if n > 0 => discarded += n,
                _ => break,
            }
        }
    }
}

/// Writes `head` then every part of `tail` with vectored writes.
async fn write_parts(stream: &mut Stream, head: &[u8], tail: &[&[u8]]) -> io::Result<()> {
    const MAX_PARTS: usize = 4;
    debug_assert!(tail.len() < MAX_PARTS);
    let mut parts: [&[u8]; MAX_PARTS] = [&[]; MAX_PARTS];
    parts[0] = head;
    let count = 1 + tail.len().min(MAX_PARTS - 1);
    parts[1..count].copy_from_slice(&tail[..count - 1]);
    let mut first = 0;
    loop {
        while first < count && parts[first].is_empty() {
            first += 1;
        }
        if first == count {
            return Ok(());
        }
        let slices = [
            IoSlice::new(parts[first]),
            IoSlice::new(parts.get(first + 1).copied().unwrap_or(&[])),
            IoSlice::new(parts.get(first + 2).copied().unwrap_or(&[])),
            IoSlice::new(parts.get(first + 3).copied().unwrap_or(&[])),
        ];
        let n = stream.write_vectored(&slices[..count - first]).await?;
        if n == 0 {
            return Err(io::ErrorKind::WriteZero.into());
        }
        let mut left = n;
        for part in &mut parts[first..count] {
            let take = left.min(part.len());
            part.advance(take);
            left -= take;
            if left == 0 {
                break;
            }
        }
    }
}

/// A deadline that never comes in practice (about 30 years).
pub(crate) fn far_future() -> Instant {
    Instant::now() + std::time::Duration::from_secs(86400 * 365 * 30)
}
