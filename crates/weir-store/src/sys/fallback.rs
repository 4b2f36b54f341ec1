//! Everywhere but Linux: std only. What cannot be done is skipped, never faked (see the table
//! in `sys`).

use std::fs::{File, Metadata};
use std::io;

/// No xattrs in std: the digest is not stored.
pub(crate) fn write_digest(_file: &File, _sha256: &[u8; 32]) {}

pub(crate) fn read_digest(_file: &File, _meta: &Metadata) -> Option<[u8; 32]> {
    None
}

/// No xattrs in std: the media type is not stored.
pub(crate) fn write_media_type(_file: &File, _value: &[u8]) -> bool {
    false
}

pub(crate) fn read_media_type(_file: &File, _buf: &mut [u8]) -> Option<usize> {
    None
}

/// No portable advisory lock in std before Rust 1.89 (`File::try_lock`).
pub(crate) fn lock_exclusive(_file: &File) -> io::Result<()> {
    Ok(())
}

/// No early writeback here: commit's fsync does all of it.
pub(crate) const EARLY_WRITEBACK: bool = false;

pub(crate) fn start_writeback(_file: &File, _offset: u64, _len: u64) {}

/// No read-ahead advice: the reads wait for the disk as they come.
pub(crate) fn read_ahead(_file: &File, _offset: u64, _len: u64) {}

pub(crate) fn available_space(_file: &File) -> Option<u64> {
    None
}

pub(crate) fn preallocate(_file: &File, _offset: u64, _len: u64) -> io::Result<()> {
    Ok(())
}
