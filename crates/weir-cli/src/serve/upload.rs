//! `PUT /files/{path}`: the body streams into the store and becomes the file atomically, or
//! nothing is stored. Written once, generic over weir-store's `Store` (static dispatch); the
//! local store's powers are asked of the upload (`StoreUpload::file`), never of the store's
//! name.
//!
//! Before any body byte is read: the declared length against `--max-upload` (413), the
//! `Content-Digest` syntax (400), the preconditions against the file there now (412, checked
//! again by the store at commit, atomically with it: `preconditions.rs`), `begin` (which checks
//! the declared length against `--max-storage`: 507, and refuses a directory or symlink in the
//! way), and, into a local file, `Upload::preallocate` (507 if the filesystem's free space
//! cannot hold the declared length). Neither holds the whole length: the quota and the blocks
//! on disk are reserved a window ahead of the bytes received (weir-store's
//! `quota::reserved_end`: 8 MiB growing with what arrived, to 64 MiB), so a client that
//! declares much and sends little holds little. Then one of the data paths, recorded in the
//! answer's internals (`data_path` and the body counters, sent only on request:
//! [`wants_internals`]):
//!
//! - **splice** (a local file; `--no-hash`, no `Content-Digest`): `Exchange::body_to_file`
//!   moves the bytes socket → pipe → file inside the kernel; nothing enters user space. The
//!   bytes are reported to the upload afterwards (`record_external_write`), and commit checks
//!   the file's length.
//! - **hashed** (a local file): `Exchange::read_body` reads the socket straight into a pooled
//!   512 KiB buffer (the one user-space copy), which is written to the file and hashed in
//!   place, from the same buffer. The first [`PIPELINE_AFTER`] bytes are hashed inline
//!   (`Upload::write`: hash, then write, on the connection's task); beyond, the hashing is
//!   **pipelined**: up to three buffers take turns, each filled and written by the task, then
//!   hashed on a hashing thread (`hasher.rs`) while the task fills the next
//!   (`Upload::write_owned` → `hash_job` → `Hashed::chain` → `attach`, weir-store's protocol
//!   that keeps the digest exactly that of the bytes written). No copy is added: the hashing
//!   thread reads the buffer `write(2)` read. No allocation per read; per pipelined upload, one
//!   lane (buffers come from the pool). The answer's `hashing` says how many bytes were hashed
//!   `inline` and `pipelined`.
//! - **passed** (a local file): the client's open file, copied (`passed_file.rs`).
//! - **chunks** (a store without files, `--store s3://`): each body chunk handed to
//!   `StoreUpload::write`, which returns only when the store has room (the backpressure reaches
//!   the socket through the pause threshold). Memory per upload is the store's bound
//!   (`part_size × (parts_in_flight + 1)`) plus the pause threshold.
//!
//! A `Content-Digest` may also come as a trailer, after the body (`Exchange::trailers`): it is
//! verified at commit like one in the head ([`expect_trailer_digest`]). Announced in the head
//! (`Trailer: content-digest`), it makes the body take the hashed path even with `--no-hash`;
//! unannounced on the splice path, the store reads the file back to check it; a store that
//! hashed every byte on its way (a bucket) compares. Either way a mismatch is a 400 and nothing
//! is stored.
//!
//! Any failure aborts the upload (awaited before the answer), which removes its temporary file
//! or multipart upload: a client that disconnects, a body that is too large, a digest that does
//! not match, a full disk all leave the target as it was.

use super::hasher::LaneHandle;
use super::preconditions;
use super::reply::{self, Problem, hex};
use super::service::Service;
use http::StatusCode;
use weir::{BodyStats, Exchange, http};
use weir_proto::conditional;
use weir_store::{
    ContentDigest, FileMeta, Store, StoreError, StorePath, StoreUpload, Upload, UploadOptions,
};

/// Which way the body went.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum DataPath {
    Splice,
    Hashed,
    /// The client passed its open file; copied with `copy_file_range` (`passed_file.rs`).
    Passed,
    /// Chunks through `StoreUpload::write`: a store without files (`--store s3://`).
    Chunks,
}

impl DataPath {
    fn as_str(self) -> &'static str {
        match self {
            Self::Splice => "splice",
            Self::Hashed => "hashed",
            Self::Passed => "passed",
            Self::Chunks => "chunks",
        }
    }
}

