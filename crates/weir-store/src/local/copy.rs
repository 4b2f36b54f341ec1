//! Server-side copy and rename of a stored file ([`LocalStore::copy`], [`LocalStore::rename`]),
//! for front ends that move files without their bytes passing through the server (WebDAV's
//! `COPY`/`MOVE`, S3's `CopyObject`).
//!
//! - **rename** is `renameat(2)` under the store's commit lock: atomic (the file is at one name
//!   or the other, never both or neither, even across a crash), nothing copied, the file keeps
//!   its identity, modification time and stored digest. Never a copy and a delete.
//! - **copy** is an upload whose bytes come from the source inside the kernel: a reflink
//!   (`FICLONE`, btrfs and XFS: nothing copied) where the filesystem shares blocks, else
//!   `copy_file_range`, else a buffer (`sys::copy_file`). It commits as any upload does
//!   (length checked, fsync, rename into place: all or nothing, the quota charged), and a
//!   source with a stored SHA-256 has its copy verified against it before the commit (a read
//!   of the copy), so the copy carries the same digest and never differs silently. Its media
//!   type, S3 metadata (`object_meta.rs`) and dead properties (`props.rs`) go with it, or
//!   the caller gives the copy a media type and S3 metadata of its own ([`CopyMeta`]).
//!
//! Both take the caller's check of the version at the target, judged under the commit lock
//! atomically with the rename (`precondition.rs`), as a commit's.

use super::{LocalStore, parent_of, stat};
use crate::precondition::{self, Check};
use crate::quota::ENTRY_COST;
use crate::sys::{self, EntryKind};
use crate::upload::target_stat;
use crate::{
    Committed, ContentDigest, CopyMeta, FileMeta, MediaType, ObjectMeta, StoreError, StorePath,
    UploadOptions,
};

impl LocalStore {
    /// Copies the file at `from` to `to` (see the module doc): [`StoreError::NotFound`] if there
    /// is none, [`StoreError::IsDirectory`] for a directory; the target as for an upload (a
    /// directory there, a file on the way, the quota). Its media type goes with it.
    pub fn copy(&self, from: &StorePath, to: &StorePath) -> Result<Committed, StoreError> {
        self.copy_checked(from, to, None, CopyMeta::Source)
    }

    /// [`LocalStore::copy`], only if `check` accepts the version now at `to` (`None`: no file
    /// there), judged under the commit lock right before the copy's rename; else
    /// [`StoreError::PreconditionFailed`] and nothing changes.
    pub fn copy_if(
        &self,
        from: &StorePath,
        to: &StorePath,
        mut check: impl FnMut(Option<&FileMeta>) -> bool,
    ) -> Result<Committed, StoreError> {
        self.copy_checked(from, to, Some(&mut check), CopyMeta::Source)
    }

    /// [`LocalStore::copy`] or [`LocalStore::copy_if`], the copy given `meta`: the source's
    /// media type and S3 metadata, or the caller's (S3's `x-amz-metadata-directive: REPLACE`).
    pub(crate) fn copy_checked(
        &self,
        from: &StorePath,
        to: &StorePath,
        check: Option<Check<'_>>,
        meta_given: CopyMeta<'_>,
    ) -> Result<Committed, StoreError> {
        let (source, meta) = self.open_file(from)?;
        let (media_type, object_meta) = match meta_given {
            // Read from the open source, the version copied. A source whose metadata cannot
            // be read is not copied without it.
            CopyMeta::Source => (
                MediaType::read_from(&source),
                match sys::read_object_meta(&source) {
                    Ok(stored) => stored.and_then(|s| ObjectMeta::decode(&s)),
                    Err(e) => return Err(StoreError::from_io("read metadata", e)),
                },
            ),
            CopyMeta::Replace {
                media_type,
                object_meta,
            } => (media_type.cloned(), Some(object_meta.clone())),
        };
        let options = UploadOptions {
            hash: false,
            // The copy is read back and checked against the source's digest, which it then
            // keeps; without one there is nothing to check it against.
            expected_digest: meta.sha256.map(|sha256| ContentDigest {
                sha256: Some(sha256),
                sha512: None,
            }),
            expected_len: Some(meta.size),
            object_meta,
        };
        let mut upload = self.begin(to, options)?;
        if let Some(media_type) = &media_type {
            upload.set_media_type(media_type);
        }
        // Dead properties go with the copy, as with a rename (on the temporary file, which
        // becomes the copy). Best effort: the copy is the bytes; a filesystem that keeps no
        // xattrs kept none on the source either.
        if let Ok(Some(props)) = sys::read_props(&*source) {
            let _ = sys::write_props(&*upload.file_mut(), Some(&props));
        }
        // The whole length against the quota before any byte is copied.
        upload.reserve_next(meta.size)?;
        let copied = sys::copy_file(&source, upload.file_mut(), meta.size);
        let (_, n) = copied.map_err(|e| StoreError::from_io("copy file", e))?;
        upload.record_external_write(n)?;
        // A source that shrank meanwhile leaves the copy short: its commit refuses it.
        match check {
            Some(check) => upload.commit_if(check),
            None => upload.commit(),
        }
    }

