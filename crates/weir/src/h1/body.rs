//! Reading the request body: pull-based, bounded by the pause threshold, copy-aware.
//!
//! The socket is read only inside a handler's body read, so a handler that stops reading stops
//! the server reading and TCP flow control pushes back on the client. What the server buffers
//! ahead of the handler is bounded by the pause threshold: a read into the connection buffer
//! asks for at most `pause_threshold - buffered` bytes.
//!
//! Where the bytes go, cheapest first:
//! - `body_to_file` on Linux: socket → pipe → file with `splice`, no user-space copy;
//! - `read_body` with an empty connection buffer and a large caller buffer: the socket is read
//!   straight into the caller's buffer (the kernel's copy is the only one);
//! - otherwise bytes are read into the connection buffer (up to the threshold) and copied out
//!   (the one user-space copy, counted in `BodyStats::copied`), or handed out as `Bytes` that
//!   share the buffer (`read_body_chunk`, no copy).

use super::conn::Conn;
use super::io::{Io, Read, body_wait};
use crate::exchange::body::Broken;
use crate::transport::low_water::{self, BODY_LOW_WATER};
use crate::{Error, zero_copy};
use bytes::{Buf, Bytes};
use std::fs::File;
use std::io::{self, Write};
use tokio::time::Instant;

/// Bytes moved per `splice` call: the pipe's capacity (weir asks the kernel for 1 MiB pipes).
const SPLICE_CHUNK: usize = 1024 * 1024;

impl Conn {
    /// Checks limits and sends `100 Continue` before the first read.
    async fn body_prologue(&mut self) -> Result<(), Error> {
        self.body.policy.check_start()?;
        if self.body.policy.take_continue(self.resp.is_started()) {
            self.io
                .wbuf
                .extend_from_slice(b"HTTP/1.1 100 Continue\r\n\r\n");
            match self.io.write_all(&[], self.write_rate()).await {
                Ok(true) => self.body.policy.note_continue_sent(),
                Ok(false) => return Err(self.body.policy.break_with(Broken::Timeout)),
                Err(_) => return Err(self.body.policy.break_with(Broken::Disconnect)),
            }
        }
        Ok(())
    }

    /// Reads body payload into `dst`; `Ok(0)` at the end of the body.
    pub(crate) async fn read_body(&mut self, dst: &mut [u8]) -> Result<usize, Error> {
        if dst.is_empty() {
            return Ok(0);
        }
        self.body_prologue().await?;
        loop {
            if self.body.decoder.is_done() {
                return Ok(0);
            }
            let available = self.decode_buffered()?;
            if available > 0 {
                let n = available.min(dst.len());
                // COPY: these bytes were read ahead into the connection buffer (with the head,
                // or because the caller's reads are small); the caller owns `dst`, so handing
                // them over is a copy.
                dst[..n].copy_from_slice(&self.io.rbuf[..n]);
                self.io.rbuf.advance(n);
                self.take_payload(n)?;
                self.body.policy.stats.copied += n as u64;
                return Ok(n);
            }
            if self.body.decoder.is_done() {
                return Ok(0);
            }
            let window = self.body.decoder.direct_window();
            if window > 0 && dst.len() >= self.body.direct_read_min {
                // Nothing is buffered (decode_buffered took it all): read the socket straight
                // into the caller's buffer, never past the payload or the size limit.
                let want = window.min(dst.len() as u64).min(self.room_or_too_large()?) as usize;
                self.tune_low_water();
                let (deadline, started) = self.body_read_deadline();
                let read = self.io.read_direct(&mut dst[..want], deadline).await;
                let n = self.settle_read(read, started)?;
                self.take_payload(n)?;
                self.body.policy.stats.direct += n as u64;
                return Ok(n);
            }
            if dst.len() >= self.body.direct_read_min {
                // Within a chunk's framing: read what completes the line (and whatever comes
                // with it) into the connection buffer at its own size; the payload after it
                // goes straight into `dst`. The buffer does not grow to the pause threshold for
                // a caller that never reads from it in bulk.
                self.fill_body_buffer_at_most(self.body.direct_read_min)
                    .await?;
            } else {
                self.fill_body_buffer().await?;
            }
        }
    }

