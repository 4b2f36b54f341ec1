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
//! | `config` | [`ServeConfig`]: the arguments checked, what the service is built from |
//! | `service` | the [`Service`] handler: routing, auth, the small routes |
//! | `upload` | `PUT /files/{path}`: spliced or hashed streaming into the store |
//! | `resumable` | resumable uploads (IETF draft): creation on `PUT`, `/uploads/{id}` |
//! | `tus` | the same resumable uploads over tus 1.0.0: `/tus/`, `/tus/{id}` |
//! | `multipart` / `form` | `POST /files/{dir}/`: a streaming `multipart/form-data` parser, and its handler |
//! | `download` | `GET`/`HEAD /files/{path}`: conditionals, `Range`, `sendfile` |
//! | `range` | the `Range` header, evaluated against a size |
//! | `listing` | directory listings as JSON |
//! | `page` | the browser page: embedded HTML, CSS and JavaScript |
//! | `folder_formats` | what a folder's URL asks for: JSON, the page, `?tar`/`?zip`, an HTML index (`?html`, wget, rclone) |
//! | `list_pages` | one page of a store directory, off the async workers for a local scan (archives, the HTML index) |
//! | `auth` | bearer tokens, compared in constant time |
//! | `current_auth` | the token requirements in force, replaced whole by a reload |
//! | `cors` | `--cors-origin`: preflights, and the CORS fields of every answer |
//! | `origin_guard` | writes from browser pages of other origins refused (`Origin`, `Sec-Fetch-Site`) |
//! | `host_check` | DNS rebinding: the `Host` names a loopback listener (or `--allowed-host`) serves |
//! | `target` | `/files/...` URL paths: percent-decoding into `StorePath`s |
//! | `reply` | JSON bodies and `StoreError` → status |
//! | `buffers` | the pool of upload buffers |
//! | `hasher` | the hashing threads: an upload's SHA-256 beside its connection's task |
//! | `mime` | a served file's `Content-Type`: the client's, kept with the file, else by extension |
//! | `reload` | SIGHUP: the TLS certificate and key, and the token file, read again |
//! | `observe` | the handler's entry: around routing, the access log line and the metrics |
//! | `access_log` | access log lines (text or JSON), written whole per request |
//! | `metrics` | Prometheus counters and histograms, and their exposition text |
//! | `open_uploads` | the count of open resumable uploads for `/metrics`, cached, off the runtime |
//! | `notify` | systemd readiness: `READY=1`, `STOPPING=1` to `NOTIFY_SOCKET` |
//! | `hooks` | `--hook-command`: a program run after each commit and delete, off the request's path |
//! | `webhooks` | `--hook-url`: the same events POSTed, retried with backoff, off the request's path |
//! | `hook_process` | a hook run in a process group of its own, killed whole at its timeout |
//! | `pre_upload` | `--pre-upload-hook`: a program that may refuse an upload before its body is read |
//! | `stored` | what a request stored, noted at each commit for the log and metrics |

mod access_log;
mod auth;
mod base64;
mod body;
mod buffers;
mod config;
mod cors;
mod current_auth;
mod folder_formats;
mod hasher;
mod hook_process;
mod hooks;
mod host_check;
mod list_pages;
mod metrics;
mod mime;
mod multipart;
mod notify;
mod observe;
mod open_uploads;
mod origin_guard;
mod pre_upload;
mod preconditions;
#[cfg(unix)]
mod reload;
mod reply;
mod router;
mod routes;
mod s3_config;
mod service;
mod stored;
mod sweep;
mod target;
mod webhooks;

pub use access_log::{AccessLog, LogFormat};
pub use auth::{Auth, Credential};
pub use config::{Connections, ServeConfig};
pub use cors::Cors;
pub use hooks::Hooks;
pub use host_check::HostCheck;
pub use metrics::Metrics;
pub use observe::MetricsOnly;
pub use pre_upload::PreUpload;
pub(crate) use reply::hex;
pub use routes::s3::{S3Api, S3ApiConfig};
pub use service::ResumableOptions;
pub use service::{Service, ServiceOptions};
pub(crate) use target::percent_decode;
pub use webhooks::{WebhookOptions, Webhooks};

