//! Unix: a directory held open by its descriptor, and every operation relative to it
//! (`openat`, `mkdirat`, `renameat`, `unlinkat`, `fstatat`), through rustix.
//!
//! Names passed here are single path segments (the store validates them), never `..` and
//! never containing `/`, except in [`DirHandle::open_dir_beneath`] and
//! [`DirHandle::open_file_beneath`], which take a `/`-separated relative path and let the
//! kernel walk it with `openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS)` (Linux 5.6+). Every
//! other open carries `O_NOFOLLOW`, so a symbolic link is never followed: it makes the call
//! fail with `ELOOP`, or `ENOTDIR` when a directory was asked for (see [`DirHandle::stat`] to
//! tell the two apart).

use super::{EntryKind, EntryStat};
use rustix::fs::{AtFlags, FileType, Mode, OFlags};
use rustix::io::Errno;
use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::io;
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::time::{Duration, UNIX_EPOCH};

/// A directory, open for lookups relative to it. Closing it (drop) is the only cleanup.
#[derive(Debug)]
pub(crate) struct DirHandle {
    fd: OwnedFd,
}

const DIR_FLAGS: OFlags = OFlags::RDONLY
    .union(OFlags::DIRECTORY)
    .union(OFlags::NOFOLLOW)
    .union(OFlags::CLOEXEC);

/// `rw-rw-rw-` and `rwxrwxrwx`, less the umask: what `File::create` and `create_dir` use.
const FILE_MODE: Mode = Mode::from_raw_mode(0o666);
const DIR_MODE: Mode = Mode::from_raw_mode(0o777);

/// The directory's descriptor, for its extended attributes (`sys::write_props`).
impl std::os::fd::AsFd for DirHandle {
    fn as_fd(&self) -> std::os::fd::BorrowedFd<'_> {
        self.fd.as_fd()
    }
}

impl DirHandle {
    /// Opens the store's root. The root itself may be reached through symbolic links (the
    /// operator chose it); nothing below it is.
    pub(crate) fn open_root(path: &Path) -> io::Result<DirHandle> {
        let fd = rustix::fs::open(
            path,
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        )?;
        Ok(DirHandle { fd })
    }

    /// Opens the subdirectory `name`, refusing a symbolic link.
    pub(crate) fn open_dir(&self, name: &str) -> io::Result<DirHandle> {
        let fd = rustix::fs::openat(&self.fd, name, DIR_FLAGS, Mode::empty())?;
        Ok(DirHandle { fd })
    }

    /// Opens the directory at `rel` (`a/b/c`) in one system call, the kernel refusing any
    /// symbolic link on the way (`ELOOP`) and any escape from this directory. `None` when the
    /// kernel has no `openat2` (or a seccomp filter denies it): walk with
    /// [`DirHandle::open_dir`] instead.
    pub(crate) fn open_dir_beneath(&self, rel: &str) -> Option<io::Result<DirHandle>> {
        let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
        beneath(&self.fd, rel, flags).map(|r| r.map(|fd| DirHandle { fd }))
    }

    /// Opens the file at `rel` for reading in one system call, like
    /// [`DirHandle::open_dir_beneath`]. `O_NONBLOCK` keeps a FIFO left in the tree from
    /// hanging the open (no effect on regular files).
    pub(crate) fn open_file_beneath(&self, rel: &str) -> Option<io::Result<File>> {
        let flags = OFlags::RDONLY | OFlags::NONBLOCK | OFlags::CLOEXEC;
        beneath(&self.fd, rel, flags).map(|r| r.map(File::from))
    }

    /// Opens the file `name` for reading, refusing a symbolic link (`ELOOP`).
    pub(crate) fn open_read(&self, name: &str) -> io::Result<File> {
        let flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC;
        Ok(rustix::fs::openat(&self.fd, name, flags, Mode::empty())?.into())
    }

    /// Reopens the existing file `name` for reading and writing, refusing a symbolic link.
    pub(crate) fn open_rw(&self, name: &str) -> io::Result<File> {
        let flags = OFlags::RDWR | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        Ok(rustix::fs::openat(&self.fd, name, flags, Mode::empty())?.into())
    }