    /// Waits until body bytes can be read without waiting, and takes none of them: `Ok(true)`
    /// then (readiness may be spurious: a read may still find nothing), `Ok(false)` when the
    /// body is complete. Over TCP and Unix sockets nothing is read while waiting for payload;
    /// otherwise (TLS, or the decoder in the middle of a chunk's framing) at most one read
    /// buffer's worth is read into the connection buffer, never past the body.
    pub(crate) async fn wait_body(&mut self) -> Result<bool, Error> {
        self.body_prologue().await?;
        loop {
            if self.body.decoder.is_done() {
                return Ok(false);
            }
            if self.decode_buffered()? > 0 {
                return Ok(true);
            }
            if self.body.decoder.is_done() {
                return Ok(false);
            }
            let payload_next = self.io.rbuf.is_empty() && self.body.decoder.direct_window() > 0;
            if payload_next && self.io.stream.has_readiness() {
                self.tune_low_water();
                let (deadline, started) = self.body_read_deadline();
                let (stream, timer, low_water) = self.io.body_read_parts();
                let ready = body_wait!(timer, stream, low_water, deadline, stream.readable());
                self.body.policy.note_wait(started.elapsed(), 0);
                return match ready {
                    Some(Ok(())) => Ok(true),
                    Some(Err(e)) => {
                        self.body.policy.break_with(Broken::Disconnect);
                        Err(Error::disconnect(Some(e)))
                    }
                    None => Err(self.body.policy.break_with(Broken::Timeout)),
                };
            }
            self.fill_body_buffer_at_most(self.body.direct_read_min)
                .await?;
        }
    }

    /// A body read that does not wait: `None` when it would have to (nothing is buffered and
    /// the socket has nothing), and before the `100 Continue` owed to the client is sent (by
    /// [`Conn::wait_body`] or a read).
    pub(crate) fn try_read_body(&mut self, dst: &mut [u8]) -> Option<Result<usize, Error>> {
        if self.body.policy.continue_pending() {
            return None;
        }
        crate::exchange::backend::poll_once(self.read_body(dst))
    }

    /// Reads the next piece of body payload as `Bytes` sharing the connection buffer (no copy).
    /// A piece is at most the pause threshold. `Ok(None)` at the end of the body.
    pub(crate) async fn read_body_chunk(&mut self) -> Result<Option<Bytes>, Error> {
        self.body_prologue().await?;
        loop {
            if self.body.decoder.is_done() {
                return Ok(None);
            }
            let available = self.decode_buffered()?;
            if available > 0 {
                let chunk = self.io.rbuf.split_to(available).freeze();
                self.take_payload(available)?;
                return Ok(Some(chunk));
            }
            if self.body.decoder.is_done() {
                return Ok(None);
            }
            self.fill_body_buffer().await?;
        }
    }

