//! GetObject and HeadObject, on `/files/`'s download path (`routes/files/download.rs`): the
//! object is opened once (its metadata, its bytes: one version), the preconditions and `Range`
//! are judged by `download::Answer::judge` (the one rule; here its refusals are S3's errors),
//! and the bytes go out by `download::send`: `sendfile` for a local file, the store's chunks or
//! spliced socket for a bucket.
//!
//! S3's differences from `/files/`: a missing key is `NoSuchKey` (or `NoSuchBucket`), a key
//! naming a folder without its `/` is `NoSuchKey` too (an S3 key names an object, never a
//! listing), and a key ending in `/` that names a folder is the empty object listings show; a failed
//! precondition is `PreconditionFailed`, `304` carries no body; an unsatisfiable range is
//! `InvalidRange` with the object's size; the object's stored metadata (`metadata.rs`:
//! `x-amz-meta-*`, `Cache-Control`, …) is sent with it; `response-content-type` and the other
//! `response-*` parameters set the answer's fields (over the stored ones);
//! `x-amz-checksum-mode: ENABLED` adds the checksum the client sent with the object, kept
//! with it (`weir_store::CHECKSUM_FIELD`; a completed multipart object's composite or
//! full-object one), or else the stored SHA-256 as `x-amz-checksum-sha256`, with
//! `x-amz-checksum-type`; with `partNumber`, the part's own checksum as its upload sent it,
//! with the object's checksum type (S3's answer), when the object kept its parts' checksums;
//! `partNumber` answers that part's bytes of a completed multipart object (its part sizes are
//! kept with it, `weir_store::PARTS_FIELD`) with `x-amz-mp-parts-count`, and part 1 of any
//! other object is all of it.

use super::reply::{self, Missing};
use super::{bucket, keys};
use crate::serve::mime;
use crate::serve::routes::files::download::{self, Answer, Refusal};
use http::StatusCode;
use weir::{Exchange, http};
use weir_s3api::checksum::{ChecksumAlgorithm, ChecksumType, ChecksumValue};
use weir_s3api::route::GetObjectParams;
use weir_s3api::{ErrorCode, S3Error};
use weir_store::{PartLookup, Store, StoreError, StoreObject};

/// GetObject or HeadObject (the method tells).
pub(super) async fn get<S: Store>(
    store: &S,
    ex: &mut Exchange<'_>,
    bucket_name: &str,
    key: &str,
    params: &GetObjectParams,
) -> Result<(), weir::Error> {
    let path = match keys::key_path(bucket_name, key) {
        Ok(keys::Key::Object(p)) => p,
        // A folder is the empty object `dir/` (how listings show an empty one).
        Ok(keys::Key::Folder(path)) => return folder(store, ex, bucket_name, &path).await,
        Err(e) => return reply::error(ex, &e).await,
    };
    let object = match store.open(&path).await {
        Ok(o) => o,
        Err(StoreError::NotFound | StoreError::IsDirectory | StoreError::NotADirectory) => {
            let e = match bucket::exists(store, bucket_name).await {
                Ok(()) => no_such_key(),
                Err(e) => e,
            };
            return reply::error(ex, &e).await;
        }
        Err(e) => return reply::error(ex, &reply::store_error(&e, Missing::Key)).await,
    };
    let meta = *object.meta();
    // Locally one fgetxattr(2); in a bucket, from the HeadObject already made.
    let object_meta = object.object_meta();
    let part = match params.part_number {
        Some(number) => match part_of(ex.request(), object_meta.as_ref(), number) {
            Ok(part) => part,
            Err(e) => return reply::error(ex, &e).await,
        },
        None => None,
    };
    let answer = match Answer::judge(ex.request(), &meta) {
        Ok(a) => a,
        Err(Refusal::NotModified {
            etag,
            last_modified,
        }) => {
            let headers = [("etag", etag.as_str()), ("last-modified", &last_modified)];
            return reply::empty(ex, StatusCode::NOT_MODIFIED, &headers).await;
        }
        Err(Refusal::PreconditionFailed) => {
            let e = S3Error::from_code(ErrorCode::PreconditionFailed);
            return reply::error(ex, &e).await;
        }
        Err(Refusal::Unsatisfiable { size }) => {
            let e = S3Error::from_code(ErrorCode::InvalidRange)
                .with_detail("ActualObjectSize", size.to_string());
            let range = format!("bytes */{size}");
            return reply::error_with(ex, &e, &[("content-range", &range)]).await;
        }
    };
    // A part is its byte range of the object (judged after the preconditions, which are the
    // object's), with the object's number of parts.
    let (answer, parts_count) = match part {
        Some(Part { start, len, count }) => (answer.narrowed(start, len, meta.size), count),
        None => (answer, None),
    };
    let overridden = |name: &http::HeaderName| {
        params
            .response_headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    };
    // Locally one fgetxattr(2): the type the client gave the object, if it was kept.
    let stored_type = mime::content_type(object.media_type().copied(), path.file_name());
    let content_type = match overridden(&http::header::CONTENT_TYPE) {
        Some(t) => t.to_owned(),
        None => stored_type.to_string(),
    };
    // `x-amz-checksum-mode: ENABLED`, for the whole object or one of its parts only (a
    // range's bytes do not have the object's checksum; S3 sends none either): the checksum
    // the client sent with it (or with the part) if one was kept, else the SHA-256 every
    // object has.
    let whole = answer.start == 0 && answer.len == meta.size;
    let wanted = ex
        .request()
        .header("x-amz-checksum-mode")
        .is_some_and(|v| v.eq_ignore_ascii_case(b"ENABLED"));
    let kept = object_meta.as_ref().and_then(|m| m.checksum());
    let checksum: Option<(&'static str, String, &str)> = if !wanted {
        None
    } else if parts_count.is_some() {
        let number = params.part_number.unwrap_or(1);
        let part = object_meta.as_ref().and_then(|m| m.part_checksum(number));
        match (kept, part) {
            (Some((algorithm, kind, _)), Some(value)) => ChecksumAlgorithm::from_name(algorithm)
                .map(|a| (a.header_name(), value.to_owned(), checksum_type(kind))),
            _ => None,
        }
    } else if !whole {
        None
    } else {
        object_checksum(&meta, object_meta.as_ref())
            .map(|(a, value, kind)| (a.header_name(), value, kind.as_str()))
    };
    let head = |ex| {
        let mut response = answer.respond(ex, &meta, content_type);
        if let Some(count) = parts_count {
            response = response.header_display("x-amz-mp-parts-count", count);
        }
        if let Some((name, value, kind)) = &checksum {
            response = response
                .header(*name, value.as_str())
                .header("x-amz-checksum-type", *kind);
        }
        // The stored fields, but those a `response-content-*` (or `response-expires`, …)
        // parameter replaces.
        let fields = object_meta.iter().flat_map(|m| m.fields());
        for (name, value) in fields.filter(|(n, _)| {
            !params
                .response_headers
                .iter()
                .any(|(o, _)| o.as_str() == *n)
        }) {
            response = response.header(name, value);
        }
        for (name, value) in &params.response_headers {
            if name != http::header::CONTENT_TYPE {
                response = response.header(name.as_str(), value.as_str());
            }
        }
        response
    };
    download::send(ex, object, &answer, &path, head).await
}

