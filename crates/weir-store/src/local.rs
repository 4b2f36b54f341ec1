//! The local filesystem backend: a directory tree under one root.
//!
//! Layout: a store path `a/b/c` is the file `ROOT/a/b/c`. Besides the files it stores, the
//! root holds only names starting with [`RESERVED_PREFIX`](crate::path::RESERVED_PREFIX):
//! - `.weir-lock` in the root: held with `flock` while a [`LocalStore`] is open, so that a
//!   second process cannot clean up the first one's uploads in progress or skew its quota;
//! - `.weir-upload-<pid>-<n>.tmp` next to each target: an upload in progress (see
//!   [`Upload`]).
//!
//! Resolution never follows a symbolic link: every existing component is checked with
//! `symlink_metadata` on the way down, a symlink anywhere is [`StoreError::SymlinkRefused`],
//! and final files are opened with `O_NOFOLLOW` on Linux. What remains is the window between
//! checking a directory and using it: a process that can write inside the root could swap a
//! checked directory for a symlink in between. The store assumes that nothing but itself
//! writes the root (the lock keeps other weir processes out); closing that window completely
//! would take `openat`-relative resolution, which can come later without changing the API.

use crate::error::StoreError;
use crate::fault::Faults;
use crate::path::{StorePath, is_reserved, validate_segment};
use crate::quota::Usage;
use crate::sys;
use crate::upload::{Upload, UploadOptions};
use crate::writeback::{self, Flusher};
use std::fs::{self, File, Metadata, OpenOptions};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::SystemTime;

/// Name of the lock file in the root.
const LOCK_NAME: &str = ".weir-lock";
/// Temporary upload files are named `TEMP_PREFIX` + unique part + `TEMP_SUFFIX`.
pub(crate) const TEMP_PREFIX: &str = ".weir-upload-";
pub(crate) const TEMP_SUFFIX: &str = ".tmp";

/// Options for [`LocalStore::open`].
#[derive(Clone, Debug)]
pub struct LocalOptions {
    /// The most bytes the files under the root may take, counted as the sum of file sizes
    /// (uploads in progress included). `None`: no limit but the disk's.
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
        }
    }
}

/// Metadata of a stored file, from the open file itself (so it describes exactly the bytes
/// the file handle reads, even if the path is replaced meanwhile).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FileMeta {
    /// Size in bytes.
    pub size: u64,
    /// Last modification: the commit time of the upload that wrote it.
    pub modified: SystemTime,
    /// SHA-256 of the content, when it was recorded at commit and the file has not changed
    /// since. `None` means unknown, never "no digest": hash it if you need it.
    pub sha256: Option<[u8; 32]>,
}

/// One entry of a directory listing.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    /// The name in the directory (one path segment), always a valid store path segment.
    pub name: String,
    /// Size in bytes; 0 for directories.
    pub size: u64,
    /// Last modification time.
    pub modified: SystemTime,
    /// Whether it is a directory (else a regular file).
    pub is_dir: bool,
}

/// A store on the local filesystem. Cheap to clone: clones share the root, the lock and the
/// usage counter, and can be used from any thread.
#[derive(Clone, Debug)]
pub struct LocalStore {
    shared: Arc<Shared>,
}

/// What a store and its uploads in progress share.
#[derive(Debug)]
pub(crate) struct Shared {
    /// Canonical root: no symlink in it, so that joining checked segments stays below it.
    pub(crate) root: PathBuf,
    pub(crate) usage: Usage,
    /// Serializes "look at the target, then rename over it or unlink it", so that `replaced`
    /// and the usage count are exact when uploads and deletes of one path race. Held only for
    /// the `lstat` and the `rename` or `unlink`, never across an fsync.
    pub(crate) commit_lock: Mutex<()>,
    /// Deletions, for the modification times of later commits (`version_date.rs`).
    pub(crate) deleted: crate::version_date::Deleted,
    pub(crate) faults: Faults,
    /// The writeback thread of uploads, and how often they use it.
    pub(crate) flusher: Flusher,
    pub(crate) early_writeback: Option<u64>,
    /// Temporary files removed at open.
    removed_at_open: u64,
    /// Holds the root lock for as long as the store or any upload lives.
    _lock: File,
}

