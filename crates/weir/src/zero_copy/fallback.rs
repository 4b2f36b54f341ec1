//! Platforms without `splice`/`sendfile` (or without weir's use of them): callers take their
//! buffered paths.

use super::SpliceError;
use crate::transport::Stream;
use std::fs::File;
use std::io;

#[derive(Debug)]
pub(crate) struct Pipe;

impl Pipe {
    pub(crate) fn new() -> io::Result<Self> {
        Err(io::ErrorKind::Unsupported.into())
    }

    pub(crate) fn capacity(&self) -> usize {
        0
    }
}

pub(crate) fn can_splice(_: &Stream) -> bool {
    false
}

pub(crate) fn can_sendfile(_: &Stream) -> bool {
    false
}

pub(crate) async fn splice_to_file(
    _: &Stream,
    _: &mut Pipe,
    _: &File,
    _: usize,
) -> Result<usize, SpliceError> {
    Err(SpliceError::Socket(io::ErrorKind::Unsupported.into()))
}

/// Preallocation is a Linux optimisation; elsewhere the body is written as it comes.
pub(crate) fn preallocate(_: &File, _: u64) -> io::Result<()> {
    Ok(())
}

pub(crate) async fn sendfile(_: &Stream, _: &File, _: u64, _: usize) -> io::Result<usize> {
    Err(io::ErrorKind::Unsupported.into())
}

pub(crate) async fn splice_socket_to_pipe(
    _: &tokio::net::TcpStream,
    _: &Pipe,
    _: usize,
) -> io::Result<usize> {
    Err(io::ErrorKind::Unsupported.into())
}

pub(crate) async fn splice_pipe_to_socket(_: &Stream, _: &Pipe, _: usize) -> io::Result<usize> {
    Err(io::ErrorKind::Unsupported.into())
}
