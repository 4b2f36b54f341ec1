//! An axum app on weir: uploads stream to disk with `splice` (no copy through user space on
//! Linux over TCP), downloads go out with `sendfile`, through the handle weir puts in every
//! request's extensions. Everything else (routing, extractors, state, tower-http layers, the
//! client's address through `ConnectInfo`) is plain axum; only the line that serves the app
//! names weir.
//!
//! ```sh
//! cargo run --release -p weir --example axum_upload -- 127.0.0.1:8080 ./uploads
//! curl -T big.iso http://127.0.0.1:8080/files/big.iso     # 201, "N bytes"
//! curl -o copy.iso http://127.0.0.1:8080/files/big.iso    # the file, by sendfile
//! ```

use axum::extract::{ConnectInfo, Path, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::routing::put;
use axum::{Extension, Router};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use weir::{ExchangeHandle, FileBody};

/// Largest upload this app takes (weir's default limit is 30 MiB: raised per request here).
const MAX_UPLOAD: u64 = 100 << 30;

struct Store {
    dir: PathBuf,
}

impl Store {
    /// The path of a stored file; `None` for names that could leave the directory or hide.
    fn path(&self, name: &str) -> Option<PathBuf> {
        let plain = !name.is_empty()
            && !name.starts_with('.')
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "._-".contains(c));
        plain.then(|| self.dir.join(name))
    }
}

async fn upload(
    State(store): State<Arc<Store>>,
    Path(name): Path<String>,
    ConnectInfo(client): ConnectInfo<SocketAddr>,
    Extension(weir): Extension<ExchangeHandle>,
) -> (StatusCode, String) {
    let Some(path) = store.path(&name) else {
        return (StatusCode::BAD_REQUEST, "bad name\n".into());
    };
    weir.set_max_body_size(Some(MAX_UPLOAD));
    // Written beside the target and renamed at the end, so a cut upload leaves nothing behind.
    let partial = store.dir.join(format!(".{name}.partial"));
    let mut file = match std::fs::File::create(&partial) {
        Ok(file) => file,
        Err(e) => return (StatusCode::INTERNAL_SERVER_ERROR, format!("{e}\n")),
    };
    let result = weir.to_file(&mut file).await;
    let result = match result {
        Ok(n) => std::fs::rename(&partial, &path)
            .map(|()| n)
            .map_err(weir::Error::from),
        Err(e) => Err(e),
    };
    match result {
        Ok(n) => {
            eprintln!("{client}: {name}, {n} bytes");
            (StatusCode::CREATED, format!("{n} bytes\n"))
        }
        Err(e) => {
            let _ = std::fs::remove_file(&partial);
            let status = if e.is_too_large() {
                StatusCode::PAYLOAD_TOO_LARGE
            } else {
                e.status_code()
            };
            (status, format!("{e}\n"))
        }
    }
}

async fn download(
    State(store): State<Arc<Store>>,
    Path(name): Path<String>,
) -> Result<(HeaderMap, Extension<FileBody>), StatusCode> {
    let path = store.path(&name).ok_or(StatusCode::BAD_REQUEST)?;
    let file = std::fs::File::open(path).map_err(|_| StatusCode::NOT_FOUND)?;
    let body = FileBody::new(file).map_err(|_| StatusCode::INTERNAL_SERVER_ERROR)?;
    let mut headers = HeaderMap::new();
    headers.insert(
        "content-type",
        HeaderValue::from_static("application/octet-stream"),
    );
    // An empty body with the FileBody in the extensions: weir sends the file with sendfile.
    Ok((headers, Extension(body)))
}

/// The app: `PUT` and `GET /files/{name}`, files kept in `dir`.
pub fn app(dir: PathBuf) -> Router {
    Router::new()
        .route("/files/{name}", put(upload).get(download))
        .with_state(Arc::new(Store { dir }))
}

#[tokio::main]
async fn main() -> std::io::Result<()> {
    let mut args = std::env::args().skip(1);
    let addr = args.next().unwrap_or_else(|| "127.0.0.1:8080".into());
    let dir = PathBuf::from(args.next().unwrap_or_else(|| "uploads".into()));
    std::fs::create_dir_all(&dir)?;
    let app = app(dir).into_make_service_with_connect_info::<SocketAddr>();
    // With hyper this line would be `axum::serve(TcpListener::bind(addr).await?, app).await`.
    weir::Server::bind(addr, weir::Config::default())
        .await?
        .serve(weir::MakeServiceHandler::new(app))
        .await
}
