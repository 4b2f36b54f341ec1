//! Prometheus metrics, served as text (exposition format 0.0.4) at `GET /metrics`.
//!
//! Every counter is a relaxed atomic bumped once per request when it ends (no lock, no
//! allocation on the request's path); a scrape reads them all and formats the text into one
//! `String` (ALLOCATION: per scrape, not per request). The per-request counters are sharded by
//! thread ([`Shard`], a thread's shard chosen once, written by that thread alone): with one set
//! shared by every worker, each request's five updates moved the same cache lines between
//! cores (docs/BENCHMARKS.md); a scrape sums the shards. No metrics crate: the set is fixed and
//! small, the format a few lines of text, and the `prometheus` and `metrics` crates would each
//! bring a registry (a lock or a map lookup per update, label strings hashed at run time) for
//! what is here an array index.
//!
//! Server-wide figures (connections, peak read-ahead) come from the library's
//! [`weir::Stats`], storage from the store, each read at scrape time.

use super::hooks::HookOutcomes;
use super::stored::Stored;
use super::webhooks::WebhookCounters;
use std::fmt::Write as _;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::Duration;
use weir::http::Method;

/// Method labels; anything else counts as `other`.
const METHODS: [&str; 8] = [
    "GET", "HEAD", "PUT", "POST", "DELETE", "PATCH", "OPTIONS", "other",
];
/// The methods of [`METHODS`] but `other`, in the same order: a request's label is found by
/// comparing `Method`s (a tag compare each), not their names.
const KNOWN_METHODS: [Method; 7] = [
    Method::GET,
    Method::HEAD,
    Method::PUT,
    Method::POST,
    Method::DELETE,
    Method::PATCH,
    Method::OPTIONS,
];
/// Status-class labels; `none`: the client went away before any answer.
const CLASSES: [&str; 6] = ["1xx", "2xx", "3xx", "4xx", "5xx", "none"];

/// Upper bounds of the upload duration buckets, in microseconds.
const DURATION_BOUNDS: [u64; 7] = [
    10_000,
    100_000,
    1_000_000,
    10_000_000,
    60_000_000,
    600_000_000,
    3_600_000_000,
];
/// Upper bounds of the upload size buckets, in bytes.
const SIZE_BOUNDS: [u64; 7] = [
    1 << 10,
    1 << 16,
    1 << 20,
    1 << 24,
    1 << 28,
    1 << 32,
    1 << 36,
];

/// The counters every request updates, one set per shard. A request's in-flight gauge is
/// raised on the shard of the thread that starts it and lowered (`*_ended`) on the shard of the
/// thread that ends it, so that every update goes to the current thread's shard; the gauge is
/// the wrapping sum of started minus ended.
#[derive(Default)]
#[repr(align(128))]
struct Shard {
    requests: [[AtomicU64; CLASSES.len()]; METHODS.len()],
    body_bytes_received: AtomicU64,
    body_bytes_sent: AtomicU64,
    requests_started: AtomicU64,
    requests_ended: AtomicU64,
    uploads_started: AtomicU64,
    uploads_ended: AtomicU64,
}

/// Shards per [`Metrics`]: the first `SHARDS - 1` threads that count get one each, written by
/// that thread alone; later threads share the last one.
const SHARDS: usize = 16;

/// This thread's shard: its index, and whether this thread is its only writer.
#[derive(Clone, Copy)]
struct ShardRef {
    index: usize,
    exclusive: bool,
}

impl ShardRef {
    /// Adds `n` to `counter`, a counter of this shard. A shard with one writer needs no locked
    /// add (readers may see a sum a few requests old, never a torn value), and a locked add
    /// waits for the core's pending stores: on a pipelined request that showed
    /// (docs/BENCHMARKS.md).
    fn add(self, counter: &AtomicU64, n: u64) {
        if self.exclusive {
            counter.store(counter.load(Relaxed).wrapping_add(n), Relaxed);
        } else {
            counter.fetch_add(n, Relaxed);
        }
    }
}

