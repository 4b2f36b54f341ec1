//! The [`Service`] handler: routes requests to uploads, downloads, listings and deletes.
//!
//! | request | answer |
//! | --- | --- |
//! | `GET /healthz` | `200 ok` (never needs a token) |
//! | `PUT /files/{path}` | stream the body into the store: `201` (`200` if replaced) + JSON; `412` if a precondition fails |
//! | `POST /files/{dir}/` (multipart) | every file part into `{dir}`: `201` + JSON list |
//! | `GET`/`HEAD /files/{path}` | the file (`Range`, preconditions: `304`, `412`) |
//! | `GET /files/` or `/files/{dir}/` | JSON listing |
//! | `PUT /files/{dir}/` without a body | create the folder (and its parents): `201`, `200` if there |
//! | `DELETE /files/{path}` | `204`, `404` if absent, `412` if a precondition fails |
//! | `DELETE /files/{dir}/` | delete the folder if it is empty: `204`, `409` if not (or a file), `404` if absent |
//! | `PUT /files/{path}` or `POST /files/{dir}/` with `Upload-Complete`, `HEAD`/`PATCH`/`DELETE /uploads/{id}` | resumable uploads (`resumable.rs`, with either store) |
//! | `OPTIONS`/`POST /tus/`, `HEAD`/`PATCH`/`DELETE /tus/{id}` | the same uploads over tus 1.0.0 (`tus.rs`, with either store) |
//! | `GET /`, `/assets/...`, a folder's URL asked for as HTML | the browser page (`page.rs`) |
//! | `OPTIONS` preflight from a `--cors-origin` | `204` with the allowed methods and fields (`cors.rs`) |
//! | any but `/healthz`, with a `Host` not served | `421` (`host_check.rs`, checked in `observe.rs`) |
//! | a write (`PUT`, `POST`, `PATCH`, `DELETE`) from a browser page of another origin | `403` (`origin_guard.rs`) |
//!
//! Order of checks for every `/files/` request: method (405), one `Authorization` field at most
//! (400), credential (401), path (400), the credential's scope and prefix (403: `auth.rs`),
//! then the route's own (size 413, preconditions 412:
//! `preconditions.rs`); all of them before any of the body is read, so a refused upload costs
//! the client nothing but its
//! head (weir sends no `100 Continue` for it).
//!
//! File I/O (writes, fsync, open) is synchronous std code on the connection's task:
//! `tokio::fs` sends every call to the blocking pool, a hop per write that was measured to cost
//! much of the upload throughput (docs/archive/BENCHMARKS-history.md, "Figures once quoted in
//! source comments"). Writes land in the page cache and return quickly, and the multi-thread
//! runtime lets idle workers steal other connections' tasks meanwhile. The one call that can block
//! for long, the fsyncs of a commit, runs under `block_in_place` (see `commit`), which hands this
//! worker's other tasks to another thread first. Listings are the exception: their time grows with
//! the directory, so the scan runs on the blocking pool (see `listing.rs`).

use super::auth::{Access, Auth, Verdict};
use super::buffers::BufferPool;
use super::cors::{self, Cors};
use super::current_auth::CurrentAuth;
use super::hasher::HashPool;
use super::host_check::HostCheck;
use super::listing::Scans;
use super::observe::Observing;
use super::reply::{self, Problem};
use super::resumable::{self, ResumableOptions};
use super::target::Target;
use super::{files, origin_guard, page, tus};
use http::{Method, StatusCode};
use std::sync::Arc;
use weir::{Exchange, http};
use weir_store::{LocalStore, Resumables, StoreError};

