//! [`H2Io`]: the byte stream under the `h2` crate: replays the bytes read while detecting the
//! cleartext preface, and meters the frames the client sends.
//!
//! The meter follows frame boundaries in the bytes as they are read (nine-byte headers, payloads
//! skipped by length: O(1) per read, no copy), for two things the `h2` crate does not do:
//! - it counts bytes received, for the adaptive window's bandwidth-delay estimate;
//! - it keeps a budget of control frames (PING, SETTINGS, PRIORITY, RST_STREAM, unknown types):
//!   each costs one token, each HEADERS or non-empty DATA frame earns one back. When the budget
//!   is spent nothing more is read (h2 handles what it already holds: one read's worth), and
//!   the connection driver closes the connection with GOAWAY(ENHANCE_YOUR_CALM).
//!   `h2` already bounds the *memory* of such floods (it stops reading until a PING or
//!   SETTINGS is acknowledged); the budget bounds the *work*, for a client that reads the
//!   acknowledgements as fast as it floods.
//!
//! The meter runs in the connection's task (it is inside the connection's I/O), and publishes to
//! the driver through relaxed atomics read after each poll.
//!
//! `H2Io` borrows the stream rather than owning it: `h2` never hands its I/O back, and the
//! driver needs the stream after `h2` is done with it, for [`linger_close`].

use crate::transport::Stream;
use std::io::{self, IoSlice};
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, ReadBuf};
use tokio::time::Instant;

/// The HTTP/2 client connection preface (RFC 9113 §3.4).
pub(crate) const PREFACE: &[u8; 24] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

/// Frame header length (RFC 9113 §4.1).
const FRAME_HEADER_LEN: usize = 9;

/// What the meter tells the connection driver.
#[derive(Debug, Default)]
pub(crate) struct MeterReport {
    /// Bytes read from the client so far.
    pub(crate) bytes: AtomicU64,
    /// The control-frame budget is spent.
    pub(crate) flooded: AtomicBool,
}

impl MeterReport {
    pub(crate) fn bytes(&self) -> u64 {
        self.bytes.load(Ordering::Relaxed)
    }

    pub(crate) fn is_flooded(&self) -> bool {
        self.flooded.load(Ordering::Relaxed)
    }
}

/// Follows frame boundaries in the client's byte stream.
#[derive(Debug)]
struct FrameMeter {
    /// Preface bytes still to skip.
    preface_left: usize,
    header: [u8; FRAME_HEADER_LEN],
    header_len: usize,
    /// Payload bytes of the current frame still to skip.
    payload_left: usize,
    tokens: u32,
    budget: u32,
}

impl FrameMeter {
    fn new(budget: u32) -> Self {
        Self {
            preface_left: PREFACE.len(),
            header: [0; FRAME_HEADER_LEN],
            header_len: 0,
            payload_left: 0,
            tokens: budget,
            budget,
        }
    }

    /// Feeds bytes as read; returns false once the control-frame budget is spent.
    fn feed(&mut self, mut data: &[u8]) -> bool {
        while !data.is_empty() {
            if self.preface_left > 0 {
                let n = self.preface_left.min(data.len());
                self.preface_left -= n;
                data = &data[n..];
            } else if self.payload_left > 0 {
                let n = self.payload_left.min(data.len());
                self.payload_left -= n;
                data = &data[n..];
            } else {
                let n = (FRAME_HEADER_LEN - self.header_len).min(data.len());
                self.header[self.header_len..self.header_len + n].copy_from_slice(&data[..n]);
                self.header_len += n;
                data = &data[n..];
                if self.header_len == FRAME_HEADER_LEN {
                    self.header_len = 0;
                    let h = self.header;
                    let len = usize::from(h[0]) << 16 | usize::from(h[1]) << 8 | usize::from(h[2]);
                    self.payload_left = len;
                    self.account(h[3], h[4], len);
                }
            }
        }
        self.tokens > 0
    }

    fn account(&mut self, kind: u8, flags: u8, len: usize) {
        const ACK: u8 = 0x1;
        let cost = match kind {
            // DATA with payload, HEADERS: a request's work earns budget back.
            0x0 if len > 0 => -1,
            0x1 => -1,
            // PRIORITY, RST_STREAM: cost.
            0x2 | 0x3 => 1,
            // SETTINGS, PING: cost unless they acknowledge ours.
            0x4 | 0x6 if flags & ACK == 0 => 1,
            // Empty DATA (h2 bounds these itself), acknowledgements, PUSH_PROMISE (an error from
            // a client), GOAWAY, WINDOW_UPDATE (a client reading a large response sends many),
            // CONTINUATION (bounded by h2 with the header list size).
            0x0 | 0x4..=0x9 => 0,
            // Unknown frame types are ignored by h2, but still read and parsed.
            _ => 1,
        };
        if cost > 0 {
            self.tokens = self.tokens.saturating_sub(1);
        } else if cost < 0 && self.tokens > 0 {
            self.tokens = (self.tokens + 1).min(self.budget);
        }
    }
}

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
            meter: FrameMeter::new(control_frame_budget.max(1)),
            report: Arc::new(MeterReport::default()),
        }
    }

    pub(crate) fn report(&self) -> Arc<MeterReport> {
        self.report.clone()
    }

    fn observe(&mut self, data: &[u8], cx: &mut Context<'_>) {
        self.report
            .bytes
            .fetch_add(data.len() as u64, Ordering::Relaxed);
        if !self.meter.feed(data) && !self.report.flooded.swap(true, Ordering::Relaxed) {
            // Make sure the driver looks at the report soon, even if h2 has nothing to say.
            cx.waker().wake_by_ref();
        }
    }
}

