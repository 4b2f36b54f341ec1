//! `weir serve`: the upload/download service.
//!
//! Start-up does everything that can fail because of the operator *before* serving anything:
//! open the store (create the root, check it is a writable directory, take its lock, remove
//! the temporaries a crash left), then bind every listener. Each failure is one line on stderr
//! and a non-zero exit (`main.rs`). Then one line on stdout says where it listens (tests and
//! scripts read it to learn a port chosen by the OS).
//!
//! | module | what it is |
//! | --- | --- |
//! | `service` | the [`Service`] handler: routing, auth, the small routes |
//! | `upload` | `PUT /files/{path}`: spliced or hashed streaming into the store |
//! | `resumable` | resumable uploads (IETF draft): creation on `PUT`, `/uploads/{id}` |
//! | `tus` | the same resumable uploads over tus 1.0.0: `/tus/`, `/tus/{id}` |
//! | `multipart` / `form` | `POST /files/{dir}/`: a streaming `multipart/form-data` parser, and its handler |
//! | `download` | `GET`/`HEAD /files/{path}`: conditionals, `Range`, `sendfile` |
//! | `range` | the `Range` header, evaluated against a size |
//! | `listing` | directory listings as JSON |
//! | `page` | the browser page: embedded HTML, CSS and JavaScript |
//! | `auth` | bearer tokens, compared in constant time |
//! | `cors` | `--cors-origin`: preflights, and the CORS fields of every answer |
//! | `target` | `/files/...` URL paths: percent-decoding into `StorePath`s |
//! | `reply` | JSON bodies and `StoreError` → status |
//! | `buffers` | the pool of upload buffers |
//! | `hasher` | the hashing threads: an upload's SHA-256 beside its connection's task |
//! | `mime` | `Content-Type` by extension |

mod auth;
mod buffers;
mod cors;
mod download;
mod form;
mod hasher;
mod listing;
mod mime;
mod multipart;
mod page;
mod preconditions;
mod reply;
mod resumable;
mod service;
mod target;
mod tus;
mod upload;

pub use auth::Auth;
pub use cors::Cors;
pub(crate) use reply::hex;
pub use resumable::ResumableOptions;
pub use service::{Service, ServiceOptions};
pub(crate) use target::percent_decode;

use crate::cli::{Runtime, ServeArgs};
use std::fmt;
use std::io::Write;
use std::net::SocketAddr;
use std::path::PathBuf;
use weir_store::{LocalOptions, LocalStore};

/// Everything `weir serve` needs, from the command line and the environment.
#[derive(Clone, Debug)]
pub struct ServeConfig {
    pub listen: SocketAddr,
    pub unix: Option<PathBuf>,
    pub root: PathBuf,
    pub max_upload: u64,
    pub max_storage: Option<u64>,
    pub pause_threshold: usize,
    pub hash: bool,
    pub token: Option<String>,
    pub token_read: bool,
    /// Certificate chain and key (PEM) for HTTPS on `listen`.
    pub tls: Option<(PathBuf, PathBuf)>,
    pub runtime: Runtime,
    /// Resumable uploads' expiry and append limits.
    pub resumable: ResumableOptions,
    /// Origins whose pages may use the service (`--cors-origin`).
    pub cors: Cors,
}

/// A start-up or serving failure, printed as one line.
#[derive(Debug)]
pub struct ServeError(String);

impl fmt::Display for ServeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ServeError {}

impl ServeConfig {
    /// Builds the configuration: the token comes from `--token`, else from `WEIR_TOKEN`.
    pub fn from_args(args: ServeArgs) -> Result<Self, ServeError> {
        let token = args
            .token
            .or_else(|| std::env::var("WEIR_TOKEN").ok().filter(|t| !t.is_empty()));
        if token.as_deref() == Some("") {
            return Err(ServeError("--token must not be empty".into()));
        }
        if args.token_read && token.is_none() {
            return Err(ServeError(
                "--token-read needs a token (--token or WEIR_TOKEN)".into(),
            ));
        }
        if args.max_upload == 0 {
            return Err(ServeError("--max-upload must be at least 1 byte".into()));
        }
        let pause_threshold = usize::try_from(args.pause_threshold)
            .ok()
            .filter(|&t| t >= weir::Config::MIN_PAUSE_THRESHOLD)
            .ok_or_else(|| {
                ServeError(format!(
                    "--pause-threshold must be between {} and {} bytes",
                    weir::Config::MIN_PAUSE_THRESHOLD,
                    usize::MAX
                ))
            })?;
        let cors = Cors::new(&args.cors_origin).map_err(ServeError)?;
        Ok(Self {
            cors,
            listen: args.listen,
            unix: args.unix,
            root: args.root,
            max_upload: args.max_upload,
            max_storage: args.max_storage,
            pause_threshold,
            hash: !args.no_hash,
            token,
            token_read: args.token_read,
            tls: args.tls_cert.zip(args.tls_key),
            runtime: args.runtime,
            resumable: ResumableOptions {
                expiry: args.resumable_expiry,
                max_append: args.resumable_max_append,
                min_append: args.resumable_min_append,
            },
        })
    }

    /// The server library's configuration for this service.
    pub fn weir_config(&self) -> weir::Config {
        weir::Config {
            pause_threshold: self.pause_threshold,
            reuse_port: self.runtime == Runtime::PerCore,
            ..weir::Config::default()
        }
    }

    /// The handler's options.
    pub fn service_options(&self) -> ServiceOptions {
        ServiceOptions {
            max_upload: self.max_upload,
            hash: self.hash,
            auth: Auth::new(self.token.as_deref(), self.token_read),
            limited_storage: self.max_storage.is_some(),
        }
    }
}

