//! Answers that are not files: JSON bodies, and every error answer of the service as an RFC 9457
//! problem (`application/problem+json`).
//!
//! Each kind of error is one [`Problem`]: one status, one stable `type` URI, one `title`; the
//! occurrence's explanation goes in `detail`. This file is the one place that maps a store
//! error ([`store_problem`]) or a route's refusal to its problem; docs/OPERATING.md has the
//! table. The body also carries `error` (the same text as `detail`), the member error bodies
//! had before problems, which `weir put`/`get` and older clients read.
//!
//! `type` URIs are identifiers, compared as strings: weir's own are
//! `https://weir.dev/problems/<name>` (never renamed once published; a new kind of error gets a
//! new name); the resumable-upload draft's are the IANA ones it registers.

use http::StatusCode;
use weir::{Exchange, http};
use weir_store::StoreError;

/// One kind of error answer: its status, `type` and `title` never change between occurrences.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Problem {
    /// 400: a malformed request (header, query, path encoding, form, digest syntax...).
    BadRequest,
    /// 400: the store path is not acceptable (`..`, empty segment, reserved name...).
    InvalidPath,
    /// 400: the body's digest is not the one the client announced.
    DigestMismatch,
    /// 400: the body's length is not the one the client announced.
    LengthMismatch,
    /// 401: no token, or an unknown one.
    Unauthorized,
    /// 403: a known token without the scope, or outside its prefix.
    Forbidden,
    /// 403: a symbolic link in the way; weir never follows one.
    SymlinkRefused,
    /// 404: no such file, directory, route or upload.
    NotFound,
    /// 405: the route does not take this method (`Allow` says which).
    MethodNotAllowed,
    /// 408: the request body came slower than the minimum rate.
    BodyTimeout,
    /// 409: the path conflicts with a file or directory (or another part of the form).
    PathConflict,
    /// 409 (resumable), 423 (tus): another request is appending to this upload.
    UploadBusy,
    /// 409: a tus `PATCH` whose `Upload-Offset` is not the upload's.
    OffsetMismatch,
    /// 412: `If-Match`/`If-None-Match`/... do not hold.
    PreconditionFailed,
    /// 412: a tus request without `Tus-Resumable: 1.0.0`.
    TusVersion,
    /// 413: larger than `--max-upload` (or the resumable append limit).
    TooLarge,
    /// 415: a body of a type the route does not take.
    UnsupportedMediaType,
    /// 416: no byte of the file is in the requested range.
    RangeNotSatisfiable,
    /// 503: resumable uploads are off, or an upload stayed busy.
    Unavailable,
    /// 507: the disk is full, or `--max-storage` would be exceeded.
    InsufficientStorage,
    /// 500: the server failed (logged).
    Internal,
    /// 501: the route exists, but not with this store (resumable and tus uploads on a store
    /// served without `with_remote_resumable`).
    #[cfg_attr(not(feature = "s3"), allow(dead_code))]
    NotImplemented,
    /// 502: the object store failed or could not be reached (logged).
    StoreUnavailable,
    /// 409, the resumable draft's: the append's `Upload-Offset` is not the upload's.
    DraftMismatchingOffset,
    /// 400, the resumable draft's: the upload is complete.
    DraftCompletedUpload,
    /// 400, the resumable draft's: lengths that contradict each other.
    DraftInconsistentLength,
    /// 403: `--pre-upload-hook` refused the upload.
    UploadRefused,
    /// 503: `--pre-upload-hook` did not answer in time (or could not be run).
    HookUnavailable,
    /// 403: a write from a browser page of another origin (`origin_guard.rs`).
    CrossSiteWrite,
    /// 421: a `Host` this server does not answer for (`host_check.rs`).
    HostNotAllowed,
}

