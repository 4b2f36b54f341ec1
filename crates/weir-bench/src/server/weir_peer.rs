//! The weir peer: weir's HTTP/1.1 server with the same routes and sinks as the other systems.
//!
//! A multi-threaded tokio runtime with `threads` workers (as `weir serve` runs it, and as the
//! hyper peer runs), or with `--per-core` `Server::serve_per_core` (one current-thread runtime
//! per thread behind `SO_REUSEPORT` listeners, or all waiting on one Unix socket); `Config::pause_threshold` from the command line;
//! no body size limit (the uploads are hundreds of MiB; the library default is 30 MiB); the
//! `Server` header from the config, the same value every system sends. weir adds `Date` itself.
//!
//! Protocols: with `--tls-cert`/`--tls-key` the listener is `Server::listen_tls` (ALPN `h2`,
//! `http/1.1`); otherwise a plain listener, on which weir serves HTTP/1.1 and, by prior
//! knowledge, h2c. Everything else is weir's defaults, HTTP/2 windows included
//! ([`super::h2_settings`]).
//!
//! Sinks, as the other systems:
//! - discard: `read_body` into a [`DISCARD_BUF`] buffer, which weir fills straight from the
//!   socket when nothing is buffered; over HTTP/2, `read_body_chunk`, each DATA frame dropped as
//!   it comes, as hyper's discard sink drops them (into a buffer would be a copy of every frame
//!   that hyper's sink does not make);
//! - file: `read_body` into a [`FILE_WRITE`] buffer, each read written with plain `std::fs` on
//!   the connection's task;
//! - chunks: `read_body_chunk` (pieces of at most the pause threshold, sharing weir's buffer),
//!   dropped: the sink on which the pause threshold matters;
//! - splice: `Exchange::body_to_file`, weir's zero-copy socket → pipe → file path. It reports
//!   only the total, so the trace's first-byte instant is the end of the body for this sink.
//!
//! "weir + axum" ([`System::WeirAxum`]): the same server and configuration serve the bench's
//! axum `Router` ([`super::axum_app`]) through `weir::ServiceHandler`, the way an axum user moves
//! to weir, instead of the native handler.

use crate::server::plaintext::{BODY, CONTENT_TYPE, SERVER};
use crate::server::sink::{DISCARD_BUF, FILE_WRITE, create_upload_file};
use crate::server::trace::{BodyPath, UploadTrace};
use crate::server::{Endpoint, ServeArgs, Sink, StartError, System, axum_app};
use http::{Method, StatusCode};
use std::io::Write;
use std::path::PathBuf;

/// Binds, then serves on a background thread.
pub fn start(args: &ServeArgs) -> Result<Endpoint, StartError> {
    if args.system == System::WeirAxum && args.sink == Sink::Chunks {
        return Err(StartError::Unavailable(
            "weir's chunks are its native handler's sink; use the discard sink".into(),
        ));
    }
    let mut config = weir::Config::default();
    if let Some(t) = args.pause_threshold {
        config.pause_threshold = t;
    }
    config.max_body_size = None;
    config.server_header = Some(SERVER.to_string());
    config.reuse_port = args.per_core;
    let tls = match (&args.tls_cert, &args.tls_key) {
        (Some(cert), Some(key)) => Some(
            weir::TlsConfig::from_pem_files(cert, key)
                .map_err(|e| StartError::Failed(e.to_string()))?,
        ),
        _ => None,
    };
    let rt = if args.per_core {
        // Only binds; `serve_per_core` builds a runtime per thread.
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?
    } else {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(args.threads.max(1))
            .enable_all()
            .build()?
    };
    let (server, endpoint) = rt.block_on(async {
        let mut server = weir::Server::new(config);
        let endpoint = match (&args.unix, tls) {
            (Some(_), Some(_)) => {
                return Err(StartError::Unavailable("TLS rows are TCP only".into()));
            }
            (Some(path), None) => {
                let _ = std::fs::remove_file(path);
                server.listen_unix(path)?;
                Endpoint::Unix(path.clone())
            }
            (None, Some(tls)) => Endpoint::Tcp(server.listen_tls("127.0.0.1:0", tls).await?),
            (None, None) => Endpoint::Tcp(server.listen_tcp("127.0.0.1:0").await?),
        };
        Ok::<_, StartError>((server, endpoint))
    })?;
    let threads = args.threads.max(1);
    let per_core = args.per_core;
    if args.system == System::WeirAxum {
        let app = axum_app::router(args.sink, args.data_dir.clone());
        serve_in_background(
            rt,
            server,
            weir::ServiceHandler::new(app),
            per_core,
            threads,
        );
    } else {
        let handler = Bench {
            sink: args.sink,
            dir: args.data_dir.clone(),
            discard_bufs: std::sync::Mutex::new(Vec::new()),
        };
        serve_in_background(rt, server, handler, per_core, threads);
    }
    Ok(endpoint)
}

