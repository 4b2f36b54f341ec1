//! PutObject: the body streams into the store and becomes the object atomically, verified, or
//! nothing is stored. Generic over weir-store's `Store`, on the machinery `/files/`'s `PUT`
//! uses (`serve/body.rs`), so that S3 gets weir's guarantees and data paths:
//!
//! - **plain body** (`UNSIGNED-PAYLOAD`, or a signed SHA-256): into a local file by the
//!   **hashed** path (`body::hashed_body`: direct reads into pooled buffers, written and
//!   hashed in place, the hashing pipelined on the hashing threads), into a bucket by the
//!   **chunks** path (`body::chunks_body`). The signed SHA-256 (and an
//!   `x-amz-checksum-sha256`) is the upload's expected digest: the store compares it with the
//!   SHA-256 it computes anyway, at the commit, so checking the signature's payload hash costs
//!   nothing. (Splice is not used: an S3 PUT always hashes, since its ETag is the SHA-256.)
//! - **checked body** (`aws-chunked`, or a `Content-MD5`, or an `x-amz-checksum-*` other than
//!   SHA-256): `checked_body.rs`, the loop UploadPart shares (the decoder, the checksums, then
//!   `StoreUpload::write`, which hashes SHA-256 inline on the connection's task for a local
//!   file; no copy added).
//!
//! Checks, all before any body byte is read (no `100 Continue` for a refused upload): the
//! bucket exists (`NoSuchBucket`), the key is a valid store path (`keys.rs`), the length is
//! declared (`MissingContentLength`) and within `--max-upload` (`EntityTooLarge`), the
//! preconditions (`If-None-Match: *`, `If-Match`: `PreconditionFailed`, judged again by the
//! store atomically with the commit). After the body, before the commit: `Content-MD5`
//! (`BadDigest`), `x-amz-checksum-*` in the head or the trailer (`BadDigest`), the signed
//! SHA-256 (`XAmzContentSHA256Mismatch`), the length (`IncompleteBody`). Any failure aborts
//! the upload before the answer: nothing is left, the key keeps its earlier version.
//!
//! The checksum a client sends in the head (`x-amz-checksum-*`) is kept with the object, in
//! its S3 metadata (`weir_store::CHECKSUM_FIELD`), for GetObject's `x-amz-checksum-mode`; one
//! sent in the trailer too, added after the body (`StoreUpload::keep_checksum`), announced to
//! the store before the body (`StoreUpload::checksum_follows`) so that the S3 store keeps it
//! past one part size too (in the version's sidecar).
//!
//! A key ending in `/` with an empty body is a folder (S3 consoles' "folder" objects), created
//! with `Store::create_dir`.

use super::access::Caller;
use super::checked_body::{self, Wanted};
use super::reply::{self, Failure, Missing};
use super::{Ctx, bucket, keys, metadata};
use crate::serve::body::{BodyFailure, NoCheckpoints, WhereHashed, chunks_body, hashed_body};
use crate::serve::preconditions;
use http::StatusCode;
use weir::{Exchange, Framing, http};
use weir_proto::conditional;
use weir_s3api::checksum::{ChecksumAlgorithm, ChecksumValue, ContentMd5};
use weir_s3api::{ErrorCode, S3Error};
use weir_store::{
    ContentDigest, FileMeta, Store, StoreError, StoreObject, StoreUpload, UploadOptions,
};

/// What the body must match, from the head.
struct Expected {
    /// `Content-MD5`.
    md5: Option<[u8; 16]>,
    /// `x-amz-checksum-*` in the head (a SHA-256 one goes to the store's digest instead).
    checksum: Option<ChecksumValue>,
    /// The checksum trailer announced (`x-amz-trailer`).
    trailer: Option<ChecksumAlgorithm>,
    /// The SHA-256 the store must find: the signed payload's, else `x-amz-checksum-sha256`.
    sha256: Option<[u8; 32]>,
    /// `sha256` came from the signature (a mismatch is `XAmzContentSHA256Mismatch`).
    sha256_signed: bool,
    /// An `x-amz-checksum-sha256` was sent (its value is `sha256`): echoed in the answer.
    sha256_checksum: bool,
}

