//! `PUT` with the file itself instead of its bytes: the local upload (`weir put` to the
//! `--unix` socket), where no body byte passes through the socket.
//!
//! The client sends the request head with `Weir-Fd: 1`, `Expect: 100-continue` and the file's
//! length as `Content-Length`, and passes its open file with the head's bytes (`SCM_RIGHTS`;
//! the library receives it: `Exchange::take_passed_fd`). The server copies the first
//! `Content-Length` bytes into the upload's temporary file, answers without `100 Continue`,
//! and the client, told the final status, never sends the body. A server that does not take
//! the descriptor (an older one, `--no-passed-fds`, HTTP/2) goes on as for any `PUT`:
//! `100 Continue`, and the client streams the body; the descriptor is closed.
//!
//! The copy ([`copy`]), cheapest first for the same guarantee:
//! - a reflink (`FICLONE`, btrfs and XFS) when the whole source is wanted: no byte copied; the
//!   commit reads the stored copy back for its digest (the one pass over the bytes);
//! - when the upload hashes (the default, or a `Content-Digest`): the source read in pieces
//!   into pooled buffers, each written to the upload and hashed on a hashing thread while the
//!   next is read (the streamed `PUT`'s pipeline: `hasher.rs`, weir-store's `HashJob`), so
//!   the hash runs beside the copy instead of after it;
//! - with nothing to hash: `copy_file_range` (inside the kernel), `pread`/`pwrite` where the
//!   kernel refuses it.
//!
//! The same commit as a streamed `PUT`: the length must be exactly `Content-Length`, the digest
//! is that of the bytes stored (hashed from the buffers written, or read back after a
//! reflink), verified against the client's `Content-Digest` when it sent one (a mismatch is a
//! 400 and nothing is stored), then fsync and rename. `Weir-Fd-Hash: sha-256` asks for the
//! SHA-256 even from a `--no-hash` server: `weir put` sends it instead of a `Content-Digest`
//! when it hashes its file beside the server's copy (`client/put.rs`) and compares the
//! answer's. Hashing the copy, not the client's file, keeps the digest that of the bytes
//! stored even if the client changes its file meanwhile. Quota and `--max-upload` apply to the
//! declared length.
//!
//! What the descriptor may be: a regular file opened for reading (`fstat`, `F_GETFL`), else
//! 400. The server only reads from it, at explicit offsets (the client's file position is left
//! alone), never resolves a path through it, and closes it when the copy ends.

use crate::serve::body::{BodyFailure, LOST, WhereHashed, hash_written};
use crate::serve::hasher::LaneHandle;
use crate::serve::service::Service;
use std::fs::File;
use std::os::fd::OwnedFd;
use weir::Exchange;
use weir_store::{StoreError, Upload};

/// The request field that says the body comes as a passed descriptor.
pub(crate) const FIELD: &str = "weir-fd";

/// The request field that asks for the SHA-256 of a passed file's stored copy even when the
/// server hashes nothing by default (`--no-hash`): the client verifies the answer's.
pub(crate) const HASH_FIELD: &str = "weir-fd-hash";

/// Whether the request asks for the stored copy's SHA-256 ([`HASH_FIELD`]).
pub(in crate::serve) fn wants_sha256(ex: &Exchange<'_>) -> bool {
    ex.request()
        .header(HASH_FIELD)
        .is_some_and(|v| v.trim_ascii().eq_ignore_ascii_case(b"sha-256"))
}

/// Bytes per `copy_file_range` call: the copy runs on a blocking thread, and the upload learns
/// its progress (quota, early writeback) between pieces.
const PIECE: u64 = 64 << 20;

