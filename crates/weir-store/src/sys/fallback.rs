//! Everywhere but Linux: std only. What cannot be done is skipped, never faked (see the table
//! in `sys`).

use std::fs::{File, Metadata};
use std::io;

/// No xattrs in std: the digest is not stored.
pub(crate) fn write_digest(_file: &File, _sha256: &[u8; 32], _media_type: Option<bool>) {}

pub(crate) fn read_digest(_file: &File, _meta: &Metadata) -> super::DigestRead {
    super::DigestRead::default()
}

/// No xattrs in std: the media type is not stored.
pub(crate) fn write_media_type(_file: &File, _value: &[u8]) -> bool {
    false
}

pub(crate) fn read_media_type(_file: &File, _buf: &mut [u8]) -> Option<usize> {
    None
}

/// No xattrs in std: no dead properties are kept.
pub(crate) fn read_props<T>(_fd: T) -> io::Result<Option<Vec<u8>>> {
    Ok(None)
}

pub(crate) fn write_props<T>(_fd: T, _value: Option<&[u8]>) -> io::Result<()> {
    Err(io::ErrorKind::Unsupported.into())
}

/// No xattrs in std: S3 metadata cannot be kept, and an upload with some is refused.
pub(crate) fn write_object_meta(_file: &File, _value: &[u8]) -> io::Result<()> {
    Err(io::ErrorKind::Unsupported.into())
}

pub(crate) fn read_object_meta(_file: &File) -> io::Result<Option<Vec<u8>>> {
    Ok(None)
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

/// No holes: the blocks stay until the file is removed.
pub(crate) fn punch_hole(_file: &File, _offset: u64, _len: u64) {}

/// `source[0..len]` → `target[0..]` through one buffer: the bytes copied (fewer than `len`
/// when the source ended first).
pub(crate) fn copy_file(
    source: &File,
    target: &File,
    len: u64,
) -> io::Result<(super::CopyWay, u64)> {
    copy_file_from(source, target, len, 0)
}

/// `source[from..len]` → `target[from..]` through one buffer (`pread`/`pwrite` on Unix, seeks
/// elsewhere); the bytes copied in all, from 0. Linux's `copy_file` falls back to it.
pub(crate) fn copy_file_from(
    source: &File,
    target: &File,
    len: u64,
    from: u64,
) -> io::Result<(super::CopyWay, u64)> {
    // One allocation per copy; COPY: kernel → buffer → kernel.
    let mut buf = vec![0u8; 1 << 20];
    let mut done = from;
    while done < len {
        let want = buf
            .len()
            .min(usize::try_from(len - done).unwrap_or(usize::MAX));
        let n = read_at(source, &mut buf[..want], done)?;
        if n == 0 {
            break;
        }
        write_all_at(target, &buf[..n], done)?;
        done += n as u64;
    }
    Ok((super::CopyWay::Buffered, done))
}

/// `source[from..from + len]` → `target[at..at + len]` through one buffer; the bytes copied. Linux's
/// `copy_file_at` falls back to it.
pub(crate) fn copy_file_at(
    (source, from): (&File, u64),
    (target, at): (&File, u64),
    len: u64,
) -> io::Result<(super::CopyWay, u64)> {
    // One allocation per part placed; COPY: kernel → buffer → kernel.
    let mut buf = vec![0u8; 1 << 20];
    let mut done = 0u64;
    while done < len {
        let want = buf
            .len()
            .min(usize::try_from(len - done).unwrap_or(usize::MAX));
        let n = read_at(source, &mut buf[..want], from + done)?;
        if n == 0 {
            break;
        }
        write_all_at(target, &buf[..n], at + done)?;
        done += n as u64;
    }
    Ok((super::CopyWay::Buffered, done))
}

#[cfg(unix)]
fn read_at(file: &File, buf: &mut [u8], at: u64) -> io::Result<usize> {
    std::os::unix::fs::FileExt::read_at(file, buf, at)
}

#[cfg(unix)]
fn write_all_at(file: &File, buf: &[u8], at: u64) -> io::Result<()> {
    std::os::unix::fs::FileExt::write_all_at(file, buf, at)
}

#[cfg(not(unix))]
fn read_at(mut file: &File, buf: &mut [u8], at: u64) -> io::Result<usize> {
    use std::io::{Read, Seek, SeekFrom};
    file.seek(SeekFrom::Start(at))?;
    file.read(buf)
}

#[cfg(not(unix))]
fn write_all_at(mut file: &File, buf: &[u8], at: u64) -> io::Result<()> {
    use std::io::{Seek, SeekFrom, Write};
    file.seek(SeekFrom::Start(at))?;
    file.write_all(buf)
}