    /// Writes the rest of the body to `file` (at its current position) and returns the number
    /// of payload bytes written. On Linux, over TCP and Unix sockets, payload that is not yet
    /// buffered moves socket → pipe → file with `splice` and never enters user space.
    ///
    /// File writes are synchronous, on the connection's task: they go to the page cache and
    /// return in microseconds, while a hop to a blocking thread pool per write was measured much
    /// slower (docs/archive/BENCHMARKS-history.md, "Figures once quoted in source comments"). Other
    /// connections on the same worker keep being served because the multi-threaded runtime lets
    /// idle workers steal them.
    ///
    /// At most `limit` payload bytes are written (fewer only at the end of the body), so a
    /// caller can act between pieces (report progress, start writeback).
    pub(crate) async fn body_to_file(&mut self, file: &mut File, limit: u64) -> Result<u64, Error> {
        self.body_prologue().await?;
        let mut written = 0u64;
        loop {
            if self.body.decoder.is_done() || written == limit {
                return Ok(written);
            }
            let left = limit - written;
            let available = self
                .decode_buffered()?
                .min(usize::try_from(left).unwrap_or(usize::MAX));
            if available > 0 {
                // COPY (kernel): buffered payload is written from the connection buffer.
                file.write_all(&self.io.rbuf[..available])?;
                self.io.rbuf.advance(available);
                self.take_payload(available)?;
                self.body.policy.stats.copied += available as u64;
                written += available as u64;
                continue;
            }
            if self.body.decoder.is_done() {
                return Ok(written);
            }
            let window = self.body.decoder.direct_window();
            if window > 0 && self.ensure_pipe() {
                let want = window
                    .min(SPLICE_CHUNK as u64)
                    .min(left)
                    .min(self.room_or_too_large()?) as usize;
                let n = self.splice_body(file, want).await?;
                self.take_payload(n)?;
                self.body.policy.stats.spliced += n as u64;
                written += n as u64;
                continue;
            }
            self.fill_body_buffer().await?;
        }
    }

    /// Reads and discards at most `limit` more payload bytes; true if the body ended within
    /// them (the connection can carry another request).
    pub(crate) async fn drain_body(&mut self, limit: u64) -> bool {
        let mut drained = 0u64;
        loop {
            if self.body.decoder.is_done() {
                return true;
            }
            if self.body.policy.is_broken() {
                return false;
            }
            if !self.io.rbuf.is_empty() {
                let Ok(d) = self.body.decoder.decode(&self.io.rbuf) else {
                    return false;
                };
                self.io.rbuf.advance(d.framing + d.data);
                self.body.decoder.consume(d.data);
                drained += d.data as u64;
                if drained > limit {
                    return false;
                }
                if d.data > 0 || self.body.decoder.is_done() {
                    continue;
                }
            }
            let want = (limit - drained)
                .saturating_add(1024)
                .min(self.body.policy.pause_threshold() as u64);
            self.tune_low_water();
            let (deadline, started) = self.body_read_deadline();
            let read = self.io.read_body_to_buf(want as usize, deadline).await;
            if self.settle_read(read, started).is_err() {
                return false;
            }
        }
    }

    /// Drops framing at the front of the connection buffer; returns how many payload bytes
    /// follow it there.
    fn decode_buffered(&mut self) -> Result<usize, Error> {
        if self.io.rbuf.is_empty() {
            return Ok(0);
        }
        match self.body.decoder.decode(&self.io.rbuf) {
            Ok(d) => {
                let span = self.body.decoder.trailer_span();
                if !span.is_empty() {
                    // COPY, ALLOCATION: the trailer section (bounded by the decoder's trailer
                    // budget) outlives the read buffer it came in; only bodies with trailers.
                    self.body.trailer_raw.extend_from_slice(&self.io.rbuf[span]);
                    if self.body.decoder.is_done() {
                        self.body.policy.trailers = parse_trailers(&self.body.trailer_raw);
                    }
                }
                self.io.rbuf.advance(d.framing);
                // A chunk announcing more than the body may still hold is refused now (413),
                // not after its data has been waited for and read.
                if self.body.decoder.direct_window() > self.body.policy.room() {
                    return Err(self.body.policy.break_with(Broken::TooLarge));
                }
                Ok(d.data)
            }
            Err(e) => Err(self.body.policy.break_with(Broken::Protocol(e))),
        }
    }

    /// Records `n` payload bytes handed over, enforcing the maximum body size.
    fn take_payload(&mut self, n: usize) -> Result<(), Error> {
        self.body.decoder.consume(n);
        self.sync_body_gauge();
        self.body.policy.accept_payload(n)
    }