impl Problem {
    /// Every kind, for the documentation test.
    #[cfg(test)]
    pub(crate) const ALL: [Self; 30] = [
        Self::BadRequest,
        Self::InvalidPath,
        Self::DigestMismatch,
        Self::LengthMismatch,
        Self::Unauthorized,
        Self::Forbidden,
        Self::SymlinkRefused,
        Self::NotFound,
        Self::MethodNotAllowed,
        Self::BodyTimeout,
        Self::PathConflict,
        Self::UploadBusy,
        Self::OffsetMismatch,
        Self::PreconditionFailed,
        Self::TusVersion,
        Self::TooLarge,
        Self::UnsupportedMediaType,
        Self::RangeNotSatisfiable,
        Self::Unavailable,
        Self::InsufficientStorage,
        Self::Internal,
        Self::NotImplemented,
        Self::StoreUnavailable,
        Self::DraftMismatchingOffset,
        Self::DraftCompletedUpload,
        Self::DraftInconsistentLength,
        Self::UploadRefused,
        Self::HookUnavailable,
        Self::CrossSiteWrite,
        Self::HostNotAllowed,
    ];

    /// Its status. [`UploadBusy`](Self::UploadBusy) is 409 here; tus answers it 423 (see
    /// [`error_with_status`]).
    pub(crate) fn status(self) -> StatusCode {
        match self {
            Self::BadRequest
            | Self::InvalidPath
            | Self::DigestMismatch
            | Self::LengthMismatch
            | Self::DraftCompletedUpload
            | Self::DraftInconsistentLength => StatusCode::BAD_REQUEST,
            Self::Unauthorized => StatusCode::UNAUTHORIZED,
            Self::Forbidden | Self::SymlinkRefused | Self::UploadRefused | Self::CrossSiteWrite => {
                StatusCode::FORBIDDEN
            }
            Self::HostNotAllowed => StatusCode::MISDIRECTED_REQUEST,
            Self::NotFound => StatusCode::NOT_FOUND,
            Self::MethodNotAllowed => StatusCode::METHOD_NOT_ALLOWED,
            Self::BodyTimeout => StatusCode::REQUEST_TIMEOUT,
            Self::PathConflict
            | Self::UploadBusy
            | Self::OffsetMismatch
            | Self::DraftMismatchingOffset => StatusCode::CONFLICT,
            Self::PreconditionFailed | Self::TusVersion => StatusCode::PRECONDITION_FAILED,
            Self::TooLarge => StatusCode::PAYLOAD_TOO_LARGE,
            Self::UnsupportedMediaType => StatusCode::UNSUPPORTED_MEDIA_TYPE,
            Self::RangeNotSatisfiable => StatusCode::RANGE_NOT_SATISFIABLE,
            Self::Unavailable | Self::HookUnavailable => StatusCode::SERVICE_UNAVAILABLE,
            Self::InsufficientStorage => StatusCode::INSUFFICIENT_STORAGE,
            Self::Internal => StatusCode::INTERNAL_SERVER_ERROR,
            Self::NotImplemented => StatusCode::NOT_IMPLEMENTED,
            Self::StoreUnavailable => StatusCode::BAD_GATEWAY,
        }
    }

