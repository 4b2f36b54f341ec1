//! tus 1.0.0 on `/tus/` with `--store s3://`: the protocol face of `tus.rs` (its parsing,
//! admission and answers, reused) on the uploads kept in the bucket (`S3Resumables`, as
//! `remote_resumable.rs` serves them over the IETF draft), so that a tus upload created
//! through one node continues and completes through any other.
//!
//! The routes and answers are `tus.rs`'s, with these differences:
//!
//! - **`checksum`**: an append records its parts as the store acknowledges them, so a request
//!   that carries `Upload-Checksum` is *held* instead (`S3Append::hold_records`, weir-store's
//!   `s3/resumable/held.rs`): its parts are recorded only at its end, once its own SHA-256
//!   matched; on a mismatch (`460`), or a cut, none of it is (`S3Append::discard`, which waits
//!   for its parts in flight), and the next append sends those part numbers again from the
//!   recorded offset. The whole upload's SHA-256 is still answered (`Repr-Digest`).
//! - **Ids** are the bucket's (32 hex digits); `Upload-Expires` is the manifest's expiry.
//! - **An append in progress** holds the upload's lease on whichever node runs it: a second
//!   one, on any node, gets `423`.
//! - **Quota**: as the bucket's resumable uploads (`--max-storage`: a declared length that
//!   cannot fit is `507` at creation, an append's bytes `507` when they reach the quota).

use super::auth::{Access, Caller, Verdict};
use super::remote_resumable;
use super::reply::{self, Problem};
use super::service::Service;
use super::tus::{self, Creation, RESUMABLE, answer_head, fail};
use super::upload::BodyFailure;
use http::StatusCode;
use std::time::{Duration, UNIX_EPOCH};
use weir::{Exchange, http};
use weir_store::{ResumableError, S3Append, S3AppendEnd, S3Resumables, S3UploadState, StoreError};

/// Routes `/tus` and `/tus/...` (`rest`: what follows `/tus/`) to the bucket's uploads.
/// `verdict`: the write scope, judged by `service.rs`; a prefix token's target is judged
/// here (at creation from `Upload-Metadata`, else on the upload's manifest).
pub(super) async fn serve(
    svc: &Service,
    ups: &S3Resumables,
    ex: &mut Exchange<'_>,
    rest: &str,
    caller: Caller<'_>,
    verdict: Verdict,
) -> Result<(), weir::Error> {
    if *ex.request().method() == http::Method::OPTIONS {
        return tus::options_with(svc, ex, tus::EXTENSIONS).await;
    }
    if !tus::admitted(ex, verdict).await? {
        return Ok(());
    }
    let method = ex.request().method().clone();
    if rest.is_empty() {
        return match method {
            http::Method::POST => create(svc, ups, ex, caller).await,
            _ => tus::not_allowed(ex, "OPTIONS, POST").await,
        };
    }
    let id = rest;
    if caller.confined() {
        match ups.state(id).await {
            Ok(Some(s)) => {
                if caller.check(Access::Write, Some(s.target.as_str())) != Verdict::Allowed {
                    return tus::forbidden(ex).await;
                }
            }
            Ok(None) => return fail(ex, Problem::NotFound, "no such upload").await,
            Err(e) => return reply::store_error(ex, &e).await,
        }
    }
    match method {
        http::Method::HEAD => head(ups, ex, id).await,
        http::Method::PATCH => patch(svc, ups, ex, id).await,
        http::Method::DELETE => match ups.cancel(id).await {
            Ok(()) => {
                ex.respond(StatusCode::NO_CONTENT)
                    .header(RESUMABLE.0, RESUMABLE.1)
                    .empty()
                    .await
            }
            Err(e) => tus::refused(ex, e).await,
        },
        _ => tus::not_allowed(ex, "OPTIONS, HEAD, PATCH, DELETE").await,
    }
}

/// `Upload-Expires` of `state`.
fn expires(state: &S3UploadState) -> String {
    httpdate::fmt_http_date(UNIX_EPOCH + Duration::from_secs(state.expires))
}

/// `POST /tus/`.
async fn create(
    svc: &Service,
    ups: &S3Resumables,
    ex: &mut Exchange<'_>,
    caller: Caller<'_>,
) -> Result<(), weir::Error> {
    let Some(Creation {
        length,
        metadata,
        path,
        body,
        expected,
    }) = tus::creation(svc, ex, caller).await?
    else {
        return Ok(());
    };
    let made = ups
        .create_with_metadata(&path, length, None, None, metadata.as_deref())
        .await;
    let (id, state) = match made {
        Ok(m) => m,
        Err(e) => return reply::store_error(ex, &e).await,
    };
    // ALLOCATION: the upload's URL, once per upload.
    let location = format!("{}{id}", tus::PREFIX);
    if !body && length != Some(0) {
        return ex
            .respond(StatusCode::CREATED)
            .header(RESUMABLE.0, RESUMABLE.1)
            .header("location", &location)
            .header("upload-offset", "0")
            .header("upload-expires", expires(&state))
            .empty()
            .await;
    }
    receive(svc, ups, ex, &id, (0, length), expected, Some(&location)).await
}

