//! `PUT /files/{path}`: the body streams into the store and becomes the file atomically, or
//! nothing is stored.
//!
//! Before any body byte is read: the declared length against `--max-upload` (413), the
//! `Content-Digest` syntax (400), and `begin` (which reserves the declared length against
//! `--max-storage`: 507, and refuses a directory or symlink in the way). Then one of two data
//! paths, recorded in the response (`data_path`) and the body counters:
//!
//! - **splice** (`--no-hash`, no `Content-Digest`): `Exchange::body_to_file` moves the bytes
//!   socket → pipe → file inside the kernel; nothing enters user space. The bytes are reported
//!   to the upload afterwards (`record_external_write`), and commit checks the file's length.
//! - **hashed**: `Exchange::read_body` reads the socket straight into a pooled 512 KiB buffer
//!   (the one user-space copy), and `Upload::write` hashes it in place and writes it to the
//!   file from the same buffer. No allocation per read or per upload in steady state.
//!
//! Any failure drops the `Upload`, which removes its temporary file: a client that disconnects,
//! a body that is too large, a digest that does not match, a full disk all leave the target as
//! it was.

use super::reply::{self, hex};
use super::service::{Service, commit};
use http::StatusCode;
use weir::{BodyStats, Exchange, http};
use weir_store::{ContentDigest, StoreError, StorePath, Upload, UploadOptions};

/// Which way the body went.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum DataPath {
    Splice,
    Hashed,
}

impl DataPath {
    fn as_str(self) -> &'static str {
        match self {
            Self::Splice => "splice",
            Self::Hashed => "hashed",
        }
    }
}

pub(super) async fn put(
    svc: &Service,
    ex: &mut Exchange<'_>,
    path: StorePath,
) -> Result<(), weir::Error> {
    let max = svc.options.max_upload;
    let declared = ex.request().content_length();
    if declared.is_some_and(|len| len > max) {
        return too_large(ex, max).await;
    }
    ex.set_max_body_size(Some(max));
    let expected_digest = match content_digest(ex) {
        Ok(d) => d,
        Err(message) => return reply::error(ex, StatusCode::BAD_REQUEST, &message, &[]).await,
    };
    let verify = !expected_digest.is_empty();
    let data_path =
        if !svc.options.hash && !verify && (declared.is_some() || !svc.options.limited_storage) {
            DataPath::Splice
        } else {
            DataPath::Hashed
        };
    let options = UploadOptions {
        hash: svc.options.hash,
        expected_digest: verify.then_some(expected_digest),
        expected_len: declared,
    };
    let mut upload = match svc.store.begin(&path, options) {
        Ok(u) => u,
        Err(e) => return reply::store_error(ex, &e).await,
    };
    let received = match data_path {
        DataPath::Splice => splice_body(ex, &mut upload).await,
        DataPath::Hashed => hashed_body(svc, ex, &mut upload).await,
    };
    if let Err(failure) = received {
        drop(upload);
        return failure.answer(ex, max).await;
    }
    let committed = match commit(upload) {
        Ok(c) => c,
        Err(e) => return reply::store_error(ex, &e).await,
    };
    let stats = ex.body_stats();
    tracing::debug!(path = %path, size = committed.size, data_path = data_path.as_str(), "stored");
    let status = if committed.replaced {
        StatusCode::OK
    } else {
        StatusCode::CREATED
    };
    let body = serde_json::json!({
        "path": path.as_str(),
        "size": committed.size,
        "sha256": committed.sha256.map(|d| hex(&d)),
        "replaced": committed.replaced,
        "data_path": data_path.as_str(),
        "body": body_stats_json(&stats),
    });
    reply::json(ex, status, &body).await
}

/// The body counters, for clients and tests to see which way the bytes went.
pub(super) fn body_stats_json(stats: &BodyStats) -> serde_json::Value {
    serde_json::json!({
        "spliced": stats.spliced,
        "direct": stats.direct,
        "copied": stats.copied,
    })
}

/// Why a body did not make it into the upload.
pub(super) enum BodyFailure {
    /// From reading the body: disconnect, too large, timeout, bad framing, or a file error
    /// during splice.
    Body(weir::Error),
    /// From the store: no space, quota, length or digest mismatch.
    Store(StoreError),
}

impl BodyFailure {
    /// Answers the client, if it can still be answered.
    pub(super) async fn answer(self, ex: &mut Exchange<'_>, max: u64) -> Result<(), weir::Error> {
        match self {
            Self::Store(e) => reply::store_error(ex, &e).await,
            Self::Body(e) if e.is_too_large() => too_large(ex, max).await,
            Self::Body(e) if e.is_timeout() => {
                reply::error(
                    ex,
                    StatusCode::REQUEST_TIMEOUT,
                    "request body too slow",
                    &[],
                )
                .await
            }
            Self::Body(e) if e.is_protocol() => {
                reply::error(ex, StatusCode::BAD_REQUEST, &e.to_string(), &[]).await
            }
            // A disconnect: nobody to answer. Anything else: weir answers 500.
            Self::Body(e) => Err(e),
        }
    }
}

/// Socket → file with splice, then tells the upload how many bytes it got.
async fn splice_body(ex: &mut Exchange<'_>, upload: &mut Upload) -> Result<(), BodyFailure> {
    match ex.body_to_file(upload.file_mut()).await {
        Ok(n) => upload.record_external_write(n).map_err(BodyFailure::Store),
        Err(e) => {
            // A file error (ENOSPC...) during splice is the store's kind of failure: classify
            // it the way `Upload::write` would. Socket errors are disconnects, not I/O errors.
            let file_error =
                !(e.is_disconnect() || e.is_too_large() || e.is_timeout() || e.is_protocol());
            match e.io_error() {
                Some(io) if file_error => {
                    let io = io.raw_os_error().map_or_else(
                        || std::io::Error::from(io.kind()),
                        std::io::Error::from_raw_os_error,
                    );
                    Err(BodyFailure::Store(StoreError::from_io("write", io)))
                }
                _ => Err(BodyFailure::Body(e)),
            }
        }
    }
}

/// Socket → pooled buffer (direct read) → hash + file.
async fn hashed_body(
    svc: &Service,
    ex: &mut Exchange<'_>,
    upload: &mut Upload,
) -> Result<(), BodyFailure> {
    let mut buf = svc.buffers.take();
    loop {
        let n = ex.read_body(&mut buf).await.map_err(BodyFailure::Body)?;
        if n == 0 {
            return Ok(());
        }
        upload.write(&buf[..n]).map_err(BodyFailure::Store)?;
    }
}

/// The `Content-Digest` header(s), joined and parsed; an empty digest if absent.
pub(super) fn content_digest(ex: &Exchange<'_>) -> Result<ContentDigest, String> {
    let mut joined = String::new();
    for value in ex.request().header_all("content-digest") {
        let value = std::str::from_utf8(value).map_err(|_| "Content-Digest is not ASCII")?;
        if !joined.is_empty() {
            joined.push_str(", ");
        }
        joined.push_str(value);
    }
    ContentDigest::parse(&joined).map_err(|e| e.to_string())
}

pub(super) async fn too_large(ex: &mut Exchange<'_>, max: u64) -> Result<(), weir::Error> {
    let message = format!("upload larger than the limit of {max} bytes");
    reply::error(ex, StatusCode::PAYLOAD_TOO_LARGE, &message, &[]).await
}
