//! [`H2Io`]: the byte stream under the `h2` crate: replays the bytes read while detecting the
//! cleartext preface, and passes what it reads through the [`FrameMeter`] before h2 sees it.
//!
//! Once the meter gives a verdict nothing more is read: h2 handles what it was given, and the
//! connection driver, woken here, closes the connection with GOAWAY and the verdict's error
//! code. After that h2 only writes (GOAWAY, then shutdown).
//!
//! `H2Io` borrows the stream rather than owning it: `h2` never hands its I/O back, and the
//! driver needs the stream after `h2` is done with it, for [`linger_close`].

use super::meter::{Fed, FrameMeter, MeterReport, PREFACE};
use crate::transport::Stream;
use bytes::BufMut;
use std::io::{self, IoSlice};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, ReadBuf};
use tokio::time::Instant;

/// The connection's stream as `h2` sees it.
pub(crate) struct H2Io<'s> {
    stream: &'s mut Stream,
    /// Bytes read before the stream was handed to h2 (the cleartext preface), replayed first.
    replay: [u8; PREFACE.len()],
    replay_pos: usize,
    replay_len: usize,
    meter: FrameMeter,
    report: Arc<MeterReport>,
}

impl<'s> H2Io<'s> {
    /// Wraps `stream`; `already_read` (at most 24 bytes: what preface detection consumed) is
    /// replayed before anything is read from the stream.
    pub(crate) fn new(
        stream: &'s mut Stream,
        already_read: &[u8],
        control_frame_budget: u32,
    ) -> Self {
        let mut replay = [0; PREFACE.len()];
        let replay_len = already_read.len().min(replay.len());
        replay[..replay_len].copy_from_slice(&already_read[..replay_len]);
        Self {
            stream,
            replay,
            replay_pos: 0,
            replay_len,
            meter: FrameMeter::new(control_frame_budget),
            report: Arc::new(MeterReport::default()),
        }
    }

    pub(crate) fn report(&self) -> Arc<MeterReport> {
        self.report.clone()
    }
}

impl AsyncRead for H2Io<'_> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if this.report.verdict().is_some() {
            // No wake-up is registered: the driver was woken when the verdict came, and on
            // that poll it closes the connection, after which h2 never reads again.
            return Poll::Pending;
        }
        let before = buf.filled().len();
        if this.replay_pos < this.replay_len {
            let n = (this.replay_len - this.replay_pos).min(buf.remaining());
            buf.put_slice(&this.replay[this.replay_pos..this.replay_pos + n]);
            this.replay_pos += n;
        } else {
            match Pin::new(&mut *this.stream).poll_read(cx, buf) {
                Poll::Ready(Ok(())) => {}
                other => return other,
            }
        }
        let read = buf.filled().len() - before;
        if read == 0 {
            return Poll::Ready(Ok(())); // EOF
        }
        // The new bytes live in `buf`, not in `this`: the meter reads them in place.
        match this.meter.feed(&buf.filled()[before..]) {
            Fed::Pass => {
                this.report.add_bytes(read);
                Poll::Ready(Ok(()))
            }
            Fed::Stop(verdict) => {
                this.report.add_bytes(read);
                this.report.set_verdict(verdict);
                // The driver must look at the report soon, even if h2 has nothing to say.
                cx.waker().wake_by_ref();
                Poll::Ready(Ok(()))
            }
        }
    }
}

impl AsyncWrite for H2Io<'_> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut *self.get_mut().stream).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut *self.get_mut().stream).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.stream.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut *self.get_mut().stream).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut *self.get_mut().stream).poll_shutdown(cx)
    }
}

/// How long a closing connection keeps reading (and discarding) what the client still sends.
const LINGER: Duration = Duration::from_secs(2);

/// How many bytes a closing connection discards at most: a client flooding the socket cannot
/// keep the task busy for the whole linger.
const LINGER_BYTES: usize = 4 * 1024 * 1024;

