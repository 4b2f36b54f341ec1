//! The storage interface: what `weir serve` needs from a store, whatever holds the bytes — a
//! local directory ([`LocalStore`]) or an S3-compatible bucket (`S3Store`, feature `s3`).
//!
//! | operation | meaning |
//! | --- | --- |
//! | [`Store::begin`] → [`StoreUpload`] | an upload nothing can see yet |
//! | [`StoreUpload::write`] | body bytes; returns when the store can take more (backpressure: a slow store slows the caller, nothing queues without bound) |
//! | [`StoreUpload::set_modified`] | a client's modification time instead of the commit's (WebDAV's `X-OC-Mtime`), kept with the commit |
//! | [`StoreUpload::expect_digest`] | a digest known only after the body (a `Content-Digest` trailer), verified at the commit like one given at begin |
//! | [`StoreUpload::commit`] | verify length and digests, then make the object visible at once, if the caller's check accepts the version it replaces (checked atomically with the replacement) |
//! | [`StoreUpload::abort`], or drop | nothing becomes visible, nothing is left behind |
//! | [`Store::open`] → [`StoreObject`] | the object's metadata ([`FileMeta`], media type), pinned to that version |
//! | [`StoreObject::read`] → [`StoreReader`] | its bytes in a range, as chunks |
//! | [`Store::list_page`], [`Store::delete`] | one page of a "directory"; delete (if the check accepts the version) |
//! | [`Store::create_dir`], [`Store::is_dir`], [`Store::delete_dir`] | folders: make one, ask, delete an empty one |
//! | [`Store::commit_all`] | several uploads (a form's files), with one check for every target |
//! | [`Store::copy`], [`Store::rename`] | an object copied or moved inside the store (no byte through the caller), if the check accepts the version at the target |
//! | [`Store::rename_dir`] | a directory moved whole in one operation, where the store can (`LocalStore`); else the caller moves each object |
//! | [`Store::quota`] | the bytes in use and the limit (`max_storage`), when there is one |
//! | [`Store::set_modified`] | a file's modification time as a client names it (WebDAV's `PROPPATCH` of `lastmodified`) |
//! | [`Store::props`], [`Store::set_props`], [`StoreObject::props`] | dead properties (WebDAV's `PROPPATCH`) kept with a file or folder, at most [`MAX_PROPS`] bytes |
//!
//! Invariants every implementation keeps:
//! - an upload is all or nothing: only a successful commit makes anything visible, and an
//!   upload dropped without commit cleans up (locally: the temporary file; S3: the multipart
//!   upload is aborted);
//! - the check passed to a commit or a delete sees the version the operation replaces or
//!   removes (`None`: nothing there), and no other version can slip in between;
//! - a reader reads the version its [`StoreObject`] described, or fails: never a mix.
//!
//! The futures are `Send`, so a connection's task can hold them across `.await`. The checks are
//! closures over [`FileMeta`], so the service's one definition of `ETag` and preconditions
//! (weir-cli's `preconditions.rs`) serves every store.
//!
//! # Local powers
//! `weir serve`'s `/files/` routes are written once over this trait, generic over the store
//! (static dispatch: an upload's writes are on the body's path). What only a local file can
//! do is a capability a route asks for, answered by the store's types, never a question of
//! which store it has (the pattern of [`ResumableAppend::file`](crate::ResumableAppend::file)):
//! - [`StoreUpload::file`]: the upload's [`Upload`] (`LocalStore`), which a route fills itself
//!   with `splice`, direct reads hashed on another thread, or a passed descriptor's copy;
//!   `None` (`S3Store`): bytes go through [`StoreUpload::write`]. [`Store::LOCAL_FILES`] tells
//!   the same before an upload begins (whether to take a passed descriptor, whether to hash);
//! - [`StoreObject::sendfile_source`]: the object's open file, to send with `sendfile`;
//!   `None`: [`StoreObject::read`] (or, `S3Store` over `http://`,
//!   [`StoreObject::read_socket`], a socket to `splice` from);
//! - [`Store::LIST_BLOCKS`]: `list_page` scans a directory on the calling thread (`LocalStore`),
//!   so a server runs it off its async workers.
//!
//! # Where the stores differ
//! - [`Store::commit_all`] (a form's files): `LocalStore` commits all or none, across crashes
//!   ([`Store::ATOMIC_COMMIT_ALL`]); `S3Store` commits in order and deletes again the files it
//!   created if a later one fails (see [`Store::commit_all`]: a window remains where others
//!   see some of the files).
//! - [`Store::rename`]: `LocalStore` renames (`rename(2)` under its commit lock: atomic, the
//!   file keeps its identity); `S3Store` copies then deletes the source (`CopyObject`,
//!   `DeleteObject`): not atomic, a failure between the two leaves both
//!   ([`Store::ATOMIC_RENAME`]).
//! - [`Store::copy`]: `LocalStore` shares the blocks (a reflink) or copies inside the kernel
//!   (`copy_file_range`), then commits as an upload; `S3Store` sends one `CopyObject` (at most
//!   5 GiB).
//!
//! `LocalStore` implements it by delegating to its synchronous API (each call finishes before
//! its future is first polled out; a commit's fsyncs run under `block_in_place`:
//! [`off_the_runtime`](crate::off_the_runtime)). Resumable uploads have their own interface,
//! [`ResumableStore`](crate::ResumableStore) (`resumable_store.rs`).