impl AsyncRead for H2Io<'_> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if this.report.is_flooded() {
            // Nothing more is read once the budget is spent, so h2 stops parsing (and
            // answering) the flood. No wake-up is registered: `observe` woke the driver when
            // the budget ran out, and on that poll it closes the connection, after which h2
            // only writes (GOAWAY, then shutdown) and never reads again.
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
        // The new bytes live in `buf`, not in `this`: the meter reads them in place.
        this.observe(&buf.filled()[before..], cx);
        Poll::Ready(Ok(()))
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
pub(crate) async fn linger_close(stream: &mut Stream) {
    let deadline = Instant::now() + LINGER;
    let linger = async {
        // h2 shut the write side down already when it closed normally; again is harmless,
        // and covers the paths where the driver gave up on h2 first.
        if stream.shutdown().await.is_err() {
            return;
        }
        // On the stack, not the heap: this future lives in the connection's future next to
        // HTTP/1.1's, which holds a read buffer of this size anyway.
        let mut scratch = [0u8; 16 * 1024];
        let mut discarded = 0;
        while discarded < LINGER_BYTES {
            match stream.read(&mut scratch).await {
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
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(kind: u8, flags: u8, payload: &[u8]) -> Vec<u8> {
        let len = payload.len();
        let mut f = vec![(len >> 16) as u8, (len >> 8) as u8, len as u8, kind, flags];
        f.extend_from_slice(&1u32.to_be_bytes());
        f.extend_from_slice(payload);
        f
    }

    #[test]
    fn pings_spend_the_budget_and_requests_earn_it_back() {
        let mut m = FrameMeter::new(3);
        assert!(m.feed(PREFACE));
        assert!(m.feed(&frame(0x4, 0, &[]))); // SETTINGS
        assert!(m.feed(&frame(0x6, 0, &[0; 8]))); // PING
        assert!(m.feed(&frame(0x1, 0x4, &[0x82]))); // HEADERS earns one back
        assert!(m.feed(&frame(0x6, 0x1, &[0; 8]))); // PING ACK is free
        assert!(m.feed(&frame(0x6, 0, &[0; 8])));
        assert!(!m.feed(&frame(0x6, 0, &[0; 8])));
    }

    /// Counts wake-ups.
    struct CountWakes(std::sync::atomic::AtomicUsize);

    impl std::task::Wake for CountWakes {
        fn wake(self: Arc<Self>) {
            self.wake_by_ref();
        }

        fn wake_by_ref(self: &Arc<Self>) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    #[tokio::test]
    async fn nothing_is_read_once_the_budget_is_spent() {
        let (a, mut b) = tokio::net::UnixStream::pair().unwrap();
        let mut sent = PREFACE.to_vec();
        sent.extend(frame(0x6, 0, &[0; 8]));
        sent.extend(frame(0x6, 0, &[0; 8]));
        let spent_at = sent.len();
        sent.extend(frame(0x6, 0, &[0; 8]));
        b.write_all(&sent).await.unwrap();
        a.readable().await.unwrap();
        let mut stream = Stream::Unix(a);
        let mut io = H2Io::new(&mut stream, &[], 2);
        let wakes = Arc::new(CountWakes(Default::default()));
        let waker = std::task::Waker::from(wakes.clone());
        let mut cx = Context::from_waker(&waker);
        // A read that ends exactly at the PING that spends the budget of two.
        let mut head = vec![0u8; spent_at];
        let mut buf = ReadBuf::new(&mut head);
        assert!(Pin::new(&mut io).poll_read(&mut cx, &mut buf).is_ready());
        assert_eq!(buf.filled().len(), spent_at);
        assert!(io.report().is_flooded());
        assert_eq!(wakes.0.load(Ordering::SeqCst), 1, "the driver is woken");
        // The third PING is in the socket, but is not read.
        let mut rest = [0u8; 64];
        let mut buf = ReadBuf::new(&mut rest);
        assert!(Pin::new(&mut io).poll_read(&mut cx, &mut buf).is_pending());
        assert_eq!(io.report().bytes(), spent_at as u64);
    }

    #[test]
    fn frames_split_at_every_offset_are_followed() {
        let mut stream = PREFACE.to_vec();
        stream.extend(frame(0x0, 0, &[7; 100]));
        for _ in 0..5 {
            stream.extend(frame(0x6, 0, &[0; 8]));
        }
        for split in 0..stream.len() {
            // Five PINGs spend a budget of five (the DATA frame earns nothing: it is full).
            let mut m = FrameMeter::new(5);
            m.feed(&stream[..split]);
            assert!(!m.feed(&stream[split..]), "split at {split}");
            let mut m = FrameMeter::new(6);
            m.feed(&stream[..split]);
            assert!(m.feed(&stream[split..]), "split at {split}");
        }
    }
}
