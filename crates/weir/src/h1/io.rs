//! A connection's buffers and timed socket operations.
//!
//! One read buffer (`BytesMut`) holds heads, read-ahead body bytes and pipelined requests; one
//! write buffer (`Vec<u8>`) holds response heads, small bodies and chunk framing until they are
//! flushed together. Both come from the server's [`BufferPool`] while the connection has bytes
//! to work on and go back to it when the connection goes idle (both empty, and a read found
//! nothing: [`Io::release_buffers`]); a keep-alive request takes and gives back the same pair,
//! so it allocates nothing. Outside that window both are empty, without capacity: every read
//! and write happens between [`Io::take_buffers`] and [`Io::release_buffers`].
//!
//! Every socket operation takes an optional deadline and uses the connection's single timer,
//! moved only when it would fire too late ([`Io::timed`]), so timeouts cost no allocation
//! either.

use crate::buffer_pool::{BufferPool, Pair};
use crate::config::DataRate;
use crate::transport::{Stream, low_water};
use bytes::{Buf, BufMut, BytesMut};
use std::future::Future;
use std::io::{self, IoSlice};
use std::pin::Pin;
use std::time::Duration;
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

impl Read {
    /// The outcome of a timed read of `Ok(bytes)`: `None` when its deadline passed.
    fn of(read: Option<io::Result<usize>>) -> io::Result<Self> {
        Ok(match read {
            None => Self::TimedOut,
            Some(Ok(0)) => Self::Eof,
            Some(Ok(n)) => Self::Data(n),
            Some(Err(e)) => return Err(e),
        })
    }
}

/// How long a body read goes on after its deadline found bytes held back by the low-water mark:
/// lowering the mark signals them as readable at once, so this is only a bound.
const RESCUE_WAIT: Duration = Duration::from_secs(1);

/// How long a raised low-water mark may hold back bytes that are fewer than the mark: a client
/// that pauses mid-body (or sends slower than the mark fills) has them read within this, so the
/// handler sees them, and a resumable upload records them, as before. A fast client fills the
/// mark long before.
const MARK_HOLD: Duration = Duration::from_millis(10);

/// Sets the low-water mark of `stream` to `bytes` and records it in `current`, if it changes
/// and the kernel takes it.
fn set_mark(stream: &Stream, current: &mut usize, bytes: usize) {
    if bytes != *current && low_water::set(stream, bytes) {
        *current = bytes;
    }
}

/// Runs a body read's wait: `$fut` (built again for each wait) under [`Io::timed`], from
/// [`Io::first_body_wait`] and again as [`Io::settle_body_wait`] says, until it settles; yields
/// the settled output (`None`: the read's `$deadline` passed). One loop for every body read
/// (into the buffer, into the caller's buffer, readiness, splice), so the mark's rules live in
/// those two functions alone.
macro_rules! body_wait {
    ($timer:expr, $stream:expr, $low_water:expr, $deadline:expr, $fut:expr) => {{
        let mut wait = Io::first_body_wait($deadline, *$low_water);
        loop {
            let out = Io::timed($timer, wait, $fut).await;
            match Io::settle_body_wait(out, $stream, $low_water, $deadline) {
                Ok(out) => break out,
                Err(next) => wait = next,
            }
        }
    }};
}
pub(super) use body_wait;

/// The minimum data rate of the response writes of one exchange (`Config::min_response_rate`):
/// the time writes may spend waiting on the client is the grace, or what the bytes the client
/// accepted earned at the minimum rate if that is more. Progress extends the deadline; a stall
/// does not, so a client that stops reading is cut however large the pending write is.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct RateClock {
    bytes: u64,
    waited: Duration,
}

impl RateClock {
    /// The deadline of a transfer starting `now`, or `None` without a minimum rate.
    pub(crate) fn deadline(&self, rate: Option<DataRate>, now: Instant) -> Option<Instant> {
        let rate = rate?;
        let earned =
            Duration::try_from_secs_f64(self.bytes as f64 / rate.bytes_per_second.max(1) as f64)
                .unwrap_or(Duration::MAX);
        let allowed = earned.max(rate.grace).saturating_sub(self.waited);
        Some(now.checked_add(allowed).unwrap_or_else(far_future))
    }