impl Expected {
    fn of(caller: &Caller, ex: &Exchange<'_>) -> Result<Self, S3Error> {
        let headers = super::access::header_map(ex.request())?;
        let md5 = match ex.request().header("content-md5") {
            Some(v) => Some(ContentMd5::parse(std::str::from_utf8(v).unwrap_or("?"))?),
            None => None,
        };
        let mut checksum = weir_s3api::checksum::from_headers(&headers)?;
        let signed = caller.payload().expected_sha256().copied();
        let mut sha256 = signed;
        let mut sha256_checksum = false;
        if let Some(c) = checksum.filter(|c| c.algorithm() == ChecksumAlgorithm::Sha256) {
            let bytes: [u8; 32] = c.as_bytes().try_into().expect("SHA-256 is 32 bytes");
            match signed {
                // Two SHA-256s the body must both have: they must agree.
                Some(s) if s != bytes => return Err(S3Error::from_code(ErrorCode::BadDigest)),
                _ => sha256 = Some(bytes),
            }
            checksum = None;
            sha256_checksum = true;
        }
        Ok(Self {
            md5,
            checksum,
            trailer: caller.trailer(),
            sha256,
            sha256_signed: signed.is_some(),
            sha256_checksum,
        })
    }

    /// The body needs the checked path (something to compute beside the store's SHA-256).
    fn needs_checks(&self) -> bool {
        self.md5.is_some() || self.checksum.is_some() || self.trailer.is_some()
    }
}

/// PutObject into `bucket`/`key`.
pub(super) async fn put<S: Store>(
    ctx: &Ctx<'_>,
    store: &S,
    ex: &mut Exchange<'_>,
    bucket: &str,
    key: &str,
) -> Result<(), weir::Error> {
    match put_checked(ctx, store, ex, bucket, key).await {
        Ok(Ok(())) => Ok(()),
        Ok(Err(e)) => reply::error(ex, &e).await,
        Err(e) => Err(e),
    }
}

