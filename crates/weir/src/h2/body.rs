//! An HTTP/2 request body: pull-based, with the pause threshold as the stream's flow-control
//! window.
//!
//! DATA frames arrive in `h2`'s buffers (the connection task reads them); the stream's window
//! bounds how many bytes the client may send ahead of the handler. Capacity goes back to the
//! client (`release_capacity`, which becomes a WINDOW_UPDATE) only when the handler has
//! consumed the bytes: copied them out, taken a chunk, or written them to a file. A handler that
//! stops reading stops its own stream, and no other.
//!
//! The window is fixed per connection (SETTINGS_INITIAL_WINDOW_SIZE); a request whose pause
//! threshold is lower keeps back `window - threshold` of consumed capacity, so that after the
//! first window its read-ahead is the threshold. A threshold above the window cannot widen it:
//! HTTP/2 gives every stream of a connection the same initial window.
//!
//! Where the bytes go: `read_body` copies from the received frames (the one user-space copy,
//! counted in `BodyStats::copied`: the frame is in h2's buffer, the caller owns its own);
//! `read_body_chunk` hands the frame's `Bytes` over without a copy; `body_to_file` writes them
//! from h2's buffer (the kernel's copy into the page cache is the only one). There is no
//! splice: the bytes have passed through user space to be de-framed (and decrypted, over TLS).

use crate::config::Config;
use crate::h2::stream::stream_error;
use crate::stats::BodyStats;
use crate::{Error, Request};
use bytes::Bytes;
use h2::RecvStream;
use std::fs::File;
use std::future::poll_fn;
use std::io::Write;
use std::task::Poll;
use std::time::Duration;
use tokio::time::Instant;
use weir_proto::Framing;

/// Why the body cannot be read any more (repeated to every later read).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Broken {
    TooLarge,
    Timeout,
    Disconnect,
    Protocol,
}

impl Broken {
    fn error(self) -> Error {
        match self {
            Self::TooLarge => Error::too_large(),
            Self::Timeout => Error::timeout(),
            Self::Disconnect => Error::disconnect(None),
            Self::Protocol => Error::protocol(weir_proto::ProtoError::InvalidContentLength),
        }
    }
}

/// The body half of an HTTP/2 stream.
pub(crate) struct BodyIn {
    recv: RecvStream,
    /// Received and not yet handed to the handler.
    chunk: Bytes,
    done: bool,
    pub(crate) max_size: Option<u64>,
    declared: Option<u64>,
    /// The stream's flow-control window (the most the client may send ahead).
    window: usize,
    pub(crate) pause_threshold: usize,
    /// Consumed bytes whose capacity is kept back because the threshold is below the window.
    withheld: usize,
    continue_pending: bool,
    broken: Option<Broken>,
    pub(crate) stats: BodyStats,
    min_rate: Option<crate::DataRate>,
    received_wire: u64,
    waited: Duration,
    /// The request's trailer fields (a HEADERS frame after the DATA), once the body ended.
    pub(crate) trailers: Option<http::HeaderMap>,
}

impl BodyIn {
    pub(crate) fn new(recv: RecvStream, head: &Request, window: usize, config: &Config) -> Self {
        let done = recv.is_end_stream();
        let expects_continue = head
            .header("expect")
            .is_some_and(|v| v.eq_ignore_ascii_case(b"100-continue"));
        Self {
            recv,
            chunk: Bytes::new(),
            done,
            max_size: config.max_body_size,
            declared: match head.framing() {
                Framing::Length(n) => Some(n),
                Framing::Chunked => None,
            },
            window,
            pause_threshold: window,
            withheld: 0,
            continue_pending: expects_continue && !done,
            broken: None,
            stats: BodyStats::default(),
            min_rate: config.min_body_rate,
            received_wire: 0,
            waited: Duration::ZERO,
            trailers: None,
        }
    }

    pub(crate) fn is_done(&self) -> bool {
        self.done && self.chunk.is_empty()
    }

    /// Whether the handler must be sent `100 Continue` before its first read (and clears it).
    pub(crate) fn take_continue(&mut self) -> bool {
        std::mem::take(&mut self.continue_pending)
    }

    pub(crate) fn note_continue_sent(&mut self) {
        self.continue_pending = false;
    }

    /// Sets the pause threshold; capacity kept back beyond the new need is given back.
    pub(crate) fn set_pause_threshold(&mut self, bytes: usize) {
        self.pause_threshold = bytes.max(Config::MIN_PAUSE_THRESHOLD);
        let keep = self.window.saturating_sub(self.pause_threshold);
        if self.withheld > keep {
            let give = self.withheld - keep;
            self.withheld = keep;
            let _ = self.recv.flow_control().release_capacity(give);
        }
    }

