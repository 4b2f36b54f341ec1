//! [`LocalStore::delete_dir`]: deleting an empty directory (`DELETE /files/{dir}/`).
//!
//! Only an empty directory is deleted: a store never removes files as a side effect of a
//! request that names a directory. The `rmdir` runs under the store's commit lock, and commits
//! create their directories under that lock, so a commit into the directory either happened
//! before (the directory is not empty: [`StoreError::DirectoryNotEmpty`]) or makes it again
//! after.

use super::{LocalStore, parent_of, stat};
use crate::quota::ENTRY_COST;
use crate::sys::EntryKind;
use crate::{StoreError, StorePath};
use std::io;

impl LocalStore {
    /// Deletes the directory `path` if it is empty, durably (its parent is fsynced), and gives
    /// its [`ENTRY_COST`] back to the quota. [`StoreError::NotFound`] if there is none,
    /// [`StoreError::NotADirectory`] for a file, [`StoreError::DirectoryNotEmpty`] when
    /// anything is in it, [`StoreError::SymlinkRefused`] for a symbolic link.
    pub fn delete_dir(&self, path: &StorePath) -> Result<(), StoreError> {
        let resolved = self.shared.resolve(parent_of(path))?;
        let dir = resolved.get(&self.shared);
        let name = path.file_name();
        {
            let _guard = self.shared.lock_commits();
            match stat(dir, name)? {
                None => return Err(StoreError::NotFound),
                Some(m) => match m.kind {
                    EntryKind::Dir => {}
                    EntryKind::Symlink => return Err(StoreError::SymlinkRefused),
                    EntryKind::File => return Err(StoreError::NotADirectory),
                    EntryKind::Other => return Err(StoreError::NotFound),
                },
            }
            dir.remove_dir(name).map_err(|e| match e.kind() {
                io::ErrorKind::DirectoryNotEmpty => StoreError::DirectoryNotEmpty,
                io::ErrorKind::NotFound => StoreError::NotFound,
                _ => StoreError::Io {
                    op: "delete directory",
                    source: e,
                },
            })?;
        }
        self.shared.usage.release(ENTRY_COST);
        dir.sync().map_err(|e| StoreError::Io {
            op: "sync directory",
            source: e,
        })
    }
}

#[cfg(test)]
mod tests {
    use crate::testutil::{p, store};
    use crate::{StoreError, UploadOptions};

    #[test]
    fn only_an_empty_directory_is_deleted() {
        let (_dir, store) = store();
        assert!(store.create_dir(&p("a/b")).unwrap());
        let mut up = store.begin(&p("f"), UploadOptions::default()).unwrap();
        up.write(b"xyz").unwrap();
        up.commit().unwrap();
        let before = store.usage();
        assert!(matches!(
            store.delete_dir(&p("a")),
            Err(StoreError::DirectoryNotEmpty)
        ));
        assert!(matches!(
            store.delete_dir(&p("f")),
            Err(StoreError::NotADirectory)
        ));
        assert!(matches!(
            store.delete_dir(&p("nope")),
            Err(StoreError::NotFound)
        ));
        assert_eq!(store.usage(), before, "nothing deleted, nothing released");
        store.delete_dir(&p("a/b")).unwrap();
        store.delete_dir(&p("a")).unwrap();
        assert_eq!(store.usage(), before - 2 * crate::ENTRY_COST);
        assert!(!store.root().join("a").exists());
        assert!(store.root().join("f").exists());
    }
}