    /// Its `type` URI.
    pub(crate) fn type_uri(self) -> &'static str {
        match self {
            Self::BadRequest => "https://weir.dev/problems/bad-request",
            Self::InvalidPath => "https://weir.dev/problems/invalid-path",
            Self::DigestMismatch => "https://weir.dev/problems/digest-mismatch",
            Self::LengthMismatch => "https://weir.dev/problems/length-mismatch",
            Self::Unauthorized => "https://weir.dev/problems/unauthorized",
            Self::Forbidden => "https://weir.dev/problems/forbidden",
            Self::SymlinkRefused => "https://weir.dev/problems/symlink-refused",
            Self::NotFound => "https://weir.dev/problems/not-found",
            Self::MethodNotAllowed => "https://weir.dev/problems/method-not-allowed",
            Self::BodyTimeout => "https://weir.dev/problems/body-timeout",
            Self::PathConflict => "https://weir.dev/problems/path-conflict",
            Self::UploadBusy => "https://weir.dev/problems/upload-busy",
            Self::OffsetMismatch => "https://weir.dev/problems/offset-mismatch",
            Self::PreconditionFailed => "https://weir.dev/problems/precondition-failed",
            Self::TusVersion => "https://weir.dev/problems/tus-version",
            Self::TooLarge => "https://weir.dev/problems/too-large",
            Self::UnsupportedMediaType => "https://weir.dev/problems/unsupported-media-type",
            Self::RangeNotSatisfiable => "https://weir.dev/problems/range-not-satisfiable",
            Self::Unavailable => "https://weir.dev/problems/unavailable",
            Self::InsufficientStorage => "https://weir.dev/problems/insufficient-storage",
            Self::Internal => "https://weir.dev/problems/internal",
            Self::UploadRefused => "https://weir.dev/problems/upload-refused",
            Self::HookUnavailable => "https://weir.dev/problems/hook-unavailable",
            Self::CrossSiteWrite => "https://weir.dev/problems/cross-site-write",
            Self::HostNotAllowed => "https://weir.dev/problems/host-not-allowed",
            Self::NotImplemented => "https://weir.dev/problems/not-implemented",
            Self::StoreUnavailable => "https://weir.dev/problems/store-unavailable",
            Self::DraftMismatchingOffset => {
                "https://iana.org/assignments/http-problem-types#mismatching-upload-offset"
            }
            Self::DraftCompletedUpload => {
                "https://iana.org/assignments/http-problem-types#completed-upload"
            }
            Self::DraftInconsistentLength => {
                "https://iana.org/assignments/http-problem-types#inconsistent-upload-length"
            }
        }
    }

    /// Its `title`: short, the same for every occurrence.
    pub(crate) fn title(self) -> &'static str {
        match self {
            Self::BadRequest => "Malformed request",
            Self::InvalidPath => "Path not acceptable",
            Self::DigestMismatch => "Digest mismatch",
            Self::LengthMismatch => "Length mismatch",
            Self::Unauthorized => "Missing or unknown token",
            Self::Forbidden => "Token not allowed here",
            Self::SymlinkRefused => "Symbolic link in the way",
            Self::NotFound => "Not found",
            Self::MethodNotAllowed => "Method not allowed",
            Self::BodyTimeout => "Request body too slow",
            Self::PathConflict => "Path conflict",
            Self::UploadBusy => "Upload busy",
            Self::OffsetMismatch => "Upload offset mismatch",
            Self::PreconditionFailed => "Precondition failed",
            Self::TusVersion => "Unsupported tus version",
            Self::TooLarge => "Upload too large",
            Self::UnsupportedMediaType => "Unsupported media type",
            Self::RangeNotSatisfiable => "Range not satisfiable",
            Self::Unavailable => "Service unavailable",
            Self::InsufficientStorage => "Insufficient storage",
            Self::Internal => "Internal server error",
            Self::NotImplemented => "Not implemented with this store",
            Self::StoreUnavailable => "Object store unavailable",
            Self::DraftMismatchingOffset => "Mismatching upload offset",
            Self::DraftCompletedUpload => "Upload already completed",
            Self::DraftInconsistentLength => "Inconsistent upload length",
            Self::UploadRefused => "Upload refused",
            Self::HookUnavailable => "Upload check unavailable",
            Self::CrossSiteWrite => "Write from another site",
            Self::HostNotAllowed => "Host not served here",
        }
    }
}

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
    // ALLOCATION: the body, once: sized for the usual answer (a `PUT`'s path, size, digest),
    // where `to_string` would grow it a few times as it is written.
    let mut body = String::with_capacity(512);
    // Writing to a `String` cannot fail.
    let _ = std::fmt::Write::write_fmt(&mut body, format_args!("{value}\n"));
    send(ex, status, "application/json", body, headers).await
}

/// Answers `problem` with `detail` (this occurrence's explanation) and any extra headers.
pub(crate) async fn error(
    ex: &mut Exchange<'_>,
    problem: Problem,
    detail: &str,
    headers: &[(&str, &str)],
) -> Result<(), weir::Error> {
    let status = problem.status();
    error_with_status(
        ex,
        problem,
        status,
        detail,
        serde_json::Value::Null,
        headers,
    )
    .await
}