/// [`put`]; `Ok(Err)`: an S3 error still to answer.
async fn put_checked<S: Store>(
    ctx: &Ctx<'_>,
    store: &S,
    ex: &mut Exchange<'_>,
    bucket: &str,
    key: &str,
) -> Result<Result<(), S3Error>, weir::Error> {
    macro_rules! tri {
        ($e:expr) => {
            match $e {
                Ok(v) => v,
                Err(e) => return Ok(Err(e)),
            }
        };
    }
    let key = tri!(keys::key_path(bucket, key));
    tri!(bucket::exists(store, bucket).await);
    let chunked = ctx.caller.chunked_decoder();
    // The object's length: `x-amz-decoded-content-length` for `aws-chunked`, else the body's
    // (unknown for a chunked transfer coding: then `--max-upload` bounds it as it arrives).
    let length = match (&chunked, ex.request().framing()) {
        (Some(_), _) => ctx.caller.decoded_length(),
        (None, Framing::Length(n)) if ex.request().content_length().is_some() => Some(n),
        (None, Framing::Chunked | Framing::Unknown) => None,
        (None, _) => {
            return Ok(Err(S3Error::from_code(ErrorCode::MissingContentLength)));
        }
    };
    let path = match key {
        keys::Key::Folder(path) if length == Some(0) => {
            return folder(ctx, store, ex, &path).await;
        }
        keys::Key::Folder(_) => {
            return Ok(Err(S3Error::new(
                ErrorCode::InvalidArgument,
                "A key ending in / is a folder in weir: its body must be empty.",
            )));
        }
        keys::Key::Object(path) => path,
    };
    let max = ctx.svc.options.max_upload;
    if length.is_some_and(|n| n > max) {
        return Ok(Err(S3Error::from_code(ErrorCode::EntityTooLarge)
            .with_detail("MaxSizeAllowed", max.to_string())));
    }
    // The wire body of an `aws-chunked` upload is longer than the object by its framing: a
    // chunk header (at most `MAX_LINE` + 2 bytes) per chunk, and the trailers. Clients send
    // chunks of 8 KiB or more; the bound lets 1 KiB chunks through and stops a body that is
    // mostly framing.
    let wire_max = match (&chunked, length) {
        (Some(_), Some(n)) => n.saturating_add(n / 4).saturating_add(64 << 10),
        (_, Some(n)) => n,
        (_, None) => max,
    };
    ex.set_max_body_size(Some(wire_max));
    let mut object_meta = tri!(metadata::of_request(ex.request()));
    let expected = tri!(Expected::of(ctx.caller, ex));
    // The checksum sent in the head is kept with the object (verified before the commit, so
    // an object never keeps one it does not have); one sent in a trailer is known only after
    // the body: kept below, when the store can still add it.
    let sent = expected.checksum.or_else(|| {
        expected
            .sha256
            .filter(|_| expected.sha256_checksum)
            .and_then(|d| ChecksumValue::from_bytes(ChecksumAlgorithm::Sha256, &d))
    });
    if let Some(value) = sent {
        let meta = object_meta.get_or_insert_with(weir_store::ObjectMeta::new);
        let kept = meta.set_checksum(value.algorithm().name(), "FULL_OBJECT", &value.to_base64());
        debug_assert!(kept.is_ok(), "a checksum value is printable ASCII");
    }
    tri!(preconditions_now(store, ex.request(), &path).await);
    let options = UploadOptions {
        hash: true,
        expected_digest: expected.sha256.map(|sha256| ContentDigest {
            sha256: Some(sha256),
            sha512: None,
        }),
        expected_len: length,
        // Kept with the commit: never an object without it (`metadata.rs`).
        object_meta,
    };
    let mut upload = match store
        .begin(&path, options, crate::serve::mime::of_request(ex))
        .await
    {
        Ok(u) => u,
        Err(e) => return Ok(Err(reply::store_error(&e, Missing::Key))),
    };
    if expected.trailer.is_some() && expected.checksum.is_none() {
        // Before the first write: a store that creates the object's metadata early (the S3
        // store, past one part) marks where the trailer's checksum will be.
        upload.checksum_follows();
    }
    let received = if chunked.is_some() || expected.needs_checks() {
        // The signed SHA-256 is the store's expected digest, judged at the commit.
        let wanted = Wanted {
            md5: expected.md5,
            part_tag: false,
            checksum: expected.checksum,
            trailer: expected.trailer,
            sha256: None,
        };
        checked_body::read(ex, &mut upload, chunked, &wanted)
            .await
            .map(|checked| checked.checksum)
    } else {
        match upload.file() {
            Some(file) => match file.preallocate() {
                Ok(()) => {
                    let mut counts = WhereHashed::default();
                    let progress = &mut NoCheckpoints;
                    hashed_body(ctx.svc, ex, file, true, &mut counts, progress)
                        .await
                        .map(|()| None)
                        .map_err(Failure::Body)
                }
                Err(e) => Err(Failure::Body(BodyFailure::Store(e))),
            },
            None => chunks_body(ex, &mut upload)
                .await
                .map(|()| None)
                .map_err(Failure::Body),
        }
    };
    let checksum = match received {
        Ok(c) => c,
        Err(failure) => {
            abort(upload).await;
            return match failure {
                Failure::Body(BodyFailure::Body(e)) if e.is_disconnect() => Err(e),
                other => Ok(Err(other.into_s3())),
            };
        }
    };
    // The trailer's checksum, verified: kept with the commit (announced above, so every store
    // can keep it; were one unable to, it would only be echoed).
    if let Some(value) = checksum.filter(|_| expected.checksum.is_none()) {
        let kept =
            upload.keep_checksum(value.algorithm().name(), "FULL_OBJECT", &value.to_base64());
        if let Err(e) = kept {
            abort(upload).await;
            return Ok(Err(reply::store_error(&e, Missing::Key)));
        }
    }
    let head = ex.request();
    let check = |meta: Option<&FileMeta>| preconditions::hold(head, meta);
    let conditional = conditional::has_preconditions(&preconditions::Fields(head));
    let committed = match upload
        .commit(if conditional { Some(&check) } else { None })
        .await
    {
        Ok(c) => c,
        Err(StoreError::DigestMismatch { .. }) if expected.sha256_signed => {
            return Ok(Err(S3Error::from_code(
                ErrorCode::XAmzContentSHA256Mismatch,
            )));
        }
        Err(StoreError::PreconditionFailed) if conditional && absent_if_match(head) => {
            // Judged at the commit: the object was deleted meanwhile.
            return Ok(Err(S3Error::from_code(ErrorCode::NoSuchKey)));
        }
        Err(e) => return Ok(Err(reply::store_error(&e, Missing::Key))),
    };
    ctx.svc.on_stored(path.as_str(), &committed);
    let etag = preconditions::etag(&committed.stored);
    let mut headers: Vec<(&str, String)> = vec![("etag", etag)];
    // The checksum the client sent (verified) is echoed, as S3 does; a SHA-256 one is the
    // store's own digest.
    let sha256 = committed
        .sha256
        .filter(|_| expected.sha256_checksum)
        .and_then(|d| ChecksumValue::from_bytes(ChecksumAlgorithm::Sha256, &d));
    if let Some(value) = checksum.or(expected.checksum).or(sha256) {
        headers.push((value.algorithm().header_name(), value.to_base64()));
    }
    let refs: Vec<(&str, &str)> = headers.iter().map(|(n, v)| (*n, v.as_str())).collect();
    reply::empty(ex, StatusCode::OK, &refs).await.map(Ok)
}

