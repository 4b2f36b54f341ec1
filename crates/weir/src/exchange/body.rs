//! [`BodyPolicy`]: the rules of a request body that do not depend on the protocol: the maximum
//! body size, the pause threshold, the `100 Continue` latch, the broken state and the accounting
//! behind the minimum data rate.
//!
//! Both drivers keep one (`h1::BodyState` per connection, reset per request; `h2::BodyIn` per
//! stream) and do only their I/O around it: the HTTP/1.1 driver reads the socket and decodes
//! framing, the HTTP/2 driver takes DATA frames from h2 and returns flow-control capacity. No
//! I/O, no clock and no runtime here: elapsed times come in as `Duration`s, deadlines go out as
//! allowances that the caller adds to its own `now`.
//!
//! Invariants:
//! - once broken, a body stays broken with its first cause, and every later read gets the same
//!   error (`check_start`);
//! - `stats.received` never passes `max_size` without breaking the body (`accept_payload`);
//! - the pause threshold is never below [`Config::MIN_PAUSE_THRESHOLD`];
//! - a `100 Continue` is owed at most once (`take_continue`), and `continue_sent` says whether
//!   the client was told to go on (the persistence decision of HTTP/1.1 needs it).

use crate::config::{Config, DataRate};
use crate::error::Error;
use crate::stats::BodyStats;
use std::io;
use std::time::Duration;
use weir_proto::ProtoError;

/// Why a body can no longer be read (repeated to every later read).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Broken {
    TooLarge,
    Timeout,
    Disconnect,
    Protocol(ProtoError),
    /// Bytes left the socket but did not reach their destination (a failed splice).
    Lost,
}

impl Broken {
    pub(crate) fn error(self) -> Error {
        match self {
            Self::TooLarge => Error::too_large(),
            Self::Timeout => Error::timeout(),
            Self::Disconnect => Error::disconnect(None),
            Self::Protocol(e) => Error::protocol(e),
            Self::Lost => Error::from(io::Error::other("request body lost by a failed write")),
        }
    }

    /// The cause an error stands for: anything but a size, time or protocol fault means the
    /// client is gone.
    fn of(e: &Error) -> Self {
        if e.is_too_large() {
            Self::TooLarge
        } else if e.is_timeout() {
            Self::Timeout
        } else if let Some(p) = e.proto_error() {
            Self::Protocol(p)
        } else {
            Self::Disconnect
        }
    }
}

/// The protocol-neutral state of one request body.
#[derive(Debug)]
pub(crate) struct BodyPolicy {
    /// The maximum body size in force (`Exchange::set_max_body_size`).
    pub(crate) max_size: Option<u64>,
    /// How far the server may read ahead of the handler (at least `MIN_PAUSE_THRESHOLD`).
    pause_threshold: usize,
    /// The length the request declared, if any: checked against `max_size` before reading.
    declared: Option<u64>,
    /// The client asked for `100 Continue` and none has been sent.
    continue_pending: bool,
    /// A `100 Continue` went out for this request.
    pub(crate) continue_sent: bool,
    broken: Option<Broken>,
    pub(crate) stats: BodyStats,
    min_rate: Option<DataRate>,
    /// Bytes received for this body, framing included (they earn time under the data rate).
    wire_bytes: u64,
    /// Time spent waiting on the client for this body: time the handler spends elsewhere does
    /// not count against the client.
    waited: Duration,
    /// The trailer fields, once the body is complete and had any.
    pub(crate) trailers: Option<http::HeaderMap>,
}

impl BodyPolicy {
    pub(crate) fn new(config: &Config) -> Self {
        Self {
            max_size: config.max_body_size,
            pause_threshold: config.effective_pause_threshold(),
            declared: None,
            continue_pending: false,
            continue_sent: false,
            broken: None,
            stats: BodyStats::default(),
            min_rate: config.min_body_rate,
            wire_bytes: 0,
            waited: Duration::ZERO,
            trailers: None,
        }
    }

