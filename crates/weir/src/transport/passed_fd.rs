//! Receiving an open file from the client over a Unix socket (`SCM_RIGHTS`), for local uploads
//! that move no byte through the socket (`Config::accept_passed_fds`, `Exchange::take_passed_fd`).
//!
//! Invariants:
//! - Only `Stream::Unix` reads go through `recvmsg`, and only when the server enabled it; TCP and
//!   TLS streams cannot carry descriptors at all, and plain `read(2)` on a Unix socket makes the
//!   kernel close any descriptor that came with the bytes.
//! - At most [`MAX_PASSED_FDS`] descriptors are held per connection: the control buffer has room
//!   for one per read (the kernel closes what does not fit and sets `MSG_CTRUNC`), and one that
//!   arrives while the slot is full is closed at once.
//! - Received descriptors are close-on-exec (`MSG_CMSG_CLOEXEC`): a hook the server spawns never
//!   inherits one.
//! - Nothing here trusts what the descriptor is: the handler that takes it checks it (a regular
//!   file, opened for reading) before using it.

use bytes::BytesMut;
use std::io::{self, IoSliceMut};
use std::mem::MaybeUninit;
use std::os::fd::OwnedFd;
use tokio::io::Interest;
use tokio::net::UnixStream;

/// Descriptors a connection holds at once: one, for the request being read.
pub(crate) const MAX_PASSED_FDS: usize = 1;

/// Reads from `stream` into `buf` with `recvmsg`, waiting for readability; a descriptor that
/// arrives with the bytes goes into `slot` if it is empty, and is closed otherwise.
pub(crate) async fn recv_with_fd(
    stream: &UnixStream,
    buf: &mut [u8],
    slot: &mut Option<OwnedFd>,
) -> io::Result<usize> {
    when_readable(stream, || recv_once(stream, buf, slot)).await
}

/// [`recv_with_fd`] appending at most `max` bytes to `buf`. Cancel-safe: the space read into
/// is made and trimmed again inside each attempt, so a wait dropped unfinished leaves `buf` as
/// it was (the connection drops a read that would wait: `h1::conn`'s idle wait).
pub(crate) async fn recv_with_fd_append(
    stream: &UnixStream,
    buf: &mut BytesMut,
    max: usize,
    slot: &mut Option<OwnedFd>,
) -> io::Result<usize> {
    when_readable(stream, || {
        let start = buf.len();
        // COPY: zeroes the free space read into (recvmsg takes initialised memory, and this
        // crate has no unsafe code); only on Unix sockets that accept passed descriptors.
        buf.resize(start + max, 0);
        let read = recv_once(stream, &mut buf[start..], slot);
        buf.truncate(start + read.as_ref().map_or(0, |n| *n));
        read
    })
    .await
}

/// Runs `attempt` each time `stream` is readable until it does not answer `WouldBlock` (which
/// clears the readiness, so the next wait is for new bytes).
async fn when_readable(
    stream: &UnixStream,
    mut attempt: impl FnMut() -> io::Result<usize>,
) -> io::Result<usize> {
    loop {
        stream.readable().await?;
        match stream.try_io(Interest::READABLE, &mut attempt) {
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => continue,
            other => return other,
        }
    }
}

