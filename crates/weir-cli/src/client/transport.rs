//! [`Transport`]: the byte stream under the HTTP/1.1 client: TCP or a Unix domain socket,
//! in the clear or under TLS (rustls, blocking).
//!
//! Everything above it (`http.rs`, `put.rs`, `get.rs`) sees only `Read`, `Write` and
//! [`Transport::send_file`]. Under TLS `send_file` takes the copying path: the bytes must be
//! encrypted in user space. HTTP/2 (`h2.rs`) has its own, asynchronous, streams.

use super::tls::SEND_BUFFER;
use rustls::{ClientConfig, ClientConnection, StreamOwned};
use std::fs::File;
use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

/// A connected socket.
#[derive(Debug)]
pub(crate) enum Socket {
    Tcp(TcpStream),
    Unix(UnixStream),
}

impl Socket {
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

    /// Sets both the read and the write timeout (webhooks: before a TLS handshake).
    pub(crate) fn set_timeouts(&self, timeout: Option<Duration>) -> io::Result<()> {
        self.set_read_timeout(timeout)?;
        self.set_write_timeout(timeout)
    }

    fn set_read_timeout(&self, timeout: Option<Duration>) -> io::Result<()> {
        match self {
            Self::Tcp(s) => s.set_read_timeout(timeout),
            Self::Unix(s) => s.set_read_timeout(timeout),
        }
    }

    fn set_write_timeout(&self, timeout: Option<Duration>) -> io::Result<()> {
        match self {
            Self::Tcp(s) => s.set_write_timeout(timeout),
            Self::Unix(s) => s.set_write_timeout(timeout),
        }
    }
}

impl Read for Socket {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Self::Tcp(s) => s.read(buf),
            Self::Unix(s) => s.read(buf),
        }
    }
}