/// Runs `weir serve` until SIGINT or SIGTERM.
pub fn run(args: ServeArgs) -> Result<(), ServeError> {
    let config = ServeConfig::from_args(args)?;
    // Certificate problems are reported before anything else starts.
    let tls = config
        .tls
        .as_ref()
        .map(|(cert, key)| weir::TlsConfig::from_pem_files(cert, key))
        .transpose()
        .map_err(|e| ServeError(e.to_string()))?;
    let store = LocalStore::open(
        &config.root,
        LocalOptions {
            max_storage: config.max_storage,
            ..LocalOptions::default()
        },
    )
    .map_err(|e| ServeError(e.to_string()))?;
    init_logging();
    let service = Service::new(store, config.service_options())
        .with_resumable(config.resumable)
        .map_err(|e| ServeError(format!("resumable uploads: {e}")))?
        .with_cors(config.cors.clone());
    let store = &service.store;
    raise_open_files_limit(config.weir_config().max_connections);
    if store.recovered_files() > 0 {
        tracing::info!(
            files = store.recovered_files(),
            "finished multi-file commits that a crash interrupted"
        );
    }
    if store.removed_temporaries() > 0 {
        tracing::info!(
            removed = store.removed_temporaries(),
            "removed temporary files of interrupted uploads"
        );
    }
    let runtime = match config.runtime {
        Runtime::MultiThread => tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build(),
        // Only binds listeners and waits for the signal; the per-core threads run their own.
        Runtime::PerCore => tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build(),
    }
    .map_err(|e| ServeError(format!("cannot start the runtime: {e}")))?;
    let server = runtime.block_on(async {
        let mut server = weir::Server::new(config.weir_config());
        let scheme = if tls.is_some() { "https" } else { "http" };
        let listening = match tls {
            Some(tls) => server.listen_tls(config.listen, tls).await,
            None => server.listen_tcp(config.listen).await,
        };
        let addr = listening
            .map_err(|e| ServeError(format!("cannot listen on {}: {e}", config.listen)))?;
        if let Some(path) = &config.unix {
            server
                .listen_unix(path)
                .map_err(|e| ServeError(format!("cannot listen on {}: {e}", path.display())))?;
        }
        announce(scheme, addr, &config, store);
        Ok::<_, ServeError>(server)
    })?;
    let served = match config.runtime {
        Runtime::MultiThread => runtime.block_on(server.serve_until(service, shutdown_signal())),
        Runtime::PerCore => {
            let handle = server.handle();
            let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
            let (done, mut finished) = tokio::sync::oneshot::channel();
            std::thread::spawn(move || {
                let _ = done.send(server.serve_per_core(service, threads));
            });
            runtime.block_on(async {
                let outcome = tokio::select! {
                    outcome = &mut finished => outcome,
                    () = shutdown_signal() => {
                        handle.shutdown();
                        finished.await
                    }
                };
                outcome.unwrap_or_else(|_| Err(std::io::Error::other("server thread panicked")))
            })
        }
    };
    served.map_err(|e| ServeError(format!("server failed: {e}")))
}

/// Says where the service listens, on stdout (one line per listener, flushed).
fn announce(scheme: &str, addr: SocketAddr, config: &ServeConfig, store: &LocalStore) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(
        out,
        "weir: serving {} on {scheme}://{addr}",
        store.root().display()
    );
    if let Some(path) = &config.unix {
        let _ = writeln!(out, "weir: serving on unix:{}", path.display());
    }
    let _ = out.flush();
}

/// Raises the soft limit on open files to the hard limit. Each connection holds its socket and,
/// while it uploads, one file (a form parks its finished parts: see `form.rs`), plus short-lived
/// directory descriptors; the common default soft limit of 1,024 would make `accept` fail long
/// before the connection limit. Warns when even the hard limit cannot give every connection its
/// socket.
#[cfg(target_os = "linux")]
fn raise_open_files_limit(max_connections: usize) {
    use rustix::process::{Resource, Rlimit, getrlimit, setrlimit};
    let limit = getrlimit(Resource::Nofile);
    let raised = Rlimit {
        current: limit.maximum,
        maximum: limit.maximum,
    };
    let now = if limit.current != limit.maximum && setrlimit(Resource::Nofile, raised).is_ok() {
        limit.maximum
    } else {
        limit.current
    };
    // A socket per connection, and room for listeners, logs and the store. Uploading
    // connections need one more descriptor each: the warning is for a limit that even idle
    // connections reach.
    let needed = (max_connections as u64).saturating_add(64);
    match now {
        Some(now) if now < needed => tracing::warn!(
            open_files = now,
            needed,
            "the open-file limit (hard limit, ulimit -Hn) is below the connection limit: near \
             it, new connections fail to be accepted"
        ),
        _ => tracing::debug!(open_files = ?now, "open-file limit"),
    }
}

#[cfg(not(target_os = "linux"))]
fn raise_open_files_limit(_max_connections: usize) {}

fn init_logging() {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .try_init();
}

/// Completes on SIGINT (Ctrl-C) or SIGTERM (service managers, `kill`).
async fn shutdown_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        match signal(SignalKind::terminate()) {
            Ok(mut term) => {
                tokio::select! {
                    _ = tokio::signal::ctrl_c() => {}
                    _ = term.recv() => {}
                }
            }
            Err(_) => {
                let _ = tokio::signal::ctrl_c().await;
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
    tracing::info!("shutting down");
}