/// The resumable uploads a service has ([`Service::uploads`]): the routes over them
/// (`resumable.rs`, `tus.rs`) are generic over `weir_store::ResumableStore`, instantiated here.
pub(super) enum Uploads<'a> {
    /// The local store's.
    Local(&'a Resumables),
    /// The bucket's, with `--store s3://`.
    #[cfg(feature = "s3")]
    S3(&'a weir_store::S3Resumables),
    /// None: not enabled locally, or `--store s3://` without them.
    Off,
}

/// `$body` with `$store` bound to whichever resumable uploads `$svc` has (static dispatch: one
/// instance per store), else `$off`.
macro_rules! with_uploads {
    ($svc:expr, $store:ident => $body:expr, off => $off:expr) => {
        match $svc.uploads() {
            Uploads::Local($store) => $body,
            #[cfg(feature = "s3")]
            Uploads::S3($store) => $body,
            Uploads::Off => $off,
        }
    };
}

/// The store a service serves `/files/` from ([`Service::files`]): the routes over it
/// (`files.rs` and below) are generic over `weir_store::Store`, instantiated here.
pub(super) enum Files<'a> {
    /// The local root.
    Local(&'a LocalStore),
    /// `--store s3://`'s bucket.
    #[cfg(feature = "s3")]
    S3(&'a weir_store::S3Store),
}

/// `$body` with `$store` bound to the store `$svc` serves `/files/` from (static dispatch: one
/// instance per store).
macro_rules! with_files {
    ($svc:expr, $store:ident => $body:expr) => {
        match $svc.files() {
            $crate::serve::service::Files::Local($store) => $body,
            #[cfg(feature = "s3")]
            $crate::serve::service::Files::S3($store) => $body,
        }
    };
}
pub(super) use with_files;

/// What the service is configured to do.
#[derive(Clone, Debug)]
pub struct ServiceOptions {
    /// Largest upload body; larger ones get 413 (checked on `Content-Length` before reading).
    pub max_upload: u64,
    /// Compute SHA-256 of uploads. Off: bodies are spliced socket → file (unless the client
    /// sent a `Content-Digest`, which is always verified).
    pub hash: bool,
    /// Token requirements, at the start (the service keeps the ones in force: SIGHUP may
    /// replace them, `Service::auth`).
    pub auth: Auth,
    /// A `max_storage` quota is set: a spliced body must have a `Content-Length`, so that the
    /// quota is reserved before the bytes reach the disk (else the buffered path is taken).
    pub limited_storage: bool,
}

/// The upload/download service: a [`Handler`](weir::Handler) over a [`LocalStore`].
pub struct Service {
    pub(super) store: LocalStore,
    pub(super) options: ServiceOptions,
    /// The token requirements in force (`options.auth` at the start; `current_auth.rs`).
    pub(super) current_auth: CurrentAuth,
    pub(super) buffers: BufferPool,
    pub(super) hashers: HashPool,
    /// Permits for directory scans on the blocking pool (see `listing.rs`).
    pub(super) listings: Scans,
    /// Resumable uploads; `None` until [`Service::with_resumable`] (answered 503).
    pub(super) resumables: Option<Arc<Resumables>>,
    pub(super) resumable_options: ResumableOptions,
    /// Access log and metrics (`observe.rs`, which is also where requests enter).
    pub(super) observing: Observing,
    /// `--hook-command` (`hooks.rs`).
    pub(super) hooks: Option<super::hooks::Hooks>,
    /// `--hook-url` (`webhooks.rs`).
    pub(super) webhooks: Option<super::webhooks::Webhooks>,
    /// `--pre-upload-hook` (`pre_upload.rs`).
    pub(super) pre_upload: Option<super::pre_upload::PreUpload>,
    /// Origins whose pages may use the service (`cors.rs`); none by default.
    pub(super) cors: Cors,
    /// Writes from browser pages of other origins are refused (`origin_guard.rs`); on by
    /// default.
    pub(super) refuse_cross_site_writes: bool,
    /// The `Host` names served (`host_check.rs`, applied in `observe.rs`); no check until
    /// [`Service::with_host_check`].
    pub(super) hosts: HostCheck,
    /// `--store s3://`: `/files/` is served from this store instead ([`Service::files`]).
    #[cfg(feature = "s3")]
    pub(super) remote: Option<Arc<weir_store::S3Store>>,
    /// With `remote`: resumable uploads kept in the bucket (`resumable.rs`, `tus.rs`).
    #[cfg(feature = "s3")]
    pub(super) remote_resumables: Option<weir_store::S3Resumables>,
}

impl Service {
    /// A service storing into `store`. Starts one hashing thread per core (they wait for
    /// uploads' hash jobs; see `hasher.rs`).
    pub fn new(store: LocalStore, options: ServiceOptions) -> Self {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        Self {
            store,
            current_auth: CurrentAuth::new(options.auth.clone()),
            options,
            buffers: BufferPool::default(),
            hashers: HashPool::new(cores),
            listings: Scans::new(cores),
            resumables: None,
            resumable_options: ResumableOptions::default(),
            observing: Observing {
                metrics_route: true,
                ..Observing::default()
            },
            hooks: None,
            webhooks: None,
            pre_upload: None,
            cors: Cors::default(),
            refuse_cross_site_writes: true,
            hosts: HostCheck::default(),
            #[cfg(feature = "s3")]
            remote: None,
            #[cfg(feature = "s3")]
            remote_resumables: None,
        }
    }

    /// Enables resumable uploads: opens their state in the store (cutting partial data back to
    /// its recorded offset, removing what expired) and starts the background sweep.
    pub fn with_resumable(mut self, options: ResumableOptions) -> Result<Self, StoreError> {
        let resumables = Arc::new(Resumables::open(&self.store, options.expiry)?);
        resumable::start_sweeper(&resumables);
        self.resumables = Some(resumables);
        self.resumable_options = options;
        Ok(self)
    }

    /// The resumable uploads this service has: the bucket's with `--store s3://`, else the
    /// local store's.
    pub(super) fn uploads(&self) -> Uploads<'_> {
        match self.files() {
            Files::Local(_) => match self.resumables.as_deref() {
                Some(r) => Uploads::Local(r),
                None => Uploads::Off,
            },
            #[cfg(feature = "s3")]
            Files::S3(_) => match &self.remote_resumables {
                Some(ups) => Uploads::S3(ups),
                None => Uploads::Off,
            },
        }
    }

    /// The store `/files/` is served from: the bucket with `--store s3://`, else the local
    /// root. The one place that tells them apart.
    pub(super) fn files(&self) -> Files<'_> {
        #[cfg(feature = "s3")]
        if let Some(s3) = self.remote.as_deref() {
            return Files::S3(s3);
        }
        Files::Local(&self.store)
    }

    /// Serves `/files/` from `store` instead of the local root (resumable and tus uploads need
    /// [`Service::with_remote_resumable`]).
    #[cfg(feature = "s3")]
    pub fn with_remote(mut self, store: weir_store::S3Store) -> Self {
        self.remote = Some(Arc::new(store));
        self
    }

    /// With [`Service::with_remote`]'s store: resumable and tus uploads kept in its bucket
    /// (`resumable.rs`, `tus.rs`), so that any node continues any upload.
    #[cfg(feature = "s3")]
    pub fn with_remote_resumable(mut self, options: weir_store::S3ResumableOptions) -> Self {
        self.remote_resumables = self
            .remote
            .as_deref()
            .map(|store| weir_store::S3Resumables::new(store.clone(), options));
        self
    }

    /// Lets pages of these origins use the service (`cors.rs`).
    pub fn with_cors(mut self, cors: Cors) -> Self {
        self.cors = cors;
        self
    }

    /// Serves writes from browser pages of any origin (`--allow-cross-site-writes`).
    pub fn allow_cross_site_writes(mut self) -> Self {
        self.refuse_cross_site_writes = false;
        self
    }

    /// Serves only the `Host` names `hosts` accepts (`host_check.rs`).
    pub fn with_host_check(mut self, hosts: HostCheck) -> Self {
        self.hosts = hosts;
        self
    }

    /// Upload buffers lent out now: 0 when no upload runs and no hash job holds one. For
    /// tests and monitoring: a buffer that never comes back is a leak.
    pub fn buffers_lent(&self) -> usize {
        self.buffers.lent()
    }

    /// Listings of the resumable area made for `/metrics` so far (`open_uploads.rs`): for
    /// tests, which check that scrapes share them.
    pub fn open_upload_scans(&self) -> u64 {
        self.observing.open_uploads.scans()
    }
}

