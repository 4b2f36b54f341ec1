//! The local filesystem backend: a directory tree under one root.
//!
//! Layout: a store path `a/b/c` is the file `ROOT/a/b/c`. Besides the files it stores, the
//! root holds only names starting with [`RESERVED_PREFIX`](crate::path::RESERVED_PREFIX):
//! - `.weir-lock` in the root: held with `flock` while a [`LocalStore`] is open, so that a
//!   second process cannot clean up the first one's uploads in progress or skew its quota;
//! - `.weir-staging/`, the staging area: `.weir-upload-<pid>-<n>.tmp`, an upload in
//!   progress (see [`Upload`]), and `.weir-intent-<pid>-<n>`, the intent record of a
//!   multi-file commit in progress (see `batch.rs` and `intent.rs`), and `resumable/`, the
//!   resumable uploads' data and records (see `resumable.rs`; start-up leaves that directory
//!   to [`Resumables::open`](crate::Resumables::open)). Uploads are staged here
//!   rather than next to their target, so that an upload that fails creates nothing in the
//!   tree, not even its directories: those are made at commit.
//!
//! # Resolution
//! No symbolic link below the root is ever followed, even one swapped in while a request is
//! being served. The root is held open as a directory descriptor ([`DirHandle`]) and every
//! operation is relative to a descriptor, never to a path: a directory is reached with
//! `openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS)` from the root in one system call (Linux
//! 5.6+), or else by opening one component at a time with `O_NOFOLLOW | O_DIRECTORY`; then the
//! file is opened, created, stat'ed, renamed or unlinked relative to that directory's
//! descriptor (`openat(O_NOFOLLOW)`, `fstatat(AT_SYMLINK_NOFOLLOW)`, `renameat`, `unlinkat`),
//! and the directory is fsynced through it. A directory replaced by a symlink after it was
//! opened is simply no longer on the path: the descriptor still names the directory it opened,
//! inside the root. Nothing is `stat`ed on the way down (a symlink makes the open fail), which
//! also saves the `lstat` per component that checking paths took.
//!
//! Where there is no `openat` (not Unix), `sys::dir_paths` does the same by path, checking each
//! name with `symlink_metadata` first: links are refused but the window between check and use
//! remains there.

use crate::error::StoreError;
use crate::fault::Faults;
use crate::intent;
use crate::list::{self, Entry, ListPage};
pub use crate::meta::FileMeta;
use crate::path::{StorePath, is_reserved};
use crate::quota::{ENTRY_COST, Usage};
use crate::readers::Readers;
use crate::stored_file::StoredFile;
use crate::sys::{self, DirHandle, EntryKind};
pub(crate) use crate::tree::{
    Missing, Resolved, STAGING_NAME, Shared, create_temp, is_absent, is_temp_name, parent_of, stat,
    walk,
};
use crate::upload::{Upload, UploadOptions};
use crate::writeback::{self, Flusher};
use std::fs;
use std::io;
use std::num::NonZeroUsize;
use std::path::Path;
use std::sync::{Arc, Mutex};

/// Name of the lock file in the root.
const LOCK_NAME: &str = ".weir-lock";

/// Options for [`LocalStore::open`].
#[derive(Clone, Debug)]
pub struct LocalOptions {
    /// The most bytes the files under the root may take, counted as the sum of file sizes plus
    /// [`ENTRY_COST`](crate::ENTRY_COST) per file and per directory (uploads in progress
    /// included, and files deleted or replaced while still read). `None`: no limit but the
    /// disk's.
    pub max_storage: Option<u64>,
    /// Start writing an upload back to disk every this many bytes written through
    /// [`Upload::write`] or [`Upload::write_owned`], on the store's writeback thread, so that
    /// commit's `fsync` has only the tail left to wait for (see the `writeback` module).
    /// Default 16 MiB; `None`: the whole file at commit. Linux only (no effect elsewhere).
    pub early_writeback: Option<u64>,
    /// Test hook: make one write or fsync fail with a chosen OS error (see
    /// [`Fault`](crate::Fault)). Only with the `fault-injection` feature.
    #[cfg(any(test, feature = "fault-injection"))]
    pub fault: Option<crate::fault::Fault>,
    /// Test hook: hold every hash job of this store at a gate until the test lets it through
    /// (see [`HashGate`](crate::HashGate)). Only with the `fault-injection` feature.
    #[cfg(any(test, feature = "fault-injection"))]
    pub hash_gate: Option<crate::fault::HashGate>,
    /// Test hook: hold every directory scan of [`LocalStore::list_page`] (and
    /// [`LocalStore::list`]) at this gate, each waiting with the value 0, until the test lets
    /// it through. Only with the `fault-injection` feature.
    #[cfg(any(test, feature = "fault-injection"))]
    pub list_gate: Option<crate::fault::HashGate>,
    /// Test hook: hold every resumable checkpoint of this store ([`CheckpointJob`](crate::CheckpointJob)) at this
    /// gate, each waiting with the offset it records, before its `fdatasync`, until the test
    /// lets it through. Only with the `fault-injection` feature.
    #[cfg(any(test, feature = "fault-injection"))]
    pub checkpoint_gate: Option<crate::fault::HashGate>,
}