    /// Starts a new body: `declared` is its length if the request gave one, `expects_continue`
    /// whether it asked for `100 Continue`, `empty` whether there is no body to wait for (then
    /// no `100 Continue` is owed).
    pub(crate) fn begin(
        &mut self,
        config: &Config,
        declared: Option<u64>,
        expects_continue: bool,
        empty: bool,
    ) {
        self.max_size = config.max_body_size;
        self.pause_threshold = config.effective_pause_threshold();
        self.declared = declared;
        self.continue_pending = expects_continue && !empty;
        self.continue_sent = false;
        self.broken = None;
        self.stats = BodyStats::default();
        self.min_rate = config.min_body_rate;
        self.wire_bytes = 0;
        self.waited = Duration::ZERO;
        self.trailers = None;
    }

    pub(crate) fn pause_threshold(&self) -> usize {
        self.pause_threshold
    }

    pub(crate) fn set_pause_threshold(&mut self, bytes: usize) {
        self.pause_threshold = bytes.max(Config::MIN_PAUSE_THRESHOLD);
    }

    /// Before a read: the error of a broken body, or 413 for a declared length above the
    /// maximum size (the size may have changed since the head was read).
    pub(crate) fn check_start(&mut self) -> Result<(), Error> {
        if let Some(broken) = self.broken {
            return Err(broken.error());
        }
        if let (Some(max), Some(len)) = (self.max_size, self.declared) {
            if len > max {
                return Err(self.break_with(Broken::TooLarge));
            }
        }
        Ok(())
    }

    pub(crate) fn is_broken(&self) -> bool {
        self.broken.is_some()
    }

    /// Breaks the body (keeping an earlier cause) and returns the error to report.
    pub(crate) fn break_with(&mut self, broken: Broken) -> Error {
        self.broken.get_or_insert(broken);
        broken.error()
    }

    /// Records that the body cannot be read any further because of `e`.
    pub(crate) fn mark_broken(&mut self, e: &Error) {
        self.broken.get_or_insert(Broken::of(e));
    }

    /// How many more payload bytes may be taken before the maximum body size is exceeded.
    pub(crate) fn room(&self) -> u64 {
        self.max_size
            .map_or(u64::MAX, |max| max.saturating_sub(self.stats.received))
    }

    /// The payload still to come under a declared length, within the maximum body size: what
    /// a file receiving the rest of the body will hold. `None` without a declared length, or
    /// once the body is broken or its declared length is over the maximum (it will be refused).
    pub(crate) fn declared_remaining(&self) -> Option<u64> {
        let declared = self.declared?;
        if self.broken.is_some() || self.max_size.is_some_and(|max| declared > max) {
            return None;
        }
        Some(declared.saturating_sub(self.stats.received))
    }

    /// Accounts `n` payload bytes as received, breaking the body if they pass the maximum size.
    pub(crate) fn accept_payload(&mut self, n: usize) -> Result<(), Error> {
        self.stats.received += n as u64;
        match self.max_size {
            Some(max) if self.stats.received > max => Err(self.break_with(Broken::TooLarge)),
            _ => Ok(()),
        }
    }

    /// Records `buffered` bytes held ahead of the handler; true if that is a new peak (the
    /// caller then updates the server-wide counter).
    pub(crate) fn note_buffered(&mut self, buffered: usize) -> bool {
        let peak = buffered > self.stats.peak_buffered;
        if peak {
            self.stats.peak_buffered = buffered;
        }
        peak
    }

    /// Whether a `100 Continue` is owed before the first read.
    pub(crate) fn continue_pending(&self) -> bool {
        self.continue_pending
    }

    /// Takes the `100 Continue` owed, if any: true once, then false. Once a final response
    /// has started (`responded`) the debt is dropped unpaid: the client must not be told to go
    /// on after it has its answer.
    pub(crate) fn take_continue(&mut self, responded: bool) -> bool {
        std::mem::take(&mut self.continue_pending) && !responded
    }

    /// A `100 Continue` went out (sent by the driver before a read, or by the handler as an
    /// informational response).
    pub(crate) fn note_continue_sent(&mut self) {
        self.continue_pending = false;
        self.continue_sent = true;
    }

    /// How long the next wait on the client may last under the minimum data rate: the time
    /// the bytes received so far have earned, at least the grace, less the time already
    /// waited. `None` when no rate is enforced.
    pub(crate) fn wait_allowance(&self) -> Option<Duration> {
        let rate = self.min_rate?;
        let earned =
            Duration::from_secs_f64(self.wire_bytes as f64 / rate.bytes_per_second.max(1) as f64);
        Some(earned.max(rate.grace).saturating_sub(self.waited))
    }

