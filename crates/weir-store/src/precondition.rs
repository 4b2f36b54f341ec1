//! Conditional commits and deletes: the caller's check of the version now at the target, run
//! under the store's commit lock, between the `fstatat` of the target and the `renameat` over
//! it (or the `unlinkat` of it), relative to the descriptor of the target's directory that the
//! rename or unlink then uses: the version checked is the one replaced or removed. A
//! multi-file commit ([`LocalStore::commit_all_if`](crate::LocalStore::commit_all_if)) checks
//! every target this way before its first rename, so a refusal stores nothing.
//!
//! Checked there, "the target is still the version the client named" and "replace it" are one
//! step: of two uploads that both require that nothing exists yet, exactly one commits; a
//! delete that names a version removes that version or nothing. The store knows nothing of
//! HTTP: the check sees a [`FileMeta`] (size, modification time, stored SHA-256 — everything a
//! validator is made of) and says yes or no; no is [`StoreError::PreconditionFailed`], and the
//! upload is discarded (or nothing is deleted).

use crate::error::StoreError;
use crate::meta::FileMeta;
use crate::sys::{self, DirHandle, EntryKind, EntryStat};
use std::fs::File;

/// A check of the current version at a target (`None`: no file there).
pub(crate) type Check<'a> = &'a mut dyn FnMut(Option<&FileMeta>) -> bool;

/// A check of the current version at each target of a multi-file commit: the target's path,
/// and its version (`None`: no file there).
pub(crate) type BatchCheck<'a> = &'a mut dyn FnMut(&crate::StorePath, Option<&FileMeta>) -> bool;

/// Runs `check` (if any) on the version at `name` in `dir`, whose `fstatat` was `previous`.
/// Call with the commit lock held.
pub(crate) fn check(
    dir: &DirHandle,
    name: &str,
    previous: Option<&EntryStat>,
    check: Option<Check<'_>>,
) -> Result<(), StoreError> {
    let Some(check) = check else {
        return Ok(());
    };
    let current = match previous {
        Some(m) if m.kind == EntryKind::File => current_version(dir, name)?,
        _ => None,
    };
    if check(current.as_ref()) {
        Ok(())
    } else {
        Err(StoreError::PreconditionFailed)
    }
}

/// The metadata of the file `name` in `dir`, as [`LocalStore::open_file`](crate::LocalStore)
/// reports it (so that validators computed from either agree): opened relative to the
/// directory's descriptor (`openat(O_NOFOLLOW)`), the stored SHA-256 read from the open file.
fn current_version(dir: &DirHandle, name: &str) -> Result<Option<FileMeta>, StoreError> {
    match dir.open_read(name) {
        Ok(file) => file_meta(&file).map(Some),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) if sys::is_symlink_error(&e) => Err(StoreError::SymlinkRefused),
        Err(e) => Err(StoreError::from_io("open file", e)),
    }
}

/// An open file's metadata, as [`LocalStore::open_file`](crate::LocalStore) reports it.
pub(crate) fn file_meta(file: &File) -> Result<FileMeta, StoreError> {
    let meta = file
        .metadata()
        .map_err(|e| StoreError::from_io("stat file", e))?;
    let modified = meta
        .modified()
        .map_err(|e| StoreError::from_io("read modification time", e))?;
    Ok(FileMeta {
        size: meta.len(),
        modified,
        sha256: sys::read_digest(file, &meta).sha256,
    })
}

#[cfg(test)]
mod tests {
    use crate::testutil::{p, read, store, temps};
    use crate::{StoreError, UploadOptions};