    /// Renames the file at `from` to `to` (see the module doc), creating `to`'s missing
    /// directories (charged as any); a file at `to` is replaced. [`StoreError::NotFound`] if
    /// there is no file at `from`, [`StoreError::IsDirectory`] for a directory (at either),
    /// [`StoreError::SymlinkRefused`] for a link. Renaming a file to its own path changes
    /// nothing. The answer describes the file at `to`, `replaced` when another was there.
    pub fn rename(&self, from: &StorePath, to: &StorePath) -> Result<Committed, StoreError> {
        self.rename_checked(from, to, None)
    }

    /// [`LocalStore::rename`], only if `check` accepts the version now at `to` (`None`: no
    /// file there), judged under the commit lock atomically with the rename; else
    /// [`StoreError::PreconditionFailed`] and nothing changes.
    pub fn rename_if(
        &self,
        from: &StorePath,
        to: &StorePath,
        mut check: impl FnMut(Option<&FileMeta>) -> bool,
    ) -> Result<Committed, StoreError> {
        self.rename_checked(from, to, Some(&mut check))
    }

    fn rename_checked(
        &self,
        from: &StorePath,
        to: &StorePath,
        check: Option<Check<'_>>,
    ) -> Result<Committed, StoreError> {
        let shared = &self.shared;
        let from_resolved = shared.resolve(parent_of(from))?;
        let from_dir = from_resolved.get(shared);
        let from_name = from.file_name();
        // Resolved outside the lock; only creating directories needs it (see `Shared`).
        let to_parent = parent_of(to);
        let found = match shared.resolve(to_parent) {
            Ok(dir) => Some(dir),
            Err(StoreError::NotFound) => None,
            Err(e) => return Err(e),
        };
        let (to_resolved, committed, freed) = {
            let _guard = shared.lock_commits();
            let source = match stat(from_dir, from_name)? {
                None => return Err(StoreError::NotFound),
                Some(m) => match m.kind {
                    EntryKind::File => m,
                    EntryKind::Dir => return Err(StoreError::IsDirectory),
                    EntryKind::Symlink => return Err(StoreError::SymlinkRefused),
                    EntryKind::Other => return Err(StoreError::NotFound),
                },
            };
            // The version the answer describes: read through the file, under the lock, so it
            // is the one renamed.
            let file = from_dir
                .open_read(from_name)
                .map_err(|e| StoreError::from_io("open file", e))?;
            let stored = precondition::file_meta(&file)?;
            drop(file);
            let to_resolved = match found {
                Some(dir) => dir,
                None => shared.create_dirs(to_parent)?,
            };
            let to_dir = to_resolved.get(shared);
            let previous = target_stat(to_dir, to.file_name())?;
            precondition::check(to_dir, to.file_name(), previous.as_ref(), check)?;
            if from.as_str() == to.as_str() {
                let same = Committed {
                    size: stored.size,
                    sha256: stored.sha256,
                    replaced: true,
                    stored,
                };
                return Ok(same);
            }
            // The target's file (if any) loses its name; readers holding it keep its space.
            let (replaced, charge, id) = match previous {
                Some(m) if m.kind == EntryKind::File => {
                    (true, m.size.saturating_add(ENTRY_COST), m.id)
                }
                Some(_) => (true, 0, None),
                None => (false, 0, None),
            };
            if let Some(m) = previous.filter(|m| m.kind == EntryKind::File) {
                shared.deleted.record(Some(m.modified));
            }
            let rename = || from_dir.rename(from_name, to_dir, to.file_name());
            let ((), freed) = shared
                .readers
                .remove_name(id, charge, rename)
                .map_err(|e| StoreError::from_io("rename file", e))?;
            let committed = Committed {
                size: source.size,
                sha256: stored.sha256,
                replaced,
                stored,
            };
            (to_resolved, committed, freed)
        };
        shared.usage.release(freed);
        // Both directories' entries made durable: the new name, then the old one's removal.
        let sync = |dir: &sys::DirHandle| {
            dir.sync()
                .map_err(|e| StoreError::from_io("sync directory", e))
        };
        sync(to_resolved.get(shared))?;
        sync(from_resolved.get(shared))?;
        Ok(committed)
    }
}

#[cfg(test)]
mod tests;
