//! The HTTP/1.1 connection driver: one task per connection runs head parsing, the handler and
//! every body read, in sequence, on the connection's own task. There is no channel, no spawned
//! task and no thread hop between the socket and the handler's reads: a body read is a method
//! call that reads the socket when (and only when) the handler asks.
//!
//! The states of `weir_proto::conn` map to this code: `read_head` (ReadingHead), the handler
//! call (Exchange), `finish_exchange` (Finishing) and `close` (Closing).

use super::body_state::BodyState;
use super::io::{Io, RateClock, Read};
use crate::error::Misuse;
use crate::exchange::Exchange;
use crate::exchange::Shared;
use crate::exchange::backend::Backend;
use crate::exchange::extra_headers::ExtraHeaders;
use crate::exchange::lifecycle::ResponseLifecycle;
use crate::handler::Handler;
use crate::{DataRate, Error, Request, zero_copy};
use bytes::Buf;
use http::StatusCode;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::Poll;
use std::time::Duration;
use tokio::sync::watch;
use tokio::sync::watch::error::RecvError;
use tokio::time::Instant;
use weir_proto::conn::{BodyLeft, Next, Persistence};
use weir_proto::date::DateCache;
use weir_proto::encode::ResponseFraming;
use weir_proto::parse::HeadParser;
use weir_proto::{ProtoError, encode};

/// How long a closing connection keeps discarding what the client still sends, so that the
/// kernel does not answer that data with a reset that destroys our last response before the
/// client has read it (the "lingering close" of RFC 9112 §9.6).
const LINGER: Duration = Duration::from_secs(2);

/// Pipelined responses are flushed together, but not beyond this many bytes.
const PIPELINE_FLUSH_LIMIT: usize = 64 * 1024;

/// Everything one connection owns. Reused from request to request.
pub(crate) struct Conn {
    pub(crate) io: Io,
    parser: HeadParser,
    pub(crate) head: Request,
    pub(crate) body: BodyState,
    pub(crate) resp: ResponseLifecycle,
    /// `Exchange::add_response_header`'s fields, cleared for every request.
    pub(crate) extra_headers: ExtraHeaders,
    /// The framing chosen for the current response head.
    pub(crate) resp_framing: ResponseFraming,
    pub(crate) persistence: Persistence,
    pub(crate) shared: Arc<Shared>,
    pub(super) date: DateCache,
    pub(crate) pipe: Option<zero_copy::Pipe>,
    /// The client's address, as `accept` gave it (`Listener::accept` says why not later).
    pub(crate) peer: crate::transport::PeerAddr,
    /// The shutdown signal's waiter is registered (by the first idle wait: `wait_idle`).
    stop_armed: bool,
    /// The handler took the connection's bytes over (`hand_over`): after it, nothing is written
    /// and the connection is dropped.
    handed_over: bool,
}

/// A connection handed over to its handler ([`Conn::hand_over`]).
#[cfg(feature = "upgrades")]
pub(crate) struct HandOver<'c> {
    pub(crate) stream: &'c mut crate::transport::Stream,
    /// Responses to earlier pipelined requests, not yet written.
    pub(crate) unsent: bytes::Bytes,
    /// Bytes read past the request's head.
    pub(crate) read: bytes::Bytes,
    /// The server's configuration, whose head limits the new server keeps.
    pub(crate) config: &'c crate::Config,
}

/// Why reading a head ended without a request.
enum HeadEnd {
    /// Closed cleanly: EOF between requests, idle timeout, shutdown.
    Closed,
    /// A malformed or oversized head: answer and close.
    Invalid(ProtoError),
    /// The head did not arrive in time: 408 and close.
    Timeout,
    /// The connection failed; nothing can be sent.
    Broken,
}

/// What to do after an exchange.
enum After {
    Continue,
    Close,
    /// The connection is unusable (the peer is gone): drop it without writing.
    Abort,
}

