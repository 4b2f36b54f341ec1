//! The local store's tree as every part of it reaches it: what a store and its uploads in
//! progress share ([`Shared`]: the root and staging area held open, the usage, the readers,
//! the commit lock), and resolution relative to the root's descriptor (see "Resolution" in
//! `local.rs`): `resolve`, `walk`, the directories a path misses and their creation, names in
//! the staging area. Below `LocalStore` (`local.rs`), uploads, listings, intents and
//! preconditions, which all import it; it imports none of them.

use crate::error::StoreError;
use crate::fault::Faults;
use crate::path::StorePath;
use crate::quota::{ENTRY_COST, Usage};
use crate::readers::Readers;
use crate::sys::{self, DirHandle, EntryKind, EntryStat};
use crate::writeback::Flusher;
use std::fs::File;
use std::io;
use std::path::PathBuf;
use std::sync::{Mutex, MutexGuard};

/// Name of the staging area in the root.
pub(crate) const STAGING_NAME: &str = ".weir-staging";
/// Temporary upload files are named `TEMP_PREFIX` + unique part + `TEMP_SUFFIX`.
pub(crate) const TEMP_PREFIX: &str = ".weir-upload-";
pub(crate) const TEMP_SUFFIX: &str = ".tmp";

/// What a store and its uploads in progress share.
#[derive(Debug)]
pub(crate) struct Shared {
    /// The root as given to `open`, canonicalized: for `LocalStore::root` and messages only,
    /// never to reach a file.
    pub(crate) root_path: PathBuf,
    /// The root, held open: every lookup starts here.
    pub(crate) root: DirHandle,
    /// The staging area, held open: temporaries and intent records live here.
    pub(crate) staging: DirHandle,
    pub(crate) usage: Usage,
    /// Files open for reading, whose space outlives their name (see `readers.rs`).
    pub(crate) readers: Readers,
    /// Serializes "look at the target, then rename over it or unlink it", and the creation of
    /// directories, so that `replaced` and the usage count are exact when uploads and deletes
    /// of one path race, and a multi-file commit's checks still hold when it renames. Held for
    /// the `fstatat` and the `renameat` or `unlinkat` of a single file (and the `mkdirat`s
    /// its commit needs); a multi-file commit holds it across its intent record's fsync.
    pub(crate) commit_lock: Mutex<()>,
    /// The sorted names of the last directories scanned, for the next pages of their
    /// listings (`list/cache.rs`).
    pub(crate) list_cache: crate::list::cache::ListCache,
    /// Commits waiting for an fsync of their directory, which they share (`dir_sync.rs`).
    pub(crate) dir_syncs: crate::dir_sync::DirSyncs,
    /// Deletions, for the modification times of later commits (`version_date.rs`).
    pub(crate) deleted: crate::version_date::Deleted,
    pub(crate) faults: Faults,
    /// The writeback thread of uploads, and how often they use it.
    pub(crate) flusher: Flusher,
    pub(crate) early_writeback: Option<u64>,
    /// Temporary files removed at open.
    pub(crate) removed_at_open: u64,
    /// Files that `LocalStore::open` committed by finishing interrupted multi-file commits.
    pub(crate) rolled_forward: u64,
    /// Test hook: runs after each directory resolution, before the directory is used.
    #[cfg(test)]
    pub(crate) after_resolve: crate::testutil::Hook,
    /// Test hook: resolve by walking even where `openat2` works.
    #[cfg(test)]
    pub(crate) force_walk: std::sync::atomic::AtomicBool,
    /// Test hook: a multi-file commit "crashes" (stops, leaving everything as a crash would)
    /// after this many renames.
    #[cfg(test)]
    pub(crate) crash_after_renames: Mutex<Option<usize>>,
    /// Holds the root lock for as long as the store or any upload lives.
    pub(crate) _lock: File,
}

/// What a walk does with a directory that does not exist.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Missing {
    /// Creates it (and the ones below), making each durable. A file on the way is
    /// [`StoreError::NotADirectory`].
    Create,
    /// Stops there: the walk returns `None`. A file on the way is
    /// [`StoreError::NotADirectory`] (what creating would meet).
    Stop,
    /// Fails with [`StoreError::NotFound`]; a file on the way is not found either.
    NotFound,
}