/// One `recvmsg` into `buf`, keeping a passed descriptor in `slot` (see [`recv_with_fd`]).
fn recv_once(stream: &UnixStream, buf: &mut [u8], slot: &mut Option<OwnedFd>) -> io::Result<usize> {
    use rustix::net::{RecvAncillaryBuffer, RecvAncillaryMessage, RecvFlags, recvmsg};
    let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(MAX_PASSED_FDS))];
    let mut control = RecvAncillaryBuffer::new(&mut space);
    let received = recvmsg(
        stream,
        &mut [IoSliceMut::new(buf)],
        &mut control,
        RecvFlags::CMSG_CLOEXEC,
    )?;
    for message in control.drain() {
        if let RecvAncillaryMessage::ScmRights(fds) = message {
            for fd in fds {
                if slot.is_none() {
                    // SO_PEERCRED: who passed it, for the log (the server acts on the
                    // descriptor's own checks, not on the peer's identity).
                    let peer = stream.peer_cred().ok();
                    tracing::debug!(
                        uid = peer.map(|c| c.uid()),
                        pid = peer.and_then(|c| c.pid()),
                        "received a passed descriptor"
                    );
                    *slot = Some(fd);
                } else {
                    tracing::debug!("closing a passed descriptor beyond the one allowed");
                    drop(fd);
                }
            }
        }
    }
    Ok(received.bytes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rustix::net::{SendAncillaryBuffer, SendAncillaryMessage, SendFlags, sendmsg};
    use std::io::IoSlice;
    use std::os::fd::AsFd;

    fn send(
        stream: &std::os::unix::net::UnixStream,
        bytes: &[u8],
        fds: &[std::os::fd::BorrowedFd<'_>],
    ) {
        let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(2))];
        let mut control = SendAncillaryBuffer::new(&mut space);
        assert!(control.push(SendAncillaryMessage::ScmRights(fds)));
        sendmsg(
            stream,
            &[IoSlice::new(bytes)],
            &mut control,
            SendFlags::empty(),
        )
        .unwrap();
    }

    /// An append dropped while it waits leaves the buffer as it was (the connection drops a
    /// read that would wait); a later one appends only the bytes read.
    #[tokio::test]
    async fn an_append_dropped_unfinished_leaves_the_buffer_as_it_was() {
        let (client, server) = std::os::unix::net::UnixStream::pair().unwrap();
        server.set_nonblocking(true).unwrap();
        let server = UnixStream::from_std(server).unwrap();
        let mut buf = BytesMut::from(&b"GET"[..]);
        let mut slot = None;
        {
            let mut recv = std::pin::pin!(recv_with_fd_append(&server, &mut buf, 64, &mut slot));
            let polled = std::future::poll_fn(|cx| {
                std::task::Poll::Ready(recv.as_mut().poll(cx).is_pending())
            });
            assert!(polled.await, "nothing was sent yet");
        }
        assert_eq!(&buf[..], b"GET");
        std::io::Write::write_all(&mut &client, b" /").unwrap();
        let n = recv_with_fd_append(&server, &mut buf, 64, &mut slot)
            .await
            .unwrap();
        assert_eq!((n, &buf[..]), (2, &b"GET /"[..]));
    }

    #[tokio::test]
    async fn one_descriptor_is_kept_and_the_rest_closed() {
        let (client, server) = std::os::unix::net::UnixStream::pair().unwrap();
        server.set_nonblocking(true).unwrap();
        let server = UnixStream::from_std(server).unwrap();
        let file = tempfile::tempfile().unwrap();
        let (pipe_r, pipe_w) = rustix::pipe::pipe().unwrap();
        // Two descriptors in one message: the control buffer has room for one; the kernel
        // closes the other (MSG_CTRUNC).
        send(&client, b"abc", &[file.as_fd(), pipe_r.as_fd()]);
        let mut slot = None;
        let mut buf = [0u8; 16];
        let n = recv_with_fd(&server, &mut buf, &mut slot).await.unwrap();
        assert_eq!(&buf[..n], b"abc");
        let kept = slot.take().expect("the first descriptor is kept");
        let kept_stat = rustix::fs::fstat(&kept).unwrap();
        let file_stat = rustix::fs::fstat(&file).unwrap();
        assert_eq!(
            (kept_stat.st_dev, kept_stat.st_ino),
            (file_stat.st_dev, file_stat.st_ino)
        );
        assert!(
            rustix::io::fcntl_getfd(&kept)
                .unwrap()
                .contains(rustix::io::FdFlags::CLOEXEC),
            "received close-on-exec"
        );
        // With the slot full, a further descriptor is closed: dropping ours of the pipe's read
        // end leaves no reader, so a write to it fails.
        slot = Some(kept);
        send(&client, b"d", &[pipe_r.as_fd()]);
        drop(pipe_r);
        let n = recv_with_fd(&server, &mut buf, &mut slot).await.unwrap();
        assert_eq!(&buf[..n], b"d");
        assert_eq!(
            rustix::io::write(&pipe_w, b"x").unwrap_err(),
            rustix::io::Errno::PIPE,
            "the descriptor beyond the slot was closed"
        );
    }
}
