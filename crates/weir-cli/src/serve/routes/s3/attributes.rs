//! GetObjectAttributes (`GET /bucket/key?attributes`): what HeadObject knows of an object, as
//! XML, with its parts (weir-s3api's `attributes.rs` parses the request and writes the answer).
//!
//! - `ETag`: the one every route answers for the object (`preconditions::etag`), unquoted.
//! - `Checksum`: the one GetObject answers with `x-amz-checksum-mode: ENABLED`
//!   (`object_get::object_checksum`: kept with the object, else its SHA-256).
//! - `ObjectParts`, for a completed multipart object only (as S3): its number of parts and a
//!   page of them (`x-amz-part-number-marker`, `x-amz-max-parts`) with each one's size (the
//!   sizes the completion kept, `weir_store::PARTS_FIELD`) and its own checksum when the object
//!   kept its parts' (`weir_store::CHECKSUM_FIELD`); when the sizes were too varied to keep,
//!   the count alone.
//! - `StorageClass` (`STANDARD`), `ObjectSize`.
//!
//! A missing key is `NoSuchKey` (or `NoSuchBucket`); a folder's key (`dir/`) is the empty
//! object GetObject answers for it. `Last-Modified` is sent as a header, as S3 does.

use super::reply::{self, Missing};
use super::{EMPTY_MD5_ETAG, bucket, keys, object_get};
use crate::serve::preconditions;
use http::StatusCode;
use weir::{Exchange, http};
use weir_s3api::ErrorCode;
use weir_s3api::S3Error;
use weir_s3api::attributes::{
    self, AttributesParams, ObjectAttributes, PartAttributes, PartsAttributes,
};
use weir_s3api::checksum::ChecksumAlgorithm;
use weir_store::{ObjectMeta, PartLookup, Store, StoreError, StoreObject};

/// GetObjectAttributes.
pub(super) async fn get<S: Store>(
    store: &S,
    ex: &mut Exchange<'_>,
    bucket_name: &str,
    key: &str,
    params: &AttributesParams,
) -> Result<(), weir::Error> {
    let missing = |e: S3Error| async move {
        match bucket::exists(store, bucket_name).await {
            Ok(()) => e,
            Err(no_bucket) => no_bucket,
        }
    };
    let no_such_key = || S3Error::from_code(ErrorCode::NoSuchKey);
    let path = match keys::key_path(bucket_name, key) {
        Ok(keys::Key::Object(p)) => p,
        Ok(keys::Key::Folder(path)) => {
            return match store.is_dir(&path).await {
                Ok(true) => {
                    let empty = ObjectAttributes {
                        etag: EMPTY_MD5_ETAG.trim_matches('"'),
                        checksum: None,
                        parts: None,
                        size: 0,
                    };
                    reply::xml(ex, StatusCode::OK, attributes::write(params.wanted, &empty)).await
                }
                Ok(false) | Err(StoreError::NotFound | StoreError::NotADirectory) => {
                    reply::error(ex, &missing(no_such_key()).await).await
                }
                Err(e) => reply::error(ex, &reply::store_error(&e, Missing::Key)).await,
            };
        }
        Err(e) => return reply::error(ex, &e).await,
    };
    let object = match store.open(&path).await {
        Ok(o) => o,
        Err(StoreError::NotFound | StoreError::IsDirectory | StoreError::NotADirectory) => {
            return reply::error(ex, &missing(no_such_key()).await).await;
        }
        Err(e) => return reply::error(ex, &reply::store_error(&e, Missing::Key)).await,
    };
    let meta = *object.meta();
    // Locally one fgetxattr(2); in a bucket, from the HeadObject already made. The bytes are
    // never read.
    let kept = object.object_meta();
    drop(object);
    let etag = preconditions::etag(&meta);
    let checksum = object_get::object_checksum(&meta, kept.as_ref());
    // ALLOCATION: one page of parts (at most 1,000), once per request that asks for them.
    let page = match (params.wanted.object_parts, kept.as_ref()) {
        (true, Some(kept)) => parts_page(kept, params),
        _ => None,
    };
    let object_parts = page
        .as_ref()
        .map(|(count, list, truncated)| PartsAttributes {
            count: *count,
            marker: params.part_number_marker,
            max_parts: params.max_parts,
            parts: list,
            truncated: *truncated,
        });
    let found = ObjectAttributes {
        etag: etag.trim_matches('"'),
        checksum: checksum.as_ref().map(|(a, v, k)| (*a, v.as_str(), *k)),
        parts: object_parts,
        size: meta.size,
    };
    let body = attributes::write(params.wanted, &found);
    let last_modified = httpdate::fmt_http_date(meta.modified.min(std::time::SystemTime::now()));
    ex.respond(StatusCode::OK)
        .header("x-amz-request-id", reply::request_id())
        .header("content-type", "application/xml")
        .header("last-modified", &last_modified)
        .body(body)
        .await
}

/// The object's number of parts and the page the request asks for (parts numbered above the
/// marker, at most `max_parts`, and whether more follow); `None` for an object not uploaded
/// in parts.
fn parts_page<'a>(
    kept: &'a ObjectMeta,
    params: &AttributesParams,
) -> Option<(u32, Vec<PartAttributes<'a>>, bool)> {
    let algorithm = kept
        .checksum()
        .and_then(|(a, _, _)| ChecksumAlgorithm::from_name(a));
    let count = match kept.part(1) {
        PartLookup::NotMultipart => return None,
        PartLookup::Found { count, .. }
        | PartLookup::Past { count }
        | PartLookup::NotKept { count } => count,
    };
    let mut list = Vec::new();
    let first = params.part_number_marker.saturating_add(1);
    let mut number = first;
    while number <= count && list.len() < params.max_parts as usize {
        // Sizes too varied to keep: the count alone.
        let PartLookup::Found { len, .. } = kept.part(number) else {
            return Some((count, Vec::new(), false));
        };
        let checksum = algorithm.zip(kept.part_checksum(number));
        list.push(PartAttributes {
            number,
            size: len,
            checksum,
        });
        number += 1;
    }
    Some((count, list, number <= count))
}
