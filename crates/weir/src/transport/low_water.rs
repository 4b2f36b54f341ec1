//! The receive low-water mark (`SO_RCVLOWAT`) of a TCP socket, for long body reads.
//!
//! While a client sends a large body faster than the handler takes it, the kernel would wake
//! the connection's task for every segment that arrives after a read drained the socket: each
//! wake is an `epoll_wait` return, a short read and a new wait, and on the client's side (which
//! runs the receiving half of the TCP stack over loopback) a wake-up of the server's thread.
//! With the mark raised, TCP signals readiness only once that many bytes are queued, so each
//! wake brings a large read.
//!
//! Invariants (kept by `h1::Io`, the only user):
//! - the mark is raised only while a declared body has at least twice the mark still to come,
//!   so every wait under it ends with the mark's worth of bytes, the client's EOF, or the wait's
//!   deadline;
//! - a wait under a raised mark lasts at most 10 ms before the mark comes down, so bytes fewer
//!   than the mark (a client that paused mid-body) reach the handler as they did without it;
//! - a wait that reaches its deadline under a raised mark lowers it, and if bytes were queued
//!   (held back by the mark) the read goes on: a client that sends slowly but above the minimum
//!   data rate is not taken for a stalled one;
//! - heads and idle waits always run with the mark at 1 (the kernel's default).
//!
//! Linux TCP only: Unix sockets ignore the mark in `poll`, TLS reads records of their own, and
//! elsewhere nothing is set (reads behave as before).

use crate::transport::Stream;

/// The mark while a large body streams in: large enough that a fast upload is read in few,
/// large reads, and well under the kernel's cap (half the largest receive buffer). It bounds
/// when the task wakes, not how much is read: reads stay within the pause threshold.
pub(crate) const BODY_LOW_WATER: usize = 256 * 1024;

/// Sets the mark to `bytes` on a TCP stream; false where it was not set (another kind of
/// stream, another platform, or the kernel refused).
pub(crate) fn set(stream: &Stream, bytes: usize) -> bool {
    match stream {
        Stream::Tcp(tcp) => imp::set(tcp, bytes),
        _ => false,
    }
}

/// Bytes queued on the socket for reading (`FIONREAD`); 0 when unknown.
pub(crate) fn queued(stream: &Stream) -> u64 {
    match stream {
        Stream::Tcp(tcp) => imp::queued(tcp),
        _ => 0,
    }
}

#[cfg(target_os = "linux")]
#[allow(unsafe_code)]
mod imp {
    use std::os::fd::AsRawFd;
    use tokio::net::TcpStream;

    pub(super) fn set(tcp: &TcpStream, bytes: usize) -> bool {
        let value = libc::c_int::try_from(bytes).unwrap_or(libc::c_int::MAX);
        // SAFETY: `setsockopt` reads `size_of::<c_int>()` bytes from the pointer, which points
        // at `value`, a live `c_int` on this stack frame for the whole call; the descriptor is
        // the stream's own, open while `tcp` is borrowed. SO_RCVLOWAT takes an `int`
        // (socket(7)); rustix and socket2 have no wrapper for it.
        let result = unsafe {
            libc::setsockopt(
                tcp.as_raw_fd(),
                libc::SOL_SOCKET,
                libc::SO_RCVLOWAT,
                (&raw const value).cast(),
                std::mem::size_of::<libc::c_int>() as libc::socklen_t,
            )
        };
        result == 0
    }

    pub(super) fn queued(tcp: &TcpStream) -> u64 {
        rustix::io::ioctl_fionread(tcp).unwrap_or(0)
    }

    #[cfg(test)]
    pub(super) fn get(tcp: &TcpStream) -> i32 {
        let mut value: libc::c_int = 0;
        let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
        // SAFETY: `getsockopt` writes at most `len` bytes to `value` (a live `c_int`) and
        // the length back to `len`; the descriptor is the stream's own.
        let result = unsafe {
            libc::getsockopt(
                tcp.as_raw_fd(),
                libc::SOL_SOCKET,
                libc::SO_RCVLOWAT,
                (&raw mut value).cast(),
                &raw mut len,
            )
        };
        assert_eq!(result, 0, "{}", std::io::Error::last_os_error());
        value
    }
}

#[cfg(not(target_os = "linux"))]
mod imp {
    use tokio::net::TcpStream;

    pub(super) fn set(_: &TcpStream, _: usize) -> bool {
        false
    }

    pub(super) fn queued(_: &TcpStream) -> u64 {
        0
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;
    use tokio::io::AsyncWriteExt;
    use tokio::net::{TcpListener, TcpStream};

    async fn pair() -> (Stream, TcpStream) {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let client = TcpStream::connect(listener.local_addr().unwrap())
            .await
            .unwrap();
        let (server, _) = listener.accept().await.unwrap();
        (Stream::Tcp(server), client)
    }

    #[tokio::test]
    async fn the_mark_is_set_and_read_back_and_queued_bytes_are_counted() {
        let (server, mut client) = pair().await;
        let Stream::Tcp(tcp) = &server else {
            unreachable!()
        };
        assert_eq!(imp::get(tcp), 1);
        assert!(set(&server, BODY_LOW_WATER));
        assert_eq!(imp::get(tcp), BODY_LOW_WATER as i32);
        assert!(set(&server, 1));
        assert_eq!(imp::get(tcp), 1);
        assert_eq!(queued(&server), 0);
        client.write_all(&[7u8; 1000]).await.unwrap();
        let mut tries = 0;
        while queued(&server) < 1000 && tries < 1000 {
            tries += 1;
            tokio::time::sleep(std::time::Duration::from_millis(1)).await;
        }
        assert_eq!(queued(&server), 1000);
    }
}
