//! UploadPart and UploadPartCopy: a part's bytes into the part's upload (the store's own
//! `StoreUpload`, from `MultipartStore::begin_part`), recorded by `finish_part` with its ETag
//! (`weir_store::PartTag`: the MD5 the client sent and the body matched, else the bytes' CRC-64
//! and length) and the checksums the client asked for, replacing an earlier part of that
//! number.
//!
//! Two body paths, as PutObject's:
//! - **spliced** (a local store, `UNSIGNED-PAYLOAD`, no `Content-MD5`, no `x-amz-checksum-*`,
//!   no trailer): socket → file with `splice` (`body::splice_body`), no byte through user
//!   space; the store reads the part back once for its CRC tag (`finish_part` with no tag);
//!   a part in place is paced with the other parts of its upload in flight before each piece
//!   (`weir_store`'s `multipart/pace.rs`: the earlier parts first when the server, not the
//!   network, is what limits them, and within reach of the object's hash);
//! - **checked** (anything else, and every part into a bucket): `checked_body.rs`, the loop
//!   PutObject shares: the `aws-chunked` decoder when it is one, then the MD5, the asked
//!   checksum and, for a signed payload, the SHA-256, each only if the client sent it, and the
//!   CRC tag without an MD5, then `StoreUpload::write` (the store's backpressure reaches the
//!   socket). No copy added.
//!
//! Memory per part is the store's bound for any upload, whatever the part's size (5 GiB at
//! most: `EntityTooLarge` before any body byte). Every check fails before the part is recorded
//! (`BadDigest`, `XAmzContentSHA256Mismatch`, `IncompleteBody`): a refused part leaves the
//! earlier part of that number, if any, in place.

use super::super::access::Caller;
use super::super::checked_body::{self, Wanted};
use super::super::reply::{self, Failure};
use super::super::{Ctx, copy, keys};
use super::{error, object_path, upload_of};
use crate::serve::auth::Access;
use crate::serve::body::{BodyFailure, NoCheckpoints, splice_body};
use http::StatusCode;
use weir::{Exchange, http};
use weir_s3api::checksum::{ChecksumAlgorithm, ChecksumValue, ContentMd5};
use weir_s3api::route::CopySource;
use weir_s3api::xml::write;
use weir_s3api::{ErrorCode, S3Error};
use weir_store::{
    FileMeta, MAX_PART_SIZE, MultipartStore, PartRecord, PartSeal, PartTag, StoreUpload, UploadId,
};

/// Where a part goes.
pub(in super::super) struct Target<'a> {
    pub bucket: &'a str,
    pub key: &'a str,
    pub number: u32,
    pub upload_id: &'a str,
}

/// What the body must match, from the head.
struct Expected {
    /// `Content-MD5`.
    md5: Option<[u8; 16]>,
    /// `x-amz-checksum-*` in the head.
    checksum: Option<ChecksumValue>,
    /// The checksum trailer announced (`x-amz-trailer`).
    trailer: Option<ChecksumAlgorithm>,
    /// The signed payload's SHA-256.
    sha256: Option<[u8; 32]>,
}

impl Expected {
    fn of(caller: &Caller, ex: &Exchange<'_>) -> Result<Self, S3Error> {
        let headers = super::super::access::header_map(ex.request())?;
        let md5 = match ex.request().header_str("content-md5") {
            Some(v) => Some(ContentMd5::parse(v)?),
            None => None,
        };
        Ok(Self {
            md5,
            checksum: weir_s3api::checksum::from_headers(&headers)?,
            trailer: caller.trailer(),
            sha256: caller.payload().expected_sha256().copied(),
        })
    }

    /// Nothing needs the bytes: the spliced path may take them.
    fn nothing_to_check(&self) -> bool {
        self.md5.is_none()
            && self.checksum.is_none()
            && self.trailer.is_none()
            && self.sha256.is_none()
    }
}

/// UploadPart.
pub(in super::super) async fn upload<M: MultipartStore>(
    ctx: &Ctx<'_>,
    parts: &M,
    ex: &mut Exchange<'_>,
    bucket: &str,
    key: &str,
    number: u32,
    upload_id: &str,
) -> Result<(), weir::Error> {
    match upload_checked(ctx, parts, ex, bucket, key, number, upload_id).await {
        Ok(Ok((part, checksum))) => {
            let etag = format!("\"{}\"", part.etag());
            let mut headers: Vec<(&str, String)> = vec![("etag", etag)];
            if let Some(value) = checksum {
                headers.push((value.algorithm().header_name(), value.to_base64()));
            }
            let refs: Vec<(&str, &str)> = headers.iter().map(|(n, v)| (*n, v.as_str())).collect();
            reply::empty(ex, StatusCode::OK, &refs).await
        }
        Ok(Err(e)) => reply::error(ex, &e).await,
        Err(e) => Err(e),
    }
}

type Outcome3 = Result<Result<(PartRecord, Option<ChecksumValue>), S3Error>, weir::Error>;