    /// Accounts a transfer of `bytes` that started at `started`.
    pub(crate) fn record(&mut self, bytes: usize, started: Instant) {
        self.bytes += bytes as u64;
        self.waited += started.elapsed();
    }
}

#[derive(Debug)]
pub(crate) struct Io {
    pub(crate) stream: Stream,
    pub(crate) rbuf: BytesMut,
    pub(crate) wbuf: Vec<u8>,
    timer: Pin<Box<Sleep>>,
    /// The response rate of the current exchange; reset when an exchange begins.
    pub(crate) write_clock: RateClock,
    /// Whether reads on a Unix socket receive passed descriptors (`Config::accept_passed_fds`).
    accept_fds: bool,
    /// The descriptor the client passed with the current request's bytes, until the handler
    /// takes it or the exchange ends (`transport::passed_fd`).
    pub(crate) passed_fd: Option<std::os::fd::OwnedFd>,
    /// The socket's receive low-water mark as last set (`transport::low_water`): 1 unless a
    /// large body is streaming in.
    low_water: usize,
}

impl Io {
    /// A connection's I/O state, without buffers until [`Io::take_buffers`].
    pub(crate) fn new(stream: Stream, accept_fds: bool) -> Self {
        Self {
            accept_fds: accept_fds && matches!(stream, Stream::Unix(_)),
            passed_fd: None,
            stream,
            rbuf: BytesMut::new(),
            wbuf: Vec::new(),
            // Far in the future until an operation sets a real deadline.
            timer: Box::pin(tokio::time::sleep_until(far_future())),
            write_clock: RateClock::default(),
            low_water: 1,
        }
    }

    /// Sets the socket's receive low-water mark for the next body read (a system call only when
    /// it changes). Callers raise it only while a declared body has at least twice `bytes`
    /// still to come (`transport::low_water`).
    pub(crate) fn set_low_water(&mut self, bytes: usize) {
        set_mark(&self.stream, &mut self.low_water, bytes);
    }

    /// Brings the low-water mark back to 1 before a read that is not a body's (a head, an idle
    /// wait): a body that ended under a raised mark leaves it raised.
    fn lower_low_water(&mut self) {
        if self.low_water != 1 {
            self.set_low_water(1);
        }
    }

    /// Whether the connection holds its buffers.
    pub(crate) fn has_buffers(&self) -> bool {
        self.rbuf.capacity() != 0
    }

    /// Takes a pair of buffers from `pool` unless the connection holds one.
    pub(crate) fn take_buffers(&mut self, pool: &BufferPool) {
        if !self.has_buffers() {
            let Pair { read, write } = pool.take();
            self.rbuf = read;
            self.wbuf = write;
        }
    }

    /// Whether the connection may give its buffers back while it waits for the client: nothing
    /// buffered either way, and no passed descriptor waiting for its request. (Over TLS the
    /// record layer releases its own buffer when drained, and its `readable` looks at what it
    /// holds before the socket.)
    pub(crate) fn can_release(&self) -> bool {
        self.rbuf.is_empty() && self.wbuf.is_empty() && self.passed_fd.is_none()
    }

    /// Gives the buffers back to `pool` (their contents are dropped: call when both are
    /// empty, or when the connection ends).
    pub(crate) fn release_buffers(&mut self, pool: &BufferPool) {
        if self.has_buffers() {
            pool.give(Pair {
                read: std::mem::take(&mut self.rbuf),
                write: std::mem::take(&mut self.wbuf),
            });
        }
    }

    /// Waits, without buffers, until the socket is readable or `deadline` passes (`None`).
    pub(crate) async fn readable(&mut self, deadline: Instant) -> Option<io::Result<()>> {
        self.lower_low_water();
        let Self { stream, timer, .. } = self;
        Self::timed(timer, Some(deadline), stream.readable()).await
    }

