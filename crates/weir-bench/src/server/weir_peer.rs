//! The weir peer. NOT WIRED YET: `crates/weir` has no `Server` on this branch.
//!
//! Until it lands, starting this system reports "not available yet" and every scenario prints
//! that in place of a figure; nothing is estimated or faked. When it lands, this module serves
//! the same routes as the others (see [`crate::server`]) through `weir::Handler`, with the
//! same sinks: discard via `read_body` into a [`crate::server::sink::DISCARD_BUF`] buffer, file
//! via `std::fs` writes of what each `read_body` returns into a
//! [`crate::server::sink::FILE_WRITE`] buffer.

use crate::server::{Endpoint, ServeArgs, StartError};

/// Always unavailable until weir's server exists.
pub fn start(_args: &ServeArgs) -> Result<Endpoint, StartError> {
    Err(StartError::Unavailable(
        "weir: not available yet (crates/weir has no Server on this branch)".into(),
    ))
}