impl Default for LocalOptions {
    fn default() -> Self {
        LocalOptions {
            max_storage: None,
            early_writeback: Some(writeback::DEFAULT_EVERY),
            #[cfg(any(test, feature = "fault-injection"))]
            fault: None,
            #[cfg(any(test, feature = "fault-injection"))]
            hash_gate: None,
            #[cfg(any(test, feature = "fault-injection"))]
            list_gate: None,
            #[cfg(any(test, feature = "fault-injection"))]
            checkpoint_gate: None,
        }
    }
}

/// A store on the local filesystem. Cheap to clone: clones share the root, the lock and the
/// usage counter, and can be used from any thread.
#[derive(Clone, Debug)]
pub struct LocalStore {
    shared: Arc<Shared>,
}

impl LocalStore {
    /// Opens (creating it if needed) the store rooted at `root`.
    ///
    /// Checks that the root is a writable directory that no other process holds, finishes the
    /// multi-file commits that a crash interrupted after their intent was recorded, removes
    /// the temporary files of uploads that a crash interrupted, and counts the space in use. It
    /// walks the whole tree to do so: start-up time grows with the number of files.
    ///
    /// Errors are [`StoreError::Root`], fit to print before exiting.
    pub fn open(root: impl AsRef<Path>, options: LocalOptions) -> Result<LocalStore, StoreError> {
        let given = root.as_ref();
        let root_err = |source| StoreError::Root {
            root: given.to_owned(),
            source,
        };
        let store_err = |e: StoreError| match e {
            StoreError::Io { source, .. } | StoreError::Root { source, .. } => root_err(source),
            other => root_err(io::Error::other(other.to_string())),
        };
        fs::create_dir_all(given).map_err(root_err)?;
        let root_path = fs::canonicalize(given).map_err(root_err)?;
        let root = DirHandle::open_root(&root_path).map_err(root_err)?;
        let lock = root.create_or_open(LOCK_NAME).map_err(root_err)?;
        sys::lock_exclusive(&lock).map_err(|e| {
            root_err(if e.kind() == io::ErrorKind::WouldBlock {
                io::Error::new(
                    e.kind(),
                    "in use by another process (lock held on .weir-lock)",
                )
            } else {
                e
            })
        })?;
        let staging = match walk(&root, [STAGING_NAME].into_iter(), Missing::Create) {
            Ok(Some(Resolved::Below(dir))) => dir,
            Ok(_) => return Err(root_err(io::ErrorKind::NotFound.into())),
            Err(e) => return Err(store_err(e)),
        };
        // Prove that files can be created where uploads will be created (a read-only mount
        // or a directory without write permission fails here, not at the first upload).
        let (probe, probe_file) = create_temp(&staging).map_err(store_err)?;
        drop(probe_file);
        staging.unlink(&probe).map_err(root_err)?;

        let staged = intent::recover(&root, &staging).map_err(store_err)?;
        let scan = scan(&root).map_err(root_err)?;
        #[cfg(any(test, feature = "fault-injection"))]
        let faults = Faults::new(options.fault, options.hash_gate)
            .with_list_gate(options.list_gate)
            .with_checkpoint_gate(options.checkpoint_gate);
        #[cfg(not(any(test, feature = "fault-injection")))]
        let faults = Faults::default();
        Ok(LocalStore {
            shared: Arc::new(Shared {
                root_path,
                root,
                staging,
                usage: Usage::new(scan.used, options.max_storage),
                readers: Readers::default(),
                commit_lock: Mutex::new(()),
                dir_syncs: Default::default(),
                list_cache: Default::default(),
                deleted: Default::default(),
                faults,
                flusher: Flusher::default(),
                early_writeback: options.early_writeback,
                removed_at_open: scan.removed + staged.removed,
                rolled_forward: staged.rolled_forward,
                #[cfg(test)]
                after_resolve: Default::default(),
                #[cfg(test)]
                force_walk: Default::default(),
                #[cfg(test)]
                crash_after_renames: Default::default(),
                _lock: lock,
            }),
        })
    }

