//! Space held by readers: a file deleted or replaced while a download still reads it keeps its
//! blocks until the last descriptor on it closes, so the quota keeps counting it until then.
//!
//! [`LocalStore::open_file`] returns a `StoredFile` (`stored_file.rs`), which registers its inode here and
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

use std::collections::HashMap;
use std::io;
use std::sync::{Mutex, MutexGuard};

/// Which file (device, inode).
pub(crate) type FileId = (u64, u64);

/// The inodes with readers, and the space each holds for names already removed.
#[derive(Debug, Default)]
pub(crate) struct Readers {
    held: Mutex<HashMap<FileId, Held>>,
}

#[derive(Debug, Default)]
pub(crate) struct Held {
    pub(crate) readers: usize,
    /// Bytes (and entry cost) whose release waits for the last reader.
    pub(crate) deferred: u64,
}

impl Readers {
    pub(crate) fn lock(&self) -> MutexGuard<'_, HashMap<FileId, Held>> {
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
