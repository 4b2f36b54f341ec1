//! The storage interface: what `weir serve` needs from a store, whatever holds the bytes — a
//! local directory ([`LocalStore`]) or an S3-compatible bucket (`S3Store`, feature `s3`).
//!
//! | operation | meaning |
//! | --- | --- |
//! | [`Store::begin`] → [`StoreUpload`] | an upload nothing can see yet |
//! | [`StoreUpload::write`] | body bytes; returns when the store can take more (backpressure: a slow store slows the caller, nothing queues without bound) |
//! | [`StoreUpload::expect_digest`] | a digest known only after the body (a `Content-Digest` trailer), verified at the commit like one given at begin |
//! | [`StoreUpload::commit`] | verify length and digests, then make the object visible at once, if the caller's check accepts the version it replaces (checked atomically with the replacement) |
//! | [`StoreUpload::abort`], or drop | nothing becomes visible, nothing is left behind |
//! | [`Store::open`] → [`StoreObject`] | the object's metadata ([`FileMeta`], media type), pinned to that version |
//! | [`StoreObject::read`] → [`StoreReader`] | its bytes in a range, as chunks |
//! | [`Store::list_page`], [`Store::delete`] | one page of a "directory"; delete (if the check accepts the version) |
//! | [`Store::create_dir`], [`Store::is_dir`], [`Store::delete_dir`] | folders: make one, ask, delete an empty one |
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
//! `LocalStore` implements it by delegating to its synchronous API (each call finishes before
//! its future is first polled out, as the service calls it today); the service's own local
//! routes keep using `LocalStore` directly for what only a file can do (`splice`, `sendfile`,
//! hashing on another thread). Resumable uploads have their own interface,
//! [`ResumableStore`](crate::ResumableStore) (`resumable_store.rs`).

use crate::{
    Committed, ContentDigest, FileMeta, ListPage, LocalStore, MediaType, StoreError, StorePath,
};
use crate::{StoredFile, Upload, UploadOptions};
use bytes::Bytes;
use std::future::Future;
use std::num::NonZeroUsize;
use std::ops::Range;

/// A check of the version at a target (`None`: no object there): `true` lets the write or
/// delete go on. Called once, with the version that the operation then replaces.
pub type VersionCheck<'a> = &'a (dyn Fn(Option<&FileMeta>) -> bool + Sync);

/// A store `weir serve` can serve from.
pub trait Store: Send + Sync + 'static {
    /// An upload in progress.
    type Upload: StoreUpload;
    /// An object opened for reading.
    type Object: StoreObject;

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

    /// Deletes the directory `path` if it is empty, giving its
    /// [`ENTRY_COST`](crate::ENTRY_COST) back: [`StoreError::DirectoryNotEmpty`] when anything
    /// is in it, [`StoreError::NotADirectory`] for a file, [`StoreError::NotFound`] if there
    /// is none. `LocalStore` removes the directory; `S3Store` the `path/` marker, when no other
    /// key is below it.
    fn delete_dir(&self, path: &StorePath) -> impl Future<Output = Result<(), StoreError>> + Send;
}

/// An upload in progress (see the module doc).
pub trait StoreUpload: Send {
    /// Appends body bytes. Returns once the store has room for more.
    fn write(&mut self, bytes: &[u8]) -> impl Future<Output = Result<(), StoreError>> + Send;

    /// Bytes written so far.
    fn size(&self) -> u64;

    /// Adds digests the commit must verify that became known after [`Store::begin`]: a
    /// `Content-Digest` trailer, which arrives after the last body byte and before the commit.
    /// A member replaces the same algorithm's member given at begin. An algorithm the upload
    /// cannot verify (one it did not compute while the bytes went by, in a store that cannot
    /// read them back) is refused now ([`StoreError::DigestUnavailable`]), never skipped.
    fn expect_digest(&mut self, digest: ContentDigest) -> Result<(), StoreError>;

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
        let (file, meta) = self.open_file(path)?;
        let media_type = MediaType::read_from(&file);
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

    fn expect_digest(&mut self, digest: ContentDigest) -> Result<(), StoreError> {
        // Reads the file back at commit for an algorithm it was not computing.
        self.0.expect_digest(digest)
    }

    async fn finish_writes(&mut self, _held: &mut u64) -> Result<(), StoreError> {
        self.0.park()
    }

    async fn commit(self, check: Option<VersionCheck<'_>>) -> Result<Committed, StoreError> {
        match check {
            Some(check) => self.0.commit_if(check),
            None => self.0.commit(),
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
    media_type: Option<MediaType>,
}

impl StoreObject for LocalObject {
    type Reader = LocalReader;

    fn meta(&self) -> &FileMeta {
        &self.meta
    }

    fn media_type(&self) -> Option<&MediaType> {
        self.media_type.as_ref()
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
