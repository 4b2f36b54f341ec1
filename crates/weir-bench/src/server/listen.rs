//! Listening sockets for the servers under test: one on 127.0.0.1:0 or a Unix path, or one per
//! thread sharing a port with `SO_REUSEPORT` (per-core serving: the kernel spreads connections).

use super::{Endpoint, ServeArgs};
use rustix::net::{AddressFamily, SocketFlags, SocketType, sockopt};
use std::io;
use std::net::{Ipv4Addr, SocketAddr, TcpListener};
use std::os::fd::OwnedFd;
use std::os::unix::net::UnixListener;

/// Binds 127.0.0.1:0 or the Unix path in `args`; returns the listener and where it listens.
pub fn bind(args: &ServeArgs) -> io::Result<(OwnedFd, Endpoint)> {
    match &args.unix {
        Some(path) => {
            let _ = std::fs::remove_file(path);
            let l = UnixListener::bind(path)?;
            Ok((l.into(), Endpoint::Unix(path.clone())))
        }
        None => {
            let l = TcpListener::bind(SocketAddr::from((Ipv4Addr::LOCALHOST, 0)))?;
            let addr = l.local_addr()?;
            Ok((l.into(), Endpoint::Tcp(addr)))
        }
    }
}

/// `count` TCP listeners on one 127.0.0.1 port, each with `SO_REUSEPORT`.
pub fn bind_reuseport(count: usize) -> io::Result<(Vec<TcpListener>, SocketAddr)> {
    let mut addr = SocketAddr::from((Ipv4Addr::LOCALHOST, 0));
    let mut out = Vec::with_capacity(count);
    for _ in 0..count.max(1) {
        let fd = rustix::net::socket_with(
            AddressFamily::INET,
            SocketType::STREAM,
            SocketFlags::CLOEXEC,
            None,
        )?;
        sockopt::set_socket_reuseport(&fd, true)?;
        rustix::net::bind(&fd, &addr)?;
        rustix::net::listen(&fd, 1024)?;
        let l = TcpListener::from(fd);
        addr = l.local_addr()?;
        out.push(l);
    }
    Ok((out, addr))
}
