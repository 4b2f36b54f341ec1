//! Multipart uploads (CreateMultipartUpload, UploadPart, UploadPartCopy,
//! CompleteMultipartUpload, AbortMultipartUpload, ListParts, ListMultipartUploads) and
//! GetObject/HeadObject with `partNumber`: every request of them is routed here, the one
//! place they are answered. Not implemented yet: each is S3's `NotImplemented` (501), so a
//! client that needs them learns it at once (aws-cli and boto3 use multipart above 8 MiB by
//! default: `multipart_threshold` raises that).

use super::{Ctx, reply};
use weir::Exchange;
use weir_s3api::route::{GetObjectParams, Operation};
use weir_store::Store;

/// A multipart operation on `bucket`/`key` (the key is empty for ListMultipartUploads).
pub(super) async fn serve<S: Store>(
    ctx: &Ctx<'_>,
    store: &S,
    ex: &mut Exchange<'_>,
    bucket: &str,
    key: &str,
    operation: Operation,
) -> Result<(), weir::Error> {
    let _ = (ctx, store, bucket, key, operation);
    let e = super::not_implemented("Multipart uploads are not implemented yet.");
    reply::error(ex, &e).await
}

/// GetObject or HeadObject of one part (`partNumber`).
pub(super) async fn get_part<S: Store>(
    ctx: &Ctx<'_>,
    store: &S,
    ex: &mut Exchange<'_>,
    bucket: &str,
    key: &str,
    params: GetObjectParams,
) -> Result<(), weir::Error> {
    let _ = (ctx, store, bucket, key, params);
    let e = super::not_implemented("Reading one part of an object is not implemented yet.");
    reply::error(ex, &e).await
}
