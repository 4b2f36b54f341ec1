//! Resumable uploads (draft-ietf-httpbis-resumable-upload, interop version 8) with
//! `--store s3://`: the protocol of `resumable.rs` over `weir_store::S3Resumables`, whose state
//! lives in the bucket, so that every node behind a load balancer can take any request of an
//! upload: created through one, `HEAD`ed, appended to and completed through others.
//!
//! | request | answer |
//! | --- | --- |
//! | `PUT /files/{path}` (or `POST /files/{dir}/` with `Content-Disposition`) with `Upload-Complete` | `104` with `Location` before the body; then as `resumable.rs` |
//! | `HEAD /uploads/{id}` | once no append holds the upload (waits up to 10 s for its lease to end or lapse, else `503` + `Retry-After`): `204`, `Upload-Offset` (the recorded offset), `Upload-Length`, `Upload-Limit` |
//! | `PATCH /uploads/{id}` | appends from the recorded offset; an append running on any node: `409` (`upload-busy`); `?1` completes (the `PUT` answer) |
//! | `DELETE /uploads/{id}` | `204`: the multipart upload aborted, the upload's objects removed |
//!
//! What differs from the local store's resumable uploads: the offset advances a part at a time
//! while a request runs (a part is recorded once the store acknowledged it; the `104`s say so),
//! and at the end of every request (complete or cut) to every byte received; a node killed
//! mid-request loses the bytes past its last recorded part (at most `part_size ×
//! (parts_in_flight + 1)`), which the client resends after its `HEAD`. The whole upload is
//! hashed once, from the SHA-256 state kept in the manifest. A `Repr-Digest` must carry
//! `sha-256`; `sha-512` alone cannot be checked without reading the object back (400). The
//! digest may also come as a trailer of the request that completes the upload (as locally,
//! `resumable.rs`'s `trailer_digest`; `weir put` sends it so): checked against the SHA-256
//! finalized from the kept state before the completion writes anything. A completed upload's
//! resource answers `Upload-Complete: ?1` until it expires, as locally.
//!
//! The creating request's preconditions (`If-None-Match: *`, `If-Match`,
//! `If-Unmodified-Since`) are judged before the upload is created (`412`, nothing created) and
//! kept in its manifest; the request that completes it, through any node, has them judged
//! again against the object there then, atomically with the completion's write
//! (`S3Append::finish_checked`, the store's conditional write): another writer that created
//! the target meanwhile makes the completion `412`, nothing replaced, the upload removed.

use super::auth::{Access, Caller, Verdict};
use super::preconditions;
use super::reply::{self, Problem, hex};
use super::resumable::{
    INTEROP_VERSION, PREFIX, announce_offset, answer_append_failed, answer_completed,
    answer_incomplete, check_sizes, expected_digest, integer, limits_with_age, problem,
    request_length, upload_complete,
};
use super::service::Service;
use super::upload::{self, BodyFailure};
use http::StatusCode;
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use weir::{Exchange, http};
use weir_store::{
    ContentDigest, FileMeta, ResumableError, S3AppendEnd, S3Creation, S3Resumables, S3UploadState,
    StoreError, StorePath, VersionCheck,
};

/// The longest a `HEAD` waits for an append's lease to end (see the module doc).
pub(super) const HEAD_WAIT: Duration = Duration::from_secs(10);

fn max_age(state: Option<&S3UploadState>, ups: &S3Resumables) -> u64 {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    state.map_or(ups.options().expiry.as_secs(), |s| {
        s.expires.saturating_sub(now)
    })
}

