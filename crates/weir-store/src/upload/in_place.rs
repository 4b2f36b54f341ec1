//! An upload into a range of a shared file: a multipart part written in place, at the offset
//! it will have in the object (`multipart/local/in_place.rs`). The rest of [`Upload`] works as
//! for any upload, shifted by `base`: the file's position, writeback, preallocation, the
//! length check at the seal; its end differs (no rename at the seal, a hole instead of an
//! unlink when it fails).

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
    ) -> Result<Upload, StoreError> {
        let declared = expected_len.unwrap_or(0);
        shared.usage.fits(declared.saturating_add(ENTRY_COST))?;
        let reserved = reserved_end(0, declared);
        shared.usage.reserve(reserved.saturating_add(ENTRY_COST))?;
        if let Err(e) = file.seek(SeekFrom::Start(base)) {
            shared.usage.release(reserved.saturating_add(ENTRY_COST));
            return Err(StoreError::from_io("seek", e));
        }
        #[cfg(any(test, feature = "fault-injection"))]
        let hash = HashTrack::new(Hashers::new(false, false), shared.faults.gate());
        #[cfg(not(any(test, feature = "fault-injection")))]
        let hash = HashTrack::new(Hashers::new(false, false));
        Ok(Upload {
            shared,
            path: path.clone(),
            temp,
            base,
            in_place: true,
            file: Some(file),
            state: State::Open,
            size: 0,
            reserved,
            preallocating: false,
            expected_len,
            expected_digest: ContentDigest::default(),
            want_sha256: false,
            want_sha512: false,
            hash,
            supplied: None,
            flushed: 0,
            keep_on_drop: None,
            client_modified: None,
            media_type: Some(false),
        })
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