/// Closes the connection once `h2` is done with it, without destroying what it sent last.
///
/// Closing a socket whose receive queue holds unread bytes (a flooding client is still
/// writing when the server gives up on it) resets the connection: the kernel sends RST
/// instead of FIN, drops what it still held for the client (the end of a response, then the
/// GOAWAY that explains the close), and the client's reads fail. So the write side is shut
/// down first (FIN after the GOAWAY; with TLS, close_notify first), then what the client still
/// sends is read and discarded until it closes too, for at most [`LINGER`] and
/// [`LINGER_BYTES`]; the socket is closed when the caller drops it. This is HTTP/1.1's
/// lingering close (`h1::io::Io::linger_close`) after h2's last frame.
pub(crate) async fn linger_close(stream: &mut Stream, pool: &crate::buffer_pool::BufferPool) {
    let deadline = Instant::now() + LINGER;
    // The bytes discarded go to a pooled read buffer, not a scratch array: an array would live
    // in the connection's future, so in every connection's task, idle or not.
    let mut pair = None;
    let linger = async {
        // h2 shut the write side down already when it closed normally; again is harmless,
        // and covers the paths where the driver gave up on h2 first.
        if stream.shutdown().await.is_err() {
            return;
        }
        let scratch = &mut pair.insert(pool.take()).read;
        let room = scratch.capacity().max(1);
        let mut discarded = 0;
        while discarded < LINGER_BYTES {
            scratch.clear();
            match stream.read_buf(&mut (&mut *scratch).limit(room)).await {
                Ok(n) if n > 0 => discarded += n,
                // EOF: the client closed too; an error: nothing left to protect.
                _ => return,
            }
        }
        tracing::debug!("HTTP/2 client kept sending after the close; dropping it");
    };
    if tokio::time::timeout_at(deadline, linger).await.is_err() {
        tracing::debug!("HTTP/2 client did not close within the linger time");
    }
    if let Some(pair) = pair {
        pool.give(pair);
    }
}

#[cfg(test)]
mod tests {
    use super::super::meter::Verdict;
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    fn frame(kind: u8, flags: u8, payload: &[u8]) -> Vec<u8> {
        let len = payload.len();
        let mut f = vec![(len >> 16) as u8, (len >> 8) as u8, len as u8, kind, flags];
        f.extend_from_slice(&0u32.to_be_bytes());
        f.extend_from_slice(payload);
        f
    }

    /// Counts wake-ups.
    struct CountWakes(AtomicUsize);

    impl std::task::Wake for CountWakes {
        fn wake(self: Arc<Self>) {
            self.wake_by_ref();
        }

        fn wake_by_ref(self: &Arc<Self>) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    /// Writes `sent` into a socket pair and returns the reading end, with everything readable.
    async fn socket_holding(sent: &[u8]) -> Stream {
        let (a, mut b) = tokio::net::UnixStream::pair().unwrap();
        b.write_all(sent).await.unwrap();
        // Keep the writing end open: the reader must not see EOF.
        std::mem::forget(b);
        a.readable().await.unwrap();
        Stream::Unix(a)
    }

    #[tokio::test]
    async fn nothing_is_read_once_the_budget_is_spent() {
        let mut sent = PREFACE.to_vec();
        sent.extend(frame(0x6, 0, &[0; 8]));
        sent.extend(frame(0x6, 0, &[0; 8]));
        let spent_at = sent.len();
        sent.extend(frame(0x6, 0, &[0; 8]));
        let mut stream = socket_holding(&sent).await;
        let mut io = H2Io::new(&mut stream, &[], 2);
        let wakes = Arc::new(CountWakes(Default::default()));
        let waker = std::task::Waker::from(wakes.clone());
        let mut cx = Context::from_waker(&waker);
        // A read that ends exactly at the PING that spends the budget of two.
        let mut head = vec![0u8; spent_at];
        let mut buf = ReadBuf::new(&mut head);
        assert!(Pin::new(&mut io).poll_read(&mut cx, &mut buf).is_ready());
        assert_eq!(buf.filled().len(), spent_at);
        assert_eq!(io.report().verdict(), Some(Verdict::Flood));
        assert_eq!(wakes.0.load(Ordering::SeqCst), 1, "the driver is woken");
        // The third PING is in the socket, but is not read.
        let mut rest = [0u8; 64];
        let mut buf = ReadBuf::new(&mut rest);
        assert!(Pin::new(&mut io).poll_read(&mut cx, &mut buf).is_pending());
        assert_eq!(io.report().bytes(), spent_at as u64);
    }
}
