//! The interface of resumable uploads: what a protocol route (`weir serve`'s tus) needs from a
//! store of uploads that outlive their requests, whatever keeps them — the local store's
//! staging area ([`Resumables`]) or an S3-compatible bucket (`S3Resumables`, feature `s3`).
//!
//! | operation | meaning |
//! | --- | --- |
//! | [`ResumableStore::parse_id`] | an upload's id from a request's path |
//! | [`ResumableStore::create`] ([`ResumableCreation`]) | a new upload at offset 0: target, length if known, digest, metadata, the creating request's preconditions |
//! | [`ResumableStore::state`] | the recorded state ([`UploadState`]), `None` if there is no such upload |
//! | [`ResumableStore::settled_state`] | the state once no append runs (waiting for one, at most [`SETTLE_WAIT`]): an offset the next append accepts |
//! | [`ResumableStore::append`] → [`ResumableAppend`] | one request's bytes: only one append per upload at a time ([`ResumableError::Busy`]) |
//! | [`ResumableAppend::write`] | body bytes; returns when the store can take more (backpressure) |
//! | [`ResumableAppend::hold`], [`ResumableAppend::request_sha256`], [`ResumableAppend::discard`] | the request's bytes checked before any is recorded (tus's `checksum`), taken back on a mismatch |
//! | [`ResumableAppend::finish`] ([`ResumableEnd`]) | the end of the request: recorded, or the upload completed (stored at its target) |
//! | [`ResumableStore::cancel`] | the upload removed |
//! | [`ResumableStore::expires_at`], [`ResumableStore::max_age`] | when an incomplete upload goes unless appended to |
//!
//! The futures are `Send`, as [`Store`](crate::Store)'s, and a route is generic over the store
//! (static dispatch: an append's writes are on the body's path).
//!
//! # Local powers
//! The local store can do more than take bytes: its append is a file, which a route fills
//! itself with `splice` or direct reads, hashing on another thread and checkpointing beside
//! the writes (weir-cli's `upload.rs` and `resumable/checkpoints.rs`). That is a capability a
//! route asks the append for, [`ResumableAppend::file`]: `Some` (a [`LocalAppend`]: its
//! [`Appending`] and [`Upload`]) from the local store, `None` from a store that only takes
//! bytes through [`ResumableAppend::write`]. A route that gets a file writes the body into it
//! and then ends the append through this interface as any other ([`ResumableAppend::finish`],
//! [`ResumableAppend::discard`]); a route never asks which store it has.
//!
//! # Where the stores differ
//! - Ids: the local store's are [`UploadId`]s (a path that is not one names no upload);
//!   `S3Resumables` takes any text and answers an id that names no upload as unknown.
//! - [`ResumableStore::JUDGES_CONFINED_FIRST`]: whether a route judges a caller confined to
//!   a prefix on the upload's target before anything else of the request (`S3Resumables`:
//!   an unknown upload is then a 404 at once, a failure to read it the store's error), or lets
//!   an upload it cannot read go on to the route's own answers (the local store).
//! - A held request (tus's `checksum`): locally it is not checkpointed while it runs and its
//!   SHA-256 is read back from the file ([`Appending::written_sha256`]); in a bucket its parts
//!   are recorded only at its end (`S3Append::hold_records`) and hashed as they pass.
//! - [`ResumableAppend::discard`] can fail locally (the cut of the data file); in a bucket it
//!   cannot (the manifest is left as it is).

use crate::{
    Appending, Committed, ContentDigest, MediaType, ResumableError, ResumableState, Resumables,
    StoreError, StorePath, Upload, UploadId, VersionCheck,
};
use std::fmt;
use std::future::Future;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// The longest [`ResumableStore::settled_state`] waits for an append in progress to end.
pub const SETTLE_WAIT: Duration = Duration::from_secs(10);

/// How often the local store's settled state looks again while an append runs.
const SETTLE_POLL: Duration = Duration::from_millis(5);

/// What a new upload records besides its target ([`ResumableStore::create`]).
#[derive(Clone, Copy, Debug, Default)]
pub struct ResumableCreation<'a> {
    /// The upload's length, when declared.
    pub length: Option<u64>,
    /// The digest the whole upload must match at completion.
    pub digest: Option<&'a ContentDigest>,
    /// The media type the stored file gets (`S3Resumables`; the local store sets its type at
    /// completion, from the caller).
    pub media_type: Option<&'a MediaType>,
    /// The client's own description, kept verbatim (tus's `Upload-Metadata`; one line).
    pub metadata: Option<&'a str>,
    /// The creating request's preconditions, evaluated again at completion.
    pub condition: &'a [(String, String)],
    /// Compute the SHA-256 (the local store's `--no-hash` turns it off; a bucket's uploads
    /// always hash: the state is what lets any node continue).
    pub hash: bool,
}

