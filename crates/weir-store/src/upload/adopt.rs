//! Taking over a file already in the staging area as an upload's temporary: a resumable
//! upload's data (`resumable.rs`), or a multipart upload's own file whose parts are the object
//! (`multipart/local/in_place.rs`).

use super::begin::hash_track;
use super::*;

impl Upload {
    /// Takes over a file already in the staging area (`temp`, relative to it, `size` bytes
    /// long and already charged to the quota with its entry) as this upload's temporary: a
    /// resumable upload's data (`resumable.rs`). Dropped while open it stays (an error still
    /// removes it, as commit does). An empty file is hashed while written, as by
    /// [`Upload::begin`]: an upload sent whole in one request needs no read back. A file whose
    /// SHA-256 state up to `size` was kept (`sha256`, of exactly `size` bytes) goes on hashing
    /// from it, when SHA-256 is the only digest wanted. Otherwise nothing is hashed while
    /// writing and commit reads the whole file back when it needs a digest. Either way the
    /// digest covers every byte however many requests wrote them.
    pub(crate) fn adopt(
        shared: Arc<Shared>,
        path: &StorePath,
        temp: String,
        (file, size): (File, u64),
        sha256: Option<ResumableSha256>,
        options: UploadOptions,
    ) -> Upload {
        // Metadata is written on the file itself (`write_object_meta`), not taken here: none to
        // lose.
        debug_assert!(options.object_meta.is_none());
        let mut upload = Upload::opened(shared, path, (temp, file), size, options);
        let (want_sha256, want_sha512) = (upload.want_sha256, upload.want_sha512);
        let hashers = match sha256 {
            _ if size == 0 => Hashers::new(want_sha256, want_sha512),
            Some(state) if want_sha256 && !want_sha512 && state.len() == size => {
                Hashers::resumed(state)
            }
            _ => Hashers::new(false, false),
        };
        upload.hash = hash_track(&upload.shared, hashers).from(size);
        upload.size = size;
        upload.flushed = size;
        upload.keep_on_drop = Some(size);
        upload.media_type = None;
        upload
    }
}
