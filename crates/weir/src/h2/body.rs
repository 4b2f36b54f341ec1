//! An HTTP/2 request body: pull-based, with the pause threshold as the stream's flow-control
//! window.
//!
//! DATA frames arrive in `h2`'s buffers (the connection task reads them); the stream's window
//! bounds how many bytes the client may send ahead of the handler. Capacity goes back to the
//! client (`release_capacity`, which becomes a WINDOW_UPDATE) only when the handler has
//! consumed the bytes: copied them out, taken a chunk, or written them to a file. A handler that
//! stops reading stops its own stream, and no other.
//!
//! A stream starts with the connection's small initial window (SETTINGS_INITIAL_WINDOW_SIZE,
//! `Http2Config::initial_stream_window`): until its handler first reads the body, the client
//! may send only that much, so requests nobody reads yet (a handler waiting for a hook, for
//! another request) hold little each, and the connection's window is not spent on them. The
//! first read opens the window (a WINDOW_UPDATE, weir-h2's `grow_window`) to the pause
//! threshold, at most the connection's stream window; a threshold raised later opens it
//! further, up to that. A request whose threshold is lowered below a window already opened
//! keeps back `window - threshold` of consumed capacity, so that after that window its
//! read-ahead is the threshold.
//!
//! Where the bytes go: `read_body` copies from the received frames (the one user-space copy,
//! counted in `BodyStats::copied`: the frame is in h2's buffer, the caller owns its own);
//! `read_body_chunk` hands the frame's `Bytes` over without a copy; `body_to_file` writes them
//! from h2's buffer (the kernel's copy into the page cache is the only one). There is no
//! splice: the bytes have passed through user space to be de-framed (and decrypted, over TLS).

use super::error::stream_error;
use crate::exchange::Shared;
use crate::exchange::body::{BodyPolicy, Broken};
use crate::{Error, Request};
use bytes::Bytes;
use h2::RecvStream;
use std::fs::File;
use std::future::poll_fn;
use std::io::Write;
use std::sync::Arc;
use std::task::Poll;
use tokio::time::Instant;

/// The body half of an HTTP/2 stream: the protocol-neutral policy, and what HTTP/2 adds (the
/// received frame not yet handed over, the stream window and the capacity kept back).
pub(crate) struct BodyIn {
    recv: RecvStream,
    /// Received and not yet handed to the handler.
    chunk: Bytes,
    done: bool,
    pub(crate) policy: BodyPolicy,
    /// The stream's flow-control window (the most the client may send ahead).
    window: usize,
    /// The largest window the stream may open to (the connection's stream window).
    max_window: usize,
    /// The handler has started reading: the window is open.
    reading: bool,
    /// Consumed bytes whose capacity is kept back because the threshold is below the window.
    /// They count as unreleased in h2 but are not held: `Stats::withheld_changed` takes them
    /// out of the body gauge (and `Drop` puts them back as h2 releases them).
    withheld: usize,
    /// For the server's body gauge.
    shared: Arc<Shared>,
}

impl BodyIn {
    /// A body whose window is `initial` until the handler reads, then at most `max_window`.
    pub(crate) fn new(
        recv: RecvStream,
        head: &Request,
        initial: usize,
        max_window: usize,
        shared: Arc<Shared>,
    ) -> Self {
        let config = &shared.config;
        let done = recv.is_end_stream();
        let expects_continue = head.expect_continue();
        let declared = head.content_length();
        let mut policy = BodyPolicy::new(config);
        policy.begin(config, declared, expects_continue, done);
        // Until the handler lowers it, the read-ahead is the whole stream window.
        policy.set_pause_threshold(max_window);
        Self {
            recv,
            chunk: Bytes::new(),
            done,
            policy,
            window: initial,
            max_window,
            reading: false,
            withheld: 0,
            shared,
        }
    }

    pub(crate) fn is_done(&self) -> bool {
        self.done && self.chunk.is_empty()
    }

    /// The frame received and not yet handed over: h2 does not tell what it holds past it.
    pub(crate) fn at_hand(&self) -> u64 {
        self.chunk.len() as u64
    }

    /// Sets the pause threshold; capacity kept back beyond the new need is given back.
    pub(crate) fn set_pause_threshold(&mut self, bytes: usize) {
        self.policy.set_pause_threshold(bytes);
        if self.reading {
            self.open_window();
        }
        let keep = self.window.saturating_sub(self.policy.pause_threshold());
        if self.withheld > keep {
            let give = self.withheld - keep;
            self.shared.stats.withheld_changed(self.withheld, keep);
            self.withheld = keep;
            let _ = self.recv.flow_control().release_capacity(give);
        }
    }

    /// The read-ahead in force once the handler reads: the threshold, at most the largest
    /// window.
    pub(crate) fn effective_threshold(&self) -> usize {
        self.policy.pause_threshold().min(self.max_window)
    }

