//! Upload storage for weir: uploads that are stored whole or not at all.
//!
//! The interface is five operations, narrow on purpose so that an object-store backend and
//! resumable uploads can join later without a rewrite:
//!
//! | operation | local backend |
//! | --- | --- |
//! | [`LocalStore::begin`] → [`Upload`] | temporary file in the staging area (`.weir-staging/`) |
//! | [`Upload::write`] (or [`Upload::file_mut`] + [`Upload::record_external_write`]) | append |
//! | [`Upload::write_owned`] → [`Upload::hash_job`] → [`HashJob::run`] (any thread) → [`Upload::attach`] | append now, hash on another thread |
//! | [`Upload::park`] | close the temporary's descriptor until the next write or the commit |
//! | [`Upload::commit`] \| [`Upload::abort`] (or drop) | fsync, make directories, `renameat` into place, fsync dir \| unlink |
//! | [`LocalStore::commit_all`] | several uploads all or none: an intent record, then the renames |
//! | [`Upload::commit_if`], [`LocalStore::commit_all_if`], [`LocalStore::delete_if`] | the same, if a check of the version at each target holds under the commit lock |
//! | [`LocalStore::open_file`] → [`StoredFile`] | `openat2` beneath the root + metadata and stored digest |
//! | [`LocalStore::list_page`] (or [`LocalStore::list`]), [`LocalStore::delete`] | one streaming `readdir` pass keeping a page + `fstatat` of its entries, `unlinkat` + fsync dir |
//! | [`LocalStore::rename`], [`LocalStore::copy`] (and `_if`) | `renameat` under the commit lock; an upload filled by a reflink or `copy_file_range` |
//!
//! Every system call on the tree is relative to a directory descriptor, reached from the root's
//! without following any symbolic link (see `local.rs`).
//!
//! The storage interface ([`Store`], `store.rs`) is what a service needs from any store (the
//! local store's own powers, `splice` into a file and `sendfile` out of one, as capabilities
//! of its types), the local one by delegation and, with the feature `s3`, `S3Store` (an S3-compatible bucket:
//! multipart uploads with bounded memory, conditional commits, ranged reads; `s3.rs`).
//! Resumable uploads have theirs, [`ResumableStore`] (`resumable_store.rs`): the local
//! [`Resumables`] and, with `s3`, `S3Resumables`. The
//! guarantees below are the local store's; `s3.rs` says which hold in a bucket and how.
//!
//! The code is synchronous std code, called from the connection's task: plain `write(2)` into
//! the page cache returns quickly, and going through `tokio::fs` (a hop to the blocking pool per
//! call) was measured much slower (docs/archive/BENCHMARKS-history.md, "Figures once quoted in
//! source comments"). Only `commit`'s fsyncs block for long, once per upload; to shorten them, a
//! large upload's bytes are written back while it is still being received, by one writeback thread
//! per store ([`LocalOptions::early_writeback`]).
//!
//! # Guarantees
//! - **Atomicity.** An upload is invisible until commit renames its temporary file from the
//!   staging area over the target (`rename(2)` is atomic within a filesystem: the root must be
//!   one filesystem, a mount point inside it makes commits below it fail with `EXDEV`). A
//!   reader opens the old file or the new one, never a mix, and keeps reading the version it
//!   opened. Concurrent uploads to one path are each atomic; the last to commit wins. An upload
//!   that fails leaves nothing in the tree, not even a directory: directories are made at
//!   commit. [`LocalStore::commit_all`] extends this to several files: all or none, checked
//!   against each other and the tree before anything is made.
//! - **Durability.** When [`Upload::commit`] returns `Ok`, the file's data (`fsync` of the
//!   file, before the rename) and its name (an `fsync` of the directory begun after the
//!   rename, which commits landing in one directory at once share: `dir_sync.rs`) are on
//!   disk; new directories are made durable when created. [`LocalStore::delete`] fsyncs the directory too.
//! - **Crash.** A crash (or `SIGKILL`) at any point leaves the old file or the new one at the
//!   target, plus possibly temporaries in `.weir-staging/`, which [`LocalStore::open`] removes
//!   at the next start. A crash during [`LocalStore::commit_all`] after its intent record was
//!   made durable is finished by the next [`LocalStore::open`]: all the files, never some.
//! - **Integrity.** SHA-256 is computed as bytes are written and returned by commit — on the
//!   writer's thread, or on another one through a [`HashJob`] that owns the very buffer the
//!   write read (the hash of one buffer then overlaps the receiving of the next; a job lost or
//!   misused makes the commit fail, never the digest wrong: see [`HashJob`]); an
//!   expected `Content-Digest` (SHA-256 and/or SHA-512) is verified before the rename, and a
//!   mismatch stores nothing. The SHA-256 is kept with the file (an xattr on Linux) and
//!   reported by [`LocalStore::open_file`] while the file is unchanged.
//! - **Space.** A full disk (`ENOSPC`, `EDQUOT`) is [`StoreError::NoSpace`]; the optional
//!   `max_storage` quota is [`StoreError::QuotaExceeded`]. Either way the upload is discarded
//!   and existing files are untouched. The quota counts bytes plus [`ENTRY_COST`] per file and
//!   directory; it is never exceeded by what is on disk: an upload's space is given back only
//!   once its temporary is unlinked and closed, and a deleted or replaced file still read
//!   through a [`StoredFile`] stays counted until the last reader drops it.
//! - **Confinement.** Paths are [`StorePath`]s, validated when parsed. No symbolic link under
//!   the root is ever followed ([`StoreError::SymlinkRefused`]), not even one swapped in for a
//!   directory while a request goes through it: resolution and every operation are relative to
//!   directory descriptors (`openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS)`, else an
//!   `O_NOFOLLOW` walk; by path with a check on platforms without `openat`).
//!
//! # Invariants
//! - Every name the store creates for itself starts with `.weir-`; no [`StorePath`] can, so
//!   they are never addressed, listed or served.
//! - A temporary file exists only while its [`Upload`] is open: commit renames it, every
//!   error, abort and drop unlink it; start-up removes those a crash left (after finishing the
//!   intent records that name them). The one exception is a resumable upload's data
//!   (`.weir-staging/resumable/`, see [`Resumables`]): it outlives its requests by design and
//!   is removed by cancellation, expiry, or its commit.
//! - An upload holds at most one descriptor (none while parked); a resolution holds one
//!   directory descriptor at a time beyond the root's and the staging area's, closed when the
//!   operation ends. So open upload files number at most the uploads receiving bytes.
//! - One process per root: [`LocalStore::open`] takes a lock on the root (Linux), so cleanup
//!   never removes another live process's uploads and the usage count stays exact.
//!
//! # Example
//! ```
//! use weir_store::{LocalOptions, LocalStore, StorePath, UploadOptions};
//!
//! # fn main() -> Result<(), weir_store::StoreError> {
//! # let dir = tempfile::tempdir().unwrap();
//! let store = LocalStore::open(dir.path(), LocalOptions::default())?;
//! let path = StorePath::parse("docs/hello.txt")?;
//! let mut upload = store.begin(&path, UploadOptions::default())?;
//! upload.write(b"hello ")?;
//! upload.write(b"world")?;
//! let done = upload.commit()?;
//! assert_eq!((done.size, done.replaced), (11, false));
//!
//! let (_file, meta) = store.open_file(&path)?;
//! assert_eq!(meta.size, 11);
//! # Ok(()) }
//! ```
#![forbid(unsafe_code)]

