//! [`TlsStream`]: a server-side TLS connection, arranged for bulk uploads.
//!
//! rustls reads ciphertext in pieces of at most 4 KiB per `read_tls` call (its deframer buffer
//! grows 4 KiB at a time and shrinks when drained), and `tokio-rustls` hands out at most one
//! record (≤ 16 KiB of plaintext) per `poll_read`. Profiled on a 700 MiB upload, that was about
//! five `recv` system calls per record on the server, and one pass through weir's body-read
//! path per 16 KiB. Two layers fix that without touching the cryptography:
//!
//! - [`ReadAhead`], under rustls: one `recv` of up to 256 KiB, from which rustls's small reads
//!   are served. COPY: ciphertext, buffer → rustls's deframer buffer (a memcpy of
//!   data that is still in the CPU cache; it replaces about four system calls per record).
//! - [`TlsStream::poll_read`], above rustls: keeps decrypting records into the caller's
//!   buffer while ciphertext is at hand, so a handler's 1 MiB read takes as many records as
//!   have arrived, not one.
//!
//! rustls itself still copies each record's plaintext twice (into its own queue, then into the
//! caller's buffer); only its unbuffered API avoids that, at the price of driving the TLS state
//! machine by hand.
//!
//! The first of those copies goes into a new heap allocation per record, so its speed depends
//! on where the allocator puts it. glibc's `memcpy` moves a record with `rep movsb`, which on
//! some CPUs (AMD Zen 4 here) runs many times slower when the destination lies a few bytes past
//! the source modulo 4 KiB; and that is where the allocation lands when it directly follows
//! rustls's record buffer, whose size is a multiple of 4 KiB. Which connections meet it is a
//! matter of heap layout; it was the whole of the HTTP/2-over-TLS regression of issue 12
//! (docs/BENCHMARKS.md, "HTTP/2 over TLS uploads: the cause"). Reading with the unbuffered API,
//! records decrypted in place in [`ReadAhead`]'s buffer, would remove that copy altogether.

use super::{PeerAddr, Stream};
use std::io::{self, IoSlice};
use std::pin::Pin;
use std::task::{Context, Poll};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// The read-ahead buffer starts at this size, doubles each time a `recv` fills it, up to
/// [`READ_AHEAD_MAX`], and is released once drained after a `recv` that brought less than
/// an eighth of it (the client is not streaming): idle connections hold none.
const READ_AHEAD_MIN: usize = 32 * 1024;

/// The largest read-ahead: sixteen full records per `recv`. Measured on a 700 MiB upload
/// (`examples/upload_protocols.rs`, CPU time per GB on the server): 64 and 256 KiB both cut
/// the TLS server's cost against reading a record at a time, 256 KiB slightly more.
const READ_AHEAD_MAX: usize = 256 * 1024;

/// An established TLS connection (server side), over TCP or a Unix socket.
#[derive(Debug)]
pub struct TlsStream {
    inner: tokio_rustls::server::TlsStream<ReadAhead>,
}

impl TlsStream {
    pub(crate) fn new(inner: tokio_rustls::server::TlsStream<ReadAhead>) -> Self {
        Self { inner }
    }

    /// The client's address.
    pub fn peer_addr(&self) -> PeerAddr {
        self.inner.get_ref().0.stream.peer_addr()
    }

    /// The protocol the client chose by ALPN, if any.
    pub fn alpn_protocol(&self) -> Option<&[u8]> {
        self.inner.get_ref().1.alpn_protocol()
    }
}

impl AsyncRead for TlsStream {
    /// Decrypts records into `buf` until it is full or no more ciphertext is at hand.
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let inner = &mut self.get_mut().inner;
        let start = buf.filled().len();
        loop {
            let before = buf.filled().len();
            match Pin::new(&mut *inner).poll_read(cx, buf) {
                Poll::Ready(Ok(())) => {
                    let end = buf.filled().len();
                    // End of stream, or the caller's buffer is full.
                    if end == before || buf.remaining() == 0 {
                        return Poll::Ready(Ok(()));
                    }
                }
                // What was decrypted so far is returned; the error (or the wake-up registered
                // by `Pending`) comes again on the next call.
                Poll::Ready(Err(e)) if buf.filled().len() == start => return Poll::Ready(Err(e)),
                Poll::Ready(Err(_)) | Poll::Pending if buf.filled().len() > start => {
                    return Poll::Ready(Ok(()));
                }
                other => return other,
            }
        }
    }
}

impl AsyncWrite for TlsStream {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().inner).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_shutdown(cx)
    }
}

/// The socket under rustls, read in large pieces (see the module docs).
#[derive(Debug)]
pub(crate) struct ReadAhead {
    stream: Stream,
    /// `buf[start..end]` is unread ciphertext; empty when released.
    buf: Vec<u8>,
    start: usize,
    end: usize,
    /// The size of the next allocation.
    size: usize,
    /// The last `recv` brought little: release the buffer once it is drained.
    release: bool,
}

impl ReadAhead {
    pub(crate) fn new(stream: Stream) -> Self {
        Self {
            stream,
            buf: Vec::new(),
            start: 0,
            end: 0,
            size: READ_AHEAD_MIN,
            release: false,
        }
    }
}

impl AsyncRead for ReadAhead {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        out: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if this.start == this.end {
            if out.remaining() >= this.size {
                // A read this large gains nothing from the buffer.
                return Pin::new(&mut this.stream).poll_read(cx, out);
            }
            if this.buf.len() < this.size {
                this.buf.resize(this.size, 0);
            }
            let mut fill = ReadBuf::new(&mut this.buf);
            match Pin::new(&mut this.stream).poll_read(cx, &mut fill) {
                Poll::Ready(Ok(())) => {}
                other => return other,
            }
            let n = fill.filled().len();
            (this.start, this.end) = (0, n);
            if n == this.buf.len() {
                this.size = (this.size * 2).min(READ_AHEAD_MAX);
            }
            this.release = n < this.buf.len() / 8;
            if n == 0 {
                this.buf = Vec::new();
                return Poll::Ready(Ok(())); // end of stream
            }
        }
        let n = (this.end - this.start).min(out.remaining());
        out.put_slice(&this.buf[this.start..this.start + n]);
        this.start += n;
        if this.start == this.end && this.release {
            this.buf = Vec::new();
            this.size = READ_AHEAD_MIN;
        }
        Poll::Ready(Ok(()))
    }
}

impl AsyncWrite for ReadAhead {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().stream).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().stream).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.stream.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().stream).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().stream).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    #[tokio::test]
    async fn read_ahead_serves_small_reads_from_one_large_one() {
        let (a, mut b) = tokio::net::UnixStream::pair().unwrap();
        let data: Vec<u8> = (0..200_000u32).map(|i| (i % 251) as u8).collect();
        let expected = data.clone();
        let writer = tokio::spawn(async move {
            b.write_all(&data).await.unwrap();
        });
        let mut r = ReadAhead::new(Stream::Unix(a));
        let mut got = Vec::new();
        let mut small = [0u8; 1000];
        loop {
            let n = r.read(&mut small).await.unwrap();
            if n == 0 {
                break;
            }
            got.extend_from_slice(&small[..n]);
        }
        writer.await.unwrap();
        assert_eq!(got, expected);
        // Released at the end of the stream.
        assert!(r.buf.is_empty(), "{}", r.buf.len());
    }
}