/// Whether a walk creates missing directories.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Missing {
    Create,
    NotFound,
}

impl LocalStore {
    /// Opens (creating it if needed) the store rooted at `root`.
    ///
    /// Checks that the root is a writable directory that no other process holds, removes the
    /// temporary files of uploads that a crash interrupted, and counts the space in use. It
    /// walks the whole tree to do so: start-up time grows with the number of files.
    ///
    /// Errors are [`StoreError::Root`], fit to print before exiting.
    pub fn open(root: impl AsRef<Path>, options: LocalOptions) -> Result<LocalStore, StoreError> {
        let given = root.as_ref();
        let root_err = |source| StoreError::Root {
            root: given.to_owned(),
            source,
        };
        fs::create_dir_all(given).map_err(root_err)?;
        let root = fs::canonicalize(given).map_err(root_err)?;
        if !fs::metadata(&root).map_err(root_err)?.is_dir() {
            return Err(root_err(io::Error::new(
                io::ErrorKind::NotADirectory,
                "not a directory",
            )));
        }
        let lock = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(root.join(LOCK_NAME))
            .map_err(root_err)?;
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
        // Prove that files can be created where uploads will be created (a read-only mount
        // or a directory without write permission fails here, not at the first upload).
        let (probe, probe_file) = create_temp(&root).map_err(|e| match e {
            StoreError::Io { source, .. } => root_err(source),
            other => root_err(io::Error::other(other.to_string())),
        })?;
        drop(probe_file);
        fs::remove_file(&probe).map_err(root_err)?;

        let scan = scan(&root).map_err(root_err)?;
        #[cfg(any(test, feature = "fault-injection"))]
        let faults = Faults::new(options.fault, options.hash_gate);
        #[cfg(not(any(test, feature = "fault-injection")))]
        let faults = Faults::default();
        Ok(LocalStore {
            shared: Arc::new(Shared {
                root,
                usage: Usage::new(scan.used, options.max_storage),
                commit_lock: Mutex::new(()),
                deleted: Default::default(),
                faults,
                flusher: Flusher::default(),
                early_writeback: options.early_writeback,
                removed_at_open: scan.removed,
                _lock: lock,
            }),
        })
    }

    /// The canonical root directory.
    pub fn root(&self) -> &Path {
        &self.shared.root
    }

    /// Bytes in use: committed files plus uploads in progress.
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

    /// How many leftover temporary files [`LocalStore::open`] removed.
    pub fn removed_temporaries(&self) -> u64 {
        self.shared.removed_at_open
    }

    /// Starts an upload to `path`: creates the directories on the way and a temporary file
    /// next to the target. Nothing is visible at `path` until [`Upload::commit`].
    ///
    /// With `options.expected_len`, the whole length is reserved against the quota now, so an
    /// upload that cannot fit fails before the client sends its body.
    pub fn begin(&self, path: &StorePath, options: UploadOptions) -> Result<Upload, StoreError> {
        Upload::begin(self.shared.clone(), path, options)
    }

    /// Opens a stored file for reading (GET, HEAD). The file handle keeps reading the same
    /// bytes even if the path is replaced or deleted meanwhile.
    pub fn open_file(&self, path: &StorePath) -> Result<(File, FileMeta), StoreError> {
        let dir = self
            .shared
            .walk(path.parent_segments(), Missing::NotFound)?;
        let target = dir.join(path.file_name());
        match lstat(&target)? {
            None => return Err(StoreError::NotFound),
            Some(m) if m.file_type().is_symlink() => return Err(StoreError::SymlinkRefused),
            Some(m) if m.is_dir() => return Err(StoreError::IsDirectory),
            Some(m) if !m.is_file() => return Err(StoreError::NotFound),
            Some(_) => {}
        }
        let mut opts = OpenOptions::new();
        opts.read(true);
        sys::add_nofollow(&mut opts, true);
        let file = opts.open(&target).map_err(|e| match e.kind() {
            io::ErrorKind::NotFound => StoreError::NotFound,
            _ if sys::is_symlink_error(&e) => StoreError::SymlinkRefused,
            _ => StoreError::Io {
                op: "open file",
                source: e,
            },
        })?;
        // Check again on the open handle: the path may have changed since the lstat.
        let meta = file.metadata().map_err(|e| StoreError::Io {
            op: "stat file",
            source: e,
        })?;
        if meta.is_dir() {
            return Err(StoreError::IsDirectory);
        }
        if !meta.is_file() {
            return Err(StoreError::NotFound);
        }
        let sha256 = sys::read_digest(&file, &meta);
        let modified = modified(&meta)?;
        Ok((
            file,
            FileMeta {
                size: meta.len(),
                modified,
                sha256,
            },
        ))
    }

