//! GetBucketAcl, GetObjectAcl, PutBucketAcl, PutObjectAcl, truthfully for a server with one
//! owner: every credential of a weir server owns every bucket and object (as ListBuckets and
//! the listings' `Owner` say), so the one ACL there is is S3's `private`, the owner's
//! `FULL_CONTROL`. Get answers it (the owner named as the listings name it, by the caller's
//! access key id); Put accepts only what leaves it so (`x-amz-acl: private`, or no header at
//! all, and no body) and answers `NotImplemented` for anything else (another canned ACL, an
//! `x-amz-grant-*`, an `AccessControlPolicy` body): a client granting access to others must not
//! believe it did.
//!
//! The bucket must exist (`NoSuchBucket`), and the object when a key is named (`NoSuchKey`),
//! as S3 answers.

use super::reply::{self, Missing};
use super::{Ctx, bucket, keys, small_body};
use http::StatusCode;
use weir::{Exchange, http};
use weir_s3api::xml::write;
use weir_s3api::{ErrorCode, S3Error};
use weir_store::{Store, StoreError};

/// GetBucketAcl (`key` empty) or GetObjectAcl.
pub(super) async fn get<S: Store>(
    ctx: &Ctx<'_>,
    store: &S,
    ex: &mut Exchange<'_>,
    bucket: &str,
    key: &str,
) -> Result<(), weir::Error> {
    if let Err(e) = target_exists(store, bucket, key).await {
        return reply::error(ex, &e).await;
    }
    let body = write::owner_full_control(ctx.caller.name());
    reply::xml(ex, StatusCode::OK, body).await
}

/// PutBucketAcl (`key` empty) or PutObjectAcl.
pub(super) async fn put<S: Store>(
    ctx: &Ctx<'_>,
    store: &S,
    ex: &mut Exchange<'_>,
    bucket: &str,
    key: &str,
) -> Result<(), weir::Error> {
    let head = ex.request();
    let canned = head.header("x-amz-acl");
    let grants = head
        .headers()
        .any(|(name, _)| name.to_ascii_lowercase().starts_with("x-amz-grant-"));
    if grants || canned.is_some_and(|v| !v.trim_ascii().eq_ignore_ascii_case(b"private")) {
        return reply::error(ex, &only_private()).await;
    }
    if let Err(e) = target_exists(store, bucket, key).await {
        return reply::error(ex, &e).await;
    }
    // An `AccessControlPolicy` body is refused whatever it grants: reading it is the only way
    // to tell an owner's full control from a grant to others, and weir keeps neither.
    let body = match small_body::read(ctx.caller, ex, 64 << 10).await? {
        Ok(body) => body,
        Err(e) => return reply::error(ex, &e).await,
    };
    if !body.is_empty() {
        return reply::error(ex, &only_private()).await;
    }
    reply::empty(ex, StatusCode::OK, &[]).await
}

fn only_private() -> S3Error {
    S3Error::new(
        ErrorCode::NotImplemented,
        "weir has one owner: the only ACL is private (x-amz-acl: private, no body).",
    )
}

/// The bucket, and the object when `key` names one.
async fn target_exists<S: Store>(store: &S, bucket: &str, key: &str) -> Result<(), S3Error> {
    bucket::exists(store, bucket).await?;
    if key.is_empty() {
        return Ok(());
    }
    let found = match keys::key_path(bucket, key)? {
        keys::Key::Object(path) => store.open(&path).await.map(drop),
        keys::Key::Folder(path) => match store.is_dir(&path).await {
            Ok(true) => Ok(()),
            Ok(false) => Err(StoreError::NotFound),
            Err(e) => Err(e),
        },
    };
    match found {
        Ok(()) => Ok(()),
        Err(StoreError::NotFound | StoreError::NotADirectory | StoreError::IsDirectory) => {
            Err(S3Error::from_code(ErrorCode::NoSuchKey))
        }
        Err(e) => Err(reply::store_error(&e, Missing::Key)),
    }
}
