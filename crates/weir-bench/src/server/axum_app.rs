//! The axum app of the "weir + axum" and "hyper + axum" rows (issue 14): one `Router`, built by
//! [`router`], served unchanged by weir (`weir::ServiceHandler`, [`super::weir_peer`]) and by
//! hyper (`http1::Builder` with hyper-util's `TowerToHyperService`, as `axum::serve` wraps a
//! router, [`super::hyper_peer`]). The rows differ in the server and nothing else.
//!
//! Routes, with the same work as every other system's ([`super`]):
//! - `GET /plaintext`: `Hello, World!`, `Content-Type` and `Server` set by the handler (both
//!   servers add `Date`, and leave a `Server` the response has alone);
//! - `POST /post`: drains the small body, answers like `/plaintext`;
//! - `POST /upload` (and `PUT`): the body into the server's [`Sink`], answered with an
//!   [`UploadTrace`]:
//!   - discard: `http_body` frames taken and dropped (weir's frames share its read buffer; hyper's
//!     are its own);
//!   - file: each frame written with plain `std::fs` on the connection's task, as the other
//!     systems' file sinks (no regrouping into 256 KiB, which would add a copy);
//!   - splice: weir's `ExchangeHandle::to_file` from the request's extensions (socket → pipe →
//!     file); a request without the handle (not served by weir) is answered `501`: hyper has no
//!     splice path, and its server refuses this sink before it starts.

use crate::server::Sink;
use crate::server::plaintext::{BODY, CONTENT_TYPE, SERVER};
use crate::server::sink::create_upload_file;
use crate::server::trace::UploadTrace;
use axum::Router;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use http_body_util::BodyExt;
use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;

/// What the upload route needs: the sink and where files go.
struct Uploads {
    sink: Sink,
    dir: PathBuf,
}

/// The app: the same `Router` for every server that runs it.
pub fn router(sink: Sink, dir: PathBuf) -> Router {
    Router::new()
        .route("/plaintext", get(hello))
        .route("/post", post(post_small))
        .route("/upload", post(upload).put(upload))
        .with_state(Arc::new(Uploads { sink, dir }))
}

async fn hello() -> impl IntoResponse {
    (
        [
            (header::CONTENT_TYPE, CONTENT_TYPE),
            (header::SERVER, SERVER),
        ],
        BODY,
    )
}

async fn post_small(mut body: Body) -> impl IntoResponse {
    while let Some(Ok(_)) = body.frame().await {}
    hello().await
}

async fn upload(State(uploads): State<Arc<Uploads>>, request: Request) -> Response {
    match receive(&uploads, request).await {
        Ok(trace) => trace.encode().into_response(),
        Err((status, why)) => (status, why).into_response(),
    }
}

type Failure = (StatusCode, String);

fn failed(e: impl std::fmt::Display) -> Failure {
    (StatusCode::INTERNAL_SERVER_ERROR, e.to_string())
}

async fn receive(uploads: &Uploads, request: Request) -> Result<UploadTrace, Failure> {
    let mut trace = UploadTrace::start();
    match uploads.sink {
        // Chunks is weir's native sink; both servers refuse it for this app before starting.
        Sink::Discard | Sink::Chunks => {
            let mut body = request.into_body();
            while let Some(frame) = body.frame().await {
                if let Ok(data) = frame.map_err(failed)?.into_data() {
                    trace.received(data.len());
                }
            }
        }
        Sink::File => {
            let mut file = create_upload_file(&uploads.dir).map_err(failed)?;
            let mut body = request.into_body();
            while let Some(frame) = body.frame().await {
                if let Ok(data) = frame.map_err(failed)?.into_data() {
                    trace.received(data.len());
                    // Blocking write on the connection's task, on purpose (see `sink`).
                    file.write_all(&data).map_err(failed)?;
                }
            }
        }
        Sink::Splice => {
            let Some(handle) = request.extensions().get::<weir::ExchangeHandle>() else {
                return Err((
                    StatusCode::NOT_IMPLEMENTED,
                    "splice needs weir's ExchangeHandle".into(),
                ));
            };
            let mut file = create_upload_file(&uploads.dir).map_err(failed)?;
            let n = handle.to_file(&mut file).await.map_err(failed)?;
            trace.received(n as usize);
        }
    }
    trace.finish();
    Ok(trace)
}
