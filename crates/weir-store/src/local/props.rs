//! Dead properties of a file or directory ([`LocalStore::props`], [`LocalStore::set_props`]):
//! WebDAV's `PROPPATCH`, kept in the extended attribute `user.weir.props` of the file or
//! directory itself. So they go with it: a rename (a file's or a folder's `MOVE`) keeps them,
//! a delete removes them, and a new upload to the path (a new file) starts without them. The
//! value is opaque here (the service's encoding), at most [`MAX_PROPS`] bytes (ext4 keeps all
//! of a file's xattrs in one 4 KiB block). Written with `fsetxattr` and made durable with an
//! `fsync` of the file or directory before the call returns. A filesystem without user
//! xattrs refuses to keep them ([`StoreError::NoSpace`]: nothing was recorded).

use super::LocalStore;
use crate::{MAX_PROPS, StoreError, StorePath, sys};

impl LocalStore {
    /// The dead properties of the file or directory at `path`; `Ok(None)`: none kept.
    /// [`StoreError::NotFound`] if nothing is there.
    pub fn props(&self, path: &StorePath) -> Result<Option<Vec<u8>>, StoreError> {
        let read = match self.open_file(path) {
            Ok((file, _)) => sys::read_props(&*file),
            Err(StoreError::IsDirectory) => {
                let resolved = self.shared.resolve(path.as_str())?;
                sys::read_props(resolved.get(&self.shared))
            }
            Err(e) => return Err(e),
        };
        read.map_err(|e| StoreError::from_io("read properties", e))
    }

    /// Replaces the dead properties of the file or directory at `path` (`None`: removes
    /// them), durably. More than [`MAX_PROPS`] bytes, or a filesystem that keeps no user
    /// xattrs: [`StoreError::NoSpace`], nothing changed.
    pub fn set_props(&self, path: &StorePath, value: Option<&[u8]>) -> Result<(), StoreError> {
        if value.is_some_and(|v| v.len() > MAX_PROPS) {
            return Err(StoreError::NoSpace);
        }
        use std::io::ErrorKind::{ArgumentListTooLong, StorageFull, Unsupported};
        let no_room = |e: std::io::Error| match e.kind() {
            // No user xattrs here (EOPNOTSUPP), or no room for them (ENOSPC, E2BIG).
            Unsupported | StorageFull | ArgumentListTooLong => StoreError::NoSpace,
            _ => StoreError::from_io("write properties", e),
        };
        match self.open_file(path) {
            Ok((file, _)) => {
                sys::write_props(&*file, value).map_err(no_room)?;
                file.sync_all()
                    .map_err(|e| StoreError::from_io("sync properties", e))
            }
            Err(StoreError::IsDirectory) => {
                let resolved = self.shared.resolve(path.as_str())?;
                let dir = resolved.get(&self.shared);
                sys::write_props(dir, value).map_err(no_room)?;
                dir.sync()
                    .map_err(|e| StoreError::from_io("sync properties", e))
            }
            Err(e) => Err(e),
        }
    }
}

impl LocalStore {
    /// Gives the file at `path` the modification time a client names (WebDAV's `PROPPATCH`
    /// of ownCloud's `lastmodified`), as a commit's `set_modified` does: its whole second,
    /// marked as a weak date validator (`version_date::client_time`), the SHA-256 record kept
    /// valid for it, `fsync`ed. The open file is the version changed: one that a commit
    /// replaces meanwhile is not touched. A directory: [`StoreError::IsDirectory`].
    pub fn set_modified(
        &self,
        path: &StorePath,
        client: std::time::SystemTime,
    ) -> Result<(), StoreError> {
        let (file, meta, media_type) = self.open_file_hinted(path)?;
        let marked = crate::version_date::client_time(client, Some(meta.modified));
        crate::version_date::apply(&file, marked, meta.sha256.as_ref(), media_type)?;
        file.sync_all()
            .map_err(|e| StoreError::from_io("sync modification time", e))
    }
}

#[cfg(test)]
mod tests {
    use crate::testutil::{p, store};
    use crate::{MAX_PROPS, StoreError, UploadOptions};

    #[test]
    fn properties_stay_with_files_and_folders() {
        let (_dir, store) = store();
        let mut u = store.begin(&p("a/f"), UploadOptions::default()).unwrap();
        u.write(b"x").unwrap();
        u.commit().unwrap();
        assert_eq!(store.props(&p("a/f")).unwrap(), None);
        if store.set_props(&p("a/f"), Some(b"<p/>")).is_err() {
            eprintln!("skipped: the test directory's filesystem keeps no user xattrs");
            return;
        }
        store.set_props(&p("a"), Some(b"<d/>")).unwrap();
        assert_eq!(
            store.props(&p("a/f")).unwrap().as_deref(),
            Some(&b"<p/>"[..])
        );
        store.rename_dir(&p("a"), &p("b")).unwrap();
        assert_eq!(store.props(&p("b")).unwrap().as_deref(), Some(&b"<d/>"[..]));
        assert_eq!(
            store.props(&p("b/f")).unwrap().as_deref(),
            Some(&b"<p/>"[..])
        );
        store.set_props(&p("b/f"), None).unwrap();
        assert_eq!(store.props(&p("b/f")).unwrap(), None);
        let big = vec![b'x'; MAX_PROPS + 1];
        assert!(matches!(
            store.set_props(&p("b"), Some(&big)),
            Err(StoreError::NoSpace)
        ));
        assert!(matches!(store.props(&p("nope")), Err(StoreError::NotFound)));
    }
}
