//! Linux: the digest xattr, the root lock, early writeback and in-kernel copies, through rustix
//! (safe wrappers, so the crate stays `forbid(unsafe_code)`).

use super::{
    CopyWay, DIGEST_XATTR, DigestRead, DigestRecord, MEDIA_TYPE_XATTR, OBJECT_META_XATTR,
    PROPS_XATTR,
};
use rustix::fs::{FlockOperation, XattrFlags};
use std::fs::{File, Metadata};
use std::io;
use std::os::fd::AsFd;

/// Records the file's SHA-256 with its current size and mtime, and whether it has a media
/// type (see [`DigestRecord`]): `media_type` as the caller knows it (an upload that created
/// the file), else (`None`) asked of the file itself, one `fgetxattr` of size 0. Best effort:
/// filesystems without user xattrs (some tmpfs, NFS, FAT) simply don't keep it, and the
/// service then serves the file without a stored digest.
pub(crate) fn write_digest(file: &File, sha256: &[u8; 32], media_type: Option<bool>) {
    let Ok(meta) = file.metadata() else { return };
    let Ok(mtime) = meta.modified() else { return };
    // Only a sure "none" (ENODATA) records none: any other answer keeps readers asking.
    let media_type = media_type.unwrap_or_else(|| {
        !matches!(
            rustix::fs::fgetxattr(file, MEDIA_TYPE_XATTR, &mut [0u8; 0][..]),
            Err(rustix::io::Errno::NODATA)
        )
    });
    let record = DigestRecord {
        sha256: *sha256,
        size: meta.len(),
        mtime,
        media_type,
    };
    if let Some(value) = record.encode() {
        let _ = rustix::fs::fsetxattr(file, DIGEST_XATTR, &value, XattrFlags::empty());
    }
}

/// What [`write_digest`] recorded, if still valid for the file as it is now.
pub(crate) fn read_digest(file: &File, meta: &Metadata) -> DigestRead {
    let mut value = [0u8; DigestRecord::LEN + 1];
    let Ok(n) = rustix::fs::fgetxattr(file, DIGEST_XATTR, &mut value[..]) else {
        return DigestRead::default();
    };
    match meta.modified() {
        Ok(mtime) => DigestRecord::check(&value[..n], meta.len(), mtime),
        Err(_) => DigestRead::default(),
    }
}

/// Records a media type with the file; whether the filesystem kept it.
pub(crate) fn write_media_type(file: &File, value: &[u8]) -> bool {
    rustix::fs::fsetxattr(file, MEDIA_TYPE_XATTR, value, XattrFlags::empty()).is_ok()
}

/// The media type recorded by [`write_media_type`], into `buf`: its length.
pub(crate) fn read_media_type(file: &File, buf: &mut [u8]) -> Option<usize> {
    rustix::fs::fgetxattr(file, MEDIA_TYPE_XATTR, buf).ok()
}

/// The dead properties kept with a file or directory ([`PROPS_XATTR`]); `None`: none. A
/// value longer than [`MAX_PROPS`](crate::MAX_PROPS) (written by something else) is an error.
pub(crate) fn read_props(fd: impl AsFd) -> io::Result<Option<Vec<u8>>> {
    // ALLOCATION: the value, at most MAX_PROPS, once per read.
    let mut value = vec![0u8; crate::MAX_PROPS];
    match rustix::fs::fgetxattr(fd, PROPS_XATTR, &mut value[..]) {
        Ok(n) => {
            value.truncate(n);
            Ok(Some(value))
        }
        Err(rustix::io::Errno::NODATA) => Ok(None),
        Err(e) => Err(e.into()),
    }
}

/// Replaces a file's or directory's dead properties (`None`: removes them). A filesystem
/// without user xattrs fails (`Unsupported`, `EOPNOTSUPP`): the caller answers that they
/// were not kept, never that they were.
pub(crate) fn write_props(fd: impl AsFd, value: Option<&[u8]>) -> io::Result<()> {
    match value {
        Some(v) => rustix::fs::fsetxattr(fd, PROPS_XATTR, v, XattrFlags::empty()),
        None => match rustix::fs::fremovexattr(fd, PROPS_XATTR) {
            Err(rustix::io::Errno::NODATA) => Ok(()),
            other => other,
        },
    }
    .map_err(io::Error::from)
}

