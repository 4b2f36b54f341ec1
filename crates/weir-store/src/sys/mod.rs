//! Platform specifics, in the manner of quinn-udp: `linux.rs` has the real thing, `fallback.rs`
//! degrades gracefully with std only, and the rest of the crate calls the functions re-exported
//! here without any `cfg`. Directory handles split along another line: `dir_unix.rs` on every
//! Unix (descriptors and `*at` calls), `dir_paths.rs` elsewhere (paths).
//!
//! | feature | Linux | fallback |
//! | --- | --- | --- |
//! | resolution relative to directory descriptors (`dir_unix.rs`: `openat2` beneath the root, else an `O_NOFOLLOW` walk) | yes (all Unixes; `openat2` on Linux 5.6+) | no: by path, each name checked with `symlink_metadata` first (`dir_paths.rs`) |
//! | SHA-256 kept in the `user.weir.sha256` xattr | yes, where the filesystem allows | no |
//! | client's media type kept in the `user.weir.content_type` xattr | yes, where the filesystem allows | no |
//! | root lock (`flock` on `.weir-lock`) | yes | no |
//! | directory fsync (through the directory's descriptor) | yes | on other Unixes; a no-op elsewhere |
//! | early writeback of uploads (`writeback.rs`) | `posix_fadvise(DONTNEED)` | no (commit's fsync does it all) |
//! | read-ahead of a commit's read-back (`upload.rs`) | `posix_fadvise(WILLNEED)` | no (each read waits) |
//! | blocks reserved a window ahead of a declared length's bytes (`Upload::preallocate`) | `fallocate(KEEP_SIZE)` | no (written as it comes) |
//! | a declared length checked against the free space (`Upload::preallocate`) | `fstatvfs` | no (a full disk fails the write) |
//! | a server-side copy (`LocalStore::copy`) | a reflink (`FICLONE`), else `copy_file_range` | through a buffer |
//! | the blocks of a multipart part written in place given back when it fails (`Upload::in_place`) | `fallocate(PUNCH_HOLE)` | no (freed with the upload) |
//!
//! The fallbacks are compiled (`fallback.rs` also unit-tested) on Linux too, so they cannot rot
//! unnoticed.

use std::time::{SystemTime, UNIX_EPOCH};

#[cfg(target_os = "linux")]
mod linux;
#[cfg(target_os = "linux")]
pub(crate) use linux::*;

#[cfg_attr(target_os = "linux", allow(dead_code))]
mod fallback;
#[cfg(not(target_os = "linux"))]
pub(crate) use fallback::*;

#[cfg(unix)]
mod dir_unix;
#[cfg(unix)]
pub(crate) use dir_unix::{DirHandle, file_identity, is_symlink_error};

#[cfg_attr(unix, allow(dead_code))]
mod dir_paths;
#[cfg(not(unix))]
pub(crate) use dir_paths::{DirHandle, file_identity, is_symlink_error};

/// How [`copy_file`] copied.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum CopyWay {
    /// The blocks shared (`FICLONE`): nothing copied.
    #[cfg_attr(not(target_os = "linux"), allow(dead_code))]
    Reflink,
    /// `copy_file_range`, inside the kernel.
    #[cfg_attr(not(target_os = "linux"), allow(dead_code))]
    Kernel,
    /// Through a buffer in user space.
    Buffered,
}

/// What a directory entry is, never following a symbolic link.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum EntryKind {
    File,
    Dir,
    Symlink,
    /// A FIFO, socket or device: never served, never replaced.
    Other,
}

/// The part of `struct stat` the store uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct EntryStat {
    pub(crate) kind: EntryKind,
    pub(crate) size: u64,
    pub(crate) modified: SystemTime,
    /// Device and inode number: which file this is, whatever its name (Unix only).
    pub(crate) id: Option<(u64, u64)>,
}

/// The extended attribute that holds the media type a client gave a file (`media_type.rs`).
pub(crate) const MEDIA_TYPE_XATTR: &str = "user.weir.content_type";

/// The extended attribute that holds a file's or directory's dead properties (WebDAV's
/// `PROPPATCH`: opaque bytes, at most [`MAX_PROPS`](crate::MAX_PROPS)).
pub(crate) const PROPS_XATTR: &str = "user.weir.props";

/// The extended attribute that holds an object's S3 metadata (`object_meta.rs`): set on the
/// temporary file before the commit's fsync and rename, so that it is visible with the bytes.
pub(crate) const OBJECT_META_XATTR: &str = "user.weir.s3meta";

/// The extended attribute that holds a committed file's SHA-256.
pub(crate) const DIGEST_XATTR: &str = "user.weir.sha256";

