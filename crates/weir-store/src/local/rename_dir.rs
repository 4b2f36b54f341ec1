//! [`LocalStore::rename_dir`]: a directory moved whole (WebDAV's `MOVE` of a collection), one
//! `renameat(2)` under the store's commit lock: everything in it is at the old path or at the
//! new one, never split between them, even across a crash; nothing is copied, no quota
//! changes hands (the same entries, under another name).
//!
//! Only onto a free name in an existing directory: a target that exists is refused
//! ([`StoreError::IsDirectory`] or [`StoreError::NotADirectory`]), so nothing is replaced as a
//! side effect (the caller deletes what it means to replace first), and a target inside the
//! source is refused ([`StoreError::IsDirectory`]) before the kernel would (`EINVAL`). Commits create their directories under the same lock, so an
//! upload into the moved tree commits either before the move (and moves with it) or after
//! (under the old path, made again).

use super::{LocalStore, parent_of, stat};
use crate::sys::{self, EntryKind};
use crate::{StoreError, StorePath};

impl LocalStore {
    /// Moves the directory `from` to `to` (see the module doc). [`StoreError::NotFound`] if
    /// `from` is not there or `to`'s parent is missing, [`StoreError::NotADirectory`] for a
    /// file at `from`, [`StoreError::SymlinkRefused`] for a link.
    pub fn rename_dir(&self, from: &StorePath, to: &StorePath) -> Result<(), StoreError> {
        let (a, b) = (from.as_str(), to.as_str());
        if a == b || (b.starts_with(a) && b.as_bytes().get(a.len()) == Some(&b'/')) {
            return Err(StoreError::IsDirectory);
        }
        let shared = &self.shared;
        let from_resolved = shared.resolve(parent_of(from))?;
        let from_dir = from_resolved.get(shared);
        let to_resolved = shared.resolve(parent_of(to))?;
        let to_dir = to_resolved.get(shared);
        {
            let _guard = shared.lock_commits();
            match stat(from_dir, from.file_name())? {
                None => return Err(StoreError::NotFound),
                Some(m) => match m.kind {
                    EntryKind::Dir => {}
                    EntryKind::File => return Err(StoreError::NotADirectory),
                    EntryKind::Symlink => return Err(StoreError::SymlinkRefused),
                    EntryKind::Other => return Err(StoreError::NotFound),
                },
            }
            match stat(to_dir, to.file_name())? {
                None => {}
                Some(m) if m.kind == EntryKind::Dir => return Err(StoreError::IsDirectory),
                Some(_) => return Err(StoreError::NotADirectory),
            }
            from_dir
                .rename(from.file_name(), to_dir, to.file_name())
                .map_err(|e| StoreError::from_io("rename directory", e))?;
        }
        let sync = |dir: &sys::DirHandle| {
            dir.sync()
                .map_err(|e| StoreError::from_io("sync directory", e))
        };
        sync(to_dir)?;
        sync(from_dir)
    }
}

#[cfg(test)]
mod tests {
    use crate::testutil::{p, store};
    use crate::{StoreError, UploadOptions};

    #[test]
    fn a_directory_moves_whole_onto_a_free_name_only() {
        let (_dir, store) = store();
        for path in ["a/x", "a/b/y"] {
            let mut u = store.begin(&p(path), UploadOptions::default()).unwrap();
            u.write(path.as_bytes()).unwrap();
            u.commit().unwrap();
        }
        assert!(store.create_dir(&p("c")).unwrap());
        assert!(matches!(
            store.rename_dir(&p("a"), &p("c")),
            Err(StoreError::IsDirectory)
        ));
        assert!(matches!(
            store.rename_dir(&p("a"), &p("a/b/z")),
            Err(StoreError::IsDirectory)
        ));
        assert!(matches!(
            store.rename_dir(&p("a/x"), &p("d")),
            Err(StoreError::NotADirectory)
        ));
        assert!(matches!(
            store.rename_dir(&p("nope"), &p("d")),
            Err(StoreError::NotFound)
        ));
        assert!(matches!(
            store.rename_dir(&p("a"), &p("no/d")),
            Err(StoreError::NotFound)
        ));
        let used = store.usage();
        store.rename_dir(&p("a"), &p("c/d")).unwrap();
        assert_eq!(store.usage(), used, "the same entries under another name");
        assert!(matches!(
            store.open_file(&p("a/x")),
            Err(StoreError::NotFound)
        ));
        let (_, meta) = store.open_file(&p("c/d/b/y")).unwrap();
        assert_eq!(meta.size, 5);
    }
}