    /// The canonical root directory.
    pub fn root(&self) -> &Path {
        &self.shared.root_path
    }

    /// Bytes in use: committed files plus uploads in progress, and [`ENTRY_COST`] per file and
    /// directory.
    pub fn usage(&self) -> u64 {
        self.shared.usage.used()
    }

    /// The configured `max_storage`.
    pub fn max_storage(&self) -> Option<u64> {
        self.shared.usage.limit()
    }

    #[cfg(test)]
    pub(crate) fn shared(&self) -> &Shared {
        &self.shared
    }

    pub(crate) fn shared_arc(&self) -> &Arc<Shared> {
        &self.shared
    }

    /// How many leftover temporary files [`LocalStore::open`] removed.
    pub fn removed_temporaries(&self) -> u64 {
        self.shared.removed_at_open
    }

    /// How many files [`LocalStore::open`] committed by finishing multi-file commits that a
    /// crash interrupted (see [`LocalStore::commit_all`]).
    pub fn recovered_files(&self) -> u64 {
        self.shared.rolled_forward
    }

    /// Starts an upload to `path`: checks that it could be stored there and creates a
    /// temporary file in the staging area. Nothing is visible at `path`, and no directory is
    /// created, until [`Upload::commit`].
    ///
    /// With `options.expected_len`, the whole length is checked against the quota now, so an
    /// upload that cannot fit fails before the client sends its body; what is reserved is a
    /// window ahead of the bytes received, extended as they arrive (`quota::reserved_end`).
    pub fn begin(&self, path: &StorePath, options: UploadOptions) -> Result<Upload, StoreError> {
        Upload::begin(self.shared.clone(), path, options)
    }

    /// Opens a stored file for reading (GET, HEAD). The file handle keeps reading the same
    /// bytes even if the path is replaced or deleted meanwhile, and the space those bytes take
    /// stays counted against the quota until it is dropped.
    pub fn open_file(&self, path: &StorePath) -> Result<(StoredFile, FileMeta), StoreError> {
        self.open_file_hinted(path)
            .map(|(file, meta, _)| (file, meta))
    }

    /// [`LocalStore::open_file`], with what the digest record says of the file's media type
    /// (`Some(false)`: none stored, no need to ask; `None`: unknown, read the attribute).
    pub(crate) fn open_file_hinted(
        &self,
        path: &StorePath,
    ) -> Result<(StoredFile, FileMeta, Option<bool>), StoreError> {
        let opened = match self.shared.beneath_root() {
            Some(root) => root.open_file_beneath(path.as_str()),
            None => None,
        };
        let file = match opened {
            Some(file) => file,
            None => {
                let dir = self.shared.resolve(parent_of(path))?;
                dir.get(&self.shared).open_read(path.file_name())
            }
        }
        .map_err(|e| {
            if sys::is_symlink_error(&e) {
                StoreError::SymlinkRefused
            } else if is_absent(&e) {
                StoreError::NotFound
            } else {
                StoreError::from_io("open file", e)
            }
        })?;
        let charge = |meta: &std::fs::Metadata| meta.len().saturating_add(ENTRY_COST);
        let (file, meta) =
            StoredFile::open(&self.shared, file, charge).map_err(|e| StoreError::Io {
                op: "stat file",
                source: e,
            })?;
        if meta.is_dir() {
            return Err(StoreError::IsDirectory);
        }
        if !meta.is_file() {
            return Err(StoreError::NotFound);
        }
        let record = sys::read_digest(&file, &meta);
        let modified = meta.modified().map_err(|e| StoreError::Io {
            op: "read modification time",
            source: e,
        })?;
        Ok((
            file,
            FileMeta {
                size: meta.len(),
                modified,
                sha256: record.sha256,
            },
            record.media_type,
        ))
    }