/// The value of [`DIGEST_XATTR`]: the digest, then the size and modification time of the file
/// when the digest was taken, then whether the file has a media type ([`MEDIA_TYPE_XATTR`]).
/// A file changed behind the store's back (an editor, `cat >>`) keeps its xattr but changes
/// size or mtime, and then the digest is not reported rather than reported wrong.
///
/// Layout (53 bytes): sha256 `[u8; 32]`, size `u64` LE, mtime seconds since the epoch `u64`
/// LE, mtime nanoseconds `u32` LE, flags `u8` (bit 0: a media type is stored; the other bits
/// zero, and a record with any of them set is not read: a later layout's).
///
/// The flag spares every `GET` of a file without a media type a failing `fgetxattr`
/// (`ENODATA`): the record is read anyway, so a file it says has none is served by its name
/// without asking for the attribute. Compatibility: records written before the flag (52
/// bytes, [`DigestRecord::OLD_LEN`]) are still read, their digest as before and the media type
/// as "unknown", so the attribute is read as it always was. The other way, a binary older than
/// the flag refuses a 53-byte record (its length check), and serves such files as it serves
/// files without a digest. The flag is written by [`write_digest`]: from what an upload knows
/// of a temporary file it created (`false` until `Upload::set_media_type` keeps one: no
/// system call), else asked of the file in hand (one `fgetxattr`: a resumable upload's adopted
/// file, which an earlier request may have given one; a committed file given a client's time
/// whose record did not say). The media type attribute is only ever set on an upload's
/// temporary file before its commit, never on a committed file, so the flag stays true for
/// as long as the record is valid; an attribute set by hand behind the store's back is not
/// seen (as a digest stays valid across an `fsetxattr`: neither changes size or mtime).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct DigestRecord {
    pub(crate) sha256: [u8; 32],
    pub(crate) size: u64,
    pub(crate) mtime: SystemTime,
    /// The file has a media type attribute.
    pub(crate) media_type: bool,
}

/// What a file's digest record says, as read for an open file ([`read_digest`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct DigestRead {
    /// The SHA-256, when recorded for the file as it is now.
    pub(crate) sha256: Option<[u8; 32]>,
    /// Whether a media type is stored with the file: `Some` only from a valid record that
    /// carries the flag; `None` (no record, an older one, a file changed since): read the
    /// attribute to know.
    pub(crate) media_type: Option<bool>,
}

impl DigestRecord {
    pub(crate) const LEN: usize = 53;
    /// The length of a record written before the media type flag.
    pub(crate) const OLD_LEN: usize = 52;
    /// Flag bit: a media type is stored.
    const HAS_MEDIA_TYPE: u8 = 1;

    /// `None` for a file modified before 1970, which the layout cannot hold.
    pub(crate) fn encode(&self) -> Option<[u8; Self::LEN]> {
        let since = self.mtime.duration_since(UNIX_EPOCH).ok()?;
        let mut out = [0u8; Self::LEN];
        out[..32].copy_from_slice(&self.sha256);
        out[32..40].copy_from_slice(&self.size.to_le_bytes());
        out[40..48].copy_from_slice(&since.as_secs().to_le_bytes());
        out[48..52].copy_from_slice(&since.subsec_nanos().to_le_bytes());
        out[52] = if self.media_type {
            Self::HAS_MEDIA_TYPE
        } else {
            0
        };
        Some(out)
    }

