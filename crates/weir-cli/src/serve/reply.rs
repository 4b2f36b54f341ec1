//! Answers that are not files: JSON bodies, error bodies, and the status for each
//! [`StoreError`].
//!
//! Every error body is `{"error": "<message>"}` with the right status, so that a client (and
//! `weir put`/`get`) can show the server's reason in one line.

use http::StatusCode;
use weir::{Exchange, http};
use weir_store::StoreError;

/// Sends `value` as a JSON body.
pub(crate) async fn json(
    ex: &mut Exchange<'_>,
    status: StatusCode,
    value: &serde_json::Value,
) -> Result<(), weir::Error> {
    json_with(ex, status, value, &[]).await
}

/// Sends `value` as a JSON body, with extra headers.
pub(crate) async fn json_with(
    ex: &mut Exchange<'_>,
    status: StatusCode,
    value: &serde_json::Value,
    headers: &[(&str, &str)],
) -> Result<(), weir::Error> {
    // ALLOCATION: the body string; these answers are small and not on a data path.
    let mut body = value.to_string();
    body.push('\n');
    let mut response = ex
        .respond(status)
        .header("content-type", "application/json")
        .header("cache-control", "no-store");
    for (name, value) in headers {
        response = response.header(name, value);
    }
    response.body(body).await
}

/// Sends `{"error": message}` with `status`, and any extra headers.
pub(crate) async fn error(
    ex: &mut Exchange<'_>,
    status: StatusCode,
    message: &str,
    headers: &[(&str, &str)],
) -> Result<(), weir::Error> {
    let mut body = serde_json::json!({ "error": message }).to_string();
    body.push('\n');
    let mut response = ex
        .respond(status)
        .header("content-type", "application/json")
        .header("cache-control", "no-store");
    for (name, value) in headers {
        response = response.header(name, value);
    }
    response.body(body).await
}

/// Answers a store error with its status (see [`store_status`]).
pub(crate) async fn store_error(ex: &mut Exchange<'_>, e: &StoreError) -> Result<(), weir::Error> {
    let status = store_status(e);
    if status == StatusCode::INTERNAL_SERVER_ERROR {
        tracing::error!(error = %e, "storage failure");
    }
    error(ex, status, &e.to_string(), &[]).await
}

/// The status for each store error, as the store suggests.
pub(crate) fn store_status(e: &StoreError) -> StatusCode {
    match e {
        StoreError::InvalidPath(_)
        | StoreError::DigestMismatch { .. }
        | StoreError::LengthMismatch { .. } => StatusCode::BAD_REQUEST,
        StoreError::NotFound => StatusCode::NOT_FOUND,
        StoreError::IsDirectory | StoreError::NotADirectory | StoreError::DuplicatePath { .. } => {
            StatusCode::CONFLICT
        }
        StoreError::SymlinkRefused => StatusCode::FORBIDDEN,
        StoreError::PreconditionFailed => StatusCode::PRECONDITION_FAILED,
        StoreError::NoSpace | StoreError::QuotaExceeded { .. } => StatusCode::INSUFFICIENT_STORAGE,
        _ => StatusCode::INTERNAL_SERVER_ERROR,
    }
}

/// Lower-case hex of a digest.
pub(crate) fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write;
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        let _ = write!(s, "{b:02x}");
    }
    s
}