/// An upload's recorded state, as a route answers it.
pub trait UploadState: Send + Sync {
    /// Where the file goes at completion.
    fn target(&self) -> &StorePath;
    /// Bytes recorded: what `Upload-Offset` reports.
    fn offset(&self) -> u64;
    /// The declared length, once known.
    fn length(&self) -> Option<u64>;
    /// The upload was completed (its file stored).
    fn complete(&self) -> bool;
    /// The client's own description given at creation, verbatim.
    fn metadata(&self) -> Option<&str>;
    /// The digest of the whole upload given at creation (`Repr-Digest`), as its header value.
    fn expected_digest(&self) -> Option<&str>;
    /// The creating request's preconditions, judged again at completion.
    fn condition(&self) -> &[(String, String)];
}

/// How an append ended ([`ResumableAppend::finish`]).
#[derive(Debug)]
pub enum ResumableEnd<S> {
    /// Still incomplete, at this recorded state.
    Incomplete(S),
    /// Completed: the file is stored at the upload's target.
    Completed(Committed),
}

/// A store of resumable uploads (see the module doc).
pub trait ResumableStore: Send + Sync + 'static {
    /// An upload's id, as its URL names it.
    type Id: fmt::Display + Send + Sync;
    /// An upload's recorded state.
    type State: UploadState;
    /// One request's append.
    type Append: ResumableAppend<State = Self::State>;

    /// See "Where the stores differ" in the module doc.
    const JUDGES_CONFINED_FIRST: bool;
    /// The store sets [`ResumableCreation::media_type`] on the stored file itself
    /// (`S3Resumables`); else (the local store) a route keeps the type in the metadata
    /// (`filetype`) and sets it on the file through [`ResumableAppend::file`].
    const KEEPS_MEDIA_TYPE: bool;
    /// A digest of the whole upload can be checked as `sha-256` only (`S3Resumables`: the
    /// manifest keeps that hash state alone).
    const DIGEST_SHA256_ONLY: bool;
    /// A route leaves the client's offset to [`ResumableStore::append`] (judged there under
    /// the upload's lease, after the route's length checks: `S3Resumables`) rather than
    /// comparing it with the recorded state first (the local store).
    const OFFSET_JUDGED_AT_APPEND: bool;
    /// The answer to the request that completes an upload carries the stored file's `ETag`
    /// (`S3Resumables`; the local store's does not).
    const ETAG_AT_COMPLETION: bool;

    /// The id named by `text` (the last segment of an upload's URL); `None`: no upload can
    /// have it.
    fn parse_id(&self, text: &str) -> Option<Self::Id>;

    /// Creates an upload of `target` at offset 0. A declared length that cannot fit the quota
    /// fails now ([`StoreError::QuotaExceeded`]); metadata with a line break, or a condition
    /// that cannot be recorded, is [`StoreError::Discarded`].
    fn create(
        &self,
        target: &StorePath,
        creation: ResumableCreation<'_>,
    ) -> impl Future<Output = Result<(Self::Id, Self::State), StoreError>> + Send;

    /// The recorded state; `None`: no such upload (never created, cancelled, expired).
    fn state(
        &self,
        id: &Self::Id,
    ) -> impl Future<Output = Result<Option<Self::State>, StoreError>> + Send;

    /// The state once no append runs on the upload (waiting for one to end, at most
    /// [`SETTLE_WAIT`]): an offset the next append accepts. [`ResumableError::Busy`] when one
    /// still runs, [`ResumableError::Unknown`] when there is no such upload.
    fn settled_state(
        &self,
        id: &Self::Id,
    ) -> impl Future<Output = Result<Self::State, ResumableError>> + Send;

    /// Begins an append at `offset` (the client's): the upload must exist, be incomplete, be
    /// free and be at that offset. `length`: one this request declares, recorded if the upload
    /// had none (an inconsistent one is the caller's to refuse first).
    fn append(
        &self,
        id: &Self::Id,
        offset: u64,
        length: Option<u64>,
    ) -> impl Future<Output = Result<Self::Append, ResumableError>> + Send;

    /// Removes the upload and what it holds. [`ResumableError::Unknown`] if there is none.
    fn cancel(&self, id: &Self::Id) -> impl Future<Output = Result<(), ResumableError>> + Send;

    /// How long an incomplete upload lives after its creation or last append.
    fn expiry(&self) -> Duration;

    /// When the upload expires unless appended to.
    fn expires_at(&self, state: &Self::State) -> SystemTime;

    /// Seconds left before it expires.
    fn max_age(&self, state: &Self::State) -> u64;
}

