//! Everywhere without `openat` (not Unix): the same interface as `dir_unix.rs`, by path, with
//! std only. A directory is remembered by its path and every name is checked with
//! `symlink_metadata` before use: links are refused, but the window between the check and the
//! use stays open (see the table in `sys`). Compiled on Unix too, so that it cannot rot.

use super::{EntryKind, EntryStat};
use std::ffi::{OsStr, OsString};
use std::fs::{self, File, OpenOptions};
use std::io;
use std::path::{Path, PathBuf};
use std::time::UNIX_EPOCH;

/// A directory, by path.
#[derive(Debug)]
pub(crate) struct DirHandle {
    path: PathBuf,
}

/// The error a symbolic link gets here; [`is_symlink_error`] recognises it.
#[derive(Debug)]
struct SymlinkMet;

impl std::fmt::Display for SymlinkMet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("symbolic link refused")
    }
}

impl std::error::Error for SymlinkMet {}

fn symlink_error() -> io::Error {
    io::Error::other(SymlinkMet)
}

impl DirHandle {
    pub(crate) fn open_root(path: &Path) -> io::Result<DirHandle> {
        if !fs::metadata(path)?.is_dir() {
            return Err(io::ErrorKind::NotADirectory.into());
        }
        Ok(DirHandle {
            path: path.to_owned(),
        })
    }

    /// Fails unless `name` is a real directory (not a link to one).
    pub(crate) fn open_dir(&self, name: &str) -> io::Result<DirHandle> {
        match self.stat(name)? {
            Some(s) if s.kind == EntryKind::Dir => Ok(DirHandle {
                path: self.path.join(name),
            }),
            Some(s) if s.kind == EntryKind::Symlink => Err(symlink_error()),
            Some(_) => Err(io::ErrorKind::NotADirectory.into()),
            None => Err(io::ErrorKind::NotFound.into()),
        }
    }

    pub(crate) fn open_dir_beneath(&self, _rel: &str) -> Option<io::Result<DirHandle>> {
        None
    }

    pub(crate) fn open_file_beneath(&self, _rel: &str) -> Option<io::Result<File>> {
        None
    }

    fn checked_file(&self, name: &str) -> io::Result<PathBuf> {
        match self.stat(name)? {
            Some(s) if s.kind == EntryKind::Symlink => Err(symlink_error()),
            _ => Ok(self.path.join(name)),
        }
    }

    pub(crate) fn open_read(&self, name: &str) -> io::Result<File> {
        File::open(self.checked_file(name)?)
    }

    pub(crate) fn open_rw(&self, name: &str) -> io::Result<File> {
        let path = self.checked_file(name)?;
        OpenOptions::new().read(true).write(true).open(path)
    }

    pub(crate) fn create_new(&self, name: &str) -> io::Result<File> {
        OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(self.path.join(name))
    }

    pub(crate) fn create_or_open(&self, name: &str) -> io::Result<File> {
        let path = self.checked_file(name)?;
        OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)
    }

    pub(crate) fn mkdir(&self, name: &str) -> io::Result<()> {
        fs::create_dir(self.path.join(name))
    }

    pub(crate) fn stat(&self, name: &str) -> io::Result<Option<EntryStat>> {
        match fs::symlink_metadata(self.path.join(name)) {
            Ok(m) => Ok(Some(entry_stat(&m))),
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::NotFound | io::ErrorKind::NotADirectory
                ) =>
            {
                Ok(None)
            }
            Err(e) => Err(e),
        }
    }

    pub(crate) fn rename(&self, from: &str, to_dir: &DirHandle, to: &str) -> io::Result<()> {
        fs::rename(self.path.join(from), to_dir.path.join(to))
    }

    pub(crate) fn link(&self, from: &str, to_dir: &DirHandle, to: &str) -> io::Result<()> {
        fs::hard_link(self.checked_file(from)?, to_dir.path.join(to))
    }

    pub(crate) fn unlink(&self, name: &str) -> io::Result<()> {
        fs::remove_file(self.path.join(name))
    }

    pub(crate) fn remove_dir(&self, name: &str) -> io::Result<()> {
        fs::remove_dir(self.path.join(name))
    }

    /// Directories cannot be opened (and so not synced) with std on Windows; NTFS journals
    /// renames itself.
    #[cfg(not(unix))]
    pub(crate) fn sync(&self) -> io::Result<()> {
        Ok(())
    }

    #[cfg(unix)]
    pub(crate) fn sync(&self) -> io::Result<()> {
        File::open(&self.path)?.sync_all()
    }

    /// No portable inode number: no identity (a commit then fsyncs on its own).
    pub(crate) fn identity(&self) -> Option<(u64, u64)> {
        None
    }

    /// No portable inode number: listings are not kept between pages (`list/cache.rs`).
    pub(crate) fn changed(&self) -> Option<((u64, u64), std::time::Duration)> {
        None
    }

    pub(crate) fn names(&self) -> io::Result<Vec<OsString>> {
        fs::read_dir(&self.path)?
            .map(|e| e.map(|e| e.file_name()))
            .collect()
    }

    pub(crate) fn for_each_entry(
        &self,
        mut f: impl FnMut(&OsStr, Option<EntryKind>),
    ) -> io::Result<()> {
        for entry in fs::read_dir(&self.path)? {
            let entry = entry?;
            let kind = entry.file_type().ok().map(|t| {
                if t.is_symlink() {
                    EntryKind::Symlink
                } else if t.is_dir() {
                    EntryKind::Dir
                } else if t.is_file() {
                    EntryKind::File
                } else {
                    EntryKind::Other
                }
            });
            f(&entry.file_name(), kind);
        }
        Ok(())
    }
}

pub(crate) fn is_symlink_error(err: &io::Error) -> bool {
    err.get_ref().is_some_and(|e| e.is::<SymlinkMet>())
}

fn entry_stat(meta: &fs::Metadata) -> EntryStat {
    let file_type = meta.file_type();
    let kind = if file_type.is_symlink() {
        EntryKind::Symlink
    } else if file_type.is_dir() {
        EntryKind::Dir
    } else if file_type.is_file() {
        EntryKind::File
    } else {
        EntryKind::Other
    };
    EntryStat {
        kind,
        size: meta.len(),
        modified: meta.modified().unwrap_or(UNIX_EPOCH),
        // No portable inode number.
        id: None,
    }
}

/// No portable inode number: readers are not tracked (see `readers`).
pub(crate) fn file_identity(_meta: &fs::Metadata) -> Option<((u64, u64), u64)> {
    None
}