/// A directory reached from the root: the root itself (no descriptor to open) or one below.
#[derive(Debug)]
pub(crate) enum Resolved {
    Root,
    Below(DirHandle),
}

impl Resolved {
    pub(crate) fn get<'a>(&'a self, shared: &'a Shared) -> &'a DirHandle {
        match self {
            Resolved::Root => &shared.root,
            Resolved::Below(dir) => dir,
        }
    }
}

impl Shared {
    pub(crate) fn lock_commits(&self) -> MutexGuard<'_, ()> {
        // The mutex guards no data, so a panic while it was held left nothing inconsistent.
        self.commit_lock
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// The root, when one-call resolution (`openat2`) may be tried from it.
    pub(crate) fn beneath_root(&self) -> Option<&DirHandle> {
        #[cfg(test)]
        if self.force_walk.load(std::sync::atomic::Ordering::Relaxed) {
            return None;
        }
        Some(&self.root)
    }

    /// The existing directory `rel` (`a/b`, or `""` for the root), for reading: absent, or a
    /// file on the way, is [`StoreError::NotFound`]; a symbolic link anywhere is
    /// [`StoreError::SymlinkRefused`]. One `openat2` where the kernel has it, else one
    /// `openat(O_NOFOLLOW | O_DIRECTORY)` per component.
    pub(crate) fn resolve(&self, rel: &str) -> Result<Resolved, StoreError> {
        if rel.is_empty() {
            return Ok(Resolved::Root);
        }
        let opened = self
            .beneath_root()
            .and_then(|root| root.open_dir_beneath(rel));
        let resolved = match opened {
            Some(Ok(dir)) => Resolved::Below(dir),
            Some(Err(e)) if sys::is_symlink_error(&e) => return Err(StoreError::SymlinkRefused),
            Some(Err(e)) if is_absent(&e) => return Err(StoreError::NotFound),
            Some(Err(e)) => return Err(StoreError::from_io("open directory", e)),
            None => match walk(&self.root, rel.split('/'), Missing::NotFound)? {
                Some(resolved) => resolved,
                None => return Err(StoreError::NotFound),
            },
        };
        self.resolved();
        Ok(resolved)
    }

    /// Walks `rel` from the root, doing what `missing` says with absent directories (see
    /// [`walk`]).
    pub(crate) fn walk(&self, rel: &str, missing: Missing) -> Result<Option<Resolved>, StoreError> {
        let resolved = walk(
            &self.root,
            rel.split('/').filter(|s| !s.is_empty()),
            missing,
        )?;
        self.resolved();
        Ok(resolved)
    }

    /// How many directories of `rel` are missing: the trailing segments from the first absent
    /// one. A file or a link on the way is refused as by [`Missing::Stop`].
    pub(crate) fn missing_dirs(&self, rel: &str) -> Result<usize, StoreError> {
        match self.resolve(rel) {
            Ok(_) => return Ok(0),
            Err(StoreError::NotFound) => {}
            Err(e) => return Err(e),
        }
        let mut current: Option<DirHandle> = None;
        let segments = || rel.split('/').filter(|s| !s.is_empty());
        for (depth, segment) in segments().enumerate() {
            let dir = current.as_ref().unwrap_or(&self.root);
            let opened = dir.open_dir(segment);
            match open_dir_result(dir, segment, opened, Missing::Stop)? {
                Some(next) => current = Some(next),
                None => return Ok(segments().count() - depth),
            }
        }
        Ok(0)
    }

    /// Creates the missing directories of `rel`, each charged [`ENTRY_COST`] first (all or
    /// none: [`StoreError::QuotaExceeded`] creates nothing). Call with the commit lock held.
    pub(crate) fn create_dirs(&self, rel: &str) -> Result<Resolved, StoreError> {
        let cost = (self.missing_dirs(rel)? as u64).saturating_mul(ENTRY_COST);
        self.usage.reserve(cost)?;
        match self.walk(rel, Missing::Create) {
            Ok(Some(dir)) => Ok(dir),
            Ok(None) => Err(StoreError::NotFound),
            Err(e) => {
                // Some may have been made: they are counted again at the next start.
                self.usage.release(cost);
                Err(e)
            }
        }
    }