    /// Updates the server's body gauges with what this connection holds ahead of its handler:
    /// the buffer's bytes, up to what is left of the body (beyond it lies the next request).
    /// A compare when nothing changed (direct reads and splices leave the buffer empty).
    pub(crate) fn sync_body_gauge(&mut self) {
        let held = if self.body.decoder.is_done() {
            0
        } else {
            let buffered = self.io.rbuf.len();
            match self.body.decoder.remaining_hint() {
                Some(left) => buffered.min(usize::try_from(left).unwrap_or(usize::MAX)),
                None => buffered,
            }
        };
        let threshold = self.body.policy.pause_threshold();
        self.body.gauge.set(held, threshold, &self.shared.stats);
    }

    /// Room left under the maximum body size for payload that is known to be coming.
    fn room_or_too_large(&mut self) -> Result<u64, Error> {
        match self.body.policy.room() {
            0 => Err(self.body.policy.break_with(Broken::TooLarge)),
            room => Ok(room),
        }
    }

    /// Reads more body bytes into the connection buffer, never holding more than the pause
    /// threshold ahead of the handler.
    async fn fill_body_buffer(&mut self) -> Result<(), Error> {
        self.fill_body_buffer_at_most(usize::MAX).await
    }

    /// As [`Conn::fill_body_buffer`], reading at most `cap` bytes (beyond what a framing line
    /// needs).
    async fn fill_body_buffer_at_most(&mut self, cap: usize) -> Result<(), Error> {
        let buffered = self.io.rbuf.len();
        let threshold = self
            .body
            .policy
            .pause_threshold()
            .min(buffered.saturating_add(cap));
        // A full buffer can only hold an incomplete framing line (payload would have been
        // taken): read a little more so the line can complete. Extensions are bounded.
        let mut want = if buffered < threshold {
            threshold - buffered
        } else {
            1024
        };
        if let Some(remaining) = self.body.decoder.remaining_hint() {
            // Never read past a Content-Length body: what follows is the next request.
            let remaining = remaining.saturating_sub(buffered as u64).max(1);
            want = want.min(usize::try_from(remaining).unwrap_or(usize::MAX));
        }
        self.tune_low_water();
        let (deadline, started) = self.body_read_deadline();
        let read = self.io.read_body_to_buf(want, deadline).await;
        self.settle_read(read, started)?;
        let buffered = self.io.rbuf.len();
        if self.body.policy.note_buffered(buffered) {
            self.shared.stats.record_body_buffered(buffered);
        }
        self.sync_body_gauge();
        Ok(())
    }

    /// Moves up to `max` payload bytes from the socket into `file` through the pipe.
    async fn splice_body(&mut self, file: &File, max: usize) -> Result<usize, Error> {
        self.tune_low_water();
        let (deadline, started) = self.body_read_deadline();
        let Some(pipe) = self.pipe.as_mut() else {
            return Err(Error::from(io::Error::from(io::ErrorKind::Unsupported)));
        };
        let result = self.io.splice_to_file(pipe, file, max, deadline).await;
        match result {
            Ok(read) => self.settle_read(Ok(read), started),
            Err(zero_copy::SpliceError::Socket(e)) => self.settle_read(Err(e), started),
            Err(zero_copy::SpliceError::File(e)) => {
                // Bytes may sit in the pipe, out of the socket but not in the file: the body
                // cannot be resumed, and the pipe is not reusable.
                self.pipe = None;
                self.body.policy.break_with(Broken::Lost);
                Err(Error::from(e))
            }
        }
    }

    /// [`crate::Exchange::body_at_hand`]: the payload buffered and the socket's queue, within
    /// what is left of the body.
    pub(crate) fn body_at_hand(&self) -> u64 {
        if self.body.decoder.is_done() {
            return 0;
        }
        let at_hand = self.io.rbuf.len() as u64 + low_water::queued(&self.io.stream);
        self.body
            .decoder
            .remaining_hint()
            .map_or(at_hand, |left| at_hand.min(left))
    }