/// The write preconditions against the object there now, as S3 answers them: `If-Match` on a
/// key with no object is `NoSuchKey`, any other failure `PreconditionFailed`. Judged again by
/// the store atomically with the commit.
async fn preconditions_now<S: Store>(
    store: &S,
    head: &weir::Request,
    path: &weir_store::StorePath,
) -> Result<(), S3Error> {
    if !conditional::has_preconditions(&preconditions::Fields(head)) {
        return Ok(());
    }
    let meta = match store.open(path).await {
        Ok(object) => Some(*object.meta()),
        Err(StoreError::NotFound) => None,
        // A folder or a file on the way: the commit gives the answer.
        Err(StoreError::IsDirectory | StoreError::NotADirectory | StoreError::SymlinkRefused) => {
            return Ok(());
        }
        Err(e) => return Err(reply::store_error(&e, Missing::Key)),
    };
    if meta.is_none() && absent_if_match(head) {
        return Err(S3Error::from_code(ErrorCode::NoSuchKey));
    }
    if !preconditions::hold(head, meta.as_ref()) {
        return Err(S3Error::from_code(ErrorCode::PreconditionFailed));
    }
    Ok(())
}

/// Whether the request has `If-Match` (which fails on a key with no object).
fn absent_if_match(head: &weir::Request) -> bool {
    head.header("if-match").is_some()
}

/// A key ending in `/` with an empty body: the folder, as S3 consoles make "folders".
async fn folder<S: Store>(
    ctx: &Ctx<'_>,
    store: &S,
    ex: &mut Exchange<'_>,
    path: &weir_store::StorePath,
) -> Result<Result<(), S3Error>, weir::Error> {
    if ctx.caller.chunked_decoder().is_some() {
        // The empty `aws-chunked` body still has its framing: read and check it.
        let body = super::small_body::read(ctx.caller, ex, 0).await?;
        if let Err(e) = body {
            return Ok(Err(e));
        }
    }
    match store.create_dir(path).await {
        Ok(_) => reply::empty(ex, StatusCode::OK, &[("etag", super::EMPTY_MD5_ETAG)])
            .await
            .map(Ok),
        Err(e) => Ok(Err(reply::store_error(&e, Missing::Key))),
    }
}

/// Discards a refused upload, waiting for the store.
async fn abort<U: StoreUpload>(upload: U) {
    if let Err(e) = upload.abort().await {
        tracing::warn!(error = %e, "aborting a refused S3 upload failed");
    }
}