/// One request's append (see the module doc).
pub trait ResumableAppend: Send {
    /// The upload's recorded state.
    type State: UploadState;

    /// The upload's state as recorded when the append began (or since).
    fn state(&self) -> &Self::State;

    /// Bytes of the upload received so far, recorded or not.
    fn received(&self) -> u64;

    /// The append's file, when the store has one (the local store; see "Local powers" in the
    /// module doc): the route writes the body into it itself. `None`: bytes go through
    /// [`ResumableAppend::write`].
    fn file(&mut self) -> Option<&mut LocalAppend> {
        None
    }

    /// Appends body bytes; returns once the store can take more. Returns the offset newly
    /// recorded, when these bytes moved it (for a progress announcement).
    fn write(
        &mut self,
        bytes: &[u8],
    ) -> impl Future<Output = Result<Option<u64>, StoreError>> + Send;

    /// Holds the request: none of its bytes is recorded before its end, and they are hashed
    /// apart ([`ResumableAppend::request_sha256`]), so that all of it can be taken back
    /// ([`ResumableAppend::discard`]). Call it before the first byte.
    fn hold(&mut self);

    /// The SHA-256 of the bytes of a held request; `None` when it is not held, or (locally)
    /// when they could not be read back.
    fn request_sha256(&mut self) -> impl Future<Output = Option<[u8; 32]>> + Send;

    /// Ends the append without recording anything more: the upload stays at its recorded
    /// offset (a held request: none of it recorded).
    fn discard(self) -> impl Future<Output = Result<(), StoreError>> + Send;

    /// Ends the append. `complete`: the upload ends here and is stored at its target (its
    /// length and digests checked); else what arrived is recorded and the upload stays open.
    fn finish(
        self,
        complete: bool,
    ) -> impl Future<Output = Result<ResumableEnd<Self::State>, StoreError>> + Send;

    /// [`ResumableAppend::finish`], where a completion stores the file only if `check` (when
    /// given) accepts the version at the target then (the creating request's preconditions,
    /// [`UploadState::condition`]); refused: [`StoreError::PreconditionFailed`], nothing
    /// stored, the upload removed.
    fn finish_checked(
        self,
        complete: bool,
        check: Option<VersionCheck<'_>>,
    ) -> impl Future<Output = Result<ResumableEnd<Self::State>, StoreError>> + Send;

    /// Adds a digest of the whole upload that the completion must match, known only after the
    /// body (a trailer of the request that completes it). `S3Resumables` refuses a `sha-512`
    /// ([`StoreError::DigestUnavailable`]).
    fn expect_digest(&mut self, digest: ContentDigest) -> Result<(), StoreError>;
}

// ---- Resumables: delegation ----------------------------------------------------------------

/// [`UploadState`] for a state type with the fields of the same names (both stores' states).
macro_rules! upload_state_fields {
    ($state:ty) => {
        impl UploadState for $state {
            fn target(&self) -> &StorePath {
                &self.target
            }
            fn offset(&self) -> u64 {
                self.offset
            }
            fn length(&self) -> Option<u64> {
                self.length
            }
            fn complete(&self) -> bool {
                self.complete
            }
            fn metadata(&self) -> Option<&str> {
                self.metadata.as_deref()
            }
            fn expected_digest(&self) -> Option<&str> {
                self.expected_digest.as_deref()
            }
            fn condition(&self) -> &[(String, String)] {
                &self.condition
            }
        }
    };
}

upload_state_fields!(ResumableState);

/// The local store's append: its record ([`Appending`]) and its data file ([`Upload`]).
/// Both are the caller's to fill (see "Local powers" in the module doc).
#[derive(Debug)]
pub struct LocalAppend {
    /// The upload's record: checkpoints, the end.
    pub appending: Appending,
    /// The data file, positioned at the offset.
    pub upload: Upload,
    /// Held ([`ResumableAppend::hold`]): the caller must not checkpoint while it runs.
    held: bool,
}

impl LocalAppend {
    /// Whether the request is held ([`ResumableAppend::hold`]): it must not be checkpointed.
    pub fn held(&self) -> bool {
        self.held
    }
}

