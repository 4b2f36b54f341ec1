//! The HTTP/2 connection driver: one task per connection drives the `h2` crate (reads and
//! writes frames, flow control, SETTINGS, PING), and each stream's handler runs on a task of
//! its own.
//!
//! The driver only accepts a new stream while fewer than `max_concurrent_streams` handlers run
//! for the connection. A stream the client reset still counts until its handler returns, so a
//! client cannot multiply running handlers by opening and resetting streams (rapid reset,
//! CVE-2023-44487); streams it opens meanwhile wait in h2's accept queue, and resetting those
//! trips h2's own limit on pending-accept resets (GOAWAY ENHANCE_YOUR_CALM).
//!
//! Closing: on the server's shutdown signal, or when no stream has run for the keep-alive
//! timeout, the driver starts h2's graceful shutdown (GOAWAY, then in-flight streams finish);
//! a client that does not let it complete within `DRAIN_LIMIT` is dropped. When the frame
//! meter gives a verdict (a control-frame flood), the connection is closed with GOAWAY and the
//! verdict's code.

use super::bdp::AdaptiveWindow;
use super::io::{H2Io, linger_close};
use super::meter::MeterReport;
use super::refused::Refusals;
use super::stream::H2Stream;
use super::window_budget::ConnectionWindow;
use crate::Handler;
use crate::exchange::{Exchange, Shared};
use crate::stats::BufferedGauge;
use crate::transport::{PeerAddr, Stream};
use bytes::Bytes;
use h2::server::{Connection, SendResponse};
use h2::{Ping, PingPong, Reason, RecvStream};
use std::future::poll_fn;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::sync::watch;
use tokio::task::JoinSet;
use tokio::time::Instant;

/// How long a closing connection may take to complete h2's graceful shutdown once no stream
/// runs (the client must answer a PING).
const DRAIN_LIMIT: Duration = Duration::from_secs(5);

// Events are consumed at once, one at a time: boxing the large variant would allocate per
// stream for nothing.
#[allow(clippy::large_enum_variant)]
enum Event {
    Stream(http::Request<RecvStream>, SendResponse<Bytes>),
    Closed(Result<(), h2::Error>),
    Shutdown,
    Idle,
}

/// The adaptive window and the PING handle it samples with.
struct Adaptive {
    pings: PingPong,
    window: AdaptiveWindow,
    /// The stream window last accepted by h2 (a change waits while SETTINGS are unacked).
    applied: u32,
}

/// Serves one HTTP/2 connection until it closes. `already_read` (at most 24 bytes: what
/// preface detection consumed) is replayed to h2 before the stream is read.
pub(crate) async fn serve_h2<H: Handler>(
    mut stream: Stream,
    peer: PeerAddr,
    already_read: &[u8],
    handler: Arc<H>,
    shared: Arc<Shared>,
    shutdown: watch::Receiver<bool>,
) {
    let io = H2Io::new(
        &mut stream,
        already_read,
        shared.config.http2.control_frame_budget,
    );
    drive(io, peer, handler, shared.clone(), shutdown).await;
    // h2 is done with the stream (its last frames are written): close without losing them.
    linger_close(&mut stream, &shared.buffers).await;
}