impl Service {
    /// Routes one request (entered from `observe.rs`, which logs and counts it).
    pub(super) async fn route(&self, ex: &mut Exchange<'_>) -> Result<(), weir::Error> {
        // CORS first: a preflight is answered before any route or token check.
        if cors::apply(&self.cors, ex).await? {
            return Ok(());
        }
        if self.refuse_cross_site_writes
            && origin_guard::is_cross_site_write(ex.request(), &self.cors)
        {
            let detail = "a browser page of another origin may not write here (weir serve \
                          --cors-origin lists the origins that may)";
            return reply::error(ex, Problem::CrossSiteWrite, detail, &[]).await;
        }
        let path = ex.request().path();
        if path == "/healthz" {
            return match *ex.request().method() {
                Method::GET | Method::HEAD => {
                    ex.respond(StatusCode::OK)
                        .header("content-type", "text/plain")
                        .body("ok\n")
                        .await
                }
                _ => method_not_allowed(ex, "GET, HEAD").await,
            };
        }
        // The browser page (page.rs), before the token check: it holds no data.
        if let Some(asset) = page::route(ex.request()) {
            return page::serve(ex, asset).await;
        }
        // ALLOCATION: the routes that touch the store run in a future of their own on the heap,
        // one per such request. Their futures are large (hashing state, upload and hook
        // buffers); awaited inline they would make every connection's task that large, idle or
        // not, since a task holds its future's largest state for its whole life.
        Box::pin(self.route_store(ex)).await
    }

