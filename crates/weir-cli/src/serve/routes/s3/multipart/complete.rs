//! CompleteMultipartUpload: the part list (XML, at most 4 MiB, its protection checked as any
//! small body's) judged by the store (`InvalidPartOrder`, `InvalidPart`, `EntityTooSmall`,
//! `MalformedXML` for none), the object assembled and committed by the store atomically
//! (nothing visible before it is whole and its SHA-256 computed), with the request's
//! `If-Match` / `If-None-Match` judged on the version the commit replaces. A refusal keeps the
//! upload: the client may complete it again. A completion sent again with the same parts gets
//! the same answer.
//!
//! The store's completion runs on a task of its own. One still running after
//! `--s3-api-keep-alive` is answered as Amazon S3 answers a long one: `200 OK` at once, the XML
//! declaration, a space every as many seconds, then the result's document or S3's `<Error>`
//! document (clients look for one in a completion's `200`; botocore takes it for a 500 and
//! retries, which a refusal refuses alike). Without it, a client whose read timeout is shorter
//! than the assembly of a very large object gives up on an upload that then completes (a
//! retry that arrives meanwhile gets the running completion's answer: the local store waits
//! for it, the S3 store completes the same parts again).
//! The task owns what it needs (the preconditions as text): a client that goes away does not
//! stop a completion half-way, and the request still waits for it, so that what it stored is
//! noted in the request's scope (the access log's line, the hooks: `serve/stored.rs`).
//!
//! A part's checksum named in the list must be the one recorded (`InvalidPart`); when the
//! upload announced an algorithm and every part has its checksum, the object's checksum is
//! formed from the parts' as the upload's type says: `COMPOSITE`, S3's
//! `base64(checksum of the parts' checksums)-N`; `FULL_OBJECT` (CRCs only), the CRC of the
//! whole object, combined from the parts' CRCs and sizes. A value the request sends
//! (`x-amz-checksum-*`) must be that one (`BadDigest`). It is answered, and kept with the
//! object by the store's commit (`weir_store::ObjectChecksum`, with the parts' own values for
//! GetObject's `partNumber`); the store checks that the parts it assembles are the ones the
//! checksum was formed from (a part replaced meanwhile: `InvalidPart`, nothing stored).
//!
//! Why the full-object CRC is combined rather than computed over the assembled object: each
//! part's CRC was verified as its bytes arrived, and combining costs a few hundred operations
//! per part (`weir_s3api::checksum::combine_crc`), where reading the object back would cost a
//! pass over every byte; the local store assembles parts with `copy_file_range`, so the bytes
//! never pass through user space at completion to be checksummed on the way.

use super::super::Ctx;
use super::super::reply::{self, Missing};
use super::{error, object_path};
use crate::serve::preconditions;
use http::StatusCode;
use std::sync::Arc;
use std::time::Duration;
use weir::{Exchange, http};
use weir_s3api::checksum::{
    ChecksumAlgorithm, ChecksumType, ChecksumValue, CompositeChecksum, combine_crc,
};
use weir_s3api::xml::{parse, write};
use weir_s3api::{ErrorCode, S3Error};
use weir_store::{
    CompletePart, FileMeta, MultipartCompleted, MultipartError, MultipartStore, ObjectChecksum,
    Store, StoreError, UploadId, VersionCheck,
};