/// Drives h2 over `io` until the connection ends, then waits for the stream handlers.
async fn drive<H: Handler>(
    io: H2Io<'_>,
    peer: PeerAddr,
    handler: Arc<H>,
    shared: Arc<Shared>,
    mut shutdown: watch::Receiver<bool>,
) {
    let config = &shared.config;
    let h2_config = &config.http2;
    let report = io.report();
    let windows = config.http2_windows();
    let max_streams = h2_config.max_concurrent_streams.max(1);
    let mut builder = h2::server::Builder::new();
    // The connection window beyond HTTP/2's first 65,535 bytes comes from the server's
    // budget: as much as is left now (announced with the SETTINGS, so that a client sees it
    // before its first DATA), more later while it has streams.
    let mut window = ConnectionWindow::idle(shared.h2_window_budget.clone(), windows.connection);
    window.top_up();
    builder
        .initial_window_size(windows.initial_stream)
        .initial_connection_window_size(window.size())
        .max_frame_size(h2_config.max_frame_size.clamp(16_384, 16_777_215))
        .max_header_list_size(h2_config.max_header_list_size)
        .max_concurrent_streams(max_streams);
    // The preface and the client's SETTINGS must come within the head timeout.
    let handshake = tokio::time::timeout(config.head_timeout, builder.handshake::<_, Bytes>(io));
    let mut conn = match handshake.await {
        Ok(Ok(conn)) => conn,
        Ok(Err(e)) => {
            tracing::debug!(error = %e, "HTTP/2 handshake failed");
            return;
        }
        Err(_) => {
            tracing::debug!("HTTP/2 handshake timed out");
            return;
        }
    };
    let mut adaptive = if h2_config.adaptive_window {
        conn.ping_pong().map(|pings| Adaptive {
            pings,
            window: AdaptiveWindow::new(windows.stream, h2_config.max_window, Instant::now()),
            applied: windows.stream,
        })
    } else {
        None
    };

    let mut tasks: JoinSet<()> = JoinSet::new();
    // This connection's share of the server's body gauges, taken from h2's flow-control
    // accounting after each turn of this task (frames are received only here).
    let mut gauge = BufferedGauge::default();
    // Request heads h2 refused itself, as last reported to `Config::on_refused`.
    let mut refused = Refusals::default();
    let mut draining = false;
    let mut stopped = false;
    let idle = tokio::time::sleep(config.keep_alive_timeout);
    tokio::pin!(idle);
    // One wait on the shutdown signal for the connection's life, not one per event: each new
    // wait registers a waiter on the signal and each dropped one takes it off, both under a
    // lock shared with other connections. Polled only until it fires (`draining` then).
    let stop = shutdown.changed();
    tokio::pin!(stop);
    let mut idle_armed = true;
    loop {
        if tasks.is_empty() && !idle_armed {
            let wait = if draining {
                DRAIN_LIMIT
            } else {
                config.keep_alive_timeout
            };
            idle.as_mut().reset(Instant::now() + wait);
            idle_armed = true;
        }
        let event = tokio::select! {
            biased;
            _ = &mut stop, if !draining => Event::Shutdown,
            () = &mut idle, if idle_armed => Event::Idle,
            event = poll_fn(|cx| {
                let event = poll_connection(
                    cx, &mut conn, &mut tasks, max_streams, &report, &mut adaptive, &mut stopped,
                    &mut window, h2_config,
                );
                let seen = conn.recv_accounting();
                gauge.set_held(seen.unreleased as usize, seen.streams_full > 0, &shared.stats);
                refused.report(&seen, peer, &shared.config);
                event
            }) => event,
        };
        match event {
            Event::Stream(request, mut respond) => {
                let (method, uri, headers) = (request.method(), request.uri(), request.headers());
                if let Some(fault) = super::validate::malformed(method, uri, headers) {
                    tracing::debug!(?fault, "malformed HTTP/2 request; resetting its stream");
                    respond.send_reset(Reason::PROTOCOL_ERROR);
                    super::refused::malformed(fault, method, uri, peer, config);
                    continue;
                }
                let expects = headers.get_all(http::header::EXPECT).iter();
                if expects
                    .into_iter()
                    .any(|v| config.limits.refuses_expectation(v.as_bytes()))
                {
                    // As HTTP/1.1 answers it (`weir-proto`'s parser), before any handler runs.
                    // ALLOCATION: the refusal's head, on refused requests only.
                    let refusal = http::Response::builder()
                        .status(http::StatusCode::EXPECTATION_FAILED)
                        .body(())
                        .expect("a status alone makes a valid response");
                    let _ = respond.send_response(refusal, true);
                    super::refused::expectation(method, uri, peer, config);
                    continue;
                }
                idle_armed = false;
                let handler = handler.clone();
                let shared = shared.clone();
                // The window a stream starts with, and the one it opens to once read.
                let (initial, window) = adaptive
                    .as_ref()
                    .map_or((windows.initial_stream, windows.stream), |a| {
                        (a.applied, a.applied)
                    });
                // ALLOCATION: the stream's future is boxed. Unboxed, the whole future (the
                // stream's state and the handler's future, kilobytes) is the task's stage,
                // which tokio moves several times per task (spawn, the task cell, each stage
                // change, reading the output): one allocation costs less than those copies
                // (docs/archive/BENCHMARKS-history.md, "HTTP/2 and HTTP/1.1 per request").
                tasks.spawn(Box::pin(async move {
                    let mut stream = H2Stream::new(request, respond, initial, window, peer, shared);
                    let result = {
                        let mut exchange = Exchange::h2(&mut stream);
                        handler.handle(&mut exchange).await
                    };
                    stream.finish(result).await;
                }));
            }
            Event::Shutdown => {
                conn.graceful_shutdown();
                draining = true;
                idle_armed = false;
            }
            Event::Idle if draining => {
                tracing::debug!("HTTP/2 client did not complete the shutdown; closing");
                break;
            }
            Event::Idle => {
                conn.graceful_shutdown();
                draining = true;
                idle_armed = false;
            }
            Event::Closed(Ok(())) => break,
            Event::Closed(Err(e)) => {
                tracing::debug!(error = %e, "HTTP/2 connection closed with an error");
                break;
            }
        }
    }
    // Dropping the connection fails the streams' pending I/O at once, so handlers still
    // running see a disconnect instead of waiting on a connection nobody drives.
    drop(conn);
    while tasks.join_next().await.is_some() {}
    // The streams' buffers are gone with their handlers.
    gauge.set_held(0, false, &shared.stats);
}

