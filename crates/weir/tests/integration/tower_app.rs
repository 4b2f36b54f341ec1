//! The axum app the tower-adapter tests serve with weir: routes, JSON extractors, a state,
//! tower-http trace, CORS, compression, body-limit and timeout layers, and routes that reach weir's direct paths
//! through `Extension<weir::ExchangeHandle>`.

use crate::h2_support::{HOLDING, MAX_HOLDING, hold_release};
use crate::support::hex;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::routing::{get, post, put};
use axum::{Extension, Json, Router};
use http_body_util::BodyExt;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;
use tower_http::compression::CompressionLayer;
use tower_http::cors::CorsLayer;
use tower_http::limit::RequestBodyLimitLayer;
use tower_http::timeout::TimeoutLayer;
use tower_http::trace::TraceLayer;
use weir::{ExchangeHandle, FileBody};

#[derive(Clone)]
pub struct AppState {
    /// Sums computed by `/sum`, read by `/hits`.
    hits: Arc<AtomicU64>,
    /// Where `/files/{name}` stores uploads.
    dir: PathBuf,
}

#[derive(Deserialize)]
struct Numbers {
    numbers: Vec<i64>,
}

#[derive(Serialize)]
struct Total {
    total: i64,
    count: usize,
}

/// The app, storing uploads in `dir`.
///
/// - `GET /`: a greeting; `POST /sum`: JSON in, JSON out, counted in the state; `GET /hits`;
/// - `GET /big`: 64 KiB of text (compressed for clients that accept gzip);
/// - `POST`/`PUT /sha`: the body's SHA-256, read as `http_body` frames (the generic path);
/// - `PUT /files/{name}`: the body to a file with `ExchangeHandle::to_file` (weir's splice
///   path), any size; `GET /files/{name}`: the file as a `FileBody` (weir's sendfile path);
/// - `POST /into`: the body read with `ExchangeHandle::read_into` into a 1 MiB buffer;
/// - `GET /early`: `103 Early Hints` before the answer;
/// - `PUT /hold?g=N`: waits for `hold_release(N)` without reading the body;
/// - `POST /frames[?pause=N]`: the largest body frame, with the request's pause threshold set
///   to N through the handle (after 50 ms, so that the socket has more than N waiting);
/// - `POST /limited`: a 1,000-byte limit set through the handle; `413` when the body is larger;
/// - `POST /small`: tower-http's request-body limit (1 KiB); `GET /slow`: tower-http's timeout
///   (100 ms, `408`).
pub fn app(dir: PathBuf) -> Router {
    let state = AppState {
        hits: Arc::new(AtomicU64::new(0)),
        dir,
    };
    Router::new()
        .route("/", get(|| async { "hello from axum\n" }))
        .route("/sum", post(sum))
        .route("/hits", get(hits))
        .route("/uri", get(uri))
        .route("/big", get(|| async { "weir ".repeat(64 * 1024 / 5) }))
        .route("/sha", post(sha).put(sha))
        .route("/files/{name}", put(upload).get(download))
        .route("/into", post(into))
        .route("/early", get(early))
        .route("/hold", put(hold))
        .route("/frames", post(frames))
        .route("/limited", post(limited))
        .route(
            "/small",
            post(|body: String| async move { format!("{}\n", body.len()) })
                .layer(RequestBodyLimitLayer::new(1024)),
        )
        .route(
            "/slow",
            get(|| async {
                tokio::time::sleep(Duration::from_secs(10)).await;
                "late\n"
            })
            .layer(TimeoutLayer::with_status_code(
                StatusCode::REQUEST_TIMEOUT,
                Duration::from_millis(100),
            )),
        )
        .with_state(state)
        .layer(CompressionLayer::new())
        .layer(CorsLayer::permissive())
        .layer(TraceLayer::new_for_http())
}

async fn sum(State(state): State<AppState>, Json(input): Json<Numbers>) -> Json<Total> {
    state.hits.fetch_add(1, Ordering::SeqCst);
    Json(Total {
        total: input.numbers.iter().sum(),
        count: input.numbers.len(),
    })
}

/// The request URI as the service sees it, and the client's address from the handle.
async fn uri(Extension(handle): Extension<ExchangeHandle>, uri: axum::http::Uri) -> String {
    let peer = match handle.peer_addr() {
        weir::transport::PeerAddr::Tcp(addr) => addr.ip().to_string(),
        weir::transport::PeerAddr::Unix => "unix".into(),
        _ => "other".into(),
    };
    format!("{uri} from {peer}\n")
}

async fn hits(State(state): State<AppState>) -> String {
    format!("{}\n", state.hits.load(Ordering::SeqCst))
}