/// The descriptor of a request that passes one, checked; `Ok(None)` when the request does not
/// (or none arrived: the body is then read as usual). `Err`: a 400 with its reason.
pub(in crate::serve) fn take(ex: &mut Exchange<'_>) -> Result<Option<File>, &'static str> {
    if ex.request().header(FIELD).is_none() {
        return Ok(None);
    }
    let Some(fd) = ex.take_passed_fd() else {
        return Ok(None);
    };
    if ex.request().content_length().is_none() {
        return Err("Weir-Fd needs Content-Length: the bytes to take from the passed file");
    }
    if !ex.request().expect_continue() {
        // Without it the client would send the body or wait for 100 Continue to decide; with
        // it, a final answer tells it the body is not wanted.
        return Err("Weir-Fd needs Expect: 100-continue");
    }
    check(&fd)?;
    Ok(Some(File::from(fd)))
}

/// A regular file, opened for reading.
fn check(fd: &OwnedFd) -> Result<(), &'static str> {
    use rustix::fs::{FileType, OFlags};
    let stat = rustix::fs::fstat(fd).map_err(|_| "the passed descriptor cannot be examined")?;
    if FileType::from_raw_mode(stat.st_mode) != FileType::RegularFile {
        return Err("the passed descriptor is not a regular file");
    }
    let flags =
        rustix::fs::fcntl_getfl(fd).map_err(|_| "the passed descriptor cannot be examined")?;
    if flags.contains(OFlags::WRONLY) || flags.contains(OFlags::PATH) {
        return Err("the passed file is not open for reading");
    }
    Ok(())
}

/// How a passed file went into the upload (the answer's internals: `passed_copy`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(in crate::serve) enum CopyWay {
    /// `FICLONE`: the stored copy shares the source's blocks (btrfs, XFS); nothing copied.
    /// The commit hashes it by reading it back, the one pass over the bytes.
    Reflink,
    /// `pread` into pooled buffers, each written to the upload and hashed on a hashing thread
    /// while the next is read (the streamed `PUT`'s pipeline, `hasher.rs`).
    Pipelined,
    /// `copy_file_range` inside the kernel (nothing to hash: `--no-hash`, no digest).
    Kernel,
}

impl CopyWay {
    pub(in crate::serve) fn as_str(self) -> &'static str {
        match self {
            Self::Reflink => "reflink",
            Self::Pipelined => "pipelined",
            Self::Kernel => "copy_file_range",
        }
    }
}

/// Copies the first `len` bytes of `source` into the upload, then records them. A source
/// shorter than `len` leaves the upload short, which its commit refuses (400).
///
/// The way depends on what is cheapest for the same guarantee: a reflink when the filesystem
/// shares blocks (then the commit's read-back is the only pass over the bytes); otherwise, when
/// the upload hashes, `pread` → write → hash in pieces, the hash on a hashing thread beside the
/// reads and writes, so the commit finds the digest done; with nothing to hash, the kernel's
/// `copy_file_range`.
pub(in crate::serve) async fn copy(
    svc: &Service,
    upload: &mut Upload,
    source: File,
    len: u64,
    counts: &mut WhereHashed,
) -> Result<CopyWay, BodyFailure> {
    let store_io = |e| BodyFailure::Store(StoreError::from_io("copy passed file", e));
    // The whole file against the quota before any byte is copied (every byte of it is
    // already there: no window to keep, unlike a body that arrives over the network).
    upload.reserve_next(len).map_err(BodyFailure::Store)?;
    let target = upload.file_mut().try_clone().map_err(store_io)?;
    let whole = upload.size() == 0
        && rustix::fs::fstat(&source).is_ok_and(|st| u64::try_from(st.st_size) == Ok(len));
    if whole && len > 0 {
        // The clone is a metadata operation, but may wait for the filesystem's journal: off the
        // runtime's threads. Any error (another filesystem, no reflink support) leaves the
        // target untouched, and the copy goes on another way.
        let cloned = tokio::task::spawn_blocking(move || {
            let done = rustix::fs::ioctl_ficlone(&target, &source).is_ok();
            (done, source, target)
        })
        .await
        .map_err(|e| store_io(std::io::Error::other(e)))?;
        let (done, source_back, target_back) = cloned;
        if done {
            upload
                .record_external_write(len)
                .map_err(BodyFailure::Store)?;
            return Ok(CopyWay::Reflink);
        }
        return copy_unshared(svc, upload, (source_back, target_back), len, counts).await;
    }
    copy_unshared(svc, upload, (source, target), len, counts).await
}