    /// Accounts a finished wait on the client and the bytes it brought (framing included).
    pub(crate) fn note_wait(&mut self, waited: Duration, wire_bytes: usize) {
        self.waited += waited;
        self.wire_bytes += wire_bytes as u64;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config() -> Config {
        Config {
            max_body_size: Some(100),
            min_body_rate: Some(DataRate {
                bytes_per_second: 10,
                grace: Duration::from_secs(5),
            }),
            ..Config::default()
        }
    }

    #[test]
    fn declared_length_above_the_maximum_breaks_before_reading() {
        let mut p = BodyPolicy::new(&config());
        p.begin(&config(), Some(101), false, false);
        assert!(p.check_start().unwrap_err().is_too_large());
        // Raising the limit does not mend a broken body: the first cause stays.
        p.max_size = None;
        assert!(p.check_start().unwrap_err().is_too_large());
        p.begin(&config(), Some(100), false, false);
        assert!(p.check_start().is_ok());
    }

    #[test]
    fn payload_past_the_maximum_breaks_and_the_first_cause_stays() {
        let mut p = BodyPolicy::new(&config());
        p.begin(&config(), None, false, false);
        p.accept_payload(60).unwrap();
        assert_eq!(p.room(), 40);
        assert!(p.accept_payload(41).unwrap_err().is_too_large());
        p.mark_broken(&Error::timeout());
        assert!(p.check_start().unwrap_err().is_too_large());
    }

    #[test]
    fn declared_remaining_is_what_is_left_of_an_acceptable_declared_length() {
        let mut p = BodyPolicy::new(&config());
        p.begin(&config(), Some(100), false, false);
        assert_eq!(p.declared_remaining(), Some(100));
        p.accept_payload(30).unwrap();
        assert_eq!(p.declared_remaining(), Some(70));
        // No length, a length that will be refused, or a broken body: nothing to plan for.
        p.begin(&config(), None, false, false);
        assert_eq!(p.declared_remaining(), None);
        p.begin(&config(), Some(101), false, false);
        assert_eq!(p.declared_remaining(), None);
        p.begin(&config(), Some(50), false, false);
        p.mark_broken(&Error::timeout());
        assert_eq!(p.declared_remaining(), None);
    }

    #[test]
    fn continue_is_owed_once_and_only_for_a_body() {
        let mut p = BodyPolicy::new(&config());
        p.begin(&config(), Some(10), true, false);
        assert!(p.continue_pending());
        assert!(p.take_continue(false));
        assert!(!p.take_continue(false));
        assert!(!p.continue_sent);
        p.note_continue_sent();
        assert!(p.continue_sent);
        p.begin(&config(), Some(0), true, true);
        assert!(!p.take_continue(false));
        assert!(!p.continue_sent);
        // After a final response the debt is dropped unpaid.
        p.begin(&config(), Some(10), true, false);
        assert!(!p.take_continue(true));
        assert!(!p.continue_pending());
        assert!(!p.take_continue(false));
    }

    #[test]
    fn pause_threshold_has_a_floor() {
        let mut p = BodyPolicy::new(&config());
        p.set_pause_threshold(1);
        assert_eq!(p.pause_threshold(), Config::MIN_PAUSE_THRESHOLD);
    }

    #[test]
    fn data_rate_allowance_is_earned_by_bytes_and_spent_by_waiting() {
        let mut p = BodyPolicy::new(&config());
        p.begin(&config(), None, false, false);
        assert_eq!(p.wait_allowance(), Some(Duration::from_secs(5)));
        p.note_wait(Duration::from_secs(2), 100);
        // 100 bytes at 10 B/s earned 10 s; 2 s of it were waited.
        assert_eq!(p.wait_allowance(), Some(Duration::from_secs(8)));
        p.note_wait(Duration::from_secs(9), 0);
        assert_eq!(p.wait_allowance(), Some(Duration::ZERO));
    }

    #[test]
    fn peak_is_reported_only_when_it_rises() {
        let mut p = BodyPolicy::new(&config());
        assert!(p.note_buffered(10));
        assert!(!p.note_buffered(5));
        assert_eq!(p.stats.peak_buffered, 10);
    }
}
