//! Everything that can go wrong in the store.
//!
//! The variants are public and are the store's whole error vocabulary: the service matches on
//! them to pick a status code (suggested for each variant below). No HTTP type appears here, so
//! that the store can serve other front ends and be tested without one.
//!
//! I/O errors that mean "the disk is full" (`ENOSPC`, `EDQUOT`, `EFBIG`) never come out as
//! [`StoreError::Io`]: they are [`StoreError::NoSpace`], so that a full disk is a 507 the client
//! can understand rather than a 500.

use crate::digest::DigestAlgorithm;
use crate::path::PathError;
use std::io;
use std::path::PathBuf;

/// An error from the store.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// The path is not a valid store path (suggested status: 400).
    #[error("invalid path: {0}")]
    InvalidPath(#[from] PathError),

    /// Nothing is stored at this path, or a directory on the way is missing or is a file
    /// (404).
    #[error("not found")]
    NotFound,

    /// The path names a directory where a file is needed: reading it, uploading over it,
    /// deleting it (409, or 400).
    #[error("is a directory")]
    IsDirectory,

    /// Two uploads committed together ([`LocalStore::commit_all`](crate::LocalStore::commit_all))
    /// name the same path; none was stored (409).
    #[error("{path} is named twice")]
    DuplicatePath {
        /// The path named twice.
        path: String,
    },

    /// A directory to delete is not empty; nothing was deleted (409).
    #[error("directory not empty")]
    DirectoryNotEmpty,

    /// A directory is needed but a file is in the way: uploading `a/b` when `a` is a file, or
    /// listing a file (409).
    #[error("not a directory")]
    NotADirectory,

    /// The path goes through a symbolic link, or names one. The store never follows symbolic
    /// links, so that nothing outside the root can be read or written (403).
    #[error("symbolic link refused")]
    SymlinkRefused,

    /// The body does not match the digest the client announced; nothing was stored (400).
    #[error("body does not match its {algorithm} digest")]
    DigestMismatch {
        /// The first algorithm that did not match.
        algorithm: DigestAlgorithm,
    },

    /// A digest given after the body (a trailer) names an algorithm the upload did not compute
    /// while its bytes went by, and the store cannot read them back to compute it (`S3Store`
    /// keeps no copy of the bytes it sent). Nothing was stored (400: send that digest before
    /// the body, or another algorithm).
    #[error(
        "the body's {algorithm} digest was not computed while it was received, and this store \
         cannot read the bytes back to compute it"
    )]
    DigestUnavailable {
        /// The algorithm that cannot be verified.
        algorithm: DigestAlgorithm,
    },

    /// The body is not as long as announced at `begin` (`expected_len`): more bytes than
    /// announced were written, or fewer at commit. Nothing was stored (400).
    #[error("body length {actual} differs from the announced {expected}")]
    LengthMismatch {
        /// The announced length.
        expected: u64,
        /// The bytes written (at least this many, when the error is raised by a write).
        actual: u64,
    },

    /// The filesystem is full (`ENOSPC`), a disk quota is exhausted (`EDQUOT`), or the file is
    /// too large for the filesystem (`EFBIG`). The upload was discarded; existing files are
    /// untouched (507).
    #[error("no space left on the storage device")]
    NoSpace,

    /// Storing this would exceed the store's `max_storage`. The upload was discarded (507).
    #[error("storage quota exceeded: {used} of {limit} bytes used, {requested} more requested")]
    QuotaExceeded {
        /// The configured limit in bytes.
        limit: u64,
        /// Bytes in use (committed files and uploads in progress) when the request was made.
        used: u64,
        /// Bytes that did not fit.
        requested: u64,
    },

    /// The caller's check of the version at the target refused the commit or the delete
    /// ([`Upload::commit_if`](crate::Upload::commit_if),
    /// [`LocalStore::delete_if`](crate::LocalStore::delete_if)); nothing was stored or deleted
    /// (412).
    #[error("precondition failed: the target is not the version the request requires")]
    PreconditionFailed,

    /// An earlier error already discarded this upload; begin a new one (500: the caller
    /// should have stopped at the first error).
    #[error("upload already discarded after an earlier error")]
    Discarded,

    /// Bytes written with [`Upload::write_owned`](crate::Upload::write_owned) were not all
    /// hashed, in file order, before an inline write or the commit: a
    /// [`Written`](crate::Written) was dropped, a [`HashJob`](crate::HashJob) was not run and
    /// attached back, or one that belongs to another upload was attached. The digest could not
    /// be vouched for, so the upload was discarded (500: a bug in the caller).
    #[error("upload bytes were not hashed in order (a hash job was lost or misused)")]
    HashOutOfOrder,

    /// The root directory cannot be used: it cannot be created, is not a directory, is not
    /// writable, or another process holds it (fatal at startup).
    #[error("storage root {}: {source}", root.display())]
    Root {
        /// The root as given.
        root: PathBuf,
        /// What went wrong.
        source: io::Error,
    },

    /// The object store (S3) failed or could not be reached (`weir serve`: 502).
    #[error("object store: {op}: {message}")]
    Backend {
        /// What the store was asked, e.g. `"upload part"`.
        op: &'static str,
        /// The store's answer (status and error code) or the transport's error.
        message: String,
    },

    /// Any other I/O error (500).
    #[error("{op}: {source}")]
    Io {
        /// What the store was doing, e.g. `"rename into place"`.
        op: &'static str,
        /// The error from the OS.
        source: io::Error,
    },
}

impl StoreError {
    /// Classifies an I/O error from a write, an fsync, a file or directory creation: "disk full"
    /// errors become [`StoreError::NoSpace`], everything else [`StoreError::Io`] with `op`.
    pub fn from_io(op: &'static str, source: io::Error) -> StoreError {
        match source.kind() {
            io::ErrorKind::StorageFull
            | io::ErrorKind::QuotaExceeded
            | io::ErrorKind::FileTooLarge => StoreError::NoSpace,
            _ => StoreError::Io { op, source },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn disk_full_errors_are_no_space() {
        for kind in [
            io::ErrorKind::StorageFull,
            io::ErrorKind::QuotaExceeded,
            io::ErrorKind::FileTooLarge,
        ] {
            assert!(matches!(
                StoreError::from_io("write", kind.into()),
                StoreError::NoSpace
            ));
        }
        let other = StoreError::from_io("write", io::ErrorKind::PermissionDenied.into());
        assert!(matches!(other, StoreError::Io { op: "write", .. }));
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn raw_errnos_map_as_expected() {
        use rustix::io::Errno;
        for errno in [Errno::NOSPC, Errno::DQUOT, Errno::FBIG] {
            let err = io::Error::from_raw_os_error(errno.raw_os_error());
            assert!(
                matches!(StoreError::from_io("write", err), StoreError::NoSpace),
                "{errno}"
            );
        }
        let err = io::Error::from_raw_os_error(Errno::IO.raw_os_error());
        assert!(matches!(
            StoreError::from_io("fsync", err),
            StoreError::Io { .. }
        ));
    }

    #[test]
    fn messages_are_readable() {
        let e = StoreError::Root {
            root: "/srv/x".into(),
            source: io::ErrorKind::NotFound.into(),
        };
        assert!(e.to_string().starts_with("storage root /srv/x: "), "{e}");
        let e = StoreError::from(PathError::DotSegment);
        assert_eq!(e.to_string(), "invalid path: '.' or '..' path segment");
    }
}