/// `PUT /files/{path}` into `store` (see the module doc).
pub(super) async fn put<S: Store>(
    svc: &Service,
    store: &S,
    ex: &mut Exchange<'_>,
    path: StorePath,
) -> Result<(), weir::Error> {
    let max = svc.options.max_upload;
    let declared = ex.request().content_length();
    if declared.is_some_and(|len| len > max) {
        return too_large(ex, max).await;
    }
    ex.set_max_body_size(Some(max));
    let expected_digest = match content_digest(ex) {
        Ok(d) => d,
        Err(message) => return reply::error(ex, Problem::BadRequest, &message, &[]).await,
    };
    match preconditions::hold_now(store, ex.request(), &path).await {
        Ok(true) => {}
        Ok(false) => return preconditions::failed(ex).await,
        Err(e) => return reply::store_error(ex, &e).await,
    }
    // A passed descriptor is taken only by a store whose uploads are files; else the body
    // comes as for any `PUT` (the descriptor is closed at the end of the exchange).
    #[cfg(target_os = "linux")]
    let passed = match S::LOCAL_FILES {
        true => match super::passed_file::take(ex) {
            Ok(passed) => passed,
            Err(reason) => return super::passed_file::refuse(ex, reason).await,
        },
        false => None,
    };
    let verify = !expected_digest.is_empty();
    // A digest announced to follow the body is checked like one in the head: hash while
    // receiving, rather than splice and read the file back at commit.
    let trailer_announced = announces_digest_trailer(ex);
    #[cfg(target_os = "linux")]
    let passed_path = passed.is_some();
    #[cfg(not(target_os = "linux"))]
    let passed_path = false;
    let data_path = if !S::LOCAL_FILES {
        DataPath::Chunks
    } else if passed_path {
        DataPath::Passed
    } else if !svc.options.hash
        && !verify
        && !trailer_announced
        && (declared.is_some() || !svc.options.limited_storage)
    {
        DataPath::Splice
    } else {
        DataPath::Hashed
    };
    #[cfg(target_os = "linux")]
    let hash_asked = passed_path && super::passed_file::wants_sha256(ex);
    #[cfg(not(target_os = "linux"))]
    let hash_asked = false;
    let options = UploadOptions {
        hash: svc.options.hash || trailer_announced || hash_asked,
        expected_digest: verify.then_some(expected_digest),
        expected_len: declared,
    };
    // The client's media type is kept with the file when the store can; else it is served by
    // its name.
    let mut upload = match store
        .begin(&path, options, super::mime::of_request(ex))
        .await
    {
        Ok(u) => u,
        Err(e) => return reply::store_error(ex, &e).await,
    };
    let mut where_hashed = WhereHashed::default();
    #[cfg(target_os = "linux")]
    let mut passed_copy = None;
    let received = match upload.file() {
        Some(file) => {
            let body = FileBody {
                data_path,
                declared,
                hashing: svc.options.hash || verify || trailer_announced || hash_asked,
                #[cfg(target_os = "linux")]
                passed,
                #[cfg(target_os = "linux")]
                passed_copy: &mut passed_copy,
            };
            body.receive(svc, ex, file, &mut where_hashed).await
        }
        None => chunks_body(ex, &mut upload).await,
    };
    if let Err(failure) = received {
        // Aborted before answering, so nothing is left pending when the client hears of it.
        abort(upload, &path).await;
        return failure.answer(ex, max).await;
    }
    if let Err(message) = expect_trailer_digest(ex, &expected_digest, |d| upload.expect_digest(d)) {
        abort(upload, &path).await;
        return reply::error(ex, Problem::BadRequest, &message, &[]).await;
    }
    let head = ex.request();
    let check = |meta: Option<&FileMeta>| preconditions::hold(head, meta);
    let conditional = conditional::has_preconditions(&preconditions::Fields(head));
    // Checked again by the store, atomically with the commit (under the local store's commit
    // lock; with the bucket's conditional write).
    let committed = match upload
        .commit(if conditional { Some(&check) } else { None })
        .await
    {
        Ok(c) => c,
        Err(e) => return reply::store_error(ex, &e).await,
    };
    svc.on_stored(path.as_str(), &committed);
    let etag = preconditions::etag(&committed.stored);
    let stats = ex.body_stats();
    tracing::debug!(path = %path, size = committed.size, data_path = data_path.as_str(), "stored");
    let status = if committed.replaced {
        StatusCode::OK
    } else {
        StatusCode::CREATED
    };
    let mut body = serde_json::json!({
        "path": path.as_str(),
        "size": committed.size,
        "sha256": committed.sha256.map(|d| hex(&d)),
        "replaced": committed.replaced,
    });
    if wants_internals(ex) {
        body["data_path"] = data_path.as_str().into();
        body["body"] = body_stats_json(&stats);
        body["hashing"] = where_hashed.json();
        #[cfg(target_os = "linux")]
        if let Some(way) = passed_copy {
            body["passed_copy"] = way.as_str().into();
        }
    }
    reply::json_with(ex, status, &body, &[("etag", &etag)]).await
}