    /// Lists a whole directory (`None`: the root), sorted by name (byte order). Temporary
    /// files, reserved names, symbolic links, special files and names that are not valid store
    /// path segments are left out: a listing shows exactly what can be fetched. Memory and time
    /// grow with the directory: a service answering clients pages with
    /// [`LocalStore::list_page`] instead.
    pub fn list(&self, dir: Option<&StorePath>) -> Result<Vec<Entry>, StoreError> {
        list::page(&self.shared, dir, None, NonZeroUsize::MAX).map(|page| page.entries)
    }

    /// One page of a directory listing: the (at most) `limit` smallest names greater than
    /// `after` (byte order; `after` need not exist), with the same entries [`LocalStore::list`]
    /// shows. [`ListPage::next`] is the `after` of the next page, `None` on the last one.
    /// Memory is bounded whatever the size of the directory (O(`limit`), or a fixed window of
    /// names for a listing's page, kept for its next pages: `list.rs`); time is one pass over
    /// the directory plus a `stat` per entry of the page, or only the `stat`s when an earlier
    /// pass's names of the unchanged directory cover the page. Blocking: call it off async
    /// workers.
    pub fn list_page(
        &self,
        dir: Option<&StorePath>,
        after: Option<&str>,
        limit: NonZeroUsize,
    ) -> Result<ListPage, StoreError> {
        list::page(&self.shared, dir, after, limit)
    }

    /// Creates the directory `path` and any missing parents, durably (each new entry's parent
    /// is fsynced), each charged [`ENTRY_COST`] against the quota: `Ok(true)`. `Ok(false)` when
    /// it already is a directory; a file or a link on the way is refused
    /// ([`StoreError::NotADirectory`], [`StoreError::SymlinkRefused`]). Under the commit lock, so
    /// it never races a commit that needs the same name as a file.
    pub fn create_dir(&self, path: &StorePath) -> Result<bool, StoreError> {
        let _guard = self.shared.lock_commits();
        if self.shared.missing_dirs(path.as_str())? == 0 {
            return Ok(false);
        }
        self.shared.create_dirs(path.as_str())?;
        Ok(true)
    }

    /// The directory `path`'s modification time, `None` if there is no directory there (a
    /// file, a link, nothing).
    pub fn dir_modified(
        &self,
        path: &StorePath,
    ) -> Result<Option<std::time::SystemTime>, StoreError> {
        let parent = match self.shared.resolve(parent_of(path)) {
            Ok(parent) => parent,
            Err(StoreError::NotFound) => return Ok(None),
            Err(e) => return Err(e),
        };
        let stat = stat(parent.get(&self.shared), path.file_name())?;
        Ok(stat
            .filter(|s| s.kind == EntryKind::Dir)
            .map(|s| s.modified))
    }

    /// Deletes a stored file, durably (the directory is fsynced). Directories are not deleted
    /// ([`StoreError::IsDirectory`]); empty ones are left behind by design, since another
    /// upload may be about to use them.
    pub fn delete(&self, path: &StorePath) -> Result<(), StoreError> {
        self.delete_checked(path, None)
    }

    /// Deletes a stored file like [`LocalStore::delete`], only if `check` accepts the file
    /// there, checked atomically with the unlink (see `precondition.rs`); else
    /// [`StoreError::PreconditionFailed`] and nothing is deleted. `check` always sees a file
    /// (`Some`): a missing one is [`StoreError::NotFound`] first.
    pub fn delete_if(
        &self,
        path: &StorePath,
        mut check: impl FnMut(Option<&FileMeta>) -> bool,
    ) -> Result<(), StoreError> {
        self.delete_checked(path, Some(&mut check))
    }

