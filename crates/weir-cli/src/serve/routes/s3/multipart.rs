//! Multipart uploads (CreateMultipartUpload, UploadPart, UploadPartCopy,
//! CompleteMultipartUpload, AbortMultipartUpload, ListParts, ListMultipartUploads): every
//! request of them is routed here, written once over weir-store's `MultipartStore` (the local
//! store's `LocalMultiparts`, the bucket's `S3Multiparts`), which keeps the uploads, their parts
//! and the rules S3 sets (part numbers, sizes, order, ETags: weir-store's `multipart/`).
//!
//! | operation | module | what it does |
//! | --- | --- | --- |
//! | CreateMultipartUpload | here | an upload for the key, with its `Content-Type`, metadata (`metadata.rs`: `x-amz-meta-*`, `Cache-Control`, …, which the object gets at completion), `x-amz-checksum-algorithm` and `x-amz-checksum-type` (S3's pairs only) |
//! | UploadPart | `part.rs` | the body into the part's upload: spliced into a local file when nothing needs the bytes, else through the `aws-chunked` decoder and the checksums; its `Content-MD5`, if sent, is its ETag |
//! | UploadPartCopy | `part.rs` | a stored object's range as a part (`x-amz-copy-source-range`, the source's `x-amz-copy-source-if-*`) |
//! | CompleteMultipartUpload | `complete.rs` | the part list checked, the object's composite or full-object checksum formed from the parts' and checked, the object assembled and committed with that checksum and `If-Match`/`If-None-Match` judged by the store atomically |
//! | AbortMultipartUpload | here | the upload and its parts removed |
//! | ListParts, ListMultipartUploads | `listing.rs` | paged by part number; by key and upload id, with a prefix and a delimiter |
//!
//! **ETags.** A part's ETag is the MD5 of its bytes when the client sent `Content-MD5`, else
//! their CRC-64 and length (`weir_store::PartTag`: S3's rule that the same bytes get the same
//! ETag, without the slowest hash). The completed object's is the one every other route
//! answers for it (`preconditions::etag`, `"sha256-…"`), not S3's `md5-of-md5s-N`: the same
//! object must have one ETag for `If-Match`, GetObject and HeadObject (Ceph's s3-tests check
//! that the completion's ETag is HeadObject's, and complete conditionally on it).
//!
//! **Access.** Every operation's scope is judged by `access.rs` on the key (`create` or
//! `write` for the upload's requests, `read` for the listings, `delete` for an abort); an
//! upload id is looked up with its key: an upload of another key is `NoSuchUpload`, so a
//! caller confined to a prefix reaches only the uploads of keys under it.
//!
//! **Abandoned uploads** are removed by a sweep (`serve/sweep.rs`, `start_multipart`) once not
//! touched for `--s3-api-multipart-expiry`.
//!
//! A completed object keeps its parts' sizes (the store adds them to its S3 metadata at the
//! commit, `MultipartMeta::completed_object_meta`): GetObject/HeadObject with `partNumber`
//! (`object_get.rs`) read a part back.

use super::reply::{self, Missing};
use super::{Ctx, bucket, keys, metadata};
use crate::serve::service::{Files, Service};
use http::StatusCode;
use std::sync::Arc;
use std::time::Duration;
use weir::{Exchange, http};
use weir_s3api::checksum::{ChecksumAlgorithm, ChecksumType};
use weir_s3api::route::Operation;
use weir_s3api::xml::write;
use weir_s3api::{ErrorCode, S3Error};
use weir_store::{
    LocalMultiparts, LocalStore, MultipartError, MultipartMeta, MultipartStore, Store, StorePath,
    UploadId,
};

mod complete;
mod listing;
mod part;

/// The multipart uploads of the service's store, opened once with the S3 API's listener.
pub(in crate::serve) struct Multiparts {
    local: Option<Arc<LocalMultiparts>>,
    #[cfg(feature = "s3")]
    s3: Option<Arc<weir_store::S3Multiparts>>,
    /// How long a completion runs before its answer starts (`complete.rs`).
    keep_alive: Duration,
}