    /// Lists a directory (`None`: the root), sorted by name (byte order). Temporary files,
    /// reserved names, symbolic links, special files and names that are not valid store path
    /// segments are left out: a listing shows exactly what can be fetched.
    pub fn list(&self, dir: Option<&StorePath>) -> Result<Vec<Entry>, StoreError> {
        let path = match dir {
            None => self.shared.root.clone(),
            Some(dir) => {
                let parent = self.shared.walk(dir.parent_segments(), Missing::NotFound)?;
                let path = parent.join(dir.file_name());
                match lstat(&path)? {
                    None => return Err(StoreError::NotFound),
                    Some(m) if m.file_type().is_symlink() => {
                        return Err(StoreError::SymlinkRefused);
                    }
                    Some(m) if !m.is_dir() => return Err(StoreError::NotADirectory),
                    Some(_) => path,
                }
            }
        };
        let read_dir = fs::read_dir(&path).map_err(|e| match e.kind() {
            io::ErrorKind::NotFound => StoreError::NotFound,
            _ => StoreError::Io {
                op: "read directory",
                source: e,
            },
        })?;
        let mut entries = Vec::new();
        for dirent in read_dir {
            let dirent = dirent.map_err(|e| StoreError::Io {
                op: "read directory",
                source: e,
            })?;
            let Ok(name) = dirent.file_name().into_string() else {
                continue;
            };
            if validate_segment(&name).is_err() {
                continue;
            }
            // `DirEntry::metadata` does not follow symlinks.
            let meta = match dirent.metadata() {
                Ok(m) => m,
                // Deleted between readdir and stat: it is simply not there any more.
                Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
                Err(e) => {
                    return Err(StoreError::Io {
                        op: "stat entry",
                        source: e,
                    });
                }
            };
            let is_dir = meta.is_dir();
            if !is_dir && !meta.is_file() {
                continue;
            }
            entries.push(Entry {
                name,
                size: if is_dir { 0 } else { meta.len() },
                modified: modified(&meta)?,
                is_dir,
            });
        }
        entries.sort_unstable_by(|a, b| a.name.cmp(&b.name));
        Ok(entries)
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
        let dir = self
            .shared
            .walk(path.parent_segments(), Missing::NotFound)?;
        let target = dir.join(path.file_name());
        let size = {
            let _guard = self.shared.lock_commits();
            let size = match lstat(&target)? {
                None => return Err(StoreError::NotFound),
                Some(m) if m.file_type().is_symlink() => return Err(StoreError::SymlinkRefused),
                Some(m) if m.is_dir() => return Err(StoreError::IsDirectory),
                Some(m) if !m.is_file() => return Err(StoreError::NotFound),
                Some(m) => {
                    crate::precondition::check(&target, Some(&m), check)?;
                    self.shared.deleted.record(m.modified().ok());
                    m.len()
                }
            };
            fs::remove_file(&target).map_err(|e| match e.kind() {
                io::ErrorKind::NotFound => StoreError::NotFound,
                _ => StoreError::Io {
                    op: "delete file",
                    source: e,
                },
            })?;
            size
        };
        self.shared.usage.release(size);
        sys::sync_dir(&dir).map_err(|e| StoreError::Io {
            op: "sync directory",
            source: e,
        })
    }
}