/// Records an object's S3 metadata (its stored form, `object_meta.rs`) on the file. Unlike
/// the media type, not best effort: a filesystem without user xattrs fails
/// (`Unsupported`), and the caller refuses the upload rather than store it without.
pub(crate) fn write_object_meta(file: &File, value: &[u8]) -> io::Result<()> {
    rustix::fs::fsetxattr(file, OBJECT_META_XATTR, value, XattrFlags::empty())
        .map_err(io::Error::from)
}

/// The stored form of a file's S3 metadata ([`write_object_meta`]); `None`: none.
pub(crate) fn read_object_meta(file: &File) -> io::Result<Option<Vec<u8>>> {
    // On the stack first: ext4 keeps all of a file's xattrs in one 4 KiB block, so this is
    // the one call; a file without metadata costs just it.
    let mut small = [0u8; 4096];
    let n = match rustix::fs::fgetxattr(file, OBJECT_META_XATTR, &mut small[..]) {
        // ALLOCATION: the value, once per read of an object's metadata (GetObject,
        // HeadObject of an object that has some).
        Ok(n) => return Ok(Some(small[..n].to_vec())),
        Err(rustix::io::Errno::NODATA) => return Ok(None),
        Err(rustix::io::Errno::RANGE) => XATTR_SIZE_MAX,
        Err(e) => return Err(e.into()),
    };
    // ALLOCATION: a larger value (a filesystem with larger xattrs): Linux's largest.
    let mut value = vec![0u8; n];
    let n = rustix::fs::fgetxattr(file, OBJECT_META_XATTR, &mut value[..])?;
    value.truncate(n);
    Ok(Some(value))
}

/// The largest xattr value Linux keeps (`XATTR_SIZE_MAX`).
const XATTR_SIZE_MAX: usize = 64 << 10;

/// Takes an exclusive advisory lock, or fails with `WouldBlock` if another open file holds it.
/// Released when the file is closed (the store dropped, or the process killed).
pub(crate) fn lock_exclusive(file: &File) -> io::Result<()> {
    rustix::fs::flock(file, FlockOperation::NonBlockingLockExclusive).map_err(io::Error::from)
}

/// Early writeback is available (see `writeback.rs`).
pub(crate) const EARLY_WRITEBACK: bool = true;

/// Starts reading `len` bytes of `file` from `offset` into the page cache without waiting for
/// them: `posix_fadvise(POSIX_FADV_WILLNEED)`, which submits the reads and returns. Advice:
/// errors are ignored (the reads that follow report any I/O error).
pub(crate) fn read_ahead(file: &File, offset: u64, len: u64) {
    let _ = rustix::fs::fadvise(
        file,
        offset,
        std::num::NonZeroU64::new(len),
        rustix::fs::Advice::WillNeed,
    );
}

/// Starts writing `len` bytes of `file` from `offset` back to disk:
/// `posix_fadvise(POSIX_FADV_DONTNEED)`, which on Linux submits the range's dirty pages
/// (`WB_SYNC_NONE`: it does not wait for them to reach the disk, though submitting can wait for
/// room in the device's queue) and then drops the range's pages that are clean. Advice: errors
/// are ignored (commit's fsync reports any I/O error).
pub(crate) fn start_writeback(file: &File, offset: u64, len: u64) {
    let _ = rustix::fs::fadvise(
        file,
        offset,
        std::num::NonZeroU64::new(len),
        rustix::fs::Advice::DontNeed,
    );
}

/// The bytes still free for unprivileged writers on `file`'s filesystem (`fstatvfs`: available
/// blocks × fragment size), `None` when it does not say.
pub(crate) fn available_space(file: &File) -> Option<u64> {
    let st = rustix::fs::fstatvfs(file).ok()?;
    Some(st.f_bavail.saturating_mul(st.f_frsize))
}

