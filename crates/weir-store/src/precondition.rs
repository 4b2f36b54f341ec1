//! Conditional commits and deletes: the caller's check of the version now at the target, run
//! under the store's commit lock, between the `lstat` of the target and the `rename` over it
//! (or the `unlink` of it).
//!
//! Checked there, "the target is still the version the client named" and "replace it" are one
//! step: of two uploads that both require that nothing exists yet, exactly one commits; a
//! delete that names a version removes that version or nothing. The store knows nothing of
//! HTTP: the check sees a [`FileMeta`] (size, modification time, stored SHA-256 — everything a
//! validator is made of) and says yes or no; no is [`StoreError::PreconditionFailed`], and the
//! upload is discarded (or nothing is deleted).

use crate::error::StoreError;
use crate::local::FileMeta;
use crate::sys;
use std::fs::{File, Metadata, OpenOptions};
use std::io;
use std::path::Path;

/// A check of the current version at a target (`None`: no file there).
pub(crate) type Check<'a> = &'a mut dyn FnMut(Option<&FileMeta>) -> bool;

/// Runs `check` (if any) on the version at `target`, whose `lstat` was `previous`. Call with
/// the commit lock held.
pub(crate) fn check(
    target: &Path,
    previous: Option<&Metadata>,
    check: Option<Check<'_>>,
) -> Result<(), StoreError> {
    let Some(check) = check else {
        return Ok(());
    };
    let current = match previous {
        Some(m) if m.is_file() => current_version(target)?,
        _ => None,
    };
    if check(current.as_ref()) {
        Ok(())
    } else {
        Err(StoreError::PreconditionFailed)
    }
}

/// The metadata of the file at `target`, as [`LocalStore::open_file`](crate::LocalStore)
/// reports it (so that validators computed from either agree).
fn current_version(target: &Path) -> Result<Option<FileMeta>, StoreError> {
    let mut opts = OpenOptions::new();
    opts.read(true);
    sys::add_nofollow(&mut opts, true);
    match opts.open(target) {
        Ok(file) => file_meta(&file).map(Some),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
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
        sha256: sys::read_digest(file, &meta),
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
        assert_eq!(store.usage(), 5);
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
        assert_eq!(store.usage(), 0);
    }
}
