//! Resumable uploads (draft-ietf-httpbis-resumable-upload-12, interop version 8): one route
//! generic over weir-store's `ResumableStore` (static dispatch), instantiated by `service.rs`
//! with whichever store the service has: `Resumables` (local) or `S3Resumables`
//! (`--store s3://`, state in the bucket: any node continues any upload).
//!
//! Where the stores differ, the trait says so: the local append is a file
//! (`ResumableAppend::file`: the body paths, checkpoints and `104`s below); in a bucket the
//! chunks go through `ResumableAppend::write`, a `104` per recorded part. Per store too
//! (`ResumableStore`'s constants): the creation's type kept in the record (local) or by the
//! store; a `Repr-Digest` checked as `sha-256` only (bucket); the client's offset compared with
//! the state before the length checks (local) or at the append under the lease (bucket); the
//! `ETag` in the completion's answer (bucket); a prefix token judged before the method, an
//! unreadable upload let through (local), or after it, an unknown upload a 404 (bucket).
//!
//! | request | answer |
//! | --- | --- |
//! | `PUT /files/{path}` with `Upload-Complete`, or `POST /files/{dir}/` with it and `Content-Disposition: inline; filename="NAME"` (not a form) for `{dir}/NAME` | creates `/uploads/{id}`, announced by a `104` before the body is read; the body is its first bytes. `?1` and the whole body: stored like a `PUT` (201/200 + JSON, `Upload-Complete: ?1`). `?0`: `201`, `Location`, `Upload-Offset` |
//! | `HEAD /uploads/{id}` | (once no append runs) `204`, `Upload-Offset`, `Upload-Complete`, `Upload-Length` (if known), `Upload-Limit`, `Cache-Control: no-store` |
//! | `PATCH /uploads/{id}` (`application/partial-upload`, `Upload-Offset`, `Upload-Complete`) | appends; `?1` completes (the `PUT` answer); `?0`: `204` + `Upload-Offset` |
//! | `DELETE /uploads/{id}` | `204`, the partial data removed |
//!
//! Refusals: an unknown id 404; an offset that is not the upload's 409 with the right
//! `Upload-Offset` and the `mismatching-upload-offset` problem; an append to a completed
//! upload 400 (`completed-upload`, or `inconsistent-upload-length` when it has content);
//! lengths that disagree 400 (`inconsistent-upload-length`); an append while another runs 409
//! (the draft's "simpler approach": one writer at a time; the first's lock goes when its
//! request ends, which a dropped connection does); sizes past `Upload-Limit` 413 with the
//! limits.
//!
//! The body of a creation or append takes the same data paths as a `PUT` (`upload.rs`):
//! splice with `--no-hash`, direct reads into pooled buffers otherwise, the same pause
//! threshold. Every request hashes while receiving, as a `PUT` does (inline, then on a hashing
//! thread): the creation from the start, a resumed append from the SHA-256 state the store
//! kept with the offset, so completion reads nothing back and the digest (and `Repr-Digest`,
//! or the `Content-Digest` of a creation that carried the whole representation) covers every
//! byte however many requests brought them. Without a kept state (see `weir_store`'s
//! `resumable.rs`) the digest is computed at completion by reading the file back. Every
//! [`weir_store::CHECKPOINT_BYTES`] and at the end of every request (complete or cut), the
//! data is fdatasynced and its length recorded as the offset, with the hash state of exactly
//! those bytes. Inside a request the checkpoint runs on the blocking pool while the connection
//! goes on receiving ([`AppendCheckpoints`]: one out at a time; the hashing thread hands over
//! its state as it passes the offset, `hasher.rs`), and is announced in an interim `104` with
//! that `Upload-Offset` once recorded, with the next piece of the body or before the final
//! answer (draft §4.3's progress; [`announce_offset`]). The end of a request waits for it, then
//! records its own offset under `block_in_place`.
//!
//! The creating request's preconditions (`If-None-Match: *`, `If-Match`, `If-Unmodified-Since`)
//! are judged before the upload is created (`412`, nothing created), kept in its record, and
//! judged again under the store's commit lock when the upload completes
//! (`preconditions::kept_hold`, `Appending::finish_checked`): a file created at the target
//! meanwhile makes an "only if absent" upload's completion `412`, the file kept, the upload
//! removed. The same rule with `--store s3://`, where the completion's write is conditional.
//!
//! The digest of the whole upload may also come as a trailer of the request that completes it
//! (`Repr-Digest`, or the `Content-Digest` of a creation that carries all of it): verified at
//! the commit like one given at creation, so a client can hash while it sends (`weir put`).
//! Announced at creation (`Trailer:`), it makes the creation hash while receiving.