    /// The read-ahead in force: the threshold, at most the window.
    pub(crate) fn effective_threshold(&self) -> usize {
        self.pause_threshold.min(self.window)
    }

    fn check_start(&mut self) -> Result<(), Error> {
        if let Some(b) = self.broken {
            return Err(b.error());
        }
        if let (Some(max), Some(len)) = (self.max_size, self.declared) {
            if len > max {
                return Err(self.break_with(Broken::TooLarge));
            }
        }
        Ok(())
    }

    fn break_with(&mut self, b: Broken) -> Error {
        self.broken.get_or_insert(b);
        b.error()
    }

    /// Gives back the capacity of `n` consumed bytes, keeping back what a threshold below the
    /// window requires.
    fn consumed(&mut self, n: usize) {
        let keep = self.window.saturating_sub(self.pause_threshold);
        let hold = keep.saturating_sub(self.withheld).min(n);
        self.withheld += hold;
        if n > hold {
            // Fails only if the stream is already closed, when capacity no longer matters.
            let _ = self.recv.flow_control().release_capacity(n - hold);
        }
    }

    /// Accounts a frame's payload as received, enforcing the maximum body size.
    fn accept_frame(&mut self, data: &Bytes) -> Result<(), Error> {
        self.stats.received += data.len() as u64;
        self.received_wire += data.len() as u64;
        let buffered = self.recv.flow_control().used_capacity();
        if buffered > self.stats.peak_buffered {
            self.stats.peak_buffered = buffered;
        }
        match self.max_size {
            Some(max) if self.stats.received > max => Err(self.break_with(Broken::TooLarge)),
            _ => Ok(()),
        }
    }

    /// The deadline for the next wait under the minimum data rate, and when the wait starts.
    fn deadline(&self) -> (Option<Instant>, Instant) {
        let now = Instant::now();
        let Some(rate) = self.min_rate else {
            return (None, now);
        };
        let earned = Duration::from_secs_f64(
            self.received_wire as f64 / rate.bytes_per_second.max(1) as f64,
        );
        let allowed = earned.max(rate.grace).saturating_sub(self.waited);
        (Some(now + allowed), now)
    }

    /// Copies received payload into `dst`, taking as many already-received frames as fit and
    /// waiting only when nothing has arrived. `Ok(0)` at the end of the body.
    pub(crate) async fn read(&mut self, dst: &mut [u8]) -> Result<usize, Error> {
        self.check_start()?;
        if dst.is_empty() || self.is_done() {
            return Ok(0);
        }
        let (deadline, started) = self.deadline();
        let fill = poll_fn(|cx| {
            let mut n = 0;
            loop {
                if !self.chunk.is_empty() {
                    let take = self.chunk.len().min(dst.len() - n);
                    // COPY: the frame is in h2's buffer; the caller owns `dst`.
                    dst[n..n + take].copy_from_slice(&self.chunk[..take]);
                    let _ = self.chunk.split_to(take);
                    n += take;
                    if n == dst.len() {
                        return Poll::Ready(Ok(n));
                    }
                }
                if self.done {
                    return Poll::Ready(Ok(n));
                }
                match self.recv.poll_data(cx) {
                    Poll::Ready(Some(Ok(data))) => {
                        if let Err(e) = self.accept_frame(&data) {
                            return Poll::Ready(if n > 0 { Ok(n) } else { Err(e) });
                        }
                        self.chunk = data;
                    }
                    Poll::Ready(None) => self.end(cx),
                    Poll::Ready(Some(Err(e))) => {
                        // Deliver what was copied; the error comes with the next read.
                        let e = self.fail(e);
                        return Poll::Ready(if n > 0 { Ok(n) } else { Err(e) });
                    }
                    Poll::Pending if n > 0 => return Poll::Ready(Ok(n)),
                    Poll::Pending => return Poll::Pending,
                }
            }
        });
        let out = within(deadline, fill).await;
        let n = self.settle(out, started)?;
        self.consumed(n);
        self.stats.copied += n as u64;
        Ok(n)
    }