/// Serves `handler` on a thread of its own, on `rt` or per core.
fn serve_in_background<H: weir::Handler>(
    rt: tokio::runtime::Runtime,
    server: weir::Server,
    handler: H,
    per_core: bool,
    threads: usize,
) {
    std::thread::spawn(move || {
        let served = if per_core {
            // The binding runtime stays alive until the listeners are detached from it.
            let _rt = rt;
            server.serve_per_core(handler, threads)
        } else {
            rt.block_on(server.serve(handler))
        };
        if let Err(e) = served {
            eprintln!("weir peer: {e}");
        }
    });
}

struct Bench {
    sink: Sink,
    dir: PathBuf,
    /// Idle discard buffers, reused from upload to upload.
    discard_bufs: std::sync::Mutex<Vec<Vec<u8>>>,
}

enum Route {
    Plaintext,
    Post,
    Upload,
    NotFound,
}

impl weir::Handler for Bench {
    async fn handle(&self, ex: &mut weir::Exchange<'_>) -> Result<(), weir::Error> {
        let route = {
            let req = ex.request();
            match (req.method(), req.path()) {
                (&Method::GET, "/plaintext") => Route::Plaintext,
                (&Method::POST, "/post") => Route::Post,
                // PUT too: `weir put` uploads with it (the `weir put` row).
                (&Method::POST | &Method::PUT, "/upload") => Route::Upload,
                _ => Route::NotFound,
            }
        };
        match route {
            Route::Plaintext => hello(ex).await,
            Route::Post => {
                // Small bodies arrive with the head; a stack buffer takes them without a heap
                // allocation.
                let mut buf = [0u8; 4096];
                while ex.read_body(&mut buf).await? > 0 {}
                hello(ex).await
            }
            Route::Upload => {
                let trace = self.upload(ex).await?;
                ex.respond(StatusCode::OK)
                    .header("content-type", "text/plain")
                    .body(trace.encode())
                    .await
            }
            Route::NotFound => ex.respond(StatusCode::NOT_FOUND).empty().await,
        }
    }
}

async fn hello(ex: &mut weir::Exchange<'_>) -> Result<(), weir::Error> {
    ex.respond(StatusCode::OK)
        .header("content-type", CONTENT_TYPE)
        .body(BODY)
        .await
}

impl Bench {
    async fn upload(&self, ex: &mut weir::Exchange<'_>) -> Result<UploadTrace, weir::Error> {
        let mut trace = UploadTrace::start();
        match self.sink {
            Sink::Discard if ex.request().version() == http::Version::HTTP_2 => {
                while let Some(frame) = ex.read_body_chunk().await? {
                    trace.received(frame.len());
                }
            }
            Sink::Discard => {
                // A pooled buffer: zeroing a fresh 1 MiB per upload would be counted against
                // weir in the `scale` scenario's many small uploads (hyper's peer has no buffer).
                let mut buf = self.discard_bufs.lock().ok().and_then(|mut b| b.pop());
                let buf = buf.get_or_insert_with(|| vec![0u8; DISCARD_BUF]);
                let read = loop {
                    match ex.read_body(buf).await {
                        Ok(0) => break Ok(()),
                        Ok(n) => trace.received(n),
                        Err(e) => break Err(e),
                    }
                };
                if let Ok(mut bufs) = self.discard_bufs.lock() {
                    bufs.push(std::mem::take(buf));
                }
                read?;
            }
            Sink::File => {
                let mut file = create_upload_file(&self.dir)?;
                let mut buf = vec![0u8; FILE_WRITE];
                loop {
                    let n = ex.read_body(&mut buf).await?;
                    if n == 0 {
                        break;
                    }
                    trace.received(n);
                    // Blocking write on the connection's task, on purpose (see `sink`).
                    file.write_all(&buf[..n])?;
                }
            }
            Sink::Chunks => {
                while let Some(chunk) = ex.read_body_chunk().await? {
                    trace.received(chunk.len());
                }
            }
            Sink::Splice => {
                let mut file = create_upload_file(&self.dir)?;
                let n = ex.body_to_file(&mut file).await?;
                trace.received(n as usize);
            }
        }
        trace.finish();
        let b = ex.body_stats();
        trace.path = Some(BodyPath {
            direct: b.direct,
            copied: b.copied,
            spliced: b.spliced,
            peak_ahead: b.peak_buffered as u64,
        });
        Ok(trace)
    }
}