/// This thread's shard, assigned at its first request.
fn shard_ref() -> ShardRef {
    use std::cell::Cell;
    use std::sync::atomic::AtomicUsize;
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    thread_local! {
        static INDEX: Cell<usize> = const { Cell::new(usize::MAX) };
    }
    let index = INDEX.with(|i| {
        if i.get() == usize::MAX {
            i.set(NEXT.fetch_add(1, Relaxed).min(SHARDS - 1));
        }
        i.get()
    });
    ShardRef {
        index,
        exclusive: index < SHARDS - 1,
    }
}

/// The service's counters.
pub struct Metrics {
    shards: Box<[Shard; SHARDS]>,
    upload_duration: Histogram<{ DURATION_BOUNDS.len() }>,
    upload_size: Histogram<{ SIZE_BOUNDS.len() }>,
    /// The running server, for its connection counters; set once it exists.
    server: OnceLock<weir::ServerHandle>,
}

impl Default for Metrics {
    fn default() -> Self {
        Self {
            // ALLOCATION: once per service.
            shards: Box::new(std::array::from_fn(|_| Shard::default())),
            upload_duration: Histogram::default(),
            upload_size: Histogram::default(),
            server: OnceLock::new(),
        }
    }
}

/// A request in flight: counted from [`Metrics::start`] until this is dropped (also when the
/// request's task is cancelled).
pub(super) struct InFlight<'a> {
    metrics: &'a Metrics,
    method: usize,
    upload: bool,
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        // The ending thread's shard (the task may have moved): see [`Shard`].
        let (shard, at) = self.metrics.shard();
        at.add(&shard.requests_ended, 1);
        if self.upload {
            at.add(&shard.uploads_ended, 1);
        }
    }
}

/// How a request ended.
pub(super) struct Outcome {
    pub status: Option<u16>,
    pub bytes_in: u64,
    pub bytes_out: u64,
    pub duration: Duration,
    pub stored: Stored,
}

impl Metrics {
    /// This thread's shard.
    fn shard(&self) -> (&Shard, ShardRef) {
        let at = shard_ref();
        (&self.shards[at.index], at)
    }

    /// The sum over the shards of `field` (wrapping: see [`Shard`]).
    fn sum(&self, field: impl Fn(&Shard) -> &AtomicU64) -> u64 {
        self.shards
            .iter()
            .fold(0u64, |n, s| n.wrapping_add(field(s).load(Relaxed)))
    }

    /// Gives the metrics the running server's counters.
    pub fn set_server(&self, server: weir::ServerHandle) {
        let _ = self.server.set(server);
    }