/// Drives the connection: reaps finished handlers, runs the adaptive window, closes on a
/// meter's verdict, and accepts the next stream while below the handler bound.
#[allow(clippy::too_many_arguments)]
fn poll_connection(
    cx: &mut Context<'_>,
    conn: &mut Connection<H2Io<'_>, Bytes>,
    tasks: &mut JoinSet<()>,
    max_streams: u32,
    report: &MeterReport,
    adaptive: &mut Option<Adaptive>,
    stopped: &mut bool,
    window: &mut ConnectionWindow,
    config: &crate::Http2Config,
) -> Poll<Event> {
    if let Some(verdict) = report.verdict().filter(|_| !*stopped) {
        tracing::debug!(?verdict, "HTTP/2 frame meter closes the connection");
        *stopped = true;
        conn.abrupt_shutdown(verdict.reason());
    }
    while let Poll::Ready(Some(joined)) = tasks.poll_join_next(cx) {
        if let Err(e) = joined {
            if e.is_panic() {
                tracing::error!("HTTP/2 stream handler panicked");
            }
        }
    }
    if let Some(adaptive) = adaptive {
        adapt_window(cx, conn, adaptive, report, window, config);
    }
    if !tasks.is_empty() {
        if let Some(size) = window.top_up() {
            conn.set_target_window_size(size);
        }
    }
    if tasks.len() < max_streams as usize {
        match conn.poll_accept(cx) {
            Poll::Ready(Some(Ok((request, respond)))) => {
                Poll::Ready(Event::Stream(request, respond))
            }
            Poll::Ready(Some(Err(e))) => Poll::Ready(Event::Closed(Err(e))),
            Poll::Ready(None) => Poll::Ready(Event::Closed(Ok(()))),
            Poll::Pending => Poll::Pending,
        }
    } else {
        // At the bound: keep the connection moving (frames, flow control, resets) without
        // taking new streams; a finishing handler wakes this task through the join set.
        conn.poll_closed(cx).map(Event::Closed)
    }
}

/// One step of the adaptive window: sample with a PING while data flows, and widen the
/// windows when the estimate grows.
fn adapt_window(
    cx: &mut Context<'_>,
    conn: &mut Connection<H2Io<'_>, Bytes>,
    adaptive: &mut Adaptive,
    report: &MeterReport,
    window: &mut ConnectionWindow,
    config: &crate::Http2Config,
) {
    let now = Instant::now();
    let bytes = report.bytes();
    if adaptive.window.is_ping_in_flight() {
        if let Poll::Ready(Ok(_)) = adaptive.pings.poll_pong(cx) {
            adaptive.window.pong_received(now, bytes);
        }
    } else if adaptive.window.wants_ping(now, bytes)
        && adaptive.pings.send_ping(Ping::opaque()).is_ok()
    {
        adaptive.window.ping_sent(bytes);
        // Registers this task for the PONG (it is read by this same task).
        let _ = adaptive.pings.poll_pong(cx);
    }
    let wanted = adaptive.window.window();
    if wanted != adaptive.applied && conn.set_initial_window_size(wanted).is_ok() {
        tracing::debug!(window = wanted, "HTTP/2 adaptive window grew");
        adaptive.applied = wanted;
        if let Some(size) = window.want(config.connection_window_for(wanted)) {
            conn.set_target_window_size(size);
        }
    }
}