/// CompleteMultipartUpload.
pub(in super::super) async fn complete<S: Store, M: MultipartStore>(
    ctx: &Ctx<'_>,
    store: &S,
    shared: &Arc<M>,
    ex: &mut Exchange<'_>,
    bucket: &str,
    key: &str,
    upload_id: &str,
) -> Result<(), weir::Error> {
    let path = match object_path(bucket, key) {
        Ok(p) => p,
        Err(e) => return reply::error(ex, &e).await,
    };
    let body =
        match super::super::small_body::read(ctx.caller, ex, parse::MAX_COMPLETE_BODY).await? {
            Ok(b) => b,
            Err(e) => return reply::error(ex, &e).await,
        };
    let no_such = || S3Error::from_code(ErrorCode::NoSuchUpload);
    let Some(id) = UploadId::parse(upload_id) else {
        return reply::error(ex, &no_such()).await;
    };
    let listed = match parse::complete_multipart_upload(&body) {
        Ok(l) => l,
        Err(e) => return reply::error(ex, &e).await,
    };
    let parts: &M = shared;
    let head = ex.request();
    // `If-Match` where there is no object: S3 answers `NoSuchKey`, not a failed precondition.
    if head.header("if-match").is_some() {
        match store.open(&path).await {
            Ok(_) => {}
            Err(StoreError::NotFound) => {
                return reply::error(ex, &S3Error::from_code(ErrorCode::NoSuchKey)).await;
            }
            Err(e) => return reply::error(ex, &reply::store_error(&e, Missing::Key)).await,
        }
    }
    // The checksums, judged before anything is stored (the store judges ETags and sizes).
    let formed = match checksums(parts, id, &listed, head).await {
        Ok(c) => c,
        Err(e) => return reply::error(ex, &e).await,
    };
    let named: Vec<CompletePart> = listed
        .iter()
        .map(|p| CompletePart {
            number: p.part_number,
            etag: p.etag.clone(),
        })
        .collect();
    // The preconditions as text the completion's task owns, judged at the commit.
    let condition = match preconditions::write_condition(head) {
        Ok(kept) => kept,
        Err(why) => return reply::error(ex, &S3Error::new(ErrorCode::InvalidArgument, why)).await,
    };
    let kept = formed.as_ref().map(|(_, _, kept)| kept.clone());
    // The completion runs on a task of its own (it outlives this request if the client goes),
    // so that this one can keep the connection alive while it runs. ALLOCATION: the task, once
    // per completion.
    let parts = Arc::clone(shared);
    let mut running = tokio::spawn(async move {
        let check = |meta: Option<&FileMeta>| preconditions::kept_hold(&condition, meta);
        let check: Option<VersionCheck<'_>> = (!condition.is_empty()).then_some(&check);
        parts.complete(id, &named, kept.as_ref(), check).await
    });
    let keep_alive = ctx.multiparts.keep_alive;
    // Zero: the `200` at once, whatever the completion's outcome (tests use it so).
    let answered_in_time = if keep_alive.is_zero() {
        None
    } else {
        tokio::time::timeout(keep_alive, &mut running).await.ok()
    };
    let Some(done) = answered_in_time else {
        return keep_alive_until_done(ctx, ex, running, keep_alive, &path, (bucket, key), formed)
            .await;
    };
    let done = noted(ctx, joined(done), &path);
    match answer(ex, done, &path, (bucket, key), formed) {
        Ok(body) => reply::xml(ex, StatusCode::OK, body).await,
        Err(e) => reply::error(ex, &e).await,
    }
}

/// The checksum formed for the object: its algorithm, its type, and what the store keeps.
type ObjectSum = Option<(ChecksumAlgorithm, ChecksumType, ObjectChecksum)>;

/// The completion's outcome, the object it stored noted for the request's log and the hooks
/// (on the request's task, whose scope the note is: `serve/stored.rs`).
fn noted(
    ctx: &Ctx<'_>,
    done: Result<MultipartCompleted, MultipartError>,
    path: &weir_store::StorePath,
) -> Result<MultipartCompleted, MultipartError> {
    if let Ok(done) = &done {
        if !done.repeated && done.upload.key == *path {
            ctx.svc.on_stored(path.as_str(), &done.committed);
        }
    }
    done
}

/// The completion's outcome from its task (a task that panicked: `InternalError`).
fn joined(
    done: Result<Result<MultipartCompleted, MultipartError>, tokio::task::JoinError>,
) -> Result<MultipartCompleted, MultipartError> {
    done.unwrap_or_else(|e| {
        Err(MultipartError::Store(StoreError::Io {
            op: "complete multipart upload",
            source: std::io::Error::other(e.to_string()),
        }))
    })
}