/// [`copy`] where no reflink was made.
async fn copy_unshared(
    svc: &Service,
    upload: &mut Upload,
    (source, target): (File, File),
    len: u64,
    counts: &mut WhereHashed,
) -> Result<CopyWay, BodyFailure> {
    if upload.is_hashing() {
        drop(target);
        read_hashed(svc, upload, &source, len, counts).await?;
        return Ok(CopyWay::Pipelined);
    }
    let store_io = |e| BodyFailure::Store(StoreError::from_io("copy passed file", e));
    let start = upload.size();
    // The copy blocks (a whole file's worth of kernel work): off the runtime's threads.
    let copied = tokio::task::spawn_blocking(move || copy_range(&source, &target, start, len))
        .await
        .map_err(|e| store_io(std::io::Error::other(e)))?;
    let (done, result) = copied;
    if done > 0 {
        upload
            .record_external_write(done)
            .map_err(BodyFailure::Store)?;
    }
    result.map_err(store_io)?;
    Ok(CopyWay::Kernel)
}

/// Pieces read between yields to the runtime: the loop never waits for a socket, and waits for
/// the hashing thread only when it is behind, so it gives the runtime's other tasks a turn
/// itself (every 4 MiB with 512 KiB buffers).
const YIELD_EVERY: u32 = 8;

/// `source[0..len]` → the upload through pooled buffers: each `pread` into a buffer, written
/// with `Upload::write_owned` and queued to a hashing thread's lane (`hasher.rs`), which
/// hashes it in place while this task reads and writes the next; the first buffer starts the
/// lane (hashed here if no thread is idle, and the next tries again). The same protocol as a
/// streamed body (`upload.rs`'s `pipeline`), so the digest is that of exactly the bytes
/// written. Stops early at the source's end (the commit then refuses the short upload).
///
/// The reads and writes run on the connection's task, as a streamed body's writes do: from and
/// to the page cache, a buffer at a time.
async fn read_hashed(
    svc: &Service,
    upload: &mut Upload,
    source: &File,
    len: u64,
    counts: &mut WhereHashed,
) -> Result<(), BodyFailure> {
    let lane = LaneHandle::new();
    let mut started = false;
    read_pieces(svc, upload, source, len, counts, &lane, &mut started).await?;
    if started {
        let done = lane.finish().await.ok_or(LOST)?;
        drop(upload.attach(done).map_err(BodyFailure::Store)?);
    }
    Ok(())
}

/// The loop of [`read_hashed`].
async fn read_pieces(
    svc: &Service,
    upload: &mut Upload,
    source: &File,
    len: u64,
    counts: &mut WhereHashed,
    lane: &LaneHandle,
    started: &mut bool,
) -> Result<(), BodyFailure> {
    let read_error = |e| BodyFailure::Store(StoreError::from_io("read passed file", e));
    let mut done = 0u64;
    let mut pieces = 0u32;
    while done < len {
        let mut buf = match lane.try_buffer(&svc.buffers) {
            Some(buf) => buf,
            None => lane.free().await.ok_or(LOST)?,
        };
        let want = buf
            .len()
            .min(usize::try_from(len - done).unwrap_or(usize::MAX));
        // COPY: the client's file, page cache → this buffer; `write_owned` below copies it on
        // into the upload's page cache, and the hashing thread reads it in place. As many
        // copies as `copy_file_range` and a read back for the hash, with the hash beside them.
        let n = read_at_most(source, &mut buf[..want], done).map_err(read_error)?;
        if n == 0 {
            lane.discard(buf);
            return Ok(());
        }
        let written = upload.write_owned(buf, n).map_err(BodyFailure::Store)?;
        hash_written(svc, upload, lane, started, counts, written)?;
        done += n as u64;
        if n < want {
            // The source ended before `len`.
            return Ok(());
        }
        pieces += 1;
        if pieces % YIELD_EVERY == 0 {
            tokio::task::yield_now().await;
        }
    }
    Ok(())
}