    /// What `value` says, if it is a record taken when the file had this size and mtime
    /// (either layout); else nothing is known.
    pub(crate) fn check(value: &[u8], size: u64, mtime: SystemTime) -> DigestRead {
        let Some(current) = (DigestRecord {
            sha256: [0; 32],
            size,
            mtime,
            media_type: false,
        })
        .encode() else {
            return DigestRead::default();
        };
        let media_type = match value.len() {
            Self::OLD_LEN => None,
            Self::LEN if value[52] & !Self::HAS_MEDIA_TYPE == 0 => {
                Some(value[52] & Self::HAS_MEDIA_TYPE != 0)
            }
            _ => return DigestRead::default(),
        };
        // Size and mtime must be what the file is now.
        if value[32..Self::OLD_LEN] != current[32..Self::OLD_LEN] {
            return DigestRead::default();
        }
        let mut sha256 = [0u8; 32];
        sha256.copy_from_slice(&value[..32]);
        DigestRead {
            sha256: Some(sha256),
            media_type,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn digest_record_round_trips_and_detects_changes() {
        let mtime = UNIX_EPOCH + Duration::new(1_700_000_000, 123_456_789);
        let r = DigestRecord {
            sha256: [7; 32],
            size: 42,
            mtime,
            media_type: false,
        };
        let v = r.encode().unwrap();
        let found = |sha256, media_type| DigestRead { sha256, media_type };
        assert_eq!(
            DigestRecord::check(&v, 42, mtime),
            found(Some([7; 32]), Some(false))
        );
        let with_type = DigestRecord {
            media_type: true,
            ..r
        }
        .encode()
        .unwrap();
        assert_eq!(
            DigestRecord::check(&with_type, 42, mtime),
            found(Some([7; 32]), Some(true))
        );
        let unknown = DigestRead::default();
        assert_eq!(DigestRecord::check(&v, 43, mtime), unknown, "size changed");
        let later = mtime + Duration::from_nanos(1);
        assert_eq!(DigestRecord::check(&v, 42, later), unknown, "mtime changed");
        // A record before the flag (52 bytes): the digest, the media type unknown.
        assert_eq!(
            DigestRecord::check(&v[..DigestRecord::OLD_LEN], 42, mtime),
            found(Some([7; 32]), None),
            "record of an older binary"
        );
        assert_eq!(
            DigestRecord::check(&v[..51], 42, mtime),
            unknown,
            "truncated value"
        );
        let mut future = v;
        future[52] = 0b10;
        assert_eq!(
            DigestRecord::check(&future, 42, mtime),
            unknown,
            "a flag this layout does not know"
        );
        let before_epoch = UNIX_EPOCH - Duration::from_secs(1);
        assert_eq!(
            DigestRecord {
                mtime: before_epoch,
                ..r
            }
            .encode(),
            None
        );
    }

    #[test]
    fn fallback_degrades_without_failing() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        let file = std::fs::File::create(&path).unwrap();
        fallback::write_digest(&file, &[1; 32], None);
        assert_eq!(
            fallback::read_digest(&file, &file.metadata().unwrap()),
            DigestRead::default()
        );
        fallback::lock_exclusive(&file).unwrap();
    }

    /// Every way of `copy_file` copies the bytes, and stops short at the source's end.
    #[test]
    fn copies_take_the_bytes_and_stop_at_the_source_end() {
        use std::io::Read;
        let body: Vec<u8> = (0..3_000_000u32).map(|i| (i * 7 % 251) as u8).collect();
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("src"), &body).unwrap();
        let source = std::fs::File::open(dir.path().join("src")).unwrap();
        let read_all = |name: &str| {
            let mut out = Vec::new();
            let mut f = std::fs::File::open(dir.path().join(name)).unwrap();
            f.read_to_end(&mut out).unwrap();
            out
        };
        let target = std::fs::File::create(dir.path().join("a")).unwrap();
        let (way, n) = copy_file(&source, &target, body.len() as u64).unwrap();
        assert_eq!(n, body.len() as u64, "{way:?}");
        assert_eq!(read_all("a"), body);
        // Through a buffer, from the middle on (where Linux falls back to it).
        let target = std::fs::File::create(dir.path().join("b")).unwrap();
        let (way, n) = fallback::copy_file_from(&source, &target, body.len() as u64, 0).unwrap();
        assert_eq!((way, n), (CopyWay::Buffered, body.len() as u64));
        assert_eq!(read_all("b"), body);
        // More asked than there is: what there is.
        let target = std::fs::File::create(dir.path().join("c")).unwrap();
        let (_, n) = copy_file(&source, &target, body.len() as u64 + 10).unwrap();
        assert_eq!(n, body.len() as u64);
        assert_eq!(read_all("c"), body);
    }

    /// The by-path directory handle (other platforms) and the descriptor one agree on what
    /// the store uses, links refused included.
    #[cfg(unix)]
    #[test]
    fn both_directory_handles_do_the_same() {
        macro_rules! exercise {
            ($module:ident, $path:expr) => {{
                use std::io::Write;
                let path: &std::path::Path = $path;
                std::fs::create_dir(path).unwrap();
                let root = $module::DirHandle::open_root(path).unwrap();
                let mut seen = Vec::new();
                root.mkdir("d").unwrap();
                let d = root.open_dir("d").unwrap();
                d.create_new("f").unwrap().write_all(b"abc").unwrap();
                assert!(d.create_new("f").is_err(), "O_EXCL");
                let st = d.stat("f").unwrap().unwrap();
                seen.push(format!("{:?} {}", st.kind, st.size));
                d.rename("f", &root, "g").unwrap();
                seen.push(format!("{:?}", root.stat("g").unwrap().map(|s| s.kind)));
                seen.push(format!("{:?}", d.stat("f").unwrap()));
                std::os::unix::fs::symlink("d", path.join("link")).unwrap();
                let mut names = root.names().unwrap();
                names.sort();
                seen.push(format!("{names:?}"));
                // A link is refused, as ELOOP or as "not a directory" that `stat` calls a link.
                let err = root.open_dir("link").unwrap_err();
                let kind = root.stat("link").unwrap().map(|s| s.kind);
                let refused = $module::is_symlink_error(&err) || kind == Some(EntryKind::Symlink);
                seen.push(format!("link refused: {refused}"));
                assert!(root.open_read("link").is_err());
                root.sync().unwrap();
                root.unlink("g").unwrap();
                seen.push(format!("{:?}", root.stat("g").unwrap()));
                seen
            }};
        }
        let dir = tempfile::tempdir().unwrap();
        let by_descriptor = exercise!(dir_unix, &dir.path().join("a"));
        let by_path = exercise!(dir_paths, &dir.path().join("b"));
        assert_eq!(by_descriptor, by_path);
        assert_eq!(
            by_descriptor,
            [
                "File 3",
                "Some(File)",
                "None",
                r#"["d", "g", "link"]"#,
                "link refused: true",
                "None"
            ]
        );
    }
}