    /// The directory a listing reads: the root, or `dir` which must be a directory
    /// ([`StoreError::NotADirectory`] for a file).
    pub(crate) fn open_listed_dir(&self, dir: Option<&StorePath>) -> Result<Resolved, StoreError> {
        let Some(dir) = dir else {
            return Ok(Resolved::Root);
        };
        let parent = self.resolve(parent_of(dir))?;
        let opened = parent.get(self).open_dir(dir.file_name());
        // `Stop`: a file there is `NotADirectory`, an absent name `None`.
        let dir = open_dir_result(parent.get(self), dir.file_name(), opened, Missing::Stop)?;
        match dir {
            Some(dir) => {
                self.resolved();
                Ok(Resolved::Below(dir))
            }
            None => Err(StoreError::NotFound),
        }
    }

    /// Test hook of `commit_all`, before the rename of the `renamed`+1-th file.
    #[cfg(test)]
    pub(crate) fn before_batch_rename(&self, renamed: usize) -> Result<(), StoreError> {
        if *self.crash_after_renames.lock().unwrap() == Some(renamed) {
            return Err(StoreError::from_io(
                "rename into place",
                io::Error::other("simulated crash"),
            ));
        }
        Ok(())
    }

    #[cfg(test)]
    fn resolved(&self) {
        self.after_resolve.run();
    }

    #[cfg(not(test))]
    fn resolved(&self) {}
}

/// The directory part of a path (`a/b` for `a/b/c`, `""` for a top-level name).
pub(crate) fn parent_of(path: &StorePath) -> &str {
    path.as_str().rsplit_once('/').map_or("", |(dir, _)| dir)
}

/// Walks directory segments down from `root` one `openat(O_NOFOLLOW | O_DIRECTORY)` at a
/// time, refusing symlinks, and returns the directory they name. Missing directories are
/// created (and made durable: each new entry's parent is fsynced), end the walk (`None`), or
/// are [`StoreError::NotFound`], as `missing` says.
pub(crate) fn walk<'a>(
    root: &DirHandle,
    segments: impl Iterator<Item = &'a str>,
    missing: Missing,
) -> Result<Option<Resolved>, StoreError> {
    let mut current: Option<DirHandle> = None;
    for segment in segments {
        let dir = current.as_ref().unwrap_or(root);
        let opened = dir.open_dir(segment);
        let next = match open_dir_result(dir, segment, opened, missing)? {
            Some(next) => next,
            None if missing == Missing::Stop => return Ok(None),
            // Never created by a lookup for reading (`resolve` without `openat2`).
            None if missing == Missing::NotFound => return Err(StoreError::NotFound),
            None => {
                match dir.mkdir(segment) {
                    Ok(()) => dir
                        .sync()
                        .map_err(|e| StoreError::from_io("sync directory", e))?,
                    // Created by a concurrent upload: fine if it is a real directory.
                    Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
                    Err(e) => return Err(StoreError::from_io("create directory", e)),
                }
                let opened = dir.open_dir(segment);
                match open_dir_result(dir, segment, opened, missing)? {
                    Some(next) => next,
                    None => return Err(StoreError::NotFound),
                }
            }
        };
        current = Some(next);
    }
    Ok(Some(current.map_or(Resolved::Root, Resolved::Below)))
}

/// A test hook's function (see [`AFTER_ABSENT_OPEN`]).
#[cfg(test)]
pub(crate) type AbsentHook = Box<dyn FnMut(&str)>;

#[cfg(test)]
thread_local! {
    /// Test hook: runs on this thread in `open_dir_result` after an open of `name` found
    /// nothing, before the look at what is there: the moment another commit's `mkdir` can
    /// land.
    pub(crate) static AFTER_ABSENT_OPEN: std::cell::RefCell<Option<AbsentHook>> =
        const { std::cell::RefCell::new(None) };
}