impl Write for Socket {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Self::Tcp(s) => s.write(buf),
            Self::Unix(s) => s.write(buf),
        }
    }

    fn write_vectored(&mut self, bufs: &[io::IoSlice<'_>]) -> io::Result<usize> {
        match self {
            Self::Tcp(s) => s.write_vectored(bufs),
            Self::Unix(s) => s.write_vectored(bufs),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// Ciphertext read from the socket per `recv` under TLS (at most). rustls asks for a record
/// (≤ 16 KiB) at a time; reading ahead lets one system call bring several, and lets
/// [`Transport::read`] decrypt all the records at hand into one caller's buffer.
const TLS_READ_AHEAD: usize = 256 * 1024;

/// The socket under rustls: large reads, served in the pieces rustls asks for.
#[derive(Debug)]
pub(crate) struct ReadAhead {
    socket: Socket,
    /// `buf[start..end]` is ciphertext read but not yet taken by rustls.
    buf: Vec<u8>,
    start: usize,
    end: usize,
}

impl ReadAhead {
    fn has_buffered(&self) -> bool {
        self.start < self.end
    }
}

impl Read for ReadAhead {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        if self.start == self.end {
            if self.buf.is_empty() {
                self.buf = vec![0; TLS_READ_AHEAD];
            }
            // COPY: ciphertext, socket → this buffer → rustls's (a memcpy in cache, instead of
            // a system call per record).
            self.end = self.socket.read(&mut self.buf)?;
            self.start = 0;
        }
        let n = (self.end - self.start).min(out.len());
        out[..n].copy_from_slice(&self.buf[self.start..self.start + n]);
        self.start += n;
        Ok(n)
    }
}

impl Write for ReadAhead {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.socket.write(buf)
    }

    fn write_vectored(&mut self, bufs: &[io::IoSlice<'_>]) -> io::Result<usize> {
        self.socket.write_vectored(bufs)
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// A connected byte stream.
#[derive(Debug)]
pub(crate) enum Transport {
    Plain(Socket),
    Tls(Box<StreamOwned<ClientConnection, ReadAhead>>),
}

/// Bytes per `sendfile` call: large, so calls are few, and small enough that the progress bar
/// moves.
const SENDFILE_PIECE: usize = 8 * 1024 * 1024;

impl Transport {
    /// Runs the TLS handshake over `socket` (blocking). Errors are I/O errors; a refused
    /// certificate is a rustls error inside one (see `tls::describe`).
    pub(crate) fn tls(
        socket: Socket,
        config: Arc<ClientConfig>,
        name: rustls::pki_types::ServerName<'static>,
    ) -> io::Result<Self> {
        let mut conn = ClientConnection::new(config, name).map_err(io::Error::other)?;
        conn.set_buffer_limit(Some(SEND_BUFFER));
        let mut io = ReadAhead {
            socket,
            buf: Vec::new(),
            start: 0,
            end: 0,
        };
        while conn.is_handshaking() {
            conn.complete_io(&mut io)?;
        }
        Ok(Self::Tls(Box::new(StreamOwned::new(conn, io))))
    }

    /// The protocol the server chose by ALPN (TLS only).
    pub(crate) fn alpn_protocol(&self) -> Option<&[u8]> {
        match self {
            Self::Plain(_) => None,
            Self::Tls(s) => s.conn.alpn_protocol(),
        }
    }

    /// Sets the read timeout (`None`: wait forever).
    pub(crate) fn set_read_timeout(&self, timeout: Option<Duration>) -> io::Result<()> {
        match self {
            Self::Plain(s) => s.set_read_timeout(timeout),
            Self::Tls(s) => s.sock.socket.set_read_timeout(timeout),
        }
    }

    /// Sets the write timeout (`None`: wait forever); `sendfile(2)` honours it too.
    pub(crate) fn set_write_timeout(&self, timeout: Option<Duration>) -> io::Result<()> {
        match self {
            Self::Plain(s) => s.set_write_timeout(timeout),
            Self::Tls(s) => s.sock.socket.set_write_timeout(timeout),
        }
    }

    /// Whether `sendfile(2)` beats the buffer on this connection: in the clear, to a TCP peer on
    /// another host, where the NIC reads the page cache and no CPU copies the body. On loopback
    /// (and Unix sockets) the receiver's copy reads the sender's page cache, which no CPU has
    /// touched lately, instead of bytes the sender's copy just brought into the shared cache:
    /// measured with `perf`, the receiving server's `recv` copy took longer and its CPU per
    /// upload grew. Not always: some rounds of weir-bench's `weir put --sendfile` row run faster
    /// than the buffer, so that row swings far more from round to round than the buffered one
    /// (figures in docs/archive/BENCHMARKS-history.md, "Figures once quoted in source comments"):
    /// the buffer is the steadier default there.
    pub(crate) fn sendfile_pays(&self) -> bool {
        match self {
            Self::Plain(Socket::Tcp(s)) => s.peer_addr().is_ok_and(|a| !a.ip().is_loopback()),
            Self::Plain(Socket::Unix(_)) | Self::Tls(_) => false,
        }
    }

    /// Sends `len` bytes of `file` from `offset`, calling `progress` with the bytes sent so far.
    /// On Linux, in the clear, this is `sendfile(2)`: page cache → socket, no user-space copy.
    /// Elsewhere, and under TLS, [`Transport::copy_file`].
    pub(crate) fn send_file(
        &mut self,
        file: &File,
        offset: u64,
        len: u64,
        progress: &mut dyn FnMut(u64),
    ) -> io::Result<()> {
        #[cfg(target_os = "linux")]
        if let Self::Plain(socket) = self {
            return sendfile_linux(socket, file, offset, len, progress);
        }
        self.copy_file(file, offset, len, progress)
    }

    /// The portable path: read into a buffer, write it out.
    pub(crate) fn copy_file(
        &mut self,
        file: &File,
        offset: u64,
        len: u64,
        progress: &mut dyn FnMut(u64),
    ) -> io::Result<()> {
        // COPY: page cache → the pieces' buffer → socket (under TLS: → rustls's records,
        // encrypted in place, → socket).
        read_pieces(file, (offset, len), progress, |piece| self.write_all(piece))?;
        self.flush()
    }

    /// [`Transport::copy_file`] framed as an HTTP/1.1 chunked body, one chunk per buffer (the
    /// chunk's size line and end written with its data in one `writev`), each buffer handed
    /// to `seen` once written: the caller hashes the bytes it sends, from the buffer they
    /// were sent from, while the receiver works on them. The last chunk and the trailer
    /// section are the caller's to write.
    pub(crate) fn copy_file_chunked(
        &mut self,
        file: &File,
        (offset, len): (u64, u64),
        seen: &mut dyn FnMut(&[u8]),
        progress: &mut dyn FnMut(u64),
    ) -> io::Result<()> {
        // COPY: page cache → the pieces' buffer → socket (under TLS: → rustls's records); the
        // hash reads the same buffer, still in the CPU cache.
        read_pieces(file, (offset, len), progress, |piece| {
            let mut size = [0u8; 18];
            let size = chunk_size_line(piece.len(), &mut size);
            let mut parts = [
                io::IoSlice::new(size),
                io::IoSlice::new(piece),
                io::IoSlice::new(b"\r\n"),
            ];
            write_all_vectored(self, &mut parts)?;
            seen(piece);
            Ok(())
        })
    }
}

/// Reads `len` bytes of `file` from `offset` into one 1 MiB buffer, a piece at a time, hands
/// each piece to `send` and reports the bytes sent so far. 1 MiB: few system calls, and small
/// enough to stay in the CPU cache between the read and the write (or encryption).
fn read_pieces(
    file: &File,
    (offset, len): (u64, u64),
    progress: &mut dyn FnMut(u64),
    mut send: impl FnMut(&[u8]) -> io::Result<()>,
) -> io::Result<()> {
    use std::os::unix::fs::FileExt;
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
        send(&buf[..n])?;
        sent += n as u64;
        progress(sent);
    }
    Ok(())
}

/// `n` in hexadecimal followed by CRLF, in `out`: a chunk's size line.
fn chunk_size_line(n: usize, out: &mut [u8; 18]) -> &[u8] {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut digits = [0u8; 16];
    let mut i = digits.len();
    let mut v = n;
    loop {
        i -= 1;
        digits[i] = HEX[v & 0xf];
        v >>= 4;
        if v == 0 {
            break;
        }
    }
    let len = digits.len() - i;
    out[..len].copy_from_slice(&digits[i..]);
    out[len..len + 2].copy_from_slice(b"\r\n");
    &out[..len + 2]
}

/// Writes every byte of `parts` (`Write::write_all_vectored` is not stable).
fn write_all_vectored(w: &mut impl Write, mut parts: &mut [io::IoSlice<'_>]) -> io::Result<()> {
    io::IoSlice::advance_slices(&mut parts, 0);
    while !parts.is_empty() {
        match w.write_vectored(parts) {
            Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
            Ok(n) => io::IoSlice::advance_slices(&mut parts, n),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

#[cfg(target_os = "linux")]
fn sendfile_linux(
    socket: &Socket,
    file: &File,
    offset: u64,
    len: u64,
    progress: &mut dyn FnMut(u64),
) -> io::Result<()> {
    use std::os::fd::AsFd;
    let socket = match socket {
        Socket::Tcp(s) => s.as_fd(),
        Socket::Unix(s) => s.as_fd(),
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

impl Read for Transport {
    /// Under TLS: decrypts the records at hand into `buf`, blocking only for the first.
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Self::Plain(s) => s.read(buf),
            Self::Tls(s) => {
                let mut n = s.read(buf)?;
                // More records already read from the socket: take them too, so that a large
                // read is not cut at every 16 KiB record. A partial record at the end of the
                // buffer makes the next read wait for its rest, which the server is sending.
                while n > 0 && n < buf.len() && s.sock.has_buffered() {
                    match s.read(&mut buf[n..]) {
                        Ok(0) => break,
                        Ok(m) => n += m,
                        // Reported by the next call.
                        Err(_) => break,
                    }
                }
                Ok(n)
            }
        }
    }
}

/// Passing the open file instead of its bytes (`serve/passed_file.rs` says the protocol).
#[cfg(target_os = "linux")]
impl Transport {
    /// Whether this connection can pass a file: a Unix socket in the clear.
    pub(crate) fn can_pass_file(&self) -> bool {
        matches!(self, Self::Plain(Socket::Unix(_)))
    }

    /// Writes `bytes` with `file`'s descriptor attached to them (`SCM_RIGHTS`, on the first
    /// `sendmsg`: the server receives it with the first of these bytes it reads).
    pub(crate) fn write_passing(&mut self, bytes: &[u8], file: &File) -> io::Result<()> {
        use rustix::net::{SendAncillaryBuffer, SendAncillaryMessage, SendFlags, sendmsg};
        use std::mem::MaybeUninit;
        use std::os::fd::AsFd;
        let Self::Plain(Socket::Unix(socket)) = self else {
            return Err(io::Error::new(
                io::ErrorKind::Unsupported,
                "files are passed over Unix sockets in the clear only",
            ));
        };
        let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(1))];
        let mut control = SendAncillaryBuffer::new(&mut space);
        let fds = [file.as_fd()];
        if !control.push(SendAncillaryMessage::ScmRights(&fds)) {
            return Err(io::Error::other("no room for the descriptor"));
        }
        let sent = loop {
            match sendmsg(
                &*socket,
                &[io::IoSlice::new(bytes)],
                &mut control,
                SendFlags::NOSIGNAL,
            ) {
                Ok(n) => break n,
                Err(rustix::io::Errno::INTR) => continue,
                Err(e) => return Err(e.into()),
            }
        };
        socket.write_all(&bytes[sent..])
    }
}

impl Write for Transport {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Self::Plain(s) => s.write(buf),
            Self::Tls(s) => s.write(buf),
        }
    }

    fn write_vectored(&mut self, bufs: &[io::IoSlice<'_>]) -> io::Result<usize> {
        match self {
            Self::Plain(s) => s.write_vectored(bufs),
            Self::Tls(s) => s.write_vectored(bufs),
        }
    }

    /// Under TLS: sends what rustls still holds.
    fn flush(&mut self) -> io::Result<()> {
        match self {
            Self::Plain(_) => Ok(()),
            Self::Tls(s) => s.flush(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Seek;

    #[test]
    fn sendfile_does_not_pay_on_loopback_or_unix_sockets() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let tcp = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        assert!(!Transport::Plain(Socket::Tcp(tcp)).sendfile_pays());
        let (a, _b) = UnixStream::pair().unwrap();
        assert!(!Transport::Plain(Socket::Unix(a)).sendfile_pays());
    }

    #[test]
    fn copy_file_chunked_frames_every_buffer_and_shows_each_once() {
        let mut file = tempfile::tempfile().unwrap();
        let data: Vec<u8> = (0..2_500_000u32).map(|i| (i % 251) as u8).collect();
        file.write_all(&data).unwrap();
        file.rewind().unwrap();
        let (a, mut b) = UnixStream::pair().unwrap();
        let mut t = Transport::Plain(Socket::Unix(a));
        let reader = std::thread::spawn(move || {
            let mut got = Vec::new();
            b.read_to_end(&mut got).unwrap();
            got
        });
        let mut seen = Vec::new();
        let mut last = 0;
        t.copy_file_chunked(
            &file,
            (7, 2_400_000),
            &mut |b| seen.extend_from_slice(b),
            &mut |n| last = n,
        )
        .unwrap();
        drop(t);
        let wire = reader.join().unwrap();
        let mut decoder = weir_proto::body::BodyDecoder::new(
            weir_proto::Framing::Chunked,
            &weir_proto::Limits::default(),
        );
        let mut body = Vec::new();
        let mut at = 0;
        while at < wire.len() {
            let d = decoder.decode(&wire[at..]).unwrap();
            at += d.framing;
            body.extend_from_slice(&wire[at..at + d.data]);
            decoder.consume(d.data);
            at += d.data;
        }
        assert_eq!(body, &data[7..2_400_007]);
        assert_eq!(seen, body);
        assert_eq!(last, 2_400_000);
        let mut out = [0u8; 18];
        assert_eq!(chunk_size_line(0x10_0000, &mut out), b"100000\r\n");
        assert_eq!(chunk_size_line(0, &mut out), b"0\r\n");
    }

    #[test]
    fn send_file_and_copy_file_send_the_same_bytes() {
        let mut file = tempfile::tempfile().unwrap();
        let data: Vec<u8> = (0..300_000u32).map(|i| (i % 251) as u8).collect();
        file.write_all(&data).unwrap();
        file.rewind().unwrap();
        for use_sendfile in [true, false] {
            let (a, mut b) = UnixStream::pair().unwrap();
            let mut t = Transport::Plain(Socket::Unix(a));
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