    #[test]
    fn a_refused_commit_or_delete_changes_nothing() {
        let (_dir, store) = store();
        let put = |body: &[u8], check: &mut dyn FnMut(Option<&crate::FileMeta>) -> bool| {
            let mut up = store.begin(&p("d/f"), UploadOptions::default()).unwrap();
            up.write(body).unwrap();
            up.commit_if(check)
        };
        // Create-only: holds while nothing is there, then refuses.
        let mut seen = Vec::new();
        let mut absent = |m: Option<&crate::FileMeta>| {
            seen.push(m.copied());
            m.is_none()
        };
        let first = put(b"first", &mut absent).unwrap();
        assert!(matches!(
            put(b"second", &mut absent),
            Err(StoreError::PreconditionFailed)
        ));
        assert_eq!(read(&store, "d/f"), b"first");
        assert!(temps(store.root()).is_empty());
        assert_eq!(store.usage(), 5 + 2 * crate::ENTRY_COST, "d/f and d");
        // The check saw what `open_file` reports.
        let (_, meta) = store.open_file(&p("d/f")).unwrap();
        assert_eq!(seen, [None, Some(meta)]);
        assert_eq!(meta, first.stored);

        assert!(matches!(
            store.delete_if(&p("d/f"), |_| false),
            Err(StoreError::PreconditionFailed)
        ));
        assert_eq!(read(&store, "d/f"), b"first");
        store.delete_if(&p("d/f"), |m| m == Some(&meta)).unwrap();
        assert!(matches!(
            store.open_file(&p("d/f")),
            Err(StoreError::NotFound)
        ));
        assert_eq!(store.usage(), crate::ENTRY_COST, "d stays");
    }

    /// Uploads of `(path, body)`, written and parked, not committed.
    fn staged(store: &crate::LocalStore, files: &[(&str, &[u8])]) -> Vec<crate::Upload> {
        files
            .iter()
            .map(|(path, body)| {
                let mut up = store.begin(&p(path), UploadOptions::default()).unwrap();
                up.write(body).unwrap();
                up.park().unwrap();
                up
            })
            .collect()
    }

    #[test]
    fn a_batch_refused_for_any_file_stores_none_and_marks_shared_seconds() {
        use std::time::{Duration, SystemTime};
        let (_dir, store) = store();
        let mut up = store.begin(&p("b"), UploadOptions::default()).unwrap();
        up.write(b"old").unwrap();
        up.commit().unwrap();
        // The stored version is dated later than any new one: its successor must take that
        // second, marked as shared.
        let later = SystemTime::now() + Duration::from_secs(100);
        std::fs::File::options()
            .write(true)
            .open(store.root().join("b"))
            .unwrap()
            .set_modified(later)
            .unwrap();
        let files: &[(&str, &[u8])] = &[("a", b"1"), ("b", b"2"), ("c/d", b"3")];

        // Create-only for every file: `b` exists, so none is stored, not even `a`.
        let mut seen = Vec::new();
        let refused = store.commit_all_if(staged(&store, files), |path, current| {
            seen.push(path.as_str().to_owned());
            current.is_none()
        });
        assert!(matches!(refused, Err(StoreError::PreconditionFailed)));
        assert_eq!(seen, ["a", "b"], "checked in order, up to the refusal");
        assert!(matches!(
            store.open_file(&p("a")),
            Err(StoreError::NotFound)
        ));
        assert!(matches!(
            store.open_file(&p("c/d")),
            Err(StoreError::NotFound)
        ));
        assert!(!store.root().join("c").exists(), "no directory made");
        assert_eq!(read(&store, "b"), b"old");
        assert!(temps(store.root()).is_empty());
        assert_eq!(store.usage(), 3 + crate::ENTRY_COST);

        // Accepted for every file: all stored, each reported as `open_file` reports it.
        let done = store
            .commit_all_if(staged(&store, files), |path, current| {
                current.is_none() || path.as_str() == "b"
            })
            .unwrap();
        for ((path, body), committed) in files.iter().zip(&done) {
            assert_eq!(read(&store, path), *body);
            let (_, meta) = store.open_file(&p(path)).unwrap();
            assert_eq!(meta, committed.stored, "{path}");
        }
        let b = done[1].stored;
        let second = |t: SystemTime| t.duration_since(SystemTime::UNIX_EPOCH).unwrap().as_secs();
        assert_eq!(second(b.modified), second(later));
        assert!(b.date_shared() && !done[0].stored.date_shared());
        assert_eq!(b.sha256, Some(crate::testutil::sha256(b"2")), "re-recorded");
    }
}