/// What Amazon S3 does with a completion that takes long: the `200 OK` head now, then a space
/// every `every` while it runs (after the XML declaration, where XML allows white space), then
/// the result's document, or S3's `<Error>` document in the same `200` (which S3 clients look
/// for in a CompleteMultipartUpload's answer).
async fn keep_alive_until_done(
    ctx: &Ctx<'_>,
    ex: &mut Exchange<'_>,
    mut running: tokio::task::JoinHandle<Result<MultipartCompleted, MultipartError>>,
    every: Duration,
    path: &weir_store::StorePath,
    names: (&str, &str),
    formed: ObjectSum,
) -> Result<(), weir::Error> {
    const DECLARATION: &[u8] = b"<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
    let id = reply::request_id();
    // ALLOCATION: the resource (the request's path) for an error's document.
    let resource = ex.request().path().to_owned();
    let kept_alive = async {
        let mut body = ex
            .respond(StatusCode::OK)
            .header("x-amz-request-id", &id)
            .header("content-type", "application/xml")
            .stream(None)
            .await?;
        body.write(DECLARATION).await?;
        body.flush().await?;
        loop {
            match tokio::time::timeout(every.max(Duration::from_millis(100)), &mut running).await {
                Ok(done) => return Ok((body, joined(done))),
                Err(_) => {
                    body.write(b" ").await?;
                    body.flush().await?;
                }
            }
        }
    };
    let (mut body, done) = match kept_alive.await {
        Ok(answered) => answered,
        Err(gone) => {
            // The client went away: the completion goes on, and what it stores is noted.
            let _ = noted(ctx, joined(running.await), path);
            return Err(gone);
        }
    };
    let done = noted(ctx, done, path);
    let document = match answer(body.exchange(), done, path, names, formed) {
        Ok(document) => document,
        Err(e) => weir_s3api::xml::errors::error_body(&e, &resource, &id),
    };
    body.write(without_declaration(&document)).await?;
    body.finish().await
}

/// `document` after its XML declaration (the streamed answer sent its own first).
fn without_declaration(document: &[u8]) -> &[u8] {
    match document.strip_prefix(b"<?xml") {
        Some(rest) => match rest.windows(2).position(|w| w == b"?>") {
            Some(end) => rest[end + 2..].trim_ascii_start(),
            None => document,
        },
        None => document,
    }
}

/// The answer's document for the completion's outcome, or the error to answer.
fn answer(
    ex: &mut Exchange<'_>,
    done: Result<MultipartCompleted, MultipartError>,
    path: &weir_store::StorePath,
    (bucket, key): (&str, &str),
    formed: ObjectSum,
) -> Result<Vec<u8>, S3Error> {
    let done = match done {
        Ok(d) if d.upload.key == *path => d,
        Ok(_) => return Err(S3Error::from_code(ErrorCode::NoSuchUpload)),
        Err(e) => return Err(error(&e)),
    };
    let etag = preconditions::etag(&done.committed.stored);
    // ALLOCATION: the location, once per completion.
    let host = ex.request().header_str("host").unwrap_or("localhost");
    let location = format!("http://{host}/{bucket}/{key}");
    let checksum = formed
        .as_ref()
        .map(|(a, kind, kept)| (*a, kept.value.as_str(), *kind));
    // A completion sent again (the upload is gone) answers without the checksum.
    Ok(write::complete_multipart_upload(
        &location,
        bucket,
        key,
        etag.trim_matches('"'),
        checksum,
    ))
}

