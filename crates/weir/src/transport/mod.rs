//! Byte streams and listeners: TCP and Unix domain sockets behind one enum each, and TLS
//! (`tls`) as a further stream variant.
//!
//! One enum (not a generic parameter) keeps the handler API and the connection driver
//! monomorphic: a handler is compiled once, whatever the transport. The match per read or write
//! is a predictable branch next to a system call.

#[cfg(target_os = "linux")]
mod inherited;
mod listener;
pub(crate) mod low_water;
#[cfg(target_os = "linux")]
pub(crate) mod passed_fd;
mod stream;
#[cfg(feature = "tls")]
mod tls;
#[cfg(feature = "tls")]
mod tls_handshake;
#[cfg(feature = "tls")]
mod tls_records;
#[cfg(feature = "tls")]
mod tls_reload;
#[cfg(feature = "tls")]
mod tls_stream;

#[cfg(target_os = "linux")]
pub use inherited::systemd_listeners;
pub(crate) use listener::DetachedListener;
pub use listener::{Listener, SocketFile};
pub use stream::{PeerAddr, Stream};
#[cfg(all(feature = "tls", feature = "http2"))]
pub(crate) use tls::ALPN_H2;
#[cfg(feature = "tls")]
pub(crate) use tls::TlsAccept;
#[cfg(feature = "tls")]
pub use tls::{TlsConfig, TlsError};
#[cfg(feature = "tls")]
pub use tls_reload::CertReloader;
#[cfg(feature = "tls")]
pub use tls_stream::TlsStream;
