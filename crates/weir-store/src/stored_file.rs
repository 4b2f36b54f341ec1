//! [`StoredFile`]: a stored file open for reading, registered with the store's readers
//! (`readers.rs`) so that its space stays counted while it is read, whatever happens to its
//! name.

use crate::readers::FileId;
use crate::tree::Shared;
use std::fs::{File, Metadata};
use std::io;
use std::ops::{Deref, DerefMut};
use std::sync::Arc;

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