use crate::cli::{Runtime, ServeArgs};
use std::fmt;
use std::io::Write;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use weir_store::{LocalOptions, LocalStore};

/// A start-up or serving failure, printed as one line.
#[derive(Debug)]
pub struct ServeError(String);

impl fmt::Display for ServeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ServeError {}

/// Runs `weir serve` until SIGINT or SIGTERM.
pub fn run(args: ServeArgs) -> Result<(), ServeError> {
    let config = ServeConfig::from_args(args)?;
    // Certificate problems are reported before anything else starts.
    let (tls, reloader) = match &config.tls {
        Some((cert, key)) => {
            let (tls, reloader) = weir::TlsConfig::from_pem_files_reloadable(cert, key)
                .map_err(|e| ServeError(e.to_string()))?;
            (Some(tls), Some(reloader))
        }
        None => (None, None),
    };
    let access_log = open_access_log(&config)?;
    let service = Arc::new(build_service(&config, access_log)?);
    raise_open_files_limit(config.weir_config().max_connections);
    report_recovery(&service.store);
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
    let (server, stop) = runtime.block_on(async {
        let mut weir_config = config.weir_config();
        // Requests the library answers itself (a malformed or slow head) are logged and
        // counted as the others are.
        let observer = Arc::clone(&service);
        weir_config.on_refused = Some(weir::OnRefused::new(move |r| observer.on_refused(r)));
        let mut server = weir::Server::new(weir_config);
        let bound = bind_listeners(&mut server, &config, tls.as_ref()).await?;
        // Before any request is served: the runtime has not started the server yet.
        if bound.iter().any(|(_, a)| a.ip().is_loopback()) {
            service.hosts.set_loopback_listener();
        }
        let auth = service.auth();
        let public = bound.iter().find(|(_, a)| !a.ip().is_loopback());
        if let Some((_, addr)) = public.filter(|_| !auth.any() && !config.allow_anonymous_write) {
            return Err(ServeError(format!(
                "refusing to let anyone write and delete on {addr}, which is not a loopback \
                 address: set WEIR_TOKEN or --token-file, or pass --allow-anonymous-write"
            )));
        }
        if let Some(path) = &config.unix {
            server
                .listen_unix(path)
                .map_err(|e| ServeError(format!("cannot listen on {}: {e}", path.display())))?;
        }
        service.metrics().set_server(server.handle());
        let s3_api = start_side_tasks(&config, &service, tls.as_ref(), reloader).await?;
        announce(&bound, &config, &service.store);
        if let Some((scheme, at)) = s3_api {
            // After the serving lines: scripts read the first line's address.
            let mut out = std::io::stdout().lock();
            let _ = writeln!(out, "weir: S3 API on {scheme}://{at}");
            let _ = out.flush();
        }
        // Before `READY=1`: a SIGTERM right after readiness must find its handler installed.
        let stop = shutdown_signal();
        notify::notify("READY=1");
        Ok::<_, ServeError>((server, stop))
    })?;
    let served = serve_until_stopped(&config, &runtime, server, &service, stop);
    service.flush_log();
    served.map_err(|e| ServeError(format!("server failed: {e}")))
}

/// The access log `config` asks for: stderr, a file (opened now, so a mistake stops the
/// start), or none.
fn open_access_log(config: &ServeConfig) -> Result<Option<AccessLog>, ServeError> {
    Ok(match &config.access_log {
        None => None,
        Some((None, format)) => Some(AccessLog::stderr(*format)),
        Some((Some(path), format)) => Some(AccessLog::file(*format, path).map_err(|e| {
            ServeError(format!(
                "cannot open the access log {}: {e}",
                path.display()
            ))
        })?),
    })
}

