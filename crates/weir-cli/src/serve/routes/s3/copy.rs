//! CopyObject, server-side through `Store::copy` (locally a reflink or `copy_file_range`, then
//! a commit as an upload's; in a bucket one `CopyObject`): no byte passes through weir.
//!
//! The caller needs `read` on the source (judged here) and `write` (or `create` with
//! `If-None-Match: *`) on the target (`access.rs`). The source's conditions
//! (`x-amz-copy-source-if-match`, `-if-none-match`, `-if-modified-since`,
//! `-if-unmodified-since`) are judged on the source opened now with the one rule of conditional
//! requests (`weir_proto::conditional`, as for a `GET`), and any failure is
//! `PreconditionFailed`; the target's (`If-Match`, `If-None-Match`) are judged by the store
//! atomically with the copy, as a PUT's. The copy keeps the source's SHA-256, so its ETag is
//! the source's, and its media type and metadata (`x-amz-metadata-directive: COPY`, the
//! default), or takes the request's (`REPLACE`: `Content-Type` and `metadata.rs`'s fields, none
//! kept from the source); a copy onto itself without `REPLACE` is S3's `InvalidRequest`.

use super::reply::{self, Missing};
use super::{Ctx, bucket, keys, metadata};
use crate::serve::auth::Access;
use crate::serve::preconditions;
use http::StatusCode;
use weir::{Exchange, Request, http};
use weir_proto::conditional::{self, Outcome, RequestFields};
use weir_s3api::route::CopySource;
use weir_s3api::xml::write;
use weir_s3api::{ErrorCode, S3Error};
use weir_store::{CopyMeta, FileMeta, Store, StoreError, StoreObject};

/// CopyObject from `source` to `bucket`/`key`.
pub(super) async fn copy<S: Store>(
    ctx: &Ctx<'_>,
    store: &S,
    ex: &mut Exchange<'_>,
    bucket_name: &str,
    key: &str,
    source: CopySource,
) -> Result<(), weir::Error> {
    match copy_checked(ctx, store, ex.request(), bucket_name, key, &source).await {
        Ok((etag, meta)) => {
            let body = write::copy_result(false, etag.trim_matches('"'), meta.modified, None);
            reply::xml(ex, StatusCode::OK, body).await
        }
        Err(e) => reply::error(ex, &e).await,
    }
}

async fn copy_checked<S: Store>(
    ctx: &Ctx<'_>,
    store: &S,
    head: &Request,
    bucket_name: &str,
    key: &str,
    source: &CopySource,
) -> Result<(String, FileMeta), S3Error> {
    let to = match keys::key_path(bucket_name, key)? {
        keys::Key::Object(p) => p,
        keys::Key::Folder(_) => {
            return Err(S3Error::new(
                ErrorCode::InvalidArgument,
                "A key ending in / is a folder in weir: it cannot be a copy's target.",
            ));
        }
    };
    let from = match keys::key_path(&source.bucket, &source.key)? {
        keys::Key::Object(p) => p,
        keys::Key::Folder(_) => return Err(S3Error::from_code(ErrorCode::NoSuchKey)),
    };
    // ALLOCATION: the source's scope path.
    let scope = format!("{}/{}", source.bucket, source.key);
    if !ctx.caller.allows(Access::Read, &scope) {
        return Err(S3Error::from_code(ErrorCode::AccessDenied));
    }
    bucket::exists(store, bucket_name).await?;
    let replace = head
        .header("x-amz-metadata-directive")
        .is_some_and(|v| v.eq_ignore_ascii_case(b"REPLACE"));
    if from == to && !replace {
        return Err(S3Error::new(
            ErrorCode::InvalidRequest,
            "This copy request is illegal because it is trying to copy an object to itself \
             without changing the object's metadata, storage class, website redirect location \
             or encryption attributes.",
        ));
    }
    let object = match store.open(&from).await {
        Ok(o) => o,
        Err(StoreError::NotFound | StoreError::IsDirectory | StoreError::NotADirectory) => {
            bucket::exists(store, &source.bucket).await?;
            return Err(S3Error::from_code(ErrorCode::NoSuchKey));
        }
        Err(e) => return Err(reply::store_error(&e, Missing::Key)),
    };
    let source_meta = *object.meta();
    drop(object);
    if !source_holds(head, &source_meta) {
        return Err(S3Error::from_code(ErrorCode::PreconditionFailed));
    }
    let check = |meta: Option<&FileMeta>| preconditions::hold(head, meta);
    let conditional = conditional::has_preconditions(&preconditions::Fields(head));
    // REPLACE: the request's media type and metadata, else the source's (S3's COPY).
    let media_type = head
        .header("content-type")
        .and_then(weir_store::MediaType::parse);
    let replaced = match replace {
        true => Some(metadata::of_request(head)?.unwrap_or_default()),
        false => None,
    };
    let meta = match &replaced {
        Some(object_meta) => CopyMeta::Replace {
            media_type: media_type.as_ref(),
            object_meta,
        },
        None => CopyMeta::Source,
    };
    let committed = store
        .copy(
            &from,
            &to,
            if conditional { Some(&check) } else { None },
            meta,
        )
        .await
        .map_err(|e| match e {
            StoreError::NotFound => S3Error::from_code(ErrorCode::NoSuchKey),
            e => reply::store_error(&e, Missing::Key),
        })?;
    ctx.svc.on_stored(to.as_str(), &committed);
    Ok((preconditions::etag(&committed.stored), committed.stored))
}

/// Whether a copy source's conditions (CopyObject's and UploadPartCopy's) hold on `meta`: read
/// as a `GET`'s preconditions, with the one rule of conditional requests.
pub(super) fn source_holds(head: &Request, meta: &FileMeta) -> bool {
    let etag = preconditions::etag(meta);
    let current = preconditions::validators(meta, &etag);
    conditional::evaluate(&SourceFields(head), Some(&current)) == Outcome::Proceed
}

/// The copy source's conditions, read as a `GET`'s preconditions: `x-amz-copy-source-if-*`
/// in the place of `If-*`.
struct SourceFields<'r>(&'r Request);

impl RequestFields for SourceFields<'_> {
    fn method(&self) -> &http::Method {
        &http::Method::GET
    }

    fn field_values<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a [u8]> + 'a {
        let amz = match name {
            "if-match" => "x-amz-copy-source-if-match",
            "if-none-match" => "x-amz-copy-source-if-none-match",
            "if-modified-since" => "x-amz-copy-source-if-modified-since",
            "if-unmodified-since" => "x-amz-copy-source-if-unmodified-since",
            // No other condition applies to a copy's source.
            _ => "x-weir-none",
        };
        self.0.header_all(amz)
    }
}