/// `pread`s into `buf` from `at` until it is full or the file ends; the bytes read.
fn read_at_most(source: &File, buf: &mut [u8], at: u64) -> std::io::Result<usize> {
    use std::os::unix::fs::FileExt;
    let mut filled = 0;
    while filled < buf.len() {
        match source.read_at(&mut buf[filled..], at + filled as u64) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(filled)
}

/// `source[0..len]` → `target[at..]`, in [`PIECE`]s: `copy_file_range` (no user-space copy),
/// or, where the kernel refuses it (another filesystem type, an old kernel), `pread`/`pwrite`
/// through one buffer. Returns the bytes copied, with the error that stopped it, if any.
fn copy_range(source: &File, target: &File, at: u64, len: u64) -> (u64, std::io::Result<()>) {
    use rustix::io::Errno;
    let mut done = 0u64;
    while done < len {
        let want = usize::try_from((len - done).min(PIECE)).unwrap_or(usize::MAX);
        let (mut off_in, mut off_out) = (done, at + done);
        match rustix::fs::copy_file_range(
            source,
            Some(&mut off_in),
            target,
            Some(&mut off_out),
            want,
        ) {
            Ok(0) => return (done, Ok(())),
            Ok(n) => done += n as u64,
            Err(Errno::XDEV | Errno::INVAL | Errno::NOSYS | Errno::OPNOTSUPP) => {
                return read_write(source, target, at, done, len);
            }
            Err(e) => return (done, Err(e.into())),
        }
    }
    (done, Ok(()))
}

/// The fallback of [`copy_range`], from `done` on.
fn read_write(
    source: &File,
    target: &File,
    at: u64,
    mut done: u64,
    len: u64,
) -> (u64, std::io::Result<()>) {
    use std::os::unix::fs::FileExt;
    // One allocation per fallback copy; COPY: kernel → buffer → kernel.
    let mut buf = vec![0u8; 1 << 20];
    while done < len {
        let want = buf
            .len()
            .min(usize::try_from(len - done).unwrap_or(usize::MAX));
        let n = match source.read_at(&mut buf[..want], done) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) => return (done, Err(e)),
        };
        if let Err(e) = target.write_all_at(&buf[..n], at + done) {
            return (done, Err(e));
        }
        done += n as u64;
    }
    (done, Ok(()))
}

/// The 400 of a descriptor [`take`] refused.
pub(in crate::serve) async fn refuse(
    ex: &mut Exchange<'_>,
    reason: &str,
) -> Result<(), weir::Error> {
    crate::serve::reply::error(ex, crate::serve::reply::Problem::BadRequest, reason, &[]).await
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn copies_the_range_and_stops_short_at_the_end_of_the_source() {
        let mut source = tempfile::tempfile().unwrap();
        let data: Vec<u8> = (0..300_000u32).map(|i| (i % 251) as u8).collect();
        source.write_all(&data).unwrap();
        let target = tempfile::tempfile().unwrap();
        let (done, result) = copy_range(&source, &target, 0, 200_000);
        result.unwrap();
        assert_eq!(done, 200_000);
        let (done, result) = read_write(&source, &target, 0, 200_000, 400_000);
        result.unwrap();
        assert_eq!(done, 300_000, "stops at the source's end");
        let mut back = Vec::new();
        use std::io::{Read, Seek};
        let mut target = target;
        target.rewind().unwrap();
        target.read_to_end(&mut back).unwrap();
        assert_eq!(back, data);
    }

    #[test]
    fn only_a_regular_file_open_for_reading_is_accepted() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        std::fs::write(&path, b"x").unwrap();
        let readable = OwnedFd::from(File::open(&path).unwrap());
        assert_eq!(check(&readable), Ok(()));
        let write_only = OwnedFd::from(File::options().write(true).open(&path).unwrap());
        assert!(check(&write_only).is_err());
        let (pipe_r, _pipe_w) = rustix::pipe::pipe().unwrap();
        assert!(check(&pipe_r).is_err());
        let directory = OwnedFd::from(File::open(dir.path()).unwrap());
        assert!(check(&directory).is_err());
    }
}
