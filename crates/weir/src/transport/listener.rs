//! [`Listener`]: a bound TCP or Unix socket that accepts [`Stream`]s.

use super::Stream;
use std::io;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use tokio::net::{TcpListener, UnixListener};

/// A listening socket.
#[derive(Debug)]
pub enum Listener {
    /// A TCP listener.
    Tcp(TcpListener),
    /// A Unix domain socket listener, with the path it is bound to (removed on drop).
    Unix(UnixListener, PathBuf),
}

impl Listener {
    /// Binds a TCP listener (with `SO_REUSEADDR`, so a restarted server can bind at once).
    pub async fn bind_tcp(addr: impl tokio::net::ToSocketAddrs) -> io::Result<Self> {
        Ok(Self::Tcp(TcpListener::bind(addr).await?))
    }

    /// Binds a Unix domain socket at `path`. A stale socket file left by a dead server is
    /// replaced; a path where a server still listens, or that is not a socket, is an error.
    pub fn bind_unix(path: impl AsRef<Path>) -> io::Result<Self> {
        let path = path.as_ref();
        match UnixListener::bind(path) {
            Ok(l) => Ok(Self::Unix(l, path.to_owned())),
            Err(e) if e.kind() == io::ErrorKind::AddrInUse && is_stale_socket(path) => {
                std::fs::remove_file(path)?;
                Ok(Self::Unix(UnixListener::bind(path)?, path.to_owned()))
            }
            Err(e) => Err(e),
        }
    }

    /// The bound TCP address (`None` for a Unix socket).
    pub fn local_addr(&self) -> Option<SocketAddr> {
        match self {
            Self::Tcp(l) => l.local_addr().ok(),
            Self::Unix(..) => None,
        }
    }

    /// Accepts one connection. TCP connections get `TCP_NODELAY`: weir coalesces its own
    /// writes, so Nagle's algorithm would only add latency.
    pub(crate) async fn accept(&self) -> io::Result<Stream> {
        match self {
            Self::Tcp(l) => {
                let (s, _) = l.accept().await?;
                s.set_nodelay(true)?;
                Ok(Stream::Tcp(s))
            }
            Self::Unix(l, _) => Ok(Stream::Unix(l.accept().await?.0)),
        }
    }
}

impl Drop for Listener {
    fn drop(&mut self) {
        if let Self::Unix(_, path) = self {
            let _ = std::fs::remove_file(path);
        }
    }
}

fn is_stale_socket(path: &Path) -> bool {
    use std::os::unix::fs::FileTypeExt;
    let is_socket = std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_socket());
    is_socket && std::os::unix::net::UnixStream::connect(path).is_err()
}