async fn sha(Extension(handle): Extension<ExchangeHandle>, body: axum::body::Body) -> String {
    handle.set_max_body_size(None);
    let mut body = body;
    let mut hash = Sha256::new();
    let mut len = 0u64;
    while let Some(frame) = body.frame().await {
        match frame {
            Ok(frame) => {
                if let Ok(data) = frame.into_data() {
                    len += data.len() as u64;
                    hash.update(&data);
                }
            }
            Err(e) => return format!("error {e}\n"),
        }
    }
    format!("{} {len}\n", hex(&hash.finalize()))
}

async fn upload(
    State(state): State<AppState>,
    Path(name): Path<String>,
    Extension(handle): Extension<ExchangeHandle>,
) -> Result<String, (StatusCode, String)> {
    let fail = |e: weir::Error| (StatusCode::INTERNAL_SERVER_ERROR, e.to_string());
    handle.set_max_body_size(None);
    let mut file = std::fs::File::create(state.dir.join(&name)).map_err(|e| fail(e.into()))?;
    let n = handle.to_file(&mut file).await.map_err(fail)?;
    Ok(format!("{n}\n"))
}

async fn download(
    State(state): State<AppState>,
    Path(name): Path<String>,
) -> Result<(HeaderMap, Extension<FileBody>), StatusCode> {
    let file = std::fs::File::open(state.dir.join(name)).map_err(|_| StatusCode::NOT_FOUND)?;
    let body = FileBody::new(file).map_err(|_| StatusCode::INTERNAL_SERVER_ERROR)?;
    let mut headers = HeaderMap::new();
    headers.insert(
        "content-type",
        HeaderValue::from_static("application/octet-stream"),
    );
    Ok((headers, Extension(body)))
}

async fn into(Extension(handle): Extension<ExchangeHandle>) -> String {
    handle.set_max_body_size(None);
    let mut buf = vec![0u8; 1 << 20];
    let mut hash = Sha256::new();
    let mut len = 0u64;
    loop {
        match handle.read_into(&mut buf).await {
            Ok(0) => break,
            Ok(n) => {
                hash.update(&buf[..n]);
                len += n as u64;
            }
            Err(e) => return format!("error {e}\n"),
        }
    }
    format!("{} {len}\n", hex(&hash.finalize()))
}

async fn early(Extension(handle): Extension<ExchangeHandle>) -> &'static str {
    let mut hints = HeaderMap::new();
    hints.insert(
        "link",
        HeaderValue::from_static("</style.css>; rel=preload; as=style"),
    );
    handle
        .send_informational(StatusCode::EARLY_HINTS, hints)
        .await
        .expect("103 sent");
    "after hints\n"
}

async fn hold(axum::extract::RawQuery(query): axum::extract::RawQuery) -> &'static str {
    let g = query
        .as_deref()
        .and_then(|q| q.strip_prefix("g="))
        .and_then(|g| g.parse::<usize>().ok())
        .unwrap_or(0)
        .min(3);
    let release = hold_release(g).notified();
    let now = HOLDING[g].fetch_add(1, Ordering::SeqCst) + 1;
    MAX_HOLDING[g].fetch_max(now, Ordering::SeqCst);
    let _ = tokio::time::timeout(Duration::from_secs(20), release).await;
    HOLDING[g].fetch_sub(1, Ordering::SeqCst);
    "released\n"
}

async fn frames(
    Extension(handle): Extension<ExchangeHandle>,
    axum::extract::RawQuery(query): axum::extract::RawQuery,
    body: axum::body::Body,
) -> String {
    if let Some(pause) = query.as_deref().and_then(|q| q.strip_prefix("pause=")) {
        handle.set_pause_threshold(pause.parse().expect("pause=N"));
    }
    tokio::time::sleep(Duration::from_millis(50)).await;
    let mut body = body;
    let (mut largest, mut total) = (0, 0);
    while let Some(frame) = body.frame().await {
        if let Ok(data) = frame.expect("body").into_data() {
            largest = largest.max(data.len());
            total += data.len();
        }
    }
    format!("largest {largest} of {total}\n")
}

async fn limited(
    Extension(handle): Extension<ExchangeHandle>,
    body: axum::body::Body,
) -> (StatusCode, String) {
    handle.set_max_body_size(Some(1000));
    let mut body = body;
    let mut total = 0;
    while let Some(frame) = body.frame().await {
        match frame {
            Ok(frame) => total += frame.data_ref().map_or(0, |d| d.len()),
            Err(e) => {
                // axum wraps the body's error; weir's is inside, with its meaning.
                let weir = e
                    .into_inner()
                    .downcast::<weir::Error>()
                    .expect("weir's error");
                assert!(weir.is_too_large(), "{weir}");
                return (StatusCode::PAYLOAD_TOO_LARGE, "too large\n".into());
            }
        }
    }
    (StatusCode::OK, format!("{total}\n"))
}