impl Multiparts {
    /// Opens the store's multipart uploads (locally: counts their parts, removes what a crash
    /// left) and starts their sweep: uploads not touched for `expiry` are removed. A local area
    /// that cannot be opened is logged, and multipart requests are then `InternalError`.
    pub(in crate::serve) fn open(
        svc: &Service,
        expiry: Duration,
        keep_alive: Duration,
    ) -> Multiparts {
        let mut parts = Multiparts {
            local: None,
            #[cfg(feature = "s3")]
            s3: None,
            keep_alive,
        };
        match svc.files() {
            Files::Local(store) => match LocalMultiparts::open(store) {
                Ok(opened) => {
                    let opened = Arc::new(opened);
                    crate::serve::sweep::start_multipart(&opened, expiry);
                    parts.local = Some(opened);
                }
                Err(e) => tracing::error!(error = %e, "S3 API: multipart uploads unavailable"),
            },
            #[cfg(feature = "s3")]
            Files::S3(store) => {
                let opened = Arc::new(weir_store::S3Multiparts::new(store.clone()));
                crate::serve::sweep::start_multipart(&opened, expiry);
                parts.s3 = Some(opened);
            }
        }
        parts
    }
}

/// A store whose multipart uploads the service keeps: how a route generic over the store finds
/// them (static dispatch, as `with_files!`).
pub(super) trait WithMultiparts: Store {
    /// Its multipart uploads, whose parts are its own uploads.
    type Parts: MultipartStore<Upload = Self::Upload>;
    /// This store's, if they could be opened.
    fn multiparts(all: &Multiparts) -> Option<&Arc<Self::Parts>>;
}

impl WithMultiparts for LocalStore {
    type Parts = LocalMultiparts;
    fn multiparts(all: &Multiparts) -> Option<&Arc<LocalMultiparts>> {
        all.local.as_ref()
    }
}

#[cfg(feature = "s3")]
impl WithMultiparts for weir_store::S3Store {
    type Parts = weir_store::S3Multiparts;
    fn multiparts(all: &Multiparts) -> Option<&Arc<weir_store::S3Multiparts>> {
        all.s3.as_ref()
    }
}

/// A multipart operation on `bucket`/`key` (the key is empty for ListMultipartUploads).
pub(super) async fn serve<S: WithMultiparts>(
    ctx: &Ctx<'_>,
    store: &S,
    ex: &mut Exchange<'_>,
    bucket: &str,
    key: &str,
    operation: Operation,
) -> Result<(), weir::Error> {
    let Some(shared) = S::multiparts(ctx.multiparts) else {
        let e = S3Error::new(
            ErrorCode::InternalError,
            "Multipart uploads are unavailable.",
        );
        return reply::error(ex, &e).await;
    };
    let parts: &S::Parts = shared;
    if let Err(e) = bucket::exists(store, bucket).await {
        return reply::error(ex, &e).await;
    }
    match operation {
        Operation::CreateMultipartUpload => create(ctx, parts, ex, bucket, key).await,
        Operation::UploadPart {
            part_number,
            upload_id,
        } => part::upload(ctx, parts, ex, bucket, key, part_number, &upload_id).await,
        Operation::UploadPartCopy {
            part_number,
            upload_id,
            source,
        } => {
            let at = part::Target {
                bucket,
                key,
                number: part_number,
                upload_id: &upload_id,
            };
            part::copy(ctx, parts, ex, at, source).await
        }
        Operation::CompleteMultipartUpload { upload_id } => {
            complete::complete(ctx, store, shared, ex, bucket, key, &upload_id).await
        }
        Operation::AbortMultipartUpload { upload_id } => {
            abort(parts, ex, bucket, key, &upload_id).await
        }
        Operation::ListParts {
            upload_id,
            max_parts,
            part_number_marker,
        } => {
            let page = (part_number_marker, max_parts);
            listing::parts(parts, ex, bucket, key, &upload_id, page).await
        }
        Operation::ListMultipartUploads(params) => {
            listing::uploads(parts, ex, bucket, &params).await
        }
        _ => {
            let e = super::not_implemented("Not a multipart operation.");
            reply::error(ex, &e).await
        }
    }
}