use crate::{
    Committed, ContentDigest, FileMeta, ListPage, LocalStore, MediaType, StoreError, StorePath,
};
use crate::{CopyMeta, ObjectMeta, StoredFile, Upload, UploadOptions, off_the_runtime};
use bytes::Bytes;
use std::future::Future;
use std::num::NonZeroUsize;
use std::ops::Range;

mod in_order;

/// The most bytes of dead properties kept with one file or folder ([`Store::set_props`]): what
/// both stores can hold with the object (`LocalStore`: an xattr, ext4 keeps a file's in one
/// 4 KiB block; `S3Store`: user metadata, base64, within S3's 2 KiB of it).
pub const MAX_PROPS: usize = 1024;

/// A check of the version at a target (`None`: no object there): `true` lets the write or
/// delete go on. Called once, with the version that the operation then replaces.
pub type VersionCheck<'a> = &'a (dyn Fn(Option<&FileMeta>) -> bool + Sync);

/// A store `weir serve` can serve from.
pub trait Store: Send + Sync + 'static {
    /// An upload in progress.
    type Upload: StoreUpload;
    /// An object opened for reading.
    type Object: StoreObject;

    /// The uploads are local files: [`StoreUpload::file`] answers `Some`. Known before an
    /// upload begins, for what a route decides first (whether to take a descriptor the client
    /// passed, which data path a body takes).
    const LOCAL_FILES: bool = false;

    /// [`Store::list_page`] does its work on the calling thread (a directory scan, whose time
    /// grows with the directory): a server runs it off its async workers. `false`: it awaits
    /// the store (`S3Store`'s requests).
    const LIST_BLOCKS: bool = false;

    /// [`Store::commit_all`] stores all the uploads or none, even across a crash
    /// (`LocalStore`); `false`: they are committed one by one (`S3Store`: see
    /// [`Store::commit_all`]'s default).
    const ATOMIC_COMMIT_ALL: bool;

    /// [`Store::rename`] is atomic: the object is at one name or the other, never both or
    /// neither, even across a crash (`LocalStore`); `false`: a copy, then a delete of the
    /// source (`S3Store`), where a failure between the two leaves both.
    const ATOMIC_RENAME: bool;

    /// Starts an upload to `path`; nothing is visible there until the commit.
    fn begin(
        &self,
        path: &StorePath,
        options: UploadOptions,
        media_type: Option<MediaType>,
    ) -> impl Future<Output = Result<Self::Upload, StoreError>> + Send;

    /// The object at `path`: [`StoreError::NotFound`] if none (or if it is a "directory").
    fn open(
        &self,
        path: &StorePath,
    ) -> impl Future<Output = Result<Self::Object, StoreError>> + Send;

    /// One page of the entries directly under `dir` (`None`: the top), all after the cursor
    /// `after` (the previous page's [`ListPage::next`]). `LocalStore` sorts by name (byte
    /// order); `S3Store` by key, where a directory sorts as `name/` and its cursor is `name/`.
    /// Either way, walking the pages from `None` visits every entry once.
    fn list_page(
        &self,
        dir: Option<&StorePath>,
        after: Option<&str>,
        limit: NonZeroUsize,
    ) -> impl Future<Output = Result<ListPage, StoreError>> + Send;

    /// Deletes the object at `path` ([`StoreError::NotFound`] if none), if `check` (when
    /// given) accepts it: else [`StoreError::PreconditionFailed`] and nothing is deleted.
    fn delete(
        &self,
        path: &StorePath,
        check: Option<VersionCheck<'_>>,
    ) -> impl Future<Output = Result<(), StoreError>> + Send;

    /// Creates the directory `path`, so that it is listed (empty) and appears in its parent's
    /// listing: `Ok(true)`; `Ok(false)` when it already is one; an object at `path` is
    /// refused ([`StoreError::NotADirectory`]). `LocalStore` makes a directory (and its
    /// parents); `S3Store` a zero-byte `path/` marker object. Either costs
    /// [`ENTRY_COST`](crate::ENTRY_COST) against the quota.
    fn create_dir(&self, path: &StorePath)
    -> impl Future<Output = Result<bool, StoreError>> + Send;

    /// Whether `path` is a directory: one created empty, or (`S3Store`) any key below it.
    fn is_dir(&self, path: &StorePath) -> impl Future<Output = Result<bool, StoreError>> + Send;

    /// When the directory `path` was last changed, or `None` if no directory is there. Where
    /// a listing knows no time for a directory (`S3Store`: a common prefix carries none), this
    /// asks for one: S3's ListBuckets answers it as a bucket's `CreationDate`. `LocalStore`: the
    /// directory's modification time. `S3Store`: the `LastModified` of the first key below,
    /// which is the `path/` marker `create_dir` wrote once, when the folder was made by it,
    /// else the first key in byte order.
    fn dir_modified(
        &self,
        path: &StorePath,
    ) -> impl Future<Output = Result<Option<std::time::SystemTime>, StoreError>> + Send;

    /// Deletes the directory `path` if it is empty, giving its
    /// [`ENTRY_COST`](crate::ENTRY_COST) back: [`StoreError::DirectoryNotEmpty`] when anything
    /// is in it, [`StoreError::NotADirectory`] for a file, [`StoreError::NotFound`] if there
    /// is none. `LocalStore` removes the directory; `S3Store` the `path/` marker, when no other
    /// key is below it.
    fn delete_dir(&self, path: &StorePath) -> impl Future<Output = Result<(), StoreError>> + Send;

    /// Commits `staged` (each upload with its target), each only if `check` (when given)
    /// accepts the version at its target; two uploads to one path are refused
    /// ([`StoreError::DuplicatePath`]) before anything is committed.
    ///
    /// With [`Store::ATOMIC_COMMIT_ALL`] all are stored or none (`LocalStore::commit_all`).
    /// Otherwise (this default, `S3Store`) they are committed in order, each checked
    /// atomically with its own write; if one fails, the rest are aborted and the files already
    /// committed that *created* an object are deleted again, each only if it is still the
    /// version stored (a newer one another writer stored meanwhile is kept). A file that
    /// *replaced* a version stays: the earlier version cannot be put back, and deleting it
    /// would lose both. [`CommitAllError::kept`] names those (and any whose delete failed).
    /// Between the first commit and the last (or the undo) other clients can see the earlier
    /// files, and a process that dies there leaves them stored.
    /// Copies the object at `from` to `to` inside the store, no byte passing through the
    /// caller, if `check` (when given) accepts the version at `to` (judged atomically with the
    /// write, as a commit's): else [`StoreError::PreconditionFailed`] and nothing changes. The
    /// copy keeps the source's SHA-256, and its media type and S3 metadata unless `meta`
    /// replaces them; the answer describes it at `to`
    /// (`replaced` when a version was there). [`StoreError::NotFound`] when there is no object
    /// at `from`; the target is refused as an upload's would be (quota, a directory there).
    /// `meta`: the source's media type and S3 metadata, or others ([`CopyMeta`]).
    fn copy(
        &self,
        from: &StorePath,
        to: &StorePath,
        check: Option<VersionCheck<'_>>,
        meta: CopyMeta<'_>,
    ) -> impl Future<Output = Result<Committed, StoreError>> + Send;

    /// Moves the object at `from` to `to` inside the store, if `check` (when given) accepts the
    /// version at `to`, as [`Store::copy`]; `from` then names nothing (unless another writer
    /// stored a new version there meanwhile, which stays). Moving an object to its own path
    /// changes nothing. Atomic only with [`Store::ATOMIC_RENAME`].
    fn rename(
        &self,
        from: &StorePath,
        to: &StorePath,
        check: Option<VersionCheck<'_>>,
    ) -> impl Future<Output = Result<Committed, StoreError>> + Send;

    /// The bytes in use and the store's limit (`max_storage`), when it has one: what WebDAV's
    /// quota properties (RFC 4331) report. `LocalStore`: exact; `S3Store`: as this node counts
    /// (its last listing of the bucket, moved by its own commits since).
    fn quota(&self) -> Option<(u64, u64)> {
        None
    }

    /// The dead properties kept with the file or folder at `path` (opaque bytes; `Ok(None)`:
    /// none). [`StoreError::NotFound`] if nothing is there.
    fn props(
        &self,
        path: &StorePath,
    ) -> impl Future<Output = Result<Option<Vec<u8>>, StoreError>> + Send;

    /// Replaces the dead properties of the file or folder at `path` (`None`: removes them),
    /// durably; they go with the object when it is renamed or copied, and are gone with it.
    /// More than [`MAX_PROPS`] bytes, or a store that cannot keep them: [`StoreError::NoSpace`]
    /// and nothing changes. `LocalStore`: an xattr of the file or directory. `S3Store`: user
    /// metadata, set by copying the object onto itself (pinned to the version seen: a version
    /// written meanwhile is not overwritten, [`StoreError::PreconditionFailed`]); a folder's
    /// go on its `path/` marker, made if missing.
    fn set_props(
        &self,
        path: &StorePath,
        value: Option<&[u8]>,
    ) -> impl Future<Output = Result<(), StoreError>> + Send;

    /// Gives the file at `path` the modification time a client names (WebDAV's `PROPPATCH`
    /// of ownCloud's `lastmodified`), as [`StoreUpload::set_modified`] gives an upload, its
    /// content and weir's `ETag` unchanged. `LocalStore`: the file's own time, its SHA-256
    /// record kept valid. `S3Store`: `x-amz-meta-mtime`, set by copying the object onto
    /// itself pinned to the version read ([`StoreError::PreconditionFailed`] if another was
    /// written meanwhile), as [`Store::set_props`]. A folder: [`StoreError::IsDirectory`];
    /// nothing there: [`StoreError::NotFound`].
    fn set_modified(
        &self,
        path: &StorePath,
        client: std::time::SystemTime,
    ) -> impl Future<Output = Result<(), StoreError>> + Send;

    /// Moves the directory `from`, with everything in it, to `to` in one operation when the
    /// store can: `Ok(true)` (`LocalStore`: one `rename(2)` under its commit lock, all or
    /// none even across a crash; `LocalStore::rename_dir`). `Ok(false)`, this default: the
    /// store cannot (a bucket has keys, not directories: the caller moves each object with
    /// [`Store::rename`]). `to` must not exist ([`StoreError::IsDirectory`] or
    /// [`StoreError::NotADirectory`]) and its parent must ([`StoreError::NotFound`]).
    fn rename_dir(
        &self,
        from: &StorePath,
        to: &StorePath,
    ) -> impl Future<Output = Result<bool, StoreError>> + Send {
        let _ = (from, to);
        async { Ok(false) }
    }

    fn commit_all(
        &self,
        staged: Vec<(StorePath, Self::Upload)>,
        check: Option<VersionCheck<'_>>,
    ) -> impl Future<Output = Result<Vec<Committed>, CommitAllError>> + Send {
        in_order::commit_in_order(self, staged, check)
    }
}

