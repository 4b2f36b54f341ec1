//! ListParts and ListMultipartUploads: pages of what the store keeps, in S3's order (parts by
//! number; uploads by key, then upload id), with S3's markers.
//!
//! ListMultipartUploads with a delimiter rolls the keys that hold it past the prefix up into
//! common prefixes, as ListObjects does. The store reads every upload of the bucket to sort
//! them (weir-store's `list_uploads`): uploads in progress are few, and the sweep bounds them.

use super::super::reply;
use super::{error, object_path, upload_of};
use http::StatusCode;
use weir::{Exchange, http};
use weir_s3api::checksum::{ChecksumAlgorithm, ChecksumValue};
use weir_s3api::route::ListUploadsParams;
use weir_s3api::xml::write::{self, PartEntry, UploadsHead};
use weir_s3api::{ErrorCode, S3Error};
use weir_store::{MultipartStore, UploadId};

/// ListParts: `page` is (`part-number-marker`, `max-parts`).
pub(in super::super) async fn parts<M: MultipartStore>(
    parts: &M,
    ex: &mut Exchange<'_>,
    bucket: &str,
    key: &str,
    upload_id: &str,
    (marker, max): (u32, u32),
) -> Result<(), weir::Error> {
    let listed = async {
        let path = object_path(bucket, key)?;
        let id = upload_of(parts, &path, upload_id).await?;
        parts
            .list_parts(id, marker, max as usize)
            .await
            .map_err(|e| error(&e))
    }
    .await;
    let page = match listed {
        Ok(p) => p,
        Err(e) => return reply::error(ex, &e).await,
    };
    let algorithm = page
        .upload
        .meta
        .checksum_algorithm
        .as_deref()
        .and_then(ChecksumAlgorithm::from_name);
    let mut out = write::ListPartsWriter::new(bucket, key, upload_id, marker, max, algorithm);
    for part in &page.parts {
        let etag = part.etag();
        let checksum = algorithm.and_then(|a| {
            part.checksums
                .iter()
                .find(|(name, _)| ChecksumAlgorithm::from_name(name) == Some(a))
                .and_then(|(_, v)| ChecksumValue::parse_base64(a, v).ok())
        });
        out.part(&PartEntry {
            part_number: part.number,
            last_modified: part.modified,
            etag: &etag,
            size: part.size,
            checksum,
        });
    }
    let next = page
        .truncated
        .then(|| page.parts.last().map(|p| p.number))
        .flatten();
    reply::xml(ex, StatusCode::OK, out.finish(next)).await
}

/// ListMultipartUploads of `bucket`.
pub(in super::super) async fn uploads<M: MultipartStore>(
    parts: &M,
    ex: &mut Exchange<'_>,
    bucket: &str,
    params: &ListUploadsParams,
) -> Result<(), weir::Error> {
    // ALLOCATION: the store's prefix and marker (keys are paths below their bucket).
    let prefix = format!("{bucket}/{}", params.prefix);
    let key_marker = params.key_marker.as_ref().map(|k| format!("{bucket}/{k}"));
    let id_marker = match params.upload_id_marker.as_deref() {
        Some(text) => match UploadId::parse(text) {
            Some(id) => Some(id),
            None => {
                let e = S3Error::new(ErrorCode::InvalidArgument, "Invalid upload-id-marker.");
                return reply::error(ex, &e).await;
            }
        },
        None => None,
    };
    let after = key_marker.as_deref().map(|k| (k, id_marker));
    let max = params.max_uploads as usize;
    // One more than a page: enough to tell whether another follows, once prefixes are rolled up.
    let page = match parts.list_uploads(&prefix, after, usize::MAX).await {
        Ok(p) => p,
        Err(e) => return reply::error(ex, &error(&e)).await,
    };
    let head = UploadsHead {
        bucket,
        prefix: &params.prefix,
        delimiter: params.delimiter.as_deref(),
        key_marker: params.key_marker.as_deref().unwrap_or(""),
        upload_id_marker: params.upload_id_marker.as_deref().unwrap_or(""),
        max_uploads: params.max_uploads,
        encoding_url: params.encoding_url,
    };
    let mut out = write::ListUploadsWriter::new(&head);
    let mut shown = 0usize;
    let mut last: Option<(String, String)> = None;
    let mut last_prefix: Option<String> = None;
    let mut truncated = false;
    for upload in &page.uploads {
        let key = upload
            .key
            .as_str()
            .strip_prefix(bucket)
            .and_then(|k| k.strip_prefix('/'))
            .unwrap_or(upload.key.as_str());
        let rolled = params.delimiter.as_deref().and_then(|d| {
            let rest = key.get(params.prefix.len()..)?;
            let at = rest.find(d)?;
            Some(&key[..params.prefix.len() + at + d.len()])
        });
        if let Some(p) = rolled {
            if last_prefix.as_deref() == Some(p) {
                continue;
            }
        }
        if shown == max {
            truncated = true;
            break;
        }
        shown += 1;
        match rolled {
            Some(p) => {
                out.common_prefix(p);
                last_prefix = Some(p.to_owned());
                last = Some((p.to_owned(), String::new()));
            }
            None => {
                let id = upload.id.to_string();
                out.upload(key, &id, upload.initiated);
                last = Some((key.to_owned(), id));
            }
        }
    }
    let next = if truncated { last.as_ref() } else { None };
    let body = out.finish(next.map(|(k, i)| (k.as_str(), i.as_str())));
    reply::xml(ex, StatusCode::OK, body).await
}