/// Serves HTTP/1.1 on `stream`. `already_read` holds bytes read from the stream before (the
/// server reads up to 24 to tell HTTP/2 prior knowledge from HTTP/1.1); they are parsed first,
/// with the descriptor passed with them, if any (`Config::accept_passed_fds`).
pub(crate) async fn serve_connection<H: Handler>(
    stream: crate::transport::Stream,
    peer: crate::transport::PeerAddr,
    (already_read, passed_fd): (&[u8], Option<std::os::fd::OwnedFd>),
    handler: &H,
    shared: Arc<Shared>,
    mut shutdown: watch::Receiver<bool>,
) {
    let mut conn = Conn::new(stream, peer, shared);
    // One wait on the shutdown signal for the connection's life, polled only while the
    // connection waits for a head: a wait made afresh for each request registers a waiter on
    // the signal and takes it off again, each under a lock shared with other connections.
    // Once it fires, the connection closes (it is never polled after that).
    let stop = shutdown.changed();
    tokio::pin!(stop);
    if !already_read.is_empty() {
        conn.io.take_buffers(&conn.shared.buffers);
        conn.io.rbuf.extend_from_slice(already_read);
    }
    conn.io.passed_fd = passed_fd;
    let mut first = true;
    loop {
        match conn.read_head(first, stop.as_mut()).await {
            Ok(()) => {}
            Err(HeadEnd::Closed) => break,
            Err(HeadEnd::Invalid(e)) => {
                // Not HTTP/1 at all (an invalid HTTP/2 preface, on the cleartext port): closed
                // without an answer (`ProtoError::is_answered`).
                if e.is_answered() {
                    conn.report_refused(e.status(), e.as_str());
                    conn.respond_to_bad_head(e.status(), e.as_str());
                }
                break;
            }
            Err(HeadEnd::Timeout) => {
                let reason = "request head timeout";
                conn.report_refused(StatusCode::REQUEST_TIMEOUT, reason);
                conn.respond_to_bad_head(StatusCode::REQUEST_TIMEOUT, reason);
                break;
            }
            Err(HeadEnd::Broken) => return,
        }
        first = false;
        conn.begin_exchange();
        let result = {
            let mut exchange = Exchange::h1(&mut conn);
            handler.handle(&mut exchange).await
        };
        match conn.finish_exchange(result).await {
            After::Continue => {}
            After::Close => break,
            After::Abort => return,
        }
    }
    conn.release_body_gauge();
    conn.close().await;
}

impl Drop for Conn {
    fn drop(&mut self) {
        // Whichever way the connection ended (closed, aborted, its task cancelled).
        self.release_body_gauge();
        self.io.release_buffers(&self.shared.buffers);
    }
}

impl Conn {
    fn new(
        stream: crate::transport::Stream,
        peer: crate::transport::PeerAddr,
        shared: Arc<Shared>,
    ) -> Self {
        let config = &shared.config;
        let head = Request::new();
        Self {
            peer,
            io: Io::new(stream, config.accept_passed_fds),
            parser: HeadParser::new(),
            body: BodyState::new(config),
            resp: ResponseLifecycle::default(),
            extra_headers: ExtraHeaders::default(),
            resp_framing: ResponseFraming::NoBody,
            persistence: Persistence::new(head.head()),
            head,
            date: DateCache::new(),
            pipe: None,
            shared,
            stop_armed: false,
            handed_over: false,
        }
    }

