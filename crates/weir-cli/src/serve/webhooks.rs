//! Webhooks: `--hook-url URL` receives a `POST` after every committed file and every delete,
//! its body the JSON the command hook gets on stdin (`hooks.rs`:
//! `{"event":"stored","path":…,"size":…,"sha256":…}`), `Content-Type: application/json`.
//!
//! Never on the request's path: events wait in a queue of their own ([`QUEUE`]; a full queue
//! drops the event, counted and logged), and [`WORKERS`] threads of their own send them (so a
//! slow receiver never holds up the command hooks, nor the reverse). Each attempt is one
//! connection (`client/post.rs`), and takes at most `--hook-timeout` in all (connecting,
//! writing and reading the answer's head): a receiver trickling its answer a byte at a time
//! holds a worker no longer than that.
//!
//! Outcome of an attempt: a `2xx` answer delivers the event; a connection failure, a timeout,
//! `429` or a `5xx` is retried after a pause that doubles from `--hook-backoff` (at most
//! [`MAX_BACKOFF`]), up to `--hook-attempts` attempts in all; a `429` or `503` with a
//! `Retry-After` (seconds, or an HTTP-date) is retried after what it says instead, at most
//! [`MAX_BACKOFF`] (the doubling goes on underneath for later pauses); any other answer (`3xx` is not
//! followed, `4xx`) or a TLS failure ends the event as failed at once. A worker waits out its
//! backoff itself: while a receiver is down, at most [`WORKERS`] events are being retried and
//! the others wait in the queue. Events still queued when weir stops are lost (logged neither:
//! the queue lives in memory).
//!
//! The request has answered by then, from the committed file: a webhook that fails, hangs or
//! is dropped never changes or hides it. Attempts and final outcomes are counted for
//! `/metrics`; each failed attempt is logged.

use super::hooks::Event;
use crate::client::post::{Answer, PostError, PostUrl, post};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::mpsc::{Receiver, SyncSender, TrySendError, sync_channel};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

/// Events waiting for a worker, at most.
pub const QUEUE: usize = 1024;
/// Webhooks being sent (or waiting out a backoff) at once, at most.
pub const WORKERS: usize = 4;
/// The longest pause between two attempts.
pub const MAX_BACKOFF: Duration = Duration::from_secs(300);

/// Where and how webhooks are sent.
#[derive(Clone, Debug)]
pub struct WebhookOptions {
    pub url: PostUrl,
    /// Per attempt (connect, write, answer: all of it).
    pub timeout: Duration,
    /// Attempts per event, at least 1.
    pub attempts: u32,
    /// The pause after the first failed attempt; doubled after each further one.
    pub backoff: Duration,
}

/// How webhooks went.
#[derive(Debug, Default)]
pub struct WebhookCounters {
    /// Events delivered (a `2xx` answer).
    pub ok: AtomicU64,
    /// Events given up: a final answer that is not `2xx`, or the attempts spent on failures.
    pub failed: AtomicU64,
    /// Events given up with their last attempt timed out.
    pub timed_out: AtomicU64,
    /// Events not sent: the queue was full.
    pub dropped: AtomicU64,
    /// Attempts made (a retried event counts each).
    pub attempts: AtomicU64,
}

/// The queue to the webhook workers.
#[derive(Debug)]
pub struct Webhooks {
    queue: SyncSender<Event>,
    pub(super) counters: Arc<WebhookCounters>,
}

impl Webhooks {
    /// Starts the workers.
    pub fn start(options: WebhookOptions) -> std::io::Result<Self> {
        let (queue, events) = sync_channel(QUEUE);
        let events = Arc::new(Mutex::new(events));
        let counters = Arc::new(WebhookCounters::default());
        for i in 0..WORKERS {
            let (events, counters, options) = (events.clone(), counters.clone(), options.clone());
            std::thread::Builder::new()
                .name(format!("weir-webhook-{i}"))
                .spawn(move || work(&events, &options, &counters))?;
        }
        Ok(Self { queue, counters })
    }

    /// Queues `event` (never waits).
    pub(super) fn send(&self, event: Event) {
        if let Err(TrySendError::Full(event) | TrySendError::Disconnected(event)) =
            self.queue.try_send(event)
        {
            self.counters.dropped.fetch_add(1, Relaxed);
            tracing::warn!(path = %event.path, event = event.kind, "webhook queue full: event dropped");
        }
    }
}

fn work(events: &Mutex<Receiver<Event>>, options: &WebhookOptions, counters: &WebhookCounters) {
    loop {
        let event = match events.lock() {
            Ok(events) => match events.recv() {
                Ok(event) => event,
                Err(_) => return, // the service is gone
            },
            Err(_) => return,
        };
        let counter = match deliver(options, counters, &event) {
            Ok(()) => &counters.ok,
            Err(Given::TimedOut) => &counters.timed_out,
            Err(Given::Failed) => &counters.failed,
        };
        counter.fetch_add(1, Relaxed);
    }
}

/// Why an event was given up.
enum Given {
    TimedOut,
    Failed,
}