impl ResumableStore for Resumables {
    type Id = UploadId;
    type State = ResumableState;
    type Append = LocalAppend;

    const JUDGES_CONFINED_FIRST: bool = false;
    const KEEPS_MEDIA_TYPE: bool = false;
    const DIGEST_SHA256_ONLY: bool = false;
    const OFFSET_JUDGED_AT_APPEND: bool = false;
    const ETAG_AT_COMPLETION: bool = false;

    fn parse_id(&self, text: &str) -> Option<UploadId> {
        UploadId::parse(text)
    }

    async fn create(
        &self,
        target: &StorePath,
        creation: ResumableCreation<'_>,
    ) -> Result<(UploadId, ResumableState), StoreError> {
        self.create_with_condition(
            target,
            creation.length,
            creation.digest.map(ContentDigest::to_header_value),
            creation.hash,
            creation.metadata.map(str::to_owned),
            creation.condition.to_vec(),
        )
    }

    async fn state(&self, id: &UploadId) -> Result<Option<ResumableState>, StoreError> {
        Resumables::state(self, *id)
    }

    async fn settled_state(&self, id: &UploadId) -> Result<ResumableState, ResumableError> {
        let mut waited = Duration::ZERO;
        while self.is_busy(*id) {
            if waited >= SETTLE_WAIT {
                return Err(ResumableError::Busy);
            }
            tokio::time::sleep(SETTLE_POLL).await;
            waited += SETTLE_POLL;
        }
        Resumables::state(self, *id)?.ok_or(ResumableError::Unknown)
    }

    async fn append(
        &self,
        id: &UploadId,
        offset: u64,
        length: Option<u64>,
    ) -> Result<LocalAppend, ResumableError> {
        let (appending, upload) = Resumables::append(self, *id, offset, length)?;
        Ok(LocalAppend {
            appending,
            upload,
            held: false,
        })
    }

    async fn cancel(&self, id: &UploadId) -> Result<(), ResumableError> {
        Resumables::cancel(self, *id)
    }

    fn expiry(&self) -> Duration {
        Resumables::expiry(self)
    }

    fn expires_at(&self, state: &ResumableState) -> SystemTime {
        UNIX_EPOCH + Duration::from_secs(state.active) + self.expiry()
    }

    fn max_age(&self, state: &ResumableState) -> u64 {
        Resumables::max_age(self, state)
    }
}

impl ResumableAppend for LocalAppend {
    type State = ResumableState;

    fn state(&self) -> &ResumableState {
        self.appending.state()
    }

    fn received(&self) -> u64 {
        self.upload.size()
    }

    fn file(&mut self) -> Option<&mut LocalAppend> {
        Some(self)
    }

    async fn write(&mut self, bytes: &[u8]) -> Result<Option<u64>, StoreError> {
        self.upload.write(bytes).map(|()| None)
    }

    fn hold(&mut self) {
        self.held = true;
    }

    async fn request_sha256(&mut self) -> Option<[u8; 32]> {
        if !self.held {
            return None;
        }
        off_the_runtime(|| self.appending.written_sha256(&self.upload)).ok()
    }

    async fn discard(self) -> Result<(), StoreError> {
        off_the_runtime(|| self.appending.discard(self.upload)).map(drop)
    }

    async fn finish(self, complete: bool) -> Result<ResumableEnd<ResumableState>, StoreError> {
        self.finish_checked(complete, None).await
    }

    async fn finish_checked(
        self,
        complete: bool,
        check: Option<VersionCheck<'_>>,
    ) -> Result<ResumableEnd<ResumableState>, StoreError> {
        let end = off_the_runtime(|| self.appending.finish_checked(self.upload, complete, check))?;
        Ok(match end {
            crate::AppendEnd::Incomplete(state) => ResumableEnd::Incomplete(state),
            crate::AppendEnd::Completed(committed) => ResumableEnd::Completed(committed),
        })
    }

    fn expect_digest(&mut self, digest: ContentDigest) -> Result<(), StoreError> {
        self.upload.expect_digest(digest)
    }
}

/// Runs `f` (file reads, `fsync`s: the store's calls that can block for long) under
/// `block_in_place` when on a multi-thread runtime, so that the runtime moves this worker's
/// other tasks first; else a plain call. For the store's callers on an async task too.
pub fn off_the_runtime<R>(f: impl FnOnce() -> R) -> R {
    use tokio::runtime::{Handle, RuntimeFlavor};
    let multi_thread =
        Handle::try_current().is_ok_and(|h| h.runtime_flavor() == RuntimeFlavor::MultiThread);
    if multi_thread {
        tokio::task::block_in_place(f)
    } else {
        f()
    }
}

