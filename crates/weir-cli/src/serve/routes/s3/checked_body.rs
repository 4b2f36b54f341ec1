//! The checked body path, one loop for PutObject (`object_put.rs`) and UploadPart
//! (`multipart/part.rs`): each body chunk (`Exchange::read_body_chunk`, the read buffer's own
//! bytes) goes through the `aws-chunked` decoder when the body is one (each chunk signature
//! checked, the trailers parsed), then through what must be computed beside the store's own
//! SHA-256 (the MD5, an `x-amz-checksum-*`, a signed payload's SHA-256 where the store does
//! not judge it), then to `StoreUpload::write` (the store's backpressure reaches the socket).
//! Every piece of it, a multipart part written in place is paced as on the splice path
//! (`Upload::before_piece`: the parts before it first, within reach of the object's hash).
//!
//! Invariants: the decoder hands out ranges of the chunk, so no copy is added on the data
//! path; every check is made after the last byte and before the caller commits, so a body
//! that fails one is aborted by the caller and nothing is stored.

use super::reply::Failure;
use crate::serve::body::{BodyFailure, SPLICE_PIECE};
use sha2::{Digest, Sha256};
use weir::Exchange;
use weir_s3api::checksum::{Checksum, ChecksumAlgorithm, ChecksumValue, ContentMd5};
use weir_s3api::chunked::{ChunkedDecoder, Event};
use weir_s3api::{ErrorCode, S3Error};
use weir_store::{PartTag, PartTagHasher, StoreUpload};

/// What the body must match, and what to compute.
pub(super) struct Wanted {
    /// `Content-MD5`: a mismatch is `BadDigest`.
    pub md5: Option<[u8; 16]>,
    /// Compute the bytes' [`PartTagHasher`] tag (a multipart part without `Content-MD5`: its
    /// ETag).
    pub part_tag: bool,
    /// `x-amz-checksum-*` in the head.
    pub checksum: Option<ChecksumValue>,
    /// The checksum trailer announced (`x-amz-trailer`).
    pub trailer: Option<ChecksumAlgorithm>,
    /// A signed payload's SHA-256 to check here (`XAmzContentSHA256Mismatch`); `None` where
    /// the store judges it at the commit (PutObject's expected digest).
    pub sha256: Option<[u8; 32]>,
}

/// What the body turned out to be, every check passed.
pub(super) struct Checked {
    /// The body's MD5, when it was computed.
    pub md5: Option<[u8; 16]>,
    /// The bytes' part tag, when it was asked for.
    pub part_tag: Option<PartTag>,
    /// The checksum the client sent (in the head or the trailer), verified.
    pub checksum: Option<ChecksumValue>,
}

/// Reads the whole body into `upload` (see the module doc).
pub(super) async fn read<U: StoreUpload>(
    ex: &mut Exchange<'_>,
    upload: &mut U,
    mut decoder: Option<ChunkedDecoder>,
    wanted: &Wanted,
) -> Result<Checked, Failure> {
    let mut md5 = wanted.md5.map(|_| ContentMd5::default());
    let mut part_tag = wanted.part_tag.then(PartTagHasher::default);
    let mut sha256 = wanted.sha256.map(|_| Sha256::new());
    let algorithm = wanted.checksum.map(|c| c.algorithm()).or(wanted.trailer);
    let mut checksum = algorithm.map(Checksum::new);
    let mut trailer = None;
    let mut ended = decoder.is_none();
    // Paced every piece as the splice path is (`body::splice_body`): a multipart part in
    // place may wait for the parts before it, and for the object's hash.
    let (mut received, mut paced_at) = (0u64, 0u64);
    loop {
        if received >= paced_at {
            if let Some(file) = upload.file() {
                file.before_piece(ex.body_at_hand()).await;
            }
            paced_at = received + SPLICE_PIECE;
        }
        let chunk = match ex.read_body_chunk().await {
            Ok(Some(chunk)) => chunk,
            Ok(None) => {
                if let Some(file) = upload.file() {
                    file.body_ended();
                }
                break;
            }
            Err(e) => return Err(Failure::Body(BodyFailure::Body(e))),
        };
        received += chunk.len() as u64;
        let mut feed = |data: &[u8]| {
            if let Some(m) = &mut md5 {
                m.update(data);
            }
            if let Some(t) = &mut part_tag {
                t.update(data);
            }
            if let Some(s) = &mut sha256 {
                s.update(data);
            }
            if let Some(c) = &mut checksum {
                c.update(data);
            }
        };
        let Some(decoder) = decoder.as_mut() else {
            feed(&chunk);
            upload.write(&chunk).await.map_err(BodyFailure::Store)?;
            continue;
        };
        let mut pos = 0;
        while pos < chunk.len() {
            if ended {
                return Err(Failure::S3(S3Error::new(
                    ErrorCode::InvalidRequest,
                    "Bytes follow the end of the aws-chunked body.",
                )));
            }
            let (used, event) = decoder.decode(&chunk[pos..]).map_err(Failure::S3)?;
            match event {
                Event::Data(range) => {
                    let data = &chunk[pos..][range]; // no copy: a range of the read buffer
                    feed(data);
                    upload.write(data).await.map_err(BodyFailure::Store)?;
                }
                Event::NeedMore => {}
                Event::End(trailers) => {
                    trailer = trailers.checksum;
                    ended = true;
                }
            }
            pos += used;
        }
    }
    if let Some(decoder) = &decoder {
        decoder.finish().map_err(Failure::S3)?;
    }
    let md5 = md5.map(ContentMd5::finalize);
    if let (Some(computed), Some(claimed)) = (&md5, &wanted.md5)
        && computed != claimed
    {
        return Err(Failure::S3(S3Error::from_code(ErrorCode::BadDigest)));
    }
    if let (Some(s), Some(signed)) = (sha256, &wanted.sha256) {
        let computed: [u8; 32] = s.finalize().into();
        if &computed != signed {
            return Err(Failure::S3(S3Error::from_code(
                ErrorCode::XAmzContentSHA256Mismatch,
            )));
        }
    }
    let computed = checksum.map(Checksum::finalize);
    let checksum = match (computed, wanted.checksum.or(trailer)) {
        (Some(computed), Some(claimed)) => {
            computed.check(&claimed).map_err(Failure::S3)?;
            Some(claimed)
        }
        // A trailer announced but not sent.
        (Some(_), None) if wanted.trailer.is_some() => {
            return Err(Failure::S3(S3Error::new(
                ErrorCode::InvalidRequest,
                "The checksum trailer announced by x-amz-trailer was not sent.",
            )));
        }
        _ => None,
    };
    Ok(Checked {
        md5,
        part_tag: part_tag.map(PartTagHasher::finish),
        checksum,
    })
}