impl Shared {
    pub(crate) fn lock_commits(&self) -> MutexGuard<'_, ()> {
        // The mutex guards no data, so a panic while it was held left nothing inconsistent.
        self.commit_lock
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Walks directory segments down from the root, refusing symlinks, and returns the
    /// directory they name. Missing directories are created (and made durable: each new entry's
    /// parent is fsynced) or are [`StoreError::NotFound`]. A file on the way is
    /// [`StoreError::NotADirectory`] when creating, [`StoreError::NotFound`] when reading.
    pub(crate) fn walk<'a>(
        &self,
        segments: impl Iterator<Item = &'a str>,
        missing: Missing,
    ) -> Result<PathBuf, StoreError> {
        let mut dir = self.root.clone();
        for segment in segments {
            dir.push(segment);
            match lstat(&dir)? {
                Some(m) if m.file_type().is_symlink() => return Err(StoreError::SymlinkRefused),
                Some(m) if m.is_dir() => continue,
                Some(_) => {
                    return Err(match missing {
                        Missing::Create => StoreError::NotADirectory,
                        Missing::NotFound => StoreError::NotFound,
                    });
                }
                None if missing == Missing::NotFound => return Err(StoreError::NotFound),
                None => {}
            }
            match fs::create_dir(&dir) {
                Ok(()) => {
                    let parent = dir.parent().unwrap_or(&self.root);
                    sys::sync_dir(parent).map_err(|e| StoreError::from_io("sync directory", e))?;
                }
                // Created by a concurrent upload: fine if it is a real directory.
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => match lstat(&dir)? {
                    Some(m) if m.is_dir() && !m.file_type().is_symlink() => {}
                    Some(m) if m.file_type().is_symlink() => {
                        return Err(StoreError::SymlinkRefused);
                    }
                    _ => return Err(StoreError::NotADirectory),
                },
                Err(e) => return Err(StoreError::from_io("create directory", e)),
            }
        }
        Ok(dir)
    }
}

/// `symlink_metadata`, with "absent" as `None`. A file where a directory was expected on the
/// way (`ENOTDIR`) also counts as absent.
pub(crate) fn lstat(path: &Path) -> Result<Option<Metadata>, StoreError> {
    match fs::symlink_metadata(path) {
        Ok(m) => Ok(Some(m)),
        Err(e)
            if matches!(
                e.kind(),
                io::ErrorKind::NotFound | io::ErrorKind::NotADirectory
            ) =>
        {
            Ok(None)
        }
        Err(e) => Err(StoreError::Io {
            op: "stat",
            source: e,
        }),
    }
}

fn modified(meta: &Metadata) -> Result<SystemTime, StoreError> {
    meta.modified().map_err(|e| StoreError::Io {
        op: "read modification time",
        source: e,
    })
}

/// Whether a file name is one of the store's temporary upload files.
pub(crate) fn is_temp_name(name: &str) -> bool {
    name.starts_with(TEMP_PREFIX) && name.ends_with(TEMP_SUFFIX)
}

