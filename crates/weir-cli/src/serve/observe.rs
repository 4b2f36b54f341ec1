//! The [`Service`]'s [`Handler`]: around every request's routing (`router.rs`), what an
//! operator sees of it: the access log line and the metrics, and the `/metrics` route itself.
//! [`Service::observe_start`] and [`Service::observe_end`] are the one place of that: the S3
//! API's handler (`routes/s3/`) goes through them too.
//!
//! The status logged is the handler's answer; when the handler returned an error before
//! answering, it is the status the server answers that error with ([`weir::Error::status_code`]),
//! and none when the client went away (nothing is answered then).

use super::access_log::{AccessLog, Entry};
use super::auth::Access;
use super::metrics::{Metrics, Outcome};
use super::reply::{self, Problem};
use super::service::Service;
use super::stored;
use http::{Method, StatusCode};
use std::time::{Instant, SystemTime};
use weir::{Exchange, Handler, http};

/// The longest request target logged for a refused head.
const REFUSED_PATH_MAX: usize = 1024;

impl Handler for Service {
    async fn handle(&self, ex: &mut Exchange<'_>) -> Result<(), weir::Error> {
        // Who made the request, by its token's name (issue 35's audit trail), for the log and
        // the hooks; only when there is somewhere to say it.
        let who = if self.names_callers() {
            self.who(ex.request())
        } else {
            None
        };
        let observation = self.observe_start(ex);
        let host_refused = ex.request().path() != "/healthz"
            && !self
                .hosts
                .admits(ex.request().header("host"), ex.peer_addr());
        let (result, stored) = if host_refused {
            (misdirected(ex).await, stored::Stored::default())
        } else if self.observing.metrics_route && ex.request().path() == "/metrics" {
            (metrics(self, ex, true).await, stored::Stored::default())
        } else if stored::may_touch(ex.request().method()) {
            stored::scope(who.clone(), self.route(ex)).await
        } else {
            (self.route(ex).await, stored::Stored::default())
        };
        self.observe_end(ex, observation, &result, stored, who.as_deref());
        result
    }
}

/// What is measured of a request from its start ([`Service::observe_start`]).
pub(super) struct Observation<'s> {
    time: Option<SystemTime>,
    start: Option<Instant>,
    in_flight: super::metrics::InFlight<'s>,
}

impl Service {
    /// Whether anything names who made a request (the log, the hooks): else the name is not
    /// looked up.
    pub(super) fn names_callers(&self) -> bool {
        self.observing.log.is_some() || self.hooks.is_some() || self.webhooks.is_some()
    }

    /// Starts observing a request: its clocks and its place in the metrics. Every listener's
    /// handler (this one, the S3 API's) goes through it and [`Service::observe_end`].
    pub(super) fn observe_start(&self, ex: &Exchange<'_>) -> Observation<'_> {
        let upload = stored::may_store(ex.request().method());
        // The wall clock only for the log; the monotonic one for the log's duration and the
        // upload histograms. Neither is read otherwise: on a pipelined `GET` the two clock
        // reads weighed as much as the routing.
        let time = self.observing.log.as_ref().map(|_| SystemTime::now());
        let start = (time.is_some() || upload).then(Instant::now);
        let in_flight = self.observing.metrics.start(ex.request().method(), upload);
        Observation {
            time,
            start,
            in_flight,
        }
    }

    /// Ends observing a request: the metrics and the access log line (`who`: the name of the
    /// credential that made it).
    pub(super) fn observe_end(
        &self,
        ex: &Exchange<'_>,
        observation: Observation<'_>,
        result: &Result<(), weir::Error>,
        stored: stored::Stored,
        who: Option<&str>,
    ) {
        let status = match (result, ex.response_status()) {
            (_, Some(status)) => Some(status.as_u16()),
            (Err(e), None) if !e.is_disconnect() => Some(e.status_code().as_u16()),
            _ => None,
        };
        let outcome = Outcome {
            status,
            bytes_in: ex.body_stats().received,
            bytes_out: ex.response_body_bytes(),
            duration: observation
                .start
                .map_or(std::time::Duration::ZERO, |s| s.elapsed()),
            stored,
        };
        self.observing
            .metrics
            .finish(&observation.in_flight, &outcome);
        if let (Some(log), Some(time)) = (&self.observing.log, observation.time) {
            let request = ex.request();
            log.write(&Entry {
                time,
                client: ex.peer_addr(),
                method: request.method().as_str(),
                path: request.target().as_bytes(),
                status: outcome.status,
                bytes_in: outcome.bytes_in,
                bytes_out: outcome.bytes_out,
                duration: outcome.duration,
                stored: &outcome.stored,
                token: who,
                refused: false,
            });
        }
    }
}

impl Service {
    /// Writes an access log line per request.
    pub fn with_access_log(mut self, log: AccessLog) -> Self {
        self.observing.log = Some(log);
        self
    }