/// `HEAD /tus/{id}`: the recorded state once no append holds the upload's lease (as the
/// resumable route's `HEAD`): while one runs the recorded offset is outdated.
async fn head(ups: &S3Resumables, ex: &mut Exchange<'_>, id: &str) -> Result<(), weir::Error> {
    let state = match ups.settled_state(id, remote_resumable::HEAD_WAIT).await {
        Ok(s) => s,
        Err(ResumableError::Busy) => {
            let message = "a PATCH to this upload is still running";
            let headers = [RESUMABLE, ("retry-after", "1")];
            return reply::error(ex, Problem::Unavailable, message, &headers).await;
        }
        Err(e) => return tus::refused(ex, e).await,
    };
    let expires = (!state.complete).then(|| expires(&state));
    answer_head(
        ex,
        state.offset,
        state.length,
        state.metadata.as_deref(),
        expires,
    )
    .await
}

/// `PATCH /tus/{id}`.
async fn patch(
    svc: &Service,
    ups: &S3Resumables,
    ex: &mut Exchange<'_>,
    id: &str,
) -> Result<(), weir::Error> {
    let Some((claimed, expected)) = tus::patch_fields(ex).await? else {
        return Ok(());
    };
    let state = match ups.state(id).await {
        Ok(Some(s)) => s,
        Ok(None) => return fail(ex, Problem::NotFound, "no such upload").await,
        Err(e) => return reply::store_error(ex, &e).await,
    };
    // Checked again against the manifest under the lease (`S3Resumables::append`).
    if claimed != state.offset {
        return tus::offset_mismatch(ex, state.offset).await;
    }
    let Some(length) = tus::patch_length(svc, ex, state.length, state.offset).await? else {
        return Ok(());
    };
    if state.complete {
        return tus::already_complete(ex, state.offset).await;
    }
    receive(svc, ups, ex, id, (claimed, length), expected, None).await
}

/// Streams the body into upload `id` at `offset` (of `length`; `None`: deferred, at most
/// `--max-upload`), held when it carries its checksum (`expected`, see the module doc), which
/// is checked before anything of it is recorded; completes the upload when the offset reaches
/// the length, and answers (`201` + `location` for a creation, else `204`).
async fn receive(
    svc: &Service,
    ups: &S3Resumables,
    ex: &mut Exchange<'_>,
    id: &str,
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
    let mut appending = match ups.append(id, offset, length).await {
        Ok(a) => a,
        Err(e) => return tus::refused(ex, e).await,
    };
    if expected.is_some() {
        appending.hold_records();
    }
    loop {
        match ex.read_body_chunk().await {
            Ok(Some(chunk)) => {
                // Waits while the store is busy with earlier parts: the backpressure. tus has
                // no progress announcements: a recorded offset is not sent.
                if let Err(e) = appending.write(&chunk).await {
                    // Ending the append releases its lease; the manifest keeps the last
                    // recorded state, from which the client resumes.
                    end_unrecorded(appending, expected.is_some()).await;
                    if matches!(e, StoreError::PreconditionFailed) {
                        // Its lease was taken over (this node stalled past it) or the upload
                        // was cancelled.
                        return tus::refused(ex, ResumableError::Busy).await;
                    }
                    return reply::store_error(ex, &e).await;
                }
            }
            Ok(None) => break,
            Err(e) => {
                if expected.is_some() {
                    // A held request cut short: its checksum cannot be checked, so none of it
                    // is kept (as locally).
                    appending.discard().await;
                } else if let Err(e) = appending.finish(false).await {
                    // Keep and record what arrived: the client resumes from there.
                    tracing::warn!(upload = %id, error = %e, "tus upload: recording a cut append failed");
                }
                return BodyFailure::Body(e).answer(ex, max).await;
            }
        }
    }
    if let Some(expected) = expected {
        if appending.request_sha256() != Some(expected) {
            appending.discard().await;
            return tus::checksum_mismatch(ex).await;
        }
    }
    let completes = length.is_some_and(|l| appending.received() == l);
    let target = appending.state().target;
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
        Ok(S3AppendEnd::Incomplete(state)) => {
            r.header_display("upload-offset", state.offset)
                .header("upload-expires", expires(&state))
                .empty()
                .await
        }
        Ok(S3AppendEnd::Completed(committed)) => {
            svc.on_stored(target.as_str(), &committed);
            r = r.header_display("upload-offset", committed.size);
            if let Some(sum) = committed.sha256 {
                // ALLOCATION: one header value at completion.
                let mut value = String::from("sha-256=:");
                super::base64::encode_into(&sum, &mut value);
                value.push(':');
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

/// Ends an append that failed midway without recording more: a held one is discarded (its
/// parts in flight waited for, see the module doc); another is dropped (the manifest keeps
/// what it recorded; its parts in flight are cancelled, and any that still lands holds the
/// same bytes the next append sends under its number).
async fn end_unrecorded(appending: S3Append, held: bool) {
    if held {
        appending.discard().await;
    }
}