/// Discards a refused upload, waiting for the store (a bucket's multipart upload is aborted
/// before the client hears of it).
async fn abort<U: StoreUpload>(upload: U, path: &StorePath) {
    if let Err(e) = upload.abort().await {
        tracing::warn!(error = %e, path = %path, "aborting a refused upload failed");
    }
}

/// Each body chunk (`Exchange::read_body_chunk`, the read buffer's own bytes) handed to
/// [`StoreUpload::write`], which returns only when the store has room: while the store is busy
/// with earlier parts the body is not read, so the server's pause threshold stops reading the
/// socket and the client's TCP window closes. The path of a store without files.
async fn chunks_body<U: StoreUpload>(
    ex: &mut Exchange<'_>,
    upload: &mut U,
) -> Result<(), BodyFailure> {
    loop {
        match ex.read_body_chunk().await {
            Ok(Some(chunk)) => upload.write(&chunk).await.map_err(BodyFailure::Store)?,
            Ok(None) => return Ok(()),
            Err(e) => return Err(BodyFailure::Body(e)),
        }
    }
}

/// A body into an upload's own file (a store with [`Store::LOCAL_FILES`]): splice, direct
/// reads hashed beside the writes, or a passed descriptor's copy.
struct FileBody<'a> {
    data_path: DataPath,
    declared: Option<u64>,
    /// Anything is hashed (the answer's `hashing` counts it).
    hashing: bool,
    #[cfg(target_os = "linux")]
    passed: Option<std::fs::File>,
    #[cfg(target_os = "linux")]
    passed_copy: &'a mut Option<super::passed_file::CopyWay>,
    #[cfg(not(target_os = "linux"))]
    _life: std::marker::PhantomData<&'a ()>,
}

impl FileBody<'_> {
    async fn receive(
        self,
        svc: &Service,
        ex: &mut Exchange<'_>,
        upload: &mut Upload,
        where_hashed: &mut WhereHashed,
    ) -> Result<(), BodyFailure> {
        // A received body's declared length is checked before it is read: a disk that cannot
        // hold it is a 507 now, not after the client sent most of it; its blocks are then
        // reserved a window ahead of the bytes. (A passed file is cloned or copied by the
        // kernel, which allocates as it goes.)
        if self.data_path != DataPath::Passed {
            upload.preallocate().map_err(BodyFailure::Store)?;
        }
        match self.data_path {
            DataPath::Splice => splice_body(ex, upload, &mut NoCheckpoints).await,
            DataPath::Hashed => {
                let progress = &mut NoCheckpoints;
                hashed_body(svc, ex, upload, self.hashing, where_hashed, progress).await
            }
            // `take` checked that a passed file comes with a Content-Length.
            #[cfg(target_os = "linux")]
            DataPath::Passed => match (self.passed, self.declared) {
                (Some(file), Some(len)) => {
                    let copied =
                        super::passed_file::copy(svc, upload, file, len, where_hashed).await;
                    copied.map(|way| *self.passed_copy = Some(way))
                }
                _ => unreachable!("the passed path is chosen with a file and a length"),
            },
            #[cfg(not(target_os = "linux"))]
            DataPath::Passed => unreachable!("files are passed on Linux only"),
            DataPath::Chunks => unreachable!("chosen for stores without files"),
        }
    }
}