// ---- S3Resumables --------------------------------------------------------------------------

#[cfg(feature = "s3")]
mod s3 {
    use super::{ResumableAppend, ResumableCreation, ResumableEnd, ResumableStore, UploadState};
    use crate::{
        ContentDigest, ResumableError, S3Append, S3AppendEnd, S3Creation, S3Resumables,
        S3UploadState, StoreError, StorePath, VersionCheck,
    };
    use std::time::{Duration, SystemTime, UNIX_EPOCH};

    upload_state_fields!(S3UploadState);

    impl ResumableStore for S3Resumables {
        type Id = String;
        type State = S3UploadState;
        type Append = S3ResumableAppend;

        const JUDGES_CONFINED_FIRST: bool = true;
        const KEEPS_MEDIA_TYPE: bool = true;
        const DIGEST_SHA256_ONLY: bool = true;
        const OFFSET_JUDGED_AT_APPEND: bool = true;
        const ETAG_AT_COMPLETION: bool = true;

        fn parse_id(&self, text: &str) -> Option<String> {
            // ALLOCATION: the id, once per request on an upload. Any text: one that is not an
            // id is answered as unknown by the store.
            Some(text.to_owned())
        }

        async fn create(
            &self,
            target: &StorePath,
            creation: ResumableCreation<'_>,
        ) -> Result<(String, S3UploadState), StoreError> {
            let creation = S3Creation {
                length: creation.length,
                digest: creation.digest,
                media_type: creation.media_type,
                metadata: creation.metadata,
                condition: creation.condition,
            };
            self.create_with(target, creation).await
        }

        async fn state(&self, id: &String) -> Result<Option<S3UploadState>, StoreError> {
            S3Resumables::state(self, id).await
        }

        async fn settled_state(&self, id: &String) -> Result<S3UploadState, ResumableError> {
            S3Resumables::settled_state(self, id, super::SETTLE_WAIT).await
        }

        async fn append(
            &self,
            id: &String,
            offset: u64,
            length: Option<u64>,
        ) -> Result<S3ResumableAppend, ResumableError> {
            let append = S3Resumables::append(self, id, offset, length).await?;
            let state = append.state();
            Ok(S3ResumableAppend { append, state })
        }

        async fn cancel(&self, id: &String) -> Result<(), ResumableError> {
            S3Resumables::cancel(self, id).await
        }

        fn expiry(&self) -> Duration {
            self.options().expiry
        }

        fn expires_at(&self, state: &S3UploadState) -> SystemTime {
            UNIX_EPOCH + Duration::from_secs(state.expires)
        }

        fn max_age(&self, state: &S3UploadState) -> u64 {
            let now = SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0, |d| d.as_secs());
            state.expires.saturating_sub(now)
        }
    }

    /// [`S3Append`] behind the interface, with the state it began from.
    #[derive(Debug)]
    pub struct S3ResumableAppend {
        /// The append.
        pub append: S3Append,
        state: S3UploadState,
    }

    impl ResumableAppend for S3ResumableAppend {
        type State = S3UploadState;

        fn state(&self) -> &S3UploadState {
            &self.state
        }

        fn received(&self) -> u64 {
            self.append.received()
        }

        async fn write(&mut self, bytes: &[u8]) -> Result<Option<u64>, StoreError> {
            self.append.write(bytes).await
        }

        fn hold(&mut self) {
            self.append.hold_records();
        }

        async fn request_sha256(&mut self) -> Option<[u8; 32]> {
            self.append.request_sha256()
        }

        async fn discard(self) -> Result<(), StoreError> {
            self.append.discard().await;
            Ok(())
        }

        async fn finish(self, complete: bool) -> Result<ResumableEnd<S3UploadState>, StoreError> {
            self.finish_checked(complete, None).await
        }

        async fn finish_checked(
            self,
            complete: bool,
            check: Option<VersionCheck<'_>>,
        ) -> Result<ResumableEnd<S3UploadState>, StoreError> {
            Ok(match self.append.finish_checked(complete, check).await? {
                S3AppendEnd::Incomplete(state) => ResumableEnd::Incomplete(state),
                S3AppendEnd::Completed(committed) => ResumableEnd::Completed(committed),
            })
        }

        fn expect_digest(&mut self, digest: ContentDigest) -> Result<(), StoreError> {
            self.append.expect_digest(&digest)
        }
    }
}