/// Why [`Store::commit_all`] stored not all of its uploads.
#[derive(Debug)]
pub struct CommitAllError {
    /// The failure that stopped the commit.
    pub error: StoreError,
    /// Files that stay stored: (index in the uploads given, what was stored). Always empty
    /// with [`Store::ATOMIC_COMMIT_ALL`].
    pub kept: Vec<(usize, Committed)>,
}

impl From<StoreError> for CommitAllError {
    fn from(error: StoreError) -> Self {
        Self {
            error,
            kept: Vec::new(),
        }
    }
}

/// An upload in progress (see the module doc).
pub trait StoreUpload: Send {
    /// Appends body bytes. Returns once the store has room for more.
    fn write(&mut self, bytes: &[u8]) -> impl Future<Output = Result<(), StoreError>> + Send;

    /// Bytes written so far.
    fn size(&self) -> u64;

    /// The upload's file, when the store has one (`LocalStore`; see "Local powers" in the
    /// module doc): the caller may write the body into it itself, then commits through this
    /// interface. `None`: bytes go through [`StoreUpload::write`].
    fn file(&mut self) -> Option<&mut Upload> {
        None
    }

    /// Adds digests the commit must verify that became known after [`Store::begin`]: a
    /// `Content-Digest` trailer, which arrives after the last body byte and before the commit.
    /// A member replaces the same algorithm's member given at begin. An algorithm the upload
    /// cannot verify (one it did not compute while the bytes went by, in a store that cannot
    /// read them back) is refused now ([`StoreError::DigestUnavailable`]), never skipped.
    fn expect_digest(&mut self, digest: ContentDigest) -> Result<(), StoreError>;