/// The completion's checksums against the recorded parts': a checksum the list names must be
/// the part's (`InvalidPart`); with an algorithm announced at creation, every listed part sent
/// with its checksum must be named with it (`BadDigest`), and, when every part has one, the
/// object's checksum formed from them (module doc) must match the request's
/// `x-amz-checksum-*` if it sends one (`BadDigest`).
/// Returns the object's checksum to answer and keep. An upload already completed has nothing
/// to judge.
async fn checksums<M: MultipartStore>(
    parts: &M,
    id: UploadId,
    listed: &[parse::CompletedPart],
    head: &weir::Request,
) -> Result<Option<(ChecksumAlgorithm, ChecksumType, ObjectChecksum)>, S3Error> {
    let Ok(upload) = parts.upload(id).await else {
        return Ok(None);
    };
    let recorded = parts
        .list_parts(id, 0, weir_store::MAX_PART_NUMBER as usize)
        .await
        .map_err(|e| error(&e))?;
    let algorithm = upload
        .meta
        .checksum_algorithm
        .as_deref()
        .and_then(ChecksumAlgorithm::from_name);
    // An upload recorded before the type was kept: S3's default then, composite.
    let kind = match upload.meta.checksum_type.as_deref() {
        Some("FULL_OBJECT") => ChecksumType::FullObject,
        _ => ChecksumType::Composite,
    };
    let bad_digest = || S3Error::new(ErrorCode::BadDigest, "A part's checksum is missing.");
    let mut combined = algorithm.map(|alg| Formed::new(alg, kind));
    // ALLOCATION: the parts' checksums as recorded (at most 10,000 short strings), for the
    // store to check and keep.
    let mut part_values = Vec::new();
    for entry in listed {
        let Some(part) = recorded
            .parts
            .iter()
            .find(|p| p.number == entry.part_number)
        else {
            continue; // the store refuses it (`InvalidPart`)
        };
        let recorded_value = |alg: ChecksumAlgorithm| {
            part.checksums
                .iter()
                .find(|(name, _)| ChecksumAlgorithm::from_name(name) == Some(alg))
                .and_then(|(_, v)| Some((ChecksumValue::parse_base64(alg, v).ok()?, v)))
        };
        for claimed in &entry.checksums {
            if recorded_value(claimed.algorithm()).map(|(v, _)| v).as_ref() != Some(claimed) {
                let e = S3Error::new(ErrorCode::InvalidPart, "A part's checksum does not match.");
                return Err(e);
            }
        }
        if let Some(alg) = algorithm {
            match recorded_value(alg) {
                // A part sent with its checksum must be named with it.
                Some((value, text)) => {
                    if !entry.checksums.iter().any(|v| v.algorithm() == alg) {
                        return Err(bad_digest());
                    }
                    if let Some(c) = combined.as_mut() {
                        c.add_part(&value, part.size).ok_or_else(bad_digest)?;
                        part_values.push(text.clone());
                    }
                }
                // A part without one (copied, or sent without): no checksum for the object.
                None => combined = None,
            }
        }
    }
    let formed = match (algorithm, combined.and_then(Formed::finish)) {
        (Some(alg), Some(value)) => Some((alg, value)),
        _ => None,
    };
    if let Some((alg, text)) = &formed {
        if let Some(claimed) = head.header_str(alg.header_name()) {
            if claimed != text {
                let e = S3Error::new(
                    ErrorCode::BadDigest,
                    "The object's checksum does not match.",
                );
                return Err(e);
            }
        }
    }
    Ok(formed.map(|(alg, value)| {
        let kept = ObjectChecksum {
            algorithm: alg.name().to_owned(),
            kind: kind.as_str().to_owned(),
            value,
            parts: part_values,
        };
        (alg, kind, kept)
    }))
}

/// An object's checksum being formed from its parts', part by part.
// One per completion, in a future that is boxed already (`S3Api::handle`): its size costs no
// copy worth a second allocation.
#[allow(clippy::large_enum_variant)]
enum Formed {
    Composite(CompositeChecksum),
    /// The CRC of the parts so far (`None` before the first).
    FullObject(ChecksumAlgorithm, Option<ChecksumValue>),
}

impl Formed {
    fn new(algorithm: ChecksumAlgorithm, kind: ChecksumType) -> Formed {
        match kind {
            ChecksumType::Composite => Formed::Composite(CompositeChecksum::new(algorithm)),
            ChecksumType::FullObject => Formed::FullObject(algorithm, None),
        }
    }

    /// Adds the next part's checksum (of `size` bytes); `None` if it cannot be (another
    /// algorithm, or a hash where a CRC is combined).
    fn add_part(&mut self, value: &ChecksumValue, size: u64) -> Option<()> {
        match self {
            Formed::Composite(c) => c.add_part(value).ok(),
            Formed::FullObject(alg, so_far) => {
                if value.algorithm() != *alg {
                    return None;
                }
                *so_far = Some(match so_far.as_ref() {
                    None => *value,
                    Some(before) => combine_crc(before, value, size)?,
                });
                Some(())
            }
        }
    }

    /// The object's checksum as S3 writes it (`base64-N` for a composite); `None` for no part.
    fn finish(self) -> Option<String> {
        match self {
            Formed::Composite(c) => Some(c.finalize_text()),
            Formed::FullObject(_, so_far) => so_far.map(|v| v.to_base64()),
        }
    }
}