#[cfg(feature = "s3")]
pub use s3::S3ResumableAppend;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::{p, read, sha256, store};

    fn block_on<F: Future>(f: F) -> F::Output {
        tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .unwrap()
            .block_on(f)
    }

    /// Upload `name` of 6 bytes created, appended by [`ResumableAppend::write`] in two
    /// requests (the second refused while the first runs), the state settled in between,
    /// completed at its target.
    async fn appends_and_completes<S: ResumableStore>(ups: &S, name: &str) -> Committed {
        let creation = ResumableCreation {
            length: Some(6),
            metadata: Some("filename YQ=="),
            hash: true,
            ..ResumableCreation::default()
        };
        let (id, state) = ups.create(&p(name), creation).await.unwrap();
        assert_eq!((state.offset(), state.length()), (0, Some(6)));
        assert_eq!(state.metadata(), Some("filename YQ=="));
        let text = id.to_string();
        assert_eq!(ups.parse_id(&text).map(|i| i.to_string()), Some(text));
        assert!(ups.max_age(&state) <= 60);
        assert!(ups.expires_at(&state) > SystemTime::now());

        let mut append = ups.append(&id, 0, None).await.unwrap();
        assert!(matches!(
            ups.append(&id, 0, None).await,
            Err(ResumableError::Busy)
        ));
        append.write(b"hel").await.unwrap();
        assert_eq!(append.received(), 3);
        let ResumableEnd::Incomplete(state) = append.finish(false).await.unwrap() else {
            panic!("completed early");
        };
        assert_eq!(state.offset(), 3);
        assert_eq!(ups.settled_state(&id).await.unwrap().offset(), 3);
        assert!(matches!(
            ups.append(&id, 0, None).await,
            Err(ResumableError::OffsetMismatch { expected: 3, .. })
        ));

        let mut append = ups.append(&id, 3, None).await.unwrap();
        append.write(b"lo!").await.unwrap();
        let ResumableEnd::Completed(done) = append.finish(true).await.unwrap() else {
            panic!("not completed");
        };
        assert_eq!(done.sha256, Some(sha256(b"hello!")));
        assert!(ups.state(&id).await.unwrap().unwrap().complete());
        done
    }

    /// A held request: its SHA-256, and on discard none of it kept; then cancelled.
    async fn a_held_append_is_taken_back<S: ResumableStore>(ups: &S, name: &str) {
        let (id, _) = ups
            .create(&p(name), ResumableCreation::default())
            .await
            .unwrap();
        let mut append = ups.append(&id, 0, None).await.unwrap();
        assert_eq!(append.request_sha256().await, None, "not held");
        append.hold();
        append.write(b"abc").await.unwrap();
        assert_eq!(append.request_sha256().await, Some(sha256(b"abc")));
        append.discard().await.unwrap();
        assert_eq!(ups.settled_state(&id).await.unwrap().offset(), 0);
        ups.cancel(&id).await.unwrap();
        assert!(ups.state(&id).await.unwrap().is_none());
        assert!(matches!(
            ups.settled_state(&id).await,
            Err(ResumableError::Unknown)
        ));
        assert!(matches!(
            ups.cancel(&id).await,
            Err(ResumableError::Unknown)
        ));
    }

    #[test]
    fn the_local_store_appends_and_completes_through_the_interface() {
        let (_dir, local) = store();
        let ups = Resumables::open(&local, Duration::from_secs(60)).unwrap();
        block_on(appends_and_completes(&ups, "a.txt"));
        assert_eq!(read(&local, "a.txt"), b"hello!");
        assert!(ResumableStore::parse_id(&ups, "nope").is_none());
    }

    #[test]
    fn a_held_local_append_is_checked_and_taken_back() {
        let (_dir, local) = store();
        let ups = Resumables::open(&local, Duration::from_secs(60)).unwrap();
        block_on(a_held_append_is_taken_back(&ups, "b.bin"));
        // The local store's append is a file, held or not.
        block_on(async {
            let (id, _) = ResumableStore::create(&ups, &p("c.bin"), ResumableCreation::default())
                .await
                .unwrap();
            let mut append = ResumableStore::append(&ups, &id, 0, None).await.unwrap();
            assert!(append.file().is_some_and(|f| !f.held()));
            append.hold();
            assert!(append.file().is_some_and(|f| f.held()));
        });
    }
}
