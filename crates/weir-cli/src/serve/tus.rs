//! tus 1.0.0 (<https://tus.io/protocols/resumable-upload>): a second protocol face on the
//! resumable uploads of `resumable.rs`. Same state (`weir_store::Resumables`), same body paths
//! (`resumable::body`: splice with `--no-hash`, direct reads, the pause threshold), same
//! completion (the store's commit: temporary, fsync, rename, directory fsync, SHA-256 of the
//! whole file); only the fields differ.
//!
//! | request | answer |
//! | --- | --- |
//! | `OPTIONS /tus/` | `204`, `Tus-Version`, `Tus-Extension`, `Tus-Max-Size`, `Tus-Checksum-Algorithm` (no token, no `Tus-Resumable` needed) |
//! | `POST /tus/` (`Upload-Length` or `Upload-Defer-Length: 1`, `Upload-Metadata`; a body with `Content-Type: application/offset+octet-stream`) | `201`, `Location: /tus/{id}`, `Upload-Offset`, `Upload-Expires` |
//! | `HEAD /tus/{id}` | (once no `PATCH` runs) `200`, `Upload-Offset`, `Upload-Length` (or `Upload-Defer-Length: 1`), `Upload-Metadata`, `Upload-Expires`, `Cache-Control: no-store` |
//! | `PATCH /tus/{id}` (`application/offset+octet-stream`, `Upload-Offset`, optional `Upload-Checksum: sha256 <base64>`, `Upload-Length` once for a deferred one) | `204`, `Upload-Offset` |
//! | `DELETE /tus/{id}` | `204`, the partial data removed |
//!
//! The target: `Upload-Metadata`'s `filename` (or `name`, which Uppy sends) in the directory
//! `dir` (optional), both base64 as tus says, joined and validated as a `StorePath`: what
//! `PUT /files/{dir}/{filename}` would store. Refusals: no `Tus-Resumable: 1.0.0` 412 (with
//! `Tus-Version`); neither `Upload-Length` nor `Upload-Defer-Length: 1` (creation-defer-length:
//! a later PATCH declares the length, once) 400; a bad
//! target 400; an offset that is not the upload's 409; an append while another runs 423; a
//! checksum that does not match 460, the request's bytes cut off and the offset unchanged (the
//! request is then not checkpointed while it runs, so all of it can be taken back); sizes past
//! `--max-upload` 413. When the offset reaches `Upload-Length` the upload is committed to its
//! target; the answer carries `Repr-Digest` (the SHA-256 of the whole file) unless `--no-hash`.
//!
//! With `--store s3://`, `remote_tus.rs` serves the same protocol on the bucket's uploads,
//! through this module's parsing and answers ([`creation`], [`patch_fields`], [`refused`],
//! [`checksum_mismatch`]...), the `checksum` extension included.

use super::auth::{Access, Caller, Verdict};
use super::pre_upload;
use super::reply::{self, Problem, hex};
use super::resumable;
use super::service::{Service, off_the_runtime};
use super::upload::{self, WhereHashed};
use http::StatusCode;
use std::time::{Duration, UNIX_EPOCH};
use weir::{Exchange, http};
use weir_store::{AppendEnd, ResumableError, ResumableState, Resumables, StorePath, UploadId};

/// Where tus upload resources live.
pub(crate) const PREFIX: &str = "/tus/";

const VERSION: &str = "1.0.0";
/// The extensions offered, with either store (`remote_tus.rs` too).
pub(super) const EXTENSIONS: &str =
    "creation,creation-with-upload,creation-defer-length,termination,expiration,checksum";
const CONTENT_TYPE: &[u8] = b"application/offset+octet-stream";

/// A tus answer's fixed field.
pub(super) const RESUMABLE: (&str, &str) = ("tus-resumable", VERSION);

pub(super) async fn fail(
    ex: &mut Exchange<'_>,
    problem: Problem,
    message: &str,
) -> Result<(), weir::Error> {
    reply::error(ex, problem, message, &[RESUMABLE]).await
}