/// The S3 error of a multipart refusal.
pub(super) fn error(e: &MultipartError) -> S3Error {
    let message = e.to_string();
    match e {
        MultipartError::NoSuchUpload => S3Error::from_code(ErrorCode::NoSuchUpload),
        MultipartError::InvalidPartNumber(_) | MultipartError::InvalidMetadata => {
            S3Error::new(ErrorCode::InvalidArgument, message)
        }
        MultipartError::InvalidPart(_) => S3Error::new(ErrorCode::InvalidPart, message),
        MultipartError::InvalidPartOrder => S3Error::from_code(ErrorCode::InvalidPartOrder),
        MultipartError::NoParts => S3Error::new(ErrorCode::MalformedXML, message),
        MultipartError::EntityTooSmall { .. } => S3Error::new(ErrorCode::EntityTooSmall, message),
        MultipartError::EntityTooLarge => S3Error::from_code(ErrorCode::EntityTooLarge),
        MultipartError::InvalidRange => S3Error::from_code(ErrorCode::InvalidRange),
        MultipartError::Store(e) => reply::store_error(e, Missing::Key),
    }
}

/// The key of a multipart request as an object's store path (a folder cannot be one).
pub(super) fn object_path(bucket: &str, key: &str) -> Result<StorePath, S3Error> {
    match keys::key_path(bucket, key)? {
        keys::Key::Object(path) => Ok(path),
        keys::Key::Folder(_) => Err(S3Error::new(
            ErrorCode::InvalidArgument,
            "A key ending in / is a folder in weir: it cannot be a multipart upload's.",
        )),
    }
}

/// The upload `upload_id` of `path`: another key's, or an id weir never makes, is
/// `NoSuchUpload`.
pub(super) async fn upload_of<M: MultipartStore>(
    parts: &M,
    path: &StorePath,
    upload_id: &str,
) -> Result<UploadId, S3Error> {
    let no_such = || S3Error::from_code(ErrorCode::NoSuchUpload);
    let id = UploadId::parse(upload_id).ok_or_else(no_such)?;
    let upload = parts.upload(id).await.map_err(|e| error(&e))?;
    if upload.key != *path {
        return Err(no_such());
    }
    Ok(id)
}

/// CreateMultipartUpload.
async fn create<M: MultipartStore>(
    ctx: &Ctx<'_>,
    parts: &M,
    ex: &mut Exchange<'_>,
    bucket: &str,
    key: &str,
) -> Result<(), weir::Error> {
    let path = match object_path(bucket, key) {
        Ok(p) => p,
        Err(e) => return reply::error(ex, &e).await,
    };
    let head = ex.request();
    // The object's metadata, checked now (`MetadataTooLarge` at creation, as S3), split
    // into the upload record's user metadata and other fields.
    let object_meta = match metadata::of_request(head) {
        Ok(m) => m.unwrap_or_default(),
        Err(e) => return reply::error(ex, &e).await,
    };
    // ALLOCATION: the metadata as text, once per upload. The record is text: a value that is
    // not UTF-8 is kept lossily (PutObject keeps its bytes).
    let mut metadata = Vec::new();
    let mut fields = Vec::new();
    for (name, value) in object_meta.fields() {
        let value = String::from_utf8_lossy(value).into_owned();
        match name.strip_prefix("x-amz-meta-") {
            Some(short) => metadata.push((short.to_owned(), value)),
            None => fields.push((name.to_owned(), value)),
        }
    }
    let (checksum_algorithm, checksum_type) = match checksum_kind(head) {
        Ok(Some((algorithm, kind))) => (
            Some(algorithm.name().to_owned()),
            Some(kind.as_str().to_owned()),
        ),
        Ok(None) => (None, None),
        Err(e) => return reply::error(ex, &e).await,
    };
    let meta = MultipartMeta {
        media_type: crate::serve::mime::of_request(ex),
        metadata,
        fields,
        checksum_algorithm,
        checksum_type,
    };
    let _ = ctx;
    match parts.create(&path, meta).await {
        Ok(upload) => {
            let id = upload.id.to_string();
            let body = write::initiate_multipart_upload(bucket, key, &id);
            let meta = &upload.meta;
            match (&meta.checksum_algorithm, &meta.checksum_type) {
                // The algorithm and type settled, echoed as S3 does (boto3 reads them here).
                (Some(algorithm), Some(kind)) => {
                    ex.respond(StatusCode::OK)
                        .header("content-type", "application/xml")
                        .header("x-amz-checksum-algorithm", algorithm)
                        .header("x-amz-checksum-type", kind)
                        .body(body)
                        .await
                }
                _ => reply::xml(ex, StatusCode::OK, body).await,
            }
        }
        Err(e) => reply::error(ex, &error(&e)).await,
    }
}

