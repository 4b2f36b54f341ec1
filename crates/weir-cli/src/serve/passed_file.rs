//! `PUT` with the file itself instead of its bytes: the local upload (`weir put` to the
//! `--unix` socket), where no body byte passes through the socket.
//!
//! The client sends the request head with `Weir-Fd: 1`, `Expect: 100-continue` and the file's
//! length as `Content-Length`, and passes its open file with the head's bytes (`SCM_RIGHTS`;
//! the library receives it: `Exchange::take_passed_fd`). The server copies the first
//! `Content-Length` bytes into the upload's temporary file with `copy_file_range` (inside the
//! kernel; a reflink, sharing the blocks, on filesystems that have one: btrfs, XFS), answers
//! without `100 Continue`, and the client, told the final status, never sends the body. A
//! server that does not take the descriptor (an older one, `--no-passed-fds`, HTTP/2) goes on
//! as for any `PUT`: `100 Continue`, and the client streams the body; the descriptor is closed.
//!
//! The same commit as a streamed `PUT`: the length must be exactly `Content-Length`, the
//! stored copy is hashed by reading it back at commit (unless `--no-hash` and no
//! `Content-Digest`), and verified against the client's `Content-Digest`, then fsync and rename.
//! Hashing the copy, not the client's file, keeps the digest that of the bytes stored even if
//! the client changes its file meanwhile. Quota and `--max-upload` apply to the declared length.
//!
//! What the descriptor may be: a regular file opened for reading (`fstat`, `F_GETFL`), else
//! 400. The server only reads from it, at explicit offsets (the client's file position is left
//! alone), never resolves a path through it, and closes it when the copy ends.

use super::upload::BodyFailure;
use std::fs::File;
use std::os::fd::OwnedFd;
use weir::Exchange;
use weir_store::{StoreError, Upload};

/// The request field that says the body comes as a passed descriptor.
pub(crate) const FIELD: &str = "weir-fd";

/// Bytes per `copy_file_range` call: the copy runs on a blocking thread, and the upload learns
/// its progress (quota, early writeback) between pieces.
const PIECE: u64 = 64 << 20;

/// The descriptor of a request that passes one, checked; `Ok(None)` when the request does not
/// (or none arrived: the body is then read as usual). `Err`: a 400 with its reason.
pub(super) fn take(ex: &mut Exchange<'_>) -> Result<Option<File>, &'static str> {
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

/// Copies the first `len` bytes of `source` into the upload, then records them. A source
/// shorter than `len` leaves the upload short, which its commit refuses (400).
pub(super) async fn copy(upload: &mut Upload, source: File, len: u64) -> Result<(), BodyFailure> {
    let store_io = |e| BodyFailure::Store(StoreError::from_io("copy passed file", e));
    let start = upload.size();
    let target = upload.file_mut().try_clone().map_err(store_io)?;
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
    result.map_err(store_io)
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
pub(super) async fn refuse(ex: &mut Exchange<'_>, reason: &str) -> Result<(), weir::Error> {
    super::reply::error(ex, super::reply::Problem::BadRequest, reason, &[]).await
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