    /// Answers `/metrics` on this service's listeners (the default), or not (when they are
    /// served on a listener of their own: [`MetricsOnly`]).
    pub fn with_metrics_route(mut self, on: bool) -> Self {
        self.observing.metrics_route = on;
        self
    }

    /// Runs `hooks` after every commit and delete.
    pub fn with_hooks(mut self, hooks: super::hooks::Hooks) -> Self {
        self.hooks = Some(hooks);
        self
    }

    /// Sends every commit and delete to `webhooks`.
    pub fn with_webhooks(mut self, webhooks: super::webhooks::Webhooks) -> Self {
        self.webhooks = Some(webhooks);
        self
    }

    /// Asks `hook` before every upload.
    pub fn with_pre_upload(mut self, hook: super::pre_upload::PreUpload) -> Self {
        self.pre_upload = Some(hook);
        self
    }

    /// A file was committed at `path`: noted for the log and metrics, and the hooks queued.
    pub(super) fn on_stored(&self, path: &str, committed: &weir_store::Committed) {
        stored::note(path, committed);
        self.hook_event("stored", path, committed.size, committed.sha256);
    }

    /// A file was deleted at `path`: noted for the log, and the hooks queued.
    pub(super) fn on_deleted(&self, path: &str) {
        stored::note_deleted(path);
        self.hook_event("deleted", path, 0, None);
    }

    /// The name of the known token `request` carries (`Authorization`, or for a read the
    /// page's cookie), if any. Costs a SHA-256 of the presented token when credentials are
    /// configured (the route's own check hashes it once more): nothing without them.
    fn who(&self, request: &weir::Request) -> Option<std::sync::Arc<str>> {
        let auth = self.auth();
        if !auth.any() {
            return None;
        }
        let authorization = super::auth::authorization(request).ok().flatten();
        // WebDAV takes the token as Basic's password too (`routes/webdav/`).
        let credential = match request.path().starts_with(super::routes::webdav::PREFIX) {
            true => auth.identify_bearer_or_basic(authorization),
            false => auth.identify(authorization),
        };
        let credential = credential.or_else(|| {
            matches!(*request.method(), Method::GET | Method::HEAD)
                .then(|| auth.identify_cookie(request))
                .flatten()
        });
        credential.map(|c| c.name().clone())
    }

    /// Queues the event for the command hook and the webhook, those configured.
    fn hook_event(&self, kind: &'static str, path: &str, size: u64, sha256: Option<[u8; 32]>) {
        let who = stored::who();
        let event = || super::hooks::Event {
            kind,
            token: who.clone(),
            // ALLOCATION: the event's path, once per committed file or delete and per kind of
            // hook configured (none without hooks).
            path: path.to_owned(),
            size,
            sha256,
        };
        if let Some(webhooks) = &self.webhooks {
            webhooks.send(event());
        }
        if let Some(hooks) = &self.hooks {
            hooks.send(event());
        }
    }