mod batch;
mod digest;
mod dir_sync;
mod error;
mod fault;
mod hash_job;
mod intent;
mod list;
mod local;
mod media_type;
mod meta;
mod multipart;
mod object_meta;
mod path;
mod precondition;
mod quota;
mod read_back;
mod readers;
mod resumable;
mod resumable_store;
#[cfg(feature = "s3")]
mod s3;
mod sha256_state;
mod store;
mod stored_file;
mod sys;
mod tree;
mod upload;
mod version_date;
mod writeback;

pub use digest::{ContentDigest, DigestAlgorithm, DigestParseError};
pub use error::StoreError;
#[cfg(any(test, feature = "fault-injection"))]
pub use fault::{Fault, FaultOp, HashGate};
pub use hash_job::{HashJob, HashMark, Hashed, Written};
pub use list::{Entry, ListPage};
pub use local::{LocalOptions, LocalStore};
pub use media_type::MediaType;
pub use meta::FileMeta;
pub use multipart::{
    CompletePart, Completed as MultipartCompleted, LocalMultiparts, MAX_PART_NUMBER, MAX_PART_SIZE,
    MIN_PART_SIZE, MultipartError, MultipartMeta, MultipartStore, MultipartUpload, PartRecord,
    PartSeal, PartTag, PartTagHasher, PartsPage, UploadsPage, check_part_number, select_parts,
};
pub use object_meta::{
    CHECKSUM_FIELD, CopyMeta, KEPT_FIELDS, MAX_PART_CHECKSUMS, MAX_PARTS_FIELD, MAX_USER_META,
    ObjectChecksum, ObjectMeta, ObjectMetaError, PARTS_FIELD, PartLookup,
};
pub use path::{
    MAX_PATH_LEN, MAX_SEGMENT_LEN, PathError, RESERVED_PREFIX, StorePath, is_invisible_or_bidi,
    is_separator_lookalike, validate_name,
};
pub use quota::ENTRY_COST;
pub use resumable::{
    AppendEnd, Appending, CHECKPOINT_BYTES, CheckpointJob, ResumableError, ResumableState,
    Resumables, Swept, UploadId,
};
#[cfg(feature = "s3")]
pub use resumable_store::S3ResumableAppend;
pub use resumable_store::{
    LocalAppend, ResumableAppend, ResumableCreation, ResumableEnd, ResumableStore, SETTLE_WAIT,
    UploadState, off_the_runtime,
};
#[cfg(feature = "s3")]
pub use s3::{
    S3Append, S3AppendEnd, S3Config, S3Creation, S3Multiparts, S3ResumableOptions, S3Resumables,
    S3Store, S3Upload, S3UploadState,
};
pub use sha256_state::ResumableSha256;
pub use store::MAX_PROPS;
#[cfg(feature = "s3")]
pub use store::SocketBody;
pub use store::{
    CommitAllError, LocalObject, LocalReader, LocalUpload, Store, StoreObject, StoreReader,
    StoreUpload, VersionCheck,
};
pub use stored_file::StoredFile;
pub use upload::{Committed, Upload, UploadOptions};

#[cfg(test)]
mod testutil;
