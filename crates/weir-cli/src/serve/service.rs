//! The [`Service`]: its state (the stores, the options, the pools, the hooks), how it is built,
//! and the one place that tells the stores apart: [`Service::files`] (the store `/files/` is
//! served from) and [`Service::uploads`] (its resumable uploads), each an enum that
//! `router.rs` matches once per request ([`with_files!`], `with_uploads!`) into routes generic
//! over the store. Also the answers every route shares (`401`, `403`, `405`, `501`).
//!
//! File I/O (writes, fsync, open) is synchronous std code on the connection's task:
//! `tokio::fs` sends every call to the blocking pool, a hop per write that was measured to cost
//! much of the upload throughput (docs/archive/BENCHMARKS-history.md, "Figures once quoted in
//! source comments"). Writes land in the page cache and return quickly, and the multi-thread
//! runtime lets idle workers steal other connections' tasks meanwhile. The one call that can
//! block for long, the fsyncs of a commit, runs under `block_in_place` (weir-store's
//! `off_the_runtime`), which hands this worker's other tasks to another thread first. Listings
//! are the exception: their time grows with the directory, so the scan runs on the blocking
//! pool (see `listing.rs`).

use super::auth::Auth;
use super::buffers::BufferPool;
use super::cors::Cors;
use super::current_auth::CurrentAuth;
use super::hasher::HashPool;
use super::host_check::HostCheck;
use super::reply::{self, Problem};
use std::sync::Arc;
use std::time::Duration;
use weir::Exchange;
use weir_store::{LocalStore, Resumables, StoreError};

/// The resumable uploads a service has ([`Service::uploads`]): the routes over them
/// (`resumable.rs`, `tus.rs`) are generic over `weir_store::ResumableStore`, instantiated here.
pub(super) enum Uploads<'a> {
    /// The local store's.
    Local(&'a Resumables),
    /// The bucket's, with `--store s3://`.
    #[cfg(feature = "s3")]
    S3(&'a weir_store::S3Resumables),
    /// None, and why.
    Off(NoUploads),
}

/// Why a service has no resumable uploads ([`Uploads::Off`]): the answer differs (`503`: not
/// enabled here; `501`: not with this store), and the router, not a route, tells them apart.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum NoUploads {
    /// The local store's, not enabled (`Service::with_resumable`).
    NotEnabled,
    /// `--store s3://` without its bucket's resumable uploads.
    #[cfg(feature = "s3")]
    NotWithThisStore,
}

/// `$body` with `$store` bound to whichever resumable uploads `$svc` has (static dispatch: one
/// instance per store), else `$off` with `$why` bound to the reason.
macro_rules! with_uploads {
    ($svc:expr, $store:ident => $body:expr, off($why:pat) => $off:expr) => {
        match $svc.uploads() {
            $crate::serve::service::Uploads::Local($store) => $body,
            #[cfg(feature = "s3")]
            $crate::serve::service::Uploads::S3($store) => $body,
            $crate::serve::service::Uploads::Off($why) => $off,
        }
    };
}
pub(super) use with_uploads;

/// The store a service serves `/files/` from ([`Service::files`]): the routes over it
/// (`routes/files/`) are generic over `weir_store::Store`, instantiated here.
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

/// Resumable uploads' options (`weir serve --resumable-*`).
#[derive(Clone, Copy, Debug)]
pub struct ResumableOptions {
    /// How long an incomplete upload lives after its creation or last append.
    pub expiry: Duration,
    /// Largest body of one creation or append request (`max-append-size`); `None`: the
    /// upload limit.
    pub max_append: Option<u64>,
    /// Smallest body of one request that does not complete the upload (`min-append-size`).
    pub min_append: Option<u64>,
}

impl Default for ResumableOptions {
    fn default() -> Self {
        ResumableOptions {
            expiry: Duration::from_secs(24 * 3600),
            max_append: None,
            min_append: None,
        }
    }
}

/// What the service reports about itself.
#[derive(Default)]
pub(super) struct Observing {
    pub log: Option<super::access_log::AccessLog>,
    pub metrics: std::sync::Arc<super::metrics::Metrics>,
    /// `/metrics` is answered on the service's own listeners (no `--metrics-listen`).
    pub metrics_route: bool,
    /// `weir_resumable_uploads_open`, counted for `/metrics` (`open_uploads.rs`).
    pub open_uploads: super::open_uploads::OpenUploads,
}

/// The permits for directory scans (`listing.rs`): how many may run on the blocking pool at
/// once.
pub(crate) struct Scans {
    pub(super) permits: Arc<tokio::sync::Semaphore>,
}

impl Scans {
    /// Allows `n` (at least 1) scans at once.
    pub(crate) fn new(n: usize) -> Self {
        Self {
            permits: Arc::new(tokio::sync::Semaphore::new(n.max(1))),
        }
    }
}

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
    /// `--zip-max-entries`: the most entries a folder's zip stream takes (its central
    /// directory is held until the end: `routes/files/archive/`).
    pub(super) zip_max_entries: u64,
    /// WebDAV's locks (`routes/webdav/locks.rs`), in memory.
    pub(super) dav_locks: super::routes::webdav::Locks,
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
            zip_max_entries: super::routes::files::ZIP_MAX_ENTRIES,
            dav_locks: Default::default(),
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
        super::sweep::start_local(&resumables);
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
                None => Uploads::Off(NoUploads::NotEnabled),
            },
            #[cfg(feature = "s3")]
            Files::S3(_) => match &self.remote_resumables {
                Some(ups) => Uploads::S3(ups),
                None => Uploads::Off(NoUploads::NotWithThisStore),
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

    /// The most entries (files and folders) a folder's zip stream takes (default 100,000):
    /// a larger folder is answered `413` before any byte.
    pub fn with_zip_max_entries(mut self, entries: u64) -> Self {
        self.zip_max_entries = entries;
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
    /// The token requirements in force now; a request takes them once (`current_auth.rs`).
    pub(super) fn auth(&self) -> Arc<Auth> {
        self.current_auth.get()
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
