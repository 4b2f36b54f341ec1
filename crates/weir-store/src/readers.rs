//! Space held by readers: a file deleted or replaced while a download still reads it keeps its
//! blocks until the last descriptor on it closes, so the quota keeps counting it until then.
//!
//! [`LocalStore::open_file`] returns a [`StoredFile`], which registers its inode here and
//! unregisters it on drop. Removing a name ([`Readers::remove_name`], around the `unlinkat` of
//! a delete or the `renameat` of a commit that replaces a file) gives the space back at once
//! when no reader holds the inode, and otherwise defers it to the last reader's drop.
//!
//! One mutex orders the two sides: the reader takes its `fstat` (and so the link count) under
//! it, and a name is removed under it. A reader that opened the file just before its name was
//! removed, but registers after, sees a link count of 0 and takes the space back itself, since
//! the removal already released it.
//!
//! Where the platform gives no inode number (not Unix), readers are not tracked.
//!
//! [`LocalStore::open_file`]: crate::LocalStore::open_file

use crate::local::Shared;
use std::collections::HashMap;
use std::fs::{File, Metadata};
use std::io;
use std::ops::{Deref, DerefMut};
use std::sync::{Arc, Mutex, MutexGuard};

/// Which file (device, inode).
pub(crate) type FileId = (u64, u64);

/// The inodes with readers, and the space each holds for names already removed.
#[derive(Debug, Default)]
pub(crate) struct Readers {
    held: Mutex<HashMap<FileId, Held>>,
}

#[derive(Debug, Default)]
struct Held {
    readers: usize,
    /// Bytes (and entry cost) whose release waits for the last reader.
    deferred: u64,
}

impl Readers {
    fn lock(&self) -> MutexGuard<'_, HashMap<FileId, Held>> {
        // A panic while holding it leaves counts that are at worst an estimate.
        self.held.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Runs `remove` (the `unlinkat` or `renameat` that takes a name from file `id`, which
    /// accounts for `charge`) and returns its result with what may be released now: `charge`,
    /// or 0 when readers hold the file (their last drop releases it).
    pub(crate) fn remove_name<T>(
        &self,
        id: Option<FileId>,
        charge: u64,
        remove: impl FnOnce() -> io::Result<T>,
    ) -> io::Result<(T, u64)> {
        let mut held = self.lock();
        let done = remove()?;
        match id.and_then(|id| held.get_mut(&id)) {
            Some(h) => {
                h.deferred = h.deferred.saturating_add(charge);
                Ok((done, 0))
            }
            None => Ok((done, charge)),
        }
    }
}

/// A stored file open for reading. Derefs to the [`File`]; while it lives, the file's space
/// stays counted against the quota even if its name is deleted or replaced.
#[derive(Debug)]
pub struct StoredFile {
    /// Always `Some` but in `drop`, which closes it before giving the space back.
    file: Option<File>,
    registered: Option<(Arc<Shared>, FileId)>,
}

impl StoredFile {
    /// Takes the file's metadata and registers it as read, as one step under the readers'
    /// lock (see the module doc). `charge` is what the file counts for in the quota.
    pub(crate) fn open(
        shared: &Arc<Shared>,
        file: File,
        charge: impl FnOnce(&Metadata) -> u64,
    ) -> io::Result<(StoredFile, Metadata)> {
        let mut held = shared.readers.lock();
        let meta = file.metadata()?;
        let Some((id, links)) = crate::sys::file_identity(&meta).filter(|_| meta.is_file()) else {
            drop(held);
            let file = StoredFile {
                file: Some(file),
                registered: None,
            };
            return Ok((file, meta));
        };
        // ALLOCATION: a map entry per file being read (not per reader), freed at its last
        // close; and a reference count on the store per reader, below.
        let entry = held.entry(id).or_default();
        if entry.readers == 0 && links == 0 {
            // Its name went before this reader registered, and gave its space back: take it
            // again for as long as the file is read.
            let n = charge(&meta);
            shared.usage.charge(n);
            entry.deferred = entry.deferred.saturating_add(n);
        }
        entry.readers += 1;
        drop(held);
        let file = StoredFile {
            file: Some(file),
            registered: Some((Arc::clone(shared), id)),
        };
        Ok((file, meta))
    }

    fn unregister(&mut self) {
        let Some((shared, id)) = self.registered.take() else {
            return;
        };
        let mut held = shared.readers.lock();
        if let Some(h) = held.get_mut(&id) {
            h.readers = h.readers.saturating_sub(1);
            if h.readers == 0 {
                let deferred = h.deferred;
                held.remove(&id);
                drop(held);
                shared.usage.release(deferred);
            }
        }
    }
}

impl Deref for StoredFile {
    type Target = File;

    fn deref(&self) -> &File {
        match &self.file {
            Some(file) => file,
            None => unreachable!("taken only by drop"),
        }
    }
}

impl DerefMut for StoredFile {
    fn deref_mut(&mut self) -> &mut File {
        match &mut self.file {
            Some(file) => file,
            None => unreachable!("taken only by drop"),
        }
    }
}

impl Drop for StoredFile {
    fn drop(&mut self) {
        // Closed first: the blocks of a file without a name are free only once it is closed.
        self.file = None;
        self.unregister();
    }
}

impl io::Read for StoredFile {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        (**self).read(buf)
    }
}

impl io::Seek for StoredFile {
    fn seek(&mut self, pos: io::SeekFrom) -> io::Result<u64> {
        (**self).seek(pos)
    }
}