/// Whether the client asked for the answer's internals with `Weir-Debug: 1`: which data path
/// the body took (`data_path`), the body counters (`body`), where it was hashed (`hashing`).
/// They describe this server's implementation, for benchmarks and tests, and may change with
/// it: not part of the answer's contract, so not sent unless asked for.
pub(super) fn wants_internals(ex: &Exchange<'_>) -> bool {
    ex.request()
        .header("weir-debug")
        .is_some_and(|v| v.trim_ascii() == b"1")
}

/// Where a hashed body's bytes were hashed, for clients and tests to see (in the answer's
/// `hashing`). Both 0 when nothing was hashed.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct WhereHashed {
    /// On the connection's task, as the bytes were written.
    pub(super) inline: u64,
    /// On a hashing thread, while the task went on receiving.
    pub(super) pipelined: u64,
}

impl WhereHashed {
    /// The internals' `hashing` member.
    pub(super) fn json(&self) -> serde_json::Value {
        serde_json::json!({ "inline": self.inline, "pipelined": self.pipelined })
    }
}

/// The body counters, in the internals ([`wants_internals`]): which way the bytes went.
pub(super) fn body_stats_json(stats: &BodyStats) -> serde_json::Value {
    serde_json::json!({
        "spliced": stats.spliced,
        "direct": stats.direct,
        "copied": stats.copied,
    })
}

/// Why a body did not make it into the upload.
pub(super) enum BodyFailure {
    /// From reading the body: disconnect, too large, timeout, bad framing, or a file error
    /// during splice.
    Body(weir::Error),
    /// From the store: no space, quota, length or digest mismatch.
    Store(StoreError),
}

impl BodyFailure {
    /// Answers the client, if it can still be answered.
    pub(super) async fn answer(self, ex: &mut Exchange<'_>, max: u64) -> Result<(), weir::Error> {
        match self {
            Self::Store(e) => reply::store_error(ex, &e).await,
            Self::Body(e) if e.is_too_large() => too_large(ex, max).await,
            Self::Body(e) if e.is_timeout() => {
                reply::error(ex, Problem::BodyTimeout, "request body too slow", &[]).await
            }
            Self::Body(e) if e.is_protocol() => {
                reply::error(ex, Problem::BadRequest, &e.to_string(), &[]).await
            }
            // A disconnect: nobody to answer. Anything else: weir answers 500.
            Self::Body(e) => Err(e),
        }
    }
}

/// Body bytes hashed inline before the pipeline starts. A small upload is done before a
/// hashing thread could help: handing a buffer over costs a thread wake-up each way, about what
/// hashing tens of KiB costs, and overlap needs at least two buffers. Bodies without a
/// `Content-Length` take the same rule, so nothing depends on the client announcing a size.
const PIPELINE_AFTER: u64 = 2 << 20;

/// How many bytes the splice path moves before telling the upload: the store then starts
/// writing them back to disk while the rest arrives (the commit's fsync has less to do).
const SPLICE_PIECE: u64 = 8 << 20;

/// A body's checkpoints (a resumable append's, `resumable.rs`), polled after each piece of the
/// body is written. A checkpoint runs off the connection's task (`fdatasync` and the record's
/// `fsync`s on another thread) while the task goes on receiving: the poll starts one when it is
/// due and none is out, and takes in one that ended; it never waits.
pub(super) trait Checkpoints: Send {
    /// Takes in a checkpoint that ended and starts one if it is due, with `upload` as it is
    /// now (every byte written, none past them queued to `hashing`: the bytes are hashed on that
    /// lane's thread, which then hands over the hash state at this size). `Some(offset)`: tell
    /// the client that the bytes up to `offset` are durable (the draft's progress `104`,
    /// [`super::resumable::announce_offset`]). An error (a checkpoint failed) stops the body.
    fn poll(
        &mut self,
        upload: &Upload,
        hashing: Option<&LaneHandle>,
    ) -> Result<Option<u64>, StoreError>;

    /// Whether a cut body keeps what it wrote (a resumable append records it): then the
    /// hashing catches up with the bytes written before the body gives up, so that their hash
    /// state can be kept too. A body that is thrown away does not wait for its hash.
    fn keeps_cut_bytes(&self) -> bool;
}

/// The [`Checkpoints`] of a plain `PUT`: none.
pub(super) struct NoCheckpoints;