    /// Before each body operation: the policy's checks, and the window opened at the first.
    fn start_reading(&mut self) -> Result<(), Error> {
        self.policy.check_start()?;
        if !self.reading {
            self.reading = true;
            self.open_window();
        }
        Ok(())
    }

    /// Widens the stream's window to the read-ahead in force, if it is narrower.
    fn open_window(&mut self) {
        let target = self.effective_threshold();
        if target > self.window && !self.done {
            // Fails only if the stream is already closed, when the window no longer matters.
            let _ = self.recv.flow_control().grow_window(target - self.window);
            self.window = target;
        }
    }

    /// Gives back the capacity of `n` consumed bytes, keeping back what a threshold below the
    /// window requires.
    fn consumed(&mut self, n: usize) {
        let keep = self.window.saturating_sub(self.policy.pause_threshold());
        let hold = keep.saturating_sub(self.withheld).min(n);
        if hold > 0 {
            self.shared
                .stats
                .withheld_changed(self.withheld, self.withheld + hold);
            self.withheld += hold;
        }
        if n > hold {
            // Fails only if the stream is already closed, when capacity no longer matters.
            let _ = self.recv.flow_control().release_capacity(n - hold);
        }
    }

    /// Accounts a frame's payload as received, enforcing the maximum body size.
    fn accept_frame(&mut self, data: &Bytes) -> Result<(), Error> {
        // The frame's bytes earn time under the data rate as they arrive (the wait itself is
        // accounted by `settle`).
        self.policy.note_wait(std::time::Duration::ZERO, data.len());
        let buffered = self.recv.flow_control().used_capacity();
        self.policy.note_buffered(buffered);
        self.policy.accept_payload(data.len())
    }

    /// The deadline for the next wait under the minimum data rate, and when the wait starts.
    fn deadline(&self) -> (Option<Instant>, Instant) {
        let now = Instant::now();
        (self.policy.wait_allowance().map(|a| now + a), now)
    }

    /// Copies received payload into `dst`, taking as many already-received frames as fit and
    /// waiting only when nothing has arrived. `Ok(0)` at the end of the body.
    pub(crate) async fn read(&mut self, dst: &mut [u8]) -> Result<usize, Error> {
        self.start_reading()?;
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
        self.policy.stats.copied += n as u64;
        Ok(n)
    }

    /// Waits until a frame's payload is at hand (it stays in h2's buffer, counted against the
    /// stream window as before): `Ok(true)`, or `Ok(false)` at the end of the body.
    pub(crate) async fn wait(&mut self) -> Result<bool, Error> {
        self.start_reading()?;
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
        self.start_reading()?;
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
    /// blocking pool per write was measured much slower: docs/archive/BENCHMARKS-history.md,
    /// "Figures once quoted in source comments").
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
            self.policy.stats.copied += piece.len() as u64;
            written += piece.len() as u64;
        }
        Ok(written)
    }

    /// The stream's receiving half while the client may still send body bytes (it has not
    /// ended the stream, and the body has not failed): for `H2Stream::finish` to let the rest
    /// arrive after an early response.
    pub(crate) fn unfinished(&mut self) -> Option<&mut RecvStream> {
        (!self.done && !self.policy.is_broken()).then_some(&mut self.recv)
    }

    /// The DATA frames ended: takes the trailers, which h2 has by then if the client sent any
    /// (`poll_data` ends before a trailing HEADERS frame, and only once it is received).
    fn end(&mut self, cx: &mut std::task::Context<'_>) {
        self.done = true;
        if let Poll::Ready(Ok(Some(trailers))) = self.recv.poll_trailers(cx) {
            self.policy.trailers = Some(trailers);
        }
    }

    fn fail(&mut self, e: h2::Error) -> Error {
        let error = stream_error(e);
        self.policy.mark_broken(&error);
        error
    }

    /// Accounts a finished wait on the client; `None` means the deadline passed.
    fn settle<T>(&mut self, out: Option<Result<T, Error>>, started: Instant) -> Result<T, Error> {
        self.policy.note_wait(started.elapsed(), 0);
        match out {
            Some(r) => r,
            None => Err(self.policy.break_with(Broken::Timeout)),
        }
    }
}

impl Drop for BodyIn {
    /// h2 releases the withheld capacity with the stream; its connection's next turn takes the
    /// bytes out of the gauge as unreleased.
    fn drop(&mut self) {
        self.shared.stats.withheld_changed(self.withheld, 0);
    }
}

/// Runs `wait` until `deadline`; `None` if the deadline passed first.
async fn within<F: Future>(deadline: Option<Instant>, wait: F) -> Option<F::Output> {
    match deadline {
        None => Some(wait.await),
        Some(d) => tokio::time::timeout_at(d, wait).await.ok(),
    }
}
