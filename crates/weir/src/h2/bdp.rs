//! The adaptive stream window: grows the window of a connection's streams to the path's
//! bandwidth-delay product (BDP), measured with PING round trips.
//!
//! A stream can carry at most one window per round trip. When the bytes received during one
//! PING round trip come close to the window (two thirds of it), the window is what limits the
//! transfer: it doubles (to twice the bytes seen), up to a maximum. While it grows, samples are
//! taken more often; once it is stable they become rarer (up to one per 10 s), so an idle or
//! steady connection costs almost no PINGs. The idea is hyper's (`proto/h2/ping.rs`); weir
//! counts bytes in the connection's I/O (`io::MeterReport`) instead of in each stream, so the
//! whole estimator lives in the connection task, without locks.
//!
//! The window starts at the pause threshold and never shrinks: it only stops growing.

use std::time::Duration;
use tokio::time::Instant;

/// First wait between samples, and the bounds of the back-off.
const FIRST_DELAY: Duration = Duration::from_millis(100);
const MIN_DELAY: Duration = Duration::from_millis(10);
const MAX_DELAY: Duration = Duration::from_secs(10);

#[derive(Debug)]
pub(crate) struct AdaptiveWindow {
    window: u32,
    max: u32,
    /// A PING in flight: the byte count when it was sent.
    in_flight: Option<u64>,
    /// Byte count when the last sample ended: a new PING is sent only once more data came.
    last_bytes: u64,
    next_at: Instant,
    delay: Duration,
    stable: u32,
}

impl AdaptiveWindow {
    pub(crate) fn new(window: u32, max: u32, now: Instant) -> Self {
        Self {
            window,
            max: max.max(window),
            in_flight: None,
            last_bytes: 0,
            next_at: now,
            delay: FIRST_DELAY,
            stable: 0,
        }
    }

    /// The current stream window.
    pub(crate) fn window(&self) -> u32 {
        self.window
    }

    pub(crate) fn is_ping_in_flight(&self) -> bool {
        self.in_flight.is_some()
    }

    /// Whether a PING should be sent now: data is arriving, none is in flight, the delay has
    /// passed, and the window can still grow.
    pub(crate) fn wants_ping(&self, now: Instant, bytes: u64) -> bool {
        self.window < self.max
            && self.in_flight.is_none()
            && bytes > self.last_bytes
            && now >= self.next_at
    }

    pub(crate) fn ping_sent(&mut self, bytes: u64) {
        self.in_flight = Some(bytes);
    }

    /// The PING came back: samples the round trip. Returns the new window if it grew.
    pub(crate) fn pong_received(&mut self, now: Instant, bytes: u64) -> Option<u32> {
        let bytes_then = self.in_flight.take()?;
        self.last_bytes = bytes;
        let grown = self.sample(bytes.saturating_sub(bytes_then));
        self.next_at = now + self.delay;
        grown
    }

    /// One round trip carried `bytes`.
    fn sample(&mut self, bytes: u64) -> Option<u32> {
        if bytes * 3 >= u64::from(self.window) * 2 {
            let grown = (bytes * 2).min(u64::from(self.max)) as u32;
            if grown > self.window {
                self.window = grown;
                self.stable = 0;
                self.delay = (self.delay / 2).max(MIN_DELAY);
                return Some(grown);
            }
        }
        self.stable += 1;
        if self.stable >= 2 {
            self.stable = 0;
            self.delay = (self.delay * 4).min(MAX_DELAY);
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grows_while_the_window_is_the_limit() {
        let t0 = Instant::now();
        let mut w = AdaptiveWindow::new(1 << 20, 16 << 20, t0);
        assert!(!w.wants_ping(t0, 0), "no data, no ping");
        assert!(w.wants_ping(t0, 100));
        w.ping_sent(100);
        assert!(!w.wants_ping(t0, 200), "one ping at a time");
        // A full window in one round trip: double.
        assert_eq!(w.pong_received(t0, 100 + (1 << 20)), Some(2 << 20));
        assert_eq!(w.window(), 2 << 20);
        // Half a window: the path, not the window, is the limit.
        let t1 = t0 + Duration::from_secs(1);
        w.ping_sent(10 << 20);
        assert_eq!(w.pong_received(t1, (10 << 20) + (1 << 20)), None);
        // Never beyond the maximum; then no more pings.
        let t2 = t1 + Duration::from_secs(1);
        w.ping_sent(20 << 20);
        assert_eq!(w.pong_received(t2, 60 << 20), Some(16 << 20));
        assert!(!w.wants_ping(t2 + Duration::from_secs(60), 100 << 20));
    }

    #[test]
    fn backs_off_when_stable() {
        let mut now = Instant::now();
        let mut w = AdaptiveWindow::new(1 << 20, 16 << 20, now);
        let mut bytes = 0;
        let mut delays = Vec::new();
        for _ in 0..8 {
            bytes += 1000;
            assert!(w.wants_ping(now, bytes));
            w.ping_sent(bytes);
            bytes += 1000;
            assert_eq!(w.pong_received(now, bytes), None);
            delays.push(w.delay);
            now += MAX_DELAY;
        }
        assert!(delays.windows(2).all(|d| d[0] <= d[1]));
        assert_eq!(*delays.last().unwrap(), MAX_DELAY);
    }
}