use crate::serve::auth::{Access, Caller, Verdict};
use crate::serve::body::{
    self, AppendCheckpoints, BodyFailure, WhereHashed, announce_offset, append_body,
    keep_media_type,
};
use crate::serve::preconditions;
use crate::serve::reply::{self, Problem, hex};
use crate::serve::service::{NoUploads, Service};
use http::StatusCode;
use weir::{Exchange, http};
use weir_proto::upload_fields::{self, UploadLimits};
use weir_store::{
    ContentDigest, FileMeta, LocalAppend, ResumableAppend, ResumableCreation, ResumableEnd,
    ResumableError, ResumableStore, StoreError, StorePath, UploadState, VersionCheck,
};

pub(in crate::serve) use fields::{check_sizes, integer, request_length, upload_complete};

mod digests;
mod fields;
pub(in crate::serve) use digests::{announces_trailer_digest, expected_digest, trailer_digest};

pub(crate) use crate::serve::body::INTEROP_VERSION;

/// Where upload resources live.
pub(crate) const PREFIX: &str = "/uploads/";

/// The resumable route on a service without resumable uploads, for the reason the router
/// found: `503` when not enabled, `501` (`not-implemented`) with `--store s3://` without them.
pub(in crate::serve) async fn unavailable(
    ex: &mut Exchange<'_>,
    why: NoUploads,
) -> Result<(), weir::Error> {
    #[cfg(feature = "s3")]
    if why == NoUploads::NotWithThisStore {
        return crate::serve::service::not_implemented(ex, "a resumable upload").await;
    }
    let _ = why;
    let message = "resumable uploads are not available on this server";
    reply::error(ex, Problem::Unavailable, message, &[]).await
}

/// The `Upload-Limit` value for `state` (`None`: a new upload's).
fn limits<S: ResumableStore>(svc: &Service, store: &S, state: Option<&S::State>) -> String {
    limits_with_age(
        svc,
        state.map_or(store.expiry().as_secs(), |s| store.max_age(s)),
    )
}

/// The `Upload-Limit` value, with `max-age` in seconds (also the S3 store's uploads').
pub(in crate::serve) fn limits_with_age(svc: &Service, max_age: u64) -> String {
    let opts = &svc.resumable_options;
    let limits = UploadLimits {
        max_size: Some(svc.options.max_upload),
        min_size: None,
        max_append_size: Some(opts.max_append.unwrap_or(svc.options.max_upload)),
        min_append_size: opts.min_append,
        max_age: Some(max_age),
    };
    // ALLOCATION: one short header value per answer about an upload; not on a data path.
    // Sized for all five members at their largest, so that it does not grow.
    let mut out = String::with_capacity(160);
    upload_fields::write_limits(&limits, &mut out);
    out
}

/// Sends `problem` (its type may be one of the draft's, §9) with extension members (`extra`,
/// an object or null) and extra headers, and the draft's interop version.
pub(in crate::serve) async fn problem(
    ex: &mut Exchange<'_>,
    problem: Problem,
    message: &str,
    extra: serde_json::Value,
    headers: &[(&str, &str)],
) -> Result<(), weir::Error> {
    // ALLOCATION: the few header pairs of an error answer; not on a data path.
    let mut all = Vec::with_capacity(headers.len() + 1);
    all.extend_from_slice(headers);
    all.push(("upload-draft-interop-version", INTEROP_VERSION));
    let status = problem.status();
    reply::error_with_status(ex, problem, status, message, extra, &all).await
}

