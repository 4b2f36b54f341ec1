//! [`Listener`]: a bound TCP or Unix socket that accepts [`Stream`]s.

use super::Stream;
use std::io;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use tokio::net::{TcpListener, UnixListener};

/// Connections the kernel queues for a listener while the server is at its connection limit or
/// busy (what `listen(2)` calls the backlog). 1024, as tokio and most servers use.
const BACKLOG: i32 = 1024;

/// A listening socket. Non-exhaustive: other transports may come.
#[derive(Debug)]
#[non_exhaustive]
pub enum Listener {
    /// A TCP listener.
    Tcp(TcpListener),
    /// A Unix domain socket listener; its socket file is removed when the listener is dropped.
    Unix(UnixListener, SocketFile),
}

/// The path a Unix listener is bound to, removed on drop. The copies of the listener a
/// per-core server gives its other threads hold none: the original removes the file.
#[derive(Debug)]
pub struct SocketFile(Option<PathBuf>);

impl Drop for SocketFile {
    fn drop(&mut self) {
        if let Some(path) = &self.0 {
            let _ = std::fs::remove_file(path);
        }
    }
}

impl Listener {
    /// Binds a TCP listener with `SO_REUSEADDR`, so a restarted server can bind at once.
    pub async fn bind_tcp(addr: impl tokio::net::ToSocketAddrs) -> io::Result<Self> {
        Self::bind_tcp_with(addr, false).await
    }

    /// Binds a TCP listener; with `reuse_port` (Linux), also `SO_REUSEPORT`, so that a per-core
    /// server can open one listener per thread on the same address. Off by default: with it, a
    /// second server started on the same port by the same user would silently share it instead
    /// of failing with "address in use".
    pub async fn bind_tcp_with(
        addr: impl tokio::net::ToSocketAddrs,
        reuse_port: bool,
    ) -> io::Result<Self> {
        let mut last_error = None;
        for addr in tokio::net::lookup_host(addr).await? {
            match bind_tcp_std(addr, reuse_port).and_then(TcpListener::from_std) {
                Ok(l) => return Ok(Self::Tcp(l)),
                Err(e) => last_error = Some(e),
            }
        }
        Err(last_error.unwrap_or_else(|| io::Error::other("address resolved to nothing")))
    }

    /// Binds a Unix domain socket at `path`. A stale socket file left by a dead server is
    /// replaced; a path where a server still listens, or that is not a socket, is an error.
    pub fn bind_unix(path: impl AsRef<Path>) -> io::Result<Self> {
        let path = path.as_ref();
        let listener = match UnixListener::bind(path) {
            Ok(l) => l,
            Err(e) if e.kind() == io::ErrorKind::AddrInUse && is_stale_socket(path) => {
                std::fs::remove_file(path)?;
                UnixListener::bind(path)?
            }
            Err(e) => return Err(e),
        };
        Ok(Self::Unix(listener, SocketFile(Some(path.to_owned()))))
    }

    /// The bound TCP address (`None` for a Unix socket).
    pub fn local_addr(&self) -> Option<SocketAddr> {
        match self {
            Self::Tcp(l) => l.local_addr().ok(),
            Self::Unix(..) => None,
        }
    }

    /// Accepts one connection, with the client's address as `accept` gave it. TCP
    /// connections get `TCP_NODELAY`: weir coalesces its own writes, so Nagle's algorithm
    /// would only add latency.
    ///
    /// The address is kept from here rather than asked of the socket later (`getpeername`):
    /// once the client has gone (a reset mid-request) the socket no longer knows it, and the
    /// access log named such TCP clients `unix` (issue 35).
    pub(crate) async fn accept(&self) -> io::Result<(Stream, super::PeerAddr)> {
        match self {
            Self::Tcp(l) => {
                let (s, addr) = l.accept().await?;
                s.set_nodelay(true)?;
                Ok((Stream::Tcp(s), super::PeerAddr::Tcp(addr)))
            }
            Self::Unix(l, _) => Ok((Stream::Unix(l.accept().await?.0), super::PeerAddr::Unix)),
        }
    }

    /// Detaches the listener from the runtime it was created on, to be re-attached (with
    /// [`DetachedListener::attach`]) on another thread's runtime; for a TCP listener, also
    /// opens `extra` more listeners on the same address with `SO_REUSEPORT`; for a Unix
    /// listener, `extra` duplicates of its descriptor (Unix sockets have no `SO_REUSEPORT`):
    /// each thread's runtime waits on the same socket, and a connection goes to whichever
    /// thread accepts it first (the others' `accept` finds nothing and waits again), so an idle
    /// thread tends to take it.
    pub(crate) fn detach(
        self,
        extra: usize,
    ) -> io::Result<(DetachedListener, Vec<DetachedListener>)> {
        match self {
            Self::Tcp(l) => {
                let std = l.into_std()?;
                let addr = std.local_addr()?;
                if extra > 0 && !socket2::SockRef::from(&std).reuse_port()? {
                    return Err(io::Error::new(
                        io::ErrorKind::InvalidInput,
                        "per-core serving needs listeners bound with Config::reuse_port",
                    ));
                }
                let siblings = (0..extra)
                    .map(|_| bind_tcp_std(addr, true).map(DetachedListener::Tcp))
                    .collect::<io::Result<_>>()?;
                Ok((DetachedListener::Tcp(std), siblings))
            }
            Self::Unix(l, file) => {
                let std = l.into_std()?;
                let siblings = (0..extra)
                    .map(|_| {
                        let dup = std.try_clone()?;
                        Ok(DetachedListener::Unix(dup, SocketFile(None)))
                    })
                    .collect::<io::Result<_>>()?;
                Ok((DetachedListener::Unix(std, file), siblings))
            }
        }
    }
}

/// A listener not attached to any runtime, in transit to a per-core thread.
#[derive(Debug)]
pub(crate) enum DetachedListener {
    Tcp(std::net::TcpListener),
    Unix(std::os::unix::net::UnixListener, SocketFile),
}

impl DetachedListener {
    /// Registers the listener with the current thread's runtime.
    pub(crate) fn attach(self) -> io::Result<Listener> {
        Ok(match self {
            Self::Tcp(l) => Listener::Tcp(TcpListener::from_std(l)?),
            Self::Unix(l, file) => Listener::Unix(UnixListener::from_std(l)?, file),
        })
    }
}

/// A non-blocking std TCP listener with the options described on [`Listener::bind_tcp`].
fn bind_tcp_std(addr: SocketAddr, reuse_port: bool) -> io::Result<std::net::TcpListener> {
    use socket2::{Domain, Socket, Type};
    let socket = Socket::new(Domain::for_address(addr), Type::STREAM, None)?;
    socket.set_reuse_address(true)?;
    #[cfg(target_os = "linux")]
    socket.set_reuse_port(reuse_port)?;
    #[cfg(not(target_os = "linux"))]
    let _ = reuse_port;
    socket.set_nonblocking(true)?;
    socket.bind(&addr.into())?;
    socket.listen(BACKLOG)?;
    Ok(socket.into())
}

fn is_stale_socket(path: &Path) -> bool {
    use std::os::unix::fs::FileTypeExt;
    let is_socket = std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_socket());
    is_socket && std::os::unix::net::UnixStream::connect(path).is_err()
}
