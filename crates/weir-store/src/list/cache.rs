//! The sorted names of the last few directories scanned, kept so that the pages after the
//! first are served without scanning the directory again: a 50,000-entry listing in pages of
//! 10,000 is one `readdir` pass, not five.
//!
//! A scan for a page of at least [`MIN_WIDE_PAGE`] names keeps the [`WIDE_NAMES`] smallest
//! names after its cursor instead of the page's `limit` (the same one pass and heap), returns
//! its page, and leaves the names here when there are more than the page. A later page of the
//! same directory is cut from them, each name then `stat`ed as a scanned page's are, while the
//! directory is unchanged. What the scan could not keep (a directory larger than
//! [`WIDE_NAMES`] after the cursor) is scanned again when a page reaches it.
//!
//! Invariants:
//! - Unchanged means the same directory (device, inode) with the same `ctime`, read before the
//!   scan and again before each page cut from it. Every entry added, removed or renamed moves
//!   a directory's `ctime`, to the kernel's clock at that moment, and nothing sets it back. A
//!   scan's names are kept only when the `ctime` read before it is at least [`SETTLED`]
//!   older than the scan's start, so that a change during or after the scan cannot land on the
//!   same `ctime` (the clock `ctime` is taken from is coarse, one tick of at most a few
//!   milliseconds, far less than [`SETTLED`]): a directory being written to is scanned per
//!   page, as before. (A system clock stepped back by more than [`SETTLED`] between a scan and
//!   a change could defeat this; the names would then be stale until the next change or
//!   eviction, with every page's entries still `stat`ed, so a removed name is never shown.)
//! - So the walk invariants of `list.rs` hold: a page cut from kept names is the page a scan
//!   would give now.
//! - Memory: at most [`CACHED_DIRS`] directories of at most [`WIDE_NAMES`] names each (a
//!   name is at most 255 bytes), plus, during a wide scan, its heap of [`WIDE_NAMES`] names
//!   (scans run at most one per core in `weir serve`). Pages smaller than [`MIN_WIDE_PAGE`]
//!   (a probe such as `is_dir`'s, a page of 1) never widen their scan.

use std::sync::Mutex;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Names a wide scan keeps: enough for a 50,000-entry folder in one pass.
pub(crate) const WIDE_NAMES: usize = 65_536;
/// The smallest page whose scan is widened.
pub(crate) const MIN_WIDE_PAGE: usize = 256;
/// Directories whose names are kept at once (the least recently used goes first).
pub(crate) const CACHED_DIRS: usize = 4;
/// How much older than a scan the directory's last change must be for its names to be kept.
pub(crate) const SETTLED: Duration = Duration::from_secs(1);

/// A directory's identity and `ctime` (`DirHandle::changed`).
pub(crate) type DirVersion = ((u64, u64), Duration);

/// The kept names (see the module doc).
#[derive(Debug, Default)]
pub(crate) struct ListCache {
    dirs: Mutex<Vec<Kept>>,
    /// Test counter: directory scans for pages.
    #[cfg(test)]
    pub(crate) scans: std::sync::atomic::AtomicU64,
    /// Test hook: seconds added to the clock [`ListCache::now`] reads (or taken off, when
    /// negative), so that a directory just written counts as settled, or not, whatever the
    /// time a test takes.
    #[cfg(test)]
    pub(crate) clock_offset: std::sync::atomic::AtomicI64,
}

#[derive(Debug)]
struct Kept {
    version: DirVersion,
    /// The cursor of the scan: the names are those after it.
    from: Option<String>,
    /// Sorted, listable when scanned.
    names: Vec<String>,
    /// No listable name after the last one.
    complete: bool,
    /// For eviction: higher is more recent.
    used: u64,
}

/// A page cut from kept names: the names to `stat`, and whether more follow.
pub(crate) struct Cut {
    pub(crate) names: Vec<String>,
    pub(crate) more: bool,
}

impl ListCache {
    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Kept>> {
        // Entries are replaced whole under the lock: a panic leaves nothing half-made.
        self.dirs.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The page of at most `limit` names after `after` of the directory `version`, if kept
    /// names cover it; `None`: scan.
    pub(crate) fn cut(
        &self,
        version: DirVersion,
        after: Option<&str>,
        limit: usize,
    ) -> Option<Cut> {
        let mut dirs = self.lock();
        let next_use = dirs.iter().map(|k| k.used).max().unwrap_or(0) + 1;
        // A changed directory's names go.
        dirs.retain(|k| k.version.0 != version.0 || k.version.1 == version.1);
        let kept = dirs.iter_mut().find(|k| k.version == version)?;
        let covered = match (&kept.from, after) {
            (None, _) => true,
            (Some(from), Some(after)) => after >= from.as_str(),
            (Some(_), None) => false,
        };
        if !covered {
            return None;
        }
        let start = kept
            .names
            .partition_point(|n| after.is_some_and(|a| n.as_str() <= a));
        let rest = &kept.names[start..];
        if rest.len() < limit && !kept.complete {
            // The page runs past what the scan kept.
            return None;
        }
        let take = rest.len().min(limit);
        kept.used = next_use;
        Some(Cut {
            // ALLOCATION: the page's names, as a scan's page would own them.
            names: rest[..take].to_vec(),
            more: rest.len() > take || !kept.complete,
        })
    }

    /// Keeps a wide scan's `names` (sorted, after `from`; `complete`: nothing listable after
    /// them) of the directory `version`, read before the scan that `started`, if it had
    /// settled by then.
    pub(crate) fn keep(
        &self,
        version: DirVersion,
        started: SystemTime,
        from: Option<&str>,
        names: Vec<String>,
        complete: bool,
    ) {
        let Ok(started) = started.duration_since(UNIX_EPOCH) else {
            return;
        };
        if version.1.saturating_add(SETTLED) > started {
            return;
        }
        let mut dirs = self.lock();
        let used = dirs.iter().map(|k| k.used).max().unwrap_or(0) + 1;
        dirs.retain(|k| k.version.0 != version.0);
        if dirs.len() >= CACHED_DIRS {
            if let Some(oldest) = (0..dirs.len()).min_by_key(|&i| dirs[i].used) {
                dirs.swap_remove(oldest);
            }
        }
        dirs.push(Kept {
            version,
            // ALLOCATION: the cursor, once per kept scan.
            from: from.map(str::to_owned),
            names,
            complete,
            used,
        });
    }

    /// The clock a scan's start is read from.
    pub(crate) fn now(&self) -> SystemTime {
        let now = SystemTime::now();
        #[cfg(test)]
        let now = {
            let offset = self.clock_offset.load(std::sync::atomic::Ordering::SeqCst);
            let by = Duration::from_secs(offset.unsigned_abs());
            if offset < 0 { now - by } else { now + by }
        };
        now
    }

    /// Test counter: one more scan.
    pub(crate) fn scanned(&self) {
        #[cfg(test)]
        self.scans.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    }
}