impl Checkpoints for NoCheckpoints {
    fn poll(&mut self, _: &Upload, _: Option<&LaneHandle>) -> Result<Option<u64>, StoreError> {
        Ok(None)
    }

    fn keeps_cut_bytes(&self) -> bool {
        false
    }
}

/// Polls the checkpoints after a piece of the body was written, and announces the offset one
/// recorded, if any. Never waits for a checkpoint.
async fn step(
    ex: &mut Exchange<'_>,
    upload: &Upload,
    progress: &mut dyn Checkpoints,
    hashing: Option<&LaneHandle>,
) -> Result<(), BodyFailure> {
    let acknowledged = progress.poll(upload, hashing);
    if let Some(offset) = acknowledged.map_err(BodyFailure::Store)? {
        super::resumable::announce_offset(ex, offset)
            .await
            .map_err(BodyFailure::Body)?;
    }
    Ok(())
}

/// Socket → file with splice, in pieces; after each, tells the upload how many bytes it got.
pub(super) async fn splice_body(
    ex: &mut Exchange<'_>,
    upload: &mut Upload,
    progress: &mut dyn Checkpoints,
) -> Result<(), BodyFailure> {
    loop {
        // Reserved before it is written: the bytes are recorded only after the piece.
        upload
            .reserve_next(SPLICE_PIECE)
            .map_err(BodyFailure::Store)?;
        match ex
            .body_to_file_at_most(upload.file_mut(), SPLICE_PIECE)
            .await
        {
            Ok(0) => return Ok(()),
            Ok(n) => {
                upload
                    .record_external_write(n)
                    .map_err(BodyFailure::Store)?;
                step(ex, upload, progress, None).await?;
            }
            Err(e) => return Err(splice_failure(e)),
        }
    }
}

/// A file error (ENOSPC...) during splice is the store's kind of failure: classify it the way
/// `Upload::write` would. Socket errors are disconnects, not I/O errors.
fn splice_failure(e: weir::Error) -> BodyFailure {
    let file_error = !(e.is_disconnect() || e.is_too_large() || e.is_timeout() || e.is_protocol());
    match e.io_error() {
        Some(io) if file_error => {
            let io = io.raw_os_error().map_or_else(
                || std::io::Error::from(io.kind()),
                std::io::Error::from_raw_os_error,
            );
            BodyFailure::Store(StoreError::from_io("write", io))
        }
        _ => BodyFailure::Body(e),
    }
}

/// Socket → pooled buffer (direct read) → file + hash: inline, then pipelined once the body is
/// past [`PIPELINE_AFTER`] (when there is anything to hash).
///
/// A buffer is held only while there are bytes to move: the task waits for the client with
/// none (`Exchange::wait_body`), takes one when bytes are at hand, fills it with the reads that
/// do not wait ([`fill_ready`]), writes it and gives it back before waiting again. So an upload
/// trickling in holds no upload buffer while its client is silent, and one that streams fast
/// keeps reading into the same buffer (the pool hands back the one just returned).
pub(super) async fn hashed_body(
    svc: &Service,
    ex: &mut Exchange<'_>,
    upload: &mut Upload,
    hashing: bool,
    counts: &mut WhereHashed,
    progress: &mut dyn Checkpoints,
) -> Result<(), BodyFailure> {
    loop {
        if hashing && upload.size() >= PIPELINE_AFTER {
            return pipelined_body(svc, ex, upload, counts, progress).await;
        }
        if !ex.wait_body().await.map_err(BodyFailure::Body)? {
            return Ok(());
        }
        let mut buf = svc.buffers.take();
        loop {
            let (n, ended) = fill_ready(ex, &mut buf);
            if n == 0 {
                ended.map_err(BodyFailure::Body)?;
                // A read would wait (or the body ended): the buffer goes back first.
                break;
            }
            // COPY: the kernel's, buffer → page cache; the hasher reads the buffer in place.
            upload.write(&buf[..n]).map_err(BodyFailure::Store)?;
            // What arrived before a cut is written first: a resumable append keeps it.
            ended.map_err(BodyFailure::Body)?;
            step(ex, upload, progress, None).await?;
            if hashing {
                counts.inline += n as u64;
                if upload.size() >= PIPELINE_AFTER {
                    break;
                }
            }
        }
    }
}

