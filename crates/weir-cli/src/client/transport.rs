//! [`Transport`]: the byte stream under the client, TCP or Unix domain socket.
//!
//! Everything above it (`http.rs`, `put.rs`, `get.rs`) sees only `Read`, `Write` and
//! [`Transport::send_file`], so that TLS can join as one more variant (`--cacert`): its
//! `send_file` would take the copying path, since the bytes must be encrypted in user space.
//! HTTP/2 (`--http2`) would sit above this type, next to `http::Connection`.

use std::fs::File;
use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::time::Duration;

/// A connected byte stream.
#[derive(Debug)]
pub(crate) enum Transport {
    Tcp(TcpStream),
    Unix(UnixStream),
}

/// Bytes per `sendfile` call: large, so calls are few, and small enough that the progress bar
/// moves.
const SENDFILE_PIECE: usize = 8 * 1024 * 1024;

impl Transport {
    /// Connects to `authority` (`host:port`), or to the Unix socket `unix` if given.
    pub(crate) fn connect(authority: &str, unix: Option<&Path>) -> io::Result<Self> {
        match unix {
            Some(path) => Ok(Self::Unix(UnixStream::connect(path)?)),
            None => {
                let stream = TcpStream::connect(authority)?;
                // Heads and bodies are written whole; Nagle would only delay the head.
                stream.set_nodelay(true)?;
                Ok(Self::Tcp(stream))
            }
        }
    }

    /// Sets the read timeout (`None`: wait forever).
    pub(crate) fn set_read_timeout(&self, timeout: Option<Duration>) -> io::Result<()> {
        match self {
            Self::Tcp(s) => s.set_read_timeout(timeout),
            Self::Unix(s) => s.set_read_timeout(timeout),
        }
    }

    /// Sends `len` bytes of `file` from `offset`, calling `progress` with the bytes sent so far.
    /// On Linux this is `sendfile(2)`: page cache → socket, no user-space copy. Elsewhere, and
    /// for transports that must see the bytes, [`Transport::copy_file`].
    pub(crate) fn send_file(
        &mut self,
        file: &File,
        offset: u64,
        len: u64,
        progress: &mut dyn FnMut(u64),
    ) -> io::Result<()> {
        #[cfg(target_os = "linux")]
        {
            self.sendfile_linux(file, offset, len, progress)
        }
        #[cfg(not(target_os = "linux"))]
        {
            self.copy_file(file, offset, len, progress)
        }
    }

    #[cfg(target_os = "linux")]
    fn sendfile_linux(
        &mut self,
        file: &File,
        offset: u64,
        len: u64,
        progress: &mut dyn FnMut(u64),
    ) -> io::Result<()> {
        use std::os::fd::AsFd;
        let socket = match &*self {
            Self::Tcp(s) => s.as_fd(),
            Self::Unix(s) => s.as_fd(),
        };
        let mut sent = 0u64;
        while sent < len {
            let piece = usize::try_from(len - sent)
                .unwrap_or(usize::MAX)
                .min(SENDFILE_PIECE);
            let mut at = offset + sent;
            let n = match rustix::fs::sendfile(socket, file, Some(&mut at), piece) {
                Ok(n) => n,
                Err(rustix::io::Errno::INTR) => continue,
                Err(e) => return Err(e.into()),
            };
            if n == 0 {
                return Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    "the file got shorter while it was being sent",
                ));
            }
            sent += n as u64;
            progress(sent);
        }
        Ok(())
    }

    /// The portable path: read into a buffer, write it out. 1 MiB: few system calls, and
    /// small enough to stay in the CPU cache between the read and the write.
    pub(crate) fn copy_file(
        &mut self,
        file: &File,
        offset: u64,
        len: u64,
        progress: &mut dyn FnMut(u64),
    ) -> io::Result<()> {
        use std::os::unix::fs::FileExt;
        // COPY: page cache → this buffer → socket; only where sendfile is unavailable.
        let mut buf = vec![0u8; 1024 * 1024];
        let mut sent = 0u64;
        while sent < len {
            let want = usize::try_from(len - sent)
                .unwrap_or(usize::MAX)
                .min(buf.len());
            let n = file.read_at(&mut buf[..want], offset + sent)?;
            if n == 0 {
                return Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    "the file got shorter while it was being sent",
                ));
            }
            self.write_all(&buf[..n])?;
            sent += n as u64;
            progress(sent);
        }
        Ok(())
    }
}

impl Read for Transport {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Self::Tcp(s) => s.read(buf),
            Self::Unix(s) => s.read(buf),
        }
    }
}

impl Write for Transport {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Self::Tcp(s) => s.write(buf),
            Self::Unix(s) => s.write(buf),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Seek;

    #[test]
    fn send_file_and_copy_file_send_the_same_bytes() {
        let mut file = tempfile::tempfile().unwrap();
        let data: Vec<u8> = (0..300_000u32).map(|i| (i % 251) as u8).collect();
        file.write_all(&data).unwrap();
        file.rewind().unwrap();
        for use_sendfile in [true, false] {
            let (a, mut b) = UnixStream::pair().unwrap();
            let mut t = Transport::Unix(a);
            let reader = std::thread::spawn(move || {
                let mut got = Vec::new();
                b.read_to_end(&mut got).unwrap();
                got
            });
            let mut last = 0;
            let mut progress = |n| last = n;
            if use_sendfile {
                t.send_file(&file, 1000, 250_000, &mut progress).unwrap();
            } else {
                t.copy_file(&file, 1000, 250_000, &mut progress).unwrap();
            }
            drop(t);
            assert_eq!(reader.join().unwrap(), &data[1000..251_000]);
            assert_eq!(last, 250_000);
        }
    }
}
