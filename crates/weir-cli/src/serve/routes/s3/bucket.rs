//! Bucket operations: a bucket is a top-level folder of the store.
//!
//! - ListBuckets: the top-level folders whose names are valid S3 bucket names and in which the
//!   caller may read, paged through the store's listing (`list_pages.rs`: a local scan runs off
//!   the async workers); `CreationDate` is the folder's modification time (a folder has no
//!   creation time in every store; on the S3 store, its marker's). With `max-buckets`, a page of them and a
//!   `ContinuationToken` (the last name answered) when more follow.
//! - CreateBucket: the folder (`Store::create_dir`); one already there is created again
//!   successfully, as S3 answers its owner in `us-east-1` (every credential of a weir server is
//!   one owner's); a file at that name is `BucketAlreadyExists`. The location constraint is
//!   parsed and ignored (one region).
//! - DeleteBucket: only an empty folder (`Store::delete_dir`), else `BucketNotEmpty`.
//! - HeadBucket, GetBucketLocation: whether the folder is there.

use super::reply::{self, Missing};
use super::{Ctx, keys, small_body};
use crate::serve::list_pages;
use http::StatusCode;
use std::num::NonZeroUsize;
use std::time::SystemTime;
use weir::{Exchange, http};
use weir_s3api::route::{ListBucketsParams, valid_bucket_name};
use weir_s3api::xml::{parse, write};
use weir_s3api::{ErrorCode, S3Error};
use weir_store::{Entry, Store, StoreError};

/// Folders listed per page of ListBuckets.
const PAGE: NonZeroUsize = NonZeroUsize::new(1000).expect("not zero");

/// ListBuckets: `max-buckets` at a time if given, from after `continuation-token` (the last
/// name of the previous page: names come in byte order from both stores), those starting
/// with `prefix`.
pub(super) async fn list<S: Store + Clone>(
    ctx: &Ctx<'_>,
    store: &S,
    ex: &mut Exchange<'_>,
    params: ListBucketsParams,
) -> Result<(), weir::Error> {
    let name = ctx.caller.name();
    let mut out = write::ListBucketsWriter::new(name, name);
    let mut after = params.continuation_token;
    let mut listed: u32 = 0;
    let mut last: Option<String> = None;
    let mut next_token = None;
    'pages: loop {
        let page = list_pages::list_page(ctx.svc, store, None, after.as_deref(), PAGE).await;
        let page = match page {
            Ok(p) => p,
            Err(list_pages::PageError::Store(e)) => {
                return reply::error(ex, &reply::store_error(&e, Missing::Bucket)).await;
            }
            Err(e) => {
                let e = S3Error::new(ErrorCode::InternalError, e.to_string());
                return reply::error(ex, &e).await;
            }
        };
        for entry in &page.entries {
            if !(entry.is_dir
                && valid_bucket_name(&entry.name)
                && entry.name.starts_with(&params.prefix)
                && ctx.caller.reads_in(&entry.name))
            {
                continue;
            }
            if let Some(created) = listed_bucket_time(store, entry).await {
                if params.max_buckets == Some(listed) {
                    // One more is there: the answer says where the next page starts.
                    next_token = last.take();
                    break 'pages;
                }
                out.bucket(&entry.name, created);
                listed += 1;
                last = Some(entry.name.clone());
            }
        }
        match page.next {
            Some(next) => after = Some(next),
            None => break,
        }
    }
    reply::xml(ex, StatusCode::OK, out.finish(next_token.as_deref())).await
}

/// The `CreationDate` of a folder the store's listing names, `None` if it is no bucket
/// HeadBucket would find. Locally a listed folder is one, with its time. A bucket store lists
/// the common prefixes its backend answers, which carry no time, and SeaweedFS keeps (and
/// lists) a filer directory after its last key is deleted: such a prefix holds no key, so it
/// is no bucket (HeadBucket, ListObjects: `NoSuchBucket`) and is not listed either. One request
/// per listed bucket, on the S3 store only, answers both (`Store::dir_modified`: the time of
/// the marker CreateBucket wrote).
async fn listed_bucket_time<S: Store>(store: &S, entry: &Entry) -> Option<SystemTime> {
    if S::LOCAL_FILES {
        return Some(entry.modified);
    }
    let path = keys::bucket_path(&entry.name).ok()?;
    store.dir_modified(&path).await.ok().flatten()
}