    /// Gives the object the modification time a client names (WebDAV's `X-OC-Mtime`) instead
    /// of the commit's, kept with the commit itself: `LocalStore` sets it on the temporary
    /// file under the commit lock before the rename ([`Upload::set_modified`]); `S3Store`
    /// creates the object with it as rclone's `x-amz-meta-mtime` and reads it back as the
    /// object's time. Either way the time is its whole second, marked as a weak date
    /// validator ([`FileMeta::date_shared`]): a client's time may go back. Call before the
    /// first write.
    fn set_modified(&mut self, client: std::time::SystemTime);

    /// Keeps with the object a checksum known only after its body (S3's `x-amz-checksum-*` in
    /// a trailer), as [`ObjectMeta::set_checksum`] at begin would have, with the commit. Call
    /// after the last write. `LocalStore` always keeps it (the metadata is the temporary
    /// file's until the rename). `S3Store` keeps it in the object's metadata while no part
    /// has gone to the backend, else in the version's sidecar, written after the completion
    /// (`s3` module docs, "Sidecars of multipart versions"). `Ok(false)`: nothing is kept,
    /// only when the backend upload was created with the SHA-256 in its metadata and without
    /// [`StoreUpload::checksum_follows`] (a `HeadObject` would not look for a sidecar).
    fn keep_checksum(
        &mut self,
        algorithm: &str,
        kind: &str,
        value: &str,
    ) -> Result<bool, StoreError>;

