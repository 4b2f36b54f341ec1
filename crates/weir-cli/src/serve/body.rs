//! A request body into a local upload's file (`weir_store::Upload`): the data paths every route
//! that writes a file shares (`PUT` into a local store, the IETF draft's appends and tus's),
//! so that no route imports another's.
//!
//! - [`splice_body`]: socket → pipe → file inside the kernel (`--no-hash`); the bytes reported
//!   to the upload after each piece;
//! - [`hashed_body`]: direct reads into pooled 512 KiB buffers, each written and hashed from
//!   the same buffer: inline for the first [`PIPELINE_AFTER`] bytes, then pipelined, hashed on
//!   a hashing thread (`hasher.rs`) while the task receives the next;
//! - [`Checkpoints`], polled after each piece: none for a `PUT`, an append's
//!   ([`AppendCheckpoints`], `body/checkpoints.rs`) for resumable uploads, whose recorded
//!   offsets a progress `104` announces ([`announce_offset`]);
//! - [`BodyFailure`]: why a body did not make it, answered the same way by every route; the
//!   request's digests (`Content-Digest` in the head, or as a trailer verified at commit).

use super::buffers::PooledBuffer;
use super::hasher::LaneHandle;
use super::reply::{self, Problem};
use super::service::Service;
use http::StatusCode;
use weir::{BodyStats, Exchange, http};
use weir_store::{Appending, ContentDigest, StoreError, StoreUpload, Upload, Written};

mod checkpoints;
pub(super) use checkpoints::AppendCheckpoints;

/// The draft revision's interop version, sent in every answer about an upload.
pub(crate) const INTEROP_VERSION: &str = "8";

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

/// Each body chunk (`Exchange::read_body_chunk`, the read buffer's own bytes) handed to
/// [`StoreUpload::write`], which returns only when the store has room: while the store is busy
/// with earlier parts the body is not read, so the server's pause threshold stops reading the
/// socket and the client's TCP window closes. The path of a store without files.
pub(super) async fn chunks_body<U: StoreUpload>(
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

/// Body bytes hashed inline before the pipeline starts. A small upload is done before a
/// hashing thread could help: handing a buffer over costs a thread wake-up each way, about what
/// hashing tens of KiB costs, and overlap needs at least two buffers. Bodies without a
/// `Content-Length` take the same rule, so nothing depends on the client announcing a size.
const PIPELINE_AFTER: u64 = 2 << 20;

/// How many bytes the splice path moves before telling the upload: the store then starts
/// writing them back to disk while the rest arrives (the commit's fsync has less to do).
pub(super) const SPLICE_PIECE: u64 = 8 << 20;

/// A body's checkpoints (a resumable append's, `resumable.rs`), polled after each piece of the
/// body is written. A checkpoint runs off the connection's task (`fdatasync` and the record's
/// `fsync`s on another thread) while the task goes on receiving: the poll starts one when it is
/// due and none is out, and takes in one that ended; it never waits.
pub(super) trait Checkpoints: Send {
    /// Takes in a checkpoint that ended and starts one if it is due, with `upload` as it is
    /// now (every byte written, none past them queued to `hashing`: the bytes are hashed on that
    /// lane's thread, which then hands over the hash state at this size). `Some(offset)`: tell
    /// the client that the bytes up to `offset` are durable (the draft's progress `104`,
    /// [`announce_offset`]). An error (a checkpoint failed) stops the body.
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
        announce_offset(ex, offset)
            .await
            .map_err(BodyFailure::Body)?;
    }
    Ok(())
}

