//! DeleteObject and DeleteObjects, through `Store::delete` (a folder key, ending in `/`:
//! `Store::delete_dir`, if empty).
//!
//! As S3: deleting a key that is not there succeeds (`204`; listed as `Deleted`), since the
//! outcome the client wants holds. A missing bucket is `NoSuchBucket`. DeleteObjects reads its
//! key list (at most 1000 keys, 2 MiB: weir-s3api's bounds) whole, checks `Content-MD5` or the
//! signed SHA-256 over it, and judges each key against the credential's scope and prefix on its
//! own: a key outside them is an `AccessDenied` entry, the others are deleted.
//!
//! The folders a deletion leaves empty are removed too (up to the bucket): S3 has keys, not
//! folders, and an empty folder would otherwise list as a `folder/` key and keep the bucket
//! from being deleted.

use super::reply::{self, Missing};
use super::{Ctx, bucket, keys, small_body};
use crate::serve::auth::Access;
use http::StatusCode;
use weir::{Exchange, http};
use weir_s3api::xml::{parse, write};
use weir_s3api::{ErrorCode, S3Error};
use weir_store::{Store, StoreError, StorePath};

/// DeleteObject.
pub(super) async fn one<S: Store>(
    ctx: &Ctx<'_>,
    store: &S,
    ex: &mut Exchange<'_>,
    bucket_name: &str,
    key: &str,
) -> Result<(), weir::Error> {
    if let Err(e) = bucket::exists(store, bucket_name).await {
        return reply::error(ex, &e).await;
    }
    match delete_key(ctx, store, bucket_name, key).await {
        Ok(()) => reply::empty(ex, StatusCode::NO_CONTENT, &[]).await,
        Err(e) => reply::error(ex, &e).await,
    }
}

/// Deletes one key; absent is success.
async fn delete_key<S: Store>(
    ctx: &Ctx<'_>,
    store: &S,
    bucket_name: &str,
    key: &str,
) -> Result<(), S3Error> {
    let deleted = match keys::key_path(bucket_name, key)? {
        keys::Key::Object(path) => store.delete(&path, None).await.map(|()| path),
        keys::Key::Folder(path) => store.delete_dir(&path).await.map(|()| path),
    };
    match deleted {
        Ok(path) => {
            ctx.svc.on_deleted(path.as_str());
            prune_folders(store, &path).await;
            Ok(())
        }
        Err(StoreError::NotFound | StoreError::NotADirectory | StoreError::IsDirectory) => Ok(()),
        Err(StoreError::DirectoryNotEmpty) => Err(S3Error::new(
            ErrorCode::InvalidRequest,
            "This folder key has keys below it: delete them first.",
        )),
        Err(e) => Err(reply::store_error(&e, Missing::Key)),
    }
}

/// Removes the folders above `path` that its deletion left empty, up to (not including) the
/// bucket: S3 has no folders, only keys, so a key's parents must not outlive it as empty
/// "folder" keys (nor keep the bucket from being deleted). Stops at the first folder that is
/// not empty, or at any other answer (a folder another request fills meanwhile is kept: the
/// store removes only an empty one).
async fn prune_folders<S: Store>(store: &S, path: &StorePath) {
    let mut parent = path.as_str();
    while let Some((up, _)) = parent.rsplit_once('/') {
        if !up.contains('/') {
            // `up` is the bucket.
            return;
        }
        let Ok(folder) = StorePath::parse(up) else {
            return;
        };
        if store.delete_dir(&folder).await.is_err() {
            return;
        }
        parent = up;
    }
}

/// DeleteObjects.
pub(super) async fn many<S: Store>(
    ctx: &Ctx<'_>,
    store: &S,
    ex: &mut Exchange<'_>,
    bucket_name: &str,
) -> Result<(), weir::Error> {
    if let Err(e) = bucket::exists(store, bucket_name).await {
        return reply::error(ex, &e).await;
    }
    let body = match small_body::read(ctx.caller, ex, parse::MAX_DELETE_BODY).await? {
        Ok(b) => b,
        Err(e) => return reply::error(ex, &e).await,
    };
    let request = match parse::delete_objects(&body) {
        Ok(r) => r,
        Err(e) => return reply::error(ex, &e).await,
    };
    let mut out = write::DeleteResultWriter::new(request.quiet);
    for object in &request.objects {
        let key = object.key.as_str();
        // ALLOCATION: the scope's path, per key.
        let scope_path = format!("{bucket_name}/{}", key.trim_end_matches('/'));
        let outcome = if object.version_id.as_deref().is_some_and(|v| v != "null") {
            Err(S3Error::new(
                ErrorCode::NotImplemented,
                "Object versions are not implemented.",
            ))
        } else if !ctx.caller.allows(Access::Delete, &scope_path) {
            Err(S3Error::from_code(ErrorCode::AccessDenied))
        } else {
            delete_key(ctx, store, bucket_name, key).await
        };
        match outcome {
            Ok(()) => out.deleted(key),
            Err(e) => out.error(key, &e),
        }
    }
    reply::xml(ex, StatusCode::OK, out.finish()).await
}