    /// Announces a checksum after the body ([`StoreUpload::keep_checksum`]; S3's
    /// `x-amz-trailer`), so that the store can keep it whatever the object's size. Call before
    /// the first write. `S3Store` marks a multipart upload created with its SHA-256 (see
    /// `keep_checksum`); `LocalStore` needs nothing.
    fn checksum_follows(&mut self) {}

    /// No more bytes follow: the upload gives up what it holds while it waits for its commit
    /// (one of a form's files, waiting for the rest of the form), and takes no more writes.
    /// `held` is what the caller's other waiting uploads hold in memory: an upload may keep
    /// its bytes in memory when they fit, with `held`, within the store's bound, and adds them
    /// to it; else it sends them to the store now. `LocalStore` closes the temporary file
    /// (memory: none); `S3Store` keeps a small upload only while the total stays within one
    /// part size, and sends anything else (a multipart upload's last part) and waits for its
    /// parts, so that no part buffer is held. A failure discards the upload.
    fn finish_writes(
        &mut self,
        held: &mut u64,
    ) -> impl Future<Output = Result<(), StoreError>> + Send {
        let _ = held;
        async { Ok(()) }
    }

    /// Verifies and makes the object visible, if `check` (when given) accepts the version
    /// replaced; refused: [`StoreError::PreconditionFailed`], nothing changed.
    fn commit(
        self,
        check: Option<VersionCheck<'_>>,
    ) -> impl Future<Output = Result<Committed, StoreError>> + Send;

    /// Discards the upload (dropping it does too, ignoring errors).
    fn abort(self) -> impl Future<Output = Result<(), StoreError>> + Send;
}