/// The pipelined rest of a hashed body: each buffer is written to the file on this task, then
/// queued to a hashing thread (`hasher.rs`) which hashes it while this task receives and writes
/// the next ones; a hashed buffer comes back to be filled again. At most
/// [`LANE_BUFFERS`](super::hasher::LANE_BUFFERS) buffers are in play; when none is free the
/// task waits (never blocking the runtime's thread). If no hashing thread is idle, buffers are
/// hashed inline until one is. While the task waits for its client the lane gives its buffers
/// back to the pool as they are hashed (`LaneHandle::release_idle`).
///
/// On any error the upload is dropped by the caller (temporary removed) and the lane with it:
/// its thread stops, and every buffer returns to the pool.
async fn pipelined_body(
    svc: &Service,
    ex: &mut Exchange<'_>,
    upload: &mut Upload,
    counts: &mut WhereHashed,
    progress: &mut dyn Checkpoints,
) -> Result<(), BodyFailure> {
    let lane = LaneHandle::new();
    let mut started = false;
    let received = pipeline(svc, ex, upload, counts, progress, &lane, &mut started).await;
    if let Err(failure) = received {
        if started && progress.keeps_cut_bytes() && matches!(failure, BodyFailure::Body(_)) {
            // The body was cut, and every byte written is queued: let the hashing catch up
            // (a few buffers at most) so that the upload holds the hash state of exactly its
            // bytes, which a resumable append records with its offset.
            if let Some(done) = lane.finish().await {
                let _ = upload.attach(done);
            }
        }
        return Err(failure);
    }
    if started {
        let done = lane.finish().await.ok_or(LOST)?;
        drop(upload.attach(done).map_err(BodyFailure::Store)?);
    }
    Ok(())
}

/// The loop of [`pipelined_body`]: until the body ends, each buffer filled, written, then
/// hashed on `lane`'s thread (`started`) or inline.
async fn pipeline(
    svc: &Service,
    ex: &mut Exchange<'_>,
    upload: &mut Upload,
    counts: &mut WhereHashed,
    progress: &mut dyn Checkpoints,
    lane: &LaneHandle,
    started: &mut bool,
) -> Result<(), BodyFailure> {
    loop {
        let mut free = match lane.try_buffer(&svc.buffers) {
            Some(buf) => buf,
            None => lane.free().await.ok_or(LOST)?,
        };
        let (n, ended) = fill_ready(ex, &mut free);
        if n == 0 {
            lane.discard(free);
            ended.map_err(BodyFailure::Body)?;
            if ex.is_body_complete() {
                return Ok(());
            }
            lane.release_idle();
            let more = ex.wait_body().await.map_err(BodyFailure::Body)?;
            lane.keep_idle();
            if !more {
                return Ok(());
            }
            continue;
        }
        // COPY: the kernel's, buffer → page cache. The buffer then moves, unchanged, to the
        // thread that hashes it.
        let written = upload.write_owned(free, n).map_err(BodyFailure::Store)?;
        if *started {
            lane.push(written);
            counts.pipelined += n as u64;
        } else {
            let job = upload.hash_job(written).map_err(BodyFailure::Store)?;
            match svc.hashers.start(job, lane) {
                Ok(()) => {
                    *started = true;
                    counts.pipelined += n as u64;
                }
                Err(job) => {
                    // No hashing thread is idle: hash this buffer here, try again next time.
                    lane.discard(upload.attach(job.run()).map_err(BodyFailure::Store)?);
                    counts.inline += n as u64;
                }
            }
        }
        // What arrived before a cut is written and queued first: a resumable append keeps it.
        ended.map_err(BodyFailure::Body)?;
        // A checkpoint started now records the hash state of exactly the bytes written so far:
        // from the upload if they were hashed here, else handed over by the lane's thread as it
        // passes them (it goes on hashing, and this task on receiving).
        step(ex, upload, progress, started.then_some(lane)).await?;
    }
}

/// A hashing thread that died: the upload cannot vouch for its digest.
pub(super) const LOST: BodyFailure = BodyFailure::Store(StoreError::HashOutOfOrder);

