//! [`Stream`]: one accepted connection: TCP, Unix domain socket, or TLS over either.

#[cfg(feature = "tls")]
use super::TlsStream;
use std::io::{self, IoSlice};
use std::net::SocketAddr;
use std::pin::Pin;
use std::task::{Context, Poll};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpStream, UnixStream};

/// An accepted connection. Non-exhaustive: its variants depend on weir's features (`Tls`) and
/// may grow.
#[derive(Debug)]
#[non_exhaustive]
pub enum Stream {
    /// A TCP connection.
    Tcp(TcpStream),
    /// A Unix domain socket connection.
    Unix(UnixStream),
    /// A TLS connection over TCP or a Unix socket (after the handshake). Boxed: the rustls
    /// state is large, and plain streams should not pay for its size. Zero-copy paths refuse
    /// it (`zero_copy::can_splice`): the bytes must pass through user space to be decrypted.
    /// (Cargo feature `tls`.)
    #[cfg(feature = "tls")]
    Tls(Box<TlsStream>),
}

/// The address of the client. Non-exhaustive: other transports may come.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum PeerAddr {
    /// A TCP peer.
    Tcp(SocketAddr),
    /// A Unix domain socket peer (usually unnamed).
    Unix,
}

impl Stream {
    /// The client's address.
    pub fn peer_addr(&self) -> PeerAddr {
        match self {
            Self::Tcp(s) => s.peer_addr().map(PeerAddr::Tcp).unwrap_or(PeerAddr::Unix),
            Self::Unix(_) => PeerAddr::Unix,
            #[cfg(feature = "tls")]
            Self::Tls(s) => s.peer_addr(),
        }
    }

    /// Whether the socket can read without waiting (TCP, Unix). `false` for TLS: there the
    /// socket's readiness says nothing about whether a plaintext byte is at hand.
    pub(crate) fn has_readiness(&self) -> bool {
        !self.is_tls()
    }

    /// Waits until the socket is readable (data, EOF or an error pending), without reading.
    /// For TLS, until a read may find something (`TlsStream::readable`): bytes at hand in the
    /// record layer, or a readable socket; a readable socket may still hold no whole record,
    /// so a read after it can wait (see [`Stream::has_readiness`]).
    pub(crate) async fn readable(&self) -> io::Result<()> {
        match self {
            // `poll_read_ready`, not `readable()`: that one links a waiter into tokio's list
            // for the socket (a lock, a link and an unlink per wait); this one keeps one waker
            // in the socket's reader slot, enough for the connection's one task.
            Self::Tcp(s) => std::future::poll_fn(|cx| s.poll_read_ready(cx)).await,
            Self::Unix(s) => std::future::poll_fn(|cx| s.poll_read_ready(cx)).await,
            #[cfg(feature = "tls")]
            Self::Tls(s) => s.readable().await,
        }
    }

    /// Reads into `buf`; on a Unix socket with `passed` given, with `recvmsg`, keeping a
    /// descriptor that comes with the bytes (`transport::passed_fd`). Elsewhere a plain read.
    #[cfg_attr(not(feature = "http2"), allow(dead_code))]
    pub(crate) async fn read_keeping_fd(
        &mut self,
        buf: &mut [u8],
        passed: Option<&mut Option<std::os::fd::OwnedFd>>,
    ) -> io::Result<usize> {
        use tokio::io::AsyncReadExt;
        #[cfg(target_os = "linux")]
        if let (Self::Unix(stream), Some(slot)) = (&*self, passed) {
            return super::passed_fd::recv_with_fd(stream, buf, slot).await;
        }
        #[cfg(not(target_os = "linux"))]
        let _ = passed;
        self.read(buf).await
    }

    /// Whether the connection is encrypted.
    pub fn is_tls(&self) -> bool {
        #[cfg(feature = "tls")]
        return matches!(self, Self::Tls(_));
        #[cfg(not(feature = "tls"))]
        false
    }

    /// The protocol the client chose by ALPN during the TLS handshake, if any.
    pub fn alpn_protocol(&self) -> Option<&[u8]> {
        match self {
            #[cfg(feature = "tls")]
            Self::Tls(s) => s.alpn_protocol(),
            Self::Tcp(_) | Self::Unix(_) => None,
        }
    }
}

impl AsyncRead for Stream {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Self::Tcp(s) => Pin::new(s).poll_read(cx, buf),
            Self::Unix(s) => Pin::new(s).poll_read(cx, buf),
            #[cfg(feature = "tls")]
            Self::Tls(s) => Pin::new(s).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for Stream {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            Self::Tcp(s) => Pin::new(s).poll_write(cx, buf),
            Self::Unix(s) => Pin::new(s).poll_write(cx, buf),
            #[cfg(feature = "tls")]
            Self::Tls(s) => Pin::new(s).poll_write(cx, buf),
        }
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            Self::Tcp(s) => Pin::new(s).poll_write_vectored(cx, bufs),
            Self::Unix(s) => Pin::new(s).poll_write_vectored(cx, bufs),
            #[cfg(feature = "tls")]
            Self::Tls(s) => Pin::new(s).poll_write_vectored(cx, bufs),
        }
    }

    fn is_write_vectored(&self) -> bool {
        true
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Self::Tcp(s) => Pin::new(s).poll_flush(cx),
            Self::Unix(s) => Pin::new(s).poll_flush(cx),
            #[cfg(feature = "tls")]
            Self::Tls(s) => Pin::new(s).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Self::Tcp(s) => Pin::new(s).poll_shutdown(cx),
            Self::Unix(s) => Pin::new(s).poll_shutdown(cx),
            #[cfg(feature = "tls")]
            Self::Tls(s) => Pin::new(s).poll_shutdown(cx),
        }
    }
}
