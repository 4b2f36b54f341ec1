//! CompleteMultipartUpload: the part list (XML, at most 4 MiB, its protection checked as any
//! small body's) judged by the store (`InvalidPartOrder`, `InvalidPart`, `EntityTooSmall`,
//! `MalformedXML` for none), the object assembled and committed by the store atomically
//! (nothing visible before it is whole and its SHA-256 computed), with the request's
//! `If-Match` / `If-None-Match` judged on the version the commit replaces. A refusal keeps the
//! upload: the client may complete it again. A completion sent again with the same parts gets
//! the same answer.
//!
//! A part's checksum named in the list must be the one recorded (`InvalidPart`); when the
//! upload announced an algorithm and every part has its checksum, the answer carries S3's
//! composite checksum (`base64(checksum of the parts' checksums)-N`).

use super::super::Ctx;
use super::super::reply::{self, Missing};
use super::{error, object_path};
use crate::serve::preconditions;
use http::StatusCode;
use weir::{Exchange, http};
use weir_proto::conditional;
use weir_s3api::checksum::{ChecksumAlgorithm, ChecksumValue, CompositeChecksum};
use weir_s3api::xml::{parse, write};
use weir_s3api::{ErrorCode, S3Error};
use weir_store::{
    CompletePart, FileMeta, MultipartCompleted, MultipartStore, Store, StoreError, UploadId,
};

/// CompleteMultipartUpload.
pub(in super::super) async fn complete<S: Store, M: MultipartStore>(
    ctx: &Ctx<'_>,
    store: &S,
    parts: &M,
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
    let composite = match checksums(parts, id, &listed, head).await {
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
    let check = |meta: Option<&FileMeta>| preconditions::hold(head, meta);
    let conditional = conditional::has_preconditions(&preconditions::Fields(head));
    let done = parts
        .complete(id, &named, if conditional { Some(&check) } else { None })
        .await;
    let done: MultipartCompleted = match done {
        Ok(d) if d.upload.key == path => d,
        Ok(_) => return reply::error(ex, &no_such()).await,
        Err(e) => return reply::error(ex, &error(&e)).await,
    };
    if !done.repeated {
        ctx.svc.on_stored(path.as_str(), &done.committed);
    }
    let etag = preconditions::etag(&done.committed.stored);
    // ALLOCATION: the location, once per completion.
    let host = ex.request().header_str("host").unwrap_or("localhost");
    let location = format!("http://{host}/{bucket}/{key}");
    let checksum = composite.as_ref().map(|(a, t)| (*a, t.as_str()));
    // A completion sent again (the upload is gone) answers without the composite.
    let body =
        write::complete_multipart_upload(&location, bucket, key, etag.trim_matches('"'), checksum);
    reply::xml(ex, StatusCode::OK, body).await
}

/// The completion's checksums against the recorded parts': a checksum the list names must be
/// the part's (`InvalidPart`); with an algorithm announced at creation, every listed part sent
/// with its checksum must be named with it (`BadDigest`), and, when every part has one, the
/// composite (`base64(checksum of the parts' checksums)-N`) must match the request's
/// `x-amz-checksum-*` if it sends one (`BadDigest`).
/// Returns the composite to answer. An upload already completed has nothing to judge.
async fn checksums<M: MultipartStore>(
    parts: &M,
    id: UploadId,
    listed: &[parse::CompletedPart],
    head: &weir::Request,
) -> Result<Option<(ChecksumAlgorithm, String)>, S3Error> {
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
    let bad_digest = || S3Error::new(ErrorCode::BadDigest, "A part's checksum is missing.");
    let mut combined = algorithm.map(CompositeChecksum::new);
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
                .and_then(|(_, v)| ChecksumValue::parse_base64(alg, v).ok())
        };
        for claimed in &entry.checksums {
            if recorded_value(claimed.algorithm()).as_ref() != Some(claimed) {
                let e = S3Error::new(ErrorCode::InvalidPart, "A part's checksum does not match.");
                return Err(e);
            }
        }
        if let Some(alg) = algorithm {
            match recorded_value(alg) {
                // A part sent with its checksum must be named with it.
                Some(value) => {
                    if !entry.checksums.iter().any(|v| v.algorithm() == alg) {
                        return Err(bad_digest());
                    }
                    if let Some(c) = combined.as_mut() {
                        c.add_part(&value).map_err(|_| bad_digest())?;
                    }
                }
                // A part without one (copied, or sent without): no composite for the object.
                None => combined = None,
            }
        }
    }
    let composite = match (algorithm, combined) {
        (Some(alg), Some(c)) => Some((alg, c.finalize_text())),
        _ => None,
    };
    if let Some((alg, text)) = &composite {
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
    Ok(composite)
}
