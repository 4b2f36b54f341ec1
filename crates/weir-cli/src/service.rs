//! The service behind `weir serve`: `GET /healthz`, and `PUT /files/{name}` streaming the body
//! into `--root` (temporary file, fsync, rename: a failed upload never leaves a partial file).

use crate::cli::ServeArgs;
use http::{Method, StatusCode};
use std::fs::{self, File};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use weir::{Config, Exchange, Handler, http};

/// Runs the service until Ctrl-C.
pub fn run(args: ServeArgs) -> io::Result<()> {
    // Certificate problems are reported before anything else starts.
    let tls = match (&args.tls_cert, &args.tls_key) {
        (Some(cert), Some(key)) => Some(weir::TlsConfig::from_pem_files(cert, key)?),
        _ => None,
    };
    fs::create_dir_all(&args.root)
        .map_err(|e| io::Error::new(e.kind(), format!("root {}: {e}", args.root.display())))?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async {
        let config = Config {
            pause_threshold: usize::try_from(args.pause_threshold).unwrap_or(usize::MAX),
            ..Config::default()
        };
        let mut server = weir::Server::new(config);
        let listening = match tls {
            Some(tls) => server.listen_tls(args.listen, tls).await,
            None => server.listen_tcp(args.listen).await,
        };
        let addr = listening
            .map_err(|e| io::Error::new(e.kind(), format!("listen on {}: {e}", args.listen)))?;
        if let Some(path) = &args.unix {
            server.listen_unix(path).map_err(|e| {
                io::Error::new(e.kind(), format!("listen on {}: {e}", path.display()))
            })?;
        }
        tracing::info!(%addr, tls = args.tls_cert.is_some(), unix = ?args.unix, root = %args.root.display(), "weir serving");
        let service = Service {
            root: args.root,
            max_upload: args.max_upload,
            next_temp: AtomicU64::new(0),
        };
        server
            .serve_until(service, async {
                let _ = tokio::signal::ctrl_c().await;
            })
            .await
    })
}

struct Service {
    root: PathBuf,
    max_upload: u64,
    next_temp: AtomicU64,
}

impl Handler for Service {
    async fn handle(&self, ex: &mut Exchange<'_>) -> Result<(), weir::Error> {
        let method = ex.request().method().clone();
        let path = ex.request().path();
        if path == "/healthz" {
            return match method {
                Method::GET | Method::HEAD => ex.respond(StatusCode::OK).body("ok\n").await,
                _ => {
                    ex.respond(StatusCode::METHOD_NOT_ALLOWED)
                        .header("allow", "GET, HEAD")
                        .empty()
                        .await
                }
            };
        }
        let Some(name) = path.strip_prefix("/files/") else {
            return ex.respond(StatusCode::NOT_FOUND).body("not found\n").await;
        };
        if method != Method::PUT {
            return ex
                .respond(StatusCode::METHOD_NOT_ALLOWED)
                .header("allow", "PUT")
                .empty()
                .await;
        }
        let Some(name) = valid_name(name) else {
            return ex
                .respond(StatusCode::BAD_REQUEST)
                .body("invalid file name\n")
                .await;
        };
        let target = self.root.join(name);
        let temp = self.root.join(format!(
            ".weir-upload-{}-{}.tmp",
            std::process::id(),
            self.next_temp.fetch_add(1, Ordering::Relaxed)
        ));
        ex.set_max_body_size(Some(self.max_upload));
        match store(ex, &temp, &target).await {
            Ok(size) => {
                ex.respond(StatusCode::CREATED)
                    .body(format!("{{\"size\":{size}}}\n"))
                    .await
            }
            Err(e) => {
                let _ = fs::remove_file(&temp);
                if e.is_too_large() {
                    ex.respond(StatusCode::PAYLOAD_TOO_LARGE)
                        .body("upload too large\n")
                        .await
                } else {
                    Err(e)
                }
            }
        }
    }
}

/// Streams the body into `temp`, makes it durable, and renames it over `target`.
async fn store(ex: &mut Exchange<'_>, temp: &Path, target: &Path) -> Result<u64, weir::Error> {
    let mut file = File::create(temp)?;
    let size = ex.body_to_file(&mut file).await?;
    file.sync_all()?;
    fs::rename(temp, target)?;
    if let Some(dir) = target.parent() {
        File::open(dir)?.sync_all()?;
    }
    Ok(size)
}

/// A single path segment: no separators, no `.`/`..`, no control characters, not hidden.
fn valid_name(name: &str) -> Option<&str> {
    let ok = !name.is_empty()
        && !name.starts_with('.')
        && !name.contains(['/', '\\', '%'])
        && !name.chars().any(char::is_control);
    ok.then_some(name)
}