/// `460 Checksum Mismatch`: the request's bytes were taken back, the offset is unchanged.
pub(super) async fn checksum_mismatch(ex: &mut Exchange<'_>) -> Result<(), weir::Error> {
    let status = StatusCode::from_u16(460).unwrap_or(StatusCode::BAD_REQUEST);
    let message = "checksum mismatch: the request's bytes were discarded";
    fail_status(ex, Problem::DigestMismatch, status, message).await
}

/// [`fail`] with a status of tus's own for `problem`.
pub(super) async fn fail_status(
    ex: &mut Exchange<'_>,
    problem: Problem,
    status: StatusCode,
    message: &str,
) -> Result<(), weir::Error> {
    let none = serde_json::Value::Null;
    reply::error_with_status(ex, problem, status, message, none, &[RESUMABLE]).await
}

/// Routes `/tus` and `/tus/...`: `rest` is what follows `/tus/` (empty for the collection).
/// `authorized`: the request carries the write token (or none is required).
/// `caller` and `verdict`: who sent it and how `service.rs` judged it (for a creation, on the
/// scope only: its target is judged here, once read from `Upload-Metadata`).
pub(super) async fn serve(
    svc: &Service,
    ex: &mut Exchange<'_>,
    rest: &str,
    caller: Caller<'_>,
    verdict: Verdict,
) -> Result<(), weir::Error> {
    if *ex.request().method() == http::Method::OPTIONS {
        return options(svc, ex).await;
    }
    if !admitted(ex, verdict).await? {
        return Ok(());
    }
    let Some(resumables) = svc.resumables.as_deref() else {
        let message = "resumable uploads are not available on this server";
        return fail(ex, Problem::Unavailable, message).await;
    };
    let method = ex.request().method().clone();
    if rest.is_empty() {
        return match method {
            http::Method::POST => create(svc, ex, resumables, caller).await,
            _ => not_allowed(ex, "OPTIONS, POST").await,
        };
    }
    let Some(id) = UploadId::parse(rest) else {
        return fail(ex, Problem::NotFound, "no such upload").await;
    };
    match method {
        http::Method::HEAD => head(svc, ex, resumables, id).await,
        http::Method::PATCH => patch(svc, ex, resumables, id).await,
        http::Method::DELETE => match resumables.cancel(id) {
            Ok(()) => {
                ex.respond(StatusCode::NO_CONTENT)
                    .header(RESUMABLE.0, RESUMABLE.1)
                    .empty()
                    .await
            }
            Err(e) => refused(ex, e).await,
        },
        _ => not_allowed(ex, "OPTIONS, HEAD, PATCH, DELETE").await,
    }
}

/// The checks of every tus request but `OPTIONS`: `Tus-Resumable`, then `verdict`. `false`:
/// refused (answered).
pub(super) async fn admitted(ex: &mut Exchange<'_>, verdict: Verdict) -> Result<bool, weir::Error> {
    if ex.request().header("tus-resumable") != Some(VERSION.as_bytes()) {
        reply::error(
            ex,
            Problem::TusVersion,
            "tus requests need Tus-Resumable: 1.0.0",
            &[("tus-version", VERSION)],
        )
        .await?;
        return Ok(false);
    }
    match verdict {
        Verdict::Allowed => return Ok(true),
        Verdict::Unauthorized => {
            reply::error(
                ex,
                Problem::Unauthorized,
                "missing or wrong bearer token",
                &[RESUMABLE, ("www-authenticate", "Bearer realm=\"weir\"")],
            )
            .await?;
        }
        Verdict::Forbidden => forbidden(ex).await?,
    }
    Ok(false)
}

pub(super) async fn forbidden(ex: &mut Exchange<'_>) -> Result<(), weir::Error> {
    let message = "this token may not do that here (scope or path prefix)";
    fail(ex, Problem::Forbidden, message).await
}

pub(super) async fn not_allowed(ex: &mut Exchange<'_>, allow: &str) -> Result<(), weir::Error> {
    let headers = [RESUMABLE, ("allow", allow)];
    reply::error(
        ex,
        Problem::MethodNotAllowed,
        "method not allowed here",
        &headers,
    )
    .await
}

/// `OPTIONS`: what this server offers.
async fn options(svc: &Service, ex: &mut Exchange<'_>) -> Result<(), weir::Error> {
    options_with(svc, ex, EXTENSIONS).await
}