    /// Creates the file `name`, which must not exist (`O_EXCL`: not even as a dangling link),
    /// open for reading and writing.
    pub(crate) fn create_new(&self, name: &str) -> io::Result<File> {
        let flags =
            OFlags::RDWR | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        Ok(rustix::fs::openat(&self.fd, name, flags, FILE_MODE)?.into())
    }

    /// Opens `name` for reading and writing, creating it if needed (the lock file).
    pub(crate) fn create_or_open(&self, name: &str) -> io::Result<File> {
        let flags = OFlags::RDWR | OFlags::CREATE | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        Ok(rustix::fs::openat(&self.fd, name, flags, FILE_MODE)?.into())
    }

    /// Creates the subdirectory `name`.
    pub(crate) fn mkdir(&self, name: &str) -> io::Result<()> {
        Ok(rustix::fs::mkdirat(&self.fd, name, DIR_MODE)?)
    }

    /// `fstatat(AT_SYMLINK_NOFOLLOW)`: what `name` is, without following it. `None` when
    /// absent.
    pub(crate) fn stat(&self, name: &str) -> io::Result<Option<EntryStat>> {
        match rustix::fs::statat(&self.fd, name, AtFlags::SYMLINK_NOFOLLOW) {
            Ok(st) => Ok(Some(entry_stat(&st))),
            Err(Errno::NOENT | Errno::NOTDIR) => Ok(None),
            Err(e) => Err(e.into()),
        }
    }

    /// Renames `from` (in this directory) to `to` in `to_dir`, replacing a file there.
    pub(crate) fn rename(&self, from: &str, to_dir: &DirHandle, to: &str) -> io::Result<()> {
        Ok(rustix::fs::renameat(&self.fd, from, &to_dir.fd, to)?)
    }

    /// Gives the file `from` (in this directory) a second name, `to` in `to_dir` (which must
    /// not exist).
    pub(crate) fn link(&self, from: &str, to_dir: &DirHandle, to: &str) -> io::Result<()> {
        Ok(rustix::fs::linkat(
            &self.fd,
            from,
            &to_dir.fd,
            to,
            AtFlags::empty(),
        )?)
    }

    /// Removes the file `name` (never a directory).
    pub(crate) fn unlink(&self, name: &str) -> io::Result<()> {
        Ok(rustix::fs::unlinkat(&self.fd, name, AtFlags::empty())?)
    }

    /// Removes the empty directory `name` (`ENOTEMPTY` otherwise; never a file).
    pub(crate) fn remove_dir(&self, name: &str) -> io::Result<()> {
        Ok(rustix::fs::unlinkat(&self.fd, name, AtFlags::REMOVEDIR)?)
    }

    /// Makes the directory's entries durable.
    pub(crate) fn sync(&self) -> io::Result<()> {
        Ok(rustix::fs::fsync(&self.fd)?)
    }

    /// Which directory this is (device, inode), whatever the path it was reached by: one
    /// `fstat`. `None` if the kernel does not say.
    #[allow(clippy::unnecessary_cast)]
    pub(crate) fn identity(&self) -> Option<(u64, u64)> {
        let st = rustix::fs::fstat(&self.fd).ok()?;
        Some((st.st_dev as u64, st.st_ino as u64))
    }

    /// Which directory this is (device, inode) and when its inode last changed (`ctime`:
    /// every entry added, removed or renamed, and every change of its own attributes, moves
    /// it, and no one can set it back): one `fstat`. `None` if the kernel does not say.
    #[allow(clippy::unnecessary_cast)]
    pub(crate) fn changed(&self) -> Option<((u64, u64), Duration)> {
        let st = rustix::fs::fstat(&self.fd).ok()?;
        let secs = u64::try_from(st.st_ctime as i64).ok()?;
        let ctime = Duration::new(secs, st.st_ctime_nsec as u32);
        Some(((st.st_dev as u64, st.st_ino as u64), ctime))
    }

    /// The names in the directory, `.` and `..` left out.
    // ALLOCATION: one `OsString` per entry: for start-up and the staging area only; listings
    // stream with `for_each_entry`.
    pub(crate) fn names(&self) -> io::Result<Vec<OsString>> {
        let mut dir = rustix::fs::Dir::read_from(&self.fd)?;
        let mut names = Vec::new();
        while let Some(entry) = dir.read() {
            let entry = entry?;
            let name = entry.file_name().to_bytes();
            if name != b"." && name != b".." {
                names.push(std::ffi::OsStr::from_bytes(name).to_owned());
            }
        }
        Ok(names)
    }