/// `PUT /files/{path}` with `Upload-Complete`: creates the upload in the bucket, announces it
/// (104), then receives the body as its first append.
pub(super) async fn create(
    svc: &Service,
    ups: &S3Resumables,
    ex: &mut Exchange<'_>,
    path: StorePath,
    complete: bool,
) -> Result<(), weir::Error> {
    let length = match request_length(ex, complete, 0, None) {
        Ok(l) => l,
        Err((kind, message)) => {
            return problem(ex, kind, message, serde_json::Value::Null, &[]).await;
        }
    };
    if let Err((kind, message)) = check_sizes(svc, ex, 0, complete, length) {
        let limit = limits_with_age(svc, max_age(None, ups));
        return reply::error(ex, kind, &message, &[("upload-limit", &limit)]).await;
    }
    let digest = match expected_digest(ex, complete) {
        Ok(Some(text)) => match ContentDigest::parse(&text) {
            Ok(d) if d.sha256.is_some() && d.sha512.is_none() => Some(d),
            Ok(_) => {
                let message = "with this store (--store s3://) a resumable upload's digest is \
                               checked as sha-256 only: send Repr-Digest: sha-256=:...:";
                return reply::error(ex, Problem::BadRequest, message, &[]).await;
            }
            Err(e) => return reply::error(ex, Problem::BadRequest, &e.to_string(), &[]).await,
        },
        Ok(None) => None,
        Err(message) => return reply::error(ex, Problem::BadRequest, &message, &[]).await,
    };
    // The preconditions: judged now against the object there (412 before anything is
    // created, as for a plain `PUT`), kept to be judged again at the completion.
    let condition = match preconditions::write_condition(ex.request()) {
        Ok(c) => c,
        Err(message) => return reply::error(ex, Problem::BadRequest, message, &[]).await,
    };
    if let (false, Some(store)) = (condition.is_empty(), svc.remote.as_deref()) {
        match super::remote::current(store, &path).await {
            Ok(meta) if preconditions::hold(ex.request(), meta.as_ref()) => {}
            Ok(_) => return preconditions::failed(ex).await,
            Err(e) => return reply::store_error(ex, &e).await,
        }
    }
    let media_type = super::mime::of_request(ex).filter(|t| !super::mime::is_upload_framing(t));
    let creation = S3Creation {
        length,
        digest: digest.as_ref(),
        media_type: media_type.as_ref(),
        metadata: None,
        condition: &condition,
    };
    let (id, state) = match ups.create_with(&path, creation).await {
        Ok(made) => made,
        Err(e) => return reply::store_error(ex, &e).await,
    };
    // ALLOCATION: the upload's URL, once per upload.
    let location = format!("{PREFIX}{id}");
    let limit = limits_with_age(svc, max_age(Some(&state), ups));
    ex.send_informational(
        StatusCode::from_u16(104).unwrap_or(StatusCode::CONTINUE),
        &[
            ("location", location.as_bytes()),
            ("upload-limit", limit.as_bytes()),
            ("upload-draft-interop-version", INTEROP_VERSION.as_bytes()),
        ],
    )
    .await?;
    receive(svc, ups, ex, &id, 0, complete, length, Some(&location)).await
}

/// `POST /files/{dir}/` with `Upload-Complete`: the file named by `Content-Disposition`, as
/// `resumable::create_in`.
pub(super) async fn create_in(
    svc: &Service,
    ups: &S3Resumables,
    ex: &mut Exchange<'_>,
    dir: Option<StorePath>,
    complete: bool,
) -> Result<(), weir::Error> {
    let named = match ex.request().header_str("content-disposition") {
        Some(value) => super::multipart::request_filename(value).map_err(|e| e.0),
        None => Ok(None),
    };
    let path = match named {
        Ok(Some(name)) => super::form::file_in(dir.as_ref(), &name),
        Ok(None) => Err(
            "a resumable POST names its file: Content-Disposition: inline; filename=\"NAME\" \
             (or PUT /files/{path})",
        ),
        Err(e) => Err(e),
    };
    match path {
        Ok(path) => create(svc, ups, ex, path, complete).await,
        Err(message) => reply::error(ex, Problem::BadRequest, message, &[]).await,
    }
}

/// Routes `/uploads/{id}`. `caller` has write access (checked before); one confined to a
/// prefix is judged here on the upload's recorded target.
pub(super) async fn serve(
    svc: &Service,
    ups: &S3Resumables,
    ex: &mut Exchange<'_>,
    id: &str,
    caller: Caller<'_>,
) -> Result<(), weir::Error> {
    let method = ex.request().method().clone();
    if !matches!(
        method,
        http::Method::HEAD | http::Method::PATCH | http::Method::DELETE
    ) {
        let allow = [("allow", "HEAD, PATCH, DELETE")];
        let message = "method not allowed here";
        return reply::error(ex, Problem::MethodNotAllowed, message, &allow).await;
    }
    if caller.confined() {
        match ups.state(id).await {
            Ok(Some(s)) => match caller.check(Access::Write, Some(s.target.as_str())) {
                Verdict::Allowed => {}
                Verdict::Unauthorized => return super::service::unauthorized(ex).await,
                Verdict::Forbidden => return super::service::forbidden(ex).await,
            },
            Ok(None) => return reply::error(ex, Problem::NotFound, "no such upload", &[]).await,
            Err(e) => return reply::store_error(ex, &e).await,
        }
    }
    match method {
        http::Method::HEAD => offset(svc, ups, ex, id).await,
        http::Method::PATCH => append(svc, ups, ex, id).await,
        _ => match ups.cancel(id).await {
            Ok(()) => {
                ex.respond(StatusCode::NO_CONTENT)
                    .header("upload-draft-interop-version", INTEROP_VERSION)
                    .empty()
                    .await
            }
            Err(e) => refused(ex, ups, id, e).await,
        },
    }
}