    /// Hands the connection over to the handler, before any response: the stream, what earlier
    /// pipelined responses left unsent in the write buffer (to be written first), and what was
    /// read past the request's head (COPY: those bytes, once per hand-over). The connection is
    /// dropped after the exchange, with nothing more written. `None` once a response has
    /// started.
    #[cfg(feature = "upgrades")]
    pub(crate) fn hand_over(&mut self) -> Option<HandOver<'_>> {
        if self.resp.is_started() {
            return None;
        }
        self.handed_over = true;
        let unsent = bytes::Bytes::copy_from_slice(&self.io.wbuf);
        self.io.wbuf.clear();
        let read = bytes::Bytes::copy_from_slice(&self.io.rbuf);
        self.io.rbuf.clear();
        Some(HandOver {
            stream: &mut self.io.stream,
            unsent,
            read,
            config: &self.shared.config,
        })
    }

    /// Reads until a whole head is parsed into `self.head`, flushing pipelined responses before
    /// it waits on the socket.
    async fn read_head(
        &mut self,
        first: bool,
        mut stop: Pin<&mut impl Future<Output = Result<(), RecvError>>>,
    ) -> Result<(), HeadEnd> {
        // Deadlines are computed only when the connection has to wait: reading the clock for
        // every pipelined request showed in plaintext profiles. The first head must arrive
        // within the head timeout; between requests a connection may idle for the keep-alive
        // timeout; a head that has started must be complete within the head timeout.
        let mut idle_deadline = None;
        let mut head_deadline = None;
        self.parser.reset();
        loop {
            if !self.io.rbuf.is_empty() {
                match self.parser.parse(
                    &self.io.rbuf,
                    &self.shared.config.limits.proto(),
                    self.head.head_mut(),
                ) {
                    Ok(Some(len)) => {
                        self.io.rbuf.advance(len);
                        return Ok(());
                    }
                    Ok(None) => {}
                    Err(e) => return Err(HeadEnd::Invalid(e)),
                }
            }
            let now = Instant::now();
            if !self.io.wbuf.is_empty() {
                match self.io.write_all(&[], self.write_rate()).await {
                    Ok(true) => {}
                    Ok(false) | Err(_) => return Err(HeadEnd::Broken),
                }
            }
            let idle = self.io.rbuf.is_empty();
            // The flag is set before the signal is sent (`Server::shutdown`).
            if idle && self.shared.is_shutting_down() {
                return Err(HeadEnd::Closed);
            }
            let deadline = if idle && !first {
                *idle_deadline.get_or_insert(now + self.shared.config.keep_alive_timeout)
            } else {
                *head_deadline.get_or_insert(now + self.shared.config.head_timeout)
            };
            if idle && self.io.can_release() {
                match self.wait_idle(first, deadline, stop.as_mut()).await? {
                    Some(Ok(Read::Data(_))) => continue,
                    Some(Ok(Read::Eof)) => return Err(HeadEnd::Closed),
                    Some(Ok(Read::TimedOut)) => unreachable!("read without a deadline"),
                    Some(Err(_)) => return Err(HeadEnd::Broken),
                    // Readable, but the read would wait (over TLS, part of a record): the
                    // timed read below, with the buffers taken.
                    None => {}
                }
            }
            let max = self.shared.config.read_buffer_size;
            // Biased: the shutdown signal is looked at only while the read waits (a ready read
            // neither registers nor drops a waiter on the signal).
            let read = tokio::select! {
                biased;
                read = self.io.read_head_to_buf(max, Some(deadline)) => read,
                _ = stop.as_mut(), if idle => return Err(HeadEnd::Closed),
            };
            match read {
                Ok(Read::Data(_)) => {}
                Ok(Read::Eof) if self.io.rbuf.is_empty() => return Err(HeadEnd::Closed),
                Ok(Read::Eof) | Err(_) => return Err(HeadEnd::Broken),
                Ok(Read::TimedOut) if self.io.rbuf.is_empty() && !first => {
                    return Err(HeadEnd::Closed);
                }
                Ok(Read::TimedOut) => return Err(HeadEnd::Timeout),
            }
        }
    }

    /// The wait of a connection with nothing buffered: on a new connection a read first (its
    /// first head is often there already); then the buffers go back to the pool while the
    /// socket is not readable, and once it is, they are taken again and
    /// read into at once, without a deadline (the socket has bytes). `Ok(Some(read))` with the
    /// read that ended the wait; `Ok(None)` when that second read would wait too (over TLS, a
    /// record not yet whole), buffers taken; `Err` when the wait ended the connection (idle
    /// timeout, shutdown, a failed socket).
    ///
    /// So a request that finds its connection idle costs one readiness wait (with the deadline
    /// and the shutdown signal) and the reads, not a second timed wait after the readiness.
    async fn wait_idle(
        &mut self,
        first: bool,
        deadline: Instant,
        mut stop: Pin<&mut impl Future<Output = Result<(), RecvError>>>,
    ) -> Result<Option<std::io::Result<Read>>, HeadEnd> {
        let max = self.shared.config.read_buffer_size;
        // A new connection holds no pair yet: a pooled one, not a fresh allocation, for its
        // first read.
        // A new connection's first head is usually there already: read at once, into a pooled
        // pair (it holds none yet). Between requests that read is not tried: tokio reads the
        // socket only when its readiness is set, which is what `readable` below looks at, so
        // the read would tell nothing more, at the cost of a read future (at depth 1 it found
        // nothing every time). A readiness left set by a read that filled the buffer makes
        // `readable` answer at once, and the read after it waits (`Ok(None)`).
        if first {
            self.io.take_buffers(&self.shared.buffers);
            // A read that would wait clears the socket's readiness, so `readable` below waits
            // for new bytes; dropped unfinished, it has read nothing.
            let read =
                super::io::poll_once(std::pin::pin!(self.io.read_head_to_buf(max, None))).await;
            if let Some(read) = read {
                return Ok(Some(read));
            }
        }
        self.io.release_buffers(&self.shared.buffers);
        // Once the socket is readable, shutdown is not looked at. The signal's waiter is
        // registered by the connection's first idle wait and stays registered (the task's
        // waker does not change); later waits read the flag the server sets before it
        // signals, instead of polling the signal again (its checks and lock, every request).
        let ready = {
            let Self {
                io,
                shared,
                stop_armed,
                ..
            } = self;
            let mut readable = std::pin::pin!(io.readable(deadline));
            std::future::poll_fn(|cx| {
                if let Poll::Ready(ready) = readable.as_mut().poll(cx) {
                    return Poll::Ready(Some(ready));
                }
                if shared.is_shutting_down() {
                    return Poll::Ready(None);
                }
                if !*stop_armed {
                    *stop_armed = true;
                    if stop.as_mut().poll(cx).is_ready() {
                        return Poll::Ready(None);
                    }
                }
                Poll::Pending
            })
            .await
        };
        let Some(ready) = ready else {
            return Err(HeadEnd::Closed);
        };
        match ready {
            Some(Ok(())) => {
                self.io.take_buffers(&self.shared.buffers);
                Ok(super::io::poll_once(std::pin::pin!(self.io.read_head_to_buf(max, None))).await)
            }
            // An idle connection that timed out is closed without an answer, as below; one
            // that never sent its first head gets 408, written from a buffer of the pool.
            None if first => {
                self.io.take_buffers(&self.shared.buffers);
                Err(HeadEnd::Timeout)
            }
            None => Err(HeadEnd::Closed),
            Some(Err(_)) => Err(HeadEnd::Broken),
        }
    }

    fn begin_exchange(&mut self) {
        self.body.begin(self.head.head(), &self.shared.config);
        self.io.write_clock = RateClock::default();
        self.resp.reset();
        self.extra_headers.clear();
        self.persistence = Persistence::new(self.head.head());
        // Body bytes that came with the head wait for the handler from now on.
        self.sync_body_gauge();
    }

    /// Completes the response, drains or abandons the body, and decides the connection's fate.
    async fn finish_exchange(&mut self, result: Result<(), Error>) -> After {
        if self.handed_over {
            return After::Abort;
        }
        // A passed descriptor belongs to its request: closed if the handler left it.
        self.io.passed_fd = None;
        if let Err(e) = &result {
            if e.breaks_body() {
                self.body.policy.mark_broken(e);
            }
            if e.is_disconnect() {
                return After::Abort;
            }
        }
        match (&result, self.resp.is_started()) {
            (Err(e), false) => {
                tracing::debug!(error = %e, "handler failed before responding");
                let status = e.status_code();
                if self.write_error_response(status, e).await.is_err() {
                    return After::Abort;
                }
            }
            (Err(e), true) => {
                // The response is cut short: closing is the only way to tell the client.
                tracing::debug!(error = %e, "handler failed while responding");
                self.persistence.close();
            }
            (Ok(()), false) => {
                tracing::warn!(
                    path = self.head.path(),
                    "handler returned without responding"
                );
                let e = Error::invalid_response(Misuse::NoResponse);
                if self
                    .write_error_response(StatusCode::INTERNAL_SERVER_ERROR, &e)
                    .await
                    .is_err()
                {
                    return After::Abort;
                }
            }
            (Ok(()), true) => Backend::complete_if_open(self),
        }

        let response_complete = self.resp.is_complete();
        let drain_limit = self.shared.config.drain_limit;
        let left = self.body_left();
        let next = self.persistence.after_exchange(
            response_complete,
            left,
            self.body.policy.continue_sent,
            drain_limit,
        );
        if next == Next::Drain && !self.io.wbuf.is_empty() {
            // The client may still be sending a body we will not use: let it see the answer
            // now (clients stop sending on an early final response), not after the drain.
            if !matches!(self.io.write_all(&[], self.write_rate()).await, Ok(true)) {
                return After::Abort;
            }
        }
        match next {
            Next::ReadNext => {}
            Next::Drain => {
                if !self.drain_body(drain_limit).await {
                    return After::Close;
                }
            }
            Next::Close => return After::Close,
        }
        if self.io.wbuf.len() >= PIPELINE_FLUSH_LIMIT
            && !matches!(self.io.write_all(&[], self.write_rate()).await, Ok(true))
        {
            return After::Abort;
        }
        self.io.shrink_read_buffer(
            self.shared
                .config
                .effective_pause_threshold()
                .min(256 * 1024),
            self.shared.config.read_buffer_size,
        );
        self.release_body_gauge();
        After::Continue
    }

    /// Takes this connection's bytes out of the server's body gauges (the exchange is over).
    fn release_body_gauge(&mut self) {
        self.body.gauge.set(0, usize::MAX, &self.shared.stats);
    }

    /// What is left of the request body, for the persistence decision.
    pub(crate) fn body_left(&self) -> BodyLeft {
        if self.body.policy.is_broken() {
            BodyLeft::Broken
        } else if self.body.decoder.is_done() {
            BodyLeft::Nothing
        } else {
            match self.body.decoder.remaining_hint() {
                Some(n) => BodyLeft::Known(n),
                None => BodyLeft::Unknown,
            }
        }
    }

    /// Tells [`Config::on_refused`](crate::Config::on_refused), if set, of a head refused with
    /// `status`; the request line as far as it was read (the failed head is still in the read
    /// buffer).
    fn report_refused(&self, status: StatusCode, reason: &str) {
        let Some(on_refused) = &self.shared.config.on_refused else {
            return;
        };
        let (method, target) = crate::refused::request_line(&self.io.rbuf);
        on_refused.call(&crate::Refused {
            peer: self.peer_addr(),
            status,
            reason,
            method,
            target,
        });
    }

    /// Answers a head that could not be parsed, and marks the connection for closing.
    fn respond_to_bad_head(&mut self, status: StatusCode, reason: &str) {
        let wbuf = &mut self.io.wbuf;
        encode::status_line(wbuf, status);
        encode::content_length(wbuf, reason.len() as u64 + 1);
        encode::header_unchecked(wbuf, b"content-type", b"text/plain; charset=utf-8");
        encode::header_unchecked(wbuf, b"connection", b"close");
        let date = self.date.value_at(crate::clock::unix_seconds());
        encode::header_unchecked(wbuf, b"date", date);
        encode::end_head(wbuf);
        wbuf.extend_from_slice(reason.as_bytes());
        wbuf.push(b'\n');
    }

    /// Flushes, then closes gracefully (see `Io::linger_close`).
    async fn close(&mut self) {
        if !self.io.wbuf.is_empty()
            && !matches!(self.io.write_all(&[], self.write_rate()).await, Ok(true))
        {
            return;
        }
        self.io.linger_close(LINGER, &self.shared.buffers).await;
    }

    /// The minimum response data rate, which every write is held to (see `io::RateClock`).
    pub(crate) fn write_rate(&self) -> Option<DataRate> {
        self.shared.config.min_response_rate
    }
}
