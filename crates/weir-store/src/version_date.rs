//! Modification times that never let a date validator mix two versions of a file.
//!
//! HTTP dates have one-second resolution (RFC 9110 §8.8.2.2): two versions committed at one
//! path within the same second carry the same `Last-Modified`, and a client that holds the
//! first one's date would be told by `If-Modified-Since` that the second is unchanged (304), or
//! by `If-Range` that its partial copy of the first may be completed with bytes of the second
//! (206).
//!
//! The store marks such a version instead of hiding the problem: at commit, under the commit
//! lock, when the version being replaced (or any file deleted since the store opened) has a
//! modification time in the same second as the new file or a later one, the new file's
//! modification time is set to that second, with a sub-second part in
//! `[SHARED_FROM, 1 s)` — a **shared second**. [`FileMeta::date_shared`] reads the mark back:
//! such a date is a weak validator (never matches `If-Range`, and "not modified since" needs a
//! later date). So, along the versions of a path:
//! - seconds never decrease (a new version never looks older than the one it replaced);
//! - an unmarked version's second is later than every earlier version's: its date is strong;
//! - consecutive marked versions in one second get different sub-second parts, so a fallback
//!   entity tag made of size and modification time still tells them apart.
//!
//! A time a client gives (WebDAV's `X-OC-Mtime`, [`client_time`]) is the one exception to
//! "seconds never decrease": it is the client's second, earlier or later, and always marked,
//! so its date is never a strong validator; the `ETag` (the SHA-256) still tells versions
//! apart.
//!
//! Why not move the new version to the next second instead (the other way to make dates
//! distinct): a file replaced ten times a second would then run ahead of the clock by nine
//! seconds every second, and a `Last-Modified` later than the response's `Date` is forbidden
//! (RFC 9110 §8.8.2.1). Marking keeps every date true to the second it was committed in.
//!
//! Limits: the mark needs a filesystem with sub-second timestamps (ext4, XFS, btrfs, tmpfs);
//! deletions are remembered in memory only (a delete, a restart and a re-create, all within one
//! second, are not seen); a file whose natural modification time falls in the last
//! microsecond of a second is treated as marked, which only makes its date weak.

use crate::error::StoreError;
use crate::meta::FileMeta;
use crate::sys;
use std::fs::File;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Sub-second parts from this one up mark a shared second.
const SHARED_FROM: u32 = 999_999_000;
/// How many distinct marks a second has.
const SHARED_SPAN: u32 = 1_000_000_000 - SHARED_FROM;

impl FileMeta {
    /// Whether another, earlier version at this path may have had a modification time in the
    /// same second: the second alone does not identify this version (a weak date validator).
    pub fn date_shared(&self) -> bool {
        is_shared(self.modified)
    }
}

fn is_shared(t: SystemTime) -> bool {
    t.duration_since(UNIX_EPOCH)
        .is_ok_and(|d| d.subsec_nanos() >= SHARED_FROM)
}

