//! Upload storage for weir: uploads that are stored whole or not at all.
//!
//! The interface is five operations, narrow on purpose so that an object-store backend and
//! resumable uploads can join later without a rewrite:
//!
//! | operation | local backend |
//! | --- | --- |
//! | [`LocalStore::begin`] → [`Upload`] | temporary file next to the target |
//! | [`Upload::write`] (or [`Upload::file_mut`] + [`Upload::record_external_write`]) | append |
//! | [`Upload::write_owned`] → [`Upload::hash_job`] → [`HashJob::run`] (any thread) → [`Upload::attach`] | append now, hash on another thread |
//! | [`Upload::commit`] \| [`Upload::abort`] (or drop) | fsync, rename, fsync dir \| unlink |
//! | [`LocalStore::open_file`] | `open(O_NOFOLLOW)` + metadata and stored digest |
//! | [`LocalStore::list`], [`LocalStore::delete`] | `readdir`, `unlink` + fsync dir |
//!
//! The code is synchronous std code, called from the connection's task: plain `write(2)` into
//! the page cache was measured twice as fast as going through `tokio::fs`. Only `commit`'s
//! fsyncs block for long, once per upload; to shorten them, a large upload's bytes are written
//! back while it is still being received, by one writeback thread per store
//! ([`LocalOptions::early_writeback`]).
//!
//! # Guarantees
//! - **Atomicity.** An upload is invisible until commit renames its temporary file over the
//!   target, in the same directory (`rename(2)` is atomic within a filesystem). A reader opens
//!   the old file or the new one, never a mix, and keeps reading the version it opened.
//!   Concurrent uploads to one path are each atomic; the last to commit wins.
//! - **Durability.** When [`Upload::commit`] returns `Ok`, the file's data (`fsync` of the
//!   file, before the rename) and its name (`fsync` of the directory, after) are on disk; new
//!   directories are made durable when created. [`LocalStore::delete`] fsyncs the directory too.
//! - **Crash.** A crash (or `SIGKILL`) at any point leaves the old file or the new one at the
//!   target, plus possibly a temporary file `.weir-upload-*.tmp`, which
//!   [`LocalStore::open`] removes at the next start.
//! - **Integrity.** SHA-256 is computed as bytes are written and returned by commit — on the
//!   writer's thread, or on another one through a [`HashJob`] that owns the very buffer the
//!   write read (the hash of one buffer then overlaps the receiving of the next; a job lost or
//!   misused makes the commit fail, never the digest wrong: see [`HashJob`]); an
//!   expected `Content-Digest` (SHA-256 and/or SHA-512) is verified before the rename, and a
//!   mismatch stores nothing. The SHA-256 is kept with the file (an xattr on Linux) and
//!   reported by [`LocalStore::open_file`] while the file is unchanged.
//! - **Space.** A full disk (`ENOSPC`, `EDQUOT`) is [`StoreError::NoSpace`]; the optional
//!   `max_storage` quota is [`StoreError::QuotaExceeded`]. Either way the upload is discarded
//!   and existing files are untouched.
//! - **Confinement.** Paths are [`StorePath`]s, validated when parsed; resolution refuses
//!   symbolic links anywhere under the root ([`StoreError::SymlinkRefused`]).
//!
//! # Invariants
//! - Every name the store creates for itself starts with `.weir-`; no [`StorePath`] can, so
//!   they are never addressed, listed or served.
//! - A temporary file exists only while its [`Upload`] is open: commit renames it, every
//!   error, abort and drop unlink it; start-up removes those a crash left.
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

mod digest;
mod error;
mod fault;
mod hash_job;
mod local;
mod path;
mod quota;
mod sys;
mod upload;
mod writeback;

pub use digest::{ContentDigest, DigestAlgorithm, DigestParseError};
pub use error::StoreError;
#[cfg(any(test, feature = "fault-injection"))]
pub use fault::{Fault, FaultOp, HashGate};
pub use hash_job::{HashJob, Hashed, Written};
pub use local::{Entry, FileMeta, LocalOptions, LocalStore};
pub use path::{
    MAX_PATH_LEN, MAX_SEGMENT_LEN, PathError, RESERVED_PREFIX, StorePath, is_invisible_or_bidi,
    validate_name,
};
pub use upload::{Committed, Upload, UploadOptions};

#[cfg(test)]
mod testutil;
