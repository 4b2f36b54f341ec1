//! The hyper peer: hyper 1.x's HTTP/1.1 and HTTP/2 servers, configured as their users would for
//! speed.
//!
//! A multi-threaded tokio runtime with `threads` workers (or, with `--per-core`, one
//! current-thread runtime per thread behind `SO_REUSEPORT` listeners); one task per connection
//! running `http1::Builder::serve_connection`. `pipeline_flush` is a command-line switch because
//! hyper flushes after every pipelined response unless it is set, and the comparison is reported
//! both ways. hyper adds the `Date` header itself (cached per second).
//!
//! Protocols: with `--tls-cert`/`--tls-key`, each connection's TLS handshake runs on its task
//! (tokio-rustls, ring, weir's cipher-suite order: [`crate::tls::server_config`]) and ALPN
//! picks `http2::Builder` or `http1::Builder`; with `--h2c`, plain connections are HTTP/2 by
//! prior knowledge. `http2::Builder` gets weir's default windows and frame size
//! ([`H2Settings::weir_defaults`]) with hyper's adaptive window off, so that the HTTP/2 rows
//! compare the servers and not their flow-control settings.
//!
//! Upload sinks match the other systems: discard drops each frame hyper hands over; file writes
//! each frame with plain `std::fs` on the connection's task (a `tokio::fs` write is a hop to the
//! blocking pool per write, measured much slower). Frames are written as they come rather than
//! regrouped into 256 KiB, which would add a copy; hyper's frames are up to its read buffer size
//! (HTTP/1.1) or one DATA frame (HTTP/2). hyper has no splice path.
//!
//! "hyper + axum" ([`System::HyperAxum`]): the same runtime, accept loop and builders serve the
//! bench's axum `Router` ([`super::axum_app`]) through hyper-util's `TowerToHyperService`
//! instead of the hand-written service, as `axum::serve` wraps a router.

use crate::server::h2_settings::H2Settings;
use crate::server::plaintext::{BODY, CONTENT_TYPE, SERVER};
use crate::server::sink::create_upload_file;
use crate::server::trace::UploadTrace;
use crate::server::{Endpoint, ServeArgs, Sink, StartError, System, axum_app, listen};
use bytes::Bytes;
use http::{Method, Request, Response, StatusCode, header};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::server::conn::{http1, http2};
use hyper::service::{HttpService, service_fn};
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::service::TowerToHyperService;
use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;
use tokio::io::{AsyncRead, AsyncWrite};

/// Starts the runtime and the accept loop; returns once bound.
pub fn start(args: &ServeArgs) -> Result<Endpoint, StartError> {
    match args.sink {
        Sink::Splice => return Err(StartError::Unavailable("hyper has no splice path".into())),
        // hyper's discard sink already takes hyper's own frames.
        Sink::Chunks => return Err(StartError::Unavailable("use the discard sink".into())),
        Sink::Discard | Sink::File => {}
    }
    let app = (args.system == System::HyperAxum)
        .then(|| axum_app::router(args.sink, args.data_dir.clone()));
    let tls = match (&args.tls_cert, &args.tls_key) {
        (Some(cert), Some(key)) => Some(tokio_rustls::TlsAcceptor::from(
            crate::tls::server_config(cert, key).map_err(|e| StartError::Failed(e.to_string()))?,
        )),
        _ => None,
    };
    let cfg = Arc::new(Cfg {
        sink: args.sink,
        dir: args.data_dir.clone(),
        pipeline_flush: args.pipeline_flush,
        h2c: args.h2c,
        tls,
        h2: H2Settings::weir_defaults(),
        app,
    });
    if args.per_core {
        return start_per_core(args, cfg);
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(args.threads.max(1))
        .enable_all()
        .build()?;
    let (listener, endpoint) = listen::bind(args)?;
    let endpoint2 = endpoint.clone();
    std::thread::spawn(move || {
        rt.block_on(async move {
            if let Err(e) = accept_loop(listener, &endpoint2, cfg).await {
                eprintln!("hyper peer: {e}");
            }
        })
    });
    Ok(endpoint)
}

/// One current-thread runtime per thread, each with its own `SO_REUSEPORT` listener: how
/// hyper is run in TechEmpower's benchmarks.
fn start_per_core(args: &ServeArgs, cfg: Arc<Cfg>) -> Result<Endpoint, StartError> {
    if args.unix.is_some() {
        return Err(StartError::Unavailable(
            "per-core serving is TCP only".into(),
        ));
    }
    let (listeners, addr) = listen::bind_reuseport(args.threads)?;
    let endpoint = Endpoint::Tcp(addr);
    for (i, l) in listeners.into_iter().enumerate() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        let (cfg, endpoint) = (Arc::clone(&cfg), endpoint.clone());
        std::thread::Builder::new()
            .name(format!("hyper-core-{i}"))
            .spawn(move || {
                rt.block_on(async move {
                    if let Err(e) = accept_loop(l.into(), &endpoint, cfg).await {
                        eprintln!("hyper peer: {e}");
                    }
                })
            })?;
    }
    Ok(endpoint)
}