    /// Raises the socket's low-water mark while a large declared body streams in fast (the
    /// last read found at least a quarter of the mark queued, and twice the mark is still to
    /// come), and lowers it otherwise, before a read that may wait (`transport::low_water`).
    fn tune_low_water(&mut self) {
        let to_come = self
            .body
            .decoder
            .remaining_hint()
            .map_or(0, |r| r.saturating_sub(self.io.rbuf.len() as u64));
        let fast = self.body.last_read >= BODY_LOW_WATER / 4;
        let mark = if fast && to_come >= 2 * BODY_LOW_WATER as u64 {
            BODY_LOW_WATER
        } else {
            1
        };
        self.io.set_low_water(mark);
    }

    /// Creates the connection's splice pipe on first use; false where splice is unavailable
    /// (TLS, non-Linux, or pipe creation failed: the buffered path still works).
    fn ensure_pipe(&mut self) -> bool {
        if self.pipe.is_none() && zero_copy::can_splice(&self.io.stream) {
            self.pipe = zero_copy::Pipe::new().ok();
        }
        self.pipe.is_some()
    }

    /// The deadline for the next body read under the minimum data rate, and the time it starts.
    fn body_read_deadline(&self) -> (Option<Instant>, Instant) {
        let now = Instant::now();
        (self.body.policy.wait_allowance().map(|a| now + a), now)
    }

    /// Accounts a finished socket read of the body; EOF and timeouts break the body.
    fn settle_read(&mut self, read: io::Result<Read>, started: Instant) -> Result<usize, Error> {
        let policy = &mut self.body.policy;
        match read {
            Ok(Read::Data(n)) => {
                policy.note_wait(started.elapsed(), n);
                self.body.last_read = n;
                Ok(n)
            }
            Ok(Read::Eof) => {
                policy.note_wait(started.elapsed(), 0);
                Err(policy.break_with(Broken::Disconnect))
            }
            Ok(Read::TimedOut) => {
                policy.note_wait(started.elapsed(), 0);
                Err(policy.break_with(Broken::Timeout))
            }
            Err(e) => {
                policy.note_wait(started.elapsed(), 0);
                policy.break_with(Broken::Disconnect);
                Err(Error::disconnect(Some(e)))
            }
        }
    }
}

/// The fields of a trailer section the decoder has checked (`name: value` lines, CRLF-ended,
/// then an empty line); `None` when it has none.
fn parse_trailers(raw: &[u8]) -> Option<http::HeaderMap> {
    let mut map = http::HeaderMap::new();
    for line in raw.split(|&b| b == b'\n') {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        let Some(colon) = line.iter().position(|&b| b == b':') else {
            continue;
        };
        let name = http::HeaderName::from_bytes(&line[..colon]);
        let value = http::HeaderValue::from_bytes(line[colon + 1..].trim_ascii());
        if let (Ok(name), Ok(value)) = (name, value) {
            map.append(name, value);
        }
    }
    (!map.is_empty()).then_some(map)
}

impl Io {
    /// `splice` from the socket to `file` under a deadline and the low-water mark.
    pub(crate) async fn splice_to_file(
        &mut self,
        pipe: &mut zero_copy::Pipe,
        file: &File,
        max: usize,
        deadline: Option<Instant>,
    ) -> Result<Read, zero_copy::SpliceError> {
        let (stream, timer, low_water) = self.body_read_parts();
        let moved = body_wait!(
            timer,
            stream,
            low_water,
            deadline,
            zero_copy::splice_to_file(stream, pipe, file, max)
        );
        match moved {
            None => Ok(Read::TimedOut),
            Some(Ok(0)) => Ok(Read::Eof),
            Some(Ok(n)) => Ok(Read::Data(n)),
            Some(Err(e)) => Err(e),
        }
    }
}
