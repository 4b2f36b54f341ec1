//! Starting an upload: a new temporary in the staging area ([`Upload::begin`]), the quota it
//! holds from the start, and the state every way of starting one shares (`opened`; the others
//! are `adopt.rs` and `in_place.rs`).

use super::*;

impl Upload {
    pub(crate) fn begin(
        shared: Arc<Shared>,
        path: &StorePath,
        mut options: UploadOptions,
    ) -> Result<Upload, StoreError> {
        let reserved = reserve_declared(&shared, options.expected_len)?;
        let prepared = (|| {
            // Refuse now what the rename would refuse (or silently do) at commit, before the
            // client sends its body; create nothing in the tree yet.
            check_target(&shared, path)?;
            create_temp(&shared.staging)
        })();
        let temp = match prepared {
            Ok(p) => p,
            Err(e) => {
                shared.usage.release(reserved.saturating_add(ENTRY_COST));
                return Err(e);
            }
        };
        let object_meta = options.object_meta.take();
        let mut upload = Upload::opened(shared, path, temp, reserved, options);
        if let Some(meta) = object_meta.filter(|m| !m.is_empty()) {
            upload.write_object_meta(&meta)?;
        }
        Ok(upload)
    }

    /// An open upload of `temp` (`file`, in the staging area) with nothing written yet,
    /// `reserved` bytes held (and an entry), hashing what `options` asks for: what every way
    /// of starting one ([`Upload::begin`], `in_place`, `adopt`) starts from.
    pub(super) fn opened(
        shared: Arc<Shared>,
        path: &StorePath,
        (temp, file): (String, File),
        reserved: u64,
        options: UploadOptions,
    ) -> Upload {
        let expected_digest = options.expected_digest.unwrap_or_default();
        let want_sha256 = options.hash || expected_digest.sha256.is_some();
        let want_sha512 = expected_digest.sha512.is_some();
        let hash = hash_track(&shared, Hashers::new(want_sha256, want_sha512));
        Upload {
            shared,
            path: path.clone(),
            temp,
            base: 0,
            in_place: false,
            file: Some(file),
            state: State::Open,
            size: 0,
            reserved,
            preallocating: false,
            expected_len: options.expected_len,
            expected_digest,
            want_sha256,
            want_sha512,
            hash,
            supplied: None,
            flushed: 0,
            keep_on_drop: None,
            client_modified: None,
            media_type: Some(false),
            pace: None,
        }
    }
}

/// Holds the quota an upload of `declared` bytes needs to start (see [`Upload::begin`]): a
/// declared length that cannot fit is refused now, before the client sends its body; only a
/// window of it is held (`quota::reserved_end`), so that a client declaring much and sending
/// little holds nothing others need; and an entry, which the file will be. Returns the bytes
/// held (the entry besides).
pub(super) fn reserve_declared(shared: &Shared, declared: Option<u64>) -> Result<u64, StoreError> {
    let declared = declared.unwrap_or(0);
    shared.usage.fits(declared.saturating_add(ENTRY_COST))?;
    let reserved = reserved_end(0, declared);
    shared.usage.reserve(reserved.saturating_add(ENTRY_COST))?;
    Ok(reserved)
}

/// The hash state of an upload hashing with `hashers` (behind the store's fault gate in tests).
pub(super) fn hash_track(shared: &Shared, hashers: Hashers) -> HashTrack {
    #[cfg(any(test, feature = "fault-injection"))]
    return HashTrack::new(hashers, shared.faults.gate());
    #[cfg(not(any(test, feature = "fault-injection")))]
    {
        let _ = shared;
        HashTrack::new(hashers)
    }
}