/// Socket → file with splice, in pieces; after each, tells the upload how many bytes it got.
/// Before each, the upload may hold the piece back (a multipart part behind an earlier one of
/// its upload: `Upload::before_piece`), told how much of the body is at hand.
pub(super) async fn splice_body(
    ex: &mut Exchange<'_>,
    upload: &mut Upload,
    progress: &mut dyn Checkpoints,
) -> Result<(), BodyFailure> {
    loop {
        upload.before_piece(ex.body_at_hand()).await;
        // Reserved before it is written: the bytes are recorded only after the piece.
        upload
            .reserve_next(SPLICE_PIECE)
            .map_err(BodyFailure::Store)?;
        match ex
            .body_to_file_at_most(upload.file_mut(), SPLICE_PIECE)
            .await
        {
            Ok(0) => {
                upload.body_ended();
                return Ok(());
            }
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

/// Hands a buffer just written to the upload on to its hash: queued on `lane` once a hashing
/// thread has taken the upload (`started`), else to an idle hashing thread, else hashed here
/// (and a thread asked again for the next buffer). What the pipelined `PUT` and the passed
/// file's copy share.
pub(super) fn hash_written(
    svc: &Service,
    upload: &mut Upload,
    lane: &LaneHandle,
    started: &mut bool,
    counts: &mut WhereHashed,
    written: Written<PooledBuffer>,
) -> Result<(), BodyFailure> {
    let n = written.len();
    if *started {
        lane.push(written);
        counts.pipelined += n;
        return Ok(());
    }
    let job = upload.hash_job(written).map_err(BodyFailure::Store)?;
    match svc.hashers.start(job, lane) {
        Ok(()) => {
            *started = true;
            counts.pipelined += n;
        }
        Err(job) => {
            // No hashing thread is idle: hash this buffer here, try again next time.
            lane.discard(upload.attach(job.run()).map_err(BodyFailure::Store)?);
            counts.inline += n;
        }
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
        hash_written(svc, upload, lane, started, counts, written)?;
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

/// The draft's progress announcement (§4.3: an interim `104` with the current offset while an
/// append's content is processed; never a `Location`): sent after each checkpoint, so the
/// offset it acknowledges is durable and the client may drop the bytes before it.
pub(super) async fn announce_offset(ex: &mut Exchange<'_>, offset: u64) -> Result<(), weir::Error> {
    // The offset's digits on the stack: a u64 has at most 20, so the write cannot fail.
    let mut digits = [0u8; 20];
    let mut cursor = std::io::Cursor::new(&mut digits[..]);
    let _ = std::io::Write::write_fmt(&mut cursor, format_args!("{offset}"));
    let len = usize::try_from(cursor.position()).unwrap_or(digits.len());
    ex.send_informational(
        StatusCode::from_u16(104).unwrap_or(StatusCode::CONTINUE),
        &[
            ("upload-offset", &digits[..len]),
            ("upload-draft-interop-version", INTEROP_VERSION.as_bytes()),
        ],
    )
    .await
}

/// Sets the type the upload was created with (IETF: the creation's `Content-Type`; tus:
/// `Upload-Metadata`'s `filetype` or `type`) on its file, before an append that may complete
/// it: the commit renames the file with it. One `fsetxattr` per such request.
pub(super) fn keep_media_type(appending: &Appending, upload: &mut Upload) {
    let state = appending.state();
    if let Some(t) = state.metadata.as_deref().and_then(super::mime::of_metadata) {
        upload.set_media_type(&t);
    }
}

/// An append's body into its file by this module's paths (the IETF draft's and tus's): splice with `--no-hash`, else direct
/// reads into pooled buffers, hashed inline then pipelined when `hashing` (the first request
/// of an upload, or one resumed from a kept hash state), else not hashed (completion reads the
/// file back).
pub(super) async fn append_body(
    svc: &Service,
    ex: &mut Exchange<'_>,
    upload: &mut Upload,
    hashing: bool,
    counts: &mut WhereHashed,
    progress: &mut dyn Checkpoints,
) -> Result<(), BodyFailure> {
    let splice = !hashing
        && !svc.options.hash
        && (ex.request().content_length().is_some() || !svc.options.limited_storage);
    if splice {
        splice_body(ex, upload, progress).await
    } else {
        hashed_body(svc, ex, upload, hashing, counts, progress).await
    }
}