/// `HEAD /uploads/{id}`: the recorded offset, once no append holds the upload.
async fn offset(
    svc: &Service,
    ups: &S3Resumables,
    ex: &mut Exchange<'_>,
    id: &str,
) -> Result<(), weir::Error> {
    let state = match ups.settled_state(id, HEAD_WAIT).await {
        Ok(s) => s,
        Err(ResumableError::Busy) => {
            let message = "an append to this upload is still running";
            let headers = [("retry-after", "1")];
            return reply::error(ex, Problem::Unavailable, message, &headers).await;
        }
        Err(e) => return refused(ex, ups, id, e).await,
    };
    let limit = limits_with_age(svc, max_age(Some(&state), ups));
    let mut r = ex
        .respond(StatusCode::NO_CONTENT)
        .header_display("upload-offset", state.offset)
        .header("upload-complete", if state.complete { "?1" } else { "?0" })
        .header("upload-limit", limit)
        .header("cache-control", "no-store")
        .header("upload-draft-interop-version", INTEROP_VERSION);
    if let Some(len) = state.length {
        r = r.header_display("upload-length", len);
    }
    r.empty().await
}

/// `PATCH /uploads/{id}`.
async fn append(
    svc: &Service,
    ups: &S3Resumables,
    ex: &mut Exchange<'_>,
    id: &str,
) -> Result<(), weir::Error> {
    let partial = ex.request().header("content-type").is_some_and(|v| {
        let media = v.split(|&b| b == b';').next().unwrap_or_default();
        media
            .trim_ascii()
            .eq_ignore_ascii_case(b"application/partial-upload")
    });
    if !partial {
        let message = "an append needs Content-Type: application/partial-upload";
        return reply::error(ex, Problem::UnsupportedMediaType, message, &[]).await;
    }
    let (Some(claimed), Some(complete)) = (integer(ex, "upload-offset"), upload_complete(ex))
    else {
        let message = "an append needs valid Upload-Offset and Upload-Complete fields";
        return reply::error(ex, Problem::BadRequest, message, &[]).await;
    };
    if ex.request().header_all("content-digest").next().is_some() {
        let message = "Content-Digest on an append is not supported: send Repr-Digest (the \
                       digest of the whole upload) when creating it";
        return reply::error(ex, Problem::BadRequest, message, &[]).await;
    }
    let state = match ups.state(id).await {
        Ok(Some(s)) => s,
        Ok(None) => return reply::error(ex, Problem::NotFound, "no such upload", &[]).await,
        Err(e) => return reply::store_error(ex, &e).await,
    };
    if state.complete {
        return refused(ex, ups, id, ResumableError::Completed).await;
    }
    let length = match request_length(ex, complete, claimed, state.length) {
        Ok(l) => l,
        Err((kind, message)) => {
            return problem(ex, kind, message, serde_json::Value::Null, &[]).await;
        }
    };
    if let Err((kind, message)) = check_sizes(svc, ex, claimed, complete, length) {
        let limit = limits_with_age(svc, max_age(Some(&state), ups));
        return reply::error(ex, kind, &message, &[("upload-limit", &limit)]).await;
    }
    // The offset is checked against the manifest under the lease (`S3Resumables::append`).
    receive(svc, ups, ex, id, claimed, complete, length, None).await
}