    /// Runs `fut` until `deadline`; `None` if the deadline passed first.
    ///
    /// The timer is moved only when it would fire after `deadline`, or has fired. A deadline
    /// that moves later with every wait (the keep-alive timeout's, a data rate's) leaves it
    /// where it was; when it fires before `deadline`, it is set to `deadline` then and the
    /// wait goes on. Setting it for every wait (a reset and its tick arithmetic) was a cost
    /// every request paid and hyper's server does not.
    pub(crate) async fn timed<F: Future>(
        timer: &mut Pin<Box<Sleep>>,
        deadline: Option<Instant>,
        fut: F,
    ) -> Option<F::Output> {
        let Some(deadline) = deadline else {
            return Some(fut.await);
        };
        if timer.is_elapsed() || timer.deadline() > deadline {
            timer.as_mut().reset(deadline);
        }
        let mut fut = std::pin::pin!(fut);
        loop {
            tokio::select! {
                biased;
                out = &mut fut => return Some(out),
                () = timer.as_mut() => {}
            }
            if Instant::now() >= deadline {
                return None;
            }
            timer.as_mut().reset(deadline);
        }
    }

    /// The first deadline of a body read's wait: the read's own `deadline`, or sooner under a
    /// raised low-water mark, which holds bytes back for at most [`MARK_HOLD`].
    pub(crate) fn first_body_wait(deadline: Option<Instant>, low_water: usize) -> Option<Instant> {
        if low_water == 1 {
            return deadline;
        }
        let hold = Instant::now() + MARK_HOLD;
        Some(deadline.map_or(hold, |d| d.min(hold)))
    }

    /// After a body read's wait under [`Io::timed`] (from [`Io::first_body_wait`]): `Ok(out)`
    /// when the read is over, or `Err(next)` when it should wait again until `next`.
    ///
    /// A wait that ends under a raised low-water mark lowers the mark. If the read's own
    /// `deadline` has not passed (the mark's hold ran out: the client paused with fewer bytes
    /// than the mark queued), the read goes on until it, and the lowered mark signals any
    /// queued bytes at once. If it has passed, bytes the mark held back are progress, not a
    /// stall: the read goes on for at most [`RESCUE_WAIT`] to take them.
    pub(crate) fn settle_body_wait<T>(
        out: Option<T>,
        stream: &Stream,
        low_water: &mut usize,
        deadline: Option<Instant>,
    ) -> Result<Option<T>, Option<Instant>> {
        if out.is_some() || *low_water == 1 {
            return Ok(out);
        }
        set_mark(stream, low_water, 1);
        let now = Instant::now();
        if deadline.is_none_or(|d| now < d) {
            return Err(deadline);
        }
        // A mark that could not be lowered ends the read as a timeout, as without a mark: going
        // on would wait under the same mark again.
        if *low_water != 1 || low_water::queued(stream) == 0 {
            return Ok(None);
        }
        Err(Some(now + RESCUE_WAIT))
    }

    /// The stream, timer and low-water mark, for a body read outside this module
    /// ([`Io::settle_body_wait`]).
    pub(crate) fn body_read_parts(&mut self) -> (&mut Stream, &mut Pin<Box<Sleep>>, &mut usize) {
        (&mut self.stream, &mut self.timer, &mut self.low_water)
    }

    pub(crate) fn stream_and_timer(&mut self) -> (&mut Stream, &mut Pin<Box<Sleep>>) {
        (&mut self.stream, &mut self.timer)
    }

    /// Reads at most `max` bytes into the read buffer, growing it if needed (heads: the mark is
    /// at 1; a body's reads take [`Io::read_body_to_buf`]).
    pub(crate) async fn read_to_buf(
        &mut self,
        max: usize,
        deadline: Option<Instant>,
    ) -> io::Result<Read> {
        let max = self.reserve_read(max);
        let Self {
            stream,
            rbuf,
            timer,
            ..
        } = self;
        let mut limited = rbuf.limit(max);
        Read::of(Self::timed(timer, deadline, stream.read_buf(&mut limited)).await)
    }

    /// [`Io::read_to_buf`] for body bytes, under the low-water mark ([`Io::settle_body_wait`]).
    /// Apart from the head read, which the retry loop would make costlier for every keep-alive
    /// request (callgrind: about 45 instructions more per request).
    pub(crate) async fn read_body_to_buf(
        &mut self,
        max: usize,
        deadline: Option<Instant>,
    ) -> io::Result<Read> {
        let max = self.reserve_read(max);
        let Self {
            stream,
            rbuf,
            timer,
            low_water,
            ..
        } = self;
        let read = body_wait!(
            timer,
            stream,
            low_water,
            deadline,
            stream.read_buf(&mut (&mut *rbuf).limit(max))
        );
        Read::of(read)
    }