struct Cfg {
    sink: Sink,
    dir: PathBuf,
    pipeline_flush: bool,
    /// Plain connections speak HTTP/2 by prior knowledge.
    h2c: bool,
    /// TLS on every connection; ALPN picks the protocol.
    tls: Option<tokio_rustls::TlsAcceptor>,
    /// The HTTP/2 settings.
    h2: H2Settings,
    /// "hyper + axum": serve this router instead of the hand-written service.
    app: Option<axum::Router>,
}

async fn accept_loop(
    listener: std::os::fd::OwnedFd,
    endpoint: &Endpoint,
    cfg: Arc<Cfg>,
) -> std::io::Result<()> {
    match endpoint {
        Endpoint::Tcp(_) => {
            let std_l = std::net::TcpListener::from(listener);
            std_l.set_nonblocking(true)?;
            let l = tokio::net::TcpListener::from_std(std_l)?;
            loop {
                let (s, _) = l.accept().await?;
                s.set_nodelay(true)?;
                spawn_connection(s, Arc::clone(&cfg));
            }
        }
        Endpoint::Unix(_) => {
            let std_l = std::os::unix::net::UnixListener::from(listener);
            std_l.set_nonblocking(true)?;
            let l = tokio::net::UnixListener::from_std(std_l)?;
            loop {
                let (s, _) = l.accept().await?;
                spawn_connection(s, Arc::clone(&cfg));
            }
        }
    }
}

fn spawn_connection<S>(stream: S, cfg: Arc<Cfg>)
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    tokio::spawn(async move {
        match &cfg.tls {
            Some(acceptor) => {
                let Ok(tls) = acceptor.accept(stream).await else {
                    return;
                };
                let h2 = tls.get_ref().1.alpn_protocol() == Some(crate::tls::ALPN_H2);
                serve_connection(tls, h2, &cfg).await;
            }
            None => serve_connection(stream, cfg.h2c, &cfg).await,
        }
    });
}

/// Serves one connection with `http2::Builder` or `http1::Builder` until it closes: the
/// bench's axum app when there is one, the hand-written service otherwise.
async fn serve_connection<S>(stream: S, h2: bool, cfg: &Arc<Cfg>)
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    if let Some(app) = &cfg.app {
        // One clone per connection, as `axum::serve`; `TowerToHyperService` clones it again
        // per request (a reference count).
        return serve_with(stream, h2, cfg, TowerToHyperService::new(app.clone())).await;
    }
    let svc_cfg = Arc::clone(cfg);
    let svc = service_fn(move |req| {
        let cfg = Arc::clone(&svc_cfg);
        async move { Ok::<_, std::convert::Infallible>(handle(req, &cfg).await) }
    });
    serve_with(stream, h2, cfg, svc).await;
}

async fn serve_with<S, Svc>(stream: S, h2: bool, cfg: &Cfg, svc: Svc)
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
    Svc: HttpService<Incoming> + Send,
    Svc::Future: Send + 'static,
    Svc::ResBody: Send + 'static,
    <Svc::ResBody as hyper::body::Body>::Data: Send,
    <Svc::ResBody as hyper::body::Body>::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let io = TokioIo::new(stream);
    if h2 {
        let s = &cfg.h2;
        let _ = http2::Builder::new(TokioExecutor::new())
            .initial_stream_window_size(s.stream_window)
            .initial_connection_window_size(s.connection_window)
            .adaptive_window(false)
            .max_frame_size(s.max_frame_size)
            .max_concurrent_streams(s.max_concurrent_streams)
            .max_header_list_size(s.max_header_list_size)
            .serve_connection(io, svc)
            .await;
    } else {
        let _ = http1::Builder::new()
            .pipeline_flush(cfg.pipeline_flush)
            .serve_connection(io, svc)
            .await;
    }
}

async fn handle(req: Request<Incoming>, cfg: &Cfg) -> Response<Full<Bytes>> {
    match (req.method(), req.uri().path()) {
        (&Method::GET, "/plaintext") => hello(),
        (&Method::POST, "/post") => {
            let mut body = req.into_body();
            while let Some(Ok(_)) = body.frame().await {}
            hello()
        }
        (&Method::POST, "/upload") => match upload(req, cfg).await {
            Ok(trace) => Response::new(Full::new(Bytes::from(trace.encode()))),
            Err(e) => status(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()),
        },
        _ => status(StatusCode::NOT_FOUND, String::new()),
    }
}

fn hello() -> Response<Full<Bytes>> {
    let mut r = Response::new(Full::new(Bytes::from_static(BODY)));
    let h = r.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        header::HeaderValue::from_static(CONTENT_TYPE),
    );
    h.insert(header::SERVER, header::HeaderValue::from_static(SERVER));
    r
}

fn status(code: StatusCode, body: String) -> Response<Full<Bytes>> {
    let mut r = Response::new(Full::new(Bytes::from(body)));
    *r.status_mut() = code;
    r
}

async fn upload(req: Request<Incoming>, cfg: &Cfg) -> std::io::Result<UploadTrace> {
    let mut trace = UploadTrace::start();
    let mut file = match cfg.sink {
        Sink::File => Some(create_upload_file(&cfg.dir)?),
        _ => None,
    };
    let mut body = req.into_body();
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(std::io::Error::other)?;
        if let Ok(data) = frame.into_data() {
            trace.received(data.len());
            if let Some(f) = file.as_mut() {
                // Blocking write on the connection's task, on purpose: see the module docs.
                f.write_all(&data)?;
            }
        }
    }
    trace.finish();
    Ok(trace)
}
