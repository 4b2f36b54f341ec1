//! Counters a server exposes for tests and monitoring. Updated off the hot path: per connection,
//! only when a high-water mark is exceeded, or (the body gauges) when a connection's buffered
//! body bytes change, which happens at most once per socket read or per handler read that takes
//! buffered bytes (HTTP/1.1), or once per turn of the HTTP/2 connection task (one lock of h2's
//! stream table it takes anyway, then an atomic add of the difference, if any); an HTTP/1.1
//! handler reading straight from the socket (direct reads, splice) leaves them at 0 and never
//! touches them.

use std::sync::atomic::{AtomicIsize, AtomicU64, AtomicUsize, Ordering};

/// Server-wide counters, shared by all connections. Read them through
/// [`ServerHandle::stats`](crate::ServerHandle::stats).
#[derive(Debug, Default)]
pub struct Stats {
    peak_body_buffered: AtomicUsize,
    accepted: AtomicU64,
    active: AtomicUsize,
    /// Signed: an HTTP/2 stream takes back the bytes it keeps window for (`withheld`) as it
    /// consumes them, which may come just before its connection task adds their arrival.
    body_buffered: AtomicIsize,
    paused: AtomicUsize,
}

impl Stats {
    /// The most request-body bytes any connection has held read ahead of its handler.
    /// Bounded by the pause threshold plus one read (see `Config::pause_threshold`).
    pub fn peak_body_buffered(&self) -> usize {
        self.peak_body_buffered.load(Ordering::Relaxed)
    }

    /// Connections accepted since the server started.
    pub fn accepted_connections(&self) -> u64 {
        self.accepted.load(Ordering::Relaxed)
    }

    /// Connections open now.
    pub fn active_connections(&self) -> usize {
        self.active.load(Ordering::Relaxed)
    }

    /// Request body bytes held now ahead of their handlers, all connections together.
    /// HTTP/1.1: read from the socket into the connection's buffer, not yet taken (at most the
    /// pause threshold plus one read buffer per connection). HTTP/2: received in DATA frames
    /// and not yet given back to the client's flow-control window, as of the connection task's
    /// last turn (at most the stream window per stream), less the bytes handlers have consumed
    /// whose window is kept back because their pause threshold is below the stream window.
    pub fn body_buffered_now(&self) -> usize {
        self.body_buffered.load(Ordering::Relaxed).max(0) as usize
    }

    /// Connections paused now. HTTP/1.1: its buffered body bytes have reached the pause
    /// threshold, and the server reads no more of the body until the handler takes some.
    /// HTTP/2: at least one of its streams holds a whole stream window unreleased, so the
    /// client may send that stream nothing more (counted once however many streams are).
    pub fn connections_paused(&self) -> usize {
        self.paused.load(Ordering::Relaxed)
    }

    pub(crate) fn record_body_buffered(&self, n: usize) {
        self.peak_body_buffered.fetch_max(n, Ordering::Relaxed);
    }

    pub(crate) fn connection_opened(&self) {
        self.accepted.fetch_add(1, Ordering::Relaxed);
        self.active.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn connection_closed(&self) {
        self.active.fetch_sub(1, Ordering::Relaxed);
    }

    /// An HTTP/2 stream's consumed bytes whose window it keeps back went from `old` to `new`:
    /// they are counted by its connection as unreleased, but no longer held.
    #[cfg(feature = "http2")]
    pub(crate) fn withheld_changed(&self, old: usize, new: usize) {
        if new != old {
            self.body_buffered
                .fetch_sub(new as isize - old as isize, Ordering::Relaxed);
        }
    }
}

/// One connection's share of [`Stats::body_buffered_now`] and [`Stats::connections_paused`]:
/// what it last added, so that it adds only the difference (nothing when unchanged) and takes
/// it all back when it ends ([`BufferedGauge::set`] with 0).
#[derive(Debug, Default)]
pub(crate) struct BufferedGauge {
    buffered: usize,
    paused: bool,
}

impl BufferedGauge {
    /// The connection now holds `buffered` body bytes ahead of its handler, under `threshold`.
    pub(crate) fn set(&mut self, buffered: usize, threshold: usize, stats: &Stats) {
        self.set_held(buffered, buffered > 0 && buffered >= threshold, stats);
    }

    /// The connection now holds `buffered` body bytes, and is `paused` (HTTP/2: at least one
    /// of its streams has a full window).
    pub(crate) fn set_held(&mut self, buffered: usize, paused: bool, stats: &Stats) {
        if buffered != self.buffered {
            // Buffers are far below `isize::MAX` bytes.
            stats.body_buffered.fetch_add(
                buffered as isize - self.buffered as isize,
                Ordering::Relaxed,
            );
            self.buffered = buffered;
        }
        if paused != self.paused {
            if paused {
                stats.paused.fetch_add(1, Ordering::Relaxed);
            } else {
                stats.paused.fetch_sub(1, Ordering::Relaxed);
            }
            self.paused = paused;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_gauge_adds_differences_and_takes_them_back() {
        let stats = Stats::default();
        let (mut a, mut b) = (BufferedGauge::default(), BufferedGauge::default());
        a.set(100, 4096, &stats);
        b.set(4096, 4096, &stats);
        assert_eq!(
            (stats.body_buffered_now(), stats.connections_paused()),
            (4196, 1)
        );
        b.set(5000, 4096, &stats);
        assert_eq!(
            (stats.body_buffered_now(), stats.connections_paused()),
            (5100, 1)
        );
        b.set(10, 4096, &stats);
        assert_eq!(
            (stats.body_buffered_now(), stats.connections_paused()),
            (110, 0)
        );
        a.set(0, 4096, &stats);
        b.set(0, 4096, &stats);
        assert_eq!(
            (stats.body_buffered_now(), stats.connections_paused()),
            (0, 0)
        );
    }
}

/// What happened to one request's body, for the handler to inspect (and tests to assert).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BodyStats {
    /// Payload bytes handed to the handler so far.
    pub received: u64,
    /// Payload bytes that were read into the connection buffer first and then copied out
    /// (read-ahead, small reads, or bytes that arrived with the head).
    pub copied: u64,
    /// Payload bytes read from the socket straight into the handler's buffer.
    pub direct: u64,
    /// Payload bytes moved from the socket to a file by `splice`, never entering user space.
    pub spliced: u64,
    /// The most body bytes held in the connection buffer ahead of the handler.
    pub peak_buffered: usize,
}