    /// Waits until a frame's payload is at hand (it stays in h2's buffer, counted against the
    /// stream window as before): `Ok(true)`, or `Ok(false)` at the end of the body.
    pub(crate) async fn wait(&mut self) -> Result<bool, Error> {
        self.check_start()?;
        if !self.chunk.is_empty() {
            return Ok(true);
        }
        if self.done {
            return Ok(false);
        }
        let (deadline, started) = self.deadline();
        let poll = |cx: &mut std::task::Context<'_>| {
            let data = self.recv.poll_data(cx);
            if let Poll::Ready(None) = data {
                self.end(cx);
            }
            data
        };
        let next = within(deadline, poll_fn(poll)).await;
        match self.settle(next.map(Ok), started)? {
            Some(Ok(data)) => {
                self.accept_frame(&data)?;
                self.chunk = data;
                Ok(!self.chunk.is_empty() || !self.done)
            }
            Some(Err(e)) => Err(self.fail(e)),
            None => Ok(false),
        }
    }

    /// The next received frame's payload, handed over without a copy. `Ok(None)` at the end.
    pub(crate) async fn read_chunk(&mut self) -> Result<Option<Bytes>, Error> {
        self.next_piece(usize::MAX).await
    }

    /// The next piece of the body, at most `max` bytes of the current frame (no copy: the
    /// rest of the frame stays for the next call).
    async fn next_piece(&mut self, max: usize) -> Result<Option<Bytes>, Error> {
        self.check_start()?;
        if self.chunk.is_empty() && !self.done {
            let (deadline, started) = self.deadline();
            let poll = |cx: &mut std::task::Context<'_>| {
                let data = self.recv.poll_data(cx);
                if let Poll::Ready(None) = data {
                    self.end(cx);
                }
                data
            };
            let next = within(deadline, poll_fn(poll)).await;
            match self.settle(next.map(Ok), started)? {
                Some(Ok(data)) => {
                    self.accept_frame(&data)?;
                    self.chunk = data;
                }
                Some(Err(e)) => return Err(self.fail(e)),
                None => {}
            }
        }
        if self.chunk.is_empty() {
            return Ok(None);
        }
        let take = self.chunk.len().min(max);
        let piece = if take == self.chunk.len() {
            std::mem::take(&mut self.chunk)
        } else {
            self.chunk.split_to(take)
        };
        self.consumed(piece.len());
        Ok(Some(piece))
    }

    /// Writes at most `limit` more body bytes to `file`; returns the payload bytes written
    /// (fewer than `limit` only at the end of the body). Writes are synchronous on the
    /// stream's task, as for HTTP/1.1 (page-cache writes return in microseconds; a hop to a
    /// blocking pool per write halved throughput when measured).
    pub(crate) async fn write_to_file(
        &mut self,
        file: &mut File,
        limit: u64,
    ) -> Result<u64, Error> {
        let mut written = 0u64;
        while written < limit {
            let max = usize::try_from(limit - written).unwrap_or(usize::MAX);
            let Some(piece) = self.next_piece(max).await? else {
                break;
            };
            // COPY (kernel): from h2's buffer into the page cache.
            file.write_all(&piece)?;
            // `next_piece` already gave the capacity back: the bytes left h2's buffer.
            self.stats.copied += piece.len() as u64;
            written += piece.len() as u64;
        }
        Ok(written)
    }

    /// The stream's receiving half while the client may still send body bytes (it has not
    /// ended the stream, and the body has not failed): for `H2Stream::finish` to let the rest
    /// arrive after an early response.
    pub(crate) fn unfinished(&mut self) -> Option<&mut RecvStream> {
        (!self.done && self.broken.is_none()).then_some(&mut self.recv)
    }

    /// The DATA frames ended: takes the trailers, which h2 has by then if the client sent any
    /// (`poll_data` ends before a trailing HEADERS frame, and only once it is received).
    fn end(&mut self, cx: &mut std::task::Context<'_>) {
        self.done = true;
        if let Poll::Ready(Ok(Some(trailers))) = self.recv.poll_trailers(cx) {
            self.trailers = Some(trailers);
        }
    }

    fn fail(&mut self, e: h2::Error) -> Error {
        let error = stream_error(e);
        let broken = if error.is_protocol() {
            Broken::Protocol
        } else {
            Broken::Disconnect
        };
        self.broken.get_or_insert(broken);
        error
    }

    /// Accounts a finished wait on the client; `None` means the deadline passed.
    fn settle<T>(&mut self, out: Option<Result<T, Error>>, started: Instant) -> Result<T, Error> {
        self.waited += started.elapsed();
        match out {
            Some(r) => r,
            None => Err(self.break_with(Broken::Timeout)),
        }
    }
}

/// Runs `wait` until `deadline`; `None` if the deadline passed first.
async fn within<F: Future>(deadline: Option<Instant>, wait: F) -> Option<F::Output> {
    match deadline {
        None => Some(wait.await),
        Some(d) => tokio::time::timeout_at(d, wait).await.ok(),
    }
}