    /// Makes room for a read of at most `max` bytes (at least 1) and returns that size.
    fn reserve_read(&mut self, max: usize) -> usize {
        let max = max.max(1);
        if self.rbuf.capacity() - self.rbuf.len() < max {
            // `reserve` first tries to reuse the buffer's own space (moving unread bytes to the
            // front) and only allocates when the buffer is truly too small.
            self.rbuf.reserve(max);
        }
        max
    }

    /// Reads head bytes: [`Io::read_to_buf`], or with `recvmsg` where the connection accepts
    /// passed descriptors, keeping one that comes with them. Only heads: a descriptor travels
    /// with its request's head, and body reads stay plain (the kernel closes any descriptor
    /// that comes with body bytes).
    pub(crate) async fn read_head_to_buf(
        &mut self,
        max: usize,
        deadline: Option<Instant>,
    ) -> io::Result<Read> {
        self.lower_low_water();
        #[cfg(target_os = "linux")]
        if self.accept_fds {
            return self.recv_to_buf(max.max(1), deadline).await;
        }
        self.read_to_buf(max, deadline).await
    }

    /// [`Io::read_head_to_buf`] with `recvmsg`.
    #[cfg(target_os = "linux")]
    async fn recv_to_buf(&mut self, max: usize, deadline: Option<Instant>) -> io::Result<Read> {
        let Self {
            stream: Stream::Unix(stream),
            rbuf,
            timer,
            passed_fd,
            ..
        } = self
        else {
            unreachable!("accept_fds is set for Unix streams only");
        };
        if rbuf.capacity() - rbuf.len() < max {
            rbuf.reserve(max);
        }
        let recv = crate::transport::passed_fd::recv_with_fd_append(stream, rbuf, max, passed_fd);
        Read::of(Self::timed(timer, deadline, recv).await)
    }

    /// Reads into `dst` directly (no buffer in between).
    pub(crate) async fn read_direct(
        &mut self,
        dst: &mut [u8],
        deadline: Option<Instant>,
    ) -> io::Result<Read> {
        let (stream, timer, low_water) = self.body_read_parts();
        let read = body_wait!(timer, stream, low_water, deadline, stream.read(&mut *dst));
        Read::of(read)
    }

    /// Writes the write buffer, then each of `tail`, completely, under the minimum data `rate`
    /// (see [`RateClock`]). Returns `Ok(false)` if the client fell below the rate.
    ///
    /// The write buffer is emptied whatever the outcome: after a failure part of it may have
    /// been sent, and the connection can only be closed (writing it again would repeat bytes).
    pub(crate) async fn write_all(
        &mut self,
        tail: &[&[u8]],
        rate: Option<DataRate>,
    ) -> io::Result<bool> {
        let Self {
            stream,
            wbuf,
            timer,
            write_clock,
            ..
        } = self;
        let written = write_parts(stream, timer, write_clock, rate, wbuf, tail).await;
        wbuf.clear();
        written
    }

    /// Shrinks a read buffer that grew for a large body back to its working size, keeping any
    /// pipelined bytes. Only happens after large bodies, so the allocation is not per request.
    pub(crate) fn shrink_read_buffer(&mut self, limit: usize, read_buffer_size: usize) {
        if self.rbuf.capacity() > limit && self.rbuf.len() <= read_buffer_size / 2 {
            let mut fresh = BytesMut::with_capacity(read_buffer_size);
            fresh.extend_from_slice(&self.rbuf);
            self.rbuf = fresh;
        }
        if self.wbuf.capacity() > limit {
            self.wbuf = Vec::with_capacity(crate::buffer_pool::WRITE_BUFFER_SIZE);
        }
    }