/// `OPTIONS` with these `extensions`.
pub(super) async fn options_with(
    svc: &Service,
    ex: &mut Exchange<'_>,
    extensions: &str,
) -> Result<(), weir::Error> {
    ex.respond(StatusCode::NO_CONTENT)
        .header(RESUMABLE.0, RESUMABLE.1)
        .header("tus-version", VERSION)
        .header("tus-extension", extensions)
        .header_display("tus-max-size", svc.options.max_upload)
        .header("tus-checksum-algorithm", "sha256")
        .empty()
        .await
}

/// The one field line `name`, as a non-negative integer.
fn integer(ex: &Exchange<'_>, name: &str) -> Option<u64> {
    let mut all = ex.request().header_all(name);
    let first = all.next()?;
    if all.next().is_some() || first.is_empty() || !first.iter().all(u8::is_ascii_digit) {
        return None;
    }
    std::str::from_utf8(first).ok()?.parse().ok()
}

/// `Upload-Length`: `Ok(None)` when absent; `Err` when present but not one plain
/// non-negative decimal that fits a `u64`.
fn declared_length(ex: &Exchange<'_>) -> Result<Option<u64>, &'static str> {
    if ex.request().header_all("upload-length").next().is_none() {
        return Ok(None);
    }
    integer(ex, "upload-length")
        .map(Some)
        .ok_or("Upload-Length is not a non-negative decimal (one field line)")
}

fn is_tus_body(ex: &Exchange<'_>) -> bool {
    ex.request().header("content-type").is_some_and(|v| {
        let media = v.split(|&b| b == b';').next().unwrap_or_default();
        media.trim_ascii().eq_ignore_ascii_case(CONTENT_TYPE)
    })
}

/// Whether the request has content (a `Content-Length` above 0, or chunked).
pub(super) fn has_body(ex: &Exchange<'_>) -> bool {
    match ex.request().content_length() {
        Some(n) => n > 0,
        None => ex.request().header("transfer-encoding").is_some(),
    }
}

/// `Upload-Metadata` → (the verbatim text, the target path).
fn target(ex: &Exchange<'_>) -> Result<(Option<String>, StorePath), String> {
    let Some(raw) = ex.request().header("upload-metadata") else {
        return Err("Upload-Metadata needs a filename (base64)".to_owned());
    };
    let text = std::str::from_utf8(raw).map_err(|_| "Upload-Metadata is not ASCII")?;
    let (mut filename, mut name, mut dir) = (None, None, None);
    for pair in text.split(',') {
        let pair = pair.trim();
        let (key, value) = pair.split_once(' ').unwrap_or((pair, ""));
        let slot = match key {
            "filename" => &mut filename,
            "name" => &mut name,
            "dir" => &mut dir,
            _ => continue,
        };
        let bytes = super::base64::decode(value.trim())
            .ok_or_else(|| format!("Upload-Metadata: {key} is not base64"))?;
        let value =
            String::from_utf8(bytes).map_err(|_| format!("Upload-Metadata: {key} is not UTF-8"))?;
        *slot = Some(value);
    }
    let Some(file) = filename.or(name) else {
        return Err("Upload-Metadata needs a filename (base64)".to_owned());
    };
    let joined = match dir.as_deref().map(|d| d.trim_matches('/')) {
        Some(d) if !d.is_empty() => format!("{d}/{file}"),
        _ => file,
    };
    let path = StorePath::parse(&joined).map_err(|e| format!("bad target path: {e}"))?;
    Ok((Some(text.to_owned()), path))
}

/// `Upload-Checksum: sha256 <base64>` → the digest; `Ok(None)` when absent.
fn checksum(ex: &Exchange<'_>) -> Result<Option<[u8; 32]>, &'static str> {
    let Some(raw) = ex.request().header("upload-checksum") else {
        return Ok(None);
    };
    let text = std::str::from_utf8(raw).map_err(|_| "bad checksum")?;
    let (algorithm, value) = text
        .trim()
        .split_once(' ')
        .ok_or("Upload-Checksum: <algorithm> <base64>")?;
    if algorithm != "sha256" {
        return Err("unsupported checksum algorithm (sha256 only)");
    }
    super::base64::decode(value.trim())
        .and_then(|b| <[u8; 32]>::try_from(b).ok())
        .map(Some)
        .ok_or("Upload-Checksum: not a base64 SHA-256")
}

/// `Upload-Expires`: when an incomplete upload goes if nothing more arrives.
fn expires(resumables: &Resumables, state: &ResumableState) -> String {
    let at = UNIX_EPOCH + Duration::from_secs(state.active) + resumables.expiry();
    httpdate::fmt_http_date(at)
}

/// A `POST /tus/` read and admitted ([`creation`]).
pub(super) struct Creation {
    /// `Upload-Length`; `None`: deferred.
    pub length: Option<u64>,
    /// `Upload-Metadata`, verbatim.
    pub metadata: Option<String>,
    pub path: StorePath,
    /// The request has content (creation-with-upload).
    pub body: bool,
    /// `Upload-Checksum`'s SHA-256.
    pub expected: Option<[u8; 32]>,
}

/// Reads a `POST /tus/` (length, target, body type, checksum) and admits it (the caller's
/// prefix, `--max-upload`, the pre-upload hook): `None` when it was refused (answered).
pub(super) async fn creation(
    svc: &Service,
    ex: &mut Exchange<'_>,
    caller: Caller<'_>,
) -> Result<Option<Creation>, weir::Error> {
    // `creation-defer-length`: `Upload-Defer-Length: 1` instead of `Upload-Length`, which a
    // later PATCH then carries.
    let deferred = ex.request().header("upload-defer-length").is_some();
    // A present but malformed length is refused, not taken for an absent one (which, beside
    // `Upload-Defer-Length: 1`, would create an upload of unknown length).
    let length = match (declared_length(ex), deferred) {
        (Err(message), _) => {
            fail(ex, Problem::BadRequest, message).await?;
            return Ok(None);
        }
        (Ok(Some(length)), false) => Some(length),
        (Ok(None), true) if integer(ex, "upload-defer-length") == Some(1) => None,
        _ => {
            let message =
                "a tus creation needs Upload-Length or Upload-Defer-Length: 1 (one of them)";
            fail(ex, Problem::BadRequest, message).await?;
            return Ok(None);
        }
    };
    if length.is_some_and(|length| length > svc.options.max_upload) {
        let max = svc.options.max_upload;
        let message = format!("upload larger than the limit of {max} bytes");
        fail(ex, Problem::TooLarge, &message).await?;
        return Ok(None);
    }
    let (metadata, path) = match target(ex) {
        Ok(t) => t,
        Err(message) => {
            fail(ex, Problem::BadRequest, &message).await?;
            return Ok(None);
        }
    };
    // A prefix token creates uploads only into its prefix (before any body byte is read).
    if caller.check(Access::Write, Some(path.as_str())) != Verdict::Allowed {
        forbidden(ex).await?;
        return Ok(None);
    }
    if let Some(hook) = &svc.pre_upload {
        let ask = pre_upload::Ask {
            kind: "tus",
            method: "POST",
            path: path.as_str(),
            length,
            client: pre_upload::client(ex.peer_addr()),
            credential: match caller {
                Caller::Known(c) => Some(c),
                _ => None,
            },
        };
        let answer = hook.ask(&ask).await;
        if let Some(refused) = pre_upload::refusal(ex, answer, &[RESUMABLE]).await {
            return refused.map(|()| None);
        }
    }
    let body = has_body(ex);
    if body && !is_tus_body(ex) {
        let message = "content needs Content-Type: application/offset+octet-stream";
        fail(ex, Problem::UnsupportedMediaType, message).await?;
        return Ok(None);
    }
    let expected = match checksum(ex) {
        Ok(c) => c,
        Err(message) => {
            fail(ex, Problem::BadRequest, message).await?;
            return Ok(None);
        }
    };
    Ok(Some(Creation {
        length,
        metadata,
        path,
        body,
        expected,
    }))
}

/// `POST /tus/`: creation, and creation-with-upload when it has a body.
async fn create(
    svc: &Service,
    ex: &mut Exchange<'_>,
    resumables: &Resumables,
    caller: Caller<'_>,
) -> Result<(), weir::Error> {
    let Some(Creation {
        length,
        metadata,
        path,
        body,
        expected,
    }) = creation(svc, ex, caller).await?
    else {
        return Ok(());
    };
    let made = resumables.create_with_metadata(&path, length, None, svc.options.hash, metadata);
    let (id, state) = match made {
        Ok(m) => m,
        Err(e) => return reply::store_error(ex, &e).await,
    };
    // ALLOCATION: the upload's URL, once per upload.
    let location = format!("{PREFIX}{id}");
    if !body && length != Some(0) {
        return ex
            .respond(StatusCode::CREATED)
            .header(RESUMABLE.0, RESUMABLE.1)
            .header("location", &location)
            .header("upload-offset", "0")
            .header("upload-expires", expires(resumables, &state))
            .empty()
            .await;
    }
    receive(
        svc,
        ex,
        resumables,
        id,
        0,
        length,
        expected,
        Some(&location),
    )
    .await
}

/// `HEAD /tus/{id}`: once no `PATCH` runs on the upload (as the resumable route's `HEAD`,
/// [`resumable::settled`]): while one runs the recorded offset is outdated, and a client that
/// resumed from it would be refused (409) or, after a cut, told too little.
async fn head(
    _svc: &Service,
    ex: &mut Exchange<'_>,
    resumables: &Resumables,
    id: UploadId,
) -> Result<(), weir::Error> {
    if !resumable::settled(resumables, id).await {
        let message = "a PATCH to this upload is still running";
        let headers = [RESUMABLE, ("retry-after", "1")];
        return reply::error(ex, Problem::Unavailable, message, &headers).await;
    }
    let state = match resumables.state(id) {
        Ok(Some(s)) => s,
        Ok(None) => return fail(ex, Problem::NotFound, "no such upload").await,
        Err(e) => return reply::store_error(ex, &e).await,
    };
    let expires = (!state.complete).then(|| expires(resumables, &state));
    answer_head(
        ex,
        state.offset,
        state.length,
        state.metadata.as_deref(),
        expires,
    )
    .await
}

/// The answer to `HEAD /tus/{id}`, for both stores: the offset, the length (or that it is
/// deferred), the metadata, and the expiry of an upload not yet complete.
pub(super) async fn answer_head(
    ex: &mut Exchange<'_>,
    offset: u64,
    length: Option<u64>,
    metadata: Option<&str>,
    expires: Option<String>,
) -> Result<(), weir::Error> {
    let mut r = ex
        .respond(StatusCode::OK)
        .header(RESUMABLE.0, RESUMABLE.1)
        .header_display("upload-offset", offset)
        .header("cache-control", "no-store");
    match length {
        Some(length) => r = r.header_display("upload-length", length),
        None => r = r.header("upload-defer-length", "1"),
    }
    if let Some(m) = metadata {
        r = r.header("upload-metadata", m);
    }
    if let Some(expires) = expires {
        r = r.header("upload-expires", expires);
    }
    r.empty().await
}

/// `PATCH /tus/{id}`.
async fn patch(
    svc: &Service,
    ex: &mut Exchange<'_>,
    resumables: &Resumables,
    id: UploadId,
) -> Result<(), weir::Error> {
    let Some((claimed, expected)) = patch_fields(ex).await? else {
        return Ok(());
    };
    let state = match resumables.state(id) {
        Ok(Some(s)) => s,
        Ok(None) => return fail(ex, Problem::NotFound, "no such upload").await,
        Err(e) => return reply::store_error(ex, &e).await,
    };
    if claimed != state.offset {
        return offset_mismatch(ex, state.offset).await;
    }
    let Some(length) = patch_length(svc, ex, state.length, state.offset).await? else {
        return Ok(());
    };
    if state.complete {
        return already_complete(ex, state.offset).await;
    }
    receive(svc, ex, resumables, id, claimed, length, expected, None).await
}

/// A `PATCH`'s own fields: (`Upload-Offset`, `Upload-Checksum`'s SHA-256); `None` when
/// refused (answered).
pub(super) async fn patch_fields(
    ex: &mut Exchange<'_>,
) -> Result<Option<(u64, Option<[u8; 32]>)>, weir::Error> {
    if !is_tus_body(ex) {
        let message = "a tus PATCH needs Content-Type: application/offset+octet-stream";
        fail(ex, Problem::UnsupportedMediaType, message).await?;
        return Ok(None);
    }
    let Some(claimed) = integer(ex, "upload-offset") else {
        fail(ex, Problem::BadRequest, "a tus PATCH needs Upload-Offset").await?;
        return Ok(None);
    };
    match checksum(ex) {
        Ok(expected) => Ok(Some((claimed, expected))),
        Err(message) => {
            fail(ex, Problem::BadRequest, message).await?;
            Ok(None)
        }
    }
}

/// The upload's length after a `PATCH` of an upload of `length` at `offset`: a deferred
/// length is declared by a PATCH, once; a length the upload has cannot change. `None` when
/// refused (answered).
pub(super) async fn patch_length(
    svc: &Service,
    ex: &mut Exchange<'_>,
    length: Option<u64>,
    offset: u64,
) -> Result<Option<Option<u64>>, weir::Error> {
    let declared = match ex.request().header("upload-length") {
        None => None,
        Some(_) => match integer(ex, "upload-length") {
            Some(d) if length.is_none_or(|l| l == d) && d >= offset => Some(d),
            _ => {
                let message = "Upload-Length is not a length this upload can take";
                fail(ex, Problem::BadRequest, message).await?;
                return Ok(None);
            }
        },
    };
    if declared.is_some_and(|d| d > svc.options.max_upload) {
        let max = svc.options.max_upload;
        let message = format!("upload larger than the limit of {max} bytes");
        fail(ex, Problem::TooLarge, &message).await?;
        return Ok(None);
    }
    Ok(Some(length.or(declared)))
}

/// A `PATCH` of a completed upload: nothing left to send, an empty one is answered with the
/// end.
pub(super) async fn already_complete(
    ex: &mut Exchange<'_>,
    offset: u64,
) -> Result<(), weir::Error> {
    if has_body(ex) {
        return fail(ex, Problem::BadRequest, "upload is already complete").await;
    }
    ex.respond(StatusCode::NO_CONTENT)
        .header(RESUMABLE.0, RESUMABLE.1)
        .header_display("upload-offset", offset)
        .empty()
        .await
}

pub(super) async fn offset_mismatch(ex: &mut Exchange<'_>, offset: u64) -> Result<(), weir::Error> {
    let offset = offset.to_string();
    let headers = [RESUMABLE, ("upload-offset", offset.as_str())];
    let message = "Upload-Offset does not match the upload's offset";
    reply::error(ex, Problem::OffsetMismatch, message, &headers).await
}

/// The answer to a refusal of the store's resumable layer.
pub(super) async fn refused(ex: &mut Exchange<'_>, e: ResumableError) -> Result<(), weir::Error> {
    match e {
        ResumableError::Unknown => fail(ex, Problem::NotFound, "no such upload").await,
        ResumableError::Busy => {
            let message = "another request is appending to this upload";
            fail_status(ex, Problem::UploadBusy, StatusCode::LOCKED, message).await
        }
        ResumableError::OffsetMismatch { expected, .. } => offset_mismatch(ex, expected).await,
        ResumableError::Completed => {
            fail(ex, Problem::BadRequest, "upload is already complete").await
        }
        ResumableError::Store(e) => reply::store_error(ex, &e).await,
    }
}

/// Receives a body at `offset` into upload `id` of `length` bytes (`None`: deferred, at most
/// `--max-upload`; a length given here is recorded): checks `expected` (the request's SHA-256)
/// before acknowledging anything, commits when the offset reaches the length, and answers
/// (`201` + `location` for a creation, else `204`).
#[allow(clippy::too_many_arguments)]
async fn receive(
    svc: &Service,
    ex: &mut Exchange<'_>,
    resumables: &Resumables,
    id: UploadId,
    offset: u64,
    length: Option<u64>,
    expected: Option<[u8; 32]>,
    location: Option<&str>,
) -> Result<(), weir::Error> {
    let room = length
        .unwrap_or(svc.options.max_upload)
        .saturating_sub(offset);
    if ex.request().content_length().is_some_and(|n| n > room) {
        let message = format!("content goes past Upload-Length ({room} bytes left)");
        return fail(ex, Problem::TooLarge, &message).await;
    }
    ex.set_max_body_size(Some(room));
    // Known now: this request brings the last byte (or a chunked one may, see below).
    let completes = length.is_some() && ex.request().content_length() == Some(room);
    let (mut appending, mut upload) = match resumables.append(id, offset, length) {
        Ok(a) => a,
        Err(e) => return refused(ex, e).await,
    };
    // As on the IETF path: the first request hashes while receiving, and so does a resumed
    // one whose upload kept its hash state.
    let hashing = upload.is_hashing();
    let mut counts = WhereHashed::default();
    let received = if expected.is_some() {
        // No checkpoint while a checked request runs: all of it can be taken back.
        let mut none = upload::NoCheckpoints;
        resumable::body(svc, ex, &mut upload, hashing, &mut counts, &mut none).await
    } else {
        // tus has no progress announcements: the offset is recorded, not sent.
        let mut checkpoints = resumable::AppendCheckpoints::new(&mut appending, false);
        let received =
            resumable::body(svc, ex, &mut upload, hashing, &mut counts, &mut checkpoints).await;
        // The checkpoint out, if any, ends before the request records its end.
        match checkpoints.settle().await {
            Err(e) if received.is_ok() => Err(upload::BodyFailure::Store(e)),
            _ => received,
        }
    };
    if let Err(failure) = received {
        let kept = if expected.is_some() {
            off_the_runtime(|| appending.discard(upload)).map(drop)
        } else {
            off_the_runtime(|| appending.finish(upload, false)).map(drop)
        };
        if let Err(e) = &kept {
            tracing::warn!(upload = %id, error = %e, "tus upload: checkpoint failed");
        }
        return failure.answer(ex, svc.options.max_upload).await;
    }
    if let Some(expected) = expected {
        let matches =
            off_the_runtime(|| appending.written_sha256(&upload)).map(|sum| sum == expected);
        if !matches.unwrap_or(false) {
            let discarded = off_the_runtime(|| appending.discard(upload));
            if let Err(e) = discarded {
                return reply::store_error(ex, &e).await;
            }
            return checksum_mismatch(ex).await;
        }
    }
    resumable::keep_media_type(&appending, &mut upload);
    let mut end = off_the_runtime(|| appending.finish(upload, completes));
    // A body without Content-Length that reached the length: complete it now.
    if let Ok(AppendEnd::Incomplete(state)) = &end {
        if Some(state.offset) == length {
            let at = state.offset;
            end = match resumables.append(id, at, None) {
                Ok((appending, mut upload)) => {
                    resumable::keep_media_type(&appending, &mut upload);
                    off_the_runtime(|| appending.finish(upload, true))
                }
                Err(e) => return refused(ex, e).await,
            };
        }
    }
    let mut r = ex
        .respond(if location.is_some() {
            StatusCode::CREATED
        } else {
            StatusCode::NO_CONTENT
        })
        .header(RESUMABLE.0, RESUMABLE.1);
    if let Some(location) = location {
        r = r.header("location", location);
    }
    match end {
        Ok(AppendEnd::Incomplete(state)) => {
            r.header_display("upload-offset", state.offset)
                .header("upload-expires", expires(resumables, &state))
                .empty()
                .await
        }
        Ok(AppendEnd::Completed(committed)) => {
            if let Some(state) = resumables.state(id).ok().flatten() {
                svc.on_stored(state.target.as_str(), &committed);
            }
            r = r.header_display("upload-offset", committed.size);
            if let Some(sum) = committed.sha256 {
                // ALLOCATION: one header value at completion.
                let mut value = String::from("sha-256=:");
                super::base64::encode_into(&sum, &mut value);
                value.push(':');
                tracing::debug!(upload = %id, sha256 = %hex(&sum), "tus upload complete");
                r = r.header("repr-digest", value);
            }
            r.empty().await
        }
        Err(e) => {
            drop(r);
            reply::store_error(ex, &e).await
        }
    }
}