/// Room below which [`fill_ready`] stops: weir reads the socket straight into a caller's
/// buffer only when it is at least its read buffer size (16 KiB by default); a smaller one
/// would be filled through weir's buffer, a copy.
const FILL_MIN_ROOM: usize = 64 * 1024;

/// Reads into `buf` what can be read without waiting, until it is full (or nearly:
/// [`FILL_MIN_ROOM`]): one write and one hash job per buffer rather than per read (a read
/// returns what the socket holds, often less). Every read is direct, into `buf`. 0 bytes when a
/// read would wait at once, or at the end of the body (`Exchange::is_body_complete` tells
/// which). A read that fails (the client cut the body) ends the fill with the bytes read
/// before it, and its error next to them: the caller writes them before it gives up, so that
/// a cut resumable append keeps everything that arrived (the cut often comes with the last
/// bytes, in the same fill).
fn fill_ready(ex: &mut Exchange<'_>, buf: &mut [u8]) -> (usize, Result<(), weir::Error>) {
    let mut filled = 0;
    while buf.len() - filled >= FILL_MIN_ROOM {
        match ex.try_read_body(&mut buf[filled..]) {
            Some(Ok(0)) | None => break,
            Some(Ok(n)) => filled += n,
            Some(Err(e)) => return (filled, Err(e)),
        }
    }
    (filled, Ok(()))
}

/// The `Content-Digest` header(s), joined and parsed; an empty digest if absent.
pub(super) fn content_digest(ex: &Exchange<'_>) -> Result<ContentDigest, String> {
    let mut joined = String::new();
    for value in ex.request().header_all("content-digest") {
        let value = std::str::from_utf8(value).map_err(|_| "Content-Digest is not ASCII")?;
        if !joined.is_empty() {
            joined.push_str(", ");
        }
        joined.push_str(value);
    }
    ContentDigest::parse(&joined).map_err(|e| e.to_string())
}

/// Whether the head announces a `Content-Digest` trailer (`Trailer: content-digest`, RFC 9110
/// §6.6.2).
pub(super) fn announces_digest_trailer(ex: &Exchange<'_>) -> bool {
    ex.request().header_all("trailer").any(|value| {
        value
            .split(|&b| b == b',')
            .any(|name| name.trim_ascii().eq_ignore_ascii_case(b"content-digest"))
    })
}

/// A `Content-Digest` received as a trailer, after the body, handed to the upload (`expect`:
/// its `expect_digest`, the local `Upload`'s or any `StoreUpload`'s), which verifies it at
/// commit (a mismatch is a 400 and nothing is stored). Whether or not the head announced it:
/// an unannounced one on the local splice path is verified by reading the file back at commit
/// (`Upload::expect_digest`), never stored unchecked; a store that cannot verify it refuses it
/// here. An error (answer 400) when it is malformed, disagrees with the head's
/// `Content-Digest` for the same algorithm, or is refused. The one reading of the trailer for
/// every store's `PUT`.
pub(super) fn expect_trailer_digest(
    ex: &Exchange<'_>,
    in_head: &ContentDigest,
    expect: impl FnOnce(ContentDigest) -> Result<(), StoreError>,
) -> Result<(), String> {
    let Some(trailers) = ex.trailers() else {
        return Ok(());
    };
    let mut joined = String::new();
    for value in trailers.get_all("content-digest") {
        let value = value
            .to_str()
            .map_err(|_| "Content-Digest trailer is not ASCII")?;
        if !joined.is_empty() {
            joined.push_str(", ");
        }
        joined.push_str(value);
    }
    let digest = ContentDigest::parse(&joined).map_err(|e| format!("trailer: {e}"))?;
    if digest.is_empty() {
        return Ok(());
    }
    let sha256_differs = matches!((in_head.sha256, digest.sha256), (Some(a), Some(b)) if a != b);
    let sha512_differs = matches!((in_head.sha512, digest.sha512), (Some(a), Some(b)) if a != b);
    if sha256_differs || sha512_differs {
        return Err("Content-Digest trailer disagrees with the Content-Digest header".to_owned());
    }
    expect(digest).map_err(|e| e.to_string())
}

pub(super) async fn too_large(ex: &mut Exchange<'_>, max: u64) -> Result<(), weir::Error> {
    let message = format!("upload larger than the limit of {max} bytes");
    reply::error(ex, Problem::TooLarge, &message, &[]).await
}
