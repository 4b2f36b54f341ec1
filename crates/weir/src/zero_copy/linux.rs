//! Linux: `splice(2)` and `sendfile(2)` through `rustix`.

use super::SpliceError;
use crate::transport::Stream;
use rustix::pipe::{PipeFlags, SpliceFlags};
use std::fs::File;
use std::io;
use std::os::fd::{AsFd, OwnedFd};
use tokio::io::Interest;

/// Pipe capacity requested from the kernel. The default 64 KiB pipe would cap each splice at
/// 64 KiB; 1 MiB is the default unprivileged maximum (`/proc/sys/fs/pipe-max-size`).
const PIPE_SIZE: usize = 1024 * 1024;

/// A connection's splice pipe: created on its first upload to a file, reused after.
#[derive(Debug)]
pub(crate) struct Pipe {
    read: OwnedFd,
    write: OwnedFd,
    capacity: usize,
}

impl Pipe {
    pub(crate) fn new() -> io::Result<Self> {
        let (read, write) = rustix::pipe::pipe_with(PipeFlags::CLOEXEC | PipeFlags::NONBLOCK)?;
        // A smaller pipe still works, just with more calls: ignore a refusal.
        let capacity = rustix::pipe::fcntl_setpipe_size(&write, PIPE_SIZE)
            .or_else(|_| rustix::pipe::fcntl_getpipe_size(&write))
            .unwrap_or(64 * 1024);
        Ok(Self {
            read,
            write,
            capacity,
        })
    }
}

impl Pipe {
    /// Bytes the pipe holds at most.
    pub(crate) fn capacity(&self) -> usize {
        self.capacity
    }
}

pub(crate) fn can_splice(stream: &Stream) -> bool {
    matches!(stream, Stream::Tcp(_) | Stream::Unix(_))
}

pub(crate) fn can_sendfile(stream: &Stream) -> bool {
    can_splice(stream)
}

/// Moves up to `max` bytes from the socket into `file` (at its current position) through
/// `pipe`, without copying them into user space. Returns 0 at EOF.
pub(crate) async fn splice_to_file(
    stream: &Stream,
    pipe: &mut Pipe,
    file: &File,
    max: usize,
) -> Result<usize, SpliceError> {
    let max = max.min(pipe.capacity);
    let into_pipe = || -> io::Result<usize> {
        let flags = SpliceFlags::MOVE | SpliceFlags::NONBLOCK;
        Ok(rustix::pipe::splice(
            socket_fd(stream)?,
            None,
            &pipe.write,
            None,
            max,
            flags,
        )?)
    };
    let moved = match stream {
        Stream::Tcp(s) => s.async_io(Interest::READABLE, into_pipe).await,
        Stream::Unix(s) => s.async_io(Interest::READABLE, into_pipe).await,
        #[cfg(feature = "tls")]
        Stream::Tls(_) => Err(not_plain()),
    }
    .map_err(SpliceError::Socket)?;
    // The pipe now holds exactly `moved` bytes; all of them go to the file before returning,
    // so the pipe is empty between calls.
    let mut left = moved;
    while left > 0 {
        match rustix::pipe::splice(&pipe.read, None, file, None, left, SpliceFlags::MOVE) {
            Ok(0) => return Err(SpliceError::File(io::ErrorKind::WriteZero.into())),
            Ok(n) => left -= n,
            Err(rustix::io::Errno::INTR) => {}
            Err(e) => return Err(SpliceError::File(e.into())),
        }
    }
    Ok(moved)
}