/// Creates a new, uniquely named temporary file in `dir`. `create_new` (`O_EXCL`) makes the
/// name ours alone even if a leftover from a process with the same pid is still there.
pub(crate) fn create_temp(dir: &Path) -> Result<(PathBuf, File), StoreError> {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let pid = std::process::id();
    let mut last_err = None;
    // A handful of tries: a collision needs a leftover with the same pid and counter, and the
    // counter moves on at each try.
    for _ in 0..8 {
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let path = dir.join(format!("{TEMP_PREFIX}{pid:x}-{n:x}{TEMP_SUFFIX}"));
        let mut opts = OpenOptions::new();
        // Read access too: a commit may need to read the bytes back to verify a digest.
        opts.read(true).write(true).create_new(true);
        sys::add_nofollow(&mut opts, false);
        match opts.open(&path) {
            Ok(file) => return Ok((path, file)),
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

struct Scan {
    used: u64,
    removed: u64,
}

/// Walks the tree once at open: removes leftover temporary files and adds up the sizes of the
/// others. Symlinks are neither followed nor counted. Removals are not fsynced: a temporary
/// that reappears after another crash is removed at the next open.
fn scan(root: &Path) -> io::Result<Scan> {
    let mut scan = Scan {
        used: 0,
        removed: 0,
    };
    let mut dirs = vec![root.to_owned()];
    let with_path =
        |e: io::Error, p: &Path| io::Error::new(e.kind(), format!("{}: {e}", p.display()));
    while let Some(dir) = dirs.pop() {
        for dirent in fs::read_dir(&dir).map_err(|e| with_path(e, &dir))? {
            let dirent = dirent.map_err(|e| with_path(e, &dir))?;
            let path = dirent.path();
            let file_type = dirent.file_type().map_err(|e| with_path(e, &path))?;
            if file_type.is_dir() {
                dirs.push(path);
            } else if file_type.is_file() {
                let name = dirent.file_name();
                if name.to_str().is_some_and(is_temp_name) {
                    fs::remove_file(&path).map_err(|e| with_path(e, &path))?;
                    scan.removed += 1;
                } else if !name.to_str().is_some_and(is_reserved) {
                    let meta = dirent.metadata().map_err(|e| with_path(e, &path))?;
                    scan.used = scan.used.saturating_add(meta.len());
                }
            }
        }
    }
    Ok(scan)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::{p, read, store, temps};
    use crate::{PathError, UploadOptions};

    fn put(store: &LocalStore, path: &str, body: &[u8]) {
        let mut up = store.begin(&p(path), UploadOptions::default()).unwrap();
        up.write(body).unwrap();
        up.commit().unwrap();
    }

    #[test]
    fn open_creates_the_root_and_refuses_a_file() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("deep/new/root");
        let store = LocalStore::open(&root, LocalOptions::default()).unwrap();
        assert!(root.is_dir());
        assert_eq!(store.root(), fs::canonicalize(&root).unwrap());
        assert_eq!((store.usage(), store.removed_temporaries()), (0, 0));

        let file = dir.path().join("file");
        fs::write(&file, b"x").unwrap();
        let err = LocalStore::open(&file, LocalOptions::default()).unwrap_err();
        assert!(matches!(err, StoreError::Root { .. }), "{err}");
        assert!(err.to_string().contains(&*file.to_string_lossy()), "{err}");
        let err = LocalStore::open(file.join("below"), LocalOptions::default()).unwrap_err();
        assert!(matches!(err, StoreError::Root { .. }), "{err}");
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_root_is_held_by_one_store_at_a_time() {
        let (dir, store) = store();
        let root = store.root().to_owned();
        let err = LocalStore::open(&root, LocalOptions::default()).unwrap_err();
        assert!(err.to_string().contains("in use"), "{err}");
        // Clones share the lock; an upload in progress keeps it too.
        let up = store
            .clone()
            .begin(&p("f"), UploadOptions::default())
            .unwrap();
        drop(store);
        assert!(LocalStore::open(&root, LocalOptions::default()).is_err());
        drop(up);
        LocalStore::open(&root, LocalOptions::default()).unwrap();
        drop(dir);
    }

    #[test]
    fn open_removes_leftover_temporaries_and_counts_usage() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("root");
        {
            let store = LocalStore::open(&root, LocalOptions::default()).unwrap();
            put(&store, "a/b/kept", b"12345");
            put(&store, "top", b"123");
        }
        // What a SIGKILL during uploads leaves behind.
        let leftovers = [
            root.join(".weir-upload-1f-0.tmp"),
            root.join("a/.weir-upload-2-7.tmp"),
            root.join("a/b/.weir-upload-abc-1.tmp"),
        ];
        for t in &leftovers {
            fs::write(t, vec![0u8; 1000]).unwrap();
        }
        // Not ours to remove: an unrelated hidden file, and a name that only looks similar.
        fs::write(root.join(".hidden"), b"xy").unwrap();
        fs::write(root.join("a/.weir-upload-notes"), b"").unwrap();

        let store = LocalStore::open(&root, LocalOptions::default()).unwrap();
        assert_eq!(store.removed_temporaries(), 3);
        for t in &leftovers {
            assert!(!t.exists(), "{}", t.display());
        }
        assert!(root.join(".hidden").exists());
        assert!(root.join("a/.weir-upload-notes").exists());
        assert_eq!(store.usage(), 5 + 3 + 2);
        assert_eq!(read(&store, "a/b/kept"), b"12345");
    }

    #[test]
    fn list_is_sorted_and_shows_only_what_can_be_fetched() {
        let (_dir, store) = store();
        put(&store, "d/zeta", b"zz");
        put(&store, "d/alpha", b"a");
        put(&store, "d/sub/x", b"xxx");
        put(&store, "d/Beta", b"bbbb");
        // An upload in progress, a file with a reserved name and one with a control
        // character, made behind the store's back: none is listed.
        let _in_progress = store
            .begin(&p("d/pending"), UploadOptions::default())
            .unwrap();
        fs::write(store.root().join("d/.weir-other"), b"").unwrap();
        fs::write(store.root().join("d/bad\nname"), b"").unwrap();

        let entries = store.list(Some(&p("d"))).unwrap();
        let names: Vec<_> = entries
            .iter()
            .map(|e| (e.name.as_str(), e.size, e.is_dir))
            .collect();
        assert_eq!(
            names,
            [
                ("Beta", 4, false),
                ("alpha", 1, false),
                ("sub", 0, true),
                ("zeta", 2, false)
            ]
        );
        assert_eq!(
            temps(store.root()).len(),
            1,
            "the pending upload's temp exists"
        );

        let root: Vec<_> = store
            .list(None)
            .unwrap()
            .into_iter()
            .map(|e| e.name)
            .collect();
        assert_eq!(root, ["d"], "the root lock is not listed either");
    }

    #[test]
    fn list_errors() {
        let (_dir, store) = store();
        put(&store, "d/file", b"x");
        assert!(matches!(
            store.list(Some(&p("absent"))),
            Err(StoreError::NotFound)
        ));
        assert!(matches!(
            store.list(Some(&p("d/absent"))),
            Err(StoreError::NotFound)
        ));
        assert!(matches!(
            store.list(Some(&p("d/file"))),
            Err(StoreError::NotADirectory)
        ));
        assert!(matches!(
            store.list(Some(&p("d/file/x"))),
            Err(StoreError::NotFound)
        ));
        assert!(store.list(Some(&p("d"))).is_ok());
    }

    #[test]
    fn open_file_errors() {
        let (_dir, store) = store();
        put(&store, "d/file", b"x");
        assert!(matches!(
            store.open_file(&p("absent")),
            Err(StoreError::NotFound)
        ));
        assert!(matches!(
            store.open_file(&p("d")),
            Err(StoreError::IsDirectory)
        ));
        assert!(matches!(
            store.open_file(&p("d/file/below")),
            Err(StoreError::NotFound)
        ));
        assert!(matches!(
            store.open_file(&p("no/such/dir/f")),
            Err(StoreError::NotFound)
        ));
        // Temporaries cannot even be named.
        assert_eq!(
            StorePath::parse("d/.weir-upload-1-0.tmp"),
            Err(PathError::Reserved)
        );
    }

    #[test]
    fn begin_errors_leave_nothing_behind() {
        let (_dir, store) = store();
        put(&store, "d/file", b"x");
        let err = store.begin(&p("d"), UploadOptions::default()).unwrap_err();
        assert!(matches!(err, StoreError::IsDirectory));
        let err = store
            .begin(&p("d/file/below"), UploadOptions::default())
            .unwrap_err();
        assert!(matches!(err, StoreError::NotADirectory));
        assert!(temps(store.root()).is_empty());
    }

    #[test]
    fn delete_removes_and_accounts() {
        let (_dir, store) = store();
        put(&store, "d/f", b"12345");
        put(&store, "d/g", b"12");
        store.delete(&p("d/f")).unwrap();
        assert!(matches!(
            store.open_file(&p("d/f")),
            Err(StoreError::NotFound)
        ));
        assert!(matches!(store.delete(&p("d/f")), Err(StoreError::NotFound)));
        assert!(matches!(store.delete(&p("x/y")), Err(StoreError::NotFound)));
        assert!(matches!(
            store.delete(&p("d")),
            Err(StoreError::IsDirectory)
        ));
        assert_eq!(store.usage(), 2);
        let names: Vec<_> = store
            .list(Some(&p("d")))
            .unwrap()
            .into_iter()
            .map(|e| e.name)
            .collect();
        assert_eq!(names, ["g"]);
    }

    #[cfg(unix)]
    #[test]
    fn symlinks_out_of_the_root_are_refused_for_read_and_write() {
        use std::os::unix::fs::symlink;
        let (dir, store) = store();
        let outside = dir.path().join("outside");
        fs::create_dir(&outside).unwrap();
        fs::write(outside.join("secret"), b"secret").unwrap();
        let root = store.root().to_owned();
        // A directory link and a file link, both pointing out of the root.
        symlink(&outside, root.join("escape")).unwrap();
        symlink(outside.join("secret"), root.join("secret-link")).unwrap();
        fs::create_dir(root.join("d")).unwrap();
        symlink("../../outside", root.join("d/rel")).unwrap();

        let refused = |r: Result<(), StoreError>| {
            assert!(matches!(r, Err(StoreError::SymlinkRefused)), "{r:?}");
        };
        for path in [
            "escape/secret",
            "secret-link",
            "d/rel/secret",
            "escape/new/deeper",
        ] {
            refused(store.open_file(&p(path)).map(drop));
            refused(store.begin(&p(path), UploadOptions::default()).map(drop));
            refused(store.delete(&p(path)));
        }
        refused(store.list(Some(&p("escape"))).map(drop));
        refused(store.list(Some(&p("d/rel"))).map(drop));

        // Nothing outside was touched, nothing was created, and links are not listed.
        assert_eq!(fs::read(outside.join("secret")).unwrap(), b"secret");
        assert_eq!(fs::read_dir(&outside).unwrap().count(), 1);
        let names: Vec<_> = store
            .list(None)
            .unwrap()
            .into_iter()
            .map(|e| e.name)
            .collect();
        assert_eq!(names, ["d"]);
        assert!(store.list(Some(&p("d"))).unwrap().is_empty());
        assert!(temps(store.root()).is_empty());
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_symlink_swapped_in_after_the_check_is_not_followed() {
        use std::os::unix::fs::symlink;
        let (dir, store) = store();
        fs::write(dir.path().join("secret"), b"secret").unwrap();
        symlink(dir.path().join("secret"), store.root().join("f")).unwrap();
        // What `open_file` does after its lstat: the open itself refuses the link.
        let mut opts = OpenOptions::new();
        opts.read(true);
        sys::add_nofollow(&mut opts, true);
        let err = opts.open(store.root().join("f")).unwrap_err();
        assert!(sys::is_symlink_error(&err), "{err}");
        // A link placed at the target during an upload is refused at commit, not replaced.
        fs::remove_file(store.root().join("f")).unwrap();
        let mut up = store.begin(&p("f"), UploadOptions::default()).unwrap();
        up.write(b"new").unwrap();
        symlink(dir.path().join("secret"), store.root().join("f")).unwrap();
        assert!(matches!(up.commit(), Err(StoreError::SymlinkRefused)));
        assert_eq!(fs::read(dir.path().join("secret")).unwrap(), b"secret");
        assert!(temps(store.root()).is_empty());
    }

    #[test]
    fn a_root_that_is_itself_a_symlink_is_resolved_once() {
        // The operator may point `--root` at a link; only links *inside* the root are refused.
        #[cfg(unix)]
        {
            let dir = tempfile::tempdir().unwrap();
            fs::create_dir(dir.path().join("real")).unwrap();
            std::os::unix::fs::symlink(dir.path().join("real"), dir.path().join("link")).unwrap();
            let store = LocalStore::open(dir.path().join("link"), LocalOptions::default()).unwrap();
            put(&store, "f", b"ok");
            assert_eq!(fs::read(dir.path().join("real/f")).unwrap(), b"ok");
        }
    }
}