    /// A request the server refused before any handler ran (`weir::Config::on_refused`): an
    /// access log line (`refused=true`) and its count in `weir_http_requests_total`.
    pub fn on_refused(&self, refused: &weir::Refused<'_>) {
        let status = refused.status.as_u16();
        self.observing.metrics.count_refused(refused.method, status);
        if let Some(log) = &self.observing.log {
            log.write(&Entry {
                time: SystemTime::now(),
                client: refused.peer,
                method: refused.method.unwrap_or("-"),
                // A 414's target can be as long as the request line limit: the log keeps
                // its first KiB.
                path: refused
                    .target
                    .map_or(b"-", |t| &t[..t.len().min(REFUSED_PATH_MAX)]),
                status: Some(status),
                bytes_in: 0,
                bytes_out: 0,
                duration: std::time::Duration::ZERO,
                stored: &stored::Stored::default(),
                token: None,
                refused: true,
            });
        }
    }

    /// Writes out the access log's pending lines (at shutdown).
    pub fn flush_log(&self) {
        if let Some(log) = &self.observing.log {
            log.flush();
        }
    }

    /// The service's counters (to give them the running server's: [`Metrics::set_server`]).
    pub fn metrics(&self) -> &std::sync::Arc<Metrics> {
        &self.observing.metrics
    }
}

/// `GET /metrics`; with `token`, behind the credentials when any is configured (one with the
/// read scope and no path prefix: metrics change nothing, but tell how the whole service is
/// used).
async fn metrics(svc: &Service, ex: &mut Exchange<'_>, token: bool) -> Result<(), weir::Error> {
    if !matches!(*ex.request().method(), Method::GET | Method::HEAD) {
        return reply::error(
            ex,
            Problem::MethodNotAllowed,
            "method not allowed here",
            &[("allow", "GET, HEAD")],
        )
        .await;
    }
    if token {
        let authorization = match super::auth::authorization(ex.request()) {
            Ok(a) => a,
            Err(message) => return reply::error(ex, Problem::BadRequest, message, &[]).await,
        };
        let auth = svc.auth();
        if auth.any() {
            match auth.identify(authorization) {
                None => return super::service::unauthorized(ex).await,
                Some(c) if !c.allows(Access::Read, None) => {
                    return super::service::forbidden(ex).await;
                }
                Some(_) => {}
            }
        }
    }
    let open = match &svc.resumables {
        Some(r) => svc.observing.open_uploads.count(r).await,
        None => None,
    };
    let hooks = svc.hooks.as_ref().map(|h| &*h.outcomes);
    let webhooks = svc.webhooks.as_ref().map(|h| &*h.counters);
    // With `--store s3://`, the bucket's usage as this node counts it (`S3Store::usage`).
    let storage = super::service::with_files!(svc, s => (s.usage(), s.max_storage()));
    let text = svc
        .observing
        .metrics
        .render(storage, open, (hooks, webhooks), svc.buffers_lent());
    ex.respond(StatusCode::OK)
        .header("content-type", "text/plain; version=0.0.4; charset=utf-8")
        .body(text.as_bytes())
        .await
}

/// The handler of `--metrics-listen`: `/metrics` only, without a token (the operator chose
/// where that listener is reachable).
pub struct MetricsOnly(pub std::sync::Arc<Service>);

impl Handler for MetricsOnly {
    async fn handle(&self, ex: &mut Exchange<'_>) -> Result<(), weir::Error> {
        if ex.request().path() != "/metrics" {
            return reply::error(ex, Problem::NotFound, "not found", &[]).await;
        }
        if !self
            .0
            .hosts
            .admits(ex.request().header("host"), ex.peer_addr())
        {
            return misdirected(ex).await;
        }
        metrics(&self.0, ex, false).await
    }
}

/// The answer to a request whose `Host` this server does not serve (`host_check.rs`).
async fn misdirected(ex: &mut Exchange<'_>) -> Result<(), weir::Error> {
    let detail = "this server does not answer for that host name (weir serve --allowed-host \
                  adds names)";
    reply::error(ex, Problem::HostNotAllowed, detail, &[]).await
}