/// Whether `bucket` exists: `Ok(())`, or `NoSuchBucket` (a file there is not a bucket).
pub(super) async fn exists<S: Store>(store: &S, bucket: &str) -> Result<(), S3Error> {
    let path = keys::bucket_path(bucket)?;
    match store.is_dir(&path).await {
        Ok(true) => Ok(()),
        Ok(false) | Err(StoreError::NotFound | StoreError::NotADirectory) => {
            Err(S3Error::from_code(ErrorCode::NoSuchBucket))
        }
        Err(e) => Err(reply::store_error(&e, Missing::Bucket)),
    }
}

/// HeadBucket.
pub(super) async fn head<S: Store>(
    store: &S,
    ex: &mut Exchange<'_>,
    bucket: &str,
) -> Result<(), weir::Error> {
    match exists(store, bucket).await {
        Ok(()) => reply::empty(ex, StatusCode::OK, &[]).await,
        Err(e) => reply::error(ex, &e).await,
    }
}

/// GetBucketLocation.
pub(super) async fn location<S: Store>(
    ctx: &Ctx<'_>,
    store: &S,
    ex: &mut Exchange<'_>,
    bucket: &str,
) -> Result<(), weir::Error> {
    match exists(store, bucket).await {
        Ok(()) => reply::xml(ex, StatusCode::OK, write::bucket_location(ctx.region)).await,
        Err(e) => reply::error(ex, &e).await,
    }
}

/// CreateBucket.
pub(super) async fn create<S: Store>(
    ctx: &Ctx<'_>,
    store: &S,
    ex: &mut Exchange<'_>,
    bucket: &str,
) -> Result<(), weir::Error> {
    let path = match keys::bucket_path(bucket) {
        Ok(p) => p,
        Err(e) => return reply::error(ex, &e).await,
    };
    let body = match small_body::read(ctx.caller, ex, parse::MAX_BUCKET_CONFIGURATION_BODY).await? {
        Ok(b) => b,
        Err(e) => return reply::error(ex, &e).await,
    };
    if let Err(e) = parse::create_bucket_configuration(&body) {
        return reply::error(ex, &e).await;
    }
    match store.create_dir(&path).await {
        Ok(_) => {
            // ALLOCATION: the location header's text.
            let location = format!("/{bucket}");
            reply::empty(ex, StatusCode::OK, &[("location", &location)]).await
        }
        Err(StoreError::NotADirectory) => {
            reply::error(ex, &S3Error::from_code(ErrorCode::BucketAlreadyExists)).await
        }
        Err(e) => reply::error(ex, &reply::store_error(&e, Missing::Bucket)).await,
    }
}

/// DeleteBucket.
pub(super) async fn delete<S: Store>(
    ctx: &Ctx<'_>,
    store: &S,
    ex: &mut Exchange<'_>,
    bucket: &str,
) -> Result<(), weir::Error> {
    let path = match keys::bucket_path(bucket) {
        Ok(p) => p,
        Err(e) => return reply::error(ex, &e).await,
    };
    match store.delete_dir(&path).await {
        Ok(()) => {
            // ALLOCATION: the deleted path as the access log shows a folder's.
            ctx.svc.on_deleted(&format!("{bucket}/"));
            reply::empty(ex, StatusCode::NO_CONTENT, &[]).await
        }
        Err(StoreError::NotFound | StoreError::NotADirectory) => {
            reply::error(ex, &S3Error::from_code(ErrorCode::NoSuchBucket)).await
        }
        Err(e) => reply::error(ex, &reply::store_error(&e, Missing::Bucket)).await,
    }
}