/// Reserves `len` bytes of `file` from its current position for a body about to be written
/// there, without changing its size (`fallocate` with `FALLOC_FL_KEEP_SIZE`): a full disk is
/// known before the body is read, and each page written afterwards lands on a reserved block,
/// which the page cache takes in for less work than a delayed allocation (ext4, XFS). What a
/// failed upload leaves reserved past the end is released when the file is truncated or
/// removed. Only the errors a write would also meet (no space, quota, file too large) are
/// returned; a file that cannot be preallocated (a pipe, a filesystem without it) is written as
/// before.
pub(crate) fn preallocate(file: &File, len: u64) -> io::Result<()> {
    use rustix::fs::{FallocateFlags, SeekFrom};
    use rustix::io::Errno;
    let result = rustix::fs::seek(file, SeekFrom::Current(0))
        .and_then(|offset| rustix::fs::fallocate(file, FallocateFlags::KEEP_SIZE, offset, len));
    match result {
        Err(e @ (Errno::NOSPC | Errno::DQUOT | Errno::FBIG)) => Err(e.into()),
        _ => Ok(()),
    }
}

/// Sends up to `len` bytes of `file` from `offset` to the socket; returns how many were sent.
pub(crate) async fn sendfile(
    stream: &Stream,
    file: &File,
    offset: u64,
    len: usize,
) -> io::Result<usize> {
    let send = || -> io::Result<usize> {
        let mut offset = offset;
        Ok(rustix::fs::sendfile(
            socket_fd(stream)?,
            file,
            Some(&mut offset),
            len,
        )?)
    };
    match stream {
        Stream::Tcp(s) => s.async_io(Interest::WRITABLE, send).await,
        Stream::Unix(s) => s.async_io(Interest::WRITABLE, send).await,
        #[cfg(feature = "tls")]
        Stream::Tls(_) => Err(not_plain()),
    }
}

/// Moves up to `max` bytes (at most the room left in `pipe`) from the socket `src` into `pipe`,
/// without copying them into user space; waits until `src` is readable. Returns 0 at EOF.
pub(crate) async fn splice_socket_to_pipe(
    src: &tokio::net::TcpStream,
    pipe: &Pipe,
    max: usize,
) -> io::Result<usize> {
    src.async_io(Interest::READABLE, || {
        let flags = SpliceFlags::MOVE | SpliceFlags::NONBLOCK;
        Ok(rustix::pipe::splice(
            src,
            None,
            &pipe.write,
            None,
            max,
            flags,
        )?)
    })
    .await
}

/// Moves up to `len` bytes held in `pipe` to `stream`; waits until it is writable. Returns how
/// many moved (at least one, unless `len` is 0).
pub(crate) async fn splice_pipe_to_socket(
    stream: &Stream,
    pipe: &Pipe,
    len: usize,
) -> io::Result<usize> {
    let out = || -> io::Result<usize> {
        let flags = SpliceFlags::MOVE | SpliceFlags::NONBLOCK;
        Ok(rustix::pipe::splice(
            &pipe.read,
            None,
            socket_fd(stream)?,
            None,
            len,
            flags,
        )?)
    };
    match stream {
        Stream::Tcp(s) => s.async_io(Interest::WRITABLE, out).await,
        Stream::Unix(s) => s.async_io(Interest::WRITABLE, out).await,
        #[cfg(feature = "tls")]
        Stream::Tls(_) => Err(not_plain()),
    }
}

fn socket_fd(stream: &Stream) -> io::Result<std::os::fd::BorrowedFd<'_>> {
    match stream {
        Stream::Tcp(s) => Ok(s.as_fd()),
        Stream::Unix(s) => Ok(s.as_fd()),
        #[cfg(feature = "tls")]
        Stream::Tls(_) => Err(not_plain()),
    }
}

/// Callers check `can_splice`/`can_sendfile` first; this answers a caller that did not.
#[cfg(feature = "tls")]
fn not_plain() -> io::Error {
    io::Error::new(
        io::ErrorKind::Unsupported,
        "zero-copy needs a plain socket, not TLS",
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pipe_is_enlarged() {
        let pipe = Pipe::new().unwrap();
        // 64 KiB is the kernel default; the request for 1 MiB is honoured on stock kernels.
        assert!(pipe.capacity >= 64 * 1024);
    }
}