    /// Counts a request as in flight; `upload`: its method sends a body to store
    /// ([`super::stored::may_store`]).
    pub(super) fn start(&self, method: &Method, upload: bool) -> InFlight<'_> {
        let index = KNOWN_METHODS
            .iter()
            .position(|m| m == method)
            .unwrap_or(METHODS.len() - 1);
        let (shard, at) = self.shard();
        at.add(&shard.requests_started, 1);
        if upload {
            at.add(&shard.uploads_started, 1);
        }
        InFlight {
            metrics: self,
            method: index,
            upload,
        }
    }

    /// Counts a request the server refused before any handler ran (`method` when it was read).
    pub(super) fn count_refused(&self, method: Option<&str>, status: u16) {
        let index = method
            .and_then(|m| METHODS.iter().position(|known| *known == m))
            .unwrap_or(METHODS.len() - 1);
        let class = match status {
            100..=599 => usize::from(status / 100 - 1),
            _ => CLASSES.len() - 1,
        };
        let (shard, at) = self.shard();
        at.add(&shard.requests[index][class], 1);
    }

    /// Counts a finished request (then drop its `InFlight`).
    pub(super) fn finish(&self, request: &InFlight<'_>, outcome: &Outcome) {
        let class = match outcome.status {
            Some(status @ 100..=599) => usize::from(status / 100 - 1),
            _ => CLASSES.len() - 1,
        };
        let (shard, at) = self.shard();
        at.add(&shard.requests[request.method][class], 1);
        at.add(&shard.body_bytes_received, outcome.bytes_in);
        at.add(&shard.body_bytes_sent, outcome.bytes_out);
        if outcome.stored.files > 0 {
            let micros = u64::try_from(outcome.duration.as_micros()).unwrap_or(u64::MAX);
            self.upload_duration.observe(&DURATION_BOUNDS, micros);
            self.upload_size.observe(&SIZE_BOUNDS, outcome.stored.bytes);
        }
    }

    /// The exposition text. `buffers_lent`: upload buffers out of the pool now; `open_uploads`:
    /// the resumable uploads open, if known (`open_uploads.rs`).
    pub(super) fn render(
        &self,
        (storage_used, storage_quota): (u64, Option<u64>),
        open_uploads: Option<u64>,
        (hooks, webhooks): (Option<&HookOutcomes>, Option<&WebhookCounters>),
        buffers_lent: usize,
    ) -> String {
        let mut out = String::with_capacity(8 * 1024);
        header(
            &mut out,
            "weir_http_requests_total",
            "counter",
            "Requests answered, by method and status class (none: the client left first).",
        );
        for (m, method) in METHODS.iter().enumerate() {
            for (c, class) in CLASSES.iter().enumerate() {
                let _ = writeln!(
                    out,
                    "weir_http_requests_total{{method=\"{method}\",status=\"{class}\"}} {}",
                    self.sum(|s| &s.requests[m][c])
                );
            }
        }
        let simple = [
            (
                "weir_http_request_body_bytes_total",
                "counter",
                "Request body bytes received.",
                self.sum(|s| &s.body_bytes_received),
            ),
            (
                "weir_http_response_body_bytes_total",
                "counter",
                "Response body bytes sent (heads not counted).",
                self.sum(|s| &s.body_bytes_sent),
            ),
            (
                "weir_http_requests_in_flight",
                "gauge",
                "Requests being handled now.",
                self.sum(|s| &s.requests_started)
                    .wrapping_sub(self.sum(|s| &s.requests_ended)),
            ),
            (
                "weir_uploads_in_flight",
                "gauge",
                "PUT, POST and PATCH requests being handled now.",
                self.sum(|s| &s.uploads_started)
                    .wrapping_sub(self.sum(|s| &s.uploads_ended)),
            ),
            (
                "weir_upload_buffers_lent",
                "gauge",
                "Upload buffers out of the pool now.",
                buffers_lent as u64,
            ),
            (
                "weir_storage_used_bytes",
                "gauge",
                "Bytes the store uses: files, uploads in progress, 4 KiB per entry.",
                storage_used,
            ),
        ];
        for (name, kind, help, value) in simple {
            header(&mut out, name, kind, help);
            let _ = writeln!(out, "{name} {value}");
        }
        if let Some(open) = open_uploads {
            header(
                &mut out,
                "weir_resumable_uploads_open",
                "gauge",
                "Resumable uploads created and not complete (nor expired, nor cancelled).",
            );
            let _ = writeln!(out, "weir_resumable_uploads_open {open}");
        }
        if let Some(hooks) = hooks {
            header(
                &mut out,
                "weir_hooks_total",
                "counter",
                "Hook runs by outcome (dropped: the queue was full).",
            );
            let outcomes = [
                ("ok", &hooks.ok),
                ("failed", &hooks.failed),
                ("timeout", &hooks.timed_out),
                ("dropped", &hooks.dropped),
            ];
            for (outcome, count) in outcomes {
                let _ = writeln!(
                    out,
                    "weir_hooks_total{{outcome=\"{outcome}\"}} {}",
                    count.load(Relaxed)
                );
            }
        }
        if let Some(webhooks) = webhooks {
            header(
                &mut out,
                "weir_webhooks_total",
                "counter",
                "Webhook events by final outcome (timeout: the last attempt timed out; dropped: the queue was full).",
            );
            let outcomes = [
                ("ok", &webhooks.ok),
                ("failed", &webhooks.failed),
                ("timeout", &webhooks.timed_out),
                ("dropped", &webhooks.dropped),
            ];
            for (outcome, count) in outcomes {
                let _ = writeln!(
                    out,
                    "weir_webhooks_total{{outcome=\"{outcome}\"}} {}",
                    count.load(Relaxed)
                );
            }
            header(
                &mut out,
                "weir_webhook_attempts_total",
                "counter",
                "Webhook attempts (each retry counts).",
            );
            let _ = writeln!(
                out,
                "weir_webhook_attempts_total {}",
                webhooks.attempts.load(Relaxed)
            );
        }
        if let Some(quota) = storage_quota {
            header(
                &mut out,
                "weir_storage_quota_bytes",
                "gauge",
                "The storage quota (--max-storage).",
            );
            let _ = writeln!(out, "weir_storage_quota_bytes {quota}");
        }
        if let Some(server) = self.server.get() {
            let stats = server.stats();
            let server_figures = [
                (
                    "weir_connections_accepted_total",
                    "counter",
                    "Connections accepted.",
                    stats.accepted_connections(),
                ),
                (
                    "weir_connections_open",
                    "gauge",
                    "Connections open now.",
                    stats.active_connections() as u64,
                ),
                (
                    "weir_body_buffered_peak_bytes",
                    "gauge",
                    "The most request body bytes any connection held read ahead of its handler.",
                    stats.peak_body_buffered() as u64,
                ),
                (
                    "weir_body_buffered_bytes",
                    "gauge",
                    "Request body bytes HTTP/1.1 connections hold now ahead of their handlers.",
                    stats.body_buffered_now() as u64,
                ),
                (
                    "weir_connections_paused",
                    "gauge",
                    "HTTP/1.1 connections whose buffered body reached the pause threshold now (not read until their handlers take some).",
                    stats.connections_paused() as u64,
                ),
            ];
            for (name, kind, help, value) in server_figures {
                header(&mut out, name, kind, help);
                let _ = writeln!(out, "{name} {value}");
            }
        }
        self.upload_duration.render(
            &mut out,
            "weir_upload_duration_seconds",
            "Time from an upload request's start to its commit.",
            &DURATION_BOUNDS,
            1e6,
        );
        self.upload_size.render(
            &mut out,
            "weir_upload_size_bytes",
            "Bytes stored per upload request.",
            &SIZE_BOUNDS,
            1.0,
        );
        out
    }
}