/// `PUT /files/{path}` with `Upload-Complete`: creates the upload resource, announces it
/// (104), then receives the body as its first append.
pub(in crate::serve) async fn create<S: ResumableStore>(
    svc: &Service,
    store: &S,
    ex: &mut Exchange<'_>,
    path: StorePath,
    complete: bool,
) -> Result<(), weir::Error> {
    let length = match request_length(ex, complete, 0, None) {
        Ok(l) => l,
        Err((kind, message)) => {
            let none = serde_json::Value::Null;
            return problem(ex, kind, message, none, &[]).await;
        }
    };
    if let Err((kind, message)) = check_sizes(svc, ex, 0, complete, length) {
        let limit = limits(svc, store, None);
        return reply::error(ex, kind, &message, &[("upload-limit", &limit)]).await;
    }
    // The whole representation's digests: `Repr-Digest`, or the `Content-Digest` of a request
    // that says it carries all of it. A `Content-Digest` of part of it cannot be checked here.
    let digest = match expected_digest(ex, complete) {
        Ok(Some(text)) => match ContentDigest::parse(&text) {
            Ok(d) if !S::DIGEST_SHA256_ONLY || (d.sha256.is_some() && d.sha512.is_none()) => {
                Some(d)
            }
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
    // The preconditions: judged now against the file there (412 before anything is created,
    // as for a plain `PUT`), kept to be judged again at the completion.
    let condition = match preconditions::write_condition(ex.request()) {
        Ok(c) => c,
        Err(message) => return reply::error(ex, Problem::BadRequest, message, &[]).await,
    };
    match hold_at_creation(svc, ex, &path).await {
        Ok(true) => {}
        Ok(false) => return preconditions::failed(ex).await,
        Err(e) => return reply::store_error(ex, &e).await,
    }
    // The creation's `Content-Type` is the file's: set by the store at completion, or (the
    // local store) kept in the record as tus keeps its type (`filetype` in `Upload-Metadata`)
    // and set on the file before the completion (`keep_media_type`).
    let media_type =
        crate::serve::mime::of_request(ex).filter(|t| !crate::serve::mime::is_upload_framing(t));
    let metadata = media_type
        .as_ref()
        .filter(|_| !S::KEEPS_MEDIA_TYPE)
        .map(|t| {
            // ALLOCATION: the record's metadata line, once per creation that has a type.
            let mut m = String::from("filetype ");
            crate::serve::base64::encode_into(t.as_str().as_bytes(), &mut m);
            m
        });
    // A digest announced to follow the body is verified at completion from the hash taken
    // while receiving, as for a `PUT` (`upload.rs`), rather than by reading the file back.
    let creation = ResumableCreation {
        length,
        digest: digest.as_ref(),
        media_type: media_type.as_ref(),
        metadata: metadata.as_deref(),
        condition: &condition,
        hash: svc.options.hash || announces_trailer_digest(ex),
    };
    let (id, state) = match store.create(&path, creation).await {
        Ok(made) => made,
        Err(e) => return reply::store_error(ex, &e).await,
    };
    // ALLOCATION: the upload's URL, once per upload.
    let location = format!("{PREFIX}{id}");
    let limit = limits(svc, store, Some(&state));
    ex.send_informational(
        StatusCode::from_u16(104).unwrap_or(StatusCode::CONTINUE),
        &[
            ("location", location.as_bytes()),
            ("upload-limit", limit.as_bytes()),
            ("upload-draft-interop-version", INTEROP_VERSION.as_bytes()),
        ],
    )
    .await?;
    let at = (0, complete, length);
    receive(svc, store, ex, &id, at, Some(&location)).await
}

/// The creating request's preconditions against the file at `path` now, in the service's file
/// store (`preconditions::hold_now`: a file that cannot be read counts as holding, a bucket
/// that cannot be read is its error).
async fn hold_at_creation(
    svc: &Service,
    ex: &mut Exchange<'_>,
    path: &StorePath,
) -> Result<bool, StoreError> {
    crate::serve::service::with_files!(svc, s => preconditions::hold_now(s, ex.request(), path).await)
}

/// The resumable creation of a `PUT /files/{path}` (`target` a file) or a `POST /files/{dir}/`
/// ([`create`], [`create_in`]): `service.rs` dispatches both here once.
pub(in crate::serve) async fn create_at<S: ResumableStore>(
    svc: &Service,
    store: &S,
    ex: &mut Exchange<'_>,
    target: crate::serve::target::Target,
    complete: bool,
) -> Result<(), weir::Error> {
    use crate::serve::target::Target;
    let post = *ex.request().method() == http::Method::POST;
    match target {
        Target::File(p) if !post => create(svc, store, ex, p, complete).await,
        Target::Root => create_in(svc, store, ex, None, complete).await,
        Target::Dir(p) | Target::File(p) => create_in(svc, store, ex, Some(p), complete).await,
    }
}

/// Whether a `POST` to a directory is a resumable upload creation: a valid `Upload-Complete`
/// and a body that is not a form (a `multipart/form-data` POST keeps its meaning: the draft lets
/// a resource ignore `Upload-Complete`, and a form is stored whole). `Some(complete)` if so.
pub(in crate::serve) fn post_creation(ex: &Exchange<'_>) -> Option<bool> {
    let form = ex.request().header_str("content-type").is_some_and(|t| {
        t.split(';')
            .next()
            .is_some_and(|m| m.trim().eq_ignore_ascii_case("multipart/form-data"))
    });
    if form { None } else { upload_complete(ex) }
}

/// `POST /files/{dir}/` with `Upload-Complete` (draft §4.2: any method with content creates an
/// upload): the file is `{dir}/{filename}`, the name taken from `Content-Disposition` (RFC
/// 6266, `filename*` before `filename`, as the draft recommends with `inline`); then as
/// [`create`]. No file name: 400, nothing created.
pub(in crate::serve) async fn create_in<S: ResumableStore>(
    svc: &Service,
    store: &S,
    ex: &mut Exchange<'_>,
    dir: Option<StorePath>,
    complete: bool,
) -> Result<(), weir::Error> {
    let named = match ex.request().header_str("content-disposition") {
        Some(value) => crate::serve::multipart::request_filename(value).map_err(|e| e.0),
        None => Ok(None),
    };
    let path = match named {
        Ok(Some(name)) => crate::serve::target::file_in(dir.as_ref(), &name),
        Ok(None) => Err(
            "a resumable POST names its file: Content-Disposition: inline; filename=\"NAME\" \
             (or PUT /files/{path})",
        ),
        Err(e) => Err(e),
    };
    match path {
        Ok(path) => create(svc, store, ex, path, complete).await,
        Err(message) => reply::error(ex, Problem::BadRequest, message, &[]).await,
    }
}

/// `OPTIONS /files/...` or `OPTIONS *`: `Accept-Patch: application/partial-upload` and the
/// limits (`limit`: a new upload's `Upload-Limit`, [`new_limits`]; `None` without resumable
/// uploads), for clients that discover resumable uploads first (draft §4.1.4).
pub(in crate::serve) async fn options(
    ex: &mut Exchange<'_>,
    limit: Option<String>,
) -> Result<(), weir::Error> {
    let mut r = ex
        .respond(StatusCode::NO_CONTENT)
        .header("allow", "GET, HEAD, PUT, POST, DELETE, OPTIONS")
        .header("upload-draft-interop-version", INTEROP_VERSION);
    if let Some(limit) = limit {
        r = r
            .header("accept-patch", "application/partial-upload")
            .header("upload-limit", limit);
    }
    r.empty().await
}

/// The `Upload-Limit` of a new upload in `store`, for [`options`].
pub(in crate::serve) fn new_limits<S: ResumableStore>(svc: &Service, store: &S) -> String {
    limits(svc, store, None)
}

/// Routes `/uploads/{id}` to the uploads of `store`. `caller` has write access (checked
/// before); one confined to a prefix is judged here on the upload's recorded target: locally
/// before the method, an upload that cannot be read left to the route's own answers; in a
/// bucket after it, such an upload a 404 (or the store's error) at once
/// (`ResumableStore::JUDGES_CONFINED_FIRST`).
pub(in crate::serve) async fn serve<S: ResumableStore>(
    svc: &Service,
    store: &S,
    ex: &mut Exchange<'_>,
    raw_id: &str,
    caller: Caller<'_>,
) -> Result<(), weir::Error> {
    let Some(id) = store.parse_id(raw_id) else {
        return reply::error(ex, Problem::NotFound, "no such upload", &[]).await;
    };
    if !S::JUDGES_CONFINED_FIRST && !admitted(store, ex, &id, caller).await? {
        return Ok(());
    }
    let method = ex.request().method().clone();
    if !matches!(
        method,
        http::Method::HEAD | http::Method::PATCH | http::Method::DELETE
    ) {
        let allow = [("allow", "HEAD, PATCH, DELETE")];
        let message = "method not allowed here";
        return reply::error(ex, Problem::MethodNotAllowed, message, &allow).await;
    }
    if S::JUDGES_CONFINED_FIRST && !admitted(store, ex, &id, caller).await? {
        return Ok(());
    }
    match method {
        http::Method::HEAD => offset(svc, store, ex, &id).await,
        http::Method::PATCH => append(svc, store, ex, &id).await,
        _ => match store.cancel(&id).await {
            Ok(()) => {
                ex.respond(StatusCode::NO_CONTENT)
                    .header("upload-draft-interop-version", INTEROP_VERSION)
                    .empty()
                    .await
            }
            Err(e) => refused(ex, store, &id, e).await,
        },
    }
}

/// A caller confined to a prefix judged on the upload's target: `false` when refused
/// (answered). See [`serve`].
async fn admitted<S: ResumableStore>(
    store: &S,
    ex: &mut Exchange<'_>,
    id: &S::Id,
    caller: Caller<'_>,
) -> Result<bool, weir::Error> {
    if !caller.confined() {
        return Ok(true);
    }
    let verdict = match store.state(id).await {
        Ok(Some(s)) => caller.check(Access::Write, Some(s.target().as_str())),
        Ok(None) | Err(_) if !S::JUDGES_CONFINED_FIRST => Verdict::Allowed,
        Ok(None) => {
            reply::error(ex, Problem::NotFound, "no such upload", &[]).await?;
            return Ok(false);
        }
        Err(e) => {
            reply::store_error(ex, &e).await?;
            return Ok(false);
        }
    };
    match verdict {
        Verdict::Allowed => return Ok(true),
        Verdict::Unauthorized => crate::serve::service::unauthorized(ex).await?,
        Verdict::Forbidden => crate::serve::service::forbidden(ex).await?,
    }
    Ok(false)
}

/// `HEAD /uploads/{id}`: the offset, as recorded (durable).
///
/// Draft §4.5: an offset the server sends must be accepted by the next append. While an append
/// runs, the recorded offset is outdated (that append still adds bytes, and its lock or lease
/// would refuse a `PATCH`), so the answer waits for it to end (`ResumableStore::settled_state`,
/// as tus's `HEAD`): the draft's "simpler approach", one request at a time. A cut append ends
/// as soon as the server sees its connection go (in a bucket, at the latest when its lease
/// lapses); one that still holds the upload after `weir_store::SETTLE_WAIT` gets a `503` with
/// `Retry-After` (clients retry an offset retrieval on a 5xx), never an outdated offset.
async fn offset<S: ResumableStore>(
    svc: &Service,
    store: &S,
    ex: &mut Exchange<'_>,
    id: &S::Id,
) -> Result<(), weir::Error> {
    let state = match store.settled_state(id).await {
        Ok(s) => s,
        Err(ResumableError::Busy) => {
            let message = "an append to this upload is still running";
            let headers = [("retry-after", "1")];
            return reply::error(ex, Problem::Unavailable, message, &headers).await;
        }
        Err(e) => return refused(ex, store, id, e).await,
    };
    let limit = limits(svc, store, Some(&state));
    let mut r = ex
        .respond(StatusCode::NO_CONTENT)
        .header_display("upload-offset", state.offset())
        .header(
            "upload-complete",
            if state.complete() { "?1" } else { "?0" },
        )
        .header("upload-limit", limit)
        .header("cache-control", "no-store")
        .header("upload-draft-interop-version", INTEROP_VERSION);
    if let Some(len) = state.length() {
        r = r.header_display("upload-length", len);
    }
    r.empty().await
}

/// `PATCH /uploads/{id}`.
async fn append<S: ResumableStore>(
    svc: &Service,
    store: &S,
    ex: &mut Exchange<'_>,
    id: &S::Id,
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
    let state = match store.state(id).await {
        Ok(Some(s)) => s,
        Ok(None) => return reply::error(ex, Problem::NotFound, "no such upload", &[]).await,
        Err(e) => return reply::store_error(ex, &e).await,
    };
    if state.complete() {
        return refused(ex, store, id, ResumableError::Completed).await;
    }
    // Judged again by the store as the append begins (under its lock or lease).
    if !S::OFFSET_JUDGED_AT_APPEND && claimed != state.offset() {
        let mismatch = ResumableError::OffsetMismatch {
            expected: state.offset(),
            provided: claimed,
        };
        return refused(ex, store, id, mismatch).await;
    }
    let length = match request_length(ex, complete, claimed, state.length()) {
        Ok(l) => l,
        Err((kind, message)) => {
            let none = serde_json::Value::Null;
            return problem(ex, kind, message, none, &[]).await;
        }
    };
    if let Err((kind, message)) = check_sizes(svc, ex, claimed, complete, length) {
        let limit = limits(svc, store, Some(&state));
        return reply::error(ex, kind, &message, &[("upload-limit", &limit)]).await;
    }
    receive(svc, store, ex, id, (claimed, complete, length), None).await
}

/// Takes the upload's lock (or lease) at `offset`, receives the body into it, and answers:
/// `at` is (`offset`, `complete`, the upload's length if known).
async fn receive<S: ResumableStore>(
    svc: &Service,
    store: &S,
    ex: &mut Exchange<'_>,
    id: &S::Id,
    (offset, complete, length): (u64, bool, Option<u64>),
    location: Option<&str>,
) -> Result<(), weir::Error> {
    let mut appending = match store.append(id, offset, length).await {
        Ok(a) => a,
        Err(e) => return refused(ex, store, id, e).await,
    };
    let max = svc.options.max_upload;
    // Where the body was hashed, when it went into the local store's file.
    let mut counts = None;
    let received = match appending.file() {
        Some(file) => {
            let mut hashed = WhereHashed::default();
            let received = into_file(svc, ex, file, &mut hashed).await;
            counts = Some(hashed);
            received
        }
        None => loop {
            match ex.read_body_chunk().await {
                Ok(Some(chunk)) => {
                    // Waits while the store is busy with earlier bytes: the backpressure.
                    match appending.write(&chunk).await {
                        Ok(Some(recorded)) => announce_offset(ex, recorded).await?,
                        Ok(None) => {}
                        Err(e) => {
                            // Dropping the append releases it; the store keeps the last
                            // recorded state, from which the client resumes.
                            drop(appending);
                            if matches!(e, StoreError::PreconditionFailed) {
                                // Its lease was taken over (this node stalled past it) or
                                // the upload was cancelled.
                                return refused(ex, store, id, ResumableError::Busy).await;
                            }
                            return reply::store_error(ex, &e).await;
                        }
                    }
                }
                Ok(None) => break Ok(()),
                Err(e) => break Err(BodyFailure::Body(e)),
            }
        },
    };
    if let Err(failure) = received {
        // Keep and record what arrived: the client resumes from there.
        if let Err(e) = appending.finish(false).await {
            tracing::warn!(upload = %id, error = %e, "resumable upload: recording a cut append failed");
        }
        return failure.answer(ex, max).await;
    }
    if complete {
        // The whole upload's digest as a trailer of this last request: checked at the
        // completion, with the one given at creation, against the hash of every byte.
        let trailer = trailer_digest(ex, offset, appending.state().expected_digest());
        let trailer = trailer.and_then(|d| match d {
            Some(d) => appending.expect_digest(d).map_err(|e| e.to_string()),
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
    if let Some(file) = appending.file() {
        keep_media_type(&file.appending, &mut file.upload);
    }
    // The creating request's preconditions, judged again at the completion (under the local
    // store's commit lock; in a bucket, atomically with the completion's write).
    // ALLOCATION: the target and the condition, once per request on an upload.
    let target = appending.state().target().clone();
    let condition = appending.state().condition().to_vec();
    let kept = |meta: Option<&FileMeta>| preconditions::kept_hold(&condition, meta);
    let check: Option<VersionCheck<'_>> = if condition.is_empty() {
        None
    } else {
        Some(&kept)
    };
    let end = appending.finish_checked(complete, check).await;
    let stats = ex.body_stats();
    let internals = body::wants_internals(ex);
    match end {
        Ok(ResumableEnd::Incomplete(state)) => {
            let limit = limits(svc, store, Some(&state));
            let stats = internals.then(|| body::body_stats_json(&stats));
            answer_incomplete(ex, location, state.offset(), limit, stats).await
        }
        Ok(ResumableEnd::Completed(committed)) => {
            svc.on_stored(target.as_str(), &committed);
            let mut body = serde_json::json!({
                "path": target.as_str(),
                "size": committed.size,
                "sha256": committed.sha256.map(|d| hex(&d)),
                "replaced": committed.replaced,
                "upload": format!("{PREFIX}{id}"),
            });
            if internals {
                body["body"] = body::body_stats_json(&stats);
                if let Some(counts) = counts {
                    // All 0 for a resumed upload whose hash state was not kept: hashed at
                    // completion, by reading the file back.
                    body["hashing"] = counts.json();
                }
            }
            let etag = S::ETAG_AT_COMPLETION.then(|| preconditions::etag(&committed.stored));
            answer_completed(ex, committed.replaced, body, etag).await
        }
        Err(e) => answer_append_failed(ex, e).await,
    }
}

/// The body into the local store's file (its "local powers": `upload.rs`'s paths, hashing
/// beside, checkpoints every `CHECKPOINT_BYTES` while it runs, each announced in a `104`).
async fn into_file(
    svc: &Service,
    ex: &mut Exchange<'_>,
    file: &mut LocalAppend,
    counts: &mut WhereHashed,
) -> Result<(), BodyFailure> {
    // Hashes as it writes, like a `PUT`: the first request, and a resumed one whose upload
    // kept its hash state with its offset (else completion reads the file back).
    let hashing = file.upload.is_hashing();
    let mut checkpoints = AppendCheckpoints::new(&mut file.appending, true);
    let mut received =
        append_body(svc, ex, &mut file.upload, hashing, counts, &mut checkpoints).await;
    // The checkpoint out, if any, ends before the request records its end.
    match checkpoints.settle().await {
        Ok(Some(offset)) if received.is_ok() => {
            if let Err(e) = announce_offset(ex, offset).await {
                received = Err(BodyFailure::Body(e));
            }
        }
        Err(e) if received.is_ok() => received = Err(BodyFailure::Store(e)),
        _ => {}
    }
    received
}

/// Answers an append (or a creation's body) that left its upload incomplete, for both stores:
/// `201` with `Location` and a JSON body for a creation, else `204`; `stats` is the request's
/// body statistics when the client asked for them (`Weir-Debug`).
pub(in crate::serve) async fn answer_incomplete(
    ex: &mut Exchange<'_>,
    location: Option<&str>,
    offset: u64,
    limit: String,
    stats: Option<serde_json::Value>,
) -> Result<(), weir::Error> {
    let status = if location.is_some() {
        StatusCode::CREATED
    } else {
        StatusCode::NO_CONTENT
    };
    let mut r = ex
        .respond(status)
        .header("upload-complete", "?0")
        .header_display("upload-offset", offset)
        .header("upload-limit", limit)
        .header("cache-control", "no-store")
        .header("upload-draft-interop-version", INTEROP_VERSION);
    let Some(location) = location else {
        return r.empty().await;
    };
    r = r.header("location", location);
    let mut body = serde_json::json!({
        "upload": location,
        "offset": offset,
    });
    if let Some(stats) = stats {
        body["body"] = stats;
    }
    let mut text = body.to_string();
    text.push('\n');
    r.header("content-type", "application/json")
        .body(text)
        .await
}

/// Answers the request that completed an upload, for both stores: `201` (`200` if it replaced
/// a file) with the stored file's JSON `body`, and its `ETag` when the store knows it.
pub(in crate::serve) async fn answer_completed(
    ex: &mut Exchange<'_>,
    replaced: bool,
    body: serde_json::Value,
    etag: Option<String>,
) -> Result<(), weir::Error> {
    let status = if replaced {
        StatusCode::OK
    } else {
        StatusCode::CREATED
    };
    let mut text = body.to_string();
    text.push('\n');
    let mut r = ex
        .respond(status)
        .header("content-type", "application/json")
        .header("cache-control", "no-store");
    if let Some(etag) = etag {
        r = r.header("etag", etag);
    }
    r.header("upload-complete", "?1")
        .header("upload-draft-interop-version", INTEROP_VERSION)
        .body(text)
        .await
}

/// Answers an append that failed at its end, for both stores: the length disagreeing with the
/// upload's (the draft's problem type, with the offset received), or the store's error.
pub(in crate::serve) async fn answer_append_failed(
    ex: &mut Exchange<'_>,
    e: StoreError,
) -> Result<(), weir::Error> {
    match e {
        StoreError::LengthMismatch { expected, actual } => {
            let message = format!(
                "inconsistent length values for upload: length {expected}, received {actual}"
            );
            let offset = actual.to_string();
            let headers = [("upload-offset", offset.as_str())];
            let kind = Problem::DraftInconsistentLength;
            problem(ex, kind, &message, serde_json::Value::Null, &headers).await
        }
        e => {
            let headers = [
                ("upload-complete", "?1"),
                ("upload-draft-interop-version", INTEROP_VERSION),
            ];
            reply::store_error_with(ex, &e, &headers).await
        }
    }
}

/// Answers a refusal of the store's resumable layer.
async fn refused<S: ResumableStore>(
    ex: &mut Exchange<'_>,
    store: &S,
    id: &S::Id,
    e: ResumableError,
) -> Result<(), weir::Error> {
    match e {
        ResumableError::Unknown => reply::error(ex, Problem::NotFound, "no such upload", &[]).await,
        ResumableError::Busy => {
            let offset = store
                .state(id)
                .await
                .ok()
                .flatten()
                .map_or(0, |s| s.offset())
                .to_string();
            let message = "another request is appending to this upload";
            let headers = [("upload-offset", offset.as_str())];
            let none = serde_json::Value::Null;
            problem(ex, Problem::UploadBusy, message, none, &headers).await
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
        ResumableError::Completed => {
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
            let none = serde_json::Value::Null;
            let headers = [("upload-complete", "?1")];
            problem(ex, kind, message, none, &headers).await
        }
        ResumableError::Store(e) => reply::store_error(ex, &e).await,
    }
}