    /// The token requirements in force now; a request takes them once (`current_auth.rs`).
    pub(super) fn auth(&self) -> Arc<Auth> {
        self.current_auth.get()
    }

    /// The routes past `/healthz` and the page: resumable uploads, tus and `/files/`.
    async fn route_store(&self, ex: &mut Exchange<'_>) -> Result<(), weir::Error> {
        let auth = self.auth();
        let path = ex.request().path();
        if path == "/tus" || path.starts_with(tus::PREFIX) {
            return self.route_tus(ex).await;
        }
        #[cfg(feature = "s3")]
        if matches!(self.uploads(), Uploads::Off)
            && matches!(self.files(), Files::S3(_))
            && path.starts_with(resumable::PREFIX)
        {
            return not_implemented(ex, "a resumable upload").await;
        }
        // Discovery of resumable uploads (draft §4.1.4): every `/files/` resource takes them.
        if *ex.request().method() == Method::OPTIONS && (path == "*" || path.starts_with("/files/"))
        {
            let limit = with_uploads!(self, s => Some(resumable::new_limits(self, s)), off => None);
            return resumable::options(ex, limit).await;
        }
        if let Some(id) = path.strip_prefix(resumable::PREFIX) {
            let caller = match super::auth::authorization(ex.request()) {
                Ok(a) => auth.caller(a, Access::Write),
                Err(message) => {
                    return reply::error(ex, Problem::BadRequest, message, &[]).await;
                }
            };
            // An upload resource is written to, whatever the method: the write scope here,
            // and for a prefix token the upload's target (`resumable.rs`, once it is read).
            match caller.check(Access::Write, None) {
                Verdict::Allowed => {}
                Verdict::Unauthorized => return unauthorized(ex).await,
                Verdict::Forbidden => return forbidden(ex).await,
            }
            let mut copy = [0; 64];
            let id = detach(id, &mut copy);
            return with_uploads!(
                self,
                s => resumable::serve(self, s, ex, &id, caller).await,
                off => resumable::unavailable(self, ex).await
            );
        }
        let Some(raw) = path.strip_prefix("/files/") else {
            if path == "/files" {
                return ex
                    .respond(StatusCode::MOVED_PERMANENTLY)
                    .header("location", "/files/")
                    .empty()
                    .await;
            }
            return reply::error(ex, Problem::NotFound, "not found", &[]).await;
        };
        let access = match *ex.request().method() {
            Method::GET | Method::HEAD => Access::Read,
            Method::PUT | Method::POST => Access::Write,
            Method::DELETE => Access::Delete,
            _ => return method_not_allowed(ex, "GET, HEAD, PUT, POST, DELETE").await,
        };
        let authorization = match super::auth::authorization(ex.request()) {
            Ok(a) => a,
            Err(message) => return reply::error(ex, Problem::BadRequest, message, &[]).await,
        };
        // 401 before the path is looked at; 403 (scope, prefix) once it is decoded.
        let mut credential = auth.identify(authorization);
        if credential.is_none() && access == Access::Read {
            // The page's cookie, for its download links: reads only (auth.rs says why).
            credential = auth.identify_cookie(ex.request());
        }
        if auth.required(access) && credential.is_none() {
            return unauthorized(ex).await;
        }
        // ALLOCATION: the decoded path (the store keeps it as a `StorePath` anyway).
        let target = match Target::parse(raw) {
            Ok(t) => t,
            Err(e) => return reply::error(ex, Problem::InvalidPath, e.as_str(), &[]).await,
        };
        let store_path = match &target {
            Target::Root => "",
            Target::File(p) | Target::Dir(p) => p.as_str(),
        };
        if auth.required(access) && !credential.is_some_and(|c| c.allows(access, Some(store_path)))
        {
            return forbidden(ex).await;
        }
        let uploads = matches!(
            (ex.request().method(), &target),
            (&Method::PUT, Target::File(_)) | (&Method::POST, _)
        );
        if let (true, Some(hook)) = (uploads, &self.pre_upload) {
            let kind = if *ex.request().method() == Method::POST {
                match resumable::post_creation(ex) {
                    Some(_) => "resumable",
                    None => "form",
                }
            } else if resumable::upload_complete(ex).is_some() {
                "resumable"
            } else {
                "put"
            };
            // A resumable upload's whole length when it declares one, else this request's.
            let declared = ex
                .request()
                .header_str("upload-length")
                .and_then(|v| v.trim().parse().ok());
            let length = match ex.request().framing() {
                _ if kind == "resumable" && declared.is_some() => declared,
                weir::Framing::Length(n) => Some(n),
                _ => None,
            };
            let ask = super::pre_upload::Ask {
                kind,
                method: ex.request().method().as_str(),
                path: store_path,
                length,
                client: super::pre_upload::client(ex.peer_addr()),
                credential,
            };
            let answer = hook.ask(&ask).await;
            if let Some(refused) = super::pre_upload::refusal(ex, answer, &[]).await {
                return refused;
            }
        }
        let method = ex.request().method().clone();
        // A resumable upload's creation, with either store.
        let creation = match (&method, &target) {
            (&Method::PUT, Target::File(_)) => resumable::upload_complete(ex),
            (&Method::POST, _) => resumable::post_creation(ex),
            _ => None,
        };
        if let Some(complete) = creation {
            return with_uploads!(
                self,
                s => resumable::create_at(self, s, ex, target, complete).await,
                off => resumable::unavailable(self, ex).await
            );
        }
        with_files!(self, store => files::serve(self, store, ex, method, target).await)
    }
}

