//! tus 1.0.0 (<https://tus.io/protocols/resumable-upload>): a second protocol face on the
//! resumable uploads the IETF draft's route serves (`resumable.rs`):
//! the same state, the same body paths, the same completion (the store's commit, with the
//! SHA-256 of the whole file); only the fields differ.
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
//! target; the answer carries `Repr-Digest` (the SHA-256 of the whole file) unless `--no-hash`
//! (locally; a bucket's uploads always hash).
//!
//! One route for both stores, generic over weir-store's `ResumableStore` (static dispatch):
//! `Resumables` (local) or `S3Resumables` (`--store s3://`), whichever the service has;
//! `service.rs` dispatches `/tus/` here once. Where the stores differ, the trait says so:
//!
//! - **The body.** The local store's append is a file (`ResumableAppend::file`, its "local
//!   powers"): the body goes in by `resumable.rs`'s paths (splice with `--no-hash`, direct
//!   reads, hashing beside, checkpoints every `CHECKPOINT_BYTES` while it runs), and the file
//!   gets the media type of `Upload-Metadata`'s `filetype` at completion. Otherwise the
//!   chunks go through `ResumableAppend::write` (the store's backpressure through the pause
//!   threshold): in a bucket, parts recorded as the store acknowledges them, so that a tus
//!   upload created through one node continues and completes through any other.
//! - **`checksum`**: a request with `Upload-Checksum` is *held* (`ResumableAppend::hold`):
//!   locally not checkpointed while it runs and its bytes read back for the check; in a bucket
//!   its parts recorded only at its end (`S3Append::hold_records`, weir-store's
//!   `s3/resumable/held.rs`), and on a mismatch or a cut none is (the parts in flight waited
//!   for; the next append sends those part numbers again from the recorded offset).
//! - **Ids** are the store's (`ResumableStore::parse_id`: locally a path that is no id is
//!   404 at once; a bucket's store answers it as unknown where it looks the upload up).
//!   `Upload-Expires` is `ResumableStore::expires_at`.
//! - **A prefix token** on an upload by id is judged on the upload's target; an upload that
//!   cannot be read is, in a bucket, 404 (or the store's error) at once, locally left to the
//!   route's own answers (`ResumableStore::JUDGES_CONFINED_FIRST`).
//! - **An append in progress** holds the upload (locally in memory; in a bucket a lease, on
//!   whichever node runs it): a second one gets `423`; a bucket's append whose lease was
//!   taken over meanwhile is `423` too.

use crate::serve::auth::{Access, Caller, Verdict};
use crate::serve::body::{
    AppendCheckpoints, BodyFailure, NoCheckpoints, WhereHashed, append_body, keep_media_type,
};
use crate::serve::pre_upload;
use crate::serve::reply::{self, Problem, hex};
use crate::serve::service::Service;
use http::StatusCode;
use weir::{Exchange, http};
use weir_store::{
    LocalAppend, ResumableAppend, ResumableCreation, ResumableEnd, ResumableError, ResumableStore,
    StoreError, StorePath, UploadState,
};

/// Where tus upload resources live.
pub(crate) const PREFIX: &str = "/tus/";

const VERSION: &str = "1.0.0";
/// The extensions offered, with either store.
const EXTENSIONS: &str =
    "creation,creation-with-upload,creation-defer-length,termination,expiration,checksum";
const CONTENT_TYPE: &[u8] = b"application/offset+octet-stream";

/// A tus answer's fixed field.
const RESUMABLE: (&str, &str) = ("tus-resumable", VERSION);

async fn fail(ex: &mut Exchange<'_>, problem: Problem, message: &str) -> Result<(), weir::Error> {
    reply::error(ex, problem, message, &[RESUMABLE]).await
}

/// `460 Checksum Mismatch`: the request's bytes were taken back, the offset is unchanged.
async fn checksum_mismatch(ex: &mut Exchange<'_>) -> Result<(), weir::Error> {
    let status = StatusCode::from_u16(460).unwrap_or(StatusCode::BAD_REQUEST);
    let message = "checksum mismatch: the request's bytes were discarded";
    fail_status(ex, Problem::DigestMismatch, status, message).await
}

/// [`fail`] with a status of tus's own for `problem`.
async fn fail_status(
    ex: &mut Exchange<'_>,
    problem: Problem,
    status: StatusCode,
    message: &str,
) -> Result<(), weir::Error> {
    let none = serde_json::Value::Null;
    reply::error_with_status(ex, problem, status, message, none, &[RESUMABLE]).await
}

