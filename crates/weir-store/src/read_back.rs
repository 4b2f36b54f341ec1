//! Reading a file's bytes back in order, for a digest or a tag computed after the bytes went to
//! disk without passing through user space (`splice`, `copy_file_range`): one buffer, reads
//! advised ahead.

use crate::sys;
use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};

/// The read-ahead window: the reads of the next window are submitted while this one is
/// consumed.
const READ_AHEAD: u64 = 8 << 20;

/// The read size of a read-back: 256 KiB, the write size that measured best on this kind of
/// machine, too big for a task's stack.
pub(crate) const READ_BACK_BUF: usize = 256 * 1024;

/// Gives `each` the file's first `size` bytes, in order, read from its start through `buf`, with
/// the reads advised ahead ([`READ_AHEAD`]): a copy the page cache does not hold (a reflink
/// shares the source's blocks, not its cached pages) is read from disk while the bytes before
/// it are hashed, instead of a read, then a hash, in turn. COPY: page cache → `buf`, the one
/// pass a hash over bytes that bypassed user space needs.
pub(crate) fn read_from_start(
    file: &File,
    size: u64,
    buf: &mut [u8],
    each: impl FnMut(&[u8]),
) -> io::Result<()> {
    read_range(file, 0, size, buf, each)
}

/// [`read_from_start`] of `file[start..start + size]`: a multipart part written in place, in
/// its upload's file.
pub(crate) fn read_range(
    mut file: &File,
    start: u64,
    size: u64,
    buf: &mut [u8],
    mut each: impl FnMut(&[u8]),
) -> io::Result<()> {
    file.seek(SeekFrom::Start(start))?;
    let mut left = size;
    let mut advised = 0u64;
    while left > 0 {
        let at = size - left;
        while advised < size && advised < at + 2 * READ_AHEAD {
            let len = READ_AHEAD.min(size - advised);
            sys::read_ahead(file, start + advised, len);
            advised += len;
        }
        let want = buf.len().min(usize::try_from(left).unwrap_or(usize::MAX));
        let n = file.read(&mut buf[..want])?;
        if n == 0 {
            return Err(io::ErrorKind::UnexpectedEof.into());
        }
        each(&buf[..n]);
        left -= n as u64;
    }
    Ok(())
}
