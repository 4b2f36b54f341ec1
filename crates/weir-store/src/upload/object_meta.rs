//! An upload's S3 metadata (`ObjectMeta`), kept on its temporary file as an xattr: written at
//! begin (`UploadOptions::object_meta`) and, for a checksum known only after the body, before
//! the commit; the rename makes it the object's with its bytes, never after them.

use super::Upload;
use crate::error::StoreError;
use crate::object_meta::ObjectMeta;
use crate::sys;

impl Upload {
    /// Records `meta` (replacing what was) on the temporary file, which the commit renames with
    /// it. A failure discards the upload: the object cannot be kept whole.
    pub(crate) fn write_object_meta(&mut self, meta: &ObjectMeta) -> Result<(), StoreError> {
        let written = self
            .open_file()
            .and_then(|file| sys::write_object_meta(file, &meta.encode()));
        written.map_err(|e| {
            // No user xattrs here (EOPNOTSUPP), or no room (ENOSPC, E2BIG), as `set_props`
            // answers.
            use std::io::ErrorKind::{ArgumentListTooLong, StorageFull, Unsupported};
            let err = match e.kind() {
                Unsupported | StorageFull | ArgumentListTooLong => StoreError::NoSpace,
                _ => StoreError::from_io("write metadata", e),
            };
            self.discard_file(err)
        })
    }

    /// Keeps a checksum known only after the body (S3's in a trailer) with the object's S3
    /// metadata, as [`ObjectMeta::set_checksum`] (see `StoreUpload::keep_checksum`).
    pub fn keep_checksum(
        &mut self,
        algorithm: &str,
        kind: &str,
        value: &str,
    ) -> Result<(), StoreError> {
        let stored = self
            .open_file()
            .and_then(|file| sys::read_object_meta(file))
            .map_err(|e| StoreError::from_io("read metadata", e))?;
        let mut meta = stored
            .and_then(|s| ObjectMeta::decode(&s))
            .unwrap_or_default();
        meta.set_checksum(algorithm, kind, value)?;
        self.write_object_meta(&meta)
    }
}