    /// Shuts down the write side and discards what the client still sends for a short while,
    /// so that closing does not turn into a reset that destroys the last response before the
    /// client has read it.
    ///
    /// What is discarded is read into the read buffer (taken from `pool` if the connection holds
    /// none): a scratch array here would live in the connection's future, and so in every
    /// connection's task, idle or not.
    pub(crate) async fn linger_close(&mut self, linger: std::time::Duration, pool: &BufferPool) {
        let deadline = Instant::now() + linger;
        let _ = Self::timed(&mut self.timer, Some(deadline), self.stream.shutdown()).await;
        self.take_buffers(pool);
        let Self {
            stream,
            timer,
            rbuf,
            ..
        } = self;
        // Bounded in bytes as well as time: a fast client could otherwise keep the task busy.
        let mut discarded = 0usize;
        while discarded < 64 * 1024 * 1024 {
            rbuf.clear();
            let room = rbuf.capacity().max(1);
            let mut limited = (&mut *rbuf).limit(room);
            match Self::timed(timer, Some(deadline), stream.read_buf(&mut limited)).await {
                Some(Ok(n)) if n > 0 => discarded += n,
                _ => break,
            }
        }
        rbuf.clear();
    }
}

/// Writes `head` then every part of `tail` with vectored writes, each under the deadline the
/// clock gives it; `Ok(false)` when one passes.
async fn write_parts(
    stream: &mut Stream,
    timer: &mut Pin<Box<Sleep>>,
    clock: &mut RateClock,
    rate: Option<DataRate>,
    head: &[u8],
    tail: &[&[u8]],
) -> io::Result<bool> {
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
            return Ok(true);
        }
        let slices = [
            IoSlice::new(parts[first]),
            IoSlice::new(parts.get(first + 1).copied().unwrap_or(&[])),
            IoSlice::new(parts.get(first + 2).copied().unwrap_or(&[])),
            IoSlice::new(parts.get(first + 3).copied().unwrap_or(&[])),
        ];
        let mut write = std::pin::pin!(stream.write_vectored(&slices[..count - first]));
        // A write the socket takes at once costs no clock reading: the rate only concerns
        // time spent waiting on the client.
        let n = match poll_once(write.as_mut()).await {
            Some(result) => {
                let n = result?;
                clock.bytes += n as u64;
                n
            }
            None if rate.is_some() => {
                let started = Instant::now();
                let deadline = clock.deadline(rate, started);
                let written = Io::timed(timer, deadline, write).await;
                let moved = match &written {
                    Some(Ok(n)) => *n,
                    _ => 0,
                };
                clock.record(moved, started);
                match written {
                    Some(r) => r?,
                    None => return Ok(false),
                }
            }
            None => write.await?,
        };
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

/// Polls `fut` once: its output if it is ready, `None` (with the waker registered) if not.
pub(crate) async fn poll_once<F: Future>(mut fut: Pin<&mut F>) -> Option<F::Output> {
    std::future::poll_fn(|cx| match fut.as_mut().poll(cx) {
        std::task::Poll::Ready(out) => std::task::Poll::Ready(Some(out)),
        std::task::Poll::Pending => std::task::Poll::Ready(None),
    })
    .await
}