fn header(out: &mut String, name: &str, kind: &str, help: &str) {
    let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} {kind}");
}

/// A histogram over fixed bounds (in integer units: bytes, microseconds).
#[derive(Debug)]
struct Histogram<const N: usize> {
    /// Observations per bucket, not cumulative; the last one is `+Inf`'s own.
    buckets: [AtomicU64; N],
    above: AtomicU64,
    sum: AtomicU64,
}

impl<const N: usize> Default for Histogram<N> {
    fn default() -> Self {
        Self {
            buckets: std::array::from_fn(|_| AtomicU64::new(0)),
            above: AtomicU64::new(0),
            sum: AtomicU64::new(0),
        }
    }
}

impl<const N: usize> Histogram<N> {
    fn observe(&self, bounds: &[u64; N], value: u64) {
        match bounds.iter().position(|&b| value <= b) {
            Some(i) => self.buckets[i].fetch_add(1, Relaxed),
            None => self.above.fetch_add(1, Relaxed),
        };
        self.sum.fetch_add(value, Relaxed);
    }

    /// `scale`: units per exposed unit (1e6 for microseconds as seconds).
    fn render(&self, out: &mut String, name: &str, help: &str, bounds: &[u64; N], scale: f64) {
        header(out, name, "histogram", help);
        let mut cumulative = 0;
        for (bound, count) in bounds.iter().zip(&self.buckets) {
            cumulative += count.load(Relaxed);
            let le = *bound as f64 / scale;
            let _ = writeln!(out, "{name}_bucket{{le=\"{le}\"}} {cumulative}");
        }
        cumulative += self.above.load(Relaxed);
        let sum = self.sum.load(Relaxed) as f64 / scale;
        let _ = writeln!(out, "{name}_bucket{{le=\"+Inf\"}} {cumulative}");
        let _ = writeln!(out, "{name}_sum {sum}\n{name}_count {cumulative}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn histogram_buckets_are_cumulative() {
        let h = Histogram::<3>::default();
        let bounds = [10, 100, 1000];
        for v in [1, 10, 11, 5000] {
            h.observe(&bounds, v);
        }
        let mut out = String::new();
        h.render(&mut out, "x", "help", &bounds, 10.0);
        let lines: Vec<&str> = out.lines().skip(2).collect();
        assert_eq!(
            lines,
            [
                "x_bucket{le=\"1\"} 2",
                "x_bucket{le=\"10\"} 3",
                "x_bucket{le=\"100\"} 3",
                "x_bucket{le=\"+Inf\"} 4",
                "x_sum 502.2",
                "x_count 4",
            ]
        );
    }
}