/// Reserves `len` bytes of `file` from `offset` without changing its size (`fallocate` with
/// `FALLOC_FL_KEEP_SIZE`): a disk that cannot hold them fails now, and writes onto reserved
/// blocks cost the page cache less than delayed allocation. Only the errors a write would also
/// meet (no space, quota, file too large) are returned; a filesystem without `fallocate` is
/// written as before.
pub(crate) fn preallocate(file: &File, offset: u64, len: u64) -> io::Result<()> {
    use rustix::io::Errno;
    match rustix::fs::fallocate(file, rustix::fs::FallocateFlags::KEEP_SIZE, offset, len) {
        Err(e @ (Errno::NOSPC | Errno::DQUOT | Errno::FBIG)) => Err(e.into()),
        _ => Ok(()),
    }
}

/// Gives back the blocks of `file[offset..offset + len]`, keeping its size (`fallocate` with
/// `FALLOC_FL_PUNCH_HOLE`): the range then reads as zeros. Best effort: a filesystem without
/// holes keeps the blocks until the file is removed.
pub(crate) fn punch_hole(file: &File, offset: u64, len: u64) {
    use rustix::fs::FallocateFlags;
    if len > 0 {
        let flags = FallocateFlags::PUNCH_HOLE | FallocateFlags::KEEP_SIZE;
        let _ = rustix::fs::fallocate(file, flags, offset, len);
    }
}

/// Bytes per `copy_file_range` call of [`copy_file`]: a bound on one system call's work.
const COPY_PIECE: u64 = 64 << 20;

/// `source[0..len]` → `target[0..]`, the cheapest way the filesystem allows: a reflink
/// (`FICLONE`, btrfs and XFS: the blocks shared, nothing copied) when `len` is the whole
/// source, else `copy_file_range` (inside the kernel), else `pread`/`pwrite` through one buffer
/// where the kernel refuses it (another filesystem type, an old kernel). Returns how it was
/// done and the bytes copied (fewer than `len` when the source ended first).
pub(crate) fn copy_file(source: &File, target: &File, len: u64) -> io::Result<(CopyWay, u64)> {
    use rustix::io::Errno;
    let whole = rustix::fs::fstat(source).is_ok_and(|st| u64::try_from(st.st_size) == Ok(len));
    if whole && len > 0 && rustix::fs::ioctl_ficlone(target, source).is_ok() {
        return Ok((CopyWay::Reflink, len));
    }
    let mut done = 0u64;
    while done < len {
        let want = usize::try_from((len - done).min(COPY_PIECE)).unwrap_or(usize::MAX);
        let (mut off_in, mut off_out) = (done, done);
        match rustix::fs::copy_file_range(
            source,
            Some(&mut off_in),
            target,
            Some(&mut off_out),
            want,
        ) {
            Ok(0) => break,
            Ok(n) => done += n as u64,
            Err(Errno::XDEV | Errno::INVAL | Errno::NOSYS | Errno::OPNOTSUPP) => {
                let copied = super::fallback::copy_file_from(source, target, len, done)?;
                return Ok((CopyWay::Buffered, copied.1));
            }
            Err(e) => return Err(e.into()),
        }
    }
    Ok((CopyWay::Kernel, done))
}

/// `source[from..from + len]` → `target[at..at + len]` (a multipart upload's part placed in the object
/// being assembled, `multipart/local.rs`): `copy_file_range` (inside the kernel; on btrfs and
/// XFS it shares the blocks where the offsets allow), else through one buffer. Returns how and
/// the bytes copied (fewer than `len` when the source ended first).
pub(crate) fn copy_file_at(
    (source, from): (&File, u64),
    (target, at): (&File, u64),
    len: u64,
) -> io::Result<(CopyWay, u64)> {
    use rustix::io::Errno;
    let mut done = 0u64;
    while done < len {
        let want = usize::try_from((len - done).min(COPY_PIECE)).unwrap_or(usize::MAX);
        let (mut off_in, mut off_out) = (from + done, at + done);
        match rustix::fs::copy_file_range(
            source,
            Some(&mut off_in),
            target,
            Some(&mut off_out),
            want,
        ) {
            Ok(0) => break,
            Ok(n) => done += n as u64,
            Err(Errno::XDEV | Errno::INVAL | Errno::NOSYS | Errno::OPNOTSUPP) => {
                let rest = super::fallback::copy_file_at(
                    (source, from + done),
                    (target, at + done),
                    len - done,
                )?;
                return Ok((CopyWay::Buffered, done + rest.1));
            }
            Err(e) => return Err(e.into()),
        }
    }
    Ok((CopyWay::Kernel, done))
}