/// The checksum a CreateMultipartUpload announces: `x-amz-checksum-algorithm` and
/// `x-amz-checksum-type`, with S3's rules: SHA-1 and SHA-256 can only be `COMPOSITE` (a hash
/// of parts cannot be combined into the whole's), CRC64NVME only `FULL_OBJECT`, CRC32 and
/// CRC32C either; without a type, `FULL_OBJECT` for CRC64NVME and `COMPOSITE` for the others;
/// a type without an algorithm, or a pair S3 refuses, is `InvalidRequest`.
fn checksum_kind(
    head: &weir::Request,
) -> Result<Option<(ChecksumAlgorithm, ChecksumType)>, S3Error> {
    let algorithm = match head.header_str("x-amz-checksum-algorithm") {
        Some(a) => Some(
            ChecksumAlgorithm::from_name(&a.to_ascii_uppercase()).ok_or_else(|| {
                S3Error::new(ErrorCode::InvalidArgument, "Unknown checksum algorithm.")
            })?,
        ),
        None => None,
    };
    let kind = match head.header("x-amz-checksum-type") {
        Some(t) => Some(ChecksumType::parse(
            std::str::from_utf8(t).unwrap_or_default(),
        )?),
        None => None,
    };
    let refused = |message: &'static str| S3Error::new(ErrorCode::InvalidRequest, message);
    match (algorithm, kind) {
        (None, None) => Ok(None),
        (None, Some(_)) => Err(refused(
            "The x-amz-checksum-type header can only be used with the x-amz-checksum-algorithm              header.",
        )),
        (Some(a), Some(ChecksumType::FullObject)) if !a.is_crc() => Err(refused(
            "The FULL_OBJECT checksum type cannot be used with the SHA1 or SHA256 algorithms.",
        )),
        (Some(ChecksumAlgorithm::Crc64Nvme), Some(ChecksumType::Composite)) => Err(refused(
            "The COMPOSITE checksum type cannot be used with the CRC64NVME algorithm.",
        )),
        (Some(a), Some(kind)) => Ok(Some((a, kind))),
        (Some(ChecksumAlgorithm::Crc64Nvme), None) => Ok(Some((
            ChecksumAlgorithm::Crc64Nvme,
            ChecksumType::FullObject,
        ))),
        (Some(a), None) => Ok(Some((a, ChecksumType::Composite))),
    }
}

/// AbortMultipartUpload: `204`, or `NoSuchUpload`.
async fn abort<M: MultipartStore>(
    parts: &M,
    ex: &mut Exchange<'_>,
    bucket: &str,
    key: &str,
    upload_id: &str,
) -> Result<(), weir::Error> {
    let aborted = async {
        let path = object_path(bucket, key)?;
        let id = upload_of(parts, &path, upload_id).await?;
        parts.abort(id).await.map_err(|e| error(&e))
    }
    .await;
    match aborted {
        Ok(()) => reply::empty(ex, StatusCode::NO_CONTENT, &[]).await,
        Err(e) => reply::error(ex, &e).await,
    }
}