/// What runs beside the listeners, on the runtime being started: `--metrics-listen`'s
/// listener, and SIGHUP's reloads (the certificate, `--token-file`).
async fn start_side_tasks(
    config: &ServeConfig,
    service: &Arc<Service>,
    tls: Option<&weir::TlsConfig>,
    reloader: Option<weir::CertReloader>,
) -> Result<Option<(&'static str, SocketAddr)>, ServeError> {
    let s3_api = match &config.s3_api {
        Some(s3) => Some(start_s3_api(config, s3, service, tls).await?),
        None => None,
    };
    if let Some(addr) = &config.metrics_listen {
        let metrics = weir::Server::bind(addr.as_str(), weir::Config::default())
            .await
            .map_err(|e| cannot_listen(addr, &e))?;
        if metrics.local_addr().is_some_and(|a| a.ip().is_loopback()) {
            service.hosts.set_loopback_listener();
        }
        let handler = MetricsOnly(Arc::clone(service));
        tokio::spawn(async move {
            if let Err(e) = metrics.serve(handler).await {
                tracing::error!(error = %e, "the metrics listener failed");
            }
        });
    }
    #[cfg(unix)]
    let tokens = config.token_file.clone().map(|path| reload::TokenReload {
        path,
        service: Arc::clone(service),
    });
    #[cfg(unix)]
    tokio::spawn(reload::on_sighup(reloader, tokens));
    #[cfg(not(unix))]
    drop(reloader);
    Ok(s3_api)
}

/// `--s3-api`'s listener (`routes/s3/`): HTTPS with the server's certificate when one is
/// given, on the runtime being started, until the process ends.
async fn start_s3_api(
    config: &ServeConfig,
    s3: &S3ApiConfig,
    service: &Arc<Service>,
    tls: Option<&weir::TlsConfig>,
) -> Result<(&'static str, SocketAddr), ServeError> {
    let mut weir_config = config.weir_config();
    // S3 ignores an `Expect` other than 100-continue, and clients written against it send them
    // (s3-tests' `Expect: 200`): this listener answers as S3 does.
    weir_config.limits.refuse_unknown_expectations = false;
    let mut server = weir::Server::new(weir_config);
    let (scheme, bound) = match tls {
        Some(tls) => (
            "https",
            server.listen_tls(s3.listen.as_str(), tls.clone()).await,
        ),
        None => ("http", server.listen_tcp(s3.listen.as_str()).await),
    };
    let at = bound.map_err(|e| cannot_listen(&s3.listen, &e))?;
    let auth = service.auth();
    if !at.ip().is_loopback() && !auth.any() && !config.allow_anonymous_write {
        return Err(ServeError(format!(
            "refusing to let anyone write and delete through the S3 API on {at}, which is not \
             a loopback address: set --token-file, or pass --allow-anonymous-write"
        )));
    }
    let handler = S3Api::new(Arc::clone(service), s3);
    tokio::spawn(async move {
        if let Err(e) = server.serve(handler).await {
            tracing::error!(error = %e, "the S3 API listener failed");
        }
    });
    Ok((scheme, at))
}

