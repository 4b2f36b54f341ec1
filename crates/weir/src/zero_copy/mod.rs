//! Zero-copy data paths: socket → file with `splice`, file → socket with `sendfile`, socket →
//! socket (a response body forwarded from another connection) with `splice` through a pipe;
//! and the file's side of socket → file, reserving a body's declared length before it is
//! written (`preallocate`).
//!
//! Linux gets the real thing (`linux.rs`, through `rustix`'s safe wrappers, so weir itself has
//! no `unsafe`); every other platform gets `fallback.rs`, where `can_splice` and `can_sendfile`
//! say no and callers take their buffered paths. Encrypted streams (TLS) cannot use either: the
//! bytes must pass through user space to be decrypted or encrypted.

use std::io;

#[cfg(target_os = "linux")]
mod linux;
#[cfg(target_os = "linux")]
pub(crate) use linux::{
    Pipe, can_sendfile, can_splice, preallocate, sendfile, splice_pipe_to_socket,
    splice_socket_to_pipe, splice_to_file,
};

#[cfg(not(target_os = "linux"))]
mod fallback;
#[cfg(not(target_os = "linux"))]
pub(crate) use fallback::{
    Pipe, can_sendfile, can_splice, preallocate, sendfile, splice_pipe_to_socket,
    splice_socket_to_pipe, splice_to_file,
};

/// A failed socket → file transfer, by side: a socket error means the client is gone; a file
/// error (ENOSPC, EIO) is the server's problem and the handler must hear it as such.
#[derive(Debug)]
pub(crate) enum SpliceError {
    Socket(io::Error),
    File(io::Error),
}
