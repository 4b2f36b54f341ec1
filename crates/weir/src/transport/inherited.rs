//! Listeners handed over by the service manager: systemd's socket activation (`sd_listen_fds`,
//! `LISTEN_FDS`/`LISTEN_PID`, descriptors from 3). Linux only.
//!
//! Turning an inherited descriptor into a listener is the one `unsafe` step
//! (`OwnedFd::from_raw_fd`): it asserts that the descriptor is open and that nothing else in the
//! process owns it. Both are checked or guaranteed before: the descriptor is open (`fcntl`
//! answers for it), the variables name this process (`LISTEN_PID`), and the descriptors are
//! taken at most once per process (a second call finds none), so no two owners close the same
//! one. Once owned, each must be a socket (`fstat`) that listens (`SO_ACCEPTCONN`) and be TCP
//! (IPv4 or IPv6), else it is an error; it is marked close-on-exec, so that programs the server
//! runs (hooks) do not inherit it.

#![allow(unsafe_code)]

use super::Listener;
use std::io;
use std::os::fd::{FromRawFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicBool, Ordering};

/// The first inherited descriptor (`SD_LISTEN_FDS_START`).
const FIRST_FD: RawFd = 3;

/// Whether the inherited descriptors were taken already.
static TAKEN: AtomicBool = AtomicBool::new(false);

/// The listening sockets systemd passed to this process (socket activation), in the order of
/// the unit's `ListenStream=` lines; empty when there are none (no `LISTEN_FDS`, or
/// `LISTEN_PID` names another process: the variables were inherited from a parent that was
/// activated). Taken once: later calls return none. Must run inside a tokio runtime.
///
/// Errors: a descriptor that is not open, not a socket, not listening, or not TCP (a Unix
/// socket is not supported yet), naming it.
pub fn systemd_listeners() -> io::Result<Vec<Listener>> {
    let Some(count) = passed_count(std::process::id()) else {
        return Ok(Vec::new());
    };
    if TAKEN.swap(true, Ordering::SeqCst) {
        return Ok(Vec::new());
    }
    let mut listeners = Vec::with_capacity(count);
    for n in 0..count {
        let raw = FIRST_FD + RawFd::try_from(n).map_err(io::Error::other)?;
        let fd = take(raw)?;
        listeners.push(
            listener(fd).map_err(|e| {
                io::Error::new(e.kind(), format!("inherited descriptor {raw}: {e}"))
            })?,
        );
    }
    Ok(listeners)
}

/// `LISTEN_FDS` when `LISTEN_PID` is `pid`.
fn passed_count(pid: u32) -> Option<usize> {
    let for_pid: u32 = std::env::var("LISTEN_PID").ok()?.trim().parse().ok()?;
    if for_pid != pid {
        return None;
    }
    let count: usize = std::env::var("LISTEN_FDS").ok()?.trim().parse().ok()?;
    (count > 0).then_some(count)
}

/// Owns inherited descriptor `raw`, once it is known to be open.
fn take(raw: RawFd) -> io::Result<OwnedFd> {
    // SAFETY: `fcntl(F_GETFD)` takes two integers and reads no memory of ours; a descriptor
    // that is not open is answered `EBADF`.
    if unsafe { libc::fcntl(raw, libc::F_GETFD) } == -1 {
        let e = io::Error::last_os_error();
        return Err(io::Error::new(
            e.kind(),
            format!("inherited descriptor {raw}: {e}"),
        ));
    }
    // SAFETY: the descriptor is open (checked just above), and the service manager handed it
    // to this process (`LISTEN_PID`) for it to own: nothing else in the process took it, as
    // `TAKEN` lets the descriptors be taken once.
    Ok(unsafe { OwnedFd::from_raw_fd(raw) })
}

/// A TCP listener from a descriptor checked to be one.
fn listener(fd: OwnedFd) -> io::Result<Listener> {
    let stat = rustix::fs::fstat(&fd)?;
    if rustix::fs::FileType::from_raw_mode(stat.st_mode) != rustix::fs::FileType::Socket {
        return Err(io::Error::other("not a socket"));
    }
    if !rustix::net::sockopt::socket_acceptconn(&fd)? {
        return Err(io::Error::other("a socket that is not listening"));
    }
    let family = rustix::net::sockopt::socket_domain(&fd)?;
    if family != rustix::net::AddressFamily::INET && family != rustix::net::AddressFamily::INET6 {
        return Err(io::Error::other(
            "not a TCP socket (only TCP listeners can be inherited)",
        ));
    }
    rustix::io::fcntl_setfd(&fd, rustix::io::FdFlags::CLOEXEC)?;
    let std = std::net::TcpListener::from(fd);
    std.set_nonblocking(true)?;
    Ok(Listener::Tcp(tokio::net::TcpListener::from_std(std)?))
}

#[cfg(test)]
mod tests {
    use super::{listener, passed_count};
    use std::os::fd::OwnedFd;

    #[test]
    fn variables_for_another_process_are_not_ours() {
        // The test process was given no LISTEN_* of its own.
        assert_eq!(passed_count(std::process::id()), None);
    }

    #[tokio::test]
    async fn only_listening_tcp_sockets_are_taken() {
        let bound = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = bound.local_addr().unwrap();
        let l = listener(OwnedFd::from(bound)).unwrap();
        assert_eq!(l.local_addr(), Some(addr));

        let file = OwnedFd::from(tempfile::tempfile().unwrap());
        let e = listener(file).unwrap_err();
        assert!(e.to_string().contains("not a socket"), "{e}");

        // Connected, not listening.
        let server = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let client = std::net::TcpStream::connect(server.local_addr().unwrap()).unwrap();
        let e = listener(OwnedFd::from(client)).unwrap_err();
        assert!(e.to_string().contains("not listening"), "{e}");

        let (unix, _) = std::os::unix::net::UnixStream::pair().unwrap();
        let e = listener(OwnedFd::from(unix)).unwrap_err();
        assert!(
            e.to_string().contains("not listening") || e.to_string().contains("TCP"),
            "{e}"
        );
    }
}