async fn upload_checked<M: MultipartStore>(
    ctx: &Ctx<'_>,
    parts: &M,
    ex: &mut Exchange<'_>,
    bucket: &str,
    key: &str,
    number: u32,
    upload_id: &str,
) -> Outcome3 {
    macro_rules! tri {
        ($e:expr) => {
            match $e {
                Ok(v) => v,
                Err(e) => return Ok(Err(e)),
            }
        };
    }
    let path = tri!(object_path(bucket, key));
    let id: UploadId = tri!(upload_of(parts, &path, upload_id).await);
    let chunked = ctx.caller.chunked_decoder();
    let length = match &chunked {
        Some(_) => ctx.caller.decoded_length(),
        None => ex.request().content_length(),
    };
    let Some(length) = length else {
        return Ok(Err(S3Error::from_code(ErrorCode::MissingContentLength)));
    };
    if length > MAX_PART_SIZE {
        return Ok(Err(S3Error::from_code(ErrorCode::EntityTooLarge)
            .with_detail("MaxSizeAllowed", MAX_PART_SIZE.to_string())));
    }
    // As PutObject's: an `aws-chunked` body's framing on top of its bytes, bounded.
    let wire_max = match &chunked {
        Some(_) => length.saturating_add(length / 4).saturating_add(64 << 10),
        None => length,
    };
    ex.set_max_body_size(Some(wire_max));
    let expected = tri!(Expected::of(ctx.caller, ex));
    let mut upload = tri!(
        parts
            .begin_part(id, number, Some(length))
            .await
            .map_err(|e| error(&e))
    );
    let spliced = chunked.is_none() && expected.nothing_to_check() && upload.file().is_some();
    let received = if spliced {
        let file = upload.file().expect("checked above");
        match file.preallocate() {
            Ok(()) => splice_body(ex, file, &mut NoCheckpoints)
                .await
                .map(|()| (None, None))
                .map_err(Failure::Body),
            Err(e) => Err(Failure::Body(BodyFailure::Store(e))),
        }
    } else {
        let wanted = Wanted {
            md5: expected.md5,
            part_tag: expected.md5.is_none(),
            checksum: expected.checksum,
            trailer: expected.trailer,
            sha256: expected.sha256,
        };
        checked_body::read(ex, &mut upload, chunked, &wanted)
            .await
            .map(|checked| {
                let tag = checked.md5.map(PartTag::Md5).or(checked.part_tag);
                (tag, checked.checksum)
            })
    };
    let (tag, checksum) = match received {
        Ok(r) => r,
        Err(failure) => {
            abort(upload).await;
            return match failure {
                Failure::Body(BodyFailure::Body(e)) if e.is_disconnect() => Err(e),
                other => Ok(Err(other.into_s3())),
            };
        }
    };
    if upload.size() != length {
        abort(upload).await;
        return Ok(Err(S3Error::from_code(ErrorCode::IncompleteBody)));
    }
    let seal = PartSeal {
        tag,
        checksums: checksum
            .iter()
            .map(|c| (c.algorithm().name().to_owned(), c.to_base64()))
            .collect(),
    };
    match parts.finish_part(id, number, upload, seal).await {
        Ok(part) => Ok(Ok((part, checksum))),
        Err(e) => Ok(Err(error(&e))),
    }
}

/// Discards a refused part, waiting for the store.
async fn abort<U: StoreUpload>(upload: U) {
    if let Err(e) = upload.abort().await {
        tracing::warn!(error = %e, "aborting a refused S3 part failed");
    }
}

/// UploadPartCopy: the source's range (`x-amz-copy-source-range`, else all of it) as the part,
/// if the source's conditions (`x-amz-copy-source-if-*`) hold on the version copied.
pub(in super::super) async fn copy<M: MultipartStore>(
    ctx: &Ctx<'_>,
    parts: &M,
    ex: &mut Exchange<'_>,
    at: Target<'_>,
    source: CopySource,
) -> Result<(), weir::Error> {
    let copied = async {
        let path = object_path(at.bucket, at.key)?;
        let id = upload_of(parts, &path, at.upload_id).await?;
        let from = match keys::key_path(&source.bucket, &source.key)? {
            keys::Key::Object(p) => p,
            keys::Key::Folder(_) => return Err(S3Error::from_code(ErrorCode::NoSuchKey)),
        };
        // ALLOCATION: the source's scope path.
        let scope = format!("{}/{}", source.bucket, source.key);
        if !ctx.caller.allows(Access::Read, &scope) {
            return Err(S3Error::from_code(ErrorCode::AccessDenied));
        }
        let range = source
            .range
            .map(|(first, last)| first..last.saturating_add(1));
        let head = ex.request();
        let check = |meta: Option<&FileMeta>| meta.is_some_and(|m| copy::source_holds(head, m));
        parts
            .copy_part(id, at.number, &from, range, Some(&check))
            .await
            .map_err(|e| match e {
                weir_store::MultipartError::Store(weir_store::StoreError::NotFound) => {
                    S3Error::from_code(ErrorCode::NoSuchKey)
                }
                e => error(&e),
            })
    }
    .await;
    match copied {
        Ok(part) => {
            let body = write::copy_result(true, &part.etag(), part.modified, None);
            reply::xml(ex, StatusCode::OK, body).await
        }
        Err(e) => reply::error(ex, &e).await,
    }
}