    /// Streams the directory: calls `f` with each name (`.` and `..` left out) and its type as
    /// `readdir` reports it (`None` where the filesystem does not say: `fstatat` it), keeping
    /// nothing between calls, so memory stays what `f` keeps whatever the directory holds. The
    /// entries are read through a new descriptor of this very directory (`openat(fd, ".")`),
    /// never by path.
    pub(crate) fn for_each_entry(
        &self,
        mut f: impl FnMut(&OsStr, Option<EntryKind>),
    ) -> io::Result<()> {
        let mut dir = rustix::fs::Dir::read_from(&self.fd)?;
        while let Some(entry) = dir.read() {
            let entry = entry?;
            let name = entry.file_name().to_bytes();
            if name == b"." || name == b".." {
                continue;
            }
            let kind = match entry.file_type() {
                FileType::RegularFile => Some(EntryKind::File),
                FileType::Directory => Some(EntryKind::Dir),
                FileType::Symlink => Some(EntryKind::Symlink),
                FileType::Unknown => None,
                _ => Some(EntryKind::Other),
            };
            f(OsStr::from_bytes(name), kind);
        }
        Ok(())
    }
}

/// Whether an error means a symbolic link was met where the store refuses one.
pub(crate) fn is_symlink_error(err: &io::Error) -> bool {
    err.raw_os_error() == Some(Errno::LOOP.raw_os_error())
}

#[cfg(any(target_os = "linux", target_os = "android"))]
fn beneath(dir: &OwnedFd, rel: &str, flags: OFlags) -> Option<io::Result<OwnedFd>> {
    use rustix::fs::ResolveFlags;
    use std::sync::atomic::{AtomicBool, Ordering};
    // Learnt once: a kernel without `openat2` keeps not having it.
    static UNSUPPORTED: AtomicBool = AtomicBool::new(false);
    if UNSUPPORTED.load(Ordering::Relaxed) {
        return None;
    }
    let resolve = ResolveFlags::BENEATH | ResolveFlags::NO_SYMLINKS | ResolveFlags::NO_MAGICLINKS;
    match rustix::fs::openat2(dir, rel, flags, Mode::empty(), resolve) {
        Ok(fd) => Some(Ok(fd)),
        // Before Linux 5.6 (`ENOSYS`), or denied by a container's seccomp filter (`EPERM`).
        Err(Errno::NOSYS | Errno::PERM) => {
            UNSUPPORTED.store(true, Ordering::Relaxed);
            None
        }
        // `EXDEV`: the path would leave the directory, which validated segments cannot do.
        Err(Errno::XDEV) => Some(Err(Errno::LOOP.into())),
        Err(e) => Some(Err(e.into())),
    }
}

#[cfg(not(any(target_os = "linux", target_os = "android")))]
fn beneath(_dir: &OwnedFd, _rel: &str, _flags: OFlags) -> Option<io::Result<OwnedFd>> {
    None
}

// The field types of `struct stat` differ between targets: the casts are lossless on some and
// needed on others.
#[allow(clippy::unnecessary_cast)]
fn entry_stat(st: &rustix::fs::Stat) -> EntryStat {
    let kind = match FileType::from_raw_mode(st.st_mode as _) {
        FileType::RegularFile => EntryKind::File,
        FileType::Directory => EntryKind::Dir,
        FileType::Symlink => EntryKind::Symlink,
        _ => EntryKind::Other,
    };
    let secs = st.st_mtime as i64;
    let nanos = st.st_mtime_nsec as u32;
    let modified = if secs >= 0 {
        UNIX_EPOCH + Duration::new(secs as u64, nanos)
    } else {
        UNIX_EPOCH - Duration::from_secs(secs.unsigned_abs()) + Duration::from_nanos(nanos.into())
    };
    EntryStat {
        kind,
        size: st.st_size as u64,
        modified,
        id: Some((st.st_dev as u64, st.st_ino as u64)),
    }
}

/// Which file this is (device, inode), and how many names it has.
pub(crate) fn file_identity(meta: &std::fs::Metadata) -> Option<((u64, u64), u64)> {
    use std::os::unix::fs::MetadataExt;
    Some(((meta.dev(), meta.ino()), meta.nlink()))
}
