//! S3-style multipart uploads as a store capability: an upload created for a key, its parts
//! written in any order and replaced at will, then assembled into one object at completion,
//! atomically, or aborted. The S3 API's routes (weir-cli) are written once over
//! [`MultipartStore`]; each store implements it once: `local.rs`, [`LocalMultiparts`] (parts
//! are files in the staging area, assembled by `copy_file_range`), and, with the feature `s3`,
//! `s3/multiparts.rs`, `S3Multiparts` (parts are objects under `.weir-multipart/`, assembled by
//! the backend's own multipart upload with `UploadPartCopy`: server-side; it lives beside the
//! S3 client whose internals it uses).
//!
//! | operation | what it does |
//! | --- | --- |
//! | [`MultipartStore::create`] | an upload for a key, with the media type and user metadata the object gets at completion; its id is 128 random bits |
//! | [`MultipartStore::begin_part`] → the store's [`StoreUpload`] | a part's bytes take the path of any upload: locally a temporary file the route fills with `splice` or writes |
//! | [`MultipartStore::finish_part`] | the part recorded under its number (1..=10000), replacing an earlier one atomically: size, its ETag ([`PartTag`]: the MD5 the route verified, else the bytes' CRC-64), the checksums the route verified |
//! | [`MultipartStore::copy_part`] | a part copied from a stored object's range (UploadPartCopy) |
//! | [`MultipartStore::list_parts`], [`MultipartStore::list_uploads`] | paged, by part number; by key then id, with a key prefix |
//! | [`MultipartStore::abort`] | the upload and its parts removed |
//! | [`MultipartStore::complete`] | the listed parts checked (`validate.rs`: ETags, sizes, and the parts' checksums an [`ObjectChecksum`] was formed from), assembled, committed with that checksum in the object's metadata if the check accepts the version at the key; the upload removed |
//! | [`MultipartStore::sweep`] | uploads untouched for a given time removed |
//!
//! Invariants:
//! - nothing is visible at the key until completion commits the whole object, verified, through
//!   the store's own atomic commit (a `SIGKILL` midway leaves the version that was there);
//! - a part is recorded only once its bytes are durable, and its record names exactly one data
//!   file: a replaced part is the old one or the new one, never a mix;
//! - memory per part is the store's upload bound, whatever the part's size: no part is ever held
//!   whole in memory, and none is read back but for its CRC tag when it was spliced
//!   (`part_tag.rs`), in 256 KiB steps;
//! - the completed object's ETag is the store's own, from the SHA-256 of the whole object
//!   (`local.rs`: the commit reads the assembled file back once, since its bytes came by
//!   `copy_file_range`, not through a hasher), the ETag `/files/` answers for it too.

use crate::{
    Committed, MediaType, ObjectChecksum, ObjectMeta, ObjectMetaError, StoreError, StorePath,
    StoreUpload, UploadId, VersionCheck,
};
use std::future::Future;
use std::ops::Range;
use std::time::{Duration, SystemTime};

mod ahead;
mod local;
mod pace;
mod part_tag;
pub(crate) mod record;
mod validate;

pub use local::LocalMultiparts;
pub(crate) use pace::PartPace;
pub use part_tag::{PartTag, PartTagHasher};
pub use validate::{check_part_checksums, select_parts};

/// The smallest part but the last that a completion accepts (S3's limit).
pub const MIN_PART_SIZE: u64 = 5 << 20;
/// The largest part number (S3's limit).
pub const MAX_PART_NUMBER: u32 = 10_000;
/// The largest part (S3's limit).
pub const MAX_PART_SIZE: u64 = 5 << 30;

/// What the object gets at completion, given at creation.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MultipartMeta {
    /// The object's media type (`Content-Type` of CreateMultipartUpload).
    pub media_type: Option<MediaType>,
    /// User metadata (`x-amz-meta-*`: name without the prefix, value), kept with the upload and
    /// listed back. Neither name nor value may hold a line break.
    pub metadata: Vec<(String, String)>,
    /// The other header fields the object keeps ([`KEPT_FIELDS`](crate::KEPT_FIELDS):
    /// `Cache-Control`, …; lower-case name, value), given at creation too.
    pub fields: Vec<(String, String)>,
    /// The checksum algorithm the client announced (`x-amz-checksum-algorithm`), as given.
    pub checksum_algorithm: Option<String>,
    /// How the object's checksum is formed from the parts' (`x-amz-checksum-type`:
    /// `COMPOSITE` or `FULL_OBJECT`), as the S3 API settled it at creation.
    pub checksum_type: Option<String>,
}

impl MultipartMeta {
    /// The S3 metadata the object gets at completion: [`MultipartMeta::metadata`] as
    /// `x-amz-meta-*`, and [`MultipartMeta::fields`].
    pub fn object_meta(&self) -> Result<ObjectMeta, ObjectMetaError> {
        let mut meta = ObjectMeta::new();
        for (name, value) in &self.metadata {
            // ALLOCATION: the full name, once per field per completion.
            meta.push(&format!("x-amz-meta-{name}"), value.as_bytes())?;
        }
        for (name, value) in &self.fields {
            meta.push(name, value.as_bytes())?;
        }
        Ok(meta)
    }

