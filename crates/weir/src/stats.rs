//! Counters a server exposes for tests and monitoring. Updated off the hot path: per connection,
//! or only when a high-water mark is exceeded.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

/// Server-wide counters, shared by all connections. Read them through
/// [`ServerHandle::stats`](crate::ServerHandle::stats).
#[derive(Debug, Default)]
pub struct Stats {
    peak_body_buffered: AtomicUsize,
    accepted: AtomicU64,
    active: AtomicUsize,
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
