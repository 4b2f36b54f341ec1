//! An upload into a range of a shared file: a multipart part written in place, at the offset
//! it will have in the object (`multipart/local/in_place.rs`). The rest of [`Upload`] works as
//! for any upload, shifted by `base`: the file's position, writeback, preallocation, the
//! length check at the seal; its end differs (no rename at the seal, a hole instead of an
//! unlink when it fails).

use super::begin::reserve_declared;
use super::*;

impl Upload {
    /// An upload into `file[base..]`, a range of a file others write too (a multipart upload's
    /// file, whose parts are written in place: `multipart/local.rs`), `temp` its name relative
    /// to the staging area. Reserved against the quota as [`Upload::begin`] reserves (the
    /// bytes, and an entry, which the part's record keeps); ends only by
    /// [`Upload::seal_into`], which syncs and leaves it where it is; dropped or failed, its
    /// range is punched out (`sys::punch_hole`) and the file stays. Bytes go at the file's
    /// position, as for any upload: `file` is positioned at `base` here.
    pub(crate) fn in_place(
        shared: Arc<Shared>,
        path: &StorePath,
        (temp, mut file, base): (String, File, u64),
        expected_len: Option<u64>,
        pace: PartPace,
    ) -> Result<Upload, StoreError> {
        let reserved = reserve_declared(&shared, expected_len)?;
        if let Err(e) = file.seek(SeekFrom::Start(base)) {
            shared.usage.release(reserved.saturating_add(ENTRY_COST));
            return Err(StoreError::from_io("seek", e));
        }
        // Never hashed here: the part's tag is the route's or read back, the object's digest
        // its completion's.
        let options = UploadOptions {
            hash: false,
            expected_digest: None,
            expected_len,
            object_meta: None,
        };
        let mut upload = Upload::opened(shared, path, (temp, file), reserved, options);
        upload.base = base;
        upload.in_place = true;
        upload.pace = Some(pace);
        Ok(upload)
    }

    /// Before a body's loop moves the next piece of it into the file itself (the splice path):
    /// a part in place reports `at_hand` (`weir::Exchange::body_at_hand`) and may wait for
    /// the other parts of its upload (`multipart/pace.rs`); any other upload goes on at once.
    pub async fn before_piece(&self, at_hand: u64) {
        if let Some(pace) = &self.pace {
            pace.before_piece(at_hand, self.size).await;
        }
    }

    /// The body's loop has moved the whole body (see [`Upload::before_piece`]).
    pub fn body_ended(&self) {
        if let Some(pace) = &self.pace {
            pace.ended();
        }
    }

    /// Whether this upload writes a range of a shared file ([`Upload::in_place`]).
    pub(crate) fn is_in_place(&self) -> bool {
        self.in_place
    }

    /// Where this upload's bytes start in its file: 0, or a part's place in its multipart
    /// upload's file ([`Upload::in_place`]).
    pub(crate) fn base(&self) -> u64 {
        self.base
    }
}