    /// [`MultipartMeta::object_meta`] with the sizes of the parts completed, in order
    /// ([`ObjectMeta::set_parts`]: GetObject's `partNumber`), and the object's checksum when
    /// the completion gave one ([`ObjectMeta::set_multipart_checksum`]), kept with the commit
    /// by every store.
    pub fn completed_object_meta(
        &self,
        sizes: impl IntoIterator<Item = u64>,
        checksum: Option<&ObjectChecksum>,
    ) -> Result<ObjectMeta, ObjectMetaError> {
        let mut meta = self.object_meta()?;
        // Past the bound the object keeps no part sizes: reading it by part is refused.
        meta.set_parts(sizes);
        if let Some(checksum) = checksum {
            // Past its bound the parts' checksums are left out, the object's is kept.
            meta.set_multipart_checksum(checksum)?;
        }
        Ok(meta)
    }
}

/// One multipart upload in progress.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MultipartUpload {
    /// Its id (32 hex digits).
    pub id: UploadId,
    /// The object's key.
    pub key: StorePath,
    /// When it was created.
    pub initiated: SystemTime,
    /// What the object gets at completion.
    pub meta: MultipartMeta,
}

/// A recorded part.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PartRecord {
    /// 1..=[`MAX_PART_NUMBER`].
    pub number: u32,
    /// Bytes.
    pub size: u64,
    /// What its ETag names.
    pub tag: PartTag,
    /// The checksums the route verified for it (`x-amz-checksum-*`: algorithm name as the
    /// route spells it, base64 value), kept to be listed and combined at completion.
    pub checksums: Vec<(String, String)>,
    /// When it was recorded.
    pub modified: SystemTime,
}

impl PartRecord {
    /// The part's ETag without quotes ([`PartTag::etag`]).
    pub fn etag(&self) -> String {
        self.tag.etag()
    }
}

/// One entry of a CompleteMultipartUpload list.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CompletePart {
    /// The part number the client names.
    pub number: u32,
    /// The ETag it names (quoted or not).
    pub etag: String,
}

/// What [`MultipartStore::finish_part`] records besides the bytes.
#[derive(Clone, Debug, Default)]
pub struct PartSeal {
    /// The part's tag when the route computed it as the bytes went by: the MD5 the client sent
    /// and the bytes matched, else their [`PartTagHasher`] tag. `None` (bytes spliced to disk):
    /// the store reads the part back for its CRC tag.
    pub tag: Option<PartTag>,
    /// Checksums the route verified (see [`PartRecord::checksums`]).
    pub checksums: Vec<(String, String)>,
}

/// A completed upload.
#[derive(Clone, Debug)]
pub struct Completed {
    /// The object stored, as any commit answers it.
    pub committed: Committed,
    /// The parts it was assembled from, in order.
    pub parts: Vec<PartRecord>,
    /// The upload it completed (key, metadata; only the key when `repeated`).
    pub upload: MultipartUpload,
    /// The upload was completed before: this answers a completion sent again (nothing was
    /// stored now).
    pub repeated: bool,
}

/// One page of [`MultipartStore::list_parts`].
#[derive(Clone, Debug)]
pub struct PartsPage {
    pub upload: MultipartUpload,
    /// Parts above the marker, by number.
    pub parts: Vec<PartRecord>,
    /// More parts follow the last one.
    pub truncated: bool,
}

/// One page of [`MultipartStore::list_uploads`].
#[derive(Clone, Debug)]
pub struct UploadsPage {
    /// Uploads after the marker, by key then id.
    pub uploads: Vec<MultipartUpload>,
    /// More uploads follow the last one.
    pub truncated: bool,
}

/// Why a multipart operation failed: S3's error codes, then the store's own errors.
#[derive(Debug, thiserror::Error)]
pub enum MultipartError {
    /// No upload with this id (never created, aborted, completed or swept): `NoSuchUpload`.
    #[error("no such upload")]
    NoSuchUpload,
    /// A part number outside 1..=10000: `InvalidArgument`.
    #[error("part number {0} is not in 1..=10000")]
    InvalidPartNumber(u32),
    /// A completion names a part that was not uploaded, or with another ETag: `InvalidPart`.
    #[error("part {0} was not uploaded, or not with this ETag")]
    InvalidPart(u32),
    /// A completion's parts are not in ascending order (or repeat one): `InvalidPartOrder`.
    #[error("the parts are not in ascending order")]
    InvalidPartOrder,
    /// A completion names no part: `MalformedXML` in S3.
    #[error("no part named")]
    NoParts,
    /// A part but the last is smaller than [`MIN_PART_SIZE`]: `EntityTooSmall`.
    #[error("part {part} is smaller than 5 MiB and not the last")]
    EntityTooSmall { part: u32 },
    /// A part larger than [`MAX_PART_SIZE`]: `EntityTooLarge`.
    #[error("part is larger than 5 GiB")]
    EntityTooLarge,
    /// User metadata or a checksum name that a record cannot hold (a line break, a space in
    /// a name): `InvalidArgument`.
    #[error("metadata with a line break, a name with a space, or not an object's metadata")]
    InvalidMetadata,
    /// An UploadPartCopy range outside the source: `InvalidRange`.
    #[error("the range is not inside the source object")]
    InvalidRange,
    /// The store's error (a precondition failed at completion, no space, I/O...).
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Checks a part number.
pub fn check_part_number(number: u32) -> Result<(), MultipartError> {
    if (1..=MAX_PART_NUMBER).contains(&number) {
        Ok(())
    } else {
        Err(MultipartError::InvalidPartNumber(number))
    }
}

/// Multipart uploads over a store (see the module doc).
pub trait MultipartStore: Send + Sync + 'static {
    /// A part's upload: the store's own.
    type Upload: StoreUpload;

