//! The S3 API's answers: XML bodies, S3's error bodies with S3's codes (none for `HEAD`, as S3
//! answers), and the one mapping of weir-store's errors to S3's codes.
//!
//! Every answer carries `x-amz-request-id` (a per-process counter: unique within a run, which
//! is what a client quotes back in a report).

use crate::serve::body::BodyFailure;
use http::{Method, StatusCode};
use std::sync::atomic::{AtomicU64, Ordering};
use weir::{Exchange, http};
use weir_s3api::xml::errors::error_body;
use weir_s3api::{ErrorCode, S3Error};
use weir_store::StoreError;

static REQUESTS: AtomicU64 = AtomicU64::new(1);

/// A new request id (16 hex digits).
pub(super) fn request_id() -> String {
    format!("{:016X}", REQUESTS.fetch_add(1, Ordering::Relaxed))
}

/// Answers `error` (its status, and its XML body unless the request is a `HEAD`).
pub(super) async fn error(ex: &mut Exchange<'_>, error: &S3Error) -> Result<(), weir::Error> {
    error_with(ex, error, &[]).await
}

/// [`error`] with extra header fields.
pub(super) async fn error_with(
    ex: &mut Exchange<'_>,
    error: &S3Error,
    headers: &[(&str, &str)],
) -> Result<(), weir::Error> {
    if error.code == ErrorCode::InternalError {
        tracing::error!(message = %error.message, "S3 API: internal error");
    }
    let id = request_id();
    // ALLOCATION: the resource (the request's path) for the body.
    let resource = ex.request().path().to_owned();
    let head_only = *ex.request().method() == Method::HEAD;
    let mut response = ex
        .respond(error.status())
        .header("x-amz-request-id", &id)
        .header("content-type", "application/xml");
    for (name, value) in headers {
        response = response.header(*name, *value);
    }
    if head_only {
        return response.empty().await;
    }
    response.body(error_body(error, &resource, &id)).await
}

/// Answers `status` with an XML body.
pub(super) async fn xml(
    ex: &mut Exchange<'_>,
    status: StatusCode,
    body: Vec<u8>,
) -> Result<(), weir::Error> {
    ex.respond(status)
        .header("x-amz-request-id", request_id())
        .header("content-type", "application/xml")
        .body(body)
        .await
}

/// Answers `status` with no body, and `headers`.
pub(super) async fn empty(
    ex: &mut Exchange<'_>,
    status: StatusCode,
    headers: &[(&str, &str)],
) -> Result<(), weir::Error> {
    let mut response = ex.respond(status).header("x-amz-request-id", request_id());
    for (name, value) in headers {
        response = response.header(*name, *value);
    }
    response.empty().await
}

/// What a key that is missing is called in the error (`NoSuchKey` or `NoSuchBucket`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Missing {
    Key,
    Bucket,
}

/// The S3 error for a store error (the one mapping every S3 route uses); `missing` names what
/// a `NotFound` means here.
pub(super) fn store_error(e: &StoreError, missing: Missing) -> S3Error {
    let message = || e.to_string();
    match e {
        StoreError::NotFound => match missing {
            Missing::Key => S3Error::from_code(ErrorCode::NoSuchKey),
            Missing::Bucket => S3Error::from_code(ErrorCode::NoSuchBucket),
        },
        StoreError::InvalidPath(_) => S3Error::new(ErrorCode::InvalidArgument, message()),
        StoreError::DigestMismatch { .. } => S3Error::from_code(ErrorCode::BadDigest),
        StoreError::DigestUnavailable { .. } => S3Error::new(ErrorCode::InvalidArgument, message()),
        StoreError::LengthMismatch { .. } => S3Error::new(ErrorCode::IncompleteBody, message()),
        StoreError::PreconditionFailed => S3Error::from_code(ErrorCode::PreconditionFailed),
        StoreError::IsDirectory | StoreError::NotADirectory | StoreError::DuplicatePath { .. } => {
            // weir's stores are file trees: `a` cannot be an object and a folder of `a/b`.
            S3Error::new(
                ErrorCode::InvalidRequest,
                format!(
                    "{}: in weir a key cannot be both an object and a prefix of other keys                      followed by /",
                    message()
                ),
            )
        }
        StoreError::DirectoryNotEmpty => S3Error::from_code(ErrorCode::BucketNotEmpty),
        StoreError::SymlinkRefused => S3Error::new(ErrorCode::AccessDenied, message()),
        StoreError::NoSpace | StoreError::QuotaExceeded { .. } => {
            S3Error::new(ErrorCode::EntityTooLarge, message())
        }
        StoreError::Backend { .. } => S3Error::new(ErrorCode::SlowDown, message()),
        _ => S3Error::new(ErrorCode::InternalError, message()),
    }
}

/// Why an upload's body (PutObject's, UploadPart's) did not make it: the body path's own
/// failure, or an S3 check on the bytes (a chunk signature, a checksum).
pub(super) enum Failure {
    Body(BodyFailure),
    S3(S3Error),
}

impl From<BodyFailure> for Failure {
    fn from(f: BodyFailure) -> Self {
        Failure::Body(f)
    }
}

impl Failure {
    /// The S3 error a failure is answered with (a store's through [`store_error`]).
    pub(super) fn into_s3(self) -> S3Error {
        match self {
            Failure::S3(e) => e,
            Failure::Body(BodyFailure::Store(e)) => store_error(&e, Missing::Key),
            Failure::Body(BodyFailure::Body(e)) if e.is_too_large() => {
                S3Error::from_code(ErrorCode::EntityTooLarge)
            }
            Failure::Body(BodyFailure::Body(e)) => {
                S3Error::new(ErrorCode::IncompleteBody, e.to_string())
            }
        }
    }
}