/// The service `config` describes, with its stores, hooks and checks: the local store opened
/// (its root's lock taken, interrupted commits finished), and with `--store s3://` the bucket
/// and its sweep thread.
fn build_service(
    config: &ServeConfig,
    access_log: Option<AccessLog>,
) -> Result<Service, ServeError> {
    let store = LocalStore::open(
        &config.root,
        LocalOptions {
            max_storage: config.max_storage,
            ..LocalOptions::default()
        },
    )
    .map_err(|e| ServeError(e.to_string()))?;
    init_logging();
    if config.token_read {
        tracing::warn!(
            "--token-read (WEIR_TOKEN_READ, token-read) is deprecated: reads need a token \
             whenever one is configured; --public-read opens them"
        );
    }
    let mut service = Service::new(store, config.service_options());
    #[cfg(feature = "s3")]
    let remote = config.s3.is_some();
    #[cfg(not(feature = "s3"))]
    let remote = false;
    // With an S3 store, resumable uploads keep their state in the bucket instead
    // (`resumable.rs` over `S3Resumables`): nothing local.
    if !remote {
        service = service
            .with_resumable(config.resumable)
            .map_err(|e| ServeError(format!("resumable uploads: {e}")))?;
    }
    #[cfg(feature = "s3")]
    if let Some((s3, url)) = &config.s3 {
        let store = open_s3(s3, url, config.max_storage)?;
        sweep::start_s3(s3.clone(), config.s3_sweep_after, store.clone())
            .map_err(|e| ServeError(format!("cannot start the multipart sweep: {e}")))?;
        service =
            service
                .with_remote(store)
                .with_remote_resumable(weir_store::S3ResumableOptions {
                    expiry: config.resumable.expiry,
                    lease: config.s3_upload_lease,
                });
    }
    let hosts = HostCheck::new(&config.allowed_hosts).map_err(ServeError)?;
    let mut service = service
        .with_metrics_route(config.metrics_listen.is_none())
        .with_cors(config.cors.clone())
        .with_host_check(hosts)
        .with_zip_max_entries(config.zip_max_entries);
    if config.allow_cross_site_writes {
        service = service.allow_cross_site_writes();
    }
    if let Some(log) = access_log {
        service = service.with_access_log(log);
    }
    if let Some((program, timeout)) = &config.hook {
        let hooks = Hooks::start(program.clone(), *timeout)
            .map_err(|e| ServeError(format!("cannot start the hook threads: {e}")))?;
        service = service.with_hooks(hooks);
    }
    if let Some(options) = &config.webhook {
        let webhooks = Webhooks::start(options.clone())
            .map_err(|e| ServeError(format!("cannot start the webhook threads: {e}")))?;
        service = service.with_webhooks(webhooks);
    }
    if let Some((program, timeout)) = &config.pre_upload {
        service = service.with_pre_upload(PreUpload::new(program.clone(), *timeout));
    }
    Ok(service)
}

/// Logs what opening the local store did about an earlier crash.
fn report_recovery(store: &LocalStore) {
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
}

/// Binds every listener `config` names (or the ones systemd passed, which take the place of
/// `--listen`'s): `--listen` is HTTPS when a certificate is given and no `--listen-tls`. The
/// scheme and address of each.
async fn bind_listeners(
    server: &mut weir::Server,
    config: &ServeConfig,
    tls: Option<&weir::TlsConfig>,
) -> Result<Vec<(&'static str, SocketAddr)>, ServeError> {
    // --listen is HTTPS when a certificate is given and no --listen-tls.
    let (plain, secure): (&[String], &[String]) = match tls {
        Some(_) if config.listen_tls.is_empty() => (&[], &config.listen),
        _ => (&config.listen, &config.listen_tls),
    };
    let mut bound = Vec::new();
    // Socket activation: the sockets systemd passed take the place of --listen's.
    let inherited = inherited_listeners()?;
    let activated = !inherited.is_empty();
    let plain = if activated { &[] } else { plain };
    for listener in inherited {
        let Some(at) = listener.local_addr() else {
            continue;
        };
        match (tls, config.listen_tls.is_empty()) {
            (Some(tls), true) => {
                server.add_tls_listener(listener, tls.clone());
                bound.push(("https", at));
            }
            _ => {
                server.add_listener(listener);
                bound.push(("http", at));
            }
        }
    }
    let secure = if activated {
        &config.listen_tls
    } else {
        secure
    };
    for addr in plain {
        let at = server.listen_tcp(addr.as_str()).await;
        bound.push(("http", at.map_err(|e| cannot_listen(addr, &e))?));
    }
    for addr in secure {
        // `from_args` made --listen-tls require a certificate (clap: `requires`).
        let Some(tls) = tls.cloned() else { break };
        let at = server.listen_tls(addr.as_str(), tls).await;
        bound.push(("https", at.map_err(|e| cannot_listen(addr, &e))?));
    }
    Ok(bound)
}

