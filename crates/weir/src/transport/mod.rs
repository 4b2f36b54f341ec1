//! Byte streams and listeners: TCP and Unix domain sockets behind one enum each.
//!
//! One enum (not a generic parameter) keeps the handler API and the connection driver
//! monomorphic: a handler is compiled once, whatever the transport. The match per read or write
//! is a predictable branch next to a system call.

mod listener;
mod stream;

pub(crate) use listener::DetachedListener;
pub use listener::{Listener, SocketFile};
pub use stream::{PeerAddr, Stream};