    fn delete_checked(
        &self,
        path: &StorePath,
        check: Option<crate::precondition::Check<'_>>,
    ) -> Result<(), StoreError> {
        let resolved = self.shared.resolve(parent_of(path))?;
        let dir = resolved.get(&self.shared);
        let name = path.file_name();
        let releasable = {
            let _guard = self.shared.lock_commits();
            let meta = match stat(dir, name)? {
                None => return Err(StoreError::NotFound),
                Some(m) => match m.kind {
                    EntryKind::Symlink => return Err(StoreError::SymlinkRefused),
                    EntryKind::Dir => return Err(StoreError::IsDirectory),
                    EntryKind::Other => return Err(StoreError::NotFound),
                    EntryKind::File => {
                        // Relative to the directory the unlink below uses, under the lock.
                        crate::precondition::check(dir, name, Some(&m), check)?;
                        self.shared.deleted.record(Some(m.modified));
                        m
                    }
                },
            };
            // A reader still holding the file keeps its space counted (`readers.rs`).
            let charge = meta.size.saturating_add(ENTRY_COST);
            let unlink = || dir.unlink(name);
            let ((), releasable) = self
                .shared
                .readers
                .remove_name(meta.id, charge, unlink)
                .map_err(|e| match e.kind() {
                    io::ErrorKind::NotFound => StoreError::NotFound,
                    _ => StoreError::Io {
                        op: "delete file",
                        source: e,
                    },
                })?;
            releasable
        };
        self.shared.usage.release(releasable);
        dir.sync().map_err(|e| StoreError::Io {
            op: "sync directory",
            source: e,
        })
    }
}

struct Scan {
    used: u64,
    removed: u64,
}

/// Walks the tree once at open (the staging area aside, which `intent::recover` empties):
/// removes leftover temporary files of older versions, which kept them next to their target,
/// and adds up the sizes of the others. Symlinks are neither followed nor counted. Removals are
/// not fsynced: a temporary that reappears after another crash is removed at the next open.
fn scan(root: &DirHandle) -> io::Result<Scan> {
    let mut scan = Scan {
        used: 0,
        removed: 0,
    };
    let with_path = |e: io::Error, p: &str| io::Error::new(e.kind(), format!("{p}: {e}"));
    let as_io = |e: StoreError, p: &str| match e {
        StoreError::Io { source, .. } => with_path(source, p),
        other => io::Error::other(format!("{p}: {other}")),
    };
    // Directories still to list, by path: each is reopened from the root when its turn comes,
    // so that a wide tree does not hold a descriptor per directory waiting.
    let mut dirs = vec![String::new()];
    while let Some(path) = dirs.pop() {
        let handle = match walk(
            root,
            path.split('/').filter(|s| !s.is_empty()),
            Missing::NotFound,
        ) {
            Ok(Some(Resolved::Below(dir))) => Some(dir),
            Ok(_) => None,
            // Replaced by a link or removed since its parent was listed: not counted.
            Err(StoreError::SymlinkRefused | StoreError::NotFound) => continue,
            Err(e) => return Err(as_io(e, &path)),
        };
        let dir = handle.as_ref().unwrap_or(root);
        for name in dir.names().map_err(|e| with_path(e, &path))? {
            // Names that are not UTF-8 are none the store made or can serve: not counted.
            let Ok(name) = name.into_string() else {
                continue;
            };
            let child = if path.is_empty() {
                name.clone()
            } else {
                format!("{path}/{name}")
            };
            let Some(meta) = dir.stat(&name).map_err(|e| with_path(e, &child))? else {
                continue;
            };
            match meta.kind {
                EntryKind::Dir if path.is_empty() && name == STAGING_NAME => {}
                EntryKind::Dir => {
                    scan.used = scan.used.saturating_add(ENTRY_COST);
                    dirs.push(child);
                }
                EntryKind::File if is_temp_name(&name) => {
                    dir.unlink(&name).map_err(|e| with_path(e, &child))?;
                    scan.removed += 1;
                }
                EntryKind::File if !is_reserved(&name) => {
                    scan.used = scan
                        .used
                        .saturating_add(meta.size.saturating_add(ENTRY_COST));
                }
                _ => {}
            }
        }
    }
    Ok(scan)
}

mod copy;
mod delete_dir;
mod props;
mod rename_dir;
#[cfg(test)]
mod tests;