/// Serves until `stop` (SIGINT or SIGTERM): on `runtime`, or on one runtime per core
/// (`--runtime per-core`) while `runtime` waits for the signal.
fn serve_until_stopped(
    config: &ServeConfig,
    runtime: &tokio::runtime::Runtime,
    server: weir::Server,
    service: &Arc<Service>,
    stop: impl std::future::Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    match config.runtime {
        Runtime::MultiThread => runtime.block_on(server.serve_until(Arc::clone(service), stop)),
        Runtime::PerCore => {
            let handle = server.handle();
            let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
            let (done, mut finished) = tokio::sync::oneshot::channel();
            let handler = Arc::clone(service);
            std::thread::spawn(move || {
                let _ = done.send(server.serve_per_core(handler, threads));
            });
            runtime.block_on(async {
                let outcome = tokio::select! {
                    outcome = &mut finished => outcome,
                    () = stop => {
                        handle.shutdown();
                        finished.await
                    }
                };
                outcome.unwrap_or_else(|_| Err(std::io::Error::other("server thread panicked")))
            })
        }
    }
}

/// The listening sockets systemd passed (`LISTEN_FDS`), if any.
#[cfg(target_os = "linux")]
fn inherited_listeners() -> Result<Vec<weir::transport::Listener>, ServeError> {
    weir::transport::systemd_listeners()
        .map_err(|e| ServeError(format!("socket activation (LISTEN_FDS): {e}")))
}

#[cfg(not(target_os = "linux"))]
fn inherited_listeners() -> Result<Vec<weir::transport::Listener>, ServeError> {
    Ok(Vec::new())
}

fn cannot_listen(addr: &str, e: &std::io::Error) -> ServeError {
    ServeError(format!("cannot listen on {addr}: {e}"))
}

/// The S3 store of `--store`, checked before anything listens: the bucket is reached with
/// these credentials (`HeadBucket`, on a runtime of its own, whose connections end with it).
#[cfg(feature = "s3")]
/// The bucket's store, checked, with `--max-storage` as its quota and its usage listed (the
/// sum of the objects under the prefix: `sweep::start_s3` lists it again periodically).
fn open_s3(
    config: &weir_store::S3Config,
    url: &str,
    max_storage: Option<u64>,
) -> Result<weir_store::S3Store, ServeError> {
    let fail = |e: weir_store::StoreError| ServeError(format!("--store {url}: {e}"));
    let probe = weir_store::S3Store::new(config.clone()).map_err(fail)?;
    let listed = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| ServeError(format!("runtime: {e}")))?
        .block_on(async {
            probe.check().await?;
            probe.list_usage().await
        })
        .map_err(fail)?;
    let store = weir_store::S3Store::new(config.clone())
        .map_err(fail)?
        .with_max_storage(max_storage);
    store.set_listed_usage(listed);
    Ok(store)
}

/// Says where the service listens, on stdout (one line per listener, flushed).
fn announce(bound: &[(&str, SocketAddr)], config: &ServeConfig, store: &LocalStore) {
    let mut out = std::io::stdout().lock();
    #[cfg(feature = "s3")]
    let stored_in = match &config.s3 {
        Some((_, url)) => url.clone(),
        None => store.root().display().to_string(),
    };
    #[cfg(not(feature = "s3"))]
    let stored_in = store.root().display().to_string();
    for (scheme, addr) in bound {
        let _ = writeln!(out, "weir: serving {stored_in} on {scheme}://{addr}");
    }
    if let Some(path) = &config.unix {
        let _ = writeln!(out, "weir: serving on unix:{}", path.display());
    }
    // Who may read is the first thing an operator exposing the store must know (issue 35):
    // said at every start, after the serving lines (scripts read the first line's address).
    let _ = writeln!(out, "weir: {}", access_summary(config));
    let _ = out.flush();
}

