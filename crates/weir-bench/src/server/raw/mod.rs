//! The raw baselines: servers that do the least work plain Rust can do for each scenario.
//!
//! They must be honest: as fast as we can make them, with large buffers and no per-read
//! allocation, or every ratio to them flatters weir.
//! - [`responder`]: many small requests. epoll, one event loop per thread, parses nothing but
//!   request boundaries and writes a pre-encoded response (the seed's "raw RIO server").
//! - [`upload`]: one large body per connection. A blocking thread per connection reading with
//!   large buffers into the sink: nothing between the socket and the destination.

pub mod responder;
pub mod upload;

use super::{Endpoint, ServeArgs};
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