/// Classifies the outcome of opening the subdirectory `name` of `dir`: `None` when absent;
/// what is in the way otherwise, looked at (without following it) only on this error path.
fn open_dir_result(
    dir: &DirHandle,
    name: &str,
    opened: io::Result<DirHandle>,
    missing: Missing,
) -> Result<Option<DirHandle>, StoreError> {
    let err = match opened {
        Ok(d) => return Ok(Some(d)),
        Err(e) => e,
    };
    if sys::is_symlink_error(&err) {
        return Err(StoreError::SymlinkRefused);
    }
    if !is_absent(&err) {
        return Err(StoreError::from_io("open directory", err));
    }
    #[cfg(test)]
    AFTER_ABSENT_OPEN.with_borrow_mut(|hook| hook.as_mut().map(|f| f(name)));
    // `ENOENT`, or `ENOTDIR`: a file, or a symlink (`O_NOFOLLOW | O_DIRECTORY` on a link
    // fails with `ENOTDIR` rather than `ELOOP`).
    match stat(dir, name)? {
        None => Ok(None),
        Some(m) if m.kind == EntryKind::Symlink => Err(StoreError::SymlinkRefused),
        // Created between the open and the look (another commit's `mkdir`: resolutions
        // outside the commit lock, an upload's `begin`, meet them): a directory is never "in
        // the way", so open it now. Once: what fails then is classified as it is then, and a
        // directory that flickers again reads as absent (the commit lock's `mkdirat` then
        // meets `EEXIST` and opens it once more).
        Some(m) if m.kind == EntryKind::Dir => match dir.open_dir(name) {
            Ok(d) => Ok(Some(d)),
            Err(e) if sys::is_symlink_error(&e) => Err(StoreError::SymlinkRefused),
            Err(e) if !is_absent(&e) => Err(StoreError::from_io("open directory", e)),
            Err(_) => match stat(dir, name)? {
                Some(m) if m.kind == EntryKind::Symlink => Err(StoreError::SymlinkRefused),
                Some(m) if m.kind != EntryKind::Dir => in_the_way(missing),
                _ => Ok(None),
            },
        },
        Some(_) => in_the_way(missing),
    }
}

/// A file (or a special file) where a directory was to be opened: what `missing` makes of it.
fn in_the_way(missing: Missing) -> Result<Option<DirHandle>, StoreError> {
    match missing {
        Missing::NotFound => Err(StoreError::NotFound),
        Missing::Create | Missing::Stop => Err(StoreError::NotADirectory),
    }
}

/// `ENOENT` or `ENOTDIR`: nothing usable by that name.
pub(crate) fn is_absent(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::NotFound | io::ErrorKind::NotADirectory
    )
}

/// `fstatat(AT_SYMLINK_NOFOLLOW)` of `name` in `dir`, with "absent" as `None`.
pub(crate) fn stat(dir: &DirHandle, name: &str) -> Result<Option<EntryStat>, StoreError> {
    dir.stat(name).map_err(|e| StoreError::Io {
        op: "stat",
        source: e,
    })
}

/// Whether a file name is one of the store's temporary upload files.
pub(crate) fn is_temp_name(name: &str) -> bool {
    name.starts_with(TEMP_PREFIX) && name.ends_with(TEMP_SUFFIX)
}

/// A name unique to this process for a new file in the staging area.
pub(crate) fn unique_name(prefix: &str, suffix: &str) -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    // ALLOCATION: one short name per upload.
    format!("{prefix}{:x}-{n:x}{suffix}", std::process::id())
}

/// Creates a new, uniquely named temporary file in the staging area. `O_EXCL` makes the name
/// ours alone even if a leftover from a process with the same pid is still there.
pub(crate) fn create_temp(staging: &DirHandle) -> Result<(String, File), StoreError> {
    let mut last_err = None;
    // A handful of tries: a collision needs a leftover with the same pid and counter, and the
    // counter moves on at each try.
    for _ in 0..8 {
        let name = unique_name(TEMP_PREFIX, TEMP_SUFFIX);
        match staging.create_new(&name) {
            Ok(file) => return Ok((name, file)),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => last_err = Some(e),
            Err(e) => return Err(StoreError::from_io("create temporary file", e)),
        }
    }
    let source = last_err.unwrap_or_else(|| io::ErrorKind::AlreadyExists.into());
    Err(StoreError::Io {
        op: "create temporary file",
        source,
    })
}