/// Takes the upload's lease at `offset`, streams the body into it (a `104` per recorded part),
/// ends it and answers.
#[allow(clippy::too_many_arguments)]
async fn receive(
    svc: &Service,
    ups: &S3Resumables,
    ex: &mut Exchange<'_>,
    id: &str,
    offset: u64,
    complete: bool,
    length: Option<u64>,
    location: Option<&str>,
) -> Result<(), weir::Error> {
    let mut appending = match ups.append(id, offset, length).await {
        Ok(a) => a,
        Err(e) => return refused(ex, ups, id, e).await,
    };
    let max = svc.options.max_upload;
    loop {
        match ex.read_body_chunk().await {
            Ok(Some(chunk)) => {
                // Waits while the store is busy with earlier parts: the backpressure.
                match appending.write(&chunk).await {
                    Ok(Some(recorded)) => announce_offset(ex, recorded).await?,
                    Ok(None) => {}
                    Err(e) => {
                        // Dropping the append releases its lease; the manifest keeps the last
                        // recorded state, from which the client resumes.
                        drop(appending);
                        if matches!(e, StoreError::PreconditionFailed) {
                            // The manifest changed under this request: its lease was taken
                            // over (this node stalled past it) or the upload was cancelled.
                            return refused(ex, ups, id, ResumableError::Busy).await;
                        }
                        return reply::store_error(ex, &e).await;
                    }
                }
            }
            Ok(None) => break,
            Err(e) => {
                // Keep and record what arrived: the client resumes from there.
                if let Err(e) = appending.finish(false).await {
                    tracing::warn!(upload = %id, error = %e, "resumable upload: recording a cut append failed");
                }
                return BodyFailure::Body(e).answer(ex, max).await;
            }
        }
    }
    let internals = upload::wants_internals(ex);
    let stats = ex.body_stats();
    let state = appending.state();
    if complete {
        // The whole upload's digest as a trailer of this last request: checked at the
        // completion, with the one given at creation, against the SHA-256 of every byte.
        let trailer =
            super::resumable::trailer_digest(ex, offset, state.expected_digest.as_deref())
                .and_then(|d| match d {
                    Some(d) => appending.expect_digest(&d).map_err(|e| e.to_string()),
                    None => Ok(()),
                });
        if let Err(message) = trailer {
            // Nothing is completed; what arrived is kept, as for a cut request.
            if let Err(e) = appending.finish(false).await {
                tracing::warn!(upload = %id, error = %e, "resumable upload: recording an append failed");
            }
            return reply::error(ex, Problem::BadRequest, &message, &[]).await;
        }
    }
    // The creating request's preconditions, judged again against the object there now,
    // atomically with the completion's write.
    let kept = |meta: Option<&FileMeta>| preconditions::kept_hold(&state.condition, meta);
    let check: Option<VersionCheck<'_>> = if state.condition.is_empty() {
        None
    } else {
        Some(&kept)
    };
    let target = &state.target;
    match appending.finish_checked(complete, check).await {
        Ok(S3AppendEnd::Incomplete(state)) => {
            let limit = limits_with_age(svc, max_age(Some(&state), ups));
            let stats = internals.then(|| upload::body_stats_json(&stats));
            answer_incomplete(ex, location, state.offset, limit, stats).await
        }
        Ok(S3AppendEnd::Completed(committed)) => {
            svc.on_stored(target.as_str(), &committed);
            let mut body = serde_json::json!({
                "path": target.as_str(),
                "size": committed.size,
                "sha256": committed.sha256.map(|d| hex(&d)),
                "replaced": committed.replaced,
                "upload": format!("{PREFIX}{id}"),
            });
            if internals {
                body["body"] = upload::body_stats_json(&stats);
            }
            let etag = super::preconditions::etag(&committed.stored);
            answer_completed(ex, committed.replaced, body, Some(etag)).await
        }
        Err(e) => answer_append_failed(ex, e).await,
    }
}

/// Answers a refusal of the bucket's resumable layer.
async fn refused(
    ex: &mut Exchange<'_>,
    ups: &S3Resumables,
    id: &str,
    e: ResumableError,
) -> Result<(), weir::Error> {
    match e {
        ResumableError::Unknown => reply::error(ex, Problem::NotFound, "no such upload", &[]).await,
        ResumableError::Completed => {
            // As `resumable.rs` answers it.
            let has_content = ex.request().content_length() != Some(0)
                || ex.request().header("transfer-encoding").is_some();
            let (kind, message) = if has_content {
                (
                    Problem::DraftInconsistentLength,
                    "upload is already completed: no more content fits",
                )
            } else {
                (Problem::DraftCompletedUpload, "upload is already completed")
            };
            let headers = [("upload-complete", "?1")];
            problem(ex, kind, message, serde_json::Value::Null, &headers).await
        }
        ResumableError::Busy => {
            let offset = ups
                .state(id)
                .await
                .ok()
                .flatten()
                .map_or(0, |s| s.offset)
                .to_string();
            let message = "another request is appending to this upload";
            let headers = [("upload-offset", offset.as_str())];
            problem(
                ex,
                Problem::UploadBusy,
                message,
                serde_json::Value::Null,
                &headers,
            )
            .await
        }
        ResumableError::OffsetMismatch { expected, provided } => {
            let offset = expected.to_string();
            let headers = [("upload-offset", offset.as_str())];
            let extra = serde_json::json!({
                "expected-offset": expected,
                "provided-offset": provided,
            });
            let message = "offset from request does not match offset of resource";
            let kind = Problem::DraftMismatchingOffset;
            problem(ex, kind, message, extra, &headers).await
        }
        ResumableError::Store(e) => reply::store_error(ex, &e).await,
    }
}