/// One line saying who may read and write, for the start.
fn access_summary(config: &ServeConfig) -> &'static str {
    let tokens = config.token.is_some() || !config.credentials.is_empty();
    match (tokens, config.public_read) {
        (false, _) => "no token configured: anyone who reaches a listener may read and write",
        (true, false) => {
            "reads are private: they need a token with the read scope (--public-read opens them)"
        }
        (true, true) => "reads are public (--public-read); writes and deletes need a token",
    }
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

/// The service's messages to stderr through `tracing`; colours only when stderr is a terminal
/// (a file or journald got the escape codes as text: issue 35).
fn init_logging() {
    use std::io::IsTerminal;
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .try_init();
}

/// Completes on SIGINT (Ctrl-C) or SIGTERM (service managers, `kill`). The handlers are
/// installed when this is called (inside the runtime), not when the returned future first
/// runs: it is called before `READY=1`, and a SIGTERM that a service manager sends right after
/// readiness must be a graceful stop, not the signal's default action (the process killed
/// without `STOPPING=1`: `readiness_and_stopping_are_notified` caught it once in CI).
fn shutdown_signal() -> impl std::future::Future<Output = ()> + Send + 'static {
    #[cfg(unix)]
    let (term, interrupt) = {
        use tokio::signal::unix::{SignalKind, signal};
        (
            signal(SignalKind::terminate()),
            signal(SignalKind::interrupt()),
        )
    };
    async move {
        #[cfg(unix)]
        {
            /// One signal's arrival; never, if it could not be watched (logged).
            async fn arrival(signal: std::io::Result<tokio::signal::unix::Signal>, name: &str) {
                match signal {
                    Ok(mut signal) => {
                        signal.recv().await;
                    }
                    Err(e) => {
                        tracing::error!(error = %e, "cannot watch {name}: it will not stop the server");
                        std::future::pending::<()>().await;
                    }
                }
            }
            tokio::select! {
                () = arrival(term, "SIGTERM") => {}
                () = arrival(interrupt, "SIGINT") => {}
            }
        }
        #[cfg(not(unix))]
        {
            let _ = tokio::signal::ctrl_c().await;
        }
        tracing::info!("shutting down");
        notify::notify("STOPPING=1");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::{Cli, Command};
    use clap::Parser;
    use std::time::Duration;

    fn config(args: &[&str]) -> weir::Config {
        let cli = Cli::try_parse_from(["weir", "serve"].iter().chain(args)).unwrap();
        let Command::Serve(args) = cli.command else {
            unreachable!()
        };
        ServeConfig::from_args(*args).unwrap().weir_config()
    }

    #[test]
    fn connection_flags_reach_the_library() {
        let c = config(&[
            "--head-timeout",
            "7s",
            "--idle-timeout",
            "2m",
            "--min-body-rate",
            "1KiB",
            "--min-response-rate",
            "0",
            "--max-connections",
            "12",
            "--shutdown-grace",
            "3s",
        ]);
        assert_eq!(c.head_timeout, Duration::from_secs(7));
        assert_eq!(c.keep_alive_timeout, Duration::from_secs(120));
        let body = c.min_body_rate.unwrap();
        assert_eq!(body.bytes_per_second, 1024);
        assert_eq!(
            body.grace,
            weir::Config::default().min_body_rate.unwrap().grace
        );
        assert_eq!(c.min_response_rate, None);
        assert_eq!(c.max_connections, 12);
        assert_eq!(c.shutdown_grace, Duration::from_secs(3));
        // The defaults are the library's.
        let (c, d) = (config(&[]), weir::Config::default());
        assert_eq!(
            (
                c.head_timeout,
                c.keep_alive_timeout,
                c.max_connections,
                c.shutdown_grace
            ),
            (
                d.head_timeout,
                d.keep_alive_timeout,
                d.max_connections,
                d.shutdown_grace
            )
        );
        assert_eq!(
            (c.min_body_rate, c.min_response_rate),
            (d.min_body_rate, d.min_response_rate)
        );
    }
}