/// Routes `/tus` and `/tus/...` to the uploads of `store`: `rest` is what follows `/tus/`
/// (empty for the collection). `caller` and `verdict`: who sent it and how `service.rs`
/// judged it, on the write scope only: a prefix token's target is judged here (at creation
/// from `Upload-Metadata`, else on the upload's recorded target).
pub(in crate::serve) async fn serve<S: ResumableStore>(
    svc: &Service,
    store: &S,
    ex: &mut Exchange<'_>,
    rest: &str,
    caller: Caller<'_>,
    verdict: Verdict,
) -> Result<(), weir::Error> {
    if !opening(svc, ex, verdict).await? {
        return Ok(());
    }
    let method = ex.request().method().clone();
    if rest.is_empty() {
        return match method {
            http::Method::POST => create(svc, store, ex, caller).await,
            _ => not_allowed(ex, "OPTIONS, POST").await,
        };
    }
    let Some(id) = store.parse_id(rest) else {
        return fail(ex, Problem::NotFound, "no such upload").await;
    };
    if caller.confined() {
        match store.state(&id).await {
            Ok(Some(s)) => {
                if caller.check(Access::Write, Some(s.target().as_str())) != Verdict::Allowed {
                    return forbidden(ex).await;
                }
            }
            // Left to the route's own answers (see `ResumableStore::JUDGES_CONFINED_FIRST`).
            Ok(None) | Err(_) if !S::JUDGES_CONFINED_FIRST => {}
            Ok(None) => return fail(ex, Problem::NotFound, "no such upload").await,
            Err(e) => return reply::store_error(ex, &e).await,
        }
    }
    match method {
        http::Method::HEAD => head(store, ex, &id).await,
        http::Method::PATCH => patch(svc, store, ex, &id).await,
        http::Method::DELETE => match store.cancel(&id).await {
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

/// What every `/tus/` request meets first: `OPTIONS` answered, then the caller's admission.
/// `Ok(true)` when the request goes on to its route.
async fn opening(
    svc: &Service,
    ex: &mut Exchange<'_>,
    verdict: Verdict,
) -> Result<bool, weir::Error> {
    if *ex.request().method() == http::Method::OPTIONS {
        options(svc, ex).await?;
        return Ok(false);
    }
    admitted(ex, verdict).await
}

/// `/tus/` on a server without resumable uploads: `OPTIONS` answered, every other request
/// checked as [`serve`] checks it, then `503`.
pub(in crate::serve) async fn unavailable(
    svc: &Service,
    ex: &mut Exchange<'_>,
    verdict: Verdict,
) -> Result<(), weir::Error> {
    if !opening(svc, ex, verdict).await? {
        return Ok(());
    }
    let message = "resumable uploads are not available on this server";
    fail(ex, Problem::Unavailable, message).await
}

/// The checks of every tus request but `OPTIONS`: `Tus-Resumable`, then `verdict`. `false`:
/// refused (answered).
async fn admitted(ex: &mut Exchange<'_>, verdict: Verdict) -> Result<bool, weir::Error> {
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

async fn forbidden(ex: &mut Exchange<'_>) -> Result<(), weir::Error> {
    let message = "this token may not do that here (scope or path prefix)";
    fail(ex, Problem::Forbidden, message).await
}

async fn not_allowed(ex: &mut Exchange<'_>, allow: &str) -> Result<(), weir::Error> {
    let headers = [RESUMABLE, ("allow", allow)];
    reply::error(
        ex,
        Problem::MethodNotAllowed,
        "method not allowed here",
        &headers,
    )
    .await
}

/// `OPTIONS`: what this server offers (the same with either store).
async fn options(svc: &Service, ex: &mut Exchange<'_>) -> Result<(), weir::Error> {
    ex.respond(StatusCode::NO_CONTENT)
        .header(RESUMABLE.0, RESUMABLE.1)
        .header("tus-version", VERSION)
        .header("tus-extension", EXTENSIONS)
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
fn has_body(ex: &Exchange<'_>) -> bool {
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
        let bytes = crate::serve::base64::decode(value.trim())
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
    crate::serve::base64::decode(value.trim())
        .and_then(|b| <[u8; 32]>::try_from(b).ok())
        .map(Some)
        .ok_or("Upload-Checksum: not a base64 SHA-256")
}

/// `Upload-Expires`: when an incomplete upload goes if nothing more arrives.
fn expires<S: ResumableStore>(store: &S, state: &S::State) -> String {
    httpdate::fmt_http_date(store.expires_at(state))
}

/// A `POST /tus/` read and admitted ([`creation`]).
struct Creation {
    /// `Upload-Length`; `None`: deferred.
    length: Option<u64>,
    /// `Upload-Metadata`, verbatim.
    metadata: Option<String>,
    path: StorePath,
    /// The request has content (creation-with-upload).
    body: bool,
    /// `Upload-Checksum`'s SHA-256.
    expected: Option<[u8; 32]>,
}

/// Reads a `POST /tus/` (length, target, body type, checksum) and admits it (the caller's
/// prefix, `--max-upload`, the pre-upload hook): `None` when it was refused (answered).
async fn creation(
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
async fn create<S: ResumableStore>(
    svc: &Service,
    store: &S,
    ex: &mut Exchange<'_>,
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
    let made = store
        .create(
            &path,
            ResumableCreation {
                length,
                metadata: metadata.as_deref(),
                hash: svc.options.hash,
                ..ResumableCreation::default()
            },
        )
        .await;
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
            .header("upload-expires", expires(store, &state))
            .empty()
            .await;
    }
    receive(svc, store, ex, &id, (0, length), expected, Some(&location)).await
}

/// `HEAD /tus/{id}`: once no `PATCH` runs on the upload (`ResumableStore::settled_state`, as
/// the resumable route's `HEAD`): while one runs the recorded offset is outdated, and a client
/// that resumed from it would be refused (409) or, after a cut, told too little.
async fn head<S: ResumableStore>(
    store: &S,
    ex: &mut Exchange<'_>,
    id: &S::Id,
) -> Result<(), weir::Error> {
    let state = match store.settled_state(id).await {
        Ok(s) => s,
        Err(ResumableError::Busy) => {
            let message = "a PATCH to this upload is still running";
            let headers = [RESUMABLE, ("retry-after", "1")];
            return reply::error(ex, Problem::Unavailable, message, &headers).await;
        }
        Err(e) => return refused(ex, e).await,
    };
    let expires = (!state.complete()).then(|| expires(store, &state));
    answer_head(
        ex,
        state.offset(),
        state.length(),
        state.metadata(),
        expires,
    )
    .await
}

/// The answer to `HEAD /tus/{id}`, for both stores: the offset, the length (or that it is
/// deferred), the metadata, and the expiry of an upload not yet complete.
async fn answer_head(
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
async fn patch<S: ResumableStore>(
    svc: &Service,
    store: &S,
    ex: &mut Exchange<'_>,
    id: &S::Id,
) -> Result<(), weir::Error> {
    let Some((claimed, expected)) = patch_fields(ex).await? else {
        return Ok(());
    };
    let state = match store.state(id).await {
        Ok(Some(s)) => s,
        Ok(None) => return fail(ex, Problem::NotFound, "no such upload").await,
        Err(e) => return reply::store_error(ex, &e).await,
    };
    // Checked again by the store as the append begins (under its lock or lease).
    if claimed != state.offset() {
        return offset_mismatch(ex, state.offset()).await;
    }
    let Some(length) = patch_length(svc, ex, state.length(), state.offset()).await? else {
        return Ok(());
    };
    if state.complete() {
        return already_complete(ex, state.offset()).await;
    }
    receive(svc, store, ex, id, (claimed, length), expected, None).await
}

/// A `PATCH`'s own fields: (`Upload-Offset`, `Upload-Checksum`'s SHA-256); `None` when
/// refused (answered).
async fn patch_fields(
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
async fn patch_length(
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
async fn already_complete(ex: &mut Exchange<'_>, offset: u64) -> Result<(), weir::Error> {
    if has_body(ex) {
        return fail(ex, Problem::BadRequest, "upload is already complete").await;
    }
    ex.respond(StatusCode::NO_CONTENT)
        .header(RESUMABLE.0, RESUMABLE.1)
        .header_display("upload-offset", offset)
        .empty()
        .await
}

async fn offset_mismatch(ex: &mut Exchange<'_>, offset: u64) -> Result<(), weir::Error> {
    let offset = offset.to_string();
    let headers = [RESUMABLE, ("upload-offset", offset.as_str())];
    let message = "Upload-Offset does not match the upload's offset";
    reply::error(ex, Problem::OffsetMismatch, message, &headers).await
}

/// The answer to a refusal of the store's resumable layer.
async fn refused(ex: &mut Exchange<'_>, e: ResumableError) -> Result<(), weir::Error> {
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
/// `--max-upload`; a length given here is recorded): held when it carries its checksum
/// (`expected`, the request's SHA-256), which is checked before anything of it is recorded;
/// completes the upload when the offset reaches the length, and answers (`201` + `location`
/// for a creation, else `204`).
async fn receive<S: ResumableStore>(
    svc: &Service,
    store: &S,
    ex: &mut Exchange<'_>,
    id: &S::Id,
    (offset, length): (u64, Option<u64>),
    expected: Option<[u8; 32]>,
    location: Option<&str>,
) -> Result<(), weir::Error> {
    let max = svc.options.max_upload;
    let room = length.unwrap_or(max).saturating_sub(offset);
    if ex.request().content_length().is_some_and(|n| n > room) {
        let message = format!("content goes past Upload-Length ({room} bytes left)");
        return fail(ex, Problem::TooLarge, &message).await;
    }
    ex.set_max_body_size(Some(room));
    let mut appending = match store.append(id, offset, length).await {
        Ok(a) => a,
        Err(e) => return refused(ex, e).await,
    };
    let held = expected.is_some();
    if held {
        appending.hold();
    }
    let received = match appending.file() {
        Some(file) => into_file(svc, ex, file).await,
        None => loop {
            match ex.read_body_chunk().await {
                Ok(Some(chunk)) => {
                    // Waits while the store is busy with earlier bytes: the backpressure. tus
                    // has no progress announcements: a recorded offset is not sent.
                    if let Err(e) = appending.write(&chunk).await {
                        // Ending the append releases it; the store keeps the last recorded
                        // state, from which the client resumes. A held one is discarded
                        // (its parts in flight waited for); another is dropped (its parts in
                        // flight cancelled: any that still lands holds the same bytes the
                        // next append sends under its number).
                        if held {
                            let _ = appending.discard().await;
                        }
                        if matches!(e, StoreError::PreconditionFailed) {
                            // Its lease was taken over (this node stalled past it) or the
                            // upload was cancelled.
                            return refused(ex, ResumableError::Busy).await;
                        }
                        return reply::store_error(ex, &e).await;
                    }
                }
                Ok(None) => break Ok(()),
                Err(e) => break Err(BodyFailure::Body(e)),
            }
        },
    };
    if let Err(failure) = received {
        // A held request cut short: its checksum cannot be checked, so none of it is kept.
        // Another keeps and records what arrived: the client resumes from there.
        let kept = if held {
            appending.discard().await
        } else {
            appending.finish(false).await.map(drop)
        };
        if let Err(e) = &kept {
            tracing::warn!(upload = %id, error = %e, "tus upload: recording a cut append failed");
        }
        return failure.answer(ex, max).await;
    }
    if let Some(expected) = expected {
        if appending.request_sha256().await != Some(expected) {
            if let Err(e) = appending.discard().await {
                return reply::store_error(ex, &e).await;
            }
            return checksum_mismatch(ex).await;
        }
    }
    if let Some(file) = appending.file() {
        keep_media_type(&file.appending, &mut file.upload);
    }
    // A body without Content-Length completes the upload too when it reached the length.
    let completes = length.is_some_and(|l| appending.received() == l);
    // ALLOCATION: the target's path, for the stored event, once per completing request.
    let target = completes.then(|| appending.state().target().clone());
    let end = appending.finish(completes).await;
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
        Ok(ResumableEnd::Incomplete(state)) => {
            r.header_display("upload-offset", state.offset())
                .header("upload-expires", expires(store, &state))
                .empty()
                .await
        }
        Ok(ResumableEnd::Completed(committed)) => {
            if let Some(target) = &target {
                svc.on_stored(target.as_str(), &committed);
            }
            r = r.header_display("upload-offset", committed.size);
            if let Some(sum) = committed.sha256 {
                // ALLOCATION: one header value at completion.
                let mut value = String::from("sha-256=:");
                crate::serve::base64::encode_into(&sum, &mut value);
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

/// The body into the local store's file (its "local powers": `resumable.rs`'s paths, splice
/// with `--no-hash`, direct reads, hashing beside), checkpointed while it runs unless held
/// (then all of it can be taken back).
async fn into_file(
    svc: &Service,
    ex: &mut Exchange<'_>,
    file: &mut LocalAppend,
) -> Result<(), BodyFailure> {
    // As on the IETF path: the first request hashes while receiving, and so does a resumed
    // one whose upload kept its hash state.
    let hashing = file.upload.is_hashing();
    let mut counts = WhereHashed::default();
    if file.held() {
        let mut none = NoCheckpoints;
        return append_body(svc, ex, &mut file.upload, hashing, &mut counts, &mut none).await;
    }
    // tus has no progress announcements: the offset is recorded, not sent.
    let mut checkpoints = AppendCheckpoints::new(&mut file.appending, false);
    let received = append_body(
        svc,
        ex,
        &mut file.upload,
        hashing,
        &mut counts,
        &mut checkpoints,
    )
    .await;
    // The checkpoint out, if any, ends before the request records its end.
    match checkpoints.settle().await {
        Err(e) if received.is_ok() => Err(BodyFailure::Store(e)),
        _ => received,
    }
}