/// What one attempt says about the next.
enum Attempt {
    Delivered,
    /// Worth another attempt (connection failure, timeout, 429, 5xx).
    Retry {
        timed_out: bool,
        why: String,
        /// The receiver's `Retry-After` (a 429 or 503 only), as a pause from now.
        after: Option<Duration>,
    },
    /// Another attempt would fare no better.
    Final(String),
}

fn attempt(options: &WebhookOptions, body: &[u8]) -> Attempt {
    match post(&options.url, "application/json", body, options.timeout) {
        Ok(Answer {
            status: 200..=299, ..
        }) => Attempt::Delivered,
        Ok(Answer {
            status: status @ (429 | 500..=599),
            retry_after,
        }) => Attempt::Retry {
            timed_out: false,
            why: format!("answered {status}"),
            after: retry_after
                .filter(|_| matches!(status, 429 | 503))
                .and_then(|v| retry_after_pause(&v, SystemTime::now())),
        },
        Ok(Answer { status, .. }) => Attempt::Final(format!("answered {status}")),
        Err(PostError::TimedOut) => Attempt::Retry {
            timed_out: true,
            why: "timed out".into(),
            after: None,
        },
        Err(e @ PostError::Connect(_)) => Attempt::Retry {
            timed_out: false,
            why: e.to_string(),
            after: None,
        },
        Err(e @ PostError::Other(_)) => Attempt::Final(e.to_string()),
    }
}

fn deliver(
    options: &WebhookOptions,
    counters: &WebhookCounters,
    event: &Event,
) -> Result<(), Given> {
    // ALLOCATION: the body, once per event (not per attempt).
    let body = event.json().to_string();
    let mut pause = options.backoff;
    let attempts = options.attempts.max(1);
    for n in 1..=attempts {
        counters.attempts.fetch_add(1, Relaxed);
        match attempt(options, body.as_bytes()) {
            Attempt::Delivered => return Ok(()),
            Attempt::Final(why) => {
                tracing::warn!(path = %event.path, event = event.kind, attempt = n, %why, "webhook failed (not retried)");
                return Err(Given::Failed);
            }
            Attempt::Retry {
                timed_out,
                why,
                after,
            } => {
                let wait = next_pause(pause, after);
                if n == attempts {
                    tracing::warn!(path = %event.path, event = event.kind, attempt = n, attempts, %why, "webhook attempt failed");
                    return Err(if timed_out {
                        Given::TimedOut
                    } else {
                        Given::Failed
                    });
                }
                tracing::warn!(path = %event.path, event = event.kind, attempt = n, attempts, %why, retry_in = ?wait, "webhook attempt failed");
                std::thread::sleep(wait);
                pause = (pause * 2).min(MAX_BACKOFF);
            }
        }
    }
    Err(Given::Failed)
}

/// The pause before the next attempt: the receiver's `Retry-After` when it gave one (at most
/// [`MAX_BACKOFF`]), else the backoff in force.
fn next_pause(backoff: Duration, retry_after: Option<Duration>) -> Duration {
    retry_after.map_or(backoff, |after| after.min(MAX_BACKOFF))
}

/// A `Retry-After` value (RFC 9110 §10.2.3) as a pause from `now`: delay-seconds, or an
/// HTTP-date (a date already past is no pause). `None` if it is neither.
fn retry_after_pause(value: &str, now: SystemTime) -> Option<Duration> {
    if !value.is_empty() && value.bytes().all(|b| b.is_ascii_digit()) {
        // Digits too many for a u64 are still "a long time": the cap applies.
        return Some(Duration::from_secs(value.parse().unwrap_or(u64::MAX)));
    }
    let at = httpdate::parse_http_date(value).ok()?;
    Some(at.duration_since(now).unwrap_or(Duration::ZERO))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retry_after_in_seconds_or_as_a_date() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000);
        let secs = Duration::from_secs;
        assert_eq!(retry_after_pause("1", now), Some(secs(1)));
        assert_eq!(retry_after_pause("0", now), Some(secs(0)));
        assert_eq!(retry_after_pause("120", now), Some(secs(120)));
        assert_eq!(
            retry_after_pause("99999999999999999999999", now),
            Some(secs(u64::MAX))
        );
        let later = httpdate::fmt_http_date(now + secs(90));
        assert_eq!(retry_after_pause(&later, now), Some(secs(90)));
        let earlier = httpdate::fmt_http_date(now - secs(90));
        assert_eq!(retry_after_pause(&earlier, now), Some(secs(0)));
        for bad in [
            "",
            "-1",
            "1.5",
            " 1",
            "soon",
            "Fri, 99 Nov 2026 00:00:00 GMT",
        ] {
            assert_eq!(retry_after_pause(bad, now), None, "{bad:?}");
        }
    }

    #[test]
    fn retry_after_replaces_the_backoff_up_to_its_cap() {
        let secs = Duration::from_secs;
        assert_eq!(next_pause(secs(8), None), secs(8));
        assert_eq!(next_pause(secs(8), Some(secs(1))), secs(1));
        assert_eq!(next_pause(secs(8), Some(secs(20))), secs(20));
        assert_eq!(next_pause(secs(8), Some(secs(u64::MAX))), MAX_BACKOFF);
        assert_eq!(
            next_pause(secs(8), Some(MAX_BACKOFF + secs(1))),
            MAX_BACKOFF
        );
    }
}