/// Answers `problem` with a status of its own (tus's 423 for a busy upload), extension members
/// (`extra`, an object, or null) and extra headers.
pub(crate) async fn error_with_status(
    ex: &mut Exchange<'_>,
    problem: Problem,
    status: StatusCode,
    detail: &str,
    extra: serde_json::Value,
    headers: &[(&str, &str)],
) -> Result<(), weir::Error> {
    // ALLOCATION: the body; error answers are small and not on a data path.
    let mut body = problem_body(problem, status, detail);
    if let (serde_json::Value::Object(body), serde_json::Value::Object(extra)) = (&mut body, extra)
    {
        body.extend(extra);
    }
    let mut text = body.to_string();
    text.push('\n');
    send(ex, status, "application/problem+json", text, headers).await
}

/// The problem document: RFC 9457's members, and `error` for older clients.
fn problem_body(problem: Problem, status: StatusCode, detail: &str) -> serde_json::Value {
    serde_json::json!({
        "type": problem.type_uri(),
        "title": problem.title(),
        "status": status.as_u16(),
        "detail": detail,
        "error": detail,
    })
}

async fn send(
    ex: &mut Exchange<'_>,
    status: StatusCode,
    content_type: &str,
    body: String,
    headers: &[(&str, &str)],
) -> Result<(), weir::Error> {
    let mut response = ex
        .respond(status)
        .header("content-type", content_type)
        .header("cache-control", "no-store");
    for (name, value) in headers {
        response = response.header(name, value);
    }
    response.body(body).await
}

/// Answers a store error with its problem (see [`store_problem`]); a server failure is logged.
pub(crate) async fn store_error(ex: &mut Exchange<'_>, e: &StoreError) -> Result<(), weir::Error> {
    store_error_with(ex, e, &[]).await
}

/// [`store_error`] with extra headers.
pub(crate) async fn store_error_with(
    ex: &mut Exchange<'_>,
    e: &StoreError,
    headers: &[(&str, &str)],
) -> Result<(), weir::Error> {
    let problem = store_problem(e);
    if matches!(problem, Problem::Internal | Problem::StoreUnavailable) {
        tracing::error!(error = %e, "storage failure");
    }
    error(ex, problem, &e.to_string(), headers).await
}

/// The problem for each store error, as the store suggests.
pub(crate) fn store_problem(e: &StoreError) -> Problem {
    match e {
        StoreError::InvalidPath(_) => Problem::InvalidPath,
        StoreError::DigestMismatch { .. } => Problem::DigestMismatch,
        StoreError::DigestUnavailable { .. } => Problem::BadRequest,
        StoreError::LengthMismatch { .. } => Problem::LengthMismatch,
        StoreError::NotFound => Problem::NotFound,
        StoreError::IsDirectory
        | StoreError::NotADirectory
        | StoreError::DirectoryNotEmpty
        | StoreError::DuplicatePath { .. } => Problem::PathConflict,
        StoreError::SymlinkRefused => Problem::SymlinkRefused,
        StoreError::PreconditionFailed => Problem::PreconditionFailed,
        StoreError::NoSpace | StoreError::QuotaExceeded { .. } => Problem::InsufficientStorage,
        StoreError::Backend { .. } => Problem::StoreUnavailable,
        _ => Problem::Internal,
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

#[cfg(test)]
mod tests {
    use super::Problem;

    /// Every type URI is distinct, and each one is in docs/OPERATING.md's table with its status.
    #[test]
    fn types_are_distinct_and_documented() {
        let doc = include_str!("../../../../docs/OPERATING.md");
        let mut seen = std::collections::HashSet::new();
        for p in Problem::ALL {
            assert!(seen.insert(p.type_uri()), "{p:?}: type used twice");
            let short = p.type_uri().rsplit(['/', '#']).next().unwrap();
            let row = format!("| `{short}` | {} |", p.status().as_u16());
            assert!(doc.contains(&row), "{p:?}: no row {row:?} in OPERATING.md");
        }
    }
}