/// A deadline that never comes in practice (about 30 years).
pub(crate) fn far_future() -> Instant {
    Instant::now() + std::time::Duration::from_secs(86400 * 365 * 30)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rate_clock_deadline_follows_progress_not_length() {
        let rate = Some(DataRate {
            bytes_per_second: 1000,
            grace: Duration::from_secs(1),
        });
        let now = Instant::now();
        let mut clock = RateClock::default();
        assert_eq!(clock.deadline(None, now), None);
        // Nothing accepted yet: the grace, however much is about to be written.
        assert_eq!(
            clock.deadline(rate, now),
            Some(now + Duration::from_secs(1))
        );
        // 5,000 bytes accepted earn 5 s at 1,000 B/s, less the time already spent waiting.
        clock.bytes = 5000;
        clock.waited = Duration::from_secs(2);
        assert_eq!(
            clock.deadline(rate, now),
            Some(now + Duration::from_secs(3))
        );
        // A client that stalls past what it earned gets no time at all.
        clock.waited = Duration::from_secs(9);
        assert_eq!(clock.deadline(rate, now), Some(now));
        // Absurd figures do not overflow.
        clock.bytes = u64::MAX;
        clock.waited = Duration::ZERO;
        assert!(clock.deadline(rate, now).is_some());
    }

    /// A server-side `Io` (with buffers) and its client.
    #[cfg(target_os = "linux")]
    async fn io_pair() -> (Io, tokio::net::TcpStream) {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let client = tokio::net::TcpStream::connect(listener.local_addr().unwrap())
            .await
            .unwrap();
        let (server, _) = listener.accept().await.unwrap();
        let mut io = Io::new(Stream::Tcp(server), false);
        io.take_buffers(&BufferPool::new(1 << 16));
        (io, client)
    }

    /// Queues `n` bytes from the client and waits until the server's socket holds them.
    #[cfg(target_os = "linux")]
    async fn queue(io: &Io, client: &mut tokio::net::TcpStream, n: usize) {
        let before = low_water::queued(&io.stream);
        client.write_all(&vec![1u8; n]).await.unwrap();
        let mut tries = 0;
        while low_water::queued(&io.stream) < before + n as u64 && tries < 1000 {
            tries += 1;
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    }

    /// Bytes below a raised mark are not a stall: at the read's deadline the mark comes down
    /// and the read takes them. With nothing queued the deadline is a timeout, as without a mark.
    #[cfg(target_os = "linux")]
    #[tokio::test]
    async fn a_deadline_under_a_raised_mark_reads_what_the_mark_held_back() {
        use low_water::BODY_LOW_WATER;
        let (mut io, mut client) = io_pair().await;
        let after = |ms| Some(Instant::now() + Duration::from_millis(ms));
        // Nothing sent: a timeout, and the mark is down.
        io.set_low_water(BODY_LOW_WATER);
        assert_eq!(io.low_water, BODY_LOW_WATER);
        assert_eq!(
            io.read_body_to_buf(1 << 16, after(50)).await.unwrap(),
            Read::TimedOut
        );
        assert_eq!(io.low_water, 1);
        // 1,000 bytes queued under a 256 KiB mark, and a deadline before the mark's hold: read
        // at the deadline, not a timeout.
        io.set_low_water(BODY_LOW_WATER);
        queue(&io, &mut client, 1000).await;
        assert_eq!(
            io.read_body_to_buf(1 << 16, after(1)).await.unwrap(),
            Read::Data(1000)
        );
        assert_eq!(io.low_water, 1);
        // The same for a read straight into a caller's buffer.
        io.set_low_water(BODY_LOW_WATER);
        queue(&io, &mut client, 500).await;
        let mut dst = [0u8; 4096];
        assert_eq!(
            io.read_direct(&mut dst, after(1)).await.unwrap(),
            Read::Data(500)
        );
        assert_eq!(io.low_water, 1);
    }

    /// A client that pauses with fewer bytes sent than the mark has them read within the mark's
    /// hold, even by a read without any deadline (no minimum data rate): the handler sees them,
    /// a resumable upload records them.
    #[cfg(target_os = "linux")]
    #[tokio::test]
    async fn bytes_below_a_raised_mark_are_read_within_its_hold() {
        let (mut io, mut client) = io_pair().await;
        // A read that finds nothing clears tokio's readiness: the next read waits on the socket.
        let soon = Some(Instant::now() + Duration::from_millis(1));
        let mut dst = [0u8; 4096];
        assert_eq!(
            io.read_direct(&mut dst, soon).await.unwrap(),
            Read::TimedOut
        );
        io.set_low_water(low_water::BODY_LOW_WATER);
        queue(&io, &mut client, 700).await;
        let read = tokio::time::timeout(Duration::from_secs(20), io.read_direct(&mut dst, None));
        assert_eq!(read.await.expect("held back").unwrap(), Read::Data(700));
        assert_eq!(io.low_water, 1);
    }

    /// A head read after a body that ended under a raised mark runs with the mark at 1: a
    /// small request is read at once, not after the head timeout.
    #[cfg(target_os = "linux")]
    #[tokio::test]
    async fn a_head_read_lowers_a_mark_left_raised() {
        let (mut io, mut client) = io_pair().await;
        io.set_low_water(low_water::BODY_LOW_WATER);
        client.write_all(b"GET / HTTP/1.1\r\n\r\n").await.unwrap();
        let far = Some(Instant::now() + Duration::from_secs(600));
        assert_eq!(
            io.read_head_to_buf(4096, far).await.unwrap(),
            Read::Data(18)
        );
        assert_eq!(io.low_water, 1);
    }
}