/// An object opened for reading: its metadata now, its bytes on [`StoreObject::read`].
pub trait StoreObject: Send {
    /// A reader of its bytes.
    type Reader: StoreReader;
    /// Size, modification time, SHA-256 when stored with it.
    fn meta(&self) -> &FileMeta;
    /// The media type stored with it, if any.
    fn media_type(&self) -> Option<&MediaType>;

    /// The object's open file, when the store has one (`LocalStore`; see "Local powers" in
    /// the module doc), to send with `sendfile`: it reads the version [`StoreObject::meta`]
    /// describes, whatever happens to the path. `None`: use [`StoreObject::read`].
    fn sendfile_source(&self) -> Option<&std::fs::File> {
        None
    }

    /// The dead properties kept with this version ([`Store::set_props`]), if any: read with
    /// its metadata (`LocalStore`: one `fgetxattr`; `S3Store`: from its `HeadObject`), so a
    /// listing that opens each file pays nothing more for them.
    fn props(&self) -> Option<Vec<u8>> {
        None
    }

    /// The S3 metadata stored with this version ([`UploadOptions::object_meta`]), if any:
    /// read with it (`LocalStore`: one `fgetxattr` when asked; `S3Store`: from its
    /// `HeadObject`). A value that is not one the store wrote reads as none.
    fn object_meta(&self) -> Option<ObjectMeta> {
        None
    }
    /// The bytes in `range` (within `0..meta().size`) of the version [`StoreObject::meta`]
    /// describes; an object replaced meanwhile fails rather than mixing versions.
    fn read(
        self,
        range: Range<u64>,
    ) -> impl Future<Output = Result<Self::Reader, StoreError>> + Send;

    /// The bytes in `range` as a socket positioned at them, when the store can hand one out
    /// (`S3Store` over `http://`), so that a server forwards them with `splice` instead of
    /// copying each chunk through user space; `Ok(None)`: it cannot, use
    /// [`StoreObject::read`]. The same version guarantee as `read`.
    #[cfg(feature = "s3")]
    fn read_socket(
        &self,
        range: Range<u64>,
    ) -> impl Future<Output = Result<Option<SocketBody>, StoreError>> + Send {
        let _ = range;
        async { Ok(None) }
    }
}

/// A range of an object on a socket ([`StoreObject::read_socket`]): `head`, the bytes that
/// arrived with the answer's head, then `rest` bytes to read from `stream`.
#[cfg(feature = "s3")]
#[derive(Debug)]
pub struct SocketBody {
    /// The range's first bytes, read together with the answer head.
    pub head: Bytes,
    /// The connection, positioned after `head`; used for this range only.
    pub stream: tokio::net::TcpStream,
    /// Bytes of the range still to read from `stream`.
    pub rest: u64,
    /// Longest silence to accept from `stream` (the store's request timeout).
    pub idle_timeout: std::time::Duration,
}

/// The bytes of a [`StoreObject::read`], chunk by chunk.
pub trait StoreReader: Send {
    /// The next chunk; `None` once the range has been read whole.
    fn next_chunk(&mut self) -> impl Future<Output = Result<Option<Bytes>, StoreError>> + Send;
}

// ---- LocalStore: delegation -------------------------------------------------------------

/// Chunk size of [`LocalReader`]: large enough that a read costs little per byte, small
/// enough that a slow client holds little.
const LOCAL_CHUNK: usize = 256 * 1024;

impl Store for LocalStore {
    type Upload = LocalUpload;
    type Object = LocalObject;

    const LOCAL_FILES: bool = true;
    const LIST_BLOCKS: bool = true;
    const ATOMIC_COMMIT_ALL: bool = true;
    const ATOMIC_RENAME: bool = true;

    async fn begin(
        &self,
        path: &StorePath,
        options: UploadOptions,
        media_type: Option<MediaType>,
    ) -> Result<LocalUpload, StoreError> {
        let mut upload = LocalStore::begin(self, path, options)?;
        if let Some(m) = &media_type {
            upload.set_media_type(m);
        }
        Ok(LocalUpload(upload))
    }