    /// Creates an upload for `key` (refused as an upload to `key` would be: a directory there,
    /// an invalid target).
    fn create(
        &self,
        key: &StorePath,
        meta: MultipartMeta,
    ) -> impl Future<Output = Result<MultipartUpload, MultipartError>> + Send;

    /// The upload `id`, if it exists.
    fn upload(
        &self,
        id: UploadId,
    ) -> impl Future<Output = Result<MultipartUpload, MultipartError>> + Send;

    /// Begins part `number` of upload `id`: an upload whose bytes the caller writes (or
    /// splices into [`StoreUpload::file`]), of `expected_len` bytes when known.
    fn begin_part(
        &self,
        id: UploadId,
        number: u32,
        expected_len: Option<u64>,
    ) -> impl Future<Output = Result<Self::Upload, MultipartError>> + Send;

    /// Records the bytes of `upload` (from [`MultipartStore::begin_part`] with the same id and
    /// number) as the part, durably, replacing an earlier part of that number atomically.
    fn finish_part(
        &self,
        id: UploadId,
        number: u32,
        upload: Self::Upload,
        seal: PartSeal,
    ) -> impl Future<Output = Result<PartRecord, MultipartError>> + Send;

    /// Part `number` of `id` copied from the object at `from` (its bytes in `range`, else
    /// all), if `check` (when given) accepts the source's version (`x-amz-copy-source-if-*`).
    fn copy_part(
        &self,
        id: UploadId,
        number: u32,
        from: &StorePath,
        range: Option<Range<u64>>,
        check: Option<VersionCheck<'_>>,
    ) -> impl Future<Output = Result<PartRecord, MultipartError>> + Send;

    /// Up to `limit` parts of `id` numbered above `after`.
    fn list_parts(
        &self,
        id: UploadId,
        after: u32,
        limit: usize,
    ) -> impl Future<Output = Result<PartsPage, MultipartError>> + Send;

    /// Up to `limit` uploads whose key starts with `prefix`, after `(key, id)` (S3's
    /// `key-marker` and `upload-id-marker`: with no id, every upload of that key is skipped).
    fn list_uploads(
        &self,
        prefix: &str,
        after: Option<(&str, Option<UploadId>)>,
        limit: usize,
    ) -> impl Future<Output = Result<UploadsPage, MultipartError>> + Send;

    /// Removes the upload and its parts.
    fn abort(&self, id: UploadId) -> impl Future<Output = Result<(), MultipartError>> + Send;

    /// Assembles the listed parts into the object at the upload's key, if they pass
    /// [`select_parts`] and `check_part_checksums` (the parts assembled are those `checksum`
    /// was formed from), and `check` (when given) accepts the version at the key (judged
    /// atomically with the commit); `checksum` is kept in the object's metadata with the
    /// commit. Then removes the upload. A refusal changes nothing and keeps the upload (the
    /// client may complete it again).
    fn complete(
        &self,
        id: UploadId,
        parts: &[CompletePart],
        checksum: Option<&ObjectChecksum>,
        check: Option<VersionCheck<'_>>,
    ) -> impl Future<Output = Result<Completed, MultipartError>> + Send;

    /// Removes the uploads not touched (created, or a part recorded) for `older_than`;
    /// returns how many.
    fn sweep(&self, older_than: Duration) -> impl Future<Output = Result<u64, StoreError>> + Send;
}

/// Lower-case hex.
pub(crate) fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        out.push(char::from(DIGITS[usize::from(b >> 4)]));
        out.push(char::from(DIGITS[usize::from(b & 15)]));
    }
    out
}

/// Parses lower-case or upper-case hex of exactly `N` bytes.
pub(crate) fn unhex<const N: usize>(text: &str) -> Option<[u8; N]> {
    let text = text.as_bytes();
    if text.len() != 2 * N {
        return None;
    }
    let digit = |c: u8| match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        b'A'..=b'F' => Some(c - b'A' + 10),
        _ => None,
    };
    let mut out = [0u8; N];
    for (i, pair) in text.chunks_exact(2).enumerate() {
        out[i] = digit(pair[0])? << 4 | digit(pair[1])?;
    }
    Some(out)
}

#[cfg(test)]
mod in_place_tests;
#[cfg(test)]
mod tests;