/// The `x-amz-checksum-type` of a kept checksum's kind.
fn checksum_type(kind: &str) -> &'static str {
    kind_of(kind).as_str()
}

fn kind_of(kind: &str) -> ChecksumType {
    if kind == "COMPOSITE" {
        ChecksumType::Composite
    } else {
        ChecksumType::FullObject
    }
}

/// The whole object's checksum, as GetObject and GetObjectAttributes answer it: the one the
/// client sent with it (or a multipart completion formed), kept with it, else the SHA-256
/// the store has of every object it wrote, as a full-object checksum.
pub(super) fn object_checksum(
    meta: &weir_store::FileMeta,
    kept: Option<&weir_store::ObjectMeta>,
) -> Option<(ChecksumAlgorithm, String, ChecksumType)> {
    match kept.and_then(|m| m.checksum()) {
        // ALLOCATION: the value, once per answer that asks for it.
        Some((algorithm, kind, value)) => {
            ChecksumAlgorithm::from_name(algorithm).map(|a| (a, value.to_owned(), kind_of(kind)))
        }
        None => meta
            .sha256
            .and_then(|d| ChecksumValue::from_bytes(ChecksumAlgorithm::Sha256, &d))
            .map(|c| {
                (
                    ChecksumAlgorithm::Sha256,
                    c.to_base64(),
                    ChecksumType::FullObject,
                )
            }),
    }
}

/// One part of an object (`partNumber`).
struct Part {
    start: u64,
    len: u64,
    /// `x-amz-mp-parts-count`: sent for a multipart object only, as S3 does.
    count: Option<u32>,
}

/// Part `number` of the object whose S3 metadata is `kept` (the part sizes a completion keeps
/// with it, `weir_store::PARTS_FIELD`): a part past the last is `InvalidPart` (what Ceph's
/// s3-tests expect; RGW answers it); an object not uploaded in parts is one part, the whole
/// object (`None`: the answer as judged). `Range` with it is `InvalidRequest`, as S3 refuses.
fn part_of(
    head: &weir::Request,
    kept: Option<&weir_store::ObjectMeta>,
    number: u32,
) -> Result<Option<Part>, S3Error> {
    if head.header("range").is_some() {
        return Err(S3Error::new(
            ErrorCode::InvalidRequest,
            "Cannot specify both Range header and partNumber query parameter",
        ));
    }
    let past = || S3Error::from_code(ErrorCode::InvalidPart);
    let lookup = kept.map_or(PartLookup::NotMultipart, |m| m.part(number));
    match lookup {
        PartLookup::NotMultipart if number == 1 => Ok(None),
        PartLookup::NotMultipart | PartLookup::Past { .. } => Err(past()),
        PartLookup::Found { start, len, count } => Ok(Some(Part {
            start,
            len,
            count: Some(count),
        })),
        PartLookup::NotKept { .. } => Err(S3Error::new(
            ErrorCode::NotImplemented,
            "This object's parts were of too many different sizes for weir to keep where each \
             begins: read it by Range.",
        )),
    }
}

/// GetObject or HeadObject of a key ending in `/`: the folder as an empty object, if it is
/// there.
async fn folder<S: Store>(
    store: &S,
    ex: &mut Exchange<'_>,
    bucket_name: &str,
    path: &weir_store::StorePath,
) -> Result<(), weir::Error> {
    match store.is_dir(path).await {
        Ok(true) => {
            let headers = [
                ("etag", super::EMPTY_MD5_ETAG),
                ("content-type", "application/x-directory"),
            ];
            reply::empty(ex, StatusCode::OK, &headers).await
        }
        Ok(false) | Err(StoreError::NotFound | StoreError::NotADirectory) => {
            let e = match bucket::exists(store, bucket_name).await {
                Ok(()) => no_such_key(),
                Err(e) => e,
            };
            reply::error(ex, &e).await
        }
        Err(e) => reply::error(ex, &reply::store_error(&e, Missing::Key)).await,
    }
}

fn no_such_key() -> S3Error {
    S3Error::from_code(ErrorCode::NoSuchKey)
}