    async fn open(&self, path: &StorePath) -> Result<LocalObject, StoreError> {
        let (file, meta, has_media_type) = self.open_file_hinted(path)?;
        // A digest record that says "no media type" spares the `fgetxattr` that would fail
        // (`ENODATA`) on every `GET` of such a file: the answer goes by the name.
        let media_type = std::sync::OnceLock::new();
        if has_media_type == Some(false) {
            let _ = media_type.set(None);
        }
        Ok(LocalObject {
            file,
            meta,
            media_type,
        })
    }

    async fn list_page(
        &self,
        dir: Option<&StorePath>,
        after: Option<&str>,
        limit: NonZeroUsize,
    ) -> Result<ListPage, StoreError> {
        LocalStore::list_page(self, dir, after, limit)
    }

    async fn create_dir(&self, path: &StorePath) -> Result<bool, StoreError> {
        LocalStore::create_dir(self, path)
    }

    async fn is_dir(&self, path: &StorePath) -> Result<bool, StoreError> {
        match LocalStore::list_page(self, Some(path), None, NonZeroUsize::MIN) {
            Ok(_) => Ok(true),
            Err(StoreError::NotFound | StoreError::NotADirectory) => Ok(false),
            Err(e) => Err(e),
        }
    }

    async fn dir_modified(
        &self,
        path: &StorePath,
    ) -> Result<Option<std::time::SystemTime>, StoreError> {
        LocalStore::dir_modified(self, path)
    }

    async fn delete(
        &self,
        path: &StorePath,
        check: Option<VersionCheck<'_>>,
    ) -> Result<(), StoreError> {
        match check {
            Some(check) => self.delete_if(path, check),
            None => LocalStore::delete(self, path),
        }
    }

    async fn delete_dir(&self, path: &StorePath) -> Result<(), StoreError> {
        LocalStore::delete_dir(self, path)
    }

    async fn copy(
        &self,
        from: &StorePath,
        to: &StorePath,
        check: Option<VersionCheck<'_>>,
        meta: CopyMeta<'_>,
    ) -> Result<Committed, StoreError> {
        // A whole file's copy, then a commit's fsyncs: the runtime moves this worker's other
        // tasks away first.
        off_the_runtime(|| match check {
            Some(check) => self.copy_checked(from, to, Some(&mut |m| check(m)), meta),
            None => self.copy_checked(from, to, None, meta),
        })
    }

    async fn rename(
        &self,
        from: &StorePath,
        to: &StorePath,
        check: Option<VersionCheck<'_>>,
    ) -> Result<Committed, StoreError> {
        match check {
            Some(check) => off_the_runtime(|| self.rename_if(from, to, check)),
            None => off_the_runtime(|| LocalStore::rename(self, from, to)),
        }
    }

    fn quota(&self) -> Option<(u64, u64)> {
        self.max_storage().map(|max| (self.usage(), max))
    }

    async fn props(&self, path: &StorePath) -> Result<Option<Vec<u8>>, StoreError> {
        LocalStore::props(self, path)
    }

    async fn set_props(&self, path: &StorePath, value: Option<&[u8]>) -> Result<(), StoreError> {
        off_the_runtime(|| LocalStore::set_props(self, path, value))
    }

    async fn rename_dir(&self, from: &StorePath, to: &StorePath) -> Result<bool, StoreError> {
        off_the_runtime(|| LocalStore::rename_dir(self, from, to)).map(|()| true)
    }

    async fn set_modified(
        &self,
        path: &StorePath,
        client: std::time::SystemTime,
    ) -> Result<(), StoreError> {
        // An fsync: the runtime moves this worker's other tasks away first.
        off_the_runtime(|| LocalStore::set_modified(self, path, client))
    }

    async fn commit_all(
        &self,
        staged: Vec<(StorePath, LocalUpload)>,
        check: Option<VersionCheck<'_>>,
    ) -> Result<Vec<Committed>, CommitAllError> {
        let uploads: Vec<Upload> = staged.into_iter().map(|(_, u)| u.0).collect();
        let committed = match check {
            Some(check) => off_the_runtime(|| self.commit_all_if(uploads, |_, meta| check(meta))),
            None => off_the_runtime(|| LocalStore::commit_all(self, uploads)),
        };
        Ok(committed?)
    }
}

/// [`LocalStore`]'s upload behind the interface: an [`Upload`].
#[derive(Debug)]
pub struct LocalUpload(pub Upload);