impl Service {
    /// `/tus` and `/tus/...`: tus's one route (`tus.rs`), over whichever resumable uploads
    /// this service has (the bucket's with `--store s3://`, else the local store's).
    async fn route_tus(&self, ex: &mut Exchange<'_>) -> Result<(), weir::Error> {
        #[cfg(feature = "s3")]
        if matches!(self.uploads(), Uploads::Off) && matches!(self.files(), Files::S3(_)) {
            return not_implemented(ex, "a tus upload").await;
        }
        // tus's token rule: that of writes, for every request but OPTIONS (discovery). A
        // prefix token is judged on the upload's target by `tus.rs`: at creation from
        // `Upload-Metadata`, for an upload by id from its record.
        let auth = self.auth();
        let caller = match super::auth::authorization(ex.request()) {
            Ok(a) => auth.caller(a, Access::Write),
            Err(message) => {
                return reply::error(ex, Problem::BadRequest, message, &[]).await;
            }
        };
        let mut copy = [0; 64];
        let path = ex.request().path();
        let rest = detach(path.get(tus::PREFIX.len()..).unwrap_or(""), &mut copy);
        let verdict = caller.check(Access::Write, None);
        with_uploads!(
            self,
            s => tus::serve(self, s, ex, &rest, caller, verdict).await,
            off => tus::unavailable(self, ex, verdict).await
        )
    }
}

/// Answers a route this store does not have (resumable and tus uploads with `--store s3://`
/// but without them).
#[cfg(feature = "s3")]
pub(super) async fn not_implemented(ex: &mut Exchange<'_>, what: &str) -> Result<(), weir::Error> {
    let message = format!("{what} is not available with this store (--store s3://)");
    reply::error(ex, Problem::NotImplemented, &message, &[]).await
}

pub(super) async fn unauthorized(ex: &mut Exchange<'_>) -> Result<(), weir::Error> {
    reply::error(
        ex,
        Problem::Unauthorized,
        "missing or wrong bearer token",
        &[("www-authenticate", "Bearer realm=\"weir\"")],
    )
    .await
}

pub(super) async fn forbidden(ex: &mut Exchange<'_>) -> Result<(), weir::Error> {
    reply::error(
        ex,
        Problem::Forbidden,
        "this token may not do that here (scope or path prefix)",
        &[],
    )
    .await
}

pub(super) async fn method_not_allowed(
    ex: &mut Exchange<'_>,
    allow: &str,
) -> Result<(), weir::Error> {
    reply::error(
        ex,
        Problem::MethodNotAllowed,
        "method not allowed here",
        &[("allow", allow)],
    )
    .await
}

/// `s` (an upload id from the request's path), copied so that the request can be borrowed
/// mutably again: into `buf` when it fits (an id is 32 hex digits), so that requests on an
/// upload allocate nothing for it; a longer one, which names no upload, into a `String`.
fn detach<'a>(s: &str, buf: &'a mut [u8; 64]) -> std::borrow::Cow<'a, str> {
    match buf.get_mut(..s.len()) {
        Some(copy) => {
            copy.copy_from_slice(s.as_bytes());
            // A copy of a whole `str`.
            std::borrow::Cow::Borrowed(std::str::from_utf8(copy).expect("copied from a str"))
        }
        // ALLOCATION: only for a path that names no upload.
        None => std::borrow::Cow::Owned(s.to_owned()),
    }
}