fn seconds(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

/// The latest second of a file the store deleted (0: none since it opened).
#[derive(Debug, Default)]
pub(crate) struct Deleted {
    second: AtomicU64,
}

impl Deleted {
    /// Records the deletion of a file modified at `modified`.
    pub(crate) fn record(&self, modified: Option<SystemTime>) {
        // A future modification time counts as now: it must not mark every commit until then.
        let now = seconds(SystemTime::now());
        let second = modified.map_or(now, |m| seconds(m).min(now));
        self.second.fetch_max(second, Ordering::Relaxed);
    }

    fn second(&self) -> Option<u64> {
        Some(self.second.load(Ordering::Relaxed)).filter(|&s| s > 0)
    }
}

/// Gives `file`, modified at `own` and about to replace a version modified at `previous`
/// (`None`: no file there), its final modification time, and returns it; re-records its
/// SHA-256 when it changes it (the record names the modification time it is valid for). Call
/// with the commit lock held. No system call unless the time changes. Commits call its two
/// halves, [`marked_time`] and [`apply`], so that a multi-file commit decides for every file
/// before it touches any.
#[cfg(test)]
fn stamp(
    file: &File,
    own: SystemTime,
    previous: Option<SystemTime>,
    deleted: &Deleted,
    sha256: Option<&[u8; 32]>,
) -> Result<SystemTime, StoreError> {
    match marked_time(own, previous, deleted) {
        Some(marked) => apply(file, marked, sha256, None).map(|()| marked),
        None => Ok(own),
    }
}

/// The modification time a file modified at `own` must take to replace a version modified at
/// `previous` (`None`: no file there), or `None` when its own time stands. No system call:
/// a multi-file commit decides for every file first, and opens only those that change.
pub(crate) fn marked_time(
    own: SystemTime,
    previous: Option<SystemTime>,
    deleted: &Deleted,
) -> Option<SystemTime> {
    let floor = previous
        .map(seconds)
        .into_iter()
        .chain(deleted.second())
        .max();
    let second = floor.filter(|&floor| floor >= seconds(own))?;
    let mark = match previous {
        Some(p) if seconds(p) == second && is_shared(p) => {
            let before = p.duration_since(UNIX_EPOCH).map_or(0, |d| d.subsec_nanos());
            (before - SHARED_FROM + 1) % SHARED_SPAN
        }
        _ => 0,
    };
    Some(UNIX_EPOCH + Duration::new(second, SHARED_FROM + mark))
}

/// The modification time of a file whose time a client gave (`client`: WebDAV's
/// `X-OC-Mtime`), replacing a version modified at `previous` (`None`: no file there): the
/// client's whole second, always marked as a shared second. A client's time may go back (an
/// older file copied over a newer one), so the second alone never identifies the version:
/// its date is a weak validator (never matches `If-Range`), and its sub-second mark differs
/// from the replaced version's when both fall in one second, so that a fallback entity tag of
/// size and time still tells them apart. No system call.
pub(crate) fn client_time(client: SystemTime, previous: Option<SystemTime>) -> SystemTime {
    let second = seconds(client);
    let mark = match previous {
        Some(p) if seconds(p) == second && is_shared(p) => {
            let before = p.duration_since(UNIX_EPOCH).map_or(0, |d| d.subsec_nanos());
            (before - SHARED_FROM + 1) % SHARED_SPAN
        }
        _ => 0,
    };
    UNIX_EPOCH + Duration::new(second, SHARED_FROM + mark)
}

/// Sets `file`'s modification time to `marked` (from [`marked_time`]) and re-records its
/// SHA-256 for that time, with whether it has a media type (`None`: asked of the file).
pub(crate) fn apply(
    file: &File,
    marked: SystemTime,
    sha256: Option<&[u8; 32]>,
    media_type: Option<bool>,
) -> Result<(), StoreError> {
    file.set_modified(marked)
        .map_err(|e| StoreError::from_io("set modification time", e))?;
    if let Some(sha256) = sha256 {
        sys::write_digest(file, sha256, media_type);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(second: u64, nanos: u32) -> SystemTime {
        UNIX_EPOCH + Duration::new(second, nanos)
    }

    fn mtime(file: &File) -> SystemTime {
        file.metadata().unwrap().modified().unwrap()
    }

    /// A temporary file modified at `t`.
    fn file_at(dir: &tempfile::TempDir, t: SystemTime) -> File {
        let file = tempfile::tempfile_in(dir.path()).unwrap();
        file.set_modified(t).unwrap();
        file
    }

    #[test]
    fn versions_in_one_second_are_marked_and_distinct() {
        let dir = tempfile::tempdir().unwrap();
        let none = Deleted::default();
        // An earlier second: the new file's own time stands, and its date is strong.
        let own = at(1_000, 500_000_000);
        let f = file_at(&dir, own);
        assert_eq!(
            stamp(&f, mtime(&f), Some(at(999, 0)), &none, None).unwrap(),
            own
        );
        assert!(!is_shared(own));
        // The same second: marked.
        let first = stamp(&f, mtime(&f), Some(at(1_000, 200_000_000)), &none, None).unwrap();
        assert_eq!((seconds(first), is_shared(first)), (1_000, true));
        assert_eq!(f.metadata().unwrap().modified().unwrap(), first);
        // Again in that second, after a marked version: another mark.
        let g = file_at(&dir, at(1_000, 700_000_000));
        let second = stamp(&g, mtime(&g), Some(first), &none, None).unwrap();
        assert_eq!((seconds(second), is_shared(second)), (1_000, true));
        assert_ne!(second, first);
        // The replaced version is in a later second (a slow commit): the new one takes it, so
        // seconds never go back.
        let h = file_at(&dir, at(999, 900_000_000));
        let later = stamp(&h, mtime(&h), Some(at(1_000, 100_000_000)), &none, None).unwrap();
        assert_eq!((seconds(later), is_shared(later)), (1_000, true));
    }

    #[test]
    fn client_times_are_their_second_marked_and_distinct() {
        // An older time than the version replaced stands (the client's), marked weak.
        let t = client_time(at(500, 700_000_000), Some(at(1_000, 0)));
        assert_eq!((seconds(t), is_shared(t)), (500, true));
        // The same second as a marked version: another mark, so a size-and-time tag differs.
        let again = client_time(at(500, 0), Some(t));
        assert_eq!((seconds(again), is_shared(again)), (500, true));
        assert_ne!(again, t);
        // The same second as an unmarked version: marked, so distinct from it too.
        let plain = at(500, 200_000_000);
        let over = client_time(at(500, 0), Some(plain));
        assert!(is_shared(over) && over != plain);
        assert_eq!(client_time(at(7, 0), None), at(7, SHARED_FROM));
    }

    #[test]
    fn a_delete_marks_the_next_create_in_its_second() {
        let dir = tempfile::tempdir().unwrap();
        let deleted = Deleted::default();
        let own = at(1_000, 600_000_000);
        let f = file_at(&dir, own);
        assert_eq!(stamp(&f, mtime(&f), None, &deleted, None).unwrap(), own);
        deleted.record(Some(at(1_000, 100_000_000)));
        let marked = stamp(&f, mtime(&f), None, &deleted, None).unwrap();
        assert_eq!((seconds(marked), is_shared(marked)), (1_000, true));
        let g = file_at(&dir, at(1_001, 0));
        assert_eq!(
            stamp(&g, mtime(&g), None, &deleted, None).unwrap(),
            at(1_001, 0)
        );
    }
}