impl StoreUpload for LocalUpload {
    async fn write(&mut self, bytes: &[u8]) -> Result<(), StoreError> {
        self.0.write(bytes)
    }

    fn size(&self) -> u64 {
        self.0.size()
    }

    fn file(&mut self) -> Option<&mut Upload> {
        Some(&mut self.0)
    }

    fn set_modified(&mut self, client: std::time::SystemTime) {
        self.0.set_modified(client);
    }

    fn expect_digest(&mut self, digest: ContentDigest) -> Result<(), StoreError> {
        // Reads the file back at commit for an algorithm it was not computing.
        self.0.expect_digest(digest)
    }

    fn keep_checksum(
        &mut self,
        algorithm: &str,
        kind: &str,
        value: &str,
    ) -> Result<bool, StoreError> {
        self.0.keep_checksum(algorithm, kind, value).map(|()| true)
    }

    async fn finish_writes(&mut self, _held: &mut u64) -> Result<(), StoreError> {
        self.0.park()
    }

    async fn commit(self, check: Option<VersionCheck<'_>>) -> Result<Committed, StoreError> {
        // The fsyncs can take seconds on a busy disk: the runtime moves this worker's other
        // tasks away first.
        match check {
            Some(check) => off_the_runtime(|| self.0.commit_if(check)),
            None => off_the_runtime(|| self.0.commit()),
        }
    }

    async fn abort(self) -> Result<(), StoreError> {
        self.0.abort()
    }
}

/// [`LocalStore`]'s open file behind the interface.
#[derive(Debug)]
pub struct LocalObject {
    file: StoredFile,
    meta: FileMeta,
    /// Read (one `fgetxattr`) when first asked: an answer without a body (`304`, `412`) never
    /// needs it. Set to `None` at open when the file's digest record says it has none
    /// (`sys::DigestRecord`'s flag): a plain download then makes no failing `fgetxattr`.
    media_type: std::sync::OnceLock<Option<MediaType>>,
}

impl StoreObject for LocalObject {
    type Reader = LocalReader;

    fn meta(&self) -> &FileMeta {
        &self.meta
    }

    fn media_type(&self) -> Option<&MediaType> {
        self.media_type
            .get_or_init(|| MediaType::read_from(&self.file))
            .as_ref()
    }

    fn sendfile_source(&self) -> Option<&std::fs::File> {
        Some(&self.file)
    }

    fn props(&self) -> Option<Vec<u8>> {
        crate::sys::read_props(&*self.file).ok().flatten()
    }

    fn object_meta(&self) -> Option<ObjectMeta> {
        let stored = crate::sys::read_object_meta(&self.file).ok()??;
        ObjectMeta::decode(&stored)
    }

    async fn read(self, range: Range<u64>) -> Result<LocalReader, StoreError> {
        Ok(LocalReader {
            file: self.file,
            next: range.start,
            end: range.end.min(self.meta.size),
        })
    }
}

/// Reads an open file's range, 256 KiB at a time (a seek and a read each).
#[derive(Debug)]
pub struct LocalReader {
    file: StoredFile,
    next: u64,
    end: u64,
}

impl StoreReader for LocalReader {
    async fn next_chunk(&mut self) -> Result<Option<Bytes>, StoreError> {
        use std::io::{Read, Seek, SeekFrom};
        if self.next >= self.end {
            return Ok(None);
        }
        let want =
            usize::try_from(self.end - self.next).map_or(LOCAL_CHUNK, |n| n.min(LOCAL_CHUNK));
        // ALLOCATION: a chunk per read; the service's local downloads use `sendfile` instead,
        // this path is the interface's generic one.
        let mut buf = vec![0; want];
        let mut file: &std::fs::File = &self.file;
        let n = file
            .seek(SeekFrom::Start(self.next))
            .and_then(|_| file.read(&mut buf))
            .map_err(|e| StoreError::from_io("read file", e))?;
        if n == 0 {
            // The file is shorter than its metadata said: it changed under the reader.
            return Err(StoreError::from_io(
                "read file",
                std::io::ErrorKind::UnexpectedEof.into(),
            ));
        }
        buf.truncate(n);
        self.next += n as u64;
        Ok(Some(Bytes::from(buf)))
    }
}
